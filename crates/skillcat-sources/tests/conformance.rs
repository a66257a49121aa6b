//! Every store `open` reaches from a spelling passes the conformance suite
//! (`skillcat_core::testing`): a directory, tarballs written by the system's `tar` (the format
//! told by their first bytes, whatever their name), and a git repository holding the catalog.
//!
//! Origin: the directory and archive cases are the suite of step 2 (issue 3) as the
//! integration tests ran it through `source::open`, moved here by step 28 (issue 50); the git
//! case is new with it (the git source of step 10, issue 15, had no conformance run).

use std::path::Path;
use std::process::Command;

use skillcat_core::testing;

#[tokio::test]
async fn open_picks_the_directory_source() {
    let src = skillcat_sources::open(testing::catalog_dir().to_str().unwrap()).unwrap();
    testing::check_source(&*src).await;
}

/// `tar -C catalog -czf x.tar.gz .` writes `./`-prefixed paths and directory entries; the same
/// skills must come out, through `open()` picking the format by magic bytes.
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
        let src = skillcat_sources::open(out.to_str().unwrap()).unwrap();
        testing::check_source(&*src).await;
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Copies `from` into `to`, files with their modes (the executable bits are what git keeps).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The catalog committed to a repository (under `skills/`, beside a file that is no skill) and
/// read at its branch: the same roots, files, bits, digests and faults as from the directory,
/// except the folder that holds no document: a git source fetches only the folders that hold a
/// SKILL.md, so it never sees that one (a directory lists it, and discovery reports it).
#[tokio::test]
async fn git_source_passes_the_conformance_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_tree(&testing::catalog_dir(), &repo.join("skills"));
    std::fs::write(repo.join("README.md"), "not a skill\n").unwrap();
    git(&repo, &["init", "--quiet", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "the catalog"]);
    let spec = format!("git+file://{}#main:skills", repo.display());
    let src = skillcat_sources::open(spec.as_str()).unwrap();
    let cases = testing::cases();
    let roots: Vec<&str> = cases
        .iter()
        .map(|c| c["root"].as_str().unwrap())
        .filter(|r| *r != "no-document")
        .collect();
    assert_eq!(roots.len() + 1, cases.len());
    testing::check_roots(&*src, &roots).await;
}
