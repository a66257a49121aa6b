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

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::{FileEntry, Source, base_name};
use crate::document::{Fault, Skill};
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
}

/// Whether `dir` holds a `SKILL.md` or `skill.md` entry of any type (a directory named so is
/// still a skill root: validation then reports what is wrong with it).
pub fn has_document_entry(dir: &Path) -> bool {
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
            inner: Arc::new(Inner { root, single, opts }),
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
        Ok(self.find_roots()?.into_iter().map(|f| f.rel).collect())
    }

    /// The skill roots in list order, each with its entries when the search read them.
    fn find_roots(&self) -> Result<Vec<Found>> {
        if self.single {
            return Ok(vec![Found {
                rel: String::new(),
                dir: self.root.clone(),
                children: None,
            }]);
        }
        let max_depth = self.opts.max_depth;
        let mut found: Vec<Found> = Vec::new();
        let mut top_level = Vec::new();
        // Directories are canonical by construction (the root is canonicalised and links are
        // replaced by their canonical targets), so this set catches every loop and alias.
        let mut seen = HashSet::new();
        seen.insert(self.root.clone());
        // The bound is on directories searched; skill roots are not searched.
        let mut visited = 0usize;
        let count_visit = |visited: &mut usize| {
            *visited += 1;
            if *visited > self.opts.max_dirs {
                return Err(Error::Invalid(format!(
                    "{}: more than {} directories to search for skills; open a narrower directory",
                    self.shown(""),
                    self.opts.max_dirs
                )));
            }
            Ok(())
        };
        count_visit(&mut visited)?;
        let mut frontier = vec![Searched {
            children: read_children(&self.root, "", self)?,
            depth: 0,
            rel: String::new(),
        }];
        // Breadth-first, one level at a time: the choices (which alias of a directory is kept)
        // are made in sorted order, the reading of a level's directories runs on every core.
        while !frontier.is_empty() {
            let mut candidates: Vec<(PathBuf, String, usize)> = Vec::new();
            for dir in &frontier {
                if dir.depth == 1 && !dir.children.is_empty() {
                    top_level.push(dir.rel.clone());
                }
                // Skill roots lie at most `max_depth` levels below the source root.
                if dir.depth >= max_depth {
                    continue;
                }
                for child in &dir.children {
                    if child.name.starts_with('.') || crate::archive::is_ignored(&child.name) {
                        continue;
                    }
                    let target = match child.kind {
                        Kind::Dir => self.root.join(&child.rel),
                        Kind::Symlink => {
                            match self.resolve_inside(&self.root.join(&child.rel), &child.rel) {
                                Ok((target, meta)) if meta.is_dir() => target,
                                // Not a directory, out of the root, dangling or a loop: not
                                // searched.
                                _ => continue,
                            }
                        }
                        _ => continue,
                    };
                    if seen.insert(target.clone()) {
                        candidates.push((target, child.rel.clone(), dir.depth + 1));
                    }
                }
            }
            // One listing per candidate tells a skill root from a directory to search further,
            // and a root's listing is the first step of its file walk.
            let listed = super::par_map(&candidates, |(dir, rel, _)| read_children(dir, rel, self));
            let mut next = Vec::new();
            for ((dir, rel, depth), children) in candidates.into_iter().zip(listed) {
                match children {
                    Ok(children) if children.iter().any(|c| is_document_name(&c.name)) => {
                        found.push(Found {
                            rel,
                            dir,
                            children: Some(children),
                        });
                    }
                    Ok(children) => {
                        if depth < max_depth {
                            count_visit(&mut visited)?;
                            next.push(Searched {
                                children,
                                depth,
                                rel,
                            });
                        }
                    }
                    // Unreadable: a root still (its walk reports the error as that skill's
                    // fault), else an error for the whole listing.
                    Err(_) if has_document_entry(&dir) => found.push(Found {
                        rel,
                        dir,
                        children: None,
                    }),
                    Err(e) if depth < max_depth => return Err(e),
                    Err(_) => {}
                }
            }
            frontier = next;
        }
        // A top-level folder with content but no skill anywhere below it is listed too, so that
        // discover() reports it as missing its document instead of dropping it silently.
        for dir in top_level {
            let prefix = format!("{dir}/");
            if !found.iter().any(|f| f.rel.starts_with(&prefix)) {
                found.push(Found {
                    dir: self.root.join(&dir),
                    rel: dir,
                    children: None,
                });
            }
        }
        found.sort_unstable_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
        Ok(found)
    }

    /// [`super::load`] for one root the search found, without leaving the thread: its walk
    /// starts from the entries already read, its document is read with the size just listed.
    fn load_found(&self, source: &DirSource, found: &Found) -> Result<Skill> {
        let files = match &found.children {
            Some(children) => self.walk_files(found.dir.clone(), &found.rel, Some(children))?,
            None => self.files(&found.rel)?,
        };
        super::load_sync(source, &found.rel, files, |doc_path, size| {
            match read_no_follow(&found.dir.join(super::base_name(doc_path)), size) {
                Some(bytes) => Ok(bytes),
                // A link to a file inside the root, or a file that changed since it was listed.
                None => self.read(doc_path),
            }
        })
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
        self.walk_files(base, root, None)
    }

    /// Every regular file under `base` (a directory inside the root, already checked), whose
    /// own entries may already have been read (`listed`).
    fn walk_files(
        &self,
        base: PathBuf,
        root: &str,
        listed: Option<&[Child]>,
    ) -> Result<Vec<FileEntry>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        seen.insert(base.clone());
        let mut stack = vec![(base, String::new(), 0usize)];
        let mut listed = listed;
        while let Some((dir, rel, depth)) = stack.pop() {
            let read;
            let children = match listed.take() {
                Some(children) => children,
                None => {
                    read = read_children(&dir, &super::join_path(root, &rel), self)?;
                    &read[..]
                }
            };
            for child in children {
                let rel_child = super::join_path(&rel, &child.name);
                let abs = dir.join(&child.name);
                // The same junk list as archives, so both give the same files and digest.
                if crate::archive::is_ignored(&child.name) {
                    continue;
                }
                let (kind, target, meta) = match child.kind {
                    Kind::Dir => (Kind::Dir, abs, None),
                    Kind::File => (Kind::File, abs, child.file),
                    Kind::Symlink => {
                        let (target, meta) = self.resolve_inside(&abs, &child.rel)?;
                        let kind = if meta.is_dir() {
                            Kind::Dir
                        } else if meta.is_file() {
                            Kind::File
                        } else {
                            Kind::Other
                        };
                        (kind, target, Some(FileMeta::of(&meta)))
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
                        let meta = match meta {
                            Some(meta) => meta,
                            None => FileMeta::of(
                                &fs::symlink_metadata(&target)
                                    .map_err(|e| Error::io(self.shown(&child.rel), e))?,
                            ),
                        };
                        out.push(FileEntry {
                            path: rel_child,
                            size: meta.size,
                            executable: meta.executable,
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

/// One entry of a directory listing.
struct Child {
    name: String,
    /// The path from the source root.
    rel: String,
    kind: Kind,
    /// Size and mode of a regular file, from the listing's own directory handle.
    file: Option<FileMeta>,
}

#[derive(Debug, Clone, Copy)]
struct FileMeta {
    size: u64,
    executable: bool,
}

impl FileMeta {
    fn of(meta: &fs::Metadata) -> Self {
        FileMeta {
            size: meta.len(),
            executable: is_executable(meta),
        }
    }
}

/// A directory searched for skills, with its entries.
struct Searched {
    children: Vec<Child>,
    depth: usize,
    rel: String,
}

/// A skill root found by [`Inner::list`], with its entries when they were read.
struct Found {
    rel: String,
    dir: PathBuf,
    children: Option<Vec<Child>>,
}

fn is_document_name(name: &str) -> bool {
    name == "SKILL.md" || name == "skill.md"
}

/// Reads a file the walk just listed, refusing a link planted since (`O_NOFOLLOW`), and only if
/// it still holds at least the size the listing saw: exactly that many bytes are returned (a
/// file that shrank is `None`; one that grew since is read as listed, not past it).
fn read_no_follow(path: &Path, size: u64) -> Option<Bytes> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = opts.open(path).ok()?;
    let mut buf = vec![0u8; usize::try_from(size).ok()?];
    // `read_exact`, not `read_to_end`: one read call for a small file instead of two.
    file.read_exact(&mut buf).ok()?;
    Some(Bytes::from(buf))
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
        let file = if kind == Kind::File {
            // On Linux this is a `statx` relative to the open directory, not a path walk.
            let meta = entry
                .metadata()
                .map_err(|e| Error::io(inner.shown(rel), e))?;
            Some(FileMeta::of(&meta))
        } else {
            None
        };
        let rel = super::join_path(rel, &name);
        out.push(Child {
            name,
            rel,
            kind,
            file,
        });
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

    /// The search, every walk, every document read and every parse in one blocking task, on
    /// every core; the same results as [`discover_each`](super::discover_each).
    async fn discover_all(&self) -> Result<super::Discovery> {
        let source = self.clone();
        self.blocking(move |inner| {
            let found = inner.find_roots()?;
            Ok(super::discover_parallel(
                &source,
                &found,
                |f| &f.rel,
                |f| inner.load_found(&source, f),
            ))
        })
        .await
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
