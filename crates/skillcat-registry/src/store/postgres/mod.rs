//! [`PgStore`]: a registry in a PostgreSQL database, shared by any number of processes.
//!
//! ```text
//! postgres://USER@HOST:PORT/DB ─► deadpool pool (Verified recycling: a broken connection is
//!                                 │              replaced, so the pool recovers by itself)
//!                                 ├── reads: one statement each (search: SET LOCAL statement_timeout)
//!                                 ├── writes: one transaction each; the change row last, under
//!                                 │   pg_advisory_xact_lock, then NOTIFY skillcat_changes, '<seq>'
//!                                 └── listener: one LISTEN connection, reconnected with backoff,
//!                                     feeding wake() (and waking after every reconnect)
//! ```
//!
//! The schema is `migrations/postgres/` (see `migrate.rs`). Blobs live in the `blob` table, or
//! in object storage when the database's `setting` names a blobs URL.
//!
//! Search ranks with `ts_rank` over weighted `tsvector`s (name A, description B, body C);
//! SQLite ranks with bm25, so scores differ between the engines, while the hits of a simple
//! query and their order by name weight agree.
//!
//! TLS as libpq's `sslmode`: `disable`, `prefer` (the default: TLS when the server offers it)
//! and `require` (TLS or nothing), with the workspace's rustls; like libpq under these modes,
//! the server's certificate is not verified (`tls.rs`). `verify-ca` and `verify-full`, which
//! would verify it, are refused with an error saying so: tokio-postgres does not implement them.

mod listen;
mod migrate;
pub mod pgpass;
mod read;
mod tls;
mod write;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::config::{Host, SslMode};

use super::blobs::BlobStore;
use super::redact_password;
use crate::{RegistryError, Result};

pub use migrate::{MIGRATIONS, SCHEMA_VERSION};

/// Connections the pool keeps open at most.
const POOL_SIZE: usize = 16;

/// How long a caller waits for a pooled connection, or for a new one to open.
const WAIT: Duration = Duration::from_secs(10);

/// The advisory lock (one bigint key) under which change rows are numbered: taken just before
/// a write's change row and held to its commit, so `seq` follows commit order.
pub const CHANGE_LOCK: i64 = 0x534B_494C_0000_0001;

/// The advisory lock under which migrations run.
const MIGRATE_LOCK: i64 = 0x534B_494C_0000_0002;

/// The class (first key of the two-key form) of the per-skeleton lock every publish of a new
/// name takes, so two look-alike names cannot both pass the check at once.
const NAME_LOCK_CLASS: i32 = 0x534B_494C;

/// The NOTIFY channel.
const CHANNEL: &str = "skillcat_changes";

/// A registry in PostgreSQL as a [`Store`](super::Store).
pub struct PgStore {
    shown: String,
    pool: Pool,
    /// How connections are made: also what a cancel request of a search past its deadline
    /// goes through.
    tls: tls::MakeRustls,
    blobs: Option<Arc<dyn BlobStore>>,
    wake: tokio::sync::watch::Receiver<u64>,
    listener: tokio::task::JoinHandle<()>,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("database", &self.shown)
            .field("blobs", &self.blobs.as_ref().map(|b| b.url().to_string()))
            .finish()
    }
}

impl Drop for PgStore {
    /// The LISTEN task ends with the store.
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl PgStore {
    /// Opens the registry in the database at `url` (a libpq connection URL), migrating its
    /// schema forward under an advisory lock (one migrator at a time). With `create`, the
    /// database must hold no registry yet (else [`RegistryError::AlreadyExists`]) and no other
    /// tables (else [`RegistryError::NotARegistry`]); without, it must hold one (else
    /// [`RegistryError::Missing`]). Must run inside a Tokio runtime (the LISTEN task).
    pub async fn open(url: &str, create: bool) -> Result<PgStore> {
        Self::open_inner(url, create, None).await
    }

    /// [`open`](Self::open); with `create`, `blobs` is the object storage URL recorded in the
    /// database (every replica then keeps its blobs there).
    pub async fn open_with(url: &str, create: bool, blobs: Option<&str>) -> Result<PgStore> {
        let shown = redact_password(url);
        // Object storage that cannot be opened is refused before the database is created.
        let store = match (create, blobs) {
            (true, Some(blobs)) => Some(open_blobs(&shown, blobs).await?),
            _ => None,
        };
        Self::open_inner(url, create, store).await
    }

    /// [`open`](Self::open) with the blobs in `blobs`: with `create`, its URL is recorded in
    /// the database; without, the database must name that same URL.
    pub async fn open_with_blobs(
        url: &str,
        create: bool,
        blobs: Arc<dyn BlobStore>,
    ) -> Result<PgStore> {
        Self::open_inner(url, create, Some(blobs)).await
    }

    async fn open_inner(
        url: &str,
        create: bool,
        blobs: Option<Arc<dyn BlobStore>>,
    ) -> Result<PgStore> {
        let shown = redact_password(url);
        let config = config(url)?;
        let tls = tls::MakeRustls::new().map_err(|e| RegistryError::Unavailable {
            what: shown.clone(),
            reason: format!("TLS could not be set up: {e}"),
        })?;
        let mut client = connect_once(&config, tls.clone(), &shown).await?;
        let record = blobs
            .as_ref()
            .filter(|_| create)
            .map(|b| b.url().to_string());
        migrate::migrate(&mut client, &shown, create, record.as_deref()).await?;
        drop(client);
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Verified,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .wait_timeout(Some(WAIT))
            .create_timeout(Some(WAIT))
            .recycle_timeout(Some(WAIT))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| RegistryError::Unavailable {
                what: shown.clone(),
                reason: e.to_string(),
            })?;
        let (wake, listener) = listen::spawn(config, tls.clone());
        let mut store = PgStore {
            shown,
            pool,
            tls,
            blobs: None,
            wake,
            listener,
        };
        let named = store.blobs_url().await?;
        store.blobs = match (named, blobs) {
            (None, None) => None,
            (Some(named), None) => Some(open_blobs(&store.shown, &named).await?),
            (Some(named), Some(given)) if named == given.url() => Some(given),
            (named, Some(given)) => {
                return Err(RegistryError::BadSpec {
                    spec: given.url().to_string(),
                    reason: format!(
                        "registry {} keeps its blobs {}",
                        store.shown,
                        named.map_or("in the database".to_string(), |n| format!("in {n}"))
                    ),
                });
            }
        };
        Ok(store)
    }

    /// The object storage URL the database names for its blobs (`None`: in the `blob` table).
    pub async fn blobs_url(&self) -> Result<Option<String>> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT value FROM setting WHERE key = 'blobs'", &[])
            .await
            .map_err(|e| self.db(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Every blob address the registry's files reference: what garbage collection of an
    /// object store keeps.
    pub async fn referenced_blobs(&self) -> Result<Vec<[u8; 32]>> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT DISTINCT sha256 FROM file ORDER BY sha256", &[])
            .await
            .map_err(|e| self.db(e))?;
        Ok(rows
            .iter()
            .filter_map(|r| <[u8; 32]>::try_from(r.get::<_, &[u8]>(0)).ok())
            .collect())
    }

    /// A pooled connection; a database that cannot be reached is
    /// [`RegistryError::Unavailable`].
    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool
            .get()
            .await
            .map_err(|e| pool_error(&self.shown, e))
    }

    /// Maps a driver error on this database.
    fn db(&self, e: tokio_postgres::Error) -> RegistryError {
        db_error(&self.shown, e)
    }
}

/// Opens the blob store at `url`, the one the database names (or `init` is given).
async fn open_blobs(_shown: &str, url: &str) -> Result<Arc<dyn BlobStore>> {
    super::blobs::open_blobs(url).await
}

/// The connection settings of `url`, as libpq reads them: the password from the URL, else
/// `PGPASSWORD`, else the password file (`PGPASSFILE` or `~/.pgpass`); the user from the URL,
/// else `PGUSER`, else the login name; the host from the URL, else `PGHOST`, else the local
/// socket directory; `sslmode` from the URL, else `PGSSLMODE`, else `prefer`.
pub fn config(url: &str) -> Result<tokio_postgres::Config> {
    let shown = redact_password(url);
    let bad = |reason: String| RegistryError::BadSpec {
        spec: shown.clone(),
        reason,
    };
    // tokio-postgres reads disable, prefer and require; the modes that verify the server's
    // certificate are refused here in words, not as an unknown value.
    let lower = url.to_ascii_lowercase();
    if lower.contains("sslmode=verify-ca") || lower.contains("sslmode=verify-full") {
        return Err(bad(
            "sslmode=verify-ca and verify-full are not supported: use sslmode=require (TLS, the \
             server's certificate not verified, as libpq's require) over a network you trust"
                .into(),
        ));
    }
    let mut config = tokio_postgres::Config::from_str(url).map_err(|e| bad(e.to_string()))?;
    if !lower.contains("sslmode=") {
        match std::env::var("PGSSLMODE").as_deref() {
            Ok("disable") => config.ssl_mode(SslMode::Disable),
            Ok("require") => config.ssl_mode(SslMode::Require),
            _ => &mut config,
        };
    }
    if config.get_user().is_none() {
        let user = std::env::var("PGUSER")
            .or_else(|_| std::env::var("USER"))
            .or_else(|_| std::env::var("LOGNAME"))
            .unwrap_or_else(|_| "postgres".into());
        config.user(&user);
    }
    if config.get_hosts().is_empty() {
        match std::env::var("PGHOST") {
            Ok(host) => config.host(&host),
            Err(_) => config.host("/var/run/postgresql"),
        };
    }
    if config.get_ports().is_empty()
        && let Some(port) = std::env::var("PGPORT").ok().and_then(|p| p.parse().ok())
    {
        config.port(port);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    if config.get_password().is_none() {
        if let Ok(password) = std::env::var("PGPASSWORD") {
            config.password(password);
        } else if let Some(password) = pgpass_password(&config) {
            config.password(password);
        }
    }
    config.application_name("skillcat");
    Ok(config)
}

/// The password file: `PGPASSFILE`, else `~/.pgpass`.
fn pgpass_file() -> Option<std::path::PathBuf> {
    match std::env::var_os("PGPASSFILE") {
        Some(f) => Some(std::path::PathBuf::from(f)),
        None => Some(std::path::PathBuf::from(std::env::var_os("HOME")?).join(".pgpass")),
    }
}

/// The password `.pgpass` holds for the first host of `config`.
fn pgpass_password(config: &tokio_postgres::Config) -> Option<String> {
    let file = pgpass_file()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        // libpq matches a socket connection as `localhost`.
        Host::Unix(_) => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user()?;
    let dbname = config.get_dbname().unwrap_or(user);
    pgpass::lookup(&file, &host, port, dbname, user)
}

/// One connection outside the pool (the migrator's), driven by a task of its own.
async fn connect_once(
    config: &tokio_postgres::Config,
    tls: tls::MakeRustls,
    shown: &str,
) -> Result<tokio_postgres::Client> {
    let (client, connection) = config.connect(tls).await.map_err(|e| db_error(shown, e))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// A driver error as a registry error: a connection refused, lost or shut down (SQLSTATE
/// classes 08 and 57P, too many connections) is [`RegistryError::Unavailable`]; what the
/// server refused keeps its SQLSTATE.
pub(crate) fn db_error(shown: &str, e: tokio_postgres::Error) -> RegistryError {
    let Some(db) = e.as_db_error() else {
        return match e.code() {
            Some(code) => RegistryError::Postgres {
                what: shown.to_string(),
                code: Some(code.code().to_string()),
                message: e.to_string(),
            },
            // Waiting brings no password: refused as the server's own refusals are.
            None if password_missing(&e) => RegistryError::Postgres {
                what: shown.to_string(),
                code: None,
                message: no_password(),
            },
            None => RegistryError::Unavailable {
                what: shown.to_string(),
                reason: with_causes(&e),
            },
        };
    };
    let code = db.code().code();
    if code.starts_with("08") || code.starts_with("57P") || code == "53300" {
        return RegistryError::Unavailable {
            what: shown.to_string(),
            reason: db.message().to_string(),
        };
    }
    let mut message = db.message().to_string();
    if let Some(detail) = db.detail() {
        message = format!("{message} ({detail})");
    }
    RegistryError::Postgres {
        what: shown.to_string(),
        code: Some(code.to_string()),
        message,
    }
}

/// The driver's words with their causes: its `Display` says only "error connecting to
/// server" where the cause says "Connection refused" or "server does not support TLS".
fn with_causes(e: &tokio_postgres::Error) -> String {
    let mut said = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        said = format!("{said}: {c}");
        cause = c.source();
    }
    said
}

/// Whether the server asked for a password and the connection had none to give.
fn password_missing(e: &tokio_postgres::Error) -> bool {
    std::error::Error::source(e).is_some_and(|c| c.to_string() == "password missing")
}

/// What a missing password is told with: where one comes from, and a password file ignored
/// for its mode (libpq warns of it; this is where that shows).
fn no_password() -> String {
    let mut said = "the server asks for a password and none was given (in the URL, PGPASSWORD \
                    or ~/.pgpass)"
        .to_string();
    if let Some(file) = pgpass_file()
        && let Ok(meta) = std::fs::metadata(&file)
        && std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0
    {
        said.push_str(&format!(
            "; {} is ignored: its group or others may read it (chmod 600 it)",
            file.display()
        ));
    }
    said
}

/// A pool that could not hand out a connection: the database is unavailable (or refused the
/// login, which keeps the server's words).
fn pool_error(shown: &str, e: deadpool_postgres::PoolError) -> RegistryError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => db_error(shown, e),
        other => RegistryError::Unavailable {
            what: shown.to_string(),
            reason: other.to_string(),
        },
    }
}
