//! The Linux sandbox helper: the single-threaded process that confines itself and `execve`s the
//! interpreter.
//!
//! Order of operations (fail closed; every step that allocates happens before the fork):
//!
//! 1. **Prepare** (helper): parse the policy; check Landlock; open every rule's path and build
//!    the Landlock ruleset; compile the seccomp filters; build argv/envp as C strings.
//! 2. **Identity** (helper, root only): drop supplementary groups.
//! 3. **Isolate**: `clone(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS [|
//!    CLONE_NEWNET])`, so the
//!    child is PID 1 of a new PID namespace: when it exits the kernel kills everything left in it.
//!    Where user namespaces are refused, a root helper retries without `CLONE_NEWUSER`, anyone
//!    else falls back to a plain fork (the gap is reported in the `ready` summary).
//! 4. **Id maps** (helper): `setgroups deny`, `uid_map`/`gid_map` mapping uid/gid 65534 inside to
//!    an unprivileged host id ([`RUN_HOST_ID`] for a root host, the host user otherwise); then
//!    release the child through a pipe and wait for it.
//! 5. **Child**: `PR_SET_PDEATHSIG(SIGKILL)`; wait for the release; the run's own root
//!    (`root.rs`: only the rules' paths, read rules read-only, its own procfs, the write grants'
//!    protected paths read-only, `pivot_root`); a root helper's child
//!    `setresgid`/`setresuid` to 65534 (never root, not even inside the namespace; a non-root
//!    helper's child is 65534 inside already); rlimits (CPU above the wall timeout, AS,
//!    FSIZE, NOFILE, CORE 0, NPROC counted in the user namespace, or on top of the user's own
//!    tasks where there is none); close-on-exec every fd above 2;
//!    umask 077; drop every capability (bounding, ambient, effective/permitted/inheritable);
//!    Landlock `restrict_self` (sets no_new_privs; `NotEnforced` refuses); seccomp (the x32 /
//!    `clone3` guard, then the main filter); report `ready`; `execve`.
//! 6. **Relay** (helper): `exit N` / `signal S` on the status pipe; without a PID namespace it then
//!    kills its whole process group (itself included) so no background child survives.

pub mod cgroup;
mod idmap;
mod landlock;
mod premade;
mod root;
mod seccomp;
mod work;
pub(crate) mod zygote;

pub use seccomp::{Verdict, kernel_exempt, reviewed};

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;

use super::{
    FsAccess, FsRule, HelperPolicy, HelperRequest, JoinWorkspace, Mode, NetMode, POLICY_FD,
    POLICY_MAX, PROXY_PORT, PROXY_SOCKET_FD, RELEASE_FD, RUN_HOST_ID, Release, SANDBOX_ID,
    SETUP_FAILED, STATUS_FD, WORKSPACE_SOCKET_FD,
};

/// The Landlock ABI of the running kernel (`None`: not built in or disabled).
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute, size 0 and the VERSION flag the call only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as u32)
}

/// Opens `path` (`O_PATH`) without following a symbolic link in any of its components.
pub fn open_no_symlinks(path: &std::path::Path) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("a NUL byte in a path"))?;
    /// `struct open_how` of openat2(2) (libc's is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: a C string and a live open_how of the size given; the descriptor is owned once.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::ELOOP) {
            io::Error::other(
                "a symbolic link is on the way (the path changed after it was checked)",
            )
        } else {
            e
        });
    }
    // SAFETY: a fresh descriptor.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// The device and inode of an open file.
pub fn identity(fd: &impl std::os::fd::AsRawFd) -> io::Result<(u64, u64)> {
    fstat(fd).map(|st| (st.st_dev, st.st_ino))
}

/// `fstat(2)` of an open file.
fn fstat(fd: &impl std::os::fd::AsRawFd) -> io::Result<libc::stat> {
    // SAFETY: fstat on a live descriptor into a zeroed local.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd.as_raw_fd(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }
}

/// The status pipe (fd 3).
struct Status;

impl Status {
    fn line(&self, s: &str) {
        let mut buf = Vec::with_capacity(s.len() + 1);
        buf.extend_from_slice(s.as_bytes());
        buf.push(b'\n');
        // One write: lines under PIPE_BUF are atomic. Errors are ignored (nobody is listening).
        // SAFETY: writing a live buffer to an fd; a closed fd only returns EBADF.
        unsafe {
            libc::write(STATUS_FD, buf.as_ptr().cast(), buf.len());
        }
    }

    fn error(&self, kind: &str, msg: &str) -> u8 {
        self.line(&format!("error {kind} {}", msg.replace('\n', " ")));
        SETUP_FAILED
    }
}

/// Runs the helper; returns its exit code (on success the script replaces the child, and the
/// helper returns the script's status).
pub(super) fn helper() -> u8 {
    let status = Status;
    let bytes = match read_policy() {
        Ok(b) => b,
        Err(e) => return status.error("failed", &format!("no policy on fd {POLICY_FD}: {e}")),
    };
    let request: HelperRequest = match serde_json::from_slice(&bytes) {
        Ok(p) => p,
        Err(e) => return status.error("failed", &format!("bad policy: {e}")),
    };
    match request {
        HelperRequest::Run(policy) => match policy.mode {
            Mode::Confined => confined(&policy, &status),
            Mode::Unconfined => unconfined(&policy, &status),
        },
    }
}

/// Reads the policy from [`POLICY_FD`] (from its start, whatever its offset) and closes it, so
/// nothing the script could inherit holds it.
fn read_policy() -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let result = loop {
        // SAFETY: reading into a live buffer of the given length.
        let n = unsafe {
            libc::pread(
                POLICY_FD,
                chunk.as_mut_ptr().cast(),
                chunk.len(),
                bytes.len() as libc::off_t,
            )
        };
        match n {
            0 => break Ok(()),
            n if n > 0 => {
                bytes.extend_from_slice(&chunk[..n as usize]);
                if bytes.len() > POLICY_MAX {
                    break Err(io::Error::other("the policy is too large"));
                }
            }
            _ => {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    break Err(e);
                }
            }
        }
    };
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(POLICY_FD) };
    result.map(|()| bytes)
}

/// argv and envp as C arrays, built before forking.
struct Exec {
    program: CString,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _env: Vec<CString>,
    env_ptrs: Vec<*const libc::c_char>,
}

impl Exec {
    fn new(p: &HelperPolicy) -> Result<Self, String> {
        let c = |s: &[u8]| {
            CString::new(s).map_err(|_| "a NUL byte in argv or the environment".to_string())
        };
        let program = c(p.program.as_os_str().as_bytes())?;
        let argv: Vec<CString> = p
            .argv
            .iter()
            .map(|a| c(a.as_bytes()))
            .collect::<Result<_, _>>()?;
        let env: Vec<CString> = p
            .env
            .iter()
            .map(|(k, v)| c(format!("{k}={v}").as_bytes()))
            .collect::<Result<_, _>>()?;
        if argv.is_empty() {
            return Err("empty argv".into());
        }
        let mut argv_ptrs: Vec<_> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let mut env_ptrs: Vec<_> = env.iter().map(|a| a.as_ptr()).collect();
        env_ptrs.push(std::ptr::null());
        Ok(Exec {
            program,
            _argv: argv,
            argv_ptrs,
            _env: env,
            env_ptrs,
        })
    }

    /// Replaces the process; returns only on failure.
    fn exec(&self) -> io::Error {
        // SAFETY: all three pointers stay valid (owned by self) and the arrays are
        // NULL-terminated.
        unsafe {
            libc::execve(
                self.program.as_ptr(),
                self.argv_ptrs.as_ptr(),
                self.env_ptrs.as_ptr(),
            )
        };
        io::Error::last_os_error()
    }
}

/// Which namespaces the child got.
#[derive(Debug, Clone, Copy, Default)]
struct Ns {
    user: bool,
    pid: bool,
    net: bool,
    /// A mount namespace of its own: the run's root is built ([`root::build`]).
    mnt: bool,
}

/// Moves the helper into the run's control group (every hierarchy's `cgroup.procs`), before it
/// makes anything: every process of the run is then counted by the kernel, and none can leave
/// (the script has no write access to any cgroup file, and no capability).
fn join_cgroup(policy: &HelperPolicy) -> Result<(), String> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() }.to_string();
    for file in &policy.cgroup {
        // A v1 `tasks` file moves one thread, `0` the caller: this single-threaded helper,
        // without the global lock a whole thread group's move takes (see `RunGroup::join_files`).
        let me = if file.file_name().is_some_and(|n| n == "tasks") {
            "0"
        } else {
            pid.as_str()
        };
        std::fs::write(file, me)
            .map_err(|e| format!("joining the run's cgroup {}: {e}", file.display()))?;
    }
    Ok(())
}

/// The seccomp programs every run shares, compiled once in the zygote (one per network mode,
/// for this host's uid): plain data each forked helper gets its own copy of.
static FILTERS: std::sync::OnceLock<Vec<(NetMode, bool, seccomp::Filters)>> =
    std::sync::OnceLock::new();

/// Prepares in the zygote what every run shares (the compiled seccomp programs); a program
/// that does not compile is left to each run, which then reports why.
fn prepare_shared() {
    // SAFETY: geteuid has no preconditions.
    let shared_uid = unsafe { libc::geteuid() } != 0;
    let all = [NetMode::Off, NetMode::Proxied, NetMode::All]
        .into_iter()
        .filter_map(|n| {
            seccomp::build(n, shared_uid)
                .ok()
                .map(|f| (n, shared_uid, f))
        })
        .collect();
    let _ = FILTERS.set(all);
}

/// The compiled filters for this run, when the zygote prepared them.
fn prepared_filters(network: NetMode, shared_uid: bool) -> Option<&'static seccomp::Filters> {
    FILTERS
        .get()?
        .iter()
        .find(|(n, s, _)| *n == network && *s == shared_uid)
        .map(|(_, _, f)| f)
}

fn confined(policy: &HelperPolicy, status: &Status) -> u8 {
    if let Err(e) = join_cgroup(policy) {
        return status.error("failed", &e);
    }
    let Some(abi) = landlock_abi() else {
        return status.error(
            "unavailable",
            "Landlock is not available on this kernel (not built in, or disabled at boot)",
        );
    };
    // A parked run's child gets its argv and environment when a call takes the run.
    let exec = match (policy.parked, Exec::new(policy)) {
        (true, _) => None,
        (false, Ok(e)) => Some(e),
        (false, Err(e)) => return status.error("failed", &e),
    };
    let mut ruleset = match landlock::build(policy, abi) {
        Ok(r) => r,
        Err(e) => return status.error("failed", &format!("Landlock: {e}")),
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // A non-root helper cannot give the script another host uid: it keeps the host user's.
    // A helper forked from the zygote finds its filters compiled already.
    let built;
    let filters = match prepared_filters(policy.network, !root) {
        Some(f) => f,
        None => match seccomp::build(policy.network, !root) {
            Ok(f) => {
                built = f;
                &built
            }
            Err(e) => return status.error("failed", &format!("seccomp: {e}")),
        },
    };
    let rlimits = rlimits(policy);
    if root {
        // Root's supplementary groups must not follow the script (group-readable root files).
        // SAFETY: an empty list.
        if unsafe { libc::setgroups(0, std::ptr::null()) } != 0 {
            return status.error(
                "failed",
                &format!("setgroups: {}", io::Error::last_os_error()),
            );
        }
    }
    // A parked run's alarm is armed when a call takes it: its timeout starts then.
    let backstop = policy.timeout_seconds.saturating_add(10);
    arm_backstops(policy.supervisor, (!policy.parked).then_some(backstop));
    // A root host's granted trees owned by root, cloned with an idmapping that makes root's
    // files the script's: made here, as root in the host's namespaces, before joining the
    // workspace's; mounted by the child in its own mount namespace.
    let trees = match idmap::prepare(policy) {
        Ok(t) => t,
        Err(e) => return status.error("failed", &format!("granted trees: {e}")),
    };
    // The workspace's namespaces, where its work directory is a bounded tmpfs: joined before
    // anything else is made, so the script's own namespaces nest in them; the work directory's
    // rule is opened there (a rule on the directory beneath the mount would not cover the
    // tmpfs). The workspace's first run makes them (and hands them to the supervisor); where
    // that fails, it runs in the work directory on disk, whose rule the policy holds.
    let joined = match join_workspace(policy) {
        Ok(j) => j,
        Err(e) => return status.error("failed", &e),
    };
    // The namespaces the zygote made ahead of a process's one run, joined instead of made
    // (see `premade`): after everything that needs the host's view, as a workspace's are.
    let premade = match join_premade(policy, joined.is_some()) {
        Ok(p) => p,
        Err(e) => return status.error("failed", &e),
    };
    let tmp_dir = match work_rule(joined.as_ref(), &mut ruleset) {
        Ok(t) => t,
        Err(e) => return status.error("failed", &e),
    };
    // The run's own root: every rule's path (and the joined work directory), bound into a
    // tmpfs by the child in its own mount namespace.
    let plan = root::plan(policy, joined.as_ref());
    let (sync_r, sync_w) = match pipe() {
        Ok(p) => p,
        Err(e) => return status.error("failed", &format!("pipe: {e}")),
    };

    let attempts = clone_attempts(policy, joined.as_ref(), premade, root, trees.is_empty());
    let proxied = policy.network == NetMode::Proxied;
    let spawned = match spawn(&attempts) {
        Ok(s) => s,
        Err(e) => return status.error("failed", &e),
    };
    let Some((pid, ns, maps)) = spawned else {
        let (kind, why) = no_process(proxied, trees.is_empty());
        return status.error(kind, why);
    };

    if pid == 0 {
        // The child. It only returns to report a setup failure.
        // SAFETY: closing our copy of the release pipe's write end.
        unsafe { libc::close(sync_w) };
        let code = child(
            policy,
            status,
            exec.as_ref(),
            &mut ruleset,
            filters,
            &rlimits,
            ns,
            root,
            tmp_dir.as_deref(),
            &plan,
            &trees,
            sync_r,
        );
        // SAFETY: leaving without running the parent's atexit handlers or flushing its buffers.
        unsafe { libc::_exit(code as i32) };
    }

    if plan.in_run.is_some() {
        // The child makes the work directory and answers on the socket: the supervisor sees it
        // close once the child has (or has gone).
        // SAFETY: closing our own copy of an inherited descriptor.
        unsafe { libc::close(WORKSPACE_SOCKET_FD) };
    }
    if proxied {
        // The child holds the proxy's socket now; once it has sent the listener (or failed),
        // the supervisor sees the socket close.
        // SAFETY: closing our own copy of an inherited descriptor.
        unsafe { libc::close(PROXY_SOCKET_FD) };
    }
    if let Err(e) = release(pid, (sync_r, sync_w), maps) {
        return status.error("failed", &e);
    }
    if policy.parked {
        await_taken(backstop);
    }
    // The script holds its output now: the helper's copies go, so the output ends when the
    // script's does, not when this process has exited too (the supervisor reads to its end,
    // and stops reading the status at the line `relay` writes).
    let _ = detach_output();
    relay(pid, status, ns.pid)
}

/// The workspace's namespaces, where its work directory is a bounded tmpfs: joined before
/// anything else is made, so the script's own namespaces nest in them. The workspace's first
/// run makes them (and hands them to the supervisor); where that fails, it runs in the work
/// directory on disk, whose rule the policy holds (`None` then, as without a workspace).
fn join_workspace(policy: &HelperPolicy) -> Result<Option<JoinWorkspace>, String> {
    let mut joined: Option<JoinWorkspace> = None;
    if let Some(join) = &policy.workspace {
        if let Err(e) = work::join(join.user, &join.work) {
            return Err(format!("joining the workspace: {e}"));
        }
        joined = Some(join.clone());
    } else if let Some(w) = policy.make_work.as_ref().filter(|w| !w.in_run) {
        // (A process's one run makes its work directory in its own namespaces: `root::build`.)
        match work::make(w) {
            Ok(made) => {
                work::report(Ok(&made));
                if let Err(e) = work::join_made(&made, &w.work) {
                    return Err(format!("joining the workspace: {e}"));
                }
                joined = Some(JoinWorkspace {
                    user: made.has_user(),
                    work: w.work.clone(),
                    inode: made.inode,
                });
            }
            Err(why) => work::report(Err(&why)),
        }
    }
    Ok(joined)
}

/// Joins the user, IPC and network namespaces the zygote made for this run, when it made them
/// and the run may have them: not when it joins a workspace's, nor for a parked run (which the
/// zygote of a serving process never makes them for anyway). `true` when joined.
fn join_premade(policy: &HelperPolicy, joins_workspace: bool) -> Result<bool, String> {
    let Some(p) = premade::take() else {
        return Ok(false);
    };
    if joins_workspace || policy.parked {
        return Ok(false);
    }
    premade::join(&p, policy.network != NetMode::All)
        .map_err(|e| format!("joining the run's namespaces: {e}"))?;
    Ok(true)
}

/// The joined work directory's rule, opened inside the workspace's namespaces (a rule on the
/// directory beneath the mount would not cover the tmpfs), and its `tmp` as a C string.
fn work_rule(
    joined: Option<&JoinWorkspace>,
    ruleset: &mut landlock::Prepared,
) -> Result<Option<CString>, String> {
    let mut tmp_dir = None;
    if let Some(join) = joined {
        let rule = FsRule {
            path: join.work.clone(),
            access: FsAccess::ReadWrite,
            required: true,
            inode: Some(join.inode),
        };
        if let Err(e) = ruleset.add(&rule) {
            return Err(format!("Landlock: {e}"));
        }
        match CString::new(join.work.join("tmp").as_os_str().as_bytes()) {
            Ok(t) => tmp_dir = Some(t),
            Err(_) => return Err("a NUL byte in the work directory's path".into()),
        }
    }
    Ok(tmp_dir)
}

/// The ways to start the run's first process, in order: (clone flags, the namespaces it gets,
/// whether this helper writes the id maps of a new user namespace).
fn clone_attempts(
    policy: &HelperPolicy,
    joined: Option<&JoinWorkspace>,
    premade: bool,
    root: bool,
    no_trees: bool,
) -> Vec<(libc::c_int, Ns, bool)> {
    let net_flag = if policy.network == NetMode::All {
        0
    } else {
        libc::CLONE_NEWNET
    };
    let base = libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWNS | net_flag;
    let ns = |user, pid| Ns {
        user,
        pid,
        net: pid && policy.network != NetMode::All,
        mnt: pid,
    };
    // (flags, namespaces, whether this helper writes the id maps of a new user namespace)
    let mut attempts = Vec::new();
    match joined {
        // Already in the workspace's user namespace (or none), its ids mapped.
        Some(j) => attempts.push((base, ns(j.user, true), false)),
        // In the user, IPC and network namespaces made for it (`premade`), ids mapped.
        None if premade => attempts.push((
            libc::CLONE_NEWPID | libc::CLONE_NEWNS,
            ns(true, true),
            false,
        )),
        None => {
            attempts.push((libc::CLONE_NEWUSER | base, ns(true, true), true));
            if root {
                attempts.push((base, ns(false, true), false));
            }
        }
    }
    // A plain fork has no mount namespace of its own for the run's root (the documented
    // fallback where the kernel refuses one: the modes and Landlock decide) nor for the
    // granted trees, and no network namespace for a proxied run (whose only way out must be
    // the proxy).
    let proxied = policy.network == NetMode::Proxied;
    if no_trees && !proxied {
        attempts.push((
            0,
            ns(premade || joined.is_some_and(|j| j.user), false),
            false,
        ));
    }
    attempts
}

/// Starts the run's first process by the first of `attempts` the kernel allows: its pid (0 in
/// the child), namespaces and whether its ids are to be mapped; `None` when none is allowed.
fn spawn(attempts: &[(libc::c_int, Ns, bool)]) -> Result<Option<(libc::pid_t, Ns, bool)>, String> {
    for &(flags, ns, maps) in attempts {
        match clone_process(flags) {
            Ok(pid) => return Ok(Some((pid, ns, maps))),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(
                        libc::EPERM
                            | libc::EINVAL
                            | libc::ENOSPC
                            | libc::EUSERS
                            | libc::ENOSYS
                            | libc::EACCES
                    )
                ) =>
            {
                continue;
            }
            Err(e) => return Err(format!("clone: {e}")),
        }
    }
    Ok(None)
}

/// Why no process could start: (the status's kind, the message).
fn no_process(proxied: bool, no_trees: bool) -> (&'static str, &'static str) {
    if proxied {
        return (
            "unavailable",
            "network by host name needs a network namespace of the run's own, which this \
             host does not allow (no user namespaces for this user: Docker's default \
             profile, user.max_user_namespaces=0, or Ubuntu's AppArmor restriction)",
        );
    }
    (
        "failed",
        if no_trees {
            "clone: no way to start a process"
        } else {
            "clone: the kernel refused the mount namespace the granted paths need (a \
             tree owned by root)"
        },
    )
}

/// Never root: a root helper's child becomes uid/gid 65534 inside its user namespace
/// (`ns.user`), else the run's host id.
fn become_run_id(ns: Ns) -> Result<(), String> {
    let id = if ns.user { SANDBOX_ID } else { RUN_HOST_ID } as libc::c_long;
    // SAFETY: system calls on integers.
    let failed = unsafe {
        libc::syscall(libc::SYS_setresgid, id, id, id) != 0
            || libc::syscall(libc::SYS_setresuid, id, id, id) != 0
    };
    if failed {
        return Err(format!("setresuid: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// Sets the run's limits. `host_uid`: the script keeps the host user's uid (no user namespace
/// and no dedicated uid), so `RLIMIT_NPROC` counts that user's own tasks too.
fn set_rlimits(
    rlimits: &[(libc::__rlimit_resource_t, u64, u64)],
    host_uid: bool,
) -> Result<(), String> {
    for &(res, mut soft, mut hard) in rlimits {
        if res == libc::RLIMIT_NPROC && host_uid {
            // NPROC counts per real uid: without a user namespace or a dedicated uid it
            // counts the host user's own tasks too. Allow those plus the run's share, as a
            // fork-bomb backstop.
            // SAFETY: getuid has no preconditions.
            let own = tasks_of(unsafe { libc::getuid() });
            soft = soft.saturating_add(own);
            hard = hard.saturating_add(own);
        }
        let lim = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: a limit we own, read by the call.
        if unsafe { libc::setrlimit(res, &lim) } != 0 {
            return Err(format!("setrlimit: {}", io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// The child's `ready` line: how the run is confined (Landlock's summary, the namespaces, its
/// own root, cgroup, mapped trees, a bounded work directory) and the script's uid.
fn ready_line(
    policy: &HelperPolicy,
    ns: Ns,
    root: bool,
    own_proc: bool,
    trees: &[idmap::Tree],
    bounded_work: bool,
    landlock_summary: &str,
) -> String {
    let mut names = Vec::new();
    if ns.user {
        names.push("user");
    }
    if ns.pid {
        names.extend(["pid", "ipc"]);
    }
    if ns.net {
        names.push(if policy.network == NetMode::Proxied {
            "net (out only through the run's proxy)"
        } else {
            "net"
        });
    }
    let namespaces = if names.is_empty() {
        "none".to_string()
    } else {
        names.join("+")
    };
    let mapped = trees.iter().filter(|t| t.mapped).count();
    format!(
        "ready {landlock_summary}; seccomp allow-list; namespaces {namespaces}{}{}{}{}; uid {}",
        match (ns.mnt, own_proc) {
            (false, _) => "",
            (true, true) => "; a root of its own with its own /proc",
            (true, false) => "; a root of its own (no /proc: the kernel refused one)",
        },
        if policy.cgroup.is_empty() {
            ""
        } else {
            "; cgroup (memory, tasks)"
        },
        if mapped == 0 {
            String::new()
        } else {
            format!("; root's files in {mapped} granted tree(s) mapped to the script")
        },
        if bounded_work {
            "; work directory a bounded tmpfs"
        } else {
            ""
        },
        if ns.user {
            SANDBOX_ID
        } else if root {
            RUN_HOST_ID
        } else {
            // SAFETY: getuid has no preconditions.
            unsafe { libc::getuid() } // the host user's own
        }
    )
}

/// The child's side: dies with the helper, and waits until the helper releases it (`false`:
/// the helper is gone, or failed to map its ids).
fn await_release(sync_r: libc::c_int) -> bool {
    // SAFETY: prctl and read on integers and a local buffer.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        let mut b = [0u8; 1];
        libc::read(sync_r, b.as_mut_ptr().cast(), 1) == 1
    }
}

/// The child's parent-death signal, armed after its last credential change, and proof that the
/// helper is still alive after that (`false`: it is gone, and nothing may run). `sync_r` is the
/// release pipe's read end, whose write end the helper keeps open for its whole life; it is
/// closed here.
fn lifeline(sync_r: libc::c_int) -> bool {
    // SAFETY: prctl, poll and close on integers and a local struct.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            libc::close(sync_r);
            return false;
        }
        let mut p = libc::pollfd {
            fd: sync_r,
            events: libc::POLLIN,
            revents: 0,
        };
        let r = libc::poll(&mut p, 1, 0);
        libc::close(sync_r);
        // Nothing more is ever written: any event (hang-up, error) means the write end closed.
        r == 0
    }
}

/// The parent's side of a new child: closes its copy of the release pipe's read end, writes
/// the id maps of the child's new user namespace (when `maps`: 65534 inside maps to 65534 for a
/// root helper, to the helper's own ids otherwise), and releases the child. On failure the
/// child is killed and reaped, and `Err` says why.
fn release(
    pid: libc::pid_t,
    (sync_r, sync_w): (libc::c_int, libc::c_int),
    maps: bool,
) -> Result<(), String> {
    // SAFETY: closing our copy of the release pipe's read end.
    unsafe { libc::close(sync_r) };
    if maps {
        // SAFETY: plain id getters.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let (uid, gid) = if euid == 0 {
            (RUN_HOST_ID, RUN_HOST_ID)
        } else {
            (euid, egid)
        };
        if let Err(e) = write_id_maps(pid, uid, gid) {
            // SAFETY: killing the child we just made.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            reap(pid);
            return Err(format!("user namespace id maps: {e}"));
        }
    }
    // SAFETY: one byte from a live buffer. The write end stays open for the helper's whole
    // life (it is close-on-exec and the helper never execs): the child's lifeline.
    unsafe {
        libc::write(sync_w, b"1".as_ptr().cast(), 1);
    }
    Ok(())
}

fn unconfined(policy: &HelperPolicy, status: &Status) -> u8 {
    if let Err(e) = join_cgroup(policy) {
        return status.error("failed", &e);
    }
    let exec = match Exec::new(policy) {
        Ok(e) => e,
        Err(e) => return status.error("failed", &e),
    };
    arm_backstops(
        policy.supervisor,
        Some(policy.timeout_seconds.saturating_add(10)),
    );
    // SAFETY: the helper is single-threaded, so the child may do anything the parent could.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return status.error("failed", &format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: prctl with plain integer arguments.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        cloexec_from(3);
        status.line("ready unconfined (trust: core; Landlock unavailable)");
        let e = exec.exec();
        status.error(
            "failed",
            &format!("cannot execute {}: {e}", policy.program.display()),
        );
        // SAFETY: leaving the forked child.
        unsafe { libc::_exit(127) };
    }
    relay(pid, status, false)
}

/// The helper dies with the supervisor (`supervisor`: its pid, 0 not checked), and in any case
/// `seconds` later (the supervisor normally ends it first; `None`: a parked run, armed by
/// [`await_taken`]); its death takes its child with it.
fn arm_backstops(supervisor: u32, seconds: Option<u64>) {
    // SAFETY: prctl/alarm with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if supervisor != 0 && libc::getppid() as u32 != supervisor {
            // The supervisor is already gone.
            libc::_exit(SETUP_FAILED as i32);
        }
        if let Some(seconds) = seconds {
            libc::alarm(seconds.clamp(1, u32::MAX as u64) as libc::c_uint);
        }
    }
}

/// A parked run's helper: waits until a call takes the run (its release written on
/// [`RELEASE_FD`], which the child reads) or drops it (end-of-file), then arms the backstop
/// alarm as an unparked helper does at its start.
fn await_taken(seconds: u64) {
    let mut p = libc::pollfd {
        fd: RELEASE_FD,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on a local struct, close and alarm on integers.
    unsafe {
        while libc::poll(&mut p, 1, -1) < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        libc::close(RELEASE_FD);
        libc::alarm(seconds.clamp(1, u32::MAX as u64) as libc::c_uint);
    }
}

/// A parked run's child, confined already: reads its argv and environment from
/// [`RELEASE_FD`] (to end-of-file: the supervisor writes one message and closes), closes it,
/// and builds what it executes. `None`: the run was dropped, not taken (nothing is written).
fn take_release(policy: &HelperPolicy) -> Option<Result<Exec, String>> {
    let mut bytes = Vec::new();
    // Larger than any release the supervisor sends: a message is read whole.
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: reading into a live buffer of the given length.
        let n = unsafe { libc::read(RELEASE_FD, chunk.as_mut_ptr().cast(), chunk.len()) };
        match n {
            0 => break,
            n if n > 0 => bytes.extend_from_slice(&chunk[..n as usize]),
            _ if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => break,
        }
        if bytes.len() > POLICY_MAX {
            break;
        }
    }
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(RELEASE_FD) };
    if bytes.is_empty() {
        return None;
    }
    let release: Release = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => return Some(Err(format!("bad release: {e}"))),
    };
    let mut taken = policy.clone();
    taken.argv = release.argv;
    taken.env = release.env;
    Some(Exec::new(&taken))
}

/// Waits for the script, reports how it ended, and returns the same code.
fn relay(pid: libc::pid_t, status: &Status, pid_ns: bool) -> u8 {
    let ws = reap(pid);
    let code = if libc::WIFEXITED(ws) {
        let c = libc::WEXITSTATUS(ws);
        status.line(&format!("exit {c}"));
        c as u8
    } else if libc::WIFSIGNALED(ws) {
        let s = libc::WTERMSIG(ws);
        status.line(&format!("signal {s}"));
        (128 + s).clamp(0, 255) as u8
    } else {
        status.line("exit 255");
        255
    };
    if !pid_ns {
        // No PID namespace took the script's children with it: end the whole process group
        // (the helper too; the status line above already says how the script ended).
        // SAFETY: signalling our own process group.
        unsafe { libc::kill(0, libc::SIGKILL) };
    }
    code
}

/// Points this process's standard descriptors at `/dev/null` (its copies of the run's input
/// and output pipes closed).
fn detach_output() -> io::Result<()> {
    // SAFETY: open, dup2 and close on integers and a static C string.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            return Err(io::Error::last_os_error());
        }
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        libc::close(null);
    }
    Ok(())
}

fn reap(pid: libc::pid_t) -> libc::c_int {
    let mut ws: libc::c_int = 0;
    loop {
        // SAFETY: waiting for our own child into a local.
        let r = unsafe { libc::waitpid(pid, &mut ws, 0) };
        if r == pid {
            return ws;
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 255 << 8;
        }
    }
}

/// The child's side of a process's one-run work directory ([`root::Plan::in_run`]), after
/// the root is built: the tmpfs handed to the supervisor and given the work directory's
/// Landlock rule (bound to the tmpfs's root, which now stands at the work directory's path),
/// and its `TMPDIR` returned; or, where it could not be made, why said to the supervisor and
/// `None` (the work directory on disk was bound instead, and its rule is the policy's).
fn in_run_work(
    plan: &root::Plan,
    made: Result<std::os::fd::OwnedFd, String>,
    ruleset: &mut landlock::Prepared,
) -> Result<Option<CString>, String> {
    let (Some(w), Ok(root)) = (&plan.in_run, &made) else {
        work::report_in_run(Err(made.err().as_deref().unwrap_or("not asked for")));
        return Ok(None);
    };
    let inode = identity(root).map_err(|e| format!("the work directory's tmpfs: {e}"))?;
    let rule = FsRule {
        path: w.work.clone(),
        access: FsAccess::ReadWrite,
        required: true,
        inode: Some(inode),
    };
    ruleset.add(&rule).map_err(|e| format!("Landlock: {e}"))?;
    work::report_in_run(Ok(root));
    CString::new(w.work.join("tmp").as_os_str().as_bytes())
        .map(Some)
        .map_err(|_| "a NUL byte in the work directory's path".into())
}

#[allow(clippy::too_many_arguments)]
fn child(
    policy: &HelperPolicy,
    status: &Status,
    exec: Option<&Exec>,
    ruleset: &mut landlock::Prepared,
    filters: &seccomp::Filters,
    rlimits: &[(libc::__rlimit_resource_t, u64, u64)],
    ns: Ns,
    root: bool,
    tmp_dir: Option<&std::ffi::CStr>,
    plan: &root::Plan,
    trees: &[idmap::Tree],
    sync_r: libc::c_int,
) -> u8 {
    // SAFETY (whole function): raw system calls on integers and buffers we own; the process is a
    // copy of a single-threaded helper, so allocation is safe too.
    unsafe {
        if !await_release(sync_r) {
            // The helper is gone (or failed to map ids): nothing to run.
            return SETUP_FAILED;
        }
        // Still holding every capability in the new namespaces (the credential change below
        // drops them): loopback up, and the proxy's listener handed to the supervisor.
        if policy.network == NetMode::Proxied
            && let Err(e) = proxy_listener()
        {
            return status.error("failed", &format!("the run's proxy: {e}"));
        }

        // The run's own root (see `root`): as the helper's ids, before the credential change.
        // The script's files are made as its own id: 65534 inside its user namespace, the
        // run's host id without one.
        let mut own_proc = false;
        let mut in_run_tmp = None;
        if ns.mnt {
            let fs_id = if ns.user { SANDBOX_ID } else { RUN_HOST_ID };
            match root::build(plan, trees, fs_id) {
                Ok(built) => {
                    own_proc = built.proc;
                    if let Some(made) = built.work {
                        match in_run_work(plan, made, ruleset) {
                            Ok(tmp) => in_run_tmp = tmp,
                            Err(e) => return status.error("failed", &e),
                        }
                    }
                }
                Err(e) => return status.error("failed", &format!("the run's root: {e}")),
            }
        } else if plan.in_run.is_some() {
            work::report_in_run(Err("the run has no mount namespace of its own"));
        }
        let tmp_dir = tmp_dir.or(in_run_tmp.as_deref());
        // The bounding set goes while we still hold CAP_SETPCAP (a root helper without a user
        // namespace loses every capability in setresuid below).
        drop_bounding_set();
        // Never root. A root helper's child becomes uid/gid 65534 inside its user namespace
        // (mapped to the run's host id, which no account and no host process has), or the
        // run's host id itself when there is none. A non-root helper's child already is 65534
        // inside (its own uid is mapped there), and changing nothing needs no capability (a
        // kernel that grants none in new namespaces, like Ubuntu's AppArmor restriction, still
        // runs it).
        if root && let Err(e) = become_run_id(ns) {
            return status.error("failed", &e);
        }
        if let Some(tmp) = tmp_dir {
            // The work directory's TMPDIR, made by the script's uid (it may be gone: a run that
            // hit the quota leaves the work directory empty). Anything else is the script's
            // to find out.
            libc::mkdir(tmp.as_ptr(), 0o700);
        }
        if let Err(e) = set_rlimits(rlimits, !(ns.user || root)) {
            return status.error("failed", &e);
        }
        cloexec_from(3);
        libc::umask(0o077);
        if let Err(e) = drop_capabilities() {
            return status.error("failed", &format!("dropping capabilities: {e}"));
        }
        // The last credential change is behind us (setresuid above clears the parent-death
        // signal): arm it again, for good, then check the helper did not die meanwhile. As PID 1
        // of its namespace the child cannot ask getppid; the release pipe tells instead: the
        // helper holds its write end until it exits, so a hang-up means it is gone, and the
        // kernel would not have signalled a death that came before the prctl.
        if !lifeline(sync_r) {
            return SETUP_FAILED;
        }
        let landlock_summary = match ruleset.restrict() {
            Ok(s) => s,
            Err(e) => return status.error("unavailable", &format!("Landlock: {e}")),
        };
        if let Err(e) = seccomp::apply(filters) {
            return status.error("failed", &format!("seccomp: {e}"));
        }
        // A parked run waits here, confined, for the call that takes it.
        let taken;
        let exec = match exec {
            Some(e) => e,
            None => match take_release(policy) {
                Some(Ok(e)) => {
                    // The work directory may have changed while it waited (a run of the same
                    // workspace over its quota empties it): its TMPDIR is made again now, as
                    // the script's uid, where the script will find it.
                    if let Some(tmp) = tmp_dir {
                        libc::mkdir(tmp.as_ptr(), 0o700);
                    }
                    taken = e;
                    &taken
                }
                Some(Err(e)) => return status.error("failed", &e),
                None => return SETUP_FAILED,
            },
        };
        status.line(&ready_line(
            policy,
            ns,
            root,
            own_proc,
            trees,
            tmp_dir.is_some(),
            &landlock_summary,
        ));
        if policy.builtin {
            let Some(entry) = super::builtin() else {
                return status.error("failed", "this helper has no built-in entry");
            };
            // What an execve would have closed (every descriptor above 2 is close-on-exec).
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
            let code = entry();
            libc::_exit(i32::from(code));
        }
        let e = exec.exec();
        status.error(
            "failed",
            &format!("cannot execute {}: {e}", policy.program.display()),
        )
    }
}

/// In a proxied run's new network namespace (the child, before it drops its capabilities):
/// brings loopback up (`SIOCSIFFLAGS`, an ioctl, not the netlink `RTM_NEWADDR` some kernels
/// refuse in user namespaces; the kernel gives `lo` 127.0.0.1 and ::1 when it comes up),
/// listens on `127.0.0.1:`[`PROXY_PORT`], and sends that socket to the supervisor on
/// [`PROXY_SOCKET_FD`], closing both here: the script holds neither.
fn proxy_listener() -> Result<(), String> {
    let os = |what: &str| format!("{what}: {}", io::Error::last_os_error());
    // SAFETY (whole function): system calls on integers and local, initialised structs; every
    // descriptor made here is closed here.
    unsafe {
        let ctl = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if ctl < 0 {
            return Err(os("socket"));
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let up = if libc::ioctl(ctl, libc::SIOCGIFFLAGS, &mut req) != 0 {
            Err(os("reading the flags of lo"))
        } else {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(ctl, libc::SIOCSIFFLAGS, &req) != 0 {
                Err(os("bringing lo up"))
            } else {
                Ok(())
            }
        };
        libc::close(ctl);
        up?;
        let l = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if l < 0 {
            return Err(os("socket"));
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = PROXY_PORT.to_be();
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let result = if libc::bind(
            l,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
        {
            Err(os("bind 127.0.0.1"))
        } else if libc::listen(l, 128) != 0 {
            Err(os("listen"))
        } else {
            send_fd(PROXY_SOCKET_FD, l).map_err(|e| format!("handing the listener over: {e}"))
        };
        libc::close(l);
        libc::close(PROXY_SOCKET_FD);
        result
    }
}

/// Sends `fd` on the socket `over` (`SCM_RIGHTS`, one byte of data).
fn send_fd(over: libc::c_int, fd: libc::c_int) -> io::Result<()> {
    let fd_size = std::mem::size_of::<libc::c_int>() as libc::c_uint;
    // SAFETY: CMSG_SPACE is a size computation; sendmsg reads live local buffers the header
    // describes, the control buffer sized by CMSG_SPACE for one descriptor.
    unsafe {
        let mut control = vec![0u8; libc::CMSG_SPACE(fd_size) as usize];
        let mut byte = *b"l";
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(fd_size) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), fd);
        if libc::sendmsg(over, &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Makes the mount tree of this (new) mount namespace a slave of the one it was copied from:
/// nothing mounted here propagates back.
fn make_slave() -> io::Result<()> {
    // SAFETY: a C string literal; null pointers where mount(2) allows them.
    let r = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// How many tasks (threads included) `uid` runs, from `/proc`: what `RLIMIT_NPROC` counts.
fn tasks_of(uid: libc::uid_t) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0u64;
    for e in entries.flatten() {
        if !e.file_name().as_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().collect::<Vec<_>>())
        };
        // Uid: real effective saved fs; NPROC counts by real uid.
        let real = field("Uid:").and_then(|v| v.first().and_then(|u| u.parse::<u32>().ok()));
        if real == Some(uid) || (real.is_none() && e.metadata().is_ok_and(|m| m.uid() == uid)) {
            n += field("Threads:")
                .and_then(|v| v.first().and_then(|t| t.parse::<u64>().ok()))
                .unwrap_or(1);
        }
    }
    n
}

fn rlimits(p: &HelperPolicy) -> Vec<(libc::__rlimit_resource_t, u64, u64)> {
    let l = &p.limits;
    vec![
        // soft < hard: SIGXCPU first, SIGKILL a second later.
        (
            libc::RLIMIT_CPU,
            l.cpu_seconds,
            l.cpu_seconds.saturating_add(1),
        ),
        (libc::RLIMIT_AS, l.address_space, l.address_space),
        (libc::RLIMIT_FSIZE, l.file_size, l.file_size),
        (libc::RLIMIT_NOFILE, l.open_files, l.open_files),
        (libc::RLIMIT_CORE, 0, 0),
        (libc::RLIMIT_NPROC, l.processes, l.processes),
    ]
}

/// `clone` with namespace flags, behaving like `fork` otherwise (no new stack: the child gets a
/// copy-on-write copy of ours).
fn clone_process(flags: libc::c_int) -> io::Result<libc::pid_t> {
    let flags = (flags | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: without CLONE_VM the child runs on its own copy of this stack; the other arguments
    // (new stack, tid pointers, tls) are all null/zero.
    let r = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as libc::pid_t)
    }
}

fn write_id_maps(pid: libc::pid_t, uid: u32, gid: u32) -> io::Result<()> {
    let dir = format!("/proc/{pid}");
    match std::fs::write(format!("{dir}/setgroups"), "deny") {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("setgroups: {e}"))),
    }
    std::fs::write(format!("{dir}/uid_map"), format!("{SANDBOX_ID} {uid} 1\n"))
        .map_err(|e| io::Error::new(e.kind(), format!("uid_map: {e}")))?;
    std::fs::write(format!("{dir}/gid_map"), format!("{SANDBOX_ID} {gid} 1\n"))
        .map_err(|e| io::Error::new(e.kind(), format!("gid_map: {e}")))?;
    Ok(())
}

fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Marks every fd from `first` up close-on-exec (the status pipe stays usable until `execve`).
fn cloexec_from(first: libc::c_uint) {
    // SAFETY: close_range with the CLOEXEC flag only changes fd flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if r != 0 {
        // Kernels before 5.11: walk the table.
        // SAFETY: getrlimit into a local; fcntl on integers (EBADF for closed fds is harmless).
        unsafe {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            let max = lim.rlim_cur.min(65536) as libc::c_int;
            for fd in first as libc::c_int..max {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

/// Empties the capability bounding set (errors mean there is nothing we may drop).
fn drop_bounding_set() {
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments. EINVAL past the last capability, EPERM without
        // CAP_SETPCAP.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
}

/// Drops every remaining capability: ambient, then effective, permitted and inheritable.
fn drop_capabilities() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    // SAFETY: prctl/capset with integers and pointers to live locals.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = Header {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
