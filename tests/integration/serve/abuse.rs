//! `skillcat serve` under abuse, on 127.0.0.1: thousands of idle or dripping connections, request
//! heads that never end, a SIGTERM with a half-sent request, and `nosniff` on every answer.
//!
//! `SKILLCAT_TEST_BIN=/path/to/skillcat` runs these against another build.
//!
//! Origin: step 16 (issue 21: the HTTP server and client under abuse).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const INDEX: &str = "/.well-known/agent-skills/index.json";

fn catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog")
}

/// A server child whose stderr is collected on a thread (it can never block on a full pipe).
struct Served {
    child: Child,
    addr: SocketAddr,
    stderr: Option<JoinHandle<String>>,
}

impl Served {
    fn start(extra: &[&str]) -> Served {
        Served::start_at(&catalog(), extra)
    }

    fn start_at(source: &Path, extra: &[&str]) -> Served {
        let (mut child, _line, url) =
            crate::support::serve::spawn_serve(source, extra, Stdio::piped());
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        });
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap();
        Served {
            child,
            addr,
            stderr: Some(stderr),
        }
    }

    /// Open descriptors of the server process.
    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Sends `signal` and waits up to `bound` for the exit; `None` when it did not exit.
    fn signal_and_wait(
        &mut self,
        signal: &str,
        bound: Duration,
    ) -> Option<std::process::ExitStatus> {
        let ok = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let end = Instant::now() + bound;
        while Instant::now() < end {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Kills the server (if still running) and returns its stderr.
    fn stderr(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request on a fresh connection (`Connection: close`); returns the whole answer.
fn request(addr: SocketAddr, method: &str, path: &str, headers: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{headers}\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Raises this process's soft open-file limit to at least `n` (within the hard limit); returns
/// the soft limit it ends with.
fn raise_open_files(n: u64) -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    let soft = lim.current.unwrap_or(u64::MAX);
    if soft >= n {
        return soft;
    }
    let mut new = lim;
    new.current = Some(n.min(lim.maximum.unwrap_or(u64::MAX)));
    let _ = setrlimit(Resource::Nofile, new);
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// One attacking connection from `from`, for as long as `stop` is not set: it connects, and
/// either sends nothing (idle), drips a request head a byte every 300 ms, or sends an
/// HTTP/0.9-style line; when the server closes it, it connects again after a second.
async fn attacker(from: std::net::IpAddr, to: SocketAddr, kind: usize, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(sock) = tokio::net::TcpSocket::new_v4() else {
            return;
        };
        if sock.bind(SocketAddr::new(from, 0)).is_err() {
            return;
        }
        let Ok(Ok(mut conn)) = tokio::time::timeout(Duration::from_secs(2), sock.connect(to)).await
        else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let drip = b"GET /.well-known/agent-skills/index.json HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let mut buf = [0u8; 512];
        match kind % 3 {
            0 => {
                // Idle: wait until the server closes or the test ends.
                while !stop.load(Ordering::Relaxed) {
                    match tokio::time::timeout(Duration::from_millis(300), conn.read(&mut buf))
                        .await
                    {
                        Ok(Ok(0)) | Ok(Err(_)) => break,
                        _ => {}
                    }
                }
            }
            1 => {
                for b in drip.iter().cycle() {
                    if stop.load(Ordering::Relaxed) || conn.write_all(&[*b]).await.is_err() {
                        break;
                    }
                    match tokio::time::timeout(Duration::from_millis(300), conn.read(&mut buf))
                        .await
                    {
                        Ok(Ok(0)) | Ok(Err(_)) => break,
                        _ => {}
                    }
                }
            }
            _ => {
                let _ = conn.write_all(b"GET /\r\n").await;
                while !stop.load(Ordering::Relaxed) {
                    match tokio::time::timeout(Duration::from_millis(300), conn.read(&mut buf))
                        .await
                    {
                        Ok(Ok(0)) | Ok(Err(_)) => break,
                        _ => {}
                    }
                }
            }
        }
        drop(conn);
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
}

/// 2,000 idle, dripping or HTTP/0.9-style connections from two other loopback addresses, while
/// a client on 127.0.0.1 keeps asking for the index: every request is answered and the
/// server's descriptors stay under its connection cap (1024 by default). How fast they are
/// answered is printed, not asserted (a test asserts no time: beside the rest of the suite on
/// two cores a SYN retried after 1 s made the p99 bound fail with nothing wrong in the
/// server); `benches/http_idle.py` measures the latency under this load.
#[test]
fn two_thousand_idle_or_dripping_connections_do_not_lock_clients_out() {
    const ATTACKERS: usize = 2000;
    const CAP: usize = 1024;
    let soft = raise_open_files(ATTACKERS as u64 + 512);
    assert!(
        soft >= ATTACKERS as u64 + 256,
        "this test needs {} open files; the hard limit allows {soft}",
        ATTACKERS + 256
    );
    let mut served = Served::start(&[]);
    let addr = served.addr;
    let stop = Arc::new(AtomicBool::new(false));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..ATTACKERS)
        .map(|i| {
            let from = std::net::IpAddr::from([127, 0, 0, 2 + (i % 2) as u8]);
            rt.spawn(attacker(from, addr, i / 2, stop.clone()))
        })
        .collect();
    // Let the flood arrive.
    std::thread::sleep(Duration::from_secs(2));

    let max_fds = Arc::new(AtomicUsize::new(0));
    let sampling = {
        let (stop, max_fds, pid) = (stop.clone(), max_fds.clone(), served.child.id());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let n = std::fs::read_dir(format!("/proc/{pid}/fd"))
                    .map(|d| d.count())
                    .unwrap_or(0);
                max_fds.fetch_max(n, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    let mut times = Vec::new();
    let failures = Mutex::new(Vec::new());
    for _ in 0..300 {
        let start = Instant::now();
        let answer = request(addr, "GET", INDEX, "");
        times.push(start.elapsed());
        if !answer.starts_with("HTTP/1.1 200 ") {
            failures.lock().unwrap().push(answer);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let fds_now = served.fds();
    stop.store(true, Ordering::Relaxed);
    sampling.join().unwrap();
    for t in tasks {
        t.abort();
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    let err = served.stderr();

    times.sort();
    let p99 = times[times.len() * 99 / 100];
    let failures = failures.into_inner().unwrap();
    let max_fds = max_fds.load(Ordering::Relaxed).max(fds_now);
    eprintln!(
        "normal requests under {ATTACKERS} attacking connections: median {:?}, p99 {p99:?}, \
         max {:?}; server descriptors at most {max_fds}",
        times[times.len() / 2],
        times[times.len() - 1]
    );
    assert!(
        failures.is_empty(),
        "{} of 300 requests failed: {:?}\nthe server's log, but its refusals at the limits:\n{}",
        failures.len(),
        &failures[..failures.len().min(5)],
        err.lines()
            .filter(|l| !l.contains("connection limit"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        max_fds < CAP,
        "the server held {max_fds} descriptors; its cap is {CAP} connections"
    );
    assert!(
        err.contains("per-address connection limit (64) reached: refused: 127.0.0."),
        "the limit biting is logged: {err}"
    );
}

/// A connection over the global cap is answered 503 and closed, and the log says why.
#[test]
fn connections_over_the_cap_are_refused_with_503() {
    let mut served = Served::start(&["--max-connections", "20"]);
    let addr = served.addr;
    let held: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    // The refusal is sent as soon as the connection is accepted, before any request.
    let mut over = TcpStream::connect(addr).unwrap();
    over.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = over.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("x-content-type-options: nosniff")
    );
    drop(held);
    // Once the held connections are gone, clients are served again.
    let mut ok = false;
    for _ in 0..50 {
        if request(addr, "GET", INDEX, "").starts_with("HTTP/1.1 200 ") {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ok, "served again once connections are closed");
    let err = served.stderr();
    assert!(
        err.contains("connection limit (20) reached: refused: 127.0.0.1:"),
        "{err}"
    );
}

/// How long until the server closes `conn` (bounded by `bound`; `None` if it did not).
fn closed_within(mut conn: TcpStream, bound: Duration) -> Option<Duration> {
    let start = Instant::now();
    conn.set_read_timeout(Some(bound)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(start.elapsed());
            }
            Err(_) => return None,
        }
    }
}

/// Request heads that never end, idle keep-alive connections and readers that never read are
/// cut off by the header, idle and request timeouts, and each limit biting is logged.
#[test]
fn heads_that_never_end_and_idle_connections_are_closed() {
    let mut served = Served::start(&[
        "--header-timeout",
        "1s",
        "--idle-timeout",
        "1s",
        "--request-timeout",
        "2s",
    ]);
    let addr = served.addr;
    let bound = Duration::from_secs(8);

    // Nothing sent at all.
    let silent = TcpStream::connect(addr).unwrap();
    // Half a request head.
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"GET /.well-known/agent-skills/index.json HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    // A head dripped a byte at a time: the header timeout counts from the first byte.
    let drip = TcpStream::connect(addr).unwrap();
    let dripper = {
        let mut d = drip.try_clone().unwrap();
        std::thread::spawn(move || {
            for b in b"GET / HTTP/1.1\r\nHost: t\r\nX: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
                if d.write_all(&[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    // A keep-alive connection after one answer.
    let mut kept = TcpStream::connect(addr).unwrap();
    kept.write_all(b"GET /.well-known/agent-skills/index.json HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();

    let handles: Vec<_> = [silent, half, drip, kept]
        .into_iter()
        .map(|c| std::thread::spawn(move || closed_within(c, bound)))
        .collect();
    let closed: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    dripper.join().unwrap();
    for (what, c) in ["silent", "half head", "dripped head", "idle keep-alive"]
        .iter()
        .zip(&closed)
    {
        assert!(
            c.is_some(),
            "the {what} connection was still open after {bound:?}"
        );
    }
    let err = served.stderr();
    assert!(
        err.contains("header timeout (1s) ran out: 127.0.0.1:"),
        "{err}"
    );
}

/// A client that asks for a 12 MB file and never reads it (its receive buffer kept small, so
/// the answer cannot all sit in socket buffers) is cut off by the request timeout.
#[test]
fn a_reader_that_never_reads_is_cut_off_by_the_request_timeout() {
    const SIZE: usize = 12 << 20;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("big");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("SKILL.md"),
        "---\nname: big\ndescription: A big file.\n---\n\nBody.\n",
    )
    .unwrap();
    // Incompressible bytes, so the archive is as big as the file.
    let data = crate::support::incompressible(SIZE);
    std::fs::write(root.join("big.bin"), &data).unwrap();
    let mut served = Served::start_at(dir.path(), &["--request-timeout", "1s"]);
    let addr = served.addr;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut conn = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        sock.connect(addr).await.unwrap().into_std().unwrap()
    });
    conn.set_nonblocking(false).unwrap();
    conn.write_all(b"GET /.well-known/agent-skills/big/big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    // Read nothing for longer than the request timeout.
    std::thread::sleep(Duration::from_secs(4));
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let ended = loop {
        match conn.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
    };
    let err = served.stderr();
    assert!(ended, "the connection was not closed ({got} bytes read)");
    assert!(got < SIZE, "the whole answer came ({got} bytes)");
    assert!(
        err.contains("request timeout (1s) ran out: 127.0.0.1:"),
        "{err}"
    );
}

/// SIGTERM while a request is half sent: the server stops, drains for at most the drain
/// timeout (10 s by default) and exits 0, instead of waiting for the client.
#[test]
fn sigterm_with_a_half_sent_request_exits_within_the_drain_timeout() {
    let mut served = Served::start(&[]);
    let addr = served.addr;
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"GET /.well-known/agent-skills/index.json HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    // A whole request answered on another connection first: the server is up and serving.
    assert!(request(addr, "GET", INDEX, "").starts_with("HTTP/1.1 200 "));
    let status = served.signal_and_wait("-TERM", Duration::from_secs(30));
    let err = served.stderr();
    let status = status.unwrap_or_else(|| {
        panic!("still running 30 s after SIGTERM with a half-sent request; stderr: {err}")
    });
    assert!(status.success(), "{status:?}: {err}");
    drop(half);
}

/// Every answer says `X-Content-Type-Options: nosniff`: 200, 404, 405, the OPTIONS 204, 304,
/// 416, HEAD of a missing path.
#[test]
fn every_answer_says_nosniff() {
    let mut served = Served::start(&[]);
    let addr = served.addr;
    let ok = request(addr, "GET", INDEX, "");
    let etag = ok
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .unwrap()
        .to_string();
    let cases = [
        ("GET", INDEX, String::new(), "200"),
        ("GET", "/nothing/here", String::new(), "404"),
        ("HEAD", "/nothing/here", String::new(), "404"),
        ("POST", INDEX, "Content-Length: 0\r\n".into(), "405"),
        ("DELETE", "/nothing", String::new(), "405"),
        ("OPTIONS", INDEX, String::new(), "204"),
        ("GET", INDEX, format!("If-None-Match: {etag}\r\n"), "304"),
        ("GET", INDEX, "Range: bytes=999999-\r\n".into(), "416"),
    ];
    for (method, path, headers, status) in cases {
        let answer = request(addr, method, path, &headers);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{method} {path}: {answer}"
        );
        assert!(
            answer
                .to_ascii_lowercase()
                .contains("\r\nx-content-type-options: nosniff\r\n"),
            "{method} {path} ({status}) lacks nosniff: {answer}"
        );
    }
    served.stderr();
}
