//! `trusted_projects`: the user trusts a project's own `skillcat.toml`, beside the loader that
//! narrows an untrusted one ([`Config::discover`]).
//!
//! Trusting records the project's canonical directory and the sha256 of its `skillcat.toml` in
//! the user's configuration (`~/.config/skillcat/skillcat.toml`): the trust is in that content,
//! and a file changed since counts as untrusted until trusted again
//! ([`Config::changed_project`]).

use std::path::{Path, PathBuf};

use super::{Config, ConfigError, Environment, FILE_NAME};

/// What [`trust_project`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectTrust {
    /// The user's configuration already trusted this content of the project's file.
    Already {
        /// The project's canonical directory.
        dir: PathBuf,
        /// The user's configuration file.
        file: PathBuf,
    },
    /// Recorded now.
    Trusted {
        /// The project's canonical directory.
        dir: PathBuf,
        /// The user's configuration file.
        file: PathBuf,
        /// `sha256:<hex>` of the project's `skillcat.toml`.
        digest: String,
    },
}

/// Why a project could not be trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The directory named is not one.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The directory named cannot be resolved.
    #[error("{}: {source}", path.display())]
    Directory {
        /// The directory as named.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No home directory to hold the user's configuration.
    #[error("no home directory ($HOME) to hold your configuration")]
    NoHome,
    /// The project has no readable `skillcat.toml`.
    #[error("{}: {source} (a project is trusted by the content of its skillcat.toml)", path.display())]
    ProjectFile {
        /// The project's file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The directory's name cannot be written in TOML.
    #[error("{} is not valid UTF-8", .0.display())]
    NotUtf8(PathBuf),
    /// The user's configuration could not be read, parsed, rewritten or written.
    #[error("{}: {reason}", file.display())]
    UserFile {
        /// The user's configuration file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
    /// The user's configuration is not a valid one.
    #[error("{0}")]
    Invalid(ConfigError),
}

impl TrustError {
    /// Whether the request itself is wrong (a directory, a missing file): a usage error rather
    /// than a failure to record it.
    pub fn is_usage(&self) -> bool {
        !matches!(self, TrustError::UserFile { .. } | TrustError::Invalid(_))
    }
}

/// Trusts the project in `dir` (relative to `env`'s working directory; default that
/// directory) with the present content of its `skillcat.toml`, recorded in the user's
/// configuration file (written 0600, its folder made 0700, replaced in one step).
pub fn trust_project(dir: Option<&Path>, env: &Environment) -> Result<ProjectTrust, TrustError> {
    let dir = dir.map_or_else(|| env.cwd.clone(), |d| env.cwd.join(d));
    let dir = match std::fs::canonicalize(&dir) {
        Ok(d) if d.is_dir() => d,
        Ok(d) => return Err(TrustError::NotADirectory(d)),
        Err(source) => return Err(TrustError::Directory { path: dir, source }),
    };
    let file = Config::user_file(env).ok_or(TrustError::NoHome)?;
    let user_file = |reason: String| TrustError::UserFile {
        file: file.clone(),
        reason,
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(user_file(e.to_string())),
    };
    let current = Config::parse(&text, Some(&file), env).map_err(TrustError::Invalid)?;
    let project_file = dir.join(FILE_NAME);
    let digest = match std::fs::read(&project_file) {
        Ok(bytes) => skillcat_core::digest::sha256_digest(&bytes),
        Err(source) => {
            return Err(TrustError::ProjectFile {
                path: project_file,
                source,
            });
        }
    };
    if current
        .trusted_projects
        .iter()
        .any(|t| t.trusts(&dir, &digest))
    {
        return Ok(ProjectTrust::Already { dir, file });
    }
    let Some(shown) = dir.to_str() else {
        return Err(TrustError::NotUtf8(dir));
    };
    let new_text = with_trusted(&text, shown, &digest).map_err(user_file)?;
    write_private(&file, &new_text).map_err(|e| user_file(e.to_string()))?;
    Ok(ProjectTrust::Trusted { dir, file, digest })
}

/// The configuration text with `dir` trusted with the file of digest `sha256` in
/// `trusted_projects` (an earlier entry for `dir` replaced). Without that key the line is put
/// first (top-level keys precede tables) and the rest kept as written; with it the file is
/// rewritten (comments are not kept).
fn with_trusted(text: &str, dir: &str, sha256: &str) -> Result<String, String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut entry = toml::Table::new();
    entry.insert("path".into(), toml::Value::String(dir.to_string()));
    entry.insert("sha256".into(), toml::Value::String(sha256.to_string()));
    match table.get_mut("trusted_projects") {
        None => Ok(format!(
            "trusted_projects = [{{ path = {}, sha256 = {} }}]\n{text}",
            quote(dir),
            quote(sha256)
        )),
        Some(toml::Value::Array(a)) => {
            a.retain(|v| match v {
                toml::Value::String(p) => p != dir,
                toml::Value::Table(t) => t.get("path").and_then(toml::Value::as_str) != Some(dir),
                _ => true,
            });
            a.push(toml::Value::Table(entry));
            toml::to_string(&table).map_err(|e| e.to_string())
        }
        Some(_) => Err("trusted_projects: not an array".into()),
    }
}

pub use skillcat_core::fs::create_private_dir;

/// Writes the file (0600, its directory 0700 when created), replacing it in one step.
fn write_private(file: &Path, text: &str) -> std::io::Result<()> {
    let dir = file
        .parent()
        .ok_or_else(|| std::io::Error::other("no directory"))?;
    create_private_dir(dir)?;
    skillcat_core::fs::AtomicWrite::new(0o600)
        .durability(skillcat_core::fs::Durability::Durable)
        .write(file, text.as_bytes())
}
