//! Archive source: a `.tar`, `.tar.gz`/`.tgz` or `.zip` of one skill or of several.
//!
//! ```text
//! pdf-tools.tar.gz                       bundle.zip
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
//! opening a large archive should call `open` inside `tokio::task::spawn_blocking`. The format
//! is told by [`crate::archive::sniff`] (magic bytes first, extension second); the rules
//! (paths, types, limits, layout, and the zip-specific ones) are those of [`crate::archive`].

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::{Detail, DocumentRead, DocumentSink, Source};
use crate::archive::{self, ArchiveError, ArchiveKind, ArchiveLimits, ArchiveTree};
use crate::error::{Error, Result};
use crate::path::FileEntry;

/// A skill source over an archive (tar, gzip-compressed tar, or zip), checked and held in
/// memory. Cheap to clone (the tree is shared).
#[derive(Clone)]
pub struct ArchiveSource {
    name: Arc<str>,
    tree: Arc<ArchiveTree>,
    /// `sha256:<hex>` of the archive's bytes: its [`id`](Source::id) (`None` for a tree that
    /// was never one archive).
    sha256: Option<Arc<str>>,
}

impl fmt::Debug for ArchiveSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArchiveSource")
            .field("name", &self.name)
            .field("tree", &self.tree)
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl ArchiveSource {
    /// Reads and checks the archive at `path`, its format told by [`archive::sniff`] from its
    /// first bytes and its name. At most `limits.max_compressed` bytes are read.
    pub fn open(path: &Path, limits: ArchiveLimits) -> Result<Self> {
        let (name, bytes) = read_limited(path, &limits)?;
        let head = &bytes[..bytes.len().min(archive::SNIFF_LEN)];
        let Some(kind) = archive::sniff(path, head) else {
            return Err(Error::UnsupportedSource(name));
        };
        Self::from_bytes(kind, &name, &bytes, limits)
    }

    /// [`open`](Self::open) for a file whose format is already known.
    pub fn open_as(kind: ArchiveKind, path: &Path, limits: ArchiveLimits) -> Result<Self> {
        let (name, bytes) = read_limited(path, &limits)?;
        Self::from_bytes(kind, &name, &bytes, limits)
    }

    /// Reads and checks an archive held in memory; `name` is used in locations. A tar archive
    /// is told from a gzip-compressed one by its own magic, so `Tar` and `TarGz` read alike.
    pub fn from_bytes(
        kind: ArchiveKind,
        name: &str,
        bytes: &[u8],
        limits: ArchiveLimits,
    ) -> Result<Self> {
        Self::from_hashed(kind, name, bytes, crate::digest::sha256(bytes), limits)
    }

    /// [`from_bytes`](Self::from_bytes) for bytes whose sha256 the caller has already computed
    /// (a download it checked against the digest it was promised): `sha256` becomes the
    /// source's [`id`](Source::id) unchecked.
    pub fn from_hashed(
        kind: ArchiveKind,
        name: &str,
        bytes: &[u8],
        sha256: [u8; 32],
        limits: ArchiveLimits,
    ) -> Result<Self> {
        let tree = archive::read_archive(kind, bytes, &limits)?;
        Ok(ArchiveSource {
            name: name.into(),
            tree: Arc::new(tree),
            sha256: Some(format!("sha256:{}", crate::digest::to_hex(sha256)).into()),
        })
    }

    /// A source over a tree already checked (one skill held in memory,
    /// [`ArchiveTree::of_skill`]); `name` is used in locations. Its [`id`](Source::id) is its
    /// location: there are no archive bytes to hash.
    pub fn from_tree(name: &str, tree: ArchiveTree) -> Self {
        ArchiveSource {
            name: name.into(),
            tree: Arc::new(tree),
            sha256: None,
        }
    }

    /// `sha256:<hex>` of the archive's bytes (`None` for [`from_tree`](Self::from_tree)).
    pub fn sha256(&self) -> Option<&str> {
        self.sha256.as_deref()
    }

    /// The checked tree the archive was read into.
    pub fn tree(&self) -> &ArchiveTree {
        &self.tree
    }

    fn roots(&self) -> Vec<String> {
        self.tree.roots().to_vec()
    }

    fn files_of(&self, root: &str) -> Result<Vec<FileEntry>> {
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
                private: false,
            })
            .collect();
        if files.is_empty() && !self.tree.roots().iter().any(|r| r == root) {
            return Err(Error::NotFound(self.location(root)));
        }
        Ok(files)
    }

    fn read_file(&self, path: &str) -> Result<Bytes> {
        self.check(path)?;
        match self.tree.get(path) {
            Some(file) => Ok(file.bytes.clone()),
            None => Err(Error::NotFound(self.location(path))),
        }
    }

    /// One root's document straight from the tree (and its files, when asked).
    fn document(
        &self,
        root: &str,
        detail: Detail,
    ) -> Result<(&'static str, &Bytes, Option<Vec<FileEntry>>)> {
        let files = match detail {
            Detail::Files => Some(self.files_of(root)?),
            Detail::Frontmatter | Detail::Document => {
                if !root.is_empty() {
                    self.check(root)?;
                }
                None
            }
        };
        let (name, _) = super::choose_document(self, root, |name| {
            Ok(self
                .tree
                .get(&super::join_path(root, name))
                .map(|f| f.bytes.len() as u64))
        })?;
        let bytes = &self
            .tree
            .get(&super::join_path(root, name))
            .expect("just found")
            .bytes;
        Ok((name, bytes, files))
    }

    fn check(&self, path: &str) -> Result<()> {
        super::check_path(path).map(drop)
    }
}

#[async_trait]
impl Source for ArchiveSource {
    async fn list(&self) -> Result<Vec<String>> {
        Ok(self.roots())
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        self.files_of(root)
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        self.read_file(path)
    }

    fn location(&self, path: &str) -> String {
        format!("{}!/{}", self.name, path)
    }

    /// The sha256 of the archive's bytes.
    async fn id(&self) -> Result<super::SourceId> {
        Ok(match &self.sha256 {
            Some(sha256) => super::SourceId::Archive {
                sha256: sha256.to_string(),
            },
            None => super::SourceId::Location(self.location("")),
        })
    }

    /// Every document straight from the tree, on every core: nothing waits, nothing is copied.
    async fn read_documents(
        &self,
        roots: &[String],
        detail: Detail,
        each: DocumentSink,
    ) -> Result<Vec<String>> {
        let (source, roots) = (self.clone(), roots.to_vec());
        let indices: Vec<usize> = (0..roots.len()).collect();
        super::offload(move || {
            super::par_map(&indices, |&i| match source.document(&roots[i], detail) {
                Ok((name, bytes, files)) => each(i, Ok(DocumentRead { name, bytes, files })),
                Err(e) => each(i, Err(e)),
            });
        })
        .await
        .map_err(|e| Error::task("reading an archive", e))?;
        Ok(Vec::new())
    }
}

/// Reads an archive file, at most `limits.max_compressed` bytes of it (one more to tell that
/// it is larger). Returns its absolute path, for locations, and its bytes.
fn read_limited(path: &Path, limits: &ArchiveLimits) -> Result<(String, Vec<u8>)> {
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::archive::ArchiveKind::{TarGz, Zip};
    use crate::path::join_path;
    use crate::source::SourceExt;

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
            ArchiveSource::from_bytes(TarGz, "bundle.tgz", &bundle(), ArchiveLimits::default())
                .unwrap();
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
            ArchiveSource::from_bytes(TarGz, "bundle.tgz", &bundle(), ArchiveLimits::default())
                .unwrap();
        let found = crate::source::discover(&src).await.unwrap();
        let roots: Vec<_> = found.faults.iter().map(|f| f.root.as_str()).collect();
        assert_eq!(roots, ["broken"]);
    }

    #[tokio::test]
    async fn open_from_disk_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skill.tar.gz");
        std::fs::write(&path, tar_gz(&[("SKILL.md", b"# Hello\n", 0o644)])).unwrap();
        let src = ArchiveSource::open(&path, ArchiveLimits::default()).unwrap();
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
        let err = ArchiveSource::open(&evil, ArchiveLimits::default()).unwrap_err();
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
        let err = ArchiveSource::open(&path, limits).unwrap_err();
        assert!(matches!(
            err,
            Error::Archive(ArchiveError::ArchiveTooLarge { limit: 1024 })
        ));
        let err = ArchiveSource::open(&dir.path().join("missing.tar"), limits).unwrap_err();
        assert!(matches!(err, Error::Archive(ArchiveError::Io { .. })));
    }

    fn zip(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let mut w = ::zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (path, data, mode) in files {
            let opts = ::zip::write::SimpleFileOptions::default()
                .compression_method(::zip::CompressionMethod::Deflated)
                .unix_permissions(*mode);
            w.start_file(*path, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[tokio::test]
    async fn contract_over_a_root_skill() {
        let bytes = zip(&[
            ("SKILL.md", b"# Hello\n", 0o644),
            ("scripts/run.sh", b"#!/bin/sh\n", 0o755),
        ]);
        let src =
            ArchiveSource::from_bytes(Zip, "skill.zip", &bytes, ArchiveLimits::default()).unwrap();
        assert_eq!(src.list().await.unwrap(), [""]);
        let files = src.files("").await.unwrap();
        let got: Vec<_> = files
            .iter()
            .map(|f| (f.path.as_str(), f.size, f.executable))
            .collect();
        assert_eq!(got, [("SKILL.md", 8, false), ("scripts/run.sh", 10, true)]);
        assert_eq!(src.read_to_string("SKILL.md").await.unwrap(), "# Hello\n");
        assert_eq!(src.location("SKILL.md"), "skill.zip!/SKILL.md");
        assert!(matches!(
            src.read("./SKILL.md").await,
            Err(Error::PathRejected { .. })
        ));
        assert!(matches!(src.read("nope").await, Err(Error::NotFound(_))));
    }

    #[test]
    fn open_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.zip");
        std::fs::write(
            &path,
            zip(&[("a/SKILL.md", b"x", 0o644), ("a/skill.md", b"y", 0o644)]),
        )
        .unwrap();
        let err = ArchiveSource::open(&path, ArchiveLimits::default()).unwrap_err();
        assert!(
            matches!(err, Error::Archive(ArchiveError::CaseCollision { .. })),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
