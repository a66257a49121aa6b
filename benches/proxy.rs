//! Cost of a request through a run's proxy: the same 30 sequential HTTP requests to a server on
//! 127.0.0.1, made by the same Python client, once inside a confined run granted
//! `bench.test:80` (through its proxy; `[sandbox.resolve]` pins the name to the server) and
//! once outside the sandbox, directly. Each prints the median of its 30; the difference is the
//! proxy's cost per request (target ≤ +5 ms). Every request is a new connection, as the proxy
//! serves one request per connection.
//!
//! `cargo bench --bench proxy` (add `-- 10` for 10 rounds of 30 requests each way).

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use skillcat::capability::{Grant, Network, Pin, Trust};
use skillcat::script::{AllowAll, Runner, RunnerConfig};
use skillcat::source::{DirOptions, DirSource, SourceExt};

const CLIENT: &str = r#"#!/usr/bin/python3
# Time N requests.
import socket, statistics, sys, time
host, port, n, via = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
times = []
for _ in range(n):
    t = time.perf_counter()
    if via == "proxy":
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(("GET http://%s:%d/ HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, host, port)).encode())
    else:
        s = socket.create_connection((host, port))
        s.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host).encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:80]
    times.append(time.perf_counter() - t)
print("%.3f" % (statistics.median(times) * 1000))
"#;

/// A server answering every request with 200 and a small body, then closing.
fn server() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n",
                );
            });
        }
    });
    port
}

async fn bench(rounds: usize) {
    let port = server();
    let dir = tempfile::Builder::new()
        .prefix("skillcat-bench-proxy-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let skill_dir = dir.path().join("client");
    std::fs::create_dir_all(skill_dir.join("scripts")).unwrap();
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: client\ndescription: Times requests.\n---\nBody\n",
    )
    .unwrap();
    let script = skill_dir.join("scripts/req.py");
    std::fs::write(&script, CLIENT).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&skill_dir, std::fs::Permissions::from_mode(0o755)).unwrap();

    let hosts = Network::parse("bench.test:80").unwrap();
    let mut config = RunnerConfig::new(
        Grant {
            fs_read: vec![],
            fs_write: vec![],
            network: hosts.clone(),
            timeout: Duration::from_secs(60),
            trust: Trust::External,
        },
        skillcat::context::Env::from_process().user_dirs(),
    );
    config.helper = PathBuf::from(env!("CARGO_BIN_EXE_skillcat"));
    config.workspace_base = dir.path().join("ws");
    config.pins = vec![Pin::parse("bench.test:80", &format!("127.0.0.1:{port}")).unwrap()];
    let runner = Runner::new(config, Arc::new(AllowAll)).unwrap();
    let src = DirSource::open_skill(&skill_dir, DirOptions::default()).unwrap();
    let skill = src.load("").await.unwrap();
    let grant = Grant {
        fs_read: vec![],
        fs_write: vec![],
        network: hosts,
        timeout: Duration::from_secs(60),
        trust: Trust::External,
    };
    let loaded = runner.load(Arc::new(src), skill, grant).await.unwrap();

    println!("proxy: {rounds} rounds of 30 sequential requests each way (median of each 30)");
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let out = runner
            .run(
                &loaded,
                "req",
                &serde_json::json!({"args": "bench.test 80 30 proxy"}),
            )
            .await
            .unwrap();
        let proxied: f64 = out.output.text.trim().parse().unwrap();
        let direct = std::process::Command::new("/usr/bin/python3")
            .arg(&script)
            .args(["127.0.0.1", &port.to_string(), "30", "direct"])
            .output()
            .unwrap();
        let direct: f64 = String::from_utf8_lossy(&direct.stdout)
            .trim()
            .parse()
            .unwrap();
        println!(
            "  inside, through the proxy {proxied:7.3} ms   outside, direct {direct:7.3} ms   \
             {:+.3} ms",
            proxied - direct
        );
        inside.push(proxied);
        outside.push(direct);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (i, o) = (med(&mut inside), med(&mut outside));
    println!(
        "  median of the rounds: inside {i:.3} ms, outside {o:.3} ms, per request {:+.3} ms \
         (target ≤ +5 ms)",
        i - o
    );
}

fn main() {
    let rounds = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(5)
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench(rounds));
}
