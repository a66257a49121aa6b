//! The Streamable HTTP transport: rmcp's [`StreamableHttpService`] at `/mcp`, behind the checks
//! a server reachable by others needs.
//!
//! ```text
//! request ─▶ /mcp? (else 404)
//!         ─▶ Origin: absent, the server's own, or --allow-origin'd?    else 403
//!         ─▶ Authorization: Bearer <token with the mcp right>?         else 401 (403: no mcp right)
//!         ─▶ an initialize while --max-sessions are open?              503 (Retry-After)
//!         ─▶ rmcp: POST (413 over --max-body) · GET event stream · DELETE ends the session (204);
//!            Mcp-Session-Id; a Host that is not loopback, for a loopback server: 403
//!         ─▶ a GET's event stream ends after --max-stream-duration (the client reconnects)
//! ```
//!
//! Each `Mcp-Session-Id` is one client session of the server ([`McpServer::client_session`]):
//! its own tool set and workspaces, removed when the client ends it (`DELETE`), when it has
//! been idle for `session_idle`, or at shutdown. Requests of the stateless revision
//! (2026-07-28, no session) are each a client session of their own.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use futures_util::StreamExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::registry::tokens::{AuthError, Right, Tokens};

/// The path of the endpoint.
pub const ENDPOINT: &str = "/mcp";

/// How the HTTP transport is reached and what it allows; [`HttpOptions::new`] gives the
/// documented defaults.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The address the server listens on (its own origin is made from it).
    pub addr: SocketAddr,
    /// Whether it speaks HTTPS (its own origin is then `https://…`).
    pub tls: bool,
    /// The token file (the central registry's): every request needs a bearer token of it
    /// with the `mcp` right. `None`: no token is asked for.
    pub tokens: Option<PathBuf>,
    /// Serve without tokens on an address beyond loopback (refused otherwise).
    pub allow_anonymous: bool,
    /// Origins besides the server's own that browsers may call it from
    /// (`https://app.example.com`, `http://localhost:5173`).
    pub allow_origins: Vec<String>,
    /// Client sessions open at once (default 64); an `initialize` beyond is answered 503.
    pub max_sessions: usize,
    /// A client session with no request for this long is ended and its workspaces removed
    /// (default 10 min).
    pub session_idle: Duration,
    /// The largest request body (default 4 MiB); a larger one is answered 413.
    pub max_body: usize,
    /// How long the event stream a GET opens stays open (default 1 h); the client reconnects
    /// after. (A POST's stream ends with its answer.)
    pub max_stream: Duration,
}

impl HttpOptions {
    /// The defaults, listening on `addr`, no tokens.
    pub fn new(addr: SocketAddr) -> Self {
        HttpOptions {
            addr,
            tls: false,
            tokens: None,
            allow_anonymous: false,
            allow_origins: Vec::new(),
            max_sessions: 64,
            session_idle: Duration::from_secs(600),
            max_body: 4 << 20,
            max_stream: Duration::from_secs(3600),
        }
    }
}

/// Why the HTTP transport could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// Beyond loopback without tokens, and not allowed.
    #[error(
        "{0} is reachable beyond this machine, and no --tokens FILE is given: every client \
         could run this catalog's scripts. Give --tokens FILE (`skillcat token create --tokens \
         FILE --name NAME --scope '*' --can mcp`), listen on 127.0.0.1, or pass \
         --allow-anonymous to serve without tokens all the same"
    )]
    Anonymous(SocketAddr),
    /// The token file does not read.
    #[error("{0}")]
    Tokens(String),
    /// An allowed origin that is not one.
    #[error(
        "--allow-origin {0:?} is not an origin: write scheme://host[:port] (`https://app.example.com`)"
    )]
    Origin(String),
}

/// The HTTP transport of a server: the router to serve, and its stop.
#[derive(Debug, Clone)]
pub struct McpHttp {
    router: Router,
    stop: CancellationToken,
    guard: Arc<Guard>,
}

impl McpHttp {
    /// The router: `/mcp`, everything else 404. Serve it with the connect info
    /// (`into_make_service`) on any listener.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// From now on a new client session is refused (503): the server is going away.
    pub fn drain(&self) {
        self.guard.draining.store(true, Ordering::SeqCst);
    }

    /// Ends every client session and event stream now (their tool sets go with them: call
    /// [`McpServer::shutdown`] after, to wait for their calls and remove every workspace).
    pub fn close(&self) {
        self.guard.draining.store(true, Ordering::SeqCst);
        self.stop.cancel();
    }

    /// Client sessions open now.
    pub async fn sessions(&self) -> usize {
        self.guard.sessions.sessions.read().await.len()
    }
}

/// What the checks in front of rmcp need.
#[derive(Debug)]
struct Guard {
    origins: Vec<String>,
    tokens: Option<WatchedTokens>,
    sessions: Arc<LocalSessionManager>,
    max_sessions: usize,
    max_body: usize,
    max_stream: Duration,
    /// Held while a new session is counted and made, so the limit is exact.
    opening: tokio::sync::Mutex<()>,
    draining: AtomicBool,
}

/// The token file, read again when it changes (a revoked token is refused from the next
/// request on).
#[derive(Debug)]
struct WatchedTokens {
    path: PathBuf,
    state: Mutex<(Option<Stamp>, Arc<Tokens>)>,
}

type Stamp = (SystemTime, u64, u64);

fn stamp_of(path: &std::path::Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

impl WatchedTokens {
    fn load(path: PathBuf) -> Result<Self, HttpError> {
        let stamp = stamp_of(&path);
        let tokens = Tokens::load(&path).map_err(|e| HttpError::Tokens(e.to_string()))?;
        Ok(WatchedTokens {
            path,
            state: Mutex::new((stamp, Arc::new(tokens))),
        })
    }

    /// The tokens now: the file read again when its stamp changed (kept as it was when the
    /// new text does not read).
    fn current(&self) -> Arc<Tokens> {
        let stamp = stamp_of(&self.path);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if stamp != state.0 {
            if let Ok(t) = Tokens::load(&self.path) {
                state.1 = Arc::new(t);
            }
            state.0 = stamp;
        }
        state.1.clone()
    }
}

/// `scheme://host:port`, lowercase, the default port written out; `None` for what is not an
/// origin of `http`/`https`.
fn normalize_origin(origin: &str) -> Option<String> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        let port = match after {
            "" => default,
            p => p.strip_prefix(':')?.parse().ok()?,
        };
        (format!("[{}]", h.to_ascii_lowercase()), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_ascii_lowercase(), p.parse::<u16>().ok()?),
            None => (authority.to_ascii_lowercase(), default),
        }
    };
    if host.is_empty() {
        return None;
    }
    Some(format!("{scheme}://{host}:{port}"))
}

/// The origins a page of the server itself has: its loopback names on a loopback address, the
/// address itself otherwise (none for an unspecified one: name them with `--allow-origin`).
fn own_origins(addr: SocketAddr, tls: bool) -> Vec<String> {
    let scheme = if tls { "https" } else { "http" };
    let port = addr.port();
    let hosts: Vec<String> = if addr.ip().is_loopback() {
        vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]
    } else if addr.ip().is_unspecified() {
        Vec::new()
    } else {
        match addr {
            SocketAddr::V4(a) => vec![a.ip().to_string()],
            SocketAddr::V6(a) => vec![format!("[{}]", a.ip())],
        }
    };
    hosts
        .into_iter()
        .map(|h| format!("{scheme}://{h}:{port}"))
        .collect()
}

fn plain(status: StatusCode, text: &str) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from(format!("{text}\n")))
        .expect("valid response")
}

fn unauthorized(text: &str) -> Response {
    let mut r = plain(StatusCode::UNAUTHORIZED, text);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"skillcat\""),
    );
    r
}

/// Whether a request body is an `initialize` request (the one request that opens a session).
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|m| m == "initialize")
}

/// The checks in front of rmcp, then the event-stream duration.
async fn check(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .ok()
            .and_then(normalize_origin)
            .is_some_and(|o| guard.origins.contains(&o));
        if !allowed {
            return plain(
                StatusCode::FORBIDDEN,
                "Forbidden: this Origin may not call the server (skillcat mcp --allow-origin)",
            );
        }
    }
    if let Some(tokens) = &guard.tokens {
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            });
        let Some(presented) = presented else {
            return unauthorized("Unauthorized: this server needs `Authorization: Bearer <token>`");
        };
        let tokens = tokens.current();
        match tokens.authenticate(presented) {
            Ok(entry) if entry.can(Right::Mcp) => {}
            Ok(entry) => {
                return plain(
                    StatusCode::FORBIDDEN,
                    &format!(
                        "Forbidden: the token {} has no mcp right (skillcat token create … --can mcp)",
                        entry.name()
                    ),
                );
            }
            Err(AuthError::Revoked(_)) => {
                return unauthorized("Unauthorized: the token is revoked");
            }
            Err(AuthError::Unknown) => {
                return unauthorized("Unauthorized: the token is not known to this server");
            }
        }
    }
    if req.method() == Method::DELETE {
        // rmcp accepts a session's end with 202; clients (the Python SDK) expect 200 or 204.
        let mut response = next.run(req).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Body::empty();
        }
        return response;
    }
    let listens = req.method() == Method::GET;
    let opens_session =
        req.method() == Method::POST && !req.headers().contains_key("mcp-session-id");
    let response = if opens_session {
        // Read the body (within the limit rmcp would apply) to tell an initialize, which opens
        // a session, from a stateless request.
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "Payload Too Large: a request body may hold {} bytes (skillcat mcp --max-body)",
                    guard.max_body
                ),
            );
        };
        let req = Request::from_parts(parts, Body::from(bytes.clone()));
        if is_initialize(&bytes) {
            let _opening = guard.opening.lock().await;
            if guard.draining.load(Ordering::SeqCst) {
                return busy("Service Unavailable: the server is shutting down");
            }
            if guard.sessions.sessions.read().await.len() >= guard.max_sessions {
                return busy(&format!(
                    "Service Unavailable: {} sessions are open, as many as the server allows \
                     (skillcat mcp --max-sessions); end one (DELETE) or try again later",
                    guard.max_sessions
                ));
            }
            next.run(req).await
        } else {
            next.run(req).await
        }
    } else {
        next.run(req).await
    };
    // The event stream a GET opens is the one that lasts (a POST's ends with its answer).
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !(listens && is_stream) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let ends = tokio::time::sleep(guard.max_stream);
    let stream = body.into_data_stream().take_until(ends);
    Response::from_parts(parts, Body::from_stream(stream))
}

fn busy(text: &str) -> Response {
    let mut r = plain(StatusCode::SERVICE_UNAVAILABLE, text);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    r
}

impl McpServer {
    /// The Streamable HTTP transport of this server: a router whose `/mcp` makes a client
    /// session for each `Mcp-Session-Id` (its own tool set and workspaces, removed when the
    /// client ends it with `DELETE`, after `session_idle`, or at shutdown), behind the Origin
    /// check (403), the bearer token (401; 403 without the `mcp` right), the session limit
    /// (503) and the body limit (413). Fails on an address
    /// beyond loopback without tokens (unless allowed), a token file that does not read, or
    /// an allowed origin that is not one.
    pub fn http(&self, opts: HttpOptions) -> Result<McpHttp, HttpError> {
        let loopback = opts.addr.ip().is_loopback();
        if !loopback && opts.tokens.is_none() && !opts.allow_anonymous {
            return Err(HttpError::Anonymous(opts.addr));
        }
        let mut origins = own_origins(opts.addr, opts.tls);
        for o in &opts.allow_origins {
            origins.push(normalize_origin(o).ok_or_else(|| HttpError::Origin(o.clone()))?);
        }
        let tokens = opts.tokens.clone().map(WatchedTokens::load).transpose()?;
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(opts.session_idle);
        let sessions = Arc::new(sessions);
        let stop = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(opts.max_body)
            .with_cancellation_token(stop.clone());
        // DNS rebinding: a loopback server answers only loopback Host names; one reachable
        // beyond is reached by names it cannot know, and its tokens (or the Origin check, for
        // a browser) are what keep others out.
        if !loopback {
            config = config.disable_allowed_hosts();
        }
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.client_session()),
            sessions.clone(),
            config,
        );
        let guard = Arc::new(Guard {
            origins,
            tokens,
            sessions,
            max_sessions: opts.max_sessions.max(1),
            max_body: opts.max_body,
            max_stream: opts.max_stream,
            opening: tokio::sync::Mutex::new(()),
            draining: AtomicBool::new(false),
        });
        let router = Router::new()
            .route_service(ENDPOINT, service)
            .layer(middleware::from_fn_with_state(guard.clone(), check));
        Ok(McpHttp {
            router,
            stop,
            guard,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_compared_normalized() {
        assert_eq!(
            normalize_origin("HTTP://LocalHost:8080").as_deref(),
            Some("http://localhost:8080")
        );
        assert_eq!(
            normalize_origin("https://app.example.com").as_deref(),
            Some("https://app.example.com:443")
        );
        assert_eq!(
            normalize_origin("http://[::1]:9").as_deref(),
            Some("http://[::1]:9")
        );
        for bad in [
            "null",
            "file:///x",
            "http://",
            "http://a/b",
            "http://a:99999",
            "a.com",
        ] {
            assert_eq!(normalize_origin(bad), None, "{bad}");
        }
        let own = own_origins("127.0.0.1:7000".parse().unwrap(), false);
        assert!(
            own.contains(&"http://localhost:7000".to_string()),
            "{own:?}"
        );
        assert!(own_origins("0.0.0.0:7000".parse().unwrap(), true).is_empty());
        assert_eq!(
            own_origins("10.1.2.3:7000".parse().unwrap(), true),
            ["https://10.1.2.3:7000"]
        );
    }

    #[test]
    fn an_initialize_is_told_from_other_requests() {
        assert!(is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#
        ));
        assert!(!is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(!is_initialize(b"[not json"));
    }
}
