//! `skillcat mcp`: a Model Context Protocol server over stdio, or over Streamable HTTP with
//! `--http ADDR`.
//!
//! Over stdio, stdout carries only protocol messages; warnings and errors go to stderr. The
//! server stops when the client closes stdin (or on SIGINT/SIGTERM) and removes its
//! workspaces. Over HTTP it serves until SIGINT/SIGTERM: it then refuses new sessions, gives
//! the calls running `--drain-timeout`, ends every session and removes every workspace.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use skillcat::mcp::{HttpOptions, McpServer, ServerOptions};
use skillcat::prompt::PromptFormat;

use skillcat::ops::mcp as ops;

use super::remote::parse_duration;
use super::{CliResult, ExitStatus, Globals};

/// `skillcat mcp` arguments.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Any source. Its skills' script tools are offered, as `skillcat run` trusts a source
    /// named on the command line. None: the configured catalog (--config, ./skillcat.toml or the
    /// defaults), where only skills of sources marked `trusted` offer tools.
    source: Option<String>,
    /// Serve MCP's Streamable HTTP transport at http://ADDR/mcp instead of stdio
    /// (`127.0.0.1:8765`; port 0 picks a free one, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Every HTTP request needs `Authorization: Bearer TOKEN` of this token file (the central
    /// registry's; `skillcat token create --tokens FILE --name NAME --scope '*' --can mcp`).
    /// Read again when it changes.
    #[arg(long, value_name = "FILE", requires = "http")]
    tokens: Option<PathBuf>,
    /// Serve without --tokens on an address beyond loopback (refused otherwise).
    #[arg(long, requires = "http")]
    allow_anonymous: bool,
    /// An Origin besides the server's own that browsers may call it from
    /// (`https://app.example.com`), repeatable. A request from any other Origin is 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// Serve HTTPS with this PEM certificate chain (the server's certificate first).
    #[arg(long, value_name = "PEM", requires_all = ["tls_key", "http"])]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// HTTP sessions open at once; an `initialize` beyond is answered 503.
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), requires = "http")]
    max_sessions: u32,
    /// An HTTP session with no request for this long is ended and its workspaces removed.
    #[arg(long, default_value = "10m", value_name = "TIME", value_parser = parse_duration, requires = "http")]
    session_idle: Duration,
    /// Tool calls one session may have running at once; one more is refused (-32000,
    /// E_SKILL_MCP_BUSY).
    #[arg(long, default_value_t = 8, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_calls_per_session: u32,
    /// Tool calls the whole server may have running at once, every session and every
    /// stateless request counted; one more is refused (-32000, E_SKILL_MCP_BUSY).
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_runs: u32,
    /// Tool calls one token may have running at once, whatever session or stateless request
    /// they come in; one more is refused (-32000, E_SKILL_MCP_BUSY).
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), requires = "tokens")]
    max_runs_per_token: u32,
    /// Requests one token may have in flight at once, event streams counted until they end;
    /// one more is answered 429.
    #[arg(long, default_value_t = 256, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), requires = "tokens")]
    max_requests_per_token: u32,
    /// Connections one client address may hold open at once; one more is answered 503.
    #[arg(long, default_value_t = 256, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), requires = "http")]
    max_connections_per_address: u32,
    /// How long a request body may take to arrive, whole; a slower one is answered 408 and
    /// its connection closed.
    #[arg(long, default_value = "30s", value_name = "TIME", value_parser = parse_duration, requires = "http")]
    body_timeout: Duration,
    /// The largest HTTP request body, in bytes; a larger one is answered 413.
    #[arg(long, default_value_t = 4 << 20, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1024..), requires = "http")]
    max_body: u64,
    /// How long the event stream an HTTP GET opens stays open; the client then reconnects (a
    /// POST's stream ends with its answer).
    #[arg(long, default_value = "60m", value_name = "TIME", value_parser = parse_duration, requires = "http")]
    max_stream_duration: Duration,
    /// On SIGTERM or Ctrl-C, how long the tool calls running are given before their
    /// workspaces are removed.
    #[arg(long, default_value = "10s", value_name = "TIME", value_parser = parse_duration)]
    drain_timeout: Duration,
    /// Serve the catalog as it was at start: do not follow changes to the skills.
    #[arg(long)]
    no_watch: bool,
    /// How often sources that are not watched on disk (HTTP, OCI, git, a path that does not
    /// exist yet) are read again; 0: never.
    #[arg(long, default_value = "10s", value_name = "TIME", value_parser = parse_duration)]
    poll_interval: Duration,
    /// Let every script tool read PATH (a file or a directory, and what it holds), on top of
    /// what its skill declares; repeatable. As `skillcat run --allow-read`: a relative PATH is
    /// taken against the working directory, and the configured ceiling wins (a PATH outside
    /// `[sandbox] fs_read`/`fs_write` is refused). One skill's own: `[skills.NAME] allow_read`.
    #[arg(long = "allow-read", value_name = "PATH")]
    allow_read: Vec<String>,
    /// Let every script tool write (and read) PATH, on top of what its skill declares;
    /// repeatable. PATH must lie under `[sandbox] fs_write`.
    #[arg(long = "allow-write", value_name = "PATH")]
    allow_write: Vec<String>,
    /// Let every script tool reach HOST (`api.github.com`, `uploads.github.com:443`,
    /// `*.example.com`; without a port, 80 and 443) through its run's proxy; repeatable. Bare
    /// `--allow-net` grants the whole network. Refused unless `[sandbox] network` allows it.
    #[arg(
        long = "allow-net",
        value_name = "HOST",
        num_args = 0..=1,
        default_missing_value = "",
        action = clap::ArgAction::Append
    )]
    allow_net: Vec<String>,
}

/// `skillcat mcp [SOURCE]`
pub async fn run(a: McpArgs, g: &Globals) -> CliResult {
    let (config, env) = super::configuration(g)?;
    let env_shown = env.clone();
    let options = g.catalog_options(&config);
    let named = match &a.source {
        Some(arg) => {
            // Opened as `run` opens it (a skill directory is one skill), errors printed.
            let o = super::read::open_and_discover(arg, g).await?;
            let (arg, shown, source, found) = (arg.clone(), o.shown, o.src, o.found);
            Some(ops::Named {
                arg,
                shown,
                source,
                found,
            })
        }
        None => None,
    };
    // The operator's grants, on top of what each skill declares: checked as `run` checks its
    // flags (a path that is missing or outside the ceiling is a usage error, never dropped).
    let extra =
        skillcat::ops::script::asked(&a.allow_read, &a.allow_write, &a.allow_net).map_err(|e| {
            usage!(
                "--allow-net {}: {}",
                super::script::on_stderr(&e.host),
                e.source.why
            )
        })?;
    super::script::check_granted(&extra, &config, &env)?;
    super::script::warn_skill_tables(&config, &env, None);
    let catalog = ops::catalog(&config, named, !a.no_watch, options);
    // Only trusted skills get tools at all; for them the gate allows, as for `skillcat run`.
    let dirs = g.env.user_dirs();
    let session = match skillcat::ops::script::session(&config, env, catalog, dirs, extra) {
        Ok(s) => s,
        Err(e) if skillcat::ops::script::is_config_error(&e) => {
            return Err(usage!("{e}"));
        }
        Err(e) => {
            return Err(failed!("{e} ({})", e.code()));
        }
    };
    // A server lives long and may be killed mid-call: a watcher removes its workspaces when it
    // exits, however it exits (the runner's workspaces are under the default base).
    let _reaper = match skillcat::script::reap_on_exit(
        &skillcat::script::WorkspaceBase::default_dir(&g.env.user_dirs()),
    ) {
        Ok(r) => Some(r),
        Err(e) => {
            note!(
                "warning: no watcher removes the workspaces if this server is killed ({e}); the next start removes them"
            );
            None
        }
    };
    let options = ServerOptions::default()
        .with_max_calls_per_session(a.max_calls_per_session as usize)
        .with_max_runs(a.max_runs as usize)
        .with_drain_timeout(a.drain_timeout);
    let server =
        McpServer::with_options(&session, config.prompt_options(PromptFormat::Xml), options).await;
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
    let _watching = (!a.no_watch).then(|| {
        let live = ops::live_options(&config, a.source.as_deref(), a.poll_interval);
        let log: Arc<dyn Fn(&str) + Send + Sync> =
            Arc::new(|line: &str| note!("skillcat mcp: {}", super::script::on_stderr(line)));
        let watching = server.watch(live.with_log(log));
        for p in watching.problems() {
            note!("warning: not watched (read again every --poll-interval only): {p}");
        }
        watching
    });
    let listed = if tools.is_empty() {
        String::new()
    } else {
        format!(": {}", tools.join(", "))
    };
    if let Some(addr) = a.http {
        return serve_http(&a, addr, server, tools.len(), &listed, &config).await;
    }
    let stop = ops::stop_signal();
    err!(
        "skillcat mcp: serving {} tool(s) over stdio{listed}",
        tools.len()
    );
    match server.serve_stdio_until(stop).await {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e @ skillcat::mcp::ServeError::Initialize(_)) => Err(usage!("{e}")),
        Err(e) => Err(failed!("{e}")),
    }
}

/// `skillcat mcp … --http ADDR`: serves until SIGINT/SIGTERM, then drains.
async fn serve_http(
    a: &McpArgs,
    addr: SocketAddr,
    server: McpServer,
    tools: usize,
    listed: &str,
    config: &skillcat::config::Config,
) -> CliResult {
    let tls = super::tls_config(a.tls_cert.as_deref(), a.tls_key.as_deref())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| usage!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().unwrap_or(addr);
    let mut opts = HttpOptions::new(local);
    opts.tls = tls.is_some();
    opts.tokens = a.tokens.clone();
    opts.allow_anonymous = a.allow_anonymous;
    opts.allow_origins = a.allow_origins.clone();
    opts.max_sessions = a.max_sessions as usize;
    opts.session_idle = a.session_idle;
    opts.max_body = usize::try_from(a.max_body).unwrap_or(usize::MAX);
    opts.max_stream = a.max_stream_duration;
    opts.body_timeout = a.body_timeout;
    opts.max_requests_per_token = a.max_requests_per_token as usize;
    opts.max_runs_per_token = a.max_runs_per_token as usize;
    let http = server.http(opts).map_err(|e| usage!("{e}"))?;
    let max_connections = a.max_connections_per_address as usize;
    let mut limits = ops::http_limits(config, max_connections, a.drain_timeout);
    if let Some(said) = limits.fit_open_files() {
        note!("warning: {said}");
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    let stop = ops::stop_signal();
    err!(
        "skillcat mcp: serving {tools} tool(s) over Streamable HTTP at {scheme}://{local}/mcp{}{listed}",
        if a.tokens.is_some() {
            " (bearer tokens)"
        } else {
            ""
        }
    );
    let max_stream = a.max_stream_duration;
    ops::serve_http(server, http, listener, limits, tls, max_stream, stop)
        .await
        .map_err(|e| failed!("{e}"))?;
    err!("skillcat mcp: stopped; every workspace removed");
    Ok(ExitStatus::Success)
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
    let untrusted = ops::untrusted_sources(config);
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
