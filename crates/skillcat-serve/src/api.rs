//! The publishing API of a central registry (`skillcat serve REGISTRY.db --publish`).
//!
//! ```text
//! PUT    /api/v1/skills/{name}/{version}          body: the skill's archive (.tar.gz or .zip)
//! DELETE /api/v1/skills/{name}/{version}/yank     yank
//! PUT    /api/v1/skills/{name}/{version}/unyank   unyank
//! GET    /api/v1/audit?limit=N&before=ID          the audit log, newest first (the `audit` right)
//! GET    /api/v1/changes?since=SEQ&limit=N        the change feed, in commit order (no token)
//! ```
//!
//! Every request carries `Authorization: Bearer <token>`. Answers are JSON; a refusal is
//! `{"errors": [{"code": "…", "detail": "…"}]}` with its status: 401 (no, unknown or revoked
//! token), 403 (a token without the right, or outside its name scopes), 404, 409 (other content
//! under a published version), 413 (a body over the upload limit, a version over the
//! per-version limits), 422 (the archive is not the skill and version named, is hostile,
//! invalid, its metadata is not what a registry keeps, or its signature is refused), 429 (the
//! token's request or byte rate, with `Retry-After`), 503 (the registry is busy). Which status a
//! registry error is, is decided in one place ([`registry_status`]): a refusal of the input is
//! always a 4xx, a constraint of the schema included; only a failure of the server is a 500,
//! and a database that does not answer is a 503 with `Retry-After` (`unavailable`).
//! Every refusal becomes its answer in one place too ([`Api::refused`]): answers name skills,
//! versions and limits, never the server's files (the registry, the token file, the keyring:
//! each is named by what it is), and the whole error behind a registry's refusal goes to the
//! server's log.
//!
//! **Budgets.** An upload takes one of `max_uploads` slots before its body is read and keeps it
//! until its version is committed or refused: the slot moves with the prepared version into the
//! blocking task that writes it ([`UploadSlot::commit`]), so a client that goes away cannot
//! free it early. A token holds at most half the slots (at least one) at once; its other
//! uploads wait. The body is counted as it streams (`max_upload`), the archive's unpacked bytes
//! and files are counted as it is read (the version limits), so one upload in flight holds at
//! most `max_upload` + 2 × the version's byte limit (the files, and SQLite's copy of the one
//! being written). The token file and the keyring are
//! re-read when they change (checked on every API request) and on `SIGHUP`; a file that no
//! longer reads keeps what was read before. The token itself is never logged, echoed or stored.
//!
//! After a write, the served site is updated for the one skill written (its index entries,
//! files and blobs; every other skill's are shared), then swapped in whole: a reader sees the
//! old site or the new one, and the indexes' `ETag`s change with their bytes. Every read and
//! write goes through one store opened at start (a registry file, or a PostgreSQL database
//! that other replicas share); the site follows the store's change feed, so what another
//! replica writes is served here too (`crate::feed`).

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
use skillcat_audit::{AuditOptions, Policy, Severity, summary_at};
use skillcat_core::api::ErrorBody;

use super::limits::Conn;
use super::respond::{UNAVAILABLE_RETRY, error_response, json_response, log};
use super::site::Site;
use crate::archive::{ArchiveError, ArchiveLimits, sniff};
use crate::feed::Replica;
use crate::registry::store::{Engine, Store};
use crate::registry::tokens::{AuthError, Right, TokenEntry, Tokens};
use crate::registry::{
    Actor, Outcome, Prepared, PublishOptions, Published, RegistryError, VersionLimits,
};
use crate::sign::Keyring;
use crate::source::{ArchiveSource, Source};

/// How the publishing API is set up.
#[derive(Clone)]
pub struct ApiOptions {
    /// The registry written into and read from (`crate::publishing_store`): a registry file,
    /// or a PostgreSQL database other replicas may share.
    pub registry: Arc<dyn Store>,
    /// The token file.
    pub tokens: PathBuf,
    /// When given, every published skill must be signed by a key of this keyring file allowed
    /// for its name (re-read when it changes, and on `SIGHUP`).
    pub keyring: Option<PathBuf>,
    /// The largest upload, in bytes (counted as it streams).
    pub max_upload: u64,
    /// Uploads in flight at once, from the first byte of the body read to the version
    /// committed or refused (the rest wait): bounds the memory uploads take.
    pub max_uploads: usize,
    /// API requests (publish, yank, unyank, audit reads) per token per minute; also the burst
    /// allowed.
    pub writes_per_minute: u32,
    /// What one version may hold (unpacked bytes, files), counted as the upload is unpacked.
    pub version_limits: VersionLimits,
    /// Unpacked bytes a token may publish per minute; the burst is this or one version's byte
    /// limit, whichever is larger.
    pub bytes_per_minute: u64,
    /// What a publish the audit finds a high finding in gets: refused (422 `audit_findings`,
    /// the default) or accepted. Either way every published version's findings are recorded
    /// and served at `GET /api/v1/skills/NAME/VERSION/findings`.
    pub audit: Policy,
}

impl std::fmt::Debug for ApiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiOptions")
            .field("registry", &self.registry.display())
            .field("tokens", &self.tokens)
            .field("keyring", &self.keyring)
            .field("max_upload", &self.max_upload)
            .field("max_uploads", &self.max_uploads)
            .field("writes_per_minute", &self.writes_per_minute)
            .field("version_limits", &self.version_limits)
            .field("bytes_per_minute", &self.bytes_per_minute)
            .field("audit", &self.audit)
            .finish()
    }
}

/// The default upload limit: 16 MiB.
pub const DEFAULT_MAX_UPLOAD: u64 = 16 << 20;

/// The default byte rate of a token: 64 MiB of unpacked files a minute.
pub const DEFAULT_BYTES_PER_MINUTE: u64 = 64 << 20;

/// What identifies a file's content cheaply: modification time, size, inode.
type Stamp = (SystemTime, u64, u64);

/// A file read at start, and again when it changes (or when asked, on `SIGHUP`): what it held
/// when it last read well.
struct Watched<T> {
    path: PathBuf,
    load: fn(&Path) -> Result<T, ApiFileError>,
    state: Mutex<(Arc<T>, Option<Stamp>)>,
}

/// Why [`publishing_router`] did not start: a file it reads (and re-reads when it changes) did
/// not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiFileError {
    /// The token file.
    #[error(transparent)]
    Tokens(#[from] crate::registry::tokens::TokenError),
    /// The keyring.
    #[error("{path}: {source}")]
    Keyring {
        /// The keyring file.
        path: String,
        /// Why it did not read.
        #[source]
        source: crate::sign::SignError,
    },
}

impl<T> Watched<T> {
    fn new(
        path: PathBuf,
        load: fn(&Path) -> Result<T, ApiFileError>,
    ) -> Result<Self, ApiFileError> {
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

/// A token bucket: `level` units left, refilled continuously.
struct Bucket {
    level: f64,
    at: Instant,
}

impl Bucket {
    /// Takes `amount` from the bucket of `key` in `buckets` (created full), which holds at most
    /// `capacity` and refills `per_minute` a minute. `Err(seconds)`: not enough yet; retry then.
    fn take(
        buckets: &mut HashMap<String, Bucket>,
        key: &str,
        amount: f64,
        capacity: f64,
        per_minute: f64,
    ) -> Result<(), u64> {
        let now = Instant::now();
        let b = buckets.entry(key.to_string()).or_insert(Bucket {
            level: capacity,
            at: now,
        });
        let refill = now.duration_since(b.at).as_secs_f64() * per_minute / 60.0;
        b.level = (b.level + refill).min(capacity);
        b.at = now;
        if b.level < amount {
            let wait = ((amount - b.level) * 60.0 / per_minute).ceil();
            return Err((wait as u64).max(1));
        }
        b.level -= amount;
        Ok(())
    }
}

/// One of the upload slots (`max_uploads`), and the token's own (at most half of them): taken
/// before an upload's body is read, given back when its version is committed or refused. Every
/// refusal on the way drops it; the one way to commit, [`commit`](Self::commit), moves it with
/// the prepared version into the blocking task that writes it, so a client that goes away
/// mid-write cannot free the slot while its version is still in memory.
struct UploadSlot {
    _global: tokio::sync::OwnedSemaphorePermit,
    _token: tokio::sync::OwnedSemaphorePermit,
}

impl UploadSlot {
    /// Waits for a slot of the token (so one token cannot hold them all), then a slot.
    async fn take(api: &Api, token: &str) -> UploadSlot {
        let per_token = {
            let mut all = api.token_uploads.lock().expect("upload slots lock");
            all.entry(token.to_string())
                .or_insert_with(|| {
                    let n = (api.opts.max_uploads / 2).max(1);
                    Arc::new(tokio::sync::Semaphore::new(n))
                })
                .clone()
        };
        let token = per_token.acquire_owned().await.expect("never closed");
        let global = api
            .uploads
            .clone()
            .acquire_owned()
            .await
            .expect("never closed");
        UploadSlot {
            _global: global,
            _token: token,
        }
    }

    /// Commits `prepared` into `store` on behalf of `actor`, holding the server's writer lock
    /// `writer` when it has one (a registry file's); the slot is given back when the write has
    /// ended, whatever became of the request (the write is a task of its own: a client that
    /// goes away does not cut it short).
    async fn commit(
        self,
        store: Arc<dyn Store>,
        writer: Option<Arc<tokio::sync::Mutex<()>>>,
        prepared: Prepared,
        actor: Actor,
    ) -> Result<Published, Refusal> {
        let prepared = Arc::new(prepared);
        in_store(async move {
            let _slot = self;
            let _writing = match &writer {
                Some(w) => Some(w.lock().await),
                None => None,
            };
            store.commit(prepared, Some(actor)).await
        })
        .await
    }
}

struct Api {
    opts: ApiOptions,
    tokens: Watched<Tokens>,
    keyring: Option<Watched<Keyring>>,
    /// The site served, kept up to date with the store (its writes and other replicas').
    replica: Arc<Replica>,
    /// Requests per token.
    buckets: Mutex<HashMap<String, Bucket>>,
    /// Unpacked bytes per token.
    byte_buckets: Mutex<HashMap<String, Bucket>>,
    uploads: Arc<tokio::sync::Semaphore>,
    /// Each token's share of the upload slots.
    token_uploads: Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>,
    /// This server's writes to a registry file, one at a time, each with its checkpoint: a
    /// write's `wal_checkpoint(TRUNCATE)` never waits behind the next write's transaction, so
    /// the WAL holds at most the one version being written, however busy the machine. A
    /// database takes concurrent writes itself (`None`).
    writer: Option<Arc<tokio::sync::Mutex<()>>>,
    /// The server's files, which no answer names.
    files: ServerFiles,
}

/// A refusal: status, a short code and a sentence.
struct Refusal {
    status: StatusCode,
    code: &'static str,
    detail: String,
    retry_after: Option<u64>,
    /// The whole error behind it, for the server's log (a registry error names the server's
    /// files; the answer never does: [`Api::refused`]).
    cause: Option<String>,
    /// The audit's findings, for a publish refused for them.
    findings: Option<Box<Value>>,
}

fn refuse(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Refusal {
    Refusal {
        status,
        code,
        detail: detail.into(),
        retry_after: None,
        cause: None,
        findings: None,
    }
}

/// The server's own files as its messages may name them (absolute, as the registry shows its
/// path), each with the words an answer says instead.
struct ServerFiles {
    /// Longest first, so that a path is replaced before a path it starts with.
    names: Vec<(String, &'static str)>,
    /// The registry's folder: an answer that still names it after the replacements says only
    /// what was refused.
    folder: Option<String>,
}

impl ServerFiles {
    fn new(opts: &ApiOptions) -> ServerFiles {
        let mut names = Vec::new();
        let mut add = |path: &Path, said: &'static str| {
            for p in [
                std::path::absolute(path).ok(),
                std::fs::canonicalize(path).ok(),
            ]
            .into_iter()
            .flatten()
            {
                let text = p.display().to_string();
                if !text.is_empty() && !names.iter().any(|(n, _)| *n == text) {
                    names.push((text, said));
                }
            }
        };
        let file = (opts.registry.engine() == Engine::Sqlite)
            .then(|| PathBuf::from(opts.registry.display()));
        if let Some(path) = &file {
            add(path, "the registry");
        }
        add(&opts.tokens, "the token file");
        if let Some(k) = &opts.keyring {
            add(k, "the keyring");
        }
        if file.is_none() {
            // A database as the store shows itself (no password).
            names.push((opts.registry.display().to_string(), "the registry"));
        }
        names.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        let folder = file
            .and_then(|p| std::path::absolute(p).ok())
            .and_then(|p| p.parent().map(|d| d.display().to_string()))
            .filter(|d| d.len() > 1);
        ServerFiles { names, folder }
    }

    /// `text` with every server file named by what it is, never by its path.
    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, said) in &self.names {
            out = out.replace(name.as_str(), said);
        }
        match &self.folder {
            Some(folder) if out.contains(folder.as_str()) => {
                "refused by the registry (the server's log says why)".to_string()
            }
            _ => out,
        }
    }
}

impl Refusal {
    fn into_response(self) -> Response {
        let mut body = ErrorBody::new(self.code, self.detail);
        body.errors[0].findings = self.findings.map(|f| *f);
        let mut r = error_response(self.status, &body, self.retry_after);
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"skillcat\""),
            );
        }
        r
    }
}

fn stamp_of(path: &std::path::Path) -> Option<(SystemTime, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

impl Api {
    /// The answer to a refused request `what` (`DELETE /api/v1/…`): the one place a refusal
    /// becomes an answer. Its text names skills, versions and limits, never the server's files
    /// (each is named by what it is: "the registry"); the whole error behind a refusal of the
    /// registry goes to the server's log.
    fn refused(&self, what: &str, mut r: Refusal) -> Response {
        if let Some(cause) = r.cause.take() {
            log(format_args!(
                "refused {what}: {} {}: {cause}",
                r.status.as_u16(),
                r.code
            ));
        }
        r.detail = self.files.scrub(&r.detail);
        r.into_response()
    }

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
        self.take_request(entry)
    }

    /// Takes one request from the token's request bucket.
    fn take_request(&self, entry: &TokenEntry) -> Result<(), Refusal> {
        let rate = f64::from(self.opts.writes_per_minute.max(1));
        let mut buckets = self.buckets.lock().expect("rate lock");
        Bucket::take(&mut buckets, entry.name(), 1.0, rate, rate).map_err(|wait| Refusal {
            retry_after: Some(wait),
            ..refuse(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!(
                    "the token {} has made its {} request{} of the minute; retry in {wait}s",
                    entry.name(),
                    self.opts.writes_per_minute,
                    if self.opts.writes_per_minute == 1 {
                        ""
                    } else {
                        "s"
                    },
                ),
            )
        })
    }

    /// Takes the `bytes` of a version about to be written from the token's byte bucket.
    fn take_bytes(&self, entry: &TokenEntry, bytes: u64) -> Result<(), Refusal> {
        let rate = self.opts.bytes_per_minute.max(1) as f64;
        let capacity = rate.max(self.opts.version_limits.max_bytes as f64);
        let mut buckets = self.byte_buckets.lock().expect("rate lock");
        Bucket::take(&mut buckets, entry.name(), bytes as f64, capacity, rate).map_err(|wait| {
            Refusal {
                retry_after: Some(wait),
                ..refuse(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!(
                        "the token {} may publish {} bytes a minute and this version holds \
                         {bytes} bytes; retry in {wait}s",
                        entry.name(),
                        self.opts.bytes_per_minute,
                    ),
                )
            }
        })
    }

    /// The archive reader's limits for an upload: the body's size, and the version's unpacked
    /// bytes (all files, and any one file) as they are read; entries (directories included)
    /// up to twice the file limit, at least the reader's default.
    fn archive_limits(&self) -> ArchiveLimits {
        let v = self.opts.version_limits;
        let d = ArchiveLimits::default();
        ArchiveLimits {
            max_compressed: self.opts.max_upload,
            max_total: v.max_bytes,
            max_file: v.max_bytes,
            max_entries: d.max_entries.max((v.max_files as u64).saturating_mul(2)),
            ..d
        }
    }
}

/// A registry error as the refusal it stands for ([`registry_status`]), the whole error kept for
/// the server's log.
fn registry_refusal(e: RegistryError) -> Refusal {
    let cause = e.to_string();
    Refusal {
        cause: Some(cause),
        ..registry_status(e)
    }
}

/// The status of a registry error: the one place that decides it. A refusal of what was sent
/// is always a 4xx — a constraint of the schema that a check before the write missed included
/// (422) — and only a failure of the server itself (I/O, a damaged registry) is a 500.
fn registry_status(e: RegistryError) -> Refusal {
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
        E::TooLarge { .. } => refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", detail),
        E::BadMetadata { .. } => {
            refuse(StatusCode::UNPROCESSABLE_ENTITY, "invalid_metadata", detail)
        }
        E::InvalidSkill { .. }
        | E::MissingVersion { .. }
        | E::BadVersion { .. }
        | E::BadPath { .. }
        | E::BadSpec { .. }
        | E::MixedScripts { .. }
        | E::Read { .. } => refuse(StatusCode::UNPROCESSABLE_ENTITY, "invalid_skill", detail),
        E::Sqlite { ref source, .. } if e.is_constraint() => refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_metadata",
            format!("the registry cannot keep this version's metadata: {source}"),
        ),
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
        // The database did not answer: nothing was written, and a retry may succeed.
        E::Unavailable { .. } => Refusal {
            retry_after: Some(UNAVAILABLE_RETRY),
            ..refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the registry's database is unavailable; nothing was written: retry",
            )
        },
        // A damaged registry is the server's problem, though the command line counts it a
        // refusal.
        E::Corrupt { .. } => internal(),
        ref r if r.is_refusal() => refuse(StatusCode::UNPROCESSABLE_ENTITY, "refused", detail),
        _ => internal(),
    }
}

/// A failure of the server itself: the answer says only that (the cause goes to the log).
fn internal() -> Refusal {
    refuse(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the registry could not complete the write (see the server's log)",
    )
}

/// The status of an upload the archive reader refused: over a size or count limit is 413
/// naming it; anything else (not an archive, a hostile entry, a bomb's ratio) is 422.
fn archive_refusal(e: crate::Error) -> Refusal {
    use ArchiveError as A;
    match e {
        crate::Error::Archive(
            ref a @ (A::ArchiveTooLarge { .. }
            | A::TotalTooLarge { .. }
            | A::FileTooLarge { .. }
            | A::DocumentTooLarge { .. }
            | A::TooManyEntries { .. }),
        ) => refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the upload is over a limit of this registry: {a}"),
        ),
        other => refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_archive",
            format!("the upload is not a readable skill archive: {other}"),
        ),
    }
}

/// Runs a call of the store as a task of its own (a client that goes away does not cut a
/// write short); its error becomes the refusal it stands for.
async fn in_store<T: Send + 'static>(
    f: impl std::future::Future<Output = Result<T, RegistryError>> + Send + 'static,
) -> Result<T, Refusal> {
    tokio::spawn(f)
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

/// Where the API is nested ([`publishing_router`]).
const API_PREFIX: &str = "/api/v1";

/// `METHOD /path` of a request as the client sent it (the nested router sees the path without
/// [`API_PREFIX`]), for the log.
fn request_line(req: &Request) -> String {
    format!("{} {API_PREFIX}{}", req.method(), req.uri().path())
}

async fn publish(
    State(api): State<Arc<Api>>,
    UrlPath(p): UrlPath<SkillPath>,
    req: Request,
) -> Response {
    let what = request_line(&req);
    match publish_inner(&api, p, req).await {
        Ok(r) => r,
        Err(refusal) => api.refused(&what, refusal),
    }
}

async fn publish_inner(api: &Arc<Api>, p: SkillPath, req: Request) -> Result<Response, Refusal> {
    let client = peer(req.extensions().get::<ConnectInfo<Conn>>());
    let (parts, body) = req.into_parts();
    let entry = api.authenticate(&parts.headers)?;
    api.authorize(&entry, Right::Publish, &p.name)?;
    let signature = signature_of(&parts.headers)?;
    // From here until the version is committed or refused, the upload holds its slot.
    let slot = UploadSlot::take(api, entry.name()).await;
    let bytes = read_upload(body, &parts.headers, api.opts.max_upload).await?;
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
    let label = format!("{}@{} (upload)", p.name, p.version);
    let source = ArchiveSource::from_bytes(kind, &label, &bytes, api.archive_limits())
        .map_err(archive_refusal)?;
    drop(bytes);
    let roots = source.list().await.map_err(archive_refusal)?;
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
        limits: api.opts.version_limits,
        ..Default::default()
    };
    let prepared = crate::publish::prepare(&source, root, &opts)
        .await
        .map_err(registry_refusal)?;
    refuse_template(&source, root, &p).await?;
    // The audit of what was uploaded, recorded with the version; a high finding refuses the
    // publish unless the server accepts and records (`--audit warn`).
    let findings = audit_upload(&source, root).await?;
    drop(source);
    if let Some(high) = summary_at(&findings, Severity::High)
        && api.opts.audit == Policy::Refuse
    {
        let mut r = refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "audit_findings",
            format!(
                "{}@{}: the audit found {high}; this server refuses skills with high findings (fix them and publish again)",
                prepared.name(),
                prepared.version()
            ),
        );
        r.findings = Some(Box::new(json!(findings)));
        return Err(r);
    }
    let findings_json = serde_json::to_string(&findings).expect("findings serialise");
    let prepared = prepared
        .with_findings(findings_json)
        .map_err(registry_refusal)?;
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
    api.take_bytes(&entry, prepared.bytes())?;
    let actor = Actor {
        token: entry.name().to_string(),
        client,
    };
    let published = slot
        .commit(
            api.opts.registry.clone(),
            api.writer.clone(),
            prepared,
            actor,
        )
        .await?;
    let changed = published.outcome == Outcome::Published || published.signature_added;
    if changed {
        api.replica.after_write(&published.name).await;
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
    let mut answer = json!(published);
    answer["findings"] = json!(findings);
    Ok(json_response(status, &answer))
}

/// A skill that is still `skillcat init`'s template (its placeholder description, its example
/// script) is no one's work yet: a central registry refuses it (422 `template`) with the
/// warning `validate` gives it. A root that does not load was refused by `prepare` already.
async fn refuse_template(source: &ArchiveSource, root: &str, p: &SkillPath) -> Result<(), Refusal> {
    use skillcat_core::document::{TEMPLATE_SCRIPT_PATH, template_warnings};
    use skillcat_core::source::SourceExt;
    let Ok(skill) = source.load(root).await else {
        return Ok(());
    };
    let script = source
        .read(&skillcat_core::path::join_path(root, TEMPLATE_SCRIPT_PATH))
        .await
        .ok();
    match template_warnings(skill.description(), script.as_deref()).first() {
        None => Ok(()),
        Some(w) => Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "template",
            format!(
                "{}@{}: {} ({}); this server does not publish it",
                p.name,
                p.version,
                w.message(),
                w.hint().unwrap_or_default()
            ),
        )),
    }
}

/// The audit of an uploaded skill (the archive's one root), with the host's default
/// interpreters to tell which scripts are tools. A root that does not load was refused by
/// `prepare` already.
async fn audit_upload(
    source: &ArchiveSource,
    root: &str,
) -> Result<Vec<skillcat_audit::Finding>, Refusal> {
    let skill = crate::source::load(source, root)
        .await
        .map_err(archive_refusal)?;
    skillcat_audit::audit(source, &skill, &AuditOptions::default())
        .await
        .map_err(archive_refusal)
}

/// `GET /api/v1/skills/NAME/VERSION/findings`: what the audit found in a version when it was
/// published, `{"name", "version", "audited", "findings"}`; `audited: false` (and no findings)
/// for a version published before audits were recorded or written to the file directly. Needs
/// no token: it says no more than the published files do.
async fn findings(
    State(api): State<Arc<Api>>,
    UrlPath(p): UrlPath<SkillPath>,
    req: Request,
) -> Response {
    let what = request_line(&req);
    let store = api.opts.registry.clone();
    let (name, version) = (p.name.clone(), p.version.clone());
    let found = in_store(async move { store.findings(&name, &version).await });
    match found.await {
        Ok(stored) => {
            let findings: Value = stored.as_deref().map_or(Value::Null, |s| {
                serde_json::from_str(s).unwrap_or(Value::Null)
            });
            let audited = findings.is_array();
            json_response(
                StatusCode::OK,
                &json!({
                    "name": p.name,
                    "version": p.version,
                    "audited": audited,
                    "findings": if audited { findings } else { json!([]) },
                }),
            )
        }
        Err(r) => api.refused(&what, r),
    }
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
    let (store, writer) = (api.opts.registry.clone(), api.writer.clone());
    let (name, version) = (p.name.clone(), p.version.clone());
    let changed = in_store(async move {
        let _writing = match &writer {
            Some(w) => Some(w.lock().await),
            None => None,
        };
        store.set_yanked(&name, &version, yanked, Some(actor)).await
    })
    .await?;
    if changed {
        api.replica.after_write(&p.name).await;
        log(format_args!(
            "{} {} {}@{}",
            entry.name(),
            if yanked { "yanked" } else { "unyanked" },
            p.name,
            p.version
        ));
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
    let what = request_line(&req);
    set_yanked(api.clone(), p, req, true)
        .await
        .unwrap_or_else(|r| api.refused(&what, r))
}

async fn unyank(
    State(api): State<Arc<Api>>,
    UrlPath(p): UrlPath<SkillPath>,
    req: Request,
) -> Response {
    let what = request_line(&req);
    set_yanked(api.clone(), p, req, false)
        .await
        .unwrap_or_else(|r| api.refused(&what, r))
}

#[derive(Deserialize)]
struct AuditQuery {
    limit: Option<usize>,
    before: Option<i64>,
}

async fn audit(State(api): State<Arc<Api>>, req: Request) -> Response {
    let what = request_line(&req);
    let (parts, _) = req.into_parts();
    let run = async {
        let entry = api.authenticate(&parts.headers)?;
        if !entry.can(Right::Audit) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "the token {} may not read the audit log (it needs the audit right)",
                    entry.name()
                ),
            ));
        }
        api.take_request(&entry)?;
        let Query(q) = Query::<AuditQuery>::try_from_uri(&parts.uri)
            .map_err(|e| refuse(StatusCode::BAD_REQUEST, "bad_query", e.body_text()))?;
        let limit = q.limit.unwrap_or(100).clamp(1, 1000);
        let store = api.opts.registry.clone();
        // The entries of the names the token's scopes match, no others.
        let rows = in_store(async move {
            store
                .audit(limit, q.before, &|n: &str| entry.allows(n))
                .await
        })
        .await?;
        Ok::<_, Refusal>(json_response(StatusCode::OK, &json!({"entries": rows})))
    };
    run.await.unwrap_or_else(|r| api.refused(&what, r))
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
/// read. With `statement`, the signed statement of the index served now is answered at
/// [`INDEX_STATEMENT_PATH`](crate::INDEX_STATEMENT_PATH), signed again after each write that
/// changes the index (see [`LiveStatement`](crate::LiveStatement)).
pub fn publishing_router(
    site: Arc<RwLock<Arc<Site>>>,
    opts: ApiOptions,
    statement: Option<Arc<crate::LiveStatement>>,
) -> Result<Router, ApiFileError> {
    // Uploads are large buffers freed on many threads: see `return_large_buffers`.
    crate::return_large_buffers();
    let tokens = Watched::new(opts.tokens.clone(), |p| Ok(Tokens::load(p)?))?;
    let keyring = match &opts.keyring {
        Some(path) => Some(Watched::new(path.clone(), |p| {
            Keyring::load(p).map_err(|source| ApiFileError::Keyring {
                path: p.display().to_string(),
                source,
            })
        })?),
        None => None,
    };
    let replica = Replica::new(opts.registry.clone(), site.clone());
    replica.follow();
    let api = Arc::new(Api {
        uploads: Arc::new(tokio::sync::Semaphore::new(opts.max_uploads.max(1))),
        token_uploads: Mutex::new(HashMap::new()),
        writer: (opts.registry.engine() == Engine::Sqlite)
            .then(|| Arc::new(tokio::sync::Mutex::new(()))),
        files: ServerFiles::new(&opts),
        byte_buckets: Mutex::new(HashMap::new()),
        opts,
        tokens,
        keyring,
        replica: replica.clone(),
        buckets: Mutex::new(HashMap::new()),
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
    let current: crate::web::CurrentSite = {
        let site = site.clone();
        Arc::new(move || site.read().expect("site lock").clone())
    };
    let read_side = move |req: Request| {
        let site = site.read().expect("site lock").clone();
        super::server::answer_rendered(site, req)
    };
    let (mut pages, catalog) =
        crate::web::catalog_routes(Router::new(), Router::new(), current.clone());
    if let Some(live) = statement {
        pages = super::server::statement_route(pages, live, current);
    }
    let v1 = catalog.with_state(()).merge(
        Router::new()
            .route("/skills/{name}/{version}", put(publish))
            .route("/skills/{name}/{version}/yank", delete(yank))
            .route("/skills/{name}/{version}/unyank", put(unyank))
            .route("/skills/{name}/{version}/findings", get(findings))
            .route("/audit", get(audit))
            .fallback(api_fallback)
            .with_state(api)
            .merge(
                Router::new()
                    .route("/changes", get(crate::feed::changes))
                    .with_state(replica),
            ),
    );
    Ok(pages
        .nest(API_PREFIX, v1)
        .fallback(read_side)
        // The API reads bodies itself under its own limit.
        .layer(axum::extract::DefaultBodyLimit::disable()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_that_does_not_answer_is_a_503_to_retry_naming_no_server() {
        let r = registry_refusal(RegistryError::Unavailable {
            what: "postgres://skills@db.internal/skills".into(),
            reason: "connection refused".into(),
        });
        assert_eq!(
            (r.status, r.code, r.retry_after),
            (StatusCode::SERVICE_UNAVAILABLE, "unavailable", Some(2))
        );
        assert!(r.detail.contains("database is unavailable"), "{}", r.detail);
        assert!(!r.detail.contains("db.internal"), "{}", r.detail);
        assert!(
            r.cause.unwrap().contains("connection refused"),
            "the log says why"
        );
        let answer = refuse(StatusCode::OK, "x", "y");
        let answer = Refusal {
            retry_after: Some(2),
            ..answer
        }
        .into_response();
        assert_eq!(answer.headers()[header::RETRY_AFTER], "2");
    }
}
