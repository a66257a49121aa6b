//! `tools` and `run`: a skill's script tools, and one confined run.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::Path;

use serde_json::{Value as Json, json};
use skillcat::capability::{self, Access, Capabilities, Grant, Network};

use skillcat::config::{Config, Environment};
use skillcat::ops::script::{self as ops, FindToolError, GrantFault, StartError, Target};
use skillcat::runtime::{Activation, Run, RuntimeError};
use skillcat::script::denial::{Denial, Reach};
use skillcat::script::{ScriptError, argv::Params};

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
        let (read, write) = (&self.allow_read, &self.allow_write);
        ops::asked(read, write, &self.allow_net)
            .map_err(|e| usage!("--allow-net {}: {}", on_stderr(&e.host), e.source.why))
    }
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
    let (config, env) = super::configuration(g)?;
    check_granted(&extra, &config, &env)?;
    warn_skill_tables(&config, &env, Some(name));
    let named = ops::Named::typed(a_source, opened.src, opened.found);
    let options = g.catalog_options(&config);
    let dirs = g.env.user_dirs();
    let run = ops::start(&config, &env, named, name, extra, dirs, options)
        .await
        .map_err(|e| match e {
            StartError::Config(e) => usage!("{e}"),
            StartError::Session(e) => report(&e),
            StartError::Activate(e) => report_runtime(&e),
        })?;
    Ok(Activated { run, config, env })
}

/// Refuses (exit 2, each reason printed) `--allow-*` flags the run cannot honour
/// ([`ops::script::check_grants`](skillcat::ops::script::check_grants)). The ceiling wins over
/// the flags.
pub(super) fn check_granted(
    extra: &Capabilities,
    config: &Config,
    env: &Environment,
) -> Result<(), CliError> {
    let no_network = |ceiling: &Network, what: String| match ceiling {
        Network::Off => "no network".to_string(),
        n => format!("{what}{n}"),
    };
    let faults: Vec<String> = ops::check_grants(extra, config, env)
        .into_iter()
        .map(|f| match f {
            GrantFault::Unresolvable { access, path } => format!(
                "{} {path}: cannot be resolved (an empty path, `~user`, a dangling link or a \
                 link loop)",
                flag(access)
            ),
            GrantFault::Missing { access, path, full } => format!(
                "{} {path}: {} does not exist (a grant binds an existing file or directory; \
                 grant the directory a new file goes in)",
                flag(access),
                full.display()
            ),
            GrantFault::OutsideCeiling { access, path, full } => format!(
                "{} {path}: {} is outside the configured ceiling, which wins over the flags; {}",
                flag(access),
                full.display(),
                ops::ceiling_advice(config, env, access, &full, &config_file(config, env))
            ),
            GrantFault::NetworkAll { ceiling } => format!(
                "--allow-net: the configured ceiling allows {}, and it wins over the flags; set \
                 `network = true` under [sandbox] in {} (or name the hosts: --allow-net HOST)",
                no_network(&ceiling, "only ".into()),
                config_file(config, env)
            ),
            GrantFault::HostOutside { host, ceiling } => format!(
                "--allow-net {host}: outside the configured ceiling ({}), which wins over the \
                 flags; add \"{host}\" to `network` under [sandbox] in {}",
                no_network(&ceiling, "network = ".into()),
                config_file(config, env)
            ),
        })
        .collect();
    if faults.is_empty() {
        Ok(())
    } else {
        // One `Error:` line for each.
        Err(CliError::Usage(faults.join("\nError: ").into()))
    }
}

/// Says on stderr what of the `[skills.NAME]` tables (only `skill`'s, when given) is not
/// granted: a path that is missing or outside the ceiling, network the ceiling does not allow.
/// A table is not a flag, so nothing is refused; nothing is dropped without a word either.
pub(super) fn warn_skill_tables(config: &Config, env: &Environment, skill: Option<&str>) {
    let fold = |s: &str| s.replace('_', "-");
    let key = |access| match access {
        Access::Read => "allow_read",
        Access::Write => "allow_write",
    };
    for (name, t) in &config.skills {
        if skill.is_some_and(|s| fold(s) != fold(name)) {
            continue;
        }
        let asked = Capabilities {
            fs_read: t.allow_read.clone(),
            fs_write: t.allow_write.clone(),
            network: t.allow_net.clone(),
            ..Capabilities::default()
        };
        for f in ops::check_grants(&asked, config, env) {
            let what = match f {
                GrantFault::Unresolvable { access, path } => {
                    format!("{} \"{path}\": cannot be resolved", key(access))
                }
                GrantFault::Missing { access, path, full } => {
                    format!(
                        "{} \"{path}\": {} does not exist",
                        key(access),
                        full.display()
                    )
                }
                GrantFault::OutsideCeiling { access, path, full } => format!(
                    "{} \"{path}\": {} is outside the configured ceiling, which wins",
                    key(access),
                    full.display()
                ),
                GrantFault::NetworkAll { .. } => {
                    "allow_net = true: the configured ceiling does not allow the whole network"
                        .to_string()
                }
                GrantFault::HostOutside { host, .. } => {
                    format!("allow_net \"{host}\": outside the configured ceiling's network")
                }
            };
            note!(
                "warning: [skills.{name}] {}; not granted ({})",
                on_stderr(&what),
                config_file(config, env)
            );
        }
    }
}

/// The flag that grants `access` for one run.
fn flag(access: Access) -> &'static str {
    match access {
        Access::Read => "--allow-read",
        Access::Write => "--allow-write",
    }
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
fn print_hints(
    e: &ScriptError,
    a: &Activation,
    args: &Json,
    (config, env): (&Config, &Environment),
    g: &Globals,
) {
    let (Some(output), Some(grant)) = (e.output(), a.script_grant()) else {
        return;
    };
    if let Network::Hosts(hosts) = &grant.network
        && let Some(direct) = skillcat::script::denial::direct_connection(
            &output.text,
            &skillcat::script::denial::argument_words(args),
        )
    {
        err!("{}", escape_controls(&direct_hint(&direct, hosts)));
    }
    let found = ops::denials(&output.text, grant, env, &g.env.user_dirs(), args);
    for d in &found.denials {
        // Always escaped: a path in a hint comes from the script's output.
        let hint = hint(d, grant, found.caller.as_deref(), config, env);
        err!("{}", escape_controls(&hint));
    }
}

/// The hint for a connection made around the run's proxy: name the host, through the proxy.
fn direct_hint(
    direct: &skillcat::script::denial::DirectConnection,
    hosts: &[capability::HostPattern],
) -> String {
    let to = direct
        .target
        .as_ref()
        .map_or_else(String::new, |t| format!(" to {t}"));
    let hosts: Vec<String> = hosts.iter().map(ToString::to_string).collect();
    format!(
        "hint: the script connected{to} directly, which the sandbox refuses: this run reaches \
         the network only through its proxy (HTTPS_PROXY is set in the script's environment), \
         by host name, to what it grants ({}). Connect to the host's name through the proxy \
         (most HTTP clients do when HTTPS_PROXY is set), not to an address; to reach an address \
         on purpose, pin a granted name to it under [sandbox.resolve] in skillcat.toml",
        hosts.join(", ")
    )
}

fn hint(
    d: &Denial,
    run_grant: &Grant,
    caller: Option<&Path>,
    config: &Config,
    env: &Environment,
) -> String {
    // A path the script named that is not on the allow-list of suggestions: named, no advice.
    let Some(h) = ops::grant_hint(d, caller, config, env, &config_file(config, env)) else {
        return format!(
            "hint: the sandbox kept the script from {}; skillcat suggests no change for it (only \
             paths in your working directory or under what the run grants, other than hidden \
             files and a project's configuration, are ever suggested)",
            d.path.display()
        );
    };
    let (flag, target, key) = (flag(h.access), &h.target, h.key);
    let also = h.ceiling.map_or_else(String::new, |advice| {
        format!(" The configured ceiling does not reach it either: {advice}.")
    });
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
            let (write, why) = ops::permission_advice(d, run_grant);
            let granted = if write {
                "granted for writing"
            } else {
                "granted"
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
        print_run_text(&e.to_model_text(), false);
    }
    CliError::Tool(format!("{}: {}", e.code(), on_stderr(&e.to_string())))
}

/// `skillcat tools SOURCE NAME`
pub async fn tools(a: ToolsArgs, g: &Globals) -> CliResult {
    let run = activate(&a.source, &a.name, Capabilities::default(), g)
        .await?
        .run;
    let report = ops::tools_report(&run).map_err(|e| report(&e))?;
    // A contested name (two tools that are one name but for case or `-`/`_`) is offered by
    // neither, and the notes say so.
    for n in &report.contested {
        err!("{n}");
    }
    let (activation, found) = (&run.activations()[0], &report.found);
    match a.format {
        Format::Json => {
            out!(
                "{}",
                serde_json::to_string_pretty(&report).unwrap_or_default()
            );
        }
        Format::Text => {
            if found.tools.is_empty() {
                out!("{} offers no script tools", found.skill);
            }
            for t in &report.guest_tools {
                out!(
                    "{}  {} (guest tool, JavaScript, confined)",
                    t.name,
                    on_stdout(&t.description)
                );
            }
            for n in &report.guest_notes {
                err!("{n}");
            }
            for t in &found.tools {
                out!("{}  {}", t.name, on_stdout(&t.description));
                let params = ops::params_text(&t.params);
                out!(
                    "    {} via {}; parameters: {params}",
                    t.path,
                    t.interpreter.name
                );
            }
            if let Some(g) = activation.script_grant() {
                for line in ops::grant_lines(g) {
                    out!("{}", escape_controls(&line));
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
    // One run, then exit: what it leaves is removed after the process has answered and gone.
    skillcat::script::teardown_after_exit();
    let args = run_arguments(&a)?;
    let granted = a.granted()?;
    let Activated { run, config, env } = activate(&a.source, &a.name, granted.clone(), g).await?;
    warn_network_declaration(&run.activations()[0]);
    // A guest tool (tier 2) of the skill runs by its name, with --json arguments.
    let t = match ops::find_tool(&run, &a.script) {
        Ok(Target::Guest(name)) => {
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
        Ok(Target::Script(t)) => t,
        Err(FindToolError::Withheld(note)) => return Err(failed!("{}", on_stderr(&note))),
        Err(FindToolError::Script(e)) => return Err(report(&e)),
    };
    if a.args.is_some() && matches!(t.params, Params::Declared(_)) {
        return Err(usage!(
            "{} declares its parameters; give them with --json (schema: {})",
            t.name,
            t.schema()
        ));
    }
    if a.dry_run {
        print_dry_run(&run.activations()[0], &t, &granted, &config, &env);
        finish(run).await;
        return Ok(ExitStatus::Success);
    }
    warn_if_no_cgroup();
    let status = call_script(&run, &t, &args, (&config, &env), g).await;
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
        for line in ops::grant_lines(g) {
            out!("{}", escape_controls(&line));
        }
    }
    let widen = ops::network_widen_advice(config, &config_file(config, env));
    for p in ops::network_outside_ceiling(activation, granted, config) {
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
            let text = out.to_model_text();
            // Only the script's own bytes: a line end of ours would change them.
            let exact = out.script.as_ref().is_some_and(|s| s.output.text == text);
            print_run_text(&text, exact);
            if let Some(n) = out.script.as_ref().and_then(|s| s.network.as_ref()) {
                say_network(n, config, env);
            }
            ExitStatus::Success
        }
        Err(e) => {
            let status = report_runtime(&e).print();
            if let RuntimeError::Script(e @ ScriptError::Failed { .. }) = &e {
                print_hints(e, &run.activations()[0], args, (config, env), g);
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
    for target in ops::refused_outside_ceiling(n, config) {
        err!(
            "hint: the configured ceiling does not allow {} either ([sandbox] network = {}): \
             add \"{}\" to it in {}",
            escape_controls(target),
            config.ceiling().network,
            escape_controls(target),
            config_file(config, env)
        );
    }
}

/// A skill whose network declaration is not one: said, as it is read as no network.
fn warn_network_declaration(a: &Activation) {
    let Ok(declared) = a.entry().skill().declarations() else {
        return;
    };
    if let Some(Err(e)) = capability::network_declaration(declared.frontmatter()) {
        note!(
            "warning: {}: skillcat.network: {}; read as no network",
            a.name,
            escape_controls(&e.to_string())
        );
    }
}

/// After a run without `--keep-work`: the files the script left in its work directory, which
/// go with it, and how to keep them.
fn say_left(left: &[skillcat::script::LeftFile]) {
    if left.is_empty() {
        return;
    }
    let names = ops::left_names(left).join(", ");
    note!(
        "note: the script left {} in its work directory, which is removed with the run: {}. \
         Run with --keep-work DIR to keep what it leaves, or grant a directory with \
         --allow-write DIR and have the script write there.",
        plural(left.len(), "file"),
        escape_controls(&names)
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

/// A run's text on stdout ([`on_stdout`]). `exact`: it is only what the script wrote, which
/// goes out as it is (`printf abc` gives `abc`, `echo abc` one line end). Otherwise the host's
/// framing or notes end it, and a line end is added when it has none.
fn print_run_text(text: &str, exact: bool) {
    if exact || text.ends_with('\n') {
        let _ = write!(super::Stream::Out, "{}", on_stdout(text));
    } else {
        out!("{}", on_stdout(text));
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
