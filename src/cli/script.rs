//! `tools` and `run`: a skill's script tools, and one confined run.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value as Json, json};
use skillcat::catalog::{Catalog, CatalogSource};
use skillcat::config::{Config, Environment};
use skillcat::runtime::{Activation, Run, RuntimeError, Session};
use skillcat::script::{AllowAll, ScriptError, SkillTools, argv::Params};

use super::{FAULTS, Format, OK, USAGE};

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
    #[arg(long, value_name = "ARGS", conflicts_with = "json")]
    args: Option<String>,
    /// The arguments as a JSON object (`{"args": "…"}`, or a declared script's parameters).
    #[arg(long, value_name = "JSON")]
    json: Option<String>,
}

/// The configuration (`--config`, `./skillcat.toml`, or the defaults); errors are printed.
pub(super) fn configuration() -> Result<(Config, Environment), u8> {
    let env = Environment::current().map_err(|e| {
        err!("Error: cannot read the working directory: {e}");
        USAGE
    })?;
    let config = Config::discover(super::globals().config.as_deref(), &env).map_err(|e| {
        err!("Error: {e}");
        USAGE
    })?;
    Ok((config, env))
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
) -> Result<Session, ScriptError> {
    Ok(Session::builder(catalog)
        .configure(config, env, Arc::new(AllowAll))?
        .build())
}

/// Whether a [`session`] error is the configuration's (an unacceptable interpreter): a usage
/// error rather than a fault.
pub(super) fn is_config_error(e: &ScriptError) -> bool {
    matches!(e, ScriptError::InvalidDeclaration { .. })
}

/// A run of a session over the named source with the skill NAME active. Errors are printed.
async fn activate(a_source: &str, name: &str) -> Result<Run, u8> {
    // Read once: the discovery that finds the skill (or says why not) seeds the catalog.
    // `NAME@VERSION` reads that version alone.
    let (opened, name) =
        super::read::open_for(a_source, name, skillcat::source::Detail::Files).await?;
    super::read::find_in(&opened.shown, &opened.found, name)?;
    let (config, env) = configuration()?;
    let catalog = Catalog::with_options(
        vec![named_source(
            &config,
            a_source,
            CatalogSource::discovered(a_source, opened.src, opened.found),
        )],
        super::catalog_options(&config),
    );
    let session = session(&config, env, catalog).map_err(|e| {
        if is_config_error(&e) {
            err!("Error: {e}");
            USAGE
        } else {
            report(&e)
        }
    })?;
    let mut run = session.start();
    if let Err(e) = run.activate(name).await {
        return Err(report_runtime(&e));
    }
    Ok(run)
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

fn report_runtime(e: &RuntimeError) -> u8 {
    match e {
        RuntimeError::Script(e) => report(e),
        other => {
            err!("{}: {other}", other.code());
            FAULTS
        }
    }
}

fn report(e: &ScriptError) -> u8 {
    if let Some(_output) = e.output() {
        out!("{}", e.to_model_text());
    }
    err!("{}: {e}", e.code());
    FAULTS
}

/// `skillcat tools SOURCE NAME`
pub async fn tools(a: ToolsArgs) -> u8 {
    let run = match activate(&a.source, &a.name).await {
        Ok(run) => run,
        Err(code) => return code,
    };
    let found = match script_tools(&run.activations()[0]) {
        Ok(t) => t,
        Err(e) => return report(&e),
    };
    match a.format {
        Format::Json => {
            let tools: Vec<Json> = found.tools.iter().map(|t| t.to_json()).collect();
            let skipped: Vec<Json> = found
                .skipped
                .iter()
                .map(|s| json!({"path": s.path, "code": s.error.code(), "message": s.error.to_string()}))
                .collect();
            let doc = json!({"skill": found.skill, "tools": tools, "skipped": skipped});
            out!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        }
        Format::Text => {
            if found.tools.is_empty() {
                out!("{} offers no script tools", found.skill);
            }
            for t in &found.tools {
                out!("{}  {}", t.name, t.description);
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
            for s in &found.skipped {
                err!("skipped {}: {} ({})", s.path, s.error, s.error.code());
            }
        }
    }
    OK
}

/// `skillcat run SOURCE NAME SCRIPT [--args "…" | --json '{…}']`
pub async fn run(a: RunArgs) -> u8 {
    let args = match (&a.args, &a.json) {
        (Some(s), _) => json!({ "args": s }),
        (None, Some(j)) => match serde_json::from_str::<Json>(j) {
            Ok(v @ Json::Object(_)) => v,
            Ok(_) => {
                err!("Error: --json must be a JSON object");
                return USAGE;
            }
            Err(e) => {
                err!("Error: --json is not valid JSON: {e}");
                return USAGE;
            }
        },
        (None, None) => Json::Null,
    };
    let run = match activate(&a.source, &a.name).await {
        Ok(run) => run,
        Err(code) => return code,
    };
    let tools = match script_tools(&run.activations()[0]) {
        Ok(t) => t,
        Err(e) => return report(&e),
    };
    let Some(t) = tools.find(&a.script) else {
        let e = match tools.skipped(&a.script) {
            Some(s) => s.error.clone(),
            None => ScriptError::NotFound {
                tool: a.script.clone(),
            },
        };
        return report(&e);
    };
    if a.args.is_some() && matches!(t.params, Params::Declared(_)) {
        err!(
            "Error: {} declares its parameters; give them with --json (schema: {})",
            t.name,
            t.schema()
        );
        return USAGE;
    }
    let code = match run.call(&t.name, &args).await {
        Ok(out) => {
            out!("{}", out.to_model_text());
            OK
        }
        Err(e) => report_runtime(&e),
    };
    if let Err(e) = run.finish().await {
        err!("warning: {e}");
    }
    code
}
