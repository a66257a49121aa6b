//! A private workspace base (step 26, finding 9): the directory that holds a user's workspaces
//! is not a name in a shared, world-writable directory that another local user could create
//! first. It is the user's runtime directory (`$XDG_RUNTIME_DIR`), else the cache directory,
//! created 0700 (0711 on a root host); a candidate whose directory others may write in, or a
//! name that is taken (a link, another owner's directory), is never used.

#![cfg(target_os = "linux")]

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::time::Duration;

use crate::support::bin::{Out, Skillcat};

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A world: `skills/echo` (one script), a `home`, a shared `tmp` (1777, like `/tmp`) and a
/// private `run` directory.
fn world() -> tempfile::TempDir {
    let dir = crate::support::sandbox_tempdir("skillcat-wsbase-");
    let p = dir.path();
    for d in ["home", "tmp", "run", "squat"] {
        std::fs::create_dir(p.join(d)).unwrap();
        chmod(&p.join(d), 0o755);
    }
    chmod(&p.join("tmp"), 0o1777);
    crate::support::write_skill(
        &p.join("skills/echo"),
        "---\nname: echo\ndescription: Says hello.\n---\nBody\n",
        &[(
            "scripts/hello.sh",
            "#!/bin/sh\n# Say hello.\necho hello\n",
            true,
        )],
    );
    chmod(&p.join("skills"), 0o755);
    dir
}

#[track_caller]
fn run(dir: &Path, runtime: Option<&Path>) -> Out {
    let mut cmd = Skillcat::new(&["run", "skills", "echo", "hello"])
        .cwd(dir)
        .env_remove("SKILLCAT_CONFIG")
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", dir.join("home"))
        .env("TMPDIR", dir.join("tmp"))
        .deadline(Duration::from_secs(60));
    cmd = match runtime {
        Some(r) => cmd.env("XDG_RUNTIME_DIR", r),
        None => cmd.env_remove("XDG_RUNTIME_DIR"),
    };
    cmd.run()
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn a_name_squatted_in_the_shared_temp_directory_stops_nothing() {
    let w = world();
    let p = w.path();
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    // Another user got there first: the old base's name is a link to their directory.
    symlink(p.join("squat"), p.join(format!("tmp/skillcat-ws-{uid}"))).unwrap();
    let o = run(p, Some(&p.join("run")));
    o.code(0);
    assert_eq!(o.out().trim(), "hello");
    assert!(
        empty(&p.join("squat")),
        "nothing is written where the link led"
    );
    // The base is in the runtime directory, private.
    let base = p.join("run/skillcat-ws");
    let meta = std::fs::symlink_metadata(&base).expect("the base is in $XDG_RUNTIME_DIR");
    assert!(meta.is_dir());
    assert_eq!(meta.uid(), uid);
    assert_eq!(meta.mode() & 0o066, 0, "no one else may read or write it");
}

#[test]
fn a_runtime_directory_others_may_write_in_is_not_used() {
    let w = world();
    let p = w.path();
    // `$XDG_RUNTIME_DIR` pointing at a shared directory, the base's name taken there.
    symlink(p.join("squat"), p.join("tmp/skillcat-ws")).unwrap();
    let o = run(p, Some(&p.join("tmp")));
    o.code(0);
    assert_eq!(o.out().trim(), "hello");
    assert!(
        empty(&p.join("squat")),
        "nothing is written where the link led"
    );
    // Without a usable runtime directory, the cache directory in the home holds it.
    let base = p.join("home/.cache/skillcat/ws");
    assert!(
        std::fs::symlink_metadata(&base).is_ok_and(|m| m.is_dir()),
        "the base falls back to the cache directory"
    );
    // A name taken in a private directory is refused with a clear error, never used.
    std::fs::remove_dir_all(p.join("home/.cache")).unwrap();
    std::fs::create_dir_all(p.join("home/.cache/skillcat")).unwrap();
    symlink(p.join("squat"), p.join("home/.cache/skillcat/ws")).unwrap();
    let o = run(p, None);
    assert_ne!(o.code, 0, "{o:?}");
    assert!(o.stderr.contains("refusing to use it"), "{}", o.stderr);
    assert!(empty(&p.join("squat")));
}

/// With no runtime directory the base is in the home's cache directory (`~/.cache`), a
/// dot-entry of the home: a grant of the whole home never reaches it (a grant holding a home
/// is carved around the home's dot-entries), so the grant is not refused as holding the
/// workspaces — while a grant naming the cache directory itself still is.
#[test]
fn a_grant_of_the_home_works_when_the_workspaces_are_in_its_cache() {
    let w = world();
    let p = w.path();
    std::fs::write(p.join("home/notes.txt"), "my notes\n").unwrap();
    crate::support::write_skill(
        &p.join("skills/reader"),
        "---\nname: reader\ndescription: Reads the user's notes.\n---\nBody\n",
        &[(
            "scripts/notes.sh",
            "#!/bin/sh\n# Read the notes.\ncat \"$1\"\n",
            true,
        )],
    );
    let home = p.join("home");
    std::fs::write(
        p.join("config.toml"),
        format!("sources = []\n[sandbox]\nfs_read = [\"{}\"]\n", p.display()),
    )
    .unwrap();
    let run = |grant: &Path| {
        let notes = home.join("notes.txt");
        Skillcat::new(&[
            "run",
            "skills",
            "reader",
            "notes",
            "--config",
            "config.toml",
            "--allow-read",
            grant.to_str().unwrap(),
            "--args",
            notes.to_str().unwrap(),
        ])
        .cwd(p)
        .env_remove("SKILLCAT_CONFIG")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .env("HOME", &home)
        .env("TMPDIR", p.join("tmp"))
        .deadline(Duration::from_secs(60))
        .run()
    };
    let o = run(&home);
    o.code(0);
    assert_eq!(o.out().trim(), "my notes");
    assert!(
        home.join(".cache/skillcat/ws").is_dir(),
        "the workspaces are in the home's cache directory"
    );
    // The cache directory named by a grant is refused: that grant would reach the workspaces.
    let o = run(&home.join(".cache"));
    assert_ne!(o.code, 0, "{o:?}");
    assert!(o.stderr.contains("skill workspaces"), "{}", o.stderr);
}
