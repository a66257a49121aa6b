//! [`ToolProvider`]: the one way from a skill to the tools a model may call, whatever their
//! kind. Activation asks each kind in turn (scripts, host modules, guests): the trust rule and
//! the notes of what a skill does not get are written once, in [`provide`]; each kind only says
//! whether a skill brings tools of it, whether it runs in this session, how to prepare a skill's
//! tools and (through each prepared tool's [`ToolCall`]) how to call one.
//!
//! ```text
//! provide(skill) ── for each kind ──▶ brings none? ──────────────── (nothing, no note)
//!                                    untrusted and not for those? ─ "<kind> tools withheld: source '…' is not trusted"
//!                                    the session runs none? ─────── "<kind> tools withheld: this session runs no …"
//!                                    prepare(skill) ─▶ Provision { tools: [(ToolSpec, ToolCall)], notes, … }
//! Run::call(name) ─▶ the owner's ToolCall::call(spec, args) ─▶ ToolOutput | RuntimeError
//! ```

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value as Json;

use super::activation::Scripts;
use super::error::RuntimeError;
use super::module::{ModuleRegistry, WrappedTool};
use super::spec::{Content, ToolOutput, ToolSpec};
use crate::capability::{Capabilities, Ceiling, Grant};
use crate::catalog::Entry;
use crate::config::Environment;
use crate::script::{Gate, LoadedSkill, Provenance, Runner};
use crate::tool::ToolKind;

/// A skill about to be activated, as every kind sees it.
pub(super) struct SkillContext<'a> {
    /// The catalog entry.
    pub(super) entry: &'a Entry,
    /// Name, version and source.
    pub(super) provenance: &'a Provenance,
    /// Whether its source is trusted with code (scripts, guests, module tools).
    pub(super) trusted: bool,
    /// What the host grants on top of what the skill declares.
    pub(super) granted: &'a Capabilities,
    /// The host ceiling.
    pub(super) ceiling: &'a Ceiling,
    /// The directories grants are expanded against.
    pub(super) env: &'a Environment,
}

impl SkillContext<'_> {
    /// The skill's effective grant: what it declares and the host grants, within the ceiling.
    /// The one place a skill's grant is computed.
    pub(super) fn grant(&self) -> Grant {
        self.entry.grant_with(
            self.granted,
            self.ceiling,
            &self.env.cwd,
            self.env.home.as_deref(),
        )
    }
}

/// How one prepared tool is called.
#[async_trait]
pub(super) trait ToolCall: Send + Sync {
    /// Calls the tool `spec` describes with a model's arguments. Refusals and failures keep
    /// their kind's stable code.
    async fn call(&self, spec: &ToolSpec, args: &Json) -> Result<ToolOutput, RuntimeError>;

    /// Its skill leaves the loaded set: a call still holding the tool must not run it.
    fn unload(&self) {}
}

/// One tool a kind prepared for a skill: what a model is offered and how it is called.
pub(super) struct Provided {
    pub(super) spec: ToolSpec,
    pub(super) call: Arc<dyn ToolCall>,
}

/// What a kind gave a skill at activation.
#[derive(Default)]
pub(super) struct Provision {
    /// Its tools, in the order offered.
    pub(super) tools: Vec<Provided>,
    /// Why some of them are not offered; never silent.
    pub(super) notes: Vec<String>,
    /// The skill's loaded scripts, whose workspace outlives single calls (scripts only).
    pub(super) script: Option<Arc<LoadedSkill>>,
    /// What became of the skill's scripts (scripts only).
    pub(super) scripts: Option<Scripts>,
}

/// A kind of tool: how a skill's tools of that kind are prepared. See the module docs.
#[async_trait]
pub(super) trait ToolProvider: Send + Sync {
    /// The kind.
    fn kind(&self) -> ToolKind;

    /// Whether the skill brings tools of this kind (when it does, and gets none, a note says
    /// why).
    fn brought_by(&self, entry: &Entry) -> bool;

    /// Whether skills of untrusted sources get them (default: no).
    fn for_untrusted(&self) -> bool {
        false
    }

    /// What the session lacks to run them (`scripts`, `guest code`), when it does.
    fn lacking(&self) -> Option<&'static str> {
        None
    }

    /// The skill's tools of this kind, with notes on those not offered.
    async fn prepare(&self, skill: &SkillContext<'_>) -> Provision;
}

/// Asks every kind, in order, for a skill's tools: the trust rule and the notes of what is
/// withheld, written once.
pub(super) async fn provide(
    providers: &[&dyn ToolProvider],
    skill: &SkillContext<'_>,
) -> Provision {
    let mut out = Provision::default();
    for p in providers {
        if !p.brought_by(skill.entry) {
            continue;
        }
        let kind = p.kind().as_str();
        if !skill.trusted && !p.for_untrusted() {
            out.notes.push(format!(
                "{kind} tools withheld: source '{}' is not trusted",
                skill.entry.source_name()
            ));
            continue;
        }
        if let Some(what) = p.lacking() {
            out.notes.push(format!(
                "{kind} tools withheld: this session runs no {what}"
            ));
            continue;
        }
        let provision = p.prepare(skill).await;
        out.tools.extend(provision.tools);
        out.notes.extend(provision.notes);
        out.script = out.script.or(provision.script);
        out.scripts = out.scripts.or(provision.scripts);
    }
    out
}

/// Script tools: a skill's scripts, loaded by the session's runner and run confined.
pub(super) struct ScriptProvider<'a> {
    /// The runner; none: the session runs no scripts.
    pub(super) runner: Option<&'a Arc<Runner>>,
}

#[async_trait]
impl ToolProvider for ScriptProvider<'_> {
    fn kind(&self) -> ToolKind {
        ToolKind::Script
    }

    fn brought_by(&self, entry: &Entry) -> bool {
        entry
            .skill()
            .declarations()
            .map_or(true, |d| d.scripts().is_some())
            || entry
                .skill()
                .files()
                .iter()
                .any(|f| f.path.starts_with("scripts/"))
    }

    fn lacking(&self) -> Option<&'static str> {
        self.runner.is_none().then_some("scripts")
    }

    async fn prepare(&self, skill: &SkillContext<'_>) -> Provision {
        let Some(runner) = self.runner else {
            return Provision::default();
        };
        let entry = skill.entry;
        let mut out = Provision::default();
        match runner
            .load(entry.source().clone(), entry.skill().clone(), skill.grant())
            .await
        {
            Ok(loaded) => {
                for s in &loaded.tools().skipped {
                    out.notes.push(format!(
                        "script {} not offered: {} ({})",
                        s.path,
                        s.error,
                        s.error.code()
                    ));
                }
                let loaded = Arc::new(loaded);
                let call: Arc<dyn ToolCall> = Arc::new(ScriptCall {
                    runner: runner.clone(),
                    loaded: loaded.clone(),
                });
                out.tools = loaded
                    .tools()
                    .tools
                    .iter()
                    .map(|t| Provided {
                        spec: ToolSpec {
                            name: t.name.clone(),
                            description: t.description.clone(),
                            parameters: t.schema(),
                            kind: ToolKind::Script,
                            provenance: skill.provenance.clone(),
                            trusted: false,
                        },
                        call: call.clone(),
                    })
                    .collect();
                out.scripts = Some(Scripts::Loaded(
                    Arc::new(loaded.tools().clone()),
                    loaded.grant().clone(),
                ));
                out.script = Some(loaded);
            }
            Err(e) => {
                out.notes
                    .push(format!("script tools withheld: {e} ({})", e.code()));
                out.scripts = Some(Scripts::Failed(e));
            }
        }
        out
    }
}

/// A script tool of a loaded skill, run by the runner that loaded it.
struct ScriptCall {
    runner: Arc<Runner>,
    loaded: Arc<LoadedSkill>,
}

#[async_trait]
impl ToolCall for ScriptCall {
    async fn call(&self, spec: &ToolSpec, args: &Json) -> Result<ToolOutput, RuntimeError> {
        let out = self.runner.run(&self.loaded, &spec.name, args).await?;
        Ok(ToolOutput {
            tool: out.tool.clone(),
            kind: ToolKind::Script,
            content: Content::Text(out.to_model_text()),
            trusted: false,
            provenance: spec.provenance.clone(),
            script: Some(out),
        })
    }
}

/// Host module tools: native tools the host registered for the skill, each wrapped.
pub(super) struct ModuleProvider<'a> {
    pub(super) modules: &'a ModuleRegistry,
    /// Asked before every call.
    pub(super) gate: &'a Arc<dyn Gate>,
    /// How long a call may take.
    pub(super) timeout: Duration,
    /// Whether skills of untrusted sources get them too.
    pub(super) for_untrusted: bool,
}

#[async_trait]
impl ToolProvider for ModuleProvider<'_> {
    fn kind(&self) -> ToolKind {
        ToolKind::Module
    }

    fn brought_by(&self, entry: &Entry) -> bool {
        !self.modules.names_of(entry.name()).is_empty()
    }

    fn for_untrusted(&self) -> bool {
        self.for_untrusted
    }

    async fn prepare(&self, skill: &SkillContext<'_>) -> Provision {
        let tools = self
            .modules
            .wrap(skill.provenance, self.gate.clone(), self.timeout)
            .into_iter()
            .map(|w| Provided {
                spec: w.spec().clone(),
                call: Arc::new(w),
            })
            .collect();
        Provision {
            tools,
            ..Provision::default()
        }
    }
}

#[async_trait]
impl ToolCall for WrappedTool {
    async fn call(&self, _: &ToolSpec, args: &Json) -> Result<ToolOutput, RuntimeError> {
        Ok(WrappedTool::call(self, args).await?)
    }
}

#[cfg(feature = "guest")]
pub(super) use guest::GuestProvider;

#[cfg(feature = "guest")]
mod guest {
    use std::sync::Arc;

    use async_trait::async_trait;
    use serde_json::Value as Json;

    use super::{Provided, Provision, SkillContext, ToolCall, ToolProvider};
    use crate::catalog::Entry;
    use crate::error::RuntimeError;
    use crate::guest::{
        Globals, GuestHost, GuestTool, HostFunction, Rejection, declare::TOOLS_KEY,
    };
    use crate::resource::read_entry_resource;
    use crate::script::Gate;
    use crate::spec::{Content, ToolOutput, ToolSpec};
    use crate::tool::ToolKind;

    /// Guest tools: a skill's JavaScript functions, evaluated confined by the session's host,
    /// with `readSkillFile` (a file of the skill itself, as tier 3 reads it) among the host
    /// functions they may declare.
    pub(in super::super) struct GuestProvider<'a> {
        /// The host; none: the session runs no guest code.
        pub(in super::super) host: Option<&'a Arc<GuestHost>>,
        /// Asked before every call.
        pub(in super::super) gate: &'a Arc<dyn Gate>,
    }

    #[async_trait]
    impl ToolProvider for GuestProvider<'_> {
        fn kind(&self) -> ToolKind {
            ToolKind::Guest
        }

        fn brought_by(&self, entry: &Entry) -> bool {
            entry
                .skill()
                .frontmatter()
                .get("metadata")
                .and_then(crate::document::Value::as_map)
                .is_some_and(|m| m.contains_key(TOOLS_KEY))
        }

        fn lacking(&self) -> Option<&'static str> {
            self.host.is_none().then_some("guest code")
        }

        async fn prepare(&self, skill: &SkillContext<'_>) -> Provision {
            let Some(host) = self.host else {
                return Provision::default();
            };
            let entry = skill.entry;
            let mut extra = Globals::new();
            extra.insert(
                "readSkillFile".to_string(),
                Arc::new(SkillFile(entry.clone())),
            );
            let (guests, faults) = crate::guest::load(
                host,
                self.gate,
                entry.source(),
                entry.root(),
                entry.skill(),
                skill.provenance,
                &extra,
            )
            .await;
            Provision {
                notes: faults
                    .iter()
                    .map(|f| format!("guest tool not offered: {f} ({})", f.code()))
                    .collect(),
                tools: guests
                    .into_iter()
                    .map(|g| Provided {
                        spec: ToolSpec {
                            name: g.name().to_string(),
                            description: g.declaration().description.clone(),
                            parameters: g.schema(),
                            kind: ToolKind::Guest,
                            provenance: skill.provenance.clone(),
                            trusted: false,
                        },
                        call: Arc::new(GuestCall(g)),
                    })
                    .collect(),
                ..Provision::default()
            }
        }
    }

    /// A guest tool as the tool map calls it.
    struct GuestCall(Arc<GuestTool>);

    #[async_trait]
    impl ToolCall for GuestCall {
        async fn call(&self, spec: &ToolSpec, args: &Json) -> Result<ToolOutput, RuntimeError> {
            let outcome = self.0.call(args).await?;
            Ok(ToolOutput {
                tool: spec.name.clone(),
                kind: ToolKind::Guest,
                content: Content::Text(outcome.to_json().to_string()),
                trusted: false,
                provenance: spec.provenance.clone(),
                script: None,
            })
        }

        fn unload(&self) {
            self.0.unload();
        }
    }

    /// `readSkillFile(path)`: a guest reads a file of its own skill (text), by a path as the
    /// skill's body writes it; nothing outside the skill.
    struct SkillFile(Entry);

    #[async_trait]
    impl HostFunction for SkillFile {
        async fn call(&self, args: Json) -> Result<Json, Rejection> {
            let path = match &args {
                Json::String(p) => p.as_str(),
                other => other
                    .get("path")
                    .and_then(Json::as_str)
                    .ok_or("readSkillFile takes a path (a string)")?,
            };
            let r = read_entry_resource(&self.0, path)
                .await
                .map_err(|e| Rejection::new(e.to_string()))?;
            String::from_utf8(r.data.to_vec())
                .map(Json::String)
                .map_err(|_| format!("{path} is not UTF-8 text").into())
        }
    }
}
