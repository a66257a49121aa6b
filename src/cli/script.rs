//! `tools` and `run`: a skill's script tools, and one confined run.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value as Json, json};
use skillcat::capability::{self, Capabilities, Context, Grant};
use skillcat::config::{Config, Environment};
use skillcat::document::Skill;
use skillcat::script::{
    AllowAll, Interpreters, Limits, Runner, RunnerConfig, ScriptError, argv::Params, policy,
};

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

/// The allow-list: the configured `[scripts] interpreters`, else `sh`, `bash`, `python3`.
fn interpreters(config: &Config) -> Result<Interpreters, u8> {
    if config.scripts.interpreters.is_empty() {
        return Ok(Interpreters::host_default());
    }
    let mut out = Interpreters::new();
    for (name, path) in &config.scripts.interpreters {
        out.insert(name, path.clone()).map_err(|e| {
            err!("Error: {e}");
            USAGE
        })?;
    }
    Ok(out)
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

/// A skill's grant from the command line: its declared capabilities ∩ the configured ceiling
/// (without configuration: read-only `.`, no writes, no network, 60 s). A source named on the
/// command line is trusted for script tools; `trust: core` counts only for a source the
/// configuration marks core-trusted.
fn cli_grant(skill: &Skill, config: &Config, ctx: &Context) -> Grant {
    capability::intersect(
        &Capabilities::from_frontmatter(skill.frontmatter()),
        config.ceiling(),
        ctx,
    )
}

/// How the command line runs scripts: the session policy from the configured ceiling (`core`
/// trust only when `ctx` is core-trusted), its limits, and the interpreter allow-list. Errors
/// are printed.
pub(super) fn runner_config(config: &Config, ctx: &Context) -> Result<RunnerConfig, u8> {
    let mut run_config = RunnerConfig::new(policy::policy_from_ceiling(config.ceiling(), ctx));
    run_config.limits = Limits::from_ceiling(config.ceiling());
    run_config.interpreters = interpreters(config)?;
    Ok(run_config)
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
    let (src, skill) = match super::read::find_skill(&a.source, &a.name).await {
        Ok(found) => found,
        Err(code) => return code,
    };
    let interpreters = match configuration().and_then(|(config, _)| interpreters(&config)) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let found = match skillcat::script::discover(&*src, &skill, &interpreters).await {
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
    let (src, skill) = match super::read::find_skill(&a.source, &a.name).await {
        Ok(found) => found,
        Err(code) => return code,
    };
    let (config, env) = match configuration() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let ctx = Context {
        cwd: env.cwd.clone(),
        home: env.home.clone(),
        core_trusted_source: core_trusted(&config, &a.source),
    };
    let grant = cli_grant(&skill, &config, &ctx);
    let run_config = match runner_config(&config, &ctx) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // A source named on the command line is trusted for script tools: the gate allows.
    let runner = match Runner::new(run_config, Arc::new(AllowAll)) {
        Ok(r) => r,
        Err(e) => return report(&e),
    };
    let loaded = match runner.load(src, skill, grant).await {
        Ok(l) => l,
        Err(e) => return report(&e),
    };
    if a.args.is_some()
        && let Some(t) = loaded.tools().find(&a.script)
        && matches!(t.params, Params::Declared(_))
    {
        err!(
            "Error: {} declares its parameters; give them with --json (schema: {})",
            t.name,
            t.schema()
        );
        return USAGE;
    }
    let code = match runner.run(&loaded, &a.script, &args).await {
        Ok(out) => {
            out!("{}", out.to_model_text());
            OK
        }
        Err(e) => report(&e),
    };
    if let Err(e) = loaded.unload().await {
        err!("warning: {e}");
    }
    code
}
