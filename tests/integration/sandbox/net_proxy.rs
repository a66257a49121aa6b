//! Network by host name, through the real binary: a skill granted a list of hosts reaches them
//! through its run's proxy and nothing else. Local HTTP and HTTPS (self-signed) servers on
//! 127.0.0.1 are given names by `[sandbox.resolve]`; every hostile probe is run once with the
//! whole network (`--allow-net`), where it must get through — so each check can fail — and
//! once with the host list, where it must not.
//!
//! Origin: step 23 (issue 33: network by host name).

#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::bin::{Out, Skillcat};
use crate::support::serve::spawn_serve;
use crate::support::{http_response, sandbox_tempdir, write_skill};

/// The probe every test runs: one mode per hostile (or friendly) attempt, each printing one
/// line that says what happened.
const PROBE: &str = r#"#!/usr/bin/python3
# Network probes.
import os, socket, sys, ssl
mode = sys.argv[1]
proxy = ("127.0.0.1", 3128)

def connect_via_proxy(target, tls=False):
    s = socket.create_connection(proxy, timeout=5)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        if not b:
            break
        head += b
    status = head.split(b"\r\n")[0].decode()
    return s, status, head

try:
    if mode == "env":
        print(" ".join("%s=%s" % (k, os.environ.get(k, "")) for k in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "NO_PROXY"]))
    elif mode == "direct":
        s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=3)
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        print("direct connected:", s.recv(100).split(b"\r\n")[0].decode())
    elif mode == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"udp-probe", (sys.argv[2], int(sys.argv[3])))
        print("udp sent")
    elif mode == "dns":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # A DNS query for example.com to the test's resolver.
        q = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")
        s.sendto(q, (sys.argv[2], int(sys.argv[3])))
        print("dns query sent")
    elif mode == "resolve":
        print("resolved:", socket.getaddrinfo(sys.argv[2], 443)[0][4][0])
    elif mode == "family":
        fam = {"unix": socket.AF_UNIX, "netlink": socket.AF_NETLINK, "packet": socket.AF_PACKET}[sys.argv[2]]
        s = socket.socket(fam, socket.SOCK_DGRAM if fam != socket.AF_UNIX else socket.SOCK_STREAM)
        print("socket made")
    elif mode == "raw":
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        print("socket made")
    elif mode == "connect":
        s, status, head = connect_via_proxy(sys.argv[2])
        print("CONNECT", sys.argv[2], "->", status)
        body = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""
        if body:
            print(body.decode(errors="replace").strip())
        if status.split()[1] == "200" and len(sys.argv) > 3 and sys.argv[3] == "tls":
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            t = ctx.wrap_socket(s, server_hostname=sys.argv[2].split(":")[0])
            t.sendall(b"GET /.well-known/agent-skills/index.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            print("over TLS:", t.recv(200).split(b"\r\n")[0].decode())
    elif mode == "flood":
        # One thread (a run holds at most 64 tasks): every connection opened and asked first,
        # then every answer read; the tunnels stay open until the end.
        n = int(sys.argv[3])
        socks = []
        for _ in range(n):
            s = socket.create_connection(proxy, timeout=10)
            s.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % sys.argv[2]).encode())
            socks.append(s)
        results = []
        for s in socks:
            try:
                line = s.recv(4096).split(b"\r\n")[0].decode()
                results.append(line.split()[1] if line else "closed")
            except Exception:
                results.append("error")
        print("flood:", " ".join("%s=%d" % (k, results.count(k)) for k in sorted(set(results))))
    elif mode == "bighead":
        s = socket.create_connection(proxy, timeout=5)
        s.sendall(b"CONNECT a.test:80 HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n")
        print("bighead ->", s.recv(100).split(b"\r\n")[0].decode())
    elif mode == "http":
        # An absolute-form request, as HTTP_PROXY clients send, with the Host header given.
        s = socket.create_connection(proxy, timeout=5)
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\r\n" % (sys.argv[2], sys.argv[3])).encode())
        print("GET ->", s.recv(200).split(b"\r\n")[0].decode())
except Exception as e:
    print("%s failed: %s: %s" % (mode, type(e).__name__, e))
"#;

/// An HTTP server on 127.0.0.1 answering every request `hello from http` (and holding a
/// connection open until its client closes it); it counts connections and the most it ever
/// held at once.
struct HttpServer {
    port: u16,
    connections: Arc<AtomicUsize>,
    most_at_once: Arc<AtomicUsize>,
    /// The request heads it received.
    heads: Arc<Mutex<Vec<String>>>,
}

fn http_server() -> HttpServer {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let most_at_once = Arc::new(AtomicUsize::new(0));
    let now = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (c, m, h) = (connections.clone(), most_at_once.clone(), heads.clone());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            c.fetch_add(1, Ordering::SeqCst);
            let held = now.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(held, Ordering::SeqCst);
            let (now, h) = (now.clone(), h.clone());
            std::thread::spawn(move || {
                let mut s = s;
                let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
                let mut buf = vec![0u8; 8192];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                if !got.is_empty() {
                    h.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&got).to_string());
                    let _ = s.write_all(&http_response(200, &[], b"hello from http\n"));
                } else {
                    // A tunnel that sends nothing: held until the client goes.
                    let _ = s.read(&mut buf);
                }
                now.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    HttpServer {
        port,
        connections,
        most_at_once,
        heads,
    }
}

/// A user's world: a home holding the configuration, a working directory, and the probe skill.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    skills: PathBuf,
    config: PathBuf,
}

impl World {
    /// The probe skill declaring `network`, under a ceiling of `ceiling` with `resolve` pins.
    fn new(network: &str, ceiling: &str, resolve: &[(&str, String)]) -> Self {
        let dir = sandbox_tempdir("skillcat-net-");
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (home, skills) = (root.join("home"), root.join("skills"));
        std::fs::create_dir(&home).unwrap();
        write_skill(
            &skills.join("probe"),
            &format!(
                "---\nname: probe\ndescription: Network probes.\nmetadata:\n  skillcat.network: \"{network}\"\n---\nProbe.\n"
            ),
            &[("scripts/probe.py", PROBE, true)],
        );
        let mut text = format!("[sandbox]\nnetwork = {ceiling}\n\n[sandbox.resolve]\n");
        for (k, v) in resolve {
            text.push_str(&format!("\"{k}\" = \"{v}\"\n"));
        }
        let config = home.join("skillcat.toml");
        std::fs::write(&config, text).unwrap();
        World {
            _dir: dir,
            home,
            skills,
            config,
        }
    }

    #[track_caller]
    fn run(&self, extra: &[&str], args: &str) -> Out {
        let config = self.config.to_string_lossy().into_owned();
        let skills = self.skills.to_string_lossy().into_owned();
        let mut argv = vec!["--config", &config, "run", &skills, "probe", "probe"];
        argv.extend_from_slice(extra);
        argv.extend(["--args", args]);
        Skillcat::new(&argv)
            .cwd(&self.home)
            .env("HOME", &self.home)
            .env_remove("SKILLCAT_CONFIG")
            .deadline(Duration::from_secs(60))
            .run()
    }
}

#[test]
fn an_allowed_name_is_reached_over_http_and_connect_and_the_run_reports_it() {
    let http = http_server();
    let (mut https, _, url) = {
        let certs = sandbox_tempdir("skillcat-net-tls-");
        crate::support::central::certificates(certs.path());
        let (cert, key) = (certs.path().join("cert.pem"), certs.path().join("key.pem"));
        let r = spawn_serve(
            &crate::support::bin::manifest_dir().join("fixtures/skills"),
            &[
                "--tls-cert",
                cert.to_str().unwrap(),
                "--tls-key",
                key.to_str().unwrap(),
            ],
            std::process::Stdio::null(),
        );
        // The server has read its files.
        drop(certs);
        r
    };
    let tls_port = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let w = World::new(
        "api.test:80 secure.test",
        "true",
        &[
            ("api.test:80", format!("127.0.0.1:{}", http.port)),
            ("secure.test:443", format!("127.0.0.1:{tls_port}")),
        ],
    );
    // The script is told where the proxy is.
    let o = w.run(&[], "env");
    o.code(0);
    assert!(
        o.out().contains("HTTP_PROXY=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 ALL_PROXY=http://127.0.0.1:3128 NO_PROXY=localhost,127.0.0.1,::1"),
        "{}",
        o.out()
    );

    // A plain HTTP request by name, in absolute form as HTTP_PROXY clients send it.
    let o = w.run(&[], "http http://api.test/hello api.test");
    o.code(0);
    assert_eq!(o.out().trim(), "GET -> HTTP/1.1 200 X", "{}", o.stderr);
    o.says(&[&format!(
        "network: reached api.test:80 at 127.0.0.1:{} (pinned) (1 connection",
        http.port
    )]);
    // What reached the server: the path in origin form, the Host header, no Proxy-* header,
    // one request per connection.
    let head = http.heads.lock().unwrap().last().cloned().unwrap();
    assert!(head.starts_with("GET /hello HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("\r\nHost: api.test\r\n"), "{head}");
    assert!(head.contains("\r\nConnection: close\r\n"), "{head}");
    assert!(!head.to_ascii_lowercase().contains("proxy-"), "{head}");

    // TLS through CONNECT to the HTTPS server.
    let o = w.run(&[], "connect secure.test:443 tls");
    o.code(0);
    assert!(
        o.out()
            .contains("CONNECT secure.test:443 -> HTTP/1.1 200 Connection established")
            && o.out().contains("over TLS: HTTP/1.1 200 OK"),
        "{}\n{}",
        o.out(),
        o.stderr
    );
    o.says(&[&format!(
        "network: reached secure.test:443 at 127.0.0.1:{tls_port} (pinned)"
    )]);

    // An unlisted name (and an unlisted port of a listed one) is refused, said, and hinted.
    let o = w.run(&[], "connect evil.test:443");
    o.code(0);
    assert!(o.out().contains("-> HTTP/1.1 403 Forbidden"), "{}", o.out());
    o.says(&[
        "network: refused evil.test:443: not in this run's network grant",
        "hint: grant it for one run with `--allow-net evil.test:443`",
    ]);
    assert!(
        o.out()
            .contains("[hint: grant it for one run with `--allow-net evil.test:443`")
    );
    let o = w.run(&[], "connect api.test:443");
    assert!(o.out().contains("-> HTTP/1.1 403 Forbidden"), "{}", o.out());

    // The hint is right: the flag it names lets it through (a pin gives the name an address).
    let o = w.run(&["--allow-net", "api.test:443"], "connect api.test:443");
    assert!(
        o.out().contains("-> HTTP/1.1 502") || o.out().contains("-> HTTP/1.1 403"),
        "{}",
        o.out()
    );
    o.says(&[
        "network: refused api.test:443: the name does not resolve|a loopback address|resolves to",
    ]);

    // A Host header naming another host than the URL is refused (no fronting in plain HTTP).
    let o = w.run(&[], "http http://api.test/ evil.test");
    assert!(o.out().contains("GET -> HTTP/1.1 400"), "{}", o.out());
    let _ = https.kill();
}

#[test]
fn no_way_out_but_the_proxy() {
    let http = http_server();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    // `api.localhost` resolves to loopback (RFC 6761), on the port of the test's server: without
    // the proxy's address check, the server would get the connection.
    let w = World::new(
        &format!("api.test:80 api.localhost:{}", http.port),
        "true",
        &[("api.test:80", format!("127.0.0.1:{}", http.port))],
    );
    let port = http.port.to_string();
    let udp_port = udp_port.to_string();
    let got_datagram = || {
        let mut b = [0u8; 512];
        udp.recv_from(&mut b).is_ok()
    };

    // Each probe, first with the whole network: it gets through, so the check can fail.
    let all = ["--allow-net"];
    let o = w.run(&all, &format!("direct 127.0.0.1 {port}"));
    assert!(
        o.out().starts_with("direct connected: HTTP/1.1 200"),
        "{}",
        o.out()
    );
    let o = w.run(&all, &format!("udp 127.0.0.1 {udp_port}"));
    assert_eq!(o.out().trim(), "udp sent");
    assert!(
        got_datagram(),
        "the datagram arrives with the whole network"
    );
    let o = w.run(&all, &format!("dns 127.0.0.1 {udp_port}"));
    assert_eq!(o.out().trim(), "dns query sent");
    assert!(got_datagram(), "the query arrives with the whole network");
    let o = w.run(&all, "family unix");
    assert_eq!(o.out().trim(), "socket made");

    // With the host list: nothing but the proxy.
    let before = http.connections.load(Ordering::SeqCst);
    let o = w.run(&[], &format!("direct 127.0.0.1 {port}"));
    o.code(0);
    assert!(o.out().starts_with("direct failed"), "{}", o.out());
    let o = w.run(&[], "direct 169.254.169.254 80");
    assert!(o.out().starts_with("direct failed"), "{}", o.out());
    let o = w.run(&[], "direct ::1 80");
    assert!(o.out().starts_with("direct failed"), "{}", o.out());
    assert_eq!(
        http.connections.load(Ordering::SeqCst),
        before,
        "no direct connection arrived"
    );
    let o = w.run(&[], &format!("udp 127.0.0.1 {udp_port}"));
    assert!(
        o.out().contains("udp failed: PermissionError"),
        "{}",
        o.out()
    );
    let o = w.run(&[], &format!("dns 127.0.0.1 {udp_port}"));
    assert!(
        o.out().contains("dns failed: PermissionError"),
        "{}",
        o.out()
    );
    assert!(!got_datagram(), "no datagram left the sandbox");
    let o = w.run(&[], "resolve api.github.com");
    assert!(o.out().starts_with("resolve failed"), "{}", o.out());
    for family in ["unix", "netlink", "packet"] {
        let o = w.run(&[], &format!("family {family}"));
        assert!(
            o.out().contains("failed: PermissionError"),
            "{family}: {}",
            o.out()
        );
    }
    let o = w.run(&[], "raw");
    assert!(
        o.out().contains("raw failed: PermissionError"),
        "{}",
        o.out()
    );

    // Through the proxy: IP literals and the metadata address are refused, by name only.
    for target in [
        format!("127.0.0.1:{port}"),
        "169.254.169.254:80".to_string(),
        "[fd00:ec2::254]:80".to_string(),
        "[::1]:80".to_string(),
        "2130706433:80".to_string(),
    ] {
        let o = w.run(&[], &format!("connect {target}"));
        assert!(
            o.out().contains("-> HTTP/1.1 403 Forbidden"),
            "{target}: {}",
            o.out()
        );
        o.says(&["an IP address"]);
    }
    let o = w.run(
        &[],
        "http http://169.254.169.254/latest/meta-data/ 169.254.169.254",
    );
    assert!(o.out().contains("GET -> HTTP/1.1 403"), "{}", o.out());

    // A listed name that resolves to loopback, without a pin: refused, with the pin to add.
    let o = w.run(&[], &format!("connect api.localhost:{port}"));
    assert!(o.out().contains("-> HTTP/1.1 403 Forbidden"), "{}", o.out());
    o.says(&[
        &format!(
            "network: refused api.localhost:{port}: api.localhost resolves to a loopback \
             address"
        ),
        &format!(
            "hint: if that address is meant, pin it in skillcat.toml: [sandbox.resolve] \
             \"api.localhost:{port}\""
        ),
    ]);
    assert_eq!(
        http.connections.load(Ordering::SeqCst),
        before,
        "nothing reached the server"
    );
}

#[test]
fn the_proxys_limits_hold_under_a_flood() {
    let http = http_server();
    let w = World::new(
        "api.test:80",
        "true",
        &[("api.test:80", format!("127.0.0.1:{}", http.port))],
    );
    // 60 tunnels held open at once: 32 are served, the rest turned away, and the run says so.
    let o = w.run(&[], "flood api.test:80 60");
    o.code(0);
    assert!(
        o.out().contains("flood: 200=32 503=28"),
        "{}\n{}",
        o.out(),
        o.stderr
    );
    o.says(&["network: limit reached: connections at once (32)"]);
    assert!(http.most_at_once.load(Ordering::SeqCst) <= 32);
    // A request head past 16 KiB.
    let o = w.run(&[], "bighead");
    assert!(o.out().contains("bighead -> HTTP/1.1 431"), "{}", o.out());
}

#[test]
fn the_ceiling_and_the_flags_bound_the_host_list() {
    let w = World::new("api.corp.test:80 other.corp.test", "[\"*.corp.test\"]", &[]);
    // tools and --dry-run show the grant.
    let config = w.config.to_string_lossy().into_owned();
    let skills = w.skills.to_string_lossy().into_owned();
    let o = Skillcat::new(&["--config", &config, "tools", &skills, "probe"])
        .cwd(&w.home)
        .env("HOME", &w.home)
        .run();
    o.code(0);
    assert!(
        o.out()
            .contains("grant: network api.corp.test:80 other.corp.test (through the run's proxy"),
        "{}",
        o.out()
    );
    let o = w.run(&["--dry-run", "--allow-net", "x.corp.test:443"], "env");
    o.code(0);
    assert!(
        o.out()
            .contains("grant: network api.corp.test:80 other.corp.test x.corp.test:443")
            && o.out().contains("Nothing run (--dry-run)."),
        "{}",
        o.out()
    );
    // A refused name the ceiling does not allow either: the hint names the file to widen.
    let o = w.run(&[], "connect evil.example:443");
    o.code(0);
    o.says(&[
        "network: refused evil.example:443: not in this run's network grant",
        "hint: the configured ceiling does not allow evil.example:443 either ([sandbox] network = \
         *.corp.test): add \"evil.example:443\" to it in",
    ]);
    // A flag outside the ceiling, bare --allow-net under a list, and a bad pattern: usage errors.
    let o = w.run(&["--allow-net", "api.github.com"], "env");
    o.code(2);
    o.says(&["--allow-net api.github.com: outside the configured ceiling (network = *.corp.test)"]);
    let o = w.run(&["--allow-net"], "env");
    o.code(2);
    o.says(&["--allow-net: the configured ceiling allows only *.corp.test"]);
    let o = w.run(&["--allow-net", "10.0.0.1"], "env");
    o.code(2);
    o.says(&["--allow-net 10.0.0.1: an IP address"]);
    // A bad pattern in the ceiling names the key and its place.
    std::fs::write(&w.config, "[sandbox]\nnetwork = [\"*.com\"]\n").unwrap();
    let o = w.run(&[], "env");
    o.code(2);
    o.says(&["2:11: sandbox.network", "too broad"]);
    // A project's own file that the user has not trusted: the note says why its list does not
    // count, and how to let it.
    let project = w.home.join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(
        project.join("skillcat.toml"),
        "[sandbox]\nnetwork = [\"*.corp.test\"]\n",
    )
    .unwrap();
    let o = Skillcat::new(&[
        "run",
        &skills,
        "probe",
        "probe",
        "--dry-run",
        "--args",
        "env",
    ])
    .cwd(&project)
    .env("HOME", &w.home)
    .env("XDG_CONFIG_HOME", w.home.join(".config"))
    .env_remove("SKILLCAT_CONFIG")
    .run();
    o.code(0);
    o.says(&[
        "note: api.corp.test:80 is asked for but outside the configured ceiling ([sandbox] network = false); not granted: the project's",
        "counts only as far as your own configuration allows until you run `skillcat trust project`",
    ]);
    // A bad declaration is read as no network, and said.
    let w = World::new("api.test:99999", "true", &[]);
    let o = w.run(&["--dry-run"], "env");
    o.says(&["warning: probe: skillcat.network: `api.test:99999` is not a host pattern"]);
    assert!(o.out().contains("grant: network none"), "{}", o.out());
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_results_carry_the_network_report_in_meta() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let http = http_server();
    let w = World::new(
        "api.test:80",
        "true",
        &[("api.test:80", format!("127.0.0.1:{}", http.port))],
    );
    let config = w.config.to_string_lossy().into_owned();
    let skills = w.skills.to_string_lossy().into_owned();
    let (mut child, _tmp) =
        crate::support::spawn_mcp_in(&w.home, Some(&w.home), &[&skills, "--config", &config]);
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
    let call = |args: &str| {
        let mut params = CallToolRequestParams::new("run_probe_probe".to_string());
        let serde_json::Value::Object(o) = serde_json::json!({"args": args}) else {
            unreachable!()
        };
        params = params.with_arguments(o);
        params
    };
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        client.call_tool(call("http http://api.test/ api.test")),
    )
    .await
    .unwrap()
    .unwrap();
    let r = serde_json::to_value(r).unwrap();
    assert_eq!(r["isError"], false, "{r}");
    let net = &r["_meta"]["network"];
    assert_eq!(net["reached"][0]["host"], "api.test", "{r}");
    assert_eq!(net["reached"][0]["pinned"], true, "{r}");
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        client.call_tool(call("connect evil.test:443")),
    )
    .await
    .unwrap()
    .unwrap();
    let r = serde_json::to_value(r).unwrap();
    let net = &r["_meta"]["network"];
    assert_eq!(net["refused"][0]["target"], "evil.test:443", "{r}");
    assert!(
        net["refused"][0]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--allow-net evil.test:443")),
        "{r}"
    );
    // The model reads the refusal and its hint too.
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("[network: refused evil.test:443"), "{text}");
    client.cancel().await.unwrap();
    let _ = child.wait().await;
}

#[test]
fn pins_are_the_users_and_a_bad_one_is_refused_with_its_place() {
    let http = http_server();
    // The user's own file: the whole network allowed, no pin.
    let w = World::new("api.test:80", "true", &[]);
    // A checkout's skillcat.toml (not trusted) pins the name to the host's loopback: it may only
    // narrow the user's configuration, so its pin does not count.
    let project = w.home.join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("skillcat.toml"),
        format!(
            "[sandbox]\nnetwork = [\"api.test:80\"]\n\n[sandbox.resolve]\n\"api.test:80\" = \"127.0.0.1:{}\"\n",
            http.port
        ),
    )
    .unwrap();
    std::fs::create_dir_all(w.home.join(".config/skillcat")).unwrap();
    std::fs::copy(&w.config, w.home.join(".config/skillcat/skillcat.toml")).unwrap();
    let skills = w.skills.to_string_lossy().into_owned();
    let o = Skillcat::new(&[
        "run",
        &skills,
        "probe",
        "probe",
        "--args",
        "connect api.test:80",
    ])
    .cwd(&project)
    .env("HOME", &w.home)
    .env_remove("SKILLCAT_CONFIG")
    .env_remove("XDG_CONFIG_HOME")
    .deadline(Duration::from_secs(60))
    .run();
    assert!(
        !o.out().contains("-> HTTP/1.1 200"),
        "{}\n{}",
        o.out(),
        o.stderr
    );
    o.says(&["network: refused api.test:80"]);
    assert_eq!(
        http.connections.load(Ordering::SeqCst),
        0,
        "the project's pin did not count"
    );
    // In the user's own file, the same pin counts.
    std::fs::write(
        &w.config,
        format!(
            "[sandbox]\nnetwork = true\n\n[sandbox.resolve]\n\"api.test:80\" = \"127.0.0.1:{}\"\n",
            http.port
        ),
    )
    .unwrap();
    let o = w.run(&[], "connect api.test:80");
    assert!(
        o.out().contains("-> HTTP/1.1 200"),
        "{}\n{}",
        o.out(),
        o.stderr
    );
    // A pin that is not one names its key and place.
    std::fs::write(
        &w.config,
        "[sandbox]\nnetwork = true\n\n[sandbox.resolve]\n\"api.test\" = \"127.0.0.1:80\"\n",
    )
    .unwrap();
    let o = w.run(&[], "env");
    o.code(2);
    o.says(&["sandbox.resolve: `api.test`: write the name with its port"]);
}

/// A service bound to every address of the host (`0.0.0.0`, `[::]`) — an admin port a cloud
/// security group hides from the world — is reachable at each of the host's own addresses,
/// public ones included. A granted name that resolves to one of them must not reach it: the
/// proxy refuses the host's interface addresses and its `local` routes (an AnyIP /24 here), as
/// it refuses loopback, unless the operator pinned that name to that address.
///
/// The test makes a network and mount namespace of its own (no other host is ever contacted):
/// `lo` carries a public IPv4 and IPv6 address and a local route, a listener on `[::]`
/// (dual-stack) counts connections, and the namespace's `/etc/hosts` names the addresses.
#[test]
fn a_granted_name_at_one_of_the_hosts_own_addresses_is_refused() {
    const PORT: u16 = 8080;
    let w = World::new(
        &format!("admin.test:{PORT} anyip.test:{PORT} admin6.test:{PORT} pinned.test:{PORT}"),
        "true",
        &[("pinned.test:8080", format!("11.22.33.44:{PORT}"))],
    );
    let root = w.home.parent().unwrap().to_path_buf();
    let hosts = root.join("hosts");
    std::fs::write(
        &hosts,
        "127.0.0.1 localhost\n11.22.33.44 admin.test\n11.22.40.9 anyip.test\n2a10::7 admin6.test\n",
    )
    .unwrap();
    let hits = root.join("hits");
    let listener = root.join("listener.py");
    std::fs::write(
        &listener,
        format!(
            "import socket\n\
             s = socket.create_server(('::', {PORT}), family=socket.AF_INET6, dualstack_ipv6=True)\n\
             open({ready:?}, 'w').close()\n\
             while True:\n\
             \x20   c, peer = s.accept()\n\
             \x20   open({hits:?}, 'a').write('hit %s\\n' % peer[0])\n\
             \x20   c.sendall(b'admin port\\n')\n\
             \x20   c.close()\n",
            ready = root.join("ready").to_string_lossy(),
            hits = hits.to_string_lossy(),
        ),
    )
    .unwrap();
    let run = |target: &str| {
        format!(
            "echo '== {target}'\n{bin} --config {config} run {skills} probe probe --args 'connect {target}:{PORT}' 2>&1 || true\n",
            bin = crate::support::bin::BIN,
            config = w.config.display(),
            skills = w.skills.display(),
        )
    };
    let script = format!(
        "set -e\n\
         ip link set lo up\n\
         ip addr add 11.22.33.44/32 dev lo\n\
         ip addr add 2a10::7/128 dev lo\n\
         ip route add local 11.22.40.0/24 dev lo\n\
         mount --bind {hosts} /etc/hosts\n\
         python3 {listener} & pid=$!\n\
         while [ ! -e {ready} ]; do sleep 0.05; done\n\
         set +e\n\
         {runs}\
         echo '== hits'\n\
         cat {hits} 2>/dev/null\n\
         kill $pid\n",
        hosts = hosts.display(),
        listener = listener.display(),
        ready = root.join("ready").display(),
        hits = hits.display(),
        runs = ["admin.test", "anyip.test", "admin6.test", "pinned.test"]
            .map(run)
            .concat(),
    );
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["-k", "5", "240", "unshare", "--net", "--mount"]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        cmd.arg("--map-root-user");
    }
    let out = cmd
        .args(["--", "sh", "-c", &script])
        .current_dir(&w.home)
        .env("HOME", &w.home)
        .env_remove("SKILLCAT_CONFIG")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let part = |name: &str| {
        text.split(&format!("== {name}\n"))
            .nth(1)
            .and_then(|s| s.split("\n== ").next())
            .unwrap_or_else(|| panic!("no {name} part:\n{text}"))
            .to_string()
    };
    for (name, address) in [
        ("admin.test", "11.22.33.44"),
        ("anyip.test", "11.22.40.9"),
        ("admin6.test", "2a10::7"),
    ] {
        let p = part(name);
        assert!(
            p.contains(&format!("CONNECT {name}:{PORT} -> HTTP/1.1 403 Forbidden")),
            "{name} reached the host's own address:\n{text}"
        );
        assert!(
            p.contains(&format!(
                "network: refused {name}:{PORT}: {name} resolves to an address of this host"
            )),
            "{name}:\n{text}"
        );
        // The script (and the model, and the report) are told the host, never the address.
        assert!(!p.contains(address), "{name}: {address} was told:\n{p}");
    }
    // The operator's own pin reaches it: the check is the default, not a wall.
    assert!(
        part("pinned.test").contains(&format!("CONNECT pinned.test:{PORT} -> HTTP/1.1 200")),
        "{text}"
    );
    let hits = part("hits");
    assert_eq!(
        hits.lines().filter(|l| l.starts_with("hit ")).count(),
        1,
        "only the pinned name arrived:\n{text}"
    );
}

/// What a name resolves to on the host's side — an internal name's address, the operator's
/// pin — is not the script's to learn: a refusal, and the report a model reads, name the host.
#[test]
fn refusals_name_the_host_never_the_address() {
    // A port nothing listens on (bound, then closed).
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let w = World::new(
        "internal.test:80 api.localhost:80",
        "true",
        &[("internal.test:80", format!("127.0.0.1:{closed}"))],
    );
    // A pinned name whose address does not answer.
    let o = w.run(&[], "connect internal.test:80");
    assert!(o.out().contains("-> HTTP/1.1 502"), "{}", o.out());
    o.says(&["network: refused internal.test:80: could not connect"]);
    // A name that resolves to loopback.
    let p = w.run(&[], "connect api.localhost:80");
    assert!(p.out().contains("-> HTTP/1.1 403"), "{}", p.out());
    p.says(&["network: refused api.localhost:80: api.localhost resolves to a loopback address"]);
    for o in [o, p] {
        assert!(
            !o.out().contains("127.0.0.1"),
            "the script was told:\n{}",
            o.out()
        );
        assert!(!o.stderr.contains("127.0.0.1"), "{}", o.stderr);
    }
}
