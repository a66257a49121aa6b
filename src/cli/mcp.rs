//! `skillcat mcp`: a Model Context Protocol server over stdio.
//!
//! stdout carries only protocol messages; warnings and errors go to stderr. The server stops
//! when the client closes stdin (or on SIGINT/SIGTERM) and removes its workspaces.

use std::io::Write;
use std::sync::Arc;

use skillcat::capability::Context;
use skillcat::catalog::{Catalog, CatalogSource};
use skillcat::mcp::{McpServer, ScriptTools};
use skillcat::prompt::PromptFormat;
use skillcat::script::{AllowAll, Runner};

use super::{FAULTS, OK, USAGE};

/// `skillcat mcp` arguments.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Any source. Its skills' script tools are offered, as `skillcat run` trusts a source
    /// named on the command line. None: the configured catalog (--config, ./skillcat.toml or the
    /// defaults), where only skills of sources marked `trusted` offer tools.
    source: Option<String>,
}

/// `skillcat mcp [SOURCE]`
pub async fn run(a: McpArgs) -> u8 {
    let (config, env) = match super::script::configuration() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let options = super::catalog_options(&config);
    let sources = match &a.source {
        Some(arg) => {
            // Opened as `run` opens it (a skill directory is one skill), errors printed.
            let opened = match super::read::open_and_discover(arg).await {
                Ok(o) => o,
                Err(code) => return code,
            };
            vec![
                CatalogSource::from_source(opened.shown, opened.src)
                    .trusted(true)
                    .core_trusted(super::script::core_trusted(&config, arg)),
            ]
        }
        None => config.sources.iter().map(CatalogSource::from).collect(),
    };
    // `core` trust can be granted only to skills of a core-trusted source.
    let ctx = Context {
        cwd: env.cwd.clone(),
        home: env.home.clone(),
        core_trusted_source: sources.iter().any(CatalogSource::is_core_trusted),
    };
    let catalog = Catalog::with_options(sources, options);
    let run_config = match super::script::runner_config(&config, &ctx) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // Only trusted skills get tools at all; for them the gate allows, as for `skillcat run`.
    let runner = match Runner::new(run_config, Arc::new(AllowAll)) {
        Ok(r) => r,
        Err(e) => {
            err!("Error: {e} ({})", e.code());
            return FAULTS;
        }
    };
    let scripts = ScriptTools {
        runner,
        ceiling: config.ceiling().clone(),
        cwd: env.cwd,
        home: env.home,
    };
    let server = McpServer::new(
        &catalog,
        config.prompt_options(PromptFormat::Xml),
        Some(scripts),
    )
    .await;
    for w in server.warnings() {
        err!("warning: {w}");
    }
    let tools = server.tool_names();
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
        Ok(()) => OK,
        Err(e) => {
            err!("Error: {e}");
            if matches!(e, skillcat::mcp::ServeError::Initialize(_)) {
                USAGE
            } else {
                FAULTS
            }
        }
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
