//! Reproducible archives: the same files always give byte-identical `.tar.gz` and `.zip`.
//!
//! ```text
//! one skill:      SKILL.md                 many skills:  pdf-forms/SKILL.md
//!                 scripts/fill.py (0755)                 pdf-forms/scripts/fill.py
//!                 references/fields.md                   log-search/SKILL.md
//! ```
//!
//! What is fixed: entries sorted by byte order of path, files only (no directory entries), mtime
//! 1980-01-01T00:00:00Z, uid/gid 0 with empty owner names, mode 0644 or 0755 from the executable
//! bit, GNU long names for paths over 100 bytes; gzip with mtime 0, no file name, OS byte 255 and
//! level 9; zip entries deflated at level 9, "made by" Unix, no extra fields. The archive is
//! written to a temporary file beside the output and renamed into place, so a failed pack leaves
//! nothing half-written.
//!
//! [`write_archive`] writes only what skillcat's own archive reader reads back: the file is
//! read with the checked reader under the default [`ArchiveLimits`] before it is renamed into
//! place. A directory may hold what no archive may (`README.md` beside `readme.md`, a file named
//! `CON`, more than the limits); such a pack fails with the reader's reason, instead of writing
//! an archive every reader refuses.

use std::io::{self, Seek, Write};
use std::path::Path;

use bytes::Bytes;

use crate::archive::{ArchiveKind, ArchiveLimits, read_archive};
use crate::error::{Error, Result};
use crate::fs::AtomicWrite;

/// The fixed timestamp of every entry: 1980-01-01T00:00:00Z (the earliest a zip can hold).
pub const FIXED_MTIME: u64 = 315_532_800;

/// One file to pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackEntry {
    /// Path inside the archive, `/`-separated.
    pub path: String,
    /// The bytes.
    pub bytes: Bytes,
    /// Whether to mark it 0755 (else 0644).
    pub executable: bool,
}

/// An archive format [`pack`](write_archive) can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackFormat {
    /// gzip-compressed tar.
    TarGz,
    /// zip, deflated.
    Zip,
}

impl PackFormat {
    /// The format an output path asks for: `.tar.gz`/`.tgz` or `.zip`.
    pub fn for_path(path: &Path) -> Option<PackFormat> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(PackFormat::TarGz)
        } else if name.ends_with(".zip") {
            Some(PackFormat::Zip)
        } else {
            None
        }
    }
}

fn mode(executable: bool) -> u32 {
    if executable { 0o755 } else { 0o644 }
}

fn sorted(entries: &[PackEntry]) -> Vec<&PackEntry> {
    let mut v: Vec<&PackEntry> = entries.iter().collect();
    v.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    v
}

/// Writes a reproducible `.tar.gz` of `entries` to `out`.
pub fn write_tar_gz(entries: &[PackEntry], out: impl Write) -> io::Result<()> {
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(out, flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    tar.follow_symlinks(false);
    for e in sorted(entries) {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(e.bytes.len() as u64);
        header.set_mode(mode(e.executable));
        header.set_mtime(FIXED_MTIME);
        header.set_uid(0);
        header.set_gid(0);
        header.set_username("")?;
        header.set_groupname("")?;
        tar.append_data(&mut header, &e.path, &e.bytes[..])?;
    }
    let gz = tar.into_inner()?;
    gz.finish()?.flush()
}

/// Writes a reproducible `.zip` of `entries` to `out`.
pub fn write_zip<W: Write + Seek>(entries: &[PackEntry], out: W) -> io::Result<()> {
    let mut zip = zip::ZipWriter::new(out);
    let when = zip::DateTime::DEFAULT;
    for e in sorted(entries) {
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(9))
            .last_modified_time(when)
            .unix_permissions(mode(e.executable))
            .system(zip::System::Unix)
            .large_file(false);
        zip.start_file(e.path.as_str(), opts)
            .map_err(io::Error::other)?;
        zip.write_all(&e.bytes)?;
    }
    zip.finish().map_err(io::Error::other)?.flush()
}

/// Writes `entries` to `path` in the format its extension asks for, through a temporary file in
/// the same directory renamed into place.
pub fn write_archive(entries: &[PackEntry], path: &Path) -> Result<()> {
    let format = PackFormat::for_path(path)
        .ok_or_else(|| Error::UnknownArchiveFormat(path.display().to_string()))?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let shown = path.display().to_string();
    // 0644 whatever the umask: an archive is meant to be shared. Dropped on an error, the
    // temporary file is removed: a failed pack never leaves a partial archive.
    let mut tmp = AtomicWrite::new(0o644)
        .create(path)
        .map_err(|e| Error::io(dir.display().to_string(), e))?;
    let written = match format {
        PackFormat::TarGz => write_tar_gz(entries, io::BufWriter::new(tmp.file())),
        PackFormat::Zip => write_zip(entries, io::BufWriter::new(tmp.file())),
    };
    written.map_err(|e| Error::io(&shown, e))?;
    let packed = std::fs::read(tmp.temp_path()).map_err(|e| Error::io(&shown, e))?;
    let kind = match format {
        PackFormat::TarGz => ArchiveKind::TarGz,
        PackFormat::Zip => ArchiveKind::Zip,
    };
    if let Err(e) = read_archive(kind, &packed, &ArchiveLimits::default()) {
        return Err(Error::UnreadableArchive {
            path: shown,
            source: e,
        });
    }
    drop(packed);
    tmp.commit().map_err(|e| Error::io(&shown, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<PackEntry> {
        vec![
            PackEntry {
                path: "scripts/run.sh".into(),
                bytes: Bytes::from_static(b"#!/bin/sh\n"),
                executable: true,
            },
            PackEntry {
                path: "SKILL.md".into(),
                bytes: Bytes::from_static(b"# Hello\n"),
                executable: false,
            },
            PackEntry {
                path: format!("{}/x.md", "d".repeat(120)),
                bytes: Bytes::from_static(b"x"),
                executable: false,
            },
        ]
    }

    #[test]
    fn same_files_same_bytes_in_any_order() {
        let mut a = Vec::new();
        write_tar_gz(&entries(), &mut a).unwrap();
        let mut rev = entries();
        rev.reverse();
        let mut b = Vec::new();
        write_tar_gz(&rev, &mut b).unwrap();
        assert_eq!(a, b);
        let mut za = io::Cursor::new(Vec::new());
        write_zip(&entries(), &mut za).unwrap();
        let mut zb = io::Cursor::new(Vec::new());
        write_zip(&rev, &mut zb).unwrap();
        assert_eq!(za.into_inner(), zb.into_inner());
    }

    #[test]
    fn tar_headers_are_normalised() {
        let mut out = Vec::new();
        write_tar_gz(&entries(), &mut out).unwrap();
        assert_eq!(&out[4..8], &[0, 0, 0, 0], "gzip mtime is zero");
        assert_eq!(out[9], 255, "gzip OS byte is 'unknown'");
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(&out[..]));
        let mut seen = Vec::new();
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            let h = e.header();
            assert_eq!(h.mtime().unwrap(), FIXED_MTIME);
            assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
            assert_eq!(h.username().unwrap(), Some(""));
            seen.push((e.path().unwrap().display().to_string(), h.mode().unwrap()));
        }
        assert_eq!(seen[0], ("SKILL.md".to_string(), 0o644));
        assert_eq!(seen[2], ("scripts/run.sh".to_string(), 0o755));
        assert!(
            seen[1].0.starts_with("ddd"),
            "long paths survive: {}",
            seen[1].0
        );
    }

    #[test]
    fn output_extension_decides_the_format() {
        assert_eq!(
            PackFormat::for_path(Path::new("a.tar.gz")),
            Some(PackFormat::TarGz)
        );
        assert_eq!(
            PackFormat::for_path(Path::new("a.TGZ")),
            Some(PackFormat::TarGz)
        );
        assert_eq!(
            PackFormat::for_path(Path::new("a.zip")),
            Some(PackFormat::Zip)
        );
        assert_eq!(PackFormat::for_path(Path::new("a.tar")), None);
        let tmp = tempfile::tempdir().unwrap();
        assert!(write_archive(&entries(), &tmp.path().join("x.rar")).is_err());
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "nothing left behind"
        );
    }
}
