//! Granted trees on a root host, made the script's: a root host runs scripts as uid 65534, so a
//! directory the user granted for writing is useless when root owns it (`/root/project` in a
//! container whose agent runs as root), and a 0600 file granted for reading cannot be read.
//!
//! The helper, still root in the initial user namespace, clones each such tree
//! (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`) and gives the clone an idmapping
//! (`mount_setattr(MOUNT_ATTR_IDMAP)`) under which the file system's uid/gid 0 is the run's
//! host id ([`RUN_HOST_ID`], the script's) and that id is 0 (every other id unchanged): root's files are the script's, what it
//! creates there is root's on disk, and a file of uid 65534 shows as root's (the script does not
//! own it). A read grant's clone is read-only (no write, mode, time or xattr change gets through it, whoever owns the file);
//! every clone is `nosuid,nodev`. The run's child then mounts each clone at its path in the
//! run's own root (`root.rs`), in place of a plain bind of the pinned path.
//!
//! What stays as it was: Landlock's rules bind the same inodes (a clone shows the same files), so
//! nothing outside a grant is reached; the script has no capability, so it cannot change an
//! owner; seccomp still refuses every setuid/setgid bit, so nothing it makes root's on disk can
//! become a set-id program. A tree that holds the work directory or a device the run writes
//! is left as it is (a clone made on the host would cover the workspace's mount), and so is
//! every tree where the kernel refuses a part of this (a file system that cannot be idmapped,
//! such as `/proc`; a container whose root lacks the capability or user namespaces): there the
//! modes decide, as before.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::work::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, owned};
use super::{clone_process, fstat, open_no_symlinks, pipe, reap};
use crate::script::sandbox::{FsAccess, HelperPolicy, RUN_HOST_ID};

const SYS_OPEN_TREE: libc::c_long = 428;
const SYS_MOUNT_SETATTR: libc::c_long = 442;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A granted tree's clone, ready to be mounted at its path in the run's root.
pub(super) struct Tree {
    path: std::path::PathBuf,
    dir: bool,
    clone: OwnedFd,
    /// Whether the clone maps root's files to the script (else a plain read-write clone over a
    /// read-only one above it).
    pub(super) mapped: bool,
}

/// One granted path as this module weighs it.
struct Candidate<'a> {
    path: &'a Path,
    write: bool,
    inode: Option<(u64, u64)>,
}

/// Clones the policy's granted trees that need it (see the module's comment), parents before
/// children. Call it as root in the initial user and mount namespaces, before joining the
/// workspace's. A path that is gone, or one where the kernel refuses a part of the mapping, is
/// left out (its modes decide).
pub(super) fn prepare(policy: &HelperPolicy) -> Result<Vec<Tree>, String> {
    if policy.granted.is_empty() {
        return Ok(Vec::new());
    }
    let mut grants: Vec<Candidate> = policy
        .granted
        .iter()
        .map(|g| Candidate {
            path: &g.path,
            write: g.write,
            inode: g.inode,
        })
        .collect();
    grants.sort_by(|a, b| a.path.cmp(b.path));
    // What a clone must not cover: the work directory (in the workspace's mount namespace a
    // tmpfs the host's tree does not have) and every other path the run writes that is no
    // grant (the devices).
    let mut avoid: Vec<&Path> = policy
        .rules
        .iter()
        .filter(|r| r.access == FsAccess::ReadWrite)
        .filter(|r| !policy.granted.iter().any(|g| g.write && g.path == r.path))
        .map(|r| r.path.as_path())
        .collect();
    avoid.extend(policy.workspace.as_ref().map(|j| j.work.as_path()));
    avoid.extend(policy.make_work.as_ref().map(|w| w.work.as_path()));

    let mut userns: Option<OwnedFd> = None;
    // The kernel refused the clones' user namespace: nothing is mapped.
    let mut no_userns = false;
    // (path, write, mapped) of each clone made so far.
    let mut kept: Vec<(&Path, bool, bool)> = Vec::new();
    let mut out = Vec::new();
    for g in grants {
        if avoid.iter().any(|a| a.starts_with(g.path)) {
            continue;
        }
        let fd = match open_no_symlinks(g.path) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", g.path.display())),
        };
        let st = fstat(&fd).map_err(|e| format!("{}: {e}", g.path.display()))?;
        let (dev, ino, uid) = (st.st_dev, st.st_ino, st.st_uid);
        if g.inode.is_some_and(|want| want != (dev, ino)) {
            return Err(format!("{} changed after it was checked", g.path.display()));
        }
        let parent = kept
            .iter()
            .rev()
            .find(|(p, _, _)| g.path.starts_with(p))
            .copied();
        let root_owned = uid == 0;
        // Mapped already by a clone above with at least this access.
        let covered = parent.is_some_and(|(_, write, mapped)| mapped && (write || !g.write));
        // A write grant under a read-only clone needs a writable clone of its own.
        let under_read_only = g.write && parent.is_some_and(|(_, write, _)| !write);
        let wanted = (root_owned && !covered) || under_read_only;
        if !wanted {
            continue;
        }
        // Mapping is best effort: where the kernel refuses any part of it (no user namespaces,
        // a container without the capability, a file system that cannot be idmapped) the tree
        // keeps its modes, as before. Only a write grant beneath a read-only clone must get its
        // own, or the grant would not hold.
        let must = |what: &str, e: io::Error| -> Result<(), String> {
            if under_read_only {
                Err(format!("{what} {}: {e}", g.path.display()))
            } else {
                Ok(())
            }
        };
        let clone = match open_tree(&fd) {
            Ok(c) => c,
            Err(e) => {
                must("cloning", e)?;
                continue;
            }
        };
        let mut attr = MOUNT_ATTR_NOSUID as u64 | MOUNT_ATTR_NODEV as u64;
        if !g.write {
            attr |= MOUNT_ATTR_RDONLY;
        }
        if root_owned && userns.is_none() && !no_userns {
            match swapped_userns() {
                Ok(ns) => userns = Some(ns),
                Err(_) => no_userns = true,
            }
        }
        let mapped = root_owned
            && userns.as_ref().is_some_and(|ns| {
                set_attr(&clone, attr | MOUNT_ATTR_IDMAP, Some(ns.as_raw_fd())).is_ok()
            });
        if !mapped {
            if !under_read_only {
                continue;
            }
            if let Err(e) = set_attr(&clone, attr, None) {
                must("cloning", e)?;
            }
        }
        kept.push((g.path, g.write, mapped));
        out.push(Tree {
            path: g.path.to_path_buf(),
            dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR,
            clone,
            mapped,
        });
    }
    Ok(out)
}

impl Tree {
    /// The granted path (where the run's root has the clone).
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it is a directory (else a file).
    pub(super) fn is_dir(&self) -> bool {
        self.dir
    }

    /// The detached clone, to be moved into the run's root.
    pub(super) fn clone_fd(&self) -> libc::c_int {
        self.clone.as_raw_fd()
    }
}

fn open_tree(fd: &OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: a live descriptor and an empty C string; the result is owned once.
    let r = unsafe {
        libc::syscall(
            SYS_OPEN_TREE,
            fd.as_raw_fd(),
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | libc::AT_EMPTY_PATH as libc::c_uint
                | libc::AT_RECURSIVE as libc::c_uint,
        )
    };
    owned(r, "open_tree")
}

/// Sets `attr_set` on every mount of the detached tree `tree`, idmapped by the user namespace
/// `userns` when given (`MOUNT_ATTR_IDMAP`).
pub(super) fn set_attr(
    tree: &OwnedFd,
    attr_set: u64,
    userns: Option<libc::c_int>,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.map_or(0, |fd| fd as u64),
    };
    // SAFETY: a live descriptor, an empty C string and a live mount_attr of the size given.
    let r = unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            tree.as_raw_fd(),
            c"".as_ptr(),
            (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The id maps of the clones' user namespace, uid and gid alike: 0 and the run's host id
/// swapped, every other id itself ("inside outside count"; the file system's id is the inside
/// one).
fn swapped_maps() -> String {
    let id = RUN_HOST_ID;
    let after = id + 1;
    format!(
        "0 {id} 1\n1 1 {}\n{id} 0 1\n{after} {after} {}\n",
        id - 1,
        u32::MAX - after
    )
}

/// A user namespace holding [`swapped_maps`], kept by its descriptor: a child made in it,
/// mapped, opened and let go.
fn swapped_userns() -> Result<OwnedFd, String> {
    let (hold_r, hold_w) = pipe().map_err(|e| format!("pipe: {e}"))?;
    let pid = match clone_process(libc::CLONE_NEWUSER) {
        Ok(pid) => pid,
        Err(e) => {
            // SAFETY: closing our own pipe.
            unsafe {
                libc::close(hold_r);
                libc::close(hold_w);
            }
            return Err(format!("a user namespace for the idmapping: {e}"));
        }
    };
    if pid == 0 {
        // SAFETY: the child blocks until the helper closes its end (or dies), then leaves.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            libc::close(hold_w);
            let mut b = [0u8; 1];
            while libc::read(hold_r, b.as_mut_ptr().cast(), 1) < 0
                && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            libc::_exit(0);
        }
    }
    // SAFETY: closing the end the child reads.
    unsafe { libc::close(hold_r) };
    let result = (|| -> io::Result<OwnedFd> {
        let maps = swapped_maps();
        std::fs::write(format!("/proc/{pid}/uid_map"), &maps)?;
        std::fs::write(format!("/proc/{pid}/gid_map"), &maps)?;
        let c = CString::new(format!("/proc/{pid}/ns/user")).map_err(io::Error::other)?;
        // SAFETY: a C string; the descriptor is owned once.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    })();
    // SAFETY: letting the child go, then reaping it.
    unsafe { libc::close(hold_w) };
    reap(pid);
    result.map_err(|e| format!("the idmapping's user namespace: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maps_swap_root_and_nobody_and_cover_every_other_id_once() {
        let maps = swapped_maps();
        let mut inside = Vec::new();
        let mut outside = Vec::new();
        for line in maps.lines() {
            let f: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
            inside.push((f[0], f[0] + f[2]));
            outside.push((f[1], f[1] + f[2]));
        }
        for ranges in [&mut inside, &mut outside] {
            ranges.sort();
            // From 0 to the last valid id (u32::MAX is no id), no gap, no overlap.
            assert_eq!(ranges[0].0, 0);
            for w in ranges.windows(2) {
                assert_eq!(w[0].1, w[1].0, "{maps}");
            }
            assert_eq!(ranges.last().unwrap().1, u64::from(u32::MAX), "{maps}");
        }
        let id = RUN_HOST_ID;
        assert!(maps.starts_with(&format!("0 {id} 1\n")), "{maps}");
        assert!(maps.contains(&format!("\n{id} 0 1\n")), "{maps}");
    }
}
