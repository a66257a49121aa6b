//! Limits, and the meter that enforces them on bytes actually read.
//!
//! ```text
//! archive bytes ──(≤ max_compressed)──▶ decoder ──▶ Metered ──▶ entry reader ──▶ read_file
//!                                                  │  counts every byte out      │  per file / document
//!                                                  │  ratio (after floor)        │  total of file contents
//!                                                  │  stream cap (tar overhead)  │  declared vs actual size
//! ```
//!
//! A header's claimed size is never trusted: each file is read in bounded chunks and refused
//! the moment it passes a limit, so a lying header costs at most one chunk past the limit.

use std::cell::{Cell, RefCell};
use std::io::{self, Read};

use super::error::ArchiveError;

const MIB: u64 = 1024 * 1024;

/// Limits applied while an archive is read. All are counted on bytes actually read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Largest archive accepted, compressed (default 16 MiB).
    pub max_compressed: u64,
    /// Largest total of unpacked file contents (default 64 MiB).
    pub max_total: u64,
    /// Largest single file (default 16 MiB).
    pub max_file: u64,
    /// Largest skill document, `SKILL.md` or `skill.md` at a skill root (default 1 MiB).
    pub max_document: u64,
    /// Most entries (files, directories, junk and metadata entries alike; default 2,000).
    pub max_entries: u64,
    /// Largest ratio of unpacked bytes to archive bytes (default 200).
    pub max_ratio: u64,
    /// Unpacked bytes allowed before the ratio is checked, so tiny archives (whose headers
    /// alone compress well) are not refused (default 1 MiB).
    pub ratio_floor: u64,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        ArchiveLimits {
            max_compressed: 16 * MIB,
            max_total: 64 * MIB,
            max_file: 16 * MIB,
            max_document: MIB,
            max_entries: 2_000,
            max_ratio: 200,
            ratio_floor: MIB,
        }
    }
}

/// Why the meter stopped a read (the reader only sees an `io::Error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trip {
    Ratio,
    Stream,
}

/// The running counts of one archive read, shared by the stream meter and the entry loop.
pub(crate) struct Budget {
    limits: ArchiveLimits,
    compressed: u64,
    /// Most bytes the decoded stream may hold (file contents plus format overhead).
    stream_cap: u64,
    produced: Cell<u64>,
    content: Cell<u64>,
    entries: Cell<u64>,
    current: RefCell<String>,
    tripped: Cell<Option<Trip>>,
}

/// Bytes of headers and padding a tar entry may need beyond its contents (header, PAX or GNU
/// long-name records, padding), for the stream cap.
const TAR_OVERHEAD_PER_ENTRY: u64 = 8 * 1024;

impl Budget {
    /// A budget for an archive of `compressed` bytes. Fails if the archive is too large.
    pub(crate) fn new(limits: ArchiveLimits, compressed: u64) -> Result<Self, ArchiveError> {
        if compressed > limits.max_compressed {
            return Err(ArchiveError::ArchiveTooLarge {
                limit: limits.max_compressed,
            });
        }
        let stream_cap = limits
            .max_total
            .saturating_add(limits.max_entries.saturating_mul(TAR_OVERHEAD_PER_ENTRY))
            .saturating_add(MIB);
        Ok(Budget {
            limits,
            compressed,
            stream_cap,
            produced: Cell::new(0),
            content: Cell::new(0),
            entries: Cell::new(0),
            current: RefCell::new(String::new()),
            tripped: Cell::new(None),
        })
    }

    /// Counts one more entry; fails past the entry limit.
    pub(crate) fn count_entry(&self) -> Result<(), ArchiveError> {
        let n = self.entries.get() + 1;
        self.entries.set(n);
        if n > self.limits.max_entries {
            return Err(ArchiveError::TooManyEntries {
                limit: self.limits.max_entries,
            });
        }
        Ok(())
    }

    /// Names the entry being read, for errors raised inside the stream.
    pub(crate) fn set_current(&self, entry: &str) {
        let mut current = self.current.borrow_mut();
        current.clear();
        current.push_str(entry);
    }

    fn on_produced(&self, n: usize) -> io::Result<()> {
        let produced = self.produced.get().saturating_add(n as u64);
        self.produced.set(produced);
        let ratio_cap = self.compressed.saturating_mul(self.limits.max_ratio);
        if produced > self.limits.ratio_floor && produced > ratio_cap {
            self.tripped.set(Some(Trip::Ratio));
            return Err(io::Error::other("decompression ratio limit"));
        }
        if produced > self.stream_cap {
            self.tripped.set(Some(Trip::Stream));
            return Err(io::Error::other("unpacked stream limit"));
        }
        Ok(())
    }

    /// The error for an `io::Error` seen while reading: the meter's own reason if it tripped,
    /// else the parser's message as [`ArchiveError::Corrupt`].
    pub(crate) fn io_error(&self, err: io::Error) -> ArchiveError {
        let entry = self.current.borrow().clone();
        match self.tripped.get() {
            Some(Trip::Ratio) => ArchiveError::RatioExceeded {
                entry,
                limit: self.limits.max_ratio,
            },
            Some(Trip::Stream) => ArchiveError::TotalTooLarge {
                entry,
                limit: self.limits.max_total,
            },
            None if entry.is_empty() => ArchiveError::corrupt(err.to_string()),
            None => ArchiveError::corrupt(format!("{entry:?}: {err}")),
        }
    }

    /// Reads one file's contents, refusing it once it passes a limit or its declared size
    /// (reading stops one byte past the nearest bound). `is_document` selects the document
    /// limit instead of the per-file one.
    pub(crate) fn read_file(
        &self,
        reader: &mut dyn Read,
        entry: &str,
        declared: u64,
        is_document: bool,
    ) -> Result<Vec<u8>, ArchiveError> {
        self.set_current(entry);
        let limits = &self.limits;
        let file_limit = if is_document {
            limits.max_document
        } else {
            limits.max_file
        };
        let too_large = || {
            let entry = entry.to_string();
            if is_document {
                ArchiveError::DocumentTooLarge {
                    entry,
                    limit: file_limit,
                }
            } else {
                ArchiveError::FileTooLarge {
                    entry,
                    limit: file_limit,
                }
            }
        };
        // Never allocate on a claim: at most what the limits allow, and at most 1 MiB up front.
        let capacity = declared.min(file_limit).min(MIB) as usize;
        let mut out = Vec::with_capacity(capacity);
        // Read at most one byte past the nearest limit, straight into `out` (no chunk buffer to
        // zero and copy per entry: archives of many small files are the common case).
        // Past the declared size, a little more is read (as much as one 64 KiB chunk did) so
        // that the error can say how much more there was — and no further.
        let room = file_limit
            .min(limits.max_total.saturating_sub(self.content.get()))
            .min(declared.saturating_add(64 * 1024));
        reader
            .take(room.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|e| self.io_error(e))?;
        let got = out.len() as u64;
        if got > file_limit {
            return Err(too_large());
        }
        if self.content.get() + got > limits.max_total {
            return Err(ArchiveError::TotalTooLarge {
                entry: entry.to_string(),
                limit: limits.max_total,
            });
        }
        if got > declared {
            return Err(ArchiveError::SizeMismatch {
                entry: entry.to_string(),
                declared,
                actual: got,
            });
        }
        let actual = out.len() as u64;
        if actual != declared {
            return Err(ArchiveError::SizeMismatch {
                entry: entry.to_string(),
                declared,
                actual,
            });
        }
        self.content.set(self.content.get() + actual);
        Ok(out)
    }
}

/// A reader that reports every byte it yields to a [`Budget`], failing once the ratio or
/// stream limit is passed.
pub(crate) struct Metered<'b, R> {
    inner: R,
    budget: &'b Budget,
}

impl<'b, R: Read> Metered<'b, R> {
    pub(crate) fn new(inner: R, budget: &'b Budget) -> Self {
        Metered { inner, budget }
    }

    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }
}

impl<R: Read> Read for Metered<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.budget.on_produced(n)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> ArchiveLimits {
        ArchiveLimits {
            max_compressed: 100,
            max_total: 50,
            max_file: 30,
            max_document: 10,
            max_entries: 2,
            max_ratio: 4,
            ratio_floor: 20,
        }
    }

    #[test]
    fn archive_size_is_checked_first() {
        assert!(matches!(
            Budget::new(small(), 101),
            Err(ArchiveError::ArchiveTooLarge { limit: 100 })
        ));
        assert!(Budget::new(small(), 100).is_ok());
    }

    #[test]
    fn entries_are_counted() {
        let b = Budget::new(small(), 10).unwrap();
        b.count_entry().unwrap();
        b.count_entry().unwrap();
        assert!(matches!(
            b.count_entry(),
            Err(ArchiveError::TooManyEntries { limit: 2 })
        ));
    }

    #[test]
    fn file_limits_use_bytes_read() {
        let b = Budget::new(small(), 100).unwrap();
        let data = [7u8; 31];
        // The claim (5) is below the limit; the bytes are not.
        let err = b.read_file(&mut &data[..], "a", 5, false).unwrap_err();
        assert!(
            matches!(err, ArchiveError::FileTooLarge { limit: 30, .. }),
            "{err}"
        );
        let err = b
            .read_file(&mut &data[..11], "SKILL.md", 11, true)
            .unwrap_err();
        assert!(
            matches!(err, ArchiveError::DocumentTooLarge { limit: 10, .. }),
            "{err}"
        );
        let err = b.read_file(&mut &data[..8], "a", 5, false).unwrap_err();
        assert!(matches!(
            err,
            ArchiveError::SizeMismatch {
                declared: 5,
                actual: 8,
                ..
            }
        ));
        let err = b.read_file(&mut &data[..3], "a", 5, false).unwrap_err();
        assert!(matches!(
            err,
            ArchiveError::SizeMismatch {
                declared: 5,
                actual: 3,
                ..
            }
        ));
        assert_eq!(
            b.read_file(&mut &data[..30], "a", 30, false).unwrap().len(),
            30
        );
        let err = b.read_file(&mut &data[..30], "b", 30, false).unwrap_err();
        assert!(
            matches!(err, ArchiveError::TotalTooLarge { limit: 50, .. }),
            "{err}"
        );
    }

    #[test]
    fn ratio_trips_after_the_floor() {
        let b = Budget::new(small(), 5).unwrap();
        let data = [0u8; 25];
        let mut m = Metered::new(&data[..], &b);
        let mut out = Vec::new();
        let err = m.read_to_end(&mut out).unwrap_err();
        assert!(matches!(
            b.io_error(err),
            ArchiveError::RatioExceeded { limit: 4, .. }
        ));
        // Below the floor nothing trips, whatever the ratio.
        let b = Budget::new(small(), 1).unwrap();
        let mut m = Metered::new(&data[..20], &b);
        assert_eq!(m.read_to_end(&mut out).unwrap(), 20);
    }
}
