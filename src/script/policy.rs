//! Grants against the session policy, and (until the capability module provides it) the grant a
//! skill's frontmatter asks for, intersected with a ceiling.
//!
//! [`check_within`] is pure: it compares paths the runner has already made absolute and
//! canonical. [`grant_from_frontmatter`] is the one place that reads `fs_read`, `fs_write`,
//! `network`, `timeout` and `trust`; it is meant to be swapped for the capability module's
//! intersection once that exists.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use super::ScriptError;
use crate::capability::{Grant, Trust};
use crate::document::{Map, Value};

/// The timeout of a run when nothing says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Checks that `grant` asks for nothing `policy` does not allow: every read path under a policy
/// read or write root, every write path under a policy write root, network only if the policy
/// has it, a timeout no longer than the policy's, `core` trust only under a `core` policy.
/// Paths must be absolute and free of `.`/`..` (the runner canonicalises them first).
pub fn check_within(grant: &Grant, policy: &Grant) -> Result<(), ScriptError> {
    let widened = |reason: String| Err(ScriptError::PolicyWidened { reason });
    let read_roots: Vec<&PathBuf> = policy.fs_read.iter().chain(&policy.fs_write).collect();
    for p in &grant.fs_read {
        if !is_plain_absolute(p) || !read_roots.iter().any(|r| p.starts_with(r)) {
            return widened(format!(
                "read access to {} is outside the policy",
                p.display()
            ));
        }
    }
    for p in &grant.fs_write {
        if !is_plain_absolute(p) || !policy.fs_write.iter().any(|r| p.starts_with(r)) {
            return widened(format!(
                "write access to {} is outside the policy",
                p.display()
            ));
        }
    }
    if grant.network && !policy.network {
        return widened("network access is not allowed by the policy".into());
    }
    if grant.timeout > policy.timeout {
        return widened(format!(
            "timeout {} s exceeds the policy's {} s",
            grant.timeout.as_secs_f64(),
            policy.timeout.as_secs_f64()
        ));
    }
    if grant.trust == Trust::Core && policy.trust != Trust::Core {
        return widened("core trust is not allowed by the policy".into());
    }
    Ok(())
}

fn is_plain_absolute(p: &Path) -> bool {
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// The ceiling when nothing is configured: read-only access to `cwd`, no writes outside the
/// workspace, no network, a 60 s timeout, external trust.
pub fn default_ceiling(cwd: &Path) -> Grant {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| lexical_normalize(cwd));
    Grant {
        fs_read: vec![cwd],
        fs_write: Vec::new(),
        network: false,
        timeout: DEFAULT_TIMEOUT,
        trust: Trust::External,
    }
}

/// The grant a skill's frontmatter asks for, intersected with `ceiling`.
///
/// `fs_read` / `fs_write` (a path or a list of paths; `~` is `home`, relative paths are under
/// `cwd`) survive only under a ceiling root (reads under a read or write root); `network` is
/// `true` only if both say so; `timeout` (whole seconds, 1 or more) is the smaller of the two;
/// `trust: core` holds only under a `core` ceiling. Malformed values degrade to the safe
/// default (nothing, `false`, 60 s, external).
pub fn grant_from_frontmatter(fm: &Map, ceiling: &Grant, cwd: &Path, home: Option<&Path>) -> Grant {
    let read_roots: Vec<&PathBuf> = ceiling.fs_read.iter().chain(&ceiling.fs_write).collect();
    let fs_read = paths(fm.get("fs_read"), cwd, home)
        .into_iter()
        .filter(|p| read_roots.iter().any(|r| p.starts_with(r)))
        .collect();
    let fs_write = paths(fm.get("fs_write"), cwd, home)
        .into_iter()
        .filter(|p| ceiling.fs_write.iter().any(|r| p.starts_with(r)))
        .collect();
    let network = matches!(
        fm.get("network").and_then(Value::as_str).map(str::trim),
        Some("true")
    ) && ceiling.network;
    let timeout = fm
        .get("timeout")
        .and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|s| *s >= 1)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs)
        .min(ceiling.timeout);
    let trust = match fm.get("trust").and_then(Value::as_str).map(str::trim) {
        Some("core") if ceiling.trust == Trust::Core => Trust::Core,
        _ => Trust::External,
    };
    Grant {
        fs_read,
        fs_write,
        network,
        timeout,
        trust,
    }
}

fn paths(v: Option<&Value>, cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let texts: Vec<&str> = match v {
        Some(Value::Text(s)) => vec![s.as_str()],
        Some(Value::List(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for t in texts {
        let t = t.trim();
        if t.is_empty() || t.contains('\0') {
            continue;
        }
        let expanded = if t == "~" {
            match home {
                Some(h) => h.to_path_buf(),
                None => continue,
            }
        } else if let Some(rest) = t.strip_prefix("~/") {
            match home {
                Some(h) => h.join(rest),
                None => continue,
            }
        } else if t.starts_with('~') {
            continue; // `~user` is not expanded.
        } else {
            cwd.join(t)
        };
        let normal = lexical_normalize(&expanded);
        let real = std::fs::canonicalize(&normal).unwrap_or(normal);
        if !out.contains(&real) {
            out.push(real);
        }
    }
    out
}

/// `a/./b/../c` → `a/c`, without touching the file system (`..` at the root stays at the root).
pub fn lexical_normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::parse_document;

    fn g(read: &[&str], write: &[&str], network: bool, secs: u64, trust: Trust) -> Grant {
        Grant {
            fs_read: read.iter().map(PathBuf::from).collect(),
            fs_write: write.iter().map(PathBuf::from).collect(),
            network,
            timeout: Duration::from_secs(secs),
            trust,
        }
    }

    #[test]
    fn within_table() {
        let policy = g(&["/data"], &["/out"], false, 60, Trust::External);
        let ok = [
            g(&["/data/a"], &[], false, 60, Trust::External),
            g(&["/out/x"], &["/out/x"], false, 1, Trust::External),
            g(&[], &[], false, 30, Trust::External),
        ];
        for grant in ok {
            assert!(check_within(&grant, &policy).is_ok(), "{grant:?}");
        }
        let widened = [
            g(&["/etc"], &[], false, 60, Trust::External),
            g(&["/data2"], &[], false, 60, Trust::External),
            g(&["/data/../etc"], &[], false, 60, Trust::External),
            g(&["data"], &[], false, 60, Trust::External),
            g(&[], &["/data/x"], false, 60, Trust::External),
            g(&[], &[], true, 60, Trust::External),
            g(&[], &[], false, 61, Trust::External),
            g(&[], &[], false, 60, Trust::Core),
        ];
        for grant in widened {
            assert_eq!(
                check_within(&grant, &policy).unwrap_err().code(),
                "E_SKILL_SCRIPT_POLICY_WIDENED",
                "{grant:?}"
            );
        }
    }

    fn fm(yaml: &str) -> Map {
        parse_document(format!("---\nname: x\ndescription: y\n{yaml}---\n").as_bytes())
            .unwrap()
            .frontmatter
    }

    #[test]
    fn frontmatter_intersected_with_ceiling() {
        let ceiling = g(
            &["/nonexistent-skillcat/cwd"],
            &["/nonexistent-skillcat/out"],
            false,
            30,
            Trust::External,
        );
        let cwd = Path::new("/nonexistent-skillcat/cwd");
        let home = Path::new("/nonexistent-skillcat/home");
        let grant = grant_from_frontmatter(
            &fm(
                "fs_read: [., data, /etc, ~/.ssh, ../out/x]\nfs_write: [../out, ., /tmp]\nnetwork: true\ntimeout: 90\ntrust: core\n",
            ),
            &ceiling,
            cwd,
            Some(home),
        );
        assert_eq!(
            grant.fs_read,
            [
                PathBuf::from("/nonexistent-skillcat/cwd"),
                PathBuf::from("/nonexistent-skillcat/cwd/data"),
                PathBuf::from("/nonexistent-skillcat/out/x"),
            ]
        );
        assert_eq!(grant.fs_write, [PathBuf::from("/nonexistent-skillcat/out")]);
        assert!(!grant.network);
        assert_eq!(grant.timeout, Duration::from_secs(30));
        assert_eq!(grant.trust, Trust::External);
        assert!(check_within(&grant, &ceiling).is_ok());
    }

    #[test]
    fn malformed_values_degrade_to_safe_defaults() {
        let ceiling = g(&["/"], &["/"], true, 600, Trust::Core);
        let grant = grant_from_frontmatter(
            &fm("fs_read:\n  a: b\nnetwork: yes please\ntimeout: soon\ntrust: root\n"),
            &ceiling,
            Path::new("/x"),
            None,
        );
        assert!(grant.fs_read.is_empty());
        assert!(!grant.network);
        assert_eq!(grant.timeout, DEFAULT_TIMEOUT);
        assert_eq!(grant.trust, Trust::External);
        let grant = grant_from_frontmatter(
            &fm("timeout: 0\ntrust: core\nnetwork: true\n"),
            &ceiling,
            Path::new("/x"),
            None,
        );
        assert_eq!(grant.timeout, DEFAULT_TIMEOUT);
        assert_eq!(grant.trust, Trust::Core);
        assert!(grant.network);
    }
}
