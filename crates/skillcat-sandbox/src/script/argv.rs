//! Pure rules of script tools: names, interpreter lines, descriptions, parameters, JSON Schemas
//! and the argv built from validated JSON arguments. No I/O; table-tested.

use serde_json::{Value as Json, json};

use super::ScriptError;

/// The longest tool name (the limit model APIs put on function names).
pub const MAX_TOOL_NAME: usize = 64;

/// Whether `s` matches `^[a-zA-Z0-9_-]+$`.
pub fn is_tool_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name part of an implicit tool from its file name: the name without its final extension,
/// every run of characters other than ASCII letters and digits turned into one `_`, trimmed of
/// `_` (`check-deploy.sh` → `check_deploy`). `None` when nothing is left.
pub fn script_name_from_file(file_name: &str) -> Option<String> {
    let stem = match file_name.rfind('.') {
        Some(0) | None => file_name,
        Some(i) => &file_name[..i],
    };
    let mut out = String::with_capacity(stem.len());
    for c in stem.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let trimmed = out.trim_matches('_');
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// `run_<skill>_<script>`, the skill name with `-` turned into `_`; refused unless it matches
/// `^[a-zA-Z0-9_-]+$` and has at most [`MAX_TOOL_NAME`] characters.
pub fn tool_name(skill: &str, script: &str) -> Result<String, ScriptError> {
    let name = format!("run_{}_{}", skill.replace('-', "_"), script);
    if !is_tool_name(&name) {
        return Err(ScriptError::invalid(format!(
            "tool name '{name}' must match ^[a-zA-Z0-9_-]+$"
        )));
    }
    if name.len() > MAX_TOOL_NAME {
        return Err(ScriptError::invalid(format!(
            "tool name '{name}' is {} characters long; the limit is {MAX_TOOL_NAME}",
            name.len()
        )));
    }
    Ok(name)
}

/// An interpreter line, read: the interpreter's name (looked up in the host allow-list) and the
/// arguments to pass it before the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shebang {
    /// The interpreter's name: the last component of the program (`/bin/sh` → `sh`), or for
    /// `/usr/bin/env` the first word that is not an option or an assignment.
    pub name: String,
    /// Arguments before the script (`#!/bin/sh -e` → `["-e"]`, Linux passes the rest of the line
    /// as one argument; `env -S` splits it).
    pub args: Vec<String>,
}

/// Reads the `#!` line at the top of a script; `None` when there is none.
pub fn parse_shebang(text: &str) -> Option<Shebang> {
    let first = text.lines().next()?.trim_end_matches('\r');
    let rest = first.strip_prefix("#!")?.trim();
    let (program, tail) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    if base.is_empty() {
        return None;
    }
    if base == "env" {
        let mut words = tail
            .split_whitespace()
            .filter(|w| *w != "-S" && !w.starts_with("-S"));
        let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        let name = name.rsplit('/').next().unwrap_or(name);
        if name.is_empty() {
            return None;
        }
        let name = name.to_string();
        let args = words.map(str::to_string).collect();
        return Some(Shebang { name, args });
    }
    let args = if tail.is_empty() {
        Vec::new()
    } else {
        vec![tail.to_string()]
    };
    Some(Shebang {
        name: base.to_string(),
        args,
    })
}

/// The description of an implicit tool: the first non-empty comment line after any interpreter
/// line, with `#` or `//` and surrounding spaces removed (a `-*- coding -*-` line is skipped).
/// Blank lines before it are skipped; at the first line of code the search stops, except that a
/// Python module docstring (`"""…` or `'''…`) there gives its first non-empty line.
pub fn description_from_source(text: &str) -> Option<String> {
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let line = line.trim_end_matches('\r').trim();
        if i == 0 && line.starts_with("#!") {
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let Some(body) = line.strip_prefix("//").or_else(|| line.strip_prefix('#')) else {
            // Code: only a docstring opening it still describes the file.
            let quote = ["\"\"\"", "'''"]
                .into_iter()
                .find(|q| line.trim_start_matches(['r', 'R']).starts_with(q))?;
            let first = line.trim_start_matches(['r', 'R'])[quote.len()..].trim();
            let first = first.split(quote).next().unwrap_or_default().trim();
            if !first.is_empty() {
                return Some(first.to_string());
            }
            return lines
                .map(|(_, l)| l.trim())
                .take_while(|l| !l.starts_with(quote))
                .find(|l| !l.is_empty())
                .map(|l| l.split(quote).next().unwrap_or_default().trim().to_string())
                .filter(|l| !l.is_empty());
        };
        let body = body.trim_start_matches(['#', '/']).trim();
        if !body.is_empty() && !body.starts_with("-*-") {
            return Some(body.to_string());
        }
    }
    None
}

/// Checks a path relative to the skill: not empty, not absolute, no `..`, no backslash or NUL,
/// and returns it canonical (`./` and empty parts dropped).
pub fn check_skill_path(path: &str) -> Result<String, ScriptError> {
    let reject = |reason: &str| ScriptError::PathRejected {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    if path.trim().is_empty() {
        return Err(reject("empty path"));
    }
    if path.starts_with('/') {
        return Err(reject("absolute paths are not allowed"));
    }
    if path.contains('\\') || path.contains('\0') || path.chars().any(char::is_control) {
        return Err(reject("backslashes and control characters are not allowed"));
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(reject("'..' climbs out of the skill")),
            p => parts.push(p),
        }
    }
    let Some(first) = parts.first() else {
        return Err(reject("names no file"));
    };
    // A drive letter or URL scheme is not a relative path either; checked on the canonical
    // form, so that what this returns is accepted again (`./c:x` is `c:x`).
    if first.contains(':') {
        return Err(reject("not a relative path"));
    }
    Ok(parts.join("/"))
}

/// The type of a declared parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A JSON string.
    String,
    /// A JSON integer.
    Integer,
    /// Any JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
}

impl ParamType {
    /// The name used in declarations and JSON Schema.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        }
    }

    /// Parses a declared type name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.trim() {
            "string" => ParamType::String,
            "integer" => ParamType::Integer,
            "number" => ParamType::Number,
            "boolean" => ParamType::Boolean,
            _ => return None,
        })
    }
}

/// How a declared parameter reaches argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A bare value, in declaration order (always required).
    Positional,
    /// `--name value`; a boolean flag is `--name`, present only when true.
    Flag,
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Its name: `^[A-Za-z][A-Za-z0-9_-]*$`; also the flag (`--name`).
    pub name: String,
    /// Its JSON type.
    pub ty: ParamType,
    /// Positional or flag.
    pub kind: ParamKind,
    /// Whether the model must give it.
    pub required: bool,
    /// What it means, for the model.
    pub description: String,
}

/// A tool's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Params {
    /// An implicit tool: one optional `args` string, split like a POSIX shell splits words.
    Implicit,
    /// A declared tool's typed parameters.
    Declared(Vec<Param>),
}

/// Checks a declared parameter list: names valid and unique, no optional positional.
pub fn check_params(params: &[Param]) -> Result<(), ScriptError> {
    let mut seen = std::collections::BTreeSet::new();
    for p in params {
        let ok = p
            .name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && is_tool_name(&p.name);
        if !ok {
            return Err(ScriptError::invalid(format!(
                "parameter name '{}' must match ^[A-Za-z][A-Za-z0-9_-]*$",
                p.name
            )));
        }
        if !seen.insert(p.name.as_str()) {
            return Err(ScriptError::invalid(format!(
                "parameter '{}' is declared twice",
                p.name
            )));
        }
        if p.kind == ParamKind::Positional && !p.required {
            return Err(ScriptError::invalid(format!(
                "positional parameter '{}' must be required (optional positionals are ambiguous)",
                p.name
            )));
        }
        if p.kind == ParamKind::Positional && p.ty == ParamType::Boolean {
            return Err(ScriptError::invalid(format!(
                "parameter '{}': a boolean must be a flag",
                p.name
            )));
        }
    }
    Ok(())
}

/// The JSON Schema of a tool's parameters:
/// `{"type":"object","properties":…,"required":[…],"additionalProperties":false}`.
pub fn schema(params: &Params) -> Json {
    match params {
        Params::Implicit => json!({
            "type": "object",
            "properties": {
                "args": {
                    "type": "string",
                    "description": "Arguments for the script, split into words like a POSIX shell does (quotes are honoured; nothing is expanded and no shell runs)."
                }
            },
            "required": [],
            "additionalProperties": false
        }),
        Params::Declared(list) => {
            let mut props = serde_json::Map::new();
            let mut required = Vec::new();
            for p in list {
                let mut prop = serde_json::Map::new();
                prop.insert("type".into(), p.ty.as_str().into());
                if !p.description.is_empty() {
                    prop.insert("description".into(), p.description.clone().into());
                }
                props.insert(p.name.clone(), Json::Object(prop));
                if p.required {
                    required.push(Json::from(p.name.clone()));
                }
            }
            json!({
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": false
            })
        }
    }
}

/// Splits an `args` string into words like a POSIX shell (quotes and backslashes honoured,
/// nothing expanded).
pub fn split_args(s: &str) -> Result<Vec<String>, ScriptError> {
    shell_words::split(s).map_err(|e| ScriptError::args(format!("args: {e}")))
}

/// The script's arguments from validated JSON: for an implicit tool the split `args`; for a
/// declared one the positionals in order, then `--flag value` per given flag (boolean flags
/// only when true). `null` or a missing object means no arguments.
pub fn build_argv(params: &Params, args: &Json) -> Result<Vec<String>, ScriptError> {
    let empty = serde_json::Map::new();
    let obj = match args {
        Json::Null => &empty,
        Json::Object(o) => o,
        other => {
            return Err(ScriptError::args(format!(
                "arguments must be a JSON object, not {}",
                json_kind(other)
            )));
        }
    };
    match params {
        Params::Implicit => {
            if let Some(k) = obj.keys().find(|k| *k != "args") {
                return Err(ScriptError::args(format!(
                    "unknown parameter '{k}' (this tool takes one optional 'args' string)"
                )));
            }
            match obj.get("args") {
                None | Some(Json::Null) => Ok(Vec::new()),
                Some(Json::String(s)) => split_args(s),
                Some(other) => Err(ScriptError::args(format!(
                    "'args' must be a string, not {}",
                    json_kind(other)
                ))),
            }
        }
        Params::Declared(list) => {
            if let Some(k) = obj.keys().find(|k| !list.iter().any(|p| &p.name == *k)) {
                return Err(ScriptError::args(format!("unknown parameter '{k}'")));
            }
            let mut positional = Vec::new();
            let mut flags = Vec::new();
            for p in list {
                let value = match obj.get(&p.name) {
                    None | Some(Json::Null) if p.required => {
                        return Err(ScriptError::args(format!(
                            "missing required parameter '{}'",
                            p.name
                        )));
                    }
                    None | Some(Json::Null) => continue,
                    Some(v) => v,
                };
                let text = typed_value(p, value)?;
                match (p.kind, p.ty) {
                    (ParamKind::Positional, _) => positional.push(text),
                    (ParamKind::Flag, ParamType::Boolean) => {
                        if value == &Json::Bool(true) {
                            flags.push(format!("--{}", p.name));
                        }
                    }
                    (ParamKind::Flag, _) => {
                        flags.push(format!("--{}", p.name));
                        flags.push(text);
                    }
                }
            }
            positional.extend(flags);
            Ok(positional)
        }
    }
}

fn typed_value(p: &Param, v: &Json) -> Result<String, ScriptError> {
    let wrong = || {
        ScriptError::args(format!(
            "parameter '{}' must be {} {}, not {}",
            p.name,
            if p.ty == ParamType::Integer {
                "an"
            } else {
                "a"
            },
            p.ty.as_str(),
            json_kind(v)
        ))
    };
    match (p.ty, v) {
        (ParamType::String, Json::String(s)) => {
            if s.contains('\0') {
                return Err(ScriptError::args(format!(
                    "parameter '{}' contains a NUL character",
                    p.name
                )));
            }
            Ok(s.clone())
        }
        (ParamType::Integer, Json::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        (ParamType::Integer, Json::Number(n)) => match n.as_f64() {
            // 3.0 is an integer in JSON Schema's sense.
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(format!("{}", f as i64)),
            _ => Err(wrong()),
        },
        (ParamType::Number, Json::Number(n)) => Ok(n.to_string()),
        (ParamType::Boolean, Json::Bool(b)) => Ok(b.to_string()),
        _ => Err(wrong()),
    }
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_files() {
        for (file, want) in [
            ("check-deploy.sh", Some("check_deploy")),
            ("csv_profile.py", Some("csv_profile")),
            ("a..b--c.tar.gz", Some("a_b_c_tar")),
            ("run", Some("run")),
            ("-x-.sh", Some("x")),
            ("---.sh", None),
            (".hidden", Some("hidden")),
            ("naïve.sh", Some("na_ve")),
        ] {
            assert_eq!(script_name_from_file(file).as_deref(), want, "{file}");
        }
    }

    #[test]
    fn tool_names() {
        assert_eq!(
            tool_name("log-search", "level_counts").unwrap(),
            "run_log_search_level_counts"
        );
        assert_eq!(tool_name("a", &"x".repeat(58)).unwrap().len(), 64);
        assert_eq!(
            tool_name("a", &"x".repeat(59)).unwrap_err().code(),
            "E_SKILL_SCRIPT_INVALID"
        );
        assert!(tool_name("bad name", "x").is_err());
        assert!(tool_name("ünï", "x").is_err());
    }

    #[test]
    fn shebangs() {
        let sb = |s: &str| parse_shebang(s).map(|b| (b.name, b.args));
        assert_eq!(sb("#!/bin/sh\necho"), Some(("sh".into(), vec![])));
        assert_eq!(
            sb("#!/bin/bash -eu\n"),
            Some(("bash".into(), vec!["-eu".into()]))
        );
        assert_eq!(
            sb("#! /usr/bin/env python3\r\n"),
            Some(("python3".into(), vec![]))
        );
        assert_eq!(
            sb("#!/usr/bin/env -S python3 -u\n"),
            Some(("python3".into(), vec!["-u".into()]))
        );
        assert_eq!(
            sb("#!/usr/bin/env A=1 node\n"),
            Some(("node".into(), vec![]))
        );
        assert_eq!(sb("#!/usr/bin/env\n"), None);
        assert_eq!(sb("echo hi\n"), None);
        assert_eq!(sb(""), None);
        assert_eq!(sb("#!\n"), None);
    }

    #[test]
    fn descriptions() {
        let d = |s: &str| description_from_source(s);
        assert_eq!(
            d("#!/bin/sh\n# Count lines.\necho"),
            Some("Count lines.".into())
        );
        assert_eq!(d("#!/bin/sh\n\n#\n## Title\n"), Some("Title".into()));
        assert_eq!(d("// a js tool\n"), Some("a js tool".into()));
        assert_eq!(d("#!/bin/sh\necho hi\n# late\n"), None);
        assert_eq!(d("#!/bin/sh\n"), None);
        // Python module docstrings.
        assert_eq!(
            d("\"\"\"Accept all tracked changes.\n\nMore.\n\"\"\"\nimport sys\n"),
            Some("Accept all tracked changes.".into())
        );
        assert_eq!(
            d(
                "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n\"\"\"\nExtract form structure.\n\"\"\"\n"
            ),
            Some("Extract form structure.".into())
        );
        assert_eq!(d("r'''One line.'''\nx = 1\n"), Some("One line.".into()));
        assert_eq!(d("\"\"\"\n\n\"\"\"\nimport sys\n"), None);
        assert_eq!(d("import sys\n\"\"\"Late.\"\"\"\n"), None);
    }

    #[test]
    fn skill_paths() {
        assert_eq!(check_skill_path("scripts/a.sh").unwrap(), "scripts/a.sh");
        assert_eq!(check_skill_path("./scripts//a.sh").unwrap(), "scripts/a.sh");
        for bad in [
            "/etc/passwd",
            "../x",
            "scripts/../../x",
            "scripts/../x",
            "",
            ".",
            "a\\b",
            "C:/x",
        ] {
            let e = check_skill_path(bad).unwrap_err();
            assert_eq!(e.code(), "E_SKILL_SOURCE_PATH_REJECTED", "{bad}");
        }
    }

    fn p(name: &str, ty: ParamType, kind: ParamKind, required: bool) -> Param {
        Param {
            name: name.into(),
            ty,
            kind,
            required,
            description: String::new(),
        }
    }

    #[test]
    fn implicit_args_split_like_a_shell() {
        let argv = build_argv(
            &Params::Implicit,
            &json!({"args": "a 'b c' \"d e\" f\\ g $HOME"}),
        )
        .unwrap();
        assert_eq!(argv, ["a", "b c", "d e", "f g", "$HOME"]);
        assert!(
            build_argv(&Params::Implicit, &json!({}))
                .unwrap()
                .is_empty()
        );
        assert!(
            build_argv(&Params::Implicit, &Json::Null)
                .unwrap()
                .is_empty()
        );
        for bad in [
            json!({"args": 1}),
            json!({"x": "y"}),
            json!([1]),
            json!({"args": "'open"}),
        ] {
            assert_eq!(
                build_argv(&Params::Implicit, &bad).unwrap_err().code(),
                "E_SKILL_SCRIPT_INVALID_ARGS",
                "{bad}"
            );
        }
    }

    #[test]
    fn declared_argv_order_and_types() {
        use ParamKind::*;
        use ParamType::*;
        let params = Params::Declared(vec![
            p("verbose", Boolean, Flag, false),
            p("env", String, Positional, true),
            p("count", Integer, Flag, false),
            p("ratio", Number, Flag, false),
            p("dry-run", Boolean, Flag, false),
            p("id", Integer, Positional, true),
        ]);
        let argv = build_argv(
            &params,
            &json!({"env": "prod", "id": 7, "verbose": true, "dry-run": false, "count": 3.0, "ratio": 0.5}),
        )
        .unwrap();
        assert_eq!(
            argv,
            ["prod", "7", "--verbose", "--count", "3", "--ratio", "0.5"]
        );
        for (bad, want) in [
            (json!({"env": "prod"}), "missing required parameter 'id'"),
            (
                json!({"env": 1, "id": 1}),
                "parameter 'env' must be a string, not a number",
            ),
            (
                json!({"env": "a", "id": "1"}),
                "parameter 'id' must be an integer, not a string",
            ),
            (
                json!({"env": "a", "id": 1.5}),
                "parameter 'id' must be an integer, not a number",
            ),
            (
                json!({"env": "a", "id": 1, "verbose": "yes"}),
                "must be a boolean",
            ),
            (
                json!({"env": "a", "id": 1, "nope": 1}),
                "unknown parameter 'nope'",
            ),
        ] {
            let e = build_argv(&params, &bad).unwrap_err();
            assert!(e.to_string().contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn params_checked() {
        use ParamKind::*;
        use ParamType::*;
        assert!(
            check_params(&[
                p("a", String, Positional, true),
                p("b", Boolean, Flag, false)
            ])
            .is_ok()
        );
        for bad in [
            vec![p("a", String, Positional, false)],
            vec![p("a", String, Flag, false), p("a", Integer, Flag, false)],
            vec![p("-a", String, Flag, false)],
            vec![p("a b", String, Flag, false)],
            vec![p("b", Boolean, Positional, true)],
        ] {
            assert_eq!(
                check_params(&bad).unwrap_err().code(),
                "E_SKILL_SCRIPT_INVALID"
            );
        }
    }

    #[test]
    fn schemas() {
        use ParamKind::*;
        use ParamType::*;
        let mut a = p("env", String, Positional, true);
        a.description = "Target".into();
        let s = schema(&Params::Declared(vec![a, p("n", Integer, Flag, false)]));
        assert_eq!(
            s,
            json!({"type":"object","properties":{"env":{"type":"string","description":"Target"},"n":{"type":"integer"}},"required":["env"],"additionalProperties":false})
        );
        let s = schema(&Params::Implicit);
        assert_eq!(s["properties"]["args"]["type"], "string");
        assert_eq!(s["additionalProperties"], false);
    }
}
