//! `tools` and `run`: a skill's script tools, and one confined run.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value as Json, json};
use skillcat::capability::{self, Access, Capabilities, Context, Grant, Network};
use skillcat::catalog::{Catalog, CatalogSource};
use skillcat::config::{Config, Environment};
use skillcat::runtime::{Activation, Run, RuntimeError, Session, ToolKind, ToolSpec};
use skillcat::script::denial::{self, Denial, Reach, RunPlace};
use skillcat::script::{AllowAll, ScriptError, SkillTools, WorkspaceBase, argv::Params};

use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// `skillcat tools` arguments.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    /// Any source.
    source: String,
    /// The skill's name (`-` and `_` alike).
    name: String,
    /// Output format (json gives each tool's JSON Schema as `parameters`).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// `skillcat run` arguments.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Any source (a source named on the command line is trusted for script tools).
    source: String,
    /// The skill's name (`-` and `_` alike).
    name: String,
    /// The script: its name part (`level_counts` for `scripts/level_counts.sh`) or the full tool
    /// name (`run_log_search_level_counts`).
    script: String,
    /// The arguments as one string, split into words like a POSIX shell splits them (quotes
    /// honoured, nothing expanded, no shell run). For scripts without declared parameters.
    #[arg(
        long,
        value_name = "ARGS",
        conflicts_with = "json",
        allow_hyphen_values = true
    )]
    args: Option<String>,
    /// The arguments as a JSON object (`{"args": "…"}`, or a declared script's parameters).
    #[arg(long, value_name = "JSON")]
    json: Option<String>,
    /// Let the script read PATH (a file or a directory, and what it holds) in this run, on top
    /// of what the skill declares; repeatable. A relative PATH is taken against the working
    /// directory, and the script then starts there, so `--args app.log` names ./app.log. The
    /// configured ceiling wins: a PATH outside `[sandbox] fs_read`/`fs_write` (by default, the
    /// working directory) is refused, never silently dropped.
    #[arg(long = "allow-read", value_name = "PATH")]
    allow_read: Vec<String>,
    /// Let the script write (and read) PATH in this run, on top of what the skill declares;
    /// repeatable. The configured ceiling wins: PATH must lie under `[sandbox] fs_write`
    /// (by default nothing is writable).
    #[arg(long = "allow-write", value_name = "PATH")]
    allow_write: Vec<String>,
    /// Let the script reach HOST (`api.github.com`, `uploads.github.com:443`, `*.example.com`;
    /// without a port, 80 and 443) in this run, through the run's proxy; repeatable. Bare
    /// `--allow-net` grants the whole network, whatever the skill declares. The configured
    /// ceiling wins: refused unless `[sandbox] network` allows it (`true`, or a list holding it).
    #[arg(
        long = "allow-net",
        value_name = "HOST",
        num_args = 0..=1,
        default_missing_value = "",
        action = clap::ArgAction::Append
    )]
    allow_net: Vec<String>,
    /// Say what the run would be (the tool, its script and interpreter, and the grant: paths,
    /// network, timeout, trust) without running it.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Keep what the script leaves in its work directory (its working directory and HOME,
    /// removed after the run): copied into DIR, made when missing, refused when not empty.
    /// Without it, files left there are named after the run, and go.
    #[arg(long = "keep-work", value_name = "DIR")]
    keep_work: Option<std::path::PathBuf>,
}

impl RunArgs {
    /// What the flags grant on top of the skill's declaration; a `--allow-net` that is not a
    /// host pattern is a usage error.
    fn granted(&self) -> Result<Capabilities, CliError> {
        let mut network = Network::Off;
        for h in &self.allow_net {
            let n = if h.is_empty() {
                Network::All
            } else {
                Network::from_patterns([h.as_str()])
                    .map_err(|e| usage!("--allow-net {}: {}", on_stderr(h), e.why))?
            };
            network = network.union(&n);
        }
        Ok(Capabilities {
            fs_read: self.allow_read.clone(),
            fs_write: self.allow_write.clone(),
            network,
            ..Capabilities::default()
        })
    }
}

/// The configuration (`--config`, `./skillcat.toml`, or the defaults) of the context; errors
/// are printed.
pub(super) fn configuration(g: &Globals) -> Result<(Config, Environment), CliError> {
    super::configuration(g)
}

/// Whether SOURCE lies in a source the configuration marks core-trusted.
pub(super) fn core_trusted(config: &Config, arg: &str) -> bool {
    let Ok(arg) = std::fs::canonicalize(arg) else {
        return false;
    };
    config
        .sources
        .iter()
        .filter(|s| s.core)
        .any(|s| std::fs::canonicalize(&s.path).is_ok_and(|root| arg.starts_with(root)))
}

/// A source named on the command line: trusted for script tools (the user named it), and
/// core-trusted when it lies in a source the configuration marks core-trusted (only then does a
/// skill's `trust: core` count).
pub(super) fn named_source(config: &Config, arg: &str, src: CatalogSource) -> CatalogSource {
    src.trusted(true).core_trusted(core_trusted(config, arg))
}

/// The session the command line runs tools through (`run`, `tools`, `mcp`): the configured
/// ceiling, limits and interpreters ([`SessionBuilder::configure`]), and a gate that allows
/// every call (only skills of trusted sources get tools at all: a source named on the command
/// line, or one the configuration trusts).
///
/// [`SessionBuilder::configure`]: skillcat::runtime::SessionBuilder::configure
pub(super) fn session(
    config: &Config,
    env: Environment,
    catalog: Catalog,
    g: &Globals,
) -> Result<Session, ScriptError> {
    session_granting(config, env, catalog, Capabilities::default(), g)
}

/// [`session`], granting every skill `extra` on top of its declaration (`run --allow-*`).
fn session_granting(
    config: &Config,
    env: Environment,
    catalog: Catalog,
    extra: Capabilities,
    g: &Globals,
) -> Result<Session, ScriptError> {
    Ok(Session::builder(catalog)
        .user_dirs(g.env.user_dirs())
        .configure(config, env, Arc::new(AllowAll))?
        .granted(extra)
        .build())
}

/// Whether a [`session`] error is the configuration's (an unacceptable interpreter): a usage
/// error rather than a fault.
pub(super) fn is_config_error(e: &ScriptError) -> bool {
    matches!(e, ScriptError::InvalidDeclaration { .. })
}

/// A run with its skill active, and the configuration it was made under.
struct Activated {
    run: Run,
    config: Config,
    env: Environment,
}

/// A run of a session over the named source with the skill NAME active, its skills granted
/// `extra` on top of what they declare (checked against the ceiling first). Errors are printed.
async fn activate(
    a_source: &str,
    name: &str,
    extra: Capabilities,
    g: &Globals,
) -> Result<Activated, CliError> {
    // Read once: the discovery that finds the skill (or says why not) seeds the catalog.
    // `NAME@VERSION` reads that version alone.
    let (opened, name) =
        super::read::open_for(a_source, name, skillcat::source::Detail::Files, g).await?;
    super::read::find_in(&opened.shown, &opened.found, name)?;
    let (config, env) = configuration(g)?;
    check_granted(&extra, &config, &env)?;
    let catalog = Catalog::with_options(
        vec![named_source(
            &config,
            a_source,
            CatalogSource::discovered(a_source, opened.src, opened.found),
        )],
        g.catalog_options(&config),
    );
    let session = session_granting(&config, env.clone(), catalog, extra, g).map_err(|e| {
        if is_config_error(&e) {
            usage!("{e}")
        } else {
            report(&e)
        }
    })?;
    let mut run = session.start();
    if let Err(e) = run.activate(name).await {
        return Err(report_runtime(&e));
    }
    Ok(Activated { run, config, env })
}

/// Refuses (exit 2, each reason printed) `--allow-*` flags the run cannot honour: a path that
/// cannot be resolved or does not exist (a grant binds a file), one outside the configured
/// ceiling, the network when the ceiling has none. The ceiling wins over the flags.
fn check_granted(extra: &Capabilities, config: &Config, env: &Environment) -> Result<(), CliError> {
    let ctx = context(env);
    let mut faults = Vec::new();
    for (access, flag, paths) in [
        (Access::Read, "--allow-read", &extra.fs_read),
        (Access::Write, "--allow-write", &extra.fs_write),
    ] {
        for p in paths {
            match capability::resolve(p, &ctx.cwd, ctx.home.as_deref()) {
                None => faults.push(format!(
                    "{flag} {p}: cannot be resolved (an empty path, `~user`, a dangling link or \
                     a link loop)"
                )),
                Some(full) if std::fs::symlink_metadata(&full).is_err() => faults.push(format!(
                    "{flag} {p}: {} does not exist (a grant binds an existing file or directory; \
                     grant the directory a new file goes in)",
                    full.display()
                )),
                Some(full) if !ceiling_reaches(config, &ctx, access, &full) => faults.push(format!(
                    "{flag} {p}: {} is outside the configured ceiling, which wins over the flags; \
                     {}",
                    full.display(),
                    ceiling_advice(config, env, access, &full)
                )),
                Some(_) => {}
            }
        }
    }
    let ceiling = &config.ceiling().network;
    match &extra.network {
        Network::All if !ceiling.is_all() => faults.push(format!(
            "--allow-net: the configured ceiling allows {}, and it wins over the flags; set \
             `network = true` under [sandbox] in {} (or name the hosts: --allow-net HOST)",
            match ceiling {
                Network::Off => "no network".to_string(),
                n => format!("only {n}"),
            },
            config_file(config, env)
        )),
        hosts @ Network::Hosts(_) => {
            for p in hosts.outside(ceiling) {
                faults.push(format!(
                    "--allow-net {p}: outside the configured ceiling ({}), which wins over the \
                     flags; add \"{p}\" to `network` under [sandbox] in {}",
                    match ceiling {
                        Network::Off => "no network".to_string(),
                        n => format!("network = {n}"),
                    },
                    config_file(config, env)
                ));
            }
        }
        _ => {}
    }
    if faults.is_empty() {
        Ok(())
    } else {
        // One `Error:` line for each.
        Err(CliError::Usage(faults.join("\nError: ").into()))
    }
}

fn context(env: &Environment) -> Context {
    Context {
        cwd: env.cwd.clone(),
        home: env.home.clone(),
        core_trusted_source: false,
    }
}

/// Whether the configured ceiling lets a run read (or write) `path`.
fn ceiling_reaches(config: &Config, ctx: &Context, access: Access, path: &Path) -> bool {
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
    capability::intersect_detailed(&caps, config.ceiling(), ctx)
        .dropped
        .is_empty()
}

/// What the ceiling allows for `access`, and where to widen it to reach `path`: in the file
/// read, or, for a project's file the user has not trusted (it counts only as far as the user's
/// own configuration allows), `skillcat trust project` when that file lists the path, else the
/// user's own configuration.
fn ceiling_advice(config: &Config, env: &Environment, access: Access, path: &Path) -> String {
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
            Config::load(file, env).is_ok_and(|own| ceiling_reaches(&own, &ctx, access, path));
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
        "{now}{why}; add it, or a directory above it, to `{key}` under [sandbox] in {}",
        config_file(config, env)
    )
}

/// The configuration file to edit: the one read, else the user's own.
pub(super) fn config_file(config: &Config, env: &Environment) -> String {
    match (&config.origin, Config::user_file(env)) {
        (Some(f), _) => f.display().to_string(),
        (None, Some(f)) => format!("{} (or a file named with --config)", f.display()),
        (None, None) => "a skillcat.toml named with --config".to_string(),
    }
}

/// After a failed run: a `hint:` line on stderr for each path the output reports the sandbox
/// kept the script from (or that it looked for in its work directory while it is in the
/// caller's), naming the flag or the frontmatter key that would reach it.
fn print_hints(e: &ScriptError, a: &Activation, config: &Config, env: &Environment, g: &Globals) {
    let (Some(output), Some(grant)) = (e.output(), a.script_grant()) else {
        return;
    };
    let caller = std::fs::canonicalize(&env.cwd).ok();
    let workspaces = WorkspaceBase::default_dir(&g.env.user_dirs());
    let workspaces = std::fs::canonicalize(&workspaces).unwrap_or(workspaces);
    let system = skillcat::script::sandbox::system_read_paths(grant.network.any());
    // The caller's home and root's: their hidden files are never suggested for a grant.
    let mut homes: Vec<PathBuf> = env.home.iter().cloned().collect();
    homes.push(PathBuf::from("/root"));
    let place = RunPlace {
        grant,
        caller: caller.as_deref(),
        started_in_caller: caller
            .as_deref()
            .is_some_and(|c| skillcat::script::start_dir(grant, c).is_some()),
        system: &system,
        workspaces: &workspaces,
        homes: &homes,
    };
    for d in denial::denials(&output.text, &place) {
        // Always escaped: a path in a hint comes from the script's output.
        err!("{}", escape_controls(&hint(&d, &place, config, env)));
    }
}

fn hint(d: &Denial, place: &RunPlace<'_>, config: &Config, env: &Environment) -> String {
    let (caller, ctx) = (place.caller, &context(env));
    // A path the script named that is not on the allow-list of suggestions: named, no advice.
    let Some(grant) = d.grant.as_deref() else {
        return format!(
            "hint: the sandbox kept the script from {}; skillcat suggests no change for it (only \
             paths in your working directory or under what the run grants, other than hidden \
             files and a project's configuration, are ever suggested)",
            d.path.display()
        );
    };
    // A path in the working directory is shown as the user would type it.
    let shown = |p: &Path| -> String {
        match caller.and_then(|c| p.strip_prefix(c).ok()) {
            Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Some(rel) => rel.display().to_string(),
            None => p.display().to_string(),
        }
    };
    let (flag, key, access) = match d.reach {
        Reach::NotGranted if grant == d.path => ("--allow-read", "skillcat.fs_read", Access::Read),
        Reach::InCallerDir => ("--allow-read", "skillcat.fs_read", Access::Read),
        _ => ("--allow-write", "skillcat.fs_write", Access::Write),
    };
    let target = shown(grant);
    let also = if ceiling_reaches(config, ctx, access, grant) {
        String::new()
    } else {
        format!(
            " The configured ceiling does not reach it either: {}.",
            ceiling_advice(config, env, access, grant)
        )
    };
    let path = d.path.display();
    match d.reach {
        Reach::NotGranted => format!(
            "hint: the sandbox kept the script from {path}, which this run does not grant: run \
             with {flag} {target}, or declare it under `metadata:` in the skill's SKILL.md as \
             `{key}`.{also}"
        ),
        Reach::ReadOnly => format!(
            "hint: the sandbox let the script read {path} but not write it: run with {flag} \
             {target}, or declare it under `metadata:` in the skill's SKILL.md as `{key}`.{also}"
        ),
        Reach::FilePermissions => {
            let write = place.grant.fs_write.iter().any(|g| d.path.starts_with(g));
            let (granted, able) = if write {
                ("granted for writing", "writable")
            } else {
                ("granted", "readable")
            };
            // Root's own files in a granted tree are mapped to the script's uid when the tree's
            // top is root's (a view covers closed directories above a grant): what is left is
            // another owner's file, a root file in another owner's tree, or a tree that cannot
            // be mapped.
            let holding = place
                .grant
                .fs_read
                .iter()
                .chain(&place.grant.fs_write)
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
                        "root's files in a granted directory are the script's only where root \
                         owns the directory granted; {} belongs to {uid}, so root's files in it \
                         stay root's and their permissions keep uid 65534 out: make {} {able} \
                         by others.",
                        top.display(),
                        grant.display()
                    )
                }
                // A root file in root's tree (or one not found among the grants).
                (Some(0), _) => format!(
                    "root's files in a granted directory are the script's, but not in this one: \
                     it holds skillcat's workspaces or lies on a file \
                     system without idmapped mounts. Grant a directory beneath it, or make it \
                     {able} by others."
                ),
                (Some(uid), _) => format!(
                    "root's own files in a granted directory are the script's, but {} belongs \
                     to uid {uid} and its permissions keep uid 65534 out: make it {able} by \
                     others, or run skillcat as uid {uid}.",
                    grant.display()
                ),
                (None, _) => {
                    format!("its permissions keep that user out: make it {able} by others.")
                }
            };
            format!(
                "hint: {path} is {granted}, but scripts run as the unprivileged uid 65534 when \
                 skillcat runs as root; {why}"
            )
        }
        Reach::InCallerDir => format!(
            "hint: {} is in your working directory, but the script started in its own work \
             directory because this run grants nothing there. Run with {flag} {target}: a script \
             starts in your working directory when the run may read there, so relative \
             arguments name your files.{also}",
            d.written
        ),
    }
}

/// The owner of a file, when it can be seen.
fn owner(p: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| m.uid())
}

/// What loading the skill's scripts found: its script tools, or the error.
fn script_tools(a: &Activation) -> Result<SkillTools, ScriptError> {
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

/// Says once per process, on stderr, that runs are not in a cgroup and what is then not
/// bounded (a host without cgroup v2 delegation or v1 hierarchies it may write).
pub(super) fn warn_if_no_cgroup() {
    static SAID: std::sync::Once = std::sync::Once::new();
    if let Err(w) = skillcat::script::cgroup_status() {
        SAID.call_once(|| note!("warning: {w}"));
    }
}

/// A failed tool call as the command line says it: its code and message (exit 1).
fn report_runtime(e: &RuntimeError) -> CliError {
    match e {
        RuntimeError::Script(e) => report(e),
        other => CliError::Tool(format!(
            "{}: {}",
            other.code(),
            on_stderr(&other.to_string())
        )),
    }
}

/// A failed script as the command line says it: what it printed goes to stdout here, as the
/// model would see it; its code and message make the error (exit 1).
fn report(e: &ScriptError) -> CliError {
    if let Some(_output) = e.output() {
        out!("{}", on_stdout(&e.to_model_text()));
    }
    CliError::Tool(format!("{}: {}", e.code(), on_stderr(&e.to_string())))
}

/// `skillcat tools SOURCE NAME`
pub async fn tools(a: ToolsArgs, g: &Globals) -> CliResult {
    let run = match activate(&a.source, &a.name, Capabilities::default(), g).await {
        Ok(activated) => activated.run,
        Err(e) => return Err(e),
    };
    let mut found = match script_tools(&run.activations()[0]) {
        Ok(t) => t,
        Err(e) => return Err(report(&e)),
    };
    // Only what the run offers: a contested name (two tools that are one name but for case or
    // `-`/`_`) is offered by neither, and the notes say so.
    let offered: Vec<String> = run.tools().map(|t| t.name.clone()).collect();
    found.tools.retain(|t| offered.contains(&t.name));
    let activation = &run.activations()[0];
    for n in activation
        .notes
        .iter()
        .filter(|n| n.starts_with("tool ") && n.contains("contested"))
    {
        err!("{n}");
    }
    let guests: Vec<&ToolSpec> = run.tools().filter(|t| t.kind == ToolKind::Guest).collect();
    let guest_notes = activation
        .notes
        .iter()
        .filter(|n| n.starts_with("guest tool"));
    match a.format {
        Format::Json => {
            let tools: Vec<Json> = found.tools.iter().map(|t| t.to_json()).collect();
            let skipped: Vec<Json> = found
                .skipped
                .iter()
                .map(|s| json!({"path": s.path, "code": s.error.code(), "message": s.error.to_string()}))
                .collect();
            let guest_tools: Vec<Json> = guests
                .iter()
                .map(|t| {
                    json!({"name": t.name, "description": t.description,
                           "parameters": t.parameters, "trusted": t.trusted})
                })
                .collect();
            let doc = json!({"skill": found.skill, "tools": tools, "skipped": skipped,
                             "guest_tools": guest_tools, "guest_notes": guest_notes.collect::<Vec<_>>(),
                             "grant": activation.script_grant().map(grant_json)});
            out!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        }
        Format::Text => {
            if found.tools.is_empty() {
                out!("{} offers no script tools", found.skill);
            }
            for t in &guests {
                out!(
                    "{}  {} (guest tool, JavaScript, confined)",
                    t.name,
                    on_stdout(&t.description)
                );
            }
            for n in guest_notes {
                err!("{n}");
            }
            for t in &found.tools {
                out!("{}  {}", t.name, on_stdout(&t.description));
                let params = match &t.params {
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
                                if p.kind == skillcat::script::argv::ParamKind::Positional {
                                    " (positional)"
                                } else {
                                    ""
                                }
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                out!(
                    "    {} via {}; parameters: {params}",
                    t.path,
                    t.interpreter.name
                );
            }
            if let Some(g) = activation.script_grant() {
                for line in grant_lines(g) {
                    out!("{line}");
                }
            }
            for s in &found.skipped {
                err!(
                    "skipped {}: {} ({})",
                    on_stderr(&s.path),
                    on_stderr(&s.error.to_string()),
                    s.error.code()
                );
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// `skillcat run SOURCE NAME SCRIPT [--args "…" | --json '{…}'] [--allow-read PATH]…
/// [--allow-write PATH]… [--allow-net]`
pub async fn run(a: RunArgs, g: &Globals) -> CliResult {
    let args = run_arguments(&a)?;
    let granted = a.granted()?;
    let Activated { run, config, env } = activate(&a.source, &a.name, granted.clone(), g).await?;
    warn_network_declaration(&run.activations()[0]);
    // A guest tool (tier 2) of the skill runs by its name, with --json arguments.
    let guest = run
        .tools()
        .find(|t| t.kind == ToolKind::Guest && t.name == a.script)
        .map(|t| t.name.clone());
    if let Some(name) = guest {
        // A failure is said before the run's own warnings.
        let status = match run.call(&name, &args).await {
            Ok(out) => {
                out!("{}", on_stdout(&out.to_model_text()));
                ExitStatus::Success
            }
            Err(e) => report_runtime(&e).print(),
        };
        finish(run).await;
        return Ok(status);
    }
    // A declared guest tool that is not offered: say why, not that no script has the name.
    let withheld = format!("guest tool '{}' ", a.script);
    if let Some(note) = run.activations()[0]
        .notes
        .iter()
        .find(|n| n.starts_with("guest tool") && n.contains(&withheld))
    {
        return Err(failed!("{}", on_stderr(note)));
    }
    let tools = match script_tools(&run.activations()[0]) {
        Ok(t) => t,
        Err(e) => return Err(report(&e)),
    };
    let Some(t) = tools.find(&a.script) else {
        let e = match tools.skipped(&a.script) {
            Some(s) => s.error.clone(),
            None => ScriptError::NotFound {
                tool: a.script.clone(),
            },
        };
        return Err(report(&e));
    };
    if a.args.is_some() && matches!(t.params, Params::Declared(_)) {
        return Err(usage!(
            "{} declares its parameters; give them with --json (schema: {})",
            t.name,
            t.schema()
        ));
    }
    if a.dry_run {
        print_dry_run(&run.activations()[0], t, &granted, &config, &env);
        finish(run).await;
        return Ok(ExitStatus::Success);
    }
    warn_if_no_cgroup();
    let status = call_script(&run, t, &args, (&config, &env), g).await;
    let status = keep_or_say_left(&run, a.keep_work.as_deref(), status).await;
    finish(run).await;
    Ok(status)
}

/// The arguments of `run` as the tool takes them (`--args` as one string, `--json` as an
/// object), and a `--keep-work` directory that can take the files; errors are usage errors.
fn run_arguments(a: &RunArgs) -> Result<Json, CliError> {
    let args = match (&a.args, &a.json) {
        (Some(s), _) => json!({ "args": s }),
        (None, Some(j)) => match serde_json::from_str::<Json>(j) {
            Ok(v @ Json::Object(_)) => v,
            Ok(_) => {
                return Err(usage!("--json must be a JSON object"));
            }
            Err(e) => {
                return Err(usage!("--json is not valid JSON: {e}"));
            }
        },
        (None, None) => Json::Null,
    };
    if let Some(dir) = &a.keep_work {
        super::output_dir_exists(dir)?;
        if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(usage!(
                "--keep-work {}: the directory is not empty (name a new or empty one)",
                dir.display()
            ));
        }
    }
    Ok(args)
}

/// Ends the run; what it could not clean up is a warning.
async fn finish(run: Run) {
    if let Err(e) = run.finish().await {
        note!("warning: {e}");
    }
}

/// `run --dry-run`: what would run, under which grant, and each network host asked for that
/// the ceiling leaves out (with where to widen it).
fn print_dry_run(
    activation: &Activation,
    t: &skillcat::script::ScriptTool,
    granted: &Capabilities,
    config: &Config,
    env: &Environment,
) {
    out!(
        "{} would run {} via {} ({})",
        activation.name,
        t.path,
        t.interpreter.name,
        t.name
    );
    if let Some(g) = activation.script_grant() {
        for line in grant_lines(g) {
            out!("{line}");
        }
    }
    let asked = Capabilities::from_frontmatter(activation.entry().skill().frontmatter())
        .with(granted)
        .network;
    // Where the ceiling is widened: a project's file the user has not trusted counts only
    // as far as the user's own allows.
    let widen = match (&config.untrusted_project, &config.origin) {
        (Some(_), Some(file)) => format!(
            "the project's {} counts only as far as your own configuration allows until \
             you run `skillcat trust project`",
            file.display()
        ),
        _ => format!("widen `[sandbox] network` in {}", config_file(config, env)),
    };
    for p in asked.intersect(&config.ceiling().network).1 {
        err!(
            "note: {p} is asked for but outside the configured ceiling ([sandbox] network = \
             {}); not granted: {widen}",
            config.ceiling().network
        );
    }
    out!("Nothing run (--dry-run).");
}

/// Runs the script tool: its output on stdout, what it did on the network, and on a failure
/// the error (said first), its hints and its network report.
async fn call_script(
    run: &Run,
    t: &skillcat::script::ScriptTool,
    args: &Json,
    (config, env): (&Config, &Environment),
    g: &Globals,
) -> ExitStatus {
    match run.call(&t.name, args).await {
        Ok(out) => {
            out!("{}", on_stdout(&out.to_model_text()));
            if let Some(n) = out.script.as_ref().and_then(|s| s.network.as_ref()) {
                say_network(n, config, env);
            }
            ExitStatus::Success
        }
        Err(e) => {
            let status = report_runtime(&e).print();
            if let RuntimeError::Script(e @ ScriptError::Failed { .. }) = &e {
                print_hints(e, &run.activations()[0], config, env, g);
                if let Some(n) = e.network() {
                    say_network(n, config, env);
                }
            }
            status
        }
    }
}

/// After the run: its work directory kept in `keep` (`--keep-work`), else the files it left
/// there named; a failure to keep them counts towards the status.
async fn keep_or_say_left(run: &Run, keep: Option<&Path>, status: ExitStatus) -> ExitStatus {
    let skill = run.activations()[0].name.clone();
    match keep {
        Some(dir) => match run.keep_work(&skill, dir).await {
            Ok(Some(kept)) => {
                say_kept(&kept, dir);
                status
            }
            Ok(None) => status,
            Err(e) => status.max(report_runtime(&e).print()),
        },
        None => {
            match run.left_files(&skill).await {
                Ok(left) => say_left(&left),
                Err(e) => note!("warning: {e}"),
            }
            status
        }
    }
}

/// What a proxied run did on the network, on stderr: each host reached, each refusal with the
/// grant that would allow it (`hint:`), each limit reached.
fn say_network(n: &skillcat::script::NetworkReport, config: &Config, env: &Environment) {
    for line in n.lines() {
        // Escaped always: a refused target is the script's text.
        err!("{}", escape_controls(&line));
    }
    // A name outside the grant that the ceiling does not allow either: the flag alone would be
    // refused, so say which file to widen.
    let ceiling = &config.ceiling().network;
    for r in n.refused.iter().filter(|r| r.why == NOT_GRANTED) {
        let Some((host, port)) = r
            .target
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        else {
            continue;
        };
        if !ceiling.allows(host, port) {
            err!(
                "hint: the configured ceiling does not allow {} either ([sandbox] network = {}): \
                 add \"{}\" to it in {}",
                escape_controls(&r.target),
                ceiling,
                escape_controls(&r.target),
                config_file(config, env)
            );
        }
    }
}

/// The reason the proxy gives for a name and port outside the run's grant.
const NOT_GRANTED: &str = skillcat::script::proxy::NOT_GRANTED;

/// A skill whose network declaration is not one: said, as it is read as no network.
fn warn_network_declaration(a: &Activation) {
    if let Some(Err(e)) = capability::network_declaration(a.entry().skill().frontmatter()) {
        note!(
            "warning: {}: skillcat.network: {}; read as no network",
            a.name,
            escape_controls(&e.to_string())
        );
    }
}

/// The grant of a skill's scripts, one line per part, for `tools` and `run --dry-run`.
fn grant_lines(g: &Grant) -> Vec<String> {
    let paths = |p: &[std::path::PathBuf]| {
        if p.is_empty() {
            "nothing".to_string()
        } else {
            p.iter()
                .map(|p| escape_controls(&p.display().to_string()).into_owned())
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

fn grant_json(g: &Grant) -> Json {
    json!({
        "fs_read": g.fs_read, "fs_write": g.fs_write, "network": g.network,
        "timeout_seconds": g.timeout.as_secs(), "trust": g.trust.as_str(),
    })
}

/// How many of the files a script left are named on stderr; the rest are counted.
const LEFT_SHOWN: usize = 10;

/// After a run without `--keep-work`: the files the script left in its work directory, which
/// go with it, and how to keep them.
fn say_left(left: &[skillcat::script::LeftFile]) {
    if left.is_empty() {
        return;
    }
    let mut names: Vec<String> = left
        .iter()
        .take(LEFT_SHOWN)
        .map(|f| {
            let name = escape_controls(&f.path.to_string_lossy()).into_owned();
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
    note!(
        "note: the script left {} in its work directory, which is removed with the run: {}. \
         Run with --keep-work DIR to keep what it leaves, or grant a directory with \
         --allow-write DIR and have the script write there.",
        plural(left.len(), "file"),
        names.join(", ")
    );
}

/// After a run with `--keep-work DIR`: what was kept, and what was not.
fn say_kept(kept: &skillcat::script::Kept, dir: &std::path::Path) {
    err!(
        "kept {} ({} bytes) of the script's work directory in {}",
        plural(kept.files.len(), "file"),
        kept.bytes,
        dir.display()
    );
    if !kept.skipped.is_empty() {
        let names: Vec<String> = kept
            .skipped
            .iter()
            .map(|p| escape_controls(&p.to_string_lossy()).into_owned())
            .collect();
        note!(
            "note: not kept (links and special files are never copied): {}",
            names.join(", ")
        );
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `text` as stdout should show it: escaped ([`escape_controls`]) when stdout is a terminal,
/// byte for byte otherwise (a pipe or a file gets exactly what the script wrote).
fn on_stdout(text: &str) -> Cow<'_, str> {
    if std::io::stdout().is_terminal() {
        escape_controls(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// [`on_stdout`] for stderr.
pub(super) fn on_stderr(text: &str) -> Cow<'_, str> {
    if std::io::stderr().is_terminal() {
        escape_controls(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Text with nothing a terminal would act on: every control character but newline and tab (C0,
/// DEL, C1 U+0080–U+009F) written `\x1b` or `\u{9b}`, and every bidirectional control
/// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) written `\u{202e}`. An OSC title
/// or clipboard sequence in a script's output, or in a path it names, is shown, never obeyed.
fn escape_controls(text: &str) -> Cow<'_, str> {
    let inert = |c: char| c == '\n' || c == '\t' || !(c.is_control() || is_bidi_control(c));
    if text.chars().all(inert) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if inert(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(escape_controls("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            escape_controls("a\x1b]0;T\x07b\r\x7f\u{9b}c\u{202e}d\u{2066}é"),
            "a\\x1b]0;T\\x07b\\x0d\\x7f\\u{9b}c\\u{202e}d\\u{2066}é"
        );
    }
}
