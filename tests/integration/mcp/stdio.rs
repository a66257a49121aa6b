//! `skillcat mcp`: the real binary driven by a real MCP client (rmcp's), over stdio.
//!
//! Every test is bounded by a timeout, so a hang fails instead of blocking the run.
//!
//! Origin: step 7 (issue 8: the agent runtime and an MCP server).

#![cfg(target_os = "linux")]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use rmcp::model::{
    CallToolRequestParams, ErrorCode, GetPromptRequestParams, GetSkillRequestParams,
    ReadResourceRequestParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;

/// The most any one test may take.
const LIMIT: Duration = Duration::from_secs(90);

async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(LIMIT, test)
        .await
        .expect("the test did not finish in time (a hang?)");
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn skills_dir() -> PathBuf {
    manifest().join("fixtures/mcp/skills")
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", skillcat::digest::to_hex(Sha256::digest(bytes)))
}

/// A running `skillcat mcp` with a connected client; workspaces go under a private TMPDIR.
struct Server {
    client: RunningService<RoleClient, ()>,
    child: Child,
    tmp: tempfile::TempDir,
}

/// The child process, with its own TMPDIR (searchable by the sandbox uid).
fn spawn(args: &[&str]) -> (Child, tempfile::TempDir) {
    crate::support::spawn_mcp(args)
}

/// `skillcat mcp fixtures/mcp/skills --config fixtures/mcp/skillcat.toml`: a trusted source,
/// runs limited to 2 seconds.
async fn trusted() -> Server {
    start(&[
        "fixtures/mcp/skills",
        "--config",
        "fixtures/mcp/skillcat.toml",
    ])
    .await
}

async fn start(args: &[&str]) -> Server {
    let (mut child, tmp) = spawn(args);
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
    Server { client, child, tmp }
}

impl Server {
    /// The workspaces that exist now.
    fn workspaces(&self) -> Vec<PathBuf> {
        Self::workspaces_in(self.tmp.path())
    }

    /// The workspaces under a TMPDIR.
    fn workspaces_in(tmp: &Path) -> Vec<PathBuf> {
        // The server's XDG_RUNTIME_DIR is its TMPDIR (`support::spawn_mcp`).
        let base = tmp.join("skillcat-ws");
        match std::fs::read_dir(base) {
            Ok(entries) => entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("ws-"))
                .map(|e| e.path())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    async fn call(&self, tool: &str, args: Json) -> Json {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Json::Object(o) = args {
            params = params.with_arguments(o);
        }
        let result = self.client.call_tool(params).await.expect("a tool result");
        serde_json::to_value(result).unwrap()
    }

    /// Closes the client's end (stdin EOF) and waits for the server to exit; its stderr.
    async fn close(mut self) -> (std::process::ExitStatus, String, Vec<PathBuf>) {
        self.client.cancel().await.unwrap();
        let status = self.child.wait().await.unwrap();
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut stderr).await.unwrap();
        }
        let left = Self::workspaces_in(self.tmp.path());
        (status, stderr, left)
    }
}

fn text_of(result: &Json) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"))
}

fn mcp_error(e: ServiceError) -> rmcp::ErrorData {
    match e {
        ServiceError::McpError(e) => e,
        other => panic!("expected a protocol error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_are_every_file_with_its_size_and_digest() {
    bounded(async {
        let s = trusted().await;
        let resources = s.client.list_all_resources().await.unwrap();
        let mut uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        uris.sort_unstable();
        assert_eq!(
            uris,
            [
                "skill://echo/SKILL.md",
                "skill://echo/assets/dot.png",
                "skill://echo/references/notes.md",
                "skill://echo/scripts/echo-args.sh",
                "skill://echo/scripts/fail.sh",
                "skill://echo/scripts/greet.sh",
                "skill://sleepy/SKILL.md",
                "skill://sleepy/scripts/nap.sh",
            ]
        );
        for r in &resources {
            let rel = r.uri.strip_prefix("skill://").unwrap();
            let bytes = std::fs::read(skills_dir().join(rel)).unwrap();
            assert_eq!(r.size, Some(bytes.len() as u64), "{}", r.uri);
            let meta = &r.meta.as_ref().expect("_meta").0;
            assert_eq!(meta["digest"], json!(sha256(&bytes)), "{}", r.uri);
        }
        let doc = resources
            .iter()
            .find(|r| r.uri == "skill://echo/SKILL.md")
            .unwrap();
        assert_eq!(doc.mime_type.as_deref(), Some("text/markdown"));
        assert!(
            doc.description
                .as_deref()
                .unwrap()
                .starts_with("Greets people"),
            "{doc:?}"
        );
        let png = resources
            .iter()
            .find(|r| r.uri.ends_with("dot.png"))
            .unwrap();
        assert_eq!(png.mime_type.as_deref(), Some("image/png"));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reading_a_skill_md_gives_its_text_and_digest() {
    bounded(async {
        let s = trusted().await;
        let read = |uri: &str| {
            s.client
                .read_resource(ReadResourceRequestParams::new(uri.to_string()))
        };
        let on_disk = std::fs::read(skills_dir().join("echo/SKILL.md")).unwrap();
        let got = serde_json::to_value(read("skill://echo/SKILL.md").await.unwrap()).unwrap();
        let c = &got["contents"][0];
        assert_eq!(c["uri"], "skill://echo/SKILL.md");
        assert_eq!(c["mimeType"], "text/markdown");
        assert_eq!(
            c["text"],
            json!(String::from_utf8(on_disk.clone()).unwrap())
        );
        assert_eq!(c["_meta"]["digest"], json!(sha256(&on_disk)));
        assert_eq!(c["_meta"]["size"], json!(on_disk.len()));

        // A binary file travels as base64, byte for byte.
        let png = std::fs::read(skills_dir().join("echo/assets/dot.png")).unwrap();
        let got = serde_json::to_value(read("skill://echo/assets/dot.png").await.unwrap()).unwrap();
        let blob = got["contents"][0]["blob"].as_str().expect("a blob");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .unwrap(),
            png
        );
        assert!(got["contents"][0].get("text").is_none());

        // Nothing outside the skills, nothing that is not a file of one.
        for uri in [
            "skill://echo/missing.md",
            "skill://nope/SKILL.md",
            "skill://echo/../sleepy/SKILL.md",
            "skill://echo/%2E%2E/sleepy/SKILL.md",
            "file:///etc/passwd",
        ] {
            let e = mcp_error(read(uri).await.expect_err(uri));
            assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND, "{uri}: {e:?}");
        }
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn skills_list_and_get_follow_sep_2640() {
    bounded(async {
        let s = trusted().await;
        let info = s.client.peer_info().expect("server info");
        assert!(info.capabilities.supports_skills());
        let skills = s.client.list_all_skills().await.unwrap();
        let names: Vec<&str> = skills.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["echo", "sleepy"]);
        let echo = serde_json::to_value(&skills[0]).unwrap();
        assert_eq!(echo["uri"], "skill://echo/SKILL.md");
        assert_eq!(
            echo["frontmatter"]["description"],
            "Greets people and echoes arguments back. Use to check that script tools run."
        );
        let files = echo["resources"].as_array().unwrap();
        assert_eq!(files.len(), 6);
        for f in files {
            let uri = f["uri"].as_str().unwrap();
            let bytes =
                std::fs::read(skills_dir().join(uri.strip_prefix("skill://").unwrap())).unwrap();
            assert_eq!(f["digest"], json!(sha256(&bytes)), "{uri}");
            assert_eq!(f["size"], json!(bytes.len()), "{uri}");
        }
        // The skill digest is the one `skillcat digest` prints.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillcat"))
            .args(["digest", "fixtures/mcp/skills", "echo"])
            .current_dir(manifest())
            .output()
            .unwrap();
        let printed = String::from_utf8(out.stdout).unwrap();
        assert!(
            printed.starts_with(echo["_meta"]["digest"].as_str().unwrap()),
            "{printed} vs {}",
            echo["_meta"]
        );

        let got = s
            .client
            .get_skill(GetSkillRequestParams::new("skill://sleepy/SKILL.md"))
            .await
            .unwrap();
        assert_eq!(got.skill, skills[1]);
        let e = mcp_error(
            s.client
                .get_skill(GetSkillRequestParams::new("skill://nope/SKILL.md"))
                .await
                .unwrap_err(),
        );
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_prompt_is_the_available_skills_block() {
    bounded(async {
        let s = trusted().await;
        let prompts = s.client.list_all_prompts().await.unwrap();
        assert_eq!(prompts.len(), 1);
        assert_eq!(prompts[0].name, "available_skills");
        let got = s
            .client
            .get_prompt(GetPromptRequestParams::new("available_skills"))
            .await
            .unwrap();
        let got = serde_json::to_value(got).unwrap();
        let text = got["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.starts_with("<available_skills>"), "{text}");
        assert!(
            text.contains(
                "<name>\necho\n</name>\n<description>\nGreets people and echoes arguments back."
            ),
            "{text}"
        );
        assert!(
            text.contains("<location>\nskill://sleepy/SKILL.md\n</location>"),
            "{text}"
        );

        let mut args = serde_json::Map::new();
        args.insert("format".into(), "json".into());
        let got = s
            .client
            .get_prompt(GetPromptRequestParams::new("available_skills").with_arguments(args))
            .await
            .unwrap();
        let got = serde_json::to_value(got).unwrap();
        let block: Json =
            serde_json::from_str(got["messages"][0]["content"]["text"].as_str().unwrap()).unwrap();
        assert_eq!(block["skills"][0]["name"], "echo");
        assert_eq!(block["skills"][1]["location"], "skill://sleepy/SKILL.md");

        let e = mcp_error(
            s.client
                .get_prompt(GetPromptRequestParams::new("nope"))
                .await
                .unwrap_err(),
        );
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_are_the_script_tools_with_their_schemas() {
    bounded(async {
        let s = trusted().await;
        let tools = s.client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "run_echo_greet",
                "run_echo_echo_args",
                "run_echo_fail",
                "run_sleepy_nap"
            ]
        );
        let greet = serde_json::to_value(&tools[0]).unwrap();
        assert_eq!(greet["description"], "Greet someone by name.");
        assert_eq!(greet["inputSchema"]["required"], json!(["who"]));
        assert_eq!(
            greet["inputSchema"]["properties"]["loud"]["type"],
            "boolean"
        );
        assert_eq!(greet["_meta"]["skill"], "echo");
        let args = serde_json::to_value(&tools[1]).unwrap();
        assert_eq!(args["inputSchema"]["properties"]["args"]["type"], "string");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_tool_runs_confined_and_returns_its_output() {
    bounded(async {
        let s = trusted().await;
        let r = s
            .call("run_echo_greet", json!({"who": "world", "loud": true}))
            .await;
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(text_of(&r), "hello world --loud\n");
        assert_eq!(r["_meta"]["exitCode"], 0);
        assert_eq!(r["_meta"]["confined"], true, "{r}");

        let r = s
            .call("run_echo_echo_args", json!({"args": "a 'b c'"}))
            .await;
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(text_of(&r), "[a]\n[b c]\n");
        // The skill's workspace lives while the server does.
        assert_eq!(s.workspaces().len(), 1, "{:?}", s.workspaces());
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_are_tool_results_with_the_stable_code() {
    bounded(async {
        let s = trusted().await;
        let r = s.call("run_echo_fail", json!({})).await;
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(text_of(&r), "Error (exit 3):\nabout to fail\n");
        assert_eq!(r["_meta"]["code"], "E_SKILL_SCRIPT_FAILED");

        let r = s.call("run_echo_greet", json!({"who": 1})).await;
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["_meta"]["code"], "E_SKILL_SCRIPT_INVALID_ARGS");
        assert!(
            text_of(&r).starts_with("Error (E_SKILL_SCRIPT_INVALID_ARGS): "),
            "{r}"
        );
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_past_the_configured_timeout_is_killed() {
    bounded(async {
        let s = trusted().await;
        let started = Instant::now();
        // nap.sh sleeps 30 s; the configuration ends every run after 2 s.
        let r = s.call("run_sleepy_nap", json!({})).await;
        let took = started.elapsed();
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["_meta"]["code"], "E_SKILL_SCRIPT_TIMEOUT", "{r}");
        assert_eq!(text_of(&r), "Error (timed out):\ngoing to sleep\n");
        assert!(took < Duration::from_secs(25), "not killed: {took:?}");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_tool_is_a_protocol_error() {
    bounded(async {
        let s = trusted().await;
        let e = mcp_error(
            s.client
                .call_tool(CallToolRequestParams::new("run_echo_nope"))
                .await
                .unwrap_err(),
        );
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(
            e.data.as_ref().unwrap()["code"],
            "E_SKILL_SCRIPT_NOT_FOUND",
            "{e:?}"
        );
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn untrusted_skills_are_resources_without_tools() {
    bounded(async {
        // The configured catalog: its one source is not trusted.
        let s = start(&["--config", "fixtures/mcp/untrusted.toml"]).await;
        let resources = s.client.list_all_resources().await.unwrap();
        assert!(
            resources.iter().any(|r| r.uri == "skill://echo/SKILL.md"),
            "{resources:?}"
        );
        assert_eq!(s.client.list_all_tools().await.unwrap(), vec![]);
        let e = mcp_error(
            s.client
                .call_tool(
                    CallToolRequestParams::new("run_echo_greet")
                        .with_arguments(json!({"who": "x"}).as_object().unwrap().clone()),
                )
                .await
                .unwrap_err(),
        );
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let skills = s.client.list_all_skills().await.unwrap();
        assert_eq!(skills.len(), 2);
        assert_eq!(
            serde_json::to_value(&skills[0]).unwrap()["_meta"]["scriptsAllowed"],
            false
        );
        let (status, stderr, _) = s.close().await;
        assert!(status.success(), "{stderr}");
        assert!(stderr.contains("serving 0 tool(s)"), "{stderr}");
        // Why none, and how to change it: the untrusted source by name, the key, the file.
        assert!(
            stderr.contains("skills of untrusted sources offer no tools")
                && stderr.contains(": untrusted.")
                && stderr.contains("`trusted = true`")
                && stderr.contains("fixtures/mcp/untrusted.toml"),
            "{stderr}"
        );
    })
    .await;
}

/// The `mcpServers` block of docs/mcp.md, run as a client runs it: from `/`, with a home
/// directory holding the skills and the user's own configuration, and no other file named.
#[tokio::test(flavor = "multi_thread")]
async fn the_documented_client_configuration_works_as_written() {
    bounded(async {
        let docs = std::fs::read_to_string(manifest().join("docs/mcp.md")).unwrap();
        let block = docs
            .split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("a json block in docs/mcp.md");
        let config: Json = serde_json::from_str(block).unwrap();
        let server = &config["mcpServers"]["skills"];
        // The one thing that differs here: where the binary is installed.
        assert_eq!(server["command"], "/home/me/.cargo/bin/skillcat");
        let home = crate::support::sandbox_tempdir("skillcat-home-");
        let h = home.path().to_str().unwrap();
        let args: Vec<String> = server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().replace("/home/me", h))
            .collect();
        std::fs::create_dir_all(home.path().join(".agents")).unwrap();
        crate::support::copy_dir(
            &manifest().join("fixtures/mcp/skills"),
            &home.path().join(".agents/skills"),
        );
        // The user's own configuration: read only if the default location is the one
        // documented (without `extension_fields` the fixtures' scripts are not tools).
        std::fs::create_dir_all(home.path().join(".config/skillcat")).unwrap();
        std::fs::write(
            home.path().join(".config/skillcat/skillcat.toml"),
            "[sandbox]\ntimeout = 2\n\n[scripts]\nextension_fields = true\n",
        )
        .unwrap();
        // The block's args start with the command; the rest is what the client passes it.
        assert_eq!(args[0], "mcp", "{args:?}");
        let rest: Vec<&str> = args[1..].iter().map(String::as_str).collect();
        let (mut child, _tmp) =
            crate::support::spawn_mcp_in(Path::new("/"), Some(home.path()), &rest);
        let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
        let tools = client.list_all_tools().await.unwrap();
        assert!(
            tools.iter().any(|t| t.name == "run_echo_greet"),
            "{tools:?}"
        );
        let mut params = CallToolRequestParams::new("run_echo_greet");
        params = params.with_arguments(json!({"who": "docs"}).as_object().unwrap().clone());
        let result = serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap();
        assert!(text_of(&result).contains("docs"), "{result}");
        client.cancel().await.unwrap();
        assert!(child.wait().await.unwrap().success());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_eof_ends_the_server_and_removes_its_workspaces() {
    bounded(async {
        let s = trusted().await;
        let r = s.call("run_echo_greet", json!({"who": "x"})).await;
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(s.workspaces().len(), 1);
        let (status, stderr, left) = s.close().await;
        assert!(status.success(), "{status:?}: {stderr}");
        assert_eq!(left, Vec::<PathBuf>::new(), "workspaces left behind");
        assert!(
            stderr.contains("serving 4 tool(s)"),
            "logs go to stderr: {stderr}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_the_server_and_removes_its_workspaces() {
    bounded(async {
        let s = trusted().await;
        let r = s.call("run_echo_greet", json!({"who": "x"})).await;
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(s.workspaces().len(), 1);
        let pid = s.child.id().unwrap() as libc::pid_t;
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let Server {
            client,
            mut child,
            tmp,
        } = s;
        let status = child.wait().await.unwrap();
        drop(client);
        assert!(status.success(), "{status:?}");
        let left = Server::workspaces_in(tmp.path());
        assert_eq!(left, Vec::<PathBuf>::new(), "workspaces left behind");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdout_carries_only_protocol_messages() {
    bounded(async {
        // A hand-written session: every line the server writes must be a JSON-RPC message.
        let (mut child, _tmp) = spawn(&[
            "fixtures/mcp/skills",
            "--config",
            "fixtures/mcp/skillcat.toml",
        ]);
        let mut stdin = child.stdin.take().unwrap();
        let requests = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "run_echo_fail", "arguments": {}}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}),
        ];
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut answers = Vec::new();
        for req in &requests {
            stdin
                .write_all(format!("{req}\n").as_bytes())
                .await
                .unwrap();
            stdin.flush().await.unwrap();
            if req.get("id").is_some() {
                let line = lines.next_line().await.unwrap().expect("an answer");
                let msg: Json = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
                assert_eq!(msg["jsonrpc"], "2.0", "{line}");
                answers.push(msg);
            }
        }
        drop(stdin);
        // After EOF: nothing more but protocol, then a clean exit.
        while let Some(line) = lines.next_line().await.unwrap() {
            let msg: Json = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
            assert_eq!(msg["jsonrpc"], "2.0", "{line}");
        }
        assert!(child.wait().await.unwrap().success());
        assert_eq!(answers[1]["id"], 2);
        assert_eq!(answers[1]["result"]["isError"], true);
        assert_eq!(
            answers[1]["result"]["_meta"]["code"],
            "E_SKILL_SCRIPT_FAILED"
        );
        assert!(answers[2]["result"]["resources"].is_array());
    })
    .await;
}

/// The names of the tools a server offers.
async fn tool_names(s: &Server) -> Vec<String> {
    let tools = s.client.list_all_tools().await.unwrap();
    tools.iter().map(|t| t.name.to_string()).collect()
}

/// `[runtime] audit = "withhold"`: a skill with a high finding keeps its resources but offers
/// no tool, and the server says why; the other skills' tools are offered as before. Without
/// the key, the same skill's tools are offered.
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_withholds_the_tools_of_a_skill_with_a_high_finding() {
    bounded(async {
        let tmp = tempfile::tempdir().unwrap();
        let skills = tmp.path().join("skills");
        std::fs::create_dir(&skills).unwrap();
        crate::support::copy_dir(Path::new("fixtures/mcp/skills/echo"), &skills.join("echo"));
        crate::support::write_skill(
            &skills.join("leaky"),
            "---\nname: leaky\ndescription: Leaks a token.\n---\nRun it.\n",
            &[(
                "scripts/run.sh",
                "#!/bin/sh\n# Prints it.\nexport TOKEN=ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5\necho $TOKEN\n",
                true,
            )],
        );
        let base = "sources = []\n[scripts]\nextension_fields = true\n";
        let open = tmp.path().join("open.toml");
        std::fs::write(&open, base).unwrap();
        let withhold = tmp.path().join("withhold.toml");
        std::fs::write(&withhold, format!("{base}[runtime]\naudit = \"withhold\"\n")).unwrap();
        let dir = skills.to_str().unwrap();

        let s = start(&[dir, "--config", open.to_str().unwrap()]).await;
        let names = tool_names(&s).await;
        assert!(names.contains(&"run_leaky_run".to_string()), "{names:?}");
        s.close().await;

        let s = start(&[dir, "--config", withhold.to_str().unwrap()]).await;
        let names = tool_names(&s).await;
        assert!(!names.iter().any(|n| n.starts_with("run_leaky")), "{names:?}");
        assert!(names.contains(&"run_echo_greet".to_string()), "{names:?}");
        let resources = s.client.list_all_resources().await.unwrap();
        assert!(
            resources.iter().any(|r| r.uri == "skill://leaky/SKILL.md"),
            "its instructions are still served: {resources:?}"
        );
        let (status, stderr, _) = s.close().await;
        assert!(status.success(), "{stderr}");
        assert!(
            stderr.contains(
                "skill `leaky`: tools withheld by the audit: it found 1 high finding (scripts/run.sh:3:14 secret-token)"
            ),
            "{stderr}"
        );
    })
    .await;
}
