//! What scripts left in a workspace's work directory, which goes when the workspace does: listed
//! so that a caller can say so, and copied out when the user asks to keep it.
//!
//! The work directory is the scripts' working directory and `HOME`; its `tmp/` is their
//! `TMPDIR`, scratch by convention, and is neither listed nor kept. Only regular files and
//! directories count: a symbolic link or a special file a script made is never followed and
//! never copied, only counted (a link could name any file of the host's).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::Workspace;

/// The most entries walked in one work directory (a workspace's file quota is smaller).
const MAX_ENTRIES: usize = 1_000_000;

/// One thing a script left in the work directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftFile {
    /// Its path relative to the work directory.
    pub path: PathBuf,
    /// Its size in bytes (0 for what is not a regular file).
    pub size: u64,
    /// Whether it is a regular file (else a symbolic link or a special file, never kept).
    pub regular: bool,
}

/// What [`Workspace::keep_work`] copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    /// The regular files copied, relative to the work directory.
    pub files: Vec<PathBuf>,
    /// Their bytes in all.
    pub bytes: u64,
    /// What was left out: symbolic links and special files.
    pub skipped: Vec<PathBuf>,
}

impl Workspace {
    /// Every file the scripts left in the work directory but its `tmp/`, sorted by path:
    /// what is removed with the workspace. Directories are not listed, only what they hold.
    pub fn left_files(&self) -> io::Result<Vec<LeftFile>> {
        let mut found = Vec::new();
        walk(&self.work_view(), &mut |rel, kind, meta| {
            if kind != Kind::Dir {
                found.push(LeftFile {
                    path: rel.to_path_buf(),
                    size: if kind == Kind::File { meta.len() } else { 0 },
                    regular: kind == Kind::File,
                });
            }
            Ok(())
        })?;
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }

    /// Copies what the scripts left in the work directory (but its `tmp/`) into `dest`, made
    /// when missing and refused when it holds anything: regular files with their executable
    /// bit, and the directories that hold them. Nothing is overwritten and no link followed,
    /// neither in the work directory nor in `dest`.
    pub fn keep_work(&self, dest: &Path) -> io::Result<Kept> {
        match fs::read_dir(dest) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{} is not empty", dest.display()),
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(dest)?,
            Err(e) => return Err(e),
        }
        let from = self.work_view();
        let mut kept = Kept::default();
        walk(&from, &mut |rel, kind, _| {
            let to = dest.join(rel);
            match kind {
                Kind::Dir => fs::create_dir(&to),
                Kind::File => {
                    let bytes = copy_file(&from.join(rel), &to)?;
                    kept.files.push(rel.to_path_buf());
                    kept.bytes += bytes;
                    Ok(())
                }
                Kind::Other => {
                    kept.skipped.push(rel.to_path_buf());
                    Ok(())
                }
            }
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", to.display())))
        })?;
        kept.files.sort();
        kept.skipped.sort();
        Ok(kept)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Other,
}

/// Visits everything under `top` but `top/tmp`, parents before what they hold, without
/// following a link; `visit` gets the path relative to `top`.
fn walk(
    top: &Path,
    visit: &mut dyn FnMut(&Path, Kind, &fs::Metadata) -> io::Result<()>,
) -> io::Result<()> {
    let mut stack = vec![PathBuf::new()];
    let mut seen = 0usize;
    while let Some(rel) = stack.pop() {
        let dir = top.join(&rel);
        let mut entries = fs::read_dir(&dir)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<io::Result<Vec<_>>>()?;
        entries.sort();
        // Reversed onto the stack: directories are walked in name order.
        for name in entries.into_iter().rev() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(io::Error::other(format!(
                    "more than {MAX_ENTRIES} entries in the work directory"
                )));
            }
            let rel = rel.join(&name);
            if rel == Path::new("tmp") {
                continue;
            }
            let meta = fs::symlink_metadata(top.join(&rel))?;
            let ft = meta.file_type();
            let kind = if ft.is_dir() {
                Kind::Dir
            } else if ft.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            visit(&rel, kind, &meta)?;
            if kind == Kind::Dir {
                stack.push(rel);
            }
        }
    }
    Ok(())
}

/// Copies one regular file, opened without following a link, into a file that must not
/// exist yet; the executable bit is kept. Returns the bytes copied.
fn copy_file(from: &Path, to: &Path) -> io::Result<u64> {
    let mut src = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)?;
    let meta = src.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file any more"));
    }
    let exec = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0;
    let mut dst: File = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if exec { 0o755 } else { 0o644 })
        .custom_flags(libc::O_NOFOLLOW)
        .open(to)?;
    io::copy(&mut src, &mut dst)
}
