//! What `mcp` does besides its arguments and its messages: which sources it can watch, which
//! configured sources offer no tools, and serving a server over Streamable HTTP until a stop.

use std::path::PathBuf;
use std::time::Duration;

use crate::catalog::{Catalog, CatalogOptions, CatalogSource};
use crate::config::Config;
use crate::mcp::LiveOptions;
use crate::serve::ServeLimits;
use crate::source::{SourceKind, SourceSpec};

pub use super::script::Named;

/// The catalog a server serves: the source named, trusted as a run trusts one
/// ([`named_source`](super::script::named_source)), else the configured sources. The discovery
/// made when it was named seeds the catalog (the source is read once), but for an archive a
/// `live` catalog follows: it is held in memory as it was read, so it is opened again from its
/// path at each reload.
pub fn catalog(
    config: &Config,
    named: Option<Named>,
    live: bool,
    options: CatalogOptions,
) -> Catalog {
    let sources = match named {
        Some(n) => {
            let archive = SourceSpec::parse(&n.arg).is_ok_and(|s| s.kind == SourceKind::Archive);
            let src = if archive && live {
                CatalogSource::spec(n.arg.clone()).named(n.shown)
            } else {
                CatalogSource::discovered(n.shown, n.source, n.found)
            };
            vec![super::script::named_source(config, &n.arg, src)]
        }
        None => config.sources.iter().map(CatalogSource::from).collect(),
    };
    Catalog::with_options(sources, options)
}

/// What a live server follows: the source named (else the configured ones) watched on disk
/// where it is local and exists, the others read again every `poll` (never when zero).
pub fn live_options(config: &Config, named: Option<&str>, poll: Duration) -> LiveOptions {
    let typed: Vec<String> = match named {
        Some(s) => vec![s.to_string()],
        None => config.sources.iter().map(|s| s.path.clone()).collect(),
    };
    let (paths, unwatched) = local_paths(&typed);
    LiveOptions::new(paths, (unwatched && !poll.is_zero()).then_some(poll))
}

/// The local paths of sources as typed (directories, archives, registry files), to watch; and
/// whether some source is not one (or does not exist yet), so that only a poll follows it.
pub fn local_paths(typed: &[String]) -> (Vec<PathBuf>, bool) {
    let mut paths = Vec::new();
    let mut unwatched = false;
    for t in typed {
        match SourceSpec::parse(t) {
            Ok(spec) if spec.is_local() => match spec.path {
                Some(p) if p.exists() => paths.push(p),
                _ => unwatched = true,
            },
            _ => unwatched = true,
        }
    }
    (paths, unwatched)
}

/// The configured sources whose skills offer no tools because they are not trusted, by name
/// (else path).
pub fn untrusted_sources(config: &Config) -> Vec<&str> {
    config
        .sources
        .iter()
        .filter(|s| !s.trusted && !s.core)
        .map(|s| s.name.as_deref().unwrap_or(&s.path))
        .collect()
}

/// The connection limits of a server over HTTP: `serve`'s, with `max_connections_per_address`
/// (room for an event stream beside each session's requests) and `drain_timeout`. A request
/// has until its answer is written as long as the longest run the configuration allows plus a
/// minute; only a lasting event stream gets longer ([`serve_http`]'s `stream_timeout`), so a
/// request sent or read slowly holds its connection no longer than that.
pub fn http_limits(
    config: &Config,
    max_connections_per_address: usize,
    drain_timeout: Duration,
) -> ServeLimits {
    let longest_run = Duration::from_secs(config.sandbox.max_timeout.min(86_400));
    ServeLimits {
        request_timeout: longest_run + Duration::from_secs(60),
        max_connections_per_address,
        drain_timeout,
        ..ServeLimits::default()
    }
}

#[cfg(feature = "mcp-http")]
pub use http::{ServeHttpError, TlsConfig, serve_http, stop_signal};

#[cfg(feature = "mcp-http")]
mod http {
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;

    use tokio::net::TcpListener;
    use tokio::time::Instant;

    use crate::mcp::{EventStream, McpHttp, McpServer, ServeError};
    use crate::serve::{AnswerTimeout, ServeLimits};

    /// The TLS configuration HTTPS is served with (none without the `tls` feature).
    #[cfg(feature = "tls")]
    pub type TlsConfig = Arc<tokio_rustls::rustls::ServerConfig>;
    /// The TLS configuration HTTPS is served with (none without the `tls` feature).
    #[cfg(not(feature = "tls"))]
    pub type TlsConfig = ();

    /// Why serving over HTTP failed.
    #[derive(Debug, thiserror::Error)]
    pub enum ServeHttpError {
        /// The listener failed.
        #[error(transparent)]
        Serve(#[from] std::io::Error),
        /// Workspaces were left after the sessions ended.
        #[error(transparent)]
        Cleanup(ServeError),
    }

    /// Serves `server`'s Streamable HTTP endpoint `http` on `listener` (over TLS with `tls`)
    /// until `stop` completes; then refuses new sessions, gives the calls running
    /// `limits.drain_timeout`, ends every session and removes every workspace. An event stream
    /// meant to last (that the transport ends at `max_stream`) gets a little longer on its
    /// connection, every other answer the request timeout of `limits`.
    #[allow(clippy::too_many_arguments)]
    pub async fn serve_http(
        server: McpServer,
        http: McpHttp,
        listener: TcpListener,
        limits: ServeLimits,
        tls: Option<TlsConfig>,
        max_stream: Duration,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeHttpError> {
        // The transport ends a lasting stream at `max_stream`, before its connection's timeout.
        let stream_timeout = max_stream + Duration::from_secs(30);
        let router = http
            .router()
            .layer(axum::middleware::from_fn(move |req, next| {
                long_for_event_streams(req, next, stream_timeout)
            }));
        let app = crate::serve::with_layers(router, false);
        // When the stop came plus the drain timeout: the one deadline of the calls running,
        // for the drain below and the shutdown after it.
        let deadline = Arc::new(OnceLock::new());
        let drain = {
            let (http, server, timeout) = (http.clone(), server.clone(), limits.drain_timeout);
            let deadline = deadline.clone();
            async move {
                stop.await;
                // New sessions are refused; the calls running get the drain timeout; then
                // every session and stream ends, which lets the listener stop.
                http.drain();
                let deadline = *deadline.get_or_init(|| Instant::now() + timeout);
                while server.calls_in_flight() > 0 && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                http.close();
            }
        };
        let served = match tls {
            #[cfg(feature = "tls")]
            Some(config) => crate::serve::run_app_tls(app, listener, limits, config, drain).await,
            _ => crate::serve::run_app(app, listener, limits, drain).await,
        };
        http.close();
        let deadline = *deadline.get_or_init(|| Instant::now() + limits.drain_timeout);
        let failures = server.shutdown_by(deadline).await;
        served?;
        if !failures.is_empty() {
            return Err(ServeHttpError::Cleanup(ServeError::Cleanup(failures)));
        }
        Ok(())
    }

    /// Completes on SIGINT or SIGTERM (never, if neither can be listened for). The handlers are
    /// installed when it is called, not when it is first polled: a signal that comes as soon as
    /// the server says it is serving is not the default action's (death) but a stop.
    pub fn stop_signal() -> impl Future<Output = ()> + Send + 'static {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            );
            async move {
                match signals {
                    (Ok(mut int), Ok(mut term)) => {
                        tokio::select! {
                            _ = int.recv() => {}
                            _ = term.recv() => {}
                        }
                    }
                    _ => std::future::pending().await,
                }
            }
        }
        #[cfg(not(unix))]
        {
            async {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }

    /// Gives an event stream meant to last (a GET's, a `subscriptions/listen`'s) `timeout` on
    /// its connection; every other answer has the request timeout.
    async fn long_for_event_streams(
        req: axum::extract::Request,
        next: axum::middleware::Next,
        timeout: Duration,
    ) -> axum::response::Response {
        let mut response = next.run(req).await;
        if response.extensions().get::<EventStream>().is_some() {
            response.extensions_mut().insert(AnswerTimeout(timeout));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SourceConfig;

    #[test]
    fn only_existing_local_sources_are_watched() {
        let dir = tempfile::tempdir().unwrap();
        let here = dir.path().display().to_string();
        let (paths, unwatched) = local_paths(std::slice::from_ref(&here));
        assert_eq!((paths, unwatched), (vec![dir.path().to_path_buf()], false));
        let later = dir.path().join("later").display().to_string();
        let (paths, unwatched) = local_paths(&[here, later]);
        assert_eq!(paths.len(), 1);
        assert!(unwatched, "a path that does not exist yet is polled");
        let (paths, unwatched) = local_paths(&["https://example.com/index.json".into()]);
        assert!(paths.is_empty() && unwatched);
    }

    #[test]
    fn untrusted_sources_are_named_by_their_name_else_their_path() {
        let mut named = SourceConfig::new("/skills/a");
        named.name = Some("team".into());
        let mut trusted = SourceConfig::new("/skills/b");
        trusted.trusted = true;
        let mut core = SourceConfig::new("/skills/c");
        core.core = true;
        let config = Config::default()
            .with_source(named)
            .with_source(trusted)
            .with_source(core)
            .with_source(SourceConfig::new("/skills/d"));
        assert_eq!(untrusted_sources(&config), ["team", "/skills/d"]);
    }
}
