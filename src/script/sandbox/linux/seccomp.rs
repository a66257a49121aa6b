//! The seccomp filters of a run, compiled before the fork and installed last in the child.
//!
//! Two filters (the kernel applies the most restrictive answer of all installed filters):
//!
//! - **guard** (hand-written): on x86_64 any x32 system call (`nr >= 0x4000_0000`, which
//!   seccompiler's arch check lets through) gets EPERM; every number above
//!   [`HIGHEST_REVIEWED`] gets ENOSYS (a call added to the kernel after the last review is
//!   refused, not allowed by default); `clone3` gets ENOSYS, because its flags sit in memory a
//!   filter cannot read (the C library then falls back to `clone`, whose flags the main filter
//!   checks).
//! - **main** (seccompiler, default allow, EPERM on match): `socket`/`socketpair` for any family
//!   but `AF_UNIX` when the network is off; always `ptrace`, `process_vm_*`, `io_uring_*`,
//!   `bpf`, the mount family, `pivot_root`, `unshare`, `setns`, `keyctl`/`add_key`/
//!   `request_key`, `perf_event_open`, `userfaultfd`, `setsid`, `setpgid`, `statmount`,
//!   `listmount`, `inotify_init*`, `fanotify_init`, `memfd_create`, `memfd_secret`, `shmget`;
//!   `clone` with any namespace flag; `chmod`/`fchmod`/`fchmodat`/`fchmodat2` setting S_ISUID or
//!   S_ISGID, and `open`/`openat`/`creat`/`mknod*`/`mkdir*` creating with either bit.
//!   Without network also `connect` of any socket, and `socket`/`socketpair` of an AF_UNIX
//!   datagram, raw or seqpacket socket (those reach a named socket with `sendto`/`sendmsg` and
//!   an address, without `connect`): no pathname or abstract UNIX socket of the host (a D-Bus
//!   bus, an ssh-agent, a docker.sock, `/dev/log`, the journal, `systemd/notify`) is reachable;
//!   a stream `socketpair` still works. `sendto`, `sendmsg`, `recvfrom` stay open: on a stream
//!   socket that cannot connect the address is ignored.
//! - **shared uid** (a non-root host, whose scripts keep the host user's uid): the path-based
//!   metadata calls Landlock does not govern (`chmod`, `fchmodat*`, `chown`, `lchown`,
//!   `fchownat`, `utime`, `utimes`, `futimesat`, `utimensat` with a path, `setxattr`,
//!   `lsetxattr`, `removexattr`, `lremovexattr`) are refused outright, so a script cannot change
//!   the host user's files it can merely name. The fd-based forms stay (they need a file Landlock
//!   let the script open).

use std::collections::BTreeMap;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Both compiled filters.
pub(super) struct Filters {
    guard: Vec<libc::sock_filter>,
    main: BpfProgram,
}

/// `statmount` and `listmount` (Linux 6.8; the same number on every architecture): they read the
/// host's mount table, which the script has no business seeing.
const STATMOUNT: i64 = 457;
const LISTMOUNT: i64 = 458;

/// The bits of `socket`'s type argument that hold the type (the rest are SOCK_NONBLOCK and
/// SOCK_CLOEXEC).
const SOCK_TYPE_MASK: u64 = 0xf;

/// `memfd_secret` (Linux 5.14; the same number on every architecture, not named by libc for
/// every target).
const MEMFD_SECRET: i64 = 447;

/// System calls refused outright.
fn denied() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_bpf,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_setsid,
        libc::SYS_setpgid,
        STATMOUNT,
        LISTMOUNT,
        // Watching host directories the script may name but not list.
        libc::SYS_inotify_init1,
        libc::SYS_fanotify_init,
        // Anonymous memory files: held outside RLIMIT_AS, and executable with `execveat`
        // although nothing the script writes may be executed.
        libc::SYS_memfd_create,
        MEMFD_SECRET,
        // SysV shared memory lives on after the script, outside its limits.
        libc::SYS_shmget,
    ];
    #[cfg(target_arch = "x86_64")]
    v.push(libc::SYS_inotify_init);
    v.sort_unstable();
    v
}

/// The `chmod` family and the index of each one's mode argument.
fn chmods() -> Vec<(i64, u8)> {
    let mut v = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (libc::SYS_fchmodat2, 2),
    ];
    #[cfg(target_arch = "x86_64")]
    v.push((libc::SYS_chmod, 1));
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
    #[cfg(target_arch = "x86_64")]
    v.extend([
        (libc::SYS_open, Some(1), 2),
        (libc::SYS_creat, None, 1),
        (libc::SYS_mknod, None, 1),
        (libc::SYS_mkdir, None, 1),
    ]);
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
        libc::SYS_fchmodat2,
        libc::SYS_fchownat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    v
}

/// Compiles both filters. `shared_uid`: the script keeps the host user's uid (a non-root host).
pub(super) fn build(network: bool, shared_uid: bool) -> Result<Filters, String> {
    let arch: TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| format!("no seccomp support for {}", std::env::consts::ARCH))?;
    let e = |e: seccompiler::BackendError| e.to_string();
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in denied() {
        rules.insert(nr, Vec::new());
    }
    if !network {
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
    }
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
    if shared_uid {
        for nr in path_metadata() {
            rules.insert(nr, Vec::new());
        }
        // utimensat(fd, NULL, …) is futimens; with a path it is refused.
        let c =
            SeccompCondition::new(1, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0).map_err(e)?;
        rules.insert(
            libc::SYS_utimensat,
            vec![SeccompRule::new(vec![c]).map_err(e)?],
        );
    }
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
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(e)?;
    let main: BpfProgram = filter
        .try_into()
        .map_err(|err: seccompiler::BackendError| err.to_string())?;
    Ok(Filters {
        guard: guard(),
        main,
    })
}

/// The highest system call number reviewed for this filter (`mseal`, 462: Linux 6.10). Every
/// number above it — calls added to the kernel later, such as `setxattrat` (463),
/// `removexattrat` (466) or `file_setattr` (469), which act by path where Landlock does not
/// look — gets ENOSYS until someone reviews it and raises this bound. From 424 on, system call
/// numbers are the same on every architecture.
pub(super) const HIGHEST_REVIEWED: u32 = 462;

/// Reviewed calls refused with ENOSYS (as if the kernel lacked them, so the C library falls
/// back): `clone3` and `openat2`, whose flags and mode sit in memory a filter cannot read (the
/// fallbacks `clone` and `openat` have theirs checked by the main filter).
fn enosys() -> Vec<u32> {
    vec![libc::SYS_clone3 as u32, libc::SYS_openat2 as u32]
}

/// The hand-written guard: x32 → EPERM, every number above [`HIGHEST_REVIEWED`] and each of
/// [`enosys`] → ENOSYS, everything else allowed (the main filter still applies).
fn guard() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
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
    let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let listed = enosys();
    // Layout: 0 load arch, 1 arch check, 2 load nr, 3 x32, 4 above the reviewed bound, then one
    // JEQ per listed call, then RET ENOSYS, RET EPERM, RET ALLOW.
    let first_jeq = 5;
    let ret_enosys = first_jeq + listed.len();
    let ret_eperm = ret_enosys + 1;
    let ret_allow = ret_eperm + 1;
    let off = |from: usize, to: usize| (to - from - 1) as u8;
    let mut g = vec![
        ins(LD_W_ABS, 0, 0, ARCH),
        ins(JEQ_K, 0, off(1, ret_allow), AUDIT_ARCH),
        ins(LD_W_ABS, 0, 0, NR),
        ins(JGE_K, off(3, ret_eperm), 0, X32_FROM),
        ins(JGT_K, off(4, ret_enosys), 0, HIGHEST_REVIEWED),
    ];
    for (i, nr) in listed.iter().enumerate() {
        let at = first_jeq + i;
        let jf = if i + 1 == listed.len() {
            off(at, ret_allow)
        } else {
            0
        };
        g.push(ins(JEQ_K, off(at, ret_enosys), jf, *nr));
    }
    g.push(ins(
        RET_K,
        0,
        0,
        libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
    ));
    g.push(ins(
        RET_K,
        0,
        0,
        libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
    ));
    g.push(ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    g
}

/// Installs the guard, then the main filter (both need no_new_privs, which Landlock has set).
pub(super) fn apply(f: &Filters) -> io::Result<()> {
    let prog = libc::sock_fprog {
        len: f.guard.len() as u16,
        filter: f.guard.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies the program; `prog` and the vector outlive the call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    seccompiler::apply_filter(&f.main).map_err(|e| io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_with_and_without_network() {
        for (network, shared) in [(false, false), (true, false), (false, true), (true, true)] {
            let f = build(network, shared).unwrap();
            assert_eq!(f.guard.len(), 8 + enosys().len());
            assert!(f.main.len() > 40);
        }
    }

    #[test]
    fn guard_jumps_land_on_returns() {
        let g = guard();
        for (i, ins) in g.iter().enumerate() {
            if ins.code & 0x07 == 0x05 {
                for off in [ins.jt, ins.jf] {
                    let t = i + 1 + off as usize;
                    assert!(t < g.len(), "jump from {i} leaves the program");
                }
            }
        }
        assert_eq!(g.last().unwrap().k, libc::SECCOMP_RET_ALLOW);
    }
}
