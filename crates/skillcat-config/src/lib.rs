//! Configuration: one TOML file, `skillcat.toml`, or a value built in code — below every crate
//! that reads it (the runtime, the command line), so that they read the same parsed tables.
//!
//! ```text
//! skillcat.toml
//! ├── [[sources]]        path, name, trusted, core   in precedence order (first wins)
//! ├── [sandbox]          the capability ceiling and run limits          → capability::Ceiling
//! ├── [scripts]          interpreters (name → absolute path), by_extension (py → python3),
//! │                      extension_fields
//! ├── keyring, cache_dir paths
//! ├── [prompt]           budget (characters of the tier-1 block)
//! ├── [matcher]          mode, top, weight, cache, model_dir, [matcher.bm25], [matcher.embedder]
//! ├── [install]          require_signatures, audit = "refuse" | "warn" (add / install / update)
//! └── [runtime]          audit = "off" | "withhold" (the tools `mcp` offers)
//!                        → matching::MatcherConfig
//! ```
//!
//! Where it comes from ([`Config::discover`]): the file named with `--config`, else
//! `./skillcat.toml` when it exists — the **project's** file, narrowed to what the user's own
//! configuration allows until the user trusts the project (`skillcat trust project`, which
//! records it in the user's `trusted_projects`) — else the user's own file
//! (`~/.config/skillcat/skillcat.toml`), else the defaults ([`Config::defaults`]):
//!
//! 1. every `.agents/skills` directory from the working directory up to the repository root
//!    (the first ancestor holding `.git`; without one, the working directory alone), nearest
//!    first, untrusted — when none exists, the repository root's, which is then an empty source;
//! 2. the user's `~/.agents/skills`, trusted.
//!
//! A file without `[[sources]]` gets those default sources too; every other section has its
//! own defaults (see `docs/config.md` for the whole format with an example). Relative paths in
//! `sources`, `keyring` and `cache_dir` are taken against the directory holding the file, and
//! `~` against the home directory; the `[sandbox]` paths are kept as written and expanded when a
//! grant is computed (against the working directory of the run, see [`skillcat_core::capability`]).
//!
//! Reading is strict: an unknown key, a value of the wrong type or an impossible value is a
//! [`ConfigError`] naming the key and its `line:column`.
//!
//! ```
//! use skillcat_config::{Config, Environment};
//!
//! let env = Environment { cwd: "/work/proj".into(), home: Some("/home/me".into()) };
//! let text = r#"
//! [[sources]]
//! path = "skills"
//! trusted = true
//!
//! [sandbox]
//! network = true
//! "#;
//! let config = Config::parse(text, None, &env).unwrap();
//! assert_eq!(config.sources[0].path, "/work/proj/skills");
//! assert!(config.sandbox.network.is_all());
//!
//! let err = Config::parse("[sandbox]\nnetwork = \"yes\"\n", None, &env).unwrap_err();
//! assert!(err.to_string().contains("2:11: sandbox.network"), "{err}");
//! ```

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::matcher::MatcherConfig;
use skillcat_core::capability::{Ceiling, EXTENSION_FIELDS};
use skillcat_core::document::ValidateOptions;
use skillcat_core::prompt::{PromptFormat, PromptOptions};

pub mod matcher;
mod parse;
mod policy;
pub use policy::{Policy, PolicyError};
mod trust;
pub use trust::{ProjectTrust, TrustError, create_private_dir, trust_project};

/// The name of the configuration file looked for in the working directory.
pub const FILE_NAME: &str = "skillcat.toml";

/// The working and home directories a configuration is read against, as the caller read them
/// (the `skillcat` facade's `context::Env` is the one reader of the process's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// The home directory (`$HOME`), when known.
    pub home: Option<PathBuf>,
}

/// One source of skills, in precedence order in [`Config::sources`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceConfig {
    /// Anything `skillcat_sources::open` accepts; relative paths already resolved.
    pub path: String,
    /// A name for reports (default: the path as written).
    pub name: Option<String>,
    /// Whether its skills may run scripts.
    pub trusted: bool,
    /// Core-trusted: its `trust: core` skills count as core. Implies `trusted`.
    pub core: bool,
}

impl SourceConfig {
    /// An untrusted source.
    pub fn new(path: impl Into<String>) -> Self {
        SourceConfig {
            path: path.into(),
            name: None,
            trusted: false,
            core: false,
        }
    }

    /// Names the source.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Marks the source trusted (its skills may run scripts).
    pub fn trusted(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// Marks the source core-trusted (and so trusted).
    pub fn core(mut self, core: bool) -> Self {
        self.core = core;
        self.trusted |= core;
        self
    }

    /// The name reports use: [`name`](Self::name), else the path.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.path)
    }
}

/// The `[scripts]` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScriptsConfig {
    /// Interpreters scripts may name, by name (`python3`) → absolute path (`/usr/bin/python3`).
    pub interpreters: BTreeMap<String, PathBuf>,
    /// File extensions (`py`, no dot) → the interpreter name (`python3`) that runs a file of
    /// `scripts/` with that extension when it is not executable or has no `#!` line; still
    /// refused when the interpreter is not allowed. Empty by default (such files are skipped).
    pub by_extension: BTreeMap<String, String>,
    /// Whether validation admits the capability keys (`fs_read fs_write network timeout trust
    /// scripts`) as extension fields.
    pub extension_fields: bool,
}

/// The `[prompt]` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromptConfig {
    /// The most characters of the tier-1 block (`None`: no limit).
    pub budget: Option<usize>,
}

/// The `[install]` section: how `skillcat add`, `install` and `update` verify what they install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InstallConfig {
    /// Refuse skills that no key of the keyring signed (as `--require-signature`).
    pub require_signatures: bool,
    /// What to do with a skill the audit finds a high finding in: `"refuse"` (the default) or
    /// `"warn"` (as `--allow-findings`).
    pub audit: Policy,
}

/// The `[runtime]` section: how `skillcat mcp` (and a session built from this configuration)
/// treats what it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RuntimeConfig {
    /// Whether the tools of a skill the audit finds a high finding in are withheld.
    pub audit: RuntimeAudit,
}

/// `[runtime] audit`: `"off"` (the default: every skill's tools are offered, as they were
/// installed after an audit) or `"withhold"` (each skill is audited when the server starts;
/// one with a high finding keeps its instructions and files but offers no tool, and a
/// diagnostic says why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuntimeAudit {
    /// Offer every skill's tools.
    #[default]
    Off,
    /// Withhold the tools of a skill with a high finding.
    Withhold,
}

/// The whole configuration. Fields are public; the `with_*` methods build one in code.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Config {
    /// The file it was read from, when it was.
    pub origin: Option<PathBuf>,
    /// Sources in precedence order: the first that offers a name wins.
    pub sources: Vec<SourceConfig>,
    /// The capability ceiling and run limits (`[sandbox]`).
    pub sandbox: Ceiling,
    /// The `[scripts]` section.
    pub scripts: ScriptsConfig,
    /// The keyring of trusted signing keys.
    pub keyring: Option<PathBuf>,
    /// Where remote sources keep their cache.
    pub cache_dir: Option<PathBuf>,
    /// `max_index_age`, in seconds: the longest a cached remote index is used without asking
    /// its server, whatever its `max-age` says (`--max-index-age` overrides; `None`: 1 hour).
    pub max_index_age: Option<u64>,
    /// The `[prompt]` section.
    pub prompt: PromptConfig,
    /// The `[matcher]` section: how `skillcat match` ranks skills.
    pub matcher: MatcherConfig,
    /// The `[install]` section.
    pub install: InstallConfig,
    /// The `[runtime]` section.
    pub runtime: RuntimeConfig,
    /// `[skills.NAME]` tables: what the operator grants one skill's scripts on top of what it
    /// declares (`allow_read`, `allow_write`, `allow_net`: the meaning of `skillcat run
    /// --allow-read/--allow-write/--allow-net`), keyed by the skill's name. The ceiling
    /// (`[sandbox]`) still bounds the sum.
    pub skills: BTreeMap<String, SkillGrants>,
    /// Projects whose own `skillcat.toml` the user trusts (`trusted_projects`, written by
    /// `skillcat trust project`): canonical directories, each with the digest of the file
    /// trusted. Read from the user's configuration only; a project's file cannot trust itself.
    pub trusted_projects: Vec<TrustedProject>,
    /// Set when this is a project's `skillcat.toml` the user has not trusted: the project's
    /// directory. Such a file was narrowed to what the user's own configuration allows
    /// ([`Config::narrowed_by`]).
    pub untrusted_project: Option<PathBuf>,
    /// Set (with [`untrusted_project`](Self::untrusted_project)) when the user trusted the
    /// project but its `skillcat.toml` is not the file trusted: changed since, or trusted
    /// before digests were recorded. It counts as untrusted until trusted again.
    pub changed_project: bool,
}

/// A `[skills.NAME]` table: the operator's grants to one skill's scripts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SkillGrants {
    /// `allow_read`: paths its scripts may read (relative ones against the working directory).
    pub allow_read: Vec<String>,
    /// `allow_write`: paths its scripts may write (and read).
    pub allow_write: Vec<String>,
    /// `allow_net`: `true`, or the host patterns its scripts may reach through their proxy.
    pub allow_net: skillcat_core::capability::Network,
}

impl SkillGrants {
    /// The grants of the table for `skill` (its name; `-` and `_` alike, as `skillcat run NAME`
    /// takes it), when there is one.
    pub fn for_skill<'a>(
        tables: &'a BTreeMap<String, SkillGrants>,
        skill: &str,
    ) -> Option<&'a SkillGrants> {
        let fold = |s: &str| s.replace('_', "-");
        tables.get(skill).or_else(|| {
            tables
                .iter()
                .find(|(k, _)| fold(k) == fold(skill))
                .map(|(_, v)| v)
        })
    }
}

/// A project the user trusts (`trusted_projects`): its directory and the file it trusted.
///
/// A project is trusted by **content**: the sha256 of its `skillcat.toml` when it was trusted.
/// A file that differs (rewritten by anyone, a script with a write grant included) is not
/// trusted until `skillcat trust project` records it again. An entry written before digests
/// were recorded (a bare path, `trusted_projects = ["/dir"]`) trusts no content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedProject {
    /// The project's canonical directory.
    pub dir: PathBuf,
    /// `sha256:<hex>` of the project's `skillcat.toml` as trusted; `None` for an entry from
    /// before digests were recorded.
    pub sha256: Option<String>,
}

impl TrustedProject {
    /// Whether this entry trusts `dir` (canonical) with a file of digest `sha256`.
    pub fn trusts(&self, dir: &Path, sha256: &str) -> bool {
        self.sha256.as_deref() == Some(sha256) && self.names(dir)
    }

    /// Whether this entry is about `dir` (canonical), whatever content it trusted.
    pub fn names(&self, dir: &Path) -> bool {
        std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone()) == dir
    }
}

/// A configuration that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML, or not a valid configuration.
    #[error("{}", invalid_display(origin, *line, *column, message))]
    Invalid {
        /// The file (or `<config>` for text given directly).
        origin: String,
        /// 1-based line of the offending key or value, when known.
        line: Option<usize>,
        /// 1-based column (in characters), when known.
        column: Option<usize>,
        /// The dotted key, e.g. `sandbox.network` or `sources[1].trusted`, when known.
        key: Option<String>,
        /// What is wrong, naming the key.
        message: String,
    },
}

fn invalid_display(
    origin: &str,
    line: Option<usize>,
    column: Option<usize>,
    message: &str,
) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{origin}:{l}:{c}: {message}"),
        _ => format!("{origin}: {message}"),
    }
}

impl From<ConfigError> for skillcat_core::Error {
    /// An unreadable file is an [`Error::Io`](skillcat_core::Error::Io); every other configuration error
    /// keeps its type as the cause of an [`Error::Other`](skillcat_core::Error::Other).
    fn from(e: ConfigError) -> Self {
        match e {
            ConfigError::Io { path, source } => skillcat_core::Error::Io { path, source },
            other => skillcat_core::Error::other("configuration", other),
        }
    }
}

impl Config {
    /// No sources, every section at its default.
    pub fn new() -> Self {
        Config::default()
    }

    /// The configuration when there is no file: project `.agents/skills` directories up to the
    /// repository root (untrusted), then `~/.agents/skills` (trusted).
    pub fn defaults(env: &Environment) -> Self {
        Config {
            sources: default_sources(env),
            ..Config::default()
        }
    }

    /// The file named (`--config`), else `./skillcat.toml` when it exists, else the user's
    /// configuration ([`user_file`](Self::user_file)) when it exists, else
    /// [`defaults`](Self::defaults).
    ///
    /// A `./skillcat.toml` is the project's, not the user's: unless the user's configuration
    /// lists the project in `trusted_projects` (`skillcat trust project`), it is narrowed to
    /// what the user's configuration allows ([`narrowed_by`](Self::narrowed_by)), so a checkout
    /// cannot widen its own ceiling, trust its own sources or name its own interpreters.
    pub fn discover(explicit: Option<&Path>, env: &Environment) -> Result<Self, ConfigError> {
        if let Some(path) = explicit {
            let path = if path.is_absolute() {
                path.to_path_buf()
            } else {
                env.cwd.join(path)
            };
            return Self::load(&path, env);
        }
        let user = match Self::user_file(env) {
            Some(f) if f.is_file() => Self::load(&f, env)?,
            _ => Self::defaults(env),
        };
        let local = env.cwd.join(FILE_NAME);
        if local.is_file() {
            // One read: the bytes hashed are the bytes parsed.
            let bytes = std::fs::read(&local).map_err(|e| ConfigError::Io {
                path: local.display().to_string(),
                source: e,
            })?;
            let text = std::str::from_utf8(&bytes).map_err(|e| ConfigError::Io {
                path: local.display().to_string(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?;
            let project = Self::parse(text, Some(&local), env)?;
            let dir = std::fs::canonicalize(&env.cwd).unwrap_or_else(|_| env.cwd.clone());
            let digest = skillcat_core::digest::sha256_digest(&bytes);
            let trusted = &user.trusted_projects;
            if trusted.iter().any(|p| p.trusts(&dir, &digest)) {
                return Ok(project);
            }
            let changed = trusted.iter().any(|p| p.names(&dir));
            let mut narrowed = project.narrowed_by(&user, env, &dir);
            narrowed.changed_project = changed;
            return Ok(narrowed);
        }
        Ok(user)
    }

    /// The user's own configuration file: `$HOME/.config/skillcat/skillcat.toml` (`None`
    /// without a home directory).
    pub fn user_file(env: &Environment) -> Option<PathBuf> {
        env.home
            .as_ref()
            .filter(|h| h.is_absolute())
            .map(|h| h.join(".config/skillcat").join(FILE_NAME))
    }

    /// This (a project's) configuration, allowed no more than `user` allows: ceiling roots only
    /// beneath the user's (expanded now, against `env`), network only if both allow it, every
    /// limit the smaller of the two; a source trusted or core only when the user's
    /// configuration trusts that same source; the user's interpreters, keyring and cache
    /// directory; `[skills.NAME]` grants only within the user's own table for that skill; no
    /// `trusted_projects`. `project` is the project's directory, recorded in
    /// [`untrusted_project`](Self::untrusted_project).
    pub fn narrowed_by(self, user: &Config, env: &Environment, project: &Path) -> Config {
        // Every field is named here, none skipped with `..`: a field added to `Config` does not
        // compile until this says how a project's file may set it (the class of a project
        // setting something no one decided to narrow: its `[skills.NAME]` grants were one).
        let Config {
            origin,
            mut sources,
            sandbox: mut p,
            mut scripts,
            keyring: _,
            cache_dir: _,
            max_index_age,
            prompt,
            matcher,
            mut install,
            mut runtime,
            skills,
            trusted_projects: _,
            untrusted_project: _,
            changed_project,
        } = self;
        let ctx = skillcat_core::capability::Context {
            cwd: env.cwd.clone(),
            home: env.home.clone(),
            core_trusted_source: false,
        };
        let expand = |roots: &[String]| -> Vec<PathBuf> {
            roots
                .iter()
                .filter_map(|r| skillcat_core::capability::ceiling_root(r, &ctx))
                .collect()
        };
        let user_write = expand(&user.sandbox.fs_write);
        let mut user_read = expand(&user.sandbox.fs_read);
        user_read.extend(user_write.iter().cloned());
        let within = |roots: &[String], allowed: &[PathBuf]| -> Vec<String> {
            expand(roots)
                .into_iter()
                .filter(|p| allowed.iter().any(|a| p.starts_with(a)))
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        };
        let u = &user.sandbox;
        p.fs_read = within(&p.fs_read, &user_read);
        p.fs_write = within(&p.fs_write, &user_write);
        // A project may protect more, never less.
        let mut protect = u.protect.clone();
        protect.extend(p.protect.drain(..).filter(|x| !u.protect.contains(x)));
        p.protect = protect;
        // Hosts both allow; and only the pins the user's own file has (a pin lets a name reach
        // a private address, which a checkout may not decide).
        p.network = p.network.intersect(&u.network).0;
        p.resolve.retain(|pin| u.resolve.contains(pin));
        p.max_timeout = p.max_timeout.min(u.max_timeout);
        p.timeout = p.timeout.min(u.timeout).min(p.max_timeout);
        p.memory = p.memory.min(u.memory);
        p.processes = p.processes.min(u.processes);
        p.output = p.output.min(u.output);
        p.workspace_bytes = p.workspace_bytes.min(u.workspace_bytes);
        p.workspace_files = p.workspace_files.min(u.workspace_files);
        let canon = |s: &str| std::fs::canonicalize(s).unwrap_or_else(|_| PathBuf::from(s));
        for src in &mut sources {
            let same = user
                .sources
                .iter()
                .find(|us| us.path == src.path || canon(&us.path) == canon(&src.path));
            src.trusted &= same.is_some_and(|us| us.trusted);
            src.core &= same.is_some_and(|us| us.core);
        }
        scripts.interpreters = user.scripts.interpreters.clone();
        scripts.by_extension = user.scripts.by_extension.clone();
        // A project may ask for signatures; it cannot waive the user's demand for them.
        install.require_signatures |= user.install.require_signatures;
        // Nor can it accept what the user's audit policy refuses, or offer tools the user's
        // configuration withholds.
        install.audit = install.audit.stricter(user.install.audit);
        if user.runtime.audit == RuntimeAudit::Withhold {
            runtime.audit = RuntimeAudit::Withhold;
        }
        // A project's grants to a skill count as far as the user's own table for that skill
        // grants: paths beneath the user's, hosts both allow; a skill the user grants nothing
        // gets nothing from a checkout.
        let skills = skills
            .into_iter()
            .filter_map(|(name, g)| {
                let own = SkillGrants::for_skill(&user.skills, &name)?;
                let own_write = expand(&own.allow_write);
                let mut own_read = expand(&own.allow_read);
                own_read.extend(own_write.iter().cloned());
                let narrowed = SkillGrants {
                    allow_read: within(&g.allow_read, &own_read),
                    allow_write: within(&g.allow_write, &own_write),
                    allow_net: g.allow_net.intersect(&own.allow_net).0,
                };
                Some((name, narrowed))
            })
            .collect();
        Config {
            origin,
            sources,
            sandbox: p,
            scripts,
            keyring: user.keyring.clone(),
            cache_dir: user.cache_dir.clone(),
            // A project may ask its index to be fresher than the user does, never staler.
            max_index_age: match (max_index_age, user.max_index_age) {
                (Some(p), Some(u)) => Some(p.min(u)),
                (p, u) => p.or(u),
            },
            // The prompt's budget and the matcher's weights shape what a model is shown, not
            // what may run or be installed: the project's own.
            prompt,
            matcher,
            install,
            runtime,
            skills,
            trusted_projects: Vec::new(),
            untrusted_project: Some(project.to_path_buf()),
            changed_project,
        }
    }

    /// Reads one file.
    pub fn load(path: &Path, env: &Environment) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Self::parse(&text, Some(path), env)
    }

    /// Parses configuration text. `origin` is the file it came from: relative paths are taken
    /// against its directory (against the working directory without one) and errors name it.
    pub fn parse(
        text: &str,
        origin: Option<&Path>,
        env: &Environment,
    ) -> Result<Self, ConfigError> {
        parse::parse(text, origin, env)
    }

    /// Adds a source after the others (lowest precedence so far).
    pub fn with_source(mut self, source: SourceConfig) -> Self {
        self.sources.push(source);
        self
    }

    /// Sets the ceiling.
    pub fn with_sandbox(mut self, ceiling: Ceiling) -> Self {
        self.sandbox = ceiling;
        self
    }

    /// Allows an interpreter.
    pub fn with_interpreter(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.scripts.interpreters.insert(name.into(), path.into());
        self
    }

    /// Runs files of `scripts/` with this extension (`py`, no dot) by this interpreter name
    /// (`python3`) when they are not executable or have no `#!` line.
    pub fn with_extension(mut self, extension: impl Into<String>, name: impl Into<String>) -> Self {
        self.scripts
            .by_extension
            .insert(extension.into(), name.into());
        self
    }

    /// Admits (or not) the capability keys in validation.
    pub fn with_extension_fields(mut self, on: bool) -> Self {
        self.scripts.extension_fields = on;
        self
    }

    /// Sets the keyring.
    pub fn with_keyring(mut self, path: impl Into<PathBuf>) -> Self {
        self.keyring = Some(path.into());
        self
    }

    /// Sets the cache directory of remote sources.
    pub fn with_cache_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(path.into());
        self
    }

    /// Sets the prompt budget.
    pub fn with_prompt_budget(mut self, budget: Option<usize>) -> Self {
        self.prompt.budget = budget;
        self
    }

    /// Sets the `[matcher]` section.
    pub fn with_matcher(mut self, matcher: MatcherConfig) -> Self {
        self.matcher = matcher;
        self
    }

    /// How to validate skills under this configuration: the capability keys and `scripts` are
    /// known extension fields when `[scripts] extension_fields = true`.
    pub fn validate_options(&self) -> ValidateOptions {
        let mut opts = ValidateOptions::default();
        if self.scripts.extension_fields {
            for f in EXTENSION_FIELDS {
                opts = opts.allow_field(f);
            }
        }
        opts
    }

    /// Prompt options with the configured budget.
    pub fn prompt_options(&self, format: PromptFormat) -> PromptOptions {
        PromptOptions {
            format,
            budget: self.prompt.budget,
            omit_when_empty: false,
        }
    }

    /// The capability ceiling.
    pub fn ceiling(&self) -> &Ceiling {
        &self.sandbox
    }
}

/// Project `.agents/skills` from `cwd` up to the repository root, then the user's.
fn default_sources(env: &Environment) -> Vec<SourceConfig> {
    let mut dirs: Vec<&Path> = Vec::new();
    for dir in env.cwd.ancestors() {
        dirs.push(dir);
        if dir.join(".git").exists() {
            break;
        }
    }
    if !env.cwd.ancestors().any(|d| d.join(".git").exists()) {
        dirs.truncate(1);
    }
    let project_root = dirs.last().copied().unwrap_or(&env.cwd);
    let mut sources: Vec<SourceConfig> = dirs
        .iter()
        .map(|d| d.join(".agents").join("skills"))
        .filter(|p| p.is_dir())
        .map(|p| SourceConfig::new(p.display().to_string()))
        .collect();
    if sources.is_empty() {
        let p = project_root.join(".agents").join("skills");
        sources.push(SourceConfig::new(p.display().to_string()));
    }
    for s in &mut sources {
        s.name = Some(format!("project:{}", s.path));
    }
    if let Some(home) = &env.home {
        let p = home.join(".agents").join("skills").display().to_string();
        sources.push(
            SourceConfig::new(&p)
                .named(format!("user:{p}"))
                .trusted(true),
        );
    }
    sources
}

/// A path as written in the file, made absolute: `~` against the home directory, relative
/// against `base`. What is not spelled as a path (a URL, a `sqlite:`, `oci://` or git
/// specification: [`SourceSpec::is_path_spelling`]) is kept as written.
fn resolve_spec(spec: &str, base: &Path, home: Option<&Path>) -> String {
    if !skillcat_core::source::SourceSpec::is_path_spelling(spec) {
        return spec.to_string();
    }
    let joined = match (spec.strip_prefix('~'), home) {
        (Some(""), Some(h)) => h.to_path_buf(),
        (Some(rest), Some(h)) if rest.starts_with('/') => h.join(rest.trim_start_matches('/')),
        _ => base.join(spec),
    };
    let clean: PathBuf = joined
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    clean.display().to_string()
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

/// The dotted key whose name or value covers `offset` (the innermost one).
fn key_at(text: &str, offset: usize) -> Option<String> {
    use toml::de::{DeTable, DeValue};

    fn walk(table: &DeTable<'_>, prefix: &str, offset: usize, best: &mut Option<(usize, String)>) {
        for (k, v) in table.iter() {
            let path = if prefix.is_empty() {
                k.get_ref().to_string()
            } else {
                format!("{prefix}.{}", k.get_ref())
            };
            for span in [k.span(), v.span()] {
                if span.contains(&offset) || (span.is_empty() && span.start == offset) {
                    let width = span.end - span.start;
                    if best.as_ref().is_none_or(|(w, _)| width <= *w) {
                        *best = Some((width, path.clone()));
                    }
                }
            }
            visit(v.get_ref(), &path, offset, best);
        }
    }

    fn visit(v: &DeValue<'_>, path: &str, offset: usize, best: &mut Option<(usize, String)>) {
        match v {
            DeValue::Table(t) => walk(t, path, offset, best),
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    let span = item.span();
                    if span.contains(&offset) {
                        let width = span.end - span.start;
                        if best.as_ref().is_none_or(|(w, _)| width <= *w) {
                            *best = Some((width, p.clone()));
                        }
                    }
                    visit(item.get_ref(), &p, offset, best);
                }
            }
            _ => {}
        }
    }

    let doc = DeTable::parse(text).ok()?;
    let mut best = None;
    walk(doc.get_ref(), "", offset, &mut best);
    best.map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project is trusted by its file's digest: each way an entry can fail to trust the file
    /// at hand, one named case; and a bare path from before digests parses, trusting nothing.
    #[test]
    fn a_trusted_project_trusts_one_content_only() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let now = "sha256:aa";
        let entry = |d: &Path, sha: Option<&str>| TrustedProject {
            dir: d.to_path_buf(),
            sha256: sha.map(str::to_string),
        };
        for (name, e, trusts, names) in [
            ("the file trusted", entry(&dir, Some(now)), true, true),
            ("changed since", entry(&dir, Some("sha256:bb")), false, true),
            (
                "a bare path (before digests)",
                entry(&dir, None),
                false,
                true,
            ),
            (
                "another project",
                entry(Path::new("/elsewhere"), Some(now)),
                false,
                false,
            ),
        ] {
            assert_eq!(e.trusts(&dir, now), trusts, "{name}");
            assert_eq!(e.names(&dir), names, "{name}");
        }
        let env = Environment {
            cwd: dir.clone(),
            home: None,
        };
        let text = "trusted_projects = [\"/p\", { path = \"/q\", sha256 = \"sha256:cc\" }]\n";
        let c = Config::parse(text, None, &env).unwrap();
        assert_eq!(
            c.trusted_projects,
            [
                entry(Path::new("/p"), None),
                entry(Path::new("/q"), Some("sha256:cc"))
            ]
        );
    }

    #[test]
    fn a_project_can_lower_the_index_age_cap_never_raise_it() {
        let env = Environment {
            cwd: "/work/proj".into(),
            home: Some("/home/me".into()),
        };
        let parse = |t: &str| Config::parse(t, None, &env).unwrap();
        assert_eq!(parse("max_index_age = 600\n").max_index_age, Some(600));
        assert_eq!(parse("").max_index_age, None);
        assert!(Config::parse("max_index_age = \"1h\"\n", None, &env).is_err());
        let user = parse("max_index_age = 600\n");
        let dir = Path::new("/work/proj");
        for (project, want) in [
            ("max_index_age = 60\n", 60),
            ("max_index_age = 999999\n", 600),
            ("", 600),
        ] {
            let got = parse(project).narrowed_by(&user, &env, dir).max_index_age;
            assert_eq!(got, Some(want), "{project:?}");
        }
    }

    /// A project's `[skills.NAME]` grants count only as far as the user's own table for that
    /// skill grants (an untrusted checkout's file widened a skill's reads before).
    #[test]
    fn a_projects_skill_grants_are_narrowed_by_the_users_own() {
        let env = Environment {
            cwd: "/work/proj".into(),
            home: Some("/home/me".into()),
        };
        let parse = |t: &str| Config::parse(t, None, &env).unwrap();
        let project = parse(
            "[skills.reader]\nallow_read = [\"data/a.txt\", \"/etc/passwd\"]\n\
             allow_write = [\"out\"]\nallow_net = [\"api.example.com\", \"evil.example\"]\n\
             [skills.other]\nallow_read = [\"data\"]\n",
        );
        let dir = Path::new("/work/proj");
        let none = project.clone().narrowed_by(&parse(""), &env, dir);
        assert!(none.skills.is_empty(), "{:?}", none.skills);
        let user = parse(
            "[skills.reader]\nallow_read = [\"/work/proj/data\"]\nallow_net = [\"api.example.com\"]\n",
        );
        let got = project.narrowed_by(&user, &env, dir).skills;
        assert_eq!(got.keys().collect::<Vec<_>>(), ["reader"]);
        let r = &got["reader"];
        assert_eq!(r.allow_read, ["/work/proj/data/a.txt"]);
        assert!(r.allow_write.is_empty(), "{:?}", r.allow_write);
        assert_eq!(r.allow_net.to_string(), "api.example.com");
    }

    #[test]
    fn line_col_counts_characters() {
        let t = "a = 1\nné = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        assert_eq!(line_col(t, t.find('=').unwrap()), (1, 3));
        assert_eq!(line_col(t, t.rfind('=').unwrap()), (2, 4));
        assert_eq!(line_col(t, t.len()), (3, 1));
    }

    #[test]
    fn spec_resolution() {
        let base = Path::new("/etc/sk");
        let home = Some(Path::new("/home/me"));
        for (spec, want) in [
            ("skills", "/etc/sk/skills"),
            ("./skills", "/etc/sk/skills"),
            ("/abs/x.tar.gz", "/abs/x.tar.gz"),
            ("~/s", "/home/me/s"),
            ("~", "/home/me"),
            ("https://h/x", "https://h/x"),
            ("sqlite:reg.db", "sqlite:reg.db"),
            // Git and OCI spellings are not paths either.
            ("git@host:o/r.git", "git@host:o/r.git"),
            ("github:o/r", "github:o/r"),
            ("git+file:///srv/r", "git+file:///srv/r"),
            ("oci://h/r:1", "oci://h/r:1"),
        ] {
            assert_eq!(resolve_spec(spec, base, home), want, "{spec}");
        }
        assert_eq!(resolve_spec("~/s", base, None), "/etc/sk/~/s");
    }

    #[test]
    fn skills_tables_grant_one_skill_each() {
        let env = Environment {
            cwd: "/work/proj".into(),
            home: None,
        };
        let text = "[skills.csv-stats]\nallow_read = [\"data\"]\nallow_net = [\"api.github.com\"]\n\n\
                    [skills.writer]\nallow_write = [\"out\"]\nallow_net = true\n";
        let c = Config::parse(text, None, &env).unwrap();
        let csv = SkillGrants::for_skill(&c.skills, "csv_stats").unwrap();
        assert_eq!(csv.allow_read, ["data"]);
        assert_eq!(
            csv.allow_net,
            skillcat_core::capability::Network::from_patterns(["api.github.com"]).unwrap()
        );
        let w = SkillGrants::for_skill(&c.skills, "writer").unwrap();
        assert_eq!(w.allow_write, ["out"]);
        assert!(w.allow_net.is_all());
        assert!(SkillGrants::for_skill(&c.skills, "other").is_none());
        let bad = Config::parse("[skills.x]\nallow_net = [\"http://x\"]\n", None, &env);
        assert!(
            bad.unwrap_err().to_string().contains("skills.x.allow_net"),
            "the key is named"
        );
        assert!(Config::parse("[skills.x]\nallow = []\n", None, &env).is_err());
    }
}
