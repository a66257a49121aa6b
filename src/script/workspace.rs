//! Per-skill workspaces: the skill's files materialised from any [`Source`] into a fresh private
//! directory, beside a writable work directory, removed when the skill is unloaded.
//!
//! ```text
//! $TMPDIR/skillcat-ws-<uid>/          base (0700; 0711 when the host is root, see below)
//! └── ws-XXXXXX/                      one skill's workspace (0700 / 0711)
//!     ├── .lock                       pid of the owner, flock-ed while the workspace lives
//!     ├── skill/                      the materialised skill (read-only to the script)
//!     │   ├── SKILL.md                0644
//!     │   └── scripts/run.sh          0755 (executable bit from the source's file list)
//!     └── work/                       the script's cwd, HOME (0700, owned by the script's uid)
//!         └── tmp/                    TMPDIR
//! ```
//!
//! A process that dies leaves its workspace behind with a free lock: the next
//! [`WorkspaceBase::open`] removes every workspace whose lock it can take (its owner is gone;
//! the kernel drops a flock with its holder, so pid reuse cannot keep a dead owner alive).
//!
//! When the host runs as root, scripts run as an unprivileged uid (65534): the base and the
//! workspace directory are then 0711 (enter, not list) and `work/` belongs to that uid.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::ScriptError;
use super::argv::check_skill_path;
use crate::document::Skill;
use crate::source::{Source, join_path};

/// Name of the lock / pid marker inside a workspace.
const LOCK: &str = ".lock";
/// A workspace directory without a lock file is left alone this long (it may be being created).
const UNLOCKED_GRACE: Duration = Duration::from_secs(60);

/// The per-user directory that holds workspaces.
#[derive(Debug, Clone)]
pub struct WorkspaceBase {
    dir: PathBuf,
    script_owner: Option<(u32, u32)>,
}

impl WorkspaceBase {
    /// `$TMPDIR/skillcat-ws-<uid>` (or `/tmp/…`).
    pub fn default_dir() -> PathBuf {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        std::env::temp_dir().join(format!("skillcat-ws-{uid}"))
    }

    /// Opens (creating it when missing) a base directory and removes the workspaces left by
    /// processes that are gone. `script_owner` is the host uid/gid scripts run as when it differs
    /// from this process's (a root host): their `work/` directories are given to it, and every
    /// directory above must let it pass.
    pub fn open(
        dir: impl Into<PathBuf>,
        script_owner: Option<(u32, u32)>,
    ) -> Result<Self, ScriptError> {
        let dir = dir.into();
        let shown = dir.display().to_string();
        let mode = if script_owner.is_some() { 0o711 } else { 0o700 };
        match fs::DirBuilder::new().mode(mode).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(ScriptError::workspace(format!("{shown}: {e}"))),
        }
        let meta = fs::symlink_metadata(&dir)
            .map_err(|e| ScriptError::workspace(format!("{shown}: {e}")))?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.file_type().is_symlink() || meta.uid() != me {
            return Err(ScriptError::workspace(format!(
                "{shown}: not a directory owned by uid {me} (refusing to use it)"
            )));
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode))
            .map_err(|e| ScriptError::workspace(format!("{shown}: {e}")))?;
        let dir =
            fs::canonicalize(&dir).map_err(|e| ScriptError::workspace(format!("{shown}: {e}")))?;
        if script_owner.is_some() {
            check_passable(&dir)?;
        }
        let base = WorkspaceBase { dir, script_owner };
        base.clean_stale()?;
        Ok(base)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes every workspace whose owner is gone; returns how many.
    pub fn clean_stale(&self) -> Result<usize, ScriptError> {
        let entries = fs::read_dir(&self.dir)
            .map_err(|e| ScriptError::workspace(format!("{}: {e}", self.dir.display())))?;
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_string_lossy().starts_with("ws-") {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let stale_lock = match File::open(path.join(LOCK)) {
                // The lock is held while the owner lives; taking it means the owner is gone.
                // We hold it until the directory is gone.
                Ok(f) if try_lock(&f) => Some(f),
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let old = meta
                        .modified()
                        .ok()
                        .and_then(|m| SystemTime::now().duration_since(m).ok())
                        .is_some_and(|age| age > UNLOCKED_GRACE);
                    if !old {
                        continue;
                    }
                    None
                }
                Err(_) => continue,
            };
            let _lock = stale_lock;
            if remove_tree(&path).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Materialises a skill: reads every file through its source and writes it into a fresh
    /// workspace (executable bits from the file list), with an empty `work/` beside it.
    pub async fn materialise(
        &self,
        source: &dyn Source,
        skill: &Skill,
    ) -> Result<Workspace, ScriptError> {
        let mut files = Vec::with_capacity(skill.files().len());
        for f in skill.files() {
            let rel = check_skill_path(&f.path)?;
            if rel != f.path {
                return Err(ScriptError::PathRejected {
                    path: f.path.clone(),
                    reason: "not a canonical relative path".into(),
                });
            }
            let bytes = source
                .read(&join_path(skill.root(), &f.path))
                .await
                .map_err(|e| match e {
                    crate::Error::PathRejected { path, reason } => {
                        ScriptError::PathRejected { path, reason }
                    }
                    other => ScriptError::workspace(format!("reading {}: {other}", f.path)),
                })?;
            files.push((rel, bytes, f.executable));
        }
        let base = self.clone();
        tokio::task::spawn_blocking(move || base.create(&files))
            .await
            .map_err(|e| ScriptError::workspace(format!("materialising: {e}")))?
    }

    fn create(&self, files: &[(String, bytes::Bytes, bool)]) -> Result<Workspace, ScriptError> {
        let root = tempfile::Builder::new()
            .prefix("ws-")
            .tempdir_in(&self.dir)
            .map_err(|e| ScriptError::workspace(format!("{}: {e}", self.dir.display())))?
            .keep();
        let fail =
            |what: &Path, e: io::Error| ScriptError::workspace(format!("{}: {e}", what.display()));
        let lock_path = root.join(LOCK);
        let lock = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&lock_path)
        {
            Ok(f) => f,
            Err(e) => {
                let _ = remove_tree(&root);
                return Err(fail(&lock_path, e));
            }
        };
        // From here on, dropping `ws` removes the directory.
        let ws = Workspace {
            root: root.clone(),
            lock: Some(lock),
        };
        if let Some(lock) = &ws.lock {
            if !try_lock(lock) {
                return Err(ScriptError::workspace(format!(
                    "{}: cannot lock",
                    lock_path.display()
                )));
            }
            let mut l = lock;
            let _ = writeln!(l, "{}", std::process::id());
        }
        if self.script_owner.is_some() {
            fs::set_permissions(&root, fs::Permissions::from_mode(0o711))
                .map_err(|e| fail(&root, e))?;
        }
        let skill_dir = ws.skill_dir();
        make_dir(&skill_dir, 0o755).map_err(|e| fail(&skill_dir, e))?;
        for (rel, bytes, exec) in files {
            let path = skill_dir.join(rel);
            if let Some(parent) = path.parent() {
                make_dirs(&skill_dir, parent).map_err(|e| fail(parent, e))?;
            }
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .mode(if *exec { 0o755 } else { 0o644 })
                .open(&path)
                .map_err(|e| fail(&path, e))?;
            f.write_all(bytes).map_err(|e| fail(&path, e))?;
            // The umask may have cleared bits: set the mode the file list says.
            f.set_permissions(fs::Permissions::from_mode(if *exec {
                0o755
            } else {
                0o644
            }))
            .map_err(|e| fail(&path, e))?;
        }
        let work = ws.work_dir();
        let tmp = ws.tmp_dir();
        make_dir(&work, 0o700).map_err(|e| fail(&work, e))?;
        make_dir(&tmp, 0o700).map_err(|e| fail(&tmp, e))?;
        if let Some((uid, gid)) = self.script_owner {
            for d in [&work, &tmp] {
                std::os::unix::fs::chown(d, Some(uid), Some(gid)).map_err(|e| {
                    ScriptError::workspace(format!(
                        "{}: cannot give it to uid {uid}, the uid scripts run as ({e}; is that uid                          mapped in this user namespace?)",
                        d.display()
                    ))
                })?;
            }
        }
        Ok(ws)
    }
}

fn make_dir(p: &Path, mode: u32) -> io::Result<()> {
    fs::DirBuilder::new().mode(mode).create(p)?;
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
}

/// Creates the directories from `top` (which exists) down to `dir`, 0755 each.
fn make_dirs(top: &Path, dir: &Path) -> io::Result<()> {
    let rel = dir
        .strip_prefix(top)
        .map_err(|_| io::Error::other("outside the workspace"))?;
    let mut cur = top.to_path_buf();
    for c in rel.components() {
        cur.push(c);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(io::Error::other("a file is in the way of a directory")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => make_dir(&cur, 0o755)?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn try_lock(f: &File) -> bool {
    // SAFETY: flock on an fd we own; no memory is passed.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Every directory from `/` down to `dir` must let others pass (`o+x`), or a script running as
/// another uid could not reach its workspace.
fn check_passable(dir: &Path) -> Result<(), ScriptError> {
    for a in dir.ancestors() {
        let meta =
            fs::metadata(a).map_err(|e| ScriptError::workspace(format!("{}: {e}", a.display())))?;
        if meta.mode() & 0o001 == 0 {
            return Err(ScriptError::workspace(format!(
                "{} is not searchable by other users (mode {:o}); scripts run as an unprivileged \
                 uid cannot reach workspaces below it",
                a.display(),
                meta.mode() & 0o7777
            )));
        }
    }
    Ok(())
}

/// Removes a tree, making directories writable first when a plain removal fails (a script may
/// have left a directory without write permission). Never follows symbolic links.
pub(crate) fn remove_tree(p: &Path) -> io::Result<()> {
    match fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(p);
            match fs::remove_dir_all(p) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                other => other,
            }
        }
    }
}

fn make_writable(p: &Path) {
    let Ok(meta) = fs::symlink_metadata(p) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(p) {
        for e in entries.flatten() {
            make_writable(&e.path());
        }
    }
}

/// One skill's workspace. Dropping it removes the directory.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    lock: Option<File>,
}

impl Workspace {
    /// The workspace directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The materialised skill (read-only to scripts).
    pub fn skill_dir(&self) -> PathBuf {
        self.root.join("skill")
    }

    /// The scripts' working directory and `HOME` (writable).
    pub fn work_dir(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The scripts' `TMPDIR`, inside the work directory.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("work").join("tmp")
    }

    /// Removes the workspace now, reporting a failure (dropping it removes it silently).
    pub fn remove(mut self) -> Result<(), ScriptError> {
        let r = remove_tree(&self.root);
        self.lock = None;
        let root = std::mem::take(&mut self.root);
        r.map_err(|e| ScriptError::workspace(format!("removing {}: {e}", root.display())))
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if !self.root.as_os_str().is_empty() {
            let _ = remove_tree(&self.root);
        }
    }
}
