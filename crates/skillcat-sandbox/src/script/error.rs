//! [`ScriptError`]: every way a script tool can fail, each with a stable `E_SKILL_*` code and a
//! text form for a model; the failures every kind of tool shares are one [`ToolFailure`].

use std::fmt;

use crate::tool::{Captured, FailureKind, ToolFailure, ToolKind};

/// Why a script tool did not give a result. Codes never change; messages may improve.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScriptError {
    /// The script exited with a non-zero status (or was killed by a signal: `code` is then
    /// 128 + the signal, as shells report it).
    Failed {
        /// The exit status.
        code: i32,
        /// The signal that ended it, if one did.
        signal: Option<i32>,
        /// What it printed.
        output: Captured,
        /// What it did on the network, for a run granted a host list (its proxy's report).
        network: Option<Box<super::proxy::NetworkReport>>,
    },
    /// A failure every kind of tool shares, with the script codes: the gate refused the run
    /// (`E_SKILL_SCRIPT_DENIED`) or could not decide (`E_SKILL_SCRIPT_GATE_UNAVAILABLE`), the
    /// arguments do not match the tool's parameters (`E_SKILL_SCRIPT_INVALID_ARGS`), or the
    /// script ran past its timeout and its whole process group / PID namespace was killed
    /// (`E_SKILL_SCRIPT_TIMEOUT`, with what it printed before).
    Call(ToolFailure),
    /// The effective grant asks for more than the session policy allows.
    PolicyWidened {
        /// What exceeds the policy.
        reason: String,
    },
    /// A path climbs out of the skill (absolute, `..`, escaping).
    PathRejected {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// The workspace could not be created, filled or removed.
    Workspace {
        /// What went wrong (names the path).
        reason: String,
    },
    /// The run reached the workspace quota (`[sandbox] workspace_bytes`, `workspace_files`):
    /// its writes past it failed, and the work directory was emptied. Same code as
    /// [`Workspace`](ScriptError::Workspace).
    WorkspaceFull {
        /// Which limit, and where.
        reason: String,
        /// What the script printed.
        output: Captured,
    },
    /// A script declaration (or the set of a skill's tools) is not acceptable: bad `scripts:`
    /// entry, bad tool name, duplicate or colliding name.
    InvalidDeclaration {
        /// What is wrong.
        reason: String,
    },
    /// The script's interpreter is not in the host allow-list (or it names none).
    InterpreterRefused {
        /// The script (path relative to the skill).
        script: String,
        /// The interpreter it asked for (empty when it named none).
        interpreter: String,
    },
    /// No tool of that name.
    NotFound {
        /// The name asked for.
        tool: String,
    },
    /// The confinement the run needs is not available on this system (no Landlock, no helper).
    SandboxUnavailable {
        /// What is missing.
        reason: String,
    },
    /// Setting up the confinement failed (a granted path missing, a filter refused, …).
    SandboxFailed {
        /// What went wrong.
        reason: String,
    },
}

impl ScriptError {
    /// The stable code for programs.
    pub fn code(&self) -> &'static str {
        match self {
            ScriptError::Failed { .. } => "E_SKILL_SCRIPT_FAILED",
            ScriptError::Call(f) => f.code(),
            ScriptError::PolicyWidened { .. } => "E_SKILL_SCRIPT_POLICY_WIDENED",
            ScriptError::PathRejected { .. } => "E_SKILL_SOURCE_PATH_REJECTED",
            ScriptError::Workspace { .. } | ScriptError::WorkspaceFull { .. } => {
                "E_SKILL_WORKSPACE_FAILED"
            }
            ScriptError::InvalidDeclaration { .. } => "E_SKILL_SCRIPT_INVALID",
            ScriptError::InterpreterRefused { .. } => "E_SKILL_SCRIPT_INTERPRETER_REFUSED",
            ScriptError::NotFound { .. } => "E_SKILL_SCRIPT_NOT_FOUND",
            ScriptError::SandboxUnavailable { .. } => "E_SKILL_SCRIPT_SANDBOX_UNAVAILABLE",
            ScriptError::SandboxFailed { .. } => "E_SKILL_SCRIPT_SANDBOX_FAILED",
        }
    }

    /// The text a model reads: `Error (exit N):\n<output>`, `Error (timed out):\n<output>`,
    /// `Error (<code>): <message>\n<output>` for a full workspace, otherwise
    /// `Error (<code>): <message>`.
    pub fn to_model_text(&self) -> String {
        match self {
            ScriptError::Failed {
                code,
                output,
                network,
                ..
            } => {
                let mut s = output.render();
                super::run::append_network(&mut s, network.as_deref());
                format!("Error (exit {code}):\n{s}")
            }
            ScriptError::Call(f) => f.to_model_text(),
            ScriptError::WorkspaceFull { output, .. } => {
                format!("Error ({}): {self}\n{}", self.code(), output.render())
            }
            other => format!("Error ({}): {other}", other.code()),
        }
    }

    /// Cuts what the script printed so that [`to_model_text`](Self::to_model_text) is at most
    /// `cap` bytes (see [`ScriptOutput::fit`](super::ScriptOutput::fit)); an error without
    /// output is a message of the host's, left as it is.
    pub fn fit(&mut self, cap: usize) {
        let mut probe = self.clone();
        let output = match self {
            ScriptError::Failed { output, .. } | ScriptError::WorkspaceFull { output, .. } => {
                output
            }
            ScriptError::Call(f) => match &mut f.output {
                Some(o) => o,
                None => return,
            },
            _ => return,
        };
        output.fit_within(cap, |o| {
            match &mut probe {
                ScriptError::Failed { output, .. } | ScriptError::WorkspaceFull { output, .. } => {
                    *output = o.clone();
                }
                ScriptError::Call(f) => f.output = Some(o.clone()),
                _ => {}
            }
            probe.to_model_text().len()
        });
    }

    /// What a failed run did on the network, for a run granted a host list.
    pub fn network(&self) -> Option<&super::proxy::NetworkReport> {
        match self {
            ScriptError::Failed { network, .. } => network.as_deref(),
            _ => None,
        }
    }

    /// The output captured before the failure, for the errors of a run that started.
    pub fn output(&self) -> Option<&Captured> {
        match self {
            ScriptError::Failed { output, .. } | ScriptError::WorkspaceFull { output, .. } => {
                Some(output)
            }
            ScriptError::Call(f) => f.output.as_ref(),
            _ => None,
        }
    }

    pub(crate) fn workspace(what: impl fmt::Display) -> Self {
        ScriptError::Workspace {
            reason: what.to_string(),
        }
    }

    pub(crate) fn invalid(what: impl fmt::Display) -> Self {
        ScriptError::InvalidDeclaration {
            reason: what.to_string(),
        }
    }

    /// The failure every kind of tool shares, when it is one.
    pub fn failure(&self) -> Option<&ToolFailure> {
        match self {
            ScriptError::Call(f) => Some(f),
            _ => None,
        }
    }

    /// The same error, naming the tool when it is a shared failure found before the tool was
    /// named (the text a model reads does not change).
    pub(crate) fn of_tool(mut self, tool: &str) -> Self {
        if let ScriptError::Call(f) = &mut self
            && f.tool.is_empty()
        {
            f.tool = tool.to_string();
        }
        self
    }

    /// Arguments that do not match the tool's parameters (found before the tool is named).
    pub(crate) fn args(what: impl fmt::Display) -> Self {
        ScriptError::Call(ToolFailure::new(
            ToolKind::Script,
            "",
            FailureKind::InvalidArgs {
                reason: what.to_string(),
            },
        ))
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptError::Failed {
                code,
                signal: Some(sig),
                ..
            } => {
                write!(f, "script killed by signal {sig} (exit {code})")
            }
            ScriptError::Failed { code, .. } => write!(f, "script exited with status {code}"),
            ScriptError::Call(failure) => failure.fmt(f),
            ScriptError::PolicyWidened { reason } => {
                write!(f, "the grant exceeds the session policy: {reason}")
            }
            ScriptError::PathRejected { path, reason } => {
                write!(f, "path rejected: {path}: {reason}")
            }
            ScriptError::Workspace { reason } | ScriptError::WorkspaceFull { reason, .. } => {
                write!(f, "workspace: {reason}")
            }
            ScriptError::InvalidDeclaration { reason } => {
                write!(f, "invalid script tool: {reason}")
            }
            ScriptError::InterpreterRefused {
                script,
                interpreter,
            } if interpreter.is_empty() => {
                write!(
                    f,
                    "{script}: no interpreter line (#!), none declared, and its extension is not \
                     mapped to one ([scripts.by_extension])"
                )
            }
            ScriptError::InterpreterRefused {
                script,
                interpreter,
            } => write!(
                f,
                "{script}: interpreter '{interpreter}' is not in the host allow-list"
            ),
            ScriptError::NotFound { tool } => write!(f, "no script tool named '{tool}'"),
            ScriptError::SandboxUnavailable { reason } => {
                write!(f, "confinement unavailable, refusing to run: {reason}")
            }
            ScriptError::SandboxFailed { reason } => {
                write!(f, "confinement setup failed: {reason}")
            }
        }
    }
}

impl std::error::Error for ScriptError {}

impl From<ToolFailure> for ScriptError {
    fn from(f: ToolFailure) -> Self {
        ScriptError::Call(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(text: &str, total: u64) -> Captured {
        Captured {
            text: text.into(),
            kept: text.len() as u64,
            total,
        }
    }

    #[test]
    fn model_text_forms() {
        let e = ScriptError::Failed {
            code: 3,
            signal: None,
            output: out("boom\n", 5),
            network: None,
        };
        assert_eq!(e.to_model_text(), "Error (exit 3):\nboom\n");
        assert_eq!(e.code(), "E_SKILL_SCRIPT_FAILED");
        let e = ScriptError::Call(
            ToolFailure::new(
                ToolKind::Script,
                "run_x_tick",
                FailureKind::Timeout {
                    after: std::time::Duration::from_secs(1),
                },
            )
            .with_output(out("tick", 4)),
        );
        assert_eq!(e.to_model_text(), "Error (timed out):\ntick");
        assert_eq!(e.code(), "E_SKILL_SCRIPT_TIMEOUT");
        assert_eq!(e.output().map(|o| o.text.as_str()), Some("tick"));
        let e = ScriptError::Call(ToolFailure::new(
            ToolKind::Script,
            "run_x_tick",
            FailureKind::Denied {
                reason: "no".into(),
            },
        ));
        assert_eq!(
            e.to_model_text(),
            "Error (E_SKILL_SCRIPT_DENIED): script run denied: no"
        );
        let e = ScriptError::WorkspaceFull {
            reason: "full".into(),
            output: out("No space left on device\n", 24),
        };
        assert_eq!(
            e.to_model_text(),
            "Error (E_SKILL_WORKSPACE_FAILED): workspace: full\nNo space left on device\n"
        );
    }
}
