//! What a SOURCE argument (or a lockfile entry) names: a directory, an archive, a registry, an
//! HTTP index or a git repository.

use std::path::{Path, PathBuf};

use super::lockfile::{Entry, source_type};
use super::{InstallError, LOCKFILE_NAME};

/// The kinds of source skills are installed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A directory: one skill, or a tree of them.
    Local,
    /// A `.tar`, `.tar.gz`/`.tgz` or `.zip` file.
    Archive,
    /// A SQLite registry file; names may be `NAME@VERSION`.
    Registry,
    /// An `http(s)://` Agent Skills index, read through the verified cache.
    WellKnown,
    /// A git repository.
    Git,
    /// An OCI registry: `oci://HOST[:PORT]/REPO[:TAG|@sha256:…]`, one skill.
    Oci,
}

/// A parsed source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// What kind of source.
    pub kind: SourceKind,
    /// The source as the user typed it (or as the lockfile holds it).
    pub typed: String,
    /// The file or directory (absolute) of a local, archive or registry source.
    pub path: Option<PathBuf>,
    /// The index URL of an HTTP source; the clone URL of a git source.
    pub url: Option<String>,
    /// The branch, tag or commit asked for (git).
    pub git_ref: Option<String>,
    /// The folder inside the repository to install from (git), `/`-separated.
    pub subpath: Option<String>,
    /// Given as a GitHub `owner/repo` shorthand.
    pub github: bool,
}

impl SourceSpec {
    fn new(kind: SourceKind, typed: &str) -> SourceSpec {
        SourceSpec {
            kind,
            typed: typed.to_string(),
            path: None,
            url: None,
            git_ref: None,
            subpath: None,
            github: false,
        }
    }

    /// Parses a SOURCE argument; relative paths are taken against `cwd`.
    ///
    /// Git sources: `git+https://host/owner/repo[#ref][:path]` (and `git+file://`,
    /// `git+ssh://`, `git+git://`), `git://…`, `ssh://…`, an `https://…/repo.git` URL,
    /// `github:owner/repo` and the bare `owner/repo[/path]` shorthand (GitHub) when no such
    /// local path exists. `#ref` is a branch, tag or commit; `:path` (after the ref, or in the
    /// URL's path) a folder inside the repository.
    pub fn parse(typed: &str, cwd: &Path) -> Result<SourceSpec, InstallError> {
        let usage = |why: String| InstallError::Usage(format!("{typed}: {why}"));
        if typed.trim().is_empty() {
            return Err(InstallError::Usage("an empty SOURCE".into()));
        }
        if let Some(rest) = typed.strip_prefix("git+") {
            return git_spec(typed, rest, false);
        }
        if let Some(rest) = typed.strip_prefix("github:") {
            return github_spec(typed, rest);
        }
        if ["git://", "ssh://", "file://"]
            .iter()
            .any(|p| typed.starts_with(p))
            || typed.starts_with("git@")
        {
            return git_spec(typed, typed, false);
        }
        if typed.starts_with("oci://") {
            let mut spec = SourceSpec::new(SourceKind::Oci, typed);
            spec.url = Some(typed.to_string());
            return Ok(spec);
        }
        if typed.starts_with("http://") || typed.starts_with("https://") {
            let before_fragment = typed.split('#').next().unwrap_or(typed);
            if before_fragment.trim_end_matches('/').ends_with(".git") {
                return git_spec(typed, typed, false);
            }
            let mut spec = SourceSpec::new(SourceKind::WellKnown, typed);
            spec.url = Some(typed.to_string());
            return Ok(spec);
        }
        if let Some(db) = typed.strip_prefix("sqlite:") {
            let mut spec = SourceSpec::new(SourceKind::Registry, typed);
            spec.path = Some(absolute(cwd, db));
            return Ok(spec);
        }
        let path = absolute(cwd, typed);
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => {
                let mut spec = SourceSpec::new(SourceKind::Local, typed);
                spec.path = Some(path);
                Ok(spec)
            }
            Ok(m) if m.is_file() => file_spec(typed, path),
            Ok(_) => Err(usage("not a directory or a file".into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if is_shorthand(typed) {
                    return github_spec(typed, typed);
                }
                Err(InstallError::Source(crate::Error::NotFound(
                    typed.to_string(),
                )))
            }
            Err(e) => Err(InstallError::io(&path, e)),
        }
    }

    /// The source a lockfile entry names; relative paths are taken against the lockfile's
    /// folder `lock_dir`.
    pub fn from_entry(
        name: &str,
        entry: &Entry,
        lock_dir: &Path,
    ) -> Result<SourceSpec, InstallError> {
        let bad = |why: String| InstallError::Lockfile {
            path: lock_dir.join(LOCKFILE_NAME).display().to_string(),
            reason: format!("skill {name:?}: {why}"),
        };
        let typed = entry.source.as_str();
        let mut spec = match entry.source_type.as_str() {
            source_type::LOCAL | source_type::ARCHIVE | source_type::REGISTRY => {
                let path = absolute(lock_dir, typed.strip_prefix("sqlite:").unwrap_or(typed));
                let kind = match entry.source_type.as_str() {
                    source_type::ARCHIVE => SourceKind::Archive,
                    source_type::REGISTRY => SourceKind::Registry,
                    _ if path.is_file() => file_spec(typed, path.clone())?.kind,
                    _ => SourceKind::Local,
                };
                let mut spec = SourceSpec::new(kind, typed);
                spec.path = Some(path);
                spec
            }
            source_type::WELL_KNOWN => {
                let url = entry
                    .source_url
                    .clone()
                    .or_else(|| typed.starts_with("http").then(|| typed.to_string()))
                    .ok_or_else(|| bad("a well-known entry without a sourceUrl".into()))?;
                let mut spec = SourceSpec::new(SourceKind::WellKnown, typed);
                spec.url = Some(url);
                spec
            }
            source_type::OCI => {
                let mut spec = SourceSpec::new(SourceKind::Oci, typed);
                spec.url = Some(typed.to_string());
                spec
            }
            "git" | "gitlab" | source_type::GITHUB => {
                let parsed = SourceSpec::parse(typed, lock_dir)
                    .ok()
                    .filter(|s| s.kind == SourceKind::Git);
                let mut spec = parsed.unwrap_or_else(|| SourceSpec::new(SourceKind::Git, typed));
                if let Some(url) = &entry.source_url {
                    spec.url = Some(url.clone());
                }
                if spec.url.is_none() {
                    return Err(bad(format!(
                        "a {} entry whose source {typed:?} is not a repository URL and which has no sourceUrl",
                        entry.source_type
                    )));
                }
                spec.github = entry.source_type == source_type::GITHUB;
                spec.git_ref = entry.git_ref.clone();
                if let Some(skill_path) = &entry.skill_path {
                    let folder = skill_path
                        .strip_suffix("SKILL.md")
                        .or_else(|| skill_path.strip_suffix("skill.md"))
                        .unwrap_or(skill_path)
                        .trim_end_matches('/');
                    spec.subpath = clean_subpath(folder).map_err(bad)?;
                }
                spec
            }
            other => {
                return Err(bad(format!(
                    "sourceType {other:?} is not one skillcat installs from"
                )));
            }
        };
        spec.typed = typed.to_string();
        Ok(spec)
    }

    /// The lockfile's `sourceType` for this source.
    pub fn source_type(&self) -> &'static str {
        match self.kind {
            SourceKind::Local => source_type::LOCAL,
            SourceKind::Archive => source_type::ARCHIVE,
            SourceKind::Registry => source_type::REGISTRY,
            SourceKind::WellKnown => source_type::WELL_KNOWN,
            SourceKind::Git if self.github => source_type::GITHUB,
            SourceKind::Git => source_type::GIT,
            SourceKind::Oci => source_type::OCI,
        }
    }

    /// The lockfile's `source`: a path relative to the lockfile's folder `lock_dir` (as the
    /// `skills` CLI writes it: `./x`, `../x`, `.`), else the source as typed.
    pub fn lock_source(&self, lock_dir: &Path) -> String {
        match &self.path {
            Some(path) => portable(path, lock_dir),
            None => self.typed.clone(),
        }
    }

    /// The lockfile's `sourceUrl`: the clone URL of a git source, the URL of an index.
    pub fn source_url(&self) -> Option<String> {
        match self.kind {
            SourceKind::Git if self.github => None,
            SourceKind::Git | SourceKind::WellKnown => self.url.clone(),
            _ => None,
        }
    }

    /// What to fetch a git source from, for messages.
    pub fn shown(&self) -> String {
        match (&self.url, &self.path) {
            (Some(u), _) if self.kind == SourceKind::Git => {
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
            _ => self.typed.clone(),
        }
    }
}

/// A file SOURCE: a registry or an archive, by its magic bytes and name.
fn file_spec(typed: &str, path: PathBuf) -> Result<SourceSpec, InstallError> {
    use std::io::Read;
    let mut head = [0u8; crate::archive::SNIFF_LEN];
    let mut n = 0;
    let mut f = std::fs::File::open(&path).map_err(|e| InstallError::io(&path, e))?;
    while n < head.len() {
        match f
            .read(&mut head[n..])
            .map_err(|e| InstallError::io(&path, e))?
        {
            0 => break,
            k => n += k,
        }
    }
    let kind = if crate::source::is_registry_file(&path, &head[..n]) {
        SourceKind::Registry
    } else if crate::archive::sniff(&path, &head[..n]).is_some() {
        SourceKind::Archive
    } else {
        return Err(InstallError::Source(crate::Error::UnsupportedSource(
            typed.to_string(),
        )));
    };
    let mut spec = SourceSpec::new(kind, typed);
    spec.path = Some(path);
    Ok(spec)
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
fn github_spec(typed: &str, rest: &str) -> Result<SourceSpec, InstallError> {
    let (base, git_ref) = match rest.split_once('#') {
        Some((b, r)) => (b, Some(r)),
        None => (rest, None),
    };
    let mut parts = base.trim_matches('/').splitn(3, '/');
    let (Some(owner), Some(repo)) = (parts.next(), parts.next()) else {
        return Err(InstallError::Usage(format!(
            "{typed}: a GitHub source is owner/repo"
        )));
    };
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let mut spec = SourceSpec::new(SourceKind::Git, typed);
    spec.github = true;
    spec.url = Some(format!("https://github.com/{owner}/{repo}.git"));
    spec.git_ref = git_ref.filter(|r| !r.is_empty()).map(str::to_string);
    spec.subpath = clean_subpath(parts.next().unwrap_or(""))
        .map_err(|why| InstallError::Usage(format!("{typed}: {why}")))?;
    Ok(spec)
}

/// A git URL with an optional `#ref`, `#ref:path` or `:path` in its path.
fn git_spec(typed: &str, url: &str, github: bool) -> Result<SourceSpec, InstallError> {
    let usage = |why: String| InstallError::Usage(format!("{typed}: {why}"));
    let (base, git_ref, subpath) = match url.split_once('#') {
        Some((base, frag)) => match frag.split_once(':') {
            Some((r, p)) => (base, Some(r), Some(p)),
            None => (base, Some(frag), None),
        },
        None => {
            // `scheme://authority/path:sub` — the first ':' in the path; scp-like
            // `user@host:path:sub` — the second ':'.
            let path_start = match url.find("://") {
                Some(i) => url[i + 3..].find('/').map(|j| i + 3 + j),
                None => url.find(':').map(|i| i + 1),
            };
            match path_start.and_then(|s| url[s..].find(':').map(|j| s + j)) {
                Some(colon) => (&url[..colon], None, Some(&url[colon + 1..])),
                None => (url, None, None),
            }
        }
    };
    let scheme_ok = ["https://", "http://", "file://", "ssh://", "git://"]
        .iter()
        .any(|p| base.starts_with(p))
        || (base.contains('@') && base.contains(':') && !base.contains("://"));
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
    spec.github = github;
    spec.url = Some(base.to_string());
    spec.git_ref = git_ref.filter(|r| !r.is_empty()).map(str::to_string);
    if let Some(r) = &spec.git_ref
        && (r.starts_with('-') || r.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(usage(format!("{r:?} is not a branch, tag or commit")));
    }
    spec.subpath = clean_subpath(subpath.unwrap_or("")).map_err(usage)?;
    Ok(spec)
}

/// A folder inside a repository: `/`-separated, relative, canonical; `None` for the root.
fn clean_subpath(path: &str) -> Result<Option<String>, String> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() || trimmed == "." {
        return Ok(None);
    }
    crate::path::RelPath::new(trimmed)
        .map(|p| Some(p.as_str().to_string()))
        .map_err(|rule| format!("the folder {trimmed:?} in the repository: {rule}"))
}

fn absolute(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    // `a/./b/../c` → `a/c`, lexically (the `skills` CLI's `path.resolve`).
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

/// `path` relative to `dir` as the `skills` CLI writes a local source: `./x`, `../x`, `.`;
/// absolute when no relative path leads there.
fn portable(path: &Path, dir: &Path) -> String {
    let (p, d): (Vec<_>, Vec<_>) = (path.components().collect(), dir.components().collect());
    let common = p.iter().zip(&d).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return path.display().to_string();
    }
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), d.len() - common).collect();
    parts.extend(
        p[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    let rel = parts.join("/");
    if rel.is_empty() {
        ".".into()
    } else if rel == ".." || rel.starts_with("../") {
        rel
    } else {
        format!("./{rel}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(typed: &str) -> SourceSpec {
        SourceSpec::parse(typed, Path::new("/nowhere")).unwrap()
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
        assert_eq!(s.source_type(), "github");
        assert_eq!(s.source_url(), None);
        let s = git("https://example.com/o/r.git");
        assert_eq!(s.kind, SourceKind::Git);
        let s = git("https://example.com/skills/");
        assert_eq!(s.kind, SourceKind::WellKnown);
    }

    #[test]
    fn bad_git_sources() {
        for bad in [
            "git+ftp://h/r",
            "git+http://h/r",
            "git+file:///r#--upload-pack=x",
            "git+file:///r#v1:../x",
        ] {
            assert!(SourceSpec::parse(bad, Path::new("/")).is_err(), "{bad}");
        }
        assert!(
            SourceSpec::parse("./nope", Path::new("/nowhere"))
                .unwrap_err()
                .is_usage()
        );
    }

    #[test]
    fn portable_paths_like_the_cli() {
        let d = Path::new("/p/proj");
        assert_eq!(portable(Path::new("/p/proj/src"), d), "./src");
        assert_eq!(portable(Path::new("/p/src"), d), "../src");
        assert_eq!(portable(Path::new("/p/proj"), d), ".");
        assert_eq!(absolute(d, "../src/./a"), Path::new("/p/src/a"));
    }
}
