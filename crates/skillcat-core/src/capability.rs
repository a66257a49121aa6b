//! Capabilities: what a skill's scripts ask for, what the host allows, and the grant between.
//!
//! ```text
//! SKILL.md frontmatter ──► Capabilities ─┐
//!   fs_read, fs_write, network,          ├─► intersect(caps, ceiling, ctx) ──► Grant ──► sandbox
//!   timeout, trust                       │      (cwd, home, core-trusted source;
//! skillcat.toml [sandbox] ──► Ceiling ───┘       links resolved by a Resolver: RealFs)
//! ```
//!
//! # Declared capabilities
//!
//! Read by [`Capabilities::from_frontmatter`], in either of two spellings:
//!
//! - **under `metadata:`** (the portable one): `skillcat.fs_read`, `skillcat.fs_write`,
//!   `skillcat.network`, `skillcat.timeout`, `skillcat.trust`. The specification makes
//!   `metadata` a map of text to text, so a skill written this way stays valid for the reference
//!   validator and every other agent. A list of paths is one text, the paths separated by
//!   blanks (as `allowed-tools` separates tools); a path holding a blank is written in double
//!   quotes: `skillcat.fs_read: 'data "My Notes"'`. A YAML list is accepted too.
//! - **at the top level** (`fs_read: data`, `network: true`, …): skillcat's first spelling, still
//!   read; other validators call these keys unexpected (`skillcat validate` admits them with
//!   `[scripts] extension_fields = true`). Here a text is one path.
//!
//! When a key is given both ways, the `metadata` one is used. Frontmatter values are text (the
//! reader keeps every scalar as written), so each key is interpreted here, and **a malformed
//! value degrades to the safe default, never to an error**:
//!
//! | key | accepted | anything else |
//! |---|---|---|
//! | `fs_read`, `fs_write` | one path (`fs_read: data`) or a list of paths | non-text items and empty strings are ignored |
//! | `network` | `true`, `True`, `TRUE` (the whole network); `false`; host patterns separated by blanks (`api.github.com *.example.com:8443`, see [`crate::network`]) | `false` (and [`network_declaration`] says why, for validation) |
//! | `timeout` | a whole number of seconds ≥ 1 | absent, `0`, negative, fractional, overflowing, text: [`DEFAULT_TIMEOUT`] (60) |
//! | `trust` | `core`, `external` | `external` |
//!
//! ```
//! use skillcat_core::capability::Capabilities;
//! use skillcat_core::document::parse_document;
//!
//! let doc = parse_document(
//!     b"---\nname: s\ndescription: d\nmetadata:\n  skillcat.fs_read: 'logs \"My Notes\"'\n  skillcat.network: 'true'\n---\n",
//! )
//! .unwrap();
//! let caps = Capabilities::from_frontmatter(&doc.frontmatter);
//! assert_eq!(caps.fs_read, ["logs", "My Notes"]);
//! assert!(caps.network.is_all());
//! ```
//!
//! A host may add to what a skill declares for a session ([`Capabilities::with`]: `skillcat run
//! --allow-read/--allow-write/--allow-net`); the ceiling still bounds the sum.
//!
//! # The ceiling
//!
//! The host's [`Ceiling`] comes from the `[sandbox]` section of the configuration. Without one
//! (or for each key left out of it) the ceiling is: read-only access to the working directory
//! (`fs_read = ["."]`), no writes, no network, a 60-second timeout that no run may exceed
//! (`max_timeout = timeout`), 1 GiB of memory, 64 processes, 65,536 bytes of captured output,
//! a workspace of at most 256 MiB and 10,000 files. A root written relative to the working
//! directory (`.` included) never stands for `/` or the whole home directory: started there, it
//! allows nothing ([`ceiling_root`]).
//!
//! # The intersection
//!
//! [`intersect`] computes the [`Grant`]:
//!
//! - **Paths.** Both the requested paths and the ceiling roots are expanded the same way first:
//!   `~` and `~/…` against the home directory (no home: the path is dropped), relative paths
//!   against the working directory, `.` and `..` resolved lexically, then the longest prefix that
//!   exists is canonicalised (symbolic links resolved) and the rest appended; a path through a
//!   dangling link, a link loop or an unsearchable directory is dropped. A requested path
//!   survives only when the result equals a ceiling root or lies beneath one, compared by whole
//!   components, so a symbolic link inside the ceiling that points outside it is refused. A
//!   requested read may lie under a read or a write root (writable implies readable); a
//!   requested write only under a write root. The grant holds the *expanded* paths, never the
//!   text the skill wrote: what is confined is exactly what was checked.
//! - **Network**: the set intersection of what the skill asks for and what the ceiling allows
//!   ([`Network::intersect`]): a host and port are granted when both allow them; `true` is
//!   every host. Requested patterns the ceiling allows nothing of are reported in
//!   [`Intersection::dropped_hosts`].
//! - **Timeout**: the smaller of the declared one and the ceiling's, clamped to
//!   `1..=max_timeout`.
//! - **Trust**: [`Trust::Core`] only when the skill declares `trust: core` *and* its source is
//!   core-trusted in the configuration; everything else is [`Trust::External`].
//!
//! The rules are pure: [`intersect_with`] is a function of its inputs and a [`Resolver`], the one
//! thing that knows about symbolic links (given an absolute, lexically clean path, its canonical
//! form). [`intersect`] and [`intersect_detailed`] pass [`RealFs`], which asks the real file
//! system; tests pass a table of links. [`Context`] carries the working and home directories,
//! given by the caller (the `skillcat` facade's `context::Env` reads the real ones).
//!
//! ```
//! use skillcat_core::capability::{Capabilities, Ceiling, Context, Network, intersect};
//!
//! let caps = Capabilities {
//!     fs_read: vec!["/etc".into(), "./data".into()],
//!     network: Network::All,
//!     timeout: Some(999),
//!     ..Capabilities::default()
//! };
//! let ctx = Context { cwd: "/nonexistent/project".into(), home: None, core_trusted_source: false };
//! let grant = intersect(&caps, &Ceiling::default(), &ctx);
//! assert_eq!(grant.fs_read, [std::path::PathBuf::from("/nonexistent/project/data")]);
//! assert!(grant.network.is_off());
//! assert_eq!(grant.timeout.as_secs(), 60);
//! assert!(!grant.is_core());
//! ```

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::document::{Map, Value};
pub use crate::network::{HostPattern, Network, PatternError, Pin};

/// The frontmatter keys this module reads, plus `scripts` (typed script declarations): the
/// extension fields validation admits when the configuration enables them.
pub const EXTENSION_FIELDS: [&str; 6] = crate::document::DECLARATION_KEYS;

/// The timeout, in seconds, of a skill that declares none (or a malformed one).
pub const DEFAULT_TIMEOUT: u64 = 60;

/// How far a skill is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// Declared `trust: core` by a skill from a core-trusted source.
    Core,
    /// Everything else.
    #[default]
    External,
}

impl Trust {
    /// Whether this is [`Trust::Core`].
    pub fn is_core(self) -> bool {
        self == Trust::Core
    }

    /// The frontmatter spelling: `core` or `external`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Core => "core",
            Trust::External => "external",
        }
    }
}

/// The effective grant of a skill's scripts: its declared capabilities ∩ the host's ceiling.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Grant {
    /// Paths (absolute, canonical where they exist) the scripts may read.
    pub fs_read: Vec<PathBuf>,
    /// Paths (absolute, canonical where they exist) the scripts may write.
    pub fs_write: Vec<PathBuf>,
    /// What network the scripts may use: none, some hosts (through the run's proxy), or all.
    pub network: Network,
    /// Wall-clock limit of one run.
    pub timeout: Duration,
    /// The trust the skill is given.
    pub trust: Trust,
}

impl Grant {
    /// Whether the skill is trusted as core (it may run unconfined where confinement is missing).
    pub fn is_core(&self) -> bool {
        self.trust.is_core()
    }
}

/// What a skill declares in its frontmatter, interpreted leniently (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Paths the scripts want to read, as written.
    pub fs_read: Vec<String>,
    /// Paths the scripts want to write, as written.
    pub fs_write: Vec<String>,
    /// What network the scripts want (a malformed declaration is [`Network::Off`]).
    pub network: Network,
    /// The declared timeout in seconds; `None` when absent or malformed (then
    /// [`DEFAULT_TIMEOUT`] applies, see [`timeout_secs`](Capabilities::timeout_secs)).
    pub timeout: Option<u64>,
    /// The declared trust.
    pub trust: Trust,
}

impl Capabilities {
    /// Reads the capability keys of a frontmatter, under `metadata:` (`skillcat.fs_read`, …)
    /// or at the top level (`fs_read`, …; the `metadata` one wins when both are given); unknown
    /// or malformed values give the safe default, never an error.
    pub fn from_frontmatter(fm: &Map) -> Self {
        let metadata = fm.get("metadata").and_then(Value::as_map);
        let text = |key: &str| declared(fm, metadata, key).and_then(|(v, _)| v.as_str());
        let paths = |key: &str| match declared(fm, metadata, key) {
            Some((v, true)) => metadata_paths(v),
            Some((v, false)) => paths(Some(v)),
            None => Vec::new(),
        };
        Capabilities {
            fs_read: paths("fs_read"),
            fs_write: paths("fs_write"),
            network: network_declaration(fm)
                .and_then(Result::ok)
                .unwrap_or_default(),
            timeout: text("timeout").and_then(parse_timeout),
            trust: match text("trust").map(str::trim) {
                Some("core") => Trust::Core,
                _ => Trust::External,
            },
        }
    }

    /// These capabilities with `extra` added: the paths of both (each once), network when
    /// either asks for it; the timeout and trust stay these (a host adds access, never core
    /// trust). What a host grants a session on top of each skill's declaration
    /// (`skillcat run --allow-read PATH --allow-write PATH --allow-net`); the ceiling still
    /// bounds the result when it is [intersected](intersect).
    pub fn with(&self, extra: &Capabilities) -> Capabilities {
        let union = |a: &[String], b: &[String]| {
            let mut out = a.to_vec();
            out.extend(b.iter().filter(|p| !a.contains(p)).cloned());
            out
        };
        Capabilities {
            fs_read: union(&self.fs_read, &extra.fs_read),
            fs_write: union(&self.fs_write, &extra.fs_write),
            network: self.network.union(&extra.network),
            timeout: self.timeout,
            trust: self.trust,
        }
    }

    /// The declared timeout, or [`DEFAULT_TIMEOUT`].
    pub fn timeout_secs(&self) -> u64 {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT)
    }

    /// Whether the skill declares `trust: core` (which counts only from a core-trusted source).
    pub fn is_core(&self) -> bool {
        self.trust.is_core()
    }
}

pub use crate::document::network_declaration;

/// A positive whole number of seconds.
fn parse_timeout(s: &str) -> Option<u64> {
    s.trim().parse::<u64>().ok().filter(|&n| n > 0)
}

/// The prefix of the capability keys under `metadata:` (`skillcat.fs_read`, …).
pub const METADATA_PREFIX: &str = "skillcat.";

/// A capability key's value, and whether it came from `metadata:` (which wins).
fn declared<'a>(fm: &'a Map, metadata: Option<&'a Map>, key: &str) -> Option<(&'a Value, bool)> {
    metadata
        .and_then(|m| m.get(&format!("{METADATA_PREFIX}{key}")))
        .map(|v| (v, true))
        .or_else(|| fm.get(key).map(|v| (v, false)))
}

/// Paths under `metadata:`: one text of paths separated by blanks, a path holding a blank in
/// double quotes (an unclosed quote runs to the end); or a list, read as at the top level.
fn metadata_paths(v: &Value) -> Vec<String> {
    let Some(s) = v.as_str() else {
        return paths(Some(v));
    };
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let (word, tail) = match rest.strip_prefix('"') {
            Some(quoted) => match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            },
            None => match rest.find(char::is_whitespace) {
                Some(end) => (&rest[..end], &rest[end..]),
                None => (rest, ""),
            },
        };
        if !word.trim().is_empty() {
            out.push(word.trim().to_string());
        }
        rest = tail.trim_start();
    }
    out
}

/// One path or a list of paths; anything else is nothing.
fn paths(v: Option<&Value>) -> Vec<String> {
    let text = |v: &Value| {
        v.as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match v {
        Some(Value::Text(_)) => v.and_then(text).into_iter().collect(),
        Some(Value::List(items)) => items.iter().filter_map(text).collect(),
        _ => Vec::new(),
    }
}

/// The most the host allows any skill: the `[sandbox]` section of the configuration.
///
/// Paths are kept as written and expanded when intersected (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ceiling {
    /// Roots under which reads may be granted (default `["."]`, the working directory).
    pub fs_read: Vec<String>,
    /// Roots under which writes (and reads) may be granted (default none).
    pub fs_write: Vec<String>,
    /// What network any skill may use (default none): `true`, `false` or host patterns.
    pub network: Network,
    /// `[sandbox.resolve]`: names (and ports) the run's proxy connects to fixed addresses,
    /// which may then be private or loopback ones (default none).
    pub resolve: Vec<Pin>,
    /// The longest declared timeout honoured, in seconds (default 60).
    pub timeout: u64,
    /// The hard limit of any run, in seconds, whatever asks for more (a skill, a command-line
    /// override); default: `timeout`.
    pub max_timeout: u64,
    /// Address-space limit of a run, in bytes (default 1 GiB).
    pub memory: u64,
    /// Process limit of a run (default 64).
    pub processes: u64,
    /// Bytes of output kept per stream (default 65,536); the rest is drained and dropped.
    pub output: u64,
    /// Bytes a skill's workspace may hold: the skill's files when materialised, and what its
    /// runs leave in `work/` (disk blocks; default 256 MiB).
    pub workspace_bytes: u64,
    /// Files and directories a skill's workspace may hold, the same way (default 10,000).
    pub workspace_files: u64,
    /// Names (or paths relative to a write grant) kept read-only inside every write grant,
    /// beside the built-in protected set (`.git`, `.env*`, `skillcat.toml`, …); it only adds.
    pub protect: Vec<String>,
}

impl Default for Ceiling {
    fn default() -> Self {
        Ceiling {
            fs_read: vec![".".to_string()],
            fs_write: Vec::new(),
            network: Network::Off,
            resolve: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            max_timeout: DEFAULT_TIMEOUT,
            memory: 1 << 30,
            processes: 64,
            output: 65_536,
            workspace_bytes: 256 << 20,
            workspace_files: 10_000,
            protect: Vec::new(),
        }
    }
}

impl Ceiling {
    /// `secs` clamped to `1..=max_timeout`: for an override that bypasses the declared timeout.
    pub fn clamp_timeout(&self, secs: u64) -> Duration {
        Duration::from_secs(secs.clamp(1, self.max_timeout.max(1)))
    }
}

/// Where relative and `~` paths point, and whether the skill's source is core-trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The working directory (absolute): relative paths are taken against it.
    pub cwd: PathBuf,
    /// The home directory, for `~`; `None` drops every `~` path.
    pub home: Option<PathBuf>,
    /// Whether the skill comes from a source the configuration marks core-trusted.
    pub core_trusted_source: bool,
}

/// Which list a path was requested in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// `fs_read`.
    Read,
    /// `fs_write`.
    Write,
}

/// A requested path the intersection left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Read or write.
    pub access: Access,
    /// The path as the skill wrote it.
    pub requested: String,
    /// What it expanded to, when it could be expanded.
    pub expanded: Option<PathBuf>,
}

/// The grant and the requested paths it left out (for a warning or a refusal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intersection {
    /// The effective grant.
    pub grant: Grant,
    /// Requested paths outside the ceiling, or that could not be expanded.
    pub dropped: Vec<Dropped>,
    /// Requested host patterns the ceiling allows nothing of.
    pub dropped_hosts: Vec<HostPattern>,
}

/// Resolves the symbolic links of a path for the intersection: the one place it meets a file
/// system, so that the policy itself stays a pure function ([`intersect_with`]).
pub trait Resolver {
    /// The canonical form of `path` (absolute, free of `.` and `..`): every link on the way
    /// followed. `None` when it cannot be resolved safely (a dangling link, a link loop, a
    /// directory that may not be searched); such a path is never granted.
    fn canonicalize(&self, path: &Path) -> Option<PathBuf>;
}

/// The real file system: canonicalises the longest prefix of the path that exists and appends
/// the rest (which does not exist, so holds no link to follow). The resolver [`intersect`],
/// [`intersect_detailed`] and [`resolve`] use.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl Resolver for RealFs {
    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        canonicalize_existing_prefix(path)
    }
}

/// A closure is a resolver (tables of links in tests).
impl<F: Fn(&Path) -> Option<PathBuf>> Resolver for F {
    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        self(path)
    }
}

/// The effective grant: `caps` ∩ `ceiling` (see the [module docs](self)), links resolved on the
/// real file system.
pub fn intersect(caps: &Capabilities, ceiling: &Ceiling, ctx: &Context) -> Grant {
    intersect_with(caps, ceiling, ctx, &RealFs).grant
}

/// [`intersect`], also saying which requested paths were left out.
pub fn intersect_detailed(caps: &Capabilities, ceiling: &Ceiling, ctx: &Context) -> Intersection {
    intersect_with(caps, ceiling, ctx, &RealFs)
}

/// The intersection itself, a pure function: every path (requested or a ceiling root) is
/// expanded lexically ([`expand_lexically`]) and then resolved by `resolver`, and nothing else
/// is looked at.
pub fn intersect_with(
    caps: &Capabilities,
    ceiling: &Ceiling,
    ctx: &Context,
    resolver: &dyn Resolver,
) -> Intersection {
    let expand = |p: &String| resolve_with(p, &ctx.cwd, ctx.home.as_deref(), resolver);
    let root = |p: &String| ceiling_root_with(p, ctx, resolver);
    let write_roots: Vec<PathBuf> = ceiling.fs_write.iter().filter_map(root).collect();
    let mut read_roots: Vec<PathBuf> = ceiling.fs_read.iter().filter_map(root).collect();
    read_roots.extend(write_roots.iter().cloned());

    let mut dropped = Vec::new();
    let mut admit = |access: Access, requested: &[String], roots: &[PathBuf]| {
        let mut out: Vec<PathBuf> = Vec::new();
        for r in requested {
            let expanded = expand(r);
            match expanded {
                Some(p) if roots.iter().any(|root| p.starts_with(root)) => {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
                _ => dropped.push(Dropped {
                    access,
                    requested: r.clone(),
                    expanded,
                }),
            }
        }
        out
    };
    let fs_read = admit(Access::Read, &caps.fs_read, &read_roots);
    let fs_write = admit(Access::Write, &caps.fs_write, &write_roots);

    let secs = caps.timeout_secs().min(ceiling.timeout);
    let trust = if caps.is_core() && ctx.core_trusted_source {
        Trust::Core
    } else {
        Trust::External
    };
    let (network, dropped_hosts) = caps.network.intersect(&ceiling.network);
    Intersection {
        grant: Grant {
            fs_read,
            fs_write,
            network,
            timeout: ceiling.clamp_timeout(secs),
            trust,
        },
        dropped,
        dropped_hosts,
    }
}

/// Expands a ceiling root as the intersection does ([`resolve`]), except that a root written
/// relative to the working directory (`.`, the default, or `data`, `..`) never stands for the
/// whole file system or the whole home directory: with a working directory of `/` (an MCP
/// server a desktop application started) or `~`, it allows nothing. A root written as `/` or
/// `~` is the user's explicit choice and kept.
pub fn ceiling_root(root: &str, ctx: &Context) -> Option<PathBuf> {
    ceiling_root_with(root, ctx, &RealFs)
}

/// [`ceiling_root`] with the links resolved by `resolver`.
pub fn ceiling_root_with(root: &str, ctx: &Context, resolver: &dyn Resolver) -> Option<PathBuf> {
    let p = resolve_with(root, &ctx.cwd, ctx.home.as_deref(), resolver)?;
    let relative = !root.starts_with('/') && !root.starts_with('~');
    if relative && is_too_wide(&p, ctx.home.as_deref(), resolver) {
        return None;
    }
    Some(p)
}

/// `/`, or the home directory itself.
fn is_too_wide(p: &Path, home: Option<&Path>, resolver: &dyn Resolver) -> bool {
    if p.parent().is_none() {
        return true;
    }
    home.and_then(|h| resolve_with(&h.to_string_lossy(), Path::new("/"), None, resolver))
        .is_some_and(|h| h == p)
}

/// Expands a path as the intersection does: `~`, relative against `cwd`, `..` lexically, then
/// symbolic links through the longest existing prefix. `None` when it cannot be expanded
/// (empty, `~user`, `~` without a home, or `cwd` not absolute) or resolved (a dangling link, a
/// link loop, a directory that may not be searched, on the way).
pub fn resolve(path: &str, cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
    resolve_with(path, cwd, home, &RealFs)
}

/// [`resolve`] with the links resolved by `resolver`.
pub fn resolve_with(
    path: &str,
    cwd: &Path,
    home: Option<&Path>,
    resolver: &dyn Resolver,
) -> Option<PathBuf> {
    resolver.canonicalize(&expand_lexically(path, cwd, home)?)
}

/// The lexical part of [`resolve`]: `~`, relative against `cwd`, `.` and `..` folded (a `..` at
/// the root stays at the root). Touches no file system.
pub fn expand_lexically(path: &str, cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if path.is_empty() || path.contains('\0') {
        return None;
    }
    let joined = if path == "~" || path.starts_with("~/") {
        let home = home.filter(|h| h.is_absolute())?;
        home.join(path[1..].trim_start_matches('/'))
    } else if path.starts_with('~') {
        // `~user` names another account's home: never granted.
        return None;
    } else {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else if cwd.is_absolute() {
            cwd.join(p)
        } else {
            return None;
        }
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Canonicalises the longest prefix of an absolute, lexically clean path that exists, and
/// appends the rest (which does not exist, so holds no link to follow). `None` when an entry
/// exists but cannot be resolved: a dangling link (its target could be created anywhere), a
/// link loop, a directory that may not be searched.
fn canonicalize_existing_prefix(path: &Path) -> Option<PathBuf> {
    let mut prefix = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        match std::fs::canonicalize(prefix) {
            Ok(canonical) => {
                let mut out = canonical;
                out.extend(rest.iter().rev());
                return Some(out);
            }
            // The entry is there (a link, or behind a barrier): refuse rather than guess.
            Err(_) if std::fs::symlink_metadata(prefix).is_ok() => return None,
            Err(_) => {}
        }
        match (prefix.parent(), prefix.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                prefix = parent;
            }
            _ => return Some(path.to_path_buf()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(pairs: &[(&str, Value)]) -> Map {
        let mut m = Map::new();
        for (k, v) in pairs {
            m.insert((*k).to_string(), v.clone());
        }
        m
    }

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn list(items: &[&str]) -> Value {
        Value::List(items.iter().map(|s| text(s)).collect())
    }

    /// Each `(case, value, paths)`: `fs_read` and `fs_write` both given `value` (`prefix`ed,
    /// the map made a frontmatter by `wrap`) read as `paths`.
    fn check_paths(prefix: &str, wrap: impl Fn(Map) -> Map, cases: Vec<(&str, Value, Vec<&str>)>) {
        let (read, write) = (format!("{prefix}fs_read"), format!("{prefix}fs_write"));
        for (name, value, want) in cases {
            let caps = Capabilities::from_frontmatter(&wrap(fm(&[
                (&read, value.clone()),
                (&write, value),
            ])));
            assert_eq!(caps.fs_read, want, "{name}");
            assert_eq!(caps.fs_write, want, "{name}");
        }
    }

    #[test]
    fn path_forms() {
        let nested = Value::List(vec![
            text("a"),
            Value::Map(Map::new()),
            Value::List(vec![text("b")]),
            text("  "),
            text(" c "),
        ]);
        check_paths(
            "",
            |m| m,
            vec![
                ("string form", text("data"), vec!["data"]),
                (
                    "a blank is part of the path",
                    text("My Notes"),
                    vec!["My Notes"],
                ),
                ("list form", list(&["a", "b"]), vec!["a", "b"]),
                ("flow list form", list(&["./x", "~/y"]), vec!["./x", "~/y"]),
                ("empty string", text(""), vec![]),
                ("blank string", text("   "), vec![]),
                ("empty list", list(&[]), vec![]),
                ("non-text items skipped", nested, vec!["a", "c"]),
                ("a map is nothing", Value::Map(Map::new()), vec![]),
            ],
        );
        assert!(
            Capabilities::from_frontmatter(&Map::new())
                .fs_read
                .is_empty()
        );
    }

    #[test]
    fn the_metadata_spelling() {
        let in_metadata = |m: Map| fm(&[("metadata", Value::Map(m))]);
        let meta = |pairs: &[(&str, Value)]| in_metadata(fm(pairs));
        check_paths(
            METADATA_PREFIX,
            in_metadata,
            vec![
                ("one path", text("data"), vec!["data"]),
                (
                    "blank-separated",
                    text(" a  ~/b\t./c "),
                    vec!["a", "~/b", "./c"],
                ),
                (
                    "quoted blanks",
                    text("logs \"My Notes\" x"),
                    vec!["logs", "My Notes", "x"],
                ),
                ("unclosed quote", text("a \"b c"), vec!["a", "b c"]),
                ("empty quotes", text("\"\" a"), vec!["a"]),
                ("blank", text("   "), vec![]),
                ("a list", list(&["a b", "c"]), vec!["a b", "c"]),
                ("a map is nothing", Value::Map(Map::new()), vec![]),
            ],
        );
        let caps = Capabilities::from_frontmatter(&meta(&[
            ("skillcat.network", text("true")),
            ("skillcat.timeout", text("30")),
            ("skillcat.trust", text("core")),
            ("fs_read", text("not-a-capability-key-here")),
        ]));
        assert_eq!(
            caps,
            Capabilities {
                fs_read: vec![],
                fs_write: vec![],
                network: Network::All,
                timeout: Some(30),
                trust: Trust::Core,
            }
        );
        // Given both ways, the metadata key is the one read, value by value; a key given only
        // at the top level is still read.
        let mut both = meta(&[
            ("skillcat.fs_read", text("a b")),
            ("skillcat.network", text("false")),
        ]);
        both.insert("fs_read".into(), list(&["top"]));
        both.insert("network".into(), text("true"));
        both.insert("timeout".into(), text("9"));
        let caps = Capabilities::from_frontmatter(&both);
        assert_eq!(caps.fs_read, ["a", "b"]);
        assert!(caps.network.is_off());
        assert_eq!(caps.timeout, Some(9));
        // A top-level text is one path, blanks and all; `metadata` that is not a map is ignored.
        let caps = Capabilities::from_frontmatter(&fm(&[
            ("fs_read", text("My Notes")),
            ("metadata", text("skillcat.network: true")),
        ]));
        assert_eq!(caps.fs_read, ["My Notes"]);
        assert!(caps.network.is_off());
    }

    #[test]
    fn a_host_adds_paths_and_network_but_not_trust_or_time() {
        let declared = Capabilities {
            fs_read: vec!["a".into(), "b".into()],
            fs_write: vec![],
            network: Network::Off,
            timeout: Some(5),
            trust: Trust::External,
        };
        let extra = Capabilities {
            fs_read: vec!["b".into(), "c".into()],
            fs_write: vec!["out".into()],
            network: Network::All,
            timeout: Some(600),
            trust: Trust::Core,
        };
        let sum = declared.with(&extra);
        assert_eq!(sum.fs_read, ["a", "b", "c"]);
        assert_eq!(sum.fs_write, ["out"]);
        assert!(sum.network.is_all());
        assert_eq!(sum.timeout, Some(5));
        assert_eq!(sum.trust, Trust::External);
        assert_eq!(declared.with(&Capabilities::default()), declared);
    }

    #[test]
    fn network_values() {
        for (value, want) in [
            (Some(text("true")), true),
            (Some(text("True")), true),
            (Some(text("TRUE")), true),
            (Some(text(" true ")), true),
            (Some(text("false")), false),
            (Some(text("yes")), false),
            (Some(text("1")), false),
            (Some(text("on")), false),
            (Some(text("tRuE")), false),
            (Some(text("")), false),
            (Some(list(&["true"])), false),
            (None, false),
            (Some(text("api.github.com")), false),
            (Some(list(&["api.github.com"])), false),
        ] {
            let m = match &value {
                Some(v) => fm(&[("network", v.clone())]),
                None => Map::new(),
            };
            assert_eq!(
                Capabilities::from_frontmatter(&m).network.is_all(),
                want,
                "{value:?}"
            );
        }
    }

    #[test]
    fn timeout_values() {
        for (value, declared, secs) in [
            (None, None, 60),
            (Some(text("30")), Some(30), 30),
            (Some(text(" 30 ")), Some(30), 30),
            (Some(text("999")), Some(999), 999),
            (Some(text("0")), None, 60),
            (Some(text("-5")), None, 60),
            (Some(text("abc")), None, 60),
            (Some(text("1.5")), None, 60),
            (Some(text("1e3")), None, 60),
            (Some(text("99999999999999999999999")), None, 60),
            (Some(text("")), None, 60),
            (Some(list(&["30"])), None, 60),
        ] {
            let m = match &value {
                Some(v) => fm(&[("timeout", v.clone())]),
                None => Map::new(),
            };
            let caps = Capabilities::from_frontmatter(&m);
            assert_eq!(caps.timeout, declared, "{value:?}");
            assert_eq!(caps.timeout_secs(), secs, "{value:?}");
        }
    }

    #[test]
    fn trust_values() {
        for (value, want) in [
            (Some(text("core")), Trust::Core),
            (Some(text(" core ")), Trust::Core),
            (Some(text("external")), Trust::External),
            (Some(text("Core")), Trust::External),
            (Some(text("root")), Trust::External),
            (Some(text("")), Trust::External),
            (Some(list(&["core"])), Trust::External),
            (None, Trust::External),
        ] {
            let m = match &value {
                Some(v) => fm(&[("trust", v.clone())]),
                None => Map::new(),
            };
            assert_eq!(Capabilities::from_frontmatter(&m).trust, want, "{value:?}");
        }
    }

    #[test]
    fn timeout_against_ceiling() {
        let ctx = Context {
            cwd: "/p".into(),
            home: None,
            core_trusted_source: false,
        };
        let ceiling = |timeout, max_timeout| Ceiling {
            timeout,
            max_timeout,
            ..Ceiling::default()
        };
        for (declared, c, want) in [
            ("0", ceiling(60, 60), 60),
            ("-5", ceiling(60, 60), 60),
            ("abc", ceiling(60, 60), 60),
            ("999", ceiling(60, 60), 60),
            ("999", ceiling(300, 600), 300),
            ("30", ceiling(60, 60), 30),
            ("30", ceiling(10, 60), 10),
            ("5", ceiling(0, 60), 1),
            ("999", ceiling(900, 120), 120),
            ("abc", ceiling(30, 30), 30),
            ("abc", ceiling(300, 300), 60),
            ("10", ceiling(60, 0), 1),
        ] {
            let caps = Capabilities::from_frontmatter(&fm(&[("timeout", text(declared))]));
            let g = intersect(&caps, &c, &ctx);
            assert_eq!(
                g.timeout,
                Duration::from_secs(want),
                "{declared} vs {}/{}",
                c.timeout,
                c.max_timeout
            );
        }
    }

    #[test]
    fn network_and_trust_against_ceiling() {
        for (asks, allows, want) in [
            (true, true, true),
            (true, false, false),
            (false, true, false),
            (false, false, false),
        ] {
            let caps = Capabilities {
                network: Network::from_bool(asks),
                ..Capabilities::default()
            };
            let c = Ceiling {
                network: Network::from_bool(allows),
                ..Ceiling::default()
            };
            let ctx = Context {
                cwd: "/p".into(),
                home: None,
                core_trusted_source: false,
            };
            assert_eq!(
                intersect(&caps, &c, &ctx).network,
                Network::from_bool(want),
                "{asks} {allows}"
            );
        }
        // Host lists: the set intersection (the table is `network::tests::intersection_table`).
        for (asks, allows, want) in [
            ("api.github.com", "true", "api.github.com"),
            ("api.github.com", "false", "false"),
            ("true", "*.github.com", "*.github.com"),
            ("*.github.com", "api.github.com:443", "api.github.com:443"),
        ] {
            let caps = Capabilities {
                network: Network::parse(asks).unwrap(),
                ..Capabilities::default()
            };
            let c = Ceiling {
                network: Network::parse(allows).unwrap(),
                ..Ceiling::default()
            };
            let ctx = Context {
                cwd: "/p".into(),
                home: None,
                core_trusted_source: false,
            };
            let i = intersect_detailed(&caps, &c, &ctx);
            assert_eq!(i.grant.network.to_string(), want, "{asks} ∩ {allows}");
        }
        for (declared, core_source, want) in [
            (Trust::Core, true, Trust::Core),
            (Trust::Core, false, Trust::External),
            (Trust::External, true, Trust::External),
            (Trust::External, false, Trust::External),
        ] {
            let caps = Capabilities {
                trust: declared,
                ..Capabilities::default()
            };
            let ctx = Context {
                cwd: "/p".into(),
                home: None,
                core_trusted_source: core_source,
            };
            let g = intersect(&caps, &Ceiling::default(), &ctx);
            assert_eq!(g.trust, want, "{declared:?} from core source {core_source}");
            assert_eq!(g.is_core(), want == Trust::Core);
        }
    }

    #[test]
    fn lexical_expansion() {
        let cwd = Path::new("/home/u/proj");
        let home = Some(Path::new("/home/u"));
        for (input, home, want) in [
            (".", home, Some("/home/u/proj")),
            ("./data", home, Some("/home/u/proj/data")),
            ("data/../..", home, Some("/home/u")),
            ("./data/../..", home, Some("/home/u")),
            ("../../../../..", home, Some("/")),
            ("/etc/../etc/./ssl", home, Some("/etc/ssl")),
            ("~", home, Some("/home/u")),
            ("~/x", home, Some("/home/u/x")),
            ("~//x", home, Some("/home/u/x")),
            ("~/x", None, None),
            ("~root/x", home, None),
            ("", home, None),
            ("a\0b", home, None),
        ] {
            assert_eq!(
                expand_lexically(input, cwd, home),
                want.map(PathBuf::from),
                "{input:?}"
            );
        }
        assert_eq!(expand_lexically("x", Path::new("rel"), None), None);
    }

    /// A file system of links only: each `(link, target)` rewrites a path that starts with the
    /// link (whole components), repeatedly; a path under a `broken` entry cannot be resolved
    /// (a dangling link, a loop, an unsearchable directory).
    fn fake<'a>(
        links: &'a [(&'a str, &'a str)],
        broken: &'a [&'a str],
    ) -> impl Fn(&Path) -> Option<PathBuf> + 'a {
        move |path: &Path| {
            let mut p = path.to_path_buf();
            'follow: for _ in 0..40 {
                if broken.iter().any(|b| p.starts_with(b)) {
                    return None;
                }
                for (link, target) in links {
                    if let Ok(rest) = p.strip_prefix(link) {
                        p = Path::new(target).join(rest);
                        continue 'follow;
                    }
                }
                return Some(p);
            }
            None
        }
    }

    /// (case, access, requested, ceiling, home, granted)
    type Case<'a> = (
        &'a str,
        Access,
        &'a str,
        &'a Ceiling,
        Option<&'a str>,
        Option<&'a str>,
    );

    /// Checks each case against a fake file system: cwd /p (holding data/), home /h; links:
    /// /p/out → /etc, /p/in → /p/data, /p/store → /srv/store; /p/dangling cannot be resolved.
    fn check_intersections(cases: &[Case<'_>]) {
        let links = [
            ("/p/out", "/etc"),
            ("/p/in", "/p/data"),
            ("/p/store", "/srv/store"),
        ];
        let resolver = fake(&links, &["/p/dangling"]);
        let ctx = |home: Option<&str>| Context {
            cwd: "/p".into(),
            home: home.map(PathBuf::from),
            core_trusted_source: false,
        };
        for &(case, access, requested, ceiling, home, granted) in cases {
            let caps = match access {
                Access::Read => Capabilities {
                    fs_read: vec![requested.to_string()],
                    ..Capabilities::default()
                },
                Access::Write => Capabilities {
                    fs_write: vec![requested.to_string()],
                    ..Capabilities::default()
                },
            };
            let r = intersect_with(&caps, ceiling, &ctx(home), &resolver);
            let got = match access {
                Access::Read => &r.grant.fs_read,
                Access::Write => &r.grant.fs_write,
            };
            let want: Vec<PathBuf> = granted.into_iter().map(PathBuf::from).collect();
            assert_eq!(got, &want, "{case}");
            assert_eq!(r.dropped.len(), usize::from(granted.is_none()), "{case}");
            if let Some(d) = r.dropped.first() {
                assert_eq!(
                    (d.access, d.requested.as_str()),
                    (access, requested),
                    "{case}"
                );
            }
        }
    }

    /// The ceilings of the cases: `.`, `~` to read, `./store` to write.
    fn ceilings() -> (Ceiling, Ceiling, Ceiling) {
        let dot = Ceiling::default();
        let home_ceiling = Ceiling {
            fs_read: vec!["~".into()],
            ..Ceiling::default()
        };
        let store = Ceiling {
            fs_read: vec![],
            fs_write: vec!["./store".into()],
            ..Ceiling::default()
        };
        (dot, home_ceiling, store)
    }

    /// Relative and absolute paths are granted inside the working directory, never by climbing out of it.
    #[test]
    fn intersection_keeps_paths_inside_the_working_directory() {
        let (dot, _, _) = ceilings();
        check_intersections(&[
            (
                "plain relative",
                Access::Read,
                "data",
                &dot,
                None,
                Some("/p/data"),
            ),
            ("the root itself", Access::Read, ".", &dot, None, Some("/p")),
            (
                "climbs out through data",
                Access::Read,
                "./data/../..",
                &dot,
                None,
                None,
            ),
            (
                "climbs and comes back",
                Access::Read,
                "./data/../data",
                &dot,
                None,
                Some("/p/data"),
            ),
            ("/etc under .", Access::Read, "/etc", &dot, None, None),
            (
                "absolute inside",
                Access::Read,
                "/p/data",
                &dot,
                None,
                Some("/p/data"),
            ),
        ]);
    }

    /// A link is followed: granted when its target stays inside, dropped when it leads out or cannot be resolved.
    #[test]
    fn intersection_follows_links_only_where_they_stay_inside() {
        let (dot, _, _) = ceilings();
        check_intersections(&[
            (
                "link smuggling out",
                Access::Read,
                "./out/passwd",
                &dot,
                None,
                None,
            ),
            ("the smuggling link", Access::Read, "out", &dot, None, None),
            (
                "link staying in",
                Access::Read,
                "in/f",
                &dot,
                None,
                Some("/p/data/f"),
            ),
            (
                "dangling link",
                Access::Read,
                "dangling/x",
                &dot,
                None,
                None,
            ),
        ]);
    }

    /// `~` is the user's own home, granted only under a ceiling that holds it.
    #[test]
    fn intersection_of_home_paths() {
        let (dot, home_ceiling, _) = ceilings();
        check_intersections(&[
            ("~/x outside .", Access::Read, "~/x", &dot, Some("/h"), None),
            (
                "~/x under ~",
                Access::Read,
                "~/x",
                &home_ceiling,
                Some("/h"),
                Some("/h/x"),
            ),
            (
                "~/x without a home",
                Access::Read,
                "~/x",
                &home_ceiling,
                None,
                None,
            ),
            (
                "another user's home",
                Access::Read,
                "~root",
                &home_ceiling,
                Some("/h"),
                None,
            ),
        ]);
    }

    /// A write is granted only under a write root (a linked one by its target); a read under one too.
    #[test]
    fn intersection_of_write_roots() {
        let (dot, _, store) = ceilings();
        check_intersections(&[
            (
                "write under a read root",
                Access::Write,
                "data",
                &dot,
                None,
                None,
            ),
            (
                "write under a linked write root",
                Access::Write,
                "store/a",
                &store,
                None,
                Some("/srv/store/a"),
            ),
            (
                "write to the link's target",
                Access::Write,
                "/srv/store",
                &store,
                None,
                Some("/srv/store"),
            ),
            (
                "read under a write root",
                Access::Read,
                "/srv/store/a",
                &store,
                None,
                Some("/srv/store/a"),
            ),
            (
                "sibling of a write root",
                Access::Write,
                "/srv/other",
                &store,
                None,
                None,
            ),
        ]);
    }

    #[test]
    fn dropped_paths_say_what_they_expanded_to() {
        let links = [("/p/out", "/etc")];
        let resolver = fake(&links, &["/p/loop"]);
        let ctx = Context {
            cwd: "/p".into(),
            home: None,
            core_trusted_source: false,
        };
        let caps = Capabilities {
            fs_read: vec![
                "out/shadow".into(),
                "loop".into(),
                "~/x".into(),
                "data".into(),
                "./data".into(),
            ],
            ..Capabilities::default()
        };
        let r = intersect_with(&caps, &Ceiling::default(), &ctx, &resolver);
        assert_eq!(
            r.grant.fs_read,
            [PathBuf::from("/p/data")],
            "one entry per path"
        );
        let dropped: Vec<(&str, Option<&Path>)> = r
            .dropped
            .iter()
            .map(|d| (d.requested.as_str(), d.expanded.as_deref()))
            .collect();
        assert_eq!(
            dropped,
            [
                ("out/shadow", Some(Path::new("/etc/shadow"))),
                ("loop", None),
                ("~/x", None),
            ]
        );
    }

    #[test]
    fn ceiling_roots_go_through_the_resolver_too() {
        // A root that cannot be resolved allows nothing, even the path it names.
        let resolver = fake(&[], &["/p"]);
        let ctx = Context {
            cwd: "/p".into(),
            home: None,
            core_trusted_source: false,
        };
        let caps = Capabilities {
            fs_read: vec!["/p".into()],
            ..Capabilities::default()
        };
        let r = intersect_with(&caps, &Ceiling::default(), &ctx, &resolver);
        assert!(r.grant.fs_read.is_empty());
        // The resolver is all the intersection sees: a root linked elsewhere moves with it.
        let links = [("/p", "/q")];
        let resolver = fake(&links, &[]);
        let r = intersect_with(&caps, &Ceiling::default(), &ctx, &resolver);
        assert_eq!(r.grant.fs_read, [PathBuf::from("/q")]);
        assert_eq!(
            resolve_with("./a/../b", Path::new("/p"), None, &resolver),
            Some(PathBuf::from("/q/b"))
        );
    }
}
