//! The archive source: a one-skill archive is the skill itself, and the fixture catalog gives
//! the same digests as a directory, a tarball and a zip. (Its conformance suite, over archives
//! packed by skillcat's own writer and by the system's `tar`, runs in
//! `crates/skillcat-core/tests/conformance.rs`, and through `open` in
//! `crates/skillcat-sources/tests/conformance.rs`.)
//!
//! Origin: step 2 (issue 3); its conformance runs moved to the crates by step 28 (issue 50).

use skillcat::archive::{ArchiveKind, ArchiveLimits};
use skillcat::pack::{PackEntry, write_tar_gz, write_zip};
use skillcat::path::join_path;
use skillcat::source::{self, ArchiveSource, DirOptions, DirSource, Source, SourceExt};

/// Every file of every root of the catalog, as archive entries under `root/`.
async fn catalog_entries() -> Vec<PackEntry> {
    let dir = DirSource::open(
        &skillcat_core::testing::catalog_dir(),
        DirOptions::default(),
    )
    .unwrap();
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
async fn one_skill_archive_is_the_skill_itself() {
    let dir = DirSource::open(
        &skillcat_core::testing::catalog_dir().join("alpha"),
        DirOptions::default(),
    )
    .unwrap();
    let mut entries = Vec::new();
    for f in dir.files("").await.unwrap() {
        entries.push(PackEntry {
            bytes: dir.read(&f.path).await.unwrap(),
            path: f.path,
            executable: f.executable,
        });
    }
    let mut bytes = Vec::new();
    write_tar_gz(&entries, &mut bytes).unwrap();
    let tar = ArchiveSource::from_bytes(
        ArchiveKind::TarGz,
        "alpha.tar.gz",
        &bytes,
        ArchiveLimits::default(),
    )
    .unwrap();
    assert_eq!(tar.list().await.unwrap(), [""]);
    let a = dir.manifest("", "alpha", "").await.unwrap();
    let b = tar.manifest("", "alpha", "").await.unwrap();
    assert_eq!(a, b, "same manifest, executable bits included");
    let skill = source::load(&tar, "").await.unwrap();
    assert_eq!(skill.name(), "alpha");
    assert!(
        skill.location().ends_with("alpha.tar.gz!/SKILL.md"),
        "{}",
        skill.location()
    );
}

#[tokio::test]
async fn digests_agree_across_directory_tarball_and_zip() {
    let entries = catalog_entries().await;
    let mut tgz = Vec::new();
    write_tar_gz(&entries, &mut tgz).unwrap();
    let mut zip = std::io::Cursor::new(Vec::new());
    write_zip(&entries, &mut zip).unwrap();
    let sources: Vec<Box<dyn Source>> = vec![
        Box::new(
            DirSource::open(
                &skillcat_core::testing::catalog_dir(),
                DirOptions::default(),
            )
            .unwrap(),
        ),
        Box::new(
            ArchiveSource::from_bytes(ArchiveKind::TarGz, "c.tgz", &tgz, ArchiveLimits::default())
                .unwrap(),
        ),
        Box::new(
            ArchiveSource::from_bytes(
                ArchiveKind::Zip,
                "c.zip",
                zip.get_ref(),
                ArchiveLimits::default(),
            )
            .unwrap(),
        ),
    ];
    let mut all = Vec::new();
    for src in &sources {
        let mut digests = Vec::new();
        for root in src.list().await.unwrap() {
            digests.push((root.clone(), src.manifest(&root, "", "").await.unwrap()));
        }
        all.push(digests);
    }
    assert_eq!(all[0].len(), 13);
    assert_eq!(all[0], all[1], "directory vs tar.gz");
    assert_eq!(all[0], all[2], "directory vs zip");
}
