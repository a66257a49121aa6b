//! Opening and checking a downloaded artifact (pure: bytes in, files out).

use std::path::Path;

use bytes::Bytes;
use reqwest::Url;

use super::client::{HttpError, redact};
use super::index::Extra;
use crate::archive::{self, ArchiveKind, ArchiveLimits};
use crate::digest::{sha256, tree_digest};
use crate::error::{Error, Result};

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

/// Opens an archive artifact with the checked readers; its root (or its one wrapped folder)
/// is the skill.
pub(crate) fn open_archive(
    bytes: &[u8],
    content_type: Option<&str>,
    url: &Url,
    limits: ArchiveLimits,
) -> Result<Files> {
    let shown = redact(url);
    let kind = archive_kind(content_type, url, bytes)
        .ok_or_else(|| Error::Invalid(format!("{shown}: not a .tar.gz, .tar or .zip archive")))?;
    let tree = archive::read_archive(kind, bytes, &limits)?;
    let root = match tree.roots() {
        [one] => one.clone(),
        roots => {
            return Err(Error::Invalid(format!(
                "{shown}: an index entry is one skill, but the archive holds {} skill folders",
                roots.len()
            )));
        }
    };
    Ok(tree
        .under(&root)
        .map(|(path, f)| (path.to_string(), f.bytes.clone(), f.executable))
        .collect())
}

/// When skillcat's extra field gives a skill digest, the files must give it.
pub(super) fn check_extra(what: &str, files: &Files, extra: Option<&Extra>) -> Result<()> {
    let Some(expected) = extra.and_then(|x| x.skill_digest.as_ref()) else {
        return Ok(());
    };
    let actual = tree_digest(files.iter().map(|(p, b, _)| (p.as_str(), sha256(b))));
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
