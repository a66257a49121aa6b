//! What a SOURCE spelling names, parsed once: a directory, an archive, a registry file, an HTTP
//! index, an OCI reference or a git repository (with its ref and folder).
//!
//! ```text
//! "skills/"                         Local      a directory (one skill, or a tree of them)
//! "x.tar.gz" "x.zip" "x.tar"        Archive    by magic bytes first, extension second
//! "x.db" "sqlite:PATH"              Registry   or any file with the SQLite magic
//! "postgres://USER@HOST:PORT/DB"    Registry   a registry in PostgreSQL (also postgresql://)
//! "https://host/" "…/index.json"    WellKnown  an Agent Skills index
//! "oci://HOST/REPO[:TAG|@sha256:…]" Oci        one skill in an OCI registry
//! "git+https://h/o/r#ref:path"      Git        also git://, ssh://, file://, user@host:path,
//! "https://h/o/r.git"                          an https URL ending in .git, github:o/r and —
//! "owner/repo[/path][#ref]"                    with parse_in, when no such path exists — o/r
//! ```
//!
//! `skillcat-sources` opens a [`SourceSpec`]; `skillcat-install` parses its SOURCE arguments
//! and lockfile entries into one. Every spelling is told apart here and nowhere else.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The kinds of store a SOURCE can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// A directory: one skill, or a tree of them.
    Local,
    /// A `.tar`, `.tar.gz`/`.tgz` or `.zip` file.
    Archive,
    /// A registry: a SQLite file ([`path`](SourceSpec::path)), or a PostgreSQL database
    /// (`postgres://…`, its [`url`](SourceSpec::url)); names may be `NAME@VERSION`.
    Registry,
    /// An `http(s)://` Agent Skills index, read through the verified cache.
    WellKnown,
    /// A git repository.
    Git,
    /// An OCI registry: `oci://HOST[:PORT]/REPO[:TAG|@sha256:…]`, one skill.
    Oci,
}

/// A parsed SOURCE: its kind and what opening it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// What kind of source.
    pub kind: SourceKind,
    /// The source as the user typed it (or as a lockfile holds it).
    pub typed: String,
    /// The file or directory of a local, archive or registry source (absolute when parsed with
    /// [`parse_in`](SourceSpec::parse_in), else as typed).
    pub path: Option<PathBuf>,
    /// The index URL of an HTTP source; the reference of an OCI source; the clone URL of a git
    /// source; the connection string of a registry in PostgreSQL.
    pub url: Option<String>,
    /// The branch, tag or commit asked for (git).
    pub git_ref: Option<String>,
    /// What to hold the source to, as its [`Source::id`](super::Source::id) named it when a
    /// lockfile pinned it: a git commit (40 hex digits; fetched by id, else found among the
    /// branches, the tags and [`git_ref`](SourceSpec::git_ref)), or the digest an OCI
    /// reference is read at whatever its tag says now.
    pub pin: Option<String>,
    /// The folder inside the repository to read (git), `/`-separated, canonical.
    pub subpath: Option<String>,
    /// Given as a GitHub `owner/repo` shorthand (or `github:owner/repo`).
    pub github: bool,
}

impl SourceSpec {
    /// A spec of `kind` for `typed`, with nothing else filled in.
    pub fn new(kind: SourceKind, typed: &str) -> SourceSpec {
        SourceSpec {
            kind,
            typed: typed.to_string(),
            path: None,
            url: None,
            git_ref: None,
            pin: None,
            subpath: None,
            github: false,
        }
    }

    /// Parses a SOURCE as a reading command takes it: paths stay as typed (relative to the
    /// process's directory), and a bare `owner/repo` is a path (a missing one is
    /// [`Error::NotFound`]); `github:owner/repo` names GitHub.
    pub fn parse(typed: &str) -> Result<SourceSpec> {
        parse(typed, None)
    }

    /// Parses a SOURCE as `add` takes it: relative paths are made absolute against `cwd`
    /// (lexically, `a/./b/../c` → `a/c`), and a bare `owner/repo[/path][#ref]` that is no
    /// existing path is a GitHub repository.
    ///
    /// Git sources: `git+https://host/owner/repo[#ref][:path]` (and `git+file://`,
    /// `git+ssh://`, `git+git://`), `git://…`, `ssh://…`, `file://…`, `user@host:path`, an
    /// `https://…/repo.git` URL, `github:owner/repo` and the shorthand. `#ref` is a branch, tag
    /// or commit; `:path` (after the ref, or in the URL's path) a folder inside the repository.
    pub fn parse_in(typed: &str, cwd: &Path) -> Result<SourceSpec> {
        parse(typed, Some(cwd))
    }

    /// Whether `typed` is spelled as a path on this machine (a directory, an archive or a
    /// registry file named by its path), rather than as a URL, a `sqlite:`, `oci://`, `git+`
    /// or `github:` specification or a `user@host:path` repository. Tells by the spelling
    /// alone, touching no file: a bare `owner/repo` is a path here. A path spelling is what a
    /// configuration file resolves against its own folder, and what a command may read as a
    /// file.
    pub fn is_path_spelling(typed: &str) -> bool {
        scheme_kind(typed).is_none()
    }

    /// Whether this spec names a store on this machine by its path (a directory, an archive,
    /// a registry file), not a remote one.
    pub fn is_local(&self) -> bool {
        match self.kind {
            SourceKind::Local | SourceKind::Archive => true,
            // A registry in a database is wherever the database is.
            SourceKind::Registry => self.url.is_none(),
            _ => false,
        }
    }

    /// What to fetch a git source from, for messages (`URL#ref:path`); a database without its
    /// password; else the source as typed.
    pub fn shown(&self) -> String {
        match &self.url {
            Some(u) if self.kind == SourceKind::Git => {
                let mut s = u.clone();
                if let Some(r) = &self.git_ref {
                    s.push('#');
                    s.push_str(r);
                }
                if let Some(p) = &self.subpath {
                    s.push(':');
                    s.push_str(p);
                }
                s
            }
            Some(u) if self.kind == SourceKind::Registry => redact_password(u),
            _ => self.typed.clone(),
        }
    }
}

/// Whether `typed` names a registry in PostgreSQL: `postgres://…` or `postgresql://…` (any
/// case).
pub fn is_postgres_url(typed: &str) -> bool {
    let lower = typed.get(..13).unwrap_or(typed).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// A connection URL with the password of its user information (if any) replaced by `***`,
/// for messages.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

impl std::fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.typed)
    }
}

impl std::str::FromStr for SourceSpec {
    type Err = Error;

    /// [`SourceSpec::parse`].
    fn from_str(s: &str) -> Result<SourceSpec> {
        SourceSpec::parse(s)
    }
}

/// The kind a spelling names by its prefix or URL alone, without touching any file.
fn scheme_kind(typed: &str) -> Option<SourceKind> {
    if typed.starts_with("git+")
        || typed.starts_with("github:")
        || ["git://", "ssh://", "file://"]
            .iter()
            .any(|p| typed.starts_with(p))
        || typed.starts_with("git@")
    {
        return Some(SourceKind::Git);
    }
    if typed.starts_with("oci://") {
        return Some(SourceKind::Oci);
    }
    if typed.starts_with("http://") || typed.starts_with("https://") {
        let before_fragment = typed.split('#').next().unwrap_or(typed);
        if before_fragment.trim_end_matches('/').ends_with(".git") {
            return Some(SourceKind::Git);
        }
        return Some(SourceKind::WellKnown);
    }
    if typed.starts_with("sqlite:") || is_postgres_url(typed) {
        return Some(SourceKind::Registry);
    }
    // Any other `scheme://`: not a path, and no kind skillcat knows.
    if let Some((scheme, _)) = typed.split_once("://")
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Some(SourceKind::WellKnown);
    }
    None
}

fn parse(typed: &str, cwd: Option<&Path>) -> Result<SourceSpec> {
    if typed.trim().is_empty() {
        return Err(Error::BadSourceSpec("an empty SOURCE".into()));
    }
    if let Some(rest) = typed.strip_prefix("git+") {
        return git_spec(typed, rest);
    }
    if let Some(rest) = typed.strip_prefix("github:") {
        return github_spec(typed, rest);
    }
    match scheme_kind(typed) {
        Some(SourceKind::Git) => return git_spec(typed, typed),
        Some(SourceKind::Oci) => {
            let mut spec = SourceSpec::new(SourceKind::Oci, typed);
            spec.url = Some(typed.to_string());
            return Ok(spec);
        }
        Some(SourceKind::WellKnown)
            if typed.starts_with("http://") || typed.starts_with("https://") =>
        {
            let mut spec = SourceSpec::new(SourceKind::WellKnown, typed);
            spec.url = Some(typed.to_string());
            return Ok(spec);
        }
        Some(SourceKind::WellKnown) => {
            return Err(Error::UnsupportedSource(typed.to_string()));
        }
        Some(SourceKind::Registry) if is_postgres_url(typed) => {
            let mut spec = SourceSpec::new(SourceKind::Registry, typed);
            spec.url = Some(typed.to_string());
            return Ok(spec);
        }
        Some(SourceKind::Registry) => {
            let db = typed.strip_prefix("sqlite:").unwrap_or(typed);
            let mut spec = SourceSpec::new(SourceKind::Registry, typed);
            spec.path = Some(resolve(cwd, db));
            return Ok(spec);
        }
        _ => {}
    }
    let path = resolve(cwd, typed);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => {
            let mut spec = SourceSpec::new(SourceKind::Local, typed);
            spec.path = Some(path);
            Ok(spec)
        }
        Ok(m) if m.is_file() => file_spec(typed, path),
        Ok(_) => Err(Error::UnsupportedSource(typed.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if cwd.is_some() && is_shorthand(typed) {
                return github_spec(typed, typed);
            }
            Err(Error::NotFound(typed.to_string()))
        }
        Err(e) => Err(Error::io(path.display().to_string(), e)),
    }
}

/// Whether a file is a SQLite registry: it has the SQLite magic, or is named `.db`/`.sqlite`
/// (any case) and is not an archive (so an empty new file can be named as a registry).
pub fn is_registry_file(path: &Path, first_bytes: &[u8]) -> bool {
    if first_bytes.starts_with(SQLITE_MAGIC) {
        return true;
    }
    let named = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("db") || e.eq_ignore_ascii_case("sqlite"));
    named && crate::archive::sniff(path, first_bytes).is_none()
}

/// The first 16 bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// A file SOURCE: a registry or an archive, by its magic bytes and name.
fn file_spec(typed: &str, path: PathBuf) -> Result<SourceSpec> {
    let mut head = [0u8; crate::archive::SNIFF_LEN];
    let n = read_head(&path, &mut head).map_err(|e| Error::io(path.display().to_string(), e))?;
    let kind = if is_registry_file(&path, &head[..n]) {
        SourceKind::Registry
    } else if crate::archive::sniff(&path, &head[..n]).is_some() {
        SourceKind::Archive
    } else {
        return Err(Error::UnsupportedSource(typed.to_string()));
    };
    let mut spec = SourceSpec::new(kind, typed);
    spec.path = Some(path);
    Ok(spec)
}

fn read_head(path: &Path, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// `owner/repo` or `owner/repo/path…`, no scheme, not a relative or absolute path.
fn is_shorthand(typed: &str) -> bool {
    let base = typed.split('#').next().unwrap_or(typed);
    !base.contains(':')
        && !base.starts_with('.')
        && !base.starts_with('/')
        && base.split('/').filter(|s| !s.is_empty()).count() >= 2
        && base
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// `owner/repo[/path][#ref]` on GitHub.
fn github_spec(typed: &str, rest: &str) -> Result<SourceSpec> {
    let (base, git_ref) = match rest.split_once('#') {
        Some((b, r)) => (b, Some(r)),
        None => (rest, None),
    };
    let mut parts = base.trim_matches('/').splitn(3, '/');
    let (Some(owner), Some(repo)) = (parts.next(), parts.next()) else {
        return Err(Error::BadSourceSpec(format!(
            "{typed}: a GitHub source is owner/repo"
        )));
    };
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let mut spec = SourceSpec::new(SourceKind::Git, typed);
    spec.github = true;
    spec.url = Some(format!("https://github.com/{owner}/{repo}.git"));
    spec.git_ref = git_ref.filter(|r| !r.is_empty()).map(str::to_string);
    spec.subpath = clean_subpath(parts.next().unwrap_or(""))
        .map_err(|why| Error::BadSourceSpec(format!("{typed}: {why}")))?;
    Ok(spec)
}

/// A git URL with an optional `#ref`, `#ref:path` or `:path` in its path.
fn git_spec(typed: &str, url: &str) -> Result<SourceSpec> {
    let usage = |why: String| Error::BadSourceSpec(format!("{typed}: {why}"));
    let (base, git_ref, subpath) = match url.split_once('#') {
        Some((base, frag)) => match frag.split_once(':') {
            Some((r, p)) => (base, Some(r), Some(p)),
            None => (base, Some(frag), None),
        },
        None => {
            // `scheme://authority/path:sub` — the first ':' in the path; scp-like
            // `user@host:path:sub` — the second ':'.
            let path_start = match url.split_once("://") {
                Some((scheme, rest)) => rest.find('/').map(|j| scheme.len() + 3 + j),
                None => url.find(':').map(|i| i + 1),
            };
            match path_start.and_then(|s| url[s..].find(':').map(|j| s + j)) {
                Some(colon) => (&url[..colon], None, Some(&url[colon + 1..])),
                None => (url, None, None),
            }
        }
    };
    let has_scheme = base.split_once("://").is_some();
    let scheme_ok = ["https://", "http://", "file://", "ssh://", "git://"]
        .iter()
        .any(|p| base.starts_with(p))
        || (base.contains('@') && base.contains(':') && !has_scheme);
    if !scheme_ok {
        return Err(usage(
            "a git source is git+https://, git+file://, git+ssh://, git:// or user@host:path"
                .into(),
        ));
    }
    if base.starts_with("http://") {
        return Err(usage(
            "plain http:// is not allowed for git (use https://, ssh://, git:// or file://)".into(),
        ));
    }
    let mut spec = SourceSpec::new(SourceKind::Git, typed);
    spec.url = Some(base.to_string());
    spec.git_ref = git_ref.filter(|r| !r.is_empty()).map(str::to_string);
    if let Some(r) = &spec.git_ref
        && (r.starts_with('-') || r.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(usage(format!("{r:?} is not a branch, tag or commit")));
    }
    spec.subpath = clean_subpath(subpath.unwrap_or("")).map_err(|e| usage(e.to_string()))?;
    Ok(spec)
}

/// A folder inside a repository: `/`-separated, relative, canonical; `None` for the root.
/// Returns why not.
pub fn clean_subpath(path: &str) -> std::result::Result<Option<String>, BadFolder> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() || trimmed == "." {
        return Ok(None);
    }
    crate::path::RelPath::new(trimmed)
        .map(|p| Some(p.as_str().to_string()))
        .map_err(|rule| BadFolder {
            folder: trimmed.to_string(),
            rule,
        })
}

/// A folder inside a repository that [`clean_subpath`] refuses.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the folder {folder:?} in the repository: {rule}")]
pub struct BadFolder {
    /// The folder as given (slashes at its ends trimmed).
    pub folder: String,
    /// The path rule it breaks.
    pub rule: crate::path::PathRule,
}

/// `path` against `cwd` (lexically normalised), or as typed without one.
fn resolve(cwd: Option<&Path>, path: &str) -> PathBuf {
    match cwd {
        Some(base) => absolute(base, path),
        None => PathBuf::from(path),
    }
}

/// `path` joined to `base` when relative, then `a/./b/../c` → `a/c`, lexically (the `skills`
/// CLI's `path.resolve`).
pub fn absolute(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(typed: &str) -> SourceSpec {
        SourceSpec::parse_in(typed, Path::new("/nowhere")).unwrap()
    }

    #[test]
    fn git_sources() {
        let s = git("git+https://host/o/r#v1:skills/pdf");
        assert_eq!(s.kind, SourceKind::Git);
        assert_eq!(s.url.as_deref(), Some("https://host/o/r"));
        assert_eq!(s.git_ref.as_deref(), Some("v1"));
        assert_eq!(s.subpath.as_deref(), Some("skills/pdf"));
        let s = git("git+file:///srv/repo:skills");
        assert_eq!(s.url.as_deref(), Some("file:///srv/repo"));
        assert_eq!((s.git_ref, s.subpath.as_deref()), (None, Some("skills")));
        let s = git("git+https://host:8443/o/r");
        assert_eq!(s.url.as_deref(), Some("https://host:8443/o/r"));
        let s = git("git://127.0.0.1:9418/repo#main");
        assert_eq!(s.url.as_deref(), Some("git://127.0.0.1:9418/repo"));
        assert_eq!(s.git_ref.as_deref(), Some("main"));
        let s = git("owner/repo/skills/x#dev");
        assert!(s.github);
        assert_eq!(s.url.as_deref(), Some("https://github.com/owner/repo.git"));
        assert_eq!(s.subpath.as_deref(), Some("skills/x"));
        let s = git("https://example.com/o/r.git");
        assert_eq!(s.kind, SourceKind::Git);
        let s = git("https://example.com/skills/");
        assert_eq!(s.kind, SourceKind::WellKnown);
        let s = git("git@example.com:o/r.git:skills");
        assert_eq!(s.url.as_deref(), Some("git@example.com:o/r.git"));
        assert_eq!(s.subpath.as_deref(), Some("skills"));
    }

    #[test]
    fn one_spelling_one_kind_with_or_without_a_cwd() {
        // A repository URL is git to every command, not an index to the reading ones.
        for typed in [
            "https://example.com/o/r.git",
            "https://example.com/o/r.git/",
            "https://example.com/o/r.git#main",
            "git+https://example.com/o/r",
            "github:o/r",
        ] {
            assert_eq!(
                SourceSpec::parse(typed).unwrap().kind,
                SourceKind::Git,
                "{typed}"
            );
            assert_eq!(git(typed).kind, SourceKind::Git, "{typed}");
        }
        let s = SourceSpec::parse("oci://localhost:5000/skills/pdf:1.0").unwrap();
        assert_eq!(s.kind, SourceKind::Oci);
        assert_eq!(
            s.url.as_deref(),
            Some("oci://localhost:5000/skills/pdf:1.0")
        );
        let s = SourceSpec::parse("sqlite:rel/x.db").unwrap();
        assert_eq!(s.kind, SourceKind::Registry);
        assert_eq!(s.path.as_deref(), Some(Path::new("rel/x.db")));
        assert_eq!(
            git("sqlite:rel/x.db").path.as_deref(),
            Some(Path::new("/nowhere/rel/x.db"))
        );
        assert!(matches!(
            SourceSpec::parse("ftp://h/x"),
            Err(Error::UnsupportedSource(_))
        ));
        // Without a cwd a bare owner/repo is a path, and a missing one is not found.
        assert!(
            SourceSpec::parse("no-such-owner/no-such-repo")
                .unwrap_err()
                .is_not_found()
        );
        assert!(matches!(
            SourceSpec::parse(" "),
            Err(Error::BadSourceSpec(_))
        ));
    }

    #[test]
    fn files_and_folders_by_what_they_hold() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("reg.bin");
        std::fs::write(&db, b"SQLite format 3\0 and the rest").unwrap();
        let tgz = dir.path().join("x.tar.gz");
        std::fs::write(&tgz, [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
        let txt = dir.path().join("notes.txt");
        std::fs::write(&txt, b"hello").unwrap();
        let kind = |p: &Path| SourceSpec::parse(p.to_str().unwrap()).map(|s| s.kind);
        assert_eq!(kind(dir.path()).unwrap(), SourceKind::Local);
        assert_eq!(kind(&db).unwrap(), SourceKind::Registry);
        assert_eq!(kind(&tgz).unwrap(), SourceKind::Archive);
        assert!(matches!(kind(&txt), Err(Error::UnsupportedSource(_))));
        let s = SourceSpec::parse_in("x.tar.gz", dir.path()).unwrap();
        assert_eq!(s.path.as_deref(), Some(tgz.as_path()));
        assert!(s.is_local());
    }

    #[test]
    fn path_spellings() {
        for path in [
            "skills",
            "./x.tar.gz",
            "/abs/x.db",
            "owner/repo",
            "~/skills",
            "C:x",
        ] {
            assert!(SourceSpec::is_path_spelling(path), "{path}");
        }
        for not in [
            "https://h/",
            "http://h/x.git",
            "oci://h/r",
            "sqlite:x.db",
            "git+file:///r",
            "git@h:o/r",
            "github:o/r",
            "file:///r",
            "ftp://h/x",
        ] {
            assert!(!SourceSpec::is_path_spelling(not), "{not}");
        }
    }

    #[test]
    fn bad_git_sources() {
        for bad in [
            "git+ftp://h/r",
            "git+http://h/r",
            "http://h/r.git",
            "git+file:///r#--upload-pack=x",
            "git+file:///r#v1:../x",
            "github:justone",
        ] {
            assert!(
                matches!(
                    SourceSpec::parse_in(bad, Path::new("/")),
                    Err(Error::BadSourceSpec(_))
                ),
                "{bad}"
            );
        }
        assert!(
            SourceSpec::parse_in("./nope", Path::new("/nowhere"))
                .unwrap_err()
                .is_not_found()
        );
    }

    #[test]
    fn a_postgres_url_is_a_registry_shown_without_its_password() {
        for typed in [
            "postgres://me:secret@127.0.0.1:5432/skills",
            "PostgreSQL://me:secret@db/skills?sslmode=require",
        ] {
            let s = SourceSpec::parse(typed).unwrap();
            assert_eq!(s.kind, SourceKind::Registry);
            assert_eq!(s.url.as_deref(), Some(typed));
            assert_eq!(s.path, None);
            assert!(!s.is_local());
            assert!(!s.shown().contains("secret"), "{}", s.shown());
            assert!(!SourceSpec::is_path_spelling(typed));
        }
        assert_eq!(
            redact_password("postgres://me:secret@h/d"),
            "postgres://me:***@h/d"
        );
        assert_eq!(redact_password("postgres://me@h/d"), "postgres://me@h/d");
        assert!(!is_postgres_url("postgres.db"));
    }

    #[test]
    fn shown_names_the_ref_and_folder() {
        let s = git("git+https://host/o/r#v1:skills/pdf");
        assert_eq!(s.shown(), "https://host/o/r#v1:skills/pdf");
        assert_eq!(s.to_string(), "git+https://host/o/r#v1:skills/pdf");
        assert_eq!(
            absolute(Path::new("/p/proj"), "../src/./a"),
            Path::new("/p/src/a")
        );
    }
}
