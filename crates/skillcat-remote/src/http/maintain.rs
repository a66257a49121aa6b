//! Looking after a cache folder: what it holds ([`cache_info`]) and removing what no cached
//! index needs any more ([`clean_cache`]). Blocking; the command line runs it off the runtime.
//!
//! ```text
//! referenced = every index-v1 record's body
//!            ∪ every "sha256:<hex>" (or 64-hex "sha256" value) inside a body that is JSON
//! clean      = exclusive lock on <cache>/.lock (waits for every reader and writer to finish)
//!              → tmp/*, blobs-v3 files not referenced (or not named like a blob),
//!                records that are unreadable or whose body is gone, older layouts
//!                (blobs-v1/, blobs-v2/)
//! clean all  = the same lock → every record, blob and temp file
//! ```
//!
//! Why it is safe with other processes: every user of the cache holds a shared lock on `.lock`
//! for as long as it has the cache open, and blobs become visible only whole (linked or renamed
//! into place), so under the exclusive lock nothing is half written and nobody is reading. A
//! process that starts meanwhile waits for the shared lock until the clean is done. The set of
//! references is read from the bodies themselves, generously: anything that looks like a
//! digest keeps its blob.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::cache::{self, Record};
use crate::digest::{parse_digest, sha256};
use crate::error::{Error, Result};

/// What a cache folder holds ([`cache_info`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheInfo {
    /// The folder.
    #[serde(rename = "cache", serialize_with = "shown")]
    pub dir: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// Index records (one per URL an index or v0.1 file was read from).
    pub records: u64,
    /// Blobs, and their bytes.
    pub blobs: u64,
    /// Bytes of all blobs.
    pub blob_bytes: u64,
    /// Of the blobs, those no cached index refers to (what `clean` removes), and their bytes.
    pub unreferenced: u64,
    /// Bytes of the unreferenced blobs.
    pub unreferenced_bytes: u64,
    /// Files of older cache layouts and left-over temp files, and their bytes.
    pub stale_files: u64,
    /// Bytes of those.
    pub stale_bytes: u64,
}

/// What [`clean_cache`] removed and kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CleanReport {
    /// The folder.
    #[serde(rename = "cache", serialize_with = "shown")]
    pub dir: PathBuf,
    /// Blobs removed, and their bytes.
    pub removed_blobs: u64,
    /// Bytes of the blobs removed.
    pub removed_bytes: u64,
    /// Index records removed.
    pub removed_records: u64,
    /// Temp files and files of older layouts removed, and their bytes.
    pub removed_stale: u64,
    /// Bytes of those.
    pub removed_stale_bytes: u64,
    /// Blobs kept, and their bytes.
    pub kept_blobs: u64,
    /// Bytes of the blobs kept.
    pub kept_bytes: u64,
}

/// What people read: where the cache is and what it holds, a line each.
impl std::fmt::Display for CacheInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = self.dir.display();
        if !self.exists {
            return write!(f, "cache: {dir} (empty: not created yet)");
        }
        write!(
            f,
            "cache: {dir}\n\
             index records: {}\n\
             blobs: {} ({} bytes)\n\
             unreferenced: {} ({} bytes; `skillcat cache clean` removes them)\n\
             stale files: {} ({} bytes; temp files and older layouts)",
            self.records,
            self.blobs,
            self.blob_bytes,
            self.unreferenced,
            self.unreferenced_bytes,
            self.stale_files,
            self.stale_bytes,
        )
    }
}

/// What people read: what was removed and what was kept.
impl std::fmt::Display for CleanReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Removed {} blobs ({} bytes), {} index records and {} stale files ({} bytes) \
             from {}; kept {} blobs ({} bytes)",
            self.removed_blobs,
            self.removed_bytes,
            self.removed_records,
            self.removed_stale,
            self.removed_stale_bytes,
            self.dir.display(),
            self.kept_blobs,
            self.kept_bytes,
        )
    }
}

/// A folder as people read it (the JSON of [`CacheInfo`] and [`CleanReport`]).
fn shown<S: serde::Serializer>(dir: &Path, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(&dir.display())
}

/// Counts what the cache at `dir` holds (under the shared lock, like any reader).
pub fn cache_info(dir: &Path) -> Result<CacheInfo> {
    let mut info = CacheInfo {
        dir: dir.to_path_buf(),
        ..CacheInfo::default()
    };
    if !dir.is_dir() {
        return Ok(info);
    }
    info.exists = true;
    let _lock = lock(dir, false, || {})?;
    let (records, referenced) = references(dir)?;
    info.records = records.len() as u64;
    for (hex, size) in blob_files(dir)? {
        info.blobs += 1;
        info.blob_bytes += size;
        if !referenced.contains(&hex) {
            info.unreferenced += 1;
            info.unreferenced_bytes += size;
        }
    }
    for (_, size) in stale_files(dir)?.into_iter().chain(odd_blob_files(dir)?) {
        info.stale_files += 1;
        info.stale_bytes += size;
    }
    Ok(info)
}

/// Removes what no cached index refers to (every record and blob too when `all`), under the
/// cache's exclusive lock. `waiting` is called once when other processes hold the cache and
/// the clean must wait for them. A folder that does not exist is left alone.
pub fn clean_cache(dir: &Path, all: bool, waiting: impl FnOnce()) -> Result<CleanReport> {
    let mut report = CleanReport {
        dir: dir.to_path_buf(),
        ..CleanReport::default()
    };
    if !dir.is_dir() {
        return Ok(report);
    }
    let _lock = lock(dir, true, waiting)?;
    let (records, referenced) = if all {
        let records = records(dir)?
            .into_iter()
            .map(|(path, _)| (path, None))
            .collect();
        (records, HashSet::new())
    } else {
        references(dir)?
    };
    for (path, rec) in records {
        // Kept: a readable record whose body is still there. Gone: the rest (or all).
        let keep = !all && rec.is_some();
        if !keep {
            remove(&path)?;
            report.removed_records += 1;
        }
    }
    for (hex, size) in blob_files(dir)? {
        if !all && referenced.contains(&hex) {
            report.kept_blobs += 1;
            report.kept_bytes += size;
            continue;
        }
        remove(&blob_file(dir, &hex))?;
        report.removed_blobs += 1;
        report.removed_bytes += size;
    }
    // Files in the blob folders not named like a blob (nothing skillcat writes).
    for (path, size) in odd_blob_files(dir)? {
        remove(&path)?;
        report.removed_stale += 1;
        report.removed_stale_bytes += size;
    }
    for (path, size) in stale_files(dir)? {
        remove(&path)?;
        report.removed_stale += 1;
        report.removed_stale_bytes += size;
    }
    for old in old_layouts(dir)? {
        fs::remove_dir_all(&old).map_err(|e| io_err(&old, e))?;
    }
    Ok(report)
}

/// Holds the cache lock: shared like any reader, or exclusive for a clean (calling `waiting`
/// first when someone else holds it).
fn lock(dir: &Path, exclusive: bool, waiting: impl FnOnce()) -> Result<fs::File> {
    let path = dir.join(".lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| io_err(&path, e))?;
    if exclusive {
        if file.try_lock().is_err() {
            waiting();
            file.lock().map_err(|e| io_err(&path, e))?;
        }
    } else {
        file.lock_shared().map_err(|e| io_err(&path, e))?;
    }
    Ok(file)
}

/// Every record file with its record (`None`: unreadable, or its body blob is gone), and the
/// hex digests every readable record refers to.
#[allow(clippy::type_complexity)]
fn references(dir: &Path) -> Result<(Vec<(PathBuf, Option<Record>)>, HashSet<String>)> {
    let mut referenced = HashSet::new();
    let mut out = Vec::new();
    for (path, rec) in records(dir)? {
        let body = rec
            .as_ref()
            .and_then(|r| parse_digest(&r.body))
            .and_then(|h| {
                let bytes = fs::read(blob_file(dir, &crate::digest::to_hex(h))).ok()?;
                (sha256(&bytes) == h).then_some((h, bytes))
            });
        let Some((hash, bytes)) = body else {
            out.push((path, None));
            continue;
        };
        referenced.insert(crate::digest::to_hex(hash));
        if let Ok(json) = serde_json::from_slice::<Value>(&bytes) {
            collect_digests(&json, &mut referenced);
        }
        out.push((path, rec));
    }
    Ok((out, referenced))
}

/// Every `index-v1/*.json` with its parsed record.
fn records(dir: &Path) -> Result<Vec<(PathBuf, Option<Record>)>> {
    let index = dir.join("index-v1");
    let mut out = Vec::new();
    for path in entries(&index)? {
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            let rec = fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            out.push((path, rec));
        }
    }
    Ok(out)
}

/// Every digest-like string in a JSON document: `sha256:<64 hex>` anywhere, and a bare 64-hex
/// value under a `sha256` key (an index variant seen in the wild). Generous on purpose: a
/// false match only keeps a blob.
fn collect_digests(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::String(s) => {
            if let Some(h) = parse_digest(s) {
                out.insert(crate::digest::to_hex(h));
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_digests(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                if let (true, Value::String(s)) = (k == "sha256", v)
                    && is_hex64(s)
                {
                    out.insert(s.to_ascii_lowercase());
                }
                collect_digests(v, out);
            }
        }
        _ => {}
    }
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn blob_file(dir: &Path, hex: &str) -> PathBuf {
    dir.join(cache::BLOBS).join(hex)
}

/// Every blob (a file named by its lowercase hex digest): its hex name and size.
fn blob_files(dir: &Path) -> Result<Vec<(String, u64)>> {
    Ok(files_in_blobs(dir)?
        .into_iter()
        .filter_map(|(path, size)| blob_name(&path).map(|h| (h.to_string(), size)))
        .collect())
}

/// Files in the blob folders not named like a blob.
fn odd_blob_files(dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    Ok(files_in_blobs(dir)?
        .into_iter()
        .filter(|(path, _)| blob_name(path).is_none())
        .collect())
}

/// The hex name of a blob file, when it is one.
fn blob_name(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let lower_hex =
        name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    lower_hex.then_some(name)
}

/// Every file in the blob folder, with its size (folders there are not blobs: left alone).
fn files_in_blobs(dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    for path in entries(&dir.join(cache::BLOBS))? {
        if let Ok(meta) = fs::symlink_metadata(&path)
            && meta.is_file()
        {
            out.push((path, meta.len()));
        }
    }
    Ok(out)
}

/// Temp files in `tmp/` and every file under an older layout (`blobs-v1/`, and any other
/// `blobs-vN/`/`index-vN/` this version does not use).
fn stale_files(dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = old_layouts(dir)?;
    stack.push(dir.join("tmp"));
    while let Some(d) = stack.pop() {
        for path in entries(&d)? {
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => stack.push(path),
                Ok(m) => out.push((path, m.len())),
                Err(_) => {}
            }
        }
    }
    Ok(out)
}

/// Folders of layouts this version does not use.
fn old_layouts(dir: &Path) -> Result<Vec<PathBuf>> {
    let current = cache::BLOBS.split('/').next().unwrap_or_default();
    Ok(entries(dir)?
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let versioned = ["blobs-v", "index-v"].iter().any(|pre| {
                name.strip_prefix(pre)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            });
            versioned && name != current && name != "index-v1" && p.is_dir()
        })
        .collect())
}

/// The entries of a folder (none when it does not exist).
fn entries(dir: &Path) -> Result<Vec<PathBuf>> {
    match fs::read_dir(dir) {
        Ok(rd) => Ok(rd.flatten().map(|e| e.path()).collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_err(dir, e)),
    }
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path, e)),
    }
}

fn io_err(path: &Path, e: io::Error) -> Error {
    Error::io(path.display().to_string(), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_collected_generously() {
        let d = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let json = serde_json::json!({
            "skills": [
                {"digest": d('a'), "skillcat": {"files": [{"digest": d('b')}]}},
                {"sha256": "C".repeat(64)},
                {"digest": "sha256:short", "note": "x"}
            ]
        });
        let mut out = HashSet::new();
        collect_digests(&json, &mut out);
        let mut got: Vec<_> = out.into_iter().collect();
        got.sort();
        assert_eq!(got, ["a".repeat(64), "b".repeat(64), "c".repeat(64)]);
    }

    #[test]
    fn a_cache_report_serializes_its_folder_first_as_cache() {
        let info = CacheInfo {
            dir: PathBuf::from("/c"),
            records: 2,
            ..CacheInfo::default()
        };
        let json = serde_json::to_string(&info).unwrap();
        assert!(
            json.starts_with(r#"{"cache":"/c","exists":false,"records":2,"#),
            "{json}"
        );
        assert_eq!(info.to_string(), "cache: /c (empty: not created yet)");
        let clean = serde_json::to_value(CleanReport::default()).unwrap();
        assert_eq!(clean["kept_bytes"], 0);
        let said = CleanReport {
            dir: PathBuf::from("/c"),
            removed_blobs: 1,
            ..CleanReport::default()
        };
        assert!(
            said.to_string()
                .starts_with("Removed 1 blobs (0 bytes), 0 index records")
        );
    }
}
