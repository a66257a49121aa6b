//! Workspaces materialised from an immutable per-digest copy of the skill's files (issue 53):
//! confined runs of the same skill share its inodes (hard links), a `trust: core` skill (which
//! may run unconfined) gets copies, and a script that writes its own file changes nothing.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::bin::BIN;
use crate::support::{sandbox_tempdir, write_skill};

const STAT: &str = "#!/bin/sh\nstat -c '%i %h' \"$0\"\n";
const WRITE: &str =
    "#!/bin/sh\nif (echo changed >> \"$0\") 2>/dev/null; then echo wrote; else echo refused; fi\n";

/// A world with the skill `st` (external) under `skills/` and `core-st` (`trust: core`) under
/// `core/`, a core-trusted source.
fn world() -> tempfile::TempDir {
    let dir = sandbox_tempdir("skillcat-store-");
    for (at, name, trust) in [
        ("skills/st", "st", ""),
        ("core/core-st", "core-st", "trust: core\n"),
    ] {
        write_skill(
            &dir.path().join(at),
            &format!("---\nname: {name}\ndescription: Shows its own file.\n{trust}---\nBody.\n"),
            &[
                ("scripts/stat.sh", STAT, true),
                ("scripts/write.sh", WRITE, true),
            ],
        );
    }
    std::fs::write(
        dir.path().join("skillcat.toml"),
        "[[sources]]\npath = \"core\"\ntrusted = true\ncore = true\n",
    )
    .unwrap();
    dir
}

fn run(dir: &Path, source: &str, name: &str, script: &str) -> Output {
    let out = Command::new(BIN)
        .args(["run", dir.join(source).to_str().unwrap(), name, script])
        .args(["--config", dir.join("skillcat.toml").to_str().unwrap()])
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    out
}

/// `(inode, link count)` the script printed.
fn stat(out: &Output) -> (u64, u64) {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut w = text.split_whitespace().map(|w| w.parse::<u64>().unwrap());
    (w.next().unwrap(), w.next().unwrap())
}

/// The per-digest entries under the world's workspace base.
fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("skillcat-ws"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("sk-"))
        .collect()
}

#[test]
fn confined_runs_of_one_skill_share_its_files_by_hard_link() {
    let w = world();
    let first = stat(&run(w.path(), "skills", "st", "stat"));
    let second = stat(&run(w.path(), "skills", "st", "stat"));
    // The workspace's file is a link to the entry's (two names while the run lives), and the
    // next run's is the same inode.
    assert!(first.1 >= 2, "not a hard link: {first:?}");
    assert_eq!(first.0, second.0, "{first:?} {second:?}");
    let entries = entries(w.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let file = entries[0].join("scripts/stat.sh");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), STAT);
    // Nothing can be added, removed or renamed in the entry.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(entries[0].join("scripts"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o555, "the entry's directory is writable");
}

#[test]
fn a_skill_that_may_run_unconfined_gets_copies() {
    let w = world();
    let first = stat(&run(w.path(), "core", "core-st", "stat"));
    assert_eq!(first.1, 1, "linked, not copied: {first:?}");
}

#[test]
fn a_script_cannot_write_its_own_file_and_the_entry_stays_intact() {
    let w = world();
    let out = run(w.path(), "skills", "st", "write");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "refused");
    let entries = entries(w.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        std::fs::read_to_string(entries[0].join("scripts/write.sh")).unwrap(),
        WRITE
    );
    // And the next run reads the file as it was.
    let out = run(w.path(), "skills", "st", "write");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "refused");
}
