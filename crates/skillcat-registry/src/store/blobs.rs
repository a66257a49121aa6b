//! Blobs by content outside the database: object storage under each blob's sha256.
//!
//! A PostgreSQL registry keeps its blobs in its `blob` table by default (skills are small); it
//! may keep them in object storage instead (`registry init postgres://… --blobs URL`, recorded
//! in the database so every replica agrees). Then a publish writes every blob under its sha256
//! *before* the version's row commits: a crash can leave an unreferenced blob (collected later),
//! never a row without its bytes. Keys are content addresses, so a write is idempotent and
//! needs no conditional put (some S3 servers ignore them).

use std::fmt;

use async_trait::async_trait;
use bytes::Bytes;

use crate::Result;

/// Where blobs live outside the database.
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// The store's URL as given (`file:///srv/blobs`, `s3://bucket?endpoint=…`, `memory:`),
    /// without credentials.
    fn url(&self) -> &str;

    /// Stores `bytes` under `sha256` (the caller hashed them). Writing the same blob again is
    /// harmless.
    async fn put(&self, sha256: &[u8; 32], bytes: Bytes) -> Result<()>;

    /// The bytes stored under `sha256`, `None` when absent. The caller hashes them again.
    async fn get(&self, sha256: &[u8; 32]) -> Result<Option<Bytes>>;

    /// Every address held, with when it was written (Unix seconds): what garbage collection
    /// compares with the addresses the database references.
    async fn list(&self) -> Result<Vec<([u8; 32], i64)>>;

    /// Removes the blob under `sha256` (absent is not an error).
    async fn delete(&self, sha256: &[u8; 32]) -> Result<()>;
}
