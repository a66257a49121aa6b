//! A SOURCE argument (or a lockfile entry) as install reads and records it. The spelling is
//! parsed by the core's one parser ([`SourceSpec::parse_in`]); this module adds what a lockfile
//! holds: how an entry names its source, and how a source is written back.

use std::path::Path;

use crate::source::absolute;
pub use skillcat_core::source::{SourceKind, SourceSpec};

use super::lockfile::{Entry, source_type};
use super::{InstallError, LOCKFILE_NAME};

/// Parses a SOURCE argument; relative paths are taken against `cwd` (see
/// [`SourceSpec::parse_in`]). A spelling that cannot be parsed is a usage error.
pub fn parse(typed: &str, cwd: &Path) -> Result<SourceSpec, InstallError> {
    SourceSpec::parse_in(typed, cwd).map_err(|e| match e {
        crate::Error::BadSourceSpec(why) => InstallError::Usage(why),
        other => InstallError::Source(other),
    })
}

/// What a lockfile records of a [`SourceSpec`], and how an entry names one.
pub trait LockSpec: Sized {
    /// The source a lockfile entry names; relative paths are taken against the lockfile's
    /// folder `lock_dir`.
    fn from_entry(name: &str, entry: &Entry, lock_dir: &Path) -> Result<Self, InstallError>;
    /// The lockfile's `sourceType` for this source.
    fn source_type(&self) -> &'static str;
    /// The lockfile's `source`: a path relative to the lockfile's folder `lock_dir` (as the
    /// `skills` CLI writes it: `./x`, `../x`, `.`), else the source as typed.
    fn lock_source(&self, lock_dir: &Path) -> String;
    /// The lockfile's `sourceUrl`: the clone URL of a git source, the URL of an index.
    fn source_url(&self) -> Option<String>;
}

impl LockSpec for SourceSpec {
    fn from_entry(name: &str, entry: &Entry, lock_dir: &Path) -> Result<SourceSpec, InstallError> {
        let bad = |why: String| InstallError::Lockfile {
            path: lock_dir.join(LOCKFILE_NAME).display().to_string(),
            reason: format!("skill {name:?}: {why}"),
        };
        let typed = entry.source.as_str();
        let mut spec = match entry.source_type.as_str() {
            source_type::REGISTRY if crate::source::is_postgres_url(typed) => {
                let mut spec = SourceSpec::new(SourceKind::Registry, typed);
                spec.url = Some(typed.to_string());
                spec
            }
            source_type::LOCAL | source_type::ARCHIVE | source_type::REGISTRY => {
                let path = absolute(lock_dir, typed.strip_prefix("sqlite:").unwrap_or(typed));
                let kind = match entry.source_type.as_str() {
                    source_type::ARCHIVE => SourceKind::Archive,
                    source_type::REGISTRY => SourceKind::Registry,
                    _ if path.is_file() => parse(typed, lock_dir)?.kind,
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
                let parsed = SourceSpec::parse_in(typed, lock_dir)
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
                    let folder = crate::path::document_folder(skill_path);
                    spec.subpath =
                        crate::source::clean_subpath(folder).map_err(|e| bad(e.to_string()))?;
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

    fn source_type(&self) -> &'static str {
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

    fn lock_source(&self, lock_dir: &Path) -> String {
        match &self.path {
            Some(path) => portable(path, lock_dir),
            // A lockfile is committed: a database's password stays in PGPASSWORD or ~/.pgpass.
            None if self.kind == SourceKind::Registry => without_password(&self.typed),
            None => self.typed.clone(),
        }
    }

    fn source_url(&self) -> Option<String> {
        match self.kind {
            SourceKind::Git if self.github => None,
            SourceKind::Git | SourceKind::WellKnown => self.url.clone(),
            _ => None,
        }
    }
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

/// A connection URL without the password of its user information (`user:pw@host` → `user@host`).
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockfile_fields_of_a_spec() {
        let s = parse("owner/repo/skills/x#dev", Path::new("/nowhere")).unwrap();
        assert_eq!(s.source_type(), "github");
        assert_eq!(s.source_url(), None);
        let s = parse("git+https://host/o/r#v1", Path::new("/nowhere")).unwrap();
        assert_eq!(s.source_type(), "git");
        assert_eq!(s.source_url().as_deref(), Some("https://host/o/r"));
        assert_eq!(s.lock_source(Path::new("/p")), "git+https://host/o/r#v1");
    }

    #[test]
    fn parse_errors_keep_their_kinds() {
        assert!(matches!(
            parse("git+ftp://h/r", Path::new("/")),
            Err(InstallError::Usage(_))
        ));
        assert!(matches!(
            parse("", Path::new("/")),
            Err(InstallError::Usage(_))
        ));
        assert!(
            parse("./nope", Path::new("/nowhere"))
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
