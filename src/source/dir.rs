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

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
        DirOptions {
            max_depth: 6,
            max_dirs: 2000,
            max_file_size: 16 << 20,
            max_file_depth: 16,
        }
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
    /// What [`list`](Inner::list) read ahead for each root: its file list and its document.
    /// Each entry is handed out once, then the file system is asked again.
    prefetched: Mutex<HashMap<String, Prefetched>>,
}

#[derive(Debug)]
struct Prefetched {
    files: Option<Vec<FileEntry>>,
    document: Option<(String, Bytes)>,
}

/// The most document bytes [`Inner::list`] reads ahead (beyond it, documents are read on demand).
const PREFETCH_BYTES: u64 = 64 << 20;

fn has_document_entry(dir: &Path) -> bool {
    ["SKILL.md", "skill.md"]
        .iter()
        .any(|n| fs::symlink_metadata(dir.join(n)).is_ok())
}

/// Checks a path the way `validate PATH` must before reading anything: it exists, it is a
/// directory, and it holds a `SKILL.md` (or `skill.md`) regular file. Returns the document's path.
pub fn check(path: &Path) -> std::result::Result<PathBuf, Fault> {
    let shown = path.display().to_string();
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Fault::missing_path(&shown));
        }
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
        Ok(DirSource {
            inner: Arc::new(Inner {
                root,
                single,
                opts,
                prefetched: Mutex::new(HashMap::new()),
            }),
        })
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
        // (rel, canonical absolute directory)
        let mut roots: Vec<(String, PathBuf)> = Vec::new();
        let mut top_level = Vec::new();
        // Directories are canonical by construction (the root is canonicalised and links are
        // replaced by their canonical targets), so this set catches every loop and alias.
        let mut seen = HashSet::new();
        seen.insert(self.root.clone());
        let mut queue = VecDeque::from([(self.root.clone(), String::new(), 0usize)]);
        let mut visited = 0usize;
        while let Some((dir, rel, depth)) = queue.pop_front() {
            // Skill roots are never queued: the bound is on directories searched.
            visited += 1;
            if visited > self.opts.max_dirs {
                return Err(Error::Invalid(format!(
                    "{}: more than {} directories to search for skills; open a narrower directory",
                    self.shown(""),
                    self.opts.max_dirs
                )));
            }
            let children = read_children(&dir, &rel, self)?;
            if depth == 1 && !children.is_empty() {
                top_level.push(rel.clone());
            }
            // Skill roots lie at most `max_depth` levels below the source root.
            if depth >= self.opts.max_depth {
                continue;
            }
            for child in children {
                if child.name.starts_with('.') || crate::archive::is_ignored(&child.name) {
                    continue;
                }
                let abs = dir.join(&child.name);
                let target = match child.kind {
                    Kind::Dir => abs,
                    Kind::Symlink => match self.resolve_inside(&abs, &child.rel) {
                        Ok((target, meta)) if meta.is_dir() => target,
                        // Not a directory, out of the root, dangling or a loop: not searched.
                        _ => continue,
                    },
                    _ => continue,
                };
                if !seen.insert(target.clone()) {
                    continue;
                }
                // One probe per directory instead of reading it: most directories are skills.
                if has_document_entry(&target) {
                    roots.push((child.rel, target));
                } else if depth + 1 < self.opts.max_depth {
                    queue.push_back((target, child.rel, depth + 1));
                }
            }
        }
        // A top-level folder with content but no skill anywhere below it is listed too, so that
        // discover() reports it as missing its document instead of dropping it silently.
        for dir in top_level {
            let prefix = format!("{dir}/");
            if !roots.iter().any(|(r, _)| r.starts_with(&prefix)) {
                let abs = self.root.join(&dir);
                roots.push((dir, abs));
            }
        }
        roots.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        self.prefetch(&roots);
        Ok(roots.into_iter().map(|(r, _)| r).collect())
    }

    /// Reads every root's file list and document ahead, on all cores, so that the `discover`
    /// that follows a `list` costs no round trip to the blocking pool per skill. Errors are not
    /// kept: the later call repeats the work and reports them.
    fn prefetch(&self, roots: &[(String, PathBuf)]) {
        if roots.len() < 2 {
            return;
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        let chunk = roots.len().div_ceil(threads);
        let budget = AtomicU64::new(PREFETCH_BYTES);
        let results: Vec<Vec<(String, Prefetched)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = roots
                .chunks(chunk)
                .map(|part| {
                    let budget = &budget;
                    scope.spawn(move || {
                        part.iter()
                            .filter_map(|(root, abs)| {
                                let files = self.walk_files(abs.clone(), root).ok()?;
                                let document = super::document_name(&files).and_then(|name| {
                                    let size = files.iter().find(|f| f.path == name)?.size;
                                    // Take the bytes from the budget only when they fit: a
                                    // plain fetch_sub would wrap and lift the bound.
                                    let fits = size <= super::DOCUMENT_LIMIT
                                        && budget
                                            .fetch_update(
                                                Ordering::Relaxed,
                                                Ordering::Relaxed,
                                                |left| left.checked_sub(size),
                                            )
                                            .is_ok();
                                    if !fits {
                                        return None;
                                    }
                                    let bytes = read_no_follow(&abs.join(name), size)?;
                                    Some((super::join_path(root, name), bytes))
                                });
                                Some((
                                    root.clone(),
                                    Prefetched {
                                        files: Some(files),
                                        document,
                                    },
                                ))
                            })
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let mut cache = self.prefetched.lock().unwrap_or_else(|e| e.into_inner());
        cache.clear();
        cache.extend(results.into_iter().flatten());
    }

    fn take_files(&self, root: &str) -> Option<Vec<FileEntry>> {
        let mut cache = self.prefetched.lock().unwrap_or_else(|e| e.into_inner());
        cache.get_mut(root)?.files.take()
    }

    fn take_document(&self, path: &str) -> Option<Bytes> {
        let root = path.rsplit_once('/').map_or("", |(r, _)| r);
        let mut cache = self.prefetched.lock().unwrap_or_else(|e| e.into_inner());
        let entry = cache.get_mut(root)?;
        match &entry.document {
            Some((p, _)) if p == path => {}
            _ => return None,
        }
        let (_, bytes) = entry.document.take()?;
        if entry.files.is_none() {
            cache.remove(root);
        }
        Some(bytes)
    }

    fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        check_rel(root, true)?;
        let (base, meta) = self.resolve_inside(&self.root.join(root), root)?;
        if !meta.is_dir() {
            return Err(Error::Invalid(format!(
                "not a directory: {}",
                self.shown(root)
            )));
        }
        self.walk_files(base, root)
    }

    /// Every regular file under `base` (a directory inside the root, already checked).
    fn walk_files(&self, base: PathBuf, root: &str) -> Result<Vec<FileEntry>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        seen.insert(base.clone());
        let mut stack = vec![(base, String::new(), 0usize)];
        while let Some((dir, rel, depth)) = stack.pop() {
            let full_rel = super::join_path(root, &rel);
            for child in read_children(&dir, &full_rel, self)? {
                let rel_child = super::join_path(&rel, &child.name);
                let abs = dir.join(&child.name);
                // The same junk list as archives, so both give the same files and digest.
                if crate::archive::is_ignored(&child.name) {
                    continue;
                }
                let (kind, target, meta) = match child.kind {
                    Kind::Dir => (Kind::Dir, abs, None),
                    Kind::File => {
                        let meta = fs::symlink_metadata(&abs)
                            .map_err(|e| Error::io(self.shown(&child.rel), e))?;
                        (Kind::File, abs, Some(meta))
                    }
                    Kind::Symlink => {
                        let (target, meta) = self.resolve_inside(&abs, &child.rel)?;
                        let kind = if meta.is_dir() {
                            Kind::Dir
                        } else if meta.is_file() {
                            Kind::File
                        } else {
                            Kind::Other
                        };
                        (kind, target, Some(meta))
                    }
                    Kind::Other => (Kind::Other, abs, None),
                };
                match kind {
                    Kind::Dir => {
                        if depth + 1 >= self.opts.max_file_depth {
                            return Err(Error::PathRejected {
                                path: self.shown(&child.rel),
                                reason: format!("deeper than {} levels", self.opts.max_file_depth),
                            });
                        }
                        if seen.insert(target.clone()) {
                            stack.push((target, rel_child, depth + 1));
                        }
                    }
                    Kind::File => {
                        let meta = meta.expect("files carry metadata");
                        out.push(FileEntry {
                            path: rel_child,
                            size: meta.len(),
                            executable: is_executable(&meta),
                        });
                    }
                    Kind::Symlink | Kind::Other => {
                        return Err(Error::PathRejected {
                            path: self.shown(&child.rel),
                            reason: "not a regular file or directory".into(),
                        });
                    }
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
            return Err(Error::TooLarge {
                path: self.shown(path),
                size: meta.len(),
                limit,
            });
        }
        let file = fs::File::open(&target).map_err(|e| Error::io(self.shown(path), e))?;
        let mut buf = Vec::with_capacity(meta.len() as usize);
        file.take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(self.shown(path), e))?;
        if buf.len() as u64 > limit {
            return Err(Error::TooLarge {
                path: self.shown(path),
                size: buf.len() as u64,
                limit,
            });
        }
        Ok(Bytes::from(buf))
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

struct Child {
    name: String,
    rel: String,
    kind: Kind,
}

/// Reads a file the walk just listed, refusing a link planted since (`O_NOFOLLOW`), and only if
/// it still has the size the listing saw.
fn read_no_follow(path: &Path, size: u64) -> Option<Bytes> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    let file = opts.open(path).ok()?;
    let mut buf = Vec::with_capacity(size as usize + 1);
    file.take(size + 1).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 == size).then(|| Bytes::from(buf))
}

/// The entries of `dir` sorted by byte order, with their type from the directory entry itself
/// (no extra `stat`); non-UTF-8 names are refused.
fn read_children(dir: &Path, rel: &str, inner: &Inner) -> Result<Vec<Child>> {
    let rd = fs::read_dir(dir).map_err(|e| Error::io(inner.shown(rel), e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(inner.shown(rel), e))?;
        let ft = entry
            .file_type()
            .map_err(|e| Error::io(inner.shown(rel), e))?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|raw| Error::PathRejected {
                path: dir.join(raw).display().to_string(),
                reason: "file name is not UTF-8".into(),
            })?;
        let kind = if ft.is_symlink() {
            Kind::Symlink
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        let rel = super::join_path(rel, &name);
        out.push(Child { name, rel, kind });
    }
    out.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(out)
}

/// A relative `/`-separated path with no empty, `.` or `..` parts (empty allowed for roots).
fn check_rel(path: &str, allow_empty: bool) -> Result<()> {
    if path.is_empty() {
        return if allow_empty {
            Ok(())
        } else {
            Err(Error::PathRejected {
                path: path.into(),
                reason: "empty path".into(),
            })
        };
    }
    let bad = path.starts_with('/')
        || path.contains('\\')
        || path.contains('\0')
        || path
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..");
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
        if let Some(files) = self.inner.take_files(root) {
            return Ok(files);
        }
        let root = root.to_string();
        self.blocking(move |i| i.files(&root)).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        if let Some(bytes) = self.inner.take_document(path) {
            return Ok(bytes);
        }
        let path = path.to_string();
        self.blocking(move |i| i.read(&path)).await
    }

    fn location(&self, path: &str) -> String {
        self.inner.shown(path)
    }

    fn root_dir_name(&self, root: &str) -> Option<String> {
        if root.is_empty() {
            // The canonical directory's name, so that validating `.` works.
            self.inner
                .root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        } else {
            Some(base_name(root).to_string())
        }
    }
}
