//! Tarball source: a `.tar`, `.tar.gz` or `.tgz` of one skill or of several.
//!
//! ```text
//! pdf-tools.tar.gz                       bundle.tgz
//! ├── SKILL.md         list() → [""]     ├── pdf/SKILL.md        list() → ["pdf", "xlsx"]
//! ├── scripts/run.sh                     ├── pdf/scripts/run.sh
//! └── assets/logo.png                    └── xlsx/SKILL.md
//!
//! location("scripts/run.sh") = "/abs/path/pdf-tools.tar.gz!/scripts/run.sh"
//! ```
//!
//! The archive is read, checked and held in memory **when the source is opened**
//! (synchronously, like [`DirSource::open`](super::DirSource::open)): a hostile archive is
//! refused before anything is offered, and `list`/`files`/`read` never block. Async code
//! opening a large archive should call `open` inside `tokio::task::spawn_blocking`. The
//! rules (paths, types, limits, layout) are those of [`crate::archive`].

use std::fmt;
use std::io::Read;
use std::path::Path;

use bytes::Bytes;

use super::FileEntry;
use crate::archive::{self, ArchiveError, ArchiveLimits, ArchiveTree};
use crate::error::{Error, Result};

/// Declares a source type over a checked [`ArchiveTree`], shared by the tar and zip sources:
/// `open`, `from_bytes` (with the format's reader), `tree`, `Debug` and the [`Source`] impl.
macro_rules! archive_source {
    ($(#[$doc:meta])* $name:ident, $reader:path, $what:literal) => {
        $(#[$doc])*
        pub struct $name {
            inner: ::std::sync::Arc<$crate::source::tarball::ArchiveSource>,
        }

        impl $name {
            #[doc = concat!("Reads and checks the ", $what, " at `path`.")]
            pub fn open(
                path: &::std::path::Path,
                limits: $crate::archive::ArchiveLimits,
            ) -> $crate::error::Result<Self> {
                let (name, bytes) = $crate::source::tarball::read_limited(path, &limits)?;
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
                    inner: ::std::sync::Arc::new($crate::source::tarball::ArchiveSource::new(
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

archive_source!(
    /// A skill source over a tar archive, gzip-compressed or not (told apart by magic bytes).
    TarballSource,
    archive::read_tar,
    "tarball"
);

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
        archive::check_canonical(path).map_err(|rule| Error::PathRejected {
            path: path.to_string(),
            reason: rule.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Source, SourceExt, join_path};

    fn tar_gz(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut builder = ::tar::Builder::new(gz);
        for (path, data, mode) in files {
            let mut h = ::tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(*mode);
            h.set_entry_type(::tar::EntryType::Regular);
            builder.append_data(&mut h, path, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn bundle() -> Vec<u8> {
        tar_gz(&[
            (
                "pdf/SKILL.md",
                b"---\nname: pdf\ndescription: d\n---\nbody\n",
                0o644,
            ),
            ("pdf/scripts/run.sh", b"#!/bin/sh\n", 0o755),
            (
                "xlsx/SKILL.md",
                b"---\nname: xlsx\ndescription: d\n---\n",
                0o644,
            ),
            ("broken/notes.md", b"no document here\n", 0o644),
        ])
    }

    #[tokio::test]
    async fn contract_over_a_bundle() {
        let src =
            TarballSource::from_bytes("bundle.tgz", &bundle(), ArchiveLimits::default()).unwrap();
        assert_eq!(src.list().await.unwrap(), ["broken", "pdf", "xlsx"]);
        let files = src.files("pdf").await.unwrap();
        let paths: Vec<_> = files
            .iter()
            .map(|f| (f.path.as_str(), f.size, f.executable))
            .collect();
        assert_eq!(
            paths,
            [("SKILL.md", 38, false), ("scripts/run.sh", 10, true)]
        );
        let body = src.read(&join_path("pdf", "scripts/run.sh")).await.unwrap();
        assert_eq!(&body[..], b"#!/bin/sh\n");
        assert_eq!(src.location("pdf/SKILL.md"), "bundle.tgz!/pdf/SKILL.md");
        assert!(matches!(
            src.read("pdf/../xlsx/SKILL.md").await,
            Err(Error::PathRejected { .. })
        ));
        assert!(matches!(
            src.read("/etc/passwd").await,
            Err(Error::PathRejected { .. })
        ));
        assert!(matches!(
            src.read("pdf/missing.md").await,
            Err(Error::NotFound(_))
        ));
        assert!(matches!(
            src.read("pdf/scripts").await,
            Err(Error::NotFound(_))
        ));
        assert!(matches!(src.files("nope").await, Err(Error::NotFound(_))));
        assert!(src.exists("xlsx/SKILL.md").await.unwrap());
    }

    #[tokio::test]
    async fn discover_reports_a_folder_without_document() {
        let src =
            TarballSource::from_bytes("bundle.tgz", &bundle(), ArchiveLimits::default()).unwrap();
        let found = crate::source::discover(&src).await.unwrap();
        let roots: Vec<_> = found.faults.iter().map(|f| f.root.as_str()).collect();
        assert_eq!(roots, ["broken"]);
    }

    #[tokio::test]
    async fn open_from_disk_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skill.tar.gz");
        std::fs::write(&path, tar_gz(&[("SKILL.md", b"# Hello\n", 0o644)])).unwrap();
        let src = TarballSource::open(&path, ArchiveLimits::default()).unwrap();
        assert_eq!(src.list().await.unwrap(), [""]);
        let abs = std::path::absolute(&path).unwrap();
        assert_eq!(
            src.location("SKILL.md"),
            format!("{}!/SKILL.md", abs.display())
        );

        let evil = dir.path().join("evil.tar.gz");
        std::fs::write(
            &evil,
            tar_gz(&[("SKILL.md", b"x", 0o644), ("SKILL.md", b"y", 0o644)]),
        )
        .unwrap();
        let err = TarballSource::open(&evil, ArchiveLimits::default()).unwrap_err();
        assert!(
            matches!(err, Error::Archive(ArchiveError::Duplicate { .. })),
            "{err}"
        );
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["evil.tar.gz", "skill.tar.gz"]);
    }

    #[test]
    fn archive_too_large_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.tar");
        std::fs::write(&path, vec![0u8; 2048]).unwrap();
        let limits = ArchiveLimits {
            max_compressed: 1024,
            ..ArchiveLimits::default()
        };
        let err = TarballSource::open(&path, limits).unwrap_err();
        assert!(matches!(
            err,
            Error::Archive(ArchiveError::ArchiveTooLarge { limit: 1024 })
        ));
        let err = TarballSource::open(&dir.path().join("missing.tar"), limits).unwrap_err();
        assert!(matches!(err, Error::Archive(ArchiveError::Io { .. })));
    }
}
