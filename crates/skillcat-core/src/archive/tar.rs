//! Reading a `.tar` or `.tar.gz` into an [`ArchiveTree`], in one pass, in memory.
//!
//! ```text
//! bytes ─┬─ 1f 8b ─▶ bufread::GzDecoder(&[u8]) ─┐
//!        └─ else ───────────────────────────────┴─▶ Metered ─▶ tar::Archive::entries()
//!                                                               │ per entry: count, path check,
//!                                                               │ type check, ustar/PAX size agree,
//!                                                               │ skip junk, read ≤ limits
//!                                                               ▼
//!                           end marker ─▶ rest of the tar stream must be zeros (TarTrailingData)
//!                           gzip member ends ─▶ no byte may follow it (GzipTrailingData)
//! ```
//!
//! `pax_global_header` entries (`git archive`) are skipped; PAX local headers and GNU long
//! names are applied by the `tar` crate to the entry they describe. Nothing is unpacked.

use std::io::{self, Read, Seek, SeekFrom};

use ::tar::EntryType;

use super::entry::check_entry_path;
use super::error::{ArchiveError, entry_name};
use super::limits::{ArchiveLimits, Budget, Metered};
use super::tree::{ArchiveTree, TreeBuilder, TreeFile, is_document_position};
use crate::path::is_ignored;

/// Reads a tar archive, gzip-compressed or not (told apart by the gzip magic `1f 8b`).
pub fn read_tar(bytes: &[u8], limits: &ArchiveLimits) -> Result<ArchiveTree, ArchiveError> {
    let budget = Budget::new(*limits, bytes.len() as u64)?;
    let builder = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut stream = Metered::new(flate2::bufread::GzDecoder::new(bytes), &budget);
        let builder = read_stream(&mut stream, &budget)?;
        // The tar stream was drained to the end of the first gzip member; a second member
        // or any garbage after it is data other readers would see and this one would not.
        let rest = stream.get_ref().get_ref().len() as u64;
        if rest > 0 {
            return Err(ArchiveError::GzipTrailingData { bytes: rest });
        }
        builder
    } else {
        read_stream(&mut Metered::new(bytes, &budget), &budget)?
    };
    builder.finish()
}

fn read_stream<R: Read>(stream: &mut R, budget: &Budget) -> Result<TreeBuilder, ArchiveError> {
    let mut builder = TreeBuilder::default();
    {
        let mut forward = ForwardSeek::new(&mut *stream);
        let mut archive = ::tar::Archive::new(&mut forward);
        let entries = archive
            .entries_with_seek()
            .map_err(|e| budget.io_error(e))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| budget.io_error(e))?;
            budget.count_entry()?;
            let kind = entry.header().entry_type();
            if kind == EntryType::XGlobalHeader {
                continue;
            }
            let raw = entry.path_bytes().into_owned();
            let name = entry_name(&raw);
            budget.set_current(&name);
            let is_dir = kind == EntryType::Directory;
            let path = check_entry_path(&raw, is_dir)
                .map_err(|rule| ArchiveError::from_path_rule(rule, name.clone()))?;
            check_type(kind, &name)?;
            let header_size = entry
                .header()
                .entry_size()
                .map_err(|e| ArchiveError::corrupt(format!("{name:?}: {e}")))?;
            if header_size != entry.size() {
                return Err(ArchiveError::TarHeaderMismatch {
                    entry: name,
                    detail: format!(
                        "PAX size {} differs from the header's size {header_size}",
                        entry.size()
                    ),
                });
            }
            if is_ignored(&path) {
                continue;
            }
            if is_dir {
                if entry.size() != 0 {
                    return Err(ArchiveError::corrupt(format!(
                        "{name:?}: directory entry with data"
                    )));
                }
                builder.add_dir(&path)?;
                continue;
            }
            builder.check_new_file(&path)?;
            let mode = entry
                .header()
                .mode()
                .map_err(|e| ArchiveError::corrupt(format!("{name:?}: {e}")))?;
            let declared = entry.size();
            let bytes =
                budget.read_file(&mut entry, &name, declared, is_document_position(&path))?;
            builder.add_file(
                &path,
                TreeFile {
                    bytes: bytes.into(),
                    executable: mode & 0o111 != 0,
                },
            )?;
        }
    }
    drain_zeros(stream, budget)?;
    Ok(builder)
}

/// A stream that "seeks" forward by reading and discarding, through one reused buffer.
///
/// `tar` skips each entry's unread data and padding; over a plain reader it does so through a
/// fresh zeroed 32 KiB buffer per entry, which costs more than the inflating for archives of
/// many small files. Every byte still passes through the stream (and its [`Metered`] budget).
struct ForwardSeek<R> {
    inner: R,
    pos: u64,
    scratch: Vec<u8>,
}

impl<R: Read> ForwardSeek<R> {
    fn new(inner: R) -> Self {
        ForwardSeek {
            inner,
            pos: 0,
            scratch: Vec::new(),
        }
    }
}

impl<R: Read> Read for ForwardSeek<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read> Seek for ForwardSeek<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let mut left = match to {
            SeekFrom::Current(n) if n >= 0 => n as u64,
            SeekFrom::Start(n) if n >= self.pos => n - self.pos,
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "a tar stream is only read forward",
                ));
            }
        };
        if self.scratch.is_empty() {
            self.scratch = vec![0; 32 * 1024];
        }
        while left > 0 {
            let want = left.min(self.scratch.len() as u64) as usize;
            let n = self.inner.read(&mut self.scratch[..want])?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "unexpected end of the tar stream while skipping",
                ));
            }
            self.pos += n as u64;
            left -= n as u64;
        }
        Ok(self.pos)
    }
}

/// Only regular files and directories are accepted.
fn check_type(kind: EntryType, name: &str) -> Result<(), ArchiveError> {
    let special = |what: &str| {
        Err(ArchiveError::SpecialFile {
            entry: name.to_string(),
            kind: what.to_string(),
        })
    };
    match kind {
        EntryType::Regular | EntryType::Directory => Ok(()),
        EntryType::Symlink => Err(ArchiveError::Symlink {
            entry: name.to_string(),
        }),
        EntryType::Link => Err(ArchiveError::Hardlink {
            entry: name.to_string(),
        }),
        EntryType::Char => special("character device"),
        EntryType::Block => special("block device"),
        EntryType::Fifo => special("FIFO"),
        EntryType::Continuous => special("contiguous file"),
        EntryType::GNUSparse => special("sparse file"),
        other => special(&format!(
            "tar entry of type {:?}",
            char::from(other.as_byte())
        )),
    }
}

/// After the end-of-archive marker only zero padding may follow: a second archive there is
/// what `tar --ignore-zeros` would read and this reader would not.
fn drain_zeros<R: Read>(stream: &mut R, budget: &Budget) -> Result<(), ArchiveError> {
    budget.set_current("");
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(budget.io_error(e)),
        };
        if buf[..n].iter().any(|&b| b != 0) {
            return Err(ArchiveError::TarTrailingData);
        }
    }
}
