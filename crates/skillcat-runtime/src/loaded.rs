//! [`LoadedSet`]: the skills every run in progress holds, with reference counts, and the tool
//! map their tools make up. [`Session`](super::Session) owns one; [`Run`](super::Run)s take and
//! give back references through it, and find tools through it, never touching its parts.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use super::error::ToolError;
use super::module::WrappedTool;
use super::session::Activation;
use crate::script::LoadedSkill;
use crate::tool::ToolKind;
use crate::tool::names::{Contested, Refused, ToolClaim, ToolNames};

/// A skill about to enter the loaded set: what activation gave, its loaded scripts and its
/// wrapped module tools.
pub(super) struct Prepared {
    pub(super) activation: Activation,
    pub(super) script: Option<Arc<LoadedSkill>>,
    pub(super) modules: Vec<Arc<WrappedTool>>,
    /// Its guest tools.
    #[cfg(feature = "guest")]
    pub(super) guests: Vec<Arc<crate::guest::GuestTool>>,
}

/// How a tool of the tool set is called.
#[derive(Clone)]
pub(super) enum Target {
    /// A script of this loaded skill, run by the session's runner.
    Script(Arc<LoadedSkill>),
    /// A wrapped host module tool.
    Module(Arc<WrappedTool>),
    /// A guest tool of this loaded skill.
    #[cfg(feature = "guest")]
    Guest(Arc<crate::guest::GuestTool>),
}

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
        let modules: HashMap<&str, &Arc<WrappedTool>> = prepared
            .modules
            .iter()
            .map(|m| (m.spec().name.as_str(), m))
            .collect();
        let mut targets = HashMap::new();
        for spec in &prepared.activation.tools {
            let target = match (spec.kind, &prepared.script) {
                (ToolKind::Module, _) => Target::Module(modules[spec.name.as_str()].clone()),
                (ToolKind::Script, Some(script)) => Target::Script(script.clone()),
                // Script tools come only from loaded scripts.
                (ToolKind::Script, None) => continue,
                #[cfg(feature = "guest")]
                (ToolKind::Guest, _) => {
                    match prepared.guests.iter().find(|g| g.name() == spec.name) {
                        Some(g) => Target::Guest(g.clone()),
                        None => continue,
                    }
                }
                #[cfg(not(feature = "guest"))]
                (ToolKind::Guest, _) => continue,
            };
            targets.insert(spec.name.clone(), target);
        }
        let names = prepared
            .activation
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| targets.contains_key(*n));
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
                    #[cfg(feature = "guest")]
                    for target in live.targets.values() {
                        if let Target::Guest(g) = target {
                            g.unload();
                        }
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
