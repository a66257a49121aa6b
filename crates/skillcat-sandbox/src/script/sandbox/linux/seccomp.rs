//! The seccomp filters of a run, compiled before the fork and installed last in the child.
//!
//! Two filters (the kernel applies the most restrictive answer of all installed filters):
//!
//! - **guard** (hand-written): the **allow-list**. Every system call of this architecture is in
//!   one of three classes, reviewed one by one in [`reviewed`]:
//!   - *allowed*: what interpreters (sh, bash, python3, awk, node) and the programs they start
//!     need — file I/O on descriptors and on paths Landlock governs, memory, processes and
//!     threads inside the PID namespace, signals, time, polling, sockets (their families and
//!     types checked by the main filter), identity getters; the guard lets them through to the
//!     main filter, which checks arguments where an argument decides;
//!   - *refused* (EPERM): calls reviewed and refused, because they reach outside the sandbox or
//!     hold resources outside its limits (`ptrace`, `io_uring`, `bpf`, the mount API,
//!     namespaces, keyrings, `memfd_create`, SysV and POSIX message IPC, `statmount`, `sync`
//!     and `syncfs`, …);
//!   - everything else (ENOSYS): calls nobody reviewed (any number added to the kernel later,
//!     such as `getxattrat` or `file_getattr`), privileged or obsolete ones (`reboot`,
//!     `init_module`, `syslog`, `acct`, `modify_ldt`, `uselib`, …), and `clone3` and `openat2`,
//!     whose flags sit in memory a filter cannot read (the C library falls back to `clone`
//!     and `openat`, whose arguments the main filter checks). ENOSYS is what a program sees on
//!     a kernel without the call, so it takes its fallback.
//!
//!   On x86_64 every x32 system call (`nr >= 0x4000_0000`, which seccompiler's arch check lets
//!   through) gets EPERM.
//! - **main** (seccompiler, default allow, EPERM on match): the argument checks of allowed
//!   calls. Without network: `socket`/`socketpair` of any family but `AF_UNIX`, and of an
//!   AF_UNIX datagram, raw or seqpacket socket (those reach a named socket with
//!   `sendto`/`sendmsg` and an address, without `connect`), and `connect` of any socket: no
//!   pathname or abstract UNIX socket of the host (a D-Bus bus, an ssh-agent, a docker.sock,
//!   `/dev/log`, the journal, `systemd/notify`) is reachable; a stream `socketpair` still
//!   works. `sendto`, `sendmsg`, `recvfrom` stay open: on a stream socket that cannot connect
//!   the address is ignored. Always: `clone` with any namespace flag; `chmod`/`fchmod`/
//!   `fchmodat`/`fchmodat2` setting S_ISUID or S_ISGID, and `open`/`openat`/`creat`/`mknod*`/
//!   `mkdir*` creating with either bit; `ioctl` `TIOCSTI` and `TIOCLINUX` (typing into a
//!   terminal); `prlimit64` on another process; `personality` but the plain Linux personas
//!   (no `ADDR_NO_RANDOMIZE`, no `READ_IMPLIES_EXEC`).
//! - **shared uid** (a non-root host, whose scripts keep the host user's uid): every metadata
//!   call Landlock does not govern is refused outright, by path (`chmod`, `fchmodat*`, `chown`,
//!   `lchown`, `fchownat`, `utime`, `utimes`, `futimesat`, `utimensat`, `setxattr`, `lsetxattr`,
//!   `removexattr`, `lremovexattr`) and by descriptor (`fchmod`, `fchown`, `futimens`,
//!   `fsetxattr`, `fremovexattr`): the script owns what the host user owns, so ownership would
//!   let it change the mode, times and attributes of a file granted read-only that it opened
//!   `O_RDONLY`.

use std::collections::BTreeMap;
use std::io;

use super::super::NetMode;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Both compiled filters.
pub(super) struct Filters {
    guard: Vec<libc::sock_filter>,
    main: Vec<libc::sock_filter>,
}

/// The bits of `socket`'s type argument that hold the type (the rest are SOCK_NONBLOCK and
/// SOCK_CLOEXEC).
const SOCK_TYPE_MASK: u64 = 0xf;

/// What the guard answers for a reviewed system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Let through (the main filter may still refuse some arguments with EPERM).
    Allowed,
    /// Refused with EPERM.
    Refused,
}

/// System calls the kernel exempts from every seccomp filter (x86_64, Linux 6.11 and later):
/// `uretprobe` and `uprobe` act only when called from the kernel's own probe trampolines;
/// called from anywhere else they kill the caller with SIGILL (`uretprobe`) or fail with ENXIO
/// (`uprobe`), so there is nothing to filter. Listed for the record and for tests that sweep
/// every number.
pub fn kernel_exempt() -> &'static [(&'static str, u32)] {
    if cfg!(target_arch = "x86_64") {
        &[("uretprobe", 335), ("uprobe", 336)]
    } else {
        &[]
    }
}

/// Extends `$v` with `$e` on x86_64 (the legacy calls it keeps beside the generic ones), and
/// with nothing elsewhere (where `libc` does not even name them).
macro_rules! extend_on_x86_64 {
    ($v:ident, $e:expr) => {
        #[cfg(target_arch = "x86_64")]
        $v.extend($e);
        #[cfg(not(target_arch = "x86_64"))]
        let _ = &mut $v;
    };
}

/// `(name, number)` pairs from `libc::SYS_*` names (the name without `SYS_`).
macro_rules! calls {
    ($($name:ident),* $(,)?) => {
        [$((stringify!($name).trim_start_matches("SYS_"), libc::$name as u32)),*]
    };
}

/// Every reviewed system call of this architecture, with what the guard does with it; a number
/// not listed gets ENOSYS. Names are the kernel's (`SYS_` dropped).
///
/// Numbers from 424 on are the same on every architecture and are written out (not every
/// target's `libc` names them all).
pub fn reviewed() -> Vec<(&'static str, u32, Verdict)> {
    let (allowed, refused) = (allowed(), refused());
    // From 424 on: the same numbers everywhere.
    let newer = newer();
    let mut all: Vec<(&'static str, u32, Verdict)> = Vec::new();
    for (name, nr) in allowed {
        all.push((name, nr, Verdict::Allowed));
    }
    for (name, nr) in refused {
        all.push((name, nr, Verdict::Refused));
    }
    all.extend(newer);
    all.sort_unstable_by_key(|(_, nr, _)| *nr);
    all
}

/// The calls allowed (some with their arguments checked), x86_64's legacy ones included.
fn allowed() -> Vec<(&'static str, u32)> {
    // Allowed on every architecture.
    let mut allowed = calls! {
        // Descriptors: read, write, seek, duplicate, control, pipes, zero-copy moves.
        SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_pread64, SYS_pwrite64, SYS_preadv,
        SYS_pwritev, SYS_preadv2, SYS_pwritev2, SYS_lseek, SYS_close, SYS_dup, SYS_dup3, SYS_fcntl,
        SYS_flock, SYS_ioctl, SYS_pipe2, SYS_sendfile, SYS_splice, SYS_tee, SYS_vmsplice,
        SYS_copy_file_range,
        // Paths (Landlock decides what each may reach; `openat` also has its mode checked).
        SYS_openat, SYS_fstat, SYS_newfstatat, SYS_statx, SYS_statfs, SYS_fstatfs, SYS_faccessat,
        SYS_readlinkat, SYS_getcwd, SYS_chdir, SYS_fchdir, SYS_getdents64, SYS_mkdirat,
        SYS_unlinkat, SYS_renameat2, SYS_linkat, SYS_symlinkat, SYS_mknodat, SYS_truncate,
        SYS_ftruncate, SYS_fallocate, SYS_fsync, SYS_fdatasync, SYS_fadvise64, SYS_readahead,
        SYS_umask,
        // Metadata (set-id bits checked; path forms refused when the script shares the host
        // user's uid).
        SYS_fchmod, SYS_fchmodat, SYS_fchown, SYS_fchownat, SYS_utimensat, SYS_getxattr,
        SYS_lgetxattr, SYS_fgetxattr, SYS_listxattr, SYS_llistxattr, SYS_flistxattr, SYS_setxattr,
        SYS_lsetxattr, SYS_fsetxattr, SYS_removexattr, SYS_lremovexattr, SYS_fremovexattr,
        // Memory (bounded by RLIMIT_AS).
        SYS_mmap, SYS_munmap, SYS_mprotect, SYS_mremap, SYS_madvise, SYS_msync, SYS_mincore,
        SYS_mlock, SYS_mlock2, SYS_munlock, SYS_mlockall, SYS_munlockall, SYS_brk, SYS_membarrier,
        SYS_pkey_alloc, SYS_pkey_free, SYS_pkey_mprotect,
        // Processes and threads (inside the PID namespace; `clone` has its flags checked).
        SYS_clone, SYS_execve, SYS_execveat, SYS_exit, SYS_exit_group, SYS_wait4, SYS_waitid,
        SYS_set_tid_address, SYS_set_robust_list, SYS_get_robust_list, SYS_rseq, SYS_futex,
        // Signals (Landlock scopes them to the sandbox).
        SYS_kill, SYS_tkill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo,
        SYS_rt_sigaction, SYS_rt_sigprocmask, SYS_rt_sigpending, SYS_rt_sigsuspend,
        SYS_rt_sigtimedwait, SYS_rt_sigreturn, SYS_sigaltstack, SYS_restart_syscall,
        // Time and timers.
        SYS_nanosleep, SYS_clock_nanosleep, SYS_clock_gettime, SYS_clock_getres, SYS_gettimeofday,
        SYS_times, SYS_getitimer, SYS_setitimer, SYS_timer_create, SYS_timer_settime,
        SYS_timer_gettime, SYS_timer_getoverrun, SYS_timer_delete, SYS_timerfd_create,
        SYS_timerfd_settime, SYS_timerfd_gettime,
        // Waiting for descriptors.
        SYS_epoll_create1, SYS_epoll_ctl, SYS_epoll_pwait, SYS_ppoll, SYS_pselect6, SYS_eventfd2,
        SYS_signalfd4,
        // Identity (changing it needs capabilities the script does not have).
        SYS_getpid, SYS_getppid, SYS_gettid, SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid,
        SYS_getresuid, SYS_getresgid, SYS_getgroups, SYS_getpgid, SYS_getsid, SYS_setuid,
        SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid, SYS_setresgid, SYS_setfsuid,
        SYS_setfsgid, SYS_setgroups, SYS_capget, SYS_capset,
        // Limits, scheduling, system information (`prlimit64` only on the caller itself,
        // `personality` only the plain personas).
        SYS_prlimit64, SYS_getrusage, SYS_getpriority, SYS_setpriority, SYS_sched_yield,
        SYS_sched_getaffinity, SYS_sched_setaffinity, SYS_sched_getparam, SYS_sched_setparam,
        SYS_sched_getscheduler, SYS_sched_setscheduler, SYS_sched_get_priority_max,
        SYS_sched_get_priority_min, SYS_sched_rr_get_interval, SYS_sched_getattr, SYS_sched_setattr,
        SYS_ioprio_get, SYS_ioprio_set, SYS_uname, SYS_sysinfo, SYS_getrandom, SYS_getcpu,
        SYS_prctl, SYS_personality, SYS_seccomp,
        // Sockets (families and types checked; `connect` refused without network).
        SYS_socket, SYS_socketpair, SYS_bind, SYS_listen, SYS_accept, SYS_accept4, SYS_connect,
        SYS_getsockname, SYS_getpeername, SYS_getsockopt, SYS_setsockopt, SYS_shutdown, SYS_sendto,
        SYS_recvfrom, SYS_sendmsg, SYS_recvmsg, SYS_sendmmsg, SYS_recvmmsg,
    }
    .to_vec();
    // The legacy calls x86_64 keeps beside the generic ones.
    extend_on_x86_64!(
        allowed,
        calls! {
            SYS_open, SYS_creat, SYS_stat, SYS_lstat, SYS_access, SYS_readlink, SYS_getdents,
            SYS_mkdir, SYS_rmdir, SYS_unlink, SYS_rename, SYS_renameat, SYS_link, SYS_symlink,
            SYS_mknod, SYS_chmod, SYS_chown, SYS_lchown, SYS_utime, SYS_utimes, SYS_futimesat,
            SYS_pipe, SYS_dup2, SYS_poll, SYS_select, SYS_epoll_create, SYS_epoll_wait, SYS_eventfd,
            SYS_signalfd, SYS_sync_file_range, SYS_fork, SYS_vfork, SYS_pause, SYS_alarm, SYS_time,
            SYS_getrlimit, SYS_setrlimit, SYS_getpgrp, SYS_arch_prctl,
        }
    );
    allowed
}

/// The calls refused (EPERM) on this architecture.
fn refused() -> Vec<(&'static str, u32)> {
    let mut refused = calls! {
        // Other processes' memory and the kernel's debugging interfaces.
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_kcmp, SYS_perf_event_open,
        SYS_bpf, SYS_userfaultfd,
        // Mounts, roots and namespaces.
        SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns,
        // Kernel keyrings (shared with the host user's session).
        SYS_keyctl, SYS_add_key, SYS_request_key,
        // Leaving the process group the supervisor kills.
        SYS_setsid, SYS_setpgid,
        // Watching host directories the script may name but not list.
        SYS_inotify_init1, SYS_fanotify_init,
        // Writeback of every file system of the host (`sync`), or of the whole one under the
        // workspace (`syncfs`): I/O for others' files, outside the run's limits. A script's own
        // files have `fsync` and `fdatasync`.
        SYS_sync, SYS_syncfs,
        // Memory files: held outside RLIMIT_AS, and executable with `execveat` although
        // nothing the script writes may be executed.
        SYS_memfd_create,
        // SysV and POSIX message IPC: objects that outlive the script, outside its limits.
        SYS_shmget, SYS_shmat, SYS_shmdt, SYS_shmctl, SYS_msgget, SYS_msgsnd, SYS_msgrcv,
        SYS_msgctl, SYS_semget, SYS_semop, SYS_semtimedop, SYS_semctl, SYS_mq_open, SYS_mq_unlink,
        SYS_mq_timedsend, SYS_mq_timedreceive, SYS_mq_notify, SYS_mq_getsetattr,
    }
    .to_vec();
    extend_on_x86_64!(refused, calls![SYS_inotify_init]);
    refused
}

/// The calls from 424 on, the same numbers on every architecture, with their verdicts.
fn newer() -> [(&'static str, u32, Verdict); 34] {
    use Verdict::{Allowed as A, Refused as R};
    [
        ("pidfd_send_signal", 424, A),
        // io_uring does what the filter checks (opens, sockets) without system calls.
        ("io_uring_setup", 425, R),
        ("io_uring_enter", 426, R),
        ("io_uring_register", 427, R),
        ("open_tree", 428, R),
        ("move_mount", 429, R),
        ("fsopen", 430, R),
        ("fsconfig", 431, R),
        ("fsmount", 432, R),
        ("fspick", 433, R),
        ("pidfd_open", 434, A),
        ("close_range", 436, A),
        // Another process's descriptors, another process's memory advice.
        ("pidfd_getfd", 438, R),
        ("faccessat2", 439, A),
        ("process_madvise", 440, R),
        ("epoll_pwait2", 441, A),
        ("mount_setattr", 442, R),
        // A script may confine itself further.
        ("landlock_create_ruleset", 444, A),
        ("landlock_add_rule", 445, A),
        ("landlock_restrict_self", 446, A),
        ("memfd_secret", 447, R),
        ("futex_waitv", 449, A),
        ("fchmodat2", 452, A),
        ("map_shadow_stack", 453, A),
        ("futex_wake", 454, A),
        ("futex_wait", 455, A),
        ("futex_requeue", 456, A),
        // The host's mount table.
        ("statmount", 457, R),
        ("listmount", 458, R),
        ("mseal", 462, A),
        // Metadata by path, where Landlock does not look.
        ("setxattrat", 463, R),
        ("removexattrat", 466, R),
        ("open_tree_attr", 467, R),
        ("file_setattr", 469, R),
    ]
}

/// `fchmodat2` (Linux 6.6; the same number everywhere, not named by every target's `libc`).
const SYS_FCHMODAT2: i64 = 452;

/// The `chmod` family and the index of each one's mode argument.
fn chmods() -> Vec<(i64, u8)> {
    let mut v = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (SYS_FCHMODAT2, 2),
    ];
    extend_on_x86_64!(v, [(libc::SYS_chmod, 1)]);
    v
}

/// Calls that create a file or directory, the index of their flags argument (`None`: they
/// always create) and of their mode argument.
fn creators() -> Vec<(i64, Option<u8>, u8)> {
    let mut v = vec![
        (libc::SYS_openat, Some(2), 3),
        (libc::SYS_mknodat, None, 2),
        (libc::SYS_mkdirat, None, 2),
    ];
    extend_on_x86_64!(
        v,
        [
            (libc::SYS_open, Some(1), 2),
            (libc::SYS_creat, None, 1),
            (libc::SYS_mknod, None, 1),
            (libc::SYS_mkdir, None, 1),
        ]
    );
    v
}

const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// Path-based metadata calls, refused when the script shares the host user's uid.
fn path_metadata() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_fchmodat,
        SYS_FCHMODAT2,
        libc::SYS_fchownat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
    ];
    extend_on_x86_64!(
        v,
        [
            libc::SYS_chmod,
            libc::SYS_chown,
            libc::SYS_lchown,
            libc::SYS_utime,
            libc::SYS_utimes,
            libc::SYS_futimesat,
        ]
    );
    v
}

/// Descriptor-based metadata calls (and `utimensat`, whose NULL path makes it `futimens`),
/// refused with the path-based ones when the script shares the host user's uid.
fn fd_metadata() -> Vec<i64> {
    vec![
        libc::SYS_fchmod,
        libc::SYS_fchown,
        libc::SYS_utimensat,
        libc::SYS_fsetxattr,
        libc::SYS_fremovexattr,
    ]
}

/// `ioctl` requests refused whatever the descriptor (the values of x86_64, aarch64 and riscv64;
/// not named by `libc` everywhere).
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// `personality` values a script may set: `PER_LINUX`, `PER_LINUX32`, `UNAME26` with either,
/// and `0xffffffff` (the query).
const PLAIN_PERSONAS: [u64; 5] = [0, 0x0008, 0x0002_0000, 0x0002_0008, 0xffff_ffff];

/// Compiles both filters. `shared_uid`: the script keeps the host user's uid (a non-root host).
pub(super) fn build(network: NetMode, shared_uid: bool) -> Result<Filters, String> {
    let arch: TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| format!("no seccomp support for {}", std::env::consts::ARCH))?;
    let e = backend_error;
    let mut rules: Rules = BTreeMap::new();
    argument_rules(&mut rules)?;
    if network == NetMode::Proxied {
        proxied_socket_rules(&mut rules)?;
    }
    if network == NetMode::Off {
        offline_socket_rules(&mut rules)?;
    }
    set_id_rules(&mut rules)?;
    if shared_uid {
        // The script owns every file the host user owns, so ownership lets it change the mode,
        // times and extended attributes of anything it can name or open — a file granted
        // read-only included (opened O_RDONLY, then fchmod). Landlock governs none of these
        // calls, so none of them is allowed, by path or by descriptor.
        for nr in path_metadata().into_iter().chain(fd_metadata()) {
            rules.insert(nr, Vec::new());
        }
    }
    clone_rules(&mut rules)?;
    let ruled: Vec<i64> = rules.keys().copied().collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(e)?;
    let chain: BpfProgram = filter
        .try_into()
        .map_err(|err: seccompiler::BackendError| err.to_string())?;
    let chain = chain.iter().map(|i| ins(i.code, i.jt, i.jf, i.k));
    let main = match fast_allow(&ruled) {
        Some(mut m) => {
            m.extend(chain);
            m
        }
        None => chain.collect(),
    };
    Ok(Filters {
        guard: guard(),
        main,
    })
}

/// The main filter's rules: for each call, the conditions under which it is refused (EPERM).
type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// A rule-building error, as text.
fn backend_error(e: seccompiler::BackendError) -> String {
    e.to_string()
}

/// One rule of conditions on a 32-bit argument, all of which must hold.
fn all_of(arg: u8, ops: &[(SeccompCmpOp, u64)]) -> Result<SeccompRule, String> {
    let e = backend_error;
    let conds = ops
        .iter()
        .map(|(op, v)| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op.clone(), *v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e)?;
    SeccompRule::new(conds).map_err(e)
}

/// Calls refused for some of their arguments: terminal and console `ioctl`s, another
/// process's limits, personas other than the plain ones.
fn argument_rules(rules: &mut Rules) -> Result<(), String> {
    // Typing into a terminal (TIOCSTI) or driving the console (TIOCLINUX).
    rules.insert(
        libc::SYS_ioctl,
        vec![
            all_of(1, &[(SeccompCmpOp::Eq, TIOCSTI)])?,
            all_of(1, &[(SeccompCmpOp::Eq, TIOCLINUX)])?,
        ],
    );
    // Another process's limits (the C library's getrlimit/setrlimit pass pid 0).
    rules.insert(
        libc::SYS_prlimit64,
        vec![all_of(0, &[(SeccompCmpOp::Ne, 0)])?],
    );
    // Any persona but the plain ones (and the query): no ADDR_NO_RANDOMIZE for children, no
    // READ_IMPLIES_EXEC.
    let plain: Vec<(SeccompCmpOp, u64)> = PLAIN_PERSONAS
        .iter()
        .map(|p| (SeccompCmpOp::Ne, *p))
        .collect();
    rules.insert(libc::SYS_personality, vec![all_of(0, &plain)?]);
    Ok(())
}

/// Sockets of a proxied run: IPv4 and IPv6 stream sockets, and stream socket pairs.
fn proxied_socket_rules(rules: &mut Rules) -> Result<(), String> {
    let e = backend_error;
    // Only IPv4 and IPv6 stream sockets: in the run's own network namespace, where loopback
    // is the only interface and the proxy the only listener, they reach the proxy and
    // nothing else. No AF_UNIX socket (a host daemon's pathname socket, the abstract
    // namespace), no AF_NETLINK (routes, addresses), no AF_PACKET, no datagram (UDP, DNS)
    // or raw socket of any family.
    //
    // A socket of any type but SOCK_STREAM (the type's low bits, its flags masked off).
    let non_stream = || -> Result<Vec<SeccompRule>, String> {
        (0..=SOCK_TYPE_MASK)
            .filter(|t| *t != libc::SOCK_STREAM as u64)
            .map(|ty| {
                let c = SeccompCondition::new(
                    1,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                    ty,
                )
                .map_err(e)?;
                SeccompRule::new(vec![c]).map_err(e)
            })
            .collect()
    };
    let mut chain = vec![
        SeccompRule::new(vec![
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_INET as u64,
            )
            .map_err(e)?,
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_INET6 as u64,
            )
            .map_err(e)?,
        ])
        .map_err(e)?,
    ];
    chain.extend(non_stream()?);
    rules.insert(libc::SYS_socket, chain);
    // A stream socketpair stays (it reaches nothing); others as without network.
    let mut pair = vec![
        SeccompRule::new(vec![
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )
            .map_err(e)?,
        ])
        .map_err(e)?,
    ];
    pair.extend(non_stream()?);
    rules.insert(libc::SYS_socketpair, pair);
    Ok(())
}

/// Sockets of a run without network: `AF_UNIX` stream sockets only, and no `connect`.
fn offline_socket_rules(rules: &mut Rules) -> Result<(), String> {
    let e = backend_error;
    // Any family but AF_UNIX; and AF_UNIX sockets of any type but SOCK_STREAM (datagram
    // and seqpacket sockets reach a named socket with `sendto`/`sendmsg` and an address,
    // no `connect` needed; AF_UNIX makes SOCK_RAW a datagram socket).
    let refused = || -> Result<Vec<SeccompRule>, String> {
        let mut chain = vec![
            SeccompRule::new(vec![
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    libc::AF_UNIX as u64,
                )
                .map_err(e)?,
            ])
            .map_err(e)?,
        ];
        for ty in [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_SEQPACKET] {
            let c = SeccompCondition::new(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                ty as u64,
            )
            .map_err(e)?;
            chain.push(SeccompRule::new(vec![c]).map_err(e)?);
        }
        Ok(chain)
    };
    rules.insert(libc::SYS_socket, refused()?);
    rules.insert(libc::SYS_socketpair, refused()?);
    rules.insert(libc::SYS_connect, Vec::new());
    Ok(())
}

/// No set-id bit, by `chmod` or in the mode of a file created.
fn set_id_rules(rules: &mut Rules) -> Result<(), String> {
    let e = backend_error;
    for (nr, arg) in chmods() {
        let mut chain = Vec::new();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            let c = SeccompCondition::new(
                arg,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )
            .map_err(e)?;
            chain.push(SeccompRule::new(vec![c]).map_err(e)?);
        }
        rules.insert(nr, chain);
    }
    // A file (or directory) created with S_ISUID or S_ISGID in its mode (`open(O_CREAT, 06755)`):
    // refused like the chmod that would set them.
    for (nr, flags, mode) in creators() {
        let mut chain = Vec::new();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            let has_bit = || {
                SeccompCondition::new(
                    mode,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(bit),
                    bit,
                )
                .map_err(e)
            };
            match flags {
                None => chain.push(SeccompRule::new(vec![has_bit()?]).map_err(e)?),
                Some(flags) => {
                    // The mode counts only when the call creates: O_CREAT or O_TMPFILE.
                    for create in [libc::O_CREAT as u64, libc::O_TMPFILE as u64] {
                        let creates = SeccompCondition::new(
                            flags,
                            SeccompCmpArgLen::Dword,
                            SeccompCmpOp::MaskedEq(create),
                            create,
                        )
                        .map_err(e)?;
                        chain.push(SeccompRule::new(vec![creates, has_bit()?]).map_err(e)?);
                    }
                }
            }
        }
        rules.insert(nr, chain);
    }
    Ok(())
}

/// No `clone` into a new namespace.
fn clone_rules(rules: &mut Rules) -> Result<(), String> {
    let e = backend_error;
    let mut chain = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = flag as u32 as u64;
        let c = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(e)?;
        chain.push(SeccompRule::new(vec![c]).map_err(e)?);
    }
    rules.insert(libc::SYS_clone, chain);
    Ok(())
}

// Classic BPF, as the kernel's seccomp takes it.
const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JA: u16 = 0x05; // BPF_JMP | BPF_JA
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGT_K: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K
const NR: u32 = 0;
const ARCH: u32 = 4;
// AUDIT_ARCH_* of this target, and where its alien ABI's numbers start (x32 on x86_64;
// elsewhere a number no call reaches).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "x86_64")]
const X32_FROM: u32 = 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xC000_00F3;
#[cfg(not(target_arch = "x86_64"))]
const X32_FROM: u32 = u32::MAX;
const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

fn ins(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The hand-written guard: another ABI's calls pass on to the main filter (whose arch check
/// kills them); x32 → EPERM; each [`reviewed`] call allowed or refused (EPERM); any other
/// number → ENOSYS. Numbers are found by a binary search over the ranges of consecutive
/// numbers with the same verdict: a call goes through about ten instructions, not one test
/// per range. That is what the kernel pays when the filter is installed, too: it runs the
/// filter once for every number to learn which are always allowed (its cache), and on a
/// linear list of ranges that was most of a run's setup.
fn guard() -> Vec<libc::sock_filter> {
    let mut g = vec![
        ins(LD_W_ABS, 0, 0, ARCH),
        ins(JEQ_K, 1, 0, AUDIT_ARCH),
        ins(RET_K, 0, 0, ALLOW),
        ins(LD_W_ABS, 0, 0, NR),
        ins(JGE_K, 0, 1, X32_FROM),
        ins(RET_K, 0, 0, EPERM),
    ];
    g.extend(search(&ranges(&reviewed())));
    g
}

/// The binary search over `ranges` (sorted, disjoint) of the number in the accumulator: each
/// range's verdict inside it, ENOSYS between them. Its last instruction returns ENOSYS.
fn search(ranges: &[(u32, u32, Verdict)]) -> Vec<libc::sock_filter> {
    match ranges {
        [] => vec![ins(RET_K, 0, 0, ENOSYS)],
        [(lo, hi, verdict)] => {
            let verdict = match verdict {
                Verdict::Allowed => ALLOW,
                Verdict::Refused => EPERM,
            };
            // lo <= nr <= hi → the verdict; else ENOSYS.
            vec![
                ins(JGE_K, 0, 2, *lo),
                ins(JGT_K, 1, 0, *hi),
                ins(RET_K, 0, 0, verdict),
                ins(RET_K, 0, 0, ENOSYS),
            ]
        }
        _ => {
            let (below, from) = ranges.split_at(ranges.len() / 2);
            let (below, from) = (search(below), search(from));
            let pivot = ranges[ranges.len() / 2].0;
            let mut code = Vec::with_capacity(below.len() + from.len() + 2);
            match u8::try_from(below.len()) {
                // nr >= pivot → over the lower half.
                Ok(over) => code.push(ins(JGE_K, over, 0, pivot)),
                // Too far for a conditional jump (8 bits): through an unconditional one.
                Err(_) => {
                    code.push(ins(JGE_K, 0, 1, pivot));
                    code.push(ins(JA, 0, 0, below.len() as u32));
                }
            }
            code.extend(below);
            code.extend(from);
            code
        }
    }
}

/// Ahead of seccompiler's main filter: a call of this architecture with no argument rule is
/// allowed after a few instructions (a test per ruled number), and only the ruled ones go
/// through the main filter's chain of rules — the same answers (its default is to allow, and
/// it does its own architecture check), for a fraction of the instructions the kernel runs
/// for each number when the filter is installed. `None` when there are too many ruled numbers
/// for the jumps.
fn fast_allow(ruled: &[i64]) -> Option<Vec<libc::sock_filter>> {
    let k = ruled.len();
    // From the last test to the main filter: the jumps are 8 bits.
    let to_main = |at: usize| u8::try_from(k + 4 - (at + 1)).ok();
    let mut code = vec![
        ins(LD_W_ABS, 0, 0, ARCH),
        ins(JEQ_K, 0, to_main(1)?, AUDIT_ARCH),
        ins(LD_W_ABS, 0, 0, NR),
    ];
    for (i, &nr) in ruled.iter().enumerate() {
        code.push(ins(JEQ_K, to_main(3 + i)?, 0, u32::try_from(nr).ok()?));
    }
    code.push(ins(RET_K, 0, 0, ALLOW));
    Some(code)
}

/// Runs of consecutive numbers with the same verdict, from `reviewed` (sorted by number).
fn ranges(reviewed: &[(&str, u32, Verdict)]) -> Vec<(u32, u32, Verdict)> {
    let mut out: Vec<(u32, u32, Verdict)> = Vec::new();
    for &(_, nr, v) in reviewed {
        match out.last_mut() {
            Some((_, hi, last)) if *last == v && nr == *hi + 1 => *hi = nr,
            _ => out.push((nr, nr, v)),
        }
    }
    out
}

/// Installs the guard, then the main filter (both need no_new_privs, which Landlock has set).
pub(super) fn apply(f: &Filters) -> io::Result<()> {
    // SAFETY: prctl on integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    install(&f.guard)?;
    install(&f.main)
}

/// Installs one filter on this thread.
fn install(program: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(program.len())
        .map_err(|_| io::Error::other("a seccomp filter too long for the kernel"))?;
    let prog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies the program; `prog` and the slice outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_with_and_without_network() {
        for network in [NetMode::Off, NetMode::Proxied, NetMode::All] {
            for shared in [false, true] {
                let f = build(network, shared).unwrap();
                assert!(f.guard.len() > 3 * ranges(&reviewed()).len());
                assert!(f.main.len() > 40);
            }
        }
    }

    /// The kernel's seccomp data for one call: number, architecture, six arguments.
    fn data(nr: u32, arch: u32, args: [u64; 6]) -> [u8; 64] {
        let mut d = [0u8; 64];
        d[0..4].copy_from_slice(&nr.to_ne_bytes());
        d[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            d[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        d
    }

    /// Runs a classic BPF program on `d` as the kernel does (the instructions these filters
    /// use; any other fails the test), counting the instructions run.
    fn run(program: &[libc::sock_filter], d: &[u8; 64]) -> (u32, usize) {
        let (mut pc, mut acc, mut steps) = (0usize, 0u32, 0usize);
        loop {
            let i = program.get(pc).expect("the program runs off its end");
            steps += 1;
            let k = i.k;
            let jump = |taken: bool| 1 + if taken { i.jt } else { i.jf } as usize;
            pc += match i.code {
                LD_W_ABS => {
                    let at = k as usize;
                    acc = u32::from_ne_bytes(d[at..at + 4].try_into().unwrap());
                    1
                }
                0x54 => {
                    // BPF_ALU | BPF_AND | BPF_K
                    acc &= k;
                    1
                }
                JA => 1 + k as usize,
                JEQ_K => jump(acc == k),
                JGT_K => jump(acc > k),
                JGE_K => jump(acc >= k),
                0x45 => jump(acc & k != 0), // BPF_JMP | BPF_JSET | BPF_K
                RET_K => return (k, steps),
                other => panic!("an instruction this test does not know: {other:#x}"),
            };
        }
    }

    /// The guard's binary search answers every number as the reviewed table says (ENOSYS for
    /// the rest), x32 with EPERM and another ABI by passing it on — in a few instructions.
    #[test]
    fn the_guard_answers_every_number_as_reviewed() {
        let g = guard();
        let table = reviewed();
        let mut longest = 0;
        for nr in 0..1024u32 {
            let want = match table.iter().find(|(_, n, _)| *n == nr) {
                Some((_, _, Verdict::Allowed)) => ALLOW,
                Some((_, _, Verdict::Refused)) => EPERM,
                None => ENOSYS,
            };
            let (got, steps) = run(&g, &data(nr, AUDIT_ARCH, [0; 6]));
            assert_eq!(got, want, "number {nr}");
            longest = longest.max(steps);
        }
        assert!(
            longest <= 24,
            "a call runs {longest} instructions of the guard"
        );
        if X32_FROM != u32::MAX {
            assert_eq!(run(&g, &data(X32_FROM + 1, AUDIT_ARCH, [0; 6])).0, EPERM);
        }
        assert_eq!(run(&g, &data(1, 0x4000_0003, [0; 6])).0, ALLOW);
        // Far jumps: a search over more ranges than 8-bit offsets reach still answers each.
        let many: Vec<_> = (0..300u32)
            .map(|i| {
                (
                    4 * i,
                    4 * i + 1,
                    [Verdict::Allowed, Verdict::Refused][i as usize % 2],
                )
            })
            .collect();
        let code = search(&many);
        assert!(code.iter().any(|i| i.code == JA), "no far jump was needed");
        for nr in 0..1300u32 {
            let want = match many.iter().find(|(lo, hi, _)| (*lo..=*hi).contains(&nr)) {
                Some((_, _, Verdict::Allowed)) => ALLOW,
                Some((_, _, Verdict::Refused)) => EPERM,
                None => ENOSYS,
            };
            let mut p = vec![ins(LD_W_ABS, 0, 0, NR)];
            p.extend(code.iter().map(|i| ins(i.code, i.jt, i.jf, i.k)));
            assert_eq!(
                run(&p, &data(nr, AUDIT_ARCH, [0; 6])).0,
                want,
                "number {nr}"
            );
        }
    }

    /// The main filter with its fast path gives, for every number and a spread of arguments,
    /// the answer its chain of rules alone gives; a number without rules is allowed in a few
    /// instructions.
    #[test]
    fn the_fast_path_changes_no_answer_of_the_main_filter() {
        let args: Vec<[u64; 6]> = vec![
            [0; 6],
            [u64::MAX; 6],
            [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0],
            [libc::AF_UNIX as u64, libc::SOCK_DGRAM as u64, 0, 0, 0, 0],
            [libc::AF_UNIX as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0],
            [0, libc::CLONE_NEWUSER as u64, 0, 0, 0, 0],
            [0, 0o4755, 0o4755, 0o4755, 0, 0],
            [0, libc::TIOCSTI, 0, 0, 0, 0],
            [1, 0, 0, 0, 0, 0],
            [0x0040_0000, 0, 0, 0, 0, 0],
        ];
        for network in [NetMode::Off, NetMode::Proxied, NetMode::All] {
            for shared in [false, true] {
                let f = build(network, shared).unwrap();
                let prefix = f
                    .main
                    .iter()
                    .position(|i| i.code == RET_K && i.k == ALLOW)
                    .unwrap()
                    + 1;
                let chain = &f.main[prefix..];
                let mut refused = 0;
                for arch in [AUDIT_ARCH, 0x4000_0003] {
                    for nr in 0..600u32 {
                        for a in &args {
                            let d = data(nr, arch, *a);
                            let answer = run(&f.main, &d).0;
                            refused += usize::from(answer == EPERM);
                            assert_eq!(
                                answer,
                                run(chain, &d).0,
                                "{network:?} shared {shared}: number {nr}, arch {arch:#x}, {a:?}"
                            );
                        }
                    }
                }
                // The spread reaches the rules: many calls and arguments are refused.
                assert!(refused > 20, "{network:?}: only {refused} refusals");
                let (answer, steps) = run(&f.main, &data(0, AUDIT_ARCH, [0; 6]));
                assert_eq!(answer, ALLOW, "read");
                assert!(steps < prefix + 1, "read ran {steps} instructions");
            }
        }
    }

    #[test]
    fn every_call_is_reviewed_once() {
        let all = reviewed();
        for w in all.windows(2) {
            assert!(w[0].1 < w[1].1, "{:?} and {:?}", w[0], w[1]);
        }
        let find = |name: &str| all.iter().find(|(n, _, _)| *n == name).map(|e| e.2);
        assert_eq!(find("read"), Some(Verdict::Allowed));
        assert_eq!(find("ptrace"), Some(Verdict::Refused));
        assert_eq!(find("statmount"), Some(Verdict::Refused));
        // Not reviewed: ENOSYS, so the C library falls back.
        assert_eq!(find("clone3"), None);
        assert_eq!(find("openat2"), None);
        assert!(all.iter().all(|(_, nr, _)| *nr < 470));
    }

    #[test]
    fn guard_jumps_land_inside_and_end_with_enosys() {
        let g = guard();
        for (i, ins) in g.iter().enumerate() {
            if ins.code & 0x07 == 0x05 {
                for off in [ins.jt, ins.jf] {
                    let t = i + 1 + off as usize;
                    assert!(t < g.len(), "jump from {i} leaves the program");
                }
            }
        }
        assert_eq!(
            g.last().unwrap().k,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        );
    }

    #[test]
    fn ranges_join_consecutive_numbers_of_one_verdict() {
        use Verdict::{Allowed as A, Refused as R};
        let r = ranges(&[
            ("a", 1, A),
            ("b", 2, A),
            ("c", 3, R),
            ("d", 5, R),
            ("e", 6, R),
        ]);
        assert_eq!(r, vec![(1, 2, A), (3, 3, R), (5, 6, R)]);
    }
}
