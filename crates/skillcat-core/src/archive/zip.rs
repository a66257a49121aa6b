//! Reading a `.zip` into an [`ArchiveTree`], in memory.
//!
//! ```text
//! bytes ── end record ends the file exactly ────────── else Corrupt (trailing data)
//!   │   ZipArchive, ArchiveOffset::Known(0) ───────── prepended data is not searched for
//!   │   central directory: no duplicate names ─────── Duplicate
//!   │   entry count ≤ limit ───────────────────────── TooManyEntries
//!   │   validate_header_consistency() ─────────────── ZipHeaderMismatch (local ≠ central,
//!   │                                                  overlaps, unlisted local headers)
//!   ▼ per entry, by index
//!   path check on the raw name (no CP437, no Unicode-path resolution of our own)
//!   type from the Unix mode (Unix-made entries) or the trailing `/`: file or dir only
//!   not encrypted, method Stored or Deflated
//!   raw data (compressed size) ─▶ our own inflate ─▶ Metered ─▶ read ≤ limits
//!   actual size == declared size, CRC-32 matches, deflate stream ends with the data
//! ```
//!
//! Inflating ourselves (instead of the crate's reader) keeps every limit on bytes we count,
//! and lets a lying size be reported as [`SizeMismatch`](ArchiveError::SizeMismatch).

use std::collections::HashSet;
use std::io::{Cursor, Read};

use ::zip::read::{ArchiveOffset, Config};
use ::zip::{CompressionMethod, System, ZipArchive};

use super::entry::check_entry_path;
use super::error::{ArchiveError, entry_name};
use super::limits::{ArchiveLimits, Budget, Metered};
use super::tree::{ArchiveTree, TreeBuilder, TreeFile, is_document_position};
use crate::path::is_ignored;

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;
const S_IFBLK: u32 = 0o060000;
const S_IFIFO: u32 = 0o010000;
const S_IFSOCK: u32 = 0o140000;

const EOCD_SIGNATURE: &[u8; 4] = b"PK\x05\x06";
const EOCD_LEN: usize = 22;
const CDFH_SIGNATURE: &[u8; 4] = b"PK\x01\x02";
const CDFH_LEN: usize = 46;

/// Reads a zip archive.
pub fn read_zip(bytes: &[u8], limits: &ArchiveLimits) -> Result<ArchiveTree, ArchiveError> {
    let budget = Budget::new(*limits, bytes.len() as u64)?;
    check_end_record(bytes)?;
    let config = Config {
        archive_offset: ArchiveOffset::Known(0),
    };
    let mut archive = ZipArchive::with_config(config, Cursor::new(bytes))
        .map_err(|e| ArchiveError::corrupt(e.to_string()))?;
    if archive.has_duplicate_names() {
        let entry = first_duplicate(bytes, archive.central_directory_start())
            .unwrap_or_else(|| "(central directory)".to_string());
        return Err(ArchiveError::Duplicate { entry });
    }
    if archive.len() as u64 > limits.max_entries {
        return Err(ArchiveError::TooManyEntries {
            limit: limits.max_entries,
        });
    }
    archive
        .validate_header_consistency()
        .map_err(|e| ArchiveError::ZipHeaderMismatch {
            detail: e.to_string(),
        })?;

    let mut builder = TreeBuilder::default();
    for index in 0..archive.len() {
        budget.count_entry()?;
        let Some(file) = check_entry(&archive, index, &mut builder)? else {
            continue;
        };
        budget.set_current(&file.name);
        let raw = {
            let mut reader = archive
                .by_index_raw(index)
                .map_err(|e| ArchiveError::corrupt(format!("{:?}: {e}", file.name)))?;
            let mut raw = Vec::new();
            reader
                .read_to_end(&mut raw)
                .map_err(|e| ArchiveError::corrupt(format!("{:?}: {e}", file.name)))?;
            raw
        };
        if raw.len() as u64 != file.compressed_size {
            return Err(ArchiveError::corrupt(format!(
                "{:?}: compressed data truncated",
                file.name
            )));
        }
        let data = inflate(&raw, &file, &budget)?;
        let mut crc = flate2::Crc::new();
        crc.update(&data);
        if crc.sum() != file.crc32 {
            return Err(ArchiveError::corrupt(format!(
                "{:?}: CRC-32 mismatch",
                file.name
            )));
        }
        builder.add_file(
            &file.path,
            TreeFile {
                bytes: data.into(),
                executable: file.executable,
            },
        )?;
    }
    builder.finish()
}

/// What is known about one file entry before its data is read.
struct PendingFile {
    name: String,
    path: String,
    deflated: bool,
    declared: u64,
    compressed_size: u64,
    crc32: u32,
    executable: bool,
}

/// Applies every per-entry rule that needs no data. Directories and junk are recorded or
/// skipped here (`None`); a file to read is returned.
fn check_entry(
    archive: &ZipArchive<Cursor<&[u8]>>,
    index: usize,
    builder: &mut TreeBuilder,
) -> Result<Option<PendingFile>, ArchiveError> {
    let entry = archive
        .by_index_data(index)
        .map_err(|e| ArchiveError::corrupt(e.to_string()))?;
    let raw = entry.name_raw();
    let name = entry_name(raw);
    // A DOS-made entry's mode is made up by the reader from attribute bits: only the
    // trailing `/` says what it is. Other systems store a real Unix mode when they store one.
    let mode = match entry.system() {
        System::Dos => None,
        _ => entry.unix_mode(),
    };
    let named_dir = raw.ends_with(b"/");
    let file_type = mode.map_or(0, |m| m & S_IFMT);
    let is_dir = named_dir || file_type == S_IFDIR;
    let path = check_entry_path(raw, is_dir)
        .map_err(|rule| ArchiveError::from_path_rule(rule, name.clone()))?;
    let special = |kind: &str| ArchiveError::SpecialFile {
        entry: name.clone(),
        kind: kind.to_string(),
    };
    match file_type {
        // Some writers give directories a regular-file mode; the trailing `/` decides, as it
        // does for every zip reader, and a directory holds no data either way.
        0 | S_IFREG => {}
        S_IFDIR if !named_dir => {
            return Err(ArchiveError::corrupt(format!(
                "{name:?}: directory mode on a name without a trailing `/`"
            )));
        }
        S_IFDIR => {}
        S_IFLNK => return Err(ArchiveError::Symlink { entry: name }),
        S_IFCHR => return Err(special("character device")),
        S_IFBLK => return Err(special("block device")),
        S_IFIFO => return Err(special("FIFO")),
        S_IFSOCK => return Err(special("socket")),
        other => return Err(special(&format!("file of mode type {other:o}"))),
    }
    if entry.encrypted() {
        return Err(ArchiveError::ZipEncrypted { entry: name });
    }
    if is_ignored(&path) {
        return Ok(None);
    }
    if is_dir {
        if entry.size() != 0 {
            return Err(ArchiveError::corrupt(format!(
                "{name:?}: directory entry with data"
            )));
        }
        builder.add_dir(&path)?;
        return Ok(None);
    }
    let deflated = match entry.compression() {
        CompressionMethod::Stored => false,
        CompressionMethod::Deflated => true,
        other => {
            return Err(ArchiveError::ZipUnsupportedCompression {
                entry: name,
                method: format!("{other:?}"),
            });
        }
    };
    builder.check_new_file(&path)?;
    Ok(Some(PendingFile {
        declared: entry.size(),
        compressed_size: entry.compressed_size(),
        crc32: entry.crc32(),
        executable: mode.is_some_and(|m| m & 0o111 != 0),
        deflated,
        name,
        path,
    }))
}

fn inflate(raw: &[u8], file: &PendingFile, budget: &Budget) -> Result<Vec<u8>, ArchiveError> {
    let is_document = is_document_position(&file.path);
    if !file.deflated {
        let mut reader = Metered::new(raw, budget);
        return budget.read_file(&mut reader, &file.name, file.declared, is_document);
    }
    let mut decoder = flate2::bufread::DeflateDecoder::new(raw);
    let data = {
        let mut reader = Metered::new(&mut decoder, budget);
        budget.read_file(&mut reader, &file.name, file.declared, is_document)?
    };
    if !decoder.get_ref().is_empty() {
        return Err(ArchiveError::corrupt(format!(
            "{:?}: data after the end of the deflate stream",
            file.name
        )));
    }
    Ok(data)
}

/// The end-of-central-directory record must end the file exactly (its comment included):
/// bytes after it are a second archive some tools would read.
fn check_end_record(bytes: &[u8]) -> Result<(), ArchiveError> {
    if bytes.len() < EOCD_LEN {
        return Err(ArchiveError::corrupt("too short to be a zip archive"));
    }
    let lowest = bytes.len().saturating_sub(EOCD_LEN + usize::from(u16::MAX));
    for at in (lowest..=bytes.len() - EOCD_LEN).rev() {
        if &bytes[at..at + 4] == EOCD_SIGNATURE {
            let comment = usize::from(u16::from_le_bytes([bytes[at + 20], bytes[at + 21]]));
            if at + EOCD_LEN + comment == bytes.len() {
                return Ok(());
            }
        }
    }
    Err(ArchiveError::corrupt(
        "no end-of-central-directory record ends the archive (trailing data?)",
    ))
}

/// Names the first repeated name of the central directory, for the error message (the zip
/// crate keeps only the last entry of each name).
fn first_duplicate(bytes: &[u8], start: u64) -> Option<String> {
    let mut at = usize::try_from(start).ok()?;
    let mut seen = HashSet::new();
    loop {
        let record = bytes.get(at..)?;
        if record.len() < CDFH_LEN || &record[..4] != CDFH_SIGNATURE {
            return None;
        }
        let field = |off: usize| usize::from(u16::from_le_bytes([record[off], record[off + 1]]));
        let (name_len, extra_len, comment_len) = (field(28), field(30), field(32));
        let name = record.get(CDFH_LEN..CDFH_LEN + name_len)?;
        if !seen.insert(name) {
            return Some(entry_name(name));
        }
        at = at.checked_add(CDFH_LEN + name_len + extra_len + comment_len)?;
    }
}
