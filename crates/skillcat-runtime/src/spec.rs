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

    /// Fits what a model reads of this call within `cap` bytes, whatever the tool's kind: a
    /// script's output gives way to the host's lines after it (network report, exit status,
    /// notes), which are kept; a guest's outcome keeps its form (valid JSON: the last log
    /// entries dropped and `logsCapped` set, then the result cut to a string and
    /// `resultCapped` set); any other text is cut, and says so. [`Run::call`] applies it to
    /// every call: the one output budget.
    ///
    /// [`Run::call`]: crate::Run::call
    pub fn fit(&mut self, cap: usize) {
        if let Some(script) = &mut self.script {
            script.fit(cap);
            self.content = Content::Text(script.to_model_text());
            return;
        }
        if let Content::Text(t) = &mut self.content
            && t.len() > cap
        {
            let fitted = match self.kind {
                ToolKind::Guest => fit_outcome(t, cap),
                _ => None,
            };
            *t = fitted.unwrap_or_else(|| cut(t, cap));
        }
    }
}

/// `text` cut at a character so that it and a note saying so take at most `cap` bytes.
pub(crate) fn cut(text: &str, cap: usize) -> String {
    let note = |kept: usize| {
        format!(
            "\n[answer cut at the output cap: kept {kept} of {} bytes]",
            text.len()
        )
    };
    // (A cap smaller than the note: the text alone, cut.)
    let room = cap.checked_sub(note(cap).len());
    let mut end = room.unwrap_or(cap).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = text[..end].to_string();
    if room.is_some() {
        out.push_str(&note(end));
    }
    out
}

/// A guest outcome object (`{"ok":true,"result":…,"logs":[…],…}`) in at most `cap` bytes of
/// JSON: log entries kept from the first while they fit, then the result as the start of its
/// JSON text when it alone does not. `None`: not an outcome, or no form fits.
fn fit_outcome(text: &str, cap: usize) -> Option<String> {
    let mut outcome: serde_json::Map<String, Json> = serde_json::from_str(text).ok()?;
    if outcome.get("ok") != Some(&Json::Bool(true)) {
        // A thrown outcome is a message the host already cut.
        return None;
    }
    let Some(Json::Array(logs)) = outcome.insert("logs".into(), Json::Array(Vec::new())) else {
        return None;
    };
    // (Set now: its room is counted, and it is true unless every entry fits.)
    let capped_before = outcome.insert("logsCapped".into(), Json::Bool(true));
    let mut base = serde_json::to_string(&outcome).ok()?.len();
    if base > cap {
        // The result alone is too large: the start of its JSON, as a string.
        let result = serde_json::to_string(outcome.get("result")?).ok()?;
        outcome.insert("resultCapped".into(), Json::Bool(true));
        outcome.insert("result".into(), Json::String(String::new()));
        let room = cap.checked_sub(serde_json::to_string(&outcome).ok()?.len())?;
        // Escaping can make one byte six (`\u0000`): a sixth of the room always fits.
        let mut end = (room / 6).min(result.len());
        while !result.is_char_boundary(end) {
            end -= 1;
        }
        outcome.insert("result".into(), Json::String(result[..end].to_string()));
        base = serde_json::to_string(&outcome).ok()?.len();
    }
    let total = logs.len();
    let mut kept = Vec::new();
    let mut size = base;
    for entry in logs {
        let n = serde_json::to_string(&entry).ok()?.len() + usize::from(!kept.is_empty());
        if size + n > cap {
            break;
        }
        size += n;
        kept.push(entry);
    }
    if kept.len() == total {
        outcome.insert(
            "logsCapped".into(),
            capped_before.unwrap_or(Json::Bool(false)),
        );
    }
    outcome.insert("logs".into(), Json::Array(kept));
    let out = serde_json::to_string(&outcome).ok()?;
    (out.len() <= cap).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(kind: ToolKind, text: String) -> ToolOutput {
        ToolOutput {
            tool: "t".into(),
            kind,
            content: Content::Text(text),
            trusted: false,
            provenance: Provenance {
                skill: "s".into(),
                version: None,
                source: "src".into(),
            },
            script: None,
        }
    }

    fn fitted(kind: ToolKind, text: String, cap: usize) -> String {
        let mut o = output(kind, text);
        o.fit(cap);
        let t = o.to_model_text();
        assert!(t.len() <= cap, "{} > {cap}", t.len());
        t
    }

    /// Each answer past the cap ends within it, in a form the model can still read.
    #[test]
    fn every_kind_fits_the_budget() {
        let cap = 4096;
        // Short text is left as it is.
        assert_eq!(fitted(ToolKind::Module, "ok".into(), cap), "ok");
        // Long text is cut at a character, and says so.
        let t = fitted(ToolKind::Module, "é".repeat(10_000), cap);
        assert!(
            t.ends_with("[answer cut at the output cap: kept 4038 of 20000 bytes]"),
            "{t}"
        );
        // A guest's log flood keeps its first entries and says it was capped.
        let logs: Vec<String> = (0..1000)
            .map(|i| format!("line {i} {}", "y".repeat(8000)))
            .collect();
        let flood = json!({"ok": true, "result": "flooded", "durationMs": 3, "logs": logs, "logsCapped": false});
        let t = fitted(ToolKind::Guest, flood.to_string(), 64 * 1024);
        let v: Json = serde_json::from_str(&t).unwrap();
        assert_eq!(v["result"], "flooded");
        assert_eq!(v["logsCapped"], true);
        let kept = v["logs"].as_array().unwrap();
        assert!((6..=8).contains(&kept.len()), "{}", kept.len());
        assert!(kept[0].as_str().unwrap().starts_with("line 0 "));
        // Control characters that JSON escapes six times over.
        let nul = json!({"ok": true, "result": "\u{0}".repeat(100_000), "durationMs": 1, "logs": ["\u{1}".repeat(5000)], "logsCapped": false});
        let t = fitted(ToolKind::Guest, nul.to_string(), cap);
        let v: Json = serde_json::from_str(&t).unwrap();
        assert_eq!(v["resultCapped"], true);
        assert_eq!(v["logsCapped"], true);
        assert!(v["result"].as_str().unwrap().starts_with("\"\\u0000"));
        // A thrown outcome, or text that is no outcome, is cut as text.
        let thrown = json!({"ok": false, "thrown": {"kind": "error", "message": "x".repeat(9000)}});
        let t = fitted(ToolKind::Guest, thrown.to_string(), cap);
        assert!(t.contains("[answer cut at the output cap"), "{t}");
        let t = fitted(ToolKind::Guest, "[".repeat(9000), cap);
        assert!(t.contains("[answer cut at the output cap"), "{t}");
        // A cap smaller than the note: nothing but what fits.
        assert!(fitted(ToolKind::Module, "x".repeat(100), 10).len() <= 10);
    }
}
