//! The sandbox zygote (issue 53): a run's helper is forked from a small process the binary
//! made before any thread, not a second `execve` of the binary; killing the supervisor mid-run
//! leaves no process (zygote, helper, script); two runs share nothing through it; and runs go
//! on (re-executing the binary) when it is gone.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::Value as Json;

use crate::support::bin::BIN;
use crate::support::{sandbox_tempdir, write_skill};

/// What the waiting script reads from: a FIFO in a granted directory.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = sandbox_tempdir("skillcat-zygote-");
        write_skill(
            &dir.path().join("skills/zyg"),
            "---\nname: zyg\ndescription: Waits on a FIFO, and probes what a run sees.\n---\nBody.\n",
            &[
                (
                    "scripts/wait.sh",
                    "#!/bin/sh\nread x < \"$1\"\necho \"got $x\"\n",
                    true,
                ),
                (
                    "scripts/ns.sh",
                    "#!/bin/sh\nfor n in user net ipc pid mnt; do echo \"$n $(readlink /proc/self/ns/$n)\"; done\n",
                    true,
                ),
                (
                    "scripts/probe.sh",
                    "#!/bin/sh\n\
                     echo \"env: $(env | sort | tr '\\n' ' ')\"\n\
                     echo \"cwd: $(pwd)\"\n\
                     echo \"fds: $(ls /proc/self/fd | tr '\\n' ' ')\"\n\
                     if [ -e /tmp/leak ]; then echo 'leak: seen'; else echo 'leak: none'; fi\n\
                     mkdir -p /tmp 2>/dev/null; echo x > /tmp/leak 2>/dev/null\n\
                     cd / 2>/dev/null\n\
                     exit 0\n",
                    true,
                ),
            ],
        );
        std::fs::write(dir.path().join("skillcat.toml"), "sources = []\n").unwrap();
        let gate = dir.path().join("gate");
        std::fs::create_dir(&gate).unwrap();
        std::fs::set_permissions(&gate, std::fs::Permissions::from_mode(0o755)).unwrap();
        let fifo = gate.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a live C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
        std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o666)).unwrap();
        World { dir }
    }

    fn fifo(&self) -> PathBuf {
        self.dir.path().join("gate/fifo")
    }

    /// `skillcat run SKILLS zyg TOOL` in this world: its directory, its configuration, its
    /// runtime directory.
    fn run(&self, tool: &str) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["run", self.dir.path().join("skills").to_str().unwrap()])
            .args(["zyg", tool])
            .current_dir(self.dir.path())
            .env("SKILLCAT_CONFIG", self.dir.path().join("skillcat.toml"))
            .env("XDG_RUNTIME_DIR", self.dir.path());
        cmd
    }

    /// `skillcat run SKILLS zyg wait` reading the FIFO.
    fn spawn_wait(&self) -> Child {
        let gate = self.dir.path().join("gate");
        self.run("wait")
            .args(["--allow-read", gate.to_str().unwrap()])
            .args(["--args", self.fifo().to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The FIFO's write end, once the script has opened it for reading (the run is then inside
    /// the script); panics when the run ends first.
    fn writer(&self, child: &mut Child) -> std::fs::File {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(self.fifo())
            {
                Ok(f) => return f,
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
                Err(e) => panic!("opening the FIFO: {e}"),
            }
            if let Some(st) = child.try_wait().unwrap() {
                let out = child.wait_with_output_now();
                panic!("the run ended before reading: {st}\n{out}");
            }
            assert!(
                Instant::now() < deadline,
                "the script never opened the FIFO"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

trait Output {
    fn wait_with_output_now(&mut self) -> String;
}

impl Output for Child {
    fn wait_with_output_now(&mut self) -> String {
        use std::io::Read;
        let mut s = String::new();
        if let Some(mut o) = self.stdout.take() {
            let _ = o.read_to_string(&mut s);
        }
        if let Some(mut e) = self.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        s
    }
}

/// A process as `/proc` shows it: pid, parent, state, name and command line.
#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    ppid: i32,
    state: char,
    /// Its process group.
    pgrp: i32,
    comm: String,
    cmdline: String,
}

fn proc_of(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat[open + 1..close].to_string();
    let mut rest = stat[close + 2..].split(' ');
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default();
    Some(Proc {
        pid,
        ppid,
        state,
        pgrp,
        comm,
        cmdline,
    })
}

/// Every process `/proc` lists.
fn processes() -> Vec<Proc> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter_map(proc_of)
        .collect()
}

/// Every live process descending from `root` (itself not included).
fn descendants(root: i32) -> Vec<Proc> {
    let all = processes();
    let mut found: Vec<Proc> = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for c in all.iter().filter(|c| c.ppid == p) {
            frontier.push(c.pid);
            found.push(c.clone());
        }
    }
    found
}

/// Whether `pid` is gone (a zombie has ended; only its parent's wait is left).
fn gone(pid: i32) -> bool {
    proc_of(pid).is_none_or(|p| p.state == 'Z' || p.state == 'X')
}

/// `skillcat run` makes one run: the zygote serves it itself, as its helper (no fork, no second
/// `execve` of the binary), so the script is the zygote's child; the zygote's only other child
/// is the cleaner that removes the workspace after the run has exited.
#[test]
fn a_run_is_served_by_the_zygote_without_executing_the_binary_again() {
    let w = World::new();
    let mut child = w.spawn_wait();
    let mut writer = w.writer(&mut child);
    let tree = descendants(child.id() as i32);
    let reexecuted: Vec<&Proc> = tree
        .iter()
        .filter(|p| p.cmdline.contains("__skillcat-sandbox"))
        .collect();
    let zygote = tree
        .iter()
        .find(|p| p.ppid == child.id() as i32 && p.comm == "skillcat-zygote")
        .cloned();
    writer.write_all(b"go\n").unwrap();
    drop(writer);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.trim_end(), "got go");
    assert!(
        reexecuted.is_empty(),
        "the helper re-executed the binary: {reexecuted:?}"
    );
    let zygote = zygote.unwrap_or_else(|| panic!("no zygote under the run: {tree:?}"));
    let under: Vec<&Proc> = tree.iter().filter(|p| p.ppid == zygote.pid).collect();
    assert!(
        under.iter().any(|p| p.comm == "sh"),
        "the script is not the zygote's child: {tree:?}"
    );
    assert!(
        under
            .iter()
            .all(|p| p.comm == "sh" || p.comm == "skillcat-clean"),
        "the zygote forked a helper of its own: {tree:?}"
    );
}

/// The namespaces of `pid`, by name (`user` → `user:[4026531837]`).
fn namespaces_of(pid: &str) -> std::collections::BTreeMap<String, String> {
    ["user", "net", "ipc", "pid", "mnt"]
        .into_iter()
        .map(|n| {
            let link = std::fs::read_link(format!("/proc/{pid}/ns/{n}")).unwrap();
            (n.to_string(), link.to_string_lossy().into_owned())
        })
        .collect()
}

/// The user, network and IPC namespaces the zygote makes while `skillcat run` gets its run
/// ready (`premade`) are that run's alone: a run in its script and one started meanwhile have
/// none in common, and none is the host's.
#[test]
fn each_run_has_namespaces_of_its_own_though_made_ahead() {
    let w = World::new();
    let mut waiting = w.spawn_wait();
    let writer = w.writer(&mut waiting);
    let script = descendants(waiting.id() as i32)
        .into_iter()
        .find(|p| p.comm == "sh")
        .unwrap_or_else(|| panic!("no script under the run"));
    let first = namespaces_of(&script.pid.to_string());
    let out = w.run("ns").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second: std::collections::BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, link)| (n.to_string(), link.to_string()))
        .collect();
    let host = namespaces_of("self");
    assert_eq!(second.len(), 5, "{text}");
    for (n, link) in &second {
        assert_ne!(
            link, &host[n],
            "the second run is in the host's {n} namespace"
        );
        assert_ne!(link, &first[n], "both runs are in one {n} namespace");
        assert_ne!(
            first[n], host[n],
            "the first run is in the host's {n} namespace"
        );
    }
    drop(writer);
    waiting.wait().unwrap();
}

#[test]
fn killing_the_supervisor_mid_run_leaves_no_process() {
    let w = World::new();
    let mut child = w.spawn_wait();
    let writer = w.writer(&mut child);
    let tree = descendants(child.id() as i32);
    // The zygote, the helper and the script at least.
    assert!(tree.len() >= 3, "{tree:?}");
    // SAFETY: killing the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tree.iter().any(|p| !gone(p.pid)) {
        assert!(
            Instant::now() < deadline,
            "left running after the supervisor was killed: {:?}",
            tree.iter()
                .filter(|p| !gone(p.pid))
                .filter_map(|p| proc_of(p.pid))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(writer);
}

/// A `skillcat mcp` over the world's skills, with a connected client.
async fn mcp(
    w: &World,
) -> (
    rmcp::service::RunningService<rmcp::service::RoleClient, ()>,
    tokio::process::Child,
    tempfile::TempDir,
) {
    let skills = w.dir.path().join("skills");
    let config = w.dir.path().join("skillcat.toml");
    let (mut child, tmp) = crate::support::spawn_mcp_in(
        w.dir.path(),
        None,
        &[
            skills.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
    (client, child, tmp)
}

async fn probe(client: &rmcp::service::RunningService<rmcp::service::RoleClient, ()>) -> String {
    let r = client
        .call_tool(CallToolRequestParams::new("run_zyg_probe"))
        .await
        .expect("a tool result");
    let r: Json = serde_json::to_value(r).unwrap();
    assert_eq!(r["isError"], false, "{r}");
    r["content"][0]["text"].as_str().unwrap().to_string()
}

fn bounded<F: std::future::Future<Output = ()>>(test: F) {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(90), test)
                .await
                .expect("the test did not finish in time (a hang?)")
        });
}

#[test]
fn two_runs_in_a_row_share_nothing() {
    let w = World::new();
    bounded(async {
        let (client, mut child, _tmp) = mcp(&w).await;
        let first = probe(&client).await;
        let second = probe(&client).await;
        assert!(first.contains("leak: none"), "{first}");
        // Nothing run 1 did — a file in /tmp, a directory changed to — reaches run 2; its
        // environment and descriptors are the same.
        assert_eq!(first, second);
        let zygote = descendants(child.id().unwrap() as i32)
            .into_iter()
            .find(|p| p.comm == "skillcat-zygote");
        assert!(zygote.is_some(), "the runs did not go through a zygote");
        client.cancel().await.unwrap();
        child.wait().await.unwrap();
    });
}

#[test]
fn runs_go_on_when_the_zygote_is_gone() {
    let w = World::new();
    bounded(async {
        let (client, mut child, _tmp) = mcp(&w).await;
        let first = probe(&client).await;
        let zygote = descendants(child.id().unwrap() as i32)
            .into_iter()
            .find(|p| p.comm == "skillcat-zygote")
            .expect("a zygote");
        // SAFETY: killing a process of the server this test started.
        unsafe { libc::kill(zygote.pid, libc::SIGKILL) };
        let second = probe(&client).await;
        let third = probe(&client).await;
        assert_eq!(first, second);
        assert_eq!(second, third);
        client.cancel().await.unwrap();
        child.wait().await.unwrap();
    });
}

#[test]
fn a_guest_call_forks_its_helper_from_the_zygote_too() {
    // `spin` loops until the engine's deadline (1 s): the call is watched meanwhile.
    let mut child = Command::new(BIN)
        .args(["run", "fixtures/guest/skills", "hostile", "spin"])
        .args(["--json", r#"{"timeout_seconds": 1}"#])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("SKILLCAT_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = child.id() as i32;
    let mut seen = Vec::new();
    let mut helper = None;
    while helper.is_none() && child.try_wait().unwrap().is_none() {
        let tree = descendants(run);
        helper = tree
            .iter()
            .find(|p| {
                tree.iter()
                    .any(|z| z.pid == p.ppid && z.ppid == run && z.comm == "skillcat-zygote")
            })
            .cloned();
        seen.extend(
            tree.into_iter()
                .filter(|p| p.cmdline.contains("__skillcat-sandbox")),
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("timed out"), "{stderr}");
    assert!(
        seen.is_empty(),
        "the helper re-executed the binary: {seen:?}"
    );
    assert!(helper.is_some(), "no helper under the zygote; {stderr}");
}

/// The workspaces under the world's base (`$XDG_RUNTIME_DIR/skillcat-ws`).
fn workspaces(w: &World) -> Vec<PathBuf> {
    std::fs::read_dir(w.dir.path().join("skillcat-ws"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("ws-"))
                .collect()
        })
        .unwrap_or_default()
}

/// The control groups of `pid`'s runs (`run-PID-N`), in every hierarchy this host mounts.
fn run_groups(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("run-{pid}-");
    let mut found = Vec::new();
    let mut stack = vec![(PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(e.path());
            } else if depth < 6 {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    found
}

/// Waits until none of `paths` exists (a teardown after the process is gone).
fn wait_gone(paths: &[PathBuf], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while paths.iter().any(|p| p.exists()) {
        assert!(
            Instant::now() < deadline,
            "{what} left: {:?}",
            paths.iter().filter(|p| p.exists()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn killing_skillcat_run_mid_run_leaves_no_workspace_and_no_group() {
    let w = World::new();
    let mut child = w.spawn_wait();
    let writer = w.writer(&mut child);
    let spaces = workspaces(&w);
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    let groups = run_groups(child.id());
    // SAFETY: killing the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    drop(writer);
    let out = child.wait_with_output_now();
    assert!(
        !groups.is_empty() || out.contains("not in a cgroup"),
        "no control group found: {out}"
    );
    // Nobody starts again: what the run left goes all the same.
    wait_gone(&spaces, "workspace");
    wait_gone(&groups, "control group");
}

#[test]
fn a_finished_run_leaves_no_workspace_and_no_group() {
    let w = World::new();
    let mut child = w.spawn_wait();
    let mut writer = w.writer(&mut child);
    let spaces = workspaces(&w);
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    let groups = run_groups(child.id());
    writer.write_all(b"go\n").unwrap();
    drop(writer);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "got go");
    assert!(
        !groups.is_empty() || String::from_utf8_lossy(&out.stderr).contains("not in a cgroup"),
        "no control group found: {out:?}"
    );
    // Removed after the answer, by the run or after it has exited.
    wait_gone(&spaces, "workspace");
    wait_gone(&groups, "control group");
}

/// A `skillcat run` that has answered leaves no process of its own: the keeper that releases
/// its memory after its exit (`exit_after_run`) shares its process group, holds none of its
/// output open (the output reaches end-of-file with the exit) and is gone with it, whether the
/// run succeeded or failed.
#[test]
fn a_finished_run_leaves_no_process_in_its_group() {
    use std::os::unix::process::CommandExt;
    let w = World::new();
    for (tool, code) in [("ns", 0), ("absent", 1)] {
        let child = w
            .run(tool)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let group = child.id() as i32;
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{tool}: {out:?}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left: Vec<Proc> = processes()
                .into_iter()
                .filter(|p| p.pgrp == group && !gone(p.pid))
                .collect();
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{tool}: left in the run's group: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The limits configured for runs (`[sandbox] memory`, `processes`) are the run's control
/// group's while the run is inside its script (cgroup v2: one group with both; v1: the memory
/// and pids hierarchies' groups).
#[test]
fn a_runs_group_has_the_configured_limits() {
    let w = World::new();
    // 288 MiB: a whole number of pages (v1 rounds its limit down to one).
    std::fs::write(
        w.dir.path().join("skillcat.toml"),
        "sources = []\n[sandbox]\nmemory = 301989888\nprocesses = 23\n",
    )
    .unwrap();
    let mut child = w.spawn_wait();
    let mut writer = w.writer(&mut child);
    let groups = run_groups(child.id());
    let read = |file: &str| -> Vec<String> {
        groups
            .iter()
            .filter_map(|g| std::fs::read_to_string(g.join(file)).ok())
            .map(|v| v.trim().to_string())
            .collect()
    };
    let memory = [read("memory.max"), read("memory.limit_in_bytes")].concat();
    let tasks = read("pids.max");
    writer.write_all(b"go\n").unwrap();
    drop(writer);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    if groups.is_empty() {
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("not in a cgroup"),
            "no control group found: {out:?}"
        );
        return;
    }
    assert_eq!(memory, ["301989888"], "{groups:?}");
    assert_eq!(tasks, ["23"], "{groups:?}");
}
