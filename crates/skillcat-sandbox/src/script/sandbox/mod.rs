//! Confinement of script processes.
//!
//! On Linux the helper is a small single-threaded process: forked from the host's zygote where
//! it made one ([`start_zygote`], before any thread), else the host's own binary re-executed
//! (`skillcat __skillcat-sandbox`, dispatched by [`helper_main`] at the top of `main` before any
//! runtime or thread starts). The policy arrives as JSON on an inherited descriptor
//! ([`POLICY_FD`], a sealed memfd the supervisor wrote), never on argv, where every local user
//! could read it in `/proc/PID/cmdline`. The helper confines itself and `execve`s the
//! interpreter; see [`linux`] for the order of operations. On macOS a deny-by-default
//! `sandbox-exec` profile is generated from the same policy ([`macos::profile`]).
//!
//! ```text
//! supervisor (tokio host)                 helper (single thread)            script (PID 1)
//! spawn helper ─ env cleared, cwd=work,   parse policy, build Landlock
//!   stdin null, stdout+stderr one pipe,   ruleset + seccomp BPF, clone ────▶ wait for id maps
//!   own process group, fd 3 = status      into new user/PID/IPC/mnt[/net]   own root, uid 65534,
//!                                         write uid/gid maps, release ────▶ rlimits, drop caps,
//!                                                                           Landlock,
//!                                         wait, relay exit on fd 3          seccomp, execve
//! timeout → killpg(SIGKILL)               (PID 1 gone → namespace killed)
//! ```
//!
//! The status pipe (fd 3 in the helper, close-on-exec in the script) carries one line per
//! event: `ready <summary>` just before `execve`, `error <unavailable|failed> <message>` when
//! setup fails, `exit <code>` / `signal <n>` when the script ends.

#[cfg(target_os = "linux")]
pub mod linux;
pub mod macos;

use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

/// The hidden first argument that turns the `skillcat` binary into the sandbox helper.
pub const HELPER_ARG: &str = "__skillcat-sandbox";

/// The file descriptor of the status pipe in the helper.
pub const STATUS_FD: i32 = 3;

/// The file descriptor the helper reads its policy (JSON) from; the helper closes it before it
/// forks the script.
pub const POLICY_FD: i32 = 4;

/// In a run joining a workspace's namespaces ([`HelperPolicy::workspace`]), the descriptor of
/// the workspace's mount namespace.
pub const WORKSPACE_MNT_FD: i32 = 5;

/// In a run joining a workspace's namespaces, the descriptor of its user namespace (when it has
/// one).
pub const WORKSPACE_USER_FD: i32 = 6;

/// In a run that makes its workspace's bounded work directory ([`HelperPolicy::make_work`]),
/// the helper's end of a `SOCK_SEQPACKET` socket: one message, `work <dev> <ino> <mount-ns
/// inode> <user 0|1>` with the mount namespace, the user namespace (when there is one) and the
/// tmpfs's root as `SCM_RIGHTS`, or `error <why>` when it could not be made.
pub const WORKSPACE_SOCKET_FD: i32 = 7;

/// In a run whose network goes through the run's proxy ([`NetMode::Proxied`]), the helper's
/// end of a `SOCK_SEQPACKET` socket: the script's first process sends on it, as `SCM_RIGHTS`,
/// the TCP socket it listens on at `127.0.0.1:`[`PROXY_PORT`] inside its own network namespace,
/// which the supervisor's proxy then accepts on.
pub const PROXY_SOCKET_FD: i32 = 8;

/// The port the run's proxy listens on inside a proxied run's network namespace (the only
/// place the script can connect to: nothing else is there).
pub const PROXY_PORT: u16 = 3128;

/// In a parked run ([`HelperPolicy::parked`]), the helper's end of a `SOCK_SEQPACKET` socket
/// the supervisor sends the run's [`Release`] on (argv and environment, one message) when a
/// call takes the run, then closes.
pub const RELEASE_FD: i32 = 9;

/// The network of a run, as the helper sets it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetMode {
    /// None: a network namespace of its own with loopback down, `AF_UNIX` stream sockets only,
    /// no `connect`.
    #[default]
    Off,
    /// Only through the run's proxy: a network namespace of its own with loopback up and the
    /// proxy's socket at `127.0.0.1:`[`PROXY_PORT`]; only IPv4/IPv6 stream sockets (no
    /// `AF_UNIX`, `AF_NETLINK`, `AF_PACKET`, datagram or raw ones); Landlock (ABI ≥ 4) allows
    /// TCP `connect` to the proxy's port only, and no `bind`.
    Proxied,
    /// The host's network (no network namespace).
    All,
}

/// The most policy bytes the helper reads.
pub const POLICY_MAX: usize = 16 << 20;

/// The uid and gid scripts run as inside their user namespace (`nobody`'s number there).
pub const SANDBOX_ID: u32 = 65534;

/// On a root host, the host uid and gid of every run: [`SANDBOX_ID`] inside a user namespace
/// maps to it, and without one the script runs as it. No account has it and no host process
/// runs as it (`nobody` included), so no host process can signal, trace or reach into a run
/// through `/proc/PID/root`, and no host file is the script's by ownership. It lies above the
/// ranges distributions and systemd hand out (accounts below 60,000, dynamic users 61184–65519,
/// containers 524288–1879048191) and below both systemd's foreign range (2147352576–) and
/// 2^31, where some tools misread an id as negative.
pub const RUN_HOST_ID: u32 = 0x7F53_4B00;

/// Exit code of the helper when setup fails (the status pipe says why).
pub const SETUP_FAILED: u8 = 125;

/// How a path may be used by the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsAccess {
    /// Read files, list directories, execute.
    ReadExec,
    /// Read, write, create and remove (not execute).
    ReadWrite,
}

/// One file-system rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsRule {
    /// The path (absolute; rules bind the inode it names when the helper opens it).
    pub path: PathBuf,
    /// What is allowed beneath it.
    pub access: FsAccess,
    /// A missing required path is an error; a missing optional one (a system directory this
    /// distribution does not have) is skipped.
    pub required: bool,
    /// The device and inode the supervisor found at `path` when it checked it (reached without
    /// following any symbolic link). The helper then opens `path` the same way and refuses a
    /// different file, so a rule binds the inode that was checked, never what a symbolic link
    /// swapped in meanwhile points at. `None`: opened following links (system paths).
    #[serde(default)]
    pub inode: Option<(u64, u64)>,
}

impl FsRule {
    /// An optional read+execute rule, opened following links: a system directory or file.
    pub fn system(path: PathBuf) -> Self {
        FsRule {
            path,
            access: FsAccess::ReadExec,
            required: false,
            inode: None,
        }
    }
}

/// The device and inode at `path`, reached without following any symbolic link (Linux:
/// `openat2(RESOLVE_NO_SYMLINKS)`); `Ok(None)` where that cannot be checked (other systems).
pub fn pinned_identity(path: &std::path::Path) -> std::io::Result<Option<(u64, u64)>> {
    #[cfg(target_os = "linux")]
    {
        linux::open_no_symlinks(path).and_then(|fd| linux::identity(&fd).map(Some))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Ok(None)
    }
}

/// Resource limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLimits {
    /// `RLIMIT_CPU`, seconds (set above the wall-clock timeout, so a spinning script ends with
    /// the timeout error, not with SIGXCPU).
    pub cpu_seconds: u64,
    /// `RLIMIT_AS`, bytes.
    pub address_space: u64,
    /// `RLIMIT_FSIZE`, bytes.
    pub file_size: u64,
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// `RLIMIT_NPROC`, counted inside the script's user namespace.
    pub processes: u64,
}

/// Whether the helper confines the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Namespaces, rlimits, capabilities dropped, Landlock, seccomp, unprivileged uid.
    Confined,
    /// No confinement (a `trust: core` skill on a kernel without Landlock): the helper only
    /// keeps the process group and kills what is left when the script ends.
    Unconfined,
}

/// Everything the helper needs, serialised as JSON on [`POLICY_FD`] (never on argv, never in the
/// environment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperPolicy {
    /// Confined or not.
    pub mode: Mode,
    /// The interpreter to `execve` (absolute).
    pub program: PathBuf,
    /// argv, `argv[0]` first.
    pub argv: Vec<String>,
    /// The whole environment of the script.
    pub env: Vec<(String, String)>,
    /// File-system rules.
    pub rules: Vec<FsRule>,
    /// The script's network.
    pub network: NetMode,
    /// Where the run's proxy listens on the host's loopback, for a proxied run where the
    /// script cannot have a network namespace of its own (macOS: the Seatbelt profile allows
    /// outbound TCP to this port of localhost only). 0 on Linux, where the proxy listens inside
    /// the run's namespace at [`PROXY_PORT`].
    #[serde(default)]
    pub proxy_port: u16,
    /// Resource limits.
    pub limits: RunLimits,
    /// The wall-clock timeout the supervisor enforces, seconds; the helper arms a backstop
    /// alarm a little later in case the supervisor cannot.
    pub timeout_seconds: u64,
    /// The supervisor's pid: the helper dies with it (0: not checked).
    pub supervisor: u32,
    /// The workspace's namespaces to join, whose mount namespace has the bounded work
    /// directory mounted (inherited as [`WORKSPACE_MNT_FD`] and [`WORKSPACE_USER_FD`]); `None`:
    /// the work directory is the one on disk.
    #[serde(default)]
    pub workspace: Option<JoinWorkspace>,
    /// The workspace's bounded work directory, to be made by this run first (the workspace's
    /// first confined run; never with [`workspace`](Self::workspace)); reported on
    /// [`WORKSPACE_SOCKET_FD`]. Where it cannot be made the run goes on in the work directory
    /// on disk (whose rule the policy holds), and the socket says why.
    #[serde(default)]
    pub make_work: Option<WorkspacePolicy>,
    /// Run the helper's built-in entry ([`helper_main_with`]) in the confined child instead of
    /// executing `program`: the same confinement, one `execve` fewer (the guest evaluator).
    /// Confined mode only.
    #[serde(default)]
    pub builtin: bool,
    /// The files through which the helper joins the run's control group, one per hierarchy
    /// (v2 `cgroup.procs`: its pid; v1 `tasks`: `0`, the calling thread — the helper is
    /// single-threaded), before it starts any process, so the kernel counts every process of
    /// the run. Empty: no cgroup could be made (the rlimits still hold).
    #[serde(default)]
    pub cgroup: Vec<PathBuf>,
    /// The protected paths inside the write grants (`script::protect`): in the run's root each
    /// is re-bound read-only over itself, whatever the grant says.
    #[serde(default)]
    pub protect: Vec<PathBuf>,
    /// On a root host, the paths the user granted (each rule of `fs_read` and `fs_write`): the
    /// helper clones each tree owned by root with an idmapping under which root's files are the
    /// script's ([`RUN_HOST_ID`]), so a granted root-owned directory can be written and a 0600
    /// file read, and mounts the clone over the path in the run's mount namespace: read-only
    /// for a read grant (no write, mode, time or xattr change reaches it), `nosuid,nodev`
    /// always. Empty: no mapping (any other host, or nothing granted).
    #[serde(default)]
    pub granted: Vec<GrantedTree>,
    /// A run made ahead of its call (the pool of an MCP server or a library session): `argv`
    /// and `env` are empty, and the confined child, once every confinement step is done, waits
    /// for them on [`RELEASE_FD`] before it executes `program`; the helper arms its backstop
    /// alarm only then. End-of-file there (the run was not taken) ends it without running
    /// anything.
    #[serde(default)]
    pub parked: bool,
}

/// What a parked run gets when a call takes it ([`HelperPolicy::parked`]), as JSON on
/// [`RELEASE_FD`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    /// argv, `argv[0]` first.
    pub argv: Vec<String>,
    /// The whole environment of the script.
    pub env: Vec<(String, String)>,
}

/// A path the user granted, on a root host (see [`HelperPolicy::granted`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantedTree {
    /// The path, as its rule has it.
    pub path: PathBuf,
    /// Granted for writing (`fs_write`), not only reading.
    pub write: bool,
    /// The device and inode its rule is pinned to.
    pub inode: Option<(u64, u64)>,
}

/// A run's way into its workspace's namespaces (see [`WorkspacePolicy`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinWorkspace {
    /// Whether the workspace has a user namespace to join first ([`WORKSPACE_USER_FD`]).
    pub user: bool,
    /// The work directory; in the workspace's mount namespace, the root of its tmpfs. It gets
    /// a read+write rule bound to `inode` (a rule on the directory beneath the mount would not
    /// cover it).
    pub work: PathBuf,
    /// The device and inode of the tmpfs's root. The script's `TMPDIR`, `tmp/` in it, is made
    /// when missing (a run that hit the quota leaves the work directory empty).
    pub inode: (u64, u64),
}

/// A skill's bounded work directory, made by the helper of the workspace's first confined run:
/// a user namespace (where they are allowed) and a mount namespace, a tmpfs of `bytes` and
/// `files + 1` inodes mounted on `work` in it. The helper joins them, hands them and the
/// tmpfs's root to the supervisor on [`WORKSPACE_SOCKET_FD`], and runs the script there. The
/// supervisor's descriptors then keep them alive: later runs join them
/// ([`HelperPolicy::workspace`]), and the tmpfs goes when the workspace does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspacePolicy {
    /// The work directory (absolute) the tmpfs is mounted on.
    pub work: PathBuf,
    /// Its device and inode, as the supervisor checked them.
    pub inode: (u64, u64),
    /// Bytes the tmpfs holds at most.
    pub bytes: u64,
    /// Files and directories it holds at most (its root not counted).
    pub files: u64,
    /// Made by the run's first process, in the run's own namespaces, instead of in namespaces
    /// of the workspace's own that later runs join: the process makes one run
    /// ([`teardown_after_exit`](crate::script::teardown_after_exit)), so no run would join
    /// them, and no process or namespace is made for them. Only the tmpfs's root is handed to
    /// the supervisor (`own DEV INO`), which reads what the run left through it.
    #[serde(default)]
    pub in_run: bool,
}

/// What the helper is asked to do: the JSON on [`POLICY_FD`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
// Read once per helper process: the size of a variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum HelperRequest {
    /// Run a script.
    Run(HelperPolicy),
}

impl HelperRequest {
    /// The JSON form passed on [`POLICY_FD`].
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// System paths an interpreter needs to start, read+execute, every one optional: the
/// distribution's program and library directories and the few `/etc` files the C library reads;
/// the certificate stores and resolver configuration only with network.
pub fn system_read_paths(network: bool) -> Vec<PathBuf> {
    let mut v: Vec<&str> = vec![
        "/usr",
        "/bin",
        "/lib",
        "/lib64",
        "/lib32",
        "/sbin",
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/localtime",
        "/etc/nsswitch.conf",
        "/etc/passwd",
        "/etc/group",
        // Debian's alternatives: `/usr/bin/awk` is a link to `/etc/alternatives/awk`, a link
        // to `/usr/bin/mawk` (links only; the run's root must hold the way).
        "/etc/alternatives",
    ];
    if network {
        v.extend([
            "/etc/ssl",
            "/etc/ca-certificates",
            "/etc/pki",
            "/etc/resolv.conf",
            "/etc/hosts",
            "/etc/host.conf",
            "/etc/gai.conf",
            "/etc/services",
            "/etc/protocols",
        ]);
    }
    v.into_iter().map(PathBuf::from).collect()
}

/// Device files a script may read and write.
pub const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/urandom"];

/// The built-in entry of this binary's helper, when it has one ([`helper_main_with`]).
static BUILTIN: std::sync::OnceLock<fn() -> u8> = std::sync::OnceLock::new();

/// [`helper_main`], with `entry` as the built-in a policy may ask for
/// ([`HelperPolicy::builtin`]): the confined child calls it, after every confinement step,
/// instead of executing a program, and exits with what it returns.
pub fn helper_main_with(entry: fn() -> u8) -> Option<ExitCode> {
    let _ = BUILTIN.set(entry);
    helper_main()
}

/// The built-in entry, when this helper was started with one.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn builtin() -> Option<fn() -> u8> {
    BUILTIN.get().copied()
}

/// If this process was started as the sandbox helper, runs it and returns the exit code (on
/// success the helper `execve`s the script and never returns). `None` for a normal start.
///
/// Call it first thing in `main`, before any runtime or thread starts.
pub fn helper_main() -> Option<ExitCode> {
    // The workspace watcher of a long-lived process (`reap_on_exit`) is this binary too.
    if let Some(code) = super::reaper::reaper_main() {
        return Some(ExitCode::from(code));
    }
    let mut args = std::env::args_os();
    let _exe = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(HELPER_ARG)) {
        return None;
    }
    Some(ExitCode::from(run_helper()))
}

/// Forks the sandbox zygote: a small single-threaded process from which each run's helper is
/// then forked instead of re-executing this binary (Linux; see `docs/sandbox.md`). Its pid, or
/// why it could not start — runs then re-execute the binary as before.
///
/// **Call it before any thread starts** (before an async runtime, right after [`helper_main`]),
/// from the thread that lives as long as the process: the zygote dies with that thread, and
/// each helper with the zygote. It refuses to start when the process already has threads.
/// Only a runner whose helper is this binary ([`RunnerConfig::helper`](super::RunnerConfig),
/// the default) uses it.
pub fn start_zygote() -> std::io::Result<u32> {
    #[cfg(target_os = "linux")]
    {
        linux::zygote::start()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "the sandbox zygote exists only on Linux",
        ))
    }
}

#[cfg(target_os = "linux")]
fn run_helper() -> u8 {
    linux::helper()
}

#[cfg(not(target_os = "linux"))]
fn run_helper() -> u8 {
    eprintln!("skillcat: the sandbox helper exists only on Linux");
    SETUP_FAILED
}

/// The Landlock ABI version of the running kernel, or `None` when Landlock is missing or
/// disabled (always `None` off Linux).
pub fn landlock_abi() -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        linux::landlock_abi()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_round_trips_through_json() {
        let p = HelperPolicy {
            mode: Mode::Confined,
            program: "/bin/sh".into(),
            argv: vec!["sh".into(), "x y".into(), "'\"$".into()],
            env: vec![("PATH".into(), "/usr/bin".into())],
            rules: vec![FsRule {
                path: "/usr".into(),
                access: FsAccess::ReadExec,
                required: false,
                inode: Some((1, 2)),
            }],
            network: NetMode::Off,
            proxy_port: 0,
            limits: RunLimits {
                cpu_seconds: 2,
                address_space: 1 << 30,
                file_size: 1 << 20,
                open_files: 64,
                processes: 64,
            },
            timeout_seconds: 1,
            supervisor: 0,
            workspace: Some(JoinWorkspace {
                user: true,
                work: "/ws/work".into(),
                inode: (3, 4),
            }),
            make_work: None,
            builtin: false,
            cgroup: vec!["/sys/fs/cgroup/x/cgroup.procs".into()],
            protect: vec!["/root/project/.git".into()],
            granted: vec![GrantedTree {
                path: "/root/project".into(),
                write: true,
                inode: Some((3, 4)),
            }],
            parked: false,
        };
        let mut making = p.clone();
        making.workspace = None;
        making.make_work = Some(WorkspacePolicy {
            work: "/ws/work".into(),
            inode: (5, 6),
            bytes: 1 << 20,
            files: 10,
            in_run: false,
        });
        let mut in_run = making.clone();
        if let Some(w) = &mut in_run.make_work {
            w.in_run = true;
        }
        for request in [
            HelperRequest::Run(p),
            HelperRequest::Run(making),
            HelperRequest::Run(in_run),
        ] {
            let back: HelperRequest = serde_json::from_str(&request.to_json().unwrap()).unwrap();
            assert_eq!(back, request);
        }
    }

    #[test]
    fn certificates_only_with_network() {
        assert!(!system_read_paths(false).contains(&PathBuf::from("/etc/ssl")));
        assert!(system_read_paths(true).contains(&PathBuf::from("/etc/ssl")));
        assert!(
            !system_read_paths(true)
                .iter()
                .any(|p| p.starts_with("/proc") || p.starts_with("/home"))
        );
    }
}
