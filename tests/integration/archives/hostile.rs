//! Hostile archives: one named case per rule, each building its archive bytes here, asserting
//! the specific `ArchiveError` and that nothing but the archive exists in its temp dir after
//! it was read. Then the archives that must be accepted.
//!
//! Origin: step 2 (issue 3: archives, the skill digest, packs and signatures).

use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::{DeflateEncoder, GzEncoder};
use skillcat::Error;
use skillcat::archive::{ArchiveError, ArchiveKind, ArchiveLimits, ArchiveTree, sniff};
use skillcat::source::{ArchiveSource, SourceExt, discover};
use tar::{EntryType, Header};

// ───────────────────────────── tar, by hand ─────────────────────────────

/// A ustar header whose name bytes are written straight into the name field (≤ 100 bytes),
/// so names the `tar` builder would refuse can be stored.
fn header(name: &[u8], kind: u8, size: u64, mode: u32) -> Header {
    let mut h = Header::new_ustar();
    h.as_old_mut().name[..name.len()].copy_from_slice(name);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(0);
    h.set_entry_type(EntryType::new(kind));
    h.set_cksum();
    h
}

#[derive(Default)]
struct Tar(Vec<u8>);

impl Tar {
    fn raw(mut self, h: &Header, data: &[u8]) -> Self {
        self.0.extend_from_slice(h.as_bytes());
        self.0.extend_from_slice(data);
        self.0.resize(self.0.len().next_multiple_of(512), 0);
        self
    }
    fn entry(self, name: &[u8], kind: u8, data: &[u8], mode: u32) -> Self {
        let h = header(name, kind, data.len() as u64, mode);
        self.raw(&h, data)
    }
    fn file(self, name: &str, data: &[u8]) -> Self {
        self.entry(name.as_bytes(), b'0', data, 0o644)
    }
    fn raw_file(self, name: &[u8], data: &[u8]) -> Self {
        self.entry(name, b'0', data, 0o644)
    }
    fn exe(self, name: &str, data: &[u8]) -> Self {
        self.entry(name.as_bytes(), b'0', data, 0o755)
    }
    fn dir(self, name: &str) -> Self {
        self.entry(name.as_bytes(), b'5', b"", 0o755)
    }
    fn skill(self) -> Self {
        self.file("SKILL.md", b"---\nname: x\ndescription: d\n---\n")
    }
    /// A PAX extended header (`x`) for the next entry, or a global one (`g`).
    fn pax(self, kind: u8, records: &[(&str, &[u8])]) -> Self {
        let mut data = Vec::new();
        for (key, value) in records {
            let body_len = key.len() + value.len() + 3; // ' ', '=', '\n'
            let mut len = body_len + 1;
            while len != body_len + len.to_string().len() {
                len = body_len + len.to_string().len();
            }
            data.extend_from_slice(format!("{len} {key}=").as_bytes());
            data.extend_from_slice(value);
            data.push(b'\n');
        }
        self.entry(b"PaxHeaders/x", kind, &data, 0o644)
    }
    /// A GNU long-name entry (`L`) naming the next entry.
    fn gnu_long_name(self, name: &[u8]) -> Self {
        let mut h = Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        let mut data = name.to_vec();
        data.push(0);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(EntryType::GNULongName);
        h.set_cksum();
        self.raw(&h, &data)
    }
    fn finish(mut self) -> Vec<u8> {
        self.0.extend_from_slice(&[0; 1024]);
        self.0
    }
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut e = DeflateEncoder::new(Vec::new(), Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

// ───────────────────────────── zip, by hand ─────────────────────────────

const UNIX: u16 = 0x031e; // version made by: Unix, 3.0

#[derive(Clone)]
struct Z {
    name: Vec<u8>,
    stored: Vec<u8>,
    method: u16,
    flags: u16,
    crc: u32,
    csize: u32,
    usize: u32,
    made_by: u16,
    attr: u32,
    local_name: Option<Vec<u8>>,
}

fn crc(data: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(data);
    c.sum()
}

/// An honest stored entry, Unix mode 0644.
fn zfile(name: &str, data: &[u8]) -> Z {
    zraw(name.as_bytes(), data)
}

fn zraw(name: &[u8], data: &[u8]) -> Z {
    Z {
        name: name.to_vec(),
        stored: data.to_vec(),
        method: 0,
        flags: 0,
        crc: crc(data),
        csize: data.len() as u32,
        usize: data.len() as u32,
        made_by: UNIX,
        attr: 0o100644 << 16,
        local_name: None,
    }
}

/// An honest deflated entry.
fn zdeflated(name: &str, data: &[u8]) -> Z {
    let packed = deflate(data);
    Z {
        method: 8,
        csize: packed.len() as u32,
        stored: packed,
        ..zfile(name, data)
    }
}

fn zskill() -> Z {
    zfile("SKILL.md", b"---\nname: x\ndescription: d\n---\n")
}

fn zip_raw(entries: &[Z]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    for e in entries {
        offsets.push(out.len() as u32);
        let name = e.local_name.as_ref().unwrap_or(&e.name);
        out.extend_from_slice(b"PK\x03\x04");
        out.extend_from_slice(&20u16.to_le_bytes());
        out.extend_from_slice(&e.flags.to_le_bytes());
        out.extend_from_slice(&e.method.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // time
        out.extend_from_slice(&0x21u16.to_le_bytes()); // date: 1980-01-01
        out.extend_from_slice(&e.crc.to_le_bytes());
        out.extend_from_slice(&e.csize.to_le_bytes());
        out.extend_from_slice(&e.usize.to_le_bytes());
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&e.stored);
    }
    let cd_start = out.len() as u32;
    for (e, offset) in entries.iter().zip(offsets) {
        out.extend_from_slice(b"PK\x01\x02");
        out.extend_from_slice(&e.made_by.to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes());
        out.extend_from_slice(&e.flags.to_le_bytes());
        out.extend_from_slice(&e.method.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&0x21u16.to_le_bytes());
        out.extend_from_slice(&e.crc.to_le_bytes());
        out.extend_from_slice(&e.csize.to_le_bytes());
        out.extend_from_slice(&e.usize.to_le_bytes());
        out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0; 4]); // extra, comment lengths
        out.extend_from_slice(&[0; 4]); // disk, internal attributes
        out.extend_from_slice(&e.attr.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&e.name);
    }
    let cd_len = out.len() as u32 - cd_start;
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0; 4]); // disk numbers
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd_start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

// ───────────────────────────── running a case ─────────────────────────────

/// Writes the archive into a fresh temp dir, opens it with the source its magic bytes pick
/// (`ArchiveSource`, reading from disk), and checks that the dir still holds
/// only the archive.
fn open(file_name: &str, bytes: &[u8], limits: ArchiveLimits) -> skillcat::Result<ArchiveTree> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name);
    std::fs::write(&path, bytes).unwrap();
    let result = open_source(&path, limits);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        [file_name],
        "{file_name}: something was written beside the archive"
    );
    result
}

fn open_source(path: &Path, limits: ArchiveLimits) -> skillcat::Result<ArchiveTree> {
    let head = std::fs::read(path).unwrap();
    sniff(path, &head).expect("a known archive kind");
    Ok(ArchiveSource::open(path, limits)?.tree().clone())
}

fn small(f: impl FnOnce(&mut ArchiveLimits)) -> ArchiveLimits {
    let mut l = ArchiveLimits::default();
    f(&mut l);
    l
}

struct Case {
    name: &'static str,
    file: &'static str,
    bytes: Vec<u8>,
    limits: ArchiveLimits,
    want: &'static str,
    check: fn(&ArchiveError) -> bool,
}

macro_rules! case {
    ($name:literal, $file:literal, $bytes:expr, limits: $limits:expr, $want:pat) => {
        Case {
            name: $name,
            file: $file,
            bytes: $bytes,
            limits: $limits,
            want: stringify!($want),
            check: |e| matches!(e, $want),
        }
    };
    ($name:literal, $file:literal, $bytes:expr, $want:pat) => {
        case!($name, $file, $bytes, limits: ArchiveLimits::default(), $want)
    };
}

use ArchiveError as E;

fn hostile_cases() -> Vec<Case> {
    let long_component = "a".repeat(256);
    let long_path = format!("{}/SKILL.md", vec!["d".repeat(100); 11].join("/"));
    let deep = format!("{}/x.md", vec!["d"; 16].join("/"));
    let zeros = vec![0u8; 256 * 1024];
    let bomb_limits = small(|l| l.ratio_floor = 64 * 1024);
    vec![
        // ── paths ──
        case!(
            "tar_traversal_dotdot",
            "x.tar",
            Tar::default().skill().file("../x", b"x").finish(),
            E::DotComponent { .. }
        ),
        case!(
            "tar_traversal_inner",
            "x.tar",
            Tar::default().skill().file("a/../../b", b"x").finish(),
            E::DotComponent { .. }
        ),
        case!(
            "zip_traversal_dotdot",
            "x.zip",
            zip_raw(&[zskill(), zfile("../x", b"x")]),
            E::DotComponent { .. }
        ),
        case!(
            "tar_absolute",
            "x.tar",
            Tar::default().skill().file("/etc/passwd", b"x").finish(),
            E::AbsolutePath { .. }
        ),
        case!(
            "zip_absolute",
            "x.zip",
            zip_raw(&[zskill(), zfile("/etc/passwd", b"x")]),
            E::AbsolutePath { .. }
        ),
        case!(
            "tar_windows_drive",
            "x.tar",
            Tar::default().skill().file("C:\\x", b"x").finish(),
            E::AbsolutePath { .. }
        ),
        case!(
            "zip_unc_path",
            "x.zip",
            zip_raw(&[zskill(), zfile("\\\\srv\\share\\x", b"x")]),
            E::AbsolutePath { .. }
        ),
        case!(
            "tar_backslash",
            "x.tar",
            Tar::default()
                .skill()
                .file("scripts\\run.sh", b"x")
                .finish(),
            E::Backslash { .. }
        ),
        case!(
            "tar_nul_in_pax_path",
            "x.tar",
            Tar::default()
                .skill()
                .pax(b'x', &[("path", b"SKILL.md\0.txt")])
                .file("placeholder", b"x")
                .finish(),
            E::ControlChar { .. }
        ),
        case!(
            "zip_nul",
            "x.zip",
            zip_raw(&[zskill(), zraw(b"a\0b", b"x")]),
            E::ControlChar { .. }
        ),
        case!(
            "tar_control_char",
            "x.tar",
            Tar::default().skill().file("a\x1b[2Jb", b"x").finish(),
            E::ControlChar { .. }
        ),
        case!(
            "zip_invisible_char_git",
            "x.zip",
            zip_raw(&[zskill(), zfile(".g\u{200c}it/hooks/pre-commit", b"x")]),
            E::ControlChar { .. }
        ),
        case!(
            "tar_not_utf8",
            "x.tar",
            Tar::default()
                .skill()
                .raw_file(b"caf\xe9.md", b"x")
                .finish(),
            E::NotUtf8Path { .. }
        ),
        case!(
            "zip_cp437_name",
            "x.zip",
            zip_raw(&[zskill(), zraw(b"\x80\x81.md", b"x")]),
            E::NotUtf8Path { .. }
        ),
        case!(
            "tar_con",
            "x.tar",
            Tar::default().skill().file("CON", b"x").finish(),
            E::WindowsReserved { .. }
        ),
        case!(
            "zip_nul_txt",
            "x.zip",
            zip_raw(&[zskill(), zfile("assets/nul.txt", b"x")]),
            E::WindowsReserved { .. }
        ),
        case!(
            "tar_trailing_dot",
            "x.tar",
            Tar::default().skill().file("notes.", b"x").finish(),
            E::WindowsReserved { .. }
        ),
        case!(
            "tar_trailing_space",
            "x.tar",
            Tar::default().skill().file("notes ", b"x").finish(),
            E::WindowsReserved { .. }
        ),
        case!(
            "zip_alternate_stream",
            "x.zip",
            zip_raw(&[zskill(), zfile("SKILL.md:evil", b"x")]),
            E::WindowsReserved { .. }
        ),
        case!(
            "tar_short_name",
            "x.tar",
            Tar::default().skill().file("SKILL~1.MD", b"x").finish(),
            E::WindowsReserved { .. }
        ),
        case!(
            "tar_empty_component",
            "x.tar",
            Tar::default().skill().file("a//b", b"x").finish(),
            E::EmptyComponent { .. }
        ),
        case!(
            "tar_long_component",
            "x.tar",
            Tar::default()
                .skill()
                .gnu_long_name(long_component.as_bytes())
                .file("placeholder", b"x")
                .finish(),
            E::ComponentTooLong { limit: 255, .. }
        ),
        case!(
            "tar_long_path",
            "x.tar",
            Tar::default()
                .pax(b'x', &[("path", long_path.as_bytes())])
                .file("placeholder", b"x")
                .finish(),
            E::PathTooLong { limit: 1024, .. }
        ),
        case!(
            "tar_deep_path",
            "x.tar",
            Tar::default().skill().file(&deep, b"x").finish(),
            E::TooDeep { limit: 16, .. }
        ),
        // ── duplicates and collisions ──
        case!(
            "tar_duplicate",
            "x.tar",
            Tar::default().skill().file("SKILL.md", b"other").finish(),
            E::Duplicate { .. }
        ),
        case!(
            "zip_duplicate",
            "x.zip",
            zip_raw(&[zskill(), zfile("SKILL.md", b"other")]),
            E::Duplicate { .. }
        ),
        case!(
            "tar_case_collision",
            "x.tar",
            Tar::default().skill().file("skill.md", b"x").finish(),
            E::CaseCollision { .. }
        ),
        case!(
            "zip_case_collision_dirs",
            "x.zip",
            zip_raw(&[zskill(), zfile("Scripts/a", b"x"), zfile("scripts/b", b"x")]),
            E::CaseCollision { .. }
        ),
        case!(
            "tar_nfc_nfd_collision",
            "x.tar",
            Tar::default()
                .skill()
                .file("caf\u{e9}.md", b"x")
                .file("cafe\u{301}.md", b"x")
                .finish(),
            E::CaseCollision { .. }
        ),
        case!(
            "tar_file_used_as_dir",
            "x.tar",
            Tar::default()
                .skill()
                .file("scripts", b"x")
                .file("scripts/run.sh", b"x")
                .finish(),
            E::PathConflict { .. }
        ),
        // ── types ──
        case!(
            "tar_symlink",
            "x.tar",
            Tar::default()
                .skill()
                .entry(b"link", b'2', b"", 0o777)
                .finish(),
            E::Symlink { .. }
        ),
        case!(
            "zip_symlink",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    attr: 0o120777 << 16,
                    ..zfile("link", b"/etc")
                }
            ]),
            E::Symlink { .. }
        ),
        case!(
            "tar_hardlink",
            "x.tar",
            Tar::default()
                .skill()
                .entry(b"shadow", b'1', b"", 0o644)
                .finish(),
            E::Hardlink { .. }
        ),
        case!(
            "tar_char_device",
            "x.tar",
            Tar::default()
                .skill()
                .entry(b"null", b'3', b"", 0o666)
                .finish(),
            E::SpecialFile { .. }
        ),
        case!(
            "tar_block_device",
            "x.tar",
            Tar::default()
                .skill()
                .entry(b"sda", b'4', b"", 0o660)
                .finish(),
            E::SpecialFile { .. }
        ),
        case!(
            "tar_fifo",
            "x.tar",
            Tar::default()
                .skill()
                .entry(b"pipe", b'6', b"", 0o644)
                .finish(),
            E::SpecialFile { .. }
        ),
        case!(
            "zip_fifo",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    attr: 0o010644 << 16,
                    ..zfile("pipe", b"")
                }
            ]),
            E::SpecialFile { .. }
        ),
        case!(
            "tar_unknown_type",
            "x.tar",
            Tar::default()
                .skill()
                .entry(b"vol", b'V', b"", 0o644)
                .finish(),
            E::SpecialFile { .. }
        ),
        // ── gzip and tar stream ──
        case!(
            "gzip_trailing_bytes",
            "x.tar.gz",
            [gz(&Tar::default().skill().finish()), b"garbage".to_vec()].concat(),
            E::GzipTrailingData { bytes: 7 }
        ),
        case!(
            "gzip_concatenated_members",
            "x.tar.gz",
            [
                gz(&Tar::default().skill().finish()),
                gz(&Tar::default().file("extra.md", b"x").finish())
            ]
            .concat(),
            E::GzipTrailingData { .. }
        ),
        case!(
            "tar_second_archive_after_end",
            "x.tar",
            [
                Tar::default().skill().finish(),
                Tar::default().file("hidden.md", b"x").finish()
            ]
            .concat(),
            E::TarTrailingData
        ),
        // The header claims 5 bytes; 600 follow, so the next "header" is file data.
        case!(
            "tar_lying_size_claims_small",
            "x.tar",
            Tar::default()
                .skill()
                .raw(&header(b"a.md", b'0', 5, 0o644), &[b'A'; 600])
                .finish(),
            E::Corrupt { .. }
        ),
        case!(
            "tar_truncated_data",
            "x.tar",
            {
                let mut t = Tar::default().skill().0;
                t.extend_from_slice(header(b"a.md", b'0', 1000, 0o644).as_bytes());
                t.extend_from_slice(&[b'A'; 100]);
                t
            },
            E::SizeMismatch {
                declared: 1000,
                actual: 100,
                ..
            }
        ),
        case!(
            "tar_pax_size_desync",
            "x.tar",
            {
                let t = Tar::default().skill().pax(b'x', &[("size", b"20")]);
                t.raw(&header(b"a.md", b'0', 10, 0o644), &[b'A'; 20])
                    .finish()
            },
            E::TarHeaderMismatch { .. }
        ),
        case!(
            "targz_bomb",
            "x.tar.gz",
            gz(&Tar::default().skill().file("zeros.bin", &zeros).finish()),
            limits: bomb_limits,
            E::RatioExceeded { limit: 200, .. }
        ),
        // ── zip structure ──
        case!(
            "zip_local_central_name_mismatch",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    local_name: Some(b"evil.sh".to_vec()),
                    ..zfile("good.md", b"x")
                }
            ]),
            E::ZipHeaderMismatch { .. }
        ),
        case!(
            "zip_encrypted",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    flags: 1,
                    ..zfile("secret.md", &[7; 24])
                }
            ]),
            E::ZipEncrypted { .. }
        ),
        case!(
            "zip_bzip2",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    method: 12,
                    ..zfile("a.md", b"x")
                }
            ]),
            E::ZipUnsupportedCompression { .. }
        ),
        case!(
            "zip_lzma",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    method: 14,
                    ..zfile("a.md", b"x")
                }
            ]),
            E::ZipUnsupportedCompression { .. }
        ),
        case!(
            "zip_lying_size_stored",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    usize: 5,
                    ..zfile("a.md", b"hello world!")
                }
            ]),
            E::SizeMismatch { declared: 5, .. }
        ),
        case!(
            "zip_lying_size_deflated",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    usize: 10,
                    ..zdeflated("a.md", &[b'x'; 100_000])
                }
            ]),
            E::SizeMismatch { declared: 10, .. }
        ),
        case!(
            "zip_bomb",
            "x.zip",
            zip_raw(&[zskill(), zdeflated("zeros.bin", &zeros)]),
            limits: bomb_limits,
            E::RatioExceeded { limit: 200, .. }
        ),
        case!(
            "zip_bad_crc",
            "x.zip",
            zip_raw(&[
                zskill(),
                Z {
                    crc: 1,
                    ..zfile("a.md", b"x")
                }
            ]),
            E::Corrupt { .. }
        ),
        case!(
            "zip_trailing_after_end",
            "x.zip",
            [zip_raw(&[zskill()]), b"tail".to_vec()].concat(),
            E::Corrupt { .. }
        ),
        case!(
            "zip_prepended_data",
            "x.zip",
            [b"#!/bin/sh\nexit 0\n".to_vec(), zip_raw(&[zskill()])].concat(),
            E::Corrupt { .. }
        ),
        // ── limits ──
        case!(
            "total_too_large",
            "x.tar",
            Tar::default()
                .skill()
                .file("a", &[1; 40])
                .file("b", &[1; 40])
                .finish(),
            limits: small(|l| l.max_total = 100),
            E::TotalTooLarge { limit: 100, .. }
        ),
        case!(
            "file_too_large",
            "x.zip",
            zip_raw(&[zskill(), zfile("big.bin", &[1; 11])]),
            limits: small(|l| l.max_file = 10),
            E::FileTooLarge { limit: 10, .. }
        ),
        case!(
            "skill_md_too_large",
            "x.tar.gz",
            gz(&Tar::default().file("SKILL.md", &[b'#'; 11]).finish()),
            limits: small(|l| l.max_document = 10),
            E::DocumentTooLarge { limit: 10, .. }
        ),
        case!(
            "too_many_entries_tar",
            "x.tar",
            (0..5)
                .fold(Tar::default().skill(), |t, i| t
                    .file(&format!("f{i}"), b"x"))
                .finish(),
            limits: small(|l| l.max_entries = 3),
            E::TooManyEntries { limit: 3 }
        ),
        case!(
            "too_many_entries_zip",
            "x.zip",
            zip_raw(
                &(0..5)
                    .map(|i| zfile(&format!("f{i}"), b"x"))
                    .collect::<Vec<_>>()
            ),
            limits: small(|l| l.max_entries = 3),
            E::TooManyEntries { limit: 3 }
        ),
        case!(
            "compressed_too_large",
            "x.tar",
            Tar::default().skill().file("pad", &[0; 8192]).finish(),
            limits: small(|l| l.max_compressed = 4096),
            E::ArchiveTooLarge { limit: 4096 }
        ),
        // ── layout ──
        case!(
            "no_skill",
            "x.tar",
            Tar::default()
                .file("README.md", b"hi")
                .file("docs/a.md", b"a")
                .finish(),
            E::NoSkill
        ),
        case!("empty_zip", "x.zip", zip_raw(&[]), E::NoSkill),
        case!(
            "mixed_layout",
            "x.zip",
            zip_raw(&[zskill(), zfile("pdf/SKILL.md", b"x")]),
            E::MixedLayout { .. }
        ),
    ]
}

#[test]
fn hostile_archives_are_refused_by_the_rule_they_break() {
    let cases = hostile_cases();
    assert!(cases.len() >= 30);
    let mut failures = Vec::new();
    for case in cases {
        match open(case.file, &case.bytes, case.limits) {
            Err(Error::Archive(e)) if (case.check)(&e) => {}
            Err(e) => failures.push(format!("{}: want {}, got {e:?}", case.name, case.want)),
            Ok(tree) => failures.push(format!(
                "{}: want {}, accepted {tree:?}",
                case.name, case.want
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ───────────────────────────── accepted ─────────────────────────────

fn paths(tree: &ArchiveTree) -> Vec<(&str, bool)> {
    tree.iter().map(|(p, f)| (p, f.executable)).collect()
}

#[test]
fn root_skill_tar_gz() {
    let bytes = gz(&Tar::default()
        .skill()
        .exe("scripts/run.sh", b"#!/bin/sh\n")
        .file("assets/logo.png", b"\x89PNG")
        .finish());
    let tree = open("skill.tar.gz", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(tree.roots(), [""]);
    assert_eq!(
        paths(&tree),
        [
            ("SKILL.md", false),
            ("assets/logo.png", false),
            ("scripts/run.sh", true)
        ]
    );
    assert_eq!(
        &tree.get("scripts/run.sh").unwrap().bytes[..],
        b"#!/bin/sh\n"
    );
}

#[test]
fn several_wrapped_skills_zip() {
    let bytes = zip_raw(&[
        Z {
            attr: (0o40755 << 16) | 0x10,
            ..zfile("pdf/", b"")
        },
        zfile("xlsx/", b""), // a directory with a regular-file mode: the trailing `/` decides
        zdeflated("pdf/SKILL.md", b"---\nname: pdf\n---\n"),
        Z {
            attr: 0o100755 << 16,
            ..zdeflated("pdf/scripts/extract.py", b"print(1)\n")
        },
        zfile("xlsx/skill.md", b"---\nname: xlsx\n---\n"),
        zfile("notes/todo.md", b"no document"),
        zfile("README.md", b"bundle"),
    ]);
    let tree = open("bundle.zip", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(tree.roots(), ["notes", "pdf", "xlsx"]);
    assert_eq!(tree.loose_files(), ["README.md"]);
    let pdf: Vec<_> = tree.under("pdf").map(|(p, f)| (p, f.executable)).collect();
    assert_eq!(pdf, [("SKILL.md", false), ("scripts/extract.py", true)]);
}

#[test]
fn dot_slash_tar_as_tar_c_dir_dot_writes_it() {
    let bytes = Tar::default()
        .dir("./")
        .file("./SKILL.md", b"# Hello\n")
        .dir("./scripts/")
        .exe("./scripts/run.sh", b"#!/bin/sh\n")
        .finish();
    let tree = open("skill.tar", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(tree.roots(), [""]);
    assert_eq!(
        paths(&tree),
        [("SKILL.md", false), ("scripts/run.sh", true)]
    );
}

#[test]
fn nested_dirs_and_long_names_within_limits() {
    let nested = format!("{}/leaf.txt", vec!["d"; 15].join("/"));
    let long = format!("references/{}.md", "x".repeat(200));
    let bytes = Tar::default()
        .skill()
        .file(&nested, b"leaf")
        .pax(b'x', &[("path", long.as_bytes())])
        .file("placeholder", b"long")
        .gnu_long_name(format!("assets/{}.txt", "y".repeat(150)).as_bytes())
        .file("placeholder2", b"gnu")
        .finish();
    let tree = open("skill.tar", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(&tree.get(&nested).unwrap().bytes[..], b"leaf");
    assert_eq!(&tree.get(&long).unwrap().bytes[..], b"long");
    assert!(tree.get("placeholder").is_none());
    assert_eq!(tree.len(), 4);
}

#[test]
fn git_archive_global_header_and_junk_are_skipped() {
    let bytes = Tar::default()
        .pax(b'g', &[("comment", b"0123456789abcdef")])
        .dir("skill/")
        .file("skill/SKILL.md", b"# Hi\n")
        .file("skill/.DS_Store", b"junk")
        .file("skill/.git/config", b"[core]")
        .file("skill/.GIT/hooks/post-checkout", b"#!/bin/sh\nevil\n")
        .file("skill/node_modules/x/index.js", b"module.exports = 1;\n")
        .file("skill/.gitignore", b"target/\n")
        .finish();
    let tree = open("skill.tar", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(tree.roots(), ["skill"]);
    assert_eq!(
        paths(&tree),
        [("skill/.gitignore", false), ("skill/SKILL.md", false)]
    );
}

#[test]
fn archives_from_the_real_writers_are_accepted() {
    // tar crate builder (GNU long names for long paths), gzip-compressed.
    let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for (path, data, mode) in [
        ("pdf/SKILL.md", &b"# pdf\n"[..], 0o644),
        ("pdf/scripts/run.sh", b"#!/bin/sh\n", 0o755),
        (
            &*format!("pdf/references/{}.md", "r".repeat(120)),
            b"ref",
            0o644,
        ),
    ] {
        let mut h = Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(mode);
        b.append_data(&mut h, path, data).unwrap();
    }
    let bytes = b.into_inner().unwrap().finish().unwrap();
    let tree = open("bundle.tgz", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(tree.roots(), ["pdf"]);
    assert_eq!(tree.len(), 3);
    assert!(tree.get("pdf/scripts/run.sh").unwrap().executable);

    // zip crate writer, with directory entries.
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().unix_permissions(0o644);
    w.add_directory("xlsx/", opts).unwrap();
    w.start_file("xlsx/SKILL.md", opts).unwrap();
    w.write_all(b"# xlsx\n").unwrap();
    w.start_file("xlsx/run.py", opts.unix_permissions(0o755))
        .unwrap();
    w.write_all(b"print()\n").unwrap();
    w.start_file("xlsx/big.md", opts.large_file(true)).unwrap();
    w.write_all(b"zip64 extra field\n").unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let tree = open("bundle.zip", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(tree.roots(), ["xlsx"]);
    assert_eq!(
        paths(&tree),
        [
            ("xlsx/SKILL.md", false),
            ("xlsx/big.md", false),
            ("xlsx/run.py", true)
        ]
    );

    // zip crate streaming writer: sizes and CRC in data descriptors after the data.
    let mut w = zip::ZipWriter::new_stream(Vec::new());
    let opts = zip::write::SimpleFileOptions::default();
    w.start_file("SKILL.md", opts).unwrap();
    w.write_all(b"# streamed\n").unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let tree = open("streamed.zip", &bytes, ArchiveLimits::default()).unwrap();
    assert_eq!(&tree.get("SKILL.md").unwrap().bytes[..], b"# streamed\n");
}

#[test]
fn a_small_archive_is_not_refused_for_its_ratio() {
    // A blank 100 KiB asset compresses far beyond 200:1; below the floor (1 MiB unpacked)
    // the ratio is not checked, so such a skill stays readable.
    let tar = Tar::default()
        .skill()
        .file("assets/blank.bin", &[0; 100 * 1024])
        .finish();
    let bytes = gz(&tar);
    assert!(
        tar.len() > 200 * bytes.len(),
        "{} vs {}",
        tar.len(),
        bytes.len()
    );
    assert!(open("tiny.tar.gz", &bytes, ArchiveLimits::default()).is_ok());
}

#[test]
fn magic_bytes_win_over_the_extension() {
    let tar = Tar::default().skill().finish();
    assert_eq!(sniff(Path::new("x.zip"), &tar), Some(ArchiveKind::Tar));
    assert_eq!(
        sniff(Path::new("x.tar"), &gz(&tar)),
        Some(ArchiveKind::TarGz)
    );
    assert_eq!(
        sniff(Path::new("x.tgz"), &zip_raw(&[zskill()])),
        Some(ArchiveKind::Zip)
    );
    assert_eq!(
        sniff(Path::new("x.TAR.GZ"), b"????"),
        Some(ArchiveKind::TarGz)
    );
    assert_eq!(sniff(Path::new("x.md"), b"# not an archive"), None);
    // A mislabelled archive still reads as what it is.
    let tree = open("skill.zip", &gz(&tar), ArchiveLimits::default()).unwrap();
    assert_eq!(tree.roots(), [""]);
}

#[test]
fn text_named_like_a_gzip_tarball_is_not_a_gzip_archive() {
    for (name, bytes) in [
        ("fake.tar.gz", b"hello\n".as_slice()),
        ("fake.tgz", b"# a README\n".as_slice()),
        ("empty.tar.gz", b"".as_slice()),
    ] {
        let err = open(name, bytes, ArchiveLimits::default()).unwrap_err();
        assert!(
            matches!(err, skillcat::Error::Archive(ArchiveError::NotGzip { .. })),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains("not a gzip archive"), "{err}");
    }
    // A plain tar named .tar.gz is still read as the tar it is (its ustar magic says so).
    let tar = Tar::default().skill().finish();
    assert_eq!(
        open("plain.tar.gz", &tar, ArchiveLimits::default())
            .unwrap()
            .roots(),
        [""]
    );
}

#[tokio::test]
async fn open_picks_the_archive_source_and_serves_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.tgz");
    let tar = Tar::default()
        .file(
            "pdf/SKILL.md",
            b"---\nname: pdf\ndescription: Reads PDFs.\n---\nBody.\n",
        )
        .exe("pdf/scripts/run.sh", b"#!/bin/sh\n")
        .file("broken/notes.md", b"no document\n")
        .finish();
    std::fs::write(&path, gz(&tar)).unwrap();
    let src = skillcat::source::open(path.to_str().unwrap()).unwrap();
    assert_eq!(src.list().await.unwrap(), ["broken", "pdf"]);
    let files = src.files("pdf").await.unwrap();
    assert_eq!(files[1].path, "scripts/run.sh");
    assert!(files[1].executable);
    assert_eq!(
        src.read_to_string("pdf/scripts/run.sh").await.unwrap(),
        "#!/bin/sh\n"
    );
    let abs = std::path::absolute(&path).unwrap();
    assert_eq!(
        src.location("pdf/SKILL.md"),
        format!("{}!/pdf/SKILL.md", abs.display())
    );
    let found = discover(&*src).await.unwrap();
    assert_eq!(found.skills.len(), 1);
    assert_eq!(found.faults.len(), 1);
    assert_eq!(found.faults[0].root, "broken");

    // A hostile archive is refused at open, through the same entry point.
    let evil = dir.path().join("evil.zip");
    std::fs::write(&evil, zip_raw(&[zskill(), zfile("../../.bashrc", b"x")])).unwrap();
    let err = skillcat::source::open(evil.to_str().unwrap()).unwrap_err();
    assert!(
        matches!(err, Error::Archive(ArchiveError::DotComponent { .. })),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}
