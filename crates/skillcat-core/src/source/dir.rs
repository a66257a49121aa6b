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
//! further. Symbolic links are followed only when their target stays inside the source's root,
//! and, within a skill, inside that skill's own directory: a skill sees its own tree only. A
//! link out of it (to a sibling skill's file, to the tree around the skills) is refused
//! ([`Error::PathRejected`]), never read: a skill's walk makes it the skill's fault, and every
//! read opens beneath the skill's directory (`openat2` with `RESOLVE_BENEATH`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::{Detail, DocumentRead, DocumentSink, Source};

mod read;
use crate::document::Fault;
use crate::error::{Error, Result};
use crate::path::{DOCUMENT_NAMES, FileEntry, base_name, is_document_name};

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
    /// Largest ratio of a file's bytes to the bytes it has on disk (`st_blocks`) that
    /// [`read`](Source::read) accepts (default 200, the archive reader's ratio): a sparse file
    /// of 16 MB over a few KiB on disk is refused, from its `stat` before it is read and from
    /// the bytes read after.
    pub max_sparse_ratio: u64,
    /// Bytes a file may hold before its ratio is checked (default 1 MiB), so small files (a few
    /// bytes in an inode, no block at all) are never refused; `u64::MAX` turns the check off.
    pub sparse_floor: u64,
}

impl Default for DirOptions {
    fn default() -> Self {
        DirOptions {
            max_depth: 6,
            max_dirs: 2000,
            max_file_size: 16 << 20,
            max_file_depth: 16,
            max_sparse_ratio: 200,
            sparse_floor: 1 << 20,
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
    /// `root` as shown to people, made once (every location starts with it).
    root_shown: String,
    single: bool,
    opts: DirOptions,
    /// What the last [`list`](Inner::list) found of each root: its canonical path, and its
    /// document when a `stat` saw a regular file.
    listed: Mutex<Arc<Vec<Found>>>,
    /// The roots whose last walk met no symbolic link (walked by handles alone): their
    /// [`symlinks`](Inner::symlinks) are none without another walk.
    link_free: Mutex<HashSet<String>>,
}

/// Whether `dir` holds a `SKILL.md` or `skill.md` entry of any type (a directory named so is
/// still a skill root: validation then reports what is wrong with it).
pub fn has_document_entry(dir: &Path) -> bool {
    DOCUMENT_NAMES
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
    for name in DOCUMENT_NAMES {
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
            return Err(not_a_directory(shown));
        }
        let single = has_document_entry(&root);
        let root_shown = root.display().to_string();
        Ok(DirSource {
            inner: Arc::new(Inner {
                root,
                root_shown,
                single,
                opts,
                listed: Mutex::new(Arc::new(Vec::new())),
                link_free: Mutex::new(HashSet::new()),
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
        super::offload(move || f(&inner))
            .await
            .map_err(|e| Error::task("reading a directory", e))?
    }
}

impl Inner {
    /// Where `rel` is, for people: `root.join(rel)` as text, without building the path.
    fn shown(&self, rel: &str) -> String {
        if rel.is_empty() {
            return self.root_shown.clone();
        }
        let sep = if self.root_shown.ends_with('/') {
            ""
        } else {
            "/"
        };
        let mut out = String::with_capacity(self.root_shown.len() + sep.len() + rel.len());
        out.push_str(&self.root_shown);
        out.push_str(sep);
        out.push_str(rel);
        out
    }

    /// Follows `abs` if it is a symlink; refuses a target outside the root.
    fn resolve_inside(&self, abs: &Path, rel: &str) -> Result<(PathBuf, fs::Metadata)> {
        self.resolve_within(abs, rel, &self.root)
    }

    /// Follows `abs` if it is a symlink; refuses a target outside `within` (a canonical
    /// directory: the source's root, or a skill's, whose links may not leave it).
    fn resolve_within(
        &self,
        abs: &Path,
        rel: &str,
        within: &Path,
    ) -> Result<(PathBuf, fs::Metadata)> {
        let meta = fs::symlink_metadata(abs).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(self.shown(rel)),
            _ => Error::io(self.shown(rel), e),
        })?;
        if !meta.file_type().is_symlink() {
            return Ok((abs.to_path_buf(), meta));
        }
        let target = fs::canonicalize(abs).map_err(|e| Error::io(self.shown(rel), e))?;
        if !target.starts_with(within) {
            return Err(self.outside(rel, within));
        }
        let meta = fs::metadata(&target).map_err(|e| Error::io(self.shown(rel), e))?;
        Ok((target, meta))
    }

    /// The roots, found by [`search`](Self::search); what was found of each is kept for
    /// [`read_documents`](Source::read_documents).
    fn list(&self) -> Result<Vec<String>> {
        let found = self.search()?;
        let roots = found.iter().map(|f| f.rel.clone()).collect();
        *self.listed.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(found);
        Ok(roots)
    }

    /// Looks for a document in the directory `dir` (canonical, relative to the open `base`)
    /// without listing it: one `stat` per name, not following a link.
    fn probe(&self, base: BorrowedFd<'_>, dir: &str) -> Probe {
        for name in DOCUMENT_NAMES {
            let path = super::join_path(dir, name);
            match rustix::fs::statat(base, path.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => {
                    return match FileType::from_raw_mode(st.st_mode as rustix::fs::RawMode) {
                        FileType::RegularFile => Probe::Document(name, file_meta(&st)),
                        _ => Probe::Entry,
                    };
                }
                Err(rustix::io::Errno::NOENT) => {}
                Err(_) => return Probe::Failed,
            }
        }
        Probe::Nothing
    }

    /// Opens the directory at `path` (relative to `base`, or absolute) and reads its entries;
    /// `rel` names it in errors.
    fn open_listed(
        &self,
        base: Option<BorrowedFd<'_>>,
        path: &Path,
        rel: &str,
    ) -> Result<(OwnedFd, Vec<Child>)> {
        self.open_listed_known(base, path, rel, None)
    }

    /// [`open_listed`](Self::open_listed), taking the size and mode of the regular file
    /// `known` names (when its entry is still a regular file) from a `stat` already made.
    fn open_listed_known(
        &self,
        base: Option<BorrowedFd<'_>>,
        path: &Path,
        rel: &str,
        known: Option<(&str, FileMeta)>,
    ) -> Result<(OwnedFd, Vec<Child>)> {
        let opened = match base {
            Some(base) => rustix::fs::openat(base, path, DIR_FLAGS, Mode::empty()),
            None => rustix::fs::open(path, DIR_FLAGS, Mode::empty()),
        };
        let dir = opened.map_err(|e| Error::io(self.shown(rel), e.into()))?;
        let children = list_entries(dir.as_fd(), self, rel, known)?;
        Ok((dir, children))
    }

    /// Finds the skill roots, in list order. A directory is a root when it holds a document
    /// entry, which a `stat` of each name tells without listing it; only the directories that
    /// are not roots are listed, to search further.
    fn search(&self) -> Result<Vec<Found>> {
        if self.single {
            return Ok(vec![self.single_root()]);
        }
        let max_depth = self.opts.max_depth;
        let mut found: Vec<Found> = Vec::new();
        let mut top_level = Vec::new();
        // Every directory by its canonical path from the root (a link's target, or its parent's
        // canonical path and its name), so that this set catches every loop and alias.
        let mut seen: HashSet<String> = HashSet::new();
        // The bound is on directories searched; skill roots are not searched.
        let mut visited = 0usize;
        let count_visit = |visited: &mut usize| {
            *visited += 1;
            if *visited > self.opts.max_dirs {
                return Err(Error::TooManyDirectories {
                    location: self.shown(""),
                    limit: self.opts.max_dirs,
                });
            }
            Ok(())
        };
        count_visit(&mut visited)?;
        let (root_dir, top) = self.open_listed(None, &self.root, "")?;
        let root_fd = root_dir.as_fd();
        let mut frontier = vec![Searched {
            children: top,
            depth: 0,
            rel: String::new(),
            canon: String::new(),
        }];
        // Breadth-first, one level at a time: the choices (which alias of a directory is kept)
        // are made in sorted order, the reading of a level's directories runs on every core.
        while !frontier.is_empty() {
            let candidates = self.candidates(&frontier, max_depth, &mut seen, &mut top_level);
            // A `stat` of the document names tells a skill root; a directory that is not one is
            // listed, to search further.
            let steps = super::par_map(&candidates, |c| {
                match self.probe(root_fd, &c.canon) {
                    Probe::Document(name, meta) => return Step::Root(Some((name, meta))),
                    Probe::Entry => return Step::Root(None),
                    Probe::Nothing | Probe::Failed => {}
                }
                match self.open_listed(Some(root_fd), Path::new(&c.canon), &c.rel) {
                    Ok((_, children)) if children.iter().any(|c| is_document_name(&c.name)) => {
                        Step::Root(None)
                    }
                    Ok((_, children)) => Step::Search(children),
                    Err(e) => Step::Unreadable(e),
                }
            });
            let mut next = Vec::new();
            for (c, step) in candidates.into_iter().zip(steps) {
                match step {
                    Step::Root(doc) => found.push(Found {
                        rel: c.rel,
                        canon: c.canon,
                        doc,
                    }),
                    Step::Search(children) => {
                        if c.depth < max_depth {
                            count_visit(&mut visited)?;
                            next.push(Searched {
                                children,
                                depth: c.depth,
                                rel: c.rel,
                                canon: c.canon,
                            });
                        }
                    }
                    // Unreadable: a root still (loading it reports the error as that skill's
                    // fault), else an error for the whole listing.
                    Step::Unreadable(_) if has_document_entry(&self.root.join(&c.canon)) => {
                        found.push(Found {
                            rel: c.rel,
                            canon: c.canon,
                            doc: None,
                        });
                    }
                    Step::Unreadable(e) if c.depth < max_depth => return Err(e),
                    Step::Unreadable(_) => {}
                }
            }
            frontier = next;
        }
        add_empty_top_level(&mut found, top_level);
        found.sort_unstable_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
        Ok(found)
    }

    /// The one root of a single-skill source, with its document when a `stat` finds one.
    fn single_root(&self) -> Found {
        let doc = match rustix::fs::open(&self.root, DIR_FLAGS, Mode::empty()) {
            Ok(dir) => match self.probe(dir.as_fd(), "") {
                Probe::Document(name, meta) => Some((name, meta)),
                _ => None,
            },
            // Loading from the path again reports what is wrong as the skill's fault.
            Err(_) => None,
        };
        Found {
            rel: String::new(),
            canon: String::new(),
            doc,
        }
    }

    /// The directories one level below `frontier` to look at next, each once by its canonical
    /// path (`seen`), in list order; a top-level folder with content is noted in `top_level`.
    fn candidates(
        &self,
        frontier: &[Searched],
        max_depth: usize,
        seen: &mut HashSet<String>,
        top_level: &mut Vec<String>,
    ) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = Vec::new();
        for dir in frontier {
            if dir.depth == 1 && !dir.children.is_empty() {
                top_level.push(dir.rel.clone());
            }
            // Skill roots lie at most `max_depth` levels below the source root.
            if dir.depth >= max_depth {
                continue;
            }
            for child in &dir.children {
                if child.name.starts_with('.') || crate::path::is_ignored(&child.name) {
                    continue;
                }
                let rel = super::join_path(&dir.rel, &child.name);
                let canon = match child.kind {
                    Kind::Dir => super::join_path(&dir.canon, &child.name),
                    Kind::Symlink => {
                        let abs = self.root.join(&rel);
                        match self.resolve_inside(&abs, &rel) {
                            Ok((target, meta)) if meta.is_dir() => {
                                match self.canonical_rel(&target) {
                                    Some(canon) => canon,
                                    None => continue,
                                }
                            }
                            // Not a directory, out of the root, dangling or a loop: not
                            // searched.
                            _ => continue,
                        }
                    }
                    _ => continue,
                };
                // The root itself (a link back to it) is never a candidate.
                if !canon.is_empty() && seen.insert(canon.clone()) {
                    candidates.push(Candidate {
                        rel,
                        canon,
                        depth: dir.depth + 1,
                    });
                }
            }
        }
        candidates
    }

    /// A canonical path inside the root as a `/`-separated path from it (`None` if it is not
    /// inside, or not UTF-8).
    fn canonical_rel(&self, target: &Path) -> Option<String> {
        let inside = target.strip_prefix(&self.root).ok()?;
        let mut out = String::new();
        for part in inside.components() {
            let std::path::Component::Normal(part) = part else {
                return None;
            };
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(part.to_str()?);
        }
        Some(out)
    }

    /// One root for [`read_documents`](Source::read_documents), lent to `each`. `listed` is what
    /// [`list`](Self::list) found of it (its canonical path, and its document when a `stat`
    /// saw a regular file), when it was listed.
    ///
    /// The document alone: opened relative to the source's open root with the size the `stat`
    /// gave, nothing else read. With the files: the root's directory is opened and walked by
    /// handles, and the document read relative to it with the size just listed. Anything else
    /// (a root not listed, a document behind a link, a file changed since) is read the plain
    /// way: [`files`](Self::files), then [`read`](Self::read).
    #[allow(clippy::too_many_arguments)]
    fn read_root(
        &self,
        source: &DirSource,
        i: usize,
        base: Option<BorrowedFd<'_>>,
        root: &str,
        listed: Option<&Found>,
        detail: Detail,
        each: &super::DocumentSink,
    ) {
        if let (Some(base), Some(found)) = (base, listed) {
            let canon = &found.canon;
            match detail {
                Detail::Frontmatter | Detail::Document => {
                    if let Some((name, meta)) = found.doc {
                        let size = meta.size;
                        // Refused from the size the `stat` gave, before anything is read.
                        if size > super::DOCUMENT_LIMIT {
                            let location = source.location(&super::join_path(root, name));
                            return each(i, Err(super::document_too_large(location, size)));
                        }
                        let path = super::join_path(canon, name);
                        if let Some(buf) = read_listed(base, &path, size) {
                            return each(
                                i,
                                Ok(DocumentRead {
                                    name,
                                    bytes: &buf.0,
                                    files: None,
                                }),
                            );
                        }
                    }
                }
                Detail::Files => {
                    // The document's `stat` is not made again: the search's is as recent.
                    let opened =
                        self.open_listed_known(Some(base), Path::new(canon), root, found.doc);
                    if let Ok((dir, children)) = opened {
                        let files =
                            self.walk_from(dir.as_fd(), || self.skill_dir(root), root, &children);
                        let read = files.and_then(|files| {
                            let doc = super::locate_document(source, root, &files)?;
                            let bytes = match read_listed(dir.as_fd(), doc.name, doc.size) {
                                Some(buf) => DocBytes::Pooled(buf),
                                // A link to a file inside the root, or a file that changed.
                                None => DocBytes::Owned(self.read(&doc.path)?),
                            };
                            Ok((doc.name, bytes, files))
                        });
                        return super::lend(each, i, Detail::Files, read);
                    }
                }
            }
        }
        let read = self.files(root).and_then(|files| {
            let doc = super::locate_document(source, root, &files)?;
            let bytes = self.read(&doc.path)?;
            Ok((doc.name, bytes, files))
        });
        super::lend(each, i, detail, read);
    }

    /// Records whether the walk of `root` just made met no link.
    fn link_free_now(&self, root: &str, free: bool) {
        let mut set = self.link_free.lock().unwrap_or_else(|p| p.into_inner());
        if free {
            set.insert(root.to_string());
        } else {
            set.remove(root);
        }
    }

    /// Whether the last walk of `root` met no link.
    fn known_link_free(&self, root: &str) -> bool {
        self.link_free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(root)
    }

    /// The links under a root: its directory walked without following any link (the names
    /// [`files`](Inner::files) skips are skipped), at most [`MAX_LINKS_LISTED`] of them.
    fn symlinks(&self, root: &str) -> Result<Vec<super::Symlink>> {
        check_rel(root, true)?;
        let (base, meta) = self.resolve_inside(&self.root.join(root), root)?;
        if !meta.is_dir() {
            return Err(not_a_directory(self.shown(root)));
        }
        let mut out = Vec::new();
        let mut pending = vec![(base, String::new())];
        while let Some((dir, rel)) = pending.pop() {
            let shown = |rel: &str| self.shown(&super::join_path(root, rel));
            let entries = fs::read_dir(&dir).map_err(|e| Error::io(shown(&rel), e))?;
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(shown(&rel), e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let child = super::join_path(&rel, &name);
                if crate::path::is_ignored(&child) {
                    continue;
                }
                let kind = entry.file_type().map_err(|e| Error::io(shown(&child), e))?;
                if kind.is_symlink() {
                    let target =
                        fs::read_link(entry.path()).map_err(|e| Error::io(shown(&child), e))?;
                    out.push(super::Symlink {
                        path: child,
                        target: target.to_string_lossy().into_owned(),
                    });
                    if out.len() >= MAX_LINKS_LISTED {
                        pending.clear();
                        break;
                    }
                } else if kind.is_dir() {
                    pending.push((entry.path(), child));
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        check_rel(root, true)?;
        let (base, meta) = self.resolve_inside(&self.root.join(root), root)?;
        if !meta.is_dir() {
            return Err(not_a_directory(self.shown(root)));
        }
        let (dir, children) = self.open_listed(None, &base, root)?;
        self.walk_from(dir.as_fd(), || self.skill_dir(root), root, &children)
    }

    /// Every regular file under a directory of the root (already checked, open as `fd`, its
    /// entries `children`; `base` gives its canonical path), sorted by path.
    ///
    /// A skill without symbolic links is walked by handles alone. When the walk meets a link it
    /// starts again keeping the canonical path of every directory, so that a link to a
    /// directory already walked (an alias or a loop) is followed at most once, and a link
    /// whose target is outside the skill's directory (a sibling skill's file, the tree around
    /// the skills) refuses the whole skill: a skill sees its own tree only.
    fn walk_from(
        &self,
        fd: BorrowedFd<'_>,
        base: impl Fn() -> Result<PathBuf>,
        root: &str,
        children: &[Child],
    ) -> Result<Vec<FileEntry>> {
        let mut walk = Walk {
            root,
            seen: None,
            within: PathBuf::new(),
            out: Vec::new(),
        };
        let mut out = match self.walk_dir(&mut walk, fd, None, "", 0, children) {
            Ok(()) => {
                self.link_free_now(root, true);
                walk.out
            }
            Err(WalkStop::Link) => {
                self.link_free_now(root, false);
                let base = base()?;
                // A skill's links stay in the skill; a folder that is not one (listed to be
                // reported as missing its document) keeps the source's bound, so that a link
                // out of it does not turn that report into another fault.
                let within = if has_document_entry(&base) {
                    base.clone()
                } else {
                    self.root.clone()
                };
                let mut walk = Walk {
                    root,
                    seen: Some(HashSet::from([base.clone()])),
                    within,
                    out: Vec::new(),
                };
                match self.walk_dir(&mut walk, fd, Some(&base), "", 0, children) {
                    Ok(()) => walk.out,
                    Err(WalkStop::Error(e)) => return Err(e),
                    Err(WalkStop::Link) => unreachable!("a walk that tracks links never stops"),
                }
            }
            Err(WalkStop::Error(e)) => return Err(e),
        };
        out.sort_unstable_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Ok(out)
    }

    /// One directory of a walk: its files are recorded, its subdirectories opened relative to
    /// `fd` and walked in turn (at most `max_file_depth` handles are open at once). `abs` is the
    /// directory's canonical path when the walk tracks links (`walk.seen` is set).
    fn walk_dir(
        &self,
        walk: &mut Walk<'_>,
        fd: BorrowedFd<'_>,
        abs: Option<&Path>,
        rel: &str,
        depth: usize,
        children: &[Child],
    ) -> std::result::Result<(), WalkStop> {
        for child in children {
            // The same junk list as archives, so both give the same files and digest.
            if crate::path::is_ignored(&child.name) {
                continue;
            }
            let rel_child = super::join_path(rel, &child.name);
            let (target, listed) = match child.kind {
                Kind::File => {
                    let meta = child.file.expect("a listed file carries its metadata");
                    walk.out.push(FileEntry {
                        path: rel_child,
                        size: meta.size,
                        executable: meta.executable,
                        private: meta.private,
                    });
                    continue;
                }
                Kind::Dir => {
                    self.check_file_depth(walk.root, &rel_child, depth)?;
                    let target = match (&mut walk.seen, abs) {
                        (Some(seen), Some(abs)) => {
                            let target = abs.join(&child.name);
                            if !seen.insert(target.clone()) {
                                continue;
                            }
                            Some(target)
                        }
                        _ => None,
                    };
                    let shown = super::join_path(walk.root, &rel_child);
                    let listed = self.open_listed(Some(fd), Path::new(&child.name), &shown)?;
                    (target, listed)
                }
                Kind::Symlink => {
                    let (Some(seen), Some(abs)) = (&mut walk.seen, abs) else {
                        return Err(WalkStop::Link);
                    };
                    let shown = super::join_path(walk.root, &rel_child);
                    let (target, meta) =
                        self.resolve_within(&abs.join(&child.name), &shown, &walk.within)?;
                    if meta.is_file() {
                        walk.out.push(FileEntry {
                            path: rel_child,
                            size: meta.len(),
                            executable: is_executable(&meta),
                            private: is_private(&meta),
                        });
                        continue;
                    }
                    if !meta.is_dir() {
                        return Err(not_regular(self.shown(&shown)).into());
                    }
                    self.check_file_depth(walk.root, &rel_child, depth)?;
                    if !seen.insert(target.clone()) {
                        continue;
                    }
                    let listed = self.open_listed(None, &target, &shown)?;
                    (Some(target), listed)
                }
                Kind::Other => {
                    return Err(
                        not_regular(self.shown(&super::join_path(walk.root, &rel_child))).into(),
                    );
                }
            };
            let (dir, grandchildren) = listed;
            self.walk_dir(
                walk,
                dir.as_fd(),
                target.as_deref(),
                &rel_child,
                depth + 1,
                &grandchildren,
            )?;
        }
        Ok(())
    }

    /// Refuses a directory that would put files deeper than `max_file_depth` components.
    fn check_file_depth(&self, root: &str, rel: &str, depth: usize) -> Result<()> {
        if depth + 1 >= self.opts.max_file_depth {
            return Err(Error::PathRejected {
                path: self.shown(&super::join_path(root, rel)),
                reason: format!("deeper than {} levels", self.opts.max_file_depth),
            });
        }
        Ok(())
    }
}

/// A top-level folder with content but no skill anywhere below it is listed too, so that
/// discover() reports it as missing its document instead of dropping it silently.
fn add_empty_top_level(found: &mut Vec<Found>, top_level: Vec<String>) {
    for dir in top_level {
        let prefix = format!("{dir}/");
        if !found.iter().any(|f| f.rel.starts_with(&prefix)) {
            found.push(Found {
                canon: dir.clone(),
                rel: dir,
                doc: None,
            });
        }
    }
}

fn not_regular(path: String) -> Error {
    Error::PathRejected {
        path,
        reason: "not a regular file or directory".into(),
    }
}

/// How directories are opened: never through a link in the last component (links are
/// resolved and checked by [`Inner::resolve_inside`] first).
/// The most links [`Source::symlinks`] lists of one root: enough to report, bounded for a
/// hostile tree.
const MAX_LINKS_LISTED: usize = 1024;

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    false
}

/// Whether others may not read the file (see [`FileEntry::private`]).
#[cfg(unix)]
fn is_private(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o004 == 0
}

#[cfg(not(unix))]
fn is_private(_meta: &fs::Metadata) -> bool {
    false
}

/// Bytes a file has on disk (`st_blocks` × 512); `None` where the system does not say.
#[cfg(unix)]
fn allocated(meta: &fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(meta.blocks().saturating_mul(512))
}

#[cfg(not(unix))]
fn allocated(_meta: &fs::Metadata) -> Option<u64> {
    None
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
    kind: Kind,
    /// Size and mode of a regular file, from the listing's own directory handle.
    file: Option<FileMeta>,
}

#[derive(Debug, Clone, Copy)]
struct FileMeta {
    size: u64,
    executable: bool,
    private: bool,
}

/// The size, executable bit and privacy (no read bit for others) of a regular file's `stat`.
fn file_meta(st: &rustix::fs::Stat) -> FileMeta {
    FileMeta {
        size: u64::try_from(st.st_size).unwrap_or(0),
        executable: st.st_mode & 0o111 != 0,
        private: st.st_mode & 0o004 == 0,
    }
}

/// A directory searched for skills, with its entries.
struct Searched {
    children: Vec<Child>,
    depth: usize,
    /// As listed (through links).
    rel: String,
    /// Its canonical path from the root.
    canon: String,
}

/// A directory the search will read next.
struct Candidate {
    /// As listed (through links).
    rel: String,
    /// Its canonical path from the root (what is opened).
    canon: String,
    depth: usize,
}

/// A skill root the search found.
#[derive(Debug)]
struct Found {
    /// The root as listed (through links).
    rel: String,
    /// Its canonical path from the source root.
    canon: String,
    /// Its document, when a `stat` found a regular file: name, size and mode.
    doc: Option<(&'static str, FileMeta)>,
}

/// What a `stat` of the document names in a directory found.
enum Probe {
    /// A regular file, with its size and mode: a skill root.
    Document(&'static str, FileMeta),
    /// An entry of another type (a link, a directory): a skill root, read the plain way.
    Entry,
    /// No entry of either name.
    Nothing,
    /// The `stat` failed otherwise: the listing decides.
    Failed,
}

/// What one candidate directory of the search turned out to be.
enum Step {
    /// A skill root, with its document when a `stat` found it.
    Root(Option<(&'static str, FileMeta)>),
    /// A directory to search further, with its entries.
    Search(Vec<Child>),
    /// A directory that could not be listed.
    Unreadable(Error),
}

/// The state of one skill's file walk.
struct Walk<'a> {
    /// The skill root, as listed (for paths in errors).
    root: &'a str,
    /// Canonical directories already walked, when the walk tracks links: each target is
    /// followed at most once.
    seen: Option<HashSet<PathBuf>>,
    /// The skill's canonical directory, when the walk tracks links: no link leads out of it.
    within: PathBuf,
    out: Vec<FileEntry>,
}

/// Why a walk stopped early.
enum WalkStop {
    /// A link, met by a walk that does not track them: start again tracking them.
    Link,
    Error(Error),
}

impl From<Error> for WalkStop {
    fn from(e: Error) -> Self {
        WalkStop::Error(e)
    }
}

/// Reads a file the walk just listed, relative to its open directory, refusing a link planted
/// since (`O_NOFOLLOW`), and only if it still holds at least the size the listing saw: exactly
/// that many bytes are returned (a file that shrank is `None`; one that grew since is read as
/// listed, not past it). The bytes land in this thread's reusable buffer: a document is parsed
/// and dropped, so each load need not allocate (and free) a buffer of its size.
fn read_listed(dir: BorrowedFd<'_>, name: &str, size: u64) -> Option<PooledBuf> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = fs::File::from(rustix::fs::openat(dir, name, flags, Mode::empty()).ok()?);
    let want = usize::try_from(size).ok()?;
    let mut buf = PooledBuf::take();
    buf.0.reserve_exact(want);
    // `take`: no read past the listed size, and no probe read for the end of the file.
    let got = (&file).take(size).read_to_end(&mut buf.0).ok()?;
    (got == want).then_some(buf)
}

thread_local! {
    static READ_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// This thread's document buffer, lent out: dropping it gives it back (emptied), unless it grew
/// past 1 MiB.
struct PooledBuf(Vec<u8>);

impl PooledBuf {
    fn take() -> Self {
        // `try_with`: a thread being torn down has no buffer to lend; a fresh one does.
        let mut buf = READ_BUF.try_with(std::cell::Cell::take).unwrap_or_default();
        buf.clear();
        PooledBuf(buf)
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        if buf.capacity() <= 1 << 20 {
            // A thread being torn down keeps nothing.
            let _ = READ_BUF.try_with(|cell| cell.set(buf));
        }
    }
}

/// A document as read for a load: from the thread's buffer, or (after a fallback) owned.
enum DocBytes {
    Pooled(PooledBuf),
    Owned(Bytes),
}

impl AsRef<[u8]> for DocBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            DocBytes::Pooled(buf) => &buf.0,
            DocBytes::Owned(bytes) => bytes,
        }
    }
}

/// The entries of an open directory sorted by byte order, with their type from the directory
/// entry itself and a `stat` relative to the directory for regular files (and for entries the
/// file system gives no type); non-UTF-8 names are refused.
fn list_entries(
    fd: BorrowedFd<'_>,
    inner: &Inner,
    rel: &str,
    known: Option<(&str, FileMeta)>,
) -> Result<Vec<Child>> {
    let mut out = Vec::new();
    for_each_entry(fd, |raw, file_type| {
        if raw == b"." || raw == b".." {
            return Ok(());
        }
        let Ok(name) = std::str::from_utf8(raw) else {
            return Err(Error::PathRejected {
                path: format!("{}/{}", inner.shown(rel), String::from_utf8_lossy(raw)),
                reason: "file name is not UTF-8".into(),
            });
        };
        let (kind, file) = match file_type {
            FileType::RegularFile if known.is_some_and(|(n, _)| n == name) => {
                (Kind::File, known.map(|(_, meta)| meta))
            }
            FileType::Directory => (Kind::Dir, None),
            FileType::Symlink => (Kind::Symlink, None),
            // A regular file needs its size and mode; an entry of unknown type (some file
            // systems give none) needs its type.
            FileType::RegularFile | FileType::Unknown => {
                let st = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| Error::io(inner.shown(&super::join_path(rel, name)), e.into()))?;
                match FileType::from_raw_mode(st.st_mode as rustix::fs::RawMode) {
                    FileType::RegularFile => (Kind::File, Some(file_meta(&st))),
                    FileType::Directory => (Kind::Dir, None),
                    FileType::Symlink => (Kind::Symlink, None),
                    _ => (Kind::Other, None),
                }
            }
            _ => (Kind::Other, None),
        };
        out.push(Child {
            name: name.to_owned(),
            kind,
            file,
        });
        Ok(())
    })
    .map_err(|e| match e {
        Listing::Read(e) => Error::io(inner.shown(rel), e),
        Listing::Entry(e) => e,
    })?;
    out.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(out)
}

/// Why [`for_each_entry`] stopped: the directory could not be read, or the caller refused an
/// entry.
enum Listing {
    Read(std::io::Error),
    Entry(Error),
}

/// Calls `f` with each entry's raw name and type. On Linux the entries are read with
/// `getdents64` into a buffer on the stack: no allocation, no `fstat` (as `opendir` makes).
#[cfg(target_os = "linux")]
fn for_each_entry(
    fd: BorrowedFd<'_>,
    mut f: impl FnMut(&[u8], FileType) -> Result<()>,
) -> std::result::Result<(), Listing> {
    use std::mem::MaybeUninit;
    let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
    let mut dir = rustix::fs::RawDir::new(fd, &mut buf);
    while let Some(entry) = dir.next() {
        let entry = entry.map_err(|e| Listing::Read(e.into()))?;
        f(entry.file_name().to_bytes(), entry.file_type()).map_err(Listing::Entry)?;
    }
    Ok(())
}

/// Calls `f` with each entry's raw name and type (a portable directory stream).
#[cfg(not(target_os = "linux"))]
fn for_each_entry(
    fd: BorrowedFd<'_>,
    mut f: impl FnMut(&[u8], FileType) -> Result<()>,
) -> std::result::Result<(), Listing> {
    let dir = rustix::fs::Dir::read_from(fd).map_err(|e| Listing::Read(e.into()))?;
    for entry in dir {
        let entry = entry.map_err(|e| Listing::Read(e.into()))?;
        f(entry.file_name().to_bytes(), entry.file_type()).map_err(Listing::Entry)?;
    }
    Ok(())
}

/// A path that names something other than a directory, as an I/O error of that kind.
fn not_a_directory(shown: String) -> Error {
    Error::io(
        shown,
        std::io::Error::from(std::io::ErrorKind::NotADirectory),
    )
}

/// A relative `/`-separated path with no empty, `.` or `..` parts (empty allowed for roots).
fn check_rel(path: &str, allow_empty: bool) -> Result<()> {
    if path.is_empty() && allow_empty {
        return Ok(());
    }
    super::check_path(path).map(drop)
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

    async fn read_many(&self, paths: &[String]) -> Result<Vec<Bytes>> {
        let paths = paths.to_vec();
        self.blocking(move |i| {
            let mut last = None;
            paths.iter().map(|p| i.read_in(p, &mut last)).collect()
        })
        .await
    }

    fn location(&self, path: &str) -> String {
        self.inner.shown(path)
    }

    /// None, without another walk, for a root whose file list was just walked and met no link
    /// (what the files listed are, the links are); else a walk of its directory.
    async fn symlinks(&self, root: &str) -> Result<Vec<super::Symlink>> {
        if self.inner.known_link_free(root) {
            return Ok(Vec::new());
        }
        let root = root.to_string();
        self.blocking(move |i| i.symlinks(&root)).await
    }

    /// Every root in one blocking task, on every core, from what [`list`](Source::list) kept:
    /// a document by one `open` and one `read` relative to the source's open root, or, with
    /// the files, each root's directory walked by handles.
    async fn read_documents(
        &self,
        roots: &[String],
        detail: Detail,
        each: DocumentSink,
    ) -> Result<Vec<String>> {
        let found = Arc::clone(
            &self
                .inner
                .listed
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        // The roots of the last listing, in its order (what discovery passes), need no lookup.
        let aligned =
            found.len() == roots.len() && found.iter().zip(roots).all(|(f, r)| f.rel == *r);
        let others: Vec<String> = if aligned { Vec::new() } else { roots.to_vec() };
        let count = roots.len();
        let source = self.clone();
        self.blocking(move |inner| {
            let by_root: HashMap<&str, &Found> = if aligned {
                HashMap::new()
            } else {
                found.iter().map(|f| (f.rel.as_str(), f)).collect()
            };
            let base = rustix::fs::open(&inner.root, DIR_FLAGS, Mode::empty()).ok();
            let indices: Vec<usize> = (0..count).collect();
            super::par_map(&indices, |&i| {
                let (root, listed) = if aligned {
                    (found[i].rel.as_str(), Some(&found[i]))
                } else {
                    (others[i].as_str(), by_root.get(others[i].as_str()).copied())
                };
                inner.read_root(
                    &source,
                    i,
                    base.as_ref().map(|b| b.as_fd()),
                    root,
                    listed,
                    detail,
                    &each,
                );
            });
            Ok(Vec::new())
        })
        .await
    }

    /// The directory's path (as opened, made canonical).
    async fn id(&self) -> Result<super::SourceId> {
        Ok(super::SourceId::Path(self.inner.root.clone()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, name: &str) {
        fs::create_dir_all(dir.join(name).join("references")).unwrap();
        fs::write(
            dir.join(name).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: d\n---\nbody\n"),
        )
        .unwrap();
    }

    /// A skill sees its own tree only: each way a link can lead out of the skill but stay in
    /// the source (a sibling skill's file, a file of the tree around the skills, a directory of
    /// a sibling, an absolute link, a link retargeted after the listing) is refused by the
    /// listing and by every read, and the error says so; links inside the skill still work.
    #[tokio::test]
    async fn a_link_out_of_the_skill_is_refused_even_inside_the_source() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        fs::create_dir_all(top.join(".ssh")).unwrap();
        fs::write(top.join(".ssh/id_rsa"), "KEY").unwrap();
        skill(&top.join("skills"), "evil");
        skill(&top.join("skills"), "victim");
        fs::write(top.join("skills/victim/.env"), "ENV").unwrap();
        fs::write(top.join("skills/evil/inside.txt"), "inside").unwrap();
        let evil = top.join("skills/evil");
        let abs_victim = top.join("skills/victim/.env").canonicalize().unwrap();
        let cases: [(&str, &Path); 5] = [
            ("key", Path::new("../../.ssh/id_rsa")),
            ("env", Path::new("../victim/.env")),
            ("dir", Path::new("../victim")),
            ("abs", &abs_victim),
            ("via-dir/x", Path::new("../../victim/.env")),
        ];
        for (name, target) in cases {
            let link = evil.join(name);
            fs::create_dir_all(link.parent().unwrap()).unwrap();
            symlink(target, &link).unwrap();
            let src = DirSource::open(top, DirOptions::default()).unwrap();
            let err = src.files("skills/evil").await.unwrap_err();
            assert!(
                err.to_string().contains("outside the skill"),
                "{name}: {err}"
            );
            for path in [
                format!("skills/evil/{name}"),
                format!("skills/evil/{name}/.env"),
            ] {
                match src.read(&path).await {
                    Ok(b) => panic!("{name}: {path} read {b:?}"),
                    Err(e) => assert!(
                        matches!(e, Error::PathRejected { .. } | Error::NotFound(_)),
                        "{name}: {e}"
                    ),
                }
            }
            fs::remove_file(&link).unwrap();
        }
        // Inside the skill: followed.
        symlink("inside.txt", evil.join("alias")).unwrap();
        let src = DirSource::open(top, DirOptions::default()).unwrap();
        assert!(
            src.files("skills/evil")
                .await
                .unwrap()
                .iter()
                .any(|f| f.path == "alias")
        );
        assert_eq!(&src.read("skills/evil/alias").await.unwrap()[..], b"inside");
        // Retargeted after the listing: the read is refused, never followed out.
        fs::remove_file(evil.join("alias")).unwrap();
        symlink("../victim/.env", evil.join("alias")).unwrap();
        let err = src.read("skills/evil/alias").await.unwrap_err();
        assert!(err.to_string().contains("outside the skill"), "{err}");
        // A private file is listed as private (the workspace keeps its mode).
        fs::remove_file(evil.join("alias")).unwrap();
        fs::set_permissions(evil.join("inside.txt"), fs::Permissions::from_mode(0o600)).unwrap();
        let files = src.files("skills/evil").await.unwrap();
        let inside = files.iter().find(|f| f.path == "inside.txt").unwrap();
        let doc = files.iter().find(|f| f.path == "SKILL.md").unwrap();
        assert!(inside.private && !doc.private);
    }

    #[tokio::test]
    async fn symlinks_are_listed_with_their_targets_and_none_where_a_walk_met_none() {
        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "linked");
        skill(tmp.path(), "plain");
        let refs = tmp.path().join("linked/references");
        std::os::unix::fs::symlink("../SKILL.md", refs.join("doc.md")).unwrap();
        // A dangling link and one out of the source are links all the same.
        std::os::unix::fs::symlink("/etc/hostname", refs.join("host")).unwrap();
        std::os::unix::fs::symlink("missing", refs.join("gone")).unwrap();
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        for root in ["linked", "plain"] {
            // Before and after a walk of the root's files, the same answer.
            let before = src.symlinks(root).await.unwrap();
            let _ = src.files(root).await;
            assert_eq!(src.symlinks(root).await.unwrap(), before, "{root}");
        }
        let links = src.symlinks("linked").await.unwrap();
        let got: Vec<(&str, &str)> = links
            .iter()
            .map(|l| (l.path.as_str(), l.target.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("references/doc.md", "../SKILL.md"),
                ("references/gone", "missing"),
                ("references/host", "/etc/hostname"),
            ]
        );
        assert!(src.symlinks("plain").await.unwrap().is_empty());
        // A link made after a walk that met none is found once the root is walked again.
        std::os::unix::fs::symlink("../SKILL.md", tmp.path().join("plain/references/late.md"))
            .unwrap();
        let _ = src.files("plain").await;
        assert_eq!(src.symlinks("plain").await.unwrap().len(), 1);
        // A root that climbs out is refused.
        assert!(src.symlinks("../x").await.is_err());
    }
}
