//! Zip source: a `.zip` of one skill or of several.
//!
//! ```text
//! pdf-tools.zip                          bundle.zip
//! ├── SKILL.md         list() → [""]     ├── pdf/SKILL.md        list() → ["pdf", "xlsx"]
//! ├── scripts/run.sh                     ├── pdf/scripts/run.sh
//! └── assets/logo.png                    └── xlsx/SKILL.md
//!
//! location("scripts/run.sh") = "/abs/path/pdf-tools.zip!/scripts/run.sh"
//! ```
//!
//! Like the [tarball source](super::TarballSource), the archive is read, checked and held in
//! memory when the source is opened (synchronously); `list`/`files`/`read` never block. The
//! rules are those of [`crate::archive`]; the zip-specific ones (no prepended data, no
//! duplicate central-directory names, local and central headers agree, no encryption, stored
//! or deflate only, sizes and CRC-32 as declared) are in its `zip` module.

use super::archived::archive_source;
use crate::archive;

archive_source!(
    /// A skill source over a zip archive.
    ZipSource,
    archive::read_zip,
    "zip archive"
);

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::archive::{ArchiveError, ArchiveLimits};
    use crate::error::Error;
    use crate::source::Source;
    use crate::source::SourceExt;

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
        let src = ZipSource::from_bytes("skill.zip", &bytes, ArchiveLimits::default()).unwrap();
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
        let err = ZipSource::open(&path, ArchiveLimits::default()).unwrap_err();
        assert!(
            matches!(err, Error::Archive(ArchiveError::CaseCollision { .. })),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
