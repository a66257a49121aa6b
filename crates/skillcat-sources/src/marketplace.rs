//! Claude Code plugin marketplaces: the parser of `.claude-plugin/marketplace.json` and the
//! names Claude Code reserves; [`MarketplaceSource`] reads a marketplace's skills, [`export`]
//! writes any source as one.
//!
//! ```text
//! .claude-plugin/marketplace.json ─ parse ─▶ Marketplace { name, owner, plugins: [Plugin] }
//!   Plugin { name, source: ./path | github | url | git-subdir, skills: [paths] | skills/ }
//! ```
//!
//! The file is written by whoever publishes the repository, so nothing in it is trusted: the
//! parser bounds its size and counts, refuses a path that leaves the repository, a plugin named
//! twice, a source kind skillcat does not read (`npm`) and a name that could not be a folder, and
//! reports every problem at once (never the first alone, never silently).

mod export;
mod source;

use serde_json::{Map, Value};

pub use export::{ExportOptions, Exported, export};
pub use source::MarketplaceSource;

use crate::path::RelPath;

/// Where a marketplace keeps its catalog, relative to the repository root.
pub const MARKETPLACE_FILE: &str = ".claude-plugin/marketplace.json";
/// Where a plugin keeps its manifest, relative to the plugin's folder.
pub const PLUGIN_FILE: &str = ".claude-plugin/plugin.json";

/// The largest `marketplace.json` read (anthropics/skills' is under 2 KiB).
pub const MAX_FILE: usize = 1 << 20;
/// The most plugins a marketplace may list.
pub const MAX_PLUGINS: usize = 1_000;
/// The most skill paths a plugin may list.
pub const MAX_SKILLS: usize = 1_000;
/// The longest name (of a marketplace or a plugin).
pub const MAX_NAME: usize = 128;
/// The most plugins held in other repositories: each is fetched when the marketplace is first
/// read, so a catalog must not be able to send skillcat to any number of hosts.
pub const MAX_GIT_PLUGINS: usize = 64;

/// Marketplace names Claude Code keeps for Anthropic's own GitHub marketplaces (2.1.332): a
/// marketplace under one of them is refused unless it comes from the `anthropics` organisation.
pub const RESERVED_NAMES: &[&str] = &[
    "claude-code-marketplace",
    "claude-code-plugins",
    "claude-plugins-official",
    "anthropic-marketplace",
    "anthropic-plugins",
    "agent-skills",
    "anthropic-agent-skills",
    "life-sciences",
    "knowledge-work-plugins",
    "claude-for-legal",
    "claude-for-financial-services",
    "financial-services-plugins",
    "first-party-plugins",
    "claude-tag-plugins",
    "healthcare",
    "claude-community",
    "claude-plugins-community",
    "anthropic-plugin-directory",
    "claude-plugin-directory",
];

/// Names Claude Code gives its own kinds of plugins (`inline`, `builtin`, …).
const INTERNAL_NAMES: &[&str] = &[
    "inline",
    "builtin",
    "skills-dir",
    "synced",
    "claude-plugin-test",
];

/// A parsed marketplace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marketplace {
    /// Its name (what `PLUGIN@MARKETPLACE` names).
    pub name: String,
    /// `owner.name`, when given.
    pub owner: Option<String>,
    /// Its plugins, in the file's order.
    pub plugins: Vec<Plugin>,
}

/// One plugin of a marketplace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plugin {
    /// Its name, unique in the marketplace.
    pub name: String,
    /// Its description, when given.
    pub description: Option<String>,
    /// The version the entry names, when given.
    pub version: Option<String>,
    /// Where its files are.
    pub source: PluginSource,
    /// The skill folders the entry lists, relative to the plugin's folder and canonical; `None`
    /// when it lists none (its `skills/` folder then holds them).
    pub skills: Option<Vec<String>>,
    /// Whether the plugin's own `.claude-plugin/plugin.json` counts (`"strict"`, `true` by
    /// default): the skill folders it lists are the plugin's too.
    pub strict: bool,
}

/// Where a plugin's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// A folder of the marketplace's repository, canonical (`""` for the root, `"./"`).
    Path(String),
    /// A git repository, read through skillcat's git source.
    Git {
        /// The clone URL (`https://github.com/OWNER/REPO.git` for a `github` source).
        url: String,
        /// The folder inside it (`git-subdir`), canonical.
        subpath: Option<String>,
        /// The branch or tag asked for.
        git_ref: Option<String>,
        /// The commit it is pinned to (40 hex digits).
        sha: Option<String>,
    },
}

/// Everything wrong with a marketplace file, each problem naming where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("; "))]
pub struct MarketplaceError {
    /// The problems, in the file's order.
    pub problems: Vec<String>,
}

/// Parses a `marketplace.json`, reporting every problem (see the module doc).
pub fn parse(bytes: &[u8]) -> Result<Marketplace, MarketplaceError> {
    let one = |p: String| MarketplaceError { problems: vec![p] };
    if bytes.len() > MAX_FILE {
        return Err(one(format!(
            "{} bytes; the limit is {MAX_FILE}",
            bytes.len()
        )));
    }
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| one(format!("not JSON: {e}")))?;
    let Some(doc) = doc.as_object() else {
        return Err(one("not a JSON object".into()));
    };
    let mut problems = Vec::new();
    let name = text(doc, "name", "", &mut problems).unwrap_or_default();
    if let Err(why) = check_name(&name) {
        problems.push(format!("name: {why}"));
    }
    let owner = match doc.get("owner") {
        Some(Value::Object(o)) => text(o, "name", "owner.", &mut problems),
        Some(Value::Null) | None => None,
        Some(_) => {
            problems.push("owner: not an object".into());
            None
        }
    };
    let plugin_root = match doc.get("metadata").and_then(|m| m.get("pluginRoot")) {
        Some(Value::String(root)) => match folder(root) {
            Ok(root) => root,
            Err(why) => {
                problems.push(format!("metadata.pluginRoot: {why}"));
                String::new()
            }
        },
        Some(_) => {
            problems.push("metadata.pluginRoot: not a string".into());
            String::new()
        }
        None => String::new(),
    };
    let entries = match doc.get("plugins") {
        Some(Value::Array(a)) if a.len() > MAX_PLUGINS => {
            problems.push(format!(
                "plugins: {} entries; the limit is {MAX_PLUGINS}",
                a.len()
            ));
            &a[..0]
        }
        Some(Value::Array(a)) => &a[..],
        _ => {
            problems.push("plugins: missing or not an array".into());
            &[][..]
        }
    };
    let mut plugins: Vec<Plugin> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("plugins[{i}]");
        let Some(entry) = entry.as_object() else {
            problems.push(format!("{at}: not an object"));
            continue;
        };
        if let Some(p) = plugin(entry, &at, &plugin_root, &mut problems) {
            if plugins.iter().any(|q| q.name.eq_ignore_ascii_case(&p.name)) {
                problems.push(format!("{at}: the plugin name {:?} is used twice", p.name));
            } else {
                plugins.push(p);
            }
        }
    }
    let remote = plugins
        .iter()
        .filter(|p| matches!(p.source, PluginSource::Git { .. }))
        .count();
    if remote > MAX_GIT_PLUGINS {
        problems.push(format!(
            "{remote} plugins in other repositories; the limit is {MAX_GIT_PLUGINS}"
        ));
    }
    if !problems.is_empty() {
        return Err(MarketplaceError { problems });
    }
    Ok(Marketplace {
        name,
        owner,
        plugins,
    })
}

/// Why a name cannot name a marketplace or a plugin ([`check_name`]) or a marketplace that
/// Claude Code adds from anywhere but Anthropic's own GitHub organisation ([`check_reserved`]),
/// in Claude Code's words where it has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// No name.
    #[error("empty")]
    Empty,
    /// Longer than [`MAX_NAME`].
    #[error("longer than {MAX_NAME} characters")]
    TooLong,
    /// Not a folder name Claude Code accepts.
    #[error(
        "{0:?} is not kebab-case (letters, digits, '.', '_' and '-', starting with a letter or digit)"
    )]
    NotKebab(String),
    /// A name holding `..`.
    #[error("{0:?} contains \"..\"")]
    DotDot(String),
    /// A name Claude Code keeps for Anthropic's own marketplaces.
    #[error(
        "The name '{0}' is reserved for official Anthropic marketplaces and can only be used with GitHub sources from the 'anthropics' organization."
    )]
    Reserved(String),
    /// A name Claude Code keeps for its own plugins.
    #[error("Marketplace name \"{0}\" is reserved for Claude Code's own plugins")]
    Internal(String),
    /// A name that reads as an official Anthropic or Claude marketplace.
    #[error("Marketplace name impersonates an official Anthropic/Claude marketplace")]
    Impersonates,
}

/// Why `name` cannot name a marketplace Claude Code adds from anywhere but Anthropic's own
/// GitHub organisation; `Ok` for a name it accepts.
pub fn check_reserved(name: &str) -> Result<(), NameError> {
    let lower = name.to_ascii_lowercase();
    if RESERVED_NAMES.contains(&lower.as_str()) {
        return Err(NameError::Reserved(name.to_string()));
    }
    if INTERNAL_NAMES.contains(&lower.as_str()) {
        return Err(NameError::Internal(lower));
    }
    let squashed: String = lower.chars().filter(char::is_ascii_alphanumeric).collect();
    if [
        "officialanthropic",
        "officialclaude",
        "anthropicofficial",
        "claudeofficial",
    ]
    .iter()
    .any(|w| squashed.contains(w))
    {
        return Err(NameError::Impersonates);
    }
    Ok(())
}

/// Why `name` cannot name a marketplace or a plugin: it must be a folder name Claude Code
/// accepts (`[A-Za-z0-9][A-Za-z0-9._-]*`, at most [`MAX_NAME`]).
pub fn check_name(name: &str) -> Result<(), NameError> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME {
        return Err(NameError::TooLong);
    }
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        return Err(NameError::NotKebab(name.to_string()));
    }
    if name.contains("..") {
        return Err(NameError::DotDot(name.to_string()));
    }
    Ok(())
}

/// A required string field; a problem when missing or not a string.
fn text(
    obj: &Map<String, Value>,
    key: &str,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    match obj.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problems.push(format!("{at}{key}: not a string"));
            None
        }
        None => {
            problems.push(format!("{at}{key}: missing"));
            None
        }
    }
}

/// An optional string field.
fn opt_text(
    obj: &Map<String, Value>,
    key: &str,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(_) => text(obj, key, at, problems),
    }
}

/// A relative folder of the repository as an entry names it (`./a/b`, `a/b`, `./`), canonical
/// (`""` for the root); why not when it leaves the repository or breaks the path rules.
fn folder(path: &str) -> Result<String, String> {
    if path.starts_with('/') || path.contains('\\') {
        return Err(format!(
            "{path:?} is not a relative path inside the repository"
        ));
    }
    let trimmed = path.trim_start_matches("./").trim_matches('/');
    if trimmed.is_empty() || trimmed == "." {
        return Ok(String::new());
    }
    RelPath::new(trimmed)
        .map(|p| p.as_str().to_string())
        .map_err(|rule| format!("{path:?}: {rule}"))
}

fn plugin(
    entry: &Map<String, Value>,
    at: &str,
    plugin_root: &str,
    problems: &mut Vec<String>,
) -> Option<Plugin> {
    let before = problems.len();
    let name = text(entry, "name", &format!("{at}."), problems);
    if let Some(n) = &name
        && let Err(why) = check_name(n)
    {
        problems.push(format!("{at}.name: {why}"));
    }
    let at = match &name {
        Some(n) => format!("plugin {n:?}"),
        None => at.to_string(),
    };
    let description = opt_text(entry, "description", &format!("{at}: "), problems);
    let version = opt_text(entry, "version", &format!("{at}: "), problems);
    let source = match entry.get("source") {
        Some(Value::String(path)) => {
            // A bare folder name is under metadata.pluginRoot; `./x` is from the root.
            let rooted = if path.starts_with("./") || plugin_root.is_empty() {
                path.clone()
            } else {
                format!("{plugin_root}/{path}")
            };
            match folder(&rooted) {
                Ok(p) => Some(PluginSource::Path(p)),
                Err(why) => {
                    problems.push(format!("{at}: source {why}"));
                    None
                }
            }
        }
        Some(Value::Object(o)) => git_source(o, &at, problems),
        Some(_) => {
            problems.push(format!("{at}: source is neither a path nor an object"));
            None
        }
        None => {
            problems.push(format!("{at}: source: missing"));
            None
        }
    };
    let skills = match entry.get("skills") {
        None | Some(Value::Null) => None,
        Some(Value::String(one)) => Some(vec![Value::String(one.clone())]),
        Some(Value::Array(a)) if a.len() > MAX_SKILLS => {
            problems.push(format!(
                "{at}: skills: {} entries; the limit is {MAX_SKILLS}",
                a.len()
            ));
            None
        }
        Some(Value::Array(a)) => Some(a.clone()),
        Some(_) => {
            problems.push(format!("{at}: skills: not a list of paths"));
            None
        }
    };
    let skills = skills.map(|list| skill_folders(&list, &at, problems));
    let strict = match entry.get("strict") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            problems.push(format!("{at}: strict: not true or false"));
            true
        }
    };
    if problems.len() > before {
        return None;
    }
    Some(Plugin {
        name: name?,
        description,
        version,
        source: source?,
        skills,
        strict,
    })
}

/// A list of skill folders (an entry's or a plugin manifest's `skills`), canonical.
fn skill_folders(list: &[Value], at: &str, problems: &mut Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in list {
        let Some(p) = v.as_str() else {
            problems.push(format!("{at}: skills: {v} is not a path"));
            continue;
        };
        match folder(p) {
            Ok(f) if !out.contains(&f) => out.push(f),
            Ok(_) => problems.push(format!("{at}: skills: {p:?} is listed twice")),
            Err(why) => problems.push(format!("{at}: skills: {why}")),
        }
    }
    out
}

/// The skill folders a plugin's own `.claude-plugin/plugin.json` lists (`skills`: a path or a
/// list), relative to the plugin's folder; what is wrong with it, each problem named.
pub fn parse_plugin_skills(bytes: &[u8]) -> Result<Vec<String>, MarketplaceError> {
    let one = |p: String| MarketplaceError { problems: vec![p] };
    if bytes.len() > MAX_FILE {
        return Err(one(format!(
            "{} bytes; the limit is {MAX_FILE}",
            bytes.len()
        )));
    }
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| one(format!("not JSON: {e}")))?;
    let list = match doc.get("skills") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(one)) => vec![Value::String(one.clone())],
        Some(Value::Array(a)) if a.len() > MAX_SKILLS => {
            return Err(one(format!(
                "skills: {} entries; the limit is {MAX_SKILLS}",
                a.len()
            )));
        }
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(one("skills: not a list of paths".into())),
    };
    let mut problems = Vec::new();
    let out = skill_folders(&list, "plugin.json", &mut problems);
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(MarketplaceError { problems })
    }
}

fn git_source(
    o: &Map<String, Value>,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<PluginSource> {
    let kind = o.get("source").and_then(Value::as_str).unwrap_or("");
    let at = format!("{at}: source.");
    let git_ref = opt_text(o, "ref", &at, problems);
    if let Some(r) = &git_ref
        && (r.is_empty()
            || r.starts_with('-')
            || r.len() > 255
            || r.chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == ':'))
    {
        problems.push(format!("{at}ref: {r:?} is not a branch or tag"));
    }
    let sha = opt_text(o, "sha", &at, problems);
    if let Some(s) = &sha
        && !(s.len() == 40
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    {
        problems.push(format!(
            "{at}sha: {s:?} is not a commit (40 lowercase hex digits)"
        ));
    }
    let (url, subpath) = match kind {
        "github" => {
            let repo = text(o, "repo", &at, problems)?;
            let mut parts = repo.split('/');
            let ok = matches!((parts.next(), parts.next(), parts.next()), (Some(a), Some(b), None)
                if check_name(a).is_ok() && check_name(b).is_ok());
            if !ok {
                problems.push(format!("{at}repo: {repo:?} is not OWNER/REPO"));
                return None;
            }
            (format!("https://github.com/{repo}.git"), None)
        }
        "url" | "git-subdir" => {
            let url = text(o, "url", &at, problems)?;
            // Only network transports: a catalog must not point git at the reader's own disk
            // (`file://`) or at a helper program (`ext::`).
            let scheme_ok = ["https://", "git://", "ssh://"]
                .iter()
                .any(|s| url.starts_with(s));
            if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
                problems.push(format!(
                    "{at}url: {url:?} is not an https://, git:// or ssh:// repository URL (what the git source fetches)"
                ));
                return None;
            }
            let subpath = if kind == "git-subdir" {
                let path = text(o, "path", &at, problems)?;
                match folder(&path) {
                    Ok(p) if p.is_empty() => None,
                    Ok(p) => Some(p),
                    Err(why) => {
                        problems.push(format!("{at}path: {why}"));
                        return None;
                    }
                }
            } else {
                None
            };
            (url, subpath)
        }
        "npm" | "pip" => {
            problems.push(format!(
                "{at}source: {kind:?} plugin sources are not read by skillcat (a path, github, url or git-subdir)"
            ));
            return None;
        }
        other => {
            problems.push(format!(
                "{at}source: unknown kind {other:?} (a path, github, url or git-subdir)"
            ));
            return None;
        }
    };
    Some(PluginSource::Git {
        url,
        subpath,
        git_ref,
        sha,
    })
}

#[cfg(test)]
mod tests;
