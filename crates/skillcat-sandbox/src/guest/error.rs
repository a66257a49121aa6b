//! [`GuestError`]: every failure of the guest machinery, with a stable code; [`Quota`]: the
//! limits an evaluation can exceed, by name.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::tool::ToolFailure;

/// A limit of one evaluation, with the value that applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "quota", content = "limit", rename_all = "snake_case")]
pub enum Quota {
    /// Bytes of one host call's arguments or answer.
    Payload(usize),
    /// Host calls per evaluation.
    Calls(usize),
    /// Host calls waiting for an answer at once.
    InFlight(usize),
    /// Milliseconds one host call may take.
    CallTime(u64),
    /// Nesting depth of a value sent or returned.
    Depth(usize),
    /// Values (nodes) in one value sent or returned.
    Nodes(usize),
    /// Bytes of the final result.
    Result(usize),
    /// Bytes of the engine's heap.
    Memory(usize),
}

impl Quota {
    /// The quota's stable name: `payload`, `calls`, `in_flight`, `call_time`, `depth`, `nodes`,
    /// `result`, `memory`.
    pub fn name(&self) -> &'static str {
        match self {
            Quota::Payload(_) => "payload",
            Quota::Calls(_) => "calls",
            Quota::InFlight(_) => "in_flight",
            Quota::CallTime(_) => "call_time",
            Quota::Depth(_) => "depth",
            Quota::Nodes(_) => "nodes",
            Quota::Result(_) => "result",
            Quota::Memory(_) => "memory",
        }
    }

    /// The quota and its limit in words: `host calls per evaluation (1000)`.
    pub fn describe(&self) -> String {
        match *self {
            Quota::Payload(n) => format!("host call payload ({n} bytes)"),
            Quota::Calls(n) => format!("host calls per evaluation ({n})"),
            Quota::InFlight(n) => format!("host calls in flight ({n})"),
            Quota::CallTime(ms) => format!("host call time ({} s)", ms as f64 / 1000.0),
            Quota::Depth(n) => format!("serialisation depth ({n})"),
            Quota::Nodes(n) => format!("serialisation nodes ({n})"),
            Quota::Result(n) => format!("result size ({n} bytes)"),
            Quota::Memory(n) => format!("engine memory ({n} bytes)"),
        }
    }
}

/// Why a guest tool was refused or gave no outcome. A guest that throws is not an error: its
/// exception is the outcome ([`Outcome::Thrown`](super::Outcome::Thrown)). Codes never change;
/// messages may improve.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuestError {
    /// A failure every kind of tool shares, with the guest codes: the gate refused the call
    /// (`E_SKILL_GUEST_DENIED`) or could not decide (`E_SKILL_GUEST_GATE_UNAVAILABLE`: never
    /// reported as a refusal), the arguments were refused before anything ran
    /// (`E_SKILL_GUEST_INVALID_ARGS`), or the evaluation did not end by its deadline
    /// (`E_SANDBOX_FAILED`, "Evaluation timed out after N seconds", as the reference words it).
    Call(ToolFailure),
    /// The confined child could not be started, died, or broke the protocol
    /// (`E_SANDBOX_FAILED`).
    SandboxFailed {
        /// The tool.
        tool: String,
        /// What happened.
        reason: String,
    },
    /// The tool's skill is not loaded any more (`E_SKILL_NOT_LOADED`).
    NotLoaded {
        /// The tool.
        tool: String,
        /// Its skill.
        skill: String,
    },
    /// The host's guest configuration is not acceptable (`E_INVALID_SKILLS_CONFIG`).
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// A quota of the evaluation was exceeded (`E_SKILL_GUEST_QUOTA_EXCEEDED`).
    Quota {
        /// The tool.
        tool: String,
        /// Which quota, and its limit.
        quota: Quota,
    },
    /// A guest tool's declaration in SKILL.md is not acceptable
    /// (`E_SKILL_GUEST_INVALID_DECLARATION`): the tool is not offered.
    InvalidDeclaration {
        /// The declared tool name (or the metadata key).
        tool: String,
        /// What is wrong.
        reason: String,
    },
}

impl GuestError {
    /// The stable code for programs.
    pub fn code(&self) -> &'static str {
        match self {
            GuestError::Call(f) => f.code(),
            GuestError::SandboxFailed { .. } => "E_SANDBOX_FAILED",
            GuestError::NotLoaded { .. } => "E_SKILL_NOT_LOADED",
            GuestError::InvalidConfig { .. } => "E_INVALID_SKILLS_CONFIG",
            GuestError::Quota { .. } => "E_SKILL_GUEST_QUOTA_EXCEEDED",
            GuestError::InvalidDeclaration { .. } => "E_SKILL_GUEST_INVALID_DECLARATION",
        }
    }

    /// The text a model reads: `Error (<code>): <message>`.
    pub fn to_model_text(&self) -> String {
        format!("Error ({}): {self}", self.code())
    }

    /// The failure every kind of tool shares, when it is one.
    pub fn failure(&self) -> Option<&ToolFailure> {
        match self {
            GuestError::Call(f) => Some(f),
            _ => None,
        }
    }

    pub(crate) fn config(reason: impl Into<String>) -> Self {
        GuestError::InvalidConfig {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for GuestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuestError::Call(failure) => failure.fmt(f),
            GuestError::SandboxFailed { tool, reason } => {
                write!(f, "guest tool '{tool}' failed in its sandbox: {reason}")
            }
            GuestError::NotLoaded { tool, skill } => write!(
                f,
                "guest tool '{tool}' belongs to skill '{skill}', which is not loaded"
            ),
            GuestError::InvalidConfig { reason } => {
                write!(f, "invalid guest configuration: {reason}")
            }
            GuestError::Quota { tool, quota } => write!(
                f,
                "guest tool '{tool}' exceeded a quota: {} [{}]",
                quota.describe(),
                quota.name()
            ),
            GuestError::InvalidDeclaration { tool, reason } => {
                write!(f, "guest tool '{tool}' is not declared right: {reason}")
            }
        }
    }
}

impl std::error::Error for GuestError {}

impl From<ToolFailure> for GuestError {
    fn from(f: ToolFailure) -> Self {
        GuestError::Call(f)
    }
}
