//! Script tools, per-skill workspaces and confined execution (see `docs/architecture.md`).
//!
//! ```text
//! Skill ──tools::discover──▶ SkillTools ──(tool::names::ToolNames, in the runtime)──▶ names a
//!   │                                                      model can call (one owner each)
//!   │                          (implicit scripts/*, declared `scripts:`; JSON Schemas)
//!   └──Runner::load──▶ LoadedSkill ──Runner::run(tool, JSON args)──▶ ScriptOutput | ScriptError
//!                        │              │
//!                        │              ├─ argv from validated arguments (never a shell)
//!                        │              ├─ grant ⊆ session policy      (E_SKILL_SCRIPT_POLICY_WIDENED)
//!                        │              ├─ confinement available?      (or trust: core → unconfined)
//!                        │              ├─ host gate (GateKind::Script) (DENIED / GATE_UNAVAILABLE)
//!                        │              ├─ workspace materialised from the source, once
//!                        │              └─ helper: namespaces, rlimits, Landlock, seccomp, execve
//!                        └─ unload / drop → workspace removed
//! ```
//!
//! Every failure is a [`ScriptError`] with a stable `E_SKILL_*` code and a text form for a model
//! (`Error (exit N):\n…`, `Error (timed out):\n…`); the failures every kind of tool shares
//! (denied, gate unavailable, invalid arguments, timeout) are one
//! [`ToolFailure`](crate::tool::ToolFailure) in [`ScriptError::Call`]. See `docs/sandbox.md` for the security model
//! and the `scripts:` declaration format.

pub mod argv;
mod base_dir;
pub mod denial;
mod error;
#[doc(hidden)]
pub mod gate;
pub mod home;
mod host_addrs;
mod left;
#[cfg(target_os = "linux")]
mod park;
pub mod policy;
pub(crate) mod process;
pub mod protect;
pub mod proxy;
mod reaper;
mod run;
pub mod sandbox;
mod tools;
mod workspace;

pub use crate::source::offload;
pub use crate::tool::Captured;
pub use error::ScriptError;
pub use gate::{
    AllowAll, DenyAll, Gate, GateDecision, GateError, GateKind, GateRequest, Provenance,
};
pub use left::{Kept, LeftFile};
pub use proxy::{NetworkReport, ProxyLimits};
pub use reaper::{REAPER_ARG, Reaper, exit_after_run, reap_on_exit, teardown_after_exit};
pub use run::{
    Confinement, LoadedSkill, NoCgroup, Runner, RunnerConfig, ScriptLimits, ScriptOutput,
    cgroup_status, start_dir,
};
pub use tools::{
    Declared, Interpreter, Interpreters, SYSTEM_PATH, ScriptTool, SkillTools, Skipped, discover,
    parse_declared,
};
pub use workspace::{Quota, UserDirs, Workspace, WorkspaceBase};
