//! The host gate: asked before any script process starts.
//!
//! A gate answers [`GateDecision::Allow`], [`GateDecision::Deny`] (a refusal:
//! `E_SKILL_SCRIPT_DENIED`) or [`GateDecision::Unavailable`]. A gate that returns an error or
//! panics is unavailable too (`E_SKILL_SCRIPT_GATE_UNAVAILABLE`): a broken gate is never reported
//! as a refusal, and never as a permission.

use async_trait::async_trait;

use crate::capability::Grant;

/// What a gate is asked about.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    /// The skill's name.
    pub skill: &'a str,
    /// The tool name (`run_<skill>_<script>`).
    pub tool: &'a str,
    /// The script, relative to the skill.
    pub script: &'a str,
    /// The interpreter's name.
    pub interpreter: &'a str,
    /// The script's arguments (after the script path).
    pub args: &'a [String],
    /// The effective grant the run would get.
    pub grant: &'a Grant,
    /// Whether the run would be confined (false only for `trust: core` without Landlock).
    pub confined: bool,
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Run it.
    Allow,
    /// Do not run it (a refusal, with the reason).
    Deny(String),
    /// The gate cannot decide now (no user to ask, a backend down).
    Unavailable(String),
}

/// An error from a gate: reported as unavailable, never as a refusal.
pub type GateError = Box<dyn std::error::Error + Send + Sync>;

/// Decides whether a script may run.
#[async_trait]
pub trait Gate: Send + Sync {
    /// Answers one request.
    async fn check(&self, request: &GateRequest<'_>) -> Result<GateDecision, GateError>;
}

/// Allows every run (the command line uses it: a source named there is trusted for scripts).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

#[async_trait]
impl Gate for AllowAll {
    async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        Ok(GateDecision::Allow)
    }
}

/// Denies every run.
#[derive(Debug, Clone, Default)]
pub struct DenyAll(pub String);

#[async_trait]
impl Gate for DenyAll {
    async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        Ok(GateDecision::Deny(if self.0.is_empty() {
            "scripts are disabled".to_string()
        } else {
            self.0.clone()
        }))
    }
}
