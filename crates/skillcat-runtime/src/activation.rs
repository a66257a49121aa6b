//! [`Activation`]: what activating a skill gave a run — its instructions, its tools and the
//! notes of what it did not get.

use std::sync::Arc;

use super::spec::ToolSpec;
use crate::capability::Grant;
use crate::catalog::Entry;
use crate::script::{Provenance, ScriptError, SkillTools};

/// What activating a skill gave a run: its instructions (tier 2) and its tools.
#[derive(Debug, Clone)]
pub struct Activation {
    /// The skill's name.
    pub name: String,
    /// Name, version and source.
    pub provenance: Provenance,
    /// The body of its SKILL.md: instructions for the model.
    pub body: String,
    /// The tools it brings: script tools (trusted sources only), then module tools, then
    /// guest tools (trusted sources only).
    pub tools: Vec<ToolSpec>,
    /// Why tools were withheld or scripts skipped; never silent.
    pub notes: Vec<String>,
    pub(super) entry: Entry,
    pub(super) scripts: Scripts,
}

/// What became of a skill's scripts at activation.
#[derive(Debug, Clone)]
pub(super) enum Scripts {
    /// Not loaded: none, an untrusted source, or a session without a runner (see the notes).
    None,
    /// Loaded: what discovery found, and the grant the runs get.
    Loaded(Arc<SkillTools>, Grant),
    /// Loading failed.
    Failed(ScriptError),
}

impl Activation {
    /// The catalog entry activated.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// The skill's script tools as found when its scripts were loaded: those offered (also in
    /// [`tools`](Self::tools)) and those skipped, with why. `None` when its scripts were not
    /// loaded (see [`notes`](Self::notes) and [`script_error`](Self::script_error)).
    pub fn script_tools(&self) -> Option<&SkillTools> {
        match &self.scripts {
            Scripts::Loaded(tools, _) => Some(tools),
            _ => None,
        }
    }

    /// The effective grant of the skill's scripts (declared ∩ ceiling), when they were loaded.
    pub fn script_grant(&self) -> Option<&Grant> {
        match &self.scripts {
            Scripts::Loaded(_, grant) => Some(grant),
            _ => None,
        }
    }

    /// Why the skill's scripts could not be loaded (also in the notes).
    pub fn script_error(&self) -> Option<&ScriptError> {
        match &self.scripts {
            Scripts::Failed(e) => Some(e),
            _ => None,
        }
    }
}
