//! `skillcat mcp --http`: the budgets a hostile client tries to walk around (red team, round 4).
//! Each case drives the real binary on 127.0.0.1 with what a client would not send: session ids
//! that are not one, stateless calls that each used to be a session of their own, a body sent a
//! byte at a time, another token's session id, a revoked token's session, more connections than
//! one address or one token may hold.
//!
//! | attack | answer |
//! | --- | --- |
//! | `initialize` bursts past `--max-sessions` | the limit is counted where sessions are made: N succeed, the rest 503 |
//! | `Mcp-Session-Id` not UTF-8, not of the shape the server gives, or two of them | 400, no session made |
//! | stateless (2026-07-28) `tools/call`s, each a session of its own; a token's calls spread over sessions | each takes a slot of `--max-runs` and of its token's `--max-runs-per-token`: `-32000` beyond |
//! | a POST body sent slower than `--body-timeout` | 408, the connection closed; a GET event stream lives on |
//! | a stateless `subscriptions/listen`, a POST that lasts | an event stream like a GET's: ended after `--max-stream-duration` |
//! | another token's session id | 404, as an unknown session |
//! | a revoked token's sessions | ended: its event stream closes, its place is free |
//! | more connections than `--max-connections-per-address` / requests than `--max-requests-per-token` | 503 from the listener / 429 |

#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::mcp::http::{
    HttpServer, INITIALIZE, bounded, eventually, make_token, post, skills_copy, text_of,
};

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// A raw POST with a session id given as bytes (which need not be UTF-8).
async fn post_with_id(url: &str, token: Option<&str>, id: &[u8], body: &str) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header(
            "mcp-session-id",
            reqwest::header::HeaderValue::from_bytes(id).unwrap(),
        );
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    req.body(body.to_string()).send().await.unwrap()
}

/// `initialize` then `notifications/initialized` by hand: the session id.
async fn open_session(url: &str, token: Option<&str>) -> String {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|b| vec![("authorization", b)])
        .unwrap_or_default();
    let r = post(url, &headers, INITIALIZE.into()).await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    drop(r);
    let r = post_with_id(url, token, id.as_bytes(), INITIALIZED).await;
    assert!(r.status().is_success(), "{}", r.status());
    id
}

/// A session's GET event stream.
async fn event_stream(url: &str, token: Option<&str>, id: &str) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    req.send().await.unwrap()
}

/// A client of the stateless revision (2026-07-28): every request its own.
async fn stateless(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .auth_header(token.to_string());
    ().serve_with_lifecycle(
        StreamableHttpClientTransport::from_config(config),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("server/discover")
}

/// A `tools/call` refused as busy: the error's `data`.
async fn refused(client: &RunningService<RoleClient, ()>, tool: &str) -> serde_json::Value {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params = params.with_arguments(json!({"who": "x"}).as_object().unwrap().clone());
    let outcome = client.call_tool(params).await;
    let Err(rmcp::ServiceError::McpError(e)) = outcome else {
        panic!("a run beyond the limits was not refused: {outcome:?}");
    };
    assert_eq!(e.code.0, -32000, "{e:?}");
    e.data.expect("data")
}

/// A POST whose head is sent and whose body is not: the connection.
async fn slow_post(url: &str, token: Option<&str>) -> tokio::net::TcpStream {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let auth = token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{auth}content-length: 400\r\n\r\n{{\"jsonrpc\""
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// What the server answers on `s` before it closes it (or 30 s pass: `None`).
async fn answer_of(s: &mut tokio::net::TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut got)).await;
    match read {
        Ok(_) => Some(String::from_utf8_lossy(&got).into_owned()),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_session_ids_are_400_and_open_no_session() {
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &["--max-sessions", "2"]).await;
        let url = &http.url;

        // A burst of initializes: the limit is counted where sessions are made.
        let burst =
            futures_util::future::join_all((0..12).map(|_| post(url, &[], INITIALIZE.into())))
                .await;
        let opened: Vec<String> = burst
            .iter()
            .filter(|r| r.status() == 200)
            .map(|r| r.headers()["mcp-session-id"].to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            opened.len(),
            2,
            "{:?}",
            burst.iter().map(|r| r.status()).collect::<Vec<_>>()
        );
        assert!(burst.iter().all(|r| r.status() == 200 || r.status() == 503));
        for id in &opened {
            let end = reqwest::Client::new()
                .delete(url)
                .header("mcp-session-id", id)
                .send()
                .await
                .unwrap();
            assert_eq!(end.status(), 204);
        }

        // Ids that are not the server's shape, on every method: 400, before anything is made.
        let long = "a".repeat(300);
        let hostile: [(&str, &[u8]); 7] = [
            ("not UTF-8", b"\xff\xfe\xfd"),
            (
                "UTF-8 then a stray byte",
                b"0f0e4b62-8d0b-4b7e-9d0a-5c1c2d3e4f5\x80",
            ),
            ("Latin-1 letters", b"caf\xe9"),
            ("a path", b"../../etc/passwd"),
            ("a word", b"not-a-session"),
            (
                "a UUID in capitals",
                b"0F0E4B62-8D0B-4B7E-9D0A-5C1C2D3E4F50",
            ),
            ("too long", long.as_bytes()),
        ];
        for (what, id) in hostile {
            let r = post_with_id(url, None, id, INITIALIZE).await;
            assert_eq!(r.status(), 400, "{what}: POST initialize");
            let r = post_with_id(url, None, id, TOOLS_LIST).await;
            assert_eq!(r.status(), 400, "{what}: POST tools/list");
            let get = reqwest::Client::new()
                .get(url)
                .header("accept", "text/event-stream")
                .header(
                    "mcp-session-id",
                    reqwest::header::HeaderValue::from_bytes(id).unwrap(),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(get.status(), 400, "{what}: GET");
            let delete = reqwest::Client::new()
                .delete(url)
                .header(
                    "mcp-session-id",
                    reqwest::header::HeaderValue::from_bytes(id).unwrap(),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(delete.status(), 400, "{what}: DELETE");
        }

        // A flood of them opened nothing: both places are still free, and only those.
        let flood = futures_util::future::join_all(
            (0..64).map(|_| post_with_id(url, None, b"\xff", INITIALIZE)),
        )
        .await;
        assert!(flood.iter().all(|r| r.status() == 400));
        let first = open_session(url, None).await;
        let second = open_session(url, None).await;
        // Two ids in one request, each a session's: which one rmcp would read is not for a
        // client to find out.
        let mut two = reqwest::header::HeaderMap::new();
        for id in [&first, &second] {
            two.append("mcp-session-id", id.parse().unwrap());
        }
        let r = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .headers(two)
            .body(TOOLS_LIST)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "two session ids");
        let third = post(url, &[], INITIALIZE.into()).await;
        assert_eq!(third.status(), 503);
        // An id of the right shape that the server never gave is an unknown session.
        let unknown = post_with_id(
            url,
            None,
            b"0f0e4b62-8d0b-4b7e-9d0a-5c1c2d3e4f50",
            TOOLS_LIST,
        )
        .await;
        assert_eq!(unknown.status(), 404);

        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_answers_only_the_token_that_opened_it() {
    bounded(async {
        let skills = skills_copy();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let alice = make_token(&file, "alice", "mcp");
        let bob = make_token(&file, "bob", "mcp");
        let http = HttpServer::start(skills.path(), &["--tokens", file.to_str().unwrap()]).await;
        let url = &http.url;
        let id = open_session(url, Some(&alice)).await;

        // Bob knows Alice's session id: to him it does not exist.
        let r = post_with_id(url, Some(&bob), id.as_bytes(), TOOLS_LIST).await;
        assert_eq!(r.status(), 404, "another token drove the session");
        let r = event_stream(url, Some(&bob), &id).await;
        assert_eq!(r.status(), 404, "another token listened to the session");
        let end = reqwest::Client::new()
            .delete(url)
            .header("authorization", format!("Bearer {bob}"))
            .header("mcp-session-id", &id)
            .send()
            .await
            .unwrap();
        assert_eq!(end.status(), 404, "another token ended the session");

        // Alice's session is untouched.
        let r = post_with_id(url, Some(&alice), id.as_bytes(), TOOLS_LIST).await;
        assert_eq!(r.status(), 200);
        assert!(r.text().await.unwrap().contains("run_echo_greet"));

        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn revoking_a_token_ends_its_sessions() {
    bounded(async {
        let skills = skills_copy();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let alice = make_token(&file, "alice", "mcp");
        let bob = make_token(&file, "bob", "mcp");
        let http = HttpServer::start(
            skills.path(),
            &["--tokens", file.to_str().unwrap(), "--max-sessions", "1"],
        )
        .await;
        let url = &http.url;
        let id = open_session(url, Some(&alice)).await;
        let stream = event_stream(url, Some(&alice), &id).await;
        assert_eq!(stream.status(), 200);
        assert_eq!(
            post(
                url,
                &[("authorization", &format!("Bearer {bob}"))],
                INITIALIZE.into()
            )
            .await
            .status(),
            503,
            "the one place is Alice's"
        );

        let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillcat"))
            .args(["token", "revoke", "alice", "--tokens"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");

        // With no request of Alice's, her session ends: its stream closes, its place is free.
        let ended = tokio::time::timeout(Duration::from_secs(30), stream.bytes()).await;
        assert!(
            ended.is_ok(),
            "the revoked token's event stream is still open"
        );
        let start = std::time::Instant::now();
        loop {
            let r = post(
                url,
                &[("authorization", &format!("Bearer {bob}"))],
                INITIALIZE.into(),
            )
            .await;
            if r.status() == 200 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the revoked token's session still holds its place ({})",
                r.status()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

/// A configuration whose runs may last a minute (the fixture's end after 2 s), so that the
/// naps below are surely running while the calls beyond the limits are made.
fn long_runs_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("skillcat.toml");
    std::fs::write(
        &path,
        "sources = []\n[sandbox]\ntimeout = 60\n[scripts]\nextension_fields = true\n",
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_tool_calls_take_the_run_slots_of_the_server_and_the_token() {
    bounded(async {
        let skills = skills_copy();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let alice = make_token(&file, "alice", "mcp");
        let bob = make_token(&file, "bob", "mcp");
        let config = long_runs_config(dir.path());
        let http = HttpServer::start_with_config(
            skills.path(),
            &config,
            &[
                "--tokens",
                file.to_str().unwrap(),
                "--max-sessions",
                "1",
                "--max-calls-per-session",
                "1",
                "--max-runs",
                "3",
                "--max-runs-per-token",
                "2",
                "--drain-timeout",
                "1s",
            ],
        )
        .await;
        let url = &http.url;
        let a = stateless(url, &alice).await;
        let b = stateless(url, &bob).await;
        let nap = |c: &RunningService<RoleClient, ()>| {
            let peer = c.peer().clone();
            tokio::spawn(async move {
                peer.call_tool(CallToolRequestParams::new("run_sleepy_nap"))
                    .await
            })
        };

        // Alice runs two naps at once, each request its own session: her two slots.
        let naps = vec![nap(&a), nap(&a)];
        eventually("Alice's two naps run", || http.workspaces().len() == 2).await;
        let data = refused(&a, "run_echo_greet").await;
        assert_eq!(data["code"], "E_SKILL_MCP_BUSY", "{data}");
        assert_eq!(data["limit"], 2, "{data}");
        // Spread over sessions, the token's calls are bounded the same way.
        let session = crate::mcp::http::connect_with(url, Some(&alice), ()).await;
        let data = refused(&session, "run_echo_greet").await;
        assert_eq!(data["limit"], 2, "{data}");
        let _ = session.cancel().await;

        // Bob has slots of his own, until the server's three are taken.
        let mut naps = naps;
        naps.push(nap(&b));
        eventually("Bob's nap runs", || http.workspaces().len() == 3).await;
        let data = refused(&b, "run_echo_greet").await;
        assert_eq!(data["code"], "E_SKILL_MCP_BUSY", "{data}");
        assert_eq!(data["limit"], 3, "{data}");

        // A run's end gives its slots back.
        for n in naps {
            n.abort();
        }
        let start = std::time::Instant::now();
        loop {
            let mut params = CallToolRequestParams::new("run_echo_greet");
            params = params.with_arguments(json!({"who": "z"}).as_object().unwrap().clone());
            match b.call_tool(params).await {
                Ok(done) => {
                    let done = serde_json::to_value(done).unwrap();
                    assert_eq!(text_of(&done), "hello z\n", "{done}");
                    break;
                }
                Err(e) => assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "the slots never came back: {e:?}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = a.cancel().await;
        let _ = b.cancel().await;
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_request_body_is_cut_while_an_event_stream_lives_on() {
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &["--body-timeout", "1s"]).await;
        let url = &http.url;
        let id = open_session(url, None).await;
        let mut stream = event_stream(url, None, &id).await;
        assert_eq!(stream.status(), 200);

        // A body that never comes: cut after --body-timeout, answered 408.
        let mut slow = slow_post(url, None).await;
        let answer = answer_of(&mut slow)
            .await
            .expect("a body that never came held its connection for 30 s");
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

        // The event stream opened before it is still open, and still carries news.
        crate::support::write_skill(
            &skills.path().join("later"),
            "---\nname: later\ndescription: Added while a stream was open.\n---\n# Later\n",
            &[],
        );
        let mut heard = String::new();
        while !heard.contains("list_changed") {
            let chunk = tokio::time::timeout(Duration::from_secs(20), stream.chunk())
                .await
                .expect("news within seconds")
                .expect("the stream reads")
                .expect("the stream is still open");
            heard.push_str(&String::from_utf8_lossy(&chunk));
        }

        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_are_capped_per_token_and_per_address() {
    bounded(async {
        let skills = skills_copy();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let alice = make_token(&file, "alice", "mcp");
        let bob = make_token(&file, "bob", "mcp");
        let http = HttpServer::start(
            skills.path(),
            &[
                "--tokens",
                file.to_str().unwrap(),
                "--max-requests-per-token",
                "2",
            ],
        )
        .await;
        let url = &http.url;
        let as_alice = format!("Bearer {alice}");

        // Alice holds two requests open (bodies that do not come): her third is 429.
        let held = vec![
            slow_post(url, Some(&alice)).await,
            slow_post(url, Some(&alice)).await,
        ];
        let start = std::time::Instant::now();
        loop {
            let r = post(url, &[("authorization", &as_alice)], INITIALIZE.into()).await;
            if r.status() == 429 {
                assert!(r.headers().contains_key("retry-after"));
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "a third request of the token was answered {}",
                r.status()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Bob is not held up by Alice.
        let r = post(
            url,
            &[("authorization", &format!("Bearer {bob}"))],
            INITIALIZE.into(),
        )
        .await;
        assert_eq!(r.status(), 200);
        // Her requests' end gives her places back.
        drop(held);
        let start = std::time::Instant::now();
        while post(url, &[("authorization", &as_alice)], INITIALIZE.into())
            .await
            .status()
            != 200
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "her places never came back"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");

        // One address may hold --max-connections-per-address connections; the next is 503.
        let http = HttpServer::start(skills.path(), &["--max-connections-per-address", "3"]).await;
        let addr = http
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string();
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
        }
        let mut fourth = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let answer = answer_of(&mut fourth)
            .await
            .expect("a connection past the address's cap is answered");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
        drop(held);
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_listen_is_an_event_stream_ended_by_the_transport() {
    use rmcp::model::SubscriptionFilter;
    bounded(async {
        let skills = skills_copy();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let alice = make_token(&file, "alice", "mcp");
        let http = HttpServer::start(
            skills.path(),
            &[
                "--tokens",
                file.to_str().unwrap(),
                "--max-stream-duration",
                "1s",
            ],
        )
        .await;
        let client = stateless(&http.url, &alice).await;
        let mut sub = client
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await
            .expect("subscriptions/listen");
        // A POST that lasts, like a GET's stream: ended after --max-stream-duration, not held
        // until the connection's request timeout.
        let mut ended = false;
        for _ in 0..8 {
            match tokio::time::timeout(Duration::from_secs(20), sub.next()).await {
                Ok(Ok(Some(_))) => continue,
                Ok(_) => {
                    ended = true;
                    break;
                }
                Err(_) => break,
            }
        }
        assert!(ended, "the listen's stream outlived --max-stream-duration");
        drop(sub);
        let _ = client.cancel().await;
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}
