//! `skillcat serve` under abuse, on 127.0.0.1: thousands of idle or dripping connections, request
//! heads that never end, a SIGTERM with a half-sent request, and `nosniff` on every answer.
//!
//! `SKILLCAT_TEST_BIN=/path/to/skillcat` runs these against another build.

mod support;

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
        let (mut child, _line, url) =
            support::serve::spawn_serve(&catalog(), extra, Stdio::piped());
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
