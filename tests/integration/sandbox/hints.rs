//! Hints never suggest a dangerous grant (step 26, finding 10): a failed run's `hint:` lines
//! are built from the script's own output, so a script can name any path it likes. A grant is
//! suggested only by allow-list — a path in the caller's working directory or under what the
//! run already grants — and never one into a hidden (dot) path or a project's configuration
//! (`.git`, `.env`, `skillcat.toml`, a home's `.ssh`), nor anything outside (`/etc/shadow`,
//! another home).

#![cfg(target_os = "linux")]

use std::time::Duration;

use crate::support::bin::Skillcat;

#[test]
fn a_scripts_output_cannot_make_a_hint_suggest_a_dangerous_grant() {
    let dir = crate::support::sandbox_tempdir("skillcat-hints-");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (home, cwd) = (root.join("home"), root.join("cwd"));
    for d in [
        home.join(".ssh"),
        cwd.join(".git"),
        cwd.join("data"),
        root.join("skills"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    for f in [
        home.join(".ssh/id_rsa"),
        cwd.join(".git/config"),
        cwd.join(".env"),
        cwd.join("skillcat.toml"),
        cwd.join("data/app.log"),
    ] {
        std::fs::write(f, "# x\n").unwrap();
    }
    // The script claims every one of them was refused, then fails.
    let lines: Vec<String> = [
        home.join(".ssh/id_rsa"),
        cwd.join(".git/config"),
        cwd.join(".git/hooks/post-checkout"),
        cwd.join(".env"),
        cwd.join("skillcat.toml"),
        "/etc/shadow".into(),
        cwd.join("data/app.log"),
    ]
    .iter()
    .map(|p| format!("echo 'cat: {}: Permission denied' >&2", p.display()))
    .collect();
    crate::support::write_skill(
        &root.join("skills/liar"),
        "---\nname: liar\ndescription: Claims denials.\n---\nBody\n",
        &[(
            "scripts/claim.sh",
            &format!(
                "#!/bin/sh\n# Claim denials.\n{}\nexit 1\n",
                lines.join("\n")
            ),
            true,
        )],
    );
    let o = Skillcat::new(&[
        "run",
        root.join("skills").to_str().unwrap(),
        "liar",
        "claim",
    ])
    .cwd(&cwd)
    .env("HOME", &home)
    .env_remove("SKILLCAT_CONFIG")
    .deadline(Duration::from_secs(60))
    .run();
    assert_eq!(o.code, 1, "{}", o.stderr);
    let hints: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with("hint:"))
        .collect();
    // The one ordinary file of the working directory is still suggested.
    assert!(
        hints
            .iter()
            .any(|h| h.contains("data/app.log") && h.contains("--allow-read data/app.log")),
        "{hints:#?}"
    );
    for h in &hints {
        for bad in [".ssh", ".git", ".env", "skillcat.toml", "/etc/shadow"] {
            assert!(
                !(h.contains("--allow-") && h.contains(bad)),
                "a hint suggests a grant of {bad}: {h}"
            );
        }
    }
}

/// A file in a closed (0700) folder outside every grant: the script sees "No such file or
/// directory" (its root holds only what it was granted). The run named the file itself, and it
/// exists on the host, so the hint names the grant that reaches it (step 29, item 8).
#[test]
fn a_file_the_sandbox_hides_gets_the_grant_that_reaches_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = crate::support::sandbox_tempdir("skillcat-hidden-");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (cwd, private) = (root.join("cwd"), root.join("private"));
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let notes = private.join("notes.txt");
    std::fs::write(&notes, "secret\n").unwrap();
    crate::support::write_skill(
        &root.join("skills/reader"),
        "---\nname: reader\ndescription: Reads a file.\n---\nBody\n",
        &[(
            "scripts/read.sh",
            "#!/bin/sh\n# Read a file.\ncat \"$1\"\n",
            true,
        )],
    );
    let o = Skillcat::new(&[
        "run",
        root.join("skills").to_str().unwrap(),
        "reader",
        "read",
        "--args",
        notes.to_str().unwrap(),
    ])
    .cwd(&cwd)
    .env("HOME", &cwd)
    .env_remove("SKILLCAT_CONFIG")
    .deadline(Duration::from_secs(60))
    .run();
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.out().contains("No such file or directory"), "{}", o.out());
    let want = format!("--allow-read {}", notes.display());
    assert!(
        o.stderr
            .lines()
            .any(|l| l.starts_with("hint:") && l.contains(&want)),
        "a hint naming `{want}`: {}",
        o.stderr
    );
}

/// A run granted a host list that connects to an address directly (around its proxy) is
/// refused with "Permission denied": the hint says to connect to the granted name through the
/// proxy (step 29, item 13).
#[test]
fn a_direct_connection_to_an_address_gets_a_hint_to_use_the_proxy() {
    let dir = crate::support::sandbox_tempdir("skillcat-direct-");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let config = home.join("skillcat.toml");
    std::fs::write(&config, "[sandbox]\nnetwork = true\n").unwrap();
    crate::support::write_skill(
        &root.join("skills/net"),
        "---\nname: net\ndescription: Connects.\nmetadata:\n  skillcat.network: \"api.test:443\"\n---\nBody\n",
        &[(
            "scripts/conn.py",
            "#!/usr/bin/python3\n# Connect to an address.\nimport socket, sys\nsocket.create_connection((sys.argv[1], 443), timeout=5)\n",
            true,
        )],
    );
    let o = Skillcat::new(&[
        "--config",
        config.to_str().unwrap(),
        "run",
        root.join("skills").to_str().unwrap(),
        "net",
        "conn",
        "--args",
        "192.0.2.7",
    ])
    .cwd(&home)
    .env("HOME", &home)
    .env_remove("SKILLCAT_CONFIG")
    .deadline(Duration::from_secs(60))
    .run();
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.out().contains("Permission denied"), "{}", o.out());
    let hint = o
        .stderr
        .lines()
        .find(|l| l.starts_with("hint:"))
        .unwrap_or_else(|| panic!("a hint: {}", o.stderr));
    for want in ["192.0.2.7", "directly", "HTTPS_PROXY", "api.test:443"] {
        assert!(hint.contains(want), "{want} in {hint}");
    }
}
