//! One trait over a registry's metadata store, with an SQL implementation per engine.
//!
//! ```text
//!                      ┌──────────────── Store (async, Send + Sync, shared as Arc<dyn Store>) ───┐
//!  registry publish ─► │ reads: pins · resolve · files · read_file · versions · get · search ·   │
//!  serve (replicas) ─► │        audit · check · changes (the feed, commit order)                 │
//!  list/show/read   ─► │ writes: commit · commit_many · set_yanked · import (copy)  — one tx each │
//!  registry copy    ─► └──────────────┬───────────────────────────────────┬─────────────────────┘
//!                                     │                                   │
//!                      SqliteStore (x.db; a pool of             PgStore (postgres://…, deadpool;
//!                      `Registry` connections in                blobs in the `blob` table or in
//!                      spawn_blocking)                          object storage; LISTEN + poll)
//! ```
//!
//! Both engines keep the same guarantees (immutable versions enforced by the database itself,
//! one transaction per write, every blob hashed on read, look-alike names refused, the audit
//! log, findings) and give the same answers: the integration tests run the same operations
//! against each and compare.
//!
//! A [`Prepared`] version is engine-independent (hashed, validated, signature verified before
//! any database is asked); an engine only stores it.

pub mod blobs;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sqlite;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::Serialize;

use crate::digest::Manifest;
use crate::path::FileEntry;
use crate::{
    Actor, AuditEntry, CheckReport, Pin, Prepared, Published, Release, Result, SearchHit,
    StoredSignature, VersionInfo,
};

pub use crate::feed::ChangeAction;
#[cfg(feature = "postgres")]
pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// Where a registry is: a SQLite file, or a PostgreSQL database.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A registry file (`skills.db`, `sqlite:skills.db`).
    File(PathBuf),
    /// A PostgreSQL connection string, `postgres://USER@HOST:PORT/DB` or `postgresql://…`, as
    /// libpq reads it (password from `PGPASSWORD` or `~/.pgpass`, TLS as `sslmode`).
    Postgres(String),
}

impl fmt::Debug for Location {
    /// Never prints a password a connection string may hold.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => f.debug_tuple("File").field(p).finish(),
            Location::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&redact_password(url))
                .finish(),
        }
    }
}

impl Location {
    /// How a registry location is spelled: `postgres://…` and `postgresql://…` name a database;
    /// `sqlite:PATH` and anything else a file.
    ///
    /// ```
    /// use skillcat_registry::store::Location;
    /// use std::path::PathBuf;
    /// assert_eq!(Location::parse("skills.db"), Location::File(PathBuf::from("skills.db")));
    /// assert_eq!(Location::parse("sqlite:a.db"), Location::File(PathBuf::from("a.db")));
    /// assert!(matches!(Location::parse("postgres://me@127.0.0.1:5432/skills"), Location::Postgres(_)));
    /// assert!(matches!(Location::parse("postgresql://127.0.0.1/skills"), Location::Postgres(_)));
    /// ```
    pub fn parse(spec: &str) -> Location {
        if is_postgres_url(spec) {
            Location::Postgres(spec.to_string())
        } else {
            Location::File(PathBuf::from(spec.strip_prefix("sqlite:").unwrap_or(spec)))
        }
    }

    /// The location as messages show it: a file's absolute path, a database's URL without
    /// its password.
    pub fn shown(&self) -> String {
        match self {
            Location::File(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            Location::Postgres(url) => redact_password(url),
        }
    }

    /// The file, when the registry is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }
}

// How a database is spelled and shown: the core's one parser of SOURCE spellings decides it.
pub use skillcat_core::source::{is_postgres_url, redact_password};

/// Which engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// One SQLite file.
    Sqlite,
    /// A PostgreSQL database, shared by any number of replicas.
    Postgres,
}

/// One entry of the change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Change {
    /// Its position: strictly increasing in commit order, so a reader that has seen `seq`
    /// never misses a change it has not seen by asking for what follows it.
    pub seq: i64,
    /// The skill.
    pub name: String,
    /// The version.
    pub version: String,
    /// What happened.
    pub action: ChangeAction,
    /// When, RFC 3339 UTC (`2026-03-01T12:00:00Z`).
    pub at: String,
}

/// One page of the change feed: the changes after `since`, and where to ask from next (the
/// last change's `seq`, or `since` itself when there are none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChangePage {
    /// The changes, in commit order.
    pub changes: Vec<Change>,
    /// What to pass as `since` next.
    pub next: i64,
}

/// Everything a registry keeps of one version, as [`Store::export`] reads it and
/// [`Store::import`] writes it (`registry copy`): the same digests, the same publish time,
/// the same yank, signatures and findings.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionRecord {
    /// How it is listed (name, version, digest, description, `published_at`, yanked).
    pub info: VersionInfo,
    /// Its manifest.
    pub manifest: Manifest,
    /// The Markdown body of its document.
    pub body: String,
    /// Every file with its bytes, by path in byte order.
    pub files: Vec<(FileEntry, Bytes)>,
    /// Its signatures.
    pub signatures: Vec<StoredSignature>,
    /// The audit findings recorded with it (JSON), if any.
    pub findings: Option<String>,
}

/// What [`Store::import`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Imported {
    /// The version was new here and is now stored.
    Copied,
    /// The same version was here already (its yank state and any missing signature brought
    /// up to date).
    Present,
}

/// A registry's metadata store. Every method is one read or one transaction; a write either
/// happens whole or not at all.
///
/// Errors are [`RegistryError`](crate::RegistryError)s: the database not answering (refused
/// connection, a restart, a terminated backend) is
/// [`RegistryError::Unavailable`](crate::RegistryError::Unavailable), which a server answers
/// with 503 and a retry.
#[async_trait]
pub trait Store: Send + Sync + fmt::Debug {
    /// The engine.
    fn engine(&self) -> Engine;

    /// Where the store is, as messages show it (no password).
    fn display(&self) -> &str;

    /// The schema version (migrations applied).
    async fn schema_version(&self) -> Result<u32>;

    // ----- what a source reads --------------------------------------------------------------

    /// The `latest` version of every skill, by name in byte order.
    async fn pins(&self) -> Result<Vec<Pin>>;

    /// `name` resolved to its `latest` version, or `name@version` to that version (yanked or
    /// not).
    async fn resolve(&self, name: &str, version: Option<&str>) -> Result<Option<Pin>>;

    /// The files of a version, by path in byte order.
    async fn version_files(&self, pin: &Pin) -> Result<Vec<FileEntry>>;

    /// The bytes of one file of a version, hashed again (a mismatch is
    /// [`RegistryError::Corrupt`](crate::RegistryError::Corrupt)); `None` when it has no such
    /// file.
    async fn read_file(&self, pin: &Pin, path: &str) -> Result<Option<Bytes>>;

    /// The signatures stored with a version.
    async fn signatures(&self, pin: &Pin) -> Result<Vec<StoredSignature>>;

    /// Every file of `name@version` with its bytes (each hashed again), by path; `None` when
    /// there is no such version.
    async fn version_contents(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<Vec<(FileEntry, Bytes)>>>;

    // ----- listing and search ---------------------------------------------------------------

    /// Every version of `name`, in semver order, yanked ones flagged. Empty when no such skill.
    async fn versions(&self, name: &str) -> Result<Vec<VersionInfo>>;

    /// Every version of every skill (of `name` alone when given): by name, then semver order.
    async fn all_versions(&self, name: Option<&str>) -> Result<Vec<VersionInfo>>;

    /// The yanked versions (of `name` alone when given).
    async fn yanked(&self, name: Option<&str>) -> Result<Vec<VersionInfo>>;

    /// The skills every version of which is yanked, each with its versions in semver order.
    async fn all_yanked(&self) -> Result<Vec<(String, Vec<String>)>>;

    /// The `latest` version of `name`.
    async fn latest(&self, name: &str) -> Result<Option<VersionInfo>>;

    /// Everything stored about `name@version`.
    async fn get(&self, name: &str, version: &str) -> Result<Option<Release>>;

    /// The audit findings (JSON) recorded with `name@version`.
    async fn findings(&self, name: &str, version: &str) -> Result<Option<String>>;

    /// One page of full-text search over the `latest` versions (name, description, body), best
    /// first, and how many match in all; stopped after `deadline`
    /// ([`RegistryError::is_interrupted`](crate::RegistryError::is_interrupted)). Any text is
    /// words to look for: search never fails on user text.
    async fn search_page(
        &self,
        query: &str,
        offset: usize,
        limit: usize,
        deadline: Duration,
    ) -> Result<(Vec<SearchHit>, usize)>;

    /// The newest `limit` audit rows with an id below `before` (all when `None`) whose skill
    /// name `keep` accepts, newest first.
    async fn audit(
        &self,
        limit: usize,
        before: Option<i64>,
        keep: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<AuditEntry>>;

    /// Who published each version (of `name` alone when given): `(name, version)` → token.
    async fn publishers(&self, name: Option<&str>) -> Result<HashMap<(String, String), String>>;

    /// The whole registry verified: the engine's own integrity checks, every blob against its
    /// sha256, every version's files against its skill digest and manifest. Reads only.
    async fn check(&self) -> Result<CheckReport>;

    // ----- the change feed ------------------------------------------------------------------

    /// At most `limit` changes after `since`, in commit order.
    async fn changes(&self, since: i64, limit: usize) -> Result<ChangePage>;

    /// The `seq` of the last change committed (0 when none): what the index's ETag follows.
    async fn head(&self) -> Result<i64>;

    /// A channel that wakes when a change may have been committed (by any process): PostgreSQL's
    /// LISTEN, reconnected with backoff. `None` when the engine has no such signal; a follower
    /// polls [`changes`](Self::changes) anyway, so a missed wake only delays.
    fn wake(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    // ----- writes ---------------------------------------------------------------------------

    /// Stores a prepared version on behalf of `actor` (audited when given), in one transaction,
    /// with its change row: the same content again is [`Outcome::Unchanged`](crate::Outcome);
    /// other content under a published version is refused.
    async fn commit(&self, prepared: Arc<Prepared>, actor: Option<Actor>) -> Result<Published>;

    /// Several prepared versions at once, each all or nothing; one result each, in order.
    async fn commit_many(
        &self,
        prepared: Arc<Vec<Prepared>>,
        actor: Option<Actor>,
    ) -> Vec<Result<Published>>;

    /// Yanks (or unyanks) `name@version` on behalf of `actor`; whether anything changed. A
    /// change writes its change row and audit row in the same transaction.
    async fn set_yanked(
        &self,
        name: &str,
        version: &str,
        yanked: bool,
        actor: Option<Actor>,
    ) -> Result<bool>;

    // ----- copying --------------------------------------------------------------------------

    /// Everything kept of `name@version`, for a copy into another registry.
    async fn export(&self, name: &str, version: &str) -> Result<Option<VersionRecord>>;

    /// Stores a version another registry holds, exactly (its digests are checked against its
    /// bytes first: nothing is taken on trust). Idempotent.
    async fn import(&self, record: VersionRecord) -> Result<Imported>;

    /// Appends audit rows another registry holds that this one lacks (the same time, token,
    /// action, name, version and digest); how many were added. Idempotent.
    async fn import_audit(&self, entries: Vec<AuditEntry>) -> Result<usize>;

    // ----- blobs in object storage ----------------------------------------------------------

    /// Where this registry keeps its blobs outside its database, with every blob address a
    /// version references, read now: what garbage collection
    /// ([`blobs::collect_registry_garbage`]) needs. `None` (the default) when its blobs live in
    /// the database: a registry file, a PostgreSQL registry created without `--blobs`.
    async fn blob_references(&self) -> Result<Option<BlobReferences>> {
        Ok(None)
    }
}

/// A registry's object storage and the blob addresses its versions reference
/// ([`Store::blob_references`]).
pub type BlobReferences = (Arc<dyn blobs::BlobStore>, HashSet<[u8; 32]>);

/// Opens the registry at `location` for reading and writing (migrating an older schema
/// forward; one migrator at a time).
pub async fn open(location: &Location) -> Result<Arc<dyn Store>> {
    match location {
        Location::File(path) => Ok(Arc::new(SqliteStore::open(path)?)),
        Location::Postgres(url) => postgres_open(url, false).await,
    }
}

/// Creates a registry at `location`: a new file, or the schema in an empty database.
pub async fn init(location: &Location) -> Result<Arc<dyn Store>> {
    init_with(location, None).await
}

/// [`init`], with the blobs of a database registry kept in object storage at `blobs`
/// (recorded in the database, so every replica agrees). A registry file keeps its blobs inside
/// itself: a file with a blobs URL is refused.
pub async fn init_with(location: &Location, blobs: Option<&str>) -> Result<Arc<dyn Store>> {
    match (location, blobs) {
        (Location::File(path), None) => Ok(Arc::new(SqliteStore::init(path)?)),
        (Location::File(path), Some(url)) => Err(crate::RegistryError::BadSpec {
            spec: url.to_string(),
            reason: format!(
                "a registry file ({}) keeps its blobs inside itself; object storage is for a \
                 PostgreSQL registry",
                crate::display_path(path)
            ),
        }),
        (Location::Postgres(url), blobs) => postgres_init(url, blobs).await,
    }
}

/// Opens the registry at `location` for reading only (a file's schema must be current).
pub async fn open_read_only(location: &Location) -> Result<Arc<dyn Store>> {
    match location {
        Location::File(path) => Ok(Arc::new(SqliteStore::open_read_only(path)?)),
        Location::Postgres(url) => postgres_open(url, false).await,
    }
}

#[cfg(not(feature = "postgres"))]
async fn postgres_init(url: &str, _blobs: Option<&str>) -> Result<Arc<dyn Store>> {
    postgres_open(url, true).await
}

#[cfg(feature = "postgres")]
async fn postgres_init(url: &str, blobs: Option<&str>) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(PgStore::open_with(url, true, blobs).await?))
}

/// Opens (with `create`: creates) the registry in the PostgreSQL database at `url`.
#[cfg(not(feature = "postgres"))]
pub async fn postgres_open(url: &str, _create: bool) -> Result<Arc<dyn Store>> {
    Err(crate::RegistryError::Unavailable {
        what: redact_password(url),
        reason: "this build of skillcat has no PostgreSQL support (the registry crate's \
                 `postgres` feature)"
            .into(),
    })
}

/// Opens (with `create`: creates) the registry in the PostgreSQL database at `url`.
#[cfg(feature = "postgres")]
pub async fn postgres_open(url: &str, create: bool) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(PgStore::open(url, create).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_never_show_a_password() {
        assert_eq!(
            Location::parse("postgres://me:secret@127.0.0.1:5432/skills").shown(),
            "postgres://me:***@127.0.0.1:5432/skills"
        );
        assert_eq!(
            redact_password("postgresql://me@db/skills?sslmode=require"),
            "postgresql://me@db/skills?sslmode=require"
        );
        assert_eq!(
            redact_password("postgres://a:b@h/d?x=@"),
            "postgres://a:***@h/d?x=@"
        );
        let shown = format!("{:?}", Location::parse("POSTGRES://u:pw@h/d"));
        assert!(!shown.contains("pw"), "{shown}");
        assert!(is_postgres_url("PostgreSQL://h/d"));
        assert!(!is_postgres_url("postgres.db"));
        assert_eq!(
            Location::parse("sqlite:postgres://x"),
            Location::File(PathBuf::from("postgres://x"))
        );
    }
}
