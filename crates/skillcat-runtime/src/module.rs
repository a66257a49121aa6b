//! Host module tools: native Rust tools a host provides for a skill, never handed to a model
//! as they are.
//!
//! ```text
//! host: impl ModuleTool ──ModuleRegistry::register(skill, tools)──▶ names checked, all or nothing
//!                          (invalid name, bad schema, duplicate, collision → ToolError)
//!                                   │  name, description, parameters copied once
//!                                   ▼
//! activation of the skill ──wrap──▶ WrappedTool { copy, provenance (skill, version, source) }
//!                                   │
//! WrappedTool::call(args) ──▶ args an object? ──▶ Gate (GateKind::Module) ──▶ tool.call under
//!                             catch_unwind and a timeout ──▶ response checked (text | bytes |
//!                             media) ──▶ ToolOutput (trusted: false, always)
//! ```
//!
//! Every refusal and failure is a [`ToolError`] with a stable `E_SKILL_TOOL_*` code.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::Value as Json;

use super::error::ToolError;
use super::spec::{Content, ToolOutput, ToolSpec};
use crate::document::name_key;
use crate::script::Provenance;
use crate::script::gate::{ask, panic_message};
use crate::script::{Gate, GateKind, GateRequest};
use crate::tool::names::in_script_namespace;
use crate::tool::{FailureKind, ToolFailure, ToolKind};

/// An error a module tool returns: reported as [`ToolError::Failed`].
pub type ModuleError = Box<dyn std::error::Error + Send + Sync>;

/// What a module tool answers. Only text, bytes and media are accepted; [`Other`] stands for
/// anything else a tool may produce and is refused as `E_SKILL_TOOL_BAD_RESPONSE`, as is media
/// whose MIME type is not `type/subtype`.
///
/// [`Other`]: ModuleResponse::Other
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleResponse {
    /// Text.
    Text(String),
    /// Opaque bytes.
    Bytes(Vec<u8>),
    /// Media of a MIME type.
    Media {
        /// `type/subtype` (`image/png`).
        mime: String,
        /// The bytes.
        data: Vec<u8>,
    },
    /// Anything else (a structured value, a tool that passes through what it got): refused.
    Other(Json),
}

impl From<String> for ModuleResponse {
    fn from(s: String) -> Self {
        ModuleResponse::Text(s)
    }
}

impl From<&str> for ModuleResponse {
    fn from(s: &str) -> Self {
        ModuleResponse::Text(s.to_string())
    }
}

impl ModuleResponse {
    /// The checked content, or why the response is refused.
    pub fn check(self) -> Result<Content, BadResponse> {
        match self {
            ModuleResponse::Text(t) => Ok(Content::Text(t)),
            ModuleResponse::Bytes(b) => Ok(Content::Bytes(b)),
            ModuleResponse::Media { mime, data } => {
                if is_mime_type(&mime) {
                    Ok(Content::Media { mime, data })
                } else {
                    Err(BadResponse::MediaType(mime))
                }
            }
            ModuleResponse::Other(v) => Err(BadResponse::NotContent(json_kind(&v))),
        }
    }
}

/// Why [`ModuleResponse::check`] refused a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadResponse {
    /// Media whose MIME type is not `type/subtype`.
    #[error("media type {0:?} is not type/subtype")]
    MediaType(String),
    /// A structured value, not text, bytes or media: the kind of JSON value it is.
    #[error("expected text, bytes or media, got a JSON {0}")]
    NotContent(&'static str),
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// `type/subtype` with RFC 6838 restricted names (no parameters).
fn is_mime_type(s: &str) -> bool {
    let name = |p: &str| {
        (1..=127).contains(&p.len())
            && p.as_bytes()[0].is_ascii_alphanumeric()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    matches!(s.split_once('/'), Some((t, st)) if name(t) && name(st))
}

/// Whether a tool name is safe for every major model provider: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// ```
/// use skillcat_runtime::is_provider_safe_name;
/// assert!(is_provider_safe_name("lookup_order-2"));
/// assert!(!is_provider_safe_name("lookup.order"));
/// assert!(!is_provider_safe_name(&"x".repeat(65)));
/// ```
pub fn is_provider_safe_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A native tool a host provides for a skill.
///
/// # Contract
///
/// - `name`, `description` and `parameters` are read once, at registration; the name must
///   match `^[a-zA-Z0-9_-]{1,64}$` and the parameters must be an object schema.
/// - `call` gets a JSON object (never anything else) and answers text, bytes or media. Errors,
///   panics, other answers and answers later than the session's limit become [`ToolError`]s;
///   none of them reaches the model unlabelled.
/// - Whatever [`trusted`](ModuleTool::trusted) says, results are handed on as untrusted data.
#[async_trait]
pub trait ModuleTool: Send + Sync {
    /// The name a model calls.
    fn name(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    /// The JSON Schema of its arguments (`{"type": "object", …}`).
    fn parameters(&self) -> Json;
    /// Whether the tool claims its output may be trusted as instructions. Ignored: skillcat
    /// forces `trusted = false` on every tool and result.
    fn trusted(&self) -> bool {
        false
    }
    /// Runs the tool.
    async fn call(&self, args: Json) -> Result<ModuleResponse, ModuleError>;
}

/// A registered tool: what was read from it once, and the tool.
#[derive(Clone)]
struct Registered {
    name: String,
    description: String,
    parameters: Json,
    tool: Arc<dyn ModuleTool>,
}

/// The module tools a host provides, by skill, and the names of the host's own tools.
///
/// Registration checks names before anything is kept, all or nothing: a name that is not
/// provider-safe or that lies in the script tools' `run_` namespace (`E_SKILL_TOOL_INVALID_NAME`;
/// see [`in_script_namespace`](crate::tool::names::in_script_namespace)), parameters that are not an object schema
/// (`E_SKILL_TOOL_INVALID_SCHEMA`), two tools of one skill with one name
/// (`E_SKILL_TOOL_DUPLICATE`), a name held by another skill's tool or a reserved host tool
/// (`E_SKILL_TOOL_COLLISION`). Names that differ from other skills' tools only in case or
/// `-`/`_` are contested when the skills are activated: neither is offered (see
/// [`ToolNames`](crate::tool::names::ToolNames)).
#[derive(Clone, Default)]
pub struct ModuleRegistry {
    /// Lookup key of the skill → (the skill as named at registration, its tools).
    skills: BTreeMap<String, (String, Vec<Registered>)>,
    reserved: BTreeSet<String>,
}

impl std::fmt::Debug for ModuleRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let skills: BTreeMap<&str, Vec<&str>> = self
            .skills
            .values()
            .map(|(s, t)| (s.as_str(), t.iter().map(|r| r.name.as_str()).collect()))
            .collect();
        f.debug_struct("ModuleRegistry")
            .field("skills", &skills)
            .field("reserved", &self.reserved)
            .finish()
    }
}

impl ModuleRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes a name for one of the host's own tools (`read_file`, …): no skill tool may use
    /// it. Refused when a registered module tool has it already.
    pub fn reserve(&mut self, name: &str) -> Result<(), ToolError> {
        if let Some(owner) = self.owner(name) {
            return Err(ToolError::Collision {
                tool: name.to_string(),
                skill: owner.to_string(),
                taken_by: "a reserved host tool".to_string(),
            });
        }
        self.reserved.insert(name.to_string());
        Ok(())
    }

    /// The host's reserved tool names.
    pub fn reserved(&self) -> impl Iterator<Item = &str> {
        self.reserved.iter().map(String::as_str)
    }

    /// Registers tools for `skill` (looked up with `-` and `_` alike), or refuses them all.
    /// May be called again for the same skill to add tools.
    pub fn register(
        &mut self,
        skill: &str,
        tools: impl IntoIterator<Item = Arc<dyn ModuleTool>>,
    ) -> Result<(), ToolError> {
        let key = name_key(skill);
        let existing = self.skills.get(&key).map(|(_, t)| t.as_slice());
        let mut fresh: Vec<Registered> = Vec::new();
        for tool in tools {
            let name = tool.name().to_string();
            if !is_provider_safe_name(&name) {
                return Err(ToolError::InvalidName {
                    tool: name,
                    skill: skill.to_string(),
                });
            }
            if in_script_namespace(&name) {
                return Err(ToolError::ScriptNamespace {
                    tool: name,
                    skill: skill.to_string(),
                });
            }
            let parameters = tool.parameters();
            if let Err(reason) = check_object_schema(&parameters) {
                return Err(ToolError::InvalidSchema {
                    tool: name,
                    skill: skill.to_string(),
                    reason,
                });
            }
            let same_skill = existing.unwrap_or_default().iter().chain(&fresh);
            if same_skill.into_iter().any(|r| r.name == name) {
                return Err(ToolError::Duplicate {
                    tool: name,
                    skill: skill.to_string(),
                });
            }
            if self.reserved.contains(&name) {
                return Err(ToolError::Collision {
                    tool: name,
                    skill: skill.to_string(),
                    taken_by: "a reserved host tool".to_string(),
                });
            }
            if let Some(owner) = self.owner(&name) {
                return Err(ToolError::Collision {
                    taken_by: format!("a module tool of skill '{owner}'"),
                    tool: name,
                    skill: skill.to_string(),
                });
            }
            fresh.push(Registered {
                description: tool.description().to_string(),
                name,
                parameters,
                tool,
            });
        }
        self.skills
            .entry(key)
            .or_insert_with(|| (skill.to_string(), Vec::new()))
            .1
            .extend(fresh);
        Ok(())
    }

    /// The skill whose module tool has this name.
    fn owner(&self, name: &str) -> Option<&str> {
        self.skills
            .values()
            .find(|(_, tools)| tools.iter().any(|r| r.name == name))
            .map(|(s, _)| s.as_str())
    }

    /// The tool names registered for a skill (`-` and `_` alike), in registration order.
    pub fn names_of(&self, skill: &str) -> Vec<&str> {
        self.skills
            .get(&name_key(skill))
            .map(|(_, t)| t.iter().map(|r| r.name.as_str()).collect())
            .unwrap_or_default()
    }

    /// Every skill that has module tools, as named at registration.
    pub fn skills(&self) -> impl Iterator<Item = &str> {
        self.skills.values().map(|(s, _)| s.as_str())
    }

    /// The wrapped tools of the skill `provenance` names: what a model may be offered.
    pub fn wrap(
        &self,
        provenance: &Provenance,
        gate: Arc<dyn Gate>,
        timeout: Duration,
    ) -> Vec<WrappedTool> {
        let Some((_, tools)) = self.skills.get(&name_key(&provenance.skill)) else {
            return Vec::new();
        };
        tools
            .iter()
            .map(|r| WrappedTool {
                spec: ToolSpec {
                    name: r.name.clone(),
                    description: r.description.clone(),
                    parameters: r.parameters.clone(),
                    kind: ToolKind::Module,
                    provenance: provenance.clone(),
                    trusted: false,
                },
                tool: r.tool.clone(),
                gate: gate.clone(),
                timeout,
            })
            .collect()
    }
}

fn check_object_schema(schema: &Json) -> Result<(), String> {
    match schema {
        Json::Object(m) => match m.get("type") {
            Some(Json::String(t)) if t == "object" => Ok(()),
            Some(other) => Err(format!("\"type\" is {other}, not \"object\"")),
            None => Err("no \"type\": \"object\"".to_string()),
        },
        other => Err(format!("a JSON {}, not an object", json_kind(other))),
    }
}

/// A module tool as skillcat offers it: a copy of its declaration with provenance, and a call
/// that runs the gate first, catches errors and panics, bounds the time, checks the response and
/// marks it untrusted. The host's tool object itself is never handed out.
#[derive(Clone)]
pub struct WrappedTool {
    spec: ToolSpec,
    tool: Arc<dyn ModuleTool>,
    gate: Arc<dyn Gate>,
    timeout: Duration,
}

impl std::fmt::Debug for WrappedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrappedTool")
            .field("spec", &self.spec)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl WrappedTool {
    /// What a model is offered (`trusted` is `false`).
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Calls the tool: arguments must be a JSON object (`null` counts as `{}`); then the gate,
    /// then the tool under `catch_unwind` and the timeout, then the response check.
    pub async fn call(&self, args: &Json) -> Result<ToolOutput, ToolError> {
        let tool = &self.spec.name;
        let args = match args {
            Json::Null => Json::Object(Default::default()),
            Json::Object(_) => args.clone(),
            other => {
                return Err(ToolFailure::new(
                    ToolKind::Module,
                    tool,
                    FailureKind::InvalidArgs {
                        reason: format!("expected a JSON object, got a JSON {}", json_kind(other)),
                    },
                )
                .into());
            }
        };
        let request = GateRequest {
            skill: &self.spec.provenance.skill,
            tool,
            kind: GateKind::Module {
                provenance: &self.spec.provenance,
                args: &args,
            },
        };
        ask(&*self.gate, &request)
            .await
            .map_err(|r| r.into_failure(ToolKind::Module, tool))?;

        let failed = |reason: String, panicked: bool| ToolError::Failed {
            tool: tool.clone(),
            reason,
            panicked,
        };
        // A tool may panic while making its future as well as while it runs.
        let future = std::panic::catch_unwind(AssertUnwindSafe(|| self.tool.call(args)))
            .map_err(|p| failed(panic_message(&*p), true))?;
        let answer = tokio::time::timeout(self.timeout, AssertUnwindSafe(future).catch_unwind())
            .await
            .map_err(|_| {
                ToolFailure::new(
                    ToolKind::Module,
                    tool,
                    FailureKind::Timeout {
                        after: self.timeout,
                    },
                )
            })?;
        let response = match answer {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(failed(e.to_string(), false)),
            Err(panic) => return Err(failed(panic_message(&*panic), true)),
        };
        let content = response.check().map_err(|e| ToolError::BadResponse {
            tool: tool.clone(),
            reason: e.to_string(),
        })?;
        Ok(ToolOutput {
            tool: tool.clone(),
            kind: ToolKind::Module,
            content,
            trusted: false,
            provenance: self.spec.provenance.clone(),
            script: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types() {
        for ok in ["image/png", "application/vnd.api+json", "text/x-c"] {
            assert!(is_mime_type(ok), "{ok}");
        }
        for bad in [
            "",
            "image",
            "/png",
            "image/",
            "image/png; q=1",
            "a/b/c",
            "-x/y",
        ] {
            assert!(!is_mime_type(bad), "{bad}");
        }
    }

    #[test]
    fn responses_are_checked() {
        assert_eq!(
            ModuleResponse::from("hi").check(),
            Ok(Content::Text("hi".into()))
        );
        assert!(ModuleResponse::Other(Json::Null).check().is_err());
        assert!(
            ModuleResponse::Media {
                mime: "png".into(),
                data: vec![1]
            }
            .check()
            .is_err()
        );
    }

    #[test]
    fn object_schemas() {
        assert!(check_object_schema(&serde_json::json!({"type": "object"})).is_ok());
        assert!(check_object_schema(&serde_json::json!({"type": "string"})).is_err());
        assert!(check_object_schema(&serde_json::json!({})).is_err());
        assert!(check_object_schema(&serde_json::json!([])).is_err());
    }
}
