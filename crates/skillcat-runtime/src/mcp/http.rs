//! The Streamable HTTP transport: rmcp's [`StreamableHttpService`] at `/mcp`, behind the checks
//! a server reachable by others needs.
//!
//! ```text
//! request ─▶ /mcp? (else 404)
//!         ─▶ Origin: absent, the server's own, or --allow-origin'd?    else 403
//!         ─▶ Authorization: Bearer <token with the mcp right>?         else 401 (403: no mcp right)
//!         ─▶ the token's requests in flight < --max-requests-per-token? else 429 (Retry-After)
//!         ─▶ Mcp-Session-Id: one, of the shape the server gives?       else 400
//!            of a session another token opened?                        404 (as an unknown one)
//!         ─▶ the body, whole, within --body-timeout and --max-body?     else 408 / 413
//!         ─▶ rmcp: POST · GET event stream · DELETE ends the session (204); a Host that is not
//!            loopback, for a loopback server: 403; a session made (sessions.rs) only within
//!            --max-sessions (else 503, Retry-After) and bound to the caller's token
//!         ─▶ a GET's or a listen's event stream ends after --max-stream-duration (the client reconnects)
//! ```
//!
//! Each `Mcp-Session-Id` is one client session of the server ([`McpServer::client_session`]):
//! its own tool set and workspaces, removed when the client ends it (`DELETE`), when it has
//! been idle for `session_idle`, when the token that opened it is revoked, or at shutdown.
//! Requests of the stateless revision (2026-07-28, no session) are each a client session of
//! their own: what bounds their tool calls is the token's run slots (`max_runs_per_token`,
//! carried to the handler on the request) and the server's
//! ([`ServerOptions::max_runs`](super::ServerOptions::max_runs)).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
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

use super::sessions::{BoundSessions, OPENER, Opener, Owner, Refusal, well_formed};
use super::{McpServer, TokenRuns};
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
    /// How long a request's body may take to arrive, whole (default 30 s); a slower one is
    /// answered 408 and its connection closed.
    pub body_timeout: Duration,
    /// Requests of one token in flight at once, event streams counted until they end (default
    /// 256); one more is answered 429. Without tokens, the listener's per-address cap is the
    /// bound.
    pub max_requests_per_token: usize,
    /// Tool calls of one token running at once, whatever session or stateless request they
    /// come in (default 16); one more is refused (`-32000`, `E_SKILL_MCP_BUSY`). Without
    /// tokens, only the server's limit applies.
    pub max_runs_per_token: usize,
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
            body_timeout: Duration::from_secs(30),
            max_requests_per_token: 256,
            max_runs_per_token: 16,
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

/// On an answer of the router: this is an event stream meant to last (a GET's, or a
/// `subscriptions/listen`'s), ended by the transport after `max_stream`. Every other answer
/// ends with the request it answers, so a listener serving the router can keep its request
/// timeout short and give these alone the long one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventStream;

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
        self.guard.sessions.drain();
    }

    /// Ends every client session and event stream now (their tool sets go with them: call
    /// [`McpServer::shutdown`] after, to wait for their calls and remove every workspace).
    pub fn close(&self) {
        self.guard.sessions.drain();
        self.stop.cancel();
    }

    /// Client sessions open now.
    pub async fn sessions(&self) -> usize {
        self.guard.sessions.len().await
    }
}

/// What the checks in front of rmcp need.
#[derive(Debug)]
struct Guard {
    origins: Vec<String>,
    tokens: Option<WatchedTokens>,
    sessions: Arc<BoundSessions>,
    max_body: usize,
    max_stream: Duration,
    body_timeout: Duration,
    max_requests_per_token: usize,
    max_runs_per_token: usize,
    /// Each token's requests in flight.
    in_flight: Mutex<HashMap<Arc<str>, usize>>,
    /// Each token's run slots.
    runs: Mutex<HashMap<Arc<str>, Arc<tokio::sync::Semaphore>>>,
}

impl Guard {
    /// One of the token's places for a request in flight, or `None` when it holds them all.
    fn enter(self: &Arc<Self>, owner: &Arc<str>) -> Option<InFlight> {
        let mut all = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let n = all.entry(owner.clone()).or_insert(0);
        if *n >= self.max_requests_per_token {
            return None;
        }
        *n += 1;
        Some(InFlight {
            guard: Arc::downgrade(self),
            owner: owner.clone(),
        })
    }

    fn token_runs(&self, owner: &Arc<str>) -> TokenRuns {
        let mut all = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let slots = all
            .entry(owner.clone())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(self.max_runs_per_token)))
            .clone();
        TokenRuns {
            slots,
            limit: self.max_runs_per_token,
        }
    }

    /// Ends the sessions of tokens the file no longer accepts (revoked, removed, without the
    /// mcp right).
    async fn end_sessions_of_gone_tokens(&self, tokens: &Tokens) {
        let accepted = |owner: &Owner| match owner {
            None => true,
            Some(hash) => tokens
                .entries()
                .iter()
                .any(|e| !e.is_revoked() && e.can(Right::Mcp) && *e.hash() == **hash),
        };
        self.sessions.close_unless(accepted).await;
    }
}

/// A request of a token in flight, counted until it is dropped (with the answer's body).
#[derive(Debug)]
struct InFlight {
    guard: Weak<Guard>,
    owner: Arc<str>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(guard) = self.guard.upgrade() else {
            return;
        };
        let mut all = guard
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = all.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                all.remove(&self.owner);
            }
        }
    }
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
    /// new text does not read); and whether they changed.
    fn current(&self) -> (Arc<Tokens>, bool) {
        let stamp = stamp_of(&self.path);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut changed = false;
        if stamp != state.0 {
            if let Ok(t) = Tokens::load(&self.path) {
                state.1 = Arc::new(t);
                changed = true;
            }
            state.0 = stamp;
        }
        (state.1.clone(), changed)
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

/// The body of a request, whole: within `max` bytes (else 413) and `deadline` (else 408, and
/// the connection closed: a client that sends slowly holds nothing longer than that).
async fn read_body(body: Body, max: usize, deadline: Duration) -> Result<Vec<u8>, Response> {
    let mut data = body.into_data_stream();
    let mut bytes = Vec::new();
    let read = async {
        while let Some(chunk) = data.next().await {
            let Ok(chunk) = chunk else {
                return Err(plain(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the body did not read",
                ));
            };
            if bytes.len() + chunk.len() > max {
                return Err(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!(
                        "Payload Too Large: a request body may hold {max} bytes (skillcat mcp --max-body)"
                    ),
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(())
    };
    match tokio::time::timeout(deadline, read).await {
        Ok(Ok(())) => Ok(bytes),
        Ok(Err(refused)) => Err(refused),
        Err(_) => {
            let mut r = plain(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "Request Timeout: the body did not arrive within {} s (skillcat mcp --body-timeout)",
                    deadline.as_secs_f64()
                ),
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(r)
        }
    }
}

/// The `method` of a request body (`None` for a batch, a response or what is not JSON).
fn method_of(body: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body).ok()?.method
}

/// Who presents the request: the hash of its token (`None` when no tokens are asked for), or
/// the answer that refuses it.
fn caller(guard: &Arc<Guard>, req: &Request) -> Result<Owner, Box<Response>> {
    let Some(tokens) = &guard.tokens else {
        return Ok(None);
    };
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    let Some(presented) = presented else {
        return Err(Box::new(unauthorized(
            "Unauthorized: this server needs `Authorization: Bearer <token>`",
        )));
    };
    let (tokens, changed) = tokens.current();
    if changed {
        // A token revoked: its sessions end now, not at their next request.
        let (guard, tokens) = (guard.clone(), tokens.clone());
        tokio::spawn(async move { guard.end_sessions_of_gone_tokens(&tokens).await });
    }
    let refused = match tokens.authenticate(presented) {
        Ok(entry) if entry.can(Right::Mcp) => return Ok(Some(Arc::from(entry.hash()))),
        Ok(entry) => plain(
            StatusCode::FORBIDDEN,
            &format!(
                "Forbidden: the token {} has no mcp right (skillcat token create … --can mcp)",
                entry.name()
            ),
        ),
        Err(AuthError::Revoked(_)) => unauthorized("Unauthorized: the token is revoked"),
        Err(AuthError::Unknown) => {
            unauthorized("Unauthorized: the token is not known to this server")
        }
    };
    Err(Box::new(refused))
}

/// What an unknown session is answered, and a session of another token too (so a guessed or
/// overheard id tells nothing).
fn no_session() -> Response {
    plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
}

/// The checks in front of rmcp, then the event-stream duration.
async fn check(State(guard): State<Arc<Guard>>, mut req: Request, next: Next) -> Response {
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
    let owner = match caller(&guard, &req) {
        Ok(owner) => owner,
        Err(refused) => return *refused,
    };
    // Counted from here until the answer's body is dropped (an event stream: until it ends).
    let in_flight = match &owner {
        Some(o) => match guard.enter(o) {
            Some(held) => Some(held),
            None => {
                let mut r = plain(
                    StatusCode::TOO_MANY_REQUESTS,
                    &format!(
                        "Too Many Requests: this token has {} request{} in flight, as many as it \
                         may (skillcat mcp --max-requests-per-token)",
                        guard.max_requests_per_token,
                        if guard.max_requests_per_token == 1 {
                            ""
                        } else {
                            "s"
                        },
                    ),
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return r;
            }
        },
        None => None,
    };
    // A session id is one header of the shape the server gives: rmcp reads any other (not
    // UTF-8, say) as no session at all, and would make a new one.
    let mut ids = req.headers().get_all("mcp-session-id").iter();
    if let Some(id) = ids.next() {
        if ids.next().is_some() || !well_formed(id.as_bytes()) {
            return plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: Mcp-Session-Id is not a session id this server gives",
            );
        }
        // Well formed, so ASCII.
        let id = String::from_utf8_lossy(id.as_bytes());
        if guard.sessions.owner(&id).is_some_and(|o| o != owner) {
            return no_session();
        }
    }
    if let Some(o) = &owner {
        req.extensions_mut().insert(guard.token_runs(o));
    }
    let mut listens = req.method() == Method::GET;
    if !listens {
        let (parts, body) = req.into_parts();
        let bytes = match read_body(body, guard.max_body, guard.body_timeout).await {
            Ok(b) => b,
            Err(refused) => return refused,
        };
        // The stateless revision's way to listen: a POST whose stream lasts.
        listens = method_of(&bytes).is_some_and(|m| m == "subscriptions/listen");
        req = Request::from_parts(parts, Body::from(bytes));
    }
    let deleting = req.method() == Method::DELETE;
    let opener = Opener {
        owner,
        refused: OnceLock::new(),
    };
    let (mut response, refused) = OPENER
        .scope(opener, async {
            let response = next.run(req).await;
            (response, OPENER.with(|o| o.refused.get().copied()))
        })
        .await;
    match refused {
        Some(Refusal::Full(max)) => {
            return busy(&format!(
                "Service Unavailable: {max} sessions are open, as many as the server allows \
                 (skillcat mcp --max-sessions); end one (DELETE) or try again later"
            ));
        }
        Some(Refusal::Draining) => {
            return busy("Service Unavailable: the server is shutting down");
        }
        None => {}
    }
    if deleting && response.status() == StatusCode::ACCEPTED {
        // rmcp accepts a session's end with 202; clients (the Python SDK) expect 200 or 204.
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = Body::empty();
    }
    // The event stream a GET or a listen opens is the one that lasts (another POST's ends
    // with its answer).
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let ends = (listens && is_stream).then(|| tokio::time::sleep(guard.max_stream));
    if ends.is_none() && in_flight.is_none() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    if ends.is_some() {
        parts.extensions.insert(EventStream);
    }
    let stream = body.into_data_stream();
    let stream = match ends {
        Some(ends) => stream.take_until(ends).left_stream(),
        None => stream.right_stream(),
    };
    // The token's place is given back when the body is dropped: written, or given up.
    let stream = stream.map(move |chunk| {
        let _held = &in_flight;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// Reads the token file again every second until `stop`, ending the sessions of the tokens it
/// no longer accepts.
async fn watch_tokens(guard: Weak<Guard>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let Some(guard) = guard.upgrade() else {
            return;
        };
        if let Some(tokens) = &guard.tokens {
            let (tokens, changed) = tokens.current();
            if changed {
                guard.end_sessions_of_gone_tokens(&tokens).await;
            }
        }
    }
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
    /// client ends it with `DELETE`, after `session_idle`, when its token is revoked, or at
    /// shutdown), behind the Origin check (403), the bearer token (401; 403 without the `mcp`
    /// right), the token's requests in flight (429), the session id's shape (400) and owner
    /// (404), the body's size and deadline (413, 408) and the session limit (503). Fails on an
    /// address
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
        let sessions = Arc::new(BoundSessions::new(sessions, opts.max_sessions));
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
            max_body: opts.max_body,
            max_stream: opts.max_stream,
            body_timeout: opts.body_timeout,
            max_requests_per_token: opts.max_requests_per_token.max(1),
            max_runs_per_token: opts.max_runs_per_token.max(1),
            in_flight: Mutex::new(HashMap::new()),
            runs: Mutex::new(HashMap::new()),
        });
        // A revoked token's sessions end even when nothing else is asked meanwhile: the file
        // is looked at every second.
        if guard.tokens.is_some()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(watch_tokens(Arc::downgrade(&guard), stop.clone()));
        }
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
    fn a_listen_is_told_from_other_requests() {
        let listen = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}"#;
        assert_eq!(method_of(listen).as_deref(), Some("subscriptions/listen"));
        let escaped = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions\/listen"}"#;
        assert_eq!(method_of(escaped).as_deref(), Some("subscriptions/listen"));
        assert_eq!(method_of(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
        assert_eq!(method_of(b"[not json"), None);
    }

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
}
