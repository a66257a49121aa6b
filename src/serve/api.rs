//! The publishing API of a central registry (`skillcat serve REGISTRY.db --publish`).
//!
//! ```text
//! PUT    /api/v1/skills/{name}/{version}          body: the skill's archive (.tar.gz or .zip)
//! DELETE /api/v1/skills/{name}/{version}/yank     yank
//! PUT    /api/v1/skills/{name}/{version}/unyank   unyank
//! GET    /api/v1/audit?limit=N&before=ID          the audit log, newest first
//! ```
//!
//! Every request carries `Authorization: Bearer <token>`. Answers are JSON; a refusal is
//! `{"errors": [{"code": "…", "detail": "…"}]}` with its status: 401 (no, unknown or revoked
//! token), 403 (a token without the right, or outside its name scopes), 404, 409 (other content
//! under a published version), 413 (a body over the upload limit), 422 (the archive is not the
//! skill and version named, is hostile, invalid, or its signature is refused), 429 (the token's
//! rate, with `Retry-After`), 503 (the registry is busy). The token file and the keyring are
//! re-read when they change (checked on every API request) and on `SIGHUP`; a file that no
//! longer reads keeps what was read before. The token itself is never logged, echoed or stored.
//!
//! After a write, the served site is updated for the one skill written (its index entries,
//! files and blobs; every other skill's are shared), then swapped in whole: a reader sees the
//! old site or the new one, and the indexes' `ETag`s change with their bytes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::{delete, get, put};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use super::limits::Conn;
use super::site::{Site, SiteOptions};
use crate::archive::{ArchiveLimits, sniff};
use crate::registry::tokens::{AuthError, Right, TokenEntry, Tokens};
use crate::registry::{Actor, Outcome, PublishOptions, Registry, RegistryError};
use crate::sign::Keyring;
use crate::source::{ArchiveSource, RegistrySource, Source};

/// How the publishing API is set up.
#[derive(Clone)]
pub struct ApiOptions {
    /// The registry file written into.
    pub registry: PathBuf,
    /// The token file.
    pub tokens: PathBuf,
    /// When given, every published skill must be signed by a key of this keyring file allowed
    /// for its name (re-read when it changes, and on `SIGHUP`).
    pub keyring: Option<PathBuf>,
    /// The largest upload, in bytes (counted as it streams).
    pub max_upload: u64,
    /// Uploads read at once (the rest wait): bounds the memory uploads take.
    pub max_uploads: usize,
    /// Writes (publish, yank, unyank) per token per minute; also the burst allowed.
    pub writes_per_minute: u32,
}

impl std::fmt::Debug for ApiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiOptions")
            .field("registry", &self.registry)
            .field("tokens", &self.tokens)
            .field("keyring", &self.keyring)
            .field("max_upload", &self.max_upload)
            .finish()
    }
}

/// The default upload limit: 16 MiB.
pub const DEFAULT_MAX_UPLOAD: u64 = 16 << 20;

/// What identifies a file's content cheaply: modification time, size, inode.
type Stamp = (SystemTime, u64, u64);

/// A file read at start, and again when it changes (or when asked, on `SIGHUP`): what it held
/// when it last read well.
struct Watched<T> {
    path: PathBuf,
    load: fn(&Path) -> Result<T, String>,
    state: Mutex<(Arc<T>, Option<Stamp>)>,
}

impl<T> Watched<T> {
    fn new(path: PathBuf, load: fn(&Path) -> Result<T, String>) -> Result<Self, String> {
        let stamp = stamp_of(&path);
        let value = load(&path)?;
        Ok(Watched {
            path,
            load,
            state: Mutex::new((Arc::new(value), stamp)),
        })
    }

    /// What the file holds now: re-read when it changed since it was read (or `force`). A file
    /// that no longer reads keeps what was read before, and says so once.
    fn current(&self, force: bool) -> Arc<T> {
        let stamp = stamp_of(&self.path);
        let mut state = self.state.lock().expect("watched file lock");
        if force || stamp.is_none() || stamp != state.1 {
            match (self.load)(&self.path) {
                Ok(value) => {
                    log(format_args!("Reloaded {}", self.path.display()));
                    *state = (Arc::new(value), stamp);
                }
                Err(e) => {
                    if force || state.1 != stamp {
                        log(format_args!(
                            "warning: {e}; what {} held before stays in force",
                            self.path.display()
                        ));
                        state.1 = stamp;
                    }
                }
            }
        }
        state.0.clone()
    }
}

/// A token bucket per token name.
struct Bucket {
    level: f64,
    at: Instant,
}

struct Api {
    opts: ApiOptions,
    tokens: Watched<Tokens>,
    keyring: Option<Watched<Keyring>>,
    site: Arc<RwLock<Arc<Site>>>,
    buckets: Mutex<HashMap<String, Bucket>>,
    uploads: tokio::sync::Semaphore,
    /// One site update at a time, so that each starts from the one swapped in before it.
    updating: tokio::sync::Mutex<()>,
}

/// A refusal: status, a short code and a sentence.
struct Refusal {
    status: StatusCode,
    code: &'static str,
    detail: String,
    retry_after: Option<u64>,
}

fn refuse(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Refusal {
    Refusal {
        status,
        code,
        detail: detail.into(),
        retry_after: None,
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let text = body.to_string();
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, text.len())
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .body(Body::from(text))
        .expect("valid response")
}

impl Refusal {
    fn into_response(self) -> Response {
        let mut r = json_response(
            self.status,
            &json!({"errors": [{"code": self.code, "detail": self.detail}]}),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"skillcat\""),
            );
        }
        if let Some(secs) = self.retry_after {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        r
    }
}

/// One stderr line about the API (never a token: only token names are passed here).
fn log(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn stamp_of(path: &std::path::Path) -> Option<(SystemTime, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

impl Api {
    /// Re-reads the token file and the keyring (on `SIGHUP`).
    fn reload(&self) {
        self.tokens.current(true);
        if let Some(k) = &self.keyring {
            k.current(true);
        }
    }

    /// The entry of the request's bearer token.
    fn authenticate(&self, headers: &HeaderMap) -> Result<TokenEntry, Refusal> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            })
            .ok_or_else(|| {
                refuse(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "this request needs `Authorization: Bearer <token>`",
                )
            })?;
        match self.tokens.current(false).authenticate(presented) {
            Ok(entry) => Ok(entry.clone()),
            Err(AuthError::Revoked(_)) => Err(refuse(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the token has been revoked",
            )),
            Err(AuthError::Unknown) => Err(refuse(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the token is not known to this registry",
            )),
        }
    }

    /// Checks the token may do `right` on `name`, then takes one from its rate bucket.
    fn authorize(&self, entry: &TokenEntry, right: Right, name: &str) -> Result<(), Refusal> {
        if !entry.can(right) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("the token {} may not {right}", entry.name()),
            ));
        }
        if !entry.allows(name) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "the token {} may not write {name:?} (its scopes: {})",
                    entry.name(),
                    entry.scopes().join(" ")
                ),
            ));
        }
        let rate = f64::from(self.opts.writes_per_minute.max(1));
        let mut buckets = self.buckets.lock().expect("rate lock");
        let now = Instant::now();
        let b = buckets.entry(entry.name().to_string()).or_insert(Bucket {
            level: rate,
            at: now,
        });
        b.level = (b.level + now.duration_since(b.at).as_secs_f64() * rate / 60.0).min(rate);
        b.at = now;
        if b.level < 1.0 {
            let wait = ((1.0 - b.level) * 60.0 / rate).ceil() as u64;
            return Err(Refusal {
                retry_after: Some(wait.max(1)),
                ..refuse(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!(
                        "the token {} has made its {} writes of the minute; retry in {}s",
                        entry.name(),
                        self.opts.writes_per_minute,
                        wait.max(1)
                    ),
                )
            });
        }
        b.level -= 1.0;
        Ok(())
    }

    /// Updates the served site for the skill `name` after a write to it; a failure keeps the
    /// old site and is logged.
    async fn refresh_site(&self, name: &str) {
        let _one = self.updating.lock().await;
        let old = self.site.read().expect("site lock").clone();
        let updated = match RegistrySource::open(&self.opts.registry) {
            Ok(source) => old.updated(&source, name, &SiteOptions::default()).await,
            Err(e) => Err(e),
        };
        match updated {
            Ok((site, problems)) => {
                for p in problems {
                    log(format_args!("warning: {p}"));
                }
                *self.site.write().expect("site lock") = Arc::new(site);
            }
            Err(e) => log(format_args!(
                "warning: the index was not updated after a write to {name}: {e}"
            )),
        }
    }
}

fn registry_refusal(e: RegistryError) -> Refusal {
    use RegistryError as E;
    let detail = e.to_string();
    match e {
        E::Immutable { .. } | E::VersionConflict { .. } => {
            refuse(StatusCode::CONFLICT, "immutable", detail)
        }
        E::LookAlike { .. } => refuse(StatusCode::CONFLICT, "look_alike", detail),
        E::NotFound(_) => refuse(StatusCode::NOT_FOUND, "not_found", detail),
        E::Unsigned { .. } | E::BadSignature { .. } => {
            refuse(StatusCode::UNPROCESSABLE_ENTITY, "signature", detail)
        }
        E::InvalidSkill { .. }
        | E::MissingVersion { .. }
        | E::BadVersion { .. }
        | E::BadPath { .. }
        | E::MixedScripts { .. }
        | E::Read { .. } => refuse(StatusCode::UNPROCESSABLE_ENTITY, "invalid_skill", detail),
        E::Sqlite { ref source, .. }
            if matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ) =>
        {
            Refusal {
                retry_after: Some(1),
                ..refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy",
                    "the registry is busy; retry",
                )
            }
        }
        other => {
            log(format_args!("error: {other}"));
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the registry could not complete the write (see the server's log)",
            )
        }
    }
}

/// Runs a registry call off the runtime; its error becomes the refusal it stands for.
async fn in_registry<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RegistryError> + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| {
            log(format_args!("error: a registry task stopped: {e}"));
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the registry task stopped (see the server's log)",
            )
        })?
        .map_err(registry_refusal)
}

fn peer(req_conn: Option<&ConnectInfo<Conn>>) -> String {
    req_conn.map_or_else(|| "-".to_string(), |c| c.0.peer().to_string())
}

/// Reads the body under the upload limit: 413 as soon as `Content-Length` or the bytes that
/// arrived pass it.
async fn read_upload(body: Body, headers: &HeaderMap, max: u64) -> Result<Vec<u8>, Refusal> {
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the upload is over the limit of {max} bytes"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let mut out = Vec::with_capacity(declared.unwrap_or(0).min(max) as usize);
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            refuse(
                StatusCode::BAD_REQUEST,
                "bad_body",
                format!("the upload broke off: {e}"),
            )
        })?;
        if out.len() as u64 + chunk.len() as u64 > max {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    if out.is_empty() {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_archive",
            "the body is empty: send the skill's .tar.gz or .zip",
        ));
    }
    Ok(out)
}

/// The optional detached signature: `Skillcat-Signature: <base64 of the .minisig text>`.
fn signature_of(headers: &HeaderMap) -> Result<Option<String>, Refusal> {
    use base64::Engine;
    let Some(v) = headers.get("skillcat-signature") else {
        return Ok(None);
    };
    let bad = || {
        refuse(
            StatusCode::BAD_REQUEST,
            "bad_signature_header",
            "Skillcat-Signature must be the base64 of the .minisig text",
        )
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.as_bytes())
        .map_err(|_| bad())?;
    String::from_utf8(bytes).map(Some).map_err(|_| bad())
}

#[derive(Deserialize)]
struct SkillPath {
    name: String,
    version: String,
}

async fn publish(
    State(api): State<Arc<Api>>,
    UrlPath(p): UrlPath<SkillPath>,
    req: Request,
) -> Response {
    match publish_inner(&api, p, req).await {
        Ok(r) => r,
        Err(refusal) => refusal.into_response(),
    }
}

async fn publish_inner(api: &Arc<Api>, p: SkillPath, req: Request) -> Result<Response, Refusal> {
    let client = peer(req.extensions().get::<ConnectInfo<Conn>>());
    let (parts, body) = req.into_parts();
    let entry = api.authenticate(&parts.headers)?;
    api.authorize(&entry, Right::Publish, &p.name)?;
    let signature = signature_of(&parts.headers)?;
    let permit = api.uploads.acquire().await.expect("never closed");
    let bytes = read_upload(body, &parts.headers, api.opts.max_upload).await?;
    let unreadable = |e: crate::Error| {
        refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_archive",
            format!("the upload is not a readable skill archive: {e}"),
        )
    };
    let kind = sniff(
        std::path::Path::new(""),
        &bytes[..bytes.len().min(crate::archive::SNIFF_LEN)],
    )
    .ok_or_else(|| {
        refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_archive",
            "the body is neither a .tar.gz, a .tar nor a .zip",
        )
    })?;
    let limits = ArchiveLimits {
        max_compressed: api.opts.max_upload,
        ..ArchiveLimits::default()
    };
    let label = format!("{}@{} (upload)", p.name, p.version);
    let source = ArchiveSource::from_bytes(kind, &label, &bytes, limits).map_err(unreadable)?;
    drop(bytes);
    let roots = source.list().await.map_err(unreadable)?;
    let [root] = &roots[..] else {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_archive",
            format!(
                "an upload is one skill at the archive's root; this one holds {}",
                roots.len()
            ),
        ));
    };
    let keyring = api.keyring.as_ref().map(|k| k.current(false));
    let opts = PublishOptions {
        signature,
        keyring: keyring.as_deref(),
        ..Default::default()
    };
    let prepared = crate::publish::prepare(&source, root, &opts)
        .await
        .map_err(registry_refusal)?;
    drop(permit);
    if prepared.name() != p.name || prepared.version() != p.version {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "mismatch",
            format!(
                "the request names {}@{} but the archive is {}@{}",
                p.name,
                p.version,
                prepared.name(),
                prepared.version()
            ),
        ));
    }
    let actor = Actor {
        token: entry.name().to_string(),
        client,
    };
    let path = api.opts.registry.clone();
    let published =
        in_registry(move || Registry::open(&path)?.commit_as(&prepared, Some(&actor))).await?;
    let changed = published.outcome == Outcome::Published || published.signature_added;
    if changed {
        api.refresh_site(&published.name).await;
        log(format_args!(
            "{} published {}@{} {}",
            entry.name(),
            published.name,
            published.version,
            published.digest
        ));
    }
    let status = if published.outcome == Outcome::Published {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(status, &json!(published)))
}

async fn set_yanked(
    api: Arc<Api>,
    p: SkillPath,
    req: Request,
    yanked: bool,
) -> Result<Response, Refusal> {
    let client = peer(req.extensions().get::<ConnectInfo<Conn>>());
    let entry = api.authenticate(req.headers())?;
    api.authorize(&entry, Right::Yank, &p.name)?;
    let actor = Actor {
        token: entry.name().to_string(),
        client,
    };
    let path = api.opts.registry.clone();
    let (name, version) = (p.name.clone(), p.version.clone());
    let changed =
        in_registry(move || Registry::open(&path)?.set_yanked_as(&name, &version, yanked, &actor))
            .await?;
    if changed {
        api.refresh_site(&p.name).await;
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({"name": p.name, "version": p.version, "yanked": yanked, "changed": changed}),
    ))
}

async fn yank(
    State(api): State<Arc<Api>>,
    UrlPath(p): UrlPath<SkillPath>,
    req: Request,
) -> Response {
    set_yanked(api, p, req, true)
        .await
        .unwrap_or_else(Refusal::into_response)
}

async fn unyank(
    State(api): State<Arc<Api>>,
    UrlPath(p): UrlPath<SkillPath>,
    req: Request,
) -> Response {
    set_yanked(api, p, req, false)
        .await
        .unwrap_or_else(Refusal::into_response)
}

#[derive(Deserialize)]
struct AuditQuery {
    limit: Option<usize>,
    before: Option<i64>,
}

async fn audit(State(api): State<Arc<Api>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let run = async {
        api.authenticate(&parts.headers)?;
        let Query(q) = Query::<AuditQuery>::try_from_uri(&parts.uri)
            .map_err(|e| refuse(StatusCode::BAD_REQUEST, "bad_query", e.body_text()))?;
        let limit = q.limit.unwrap_or(100).clamp(1, 1000);
        let path = api.opts.registry.clone();
        let rows =
            in_registry(move || Registry::open_read_only(&path)?.audit(limit, q.before)).await?;
        Ok::<_, Refusal>(json_response(StatusCode::OK, &json!({"entries": rows})))
    };
    run.await.unwrap_or_else(Refusal::into_response)
}

async fn api_fallback() -> Response {
    refuse(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such API route (see docs/registry.md)",
    )
    .into_response()
}

/// The read side of `site` plus the publishing API; `site` is swapped for an updated one after
/// each write. Re-reads the token file and the keyring on `SIGHUP`. Fails when either does not
/// read.
pub fn publishing_router(site: Arc<RwLock<Arc<Site>>>, opts: ApiOptions) -> Result<Router, String> {
    let tokens = Watched::new(opts.tokens.clone(), |p| {
        Tokens::load(p).map_err(|e| e.to_string())
    })?;
    let keyring = match &opts.keyring {
        Some(path) => Some(Watched::new(path.clone(), |p| {
            Keyring::load(p).map_err(|e| format!("{}: {e}", p.display()))
        })?),
        None => None,
    };
    let api = Arc::new(Api {
        uploads: tokio::sync::Semaphore::new(opts.max_uploads.max(1)),
        opts,
        tokens,
        keyring,
        site: site.clone(),
        buckets: Mutex::new(HashMap::new()),
        updating: tokio::sync::Mutex::new(()),
    });
    #[cfg(unix)]
    {
        let api = api.clone();
        if let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    api.reload();
                }
            });
        }
    }
    let read_side = move |req: Request| {
        let site = site.read().expect("site lock").clone();
        async move { super::server::answer(&site, &req) }
    };
    let v1 = Router::new()
        .route("/skills/{name}/{version}", put(publish))
        .route("/skills/{name}/{version}/yank", delete(yank))
        .route("/skills/{name}/{version}/unyank", put(unyank))
        .route("/audit", get(audit))
        .fallback(api_fallback)
        .with_state(api);
    Ok(Router::new()
        .nest("/api/v1", v1)
        .fallback(read_side)
        // The API reads bodies itself under its own limit.
        .layer(axum::extract::DefaultBodyLimit::disable()))
}
