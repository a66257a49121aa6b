//! `skillcat mcp`: a Model Context Protocol server over stdio.
//!
//! stdout carries only protocol messages; warnings and errors go to stderr. The server stops
//! when the client closes stdin (or on SIGINT/SIGTERM) and removes its workspaces.

use std::io::Write;

use skillcat::catalog::{Catalog, CatalogSource};
use skillcat::mcp::McpServer;
use skillcat::prompt::PromptFormat;

use super::{CliResult, ExitStatus, Globals};

/// `skillcat mcp` arguments.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Any source. Its skills' script tools are offered, as `skillcat run` trusts a source
    /// named on the command line. None: the configured catalog (--config, ./skillcat.toml or the
    /// defaults), where only skills of sources marked `trusted` offer tools.
    source: Option<String>,
}

/// `skillcat mcp [SOURCE]`
pub async fn run(a: McpArgs, g: &Globals) -> CliResult {
    let (config, env) = super::script::configuration(g)?;
    let env_shown = env.clone();
    let options = g.catalog_options(&config);
    let sources = match &a.source {
        Some(arg) => {
            // Opened as `run` opens it (a skill directory is one skill), errors printed.
            let opened = super::read::open_and_discover(arg, g).await?;
            // The discovery made here seeds the catalog: the source is read once.
            vec![super::script::named_source(
                &config,
                arg,
                CatalogSource::discovered(opened.shown, opened.src, opened.found),
            )]
        }
        None => config.sources.iter().map(CatalogSource::from).collect(),
    };
    let catalog = Catalog::with_options(sources, options);
    // Only trusted skills get tools at all; for them the gate allows, as for `skillcat run`.
    let session = match super::script::session(&config, env, catalog) {
        Ok(s) => s,
        Err(e) if super::script::is_config_error(&e) => {
            return Err(usage!("{e}"));
        }
        Err(e) => {
            return Err(failed!("{e} ({})", e.code()));
        }
    };
    let server = McpServer::new(&session, config.prompt_options(PromptFormat::Xml)).await;
    for w in server.warnings() {
        note!("warning: {}", super::script::on_stderr(w));
    }
    let tools = server.tool_names();
    if !tools.is_empty() {
        super::script::warn_if_no_cgroup();
    }
    if a.source.is_none() {
        explain_untrusted(&config, &env_shown, tools.is_empty());
    }
    err!(
        "skillcat mcp: serving {} tool(s) over stdio{}",
        tools.len(),
        if tools.is_empty() {
            String::new()
        } else {
            format!(": {}", tools.join(", "))
        }
    );
    match server.serve_stdio_until(stop_signal()).await {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e @ skillcat::mcp::ServeError::Initialize(_)) => Err(usage!("{e}")),
        Err(e) => Err(failed!("{e}")),
    }
}

/// For the configured catalog: which sources offer no tools because they are not trusted, and
/// how to trust them (or that no source is configured at all).
fn explain_untrusted(
    config: &skillcat::config::Config,
    env: &skillcat::config::Environment,
    none: bool,
) {
    let file = super::script::config_file(config, env);
    if config.sources.is_empty() {
        note!(
            "note: no skill sources are configured, so no skill is served: name one \
             (`skillcat mcp DIR`), or add a [[sources]] entry to {file}"
        );
        return;
    }
    let untrusted: Vec<&str> = config
        .sources
        .iter()
        .filter(|s| !s.trusted && !s.core)
        .map(|s| s.name.as_deref().unwrap_or(&s.path))
        .collect();
    if untrusted.is_empty() && !none {
        return;
    }
    if let Some(project) = &config.untrusted_project {
        note!(
            "note: this project's skillcat.toml is not trusted, so its sources are trusted only \
             where your own configuration trusts them: run `skillcat trust project` in {} to \
             let it apply in full",
            project.display()
        );
    }
    if !untrusted.is_empty() {
        note!(
            "note: skills of untrusted sources offer no tools (their instructions are still \
             served): {}. Trust one with `trusted = true` in its [[sources]] entry in {file}, \
             or name it on the command line (`skillcat mcp DIR` trusts DIR for this server)",
            untrusted.join(", ")
        );
    }
}

/// Completes on SIGINT or SIGTERM (never, if neither can be listened for).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
