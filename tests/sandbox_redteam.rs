//! The red team's escapes (issue "Close the sandbox escapes a red team found"), one test per
//! item, each through the real binary (`skillcat run`, `skillcat mcp`).
//!
//! `SKILLCAT_BIN` names another binary to run instead of the one cargo built: pointing it at a
//! build of an earlier commit shows which of these tests that build fails.

#![cfg(target_os = "linux")]

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
fn bin() -> PathBuf {
    std::env::var_os("SKILLCAT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_skillcat")))
}

/// A scratch area searchable by the sandbox uid: skills, a private `TMPDIR` (so the workspace
/// base is this test's own), a `HOME`, and files the attacks go after.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Lab {
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

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The workspace base `skillcat` uses under this lab's `TMPDIR`.
    fn ws_base(&self) -> PathBuf {
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        self.path("tmp").join(format!("skillcat-ws-{uid}"))
    }

    /// Workspaces left in the base.
    fn workspaces(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.ws_base()) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("ws-"))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Writes a skill `name` with frontmatter lines `front` and one script `attack` (`ext` its
    /// extension) holding `script`.
    fn skill(&self, name: &str, front: &str, ext: &str, script: &str) -> PathBuf {
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

    fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .current_dir(cwd)
            .env_remove("SKILLCAT_CONFIG")
            .env("TMPDIR", self.path("tmp"))
            .env("HOME", self.path("home"))
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// `skillcat run <skills>/<skill> <skill> attack --args ARGS` in `cwd`.
    fn run_in(&self, cwd: &Path, skill: &str, args: &str) -> Out {
        let src = self.path("skills").join(skill);
        let src = src.to_str().unwrap();
        let cmd = self.command(cwd, &["run", src, skill, "attack", "--args", args]);
        Out::wait(cmd_spawn(cmd), Duration::from_secs(60))
    }

    fn run(&self, skill: &str, args: &str) -> Out {
        self.run_in(&self.path("scratch"), skill, args)
    }

    fn spawn_run(&self, cwd: &Path, skill: &str, args: &str) -> Child {
        let src = self.path("skills").join(skill);
        let src = src.to_str().unwrap();
        cmd_spawn(self.command(cwd, &["run", src, skill, "attack", "--args", args]))
    }
}

fn cmd_spawn(mut cmd: Command) -> Child {
    cmd.spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin().display()))
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// One finished run.
#[derive(Debug)]
struct Out {
    /// The exit code; `None` when a signal killed it.
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    fn wait(mut child: Child, deadline: Duration) -> Out {
        let mut so = child.stdout.take().unwrap();
        let mut se = child.stderr.take().unwrap();
        let t1 = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = so.read_to_end(&mut b);
            b
        });
        let t2 = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = se.read_to_end(&mut b);
            b
        });
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("skillcat did not finish within {deadline:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        use std::os::unix::process::ExitStatusExt;
        Out {
            code: status.code(),
            signal: status.signal(),
            stdout: String::from_utf8_lossy(&t1.join().unwrap()).into_owned(),
            stderr: String::from_utf8_lossy(&t2.join().unwrap()).into_owned(),
        }
    }

    fn all(&self) -> String {
        format!(
            "exit {:?} signal {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.signal, self.stdout, self.stderr
        )
    }
}

/// Every process's command line, with its pid.
fn cmdlines() -> Vec<(u32, Vec<u8>)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            v.push((pid, c));
        }
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Item 9: the helper's policy is not on its command line.

#[test]
fn item9_the_policy_is_not_on_the_helpers_command_line() {
    let lab = Lab::new();
    lab.skill("argv-leak", "", "sh", "#!/bin/sh\nsleep 3\necho done\n");
    let token = format!("TOOL-ARG-{}", std::process::id());
    let child = lab.spawn_run(&lab.path("scratch"), "argv-leak", &token);
    let start = Instant::now();
    let mut helper = None;
    while start.elapsed() < Duration::from_secs(20) && helper.is_none() {
        helper = cmdlines()
            .into_iter()
            .find(|(_, c)| c.windows(18).any(|w| w == b"__skillcat-sandbox"));
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = Out::wait(child, Duration::from_secs(60));
    let (pid, cmdline) = helper.unwrap_or_else(|| panic!("no helper seen; {}", out.all()));
    let text = String::from_utf8_lossy(&cmdline);
    assert!(
        !text.contains(&token) && !text.contains("\"rules\""),
        "the helper {pid}'s command line carries the policy: {text}"
    );
    assert_eq!(
        cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).count(),
        2,
        "{text}"
    );
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert_eq!(out.stdout.trim(), "done");
}
