//! What a model sees of a tool ([`ToolSpec`]) and what a call gives back ([`ToolOutput`]), the
//! same for script tools and host module tools.

use serde_json::{Value as Json, json};

use crate::script::{Provenance, ScriptOutput};
use crate::tool::ToolKind;

/// A tool as a model is offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name a model calls (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub parameters: Json,
    /// Script or module tool.
    pub kind: ToolKind,
    /// The skill that provides it.
    pub provenance: Provenance,
    /// Always `false`: what a skill's tool returns is data, never instructions, whatever the
    /// tool claims.
    pub trusted: bool,
}

impl ToolSpec {
    /// The function declaration most model APIs take: `{"name", "description", "parameters"}`.
    pub fn to_function_json(&self) -> Json {
        json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        })
    }
}

/// A checked tool result: text, bytes, or media of a MIME type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text.
    Text(String),
    /// Opaque bytes.
    Bytes(Vec<u8>),
    /// Media (an image, audio, …) of a `type/subtype` MIME type.
    Media {
        /// The MIME type, `type/subtype`.
        mime: String,
        /// The bytes.
        data: Vec<u8>,
    },
}

impl Content {
    /// The text, when it is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The text a model reads: the text itself, or a placeholder naming the size (and MIME
    /// type) for binary content, which a host passes to its provider in the provider's format.
    pub fn to_model_text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Bytes(b) => format!("[{} bytes]", b.len()),
            Content::Media { mime, data } => format!("[{mime}, {} bytes]", data.len()),
        }
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The tool that ran.
    pub tool: String,
    /// Script or module tool.
    pub kind: ToolKind,
    /// What it gave (a script's model text, or a module tool's checked response).
    pub content: Content,
    /// Always `false` (see [`ToolSpec::trusted`]).
    pub trusted: bool,
    /// The skill that provides the tool.
    pub provenance: Provenance,
    /// A script tool's full result (exit status, confinement, duration).
    pub script: Option<ScriptOutput>,
}

impl ToolOutput {
    /// The text a model reads (see [`Content::to_model_text`]).
    pub fn to_model_text(&self) -> String {
        self.content.to_model_text()
    }
}
