//! Removing a long-lived process's workspaces when it dies, however it dies.
//!
//! A workspace is removed when its skill leaves the loaded set, and a drained server removes
//! every one; a process that is killed (SIGKILL, the OOM killer, a crash) runs none of that.
//! Its workspaces' locks are freed by the kernel as it dies, so the next start over the same
//! base removes them ([`WorkspaceBase::clean_stale`]), but until then they stay on disk.
//!
//! [`reap_on_exit`] closes that gap by construction: it starts this binary again as a small
//! watcher whose standard input is a pipe only the caller holds (the write end is close-on-exec,
//! so no script inherits it). The kernel closes that end when the caller exits, for any reason;
//! the watcher then reads end-of-file and cleans the base as a new start would: every workspace
//! whose lock is free (the caller's, and any other dead process's) is removed, and a live
//! process's workspaces, whose locks are held, are left alone. The watcher ignores the signals a
//! terminal or a service manager sends to the whole group, so it outlives the caller long
//! enough to do its work.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use super::workspace::WorkspaceBase;

/// The argument that starts this binary as the watcher (after the program name; the base
/// directory follows).
pub const REAPER_ARG: &str = "__skillcat-workspace-reaper";

/// How often, and how far apart, the watcher cleans after its caller is gone: the caller's
/// confined processes die with it (their parent-death signal, through the zygote: one hop
/// more), and a lock one of them still held a moment ago is free at a later try. It stops at
/// the first clean try, so the ten seconds are only waited on a machine too busy to end the
/// chain sooner (a second was too short under a full test run).
const ATTEMPTS: u32 = 100;
const PAUSE: Duration = Duration::from_millis(100);

/// The watcher of one caller ([`reap_on_exit`]); dropping it (or the caller exiting) lets the
/// watcher clean and exit.
#[derive(Debug)]
pub struct Reaper {
    // Held for its close: the watcher's end-of-file.
    _pipe: ChildStdin,
    child: Child,
}

impl Reaper {
    /// The watcher's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Starts the watcher for the workspaces under `base` (a [`WorkspaceBase`] directory,
/// [`WorkspaceBase::default_dir`] for the runner's default): when this process exits, by any
/// means, every workspace under `base` whose owner is gone is removed. The binary must call
/// [`helper_main`](super::sandbox::helper_main) first thing in `main`, as it must for scripts.
pub fn reap_on_exit(base: &Path) -> io::Result<Reaper> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .arg(REAPER_ARG)
        .arg(base)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .current_dir("/")
        .spawn()?;
    let pipe = child.stdin.take().expect("stdin was piped");
    Ok(Reaper { _pipe: pipe, child })
}

/// The watcher itself, when this process was started as one: `Some(exit code)`, else `None`.
pub(crate) fn reaper_main() -> Option<u8> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(REAPER_ARG)) {
        return None;
    }
    let Some(base) = args.next().map(PathBuf::from) else {
        return Some(2);
    };
    // A Ctrl-C, a hang-up or a service manager's SIGTERM goes to the whole group: the caller
    // handles it (or dies of it), and the watcher must still be here when it is gone.
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    wait_for_eof();
    clean_base(&base);
    Some(0)
}

/// What a new start does for `base` once its owner is gone: every workspace whose lock is free
/// is removed (tried again while a dying process still holds one), then every control group of
/// a dead supervisor.
pub(crate) fn clean_base(base: &Path) {
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(PAUSE);
        }
        // Opening the base is what a new start does: it removes every workspace whose lock is
        // free. Nothing held by a dead process is left after the last attempt.
        match WorkspaceBase::open(base, super::run::script_owner()) {
            Ok(b) if b.clean_stale().is_ok() && !holds_workspaces(base) => break,
            Ok(_) => {}
            // The base is gone (or was never made): nothing to remove.
            Err(_) if !base.exists() => break,
            Err(_) => {}
        }
    }
    #[cfg(target_os = "linux")]
    if let Ok(groups) = super::sandbox::linux::cgroup::status() {
        groups.clean_stale();
    }
}

/// Reads standard input until end-of-file (or an error that means the same: nobody writes).
fn wait_for_eof() {
    let mut stdin = io::stdin().lock();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

/// Whether any workspace is still under `base` (a live process's, whose lock is held, or one a
/// dying process still locked a moment ago).
fn holds_workspaces(base: &Path) -> bool {
    std::fs::read_dir(base).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("ws-"))
    })
}

/// Teardown after the process: a command that makes one run and exits (`skillcat run`) asks,
/// with [`teardown_after_exit`], that what its runs leave — workspaces, control groups — be
/// removed by a cleaner forked from the zygote, which waits for this process to exit (however
/// it exits: a pipe only this process holds reads end-of-file) and then cleans the base as a
/// new start would ([`clean_base`]). The process then neither removes a workspace nor waits
/// for its teardown thread before it exits; where no cleaner could be started it does both, as
/// before.
pub(crate) mod after_exit {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, OnceLock};

    static WANTED: AtomicBool = AtomicBool::new(false);

    /// The one cleaner of this process: its base, the pipe's write end (held until exit) and
    /// the zygote's answer, read once.
    struct Cleaner {
        base: PathBuf,
        _exited: OwnedFd,
        reply: Mutex<Option<OwnedFd>>,
        started: OnceLock<bool>,
    }

    static CLEANER: OnceLock<Cleaner> = OnceLock::new();

    pub(crate) fn want() {
        WANTED.store(true, Ordering::Relaxed);
    }

    /// Whether this process asked for a cleaner: it makes one run and exits, so it parks no
    /// run ahead (`park::park`).
    pub(crate) fn wanted() -> bool {
        WANTED.load(Ordering::Relaxed)
    }

    /// Starts the cleaner of `base` when one is wanted and the zygote of `helper` is usable
    /// (once per process: the first runner's base).
    pub(crate) fn arm(helper: &Path, base: &Path) {
        if !WANTED.load(Ordering::Relaxed) || CLEANER.get().is_some() {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: pipe2 into a local array; each descriptor is then owned exactly once.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return;
            }
            let (read, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let Some(reply) =
                super::super::sandbox::linux::zygote::fork_cleaner(helper, base, read)
            else {
                return;
            };
            let _ = CLEANER.set(Cleaner {
                base: base.to_path_buf(),
                _exited: write,
                reply: Mutex::new(Some(reply)),
                started: OnceLock::new(),
            });
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (helper, base);
    }

    /// Whether what is left under `base` goes after this process exits (its cleaner started).
    pub(crate) fn handed_over(base: &Path) -> bool {
        let Some(c) = CLEANER.get() else {
            return false;
        };
        if c.base != base {
            return false;
        }
        *c.started.get_or_init(|| {
            #[cfg(target_os = "linux")]
            {
                c.reply
                    .lock()
                    .ok()
                    .and_then(|mut r| r.take())
                    .is_some_and(|r| super::super::sandbox::linux::zygote::cleaner_started(&r))
            }
            #[cfg(not(target_os = "linux"))]
            false
        })
    }

    /// Whether any cleaner was started (the process's teardown thread need not be waited for).
    pub(crate) fn any() -> bool {
        CLEANER.get().is_some_and(|c| handed_over(&c.base))
    }
}

/// Asks that what this process's runs leave (workspaces, control groups) be removed after it
/// exits, by a cleaner forked from the sandbox zygote, rather than before it exits: for a
/// command that makes a run and exits, teardown then costs its answer nothing. Call it before
/// the [`Runner`](super::Runner) is made. Without a zygote (or where the cleaner cannot start)
/// nothing changes: the workspace is removed when its skill is unloaded, as always. What a
/// crash leaves is removed by the cleaner too. The process's blocking work then runs inline
/// too ([`run_blocking_work_inline`](crate::source::run_blocking_work_inline)): it makes one
/// run, and nothing else waits on its runtime. That run's bounded work directory is its own,
/// made in the run's namespaces ([`WorkspacePolicy::in_run`](super::sandbox::WorkspacePolicy)):
/// a second run of the same workspace is refused.
pub fn teardown_after_exit() {
    after_exit::want();
    // Its run's user, network and IPC namespaces are made by the zygote meanwhile.
    #[cfg(target_os = "linux")]
    super::sandbox::linux::zygote::premake();
    // The same process makes its one run with no thread of the blocking pool.
    crate::source::run_blocking_work_inline();
}

/// Ends a process that has made its one run ([`teardown_after_exit`]) with `code`, once its
/// standard streams are flushed: without the C library's exit handlers, and without paying on
/// the answer's path for the release of its own memory.
///
/// A process's exit frees its whole address space before its parent learns that it ended: for
/// this binary 0.32 ms from its `exit_group` to its parent's `wait4`, against `/bin/true`'s
/// 0.04 (kernel tracepoints). So, on Linux, the last thing the process does is start a **keeper**: a process that
/// shares its memory (`CLONE_VM`, not a thread: it outlives the exit), closes every
/// descriptor first thing (it holds no pipe, no lock, no output open), blocks every signal but
/// `SIGKILL` and waits, bound to this process by `PR_SET_PDEATHSIG(SIGKILL)` (and gone at once
/// if the process had already exited). The process's exit then only drops its share of the
/// memory, its parent sees it end, and the keeper, killed by that exit, frees the memory after
/// it. Where the keeper cannot start, the process exits as it would have.
pub fn exit_after_run(code: i32) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(target_os = "linux")]
    keeper::start();
    // SAFETY: ends the process; nothing after it runs, and what it wrote is flushed above.
    unsafe { libc::_exit(code) }
}

/// The keeper of [`exit_after_run`].
#[cfg(target_os = "linux")]
mod keeper {
    /// Its stack: it makes six system calls and nothing else.
    const STACK: usize = 64 * 1024;

    /// Starts the keeper; does nothing where it cannot.
    pub(super) fn start() {
        // SAFETY: a fresh anonymous mapping, used only as the keeper's stack and never freed
        // (the process is ending).
        let stack = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if stack == libc::MAP_FAILED {
            return;
        }
        // SAFETY: `getpid` has no preconditions.
        let me = unsafe { libc::getpid() };
        // SAFETY: the keeper runs `keep` on the top of its own stack; sharing this process's
        // memory, it touches nothing of it but that stack and its argument, and makes raw
        // system calls only, while this process goes on only to `_exit`.
        unsafe {
            libc::clone(
                keep,
                stack.cast::<u8>().add(STACK).cast(),
                libc::CLONE_VM | libc::SIGCHLD,
                me as usize as *mut libc::c_void,
            );
        }
    }

    /// The keeper: no descriptor, no signal but `SIGKILL`, dead with the process.
    extern "C" fn keep(parent: *mut libc::c_void) -> libc::c_int {
        let parent = parent as usize as libc::pid_t;
        let all: u64 = !0;
        // SAFETY: raw system calls on this function's own stack; `all` outlives the call that
        // reads it.
        unsafe {
            libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
            libc::syscall(
                libc::SYS_rt_sigprocmask,
                libc::SIG_SETMASK,
                &all as *const u64,
                std::ptr::null_mut::<u64>(),
                std::mem::size_of::<u64>(),
            );
            libc::syscall(
                libc::SYS_prctl,
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL,
                0,
                0,
                0,
            );
            // Its parent may have exited before the line above: then nobody would kill it.
            if libc::syscall(libc::SYS_getppid) as libc::pid_t == parent {
                loop {
                    libc::syscall(libc::SYS_pause);
                }
            }
            libc::syscall(libc::SYS_exit, 0);
        }
        0
    }
}

/// Teardown after the answer: what a run leaves to clean (its control group) is handed to one
/// background thread, so the result is returned first. Still guaranteed: a [`Runner`] waits
/// for it when dropped, and what a crash leaves meanwhile the next start removes (stale groups
/// at [`Runner::new`], workspaces at [`WorkspaceBase::open`] or by the watcher above).
///
/// [`Runner`]: super::Runner
/// [`Runner::new`]: super::Runner::new
pub(crate) mod later {
    use std::sync::mpsc::{Sender, channel};
    use std::sync::{Condvar, Mutex, OnceLock};
    use std::time::{Duration, Instant};

    type Job = Box<dyn FnOnce() + Send>;

    struct Janitor {
        jobs: Mutex<Sender<Job>>,
        pending: Mutex<usize>,
        idle: Condvar,
    }

    static JANITOR: OnceLock<Option<Janitor>> = OnceLock::new();

    fn janitor() -> Option<&'static Janitor> {
        JANITOR
            .get_or_init(|| {
                let (tx, rx) = channel::<Job>();
                std::thread::Builder::new()
                    .name("skillcat-teardown".into())
                    .spawn(move || {
                        for job in rx {
                            job();
                            if let Some(Some(j)) = JANITOR.get()
                                && let Ok(mut n) = j.pending.lock()
                            {
                                *n = n.saturating_sub(1);
                                j.idle.notify_all();
                            }
                        }
                    })
                    .ok()?;
                Some(Janitor {
                    jobs: Mutex::new(tx),
                    pending: Mutex::new(0),
                    idle: Condvar::new(),
                })
            })
            .as_ref()
    }

    /// Runs `job` on the teardown thread (here, when there is none).
    pub(crate) fn run(job: impl FnOnce() + Send + 'static) {
        let Some(j) = janitor() else {
            return job();
        };
        if let Ok(mut n) = j.pending.lock() {
            *n += 1;
        }
        let sent = j.jobs.lock().map(|tx| tx.send(Box::new(job)));
        match sent {
            Ok(Ok(())) => {}
            // The thread is gone: done here.
            Ok(Err(e)) => {
                if let Ok(mut n) = j.pending.lock() {
                    *n = n.saturating_sub(1);
                }
                (e.0)();
            }
            Err(_) => {}
        }
    }

    /// Waits (at most `max`) until every job handed over so far is done.
    pub(crate) fn settle(max: Duration) {
        let Some(Some(j)) = JANITOR.get() else {
            return;
        };
        let deadline = Instant::now() + max;
        let Ok(mut n) = j.pending.lock() else { return };
        while *n > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            n = match j.idle.wait_timeout(n, left) {
                Ok((n, _)) => n,
                Err(_) => return,
            };
        }
    }
}
