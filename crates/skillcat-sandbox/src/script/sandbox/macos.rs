//! macOS: a deny-by-default `sandbox-exec` (Seatbelt) profile generated from the same
//! [`HelperPolicy`] as the Linux helper. Pure functions, compiled and tested on every platform.
//!
//! Every path is passed as a `-D` parameter and referred to as `(param "…")`, never interpolated
//! into the profile. Nothing under `$HOME` is readable unless a rule names it; the network is
//! allowed only when granted.

use std::path::PathBuf;

use super::{FsAccess, HelperPolicy, NetMode};

/// The `sandbox-exec` binary (deprecated but shipped with every macOS).
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A generated profile and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatbeltProfile {
    /// The profile text (`sandbox-exec -p`).
    pub profile: String,
    /// `-D KEY=VALUE` parameters, in order.
    pub params: Vec<(String, String)>,
}

/// System paths an interpreter needs on macOS, read+execute.
pub fn system_read_paths(network: bool) -> Vec<PathBuf> {
    let mut v = vec![
        "/usr",
        "/bin",
        "/sbin",
        "/System",
        "/Library/Apple",
        "/private/etc/passwd",
        "/private/etc/group",
        "/private/var/db/timezone",
        "/private/var/db/dyld",
        "/Library/Preferences/Logging",
    ];
    if network {
        v.extend([
            "/private/etc/ssl",
            "/private/etc/hosts",
            "/private/etc/resolv.conf",
            "/private/var/run/resolv.conf",
        ]);
    }
    v.into_iter().map(PathBuf::from).collect()
}

/// The profile for `policy`.
pub fn profile(policy: &HelperPolicy) -> SeatbeltProfile {
    let mut params = Vec::new();
    let mut read = Vec::new();
    let mut write = Vec::new();
    for rule in &policy.rules {
        let path = rule.path.to_string_lossy().into_owned();
        match rule.access {
            FsAccess::ReadExec => {
                let key = format!("R{}", read.len());
                read.push(key.clone());
                params.push((key, path));
            }
            FsAccess::ReadWrite => {
                let key = format!("W{}", write.len());
                write.push(key.clone());
                params.push((key, path));
            }
        }
    }
    let mut p = String::from(
        "(version 1)\n\
         (deny default)\n\
         (allow process-exec process-fork)\n\
         (allow signal (target same-sandbox))\n\
         (allow sysctl-read)\n\
         (allow file-read-metadata)\n\
         (allow mach-lookup (global-name \"com.apple.system.opendirectoryd.libinfo\"))\n",
    );
    for key in &read {
        p.push_str(&format!(
            "(allow file-read* process-exec (subpath (param \"{key}\")))\n"
        ));
    }
    for key in &write {
        p.push_str(&format!(
            "(allow file-read* file-write* (subpath (param \"{key}\")))\n"
        ));
    }
    match policy.network {
        NetMode::All => p.push_str("(allow network*)\n(allow system-socket)\n"),
        // The run's proxy listens on the host's loopback (Seatbelt has no network namespace):
        // outbound TCP to its port is the only network the profile allows. The port is a
        // number the supervisor chose, never text from the policy's sender.
        NetMode::Proxied => p.push_str(&format!(
            "(allow network-outbound (remote ip \"localhost:{}\"))\n",
            policy.proxy_port
        )),
        NetMode::Off => {}
    }
    SeatbeltProfile { profile: p, params }
}

/// The command line that runs the policy's program under the profile:
/// `sandbox-exec -p PROFILE -D K=V … -- PROGRAM ARGS…`.
pub fn command_line(policy: &HelperPolicy) -> (PathBuf, Vec<String>) {
    let prof = profile(policy);
    let mut args = vec!["-p".to_string(), prof.profile];
    for (k, v) in prof.params {
        args.push("-D".into());
        args.push(format!("{k}={v}"));
    }
    args.push("--".into());
    args.push(policy.program.to_string_lossy().into_owned());
    args.extend(policy.argv.iter().skip(1).cloned());
    (PathBuf::from(SANDBOX_EXEC), args)
}

#[cfg(test)]
mod tests {
    use super::super::{FsRule, Mode, RunLimits};
    use super::*;

    fn policy(network: bool) -> HelperPolicy {
        let network = if network { NetMode::All } else { NetMode::Off };
        HelperPolicy {
            mode: Mode::Confined,
            program: "/bin/sh".into(),
            argv: vec![
                "/bin/sh".into(),
                "/ws/skill/scripts/a.sh".into(),
                "x y".into(),
            ],
            env: vec![],
            rules: vec![
                FsRule {
                    path: "/usr".into(),
                    access: FsAccess::ReadExec,
                    required: false,
                    inode: None,
                },
                FsRule {
                    path: "/ws/skill".into(),
                    access: FsAccess::ReadExec,
                    required: true,
                    inode: None,
                },
                FsRule {
                    path: "/Users/me/data\")(allow default".into(),
                    access: FsAccess::ReadExec,
                    required: true,
                    inode: None,
                },
                FsRule {
                    path: "/ws/work".into(),
                    access: FsAccess::ReadWrite,
                    required: true,
                    inode: None,
                },
            ],
            network,
            proxy_port: 0,
            limits: RunLimits {
                cpu_seconds: 2,
                address_space: 1,
                file_size: 1,
                open_files: 1,
                processes: 1,
            },
            timeout_seconds: 1,
            supervisor: 0,
            workspace: None,
            make_work: None,
            builtin: false,
            cgroup: Vec::new(),
            protect: Vec::new(),
            granted: Vec::new(),
            parked: false,
        }
    }

    #[test]
    fn profile_text_is_deny_by_default_with_params() {
        let p = profile(&policy(false));
        assert_eq!(
            p.profile,
            "(version 1)\n\
             (deny default)\n\
             (allow process-exec process-fork)\n\
             (allow signal (target same-sandbox))\n\
             (allow sysctl-read)\n\
             (allow file-read-metadata)\n\
             (allow mach-lookup (global-name \"com.apple.system.opendirectoryd.libinfo\"))\n\
             (allow file-read* process-exec (subpath (param \"R0\")))\n\
             (allow file-read* process-exec (subpath (param \"R1\")))\n\
             (allow file-read* process-exec (subpath (param \"R2\")))\n\
             (allow file-read* file-write* (subpath (param \"W0\")))\n"
        );
        assert_eq!(
            p.params[2],
            ("R2".into(), "/Users/me/data\")(allow default".into())
        );
        assert!(
            !p.profile.contains("/Users"),
            "paths are parameters, never profile text"
        );
        assert!(!p.profile.contains("network"), "no network without a grant");
        assert!(
            !p.profile.contains("(allow file-read*)\n"),
            "no blanket read (so $HOME stays closed)"
        );
    }

    #[test]
    fn a_proxied_run_reaches_only_the_proxys_port() {
        let mut p = policy(false);
        p.network = NetMode::Proxied;
        p.proxy_port = 40123;
        let prof = profile(&p).profile;
        assert!(prof.contains("(allow network-outbound (remote ip \"localhost:40123\"))"));
        assert!(!prof.contains("(allow network*)"));
    }

    #[test]
    fn network_only_when_granted() {
        assert!(profile(&policy(true)).profile.contains("(allow network*)"));
    }

    #[test]
    fn command_line_passes_params_and_argv() {
        let (exe, args) = command_line(&policy(false));
        assert_eq!(exe, PathBuf::from("/usr/bin/sandbox-exec"));
        assert_eq!(args[0], "-p");
        assert_eq!(&args[2..4], ["-D", "R0=/usr"]);
        let dash = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(
            &args[dash + 1..],
            ["/bin/sh", "/ws/skill/scripts/a.sh", "x y"]
        );
    }

    #[test]
    fn home_is_not_in_the_system_paths() {
        for net in [false, true] {
            assert!(
                !system_read_paths(net)
                    .iter()
                    .any(|p| p.starts_with("/Users"))
            );
        }
    }
}
