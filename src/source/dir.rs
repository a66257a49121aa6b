//! A directory on disk: one skill, or a tree of them.
//!
//! ```text
//! skills/                    ← DirSource::open("skills")   lists "pdf-forms", "team/deploy"
//! ├── pdf-forms/SKILL.md
//! ├── team/deploy/SKILL.md   ← nested roots found breadth-first, up to max_depth (6)
//! ├── .git/                  ← dot-directories and node_modules/ are not searched
//! └── notes.txt
//! pdf-forms/                 ← DirSource::open("pdf-forms") is one skill: lists ""
//! ├── SKILL.md
//! └── scripts/fill.py
//! ```
//!
//! A directory that holds a `SKILL.md` (or `skill.md`) entry is a skill root and is not searched
//! further. Symbolic links are followed only when their target stays inside the source's root; a
//! link out of it is refused ([`Error::PathRejected`]), never read.

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::{FileEntry, Source, base_name};
use crate::document::Fault;
use crate::error::{Error, Result};

/// Bounds for a [`DirSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirOptions {
    /// How deep below the source root to look for skills (default 6).
    pub max_depth: usize,
    /// How many directories to visit when looking for skills (default 2,000); more is an error.
    pub max_dirs: usize,
    /// Largest file [`read`](Source::read) returns (default 16 MiB).
    pub max_file_size: u64,
    /// Deepest file path inside a skill, in components (default 16).
    pub max_file_depth: usize,
}

impl Default for DirOptions {
    fn default() -> Self {
        DirOptions { max_depth: 6, max_dirs: 2000, max_file_size: 16 << 20, max_file_depth: 16 }
    }
}

/// A directory of skills, or one skill directory.
#[derive(Debug, Clone)]
pub struct DirSource {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    single: bool,
    opts: DirOptions,
}

/// Names that are never part of a skill nor searched for skills.
fn ignored_file(name: &str) -> bool {
    name == ".DS_Store"
}

fn ignored_dir(name: &str) -> bool {
    name == ".git" || name == "node_modules"
}

fn has_document_entry(dir: &Path) -> bool {
    ["SKILL.md", "skill.md"].iter().any(|n| fs::symlink_metadata(dir.join(n)).is_ok())
}

/// Checks a path the way `validate PATH` must before reading anything: it exists, it is a
/// directory, and it holds a `SKILL.md` (or `skill.md`) regular file. Returns the document's path.
pub fn check(path: &Path) -> std::result::Result<PathBuf, Fault> {
    let shown = path.display().to_string();
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Fault::missing_path(&shown)),
        Err(e) => return Err(Fault::unreadable(format!("{shown}: {e}"))),
    };
    if !meta.is_dir() {
        return Err(Fault::not_a_directory(&shown));
    }
    for name in ["SKILL.md", "skill.md"] {
        let doc = path.join(name);
        if fs::metadata(&doc).is_ok_and(|m| m.is_file()) {
            return Ok(doc);
        }
    }
    Err(Fault::missing_document())
}

impl DirSource {
    /// Opens a directory. It is one skill when it holds a `SKILL.md`/`skill.md` entry itself,
    /// else a tree searched for skills.
    pub fn open(path: &Path, opts: DirOptions) -> Result<Self> {
        let shown = path.display().to_string();
        let root = fs::canonicalize(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(shown.clone()),
            _ => Error::io(&shown, e),
        })?;
        let meta = fs::metadata(&root).map_err(|e| Error::io(&shown, e))?;
        if !meta.is_dir() {
            return Err(Error::Invalid(format!("not a directory: {shown}")));
        }
        let single = has_document_entry(&root);
        Ok(DirSource { inner: Arc::new(Inner { root, single, opts }) })
    }

    /// Opens one skill directory: it lists `""` even when the document is missing, so that
    /// [`discover`](super::discover) reports `missing-document` for it.
    pub fn open_skill(path: &Path, opts: DirOptions) -> Result<Self> {
        let mut s = Self::open(path, opts)?;
        Arc::get_mut(&mut s.inner).expect("fresh").single = true;
        Ok(s)
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Whether this source is one skill (it lists `""`).
    pub fn is_single_skill(&self) -> bool {
        self.inner.single
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| Error::Invalid(format!("directory task failed: {e}")))?
    }
}

impl Inner {
    fn shown(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.root.display().to_string()
        } else {
            self.root.join(rel).display().to_string()
        }
    }

    /// Follows `abs` if it is a symlink; refuses a target outside the root.
    fn resolve_inside(&self, abs: &Path, rel: &str) -> Result<(PathBuf, fs::Metadata)> {
        let meta = fs::symlink_metadata(abs).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(self.shown(rel)),
            _ => Error::io(self.shown(rel), e),
        })?;
        if !meta.file_type().is_symlink() {
            return Ok((abs.to_path_buf(), meta));
        }
        let target = fs::canonicalize(abs).map_err(|e| Error::io(self.shown(rel), e))?;
        if !target.starts_with(&self.root) {
            return Err(Error::PathRejected {
                path: self.shown(rel),
                reason: "a symbolic link that points outside the source".into(),
            });
        }
        let meta = fs::metadata(&target).map_err(|e| Error::io(self.shown(rel), e))?;
        Ok((target, meta))
    }

    fn list(&self) -> Result<Vec<String>> {
        if self.single {
            return Ok(vec![String::new()]);
        }
        let mut roots = Vec::new();
        let mut seen = HashSet::new();
        seen.insert(self.root.clone());
        let mut queue = VecDeque::from([(self.root.clone(), String::new(), 0usize)]);
        let mut visited = 0usize;
        while let Some((dir, rel, depth)) = queue.pop_front() {
            visited += 1;
            if visited > self.opts.max_dirs {
                return Err(Error::Invalid(format!(
                    "{}: more than {} directories to search for skills; open a narrower directory",
                    self.shown(""),
                    self.opts.max_dirs
                )));
            }
            for (name, child_rel) in sorted_children(&dir, &rel, self)? {
                if name.starts_with('.') || ignored_dir(&name) {
                    continue;
                }
                let abs = dir.join(&name);
                let (target, meta) = match self.resolve_inside(&abs, &child_rel) {
                    Ok(x) => x,
                    // A link out of the root is not part of this source; nor is a dangling one.
                    Err(Error::PathRejected { .. }) | Err(Error::NotFound(_)) => continue,
                    Err(Error::Io { source, .. }) if is_loop(&source) => continue,
                    Err(e) => return Err(e),
                };
                if !meta.is_dir() || !seen.insert(fs::canonicalize(&target).unwrap_or(target.clone())) {
                    continue;
                }
                if has_document_entry(&target) {
                    roots.push(child_rel);
                } else if depth + 1 < self.opts.max_depth {
                    queue.push_back((target, child_rel, depth + 1));
                }
            }
        }
        Ok(roots)
    }

    fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        check_rel(root, true)?;
        let base = self.root.join(root);
        let (base, meta) = self.resolve_inside(&base, root)?;
        if !meta.is_dir() {
            return Err(Error::Invalid(format!("not a directory: {}", self.shown(root))));
        }
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        seen.insert(fs::canonicalize(&base).unwrap_or(base.clone()));
        let mut stack = vec![(base, String::new(), 0usize)];
        while let Some((dir, rel, depth)) = stack.pop() {
            let full_rel = super::join_path(root, &rel);
            for (name, child_rel) in sorted_children(&dir, &full_rel, self)? {
                let rel_child = super::join_path(&rel, &name);
                let shown_rel = super::join_path(root, &rel_child);
                let abs = dir.join(&name);
                let ftype = fs::symlink_metadata(&abs).map_err(|e| Error::io(self.shown(&child_rel), e))?;
                if (ftype.is_dir() && ignored_dir(&name)) || (ftype.is_file() && ignored_file(&name)) {
                    continue;
                }
                let (target, meta) = self.resolve_inside(&abs, &shown_rel)?;
                if meta.is_dir() {
                    if depth + 1 >= self.opts.max_file_depth {
                        return Err(Error::PathRejected {
                            path: self.shown(&shown_rel),
                            reason: format!("deeper than {} levels", self.opts.max_file_depth),
                        });
                    }
                    let canon = fs::canonicalize(&target).map_err(|e| Error::io(self.shown(&shown_rel), e))?;
                    if seen.insert(canon) {
                        stack.push((target, rel_child, depth + 1));
                    }
                } else if meta.is_file() {
                    out.push(FileEntry { path: rel_child, size: meta.len(), executable: is_executable(&meta) });
                } else {
                    return Err(Error::PathRejected {
                        path: self.shown(&shown_rel),
                        reason: "not a regular file or directory".into(),
                    });
                }
            }
        }
        out.sort_unstable_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Ok(out)
    }

    fn read(&self, path: &str) -> Result<Bytes> {
        check_rel(path, false)?;
        let abs = self.root.join(path);
        let (target, meta) = self.resolve_inside(&abs, path)?;
        if !meta.is_file() {
            return Err(Error::NotFound(self.shown(path)));
        }
        let limit = self.opts.max_file_size;
        if meta.len() > limit {
            return Err(Error::TooLarge { path: self.shown(path), size: meta.len(), limit });
        }
        let file = fs::File::open(&target).map_err(|e| Error::io(self.shown(path), e))?;
        let mut buf = Vec::with_capacity(meta.len() as usize);
        file.take(limit + 1).read_to_end(&mut buf).map_err(|e| Error::io(self.shown(path), e))?;
        if buf.len() as u64 > limit {
            return Err(Error::TooLarge { path: self.shown(path), size: buf.len() as u64, limit });
        }
        Ok(Bytes::from(buf))
    }
}

fn is_loop(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    false
}

/// The entries of `dir` sorted by byte order, as `(name, rel path)`; non-UTF-8 names refused.
fn sorted_children(dir: &Path, rel: &str, inner: &Inner) -> Result<Vec<(String, String)>> {
    let rd = fs::read_dir(dir).map_err(|e| Error::io(inner.shown(rel), e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(inner.shown(rel), e))?;
        let name = entry.file_name().into_string().map_err(|raw| Error::PathRejected {
            path: dir.join(raw).display().to_string(),
            reason: "file name is not UTF-8".into(),
        })?;
        let child_rel = super::join_path(rel, &name);
        out.push((name, child_rel));
    }
    out.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(out)
}

/// A relative `/`-separated path with no empty, `.` or `..` parts (empty allowed for roots).
fn check_rel(path: &str, allow_empty: bool) -> Result<()> {
    if path.is_empty() {
        return if allow_empty {
            Ok(())
        } else {
            Err(Error::PathRejected { path: path.into(), reason: "empty path".into() })
        };
    }
    let bad = path.starts_with('/')
        || path.contains('\\')
        || path.contains('\0')
        || path.split('/').any(|p| p.is_empty() || p == "." || p == "..");
    if bad {
        return Err(Error::PathRejected {
            path: path.into(),
            reason: "not a relative path inside the source".into(),
        });
    }
    Ok(())
}

#[async_trait]
impl Source for DirSource {
    async fn list(&self) -> Result<Vec<String>> {
        self.blocking(|i| i.list()).await
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        let root = root.to_string();
        self.blocking(move |i| i.files(&root)).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let path = path.to_string();
        self.blocking(move |i| i.read(&path)).await
    }

    fn location(&self, path: &str) -> String {
        self.inner.shown(path)
    }

    fn root_dir_name(&self, root: &str) -> Option<String> {
        if root.is_empty() {
            // The canonical directory's name, so that validating `.` works.
            self.inner.root.file_name().map(|n| n.to_string_lossy().into_owned())
        } else {
            Some(base_name(root).to_string())
        }
    }
}
