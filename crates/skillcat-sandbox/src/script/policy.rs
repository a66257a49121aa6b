//! Grants against the session policy.
//!
//! [`check_within`] is pure: it compares paths the runner has already made absolute and
//! canonical. [`policy_from_ceiling`] turns the host's configured
//! [`Ceiling`] into that policy, expanding its roots exactly as
//! [`capability::intersect`] does when it computes a skill's grant,
//! so a grant computed from a ceiling always lies within the policy made from it.

use std::path::{Component, Path, PathBuf};

use super::ScriptError;
use crate::capability::{self, Ceiling, Context, Grant, Trust};

/// Checks that `grant` asks for nothing `policy` does not allow: every read path under a policy
/// read or write root, every write path under a policy write root, network only as far as the
/// policy has it (the whole network only under the whole network, each host and port of a list
/// within the policy's), a timeout no longer than the policy's, `core` trust only under a
/// `core` policy.
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
    if !grant.network.within(&policy.network) {
        return widened(match (&grant.network, &policy.network) {
            (capability::Network::Hosts(_), capability::Network::Hosts(_)) => format!(
                "network access to {} is not allowed by the policy",
                capability::Network::hosts(grant.network.outside(&policy.network))
            ),
            _ => format!(
                "network access ({}) is not allowed by the policy ({})",
                grant.network, policy.network
            ),
        });
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

/// The session policy a ceiling stands for: its read and write roots expanded against the
/// context as [`capability::ceiling_root`] does (`~`, relative to the working directory, links
/// resolved; a root that cannot be expanded, or a relative root that expands to `/` or the
/// home directory, allows nothing), its network, its hard timeout limit, and `core` trust only for a
/// core-trusted source.
pub fn policy_from_ceiling(ceiling: &Ceiling, ctx: &Context) -> Grant {
    let expand = |roots: &[String]| -> Vec<PathBuf> {
        roots
            .iter()
            .filter_map(|r| capability::ceiling_root(r, ctx))
            .collect()
    };
    Grant {
        fs_read: expand(&ceiling.fs_read),
        fs_write: expand(&ceiling.fs_write),
        network: ceiling.network.clone(),
        timeout: ceiling.clamp_timeout(ceiling.max_timeout.max(ceiling.timeout)),
        trust: if ctx.core_trusted_source {
            Trust::Core
        } else {
            Trust::External
        },
    }
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
    use std::time::Duration;

    use super::*;

    fn g(read: &[&str], write: &[&str], network: bool, secs: u64, trust: Trust) -> Grant {
        Grant {
            fs_read: read.iter().map(PathBuf::from).collect(),
            fs_write: write.iter().map(PathBuf::from).collect(),
            network: capability::Network::from_bool(network),
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

    #[test]
    fn host_lists_within_the_policy() {
        use crate::capability::Network;
        let with = |n: &str| Grant {
            network: Network::parse(n).unwrap(),
            ..g(&[], &[], false, 60, Trust::External)
        };
        for (grant, policy, ok) in [
            ("api.x.com", "true", true),
            ("api.x.com", "*.x.com", true),
            ("api.x.com:443", "api.x.com", true),
            ("api.x.com:22", "api.x.com", false),
            ("api.x.com", "api.x.com:443", false),
            ("api.x.com", "false", false),
            ("true", "*.x.com", false),
            ("false", "false", true),
        ] {
            let r = check_within(&with(grant), &with(policy));
            assert_eq!(r.is_ok(), ok, "{grant} within {policy}: {r:?}");
        }
        let e = check_within(&with("a.x.com b.y.com:22"), &with("*.x.com")).unwrap_err();
        assert!(
            e.to_string()
                .contains("network access to b.y.com:22 is not allowed"),
            "{e}"
        );
    }

    #[test]
    fn a_grant_from_a_ceiling_lies_within_its_policy() {
        use crate::capability::{Capabilities, intersect};
        let dir = std::env::temp_dir();
        let ctx = Context {
            cwd: dir.clone(),
            home: None,
            core_trusted_source: false,
        };
        let ceiling = Ceiling {
            fs_write: vec!["out".into()],
            ..Ceiling::default()
        };
        let caps = Capabilities {
            fs_read: vec![".".into(), "sub/x".into(), "/etc".into()],
            fs_write: vec!["out/y".into(), ".".into()],
            network: capability::Network::All,
            timeout: Some(9999),
            trust: Trust::Core,
        };
        let grant = intersect(&caps, &ceiling, &ctx);
        let policy = policy_from_ceiling(&ceiling, &ctx);
        assert!(
            check_within(&grant, &policy).is_ok(),
            "{grant:?} ⊄ {policy:?}"
        );
        assert_eq!(policy.trust, Trust::External);
        assert!(policy.network.is_off());
        assert_eq!(policy.timeout, Duration::from_secs(60));
        assert_eq!(policy.fs_read[0], std::fs::canonicalize(&dir).unwrap());
    }
}
