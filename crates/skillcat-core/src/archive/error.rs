//! [`ArchiveError`]: one variant per archive rule, each naming the entry that broke it.

use std::io;

use crate::path::PathRule;

/// An archive broke one of the safety rules (or could not be read at all).
///
/// One variant per rule, so a caller (and a test) can tell exactly which rule refused an
/// archive. `entry` is the entry's name as stored (invalid UTF-8 shown as U+FFFD); messages
/// print it with escapes, so a hostile name cannot rewrite a terminal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// An entry name is not valid UTF-8 (no CP437 or Latin-1 fallback).
    #[error("archive entry {entry:?}: name is not UTF-8")]
    NotUtf8Path {
        /// The entry.
        entry: String,
    },
    /// An entry path is absolute (`/etc/passwd`, `\\srv\x`, `C:\x`).
    #[error("archive entry {entry:?}: path is absolute")]
    AbsolutePath {
        /// The entry.
        entry: String,
    },
    /// An entry path has an empty component (`a//b`, a file ending in `/`, an empty name).
    #[error("archive entry {entry:?}: path has an empty component")]
    EmptyComponent {
        /// The entry.
        entry: String,
    },
    /// An entry path has a `.` or `..` component (`../x`, `a/../../b`).
    #[error("archive entry {entry:?}: path has a `.` or `..` component")]
    DotComponent {
        /// The entry.
        entry: String,
    },
    /// An entry path has a control character (NUL included), a bidi control or an invisible
    /// character (zero-width space or joiner, soft hyphen, byte-order mark).
    #[error("archive entry {entry:?}: path has a control or invisible character")]
    ControlChar {
        /// The entry.
        entry: String,
    },
    /// An entry path has a backslash, which Windows reads as a separator.
    #[error("archive entry {entry:?}: path has a backslash")]
    Backslash {
        /// The entry.
        entry: String,
    },
    /// An entry path has a name Windows reserves or cannot store (`CON`, `nul.txt`, `a:b`,
    /// a trailing `.` or space, `<>"|?*`, an 8.3 short-name shape such as `SKILL~1.MD`).
    #[error("archive entry {entry:?}: path has a name Windows reserves")]
    WindowsReserved {
        /// The entry.
        entry: String,
    },
    /// An entry path has a component longer than 255 bytes.
    #[error("archive entry {entry:?}: path component longer than {limit} bytes")]
    ComponentTooLong {
        /// The entry.
        entry: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// An entry path is longer than 1024 bytes.
    #[error("archive entry {entry:?}: path longer than {limit} bytes")]
    PathTooLong {
        /// The entry.
        entry: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// An entry path has more than 16 components.
    #[error("archive entry {entry:?}: path deeper than {limit} components")]
    TooDeep {
        /// The entry.
        entry: String,
        /// The limit, in components.
        limit: usize,
    },
    /// Two entries have the same path (tools disagree on which copy wins).
    #[error("archive entry {entry:?}: appears more than once")]
    Duplicate {
        /// The entry.
        entry: String,
    },
    /// Two entries are the same path under case folding and Unicode normalisation
    /// (`SKILL.md` and `skill.md`).
    #[error("archive entry {entry:?}: collides with {other:?} on a case-insensitive file system")]
    CaseCollision {
        /// The later entry.
        entry: String,
        /// The earlier entry it collides with.
        other: String,
    },
    /// A path is used both as a file and as a directory (`a` a file, `a/b` another file).
    #[error("archive entry {entry:?}: conflicts with {other:?} (a file used as a directory)")]
    PathConflict {
        /// The later entry.
        entry: String,
        /// The earlier entry it conflicts with.
        other: String,
    },
    /// A symbolic link (only regular files and directories are accepted).
    #[error("archive entry {entry:?}: is a symbolic link")]
    Symlink {
        /// The entry.
        entry: String,
    },
    /// A hard link (only regular files and directories are accepted).
    #[error("archive entry {entry:?}: is a hard link")]
    Hardlink {
        /// The entry.
        entry: String,
    },
    /// A device, FIFO, socket, sparse file or any other type that is not a regular file
    /// or a directory.
    #[error("archive entry {entry:?}: is a {kind}, not a regular file or directory")]
    SpecialFile {
        /// The entry.
        entry: String,
        /// What it is (`character device`, `FIFO`, `tar type 'V'`, …).
        kind: String,
    },
    /// The archive itself (compressed) is larger than the limit.
    #[error("archive is larger than {limit} bytes")]
    ArchiveTooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The unpacked total is larger than the limit.
    #[error("archive entry {entry:?}: unpacked total exceeds {limit} bytes")]
    TotalTooLarge {
        /// The entry being read when the total passed the limit.
        entry: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// One file is larger than the per-file limit.
    #[error("archive entry {entry:?}: larger than {limit} bytes")]
    FileTooLarge {
        /// The entry.
        entry: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A skill document (`SKILL.md`) is larger than the document limit.
    #[error("archive entry {entry:?}: skill document larger than {limit} bytes")]
    DocumentTooLarge {
        /// The entry.
        entry: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The archive has more entries than the limit.
    #[error("archive has more than {limit} entries")]
    TooManyEntries {
        /// The limit.
        limit: u64,
    },
    /// The unpacked bytes outgrew the compressed archive by more than the ratio limit.
    #[error("archive entry {entry:?}: unpacked size exceeds {limit} times the archive size")]
    RatioExceeded {
        /// The entry being read when the ratio passed the limit (empty between entries).
        entry: String,
        /// The limit (unpacked / compressed).
        limit: u64,
    },
    /// An entry's data is not as long as its header says (truncated, or longer than declared).
    #[error("archive entry {entry:?}: declared {declared} bytes, read {actual}")]
    SizeMismatch {
        /// The entry.
        entry: String,
        /// The size its header declared.
        declared: u64,
        /// The bytes actually read (when longer: the count at which reading stopped).
        actual: u64,
    },
    /// A gzip stream has bytes after its first member (trailing garbage or a second member).
    #[error("gzip stream has {bytes} trailing bytes after its first member")]
    GzipTrailingData {
        /// How many bytes follow the first member.
        bytes: u64,
    },
    /// A tar stream has non-zero bytes after its end-of-archive marker (a second archive that
    /// other readers, with `--ignore-zeros`, would see).
    #[error("tar stream has data after its end-of-archive marker")]
    TarTrailingData,
    /// A tar entry's PAX extended header disagrees with its ustar header (PAX size desync).
    #[error("archive entry {entry:?}: {detail}")]
    TarHeaderMismatch {
        /// The entry.
        entry: String,
        /// What disagrees.
        detail: String,
    },
    /// A zip's local file headers disagree with its central directory (names, sizes, flags,
    /// methods), entries overlap, or a local header is missing from the central directory.
    #[error("zip headers disagree: {detail}")]
    ZipHeaderMismatch {
        /// What disagrees, as the zip reader words it.
        detail: String,
    },
    /// A zip entry is encrypted.
    #[error("archive entry {entry:?}: is encrypted")]
    ZipEncrypted {
        /// The entry.
        entry: String,
    },
    /// A zip entry uses a compression method other than stored or deflate.
    #[error("archive entry {entry:?}: unsupported compression method {method}")]
    ZipUnsupportedCompression {
        /// The entry.
        entry: String,
        /// The method, as the zip reader names it.
        method: String,
    },
    /// The archive could not be parsed (bad checksum, bad header, bad deflate data, …).
    #[error("archive is corrupt: {detail}")]
    Corrupt {
        /// What the parser said.
        detail: String,
    },
    /// The file is named as a gzip-compressed tarball (`.tar.gz`, `.tgz`) but is not gzip data
    /// (nor a tar archive): it does not start with the gzip magic `1f 8b`.
    #[error(
        "not a gzip archive: a .tar.gz or .tgz starts with the bytes 1f 8b, this starts with {start}"
    )]
    NotGzip {
        /// Its first bytes, in hex.
        start: String,
    },
    /// The archive holds no `SKILL.md` (or `skill.md`) anywhere.
    #[error("archive holds no SKILL.md")]
    NoSkill,
    /// The archive has a `SKILL.md` at its root **and** skill folders with their own: one
    /// layout per archive, never a merge.
    #[error("archive has a SKILL.md at its root and a wrapped skill document {entry:?}")]
    MixedLayout {
        /// A wrapped skill document (`<folder>/SKILL.md`).
        entry: String,
    },
    /// Reading the archive file failed.
    #[error("{path}: {source}")]
    Io {
        /// The archive file.
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

impl ArchiveError {
    /// The error for an entry that broke a path rule.
    pub fn from_path_rule(rule: PathRule, entry: String) -> Self {
        use crate::path::{MAX_COMPONENT_BYTES, MAX_DEPTH, MAX_PATH_BYTES};
        match rule {
            PathRule::NotUtf8 => ArchiveError::NotUtf8Path { entry },
            PathRule::Absolute => ArchiveError::AbsolutePath { entry },
            PathRule::EmptyComponent => ArchiveError::EmptyComponent { entry },
            PathRule::DotComponent => ArchiveError::DotComponent { entry },
            PathRule::ControlChar => ArchiveError::ControlChar { entry },
            PathRule::Backslash => ArchiveError::Backslash { entry },
            PathRule::WindowsReserved => ArchiveError::WindowsReserved { entry },
            PathRule::ComponentTooLong => ArchiveError::ComponentTooLong {
                entry,
                limit: MAX_COMPONENT_BYTES,
            },
            PathRule::PathTooLong => ArchiveError::PathTooLong {
                entry,
                limit: MAX_PATH_BYTES,
            },
            PathRule::TooDeep => ArchiveError::TooDeep {
                entry,
                limit: MAX_DEPTH,
            },
        }
    }

    pub(crate) fn corrupt(detail: impl Into<String>) -> Self {
        ArchiveError::Corrupt {
            detail: detail.into(),
        }
    }
}

/// An entry name for messages: the stored bytes, invalid UTF-8 replaced.
pub(crate) fn entry_name(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}
