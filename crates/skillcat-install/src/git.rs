//! Git sources, through the `git` program with everything that could run code or reach
//! further locked down.
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

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::InstallError;
use crate::path::RelPath;

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
pub(crate) enum Want<'a> {
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
pub(crate) struct Checkout {
    _scratch: tempfile::TempDir,
    /// The folder asked for, inside the scratch tree.
    pub(crate) root: PathBuf,
    /// The commit fetched (40 hex digits).
    pub(crate) commit: String,
    /// What was left out (submodules), for people.
    pub(crate) warnings: Vec<String>,
}

/// Fetches `url` at `want` and writes out the skills under `subpath`.
pub(crate) async fn checkout(
    url: &str,
    want: Want<'_>,
    subpath: Option<&str>,
    timeout: Duration,
) -> Result<Checkout, InstallError> {
    let scratch = tempfile::Builder::new()
        .prefix("skillcat-git-")
        .tempdir()
        .map_err(|e| InstallError::io(&std::env::temp_dir(), e))?;
    let git = Git {
        home: scratch.path().join("home"),
        repo: scratch.path().join("repo.git"),
        timeout,
    };
    std::fs::create_dir(&git.home).map_err(|e| InstallError::io(&git.home, e))?;
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
        return Err(InstallError::Refused(vec![format!(
            "{url}: commit {commit} has no skill under {}",
            subpath.unwrap_or("its root")
        )]));
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
    if super::check_name(name).is_ok() {
        name.to_string()
    } else {
        "repo".into()
    }
}

/// Whether `s` is a full commit id.
pub(crate) fn is_commit_id(s: &str) -> bool {
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
    async fn run(&self, args: &[&str], input: Option<Vec<u8>>) -> Result<Vec<u8>, InstallError> {
        let shown = format!("git {}", args.join(" "));
        let mut cmd = self.command();
        cmd.args(args);
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().map_err(|e| {
            InstallError::Git(if e.kind() == std::io::ErrorKind::NotFound {
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
            Ok(Err(e)) => return Err(InstallError::Git(format!("{shown}: {e}"))),
            Err(_) => {
                return Err(InstallError::Git(format!(
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
            return Err(InstallError::Git(format!(
                "{shown} failed ({status}){}{text}",
                if text.is_empty() { "" } else { ": " }
            )));
        }
        Ok(out)
    }

    /// `git fetch --depth 1 URL REF`, then the commit it gave.
    async fn fetch_one(&self, url: &str, refspec: &str) -> Result<String, InstallError> {
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
            InstallError::Git(m) => {
                InstallError::Git(format!("cannot fetch {refspec} from {url}: {m}"))
            }
            other => other,
        })?;
        self.commit_of("FETCH_HEAD").await
    }

    /// Exactly commit `id`: fetched by id, else found in the branches and tags (and `also`).
    async fn fetch_commit(
        &self,
        url: &str,
        id: &str,
        also: Option<&str>,
    ) -> Result<String, InstallError> {
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
            InstallError::Git(m) => InstallError::Git(format!("cannot fetch from {url}: {m}")),
            other => other,
        })?;
        match self.commit_of(id).await {
            Ok(got) if got == id => Ok(got),
            _ => Err(InstallError::Refused(vec![format!(
                "{url} no longer has the pinned commit {id}"
            )])),
        }
    }

    async fn commit_of(&self, rev: &str) -> Result<String, InstallError> {
        let spec = format!("{rev}^{{commit}}");
        let out = self
            .run(&["rev-parse", "--verify", "--quiet", &spec], None)
            .await?;
        let id = String::from_utf8_lossy(&out).trim().to_string();
        if !is_commit_id(&id) {
            return Err(InstallError::Git(format!(
                "git rev-parse {spec} gave {id:?}, not a commit id"
            )));
        }
        Ok(id)
    }

    /// Every entry of the commit's tree.
    async fn tree(&self, commit: &str) -> Result<Vec<TreeEntry>, InstallError> {
        let out = self
            .run(&["ls-tree", "-r", "-l", "-z", "--full-tree", commit], None)
            .await?;
        let mut entries = Vec::new();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let bad =
                || InstallError::Git(format!("git ls-tree gave an unreadable line in {commit}"));
            let tab = record.iter().position(|b| *b == b'\t').ok_or_else(bad)?;
            let head = std::str::from_utf8(&record[..tab]).map_err(|_| bad())?;
            let path = String::from_utf8(record[tab + 1..].to_vec()).map_err(|_| {
                InstallError::Refused(vec![format!(
                    "commit {commit} has a path that is not UTF-8: {}",
                    String::from_utf8_lossy(&record[tab + 1..])
                )])
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
    async fn write_skills(
        &self,
        commit: &str,
        prefix: &str,
        dest: &Path,
    ) -> Result<Vec<String>, InstallError> {
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
            if e.path.starts_with(prefix)
                && !(in_skill(rel) || rel.ends_with(crate::sign::SIGNATURE_SUFFIX))
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
                InstallError::Refused(vec![format!(
                    "commit {commit}: the path {:?} is refused: {rule}",
                    e.path
                )])
            })?;
            let size = e.size.unwrap_or(0);
            if size > MAX_FILE {
                return Err(InstallError::Refused(vec![format!(
                    "commit {commit}: {} is {size} bytes; the limit is {MAX_FILE}",
                    e.path
                )]));
            }
            total += size;
            if wanted.len() >= MAX_FILES || total > MAX_BYTES {
                return Err(InstallError::Refused(vec![format!(
                    "commit {commit}: the skills under {} hold more than {MAX_FILES} files or {MAX_BYTES} bytes",
                    if prefix.is_empty() {
                        "the root"
                    } else {
                        prefix
                    }
                )]));
            }
            wanted.push(e);
        }
        std::fs::create_dir_all(dest).map_err(|e| InstallError::io(dest, e))?;
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
                .ok_or_else(|| InstallError::Git("git cat-file --batch ended early".into()))?;
            let header = String::from_utf8_lossy(&out[at..nl]).into_owned();
            let size: usize = header
                .split(' ')
                .nth(2)
                .and_then(|s| s.parse().ok())
                .filter(|_| header.starts_with(&e.oid))
                .ok_or_else(|| {
                    InstallError::Git(format!("git cat-file --batch: unexpected {header:?}"))
                })?;
            let body = out
                .get(nl + 1..nl + 1 + size)
                .ok_or_else(|| InstallError::Git("git cat-file --batch ended early".into()))?;
            at = nl + 1 + size + 1;
            let path = dest.join(&e.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|err| InstallError::io(parent, err))?;
            }
            write_entry(&path, &e.mode, body)?;
        }
        Ok(warnings)
    }
}

/// Writes one blob as a file (0644 or 0755) or a symbolic link.
fn write_entry(path: &Path, mode: &str, body: &[u8]) -> Result<(), InstallError> {
    use std::os::unix::fs::PermissionsExt;
    if mode == "120000" {
        let target = std::str::from_utf8(body).map_err(|_| {
            InstallError::Refused(vec![format!(
                "{}: a symbolic link whose target is not UTF-8",
                path.display()
            )])
        })?;
        return std::os::unix::fs::symlink(target, path).map_err(|e| InstallError::io(path, e));
    }
    std::fs::write(path, body).map_err(|e| InstallError::io(path, e))?;
    let perm = if mode == "100755" { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))
        .map_err(|e| InstallError::io(path, e))
}
