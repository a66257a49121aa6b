//! The zygote: a small single-threaded process forked from the host at the top of `main`
//! (before any thread), from which each run's sandbox helper is forked — no second `execve` of
//! a large binary, no second start of its runtime.
//!
//! ```text
//! host (before any thread) ──fork──▶ zygote (one thread, SOCK_SEQPACKET to the host)
//!   per run: "run <targets>\n<cwd>" + SCM_RIGHTS [reply, stdout, status, policy, inherited…]
//!                                      ──fork──▶ helper: own process group, fds at their
//!                                                 numbers, chdir, then exactly the re-executed
//!                                                 helper's code (`linux::helper`)
//!   ◀── on the reply socket: "pid N" + a pidfd of the helper (or "error …")
//!   once (`skillcat run`): "clean\n<base>" + SCM_RIGHTS [reply, a pipe's read end]
//!                                      ──fork──▶ cleaner: own session, no death signal; at
//!                                                the pipe's end-of-file (the host exited)
//!                                                it cleans the base (`reaper::clean_base`)
//! ```
//!
//! Death chain: the zygote dies with the host (`PR_SET_PDEATHSIG`, then `getppid` checked),
//! each helper dies with the zygote (the same, in the helper right after the fork, and again by
//! the helper's own backstops, which check for the zygote's pid), each script with its helper
//! (PID 1 of its PID namespace, `PR_SET_PDEATHSIG`). The zygote never runs a script and keeps
//! nothing a run could change: what it prepares (the compiled seccomp programs) is data every
//! helper gets a private copy of at its fork.
//!
//! Where the zygote cannot start, or has died, runs fall back to re-executing the binary.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::super::{POLICY_FD, SETUP_FAILED, STATUS_FD};

/// The most descriptors one request carries: the reply socket, stdout, the status pipe, the
/// policy, and the inherited ones (workspace namespaces, the work and proxy sockets).
const MAX_FDS: usize = 12;

/// The descriptor the zygote keeps its socket on (every other one above 2 is closed).
const SOCKET_FD: libc::c_int = 3;

/// The signals a terminal or a service manager sends to a whole process group.
const GROUP_SIGNALS: [libc::c_int; 5] = [
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGHUP,
    libc::SIGTERM,
    libc::SIGTSTP,
];

/// The host's handle on its zygote.
struct Handle {
    /// The host's end of the request socket.
    sock: OwnedFd,
    /// The zygote's pid (each helper's parent).
    pid: libc::pid_t,
    /// The binary the zygote is a fork of: only a run asking for this helper goes through it.
    exe: Option<PathBuf>,
    /// Set when a request failed: later runs re-execute the binary.
    dead: AtomicBool,
}

static ZYGOTE: OnceLock<Handle> = OnceLock::new();

/// Forks the zygote. The caller must have a single thread (checked in `/proc/self/task`), and
/// that thread must live as long as the process: the zygote dies when it ends.
pub(in crate::script) fn start() -> io::Result<u32> {
    if ZYGOTE.get().is_some() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the zygote is already started",
        ));
    }
    let threads = std::fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(io::Error::other(format!(
            "the zygote must be forked before any thread starts ({threads} threads run)"
        )));
    }
    let exe = std::env::current_exe().ok();
    let (ours, theirs) = seqpacket()?;
    // SAFETY: getpid has no preconditions; fork in a single-threaded process.
    let parent = unsafe { libc::getpid() };
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        drop(ours);
        zygote_main(theirs, parent);
    }
    drop(theirs);
    // Above the standard descriptors, even when the host was started with one closed (what
    // it then writes there must not reach the zygote).
    let ours = match ours.as_raw_fd() {
        0..=2 => {
            // SAFETY: fcntl on a live descriptor; the duplicate is owned once.
            let high = unsafe { libc::fcntl(ours.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
            if high < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a fresh descriptor.
            unsafe { OwnedFd::from_raw_fd(high) }
        }
        _ => ours,
    };
    let _ = ZYGOTE.set(Handle {
        sock: ours,
        pid,
        exe,
        dead: AtomicBool::new(false),
    });
    Ok(pid as u32)
}

/// The zygote's pid, when runs of `helper` may be forked from it.
pub(crate) fn usable(helper: &Path) -> Option<u32> {
    let z = ZYGOTE.get()?;
    if z.dead.load(Ordering::Relaxed) {
        return None;
    }
    // The default helper is `current_exe()` itself: equal without a look at the disk.
    let same = match &z.exe {
        Some(exe) if exe == helper => true,
        Some(exe) => match (std::fs::canonicalize(exe), std::fs::canonicalize(helper)) {
            (Ok(e), Ok(h)) => e == h,
            _ => false,
        },
        None => false,
    };
    same.then_some(z.pid as u32)
}

/// Stops using the zygote (it failed a request): it is killed and reaped, and later runs
/// re-execute the binary.
fn give_up(z: &Handle) {
    if !z.dead.swap(true, Ordering::Relaxed) {
        // SAFETY: killing and reaping our own child.
        unsafe {
            libc::kill(z.pid, libc::SIGKILL);
            libc::waitpid(z.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// The descriptors of one run, as the helper gets them.
pub(in crate::script) struct Request<'a> {
    /// The helper's stdout, and its stderr unless `quiet`.
    pub stdout: &'a OwnedFd,
    /// Its stdin (`/dev/null` when `None`).
    pub stdin: Option<&'a OwnedFd>,
    /// Its stderr goes to `/dev/null`, not to `stdout`.
    pub quiet: bool,
    /// The status pipe's write end ([`STATUS_FD`]).
    pub status: &'a OwnedFd,
    /// The policy ([`POLICY_FD`]).
    pub policy: &'a OwnedFd,
    /// Descriptors at the numbers given.
    pub inherit: &'a [(&'a OwnedFd, i32)],
    /// The helper's working directory.
    pub cwd: &'a Path,
    /// The last request of a process that makes one run: the zygote serves it itself, as the
    /// helper (no fork), and serves nothing after it.
    pub once: bool,
}

/// A helper the zygote forked.
pub(in crate::script) struct Forked {
    /// Its pid (and process group).
    pub pid: libc::pid_t,
    /// A pidfd of it, where the kernel has them.
    pub pidfd: Option<OwnedFd>,
}

/// Sends a run to the zygote; the helper it forked, or `None` when the zygote is gone or
/// failed (it is then not used again, and the caller re-executes the binary). Waits for the
/// zygote's answer (it forks at once).
pub(in crate::script) async fn fork_helper(req: Request<'_>) -> Option<Forked> {
    let z = ZYGOTE.get()?;
    let (reply, theirs) = seqpacket().ok()?;
    let mut text = b"run".to_vec();
    if req.once {
        text.extend_from_slice(b" once");
    }
    if req.stdin.is_some() {
        text.extend_from_slice(b" stdin");
    }
    if req.quiet {
        text.extend_from_slice(b" quiet");
    }
    for (_, target) in req.inherit {
        text.extend_from_slice(format!(" {target}").as_bytes());
    }
    text.push(b'\n');
    text.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(req.cwd.as_os_str()));
    let mut fds = vec![
        theirs.as_raw_fd(),
        req.stdout.as_raw_fd(),
        req.status.as_raw_fd(),
        req.policy.as_raw_fd(),
    ];
    fds.extend(req.stdin.map(|fd| fd.as_raw_fd()));
    fds.extend(req.inherit.iter().map(|(fd, _)| fd.as_raw_fd()));
    if send_with_fds(&z.sock, &text, &fds).is_err() {
        give_up(z);
        return None;
    }
    drop(theirs);
    let mut buf = [0u8; 64];
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        recv_fds_async(reply, &mut buf, 1),
    )
    .await;
    let parsed = match answer {
        Ok(Ok((n, mut fds))) => std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(|t| t.strip_prefix("pid "))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
            .filter(|&p| p > 0)
            .map(|pid| Forked {
                pid,
                pidfd: fds.pop(),
            }),
        _ => None,
    };
    if parsed.is_none() {
        give_up(z);
    }
    parsed
}

/// Asks the zygote to make the namespaces of this process's one run while the process gets
/// the run ready (`premade`): no answer, nothing waited for. Nothing happens without a zygote.
pub(in crate::script) fn premake() {
    if let Some(z) = ZYGOTE.get()
        && !z.dead.load(Ordering::Relaxed)
        && send_with_fds(&z.sock, b"premake\n", &[]).is_err()
    {
        give_up(z);
    }
}

/// Asks the zygote for a cleaner of the workspace base `base`: a process forked from it that
/// outlives this one, waits until `exited` (a pipe's read end whose write end only this
/// process holds) reads end-of-file — this process has exited, however — and then removes
/// what its runs left (`reaper::clean_base`). Returns the socket the answer comes on
/// ([`cleaner_started`]), or `None` when the zygote is not usable.
pub(in crate::script) fn fork_cleaner(
    helper: &Path,
    base: &Path,
    exited: OwnedFd,
) -> Option<OwnedFd> {
    usable(helper)?;
    let z = ZYGOTE.get()?;
    let (reply, theirs) = seqpacket().ok()?;
    let mut text = b"clean\n".to_vec();
    text.extend_from_slice(base.as_os_str().as_bytes());
    if send_with_fds(&z.sock, &text, &[theirs.as_raw_fd(), exited.as_raw_fd()]).is_err() {
        give_up(z);
        return None;
    }
    Some(reply)
}

/// Whether the zygote answered [`fork_cleaner`] with a cleaner's pid (waiting at most 2 s: it
/// forks at once, and by the end of a run the answer has long been there).
pub(in crate::script) fn cleaner_started(reply: &OwnedFd) -> bool {
    let mut pfd = libc::pollfd {
        fd: reply.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one live descriptor described by a local struct.
    if unsafe { libc::poll(&mut pfd, 1, 2000) } != 1 {
        return false;
    }
    let mut buf = [0u8; 64];
    match recv_fds(reply, &mut buf, 1, libc::MSG_DONTWAIT) {
        Ok((n, _)) => buf[..n].starts_with(b"pid "),
        Err(_) => false,
    }
}

/// A `SOCK_SEQPACKET` pair, close-on-exec: the zygote's request socket, and a run's workspace
/// and proxy hand-over sockets.
pub(crate) fn seqpacket() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair into a local array; each descriptor is then owned exactly once.
    unsafe {
        if libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// One message with descriptors (`SCM_RIGHTS`); never raises SIGPIPE.
pub(crate) fn send_with_fds(sock: &OwnedFd, text: &[u8], fds: &[libc::c_int]) -> io::Result<()> {
    let fd_bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE is a size computation.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as libc::c_uint) } as usize;
    let mut control = vec![0u8; space.max(1)];
    // SAFETY: sendmsg from live local buffers described by the header; the control message is
    // laid out by the CMSG macros within `control`.
    let n = unsafe {
        let mut iov = libc::iovec {
            iov_base: text.as_ptr() as *mut libc::c_void,
            iov_len: text.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = space as _;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(fd_bytes as libc::c_uint) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(c), fd_bytes);
        }
        libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One message into `text` and the descriptors (at most `max`) it carries as `SCM_RIGHTS`,
/// each owned once (close-on-exec); a call a signal interrupted is made again. 0 bytes: the
/// peer is gone. The one receiver of descriptors of the sandbox (the zygote's requests and
/// replies, a run's workspace and proxy sockets).
pub(crate) fn recv_fds(
    sock: &OwnedFd,
    text: &mut [u8],
    max: usize,
    flags: libc::c_int,
) -> io::Result<(usize, Vec<OwnedFd>)> {
    let fd_size = std::mem::size_of::<libc::c_int>();
    // SAFETY: CMSG_SPACE is a size computation.
    let mut control =
        vec![0u8; unsafe { libc::CMSG_SPACE((max * fd_size) as libc::c_uint) } as usize];
    let mut fds = Vec::new();
    // SAFETY: recvmsg into live local buffers described by the header; every descriptor the
    // control message carries is taken into an OwnedFd exactly once.
    let n = unsafe {
        let mut iov = libc::iovec {
            iov_base: text.as_mut_ptr().cast(),
            iov_len: text.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() as _;
        let n = loop {
            let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, flags | libc::MSG_CMSG_CLOEXEC);
            if n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        };
        if n >= 0 {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                    let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / fd_size;
                    for i in 0..count {
                        fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        n
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, fds))
}

/// [`recv_fds`] awaited on the async runtime, with no thread blocked for it: the next message
/// on `sock` (which this takes) and the descriptors it carries; `(0, [])` once the other end
/// is closed.
pub(crate) async fn recv_fds_async(
    sock: OwnedFd,
    text: &mut [u8],
    max: usize,
) -> io::Result<(usize, Vec<OwnedFd>)> {
    // SAFETY: the AsyncFd owns the descriptor for its whole life.
    let sock = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(sock, tokio::io::Interest::READABLE)
    }
    .map_err(|e| e.into_parts().1)?;
    loop {
        let mut guard = sock.readable().await?;
        match guard.try_io(|fd| recv_fds(fd.get_ref(), text, max, libc::MSG_DONTWAIT)) {
            Ok(r) => return r,
            Err(_would_block) => continue,
        }
    }
}

/// The zygote's life: bound to the host's, its descriptors and environment reduced to its
/// socket, then one fork per request until the host closes the socket.
fn zygote_main(sock: OwnedFd, parent: libc::pid_t) -> ! {
    // SAFETY: prctl, getppid, open, dup2, chdir and close_range on integers and static strings;
    // this process has a single thread.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != parent {
            libc::_exit(0);
        }
        libc::prctl(libc::PR_SET_NAME, c"skillcat-zygote".as_ptr(), 0, 0, 0);
        let raw = sock.into_raw_fd();
        if raw != SOCKET_FD {
            libc::dup2(raw, SOCKET_FD);
            libc::close(raw);
        }
        libc::fcntl(SOCKET_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        // Nothing of the host's stays open here: not its terminal, pipes or files.
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        close_from(SOCKET_FD as libc::c_uint + 1);
        libc::chdir(c"/".as_ptr());
        // The kernel reaps the helpers: the host follows each through its status pipe and a
        // pidfd.
        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
        // What a terminal or a service manager sends the host's whole group is the host's to
        // act on: the zygote ends when the host does (its parent-death signal), not before.
        for sig in GROUP_SIGNALS {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    blank_arguments();
    // A helper's environment is the policy's, never the host's.
    for (k, _) in std::env::vars_os() {
        // SAFETY: this process has a single thread.
        unsafe { std::env::remove_var(k) };
    }
    super::prepare_shared();
    // SAFETY: the descriptor moved to SOCKET_FD above.
    let sock = unsafe { OwnedFd::from_raw_fd(SOCKET_FD) };
    let mut buf = vec![0u8; 8192];
    loop {
        match recv_fds(&sock, &mut buf, MAX_FDS, 0) {
            Ok((0, _)) => break,
            Ok((n, fds)) => serve(&buf[..n], fds),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(_) => break,
        }
    }
    // SAFETY: leaving without running the host's exit handlers.
    unsafe { libc::_exit(0) }
}

/// Blanks every argument after `argv[0]` in this process's command line (the memory
/// `/proc/PID/cmdline` shows, as `setproctitle` does): the host's arguments (`skillcat run …
/// --args …`) are not repeated in the zygote's and every helper's, which show the program
/// alone. Nothing here reads the arguments again.
fn blank_arguments() {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return;
    };
    // After the name (which may hold spaces), field 3 on; `arg_start` and `arg_end` are
    // fields 48 and 49.
    let Some(close) = stat.rfind(')') else { return };
    let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
    let field = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|v| v.trim().parse::<usize>().ok())
    };
    let (Some(start), Some(end)) = (field(48), field(49)) else {
        return;
    };
    if start == 0 || end <= start {
        return;
    }
    // SAFETY: [arg_start, arg_end) is this process's own argument area, mapped and writable
    // (the initial stack); no Rust value borrows it (std copies the arguments it hands out),
    // and this process has a single thread.
    let area = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    if let Some(first) = area.iter().position(|&b| b == 0) {
        area[first..].fill(0);
    }
}

/// One request: forks the helper and answers with its pid and a pidfd.
fn serve(text: &[u8], mut fds: Vec<OwnedFd>) {
    let Some(nl) = text.iter().position(|&b| b == b'\n') else {
        return;
    };
    let head = String::from_utf8_lossy(&text[..nl]).into_owned();
    let cwd = text[nl + 1..].to_vec();
    let mut words = head.split(' ').peekable();
    match words.next() {
        Some("run") => {}
        Some("clean") => return serve_cleaner(&cwd, fds),
        Some("premake") => return super::premade::make(),
        _ => return,
    }
    let once = words.next_if_eq(&"once").is_some();
    let stdin = words.next_if_eq(&"stdin").is_some();
    let quiet = words.next_if_eq(&"quiet").is_some();
    let Some(targets) = words.map(|w| w.parse().ok()).collect::<Option<Vec<i32>>>() else {
        return;
    };
    if fds.len() != 4 + usize::from(stdin) + targets.len() {
        return;
    }
    let reply = fds.remove(0);
    let Ok(cwd) = std::ffi::CString::new(cwd) else {
        let _ = send_with_fds(&reply, b"error a NUL byte in the directory", &[]);
        return;
    };
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    if once {
        // A process's one run: the zygote becomes its helper, a fork and a process fewer on
        // the run's path. Its parent, the host, is then the helper's, as for a re-executed one.
        answer_pid(&reply, me);
        drop(reply);
        // SAFETY: getppid has no preconditions.
        let host = unsafe { libc::getppid() };
        helper_child(fds, (stdin, quiet), &targets, &cwd, host);
    }
    let Some(pid) = fork_or_answer(&reply) else {
        return;
    };
    if pid == 0 {
        drop(reply);
        helper_child(fds, (stdin, quiet), &targets, &cwd, me);
    }
    // What was made ahead for a run is this helper's alone.
    super::premade::forget();
    answer_pid(&reply, pid);
}

/// Answers a run's request with the helper's pid and a pidfd of it (none where the kernel has
/// no pidfds).
fn answer_pid(reply: &OwnedFd, pid: libc::pid_t) {
    // SAFETY: pidfd_open on our own child or ourselves; the descriptor is owned once.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd as libc::c_int) });
    let raw: Vec<libc::c_int> = pidfd.iter().map(|f| f.as_raw_fd()).collect();
    let _ = send_with_fds(reply, format!("pid {pid}").as_bytes(), &raw);
}

/// Forks this (single-threaded) zygote: the child's 0 or the child's pid, or `None` when the
/// fork failed, which is then said on `reply`.
fn fork_or_answer(reply: &OwnedFd) -> Option<libc::pid_t> {
    // SAFETY: fork in this single-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = io::Error::last_os_error();
        let _ = send_with_fds(reply, format!("error fork: {e}").as_bytes(), &[]);
        return None;
    }
    Some(pid)
}

/// A cleaner request: forks the cleaner and answers with its pid.
fn serve_cleaner(base: &[u8], mut fds: Vec<OwnedFd>) {
    if fds.len() != 2 {
        return;
    }
    let exited = fds.pop().expect("two descriptors");
    let reply = fds.pop().expect("two descriptors");
    let base = PathBuf::from(std::ffi::OsStr::from_bytes(base));
    let Some(pid) = fork_or_answer(&reply) else {
        return;
    };
    if pid == 0 {
        drop(reply);
        // SAFETY: setsid and close on integers; single-threaded. No parent-death signal: this
        // process is meant to outlive the zygote and the host. Its own session: a terminal's
        // hang-up or a group's signal is not its (the zygote ignores them, and so does it).
        unsafe {
            libc::setsid();
            libc::close(SOCKET_FD);
            libc::prctl(libc::PR_SET_NAME, c"skillcat-clean".as_ptr(), 0, 0, 0);
        }
        let mut buf = [0u8; 16];
        loop {
            // SAFETY: read into a local buffer from a descriptor this process owns.
            let n = unsafe { libc::read(exited.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 || (n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)) {
                continue;
            }
            break;
        }
        drop(exited);
        crate::script::reaper::clean_base(&base);
        // SAFETY: leaving without the host's exit handlers.
        unsafe { libc::_exit(0) }
    }
    let _ = send_with_fds(&reply, format!("pid {pid}").as_bytes(), &[]);
}

/// The forked helper: bound to the zygote, its descriptors at their numbers, in its own
/// process group and working directory; then the helper's code, as if re-executed.
fn helper_child(
    fds: Vec<OwnedFd>,
    (stdin, quiet): (bool, bool),
    targets: &[i32],
    cwd: &std::ffi::CStr,
    zygote: libc::pid_t,
) -> ! {
    // SAFETY: system calls on integers and live C strings; single-threaded.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != zygote {
            libc::_exit(SETUP_FAILED as i32);
        }
        // A helper starts with the dispositions a re-executed one has: ignored signals would
        // pass to the script through its execve.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        for sig in GROUP_SIGNALS {
            libc::signal(sig, libc::SIG_DFL);
        }
        libc::setpgid(0, 0);
        // Above every target first, so no dup2 clobbers another's source.
        let high: Vec<libc::c_int> = fds
            .into_iter()
            .map(|f| {
                let raw = f.into_raw_fd();
                let h = libc::fcntl(raw, libc::F_DUPFD, 64);
                libc::close(raw);
                h
            })
            .collect();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        let input = if stdin { high[3] } else { null };
        let mut ok = null >= 0 && libc::dup2(input, 0) == 0;
        ok &= libc::dup2(high[0], 1) == 1;
        ok &= libc::dup2(if quiet { null } else { high[0] }, 2) == 2;
        ok &= libc::dup2(high[1], STATUS_FD) == STATUS_FD;
        ok &= libc::dup2(high[2], POLICY_FD) == POLICY_FD;
        let inherited = &high[3 + usize::from(stdin)..];
        for (fd, &target) in inherited.iter().zip(targets) {
            ok &= libc::dup2(*fd, target) == target;
        }
        // The namespaces made ahead of this run, above every number a request places.
        super::premade::hand_to_helper();
        close_from(super::premade::LAST_FD as libc::c_uint + 1);
        if !ok {
            libc::_exit(SETUP_FAILED as i32);
        }
        if libc::chdir(cwd.as_ptr()) != 0 {
            let e = io::Error::last_os_error();
            let line = format!(
                "error unavailable cannot enter {}: {e}\n",
                cwd.to_string_lossy()
            );
            libc::write(STATUS_FD, line.as_ptr().cast(), line.len());
            libc::_exit(SETUP_FAILED as i32);
        }
    }
    let code = super::helper();
    // SAFETY: leaving the forked helper without the zygote's exit handlers.
    unsafe { libc::_exit(code as i32) }
}

/// Closes every descriptor from `first` up.
fn close_from(first: libc::c_uint) {
    // SAFETY: close_range on integers.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) };
    if r != 0 {
        // Kernels before 5.9: walk the table.
        for fd in first as libc::c_int..4096 {
            // SAFETY: closing a descriptor number (EBADF when not open).
            unsafe { libc::close(fd) };
        }
    }
}
