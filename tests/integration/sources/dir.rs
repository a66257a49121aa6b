//! The directory source: tree bounds and symlink containment (its conformance suite runs in
//! `crates/skillcat-core/tests/conformance.rs`, and through `open` in
//! `crates/skillcat-sources/tests/conformance.rs`).
//!
//! Origin: step 1 (issue 2: the directory source); its conformance runs moved to the crates by step
//! 28 (issue 50).

use skillcat::source::{self, DirOptions, DirSource, Source};

fn skill(dir: &std::path::Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: d\n---\nBody\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn nested_roots_respect_max_depth_and_skip_dot_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    skill(&tmp.path().join("a/b/deep"), "deep");
    skill(&tmp.path().join("top"), "top");
    skill(&tmp.path().join(".hidden/x"), "x");
    skill(&tmp.path().join("node_modules/y"), "y");
    let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
    assert_eq!(src.list().await.unwrap(), ["a/b/deep", "top"]);
    let shallow = DirSource::open(
        tmp.path(),
        DirOptions {
            max_depth: 2,
            ..Default::default()
        },
    )
    .unwrap();
    // `a` has content but no skill within reach: it is listed so discover reports it.
    assert_eq!(shallow.list().await.unwrap(), ["a", "top"]);
}

#[tokio::test]
async fn too_many_directories_is_an_error_not_a_silent_cut() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..10 {
        std::fs::create_dir_all(tmp.path().join(format!("d{i}/e"))).unwrap();
    }
    let src = DirSource::open(
        tmp.path(),
        DirOptions {
            max_dirs: 5,
            ..Default::default()
        },
    )
    .unwrap();
    let err = src.list().await.unwrap_err().to_string();
    assert!(err.contains("more than 5 directories"), "{err}");
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_never_lead_out_of_the_root() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s");
    skill(&s, "s");
    symlink(outside.path().join("secret.txt"), s.join("leak.txt")).unwrap();
    // A link inside the root is fine.
    std::fs::write(s.join("real.txt"), "ok").unwrap();
    symlink(s.join("real.txt"), s.join("alias.txt")).unwrap();
    // A symlinked directory out of the root is not searched for skills.
    skill(&outside.path().join("elsewhere"), "elsewhere");
    symlink(
        outside.path().join("elsewhere"),
        tmp.path().join("elsewhere"),
    )
    .unwrap();
    // A loop does not hang the walk.
    symlink(tmp.path().join("loop"), tmp.path().join("loop2")).unwrap();
    symlink(tmp.path().join("loop2"), tmp.path().join("loop")).unwrap();

    let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
    assert_eq!(src.list().await.unwrap(), ["s"]);
    let err = src.files("s").await.unwrap_err();
    assert!(matches!(err, skillcat::Error::PathRejected { .. }), "{err}");
    let err = src.read("s/leak.txt").await.unwrap_err();
    assert!(matches!(err, skillcat::Error::PathRejected { .. }), "{err}");
    assert_eq!(&src.read("s/alias.txt").await.unwrap()[..], b"ok");
    for bad in [
        "../x",
        "s/../../etc/passwd",
        "/etc/passwd",
        "s//SKILL.md",
        "s/./SKILL.md",
    ] {
        assert!(
            matches!(
                src.read(bad).await,
                Err(skillcat::Error::PathRejected { .. })
            ),
            "{bad}"
        );
    }
    // discover reports the skill with the escaping link as a fault, never silently.
    let d = source::discover(&src).await.unwrap();
    assert!(d.skills.is_empty());
    assert_eq!(d.faults.len(), 1);
    assert!(
        d.faults[0].fault.message().contains("outside"),
        "{}",
        d.faults[0].fault.message()
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_directory_reached_twice_through_links_is_read_once() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s");
    skill(&s, "s");
    std::fs::create_dir(s.join("scripts")).unwrap();
    std::fs::write(s.join("scripts/run.sh"), "echo hi\n").unwrap();
    // Inside the skill: an alias of a directory already walked, and a loop back to the root.
    symlink(s.join("scripts"), s.join("tools")).unwrap();
    symlink(&s, s.join("self")).unwrap();
    // A link to a file is a file.
    symlink(s.join("scripts/run.sh"), s.join("run-link.sh")).unwrap();
    // Around it: a second name for the skill, and a folder whose only entry leads back to it.
    symlink(&s, tmp.path().join("t-alias")).unwrap();
    std::fs::create_dir(tmp.path().join("group")).unwrap();
    symlink("../s", tmp.path().join("group/inner")).unwrap();

    let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
    // The skill once; the folder with no skill of its own is reported, not dropped.
    assert_eq!(src.list().await.unwrap(), ["group", "s"]);
    let paths = |files: Vec<skillcat::path::FileEntry>| -> Vec<(String, u64)> {
        files.into_iter().map(|f| (f.path, f.size)).collect()
    };
    let want = vec![
        ("SKILL.md".to_string(), 36),
        ("run-link.sh".to_string(), 8),
        ("scripts/run.sh".to_string(), 8),
    ];
    assert_eq!(paths(src.files("s").await.unwrap()), want);
    let d = source::discover(&src).await.unwrap();
    assert_eq!(d.skills.len(), 1);
    assert_eq!(paths(d.skills[0].files().to_vec()), want);
    assert_eq!(d.faults.len(), 1);
    assert_eq!(d.faults[0].root, "group");
    assert_eq!(d.faults[0].fault.kind().as_str(), "missing-document");
}

#[cfg(unix)]
#[tokio::test]
async fn a_skill_found_through_a_link_reads_from_its_target() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("store/real");
    skill(&real, "real");
    std::fs::create_dir(real.join("docs")).unwrap();
    std::fs::write(real.join("docs/a.md"), "a").unwrap();
    // `store` is searched first; `t-linked` leads to the same folder under another name.
    symlink(tmp.path().join("store"), tmp.path().join("t-linked")).unwrap();
    // A link that sorts first makes the skill known by the link's path.
    let other = tmp.path().join("zz/other");
    skill(&other, "other");
    symlink(&other, tmp.path().join("aa-other")).unwrap();

    let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
    assert_eq!(src.list().await.unwrap(), ["aa-other", "store/real", "zz"]);
    let d = source::discover(&src).await.unwrap();
    let roots: Vec<&str> = d.skills.iter().map(|s| s.root()).collect();
    assert_eq!(roots, ["aa-other", "store/real"]);
    let files = |i: usize| -> Vec<&str> {
        d.skills[i]
            .files()
            .iter()
            .map(|f| f.path.as_str())
            .collect()
    };
    assert_eq!(files(0), ["SKILL.md"]);
    assert_eq!(files(1), ["SKILL.md", "docs/a.md"]);
}

#[tokio::test]
async fn oversized_files_are_refused_on_size() {
    let tmp = tempfile::tempdir().unwrap();
    skill(tmp.path(), "x");
    std::fs::write(tmp.path().join("big.bin"), vec![0u8; 2048]).unwrap();
    let src = DirSource::open(
        tmp.path(),
        DirOptions {
            max_file_size: 1024,
            ..Default::default()
        },
    )
    .unwrap();
    let err = src.read("big.bin").await.unwrap_err();
    assert!(
        matches!(
            err,
            skillcat::Error::TooLarge {
                size: 2048,
                limit: 1024,
                ..
            }
        ),
        "{err}"
    );
}

/// A file with far more bytes than blocks on disk is refused when read (its holes would be
/// copied as zeros into every workspace and pack); a dense file of the same size, and a small
/// sparse one below the floor, are read.
#[cfg(unix)]
#[tokio::test]
async fn sparse_files_are_refused_when_read() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    skill(tmp.path(), "x");
    let sparse = tmp.path().join("sparse.bin");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    if std::fs::metadata(&sparse).unwrap().blocks() * 512 > 64 << 10 {
        eprintln!("this file system allocates holes; skipped");
        return;
    }
    std::fs::write(tmp.path().join("dense.bin"), vec![7u8; 8 << 20]).unwrap();
    std::fs::File::create(tmp.path().join("small.bin"))
        .unwrap()
        .set_len(512 << 10)
        .unwrap();
    let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
    let err = src.read("sparse.bin").await.unwrap_err().to_string();
    assert!(
        err.contains("a sparse file") && err.contains("8388608 bytes"),
        "{err}"
    );
    assert_eq!(src.read("dense.bin").await.unwrap().len(), 8 << 20);
    assert_eq!(src.read("small.bin").await.unwrap().len(), 512 << 10);
    // The check is the source's option.
    let lenient = DirSource::open(
        tmp.path(),
        DirOptions {
            sparse_floor: u64::MAX,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(lenient.read("sparse.bin").await.unwrap().len(), 8 << 20);
}
