//! The HTTP server over a [`Site`]: conditional requests, single byte ranges, HEAD, CORS.
//!
//! The answer to a request is decided by pure functions ([`respond`], [`parse_range`],
//! [`etag_matches`]) over the site's resource and the request headers; axum only carries it.

use std::future::Future;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use tokio::net::TcpListener;

use axum::extract::connect_info::Connected;

use super::limits::{Closer, Conn, ServeLimits, limited, track};
use super::site::{Site, SiteFile};

/// What a `Range` header asks of a body of known length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// No usable range: send everything (absent, another unit, several ranges, malformed).
    Full,
    /// Bytes `start..=end`.
    Partial(u64, u64),
    /// A well-formed range that selects nothing: 416.
    Unsatisfiable,
}

/// Reads one `Range` header value (RFC 9110 §14.1.2) for a body of `len` bytes. Only one
/// range is served; a multi-range request gets the whole body, as the RFC allows.
pub fn parse_range(value: &str, len: u64) -> RangeRequest {
    let Some((unit, spec)) = value.trim().split_once('=') else {
        return RangeRequest::Full;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return RangeRequest::Full;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeRequest::Full;
    };
    let num = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.trim().is_empty(), num(first), num(last)) {
        // bytes=-N: the last N bytes.
        (true, _, Some(n)) => {
            if n == 0 || len == 0 {
                RangeRequest::Unsatisfiable
            } else {
                RangeRequest::Partial(len - n.min(len), len - 1)
            }
        }
        // bytes=A- : from A to the end.
        (false, Some(a), None) if last.trim().is_empty() => {
            if a >= len {
                RangeRequest::Unsatisfiable
            } else {
                RangeRequest::Partial(a, len - 1)
            }
        }
        // bytes=A-B
        (false, Some(a), Some(b)) if a <= b => {
            if a >= len {
                RangeRequest::Unsatisfiable
            } else {
                RangeRequest::Partial(a, b.min(len - 1))
            }
        }
        _ => RangeRequest::Full,
    }
}

/// Whether an `If-None-Match` value matches `etag` (weak comparison, as RFC 9110 §13.1.2 says).
pub fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    let strip = |t: &str| t.trim().trim_start_matches("W/").to_string();
    let ours = strip(etag);
    if_none_match
        .split(',')
        .any(|t| t.trim() == "*" || strip(t) == ours)
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The answer to a GET or HEAD of `res` (`None`: nothing at that path).
pub fn respond(res: Option<&SiteFile>, head: bool, req: &HeaderMap) -> Response {
    let Some(res) = res else {
        return plain(StatusCode::NOT_FOUND, "not found\n", head);
    };
    let len = res.body.len() as u64;
    // Constant values are taken as they are (no copy, no check per request).
    let mut builder = Response::builder()
        .header(header::ETAG, &res.etag)
        .header(
            header::CACHE_CONTROL,
            HeaderValue::from_static(res.cache_control),
        )
        .header(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"))
        .header(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        )
        .header(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("ETag, Content-Range"),
        )
        .header(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        )
        .header(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
    // A page may load its stylesheet and nothing else, and runs no script; anything else
    // opened as a document (a file, an index) runs sandboxed and loads nothing.
    builder = if res.content_type == crate::web::HTML {
        builder
            .header(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(crate::web::PAGE_CSP),
            )
            .header(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"))
    } else {
        builder.header(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(crate::web::FILE_CSP),
        )
    };
    if header_str(req, header::IF_NONE_MATCH).is_some_and(|v| etag_matches(v, &res.etag)) {
        return builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .expect("valid response");
    }
    builder = builder.header(
        header::CONTENT_TYPE,
        HeaderValue::from_static(res.content_type),
    );
    // If-Range: the range applies only to the representation it names (strong comparison).
    let range_ok = header_str(req, header::IF_RANGE).is_none_or(|v| v.trim() == res.etag);
    let range = match header_str(req, header::RANGE) {
        Some(v) if range_ok => parse_range(v, len),
        _ => RangeRequest::Full,
    };
    let (status, body) = match range {
        RangeRequest::Full => (StatusCode::OK, res.body.clone()),
        RangeRequest::Partial(start, end) => {
            builder = builder.header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{len}"));
            (
                StatusCode::PARTIAL_CONTENT,
                res.body.slice(start as usize..=end as usize),
            )
        }
        RangeRequest::Unsatisfiable => {
            return builder
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .header(header::CONTENT_LENGTH, 0)
                .body(Body::empty())
                .expect("valid response");
        }
    };
    builder = builder
        .status(status)
        .header(header::CONTENT_LENGTH, body.len());
    let body = if head {
        Body::empty()
    } else {
        Body::from(body)
    };
    builder.body(body).expect("valid response")
}

fn plain(status: StatusCode, text: &'static str, head: bool) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::CONTENT_LENGTH, text.len())
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::CONTENT_SECURITY_POLICY, crate::web::FILE_CSP)
        .body(if head {
            Body::empty()
        } else {
            Body::from(text)
        })
        .expect("valid response")
}

/// Percent-decodes a request path (`None` when an escape is broken, the result is not UTF-8, or
/// it holds `%00`).
pub fn decode_path(path: &str) -> Option<String> {
    crate::path::percent_decode(path).filter(|p| !p.contains('\0'))
}

async fn handle(State(site): State<Arc<Site>>, req: Request) -> Response {
    answer_rendered(site, req).await
}

/// [`answer`], the page asked for rendered first in the blocking pool when it was not yet
/// (a page's body is rendered on its first read, never on the async runtime).
pub async fn answer_rendered(site: Arc<Site>, req: Request) -> Response {
    if let Some(page) = page_path(&req).and_then(|p| site.unrendered(&p)) {
        // A render that panicked is rendered again by `answer`, which then panics in turn:
        // axum answers 500 for that request only.
        let _ = tokio::task::spawn_blocking(move || {
            page.file();
        })
        .await;
    }
    // An older version's archive is not held: packed again from the registry (hashed against
    // the digest the site lists) when it is asked for.
    if matches!(*req.method(), Method::GET | Method::HEAD)
        && let Some(path) = page_path(&req)
        && let Some((lookup, name, version)) = site.older_blob(&path)
    {
        let hex = path.trim_start_matches("blobs/sha256/").to_string();
        let file = crate::site::older_archive(lookup, name, version, hex).await;
        return respond(file.as_ref(), *req.method() == Method::HEAD, req.headers());
    }
    answer(&site, &req)
}

/// The path of the site a GET of `req` reads, as [`answer`] finds it.
fn page_path(req: &Request) -> Option<String> {
    let path = decode_path(req.uri().path())?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    Some(if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path.to_string()
    })
}

/// The answer of the read side to any request: a file of `site`, a CORS preflight, 404 or 405.
pub fn answer(site: &Site, req: &Request) -> Response {
    let method = req.method().clone();
    if method == Method::OPTIONS {
        // A CORS preflight (or a plain OPTIONS): which methods and request headers are welcome.
        return Response::builder()
            .status(StatusCode::NO_CONTENT)
            .header(header::ALLOW, "GET, HEAD, OPTIONS")
            .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
            .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
            .header(header::ACCESS_CONTROL_ALLOW_METHODS, "GET, HEAD, OPTIONS")
            .header(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                "Range, If-None-Match, If-Range",
            )
            .body(Body::empty())
            .expect("valid response");
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed\n",
            false,
        );
        r.headers_mut().insert(
            header::ALLOW,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
        return r;
    }
    let head = method == Method::HEAD;
    // Most paths have no escape: looked up as they are, without a copy.
    let raw = req.uri().path();
    let decoded;
    let path = if raw.contains('%') {
        decoded = decode_path(raw);
        decoded.as_deref()
    } else {
        Some(raw)
    };
    let Some(path) = path.map(|p| p.strip_prefix('/').unwrap_or(p)) else {
        return respond(None, head, req.headers());
    };
    // A folder's page is its `index.html`, as a static host serves it.
    if path.is_empty() || path.ends_with('/') {
        let page = site.get(&format!("{path}index.html"));
        return respond(page, head, req.headers());
    }
    match site.get(path) {
        Some(found) => respond(Some(found), head, req.headers()),
        // A folder named without its `/` is sent to it (relative links then resolve as on a
        // static host, which redirects the same way).
        None if site.contains(&format!("{path}/index.html")) => {
            let mut to = format!("{raw}/");
            if let Some(q) = req.uri().query() {
                to.push('?');
                to.push_str(q);
            }
            Response::builder()
                .status(StatusCode::PERMANENT_REDIRECT)
                .header(header::LOCATION, to)
                .header(header::CONTENT_LENGTH, 0)
                .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
                .body(Body::empty())
                .expect("valid response")
        }
        None => respond(None, head, req.headers()),
    }
}

/// One access-log line per request on stderr: peer, request line, status, bytes, time.
async fn access_log(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let peer = req
        .extensions()
        .get::<ConnectInfo<Conn>>()
        .map_or_else(|| "-".to_string(), |c| c.0.peer().to_string());
    let line = format!("{} {} {:?}", req.method(), req.uri(), req.version());
    let resp = next.run(req).await;
    let len = header_str(resp.headers(), header::CONTENT_LENGTH).unwrap_or("-");
    let _ = writeln!(
        std::io::stderr().lock(),
        "{peer} \"{line}\" {} {len} {:.1}ms",
        resp.status().as_u16(),
        start.elapsed().as_secs_f64() * 1000.0
    );
    resp
}

/// The router answering every path of `site`; with `verbose`, each request is logged.
///
/// Served by [`run`], each request also moves its connection's deadline (the request timeout
/// while it is answered, the idle timeout after); a router served otherwise ignores that.
pub fn router(site: Arc<Site>, verbose: bool) -> Router {
    signed_router(site, verbose, None)
}

/// [`router`], and with `statement` the signed statement of the site's index at
/// [`INDEX_STATEMENT_PATH`](crate::INDEX_STATEMENT_PATH), signed on demand (see
/// [`LiveStatement`](crate::LiveStatement)).
pub fn signed_router(
    site: Arc<Site>,
    verbose: bool,
    statement: Option<Arc<crate::LiveStatement>>,
) -> Router {
    let current: crate::web::CurrentSite = {
        let site = site.clone();
        Arc::new(move || site.clone())
    };
    let (mut pages, api) =
        crate::web::catalog_routes(Router::new(), Router::new(), current.clone());
    if let Some(live) = statement {
        pages = statement_route(pages, live, current);
    }
    let api = api.fallback(crate::web::api_not_found);
    let app = pages.nest("/api/v1", api).fallback(handle).with_state(site);
    with_layers(app, verbose)
}

/// [`signed_router`] over a registry `store` that others write to (replicas with `--publish`,
/// `registry publish`): the site follows the store's change feed (each change's skill rebuilt
/// and the site swapped in whole), and the feed itself is served at `/api/v1/changes`. The
/// site must have been built from `store` at its position ([`Site::set_seq`]) or before.
pub fn following_router(
    site: Site,
    store: Arc<dyn crate::registry::store::Store>,
    verbose: bool,
    statement: Option<Arc<crate::LiveStatement>>,
) -> Router {
    let site = Arc::new(std::sync::RwLock::new(Arc::new(site)));
    let replica = crate::feed::Replica::new(store, site.clone());
    replica.follow();
    let current: crate::web::CurrentSite = {
        let site = site.clone();
        Arc::new(move || site.read().expect("site lock").clone())
    };
    let (mut pages, api) =
        crate::web::catalog_routes(Router::new(), Router::new(), current.clone());
    if let Some(live) = statement {
        pages = statement_route(pages, live, current);
    }
    let api = api.with_state(()).merge(
        Router::new()
            .route("/changes", axum::routing::get(crate::feed::changes))
            .fallback(crate::web::api_not_found)
            .with_state(replica),
    );
    let read_side = move |req: Request| {
        let site = site.read().expect("site lock").clone();
        answer_rendered(site, req)
    };
    with_layers(pages.nest("/api/v1", api).fallback(read_side), verbose)
}

/// `pages` with the route of the signed statement of the index `current` serves now, whether
/// the site is fixed ([`signed_router`]) or swapped after each write (the publishing router).
pub(crate) fn statement_route<S: Clone + Send + Sync + 'static>(
    pages: Router<S>,
    live: Arc<crate::LiveStatement>,
    current: crate::web::CurrentSite,
) -> Router<S> {
    let path = format!("/{}", crate::INDEX_STATEMENT_PATH);
    pages.route(
        &path,
        axum::routing::get(
            move |req: Request| async move { statement_answer(&current(), &live, &req) },
        ),
    )
}

/// The statement of `site`'s index now, answered as any file of the site (conditional
/// requests, HEAD); 500 when it cannot be signed.
fn statement_answer(site: &Site, live: &crate::LiveStatement, req: &Request) -> Response {
    let Some(index) = site.get(crate::AGENT_SKILLS_INDEX) else {
        return plain(StatusCode::NOT_FOUND, "not found\n", false);
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    match live.text(&index.body, now_ms) {
        Ok(text) => {
            let body = bytes::Bytes::from(text);
            let file = SiteFile {
                etag: format!(
                    "\"{}\"",
                    crate::digest::to_hex(crate::digest::sha256(&body))
                ),
                body,
                content_type: "text/plain; charset=utf-8",
                cache_control: crate::REVALIDATE,
            };
            respond(Some(&file), req.method() == Method::HEAD, req.headers())
        }
        Err(e) => {
            eprintln!("warning: {e}");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot sign the index statement\n",
                false,
            )
        }
    }
}

/// `app` with what every route of the server gets: the connection deadlines moved by each
/// request and, with `verbose`, the access log.
pub fn with_layers(app: Router, verbose: bool) -> Router {
    let app = app.layer(middleware::from_fn(track));
    if verbose {
        app.layer(middleware::from_fn(access_log))
    } else {
        app
    }
}

/// Serves `site` on `listener` under `limits` until `shutdown` completes. Then it stops
/// listening, finishes the requests in flight for at most `limits.drain_timeout`, closes the
/// connections still open and returns.
pub async fn run(
    site: Arc<Site>,
    listener: TcpListener,
    verbose: bool,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    run_app(router(site, verbose), listener, limits, shutdown).await
}

/// [`run`] for any router (made with [`with_layers`]): the publishing API serves its routes
/// beside the read side this way.
pub async fn run_app(
    app: Router,
    listener: TcpListener,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (listener, closer) = limited(listener, limits);
    serve_on(app, listener, closer, limits, shutdown).await
}

/// [`run_app`] over HTTPS: every connection speaks TLS as `tls` says (see
/// [`server_config`](super::server_config)), under the same limits.
#[cfg(feature = "tls")]
pub async fn run_app_tls(
    app: Router,
    listener: TcpListener,
    limits: ServeLimits,
    tls: Arc<tokio_rustls::rustls::ServerConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (listener, closer) = limited(listener, limits);
    let listener = super::tls::TlsListener::new(listener, tls);
    serve_on(app, listener, closer, limits, shutdown).await
}

async fn serve_on<L>(
    app: Router,
    listener: L,
    closer: Closer,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: axum::serve::Listener<Addr = std::net::SocketAddr>,
    Conn: for<'a> Connected<axum::serve::IncomingStream<'a, L>>,
{
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let serving = axum::serve(listener, app.into_make_service_with_connect_info::<Conn>())
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        });
    let drained = async move {
        if stop_rx.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(limits.drain_timeout).await;
    };
    tokio::select! {
        r = serving => r,
        () = drained => {
            closer.close_all();
            Ok(())
        }
    }
}

/// Completes on Ctrl-C, or on SIGTERM where there is one.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use RangeRequest::*;
        let cases: &[(&str, u64, RangeRequest)] = &[
            ("bytes=0-9", 100, Partial(0, 9)),
            ("bytes=90-200", 100, Partial(90, 99)),
            ("bytes=50-", 100, Partial(50, 99)),
            ("bytes=-10", 100, Partial(90, 99)),
            ("bytes=-1000", 100, Partial(0, 99)),
            ("bytes=100-", 100, Unsatisfiable),
            ("bytes=100-200", 100, Unsatisfiable),
            ("bytes=-0", 100, Unsatisfiable),
            ("bytes=0-0", 0, Unsatisfiable),
            ("bytes=5-1", 100, Full),
            ("bytes=0-1,5-6", 100, Full),
            ("items=0-1", 100, Full),
            ("bytes=a-b", 100, Full),
            ("bytes=+1-2", 100, Full),
            ("bytes", 100, Full),
            ("BYTES= 1-2", 100, Partial(1, 2)),
        ];
        for (v, len, want) in cases {
            assert_eq!(parse_range(v, *len), *want, "{v} of {len}");
        }
    }

    #[test]
    fn etags() {
        assert!(etag_matches("\"abc\"", "\"abc\""));
        assert!(etag_matches("W/\"abc\"", "\"abc\""));
        assert!(etag_matches("\"x\", \"abc\"", "\"abc\""));
        assert!(etag_matches("*", "\"abc\""));
        assert!(!etag_matches("\"abd\"", "\"abc\""));
    }

    #[test]
    fn paths() {
        assert_eq!(
            decode_path("/.well-known/skills/%D0%BD%D0%B0/a%20b.md").as_deref(),
            Some("/.well-known/skills/на/a b.md")
        );
        assert_eq!(decode_path("/a%2"), None);
        assert_eq!(decode_path("/a%00b"), None);
        assert_eq!(decode_path("/%ff"), None);
    }

    #[test]
    fn responses() {
        let res = SiteFile {
            body: bytes::Bytes::from_static(b"0123456789"),
            content_type: "application/gzip",
            etag: "\"e\"".into(),
            cache_control: super::super::site::IMMUTABLE,
        };
        let mut h = HeaderMap::new();
        let r = respond(Some(&res), false, &h);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "10");
        assert_eq!(
            r.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        h.insert(header::RANGE, HeaderValue::from_static("bytes=2-4"));
        let r = respond(Some(&res), false, &h);
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes 2-4/10");
        h.insert(header::IF_RANGE, HeaderValue::from_static("\"old\""));
        assert_eq!(respond(Some(&res), false, &h).status(), StatusCode::OK);
        h.remove(header::IF_RANGE);
        h.insert(header::RANGE, HeaderValue::from_static("bytes=10-"));
        let r = respond(Some(&res), false, &h);
        assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes */10");
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"e\""));
        assert_eq!(
            respond(Some(&res), false, &h).status(),
            StatusCode::NOT_MODIFIED
        );
        assert_eq!(respond(None, false, &h).status(), StatusCode::NOT_FOUND);
    }
}
