//! [`LoadedSet`]: the skills every run in progress holds, with reference counts, and the tool
//! map their tools make up. [`Session`](super::Session) owns one; [`Run`](super::Run)s take and
//! give back references through it, and find tools through it, never touching its parts. It
//! imports neither `session.rs` nor `run.rs`: it lies below both.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use super::activation::Activation;
use super::error::ToolError;
use super::provider::ToolCall;
use crate::script::LoadedSkill;
use crate::tool::names::{Contested, Refused, ToolClaim, ToolNames};

/// A skill about to enter the loaded set: what activation gave, its loaded scripts, and how each
/// of its tools is called (by name).
pub(super) struct Prepared {
    pub(super) activation: Activation,
    pub(super) script: Option<Arc<LoadedSkill>>,
    /// One for each of `activation.tools`, in the same order.
    pub(super) calls: Vec<Arc<dyn ToolCall>>,
}

/// How a tool of the tool set is called: what its kind prepared.
pub(super) type Target = Arc<dyn ToolCall>;

/// The loaded set and the tool map, behind one lock.
pub(super) struct LoadedSet {
    state: Mutex<State>,
}

struct State {
    /// Who owns each tool name: one owner per name; a name two skills' tools fold to is
    /// contested and offered by neither, whatever order they came in; the host's reserved
    /// names are no skill's.
    names: ToolNames,
    /// Lookup key of the skill → the skill.
    skills: HashMap<String, Live>,
}

/// A skill of the loaded set: how many runs hold it, what activation gave, its scripts, and how
/// each of its tools is called (by name; called only while the registry says the skill owns
/// the name).
struct Live {
    refs: usize,
    activation: Activation,
    script: Option<Arc<LoadedSkill>>,
    targets: HashMap<String, Target>,
}

/// What a tool name finds in the tool map.
pub(super) enum Lookup {
    /// The tool, and the lookup key of its skill.
    Found(Target, String),
    /// The name is contested: every claim on it.
    Contested(Vec<ToolClaim>),
    /// No tool of the loaded set has the name.
    Missing,
}

impl LoadedSet {
    /// An empty set; no skill's tool may take one of the `reserved` names (the host's own
    /// tools', as [`tool_name_key`](crate::tool::names::tool_name_key) reads them).
    pub(super) fn new<'a>(reserved: impl IntoIterator<Item = &'a str>) -> Self {
        LoadedSet {
            state: Mutex::new(State {
                names: ToolNames::with_reserved(reserved),
                skills: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes one more reference on a skill already in the set.
    pub(super) fn acquire(&self, key: &str) -> Option<Activation> {
        let mut state = self.lock();
        let live = state.skills.get_mut(key)?;
        live.refs += 1;
        Some(live.activation.clone())
    }

    /// Puts a prepared skill into the set with one reference and its tools into the tool map,
    /// or refuses a tool name that is the host's or given twice by the skill (nothing of the skill enters then). A name that another
    /// tool's name folds to (case and `-`/`_` aside) is contested: neither tool is offered under
    /// it, now or later, and the skill's activation says so in its notes. When another run put
    /// the skill in meanwhile, takes a reference on that one instead.
    pub(super) fn acquire_prepared(
        &self,
        key: String,
        mut prepared: Prepared,
    ) -> Result<Activation, ToolError> {
        let mut state = self.lock();
        if let Some(existing) = state.skills.get_mut(&key) {
            existing.refs += 1;
            return Ok(existing.activation.clone());
        }
        let skill = prepared.activation.name.clone();
        let mut targets: HashMap<String, Target> = HashMap::new();
        for (spec, call) in prepared.activation.tools.iter().zip(&prepared.calls) {
            targets.insert(spec.name.clone(), call.clone());
        }
        let names = prepared.activation.tools.iter().map(|t| t.name.as_str());
        let contested =
            state
                .names
                .admit(&key, &skill, names)
                .map_err(|refused| match refused {
                    Refused::Repeated { tool } => ToolError::Collision {
                        tool,
                        skill: skill.clone(),
                        taken_by: format!("another tool of skill '{skill}'"),
                    },
                    Refused::Reserved { tool } => ToolError::Collision {
                        tool,
                        skill: skill.clone(),
                        taken_by: "a reserved host tool".to_string(),
                    },
                })?;
        for (name, claims) in contested {
            let e = ToolError::Contested {
                tool: name.clone(),
                claims,
            };
            prepared
                .activation
                .notes
                .push(format!("tool {name} not offered: {e} ({})", e.code()));
            prepared.activation.tools.retain(|t| t.name != name);
            targets.remove(&name);
        }
        let activation = prepared.activation.clone();
        state.skills.insert(
            key,
            Live {
                refs: 1,
                activation: prepared.activation,
                script: prepared.script,
                targets,
            },
        );
        Ok(activation)
    }

    /// Gives back one reference on each of these skills. A skill no run holds any more leaves
    /// the set and its tools leave the tool map; returns the scripts of those skills (the
    /// caller unloads them or drops them, which removes their workspaces, outside the lock).
    #[must_use = "dropping a returned skill removes its workspace; unloading it reports failures"]
    pub(super) fn release<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a str>,
    ) -> Vec<Arc<LoadedSkill>> {
        let mut gone = Vec::new();
        let mut state = self.lock();
        for key in keys {
            let Some(live) = state.skills.get_mut(key) else {
                continue;
            };
            live.refs = live.refs.saturating_sub(1);
            if live.refs == 0 {
                if let Some(live) = state.skills.remove(key) {
                    gone.extend(live.script);
                    // A call still holding the tool finds its skill unloaded.
                    for target in live.targets.values() {
                        target.unload();
                    }
                }
                state.names.release(key);
            }
        }
        gone
    }

    /// How the tool of this name is called: its one owner's tool, or why there is none.
    pub(super) fn lookup(&self, name: &str) -> Lookup {
        let state = self.lock();
        if let Some(claims) = state.names.contested_claims(name) {
            return Lookup::Contested(claims);
        }
        let found = state.names.owner(name).and_then(|owner| {
            let target = state.skills.get(owner)?.targets.get(name)?;
            Some(Lookup::Found(target.clone(), owner.to_string()))
        });
        found.unwrap_or(Lookup::Missing)
    }

    /// Every tool name of the tool map → the lookup key of the skill that owns it.
    pub(super) fn owners(&self) -> HashMap<String, String> {
        let state = self.lock();
        state
            .skills
            .iter()
            .flat_map(|(key, live)| live.targets.keys().map(move |n| (n, key)))
            .filter(|(n, key)| state.names.owner(n) == Some(key.as_str()))
            .map(|(n, key)| (n.clone(), key.clone()))
            .collect()
    }

    /// Every contested tool name, with its claims.
    pub(super) fn contested(&self) -> Vec<Contested> {
        self.lock().names.contested()
    }

    /// Where a loaded skill's workspace is, once one of its scripts has run.
    pub(super) fn workspace(&self, key: &str) -> Option<PathBuf> {
        let state = self.lock();
        let loaded = state.skills.get(key)?.script.as_ref()?;
        loaded.workspace().map(|w| w.root().to_path_buf())
    }

    /// A loaded skill's scripts, to reach its workspace outside the lock (a reference held
    /// keeps the workspace: drop it before the run ends).
    pub(super) fn script(&self, key: &str) -> Option<Arc<LoadedSkill>> {
        self.lock().skills.get(key)?.script.clone()
    }

    /// The names of the tool map, sorted.
    pub(super) fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.owners().into_keys().collect();
        names.sort();
        names
    }

    /// The names of the skills in the set, sorted.
    pub(super) fn skill_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .lock()
            .skills
            .values()
            .map(|l| l.activation.name.clone())
            .collect();
        names.sort();
        names
    }
}
