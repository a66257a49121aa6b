//! [`RegistryError`]: what a registry operation refuses or fails at, one variant per cause.

use crate::document::Fault;
use crate::sign::SignError;

/// A registry problem. Refusals (an invalid skill, an immutable version, a missing signature)
/// and failures (SQLite, the source) are told apart by [`is_refusal`](Self::is_refusal).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// SQLite failed on the registry at `path`. A full disk says so in the operating system's
    /// words ("No space left on device"), not only SQLite's.
    #[error("registry {path}: {}", describe_sqlite(source))]
    Sqlite {
        /// The registry file.
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// PostgreSQL refused or failed a statement on the registry database `what` (a connection
    /// lost is [`Unavailable`](Self::Unavailable) instead).
    #[error("registry {what}: {message}")]
    Postgres {
        /// The database, as shown (no password).
        what: String,
        /// The SQLSTATE code, when the server sent one (`23505`, `57014`…).
        code: Option<String>,
        /// The server's (or the driver's) message.
        message: String,
    },
    /// The file is not a skillcat registry (another SQLite database, or not SQLite at all).
    #[error("{path} is not a skillcat registry: {reason}")]
    NotARegistry {
        /// The file.
        path: String,
        /// What gave it away.
        reason: String,
    },
    /// The registry's schema is newer than this build understands.
    #[error(
        "registry {path} has schema version {found}, newer than the {supported} this skillcat \
         supports: upgrade skillcat to use it"
    )]
    SchemaTooNew {
        /// The registry file.
        path: String,
        /// Its `PRAGMA user_version`.
        found: u32,
        /// The newest schema version this build has migrations for.
        supported: u32,
    },
    /// A read-only open found a schema older than this build's; a read-write open migrates it.
    #[error(
        "registry {path} has schema version {found}, older than {supported}: open it \
         read-write once (any `skillcat registry` write) to migrate it"
    )]
    SchemaTooOld {
        /// The registry file.
        path: String,
        /// Its `PRAGMA user_version`.
        found: u32,
        /// The schema version this build expects.
        supported: u32,
    },
    /// There is no registry at `path`.
    #[error("registry {path} does not exist (create it with `skillcat registry init {path}`)")]
    Missing {
        /// The path given.
        path: String,
    },
    /// `init` on a path that already holds something.
    #[error(
        "{path} already exists; a registry is created only on a new (or empty) file, or in an empty database"
    )]
    AlreadyExists {
        /// The file.
        path: String,
    },
    /// No such skill, version or file.
    #[error("not found: {0}")]
    NotFound(String),
    /// The skill fails validation (or is not a skill document at all); nothing was written.
    #[error("{location}: invalid skill: {}", join_faults(.faults))]
    InvalidSkill {
        /// Where the skill is.
        location: String,
        /// Every fault, in the validator's order.
        faults: Vec<Fault>,
    },
    /// Reading the skill from its source failed (the cause is the source's error).
    #[error("{source}")]
    Read {
        /// Where the skill is.
        location: String,
        /// What the source said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A file of the registry could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// No version was given and the skill has no `metadata.version`.
    #[error(
        "{name}: the skill has no metadata.version; pass a version to publish it \
         (`--version 1.0.0`)"
    )]
    MissingVersion {
        /// The skill.
        name: String,
    },
    /// The version is not semver.
    #[error("{name}: version {version:?} is not a semantic version (MAJOR.MINOR.PATCH): {reason}")]
    BadVersion {
        /// The skill.
        name: String,
        /// The text given.
        version: String,
        /// The parser's complaint.
        reason: String,
    },
    /// A `NAME@VERSION` (or root) that cannot be read.
    #[error("{spec:?}: {reason}")]
    BadSpec {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `name@version` is already published with other content.
    #[error(
        "{name}@{version} is already published with different content ({what}); a published \
         version is immutable: publish a new version"
    )]
    Immutable {
        /// The skill.
        name: String,
        /// The version.
        version: String,
        /// What differs (the skill digests, or the executable bits).
        what: String,
    },
    /// Another version with the same precedence exists (they differ only in build metadata).
    #[error(
        "{name}@{version} would have the same precedence as the published {existing} (versions \
         that differ only in build metadata are one version)"
    )]
    VersionConflict {
        /// The skill.
        name: String,
        /// The version asked for.
        version: String,
        /// The version already there.
        existing: String,
    },
    /// A file path the registry cannot hold (not canonical, or a case-fold twin of another).
    #[error("{name}: file {path:?} refused: {reason}")]
    BadPath {
        /// The skill.
        name: String,
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A new name that renders like a name the registry holds (the same UTS #39 confusable
    /// skeleton): `pdf-fоrms`, with a Cyrillic `о`, beside `pdf-forms`. Nothing was written.
    #[error(
        "refused: {name:?} looks like {existing:?}, which this registry already holds \
         (confusable skeleton); publish under another name"
    )]
    LookAlike {
        /// The name asked for.
        name: String,
        /// The name held.
        existing: String,
    },
    /// A new name that mixes scripts (Latin with Cyrillic, …) beyond the mixes UTS #39 calls
    /// highly restrictive. Nothing was written.
    #[error(
        "refused: {name:?} mixes scripts ({}); a registry name is written in one script (or \
         Latin with Han, Kana or Hangul)",
        .scripts.join(", ")
    )]
    MixedScripts {
        /// The name asked for.
        name: String,
        /// The scripts it mixes, in order of appearance.
        scripts: Vec<&'static str>,
    },
    /// A keyring was given and the skill has no signature.
    #[error("{name}@{version} is not signed, and a keyring requires a signature")]
    Unsigned {
        /// The skill.
        name: String,
        /// The version.
        version: String,
    },
    /// The signature does not verify (or, without a keyring, names another statement).
    #[error("{name}@{version}: bad signature: {source}")]
    BadSignature {
        /// The skill.
        name: String,
        /// The version.
        version: String,
        /// Why.
        #[source]
        source: Box<SignError>,
    },
    /// The registry was opened read-only and a write was asked for.
    #[error("registry {path} is open read-only")]
    ReadOnly {
        /// The registry file.
        path: String,
    },
    /// Metadata the registry cannot keep (a version or a name longer than its columns allow);
    /// checked before anything is written.
    #[error("{name}: {reason}")]
    BadMetadata {
        /// The skill.
        name: String,
        /// What is wrong, and the limit.
        reason: String,
    },
    /// A version over a per-version limit ([`VersionLimits`](super::VersionLimits)): its
    /// unpacked size or its number of files; nothing was written.
    #[error("{name}@{version}: {found}, over the limit of {limit} per version")]
    TooLarge {
        /// The skill.
        name: String,
        /// The version.
        version: String,
        /// What the version holds (`513 files`, `18874368 bytes`).
        found: String,
        /// The limit, with its unit (`512 files`, `16777216 bytes (16 MiB)`).
        limit: String,
    },
    /// What the registry holds does not hash to its address (a damaged or altered file).
    #[error("registry {path}: {what}: digest mismatch (expected {expected}, got {actual})")]
    Corrupt {
        /// The registry file.
        path: String,
        /// The blob or version.
        what: String,
        /// The digest it is stored under.
        expected: String,
        /// The digest of the bytes held.
        actual: String,
    },
    /// The database did not answer (a refused or dropped connection, a restart, a terminated
    /// backend): nothing was written; worth retrying. A server answers it with 503.
    #[error("registry {what} is unavailable: {reason}")]
    Unavailable {
        /// The database, as shown (no password).
        what: String,
        /// Why, in the driver's words.
        reason: String,
    },
}

impl RegistryError {
    /// Whether this is a refusal of what was asked (exit 1 on the command line) rather than a
    /// failure to read or write (exit 2).
    pub fn is_refusal(&self) -> bool {
        use RegistryError::*;
        match self {
            InvalidSkill { .. }
            | MissingVersion { .. }
            | BadVersion { .. }
            | Immutable { .. }
            | VersionConflict { .. }
            | BadPath { .. }
            | LookAlike { .. }
            | MixedScripts { .. }
            | Unsigned { .. }
            | BadSignature { .. }
            | AlreadyExists { .. }
            | NotFound(_)
            | BadMetadata { .. }
            | TooLarge { .. }
            | Corrupt { .. } => true,
            // A constraint of the schema refused what was written: the input's fault, whatever
            // check before the write missed it.
            Sqlite { .. } | Postgres { .. } => self.is_constraint(),
            NotARegistry { .. }
            | SchemaTooNew { .. }
            | SchemaTooOld { .. }
            | Missing { .. }
            | Read { .. }
            | Io { .. }
            | BadSpec { .. }
            | ReadOnly { .. }
            | Unavailable { .. } => false,
        }
    }

    /// Whether SQLite refused a write for a constraint of the schema (`CHECK`, `NOT NULL`,
    /// `UNIQUE`, a foreign key, a trigger's `RAISE`): what was asked is refused, nothing was
    /// written (the transaction rolled back).
    pub fn is_constraint(&self) -> bool {
        match self {
            RegistryError::Sqlite { source, .. } => {
                source.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation)
            }
            // Class 23: integrity constraint violation (the triggers raise 23000 too).
            RegistryError::Postgres {
                code: Some(code), ..
            } => code.starts_with("23"),
            _ => false,
        }
    }

    /// What kind of failure this is, as the core's [`ErrorKind`](skillcat_core::ErrorKind)
    /// says it: what a caller holding a `skillcat_core::Error` decides on (a search stopped by
    /// its deadline is [`Interrupted`](skillcat_core::ErrorKind::Interrupted)).
    pub fn kind(&self) -> skillcat_core::ErrorKind {
        use RegistryError::*;
        use skillcat_core::ErrorKind as K;
        match self {
            Sqlite { .. } if self.is_interrupted() => K::Interrupted,
            Sqlite { .. } if self.is_constraint() => K::Invalid,
            Postgres { .. } if self.is_interrupted() => K::Interrupted,
            Postgres { .. } if self.is_constraint() => K::Invalid,
            Sqlite { .. } | Postgres { .. } | Read { .. } => K::Other,
            Unavailable { .. } => K::Remote,
            NotFound(_) | Missing { .. } => K::NotFound,
            AlreadyExists { .. } => K::AlreadyExists,
            Io { .. } => K::Io,
            Corrupt { .. } => K::Integrity,
            Unsigned { .. } | BadSignature { .. } => K::Signature,
            ReadOnly { .. } => K::PermissionDenied,
            NotARegistry { .. }
            | SchemaTooNew { .. }
            | SchemaTooOld { .. }
            | InvalidSkill { .. }
            | MissingVersion { .. }
            | BadVersion { .. }
            | BadSpec { .. }
            | Immutable { .. }
            | VersionConflict { .. }
            | BadPath { .. }
            | LookAlike { .. }
            | MixedScripts { .. }
            | BadMetadata { .. }
            | TooLarge { .. } => K::Invalid,
        }
    }

    /// The validation faults, for [`InvalidSkill`](Self::InvalidSkill).
    pub fn faults(&self) -> &[Fault] {
        match self {
            RegistryError::InvalidSkill { faults, .. } => faults,
            _ => &[],
        }
    }
}

fn join_faults(faults: &[Fault]) -> String {
    faults
        .iter()
        .map(Fault::message)
        .collect::<Vec<_>>()
        .join("; ")
}

/// SQLite's error, with a full disk named the way the rest of the system names it.
impl RegistryError {
    /// Whether SQLite stopped the query (its budget ran out, or a deadline interrupted it).
    pub fn is_interrupted(&self) -> bool {
        match self {
            RegistryError::Sqlite { source, .. } => {
                source.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
            }
            // 57014 query_canceled: `statement_timeout` stopped it.
            RegistryError::Postgres { code, .. } => code.as_deref() == Some("57014"),
            _ => false,
        }
    }
}

fn describe_sqlite(e: &rusqlite::Error) -> String {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
        format!("No space left on device ({e}); the write was rolled back")
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillcat_core::ErrorKind;

    #[test]
    fn a_registry_error_keeps_its_kind_as_the_core_error_it_becomes() {
        let interrupted = RegistryError::Sqlite {
            path: "r.db".into(),
            source: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT),
                None,
            ),
        };
        assert!(interrupted.is_interrupted());
        // PostgreSQL: statement_timeout (57014) is an interruption; class 23 a refusal.
        let pg = |code: &str| RegistryError::Postgres {
            what: "postgres://h/d".into(),
            code: Some(code.into()),
            message: "m".into(),
        };
        assert!(pg("57014").is_interrupted() && !pg("57014").is_refusal());
        let core: skillcat_core::Error = pg("57014").into();
        assert_eq!(core.kind(), ErrorKind::Interrupted);
        assert!(pg("23000").is_constraint() && pg("23505").is_refusal());
        assert!(!pg("42P01").is_refusal() && !pg("42P01").is_interrupted());
        let core: skillcat_core::Error = interrupted.into();
        assert_eq!(core.kind(), ErrorKind::Interrupted);
        let read_only: skillcat_core::Error = RegistryError::ReadOnly {
            path: "r.db".into(),
        }
        .into();
        assert_eq!(read_only.kind(), ErrorKind::PermissionDenied);
        assert_eq!(read_only.to_string(), "registry r.db is open read-only");
        let missing: skillcat_core::Error = RegistryError::NotFound("pdf@1.0.0".into()).into();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
    }
}
