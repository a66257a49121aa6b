//! The core's stores pass the source conformance suite (`skillcat_core::testing`) on the fixture
//! catalog: the directory, a tar.gz and a zip packed by the core's own writer, a plain tar and a
//! tar.gz written by the system's `tar`, and every skill held in memory (`HeldSource`).
//!
//! Origin: the suite of step 2 (issue 3), moved here from the integration tests'
//! `support/conformance.rs` by step 28 (issue 50) so each crate checks the stores it owns; the
//! held sources are checked since then.

use std::process::Command;
use std::sync::Arc;

use skillcat_core::archive::{ArchiveKind, ArchiveLimits};
use skillcat_core::pack::{PackEntry, write_tar_gz, write_zip};
use skillcat_core::path::join_path;
use skillcat_core::source::{self, ArchiveSource, DirOptions, DirSource, HeldSource, Source};
use skillcat_core::testing;

fn catalog() -> DirSource {
    DirSource::open(&testing::catalog_dir(), DirOptions::default()).unwrap()
}

/// Every file of every root of the catalog, as archive entries under `root/`.
async fn catalog_entries() -> Vec<PackEntry> {
    let dir = catalog();
    let mut entries = Vec::new();
    for root in dir.list().await.unwrap() {
        for f in dir.files(&root).await.unwrap() {
            let path = join_path(&root, &f.path);
            entries.push(PackEntry {
                bytes: dir.read(&path).await.unwrap(),
                path,
                executable: f.executable,
            });
        }
    }
    entries
}

#[tokio::test]
async fn directory_source_passes_the_conformance_suite() {
    testing::check_source(&catalog()).await;
}

#[tokio::test]
async fn tar_gz_source_passes_the_conformance_suite() {
    let mut bytes = Vec::new();
    write_tar_gz(&catalog_entries().await, &mut bytes).unwrap();
    let src = ArchiveSource::from_bytes(
        ArchiveKind::TarGz,
        "catalog.tar.gz",
        &bytes,
        ArchiveLimits::default(),
    )
    .unwrap();
    testing::check_source(&src).await;
}

#[tokio::test]
async fn zip_source_passes_the_conformance_suite() {
    let mut cur = std::io::Cursor::new(Vec::new());
    write_zip(&catalog_entries().await, &mut cur).unwrap();
    let src = ArchiveSource::from_bytes(
        ArchiveKind::Zip,
        "catalog.zip",
        cur.get_ref(),
        ArchiveLimits::default(),
    )
    .unwrap();
    testing::check_source(&src).await;
}

/// `tar -C catalog -cf x.tar .` writes `./`-prefixed paths and directory entries; the same
/// skills come out, the format told by the archive's first bytes (a gzip stream named `.zip`
/// too).
#[tokio::test]
async fn system_tar_archives_pass_too() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, flags) in [
        ("c.tar.gz", "-czf"),
        ("c.tar", "-cf"),
        ("mislabelled.zip", "-czf"),
    ] {
        let out = tmp.path().join(name);
        let status = Command::new("tar")
            .arg("-C")
            .arg(testing::catalog_dir())
            .arg(flags)
            .arg(&out)
            .arg(".")
            .status()
            .expect("tar runs");
        assert!(status.success());
        let src = ArchiveSource::open(&out, ArchiveLimits::default()).unwrap();
        testing::check_source(&src).await;
    }
}

/// Every skill that loads, read once and held: the same files, bits, digest, name and faults
/// as the directory gives for its root.
#[tokio::test]
async fn held_sources_pass_the_conformance_suite() {
    let dir: Arc<dyn Source> = Arc::new(catalog());
    let found = source::discover(&*dir).await.unwrap();
    let loading: Vec<String> = testing::cases()
        .iter()
        .filter(|c| c["loads"].as_bool().unwrap())
        .map(|c| c["root"].as_str().unwrap().to_string())
        .collect();
    let held: Vec<&str> = found.skills.iter().map(|s| s.root()).collect();
    assert_eq!(held, loading, "every skill that loads is held");
    for skill in &found.skills {
        let src = HeldSource::read(dir.clone(), skill).await.unwrap();
        testing::check_root(&src, skill.root()).await;
    }
}
