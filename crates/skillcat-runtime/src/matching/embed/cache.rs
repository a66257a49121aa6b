//! Embeddings kept on disk, so that each text is sent to a provider once.
//!
//! ```text
//! ROOT/
//! └── 3f9a…(32 hex: sha256 of the space id)/   one directory per vector space
//!     ├── SPACE                                 the space id, for people
//!     ├── 0000018f2c…-0000a1b2-0000.vec         one segment per provider batch, never rewritten
//!     └── …
//!
//! segment = "SKCVEC1\n" record*
//! record  = key (32 bytes: sha256(space_id 0x00 text)) dims (u32 LE) dims × f32 LE
//! ```
//!
//! A segment is written to a temporary name and renamed into place, so a reader sees whole
//! segments or none; writers in several processes never touch each other's files. When a space
//! holds more than [`COMPACT_ABOVE`] segments, loading merges them into one. A segment that does
//! not parse is skipped and counted ([`CacheStats::bad_segments`]); its texts are embedded again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use skillcat_core::fs::{AtomicWrite, Durability};

use super::{EmbedError, Embedder, MAX_BATCH, check_batch};

/// Segments in one space above which loading merges them.
pub const COMPACT_ABOVE: usize = 64;

const MAGIC: &[u8; 8] = b"SKCVEC1\n";

/// The largest vector a segment may claim (anything larger is corruption).
const MAX_DIMS: usize = 1 << 16;

type Key = [u8; 32];

/// What a [`Cached`] embedder has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Texts answered from the cache (a text repeated within one call counts once as a miss,
    /// then as hits).
    pub hits: u64,
    /// Distinct texts sent to the provider.
    pub misses: u64,
    /// Requests made to the provider.
    pub batches: u64,
    /// Segments that could not be read and were skipped.
    pub bad_segments: u64,
}

/// An [`Embedder`] that keeps every vector of its inner embedder on disk, keyed by
/// `sha256(space_id 0x00 text)` (see the [module docs](crate::matching)). Only texts not yet cached go to
/// the inner embedder, at most [`MAX_BATCH`] per call.
#[derive(Debug)]
pub struct Cached<E> {
    inner: E,
    space_id: String,
    dir: PathBuf,
    store: tokio::sync::Mutex<Option<HashMap<Key, Vec<f32>>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    batches: AtomicU64,
    bad_segments: AtomicU64,
    written: AtomicU64,
}

impl<E: Embedder> Cached<E> {
    /// Caches `inner`'s vectors under `root` (a directory, created when first written).
    pub fn new(inner: E, root: impl Into<PathBuf>) -> Self {
        let space_id = inner.space_id();
        let digest = crate::digest::to_hex(Sha256::digest(space_id.as_bytes()));
        Cached {
            dir: root.into().join(&digest[..32]),
            inner,
            space_id,
            store: tokio::sync::Mutex::new(None),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            bad_segments: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }

    /// The directory of this embedder's vector space.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The wrapped embedder.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Counts so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            bad_segments: self.bad_segments.load(Ordering::Relaxed),
        }
    }

    /// The cache key of `text` in this space, as hex.
    pub fn key_hex(&self, text: &str) -> String {
        crate::digest::to_hex(key(&self.space_id, text))
    }

    async fn load(&self) -> Result<HashMap<Key, Vec<f32>>, EmbedError> {
        let mut map = HashMap::new();
        let mut entries = match tokio::fs::read_dir(&self.dir).await {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(map),
            Err(e) => return Err(cache_error(&self.dir, e)),
        };
        let mut segments = Vec::new();
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|e| cache_error(&self.dir, e))?
        {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".vec") && !name.starts_with('.') {
                segments.push(entry.path());
            }
        }
        segments.sort();
        for path in &segments {
            let bytes = match tokio::fs::read(path).await {
                Ok(b) => b,
                // Removed by a compaction in another process since the listing.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(cache_error(path, e)),
            };
            match parse_segment(&bytes) {
                Some(records) => map.extend(records),
                None => {
                    self.bad_segments.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if segments.len() > COMPACT_ABOVE && !map.is_empty() {
            let entries: Vec<(&Key, &Vec<f32>)> = map.iter().collect();
            self.write_segment(&entries).await?;
            for path in &segments {
                match tokio::fs::remove_file(path).await {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(cache_error(path, e)),
                }
            }
        }
        Ok(map)
    }

    /// Writes one segment: a temporary file renamed into place.
    async fn write_segment(&self, records: &[(&Key, &Vec<f32>)]) -> Result<(), EmbedError> {
        // Closed to others whatever the umask: vectors planted by another user would steer
        // which skill matches.
        let mut dirs = tokio::fs::DirBuilder::new();
        dirs.recursive(true);
        #[cfg(unix)]
        dirs.mode(0o700);
        dirs.create(&self.dir)
            .await
            .map_err(|e| cache_error(&self.dir, e))?;
        let space = self.dir.join("SPACE");
        if tokio::fs::metadata(&space).await.is_err() {
            write_then_rename(space, self.space_id.as_bytes().to_vec()).await?;
        }
        let mut bytes = Vec::with_capacity(
            MAGIC.len() + records.iter().map(|(_, v)| 36 + 4 * v.len()).sum::<usize>(),
        );
        bytes.extend_from_slice(MAGIC);
        for (key, vector) in records {
            bytes.extend_from_slice(&key[..]);
            bytes.extend_from_slice(&(vector.len() as u32).to_le_bytes());
            for x in vector.iter() {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seq = self.written.fetch_add(1, Ordering::Relaxed);
        let name = format!("{nanos:024x}-{:08x}-{seq:04x}.vec", std::process::id());
        write_then_rename(self.dir.join(&name), bytes).await
    }
}

#[async_trait]
impl<E: Embedder> Embedder for Cached<E> {
    fn space_id(&self) -> String {
        self.space_id.clone()
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<Key> = texts.iter().map(|t| key(&self.space_id, t)).collect();
        let mut guard = self.store.lock().await;
        if guard.is_none() {
            *guard = Some(self.load().await?);
        }
        let store = guard.as_mut().expect("loaded above");

        // Distinct texts not cached, in first-seen order.
        let mut missing: Vec<usize> = Vec::new();
        let mut seen: HashSet<&Key> = HashSet::new();
        for (i, k) in keys.iter().enumerate() {
            if !store.contains_key(k) && seen.insert(k) {
                missing.push(i);
            }
        }
        self.misses
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        self.hits
            .fetch_add((texts.len() - missing.len()) as u64, Ordering::Relaxed);
        for batch in missing.chunks(MAX_BATCH) {
            let batch_texts: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            self.batches.fetch_add(1, Ordering::Relaxed);
            let vectors = self.inner.embed(&batch_texts).await?;
            check_batch(&self.space_id, batch.len(), &vectors)?;
            let records: Vec<(&Key, &Vec<f32>)> =
                batch.iter().map(|&i| &keys[i]).zip(&vectors).collect();
            // Each batch is kept as soon as it arrives: a later failure loses only its own.
            self.write_segment(&records).await?;
            for (&i, v) in batch.iter().zip(vectors) {
                store.insert(keys[i], v);
            }
        }
        Ok(keys
            .iter()
            .map(|k| store.get(k).cloned().expect("every key cached above"))
            .collect())
    }
}

/// `sha256(space_id 0x00 text)`.
fn key(space_id: &str, text: &str) -> Key {
    let mut h = Sha256::new();
    h.update(space_id.as_bytes());
    h.update([0u8]);
    h.update(text.as_bytes());
    h.finalize().into()
}

/// The records of a segment, or `None` when it is not a whole, well-formed segment.
fn parse_segment(bytes: &[u8]) -> Option<Vec<(Key, Vec<f32>)>> {
    let mut rest = bytes.strip_prefix(MAGIC)?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (key, tail) = rest.split_first_chunk::<32>()?;
        let (dims, tail) = tail.split_first_chunk::<4>()?;
        let dims = u32::from_le_bytes(*dims) as usize;
        if dims == 0 || dims > MAX_DIMS || tail.len() < dims * 4 {
            return None;
        }
        let (data, tail) = tail.split_at(dims * 4);
        let vector: Vec<f32> = data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if vector.iter().any(|x| !x.is_finite()) {
            return None;
        }
        out.push((*key, vector));
        rest = tail;
    }
    Some(out)
}

/// Writes a file through a temporary one renamed into place (its name starts with a dot and
/// ends in `.tmp`, so a reader skips it). Not synced: a torn segment fails to parse and is
/// skipped, its vectors asked for again. Private, as the folder is.
async fn write_then_rename(to: PathBuf, bytes: Vec<u8>) -> Result<(), EmbedError> {
    let write = AtomicWrite::new(0o600).durability(Durability::Unsynced);
    let path = to.clone();
    tokio::task::spawn_blocking(move || write.write(&to, &bytes))
        .await
        .map_err(std::io::Error::other)
        .and_then(|written| written)
        .map_err(|e| cache_error(&path, e))
}

fn cache_error(path: &Path, source: std::io::Error) -> EmbedError {
    EmbedError::Cache {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Counts calls; the vector of a text is its length and its first byte.
    #[derive(Debug, Default)]
    struct Counting {
        calls: Mutex<Vec<usize>>,
    }

    #[async_trait]
    impl Embedder for Counting {
        fn space_id(&self) -> String {
            "test|counting".into()
        }

        async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls.lock().unwrap().push(texts.len());
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))])
                .collect())
        }
    }

    #[tokio::test]
    async fn second_run_is_served_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (0..300).map(|i| format!("text {i}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();

        let first = Cached::new(Counting::default(), dir.path());
        let a = first.embed(&refs).await.unwrap();
        assert_eq!(*first.inner().calls.lock().unwrap(), [256, 44]);
        assert_eq!((first.stats().misses, first.stats().hits), (300, 0));

        let second = Cached::new(Counting::default(), dir.path());
        let b = second.embed(&refs).await.unwrap();
        assert_eq!(a, b);
        assert!(second.inner().calls.lock().unwrap().is_empty());
        assert_eq!((second.stats().misses, second.stats().hits), (0, 300));
        assert_eq!(
            std::fs::read_to_string(second.dir().join("SPACE")).unwrap(),
            "test|counting"
        );
    }

    #[tokio::test]
    async fn only_new_and_distinct_texts_are_sent() {
        let dir = tempfile::tempdir().unwrap();
        let cached = Cached::new(Counting::default(), dir.path());
        cached.embed(&["a", "b"]).await.unwrap();
        let out = cached.embed(&["b", "c", "c", "a"]).await.unwrap();
        assert_eq!(out[1], out[2]);
        assert_eq!(*cached.inner().calls.lock().unwrap(), [2, 1]);
        assert_eq!(cached.stats().misses, 3);
        assert!(cached.embed(&[]).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn bad_segments_are_skipped_and_many_are_merged() {
        let dir = tempfile::tempdir().unwrap();
        let cached = Cached::new(Counting::default(), dir.path());
        for i in 0..(COMPACT_ABOVE + 1) {
            cached.embed(&[format!("t{i}").as_str()]).await.unwrap();
        }
        std::fs::write(cached.dir().join("zz-broken.vec"), b"SKCVEC1\nshort").unwrap();
        let again = Cached::new(Counting::default(), dir.path());
        again.embed(&["t0", "t64"]).await.unwrap();
        assert_eq!(again.stats().bad_segments, 1);
        assert_eq!(again.stats().misses, 0);
        let segments = std::fs::read_dir(again.dir())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "vec")
            })
            .count();
        assert_eq!(
            segments, 1,
            "merged into one (the broken one was removed too)"
        );
    }

    #[test]
    fn keys_separate_spaces_and_texts() {
        assert_ne!(key("a", "b"), key("a", "c"));
        assert_ne!(key("a", "b"), key("b", "b"));
        // The separator keeps "ab"+"c" apart from "a"+"bc".
        assert_ne!(key("ab", "c"), key("a", "bc"));
    }

    #[test]
    fn segments_round_trip_and_refuse_damage() {
        assert_eq!(parse_segment(MAGIC), Some(Vec::new()));
        assert_eq!(parse_segment(b"nope"), None);
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[7; 32]);
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(&1.5f32.to_le_bytes());
        bytes.extend_from_slice(&(-2.0f32).to_le_bytes());
        assert_eq!(
            parse_segment(&bytes),
            Some(vec![([7; 32], vec![1.5, -2.0])])
        );
        assert_eq!(parse_segment(&bytes[..bytes.len() - 1]), None);
    }
}
