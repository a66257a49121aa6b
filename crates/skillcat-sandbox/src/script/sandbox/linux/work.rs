//! A workspace's bounded work directory: a tmpfs of the workspace quota, mounted on the work
//! directory in a mount namespace of its own that outlives the run which made it.
//!
//! ```text
//! run helper (the workspace's first run)    its keeper child (new user + mount namespace)
//! clone ──────────────────────────────────▶ wait for the id maps
//! write uid/gid maps, release ────────────▶ "/" becomes a slave (nothing propagates back),
//!                                           fsopen("tmpfs") size, nr_inodes, mode 0700,
//!                                           uid/gid 65534, fsmount(nosuid, nodev),
//!                                           move_mount onto the checked work directory,
//! open /proc/<child>/ns/{user,mnt} and ◀─── "<dev> <ino>" on a private pipe; wait
//!   its work directory (the tmpfs's root),
//!   check them; let the child go ─────────▶ exit
//! send them to the supervisor (fd 7), setns into both, run the script there
//! ```
//!
//! Later runs [`join`] the namespaces from the supervisor's descriptors; the tmpfs lives as long
//! as those descriptors (the workspace), and no process is left behind for it. Made inside the
//! run's helper, the work directory costs no process start of its own.
//!
//! A process that makes one run needs no namespaces later runs could join: the run's first
//! process mounts the tmpfs in the root it builds ([`mount_in_run`], from `root::build`) and
//! hands only its root to the supervisor ([`report_in_run`]: `own DEV INO`).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use super::{clone_process, identity, open_no_symlinks, pipe, reap, release};
use crate::script::sandbox::{
    RUN_HOST_ID, SANDBOX_ID, WORKSPACE_MNT_FD, WORKSPACE_SOCKET_FD, WORKSPACE_USER_FD,
    WorkspacePolicy,
};

// The new mount API (Linux 5.2): the same numbers on every architecture, not all named by `libc`.
pub(super) const SYS_MOVE_MOUNT: libc::c_long = 429;
const SYS_FSOPEN: libc::c_long = 430;
const SYS_FSCONFIG: libc::c_long = 431;
const SYS_FSMOUNT: libc::c_long = 432;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
pub(super) const MOUNT_ATTR_NOSUID: libc::c_uint = 0x2;
pub(super) const MOUNT_ATTR_NODEV: libc::c_uint = 0x4;
pub(super) const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
pub(super) const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// A bounded work directory the helper made: the namespaces it is mounted in, the tmpfs's root,
/// its identity and the mount namespace's inode.
pub(super) struct Made {
    mnt: OwnedFd,
    user: Option<OwnedFd>,
    root: OwnedFd,
    /// Device and inode of the tmpfs's root.
    pub(super) inode: (u64, u64),
    mnt_ns: u64,
}

impl Made {
    /// Whether it has a user namespace of its own (the helper's runs then nest in it).
    pub(super) fn has_user(&self) -> bool {
        self.user.is_some()
    }
}

/// Makes the bounded work directory `w` (see the module's diagram). Returns why not on failure;
/// nothing is left behind then.
pub(super) fn make(w: &WorkspacePolicy) -> Result<Made, String> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let release_pipe = pipe().map_err(|e| format!("pipe: {e}"))?;
    let (report_r, report_w) = pipe().map_err(|e| format!("pipe: {e}"))?;
    let (hold_r, hold_w) = pipe().map_err(|e| format!("pipe: {e}"))?;
    // SAFETY (the four wrappers): each descriptor is fresh and owned once.
    let (report_r, report_w, hold_r, hold_w) = unsafe {
        (
            OwnedFd::from_raw_fd(report_r),
            OwnedFd::from_raw_fd(report_w),
            OwnedFd::from_raw_fd(hold_r),
            OwnedFd::from_raw_fd(hold_w),
        )
    };
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
        return Err(format!("the kernel refused a mount namespace ({why})"));
    };
    if pid == 0 {
        // The keeper child: mount, report, wait to be let go.
        // SAFETY: closing the ends this side does not use.
        unsafe {
            libc::close(release_pipe.1);
            libc::close(report_r.as_raw_fd());
            libc::close(hold_w.as_raw_fd());
        }
        let line = if !super::await_release(release_pipe.0) {
            // SAFETY: leaving the forked child.
            unsafe { libc::_exit(1) };
        } else {
            match mount_tmpfs(w, user) {
                Ok((dev, ino)) => format!("{dev} {ino}\n"),
                Err(e) => format!("error {}\n", e.to_string().replace('\n', " ")),
            }
        };
        // SAFETY: writing a live buffer, then blocking on our end of the hold pipe until the
        // helper closes its end (or dies: the parent-death signal is armed).
        unsafe {
            libc::write(report_w.as_raw_fd(), line.as_ptr().cast(), line.len());
            let mut b = [0u8; 1];
            while libc::read(hold_r.as_raw_fd(), b.as_mut_ptr().cast(), 1) < 0
                && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            libc::_exit(0);
        }
    }
    drop((report_w, hold_r));
    let kill = |why: String| {
        // SAFETY: ending and reaping the child we made.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        reap(pid);
        why
    };
    // The release pipe's write end stays open while the keeper child lives (its lifeline).
    // SAFETY: the write end is ours to close once the child is gone (below), never twice.
    let release_w = unsafe { OwnedFd::from_raw_fd(release_pipe.1) };
    // (On failure the child is killed and reaped already.)
    release(pid, release_pipe, user)?;
    let line = read_line(&report_r).map_err(|e| kill(format!("the work directory: {e}")))?;
    if let Some(why) = line.strip_prefix("error ") {
        return Err(kill(format!("mounting the work directory's tmpfs: {why}")));
    }
    let mut f = line.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(dev)), Some(Ok(ino)), None) = (f.next(), f.next(), f.next()) else {
        return Err(kill(format!("unexpected answer from the keeper: {line:?}")));
    };
    let opened = (|| -> io::Result<Made> {
        let proc_fd = |name: &str| open_path(&format!("/proc/{pid}/{name}"), libc::O_RDONLY);
        let mnt = proc_fd("ns/mnt")?;
        let user = if user {
            Some(proc_fd("ns/user")?)
        } else {
            None
        };
        // Through the child's root, its mount namespace resolves the path: the tmpfs's root.
        let mut at = format!("/proc/{pid}/root").into_bytes();
        at.extend_from_slice(w.work.as_os_str().as_bytes());
        let work = open_path(
            &String::from_utf8_lossy(&at),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        )?;
        if identity(&work)? != (dev, ino) {
            return Err(io::Error::other(
                "the work directory's tmpfs is not the one the keeper mounted",
            ));
        }
        let mnt_ns = identity(&mnt)?.1;
        Ok(Made {
            mnt,
            user,
            root: work,
            inode: (dev, ino),
            mnt_ns,
        })
    })();
    // The child may go: what it made is held by these descriptors now.
    drop(hold_w);
    reap(pid);
    drop(release_w);
    opened.map_err(|e| format!("opening the work directory's namespaces: {e}"))
}

/// Hands `made` to the supervisor on [`WORKSPACE_SOCKET_FD`] (or says why there is none), and
/// closes the socket.
pub(super) fn report(made: Result<&Made, &str>) {
    match made {
        Ok(m) => {
            let mut fds = vec![m.mnt.as_raw_fd()];
            fds.extend(m.user.as_ref().map(AsRawFd::as_raw_fd));
            fds.push(m.root.as_raw_fd());
            let text = format!(
                "work {} {} {} {}",
                m.inode.0,
                m.inode.1,
                m.mnt_ns,
                u8::from(m.user.is_some())
            );
            send(&text, &fds);
        }
        Err(why) => send(&format!("error {why}"), &[]),
    }
}

/// Sends `text` and `fds` on [`WORKSPACE_SOCKET_FD`] in one message, and closes it.
fn send(text: &str, fds: &[RawFd]) {
    // SAFETY: a message header over live local buffers; the control buffer is sized for the
    // descriptors it carries (CMSG_SPACE); the socket is ours to close.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: text.as_ptr() as *mut libc::c_void,
            iov_len: text.len(),
        };
        let bytes = std::mem::size_of_val(fds) as libc::c_uint;
        let mut control = vec![0u8; libc::CMSG_SPACE(bytes) as usize];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = control.len() as _;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
        }
        libc::sendmsg(WORKSPACE_SOCKET_FD, &msg, libc::MSG_NOSIGNAL);
        libc::close(WORKSPACE_SOCKET_FD);
    }
}

/// One line from `r` (up to a newline or the end), at most 4 KiB.
fn read_line(r: &OwnedFd) -> io::Result<String> {
    let mut bytes = Vec::new();
    let mut b = [0u8; 256];
    loop {
        // SAFETY: reading into a live local buffer.
        let n = unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr().cast(), b.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&b[..n as usize]);
        if bytes.contains(&b'\n') || bytes.len() > 4096 {
            break;
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    match text.split_once('\n') {
        Some((line, _)) => Ok(line.to_string()),
        None => Err(io::Error::other("the keeper ended without an answer")),
    }
}

fn open_path(path: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(path).map_err(io::Error::other)?;
    // SAFETY: a C string; the descriptor is owned exactly once.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(annotate(path, io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Mounts the tmpfs on the work directory (after checking it is the directory the supervisor
/// checked); returns the device and inode of its root. Its root belongs to the uid scripts run
/// as: 65534 of the namespace in a user namespace (`user`), the run's host id without one.
fn mount_tmpfs(w: &WorkspacePolicy, user: bool) -> io::Result<(u64, u64)> {
    let owner = if user { SANDBOX_ID } else { RUN_HOST_ID };
    // What is mounted here must never propagate to the host's mount namespace (a mount
    // namespace made without a user namespace copies shared mounts as shared); the host's
    // unmounts still reach this copy, so it pins no file system the host let go.
    super::make_slave().map_err(|e| annotate("making / a slave mount", e))?;
    let mnt = new_tmpfs(w, owner)?;
    let target = open_no_symlinks(&w.work).map_err(|e| annotate("the work directory", e))?;
    if identity(&target)? != w.inode {
        return Err(io::Error::other(
            "the work directory is not the one that was checked (it was replaced since)",
        ));
    }
    attach(&mnt, &target)?;
    identity(&mnt)
}

/// Mounts the detached mount `mnt` on the directory `target` names.
fn attach(mnt: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
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
    Ok(())
}

/// The work directory of a process's one run ([`WorkspacePolicy::in_run`]), made by the run's
/// first process in its own mount namespace while it builds its root: a tmpfs of the quota,
/// owned by `owner` (the id the script's files are made as), mounted at `at` (the work
/// directory's place under the root being built, made already). Returns its root, opened.
pub(super) fn mount_in_run(w: &WorkspacePolicy, owner: u32, at: &CStr) -> io::Result<OwnedFd> {
    let mnt = new_tmpfs(w, owner)?;
    let place = open_no_symlinks(std::path::Path::new(std::ffi::OsStr::from_bytes(
        at.to_bytes(),
    )))
    .map_err(|e| annotate("the work directory's place", e))?;
    attach(&mnt, &place)?;
    // SAFETY: a C string; the descriptor is owned once.
    let root = owned(
        unsafe {
            libc::open(
                at.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        } as libc::c_long,
        "opening the work directory's tmpfs",
    )?;
    if identity(&root)? != identity(&mnt)? {
        return Err(io::Error::other(
            "the work directory's tmpfs is not the one just mounted",
        ));
    }
    Ok(root)
}

/// Hands the tmpfs of a process's one run (its root, open) to the supervisor on
/// [`WORKSPACE_SOCKET_FD`] as `own DEV INO` (or says why there is none), and closes the socket.
pub(super) fn report_in_run(made: Result<&OwnedFd, &str>) {
    match made.map(|root| (identity(root), root)) {
        Ok((Ok((dev, ino)), root)) => send(&format!("own {dev} {ino}"), &[root.as_raw_fd()]),
        Ok((Err(e), _)) => send(&format!("error the work directory's tmpfs: {e}"), &[]),
        Err(why) => send(&format!("error {why}"), &[]),
    }
}

/// A new tmpfs of the workspace quota, mode 0700, owned by `owner`, mounted nowhere yet
/// (`nosuid`, `nodev`): its mount's descriptor.
fn new_tmpfs(w: &WorkspacePolicy, owner: u32) -> io::Result<OwnedFd> {
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
        ("uid", owner.to_string()),
        ("gid", owner.to_string()),
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
    owned(
        unsafe {
            libc::syscall(
                SYS_FSMOUNT,
                fs.as_raw_fd(),
                FSMOUNT_CLOEXEC,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            )
        },
        "fsmount",
    )
}

/// Joins a workspace's namespaces (inherited on [`WORKSPACE_USER_FD`] and
/// [`WORKSPACE_MNT_FD`], closed here) and moves back into the directory it started in (the
/// work directory is then the tmpfs).
pub(super) fn join(user: bool, work: &std::path::Path) -> io::Result<()> {
    // SAFETY: the inherited descriptors are this process's to own, once each.
    let (user, mnt) = unsafe {
        (
            user.then(|| OwnedFd::from_raw_fd(WORKSPACE_USER_FD)),
            OwnedFd::from_raw_fd(WORKSPACE_MNT_FD),
        )
    };
    enter(user.as_ref(), &mnt, work)
}

/// Joins the namespaces of the work directory this helper just made.
pub(super) fn join_made(m: &Made, work: &std::path::Path) -> io::Result<()> {
    enter(m.user.as_ref(), &m.mnt, work)
}

/// Joins the namespace of `kind` that `fd` names; an error says `what` it was.
pub(super) fn setns(fd: &OwnedFd, kind: libc::c_int, what: &str) -> io::Result<()> {
    // SAFETY: setns on a live descriptor.
    if unsafe { libc::setns(fd.as_raw_fd(), kind) } != 0 {
        return Err(annotate(what, io::Error::last_os_error()));
    }
    Ok(())
}

fn enter(user: Option<&OwnedFd>, mnt: &OwnedFd, work: &std::path::Path) -> io::Result<()> {
    // The directory the supervisor started the helper in: the work directory, or the caller's
    // when the run's grant reaches it. The same path names it in the workspace's namespace (a
    // copy of the host's, the tmpfs mounted on `work/`).
    let start = std::env::current_dir().unwrap_or_else(|_| work.to_path_buf());
    if let Some(u) = user {
        setns(u, libc::CLONE_NEWUSER, "its user namespace")?;
    }
    setns(mnt, libc::CLONE_NEWNS, "its mount namespace")?;
    // setns into a mount namespace moves the cwd to its root: back to where the run starts.
    std::env::set_current_dir(&start).map_err(|e| annotate("its start directory", e))
}

pub(super) fn owned(fd: libc::c_long, what: &str) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(annotate(what, io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn annotate(what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}
