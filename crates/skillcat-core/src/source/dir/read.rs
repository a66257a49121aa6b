//! Reads of a directory source, resolved beneath the skill that holds the path: the skill
//! root a path belongs to, its canonical directory, and the one open that cannot leave it
//! (`openat2` with `RESOLVE_BENEATH` from the skill's directory, itself opened beneath the
//! source's root), with the checks every read makes (size, sparse files).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use bytes::Bytes;
use rustix::fs::{Mode, OFlags};

use super::{Inner, allocated, check_rel, has_document_entry};
use crate::error::{Error, Result};

impl Inner {
    /// The refusal of a link out of `within`: out of the source, or out of a skill.
    pub(super) fn outside(&self, rel: &str, within: &Path) -> Error {
        let what = if within == self.root && !self.single {
            "the source"
        } else {
            "the skill"
        };
        Error::PathRejected {
            path: self.shown(rel),
            reason: format!("a symbolic link that points outside {what}"),
        }
    }

    /// The canonical directory of the skill root `root` (relative to the source's root),
    /// refused when it is not inside the source.
    pub(super) fn skill_dir(&self, root: &str) -> Result<PathBuf> {
        let dir = fs::canonicalize(self.root.join(root)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(self.shown(root)),
            _ => Error::io(self.shown(root), e),
        })?;
        if !dir.starts_with(&self.root) {
            return Err(self.outside(root, &self.root));
        }
        Ok(dir)
    }

    /// The skill root that holds `path` (relative to the source's root): the source's own root
    /// for a single skill; else the root the last listing found above it, else the shallowest
    /// directory above it holding a document entry (what the search would take), else the
    /// directory holding the file. Reads resolve beneath it: a skill sees its own tree only.
    fn skill_of<'p>(&self, path: &'p str) -> &'p str {
        if self.single {
            return "";
        }
        let listed = Arc::clone(&self.listed.lock().unwrap_or_else(PoisonError::into_inner));
        if let Some(found) = listed.iter().find(|f| {
            !f.rel.is_empty()
                && path.len() > f.rel.len()
                && path.starts_with(&f.rel)
                && path.as_bytes()[f.rel.len()] == b'/'
        }) {
            return &path[..found.rel.len()];
        }
        let parent = path.rsplit_once('/').map_or("", |(dir, _)| dir);
        for (i, _) in parent.match_indices('/').chain([(parent.len(), "")]) {
            let prefix = &parent[..i];
            if !prefix.is_empty() && has_document_entry(&self.root.join(prefix)) {
                return prefix;
            }
        }
        parent
    }

    pub(super) fn read(&self, path: &str) -> Result<Bytes> {
        self.read_in(path, &mut None)
    }

    /// [`read`](Self::read), with the last skill directory resolved (its root and canonical
    /// path) kept in `last` for the next read of a batch: a skill's files are read in a row.
    pub(super) fn read_in(
        &self,
        path: &str,
        last: &mut Option<(String, PathBuf)>,
    ) -> Result<Bytes> {
        check_rel(path, false)?;
        let limit = self.opts.max_file_size;
        // Resolved beneath the skill's directory, not the source's: a skill's link to a
        // sibling skill or to the tree around the skills is refused like one out of the source.
        let skill = self.skill_of(path);
        let within = match last {
            Some((root, dir)) if root == skill => dir.clone(),
            _ => {
                let dir = self.skill_dir(skill)?;
                *last = Some((skill.to_string(), dir.clone()));
                dir
            }
        };
        let rest = if skill.is_empty() {
            path
        } else {
            &path[skill.len() + 1..]
        };
        let file = match self.open_beneath(&within, path, rest)? {
            Some(file) => file,
            None => self.open_checked(&within, path, rest)?,
        };
        let opened = file
            .metadata()
            .map_err(|e| Error::io(self.shown(path), e))?;
        if !opened.is_file() {
            return Err(Error::NotFound(self.shown(path)));
        }
        if opened.len() > limit {
            return Err(Error::TooLarge {
                path: self.shown(path),
                size: opened.len(),
                limit,
            });
        }
        // Refused from what the open file says it holds before a byte is read, and again from
        // the bytes read.
        self.check_sparse(path, opened.len(), &opened)?;
        let mut buf = Vec::with_capacity(opened.len().min(limit) as usize);
        (&file)
            .take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(self.shown(path), e))?;
        if buf.len() as u64 > limit {
            return Err(Error::TooLarge {
                path: self.shown(path),
                size: buf.len() as u64,
                limit,
            });
        }
        let after = file
            .metadata()
            .map_err(|e| Error::io(self.shown(path), e))?;
        self.check_sparse(path, buf.len() as u64, &after)?;
        Ok(Bytes::from(buf))
    }

    /// Opens `rest` beneath the skill directory `within` (canonical; `rel` is the whole path,
    /// for messages) for [`read`](Self::read) in one step that cannot leave it: `openat2` with
    /// `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` from the skill's directory, so a component
    /// swapped for a symbolic link between any check and the open is still resolved beneath
    /// the skill (or refused). A link the kernel will not follow beneath it (an absolute one,
    /// or one that leads out) is resolved as [`resolve_within`](Self::resolve_within) does,
    /// and its target, when inside, opened beneath the skill again. `None` when the kernel has
    /// no `openat2` (before Linux 5.6, or a filter that refuses it): the caller falls back to
    /// [`open_checked`](Self::open_checked).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn open_beneath(&self, within: &Path, rel: &str, rest: &str) -> Result<Option<fs::File>> {
        use rustix::fs::ResolveFlags;
        use rustix::io::Errno;
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let root = match rustix::fs::open(&self.root, dir_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => return Err(Error::io(self.root_shown.clone(), e.into())),
        };
        // The skill's directory, itself opened beneath the source's root: a component swapped
        // for a link since it was made canonical cannot lead out of the source.
        let base = match within.strip_prefix(&self.root) {
            Ok(inside) if inside.as_os_str().is_empty() => root,
            Ok(inside) => match rustix::fs::openat2(&root, inside, dir_flags, Mode::empty(), how) {
                Ok(fd) => fd,
                Err(Errno::NOSYS | Errno::PERM) => return Ok(None),
                Err(Errno::XDEV) => return Err(self.outside(rel, &self.root)),
                Err(e) => return Err(self.open_error(rel, e)),
            },
            Err(_) => return Err(self.outside(rel, &self.root)),
        };
        // Non-blocking, so a file swapped for a FIFO is opened (and refused as not a regular
        // file) instead of waiting for a writer.
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        let open = |at: &str| {
            let mut tries = 0;
            loop {
                // EAGAIN: a rename elsewhere in the file system raced the lookup; try again.
                match rustix::fs::openat2(&base, at, flags, Mode::empty(), how) {
                    Err(Errno::AGAIN) if tries < 16 => tries += 1,
                    other => return other,
                }
            }
        };
        let fd = match open(rest) {
            Ok(fd) => fd,
            Err(Errno::NOSYS | Errno::PERM) => return Ok(None),
            Err(Errno::XDEV) => {
                let target = fs::canonicalize(within.join(rest)).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
                        Error::NotFound(self.shown(rel))
                    }
                    _ => Error::io(self.shown(rel), e),
                })?;
                let Ok(inside) = target.strip_prefix(within) else {
                    return Err(self.outside(rel, within));
                };
                let Some(inside) = inside.to_str().filter(|s| !s.is_empty()) else {
                    return Err(Error::NotFound(self.shown(rel)));
                };
                match open(inside) {
                    Ok(fd) => fd,
                    // Swapped again since it was resolved: refused, never followed out.
                    Err(Errno::XDEV) => return Err(self.outside(rel, within)),
                    Err(e) => return Err(self.open_error(rel, e)),
                }
            }
            Err(e) => return Err(self.open_error(rel, e)),
        };
        Ok(Some(fs::File::from(fd)))
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn open_beneath(&self, _within: &Path, _rel: &str, _rest: &str) -> Result<Option<fs::File>> {
        Ok(None)
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn open_error(&self, rel: &str, e: rustix::io::Errno) -> Error {
        use rustix::io::Errno;
        match e {
            // ENXIO: a socket; ENOTDIR: a file where a folder was named.
            Errno::NOENT | Errno::NXIO | Errno::NOTDIR => Error::NotFound(self.shown(rel)),
            e => Error::io(self.shown(rel), e.into()),
        }
    }

    /// Opens `rest` beneath the skill directory `within` for [`read`](Self::read) where
    /// `openat2` is missing: the link at its end is resolved and checked
    /// ([`resolve_within`](Self::resolve_within)), then the target opened by path. A component
    /// swapped between the check and the open can redirect this open;
    /// [`open_beneath`](Self::open_beneath) closes that where the kernel allows.
    fn open_checked(&self, within: &Path, rel: &str, rest: &str) -> Result<fs::File> {
        let (target, meta) = self.resolve_within(&within.join(rest), rel, within)?;
        if !meta.is_file() {
            return Err(Error::NotFound(self.shown(rel)));
        }
        let limit = self.opts.max_file_size;
        if meta.len() > limit {
            return Err(Error::TooLarge {
                path: self.shown(rel),
                size: meta.len(),
                limit,
            });
        }
        fs::File::open(&target).map_err(|e| Error::io(self.shown(rel), e))
    }

    /// Refuses `bytes` of a file whose `meta` says it has far fewer on disk: a sparse file
    /// (holes read as zeros) would otherwise turn a few KiB into as many bytes in memory and
    /// in every copy made of it (a materialised workspace, a pack).
    fn check_sparse(&self, path: &str, bytes: u64, meta: &fs::Metadata) -> Result<()> {
        let Some(allocated) = allocated(meta) else {
            return Ok(());
        };
        let ratio = self.opts.max_sparse_ratio;
        if bytes > self.opts.sparse_floor && bytes > allocated.saturating_mul(ratio) {
            return Err(Error::SparseFile {
                location: self.shown(path),
                size: bytes,
                allocated,
                ratio,
            });
        }
        Ok(())
    }
}
