//! Blobs by content outside the database: object storage under each blob's sha256.
//!
//! A PostgreSQL registry keeps its blobs in its `blob` table by default (skills are small); it
//! may keep them in object storage instead (`registry init postgres://… --blobs URL`, recorded
//! in the database so every replica agrees). Then a publish writes every blob under its sha256
//! *before* the version's row commits: a crash can leave an unreferenced blob (collected later),
//! never a row without its bytes. Keys are content addresses, so a write is idempotent and
//! needs no conditional put (some S3 servers ignore them).
//!
//! Keys are `sha256/<first two hex digits>/<64 hex digits>`: fanned out so that no directory of
//! a local store holds every blob. Anything else in the bucket or directory is not the
//! registry's: it is never listed as a blob, never read, never collected.
//!
//! Whoever can write the bucket can make a read fail, never alter what a reader gets: every
//! read is hashed ([`get_verified`]) and a mismatch is
//! [`RegistryError::Corrupt`].

use std::collections::HashSet;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use serde::Serialize;

use super::Store;
use crate::digest::{parse_digest, sha256, to_hex};
use crate::{RegistryError, Result};

#[cfg(feature = "blobs")]
mod object;
#[cfg(feature = "blobs")]
pub use object::open_blobs;

/// The largest blob a read accepts: 256 MiB, the largest value a registry stores (SQLite's
/// limit on one value, far above any version's size limit). An object over it is not read.
pub const MAX_BLOB: u64 = 256 * 1024 * 1024;

/// Where blobs live outside the database.
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// The store's URL as given (`file:///srv/blobs`, `s3://bucket?endpoint=…`, `memory:`),
    /// without credentials.
    fn url(&self) -> &str;

    /// Stores `bytes` under `sha256` (the caller hashed them). Writing the same blob again is
    /// harmless, and restarts its age: garbage collection keeps a blob written again by a
    /// publish in flight.
    async fn put(&self, sha256: &[u8; 32], bytes: Bytes) -> Result<()>;

    /// The bytes stored under `sha256`, `None` when absent. The caller hashes them again.
    async fn get(&self, sha256: &[u8; 32]) -> Result<Option<Bytes>>;

    /// Every address held, with when it was written (Unix seconds): what garbage collection
    /// compares with the addresses the database references.
    async fn list(&self) -> Result<Vec<([u8; 32], i64)>>;

    /// Removes the blob under `sha256` (absent is not an error).
    async fn delete(&self, sha256: &[u8; 32]) -> Result<()>;

    /// When the blob under `sha256` was last written (Unix seconds), `None` when absent: what
    /// garbage collection asks again just before it deletes. The default searches
    /// [`list`](Self::list).
    async fn modified(&self, sha256: &[u8; 32]) -> Result<Option<i64>> {
        Ok(self
            .list()
            .await?
            .into_iter()
            .find(|(sha, _)| sha == sha256)
            .map(|(_, at)| at))
    }
}

/// The key a blob is stored under: `sha256/ab/ab12…` (64 lowercase hex digits).
pub fn blob_key(sha256: &[u8; 32]) -> String {
    let hex = to_hex(sha256);
    format!("sha256/{}/{hex}", &hex[..2])
}

/// The address a key names, when it is exactly a [`blob_key`]; `None` for anything else (a
/// stray file, a key in another case, a fan-out folder that does not match).
pub fn parse_blob_key(key: &str) -> Option<[u8; 32]> {
    let (fan, hex) = key.strip_prefix("sha256/")?.split_once('/')?;
    if fan.len() != 2 || !hex.starts_with(fan) {
        return None;
    }
    parse_digest(&format!("sha256:{hex}"))
}

/// The blob under `sha256`, hashed: bytes that do not hash to their address are
/// [`RegistryError::Corrupt`], whoever altered them. `None` when
/// the store has no such blob.
pub async fn get_verified(blobs: &dyn BlobStore, sha: &[u8; 32]) -> Result<Option<Bytes>> {
    let Some(bytes) = blobs.get(sha).await? else {
        return Ok(None);
    };
    let actual = sha256(&bytes);
    if &actual != sha {
        return Err(RegistryError::Corrupt {
            path: blobs.url().to_string(),
            what: format!("blob {}", blob_key(sha)),
            expected: to_hex(sha),
            actual: to_hex(actual),
        });
    }
    Ok(Some(bytes))
}

/// What a garbage collection found (and, unless a dry run, did).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// The blob store's URL (no credentials).
    pub store: String,
    /// Blobs the store holds (keys of the registry's form; anything else is left alone).
    pub held: usize,
    /// Of them, referenced by a version: kept.
    pub referenced: usize,
    /// Unreferenced but written within the grace period (a publish may be about to commit
    /// them): kept.
    pub young: usize,
    /// Unreferenced and older than the grace period: deleted (a dry run only names them), as
    /// lowercase hex.
    pub collected: Vec<String>,
    /// Whether nothing was deleted because only a report was asked for.
    pub dry_run: bool,
}

/// Deletes every blob that no version references and that was written longer than
/// `older_than` ago.
///
/// `referenced` must be read from the database *before* this is called: a publish writes its
/// blobs before its row commits, so a blob it writes after that read is young (and a blob it
/// writes again is young again) and kept. Just before deleting, each blob's age is asked again,
/// so a publish that rewrote it since the listing keeps it. Pick a grace period longer than
/// any publish takes (an hour is generous).
pub async fn collect_garbage(
    blobs: &dyn BlobStore,
    referenced: &HashSet<[u8; 32]>,
    older_than: Duration,
) -> Result<GcReport> {
    sweep(blobs, referenced, older_than, false).await
}

/// What [`collect_garbage`] would delete, deleting nothing.
pub async fn find_garbage(
    blobs: &dyn BlobStore,
    referenced: &HashSet<[u8; 32]>,
    older_than: Duration,
) -> Result<GcReport> {
    sweep(blobs, referenced, older_than, true).await
}

/// Collects the garbage of a registry's object storage ([`collect_garbage`]; with `dry_run`,
/// [`find_garbage`]): its references are read from its database first. `None` when the
/// registry keeps its blobs in its database, where nothing is left unreferenced.
pub async fn collect_registry_garbage(
    store: &dyn Store,
    older_than: Duration,
    dry_run: bool,
) -> Result<Option<GcReport>> {
    let Some((blobs, referenced)) = store.blob_references().await? else {
        return Ok(None);
    };
    sweep(&*blobs, &referenced, older_than, dry_run)
        .await
        .map(Some)
}

async fn sweep(
    blobs: &dyn BlobStore,
    referenced: &HashSet<[u8; 32]>,
    older_than: Duration,
    dry_run: bool,
) -> Result<GcReport> {
    let grace = i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX);
    // A blob dated in the future (clocks differ between hosts) counts as young.
    let old = |written: i64| now().saturating_sub(written) >= grace;
    let mut report = GcReport {
        store: blobs.url().to_string(),
        dry_run,
        ..GcReport::default()
    };
    let mut held = blobs.list().await?;
    held.sort_unstable();
    for (sha, written) in held {
        report.held += 1;
        if referenced.contains(&sha) {
            report.referenced += 1;
            continue;
        }
        if !old(written) {
            report.young += 1;
            continue;
        }
        if !dry_run {
            match blobs.modified(&sha).await? {
                None => continue,
                Some(again) if !old(again) => {
                    report.young += 1;
                    continue;
                }
                Some(_) => blobs.delete(&sha).await?,
            }
        }
        report.collected.push(to_hex(sha));
    }
    Ok(report)
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fanned_out_content_addresses_and_nothing_else_parses() {
        let sha = sha256(b"hello");
        let key = blob_key(&sha);
        assert_eq!(
            key,
            "sha256/2c/2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(parse_blob_key(&key), Some(sha));
        let hex = to_hex(sha);
        for stray in [
            format!("sha256/{hex}"),
            format!("sha256/ab/{hex}"),
            format!("sha256/2c/{}", hex.to_uppercase()),
            format!("sha256/2c/{hex}0"),
            format!("sha256/2c/{}", &hex[..63]),
            "sha256/2c/2cxyz".to_string(),
            format!("sha512/2c/{hex}"),
            format!("x/sha256/2c/{hex}"),
            format!("sha256/2c/{hex}#1"),
        ] {
            assert_eq!(parse_blob_key(&stray), None, "{stray}");
        }
    }

    #[tokio::test]
    async fn a_registry_file_has_no_garbage_to_collect() {
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::store::SqliteStore::init(tmp.path().join("r.db")).unwrap();
        let report = collect_registry_garbage(&store, Duration::ZERO, false).await;
        assert_eq!(report.unwrap(), None);
    }
}
