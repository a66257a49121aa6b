//! [`SqliteStore`]: the [`Store`] of one registry file — a small pool of [`Registry`]
//! connections, each call run off the async runtime (`spawn_blocking`).
//!
//! Reads take any free read connection (WAL: readers never block, nor block a writer in
//! another process); writes open a read-write connection of their own, as the file's one writer
//! at a time (`BEGIN IMMEDIATE` waits for the lock up front).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::{ChangePage, Engine, Imported, Store, VersionRecord};
use crate::path::FileEntry;
use crate::{
    Actor, AuditEntry, CheckReport, Pin, Prepared, Published, Registry, RegistryError, Release,
    Result, SearchHit, StoredSignature, VersionInfo,
};

/// Read connections a store keeps open at most.
const POOL_SIZE: usize = 4;

/// A registry file as a [`Store`].
pub struct SqliteStore {
    shown: String,
    pool: Arc<Pool>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.shown)
            .finish()
    }
}

impl SqliteStore {
    /// Creates a registry file at `path` (see [`Registry::init`]).
    pub fn init(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref();
        let first = Registry::init(path)?;
        Ok(Self::with_first(path, first, false))
    }

    /// Opens the registry file at `path` read-write, migrating it forward (see
    /// [`Registry::open`]).
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref();
        let first = Registry::open(path)?;
        Ok(Self::with_first(path, first, false))
    }

    /// Opens the registry file at `path` for reading only: writes are
    /// [`RegistryError::ReadOnly`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref();
        let first = Registry::open_read_only(path)?;
        Ok(Self::with_first(path, first, true))
    }

    fn with_first(path: &Path, first: Registry, read_only: bool) -> SqliteStore {
        let shown = first.display().to_string();
        let size = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, POOL_SIZE);
        let mut conns: Vec<Mutex<Option<Registry>>> = (0..size).map(|_| Mutex::new(None)).collect();
        // The first connection is kept for reading only when it was opened so; a read-write
        // one was opened to create or migrate the file, and reads open their own.
        if first.is_read_only() {
            conns[0] = Mutex::new(Some(first));
        }
        SqliteStore {
            shown,
            pool: Arc::new(Pool {
                path: path.to_path_buf(),
                conns,
                next: AtomicUsize::new(0),
                read_only,
            }),
        }
    }

    /// The registry file.
    pub fn path(&self) -> &Path {
        &self.pool.path
    }

    /// Runs `f` with a pooled read connection, off the async runtime.
    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Registry) -> Result<T> + Send + 'static,
    {
        let pool = Arc::clone(&self.pool);
        self.blocking(move || pool.with(f)).await
    }

    /// Runs `f` with a read-write connection of its own, off the async runtime.
    async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Registry) -> Result<T> + Send + 'static,
    {
        let pool = Arc::clone(&self.pool);
        self.blocking(move || {
            if pool.read_only {
                return Err(RegistryError::ReadOnly {
                    path: crate::display_path(&pool.path),
                });
            }
            f(&mut Registry::open(&pool.path)?)
        })
        .await
    }

    async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        match tokio::task::spawn_blocking(f).await {
            Ok(result) => result,
            Err(join) => Err(RegistryError::Io {
                path: self.shown.clone(),
                source: std::io::Error::other(format!("a registry task failed: {join}")),
            }),
        }
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn engine(&self) -> Engine {
        Engine::Sqlite
    }

    fn display(&self) -> &str {
        &self.shown
    }

    async fn schema_version(&self) -> Result<u32> {
        self.read(|r| r.schema_version()).await
    }

    async fn pins(&self) -> Result<Vec<Pin>> {
        self.read(|r| r.pins()).await
    }

    async fn resolve(&self, name: &str, version: Option<&str>) -> Result<Option<Pin>> {
        let (name, version) = (name.to_string(), version.map(str::to_string));
        self.read(move |r| r.resolve(&name, version.as_deref()))
            .await
    }

    async fn version_files(&self, pin: &Pin) -> Result<Vec<FileEntry>> {
        let id = pin.version_id;
        self.read(move |r| r.version_files(id)).await
    }

    async fn read_file(&self, pin: &Pin, path: &str) -> Result<Option<Bytes>> {
        let (id, path) = (pin.version_id, path.to_string());
        self.read(move |r| r.read_file(id, &path)).await
    }

    async fn signatures(&self, pin: &Pin) -> Result<Vec<StoredSignature>> {
        let id = pin.version_id;
        self.read(move |r| r.signatures_of(id)).await
    }

    async fn version_contents(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<Vec<(FileEntry, Bytes)>>> {
        let (name, version) = (name.to_string(), version.to_string());
        self.read(move |r| r.version_contents(&name, &version))
            .await
    }

    async fn versions(&self, name: &str) -> Result<Vec<VersionInfo>> {
        let name = name.to_string();
        self.read(move |r| r.versions(&name)).await
    }

    async fn all_versions(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        let name = name.map(str::to_string);
        self.read(move |r| r.all_versions(name.as_deref())).await
    }

    async fn yanked(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        let name = name.map(str::to_string);
        self.read(move |r| r.yanked(name.as_deref())).await
    }

    async fn all_yanked(&self) -> Result<Vec<(String, Vec<String>)>> {
        self.read(|r| r.all_yanked()).await
    }

    async fn latest(&self, name: &str) -> Result<Option<VersionInfo>> {
        let name = name.to_string();
        self.read(move |r| r.latest(&name)).await
    }

    async fn get(&self, name: &str, version: &str) -> Result<Option<Release>> {
        let (name, version) = (name.to_string(), version.to_string());
        self.read(move |r| r.get(&name, &version)).await
    }

    async fn findings(&self, name: &str, version: &str) -> Result<Option<String>> {
        let (name, version) = (name.to_string(), version.to_string());
        self.read(move |r| r.findings(&name, &version)).await
    }

    async fn search_page(
        &self,
        query: &str,
        offset: usize,
        limit: usize,
        deadline: Duration,
    ) -> Result<(Vec<SearchHit>, usize)> {
        let query = query.to_string();
        self.read(move |r| r.search_page_within(&query, offset, limit, deadline))
            .await
    }

    async fn audit(
        &self,
        limit: usize,
        before: Option<i64>,
        keep: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<AuditEntry>> {
        // The filter is borrowed, so the rows are read here and filtered after: read in pages
        // until `limit` are kept or the log ends.
        let mut out = Vec::new();
        let mut before = before;
        loop {
            let page = self.read(move |r| r.audit(limit.max(64), before)).await?;
            let Some(last) = page.last() else { break };
            before = Some(last.id);
            let full = page.len() >= limit.max(64);
            for entry in page {
                if out.len() >= limit {
                    return Ok(out);
                }
                if keep(&entry.name) {
                    out.push(entry);
                }
            }
            if !full || out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    async fn publishers(&self, name: Option<&str>) -> Result<HashMap<(String, String), String>> {
        let name = name.map(str::to_string);
        self.read(move |r| r.publishers(name.as_deref())).await
    }

    async fn check(&self) -> Result<CheckReport> {
        self.read(|r| r.check()).await
    }

    async fn changes(&self, since: i64, limit: usize) -> Result<ChangePage> {
        self.read(move |r| r.changes(since, limit)).await
    }

    async fn head(&self) -> Result<i64> {
        self.read(|r| r.head()).await
    }

    async fn commit(&self, prepared: Arc<Prepared>, actor: Option<Actor>) -> Result<Published> {
        self.write(move |r| r.commit_as(&prepared, actor.as_ref()))
            .await
    }

    async fn commit_many(
        &self,
        prepared: Arc<Vec<Prepared>>,
        actor: Option<Actor>,
    ) -> Vec<Result<Published>> {
        let n = prepared.len();
        let all = self
            .write(move |r| Ok(r.commit_many_as(&prepared, actor.as_ref())))
            .await;
        match all {
            Ok(results) => results,
            Err(e) => {
                // The connection did not open: every version fails with the same cause.
                let text = e.to_string();
                let mut out = vec![Err(e)];
                out.extend((1..n).map(|_| {
                    Err(RegistryError::Io {
                        path: self.shown.clone(),
                        source: std::io::Error::other(text.clone()),
                    })
                }));
                out.truncate(n);
                out
            }
        }
    }

    async fn set_yanked(
        &self,
        name: &str,
        version: &str,
        yanked: bool,
        actor: Option<Actor>,
    ) -> Result<bool> {
        let (name, version) = (name.to_string(), version.to_string());
        self.write(move |r| r.set_yanked_by(&name, &version, yanked, actor.as_ref()))
            .await
    }

    async fn export(&self, name: &str, version: &str) -> Result<Option<VersionRecord>> {
        let (name, version) = (name.to_string(), version.to_string());
        self.read(move |r| r.export(&name, &version)).await
    }

    async fn import(&self, record: VersionRecord) -> Result<Imported> {
        self.write(move |r| r.import(&record)).await
    }

    async fn import_audit(&self, entries: Vec<AuditEntry>) -> Result<usize> {
        self.write(move |r| r.import_audit(&entries)).await
    }
}

/// Read-only connections, opened on first use, each used by one thread at a time.
struct Pool {
    path: PathBuf,
    conns: Vec<Mutex<Option<Registry>>>,
    next: AtomicUsize,
    read_only: bool,
}

impl Pool {
    fn with<T>(&self, f: impl FnOnce(&Registry) -> Result<T>) -> Result<T> {
        let n = self.conns.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        // A free connection if there is one; otherwise wait for one (round robin).
        for i in 0..n {
            match self.conns[(start + i) % n].try_lock() {
                Ok(mut slot) => return self.run(&mut slot, f),
                Err(TryLockError::Poisoned(p)) => return self.run(&mut p.into_inner(), f),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        let mut slot = self.conns[start]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.run(&mut slot, f)
    }

    fn run<T>(
        &self,
        slot: &mut Option<Registry>,
        f: impl FnOnce(&Registry) -> Result<T>,
    ) -> Result<T> {
        let registry = match slot {
            Some(r) => r,
            None => slot.insert(Registry::open_read_only(&self.path)?),
        };
        f(registry)
    }
}
