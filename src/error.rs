//! The library's one public error type.
//!
//! Backends keep private detail in their own enums (`ArchiveError`, `SignError`, …) and map
//! into [`Error`] with one `From` each. Every I/O error names its path or URL.

use std::io;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, by kind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory (or URL) involved.
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Nothing exists at `0` (a path, a skill name, a file of a skill).
    #[error("not found: {0}")]
    NotFound(String),
    /// A path was refused: it climbs out of its root, is absolute, or is not canonical.
    #[error("path rejected: {path}: {reason}")]
    PathRejected {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// A file is larger than the limit allowed for it.
    #[error("{path}: too large ({size} bytes; the limit is {limit})")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size (or the bytes read before stopping).
        size: u64,
        /// The limit that applied.
        limit: u64,
    },
    /// A document is not a skill document (missing/unclosed frontmatter, bad YAML, …).
    #[error("{path}: {fault}")]
    InvalidSkill {
        /// The document or skill root.
        path: String,
        /// The first fault that refused it.
        fault: crate::document::Fault,
    },
    /// An archive broke one of the safety rules.
    #[error(transparent)]
    Archive(#[from] crate::archive::ArchiveError),
    /// A signature, key or keyring problem.
    #[error(transparent)]
    Sign(#[from] crate::sign::SignError),
    /// Content did not hash to what it claimed.
    #[error("{what}: digest mismatch (expected {expected}, got {actual})")]
    DigestMismatch {
        /// What was checked.
        what: String,
        /// The digest that was promised.
        expected: String,
        /// The digest of the bytes held.
        actual: String,
    },
    /// The string given to [`open`](crate::source::open) names no known kind of source.
    #[error("unsupported source: {0}")]
    UnsupportedSource(String),
    /// A request that is not valid in itself (bad argument, bad configuration value).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// An [`Error::Io`] naming `path`.
    pub fn io(path: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
