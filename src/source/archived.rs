//! What the tarball and zip sources share: the checked in-memory tree they hold, reading the
//! archive file under its size limit, and the macro that declares each public source type.
//!
//! ```text
//! TarballSource ─┐                      ┌─ list / files / read / location
//!                ├─ Arc<ArchiveSource> ─┤
//! ZipSource ─────┘   (name, tree)       └─ discover_sync: every root loaded on every core
//! ```

use std::fmt;
use std::io::Read;
use std::path::Path;

use bytes::Bytes;

use super::FileEntry;
use crate::archive::{ArchiveError, ArchiveLimits, ArchiveTree};
use crate::error::{Error, Result};

/// Declares a source type over a checked [`ArchiveTree`], shared by the tar and zip sources:
/// `open`, `from_bytes` (with the format's reader), `tree`, `Debug` and the [`Source`] impl.
macro_rules! archive_source {
    ($(#[$doc:meta])* $name:ident, $reader:path, $what:literal) => {
        $(#[$doc])*
        pub struct $name {
            inner: ::std::sync::Arc<$crate::source::archived::ArchiveSource>,
        }

        impl $name {
            #[doc = concat!("Reads and checks the ", $what, " at `path`.")]
            pub fn open(
                path: &::std::path::Path,
                limits: $crate::archive::ArchiveLimits,
            ) -> $crate::error::Result<Self> {
                let (name, bytes) = $crate::source::archived::read_limited(path, &limits)?;
                Self::from_bytes(&name, &bytes, limits)
            }

            #[doc = concat!("Reads and checks a ", $what, " held in memory; `name` is used in locations.")]
            pub fn from_bytes(
                name: &str,
                bytes: &[u8],
                limits: $crate::archive::ArchiveLimits,
            ) -> $crate::error::Result<Self> {
                let tree = $reader(bytes, &limits)?;
                Ok($name {
                    inner: ::std::sync::Arc::new($crate::source::archived::ArchiveSource::new(
                        name, tree,
                    )),
                })
            }

            /// The checked tree the archive was read into.
            pub fn tree(&self) -> &$crate::archive::ArchiveTree {
                self.inner.tree()
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.inner).finish()
            }
        }

        #[::async_trait::async_trait]
        impl $crate::source::Source for $name {
            async fn list(&self) -> $crate::error::Result<Vec<String>> {
                Ok(self.inner.list())
            }

            async fn files(
                &self,
                root: &str,
            ) -> $crate::error::Result<Vec<$crate::source::FileEntry>> {
                self.inner.files(root)
            }

            async fn read(&self, path: &str) -> $crate::error::Result<::bytes::Bytes> {
                self.inner.read(path)
            }

            fn location(&self, path: &str) -> String {
                self.inner.location(path)
            }

            async fn discover_all(&self) -> $crate::error::Result<$crate::source::Discovery> {
                let inner = ::std::sync::Arc::clone(&self.inner);
                ::tokio::task::spawn_blocking(move || inner.discover_sync())
                    .await
                    .map_err(|e| {
                        $crate::error::Error::Invalid(format!("archive task failed: {e}"))
                    })
            }
        }
    };
}
pub(super) use archive_source;

/// Reads an archive file, at most `limits.max_compressed` bytes of it (one more to tell that
/// it is larger). Returns its absolute path, for locations, and its bytes.
pub(super) fn read_limited(path: &Path, limits: &ArchiveLimits) -> Result<(String, Vec<u8>)> {
    let shown = std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string();
    let io_err = |source| {
        Error::Archive(ArchiveError::Io {
            path: shown.clone(),
            source,
        })
    };
    let file = std::fs::File::open(path).map_err(io_err)?;
    let mut bytes = Vec::new();
    file.take(limits.max_compressed.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > limits.max_compressed {
        return Err(ArchiveError::ArchiveTooLarge {
            limit: limits.max_compressed,
        }
        .into());
    }
    Ok((shown, bytes))
}

/// What the tarball and zip sources share: a checked tree and the name to show.
pub(super) struct ArchiveSource {
    name: String,
    tree: ArchiveTree,
}

impl fmt::Debug for ArchiveSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArchiveSource")
            .field("name", &self.name)
            .field("tree", &self.tree)
            .finish()
    }
}

#[async_trait::async_trait]
impl super::Source for ArchiveSource {
    async fn list(&self) -> Result<Vec<String>> {
        Ok(ArchiveSource::list(self))
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        ArchiveSource::files(self, root)
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        ArchiveSource::read(self, path)
    }

    fn location(&self, path: &str) -> String {
        ArchiveSource::location(self, path)
    }
}

impl ArchiveSource {
    pub(super) fn new(name: &str, tree: ArchiveTree) -> Self {
        ArchiveSource {
            name: name.to_string(),
            tree,
        }
    }

    pub(super) fn tree(&self) -> &ArchiveTree {
        &self.tree
    }

    pub(super) fn list(&self) -> Vec<String> {
        self.tree.roots().to_vec()
    }

    pub(super) fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        if !root.is_empty() {
            self.check(root)?;
        }
        let files: Vec<FileEntry> = self
            .tree
            .under(root)
            .map(|(path, file)| FileEntry {
                path: path.to_string(),
                size: file.bytes.len() as u64,
                executable: file.executable,
            })
            .collect();
        if files.is_empty() && !self.tree.roots().iter().any(|r| r == root) {
            return Err(Error::NotFound(self.location(root)));
        }
        Ok(files)
    }

    pub(super) fn read(&self, path: &str) -> Result<Bytes> {
        self.check(path)?;
        match self.tree.get(path) {
            Some(file) => Ok(file.bytes.clone()),
            None => Err(Error::NotFound(self.location(path))),
        }
    }

    pub(super) fn location(&self, path: &str) -> String {
        format!("{}!/{}", self.name, path)
    }

    /// Every root loaded on every core: the tree is in memory, nothing waits.
    pub(super) fn discover_sync(&self) -> super::Discovery {
        let roots = self.list();
        super::discover_parallel(
            self,
            &roots,
            |root| root.as_str(),
            |root| {
                let files = self.files(root)?;
                super::load_sync(self, root, files, |path, _| self.read(path))
            },
        )
    }

    fn check(&self, path: &str) -> Result<()> {
        crate::path::check_canonical(path).map_err(|rule| Error::PathRejected {
            path: path.to_string(),
            reason: rule.to_string(),
        })
    }
}
