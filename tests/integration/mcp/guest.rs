//! Guest tools through `skillcat mcp` with a real MCP client (rmcp's): the fixture skill of the
//! agent-loop example, and every hostile guest with the same exact outcome as through the
//! runtime, the server unharmed and no child left behind.
//!
//! Origin: step 13 (issue 18: tier-2 guest code, confined and bounded).

#![cfg(target_os = "linux")]

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value as Json, json};
use tokio::io::AsyncReadExt;
use tokio::process::Child;

use crate::support::guest::{self, Answer};

/// A running `skillcat mcp SOURCE` with a connected client.
struct Server {
    client: RunningService<RoleClient, ()>,
    child: Child,
    _tmp: tempfile::TempDir,
}

async fn serve(source: &str) -> Server {
    let (mut child, tmp) =
        crate::support::spawn_mcp(&[source, "--config", "fixtures/guest/skillcat.toml"]);
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
    Server {
        client,
        child,
        _tmp: tmp,
    }
}

impl Server {
    /// A tool call: the outcome object (for a returned one, its result only when `result`),
    /// or the error's `_meta` code and message.
    async fn call(&self, tool: &str, args: Json) -> Answer {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Json::Object(o) = args {
            params = params.with_arguments(o);
        }
        let r = self.client.call_tool(params).await.expect("a tool result");
        let r = serde_json::to_value(r).unwrap();
        let text = r["content"][0]["text"].as_str().expect("text content");
        if r["isError"] == json!(true) {
            let meta = &r["_meta"];
            let code = meta["code"].as_str().unwrap().to_string();
            assert_eq!(
                text,
                format!("Error ({code}): {}", meta["message"].as_str().unwrap())
            );
            return Err((code, meta["message"].as_str().unwrap().to_string()));
        }
        Ok(serde_json::from_str(text).expect("an outcome object"))
    }

    async fn close(mut self) -> String {
        self.client.cancel().await.unwrap();
        let status = self.child.wait().await.unwrap();
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut stderr).await.unwrap();
        }
        assert!(status.success(), "{status}: {stderr}");
        stderr
    }
}

async fn bounded(test: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(120), test)
        .await
        .expect("the test did not finish in time (a hang?)");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fixture_skill_works_through_an_mcp_client() {
    bounded(async {
        let s = serve("fixtures/runtime/skills").await;
        let tools = s.client.list_all_tools().await.unwrap();
        let score = tools
            .iter()
            .find(|t| t.name == "score_lead")
            .expect("score_lead");
        let quote = tools
            .iter()
            .find(|t| t.name == "quote_discount")
            .expect("quote_discount");
        for t in [score, quote] {
            let meta = &t.meta.as_ref().expect("_meta").0;
            assert_eq!(meta["skill"], json!("lead-scoring"));
            assert_eq!(meta["kind"], json!("guest"));
            assert_eq!(t.annotations.as_ref().unwrap().open_world_hint, Some(false));
            assert_eq!(t.input_schema["additionalProperties"], json!(false));
            assert_eq!(
                t.input_schema["properties"]["timeout_seconds"]["maximum"],
                json!(60)
            );
        }
        let out = s
            .call("score_lead", json!({"company": "Initech", "employees": 80}))
            .await
            .unwrap();
        assert_eq!(out["ok"], json!(true));
        assert_eq!(
            out["result"],
            json!({"company": "Initech", "score": 20, "reasons": ["small company"]})
        );
        assert_eq!(out["logs"], json!(["scored Initech"]));
        let out = s
            .call("quote_discount", json!({"seats": 1000}))
            .await
            .unwrap();
        assert_eq!(out["result"], json!({"seats": 1000, "percent": 20}));
        let (code, message) = s
            .call("quote_discount", json!({"seats": 3, "coupon": "FREE"}))
            .await
            .unwrap_err();
        assert_eq!(code, "E_SKILL_GUEST_INVALID_ARGS");
        assert!(message.ends_with("unknown argument 'coupon'"), "{message}");
        let stderr = s.close().await;
        assert!(stderr.contains("quote_discount"), "{stderr}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_hostile_guest_ends_with_its_outcome_through_mcp() {
    bounded(async {
        let s = serve("fixtures/guest/skills").await;
        let server = s.child.id().unwrap();
        let tools = s.client.list_all_tools().await.unwrap();
        // `hang` is a host function only the runtime test registers.
        assert!(!tools.iter().any(|t| t.name == "never_answers"));
        assert!(tools.iter().any(|t| t.name == "spin"));
        // The default host call limit is 10 s: this file leaves never_answers to tests/guest.rs.
        for (tool, args, want) in guest::hostile_cases(false) {
            let started = std::time::Instant::now();
            let mut got = s.call(tool, args.clone()).await;
            if let (Ok(o), Ok(w)) = (&mut got, &want)
                && o["ok"] == json!(true)
                && w.get("ok").is_none()
            {
                *o = o["result"].clone();
            }
            assert_eq!(got, want, "{tool} {args}");
            assert!(started.elapsed() < Duration::from_secs(5), "{tool}");
            let ok = s.call("ok", json!({"n": 4})).await.unwrap();
            assert_eq!(ok["result"], json!({"doubled": 8}), "after {tool}");
            assert_eq!(
                guest::children_below(server),
                Vec::<String>::new(),
                "{tool}"
            );
        }
        guest::check_log_flood(&s.call("log_flood", json!({})).await.unwrap());
        let polluted = s.call("pollute", json!({"step": "pollute"})).await;
        let clean = s.call("pollute", json!({"step": "look"})).await;
        guest::check_pollution(polluted, clean);
        assert_eq!(guest::children_below(server), Vec::<String>::new());
        let stderr = s.close().await;
        assert!(
            stderr.contains("it needs host function 'hang', which this host does not provide"),
            "{stderr}"
        );
    })
    .await;
}

#[test]
fn skillcat_tools_lists_guest_tools_and_run_calls_them() {
    use crate::support::bin::Skillcat;
    let listed = Skillcat::new(&["tools", "fixtures/runtime/skills", "lead-scoring"])
        .env_remove("SKILLCAT_CONFIG")
        .run();
    listed.code(0);
    assert_eq!(
        listed.out(),
        "lead-scoring offers no script tools\n\
         score_lead  Score a sales lead from 0 to 100 with the reasons for the score (guest tool, JavaScript, confined)\n\
         quote_discount  The volume discount (percent) for a number of seats, from the skill's discount table (guest tool, JavaScript, confined)\n"
    );
    let json = Skillcat::new(&[
        "tools",
        "fixtures/runtime/skills",
        "lead-scoring",
        "--format",
        "json",
    ])
    .env_remove("SKILLCAT_CONFIG")
    .run();
    json.code(0);
    let doc = json.json();
    assert_eq!(doc["guest_tools"][1]["name"], json!("quote_discount"));
    assert_eq!(doc["guest_tools"][1]["trusted"], json!(false));
    assert_eq!(
        doc["guest_tools"][1]["parameters"]["required"],
        json!(["seats"])
    );

    let ran = Skillcat::new(&[
        "run",
        "fixtures/runtime/skills",
        "lead-scoring",
        "quote_discount",
        "--json",
        r#"{"seats": 60}"#,
    ])
    .env_remove("SKILLCAT_CONFIG")
    .run();
    ran.code(0);
    let outcome: Json = serde_json::from_str(ran.out().trim()).unwrap();
    assert_eq!(outcome["result"], json!({"seats": 60, "percent": 5}));

    let spun = Skillcat::new(&[
        "run",
        "fixtures/guest/skills",
        "hostile",
        "spin",
        "--json",
        r#"{"timeout_seconds": 1}"#,
    ])
    .env_remove("SKILLCAT_CONFIG")
    .run();
    spun.code(1).says(&[
        "E_SANDBOX_FAILED: Evaluation timed out after 1 seconds (kind: timed-out; guest tool 'spin')",
    ]);
    let withheld = Skillcat::new(&["run", "fixtures/guest/skills", "hostile", "never_answers"])
        .env_remove("SKILLCAT_CONFIG")
        .run();
    withheld
        .code(1)
        .says(&["it needs host function 'hang', which this host does not provide"]);
}
