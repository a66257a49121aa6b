//! [`ToolFailure`]: the failures every kind of tool shares — the gate refused the call, the
//! gate could not decide, the arguments were refused, the call ran out of time — written once,
//! with the stable code and the text for a model each kind has always had.

use std::fmt;
use std::time::Duration;

use super::ToolKind;

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

/// Room for the note [`Captured::render`] adds when output was cut.
const NOTE_ROOM: usize = 64;

impl Captured {
    /// Whether output was cut at the cap.
    pub fn truncated(&self) -> bool {
        self.total > self.kept
    }

    /// Keeps at most `bytes` of the text (cut at a character); what is dropped counts as not
    /// kept, so [`render`](Self::render) says the output was cut.
    pub fn keep_at_most(&mut self, bytes: usize) {
        if self.text.len() <= bytes {
            return;
        }
        let mut end = bytes;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        self.text.truncate(end);
        // (A lossy text can be longer than the bytes it came from: the note is said all the
        // same.)
        self.kept = self.kept.min(end as u64).min(self.total.saturating_sub(1));
    }

    /// Cuts the text so that `render` (the text a model reads of it, with whatever is around
    /// it) is at most `cap` bytes: `render` gives the whole model text for the current text.
    /// What the host adds around the output is kept; the output gives way.
    pub fn fit_within(&mut self, cap: usize, mut render: impl FnMut(&Self) -> usize) {
        // Twice at most: the note that says the output was cut appears (or grows by a digit)
        // with the first cut.
        for _ in 0..2 {
            let over = render(self).saturating_sub(cap);
            if over == 0 {
                return;
            }
            let keep = self.text.len().saturating_sub(over + NOTE_ROOM);
            self.keep_at_most(keep);
        }
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

/// How a call failed, the same way for every kind of tool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The host gate refused the call.
    Denied {
        /// The gate's reason.
        reason: String,
    },
    /// The host gate could not decide (it failed or panicked): never reported as a refusal.
    GateUnavailable {
        /// What went wrong.
        reason: String,
    },
    /// The arguments were refused before anything ran.
    InvalidArgs {
        /// What is wrong with them.
        reason: String,
    },
    /// The call did not end in time and was stopped (a script's process group killed, a
    /// module tool's future dropped, a guest's child killed).
    Timeout {
        /// The limit that applied.
        after: Duration,
    },
}

/// A tool call that failed in one of the ways every kind shares ([`FailureKind`]). Its
/// [`code`](Self::code) is the stable `E_SKILL_*` code of the kind and the failure — those
/// codes never change; messages may improve.
///
/// | failure | script | module | guest |
/// | --- | --- | --- | --- |
/// | denied | `E_SKILL_SCRIPT_DENIED` | `E_SKILL_TOOL_DENIED` | `E_SKILL_GUEST_DENIED` |
/// | gate unavailable | `E_SKILL_SCRIPT_GATE_UNAVAILABLE` | `E_SKILL_TOOL_GATE_UNAVAILABLE` | `E_SKILL_GUEST_GATE_UNAVAILABLE` |
/// | invalid arguments | `E_SKILL_SCRIPT_INVALID_ARGS` | `E_SKILL_TOOL_INVALID_ARGS` | `E_SKILL_GUEST_INVALID_ARGS` |
/// | timeout | `E_SKILL_SCRIPT_TIMEOUT` | `E_SKILL_TOOL_TIMEOUT` | `E_SANDBOX_FAILED` |
///
/// ```
/// use std::time::Duration;
/// use skillcat_sandbox::tool::{FailureKind, ToolFailure, ToolKind};
/// let f = ToolFailure::new(ToolKind::Module, "lookup", FailureKind::Timeout {
///     after: Duration::from_secs(2),
/// });
/// assert_eq!(f.code(), "E_SKILL_TOOL_TIMEOUT");
/// assert_eq!(f.to_model_text(), "Error (E_SKILL_TOOL_TIMEOUT): tool 'lookup' did not answer within 2 s");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// The kind of the tool called.
    pub tool_kind: ToolKind,
    /// The tool's name (empty when the failure was found before a tool was named: a script's
    /// arguments checked on their own).
    pub tool: String,
    /// How it failed.
    pub kind: FailureKind,
    /// What a script printed before it was stopped (its timeout), when it ran.
    pub output: Option<Captured>,
}

impl ToolFailure {
    /// A failure of the tool `tool` of kind `tool_kind`.
    pub fn new(tool_kind: ToolKind, tool: impl Into<String>, kind: FailureKind) -> Self {
        ToolFailure {
            tool_kind,
            tool: tool.into(),
            kind,
            output: None,
        }
    }

    /// The same failure, with what the tool printed before it.
    pub fn with_output(mut self, output: Captured) -> Self {
        self.output = Some(output);
        self
    }

    /// The stable code for programs: the kind's (see the table above).
    pub fn code(&self) -> &'static str {
        use FailureKind as F;
        use ToolKind as K;
        match (&self.kind, self.tool_kind) {
            (F::Denied { .. }, K::Script) => "E_SKILL_SCRIPT_DENIED",
            (F::Denied { .. }, K::Module) => "E_SKILL_TOOL_DENIED",
            (F::Denied { .. }, K::Guest) => "E_SKILL_GUEST_DENIED",
            (F::GateUnavailable { .. }, K::Script) => "E_SKILL_SCRIPT_GATE_UNAVAILABLE",
            (F::GateUnavailable { .. }, K::Module) => "E_SKILL_TOOL_GATE_UNAVAILABLE",
            (F::GateUnavailable { .. }, K::Guest) => "E_SKILL_GUEST_GATE_UNAVAILABLE",
            (F::InvalidArgs { .. }, K::Script) => "E_SKILL_SCRIPT_INVALID_ARGS",
            (F::InvalidArgs { .. }, K::Module) => "E_SKILL_TOOL_INVALID_ARGS",
            (F::InvalidArgs { .. }, K::Guest) => "E_SKILL_GUEST_INVALID_ARGS",
            (F::Timeout { .. }, K::Script) => "E_SKILL_SCRIPT_TIMEOUT",
            (F::Timeout { .. }, K::Module) => "E_SKILL_TOOL_TIMEOUT",
            // The reference words a guest's timeout as a sandbox failure.
            (F::Timeout { .. }, K::Guest) => "E_SANDBOX_FAILED",
        }
    }

    /// The text a model reads: `Error (timed out):\n<output>` for a script that ran out of
    /// time (as for a script's exit status), otherwise `Error (<code>): <message>`.
    pub fn to_model_text(&self) -> String {
        match (&self.kind, self.tool_kind) {
            (FailureKind::Timeout { .. }, ToolKind::Script) => format!(
                "Error (timed out):\n{}",
                self.output
                    .as_ref()
                    .map(Captured::render)
                    .unwrap_or_default()
            ),
            _ => format!("Error ({}): {self}", self.code()),
        }
    }
}

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FailureKind as F;
        use ToolKind as K;
        let tool = &self.tool;
        match (&self.kind, self.tool_kind) {
            (F::Denied { reason }, K::Script) => write!(f, "script run denied: {reason}"),
            (F::Denied { reason }, K::Module) => write!(f, "call of '{tool}' denied: {reason}"),
            (F::Denied { reason }, K::Guest) => {
                write!(f, "call of guest tool '{tool}' denied: {reason}")
            }
            (F::GateUnavailable { reason }, K::Script) => {
                write!(f, "the script gate is unavailable: {reason}")
            }
            (F::GateUnavailable { reason }, K::Module) => {
                write!(f, "the tool gate is unavailable for '{tool}': {reason}")
            }
            (F::GateUnavailable { reason }, K::Guest) => write!(
                f,
                "call of guest tool '{tool}' not possible: the gate is unavailable: {reason}"
            ),
            (F::InvalidArgs { reason }, K::Script) => write!(f, "invalid arguments: {reason}"),
            (F::InvalidArgs { reason }, K::Module) => {
                write!(f, "invalid arguments for '{tool}': {reason}")
            }
            (F::InvalidArgs { reason }, K::Guest) => {
                write!(f, "invalid arguments for guest tool '{tool}': {reason}")
            }
            (F::Timeout { after }, K::Script) => write!(
                f,
                "script timed out after {} s and was killed",
                after.as_secs_f64()
            ),
            (F::Timeout { after }, K::Module) => write!(
                f,
                "tool '{tool}' did not answer within {} s",
                after.as_secs_f64()
            ),
            (F::Timeout { after }, K::Guest) => write!(
                f,
                "Evaluation timed out after {} seconds (kind: timed-out; guest tool '{tool}')",
                after.as_secs()
            ),
        }
    }
}

impl std::error::Error for ToolFailure {}

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
    fn truncation_is_reported() {
        let c = out("abc", 10);
        assert_eq!(c.render(), "abc\n[output truncated: kept 3 of 10 bytes]");
        assert!(!out("abc", 3).truncated());
    }

    /// Every kind keeps the code and the words it had before the failures were one type.
    #[test]
    fn each_kind_keeps_its_codes_and_words() {
        let reason = |r: &str| r.to_string();
        let cases = [
            (
                ToolKind::Script,
                FailureKind::Denied {
                    reason: reason("no"),
                },
                "Error (E_SKILL_SCRIPT_DENIED): script run denied: no",
            ),
            (
                ToolKind::Module,
                FailureKind::Denied {
                    reason: reason("no"),
                },
                "Error (E_SKILL_TOOL_DENIED): call of 't' denied: no",
            ),
            (
                ToolKind::Guest,
                FailureKind::Denied {
                    reason: reason("no"),
                },
                "Error (E_SKILL_GUEST_DENIED): call of guest tool 't' denied: no",
            ),
            (
                ToolKind::Script,
                FailureKind::GateUnavailable {
                    reason: reason("down"),
                },
                "Error (E_SKILL_SCRIPT_GATE_UNAVAILABLE): the script gate is unavailable: down",
            ),
            (
                ToolKind::Module,
                FailureKind::GateUnavailable {
                    reason: reason("down"),
                },
                "Error (E_SKILL_TOOL_GATE_UNAVAILABLE): the tool gate is unavailable for 't': down",
            ),
            (
                ToolKind::Guest,
                FailureKind::GateUnavailable {
                    reason: reason("down"),
                },
                "Error (E_SKILL_GUEST_GATE_UNAVAILABLE): call of guest tool 't' not possible: \
                 the gate is unavailable: down",
            ),
            (
                ToolKind::Script,
                FailureKind::InvalidArgs {
                    reason: reason("bad"),
                },
                "Error (E_SKILL_SCRIPT_INVALID_ARGS): invalid arguments: bad",
            ),
            (
                ToolKind::Module,
                FailureKind::InvalidArgs {
                    reason: reason("bad"),
                },
                "Error (E_SKILL_TOOL_INVALID_ARGS): invalid arguments for 't': bad",
            ),
            (
                ToolKind::Guest,
                FailureKind::InvalidArgs {
                    reason: reason("bad"),
                },
                "Error (E_SKILL_GUEST_INVALID_ARGS): invalid arguments for guest tool 't': bad",
            ),
            (
                ToolKind::Module,
                FailureKind::Timeout {
                    after: Duration::from_millis(1500),
                },
                "Error (E_SKILL_TOOL_TIMEOUT): tool 't' did not answer within 1.5 s",
            ),
            (
                ToolKind::Guest,
                FailureKind::Timeout {
                    after: Duration::from_secs(3),
                },
                "Error (E_SANDBOX_FAILED): Evaluation timed out after 3 seconds (kind: \
                 timed-out; guest tool 't')",
            ),
        ];
        for (kind, failure, text) in cases {
            let f = ToolFailure::new(kind, "t", failure);
            assert_eq!(f.to_model_text(), text, "{kind:?}");
            assert!(text.starts_with(&format!("Error ({}): ", f.code())));
        }
    }

    #[test]
    fn a_script_timeout_shows_what_it_printed() {
        let f = ToolFailure::new(
            ToolKind::Script,
            "run_x_tick",
            FailureKind::Timeout {
                after: Duration::from_secs(1),
            },
        )
        .with_output(out("tick", 4));
        assert_eq!(f.code(), "E_SKILL_SCRIPT_TIMEOUT");
        assert_eq!(f.to_model_text(), "Error (timed out):\ntick");
        assert_eq!(f.to_string(), "script timed out after 1 s and was killed");
    }
}
