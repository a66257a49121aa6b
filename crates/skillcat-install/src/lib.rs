//! Installing skills where agents look for them, pinned and verified by a lockfile.
//!
//! ```text
//! Plan::add(opts, "git+https://host/o/r#v1", names, agents)     resolve → verify → plan
//!   │   SourceSpec::parse_in  directory · archive · registry (NAME@VERSION) · http(s) index · git
//!   │   fetch              git: the `git` program, locked down, into a scratch folder
//!   │   verify, in order   artifact sha256 → signature (keyring) → skill digest → validation
//!   └─▶ plan.apply()       staged beside each target, renamed into place under a journal,
//!                          then skills-lock.json renamed over the old one: all or nothing
//! Plan::install(opts, frozen) · Plan::update(…) · Plan::remove(…) · status(scope)
//! ```
//!
//! A **scope** is a project (the canonical copies in `.agents/skills/<name>`, the lockfile
//! `skills-lock.json` at its root) or the user's home (`~/.agents/skills`,
//! `~/.agents/skills-lock.json`). Each agent asked for gets its own folder pointing at the
//! canonical copy: a symbolic link, or a copy ([`AGENTS`] is the table).
//!
//! **All or nothing.** Every operation holds an exclusive lock on the scope's `.agents`
//! folder from reading the lockfile to writing it, so two processes never lose each other's
//! entries. New folders are staged next to their targets (same file system), a journal lists
//! every rename before the first one, and the new lockfile is renamed over the old one last:
//! that rename is the commit. A process killed at any point leaves a journal, and the next
//! operation in the scope (or [`recover`]) puts the old folders back unless the new lockfile
//! was already in place.

mod agents;
mod lockfile;
mod place;
mod plan;
mod plugin;
mod report;
mod spec;

use std::path::{Path, PathBuf};

// The layers below, under the names this crate's code uses.
pub(crate) use skillcat_core::{Error, ErrorKind, digest, document, path};
pub(crate) use skillcat_registry as registry;
pub(crate) use skillcat_sign as sign;

/// The core's source module and the sources above it, as the code names them.
pub(crate) mod source {
    pub(crate) use skillcat_core::source::*;
    pub(crate) use skillcat_sources::{OpenOptions, open_with};
}

pub use agents::{AGENTS, Agent, AgentEnv, CANONICAL_DIR, agent, parse_agents};
pub use lockfile::{Entry, LOCKFILE_NAME, LOCKFILE_VERSION, Lockfile, computed_hash, source_type};
pub use place::recover;
pub use plan::{
    Action, ActionKind, Candidate, FileDrift, LeftOut, Options, Plan, Progress, Report,
    SkillStatus, Targets, status,
};
pub use report::{
    ActionView, AddView, STATUS_HEADER, StatusView, action_lines, drift_summary, short_digest,
    status_table, update_line, update_lines,
};
pub use spec::{LockSpec, SourceKind, SourceSpec};

/// Why an install operation did not happen. Nothing was changed when one is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The request itself is wrong (an unknown agent, a source that cannot be parsed, a
    /// signature required without a keyring).
    #[error("{0}")]
    Usage(String),
    /// The lockfile cannot be read.
    #[error("{path}: {reason}")]
    Lockfile {
        /// The lockfile.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading a source failed.
    #[error(transparent)]
    Source(#[from] crate::Error),
    /// The `git` program failed or is missing.
    #[error("{0}")]
    Git(String),
    /// One or more skills were refused (each line says which and why).
    #[error("{}", .0.join("\n"))]
    Refused(Vec<String>),
}

impl InstallError {
    /// A file operation on `path` failed (an [`Error::Io`]).
    pub fn io(path: &Path, source: std::io::Error) -> InstallError {
        InstallError::Source(crate::Error::io(path.display().to_string(), source))
    }

    /// Whether the error is the caller's (a bad argument or an input that cannot be read),
    /// not a refusal or a failure of what was asked.
    pub fn is_usage(&self) -> bool {
        match self {
            InstallError::Usage(_) | InstallError::Lockfile { .. } => true,
            InstallError::Source(e) => {
                e.is_not_found() || matches!(e, crate::Error::UnsupportedSource(_))
            }
            _ => false,
        }
    }
}

/// Whether `name` can be a skill's folder: one component that keeps the path rules every store
/// keeps (`skillcat_core::path::check_canonical`: at most 255 bytes, no control, bidi or
/// invisible character, no name Windows reserves, so a lockfile works on every checkout) and
/// does not start with a dot. Returns why not.
pub fn check_name(name: &str) -> Result<(), BadName> {
    use crate::path::{PathRule, check_canonical};
    if name.is_empty() {
        return Err(BadName::Empty);
    }
    if name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(BadName::Escapes);
    }
    if name.starts_with('.') {
        return Err(BadName::Hidden);
    }
    check_canonical(name).map_err(|rule| match rule {
        PathRule::ComponentTooLong | PathRule::PathTooLong => BadName::TooLong,
        PathRule::ControlChar => BadName::ControlChar,
        PathRule::WindowsReserved => BadName::WindowsReserved,
        // No separator is left: `C:x` is the one absolute shape a single name can have.
        PathRule::Absolute => BadName::Drive,
        other => BadName::Rule(other),
    })
}

/// Why [`check_name`] refused a name as a skill's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadName {
    /// The name is empty.
    #[error("an empty name")]
    Empty,
    /// A separator, `.` or `..`.
    #[error("it would escape the skills folder")]
    Escapes,
    /// It starts with a dot.
    #[error("it starts with a dot (hidden, and skillcat's own staging names do)")]
    Hidden,
    /// Longer than 255 bytes.
    #[error("longer than 255 bytes")]
    TooLong,
    /// A control, bidi or invisible character.
    #[error("it holds a control or invisible character")]
    ControlChar,
    /// A name Windows reserves or cannot store.
    #[error("it is a name Windows reserves or cannot store")]
    WindowsReserved,
    /// `C:…`, which Windows reads as a drive.
    #[error("Windows reads it as a drive (`C:`)")]
    Drive,
    /// Another path rule.
    #[error("{0}")]
    Rule(crate::path::PathRule),
}

/// Where skills are installed: a project, or the user's home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    user: bool,
    root: PathBuf,
    env: AgentEnv,
}

impl Scope {
    /// A project whose root is `root`.
    pub fn project(root: impl Into<PathBuf>, env: AgentEnv) -> Scope {
        Scope {
            user: false,
            root: root.into(),
            env,
        }
    }

    /// The project `start` is in: the nearest folder at or above it holding a `skills-lock.json`
    /// or a `.git`, else `start` itself.
    pub fn find_project(start: &Path, env: AgentEnv) -> Scope {
        let root = start
            .ancestors()
            .find(|d| d.join(LOCKFILE_NAME).exists() || d.join(".git").exists())
            .unwrap_or(start);
        Scope::project(root, env)
    }

    /// The user's scope: the home directory of `env`.
    pub fn user(env: AgentEnv) -> Result<Scope, InstallError> {
        let Some(home) = env.home.clone() else {
            return Err(InstallError::Usage(
                "--global needs a home directory ($HOME is not set)".into(),
            ));
        };
        Ok(Scope {
            user: true,
            root: home,
            env,
        })
    }

    /// Whether this is the user's scope.
    pub fn is_user(&self) -> bool {
        self.user
    }

    /// The project's root, or the home directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The environment agents' folders are found with.
    pub fn env(&self) -> &AgentEnv {
        &self.env
    }

    /// Where the canonical copies are: `ROOT/.agents/skills`.
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join(CANONICAL_DIR)
    }

    /// The lockfile: `ROOT/skills-lock.json`, or `~/.agents/skills-lock.json` in user scope.
    pub fn lockfile(&self) -> PathBuf {
        if self.user {
            self.root.join(".agents").join(LOCKFILE_NAME)
        } else {
            self.root.join(LOCKFILE_NAME)
        }
    }

    /// Where the scope's lock and journal live: `ROOT/.agents`.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(".agents")
    }

    /// A path as the lockfile records it: relative to the project's root, `~/…` under the home
    /// directory in user scope, else absolute.
    pub fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if self.user => format!("~/{}", rel.display()),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// The scope's name for people: `project /path` or `user (~)`.
    pub fn describe(&self) -> String {
        if self.user {
            format!("user scope ({})", self.root.display())
        } else {
            format!("project {}", self.root.display())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_escape_are_refused() {
        for bad in ["", ".", "..", "../x", "a/b", "a\\b", ".hidden", "a\nb"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        // The path rules every store keeps hold for folder names too.
        let long = "a".repeat(256);
        for (bad, why) in [
            (long.as_str(), "longer than 255 bytes"),
            ("a\u{200b}b", "invisible"),
            ("a\u{202e}b", "invisible"),
            ("con", "Windows"),
            ("nul.txt", "Windows"),
            ("a:b", "Windows"),
            ("trailing.", "Windows"),
        ] {
            let err = check_name(bad).expect_err(bad);
            assert!(err.to_string().contains(why), "{bad:?}: {err}");
        }
        assert!(check_name(&"a".repeat(255)).is_ok());
        for good in ["pdf-forms", "a.b", "données"] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn scope_paths() {
        let env = AgentEnv {
            home: Some("/h".into()),
            ..AgentEnv::default()
        };
        let p = Scope::project("/p", env.clone());
        assert_eq!(p.lockfile(), Path::new("/p/skills-lock.json"));
        assert_eq!(
            p.shown(Path::new("/p/.claude/skills/a")),
            ".claude/skills/a"
        );
        let u = Scope::user(env).unwrap();
        assert_eq!(u.lockfile(), Path::new("/h/.agents/skills-lock.json"));
        assert_eq!(
            u.shown(Path::new("/h/.agents/skills/a")),
            "~/.agents/skills/a"
        );
        assert_eq!(u.shown(Path::new("/c/skills/a")), "/c/skills/a");
    }
}
