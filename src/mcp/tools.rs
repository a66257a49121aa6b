//! Script tools of trusted skills as MCP tools, run confined by the [`Runner`].
//!
//! ```text
//! trusted entry ──Runner::load(grant = declared ∩ ceiling)──▶ LoadedSkill ──ToolRegistry──▶ Tool
//! tools/call name, arguments ──▶ Runner::run ──▶ Ok: text of the run      (isError: false)
//!                                              └▶ Err: ScriptError text    (isError: true,
//!                                                      _meta.code = E_SKILL_…)
//! ```
//!
//! A skill whose tools cannot all be registered (a name collision) offers none, and a script
//! that is not a tool (no allowed interpreter, not executable) is reported, never dropped
//! silently. At shutdown every loaded skill is unloaded, which removes its workspace.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CallToolResult, ContentBlock, MetaObject, Tool, ToolAnnotations};
use serde_json::Value as Json;

use crate::capability::Ceiling;
use crate::catalog::Entry;
use crate::script::{Confinement, LoadedSkill, Runner, ScriptError, ToolRegistry};

/// How the server runs script tools: the runner (gate, limits, interpreters, session policy) and
/// what each skill's grant is computed against (the skill's declared capabilities ∩ `ceiling`,
/// relative paths against `cwd`, `~` against `home`).
#[derive(Debug)]
pub struct ScriptTools {
    /// Runs the scripts.
    pub runner: Runner,
    /// The ceiling grants are intersected with (the configuration's `[sandbox]`).
    pub ceiling: Ceiling,
    /// The working directory relative capability paths are taken against.
    pub cwd: PathBuf,
    /// The home directory, for `~`.
    pub home: Option<PathBuf>,
}

/// One tool offered, and the loaded skill it belongs to.
#[derive(Debug)]
struct Offered {
    tool: Tool,
    skill: usize,
}

/// The tools of the server: fixed at start; the loaded skills are given up at shutdown.
#[derive(Debug, Default)]
pub(crate) struct ToolSet {
    runner: Option<Runner>,
    offered: Vec<Offered>,
    by_name: HashMap<String, usize>,
    loaded: Mutex<Vec<Option<Arc<LoadedSkill>>>>,
}

/// What a call found.
pub(crate) enum Call {
    /// No tool of that name is offered.
    Unknown,
    /// The tool ran, or failed in a way the caller should read.
    Done(CallToolResult),
}

impl ToolSet {
    /// Loads the tools of every trusted entry. Returns the set and a warning per skill or script
    /// left out.
    pub(crate) async fn load(
        scripts: Option<ScriptTools>,
        entries: &[Entry],
    ) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let Some(st) = scripts else {
            return (ToolSet::default(), warnings);
        };
        let mut set = ToolSet::default();
        let mut registry = ToolRegistry::new();
        let mut loaded = Vec::new();
        for e in entries.iter().filter(|e| e.scripts_allowed()) {
            let grant = e.grant(&st.ceiling, &st.cwd, st.home.as_deref());
            let network = grant.network;
            let skill = match st
                .runner
                .load(e.source().clone(), e.skill().clone(), grant)
                .await
            {
                Ok(s) => s,
                Err(err) => {
                    warnings.push(format!(
                        "skill `{}`: no tools: {err} ({})",
                        e.name(),
                        err.code()
                    ));
                    continue;
                }
            };
            for s in &skill.tools().skipped {
                warnings.push(format!(
                    "skill `{}`: {} is not a tool: {} ({})",
                    e.name(),
                    s.path,
                    s.error,
                    s.error.code()
                ));
            }
            if let Err(err) = registry.register(skill.tools()) {
                warnings.push(format!(
                    "skill `{}`: no tools: {err} ({})",
                    e.name(),
                    err.code()
                ));
                continue;
            }
            let index = loaded.len();
            for t in &skill.tools().tools {
                set.by_name.insert(t.name.clone(), set.offered.len());
                set.offered.push(Offered {
                    tool: mcp_tool(e, t, network),
                    skill: index,
                });
            }
            loaded.push(Some(Arc::new(skill)));
        }
        set.runner = Some(st.runner);
        set.loaded = Mutex::new(loaded);
        (set, warnings)
    }

    /// Every tool offered, in catalog order.
    pub(crate) fn list(&self) -> Vec<Tool> {
        self.offered.iter().map(|o| o.tool.clone()).collect()
    }

    /// A tool by its exact name.
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.offered[i].tool)
    }

    /// Runs a tool with JSON arguments (`None`: no arguments).
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Option<serde_json::Map<String, Json>>,
    ) -> Call {
        let (Some(runner), Some(&i)) = (&self.runner, self.by_name.get(name)) else {
            return Call::Unknown;
        };
        let skill = self
            .loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(self.offered[i].skill)
            .cloned()
            .flatten();
        let Some(skill) = skill else {
            // The server is shutting down: the skill has been unloaded.
            return Call::Unknown;
        };
        let args = args.map_or(Json::Null, Json::Object);
        Call::Done(match runner.run(&skill, name, &args).await {
            Ok(out) => {
                let mut meta = MetaObject::new();
                meta.0.insert("exitCode".into(), out.exit_code.into());
                meta.0.insert(
                    "confined".into(),
                    matches!(out.confinement, Confinement::Confined(_)).into(),
                );
                meta.0.insert(
                    "durationMs".into(),
                    u64::try_from(out.duration.as_millis())
                        .unwrap_or(u64::MAX)
                        .into(),
                );
                CallToolResult::success(vec![ContentBlock::text(out.to_model_text())])
                    .with_meta(Some(meta))
            }
            Err(e) => error_result(&e),
        })
    }

    /// Unloads every skill (removing its workspaces); calls after this find no tool. Returns
    /// what could not be removed.
    pub(crate) async fn shutdown(&self) -> Vec<ScriptError> {
        let skills: Vec<Arc<LoadedSkill>> = {
            let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
            loaded.iter_mut().filter_map(Option::take).collect()
        };
        let mut failures = Vec::new();
        for s in skills {
            // A call still running holds the skill; its workspace goes when that call drops it.
            if let Ok(s) = Arc::try_unwrap(s)
                && let Err(e) = s.unload().await
            {
                failures.push(e);
            }
        }
        failures
    }
}

/// A script error as a tool result a model reads: `isError: true`, the model text, and the
/// stable code in `_meta.code`.
pub(crate) fn error_result(e: &ScriptError) -> CallToolResult {
    let mut meta = MetaObject::new();
    meta.0.insert("code".into(), e.code().into());
    meta.0.insert("message".into(), e.to_string().into());
    CallToolResult::error(vec![ContentBlock::text(e.to_model_text())]).with_meta(Some(meta))
}

fn mcp_tool(e: &Entry, t: &crate::script::ScriptTool, network: bool) -> Tool {
    let schema = match t.schema() {
        Json::Object(o) => o,
        _ => serde_json::Map::new(),
    };
    let mut meta = MetaObject::new();
    meta.0.insert("skill".into(), e.name().into());
    meta.0.insert("script".into(), t.path.clone().into());
    meta.0
        .insert("interpreter".into(), t.interpreter.name.clone().into());
    Tool::new(
        Cow::Owned(t.name.clone()),
        Cow::Owned(t.description.clone()),
        Arc::new(schema),
    )
    .with_annotations(ToolAnnotations::new().read_only(false).open_world(network))
    .with_meta(meta)
}
