//! The red team's escapes (issue "Close the sandbox escapes a red team found"), one test per
//! item, each through the real binary (`skillcat run`, `skillcat mcp`).
//!
//! `SKILLCAT_BIN` names another binary to run instead of the one cargo built: pointing it at a
//! build of an earlier commit shows which of these tests that build fails.

#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::lab::{Lab, Out, bin, chmod};

impl Lab {
    /// `skillcat run <skills>/<skill> <skill> attack --args ARGS` with at most `nofile` open
    /// files (as under `ulimit -n`).
    fn run_nofile(&self, skill: &str, args: &str, nofile: u64) -> Out {
        let src = self.path("skills").join(skill);
        let src = src.to_str().unwrap();
        let mut cmd = self.command(
            &self.path("scratch"),
            &["run", src, skill, "attack", "--args", args],
        );
        limit_nofile(&mut cmd, nofile);
        Out::wait(cmd_spawn(cmd), Duration::from_secs(120))
    }

    /// `skillcat run <skills>/<skill> <skill> attack --args ARGS` in `cwd`.
    fn run_in(&self, cwd: &Path, skill: &str, args: &str) -> Out {
        self.run_with(cwd, &[], skill, args)
    }

    /// [`run_in`](Self::run_in) with global options before `run`.
    fn run_with(&self, cwd: &Path, global: &[&str], skill: &str, args: &str) -> Out {
        let src = self.path("skills").join(skill);
        let src = src.to_str().unwrap();
        let mut all: Vec<&str> = global.to_vec();
        all.extend(["run", src, skill, "attack", "--args", args]);
        let cmd = self.command(cwd, &all);
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

/// A `skillcat mcp` session driven by hand over stdio (JSON-RPC, one message a line).
struct Mcp {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    next: u64,
}

impl Mcp {
    /// `skillcat mcp <skills>/<skill> [global…]` in `cwd`, initialised.
    fn start(lab: &Lab, cwd: &Path, skill: &str, global: &[&str]) -> Mcp {
        let src = lab.path("skills").join(skill);
        let mut args = vec!["mcp", src.to_str().unwrap()];
        args.extend(global);
        Mcp::start_args(lab, cwd, &args)
    }

    /// `skillcat ARGS` (an `mcp` command line) in `cwd`, initialised.
    fn start_args(lab: &Lab, cwd: &Path, args: &[&str]) -> Mcp {
        Mcp::start_cmd(lab.command(cwd, args))
    }

    /// [`start_args`](Self::start_args) in the scratch directory with at most `nofile` open
    /// files.
    fn start_nofile(lab: &Lab, args: &[&str], nofile: u64) -> Mcp {
        let mut cmd = lab.command(&lab.path("scratch"), args);
        limit_nofile(&mut cmd, nofile);
        Mcp::start_cmd(cmd)
    }

    fn start_cmd(mut cmd: Command) -> Mcp {
        cmd.stdin(Stdio::piped());
        let mut child = cmd_spawn(cmd);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut m = Mcp {
            child,
            stdin,
            lines,
            next: 1,
        };
        m.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "redteam", "version": "0"}}),
        );
        m.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    fn send(&mut self, msg: serde_json::Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{msg}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.next;
        self.next += 1;
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("an answer from skillcat mcp");
            let msg: serde_json::Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == id {
                return msg;
            }
        }
    }

    /// Calls `run_<skill>_attack` with `args`; the result.
    fn call(&mut self, skill: &str, args: &str) -> serde_json::Value {
        let name = format!("run_{}_attack", skill.replace('-', "_"));
        let r = self.request(
            "tools/call",
            serde_json::json!({"name": name, "arguments": {"args": args}}),
        );
        r["result"].clone()
    }

    /// Closes stdin and waits for the server to end.
    fn close(mut self) -> Out {
        self.stdin = None;
        // Out::wait drains stderr; stdout is the reader thread's.
        Out::wait(self.child, Duration::from_secs(60))
    }
}

/// Starts the command with `RLIMIT_NOFILE` set to `n`.
fn limit_nofile(cmd: &mut Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit between fork and exec is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn cmd_spawn(mut cmd: Command) -> Child {
    cmd.spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin().display()))
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

/// A process's parent and name (`/proc/PID/stat`).
fn parent_and_name(pid: u32) -> Option<(u32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let ppid = stat[close + 2..].split(' ').nth(1)?.parse().ok()?;
    Some((ppid, stat[open + 1..close].to_string()))
}

// ---------------------------------------------------------------------------------------------
// Item 9: the helper's policy is not on its command line.

#[test]
fn item9_the_policy_is_not_on_the_helpers_command_line() {
    let lab = Lab::new();
    lab.skill("argv-leak", "", "sh", "#!/bin/sh\nsleep 3\necho done\n");
    let token = format!("TOOL-ARG-{}", std::process::id());
    let child = lab.spawn_run(&lab.path("scratch"), "argv-leak", &token);
    let run = child.id();
    let start = Instant::now();
    let mut helper = None;
    // The helper re-executed (`skillcat __skillcat-sandbox`), or forked from the run's zygote
    // (issue 53), whose command line is the program alone.
    while start.elapsed() < Duration::from_secs(20) && helper.is_none() {
        let all = cmdlines();
        helper = all
            .iter()
            .find(|(_, c)| c.windows(18).any(|w| w == b"__skillcat-sandbox"))
            .map(|(pid, c)| (*pid, c.clone(), 2))
            .or_else(|| {
                all.iter()
                    .find(|(pid, _)| {
                        parent_and_name(*pid).is_some_and(|(ppid, _)| {
                            parent_and_name(ppid)
                                .is_some_and(|(up, name)| up == run && name == "skillcat-zygote")
                        })
                    })
                    .map(|(pid, c)| (*pid, c.clone(), 1))
            });
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = Out::wait(child, Duration::from_secs(60));
    let (pid, cmdline, args) = helper.unwrap_or_else(|| panic!("no helper seen; {}", out.all()));
    let text = String::from_utf8_lossy(&cmdline);
    assert!(
        !text.contains(&token) && !text.contains("\"rules\""),
        "the helper {pid}'s command line carries the policy: {text}"
    );
    assert_eq!(
        cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).count(),
        args,
        "{text}"
    );
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert_eq!(out.stdout.trim(), "done");
}

// ---------------------------------------------------------------------------------------------
// Item 2: system calls newer than the reviewed set are refused; the path-based metadata calls
// among them cannot change a host file.

const NEW_SYSCALLS: &str = r#"#!/usr/bin/env python3
import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
victim = sys.argv[1].encode()
AT_FDCWD = -100

def call(nr, *args):
    ctypes.set_errno(0)
    # Every integer as a long: a vararg int leaves the upper half of its register undefined.
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return r, ctypes.get_errno()

# A POSIX ACL u::rw-,g::r--,o::r-- turns mode 0600 into 0644.
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, 0xFFFFFFFF) for t, p in ((1, 6), (4, 4), (0x20, 4)))
buf = ctypes.create_string_buffer(acl, len(acl))
class XattrArgs(ctypes.Structure):
    _fields_ = [("value", ctypes.c_uint64), ("size", ctypes.c_uint32), ("flags", ctypes.c_uint32)]
xa = XattrArgs(ctypes.addressof(buf), len(acl), 0)
r, e = call(463, AT_FDCWD, victim, 0, b"system.posix_acl_access", ctypes.byref(xa), ctypes.sizeof(xa))
print("setxattrat", r, e)
r, e = call(466, AT_FDCWD, victim, 0, b"user.keep")
print("removexattrat", r, e)
class FileAttr(ctypes.Structure):
    _fields_ = [("xflags", ctypes.c_uint64), ("extsize", ctypes.c_uint32), ("nextents", ctypes.c_uint32),
                ("projid", ctypes.c_uint32), ("cowextsize", ctypes.c_uint32)]
fa = FileAttr(0x80, 0, 0, 0, 0)  # FS_XFLAG_NODUMP
r, e = call(469, AT_FDCWD, victim, ctypes.byref(fa), ctypes.sizeof(fa), 0)
print("file_setattr", r, e)
for nr in [457, 458] + list(range(463, 480)) + [512, 600, 1000]:
    r, e = call(nr, 0, 0, 0, 0, 0, 0)
    print("nr", nr, r, e)
"#;

#[test]
fn item2_system_calls_above_the_reviewed_set_are_refused() {
    let lab = Lab::new();
    lab.skill("new-syscalls", "", "py", NEW_SYSCALLS);
    let victim = lab.path("scratch/id_ed25519");
    std::fs::write(&victim, "PRIVATE KEY\n").unwrap();
    chmod(&victim, 0o600);
    let name = std::ffi::CString::new(victim.to_str().unwrap()).unwrap();
    // SAFETY: C strings and a live buffer.
    let set = unsafe {
        libc::setxattr(
            name.as_ptr(),
            c"user.keep".as_ptr(),
            b"1".as_ptr().cast(),
            1,
            0,
        )
    };
    assert_eq!(set, 0, "the test needs user xattrs on {}", victim.display());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // The file belongs to the uid scripts run as, as the user's own files do on a non-root
        // host: only the sandbox stands between the script and its metadata.
        std::os::unix::fs::chown(&victim, Some(65534), Some(65534)).unwrap();
    }
    let out = lab.run("new-syscalls", victim.to_str().unwrap());
    assert_eq!(out.code, Some(0), "{}", out.all());
    let mut seen = 0;
    for line in out.stdout.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (r, e) = (f[f.len() - 2], f[f.len() - 1]);
        seen += 1;
        assert!(
            r == "-1" && (e == "38" || e == "1"),
            "{line}: not refused with ENOSYS/EPERM\n{}",
            out.all()
        );
    }
    assert_eq!(seen, 3 + 2 + 17 + 3, "{}", out.all());
    let meta = std::fs::metadata(&victim).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "mode changed");
    let mut v = [0u8; 8];
    // SAFETY: C strings and a live buffer of the given length.
    let got = unsafe {
        libc::getxattr(
            name.as_ptr(),
            c"user.keep".as_ptr(),
            v.as_mut_ptr().cast(),
            v.len(),
        )
    };
    assert_eq!(got, 1, "the xattr was removed");
}

/// Calls each system call number given with six zero arguments: `nr result errno` a line.
const SWEEP: &str = r#"#!/usr/bin/env python3
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for a in sys.argv[1:]:
    nr = int(a)
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(0)] * 6)
    print(nr, r, ctypes.get_errno(), flush=True)
"#;

/// Every number up to 520 that the reviewed set does not allow — refused ones, unlisted ones,
/// numbers no kernel has yet — and a few x32 ones, called from a confined script through
/// `skillcat run` and `skillcat mcp`: each must fail, EPERM where the review refused it (and
/// for x32), ENOSYS everywhere else. (Allowed calls are skipped: with zero arguments some would
/// end or stall the script; the interpreters' own tests exercise them.)
#[test]
fn item2_every_call_outside_the_allow_list_is_refused() {
    use skillcat::script::sandbox::linux::{Verdict, kernel_exempt, reviewed};
    let table = reviewed();
    let verdict = |nr: u64| table.iter().find(|e| u64::from(e.1) == nr).map(|e| e.2);
    let exempt: Vec<u64> = kernel_exempt().iter().map(|e| u64::from(e.1)).collect();
    let mut probe: Vec<u64> = (0..=520u64)
        .filter(|nr| verdict(*nr) != Some(Verdict::Allowed) && !exempt.contains(nr))
        .collect();
    const X32: u64 = 0x4000_0000;
    if cfg!(target_arch = "x86_64") {
        probe.extend([X32, X32 + 41, X32 + 463]);
    }
    assert!(probe.len() > 150, "{} numbers", probe.len());
    let args = probe
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    let check = |how: &str, stdout: &str| {
        let got: std::collections::HashMap<u64, (i64, i32)> = stdout
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                Some((
                    f.first()?.parse().ok()?,
                    (f.get(1)?.parse().ok()?, f.get(2)?.parse().ok()?),
                ))
            })
            .collect();
        let mut wrong = Vec::new();
        for &nr in &probe {
            let name = table
                .iter()
                .find(|e| u64::from(e.1) == nr)
                .map_or("unlisted", |e| e.0);
            let want = if nr >= X32 || verdict(nr) == Some(Verdict::Refused) {
                libc::EPERM
            } else {
                libc::ENOSYS
            };
            match got.get(&nr) {
                Some(&(-1, e)) if e == want => {}
                other => wrong.push(format!("{nr} ({name}): {other:?}, want errno {want}")),
            }
        }
        assert!(wrong.is_empty(), "{how}: {}\n{stdout}", wrong.join("\n"));
    };
    let lab = Lab::new();
    lab.skill("sweep", "", "py", SWEEP);
    let out = lab.run("sweep", &args);
    assert_eq!(out.code, Some(0), "{}", out.all());
    check("skillcat run", &out.stdout);
    let mut m = Mcp::start(&lab, &lab.path("scratch"), "sweep", &[]);
    let r = m.call("sweep", &args);
    assert_eq!(r["isError"], false, "{r}");
    check(
        "skillcat mcp",
        r["content"][0]["text"].as_str().unwrap_or_default(),
    );
    let out = m.close();
    assert_eq!(out.code, Some(0), "{}", out.all());
}

/// The interpreters scripts use, each doing what scripts commonly do, under the allow-list.
/// (node reads OpenSSL's configuration at start, which Landlock grants only with network.)
const INTERPRETERS: &str = r#"#!/bin/sh
set -e
cd "$HOME"
echo "sh $(printf ok)"
bash -c 'declare -A m=([k]=v); echo "bash ${m[k]} $((6 * 7))"; sleep 0.1 & wait; echo bash-jobs'
echo "1 2 3" | awk '{ print "awk", $1 + $2 + $3 }'
python3 - <<'PY'
import asyncio, concurrent.futures, json, os, select, socket, sqlite3, subprocess, tempfile, threading
print("py-sub", subprocess.run(["sh", "-c", "echo $((1 + 1))"], capture_output=True, text=True).stdout.strip())
with concurrent.futures.ThreadPoolExecutor(2) as ex:
    print("py-threads", sum(ex.map(abs, [-1, -2])))
async def main():
    p = await asyncio.create_subprocess_exec("echo", "async", stdout=asyncio.subprocess.PIPE)
    out, _ = await p.communicate()
    await asyncio.sleep(0.01)
    return out.decode().strip()
print("py-asyncio", asyncio.run(main()))
with tempfile.NamedTemporaryFile() as f:
    f.write(b"x")
db = sqlite3.connect("db.sqlite")
db.execute("create table t(x)")
db.execute("insert into t values (1)")
print("py-sqlite", db.execute("select count(*) from t").fetchone()[0])
a, b = socket.socketpair()
a.send(b"z")
select.select([b], [], [], 1)
print("py-socketpair", b.recv(1).decode())
PY
if command -v node >/dev/null 2>&1; then
  OPENSSL_CONF=/dev/null node -e '
    const cp = require("child_process"), fs = require("fs");
    fs.writeFileSync("n.txt", "node-fs");
    const c = cp.spawn("sh", ["-c", "exit 3"]);
    c.on("exit", code => fs.promises.readFile("n.txt", "utf8").then(t =>
      setTimeout(() => console.log("node", t, code, cp.execSync("echo sync").toString().trim()), 5)));
  '
else
  echo "node node-fs 3 sync"
fi
"#;

/// The allow-list keeps the interpreters working: sh, bash, awk, python3 (subprocesses,
/// threads, asyncio, sqlite, sockets) and node where it is installed.
#[test]
fn item2_interpreters_work_under_the_allow_list() {
    let lab = Lab::new();
    lab.skill("interpreters", "", "sh", INTERPRETERS);
    let out = lab.run("interpreters", "");
    assert_eq!(out.code, Some(0), "{}", out.all());
    for line in [
        "sh ok",
        "bash v 42",
        "bash-jobs",
        "awk 6",
        "py-sub 2",
        "py-threads 3",
        "py-asyncio async",
        "py-sqlite 1",
        "py-socketpair z",
        "node node-fs 3 sync",
    ] {
        assert!(out.stdout.contains(line), "no {line:?}:\n{}", out.all());
    }
}

// ---------------------------------------------------------------------------------------------
// Item 3: without network no datagram reaches a socket of the host.

const DATAGRAM: &str = r#"#!/usr/bin/env python3
import socket, sys, os
path = sys.argv[1]
for kind, name in ((socket.SOCK_DGRAM, "dgram"), (socket.SOCK_SEQPACKET, "seqpacket")):
    try:
        s = socket.socket(socket.AF_UNIX, kind)
        s.sendto(b"FORGED-" + name.encode(), path)
        print("ESCAPED", name)
    except OSError as e:
        print("contained", name, e.errno)
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"FORGED-pair", path)
    print("ESCAPED pair")
except OSError as e:
    print("contained pair", e.errno)
try:
    r, w = os.pipe()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    socket.send_fds(s, [b"FORGED-fd"], [r], address=path)
    print("ESCAPED scm_rights")
except OSError as e:
    print("contained scm_rights", e.errno)
# A stream socketpair (no address anywhere) still works.
a, b = socket.socketpair()
a.send(b"x")
print("pair ok", b.recv(1))
"#;

#[test]
fn item3_no_datagram_reaches_a_host_socket_without_network() {
    let lab = Lab::new();
    lab.skill("datagram", "", "py", DATAGRAM);
    let path = lab.path("scratch/log.sock");
    let host = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    chmod(&path, 0o777);
    host.set_nonblocking(true).unwrap();
    let out = lab.run("datagram", path.to_str().unwrap());
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while let Ok(n) = host.recv(&mut buf) {
        got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    assert!(
        got.is_empty(),
        "the host socket received {got:?}\n{}",
        out.all()
    );
    assert_eq!(out.code, Some(0), "{}", out.all());
    for what in ["dgram", "seqpacket", "pair", "scm_rights"] {
        assert!(
            out.stdout.contains(&format!("contained {what} 1")),
            "{what} not refused with EPERM:\n{}",
            out.all()
        );
    }
    assert!(!out.stdout.contains("ESCAPED"), "{}", out.all());
    assert!(out.stdout.contains("pair ok b'x'"), "{}", out.all());
}

// ---------------------------------------------------------------------------------------------
// Item 8: one skill cannot read another's workspace, whatever the working directory or ceiling.

#[test]
fn item8_a_skill_cannot_read_another_running_skills_workspace() {
    let lab = Lab::new();
    let token = format!("TOKEN-{}-{}", std::process::id(), line!());
    lab.skill(
        "holder",
        "",
        "sh",
        "#!/bin/sh\necho \"$1\" > \"$HOME/token.txt\"\nsleep 6\necho held\n",
    );
    lab.skill("reader", "fs_read: [.]\n", "sh", "#!/bin/sh\ncat \"$1\"\n");
    let holder = lab.spawn_run(&lab.path("scratch"), "holder", &token);
    let start = Instant::now();
    // The token as the holder sees it: in the work directory on disk, or, where that is a
    // tmpfs in the holder's own mount namespace, through the root of a process that carries
    // the token on its command line (the holder's script).
    let holds = |t: &Path| {
        let has = |p: &Path| std::fs::read_to_string(p).is_ok_and(|c| c.contains(&token));
        has(t)
            || cmdlines()
                .into_iter()
                .filter(|(_, c)| c.windows(token.len()).any(|w| w == token.as_bytes()))
                .any(|(pid, _)| {
                    has(&Path::new(&format!("/proc/{pid}/root")).join(t.strip_prefix("/").unwrap()))
                })
    };
    let stolen = loop {
        let found = lab
            .workspaces()
            .into_iter()
            .map(|w| w.join("work/token.txt"))
            .find(|t| holds(t));
        if let Some(t) = found {
            break t;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the holder never wrote its token"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let target = stolen.to_str().unwrap();

    // The default ceiling (`.`) with a working directory of `/`: never the whole file system.
    let out = lab.run_in(Path::new("/"), "reader", target);
    assert!(
        !out.stdout.contains(&token),
        "read another skill's work/: {}",
        out.all()
    );
    assert_eq!(out.code, Some(1), "{}", out.all());

    // A ceiling that names `/` outright: the grant still never reaches a workspace.
    let config = lab.path("home/wide.toml");
    std::fs::write(&config, "[sandbox]\nfs_read = [\"/\"]\n").unwrap();
    let out = lab.run_with(
        Path::new("/"),
        &["--config", config.to_str().unwrap()],
        "reader",
        target,
    );
    assert!(
        !out.stdout.contains(&token),
        "read another skill's work/: {}",
        out.all()
    );
    assert_eq!(out.code, Some(1), "{}", out.all());
    assert!(
        out.stderr.contains("E_SKILL_SCRIPT_POLICY_WIDENED")
            && out.stderr.contains("never reaches a workspace"),
        "{}",
        out.all()
    );

    let held = Out::wait(holder, Duration::from_secs(60));
    assert_eq!(held.code, Some(0), "{}", held.all());
    assert_eq!(held.stdout.trim(), "held");
}

// ---------------------------------------------------------------------------------------------
// Item 1: a symbolic link swapped in for a granted directory never moves the rule.

#[test]
fn item1_a_symlink_race_on_a_granted_path_never_reaches_the_target() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let lab = Lab::new();
    let proj = lab.path("scratch/proj");
    std::fs::create_dir_all(proj.join("data")).unwrap();
    chmod(&proj, 0o755);
    chmod(&proj.join("data"), 0o755);
    std::fs::write(proj.join("data/ok.txt"), "granted\n").unwrap();
    let target = lab.path("scratch/target");
    std::fs::create_dir(&target).unwrap();
    chmod(&target, 0o755);
    let secret = format!("SECRET-{}", std::process::id());
    std::fs::write(target.join("secret.txt"), &secret).unwrap();
    chmod(&target.join("secret.txt"), 0o644);
    std::os::unix::fs::symlink(&target, proj.join("link")).unwrap();
    lab.skill("race", "fs_read: [data]\n", "sh", "#!/bin/sh\ncat \"$1\"\n");

    // The flipper: what a concurrent run with write access to the project would do.
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let a = std::ffi::CString::new(proj.join("data").to_str().unwrap()).unwrap();
        let b = std::ffi::CString::new(proj.join("link").to_str().unwrap()).unwrap();
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two C strings.
                let r = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
                flips += 1;
            }
            flips
        })
    };
    let wanted = target.join("secret.txt");
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    let mut escaped = Vec::new();
    for _ in 0..80 {
        let out = lab.run_in(&proj, "race", wanted.to_str().unwrap());
        if out.stdout.contains(&secret) {
            escaped.push(out.all());
            continue;
        }
        assert_eq!(out.code, Some(1), "{}", out.all());
        let code = out
            .stderr
            .split_whitespace()
            .find(|w| w.contains("E_SKILL_"))
            .unwrap_or("none")
            .trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .to_string();
        *outcomes.entry(code).or_default() += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(
        escaped.is_empty(),
        "{} of 80 runs read the target ({flips} flips; outcomes {outcomes:?}):\n{}",
        escaped.len(),
        escaped[0]
    );
    for code in outcomes.keys() {
        assert!(
            [
                "E_SKILL_SCRIPT_FAILED",
                "E_SKILL_SCRIPT_SANDBOX_FAILED",
                "E_SKILL_SCRIPT_POLICY_WIDENED"
            ]
            .contains(&code.as_str()),
            "unexpected outcome {code}: {outcomes:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Item 10: the smaller leaks.

const SMALL_LEAKS: &str = r#"#!/usr/bin/env python3
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
watched = sys.argv[1].encode()
# inotify on a host directory the script may name but not list.
fd = libc.inotify_init1(0)
if fd < 0:
    print("contained inotify", ctypes.get_errno())
else:
    wd = libc.inotify_add_watch(fd, watched, 0xFFF)
    print("ESCAPED inotify" if wd >= 0 else "contained inotify-watch", ctypes.get_errno())
# A memfd executed with execveat: native code from something the script wrote.
try:
    m = os.memfd_create("x")
    with open("/bin/true", "rb") as f:
        os.write(m, f.read())
    pid = os.fork()
    if pid == 0:
        libc.syscall(322, m, b"", None, None, 0x1000)  # execveat(fd, "", NULL, NULL, AT_EMPTY_PATH)
        os._exit(99)
    _, st = os.waitpid(pid, 0)
    print("ESCAPED memfd-exec" if os.waitstatus_to_exitcode(st) == 0 else "contained memfd-exec")
except OSError as e:
    print("contained memfd", e.errno)
# Set-id files created by open(O_CREAT, 06755), O_TMPFILE and mkdir.
for name, call in (
    ("open", lambda: os.open("suid", os.O_CREAT | os.O_WRONLY, 0o6755)),
    ("tmpfile", lambda: os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)),
    ("mkdir", lambda: os.mkdir("sgid-dir", 0o2755)),
    ("mknod", lambda: os.mknod("suid-node", 0o100000 | 0o4755)),
):
    try:
        call()
        print("ESCAPED", name)
    except OSError as e:
        print("contained", name, e.errno)
for leftover in ("suid", "sgid-dir", "suid-node"):
    if os.path.lexists(leftover):
        print("LEFT", leftover, oct(os.lstat(leftover).st_mode))
# Files without the bits are still created normally.
os.close(os.open("plain", os.O_CREAT | os.O_WRONLY, 0o755))
os.mkdir("plain-dir", 0o755)
print("plain ok")
"#;

#[test]
fn item10_inotify_memfd_exec_and_set_id_creation_are_refused() {
    let lab = Lab::new();
    lab.skill("small-leaks", "", "py", SMALL_LEAKS);
    // A directory the script can name but not list (nothing is granted).
    let watched = lab.path("scratch/private");
    std::fs::create_dir(&watched).unwrap();
    chmod(&watched, 0o755);
    let out = lab.run("small-leaks", watched.to_str().unwrap());
    assert_eq!(out.code, Some(0), "{}", out.all());
    for line in [
        "contained inotify 1",
        "contained memfd 1",
        "contained open 1",
        "contained tmpfile 1",
        "contained mkdir 1",
        "contained mknod 1",
        "plain ok",
    ] {
        assert!(out.stdout.contains(line), "no {line:?}:\n{}", out.all());
    }
    assert!(!out.stdout.contains("ESCAPED"), "{}", out.all());
    assert!(!out.stdout.contains("LEFT"), "{}", out.all());
}

/// What holds, not closed: a lock on a readable host file lasts only as long as the run, even
/// when the script leaves a background process holding it.
#[test]
fn item10_a_lock_on_a_readable_host_file_ends_with_the_run() {
    let lab = Lab::new();
    let file = lab.path("scratch/shared.db");
    std::fs::write(&file, "x").unwrap();
    chmod(&file, 0o644);
    lab.skill(
        "locker",
        "fs_read: [shared.db]\n",
        "py",
        "#!/usr/bin/env python3\nimport fcntl, os, sys, time\nf = open(sys.argv[1])\nfcntl.flock(f, fcntl.LOCK_EX)\nif os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\nprint('locked')\n",
    );
    let out = lab.run("locker", file.to_str().unwrap());
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert!(out.stdout.contains("locked"), "{}", out.all());
    let f = std::fs::File::open(&file).unwrap();
    // SAFETY: flock on a live descriptor.
    let r = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    assert_eq!(r, 0, "the lock outlived the run");
}

/// What holds, not closed: native code the script wrote runs through `ld.so` (Landlock's
/// execute right governs `execve`, not `mmap`), but directly it does not, and either way it is
/// as confined as the script (it cannot read what the script cannot).
#[test]
fn item10_native_code_from_work_stays_confined() {
    let lab = Lab::new();
    let secret = lab.path("scratch/secret.txt");
    std::fs::write(&secret, "SECRET-LDSO").unwrap();
    chmod(&secret, 0o644);
    let ldso = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(ldso) = ldso else {
        eprintln!("no dynamic loader found; skipped");
        return;
    };
    lab.skill(
        "native",
        "",
        "sh",
        &format!(
            "#!/bin/sh\ncp /bin/cat \"$HOME/mycat\"\nchmod 700 \"$HOME/mycat\"\necho hello > \"$HOME/note\"\n\"$HOME/mycat\" \"$HOME/note\" && echo ESCAPED-exec\n{ldso} \"$HOME/mycat\" \"$HOME/note\"\n{ldso} \"$HOME/mycat\" \"$1\" || echo contained-read\n"
        ),
    );
    let out = lab.run("native", secret.to_str().unwrap());
    assert!(!out.stdout.contains("ESCAPED"), "{}", out.all());
    assert!(!out.stdout.contains("SECRET-LDSO"), "{}", out.all());
    assert!(
        out.stdout.contains("hello"),
        "ld.so ran the copy: {}",
        out.all()
    );
    assert!(out.stdout.contains("contained-read"), "{}", out.all());
}

// ---------------------------------------------------------------------------------------------
// Item 4: a deep tree neither crashes the supervisor nor outlives the run.

const DEEP: &str = r#"#!/usr/bin/env python3
import os, sys
depth = int(sys.argv[1])
os.chdir(os.environ["HOME"])
for i in range(depth):
    os.mkdir("d")
    os.chdir("d")
with open("bottom.bin", "wb") as f:
    f.write(b"x" * 4096)
# A directory left without write permission (by descriptor: a non-root host's scripts may not
# chmod by path).
os.fchmod(os.open(".", os.O_RDONLY | os.O_DIRECTORY), 0o500)
print("built", depth)
"#;

/// Levels: more than the descriptors `skillcat` may open ([`NOFILE`]), as a recursive removal
/// needs one per level. (Removing a directory costs milliseconds on a file system that discards
/// freed blocks, so the test stays at this depth; the library's own test removes 5,000 levels
/// on a 256 KiB stack.)
const DEPTH: &str = "1500";
const NOFILE: u64 = 256;

#[test]
fn item4_a_deep_tree_is_removed_without_crashing() {
    let lab = Lab::new();
    lab.skill("deep", "", "py", DEEP);
    let out = lab.run_nofile("deep", DEPTH, NOFILE);
    assert_eq!(out.signal, None, "the supervisor crashed: {}", out.all());
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert!(out.stdout.contains("built 1500"), "{}", out.all());
    let left = lab.settled_workspaces();
    assert!(left.is_empty(), "workspaces left behind: {left:?}");
}

#[test]
fn item4_mcp_removes_a_deep_tree_at_shutdown() {
    let lab = Lab::new();
    lab.skill("deep-mcp", "", "py", DEEP);
    let src = lab.path("skills/deep-mcp");
    let mut m = Mcp::start_nofile(&lab, &["mcp", src.to_str().unwrap()], NOFILE);
    let r = m.call("deep-mcp", DEPTH);
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(lab.workspaces().len(), 1);
    let out = m.close();
    assert_eq!(out.signal, None, "skillcat mcp crashed: {}", out.all());
    assert_eq!(out.code, Some(0), "{}", out.all());
    let left = lab.workspaces();
    assert!(left.is_empty(), "workspaces left behind: {left:?}");
}

// ---------------------------------------------------------------------------------------------
// Item 5: what a run leaves or holds is bounded.

const HOARD: &str = r#"#!/usr/bin/env python3
import ctypes, os, sys
what = sys.argv[1]
os.chdir(os.environ["HOME"])
libc = ctypes.CDLL(None, use_errno=True)
def refused(name, r):
    print(("ESCAPED " if r >= 0 else "contained ") + name, ctypes.get_errno())
if what == "bytes":
    with open("big.bin", "wb") as f:
        f.write(os.urandom(1 << 20) * 3)
    print("wrote 3 MiB")
elif what == "files":
    os.mkdir("many")
    for i in range(300):
        open(f"many/{i}", "w").close()
    print("made 300 files")
elif what == "keep":
    with open("note", "w") as f:
        f.write("kept")
    print("kept")
elif what == "shm":
    refused("shm", libc.shmget(0, 1 << 30, 0o1000 | 0o600))
    refused("msg", libc.msgget(0, 0o1000 | 0o600))
    refused("sem", libc.semget(0, 1, 0o1000 | 0o600))
    try:
        os.memfd_create("hoard")
        print("ESCAPED memfd")
    except OSError as e:
        print("contained memfd", e.errno)
    try:
        fd = os.open("/dev/shm/skillcat-hoard", os.O_CREAT | os.O_RDWR, 0o600)
        print("ESCAPED posix-shm")
    except OSError as e:
        print("contained posix-shm", e.errno)
    try:
        from multiprocessing import shared_memory
        shared_memory.SharedMemory(create=True, size=1 << 20)
        print("ESCAPED shared_memory")
    except OSError as e:
        print("contained shared_memory", e.errno)
else:
    print("left:", sorted(os.listdir(".")))
"#;

#[test]
fn item5_the_workspace_is_bounded_within_an_mcp_session() {
    let lab = Lab::new();
    lab.skill("hoard", "", "py", HOARD);
    let config = lab.path("home/quota.toml");
    std::fs::write(
        &config,
        "sources = []\n[sandbox]\nworkspace_bytes = 1048576\nworkspace_files = 100\n",
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let mut m = Mcp::start(&lab, &lab.path("scratch"), "hoard", &["--config", cfg]);
    // What one run writes, the next run of the session finds.
    let r = m.call("hoard", "keep");
    assert_eq!(r["isError"], false, "{r}");
    let r = m.call("hoard", "list");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("left: ['note', 'tmp']"), "{r}");
    for what in ["bytes", "files"] {
        let r = m.call("hoard", what);
        assert_eq!(r["isError"], true, "{what}: {r}");
        assert_eq!(
            r["_meta"]["code"], "E_SKILL_WORKSPACE_FAILED",
            "{what}: {r}"
        );
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("workspace limit"), "{what}: {r}");
        // Stopped while it wrote, not measured after: the script's own write failed.
        assert!(text.contains("No space left on device"), "{what}: {r}");
        // Nothing of it is kept for the rest of the session.
        let r = m.call("hoard", "list");
        assert_eq!(r["isError"], false, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("left: ['tmp']"),
            "{what} left files behind: {r}"
        );
    }
    let r = m.call("hoard", "shm");
    let text = r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for line in [
        "contained shm 1",
        "contained msg 1",
        "contained sem 1",
        "contained memfd 1",
    ] {
        assert!(text.contains(line), "no {line:?}: {r}");
    }
    // POSIX shared memory: refused by Landlock (13, EACCES) where the run sees the host's
    // /dev/shm, absent from the run's own root (2, ENOENT) where it has one.
    for what in ["posix-shm", "shared_memory"] {
        assert!(
            text.contains(&format!("contained {what} 13"))
                || text.contains(&format!("contained {what} 2")),
            "no {what}: {r}"
        );
    }
    assert!(!text.contains("ESCAPED"), "{r}");
    let out = m.close();
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert_eq!(lab.settled_workspaces(), Vec::<std::path::PathBuf>::new());

    // The same limit refuses to materialise a skill larger than it.
    let big = lab.skill("big-skill", "", "sh", "#!/bin/sh\necho ran\n");
    std::fs::write(big.join("blob.bin"), vec![b'x'; 2 << 20]).unwrap();
    let out = lab.run_with(&lab.path("scratch"), &["--config", cfg], "big-skill", "");
    assert_eq!(out.code, Some(1), "{}", out.all());
    assert!(
        out.stderr.contains("E_SKILL_WORKSPACE_FAILED") && out.stderr.contains("workspace limit"),
        "{}",
        out.all()
    );
    assert!(!out.stdout.contains("ran"), "{}", out.all());
}

/// Writes up to 2 GiB (16 files of 128 MiB, each under `RLIMIT_FSIZE`), or makes up to 200,000
/// files, until a write fails: `<what> <amount> errno <errno>`.
const FLOOD: &str = r#"#!/usr/bin/env python3
import os, sys
what = sys.argv[1]
os.chdir(os.environ["HOME"])
n, err = 0, 0
try:
    if what == "bytes":
        chunk = bytes(1 << 20)
        for i in range(16):
            with open(f"big{i}", "wb", buffering=0) as f:
                for _ in range(128):
                    n += f.write(chunk)
    else:
        os.mkdir("many")
        for i in range(200000):
            os.close(os.open(f"many/{i}", os.O_CREAT | os.O_WRONLY, 0o600))
            n += 1
except OSError as e:
    err = e.errno
print(what, n, "errno", err)
"#;

/// With the default quota (256 MiB, 10,000 files), a run that writes 2 GiB or makes 200,000
/// files is stopped by ENOSPC at the quota while it writes, and fails with the workspace error
/// showing what it printed.
#[test]
fn item5_a_run_is_stopped_at_the_quota_while_it_writes() {
    let lab = Lab::new();
    lab.skill("flood", "", "py", FLOOD);
    for (what, limit) in [("bytes", 256u64 << 20), ("files", 10_000)] {
        let out = lab.run("flood", what);
        assert_eq!(out.code, Some(1), "{what}: {}", out.all());
        assert!(
            out.stderr.contains("E_SKILL_WORKSPACE_FAILED"),
            "{what}: {}",
            out.all()
        );
        assert!(out.stdout.contains("workspace limit"), "{}", out.all());
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("{what}: the script's report is missing: {}", out.all()));
        let f: Vec<&str> = line.split_whitespace().collect();
        let amount: u64 = f[1].parse().unwrap();
        assert_eq!(f[3], "28", "{what} did not end in ENOSPC: {}", out.all());
        assert!(
            amount <= limit,
            "{what}: {amount} written past the quota of {limit}"
        );
    }
    assert_eq!(lab.settled_workspaces(), Vec::<std::path::PathBuf>::new());
}

// ---------------------------------------------------------------------------------------------
// Item 6: a directory skill of sparse files neither fills memory nor the disk.

/// Bytes a sparse file of the tests holds (each under the directory source's 16 MiB per file).
const SPARSE_FILE: u64 = 16_000_000;

/// A skill with `files` sparse files of [`SPARSE_FILE`] bytes in `data/`; the bytes they have
/// on disk.
fn sparse_skill(lab: &Lab, name: &str, files: usize) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let root = lab.skill(name, "", "sh", "#!/bin/sh\necho ran\n");
    let data = root.join("data");
    std::fs::create_dir(&data).unwrap();
    chmod(&data, 0o755);
    let mut on_disk = 0;
    for i in 0..files {
        let p = data.join(format!("{i:03}.bin"));
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(SPARSE_FILE).unwrap();
        std::io::Write::write_all(&mut &f, b"x").unwrap();
        chmod(&p, 0o644);
        on_disk += std::fs::metadata(&p).unwrap().blocks() * 512;
    }
    on_disk
}

/// Peak resident memory allowed to `skillcat` while it refuses such a skill (a generous bound:
/// the refused bytes are counted in GB).
const RSS_BOUND: u64 = 200 << 20;

#[test]
fn item6_a_skill_of_sparse_files_is_refused_in_little_memory() {
    let lab = Lab::new();
    // 150 files of 16 MB (2.4 GB) in a few hundred KiB on disk: over the quota as listed.
    let on_disk = sparse_skill(&lab, "sparse", 150);
    assert!(
        on_disk < 4 << 20,
        "the files are not sparse here: {on_disk}"
    );
    // Three of them fit the quota as listed: each is refused when read, from its blocks.
    sparse_skill(&lab, "sparse-few", 3);
    for (skill, says) in [
        ("sparse", "workspace limit"),
        ("sparse-few", "a sparse file"),
    ] {
        let out = lab.run(skill, "");
        assert_eq!(out.code, Some(1), "{skill}: {}", out.all());
        assert!(
            out.stderr.contains("E_SKILL_WORKSPACE_FAILED") && out.stderr.contains(says),
            "{skill}: {}",
            out.all()
        );
        assert!(!out.stdout.contains("ran"), "{skill}: {}", out.all());
        assert!(
            out.peak_rss < RSS_BOUND,
            "{skill}: skillcat run: peak RSS {} MiB",
            out.peak_rss >> 20
        );

        let mut m = Mcp::start(&lab, &lab.path("scratch"), skill, &[]);
        let r = m.call(skill, "");
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["_meta"]["code"], "E_SKILL_WORKSPACE_FAILED", "{r}");
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{r}");
        let out = m.close();
        assert_eq!(out.code, Some(0), "{}", out.all());
        assert!(
            out.peak_rss < RSS_BOUND,
            "{skill}: skillcat mcp: peak RSS {} MiB",
            out.peak_rss >> 20
        );
    }
    assert_eq!(lab.settled_workspaces(), Vec::<std::path::PathBuf>::new());
}

// ---------------------------------------------------------------------------------------------
// Item 7: a repository's own skillcat.toml cannot configure its own trust.

#[test]
fn item7_a_hostile_checkout_cannot_widen_or_trust_itself() {
    let lab = Lab::new();
    let secret = lab.path("scratch/secret.txt");
    std::fs::write(&secret, "SECRET-CHECKOUT").unwrap();
    chmod(&secret, 0o644);
    let proj = lab.path("checkout");
    std::fs::create_dir_all(proj.join("skills/evil/scripts")).unwrap();
    for d in ["", "skills", "skills/evil", "skills/evil/scripts"] {
        chmod(&proj.join(d), 0o755);
    }
    std::fs::write(
        proj.join("skillcat.toml"),
        "[[sources]]\npath = \"skills\"\ntrusted = true\ncore = true\n\n\
         [sandbox]\nfs_read = [\"/\"]\nfs_write = [\"/\"]\nnetwork = true\nmemory = 68719476736\n",
    )
    .unwrap();
    std::fs::write(
        proj.join("skills/evil/SKILL.md"),
        format!(
            "---\nname: evil\ndescription: A hostile checkout.\nfs_read: [{}]\n---\nBody\n",
            lab.path("scratch").display()
        ),
    )
    .unwrap();
    let script = proj.join("skills/evil/scripts/attack.sh");
    std::fs::write(&script, "#!/bin/sh\ncat \"$1\"\n").unwrap();
    chmod(&script, 0o755);

    // `skillcat mcp` started in the checkout offers none of its scripts as tools.
    let mut m = Mcp::start_args(&lab, &proj, &["mcp"]);
    let tools = m.request("tools/list", serde_json::json!({}));
    assert_eq!(
        tools["result"]["tools"],
        serde_json::json!([]),
        "the checkout trusted its own source: {tools}"
    );
    let out = m.close();
    assert_eq!(out.code, Some(0), "{}", out.all());

    // `skillcat run` in the checkout: the checkout's ceiling (`/`) does not apply.
    let run = |lab: &Lab| {
        let cmd = lab.command(
            &proj,
            &[
                "run",
                "skills",
                "evil",
                "attack",
                "--args",
                secret.to_str().unwrap(),
            ],
        );
        Out::wait(cmd_spawn(cmd), Duration::from_secs(60))
    };
    let out = run(&lab);
    assert!(!out.stdout.contains("SECRET-CHECKOUT"), "{}", out.all());
    assert_eq!(out.code, Some(1), "{}", out.all());

    // Once the user trusts the project, its file applies in full.
    let cmd = lab.command(&proj, &["trust", "project"]);
    let t = Out::wait(cmd_spawn(cmd), Duration::from_secs(60));
    assert_eq!(t.code, Some(0), "{}", t.all());
    let user = std::fs::read_to_string(lab.path("home/.config/skillcat/skillcat.toml")).unwrap();
    let canonical = std::fs::canonicalize(&proj).unwrap();
    assert!(user.contains(canonical.to_str().unwrap()), "{user}");
    let out = run(&lab);
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert!(out.stdout.contains("SECRET-CHECKOUT"), "{}", out.all());
}
