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
