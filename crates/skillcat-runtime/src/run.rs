//! [`Run`]: the skills active for one agent turn and the tools they bring, put away when the run
//! ends however it ends; and how a [`Session`] starts one. The top of the three: it imports
//! `session.rs` and `loaded.rs`, neither of which imports it (nor `loaded.rs` `session.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::activation::Activation;
use super::error::{RuntimeError, ToolError};
use super::loaded::Lookup;
use super::resource::{Resource, read_entry_resource};
use super::session::{Candidate, Session};
use super::spec::{ToolOutput, ToolSpec};
use crate::catalog::Entry;
use crate::document::name_key;
use crate::script::{Kept, LeftFile, LoadedSkill, ScriptError};

/// One agent turn: the skills active for it and the tools they bring.
///
/// A guard: when it ends, normally ([`finish`](Run::finish)), by an error that drops it, or by a
/// panic that unwinds through it, its skills leave the loaded set (unless another run still uses
/// them), their tools leave the session's tool set, and their workspaces are removed.
#[must_use = "a run's skills and tools are released when it is dropped"]
pub struct Run {
    session: Session,
    active: Vec<Activation>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.active.iter().map(|a| a.name.as_str()).collect();
        f.debug_struct("Run").field("active", &names).finish()
    }
}

const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Run>();
};

impl Session {
    /// A run with nothing active yet.
    pub fn start(&self) -> Run {
        Run {
            session: self.clone(),
            active: Vec::new(),
        }
    }

    /// A run with the best-matching skills for `message` active (at most
    /// [`top_k`](super::SessionBuilder::top_k); none when nothing matches).
    pub async fn begin(&self, message: &str) -> Result<Run, RuntimeError> {
        let mut run = self.start();
        run.activate_matching(message).await?;
        Ok(run)
    }

    /// A run with the skills of these names active (`-` and `_` alike).
    pub async fn begin_with(&self, names: &[&str]) -> Result<Run, RuntimeError> {
        let mut run = self.start();
        for name in names {
            run.activate(name).await?;
        }
        Ok(run)
    }
}

impl Run {
    /// The session it belongs to.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Activates a skill by name (`-` and `_` alike); already active: nothing changes.
    pub async fn activate(&mut self, name: &str) -> Result<&Activation, RuntimeError> {
        let entry = self.session.inner.catalog.find(name).await.ok_or_else(|| {
            RuntimeError::SkillNotFound {
                name: name.to_string(),
            }
        })?;
        self.activate_entry(entry).await
    }

    /// Activates the best-matching skills for `message` (at most
    /// [`top_k`](super::SessionBuilder::top_k)) and says which they were.
    pub async fn activate_matching(
        &mut self,
        message: &str,
    ) -> Result<Vec<Candidate>, RuntimeError> {
        let chosen = self.session.rank(message, self.session.inner.top_k).await?;
        for c in &chosen {
            self.activate_entry(c.entry.clone()).await?;
        }
        Ok(chosen)
    }

    /// Activates a catalog entry (one of [`Session::catalog`]'s, or of a snapshot of it);
    /// already active: nothing changes.
    pub async fn activate_entry(&mut self, entry: Entry) -> Result<&Activation, RuntimeError> {
        let key = name_key(entry.name());
        if let Some(i) = self.position(&key) {
            return Ok(&self.active[i]);
        }
        let inner = &self.session.inner;
        let activation = match inner.loaded.acquire(&key) {
            Some(a) => a,
            None => {
                let live = inner.prepare(&entry).await;
                inner.install(key, live)?
            }
        };
        // No await between taking the reference and recording it: a cancelled activation
        // cannot leak a reference.
        self.active.push(activation);
        Ok(&self.active[self.active.len() - 1])
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.active.iter().position(|a| name_key(&a.name) == key)
    }

    /// The skills active, in activation order.
    pub fn activations(&self) -> &[Activation] {
        &self.active
    }

    /// Whether a skill is active in this run (`-` and `_` alike).
    pub fn is_active(&self, name: &str) -> bool {
        self.position(&name_key(name)).is_some()
    }

    /// The active skills' bodies, each in a `<skill name="…">` block, to put before the system
    /// prompt; empty when nothing is active.
    pub fn instructions(&self) -> String {
        self.active
            .iter()
            .map(|a| {
                format!(
                    "<skill name=\"{}\">\n{}\n</skill>",
                    crate::prompt::escape_xml(&a.name),
                    a.body.trim()
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// `base` with the [`instructions`](Run::instructions) prepended.
    pub fn system_prompt(&self, base: &str) -> String {
        let instructions = self.instructions();
        if instructions.is_empty() {
            base.to_string()
        } else if base.is_empty() {
            instructions
        } else {
            format!("{instructions}\n\n{base}")
        }
    }

    /// The tools this run offers, in activation order: each active skill's tools whose names
    /// it owns now (a name that another skill's tool contests — the same but for case or
    /// `-`/`_` — is offered by neither, even when this run took it first).
    pub fn tools(&self) -> impl Iterator<Item = &ToolSpec> {
        let owners = self.session.inner.loaded.owners();
        let owners = &owners;
        let offered: Vec<&ToolSpec> = self
            .active
            .iter()
            .flat_map(|a| {
                let key = name_key(&a.name);
                a.tools
                    .iter()
                    .filter(move |t| owners.get(&t.name) == Some(&key))
            })
            .collect();
        offered.into_iter()
    }

    /// Calls a tool of this run, whatever its kind, through what its kind prepared at
    /// activation: a script tool runs confined through the runner, a module tool through its
    /// wrapper, a guest tool in its confined engine.
    ///
    /// Everything a model reads of the call — a script's output, its network report, exit
    /// status and notes, a guest's result and logs, a module tool's answer, an error's output —
    /// shares one budget: the session's output cap (`[sandbox] output`, 64 KiB by default),
    /// enforced here for every kind ([`ToolOutput::fit`], [`RuntimeError::fit`]).
    pub async fn call(&self, tool: &str, args: &Json) -> Result<ToolOutput, RuntimeError> {
        let cap = self.output_cap();
        let mut result = self.call_unbounded(tool, args).await;
        match &mut result {
            Ok(out) => out.fit(cap),
            Err(e) => e.fit(cap),
        }
        result
    }

    /// The bytes a model may read of one call: the runner's output cap.
    fn output_cap(&self) -> usize {
        self.session
            .inner
            .runner
            .as_ref()
            .map_or(crate::script::ScriptLimits::default().output, |r| {
                r.config().limits.output
            })
    }

    async fn call_unbounded(&self, tool: &str, args: &Json) -> Result<ToolOutput, RuntimeError> {
        let not_found = || RuntimeError::ToolNotFound {
            tool: tool.to_string(),
        };
        let (target, owner) = match self.session.inner.loaded.lookup(tool) {
            Lookup::Found(target, owner) => (target, owner),
            Lookup::Contested(claims)
                if claims
                    .iter()
                    .any(|c| self.position(&name_key(&c.skill)).is_some()) =>
            {
                return Err(ToolError::Contested {
                    tool: tool.to_string(),
                    claims,
                }
                .into());
            }
            Lookup::Contested(_) | Lookup::Missing => return Err(not_found()),
        };
        // Only a tool of a skill active in this run.
        let i = self.position(&owner).ok_or_else(not_found)?;
        let spec = self.active[i]
            .tools
            .iter()
            .find(|t| t.name == tool)
            .ok_or_else(not_found)?;
        target.call(spec, args).await
    }

    /// Tier 3: a file of a skill active in this run, by a path as its body writes it.
    pub async fn read_resource(&self, skill: &str, path: &str) -> Result<Resource, RuntimeError> {
        let i = self
            .position(&name_key(skill))
            .ok_or_else(|| RuntimeError::NotActive {
                name: skill.to_string(),
            })?;
        read_entry_resource(&self.active[i].entry, path).await
    }

    /// Where an active skill's workspace is, once one of its scripts has run.
    pub fn workspace(&self, skill: &str) -> Option<PathBuf> {
        let key = name_key(skill);
        self.position(&key)?;
        self.session.inner.loaded.workspace(&key)
    }

    /// What an active skill's scripts left in its work directory (but its `tmp/`), which is
    /// removed with the workspace when the run ends; empty when none of its scripts has run.
    pub async fn left_files(&self, skill: &str) -> Result<Vec<LeftFile>, RuntimeError> {
        self.with_workspace(skill, |ws| ws.left_files().map_err(|e| format!("{e}")))
            .await
            .map(Option::unwrap_or_default)
    }

    /// Copies what an active skill's scripts left in its work directory into `dest` (made when
    /// missing, refused when not empty): regular files and their directories, no links. `None`
    /// when none of its scripts has run.
    pub async fn keep_work(&self, skill: &str, dest: &Path) -> Result<Option<Kept>, RuntimeError> {
        let dest = dest.to_path_buf();
        self.with_workspace(skill, move |ws| {
            ws.keep_work(&dest)
                .map_err(|e| format!("keeping the work directory in {}: {e}", dest.display()))
        })
        .await
    }

    /// Runs `f` off the async runtime on an active skill's workspace, if it has one.
    async fn with_workspace<T: Send + 'static>(
        &self,
        skill: &str,
        f: impl FnOnce(&crate::script::Workspace) -> Result<T, String> + Send + 'static,
    ) -> Result<Option<T>, RuntimeError> {
        let key = name_key(skill);
        self.position(&key).ok_or_else(|| RuntimeError::NotActive {
            name: skill.to_string(),
        })?;
        let Some(script) = self.session.inner.loaded.script(&key) else {
            return Ok(None);
        };
        crate::script::offload(move || script.workspace().map(f).transpose())
            .await
            .map_err(|e| ScriptError::Workspace {
                reason: format!("reading the work directory: {e}"),
            })?
            .map_err(|reason| RuntimeError::Script(ScriptError::Workspace { reason }))
    }

    /// Ends the run: its tools leave the tool set and the workspaces of skills that leave the
    /// loaded set are removed, reporting a removal that failed.
    pub async fn finish(self) -> Result<(), RuntimeError> {
        match self.close().await.into_iter().next() {
            Some(e) => Err(RuntimeError::Script(e)),
            None => Ok(()),
        }
    }

    /// [`finish`](Self::finish), reporting every workspace that could not be removed.
    pub(crate) async fn close(mut self) -> Vec<ScriptError> {
        let mut failures = Vec::new();
        for loaded in self.release() {
            // The loaded set held the only other reference, so this is the last one (unless a
            // call still running holds it: the workspace goes when that call ends).
            if let Ok(loaded) = Arc::try_unwrap(loaded)
                && let Err(e) = loaded.unload().await
            {
                failures.push(e);
            }
        }
        failures
    }

    /// Gives back this run's references; returns the scripts of skills that left the loaded
    /// set (dropping them removes their workspaces).
    fn release(&mut self) -> Vec<Arc<LoadedSkill>> {
        let active = std::mem::take(&mut self.active);
        if active.is_empty() {
            return Vec::new();
        }
        let keys: Vec<String> = active.iter().map(|a| name_key(&a.name)).collect();
        self.session
            .inner
            .loaded
            .release(keys.iter().map(String::as_str))
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Outside the lock: dropping the last reference removes the workspace.
        drop(self.release());
    }
}
