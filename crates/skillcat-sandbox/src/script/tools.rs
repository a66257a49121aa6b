//! Script tools of a skill: implicit ones (every executable file directly in `scripts/`) and
//! declared ones (the `scripts:` key of the sidecar `agents/skillcat.yaml`, or of the
//! frontmatter: [`Skill::declarations`]) and the interpreter allow-list. Who owns each
//! name is [`crate::tool::names`]'s to say.
//!
//! ```text
//! my-skill/
//! ├── SKILL.md
//! ├── agents/skillcat.yaml scripts: [{name: deploy, path: tools/deploy.py, params: [...]}]
//! ├── scripts/
//! │   ├── check-deploy.sh  (0755)  → run_my_skill_check_deploy  { args?: string }
//! │   └── notes.txt        (0644)  → skipped, with a diagnostic
//! └── tools/deploy.py             → run_my_skill_deploy        { typed params }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::ScriptError;
use super::argv::{
    self, Param, ParamKind, ParamType, Params, check_params, check_skill_path,
    description_from_source, parse_shebang, script_name_from_file, tool_name,
};
use crate::document::{Map, Skill, Value};
use crate::path::join_path;
use crate::source::Source;

/// The directories searched for the default interpreters (also the scripts' `PATH`).
pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The host allow-list of interpreters: a name (`sh`, `python3`) → an absolute path. A script's
/// `#!` line or declared interpreter is looked up by name; anything not in the map is refused.
///
/// It may also map file extensions to interpreter names (`py` → `python3`, `[scripts.by_extension]`
/// in `skillcat.toml`; none by default): a file directly in `scripts/` that is not executable,
/// or has no `#!` line, is then offered as a tool run by the interpreter its extension maps to —
/// still only when that interpreter is in the allow-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interpreters {
    map: BTreeMap<String, PathBuf>,
    by_extension: BTreeMap<String, String>,
}

impl Interpreters {
    /// An empty allow-list (every script refused).
    pub fn new() -> Self {
        Self::default()
    }

    /// The default allow-list: `sh`, `bash` and `python3`, each where it exists in
    /// [`SYSTEM_PATH`] (the host's own `PATH` is not consulted: shims in a home directory would
    /// not run confined).
    pub fn host_default() -> Self {
        let mut out = Self::new();
        for name in ["sh", "bash", "python3"] {
            if let Some(p) = SYSTEM_PATH
                .split(':')
                .map(|d| Path::new(d).join(name))
                .find(|p| is_executable_file(p))
            {
                out.map.insert(name.to_string(), p);
            }
        }
        out
    }

    /// Adds (or replaces) an interpreter. The path must be absolute.
    pub fn insert(&mut self, name: &str, path: impl Into<PathBuf>) -> Result<(), ScriptError> {
        let path = path.into();
        if !path.is_absolute() {
            return Err(ScriptError::invalid(format!(
                "interpreter '{name}': {} is not an absolute path",
                path.display()
            )));
        }
        if name.is_empty() || name.contains('/') {
            return Err(ScriptError::invalid(format!(
                "bad interpreter name '{name}'"
            )));
        }
        self.map.insert(name.to_string(), path);
        Ok(())
    }

    /// Maps a file extension (`py`, without the dot) to an interpreter name (`python3`). The
    /// name need not be allowed yet: a script it would run is refused until it is.
    pub fn map_extension(&mut self, extension: &str, name: &str) -> Result<(), ScriptError> {
        if !is_extension(extension) {
            return Err(ScriptError::invalid(format!(
                "bad file extension '{extension}' (letters, digits, '_' and '-', without the dot)"
            )));
        }
        if name.is_empty() || name.contains('/') {
            return Err(ScriptError::invalid(format!(
                "bad interpreter name '{name}' for .{extension} files"
            )));
        }
        self.by_extension
            .insert(extension.to_string(), name.to_string());
        Ok(())
    }

    /// The interpreter name an extension maps to (`py` → `python3`), if any.
    pub fn for_extension(&self, extension: &str) -> Option<&str> {
        self.by_extension.get(extension).map(String::as_str)
    }

    /// The path of an interpreter by name (a path is looked up by its last component).
    pub fn get(&self, name: &str) -> Option<&Path> {
        let name = name.rsplit('/').next().unwrap_or(name);
        self.map.get(name).map(PathBuf::as_path)
    }

    /// Whether `path` is one of the allowed interpreters.
    pub fn contains_path(&self, path: &Path) -> bool {
        self.map.values().any(|p| p == path)
    }

    /// Every entry, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Path)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_path()))
    }
}

/// Whether `s` can be a file extension in `[scripts.by_extension]`: ASCII letters, digits, `_`
/// and `-`, no dot.
fn is_extension(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The extension of a file name (`x.tar.gz` → `gz`; none for `Makefile` or `.profile`).
fn extension_of(file_name: &str) -> Option<&str> {
    match file_name.rfind('.') {
        Some(0) | None => None,
        Some(i) => Some(&file_name[i + 1..]),
    }
}

fn is_executable_file(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The interpreter a tool runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// Its name in the allow-list.
    pub name: String,
    /// Its absolute path.
    pub path: PathBuf,
    /// Arguments before the script (from the `#!` line).
    pub args: Vec<String>,
}

/// One script tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptTool {
    /// The tool name a model calls: `run_<skill>_<script>`.
    pub name: String,
    /// The name part (`check_deploy`).
    pub script: String,
    /// What it does, for the model.
    pub description: String,
    /// The script, relative to the skill root.
    pub path: String,
    /// How it is started.
    pub interpreter: Interpreter,
    /// Its parameters.
    pub params: Params,
}

impl ScriptTool {
    /// The JSON Schema of the tool's parameters.
    pub fn schema(&self) -> Json {
        argv::schema(&self.params)
    }

    /// The script's arguments from JSON arguments, validated against the parameters.
    pub fn argv(&self, args: &Json) -> Result<Vec<String>, ScriptError> {
        argv::build_argv(&self.params, args)
    }

    /// The tool as JSON: name, description, script, path, interpreter, parameters (schema).
    pub fn to_json(&self) -> Json {
        serde_json::json!({
            "name": self.name,
            "description": self.description,
            "script": self.script,
            "path": self.path,
            "interpreter": self.interpreter.name,
            "parameters": self.schema(),
        })
    }
}

/// A script that is not offered as a tool, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file, relative to the skill root.
    pub path: String,
    /// The name part it would have had, when it has one.
    pub script: Option<String>,
    /// Why it is skipped.
    pub error: ScriptError,
}

/// The script tools of one skill, and the scripts skipped (never silently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillTools {
    /// The skill's name.
    pub skill: String,
    /// The tools, declared ones first (in declaration order), then implicit ones by file name.
    pub tools: Vec<ScriptTool>,
    /// Scripts not offered: not executable, no allowed interpreter.
    pub skipped: Vec<Skipped>,
}

impl SkillTools {
    /// A tool by full name (`run_x_y`) or name part (`y`).
    pub fn find(&self, name: &str) -> Option<&ScriptTool> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .or_else(|| self.tools.iter().find(|t| t.script == name))
    }

    /// Why a script by that name (full, name part, or path) was skipped, if it was.
    pub fn skipped(&self, name: &str) -> Option<&Skipped> {
        let prefix = format!("run_{}_", self.skill.replace('-', "_"));
        let part = name.strip_prefix(&prefix).unwrap_or(name);
        self.skipped
            .iter()
            .find(|s| s.script.as_deref() == Some(part) || s.path == name)
    }
}

/// A `scripts:` entry, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The name part.
    pub name: String,
    /// The script, relative to the skill (checked).
    pub path: String,
    /// Description (empty: from the script's first comment line, else the name).
    pub description: String,
    /// The interpreter's name (none: from the `#!` line).
    pub interpreter: Option<String>,
    /// Parameters (checked).
    pub params: Vec<Param>,
}

/// Reads a `scripts:` value (of the sidecar or the frontmatter): a list of maps with `name`, `path`, `description`,
/// `interpreter`, `params` (each `name`, `type`, `kind`, `required`, `description`). Unknown
/// keys, bad names, bad types and optional positionals are errors; a path that climbs out of
/// the skill is [`ScriptError::PathRejected`].
pub fn parse_declared(value: &Value) -> Result<Vec<Declared>, ScriptError> {
    let items = value
        .as_list()
        .ok_or_else(|| ScriptError::invalid("'scripts' must be a list of maps"))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let m = item
            .as_map()
            .ok_or_else(|| ScriptError::invalid(format!("scripts[{i}] must be a map")))?;
        let at = |k: &str| format!("scripts[{i}].{k}");
        only_keys(
            m,
            &["name", "path", "description", "interpreter", "params"],
            &format!("scripts[{i}]"),
        )?;
        let name = required_text(m, "name", &at("name"))?;
        if !argv::is_tool_name(&name) {
            return Err(ScriptError::invalid(format!(
                "{}: '{name}' must match ^[a-zA-Z0-9_-]+$",
                at("name")
            )));
        }
        let path = check_skill_path(&required_text(m, "path", &at("path"))?)?;
        let description = optional_text(m, "description", &at("description"))?.unwrap_or_default();
        let interpreter = optional_text(m, "interpreter", &at("interpreter"))?;
        let params = match m.get("params") {
            None => Vec::new(),
            Some(v) => parse_params(v, &at("params"))?,
        };
        check_params(&params)
            .map_err(|e| ScriptError::invalid(format!("scripts[{i}] ({name}): {e}")))?;
        out.push(Declared {
            name,
            path,
            description,
            interpreter,
            params,
        });
    }
    Ok(out)
}

fn parse_params(v: &Value, at: &str) -> Result<Vec<Param>, ScriptError> {
    let items = v
        .as_list()
        .ok_or_else(|| ScriptError::invalid(format!("{at} must be a list of maps")))?;
    let mut out = Vec::new();
    for (j, item) in items.iter().enumerate() {
        let at = format!("{at}[{j}]");
        let m = item
            .as_map()
            .ok_or_else(|| ScriptError::invalid(format!("{at} must be a map")))?;
        only_keys(m, &["name", "type", "kind", "required", "description"], &at)?;
        let name = required_text(m, "name", &format!("{at}.name"))?;
        let ty = match optional_text(m, "type", &format!("{at}.type"))? {
            None => ParamType::String,
            Some(t) => ParamType::parse(&t).ok_or_else(|| {
                ScriptError::invalid(format!(
                    "{at}.type: '{t}' is not one of string, integer, number, boolean"
                ))
            })?,
        };
        let kind = match optional_text(m, "kind", &format!("{at}.kind"))?
            .as_deref()
            .map(str::trim)
        {
            None | Some("flag") => ParamKind::Flag,
            Some("positional") => ParamKind::Positional,
            Some(k) => {
                return Err(ScriptError::invalid(format!(
                    "{at}.kind: '{k}' is not one of positional, flag"
                )));
            }
        };
        let required = match optional_text(m, "required", &format!("{at}.required"))?
            .as_deref()
            .map(str::trim)
        {
            None | Some("false") => false,
            Some("true") => true,
            Some(b) => {
                return Err(ScriptError::invalid(format!(
                    "{at}.required: '{b}' is not true or false"
                )));
            }
        };
        let description =
            optional_text(m, "description", &format!("{at}.description"))?.unwrap_or_default();
        out.push(Param {
            name,
            ty,
            kind,
            required,
            description,
        });
    }
    Ok(out)
}

fn only_keys(m: &Map, allowed: &[&str], at: &str) -> Result<(), ScriptError> {
    match m.keys().find(|k| !allowed.contains(k)) {
        Some(k) => Err(ScriptError::invalid(format!(
            "{at}: unknown key '{k}' (allowed: {})",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

fn required_text(m: &Map, key: &str, at: &str) -> Result<String, ScriptError> {
    optional_text(m, key, at)?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ScriptError::invalid(format!("{at} is required")))
}

fn optional_text(m: &Map, key: &str, at: &str) -> Result<Option<String>, ScriptError> {
    match m.get(key) {
        None => Ok(None),
        Some(Value::Text(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ScriptError::invalid(format!("{at} must be text"))),
    }
}

/// Finds the script tools of a skill, reading each script through its source (for the `#!`
/// line and the description).
///
/// Errors refuse the whole skill's tools: a malformed `scripts:` key, a path that climbs out,
/// a declared script that is not in the skill, a bad or too long tool name, duplicate names.
/// A script that only cannot be offered (not executable, no allowed interpreter) is
/// [`Skipped`] with the reason.
pub async fn discover(
    source: &dyn Source,
    skill: &Skill,
    interpreters: &Interpreters,
) -> Result<SkillTools, ScriptError> {
    let skill_name = skill.name();
    // The one reader of declarations: the sidecar `agents/skillcat.yaml` or the frontmatter.
    let declarations = skill
        .declarations()
        .map_err(|f| ScriptError::invalid(f.message().to_string()))?;
    let declared = match declarations.scripts() {
        None => Vec::new(),
        Some(v) => parse_declared(v)?,
    };
    let mut tools = Vec::new();
    let mut skipped = Vec::new();
    for d in &declared {
        if !skill.files().iter().any(|f| f.path == d.path) {
            return Err(ScriptError::invalid(format!(
                "script '{}': {} is not a file of the skill",
                d.name, d.path
            )));
        }
        let text = read_text(source, skill, &d.path).await?;
        let name = tool_name(&skill_name, &d.name)?;
        let description = if d.description.trim().is_empty() {
            description_from_source(&text).unwrap_or_else(|| d.name.clone())
        } else {
            d.description.trim().to_string()
        };
        let wanted = match &d.interpreter {
            Some(i) => Some((i.trim().to_string(), Vec::new())),
            None => parse_shebang(&text).map(|s| (s.name, s.args)),
        };
        match resolve(interpreters, &d.path, wanted) {
            Ok(interpreter) => tools.push(ScriptTool {
                name,
                script: d.name.clone(),
                description,
                path: d.path.clone(),
                interpreter,
                params: Params::Declared(d.params.clone()),
            }),
            Err(error) => skipped.push(Skipped {
                path: d.path.clone(),
                script: Some(d.name.clone()),
                error,
            }),
        }
    }
    for f in skill.files() {
        let Some(file) = f.path.strip_prefix("scripts/") else {
            continue;
        };
        if file.contains('/') || declared.iter().any(|d| d.path == f.path) {
            continue;
        }
        let script = script_name_from_file(file);
        // Run by its extension's interpreter when the host maps it: the file is not executable,
        // or (read below) has no `#!` line.
        let mapped = extension_of(file).and_then(|e| interpreters.for_extension(e).map(|i| (e, i)));
        if !f.executable && mapped.is_none() {
            let how = match extension_of(file) {
                Some(e) if is_extension(e) => format!(
                    "mark it executable, or map .{e} to an interpreter in [scripts.by_extension], \
                     to offer it as a tool"
                ),
                _ => "mark it executable to offer it as a tool".to_string(),
            };
            skipped.push(Skipped {
                path: f.path.clone(),
                script,
                error: ScriptError::invalid(format!("{} is not executable ({how})", f.path)),
            });
            continue;
        }
        let Some(script) = script else {
            skipped.push(Skipped {
                path: f.path.clone(),
                script: None,
                error: ScriptError::invalid(format!(
                    "{}: no usable tool name in the file name",
                    f.path
                )),
            });
            continue;
        };
        let text = read_text(source, skill, &f.path).await?;
        let shebang = parse_shebang(&text);
        let by_extension = !f.executable || shebang.is_none();
        if by_extension && mapped.is_some() && file.starts_with('_') {
            // `__init__.py`, `_helpers.py`: modules other scripts import, not scripts.
            skipped.push(Skipped {
                path: f.path.clone(),
                script: Some(script),
                error: ScriptError::invalid(format!(
                    "{}: a name starting with '_' is a module, not a script (not offered through \
                     [scripts.by_extension]; mark it executable with a #! line to offer it)",
                    f.path
                )),
            });
            continue;
        }
        let name = tool_name(&skill_name, &script)?;
        let description = description_from_source(&text).unwrap_or_else(|| script.clone());
        // The `#!` line names the interpreter when there is one; the extension's mapping is for
        // files without one.
        let wanted = match (shebang, mapped) {
            (Some(s), _) => Some((s.name, s.args)),
            (None, Some((_, name))) => Some((name.to_string(), Vec::new())),
            (None, None) => None,
        };
        match resolve(interpreters, &f.path, wanted) {
            Ok(interpreter) => tools.push(ScriptTool {
                name,
                script,
                description,
                path: f.path.clone(),
                interpreter,
                params: Params::Implicit,
            }),
            Err(error) => skipped.push(Skipped {
                path: f.path.clone(),
                script: Some(script),
                error,
            }),
        }
    }
    let mut seen = BTreeSet::new();
    for t in &tools {
        if !seen.insert(t.name.as_str()) {
            return Err(ScriptError::invalid(format!(
                "skill '{skill_name}' offers two tools named '{}'",
                t.name
            )));
        }
    }
    Ok(SkillTools {
        skill: skill_name,
        tools,
        skipped,
    })
}

fn resolve(
    interpreters: &Interpreters,
    script: &str,
    wanted: Option<(String, Vec<String>)>,
) -> Result<Interpreter, ScriptError> {
    let refused = |interpreter: String| ScriptError::InterpreterRefused {
        script: script.to_string(),
        interpreter,
    };
    let (name, args) = wanted.ok_or_else(|| refused(String::new()))?;
    let path = interpreters
        .get(&name)
        .ok_or_else(|| refused(name.clone()))?;
    Ok(Interpreter {
        name: name.rsplit('/').next().unwrap_or(&name).to_string(),
        path: path.to_path_buf(),
        args,
    })
}

/// A script's first bytes as text (the `#!` line and the first comment are all that is read
/// from it here).
async fn read_text(source: &dyn Source, skill: &Skill, rel: &str) -> Result<String, ScriptError> {
    let bytes = source
        .read(&join_path(skill.root(), rel))
        .await
        .map_err(|e| match e {
            crate::Error::PathRejected { path, reason } => {
                ScriptError::PathRejected { path, reason }
            }
            other => ScriptError::invalid(format!("{rel}: {other}")),
        })?;
    let head = &bytes[..bytes.len().min(8192)];
    Ok(String::from_utf8_lossy(head).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::parse_document;

    fn declared(yaml: &str) -> Result<Vec<Declared>, ScriptError> {
        let doc = parse_document(format!("---\nname: x\ndescription: y\n{yaml}---\n").as_bytes())
            .expect("parses");
        parse_declared(doc.frontmatter.get("scripts").expect("scripts key"))
    }

    #[test]
    fn declared_scripts_are_read() {
        let d = declared(
            "scripts:\n  - name: deploy\n    path: ./tools/deploy.py\n    interpreter: python3\n    params:\n      - name: env\n        type: string\n        kind: positional\n        required: true\n        description: Target\n      - name: force\n        type: boolean\n",
        )
        .unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path, "tools/deploy.py");
        assert_eq!(d[0].interpreter.as_deref(), Some("python3"));
        assert_eq!(d[0].params[0].kind, ParamKind::Positional);
        assert!(d[0].params[0].required);
        assert_eq!(d[0].params[1].ty, ParamType::Boolean);
        assert_eq!(d[0].params[1].kind, ParamKind::Flag);
    }

    #[test]
    fn declared_scripts_refused() {
        for (yaml, code) in [
            ("scripts: x\n", "E_SKILL_SCRIPT_INVALID"),
            (
                "scripts:\n  - name: a\n    path: ../evil.sh\n",
                "E_SKILL_SOURCE_PATH_REJECTED",
            ),
            (
                "scripts:\n  - name: a\n    path: /bin/sh\n",
                "E_SKILL_SOURCE_PATH_REJECTED",
            ),
            ("scripts:\n  - name: a\n", "E_SKILL_SCRIPT_INVALID"),
            (
                "scripts:\n  - name: a b\n    path: x\n",
                "E_SKILL_SCRIPT_INVALID",
            ),
            (
                "scripts:\n  - name: a\n    path: x\n    shell: yes\n",
                "E_SKILL_SCRIPT_INVALID",
            ),
            (
                "scripts:\n  - name: a\n    path: x\n    params:\n      - name: p\n        kind: positional\n",
                "E_SKILL_SCRIPT_INVALID",
            ),
            (
                "scripts:\n  - name: a\n    path: x\n    params:\n      - name: p\n        type: float\n",
                "E_SKILL_SCRIPT_INVALID",
            ),
            (
                "scripts:\n  - name: a\n    path: x\n    params:\n      - name: p\n        required: maybe\n",
                "E_SKILL_SCRIPT_INVALID",
            ),
        ] {
            assert_eq!(declared(yaml).unwrap_err().code(), code, "{yaml}");
        }
    }

    #[test]
    fn interpreters_by_name() {
        let mut i = Interpreters::new();
        i.insert("sh", "/bin/sh").unwrap();
        assert_eq!(i.get("sh"), Some(Path::new("/bin/sh")));
        assert_eq!(i.get("/opt/evil/sh"), Some(Path::new("/bin/sh")));
        assert!(i.get("perl").is_none());
        assert!(i.insert("x", "relative").is_err());
        assert!(i.contains_path(Path::new("/bin/sh")));
    }
}
