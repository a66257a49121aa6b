//! Tier 2: guest tools — a skill's small JavaScript functions, each evaluated in a fresh
//! QuickJS engine inside a confined child, seeing only the host functions it declares.
//!
//! ```text
//! SKILL.md metadata ──declare::declarations──▶ GuestDecl (name, description, typed params,
//!   skillcat.guest_tools, skillcat.guest.*       source file, globals)      faults: stable kinds
//!        │
//!        └─tool::load──▶ GuestTool (source read, globals resolved) ──call(args)──▶
//!              args checked (no unknown key, timeout_seconds 1..max) ─▶ Gate (GateKind::Guest)
//!              ─▶ GuestHost::evaluate ─▶ sandbox helper (namespaces, no network, Landlock:
//!                 no file at all, seccomp, rlimits) ─▶ its built-in entry in the confined
//!                 child (helper_main, no execve): rquickjs, memory/stack limits, an
//!                 interrupt at the deadline, Date.now / Math.random / timers gone
//!                 ◀─ JSON lines: host calls (quotas checked on both sides) · final message
//!              parent: SIGKILL of the group at the deadline + grace, always at the end
//!        ◀── Outcome {ok, result, durationMs, logs, logsCapped} | {ok:false, thrown}
//!            or GuestError (E_SANDBOX_FAILED, E_SKILL_GUEST_QUOTA_EXCEEDED, …)
//! ```
//!
//! Evaluation in the agent's own process exists only behind
//! [`GuestHost::unsafe_evaluate_in_process_without_isolation`].

mod child;
pub mod declare;
mod engine;
mod error;
mod host;
mod tool;

pub use child::{PROCESS_NAME, helper_main};
pub use declare::{GuestDecl, GuestParam, GuestType};
pub use error::{GuestError, Quota};
pub use host::{
    FnHost, Globals, GuestHost, GuestLimits, HostFunction, LOG_BYTES, Outcome, Rejection,
    ThrownKind,
};
pub use tool::{GuestTool, SOURCE_MAX, load};
