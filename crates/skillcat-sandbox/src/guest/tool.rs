//! [`GuestTool`]: one declared guest tool of a loaded skill, with its source, the host
//! functions it may call, and the one gate that decides before anything runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value as Json;

use super::declare::{GuestDecl, declarations};
use super::error::GuestError;
use super::host::{Globals, GuestHost, HostFunction, Outcome};
use crate::document::Skill;
use crate::path::join_path;
use crate::script::gate::ask;
use crate::script::{Gate, GateKind, GateRequest, Provenance};
use crate::source::Source;
use crate::tool::{FailureKind, ToolFailure, ToolKind};

/// The largest tool source read (1 MiB).
pub const SOURCE_MAX: usize = 1 << 20;

/// A guest tool ready to be called.
pub struct GuestTool {
    decl: GuestDecl,
    source: String,
    provenance: Provenance,
    globals: Globals,
    host: Arc<GuestHost>,
    gate: Arc<dyn Gate>,
    loaded: AtomicBool,
}

impl std::fmt::Debug for GuestTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestTool")
            .field("decl", &self.decl)
            .field("provenance", &self.provenance)
            .field("globals", &self.globals.keys().collect::<Vec<_>>())
            .field("loaded", &self.loaded)
            .finish_non_exhaustive()
    }
}

impl GuestTool {
    /// The name a model calls.
    pub fn name(&self) -> &str {
        &self.decl.name
    }

    /// The declaration.
    pub fn declaration(&self) -> &GuestDecl {
        &self.decl
    }

    /// The skill it belongs to.
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// Its input schema: the parameters and `timeout_seconds`.
    pub fn schema(&self) -> Json {
        let l = self.host.current_limits();
        self.decl.schema(l.default_timeout, l.max_timeout)
    }

    /// Marks the tool's skill as unloaded: later calls fail with `E_SKILL_NOT_LOADED`.
    pub fn unload(&self) {
        self.loaded.store(false, Ordering::Release);
    }

    /// Calls the tool: the skill must be loaded, the gate decides first, then the arguments
    /// are checked (no unknown key) and the evaluation runs. A guest that throws is an `Ok` outcome.
    pub async fn call(&self, args: &Json) -> Result<Outcome, GuestError> {
        if !self.loaded.load(Ordering::Acquire) {
            return Err(GuestError::NotLoaded {
                tool: self.decl.name.clone(),
                skill: self.provenance.skill.clone(),
            });
        }
        let request = GateRequest {
            skill: &self.provenance.skill,
            tool: &self.decl.name,
            kind: GateKind::Guest {
                provenance: &self.provenance,
                source: &self.decl.source,
                args,
            },
        };
        ask(self.gate.as_ref(), &request)
            .await
            .map_err(|r| r.into_failure(ToolKind::Guest, &self.decl.name))?;
        let l = self.host.current_limits();
        let (guest_args, timeout) = self
            .decl
            .check_args(args, l.default_timeout, l.max_timeout)
            .map_err(|reason| {
                ToolFailure::new(
                    ToolKind::Guest,
                    &self.decl.name,
                    FailureKind::InvalidArgs { reason },
                )
            })?;
        self.host
            .evaluate(
                &self.decl.name,
                &self.source,
                guest_args,
                &self.globals,
                Duration::from_secs(timeout),
            )
            .await
    }
}

/// Loads a skill's guest tools: each declaration checked, its source read from the skill
/// (at most [`SOURCE_MAX`] bytes of UTF-8), each declared global resolved among the host's
/// and `extra` (the functions the caller provides for this skill, such as `readSkillFile`).
/// Returns the tools and, for each one not offered, why.
pub async fn load(
    host: &Arc<GuestHost>,
    gate: &Arc<dyn Gate>,
    source: &Arc<dyn Source>,
    root: &str,
    skill: &Skill,
    provenance: &Provenance,
    extra: &Globals,
) -> (Vec<Arc<GuestTool>>, Vec<GuestError>) {
    let mut tools = Vec::new();
    let mut faults = Vec::new();
    for decl in declarations(skill.frontmatter()) {
        let decl = match decl {
            Ok(d) => d,
            Err(e) => {
                faults.push(e);
                continue;
            }
        };
        let bad = |reason: String| GuestError::InvalidDeclaration {
            tool: decl.name.clone(),
            reason,
        };
        let mut globals = Globals::new();
        let mut missing = None;
        for g in &decl.globals {
            let f: Option<Arc<dyn HostFunction>> =
                extra.get(g).cloned().or_else(|| host.global_fn(g));
            match f {
                Some(f) => {
                    globals.insert(g.clone(), f);
                }
                None => missing = Some(g.clone()),
            }
        }
        if let Some(g) = missing {
            faults.push(bad(format!(
                "it needs host function '{g}', which this host does not provide"
            )));
            continue;
        }
        if !skill.files().iter().any(|f| f.path == decl.source) {
            faults.push(bad(format!(
                "source {} is not a file of the skill",
                decl.source
            )));
            continue;
        }
        let text = match source.read(&join_path(root, &decl.source)).await {
            Ok(b) if b.len() > SOURCE_MAX => {
                faults.push(bad(format!(
                    "source {} is over {SOURCE_MAX} bytes",
                    decl.source
                )));
                continue;
            }
            Ok(b) => match String::from_utf8(b.to_vec()) {
                Ok(t) => t,
                Err(_) => {
                    faults.push(bad(format!("source {} is not UTF-8", decl.source)));
                    continue;
                }
            },
            Err(e) => {
                faults.push(bad(format!("source {} cannot be read: {e}", decl.source)));
                continue;
            }
        };
        tools.push(Arc::new(GuestTool {
            decl,
            source: text,
            provenance: provenance.clone(),
            globals,
            host: host.clone(),
            gate: gate.clone(),
            loaded: AtomicBool::new(true),
        }));
    }
    (tools, faults)
}
