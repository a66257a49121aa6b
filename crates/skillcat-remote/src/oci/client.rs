//! A small OCI distribution client on reqwest: manifests and blobs up and down, the referrers
//! API, and the registry's `WWW-Authenticate` challenge (anonymous, basic, bearer token).
//!
//! Everything read is bounded (manifests by [`MAX_MANIFEST`], blobs by the caller's limit,
//! counted on bytes received) and verified against the digest it was asked by before it is
//! returned. Messages name URLs without credentials or queries and never show a password or a
//! token.

use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};

use super::auth::{
    Challenge, Credentials, EnvCredentials, PASSWORD_ENV, REALM_ENV, REGISTRY_ENV, USERNAME_ENV,
    docker_lookup, parse_challenge,
};
use super::layout::{ACCEPT, INDEX_V1, MAX_MANIFEST};
use super::reference::Reference;
use crate::client::{Failure, RequestError, Retry, is_retryable_status, read_bounded, retry_after};
use crate::digest::sha256_digest;
use crate::error::{Error, Result};
use crate::http::HttpOptions;
use crate::http::redact;

/// How a client reaches a registry.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Timeouts and limits (the HTTP source's).
    pub http: HttpOptions,
    /// Speak plain HTTP to a registry that is not on this machine.
    pub allow_insecure: bool,
    /// Ask for push rights as well as pull (bearer token scope).
    pub push: bool,
    /// The Docker configuration credentials are looked up in (`None`: none is read).
    pub docker_config: Option<std::path::PathBuf>,
}

/// A client of one repository of one registry.
pub struct Client {
    http: crate::client::Client,
    base: Url,
    repository: String,
    registry: String,
    shown: String,
    env: EnvCredentials,
    creds: Option<Credentials>,
    auth: Mutex<Option<String>>,
    push: bool,
    docker_config: Option<std::path::PathBuf>,
    deadline: Duration,
    retries: u32,
    backoff: Duration,
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("registry", &self.shown)
            .field("credentials", &self.creds.as_ref().map(|c| &c.origin))
            .finish()
    }
}

/// A blob or manifest as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The bytes (verified against the digest asked for, when one was).
    pub bytes: Bytes,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `sha256:` of the bytes.
    pub digest: String,
}

impl Client {
    /// A client for `reference`'s repository: https, or plain http for a loopback registry or
    /// with `allow_insecure`. Credentials bound to the registry's host are looked up now
    /// ([`Credentials::lookup`]).
    pub fn new(reference: &Reference, opts: &ClientOptions) -> Result<Client> {
        let insecure = reference.is_loopback() || opts.allow_insecure;
        let scheme = if insecure { "http" } else { "https" };
        if !insecure && !cfg!(feature = "tls") {
            return Err(Error::Invalid(format!(
                "{reference}: this skillcat was built without the `tls` feature, so it can reach only a registry on this machine (or one named with --allow-insecure) over plain http"
            )));
        }
        let base = Url::parse(&format!("{scheme}://{}/", reference.registry))
            .map_err(|e| Error::other(format!("{reference}: not a registry address"), e))?;
        let http = crate::client::Client::new(&opts.http.policy())
            .map_err(|e| Error::other("cannot set up the HTTP client", e))?;
        let env = EnvCredentials::read();
        let creds = env
            .for_registry(&reference.registry)
            .or_else(|| docker_lookup(opts.docker_config.as_deref(), &reference.registry));
        Ok(Client {
            http,
            shown: format!("{scheme}://{}", reference.registry),
            base,
            repository: reference.repository.clone(),
            registry: reference.registry.clone(),
            env,
            creds,
            auth: Mutex::new(None),
            push: opts.push,
            docker_config: opts.docker_config.clone(),
            deadline: opts.http.timeout,
            retries: opts.http.retries,
            backoff: opts.http.backoff,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    /// When environment credentials are set but `SKILLCAT_OCI_REGISTRY` is not: why they are
    /// sent nowhere (a misconfiguration worth a warning even if the registry never asks).
    pub fn unbound_credentials(&self) -> Option<String> {
        self.env
            .registry
            .is_none()
            .then(|| self.env.unused(&self.registry))
            .flatten()
    }

    /// Requests made so far (authentication round trips included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Body bytes received so far.
    pub fn bytes_received(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn url(&self, tail: &str) -> Url {
        self.base
            .join(&format!("v2/{}/{tail}", self.repository))
            .expect("a checked repository and tail make a URL")
    }

    /// GETs a manifest (or index) by tag or digest. By digest, the bytes must hash to it; by
    /// tag, to the `Docker-Content-Digest` the registry sends, when it sends one.
    pub async fn manifest(&self, reference: &str) -> Result<Received> {
        let url = self.url(&format!("manifests/{reference}"));
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(ACCEPT));
        let resp = self.send(Method::GET, &url, headers, None).await?;
        let resp = expect(resp, &url, &[StatusCode::OK])?;
        let claimed = text(resp.headers(), "docker-content-digest");
        let received = self.body(resp, &url, MAX_MANIFEST).await?;
        let want = if reference.starts_with("sha256:") {
            Some(reference.to_string())
        } else {
            claimed.filter(|c| c.starts_with("sha256:"))
        };
        if let Some(want) = want
            && want != received.digest
        {
            return Err(Error::DigestMismatch {
                what: format!("{}: manifest {reference}", redact(&url)),
                expected: want,
                actual: received.digest,
            });
        }
        Ok(received)
    }

    /// GETs a blob, at most `limit` bytes, verified against `digest`.
    pub async fn blob(&self, digest: &str, limit: u64) -> Result<Received> {
        let url = self.url(&format!("blobs/{digest}"));
        let resp = self.send(Method::GET, &url, HeaderMap::new(), None).await?;
        let resp = expect(resp, &url, &[StatusCode::OK])?;
        let received = self.body(resp, &url, limit).await?;
        if received.digest != digest {
            return Err(Error::DigestMismatch {
                what: format!("{}: blob", redact(&url)),
                expected: digest.to_string(),
                actual: received.digest,
            });
        }
        Ok(received)
    }

    /// Whether the registry holds a blob (HEAD).
    pub async fn has_blob(&self, digest: &str) -> Result<bool> {
        let url = self.url(&format!("blobs/{digest}"));
        let resp = self
            .send(Method::HEAD, &url, HeaderMap::new(), None)
            .await?;
        match resp.status() {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => expect(resp, &url, &[]).map(|_| false),
        }
    }

    /// Uploads a blob unless the registry holds it already (a monolithic upload: POST, then
    /// PUT of the whole body with its digest). Returns its digest, and whether it was uploaded.
    pub async fn push_blob(&self, bytes: Bytes) -> Result<(String, bool)> {
        let digest = sha256_digest(&bytes);
        if self.has_blob(&digest).await? {
            return Ok((digest, false));
        }
        let url = self.url("blobs/uploads/");
        let resp = self
            .send(Method::POST, &url, HeaderMap::new(), Some(Bytes::new()))
            .await?;
        let resp = expect(resp, &url, &[StatusCode::ACCEPTED])?;
        let location = text(resp.headers(), "location").ok_or_else(|| {
            Error::Invalid(format!(
                "{}: the upload was accepted without a Location",
                redact(&url)
            ))
        })?;
        let mut put = url
            .join(&location)
            .map_err(|e| Error::other(format!("{}: a bad upload Location", redact(&url)), e))?;
        put.query_pairs_mut().append_pair("digest", &digest);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        let resp = self.send(Method::PUT, &put, headers, Some(bytes)).await?;
        expect(resp, &put, &[StatusCode::CREATED])?;
        Ok((digest, true))
    }

    /// PUTs a manifest (or index) under `reference` (a tag or its digest). Returns its digest.
    pub async fn push_manifest(
        &self,
        reference: &str,
        media_type: &str,
        bytes: Bytes,
    ) -> Result<String> {
        let digest = sha256_digest(&bytes);
        let url = self.url(&format!("manifests/{reference}"));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(media_type)
                .map_err(|e| Error::other(format!("media type {media_type:?}"), e))?,
        );
        let resp = self.send(Method::PUT, &url, headers, Some(bytes)).await?;
        let resp = expect(resp, &url, &[StatusCode::CREATED, StatusCode::OK])?;
        if let Some(got) = text(resp.headers(), "docker-content-digest")
            && got != digest
        {
            return Err(Error::DigestMismatch {
                what: format!("{}: the stored manifest", redact(&url)),
                expected: digest,
                actual: got,
            });
        }
        Ok(digest)
    }

    /// Every tag of the repository (`GET /v2/<repo>/tags/list`, following `Link: <…>;
    /// rel="next"` for at most [`MAX_TAG_PAGES`] pages, each page at most [`MAX_MANIFEST`]
    /// bytes). A repository the registry does not know is [`Error::NotFound`].
    pub async fn tags(&self) -> Result<Vec<String>> {
        let mut url = self.url("tags/list");
        let mut out = Vec::new();
        for _ in 0..MAX_TAG_PAGES {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
            let resp = self.send(Method::GET, &url, headers, None).await?;
            let resp = expect(resp, &url, &[StatusCode::OK])?;
            let next = text(resp.headers(), "link").and_then(|l| next_link(&l));
            let body = self.body(resp, &url, MAX_MANIFEST).await?;
            let doc: serde_json::Value = serde_json::from_slice(&body.bytes).map_err(|e| {
                Error::Invalid(format!("{}: the tag list is not JSON: {e}", redact(&url)))
            })?;
            if let Some(tags) = doc.get("tags").and_then(|t| t.as_array()) {
                out.extend(tags.iter().filter_map(|t| t.as_str()).map(str::to_string));
            }
            match next {
                Some(link) => {
                    url = url.join(&link).map_err(|e| {
                        Error::other(format!("{}: a bad Link to the next tags", redact(&url)), e)
                    })?;
                }
                None => return Ok(out),
            }
        }
        Ok(out)
    }

    /// The referrers of a manifest through the referrers API: `None` when the registry has no
    /// such API (it answers 404, as `distribution` 2.8 does, or another refusal that is not about
    /// credentials).
    pub async fn referrers_api(&self, digest: &str) -> Result<Option<Received>> {
        let url = self.url(&format!("referrers/{digest}"));
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(INDEX_V1));
        let resp = self.send(Method::GET, &url, headers, None).await?;
        let status = resp.status();
        let is_index =
            text(resp.headers(), "content-type").is_some_and(|c| c.starts_with(INDEX_V1));
        if status == StatusCode::OK && is_index {
            return Ok(Some(self.body(resp, &url, MAX_MANIFEST).await?));
        }
        if status == StatusCode::OK
            || status.is_client_error()
            || status == StatusCode::NOT_IMPLEMENTED
        {
            return Ok(None);
        }
        expect(resp, &url, &[]).map(|_| None)
    }

    /// Sends one request with the authorization in use; on 401, answers the challenge once
    /// (basic credentials, or a bearer token fetched from the realm) and sends it again.
    async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Bytes>,
    ) -> Result<reqwest::Response> {
        let current = self
            .auth
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let resp = self
            .send_retrying(
                method.clone(),
                url,
                headers.clone(),
                body.clone(),
                current.as_deref(),
            )
            .await?;
        if resp.status() != StatusCode::UNAUTHORIZED {
            return Ok(resp);
        }
        let challenge = text(resp.headers(), "www-authenticate")
            .and_then(|v| parse_challenge(&v))
            .ok_or_else(|| {
                self.auth_error("answered 401 without a challenge skillcat can answer")
            })?;
        let fresh = self.answer(&challenge).await?;
        *self.auth.lock().unwrap_or_else(PoisonError::into_inner) = Some(fresh.clone());
        let resp = self
            .send_retrying(method, url, headers, body, Some(&fresh))
            .await?;
        if resp.status() == StatusCode::UNAUTHORIZED {
            return Err(self.refused());
        }
        Ok(resp)
    }

    /// Sends one request, again after a transport failure or a 5xx, 408 or 429 answer when
    /// the request may be repeated (GET and HEAD), with the one client's backoff. A request that
    /// cannot be built (credentials no header can carry) was never sent: that is returned at
    /// once, never retried.
    async fn send_retrying(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Bytes>,
        auth: Option<&str>,
    ) -> Result<reqwest::Response> {
        let repeatable = method == Method::GET || method == Method::HEAD;
        let retry = Retry {
            retries: self.retries,
            backoff: self.backoff,
        };
        // A retryable status that is the last answer is returned as the answer: the error
        // side of the loop carries what was sent.
        let sent = retry
            .run(None, || async {
                let req = self
                    .request(method.clone(), url, headers.clone(), body.clone(), auth)
                    .map_err(|e| Failure::last(Err(e)))?;
                match self.transmit(url, req).await {
                    Ok(r) if is_retryable_status(r.status().as_u16()) => Err(Failure {
                        retry: repeatable,
                        retry_after: retry_after(r.headers()),
                        error: Ok(r),
                    }),
                    Ok(r) => Ok(r),
                    // `transmit` fails only in transport: the request went out (or tried to).
                    Err(e) => Err(Failure {
                        retry: repeatable,
                        retry_after: None,
                        error: Err(e),
                    }),
                }
            })
            .await;
        sent.or_else(|last| last)
    }

    /// Builds one request with the authorization in use. Fails only before anything is sent.
    fn request(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Bytes>,
        auth: Option<&str>,
    ) -> Result<reqwest::RequestBuilder> {
        let mut req = self
            .http
            .request(method, url.clone())
            .headers(headers)
            .header(header::ACCEPT_ENCODING, "identity");
        if let Some(a) = auth {
            let mut v = HeaderValue::from_str(a)
                .map_err(|_| self.auth_error("the credentials hold characters a header cannot"))?;
            v.set_sensitive(true);
            req = req.header(header::AUTHORIZATION, v);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        Ok(req)
    }

    /// Sends a built request within the deadline; every error is a transport failure.
    async fn transmit(&self, url: &Url, req: reqwest::RequestBuilder) -> Result<reqwest::Response> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        match tokio::time::timeout(self.deadline, req.send()).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(RequestError::of(&redact(url), e).into()),
            Err(_) => Err(transport(
                url,
                &format!(
                    "no answer within {}s (--timeout)",
                    self.deadline.as_secs_f64()
                ),
            )),
        }
    }

    /// The `Authorization` value that answers `challenge`.
    async fn answer(&self, challenge: &Challenge) -> Result<String> {
        match challenge {
            Challenge::Basic => match &self.creds {
                Some(c) => Ok(c.basic()),
                None => Err(self.needs_credentials()),
            },
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                let mut url = Url::parse(realm).map_err(|e| {
                    Error::other(
                        format!("{}: the token realm {realm:?} is not a URL", self.shown),
                        e,
                    )
                })?;
                if url.scheme() == "http" && self.base.scheme() == "https" {
                    return Err(self.auth_error("its token realm is plain http while the registry is https; refusing to send credentials there"));
                }
                let wanted = if self.push { "pull,push" } else { "pull" };
                let own = format!("repository:{}:{wanted}", self.repository);
                {
                    let mut q = url.query_pairs_mut();
                    if let Some(s) = service {
                        q.append_pair("service", s);
                    }
                    q.append_pair(
                        "scope",
                        scope
                            .as_deref()
                            .filter(|s| !self.push || s.contains("push"))
                            .unwrap_or(&own),
                    );
                }
                let mut headers = HeaderMap::new();
                headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
                let realm_creds = self.realm_credentials(&url);
                let basic = realm_creds.as_ref().map(Credentials::basic);
                let req = self.request(Method::GET, &url, headers, None, basic.as_deref())?;
                let resp = self.transmit(&url, req).await?;
                match resp.status() {
                    StatusCode::OK => {}
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                        return Err(match (&realm_creds, &self.creds) {
                            (Some(c), _) => self.refused_by(c),
                            (None, Some(_)) => self.auth_error(&format!(
                                "its token service {} is on another host, which asks for credentials; the registry's are not sent there unless it is named in {REALM_ENV} (or has its own entry in ~/.docker/config.json)",
                                redact(&url)
                            )),
                            (None, None) => self.needs_credentials(),
                        });
                    }
                    s => {
                        return Err(self.auth_error(&format!(
                            "its token service {} answered HTTP {}",
                            redact(&url),
                            s.as_u16()
                        )));
                    }
                }
                let body = self.body(resp, &url, 1 << 20).await?;
                let json: serde_json::Value =
                    serde_json::from_slice(&body.bytes).map_err(|_| {
                        self.auth_error("its token service answered something that is not JSON")
                    })?;
                let token = json
                    .get("token")
                    .or_else(|| json.get("access_token"))
                    .and_then(|t| t.as_str())
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| self.auth_error("its token service answered without a token"))?;
                Ok(format!("Bearer {token}"))
            }
        }
    }

    /// The basic credentials a token realm at `realm` may receive: the registry's own when
    /// the realm is on the registry's host (same scheme host and port); on another host, the
    /// environment's only when that host is named in `SKILLCAT_OCI_REALM`, else what the
    /// Docker configuration holds for that host itself.
    fn realm_credentials(&self, realm: &Url) -> Option<Credentials> {
        let same = realm.host_str().map(str::to_ascii_lowercase)
            == self.base.host_str().map(str::to_ascii_lowercase)
            && realm.port_or_known_default() == self.base.port_or_known_default();
        if same {
            return self.creds.clone();
        }
        let host = realm_host(realm)?;
        self.env
            .for_realm(&self.registry, &host)
            .or_else(|| docker_lookup(self.docker_config.as_deref(), &host))
    }

    fn auth_error(&self, why: &str) -> Error {
        Error::Unauthenticated {
            location: self.shown.clone(),
            reason: format!("authentication failed: {why}"),
        }
    }

    fn needs_credentials(&self) -> Error {
        if let Some(why) = self.env.unused(&self.registry) {
            return self.auth_error(&format!(
                "the registry asks for credentials and none are bound to it: {why}"
            ));
        }
        self.auth_error(&format!(
            "the registry asks for credentials and none are set (set {USERNAME_ENV}, {PASSWORD_ENV} and {REGISTRY_ENV}={}, or log in with `docker login`, which writes ~/.docker/config.json)",
            self.registry
        ))
    }

    fn refused(&self) -> Error {
        match &self.creds {
            Some(c) => self.refused_by(c),
            None => self.needs_credentials(),
        }
    }

    fn refused_by(&self, c: &Credentials) -> Error {
        self.auth_error(&format!(
            "the registry refused the credentials of user {:?} from {}",
            c.username, c.origin
        ))
    }

    /// Reads a body of at most `limit` bytes (checked against Content-Length first, then on
    /// the bytes received).
    async fn body(&self, resp: reqwest::Response, url: &Url, limit: u64) -> Result<Received> {
        let content_type = text(resp.headers(), "content-type");
        let bytes = read_bounded(resp, &redact(url), limit, Some(self.deadline))
            .await
            .map_err(|e| match e {
                RequestError::Stalled { .. } => transport(url, "the body stalled (--timeout)"),
                e => e.into(),
            })?;
        self.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(Received {
            digest: sha256_digest(&bytes),
            bytes,
            content_type,
        })
    }
}

/// `host[:port]` of a URL as written (the port only when it is not the scheme's default).
fn realm_host(url: &Url) -> Option<String> {
    let host = url.host_str()?.to_ascii_lowercase();
    Some(match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    })
}

/// Pages of a tag list read at most (a registry pages by its own `n`, often 100 or 1,000).
pub const MAX_TAG_PAGES: usize = 100;

/// The target of a `Link: <URL>; rel="next"` header (distribution's tag list pagination).
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let next = params
            .split(';')
            .any(|p| p.trim().eq_ignore_ascii_case("rel=\"next\"") || p.trim() == "rel=next");
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        next.then(|| target.to_string())
    })
}

/// The response when its status is one of `ok`, else an error naming the status and the
/// registry's own error code when it sent one (the body is not read further).
fn expect(resp: reqwest::Response, url: &Url, ok: &[StatusCode]) -> Result<reqwest::Response> {
    let status = resp.status();
    if ok.contains(&status) {
        return Ok(resp);
    }
    Err(crate::client::status_error(
        redact(url),
        status.as_u16(),
        "the registry denies this to the credentials in use",
    ))
}

fn transport(url: &Url, detail: &str) -> Error {
    Error::io(redact(url), std::io::Error::other(detail.to_string()))
}

fn text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_for_this_machine_or_when_allowed() {
        let client = |text: &str, allow_insecure: bool| {
            let opts = ClientOptions {
                http: HttpOptions::default(),
                allow_insecure,
                push: false,
                docker_config: None,
            };
            Client::new(&Reference::parse(text).unwrap(), &opts).map(|c| c.shown)
        };
        assert_eq!(
            client("oci://127.0.0.1:5000/a", false).unwrap(),
            "http://127.0.0.1:5000"
        );
        assert_eq!(
            client("oci://localhost/a", false).unwrap(),
            "http://localhost"
        );
        assert_eq!(
            client("oci://reg.example:5000/a", true).unwrap(),
            "http://reg.example:5000"
        );
        if cfg!(feature = "tls") {
            assert_eq!(client("oci://ghcr.io/a", false).unwrap(), "https://ghcr.io");
        } else {
            assert!(client("oci://ghcr.io/a", false).is_err());
        }
    }

    #[test]
    fn the_next_page_of_tags_is_the_link_marked_next() {
        assert_eq!(
            next_link("</v2/a/tags/list?last=b&n=2>; rel=\"next\"").as_deref(),
            Some("/v2/a/tags/list?last=b&n=2")
        );
        assert_eq!(next_link("</x>; rel=\"prev\""), None);
        assert_eq!(next_link("nonsense"), None);
    }

    #[tokio::test]
    async fn a_request_that_cannot_be_built_is_not_retried() {
        // Port 9 on this machine: nothing is sent anyway, and a retry would wait the backoff.
        let opts = ClientOptions {
            http: HttpOptions {
                retries: 5,
                backoff: Duration::from_secs(30),
                ..HttpOptions::default()
            },
            allow_insecure: false,
            push: false,
            docker_config: None,
        };
        let client = Client::new(&Reference::parse("oci://127.0.0.1:9/a").unwrap(), &opts).unwrap();
        let url = Url::parse("http://127.0.0.1:9/v2/").unwrap();
        let started = std::time::Instant::now();
        let err = client
            .send_retrying(
                Method::GET,
                &url,
                HeaderMap::new(),
                None,
                Some("Basic a\nb"),
            )
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("hold characters a header cannot"),
            "{err}"
        );
        assert_eq!(client.requests(), 0, "nothing was sent");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no backoff was waited"
        );
    }
}
