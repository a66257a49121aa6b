//! Where a user's workspaces live by default: a directory of the user's own, never a name in a
//! shared, world-writable directory (`/tmp`) that another local user could create first.
//!
//! ```text
//! $XDG_RUNTIME_DIR/skillcat-ws          the runtime directory (0700, the user's)
//! $XDG_CACHE_HOME/skillcat/ws           else the cache directory ($HOME/.cache/skillcat/ws)
//! /run/skillcat-ws                      else, on a root host, root's own run directory
//! ```
//!
//! A candidate is taken by allow-list: its directory exists (or, for the cache, the directory
//! that would hold it does), is a real directory (not a link), belongs to this user (or root),
//! and nobody else may create names in it (no group or other write bit). On a root host, where
//! scripts run as another uid, every directory above it must also let others pass. The first
//! candidate that qualifies is used; none qualifying leaves the last one tried, which
//! [`WorkspaceBase::open`](super::WorkspaceBase::open) then refuses with a clear error (it
//! checks the directory holding any base the same way, [`check_holder`]). A name that is taken
//! inside a qualifying directory (a link, another owner's directory) is refused by `open`,
//! never used: only this user (or root) could have put it there.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What the choice looks at of one directory (from `lstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirFacts {
    /// A real directory, not a link to one.
    pub(crate) is_dir: bool,
    pub(crate) uid: u32,
    /// Permission bits.
    pub(crate) mode: u32,
    /// Whether this directory and every one above it let others pass (`o+x`).
    pub(crate) passable: bool,
}

impl DirFacts {
    /// The facts of `dir` on disk; `None` when it does not exist (or cannot be read).
    fn of(dir: &Path) -> Option<DirFacts> {
        let meta = std::fs::symlink_metadata(dir).ok()?;
        let passable = dir
            .ancestors()
            .all(|a| std::fs::metadata(a).is_ok_and(|m| m.mode() & 0o001 != 0));
        Some(DirFacts {
            is_dir: meta.is_dir(),
            uid: meta.uid(),
            mode: meta.mode() & 0o7777,
            passable,
        })
    }
}

/// One place the base may go: the directory that must qualify, and the base's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The existing directory that must qualify (for the cache: the nearest existing one of
    /// the cache directory and the home).
    pub(crate) holder: PathBuf,
    /// The base directory.
    pub(crate) base: PathBuf,
}

/// The candidates, in order, from the environment (`None` for an unset or relative value).
pub(crate) fn candidates(
    runtime: Option<PathBuf>,
    cache: Option<PathBuf>,
    home: Option<PathBuf>,
    root_host: bool,
    exists: impl Fn(&Path) -> bool,
) -> Vec<Candidate> {
    let abs = |p: Option<PathBuf>| p.filter(|p| p.is_absolute());
    let mut out = Vec::new();
    if let Some(r) = abs(runtime) {
        out.push(Candidate {
            base: r.join("skillcat-ws"),
            holder: r,
        });
    }
    let home = abs(home);
    if let Some(c) = abs(cache).or_else(|| home.as_ref().map(|h| h.join(".cache"))) {
        // A cache directory not made yet is made inside the home: the home must qualify.
        let holder = match (exists(&c), &home) {
            (false, Some(h)) if c.starts_with(h) => h.clone(),
            _ => c.clone(),
        };
        out.push(Candidate {
            base: c.join("skillcat/ws"),
            holder,
        });
    }
    if root_host {
        out.push(Candidate {
            holder: PathBuf::from("/run"),
            base: PathBuf::from("/run/skillcat-ws"),
        });
    }
    out
}

/// Whether a directory may hold the base: a real directory of `me` (or root) that nobody else
/// may write in; on a root host (`need_pass`), one others can pass through.
pub(crate) fn qualifies(facts: Option<DirFacts>, me: u32, need_pass: bool) -> bool {
    facts.is_some_and(|f| {
        f.is_dir && (f.uid == me || f.uid == 0) && f.mode & 0o022 == 0 && (!need_pass || f.passable)
    })
}

/// The first candidate whose holder qualifies, else the last candidate (refused later, with
/// a message naming it), else `None` (no candidate at all).
pub(crate) fn choose(
    candidates: &[Candidate],
    facts: impl Fn(&Path) -> Option<DirFacts>,
    me: u32,
    need_pass: bool,
) -> Option<PathBuf> {
    candidates
        .iter()
        .find(|c| qualifies(facts(&c.holder), me, need_pass))
        .or(candidates.last())
        .map(|c| c.base.clone())
}

/// The default base for this process: see the module docs. `root_host`: scripts run as
/// another uid, so the base must be passable by others.
pub(crate) fn default_base(root_host: bool, dirs: &super::workspace::UserDirs) -> PathBuf {
    let list = candidates(
        dirs.runtime_dir.clone(),
        dirs.cache_home.clone(),
        dirs.home.clone(),
        root_host,
        |p| std::fs::symlink_metadata(p).is_ok(),
    );
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    choose(&list, DirFacts::of, me, root_host)
        // No home, no runtime directory: the shared temporary directory's name, which `open`
        // refuses by name (others may write there) rather than use.
        .unwrap_or_else(|| std::env::temp_dir().join(format!("skillcat-ws-{me}")))
}

/// Refuses to keep workspaces in `holder` (the base's parent, canonical) unless it
/// [`qualifies`]: a name in a directory others may write in could have been made by them.
pub(crate) fn check_holder(holder: &Path, need_pass: bool) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if qualifies(DirFacts::of(holder), me, need_pass) {
        return Ok(());
    }
    Err(format!(
        "{}: not a directory of uid {me} that only it may write in{} (refusing to keep \
         workspaces there: set $XDG_RUNTIME_DIR to a private directory)",
        holder.display(),
        if need_pass {
            " and others may pass through"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: u32 = 1000;

    fn dir(uid: u32, mode: u32, passable: bool) -> Option<DirFacts> {
        Some(DirFacts {
            is_dir: true,
            uid,
            mode,
            passable,
        })
    }

    /// Each way a holder can be unfit: one named case, refused; the fit ones taken.
    #[test]
    fn a_holder_qualifies_only_when_private_to_the_user() {
        let link = Some(DirFacts {
            is_dir: false,
            uid: ME,
            mode: 0o777,
            passable: true,
        });
        for (name, facts, need_pass, want) in [
            (
                "the user's 0700 runtime directory",
                dir(ME, 0o700, false),
                false,
                true,
            ),
            ("root's 0755 directory", dir(0, 0o755, true), false, true),
            ("missing", None, false, false),
            ("a symbolic link", link, false, false),
            (
                "another user's directory",
                dir(1001, 0o700, false),
                false,
                false,
            ),
            ("world-writable /tmp", dir(0, 0o1777, true), false, false),
            ("group-writable", dir(ME, 0o770, false), false, false),
            ("0700 on a root host", dir(0, 0o700, false), true, false),
            ("0711 on a root host", dir(0, 0o711, true), true, true),
        ] {
            assert_eq!(qualifies(facts, ME, need_pass), want, "{name}");
        }
    }

    #[test]
    fn the_runtime_directory_then_the_cache_then_roots_run_directory() {
        let all = candidates(
            Some("/run/user/1000".into()),
            None,
            Some("/home/u".into()),
            true,
            |_| true,
        );
        let bases: Vec<&Path> = all.iter().map(|c| c.base.as_path()).collect();
        assert_eq!(
            bases,
            [
                Path::new("/run/user/1000/skillcat-ws"),
                Path::new("/home/u/.cache/skillcat/ws"),
                Path::new("/run/skillcat-ws"),
            ]
        );
        // Relative values are ignored; a cache not made yet is judged by the home holding it.
        let all = candidates(
            Some("rel".into()),
            None,
            Some("/home/u".into()),
            false,
            |_| false,
        );
        assert_eq!(
            all,
            [Candidate {
                holder: "/home/u".into(),
                base: "/home/u/.cache/skillcat/ws".into(),
            }]
        );
        // A shared runtime directory is passed over for the cache.
        let all = candidates(
            Some("/tmp".into()),
            None,
            Some("/home/u".into()),
            false,
            |_| true,
        );
        let facts = |p: &Path| {
            if p == Path::new("/tmp") {
                dir(0, 0o1777, true)
            } else {
                dir(ME, 0o700, false)
            }
        };
        assert_eq!(
            choose(&all, facts, ME, false),
            Some(PathBuf::from("/home/u/.cache/skillcat/ws"))
        );
        // Nothing qualifies: the last candidate, for `open` to refuse by name.
        assert_eq!(
            choose(&all, |_| None, ME, false),
            Some(PathBuf::from("/home/u/.cache/skillcat/ws"))
        );
        assert_eq!(choose(&[], |_| None, ME, false), None);
    }
}
