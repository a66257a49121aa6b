//! The runner: checks a run (tool, arguments, grant against the session policy, confinement
//! available, gate), materialises the workspace, has the `process` module start and
//! supervise the confined process, and turns the outcome into a result or a [`ScriptError`].

use std::cell::LazyCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use super::gate::{Gate, GateKind, GateRequest, ask};
use super::policy::{check_within, lexical_normalize};
use super::process::{receive_work, supervise};
use super::proxy::{NetworkReport, ProxyConfig, ProxyLimits, RunProxy};
use super::sandbox::{
    self, DEVICES, FsAccess, FsRule, GrantedTree, HelperPolicy, JoinWorkspace, Mode, NetMode,
    RUN_HOST_ID, RunLimits, WORKSPACE_MNT_FD, WORKSPACE_USER_FD,
};
use super::tools::{Interpreters, SYSTEM_PATH, ScriptTool, SkillTools};
use super::workspace::{
    Quota, UserDirs, Workspace, WorkspaceBase, enforce_bounded_quota, enforce_quota,
};
use super::{Captured, ScriptError};
use crate::capability::{Grant, Network, Pin, Trust};
use crate::document::Skill;
use crate::source::Source;
use crate::tool::{FailureKind, ToolFailure, ToolKind};

#[cfg(target_os = "linux")]
use super::sandbox::linux::cgroup::{GroupLimits, RunGroup};

/// Off Linux there are no run groups (the type keeps one code path).
#[cfg(not(target_os = "linux"))]
struct RunGroup;

#[cfg(not(target_os = "linux"))]
impl RunGroup {
    fn join_files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    fn out_of_memory(&self) -> bool {
        false
    }
    fn remove(self) {}
}

/// Whether runs get a control group of their own on this host, and if not, why (found once
/// per process): a host says this once, loudly, since without one the kernel memory a run
/// holds and its memory across processes are not bounded.
pub fn cgroup_status() -> Result<(), NoCgroup> {
    #[cfg(target_os = "linux")]
    {
        sandbox::linux::cgroup::status()
            .map(|_| ())
            .map_err(|why| NoCgroup::Unavailable(why.to_string()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(NoCgroup::NotLinux)
    }
}

/// Why runs get no control group of their own ([`cgroup_status`]), shown as the warning a host
/// says once: what is then not bounded, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoCgroup {
    /// Linux, but no cgroup v2 subtree or v1 hierarchies this process may write: why.
    #[error(
        "runs are not in a cgroup ({0}): each process is bounded by its rlimits, but the \
         kernel memory a run holds (socket and pipe buffers) and its memory across processes \
         are not; run skillcat as root, or where the system delegates a cgroup v2 subtree with \
         the memory and pids controllers"
    )]
    Unavailable(String),
    /// Not Linux: cgroups exist only there.
    #[error(
        "runs are not in a cgroup (cgroups exist only on Linux): each process is bounded by its \
         rlimits alone"
    )]
    NotLinux,
}

/// Resource limits and caps of every run. All configurable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptLimits {
    /// `RLIMIT_AS` (default 1 GiB).
    pub address_space: u64,
    /// Processes (threads included) inside one run (default 64).
    pub processes: u64,
    /// Output kept, stdout and stderr together (default 64 KiB); the pipe keeps draining.
    pub output: usize,
    /// Largest file a script may write (default 256 MiB).
    pub file_size: u64,
    /// Open files (default 256).
    pub open_files: u64,
    /// The longest timeout a grant may set (default 600 s).
    pub max_timeout: Duration,
    /// Bytes a workspace may hold (default 256 MiB): the skill's files, and what runs leave in
    /// `work/` (disk blocks).
    pub workspace_bytes: u64,
    /// Files and directories a workspace may hold (default 10,000).
    pub workspace_files: u64,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        ScriptLimits {
            address_space: 1 << 30,
            processes: 64,
            output: 64 * 1024,
            file_size: 256 << 20,
            open_files: 256,
            max_timeout: Duration::from_secs(600),
            workspace_bytes: 256 << 20,
            workspace_files: 10_000,
        }
    }
}

impl ScriptLimits {
    /// The run limits a configured ceiling sets (memory, processes, output, the longest
    /// timeout, the workspace's size); the rest stay at their defaults.
    pub fn from_ceiling(ceiling: &crate::capability::Ceiling) -> Self {
        ScriptLimits {
            address_space: ceiling.memory,
            processes: ceiling.processes,
            output: usize::try_from(ceiling.output).unwrap_or(usize::MAX),
            max_timeout: Duration::from_secs(ceiling.max_timeout.max(1)),
            workspace_bytes: ceiling.workspace_bytes,
            workspace_files: ceiling.workspace_files,
            ..ScriptLimits::default()
        }
    }
}

/// How a [`Runner`] runs scripts.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The executable re-run as the sandbox helper (default: this process's own binary; it must
    /// call [`sandbox::helper_main`] first thing in `main`).
    pub helper: PathBuf,
    /// The interpreter allow-list.
    pub interpreters: Interpreters,
    /// Limits.
    pub limits: ScriptLimits,
    /// The session policy: no grant may exceed it.
    pub policy: Grant,
    /// Where workspaces live (default [`WorkspaceBase::default_dir`]: the user's runtime
    /// directory, else the cache directory — never a name in the shared `/tmp`). Its parent
    /// must be a directory only this user (or root) may write in.
    pub workspace_base: PathBuf,
    /// Whether a non-zero exit is an error (default `true`); `false` returns it as a plain
    /// result.
    pub fail_on_nonzero: bool,
    /// The caller's working directory (absolute, canonical), when it has one that means
    /// something (default none): a script whose grant reaches it starts there, so a relative
    /// argument names what the caller meant ([`start_dir`]). Otherwise scripts start in their
    /// work directory.
    pub caller_dir: Option<PathBuf>,
    /// `[sandbox.resolve]`: names (and ports) the proxy of a run granted a host list connects
    /// to fixed addresses, which may then be private or loopback ones (default none).
    pub pins: Vec<Pin>,
    /// The bounds of each run's proxy.
    pub proxy: ProxyLimits,
    /// `[sandbox] protect`: names (or paths relative to a write grant) kept read-only inside
    /// every write grant, beside the built-in set ([`protect::PROTECTED`](super::protect)).
    pub protect: Vec<String>,
    /// The catalog's own skill directories: read-only inside every write grant, and a write
    /// grant inside one is read-only.
    pub skill_dirs: Vec<PathBuf>,
    /// The user's directories: where the default workspace base is, and the home whose
    /// hidden files no grant reaches.
    pub user_dirs: UserDirs,
}

impl RunnerConfig {
    /// Defaults around a session policy: this binary as the helper, the default interpreters,
    /// default limits, the per-user workspace base of `user_dirs`.
    pub fn new(policy: Grant, user_dirs: UserDirs) -> Self {
        RunnerConfig {
            helper: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
            interpreters: Interpreters::host_default(),
            limits: ScriptLimits::default(),
            policy,
            workspace_base: WorkspaceBase::default_dir(&user_dirs),
            fail_on_nonzero: true,
            caller_dir: None,
            pins: Vec::new(),
            proxy: ProxyLimits::default(),
            protect: Vec::new(),
            skill_dirs: Vec::new(),
            user_dirs,
        }
    }
}

/// How a run was confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Confined; the summary names the mechanisms in force.
    Confined(String),
    /// Not confined (a `trust: core` skill where confinement is unavailable), and why.
    Unconfined(String),
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptOutput {
    /// The tool that ran.
    pub tool: String,
    /// Its exit status (0, or anything when the host opted out of failures).
    pub exit_code: i32,
    /// What it printed.
    pub output: Captured,
    /// Wall-clock time.
    pub duration: Duration,
    /// How it was confined.
    pub confinement: Confinement,
    /// What it did on the network, for a run granted a host list (its proxy's report).
    pub network: Option<NetworkReport>,
}

/// `[line]` for each refusal and limit of a run's network report (with the hints), after what
/// the script printed.
pub(crate) fn append_network(s: &mut String, report: Option<&NetworkReport>) {
    for line in report.map(NetworkReport::refusal_lines).unwrap_or_default() {
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&format!("[{line}]"));
    }
}

impl ScriptOutput {
    /// Cuts the script's own output so that [`to_model_text`](Self::to_model_text) — output,
    /// network report, exit status and notes — is at most `cap` bytes (the host's lines are
    /// bounded and kept; the output gives way and says so).
    pub fn fit(&mut self, cap: usize) {
        let mut output = std::mem::take(&mut self.output);
        output.fit_within(cap, |o| {
            let mut probe = self.clone_without_output();
            probe.output = o.clone();
            probe.to_model_text().len()
        });
        self.output = output;
    }

    fn clone_without_output(&self) -> ScriptOutput {
        ScriptOutput {
            tool: String::new(),
            exit_code: self.exit_code,
            output: Captured::default(),
            duration: self.duration,
            confinement: self.confinement.clone(),
            network: self.network.clone(),
        }
    }

    /// The text a model reads: the output (with a truncation note), the exit status when it is
    /// not 0, a note when the run was not confined, and what it did on the network (hosts
    /// reached and refused, with hints) when it was granted a host list.
    pub fn to_model_text(&self) -> String {
        let mut s = self.output.render();
        append_network(&mut s, self.network.as_ref());
        if self.exit_code != 0 {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&format!("[exit status {}]", self.exit_code));
        }
        if let Confinement::Unconfined(why) = &self.confinement {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&format!("[ran without confinement: {why}]"));
        }
        s
    }
}

/// A skill whose scripts can run: its source, tools and grant, and (after the first run) its
/// workspace. Dropping it (or [`unload`](LoadedSkill::unload)) removes the workspace.
#[derive(Debug)]
pub struct LoadedSkill {
    source: Arc<dyn Source>,
    skill: Skill,
    tools: SkillTools,
    grant: Grant,
    base: WorkspaceBase,
    workspace: tokio::sync::OnceCell<Workspace>,
    /// Held by the run that makes the workspace's bounded work directory, until its helper
    /// has handed it over: runs that start meanwhile wait, then join it.
    bounding: tokio::sync::Mutex<()>,
    /// The run parked for this skill's next call (see [`Runner::run`]).
    #[cfg(target_os = "linux")]
    parked: Arc<std::sync::Mutex<Option<Pooled>>>,
}

/// A run parked ahead of a call (`park::Parked`) and the control group it joined. Dropped
/// untaken, its helper's group is killed first, then the control group removed.
#[cfg(target_os = "linux")]
struct Pooled {
    parked: super::park::Parked,
    group: Option<RunGroup>,
}

/// Drops a parked run that will not be taken: its helper's group killed now, its control group
/// (whose removal waits for the processes to be gone) removed on the teardown thread.
#[cfg(target_os = "linux")]
fn discard(pooled: Pooled) {
    let Pooled { parked, group } = pooled;
    drop(parked);
    if let Some(g) = group {
        super::reaper::later::run(move || g.remove());
    }
}

#[cfg(target_os = "linux")]
impl std::fmt::Debug for Pooled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pooled").finish_non_exhaustive()
    }
}

impl LoadedSkill {
    /// The skill.
    pub fn skill(&self) -> &Skill {
        &self.skill
    }

    /// Its tools.
    pub fn tools(&self) -> &SkillTools {
        &self.tools
    }

    /// Its effective grant.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// Its workspace, once a run has created it.
    pub fn workspace(&self) -> Option<&Workspace> {
        self.workspace.get()
    }

    /// Unloads the skill, removing its workspace (reporting a failure to remove it).
    pub async fn unload(self) -> Result<(), ScriptError> {
        // A parked run is inside the workspace's namespaces: it goes first.
        #[cfg(target_os = "linux")]
        drop(self.parked);
        match self.workspace.into_inner() {
            // Left to the cleaner that removes it once this process has exited: its lock is
            // held until then.
            Some(ws) if super::reaper::after_exit::handed_over(self.base.dir()) => {
                std::mem::forget(ws);
                Ok(())
            }
            Some(ws) => tokio::task::spawn_blocking(move || ws.remove())
                .await
                .map_err(|e| ScriptError::workspace(format!("removing the workspace: {e}")))?,
            None => Ok(()),
        }
    }

    /// The workspace, materialised at the first run. Its bounded work directory is made by the
    /// helper of the first confined run on Linux (see [`Runner::run`]); where that fails the
    /// work directory stays on disk, checked after each run, and the run's summary says why.
    async fn ensure_workspace(&self) -> Result<&Workspace, ScriptError> {
        self.workspace
            .get_or_try_init(|| async {
                // Hard links into the per-digest copy only where every run is confined: a
                // `trust: core` skill may run unconfined and could write through a link.
                let links = !self.grant.is_core();
                let ws = self
                    .base
                    .materialise_shared(&*self.source, &self.skill, links)
                    .await?;
                Ok(ws)
            })
            .await
    }
}

/// Runs script tools.
pub struct Runner {
    config: RunnerConfig,
    gate: Arc<dyn Gate>,
    base: WorkspaceBase,
    landlock: Option<u32>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        // The teardown its runs left (their control groups) is done before it goes, unless
        // a cleaner does it after this process exits; so is what gone processes left, where
        // it was left to a cleaner that could not start.
        if !super::reaper::after_exit::any() {
            super::reaper::later::settle(Duration::from_secs(3));
            if super::reaper::after_exit::wanted() {
                let _ = self.base.clean_stale();
                sweep_groups();
            }
        }
    }
}

/// Removes the control groups of runs whose supervisor was killed before it could.
fn sweep_groups() {
    #[cfg(target_os = "linux")]
    if let Ok(groups) = sandbox::linux::cgroup::status() {
        groups.clean_stale();
    }
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("config", &self.config)
            .field("landlock", &self.landlock)
            .finish_non_exhaustive()
    }
}

/// The uid/gid scripts run as on the host when that differs from ours (a root host).
pub(crate) fn script_owner() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    (unsafe { libc::geteuid() } == 0 && cfg!(target_os = "linux"))
        .then_some((RUN_HOST_ID, RUN_HOST_ID))
}

impl Runner {
    /// A runner with a gate. Opens the workspace base, removing workspaces left by processes
    /// that are gone (in a process that makes one run and exits,
    /// [`teardown_after_exit`](super::teardown_after_exit), its cleaner removes them after it
    /// exits instead).
    pub fn new(config: RunnerConfig, gate: Arc<dyn Gate>) -> Result<Self, ScriptError> {
        // What gone processes left is removed now, or, in a process that makes one run and
        // exits, by its cleaner after it exits (or when the runner goes, where no cleaner
        // could start): the answer does not wait for it.
        let later = super::reaper::after_exit::wanted();
        let dir = config.workspace_base.clone();
        let base = if later {
            WorkspaceBase::open_unswept(dir, script_owner())?
        } else {
            WorkspaceBase::open(dir, script_owner())?
        };
        let base = base.with_quota(Quota {
            bytes: config.limits.workspace_bytes,
            files: config.limits.workspace_files,
        });
        if !later {
            sweep_groups();
        }
        super::reaper::after_exit::arm(&config.helper, base.dir());
        Ok(Runner {
            config,
            gate,
            base,
            landlock: sandbox::landlock_abi(),
        })
    }

    /// Pretends the kernel has (or lacks) Landlock, for testing the fail-closed paths. The
    /// helper checks the real kernel again and still refuses to run without it.
    #[doc(hidden)]
    pub fn assume_landlock_abi(mut self, abi: Option<u32>) -> Self {
        self.landlock = abi;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// The workspace base.
    pub fn workspace_base(&self) -> &WorkspaceBase {
        &self.base
    }

    /// Finds a skill's tools (see [`discover`](super::tools::discover)) and keeps what its runs
    /// need. The workspace is made at the first run.
    pub async fn load(
        &self,
        source: Arc<dyn Source>,
        skill: Skill,
        grant: Grant,
    ) -> Result<LoadedSkill, ScriptError> {
        let tools = super::tools::discover(&*source, &skill, &self.config.interpreters).await?;
        Ok(LoadedSkill {
            source,
            skill,
            tools,
            grant,
            base: self.base.clone(),
            workspace: tokio::sync::OnceCell::new(),
            bounding: tokio::sync::Mutex::new(()),
            #[cfg(target_os = "linux")]
            parked: Arc::default(),
        })
    }

    /// Runs one tool of a loaded skill with JSON arguments.
    pub async fn run(
        &self,
        skill: &LoadedSkill,
        tool: &str,
        args: &Json,
    ) -> Result<ScriptOutput, ScriptError> {
        let t = self.tool_to_run(skill, tool)?;
        let script_args = t.argv(args).map_err(|e| e.of_tool(&t.name))?;
        let (grant, timeout) = self.effective_grant(skill)?;
        let mode = self.mode(&grant)?;
        self.ask_gate(skill, t, &script_args, &grant, mode).await?;

        let ws = skill.ensure_workspace().await?;
        let making = making_work(skill, ws, mode).await;
        // A host list: the script's only way out is a proxy this run starts (Linux: listening
        // inside the run's own network namespace; macOS: on the host's loopback, the one
        // address the profile lets it reach).
        let hosts = match (&grant.network, mode) {
            (Network::Hosts(h), Mode::Confined) => Some(h.clone()),
            _ => None,
        };
        #[cfg(not(target_os = "linux"))]
        let (host_listener, proxy_port) = host_listener(hosts.is_some())?;
        let mut policy = self.helper_policy(t, ws, &grant, script_args, timeout, mode)?;
        if policy.network == NetMode::Proxied {
            #[cfg(target_os = "linux")]
            let port = sandbox::PROXY_PORT;
            #[cfg(not(target_os = "linux"))]
            let port = {
                policy.proxy_port = proxy_port;
                proxy_port
            };
            policy.env.extend(proxy_env(port));
        }
        let making = match making {
            Some(guard) => Some((guard, self.make_work(ws, &mut policy)?)),
            None => None,
        };
        let cwd = self.start_dir(&grant, ws);
        // A process that serves many calls (an MCP server, a library session) parks the next
        // run of a skill ahead, after this one; a call of the same shape only releases it.
        #[cfg(target_os = "linux")]
        let pool = (making.is_none()
            && !super::reaper::after_exit::wanted()
            && super::park::parkable(&self.config.helper, &policy))
        .then(|| skill.parked.clone());
        #[cfg(target_os = "linux")]
        let taken = pool.as_ref().and_then(|slot| {
            let p = slot.lock().ok()?.take()?;
            if p.parked.fits(&policy, &cwd) {
                Some(p)
            } else {
                discard(p);
                None
            }
        });
        // The run's control group: the kernel bounds the memory (kernel memory included) and
        // tasks of the whole run. Made before the helper starts (a parked run's with it),
        // removed (with anything left in it) when the run ends, however it ends.
        #[cfg(target_os = "linux")]
        let (taken, group) = match taken {
            Some(Pooled { parked, group }) => (Some(parked), group),
            None => (None, new_group(&policy.limits)?),
        };
        #[cfg(not(target_os = "linux"))]
        let group = new_group(&policy.limits)?;
        if let Some(g) = &group {
            policy.cgroup = g.join_files();
        }
        let started = Instant::now();
        let (ours, theirs) = match making {
            Some((guard, (ours, theirs))) => (Some((guard, ours)), Some(theirs)),
            None => (None, None),
        };
        #[cfg(target_os = "linux")]
        let (proxy_ours, proxy_theirs) = proxy_socket(hosts.is_some())?;
        let proxy_config = hosts.map(|allowed| ProxyConfig {
            allowed,
            pins: self.config.pins.clone(),
            limits: self.config.proxy,
        });
        let run = async {
            let mut inherit = Vec::new();
            if let Some(ns) = ws.bounded().and_then(|b| b.ns.as_ref()) {
                inherit.push((&ns.mnt, WORKSPACE_MNT_FD));
                if let Some(user) = &ns.user {
                    inherit.push((user, WORKSPACE_USER_FD));
                }
            }
            if let Some(s) = &theirs {
                inherit.push((s, sandbox::WORKSPACE_SOCKET_FD));
            }
            #[cfg(target_os = "linux")]
            if let Some(s) = &proxy_theirs {
                inherit.push((s, sandbox::PROXY_SOCKET_FD));
            }
            #[cfg(target_os = "linux")]
            // Its control group is this run's either way: a parked run that cannot be
            // released any more (its helper died) is started afresh in it.
            if let Some(parked) = taken
                && let Some(raw) = parked
                    .run(&policy, self.config.limits.output, timeout)
                    .await
            {
                return raw;
            }
            let raw = supervise(
                &self.config.helper,
                self.config.limits.output,
                &policy,
                cwd.clone(),
                timeout,
                &inherit,
            )
            .await;
            // The helper is gone: a socket it never answered on now reads as closed.
            drop(inherit);
            drop(theirs);
            #[cfg(target_os = "linux")]
            drop(proxy_theirs);
            raw
        };
        #[cfg(target_os = "linux")]
        let proxy = start_proxy(proxy_config, proxy_ours);
        #[cfg(not(target_os = "linux"))]
        let proxy = start_proxy(proxy_config, host_listener);
        // What the helper made is taken as soon as it says so, not when the run ends: runs
        // waiting for the lock go on.
        let handover = take_work(ws, ours);
        let (raw, (), proxy) = tokio::join!(run, handover, proxy);
        let network = network_report(proxy);
        let out_of_memory = end_group(group);
        let raw = raw.map(|mut r| {
            if out_of_memory {
                note_out_of_memory(&mut r.output, &policy.limits);
            }
            r
        });
        let quota = self.measure_quota(ws).await;
        // The next run is parked once the workspace is settled: a run over its quota leaves
        // the work directory emptied, and a run parked before that would find its own
        // temporary directory (made while it was set up) removed under it.
        #[cfg(target_os = "linux")]
        if let Some(slot) = pool {
            self.park_next(slot, &policy, cwd, ws);
        }
        let mut raw = raw?;
        if network.is_some() && raw.timed_out {
            self.keep_report_in_output(&mut raw.output, network.as_ref());
        }
        if let Some(reason) = quota? {
            return Err(ScriptError::WorkspaceFull {
                reason,
                output: raw.output,
            });
        }
        let duration = started.elapsed();
        if raw.timed_out {
            return Err(ToolFailure::new(
                ToolKind::Script,
                &t.name,
                FailureKind::Timeout { after: timeout },
            )
            .with_output(raw.output)
            .into());
        }
        let (code, signal) = raw.exit;
        let confinement = confinement(mode, raw.ready, ws);
        if code != 0 && self.config.fail_on_nonzero {
            return Err(ScriptError::Failed {
                code,
                signal,
                output: raw.output,
                network: network.map(Box::new),
            });
        }
        Ok(ScriptOutput {
            tool: t.name.clone(),
            exit_code: code,
            output: raw.output,
            duration,
            confinement,
            network,
        })
    }

    /// The skill's grant made canonical and checked against the session's policy, and the
    /// run's timeout (the grant's, within one second and the longest allowed).
    fn effective_grant(&self, skill: &LoadedSkill) -> Result<(Grant, Duration), ScriptError> {
        let grant = canonical_grant(&skill.grant)?;
        check_within(&grant, &canonical_policy(&self.config.policy))?;
        self.check_workspaces_apart(&grant)?;
        let timeout = grant.timeout.clamp(
            Duration::from_secs(1),
            self.config.limits.max_timeout.max(Duration::from_secs(1)),
        );
        Ok((grant, timeout))
    }

    /// Where the script starts: the caller's directory when the grant reaches it
    /// ([`start_dir`]), else the work directory.
    fn start_dir(&self, grant: &Grant, ws: &Workspace) -> PathBuf {
        self.config
            .caller_dir
            .as_deref()
            .and_then(|caller| start_dir(grant, caller))
            .unwrap_or_else(|| ws.work_dir())
    }

    /// The tool named `tool`, when the skill offers it and its interpreter is allowed.
    fn tool_to_run<'a>(
        &self,
        skill: &'a LoadedSkill,
        tool: &str,
    ) -> Result<&'a ScriptTool, ScriptError> {
        let t = match skill.tools.find(tool) {
            Some(t) => t,
            None => {
                return Err(match skill.tools.skipped(tool) {
                    Some(s) => s.error.clone(),
                    None => ScriptError::NotFound {
                        tool: tool.to_string(),
                    },
                });
            }
        };
        if !self.config.interpreters.contains_path(&t.interpreter.path) {
            return Err(ScriptError::InterpreterRefused {
                script: t.path.clone(),
                interpreter: t.interpreter.path.display().to_string(),
            });
        }
        Ok(t)
    }

    /// Asks the gate whether this run may go ahead; a refusal is the tool's failure.
    async fn ask_gate(
        &self,
        skill: &LoadedSkill,
        t: &ScriptTool,
        script_args: &[String],
        grant: &Grant,
        mode: Mode,
    ) -> Result<(), ScriptError> {
        let request = GateRequest {
            skill: &skill.tools.skill,
            tool: &t.name,
            kind: GateKind::Script {
                script: &t.path,
                interpreter: &t.interpreter.name,
                args: script_args,
                grant,
                confined: mode == Mode::Confined,
            },
        };
        ask(&*self.gate, &request)
            .await
            .map_err(|r| r.into_failure(ToolKind::Script, &t.name))?;
        Ok(())
    }

    /// What the run left counts against the workspace's quota, whatever way it ended: a
    /// bounded work directory stopped it at the quota (a full tmpfs says it got there); one
    /// on disk is measured now. `Some(reason)` when the workspace is over its quota.
    async fn measure_quota(&self, ws: &Workspace) -> Result<Option<String>, ScriptError> {
        let (work, limit) = (ws.work_dir(), self.base.quota());
        let bounded = ws.bounded().map(|b| (b.root.try_clone(), b.inode));
        super::offload(move || match bounded {
            Some((Ok(root), inode)) => enforce_bounded_quota(root, inode, &work, limit),
            Some((Err(e), _)) => Err(ScriptError::workspace(format!("{}: {e}", work.display()))),
            None => enforce_quota(&work, limit),
        })
        .await
        .map_err(|e| ScriptError::workspace(format!("measuring the work directory: {e}")))
        .and_then(|r| r)
    }

    /// A timeout's output carries the network report in its text: the report is the host's
    /// and is kept, the output gives way to it within the cap.
    fn keep_report_in_output(&self, output: &mut Captured, network: Option<&NetworkReport>) {
        let mut report = String::new();
        append_network(&mut report, network);
        let room = self.config.limits.output.saturating_sub(report.len() + 96);
        output.keep_at_most(room);
        append_network(&mut output.text, network);
    }

    /// Asks the run's helper to make the workspace's bounded work directory first
    /// ([`HelperPolicy::make_work`]); returns the supervisor's and the helper's ends of the
    /// socket it answers on.
    #[cfg(target_os = "linux")]
    fn make_work(
        &self,
        ws: &Workspace,
        policy: &mut HelperPolicy,
    ) -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), ScriptError> {
        let failed = |e: String| ScriptError::SandboxFailed {
            reason: format!("the workspace's work directory: {e}"),
        };
        let work = ws.work_dir();
        let inode = sandbox::pinned_identity(&work)
            .map_err(|e| failed(format!("{}: {e}", work.display())))?
            .ok_or_else(|| failed("no file identities on this system".into()))?;
        let quota = self.base.quota();
        policy.make_work = Some(sandbox::WorkspacePolicy {
            work,
            inode,
            bytes: quota.bytes,
            files: quota.files,
            // A process that makes one run: the run's own namespaces hold it.
            in_run: super::reaper::after_exit::wanted(),
        });
        super::process::work_socket().map_err(|e| failed(format!("socket: {e}")))
    }

    /// Off Linux a work directory stays on disk.
    #[cfg(not(target_os = "linux"))]
    fn make_work(
        &self,
        _ws: &Workspace,
        _policy: &mut HelperPolicy,
    ) -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), ScriptError> {
        Err(ScriptError::SandboxFailed {
            reason: "a bounded work directory exists only on Linux".into(),
        })
    }

    /// The host's home directories (`home::homes`), read only when a granted path needs them:
    /// the password database and every account's home resolved are most of a grant's checks,
    /// and a run that grants no path needs neither.
    fn homes(&self) -> LazyCell<Vec<super::home::Home>, impl FnOnce() -> Vec<super::home::Home>> {
        let home = self.config.user_dirs.home.clone();
        LazyCell::new(move || super::home::homes(home.as_deref()))
    }

    /// A grant never reaches a workspace, whatever the ceiling says: every run's scripts share
    /// one uid, so a granted path that holds the workspace base (`/`, `/tmp`, the home
    /// directory…) or lies in it would let one skill read or change another's `work/`.
    fn check_workspaces_apart(&self, grant: &Grant) -> Result<(), ScriptError> {
        let mut bases = vec![self.base.dir().to_path_buf()];
        if let Ok(d) = std::fs::canonicalize(WorkspaceBase::default_dir(&self.config.user_dirs)) {
            bases.push(d);
        }
        // A grant holding a home reaches none of its dot-entries unless a grant names one
        // (`home::grantable`): a base beneath one (`~/.cache/skillcat/ws`, the base without
        // a runtime directory) is held only by what the grant reaches once carved.
        let homes = self.homes();
        let reaches = |p: &Path, base: &Path| {
            if !base.starts_with(p) || base == p {
                return true;
            }
            match super::home::grantable(p, &homes, &super::home::list_dir) {
                Ok(carved) => carved
                    .iter()
                    .any(|c| base.starts_with(c) || c.starts_with(base)),
                Err(_) => true,
            }
        };
        for p in grant.fs_read.iter().chain(&grant.fs_write) {
            if let Some(base) = bases
                .iter()
                .find(|b| (b.starts_with(p) || p.starts_with(b)) && reaches(p, b))
            {
                return Err(ScriptError::PolicyWidened {
                    reason: format!(
                        "granted path {} {} the skill workspaces in {}; a grant never reaches \
                         a workspace (narrow the grant, or the [sandbox] ceiling)",
                        p.display(),
                        if base.starts_with(p) {
                            "holds"
                        } else {
                            "lies in"
                        },
                        base.display()
                    ),
                });
            }
        }
        Ok(())
    }

    /// Parks the skill's next run, shaped as `policy`'s (see [`Runner::run`]), on a task of
    /// its own: after the answer of the run before, off its path. The run replaces one parked
    /// meanwhile (which is then killed).
    #[cfg(target_os = "linux")]
    fn park_next(
        &self,
        slot: Arc<std::sync::Mutex<Option<Pooled>>>,
        policy: &HelperPolicy,
        cwd: PathBuf,
        ws: &Workspace,
    ) {
        let Some(ns) = ws.bounded().and_then(|b| b.ns.as_ref()) else {
            return;
        };
        let (Ok(mnt), Ok(user)) = (
            ns.mnt.try_clone(),
            ns.user.as_ref().map(|u| u.try_clone()).transpose(),
        ) else {
            return;
        };
        let helper = self.config.helper.clone();
        let mut policy = policy.clone();
        tokio::spawn(async move {
            let Ok(group) = new_group(&policy.limits) else {
                return;
            };
            policy.cgroup = group.as_ref().map(|g| g.join_files()).unwrap_or_default();
            let mut inherit = vec![(&mnt, WORKSPACE_MNT_FD)];
            if let Some(u) = &user {
                inherit.push((u, WORKSPACE_USER_FD));
            }
            let Some(parked) = super::park::park(&helper, &policy, &cwd, &inherit).await else {
                return;
            };
            let old = slot
                .lock()
                .ok()
                .and_then(|mut s| s.replace(Pooled { parked, group }));
            if let Some(old) = old {
                discard(old);
            }
        });
    }

    /// Confined when the system can confine; unconfined only for `trust: core`; else refused.
    fn mode(&self, grant: &Grant) -> Result<Mode, ScriptError> {
        let available = if cfg!(target_os = "linux") {
            self.landlock.is_some()
        } else if cfg!(target_os = "macos") {
            Path::new(sandbox::macos::SANDBOX_EXEC).exists()
        } else {
            false
        };
        if available {
            Ok(Mode::Confined)
        } else if grant.trust == Trust::Core {
            Ok(Mode::Unconfined)
        } else {
            Err(ScriptError::SandboxUnavailable {
                reason: unconfined_reason(),
            })
        }
    }

    /// The run's file system rules: the system's paths, the interpreter's prefix, the skill
    /// (read), each granted path less a home's dot-entries, the work directory (unless bounded:
    /// then the joined workspace) and the devices, each required path pinned to its inode. With
    /// them, each granted path and whether it is granted for writing.
    fn fs_rules(
        &self,
        t: &ScriptTool,
        ws: &Workspace,
        grant: &Grant,
    ) -> Result<FsRules, ScriptError> {
        let work = ws.work_dir();
        let skill_dir = ws.skill_dir();
        let system = if cfg!(target_os = "macos") {
            sandbox::macos::system_read_paths(grant.network.any())
        } else {
            sandbox::system_read_paths(grant.network.any())
        };
        let mut rules: Vec<FsRule> = system.into_iter().map(FsRule::system).collect();
        if let Some(prefix) = interpreter_prefix(&t.interpreter.path, &rules) {
            rules.push(FsRule {
                path: prefix,
                access: FsAccess::ReadExec,
                required: false,
                inode: None,
            });
        }
        rules.push(FsRule {
            path: skill_dir,
            access: FsAccess::ReadExec,
            required: true,
            inode: None,
        });
        // A granted path that holds a home directory is granted less the home's dot-entries
        // (`home::grantable`); one in another account's home is refused.
        let homes = self.homes();
        let carved = |p: &PathBuf| {
            super::home::grantable(p, &homes, &super::home::list_dir).map_err(|e| {
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    ScriptError::PolicyWidened {
                        reason: e.to_string(),
                    }
                } else {
                    ScriptError::SandboxFailed {
                        reason: format!("granting {}: {e}", p.display()),
                    }
                }
            })
        };
        // Each granted path as its rule has it, and whether it is granted for writing.
        let mut granted: Vec<(PathBuf, bool)> = Vec::new();
        for p in &grant.fs_read {
            for path in carved(p)? {
                granted.push((path.clone(), false));
                rules.push(FsRule {
                    path,
                    access: FsAccess::ReadExec,
                    required: true,
                    inode: None,
                });
            }
        }
        // A bounded work directory is a tmpfs in the workspace's mount namespace: the helper
        // joins it and binds the rule to the tmpfs's root there. One that was the first run's
        // own (a process that makes one run) is joined by none.
        let workspace = match ws.bounded() {
            Some(b) => match &b.ns {
                Some(ns) => Some(JoinWorkspace {
                    user: ns.user.is_some(),
                    work: work.clone(),
                    inode: b.inode,
                }),
                None => {
                    return Err(ScriptError::SandboxFailed {
                        reason: "this process made its one run (teardown_after_exit): that run's \
                             work directory was its own, and no later run can enter it"
                            .into(),
                    });
                }
            },
            None => None,
        };
        if workspace.is_none() {
            rules.push(FsRule {
                path: work,
                access: FsAccess::ReadWrite,
                required: true,
                inode: None,
            });
        }
        for p in &grant.fs_write {
            for path in carved(p)? {
                granted.push((path.clone(), true));
                rules.push(FsRule {
                    path,
                    access: FsAccess::ReadWrite,
                    required: true,
                    inode: None,
                });
            }
        }
        for d in DEVICES {
            rules.push(FsRule {
                path: d.into(),
                access: FsAccess::ReadWrite,
                required: false,
                inode: None,
            });
        }
        // Every path checked here (the workspace, each granted path) is pinned to the inode
        // found now, reached without following links: the helper binds its rule to that inode
        // or refuses (a symbolic link swapped in after the check binds nothing).
        for r in rules.iter_mut().filter(|r| r.required) {
            r.inode =
                sandbox::pinned_identity(&r.path).map_err(|e| ScriptError::SandboxFailed {
                    reason: format!("{}: {e}", r.path.display()),
                })?;
        }
        Ok(FsRules {
            rules,
            granted,
            workspace,
        })
    }

    /// What the run's helper is told: the command, its environment, the file system rules, the
    /// network, the limits and the workspace.
    fn helper_policy(
        &self,
        t: &ScriptTool,
        ws: &Workspace,
        grant: &Grant,
        script_args: Vec<String>,
        timeout: Duration,
        mode: Mode,
    ) -> Result<HelperPolicy, ScriptError> {
        let work = ws.work_dir();
        let skill_dir = ws.skill_dir();
        let script = skill_dir.join(&t.path);
        let mut argv = vec![t.interpreter.path.to_string_lossy().into_owned()];
        argv.extend(t.interpreter.args.iter().cloned());
        argv.push(script.to_string_lossy().into_owned());
        argv.extend(script_args);
        let network = match (&grant.network, mode) {
            (Network::Off, _) => NetMode::Off,
            (Network::Hosts(_), Mode::Confined) => NetMode::Proxied,
            // Unconfined (trust: core without Landlock): no namespace, the host's network.
            (Network::Hosts(_), Mode::Unconfined) | (Network::All, _) => NetMode::All,
        };
        let env = vec![
            ("PATH".to_string(), SYSTEM_PATH.to_string()),
            ("HOME".to_string(), work.to_string_lossy().into_owned()),
            (
                "TMPDIR".to_string(),
                ws.tmp_dir().to_string_lossy().into_owned(),
            ),
            ("LANG".to_string(), "C.UTF-8".to_string()),
        ];

        let FsRules {
            rules,
            granted,
            workspace,
        } = self.fs_rules(t, ws, grant)?;
        // Root's files in a granted tree would be closed to the script on a root host: the
        // helper maps them to it.
        let root_host = script_owner().is_some() && mode == Mode::Confined;
        // What runs code outside the sandbox stays read-only inside every write grant.
        let protect = super::protect::protected_paths(
            &grant.fs_write,
            &self.config.protect,
            &self.config.skill_dirs,
            &super::protect::list_names,
        );
        let granted = if root_host {
            granted
                .into_iter()
                .map(|(path, write)| {
                    let inode = rules
                        .iter()
                        .find(|r| r.required && r.path == path)
                        .and_then(|r| r.inode);
                    GrantedTree { path, write, inode }
                })
                .collect()
        } else {
            Vec::new()
        };
        let secs = timeout.as_secs().max(1);
        Ok(HelperPolicy {
            mode,
            program: t.interpreter.path.clone(),
            argv,
            env,
            rules,
            network,
            proxy_port: 0,
            limits: RunLimits {
                // Above the wall-clock timeout, so a spinning script ends with the timeout error.
                cpu_seconds: secs + 2,
                address_space: self.config.limits.address_space,
                file_size: self.config.limits.file_size,
                open_files: self.config.limits.open_files,
                processes: self.config.limits.processes,
            },
            timeout_seconds: secs,
            supervisor: std::process::id(),
            workspace,
            make_work: None,
            builtin: false,
            cgroup: Vec::new(),
            protect,
            granted,
            parked: false,
        })
    }
}

/// A run's file system rules ([`Runner::fs_rules`]).
struct FsRules {
    rules: Vec<FsRule>,
    /// Each granted path as its rule has it, and whether it is granted for writing.
    granted: Vec<(PathBuf, bool)>,
    /// The bounded work directory the helper joins, if any.
    workspace: Option<JoinWorkspace>,
}

/// Off Linux, a proxied run's proxy listens on the host's loopback (the one address the profile
/// lets the script reach): the listener, when `proxied`, and its port (0 when not).
#[cfg(not(target_os = "linux"))]
fn host_listener(proxied: bool) -> Result<(Option<std::net::TcpListener>, u16), ScriptError> {
    let host_listener = if proxied {
        Some(
            std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).map_err(|e| {
                ScriptError::SandboxFailed {
                    reason: format!("the run's proxy: {e}"),
                }
            })?,
        )
    } else {
        None
    };
    let proxy_port = match &host_listener {
        Some(l) => l
            .local_addr()
            .map_err(|e| ScriptError::SandboxFailed {
                reason: format!("the run's proxy: {e}"),
            })?
            .port(),
        None => 0,
    };
    Ok((host_listener, proxy_port))
}

/// The first confined run makes the workspace's bounded work directory in its own helper
/// (Linux), holding the skill's lock until the helper hands it over: the lock when this run
/// makes it. A run that waited for the lock finds it made, and joins it.
async fn making_work<'a>(
    skill: &'a LoadedSkill,
    ws: &Workspace,
    mode: Mode,
) -> Option<tokio::sync::MutexGuard<'a, ()>> {
    if cfg!(target_os = "linux") && mode == Mode::Confined && !ws.bounding_decided() {
        let guard = skill.bounding.lock().await;
        (!ws.bounding_decided()).then_some(guard)
    } else {
        None
    }
}

/// On Linux, a proxied run's first process hands the proxy the listener it made inside the
/// run's network namespace over a socket: the supervisor's and the helper's ends, when
/// `proxied`.
#[cfg(target_os = "linux")]
fn proxy_socket(
    proxied: bool,
) -> Result<(Option<std::os::fd::OwnedFd>, Option<std::os::fd::OwnedFd>), ScriptError> {
    if !proxied {
        return Ok((None, None));
    }
    let (o, t) = super::process::work_socket().map_err(|e| ScriptError::SandboxFailed {
        reason: format!("the run's proxy: socket: {e}"),
    })?;
    Ok((Some(o), Some(t)))
}

/// Where the run's proxy gets its listener: on Linux, the supervisor's end of the socket the
/// run's first process hands it over on; elsewhere, the listener on the host's loopback.
#[cfg(target_os = "linux")]
type ProxyListener = std::os::fd::OwnedFd;
#[cfg(not(target_os = "linux"))]
type ProxyListener = std::net::TcpListener;

/// The proxy starts as soon as the run's first process hands over its listener (the script's
/// connections wait in its backlog until then), and serves until the run ends. `None` for a
/// run without a proxy, or one whose listener never came.
async fn start_proxy(
    cfg: Option<ProxyConfig>,
    from: Option<ProxyListener>,
) -> Option<Result<RunProxy, String>> {
    let cfg = cfg?;
    #[cfg(target_os = "linux")]
    let listener = {
        let ours = from?;
        super::process::receive_listener(ours).await
    };
    #[cfg(not(target_os = "linux"))]
    let listener = from;
    let listener = listener?;
    match RunProxy::start(listener, cfg) {
        Ok(p) => Some(Ok(p)),
        Err(e) => Some(Err(e.to_string())),
    }
}

/// Takes what the helper made of the workspace's bounded work directory as soon as it says
/// so, not when the run ends (runs waiting for the skill's lock, held in `making`, go on).
async fn take_work(
    ws: &Workspace,
    making: Option<(tokio::sync::MutexGuard<'_, ()>, std::os::fd::OwnedFd)>,
) {
    if let Some((guard, ours)) = making {
        match receive_work(ours).await {
            Ok(Some(made)) => ws.set_bounded(Ok(made)),
            Err(why) => ws.set_bounded(Err(why)),
            // The run ended before the helper got there: the next run tries again.
            Ok(None) => {}
        }
        drop(guard);
    }
}

/// The run's network report: what its proxy saw, or why the proxy could not start.
fn network_report(proxy: Option<Result<RunProxy, String>>) -> Option<NetworkReport> {
    match proxy {
        Some(Ok(p)) => Some(p.finish()),
        Some(Err(e)) => Some(NetworkReport {
            limits: vec![format!("the run's proxy could not start: {e}")],
            ..NetworkReport::default()
        }),
        // A proxied run whose first process never handed over its listener: it failed
        // before that, and says so itself.
        None => None,
    }
}

/// A new control group for one run with these limits, where the host has cgroups
/// (`None` where it has none: [`cgroup_status`] says why, once).
fn new_group(limits: &RunLimits) -> Result<Option<RunGroup>, ScriptError> {
    #[cfg(target_os = "linux")]
    {
        let Ok(groups) = sandbox::linux::cgroup::status() else {
            return Ok(None);
        };
        groups
            .create(GroupLimits {
                memory: limits.address_space,
                tasks: limits.processes,
            })
            .map(Some)
            .map_err(|e| ScriptError::SandboxFailed {
                reason: format!("cannot make the run's cgroup: {e}"),
            })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = limits;
        Ok(None)
    }
}

/// Whether the kernel killed something in the run's control group for reaching the memory
/// limit; the group itself (with anything left in it) is removed after the answer, on the
/// teardown thread.
fn end_group(group: Option<RunGroup>) -> bool {
    match group {
        Some(g) => {
            let oom = g.out_of_memory();
            if super::reaper::after_exit::any() {
                // The cleaner removes it once this process has exited (a group whose
                // supervisor is gone is stale): no thread is started for it here.
                std::mem::forget(g);
            } else {
                super::reaper::later::run(move || g.remove());
            }
            oom
        }
        None => false,
    }
}

/// Says first in the output that the run was killed at its memory limit.
fn note_out_of_memory(output: &mut Captured, limits: &RunLimits) {
    output.text.insert_str(
        0,
        &format!(
            "[the run reached its memory limit ({} MiB, kernel memory included) and was \
             killed]\n",
            limits.address_space >> 20
        ),
    );
}

/// How the run was confined: the helper's summary (with the work directory's, when it is on
/// disk), or why it was not.
fn confinement(mode: Mode, ready: Option<String>, ws: &Workspace) -> Confinement {
    match mode {
        Mode::Confined => {
            let mut summary = ready.unwrap_or_else(|| "confined".into());
            if let Some(why) = ws.on_disk() {
                summary.push_str(&format!(
                    "; work directory on disk, measured after each run ({why})"
                ));
            }
            Confinement::Confined(summary)
        }
        Mode::Unconfined => Confinement::Unconfined(unconfined_reason()),
    }
}

/// The environment that points a proxied run's clients at its proxy: `HTTP_PROXY`,
/// `HTTPS_PROXY`, `ALL_PROXY` (and their lowercase forms) at `http://127.0.0.1:PORT`, and
/// `NO_PROXY` for loopback names (the namespace's loopback is the script's own; nothing of the
/// host's is there).
fn proxy_env(port: u16) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut env = Vec::new();
    for key in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        env.push((key.to_string(), url.clone()));
        env.push((key.to_ascii_lowercase(), url.clone()));
    }
    let local = "localhost,127.0.0.1,::1".to_string();
    env.push(("NO_PROXY".to_string(), local.clone()));
    env.push(("no_proxy".to_string(), local));
    env
}

/// Where a script starts when its caller works in `caller` (absolute, canonical): there, when
/// the grant reaches it — the directory is granted, lies inside a granted directory, or holds
/// a granted path (`--allow-read app.log` from the folder holding it) — so that a relative
/// argument (`app.log`) names the file the caller meant. `None` otherwise, and for `/` (an MCP
/// server a desktop application started, whose grants all lie "in" it): the script starts in
/// its work directory. `HOME` and `TMPDIR` stay in the work directory either way.
pub fn start_dir(grant: &Grant, caller: &Path) -> Option<PathBuf> {
    let reaches = |p: &PathBuf| p.starts_with(caller) || caller.starts_with(p);
    (caller.is_absolute()
        && caller.parent().is_some()
        && grant.fs_read.iter().chain(&grant.fs_write).any(reaches))
    .then(|| caller.to_path_buf())
}

fn unconfined_reason() -> String {
    if cfg!(target_os = "linux") {
        "trust: core; Landlock is not available on this kernel".into()
    } else if cfg!(target_os = "macos") {
        "trust: core; sandbox-exec is not available".into()
    } else {
        "trust: core; no confinement exists for this platform".into()
    }
}

/// The directory to grant when the interpreter lives outside the system directories
/// (`/opt/py/bin/python3` → `/opt/py`).
fn interpreter_prefix(interpreter: &Path, rules: &[FsRule]) -> Option<PathBuf> {
    let real = std::fs::canonicalize(interpreter).ok()?;
    let covered = |p: &Path| rules.iter().any(|r| p.starts_with(&r.path));
    if covered(interpreter) && covered(&real) {
        return None;
    }
    let bin = real.parent()?;
    let prefix = bin.parent().filter(|p| p.parent().is_some()).unwrap_or(bin);
    Some(prefix.to_path_buf())
}

/// The grant with every path made absolute and canonical; a path that does not exist cannot be
/// granted (a Landlock rule needs a file to bind).
fn canonical_grant(g: &Grant) -> Result<Grant, ScriptError> {
    let canon = |p: &PathBuf| -> Result<PathBuf, ScriptError> {
        if !p.is_absolute() {
            return Err(ScriptError::PolicyWidened {
                reason: format!("granted path {} is not absolute", p.display()),
            });
        }
        std::fs::canonicalize(p).map_err(|e| ScriptError::SandboxFailed {
            reason: format!("granted path {}: {e}", p.display()),
        })
    };
    Ok(Grant {
        fs_read: g.fs_read.iter().map(canon).collect::<Result<_, _>>()?,
        fs_write: g.fs_write.iter().map(canon).collect::<Result<_, _>>()?,
        network: g.network.clone(),
        timeout: g.timeout,
        trust: g.trust,
    })
}

/// The policy's paths, canonical where they exist.
fn canonical_policy(g: &Grant) -> Grant {
    let canon = |p: &PathBuf| std::fs::canonicalize(p).unwrap_or_else(|_| lexical_normalize(p));
    Grant {
        fs_read: g.fs_read.iter().map(canon).collect(),
        fs_write: g.fs_write.iter().map(canon).collect(),
        network: g.network.clone(),
        timeout: g.timeout,
        trust: g.trust,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output at the cap, a report, an exit status and a note: all within the cap, the host's
    /// lines whole, the output cut and saying so.
    #[test]
    fn output_and_host_lines_share_the_cap() {
        let refused = |i: usize| super::super::proxy::Refused {
            target: format!("t{i}.test:443"),
            why: "not in this run's network grant".into(),
            hint: Some("grant it".into()),
            count: 1,
        };
        let mut o = ScriptOutput {
            tool: "t".into(),
            exit_code: 3,
            output: Captured {
                text: "o".repeat(65_536),
                kept: 65_536,
                total: 70_000,
            },
            duration: Duration::ZERO,
            confinement: Confinement::Unconfined("no Landlock".into()),
            network: Some(NetworkReport {
                refused: (0..20).map(refused).collect(),
                ..NetworkReport::default()
            }),
        };
        for cap in [65_536, 4096, 1000] {
            o.fit(cap);
            let text = o.to_model_text();
            assert!(text.len() <= cap, "{} > {cap}", text.len());
            assert!(text.contains("[output truncated: kept"), "{text}");
            assert!(
                text.ends_with(
                    "[network: and 12 more refused connections to 12 more targets]\n\
                     [exit status 3]\n[ran without confinement: no Landlock]"
                ),
                "{text}"
            );
        }
        // The same for a failure's output.
        let mut e = ScriptError::Failed {
            code: 3,
            signal: None,
            output: o.output.clone(),
            network: o.network.clone().map(Box::new),
        };
        e.output().unwrap();
        e.fit(800);
        assert!(e.to_model_text().len() <= 800, "{}", e.to_model_text());
    }

    #[test]
    fn model_text_of_results() {
        let out = |exit_code, confinement| ScriptOutput {
            tool: "t".into(),
            exit_code,
            output: Captured {
                text: "hi".into(),
                kept: 2,
                total: 2,
            },
            duration: Duration::ZERO,
            confinement,
            network: None,
        };
        assert_eq!(
            out(0, Confinement::Confined("x".into())).to_model_text(),
            "hi"
        );
        assert_eq!(
            out(2, Confinement::Confined("x".into())).to_model_text(),
            "hi\n[exit status 2]"
        );
        assert_eq!(
            out(0, Confinement::Unconfined("trust: core".into())).to_model_text(),
            "hi\n[ran without confinement: trust: core]"
        );
        // A host-list run: the model reads each refusal and its hint, not the hosts reached.
        let mut o = out(0, Confinement::Confined("x".into()));
        o.network = Some(NetworkReport {
            reached: vec![super::super::proxy::Reached {
                host: "a.test".into(),
                port: 443,
                address: "192.0.2.1:443".into(),
                pinned: false,
                connections: 1,
                bytes_out: 1,
                bytes_in: 2,
            }],
            refused: vec![super::super::proxy::Refused {
                target: "b.test:443".into(),
                why: "not in this run's network grant".into(),
                hint: Some("grant it".into()),
                count: 2,
            }],
            limits: vec![],
            ..NetworkReport::default()
        });
        assert_eq!(
            o.to_model_text(),
            "hi\n[network: refused b.test:443: not in this run's network grant (2 times)]\n\
             [hint: grant it]"
        );
        let lines = o.network.as_ref().unwrap().lines();
        assert!(lines[0].starts_with("network: reached a.test:443 at 192.0.2.1:443 (1 connection"));
    }

    #[test]
    fn scripts_start_where_the_grant_reaches_the_caller() {
        let grant = |read: &[&str], write: &[&str]| Grant {
            fs_read: read.iter().map(PathBuf::from).collect(),
            fs_write: write.iter().map(PathBuf::from).collect(),
            network: Network::Off,
            timeout: Duration::from_secs(1),
            trust: Trust::External,
        };
        let at = |p: &str| Some(PathBuf::from(p));
        for (case, g, caller, want) in [
            ("nothing granted", grant(&[], &[]), "/home/u/p", None),
            (
                "the directory",
                grant(&["/home/u/p"], &[]),
                "/home/u/p",
                at("/home/u/p"),
            ),
            (
                "a parent",
                grant(&["/home/u"], &[]),
                "/home/u/p",
                at("/home/u/p"),
            ),
            (
                "a file in it",
                grant(&["/home/u/p/app.log"], &[]),
                "/home/u/p",
                at("/home/u/p"),
            ),
            (
                "deeper",
                grant(&[], &["/home/u/p/out/x"]),
                "/home/u/p",
                at("/home/u/p"),
            ),
            ("a sibling", grant(&["/home/u/q"], &[]), "/home/u/p", None),
            (
                "a name prefix",
                grant(&["/home/u/pp"], &[]),
                "/home/u/p",
                None,
            ),
            ("the root caller", grant(&["/srv/data"], &[]), "/", None),
            ("a relative caller", grant(&["p"], &[]), "p", None),
        ] {
            assert_eq!(start_dir(&g, Path::new(caller)), want, "{case}");
        }
    }

    #[test]
    fn interpreter_prefix_only_outside_system_dirs() {
        let rules = vec![FsRule {
            path: "/usr".into(),
            access: FsAccess::ReadExec,
            required: false,
            inode: None,
        }];
        if Path::new("/usr/bin/sh").exists() {
            assert_eq!(interpreter_prefix(Path::new("/usr/bin/sh"), &rules), None);
        }
    }
}
