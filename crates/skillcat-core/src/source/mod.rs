//! Where skill bytes live: the [`Source`] trait and its extension trait, and [`SourceSpec`], the
//! one parser of SOURCE spellings (`skillcat-sources` opens every kind of source from one spec).
//!
//! ```text
//! Source ── list()           → skill roots ("pdf-tools", "team/deploy", "" for a lone skill)
//!        ── files()          → every regular file under a root (path, size, exec bit)
//!        ── read()           → the bytes of one file, addressed as join_path(root, relative)
//!        └─ read_documents() → each root's SKILL.md (and file list, when asked), lent in bulk
//!
//! discover_with(source, Detail) = list() → read_documents() → parse where read → Discovery
//!                                  { skills, faults, warnings }
//! ```
//!
//! Every backend (directory, archive, SQLite registry, HTTP cache) implements these storage
//! methods, plus [`read_documents`](Source::read_documents), a batch read of every root's
//! document that a backend may answer from what it already listed; everything else
//! ([`SourceExt`], [`discover`], [`load`]) is written once on top. Discovery reads only what it
//! is asked for ([`Detail`]): the documents, or the documents and every skill's file list.

mod archive;
mod dir;
mod held;
mod join;
mod named;
mod spec;

use std::fmt::Debug;
use std::sync::{Arc, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;

pub use archive::ArchiveSource;
pub use dir::{DirOptions, DirSource, check, has_document_entry};
pub use held::HeldSource;
pub use named::{NamedError, SkillRef, discover_named};
pub use spec::{
    BadFolder, SQLITE_MAGIC, SourceKind, SourceSpec, absolute, clean_subpath, is_postgres_url,
    is_registry_file, redact_password,
};

use crate::path::{DOCUMENT_NAMES, FileEntry, RelPath, base_name, join_path};

use crate::digest::Manifest;
use crate::document::{self, Fault, Skill};
use crate::error::{Error, Result};

/// A store of skills.
///
/// # Contract
///
/// Every implementation promises:
/// - **Roots** from [`list`](Source::list) are `/`-separated paths relative to the source, in the
///   order to offer them to a model, without duplicates. A source that *is* one skill lists `""`.
///   A listed root may lack a document: [`discover`] reports that as `missing-document`.
/// - **Files** from [`files`](Source::files) are every regular file under the root and nothing
///   else (no directories, links or devices), sorted by byte order of `path`, with canonical
///   relative paths. Ignored entries (`.git/`, `.DS_Store`) are the same for every source.
/// - **Reads** take `join_path(root, relative)` and return exactly the bytes that were stored; a
///   path that climbs out (`..`, absolute) is [`Error::PathRejected`], a missing file
///   [`Error::NotFound`]. A source never follows a link out of itself, nor a link in a skill
///   out of that skill's own tree (a skill sees its own files only).
/// - **Limits** are enforced on bytes actually read, never on a size someone claimed.
/// - The methods are safe to call concurrently; blocking work runs off the async runtime.
#[async_trait]
pub trait Source: Debug + Send + Sync {
    /// Skill roots this source offers, `/`-separated, in the order to offer them to a model.
    async fn list(&self) -> Result<Vec<String>>;
    /// Every regular file under one skill root, with size and executable bit.
    async fn files(&self, root: &str) -> Result<Vec<FileEntry>>;
    /// The bytes of one file: a root joined with a relative path.
    async fn read(&self, path: &str) -> Result<Bytes>;
    /// The bytes of each of `paths`, in their order, as [`read`](Source::read) gives them; the
    /// first that cannot be read is the error. The default reads them one by one; a directory
    /// reads them all in one blocking task (what the audit reads of a skill).
    async fn read_many(&self, paths: &[String]) -> Result<Vec<Bytes>> {
        let mut out = Vec::with_capacity(paths.len());
        for p in paths {
            out.push(self.read(p).await?);
        }
        Ok(out)
    }
    /// A human-readable location for `path` (an absolute file path for a directory,
    /// `archive.tar.gz!/root/SKILL.md` for an archive). Used in reports and the prompt block.
    fn location(&self, path: &str) -> String;
    /// The name of the directory a root stands for, for the name check of validation: by default
    /// the root's last component; `None` for a root that has no directory of its own (a lone skill
    /// at the top of an archive).
    fn root_dir_name(&self, root: &str) -> Option<String> {
        (!root.is_empty()).then(|| base_name(root).to_string())
    }
    /// Reads the document of each of `roots` (as [`list`](Source::list) gave them): `SKILL.md`,
    /// else `skill.md`, refused from its size when larger than [`DOCUMENT_LIMIT`] — and, with
    /// [`Detail::Files`], the root's file list — and lends each to `each` with the root's index,
    /// on whatever thread read it. Every root is handed to `each` exactly once. Returns warnings
    /// for people about what was read (a stale cached index, say): sources never print them.
    ///
    /// The default reads each root with [`files`](Source::files) and [`read`](Source::read),
    /// several at once, and returns the source's [`warnings`](Source::warnings); a backend
    /// that can do better from what it listed (a directory, an archive in memory) overrides it,
    /// and must lend exactly what the default lends — the conformance suite checks every source
    /// through both.
    async fn read_documents(
        &self,
        roots: &[String],
        detail: Detail,
        each: DocumentSink,
    ) -> Result<Vec<String>> {
        read_each(self, roots, detail, &each).await;
        Ok(self.warnings())
    }
    /// What the source keeps about a root besides its files ([`RootRecord`]): the version it
    /// holds the skill as and the detached signatures it keeps for it — a registry's published
    /// version and stored signatures, an HTTP index entry's `version` and
    /// `skillcat.signature`. A directory or an archive keeps nothing more than its files (a
    /// signature beside an archive is a file next to it, which the caller names): the default
    /// is an empty record. Nothing in a record is trusted: a signature is checked against a
    /// keyring and the statement recomputed from the bytes read.
    async fn record(&self, root: &str) -> Result<RootRecord> {
        let _ = root;
        Ok(RootRecord::default())
    }
    /// The root that holds version `version` of the skill named `name`, for a source that
    /// keeps several versions of a skill (a registry: `NAME@VERSION`, yanked versions
    /// included). `Ok(None)` — the default — for a source that keeps one version of each skill;
    /// a version the source does not hold is [`Error::NotFound`], naming the versions it has.
    async fn version_root(&self, name: &str, version: &str) -> Result<Option<String>> {
        let _ = (name, version);
        Ok(None)
    }
    /// What this source resolved to ([`SourceId`]), like cargo's `SourceId`: an archive's
    /// sha256, the digest an OCI reference names now, the index an HTTP site serves, the commit
    /// a git ref names now, a directory's path. What an install pins. A remote source resolves
    /// itself on first use (this may read it); the default names the source by its
    /// [`location`](Source::location).
    async fn id(&self) -> Result<SourceId> {
        Ok(SourceId::Location(self.location("")))
    }
    /// The symbolic links under one skill root, relative to it and sorted, each with its
    /// target as written, for a source that keeps links: a directory, whose other methods
    /// follow the links that stay inside it (the audit reports them, `content-symlink`). The
    /// default is none: an archive refuses links, a registry or an index stores files.
    async fn symlinks(&self, root: &str) -> Result<Vec<Symlink>> {
        let _ = root;
        Ok(Vec::new())
    }

    /// Every warning for people this source has given so far (entries skipped, a stale copy
    /// used, a submodule left out), including those [`read_documents`](Source::read_documents)
    /// returned. The default: none.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// What the source did to answer so far, for people (an HTTP source: the requests made and
    /// the archives downloaded or taken from the cache); `None` when there is nothing to say.
    fn summary(&self) -> Option<String> {
        None
    }
}

/// A symbolic link in a skill ([`Source::symlinks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symlink {
    /// The link, relative to the skill root, `/`-separated.
    pub path: String,
    /// Its target as written (relative or absolute), lossily UTF-8.
    pub target: String,
}

/// What a [`Source`] resolved to ([`Source::id`]): the identity a lockfile pins.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SourceId {
    /// A directory, by its path.
    Path(std::path::PathBuf),
    /// An archive, by the sha256 of its bytes (`sha256:<hex>`).
    Archive {
        /// `sha256:<hex>` of the archive file.
        sha256: String,
    },
    /// An HTTP site, by the index it serves (the URL read, as it may be shown).
    Index {
        /// The index URL, without credentials or query.
        url: String,
    },
    /// An OCI reference, by the digest it names (the manifest, or the index holding it).
    Oci {
        /// `sha256:<hex>`.
        digest: String,
    },
    /// A git repository, by the commit fetched.
    Git {
        /// 40 hex digits.
        commit: String,
    },
    /// A source that keeps nothing more precise than where it is (a registry file).
    Location(String),
}

impl SourceId {
    /// The archive's `sha256:<hex>`, for [`SourceId::Archive`].
    pub fn archive_sha256(&self) -> Option<&str> {
        match self {
            SourceId::Archive { sha256 } => Some(sha256),
            _ => None,
        }
    }

    /// The index URL, for [`SourceId::Index`].
    pub fn index_url(&self) -> Option<&str> {
        match self {
            SourceId::Index { url } => Some(url),
            _ => None,
        }
    }

    /// The digest, for [`SourceId::Oci`].
    pub fn oci_digest(&self) -> Option<&str> {
        match self {
            SourceId::Oci { digest } => Some(digest),
            _ => None,
        }
    }

    /// The commit, for [`SourceId::Git`].
    pub fn commit(&self) -> Option<&str> {
        match self {
            SourceId::Git { commit } => Some(commit),
            _ => None,
        }
    }
}

impl std::fmt::Display for SourceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceId::Path(p) => write!(f, "{}", p.display()),
            SourceId::Archive { sha256 } => write!(f, "archive {sha256}"),
            SourceId::Index { url } => write!(f, "index {url}"),
            SourceId::Oci { digest } => write!(f, "manifest {digest}"),
            SourceId::Git { commit } => write!(f, "commit {commit}"),
            SourceId::Location(l) => f.write_str(l),
        }
    }
}

/// What a [`Source`] keeps about one root besides its files (see [`Source::record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RootRecord {
    /// The version the source holds the skill as (a registry's published version, an index
    /// entry's `version`), when it keeps one. It may differ from `metadata.version` of the
    /// document: a registry publishes with `--version` too.
    pub version: Option<String>,
    /// Detached signatures (`.minisig` text) the source keeps for the skill, in its order.
    pub signatures: Vec<String>,
    /// The digest (`sha256:<hex>`) of the artifact the source fetched the skill's files as (an
    /// HTTP index entry's archive or SKILL.md), checked before its files were used.
    pub artifact: Option<String>,
    /// The Claude Code plugins of a marketplace that offer the skill, in the marketplace's
    /// order (empty outside a marketplace).
    pub plugins: Vec<String>,
    /// Whether the version is yanked (a registry's, read by its exact `NAME@VERSION`): a
    /// lockfile that pins it restores it, new resolution does not pick it.
    pub yanked: bool,
}

impl RootRecord {
    /// A record of `version` (empty text is none) and `signatures`.
    pub fn new(version: Option<String>, signatures: Vec<String>) -> RootRecord {
        RootRecord {
            version: version.filter(|v| !v.is_empty()),
            signatures,
            artifact: None,
            plugins: Vec::new(),
            yanked: false,
        }
    }

    /// This record with whether the version is yanked.
    pub fn with_yanked(mut self, yanked: bool) -> RootRecord {
        self.yanked = yanked;
        self
    }

    /// This record with the digest of the artifact the files came from.
    pub fn with_artifact(mut self, digest: Option<String>) -> RootRecord {
        self.artifact = digest;
        self
    }

    /// This record with the marketplace plugins that offer the skill.
    pub fn with_plugins(mut self, plugins: Vec<String>) -> RootRecord {
        self.plugins = plugins;
        self
    }
}

/// How much of each skill [`discover_with`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Detail {
    /// The frontmatter alone (tier 1): what validating, `properties` and the prompt block need.
    /// The whole document is read and checked, but its body is not kept
    /// ([`Skill::has_body`] is `false`) and there is no file list.
    Frontmatter,
    /// The document (tiers 1 and 2): what showing and matching a skill need. Its skills have no
    /// file list ([`Skill::has_files`] is `false`).
    Document,
    /// The document and every file of the skill: what digests, manifests, script tools and
    /// reads need. A root whose files cannot all be listed (a link out of the source, say) is
    /// a fault. What [`discover`] reads.
    #[default]
    Files,
}

/// One root's document, as [`Source::read_documents`] lends it.
#[derive(Debug)]
pub struct DocumentRead<'a> {
    /// Its file name: `SKILL.md` or `skill.md`.
    pub name: &'static str,
    /// Its bytes, exactly as stored.
    pub bytes: &'a [u8],
    /// The root's file list, with [`Detail::Files`] (`None` otherwise).
    pub files: Option<Vec<FileEntry>>,
}

/// Where [`Source::read_documents`] hands each root: its index in the roots and its document,
/// or why it could not be read (a missing or oversized document is [`Error::InvalidSkill`]).
pub type DocumentSink = Arc<dyn Fn(usize, Result<DocumentRead<'_>>) + Send + Sync>;

/// A path a source is asked to read, checked by the one path check ([`RelPath::new`]): the first
/// rule it breaks is an [`Error::PathRejected`] naming it. Every backend checks its paths here.
pub fn check_path(path: &str) -> Result<RelPath> {
    RelPath::new(path).map_err(|rule| Error::PathRejected {
        path: path.to_string(),
        reason: rule.to_string(),
    })
}

/// The largest SKILL.md any source reads (1 MiB); a larger one is a `document-too-large` fault,
/// refused from its size before it is read.
pub const DOCUMENT_LIMIT: u64 = 1 << 20;

/// Conveniences every [`Source`] gets for free.
#[async_trait]
pub trait SourceExt: Source {
    /// Reads a file as UTF-8 text.
    async fn read_to_string(&self, path: &str) -> Result<String> {
        let bytes = self.read(path).await?;
        String::from_utf8(bytes.to_vec()).map_err(|e| Error::NotUtf8 {
            location: self.location(path),
            offset: e.utf8_error().valid_up_to(),
        })
    }

    /// Whether `path` names a readable file.
    async fn exists(&self, path: &str) -> Result<bool> {
        match self.read(path).await {
            Ok(_) => Ok(true),
            Err(Error::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads and parses the skill at `root` (see [`load`]).
    async fn load(&self, root: &str) -> Result<Skill> {
        load(self, root).await
    }

    /// The manifest of the skill at `root`: every file read and hashed (the skill digest is
    /// computed from the bytes held, never taken from anyone's word).
    async fn manifest(&self, root: &str, name: &str, version: &str) -> Result<Manifest> {
        let files = self.files(root).await?;
        self.manifest_of(root, &files, name, version).await
    }

    /// [`manifest`](SourceExt::manifest) from a file list already read (a skill's, discovered
    /// with [`Detail::Files`]): every file read and hashed.
    async fn manifest_of(
        &self,
        root: &str,
        files: &[FileEntry],
        name: &str,
        version: &str,
    ) -> Result<Manifest> {
        let mut contents = Vec::with_capacity(files.len());
        for f in files {
            contents.push(self.read(&join_path(root, &f.path)).await?);
        }
        Ok(Manifest::build(
            name,
            version,
            files
                .iter()
                .zip(&contents)
                .map(|(f, b)| (f.path.as_str(), &b[..], f.executable)),
        ))
    }
}

impl<T: Source + ?Sized> SourceExt for T {}

/// The result of [`discover`]: every skill read, every fault found, and what the source warned
/// about. Never silent.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Skills that were read and parsed (they may still have validation faults).
    pub skills: Vec<Skill>,
    /// Roots that could not be read as a skill, each with the fault that refused it.
    pub faults: Vec<RootFault>,
    /// Warnings for people that are not faults of a skill (an HTTP source serving a stale
    /// cached index after a network error, say). Commands show them on stderr; a catalog keeps
    /// them as `Warning` diagnostics (`skillcat-runtime`'s catalog).
    pub warnings: Vec<String>,
}

/// A root that could not be loaded.
#[derive(Debug, Clone)]
pub struct RootFault {
    /// The root as listed by the source.
    pub root: String,
    /// Where it is, for people.
    pub location: String,
    /// What is wrong.
    pub fault: Fault,
}

/// Which document file a root holds, from its file list: `SKILL.md`, else `skill.md`.
pub fn document_name(files: &[FileEntry]) -> Option<&'static str> {
    DOCUMENT_NAMES
        .into_iter()
        .find(|name| files.iter().any(|f| f.path == *name))
}

/// Reads and parses one skill: its file list, its document, its frontmatter.
///
/// A root without a document, or whose document is not a skill document, is an
/// [`Error::InvalidSkill`] carrying the fault.
pub async fn load(source: &(impl Source + ?Sized), root: &str) -> Result<Skill> {
    let files = source.files(root).await?;
    let Located {
        path: doc_path,
        location,
        ..
    } = locate_document(source, root, &files)?;
    let bytes = source.read(&doc_path).await?;
    check_document_size(bytes.len() as u64, &location)?;
    let doc = parse_on_runtime(bytes).await;
    let mut skill = into_skill(source, root, location, doc, Some(files), Detail::Files)?;
    attach_sidecars(source, std::slice::from_mut(&mut skill)).await;
    Ok(skill)
}

/// Reads the sidecar `agents/skillcat.yaml` ([`document::SIDECAR_PATH`]) of each skill whose
/// file list holds one, several at once, and attaches it ([`Skill::attach_sidecar`]): what
/// the skill declares for its scripts is then [`Skill::declarations`]. A skill read without
/// its file list is left as it is (only a skill with one runs scripts); one over
/// [`document::SIDECAR_LIMIT`] is not read, and gets the fault that says so.
pub async fn attach_sidecars(source: &(impl Source + ?Sized), skills: &mut [Skill]) {
    let wanted: Vec<(usize, u64, String)> = skills
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let f = s
                .files()
                .iter()
                .find(|f| f.path == document::SIDECAR_PATH)?;
            Some((i, f.size, join_path(s.root(), document::SIDECAR_PATH)))
        })
        .collect();
    if wanted.is_empty() {
        return;
    }
    let reads: Vec<_> = wanted
        .into_iter()
        .map(|(i, size, path)| async move {
            if size > document::SIDECAR_LIMIT as u64 {
                let why = format!(
                    "too large ({size} bytes; the limit is {} bytes)",
                    document::SIDECAR_LIMIT
                );
                return (i, Err(why));
            }
            (i, source.read(&path).await.map_err(|e| e.to_string()))
        })
        .collect();
    for (i, read) in join::buffered(reads, DISCOVER_CONCURRENCY).await {
        match read {
            Ok(bytes) => skills[i].attach_sidecar(&bytes),
            Err(why) => skills[i].attach_sidecar_error(why),
        }
    }
}

/// Whether blocking work runs inline ([`run_blocking_work_inline`]).
static INLINE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on this process's blocking work — a source's directory and archive reads, and the
/// sandbox's file-system work ([`offload`]) — runs inline on the calling task instead of on
/// tokio's blocking pool. For a process that makes one run and exits (`skillcat run`): nothing
/// else waits on its runtime while that work is done, and a pool thread's start would be on
/// the answer's path. A server, or anything that runs tasks side by side, keeps the default.
pub fn run_blocking_work_inline() {
    INLINE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Runs blocking work on tokio's blocking pool, or inline once
/// [`run_blocking_work_inline`] was called. `Err`: the work panicked on the pool.
pub async fn offload<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> std::result::Result<T, tokio::task::JoinError> {
    if INLINE.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(work());
    }
    tokio::task::spawn_blocking(work).await
}

/// `f` over `items` on every core (at most 8 threads), results in order. The calling thread
/// takes a share too. Items are handed out in small batches as threads become free, so that one
/// slow item (a large skill, a cold directory) does not leave the other cores idle.
#[doc(hidden)]
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // One item needs no thread, nor the count of cores (the process's cgroup files read).
    if items.len() < 2 {
        return items.iter().map(f).collect();
    }
    let threads = *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    });
    if threads < 2 {
        return items.iter().map(f).collect();
    }
    // Small enough to balance, large enough that taking a batch costs nothing.
    let batch = (items.len() / (threads * 8)).clamp(1, 64);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Vec<R>)> = Vec::new();
        loop {
            let start = next.fetch_add(batch, Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let end = (start + batch).min(items.len());
            done.push((start, items[start..end].iter().map(&f).collect()));
        }
    };
    let mut parts = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads.min(items.len()))
            .map(|_| scope.spawn(work))
            .collect();
        let mut parts = work();
        for handle in handles {
            match handle.join() {
                Ok(more) => parts.extend(more),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        parts
    });
    parts.sort_unstable_by_key(|(start, _)| *start);
    let mut out = Vec::with_capacity(items.len());
    for (_, part) in parts {
        out.extend(part);
    }
    out
}

/// Which document a root holds (path, location and listed size), from its file list, refused
/// when missing or larger than [`DOCUMENT_LIMIT`] from its listed size.
pub(crate) fn locate_document(
    source: &(impl Source + ?Sized),
    root: &str,
    files: &[FileEntry],
) -> Result<Located> {
    let Some(doc_name) = document_name(files) else {
        return Err(missing_document(source, root));
    };
    let doc_path = join_path(root, doc_name);
    let location = source.location(&doc_path);
    let size = files
        .iter()
        .find(|f| f.path == doc_name)
        .map_or(0, |f| f.size);
    check_document_size(size, &location)?;
    Ok(Located {
        name: doc_name,
        path: doc_path,
        location,
        size,
    })
}

/// A root's document, as [`locate_document`] finds it in the root's file list.
pub(crate) struct Located {
    /// `SKILL.md` or `skill.md`.
    pub(crate) name: &'static str,
    /// Its path in the source (the root joined with the name).
    pub(crate) path: String,
    /// Where it is, for people.
    pub(crate) location: String,
    /// Its listed size.
    pub(crate) size: u64,
}

/// Hands one root's read to a [`DocumentSink`]: the document (name and bytes) with the root's
/// file list when `detail` asks for it, or why it could not be read.
pub(crate) fn lend(
    each: &DocumentSink,
    i: usize,
    detail: Detail,
    read: Result<(&'static str, impl AsRef<[u8]>, Vec<FileEntry>)>,
) {
    match read {
        Ok((name, bytes, files)) => each(
            i,
            Ok(DocumentRead {
                name,
                bytes: bytes.as_ref(),
                files: (detail == Detail::Files).then_some(files),
            }),
        ),
        Err(e) => each(i, Err(e)),
    }
}

/// The refusal of a root that holds no document.
pub(crate) fn missing_document(source: &(impl Source + ?Sized), root: &str) -> Error {
    Error::InvalidSkill {
        path: source.location(root),
        fault: Fault::missing_document(),
    }
}

/// Refuses a document of `size` bytes when it is over [`DOCUMENT_LIMIT`].
pub(crate) fn check_document_size(size: u64, location: &str) -> Result<()> {
    if size > DOCUMENT_LIMIT {
        return Err(document_too_large(location.to_string(), size));
    }
    Ok(())
}

/// The refusal of a document of `size` bytes, over [`DOCUMENT_LIMIT`].
pub(crate) fn document_too_large(location: String, size: u64) -> Error {
    Error::InvalidSkill {
        path: location,
        fault: Fault::document_too_large(size, DOCUMENT_LIMIT),
    }
}

/// Picks a root's document the way [`document_name`] does, from what `entry` says of a name
/// (`None`: no regular file of that name; else its size), and refuses one over
/// [`DOCUMENT_LIMIT`] from that size. For backends that can look a name up without listing.
pub(crate) fn choose_document(
    source: &(impl Source + ?Sized),
    root: &str,
    mut entry: impl FnMut(&'static str) -> Result<Option<u64>>,
) -> Result<(&'static str, u64)> {
    for name in DOCUMENT_NAMES {
        if let Some(size) = entry(name)? {
            check_document_size(size, &source.location(&join_path(root, name)))?;
            return Ok((name, size));
        }
    }
    Err(missing_document(source, root))
}

/// The last step of [`load`] and discovery: the parsed document (or its refusal) and the files
/// as a skill, read as far as `detail` asked (the frontmatter alone: no body was kept).
fn into_skill(
    source: &(impl Source + ?Sized),
    root: &str,
    location: String,
    doc: std::result::Result<document::Document, Fault>,
    files: Option<Vec<FileEntry>>,
    detail: Detail,
) -> Result<Skill> {
    let dir_name = source.root_dir_name(root);
    match (doc, files) {
        (Ok(doc), Some(files)) => Ok(Skill::new(root.to_string(), location, dir_name, doc, files)),
        (Ok(doc), None) if detail == Detail::Frontmatter => Ok(Skill::without_body(
            root.to_string(),
            location,
            dir_name,
            doc,
        )),
        (Ok(doc), None) => Ok(Skill::without_files(
            root.to_string(),
            location,
            dir_name,
            doc,
        )),
        (Err(fault), _) => Err(Error::InvalidSkill {
            path: location,
            fault,
        }),
    }
}

/// Parses a document as a task of a multi-threaded runtime, so that concurrent loads parse on
/// every core; elsewhere (no runtime, or a current-thread one) in place.
async fn parse_on_runtime(bytes: Bytes) -> std::result::Result<document::Document, Fault> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            let task = h.spawn(async move { document::parse_document(&bytes) });
            task.await.unwrap_or_else(|e| {
                Err(Fault::unreadable(format!(
                    "the document parser failed: {e}"
                )))
            })
        }
        _ => document::parse_document(&bytes),
    }
}

/// Reads every root of a source, documents and file lists ([`Detail::Files`]). One broken skill
/// never hides the others, and nothing is dropped silently: each root gives a skill or a fault.
pub async fn discover(source: &(impl Source + ?Sized)) -> Result<Discovery> {
    discover_with(source, Detail::Files).await
}

/// Reads every root of a source, as much as `detail` says: [`list`](Source::list), then
/// [`read_documents`](Source::read_documents), each document parsed on the thread that read it.
/// Results keep the list order; the source's warnings come with them.
pub async fn discover_with(source: &(impl Source + ?Sized), detail: Detail) -> Result<Discovery> {
    discover_by(source, detail, false).await
}

/// [`discover`] through the default, per-root reads ([`files`](Source::files) then
/// [`read`](Source::read)) whatever the backend: what its own
/// [`read_documents`](Source::read_documents) must agree with (the conformance suite checks).
pub async fn discover_each(source: &(impl Source + ?Sized)) -> Result<Discovery> {
    discover_by(source, Detail::Files, true).await
}

/// What discovery made of one lent document, before it knows where the document is.
enum Parsed {
    Doc {
        name: &'static str,
        doc: std::result::Result<document::Document, Fault>,
        files: Option<Vec<FileEntry>>,
    },
    TooLarge {
        name: &'static str,
        size: u64,
    },
    Failed(Error),
}

/// The one discovery: list, read every document (lent by the backend, or read root by root
/// when `generic`), parse each where it was read, then build the skills and faults in order.
async fn discover_by(
    source: &(impl Source + ?Sized),
    detail: Detail,
    generic: bool,
) -> Result<Discovery> {
    let roots = source.list().await?;
    let slots: Arc<Vec<std::sync::Mutex<Option<Parsed>>>> = Arc::new(
        (0..roots.len())
            .map(|_| std::sync::Mutex::new(None))
            .collect(),
    );
    let filled = Arc::clone(&slots);
    let sink: DocumentSink = Arc::new(move |i: usize, read: Result<DocumentRead<'_>>| {
        let parsed = match read {
            Ok(d) if d.bytes.len() as u64 > DOCUMENT_LIMIT => Parsed::TooLarge {
                name: d.name,
                size: d.bytes.len() as u64,
            },
            Ok(d) => Parsed::Doc {
                name: d.name,
                doc: match detail {
                    Detail::Frontmatter => document::parse_frontmatter(d.bytes),
                    Detail::Document | Detail::Files => document::parse_document(d.bytes),
                },
                files: d.files,
            },
            Err(e) => Parsed::Failed(e),
        };
        if let Some(slot) = filled.get(i) {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(parsed);
        }
    });
    let warnings = if generic {
        read_each(source, &roots, detail, &sink).await;
        Vec::new()
    } else {
        source.read_documents(&roots, detail, sink).await?
    };
    // Building the skills (locations, names) is spread over the cores too: it is CPU work of a
    // few microseconds a skill, done once the reads are over.
    let indices: Vec<usize> = (0..roots.len()).collect();
    let built = par_map(&indices, |&i| {
        let root = roots[i].as_str();
        let parsed = slots[i]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match parsed {
            Some(Parsed::Doc { name, doc, files }) => {
                let location = source.location(&join_path(root, name));
                into_skill(source, root, location, doc, files, detail)
            }
            Some(Parsed::TooLarge { name, size }) => Err(document_too_large(
                source.location(&join_path(root, name)),
                size,
            )),
            Some(Parsed::Failed(e)) => Err(e),
            None => Err(Error::RootNotRead(source.location(root))),
        }
    });
    let results: Vec<(String, Result<Skill>)> = roots.into_iter().zip(built).collect();
    let mut found = collect_discovery(source, results);
    attach_sidecars(source, &mut found.skills).await;
    found.warnings = warnings;
    Ok(found)
}

/// The default [`Source::read_documents`]: each root's file list, its document picked from it
/// and read, several roots at once; each handed to `each` as it comes.
pub async fn read_each(
    source: &(impl Source + ?Sized),
    roots: &[String],
    detail: Detail,
    each: &DocumentSink,
) {
    let reads = (0..roots.len()).map(|i| async move {
        let root = roots[i].as_str();
        let read = async {
            let files = source.files(root).await?;
            let doc = locate_document(source, root, &files)?;
            let bytes = source.read(&doc.path).await?;
            Ok((doc.name, bytes, files))
        };
        // Handed on as each read ends: the sink files it by index, so order does not matter.
        lend(each, i, detail, read.await);
    });
    join::buffered(reads, DISCOVER_CONCURRENCY).await;
}

/// Sorts each root's outcome into skills and faults, in order.
fn collect_discovery(
    source: &(impl Source + ?Sized),
    results: Vec<(String, Result<Skill>)>,
) -> Discovery {
    let mut out = Discovery::default();
    for (root, result) in results {
        match result {
            Ok(skill) => out.skills.push(skill),
            Err(Error::InvalidSkill { path, fault }) => out.faults.push(RootFault {
                root,
                location: path,
                fault,
            }),
            Err(other) => out.faults.push(RootFault {
                location: source.location(&root),
                root,
                fault: Fault::unreadable(other.to_string()),
            }),
        }
    }
    out
}

/// The `$schema` of an Agent Skills discovery index, RFC v0.2.0 (an opaque identifier, compared
/// exactly): what `skillcat serve` writes and the HTTP source reads.
pub const DISCOVERY_SCHEMA_V0_2: &str =
    "https://schemas.agentskills.io/discovery/0.2.0/schema.json";

/// How many skills [`discover`] reads at once.
const DISCOVER_CONCURRENCY: usize = 16;

/// What every command says of a name a source does not have — `no skill named 'NAME' in SOURCE
/// (skills: a, b)` — with how many of its roots could not be read. The first 50 names are
/// listed (an index may hold thousands; `skillcat list` shows them all).
pub fn no_such_skill(name: &str, typed: &str, mut names: Vec<String>, unreadable: usize) -> String {
    const SHOWN: usize = 50;
    names.sort();
    names.dedup();
    let mut why = if names.is_empty() {
        "it holds no readable skill".to_string()
    } else {
        let more = names.len().saturating_sub(SHOWN);
        let mut list = names.into_iter().take(SHOWN).collect::<Vec<_>>().join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more: `skillcat list {typed}`"));
        }
        format!("skills: {list}")
    };
    if unreadable > 0 {
        why.push_str(&format!(
            "; {unreadable} root{} could not be read",
            if unreadable == 1 { "" } else { "s" }
        ));
    }
    // The names come from the source: a control character in one is shown, never obeyed.
    crate::prompt::escape_controls(&format!("no skill named '{name}' in {typed} ({why})"))
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_map_keeps_order_whatever_the_timing() {
        // Uneven work: some items sleep, so batches finish out of order.
        for len in [0usize, 1, 2, 3, 17, 64, 65, 1000] {
            let items: Vec<usize> = (0..len).collect();
            let got = par_map(&items, |&i| {
                if i % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                i * 3
            });
            let want: Vec<usize> = items.iter().map(|i| i * 3).collect();
            assert_eq!(got, want, "len {len}");
        }
    }

    #[test]
    fn par_map_passes_a_panic_on() {
        let items: Vec<usize> = (0..100).collect();
        let caught = std::panic::catch_unwind(|| {
            par_map(&items, |&i| {
                assert!(i != 77, "item 77");
                i
            })
        });
        assert!(caught.is_err());
    }

    #[test]
    fn an_unknown_name_names_what_the_source_has() {
        assert_eq!(
            no_such_skill("g", "../src", vec!["b".into(), "a".into(), "a".into()], 0),
            "no skill named 'g' in ../src (skills: a, b)"
        );
        assert_eq!(
            no_such_skill("g", "x.db", Vec::new(), 2),
            "no skill named 'g' in x.db (it holds no readable skill; 2 roots could not be read)"
        );
        let many: Vec<String> = (0..60).map(|i| format!("s{i:02}")).collect();
        let text = no_such_skill("g", "http://h/", many, 0);
        assert!(
            text.contains("s49 and 10 more: `skillcat list http://h/`"),
            "{text}"
        );
        assert!(!text.contains("s50"), "{text}");
        let hostile = no_such_skill("g", "d", vec!["a\u{1b}]0;x\u{7}".into()], 0);
        assert!(
            !hostile.contains('\u{1b}') && !hostile.contains('\u{7}'),
            "{hostile:?}"
        );
    }
}
