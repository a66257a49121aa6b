//! `skillcat mcp` over Streamable HTTP, measured on 127.0.0.1 against the release binary.
//!
//! 1. **Overhead**: the same tool call (`run_echo_echo_args`, one confined run) made 200 times
//!    over stdio and 200 times over HTTP, alternating one and the other so both see the same
//!    machine; the median of each and their difference (target: HTTP ≤ +2 ms). The same for
//!    `resources/read` of a SKILL.md, which is the transport alone.
//! 2. **Load**: 32 client sessions at once, each calling the tool 50 times one after the
//!    other: every call must succeed; p50, p99 and the slowest call, and the wall time.
//!
//! `cargo bench --bench mcp_http` (add `-- ROUNDS SESSIONS CALLS` for other counts:
//! `-- 200 32 50` is the default). Figures go in docs/mcp.md with the machine's load.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

type Client = RunningService<RoleClient, ()>;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn command(tmp: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skillcat"));
    cmd.args([
        "mcp",
        "fixtures/mcp/skills",
        "--config",
        "fixtures/mcp/skillcat.toml",
        "--no-watch",
    ])
    .args(extra)
    .current_dir(manifest())
    .env_remove("SKILLCAT_CONFIG")
    .env("TMPDIR", tmp)
    .env("XDG_RUNTIME_DIR", tmp)
    .kill_on_drop(true);
    cmd
}

/// The HTTP server, and its URL (read from its stderr).
async fn http_server(tmp: &Path, sessions: usize) -> (tokio::process::Child, String) {
    let max = sessions.to_string();
    let mut child = command(tmp, &["--http", "127.0.0.1:0", "--max-sessions", &max])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("skillcat");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the server said where it listens");
        if let Some(at) = line.find("http://127.0.0.1:") {
            let rest = &line[at + "http://127.0.0.1:".len()..];
            let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
            break format!("http://127.0.0.1:{port}/mcp");
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

async fn http_client(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()),
    ))
    .await
    .expect("initialize over HTTP")
}

async fn stdio_client(tmp: &Path) -> (tokio::process::Child, Client) {
    let mut child = command(tmp, &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("skillcat");
    let client =
        ().serve((child.stdout.take().unwrap(), child.stdin.take().unwrap()))
            .await
            .expect("initialize over stdio");
    (child, client)
}

/// One tool call; its time. Panics on anything but a successful run.
async fn call(c: &Client) -> Duration {
    let args = json!({"args": "a b"});
    let params = CallToolRequestParams::new("run_echo_echo_args")
        .with_arguments(args.as_object().unwrap().clone());
    let t = Instant::now();
    let r = c.call_tool(params).await.expect("a tool result");
    let took = t.elapsed();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    took
}

async fn read(c: &Client) -> Duration {
    let t = Instant::now();
    c.read_resource(ReadResourceRequestParams::new("skill://echo/SKILL.md"))
        .await
        .expect("a read");
    t.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    quantile(&v, 0.5)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = args.first().copied().unwrap_or(200);
    let sessions = args.get(1).copied().unwrap_or(32);
    let calls = args.get(2).copied().unwrap_or(50);
    let tmp = tempfile::Builder::new()
        .prefix("skillcat-bench-mcp-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    println!("load average before: {}", load_average());

    // 1. The same call over both transports, alternating.
    let (mut http, url) = http_server(tmp.path(), sessions + 2).await;
    let (mut stdio_child, stdio) = stdio_client(tmp.path()).await;
    let over_http = http_client(&url).await;
    for _ in 0..10 {
        call(&stdio).await;
        call(&over_http).await;
        read(&stdio).await;
        read(&over_http).await;
    }
    let (mut s_call, mut h_call, mut s_read, mut h_read) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        // Alternate which goes first, so neither always follows the other.
        if i % 2 == 0 {
            s_call.push(call(&stdio).await);
            h_call.push(call(&over_http).await);
        } else {
            h_call.push(call(&over_http).await);
            s_call.push(call(&stdio).await);
        }
        s_read.push(read(&stdio).await);
        h_read.push(read(&over_http).await);
    }
    let (sc, hc) = (median(s_call), median(h_call));
    let (sr, hr) = (median(s_read), median(h_read));
    println!(
        "tool call, median of {rounds}: stdio {:.2} ms, HTTP {:.2} ms, HTTP - stdio {:+.2} ms",
        ms(sc),
        ms(hc),
        ms(hc) - ms(sc)
    );
    println!(
        "resources/read, median of {rounds}: stdio {:.3} ms, HTTP {:.3} ms, HTTP - stdio {:+.3} ms",
        ms(sr),
        ms(hr),
        ms(hr) - ms(sr)
    );
    let _ = stdio.cancel().await;
    let _ = stdio_child.wait().await;
    let _ = over_http.cancel().await;

    // 2. Load: every session at once, each calling one call after the other.
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(http_client(&url).await);
    }
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|c| {
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(calls);
                for _ in 0..calls {
                    times.push(call(&c).await);
                }
                let _ = c.cancel().await;
                times
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        match t.await {
            Ok(times) => all.extend(times),
            Err(_) => errors += 1,
        }
    }
    let wall = started.elapsed();
    all.sort_unstable();
    println!(
        "load: {sessions} sessions x {calls} calls = {} calls, {errors} failed sessions, \
         wall {:.1} s ({:.0} calls/s); per call p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        all.len(),
        wall.as_secs_f64(),
        all.len() as f64 / wall.as_secs_f64(),
        ms(quantile(&all, 0.5)),
        ms(quantile(&all, 0.99)),
        ms(*all.last().unwrap()),
    );
    println!("load average after: {}", load_average());
    let _ = http.start_kill();
    let _ = http.wait().await;
    assert_eq!(errors, 0, "every call succeeds");
    assert_eq!(all.len(), sessions * calls);
}
