//! The SQLite registry as a [`Source`].
//!
//! ```text
//! skills.db                                   list()  → ["alpha", "beta-tool"]   latest of each, by name
//! ├── alpha      1.0.0, 1.1.0 (latest)        files("alpha")        → the files of alpha@1.1.0
//! └── beta-tool  1.0.0 (latest), 2.0.0 yanked files("beta-tool@2.0.0")  → any version, yanked too
//!                                             read("alpha/SKILL.md"), read("alpha@1.0.0/SKILL.md")
//!
//! location("alpha/scripts/run.sh") = "/abs/skills.db#alpha@1.1.0/scripts/run.sh"
//! root_dir_name("alpha@1.0.0")     = "alpha"
//! ```
//!
//! Roots are skill names (a registry has no lone `""` skill). A root may also be written
//! `NAME@VERSION` to select one version explicitly, yanked or not; such roots are never listed.
//!
//! # Snapshot per root
//!
//! A plain `NAME` root is **pinned** to the version it resolves to the first time this source
//! meets it ([`list`](Source::list) pins every listed root at once, from one read). The file
//! list, the reads and the locations of that root then all come from that one version, even if a
//! newer version is published meanwhile; [`RegistrySource::refresh`] forgets the pins. Versions
//! are immutable, so a pinned root never changes under a reader.
//!
//! # Reading
//!
//! Reads go through the registry's [`Store`]: a file's in `spawn_blocking` on a small pool of
//! read-only connections, a database's on its connection pool; any number proceed at once,
//! alongside a writer in another process. Every read hashes the blob again; altered bytes are
//! [`Error::DigestMismatch`], never returned.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;

use crate::Pin;
use crate::path::FileEntry;
use crate::source::{RootRecord, Source};
use crate::store::{Location, SqliteStore, Store};
use skillcat_core::error::{Error, Result};

/// A registry read as a source of skills: every skill's latest version, by name. Any
/// [`Store`] — a registry file, a PostgreSQL database — reads the same.
pub struct RegistrySource {
    shown: String,
    store: Arc<dyn Store>,
    pins: Mutex<HashMap<String, Pin>>,
    /// What listing found to say: skills every version of which is yanked (never listed).
    warnings: Mutex<Vec<String>>,
}

impl fmt::Debug for RegistrySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrySource")
            .field("path", &self.shown)
            .finish()
    }
}

impl RegistrySource {
    /// Opens the registry file at `path` read-only (it must exist and have the current schema).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self::new(Arc::new(SqliteStore::open_read_only(path)?)))
    }

    /// Opens the registry at `location` (a file read-only, or a database).
    pub async fn connect(location: &Location) -> Result<Self> {
        Ok(Self::new(crate::store::open_read_only(location).await?))
    }

    /// The registry `store` as a source.
    pub fn new(store: Arc<dyn Store>) -> Self {
        RegistrySource {
            shown: store.display().to_string(),
            store,
            pins: Mutex::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// The store this source reads.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Whether `skillcat_sources::open` should read a file as a registry: it starts with the SQLite
    /// magic (`SQLite format 3\0`), or it is named `*.db` / `*.sqlite` and has no archive magic.
    /// `first_bytes` are the file's first bytes (at least 16 where the file has them).
    ///
    /// ```
    /// use skillcat_registry::RegistrySource;
    /// use std::path::Path;
    /// assert!(RegistrySource::sniff(Path::new("skills.bin"), b"SQLite format 3\0\x10\x00"));
    /// assert!(RegistrySource::sniff(Path::new("skills.DB"), b""));
    /// assert!(!RegistrySource::sniff(Path::new("skills.db"), &[0x1f, 0x8b, 8]));
    /// assert!(!RegistrySource::sniff(Path::new("skills.tar"), b"ustar"));
    /// ```
    pub fn sniff(path: &Path, first_bytes: &[u8]) -> bool {
        crate::is_registry_file(path, first_bytes)
    }

    /// The registry file, absolute, as locations show it.
    pub fn display(&self) -> &str {
        &self.shown
    }

    /// Forgets which version each plain `NAME` root was pinned to, so the next use of a root
    /// sees the registry as it is now.
    pub fn refresh(&self) {
        self.pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The version a root stands for: its pin, or the version it resolves to now (then pinned).
    async fn pin(&self, root: &str) -> Result<Pin> {
        let (name, version) = split_root(root)?;
        if let Some(pin) = self
            .pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(root)
        {
            return Ok(pin.clone());
        }
        let found = self.store.resolve(name, version).await?;
        let Some(pin) = found else {
            return Err(Error::NotFound(self.location(root)));
        };
        let mut pins = self.pins.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(pins.entry(root.to_string()).or_insert(pin).clone())
    }

    fn pinned(&self, root: &str) -> Option<Pin> {
        self.pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(root)
            .cloned()
    }
}

#[async_trait]
impl Source for RegistrySource {
    async fn list(&self) -> Result<Vec<String>> {
        let pins = self.store.pins().await?;
        let all_yanked = self.store.all_yanked().await?;
        {
            let mut warnings = self.warnings.lock().unwrap_or_else(PoisonError::into_inner);
            for (name, versions) in &all_yanked {
                let w = all_yanked_warning(name, versions);
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        }
        let mut map = self.pins.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(pins
            .into_iter()
            .map(|pin| {
                let root = pin.name.clone();
                map.entry(root.clone()).or_insert(pin);
                root
            })
            .collect())
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        let pin = self.pin(root).await?;
        Ok(self.store.version_files(&pin).await?)
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let rejected = |reason: String| Error::PathRejected {
            path: path.to_string(),
            reason,
        };
        crate::source::check_path(path)?;
        let Some((root, rel)) = path.split_once('/') else {
            return Err(rejected(
                "a registry path is NAME/FILE or NAME@VERSION/FILE".into(),
            ));
        };
        let pin = self.pin(root).await?;
        match self.store.read_file(&pin, rel).await? {
            Some(bytes) => Ok(bytes),
            None => Err(Error::NotFound(self.location(path))),
        }
    }

    fn location(&self, path: &str) -> String {
        let (root, rel) = path.split_once('/').unwrap_or((path, ""));
        if root.is_empty() {
            return self.shown.clone();
        }
        let shown_root = match self.pinned(root) {
            Some(pin) => format!("{}@{}", pin.name, pin.version),
            None => root.to_string(),
        };
        if rel.is_empty() {
            format!("{}#{shown_root}", self.shown)
        } else {
            format!("{}#{shown_root}/{rel}", self.shown)
        }
    }

    /// Skills every version of which is yanked, as listing found them.
    fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn root_dir_name(&self, root: &str) -> Option<String> {
        let name = root.split_once('@').map_or(root, |(name, _)| name);
        (!name.is_empty()).then(|| name.to_string())
    }

    /// The version the root is pinned to and the signatures stored with that version.
    async fn record(&self, root: &str) -> Result<RootRecord> {
        let pin = self.pin(root).await?;
        let signatures = self.store.signatures(&pin).await?;
        Ok(RootRecord::new(
            Some(pin.version),
            signatures.into_iter().map(|s| s.text).collect(),
        )
        .with_yanked(pin.yanked))
    }

    /// `NAME@VERSION`, once the registry is found to hold that version (yanked or not).
    async fn version_root(&self, name: &str, version: &str) -> Result<Option<String>> {
        let root = format!("{name}@{version}");
        match self.pin(&root).await {
            Ok(pin) => {
                if pin.yanked {
                    let w = yanked_warning(&pin.name, &pin.version);
                    let mut warnings = self.warnings.lock().unwrap_or_else(PoisonError::into_inner);
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                }
                Ok(Some(root))
            }
            Err(Error::NotFound(_)) => {
                let versions = self.store.versions(name).await?;
                let held: Vec<String> = versions
                    .iter()
                    .map(|v| {
                        if v.yanked {
                            format!("{} (yanked)", v.version)
                        } else {
                            v.version.clone()
                        }
                    })
                    .collect();
                Err(Error::NotFound(if held.is_empty() {
                    format!("{root}: {} holds no skill named {name}", self.shown)
                } else {
                    format!(
                        "{root}: no such version; the versions of {name} in {} are {}",
                        self.shown,
                        held.join(", ")
                    )
                }))
            }
            Err(e) => Err(e),
        }
    }
}

/// What a source says of a skill every version of which is yanked (`versions` in semver
/// order): it is not listed, and how to read one.
pub(crate) fn all_yanked_warning(name: &str, versions: &[String]) -> String {
    let newest = versions.last().map_or("VERSION", String::as_str);
    format!(
        "{name}: every version is yanked ({}), so it is not listed; read one by its version: \
         {name}@{newest}",
        versions.join(", ")
    )
}

/// What a source says when a yanked version is read by its exact `NAME@VERSION`.
pub(crate) fn yanked_warning(name: &str, version: &str) -> String {
    format!(
        "{name}@{version} is yanked: read because it was named by its version; {name} alone \
         never picks it"
    )
}

/// `NAME` or `NAME@VERSION`: one path component, both parts non-empty.
fn split_root(root: &str) -> Result<(&str, Option<&str>)> {
    let rejected = |reason: &str| Error::PathRejected {
        path: root.to_string(),
        reason: reason.to_string(),
    };
    if root.is_empty() || root.contains('/') {
        return Err(rejected("a registry root is NAME or NAME@VERSION"));
    }
    match root.split_once('@') {
        None => Ok((root, None)),
        Some((name, version)) if !name.is_empty() && !version.is_empty() => {
            Ok((name, Some(version)))
        }
        Some(_) => Err(rejected("a registry root is NAME or NAME@VERSION")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_split() {
        assert_eq!(split_root("alpha").unwrap(), ("alpha", None));
        assert_eq!(split_root("alpha@1.0.0").unwrap(), ("alpha", Some("1.0.0")));
        for bad in ["", "@1.0.0", "alpha@", "a/b"] {
            assert!(
                matches!(split_root(bad), Err(Error::PathRejected { .. })),
                "{bad}"
            );
        }
    }
}
