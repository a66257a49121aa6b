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

use super::archived::archive_source;
use crate::archive;

archive_source!(
    /// A skill source over a tar archive, gzip-compressed or not (told apart by magic bytes).
    TarballSource,
    archive::read_tar,
    "tarball"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{ArchiveError, ArchiveLimits};
    use crate::error::Error;
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
