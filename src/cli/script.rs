//! `tools` and `run`: a skill's script tools, and one confined run.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value as Json, json};
use skillcat::capability::Grant;
use skillcat::document::Skill;
use skillcat::script::{
    AllowAll, Interpreters, Runner, RunnerConfig, ScriptError, argv::Params, policy,
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

/// The grant of a skill run from the command line: its frontmatter's `fs_read`, `fs_write`,
/// `network`, `timeout`, `trust` intersected with the ceiling.
///
/// The one place to swap for the capability module's intersection and configured ceiling.
fn cli_grant(skill: &Skill, ceiling: &Grant, cwd: &std::path::Path) -> Grant {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    policy::grant_from_frontmatter(skill.frontmatter(), ceiling, cwd, home.as_deref())
}

/// The ceiling without configuration: read-only `.`, no writes outside the workspace, no
/// network, 60 s.
fn cli_ceiling(cwd: &std::path::Path) -> Grant {
    policy::default_ceiling(cwd)
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
    let interpreters = Interpreters::host_default();
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
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            err!("Error: cannot read the working directory: {e}");
            return USAGE;
        }
    };
    let ceiling = cli_ceiling(&cwd);
    let grant = cli_grant(&skill, &ceiling, &cwd);
    let runner = match Runner::new(RunnerConfig::new(ceiling), Arc::new(AllowAll)) {
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
