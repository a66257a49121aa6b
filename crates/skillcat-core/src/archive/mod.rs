//! Archive safety: every `.tar`, `.tar.gz`/`.tgz` and `.zip` is read into a checked
//! in-memory tree, with the same rules for every entry of every format. Nothing is unpacked
//! and nothing is written anywhere: the `tar` and `zip` crates' unpack/extract functions are
//! never called.
//!
//! ```text
//! crates/skillcat-core/src/archive/
//! ├── mod.rs      sniff() picks the format (magic bytes win over the extension); read_archive()
//! ├── path.rs     the canonical path check: one pure function on raw bytes, table-tested
//! ├── limits.rs   ArchiveLimits, and the meter that counts bytes actually read
//! ├── tar.rs      tar / tar.gz: one gzip member, zero padding only after the end marker
//! ├── zip.rs      zip: Known(0) offset, no duplicate names, header consistency, own inflate
//! ├── tree.rs     ArchiveTree: files by path (bytes + exec bit), skill roots by layout
//! └── error.rs    ArchiveError: one variant per rule, naming the entry
//! ```
//!
//! Every entry goes through the same steps, in this order (the first broken rule is the
//! error): entry count; [path check](check_entry_path); type (regular file or directory
//! only: no symlinks, hardlinks, devices, FIFOs); format checks (tar: PAX size agrees with
//! the header; zip: not encrypted, stored or deflated); junk ([`is_ignored`](crate::path::is_ignored): `.git/`,
//! `node_modules/`, `.DS_Store`) skipped; duplicates, case-fold collisions and file/directory
//! conflicts; contents read within the per-file, document, total and ratio limits and
//! compared with the declared size. Then the layout is decided (see [`ArchiveTree`]): one
//! root skill, or skill folders.
//!
//! ```
//! use skillcat_core::archive::{sniff, ArchiveKind};
//! use std::path::Path;
//! assert_eq!(sniff(Path::new("x.tgz"), b""), Some(ArchiveKind::TarGz));
//! assert_eq!(sniff(Path::new("x.zip"), &[0x1f, 0x8b, 8]), Some(ArchiveKind::TarGz));
//! assert_eq!(sniff(Path::new("notes.txt"), b"hello"), None);
//! ```

mod entry;
mod error;
mod limits;
mod tar;
mod tree;
mod zip;

use std::path::Path;

pub use self::entry::check_entry_path;
pub use self::error::ArchiveError;
pub use self::limits::ArchiveLimits;
pub use self::tar::read_tar;
pub use self::tree::{ArchiveTree, TreeFile};
pub use self::zip::read_zip;

/// How many leading bytes [`sniff`] looks at (the tar `ustar` magic sits at offset 257).
pub const SNIFF_LEN: usize = 262;

/// An archive format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArchiveKind {
    /// An uncompressed tar archive.
    Tar,
    /// A gzip-compressed tar archive (`.tar.gz`, `.tgz`).
    TarGz,
    /// A zip archive.
    Zip,
}

/// Picks the format from the first bytes of a file (at least [`SNIFF_LEN`] of them where the
/// file has that many) and from its name. Magic bytes win when the two disagree: gzip
/// `1f 8b`, zip `PK\x03\x04` (or `PK\x05\x06`, an empty zip), tar `ustar` at offset 257.
/// Without magic (an old v7 tar), the extension decides: `.tar`, `.tar.gz`, `.tgz`, `.zip`.
pub fn sniff(path: &Path, first_bytes: &[u8]) -> Option<ArchiveKind> {
    if first_bytes.starts_with(&[0x1f, 0x8b]) {
        return Some(ArchiveKind::TarGz);
    }
    if first_bytes.starts_with(b"PK\x03\x04") || first_bytes.starts_with(b"PK\x05\x06") {
        return Some(ArchiveKind::Zip);
    }
    if first_bytes.get(257..262) == Some(b"ustar".as_slice()) {
        return Some(ArchiveKind::Tar);
    }
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        Some(ArchiveKind::TarGz)
    } else if name.ends_with(".tar") {
        Some(ArchiveKind::Tar)
    } else if name.ends_with(".zip") {
        Some(ArchiveKind::Zip)
    } else {
        None
    }
}

/// Reads an archive of a known format into a checked tree.
///
/// A [`ArchiveKind::Tar`] or [`ArchiveKind::TarGz`] archive is told apart by its own gzip
/// magic, so a mislabelled tarball still reads as what it is; but [`ArchiveKind::TarGz`]
/// without gzip magic and without tar's `ustar` magic (what [`sniff`] gives a text file named
/// `x.tar.gz`) is [`ArchiveError::NotGzip`], not a corrupt tar.
pub fn read_archive(
    kind: ArchiveKind,
    bytes: &[u8],
    limits: &ArchiveLimits,
) -> Result<ArchiveTree, ArchiveError> {
    let is_tar = bytes.get(257..262) == Some(b"ustar".as_slice());
    if kind == ArchiveKind::TarGz && !bytes.starts_with(&[0x1f, 0x8b]) && !is_tar {
        let start = bytes
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>();
        return Err(ArchiveError::NotGzip {
            start: if start.is_empty() {
                "nothing (the file is empty)".into()
            } else {
                start.join(" ")
            },
        });
    }
    match kind {
        ArchiveKind::Tar | ArchiveKind::TarGz => read_tar(bytes, limits),
        ArchiveKind::Zip => read_zip(bytes, limits),
    }
}
