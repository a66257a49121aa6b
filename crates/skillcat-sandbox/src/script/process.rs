//! The process side of a run: start the helper (or `sandbox-exec`), enforce the timeout by
//! killing the whole process group, drain and cap the output, and read the status pipe.
//!
//! ```text
//! supervisor ──spawn──▶ helper   (env cleared, cwd = work or the caller's, stdin null, own process group)
//!    ▲  fd 1+2 ◀── one pipe ── script output, drained past the cap
//!    └─ fd 3   ◀── status ──── "ready …" | "error <kind> …" | "exit N" | "signal S"
//! ```

use std::ffi::OsString;
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use super::sandbox::{
    self, HELPER_ARG, HelperPolicy, HelperRequest, Mode, POLICY_FD, RunLimits, STATUS_FD,
};
use super::{Captured, ScriptError};

/// Starts the process, waits with the timeout, drains output, reads the status pipe.
/// `inherit`: descriptors the helper gets at the given numbers (a workspace's namespaces).
pub(crate) async fn supervise(
    helper: &Path,
    output_cap: usize,
    policy: &HelperPolicy,
    cwd: PathBuf,
    timeout: Duration,
    inherit: &[(&OwnedFd, i32)],
) -> Result<Raw, ScriptError> {
    // The helper forked from the zygote where there is one (no second exec of this binary);
    // where it is gone or fails, re-executed as before.
    #[cfg(target_os = "linux")]
    if let Some(zygote) = sandbox::linux::zygote::usable(helper)
        && let Some(raw) =
            supervise_forked(zygote, output_cap, policy, &cwd, timeout, inherit).await
    {
        return raw;
    }
    // The helper exists on Linux only; elsewhere the process is started directly (under
    // `sandbox-exec` when confined).
    let direct = !cfg!(target_os = "linux");
    let Launch {
        program,
        args,
        env,
        status_pipe,
        policy_fd,
    } = launch(helper, policy, direct)?;
    let status = if status_pipe {
        Some(status_pipe_pair().map_err(|e| sandbox_failed("status pipe", e))?)
    } else {
        None
    };
    let status_w = status.as_ref().map(|(_, w)| w.as_raw_fd());
    let policy_r = policy_fd.as_ref().map(|f| f.as_raw_fd());
    // Numbered above the targets, so no dup2 clobbers another's source.
    let inherited = inherit
        .iter()
        .map(|(fd, target)| high_dup(fd).map(|d| (d, *target)))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| sandbox_failed("the workspace's namespaces", e))?;
    let inherit_raw: Vec<(i32, i32)> = inherited
        .iter()
        .map(|(fd, target)| (fd.as_raw_fd(), *target))
        .collect();
    let rlimits = direct.then_some(policy.limits);

    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&args)
        .env_clear()
        .envs(env)
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: the closure runs between fork and exec and only calls dup2 and setrlimit, which
    // are async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || in_child(status_w, policy_r, &inherit_raw, rlimits));
    }
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| ScriptError::SandboxUnavailable {
        reason: format!("cannot start {}: {e}", program.display()),
    })?;
    let status_r = status.map(|(r, w)| {
        drop(w);
        r
    });
    drop(policy_fd);
    drop(inherited);
    let pid = child.id().map(|p| p as libc::pid_t);
    let stdout = child.stdout.take();
    let buf = Arc::new(Mutex::new(CaptureBuf::default()));
    let reader = tokio::spawn(read_capped(stdout, output_cap, buf.clone()));

    let remaining = timeout.saturating_sub(started.elapsed());
    let (exit_status, timed_out) = wait_or_kill(&mut child, pid, remaining).await;
    if direct && let Some(pid) = pid {
        // Without a PID namespace, end what the script left behind in its group.
        // SAFETY: signalling the script's process group.
        unsafe { libc::killpg(pid, libc::SIGKILL) };
    }
    // Everything that held the pipe is gone; give the reader a moment to drain it (and stop
    // it regardless: nothing may keep a run alive).
    let mut reader = reader;
    if tokio::time::timeout(Duration::from_secs(2), &mut reader)
        .await
        .is_err()
    {
        reader.abort();
    }
    let output = buf.lock().map(|b| b.captured()).unwrap_or_default();
    let lines = status_r.map(read_status).unwrap_or_default();

    let (ready, relayed) = parse_status(&lines)?;
    if status_pipe && ready.is_none() && !timed_out {
        return Err(ScriptError::SandboxFailed {
            reason: "the sandbox helper ended before starting the script".into(),
        });
    }
    let exit = exit_of(relayed, exit_status)?;
    Ok(Raw {
        exit,
        timed_out,
        output,
        ready,
    })
}

/// A run whose helper the zygote forks: the same descriptors as a re-executed helper's, its
/// end followed on the status pipe (closed when the helper and the script are gone), the
/// timeout enforced on its process group. `None`: the zygote could not fork it (gone, or
/// failing), nothing was started, and the caller re-executes the binary.
#[cfg(target_os = "linux")]
async fn supervise_forked(
    zygote: u32,
    output_cap: usize,
    policy: &HelperPolicy,
    cwd: &Path,
    timeout: Duration,
    inherit: &[(&OwnedFd, i32)],
) -> Option<Result<Raw, ScriptError>> {
    let started = Instant::now();
    let forked = match fork_run(zygote, policy, cwd, inherit).await? {
        Ok(f) => f,
        Err(e) => return Some(Err(e)),
    };
    Some(
        follow(
            forked,
            output_cap,
            timeout.saturating_sub(started.elapsed()),
        )
        .await,
    )
}

/// A helper the zygote forked, not yet followed: its process group (killed when dropped), and
/// the read ends of its output and status pipes.
#[cfg(target_os = "linux")]
pub(super) struct ForkedRun {
    pub(super) guard: KillGroup,
    out_r: OwnedFd,
    status_r: OwnedFd,
}

/// Forks a run's helper from the zygote (its policy's `supervisor` made the zygote's pid).
/// `None`: the zygote could not fork it, and nothing was started.
#[cfg(target_os = "linux")]
pub(super) async fn fork_run(
    zygote: u32,
    policy: &HelperPolicy,
    cwd: &Path,
    inherit: &[(&OwnedFd, i32)],
) -> Option<Result<ForkedRun, ScriptError>> {
    use sandbox::linux::zygote::{Request, fork_helper};
    // A process's one run is served by the zygote itself (it has nothing else to serve): the
    // helper is then this process's child. Otherwise the helper's parent is the zygote. Its
    // backstop checks for that pid.
    let once = super::reaper::after_exit::wanted() && !policy.parked;
    let mut policy = policy.clone();
    policy.supervisor = if once { std::process::id() } else { zygote };
    let json = match HelperRequest::Run(policy).to_json() {
        Ok(j) => j,
        Err(e) => {
            return Some(Err(ScriptError::SandboxFailed {
                reason: format!("cannot serialise the policy: {e}"),
            }));
        }
    };
    let fds = (|| {
        let policy_fd = policy_memfd(json.as_bytes())?;
        let status = status_pipe_pair()?;
        let out = output_pipe()?;
        Ok::<_, std::io::Error>((policy_fd, status, out))
    })();
    let (policy_fd, (status_r, status_w), (out_r, out_w)) = match fds {
        Ok(f) => f,
        Err(e) => return Some(Err(sandbox_failed("the helper's descriptors", e))),
    };
    let forked = fork_helper(Request {
        stdout: &out_w,
        stdin: None,
        quiet: false,
        status: &status_w,
        policy: &policy_fd,
        inherit,
        cwd,
        once,
    })
    .await?;
    drop((policy_fd, status_w, out_w));
    Some(Ok(ForkedRun {
        // Killed if this run is dropped before its helper is gone (as `kill_on_drop`).
        guard: KillGroup {
            pid: forked.pid,
            pidfd: forked.pidfd,
            armed: true,
        },
        out_r,
        status_r,
    }))
}

/// Follows a forked run to its end: output drained and capped, status lines read, the helper's
/// group killed when `remaining` runs out.
#[cfg(target_os = "linux")]
pub(super) async fn follow(
    forked: ForkedRun,
    output_cap: usize,
    remaining: Duration,
) -> Result<Raw, ScriptError> {
    let ForkedRun {
        mut guard,
        out_r,
        status_r,
    } = forked;
    let buf = Arc::new(Mutex::new(CaptureBuf::default()));
    let reader = match tokio::net::unix::pipe::Receiver::from_owned_fd(out_r) {
        Ok(r) => tokio::spawn(read_capped(Some(r), output_cap, buf.clone())),
        Err(e) => return Err(sandbox_failed("the output pipe", e)),
    };
    let mut status = match tokio::net::unix::pipe::Receiver::from_owned_fd(status_r) {
        Ok(r) => r,
        Err(e) => return Err(sandbox_failed("the status pipe", e)),
    };
    let mut lines = Vec::new();
    let timed_out = tokio::time::timeout(remaining, read_status_lines(&mut status, &mut lines))
        .await
        .is_err();
    if timed_out {
        guard.kill();
        // Everything holding the pipe dies with the helper; bounded all the same.
        let _ = tokio::time::timeout(Duration::from_secs(2), read_to_end(&mut status, &mut lines))
            .await;
    }
    guard.armed = false;
    let mut reader = reader;
    if tokio::time::timeout(Duration::from_secs(2), &mut reader)
        .await
        .is_err()
    {
        reader.abort();
    }
    let output = buf.lock().map(|b| b.captured()).unwrap_or_default();
    let lines: Vec<String> = String::from_utf8_lossy(&lines)
        .lines()
        .map(str::to_string)
        .collect();
    let (ready, relayed) = parse_status(&lines)?;
    if ready.is_none() && !timed_out {
        return Err(ScriptError::SandboxFailed {
            reason: "the sandbox helper ended before starting the script".into(),
        });
    }
    // A helper that ended without relaying how the script did was killed (the run's
    // memory limit, or the zygote's end): the zygote, not this process, reaped it.
    use std::os::unix::process::ExitStatusExt;
    let killed = std::process::ExitStatus::from_raw(libc::SIGKILL);
    let exit = exit_of(relayed, Ok(killed))?;
    Ok(Raw {
        exit,
        timed_out,
        output,
        ready,
    })
}

/// Reads the helper's status lines until the line that says how the script ended (`exit N`,
/// `signal S`: the helper's last word) or, where none comes, until every writer is gone. The
/// answer does not wait for the helper's own exit: the script's output ends with the script
/// (the helper keeps no copy of it while it waits), and the helper, having said its last word,
/// only exits.
#[cfg(target_os = "linux")]
async fn read_status_lines(r: &mut tokio::net::unix::pipe::Receiver, into: &mut Vec<u8>) {
    read_until(r, into, ends_the_run).await
}

/// Whether the status lines read so far hold the one that says how the script ended.
#[cfg(target_os = "linux")]
fn ends_the_run(lines: &[u8]) -> bool {
    lines
        .split(|&b| b == b'\n')
        .rev()
        .skip(1) // what follows the last line end: not a whole line yet
        .any(|l| l.starts_with(b"exit ") || l.starts_with(b"signal "))
}

/// Reads a pipe until every writer is gone (at most 1 MiB kept).
#[cfg(target_os = "linux")]
async fn read_to_end(r: &mut tokio::net::unix::pipe::Receiver, into: &mut Vec<u8>) {
    read_until(r, into, |_| false).await
}

/// Reads a pipe until every writer is gone or what was read so far is `enough` (at most 1 MiB
/// kept).
#[cfg(target_os = "linux")]
async fn read_until(
    r: &mut tokio::net::unix::pipe::Receiver,
    into: &mut Vec<u8>,
    enough: impl Fn(&[u8]) -> bool,
) {
    let mut chunk = [0u8; 4096];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) if into.len() < 1 << 20 => into.extend_from_slice(&chunk[..n]),
            Ok(_) => {}
        }
        if enough(into) {
            return;
        }
    }
}

/// A pipe for a forked helper (its output, or a guest call's input): (read end, write end),
/// both close-on-exec here (the helper's end reaches the zygote as `SCM_RIGHTS`).
#[cfg(target_os = "linux")]
fn output_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the array; the fds are then owned exactly once.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// A guest call's helper, forked from the zygote (`guest::host`): its stdin and stdout (its
/// stderr is `/dev/null`), and its process group, killed when this is dropped unless
/// [`disarm`](Self::disarm)ed.
#[cfg(all(target_os = "linux", feature = "guest"))]
pub(crate) struct ForkedGuest {
    pub(crate) stdin: Option<tokio::net::unix::pipe::Sender>,
    pub(crate) stdout: Option<tokio::net::unix::pipe::Receiver>,
    group: KillGroup,
}

#[cfg(all(target_os = "linux", feature = "guest"))]
impl ForkedGuest {
    /// Waits until the helper has exited (its pidfd readable; the zygote reaps it).
    pub(crate) async fn exited(&self) {
        let Some(fd) = self.group.pidfd.as_ref().and_then(|f| f.try_clone().ok()) else {
            return;
        };
        // SAFETY: the AsyncFd owns the duplicate for its whole life.
        let Ok(fd) = (unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        }) else {
            return;
        };
        let _ = fd.readable().await;
    }

    /// Kills the helper's group (and with the helper, the child in its PID namespace).
    pub(crate) fn kill(&mut self) {
        self.group.kill();
    }

    /// The helper is gone: nothing to kill when this is dropped.
    pub(crate) fn disarm(&mut self) {
        self.group.armed = false;
    }
}

/// Forks a guest call's helper from the zygote, its policy on `policy` (whose `supervisor` is
/// the zygote's pid) and its status pipe's write end `status_w`; `None` when the zygote is not
/// there for it (nothing was started: the caller re-executes the binary).
#[cfg(all(target_os = "linux", feature = "guest"))]
pub(crate) async fn fork_guest(status_w: &OwnedFd, policy: &OwnedFd) -> Option<ForkedGuest> {
    let (in_r, in_w) = output_pipe().ok()?;
    let (out_r, out_w) = output_pipe().ok()?;
    let forked = sandbox::linux::zygote::fork_helper(sandbox::linux::zygote::Request {
        stdout: &out_w,
        stdin: Some(&in_r),
        quiet: true,
        status: status_w,
        policy,
        inherit: &[],
        cwd: Path::new("/"),
        once: false,
    })
    .await?;
    drop((in_r, out_w));
    let mut group = KillGroup {
        pid: forked.pid,
        pidfd: forked.pidfd,
        armed: true,
    };
    // Its end is followed through the pidfd (kernels with Landlock all have them).
    if group.pidfd.is_none() {
        group.kill();
        return None;
    }
    let stdin = tokio::net::unix::pipe::Sender::from_owned_fd(in_w).ok()?;
    let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(out_r).ok()?;
    Some(ForkedGuest {
        stdin: Some(stdin),
        stdout: Some(stdout),
        group,
    })
}

/// A forked helper's process group, killed when the run times out or is dropped.
#[cfg(target_os = "linux")]
pub(super) struct KillGroup {
    pid: libc::pid_t,
    pub(super) pidfd: Option<OwnedFd>,
    armed: bool,
}

#[cfg(target_os = "linux")]
impl KillGroup {
    /// Kills the helper's whole group while the helper is known to be alive (its pidfd not
    /// yet readable), so the group id cannot have been reused; the helper itself through
    /// its pidfd in any case.
    fn kill(&mut self) {
        self.armed = false;
        match &self.pidfd {
            Some(fd) => {
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: poll on a local struct, signals on our own helper's pidfd and group.
                unsafe {
                    if libc::poll(&mut p, 1, 0) == 0 {
                        libc::killpg(self.pid, libc::SIGKILL);
                    }
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd.as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    );
                }
            }
            // SAFETY: signalling the helper's process group (a kernel without pidfds).
            None => unsafe {
                libc::killpg(self.pid, libc::SIGKILL);
            },
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for KillGroup {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

fn sandbox_failed(what: &str, e: std::io::Error) -> ScriptError {
    ScriptError::SandboxFailed {
        reason: format!("{what}: {e}"),
    }
}

/// What a process did.
pub(crate) struct Raw {
    pub(crate) exit: (i32, Option<i32>),
    pub(crate) timed_out: bool,
    pub(crate) output: Captured,
    pub(crate) ready: Option<String>,
}

#[derive(Default)]
struct CaptureBuf {
    kept: Vec<u8>,
    total: u64,
}

impl CaptureBuf {
    fn captured(&self) -> Captured {
        Captured {
            text: String::from_utf8_lossy(&self.kept).into_owned(),
            kept: self.kept.len() as u64,
            total: self.total,
        }
    }
}

/// Reads until end of file, keeping at most `cap` bytes and counting the rest: the pipe never
/// fills, so a chatty script cannot stall into a timeout.
async fn read_capped(
    stdout: Option<impl tokio::io::AsyncRead + Unpin>,
    cap: usize,
    buf: Arc<Mutex<CaptureBuf>>,
) {
    let Some(mut r) = stdout else { return };
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let Ok(mut b) = buf.lock() else { return };
                b.total += n as u64;
                let room = cap.saturating_sub(b.kept.len());
                let take = room.min(n);
                b.kept.extend_from_slice(&chunk[..take]);
            }
        }
    }
}

/// A close-on-exec pipe whose write end is numbered above the standard descriptors and
/// [`STATUS_FD`] (so `dup2` onto 3 never clobbers it).
pub(crate) fn status_pipe_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the array; the fds are then owned exactly once.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let r = OwnedFd::from_raw_fd(fds[0]);
        let w0 = OwnedFd::from_raw_fd(fds[1]);
        let w = libc::fcntl(w0.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
        if w < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The write end must block in the helper like any pipe.
        let w = OwnedFd::from_raw_fd(w);
        let flags = libc::fcntl(w.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(w.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        Ok((r, w))
    }
}

/// A close-on-exec duplicate numbered 10 or above (above every descriptor the helper is given).
fn high_dup(fd: &OwnedFd) -> std::io::Result<OwnedFd> {
    // SAFETY: fcntl on a live descriptor; the new one is owned exactly once.
    unsafe {
        let d = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
        if d < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(d))
    }
}

/// The helper for a request on its own: `HELPER_ARG`, an empty environment, cwd `/`, stdin
/// piped, stderr discarded, `status_w` as [`STATUS_FD`] and `policy` as [`POLICY_FD`].
#[cfg(all(target_os = "linux", feature = "guest"))]
pub(crate) fn helper_command(
    helper: &Path,
    status_w: &OwnedFd,
    policy: &OwnedFd,
    stdout: Stdio,
) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let (w, p) = (status_w.as_raw_fd(), policy.as_raw_fd());
    let mut cmd = std::process::Command::new(helper);
    cmd.arg(HELPER_ARG)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::null());
    // SAFETY: only dup2 between fork and exec (async-signal-safe, no allocation).
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(w, STATUS_FD) < 0 || libc::dup2(p, POLICY_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// The supervisor's and the helper's ends of the socket on which a run that makes its
/// workspace's bounded work directory hands it over ([`sandbox::WORKSPACE_SOCKET_FD`]).
#[cfg(target_os = "linux")]
pub(crate) fn work_socket() -> std::io::Result<(OwnedFd, OwnedFd)> {
    sandbox::linux::zygote::seqpacket()
}

/// The bounded work directory the helper reports on `ours` (see
/// [`sandbox::WORKSPACE_SOCKET_FD`]), each descriptor checked against what the message says;
/// awaited without a thread. `Ok(None)`: the helper ended without a word (the run failed
/// before it got there; the next run tries again). `Err`: why the work directory stays on disk.
#[cfg(target_os = "linux")]
pub(crate) async fn receive_work(
    ours: OwnedFd,
) -> Result<Option<super::workspace::BoundedWork>, String> {
    let mut text = [0u8; 4096];
    let (n, mut fds) = sandbox::linux::zygote::recv_fds_async(ours, &mut text, 3)
        .await
        .map_err(|e| format!("the sandbox helper's answer: {e}"))?;
    if n == 0 {
        return Ok(None);
    }
    let line = String::from_utf8_lossy(&text[..n]).into_owned();
    if let Some(why) = line.strip_prefix("error ") {
        return Err(why.to_string());
    }
    let bad = || format!("unexpected answer from the sandbox helper: {line:?}");
    let f: Vec<&str> = line.split_whitespace().collect();
    let num =
        |i: usize| -> Result<u64, String> { f.get(i).and_then(|v| v.parse().ok()).ok_or_else(bad) };
    let ident = |fd: &OwnedFd| sandbox::linux::identity(fd).map_err(|e| e.to_string());
    // "own DEV INO" + [root]: the tmpfs of a process's one run, in the run's namespaces.
    if f.first() == Some(&"own") && f.len() == 3 && fds.len() == 1 {
        let (dev, ino) = (num(1)?, num(2)?);
        let root = fds.pop().ok_or_else(bad)?;
        if ident(&root)? != (dev, ino) {
            return Err(bad());
        }
        return Ok(Some(super::workspace::BoundedWork {
            ns: None,
            root,
            inode: (dev, ino),
        }));
    }
    // "work DEV INO MNT_NS USER" + [mnt, user?, root]: the workspace's own namespaces.
    if f.first() != Some(&"work") || f.len() != 5 {
        return Err(bad());
    }
    let (dev, ino, mnt_ns, user) = (num(1)?, num(2)?, num(3)?, num(4)? == 1);
    if fds.len() != 2 + usize::from(user) {
        return Err(bad());
    }
    let root = fds.pop().ok_or_else(bad)?;
    let user = if user { fds.pop() } else { None };
    let mnt = fds.pop().ok_or_else(bad)?;
    if ident(&mnt)?.1 != mnt_ns || ident(&root)? != (dev, ino) {
        return Err(bad());
    }
    Ok(Some(super::workspace::BoundedWork {
        ns: Some(super::workspace::WorkNamespaces { mnt, user }),
        root,
        inode: (dev, ino),
    }))
}

/// The listening socket a proxied run's first process made inside its network namespace
/// ([`sandbox::PROXY_SOCKET_FD`]), checked to be a listening TCP socket; awaited without a
/// thread. `None`: the run ended (or failed) before it sent one.
#[cfg(target_os = "linux")]
pub(crate) async fn receive_listener(ours: OwnedFd) -> Option<std::net::TcpListener> {
    let mut text = [0u8; 16];
    let (n, mut fds) = sandbox::linux::zygote::recv_fds_async(ours, &mut text, 1)
        .await
        .ok()?;
    if n != 1 || text[0] != b'l' || fds.len() != 1 {
        return None;
    }
    let fd = fds.pop()?;
    let mut listening: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt on a live descriptor into a local of the size given.
    let ok = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&mut listening as *mut libc::c_int).cast(),
            &mut len,
        )
    } == 0;
    (ok && listening == 1).then(|| std::net::TcpListener::from(fd))
}

/// Off Linux no helper makes a work directory.
#[cfg(not(target_os = "linux"))]
pub(crate) async fn receive_work(
    _ours: OwnedFd,
) -> Result<Option<super::workspace::BoundedWork>, String> {
    Ok(None)
}

/// The policy in a sealed memfd numbered above [`STATUS_FD`] and [`POLICY_FD`] (so neither
/// `dup2` clobbers it), close-on-exec here; `dup2` onto [`POLICY_FD`] hands it to the helper.
#[cfg(target_os = "linux")]
pub(crate) fn policy_memfd(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    // SAFETY: memfd_create with a static name; the fds are then owned exactly once; writes come
    // from a live buffer.
    unsafe {
        let fd = libc::memfd_create(
            c"skillcat-policy".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let first = OwnedFd::from_raw_fd(fd);
        let mut f = std::fs::File::from(first);
        std::io::Write::write_all(&mut f, bytes)?;
        let seals =
            libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
        if libc::fcntl(f.as_raw_fd(), libc::F_ADD_SEALS, seals) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let high = libc::fcntl(f.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
        if high < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(high))
    }
}

/// The helper exists on Linux only.
#[cfg(not(target_os = "linux"))]
pub(crate) fn policy_memfd(_bytes: &[u8]) -> std::io::Result<OwnedFd> {
    Err(std::io::Error::other(
        "the sandbox helper exists only on Linux",
    ))
}

/// What is started: the program, its arguments and environment, whether it reports on the
/// status pipe (the helper), and the descriptor holding its policy.
struct Launch {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, String)>,
    status_pipe: bool,
    policy_fd: Option<OwnedFd>,
}

/// The helper with its policy on a descriptor (Linux), or the script itself, directly or under
/// `sandbox-exec` when confined (`direct`: elsewhere).
fn launch(helper: &Path, policy: &HelperPolicy, direct: bool) -> Result<Launch, ScriptError> {
    let mut policy_fd: Option<OwnedFd> = None;
    let (program, args, env, status_pipe) = if direct && policy.mode == Mode::Confined {
        let (exe, args) = sandbox::macos::command_line(policy);
        (
            exe,
            args.into_iter().map(OsString::from).collect(),
            policy.env.clone(),
            false,
        )
    } else if direct {
        (
            policy.program.clone(),
            policy.argv.iter().skip(1).map(OsString::from).collect(),
            policy.env.clone(),
            false,
        )
    } else {
        let json = HelperRequest::Run(policy.clone()).to_json().map_err(|e| {
            ScriptError::SandboxFailed {
                reason: format!("cannot serialise the policy: {e}"),
            }
        })?;
        // The policy (tool arguments included) goes on a descriptor, not on argv, where
        // every local user could read it.
        policy_fd = Some(policy_memfd(json.as_bytes()).map_err(|e| sandbox_failed("policy", e))?);
        (
            helper.to_path_buf(),
            vec![HELPER_ARG.into()],
            Vec::new(),
            true,
        )
    };

    Ok(Launch {
        program,
        args,
        env,
        status_pipe,
        policy_fd,
    })
}

/// In the child, between fork and exec: the descriptors moved to their numbers, and the
/// limits set when started directly. Only dup2 and setrlimit, which are async-signal-safe; it
/// allocates nothing.
fn in_child(
    status_w: Option<i32>,
    policy_r: Option<i32>,
    inherit_raw: &[(i32, i32)],
    rlimits: Option<RunLimits>,
) -> std::io::Result<()> {
    // SAFETY: dup2 on descriptor numbers.
    unsafe {
        // stdout and stderr share one pipe, so output keeps its order.
        if libc::dup2(1, 2) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(w) = status_w
            && libc::dup2(w, STATUS_FD) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(p) = policy_r
            && libc::dup2(p, POLICY_FD) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
        for &(fd, target) in inherit_raw {
            if libc::dup2(fd, target) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(l) = rlimits {
            set_rlimits(&l)?;
        }
    }
    Ok(())
}

/// Waits for the process until `remaining` has passed, then kills its whole group; its exit
/// status, and whether it timed out.
async fn wait_or_kill(
    child: &mut tokio::process::Child,
    pid: Option<libc::pid_t>,
    remaining: Duration,
) -> (std::io::Result<std::process::ExitStatus>, bool) {
    tokio::select! {
        biased;
        s = child.wait() => (s, false),
        _ = tokio::time::sleep(remaining) => {
            // Kill the whole group before reaping its leader, so the group id cannot have
            // been reused.
            if let Some(pid) = pid {
                // SAFETY: signalling a process group we created and have not reaped.
                unsafe { libc::killpg(pid, libc::SIGKILL) };
            }
            (child.wait().await, true)
        }
    }
}

/// What the status pipe said: the `ready` line and the exit the helper relayed (code, and
/// signal), or the error it reported.
#[allow(clippy::type_complexity)]
fn parse_status(
    lines: &[String],
) -> Result<(Option<String>, Option<(i32, Option<i32>)>), ScriptError> {
    let mut ready = None;
    let mut relayed = None;
    for line in lines {
        if let Some(rest) = line.strip_prefix("error ") {
            let (kind, msg) = rest.split_once(' ').unwrap_or((rest, ""));
            return Err(if kind == "unavailable" {
                ScriptError::SandboxUnavailable {
                    reason: msg.to_string(),
                }
            } else {
                ScriptError::SandboxFailed {
                    reason: msg.to_string(),
                }
            });
        } else if let Some(rest) = line.strip_prefix("ready ") {
            ready = Some(rest.to_string());
        } else if let Some(c) = line
            .strip_prefix("exit ")
            .and_then(|c| c.parse::<i32>().ok())
        {
            relayed = Some((c, None));
        } else if let Some(s) = line
            .strip_prefix("signal ")
            .and_then(|s| s.parse::<i32>().ok())
        {
            relayed = Some((128 + s, Some(s)));
        }
    }
    Ok((ready, relayed))
}

/// The run's exit (code, and signal): the one the helper relayed, else the process's own.
fn exit_of(
    relayed: Option<(i32, Option<i32>)>,
    exit_status: std::io::Result<std::process::ExitStatus>,
) -> Result<(i32, Option<i32>), ScriptError> {
    Ok(match relayed {
        Some(e) => e,
        None => {
            let st = exit_status.map_err(|e| sandbox_failed("waiting for the script", e))?;
            use std::os::unix::process::ExitStatusExt;
            match (st.code(), st.signal()) {
                (Some(c), _) => (c, None),
                (None, Some(s)) => (128 + s, Some(s)),
                _ => (255, None),
            }
        }
    })
}

/// Reads the status pipe once every writer is gone.
pub(crate) fn read_status(r: OwnedFd) -> Vec<String> {
    use std::io::Read;
    let mut f = std::fs::File::from(r);
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    while bytes.len() < 1 << 20 {
        match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Sets the run's rlimits on the calling process (the direct-spawn path; the Linux helper sets
/// its own). Async-signal-safe.
fn set_rlimits(l: &RunLimits) -> std::io::Result<()> {
    let set = |res, soft: u64, hard: u64| -> std::io::Result<()> {
        let lim = libc::rlimit {
            rlim_cur: soft as libc::rlim_t,
            rlim_max: hard as libc::rlim_t,
        };
        // SAFETY: setrlimit reads a live local.
        if unsafe { libc::setrlimit(res, &lim) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    set(
        libc::RLIMIT_CPU,
        l.cpu_seconds,
        l.cpu_seconds.saturating_add(1),
    )?;
    set(libc::RLIMIT_AS, l.address_space, l.address_space)?;
    set(libc::RLIMIT_FSIZE, l.file_size, l.file_size)?;
    set(libc::RLIMIT_NOFILE, l.open_files, l.open_files)?;
    set(libc::RLIMIT_CORE, 0, 0)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::ends_the_run;

    /// What the helper says of the work directory it made is taken only as it says it: `own`
    /// with exactly the one descriptor whose identity it names (a process's one run), `work`
    /// with its namespaces, an error as the reason, a closed socket as nothing made; any other
    /// shape, count of descriptors or identity is refused.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_work_directory_answer_is_taken_only_as_it_says() {
        use crate::script::sandbox::linux::{identity, zygote::send_with_fds};
        use std::os::fd::{AsRawFd, OwnedFd};
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let open = |p: &std::path::Path| OwnedFd::from(std::fs::File::open(p).unwrap());
        let (root, elsewhere) = (open(dir.path()), open(other.path()));
        let (dev, ino) = identity(&root).unwrap();
        let (r, e) = (root.as_raw_fd(), elsewhere.as_raw_fd());
        let answer = |text: String, fds: Vec<i32>| async move {
            let (ours, theirs) = super::work_socket().unwrap();
            if !text.is_empty() {
                send_with_fds(&theirs, text.as_bytes(), &fds).unwrap();
            }
            drop(theirs);
            super::receive_work(ours).await
        };
        let own = format!("own {dev} {ino}");
        let made = answer(own.clone(), vec![r]).await.unwrap().unwrap();
        assert!(
            made.ns.is_none(),
            "a one-run work directory has no namespaces to join"
        );
        assert_eq!(made.inode, (dev, ino));
        assert_eq!(identity(&made.root).unwrap(), (dev, ino));

        assert_eq!(
            answer(String::new(), vec![])
                .await
                .unwrap()
                .map(|m| m.inode),
            None
        );
        assert_eq!(
            answer("error the kernel said no".into(), vec![])
                .await
                .unwrap_err(),
            "the kernel said no"
        );
        for (text, fds) in [
            (own.clone(), vec![e]),
            (own.clone(), vec![]),
            (own.clone(), vec![r, r]),
            (format!("own {dev}"), vec![r]),
            (format!("own {dev} {ino} 1"), vec![r]),
            (format!("work {dev} {ino} 1 0"), vec![r]),
            (format!("mine {dev} {ino}"), vec![r]),
        ] {
            let got = answer(text.clone(), fds).await;
            let err = got.map(|m| m.map(|m| m.inode)).unwrap_err();
            assert!(err.starts_with("unexpected answer"), "{text:?}: {err}");
        }
    }

    /// The status is read to the helper's last word and no further: a whole `exit` or
    /// `signal` line, never a part of one or another line that merely contains the word.
    #[test]
    fn the_status_ends_at_the_line_that_says_how_the_script_ended() {
        assert!(!ends_the_run(b""));
        assert!(!ends_the_run(b"ready landlock (kernel ABI 7)\n"));
        assert!(!ends_the_run(b"ready x\nexit 0"), "a line not yet ended");
        assert!(!ends_the_run(b"error failed the run's root: exit 1\n"));
        assert!(ends_the_run(b"ready x\nexit 0\n"));
        assert!(ends_the_run(b"ready x\nsignal 9\n"));
        assert!(ends_the_run(b"exit 3\n"));
    }
}
