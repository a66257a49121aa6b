//! `skillcat mcp --http`: the real binary over Streamable HTTP, driven by rmcp's client and by
//! the Python SDK's (PyPI `mcp`, in the venv `scripts/test` makes), and by hand-made requests
//! for what a client would not send (no token, a foreign Origin, too large a body).
//!
//! Every server listens on 127.0.0.1 (port 0, read from its stderr) with a private TMPDIR, so
//! its workspaces can be counted; every test is bounded by a timeout.
//!
//! Origin: step 21 (issue 31: the MCP server over Streamable HTTP).

#![cfg(target_os = "linux")]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ReadResourceDirectoryRequestParams};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value as Json, json};
use tokio::io::AsyncBufReadExt;
use tokio::process::Child;

const LIMIT: Duration = Duration::from_secs(120);

pub(crate) async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(LIMIT, test)
        .await
        .expect("the test did not finish in time (a hang?)");
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of `fixtures/mcp/skills` the test may change (modes kept: scripts stay executable).
pub(crate) fn skills_copy() -> tempfile::TempDir {
    let dir = crate::support::sandbox_tempdir("skillcat-mcp-skills-");
    copy_dir(&manifest().join("fixtures/mcp/skills"), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The workspaces under a TMPDIR (also the server's `XDG_RUNTIME_DIR`, where they go).
pub(crate) fn workspaces_in(tmp: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(tmp.join("skillcat-ws")) {
        Ok(entries) => entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("ws-"))
            .map(|e| e.path())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Waits (up to 10 s) until `f` holds.
pub(crate) async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A running `skillcat mcp SKILLS --config fixtures/mcp/skillcat.toml --http 127.0.0.1:0 …`.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) url: String,
    log: Arc<Mutex<String>>,
}

impl HttpServer {
    pub(crate) async fn start(skills: &Path, extra: &[&str]) -> HttpServer {
        let tmp = tempfile::Builder::new()
            .prefix("skillcat-mcp-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(
            tmp.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        Self::start_in(skills, tmp, extra).await
    }

    /// With the TMPDIR (and so the workspaces) of a server before it.
    pub(crate) async fn start_in(
        skills: &Path,
        tmp: tempfile::TempDir,
        extra: &[&str],
    ) -> HttpServer {
        let dir = tmp.path().to_path_buf();
        Self::start_with_tmpdir(skills, tmp, &dir, extra).await
    }

    /// With another configuration file than `fixtures/mcp/skillcat.toml`.
    pub(crate) async fn start_with_config(
        skills: &Path,
        config: &Path,
        extra: &[&str],
    ) -> HttpServer {
        let tmp = tempfile::Builder::new()
            .prefix("skillcat-mcp-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(
            tmp.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let dir = tmp.path().to_path_buf();
        Self::spawn(skills, config, tmp, &dir, extra).await
    }

    /// With `tmpdir` as its TMPDIR (a folder another server uses too); `tmp` is only kept.
    pub(crate) async fn start_with_tmpdir(
        skills: &Path,
        tmp: tempfile::TempDir,
        tmpdir: &Path,
        extra: &[&str],
    ) -> HttpServer {
        let config = manifest().join("fixtures/mcp/skillcat.toml");
        Self::spawn(skills, &config, tmp, tmpdir, extra).await
    }

    async fn spawn(
        skills: &Path,
        config: &Path,
        tmp: tempfile::TempDir,
        tmpdir: &Path,
        extra: &[&str],
    ) -> HttpServer {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skillcat"));
        cmd.arg("mcp")
            .arg(skills)
            .arg("--config")
            .arg(config)
            .args(["--http", "127.0.0.1:0"])
            .args(extra)
            .current_dir(manifest())
            .env_remove("SKILLCAT_CONFIG")
            .env("TMPDIR", tmpdir)
            .env("XDG_RUNTIME_DIR", tmpdir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let kept = log.clone();
        tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find(" at http")
                    && let Some(tx) = tx.take()
                {
                    let url = line[at + 4..].split([':', ' ']).collect::<Vec<_>>();
                    // "http(s)" "//127.0.0.1" "PORT/mcp…"
                    let port = url[2].split('/').next().unwrap().to_string();
                    let _ = tx.send(format!("{}://127.0.0.1:{port}/mcp", url[0]));
                }
                let mut log = kept.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = match tokio::time::timeout(Duration::from_secs(60), rx).await {
            Ok(Ok(url)) => url,
            _ => {
                let status = child.try_wait().unwrap();
                panic!(
                    "the server did not start ({status:?}): {}",
                    log.lock().unwrap()
                );
            }
        };
        HttpServer {
            child,
            tmp,
            url,
            log,
        }
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub(crate) fn workspaces(&self) -> Vec<PathBuf> {
        workspaces_in(self.tmp.path())
    }

    fn signal(&self, sig: i32) {
        let pid = self.child.id().expect("running") as i32;
        // SAFETY: kill has no memory preconditions; the pid is our own child's.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    }

    /// SIGTERM, and the exit status.
    pub(crate) async fn terminate(
        mut self,
    ) -> (std::process::ExitStatus, String, tempfile::TempDir) {
        self.signal(libc::SIGTERM);
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("the server did not stop on SIGTERM")
            .unwrap();
        // The stderr reader has the last lines once the pipe closes.
        tokio::time::sleep(Duration::from_millis(100)).await;
        (status, self.log(), self.tmp)
    }
}

/// What a client session heard of the server's list changes.
#[derive(Clone, Default)]
pub(crate) struct Heard(Arc<Mutex<Vec<&'static str>>>);

impl Heard {
    fn got(&self) -> Vec<&'static str> {
        self.0.lock().unwrap().clone()
    }
}

impl ClientHandler for Heard {
    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.0.lock().unwrap().push("resources");
    }
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.0.lock().unwrap().push("tools");
    }
    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.0.lock().unwrap().push("prompts");
    }
}

pub(crate) async fn connect_with<H: ClientHandler>(
    url: &str,
    token: Option<&str>,
    handler: H,
) -> RunningService<RoleClient, H> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(t) = token {
        config = config.auth_header(t.to_string());
    }
    handler
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP initialisation over HTTP")
}

pub(crate) async fn connect(url: &str) -> RunningService<RoleClient, ()> {
    connect_with(url, None, ()).await
}

pub(crate) async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Json,
) -> Json {
    let mut params = CallToolRequestParams::new(tool.to_string());
    if let Json::Object(o) = args {
        params = params.with_arguments(o);
    }
    let result = client.call_tool(params).await.expect("a tool result");
    serde_json::to_value(result).unwrap()
}

pub(crate) fn text_of(result: &Json) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"))
}

pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// A hand-made POST to the endpoint.
pub(crate) async fn post(url: &str, headers: &[(&str, &str)], body: String) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.body(body).send().await.unwrap()
}

/// `skillcat token create … --can RIGHTS`: the token.
pub(crate) fn make_token(file: &Path, name: &str, can: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillcat"))
        .args(["token", "create", "--tokens"])
        .arg(file)
        .args(["--name", name, "--scope", "*", "--can", can])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn http_gives_the_answers_stdio_gives() {
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &[]).await;
        let over_http = connect(&http.url).await;
        let (mut child, _tmp) = crate::support::spawn_mcp(&[
            skills.path().to_str().unwrap(),
            "--config",
            "fixtures/mcp/skillcat.toml",
            "--no-watch",
        ]);
        let over_stdio =
            ().serve((child.stdout.take().unwrap(), child.stdin.take().unwrap()))
                .await
                .unwrap();

        let both = [&over_http, &over_stdio];
        let mut answers = Vec::new();
        for c in both {
            let resources = serde_json::to_value(c.list_all_resources().await.unwrap()).unwrap();
            let tools = serde_json::to_value(c.list_all_tools().await.unwrap()).unwrap();
            let skills = serde_json::to_value(c.list_all_skills().await.unwrap()).unwrap();
            let read = serde_json::to_value(
                c.read_resource(rmcp::model::ReadResourceRequestParams::new(
                    "skill://echo/SKILL.md",
                ))
                .await
                .unwrap(),
            )
            .unwrap();
            let dir = serde_json::to_value(
                c.read_resource_directory(ReadResourceDirectoryRequestParams::new("skill://echo"))
                    .await
                    .unwrap(),
            )
            .unwrap();
            let prompt = serde_json::to_value(
                c.get_prompt(rmcp::model::GetPromptRequestParams::new("available_skills"))
                    .await
                    .unwrap(),
            )
            .unwrap();
            let mut greet = call(c, "run_echo_greet", json!({"who": "Ada"})).await;
            greet["_meta"]["durationMs"] = Json::Null;
            let caps = serde_json::to_value(&c.peer_info().unwrap().capabilities).unwrap();
            answers.push(json!([
                resources, tools, skills, read, dir, prompt, greet, caps
            ]));
        }
        assert_eq!(answers[0], answers[1], "HTTP and stdio answer alike");
        assert_eq!(text_of(&answers[0][6]), "hello Ada\n", "{}", answers[0][6]);
        let dir: Vec<&str> = answers[0][4]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            dir,
            [
                "skill://echo/SKILL.md",
                "skill://echo/assets",
                "skill://echo/references",
                "skill://echo/scripts"
            ]
        );
        over_http.cancel().await.unwrap();
        over_stdio.cancel().await.unwrap();
        let _ = child.wait().await;
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_client_works_over_streamable_http() {
    let Some(python) = crate::support::python_mcp() else {
        return;
    };
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &[]).await;
        let added = skills.path().join("added");
        let out = tokio::process::Command::new(&python)
            .arg(manifest().join("tests/py/mcp_http_client.py"))
            .arg(&http.url)
            .arg("")
            .arg(&added)
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}\nserver: {}", http.log());
        assert!(!stderr.contains("termination failed"), "{stderr}");
        let got: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got["server"], "skillcat");
        assert!(
            got["resources"]
                .as_array()
                .unwrap()
                .contains(&json!("skill://echo/scripts/greet.sh")),
            "{got}"
        );
        assert!(got["document"].as_str().unwrap().contains("name: echo"));
        assert_eq!(
            got["skills"],
            json!(["skill://echo/SKILL.md", "skill://sleepy/SKILL.md"])
        );
        assert_eq!(
            got["directory"],
            json!([
                "skill://echo/scripts/echo-args.sh",
                "skill://echo/scripts/fail.sh",
                "skill://echo/scripts/greet.sh"
            ])
        );
        assert_eq!(
            got["call"],
            json!({"isError": false, "text": "hello Python\n"})
        );
        assert!(
            got["notifications"]
                .as_array()
                .unwrap()
                .contains(&json!("resources/list_changed")),
            "{got}"
        );
        assert!(
            got["resources_after"]
                .as_array()
                .unwrap()
                .contains(&json!("skill://added/SKILL.md")),
            "{got}"
        );
        // The client ended its session (DELETE): its workspace went with it.
        eventually("the Python session's workspace is removed", || {
            http.workspaces().is_empty()
        })
        .await;
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_added_during_a_session_is_announced_and_offered() {
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &[]).await;
        let heard = Heard::default();
        let client = connect_with(&http.url, None, heard.clone()).await;
        // A call in flight keeps its tool set while the catalog changes under it.
        let napping = {
            let params = CallToolRequestParams::new("run_sleepy_nap");
            let peer = client.peer().clone();
            tokio::spawn(async move { peer.call_tool(params).await })
        };
        eventually("the nap's workspace exists", || !http.workspaces().is_empty()).await;
        crate::support::write_skill(
            &skills.path().join("hello"),
            "---\nname: hello\ndescription: Says hello. Added while a client was connected.\n---\n# Hello\n",
            &[("scripts/hi.sh", "#!/bin/sh\necho hi from the new skill\n", true)],
        );
        std::fs::remove_dir_all(skills.path().join("sleepy")).unwrap();
        eventually("resources/list_changed and tools/list_changed", || {
            let got = heard.got();
            got.contains(&"resources") && got.contains(&"tools") && got.contains(&"prompts")
        })
        .await;
        let tools: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(tools.contains(&"run_hello_hi".to_string()), "{tools:?}");
        assert!(!tools.contains(&"run_sleepy_nap".to_string()), "{tools:?}");
        let hi = call(&client, "run_hello_hi", json!({})).await;
        assert_eq!(text_of(&hi), "hi from the new skill\n", "{hi}");
        // The nap started under the old view ends as a run of it (killed at the 2 s
        // timeout), not as an unknown tool.
        let nap = serde_json::to_value(napping.await.unwrap().unwrap()).unwrap();
        assert_eq!(nap["_meta"]["code"], "E_SKILL_SCRIPT_TIMEOUT", "{nap}");
        let uris: Vec<String> = client
            .list_all_resources()
            .await
            .unwrap()
            .iter()
            .map(|r| r.uri.clone())
            .collect();
        assert!(uris.contains(&"skill://hello/SKILL.md".to_string()));
        assert!(!uris.iter().any(|u| u.starts_with("skill://sleepy/")));
        assert!(http.log().contains("catalog changed"), "{}", http.log());
        client.cancel().await.unwrap();
        let (status, log, tmp) = http.terminate().await;
        assert!(status.success(), "{log}");
        assert_eq!(workspaces_in(tmp.path()), Vec::<PathBuf>::new());
    })
    .await;
}

/// `skillcat registry ARGS…`, which must succeed.
fn registry(args: &[&std::ffi::OsStr]) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillcat"))
        .arg("registry")
        .args(args)
        .env_remove("SKILLCAT_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "registry {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_published_into_a_served_registry_is_announced() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.db");
        let first = dir.path().join("first");
        crate::support::write_skill(
            &first,
            "---\nname: first\ndescription: In the registry from the start.\nmetadata:\n  version: 1.0.0\n---\n# First\n",
            &[],
        );
        registry(&["init".as_ref(), db.as_os_str()]);
        registry(&["publish".as_ref(), db.as_os_str(), first.as_os_str()]);
        let http = HttpServer::start(&db, &[]).await;
        let heard = Heard::default();
        let client = connect_with(&http.url, None, heard.clone()).await;
        let uris = |list: Vec<rmcp::model::Resource>| -> Vec<String> {
            list.iter().map(|r| r.uri.clone()).collect()
        };
        let before = uris(client.list_all_resources().await.unwrap());
        assert!(before.contains(&"skill://first/SKILL.md".to_string()), "{before:?}");
        // Published by another process while the session is open: the registry file changes.
        let second = dir.path().join("second");
        crate::support::write_skill(
            &second,
            "---\nname: second\ndescription: Published while a client was connected.\nmetadata:\n  version: 1.0.0\n---\n# Second\n",
            &[],
        );
        registry(&["publish".as_ref(), db.as_os_str(), second.as_os_str()]);
        eventually("resources/list_changed after the publish", || {
            heard.got().contains(&"resources")
        })
        .await;
        let after = uris(client.list_all_resources().await.unwrap());
        assert!(after.contains(&"skill://second/SKILL.md".to_string()), "{after:?}");
        assert!(after.contains(&"skill://first/SKILL.md".to_string()), "{after:?}");
        client.cancel().await.unwrap();
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_sessions_have_their_own_workspaces_removed_when_each_ends() {
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &["--session-idle", "2s"]).await;
        let a = connect(&http.url).await;
        let b = connect(&http.url).await;
        assert_eq!(
            text_of(&call(&a, "run_echo_greet", json!({"who": "a"})).await),
            "hello a\n"
        );
        assert_eq!(http.workspaces().len(), 1);
        assert_eq!(
            text_of(&call(&b, "run_echo_greet", json!({"who": "b"})).await),
            "hello b\n"
        );
        let both = http.workspaces();
        assert_eq!(both.len(), 2, "one workspace per session: {both:?}");
        // A session's runs keep its own workspace.
        call(&a, "run_echo_greet", json!({"who": "a"})).await;
        assert_eq!(http.workspaces().len(), 2);
        // Ending a session (DELETE) removes its workspace and no other.
        a.cancel().await.unwrap();
        eventually("a's workspace is removed", || http.workspaces().len() == 1).await;
        let left = http.workspaces();
        assert!(both.contains(&left[0]));
        // An idle session is ended after --session-idle, its workspace with it.
        eventually("b's idle session ends", || http.workspaces().is_empty()).await;
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
        drop(b);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_origins_and_limits_are_enforced() {
    bounded(async {
        let skills = skills_copy();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        let mcp = make_token(&file, "agent", "mcp");
        let publisher = make_token(&file, "ci", "publish");
        let http = HttpServer::start(
            skills.path(),
            &[
                "--tokens",
                file.to_str().unwrap(),
                "--max-sessions",
                "2",
                "--max-body",
                "4096",
                "--max-calls-per-session",
                "1",
                "--max-stream-duration",
                "1s",
                "--allow-origin",
                "https://app.example.com",
            ],
        )
        .await;
        let url = &http.url;
        let bearer = format!("Bearer {mcp}");

        // No token, a wrong one, a revoked-looking one: 401 with the scheme to use.
        let r = post(url, &[], INITIALIZE.into()).await;
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer realm=\"skillcat\"");
        let wrong = format!("Bearer skc_{}", "0".repeat(64));
        assert_eq!(
            post(url, &[("authorization", &wrong)], INITIALIZE.into())
                .await
                .status(),
            401
        );
        // A token of the file without the mcp right: 403.
        let r = post(
            url,
            &[("authorization", &format!("Bearer {publisher}"))],
            INITIALIZE.into(),
        )
        .await;
        assert_eq!(r.status(), 403);
        assert!(r.text().await.unwrap().contains("mcp right"));

        // An Origin that is neither the server's nor allowed: 403, token or not.
        for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
            let r = post(
                url,
                &[("authorization", &bearer), ("origin", origin)],
                INITIALIZE.into(),
            )
            .await;
            assert_eq!(r.status(), 403, "{origin}");
        }
        let own = url.trim_end_matches("/mcp").to_string();
        for origin in [own.as_str(), "https://app.example.com"] {
            let r = post(
                url,
                &[("authorization", &bearer), ("origin", origin)],
                INITIALIZE.into(),
            )
            .await;
            assert_eq!(r.status(), 200, "{origin}");
            let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
            let end = reqwest::Client::new()
                .delete(url)
                .header("authorization", &bearer)
                .header("mcp-session-id", &id)
                .send()
                .await
                .unwrap();
            assert_eq!(end.status(), 204);
        }

        // A body over --max-body: 413.
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"pad":"{}"}}}}"#,
            "x".repeat(5000)
        );
        assert_eq!(
            post(url, &[("authorization", &bearer)], big).await.status(),
            413
        );

        // The rmcp client with the token; a second session; a third is refused (503).
        let a = connect_with(url, Some(&mcp), ()).await;
        let b = connect_with(url, Some(&mcp), ()).await;
        let r = post(url, &[("authorization", &bearer)], INITIALIZE.into()).await;
        assert_eq!(r.status(), 503);
        assert!(r.headers().contains_key("retry-after"));
        b.cancel().await.unwrap();
        let start = Instant::now();
        loop {
            let r = post(url, &[("authorization", &bearer)], INITIALIZE.into()).await;
            if r.status() == 200 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "a session's end frees a place"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // One call at a time per session (--max-calls-per-session 1): the second is refused.
        let napping = {
            let peer = a.peer().clone();
            tokio::spawn(async move {
                peer.call_tool(CallToolRequestParams::new("run_sleepy_nap"))
                    .await
            })
        };
        eventually("the nap runs", || !http.workspaces().is_empty()).await;
        let mut params = CallToolRequestParams::new("run_echo_greet");
        params = params.with_arguments(json!({"who": "x"}).as_object().unwrap().clone());
        let busy = a
            .call_tool(params)
            .await
            .expect_err("a second call at once");
        let rmcp::ServiceError::McpError(e) = busy else {
            panic!("{busy:?}");
        };
        assert_eq!(e.code.0, -32000);
        assert_eq!(e.data.unwrap()["code"], "E_SKILL_MCP_BUSY");
        napping.await.unwrap().unwrap();

        // An event stream ends after --max-stream-duration (1 s here).
        a.cancel().await.unwrap();
        let start = Instant::now();
        let r = loop {
            let r = post(url, &[("authorization", &bearer)], INITIALIZE.into()).await;
            if r.status() == 200 {
                break r;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "a session's end frees a place"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        drop(r);
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        post(
            url,
            &[
                ("authorization", &bearer),
                ("mcp-session-id", &id),
                ("mcp-protocol-version", "2025-06-18"),
            ],
            initialized.into(),
        )
        .await;
        let started = Instant::now();
        let stream = reqwest::Client::new()
            .get(url)
            .header("authorization", &bearer)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        let _ = tokio::time::timeout(Duration::from_secs(20), stream.bytes())
            .await
            .expect("the stream ends");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(10),
            "{took:?}"
        );

        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
        assert!(!log.contains(&mcp), "the log never shows a token");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn beyond_loopback_needs_tokens_unless_allowed() {
    bounded(async {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_skillcat"))
            .args([
                "mcp",
                "fixtures/mcp/skills",
                "--config",
                "fixtures/mcp/skillcat.toml",
            ])
            .args(["--http", "0.0.0.0:0"])
            .current_dir(manifest())
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--allow-anonymous") && stderr.contains("--tokens"),
            "{stderr}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_mid_call_drains_and_removes_every_workspace() {
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &["--drain-timeout", "5s"]).await;
        let a = connect(&http.url).await;
        let b = connect(&http.url).await;
        call(&b, "run_echo_greet", json!({"who": "b"})).await;
        let napping = {
            let peer = a.peer().clone();
            tokio::spawn(async move {
                peer.call_tool(CallToolRequestParams::new("run_sleepy_nap"))
                    .await
            })
        };
        eventually("both workspaces exist", || http.workspaces().len() == 2).await;
        let started = Instant::now();
        let (status, log, tmp) = http.terminate().await;
        assert!(status.success(), "{log}");
        // The nap (killed at its 2 s timeout) was let finish, within the drain.
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        let nap = napping.await.unwrap();
        if let Ok(r) = nap {
            let r = serde_json::to_value(r).unwrap();
            assert_eq!(r["_meta"]["code"], "E_SKILL_SCRIPT_TIMEOUT", "{r}");
        }
        assert_eq!(workspaces_in(tmp.path()), Vec::<PathBuf>::new(), "{log}");
        assert!(log.contains("every workspace removed"), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_call_leaves_no_workspace() {
    bounded(async {
        let skills = skills_copy();
        let mut http = HttpServer::start(skills.path(), &[]).await;
        let a = connect(&http.url).await;
        let _napping = {
            let peer = a.peer().clone();
            tokio::spawn(async move {
                peer.call_tool(CallToolRequestParams::new("run_sleepy_nap"))
                    .await
            })
        };
        eventually("the nap's workspace exists", || {
            http.workspaces().len() == 1
        })
        .await;
        // SIGKILL runs nothing in the server: its watcher, told by the kernel closing the
        // server's end of a pipe, removes the workspace.
        http.signal(libc::SIGKILL);
        http.child.wait().await.unwrap();
        eventually("the killed server's workspace is removed", || {
            http.workspaces().is_empty()
        })
        .await;
        // A server started over the same TMPDIR finds nothing to clean and serves.
        let tmp = http.tmp;
        let again = HttpServer::start_in(skills.path(), tmp, &[]).await;
        assert_eq!(again.workspaces(), Vec::<PathBuf>::new());
        let (status, log, _) = again.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_servers_watcher_leaves_a_live_servers_workspace_alone() {
    bounded(async {
        let skills = skills_copy();
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().to_path_buf();
        let live = HttpServer::start_in(skills.path(), tmp, &[]).await;
        let a = connect(&live.url).await;
        let _napping = {
            let peer = a.peer().clone();
            tokio::spawn(async move {
                peer.call_tool(CallToolRequestParams::new("run_sleepy_nap"))
                    .await
            })
        };
        eventually("the live server's workspace exists", || {
            live.workspaces().len() == 1
        })
        .await;
        let held = live.workspaces();
        // A second server over the same base, killed: its watcher cleans the base and must
        // take only what nobody holds.
        let mut doomed = HttpServer::start_with_tmpdir(
            skills.path(),
            tempfile::tempdir().unwrap(),
            &shared,
            &[],
        )
        .await;
        doomed.signal(libc::SIGKILL);
        doomed.child.wait().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(
            live.workspaces(),
            held,
            "a live server's workspace was taken"
        );
        let (status, log, _) = live.terminate().await;
        assert!(status.success(), "{log}");
        assert_eq!(workspaces_in(&shared), Vec::<PathBuf>::new());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_over_the_host_limits_is_left_out_of_skills_list() {
    bounded(async {
        let skills = skills_copy();
        let many = skills.path().join("many");
        let files: Vec<(String, String, bool)> = (0..512)
            .map(|i| (format!("references/r{i:03}.md"), format!("{i}\n"), false))
            .collect();
        let files: Vec<(&str, &str, bool)> =
            files.iter().map(|(p, t, e)| (p.as_str(), t.as_str(), *e)).collect();
        crate::support::write_skill(
            &many,
            "---\nname: many\ndescription: A skill of 513 files, over the host limit.\n---\n# Many\n",
            &files,
        );
        let http = HttpServer::start(skills.path(), &["--no-watch"]).await;
        let client = connect(&http.url).await;
        let listed: Vec<String> = client
            .list_all_skills()
            .await
            .unwrap()
            .iter()
            .map(|s| s.name().to_string())
            .collect();
        assert_eq!(listed, ["echo", "sleepy"]);
        let e = client
            .get_skill(rmcp::model::GetSkillRequestParams::new("skill://many/SKILL.md"))
            .await
            .expect_err("over the limit");
        assert!(format!("{e}").contains("512 files"), "{e}");
        // Still a resource.
        let uris = client.list_all_resources().await.unwrap();
        assert!(uris.iter().any(|r| r.uri == "skill://many/SKILL.md"));
        assert!(
            http.log().contains("not offered through skills/list: it has 513 files, over the host limit of 512"),
            "{}",
            http.log()
        );
        // No _meta key the server writes is in the reserved namespace.
        let all = serde_json::to_string(&client.list_all_skills().await.unwrap()).unwrap();
        assert!(!all.contains("io.modelcontextprotocol/"), "{all}");
        client.cancel().await.unwrap();
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_client_hears_changes_through_subscriptions_listen() {
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    bounded(async {
        let skills = skills_copy();
        let http = HttpServer::start(skills.path(), &[]).await;
        let client = ()
            .serve_with_lifecycle(
                StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(http.url.clone()),
                ),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("server/discover");
        // The same answers without a session: each request is a client session of its own.
        let greet = call(&client, "run_echo_greet", json!({"who": "z"})).await;
        assert_eq!(text_of(&greet), "hello z\n", "{greet}");
        let mut sub = client
            .listen(
                SubscriptionFilter::builder()
                    .resources_list_changed()
                    .build(),
            )
            .await
            .expect("subscriptions/listen");
        crate::support::write_skill(
            &skills.path().join("later"),
            "---\nname: later\ndescription: Added while a listener waited.\n---\n# Later\n",
            &[],
        );
        let got = tokio::time::timeout(Duration::from_secs(20), sub.next())
            .await
            .expect("a notification within seconds")
            .unwrap();
        assert!(
            matches!(
                got,
                Some(ServerNotification::ResourceListChangedNotification(_))
            ),
            "{got:?}"
        );
        drop(sub);
        let _ = client.cancel().await;
        eventually("the stateless requests' workspaces are removed", || {
            http.workspaces().is_empty()
        })
        .await;
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn https_with_the_certificate_and_key_serve_uses() {
    bounded(async {
        let skills = skills_copy();
        let certs = tempfile::tempdir().unwrap();
        crate::support::central::certificates(certs.path());
        let (cert, key) = (certs.path().join("cert.pem"), certs.path().join("key.pem"));
        let http = HttpServer::start(
            skills.path(),
            &[
                "--tls-cert",
                cert.to_str().unwrap(),
                "--tls-key",
                key.to_str().unwrap(),
            ],
        )
        .await;
        assert!(http.url.starts_with("https://127.0.0.1:"), "{}", http.url);
        let ca =
            reqwest::Certificate::from_pem(&std::fs::read(certs.path().join("ca.pem")).unwrap())
                .unwrap();
        let client = reqwest::Client::builder()
            .add_root_certificate(ca)
            .build()
            .unwrap();
        let r = client
            .post(&http.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers().contains_key("mcp-session-id"));
        assert!(r.text().await.unwrap().contains("\"serverInfo\""));
        // The server's own origin is its https one.
        let own = http.url.trim_end_matches("/mcp").to_string();
        let r = client
            .post(&http.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("origin", own.replace("https", "http"))
            .body(INITIALIZE)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        let (status, log, _) = http.terminate().await;
        assert!(status.success(), "{log}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stdio_server_follows_the_catalog_too() {
    bounded(async {
        let skills = skills_copy();
        let (mut child, _tmp) = crate::support::spawn_mcp(&[
            skills.path().to_str().unwrap(),
            "--config",
            "fixtures/mcp/skillcat.toml",
        ]);
        let heard = Heard::default();
        let client = heard
            .clone()
            .serve((child.stdout.take().unwrap(), child.stdin.take().unwrap()))
            .await
            .unwrap();
        // Past the check the watch makes as it starts: this change is one the watch sees.
        tokio::time::sleep(Duration::from_millis(700)).await;
        std::fs::write(
            skills.path().join("echo/references/notes.md"),
            "Changed while a client was connected.\n",
        )
        .unwrap();
        eventually("resources/list_changed over stdio", || {
            heard.got().contains(&"resources")
        })
        .await;
        // A file's new digest, not a new tool or prompt.
        assert!(!heard.got().contains(&"tools"), "{:?}", heard.got());
        let listed = client.list_all_resources().await.unwrap();
        let notes = listed
            .iter()
            .find(|r| r.uri == "skill://echo/references/notes.md")
            .unwrap();
        assert_eq!(
            notes.size,
            Some("Changed while a client was connected.\n".len() as u64)
        );
        client.cancel().await.unwrap();
        assert!(child.wait().await.unwrap().success());
    })
    .await;
}
