//! Git sources, through the `git` program with everything that could run code or reach
//! further locked down.
//!
//! ```text
//! GitSource::new(&spec, timeout)        sync, no I/O
//!   first use (list, files, read, id)   fetch the ref (or the pinned commit) once, write the
//!                                       skills under the folder asked for into a scratch tree
//!   then                                a directory source over that tree; id() = the commit
//! ```
//!
//! Each fetch runs in a scratch folder: a bare repository (`git init --bare`), one
//! `git fetch --depth 1` of the ref (or commit) asked for, `git ls-tree` of that commit and
//! `git cat-file --batch` for the blobs of the skills found in it. Nothing is checked out, so
//! no hook, filter, attribute or submodule of the repository ever applies. Every `git` runs
//! with an empty environment but `PATH` (and `SSH_AUTH_SOCK` and the proxy variables), a
//! scratch `HOME`, no system or global configuration, no terminal prompts, hooks pointed at
//! `/dev/null`, `transfer.fsckObjects`, and only the `file`, `git`, `https` and `ssh`
//! protocols (`ext::` and every other transport refused).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::OnceCell;

use crate::error::{Error, ErrorKind, Result};
use crate::path::{FileEntry, RelPath};
use crate::source::{
    Detail, DirOptions, DirSource, DocumentSink, RootRecord, Source, SourceId, SourceSpec, Symlink,
};

/// Why a git source could not be read, inside [`Error::Layer`]: a failure of `git` is of kind
/// [`ErrorKind::Tool`], a refusal of what the repository holds [`ErrorKind::Refused`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitError {
    /// The `git` program failed, timed out or is missing.
    #[error("{0}")]
    Failed(String),
    /// The repository was read, and what it holds is refused (the pinned commit is gone, a
    /// path breaks a rule, a limit is passed, no skill under the folder asked for).
    #[error("{0}")]
    Refused(String),
}

impl From<GitError> for Error {
    fn from(e: GitError) -> Error {
        let kind = match e {
            GitError::Failed(_) => ErrorKind::Tool,
            GitError::Refused(_) => ErrorKind::Refused,
        };
        Error::layer(kind, e)
    }
}

fn failed(why: String) -> Error {
    GitError::Failed(why).into()
}

fn refused(why: String) -> Error {
    GitError::Refused(why).into()
}

/// The most files of one fetch that are written out.
const MAX_FILES: usize = 10_000;
/// The most bytes of one fetch that are written out.
const MAX_BYTES: u64 = 256 << 20;
/// The largest file.
const MAX_FILE: u64 = 16 << 20;
/// How deep below the folder asked for skills are looked for (as in a directory source).
const MAX_SKILL_DEPTH: usize = 6;

/// What to fetch.
#[derive(Debug, Clone, Copy)]
enum Want<'a> {
    /// The remote's `HEAD`.
    Head,
    /// A branch, tag or commit, as the user typed it.
    Ref(&'a str),
    /// Exactly this commit (40 hex digits); `also` is the ref to fetch from when the server
    /// does not hand out commits by id.
    Commit { id: &'a str, also: Option<&'a str> },
}

/// A commit's skills written out into a scratch folder (removed when this is dropped).
#[derive(Debug)]
struct Checkout {
    _scratch: tempfile::TempDir,
    /// The folder asked for, inside the scratch tree.
    root: PathBuf,
    /// The commit fetched (40 hex digits).
    commit: String,
    /// What was left out (submodules), for people.
    warnings: Vec<String>,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(path.display().to_string(), e)
}

/// Fetches `url` at `want` and writes out the skills under `subpath`.
async fn checkout(
    url: &str,
    want: Want<'_>,
    subpath: Option<&str>,
    timeout: Duration,
) -> Result<Checkout> {
    let scratch = tempfile::Builder::new()
        .prefix("skillcat-git-")
        .tempdir()
        .map_err(|e| io(&std::env::temp_dir(), e))?;
    let git = Git {
        home: scratch.path().join("home"),
        repo: scratch.path().join("repo.git"),
        timeout,
    };
    std::fs::create_dir(&git.home).map_err(|e| io(&git.home, e))?;
    let repo = git.repo.display().to_string();
    git.run(&["init", "--bare", "--quiet", &repo], None).await?;
    let commit = match want {
        Want::Head => git.fetch_one(url, "HEAD").await?,
        Want::Ref(r) => git.fetch_one(url, r).await?,
        Want::Commit { id, also } => git.fetch_commit(url, id, also).await?,
    };
    // The tree is named after the repository, so that a skill at its root is checked against
    // the name a clone would have.
    let tree = scratch.path().join("tree").join(repo_name(url));
    let prefix = subpath.map(|s| format!("{s}/")).unwrap_or_default();
    let warnings = git.write_skills(&commit, &prefix, &tree).await?;
    let root = match subpath {
        Some(s) => tree.join(s),
        None => tree,
    };
    if !root.is_dir() {
        return Err(refused(format!(
            "{url}: commit {commit} has no skill under {}",
            subpath.unwrap_or("its root")
        )));
    }
    Ok(Checkout {
        _scratch: scratch,
        root,
        commit,
        warnings,
    })
}

/// The last component of a repository URL without `.git` (`repo` when it has none usable).
fn repo_name(url: &str) -> String {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or("");
    let name = last.strip_suffix(".git").unwrap_or(last);
    if usable_folder_name(name) {
        name.to_string()
    } else {
        "repo".into()
    }
}

/// Whether `name` can name the scratch folder a root skill is checked against: one component,
/// not hidden, keeping the path rules every store keeps.
fn usable_folder_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && crate::path::check_canonical(name).is_ok()
}

/// Whether `s` is a full commit id.
pub fn is_commit_id(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

struct Git {
    home: PathBuf,
    repo: PathBuf,
    timeout: Duration,
}

/// One entry of `git ls-tree -r -l -z`.
struct TreeEntry {
    mode: String,
    kind: String,
    oid: String,
    size: Option<u64>,
    path: String,
}

impl Git {
    fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("git");
        c.env_clear();
        for keep in [
            "PATH",
            "SSH_AUTH_SOCK",
            "http_proxy",
            "https_proxy",
            "HTTPS_PROXY",
            "no_proxy",
            "NO_PROXY",
            "all_proxy",
            "ALL_PROXY",
        ] {
            if let Some(v) = std::env::var_os(keep) {
                c.env(keep, v);
            }
        }
        c.env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "/bin/false")
            .env("SSH_ASKPASS", "/bin/false")
            .env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
            .env("LC_ALL", "C");
        for setting in [
            "core.hooksPath=/dev/null",
            "core.fsmonitor=false",
            "protocol.allow=never",
            "protocol.file.allow=always",
            "protocol.git.allow=always",
            "protocol.https.allow=always",
            "protocol.ssh.allow=always",
            "protocol.ext.allow=never",
            "transfer.fsckObjects=true",
            "submodule.recurse=false",
            "fetch.recurseSubmodules=false",
        ] {
            c.arg("-c").arg(setting);
        }
        c.arg(format!("--git-dir={}", self.repo.display()));
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// Runs `git ARGS`, with `input` on its stdin; returns stdout, or the error with stderr.
    async fn run(
        &self,
        args: &[&str],
        input: Option<Vec<u8>>,
    ) -> std::result::Result<Vec<u8>, GitError> {
        let shown = format!("git {}", args.join(" "));
        let mut cmd = self.command();
        cmd.args(args);
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().map_err(|e| {
            GitError::Failed(if e.kind() == std::io::ErrorKind::NotFound {
                "git sources need the `git` program, which is not on PATH".into()
            } else {
                format!("cannot run git: {e}")
            })
        })?;
        let writer = match (input, child.stdin.take()) {
            (Some(bytes), Some(mut stdin)) => Some(tokio::spawn(async move {
                let _ = stdin.write_all(&bytes).await;
            })),
            _ => None,
        };
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let work = async {
            let mut out = Vec::new();
            let mut err = Vec::new();
            let (a, b) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
            a.and(b)?;
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((status, out, err))
        };
        let (status, out, err) = match tokio::time::timeout(self.timeout, work).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(GitError::Failed(format!("{shown}: {e}"))),
            Err(_) => {
                return Err(GitError::Failed(format!(
                    "{shown}: no answer within {}s",
                    self.timeout.as_secs()
                )));
            }
        };
        if let Some(w) = writer {
            let _ = w.await;
        }
        if !status.success() {
            let text = String::from_utf8_lossy(&err);
            let text = text.trim();
            return Err(GitError::Failed(format!(
                "{shown} failed ({status}){}{text}",
                if text.is_empty() { "" } else { ": " }
            )));
        }
        Ok(out)
    }

    /// `git fetch --depth 1 URL REF`, then the commit it gave.
    async fn fetch_one(&self, url: &str, refspec: &str) -> Result<String> {
        self.run(
            &[
                "fetch",
                "--depth=1",
                "--no-tags",
                "--no-recurse-submodules",
                "--quiet",
                "--",
                url,
                refspec,
            ],
            None,
        )
        .await
        .map_err(|e| match e {
            GitError::Failed(m) => failed(format!("cannot fetch {refspec} from {url}: {m}")),
            e @ GitError::Refused(_) => e.into(),
        })?;
        self.commit_of("FETCH_HEAD").await
    }

    /// Exactly commit `id`: fetched by id, else found in the branches and tags (and `also`).
    async fn fetch_commit(&self, url: &str, id: &str, also: Option<&str>) -> Result<String> {
        if let Ok(got) = self.fetch_one(url, id).await
            && got == id
        {
            return Ok(got);
        }
        let mut refspecs = vec![
            "+refs/heads/*:refs/remotes/origin/*".to_string(),
            "+refs/tags/*:refs/tags/*".to_string(),
        ];
        if let Some(r) = also.filter(|r| !is_commit_id(r)) {
            refspecs.push(r.to_string());
        }
        let mut args = vec![
            "fetch",
            "--no-tags",
            "--no-recurse-submodules",
            "--quiet",
            "--",
            url,
        ];
        args.extend(refspecs.iter().map(String::as_str));
        self.run(&args, None).await.map_err(|e| match e {
            GitError::Failed(m) => failed(format!("cannot fetch from {url}: {m}")),
            e @ GitError::Refused(_) => e.into(),
        })?;
        match self.commit_of(id).await {
            Ok(got) if got == id => Ok(got),
            _ => Err(refused(format!(
                "{url} no longer has the pinned commit {id}"
            ))),
        }
    }

    async fn commit_of(&self, rev: &str) -> Result<String> {
        let spec = format!("{rev}^{{commit}}");
        let out = self
            .run(&["rev-parse", "--verify", "--quiet", &spec], None)
            .await?;
        let id = String::from_utf8_lossy(&out).trim().to_string();
        if !is_commit_id(&id) {
            return Err(failed(format!(
                "git rev-parse {spec} gave {id:?}, not a commit id"
            )));
        }
        Ok(id)
    }

    /// Every entry of the commit's tree.
    async fn tree(&self, commit: &str) -> Result<Vec<TreeEntry>> {
        let out = self
            .run(&["ls-tree", "-r", "-l", "-z", "--full-tree", commit], None)
            .await?;
        let mut entries = Vec::new();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let bad = || failed(format!("git ls-tree gave an unreadable line in {commit}"));
            let tab = record.iter().position(|b| *b == b'\t').ok_or_else(bad)?;
            let head = std::str::from_utf8(&record[..tab]).map_err(|_| bad())?;
            let path = String::from_utf8(record[tab + 1..].to_vec()).map_err(|_| {
                refused(format!(
                    "commit {commit} has a path that is not UTF-8: {}",
                    String::from_utf8_lossy(&record[tab + 1..])
                ))
            })?;
            let mut fields = head.split_whitespace();
            let (Some(mode), Some(kind), Some(oid), Some(size)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(bad());
            };
            entries.push(TreeEntry {
                mode: mode.into(),
                kind: kind.into(),
                oid: oid.into(),
                size: size.parse().ok(),
                path,
            });
        }
        Ok(entries)
    }

    /// Writes out, under `dest` at their paths in the repository, every file of every skill
    /// below `prefix` in `commit` (and the `.minisig` files there and beside it); returns
    /// warnings.
    async fn write_skills(&self, commit: &str, prefix: &str, dest: &Path) -> Result<Vec<String>> {
        // The signature beside the folder asked for (`skills/pdf.minisig`) is read too.
        let beside = match prefix.trim_end_matches('/').rsplit_once('/') {
            Some((parent, _)) => format!("{parent}/"),
            None => String::new(),
        };
        let is_signature = |p: &str| {
            p.starts_with(&beside)
                && p.ends_with(crate::sign::SIGNATURE_SUFFIX)
                && !p[beside.len()..].contains('/')
        };
        let all = self.tree(commit).await?;
        let signatures: Vec<&TreeEntry> = all
            .iter()
            .filter(|e| e.kind == "blob" && !e.path.starts_with(prefix) && is_signature(&e.path))
            .collect();
        let entries: Vec<&TreeEntry> = all.iter().filter(|e| e.path.starts_with(prefix)).collect();
        // Skill roots: folders holding a SKILL.md, no deeper than a directory source looks.
        let roots: Vec<String> = entries
            .iter()
            .filter(|e| e.kind == "blob")
            .filter_map(|e| {
                let rel = &e.path[prefix.len()..];
                let (dir, file) = rel.rsplit_once('/').unwrap_or(("", rel));
                let depth = if dir.is_empty() {
                    0
                } else {
                    dir.split('/').count()
                };
                (crate::path::is_document_name(file) && depth <= MAX_SKILL_DEPTH)
                    .then(|| dir.to_string())
            })
            .collect();
        let in_skill = |rel: &str| {
            roots
                .iter()
                .any(|r| r.is_empty() || rel.starts_with(&format!("{r}/")))
        };
        let mut warnings = Vec::new();
        let mut wanted = Vec::new();
        let mut total = 0u64;
        for e in entries.iter().copied().chain(signatures) {
            let rel = e.path.strip_prefix(prefix).unwrap_or(&e.path);
            // A Claude Code marketplace catalog at the folder's top, and its plugins'
            // manifests, are read too (the marketplace module above this one reads them).
            if e.path.starts_with(prefix)
                && !(in_skill(rel)
                    || rel.ends_with(crate::sign::SIGNATURE_SUFFIX)
                    || rel == ".claude-plugin/marketplace.json"
                    || rel == ".claude-plugin/plugin.json"
                    || rel.ends_with("/.claude-plugin/plugin.json"))
            {
                continue;
            }
            if e.kind == "commit" {
                warnings.push(format!(
                    "{}: a submodule (commit {}), not fetched",
                    e.path, e.oid
                ));
                continue;
            }
            if e.kind != "blob" {
                continue;
            }
            RelPath::new(&e.path).map_err(|rule| {
                refused(format!(
                    "commit {commit}: the path {:?} is refused: {rule}",
                    e.path
                ))
            })?;
            let size = e.size.unwrap_or(0);
            if size > MAX_FILE {
                return Err(refused(format!(
                    "commit {commit}: {} is {size} bytes; the limit is {MAX_FILE}",
                    e.path
                )));
            }
            total += size;
            if wanted.len() >= MAX_FILES || total > MAX_BYTES {
                return Err(refused(format!(
                    "commit {commit}: the skills under {} hold more than {MAX_FILES} files or {MAX_BYTES} bytes",
                    if prefix.is_empty() {
                        "the root"
                    } else {
                        prefix
                    }
                )));
            }
            wanted.push(e);
        }
        std::fs::create_dir_all(dest).map_err(|e| io(dest, e))?;
        if wanted.is_empty() {
            return Ok(warnings);
        }
        let input: Vec<u8> = wanted
            .iter()
            .flat_map(|e| format!("{}\n", e.oid).into_bytes())
            .collect();
        let out = self.run(&["cat-file", "--batch"], Some(input)).await?;
        let mut at = 0usize;
        for e in &wanted {
            let nl = out[at..]
                .iter()
                .position(|b| *b == b'\n')
                .map(|i| at + i)
                .ok_or_else(|| failed("git cat-file --batch ended early".into()))?;
            let header = String::from_utf8_lossy(&out[at..nl]).into_owned();
            let size: usize = header
                .split(' ')
                .nth(2)
                .and_then(|s| s.parse().ok())
                .filter(|_| header.starts_with(&e.oid))
                .ok_or_else(|| failed(format!("git cat-file --batch: unexpected {header:?}")))?;
            let body = out
                .get(nl + 1..nl + 1 + size)
                .ok_or_else(|| failed("git cat-file --batch ended early".into()))?;
            at = nl + 1 + size + 1;
            let path = dest.join(&e.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|err| io(parent, err))?;
            }
            write_entry(&path, &e.mode, body)?;
        }
        Ok(warnings)
    }
}

/// Writes one blob as a file (0644 or 0755) or a symbolic link.
fn write_entry(path: &Path, mode: &str, body: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if mode == "120000" {
        let target = std::str::from_utf8(body).map_err(|_| {
            refused(format!(
                "{}: a symbolic link whose target is not UTF-8",
                path.display()
            ))
        })?;
        return std::os::unix::fs::symlink(target, path).map_err(|e| io(path, e));
    }
    std::fs::write(path, body).map_err(|e| io(path, e))?;
    let perm = if mode == "100755" { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm)).map_err(|e| io(path, e))
}

/// A skill source over a git repository at one commit: the ref asked for (or the commit a
/// lockfile pins) is fetched on first use, the skills under the folder asked for are written
/// into a scratch tree, and a directory source serves them. Nothing is checked out: no hook,
/// filter, attribute or submodule of the repository applies.
pub struct GitSource {
    url: String,
    shown: String,
    git_ref: Option<String>,
    pin: Option<String>,
    subpath: Option<String>,
    timeout: Duration,
    opened: OnceCell<Fetched>,
}

/// A fetched commit and the directory source over it.
struct Fetched {
    checkout: Checkout,
    dir: DirSource,
    warnings: Vec<String>,
}

impl std::fmt::Debug for GitSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitSource")
            .field("source", &self.shown)
            .field("pin", &self.pin)
            .field("commit", &self.opened.get().map(|o| &o.checkout.commit))
            .finish()
    }
}

/// How long one `git` command may take when the caller says nothing.
pub const DEFAULT_GIT_TIMEOUT: Duration = Duration::from_secs(300);

impl GitSource {
    /// A source for a git `spec` ([`SourceKind::Git`](crate::source::SourceKind::Git)): its
    /// clone URL, ref, folder and pinned commit. Does no I/O; each `git` command may take
    /// `timeout`.
    pub fn new(spec: &SourceSpec, timeout: Duration) -> Result<GitSource> {
        let url = spec
            .url
            .clone()
            .filter(|_| spec.kind == crate::source::SourceKind::Git)
            .ok_or_else(|| Error::UnsupportedSource(spec.typed.clone()))?;
        Ok(GitSource {
            url,
            shown: spec.shown(),
            git_ref: spec.git_ref.clone(),
            pin: spec.pin.clone(),
            subpath: spec.subpath.clone(),
            timeout,
            opened: OnceCell::new(),
        })
    }

    /// The commit fetched, once the source has been read.
    pub fn commit(&self) -> Option<&str> {
        self.opened.get().map(|o| o.checkout.commit.as_str())
    }

    async fn fetched(&self) -> Result<&Fetched> {
        self.opened
            .get_or_try_init(|| async {
                let want = match self.pin.as_deref() {
                    Some(id) if is_commit_id(id) => Want::Commit {
                        id,
                        also: self.git_ref.as_deref(),
                    },
                    _ => match self.git_ref.as_deref() {
                        Some(r) => Want::Ref(r),
                        None => Want::Head,
                    },
                };
                let co = checkout(&self.url, want, self.subpath.as_deref(), self.timeout).await?;
                let root = co.root.clone();
                let dir = tokio::task::spawn_blocking(move || {
                    DirSource::open(&root, DirOptions::default())
                })
                .await
                .map_err(|e| Error::task("reading a git checkout", e))??;
                let warnings = co
                    .warnings
                    .iter()
                    .map(|w| format!("{}: {w}", self.url))
                    .collect();
                Ok(Fetched {
                    checkout: co,
                    dir,
                    warnings,
                })
            })
            .await
    }
}

#[async_trait]
impl Source for GitSource {
    async fn list(&self) -> Result<Vec<String>> {
        self.fetched().await?.dir.list().await
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        self.fetched().await?.dir.files(root).await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        self.fetched().await?.dir.read(path).await
    }

    async fn symlinks(&self, root: &str) -> Result<Vec<Symlink>> {
        self.fetched().await?.dir.symlinks(root).await
    }

    /// Where the file is in the scratch tree once fetched (the tree is named after the
    /// repository); before, `SOURCE#path`.
    fn location(&self, path: &str) -> String {
        match self.opened.get() {
            Some(o) => o.dir.location(path),
            None => format!("{}#{path}", self.shown),
        }
    }

    fn root_dir_name(&self, root: &str) -> Option<String> {
        match self.opened.get() {
            Some(o) => o.dir.root_dir_name(root),
            None => (!root.is_empty()).then(|| crate::path::base_name(root).to_string()),
        }
    }

    /// The directory source's reads, and what fetching left out (submodules).
    async fn read_documents(
        &self,
        roots: &[String],
        detail: Detail,
        each: DocumentSink,
    ) -> Result<Vec<String>> {
        let fetched = self.fetched().await?;
        let mut warnings = fetched.warnings.clone();
        warnings.extend(fetched.dir.read_documents(roots, detail, each).await?);
        Ok(warnings)
    }

    /// The detached signatures the repository keeps for the skill at `root`:
    /// `<folder>.minisig` beside the skill's folder, `<tree>.<name>.minisig` and
    /// `<tree>.minisig` beside the folder asked for.
    async fn record(&self, root: &str) -> Result<RootRecord> {
        let fetched = self.fetched().await?;
        let name = crate::source::load(&fetched.dir, root)
            .await
            .ok()
            .map(|s| s.name());
        let base = fetched.checkout.root.clone();
        let root = root.to_string();
        let signatures = tokio::task::spawn_blocking(move || {
            let base_str = base.display().to_string();
            let mut candidates: Vec<PathBuf> = Vec::new();
            if !root.is_empty() {
                candidates.push(crate::sign::signature_path(&base.join(&root)));
            }
            if let Some(name) = &name {
                candidates.push(PathBuf::from(format!(
                    "{base_str}.{name}{}",
                    crate::sign::SIGNATURE_SUFFIX
                )));
            }
            candidates.push(crate::sign::signature_path(&base));
            let mut out: Vec<String> = Vec::new();
            for p in candidates {
                if let Ok(text) = std::fs::read_to_string(&p)
                    && !out.contains(&text)
                {
                    out.push(text);
                }
            }
            out
        })
        .await
        .map_err(|e| Error::task("reading signatures", e))?;
        Ok(RootRecord::new(None, signatures))
    }

    /// The commit fetched.
    async fn id(&self) -> Result<SourceId> {
        Ok(SourceId::Git {
            commit: self.fetched().await?.checkout.commit.clone(),
        })
    }

    fn warnings(&self) -> Vec<String> {
        self.opened
            .get()
            .map(|o| o.warnings.clone())
            .unwrap_or_default()
    }
}
