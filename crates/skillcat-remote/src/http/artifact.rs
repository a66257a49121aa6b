//! Opening and checking a downloaded artifact (pure: bytes in, the core's archive source out).

use std::path::Path;

use bytes::Bytes;
use reqwest::Url;

use super::client::{HttpError, redact};
use super::index::Extra;
use crate::archive::{self, ArchiveKind, ArchiveLimits, ArchiveTree, TreeFile};
use crate::digest::{sha256, tree_digest};
use crate::error::{Error, Result};
use crate::path::{FileEntry, join_path};
use crate::source::{ArchiveSource, Source};

/// Files as `(path, bytes, executable)`.
pub(crate) type Files = Vec<(String, Bytes, bool)>;

/// The archive format: from the Content-Type, else the URL's extension, else magic bytes.
pub(crate) fn archive_kind(
    content_type: Option<&str>,
    url: &Url,
    bytes: &[u8],
) -> Option<ArchiveKind> {
    let mime = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase());
    match mime.as_deref() {
        Some("application/gzip" | "application/x-gzip" | "application/x-tgz") => {
            return Some(ArchiveKind::TarGz);
        }
        Some("application/x-tar") => return Some(ArchiveKind::Tar),
        Some("application/zip" | "application/x-zip-compressed") => return Some(ArchiveKind::Zip),
        _ => {}
    }
    let last = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("")
        .to_ascii_lowercase();
    if last.ends_with(".tar.gz") || last.ends_with(".tgz") {
        return Some(ArchiveKind::TarGz);
    }
    if last.ends_with(".tar") {
        return Some(ArchiveKind::Tar);
    }
    if last.ends_with(".zip") {
        return Some(ArchiveKind::Zip);
    }
    archive::sniff(Path::new(""), bytes)
}

/// One skill's files, verified and held by the core's archive source (the one in-memory
/// store): an archive artifact as it was downloaded, or a lone SKILL.md or an index's file
/// list as a tree of one skill. The HTTP and OCI sources answer `files` and `read` from it.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    source: ArchiveSource,
    /// The skill's root inside the source: `""`, or an archive's one wrapped folder.
    root: String,
}

impl Held {
    /// Opens an archive artifact with the checked readers (its bytes already checked against
    /// `sha256`); its root (or its one wrapped folder) is the skill.
    pub(crate) fn archive(
        bytes: &[u8],
        sha256: [u8; 32],
        content_type: Option<&str>,
        url: &Url,
        limits: ArchiveLimits,
    ) -> Result<Held> {
        let shown = redact(url);
        let kind = archive_kind(content_type, url, bytes).ok_or_else(|| {
            Error::Invalid(format!("{shown}: not a .tar.gz, .tar or .zip archive"))
        })?;
        let source = ArchiveSource::from_hashed(kind, &shown, bytes, sha256, limits)?;
        let root = match source.tree().roots() {
            [one] => one.clone(),
            roots => {
                return Err(Error::Invalid(format!(
                    "{shown}: an index entry is one skill, but the archive holds {} skill folders",
                    roots.len()
                )));
            }
        };
        Ok(Held { source, root })
    }

    /// Files held in memory (a lone SKILL.md, an index's file list) as one skill named `what`
    /// in locations.
    pub(crate) fn files(what: &str, files: Files) -> Result<Held> {
        let tree = ArchiveTree::of_skill(
            files
                .into_iter()
                .map(|(path, bytes, executable)| (path, TreeFile { bytes, executable })),
        )?;
        Ok(Held {
            source: ArchiveSource::from_tree(what, tree),
            root: String::new(),
        })
    }

    /// Every file of the skill, sorted, from the archive source.
    pub(crate) async fn list(&self) -> Result<Vec<FileEntry>> {
        self.source.files(&self.root).await
    }

    /// The bytes of `rel` (a path inside the skill, already checked); `None` when the skill has
    /// no such file.
    pub(crate) async fn read(&self, rel: &str) -> Result<Option<Bytes>> {
        match self.source.read(&join_path(&self.root, rel)).await {
            Ok(b) => Ok(Some(b)),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The skill digest of the files held.
    pub(crate) fn skill_digest(&self) -> String {
        tree_digest(
            self.source
                .tree()
                .under(&self.root)
                .map(|(p, f)| (p, sha256(&f.bytes))),
        )
    }
}

/// When skillcat's extra field gives a skill digest, the files must give it.
pub(super) fn check_extra(what: &str, held: &Held, extra: Option<&Extra>) -> Result<()> {
    let Some(expected) = extra.and_then(|x| x.skill_digest.as_ref()) else {
        return Ok(());
    };
    let actual = held.skill_digest();
    if &actual != expected {
        return Err(HttpError::Digest {
            what: format!("{what}: skill digest"),
            expected: expected.clone(),
            actual,
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_format_from_type_then_extension_then_magic() {
        let u = |s: &str| Url::parse(s).unwrap();
        let gz = [0x1f, 0x8b, 8];
        assert_eq!(
            archive_kind(Some("application/zip"), &u("http://h/a.tar.gz"), &gz),
            Some(ArchiveKind::Zip)
        );
        assert_eq!(
            archive_kind(Some("application/octet-stream"), &u("http://h/a.zip"), &gz),
            Some(ArchiveKind::Zip)
        );
        assert_eq!(
            archive_kind(None, &u("http://h/blobs/sha256/ab"), &gz),
            Some(ArchiveKind::TarGz)
        );
        assert_eq!(archive_kind(None, &u("http://h/x"), b"hello"), None);
    }
}
