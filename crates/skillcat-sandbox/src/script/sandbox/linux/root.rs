//! The run's own root: a small tmpfs holding only what the run may use — the system paths it
//! needs, the skill, its work directory, its grants and a procfs of its own PID namespace —
//! each bound there from the host's tree, then made the run's `/` (`pivot_root`) with the
//! host's tree detached. A path outside them does not exist for the script: no `stat`
//! answer, no listing, no size or times (Landlock does not govern `stat`). Built from the
//! policy's rules (an allow-list), never by listing what to hide.
//!
//! ```text
//! child (new mount namespace, a slave of its parent's: nothing propagates back)
//!   open every rule's path (pinned ones without links, checked against their inode)
//!   tmpfs on a staging directory; the directories on the way, a mount point per path
//!   each path: open_tree(clone, recursive) → mount_setattr(ro for a read rule; nosuid,
//!     nodev but for devices) → move_mount into the tmpfs; a root host's granted trees are
//!     the idmapped clones the helper made
//!   a fresh procfs on /proc; the protected paths of every write grant re-bound read-only
//!   pivot_root(".", "."), the host's tree detached, `/` remounted read-only
//! ```
//!
//! Landlock's rules bind the inodes the helper opened; the binds show the same inodes, so they
//! hold unchanged beneath the new root (the second layer). Read rules are read-only mounts:
//! no write, mode, time or extended-attribute change reaches their files, whoever owns them
//! (`EROFS`).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::idmap::set_attr;
use super::work::{
    MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOVE_MOUNT_F_EMPTY_PATH, MOVE_MOUNT_T_EMPTY_PATH,
    SYS_MOVE_MOUNT, owned,
};
use super::{fstat, identity, idmap, open_no_symlinks};
use crate::script::sandbox::{FsAccess, HelperPolicy, JoinWorkspace, WorkspacePolicy};

const SYS_OPEN_TREE: libc::c_long = 428;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// One path of the run's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) path: PathBuf,
    pub(super) write: bool,
    /// The device and inode it must have (checked paths), opened without following links.
    pub(super) inode: Option<(u64, u64)>,
    /// A missing required path is an error; a missing optional one is left out.
    pub(super) required: bool,
}

/// What the child builds: the paths, parents first, none inside another bound with at least
/// its access; and the protected paths of the write grants.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) entries: Vec<Entry>,
    pub(super) protected: Vec<PathBuf>,
    /// The work directory of a process's one run ([`WorkspacePolicy::in_run`]): a tmpfs made
    /// here, in place of the work directory on disk (bound instead where it cannot be made).
    pub(super) in_run: Option<WorkspacePolicy>,
}

/// What [`build`] made: whether the run has a procfs of its own, and the tmpfs of a process's
/// one run (its root, open), or why it is on disk.
pub(super) struct Built {
    pub(super) proc: bool,
    pub(super) work: Option<Result<OwnedFd, String>>,
}

/// The plan for `policy` (its rules, the joined work directory).
pub(super) fn plan(policy: &HelperPolicy, joined: Option<&JoinWorkspace>) -> Plan {
    let mut all: Vec<Entry> = policy
        .rules
        .iter()
        .map(|r| Entry {
            path: r.path.clone(),
            write: r.access == FsAccess::ReadWrite,
            inode: r.inode,
            required: r.required,
        })
        .collect();
    if let Some(j) = joined {
        // The bounded work directory stands for the one on disk beneath it (the workspace's
        // first run has a rule for both).
        all.retain(|e| e.path != j.work);
        all.push(Entry {
            path: j.work.clone(),
            write: true,
            inode: Some(j.inode),
            required: true,
        });
    }
    all.retain(|e| e.path.is_absolute() && e.path.parent().is_some());
    all.sort_by(|a, b| a.path.cmp(&b.path).then(b.write.cmp(&a.write)));
    all.dedup_by(|b, a| a.path == b.path);
    Plan {
        entries: all,
        protected: policy.protect.clone(),
        in_run: policy
            .make_work
            .clone()
            .filter(|w| w.in_run && joined.is_none()),
    }
}

/// Whether `e` is already there with enough access through `kept` (a parent bound before it),
/// and needs no bind of its own: a read path under any bound parent, a write path under a
/// writable one — unless a granted tree of its own (a root host's idmapped clone) stands for it.
fn covered(kept: &[(PathBuf, bool)], e: &Entry, has_tree: bool) -> bool {
    !has_tree
        && kept
            .iter()
            .rev()
            .find(|(p, _)| e.path.starts_with(p))
            .is_some_and(|(_, write)| *write || !e.write)
}

/// A path opened for binding: its descriptor (a system path's symbolic link followed, so
/// `/bin` shows `/usr/bin` and `/etc/resolv.conf` the file it names, wherever that lives), or
/// a granted tree's clone.
enum Source {
    Fd { fd: OwnedFd, dir: bool },
    Tree(usize),
}

fn c(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("a NUL byte in {}", p.display()))
}

fn os(what: &str, p: &Path) -> String {
    format!("{what} {}: {}", p.display(), io::Error::last_os_error())
}

/// Opens `e` in the child's mount namespace: `Ok(None)` for a missing optional path.
fn open_source(e: &Entry) -> Result<Option<Source>, String> {
    if let Some(want) = e.inode {
        let fd = open_no_symlinks(&e.path).map_err(|err| format!("{}: {err}", e.path.display()))?;
        if identity(&fd).map_err(|err| err.to_string())? != want {
            return Err(format!("{} changed after it was checked", e.path.display()));
        }
        let dir = is_dir(&fd)?;
        return Ok(Some(Source::Fd { fd, dir }));
    }
    let p = c(&e.path)?;
    // SAFETY: a C string; the descriptor is owned once.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        if !e.required {
            return Ok(None);
        }
        return Err(os("opening", &e.path));
    }
    // SAFETY: a fresh descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let dir = is_dir(&fd)?;
    Ok(Some(Source::Fd { fd, dir }))
}

fn is_dir(fd: &OwnedFd) -> Result<bool, String> {
    Ok(fstat(fd).map_err(|e| e.to_string())?.st_mode & libc::S_IFMT == libc::S_IFDIR)
}

/// Where the new root is assembled before it becomes `/`: an existing directory of the
/// copied tree that nothing needs any more (every source is open by then).
fn staging() -> Result<PathBuf, String> {
    for d in ["/tmp", "/mnt", "/run", "/var/tmp"] {
        if std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) {
            return Ok(PathBuf::from(d));
        }
    }
    Err("no directory to assemble the run's root on (/tmp, /mnt, /run)".into())
}

/// `mkdir -p` of `dir` (absolute, under the staging root `stage`), mode 0755.
fn make_dirs(stage: &Path, dir: &Path) -> Result<(), String> {
    let mut at = stage.to_path_buf();
    for part in dir.components().skip(1) {
        at.push(part);
        let p = c(&at)?;
        // SAFETY: a C string.
        if unsafe { libc::mkdir(p.as_ptr(), 0o755) } != 0
            && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
        {
            return Err(os("making", &at));
        }
    }
    Ok(())
}

/// Builds the run's root in the child (a new mount namespace), enters it and detaches the
/// host's tree. `fs_id` is the id the script's files are made as (mapped in its user
/// namespace).
pub(super) fn build(plan: &Plan, trees: &[idmap::Tree], fs_id: u32) -> Result<Built, String> {
    let start = std::env::current_dir().map_err(|e| format!("the start directory: {e}"))?;
    super::make_slave().map_err(|e| format!("making a slave of /: {e}"))?;
    let sources = open_sources(plan, trees)?;
    let stage = staging()?;
    let stage_c = c(&stage)?;
    // Its root is the script's id's: the directories on the way are made as that id (the only
    // one a user namespace may map), then the whole root is read-only.
    let options = CString::new(format!(
        "mode=0755,size=1m,nr_inodes=65536,uid={fs_id},gid={fs_id}"
    ))
    .map_err(|e| e.to_string())?;
    // SAFETY (the rest): mount-related system calls on C strings and descriptors we own; the
    // process is a copy of the single-threaded helper.
    unsafe {
        if libc::mount(
            c"tmpfs".as_ptr(),
            stage_c.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr().cast(),
        ) != 0
        {
            return Err(os("mounting the run's root on", &stage));
        }
        libc::setfsgid(fs_id);
        libc::setfsuid(fs_id);
        // A procfs of the run's own PID namespace, mounted while the host's is still in this
        // namespace (the kernel mounts a procfs only where one is fully visible); without it
        // (a container that masks parts of the host's) /proc stays an empty directory.
        make_dirs(&stage, Path::new("/proc"))?;
        let proc_at = c(&stage.join("proc"))?;
        let proc = libc::mount(
            c"proc".as_ptr(),
            proc_at.as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) == 0;
        let mut work = None;
        for (e, source) in &sources {
            if let Some(w) = plan.in_run.as_ref().filter(|w| w.work == e.path) {
                match mount_work(&stage, w, fs_id) {
                    Ok(root) => {
                        work = Some(Ok(root));
                        continue;
                    }
                    // The work directory on disk instead, bound as any other path.
                    Err(why) => work = Some(Err(why)),
                }
            }
            bind(&stage, e, source, trees)?;
        }
        if plan.in_run.is_some() && work.is_none() {
            work = Some(Err(
                "the work directory has no place in the run's root".into()
            ));
        }
        protect(&stage, &plan.protected)?;
        enter_root(&stage, &stage_c)?;
        std::env::set_current_dir(&start)
            .map_err(|e| format!("entering the start directory {}: {e}", start.display()))?;
        Ok(Built { proc, work })
    }
}

/// The tmpfs of a process's one run, mounted at the work directory's place under the staging
/// root: its root, open.
fn mount_work(stage: &Path, w: &WorkspacePolicy, fs_id: u32) -> Result<OwnedFd, String> {
    make_dirs(stage, &w.work)?;
    let at = stage.join(w.work.strip_prefix("/").unwrap_or(&w.work));
    let at_c = c(&at)?;
    super::work::mount_in_run(w, fs_id, &at_c)
        .map_err(|e| format!("mounting the work directory's tmpfs: {e}"))
}

/// Every source opened first, as the helper's ids (a root helper's child still reaches root's
/// directories), before anything is covered: each entry not covered by one kept before it,
/// with what is bound there.
fn open_sources<'a>(
    plan: &'a Plan,
    trees: &[idmap::Tree],
) -> Result<Vec<(&'a Entry, Source)>, String> {
    let mut kept: Vec<(PathBuf, bool)> = Vec::new();
    let mut sources: Vec<(&Entry, Source)> = Vec::new();
    for e in &plan.entries {
        // The last clone of a path is the writable one where a path is granted both ways.
        let tree = trees.iter().rposition(|t| t.path() == e.path.as_path());
        if covered(&kept, e, tree.is_some()) {
            continue;
        }
        let source = match tree {
            Some(i) => Source::Tree(i),
            None => match open_source(e)? {
                Some(s) => s,
                None => continue,
            },
        };
        kept.push((e.path.clone(), e.write));
        sources.push((e, source));
    }
    Ok(sources)
}

/// Binds one entry's source at its path under the staging root: read-only unless written,
/// `nosuid`, `nodev` unless one of the run's devices.
fn bind(stage: &Path, e: &Entry, source: &Source, trees: &[idmap::Tree]) -> Result<(), String> {
    // SAFETY: mount-related system calls on C strings and descriptors we own; the process is a
    // copy of the single-threaded helper.
    unsafe {
        let at = stage.join(e.path.strip_prefix("/").unwrap_or(&e.path));
        if let Some(parent) = e.path.parent() {
            make_dirs(stage, parent)?;
        }
        let at_c = c(&at)?;
        let (clone, dir) = match source {
            Source::Tree(i) => (None, trees[*i].is_dir()),
            Source::Fd { fd, dir } => {
                let clone = open_tree(fd.as_raw_fd(), c"", libc::AT_EMPTY_PATH as u32)
                    .map_err(|err| format!("binding {}: {err}", e.path.display()))?;
                // Only the devices every run has keep working as devices; any other
                // path (a granted one under /dev included) is bound `nodev`.
                let device = crate::script::sandbox::DEVICES
                    .iter()
                    .any(|d| e.path == Path::new(d));
                let mut attr = MOUNT_ATTR_NOSUID as u64;
                if !device {
                    attr |= MOUNT_ATTR_NODEV as u64;
                }
                if !e.write {
                    attr |= MOUNT_ATTR_RDONLY;
                }
                set_attr(&clone, attr, None)
                    .map_err(|err| format!("binding {}: {err}", e.path.display()))?;
                (Some(clone), *dir)
            }
        };
        // The mount point: a directory or an empty file (it may exist already: a procfs
        // entry, a parent's bind).
        if dir {
            if libc::mkdir(at_c.as_ptr(), 0o755) != 0
                && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
            {
                return Err(os("making", &at));
            }
        } else {
            let fd = libc::open(
                at_c.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                0o644,
            );
            if fd >= 0 {
                libc::close(fd);
            } else if io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
                && std::fs::symlink_metadata(&at).is_err()
            {
                return Err(os("making", &at));
            }
        }
        let from = match (&clone, source) {
            (Some(c), _) => c.as_raw_fd(),
            (None, Source::Tree(i)) => trees[*i].clone_fd(),
            _ => return Ok(()),
        };
        if libc::syscall(
            SYS_MOVE_MOUNT,
            from,
            c"".as_ptr(),
            libc::AT_FDCWD,
            at_c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ) != 0
        {
            return Err(os("mounting", &e.path));
        }
    }
    Ok(())
}

/// The staging tmpfs becomes `/`; the host's tree, stacked on it, is detached; the new root is
/// made read-only.
fn enter_root(stage: &Path, stage_c: &CString) -> Result<(), String> {
    // SAFETY: system calls on C strings we own.
    unsafe {
        if libc::chdir(stage_c.as_ptr()) != 0 {
            return Err(os("entering", stage));
        }
        if libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) != 0 {
            return Err(format!("pivot_root: {}", io::Error::last_os_error()));
        }
        if libc::umount2(c".".as_ptr(), libc::MNT_DETACH) != 0 {
            return Err(format!(
                "detaching the host's tree: {}",
                io::Error::last_os_error()
            ));
        }
        if libc::chdir(c"/".as_ptr()) != 0 {
            return Err(format!("entering /: {}", io::Error::last_os_error()));
        }
        // Nothing can be made beside the paths bound there.
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            std::ptr::null(),
        ) != 0
        {
            return Err(format!(
                "making the run's root read-only: {}",
                io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Re-binds each protected path (inside a write grant) read-only over itself, as the script's
/// id sees it beneath the staging root: a path it cannot reach (gone, a symbolic link, closed
/// to it by its modes) is one the script cannot reach either, and is left.
fn protect(stage: &Path, protected: &[PathBuf]) -> Result<(), String> {
    for p in protected {
        let at = stage.join(p.strip_prefix("/").unwrap_or(p));
        let target = match open_no_symlinks(&at) {
            Ok(fd) => fd,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::EACCES | libc::ENOTDIR)
                ) || e.kind() == io::ErrorKind::Other =>
            {
                continue;
            }
            Err(e) => return Err(format!("protecting {}: {e}", p.display())),
        };
        let clone = open_tree(target.as_raw_fd(), c"", libc::AT_EMPTY_PATH as u32)
            .and_then(|t| {
                set_attr(
                    &t,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID as u64 | MOUNT_ATTR_NODEV as u64,
                    None,
                )
                .map(|()| t)
            })
            .map_err(|e| format!("protecting {}: {e}", p.display()))?;
        // SAFETY: two live descriptors and empty C strings.
        let r = unsafe {
            libc::syscall(
                SYS_MOVE_MOUNT,
                clone.as_raw_fd(),
                c"".as_ptr(),
                target.as_raw_fd(),
                c"".as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
            )
        };
        if r != 0 {
            return Err(format!(
                "protecting {}: {}",
                p.display(),
                io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// A recursive clone of the tree at `dirfd`/`path` (`OPEN_TREE_CLONE | AT_RECURSIVE`).
pub(super) fn open_tree(dirfd: libc::c_int, path: &CStr, flags: u32) -> io::Result<OwnedFd> {
    // SAFETY: a descriptor and a C string; the result is owned once.
    let r = unsafe {
        libc::syscall(
            SYS_OPEN_TREE,
            dirfd,
            path.as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | libc::AT_RECURSIVE as libc::c_uint
                | flags,
        )
    };
    owned(r, "open_tree")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(path: &str, write: bool) -> Entry {
        Entry {
            path: path.into(),
            write,
            inode: None,
            required: false,
        }
    }

    #[test]
    fn the_plan_holds_every_rule_once_and_the_bounded_work_directory_for_the_one_on_disk() {
        use crate::script::sandbox::{FsRule, Mode, NetMode, RunLimits};
        let rule = |p: &str, access, inode: Option<(u64, u64)>| FsRule {
            path: p.into(),
            access,
            required: inode.is_some(),
            inode,
        };
        let policy = HelperPolicy {
            mode: Mode::Confined,
            program: "/bin/sh".into(),
            argv: vec!["sh".into()],
            env: Vec::new(),
            rules: vec![
                rule("/usr", FsAccess::ReadExec, None),
                rule("/data", FsAccess::ReadExec, Some((1, 2))),
                rule("/data", FsAccess::ReadWrite, Some((1, 2))),
                rule("/ws/work", FsAccess::ReadWrite, Some((3, 4))),
                rule("relative", FsAccess::ReadExec, None),
                rule("/", FsAccess::ReadExec, None),
            ],
            network: NetMode::Off,
            proxy_port: 0,
            limits: RunLimits {
                cpu_seconds: 1,
                address_space: 1,
                file_size: 1,
                open_files: 1,
                processes: 1,
            },
            timeout_seconds: 1,
            supervisor: 0,
            workspace: None,
            make_work: None,
            builtin: false,
            cgroup: Vec::new(),
            protect: vec!["/data/.git".into()],
            granted: Vec::new(),
            parked: false,
        };
        let joined = JoinWorkspace {
            user: true,
            work: "/ws/work".into(),
            inode: (5, 6),
        };
        let p = plan(&policy, Some(&joined));
        type Bound<'a> = (&'a str, bool, Option<(u64, u64)>);
        let got: Vec<Bound> = p
            .entries
            .iter()
            .map(|e| (e.path.to_str().unwrap(), e.write, e.inode))
            .collect();
        // `/` and relative paths are never bound whole; a path granted both ways is bound
        // writable once; the tmpfs's root stands for the work directory on disk.
        assert_eq!(
            got,
            vec![
                ("/data", true, Some((1, 2))),
                ("/usr", false, None),
                ("/ws/work", true, Some((5, 6))),
            ]
        );
        assert_eq!(p.protected, vec![PathBuf::from("/data/.git")]);
    }

    #[test]
    fn a_path_inside_one_bound_with_enough_access_needs_no_bind() {
        /// (case, kept, entry, has a tree of its own, covered)
        type Case<'a> = (&'a str, &'a [(&'a str, bool)], Entry, bool, bool);
        let cases: &[Case] = &[
            ("nothing above", &[], e("/a", false), false, false),
            (
                "read under read",
                &[("/a", false)],
                e("/a/b", false),
                false,
                true,
            ),
            (
                "read under write",
                &[("/a", true)],
                e("/a/b", false),
                false,
                true,
            ),
            (
                "write under read",
                &[("/a", false)],
                e("/a/b", true),
                false,
                false,
            ),
            (
                "write under write",
                &[("/a", true)],
                e("/a/b", true),
                false,
                true,
            ),
            ("a sibling", &[("/a", true)], e("/ab", false), false, false),
            (
                "its own tree",
                &[("/a", false)],
                e("/a/b", false),
                true,
                false,
            ),
            (
                "the nearest parent decides",
                &[("/a", true), ("/a/b", false)],
                e("/a/b/c", true),
                false,
                false,
            ),
        ];
        for (case, kept, entry, tree, want) in cases {
            let kept: Vec<(PathBuf, bool)> =
                kept.iter().map(|(p, w)| (PathBuf::from(p), *w)).collect();
            assert_eq!(covered(&kept, entry, *tree), *want, "{case}");
        }
    }
}
