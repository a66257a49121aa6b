//! Immutable per-digest copies of skills' files, from which workspaces are materialised.
//!
//! ```text
//! <base>/sk-<digest>/      the skill's files as read (directories 0555, files with the file
//!                          list's modes), made complete under an `sk-new-` name and renamed
//!                          into place, never written again
//! ```
//!
//! The digest is the SHA-256 of every file's path, flags and contents, computed from what is
//! read anyway. A workspace's `skill/` is then made of **hard links** to the entry's files when
//! its runs are confined (the skill is read-only in the run's root and to Landlock, so no run
//! can change what another sees), and of **copies** (a reflink, `FICLONE`, where the file
//! system has them, else bytes) when the skill may run unconfined (`trust: core`): an
//! unconfined script could write through a link into every later run's files. An entry is
//! touched at each use and removed with stale workspaces once unused for [`KEEP`]; an entry a
//! crash left half-made keeps its `sk-new-` name, and goes as an unused entry does.

use std::ffi::CString;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::{AsRawFd, OwnedFd};
use std::time::{Duration, SystemTime};

use super::{
    Workspace, WorkspaceBase, blocking, cstr, entries, make_fresh_dir, open_dir, remove_tree,
    write_files,
};
use crate::document::Skill;
use crate::path::join_path;
use crate::script::ScriptError;
use crate::source::Source;

/// An entry's name prefix.
pub(super) const PREFIX: &str = "sk-";

/// The name of an entry being made (then renamed to its digest): under the entries' prefix, so
/// it is never taken for a workspace (a watcher or a test counting `ws-` folders), and one a
/// crash left goes as an unused entry does.
const MAKING: &str = "sk-new-";

/// How long an entry nobody used is kept.
pub(super) const KEEP: Duration = Duration::from_secs(3600);

/// A file as read: its path, executable and private flags, and bytes.
type Read = (String, bytes::Bytes, bool, bool);

impl WorkspaceBase {
    /// Materialises a skill as [`materialise`](Self::materialise) does, from the immutable
    /// per-digest entry of its files (made when missing): `skill/` holds hard links to the
    /// entry's files when `links` (the skill's runs are always confined), else copies (a
    /// reflink where the file system allows). Where linking fails, the file is copied.
    pub async fn materialise_shared(
        &self,
        source: &dyn Source,
        skill: &Skill,
        links: bool,
    ) -> Result<Workspace, ScriptError> {
        let paths = self.checked_paths(skill)?;
        let too_many = |what: String| self.too_many(what);
        // What is read is hashed as it comes; nothing is written unless the entry is missing.
        let mut hasher = Vec::with_capacity(paths.len() * 48);
        let mut total = 0u64;
        for (rel, exec, private) in &paths {
            let bytes = read_one(source, skill, rel).await?;
            total = total.saturating_add(bytes.len() as u64);
            if total > self.quota.bytes {
                return Err(too_many(format!("more than {total} bytes read")));
            }
            hash_file(&mut hasher, rel, &bytes, *exec, *private);
        }
        let name = format!("{PREFIX}{}", hex(&skillcat_core::digest::sha256(&hasher)));
        let entry = match self.open_entry(&name) {
            Some(e) => e,
            None => self.make_entry(source, skill, &paths).await?,
        };
        let base = self.clone();
        let linked = blocking(move || {
            // Used now: kept for another KEEP.
            // SAFETY: futimens on a live descriptor; a null times pointer means now.
            unsafe { libc::futimens(entry.as_raw_fd(), std::ptr::null()) };
            let ws = base.create()?;
            let skill_fd = ws
                .at
                .as_ref()
                .and_then(|at| at.skill.clone())
                .ok_or_else(|| ScriptError::workspace("the workspace is not open"))?;
            fill_from(&entry, &skill_fd, links, base.script_owner).map_err(|e| {
                ScriptError::workspace(format!("{}: {e}", ws.skill_dir().display()))
            })?;
            Ok(ws)
        })
        .await;
        match linked {
            Ok(ws) => Ok(ws),
            // The entry went meanwhile (a start that found it unused for KEEP removed it as it
            // was opened): the skill is copied as it always was.
            Err(ScriptError::Workspace { .. }) => self.materialise(source, skill).await,
            Err(e) => Err(e),
        }
    }

    /// The entry `name`, when it is there.
    fn open_entry(&self, name: &str) -> Option<OwnedFd> {
        open_dir(self.fd.as_raw_fd(), &cstr(name.as_bytes()).ok()?).ok()
    }

    /// Reads the skill again into a fresh `sk-new-` directory, makes it read-only and renames it
    /// to the digest of what was written (which is what the entry holds, whatever changed in
    /// the source since the first read); an entry made meanwhile by another process is used
    /// instead.
    async fn make_entry(
        &self,
        source: &dyn Source,
        skill: &Skill,
        paths: &[(String, bool, bool)],
    ) -> Result<OwnedFd, ScriptError> {
        let fail = |e: io::Error| ScriptError::workspace(format!("{}: {e}", self.dir.display()));
        let (tmp, tmp_fd) = make_fresh_dir(&self.fd, 0o700, MAKING.as_bytes()).map_err(fail)?;
        let tmp_fd = std::sync::Arc::new(tmp_fd);
        let shown = self.dir.join(tmp.to_string_lossy().as_ref());
        let made = async {
            let mut hasher = Vec::with_capacity(paths.len() * 48);
            let mut total = 0u64;
            for (rel, exec, private) in paths {
                let bytes = read_one(source, skill, rel).await?;
                total = total.saturating_add(bytes.len() as u64);
                if total > self.quota.bytes {
                    return Err(self.too_many(format!("more than {total} bytes read")));
                }
                hash_file(&mut hasher, rel, &bytes, *exec, *private);
                let files: Vec<Read> = vec![(rel.clone(), bytes, *exec, *private)];
                let (fd, dir, owner) = (tmp_fd.clone(), shown.clone(), self.script_owner);
                blocking(move || write_files(&fd, &dir, &files, owner)).await?;
            }
            Ok(format!(
                "{PREFIX}{}",
                hex(&skillcat_core::digest::sha256(&hasher))
            ))
        }
        .await;
        let base = self.clone();
        blocking(move || {
            let name = match made {
                Ok(n) => n,
                Err(e) => {
                    let _ = remove_tree(&shown);
                    return Err(e);
                }
            };
            let done = seal(&tmp_fd).and_then(|()| {
                let to = cstr(name.as_bytes())?;
                // SAFETY: renameat within one live directory descriptor, two C strings.
                let r = unsafe {
                    libc::renameat(
                        base.fd.as_raw_fd(),
                        tmp.as_ptr(),
                        base.fd.as_raw_fd(),
                        to.as_ptr(),
                    )
                };
                if r != 0 {
                    let e = io::Error::last_os_error();
                    // Made meanwhile: the same files, by their digest.
                    if !matches!(e.raw_os_error(), Some(libc::EEXIST | libc::ENOTEMPTY)) {
                        return Err(e);
                    }
                    let _ = remove_tree(&shown);
                }
                open_dir(base.fd.as_raw_fd(), &to)
            });
            done.map_err(|e| {
                let _ = remove_tree(&shown);
                ScriptError::workspace(format!("{}: {e}", shown.display()))
            })
        })
        .await
    }
}

/// Reads one file of the skill through its source.
async fn read_one(
    source: &dyn Source,
    skill: &Skill,
    rel: &str,
) -> Result<bytes::Bytes, ScriptError> {
    source
        .read(&join_path(skill.root(), rel))
        .await
        .map_err(|e| match e {
            crate::Error::PathRejected { path, reason } => {
                ScriptError::PathRejected { path, reason }
            }
            other => ScriptError::workspace(format!("reading {rel}: {other}")),
        })
}

/// Adds one file to the digest's input: its path, flags, length and contents' SHA-256.
fn hash_file(into: &mut Vec<u8>, rel: &str, bytes: &[u8], exec: bool, private: bool) {
    into.extend_from_slice(rel.as_bytes());
    into.push(0);
    into.push(u8::from(exec) | u8::from(private) << 1);
    into.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    into.extend_from_slice(&skillcat_core::digest::sha256(bytes));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes every directory of the tree (`top` included) 0555: no name is added, removed or
/// renamed in it. The files keep the modes the file list gives them (a script sees the
/// skill's own modes): only this process's user could write them, it never does, and a run
/// that links them is confined with the skill read-only.
fn seal(top: &OwnedFd) -> io::Result<()> {
    let mut stack = vec![top.try_clone()?];
    while let Some(dir) = stack.pop() {
        for (name, is_dir) in entries(&dir)? {
            if is_dir {
                stack.push(open_dir(dir.as_raw_fd(), &name)?);
            }
        }
        File::from(dir).set_permissions(fs::Permissions::from_mode(0o555))?;
    }
    Ok(())
}

/// Opens the regular file `name` in `dir` for reading, without following a link.
fn open_at(dir: &OwnedFd, name: &CString) -> io::Result<File> {
    // SAFETY: a live descriptor and a C string; the returned descriptor is owned once.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let f = File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    if !f.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// Fills a workspace's `skill/` from an entry: directories made (0755), files hard-linked
/// when `links`, else (or where the link fails) reflinked or copied with the entry's mode.
fn fill_from(
    entry: &OwnedFd,
    skill: &OwnedFd,
    links: bool,
    script_owner: Option<(u32, u32)>,
) -> io::Result<()> {
    let mut stack = vec![(entry.try_clone()?, skill.try_clone()?)];
    while let Some((from, to)) = stack.pop() {
        for (name, is_dir) in entries(&from)? {
            if is_dir {
                let sub = open_dir(from.as_raw_fd(), &name)?;
                // SAFETY: a live descriptor and a C string.
                if unsafe { libc::mkdirat(to.as_raw_fd(), name.as_ptr(), 0o755) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                let made = open_dir(to.as_raw_fd(), &name)?;
                File::from(made.try_clone()?).set_permissions(fs::Permissions::from_mode(0o755))?;
                stack.push((sub, made));
                continue;
            }
            // SAFETY: linkat between two live descriptors, one C string, no link followed.
            if links
                && unsafe {
                    libc::linkat(
                        from.as_raw_fd(),
                        name.as_ptr(),
                        to.as_raw_fd(),
                        name.as_ptr(),
                        0,
                    )
                } == 0
            {
                continue;
            }
            copy_at(&from, &to, &name, script_owner)?;
        }
    }
    Ok(())
}

/// Copies one file of an entry: a reflink (`FICLONE`) where the file system shares blocks,
/// else its bytes; the same mode, and the same owner when it is the scripts' uid.
fn copy_at(
    from: &OwnedFd,
    to: &OwnedFd,
    name: &CString,
    script_owner: Option<(u32, u32)>,
) -> io::Result<()> {
    let mut src = open_at(from, name)?;
    let meta = src.metadata()?;
    let mode = meta.mode() & 0o7777;
    let mut dst = super::create_file(to, name, mode)?;
    #[cfg(target_os = "linux")]
    // SAFETY: FICLONE between two live descriptors of ours.
    let cloned = unsafe { libc::ioctl(dst.as_raw_fd(), libc::FICLONE, src.as_raw_fd()) } == 0;
    #[cfg(not(target_os = "linux"))]
    let cloned = false;
    if !cloned {
        io::copy(&mut src, &mut dst)?;
    }
    dst.set_permissions(fs::Permissions::from_mode(mode))?;
    if let Some((uid, gid)) = script_owner.filter(|(uid, _)| meta.uid() == *uid) {
        std::os::unix::fs::fchown(&dst, Some(uid), Some(gid))?;
    }
    Ok(())
}

/// Whether an entry (its metadata) has gone unused for [`KEEP`].
pub(super) fn unused(meta: &fs::Metadata) -> bool {
    meta.modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age > KEEP)
}
