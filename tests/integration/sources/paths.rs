//! One path check for every store: a path a source is asked to read is refused by the directory,
//! the tarball, the zip and the registry alike, with the same rule as its reason
//! (`source::check_path`, over `path::RelPath`).
//!
//! Origin: step 16 (issue 21: one path check for every store).

use skillcat::archive::{ArchiveKind, ArchiveLimits};
use skillcat::error::Error;
use skillcat::pack::{PackEntry, write_tar_gz, write_zip};
use skillcat::path::{PathRule, RelPath, join_path};
use skillcat::registry::{PublishOptions, Registry};
use skillcat::source::{ArchiveSource, DirOptions, DirSource, RegistrySource, Source};

const SKILL: &str =
    "---\nname: demo\ndescription: A demo skill.\nmetadata:\n  version: \"1.0.0\"\n---\nBody\n";

/// Paths no store may read, and the rule each breaks.
fn hostile() -> Vec<(String, PathRule)> {
    vec![
        ("demo/../demo/SKILL.md".into(), PathRule::DotComponent),
        ("demo/./SKILL.md".into(), PathRule::DotComponent),
        ("/etc/passwd".into(), PathRule::Absolute),
        ("C:/demo/SKILL.md".into(), PathRule::Absolute),
        ("demo//SKILL.md".into(), PathRule::EmptyComponent),
        ("demo\\SKILL.md".into(), PathRule::Backslash),
        ("demo/SKILL.md\0".into(), PathRule::ControlChar),
        ("demo/\u{1b}[2J".into(), PathRule::ControlChar),
        ("demo/CON.md".into(), PathRule::WindowsReserved),
        ("demo/SKILL~1.MD".into(), PathRule::WindowsReserved),
        (
            format!("demo/{}", "a".repeat(256)),
            PathRule::ComponentTooLong,
        ),
        (
            format!("demo/{}", vec!["d"; 17].join("/")),
            PathRule::TooDeep,
        ),
    ]
}

async fn assert_refuses(name: &str, src: &dyn Source) {
    // The store does hold the skill: a good path reads.
    assert!(src.read("demo/SKILL.md").await.is_ok(), "{name}: SKILL.md");
    for (path, rule) in hostile() {
        assert_eq!(RelPath::new(path.as_str()), Err(rule), "{path:?}");
        match src.read(&path).await {
            Err(Error::PathRejected { reason, .. }) => {
                assert_eq!(reason, rule.to_string(), "{name}: {path:?}")
            }
            other => panic!("{name}: {path:?} gave {other:?}, not PathRejected ({rule})"),
        }
    }
}

#[tokio::test]
async fn every_store_refuses_the_same_paths_for_the_same_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("skills");
    std::fs::create_dir_all(dir.join("demo")).unwrap();
    std::fs::write(dir.join("demo/SKILL.md"), SKILL).unwrap();
    let entries = vec![PackEntry {
        path: join_path("demo", "SKILL.md"),
        bytes: SKILL.as_bytes().to_vec().into(),
        executable: false,
    }];

    let dir_src = DirSource::open(&dir, DirOptions::default()).unwrap();
    assert_refuses("directory", &dir_src).await;

    let mut tgz = Vec::new();
    write_tar_gz(&entries, &mut tgz).unwrap();
    let tar_src = ArchiveSource::from_bytes(
        ArchiveKind::TarGz,
        "s.tar.gz",
        &tgz,
        ArchiveLimits::default(),
    )
    .unwrap();
    assert_refuses("tarball", &tar_src).await;

    let mut zip = std::io::Cursor::new(Vec::new());
    write_zip(&entries, &mut zip).unwrap();
    let zip_src = ArchiveSource::from_bytes(
        ArchiveKind::Zip,
        "s.zip",
        zip.get_ref(),
        ArchiveLimits::default(),
    )
    .unwrap();
    assert_refuses("zip", &zip_src).await;

    let db = tmp.path().join("r.db");
    let mut reg = Registry::init(&db).unwrap();
    reg.publish(&dir_src, "demo", &PublishOptions::default())
        .await
        .unwrap();
    drop(reg);
    let reg_src = RegistrySource::open(&db).unwrap();
    assert_refuses("registry", &reg_src).await;
}
