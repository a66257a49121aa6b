//! Guest tools as a skill declares them, under `metadata:` (text to text, so the skill stays
//! valid for the reference validator), and the checks of a call's arguments.
//!
//! ```yaml
//! metadata:
//!   skillcat.guest_tools: "score_lead lookup_discount"
//!   skillcat.guest.score_lead.source: tools/score.js
//!   skillcat.guest.score_lead.description: "Score a sales lead from 0 to 100"
//!   skillcat.guest.score_lead.params: "company:string employees:number tier:gold|silver|bronze? verified:boolean?"
//!   skillcat.guest.score_lead.param.tier: "The customer's tier, when known"
//!   skillcat.guest.lookup_discount.globals: "readSkillFile"
//! ```
//!
//! `params` is one text: parameters separated by blanks, each `name:type`, `?` after the type
//! for an optional one; a type is `string`, `number`, `integer`, `boolean`, or an enum of
//! strings written `a|b|c`. `globals` names the host functions the tool may call (each must be
//! one the host provides). Every fault of a declaration is a
//! [`GuestError::InvalidDeclaration`] and the tool is not offered; other tools of the skill are.

use serde_json::{Map as JsonMap, Value as Json, json};

use super::error::GuestError;
use crate::document::{Map, Value};
use crate::script::argv::{check_skill_path, is_tool_name};
use crate::tool::names::in_script_namespace;

/// The metadata key listing a skill's guest tools.
pub const TOOLS_KEY: &str = "skillcat.guest_tools";

/// The prefix of a guest tool's own metadata keys: `skillcat.guest.<tool>.<field>`.
pub const TOOL_PREFIX: &str = "skillcat.guest.";

/// The argument every guest tool takes besides its parameters.
pub const TIMEOUT_PARAM: &str = "timeout_seconds";

/// The type of a guest tool's parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestType {
    /// A JSON string.
    String,
    /// Any JSON number.
    Number,
    /// A JSON integer.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// One of these strings.
    Enum(Vec<String>),
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestParam {
    /// Its name (`^[A-Za-z_][A-Za-z0-9_]*$`, not `timeout_seconds`).
    pub name: String,
    /// Its type.
    pub ty: GuestType,
    /// Whether a call must give it.
    pub required: bool,
    /// What it means, for the model (may be empty).
    pub description: String,
}

/// A guest tool as declared: everything but its source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestDecl {
    /// The name a model calls.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The source file, relative to the skill (`tools/score.js`).
    pub source: String,
    /// Its parameters, in declaration order.
    pub params: Vec<GuestParam>,
    /// The host functions it may call.
    pub globals: Vec<String>,
}

/// The guest tools a frontmatter declares: each one, or why it is not acceptable. Empty when
/// the skill declares none.
pub fn declarations(frontmatter: &Map) -> Vec<Result<GuestDecl, GuestError>> {
    let Some(metadata) = frontmatter.get("metadata").and_then(Value::as_map) else {
        return Vec::new();
    };
    let text = |key: &str| metadata.get(key).and_then(Value::as_str);
    let mut out = Vec::new();
    let Some(names) = text(TOOLS_KEY) else {
        if metadata.keys().any(|k| k.starts_with(TOOL_PREFIX)) {
            out.push(Err(GuestError::InvalidDeclaration {
                tool: TOOLS_KEY.into(),
                reason: format!("guest tool keys are given but {TOOLS_KEY} is missing"),
            }));
        }
        return out;
    };
    let listed: Vec<&str> = names.split_whitespace().collect();
    for key in metadata.keys() {
        if let Some(rest) = key.strip_prefix(TOOL_PREFIX) {
            let tool = rest.split('.').next().unwrap_or_default();
            if !listed.contains(&tool) {
                out.push(Err(GuestError::InvalidDeclaration {
                    tool: key.to_string(),
                    reason: format!("'{tool}' is not listed in {TOOLS_KEY}"),
                }));
            }
        }
    }
    for (i, name) in listed.iter().enumerate() {
        if listed[..i].contains(name) {
            out.push(Err(GuestError::InvalidDeclaration {
                tool: name.to_string(),
                reason: format!("listed twice in {TOOLS_KEY}"),
            }));
            continue;
        }
        out.push(declaration(name, &|field| {
            text(&format!("{TOOL_PREFIX}{name}.{field}"))
        }));
    }
    out
}

fn declaration<'a>(
    name: &str,
    field: &dyn Fn(&str) -> Option<&'a str>,
) -> Result<GuestDecl, GuestError> {
    let bad = |reason: String| GuestError::InvalidDeclaration {
        tool: name.to_string(),
        reason,
    };
    if !is_tool_name(name) || name.len() > 64 {
        return Err(bad("a tool name must match ^[a-zA-Z0-9_-]{1,64}$".into()));
    }
    if in_script_namespace(name) {
        return Err(bad(
            "the name starts with 'run_' (case and '-'/'_' aside), which belongs to script tools \
             (run_<skill>_<script>); a guest tool cannot take it"
                .into(),
        ));
    }
    let source =
        field("source").ok_or_else(|| bad(format!("{TOOL_PREFIX}{name}.source is missing")))?;
    let source = check_skill_path(source).map_err(|e| bad(format!("source: {e}")))?;
    let description = field("description")
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| bad(format!("{TOOL_PREFIX}{name}.description is missing")))?
        .to_string();
    let mut params: Vec<GuestParam> = Vec::new();
    for item in field("params").unwrap_or_default().split_whitespace() {
        let param = parse_param(item).map_err(|r| bad(format!("parameter '{item}': {r}")))?;
        if params.iter().any(|p| p.name == param.name) {
            return Err(bad(format!("parameter '{}' declared twice", param.name)));
        }
        params.push(param);
    }
    for p in &mut params {
        if let Some(d) = field(&format!("param.{}", p.name)) {
            p.description = d.trim().to_string();
        }
    }
    let mut globals: Vec<String> = Vec::new();
    for g in field("globals").unwrap_or_default().split_whitespace() {
        if !is_js_name(g) {
            return Err(bad(format!("global '{g}' is not a JavaScript identifier")));
        }
        if !globals.iter().any(|x| x == g) {
            globals.push(g.to_string());
        }
    }
    Ok(GuestDecl {
        name: name.to_string(),
        description,
        source,
        params,
        globals,
    })
}

fn parse_param(item: &str) -> Result<GuestParam, String> {
    let (name, ty) = item
        .split_once(':')
        .ok_or("write it name:type (string, number, integer, boolean or a|b|c)")?;
    let (ty, required) = match ty.strip_suffix('?') {
        Some(t) => (t, false),
        None => (ty, true),
    };
    if !is_js_name(name) {
        return Err("a parameter name must match ^[A-Za-z_][A-Za-z0-9_]*$".into());
    }
    if name == TIMEOUT_PARAM {
        return Err(format!(
            "'{TIMEOUT_PARAM}' is every guest tool's own argument"
        ));
    }
    let ty = match ty {
        "string" => GuestType::String,
        "number" => GuestType::Number,
        "integer" => GuestType::Integer,
        "boolean" => GuestType::Boolean,
        t if t.contains('|') => {
            let values: Vec<String> = t.split('|').map(str::to_string).collect();
            if values.iter().any(String::is_empty) {
                return Err("an enum value is empty".into());
            }
            GuestType::Enum(values)
        }
        t => return Err(format!("unknown type '{t}'")),
    };
    Ok(GuestParam {
        name: name.to_string(),
        ty,
        required,
        description: String::new(),
    })
}

/// `^[A-Za-z_$][A-Za-z0-9_$]*$`.
pub(crate) fn is_js_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_' || c == b'$')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
}

impl GuestDecl {
    /// The tool's input schema: its parameters and `timeout_seconds` (an integer from 1 to
    /// `max_timeout`, `default_timeout` when not given); no other key is accepted.
    pub fn schema(&self, default_timeout: u64, max_timeout: u64) -> Json {
        let mut props = JsonMap::new();
        let mut required = Vec::new();
        for p in &self.params {
            let mut s = match &p.ty {
                GuestType::String => json!({"type": "string"}),
                GuestType::Number => json!({"type": "number"}),
                GuestType::Integer => json!({"type": "integer"}),
                GuestType::Boolean => json!({"type": "boolean"}),
                GuestType::Enum(v) => json!({"type": "string", "enum": v}),
            };
            if !p.description.is_empty() {
                s["description"] = json!(p.description);
            }
            props.insert(p.name.clone(), s);
            if p.required {
                required.push(p.name.clone());
            }
        }
        props.insert(
            TIMEOUT_PARAM.into(),
            json!({
                "type": "integer",
                "minimum": 1,
                "maximum": max_timeout,
                "default": default_timeout,
                "description": "How long the evaluation may take, in seconds",
            }),
        );
        json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        })
    }

    /// Checks a call's arguments against the declaration, before anything runs: an object, no
    /// unknown key, every required parameter, each of its type, `timeout_seconds` an integer
    /// from 1 to `max_timeout`. Returns the arguments the guest gets (without
    /// `timeout_seconds`) and the timeout in seconds.
    pub fn check_args(
        &self,
        args: &Json,
        default_timeout: u64,
        max_timeout: u64,
    ) -> Result<(Json, u64), String> {
        let obj = match args {
            Json::Object(o) => o,
            Json::Null => &JsonMap::new(),
            other => return Err(format!("expected a JSON object, got {other}")),
        };
        let mut out = JsonMap::new();
        let mut timeout = default_timeout;
        for (k, v) in obj {
            if k == TIMEOUT_PARAM {
                timeout = v
                    .as_u64()
                    .filter(|t| (1..=max_timeout).contains(t))
                    .ok_or_else(|| {
                        format!("{TIMEOUT_PARAM} must be an integer from 1 to {max_timeout}")
                    })?;
                continue;
            }
            let p = self
                .params
                .iter()
                .find(|p| &p.name == k)
                .ok_or_else(|| format!("unknown argument '{k}'"))?;
            let ok = match &p.ty {
                GuestType::String => v.is_string(),
                GuestType::Number => v.is_number(),
                GuestType::Integer => v.is_i64() || v.is_u64(),
                GuestType::Boolean => v.is_boolean(),
                GuestType::Enum(values) => {
                    v.as_str().is_some_and(|s| values.iter().any(|x| x == s))
                }
            };
            if !ok {
                return Err(match &p.ty {
                    GuestType::Enum(values) => {
                        format!("'{k}' must be one of {}", values.join(", "))
                    }
                    GuestType::String => format!("'{k}' must be a string"),
                    GuestType::Number => format!("'{k}' must be a number"),
                    GuestType::Integer => format!("'{k}' must be an integer"),
                    GuestType::Boolean => format!("'{k}' must be true or false"),
                });
            }
            out.insert(k.clone(), v.clone());
        }
        if let Some(p) = self
            .params
            .iter()
            .find(|p| p.required && !obj.contains_key(&p.name))
        {
            return Err(format!("missing required argument '{}'", p.name));
        }
        Ok((Json::Object(out), timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(pairs: &[(&str, &str)]) -> Map {
        let mut meta = Map::new();
        for (k, v) in pairs {
            meta.insert(k.to_string(), Value::Text(v.to_string()));
        }
        let mut m = Map::new();
        m.insert("metadata".into(), Value::Map(meta));
        m
    }

    fn one(pairs: &[(&str, &str)]) -> Result<GuestDecl, GuestError> {
        let mut all = declarations(&fm(pairs));
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    #[test]
    fn a_full_declaration() {
        let d = one(&[
            (TOOLS_KEY, "score"),
            ("skillcat.guest.score.source", "./tools/score.js"),
            ("skillcat.guest.score.description", "Score it"),
            (
                "skillcat.guest.score.params",
                "name:string n:number? k:integer tier:a|b? ok:boolean",
            ),
            ("skillcat.guest.score.param.n", "How many"),
            (
                "skillcat.guest.score.globals",
                "lookup lookup readSkillFile",
            ),
        ])
        .unwrap();
        assert_eq!(d.source, "tools/score.js");
        assert_eq!(d.globals, ["lookup", "readSkillFile"]);
        assert_eq!(d.params[1].description, "How many");
        assert!(!d.params[3].required);
        assert_eq!(
            d.params[3].ty,
            GuestType::Enum(vec!["a".into(), "b".into()])
        );
        let s = d.schema(10, 60);
        assert_eq!(s["required"], json!(["name", "k", "ok"]));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["properties"]["timeout_seconds"]["maximum"], json!(60));
    }

    #[test]
    fn faults_are_each_reported() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[(TOOLS_KEY, "t")], "source is missing"),
            (
                &[(TOOLS_KEY, "t"), ("skillcat.guest.t.source", "../x.js")],
                "climbs out",
            ),
            (
                &[(TOOLS_KEY, "t"), ("skillcat.guest.t.source", "x.js")],
                "description is missing",
            ),
            (
                &[
                    (TOOLS_KEY, "t"),
                    ("skillcat.guest.t.source", "x.js"),
                    ("skillcat.guest.t.description", "d"),
                    ("skillcat.guest.t.params", "a:date"),
                ],
                "unknown type 'date'",
            ),
            (
                &[
                    (TOOLS_KEY, "t"),
                    ("skillcat.guest.t.source", "x.js"),
                    ("skillcat.guest.t.description", "d"),
                    ("skillcat.guest.t.params", "timeout_seconds:number"),
                ],
                "own argument",
            ),
            (&[(TOOLS_KEY, "a.b")], "tool name"),
            (
                &[(TOOLS_KEY, "Run-victim-deploy")],
                "belongs to script tools",
            ),
            (&[("skillcat.guest.t.source", "x.js")], "is missing"),
        ];
        for (pairs, want) in cases {
            let got = declarations(&fm(pairs));
            let e = got.iter().find_map(|r| r.as_ref().err()).expect("a fault");
            assert_eq!(e.code(), "E_SKILL_GUEST_INVALID_DECLARATION");
            assert!(e.to_string().contains(want), "{e} should say {want}");
        }
    }

    #[test]
    fn arguments_are_checked_before_anything_runs() {
        let d = one(&[
            (TOOLS_KEY, "t"),
            ("skillcat.guest.t.source", "x.js"),
            ("skillcat.guest.t.description", "d"),
            ("skillcat.guest.t.params", "s:string e:x|y? n:number?"),
        ])
        .unwrap();
        let (args, t) = d
            .check_args(&json!({"s": "a", "timeout_seconds": 3}), 10, 60)
            .unwrap();
        assert_eq!((args, t), (json!({"s": "a"}), 3));
        for (bad, want) in [
            (json!({"s": "a", "x": 1}), "unknown argument 'x'"),
            (json!({}), "missing required argument 's'"),
            (json!({"s": 1}), "'s' must be a string"),
            (json!({"s": "a", "e": "z"}), "'e' must be one of x, y"),
            (json!({"s": "a", "timeout_seconds": 61}), "from 1 to 60"),
            (json!({"s": "a", "timeout_seconds": 0}), "from 1 to 60"),
            (json!([1]), "expected a JSON object"),
        ] {
            let e = d.check_args(&bad, 10, 60).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
