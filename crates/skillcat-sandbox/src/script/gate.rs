//! The host gate: asked before any tool of a skill does anything — before a script process
//! starts, before a host module tool is called.
//!
//! One trait, [`Gate`], answers every kind of request; the [`GateRequest`] says which tool of
//! which skill is asked for and, in its [`GateKind`], what exactly would happen (a confined
//! script with its arguments and grant, a module tool with its JSON arguments).
//!
//! A gate answers [`GateDecision::Allow`], [`GateDecision::Deny`] (a refusal) or
//! [`GateDecision::Unavailable`]. A gate that returns an error or panics is unavailable too: a
//! broken gate is never reported as a refusal, and never as a permission. A refusal becomes one
//! [`ToolFailure`](crate::tool::ToolFailure) ([`Refusal::into_failure`]) with its kind's codes:
//! `E_SKILL_SCRIPT_DENIED` / `E_SKILL_SCRIPT_GATE_UNAVAILABLE` for scripts,
//! `E_SKILL_TOOL_DENIED` / `E_SKILL_TOOL_GATE_UNAVAILABLE` for module tools,
//! `E_SKILL_GUEST_DENIED` / `E_SKILL_GUEST_GATE_UNAVAILABLE` for guest tools.

use std::fmt;
use std::panic::AssertUnwindSafe;

use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::Value as Json;

use crate::capability::Grant;
use crate::tool::{FailureKind, ToolFailure, ToolKind};

/// What a gate is asked about: a tool of a skill, and what calling it would do.
#[derive(Debug, Clone, Copy)]
pub struct GateRequest<'a> {
    /// The skill's name.
    pub skill: &'a str,
    /// The tool name a model called.
    pub tool: &'a str,
    /// What kind of tool it is, and what the call would do.
    pub kind: GateKind<'a>,
}

/// What a call would do, by kind of tool. More kinds may come (guest code); a gate that does
/// not know a kind should deny it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum GateKind<'a> {
    /// A script of the skill, about to run as a process.
    Script {
        /// The script, relative to the skill.
        script: &'a str,
        /// The interpreter's name.
        interpreter: &'a str,
        /// The script's arguments (after the script path).
        args: &'a [String],
        /// The effective grant the run would get.
        grant: &'a Grant,
        /// Whether the run would be confined (false only for `trust: core` without Landlock).
        confined: bool,
    },
    /// A host module tool registered for the skill.
    Module {
        /// The skill that provides it (name, version, source).
        provenance: &'a Provenance,
        /// The arguments (a JSON object).
        args: &'a Json,
    },
    /// A guest tool of the skill (JavaScript, evaluated confined), about to be evaluated.
    Guest {
        /// The skill that provides it (name, version, source).
        provenance: &'a Provenance,
        /// The tool's source file, relative to the skill.
        source: &'a str,
        /// The arguments as the model gave them (a JSON object).
        args: &'a Json,
    },
}

impl GateKind<'_> {
    /// `script`, `module` or `guest`.
    pub fn as_str(&self) -> &'static str {
        match self {
            GateKind::Script { .. } => "script",
            GateKind::Module { .. } => "module",
            GateKind::Guest { .. } => "guest",
        }
    }
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Go ahead.
    Allow,
    /// Do not (a refusal, with the reason).
    Deny(String),
    /// The gate cannot decide now (no user to ask, a backend down).
    Unavailable(String),
}

/// An error from a gate: reported as unavailable, never as a refusal.
pub type GateError = Box<dyn std::error::Error + Send + Sync>;

/// Decides whether a tool of a skill may be called: scripts (asked by the
/// [`Runner`](super::Runner)) and host module tools (asked by their
/// `WrappedTool` in `skillcat-runtime`) alike.
#[async_trait]
pub trait Gate: Send + Sync {
    /// Answers one request.
    async fn check(&self, request: &GateRequest<'_>) -> Result<GateDecision, GateError>;
}

/// Allows every call (the command line uses it: a source named there is trusted for scripts).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

#[async_trait]
impl Gate for AllowAll {
    async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        Ok(GateDecision::Allow)
    }
}

/// Denies every call, with this reason (empty: "scripts are disabled" for a script, "module
/// tools are disabled" for a module tool).
#[derive(Debug, Clone, Default)]
pub struct DenyAll(pub String);

#[async_trait]
impl Gate for DenyAll {
    async fn check(&self, request: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        Ok(GateDecision::Deny(if !self.0.is_empty() {
            self.0.clone()
        } else if let GateKind::Module { .. } = request.kind {
            "module tools are disabled".to_string()
        } else if let GateKind::Guest { .. } = request.kind {
            "guest tools are disabled".to_string()
        } else {
            "scripts are disabled".to_string()
        }))
    }
}

/// Why a call may not go ahead: what the caller turns into its kind's error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(hidden)]
pub enum Refusal {
    /// The gate said no.
    Denied(String),
    /// The gate could not decide, failed or panicked.
    Unavailable(String),
}

impl Refusal {
    /// The refusal as the failure of a call of `tool`, a tool of kind `kind` (its codes:
    /// [`ToolFailure::code`](crate::tool::ToolFailure::code)).
    pub fn into_failure(self, kind: ToolKind, tool: &str) -> ToolFailure {
        let failure = match self {
            Refusal::Denied(reason) => FailureKind::Denied { reason },
            Refusal::Unavailable(reason) => FailureKind::GateUnavailable { reason },
        };
        ToolFailure::new(kind, tool, failure)
    }
}

/// Asks `gate`, turning an error or a panic of the gate into [`Refusal::Unavailable`].
#[doc(hidden)]
pub async fn ask(gate: &dyn Gate, request: &GateRequest<'_>) -> Result<(), Refusal> {
    match AssertUnwindSafe(gate.check(request)).catch_unwind().await {
        Ok(Ok(GateDecision::Allow)) => Ok(()),
        Ok(Ok(GateDecision::Deny(reason))) => Err(Refusal::Denied(reason)),
        Ok(Ok(GateDecision::Unavailable(reason))) => Err(Refusal::Unavailable(reason)),
        Ok(Err(e)) => Err(Refusal::Unavailable(format!("the gate failed: {e}"))),
        Err(panic) => Err(Refusal::Unavailable(format!(
            "the gate panicked: {}",
            panic_message(&*panic)
        ))),
    }
}

/// The message of a panic payload (`&str` or `String`), else a placeholder.
#[doc(hidden)]
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

/// Where a tool comes from: the skill that provides it, its version and its catalog source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Provenance {
    /// The skill's name.
    pub skill: String,
    /// The skill's `metadata.version`, when it declares one.
    pub version: Option<String>,
    /// The name of the catalog source the skill was read from.
    pub source: String,
}

/// `skill@version (source)`, or `skill (source)` without a version.
impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}@{v} ({})", self.skill, self.source),
            None => write!(f, "{} ({})", self.skill, self.source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct Fixed(Result<GateDecision, &'static str>);

    #[async_trait]
    impl Gate for Fixed {
        async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
            self.0.clone().map_err(Into::into)
        }
    }

    struct Panics;

    #[async_trait]
    impl Gate for Panics {
        async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
            panic!("gate bug")
        }
    }

    fn grant() -> Grant {
        Grant {
            fs_read: vec![],
            fs_write: vec![],
            network: crate::capability::Network::Off,
            timeout: Duration::from_secs(1),
            trust: crate::capability::Trust::External,
        }
    }

    #[tokio::test]
    async fn answers_by_kind_and_broken_gates_are_unavailable() {
        let grant = grant();
        let provenance = Provenance {
            skill: "s".into(),
            version: None,
            source: "src".into(),
        };
        let args = Json::Null;
        let script = GateRequest {
            skill: "s",
            tool: "run_s_x",
            kind: GateKind::Script {
                script: "scripts/x.sh",
                interpreter: "sh",
                args: &[],
                grant: &grant,
                confined: true,
            },
        };
        let module = GateRequest {
            skill: "s",
            tool: "m",
            kind: GateKind::Module {
                provenance: &provenance,
                args: &args,
            },
        };
        assert_eq!(script.kind.as_str(), "script");
        assert_eq!(module.kind.as_str(), "module");
        assert_eq!(ask(&AllowAll, &script).await, Ok(()));
        assert_eq!(
            ask(&DenyAll::default(), &script).await,
            Err(Refusal::Denied("scripts are disabled".into()))
        );
        assert_eq!(
            ask(&DenyAll::default(), &module).await,
            Err(Refusal::Denied("module tools are disabled".into()))
        );
        assert_eq!(
            ask(&DenyAll("not now".into()), &module).await,
            Err(Refusal::Denied("not now".into()))
        );
        assert_eq!(
            ask(
                &Fixed(Ok(GateDecision::Unavailable("nobody".into()))),
                &script
            )
            .await,
            Err(Refusal::Unavailable("nobody".into()))
        );
        assert_eq!(
            ask(&Fixed(Err("down")), &module).await,
            Err(Refusal::Unavailable("the gate failed: down".into()))
        );
        assert_eq!(
            ask(&Panics, &script).await,
            Err(Refusal::Unavailable("the gate panicked: gate bug".into()))
        );
    }
}
