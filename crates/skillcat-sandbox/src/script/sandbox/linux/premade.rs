//! Namespaces made ahead of a process's one run: while the host reads the source and activates
//! the skill, the zygote makes the user, network and IPC namespaces the run will have — the
//! dearest part of its `clone` (a network namespace alone is most of it) — so the helper only
//! joins them and clones the run into a PID and a mount namespace of its own.
//!
//! ```text
//! host: teardown_after_exit ──"premake"──▶ zygote: clone(NEWUSER|NEWNET|NEWIPC) a holder,
//!                                          write its id maps (as for a run), open
//!                                          /proc/<holder>/ns/{user,net,ipc}, let it go
//! host: the run ──────────────"run …"───▶ zygote: fork the helper (which takes the three
//!                                          descriptors), close its own copies: used once
//! helper: join its cgroup, open every rule (as the host's user), then setns(user, ipc, net)
//!         and clone(NEWPID|NEWNS) the run: the same namespaces as ever, ids already mapped
//! ```
//!
//! What it changes, and what not: the namespaces are as fresh as ever — made for this run,
//! joined by nothing else, never reused (the zygote hands them to one helper and closes its
//! copies; a process that asks makes one run). The only difference is who pays the kernel
//! memory of their making: the zygote's control group (the host's), not the run's; everything
//! the run then does is counted in the run's group as before. A network namespace the run does
//! not use (`network: all`) is left unjoined. Where the kernel refuses them, nothing is made and
//! the helper makes the namespaces itself, as before.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

use super::work::setns;
use super::{clone_process, pipe, release};

/// Where the helper finds the three descriptors (above every descriptor a request places).
pub(super) const USER_FD: libc::c_int = 10;
pub(super) const NET_FD: libc::c_int = 11;
pub(super) const IPC_FD: libc::c_int = 12;
/// The last of them: the helper closes every descriptor above it.
pub(super) const LAST_FD: libc::c_int = IPC_FD;
// Above every descriptor a request places, the last of which is the release socket.
const _: () = assert!(USER_FD > crate::script::sandbox::RELEASE_FD);

/// Descriptors of a user, a network and an IPC namespace made for one run.
pub(super) struct Premade {
    pub(super) user: OwnedFd,
    pub(super) net: OwnedFd,
    pub(super) ipc: OwnedFd,
}

/// The zygote's namespaces for the next helper it forks; in a helper, the ones it took.
static PREMADE: Mutex<Option<Premade>> = Mutex::new(None);

/// In the zygote: makes the namespaces of the next run (replacing any made before and not yet
/// used). Nothing is kept where the kernel refuses.
pub(super) fn make() {
    let made = make_now();
    if let Ok(mut slot) = PREMADE.lock() {
        *slot = made;
    }
}

fn make_now() -> Option<Premade> {
    let (sync_r, sync_w) = pipe().ok()?;
    // The holder: a child in the new namespaces that only waits for its ids to be mapped and
    // then for the zygote to be done with it (its release pipe closing), dying with the zygote.
    let Ok(pid) = clone_process(libc::CLONE_NEWUSER | libc::CLONE_NEWNET | libc::CLONE_NEWIPC)
    else {
        // SAFETY: closing the two ends of a pipe we made.
        unsafe {
            libc::close(sync_r);
            libc::close(sync_w);
        }
        return None;
    };
    if pid == 0 {
        // SAFETY: the holder closes the end it does not use, waits and leaves; nothing else.
        unsafe {
            libc::close(sync_w);
            if super::await_release(sync_r) {
                let mut b = [0u8; 1];
                while libc::read(sync_r, b.as_mut_ptr().cast(), 1) < 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                {
                }
            }
            libc::_exit(0);
        }
    }
    // The id maps a run's user namespace gets (`release`: 65534 inside, the run's host id or
    // the host user outside), then the holder's namespaces opened.
    if release(pid, (sync_r, sync_w), true).is_err() {
        // (`release` killed and reaped the holder.)
        // SAFETY: our end of the pipe.
        unsafe { libc::close(sync_w) };
        return None;
    }
    let open = |name: &str| -> Option<OwnedFd> {
        let path = std::ffi::CString::new(format!("/proc/{pid}/ns/{name}")).ok()?;
        // SAFETY: a C string; the descriptor is owned once, moved above any a request uses.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return None;
            }
            let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 200);
            libc::close(fd);
            (high >= 0).then(|| OwnedFd::from_raw_fd(high))
        }
    };
    let made = (|| {
        Some(Premade {
            user: open("user")?,
            net: open("net")?,
            ipc: open("ipc")?,
        })
    })();
    // The holder goes: the descriptors keep its namespaces. It is gone before the zygote does
    // anything else (the zygote ignores SIGCHLD, so the kernel reaps it and the wait returns
    // once it has): a helper the zygote becomes finds no child but its script's.
    // SAFETY: closing our end of its release pipe, signalling and waiting for our own child.
    unsafe {
        libc::close(sync_w);
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    made
}

/// In the zygote, after forking a helper: its own copies go (the helper has them).
pub(super) fn forget() {
    if let Ok(mut slot) = PREMADE.lock() {
        slot.take();
    }
}

/// In a helper the zygote just forked, before it closes what it does not keep: the inherited
/// namespaces moved to [`USER_FD`], [`NET_FD`] and [`IPC_FD`], and kept for [`take`]. Where a
/// `dup2` fails nothing is kept, and none of the three numbers is left open.
pub(super) fn hand_to_helper() {
    let Some(p) = PREMADE.lock().ok().and_then(|mut s| s.take()) else {
        return;
    };
    let moved = [(&p.user, USER_FD), (&p.net, NET_FD), (&p.ipc, IPC_FD)]
        .into_iter()
        // SAFETY: dup2 of a live descriptor onto a number above every request's.
        .all(|(fd, to)| unsafe { libc::dup2(fd.as_raw_fd(), to) } == to);
    drop(p);
    if !moved {
        for fd in USER_FD..=LAST_FD {
            // SAFETY: closing numbers this process just made duplicates on, or none.
            unsafe { libc::close(fd) };
        }
        return;
    }
    // SAFETY: the numbers were just made duplicates this process owns, once each.
    let kept = unsafe {
        Premade {
            user: OwnedFd::from_raw_fd(USER_FD),
            net: OwnedFd::from_raw_fd(NET_FD),
            ipc: OwnedFd::from_raw_fd(IPC_FD),
        }
    };
    if let Ok(mut slot) = PREMADE.lock() {
        *slot = Some(kept);
    }
}

/// In the helper: the namespaces made for its run, when there are any (once).
pub(super) fn take() -> Option<Premade> {
    PREMADE.lock().ok()?.take()
}

/// Joins the namespaces made for the run: its user namespace (where it holds every capability
/// then), its IPC namespace, and its network namespace unless `net` is false (`network: all`).
pub(super) fn join(p: &Premade, net: bool) -> std::io::Result<()> {
    setns(&p.user, libc::CLONE_NEWUSER, "its user namespace")?;
    setns(&p.ipc, libc::CLONE_NEWIPC, "its IPC namespace")?;
    if net {
        setns(&p.net, libc::CLONE_NEWNET, "its network namespace")?;
    }
    Ok(())
}
