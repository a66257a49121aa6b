//! A lab for red-team tests of confined runs through the real binary: skills, a private
//! `TMPDIR` (also its `XDG_RUNTIME_DIR`, where workspaces go) and `HOME`, and the finished process with its output and peak memory.
//!
//! `SKILLCAT_BIN` names another binary to run instead of the one cargo built: pointing it at a
//! build of an earlier commit shows which tests that build fails.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> PathBuf {
    std::env::var_os("SKILLCAT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_skillcat")))
}

/// A scratch area searchable by the sandbox uid: skills, a private `TMPDIR` (so the workspace
/// base is this test's own), a `HOME`, and files the attacks go after.
pub struct Lab {
    pub dir: tempfile::TempDir,
}

impl Lab {
    pub fn new() -> Lab {
        let dir = tempfile::Builder::new()
            .prefix("skillcat-redteam-")
            .tempdir()
            .unwrap();
        chmod(dir.path(), 0o711);
        for d in ["skills", "tmp", "home", "scratch"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
            chmod(&dir.path().join(d), 0o755);
        }
        Lab { dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The workspace base `skillcat` uses under this lab's `tmp`, its `XDG_RUNTIME_DIR`.
    pub fn ws_base(&self) -> PathBuf {
        self.path("tmp").join("skillcat-ws")
    }

    /// Workspaces left in the base.
    pub fn workspaces(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.ws_base()) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("ws-"))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Workspaces left once the cleaners are done: `skillcat run` hands its workspace to a
    /// cleaner that removes it after the process exits, so this waits (up to 20 s, polling,
    /// never asserting a time) for the base to empty and returns what is still there.
    pub fn settled_workspaces(&self) -> Vec<PathBuf> {
        let start = std::time::Instant::now();
        loop {
            let left = self.workspaces();
            if left.is_empty() || start.elapsed() > std::time::Duration::from_secs(20) {
                return left;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Writes a skill `name` with frontmatter lines `front` and one script `attack` (`ext` its
    /// extension) holding `script`.
    pub fn skill(&self, name: &str, front: &str, ext: &str, script: &str) -> PathBuf {
        let root = self.path("skills").join(name);
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        chmod(&root, 0o755);
        chmod(&root.join("scripts"), 0o755);
        std::fs::write(
            root.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Red team case.\n{front}---\nBody\n"),
        )
        .unwrap();
        let p = root.join(format!("scripts/attack.{ext}"));
        std::fs::write(&p, script).unwrap();
        chmod(&p, 0o755);
        root
    }

    pub fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .current_dir(cwd)
            .env_remove("SKILLCAT_CONFIG")
            .env("TMPDIR", self.path("tmp"))
            .env("XDG_RUNTIME_DIR", self.path("tmp"))
            .env("HOME", self.path("home"))
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

pub fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// One finished run.
#[derive(Debug)]
pub struct Out {
    /// The exit code; `None` when a signal killed it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The process's peak resident memory (and that of the children it waited for), bytes.
    pub peak_rss: u64,
}

impl Out {
    pub fn wait(mut child: Child, deadline: Duration) -> Out {
        let so = child.stdout.take();
        let mut se = child.stderr.take().unwrap();
        let t1 = std::thread::spawn(move || {
            let mut b = Vec::new();
            if let Some(mut so) = so {
                let _ = so.read_to_end(&mut b);
            }
            b
        });
        let t2 = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = se.read_to_end(&mut b);
            b
        });
        let start = Instant::now();
        let pid = child.id() as libc::pid_t;
        // Reaped with wait4 for its resource usage (std's wait does not give it).
        let (status, usage) = loop {
            let mut status = 0;
            // SAFETY: a zeroed plain-data struct filled by wait4.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: waiting for our own child into locals.
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if r == pid {
                break (status, usage);
            }
            assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
            if start.elapsed() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("skillcat did not finish within {deadline:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let exited = libc::WIFEXITED(status);
        Out {
            code: exited.then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            stdout: String::from_utf8_lossy(&t1.join().unwrap()).into_owned(),
            stderr: String::from_utf8_lossy(&t2.join().unwrap()).into_owned(),
            peak_rss: (usage.ru_maxrss as u64).saturating_mul(1024),
        }
    }

    pub fn all(&self) -> String {
        format!(
            "exit {:?} signal {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.signal, self.stdout, self.stderr
        )
    }
}
