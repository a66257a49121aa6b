//! What every kind of tool has in common, whatever runs it: its [`ToolKind`], the rules of its
//! name ([`names`]: one owner per name, folded; reserved host names; the script namespace) and
//! the ways a call of it fails alike ([`ToolFailure`]: refused by the gate, the gate
//! unavailable, bad arguments, out of time — each with the stable `E_SKILL_*` code of its kind).
//!
//! ```text
//! script (script::Runner) ─┐                                    ┌─ names::ToolNames: who owns a name
//! module (runtime)        ─┼─ one ToolKind, one set of names ───┤
//! guest  (guest::GuestTool)┘   and one ToolFailure              └─ ToolFailure::code / to_model_text
//! ```

mod failure;
pub mod names;

pub use failure::{Captured, FailureKind, ToolFailure};

/// What kind of tool it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// A script of the skill, run confined by the [`Runner`](crate::script::Runner).
    Script,
    /// Native code of the host, registered for the skill, called through a wrapper.
    Module,
    /// JavaScript of the skill, evaluated in a fresh engine in a confined child (tier 2).
    Guest,
}

impl ToolKind {
    /// `script`, `module` or `guest`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Script => "script",
            ToolKind::Module => "module",
            ToolKind::Guest => "guest",
        }
    }
}
