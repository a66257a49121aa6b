//! The run's proxy: the only way out of a run granted a list of hosts.
//!
//! ```text
//! script (own network namespace: lo only)          supervisor (host's network)
//!   HTTP_PROXY=http://127.0.0.1:3128 ──TCP──▶ listener made inside the namespace, handed over
//!                                            ├─ request head (≤ 16 KiB, 10 s)
//!                                            ├─ CONNECT host:port | GET http://host[:port]/…
//!                                            ├─ host:port in the grant?        else 403 + hint
//!                                            ├─ resolve once ([sandbox.resolve] pin, else DNS)
//!                                            ├─ every address checked: loopback, private,
//!                                            │  link-local (metadata), multicast… refused, and
//!                                            │  the host's own (interfaces, local routes, read
//!                                            │  now); a pin is the operator's and not checked
//!                                            └─ connect to the address checked (never again by
//!                                               name; the peer must be it), relay both ways
//!                                               within the byte budget
//! ```
//!
//! The proxy is an HTTP/1.1 forward proxy (absolute-form `http://` requests, one request per
//! connection, `Connection: close`) and a `CONNECT` tunnel (for TLS, and any TCP protocol to an
//! allowed port). It sees names and ports, never what a tunnel carries: a listed host's own
//! content, and whatever that host relays, is out of its sight (see `docs/sandbox.md`).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::host_addrs::HostAddrs;
use crate::capability::{HostPattern, Pin};
use skillcat_core::network::normalize_host;

mod report;

pub use report::{
    MODEL_REFUSALS, NetworkReport, REPORT_KEPT, Reached, Refused, TARGET_KEPT, one_line,
};
use report::{kept, kept_hint};

/// Why the proxy refuses a name and port outside the run's grant ([`Refused::why`]).
pub const NOT_GRANTED: &str = "not in this run's network grant";

/// What the proxy calls an address the host itself owns (an interface address, or one of the
/// kernel's local routes): refused like loopback.
const OWN_ADDRESS: &str = "an address of this host";

/// The bounds of one run's proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyLimits {
    /// Connections served at once (default 32); more are answered `503` and closed.
    pub concurrent: usize,
    /// Connections accepted in one run (default 1,024); later ones are answered `503`.
    pub connections: u64,
    /// Bytes relayed in one run, both directions together (default 1 GiB); at the limit
    /// every connection of the run is closed.
    pub bytes: u64,
    /// The longest request head (default 16 KiB): a longer one is answered `431`.
    pub head_bytes: usize,
    /// Time to send the request head (default 10 s).
    pub head_time: Duration,
    /// Time to resolve a name and connect to it (default 10 s).
    pub connect_time: Duration,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            concurrent: 32,
            connections: 1024,
            bytes: 1 << 30,
            head_bytes: 16 * 1024,
            head_time: Duration::from_secs(10),
            connect_time: Duration::from_secs(10),
        }
    }
}

/// What one run's proxy allows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyConfig {
    /// The hosts and ports of the grant.
    pub allowed: Vec<HostPattern>,
    /// Names (and ports) connected to fixed addresses, which may be private or loopback ones.
    pub pins: Vec<Pin>,
    /// Bounds.
    pub limits: ProxyLimits,
}

/// Why an address is not one a run may reach by name: `Some(class)` for loopback, private,
/// link-local (cloud metadata: 169.254.169.254, fd00:ec2::254), shared (carrier-grade NAT),
/// multicast, broadcast, unspecified, documentation, benchmarking and reserved ranges, and
/// IPv6 forms that embed such an IPv4 address (mapped, NAT64, 6to4). `None`: a public address.
pub fn refused_class(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified",
        (127, _, _) => "loopback",
        (10, _, _) | (192, 168, _) => "private",
        (172, 16..=31, _) => "private",
        (100, 64..=127, _) => "shared (carrier-grade NAT)",
        (169, 254, _) => "link-local (cloud metadata)",
        (192, 0, 0) => "reserved",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast",
        _ => return None,
    })
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        v4_class(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        ))
    };
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_class(v4);
    }
    Some(match s[0] {
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local",
        0xfc00..=0xfdff => "private (unique local; cloud metadata)",
        0xff00..=0xffff => "multicast",
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address that decides.
        0x0064 if s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] => return embedded(s[6], s[7]),
        0x0064 if s[1] == 0xff9b => "private (NAT64 local use)",
        0x2002 => return embedded(s[1], s[2]),
        0x2001 if s[1] == 0x0db8 => "documentation",
        0x2001 if s[1] < 0x0200 => "reserved (Teredo, benchmarking, protocol assignments)",
        0x0100 if s[1..4] == [0, 0, 0] => "reserved (discard)",
        // ::/96 (IPv4-compatible, deprecated) and the rest of ::/8.
        0x0000 => "reserved",
        _ => return None,
    })
}

/// The report being built, and the counters every connection shares.
struct Shared {
    cfg: ProxyConfig,
    report: Mutex<Building>,
    bytes_left: AtomicU64,
    accepted: AtomicU64,
    permits: Arc<tokio::sync::Semaphore>,
}

#[derive(Default)]
struct Building {
    reached: BTreeMap<(String, u16), Reached>,
    refused: BTreeMap<(String, String), Refused>,
    limits: BTreeMap<String, u64>,
    /// Connections past the hosts and targets kept ([`REPORT_KEPT`]).
    reached_more: u64,
    refused_more: u64,
}

impl Shared {
    fn with<R>(&self, f: impl FnOnce(&mut Building) -> R) -> R {
        let mut b = match self.report.lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut b)
    }

    /// Records a refusal: at most [`REPORT_KEPT`] targets, each cut at [`TARGET_KEPT`] bytes;
    /// past that, only counted.
    fn refuse(&self, target: &str, why: &str, hint: Option<String>) {
        let key = (kept(target), kept(why));
        self.with(|b| {
            if let Some(r) = b.refused.get_mut(&key) {
                r.count += 1;
            } else if b.refused.len() < REPORT_KEPT {
                b.refused.insert(
                    key.clone(),
                    Refused {
                        target: key.0,
                        why: key.1,
                        hint: hint.map(|h| kept_hint(&h)),
                        count: 1,
                    },
                );
            } else {
                b.refused_more += 1;
            }
        });
    }

    fn limit(&self, what: String) {
        self.with(|b| *b.limits.entry(what).or_insert(0) += 1);
    }

    fn report(&self) -> NetworkReport {
        self.with(|b| NetworkReport {
            reached: b.reached.values().cloned().collect(),
            refused: b.refused.values().cloned().collect(),
            limits: b
                .limits
                .iter()
                .map(|(what, n)| {
                    if *n > 1 {
                        format!("{what} ({n} times)")
                    } else {
                        what.clone()
                    }
                })
                .collect(),
            reached_more: b.reached_more,
            refused_more: b.refused_more,
        })
    }
}

/// A proxy serving one run, until [`RunProxy::finish`].
pub(crate) struct RunProxy {
    task: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
}

impl RunProxy {
    /// Serves `listener` (a listening TCP socket, wherever it was made) under `cfg`. Must be
    /// called within a tokio runtime.
    pub(crate) fn start(
        listener: std::net::TcpListener,
        cfg: ProxyConfig,
    ) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let shared = Arc::new(Shared {
            permits: Arc::new(tokio::sync::Semaphore::new(cfg.limits.concurrent)),
            bytes_left: AtomicU64::new(cfg.limits.bytes),
            accepted: AtomicU64::new(0),
            report: Mutex::new(Building::default()),
            cfg,
        });
        let task = tokio::spawn(serve(listener, shared.clone()));
        Ok(RunProxy { task, shared })
    }

    /// Stops serving (every connection of the run is closed) and says what happened.
    pub(crate) fn finish(self) -> NetworkReport {
        self.task.abort();
        self.shared.report()
    }
}

/// Accepts until aborted; every connection is a task of `set`, aborted with it.
async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut set = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors or the like: wait a little rather than spin.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let n = shared.accepted.fetch_add(1, Ordering::Relaxed) + 1;
                let limits = shared.cfg.limits;
                if n > limits.connections {
                    shared.limit(format!("connections in one run ({})", limits.connections));
                    turn_away(&stream, "the run's connection limit is reached");
                    continue;
                }
                let Ok(permit) = shared.permits.clone().try_acquire_owned() else {
                    shared.limit(format!("connections at once ({})", limits.concurrent));
                    turn_away(&stream, "too many connections at once");
                    continue;
                };
                let shared = shared.clone();
                set.spawn(async move {
                    let _permit = permit;
                    handle(stream, &shared).await;
                });
            }
            Some(_) = set.join_next(), if !set.is_empty() => {}
        }
    }
}

/// A `503` written without waiting (a client that does not read gets nothing), then closed.
fn turn_away(stream: &TcpStream, why: &str) {
    // What the client already sent is read first: closing a socket with unread data resets the
    // connection, and the client could lose the answer.
    let mut sink = [0u8; 4096];
    // (At most 64 KiB: the accept loop must not be held by a client that keeps sending.)
    for _ in 0..16 {
        if !matches!(stream.try_read(&mut sink), Ok(n) if n > 0) {
            break;
        }
    }
    let _ = stream.try_write(
        response(
            503,
            "Service Unavailable",
            &format!("skillcat proxy: {why}\n"),
        )
        .as_bytes(),
    );
}

fn response(status: u16, reason: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nX-Skillcat-Proxy: refused\r\n\r\n{body}",
        body.len()
    )
}

/// A refusal: recorded, and answered.
struct Refusal {
    status: u16,
    reason: &'static str,
    target: String,
    why: String,
    hint: Option<String>,
}

impl Refusal {
    fn new(status: u16, target: &str, why: impl Into<String>) -> Self {
        let reason = match status {
            400 => "Bad Request",
            403 => "Forbidden",
            431 => "Request Header Fields Too Large",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            _ => "Error",
        };
        Refusal {
            status,
            reason,
            target: target.to_string(),
            why: why.into(),
            hint: None,
        }
    }

    fn hint(mut self, hint: String) -> Self {
        self.hint = Some(hint);
        self
    }
}

async fn handle(mut client: TcpStream, shared: &Shared) {
    let _ = client.set_nodelay(true);
    match open(&mut client, shared).await {
        Ok(Some((upstream, key))) => relay(client, upstream, shared, key).await,
        Ok(None) => {}
        Err(r) => {
            shared.refuse(&r.target, &r.why, r.hint.clone());
            let mut body = format!("skillcat proxy: refused {}: {}\n", r.target, r.why);
            if let Some(h) = &r.hint {
                body.push_str(&format!("hint: {h}\n"));
            }
            let answer = response(r.status, r.reason, &body);
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                let _ = client.write_all(answer.as_bytes()).await;
                let _ = client.shutdown().await;
                // Whatever else the client sends is read (up to 64 KiB, within the second)
                // before the close, which would otherwise reset the connection and could lose
                // the answer (a head too large was read only in part).
                let mut sink = [0u8; 4096];
                for _ in 0..16 {
                    if !matches!(client.read(&mut sink).await, Ok(n) if n > 0) {
                        break;
                    }
                }
            })
            .await;
        }
    }
}

/// A parsed request head.
struct Head {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
}

/// Reads the request head and opens the upstream connection it asks for (answering `CONNECT`
/// with 200, or sending the rewritten request): the upstream stream and the report's key.
/// `Ok(None)`: the client went away before asking anything.
async fn open(
    client: &mut TcpStream,
    shared: &Shared,
) -> Result<Option<(TcpStream, (String, u16))>, Refusal> {
    let limits = shared.cfg.limits;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let end = match tokio::time::timeout(
        limits.head_time,
        read_head(client, &mut buf, limits.head_bytes),
    )
    .await
    {
        Err(_) => {
            return Err(Refusal::new(
                400,
                "(no request)",
                "the request head did not arrive in time",
            ));
        }
        Ok(Err(HeadError::Closed)) => return Ok(None),
        Ok(Err(HeadError::TooLarge)) => {
            return Err(Refusal::new(
                431,
                "(request)",
                format!(
                    "the request head is larger than {} bytes",
                    limits.head_bytes
                ),
            ));
        }
        Ok(Ok(end)) => end,
    };
    let head = parse_head(&buf[..end]).map_err(|why| Refusal::new(400, "(request)", why))?;
    let rest = buf[end..].to_vec();
    if head.method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(&head.target, None)?;
        let (upstream, key) = connect(shared, &host, port).await?;
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .map_err(|_| Refusal::new(400, &head.target, "the client went away"))?;
        let mut upstream = upstream;
        if !rest.is_empty() {
            count(shared, &key, rest.len() as u64, true)?;
            upstream
                .write_all(&rest)
                .await
                .map_err(|e| Refusal::new(502, &head.target, format!("writing upstream: {e}")))?;
        }
        return Ok(Some((upstream, key)));
    }
    let Some(after) = strip_prefix_ignore_case(&head.target, "http://") else {
        let why = if strip_prefix_ignore_case(&head.target, "https://").is_some() {
            "an https:// URL is asked of a proxy with CONNECT (clients do so when HTTPS_PROXY is set)"
        } else {
            "not a proxy request (an absolute http:// URL, or CONNECT host:port)"
        };
        return Err(Refusal::new(400, &head.target, why));
    };
    let split = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (auth, path) = after.split_at(split);
    let (host, port) = authority(auth, Some(80))?;
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    // Plain HTTP: the Host header must name the host checked (no fronting another host
    // behind an allowed address).
    if let Some((_, h)) = head
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
    {
        let named = h.trim();
        let named_host = named.rsplit_once(':').map_or(named, |(h, p)| {
            if p.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                named
            }
        });
        if !named_host.eq_ignore_ascii_case(&host)
            && !named_host.trim_end_matches('.').eq_ignore_ascii_case(&host)
        {
            return Err(Refusal::new(
                400,
                &format!("{host}:{port}"),
                "the Host header names another host than the request's URL",
            ));
        }
    }
    let (mut upstream, key) = connect(shared, &host, port).await?;
    let mut out = format!("{} {} {}\r\n", head.method, path, head.version);
    let mut has_host = false;
    for (k, v) in &head.headers {
        let lower = k.to_ascii_lowercase();
        if matches!(
            lower.as_str(),
            "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
        ) {
            continue;
        }
        has_host |= lower == "host";
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has_host {
        out.push_str(&format!("Host: {auth}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&rest);
    count(shared, &key, bytes.len() as u64, true)?;
    upstream.write_all(&bytes).await.map_err(|e| {
        Refusal::new(
            502,
            &format!("{}:{}", key.0, key.1),
            format!("writing upstream: {e}"),
        )
    })?;
    Ok(Some((upstream, key)))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &s[prefix.len()..])
}

enum HeadError {
    Closed,
    TooLarge,
}

/// Reads until the blank line that ends the head; the offset just past it.
async fn read_head(
    client: &mut TcpStream,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<usize, HeadError> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = memchr_crlfcrlf(buf) {
            return Ok(i + 4);
        }
        if buf.len() >= max {
            return Err(HeadError::TooLarge);
        }
        let room = (max - buf.len()).min(chunk.len());
        match client.read(&mut chunk[..room]).await {
            Ok(0) | Err(_) => return Err(HeadError::Closed),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn memchr_crlfcrlf(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n")
}

fn parse_head(bytes: &[u8]) -> Result<Head, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| "the request head is not UTF-8".to_string())?;
    let text = text.strip_suffix("\r\n\r\n").unwrap_or(text);
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let parts: Vec<&str> = first.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err("the request line is not `METHOD TARGET HTTP/1.x`".into());
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0")
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_alphabetic())
        || target.is_empty()
    {
        return Err("the request line is not `METHOD TARGET HTTP/1.x`".into());
    }
    let mut headers = Vec::new();
    for line in lines {
        if line.contains(['\r', '\n']) || line.starts_with([' ', '\t']) {
            return Err("a malformed header line".into());
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err("a header line without `:`".into());
        };
        if k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_!#$%&'*+.^`|~".contains(&b))
        {
            return Err("a malformed header name".into());
        }
        headers.push((k.to_string(), v.trim().to_string()));
    }
    Ok(Head {
        method: method.to_string(),
        target: target.to_string(),
        version: version.to_string(),
        headers,
    })
}

/// `host:port` (or `host` with `default`) checked as a name; an IP address is refused.
fn authority(text: &str, default: Option<u16>) -> Result<(String, u16), Refusal> {
    let bad = |why: &str| Refusal::new(400, text, why.to_string());
    if text.contains('@') {
        return Err(bad("credentials in the authority are not accepted"));
    }
    let (host, port) = if text.starts_with('[') {
        (text, None)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => {
                let port = p
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
                (h, Some(port))
            }
            Some(_) => (text, None),
            None => (text, None),
        }
    };
    let host_only = host.trim_start_matches('[').trim_end_matches(']');
    if host_only.parse::<IpAddr>().is_ok() || host.starts_with('[') {
        return Err(Refusal::new(403, text, "an IP address; the proxy connects to names only").hint(
            "list the host's name in the grant; to reach this address on purpose, pin a name to it \
             with [sandbox.resolve] \"name:port\" = \"address:port\" in skillcat.toml"
                .into(),
        ));
    }
    let port = port
        .or(default)
        .ok_or_else(|| bad("CONNECT needs host:port"))?;
    let name = normalize_host(host).map_err(|e| {
        let why = e.why;
        Refusal::new(
            if why.contains("IP address") { 403 } else { 400 },
            text,
            format!("not a host name: {why}"),
        )
    })?;
    Ok((name, port))
}

/// Checks `host:port` against the grant, resolves it once, checks every address, and connects
/// to a checked one.
async fn connect(
    shared: &Shared,
    host: &str,
    port: u16,
) -> Result<(TcpStream, (String, u16)), Refusal> {
    let target = format!("{host}:{port}");
    let cfg = &shared.cfg;
    if !cfg.allowed.iter().any(|p| p.matches(host, port)) {
        return Err(Refusal::new(403, &target, NOT_GRANTED).hint(format!(
            "grant it for one run with `--allow-net {target}`, or add `{target}` to the skill's \
             `skillcat.network` (the `[sandbox] network` ceiling must allow it too)"
        )));
    }
    let pin = cfg.pins.iter().find(|p| p.host == host && p.port == port);
    let (addrs, pinned): (Vec<SocketAddr>, bool) = match pin {
        Some(p) => (vec![p.addr], true),
        None if host == "localhost" || host.ends_with(".localhost") => {
            // RFC 6761: loopback names are loopback, never asked of DNS.
            (vec![SocketAddr::from((Ipv4Addr::LOCALHOST, port))], false)
        }
        None => {
            let looked = tokio::time::timeout(
                cfg.limits.connect_time,
                tokio::net::lookup_host((host, port)),
            )
            .await;
            match looked {
                Err(_) => {
                    return Err(Refusal::new(
                        504,
                        &target,
                        "the name did not resolve in time",
                    ));
                }
                Ok(Err(e)) => {
                    return Err(Refusal::new(
                        502,
                        &target,
                        format!("the name does not resolve: {e}"),
                    ));
                }
                Ok(Ok(a)) => (a.collect(), false),
            }
        }
    };
    // The host's own addresses, read now (they change with interfaces and routes): a
    // service bound to every address of the host is no more the world's than loopback is.
    let own = if pinned {
        None
    } else {
        match tokio::task::spawn_blocking(HostAddrs::read).await {
            Ok(Ok(own)) => Some(own),
            Ok(Err(e)) => {
                return Err(Refusal::new(
                    502,
                    &target,
                    format!("the host's own addresses could not be read ({e})"),
                ));
            }
            Err(_) => {
                return Err(Refusal::new(
                    502,
                    &target,
                    "the host's own addresses could not be read",
                ));
            }
        }
    };
    let why_not = |ip: IpAddr| -> Option<&'static str> {
        let own = own.as_ref()?;
        refused_class(ip).or_else(|| own.contains(ip).then_some(OWN_ADDRESS))
    };
    let (ok, bad): (Vec<SocketAddr>, Vec<SocketAddr>) =
        addrs.into_iter().partition(|a| why_not(a.ip()).is_none());
    if ok.is_empty() {
        let Some(first) = bad.first() else {
            return Err(Refusal::new(
                502,
                &target,
                "the name resolves to no address",
            ));
        };
        let class = why_not(first.ip()).unwrap_or("refused");
        // The host is named, never the address: what a name resolves to on the host's side
        // (an internal name, a pin of the operator's) is not the script's to learn.
        let why = if class == OWN_ADDRESS {
            format!("{host} resolves to {OWN_ADDRESS}")
        } else {
            format!("{host} resolves to a {class} address")
        };
        return Err(Refusal::new(403, &target, why).hint(format!(
            "if that address is meant, pin it in skillcat.toml: [sandbox.resolve] \
             \"{target}\" = \"ADDRESS:{port}\""
        )));
    }
    let mut last = String::new();
    for addr in ok {
        // The address checked is the address connected to: the name is never resolved again.
        match tokio::time::timeout(cfg.limits.connect_time, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                // And the peer is the address checked (no redirection on the way).
                if s.peer_addr().ok() != Some(addr) {
                    last = "the connection ended at another address than the one checked".into();
                    continue;
                }
                let _ = s.set_nodelay(true);
                let key = (host.to_string(), port);
                shared.with(|b| {
                    if let Some(r) = b.reached.get_mut(&key) {
                        r.connections += 1;
                    } else if b.reached.len() < REPORT_KEPT {
                        b.reached.insert(
                            key.clone(),
                            Reached {
                                host: host.to_string(),
                                port,
                                address: addr.to_string(),
                                pinned,
                                connections: 1,
                                bytes_out: 0,
                                bytes_in: 0,
                            },
                        );
                    } else {
                        b.reached_more += 1;
                    }
                });
                return Ok((s, key));
            }
            // The error alone: which address failed is the host's to know.
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "timed out".into(),
        }
    }
    Err(Refusal::new(
        502,
        &target,
        format!("could not connect ({last})"),
    ))
}

/// Counts `n` bytes against the run's budget and the host's report.
fn count(shared: &Shared, key: &(String, u16), n: u64, out: bool) -> Result<(), Refusal> {
    let left = shared
        .bytes_left
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            left.checked_sub(n)
        });
    if left.is_err() {
        shared.bytes_left.store(0, Ordering::Relaxed);
        shared.limit(format!(
            "bytes relayed in one run ({})",
            shared.cfg.limits.bytes
        ));
        return Err(Refusal::new(
            503,
            &format!("{}:{}", key.0, key.1),
            "the run's byte limit is reached",
        ));
    }
    shared.with(|b| {
        if let Some(r) = b.reached.get_mut(key) {
            if out {
                r.bytes_out += n;
            } else {
                r.bytes_in += n;
            }
        }
    });
    Ok(())
}

/// Relays both ways until both sides are done (or the byte budget is spent).
async fn relay(client: TcpStream, upstream: TcpStream, shared: &Shared, key: (String, u16)) {
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let up = pump(&mut cr, &mut uw, shared, &key, true);
    let down = pump(&mut ur, &mut cw, shared, &key, false);
    tokio::join!(up, down);
}

async fn pump(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    shared: &Shared,
    key: &(String, u16),
    out: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if count(shared, key, n as u64, out).is_err() || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_classes() {
        for (ip, want) in [
            ("127.0.0.1", Some("loopback")),
            ("127.9.9.9", Some("loopback")),
            ("10.0.0.5", Some("private")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("192.168.1.1", Some("private")),
            ("169.254.169.254", Some("link-local (cloud metadata)")),
            ("100.64.0.1", Some("shared (carrier-grade NAT)")),
            ("0.0.0.0", Some("unspecified")),
            ("224.0.0.251", Some("multicast")),
            ("255.255.255.255", Some("reserved or broadcast")),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            (
                "fd00:ec2::254",
                Some("private (unique local; cloud metadata)"),
            ),
            ("fe80::1", Some("link-local")),
            ("ff02::1", Some("multicast")),
            ("::ffff:127.0.0.1", Some("loopback")),
            (
                "::ffff:169.254.169.254",
                Some("link-local (cloud metadata)"),
            ),
            ("64:ff9b::a9fe:a9fe", Some("link-local (cloud metadata)")),
            ("2002:7f00:1::", Some("loopback")),
            ("::127.0.0.1", Some("reserved")),
            ("2001:db8::1", Some("documentation")),
            ("8.8.8.8", None),
            ("172.32.0.1", None),
            ("140.82.112.3", None),
            ("2606:4700::1111", None),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::808:808", None),
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(refused_class(ip), want, "{ip}");
        }
    }

    /// A proxy on a local listener whose only host is `big.test:80`, pinned to a server that
    /// sends 4 MiB; the run's byte budget is 256 KiB.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_byte_budget_closes_the_run_and_is_reported() {
        let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let up = upstream.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in upstream.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut s = s;
                    let chunk = vec![b'x'; 64 * 1024];
                    for _ in 0..64 {
                        if std::io::Write::write_all(&mut s, &chunk).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let proxy = RunProxy::start(
            listener,
            ProxyConfig {
                allowed: vec![HostPattern::parse("big.test:80").unwrap()],
                pins: vec![Pin::parse("big.test:80", &up.to_string()).unwrap()],
                limits: ProxyLimits {
                    bytes: 256 * 1024,
                    ..ProxyLimits::default()
                },
            },
        )
        .unwrap();
        let mut c = TcpStream::connect(at).await.unwrap();
        c.write_all(b"CONNECT big.test:80 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(20), c.read_to_end(&mut got)).await;
        assert!(read.is_ok(), "the tunnel is closed at the budget");
        assert!(got.starts_with(b"HTTP/1.1 200"));
        assert!(
            got.len() < 256 * 1024 + 64 * 1024,
            "{} bytes came through",
            got.len()
        );
        // A second connection after the budget is spent gets nothing through.
        let mut c = TcpStream::connect(at).await.unwrap();
        c.write_all(b"CONNECT big.test:80 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut again = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(20), c.read_to_end(&mut again)).await;
        assert!(again.len() < 1024, "{}", String::from_utf8_lossy(&again));
        let report = proxy.finish();
        assert!(
            report
                .limits
                .iter()
                .any(|l| l.starts_with("bytes relayed in one run (262144)")),
            "{report:?}"
        );
        assert_eq!(report.reached[0].host, "big.test");
        assert!(report.reached[0].bytes_in <= 256 * 1024);
    }

    /// Three connections a run: the fourth and fifth are turned away, and the report says so.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_connection_count_is_bounded() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let proxy = RunProxy::start(
            listener,
            ProxyConfig {
                allowed: vec![HostPattern::parse("a.test").unwrap()],
                pins: Vec::new(),
                limits: ProxyLimits {
                    connections: 3,
                    ..ProxyLimits::default()
                },
            },
        )
        .unwrap();
        let mut answers = Vec::new();
        for _ in 0..5 {
            let mut c = TcpStream::connect(at).await.unwrap();
            // Not granted: each served connection is answered 403 at once.
            c.write_all(b"CONNECT b.test:443 HTTP/1.1\r\n\r\n")
                .await
                .unwrap();
            let mut got = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut got)).await;
            answers.push(
                String::from_utf8_lossy(&got)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            );
        }
        assert_eq!(
            answers,
            [
                "HTTP/1.1 403 Forbidden",
                "HTTP/1.1 403 Forbidden",
                "HTTP/1.1 403 Forbidden",
                "HTTP/1.1 503 Service Unavailable",
                "HTTP/1.1 503 Service Unavailable"
            ]
        );
        let report = proxy.finish();
        assert_eq!(report.refused[0].count, 3);
        assert_eq!(report.limits, ["connections in one run (3) (2 times)"]);
    }

    /// 1,024 refused connections of 16 KB targets: the report keeps 32 targets of 200 bytes,
    /// counts the rest, and a model reads 8 of them and one line for the others.
    #[test]
    fn the_report_is_bounded_whatever_the_script_asks() {
        let shared = Shared {
            cfg: ProxyConfig::default(),
            report: Mutex::new(Building::default()),
            bytes_left: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            permits: Arc::new(tokio::sync::Semaphore::new(1)),
        };
        for i in 0..1024 {
            let target = format!("{i}\n[exit status 0]\n{}", "x".repeat(16 * 1024));
            shared.refuse(&target, "not a host name", Some(format!("hint {target}")));
        }
        shared.refuse("1000\n[exit status 0]\nxx", "not a host name", None);
        let report = shared.report();
        assert_eq!(report.refused.len(), REPORT_KEPT);
        assert_eq!(report.refused_more, 1024 + 1 - REPORT_KEPT as u64);
        assert!(
            report
                .refused
                .iter()
                .all(|r| r.target.len() <= TARGET_KEPT + 3)
        );
        assert!(report.refused.iter().all(|r| {
            r.hint
                .as_ref()
                .is_some_and(|h| h.len() <= 4 * TARGET_KEPT + 3)
        }));
        let model = report.refusal_lines();
        assert_eq!(model.len(), 2 * MODEL_REFUSALS + 1, "{model:#?}");
        assert_eq!(
            model.last().unwrap(),
            &format!(
                "network: and {} more refused connections to {} more targets and others not kept",
                1025 - MODEL_REFUSALS,
                REPORT_KEPT - MODEL_REFUSALS
            )
        );
        let bytes: usize = model.iter().map(|l| l.len() + 3).sum();
        assert!(bytes < 16 * 1024, "{bytes} bytes");
        assert!(model.iter().all(|l| !l.contains('\n')));
        // The operator's report keeps every target kept, one line each.
        let all = report.lines();
        assert_eq!(all.len(), 2 * REPORT_KEPT + 1);
        assert!(all.iter().all(|l| !l.contains('\n')));
    }

    #[test]
    fn heads_and_authorities() {
        let h = parse_head(b"GET http://a.com/x HTTP/1.1\r\nHost: a.com\r\nX: y\r\n\r\n").unwrap();
        assert_eq!(
            (h.method.as_str(), h.target.as_str()),
            ("GET", "http://a.com/x")
        );
        assert_eq!(h.headers.len(), 2);
        for bad in [
            &b"GET http://a.com/x\r\n\r\n"[..],
            b"GET  http://a.com/x HTTP/1.1\r\n\r\n",
            b"GET http://a.com/x HTTP/2\r\n\r\n",
            b"GET http://a.com/x HTTP/1.1\r\n folded\r\n\r\n",
            b"GET http://a.com/x HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET http://a.com/x HTTP/1.1\r\nX: a\nY: b\r\n\r\n",
        ] {
            assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(
            authority("A.com:443", None).ok().unwrap(),
            ("a.com".into(), 443)
        );
        assert_eq!(
            authority("a.com", Some(80)).ok().unwrap(),
            ("a.com".into(), 80)
        );
        for (bad, status) in [
            ("a.com", 400),
            ("a.com:0", 400),
            ("a.com:99999", 400),
            ("127.0.0.1:443", 403),
            ("[::1]:443", 403),
            ("[fd00:ec2::254]:80", 403),
            ("2130706433:80", 403),
            ("u@a.com:443", 400),
        ] {
            let r = authority(bad, None)
                .err()
                .unwrap_or_else(|| panic!("{bad}"));
            assert_eq!(r.status, status, "{bad}: {}", r.why);
        }
    }
}
