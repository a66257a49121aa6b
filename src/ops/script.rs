//! What `run`, `tools` and `mcp` share: a session over the sources named, the grant a run asks
//! for on top of a skill's declaration checked against the configured ceiling, where to widen
//! that ceiling, and what a skill's tools are.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value as Json;

use crate::capability::{self, Access, Capabilities, Context, Grant, Network, PatternError};
use crate::catalog::{Catalog, CatalogOptions, CatalogSource};
use crate::config::{Config, Environment};
use crate::runtime::{Activation, Run, RuntimeError, Session, ToolKind};
use crate::script::argv::{ParamKind, Params};
use crate::script::denial::{self, Denial, Reach, RunPlace};
use crate::script::{
    AllowAll, LeftFile, NetworkReport, ScriptError, ScriptTool, SkillTools, UserDirs, WorkspaceBase,
};
use crate::source::{Discovery, Source};

/// Whether the source `arg` lies in a source the configuration marks core-trusted.
pub fn core_trusted(config: &Config, arg: &str) -> bool {
    let Ok(arg) = std::fs::canonicalize(arg) else {
        return false;
    };
    config
        .sources
        .iter()
        .filter(|s| s.core)
        .any(|s| std::fs::canonicalize(&s.path).is_ok_and(|root| arg.starts_with(root)))
}

/// A source the user named: trusted for script tools (the user named it), and core-trusted
/// when it lies in a source the configuration marks core-trusted (only then does a skill's
/// `trust: core` count).
pub fn named_source(config: &Config, arg: &str, src: CatalogSource) -> CatalogSource {
    src.trusted(true).core_trusted(core_trusted(config, arg))
}

/// A session with the configured ceiling, limits and interpreters
/// ([`SessionBuilder::configure`](crate::runtime::SessionBuilder::configure)), every skill
/// granted `extra` on top of its declaration, and a gate that allows every call (only skills of
/// trusted sources get tools at all).
pub fn session(
    config: &Config,
    env: Environment,
    catalog: Catalog,
    dirs: UserDirs,
    extra: Capabilities,
) -> Result<Session, ScriptError> {
    Ok(Session::builder(catalog)
        .user_dirs(dirs)
        .configure(config, env, Arc::new(AllowAll))?
        .granted(extra)
        .build())
}

/// A source the user named, as it was opened and read.
pub struct Named {
    /// The source as typed.
    pub arg: String,
    /// The source as shown.
    pub shown: String,
    /// The source opened.
    pub source: Arc<dyn Source>,
    /// What reading it found.
    pub found: Discovery,
}

impl Named {
    /// A source shown as it was typed.
    pub fn typed(arg: &str, source: Arc<dyn Source>, found: Discovery) -> Self {
        Named {
            arg: arg.to_string(),
            shown: arg.to_string(),
            source,
            found,
        }
    }
}

/// Why a run of a named skill could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration's (an unacceptable interpreter).
    #[error(transparent)]
    Config(ScriptError),
    /// The session could not be made.
    #[error(transparent)]
    Session(ScriptError),
    /// The skill could not be activated.
    #[error(transparent)]
    Activate(RuntimeError),
}

/// A run of a session ([`session`]) over the source named, its discovery seeding the catalog
/// (the source is read once), with the skill `name` active.
pub async fn start(
    config: &Config,
    env: &Environment,
    named: Named,
    name: &str,
    extra: Capabilities,
    dirs: UserDirs,
    options: CatalogOptions,
) -> Result<Run, StartError> {
    let src = CatalogSource::discovered(named.shown, named.source, named.found);
    let sources = vec![named_source(config, &named.arg, src)];
    let catalog = Catalog::with_options(sources, options);
    let session = session(config, env.clone(), catalog, dirs, extra).map_err(|e| {
        if is_config_error(&e) {
            StartError::Config(e)
        } else {
            StartError::Session(e)
        }
    })?;
    let mut run = session.start();
    run.activate(name).await.map_err(StartError::Activate)?;
    Ok(run)
}

/// Whether a [`session`] error is the configuration's (an unacceptable interpreter) rather than
/// a fault.
pub fn is_config_error(e: &ScriptError) -> bool {
    matches!(e, ScriptError::InvalidDeclaration { .. })
}

/// A host a run asks for that is not a host pattern.
#[derive(Debug, thiserror::Error)]
#[error("{host}: {}", source.why)]
pub struct HostPatternError {
    /// The host as asked for.
    pub host: String,
    /// Why it is not one.
    #[source]
    pub source: PatternError,
}

/// What a run asks for on top of a skill's declaration: paths to read, paths to write (and
/// read), and hosts to reach (an empty one: the whole network).
pub fn asked(
    read: &[String],
    write: &[String],
    hosts: &[String],
) -> Result<Capabilities, HostPatternError> {
    let mut network = Network::Off;
    for h in hosts {
        let n = if h.is_empty() {
            Network::All
        } else {
            Network::from_patterns([h.as_str()]).map_err(|source| HostPatternError {
                host: h.clone(),
                source,
            })?
        };
        network = network.union(&n);
    }
    Ok(Capabilities {
        fs_read: read.to_vec(),
        fs_write: write.to_vec(),
        network,
        ..Capabilities::default()
    })
}

/// Why a grant asked for on top of a skill's declaration cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantFault {
    /// The path cannot be resolved (an empty path, `~user`, a dangling link or a link loop).
    Unresolvable {
        /// Reading or writing.
        access: Access,
        /// The path as asked for.
        path: String,
    },
    /// The path does not exist: a grant binds an existing file or directory.
    Missing {
        /// Reading or writing.
        access: Access,
        /// The path as asked for.
        path: String,
        /// The path resolved.
        full: PathBuf,
    },
    /// The path lies outside the configured ceiling, which wins.
    OutsideCeiling {
        /// Reading or writing.
        access: Access,
        /// The path as asked for.
        path: String,
        /// The path resolved.
        full: PathBuf,
    },
    /// The whole network, where the ceiling allows less (`ceiling`).
    NetworkAll {
        /// The configured ceiling's network.
        ceiling: Network,
    },
    /// A host pattern outside the ceiling's network (`ceiling`).
    HostOutside {
        /// The pattern asked for.
        host: String,
        /// The configured ceiling's network.
        ceiling: Network,
    },
}

/// What of `extra` a run cannot honour, each in turn: a path that cannot be resolved or does
/// not exist, one outside the configured ceiling, network the ceiling does not allow. Empty
/// when all of it can be granted.
pub fn check_grants(extra: &Capabilities, config: &Config, env: &Environment) -> Vec<GrantFault> {
    let ctx = context(env);
    let mut faults = Vec::new();
    for (access, paths) in [
        (Access::Read, &extra.fs_read),
        (Access::Write, &extra.fs_write),
    ] {
        for p in paths {
            let path = p.clone();
            match capability::resolve(p, &ctx.cwd, ctx.home.as_deref()) {
                None => faults.push(GrantFault::Unresolvable { access, path }),
                Some(full) if std::fs::symlink_metadata(&full).is_err() => {
                    faults.push(GrantFault::Missing { access, path, full })
                }
                Some(full) if !ceiling_reaches(config, env, access, &full) => {
                    faults.push(GrantFault::OutsideCeiling { access, path, full })
                }
                Some(_) => {}
            }
        }
    }
    let ceiling = &config.ceiling().network;
    match &extra.network {
        Network::All if !ceiling.is_all() => faults.push(GrantFault::NetworkAll {
            ceiling: ceiling.clone(),
        }),
        hosts @ Network::Hosts(_) => {
            for host in hosts.outside(ceiling) {
                faults.push(GrantFault::HostOutside {
                    host: host.to_string(),
                    ceiling: ceiling.clone(),
                });
            }
        }
        _ => {}
    }
    faults
}

fn context(env: &Environment) -> Context {
    Context {
        cwd: env.cwd.clone(),
        home: env.home.clone(),
        core_trusted_source: false,
    }
}

/// Whether the configured ceiling lets a run read (or write) `path`.
pub fn ceiling_reaches(config: &Config, env: &Environment, access: Access, path: &Path) -> bool {
    let p = path.to_string_lossy().into_owned();
    let caps = match access {
        Access::Read => Capabilities {
            fs_read: vec![p],
            ..Capabilities::default()
        },
        Access::Write => Capabilities {
            fs_write: vec![p],
            ..Capabilities::default()
        },
    };
    capability::intersect_detailed(&caps, config.ceiling(), &context(env))
        .dropped
        .is_empty()
}

/// What the ceiling allows for `access`, and where to widen it to reach `path`: in the file
/// read (`config_file`, as the caller names it), or, for a project's file the user has not
/// trusted (it counts only as far as the user's own configuration allows), trusting the project
/// when that file lists the path, else the user's own configuration.
pub fn ceiling_advice(
    config: &Config,
    env: &Environment,
    access: Access,
    path: &Path,
    config_file: &str,
) -> String {
    let ctx = context(env);
    let ceiling = config.ceiling();
    let roots = |list: &[String]| -> Vec<String> {
        list.iter()
            .filter_map(|r| capability::ceiling_root(r, &ctx))
            .map(|p| p.display().to_string())
            .collect()
    };
    let (mut allowed, key) = match access {
        Access::Read => (roots(&ceiling.fs_read), "fs_read"),
        Access::Write => (roots(&ceiling.fs_write), "fs_write"),
    };
    if access == Access::Read {
        allowed.extend(roots(&ceiling.fs_write));
    }
    let verb = if access == Access::Read {
        "reading"
    } else {
        "writing"
    };
    let now = if allowed.is_empty() {
        format!("it allows {verb} nowhere")
    } else {
        format!("it allows {verb} under {}", allowed.join(", "))
    };
    // A relative root that expands to nothing: started in `/` or the home directory.
    let written = match access {
        Access::Read => &ceiling.fs_read,
        Access::Write => &ceiling.fs_write,
    };
    let unexpanded = written
        .iter()
        .find(|r| !r.starts_with(['/', '~']) && capability::ceiling_root(r, &ctx).is_none());
    let why = match unexpanded {
        Some(r) => format!(
            " (`{r}` allows nothing when the working directory is / or your home directory; \
             write \"~\" or an absolute path to mean them)"
        ),
        None => String::new(),
    };
    if let (Some(project), Some(file)) = (&config.untrusted_project, &config.origin) {
        let user = Config::user_file(env).map_or_else(
            || "your own configuration".to_string(),
            |f| f.display().to_string(),
        );
        // The project's file as written, before the user's configuration narrowed it.
        let listed =
            Config::load(file, env).is_ok_and(|own| ceiling_reaches(&own, env, access, path));
        return if listed {
            format!(
                "{now}{why}. The project's {} lists it, but you have not trusted this project, so \
                 its file counts only as far as your own configuration ({user}) allows: run \
                 `skillcat trust project` in {} to let it apply in full, or add the path, or a \
                 directory above it, to `{key}` under [sandbox] in {user}",
                file.display(),
                project.display()
            )
        } else {
            format!(
                "{now}{why}; add it, or a directory above it, to `{key}` under [sandbox] in your \
                 own configuration ({user}) — the project's {} counts only as far as that \
                 allows, as you have not trusted the project (`skillcat trust project`)",
                file.display()
            )
        };
    }
    format!(
        "{now}{why}; add it, or a directory above it, to `{key}` under [sandbox] in {config_file}"
    )
}

/// Where a failed run's script was kept from paths: its grant, and the caller's directory.
pub struct Denials {
    /// Each path the output reports the sandbox kept the script from (or that it looked for in
    /// its work directory while it is in the caller's).
    pub denials: Vec<Denial>,
    /// The caller's directory, canonical, when it has one.
    pub caller: Option<PathBuf>,
}

/// The paths a failed run's `output` says the sandbox kept its script from, under `grant`
/// (the skill's script grant), for a run made in `env` with the workspaces of `dirs`; `args`
/// are the run's arguments (a path they name may be suggested wherever it lies:
/// [`RunPlace::named`]).
pub fn denials(
    output: &str,
    grant: &Grant,
    env: &Environment,
    dirs: &UserDirs,
    args: &serde_json::Value,
) -> Denials {
    let named = denial::argument_words(args);
    let caller = std::fs::canonicalize(&env.cwd).ok();
    let workspaces = WorkspaceBase::default_dir(dirs);
    let workspaces = std::fs::canonicalize(&workspaces).unwrap_or(workspaces);
    let system = crate::script::sandbox::system_read_paths(grant.network.any());
    // The caller's home and root's: their hidden files are never suggested for a grant.
    let mut homes: Vec<PathBuf> = env.home.iter().cloned().collect();
    homes.push(PathBuf::from("/root"));
    let place = RunPlace {
        grant,
        caller: caller.as_deref(),
        started_in_caller: caller
            .as_deref()
            .is_some_and(|c| crate::script::start_dir(grant, c).is_some()),
        system: &system,
        workspaces: &workspaces,
        homes: &homes,
        named: &named,
    };
    Denials {
        denials: denial::denials(output, &place),
        caller,
    }
}

/// What would let a script reach a path the sandbox kept it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantHint {
    /// The path to grant, as the user would type it (relative to the working directory when in
    /// it).
    pub target: String,
    /// Reading or writing.
    pub access: Access,
    /// The frontmatter key that declares it (`skillcat.fs_read`, `skillcat.fs_write`).
    pub key: &'static str,
    /// Where to widen the configured ceiling ([`ceiling_advice`]), when it does not reach the
    /// path either.
    pub ceiling: Option<String>,
}

/// The grant that would reach the path of `d` for a run made in `caller` (`None` when no grant
/// may be suggested for it); `config_file` names the file to widen the ceiling in.
pub fn grant_hint(
    d: &Denial,
    caller: Option<&Path>,
    config: &Config,
    env: &Environment,
    config_file: &str,
) -> Option<GrantHint> {
    let grant = d.grant.as_deref()?;
    let (key, access) = match d.reach {
        Reach::NotGranted if grant == d.path => ("skillcat.fs_read", Access::Read),
        Reach::InCallerDir => ("skillcat.fs_read", Access::Read),
        _ => ("skillcat.fs_write", Access::Write),
    };
    // A path in the working directory is shown as the user would type it.
    let target = match caller.and_then(|c| grant.strip_prefix(c).ok()) {
        Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Some(rel) => rel.display().to_string(),
        None => grant.display().to_string(),
    };
    let ceiling = (!ceiling_reaches(config, env, access, grant))
        .then(|| ceiling_advice(config, env, access, grant, config_file));
    Some(GrantHint {
        target,
        access,
        key,
        ceiling,
    })
}

/// Why a path granted by `run_grant` (`d`) still kept out a script run as the unprivileged uid
/// 65534 on a root host, and what would let it in: whether it is granted for writing, and the
/// advice.
pub fn permission_advice(d: &Denial, run_grant: &Grant) -> (bool, String) {
    let grant = d.grant.as_deref().unwrap_or(&d.path);
    let write = run_grant.fs_write.iter().any(|g| d.path.starts_with(g));
    let able = if write { "writable" } else { "readable" };
    // Root's own files in a granted tree are mapped to the script's uid when the tree's top is
    // root's (a view covers closed directories above a grant): what is left is another owner's
    // file, a root file in another owner's tree, or a tree that cannot be mapped.
    let holding = run_grant
        .fs_read
        .iter()
        .chain(&run_grant.fs_write)
        .filter(|g| d.path.starts_with(g))
        .map(|g| (g, owner(g)))
        .collect::<Vec<_>>();
    let root_tree = holding.iter().any(|(_, o)| *o == Some(0));
    let deepest = holding.iter().max_by_key(|(g, _)| g.components().count());
    let why = match (owner(grant), deepest) {
        // A root file in a tree the helper did not map because another user owns it.
        (Some(0), Some((top, top_owner))) if !root_tree => {
            let uid = top_owner.map_or("another user".to_string(), |u| format!("uid {u}"));
            format!(
                "root's files in a granted directory are the script's only where root owns the \
                 directory granted; {} belongs to {uid}, so root's files in it stay root's and \
                 their permissions keep uid 65534 out: make {} {able} by others.",
                top.display(),
                grant.display()
            )
        }
        // A root file in root's tree (or one not found among the grants).
        (Some(0), _) => format!(
            "root's files in a granted directory are the script's, but not in this one: it holds \
             skillcat's workspaces or lies on a file system without idmapped mounts. Grant a \
             directory beneath it, or make it {able} by others."
        ),
        (Some(uid), _) => format!(
            "root's own files in a granted directory are the script's, but {} belongs to uid \
             {uid} and its permissions keep uid 65534 out: make it {able} by others, or run \
             skillcat as uid {uid}.",
            grant.display()
        ),
        (None, _) => format!("its permissions keep that user out: make it {able} by others."),
    };
    (write, why)
}

/// The owner of a file, when it can be seen.
fn owner(p: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| m.uid())
}

/// What loading the skill's scripts found: its script tools, or the error.
pub fn script_tools(a: &Activation) -> Result<SkillTools, ScriptError> {
    if let Some(e) = a.script_error() {
        return Err(e.clone());
    }
    Ok(a.script_tools().cloned().unwrap_or_else(|| SkillTools {
        // A skill without scripts offers none.
        skill: a.name.clone(),
        tools: Vec::new(),
        skipped: Vec::new(),
    }))
}

/// A skill's tools as a run of it offers them (`skillcat tools`).
#[derive(Debug, Serialize)]
pub struct ToolsReport {
    /// The skill.
    pub skill: String,
    /// Its script tools the run offers, each with its JSON Schema as `parameters`.
    pub tools: Vec<Json>,
    /// Scripts that are not tools, and why.
    pub skipped: Vec<SkippedScript>,
    /// Its guest tools (JavaScript, confined).
    pub guest_tools: Vec<GuestTool>,
    /// Why declared guest tools are not offered.
    pub guest_notes: Vec<String>,
    /// What its scripts may reach.
    pub grant: Option<GrantReport>,
    /// Notes on tool names two tools contest (neither is offered).
    #[serde(skip)]
    pub contested: Vec<String>,
    /// The script tools offered, as loaded.
    #[serde(skip)]
    pub found: SkillTools,
}

/// A script that is not a tool.
#[derive(Debug, Serialize)]
pub struct SkippedScript {
    /// Its path in the skill.
    pub path: String,
    /// The error's code.
    pub code: &'static str,
    /// The error.
    pub message: String,
}

/// A guest tool.
#[derive(Debug, Serialize)]
pub struct GuestTool {
    /// Its tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its JSON Schema.
    pub parameters: Json,
    /// Whether its skill is trusted.
    pub trusted: bool,
}

/// A grant as `skillcat tools` shows it.
#[derive(Debug, Serialize)]
pub struct GrantReport {
    /// Paths readable.
    pub fs_read: Vec<PathBuf>,
    /// Paths writable.
    pub fs_write: Vec<PathBuf>,
    /// The network.
    pub network: Network,
    /// The timeout, in seconds.
    pub timeout_seconds: u64,
    /// The trust level.
    pub trust: String,
}

impl From<&Grant> for GrantReport {
    fn from(g: &Grant) -> Self {
        GrantReport {
            fs_read: g.fs_read.clone(),
            fs_write: g.fs_write.clone(),
            network: g.network.clone(),
            timeout_seconds: g.timeout.as_secs(),
            trust: g.trust.as_str().to_string(),
        }
    }
}

/// The tools a run with its first skill active offers: only those the run offers (a contested
/// name, two tools one name but for case or `-`/`_`, is offered by neither).
pub fn tools_report(run: &Run) -> Result<ToolsReport, ScriptError> {
    let activation = &run.activations()[0];
    let mut found = script_tools(activation)?;
    let offered: Vec<String> = run.tools().map(|t| t.name.clone()).collect();
    found.tools.retain(|t| offered.contains(&t.name));
    let notes = |p: fn(&String) -> bool| activation.notes.iter().filter(move |n| p(n)).cloned();
    Ok(ToolsReport {
        skill: found.skill.clone(),
        tools: found.tools.iter().map(|t| t.to_json()).collect(),
        skipped: found
            .skipped
            .iter()
            .map(|s| SkippedScript {
                path: s.path.clone(),
                code: s.error.code(),
                message: s.error.to_string(),
            })
            .collect(),
        guest_tools: run
            .tools()
            .filter(|t| t.kind == ToolKind::Guest)
            .map(|t| GuestTool {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters.clone(),
                trusted: t.trusted,
            })
            .collect(),
        guest_notes: notes(|n| n.starts_with("guest tool")).collect(),
        grant: activation.script_grant().map(GrantReport::from),
        contested: notes(|n| n.starts_with("tool ") && n.contains("contested")).collect(),
        found,
    })
}

/// A tool's parameters as `skillcat tools` lists them: `args?: string (split like a shell)` for
/// a script without declared ones, else each `name?: type`, `(positional)` marked.
pub fn params_text(params: &Params) -> String {
    match params {
        Params::Implicit => "args?: string (split like a shell)".to_string(),
        Params::Declared(list) if list.is_empty() => "(none)".to_string(),
        Params::Declared(list) => list
            .iter()
            .map(|p| {
                format!(
                    "{}{}: {}{}",
                    p.name,
                    if p.required { "" } else { "?" },
                    p.ty.as_str(),
                    if p.kind == ParamKind::Positional {
                        " (positional)"
                    } else {
                        ""
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The grant of a skill's scripts, one line per part (`grant: read …`, `grant: write …`,
/// `grant: network …`, `grant: timeout …`). Paths are as they are: a terminal needs them
/// escaped.
pub fn grant_lines(g: &Grant) -> Vec<String> {
    let paths = |p: &[PathBuf]| {
        if p.is_empty() {
            "nothing".to_string()
        } else {
            p.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    vec![
        format!("grant: read {}", paths(&g.fs_read)),
        format!("grant: write {}", paths(&g.fs_write)),
        format!(
            "grant: network {}",
            match &g.network {
                Network::Off => "none".to_string(),
                Network::All => "all (no proxy)".to_string(),
                n @ Network::Hosts(_) =>
                    format!("{n} (through the run's proxy; no port means 80 and 443)"),
            }
        ),
        format!(
            "grant: timeout {} s, trust {}",
            g.timeout.as_secs(),
            g.trust.as_str()
        ),
    ]
}

/// The tool a run of a skill calls by a name.
#[derive(Debug)]
pub enum Target {
    /// A guest tool (JavaScript, confined), by its full name.
    Guest(String),
    /// A script tool.
    Script(ScriptTool),
}

/// Why a run has no tool of a name.
#[derive(Debug, thiserror::Error)]
pub enum FindToolError {
    /// A guest tool the skill declares but the run does not offer: the note says why.
    #[error("{0}")]
    Withheld(String),
    /// No script is the tool, or the skill's scripts could not be loaded.
    #[error(transparent)]
    Script(#[from] ScriptError),
}

/// The tool `script` of the run's first skill: a guest tool by its name, else a script tool by
/// its full name or its name part; a declared guest tool that is not offered says why, not that
/// no script has the name.
pub fn find_tool(run: &Run, script: &str) -> Result<Target, FindToolError> {
    if let Some(t) = run
        .tools()
        .find(|t| t.kind == ToolKind::Guest && t.name == script)
    {
        return Ok(Target::Guest(t.name.clone()));
    }
    let activation = &run.activations()[0];
    let withheld = format!("guest tool '{script}' ");
    if let Some(note) = activation
        .notes
        .iter()
        .find(|n| n.starts_with("guest tool") && n.contains(&withheld))
    {
        return Err(FindToolError::Withheld(note.clone()));
    }
    let tools = script_tools(activation)?;
    match tools.find(script) {
        Some(t) => Ok(Target::Script(t.clone())),
        None => Err(match tools.skipped(script) {
            Some(s) => s.error.clone(),
            None => ScriptError::NotFound {
                tool: script.to_string(),
            },
        }
        .into()),
    }
}

/// The network hosts a skill asks for (its declaration with `granted` on top) that the
/// configured ceiling leaves out.
pub fn network_outside_ceiling(
    a: &Activation,
    granted: &Capabilities,
    config: &Config,
) -> Vec<String> {
    let asked = a.entry().capabilities().with(granted).network;
    let (_, outside) = asked.intersect(&config.ceiling().network);
    outside.iter().map(ToString::to_string).collect()
}

/// Where to widen the configured ceiling's network (in `config_file`, as the caller names it):
/// a project's file the user has not trusted counts only as far as the user's own allows.
pub fn network_widen_advice(config: &Config, config_file: &str) -> String {
    match (&config.untrusted_project, &config.origin) {
        (Some(_), Some(file)) => format!(
            "the project's {} counts only as far as your own configuration allows until you run \
             `skillcat trust project`",
            file.display()
        ),
        _ => format!("widen `[sandbox] network` in {config_file}"),
    }
}

/// How many of the files a script left [`left_names`] names; the rest are counted.
pub const LEFT_SHOWN: usize = 10;

/// The files a script left in its work directory as a note names them: the first
/// [`LEFT_SHOWN`] with their sizes (paths as they are: a terminal needs them escaped), then how
/// many more.
pub fn left_names(left: &[LeftFile]) -> Vec<String> {
    let mut names: Vec<String> = left
        .iter()
        .take(LEFT_SHOWN)
        .map(|f| {
            let name = f.path.to_string_lossy();
            if f.regular {
                format!("{name} ({} bytes)", f.size)
            } else {
                format!("{name} (not a regular file)")
            }
        })
        .collect();
    if left.len() > LEFT_SHOWN {
        names.push(format!("and {} more", left.len() - LEFT_SHOWN));
    }
    names
}

/// The targets (`host:port`) the run's proxy refused as outside its grant that the configured
/// ceiling does not allow either: granting them for a run alone would be refused.
pub fn refused_outside_ceiling<'a>(n: &'a NetworkReport, config: &Config) -> Vec<&'a str> {
    let ceiling = &config.ceiling().network;
    n.refused
        .iter()
        .filter(|r| r.why == crate::script::proxy::NOT_GRANTED)
        .filter(|r| {
            r.target
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
                .is_some_and(|(host, port)| !ceiling.allows(host, port))
        })
        .map(|r| r.target.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration read in `dir` (the working and home directory) from `text`.
    fn config(dir: &Path, text: &str) -> (Config, Environment) {
        let env = Environment {
            cwd: dir.to_path_buf(),
            home: Some(dir.to_path_buf()),
        };
        (Config::parse(text, None, &env).unwrap(), env)
    }

    #[test]
    fn grants_beyond_the_ceiling_or_the_disk_are_each_a_fault() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["in", "out"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        let inside = root.join("in");
        let text = format!(
            "[sandbox]\nfs_read = [{:?}]\nnetwork = [\"api.example.com\"]\n",
            inside
        );
        let (config, env) = config(&root, &text);
        let extra = Capabilities {
            fs_read: vec!["in".into(), "missing".into(), "out".into()],
            fs_write: vec![String::new()],
            network: Network::from_patterns(["api.example.com", "evil.example.net"]).unwrap(),
            ..Capabilities::default()
        };
        let faults = check_grants(&extra, &config, &env);
        assert_eq!(faults.len(), 4, "{faults:?}");
        assert!(faults.contains(&GrantFault::Missing {
            access: Access::Read,
            path: "missing".into(),
            full: root.join("missing"),
        }));
        assert!(faults.contains(&GrantFault::OutsideCeiling {
            access: Access::Read,
            path: "out".into(),
            full: root.join("out"),
        }));
        assert!(faults.contains(&GrantFault::Unresolvable {
            access: Access::Write,
            path: String::new(),
        }));
        assert!(
            matches!(&faults[3], GrantFault::HostOutside { host, .. } if host == "evil.example.net")
        );
        // The ceiling's hosts are not the whole network.
        let all = Capabilities {
            network: Network::All,
            ..Capabilities::default()
        };
        assert!(matches!(
            check_grants(&all, &config, &env).as_slice(),
            [GrantFault::NetworkAll {
                ceiling: Network::Hosts(_)
            }]
        ));
        assert!(check_grants(&Capabilities::default(), &config, &env).is_empty());
    }

    #[test]
    fn the_ceiling_advice_says_what_it_allows_and_where_to_widen_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let inside = root.join("in");
        std::fs::create_dir(&inside).unwrap();
        let text = format!("[sandbox]\nfs_read = [{inside:?}]\n");
        let (config, env) = config(&root, &text);
        let out = root.join("out");
        assert!(ceiling_reaches(&config, &env, Access::Read, &inside));
        assert!(!ceiling_reaches(&config, &env, Access::Read, &out));
        assert!(!ceiling_reaches(&config, &env, Access::Write, &inside));
        let advice = ceiling_advice(&config, &env, Access::Read, &out, "FILE");
        assert_eq!(
            advice,
            format!(
                "it allows reading under {}; add it, or a directory above it, to `fs_read` under \
                 [sandbox] in FILE",
                inside.display()
            )
        );
        let advice = ceiling_advice(&config, &env, Access::Write, &out, "FILE");
        assert!(
            advice.starts_with("it allows writing nowhere; "),
            "{advice}"
        );
    }

    #[test]
    fn a_named_source_is_core_trusted_only_inside_a_core_source() {
        let dir = tempfile::tempdir().unwrap();
        let core = dir.path().join("core");
        std::fs::create_dir_all(core.join("skill")).unwrap();
        let text = format!("[[sources]]\npath = {core:?}\ntrusted = true\ncore = true\n");
        let (config, _) = config(dir.path(), &text);
        assert!(core_trusted(&config, core.join("skill").to_str().unwrap()));
        assert!(!core_trusted(&config, dir.path().to_str().unwrap()));
        assert!(!core_trusted(&config, "/nonexistent/skillcat"));
    }

    #[test]
    fn parameters_and_grants_are_listed_as_tools_shows_them() {
        assert_eq!(
            params_text(&Params::Implicit),
            "args?: string (split like a shell)"
        );
        assert_eq!(params_text(&Params::Declared(Vec::new())), "(none)");
        let grant = Grant {
            fs_read: vec![PathBuf::from("/a"), PathBuf::from("/b")],
            fs_write: Vec::new(),
            network: Network::from_patterns(["api.example.com"]).unwrap(),
            timeout: std::time::Duration::from_secs(30),
            trust: capability::Trust::External,
        };
        let lines = grant_lines(&grant);
        assert_eq!(lines[0], "grant: read /a /b");
        assert_eq!(lines[1], "grant: write nothing");
        assert!(lines[2].starts_with("grant: network api.example.com (through the run's proxy"));
        assert_eq!(lines[3], "grant: timeout 30 s, trust external");
        let report = GrantReport::from(&grant);
        assert_eq!(report.timeout_seconds, 30);
        assert_eq!(report.fs_read, grant.fs_read);
    }
}
