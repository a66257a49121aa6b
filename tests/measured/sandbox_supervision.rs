//! The third red team's sandbox findings (issue "Containment by construction"), through the
//! real binary: a run that outlives its supervisor, kernel memory outside the limits, metadata
//! through a read-only grant, a working directory that holds the home directory.
//!
//! `SKILLCAT_BIN` names another binary to run instead of the one cargo built: pointing it at a
//! build of an earlier commit shows which of these tests that build fails.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::lab::{Lab, Out, bin, chmod};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A lab with `out/` (writable by the sandbox uid) whose user configuration holds `sandbox`
/// (the body of a `[sandbox]` table).
fn lab_with(sandbox: &str) -> Lab {
    let lab = Lab::new();
    std::fs::create_dir(lab.path("out")).unwrap();
    chmod(&lab.path("out"), 0o777);
    let config = lab.path("home/.config/skillcat");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("skillcat.toml"),
        format!("[sandbox]\n{sandbox}\n"),
    )
    .unwrap();
    lab
}

/// `skillcat run <skills>/<skill> <skill> attack --args ARGS` in `cwd`.
fn run_cmd(lab: &Lab, cwd: &Path, skill: &str, args: &str) -> Command {
    let src = lab.path("skills").join(skill);
    lab.command(
        cwd,
        &[
            "run",
            src.to_str().unwrap(),
            skill,
            "attack",
            "--args",
            args,
        ],
    )
}

/// The pids of every process whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&c).contains(needle)
        {
            v.push(pid);
        }
    }
    v
}

fn wait_for(what: &str, deadline: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ticker skill: appends a line to `$1/ticks` every 50 ms for a minute (its timeout).
fn ticker(lab: &Lab, name: &str) -> PathBuf {
    let out = lab.path("out");
    lab.skill(
        name,
        &format!(
            "metadata:\n  skillcat.fs_write: \"{}\"\n  skillcat.timeout: \"60\"\n",
            out.display()
        ),
        "sh",
        // A background child too: the whole run must go, not only its first process.
        "#!/bin/sh\n# Ticks.\n( while :; do echo child >> \"$1/ticks\"; sleep 0.05; done ) &\n\
         while :; do echo tick >> \"$1/ticks\"; sleep 0.05; done\n",
    );
    lab.path("out/ticks")
}

/// After whatever started the run is gone: within 2 s no process of the run is left, and the
/// granted file stops growing.
fn assert_run_ended(lab: &Lab, ticks: &Path, what: &str) {
    let needle = lab.path("tmp").display().to_string();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && !processes_with(&needle).is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = processes_with(&needle);
    let size = std::fs::metadata(ticks).unwrap().len();
    std::thread::sleep(Duration::from_millis(600));
    let later = std::fs::metadata(ticks).unwrap().len();
    // Clean up before asserting, so a failure leaves nothing running.
    for pid in &left {
        // SAFETY: signalling a pid we found.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "{what}: processes of the run still alive 2 s later: {left:?}"
    );
    assert_eq!(size, later, "{what}: the granted file still grows");
}

// ---------------------------------------------------------------------------------------------
// Finding 1: no run outlives whatever started it.

#[test]
fn a_run_ends_when_skillcat_run_is_killed() {
    for (signal, name) in [
        (libc::SIGKILL, "kill-ticker"),
        (libc::SIGTERM, "term-ticker"),
    ] {
        let lab = &lab_out();
        let ticks = ticker(lab, name);
        let child = run_cmd(
            lab,
            &lab.path("out"),
            name,
            lab.path("out").to_str().unwrap(),
        )
        .spawn()
        .unwrap();
        wait_for("the first tick", Duration::from_secs(30), || {
            std::fs::metadata(&ticks).is_ok_and(|m| m.len() > 20)
        });
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = Out::wait(child, Duration::from_secs(10));
        assert_ne!(out.code, Some(0), "{}", out.all());
        assert_run_ended(lab, &ticks, &format!("skillcat run after signal {signal}"));
    }
}

fn lab_out() -> Lab {
    let lab = lab_with("");
    let out = lab.path("out").display().to_string();
    let config = lab.path("home/.config/skillcat/skillcat.toml");
    std::fs::write(
        config,
        format!("[sandbox]\nfs_write = [\"{out}\"]\nfs_read = [\"{out}\"]\ntimeout = 60\n"),
    )
    .unwrap();
    lab
}

#[test]
fn a_run_ends_when_the_mcp_client_goes_away() {
    for kill_server in [false, true] {
        let lab = lab_out();
        let ticks = ticker(&lab, "mcp-ticker");
        let src = lab.path("skills/mcp-ticker");
        let mut cmd = lab.command(&lab.path("out"), &["mcp", src.to_str().unwrap()]);
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let out = lab.path("out").display().to_string();
        for msg in [
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
                {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "rt3", "version": "0"}}}),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params":
                {"name": "run_mcp_ticker_attack", "arguments": {"args": out}}}),
        ] {
            stdin.write_all(format!("{msg}\n").as_bytes()).unwrap();
        }
        stdin.flush().unwrap();
        wait_for("the first tick", Duration::from_secs(30), || {
            std::fs::metadata(&ticks).is_ok_and(|m| m.len() > 20)
        });
        if kill_server {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        }
        // The client goes away: its end of the pipe closes.
        drop(stdin);
        let server = child.id();
        let _ = Out::wait(child, Duration::from_secs(10));
        if !kill_server {
            // The server ended on its own: the dropped call's cgroup went with it.
            let left = run_groups_of(server);
            assert!(left.is_empty(), "run cgroups left behind: {left:?}");
        }
        assert_run_ended(
            &lab,
            &ticks,
            if kill_server {
                "skillcat mcp killed"
            } else {
                "skillcat mcp whose client closed its pipe"
            },
        );
    }
}

/// The run cgroups (`run-<pid>-<n>`) a supervisor with this pid made, in any hierarchy.
fn run_groups_of(pid: u32) -> Vec<PathBuf> {
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

// ---------------------------------------------------------------------------------------------
// Finding 2: kernel memory (socket buffers) counts against the run's memory limit.

fn mem_available() -> u64 {
    let s = std::fs::read_to_string("/proc/meminfo").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .unwrap()
        * 1024
}

#[test]
fn socket_buffers_cannot_take_host_memory_past_the_runs_limit() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let lab = lab_with("memory = 67108864\nprocesses = 4\ntimeout = 60\n");
    // Three processes each queue as much as their socket pairs take (about 1 GiB each without a
    // kernel-counted limit), then hold it.
    lab.skill(
        "sockets",
        "metadata:\n  skillcat.timeout: \"60\"\n",
        "py",
        r#"#!/usr/bin/python3
# Fills socket buffers.
import os, socket, sys, time
def fill():
    total = 0
    keep = []
    for _ in range(120):
        try:
            a, b = socket.socketpair()
        except OSError:
            break
        a.setblocking(False)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
        b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
        chunk = b"x" * 65536
        while True:
            try:
                total += a.send(chunk)
            except (BlockingIOError, OSError):
                break
        keep.append((a, b))
    print("queued", total >> 20, "MiB", flush=True)
    time.sleep(3)
for _ in range(2):
    if os.fork() == 0:
        fill()
        os._exit(0)
fill()
"#,
    );
    let before = mem_available();
    let child = run_cmd(&lab, &lab.path("out"), "sockets", "")
        .spawn()
        .unwrap();
    let pid = child.id();
    let lowest = std::thread::spawn(move || {
        let mut low = u64::MAX;
        let start = Instant::now();
        while Path::new(&format!("/proc/{pid}")).exists() && start.elapsed().as_secs() < 60 {
            low = low.min(mem_available());
            std::thread::sleep(Duration::from_millis(10));
        }
        low
    });
    let out = Out::wait(child, Duration::from_secs(90));
    let low = lowest.join().unwrap();
    let taken = before.saturating_sub(low);
    // The run's limit is 64 MiB; the margin (512 MiB) covers skillcat itself, the test's own
    // threads and the host's noise (other tests, a build). Without a kernel-counted limit the
    // three processes take about 2.5 GiB.
    let bound = (64u64 << 20) + (512 << 20);
    assert!(
        taken < bound,
        "the run took {} MiB of host memory (bound {} MiB)\n{}",
        taken >> 20,
        bound >> 20,
        out.all()
    );
    // What the processes managed to queue, as they report it (a process killed at the limit
    // reports nothing).
    let queued: u64 = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("queued "))
        .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
        .sum();
    assert!(queued <= 64, "the run queued {queued} MiB\n{}", out.all());
    if cfg!(target_os = "linux") && !out.stderr.contains("not in a cgroup") {
        assert!(
            out.stdout.contains("reached its memory limit"),
            "the run was not stopped at its limit\n{}",
            out.all()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Finding 3: metadata follows the grant (a non-root host, whose scripts share its uid).

#[test]
fn metadata_of_a_read_only_grant_cannot_change_on_a_non_root_host() {
    if !is_root() || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: needs root to become another user, and setpriv");
        return;
    }
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    // The "host user" is 65534 here: skillcat itself runs as nobody.
    let lab = lab_with("");
    let data = lab.path("data");
    std::fs::create_dir(&data).unwrap();
    let file = data.join("report.txt");
    std::fs::write(&file, "numbers\n").unwrap();
    chmod(&file, 0o644);
    let config = lab.path("home/.config/skillcat/skillcat.toml");
    std::fs::write(
        &config,
        format!("[sandbox]\nfs_read = [\"{}\"]\n", data.display()),
    )
    .unwrap();
    // Everything the nobody user must own.
    for p in [
        "",
        "skills",
        "tmp",
        "home",
        "home/.config",
        "home/.config/skillcat",
        "out",
    ] {
        std::os::unix::fs::chown(lab.path(p), Some(65534), Some(65534)).unwrap();
    }
    std::os::unix::fs::chown(&config, Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::chown(&data, Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    lab.skill(
        "meta",
        &format!("metadata:\n  skillcat.fs_read: \"{}\"\n", data.display()),
        "py",
        r#"#!/usr/bin/python3
# Changes metadata through a read-only descriptor.
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for what, call in [
    ("fchmod", lambda: os.chmod(fd, 0o777)),
    ("futimens", lambda: os.utime(fd, (1, 1))),
    ("fsetxattr", lambda: os.setxattr(fd, "user.rt3", b"x")),
    ("fchown", lambda: os.chown(fd, os.getuid(), os.getgid())),
    ("chmod", lambda: os.chmod(sys.argv[1], 0o777)),
    ("utime", lambda: os.utime(sys.argv[1], (2, 2))),
]:
    try:
        call()
        print(what, "changed")
    except OSError as e:
        print(what, "refused", e.errno)
"#,
    );
    for p in ["skills/meta", "skills/meta/scripts", "skills/meta/SKILL.md"] {
        std::os::unix::fs::chown(lab.path(p), Some(65534), Some(65534)).unwrap();
    }
    std::os::unix::fs::chown(
        lab.path("skills/meta/scripts/attack.py"),
        Some(65534),
        Some(65534),
    )
    .unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let src = lab.path("skills/meta");
    // The binary may lie under a directory closed to uid 65534 (a checkout in /root): the
    // user runs a copy of it from the lab.
    let copy = lab.path("skillcat");
    std::fs::copy(bin(), &copy).unwrap();
    chmod(&copy, 0o755);
    let mut cmd = Command::new("/usr/bin/setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&copy)
        .args(["run", src.to_str().unwrap(), "meta", "attack", "--args"])
        .arg(file.to_str().unwrap())
        .current_dir(lab.path("out"))
        .env_remove("SKILLCAT_CONFIG")
        .env("TMPDIR", lab.path("tmp"))
        .env("XDG_RUNTIME_DIR", lab.path("tmp"))
        .env("HOME", lab.path("home"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Out::wait(cmd.spawn().unwrap(), Duration::from_secs(60));
    assert!(out.stdout.contains("fchmod "), "{}", out.all());
    assert!(!out.stdout.contains("changed"), "{}", out.all());
    let after = std::fs::metadata(&file).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(before.mode(), after.mode(), "{}", out.all());
    assert_eq!(before.mtime(), after.mtime(), "{}", out.all());
    assert!(
        xattr_absent(&file, "user.rt3"),
        "an xattr was set\n{}",
        out.all()
    );
}

fn xattr_absent(p: &Path, name: &str) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let name = std::ffi::CString::new(name).unwrap();
    let mut buf = [0u8; 16];
    // SAFETY: C strings and a live buffer.
    let r = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    r < 0
}

// ---------------------------------------------------------------------------------------------
// Finding 4: a grant that holds the home directory never reaches its secrets.

#[test]
fn a_grant_holding_the_home_directory_never_reaches_its_secrets() {
    let lab = lab_with("");
    // users/me is the home directory; the run starts in users/, its parent, which a skill
    // declaring `fs_read: "."` then reads (the workspaces live in the lab's tmp/, apart).
    let users = lab.path("users");
    let home = users.join("me");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join(".config/skillcat")).unwrap();
    for d in [
        &users,
        &home,
        &home.join(".ssh"),
        &home.join(".config"),
        &home.join(".config/skillcat"),
    ] {
        chmod(d, 0o755);
    }
    let files = [
        (home.join(".ssh/id_rsa"), "PRIVATE KEY\n".to_string()),
        (home.join(".netrc"), "machine x password y\n".to_string()),
        (
            home.join(".config/skillcat/skillcat.toml"),
            format!("[sandbox]\nfs_read = [\"{}\"]\n", users.display()),
        ),
        (home.join("notes.txt"), "just notes\n".to_string()),
    ];
    for (p, text) in &files {
        std::fs::write(p, text).unwrap();
        chmod(p, 0o644);
    }
    lab.skill(
        "reader",
        "metadata:\n  skillcat.fs_read: \".\"\n",
        "sh",
        "#!/bin/sh\n# Reads what it can.\nfor f in \"$@\"; do\n  if cat \"$f\" >/dev/null 2>&1; then echo \"read $f\"; else echo \"denied $f\"; fi\ndone\n",
    );
    let args = files
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = run_cmd(&lab, &users, "reader", &args);
    cmd.env("HOME", &home);
    let out = Out::wait(cmd.spawn().unwrap(), Duration::from_secs(60));
    for (secret, _) in &files[..3] {
        assert!(
            out.stdout.contains(&format!("denied {}", secret.display())),
            "{} was readable\n{}",
            secret.display(),
            out.all()
        );
    }
    // The rest of the grant still works.
    assert!(
        out.stdout
            .contains(&format!("read {}", files[3].0.display())),
        "{}",
        out.all()
    );
}

// ---------------------------------------------------------------------------------------------
// Finding 5: on a root host a grant under a directory closed to the script's uid still works.

#[test]
fn a_grant_under_a_closed_directory_works_on_a_root_host() {
    if !is_root() {
        eprintln!("skipped: a root host's case");
        return;
    }
    let lab = lab_with("");
    // closed/ is like /root on Debian: 0700, owned by root.
    let closed = lab.path("closed");
    std::fs::create_dir_all(closed.join("project/data")).unwrap();
    std::fs::create_dir_all(closed.join("project/out")).unwrap();
    std::fs::create_dir_all(closed.join("other")).unwrap();
    chmod(&closed, 0o700);
    chmod(&closed.join("project"), 0o755);
    chmod(&closed.join("project/data"), 0o755);
    // The directory is root's, as the user's files are on a root host: the granted tree's
    // idmapping makes it the script's (scripts no longer run as host uid 65534, whose
    // directory this was).
    std::fs::write(closed.join("project/data/in.txt"), "granted words\n").unwrap();
    chmod(&closed.join("project/data/in.txt"), 0o644);
    std::fs::write(closed.join("other/secret.txt"), "not granted\n").unwrap();
    chmod(&closed.join("other/secret.txt"), 0o644);
    let data = closed.join("project/data");
    let out = closed.join("project/out");
    std::fs::write(
        lab.path("home/.config/skillcat/skillcat.toml"),
        format!(
            "[sandbox]\nfs_read = [\"{}\"]\nfs_write = [\"{}\"]\n",
            closed.display(),
            out.display()
        ),
    )
    .unwrap();
    lab.skill(
        "closed-reader",
        &format!(
            "metadata:\n  skillcat.fs_read: \"{}\"\n  skillcat.fs_write: \"{}\"\n",
            data.display(),
            out.display()
        ),
        "sh",
        "#!/bin/sh\n# Reads a granted file, writes a granted directory, tries a neighbour.\n\
         cat \"$1/in.txt\" && echo copied > \"$2/result.txt\" && echo wrote\n\
         cat \"$3\" 2>/dev/null && echo NEIGHBOUR-READ\n\
         ls \"$4\" 2>/dev/null\nexit 0\n",
    );
    let args = format!(
        "{} {} {} {}",
        data.display(),
        out.display(),
        closed.join("other/secret.txt").display(),
        closed.display()
    );
    let o = Out::wait(
        run_cmd(&lab, &lab.path("out"), "closed-reader", &args)
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
    );
    assert!(o.stdout.contains("granted words"), "{}", o.all());
    assert!(o.stdout.contains("wrote"), "{}", o.all());
    assert_eq!(
        std::fs::read_to_string(out.join("result.txt")).unwrap(),
        "copied\n",
        "{}",
        o.all()
    );
    // No loss of confinement: what was not granted stays out of reach, and the closed
    // directory shows nothing but the way to the grant.
    assert!(!o.stdout.contains("NEIGHBOUR-READ"), "{}", o.all());
    assert!(!o.stdout.contains("other"), "{}", o.all());
}

/// Finding 5, the write half: on a root host everything the user owns is root's, so a granted
/// directory owned by root must be writable by the script and a 0600 file readable, with no
/// loss of confinement: nothing it makes can become a set-id program of root's, a read-only
/// grant stays unchanged (content, mode, time), another user's file stays closed, and a link
/// out of the grant reaches nothing.
#[test]
fn a_grant_owned_by_root_is_the_scripts_on_a_root_host() {
    use std::os::unix::fs::MetadataExt;
    if !is_root() {
        eprintln!("skipped: a root host's case");
        return;
    }
    let lab = lab_with("");
    let closed = lab.path("closed");
    let data = closed.join("project/data");
    let out = closed.join("project/out");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    chmod(&closed, 0o700);
    chmod(&closed.join("project"), 0o700);
    chmod(&data, 0o700);
    chmod(&out, 0o755);
    std::fs::write(data.join("secret.txt"), "root only words\n").unwrap();
    chmod(&data.join("secret.txt"), 0o600);
    std::fs::write(data.join("ro.txt"), "read only\n").unwrap();
    chmod(&data.join("ro.txt"), 0o644);
    std::fs::write(data.join("theirs.txt"), "their words\n").unwrap();
    chmod(&data.join("theirs.txt"), 0o600);
    std::os::unix::fs::chown(data.join("theirs.txt"), Some(1000), Some(1000)).unwrap();
    // An old time, so that a touch would show.
    let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(data.join("ro.txt"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    std::fs::write(
        lab.path("home/.config/skillcat/skillcat.toml"),
        format!(
            "[sandbox]\nfs_read = [\"{}\", \"/proc/version\"]\nfs_write = [\"{}\"]\n",
            data.display(),
            out.display()
        ),
    )
    .unwrap();
    // /proc/version is root's too, on a file system that cannot be idmapped: it keeps its modes
    // (world-readable), and the run goes on.
    lab.skill(
        "root-owned",
        &format!(
            "metadata:\n  skillcat.fs_read: \"{} /proc/version\"\n  skillcat.fs_write: \"{}\"\n",
            data.display(),
            out.display()
        ),
        "sh",
        "#!/bin/sh\n\
         cat \"$1/secret.txt\" && echo READ-OK\n\
         echo made > \"$2/made.txt\" && echo WROTE-OK\n\
         mkdir \"$2/sub\" && echo MKDIR-OK\n\
         echo relative > rel.txt && echo RELATIVE-OK\n\
         chmod 640 \"$2/made.txt\" && echo CHMOD-OK\n\
         chmod 4755 \"$2/made.txt\" 2>/dev/null && echo SETUID-SET\n\
         chmod 2755 \"$2/made.txt\" 2>/dev/null && echo SETGID-SET\n\
         chmod 600 \"$1/ro.txt\" 2>/dev/null && echo RO-CHMOD\n\
         touch \"$1/ro.txt\" 2>/dev/null && echo RO-TOUCH\n\
         echo more >> \"$1/ro.txt\" 2>/dev/null && echo RO-APPEND\n\
         rm -f \"$1/ro.txt\" 2>/dev/null; test -e \"$1/ro.txt\" || echo RO-REMOVED\n\
         cat \"$1/theirs.txt\" 2>/dev/null && echo THEIRS-READ\n\
         ln -s /etc/shadow \"$2/s\" && cat \"$2/s\" 2>/dev/null && echo SHADOW-READ\n\
         ln /etc/shadow \"$2/h\" 2>/dev/null && echo SHADOW-LINKED\n\
         grep -q Linux /proc/version && echo PROC-OK\n\
         exit 0\n",
    );
    let args = format!("{} {}", data.display(), out.display());
    let o = Out::wait(
        // Started in the write grant: the script starts there too, and a relative path names
        // the granted directory as it is mounted for the script.
        run_cmd(&lab, &out, "root-owned", &args).spawn().unwrap(),
        Duration::from_secs(60),
    );
    // CHMOD-OK: the script owns what it made (so the set-id refusals below are refusals).
    for want in [
        "root only words",
        "READ-OK",
        "WROTE-OK",
        "MKDIR-OK",
        "RELATIVE-OK",
        "CHMOD-OK",
        "PROC-OK",
    ] {
        assert!(o.stdout.contains(want), "{want}: {}", o.all());
    }
    for refused in [
        "SETUID-SET",
        "SETGID-SET",
        "RO-CHMOD",
        "RO-TOUCH",
        "RO-APPEND",
        "RO-REMOVED",
        "THEIRS-READ",
        "their words",
        "SHADOW-READ",
        "SHADOW-LINKED",
    ] {
        assert!(!o.stdout.contains(refused), "{refused}: {}", o.all());
    }
    // What the script made is root's on disk, as the rest of the user's files are, and no
    // set-id bit got through.
    let made = std::fs::metadata(out.join("made.txt")).unwrap();
    assert_eq!((made.uid(), made.gid()), (0, 0), "{}", o.all());
    assert_eq!(made.mode() & 0o7777, 0o640, "{:o}", made.mode());
    assert_eq!(
        std::fs::read_to_string(out.join("made.txt")).unwrap(),
        "made\n"
    );
    for name in ["sub", "rel.txt"] {
        let m = std::fs::metadata(out.join(name)).unwrap();
        assert_eq!((m.uid(), m.gid()), (0, 0), "{name}");
    }
    // The read-only grant as it was.
    let ro = std::fs::metadata(data.join("ro.txt")).unwrap();
    assert_eq!(ro.mode() & 0o7777, 0o644);
    assert_eq!(ro.modified().unwrap(), old);
    assert_eq!(
        std::fs::read_to_string(data.join("ro.txt")).unwrap(),
        "read only\n"
    );
    assert!(!out.join("h").exists());
}
