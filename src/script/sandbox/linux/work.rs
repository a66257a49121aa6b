//! A workspace's bounded work directory: a tmpfs of the workspace quota, mounted on the work
//! directory in a mount namespace of its own that outlives the helper which made it.
//!
//! ```text
//! keeper (helper)                 its child (new user + mount namespace)
//! clone ────────────────────────▶ wait for the id maps
//! write uid/gid maps, release ──▶ "/" becomes a slave (nothing propagates back to the host),
//!                                 fsopen("tmpfs") size, nr_inodes, mode 0700, uid/gid 65534,
//!                                 fsmount(nosuid, nodev), move_mount onto the checked work dir,
//!                                 "work <pid> <dev> <ino> <mount ns> <user>" on the status pipe,
//!                                 wait for stdin to close ◀── the supervisor opens
//! reap, exit                      exit                        /proc/<pid>/ns/{user,mnt} and
//!                                                             the tmpfs's root, then closes it
//! ```
//!
//! Runs then [`join`] the namespaces from the supervisor's descriptors; the tmpfs lives as long
//! as those descriptors (the workspace), and no process is left behind for it.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::{
    Status, arm_backstops, await_release, clone_process, identity, open_no_symlinks, pipe, reap,
    release,
};
use crate::script::sandbox::{
    JoinWorkspace, SANDBOX_ID, SETUP_FAILED, WORKSPACE_MNT_FD, WORKSPACE_USER_FD, WorkspacePolicy,
};

// The new mount API (Linux 5.2): the same numbers on every architecture, not all named by `libc`.
const SYS_MOVE_MOUNT: libc::c_long = 429;
const SYS_FSOPEN: libc::c_long = 430;
const SYS_FSCONFIG: libc::c_long = 431;
const SYS_FSMOUNT: libc::c_long = 432;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const MOUNT_ATTR_NOSUID: libc::c_uint = 0x2;
const MOUNT_ATTR_NODEV: libc::c_uint = 0x4;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// How long the keeper waits for the supervisor before giving up.
const KEEPER_SECONDS: u64 = 60;

/// Makes the bounded work directory and waits while the supervisor takes hold of it; returns
/// the helper's exit code (0 once the supervisor let go).
pub(super) fn keeper(w: &WorkspacePolicy, status: &Status) -> u8 {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (sync_r, sync_w) = match pipe() {
        Ok(p) => p,
        Err(e) => return status.error("failed", &format!("pipe: {e}")),
    };
    arm_backstops(w.supervisor, KEEPER_SECONDS);
    // A user namespace where the kernel allows one; a root helper can make a mount namespace
    // without one.
    let mut attempts = vec![(libc::CLONE_NEWUSER | libc::CLONE_NEWNS, true)];
    if root {
        attempts.push((libc::CLONE_NEWNS, false));
    }
    let mut spawned = None;
    let mut refused = None;
    for (flags, user) in attempts {
        match clone_process(flags) {
            Ok(pid) => {
                spawned = Some((pid, user));
                break;
            }
            Err(e) => refused = Some(e),
        }
    }
    let Some((pid, user)) = spawned else {
        let why = refused.map_or_else(String::new, |e| e.to_string());
        return status.error(
            "unavailable",
            &format!("the kernel refused a mount namespace ({why})"),
        );
    };
    if pid == 0 {
        // SAFETY: closing our copy of the release pipe's write end.
        unsafe { libc::close(sync_w) };
        let code = keeper_child(w, status, user, sync_r);
        // SAFETY: leaving the forked child without the parent's atexit handlers.
        unsafe { libc::_exit(code as i32) };
    }
    if let Err(code) = release(pid, (sync_r, sync_w), user, status) {
        return code;
    }
    let ws = reap(pid);
    if libc::WIFEXITED(ws) {
        libc::WEXITSTATUS(ws) as u8
    } else {
        SETUP_FAILED
    }
}

fn keeper_child(w: &WorkspacePolicy, status: &Status, user: bool, sync_r: libc::c_int) -> u8 {
    if !await_release(sync_r) {
        return SETUP_FAILED;
    }
    let (dev, ino) = match mount_tmpfs(w) {
        Ok(id) => id,
        Err(e) => {
            return status.error(
                "failed",
                &format!("mounting the work directory's tmpfs: {e}"),
            );
        }
    };
    let mnt_ns = match std::fs::metadata("/proc/self/ns/mnt") {
        Ok(m) => std::os::unix::fs::MetadataExt::ino(&m),
        Err(e) => return status.error("failed", &format!("/proc/self/ns/mnt: {e}")),
    };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    status.line(&format!(
        "work {pid} {dev} {ino} {mnt_ns} {}",
        u8::from(user)
    ));
    // The supervisor closes our stdin once it holds the namespaces and the tmpfs.
    let mut b = [0u8; 64];
    loop {
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::read(0, b.as_mut_ptr().cast(), b.len()) };
        if n == 0 || (n < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
            return 0;
        }
    }
}

/// Mounts the tmpfs on the work directory (after checking it is the directory the supervisor
/// checked); returns the device and inode of its root. Its root belongs to uid/gid 65534 of
/// the namespace: the uid scripts run as.
fn mount_tmpfs(w: &WorkspacePolicy) -> io::Result<(u64, u64)> {
    // What is mounted here must never propagate to the host's mount namespace (a mount
    // namespace made without a user namespace copies shared mounts as shared); the host's
    // unmounts still reach this copy, so it pins no file system the host let go.
    // SAFETY: C string literal; null pointers where mount(2) allows them.
    if unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        )
    } != 0
    {
        return Err(annotate(
            "making / a slave mount",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: a C string literal; the descriptor is owned once.
    let fs = owned(
        unsafe { libc::syscall(SYS_FSOPEN, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) },
        "fsopen",
    )?;
    // A tmpfs treats size=0 and nr_inodes=0 as "unlimited": never pass either.
    let options = [
        ("size", w.bytes.max(1).to_string()),
        ("nr_inodes", w.files.saturating_add(1).to_string()),
        ("mode", "0700".to_string()),
        ("uid", SANDBOX_ID.to_string()),
        ("gid", SANDBOX_ID.to_string()),
    ];
    for (key, value) in options {
        let k = CString::new(key).map_err(io::Error::other)?;
        let v = CString::new(value).map_err(io::Error::other)?;
        // SAFETY: a live descriptor and two C strings.
        let r = unsafe {
            libc::syscall(
                SYS_FSCONFIG,
                fs.as_raw_fd(),
                FSCONFIG_SET_STRING,
                k.as_ptr(),
                v.as_ptr(),
                0,
            )
        };
        if r != 0 {
            return Err(annotate(key, io::Error::last_os_error()));
        }
    }
    // SAFETY: a live descriptor, no pointers.
    let r = unsafe {
        libc::syscall(
            SYS_FSCONFIG,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    if r != 0 {
        return Err(annotate("creating the tmpfs", io::Error::last_os_error()));
    }
    // SAFETY: a live descriptor and integer flags; the descriptor is owned once.
    let mnt = owned(
        unsafe {
            libc::syscall(
                SYS_FSMOUNT,
                fs.as_raw_fd(),
                FSMOUNT_CLOEXEC,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            )
        },
        "fsmount",
    )?;
    let target = open_no_symlinks(&w.work).map_err(|e| annotate("the work directory", e))?;
    if identity(&target)? != w.inode {
        return Err(io::Error::other(
            "the work directory is not the one that was checked (it was replaced since)",
        ));
    }
    // SAFETY: two live descriptors and empty C strings.
    let r = unsafe {
        libc::syscall(
            SYS_MOVE_MOUNT,
            mnt.as_raw_fd(),
            c"".as_ptr(),
            target.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if r != 0 {
        return Err(annotate("move_mount", io::Error::last_os_error()));
    }
    identity(&mnt)
}

/// Joins a workspace's namespaces (inherited on [`WORKSPACE_USER_FD`] and
/// [`WORKSPACE_MNT_FD`], closed here) and moves back into the directory it started in (the
/// work directory is then the tmpfs).
pub(super) fn join(j: &JoinWorkspace) -> io::Result<()> {
    let set = |fd: libc::c_int, kind: libc::c_int, what: &str| {
        // SAFETY: setns and close on an inherited descriptor.
        let r = unsafe { libc::setns(fd, kind) };
        let e = io::Error::last_os_error();
        // SAFETY: as above.
        unsafe { libc::close(fd) };
        if r != 0 {
            return Err(annotate(what, e));
        }
        Ok(())
    };
    // The directory the supervisor started the helper in: the work directory, or the caller's
    // when the run's grant reaches it. The same path names it in the workspace's namespace (a
    // copy of the host's, the tmpfs mounted on `work/`).
    let start = std::env::current_dir().unwrap_or_else(|_| j.work.clone());
    if j.user {
        set(WORKSPACE_USER_FD, libc::CLONE_NEWUSER, "its user namespace")?;
    }
    set(WORKSPACE_MNT_FD, libc::CLONE_NEWNS, "its mount namespace")?;
    // setns into a mount namespace moves the cwd to its root: back to where the run starts.
    std::env::set_current_dir(&start).map_err(|e| annotate("its start directory", e))
}

fn owned(fd: libc::c_long, what: &str) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(annotate(what, io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn annotate(what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}
