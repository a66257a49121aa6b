//! A scratch project for the install tests: a folder with `.git` (its root), a home directory
//! of its own, and helpers to make skills, git repositories and keys.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as J;

use super::bin::{Out, Skillcat};

/// A project folder and a home directory, both temporary.
pub struct Project {
    pub tmp: tempfile::TempDir,
    /// The project's root (it holds `.git`).
    pub root: PathBuf,
    /// `$HOME` for every run.
    pub home: PathBuf,
}

impl Project {
    pub fn new() -> Project {
        let tmp = tempfile::Builder::new()
            .prefix("skillcat-install-")
            .tempdir()
            .unwrap();
        let root = tmp.path().join("proj");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Project { tmp, root, home }
    }

    /// A folder beside the project (for sources).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// The environment of every run: the project's home, cache and configuration folders, and
    /// no agent or test variables from the test's own environment.
    fn env(&self) -> Vec<(&'static str, Option<PathBuf>)> {
        vec![
            ("HOME", Some(self.home.clone())),
            ("XDG_CACHE_HOME", Some(self.home.join(".cache"))),
            ("XDG_CONFIG_HOME", Some(self.home.join(".config"))),
            ("CLAUDE_CONFIG_DIR", None),
            ("CODEX_HOME", None),
            ("SKILLCAT_TEST_PAUSE_MS", None),
            ("SKILLCAT_TEST_FAIL", None),
        ]
    }

    /// `skillcat ARGS` in the project (see [`env`](Self::env)).
    pub fn sc(&self, args: &[&str]) -> Skillcat {
        let mut s = Skillcat::new(args).cwd(&self.root);
        for (k, v) in self.env() {
            s = match v {
                Some(v) => s.env(k, v),
                None => s.env_remove(k),
            };
        }
        s
    }

    /// The same run as a plain [`Command`] (for tests that kill it), output discarded.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(super::bin::BIN);
        c.args(args)
            .current_dir(&self.root)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        for (k, v) in self.env() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    }

    #[track_caller]
    pub fn run(&self, args: &[&str]) -> Out {
        self.sc(args).run()
    }

    pub fn lockfile(&self) -> PathBuf {
        self.root.join("skills-lock.json")
    }

    pub fn lock_bytes(&self) -> Vec<u8> {
        std::fs::read(self.lockfile()).unwrap_or_default()
    }

    #[track_caller]
    pub fn lock(&self) -> J {
        serde_json::from_slice(&self.lock_bytes()).expect("the lockfile is JSON")
    }

    /// The canonical folder of a skill.
    pub fn installed(&self, name: &str) -> PathBuf {
        self.root.join(".agents/skills").join(name)
    }

    /// The skill digest of a folder, as `skillcat digest` computes it.
    #[track_caller]
    pub fn digest_of(&self, dir: &Path) -> String {
        let out = Skillcat::new(&["digest", &dir.to_string_lossy()]).run();
        out.code(0);
        out.out().split_whitespace().next().unwrap().to_string()
    }
}

/// A skill document with a name, a version and a line of body.
pub fn doc(name: &str, version: &str, body: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: The {name} test skill.\nmetadata:\n  version: \"{version}\"\n---\n# {name}\n\n{body}\n"
    )
}

/// Writes a skill folder `dir/name` with a script.
pub fn skill(dir: &Path, name: &str, version: &str, body: &str) -> PathBuf {
    let root = dir.join(name);
    super::write_skill(
        &root,
        &doc(name, version, body),
        &[
            ("scripts/run.sh", "#!/bin/sh\necho run\n", true),
            ("references/notes.md", body, false),
        ],
    );
    root
}

/// `git ARGS` in `dir`, which must succeed; returns stdout.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("the tests need the git program (scripts/test installs it)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Commits everything in the work tree `dir` (initialised when needed); returns the commit.
pub fn commit_all(dir: &Path, message: &str) -> String {
    if !dir.join(".git").exists() {
        git(dir, &["init", "-q"]);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A minisign key pair made by `skillcat keygen`, and a keyring trusting it for `scope`.
pub struct Key {
    pub secret: PathBuf,
    pub id: String,
    pub keyring: PathBuf,
}

pub fn key(dir: &Path, base: &str, scope: &str) -> Key {
    let b = dir.join(base);
    Skillcat::new(&["keygen", "-o", &b.to_string_lossy(), "--unencrypted"])
        .run()
        .code(0);
    let public = std::fs::read_to_string(b.with_extension("pub")).unwrap();
    let line = public.lines().nth(1).unwrap().to_string();
    let id = public
        .lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string();
    let keyring = dir.join(format!("{base}-keyring.toml"));
    std::fs::write(
        &keyring,
        format!("[[key]]\npublic_key = \"{line}\"\nscopes = [\"{scope}\"]\n"),
    )
    .unwrap();
    Key {
        secret: b.with_extension("key"),
        id,
        keyring,
    }
}

/// Adds a second key to an existing keyring file.
pub fn trust_also(keyring: &Path, other: &Key) {
    let mut text = std::fs::read_to_string(keyring).unwrap();
    text.push_str(&std::fs::read_to_string(&other.keyring).unwrap());
    std::fs::write(keyring, text).unwrap();
}

/// A child process killed when dropped, so that a failing test leaves no server behind.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
