//! Per-skill workspaces: the skill's files materialised from any [`Source`] into a fresh private
//! directory, beside a writable work directory, removed when the skill is unloaded.
//!
//! ```text
//! $XDG_RUNTIME_DIR/skillcat-ws/       base (0700; 0711 when the host is root, see below);
//!                                     else $HOME/.cache/skillcat/ws, else /run/skillcat-ws
//!                                     (root host); never a name in the shared /tmp
//! └── ws-XXXXXX/                      one skill's workspace (0700 / 0711)
//!     ├── .lock                       pid of the owner, flock-ed while the workspace lives
//!     ├── skill/                      the materialised skill (read-only to the script)
//!     │   ├── SKILL.md                0644 (0600 when the source's file is closed to others)
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

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

mod store;

use super::ScriptError;
use super::argv::check_skill_path;
use crate::document::Skill;
use crate::path::join_path;
use crate::source::Source;

/// Name of the lock / pid marker inside a workspace.
const LOCK: &str = ".lock";
/// A workspace directory without a lock file is left alone this long (it may be being created).
const UNLOCKED_GRACE: Duration = Duration::from_secs(60);

/// How much one workspace may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Bytes (disk blocks of what runs leave; bytes of the skill's files).
    pub bytes: u64,
    /// Files and directories.
    pub files: u64,
}

impl Default for Quota {
    fn default() -> Self {
        Quota {
            bytes: 256 << 20,
            files: 10_000,
        }
    }
}

/// The user's directories, as the caller read them from its environment (the sandbox reads no
/// variable itself): where workspaces are kept ([`WorkspaceBase::default_dir`]) and which home's
/// hidden files no grant reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserDirs {
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$XDG_RUNTIME_DIR`.
    pub runtime_dir: Option<PathBuf>,
    /// `$XDG_CACHE_HOME`.
    pub cache_home: Option<PathBuf>,
}

/// The per-user directory that holds workspaces.
#[derive(Debug, Clone)]
pub struct WorkspaceBase {
    dir: PathBuf,
    /// The directory, opened once: workspaces are made, filled and removed relative to it, so
    /// a path above it changed later (renamed, swapped for a symbolic link) redirects nothing.
    fd: Arc<OwnedFd>,
    script_owner: Option<(u32, u32)>,
    quota: Quota,
}

impl WorkspaceBase {
    /// The user's own base: `$XDG_RUNTIME_DIR/skillcat-ws`, else the cache directory's
    /// `skillcat/ws` (`$XDG_CACHE_HOME`, else `$HOME/.cache`), else on a root host
    /// `/run/skillcat-ws` — the first whose directory is the user's (or root's) and closed to
    /// writes by others; never a name in the shared `/tmp`, which another local user could
    /// create first.
    pub fn default_dir(dirs: &UserDirs) -> PathBuf {
        super::base_dir::default_base(super::run::script_owner().is_some(), dirs)
    }

    /// Opens (creating it when missing) a base directory and removes the workspaces left by
    /// processes that are gone. `script_owner` is the host uid/gid scripts run as when it differs
    /// from this process's (a root host): their `work/` directories are given to it, and every
    /// directory above must let it pass.
    pub fn open(
        dir: impl Into<PathBuf>,
        script_owner: Option<(u32, u32)>,
    ) -> Result<Self, ScriptError> {
        let base = Self::open_unswept(dir.into(), script_owner)?;
        // A leftover that cannot be removed now must not stop every run: it stays, and the next
        // start tries again ([`clean_stale`](Self::clean_stale) reports it to a caller that
        // asks).
        let _ = base.clean_stale();
        Ok(base)
    }

    /// [`open`](Self::open) without removing what processes that are gone left: for a process
    /// whose leftovers, and every gone process's, are removed after it exits (its cleaner,
    /// [`teardown_after_exit`](super::teardown_after_exit)).
    pub(crate) fn open_unswept(
        dir: PathBuf,
        script_owner: Option<(u32, u32)>,
    ) -> Result<Self, ScriptError> {
        let shown = dir.display().to_string();
        let mode = if script_owner.is_some() { 0o711 } else { 0o700 };
        // The directory holding the base (made when missing, as a cache directory may be)
        // must be one only this user (or root) may write in: a name anyone may create is
        // never used.
        if let Some(holder) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            let fail = |e: String| ScriptError::workspace(format!("{shown}: {e}"));
            fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(holder)
                .map_err(|e| fail(format!("{}: {e}", holder.display())))?;
            let holder =
                fs::canonicalize(holder).map_err(|e| fail(format!("{}: {e}", holder.display())))?;
            super::base_dir::check_holder(&holder, script_owner.is_some()).map_err(fail)?;
        }
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
        let fd = open_dir(
            libc::AT_FDCWD,
            &cstr(dir.as_os_str().as_encoded_bytes())
                .map_err(|e| ScriptError::workspace(format!("{shown}: {e}")))?,
        )
        .map_err(|e| ScriptError::workspace(format!("{shown}: {e}")))?;
        if identity(&fd).map_err(|e| ScriptError::workspace(format!("{shown}: {e}")))?
            != (meta.dev(), meta.ino())
        {
            return Err(ScriptError::workspace(format!(
                "{shown}: the directory changed while it was being opened (refusing to use it)"
            )));
        }
        let base = WorkspaceBase {
            dir,
            fd: Arc::new(fd),
            script_owner,
            quota: Quota::default(),
        };
        Ok(base)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Sets how much each workspace may hold (default [`Quota::default`]: 256 MiB, 10,000
    /// files).
    pub fn with_quota(mut self, quota: Quota) -> Self {
        self.quota = quota;
        self
    }

    /// How much each workspace may hold.
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// Removes every workspace whose owner is gone; returns how many, or an error naming each
    /// one that could not be removed (it stays, and is tried again the next time).
    pub fn clean_stale(&self) -> Result<usize, ScriptError> {
        let entries = fs::read_dir(&self.dir)
            .map_err(|e| ScriptError::workspace(format!("{}: {e}", self.dir.display())))?;
        let mut removed = 0;
        let mut failed = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(store::PREFIX) {
                // A per-digest entry nobody used for a while (a workspace linked to it keeps
                // its own links).
                if fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir() && store::unused(&m))
                {
                    match remove_tree(&entry.path()) {
                        Ok(()) => removed += 1,
                        Err(e) => failed.push(format!("{}: {e}", entry.path().display())),
                    }
                }
                continue;
            }
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
            match remove_tree(&path) {
                Ok(()) => removed += 1,
                Err(e) => failed.push(format!("{}: {e}", path.display())),
            }
        }
        if failed.is_empty() {
            Ok(removed)
        } else {
            Err(ScriptError::workspace(format!(
                "cannot remove stale workspaces (tried again at the next start): {}",
                failed.join("; ")
            )))
        }
    }

    /// Materialises a skill: reads every file through its source and writes it into a fresh
    /// workspace (executable bits from the file list), with an empty `work/` beside it.
    ///
    /// A skill whose file list is over the quota is refused before anything is read or written.
    /// Files are then read one at a time and written in batches of a few MiB, the bytes
    /// actually read counted against the quota as they come: a source that holds more than it
    /// listed (a file that grew, a sparse file) stops at the quota, and memory holds one batch,
    /// never the whole tree. A refusal removes what was written.
    pub async fn materialise(
        &self,
        source: &dyn Source,
        skill: &Skill,
    ) -> Result<Workspace, ScriptError> {
        let too_many = |what: String| self.too_many(what);
        let paths = self.checked_paths(skill)?;
        let base = self.clone();
        let ws = blocking(move || base.create()).await?;
        let filled = self.fill(&ws, source, skill, paths, &too_many).await;
        match filled {
            Ok(()) => Ok(ws),
            Err(e) => {
                // Removing what was written is blocking work too.
                let _ = tokio::task::spawn_blocking(move || drop(ws)).await;
                Err(e)
            }
        }
    }

    /// The refusal of a skill over the quota.
    fn too_many(&self, what: String) -> ScriptError {
        ScriptError::workspace(format!(
            "the skill's files exceed the workspace limit ({what}; limit {} bytes, {} files: \
             [sandbox] workspace_bytes, workspace_files)",
            self.quota.bytes, self.quota.files
        ))
    }

    /// The skill's files (path, executable, private), refused before anything is read when
    /// the file list is over the quota or names a path that is not canonical.
    fn checked_paths(&self, skill: &Skill) -> Result<Vec<(String, bool, bool)>, ScriptError> {
        let too_many = |what: String| self.too_many(what);
        let count = skill.files().len() as u64;
        if count > self.quota.files {
            return Err(too_many(format!("{count} files")));
        }
        let listed = skill
            .files()
            .iter()
            .fold(0u64, |sum, f| sum.saturating_add(f.size));
        if listed > self.quota.bytes {
            return Err(too_many(format!("{listed} bytes in {count} files")));
        }
        let mut paths = Vec::with_capacity(skill.files().len());
        for f in skill.files() {
            let rel = check_skill_path(&f.path)?;
            if rel != f.path {
                return Err(ScriptError::PathRejected {
                    path: f.path.clone(),
                    reason: "not a canonical relative path".into(),
                });
            }
            paths.push((rel, f.executable, f.private));
        }
        Ok(paths)
    }

    /// Reads the skill's files and writes them into `ws`, a batch at a time (see
    /// [`materialise`](Self::materialise)).
    async fn fill(
        &self,
        ws: &Workspace,
        source: &dyn Source,
        skill: &Skill,
        paths: Vec<(String, bool, bool)>,
        too_many: &(dyn Fn(String) -> ScriptError + Sync),
    ) -> Result<(), ScriptError> {
        /// Bytes (or files) read before they are written.
        const BATCH_BYTES: u64 = 4 << 20;
        const BATCH_FILES: usize = 256;
        let skill_dir = ws.skill_dir();
        let skill_fd = ws
            .at
            .as_ref()
            .and_then(|at| at.skill.clone())
            .ok_or_else(|| ScriptError::workspace(format!("{}: not open", skill_dir.display())))?;
        let mut total = 0u64;
        let mut batch: Vec<(String, bytes::Bytes, bool, bool)> = Vec::new();
        let mut batch_bytes = 0u64;
        let count = paths.len();
        for (i, (rel, executable, private)) in paths.into_iter().enumerate() {
            let bytes = source
                .read(&join_path(skill.root(), &rel))
                .await
                .map_err(|e| match e {
                    crate::Error::PathRejected { path, reason } => {
                        ScriptError::PathRejected { path, reason }
                    }
                    other => ScriptError::workspace(format!("reading {rel}: {other}")),
                })?;
            total = total.saturating_add(bytes.len() as u64);
            if total > self.quota.bytes {
                return Err(too_many(format!("more than {total} bytes read")));
            }
            batch_bytes += bytes.len() as u64;
            batch.push((rel, bytes, executable, private));
            if batch_bytes >= BATCH_BYTES || batch.len() >= BATCH_FILES || i + 1 == count {
                let (fd, dir, files, owner) = (
                    skill_fd.clone(),
                    skill_dir.clone(),
                    std::mem::take(&mut batch),
                    self.script_owner,
                );
                batch_bytes = 0;
                blocking(move || write_files(&fd, &dir, &files, owner)).await?;
            }
        }
        Ok(())
    }

    /// A fresh workspace: its lock, an empty `skill/`, and `work/` with `tmp/` in it, each
    /// made relative to the base's descriptor (`mkdirat`, `openat` with `O_EXCL` and
    /// `O_NOFOLLOW`), never through a path.
    fn create(&self) -> Result<Workspace, ScriptError> {
        let fail =
            |what: &Path, e: io::Error| ScriptError::workspace(format!("{}: {e}", what.display()));
        let mode = if self.script_owner.is_some() {
            0o711
        } else {
            0o700
        };
        let (name, root_fd) =
            make_fresh_dir(&self.fd, mode, b"ws-").map_err(|e| fail(&self.dir, e))?;
        let root = self.dir.join(name.to_str().unwrap_or_default());
        let root_id = match identity(&root_fd) {
            Ok(id) => id,
            Err(e) => {
                let _ = unlink_at(&self.fd, &name, libc::AT_REMOVEDIR);
                return Err(fail(&root, e));
            }
        };
        // From here on, dropping `ws` removes the directory.
        let mut ws = Workspace {
            root: root.clone(),
            at: Some(Placed {
                base: self.fd.clone(),
                name,
                id: root_id,
                skill: None,
            }),
            lock: None,
            bounded: OnceLock::new(),
            on_disk: OnceLock::new(),
        };
        let lock_path = root.join(LOCK);
        let lock = create_file(&root_fd, &cstr(LOCK.as_bytes()).expect("no NUL"), 0o600)
            .map_err(|e| fail(&lock_path, e))?;
        if !try_lock(&lock) {
            return Err(ScriptError::workspace(format!(
                "{}: cannot lock",
                lock_path.display()
            )));
        }
        let _ = writeln!(&lock, "{}", std::process::id());
        ws.lock = Some(lock);
        let skill = make_dir_at(&root_fd, "skill", 0o755).map_err(|e| fail(&ws.skill_dir(), e))?;
        let work = make_dir_at(&root_fd, "work", 0o700).map_err(|e| fail(&ws.work_dir(), e))?;
        let tmp = make_dir_at(&work, "tmp", 0o700).map_err(|e| fail(&ws.tmp_dir(), e))?;
        if let Some((uid, gid)) = self.script_owner {
            for (d, path) in [(&work, ws.work_dir()), (&tmp, ws.tmp_dir())] {
                std::os::unix::fs::fchown(d, Some(uid), Some(gid)).map_err(|e| {
                    ScriptError::workspace(format!(
                        "{}: cannot give it to uid {uid}, the uid scripts run as ({e}; is that uid \
                         mapped in this user namespace?)",
                        path.display()
                    ))
                })?;
            }
        }
        if let Some(at) = &mut ws.at {
            at.skill = Some(Arc::new(skill));
        }
        Ok(ws)
    }
}

/// Runs blocking work off the async runtime.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ScriptError> + Send + 'static,
) -> Result<T, ScriptError> {
    super::offload(f)
        .await
        .map_err(|e| ScriptError::workspace(format!("materialising: {e}")))?
}

/// The mode a materialised file gets: executable or not from the file list, and closed to
/// others when the source's file is ([`FileEntry::private`](crate::path::FileEntry::private)):
/// a 0600 file of the skill is never handed out as 0644.
fn file_mode(executable: bool, private: bool) -> u32 {
    match (executable, private) {
        (true, false) => 0o755,
        (false, false) => 0o644,
        (true, true) => 0o700,
        (false, true) => 0o600,
    }
}

/// Writes files into a materialised skill directory (`skill`, a descriptor of it; `shown`, its
/// path for messages): each directory opened or made component by component with `openat` /
/// `mkdirat` and `O_NOFOLLOW`, each file created with `O_EXCL` (modes from the file list: a
/// private file stays closed to others, see [`file_mode`]).
/// Nothing is resolved through a path, so whatever happens to the directories above the
/// workspace meanwhile, the files land in it or nowhere. A private file is given to
/// `script_owner` (the uid scripts run as, when it is not this process's): closed to others,
/// it must still be open to the skill's own scripts.
fn write_files(
    skill: &OwnedFd,
    shown: &Path,
    files: &[(String, bytes::Bytes, bool, bool)],
    script_owner: Option<(u32, u32)>,
) -> Result<(), ScriptError> {
    for (rel, bytes, exec, private) in files {
        let path = shown.join(rel);
        let fail = |e: io::Error| ScriptError::workspace(format!("{}: {e}", path.display()));
        let (dirs, name) = match rel.rsplit_once('/') {
            Some((dirs, name)) => (Some(dirs), name),
            None => (None, rel.as_str()),
        };
        let parent = match dirs {
            Some(dirs) => Some(open_dirs(skill, dirs).map_err(fail)?),
            None => None,
        };
        let mode = file_mode(*exec, *private);
        let mut f = create_file(
            parent.as_ref().unwrap_or(skill),
            &cstr(name.as_bytes()).map_err(fail)?,
            mode,
        )
        .map_err(fail)?;
        f.write_all(bytes).map_err(fail)?;
        // The umask may have cleared bits: set the mode the file list says.
        f.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(fail)?;
        if let (true, Some((uid, gid))) = (*private, script_owner) {
            std::os::unix::fs::fchown(&f, Some(uid), Some(gid)).map_err(fail)?;
        }
    }
    Ok(())
}

/// A directory named `ws-` and six random letters, made in `base` with `mode`, and opened.
fn make_fresh_dir(base: &OwnedFd, mode: u32, prefix: &[u8]) -> io::Result<(CString, OwnedFd)> {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for _ in 0..64 {
        let mut random = [0u8; 6];
        rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty())?;
        let mut name = prefix.to_vec();
        name.extend(random.iter().map(|b| LETTERS[*b as usize % LETTERS.len()]));
        let name = cstr(&name)?;
        // SAFETY: a live descriptor and a C string.
        if unsafe { libc::mkdirat(base.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::AlreadyExists {
                continue;
            }
            return Err(e);
        }
        let dir = open_dir(base.as_raw_fd(), &name)?;
        fs::File::from(dir.try_clone()?).set_permissions(fs::Permissions::from_mode(mode))?;
        return Ok((name, dir));
    }
    Err(io::Error::other("no free workspace name after 64 tries"))
}

/// Makes the directory `name` in `at` (it must not exist) with `mode`, and opens it.
fn make_dir_at(at: &OwnedFd, name: &str, mode: u32) -> io::Result<OwnedFd> {
    let name = cstr(name.as_bytes())?;
    // SAFETY: a live descriptor and a C string.
    if unsafe { libc::mkdirat(at.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let dir = open_dir(at.as_raw_fd(), &name)?;
    fs::File::from(dir.try_clone()?).set_permissions(fs::Permissions::from_mode(mode))?;
    Ok(dir)
}

/// Opens the directories `rel` (`/`-separated, checked relative components) below `top`,
/// making the missing ones (0755); a file or a symbolic link in the way is an error.
fn open_dirs(top: &OwnedFd, rel: &str) -> io::Result<OwnedFd> {
    let mut cur: Option<OwnedFd> = None;
    for c in rel.split('/') {
        let at = cur.as_ref().unwrap_or(top);
        let name = cstr(c.as_bytes())?;
        let next = match open_dir(at.as_raw_fd(), &name) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => match make_dir_at(at, c, 0o755) {
                Ok(d) => d,
                // Made meanwhile by someone else: open what is there (a directory, or refused).
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    open_dir(at.as_raw_fd(), &name)?
                }
                Err(e) => return Err(e),
            },
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
                return Err(io::Error::other("a file is in the way of a directory"));
            }
            Err(e) => return Err(e),
        };
        cur = Some(next);
    }
    cur.ok_or_else(|| io::Error::other("an empty directory path"))
}

/// Creates the file `name` in `at`: `O_EXCL` (it must not exist) and `O_NOFOLLOW`.
fn create_file(at: &OwnedFd, name: &CString, mode: u32) -> io::Result<File> {
    // SAFETY: a live descriptor and a C string; the returned descriptor is owned once.
    let fd = unsafe {
        libc::openat(
            at.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
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

/// Removes a tree a script may have shaped: never recursing (a tree 20,000 levels deep must
/// not overflow a stack), holding one directory descriptor at a time whatever the depth (so
/// `RLIMIT_NOFILE` cannot stop it), never following a symbolic link, and making a directory
/// the script left without write or search permission writable first. Memory grows with the
/// depth (one name per level), not descriptors or stack.
pub(crate) fn remove_tree(p: &Path) -> io::Result<()> {
    let meta = match fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return fs::remove_file(p);
    }
    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
    let top = open_dir(libc::AT_FDCWD, &cstr(p.as_os_str().as_encoded_bytes())?)?;
    empty_dir(top, (meta.dev(), meta.ino()))?;
    match fs::remove_dir(p) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn cstr(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::other("a NUL byte in a path"))
}

fn open_dir(at: RawFd, name: &CString) -> io::Result<OwnedFd> {
    // SAFETY: a C string; the returned descriptor is owned exactly once.
    let fd = unsafe {
        libc::openat(
            at,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn identity(fd: &OwnedFd) -> io::Result<(u64, u64)> {
    // SAFETY: fstat on a live descriptor into a zeroed local.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd.as_raw_fd(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((st.st_dev as u64, st.st_ino as u64))
    }
}

/// The entries of a directory (`.` and `..` left out), each with whether it is a directory.
fn entries(dir: &OwnedFd) -> io::Result<Vec<(CString, bool)>> {
    // SAFETY: fdopendir takes a duplicate we own; closedir releases it; readdir's entries are
    // read before the next call.
    unsafe {
        let dup = libc::fcntl(dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0);
        if dup < 0 {
            return Err(io::Error::last_os_error());
        }
        let d = libc::fdopendir(dup);
        if d.is_null() {
            let e = io::Error::last_os_error();
            libc::close(dup);
            return Err(e);
        }
        libc::rewinddir(d);
        let mut out = Vec::new();
        loop {
            *errno() = 0;
            let ent = libc::readdir(d);
            if ent.is_null() {
                let errno = *errno();
                libc::closedir(d);
                if errno != 0 {
                    return Err(io::Error::from_raw_os_error(errno));
                }
                return Ok(out);
            }
            let name = std::ffi::CStr::from_ptr((*ent).d_name.as_ptr());
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let is_dir = match (*ent).d_type {
                libc::DT_DIR => true,
                libc::DT_UNKNOWN => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::fstatat(
                        dir.as_raw_fd(),
                        name.as_ptr(),
                        &mut st,
                        libc::AT_SYMLINK_NOFOLLOW,
                    ) == 0
                        && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR
                }
                _ => false,
            };
            out.push((name.to_owned(), is_dir));
        }
    }
}

/// This thread's `errno`.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn errno() -> *mut libc::c_int {
    // SAFETY: returns this thread's errno location; no preconditions.
    unsafe { libc::__errno_location() }
}

/// This thread's `errno`.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn errno() -> *mut libc::c_int {
    // SAFETY: returns this thread's errno location; no preconditions.
    unsafe { libc::__error() }
}

fn unlink_at(dir: &OwnedFd, name: &CString, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: a live descriptor and a C string.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    Err(io::Error::last_os_error())
}

/// Measures a run's work directory against `quota`; over it, empties the directory (keeping
/// `work/` and a fresh `tmp/`, owned as before) and returns why, so nothing a run leaves above
/// the quota outlives it. The walk stops as soon as the quota is exceeded.
pub(crate) fn enforce_quota(work: &Path, quota: Quota) -> Result<Option<String>, ScriptError> {
    let fail = |e: io::Error| ScriptError::workspace(format!("{}: {e}", work.display()));
    let (bytes, files) = usage(work, quota).map_err(fail)?;
    if bytes <= quota.bytes && files <= quota.files {
        return Ok(None);
    }
    let meta = fs::symlink_metadata(work).map_err(fail)?;
    let top = open_dir(
        libc::AT_FDCWD,
        &cstr(work.as_os_str().as_encoded_bytes()).map_err(fail)?,
    )
    .map_err(fail)?;
    let again = top.try_clone().map_err(fail)?;
    empty_dir(top, (meta.dev(), meta.ino())).map_err(fail)?;
    fs::File::from(again.try_clone().map_err(fail)?)
        .set_permissions(fs::Permissions::from_mode(0o700))
        .map_err(fail)?;
    let tmp = make_dir_at(&again, "tmp", 0o700).map_err(fail)?;
    std::os::unix::fs::fchown(&tmp, Some(meta.uid()), Some(meta.gid())).map_err(fail)?;
    Ok(Some(format!(
        "the run left more than the workspace limit in {} ({}{} bytes in {}{} files and \
         directories; limit {} bytes, {} files: [sandbox] workspace_bytes, workspace_files); \
         the work directory was emptied",
        work.display(),
        if bytes > quota.bytes { "over " } else { "" },
        bytes,
        if files > quota.files { "over " } else { "" },
        files,
        quota.bytes,
        quota.files
    )))
}

/// Disk bytes (allocated blocks) and entries beneath `dir`, walked like [`remove_tree`] walks
/// (iteratively, one descriptor at a time, no link followed); stops once past `quota`.
fn usage(dir: &Path, quota: Quota) -> io::Result<(u64, u64)> {
    let meta = fs::symlink_metadata(dir)?;
    let mut cur = open_dir(libc::AT_FDCWD, &cstr(dir.as_os_str().as_encoded_bytes())?)?;
    let (mut bytes, mut files) = (0u64, 0u64);
    let mut stack = vec![Level {
        id: (meta.dev(), meta.ino()),
        name: CString::default(),
        todo: entries(&cur)?,
    }];
    loop {
        if bytes > quota.bytes || files > quota.files {
            return Ok((bytes, files));
        }
        let level = stack.last_mut().expect("the walk keeps its top level");
        if let Some((name, is_dir)) = level.todo.pop() {
            files += 1;
            // SAFETY: fstatat on a live descriptor and a C string into a zeroed local.
            let st = unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstatat(
                    cur.as_raw_fd(),
                    name.as_ptr(),
                    &mut st,
                    libc::AT_SYMLINK_NOFOLLOW,
                ) != 0
                {
                    continue;
                }
                st
            };
            bytes = bytes.saturating_add((st.st_blocks as u64).saturating_mul(512));
            if is_dir {
                let child = open_dir(cur.as_raw_fd(), &name)?;
                let id = identity(&child)?;
                let todo = entries(&child)?;
                cur = child;
                stack.push(Level { id, name, todo });
            }
            continue;
        }
        stack.pop();
        let Some(parent) = stack.last() else {
            return Ok((bytes, files));
        };
        let up = open_dir(cur.as_raw_fd(), &cstr(b"..")?)?;
        if identity(&up)? != parent.id {
            return Err(io::Error::other("a directory moved while it was measured"));
        }
        cur = up;
    }
}

/// One level of the walk: a directory's identity, its name in its parent, and the entries
/// still to remove.
struct Level {
    id: (u64, u64),
    name: CString,
    todo: Vec<(CString, bool)>,
}

/// Empties the directory `top` (identity `top_id`), iteratively (see [`remove_tree`]).
fn empty_dir(top: OwnedFd, top_id: (u64, u64)) -> io::Result<()> {
    // SAFETY: fchmod on a live descriptor (a failure only means we may not change it).
    let writable = |fd: &OwnedFd| unsafe {
        libc::fchmod(fd.as_raw_fd(), 0o700);
    };
    writable(&top);
    let mut cur = top;
    let mut stack = vec![Level {
        id: top_id,
        name: CString::default(),
        todo: entries(&cur)?,
    }];
    loop {
        let level = stack.last_mut().expect("the walk keeps its top level");
        if let Some((name, is_dir)) = level.todo.pop() {
            if !is_dir {
                match unlink_at(&cur, &name, 0) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            match unlink_at(&cur, &name, libc::AT_REMOVEDIR) {
                Ok(()) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(_) => {}
            }
            // Not empty (or not ours to remove yet): go down, holding only the child.
            let child = open_dir(cur.as_raw_fd(), &name)?;
            writable(&child);
            let id = identity(&child)?;
            let todo = entries(&child)?;
            cur = child;
            stack.push(Level { id, name, todo });
            continue;
        }
        // This level is empty: go up and remove it.
        let done = stack.pop().expect("a level");
        let Some(parent) = stack.last() else {
            return Ok(());
        };
        let up = open_dir(cur.as_raw_fd(), &cstr(b"..")?)?;
        if identity(&up)? != parent.id {
            return Err(io::Error::other(
                "a directory moved while its tree was being removed",
            ));
        }
        cur = up;
        unlink_at(&cur, &done.name, libc::AT_REMOVEDIR)?;
    }
}

/// A work directory bounded while scripts write (Linux): a tmpfs of the workspace quota
/// (`size`, `nr_inodes`) mounted on `work/` in a mount namespace of the workspace's own, held
/// by these descriptors. Runs join the namespaces; dropping the descriptors unmounts and frees
/// the tmpfs (no process keeps it). In a process that makes one run the tmpfs is its run's
/// own, mounted in the run's namespaces: only its root is held, and no run joins it.
#[derive(Debug)]
pub(crate) struct BoundedWork {
    /// The namespaces later runs join; `None` for the tmpfs of a process's one run.
    pub(crate) ns: Option<WorkNamespaces>,
    /// The tmpfs's root directory.
    pub(crate) root: OwnedFd,
    /// Its device and inode.
    pub(crate) inode: (u64, u64),
}

/// The namespaces of a workspace's own where its tmpfs is mounted on `work/`.
#[derive(Debug)]
pub(crate) struct WorkNamespaces {
    /// The mount namespace.
    pub(crate) mnt: OwnedFd,
    /// Its user namespace, when the kernel allowed one.
    pub(crate) user: Option<OwnedFd>,
}

/// After a run in a bounded work directory (`root`, a descriptor of its tmpfs's root, whose
/// identity is `inode`): a tmpfs with no block or inode left means a write of the run failed
/// with ENOSPC at the quota. The work directory is then emptied (the next run finds it empty,
/// and nothing of it is kept for the rest of the session) and the reason returned.
pub(crate) fn enforce_bounded_quota(
    root: OwnedFd,
    inode: (u64, u64),
    work: &Path,
    quota: Quota,
) -> Result<Option<String>, ScriptError> {
    let fail = |e: io::Error| ScriptError::workspace(format!("{}: {e}", work.display()));
    // SAFETY: fstatfs on a live descriptor into a zeroed local.
    let st = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::fstatfs(root.as_raw_fd(), &mut st) != 0 {
            return Err(fail(io::Error::last_os_error()));
        }
        st
    };
    let (no_bytes, no_files) = (st.f_bavail == 0, st.f_ffree == 0);
    if !no_bytes && !no_files {
        return Ok(None);
    }
    empty_dir(root, inode).map_err(fail)?;
    let what = match (no_bytes, no_files) {
        (true, true) => "bytes and files",
        (true, false) => "bytes",
        _ => "files",
    };
    Ok(Some(format!(
        "the run reached the workspace limit in {} (its {what}: {} bytes, {} files and \
         directories; [sandbox] workspace_bytes, workspace_files): writes past it failed with \
         \"No space left on device\"; the work directory was emptied",
        work.display(),
        quota.bytes,
        quota.files
    )))
}

/// One skill's workspace. Dropping it removes the directory.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    /// Where it was made: removed relative to this, not through `root`.
    at: Option<Placed>,
    lock: Option<File>,
    /// Set once, by the first confined run (whose helper makes it).
    bounded: OnceLock<BoundedWork>,
    /// Why the work directory is on disk (bounded only by the check after each run), when a
    /// bounded one was asked for and could not be made.
    on_disk: OnceLock<String>,
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

    /// Whether the work directory is bounded while scripts write: a tmpfs of the workspace
    /// quota that only the workspace's runs see at [`work_dir`](Self::work_dir) (Linux, where
    /// the kernel allows a mount namespace). Otherwise it is the directory on disk, measured
    /// after each run.
    pub fn is_bounded(&self) -> bool {
        self.bounded.get().is_some()
    }

    /// Where this process finds what scripts left in the work directory: for a bounded one, a
    /// path through the descriptor that holds its tmpfs (`/proc/self/fd/N`, valid in this
    /// process while the workspace lives); otherwise [`work_dir`](Self::work_dir).
    pub fn work_view(&self) -> PathBuf {
        match self.bounded.get() {
            Some(b) => PathBuf::from(format!("/proc/self/fd/{}", b.root.as_raw_fd())),
            None => self.work_dir(),
        }
    }

    pub(crate) fn bounded(&self) -> Option<&BoundedWork> {
        self.bounded.get()
    }

    /// Why the work directory is on disk although a bounded one was asked for.
    pub(crate) fn on_disk(&self) -> Option<&str> {
        self.on_disk.get().map(String::as_str)
    }

    /// Whether a bounded work directory was made, or found impossible, already.
    pub(crate) fn bounding_decided(&self) -> bool {
        self.bounded.get().is_some() || self.on_disk.get().is_some()
    }

    /// Takes the bounded work directory, or records why there is none (the first word
    /// stays: runs that make it hold the skill's lock, so there is only one).
    pub(crate) fn set_bounded(&self, made: Result<BoundedWork, String>) {
        match made {
            Ok(b) => {
                let _ = self.bounded.set(b);
            }
            Err(why) => {
                let _ = self.on_disk.set(why);
            }
        }
    }

    /// Removes the workspace now, reporting a failure (dropping it removes it silently).
    pub fn remove(mut self) -> Result<(), ScriptError> {
        let r = remove_tree(&self.root);
        self.lock = None;
        let root = std::mem::take(&mut self.root);
        r.map_err(|e| ScriptError::workspace(format!("removing {}: {e}", root.display())))
    }
}

/// A workspace's place: the base's descriptor, the workspace's name in it and its identity,
/// and its `skill/` directory, open while it is being filled.
#[derive(Debug)]
struct Placed {
    base: Arc<OwnedFd>,
    name: CString,
    id: (u64, u64),
    skill: Option<Arc<OwnedFd>>,
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if let Some(at) = self.at.take() {
            // The directory found by its name in the base must still be the one made; a
            // workspace that was moved away is left where it went.
            let Ok(dir) = open_dir(at.base.as_raw_fd(), &at.name) else {
                return;
            };
            if identity(&dir).ok() != Some(at.id) {
                return;
            }
            let _ = fs::File::from(match dir.try_clone() {
                Ok(d) => d,
                Err(_) => return,
            })
            .set_permissions(fs::Permissions::from_mode(0o700));
            if empty_dir(dir, at.id).is_ok() {
                let _ = unlink_at(&at.base, &at.name, libc::AT_REMOVEDIR);
            }
        } else if !self.root.as_os_str().is_empty() {
            let _ = remove_tree(&self.root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree `depth` levels deep under `top`, a file at the bottom, the bottom directory left
    /// read-only.
    fn deep_tree(top: &Path, depth: usize) {
        fs::create_dir(top).unwrap();
        let mut cur = open_dir(
            libc::AT_FDCWD,
            &cstr(top.as_os_str().as_encoded_bytes()).unwrap(),
        )
        .unwrap();
        let d = cstr(b"d").unwrap();
        for _ in 0..depth {
            // SAFETY: a live descriptor and a C string.
            assert_eq!(
                unsafe { libc::mkdirat(cur.as_raw_fd(), d.as_ptr(), 0o755) },
                0
            );
            cur = open_dir(cur.as_raw_fd(), &d).unwrap();
        }
        let f = cstr(b"f").unwrap();
        // SAFETY: as above; the new descriptor is closed at once.
        unsafe {
            let fd = libc::openat(
                cur.as_raw_fd(),
                f.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY,
                0o644,
            );
            assert!(fd >= 0);
            libc::close(fd);
            libc::fchmod(cur.as_raw_fd(), 0o500);
        }
    }

    #[test]
    fn removes_a_deep_tree_in_bounded_descriptors_and_stack() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("t");
        deep_tree(&top, 5000);
        // On a small thread stack, as a tokio worker or a blocking-pool thread would have.
        let t = top.clone();
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || remove_tree(&t))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert!(!top.exists());
    }

    #[test]
    fn stale_workspaces_are_retried_at_the_next_start() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("base");
        fs::create_dir(&base).unwrap();
        // A workspace a crashed owner left (its lock file already gone), old enough.
        let ws = base.join("ws-stale");
        deep_tree(&ws, 300);
        let old = SystemTime::now() - Duration::from_secs(3600);
        File::open(&ws)
            .unwrap()
            .set_times(fs::FileTimes::new().set_modified(old))
            .unwrap();
        WorkspaceBase::open(&base, None).unwrap();
        assert!(!ws.exists(), "the stale workspace survived the start");
    }
}
