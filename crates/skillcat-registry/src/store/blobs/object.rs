//! [`BlobStore`] over the `object_store` crate: a local directory, S3 (or an S3-compatible
//! server such as Garage), or memory.
//!
//! Plain overwriting puts only: keys are content addresses, so two writers of one key write
//! the same bytes, and some S3 servers ignore conditional writes anyway.

use std::net::IpAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};

use super::{BlobStore, MAX_BLOB, blob_key, parse_blob_key};
use crate::{RegistryError, Result};

/// The spellings a blob store URL may take, for the error that names an unknown one.
const SCHEMES: &str = "file:///DIR, s3://BUCKET?endpoint=URL&region=REGION, or memory:";

/// Opens the blob store at `url`:
///
/// - `file:///DIR`: a local directory (an absolute path), created with mode 0700 when missing;
/// - `s3://BUCKET?endpoint=http://127.0.0.1:3900&region=garage`: S3 or an S3-compatible server,
///   path-style requests, credentials from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`
///   (and `AWS_SESSION_TOKEN` when set), never from the URL. Without `endpoint`, AWS itself
///   (`region` defaults to `us-east-1`). An `http://` endpoint is accepted on a loopback
///   address, elsewhere only with `allow_http=true` (credentials are signed, not sent, but the
///   blobs cross the network in clear);
/// - `memory:`: an empty store in this process (tests).
///
/// Nothing is contacted until the first request: an unreachable S3 server shows on the first
/// read or write, as [`RegistryError::Unavailable`].
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use skillcat_registry::store::blobs::{BlobStore, open_blobs};
/// let blobs = open_blobs("memory:").await.unwrap();
/// let sha = skillcat_core::digest::sha256(b"hello");
/// blobs.put(&sha, bytes::Bytes::from_static(b"hello")).await.unwrap();
/// assert_eq!(blobs.get(&sha).await.unwrap().unwrap(), &b"hello"[..]);
/// # });
/// ```
pub async fn open_blobs(url: &str) -> Result<Arc<dyn BlobStore>> {
    if url == "memory:" {
        return Ok(Arc::new(ObjectBlobs::new(
            url,
            Arc::new(InMemory::new()),
            false,
        )));
    }
    if let Some(rest) = url.strip_prefix("file://") {
        return open_dir(url, rest).await;
    }
    if let Some(rest) = url.strip_prefix("s3://") {
        let credentials = S3Credentials::from_env();
        return open_s3(url, rest, credentials.as_ref()).map(|b| Arc::new(b) as _);
    }
    Err(bad(url, format!("unknown blob store; say {SCHEMES}")))
}

fn bad(url: &str, reason: impl Into<String>) -> RegistryError {
    RegistryError::BadSpec {
        spec: url.to_string(),
        reason: reason.into(),
    }
}

async fn open_dir(url: &str, path: &str) -> Result<Arc<dyn BlobStore>> {
    if !path.starts_with('/') {
        return Err(bad(url, "a blob directory is file:///ABSOLUTE/PATH"));
    }
    if path.contains(['%', '?', '#']) {
        return Err(bad(
            url,
            "a blob directory is a plain path, without %, ? or #",
        ));
    }
    let dir = FsPath::new(path).to_path_buf();
    let shown = dir.display().to_string();
    let io = |source| RegistryError::Io {
        path: shown.clone(),
        source,
    };
    // The blobs of unpublished (and never-to-be) versions may sit here: only the owner reads.
    let made = dir.clone();
    tokio::task::spawn_blocking(move || {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&made)
    })
    .await
    .map_err(|e| io(std::io::Error::other(e)))?
    .map_err(io)?;
    let store = LocalFileSystem::new_with_prefix(&dir).map_err(|e| bad(url, e.to_string()))?;
    Ok(Arc::new(ObjectBlobs::new(url, Arc::new(store), false)))
}

/// What signs S3 requests: always from the environment, never from a URL (URLs are shown).
#[derive(Clone)]
pub(super) struct S3Credentials {
    key_id: String,
    secret: String,
    token: Option<String>,
}

impl S3Credentials {
    fn from_env() -> Option<S3Credentials> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        Some(S3Credentials {
            key_id: var("AWS_ACCESS_KEY_ID")?,
            secret: var("AWS_SECRET_ACCESS_KEY")?,
            token: var("AWS_SESSION_TOKEN"),
        })
    }
}

fn open_s3(url: &str, rest: &str, credentials: Option<&S3Credentials>) -> Result<ObjectBlobs> {
    let (bucket, query) = rest.split_once('?').unwrap_or((rest, ""));
    let bucket = bucket.strip_suffix('/').unwrap_or(bucket);
    if bucket.contains('@') {
        return Err(bad(
            url,
            "credentials do not go in a blob store URL (it is shown in messages); set \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        ));
    }
    if bucket.is_empty() || bucket.contains('/') {
        return Err(bad(url, "say s3://BUCKET (one bucket, no path)"));
    }
    let (mut endpoint, mut region, mut allow_http) = (None, None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "endpoint" => endpoint = Some(value),
            "region" => region = Some(value),
            "allow_http" => {
                allow_http = Some(match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad(url, "allow_http is true or false")),
                })
            }
            _ => {
                return Err(bad(
                    url,
                    format!("unknown parameter {key:?} (endpoint, region and allow_http are)"),
                ));
            }
        }
    }
    let mut http = false;
    if let Some(endpoint) = endpoint {
        let (scheme, authority) = endpoint
            .split_once("://")
            .ok_or_else(|| bad(url, "endpoint is http(s)://HOST[:PORT]"))?;
        let authority = authority.split('/').next().unwrap_or_default();
        if authority.contains('@') {
            return Err(bad(url, "credentials do not go in the endpoint"));
        }
        match scheme {
            "https" => {}
            "http" if allow_http == Some(true) || is_loopback(authority) => http = true,
            "http" => {
                return Err(bad(
                    url,
                    "an http:// endpoint off this machine sends every blob in clear; use \
                     https://, or add allow_http=true to say you mean it",
                ));
            }
            _ => return Err(bad(url, "endpoint is http(s)://HOST[:PORT]")),
        }
    }
    let Some(credentials) = credentials else {
        return Err(bad(
            url,
            "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        ));
    };
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region(region.unwrap_or("us-east-1"))
        .with_access_key_id(&credentials.key_id)
        .with_secret_access_key(&credentials.secret)
        // Path-style requests: what S3-compatible servers (Garage) answer.
        .with_virtual_hosted_style_request(false)
        // A store that does not answer is reported within seconds (a server answers 503), not
        // after object_store's default three minutes of retries.
        .with_retry(RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 3,
            retry_timeout: Duration::from_secs(10),
        })
        .with_client_options(
            ClientOptions::new()
                .with_connect_timeout(Duration::from_secs(5))
                .with_timeout(Duration::from_secs(60)),
        )
        // After the client options, which would otherwise reset it.
        .with_allow_http(http);
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(token) = &credentials.token {
        builder = builder.with_token(token);
    }
    let store = builder.build().map_err(|e| bad(url, e.to_string()))?;
    Ok(ObjectBlobs::new(url, Arc::new(store), true))
}

/// Whether `authority` (`HOST[:PORT]`) names this machine: `localhost`, 127.0.0.0/8, `[::1]`.
fn is_loopback(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A blob store over any `object_store` backend.
pub(super) struct ObjectBlobs {
    url: String,
    store: Arc<dyn ObjectStore>,
    /// Whether failures are the network's (a server that does not answer is `Unavailable`)
    /// rather than a local file's (`Io`).
    remote: bool,
    /// The largest object a read accepts.
    max: u64,
}

impl std::fmt::Debug for ObjectBlobs {
    /// The URL only: an S3 client's own `Debug` would print its credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectBlobs")
            .field("url", &self.url)
            .finish()
    }
}

impl ObjectBlobs {
    fn new(url: &str, store: Arc<dyn ObjectStore>, remote: bool) -> ObjectBlobs {
        ObjectBlobs {
            url: url.to_string(),
            store,
            remote,
            max: MAX_BLOB,
        }
    }

    fn failed(&self, error: object_store::Error) -> RegistryError {
        if self.remote {
            RegistryError::Unavailable {
                what: self.url.clone(),
                reason: error.to_string(),
            }
        } else {
            RegistryError::Io {
                path: self.url.clone(),
                source: std::io::Error::other(error.to_string()),
            }
        }
    }

    fn too_large(&self, sha: &[u8; 32], size: u64) -> RegistryError {
        RegistryError::Corrupt {
            path: self.url.clone(),
            what: format!(
                "blob {} holds over {} bytes, more than any registry stores (not read)",
                blob_key(sha),
                size
            ),
            expected: crate::digest::to_hex(sha),
            actual: "unknown".into(),
        }
    }
}

#[async_trait]
impl BlobStore for ObjectBlobs {
    fn url(&self) -> &str {
        &self.url
    }

    async fn put(&self, sha256: &[u8; 32], bytes: Bytes) -> Result<()> {
        self.store
            .put(&Path::from(blob_key(sha256)), PutPayload::from(bytes))
            .await
            .map(drop)
            .map_err(|e| self.failed(e))
    }

    async fn get(&self, sha256: &[u8; 32]) -> Result<Option<Bytes>> {
        let found = match self.store.get(&Path::from(blob_key(sha256))).await {
            Ok(found) => found,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.failed(e)),
        };
        if found.meta.size > self.max {
            return Err(self.too_large(sha256, self.max));
        }
        // Bounded on the bytes that arrive, not only on the size the store claimed.
        let mut bytes = Vec::with_capacity(usize::try_from(found.meta.size).unwrap_or(0));
        let mut chunks = found.into_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| self.failed(e))?;
            if (bytes.len() + chunk.len()) as u64 > self.max {
                return Err(self.too_large(sha256, self.max));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Some(Bytes::from(bytes)))
    }

    async fn list(&self) -> Result<Vec<([u8; 32], i64)>> {
        let mut held = Vec::new();
        let mut listing = self.store.list(Some(&Path::from("sha256")));
        while let Some(meta) = listing.next().await {
            let meta = match meta {
                Ok(meta) => meta,
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(self.failed(e)),
            };
            if let Some(sha) = parse_blob_key(meta.location.as_ref()) {
                held.push((sha, meta.last_modified.timestamp()));
            }
        }
        Ok(held)
    }

    async fn delete(&self, sha256: &[u8; 32]) -> Result<()> {
        match self.store.delete(&Path::from(blob_key(sha256))).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed(e)),
        }
    }

    async fn modified(&self, sha256: &[u8; 32]) -> Result<Option<i64>> {
        match self.store.head(&Path::from(blob_key(sha256))).await {
            Ok(meta) => Ok(Some(meta.last_modified.timestamp())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.failed(e)),
        }
    }
}

#[cfg(test)]
mod tests;
