//! The SQLite registry: one file of published skills, each version immutable.
//!
//! ```text
//! registry.db        application_id 0x534B494C ('SKIL'), user_version = migrations applied, WAL
//! ├── blob           id · sha256 (32 bytes, UNIQUE) · size · content   contents by address, deduplicated
//! ├── skill          id · name (UNIQUE) · skeleton (UTS #39, indexed): look-alikes refused
//! │   ├── version    id · skill_id · version (semver) · skill_digest (32 bytes) · published_at
//! │   │   │          (Unix s) · yanked · description                       UNIQUE(skill_id, version)
//! │   │   ├── version_text  version_id · manifest (canonical JSON) · body   large text, kept apart
//! │   │   ├── file       (version_id, path) · path_fold (UNIQUE per version) · blob_id · executable
//! │   │   └── signature  (version_id, key_id) · format ('minisign') · signature (.minisig text)
//! │   └── tag        (skill_id, tag) → version_id of the same skill; `latest` = highest non-yanked
//! ├── skill_search   FTS5 (name, description, body), rowid = skill.id: the `latest` version's text
//! ├── audit          id · at (Unix s) · token (its name) · action · name · version · digest · client
//! └── change         seq (commit order) · at · name · version · action: the change feed
//! ```
//!
//! The schema is the SQL of the workspace's `migrations/sqlite/` ([`MIGRATIONS`]), applied in order when a registry is
//! created or opened read-write and tracked by `PRAGMA user_version`; a file written by a newer
//! skillcat is refused with both version numbers ([`RegistryError::SchemaTooNew`]).
//!
//! A registry file may come from anywhere, so it is checked before it is trusted: its schema
//! must be exactly one the migrations wrote (every table, index, view and trigger), else it is
//! [`RegistryError::NotARegistry`] saying what differs; every query runs under a step and time
//! budget, and no value may pass 256 MiB (`guard.rs`).
//!
//! # Guarantees
//!
//! - **One transaction per write.** [`publish`](Registry::publish), [`yank`](Registry::yank) and
//!   [`unyank`](Registry::unyank) are each one `BEGIN IMMEDIATE` transaction (so a writer waits for
//!   the lock up front instead of failing half-way), committed with `synchronous=FULL` in WAL mode:
//!   a crash or `SIGKILL` leaves either the whole version or none of it. Readers never block and
//!   never see a half-written version; any number of processes may read while one writes.
//!   [`commit_many`](Registry::commit_many) (what a publish of many skills uses) writes several
//!   versions in one such transaction, each in a savepoint of its own: still all or nothing.
//! - **Nothing is taken on trust.** A publish reads every file from its source and hashes what it
//!   holds: the skill digest, the per-file digests and the manifest are computed here, blobs are
//!   stored under the sha256 of their bytes, and a signature is verified against the statement
//!   recomputed from them. Reads hash each blob again and report a mismatch
//!   ([`RegistryError::Corrupt`]) instead of returning altered bytes.
//! - **Immutable versions.** `name@version` is published once. Publishing the same content again is
//!   a no-op ([`Outcome::Unchanged`]); other content under a published version is refused
//!   ([`RegistryError::Immutable`]). Triggers refuse any change to a version's content or files, so
//!   even raw SQL cannot rewrite history; only the `yanked` flag and tags move.
//! - **Only valid skills.** A skill that fails validation is refused with every fault; a version must
//!   be semver (from `metadata.version`, or given).
//! - **Yanking hides, never deletes.** A yanked version leaves `latest` and search, but stays
//!   readable by its exact `name@version`.
//! - **Search never fails on user text.** [`search`](Registry::search) quotes every token, so any
//!   string (quotes, `NEAR(`, `-`, `:`, `*`, column filters, 10 KB of text) is words to look for.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use skillcat_registry::{PublishOptions, Registry};
//! use skillcat_core::source::{DirOptions, DirSource};
//!
//! let mut registry = Registry::init("skills.db")?;
//! let source = DirSource::open("fixtures/skills".as_ref(), DirOptions::default())?;
//! let opts = PublishOptions { version: Some("1.0.0".into()), ..Default::default() };
//! let published = registry.publish(&source, "pdf-forms", &opts).await?;
//! println!("{}@{} {}", published.name, published.version, published.digest);
//! for hit in registry.search("pdf form", 10)? {
//!     println!("{} {}", hit.name, hit.description);
//! }
//! # Ok(()) }
//! ```

mod audit;
mod changes;
mod check;
pub mod copy;
mod error;
mod feed;
mod files;
mod fts;
mod guard;
mod order;
pub mod prepare;
mod publish;
mod query;
mod schema;
mod sqlite;
pub mod store;
pub mod tokens;

// The core's modules, under the names this crate's code uses.
pub(crate) use skillcat_core::{digest, document, path, source};
pub(crate) use skillcat_sign as sign;

use std::path::{Path, PathBuf};

use rusqlite::Connection;

pub use audit::{Actor, AuditAction, AuditEntry};
pub use check::CheckReport;
pub use error::RegistryError;
pub use fts::fts_query;
pub use order::{MAX_VERSION_LEN, parse_version};
pub use publish::{Draft, Outcome, Prepared, PublishOptions, Published, VersionLimits};
pub use query::{Release, SearchHit, StoredSignature, VersionInfo};
pub use schema::{APPLICATION_ID, MIGRATIONS, Migration, SCHEMA_VERSION};

pub use sqlite::RegistrySource;

pub use files::Pin;

// The spelling of a registry file is told where every SOURCE spelling is: the core's
// `SourceSpec`.
pub use skillcat_core::source::{SQLITE_MAGIC, is_registry_file};

impl From<RegistryError> for skillcat_core::Error {
    /// A registry's errors as a source reports them: not-found stays not-found, a damaged blob
    /// is a digest mismatch, a malformed `NAME@VERSION` a rejected path; the rest keep their
    /// cause whole as [`Error::Layer`](skillcat_core::Error::Layer), of the kind
    /// [`RegistryError::kind`] says.
    fn from(e: RegistryError) -> Self {
        use skillcat_core::Error;
        match e {
            RegistryError::NotFound(what) => Error::NotFound(what),
            // A database is no path the user can look for: its words say how to create one.
            RegistryError::Missing { path } if !store::is_postgres_url(&path) => {
                Error::NotFound(path)
            }
            RegistryError::Corrupt {
                path,
                what,
                expected,
                actual,
            } => Error::DigestMismatch {
                what: format!("{path}: {what}"),
                expected,
                actual,
            },
            RegistryError::BadSpec { spec, reason } if !store::is_postgres_url(&spec) => {
                Error::PathRejected { path: spec, reason }
            }
            other => Error::layer(other.kind(), other),
        }
    }
}

/// Result of a registry operation.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;

/// An open registry file.
///
/// A `Registry` is one SQLite connection: `Send` but not `Sync`. Use one per thread (opening is
/// cheap); any number of them, in any number of processes, may read while one writes.
/// [`RegistrySource`] offers a registry as a [`Source`](crate::source::Source).
pub struct Registry {
    /// Reached only through its guard: every borrow arms a fresh query budget.
    conn: guard::Guarded,
    path: PathBuf,
    shown: String,
    read_only: bool,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("path", &self.shown)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Registry {
    /// Creates a registry at `path`, which must not exist (or be an empty file): WAL mode, the
    /// application id, and every migration applied in one transaction.
    pub fn init(path: impl AsRef<Path>) -> Result<Registry> {
        Self::connect(path.as_ref(), schema::Mode::Create)
    }

    /// Opens an existing registry read-write, migrating an older schema forward.
    pub fn open(path: impl AsRef<Path>) -> Result<Registry> {
        Self::connect(path.as_ref(), schema::Mode::ReadWrite)
    }

    /// Opens an existing registry read-only. Its schema must be current: an older one is
    /// [`RegistryError::SchemaTooOld`] (a read-write open migrates it), a newer one
    /// [`RegistryError::SchemaTooNew`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Registry> {
        Self::connect(path.as_ref(), schema::Mode::ReadOnly)
    }

    /// A new, empty registry in memory, with the same schema, settings and rules as a file;
    /// gone when dropped. For tests and fuzzing: [`path`](Self::path) is `:memory:`.
    pub fn in_memory() -> Result<Registry> {
        Self::connect(Path::new(":memory:"), schema::Mode::Memory)
    }

    fn connect(path: &Path, mode: schema::Mode) -> Result<Registry> {
        let shown = match mode {
            schema::Mode::Memory => ":memory:".to_string(),
            _ => display_path(path),
        };
        let conn = schema::connect(path, &shown, mode)?;
        Ok(Registry {
            conn,
            path: path.to_path_buf(),
            shown,
            read_only: mode == schema::Mode::ReadOnly,
        })
    }

    /// The registry file, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The registry file as shown in messages and locations (absolute).
    pub fn display(&self) -> &str {
        &self.shown
    }

    /// Whether this registry was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The schema version of the file (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32> {
        let v: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        Ok(u32::try_from(v).unwrap_or(u32::MAX))
    }

    /// The underlying connection, for inspection (tests, tools). Writing through it bypasses the
    /// registry's rules; the schema's triggers still refuse to alter published content. It is
    /// lent under a fresh query budget, as every statement the registry runs is.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Opens this registry's one write: a `BEGIN IMMEDIATE` transaction (dropped uncommitted,
    /// it rolls back), and how its errors are told, naming the file. A registry opened
    /// read-only is refused.
    pub(crate) fn begin_write(
        &mut self,
    ) -> Result<(
        rusqlite::Transaction<'_>,
        impl Fn(rusqlite::Error) -> RegistryError + use<>,
    )> {
        if self.read_only {
            return Err(RegistryError::ReadOnly {
                path: self.shown.clone(),
            });
        }
        let shown = self.shown.clone();
        let sql = move |source| RegistryError::Sqlite {
            path: shown.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&sql)?;
        Ok((tx, sql))
    }

    fn sql(&self, source: rusqlite::Error) -> RegistryError {
        RegistryError::Sqlite {
            path: self.shown.clone(),
            source,
        }
    }
}

/// The absolute form of a path, for messages.
pub(crate) fn display_path(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Splits `NAME@VERSION`; both parts must be non-empty.
pub fn parse_spec(spec: &str) -> Result<(&str, &str)> {
    match spec.split_once('@') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => Ok((name, version)),
        _ => Err(RegistryError::BadSpec {
            spec: spec.to_string(),
            reason: "expected NAME@VERSION (for example pdf-forms@1.2.0)".into(),
        }),
    }
}
