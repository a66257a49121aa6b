//! The on-disk cache of the HTTP source. Blocking: callers run it in `spawn_blocking`.
//!
//! ```text
//! <cache>/CACHEDIR.TAG                        marks the folder as a cache (backup tools skip it)
//! <cache>/.lock                               shared by every user; exclusive to sweep tmp/ or
//!                                             to clean (see `maintain`)
//! <cache>/tmp/                                named temp files (fallback writes, records)
//! <cache>/index-v1/<sha256(url)>.json         a mutable URL: url (redacted), etag, last_modified,
//!                                             max_age, no_cache, fetched_at, body "sha256:<hex>"
//! <cache>/blobs-v3/sha256/<64 hex>            immutable content, named by its sha256
//! ```
//!
//! - A blob is written only after the caller verified it. On Linux it goes to an unnamed file
//!   in its own folder (`O_TMPFILE`) linked in once whole; elsewhere through a temp file in
//!   `tmp/` renamed with no-clobber. Either way two processes writing the same blob both
//!   succeed (same bytes) and a partial blob is never visible.
//! - Blobs share one folder (no `ab/` fan-out): every directory index in use today (ext4
//!   htree, XFS, btrfs, APFS, NTFS) looks names up in a large folder without scanning it, while
//!   fan-out folders cost. Measured on ext4: `blobs-v1/ab/cd/` made ~1,250 folders per 1,000
//!   blobs and dominated a cold fetch; `blobs-v2/ab/` still spread the blobs of one fetch over
//!   256 folders the allocator places in different block groups, and a cold fetch of 1,000
//!   skills took 250–390 ms where `curl --parallel` writing the same files into one folder
//!   took 60 ms.
//! - A blob is hashed again each time it is read; one that does not match its name is deleted
//!   and reported as absent, so the caller fetches it again.
//! - Every process holds a shared lock on `.lock` while it uses the cache. A process that gets
//!   the lock exclusively (nobody else is using the cache) first removes temp files left by a
//!   killed process.
//! - Nothing is fsynced: a blob torn by a crash fails verification and is fetched again, a torn
//!   record does not parse and counts as absent. A cache can always be refilled.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use skillcat_core::fs::{AtomicWrite, Durability};

use super::options::Freshness;
use crate::digest::sha256;
use crate::error::{Error, Result};

/// The text `CACHEDIR.TAG` must start with (bford.info/cachedir).
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by skillcat.\n\
# For information about cache directory tags see https://bford.info/cachedir/\n";

/// What the cache remembers about a mutable URL (an index, a v0.1 file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
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
    /// The URL that answered, after redirects, credentials removed, when it was not `url`:
    /// what the body's relative references resolve against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_url: Option<String>,
}

/// `Cache-Control` as far as a client cache needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheControl {
    pub max_age: Option<u64>,
    pub no_cache: bool,
    pub no_store: bool,
}

/// Reads the directives of a `Cache-Control` value that matter here.
pub(crate) fn parse_cache_control(value: &str) -> CacheControl {
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

/// Whether a record may be used without asking the server, at `now` (Unix seconds), under
/// `policy`: never when it asks to revalidate; else while younger than both the server's
/// `max-age` and the policy's cap. A record from the future (the clock went back, or the record
/// was written by hand) is not fresh: its age is unknown.
pub(crate) fn is_fresh(rec: &Record, now: u64, policy: Freshness) -> bool {
    if policy.revalidate || rec.no_cache || rec.fetched_at > now {
        return false;
    }
    let cap = policy.max_age_cap.as_secs();
    rec.max_age
        .is_some_and(|max| now - rec.fetched_at < max.min(cap))
}

/// A duration in seconds for people: `45 s`, `12 min`, `5 h`, `3 days`.
pub(crate) fn age(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7_200 => format!("{} min", secs / 60),
        7_200..172_800 => format!("{} h", secs / 3_600),
        _ => format!("{} days", secs / 86_400),
    }
}

/// Now, in Unix seconds.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a remote source says when it has no cache directory.
pub(crate) const NO_CACHE_DIR: &str =
    "no cache directory (set --cache, XDG_CACHE_HOME or HOME): nothing is kept";

/// Opens the cache at `dir` off the async runtime; `Ok(None)` when there is no directory, after
/// `warn` was given [`NO_CACHE_DIR`].
pub(crate) async fn open_off_runtime(
    dir: Option<PathBuf>,
    warn: impl FnOnce(String),
) -> Result<Option<std::sync::Arc<Cache>>> {
    let Some(dir) = dir else {
        warn(NO_CACHE_DIR.into());
        return Ok(None);
    };
    tokio::task::spawn_blocking(move || Cache::open(&dir))
        .await
        .map_err(|e| Error::task("opening the cache", e))?
        .map(|c| Some(std::sync::Arc::new(c)))
}

/// An open cache directory, held under a shared lock until dropped.
#[derive(Debug)]
pub(crate) struct Cache {
    root: PathBuf,
    _lock: File,
}

/// A blob read back from the cache.
pub(crate) enum Read {
    /// Present and verified.
    Hit(Bytes),
    /// Not there.
    Miss,
    /// There but not matching its name: deleted.
    Corrupt,
}

impl Cache {
    /// Opens (creating as needed) the cache at `root` and takes the shared lock.
    pub(crate) fn open(root: &Path) -> Result<Cache> {
        let err = |p: &Path, e| Error::io(p.display().to_string(), e);
        for sub in ["tmp", "index-v1", BLOBS] {
            let p = root.join(sub);
            private_dirs(&p).map_err(|e| err(&p, e))?;
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
        // Only under the shared lock: a process sweeping tmp/ (exclusively) would otherwise
        // remove the tag's temp file before it is renamed.
        let tag = root.join("CACHEDIR.TAG");
        if !tag.exists() {
            write_atomic(root, &tag, CACHEDIR_TAG.as_bytes(), true).map_err(|e| err(&tag, e))?;
        }
        Ok(Cache {
            root: root.to_path_buf(),
            _lock: lock,
        })
    }

    /// Where the blob with this sha256 lives.
    pub(crate) fn blob_path(&self, hash: &[u8; 32]) -> PathBuf {
        blob_path(&self.root, hash)
    }

    /// Reads and verifies a blob.
    pub(crate) fn read_blob(&self, hash: &[u8; 32]) -> Result<Read> {
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

    /// Whether a file is stored under this sha256 (not read, not verified).
    pub(crate) fn has_blob(&self, hash: &[u8; 32]) -> bool {
        fs::symlink_metadata(self.blob_path(hash)).is_ok()
    }

    /// Stores bytes the caller has verified to hash to `hash`.
    pub(crate) fn write_blob(&self, hash: &[u8; 32], bytes: &[u8]) -> Result<()> {
        debug_assert_eq!(sha256(bytes), *hash);
        let path = self.blob_path(hash);
        store_blob(&self.root, &path, bytes).map_err(|e| Error::io(path.display().to_string(), e))
    }

    /// The record of a mutable URL, if one is stored and readable.
    pub(crate) fn read_record(&self, url: &str) -> Option<Record> {
        let text = fs::read(self.record_path(url)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Stores (replaces) the record of a mutable URL.
    pub(crate) fn write_record(&self, url: &str, rec: &Record) -> Result<()> {
        let path = self.record_path(url);
        let json = serde_json::to_vec_pretty(rec).expect("a record always serialises");
        write_atomic(&self.root, &path, &json, true)
            .map_err(|e| Error::io(path.display().to_string(), e))
    }

    /// The highest index statement version seen for `catalog`, when one was stored.
    pub(crate) fn read_highest(&self, catalog: &str) -> Option<u64> {
        fs::read_to_string(self.highest_path(catalog))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Stores the highest index statement version seen for `catalog`.
    pub(crate) fn write_highest(&self, catalog: &str, version: u64) -> Result<()> {
        let path = self.highest_path(catalog);
        write_atomic(&self.root, &path, version.to_string().as_bytes(), true)
            .map_err(|e| Error::io(path.display().to_string(), e))
    }

    /// Beside the index records (not a `.json`: cleaning the cache keeps it, so forgetting the
    /// index does not forget how far it had gone).
    fn highest_path(&self, catalog: &str) -> PathBuf {
        let key = format!("index-statement-version:{catalog}");
        self.root.join("index-v1").join(format!(
            "{}.version",
            crate::digest::to_hex(sha256(key.as_bytes()))
        ))
    }

    fn record_path(&self, url: &str) -> PathBuf {
        self.root.join("index-v1").join(format!(
            "{}.json",
            crate::digest::to_hex(sha256(url.as_bytes()))
        ))
    }
}

/// `<root>/blobs-v3/sha256/<hex>`.
pub(crate) fn blob_path(root: &Path, hash: &[u8; 32]) -> PathBuf {
    root.join(BLOBS).join(crate::digest::to_hex(hash))
}

/// Makes `dir` and its missing parents closed to others (0700 at most, whatever the umask): a
/// cache another user could write in would let them plant an index the client then trusts.
pub(crate) fn private_dirs(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir)
}

/// Where blobs live under the cache root (the version is in the name).
pub(crate) const BLOBS: &str = "blobs-v3/sha256";

/// Stores a verified blob at `dest` without ever making a partial file visible, and without
/// replacing an existing one (same name, same content). On Linux the bytes go to an unnamed
/// file in the destination folder (`O_TMPFILE`) that is linked into place once whole: nothing
/// is left behind if the process dies, and no rename locks two folders. Elsewhere, or where
/// the file system lacks `O_TMPFILE`, a named temp file in `tmp/` is renamed into place.
fn store_blob(root: &Path, dest: &Path, bytes: &[u8]) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if unnamed::store(dest, bytes)? {
        return Ok(());
    }
    write_atomic(root, dest, bytes, false)
}

#[cfg(target_os = "linux")]
mod unnamed {
    use std::ffi::CString;
    use std::fs;
    use std::io::{self, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::Path;

    /// Writes `bytes` to an unnamed file in `dest`'s folder and links it in as `dest`.
    /// `Ok(false)`: this file system (or a missing `/proc`) cannot; use the fallback.
    pub(crate) fn store(dest: &Path, bytes: &[u8]) -> io::Result<bool> {
        let dir = dest.parent().expect("a blob path has a folder");
        let open = || {
            fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_TMPFILE)
                .mode(0o644)
                .open(dir)
        };
        let mut file = match open() {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                super::private_dirs(dir)?;
                open()?
            }
            Err(e) if unsupported(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        file.write_all(bytes)?;
        let (Ok(from), Ok(to)) = (
            CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())),
            CString::new(dest.as_os_str().as_bytes()),
        ) else {
            return Ok(false);
        };
        // SAFETY: both arguments are NUL-terminated strings that live across the call, which
        // only reads them; the descriptor named by `from` stays open until `file` drops.
        let rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        match io::Error::last_os_error() {
            // Another process stored the same content first.
            e if e.kind() == io::ErrorKind::AlreadyExists => Ok(true),
            // No /proc, or links refused here: the named fallback still works.
            e if e.kind() == io::ErrorKind::NotFound || unsupported(&e) => Ok(false),
            e => Err(e),
        }
    }

    fn unsupported(e: &io::Error) -> bool {
        matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::EXDEV | libc::EPERM)
        )
    }
}

/// Writes `bytes` to a temp file in `<root>/tmp/` (swept when nobody holds the cache) and
/// renames it to `dest`: replacing what is there when `replace`, else leaving an existing file
/// (same content) alone. Not synced: every blob is verified against its digest when read, and
/// fetched again when it does not match.
fn write_atomic(root: &Path, dest: &Path, bytes: &[u8], replace: bool) -> io::Result<()> {
    // 0600, as the cache's other temp files: the folders are private anyway.
    let mut write = AtomicWrite::new(0o600)
        .durability(Durability::Unsynced)
        .temp_in(root.join("tmp"));
    if !replace {
        write = write.keep_existing();
    }
    let written = match write.write(dest, bytes) {
        // The folder is gone (removed by hand meanwhile): made again, then once more.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dest.parent() {
                private_dirs(parent)?;
            }
            write.write(dest, bytes)
        }
        other => other,
    };
    match written {
        // Another process stored the same content first.
        Err(e) if !replace && e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_well() {
        assert_eq!(age(0), "0 s");
        assert_eq!(age(119), "119 s");
        assert_eq!(age(120), "2 min");
        assert_eq!(age(7_199), "119 min");
        assert_eq!(age(7_200), "2 h");
        assert_eq!(age(172_800), "2 days");
    }

    #[test]
    fn cache_control_and_freshness() {
        let cc = parse_cache_control("public, max-age=60");
        assert_eq!(cc.max_age, Some(60));
        assert!(!cc.no_cache);
        let cc = parse_cache_control("no-cache, NO-STORE");
        assert!(cc.no_cache && cc.no_store);
        let mut rec = Record {
            final_url: None,
            url: "u".into(),
            etag: None,
            last_modified: None,
            max_age: Some(60),
            no_cache: false,
            fetched_at: 1000,
            body: String::new(),
        };
        let read = Freshness::default();
        assert!(is_fresh(&rec, 1059, read));
        assert!(!is_fresh(&rec, 1060, read));
        rec.no_cache = true;
        assert!(!is_fresh(&rec, 1000, read));
        rec.no_cache = false;
        rec.max_age = None;
        assert!(!is_fresh(&rec, 1000, read));
    }

    #[test]
    fn max_age_is_honoured_only_up_to_the_cap_and_never_when_revalidating() {
        // Hostile table: what a server (or anyone on the path) can send, and the answer.
        let rec = |max_age: Option<u64>, no_cache: bool, fetched_at: u64| Record {
            final_url: None,
            url: "u".into(),
            etag: None,
            last_modified: None,
            max_age,
            no_cache,
            fetched_at,
            body: String::new(),
        };
        let cap = |secs: u64| Freshness {
            revalidate: false,
            max_age_cap: std::time::Duration::from_secs(secs),
        };
        let mutating = Freshness {
            revalidate: true,
            ..Freshness::default()
        };
        let ten_years = Some(315_360_000);
        let cases: &[(&str, Record, u64, Freshness, bool)] = &[
            (
                "ten years, just fetched, read-only",
                rec(ten_years, false, 1_000),
                1_000,
                cap(3_600),
                true,
            ),
            (
                "ten years, 59 min later",
                rec(ten_years, false, 1_000),
                1_000 + 3_599,
                cap(3_600),
                true,
            ),
            (
                "ten years, an hour later: the cap",
                rec(ten_years, false, 1_000),
                1_000 + 3_600,
                cap(3_600),
                false,
            ),
            (
                "ten years, a cap of 0",
                rec(ten_years, false, 1_000),
                1_000,
                cap(0),
                false,
            ),
            (
                "a short max-age under the cap",
                rec(Some(60), false, 1_000),
                1_060,
                cap(3_600),
                false,
            ),
            (
                "ten years, a project-changing command",
                rec(ten_years, false, 1_000),
                1_000,
                mutating,
                false,
            ),
            (
                "u64::MAX max-age",
                rec(Some(u64::MAX), false, 0),
                3_600,
                cap(3_600),
                false,
            ),
            (
                "fetched in the future",
                rec(ten_years, false, 5_000),
                1_000,
                cap(3_600),
                false,
            ),
            (
                "no-cache with ten years",
                rec(ten_years, true, 1_000),
                1_000,
                cap(3_600),
                false,
            ),
        ];
        for (what, r, now, policy, want) in cases {
            assert_eq!(is_fresh(r, *now, *policy), *want, "{what}");
        }
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
        let hex = crate::digest::to_hex(hash);
        assert!(path.ends_with(format!("blobs-v3/sha256/{hex}")));
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
            final_url: None,
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
