//! [`ToolError`] (host module tools) and [`RuntimeError`] (sessions and runs): every failure
//! with a stable `E_SKILL_*` code and a text form for a model, like
//! [`ScriptError`](crate::script::ScriptError). The failures every kind of tool shares are one
//! [`ToolFailure`] whichever kind they come from ([`RuntimeError::failure`]).

use std::fmt;

use crate::script::ScriptError;
use crate::tool::ToolFailure;
use crate::tool::names::ToolClaim;

/// Why a host module tool was refused or did not give a result. Codes never change; messages
/// may improve.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool returned an error or panicked.
    Failed {
        /// The tool.
        tool: String,
        /// What it said (its error, or the panic message).
        reason: String,
        /// Whether it panicked.
        panicked: bool,
    },
    /// The tool answered something other than text, bytes or media.
    BadResponse {
        /// The tool.
        tool: String,
        /// What is wrong with the answer.
        reason: String,
    },
    /// A failure every kind of tool shares, with the module codes: the gate refused the call
    /// (`E_SKILL_TOOL_DENIED`) or could not decide (`E_SKILL_TOOL_GATE_UNAVAILABLE`: never
    /// reported as a refusal), the arguments are not a JSON object
    /// (`E_SKILL_TOOL_INVALID_ARGS`), or the tool did not answer in time and its future was
    /// dropped (`E_SKILL_TOOL_TIMEOUT`).
    Call(ToolFailure),
    /// The name is already taken by another tool (a script tool, another skill's module tool,
    /// or one of the host's own).
    Collision {
        /// The name.
        tool: String,
        /// The skill that offered it.
        skill: String,
        /// Who holds the name already.
        taken_by: String,
    },
    /// The name is contested: two or more tools claim names that are one to a model
    /// ([`tool_name_key`](crate::tool::names::tool_name_key): case and `-`/`_` aside), so none of
    /// them is offered under it, whatever order they were loaded in.
    Contested {
        /// The name called.
        tool: String,
        /// Every claim on it (skill and spelling), sorted.
        claims: Vec<ToolClaim>,
    },
    /// The name lies in the script tools' namespace (`run_…`, case and `-`/`_` aside), which a
    /// module or guest tool may not take: it could stand in for a skill's script tool.
    ScriptNamespace {
        /// The name.
        tool: String,
        /// The skill that offered it.
        skill: String,
    },
    /// One skill offers two tools of the same name.
    Duplicate {
        /// The name.
        tool: String,
        /// The skill.
        skill: String,
    },
    /// The name is not safe for model providers: it must match `^[a-zA-Z0-9_-]{1,64}$`.
    InvalidName {
        /// The name as given.
        tool: String,
        /// The skill that offered it.
        skill: String,
    },
    /// The parameters are not a JSON Schema of an object (`{"type": "object", …}`).
    InvalidSchema {
        /// The tool.
        tool: String,
        /// The skill that offered it.
        skill: String,
        /// What is wrong.
        reason: String,
    },
}

impl ToolError {
    /// The stable code for programs.
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::Failed { .. } => "E_SKILL_TOOL_FAILED",
            ToolError::BadResponse { .. } => "E_SKILL_TOOL_BAD_RESPONSE",
            ToolError::Call(f) => f.code(),
            ToolError::Collision { .. } | ToolError::Contested { .. } => "E_SKILL_TOOL_COLLISION",
            ToolError::ScriptNamespace { .. } => "E_SKILL_TOOL_INVALID_NAME",
            ToolError::Duplicate { .. } => "E_SKILL_TOOL_DUPLICATE",
            ToolError::InvalidName { .. } => "E_SKILL_TOOL_INVALID_NAME",
            ToolError::InvalidSchema { .. } => "E_SKILL_TOOL_INVALID_SCHEMA",
        }
    }

    /// The text a model reads: `Error (<code>): <message>`.
    pub fn to_model_text(&self) -> String {
        format!("Error ({}): {self}", self.code())
    }

    /// The failure every kind of tool shares, when it is one.
    pub fn failure(&self) -> Option<&ToolFailure> {
        match self {
            ToolError::Call(f) => Some(f),
            _ => None,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Failed {
                tool,
                reason,
                panicked: true,
            } => write!(f, "tool '{tool}' panicked: {reason}"),
            ToolError::Failed { tool, reason, .. } => write!(f, "tool '{tool}' failed: {reason}"),
            ToolError::BadResponse { tool, reason } => {
                write!(f, "tool '{tool}' gave an unusable response: {reason}")
            }
            ToolError::Call(failure) => failure.fmt(f),
            ToolError::Collision {
                tool,
                skill,
                taken_by,
            } => write!(
                f,
                "tool name '{tool}' of skill '{skill}' collides with {taken_by}"
            ),
            ToolError::Contested { tool, claims } => {
                write!(
                    f,
                    "tool name '{tool}' is contested: {}; names that differ only in case or \
                     '-'/'_' are one name, which belongs to one tool, so none of them is offered",
                    describe_claims(claims)
                )
            }
            ToolError::ScriptNamespace { tool, skill } => write!(
                f,
                "tool name '{tool}' of skill '{skill}' starts with 'run_' (case and '-'/'_' \
                 aside), which belongs to script tools (run_<skill>_<script>)"
            ),
            ToolError::Duplicate { tool, skill } => {
                write!(f, "skill '{skill}' offers two tools named '{tool}'")
            }
            ToolError::InvalidName { tool, skill } => write!(
                f,
                "tool name {tool:?} of skill '{skill}' must match ^[a-zA-Z0-9_-]{{1,64}}$"
            ),
            ToolError::InvalidSchema {
                tool,
                skill,
                reason,
            } => write!(
                f,
                "parameters of tool '{tool}' of skill '{skill}' are not an object schema: {reason}"
            ),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<ToolFailure> for ToolError {
    fn from(f: ToolFailure) -> Self {
        ToolError::Call(f)
    }
}

/// `skill 'foo' offers 'run_foo_bar_baz', skill 'foo-bar' offers 'run_foo_bar_baz'`.
pub(super) fn describe_claims(claims: &[ToolClaim]) -> String {
    claims
        .iter()
        .map(|c| format!("skill '{}' offers '{}'", c.skill, c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an activation, a tool call or a resource read of a session failed. Codes never change;
/// messages may improve.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No skill of that name in the catalog.
    SkillNotFound {
        /// The name asked for.
        name: String,
    },
    /// The skill is in the catalog but not active in this run.
    NotActive {
        /// The name asked for.
        name: String,
    },
    /// No tool of that name in this run's tool set.
    ToolNotFound {
        /// The name asked for.
        tool: String,
    },
    /// A resource path that climbs out of the skill (`..`, absolute, a URL, …).
    PathRejected {
        /// The skill.
        skill: String,
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// The path stays inside the skill but names no file of it.
    ResourceNotFound {
        /// The skill.
        skill: String,
        /// The path, resolved.
        path: String,
    },
    /// The file is listed but its source could not read it.
    ResourceUnreadable {
        /// The skill.
        skill: String,
        /// The path, resolved.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The matcher failed (an embedding provider down).
    Match {
        /// What went wrong.
        reason: String,
    },
    /// A script tool failed (its own code).
    Script(ScriptError),
    /// A host module tool failed or was refused (its own code).
    Tool(ToolError),
    /// A guest tool was refused or its evaluation failed (its own code). A guest that throws
    /// is not an error: the outcome says so.
    #[cfg(feature = "guest")]
    Guest(crate::guest::GuestError),
}

impl RuntimeError {
    /// The stable code for programs (a script or module tool error keeps its own).
    pub fn code(&self) -> &'static str {
        match self {
            RuntimeError::SkillNotFound { .. } => "E_SKILL_NOT_FOUND",
            RuntimeError::NotActive { .. } => "E_SKILL_NOT_ACTIVE",
            RuntimeError::ToolNotFound { .. } => "E_SKILL_TOOL_NOT_FOUND",
            RuntimeError::PathRejected { .. } => "E_SKILL_SOURCE_PATH_REJECTED",
            RuntimeError::ResourceNotFound { .. } => "E_SKILL_RESOURCE_NOT_FOUND",
            RuntimeError::ResourceUnreadable { .. } => "E_SKILL_RESOURCE_UNREADABLE",
            RuntimeError::Match { .. } => "E_SKILL_MATCH_FAILED",
            RuntimeError::Script(e) => e.code(),
            RuntimeError::Tool(e) => e.code(),
            #[cfg(feature = "guest")]
            RuntimeError::Guest(e) => e.code(),
        }
    }

    /// The failure every kind of tool shares (denied, gate unavailable, invalid arguments,
    /// timeout), whichever kind of tool it came from.
    pub fn failure(&self) -> Option<&ToolFailure> {
        match self {
            RuntimeError::Script(e) => e.failure(),
            RuntimeError::Tool(e) => e.failure(),
            #[cfg(feature = "guest")]
            RuntimeError::Guest(e) => e.failure(),
            _ => None,
        }
    }

    /// Fits what a model reads of this error within `cap` bytes: a script's output gives way
    /// (see [`ToolOutput::fit`](crate::ToolOutput::fit)); every other error is a message
    /// of the host's, bounded where it is made.
    pub fn fit(&mut self, cap: usize) {
        if let RuntimeError::Script(e) = self {
            e.fit(cap);
        }
    }

    /// The text a model reads: a script error's own form (`Error (exit N):\n…`), otherwise
    /// `Error (<code>): <message>`.
    pub fn to_model_text(&self) -> String {
        match self {
            RuntimeError::Script(e) => e.to_model_text(),
            RuntimeError::Tool(e) => e.to_model_text(),
            #[cfg(feature = "guest")]
            RuntimeError::Guest(e) => e.to_model_text(),
            other => format!("Error ({}): {other}", other.code()),
        }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::SkillNotFound { name } => write!(f, "no skill named '{name}'"),
            RuntimeError::NotActive { name } => {
                write!(f, "skill '{name}' is not active in this run")
            }
            RuntimeError::ToolNotFound { tool } => {
                write!(f, "no tool named '{tool}' in this run")
            }
            RuntimeError::PathRejected {
                skill,
                path,
                reason,
            } => write!(f, "{skill}: path rejected: {path:?}: {reason}"),
            RuntimeError::ResourceNotFound { skill, path } => {
                write!(f, "{skill}: no file {path}")
            }
            RuntimeError::ResourceUnreadable {
                skill,
                path,
                reason,
            } => write!(f, "{skill}: cannot read {path}: {reason}"),
            RuntimeError::Match { reason } => write!(f, "matching failed: {reason}"),
            RuntimeError::Script(e) => e.fmt(f),
            RuntimeError::Tool(e) => e.fmt(f),
            #[cfg(feature = "guest")]
            RuntimeError::Guest(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RuntimeError::Script(e) => Some(e),
            RuntimeError::Tool(e) => Some(e),
            #[cfg(feature = "guest")]
            RuntimeError::Guest(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ScriptError> for RuntimeError {
    fn from(e: ScriptError) -> Self {
        RuntimeError::Script(e)
    }
}

impl From<ToolError> for RuntimeError {
    fn from(e: ToolError) -> Self {
        RuntimeError::Tool(e)
    }
}

#[cfg(feature = "guest")]
impl From<crate::guest::GuestError> for RuntimeError {
    fn from(e: crate::guest::GuestError) -> Self {
        RuntimeError::Guest(e)
    }
}
