//! Typed script parameters in the sidecar `agents/skillcat.yaml`: the skill stays valid for
//! every validator, so `validate`, `pack` and `publish` take it without `--force`, while
//! `tools`, `run` and `audit` read the declarations from it.
//!
//! Origin: step 29 (issue 51, item 5: the documented `scripts:` frontmatter key made a skill
//! invalid, so typed parameters could not be published).

#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::bin::{Out, Skillcat};
use crate::support::write_skill;

/// A skill whose frontmatter holds only the specification's fields.
const DOC: &str = "---\nname: greeter\ndescription: Greets people by name.\nmetadata:\n  \
                   version: \"1.0.0\"\n---\n# greeter\n\nCall the greet tool.\n";

/// The declarations, beside the document.
const SIDECAR: &str = "timeout: 20\nscripts:\n  - name: greet\n    path: scripts/greet.sh\n    \
                       description: Greet someone\n    params:\n      - name: who\n        \
                       kind: positional\n        required: true\n        description: Whom to \
                       greet\n      - name: loud\n        type: boolean\n";

const GREET: &str = "#!/bin/sh\n# Greet someone.\necho \"hello $*\"\n";

/// `skillcat ARGS` in `dir`, with `dir` as `$HOME` (no user configuration).
#[track_caller]
fn sc(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env("HOME", dir)
        .env_remove("SKILLCAT_CONFIG")
        .env_remove("SKILLCAT_TOKEN")
        .run()
}

/// A folder of skills the sandbox uid can search, holding `greeter` with `sidecar`.
fn skills(sidecar: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("skillcat-sidecar-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    write_skill(
        &dir.path().join("greeter"),
        DOC,
        &[
            ("agents/skillcat.yaml", sidecar, false),
            ("scripts/greet.sh", GREET, true),
        ],
    );
    dir
}

#[test]
fn a_sidecar_keeps_the_skill_valid_and_its_tools_typed() {
    let d = skills(SIDECAR);
    let t = d.path();
    let o = sc(t, &["validate", "greeter"]);
    o.code(0);
    assert!(o.out().contains("Valid skill"), "{}", o.out());

    // `tools` offers the declared parameters, not the implicit `args` string.
    let o = sc(t, &["tools", ".", "greeter", "--format", "json"]);
    o.code(0);
    let text = o.out();
    assert!(text.contains("\"who\""), "{text}");
    assert!(text.contains("Whom to greet"), "{text}");
    assert!(!text.contains("\"args\""), "{text}");

    // `run` takes the typed arguments and lays them out as declared.
    let o = sc(
        t,
        &[
            "run",
            ".",
            "greeter",
            "greet",
            "--json",
            r#"{"who":"world","loud":true}"#,
        ],
    );
    o.code(0);
    // (What follows the script's own line is run's framing, not this test's business.)
    assert!(o.out().starts_with("hello world --loud\n"), "{}", o.out());

    // Packed and published as it is: no --force, and the sidecar is part of the archive.
    sc(t, &["pack", "greeter", "-o", "greeter.tar.gz"]).code(0);
    let listing = std::process::Command::new("tar")
        .args(["-tzf", "greeter.tar.gz"])
        .current_dir(t)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(listing.contains("agents/skillcat.yaml"), "{listing}");
    let o = sc(
        t,
        &["publish", "http://127.0.0.1:9/", "greeter", "--dry-run"],
    );
    o.code(0);
    assert!(
        o.out()
            .starts_with("Would publish greeter@1.0.0 from greeter"),
        "{}",
        o.out()
    );

    // The catalog's page lists the typed tool and the sidecar's capabilities.
    sc(t, &["export", "greeter", "public"]).code(0);
    let page = std::fs::read_to_string(t.join("public/skills/greeter/index.html")).unwrap();
    assert!(page.contains("run_greeter_greet"), "{page}");
    assert!(page.contains("Whom to greet"), "{page}");
    assert!(page.contains("<dt>Timeout</dt><dd>20 s"), "{page}");
}

#[test]
fn a_declared_script_that_is_missing_is_a_validate_fault() {
    let d = skills(&SIDECAR.replace("scripts/greet.sh", "scripts/nope.sh"));
    let o = sc(d.path(), &["validate", "greeter"]);
    o.code(1);
    let all = format!("{}{}", o.out(), o.stderr);
    assert!(all.contains("scripts/nope.sh"), "{all}");
    let o = sc(d.path(), &["validate", "greeter", "--format", "json"]);
    o.code(1);
    let text = o.out();
    assert!(text.contains("declared-script-missing"), "{text}");
    // pack refuses it as validate judges it.
    sc(d.path(), &["pack", "greeter", "-o", "x.tar.gz"]).code(1);
}

#[test]
fn a_sidecar_with_an_unknown_key_or_a_key_declared_twice_is_a_fault() {
    let d = skills(&format!("{SIDECAR}shell: yes\n"));
    let o = sc(d.path(), &["validate", "greeter", "--format", "json"]);
    o.code(1);
    assert!(o.out().contains("sidecar-invalid"), "{}", o.out());
    assert!(o.out().contains("shell"), "{}", o.out());

    // The same key in the frontmatter (here under metadata) and the sidecar: keep one.
    let d = skills(SIDECAR);
    let doc = DOC.replace("metadata:\n", "metadata:\n  skillcat.timeout: \"5\"\n");
    std::fs::write(d.path().join("greeter/SKILL.md"), doc).unwrap();
    let o = sc(d.path(), &["validate", "greeter", "--format", "json"]);
    o.code(1);
    let text = o.out();
    assert!(text.contains("declared-twice"), "{text}");
    assert!(text.contains("timeout"), "{text}");
}

#[test]
fn audit_hints_name_spellings_that_keep_a_skill_valid() {
    let d = skills("");
    let t = d.path();
    std::fs::write(t.join("greeter/agents/skillcat.yaml"), "timeout: 20\n").unwrap();
    let fetch = t.join("greeter/scripts/fetch.sh");
    std::fs::write(
        &fetch,
        "#!/bin/sh\n# Fetch.\ncurl -s https://example.com/x\n",
    )
    .unwrap();
    std::fs::set_permissions(&fetch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = sc(t, &["audit", "greeter", "--format", "json"]);
    let text = o.out();
    assert!(text.contains("undeclared-network"), "{text}");
    assert!(text.contains("skillcat.network"), "{text}");
    assert!(text.contains("agents/skillcat.yaml"), "{text}");
    assert!(!text.contains("declare `network: true`"), "{text}");

    // Declared in the sidecar, the network use is what the skill says it does.
    std::fs::write(
        t.join("greeter/agents/skillcat.yaml"),
        "timeout: 20\nnetwork: true\n",
    )
    .unwrap();
    let o = sc(t, &["audit", "greeter", "--format", "json"]);
    assert!(!o.out().contains("undeclared-network"), "{}", o.out());
}

/// `skillcat mcp` offers the sidecar's typed tool to a real MCP client and runs it.
#[tokio::test]
async fn mcp_offers_and_runs_the_sidecar_s_typed_tool() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;

    let d = skills(SIDECAR);
    let source = d.path().to_str().unwrap().to_string();
    let (mut child, _tmp) = crate::support::spawn_mcp_in(d.path(), Some(d.path()), &[&source]);
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let test = async {
        let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
        let tools = client.list_all_tools().await.unwrap();
        let greet = tools
            .iter()
            .find(|t| t.name == "run_greeter_greet")
            .expect("the declared tool is offered");
        let schema = serde_json::to_value(&greet.input_schema).unwrap();
        assert_eq!(schema["required"], serde_json::json!(["who"]), "{schema}");
        let args = serde_json::json!({"who": "world"});
        let params = CallToolRequestParams::new("run_greeter_greet")
            .with_arguments(args.as_object().unwrap().clone());
        let r = client.call_tool(params).await.unwrap();
        let r = serde_json::to_value(r).unwrap();
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("hello world"), "{r}");
        client.cancel().await.unwrap();
    };
    tokio::time::timeout(std::time::Duration::from_secs(120), test)
        .await
        .expect("the test did not finish in time");
    let _ = child.wait().await;
}
