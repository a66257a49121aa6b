//! Archives and distribution through the real binary: every read-side command answers on a
//! `.tar.gz` and a `.zip` exactly as on the directory they were packed from; hostile archives
//! are refused by every command with nothing written anywhere; `pack` is reproducible;
//! `keygen`/`sign`/`verify` with scoped keyrings fail hard and say why; and keys, signatures
//! and statements interoperate with the `minisign` tool both ways.
//!
//! Every run goes through [`spawn`]/[`Running::wait`], which kills the child after a deadline
//! (no test can hang), fails on a panic message or a signal, and never passes the test
//! process's own `SKILLCAT_PASSWORD` on.
//!
//! Origin: step 2 (issue 3: archives, signatures and the distribution commands).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::Value as J;
use skillcat::pack::{PackEntry, write_tar_gz, write_zip};

use crate::support::bin::{Out, Running, Skillcat};
use crate::support::copy_dir;

/// Generous: a password-protected key costs a few seconds of scrypt in a debug build.
const DEADLINE: Duration = Duration::from_secs(90);
const PASSWORD_ENV: &str = "SKILLCAT_PASSWORD";

// ───────────────────────────── running the binary ─────────────────────────────

/// Starts the binary in `cwd` with extra environment variables.
fn spawn(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Running {
    Skillcat::new(args)
        .cwd(cwd)
        .env_remove(PASSWORD_ENV)
        .envs(env)
        .deadline(DEADLINE)
        .spawn()
}

#[track_caller]
fn run(cwd: &Path, args: &[&str]) -> Out {
    spawn(cwd, &[], args).wait()
}

#[track_caller]
fn run_env(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Out {
    spawn(cwd, env, args).wait()
}

// ───────────────────────────── files ─────────────────────────────

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn is_exec(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// Every regular file under `dir`: path relative to it (`/`-joined), bytes, executable bit.
fn walk(dir: &Path) -> Vec<(String, Vec<u8>, bool)> {
    fn go(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>, bool)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                go(base, &e.path(), out);
            } else if meta.is_file() {
                let rel = e
                    .path()
                    .strip_prefix(base)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string();
                out.push((rel, std::fs::read(e.path()).unwrap(), is_exec(&meta)));
            }
        }
    }
    let mut out = Vec::new();
    go(dir, dir, &mut out);
    out.sort();
    out
}

fn pack_entries(dir: &Path) -> Vec<PackEntry> {
    walk(dir)
        .into_iter()
        .map(|(path, bytes, executable)| PackEntry {
            path,
            bytes: Bytes::from(bytes),
            executable,
        })
        .collect()
}

/// Writes `entries` with the library writer the extension of `path` names.
fn library_pack(entries: &[PackEntry], path: &Path) {
    let f = std::fs::File::create(path).unwrap();
    if s(path).ends_with(".zip") {
        write_zip(entries, f).unwrap();
    } else {
        write_tar_gz(entries, f).unwrap();
    }
}

/// Every path under `dir` (files, directories, links), relative; what "nothing written" means.
fn snapshot(dir: &Path) -> BTreeSet<String> {
    fn go(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            out.insert(
                e.path()
                    .strip_prefix(base)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string(),
            );
            if std::fs::symlink_metadata(e.path()).unwrap().is_dir() {
                go(base, &e.path(), out);
            }
        }
    }
    let mut out = BTreeSet::new();
    go(dir, dir, &mut out);
    out
}

/// A keyring with one entry per `(public key file text, scopes, revoked)`.
fn write_keyring(path: &Path, keys: &[(&str, &[&str], bool)]) {
    let mut text = String::new();
    for (public, scopes, revoked) in keys {
        let line = public.lines().nth(1).expect("a .pub file has two lines");
        let scopes: Vec<String> = scopes.iter().map(|s| format!("{s:?}")).collect();
        text.push_str(&format!(
            "[[key]]\npublic_key = \"{line}\"\nscopes = [{}]\nrevoked = {revoked}\n\n",
            scopes.join(", ")
        ));
    }
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `keygen --unencrypted -o DIR/BASE`; returns the public key file's text.
fn keygen(dir: &Path, base: &str) -> String {
    run(dir, &["keygen", "--unencrypted", "-o", base]).code(0);
    read(&dir.join(format!("{base}.pub")))
}

const SKILLS: [&str; 7] = [
    "api-style-review",
    "csv-cleaner",
    "git-release-notes",
    "incident-timeline",
    "log-search",
    "meeting-summary",
    "pdf-forms",
];

// ───────────────────────────── 1. archives answer as directories ─────────────────────────────

/// Runs each command on the directory and on each archive and requires the same exit code,
/// stdout and stderr once each location is spelled `<SRC>/…`; `show` and `read` of every root
/// (of every file of each root, or of its first file only).
fn same_answers(cwd: &Path, dir: &Path, archives: &[PathBuf], every_file: bool) {
    let d = s(dir).to_string();
    let norm_dir = |t: &str| t.replace(&format!("{d}/"), "<SRC>/").replace(&d, "<SRC>");
    let norm_archive =
        |a: &str, t: &str| t.replace(&format!("{a}!/"), "<SRC>/").replace(a, "<SRC>");
    let with = |args: &[&str], src: &str| -> Vec<String> {
        args.iter()
            .map(|a| {
                if *a == "SRC" {
                    src.to_string()
                } else {
                    a.to_string()
                }
            })
            .collect()
    };
    let check = |args: &[&str]| -> Out {
        let dargs = with(args, &d);
        // The archives' runs go side by side with the directory's.
        let pending: Vec<(&str, Vec<String>, Running)> = archives
            .iter()
            .map(|a| {
                let aargs = with(args, s(a));
                let r = spawn(
                    cwd,
                    &[],
                    &aargs.iter().map(String::as_str).collect::<Vec<_>>(),
                );
                (s(a), aargs, r)
            })
            .collect();
        let want = run(cwd, &dargs.iter().map(String::as_str).collect::<Vec<_>>());
        for (a, aargs, r) in pending {
            let got = r.wait();
            assert_eq!(
                got.code, want.code,
                "exit code of {aargs:?} vs {dargs:?}:\n{}\n{}",
                got.stderr, want.stderr
            );
            assert_eq!(
                norm_archive(a, &String::from_utf8_lossy(&got.stdout)),
                norm_dir(&String::from_utf8_lossy(&want.stdout)),
                "stdout of {aargs:?} vs {dargs:?}"
            );
            assert_eq!(
                norm_archive(a, &got.stderr),
                norm_dir(&want.stderr),
                "stderr of {aargs:?} vs {dargs:?}"
            );
        }
        want
    };
    for args in [
        &["validate", "SRC"][..],
        &["validate", "--format", "json", "SRC"],
        &["list", "SRC"],
        &["prompt", "SRC"],
        &["prompt", "--format", "markdown", "SRC"],
        &["digest", "SRC"],
    ] {
        check(args);
    }
    let listed = check(&["list", "--format", "json", "SRC"]).json();
    let manifests = check(&["digest", "--format", "json", "SRC"]).json();
    // Every root (a skill by its name, a broken root by its folder): its body and every file.
    let mut names: Vec<String> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap().to_string())
        .collect();
    names.extend(
        listed["faults"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["root"].as_str().unwrap().to_string()),
    );
    assert!(!names.is_empty());
    check(&["read", "SRC", &names[0], "no/such/file.md"]);
    check(&["read", "SRC", &names[0], "../SKILL.md"]);
    check(&["digest", "SRC", &names[0]]);
    check(&["show", "SRC", "no-such-skill"]);
    for name in &names {
        check(&["show", "SRC", name]);
        let m = manifests
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name.as_str())
            .unwrap();
        let files = m["files"].as_array().unwrap();
        for f in if every_file { &files[..] } else { &files[..1] } {
            check(&["read", "SRC", name, f["path"].as_str().unwrap()]);
        }
    }
}

#[test]
fn archives_answer_every_read_command_as_their_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let skills = fixtures().join("skills");
    let pdf = skills.join("pdf-forms");
    let catalog = fixtures().join("conformance/catalog");
    let mut sets: Vec<(PathBuf, Vec<PathBuf>)> = vec![
        (skills.clone(), vec![]),
        (pdf.clone(), vec![]),
        (catalog.clone(), vec![]),
    ];
    for ext in ["tar.gz", "zip"] {
        let a = t.join(format!("skills.{ext}"));
        run(t, &["pack", s(&skills), "-o", s(&a)]).code(0);
        sets[0].1.push(a);
        let a = t.join(format!("pdf-forms.{ext}"));
        run(t, &["pack", s(&pdf), "-o", s(&a)]).code(0);
        sets[1].1.push(a);
        // `pack` refuses the broken roots of the catalog; the library writer packs them as they are.
        let a = t.join(format!("catalog.{ext}"));
        library_pack(&pack_entries(&catalog), &a);
        sets[2].1.push(a);
    }

    // Not vacuous: the archives do hold the skills, each reported as PATH/root.
    for a in &sets[0].1 {
        let want: String = SKILLS
            .iter()
            .map(|n| format!("Valid skill: {}/{n}\n", s(a)))
            .collect();
        assert_eq!(run(t, &["validate", s(a)]).code(0).out(), want);
    }
    for a in &sets[1].1 {
        assert_eq!(
            run(t, &["validate", s(a)]).code(0).out(),
            format!("Valid skill: {}\n", s(a))
        );
    }
    let expected: J =
        serde_json::from_str(&read(&fixtures().join("conformance/catalog.json"))).unwrap();
    for a in &sets[2].1 {
        let o = run(t, &["validate", "--format", "json", s(a)]);
        o.code(1);
        let reports = o.json();
        for w in expected.as_array().unwrap() {
            let root = w["root"].as_str().unwrap();
            let r = reports
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["path"] == format!("{}/{root}", s(a)).as_str())
                .unwrap_or_else(|| panic!("no report for {root}: {reports}"));
            assert_eq!(r["valid"], w["valid"], "{root}");
            let kinds: Vec<&J> = r["faults"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| &f["kind"])
                .collect();
            assert_eq!(
                kinds,
                w["fault_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .collect::<Vec<_>>(),
                "{root}"
            );
        }
        // The recorded digests, from the archive's bytes.
        let digests = run(t, &["digest", s(a)]);
        digests.code(1); // broken roots are reported (and still digested)
        for w in expected.as_array().unwrap() {
            assert!(
                digests
                    .out()
                    .contains(&format!("{}  ", w["digest"].as_str().unwrap())),
                "{}: {}",
                w["root"],
                digests.out()
            );
        }
    }
    for (dir, archives) in &sets {
        same_answers(t, dir, archives, *dir != catalog);
    }
    // Nothing but the archives was written, and the fixtures are untouched.
    assert_eq!(snapshot(t).len(), 6, "{:?}", snapshot(t));
}

/// `properties` on a one-skill archive prints what it prints on the directory.
#[test]
fn properties_of_a_one_skill_archive_is_that_of_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pdf = fixtures().join("skills/pdf-forms");
    let want = run(t, &["properties", s(&pdf)]);
    want.code(0);
    for ext in ["tar.gz", "zip"] {
        let a = t.join(format!("pdf-forms.{ext}"));
        run(t, &["pack", s(&pdf), "-o", s(&a)]).code(0);
        let got = run(t, &["properties", s(&a)]);
        got.code(0);
        assert_eq!(got.out(), want.out());
    }
    // A hostile archive is refused for what it is, not for being a file.
    let bad = t.join("bad.tar.gz");
    std::fs::write(&bad, gz(&tar(&[("../x", b'0', b"x")]))).unwrap();
    let o = run(t, &["properties", s(&bad)]);
    assert!(matches!(o.code, 1 | 2), "{o:?}");
    o.says(&["../x"]);
}

// ───────────────────────────── 2. hostile archives ─────────────────────────────

const DOC: &[u8] = b"---\nname: x\ndescription: A skill.\n---\n# X\n";

/// A ustar archive with names written straight into the header (so `..` and `/` survive).
/// `kind` `b'2'` is a symlink (to /etc/passwd), `b'1'` a hard link.
fn tar(entries: &[(&str, u8, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, kind, data) in entries {
        let mut h = tar::Header::new_ustar();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        if matches!(kind, b'1' | b'2') {
            h.as_old_mut().linkname[..11].copy_from_slice(b"/etc/passwd");
        }
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::new(*kind));
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.extend_from_slice(&[0; 1024]);
    out
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn crc(data: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(data);
    c.sum()
}

/// One zip entry: name, the bytes as stored, method (0 stored, 8 deflate), CRC and size of
/// the content, Unix mode.
struct Z {
    name: String,
    stored: Vec<u8>,
    method: u16,
    crc: u32,
    size: u32,
    mode: u32,
}

fn zstored(name: &str, data: &[u8], mode: u32) -> Z {
    Z {
        name: name.into(),
        stored: data.to_vec(),
        method: 0,
        crc: crc(data),
        size: data.len() as u32,
        mode,
    }
}

/// A zip written byte by byte, so duplicate and hostile names can be stored.
fn zip(entries: &[Z]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    let fixed = |out: &mut Vec<u8>, e: &Z| {
        out.extend_from_slice(&20u16.to_le_bytes()); // version needed
        out.extend_from_slice(&0u16.to_le_bytes()); // flags
        out.extend_from_slice(&e.method.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // time
        out.extend_from_slice(&0x21u16.to_le_bytes()); // date: 1980-01-01
        out.extend_from_slice(&e.crc.to_le_bytes());
        out.extend_from_slice(&(e.stored.len() as u32).to_le_bytes());
        out.extend_from_slice(&e.size.to_le_bytes());
        out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // extra length
    };
    for e in entries {
        offsets.push(out.len() as u32);
        out.extend_from_slice(b"PK\x03\x04");
        fixed(&mut out, e);
        out.extend_from_slice(e.name.as_bytes());
        out.extend_from_slice(&e.stored);
    }
    let cd = out.len() as u32;
    for (e, offset) in entries.iter().zip(offsets) {
        out.extend_from_slice(b"PK\x01\x02");
        out.extend_from_slice(&0x031eu16.to_le_bytes()); // made by Unix
        fixed(&mut out, e);
        out.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
        out.extend_from_slice(&(e.mode << 16).to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(e.name.as_bytes());
    }
    let cd_len = out.len() as u32 - cd;
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// Text that does not compress much (so a size limit, not the ratio limit, is what trips).
fn noise(len: usize) -> Vec<u8> {
    crate::support::incompressible(len)
        .into_iter()
        .map(|b| b"abcdefghijklmnopqrstuvwxyz0123456789 \n"[usize::from(b) % 38])
        .collect()
}

/// `mib` MiB of zeros, deflated: 1 MiB compressed once with a sync flush (byte-aligned, not
/// final, no reference before its start), repeated, then a final empty block. Cheap to build
/// even in a debug build.
fn deflated_zeros(mib: usize) -> (Vec<u8>, u32, u32) {
    let chunk = vec![0u8; 1 << 20];
    let mut c = flate2::Compress::new(Compression::best(), false);
    let mut once = Vec::with_capacity(64 << 10);
    c.compress_vec(&chunk, &mut once, flate2::FlushCompress::Sync)
        .unwrap();
    assert_eq!(c.total_in(), chunk.len() as u64);
    let mut out = once.repeat(mib);
    out.extend_from_slice(&[0x03, 0x00]); // a final, empty fixed-Huffman block
    let mut h = flate2::Crc::new();
    for _ in 0..mib {
        h.update(&chunk);
    }
    (out, h.sum(), (mib << 20) as u32)
}

/// A gzip member around a raw deflate stream.
fn gzip_member(deflated: &[u8], crc: u32, size: u32) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    out.extend_from_slice(deflated);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out
}

/// A `.zip` and a `.tar.gz` each holding `SKILL.md` and `zero.bin`, `mib` MiB of zeros.
fn bombs(mib: usize) -> (Vec<u8>, Vec<u8>) {
    let (zeros, zcrc, zsize) = deflated_zeros(mib);
    let zip_bytes = zip(&[
        zstored("SKILL.md", DOC, 0o100644),
        Z {
            name: "zero.bin".into(),
            stored: zeros.clone(),
            method: 8,
            crc: zcrc,
            size: zsize,
            mode: 0o100644,
        },
    ]);
    // The tar: SKILL.md, then the header of `zero.bin`, deflated with a sync flush; then the
    // zero stream (the body, which ends the deflate stream; no end marker is ever reached).
    let mut head = tar(&[("SKILL.md", b'0', DOC)]);
    head.truncate(head.len() - 1024);
    let mut h = tar::Header::new_ustar();
    h.set_path("zero.bin").unwrap();
    h.set_size(u64::from(zsize));
    h.set_mode(0o644);
    h.set_cksum();
    head.extend_from_slice(h.as_bytes());
    let mut c = flate2::Compress::new(Compression::fast(), false);
    let mut stream = Vec::with_capacity(64 << 10);
    c.compress_vec(&head, &mut stream, flate2::FlushCompress::Sync)
        .unwrap();
    assert_eq!(c.total_in(), head.len() as u64);
    stream.extend_from_slice(&zeros);
    let mut h = flate2::Crc::new();
    h.update(&head);
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..mib {
        h.update(&chunk);
    }
    (
        zip_bytes,
        gzip_member(&stream, h.sum(), head.len() as u32 + zsize),
    )
}

/// `(file name, bytes, what stderr must say)` for each hostile archive.
fn hostile_archives() -> Vec<(&'static str, Vec<u8>, Vec<&'static str>)> {
    let (bomb_zip, bomb_tar_gz) = bombs(20);
    let (ratio_zip, ratio_tar_gz) = bombs(2);
    let skill_tar = |more: &[(&str, u8, &[u8])]| {
        let mut v: Vec<(&str, u8, &[u8])> = vec![("SKILL.md", b'0', DOC)];
        v.extend_from_slice(more);
        gz(&tar(&v))
    };
    let skill_zip = |more: Vec<Z>| {
        let mut v = vec![zstored("SKILL.md", DOC, 0o100644)];
        v.extend(more);
        zip(&v)
    };
    let big = noise(64 << 10);
    let good = gz(&tar(&[("SKILL.md", b'0', DOC), ("big.txt", b'0', &big)]));
    let mut trailing = gz(&tar(&[("SKILL.md", b'0', DOC)]));
    trailing.extend_from_slice(b"garbage after the gzip member");
    let mut huge_doc = b"---\nname: x\ndescription: A skill.\n---\n".to_vec();
    huge_doc.extend_from_slice(&noise(2 << 20));
    vec![
        (
            "traversal.tar.gz",
            skill_tar(&[("../x", b'0', b"x")]),
            vec!["../x"],
        ),
        (
            "traversal.zip",
            skill_zip(vec![zstored("a/../../etc/x", b"x", 0o100644)]),
            vec!["a/../../etc/x"],
        ),
        (
            "absolute.tar.gz",
            skill_tar(&[("/etc/passwd", b'0', b"x")]),
            vec!["/etc/passwd", "absolute"],
        ),
        (
            "absolute.zip",
            skill_zip(vec![zstored("/tmp/evil", b"x", 0o100644)]),
            vec!["/tmp/evil", "absolute"],
        ),
        (
            "symlink.tar.gz",
            skill_tar(&[("link", b'2', b"")]),
            vec!["link", "symbolic link"],
        ),
        (
            "symlink.zip",
            skill_zip(vec![zstored("link", b"/etc/passwd", 0o120777)]),
            vec!["link", "symbolic link"],
        ),
        (
            "hardlink.tar.gz",
            skill_tar(&[("link", b'1', b"")]),
            vec!["link", "hard link"],
        ),
        ("trailing.tar.gz", trailing, vec!["trailing"]),
        (
            "truncated.tar.gz",
            good[..good.len() / 2].to_vec(),
            vec!["corrupt"],
        ),
        (
            "bomb.zip",
            bomb_zip,
            vec![
                "zero.bin",
                "larger than 16777216 bytes|times the archive size",
            ],
        ),
        (
            "bomb.tar.gz",
            bomb_tar_gz,
            vec![
                "zero.bin",
                "larger than 16777216 bytes|times the archive size",
            ],
        ),
        (
            "ratio.zip",
            ratio_zip,
            vec!["zero.bin", "times the archive size"],
        ),
        (
            "ratio.tar.gz",
            ratio_tar_gz,
            vec!["zero.bin", "times the archive size"],
        ),
        (
            "duplicate.tar.gz",
            skill_tar(&[("a.md", b'0', b"1"), ("a.md", b'0', b"2")]),
            vec!["a.md", "more than once"],
        ),
        (
            "duplicate.zip",
            skill_zip(vec![zstored("SKILL.md", b"other", 0o100644)]),
            vec!["SKILL.md", "more than once"],
        ),
        (
            "case-fold.zip",
            skill_zip(vec![zstored("skill.MD", DOC, 0o100644)]),
            vec!["skill.MD"],
        ),
        (
            "huge-document.tar.gz",
            gz(&tar(&[("SKILL.md", b'0', &huge_doc)])),
            vec!["SKILL.md", "larger than"],
        ),
        (
            "no-skill.tar.gz",
            gz(&tar(&[("notes.txt", b'0', b"hello")])),
            vec!["no SKILL.md"],
        ),
        (
            "no-skill.zip",
            zip(&[zstored("notes.txt", b"hello", 0o100644)]),
            vec!["no SKILL.md"],
        ),
        (
            "not-an-archive.zip",
            b"PK\x03\x04 this is not a zip at all".to_vec(),
            vec!["corrupt"],
        ),
    ]
}

#[test]
fn hostile_archives_are_refused_by_every_command_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let work = t.join("work");
    let cwd = t.join("cwd");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    // A key and a keyring, so that `sign` and `verify` get as far as the archive.
    let public = keygen(&work, "k");
    write_keyring(&work.join("ring.toml"), &[(&public, &["*"], false)]);
    let key = work.join("k.key");
    let ring = work.join("ring.toml");

    let cases = hostile_archives();
    assert!(cases.len() >= 8);
    for (name, bytes, _) in &cases {
        std::fs::write(work.join(name), bytes).unwrap();
    }
    let before = snapshot(&work);
    assert_eq!(before.len(), cases.len() + 3);

    let mut running = Vec::new();
    for (name, _, needles) in &cases {
        let a = s(&work.join(name)).to_string();
        let commands: Vec<Vec<&str>> = vec![
            vec!["validate", &a],
            vec!["validate", "--format", "json", &a],
            vec!["properties", &a],
            vec!["list", &a],
            vec!["list", "--format", "json", &a],
            vec!["prompt", &a],
            vec!["show", &a, "x"],
            vec!["read", &a, "x", "SKILL.md"],
            vec!["digest", &a],
            vec!["digest", "--format", "json", &a, "x"],
            vec![
                "sign",
                &a,
                "x",
                "--key",
                s(&key),
                "--statement",
                "statement.txt",
            ],
            vec!["verify", &a, "--keyring", s(&ring)],
        ];
        for args in commands {
            running.push((needles.clone(), spawn(&cwd, &[], &args)));
            // A few at a time: each run is short, and the machine may have few cores.
            if running.len() >= 4 {
                let (needles, r) = running.remove(0);
                check_refused(r.wait(), &needles);
            }
        }
    }
    for (needles, r) in running {
        check_refused(r.wait(), &needles);
    }
    assert_eq!(
        snapshot(&work),
        before,
        "something was written beside the archives"
    );
    assert_eq!(
        snapshot(&cwd),
        BTreeSet::new(),
        "something was written in the working directory"
    );
}

#[track_caller]
fn check_refused(o: Out, needles: &[&str]) {
    assert!(
        matches!(o.code, 1 | 2),
        "skillcat {:?} exited {} (want 1 or 2):\n{}",
        o.args,
        o.code,
        o.stderr
    );
    if o.args[1] == "--format" && o.args[0] == "validate" {
        // The report is the output: one unreadable path, with the reason.
        let r = o.json();
        assert_eq!(r[0]["valid"], false, "{r}");
        let message = r[0]["faults"][0]["message"].as_str().unwrap();
        for n in needles {
            assert!(
                n.split('|').any(|alt| message.contains(alt)),
                "{:?}: {message:?} lacks {n:?}",
                o.args
            );
        }
        return;
    }
    o.says(needles);
    assert!(
        o.stdout.is_empty(),
        "skillcat {:?} printed {:?}",
        o.args,
        o.out()
    );
}

// ───────────────────────────── 3. pack ─────────────────────────────

/// `(path, mode, mtime, uid, gid, user name)` of every entry of a `.tar.gz`, in order.
fn tar_listing(bytes: &[u8]) -> Vec<(String, u32, u64, u64, u64, String)> {
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    ar.entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let h = e.header();
            assert_eq!(h.entry_type(), tar::EntryType::Regular, "files only");
            (
                e.path().unwrap().to_str().unwrap().to_string(),
                h.mode().unwrap(),
                h.mtime().unwrap(),
                h.uid().unwrap(),
                h.gid().unwrap(),
                h.username().unwrap().unwrap_or("?").to_string(),
            )
        })
        .collect()
}

/// `(name, unix mode)` of every entry of a `.zip`, in order.
fn zip_listing(bytes: &[u8]) -> Vec<(String, u32)> {
    let mut ar = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..ar.len())
        .map(|i| {
            let f = ar.by_index(i).unwrap();
            let name = f.name().unwrap().to_string();
            assert!(f.is_file(), "files only: {name}");
            (name, f.unix_mode().unwrap() & 0o7777)
        })
        .collect()
}

#[test]
fn pack_a_skill_and_a_tree_sorted_with_normalised_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pdf = fixtures().join("skills/pdf-forms");
    let skills = fixtures().join("skills");

    let o = run(t, &["pack", s(&pdf), "-o", "one.tar.gz"]);
    o.code(0);
    assert!(
        o.out().starts_with("Packed 1 skill(s) into one.tar.gz\n"),
        "{}",
        o.out()
    );
    let listing = tar_listing(&std::fs::read(t.join("one.tar.gz")).unwrap());
    let want: Vec<(String, u32, u64, u64, u64, String)> = walk(&pdf)
        .into_iter()
        .map(|(p, _, x)| {
            (
                p,
                if x { 0o755 } else { 0o644 },
                315_532_800,
                0,
                0,
                String::new(),
            )
        })
        .collect();
    assert_eq!(listing, want, "one skill: its files at the archive's root");
    assert!(
        listing
            .iter()
            .any(|e| e.0 == "scripts/make_fdf.py" && e.1 == 0o755)
    );

    run(t, &["pack", s(&skills), "-o", "tree.zip"]).code(0);
    let listing = zip_listing(&std::fs::read(t.join("tree.zip")).unwrap());
    let want: Vec<(String, u32)> = walk(&skills)
        .into_iter()
        .map(|(p, _, x)| (p, if x { 0o755 } else { 0o644 }))
        .collect();
    assert_eq!(listing, want, "a tree: one folder per skill, byte-sorted");
    let mut sorted = listing.clone();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    assert_eq!(listing, sorted);

    // GNU tar reads what `pack` writes, with the same normalised metadata.
    if let Ok(o) = Command::new("tar")
        .args(["-tvzf", "one.tar.gz"])
        .current_dir(t)
        .output()
    {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("-rw-r--r-- 0/0")
                && first.contains("1980-01-01")
                && first.ends_with(" SKILL.md"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("-rwxr-xr-x 0/0") && l.ends_with(" scripts/list_fields.py")),
            "{text}"
        );
    }
    // The archive is readable by the owner's group and others; no temporary file is left.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(t.join("tree.zip"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    assert_eq!(
        snapshot(t),
        BTreeSet::from(["one.tar.gz".to_string(), "tree.zip".to_string()])
    );
}

#[test]
fn pack_refuses_an_invalid_skill_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let src = t.join("src");
    let skill = src.join("my-skill");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: My-Skill\ndescription: A skill.\n---\nBody\n",
    )
    .unwrap();
    let out = t.join("out");
    std::fs::create_dir_all(&out).unwrap();

    for target in ["x.tar.gz", "x.zip"] {
        let o = run(&out, &["pack", s(&skill), "-o", target]);
        o.code(1).says(&[
            "Refusing to pack",
            "Skill name 'My-Skill' must be lowercase",
            "Directory name 'my-skill' must match skill name 'My-Skill'",
            "nothing written",
            "--force",
        ]);
        assert!(o.stdout.is_empty());
        assert_eq!(snapshot(&out), BTreeSet::new(), "nothing written");
    }
    let o = run(&out, &["pack", "--force", s(&skill), "-o", "x.tar.gz"]);
    o.code(0)
        .says(&["Packing anyway (--force)", "must be lowercase"]);
    assert_eq!(snapshot(&out), BTreeSet::from(["x.tar.gz".to_string()]));
    // The archive is the skill as it is: validate says what is wrong with it.
    let o = run(&out, &["validate", "x.tar.gz"]);
    o.code(1).says(&[
        "Validation failed for x.tar.gz:",
        "Skill name 'My-Skill' must be lowercase",
    ]);

    // A tree with roots whose document cannot be read: refused, even with --force --sign, and
    // packed as it is with --force (the same bytes as the library writer gives).
    let catalog = fixtures().join("conformance/catalog");
    let o = run(&out, &["pack", s(&catalog), "-o", "cat.zip"]);
    o.code(1).says(&[
        "[bad-yaml]",
        "[missing-document]",
        "Refusing to pack",
        "nothing written",
    ]);
    keygen(t, "k");
    let o = run(
        &out,
        &[
            "pack",
            "--force",
            s(&catalog),
            "-o",
            "cat.zip",
            "--sign",
            s(&t.join("k.key")),
        ],
    );
    o.code(1).says(&["cannot be signed", "nothing written"]);
    assert_eq!(snapshot(&out), BTreeSet::from(["x.tar.gz".to_string()]));
    for ext in ["tar.gz", "zip"] {
        let o = run(
            &out,
            &["pack", "--force", s(&catalog), "-o", &format!("cat.{ext}")],
        );
        o.code(0).says(&["Packing anyway (--force)", "[bad-yaml]"]);
        let lib = t.join(format!("lib.{ext}"));
        library_pack(&pack_entries(&catalog), &lib);
        assert!(
            std::fs::read(out.join(format!("cat.{ext}"))).unwrap() == std::fs::read(&lib).unwrap(),
            "pack --force {ext} differs from the library writer over every file of the catalog"
        );
    }
}

#[test]
fn pack_output_extension_decides_the_format() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pdf = fixtures().join("skills/pdf-forms");
    for (name, magic) in [
        ("a.tar.gz", &b"\x1f\x8b"[..]),
        ("b.tgz", b"\x1f\x8b"),
        ("c.ZIP", b"PK\x03\x04"),
        ("d.zip", b"PK\x03\x04"),
    ] {
        run(t, &["pack", s(&pdf), "-o", name]).code(0);
        let bytes = std::fs::read(t.join(name)).unwrap();
        assert!(bytes.starts_with(magic), "{name}");
    }
    assert_eq!(
        std::fs::read(t.join("a.tar.gz")).unwrap(),
        std::fs::read(t.join("b.tgz")).unwrap()
    );
    assert_eq!(
        std::fs::read(t.join("c.ZIP")).unwrap(),
        std::fs::read(t.join("d.zip")).unwrap()
    );
    let before = snapshot(t);
    for name in ["e.tar", "f.rar", "g", "h.tar.bz2", "zip"] {
        let o = run(t, &["pack", s(&pdf), "-o", name]);
        o.code(2).says(&[name, ".tar.gz, .tgz or .zip"]);
    }
    // Not a directory, or no such directory: a usage error.
    run(t, &["pack", s(&pdf.join("SKILL.md")), "-o", "x.zip"])
        .code(2)
        .says(&["skill directory"]);
    run(t, &["pack", "no-such-dir", "-o", "x.zip"]).code(2);
    run(t, &["pack", s(&pdf)]).code(2).says(&["--output"]);
    // An archive inside the skill it packs would end up in the next archive of it.
    let inside = t.join("pdf-forms");
    copy_dir(&pdf, &inside);
    let before_inside = snapshot(t);
    for out in ["pdf-forms/self.zip", "pdf-forms/scripts/self.tar.gz"] {
        run(t, &["pack", "pdf-forms", "-o", out])
            .code(2)
            .says(&["inside the skill", "elsewhere"]);
    }
    assert_eq!(snapshot(t), before_inside);
    std::fs::remove_dir_all(&inside).unwrap();
    // A directory with nothing to pack.
    std::fs::create_dir(t.join("empty")).unwrap();
    let before_empty = snapshot(t);
    let o = run(t, &["pack", "empty", "-o", "x.zip"]);
    assert!(matches!(o.code, 1 | 2), "{o:?}");
    assert_eq!(snapshot(t), before_empty);
    assert_eq!(before.len() + 1, before_empty.len());
}

#[test]
fn pack_is_byte_identical_from_anywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let skills = fixtures().join("skills");
    // A copy elsewhere, under another name, with other mtimes, modes (same x bit) and owner.
    let copy = t.join("elsewhere/deeper/copied-skills");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    copy_dir(&skills, &copy);
    {
        use std::os::unix::fs::PermissionsExt;
        let st = Command::new("touch")
            .args(["-d", "2011-11-11 11:11:11"])
            .args(walk(&copy).iter().map(|f| copy.join(&f.0)))
            .status()
            .unwrap();
        assert!(st.success());
        for (p, _, x) in walk(&copy) {
            std::fs::set_permissions(
                copy.join(&p),
                std::fs::Permissions::from_mode(if x { 0o700 } else { 0o600 }),
            )
            .unwrap();
        }
        // Another owner where we may (as root); harmless where we may not.
        let _ = Command::new("chown")
            .args(["-R", "4321:4321"])
            .arg(&copy)
            .stderr(Stdio::null())
            .status();
        let a = std::fs::metadata(skills.join("pdf-forms/SKILL.md")).unwrap();
        let b = std::fs::metadata(copy.join("pdf-forms/SKILL.md")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_ne!(a.mtime(), b.mtime());
        assert_ne!(a.mode(), b.mode());
    }
    for ext in ["tar.gz", "zip"] {
        for (dir, tag) in [(&skills, "tree"), (&skills.join("pdf-forms"), "one")] {
            let copied = if tag == "tree" {
                copy.clone()
            } else {
                copy.join("pdf-forms")
            };
            let a = format!("{tag}-1.{ext}");
            let b = format!("{tag}-2.{ext}");
            let c = format!("{tag}-copy.{ext}");
            let oa = run(t, &["pack", s(dir), "-o", &a]);
            oa.code(0);
            run(t, &["pack", s(dir), "-o", &b]).code(0);
            let oc = run(t, &["pack", s(&copied), "-o", &c]);
            oc.code(0);
            let (ba, bb, bc) = (
                std::fs::read(t.join(&a)).unwrap(),
                std::fs::read(t.join(&b)).unwrap(),
                std::fs::read(t.join(&c)).unwrap(),
            );
            assert!(ba == bb, "packing {tag} twice gave different {ext} bytes");
            assert!(
                ba == bc,
                "packing a copy of {tag} gave different {ext} bytes"
            );
            // The digests printed agree too (the output names differ, nothing else).
            assert_eq!(oa.out().replace(&a, "OUT"), oc.out().replace(&c, "OUT"));
            // And the bytes are those of the library writer over the same files.
            let lib = t.join(format!("{tag}-lib.{ext}"));
            library_pack(&pack_entries(dir), &lib);
            assert!(
                std::fs::read(&lib).unwrap() == ba,
                "{tag}.{ext}: pack differs from the library writer"
            );
        }
    }
}

// ───────────────────────────── 4. keygen / sign / verify ─────────────────────────────

#[test]
fn keygen_sign_and_verify_fail_hard_and_say_why() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pdf = fixtures().join("skills/pdf-forms");

    // keygen: two files, the secret one private, a second run refuses to overwrite.
    let o = run(t, &["keygen", "--unencrypted", "-o", "k"]);
    o.code(0);
    let public = read(&t.join("k.pub"));
    let secret = read(&t.join("k.key"));
    let id = public
        .lines()
        .next()
        .unwrap()
        .strip_prefix("untrusted comment: minisign public key ")
        .unwrap()
        .to_string();
    assert_eq!(id.len(), 16);
    assert!(o.out().contains(&id), "{}", o.out());
    assert!(
        secret.starts_with("untrusted comment: minisign secret key (not encrypted)\n"),
        "{secret}"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(t.join("k.key"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
    }
    run(t, &["keygen", "--unencrypted", "-o", "k"])
        .code(2)
        .says(&["exists", "--force"]);
    assert_eq!(read(&t.join("k.key")), secret);
    // --force replaces the pair; a secret key file others could read is made private first.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::copy(t.join("k.key"), t.join("old.key")).unwrap();
        std::fs::copy(t.join("k.pub"), t.join("old.pub")).unwrap();
        std::fs::set_permissions(t.join("old.key"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        run(t, &["keygen", "--unencrypted", "--force", "-o", "old"]).code(0);
        assert_ne!(read(&t.join("old.key")), secret);
        assert_eq!(
            std::fs::metadata(t.join("old.key"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
    }
    let other = keygen(t, "other");

    let ring = t.join("ring.toml");
    write_keyring(&ring, &[(&public, &["pdf-*", "log-search"], false)]);
    let ring_s = s(&ring).to_string();

    // pack --sign: OUT.minisig beside a one-skill archive, which verifies.
    let o = run(t, &["pack", s(&pdf), "-o", "p.tar.gz", "--sign", "k.key"]);
    o.code(0);
    assert!(
        o.out()
            .contains("signed pdf-forms@0.4.1 → p.tar.gz.minisig"),
        "{}",
        o.out()
    );
    let o = run(t, &["verify", "p.tar.gz", "--keyring", &ring_s]);
    o.code(0);
    let digest_line = run(t, &["digest", "p.tar.gz"]).code(0).out().to_string();
    let digest = digest_line.split_whitespace().next().unwrap();
    assert_eq!(
        o.out(),
        format!("Verified pdf-forms@0.4.1 ({digest}) signed by key {id}\n")
    );
    let sig = read(&t.join("p.tar.gz.minisig"));

    // sign SOURCE NAME --key KEY --statement FILE, on a directory copy: the same statement,
    // so its signature verifies the archive too (what is signed is the content, not bytes).
    let d = t.join("d");
    std::fs::create_dir(&d).unwrap();
    copy_dir(&pdf, &d.join("pdf-forms"));
    let o = run(
        &d,
        &[
            "sign",
            "pdf-forms",
            "pdf_forms",
            "--key",
            "../k.key",
            "--statement",
            "statement.txt",
        ],
    );
    o.code(0);
    assert!(o.out().contains("→ pdf-forms.minisig"), "{}", o.out());
    let statement = read(&d.join("statement.txt"));
    let manifest = run(t, &["digest", "--format", "json", "p.tar.gz"])
        .code(0)
        .json();
    assert_eq!(
        statement.lines().take(4).collect::<Vec<_>>(),
        [
            "skillcat-statement v1",
            "name: pdf-forms",
            "version: 0.4.1",
            &format!("digest: {digest}")
        ],
    );
    assert_eq!(manifest[0]["digest"], digest);
    run(&d, &["verify", "pdf-forms", "--keyring", &ring_s]).code(0);
    run(
        t,
        &[
            "verify",
            "p.tar.gz",
            "--keyring",
            &ring_s,
            "--sig",
            "d/pdf-forms.minisig",
        ],
    )
    .code(0);

    // Each failure: exit 1 and the reason.
    let fails = |args: &[&str], why: &[&str]| {
        let o = run(t, args);
        o.code(1).says(why);
        assert!(!o.out().contains("Verified"), "{}", o.out());
    };
    let scoped = t.join("scoped.toml");
    write_keyring(&scoped, &[(&public, &["acme-*"], false)]);
    fails(
        &["verify", "p.tar.gz", "--keyring", s(&scoped)],
        &[
            "Verification failed for pdf-forms",
            "may not sign skill `pdf-forms`",
            "acme-*",
        ],
    );
    let revoked = t.join("revoked.toml");
    write_keyring(&revoked, &[(&public, &["*"], true)]);
    fails(
        &["verify", "p.tar.gz", "--keyring", s(&revoked)],
        &["Verification failed for pdf-forms", &id, "revoked"],
    );
    let unknown = t.join("unknown.toml");
    write_keyring(&unknown, &[(&other, &["*"], false)]);
    fails(
        &["verify", "p.tar.gz", "--keyring", s(&unknown)],
        &[
            "Verification failed for pdf-forms",
            &id,
            "not in the keyring",
        ],
    );
    // A --sig file that cannot be read is unreadable input: exit 2, before anything is read.
    run(
        t,
        &[
            "verify",
            "p.tar.gz",
            "--keyring",
            &ring_s,
            "--sig",
            "nope.minisig",
        ],
    )
    .code(2)
    .says(&["cannot read the signature nope.minisig"]);
    run(t, &["pack", s(&pdf), "-o", "unsigned.zip"]).code(0);
    fails(
        &["verify", "unsigned.zip", "--keyring", &ring_s],
        &["no signature", "no unsigned.zip.minisig beside it"],
    );
    // JSON says the same.
    let o = run(
        t,
        &[
            "verify",
            "--format",
            "json",
            "p.tar.gz",
            "--keyring",
            s(&revoked),
        ],
    );
    o.code(1);
    let j = o.json();
    assert_eq!(j[0]["verified"], false);
    assert!(j[0]["error"].as_str().unwrap().contains("revoked"), "{j}");
    let j = run(
        t,
        &[
            "verify",
            "--format",
            "json",
            "p.tar.gz",
            "--keyring",
            &ring_s,
        ],
    )
    .code(0)
    .json();
    assert_eq!(
        (&j[0]["verified"], &j[0]["key_id"], &j[0]["digest"]),
        (
            &J::Bool(true),
            &J::String(id.clone()),
            &J::String(digest.into())
        )
    );

    // A bad keyring is a usage error.
    std::fs::write(t.join("bad.toml"), "[[key]]\nbogus = 1\n").unwrap();
    run(t, &["verify", "p.tar.gz", "--keyring", "bad.toml"])
        .code(2)
        .says(&["bogus"]);
    run(t, &["verify", "p.tar.gz", "--keyring", "missing.toml"]).code(2);

    // The archive rebuilt with one byte of one file changed: the signature no longer holds.
    let m = t.join("m");
    std::fs::create_dir(&m).unwrap();
    copy_dir(&pdf, &m.join("pdf-forms"));
    let target = m.join("pdf-forms/references/fdf-format.md");
    let mut bytes = std::fs::read(&target).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x01;
    std::fs::write(&target, &bytes).unwrap();
    run(t, &["pack", s(&m.join("pdf-forms")), "-o", "p.tar.gz"])
        .code(0)
        .says(&["Removed p.tar.gz.minisig"]);
    assert!(
        !t.join("p.tar.gz.minisig").exists(),
        "an unsigned pack removes the old signature, which no longer signs the archive"
    );
    // Put back beside the changed archive, the old signature does not hold.
    std::fs::write(t.join("p.tar.gz.minisig"), &sig).unwrap();
    fails(
        &["verify", "p.tar.gz", "--keyring", &ring_s],
        &["Verification failed for pdf-forms", "does not verify"],
    );
    run(t, &["pack", s(&pdf), "-o", "p.tar.gz"]).code(0);
    run(t, &["verify", "p.tar.gz", "--keyring", &ring_s]).code(0);

    // The signature file changed: one character of the signature, the trusted comment.
    let lines: Vec<&str> = sig.lines().collect();
    let flip = |s: &str, i: usize| {
        let mut c: Vec<char> = s.chars().collect();
        c[i] = if c[i] == 'A' { 'B' } else { 'A' };
        c.into_iter().collect::<String>()
    };
    let bad_sig = [
        lines[0].to_string(),
        flip(lines[1], 40),
        lines[2].to_string(),
        lines[3].to_string(),
    ]
    .join("\n")
        + "\n";
    std::fs::write(t.join("p.tar.gz.minisig"), bad_sig).unwrap();
    fails(
        &["verify", "p.tar.gz", "--keyring", &ring_s],
        &["does not verify"],
    );
    let bad_comment = sig.replace("version=0.4.1", "version=0.4.2");
    assert_ne!(bad_comment, sig);
    std::fs::write(t.join("p.tar.gz.minisig"), bad_comment).unwrap();
    fails(
        &["verify", "p.tar.gz", "--keyring", &ring_s],
        &["trusted comment", "altered"],
    );
    let bad_global = [lines[0], lines[1], lines[2], &flip(lines[3], 10)].join("\n") + "\n";
    std::fs::write(t.join("p.tar.gz.minisig"), bad_global).unwrap();
    fails(
        &["verify", "p.tar.gz", "--keyring", &ring_s],
        &["trusted comment"],
    );
    std::fs::write(t.join("p.tar.gz.minisig"), "not a signature\n").unwrap();
    fails(
        &["verify", "p.tar.gz", "--keyring", &ring_s],
        &["Verification failed for pdf-forms"],
    );
    // The untrusted comment is covered by nothing, as in minisign: changing it changes nothing.
    std::fs::write(
        t.join("p.tar.gz.minisig"),
        sig.replace("signature from skillcat secret key", "anything at all"),
    )
    .unwrap();
    run(t, &["verify", "p.tar.gz", "--keyring", &ring_s]).code(0);
}

#[test]
fn multi_skill_archives_have_one_signature_per_skill() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let skills = fixtures().join("skills");
    let public = keygen(t, "k");
    let ring = t.join("ring.toml");
    write_keyring(&ring, &[(&public, &["*"], false)]);
    let ring_s = s(&ring);

    let o = run(t, &["pack", s(&skills), "-o", "s.zip", "--sign", "k.key"]);
    o.code(0);
    for n in SKILLS {
        assert!(
            t.join(format!("s.zip.{n}.minisig")).is_file(),
            "{n}: {}",
            o.out()
        );
    }
    assert!(!t.join("s.zip.minisig").exists());
    let o = run(t, &["verify", "s.zip", "--keyring", ring_s]);
    o.code(0);
    assert_eq!(
        o.out()
            .lines()
            .filter(|l| l.starts_with("Verified "))
            .count(),
        7,
        "{}",
        o.out()
    );

    // A scope that admits only some skills fails the others, by name.
    let scoped = t.join("scoped.toml");
    write_keyring(&scoped, &[(&public, &["pdf-*", "log-?earch"], false)]);
    let o = run(t, &["verify", "s.zip", "--keyring", s(&scoped)]);
    o.code(1).says(&[
        "Verification failed for csv-cleaner: key",
        "may not sign skill `csv-cleaner`",
    ]);
    assert_eq!(
        o.out()
            .lines()
            .filter(|l| l.starts_with("Verified "))
            .count(),
        2,
        "{}",
        o.out()
    );

    // One signature missing: that skill fails, by name; the others still verify.
    std::fs::remove_file(t.join("s.zip.log-search.minisig")).unwrap();
    let o = run(t, &["verify", "s.zip", "--keyring", ring_s]);
    o.code(1).says(&[
        "Verification failed for log-search: no signature",
        "no s.zip.log-search.minisig beside it",
    ]);
    assert_eq!(
        o.out()
            .lines()
            .filter(|l| l.starts_with("Verified "))
            .count(),
        6
    );
    // `sign ARCHIVE NAME` puts it back where verify looks.
    let o = run(t, &["sign", "s.zip", "log_search", "--key", "k.key"]);
    o.code(0);
    assert!(
        o.out().contains("→ s.zip.log-search.minisig"),
        "{}",
        o.out()
    );
    run(t, &["verify", "s.zip", "--keyring", ring_s]).code(0);
    // One signature in place of another: it is another skill's statement.
    std::fs::copy(
        t.join("s.zip.pdf-forms.minisig"),
        t.join("s.zip.log-search.minisig"),
    )
    .unwrap();
    run(t, &["verify", "s.zip", "--keyring", ring_s])
        .code(1)
        .says(&["Verification failed for log-search"]);
    // --sig names one signature; a source of several skills has several.
    run(
        t,
        &[
            "verify",
            "s.zip",
            "--keyring",
            ring_s,
            "--sig",
            "s.zip.pdf-forms.minisig",
        ],
    )
    .code(2)
    .says(&["--sig"]);

    // A tree of one skill packs to one root, so its signature is OUT.minisig (where verify
    // and sign look), not OUT.<name>.minisig.
    let tree = t.join("tree");
    std::fs::create_dir(&tree).unwrap();
    copy_dir(&skills.join("log-search"), &tree.join("log-search"));
    let o = run(
        t,
        &["pack", s(&tree), "-o", "one.tar.gz", "--sign", "k.key"],
    );
    o.code(0);
    assert!(t.join("one.tar.gz.minisig").is_file(), "{}", o.out());
    run(t, &["verify", "one.tar.gz", "--keyring", ring_s]).code(0);

    // `digest` agrees between the directory, the .tar.gz and the .zip; manifests mark scripts.
    run(t, &["pack", s(&skills), "-o", "s.tar.gz"]).code(0);
    let want = run(t, &["digest", s(&skills)]).code(0).out().to_string();
    assert_eq!(want.lines().count(), 7);
    assert_eq!(run(t, &["digest", "s.tar.gz"]).code(0).out(), want);
    assert_eq!(run(t, &["digest", "s.zip"]).code(0).out(), want);
    let j = run(t, &["digest", "--format", "json", "s.zip"])
        .code(0)
        .json();
    assert_eq!(
        j,
        run(t, &["digest", "--format", "json", s(&skills)])
            .code(0)
            .json()
    );
    let mut scripts = 0;
    for m in j.as_array().unwrap() {
        assert_eq!(m["schema"], "agent-skill-manifest/v1");
        for f in m["files"].as_array().unwrap() {
            let path = f["path"].as_str().unwrap();
            let exec = f.get("executable").and_then(J::as_bool).unwrap_or(false);
            assert_eq!(exec, path.starts_with("scripts/"), "{}: {path}", m["name"]);
            scripts += exec as usize;
        }
    }
    assert_eq!(scripts, 6);
}

#[test]
fn an_encrypted_key_signs_only_with_the_right_password() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pdf = fixtures().join("skills/pdf-forms");
    run(t, &["pack", s(&pdf), "-o", "p.zip"]).code(0);

    // No password anywhere and no terminal: a usage error, nothing written.
    run(t, &["keygen", "-o", "e"])
        .code(2)
        .says(&["SKILLCAT_PASSWORD"]);
    assert!(!t.join("e.key").exists() && !t.join("e.pub").exists());

    run_env(t, &[(PASSWORD_ENV, "right horse")], &["keygen", "-o", "e"]).code(0);
    assert!(
        read(&t.join("e.key")).starts_with("untrusted comment: minisign encrypted secret key\n")
    );
    let ring = t.join("ring.toml");
    write_keyring(&ring, &[(&read(&t.join("e.pub")), &["*"], false)]);
    let before = snapshot(t);
    // `pack --sign` signs before it writes: a key it cannot use leaves nothing behind.
    run(t, &["pack", s(&pdf), "-o", "w.tar.gz", "--sign", "e.key"])
        .code(2)
        .says(&["a password is needed"]);
    std::fs::write(t.join("junk.key"), "untrusted comment: x\nnot a key\n").unwrap();
    run(t, &["pack", s(&pdf), "-o", "w.zip", "--sign", "junk.key"]).code(1);
    std::fs::remove_file(t.join("junk.key")).unwrap();
    assert_eq!(snapshot(t), before, "a failed pack --sign wrote something");

    // Each attempt costs one scrypt (seconds in a debug build): run them side by side.
    let right = spawn(
        t,
        &[(PASSWORD_ENV, "right horse")],
        &["sign", "p.zip", "pdf-forms", "--key", "e.key"],
    );
    let wrong = spawn(
        t,
        &[(PASSWORD_ENV, "wrong horse")],
        &[
            "sign",
            "p.zip",
            "pdf-forms",
            "--key",
            "e.key",
            "-o",
            "w.minisig",
        ],
    );
    let none = run(
        t,
        &[
            "sign",
            "p.zip",
            "pdf-forms",
            "--key",
            "e.key",
            "-o",
            "n.minisig",
        ],
    );
    none.code(2)
        .says(&["a password is needed", "SKILLCAT_PASSWORD"]);
    wrong.wait().code(1).says(&["wrong password"]);
    right.wait().code(0);
    let mut after = before.clone();
    after.insert("p.zip.minisig".into());
    assert_eq!(
        snapshot(t),
        after,
        "only the right password wrote a signature"
    );
    run(t, &["verify", "p.zip", "--keyring", s(&ring)]).code(0);
}

// ───────────────────────────── 5. minisign interop ─────────────────────────────

fn minisign_available() -> bool {
    match Command::new("minisign").arg("-v").output() {
        Ok(_) => true,
        Err(_) => {
            eprintln!(
                "SKIPPED: `minisign` is not on PATH; interoperability through the binary was NOT tested"
            );
            false
        }
    }
}

#[track_caller]
fn minisign(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("minisign")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run minisign")
}

#[track_caller]
fn minisign_ok(dir: &Path, args: &[&str]) -> String {
    let o = minisign(dir, args);
    assert!(
        o.status.success(),
        "minisign {args:?}: {}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The statement's one-line form: `skillcat-statement v1 name=… version=… digest=… manifest=…`.
fn trusted_comment(statement: &str) -> String {
    let mut lines = statement.lines();
    let mut out = lines.next().unwrap().to_string();
    for l in lines {
        let (k, v) = l.split_once(": ").or_else(|| l.split_once(':')).unwrap();
        out.push_str(&format!(" {k}={}", v.trim_start()));
    }
    out
}

#[test]
fn minisign_keys_signatures_and_statements_work_both_ways() {
    if !minisign_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let pdf = fixtures().join("skills/pdf-forms");
    run(t, &["pack", s(&pdf), "-o", "p.tar.gz"]).code(0);
    minisign_ok(t, &["-G", "-W", "-p", "X.pub", "-s", "X.key"]);
    let public = read(&t.join("X.pub"));
    // minisign's comment prints the id without leading zeros (`%PRIX64`); skillcat always
    // prints all 16 digits (the registry stores that form).
    let printed = public.lines().next().unwrap().rsplit(' ').next().unwrap();
    let id = format!("{:016X}", u64::from_str_radix(printed, 16).unwrap());
    let ring = t.join("ring.toml");
    write_keyring(&ring, &[(&public, &["pdf-forms"], false)]);
    let ring_s = s(&ring);

    // A minisign key signs in skillcat, and skillcat verifies it.
    run(
        t,
        &[
            "sign",
            "p.tar.gz",
            "pdf-forms",
            "--key",
            "X.key",
            "--statement",
            "statement.txt",
        ],
    )
    .code(0);
    let o = run(t, &["verify", "p.tar.gz", "--keyring", ring_s]);
    o.code(0);
    assert!(
        o.out().ends_with(&format!("signed by key {id}\n")),
        "{}",
        o.out()
    );

    // minisign verifies skillcat's signature over the statement, trusted comment included.
    let statement = read(&t.join("statement.txt"));
    let out = minisign_ok(
        t,
        &[
            "-V",
            "-p",
            "X.pub",
            "-m",
            "statement.txt",
            "-x",
            "p.tar.gz.minisig",
        ],
    );
    assert!(
        out.contains(&format!("Trusted comment: {}", trusted_comment(&statement))),
        "{out}"
    );
    // …and refuses it over another statement.
    std::fs::write(t.join("other.txt"), statement.replace("0.4.1", "0.4.2")).unwrap();
    assert!(
        !minisign(
            t,
            &[
                "-V",
                "-p",
                "X.pub",
                "-m",
                "other.txt",
                "-x",
                "p.tar.gz.minisig"
            ]
        )
        .status
        .success()
    );

    // minisign signs the statement skillcat wrote (with another key), with the statement as
    // trusted comment: skillcat verifies that signature.
    keygen(t, "other");
    run(
        t,
        &[
            "sign",
            "p.tar.gz",
            "pdf-forms",
            "--key",
            "other.key",
            "-o",
            "other.minisig",
            "--statement",
            "st2.txt",
        ],
    )
    .code(0);
    let st2 = read(&t.join("st2.txt"));
    assert_eq!(
        st2, statement,
        "the statement depends on the content, not on the key"
    );
    let comment = trusted_comment(&st2);
    minisign_ok(
        t,
        &[
            "-S",
            "-s",
            "X.key",
            "-m",
            "st2.txt",
            "-x",
            "ms.minisig",
            "-t",
            &comment,
        ],
    );
    let o = run(
        t,
        &[
            "verify",
            "p.tar.gz",
            "--keyring",
            ring_s,
            "--sig",
            "ms.minisig",
        ],
    );
    o.code(0);
    assert!(
        o.out().contains(&format!("signed by key {id}")),
        "{}",
        o.out()
    );
    // The same tool, a trusted comment that is not the statement: refused.
    let wrong = comment.replace("version=0.4.1", "version=9.9.9");
    minisign_ok(
        t,
        &[
            "-S",
            "-s",
            "X.key",
            "-m",
            "st2.txt",
            "-x",
            "wc.minisig",
            "-t",
            &wrong,
        ],
    );
    run(
        t,
        &[
            "verify",
            "p.tar.gz",
            "--keyring",
            ring_s,
            "--sig",
            "wc.minisig",
        ],
    )
    .code(1)
    .says(&["trusted comment"]);
    // A minisign signature of some other file (here, the archive's bytes): refused.
    minisign_ok(
        t,
        &[
            "-S",
            "-s",
            "X.key",
            "-m",
            "p.tar.gz",
            "-x",
            "bytes.minisig",
            "-t",
            &comment,
        ],
    );
    run(
        t,
        &[
            "verify",
            "p.tar.gz",
            "--keyring",
            ring_s,
            "--sig",
            "bytes.minisig",
        ],
    )
    .code(1)
    .says(&["does not verify"]);
    // A key outside the keyring, even a valid minisign one.
    run(
        t,
        &[
            "verify",
            "p.tar.gz",
            "--keyring",
            ring_s,
            "--sig",
            "other.minisig",
        ],
    )
    .code(1)
    .says(&["not in the keyring"]);
}

// ───────────────────────────── trust project: by content ─────────────────────────────

/// `skillcat run` of the `write` script in `cwd`, with `home` as the home, writing `out/x.txt`.
fn trust_world_write(home: &Path, cwd: &Path, skills: &Path) -> Out {
    Skillcat::new(&[
        "run",
        s(skills),
        "writer",
        "write",
        "--allow-write",
        "out",
        "--args",
        "out/x.txt hi",
    ])
    .cwd(cwd)
    .env("HOME", home)
    .env_remove("SKILLCAT_CONFIG")
    .deadline(DEADLINE)
    .run()
}

/// A home, a project whose own `skillcat.toml` lets `out` be written, and a skill that writes.
fn trust_world() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = crate::support::sandbox_tempdir("skillcat-trust-project-");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (home, cwd, skills) = (root.join("home"), root.join("cwd"), root.join("skills"));
    for d in [&home, &cwd, &skills, &cwd.join("out")] {
        std::fs::create_dir(d).unwrap();
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    crate::support::write_skill(
        &skills.join("writer"),
        "---\nname: writer\ndescription: Writes a file.\n---\nBody\n",
        &[(
            "scripts/write.sh",
            "#!/bin/sh\n# Write a file.\necho \"$2\" > \"$1\"\n",
            true,
        )],
    );
    std::fs::write(
        cwd.join("skillcat.toml"),
        "[sandbox]\nfs_write = [\"out\"]\n",
    )
    .unwrap();
    (dir, home, cwd, skills)
}

/// Step 26, finding 1: a project is trusted by the sha256 of its `skillcat.toml`, not by its
/// path. A script that rewrites a trusted project's file (here: anyone who changes it) gets
/// nothing from the trust: the changed file is narrowed like any untrusted one, and stderr
/// says it changed and how to trust it again; trusting again makes it apply in full.
#[test]
fn trust_project_trusts_the_files_content_not_its_path() {
    let (_dir, home, cwd, skills) = trust_world();
    let project_file = cwd.join("skillcat.toml");
    let trust = || {
        Skillcat::new(&["trust", "project"])
            .cwd(&cwd)
            .env("HOME", &home)
            .env_remove("SKILLCAT_CONFIG")
            .run()
    };
    trust().code(0);
    let user_file = home.join(".config/skillcat/skillcat.toml");
    let recorded = std::fs::read_to_string(&user_file).unwrap();
    assert!(
        recorded.contains("sha256"),
        "the digest is recorded: {recorded}"
    );
    trust_world_write(&home, &cwd, &skills).code(0);
    assert_eq!(
        std::fs::read_to_string(cwd.join("out/x.txt")).unwrap(),
        "hi\n"
    );
    std::fs::remove_file(cwd.join("out/x.txt")).unwrap();

    // Rewritten (as a script with a write grant on the project could): no longer trusted.
    std::fs::write(
        &project_file,
        "[sandbox]\nfs_write = [\"out\"]\nnetwork = true\n",
    )
    .unwrap();
    let o = trust_world_write(&home, &cwd, &skills);
    o.code(2).says(&[
        "changed since you trusted it",
        &format!("skillcat trust project {}", cwd.display()),
    ]);
    assert!(!cwd.join("out/x.txt").exists());

    // Trusted again: the new content applies in full.
    trust().code(0);
    trust_world_write(&home, &cwd, &skills).code(0);
    std::fs::remove_file(cwd.join("out/x.txt")).unwrap();

    // A configuration written before digests were recorded (a bare path) trusts no content:
    // the project is treated as changed, and stderr says so.
    std::fs::write(
        &user_file,
        format!("trusted_projects = [{:?}]\n", cwd.display().to_string()),
    )
    .unwrap();
    let o = trust_world_write(&home, &cwd, &skills);
    o.code(2).says(&[
        "changed since you trusted it|no digest",
        &format!("skillcat trust project {}", cwd.display()),
    ]);
    assert!(!cwd.join("out/x.txt").exists());
    trust().code(0);
    trust_world_write(&home, &cwd, &skills).code(0);
}
