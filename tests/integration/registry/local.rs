//! The SQLite registry against real SQLite files in temporary directories: the conformance suite
//! through a `RegistrySource`, digests agreeing with the directory and tarball sources,
//! immutability, semver order and yanking, hostile search text, keyring-required publishing,
//! schema versions, corruption, and crash safety under `SIGKILL`.
//!
//! Origin: step 3 (issue 4: the SQLite registry).

use std::path::{Path, PathBuf};

use serde_json::Value as J;
use skillcat::archive::ArchiveLimits;
use skillcat::digest;
use skillcat::pack::{PackEntry, write_archive};
use skillcat::path::join_path;
use skillcat::publish::prepare;
use skillcat::registry::{Outcome, PublishOptions, Registry, RegistryError, SCHEMA_VERSION};
use skillcat::sign::{self, KeyEntry, Keyring, Statement};
use skillcat::source::{
    self, ArchiveSource, DirOptions, DirSource, RegistrySource, Source, SourceExt,
};

// ---------------------------------------------------------------------------------------------
// Helpers

fn catalog() -> Vec<J> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog.json");
    serde_json::from_str::<J>(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn catalog_source() -> DirSource {
    DirSource::open(
        &skillcat_core::testing::catalog_dir(),
        DirOptions::default(),
    )
    .unwrap()
}

fn with_version(v: &str) -> PublishOptions<'static> {
    PublishOptions {
        version: Some(v.to_string()),
        ..Default::default()
    }
}

/// Writes a skill folder `dir/name` holding `SKILL.md` (with `extra` in the body) and `files`.
fn write_skill(dir: &Path, name: &str, extra: &str, files: &[(&str, &[u8], bool)]) -> PathBuf {
    let root = dir.join(name);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill. Use when testing.\n---\n# {name}\n\n{extra}\n"),
    )
    .unwrap();
    for (path, bytes, exec) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        set_exec(&p, *exec);
    }
    root
}

#[cfg(unix)]
fn set_exec(p: &Path, exec: bool) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        p,
        std::fs::Permissions::from_mode(if exec { 0o755 } else { 0o644 }),
    )
    .unwrap();
}

#[cfg(not(unix))]
fn set_exec(_: &Path, _: bool) {}

fn one_skill(path: &Path) -> DirSource {
    DirSource::open_skill(path, DirOptions::default()).unwrap()
}

fn new_registry(dir: &Path) -> (PathBuf, Registry) {
    let db = dir.join("skills.db");
    let r = Registry::init(&db).unwrap();
    (db, r)
}

/// Recomputes, from the raw tables, that every version's files hash to its skill digest and
/// every blob to its address. Independent of `Registry::check`.
fn recompute_every_version(db: &Path) -> usize {
    recompute_new_versions(db, &mut std::collections::HashSet::new())
}

/// [`recompute_every_version`] for the versions not in `seen` (published versions are
/// immutable: one check each is enough); `PRAGMA integrity_check` covers the whole file.
fn recompute_new_versions(db: &Path, seen: &mut std::collections::HashSet<i64>) -> usize {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let versions: Vec<(i64, String, Vec<u8>)> = conn
        .prepare("SELECT id, version, skill_digest FROM version")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut files = conn
        .prepare("SELECT f.path, b.sha256, b.content FROM file f JOIN blob b ON b.id = f.blob_id WHERE f.version_id = ?1")
        .unwrap();
    for (id, version, stored) in &versions {
        if !seen.insert(*id) {
            continue;
        }
        let rows: Vec<(String, Vec<u8>, Vec<u8>)> = files
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!rows.is_empty(), "version {version} has no files");
        let mut hashes = Vec::new();
        for (path, sha, content) in &rows {
            let actual = digest::sha256(content);
            assert_eq!(
                &actual[..],
                &sha[..],
                "{version}/{path}: blob does not hash to its address"
            );
            hashes.push((path.as_str(), actual));
        }
        assert_eq!(
            digest::tree_digest(hashes),
            format!("sha256:{}", digest::to_hex(stored)),
            "version {version}"
        );
    }
    versions.len()
}

// ---------------------------------------------------------------------------------------------
// Conformance and digests

/// Publishes every root of the catalog; returns the registry. Invalid roots must be refused
/// with exactly their catalog faults, and leave nothing behind.
async fn publish_catalog(dir: &Path) -> (PathBuf, Registry) {
    let (db, mut reg) = new_registry(dir);
    let src = catalog_source();
    for case in catalog() {
        let root = case["root"].as_str().unwrap();
        // flow-lists carries metadata.version 2.0.0; the others need a version given.
        let opts = if root == "flow-lists" {
            PublishOptions::default()
        } else {
            with_version("1.0.0")
        };
        let result = reg.publish(&src, root, &opts).await;
        if case["valid"].as_bool().unwrap() {
            let p = result.unwrap_or_else(|e| panic!("{root}: {e}"));
            assert_eq!(p.outcome, Outcome::Published);
            assert_eq!(p.digest, case["digest"].as_str().unwrap(), "{root}");
            assert_eq!(
                p.version,
                if root == "flow-lists" {
                    "2.0.0"
                } else {
                    "1.0.0"
                }
            );
        } else {
            let err = result.expect_err(root);
            let kinds: Vec<&str> = err.faults().iter().map(|f| f.kind().as_str()).collect();
            let want: Vec<&str> = case["fault_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect();
            assert_eq!(kinds, want, "{root}: {err}");
            assert!(err.is_refusal(), "{root}");
        }
    }
    let skills: i64 = reg
        .connection()
        .query_row("SELECT count(*) FROM skill", [], |r| r.get(0))
        .unwrap();
    let valid = catalog()
        .iter()
        .filter(|c| c["valid"].as_bool().unwrap())
        .count();
    assert_eq!(skills as usize, valid, "refused skills leave no row");
    (db, reg)
}

#[tokio::test]
async fn digests_agree_with_the_directory_and_tarball_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = catalog_source();
    let valid: Vec<J> = catalog()
        .into_iter()
        .filter(|c| c["valid"].as_bool().unwrap())
        .collect();
    // The valid skills packed into one tarball, one folder each.
    let mut entries = Vec::new();
    for case in &valid {
        let root = case["root"].as_str().unwrap();
        for f in dir.files(root).await.unwrap() {
            let bytes = dir.read(&join_path(root, &f.path)).await.unwrap();
            entries.push(PackEntry {
                path: join_path(root, &f.path),
                bytes,
                executable: f.executable,
            });
        }
    }
    let archive = tmp.path().join("catalog.tar.gz");
    write_archive(&entries, &archive).unwrap();
    let tar = ArchiveSource::open(&archive, ArchiveLimits::default()).unwrap();

    std::fs::create_dir(tmp.path().join("a")).unwrap();
    let (db_a, mut from_dir) = new_registry(&tmp.path().join("a"));
    let db_b = tmp.path().join("b.db");
    let mut from_tar = Registry::init(&db_b).unwrap();
    for case in &valid {
        let root = case["root"].as_str().unwrap();
        let a = from_dir
            .publish(&dir, root, &with_version("1.0.0"))
            .await
            .unwrap();
        let b = from_tar
            .publish(&tar, root, &with_version("1.0.0"))
            .await
            .unwrap();
        assert_eq!(a.digest, b.digest, "{root}");
        assert_eq!(a.digest, case["digest"].as_str().unwrap(), "{root}");
        // The same skill from the tarball into the first registry: nothing new.
        let again = from_dir
            .publish(&tar, root, &with_version("1.0.0"))
            .await
            .unwrap();
        assert_eq!(
            (again.outcome, again.new_blobs),
            (Outcome::Unchanged, 0),
            "{root}"
        );
        // The stored manifests are the ones the sources compute.
        let m_dir = dir
            .manifest(root, case["name"].as_str().unwrap(), "1.0.0")
            .await
            .unwrap();
        let stored = from_dir.get(root, "1.0.0").unwrap().unwrap().manifest;
        assert_eq!(stored, m_dir, "{root}");
    }
    for db in [&db_a, &db_b] {
        let src = RegistrySource::open(db).unwrap();
        for case in &valid {
            let root = case["root"].as_str().unwrap();
            let m = src.manifest(root, "", "").await.unwrap();
            let t = tar.manifest(root, "", "").await.unwrap();
            assert_eq!(m.digest, t.digest, "{root}");
            assert_eq!(m, t, "{root}: same files, sizes and executable bits");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Immutability

#[tokio::test]
async fn same_content_is_a_no_op_and_other_content_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, mut reg) = new_registry(tmp.path());
    let skill = write_skill(
        tmp.path(),
        "immut",
        "v1",
        &[("scripts/run.sh", b"#!/bin/sh\necho 1\n", true)],
    );
    let first = reg
        .publish(&one_skill(&skill), "", &with_version("1.0.0"))
        .await
        .unwrap();
    assert_eq!(
        (first.outcome, first.files, first.new_blobs),
        (Outcome::Published, 2, 2)
    );
    let before = reg.versions("immut").unwrap();

    let again = reg
        .publish(&one_skill(&skill), "", &with_version("1.0.0"))
        .await
        .unwrap();
    assert_eq!(
        (again.outcome, again.new_blobs, &again.digest),
        (Outcome::Unchanged, 0, &first.digest)
    );
    assert_eq!(
        reg.versions("immut").unwrap(),
        before,
        "nothing written, not even the time"
    );

    // Other bytes under the same version.
    write_skill(
        tmp.path(),
        "immut",
        "v2",
        &[("scripts/run.sh", b"#!/bin/sh\necho 1\n", true)],
    );
    let err = reg
        .publish(&one_skill(&skill), "", &with_version("1.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Immutable { .. }), "{err}");
    assert!(err.to_string().contains("immutable"), "{err}");
    // Same bytes, another executable bit: the manifest differs.
    write_skill(
        tmp.path(),
        "immut",
        "v1",
        &[("scripts/run.sh", b"#!/bin/sh\necho 1\n", false)],
    );
    let err = reg
        .publish(&one_skill(&skill), "", &with_version("1.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Immutable { .. }), "{err}");
    assert!(err.to_string().contains("executable"), "{err}");

    // The registry still serves the first content.
    assert_eq!(reg.versions("immut").unwrap(), before);
    assert_eq!(
        reg.get("immut", "1.0.0").unwrap().unwrap().info.digest,
        first.digest
    );
    // And the schema refuses to rewrite history through raw SQL.
    let conn = reg.connection();
    for sql in [
        "UPDATE version SET skill_digest = zeroblob(32)",
        "UPDATE version SET description = 'x'",
        "UPDATE version_text SET body = 'x'",
        "DELETE FROM version_text",
        "DELETE FROM version",
        "UPDATE file SET executable = 0",
        "DELETE FROM file",
        "UPDATE blob SET content = x'00', size = 1",
    ] {
        let e = conn.execute(sql, []).unwrap_err().to_string();
        assert!(
            e.contains("immutable") || e.contains("never deleted"),
            "{sql}: {e}"
        );
    }
}

#[tokio::test]
async fn blobs_are_deduplicated_across_versions_and_skills() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, mut reg) = new_registry(tmp.path());
    let shared: &[(&str, &[u8], bool)] = &[
        ("references/shared.md", b"shared text\n", false),
        ("assets/empty.txt", b"", false),
    ];
    let a = write_skill(tmp.path(), "dedup-a", "one", shared);
    let p = reg
        .publish(&one_skill(&a), "", &with_version("1.0.0"))
        .await
        .unwrap();
    assert_eq!(p.new_blobs, 3);
    let p = reg
        .publish(&one_skill(&a), "", &with_version("1.1.0"))
        .await
        .unwrap();
    assert_eq!(
        (p.outcome, p.new_blobs),
        (Outcome::Published, 0),
        "identical files: no new blob"
    );
    let b = write_skill(tmp.path(), "dedup-b", "two", shared);
    let p = reg
        .publish(&one_skill(&b), "", &with_version("1.0.0"))
        .await
        .unwrap();
    assert_eq!(p.new_blobs, 1, "only the new SKILL.md");
    let blobs: i64 = reg
        .connection()
        .query_row("SELECT count(*) FROM blob", [], |r| r.get(0))
        .unwrap();
    assert_eq!(blobs, 4);
    drop(reg);
    let src = RegistrySource::open(tmp.path().join("skills.db")).unwrap();
    assert_eq!(
        src.read("dedup-b/assets/empty.txt").await.unwrap().len(),
        0,
        "an empty file round-trips"
    );
}

#[tokio::test]
async fn large_files_round_trip_through_incremental_blob_io() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, mut reg) = new_registry(tmp.path());
    let big: Vec<u8> = (0..1_500_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let skill = write_skill(tmp.path(), "big", "", &[("assets/big.bin", &big, false)]);
    reg.publish(&one_skill(&skill), "", &with_version("1.0.0"))
        .await
        .unwrap();
    let report = reg.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    drop(reg);
    let src = RegistrySource::open(&db).unwrap();
    assert_eq!(&src.read("big/assets/big.bin").await.unwrap()[..], &big[..]);
}

// ---------------------------------------------------------------------------------------------
// Versions

#[tokio::test]
async fn versions_sort_by_semver_and_latest_skips_yanked() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, mut reg) = new_registry(tmp.path());
    let skill = tmp.path().join("sv");
    for v in ["1.9.0", "1.10.0", "0.1.0", "1.10.0-rc.1", "1.2.0"] {
        write_skill(tmp.path(), "sv", &format!("release {v}"), &[]);
        reg.publish(&one_skill(&skill), "", &with_version(v))
            .await
            .unwrap();
    }
    let listed: Vec<String> = reg
        .versions("sv")
        .unwrap()
        .into_iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(listed, ["0.1.0", "1.2.0", "1.9.0", "1.10.0-rc.1", "1.10.0"]);
    assert_eq!(reg.latest("sv").unwrap().unwrap().version, "1.10.0");
    assert!(
        reg.versions("sv")
            .unwrap()
            .iter()
            .filter(|v| v.latest)
            .map(|v| &v.version)
            .eq(["1.10.0"])
    );

    assert!(reg.yank("sv", "1.10.0").unwrap());
    assert!(
        !reg.yank("sv", "1.10.0").unwrap(),
        "yanking twice changes nothing"
    );
    assert_eq!(reg.latest("sv").unwrap().unwrap().version, "1.10.0-rc.1");
    assert!(reg.yank("sv", "1.10.0-rc.1").unwrap());
    assert_eq!(reg.latest("sv").unwrap().unwrap().version, "1.9.0");
    let yanked: Vec<bool> = reg
        .versions("sv")
        .unwrap()
        .iter()
        .map(|v| v.yanked)
        .collect();
    assert_eq!(yanked, [false, false, false, true, true]);

    // The source lists the latest; an explicit NAME@VERSION still reads a yanked version.
    let src = RegistrySource::open(&db).unwrap();
    assert_eq!(src.list().await.unwrap(), ["sv"]);
    assert!(
        src.read_to_string("sv/SKILL.md")
            .await
            .unwrap()
            .contains("release 1.9.0")
    );
    assert!(
        src.read_to_string("sv@1.10.0/SKILL.md")
            .await
            .unwrap()
            .contains("release 1.10.0")
    );
    let yanked_skill = src.load("sv@1.10.0").await.unwrap();
    assert_eq!(yanked_skill.name(), "sv");
    assert!(
        yanked_skill.validate(&Default::default()).is_empty(),
        "root_dir_name strips @VERSION"
    );
    assert_eq!(
        src.location("sv@1.10.0/SKILL.md"),
        format!("{}#sv@1.10.0/SKILL.md", src.display())
    );
    assert_eq!(
        src.location("sv/SKILL.md"),
        format!("{}#sv@1.9.0/SKILL.md", src.display())
    );

    // Every version yanked: nothing listed, nothing found, still readable by version.
    for v in ["0.1.0", "1.2.0", "1.9.0"] {
        reg.yank("sv", v).unwrap();
    }
    assert!(reg.latest("sv").unwrap().is_none());
    assert!(reg.search("release", 10).unwrap().is_empty());
    let fresh = RegistrySource::open(&db).unwrap();
    assert!(fresh.list().await.unwrap().is_empty());
    assert!(matches!(
        fresh.files("sv").await,
        Err(skillcat::Error::NotFound(_))
    ));
    assert!(fresh.read("sv@0.1.0/SKILL.md").await.is_ok());
    assert!(reg.unyank("sv", "1.2.0").unwrap());
    assert_eq!(reg.latest("sv").unwrap().unwrap().version, "1.2.0");
    assert_eq!(reg.search("release", 10).unwrap()[0].version, "1.2.0");
    assert!(matches!(
        reg.yank("sv", "9.9.9"),
        Err(RegistryError::NotFound(_))
    ));
    assert!(matches!(
        reg.yank("nope", "1.0.0"),
        Err(RegistryError::NotFound(_))
    ));
}

#[tokio::test]
async fn a_version_must_be_semver_and_given_when_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, mut reg) = new_registry(tmp.path());
    let plain = write_skill(tmp.path(), "plain", "", &[]);
    let err = reg
        .publish(&one_skill(&plain), "", &PublishOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::MissingVersion { .. }), "{err}");
    assert!(err.to_string().contains("--version"), "{err}");
    for bad in ["1.2", "v1.0.0", "latest", "1.0.0.0"] {
        let err = reg
            .publish(&one_skill(&plain), "", &with_version(bad))
            .await
            .unwrap_err();
        assert!(
            matches!(err, RegistryError::BadVersion { .. }),
            "{bad}: {err}"
        );
    }
    // metadata.version is used when no version is given; the override wins over it.
    let dir = tmp.path().join("meta");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: meta\ndescription: d\nmetadata:\n  version: 3.1.4\n---\nB\n",
    )
    .unwrap();
    assert_eq!(
        reg.publish(&one_skill(&dir), "", &PublishOptions::default())
            .await
            .unwrap()
            .version,
        "3.1.4"
    );
    assert_eq!(
        reg.publish(&one_skill(&dir), "", &with_version("4.0.0"))
            .await
            .unwrap()
            .version,
        "4.0.0"
    );
    // Versions differing only in build metadata are one version.
    let err = reg
        .publish(&one_skill(&dir), "", &with_version("4.0.0+build.7"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::VersionConflict { .. }),
        "{err}"
    );
    // Nothing of the refused publishes was written.
    assert!(reg.versions("plain").unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Search

#[tokio::test]
async fn search_never_errors_on_hostile_text() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, reg) = publish_catalog(tmp.path()).await;
    let mut hostile: Vec<String> = [
        "",
        " ",
        "\t\n",
        "\"",
        "\"\"",
        "\"\"\"",
        "-",
        "--",
        "-alpha",
        ":",
        "name:",
        "name:alpha",
        "{name description}: alpha",
        "NEAR(",
        "NEAR(alpha beta",
        "NEAR(a b, 2)",
        "*",
        "alpha*",
        "^alpha",
        "+",
        "AND",
        "OR",
        "NOT",
        "AND OR NOT",
        "alpha AND",
        "OR alpha",
        "NOT NOT",
        ")",
        "(",
        "()",
        "(alpha",
        "alpha)",
        "'",
        "'; DROP TABLE skill; --",
        "\\",
        "\0",
        "a\0b",
        "навык",
        "ẞ ß ﬁ",
        "🦀 emoji",
        "\u{202E}rtl",
        "e\u{301}",
        "\u{FEFF}",
        "%",
        "_",
        "?",
        "[",
        "]",
        "alpha\"beta",
        "\"alpha",
        "alpha\"",
        "rowid",
        "rank",
        "skill_search",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    hostile.push("x".repeat(10 * 1024));
    hostile.push("\"".repeat(10 * 1024));
    hostile.push("NEAR( ".repeat(2 * 1024));
    hostile.push("a OR ".repeat(2 * 1024));
    hostile.push("é".repeat(5 * 1024));
    hostile.push(
        (0..10 * 1024)
            .map(|i| char::from(b"\"-:*()^+ aAN"[i % 12]))
            .collect(),
    );
    // Random strings over an alphabet of every character FTS5 treats specially.
    let alphabet: Vec<char> = "\"'-:*^+(){}[],. \t\nANDORNTEAalpha0123456789навык\u{0}\u{301}🦀"
        .chars()
        .collect();
    let mut seed = 0x5EED_u64;
    for _ in 0..500 {
        let len = (splitmix(&mut seed) % 40) as usize;
        hostile.push(
            (0..len)
                .map(|_| alphabet[(splitmix(&mut seed) % alphabet.len() as u64) as usize])
                .collect(),
        );
    }
    for q in &hostile {
        let hits = reg
            .search(q, 5)
            .unwrap_or_else(|e| panic!("{:?}: {e}", &q[..q.len().min(40)]));
        assert!(hits.len() <= 5);
    }
    for q in ["", "   ", "\"", "-", "*", "()"] {
        assert!(
            reg.search(q, 5).unwrap().is_empty(),
            "{q:?} has nothing to look for"
        );
    }
    assert!(reg.search("alpha", 0).unwrap().is_empty());
}

#[tokio::test]
async fn search_ranks_name_first_and_reads_the_latest_version() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, mut reg) = publish_catalog(tmp.path()).await;
    // "alpha" is a name; "beta-tool"'s body does not mention alpha.
    let hits = reg.search("alpha", 10).unwrap();
    assert_eq!(hits[0].name, "alpha");
    // A word in a description, across skills, best first.
    let hits = reg.search("test needs", 20).unwrap();
    assert_eq!(hits.len(), 7, "{hits:?}");
    // Best first: scores are never negative and larger is better.
    assert!(hits.iter().all(|h| h.score >= 0.0), "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // Non-ASCII text and diacritics.
    assert_eq!(reg.search("кириллическим", 5).unwrap()[0].name, "навык");
    // A word only in the body of a newer version is found once that version is latest, and not
    // after it is yanked.
    let skill = write_skill(tmp.path(), "alpha", "zanzibar", &[]);
    assert!(reg.search("zanzibar", 5).unwrap().is_empty());
    reg.publish(&one_skill(&skill), "", &with_version("1.1.0"))
        .await
        .unwrap();
    let hits = reg.search("zanzibar", 5).unwrap();
    assert_eq!(
        (hits.len(), hits[0].name.as_str(), hits[0].version.as_str()),
        (1, "alpha", "1.1.0")
    );
    reg.yank("alpha", "1.1.0").unwrap();
    assert!(reg.search("zanzibar", 5).unwrap().is_empty());
    assert_eq!(reg.search("alpha", 5).unwrap()[0].version, "1.0.0");
    // Stemming: "prints" finds alpha's "Prints alpha".
    assert_eq!(reg.search("print", 5).unwrap()[0].name, "alpha");
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// ---------------------------------------------------------------------------------------------
// Signatures

struct Signer {
    public: String,
    secret: String,
}

impl Signer {
    fn new() -> Signer {
        let (public, secret) = sign::generate_keypair(None).unwrap();
        Signer { public, secret }
    }

    fn key_id(&self) -> String {
        sign::key_id_of_public_key(&self.public).unwrap()
    }

    async fn sign(&self, src: &dyn Source, name: &str, version: &str) -> String {
        let m = src.manifest("", name, version).await.unwrap();
        sign::sign(&Statement::from_manifest(&m).unwrap(), &self.secret, None).unwrap()
    }

    fn keyring(&self, scopes: &[&str]) -> Keyring {
        let mut k = Keyring::new();
        k.add(KeyEntry::new(&self.public, scopes.iter().copied()).unwrap())
            .unwrap();
        k
    }
}

#[tokio::test]
async fn a_keyring_requires_a_good_signature() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, mut reg) = new_registry(tmp.path());
    let signer = Signer::new();
    let stranger = Signer::new();
    let ring = signer.keyring(&["signed-*"]);
    let dir = write_skill(
        tmp.path(),
        "signed-one",
        "",
        &[("scripts/go.sh", b"#!/bin/sh\n", true)],
    );
    let src = one_skill(&dir);
    let good = signer.sign(&src, "signed-one", "1.0.0").await;
    let opts = |sig: Option<String>, version: &str| PublishOptions {
        version: Some(version.into()),
        signature: sig,
        keyring: Some(&ring),
        ..Default::default()
    };

    let err = reg
        .publish(&src, "", &opts(None, "1.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unsigned { .. }), "{err}");
    // Signed by a key the keyring does not hold.
    let foreign = stranger.sign(&src, "signed-one", "1.0.0").await;
    let err = reg
        .publish(&src, "", &opts(Some(foreign), "1.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::BadSignature { .. }), "{err}");
    assert!(err.to_string().contains("not in the keyring"), "{err}");
    // A good signature of another version.
    let err = reg
        .publish(&src, "", &opts(Some(good.clone()), "2.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::BadSignature { .. }), "{err}");
    // A good signature, then the content changes.
    std::fs::write(dir.join("scripts/go.sh"), b"#!/bin/sh\nrm -rf ~\n").unwrap();
    let err = reg
        .publish(&one_skill(&dir), "", &opts(Some(good.clone()), "1.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::BadSignature { .. }), "{err}");
    std::fs::write(dir.join("scripts/go.sh"), b"#!/bin/sh\n").unwrap();
    // Garbage.
    let err = reg
        .publish(&src, "", &opts(Some("not a signature".into()), "1.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::BadSignature { .. }), "{err}");
    assert!(
        reg.versions("signed-one").unwrap().is_empty(),
        "nothing written by a refusal"
    );

    let p = reg
        .publish(&src, "", &opts(Some(good.clone()), "1.0.0"))
        .await
        .unwrap();
    assert_eq!(
        (p.outcome, p.signed_by.as_deref()),
        (Outcome::Published, Some(signer.key_id().as_str()))
    );
    let release = reg.get("signed-one", "1.0.0").unwrap().unwrap();
    assert_eq!(release.signatures.len(), 1);
    assert_eq!(release.signatures[0].text, good);
    assert_eq!(release.info.signed_by, [signer.key_id()]);
    // The stored signature verifies against the manifest recomputed from the registry's bytes.
    drop(reg);
    let rs = RegistrySource::open(tmp.path().join("skills.db")).unwrap();
    let m = rs
        .manifest("signed-one", "signed-one", "1.0.0")
        .await
        .unwrap();
    sign::verify(&m, &release.signatures[0].text, &ring, "signed-one").unwrap();
}

#[tokio::test]
async fn without_a_keyring_a_signature_must_name_the_content() {
    let tmp = tempfile::tempdir().unwrap();
    let (_db, mut reg) = new_registry(tmp.path());
    let signer = Signer::new();
    let dir = write_skill(tmp.path(), "loose", "", &[]);
    let src = one_skill(&dir);
    let for_v1 = signer.sign(&src, "loose", "1.0.0").await;
    let opts = |sig: &str, v: &str| PublishOptions {
        version: Some(v.into()),
        signature: Some(sig.into()),
        ..Default::default()
    };
    let err = reg
        .publish(&src, "", &opts(&for_v1, "1.0.1"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::BadSignature { .. }), "{err}");
    assert!(err.to_string().contains("version"), "{err}");
    let p = reg
        .publish(&src, "", &opts(&for_v1, "1.0.0"))
        .await
        .unwrap();
    assert_eq!(p.signed_by, Some(signer.key_id()));
    // A second key's signature of the same content is added; the content stays unchanged.
    let other = Signer::new();
    let second = other.sign(&src, "loose", "1.0.0").await;
    let p = reg
        .publish(&src, "", &opts(&second, "1.0.0"))
        .await
        .unwrap();
    assert_eq!((p.outcome, p.signature_added), (Outcome::Unchanged, true));
    assert_eq!(
        reg.get("loose", "1.0.0").unwrap().unwrap().signatures.len(),
        2
    );
    let p = reg
        .publish(&src, "", &opts(&second, "1.0.0"))
        .await
        .unwrap();
    assert_eq!((p.outcome, p.signature_added), (Outcome::Unchanged, false));
}

// ---------------------------------------------------------------------------------------------
// Files, schema and corruption

#[tokio::test]
async fn opening_checks_what_the_file_is() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    // Missing.
    assert!(matches!(
        Registry::open(&db),
        Err(RegistryError::Missing { .. })
    ));
    assert!(matches!(
        Registry::open_read_only(&db),
        Err(RegistryError::Missing { .. })
    ));
    assert!(!db.exists(), "open never creates a file");
    // init on an empty file works; init on a registry is refused.
    std::fs::write(&db, b"").unwrap();
    let reg = Registry::init(&db).unwrap();
    assert_eq!(reg.schema_version().unwrap(), SCHEMA_VERSION);
    let app_id: i32 = reg
        .connection()
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app_id.to_be_bytes(), *b"SKIL");
    let mode: String = reg
        .connection()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(reg);
    assert!(matches!(
        Registry::init(&db),
        Err(RegistryError::AlreadyExists { .. })
    ));
    // Not SQLite at all.
    let text = tmp.path().join("notes.db");
    std::fs::write(
        &text,
        "hello, this is not a database at all, but it is long enough to look like one",
    )
    .unwrap();
    let err = Registry::open(&text).unwrap_err();
    assert!(matches!(err, RegistryError::NotARegistry { .. }), "{err}");
    assert!(matches!(
        Registry::init(&text),
        Err(RegistryError::AlreadyExists { .. })
    ));
    // Another application's SQLite database.
    let other = tmp.path().join("other.sqlite");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("PRAGMA application_id = 42; CREATE TABLE t (x);")
        .unwrap();
    drop(conn);
    let err = Registry::open(&other).unwrap_err();
    assert!(matches!(err, RegistryError::NotARegistry { .. }), "{err}");
    assert!(err.to_string().contains("application id"), "{err}");
    assert!(RegistrySource::open(&other).is_err());
}

#[tokio::test]
async fn a_registry_newer_than_the_code_is_refused_naming_both_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, reg) = new_registry(tmp.path());
    let newer = SCHEMA_VERSION + 6;
    reg.connection()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    drop(reg);
    for err in [
        Registry::open(&db).unwrap_err(),
        Registry::open_read_only(&db).unwrap_err(),
    ] {
        match &err {
            RegistryError::SchemaTooNew {
                found, supported, ..
            } => {
                assert_eq!((*found, *supported), (newer, SCHEMA_VERSION));
            }
            other => panic!("{other}"),
        }
        let text = err.to_string();
        assert!(
            text.contains(&newer.to_string()) && text.contains(&SCHEMA_VERSION.to_string()),
            "{text}"
        );
        assert!(text.contains("upgrade skillcat"), "{text}");
    }
    let err = RegistrySource::open(&db).unwrap_err().to_string();
    assert!(err.contains(&newer.to_string()), "{err}");
}

#[tokio::test]
async fn an_older_schema_is_migrated_by_a_read_write_open() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("old.db");
    // A registry from before the first migration: the id is set, nothing else (a file with
    // objects of its own is no registry: tests/measured/registry_file.rs).
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "application_id", skillcat::registry::APPLICATION_ID)
        .unwrap();
    drop(conn);
    let err = Registry::open_read_only(&db).unwrap_err();
    assert!(
        matches!(err, RegistryError::SchemaTooOld { found: 0, .. }),
        "{err}"
    );
    let reg = Registry::open(&db).unwrap();
    assert_eq!(reg.schema_version().unwrap(), SCHEMA_VERSION);
    drop(reg);
    assert_eq!(
        Registry::open_read_only(&db)
            .unwrap()
            .schema_version()
            .unwrap(),
        SCHEMA_VERSION
    );
}

#[tokio::test]
async fn registry_source_follows_the_source_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, mut reg) = publish_catalog(tmp.path()).await;
    let src = RegistrySource::open(&db).unwrap();
    assert_eq!(src.root_dir_name("alpha@1.0.0").as_deref(), Some("alpha"));
    assert_eq!(src.root_dir_name("alpha").as_deref(), Some("alpha"));
    assert_eq!(src.root_dir_name(""), None);
    for bad in [
        "../alpha/SKILL.md",
        "/alpha/SKILL.md",
        "alpha/../beta-tool/SKILL.md",
        "alpha//SKILL.md",
        "alpha",
        "alpha/./SKILL.md",
    ] {
        assert!(
            matches!(
                src.read(bad).await,
                Err(skillcat::Error::PathRejected { .. })
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        src.read("alpha/nope.md").await,
        Err(skillcat::Error::NotFound(_))
    ));
    assert!(matches!(
        src.read("nope/SKILL.md").await,
        Err(skillcat::Error::NotFound(_))
    ));
    assert!(matches!(
        src.files("alpha@9.9.9").await,
        Err(skillcat::Error::NotFound(_))
    ));
    assert!(matches!(
        src.files("").await,
        Err(skillcat::Error::PathRejected { .. })
    ));
    let files = src.files("alpha").await.unwrap();
    assert!(
        files
            .iter()
            .any(|f| f.path == "scripts/run.sh" && f.executable)
    );
    assert_eq!(
        src.location("alpha/scripts/run.sh"),
        format!("{}#alpha@1.0.0/scripts/run.sh", src.display())
    );
    assert!(Path::new(src.display()).is_absolute());

    // A root is pinned at first use: a newer version appears only after refresh().
    let skill = write_skill(tmp.path(), "alpha", "the second", &[]);
    reg.publish(&one_skill(&skill), "", &with_version("1.1.0"))
        .await
        .unwrap();
    assert!(
        !src.read_to_string("alpha/SKILL.md")
            .await
            .unwrap()
            .contains("the second")
    );
    assert_eq!(src.files("alpha").await.unwrap(), files);
    src.refresh();
    assert!(
        src.read_to_string("alpha/SKILL.md")
            .await
            .unwrap()
            .contains("the second")
    );
    assert!(src.location("alpha/SKILL.md").contains("#alpha@1.1.0/"));

    // Reads run concurrently on the pool.
    let mut tasks = Vec::new();
    let src = std::sync::Arc::new(src);
    for i in 0..64 {
        let src = std::sync::Arc::clone(&src);
        tasks.push(tokio::spawn(async move {
            let root = ["alpha", "beta-tool", "навык", "alpha@1.0.0"][i % 4];
            source::load(&*src, root).await.map(|s| s.name())
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn altered_bytes_are_detected_not_served() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, reg) = publish_catalog(tmp.path()).await;
    // Incremental blob I/O bypasses the triggers: flip one byte of alpha's SKILL.md.
    let id: i64 = reg
        .connection()
        .query_row(
            "SELECT f.blob_id FROM file f JOIN version v ON v.id = f.version_id \
             JOIN skill s ON s.id = v.skill_id WHERE s.name = 'alpha' AND f.path = 'SKILL.md'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    {
        let mut blob = reg
            .connection()
            .blob_open(rusqlite::MAIN_DB, "blob", "content", id, false)
            .unwrap();
        blob.write_at(b"X", 10).unwrap();
    }
    let report = reg.check().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(
        report.problems[0].starts_with(&format!("blob {id}:")),
        "{:?}",
        report.problems
    );
    drop(reg);
    let src = RegistrySource::open(&db).unwrap();
    let err = src.read("alpha/SKILL.md").await.unwrap_err();
    assert!(
        matches!(err, skillcat::Error::DigestMismatch { .. }),
        "{err}"
    );
    assert!(src.read("beta-tool/SKILL.md").await.is_ok());
}

#[tokio::test]
async fn prepare_reads_and_verifies_without_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let src = catalog_source();
    let p = prepare(&src, "alpha", &with_version("0.1.0"))
        .await
        .unwrap();
    assert_eq!((p.name(), p.version()), ("alpha", "0.1.0"));
    assert_eq!(p.manifest().files.len(), 3);
    let (_db, mut reg) = new_registry(tmp.path());
    let published = tokio::task::spawn_blocking(move || reg.commit(&p))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(published.outcome, Outcome::Published);
    assert!(published.latest);
}

#[tokio::test]
async fn a_read_only_registry_refuses_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, reg) = new_registry(tmp.path());
    drop(reg);
    let mut ro = Registry::open_read_only(&db).unwrap();
    assert!(ro.is_read_only());
    let err = ro
        .publish(&catalog_source(), "alpha", &with_version("1.0.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::ReadOnly { .. }), "{err}");
    assert!(matches!(
        ro.yank("alpha", "1.0.0"),
        Err(RegistryError::ReadOnly { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Crash safety

/// The environment variable that turns [`crash_child`] into a publisher that never stops.
const CRASH_DB: &str = "SKILLCAT_TEST_CRASH_DB";

/// Not a test on its own: when the parent test re-executes this binary with [`CRASH_DB`] set,
/// this publishes new versions (with a large file, so transactions take a while) and yanks
/// some, forever, until the parent kills it.
fn mark(what: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{what}").unwrap();
    out.flush().unwrap();
}

#[test]
fn crash_child() {
    let Ok(db) = std::env::var(CRASH_DB) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let work = tempfile::tempdir().unwrap();
        let mut reg = Registry::open(&db).unwrap();
        let mut n = reg.versions("crash-a").unwrap().len() + reg.versions("crash-b").unwrap().len();
        loop {
            n += 1;
            let name = if n.is_multiple_of(2) {
                "crash-a"
            } else {
                "crash-b"
            };
            let big: Vec<u8> = (0..160_000u32)
                .map(|i| (i as usize ^ n).wrapping_mul(31) as u8)
                .collect();
            let small: Vec<(String, Vec<u8>)> = (0..20)
                .map(|i| {
                    (
                        format!("references/r{i:02}.md"),
                        format!("note {i} of {n}\n").into_bytes(),
                    )
                })
                .collect();
            let mut files: Vec<(&str, &[u8], bool)> = vec![
                ("assets/big.bin", &big, false),
                ("shared.txt", b"same\n", false),
            ];
            files.extend(small.iter().map(|(p, b)| (p.as_str(), &b[..], false)));
            let dir = write_skill(work.path(), name, &format!("publish {n}"), &files);
            let version = format!("1.{n}.0");
            let prepared = prepare(&one_skill(&dir), "", &with_version(&version))
                .await
                .unwrap();
            // The parent reads these marks to tell where each kill landed.
            mark("commit");
            reg.commit(&prepared).unwrap();
            if n.is_multiple_of(5) {
                mark("yank");
                reg.yank(name, &version).unwrap();
            }
            mark("done");
        }
    });
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_publish_never_leaves_half_a_version() {
    use std::process::{Command, Stdio};
    // At least this many kills, and at least MID_WRITE of them inside a write transaction
    // (kill times are random; rounds go on until both hold, up to MAX_KILLS).
    const KILLS: usize = 30;
    const MID_WRITE: usize = 5;
    const MAX_KILLS: usize = 200;
    let tmp = tempfile::tempdir().unwrap();
    let (db, reg) = new_registry(tmp.path());
    drop(reg);
    let exe = std::env::current_exe().unwrap();
    // The child test's name as the harness knows it: its module path without the binary's name.
    let crash_child = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::crash_child"),
        None => "crash_child".to_string(),
    };
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill timing seed {seed}");
    let mut killed_mid_run = 0;
    let marks = tmp.path().join("marks.txt");
    let mut landed = std::collections::BTreeMap::new();
    let mut in_transaction = 0;
    let mut seen = std::collections::HashSet::new();
    let mut round = 0;
    while round < KILLS || (in_transaction < MID_WRITE && round < MAX_KILLS) {
        round += 1;
        let mut child = Command::new(&exe)
            .args([
                crash_child.as_str(),
                "--exact",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CRASH_DB, &db)
            .stdout(Stdio::from(std::fs::File::create(&marks).unwrap()))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Readers run while the child writes: every version they see is whole.
        let deadline = std::time::Instant::now()
            + std::time::Duration::from_millis(40 + splitmix(&mut seed) % 210);
        while std::time::Instant::now() < deadline {
            if let Ok(r) = Registry::open_read_only(&db) {
                for v in r
                    .versions("crash-a")
                    .unwrap()
                    .iter()
                    .chain(r.versions("crash-b").unwrap().iter())
                {
                    let release = r.get(&v.name, &v.version).unwrap().unwrap();
                    assert_eq!(release.manifest.files.len(), 23, "{}@{}", v.name, v.version);
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        }
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        if status.code().is_none() {
            killed_mid_run += 1;
        } else {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            panic!("round {round}: the child exited on its own ({status}):\n{stderr}");
        }
        let text = std::fs::read_to_string(&marks).unwrap();
        let last = text
            .lines()
            .rev()
            .find(|l| ["commit", "yank", "done"].contains(l));
        let during = match last {
            Some("commit") => "commit (in the write transaction)",
            Some("yank") => "yank (in the write transaction)",
            Some(_) => "prepare (reading and hashing)",
            None => "start-up",
        };
        *landed.entry(during).or_insert(0) += 1;
        if during.contains("transaction") {
            in_transaction += 1;
        }
        // After every kill: the file is sound and every visible version is whole.
        recompute_new_versions(&db, &mut seen);
    }
    let report = Registry::open_read_only(&db).unwrap().check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(killed_mid_run, round);
    assert!(
        in_transaction >= MID_WRITE,
        "only {in_transaction} of {round} kills landed in a write: {landed:?}"
    );
    let versions = recompute_every_version(&db);
    assert!(
        versions >= 10,
        "the child published only {versions} versions: kills came too early to test anything"
    );
    // The registry still works for writing and reading after all that.
    let mut reg = Registry::open(&db).unwrap();
    let latest_a = reg.latest("crash-a").unwrap();
    let skill = write_skill(tmp.path(), "crash-a", "after", &[]);
    reg.publish(&one_skill(&skill), "", &with_version("99.0.0"))
        .await
        .unwrap();
    assert_ne!(reg.latest("crash-a").unwrap(), latest_a);
    drop(reg);
    let src = RegistrySource::open(&db).unwrap();
    let found = source::discover(&src).await.unwrap();
    assert!(found.faults.is_empty(), "{:?}", found.faults);
    eprintln!(
        "{round} kills, {versions} versions published and intact; kills landed during {landed:?}"
    );
}

#[tokio::test]
async fn open_picks_the_registry_source() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, _reg) = publish_catalog(tmp.path()).await;
    for spec in [db.display().to_string(), format!("sqlite:{}", db.display())] {
        skillcat_core::testing::check_valid_subset(&*skillcat::source::open(&spec).unwrap()).await;
    }
}
