//! What one client may cost the server: how long it may take to send a request head, how long
//! an idle keep-alive connection is kept, how long a request may take from its head to the last
//! byte of its answer, how many connections are open at once (and how many of them one client
//! address may hold), and how long a shutdown waits for the answers in flight.
//!
//! The limits are enforced under hyper, on the connection itself: [`LimitedListener`] admits a
//! connection only while the caps allow it, and wraps its socket so that a read or write that is
//! still waiting when the connection's current deadline passes fails (hyper then drops the
//! connection). The router's [`track`] middleware tells the connection when a request head has
//! arrived and when its answer has gone, which moves the deadline between the three phases:
//!
//! ```text
//! accepted ── header_timeout ──▶ head parsed ── request_timeout ──▶ answer sent
//!                                      ▲                                   │
//!                                      └── header_timeout ◀─ first byte ◀──┴── idle_timeout
//! ```
//!
//! Every time a limit bites, one line goes to stderr (at most one a second for each limit, with
//! a count of the others).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::extract::connect_info::Connected;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::stream::FuturesUnordered;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

/// The server's limits. [`Default`] gives the documented defaults (`docs/http.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// From a connection's acceptance, or from the first byte of a later request, until its
    /// request head is complete (default 10 s).
    pub header_timeout: Duration,
    /// How long a keep-alive connection may wait, after an answer, for the next request's first
    /// byte (default 15 s).
    pub idle_timeout: Duration,
    /// From a complete request head until the last byte of the answer is written (default
    /// 60 s): a client that reads an answer too slowly is cut off.
    pub request_timeout: Duration,
    /// Connections open at once (default 1024). New connections beyond it are answered `503`
    /// and closed. The server raises its open-file limit to fit, or lowers this to fit.
    pub max_connections: usize,
    /// Connections open at once from one client address (default 64).
    pub max_connections_per_address: usize,
    /// On shutdown, how long the answers in flight are given before the connections still open
    /// are closed (default 10 s).
    pub drain_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(15),
            request_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_connections_per_address: 64,
            drain_timeout: Duration::from_secs(10),
        }
    }
}

/// Descriptors kept free for the listener, stdio, logs and the runtime.
const RESERVED_FDS: u64 = 64;

impl ServeLimits {
    /// Fits the open-file limit to `max_connections`: raises the soft limit toward the hard
    /// one when needed, and when that is not enough, lowers `max_connections` so the cap bites
    /// before descriptors run out. Returns a sentence for stderr when the cap was lowered.
    pub fn fit_open_files(&mut self) -> Option<String> {
        #[cfg(unix)]
        {
            use rustix::process::{Resource, getrlimit, setrlimit};
            let need = self.max_connections as u64 + RESERVED_FDS;
            let lim = getrlimit(Resource::Nofile);
            let soft = lim.current.unwrap_or(u64::MAX);
            if soft >= need {
                return None;
            }
            let hard = lim.maximum.unwrap_or(u64::MAX);
            let want = need.min(hard);
            let mut new = lim;
            new.current = Some(want);
            let now = if setrlimit(Resource::Nofile, new).is_ok() {
                want
            } else {
                soft
            };
            if now < need {
                let cap = now.saturating_sub(RESERVED_FDS).max(1) as usize;
                let said = format!(
                    "the open-file limit is {now}: serving at most {cap} connections at once, not {}",
                    self.max_connections
                );
                self.max_connections = cap;
                return Some(said);
            }
            None
        }
        #[cfg(not(unix))]
        None
    }
}

/// Which limit bit, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Limit {
    Header,
    Idle,
    Request,
    Connections,
    PerAddress,
    Drain,
}

impl Limit {
    fn describe(self, l: &ServeLimits) -> String {
        let secs = |d: Duration| format!("{}s", d.as_secs_f64());
        match self {
            Limit::Header => format!("header timeout ({}) ran out", secs(l.header_timeout)),
            Limit::Idle => format!("idle timeout ({}) ran out", secs(l.idle_timeout)),
            Limit::Request => format!("request timeout ({}) ran out", secs(l.request_timeout)),
            Limit::Connections => {
                format!("connection limit ({}) reached: refused", l.max_connections)
            }
            Limit::PerAddress => format!(
                "per-address connection limit ({}) reached: refused",
                l.max_connections_per_address
            ),
            Limit::Drain => format!("drain timeout ({}) ran out", secs(l.drain_timeout)),
        }
    }
}

/// One line on stderr when a limit bites: at most one a second for each limit, counting the
/// others.
#[derive(Debug, Default)]
struct LimitLog {
    last: Mutex<HashMap<Limit, (Instant, u64)>>,
}

impl LimitLog {
    fn bit(&self, limit: Limit, limits: &ServeLimits, who: &str) {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, count)) = last.get_mut(&limit)
            && now.duration_since(*at) < Duration::from_secs(1)
        {
            *count += 1;
            return;
        }
        let more = last.insert(limit, (now, 0)).map_or(0, |(_, n)| n);
        drop(last);
        let more = if more > 0 {
            format!(" (and {more} more since the last such line)")
        } else {
            String::new()
        };
        eprintln!("skillcat serve: {}: {who}{more}", limit.describe(limits));
    }
}

/// Where a connection is in its life; decides its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading a request head (accepted, or the first byte of the next request came).
    Head,
    /// A request head was parsed; its answer is not all written.
    Request,
    /// Between an answer and the next request's first byte.
    Idle,
    /// Closed by the server (drain ran out).
    Closed,
}

#[derive(Debug)]
struct ConnInner {
    phase: Phase,
    deadline: Instant,
    waker: Option<Waker>,
}

/// What the socket wrapper and the middleware share about one connection.
#[derive(Debug)]
struct ConnShared {
    peer: SocketAddr,
    inner: Mutex<ConnInner>,
}

impl ConnShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, ConnInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The state of every open connection: counts for the caps, handles for closing them.
#[derive(Debug)]
struct Registry {
    limits: ServeLimits,
    log: LimitLog,
    next_id: AtomicU64,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    per_address: HashMap<IpAddr, usize>,
    conns: HashMap<u64, Arc<ConnShared>>,
}

impl Registry {
    fn admit(self: &Arc<Self>, peer: SocketAddr) -> Result<Slot, Limit> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.conns.len() >= self.limits.max_connections {
            return Err(Limit::Connections);
        }
        let n = open.per_address.entry(peer.ip()).or_insert(0);
        if *n >= self.limits.max_connections_per_address {
            return Err(Limit::PerAddress);
        }
        *n += 1;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new(ConnShared {
            peer,
            inner: Mutex::new(ConnInner {
                phase: Phase::Head,
                deadline: Instant::now() + self.limits.header_timeout,
                waker: None,
            }),
        });
        open.conns.insert(id, shared.clone());
        Ok(Slot {
            id,
            shared,
            registry: self.clone(),
        })
    }

    /// Closes every connection still open; returns how many there were.
    fn close_all(&self) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        for c in open.conns.values() {
            let mut inner = c.lock();
            inner.phase = Phase::Closed;
            inner.deadline = Instant::now();
            if let Some(w) = inner.waker.take() {
                w.wake();
            }
        }
        open.conns.len()
    }

    fn open_count(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .conns
            .len()
    }
}

/// A connection's place under the caps; given back when the connection is dropped.
#[derive(Debug)]
struct Slot {
    id: u64,
    shared: Arc<ConnShared>,
    registry: Arc<Registry>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .registry
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.conns.remove(&self.id);
        let ip = self.shared.peer.ip();
        if let Some(n) = open.per_address.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                open.per_address.remove(&ip);
            }
        }
    }
}

/// The TCP listener under the caps: a connection over the global cap gets `503` and is closed
/// at once. One over its address's cap first waits up to 1 s (`ADDRESS_GRACE`) for one of that
/// address's connections to close: a client that closes connections and opens new ones at its
/// cap (a load generator between two runs, a pool recycling its connections) is not refused
/// for the moment its old connections take to be torn down here.
pub struct LimitedListener {
    inner: TcpListener,
    registry: Arc<Registry>,
    waiting: FuturesUnordered<Pin<Box<dyn Future<Output = Waited> + Send>>>,
}

impl std::fmt::Debug for LimitedListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedListener")
            .field("inner", &self.inner)
            .field("waiting", &self.waiting.len())
            .finish_non_exhaustive()
    }
}

/// How long a connection over its address's cap waits for a slot before it is refused.
const ADDRESS_GRACE: Duration = Duration::from_secs(1);
/// Connections waiting for a slot of their address at once; more are refused at once.
const MAX_WAITING: usize = 32;
/// How often a waiting connection looks for a slot.
const RETRY: Duration = Duration::from_millis(5);

/// A waiting connection: admitted, or still over its address's cap when the grace ran out.
type Waited = Result<(Guarded, SocketAddr), (TcpStream, SocketAddr)>;

/// Waits for a slot of `peer`'s address, for at most [`ADDRESS_GRACE`].
async fn wait_for_slot(registry: Arc<Registry>, stream: TcpStream, peer: SocketAddr) -> Waited {
    let until = Instant::now() + ADDRESS_GRACE;
    while Instant::now() < until {
        tokio::time::sleep(RETRY).await;
        match registry.admit(peer) {
            Ok(slot) => return Ok((Guarded::new(stream, slot), peer)),
            Err(Limit::PerAddress) => {}
            Err(_) => break,
        }
    }
    Err((stream, peer))
}

impl LimitedListener {
    fn refuse(&self, stream: &TcpStream, limit: Limit, peer: SocketAddr) {
        let _ = stream.try_write(REFUSAL);
        self.registry
            .log
            .bit(limit, &self.registry.limits, &peer.to_string());
    }
}

/// What is answered to a connection over a cap, before it is closed.
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\
content-length: 0\r\nretry-after: 1\r\nx-content-type-options: nosniff\r\n\r\n";

impl axum::serve::Listener for LimitedListener {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        use futures_util::StreamExt;
        loop {
            let accepted = tokio::select! {
                Some(waited) = self.waiting.next(), if !self.waiting.is_empty() => {
                    match waited {
                        Ok(admitted) => return admitted,
                        Err((stream, peer)) => self.refuse(&stream, Limit::PerAddress, peer),
                    }
                    continue;
                }
                accepted = self.inner.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors (or another passing error): wait a little, as a
                    // tight loop would only spin.
                    eprintln!("skillcat serve: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            match self.registry.admit(peer) {
                Ok(slot) => return (Guarded::new(stream, slot), peer),
                Err(Limit::PerAddress) if self.waiting.len() < MAX_WAITING => {
                    let registry = self.registry.clone();
                    self.waiting
                        .push(Box::pin(wait_for_slot(registry, stream, peer)));
                }
                Err(limit) => self.refuse(&stream, limit, peer),
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A connection's socket: reads and writes fail once the connection's deadline has passed.
#[derive(Debug)]
pub struct Guarded {
    io: TcpStream,
    slot: Slot,
    sleep: Pin<Box<Sleep>>,
    armed: Instant,
}

impl Guarded {
    fn new(io: TcpStream, slot: Slot) -> Guarded {
        let deadline = slot.shared.lock().deadline;
        Guarded {
            io,
            slot,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            armed: deadline,
        }
    }

    /// Called when the socket would wait: wait no later than the deadline.
    fn check<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let (deadline, phase) = {
            let mut inner = self.slot.shared.lock();
            if inner
                .waker
                .as_ref()
                .is_none_or(|w| !w.will_wake(cx.waker()))
            {
                inner.waker = Some(cx.waker().clone());
            }
            (inner.deadline, inner.phase)
        };
        if deadline != self.armed {
            self.sleep.as_mut().reset(deadline);
            self.armed = deadline;
        }
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let limit = match phase {
            Phase::Head => Limit::Header,
            Phase::Request => Limit::Request,
            Phase::Idle => Limit::Idle,
            Phase::Closed => Limit::Drain,
        };
        // An idle keep-alive connection timing out is ordinary: not worth a line.
        if limit != Limit::Idle {
            let reg = &self.slot.registry;
            reg.log
                .bit(limit, &reg.limits, &self.slot.shared.peer.to_string());
        }
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "connection deadline passed",
        )))
    }

    fn got_bytes(&self) {
        let mut inner = self.slot.shared.lock();
        if inner.phase == Phase::Idle {
            inner.phase = Phase::Head;
            inner.deadline = Instant::now() + self.slot.registry.limits.header_timeout;
        }
    }

    fn closed(&self) -> bool {
        self.slot.shared.lock().phase == Phase::Closed
    }
}

fn closed_error<T>() -> Poll<io::Result<T>> {
    Poll::Ready(Err(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "closed by the server",
    )))
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.closed() {
            return closed_error();
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.got_bytes();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.check(cx),
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.closed() {
            return closed_error();
        }
        match Pin::new(&mut self.io).poll_write(cx, buf) {
            Poll::Pending => self.check(cx),
            r => r,
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.closed() {
            return closed_error();
        }
        match Pin::new(&mut self.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.check(cx),
            r => r,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Pending => self.check(cx),
            r => r,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_shutdown(cx) {
            Poll::Pending => self.check(cx),
            r => r,
        }
    }
}

/// What a request knows of its connection (axum's connect info for [`LimitedListener`]).
#[derive(Debug, Clone)]
pub struct Conn {
    shared: Arc<ConnShared>,
    limits: ServeLimits,
}

impl Conn {
    /// The client's address.
    pub fn peer(&self) -> SocketAddr {
        self.shared.peer
    }

    fn enter(&self, phase: Phase, after: Duration) {
        let mut inner = self.shared.lock();
        if inner.phase != Phase::Closed {
            inner.phase = phase;
            inner.deadline = Instant::now() + after;
            if let Some(w) = inner.waker.take() {
                w.wake();
            }
        }
    }
}

impl Conn {
    /// The connection a socket of the limited listener belongs to.
    pub(super) fn of(io: &Guarded) -> Conn {
        Conn {
            shared: io.slot.shared.clone(),
            limits: io.slot.registry.limits,
        }
    }
}

impl Connected<axum::serve::IncomingStream<'_, LimitedListener>> for Conn {
    fn connect_info(stream: axum::serve::IncomingStream<'_, LimitedListener>) -> Self {
        Conn::of(stream.io())
    }
}

/// Marks the connection idle when dropped: when the answer's body has been written (or given
/// up).
struct AnswerSent(Conn);

impl Drop for AnswerSent {
    fn drop(&mut self) {
        self.0.enter(Phase::Idle, self.0.limits.idle_timeout);
    }
}

/// On an answer's extensions: the connection gets this long from when the answer is made to
/// write it, instead of what is left of the request timeout. For the one kind of answer meant
/// to last (an event stream), so the request timeout itself can stay short for the rest — a
/// body sent slowly, an answer read slowly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerTimeout(pub Duration);

/// Middleware moving the connection's deadline: a request head has arrived (the request
/// timeout runs; an answer carrying an [`AnswerTimeout`] gets that instead from when it is
/// made) and, once the body is written, the connection is idle (the idle timeout runs).
pub async fn track(req: Request, next: Next) -> Response {
    let Some(conn) = req
        .extensions()
        .get::<axum::extract::ConnectInfo<Conn>>()
        .map(|c| c.0.clone())
    else {
        return next.run(req).await;
    };
    conn.enter(Phase::Request, conn.limits.request_timeout);
    let resp = next.run(req).await;
    if let Some(AnswerTimeout(long)) = resp.extensions().get::<AnswerTimeout>() {
        conn.enter(Phase::Request, *long);
    }
    let sent = AnswerSent(conn);
    let (parts, body) = resp.into_parts();
    let body = if axum::body::HttpBody::is_end_stream(&body) {
        drop(sent);
        body
    } else {
        Body::new(Tracked { body, _sent: sent })
    };
    Response::from_parts(parts, body)
}

/// An answer's body that marks its connection idle when it is dropped. Its size is the inner
/// body's; it never says it has ended before hyper asks it for a frame past its last one (or
/// finds its length written): hyper asks that only once the bytes before are flushed, or
/// nearly. Were the end told with the last frame, hyper would drop the body at once, and a
/// client that does not read a large answer would be timed by the idle timeout, not the
/// request timeout.
struct Tracked {
    body: Body,
    _sent: AnswerSent,
}

impl http_body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Wraps `listener` under `limits`; the handle closes what is left when a drain runs out.
pub(super) fn limited(listener: TcpListener, limits: ServeLimits) -> (LimitedListener, Closer) {
    let registry = Arc::new(Registry {
        limits,
        log: LimitLog::default(),
        next_id: AtomicU64::new(0),
        open: Mutex::new(Open::default()),
    });
    (
        LimitedListener {
            inner: listener,
            registry: registry.clone(),
            waiting: FuturesUnordered::new(),
        },
        Closer(registry),
    )
}

/// Closes the connections still open when the drain ran out.
#[derive(Debug)]
pub(super) struct Closer(Arc<Registry>);

impl Closer {
    /// Closes every connection still open and says so on stderr.
    pub(super) fn close_all(&self) {
        let n = self.0.open_count();
        if n > 0 {
            self.0.close_all();
            self.0.log.bit(
                Limit::Drain,
                &self.0.limits,
                &format!("closing {n} connection(s) still open"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An answer that trickles out a chunk every 100 ms for about 3 s.
    fn trickle() -> Body {
        let chunks = futures_util::stream::unfold(0u32, |n| async move {
            if n == 30 {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some((Ok::<_, io::Error>(bytes::Bytes::from("x")), n + 1))
        });
        Body::from_stream(chunks)
    }

    /// The bytes of the answer to `GET path` until the server closes the connection.
    async fn fetch(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let head = format!("GET {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n");
        s.write_all(head.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut got)).await;
        String::from_utf8_lossy(&got).into_owned()
    }

    #[tokio::test]
    async fn only_an_answer_given_an_answer_timeout_outlives_the_request_timeout() {
        let app = Router::new()
            .route("/plain", get(|| async { Response::new(trickle()) }))
            .route(
                "/stream",
                get(|| async {
                    let mut r = Response::new(trickle());
                    r.extensions_mut()
                        .insert(AnswerTimeout(Duration::from_secs(60)));
                    r
                }),
            )
            .layer(axum::middleware::from_fn(track));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = ServeLimits {
            request_timeout: Duration::from_millis(500),
            ..ServeLimits::default()
        };
        tokio::spawn(super::super::server::run_app(
            app,
            listener,
            limits,
            std::future::pending(),
        ));
        // The stream is written whole; the plain answer is cut at the request timeout.
        let chunks = |answer: &str| answer.matches("\r\nx\r\n").count();
        let stream = fetch(addr, "/stream").await;
        assert_eq!(chunks(&stream), 30, "{stream:?}");
        assert!(stream.ends_with("\r\n0\r\n\r\n"), "{stream:?}");
        let plain = fetch(addr, "/plain").await;
        assert!(plain.starts_with("HTTP/1.1 200"), "{plain:?}");
        assert!(chunks(&plain) < 30, "{plain:?}");
    }
}
