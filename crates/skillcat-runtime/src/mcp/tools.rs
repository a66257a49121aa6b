//! The tools of a [`Session`] as MCP tools: the server holds one [`Run`] with every skill of
//! its snapshot active, and offers that run's tools.
//!
//! ```text
//! Session::start ──activate_entry(each skill)──▶ Run (script tools of trusted skills, host
//!                                                 module tools) ──▶ Tool
//! tools/call name, arguments ──▶ Run::call ──▶ Ok: text of the run      (isError: false)
//!                                            └▶ Err: error text         (isError: true,
//!                                                    _meta.code = E_SKILL_…)
//! ```
//!
//! A skill whose tools cannot all enter the tool set (a name of the host's own, or one it gives
//! twice) offers none; a name two skills' tools fold to (case and `-`/`_` aside) is contested
//! and offered by neither, reported with every claim; a script that is not a tool (no allowed
//! interpreter, not executable) is reported, never dropped silently. At shutdown the run ends, which removes the workspaces.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject, Tool, ToolAnnotations};
use serde_json::Value as Json;

use super::hints;
use crate::catalog::Entry;
use crate::script::{Confinement, ScriptError};
use crate::{Activation, Content, Run, RuntimeError, Session, ToolKind, ToolSpec};

/// The tools of one client session for one view; the run is ended at shutdown, or when the
/// last holder drops it (a client session gone, a newer view's set in its place).
#[derive(Debug, Default)]
pub(crate) struct ToolSet {
    /// The view it was made for.
    version: u64,
    offered: Vec<Tool>,
    by_name: HashMap<String, usize>,
    /// Shared with calls in progress; `None` once shut down.
    run: Mutex<Option<Arc<Run>>>,
}

/// What a call found.
pub(crate) enum Call {
    /// No tool of that name is offered.
    Unknown,
    /// The tool ran, or failed in a way the caller should read.
    Done(CallToolResult),
}

impl ToolSet {
    /// Activates every entry in one run of the session. Returns the set and a warning per skill
    /// or script left out.
    pub(crate) async fn load(
        session: &Session,
        entries: &[Entry],
        version: u64,
    ) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let mut set = ToolSet {
            version,
            ..ToolSet::default()
        };
        let mut run = session.start();
        for e in entries {
            let activation = match run.activate_entry(e.clone()).await {
                Ok(a) => a,
                Err(err) => {
                    warnings.push(format!(
                        "skill `{}`: no tools: {err} ({})",
                        e.name(),
                        err.code()
                    ));
                    continue;
                }
            };
            if let Some(err) = activation.script_error() {
                warnings.push(format!(
                    "skill `{}`: no tools: {err} ({})",
                    e.name(),
                    err.code()
                ));
            }
            for s in activation.script_tools().map_or(&[][..], |t| &t.skipped) {
                warnings.push(format!(
                    "skill `{}`: {} is not a tool: {} ({})",
                    e.name(),
                    s.path,
                    s.error,
                    s.error.code()
                ));
            }
            // A faulty declaration and tools the audit withheld are warned about; guest tools
            // a session does not run are not (as scripts without a runner are not).
            for note in activation.notes.iter().filter(|n| {
                n.starts_with("guest tool not offered")
                    || n.starts_with(crate::session::AUDIT_WITHHELD)
            }) {
                warnings.push(format!("skill `{}`: {note}", e.name()));
            }
        }
        // Offered once every skill is in: a name two skills' tools fold to is contested and
        // offered by neither, whichever came first.
        for c in session.contested_tools() {
            let claims: Vec<String> = c
                .claims
                .iter()
                .map(|c| format!("skill `{}` ({})", c.skill, c.name))
                .collect();
            warnings.push(format!(
                "tool name `{}` is contested by {}: names that differ only in case or '-'/'_' \
                 are one name, which belongs to one tool, so none of them is offered \
                 (E_SKILL_TOOL_COLLISION)",
                c.name,
                claims.join(", ")
            ));
        }
        let offered: Vec<&ToolSpec> = run.tools().collect();
        for activation in run.activations() {
            for spec in offered
                .iter()
                .filter(|t| t.provenance == activation.provenance)
            {
                set.by_name.insert(spec.name.clone(), set.offered.len());
                set.offered.push(mcp_tool(activation, spec));
            }
        }
        set.run = Mutex::new(Some(Arc::new(run)));
        (set, warnings)
    }

    /// Every tool offered, in catalog order.
    pub(crate) fn list(&self) -> Vec<Tool> {
        self.offered.clone()
    }

    /// The view the set was made for.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// A tool by its exact name.
    #[cfg(test)]
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.offered[i])
    }

    /// Runs a tool with JSON arguments (`None`: no arguments).
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Option<serde_json::Map<String, Json>>,
    ) -> Call {
        if !self.by_name.contains_key(name) {
            return Call::Unknown;
        }
        let run = self
            .run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(run) = run else {
            // The server is shutting down: the run has ended.
            return Call::Unknown;
        };
        let args = args.map_or(Json::Null, Json::Object);
        let place = script_place(&run, name);
        let cap = run
            .session()
            .inner
            .runner
            .as_ref()
            .map_or(crate::script::ScriptLimits::default().output, |r| {
                r.config().limits.output
            });
        Call::Done(match run.call(name, &args).await {
            Ok(mut out) => {
                // The proxy's hints, said again for the model (no flag of `run`'s).
                if let (Some((skill, _)), Some(script)) = (&place, &mut out.script)
                    && let Some(n) = &mut script.network
                {
                    hints::network_for_model(n, skill);
                    out.content = Content::Text(script.to_model_text());
                    out.fit(cap);
                }
                let mut meta = MetaObject::new();
                if let Some(script) = &out.script {
                    meta.0.insert("exitCode".into(), script.exit_code.into());
                    meta.0.insert(
                        "confined".into(),
                        matches!(script.confinement, Confinement::Confined(_)).into(),
                    );
                    meta.0.insert(
                        "durationMs".into(),
                        u64::try_from(script.duration.as_millis())
                            .unwrap_or(u64::MAX)
                            .into(),
                    );
                    if let Some(n) = &script.network {
                        meta.0.insert(
                            "network".into(),
                            serde_json::to_value(n).unwrap_or(Json::Null),
                        );
                    }
                }
                CallToolResult::success(vec![content_block(&out.content)]).with_meta(Some(meta))
            }
            Err(mut e) => {
                let mut extra = String::new();
                if let RuntimeError::Script(ScriptError::Failed {
                    output, network, ..
                }) = &mut e
                    && let Some((skill, grant)) = &place
                {
                    if let Some(n) = network {
                        hints::network_for_model(n, skill);
                    }
                    if let Some(r) = &run.session().inner.runner {
                        extra =
                            hints::failure_for_model(&output.text, grant, r.config(), &args, skill);
                    }
                }
                // The hints are the host's lines: the output gives way to them.
                e.fit(cap.saturating_sub(extra.len() + 1));
                error_result(&e, &extra)
            }
        })
    }

    /// Ends the run (removing its workspaces); calls after this find no tool. Returns what
    /// could not be removed.
    pub(crate) async fn shutdown(&self) -> Vec<ScriptError> {
        let run = self
            .run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match run.map(Arc::try_unwrap) {
            Some(Ok(run)) => run.close().await,
            // A call still running holds the run; its workspaces go when that call ends.
            Some(Err(_)) | None => Vec::new(),
        }
    }

    /// [`shutdown`](Self::shutdown), first waiting until `deadline` for the calls still
    /// running to end. A call running past it keeps the run, whose workspaces go when it ends
    /// (or, should the process exit first, at the next start: see the sandbox's workspaces).
    pub(crate) async fn shutdown_by(&self, deadline: tokio::time::Instant) -> Vec<ScriptError> {
        let mut run = self
            .run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        loop {
            match run.map(Arc::try_unwrap) {
                None => return Vec::new(),
                Some(Ok(run)) => return run.close().await,
                Some(Err(shared)) if tokio::time::Instant::now() >= deadline => {
                    drop(shared);
                    return Vec::new();
                }
                Some(Err(shared)) => {
                    run = Some(shared);
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            }
        }
    }
}

/// The skill whose script tool `tool` is, and its grant, when it is one.
fn script_place(run: &Run, tool: &str) -> Option<(String, crate::capability::Grant)> {
    let a = run
        .activations()
        .iter()
        .find(|a| a.script_tools().is_some_and(|t| t.find(tool).is_some()))?;
    Some((a.name.clone(), a.script_grant()?.clone()))
}

/// An error as a tool result a model reads: `isError: true`, the model text (then `hints`, the
/// lines [`hints::failure_for_model`] wrote), and the stable code in `_meta.code`.
fn error_result(e: &RuntimeError, hints: &str) -> CallToolResult {
    let mut meta = MetaObject::new();
    meta.0.insert("code".into(), e.code().into());
    meta.0.insert("message".into(), e.to_string().into());
    if let RuntimeError::Script(s) = e
        && let Some(n) = s.network()
    {
        meta.0.insert(
            "network".into(),
            serde_json::to_value(n).unwrap_or(Json::Null),
        );
    }
    let mut text = e.to_model_text();
    if !hints.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(hints);
    }
    CallToolResult::error(vec![ContentBlock::text(text)]).with_meta(Some(meta))
}

/// A checked tool result as MCP content: text, an image, or the model text of other bytes.
fn content_block(content: &Content) -> ContentBlock {
    match content {
        Content::Text(t) => ContentBlock::text(t.clone()),
        Content::Media { mime, data } if mime.starts_with("image/") => ContentBlock::image(
            base64::engine::general_purpose::STANDARD.encode(data),
            mime.clone(),
        ),
        other => ContentBlock::text(other.to_model_text()),
    }
}

fn mcp_tool(activation: &Activation, spec: &ToolSpec) -> Tool {
    let schema = match &spec.parameters {
        Json::Object(o) => o.clone(),
        _ => serde_json::Map::new(),
    };
    let mut meta = MetaObject::new();
    meta.0
        .insert("skill".into(), activation.name.clone().into());
    let mut annotations = ToolAnnotations::new().read_only(false);
    if spec.kind == ToolKind::Script {
        if let Some(t) = activation.script_tools().and_then(|t| t.find(&spec.name)) {
            meta.0.insert("script".into(), t.path.clone().into());
            meta.0
                .insert("interpreter".into(), t.interpreter.name.clone().into());
        }
        let network = activation.script_grant().map(|g| g.network.clone());
        if let Some(n) = &network {
            // What the tool may reach: `true`, `false`, or the hosts of its grant.
            meta.0.insert(
                "network".into(),
                serde_json::to_value(n).unwrap_or(Json::Null),
            );
        }
        annotations = annotations.open_world(network.is_some_and(|n| n.any()));
    } else if spec.kind == ToolKind::Guest {
        // JavaScript evaluated confined, no network: it reaches only what the host gives.
        meta.0.insert("kind".into(), "guest".into());
        annotations = annotations.open_world(false);
    }
    Tool::new(
        Cow::Owned(spec.name.clone()),
        Cow::Owned(spec.description.clone()),
        Arc::new(schema),
    )
    .with_annotations(annotations)
    .with_meta(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Catalog, CatalogSource};
    use crate::script::{DenyAll, Gate};
    use crate::{ModuleRegistry, ModuleTool};

    use super::super::tests::Lookup;

    async fn tool_set(gate: Option<Arc<dyn Gate>>) -> (Session, ToolSet, Vec<String>) {
        let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/runtime/skills");
        let catalog = Catalog::new(vec![CatalogSource::spec(skills).trusted(true)]);
        let mut modules = ModuleRegistry::new();
        modules
            .register("order-lookup", [Arc::new(Lookup) as Arc<dyn ModuleTool>])
            .unwrap();
        let mut builder = Session::builder(catalog.clone()).modules(modules);
        if let Some(gate) = gate {
            builder = builder.gate(gate);
        }
        let session = builder.build();
        let (set, warnings) = ToolSet::load(&session, &catalog.all().await, 0).await;
        (session, set, warnings)
    }

    fn json_of(call: Call) -> Json {
        match call {
            Call::Done(result) => serde_json::to_value(result).unwrap(),
            Call::Unknown => panic!("the tool is unknown"),
        }
    }

    #[tokio::test]
    async fn the_tools_are_the_session_runs_module_tools_too() {
        // No runner: scripts are not loaded (and not warned about); the module tool is offered.
        let (session, set, warnings) = tool_set(None).await;
        assert_eq!(warnings, Vec::<String>::new());
        let names: Vec<String> = set.list().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["lookup_order"]);
        assert_eq!(session.tool_names(), ["lookup_order"]);
        let tool = serde_json::to_value(set.get("lookup_order").unwrap()).unwrap();
        assert_eq!(tool["_meta"]["skill"], "order-lookup");
        assert!(tool["_meta"].get("script").is_none(), "{tool}");

        let r = json_of(set.call("lookup_order", None).await);
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(r["content"][0]["text"], "order 42: shipped");
        assert!(matches!(set.call("run_nope", None).await, Call::Unknown));

        // Shutdown ends the run: the session's tool set empties, later calls find nothing.
        assert!(set.shutdown().await.is_empty());
        assert!(session.tool_names().is_empty());
        assert!(session.loaded_skills().is_empty());
        assert!(matches!(
            set.call("lookup_order", None).await,
            Call::Unknown
        ));
    }

    #[tokio::test]
    async fn the_sessions_gate_decides_with_the_module_codes() {
        let (_session, set, _) = tool_set(Some(Arc::new(DenyAll::default()))).await;
        let r = json_of(set.call("lookup_order", None).await);
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["_meta"]["code"], "E_SKILL_TOOL_DENIED");
        assert_eq!(
            r["content"][0]["text"],
            "Error (E_SKILL_TOOL_DENIED): call of 'lookup_order' denied: module tools are disabled"
        );
    }
}
