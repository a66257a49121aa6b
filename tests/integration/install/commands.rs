//! `skillcat add / install / update / remove / status` through the real binary: every kind of
//! source, the agents' folders, the lockfile's pins, and the guarantees — verification,
//! atomicity (a killed install, a read-only lockfile, concurrent adds), frozen installs, drift,
//! downgrades and signer changes, names and links that would escape.
//!
//! Origin: step 10 (issue 15: installing skills into agents, pinned by a lockfile).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::project::{Project, commit_all, git, key, skill, trust_also};
use crate::support::serve::spawn_serve;

/// Installs, deletes the installed folders, and checks `install --frozen` puts back the same
/// digest without changing a byte of the lockfile; returns the lockfile entry.
#[track_caller]
fn round_trip(p: &Project, add: &[&str], name: &str) -> serde_json::Value {
    p.run(add).code(0);
    let entry = p.lock()["skills"][name].clone();
    let digest = entry["digest"]
        .as_str()
        .expect("a digest is pinned")
        .to_string();
    assert_eq!(p.digest_of(&p.installed(name)), digest);
    assert!(
        std::fs::metadata(p.installed(name).join("scripts/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111
            != 0,
        "the executable bit is kept"
    );
    let lock = p.lock_bytes();
    std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
    p.run(&["status", "--check"]).code(1);
    let out = p.run(&["install", "--frozen"]);
    out.code(0);
    assert!(
        out.out().contains(&format!("installed {name}")),
        "{}",
        out.out()
    );
    assert_eq!(
        p.lock_bytes(),
        lock,
        "--frozen changes no byte of the lockfile"
    );
    assert_eq!(p.digest_of(&p.installed(name)), digest);
    p.run(&["status", "--check"]).code(0);
    entry
}

#[test]
fn from_a_directory() {
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "alpha body");
    skill(&p.path("src"), "beta", "2.0.0", "beta body");
    let e = round_trip(&p, &["add", "../src", "alpha"], "alpha");
    assert_eq!(e["sourceType"], "local");
    assert_eq!(e["source"], "../src");
    assert_eq!(e["version"], "1.0.0");
    assert_eq!(e["unsigned"], true);
    assert!(e["computedHash"].as_str().unwrap().len() == 64);
    assert!(
        e["files"]["scripts/run.sh"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    // beta was not asked for.
    assert!(!p.installed("beta").exists());
}

#[test]
fn from_tar_gz_and_zip_archives() {
    let p = Project::new();
    let src = skill(&p.path("src"), "alpha", "1.0.0", "alpha body");
    for ext in ["tar.gz", "zip"] {
        let archive = p.path(&format!("alpha.{ext}"));
        pack(&src, archive.as_ref(), None, false);
        let e = round_trip(&p, &["add", &archive.to_string_lossy()], "alpha");
        assert_eq!(e["sourceType"], "archive");
        let sha = format!("sha256:{}", sha256_hex(&std::fs::read(&archive).unwrap()));
        assert_eq!(e["archiveSha256"], sha.as_str());
        p.run(&["remove", "alpha"]).code(0);
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    let out = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(bytes)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// `skillcat pack SRC -o OUT [--sign KEY] [--force]`, which must succeed.
fn pack(src: &Path, out: &Path, key: Option<&crate::support::project::Key>, force: bool) {
    let (src, out) = (src.to_string_lossy(), out.to_string_lossy());
    let mut args = vec!["pack", &src, "-o", &out];
    let secret = key.map(|k| k.secret.to_string_lossy().to_string());
    if let Some(k) = &secret {
        args.extend(["--sign", k]);
    }
    if force {
        args.push("--force");
    }
    crate::support::bin::run(&args).code(0);
}

/// A registry with alpha 1.0.0 and 1.1.0.
fn registry(p: &Project) -> std::path::PathBuf {
    let db = p.path("skills.db");
    let db_s = db.to_string_lossy().to_string();
    crate::support::bin::run(&["registry", "init", &db_s]).code(0);
    for (v, body) in [("1.0.0", "first"), ("1.1.0", "second")] {
        let src = skill(&p.path(&format!("reg-{v}")), "alpha", v, body);
        crate::support::bin::run(&["registry", "publish", &db_s, &src.to_string_lossy()]).code(0);
    }
    db
}

#[test]
fn from_a_registry_by_name_at_version() {
    let p = Project::new();
    let db = registry(&p);
    let db_s = db.to_string_lossy().to_string();
    let e = round_trip(&p, &["add", &db_s, "alpha@1.0.0"], "alpha");
    assert_eq!(e["sourceType"], "registry");
    assert_eq!(e["version"], "1.0.0");
    // Plain NAME is the latest; update moves to it.
    let out = p.run(&["update", "--dry-run"]);
    out.code(0);
    assert!(out.out().contains("alpha: 1.0.0 sha256:"), "{}", out.out());
    assert!(out.out().contains("→ 1.1.0 sha256:"), "{}", out.out());
    p.run(&["update"]).code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "1.1.0");
}

/// A registry in PostgreSQL is a SOURCE of `add`, `install` and `update` as a file is.
#[test]
fn from_a_registry_in_postgres_by_name_at_version() {
    let p = Project::new();
    let db = registry(&p);
    let (url, _db) = crate::support::postgres::shared().fresh_database();
    crate::support::bin::run(&["registry", "copy", &db.to_string_lossy(), &url]).code(0);
    let e = round_trip(&p, &["add", &url, "alpha@1.0.0"], "alpha");
    assert_eq!(e["sourceType"], "registry");
    assert_eq!(e["version"], "1.0.0");
    p.run(&["update"]).code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "1.1.0");
    // A password typed in the URL is used, never written to the lockfile (which is committed):
    // `install` takes it from PGPASSWORD or ~/.pgpass (this cluster trusts loopback).
    let p = Project::new();
    let with_password = url.replacen("://postgres@", "://postgres:s3cret@", 1);
    assert_ne!(with_password, url);
    let e = round_trip(&p, &["add", &with_password, "alpha"], "alpha");
    assert_eq!(e["source"], url.as_str());
    assert!(!String::from_utf8_lossy(&p.lock_bytes()).contains("s3cret"));
}

#[test]
fn from_an_http_index_one_request_per_archive() {
    let p = Project::new();
    let src = p.path("served");
    for n in ["alpha", "beta", "gamma"] {
        skill(&src, n, "1.0.0", n);
    }
    let (server, _, url) = spawn_serve(&src, &[], Stdio::null());
    let _server = crate::support::project::KillOnDrop(server);
    let out = p.run(&["add", &url, "alpha", "gamma"]);
    out.code(0);
    assert!(
        out.stderr.contains("3 requests (2 archives downloaded"),
        "one index request and one per archive: {}",
        out.stderr
    );
    let e = &p.lock()["skills"]["alpha"];
    assert_eq!(e["sourceType"], "well-known");
    assert_eq!(e["sourceUrl"], url.as_str());
    assert!(
        e["indexUrl"]
            .as_str()
            .unwrap()
            .ends_with("/.well-known/agent-skills/index.json")
    );
    assert!(e["archiveSha256"].as_str().unwrap().starts_with("sha256:"));
    // A cold restore (a new cache) of both: one index and two archives.
    std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
    std::fs::remove_dir_all(p.home.join(".cache")).unwrap();
    let out = p.run(&["install", "--frozen"]);
    out.code(0);
    assert!(
        out.stderr.contains("3 requests (2 archives downloaded"),
        "{}",
        out.stderr
    );
    p.run(&["status", "--check"]).code(0);
}

#[test]
fn from_git_over_file_urls_pinned_to_a_commit() {
    let p = Project::new();
    let repo = p.path("repo");
    skill(&repo.join("skills"), "alpha", "1.0.0", "first");
    let first = commit_all(&repo, "first");
    git(&repo, &["tag", "v1"]);
    let url = format!("git+file://{}#v1:skills/alpha", repo.display());
    let e = round_trip(&p, &["add", &url], "alpha");
    assert_eq!(e["sourceType"], "git");
    assert_eq!(e["commit"], first.as_str());
    assert_eq!(e["ref"], "v1");
    assert_eq!(e["skillPath"], "skills/alpha/SKILL.md");
    assert_eq!(
        e["sourceUrl"],
        format!("file://{}", repo.display()).as_str()
    );
    // A new commit on main, and the tag moved to it: the pin still restores the old commit.
    skill(&repo.join("skills"), "alpha", "1.1.0", "second");
    let second = commit_all(&repo, "second");
    git(&repo, &["tag", "-f", "v1"]);
    std::fs::remove_dir_all(p.installed("alpha")).unwrap();
    p.run(&["install", "--frozen"]).code(0);
    assert!(
        std::fs::read_to_string(p.installed("alpha").join("SKILL.md"))
            .unwrap()
            .contains("first")
    );
    // update follows the ref.
    p.run(&["update", "alpha"]).code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["commit"], second.as_str());
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "1.1.0");
}

/// `git daemon` on 127.0.0.1, serving `base`, and its port; killed when dropped. Started as
/// `git-daemon` itself, from git's exec path: `git daemon` runs it as a child of its own, which
/// killing `git` would leave running (and listening) after the test.
pub(super) struct Daemon {
    _child: crate::support::project::KillOnDrop,
    pub(super) port: u16,
}

pub(super) fn git_daemon(base: &Path) -> Daemon {
    let exec_path = Command::new("git")
        .arg("--exec-path")
        .output()
        .expect("git --exec-path");
    let daemon = Path::new(String::from_utf8_lossy(&exec_path.stdout).trim()).join("git-daemon");
    for _ in 0..20 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(&daemon)
            .args(["--reuseaddr", "--export-all", "--listen=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon");
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Daemon {
                    _child: crate::support::project::KillOnDrop(child),
                    port,
                };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("git daemon did not start");
}

#[test]
fn from_a_git_daemon_on_localhost() {
    let p = Project::new();
    let work = p.path("work");
    skill(&work, "alpha", "1.0.0", "a");
    skill(&work, "beta", "1.0.0", "b");
    let commit = commit_all(&work, "skills");
    let base = p.path("served");
    std::fs::create_dir_all(&base).unwrap();
    git(
        &base,
        &[
            "clone",
            "-q",
            "--bare",
            &work.to_string_lossy(),
            "skills.git",
        ],
    );
    let d = git_daemon(&base);
    let url = format!("git://127.0.0.1:{}/skills.git", d.port);
    p.run(&["add", &url]).code(0);
    let lock = p.lock();
    for n in ["alpha", "beta"] {
        assert_eq!(lock["skills"][n]["commit"], commit.as_str());
        assert_eq!(lock["skills"][n]["sourceUrl"], url.as_str());
        assert_eq!(
            lock["skills"][n]["skillPath"],
            format!("{n}/SKILL.md").as_str()
        );
    }
    std::fs::remove_dir_all(p.root.join(".agents")).unwrap();
    p.run(&["install", "--frozen"]).code(0);
    p.run(&["status", "--check"]).code(0);
}

#[test]
fn git_refuses_what_it_must_not_run_or_reach() {
    let p = Project::new();
    // ext:: runs a command; plain http is refused before git runs.
    let marker = p.path("pwned");
    let out = p.run(&[
        "add",
        &format!("git+ext::sh -c touch% {}", marker.display()),
    ]);
    out.code(2);
    assert!(!marker.exists());
    p.run(&["add", "git+http://127.0.0.1:9/repo"]).code(2);
    // The user's own git configuration does not apply (here it would send the fetch to a
    // repository that does not exist).
    let repo = p.path("plain");
    skill(&repo, "alpha", "1.0.0", "a");
    commit_all(&repo, "skills");
    std::fs::write(
        p.home.join(".gitconfig"),
        format!(
            "[url \"file:///nonexistent/\"]\n\tinsteadOf = file://{}\n",
            repo.display()
        ),
    )
    .unwrap();
    p.run(&["add", &format!("git+file://{}", repo.display())])
        .code(0);
    // A submodule is left out, and said so.
    let sub = p.path("with-sub");
    skill(&sub, "gamma", "1.0.0", "g");
    commit_all(&sub, "base");
    git(
        &sub,
        &[
            "submodule",
            "add",
            "-q",
            &format!("file://{}", repo.display()),
            "gamma/vendor",
        ],
    );
    commit_all(&sub, "sub");
    let out = p.run(&["add", &format!("git+file://{}", sub.display()), "gamma"]);
    out.code(0);
    assert!(out.stderr.contains("submodule"), "{}", out.stderr);
    assert!(!p.installed("gamma").join("vendor/alpha").exists());
}

#[test]
fn agents_get_links_or_copies_and_remove_takes_only_those() {
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    let out = p.run(&["add", "../src", "--agent", "claude-code,goose,codex"]);
    out.code(0);
    let link = p.root.join(".claude/skills/alpha");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../../.agents/skills/alpha")
    );
    assert!(
        p.root
            .join(".goose/skills/alpha")
            .join("SKILL.md")
            .is_file()
    );
    let e = &p.lock()["skills"]["alpha"];
    assert_eq!(
        e["agents"],
        serde_json::json!(["claude-code", "goose", "codex"])
    );
    assert_eq!(
        e["targets"],
        serde_json::json!([
            ".agents/skills/alpha",
            ".claude/skills/alpha",
            ".goose/skills/alpha"
        ])
    );
    // A link gone is a broken target; install puts it back without fetching anything.
    std::fs::remove_file(&link).unwrap();
    let out = p.run(&["status", "--check"]);
    out.code(1);
    assert!(
        out.out().contains("not linked: .claude/skills/alpha"),
        "{}",
        out.out()
    );
    std::fs::remove_dir_all(p.path("src")).unwrap();
    p.run(&["install", "--frozen"]).code(0);
    assert!(std::fs::read_link(&link).is_ok());
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    // Someone else's skill in an agent's folder is left alone by remove.
    std::fs::create_dir_all(p.root.join(".claude/skills/mine")).unwrap();
    p.run(&["remove", "alpha"]).code(0);
    assert!(!p.installed("alpha").exists());
    assert!(std::fs::symlink_metadata(&link).is_err());
    assert!(std::fs::symlink_metadata(p.root.join(".goose/skills/alpha")).is_err());
    assert!(p.root.join(".claude/skills/mine").is_dir());
    assert!(p.lock()["skills"].as_object().unwrap().is_empty());
    // Copies.
    p.run(&["add", "../src", "--agent", "claude-code", "--copy"])
        .code(0);
    let copy = p.root.join(".claude/skills/alpha");
    assert!(std::fs::symlink_metadata(&copy).unwrap().is_dir());
    assert!(
        std::fs::metadata(copy.join("scripts/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111
            != 0
    );
    assert_eq!(p.lock()["skills"]["alpha"]["copy"], true);
    p.run(&["remove", "alpha"]).code(0);
    assert!(!copy.exists());
    // An unknown agent is a usage error.
    p.run(&["add", "../src", "--agent", "nope"])
        .code(2)
        .says(&["claude-code"]);
}

#[test]
fn the_agents_detected_in_a_project_are_linked_by_default() {
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    std::fs::create_dir_all(p.root.join(".claude")).unwrap();
    p.run(&["add", "../src"]).code(0);
    assert!(std::fs::read_link(p.root.join(".claude/skills/alpha")).is_ok());
    assert_eq!(
        p.lock()["skills"]["alpha"]["agents"],
        serde_json::json!(["claude-code"])
    );
}

#[test]
fn global_scope_uses_the_home_and_the_agents_variables() {
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    let claude = p.path("claude-config");
    let codex = p.path("codex-home");
    let out = p
        .sc(&[
            "add",
            &p.path("src").to_string_lossy(),
            "--global",
            "--agent",
            "claude-code,codex",
        ])
        .env("CLAUDE_CONFIG_DIR", &claude)
        .env("CODEX_HOME", &codex)
        .run();
    out.code(0);
    assert!(p.home.join(".agents/skills/alpha/SKILL.md").is_file());
    for dir in [&claude, &codex] {
        assert_eq!(
            std::fs::canonicalize(dir.join("skills/alpha")).unwrap(),
            std::fs::canonicalize(p.home.join(".agents/skills/alpha")).unwrap()
        );
    }
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.home.join(".agents/skills-lock.json")).unwrap())
            .unwrap();
    assert_eq!(
        lock["skills"]["alpha"]["targets"][0],
        "~/.agents/skills/alpha"
    );
    assert!(
        !p.lockfile().exists(),
        "the project's lockfile is untouched"
    );
}

#[test]
fn drift_is_named_and_never_overwritten_without_force() {
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    p.run(&["add", "../src"]).code(0);
    let dir = p.installed("alpha");
    std::fs::write(dir.join("SKILL.md"), "edited\n").unwrap();
    std::fs::write(dir.join("mine.md"), "mine\n").unwrap();
    std::fs::remove_file(dir.join("references/notes.md")).unwrap();
    let out = p.run(&["status", "--check"]);
    out.code(1);
    for line in [
        "alpha  modified",
        "  changed: SKILL.md",
        "  added: mine.md",
        "  removed: references/notes.md",
    ] {
        assert!(out.out().contains(line), "{line:?} in {}", out.out());
    }
    let json = p.run(&["status", "--format", "json"]);
    json.code(0);
    let s = &json.json()[0];
    assert_eq!(s["state"], "modified");
    assert_eq!(s["drift"]["changed"], serde_json::json!(["SKILL.md"]));
    // install and update refuse, say why, and change nothing.
    let lock = p.lock_bytes();
    for cmd in [&["install"][..], &["update"], &["add", "../src"]] {
        p.run(cmd)
            .code(1)
            .says(&["locally modified", "--force", "Nothing was changed"]);
        assert_eq!(
            std::fs::read_to_string(dir.join("SKILL.md")).unwrap(),
            "edited\n"
        );
        assert_eq!(p.lock_bytes(), lock);
    }
    p.run(&["install", "--force"]).code(0);
    p.run(&["status", "--check"]).code(0);
    assert!(!dir.join("mine.md").exists());
}

#[test]
fn an_unmanaged_folder_is_not_replaced_without_force() {
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    std::fs::create_dir_all(p.installed("alpha")).unwrap();
    std::fs::write(p.installed("alpha").join("SKILL.md"), "mine").unwrap();
    p.run(&["status", "--check"]).code(1);
    p.run(&["add", "../src"])
        .code(1)
        .says(&["does not list it", "--force"]);
    assert_eq!(
        std::fs::read_to_string(p.installed("alpha").join("SKILL.md")).unwrap(),
        "mine"
    );
    p.run(&["add", "../src", "--force"]).code(0);
}

#[test]
fn frozen_fails_on_a_mismatch_naming_both_digests() {
    let p = Project::new();
    let src = skill(&p.path("src"), "alpha", "1.0.0", "a");
    p.run(&["add", "../src"]).code(0);
    let pinned = p.lock()["skills"]["alpha"]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(src.join("references/notes.md"), "changed upstream").unwrap();
    std::fs::remove_dir_all(p.installed("alpha")).unwrap();
    let lock = p.lock_bytes();
    for args in [&["install", "--frozen"][..], &["install"]] {
        let out = p.run(args);
        out.code(1);
        out.says(&["alpha", &pinned, "gives sha256:"]);
        assert_eq!(p.lock_bytes(), lock);
        assert!(!p.installed("alpha").exists());
    }
}

#[test]
fn frozen_fails_on_a_missing_pin_and_a_vanished_version() {
    let p = Project::new();
    std::fs::write(
        p.lockfile(),
        r#"{"version": 1, "skills": {"alpha": {"source": "../src", "sourceType": "local"}}}"#,
    )
    .unwrap();
    p.run(&["install", "--frozen"])
        .code(1)
        .says(&["alpha", "pins no content"]);
    // A git source whose history was rewritten: the pinned commit is gone.
    let p = Project::new();
    let repo = p.path("repo");
    skill(&repo, "alpha", "1.0.0", "a");
    commit_all(&repo, "one");
    p.run(&["add", &format!("git+file://{}", repo.display())])
        .code(0);
    let lock = p.lock_bytes();
    std::fs::remove_dir_all(&repo).unwrap();
    skill(&repo, "alpha", "1.0.0", "rewritten");
    commit_all(&repo, "rewritten");
    std::fs::remove_dir_all(p.root.join(".agents")).unwrap();
    p.run(&["install", "--frozen"])
        .code(1)
        .says(&["no longer has the pinned commit"]);
    assert_eq!(p.lock_bytes(), lock);
}

#[test]
fn a_tampered_archive_is_refused() {
    let p = Project::new();
    let src = skill(&p.path("src"), "alpha", "1.0.0", "a");
    let archive = p.path("alpha.tar.gz");
    let a = archive.to_string_lossy().to_string();
    pack(&src, &archive, None, false);
    p.run(&["add", &a]).code(0);
    // The file is replaced by another archive (valid, different content).
    std::fs::write(src.join("references/notes.md"), "evil").unwrap();
    pack(&src, a.as_ref(), None, true);
    std::fs::remove_dir_all(p.installed("alpha")).unwrap();
    p.run(&["install", "--frozen"])
        .code(1)
        .says(&["the lockfile pins", "tampered"]);
    assert!(!p.installed("alpha").exists());
    // Bytes flipped in a signed archive: refused before anything is placed.
    let k = key(&p.path(""), "release", "*");
    let signed = p.path("signed.tar.gz");
    let s = signed.to_string_lossy().to_string();
    pack(&src, s.as_ref(), Some(&k), false);
    let mut bytes = std::fs::read(&signed).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&signed, bytes).unwrap();
    let keyring = k.keyring.to_string_lossy().to_string();
    let p2 = Project::new();
    p2.run(&["add", &s, "--keyring", &keyring, "--require-signature"])
        .code(1);
    assert!(!p2.installed("alpha").exists());
}

#[test]
fn signatures_are_checked_against_the_keyring() {
    let p = Project::new();
    let dir = p.path("");
    let src = skill(&p.path("src"), "alpha", "1.0.0", "a");
    let good = key(&dir, "good", "alpha");
    let other = key(&dir, "other", "*");
    let archive = p.path("alpha.tar.gz");
    let a = archive.to_string_lossy().to_string();
    pack(&src, a.as_ref(), Some(&good), false);
    let ring = good.keyring.to_string_lossy().to_string();
    // Signed by a trusted key: the signer is pinned.
    p.run(&["add", &a, "--keyring", &ring, "--require-signature"])
        .code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["signer"], good.id.as_str());
    assert!(p.lock()["skills"]["alpha"].get("unsigned").is_none());
    // Unsigned, with signatures required: refused, naming the scope and the keys.
    let p2 = Project::new();
    let out = p2.run(&[
        "add",
        &src.to_string_lossy(),
        "--keyring",
        &ring,
        "--require-signature",
    ]);
    out.code(1);
    out.says(&["unsigned", "project", &good.id, "alpha"]);
    // [install] require_signatures in the project's skillcat.toml does the same (a project
    // may ask for signatures even when the user has not trusted its configuration).
    std::fs::write(
        p2.root.join("skillcat.toml"),
        "[install]\nrequire_signatures = true\n",
    )
    .unwrap();
    p2.run(&["add", &src.to_string_lossy(), "--keyring", &ring])
        .code(1)
        .says(&["unsigned"]);
    p2.run(&["add", &src.to_string_lossy()])
        .code(2)
        .says(&["no keyring"]);
    // Signed by a key the keyring does not hold: refused even when not required.
    let wrong = p.path("wrong.tar.gz");
    let w = wrong.to_string_lossy().to_string();
    pack(&src, w.as_ref(), Some(&other), false);
    let p3 = Project::new();
    p3.run(&["add", &w, "--keyring", &ring])
        .code(1)
        .says(&[&other.id, "not in the keyring"]);
    assert!(!p3.installed("alpha").exists());
    // A key outside its scope: named with its scopes.
    let beta = skill(&p.path("src2"), "beta", "1.0.0", "b");
    let b = p.path("beta.tar.gz").to_string_lossy().to_string();
    pack(&beta, b.as_ref(), Some(&good), false);
    p3.run(&["add", &b, "--keyring", &ring])
        .code(1)
        .says(&["may not sign skill `beta`", "alpha"]);
}

#[test]
fn update_refuses_a_new_signer_and_a_downgrade_unless_allowed() {
    let p = Project::new();
    let dir = p.path("");
    let a = key(&dir, "a", "*");
    let b = key(&dir, "b", "*");
    trust_also(&a.keyring, &b);
    let ring = a.keyring.to_string_lossy().to_string();
    let src = skill(&p.path("src"), "alpha", "1.0.0", "one");
    let sign = |k: &crate::support::project::Key| {
        crate::support::bin::run(&[
            "sign",
            &src.to_string_lossy(),
            "alpha",
            "--key",
            &k.secret.to_string_lossy(),
        ])
        .code(0);
    };
    sign(&a);
    p.run(&["add", &src.to_string_lossy(), "--keyring", &ring])
        .code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["signer"], a.id.as_str());
    // 1.1.0 signed by b.
    skill(&p.path("src"), "alpha", "1.1.0", "two");
    sign(&b);
    let out = p.run(&["update", "--dry-run", "--keyring", &ring]);
    out.code(1);
    out.says(&[&format!("signed by key {}", a.id), "--allow-signer-change"]);
    let out = p.run(&[
        "update",
        "--dry-run",
        "--keyring",
        &ring,
        "--allow-signer-change",
    ]);
    out.code(0);
    assert!(
        out.out().contains("alpha: 1.0.0 sha256:") && out.out().contains("→ 1.1.0 sha256:"),
        "{}",
        out.out()
    );
    assert!(
        out.out().contains(&format!("signer {} → {}", a.id, b.id)),
        "{}",
        out.out()
    );
    assert_eq!(
        p.lock()["skills"]["alpha"]["version"],
        "1.0.0",
        "a dry run changes nothing"
    );
    p.run(&["update", "--keyring", &ring, "--allow-signer-change"])
        .code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["signer"], b.id.as_str());
    // Back to 0.9.0: a downgrade.
    skill(&p.path("src"), "alpha", "0.9.0", "old");
    sign(&b);
    p.run(&["update", "--keyring", &ring]).code(1).says(&[
        "1.1.0 → 0.9.0",
        "downgrade",
        "--allow-downgrade",
    ]);
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "1.1.0");
    p.run(&["update", "--keyring", &ring, "--allow-downgrade"])
        .code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "0.9.0");
}

#[test]
fn a_registry_downgrade_after_a_yank_is_refused() {
    let p = Project::new();
    let db = registry(&p);
    let db_s = db.to_string_lossy().to_string();
    p.run(&["add", &db_s, "alpha"]).code(0);
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "1.1.0");
    crate::support::bin::run(&["registry", "yank", &db_s, "alpha@1.1.0"]).code(0);
    p.run(&["update"])
        .code(1)
        .says(&["1.1.0 → 1.0.0", "downgrade"]);
    // The pinned (yanked) version is still installable exactly.
    std::fs::remove_dir_all(p.root.join(".agents")).unwrap();
    p.run(&["install", "--frozen"]).code(0);
    assert!(
        std::fs::read_to_string(p.installed("alpha").join("SKILL.md"))
            .unwrap()
            .contains("second")
    );
}

#[test]
fn a_read_only_lockfile_or_a_failed_write_changes_nothing() {
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "one");
    p.run(&["add", "../src", "--agent", "claude-code"]).code(0);
    let lock = p.lock_bytes();
    let before = p.digest_of(&p.installed("alpha"));
    skill(&p.path("src"), "alpha", "1.1.0", "two");
    skill(&p.path("src"), "beta", "1.0.0", "b");
    std::fs::set_permissions(p.lockfile(), std::fs::Permissions::from_mode(0o444)).unwrap();
    p.run(&["update"])
        .code(1)
        .says(&["read-only", "Nothing was changed"]);
    p.run(&["add", "../src", "beta"])
        .code(1)
        .says(&["read-only"]);
    assert_eq!(p.lock_bytes(), lock);
    assert_eq!(p.digest_of(&p.installed("alpha")), before);
    assert!(!p.installed("beta").exists());
    std::fs::set_permissions(p.lockfile(), std::fs::Permissions::from_mode(0o644)).unwrap();
    // The lockfile's rename fails after every folder was moved: all of them move back.
    let out = p
        .sc(&["update"])
        .env("SKILLCAT_TEST_FAIL", "lockfile")
        .run();
    out.code(1);
    assert_eq!(p.lock_bytes(), lock);
    assert_eq!(p.digest_of(&p.installed("alpha")), before);
    assert!(std::fs::read_link(p.root.join(".claude/skills/alpha")).is_ok());
    let leftovers: Vec<_> = std::fs::read_dir(p.root.join(".agents/skills"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["alpha"], "nothing staged is left behind");
}

#[test]
fn an_install_killed_at_any_point_leaves_the_old_or_the_new_state_whole() {
    let p = Project::new();
    for n in ["alpha", "beta"] {
        skill(&p.path("src-v1"), n, "1.0.0", "one");
        skill(&p.path("src-v2"), n, "2.0.0", "two");
    }
    p.run(&["add", "../src-v1", "--agent", "claude-code,goose"])
        .code(0);
    let old_lock = p.lock_bytes();
    let digests = |p: &Project| {
        (
            p.digest_of(&p.installed("alpha")),
            p.digest_of(&p.installed("beta")),
            p.digest_of(&p.root.join(".goose/skills/alpha")),
        )
    };
    let old = digests(&p);
    let saved = p.path("saved");
    cp_a(&p.root, &saved);
    // What the whole update gives when nothing interrupts it.
    p.run(&["add", "../src-v2"]).code(0);
    let (new_lock, new) = (p.lock_bytes(), digests(&p));
    assert_ne!(new, old);
    let (mut saw_old, mut saw_new, mut mid_commit) = (0, 0, 0);
    // Each step of the commit pauses 30 ms; kills land from before the first step to after
    // the last, with a little jitter.
    let seed = std::process::id() as u64;
    for i in 0..20u64 {
        restore(&saved, &p.root);
        let mut child = p
            .command(&["add", "../src-v2"])
            .env("SKILLCAT_TEST_PAUSE_MS", "30")
            .spawn()
            .unwrap();
        let jitter = (seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(i.wrapping_mul(1442695040888963407))
            >> 33)
            % 20;
        std::thread::sleep(Duration::from_millis(40 + i * 35 + jitter));
        let _ = child.kill();
        let _ = child.wait();
        if p.root.join(".agents/.skillcat-journal.json").exists() {
            mid_commit += 1;
        }
        // The next command in the scope recovers what the killed one left.
        p.run(&["status"]).code(0);
        let lock = p.lock_bytes();
        let now = digests(&p);
        if lock == old_lock {
            assert_eq!(now, old, "kill {i}: the old lockfile, so the old folders");
            saw_old += 1;
        } else {
            assert_eq!(lock, new_lock, "kill {i}: a lockfile half written");
            assert_eq!(now, new, "kill {i}: the new lockfile, so the new folders");
            saw_new += 1;
        }
        p.run(&["status", "--check"]).code(0);
        let stray: Vec<String> = names_under(&p.root)
            .into_iter()
            .filter(|n| n.contains(".skillcat-"))
            .collect();
        assert!(stray.is_empty(), "kill {i}: left behind {stray:?}");
    }
    assert!(
        mid_commit > 0 && saw_old > 0,
        "kills during the commit {mid_commit}, old {saw_old}, new {saw_new} (seed {seed})"
    );
}

fn cp_a(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Makes `root` exactly the saved copy again.
fn restore(saved: &Path, root: &Path) {
    std::fs::remove_dir_all(root).unwrap();
    cp_a(saved, root);
}

/// Every file and folder name under `dir` (not inside `.git`).
fn names_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            out.extend(names_under(&e.path()));
        }
        out.push(name);
    }
    out
}

#[test]
fn two_adds_at_once_lose_no_entry() {
    let p = Project::new();
    let names: Vec<String> = (0..6).map(|i| format!("skill-{i}")).collect();
    for n in &names {
        skill(&p.path("src"), n, "1.0.0", n);
    }
    for _ in 0..3 {
        let running: Vec<_> = names
            .iter()
            .map(|n| p.sc(&["add", "../src", n]).spawn())
            .collect();
        for r in running {
            r.wait().code(0);
        }
        let lock = p.lock();
        for n in &names {
            assert!(lock["skills"].get(n).is_some(), "{n} lost: {lock}");
        }
        p.run(&["status", "--check"]).code(0);
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut args = vec!["remove"];
        args.extend(all);
        p.run(&args).code(0);
    }
}

#[test]
fn names_and_links_that_escape_are_refused() {
    // A lockfile naming a folder outside.
    let p = Project::new();
    std::fs::write(
        p.lockfile(),
        r#"{"version": 1, "skills": {"../../etc": {"source": "../src", "sourceType": "local", "computedHash": "00"}}}"#,
    )
    .unwrap();
    p.run(&["install"]).code(2).says(&["../../etc", "escape"]);
    p.run(&["status"]).code(2);
    // A skill whose name is not its folder's: refused unless --force, and a name that is no
    // folder is refused even then.
    let p = Project::new();
    let src = p.path("src");
    crate::support::write_skill(
        &src.join("alpha"),
        &crate::support::project::doc("beta", "1.0.0", "x"),
        &[],
    );
    p.run(&["add", "../src"]).code(1).says(&["name"]);
    crate::support::write_skill(
        &src.join("alpha"),
        &crate::support::project::doc("../evil", "1.0.0", "x"),
        &[],
    );
    p.run(&["add", "../src", "--force"])
        .code(1)
        .says(&["cannot be a folder"]);
    assert!(!p.path("evil").exists() && !p.root.join(".agents/evil").exists());
    // Asking for one name and finding another.
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    p.run(&["add", "../src", "gamma"])
        .code(1)
        .says(&["no skill named 'gamma' in ../src (skills: alpha)"]);
    // A skill with a link out of its source.
    let p = Project::new();
    let s = skill(&p.path("src"), "alpha", "1.0.0", "a");
    std::os::unix::fs::symlink("/etc/passwd", s.join("references/passwd")).unwrap();
    p.run(&["add", "../src", "alpha"]).code(1);
    assert!(!p.installed("alpha").exists());
    // An agent's folder that is a link out of the project.
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    let outside = p.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, p.root.join(".claude")).unwrap();
    p.run(&["add", "../src", "--agent", "claude-code"])
        .code(1)
        .says(&["leads out of the project"]);
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    assert!(!p.installed("alpha").exists());
}

#[test]
fn usage_errors_and_empty_states() {
    let p = Project::new();
    p.run(&["install"]).code(2).says(&["no lockfile"]);
    let out = p.run(&["status"]);
    out.code(0);
    assert!(out.out().contains("no skills installed"));
    assert!(!p.root.join(".agents").exists(), "status creates nothing");
    p.run(&["status", "--check"]).code(0);
    p.run(&["add", "../nope"]).code(2).says(&["not found"]);
    p.run(&["remove", "alpha"])
        .code(1)
        .says(&["not in the lockfile"]);
    p.run(&["add", "../nope", "--require-signature"])
        .code(2)
        .says(&["keyring"]);
    // A lockfile written by a newer tool is not touched.
    std::fs::write(p.lockfile(), r#"{"version": 2, "skills": {}}"#).unwrap();
    p.run(&["install"]).code(2).says(&["newer"]);
}

/// One spelling, one kind: a repository URL is read by the reading commands as the git
/// repository `add` installs from, not as an HTTP index.
#[test]
fn reading_commands_open_a_git_source_as_add_does() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::support::project::skill(&repo.join("skills"), "pdf", "1.0.0", "Use it.");
    let commit = crate::support::project::commit_all(&repo, "one");
    let typed = format!("git+file://{}:skills", repo.display());
    let out = crate::support::bin::run(&["list", &typed, "--format", "json"]);
    out.code(0);
    assert!(out.out().contains("\"pdf\""), "{}", out.out());
    let out = crate::support::bin::run(&["show", &typed, "pdf"]);
    out.code(0);
    assert!(out.out().contains("Use it."), "{}", out.out());
    // And the library names what it resolved to: the commit.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let src = skillcat::source::open(typed.as_str()).unwrap();
    let id = rt.block_on(src.id()).unwrap();
    assert_eq!(id.commit(), Some(commit.as_str()));
}

/// `remove` of a skill that is not installed is exit 1 (nothing to remove), with a sentence
/// naming it and where to look; exit 2 stays for a malformed command line. Origin: issue 51.
#[test]
fn remove_of_a_skill_not_installed_is_exit_1() {
    let p = Project::new();
    p.run(&["remove", "nope"])
        .code(1)
        .says(&["nope is not installed", "skillcat status"]);
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    p.run(&["add", "../src", "alpha"]).code(0);
    p.run(&["remove", "alpha", "nope"])
        .code(1)
        .says(&["nope is not installed"]);
    assert!(p.installed("alpha").exists(), "nothing was removed");
    p.run(&["remove"]).code(2);
}
