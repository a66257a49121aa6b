//! The on-disk cache of the HTTP source. Blocking: callers run it in `spawn_blocking`.
//!
//! ```text
//! <cache>/CACHEDIR.TAG                        marks the folder as a cache (backup tools skip it)
//! <cache>/.lock                               shared by every user; exclusive only to sweep tmp/
//! <cache>/tmp/                                temp files, renamed into place (same file system)
//! <cache>/index-v1/<sha256(url)>.json         a mutable URL: url (redacted), etag, last_modified,
//!                                             max_age, no_cache, fetched_at, body "sha256:<hex>"
//! <cache>/blobs-v1/sha256/ab/cd/<64 hex>      immutable content, named by its sha256
//! ```
//!
//! - A blob is written only after the caller verified it, through a temp file renamed with
//!   no-clobber: two processes writing the same blob both succeed (same bytes).
//! - A blob is hashed again each time it is read; one that does not match its name is deleted
//!   and reported as absent, so the caller fetches it again.
//! - Every process holds a shared lock on `.lock` while it uses the cache. A process that gets
//!   the lock exclusively (nobody else is using the cache) first removes temp files left by a
//!   killed process.
//! - Blobs are not fsynced: a torn file after a crash fails verification and is fetched again.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::digest::sha256;
use crate::error::{Error, Result};

/// The text `CACHEDIR.TAG` must start with (bford.info/cachedir).
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by skillcat.\n\
# For information about cache directory tags see https://bford.info/cachedir/\n";

/// What the cache remembers about a mutable URL (an index, a v0.1 file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Record {
    /// The URL, credentials and query removed (the file name is the hash of the full URL).
    pub url: String,
    /// The `ETag` the server sent.
    pub etag: Option<String>,
    /// The `Last-Modified` the server sent.
    pub last_modified: Option<String>,
    /// `Cache-Control: max-age`, in seconds.
    pub max_age: Option<u64>,
    /// `Cache-Control: no-cache` (always revalidate).
    pub no_cache: bool,
    /// When the body was fetched or last revalidated, in Unix seconds.
    pub fetched_at: u64,
    /// The body's blob, `sha256:<hex>`.
    pub body: String,
}

/// `Cache-Control` as far as a client cache needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CacheControl {
    pub max_age: Option<u64>,
    pub no_cache: bool,
    pub no_store: bool,
}

/// Reads the directives of a `Cache-Control` value that matter here.
pub(super) fn parse_cache_control(value: &str) -> CacheControl {
    let mut cc = CacheControl::default();
    for part in value.split(',') {
        let part = part.trim();
        let (name, arg) = match part.split_once('=') {
            Some((n, a)) => (n.trim(), Some(a.trim().trim_matches('"'))),
            None => (part, None),
        };
        match name.to_ascii_lowercase().as_str() {
            "max-age" => cc.max_age = arg.and_then(|a| a.parse().ok()),
            "no-cache" => cc.no_cache = true,
            "no-store" => cc.no_store = true,
            _ => {}
        }
    }
    cc
}

/// Whether a record may be used without asking the server, at `now` (Unix seconds).
pub(super) fn is_fresh(rec: &Record, now: u64) -> bool {
    !rec.no_cache
        && rec
            .max_age
            .is_some_and(|max| now.saturating_sub(rec.fetched_at) < max)
}

/// Now, in Unix seconds.
pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An open cache directory, held under a shared lock until dropped.
#[derive(Debug)]
pub(super) struct Cache {
    root: PathBuf,
    _lock: File,
}

/// A blob read back from the cache.
pub(super) enum Read {
    /// Present and verified.
    Hit(Bytes),
    /// Not there.
    Miss,
    /// There but not matching its name: deleted.
    Corrupt,
}

impl Cache {
    /// Opens (creating as needed) the cache at `root` and takes the shared lock.
    pub(super) fn open(root: &Path) -> Result<Cache> {
        let err = |p: &Path, e| Error::io(p.display().to_string(), e);
        for sub in ["tmp", "index-v1", "blobs-v1/sha256"] {
            let p = root.join(sub);
            fs::create_dir_all(&p).map_err(|e| err(&p, e))?;
        }
        let tag = root.join("CACHEDIR.TAG");
        if !tag.exists() {
            write_atomic(root, &tag, CACHEDIR_TAG.as_bytes(), true).map_err(|e| err(&tag, e))?;
        }
        let lock_path = root.join(".lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(|e| err(&lock_path, e))?;
        // Nobody else uses the cache: sweep what a killed process may have left in tmp/.
        if lock.try_lock().is_ok() {
            if let Ok(entries) = fs::read_dir(root.join("tmp")) {
                for e in entries.flatten() {
                    let _ = fs::remove_file(e.path());
                }
            }
            lock.unlock().map_err(|e| err(&lock_path, e))?;
        }
        lock.lock_shared().map_err(|e| err(&lock_path, e))?;
        Ok(Cache {
            root: root.to_path_buf(),
            _lock: lock,
        })
    }

    /// Where the blob with this sha256 lives.
    pub(super) fn blob_path(&self, hash: &[u8; 32]) -> PathBuf {
        blob_path(&self.root, hash)
    }

    /// Reads and verifies a blob.
    pub(super) fn read_blob(&self, hash: &[u8; 32]) -> Result<Read> {
        let path = self.blob_path(hash);
        match fs::read(&path) {
            Ok(bytes) if sha256(&bytes) == *hash => Ok(Read::Hit(Bytes::from(bytes))),
            Ok(_) => {
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(path.display().to_string(), e)),
                }
                Ok(Read::Corrupt)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Read::Miss),
            Err(e) => Err(Error::io(path.display().to_string(), e)),
        }
    }

    /// Stores bytes the caller has verified to hash to `hash`.
    pub(super) fn write_blob(&self, hash: &[u8; 32], bytes: &[u8]) -> Result<()> {
        debug_assert_eq!(sha256(bytes), *hash);
        let path = self.blob_path(hash);
        write_atomic(&self.root, &path, bytes, false)
            .map_err(|e| Error::io(path.display().to_string(), e))
    }

    /// The record of a mutable URL, if one is stored and readable.
    pub(super) fn read_record(&self, url: &str) -> Option<Record> {
        let text = fs::read(self.record_path(url)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Stores (replaces) the record of a mutable URL.
    pub(super) fn write_record(&self, url: &str, rec: &Record) -> Result<()> {
        let path = self.record_path(url);
        let json = serde_json::to_vec_pretty(rec).expect("a record always serialises");
        write_atomic(&self.root, &path, &json, true)
            .map_err(|e| Error::io(path.display().to_string(), e))
    }

    fn record_path(&self, url: &str) -> PathBuf {
        self.root
            .join("index-v1")
            .join(format!("{}.json", hex::encode(sha256(url.as_bytes()))))
    }
}

/// `<root>/blobs-v1/sha256/ab/cd/<hex>`.
pub(super) fn blob_path(root: &Path, hash: &[u8; 32]) -> PathBuf {
    let hex = hex::encode(hash);
    root.join("blobs-v1")
        .join("sha256")
        .join(&hex[0..2])
        .join(&hex[2..4])
        .join(hex)
}

/// Writes `bytes` to a temp file in `<root>/tmp/` and renames it to `dest`: replacing what is
/// there when `replace`, else leaving an existing file (same content) alone.
fn write_atomic(root: &Path, dest: &Path, bytes: &[u8], replace: bool) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix("part-")
        .tempfile_in(root.join("tmp"))?;
    tmp.write_all(bytes)?;
    // The fan-out folders are made on first need (most renames find them already there).
    let tmp = match dest.parent() {
        Some(parent) if !parent.as_os_str().is_empty() && !parent.is_dir() => {
            fs::create_dir_all(parent)?;
            tmp
        }
        _ => tmp,
    };
    if replace {
        tmp.persist(dest).map_err(|e| e.error)?;
    } else {
        match tmp.persist_noclobber(dest) {
            Ok(_) => {}
            // Another process stored the same content first.
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e.error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_control_and_freshness() {
        let cc = parse_cache_control("public, max-age=60");
        assert_eq!(cc.max_age, Some(60));
        assert!(!cc.no_cache);
        let cc = parse_cache_control("no-cache, NO-STORE");
        assert!(cc.no_cache && cc.no_store);
        let mut rec = Record {
            url: "u".into(),
            etag: None,
            last_modified: None,
            max_age: Some(60),
            no_cache: false,
            fetched_at: 1000,
            body: String::new(),
        };
        assert!(is_fresh(&rec, 1059));
        assert!(!is_fresh(&rec, 1060));
        rec.no_cache = true;
        assert!(!is_fresh(&rec, 1000));
        rec.no_cache = false;
        rec.max_age = None;
        assert!(!is_fresh(&rec, 1000));
    }

    #[test]
    fn blobs_are_verified_on_read_and_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        assert!(dir.path().join("CACHEDIR.TAG").is_file());
        let hash = sha256(b"hello");
        assert!(matches!(cache.read_blob(&hash).unwrap(), Read::Miss));
        cache.write_blob(&hash, b"hello").unwrap();
        cache.write_blob(&hash, b"hello").unwrap();
        assert!(matches!(cache.read_blob(&hash).unwrap(), Read::Hit(b) if &b[..] == b"hello"));
        let path = cache.blob_path(&hash);
        let hex = hex::encode(hash);
        assert!(path.ends_with(format!(
            "blobs-v1/sha256/{}/{}/{hex}",
            &hex[..2],
            &hex[2..4]
        )));
        fs::write(&path, b"hellO").unwrap();
        assert!(matches!(cache.read_blob(&hash).unwrap(), Read::Corrupt));
        assert!(!path.exists(), "a corrupt entry is deleted");
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn records_round_trip_and_stale_temp_files_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("tmp")).unwrap();
        fs::write(dir.path().join("tmp/part-left-behind"), b"x").unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
        let rec = Record {
            url: "http://h/i.json".into(),
            etag: Some("\"e\"".into()),
            last_modified: None,
            max_age: None,
            no_cache: true,
            fetched_at: 5,
            body: crate::digest::sha256_digest(b"{}"),
        };
        assert!(cache.read_record("http://h/i.json").is_none());
        cache.write_record("http://h/i.json", &rec).unwrap();
        assert_eq!(cache.read_record("http://h/i.json"), Some(rec));
        // A second user of the cache does not sweep while the first holds its shared lock.
        fs::write(dir.path().join("tmp/part-in-use"), b"x").unwrap();
        let _second = Cache::open(dir.path()).unwrap();
        assert!(dir.path().join("tmp/part-in-use").exists());
    }
}
