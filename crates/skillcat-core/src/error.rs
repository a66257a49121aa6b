//! The library's one public error type.
//!
//! Backends keep private detail in their own enums (`ArchiveError`, `SignError`, …) and map
//! into [`Error`] with one `From` each. Every I/O error names its path or URL.
//!
//! What a caller decides on is [`Error::kind`], an [`ErrorKind`] every error reports: the
//! core's variants have theirs, and a layer above the core wraps its own error with the kind it
//! gives it ([`Error::layer`]), so nobody downcasts to learn what failed. A cause stays
//! reachable through [`std::error::Error::source`]. Messages say what failed; advice about a
//! program's flags belongs to that program's printer.

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
    ///
    /// It says what failed; how to trust a private authority (a flag, a variable) is the
    /// caller's to add, in its own words.
    #[error("{location}: the server's TLS certificate does not verify: {reason}")]
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
    /// a registry that refused a request; a git source): shown as that error shows itself, with
    /// the [`ErrorKind`] the layer gave it. The layer's own type stays the layer's: callers
    /// decide on [`Error::kind`], never by downcasting.
    #[error(transparent)]
    Layer(LayerError),
    /// A failure with a typed cause that has no variant of its own (a configuration error, a
    /// URL that does not parse, an HTTP client that cannot be built, …):
    /// [`std::error::Error::source`] reaches the cause.
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
    /// A SOURCE spelling that does not parse (empty, a GitHub source that is not
    /// `owner/repo`, a subpath that climbs out): the whole message, naming what was typed.
    #[error("{0}")]
    BadSourceSpec(String),
    /// A file that should be text is not UTF-8.
    #[error("{location}: not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The file, for people.
        location: String,
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// A sparse file whose size is far above what it holds on disk: refused before it is read.
    #[error(
        "{location}: a sparse file ({size} bytes over {allocated} bytes on disk, more than \
         {ratio} times as many): refused"
    )]
    SparseFile {
        /// The file, for people.
        location: String,
        /// Its apparent size.
        size: u64,
        /// What it occupies on disk.
        allocated: u64,
        /// The most times its allocation a file's size may be.
        ratio: u64,
    },
    /// A directory search was stopped: it holds more directories than the limit.
    #[error(
        "{location}: more than {limit} directories to search for skills; open a narrower \
         directory"
    )]
    TooManyDirectories {
        /// The directory searched, for people.
        location: String,
        /// The limit that applied.
        limit: usize,
    },
    /// A source answered for a skill root without having read it (a source's own bug, said
    /// rather than panicking).
    #[error("{0}: the source did not read this root")]
    RootNotRead(String),
    /// An archive to write has a name whose extension says no format the packer writes.
    #[error("{0}: the output must end in .tar.gz, .tgz or .zip")]
    UnknownArchiveFormat(String),
    /// An archive was packed but not written, since reading it back broke a rule: what is
    /// written must be readable by every reader.
    #[error("{path}: not written, since no reader would accept it: {source}")]
    UnreadableArchive {
        /// The archive that would have been written.
        path: String,
        /// Why reading it back refused it.
        #[source]
        source: crate::archive::ArchiveError,
    },
    /// What a remote answered, or how it is named, is not valid (an answer that does not
    /// parse, a reference or digest that is malformed): the whole message, naming the remote.
    #[error("{0}")]
    Invalid(String),
    /// Something is already where a new thing was to be made (a directory that is not
    /// empty, …).
    #[error("{path} {why}")]
    Exists {
        /// What is in the way.
        path: String,
        /// What is there, and what to do about it.
        why: String,
    },
}

/// What kind of failure an [`Error`] is: stable across messages, the same for the core's own
/// errors and for the errors layers above it wrap (see [`Error::layer`]). Callers decide on
/// this (retry, fall back to a cache, report a refusal, pick an exit code), never on a
/// message's words or on downcasting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Nothing exists at what was asked for.
    NotFound,
    /// A server wants credentials, or refused those given.
    Unauthenticated,
    /// A server knows who asks and denies them this.
    PermissionDenied,
    /// A server's TLS certificate does not verify.
    Certificate,
    /// A read or write failed (a file, a connection).
    Io,
    /// A server answered with an error status that has no kind of its own.
    Remote,
    /// What was given or read breaks a rule and is refused (a path, a size, a document, an
    /// archive, a spelling, a limit).
    Invalid,
    /// What a repository holds was read and refused (a pinned commit that is gone, a path
    /// that breaks a rule, no skill under the folder asked for).
    Refused,
    /// A program the library runs (`git`) failed, timed out or is missing.
    Tool,
    /// A signature, key or keyring problem.
    Signature,
    /// Content did not hash to what it claimed.
    Integrity,
    /// Something is already where a new thing was to be made.
    AlreadyExists,
    /// The work was stopped before it finished (a deadline, a query budget).
    Interrupted,
    /// A source names no kind of source the library knows.
    Unsupported,
    /// None of the above.
    Other,
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

    /// An [`Error::Layer`]: a layer's own error, kept whole, of the `kind` the layer says it
    /// is.
    pub fn layer(kind: ErrorKind, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Layer(LayerError {
            kind,
            error: Box::new(source),
        })
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            Error::Io { .. } => ErrorKind::Io,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Unauthenticated { .. } => ErrorKind::Unauthenticated,
            Error::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Error::Certificate { .. } => ErrorKind::Certificate,
            Error::Remote { .. } => ErrorKind::Remote,
            Error::PathRejected { .. }
            | Error::TooLarge { .. }
            | Error::InvalidSkill { .. }
            | Error::Archive(_)
            | Error::BadSourceSpec(_)
            | Error::NotUtf8 { .. }
            | Error::SparseFile { .. }
            | Error::TooManyDirectories { .. }
            | Error::UnknownArchiveFormat(_)
            | Error::UnreadableArchive { .. }
            | Error::NothingUsable { .. }
            | Error::Invalid(_) => ErrorKind::Invalid,
            Error::Layer(layer) => layer.kind,
            // A panicked or cancelled task is a bug or a shutdown, not a deadline.
            Error::Other { .. } | Error::RootNotRead(_) | Error::Task { .. } => ErrorKind::Other,
            Error::DigestMismatch { .. } => ErrorKind::Integrity,
            Error::UnsupportedSource(_) => ErrorKind::Unsupported,
            Error::Exists { .. } => ErrorKind::AlreadyExists,
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
/// exactly as the layer's error does, and carries the [`ErrorKind`] the layer gave it.
#[derive(Debug)]
pub struct LayerError {
    kind: ErrorKind,
    error: Box<dyn std::error::Error + Send + Sync>,
}

impl LayerError {
    /// The layer's error.
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.error
    }

    /// What kind of failure the layer said it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl std::fmt::Display for LayerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for LayerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// `text`, then each error of `error`'s chain (`error` itself first, then each
/// [`source`](std::error::Error::source)) that the text so far does not already say, joined by
/// `": "`: an error said once with every cause, however many layers wrapped it. What a program
/// prints for an error that stopped it (the command line's `main` does).
pub fn said_with_causes(mut text: String, error: &(dyn std::error::Error + 'static)) -> String {
    let mut link = Some(error);
    while let Some(e) = link {
        let said = e.to_string();
        if !said.is_empty() && !text.contains(&said) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&said);
        }
        link = e.source();
    }
    text
}

/// An error as a program reports it to a person: what it was doing (when it says), and the
/// error kept whole, with its [`ErrorKind`] when it is the library's. Shown as the text, then
/// each cause of the error's chain that the text before it does not already say
/// ([`said_with_causes`]); a program adds its own advice for the [`kind`](Report::kind).
#[derive(Debug)]
pub struct Report {
    context: Option<String>,
    cause: Option<Cause>,
}

impl Report {
    /// What was being done (`context`, when it says), failed because of `cause`.
    pub fn caused(context: Option<String>, cause: impl Into<Cause>) -> Report {
        Report {
            context,
            cause: Some(cause.into()),
        }
    }

    /// The error this report keeps, when it keeps one.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_ref().map(|c| &*c.error as _)
    }

    /// The kind of the error it keeps, when that is the library's.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.cause.as_ref().and_then(|c| c.kind)
    }
}

impl From<String> for Report {
    fn from(text: String) -> Report {
        Report {
            context: Some(text),
            cause: None,
        }
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.context.clone().unwrap_or_default();
        match &self.cause {
            Some(cause) => f.write_str(&said_with_causes(text, &*cause.error)),
            None => f.write_str(&text),
        }
    }
}

/// An error a [`Report`] keeps whole, with its [`ErrorKind`] when it is the library's.
#[derive(Debug)]
pub struct Cause {
    kind: Option<ErrorKind>,
    error: Box<dyn std::error::Error + Send + Sync>,
}

impl Cause {
    /// Any error, of no kind the library reports.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause {
            kind: None,
            error: Box::new(error),
        }
    }
}

impl From<Error> for Cause {
    fn from(error: Error) -> Cause {
        Cause {
            kind: Some(error.kind()),
            error: Box::new(error),
        }
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
    fn a_layer_error_shows_itself_keeps_its_cause_and_its_kind() {
        let e = Error::layer(
            ErrorKind::Signature,
            LayerIo {
                source: io::Error::other("disk on fire"),
            },
        );
        assert_eq!(e.to_string(), "keyring k.toml: disk on fire");
        assert_eq!(e.kind(), ErrorKind::Signature);
        // Transparent: the first cause is the layer's cause, not the layer's error again.
        let cause = std::error::Error::source(&e).expect("a cause");
        assert_eq!(cause.to_string(), "disk on fire");
    }

    #[test]
    fn a_certificate_error_says_what_failed_and_names_no_flag() {
        let e = Error::Certificate {
            location: "https://h/".into(),
            reason: "expired".into(),
        };
        assert_eq!(
            e.to_string(),
            "https://h/: the server's TLS certificate does not verify: expired"
        );
        assert_eq!(e.kind(), ErrorKind::Certificate);
    }

    #[test]
    fn kinds_of_the_core_errors() {
        let missing = Error::io("f", io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert_eq!(Error::io("f", io::Error::other("x")).kind(), ErrorKind::Io);
        let utf8 = Error::NotUtf8 {
            location: "a/b".into(),
            offset: 3,
        };
        assert_eq!(utf8.kind(), ErrorKind::Invalid);
        assert_eq!(
            utf8.to_string(),
            "a/b: not UTF-8 (invalid byte at offset 3)"
        );
        assert_eq!(
            Error::BadSourceSpec("an empty SOURCE".into()).kind(),
            ErrorKind::Invalid
        );
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

    #[test]
    fn an_error_is_said_once_with_every_cause_not_already_said() {
        let io = io::Error::new(io::ErrorKind::NotFound, "no such file");
        let e = Error::Io {
            path: "a/SKILL.md".into(),
            source: io,
        };
        // Error::Io's own text already says its cause: said once.
        let text = said_with_causes(String::new(), &e);
        assert_eq!(text, e.to_string());
        assert_eq!(text.matches("no such file").count(), 1, "{text}");
        // A context before it, and a layer wrapping it, add what they say and nothing twice.
        let layered = Error::layer(ErrorKind::Io, e);
        let text = said_with_causes("reading the skill".into(), &layered);
        assert!(text.starts_with("reading the skill: "), "{text}");
        assert_eq!(text.matches("no such file").count(), 1, "{text}");
        // A cause the text does not say is added after it.
        let other = Error::other("opening the catalog", io::Error::other("disk on fire"));
        assert_eq!(
            said_with_causes("x".into(), &other),
            "x: opening the catalog: disk on fire"
        );
    }

    /// An error whose text already says its cause, as `Error::Io` does.
    #[derive(Debug, thiserror::Error)]
    #[error("f.txt: {source}")]
    struct Says {
        source: io::Error,
    }

    /// An error whose cause is said only in its source chain, as a transport error's is.
    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Hides {
        source: io::Error,
    }

    #[test]
    fn a_report_says_each_cause_once_and_keeps_the_error_and_its_kind() {
        let says = Says {
            source: io::Error::other("disk on fire"),
        };
        let r = Report::caused(None, Cause::new(says));
        assert_eq!(r.to_string(), "f.txt: disk on fire");
        assert_eq!(r.kind(), None);
        let hides = Hides {
            source: io::Error::other("connection refused"),
        };
        let r = Report::caused(Some("cannot reach h".into()), Cause::new(hides));
        assert_eq!(
            r.to_string(),
            "cannot reach h: error sending request: connection refused"
        );
        assert_eq!(
            r.cause().map(ToString::to_string),
            Some("error sending request".into())
        );
        let text = Report::from(String::from("no such file"));
        assert_eq!(text.to_string(), "no such file");
        assert!(text.cause().is_none() && text.kind().is_none());
        let cert = Report::caused(
            None,
            Error::Certificate {
                location: "https://h/".into(),
                reason: "expired".into(),
            },
        );
        assert_eq!(cert.kind(), Some(ErrorKind::Certificate));
    }
}
