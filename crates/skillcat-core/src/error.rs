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
    /// A server wants to know who asks: no credentials were given, or it refused them.
    #[error("{location}: {reason}")]
    Unauthenticated {
        /// The server (or its URL), for people: never with credentials in it.
        location: String,
        /// What happened and what to do (which variables or files hold credentials).
        reason: String,
    },
    /// A server knows who asks and denies them this (HTTP 403).
    #[error("{location}: {reason}")]
    PermissionDenied {
        /// The server (or its URL), for people: never with credentials in it.
        location: String,
        /// What was denied.
        reason: String,
    },
    /// A server's TLS certificate does not verify. Not a network that cannot be reached: no
    /// cached copy stands in for the server's answer.
    #[error(
        "{location}: the server's TLS certificate does not verify: {reason}. If a private \
         certificate authority issued it, trust that authority's PEM certificate with \
         --cacert FILE (skillcat's command line) or SSL_CERT_FILE=FILE"
    )]
    Certificate {
        /// The server (or its URL), for people: never with credentials in it.
        location: String,
        /// What is wrong with the certificate, in plain words.
        reason: String,
    },
    /// A server answered a request with an error status that has no kind of its own (not
    /// 404/410, which are [`NotFound`](Error::NotFound); not 401 or 403).
    #[error("{url}: HTTP {status}")]
    Remote {
        /// The URL asked, for people: no credentials, no query string.
        url: String,
        /// The HTTP status.
        status: u16,
    },
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
    /// A layer above the core failed with its own error (a signature, key or keyring problem;
    /// a registry that refused a request): shown as that error shows itself, and
    /// [`Error::downcast_ref`] reaches it (`SignError`, `RegistryError`, …).
    #[error(transparent)]
    Layer(LayerError),
    /// A failure with a typed cause that has no variant of its own (a configuration error, a
    /// URL that does not parse, an HTTP client that cannot be built, …):
    /// [`std::error::Error::source`] and [`Error::downcast_ref`] reach the cause.
    #[error("{what}: {source}")]
    Other {
        /// What was being done or read.
        what: String,
        /// The cause, as its library reported it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A blocking task of the library panicked or was cancelled.
    #[error("{what}: {source}")]
    Task {
        /// What the task was doing.
        what: String,
        /// The runtime's report.
        #[source]
        source: tokio::task::JoinError,
    },
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
    /// A source was read, but none of what it offers is usable (an HTTP index whose every entry
    /// was refused): a fault of its content, not a failure to read it.
    #[error("{location}: {reason}")]
    NothingUsable {
        /// The source (or its index), for people.
        location: String,
        /// Why, with the first refusals.
        reason: String,
    },
    /// The string given to `open` (in `skillcat-sources`) names no known kind of source.
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

    /// An [`Error::Other`]: `what` failed because of `source`.
    pub fn other(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Other {
            what: what.into(),
            source: Box::new(source),
        }
    }

    /// An [`Error::Layer`]: a layer's own error, kept whole.
    pub fn layer(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Layer(LayerError(Box::new(source)))
    }

    /// The layer's own error inside an [`Error::Other`] or an [`Error::Layer`], when it is an
    /// `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            Error::Other { source, .. } => source.downcast_ref::<E>(),
            Error::Layer(LayerError(source)) => source.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// An [`Error::Task`]: a blocking task doing `what` panicked or was cancelled.
    pub fn task(what: impl Into<String>, source: tokio::task::JoinError) -> Self {
        Error::Task {
            what: what.into(),
            source,
        }
    }

    /// Whether nothing exists at what was asked for (a path, a skill, a file of a skill, a
    /// registry version), including an I/O error of kind `NotFound`.
    pub fn is_not_found(&self) -> bool {
        match self {
            Error::NotFound(_) => true,
            Error::Io { source, .. } => source.kind() == io::ErrorKind::NotFound,
            _ => false,
        }
    }

    /// Whether a server could not be reached or failed on its side (a connection error, a 5xx
    /// answer): what a remote source may answer from its cache instead.
    pub fn is_unreachable(&self) -> bool {
        match self {
            Error::Io { .. } => true,
            Error::Remote { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// Whether a path was refused (it climbs out, is absolute, or breaks a path rule).
    pub fn is_path_rejected(&self) -> bool {
        matches!(self, Error::PathRejected { .. })
    }

    /// Whether content did not hash to what it claimed (a damaged cache entry, registry blob or
    /// download).
    pub fn is_digest_mismatch(&self) -> bool {
        matches!(self, Error::DigestMismatch { .. })
    }

    /// The fault of a document that is not a skill document ([`Error::InvalidSkill`]).
    pub fn fault(&self) -> Option<&crate::document::Fault> {
        match self {
            Error::InvalidSkill { fault, .. } => Some(fault),
            _ => None,
        }
    }
}

/// The error of a layer above the core, inside [`Error::Layer`]: it shows itself and its causes
/// exactly as the layer's error does.
#[derive(Debug)]
pub struct LayerError(Box<dyn std::error::Error + Send + Sync>);

impl LayerError {
    /// The layer's error.
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::fmt::Display for LayerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for LayerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer's error with a cause of its own, as `SignError::Io` is.
    #[derive(Debug, thiserror::Error)]
    #[error("keyring k.toml: {source}")]
    struct LayerIo {
        source: io::Error,
    }

    #[test]
    fn a_layer_error_shows_itself_keeps_its_cause_and_downcasts() {
        let e = Error::layer(LayerIo {
            source: io::Error::other("disk on fire"),
        });
        assert_eq!(e.to_string(), "keyring k.toml: disk on fire");
        let layer = e.downcast_ref::<LayerIo>().expect("the layer's own error");
        assert_eq!(layer.source.to_string(), "disk on fire");
        // Transparent: the first cause is the layer's cause, not the layer's error again.
        let cause = std::error::Error::source(&e).expect("a cause");
        assert_eq!(cause.to_string(), "disk on fire");
        assert!(e.downcast_ref::<io::Error>().is_none());
    }

    #[test]
    fn only_transport_failures_and_server_errors_are_unreachable() {
        assert!(Error::io("u", io::Error::other("refused")).is_unreachable());
        let remote = |status| Error::Remote {
            url: "u".into(),
            status,
        };
        assert!(remote(502).is_unreachable());
        assert!(!remote(400).is_unreachable());
        assert!(!Error::NotFound("u".into()).is_unreachable());
        let denied = Error::PermissionDenied {
            location: "u".into(),
            reason: "HTTP 403".into(),
        };
        assert!(!denied.is_unreachable());
        assert_eq!(denied.to_string(), "u: HTTP 403");
    }
}
