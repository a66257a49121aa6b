//! [`LoadedSet`]: the skills every run in progress holds, with reference counts, and the tool
//! map their tools make up. [`Session`](super::Session) owns one; [`Run`](super::Run)s take and
//! give back references through it, and find tools through it, never touching its parts.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use super::error::ToolError;
use super::module::WrappedTool;
use super::session::Activation;
use super::tool::ToolKind;
use crate::script::LoadedSkill;

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
#[derive(Default)]
pub(super) struct LoadedSet {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Tool name → its slot.
    tools: BTreeMap<String, Slot>,
    /// Lookup key of the skill → the skill.
    skills: HashMap<String, Live>,
}

/// One tool of the tool map: its skill (lookup key and name) and how it is called.
struct Slot {
    skill_key: String,
    skill: String,
    target: Target,
}

/// A skill of the loaded set: how many runs hold it, what activation gave, its scripts.
struct Live {
    refs: usize,
    activation: Activation,
    script: Option<Arc<LoadedSkill>>,
}

impl LoadedSet {
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
    /// or refuses a tool name that is taken (`reserved` says which names the host keeps; nothing
    /// of the skill enters then). When another run put the skill in meanwhile, takes a
    /// reference on that one instead.
    pub(super) fn acquire_prepared(
        &self,
        key: String,
        prepared: Prepared,
        reserved: &dyn Fn(&str) -> bool,
    ) -> Result<Activation, ToolError> {
        let mut state = self.lock();
        if let Some(existing) = state.skills.get_mut(&key) {
            existing.refs += 1;
            return Ok(existing.activation.clone());
        }
        let skill = &prepared.activation.name;
        let mut fresh: BTreeSet<&str> = BTreeSet::new();
        for spec in &prepared.activation.tools {
            let taken_by = if !fresh.insert(&spec.name) {
                Some(format!("another tool of skill '{skill}'"))
            } else if reserved(&spec.name) {
                Some("a reserved host tool".to_string())
            } else {
                state.tools.get(&spec.name).map(|slot| {
                    let kind = match slot.target {
                        Target::Script(_) => "script",
                        Target::Module(_) => "module",
                        #[cfg(feature = "guest")]
                        Target::Guest(_) => "guest",
                    };
                    format!("a {kind} tool of skill '{}'", slot.skill)
                })
            };
            if let Some(taken_by) = taken_by {
                return Err(ToolError::Collision {
                    tool: spec.name.clone(),
                    skill: skill.clone(),
                    taken_by,
                });
            }
        }
        let modules: HashMap<&str, &Arc<WrappedTool>> = prepared
            .modules
            .iter()
            .map(|m| (m.spec().name.as_str(), m))
            .collect();
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
            state.tools.insert(
                spec.name.clone(),
                Slot {
                    skill_key: key.clone(),
                    skill: skill.clone(),
                    target,
                },
            );
        }
        let activation = prepared.activation.clone();
        state.skills.insert(
            key,
            Live {
                refs: 1,
                activation: prepared.activation,
                script: prepared.script,
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
                }
                state.tools.retain(|_, slot| {
                    if slot.skill_key != key {
                        return true;
                    }
                    // A call still holding the tool finds its skill unloaded.
                    #[cfg(feature = "guest")]
                    if let Target::Guest(g) = &slot.target {
                        g.unload();
                    }
                    false
                });
            }
        }
        gone
    }

    /// How the tool of this name is called, when it is in the tool map.
    pub(super) fn tool(&self, name: &str) -> Option<Target> {
        self.lock().tools.get(name).map(|slot| slot.target.clone())
    }

    /// Where a loaded skill's workspace is, once one of its scripts has run.
    pub(super) fn workspace(&self, key: &str) -> Option<PathBuf> {
        let state = self.lock();
        let loaded = state.skills.get(key)?.script.as_ref()?;
        loaded.workspace().map(|w| w.root().to_path_buf())
    }

    /// The names of the tool map, sorted.
    pub(super) fn tool_names(&self) -> Vec<String> {
        self.lock().tools.keys().cloned().collect()
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
