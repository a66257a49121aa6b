//! [`ScriptError`]: every way a script tool can fail, each with a stable `E_SKILL_*` code and a
//! text form for a model.

use std::fmt;
use std::time::Duration;

/// What a script printed (stdout and stderr through one pipe, in order), up to the output cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The bytes kept, as text (invalid UTF-8 replaced).
    pub text: String,
    /// Bytes kept (at most the cap).
    pub kept: u64,
    /// Bytes the script wrote in all (the pipe keeps draining past the cap).
    pub total: u64,
}

impl Captured {
    /// Whether output was cut at the cap.
    pub fn truncated(&self) -> bool {
        self.total > self.kept
    }

    /// The text, followed by a truncation note when output was cut.
    pub fn render(&self) -> String {
        if self.truncated() {
            let mut s = self.text.clone();
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&format!(
                "[output truncated: kept {} of {} bytes]",
                self.kept, self.total
            ));
            s
        } else {
            self.text.clone()
        }
    }
}

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
    },
    /// The script ran past its timeout; its whole process group / PID namespace was killed.
    Timeout {
        /// The timeout that applied.
        after: Duration,
        /// What it printed before it was killed.
        output: Captured,
    },
    /// The host gate refused the run.
    Denied {
        /// The gate's reason.
        reason: String,
    },
    /// The host gate could not decide (it failed or panicked): never reported as a refusal.
    GateUnavailable {
        /// What went wrong.
        reason: String,
    },
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
    /// Arguments do not match the tool's parameters.
    InvalidArgs {
        /// What is wrong with them.
        reason: String,
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
            ScriptError::Timeout { .. } => "E_SKILL_SCRIPT_TIMEOUT",
            ScriptError::Denied { .. } => "E_SKILL_SCRIPT_DENIED",
            ScriptError::GateUnavailable { .. } => "E_SKILL_SCRIPT_GATE_UNAVAILABLE",
            ScriptError::PolicyWidened { .. } => "E_SKILL_SCRIPT_POLICY_WIDENED",
            ScriptError::PathRejected { .. } => "E_SKILL_SOURCE_PATH_REJECTED",
            ScriptError::Workspace { .. } | ScriptError::WorkspaceFull { .. } => {
                "E_SKILL_WORKSPACE_FAILED"
            }
            ScriptError::InvalidArgs { .. } => "E_SKILL_SCRIPT_INVALID_ARGS",
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
            ScriptError::Failed { code, output, .. } => {
                format!("Error (exit {code}):\n{}", output.render())
            }
            ScriptError::Timeout { output, .. } => {
                format!("Error (timed out):\n{}", output.render())
            }
            ScriptError::WorkspaceFull { output, .. } => {
                format!("Error ({}): {self}\n{}", self.code(), output.render())
            }
            other => format!("Error ({}): {other}", other.code()),
        }
    }

    /// The output captured before the failure, for the errors of a run that started.
    pub fn output(&self) -> Option<&Captured> {
        match self {
            ScriptError::Failed { output, .. }
            | ScriptError::Timeout { output, .. }
            | ScriptError::WorkspaceFull { output, .. } => Some(output),
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

    pub(crate) fn args(what: impl fmt::Display) -> Self {
        ScriptError::InvalidArgs {
            reason: what.to_string(),
        }
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
            ScriptError::Timeout { after, .. } => {
                write!(
                    f,
                    "script timed out after {} s and was killed",
                    after.as_secs_f64()
                )
            }
            ScriptError::Denied { reason } => write!(f, "script run denied: {reason}"),
            ScriptError::GateUnavailable { reason } => {
                write!(f, "the script gate is unavailable: {reason}")
            }
            ScriptError::PolicyWidened { reason } => {
                write!(f, "the grant exceeds the session policy: {reason}")
            }
            ScriptError::PathRejected { path, reason } => {
                write!(f, "path rejected: {path}: {reason}")
            }
            ScriptError::Workspace { reason } | ScriptError::WorkspaceFull { reason, .. } => {
                write!(f, "workspace: {reason}")
            }
            ScriptError::InvalidArgs { reason } => write!(f, "invalid arguments: {reason}"),
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
        };
        assert_eq!(e.to_model_text(), "Error (exit 3):\nboom\n");
        assert_eq!(e.code(), "E_SKILL_SCRIPT_FAILED");
        let e = ScriptError::Timeout {
            after: Duration::from_secs(1),
            output: out("tick", 4),
        };
        assert_eq!(e.to_model_text(), "Error (timed out):\ntick");
        let e = ScriptError::Denied {
            reason: "no".into(),
        };
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

    #[test]
    fn truncation_is_reported() {
        let c = out("abc", 10);
        assert_eq!(c.render(), "abc\n[output truncated: kept 3 of 10 bytes]");
        assert!(!out("abc", 3).truncated());
    }
}
