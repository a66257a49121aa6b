//! The agent runtime: activation by message and by name, tools present for a run only (after a
//! normal end, an error, a panic, a plain drop), workspaces disposed, untrusted skills without
//! tools, tier-3 resources, and every error code of the module-tool wrapper. Real catalogs over
//! real directories; script tools run confined with the `skillcat` binary as the helper.
//!
//! Origin: step 7 (issue 8: the agent runtime and an MCP server).

#![cfg(target_os = "linux")]

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::{Value as Json, json};
use skillcat::capability::{Grant, Trust};
use skillcat::catalog::{Catalog, CatalogSource};
use skillcat::config::{Config, Environment, SourceConfig};
use skillcat::runtime::{
    Content, ModuleError, ModuleRegistry, ModuleResponse, ModuleTool, RuntimeError, Session,
    ToolKind,
};
use skillcat::script::{
    AllowAll, Gate, GateDecision, GateError, GateKind, GateRequest, Provenance, Runner,
    RunnerConfig,
};

const PROFILE: &str = "#!/bin/sh\n# Count the rows and columns of CSV text.\nrows=$(printf '%s\\n' \"$1\" | wc -l)\ncols=$(printf '%s\\n' \"$1\" | head -n 1 | tr ',' '\\n' | wc -l)\necho \"rows=$rows columns=$cols\"\n";
const FAIL: &str = "#!/bin/sh\n# Always fails.\necho broken export\nexit 3\n";

const CSV_CLEANER: &str = "---\nname: csv-cleaner\ndescription: Profile and clean CSV exports; count rows and columns of CSV data.\nmetadata:\n  version: 1.2.0\nscripts:\n  - name: profile\n    path: scripts/profile.sh\n    interpreter: sh\n    description: Count the rows and columns of CSV text.\n    params:\n      - name: data\n        kind: positional\n        required: true\n        description: The CSV text.\n---\n# CSV cleaner\n\nRead references/rules.md first. CSV-CLEANER-BODY-MARKER\n";
const PDF_FORMS: &str = "---\nname: pdf-forms\ndescription: Fill PDF forms from a table of values.\n---\nPDF-FORMS-BODY-MARKER\n";
const ORDERS: &str = "---\nname: order-lookup\ndescription: Look up the shipping status of a customer order by its number.\nmetadata:\n  version: 0.3.0\n---\nUse lookup_order. ORDER-BODY-MARKER\n";

const DATA: &str = "a,b,c\n1,2,3\n4,5,6";

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: crate::support::sandbox_tempdir("skillcat-runtime-"),
        }
    }

    /// Writes `<tree>/<name>/SKILL.md` and files (path, text, executable).
    fn skill(&self, tree: &str, name: &str, doc: &str, files: &[(&str, &str, bool)]) {
        crate::support::write_skill(&self.dir.path().join(tree).join(name), doc, files);
    }

    /// The usual trusted tree: csv-cleaner (two scripts), pdf-forms, order-lookup.
    fn standard(&self) {
        self.skill(
            "trusted",
            "csv-cleaner",
            CSV_CLEANER,
            &[
                ("scripts/profile.sh", PROFILE, false),
                ("scripts/fail.sh", FAIL, true),
                ("references/rules.md", "# Rules\nTrim every cell.\n", false),
            ],
        );
        self.skill("trusted", "pdf-forms", PDF_FORMS, &[]);
        self.skill("trusted", "order-lookup", ORDERS, &[]);
    }

    fn tree(&self, tree: &str) -> String {
        self.dir.path().join(tree).display().to_string()
    }

    fn catalog(&self, trees: &[(&str, bool)]) -> Catalog {
        Catalog::new(
            trees
                .iter()
                .map(|(t, trusted)| {
                    CatalogSource::spec(self.tree(t))
                        .named(*t)
                        .trusted(*trusted)
                })
                .collect(),
        )
    }

    fn runner(&self) -> Arc<Runner> {
        let mut config = RunnerConfig::new(
            Grant {
                fs_read: vec!["/".into()],
                fs_write: vec![],
                network: skillcat::capability::Network::Off,
                timeout: Duration::from_secs(60),
                trust: Trust::Core,
            },
            skillcat::context::Env::from_process().user_dirs(),
        );
        config.helper = PathBuf::from(env!("CARGO_BIN_EXE_skillcat"));
        config.workspace_base = self.dir.path().join("ws");
        Arc::new(Runner::new(config, Arc::new(AllowAll)).unwrap())
    }

    fn session(&self, trees: &[(&str, bool)], modules: ModuleRegistry) -> Session {
        Session::builder(self.catalog(trees))
            .runner(self.runner())
            .environment(Environment {
                cwd: self.dir.path().to_path_buf(),
                home: None,
            })
            .modules(modules)
            .build()
    }
}

// ---------------------------------------------------------------------------------------------
// Host tools used by the tests.

#[derive(Clone)]
enum Behaviour {
    Answer(ModuleResponse),
    Fail,
    Panic,
    Sleep,
}

struct TestTool {
    name: String,
    behaviour: Behaviour,
    claims_trusted: bool,
    schema: Json,
    calls: AtomicUsize,
}

impl TestTool {
    fn new(name: &str, behaviour: Behaviour) -> TestTool {
        TestTool {
            name: name.to_string(),
            behaviour,
            claims_trusted: false,
            schema: json!({"type": "object", "properties": {"order": {"type": "string"}}}),
            calls: AtomicUsize::new(0),
        }
    }

    fn text(name: &str, text: &str) -> Arc<dyn ModuleTool> {
        Arc::new(TestTool::new(
            name,
            Behaviour::Answer(ModuleResponse::Text(text.into())),
        ))
    }
}

#[async_trait]
impl ModuleTool for TestTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "A test tool."
    }
    fn parameters(&self) -> Json {
        self.schema.clone()
    }
    fn trusted(&self) -> bool {
        self.claims_trusted
    }
    async fn call(&self, args: Json) -> Result<ModuleResponse, ModuleError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match &self.behaviour {
            Behaviour::Answer(ModuleResponse::Text(t)) if t == "echo" => {
                Ok(ModuleResponse::Text(args.to_string()))
            }
            Behaviour::Answer(r) => Ok(r.clone()),
            Behaviour::Fail => Err("database offline".into()),
            Behaviour::Panic => panic!("tool blew up"),
            Behaviour::Sleep => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(ModuleResponse::Text("late".into()))
            }
        }
    }
}

/// A tool that panics before it even makes its future (not written with `async_trait`).
struct EarlyPanic;

impl ModuleTool for EarlyPanic {
    fn name(&self) -> &str {
        "early_panic"
    }
    fn description(&self) -> &str {
        "Panics while starting."
    }
    fn parameters(&self) -> Json {
        json!({"type": "object"})
    }
    fn call<'a, 'b>(
        &'a self,
        _args: Json,
    ) -> Pin<Box<dyn Future<Output = Result<ModuleResponse, ModuleError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        panic!("panicked before the future")
    }
}

enum TestGate {
    Allow,
    Deny,
    Unavailable,
    Error,
    Panic,
}

#[async_trait]
impl Gate for TestGate {
    async fn check(&self, request: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        assert_eq!(request.skill, "host-tools");
        let GateKind::Module { provenance, .. } = request.kind else {
            panic!("a module tool's gate asked about {}", request.kind.as_str());
        };
        assert_eq!(provenance.skill, "host-tools");
        match self {
            TestGate::Allow => Ok(GateDecision::Allow),
            TestGate::Deny => Ok(GateDecision::Deny(format!("no {} today", request.tool))),
            TestGate::Unavailable => Ok(GateDecision::Unavailable("nobody to ask".into())),
            TestGate::Error => Err("gate backend down".into()),
            TestGate::Panic => panic!("gate bug"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Activation.

#[tokio::test]
async fn a_message_activates_the_matching_skill_for_one_run() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    assert!(session.tool_names().is_empty());

    let run = session
        .begin("please profile this csv export")
        .await
        .unwrap();
    let names: Vec<&str> = run.activations().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["csv-cleaner"]);

    let system = run.system_prompt("BASE PROMPT");
    assert!(
        system.starts_with("<skill name=\"csv-cleaner\">\n# CSV cleaner"),
        "{system}"
    );
    assert!(system.contains("CSV-CLEANER-BODY-MARKER"));
    assert!(system.ends_with("</skill>\n\nBASE PROMPT"), "{system}");
    assert!(!system.contains("PDF-FORMS-BODY-MARKER"));

    let tools: Vec<&str> = run.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["run_csv_cleaner_profile", "run_csv_cleaner_fail"]);
    assert_eq!(
        session.tool_names(),
        ["run_csv_cleaner_fail", "run_csv_cleaner_profile"]
    );
    assert_eq!(session.loaded_skills(), ["csv-cleaner"]);
    for t in run.tools() {
        assert_eq!(t.kind, ToolKind::Script);
        assert!(!t.trusted);
        assert_eq!(t.provenance.version.as_deref(), Some("1.2.0"));
    }

    let out = run
        .call("run_csv_cleaner_profile", &json!({"data": DATA}))
        .await
        .unwrap();
    assert_eq!(out.to_model_text(), "rows=3 columns=3\n");
    assert_eq!(out.kind, ToolKind::Script);
    assert!(!out.trusted);
    assert_eq!(out.provenance.skill, "csv-cleaner");
    assert_eq!(out.script.as_ref().map(|s| s.exit_code), Some(0));

    run.finish().await.unwrap();
    assert!(session.tool_names().is_empty());
    assert!(session.loaded_skills().is_empty());
}

#[tokio::test]
async fn a_message_that_matches_nothing_activates_nothing() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    let run = session.begin("zzz qqq").await.unwrap();
    assert!(run.activations().is_empty());
    assert_eq!(run.system_prompt("BASE"), "BASE");
    assert!(session.tool_names().is_empty());
}

#[tokio::test]
async fn a_skill_is_activated_by_name_with_dash_and_underscore_alike() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    let mut run = session.begin_with(&["csv_cleaner"]).await.unwrap();
    assert!(run.is_active("csv-cleaner"));
    assert!(run.is_active("csv_cleaner"));
    assert!(!run.is_active("pdf-forms"));

    // Activating it again changes nothing; another skill joins.
    run.activate("csv-cleaner").await.unwrap();
    let pdf = run.activate("pdf_forms").await.unwrap();
    assert_eq!(pdf.name, "pdf-forms");
    assert!(pdf.tools.is_empty());
    assert_eq!(run.activations().len(), 2);
    let system = run.system_prompt("");
    let csv_at = system.find("CSV-CLEANER-BODY-MARKER").unwrap();
    let pdf_at = system.find("PDF-FORMS-BODY-MARKER").unwrap();
    assert!(csv_at < pdf_at, "activation order: {system}");

    let e = run.activate("no-such-skill").await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_NOT_FOUND");
    drop(run);
    assert!(session.tool_names().is_empty());
    assert!(session.loaded_skills().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Tools present for the run only; workspaces disposed.

/// A run whose tool call fails and whose error the host propagates with `?`.
async fn failing_turn(session: &Session, ws: &mut Option<PathBuf>) -> Result<(), RuntimeError> {
    let run = session.begin_with(&["csv-cleaner"]).await?;
    assert!(
        session
            .tool_names()
            .contains(&"run_csv_cleaner_fail".to_string())
    );
    run.call("run_csv_cleaner_profile", &json!({"data": DATA}))
        .await?;
    *ws = run.workspace("csv-cleaner");
    run.call("run_csv_cleaner_fail", &Json::Null).await?;
    run.finish().await
}

#[tokio::test]
async fn tools_are_removed_and_the_workspace_disposed_after_a_run_that_failed() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    let mut ws = None;
    let e = failing_turn(&session, &mut ws).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_FAILED");
    assert_eq!(e.to_model_text(), "Error (exit 3):\nbroken export\n");
    let ws = ws.expect("the first call made a workspace");
    assert!(
        !ws.exists(),
        "workspace {} left behind after the failed run",
        ws.display()
    );
    assert!(session.tool_names().is_empty());
    assert!(session.loaded_skills().is_empty());
}

#[tokio::test]
async fn tools_are_removed_and_the_workspace_disposed_after_a_panic_inside_the_run() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    // The workspace and the tool set, as seen inside the run before it panicked.
    type Seen = Option<(PathBuf, Vec<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let turn = {
        let (session, seen) = (session.clone(), seen.clone());
        async move {
            let run = session.begin_with(&["csv-cleaner"]).await.unwrap();
            run.call("run_csv_cleaner_profile", &json!({"data": DATA}))
                .await
                .unwrap();
            let ws = run.workspace("csv-cleaner").unwrap();
            *seen.lock().unwrap() = Some((ws, session.tool_names()));
            panic!("the model client crashed mid-run");
        }
    };
    let outcome = AssertUnwindSafe(turn).catch_unwind().await;
    assert!(outcome.is_err(), "the turn panicked");
    let (ws, during) = seen.lock().unwrap().take().unwrap();
    assert_eq!(during, ["run_csv_cleaner_fail", "run_csv_cleaner_profile"]);
    assert!(!ws.exists(), "workspace {} left behind", ws.display());
    assert!(session.tool_names().is_empty());
    assert!(session.loaded_skills().is_empty());
}

#[tokio::test]
async fn dropping_a_run_removes_its_tools_and_disposes_the_workspace() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    let run = session.begin_with(&["csv-cleaner"]).await.unwrap();
    assert_eq!(run.workspace("csv-cleaner"), None, "made at the first run");
    run.call("run_csv_cleaner_profile", &json!({"data": DATA}))
        .await
        .unwrap();
    let ws = run.workspace("csv-cleaner").unwrap();
    assert!(ws.join("skill").join("SKILL.md").is_file());
    drop(run);
    assert!(!ws.exists(), "workspace {} left behind", ws.display());
    assert!(session.tool_names().is_empty());
}

#[tokio::test]
async fn finish_disposes_the_workspace() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    let run = session.begin_with(&["csv-cleaner"]).await.unwrap();
    run.call("run_csv_cleaner_profile", &json!({"data": DATA}))
        .await
        .unwrap();
    let ws = run.workspace("csv-cleaner").unwrap();
    run.finish().await.unwrap();
    assert!(!ws.exists());
}

#[tokio::test]
async fn a_skill_shared_by_two_runs_stays_loaded_until_the_last_one_ends() {
    let env = Env::new();
    env.standard();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    let a = session.begin_with(&["csv-cleaner"]).await.unwrap();
    let b = session
        .begin_with(&["csv-cleaner", "pdf-forms"])
        .await
        .unwrap();
    a.call("run_csv_cleaner_profile", &json!({"data": DATA}))
        .await
        .unwrap();
    let ws = a.workspace("csv-cleaner").unwrap();
    assert_eq!(b.workspace("csv-cleaner").as_ref(), Some(&ws), "one load");
    drop(a);
    assert!(ws.exists(), "still used by the other run");
    assert_eq!(session.loaded_skills(), ["csv-cleaner", "pdf-forms"]);
    let out = b
        .call("run_csv_cleaner_profile", &json!({"data": "x"}))
        .await
        .unwrap();
    assert_eq!(out.to_model_text(), "rows=1 columns=1\n");
    drop(b);
    assert!(!ws.exists());
    assert!(session.loaded_skills().is_empty());
    assert!(session.tool_names().is_empty());
}

#[tokio::test]
async fn a_run_calls_only_its_own_tools() {
    let env = Env::new();
    env.standard();
    let mut modules = ModuleRegistry::new();
    modules
        .register(
            "order-lookup",
            [TestTool::text("lookup_order", "order 42: shipped")],
        )
        .unwrap();
    let session = env.session(&[("trusted", true)], modules);
    let csv = session.begin_with(&["csv-cleaner"]).await.unwrap();
    let orders = session.begin_with(&["order-lookup"]).await.unwrap();
    let e = csv.call("lookup_order", &json!({})).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_TOOL_NOT_FOUND");
    let out = orders
        .call("lookup_order", &json!({"order": "42"}))
        .await
        .unwrap();
    assert_eq!(out.content, Content::Text("order 42: shipped".into()));
    assert_eq!(out.kind, ToolKind::Module);
    assert_eq!(
        out.provenance,
        Provenance {
            skill: "order-lookup".into(),
            version: Some("0.3.0".into()),
            source: "trusted".into(),
        }
    );
    drop(orders);
    assert_eq!(
        session.tool_names(),
        ["run_csv_cleaner_fail", "run_csv_cleaner_profile"]
    );
    let e = csv.call("run_nothing", &json!({})).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_TOOL_NOT_FOUND");
}

// ---------------------------------------------------------------------------------------------
// Trust.

#[tokio::test]
async fn an_untrusted_skill_brings_instructions_but_no_tools() {
    let env = Env::new();
    env.skill(
        "untrusted",
        "csv-cleaner",
        CSV_CLEANER,
        &[
            ("scripts/profile.sh", PROFILE, true),
            ("scripts/fail.sh", FAIL, true),
        ],
    );
    let mut modules = ModuleRegistry::new();
    modules
        .register("csv-cleaner", [TestTool::text("csv_stats", "stats")])
        .unwrap();

    let session = env.session(&[("untrusted", false)], modules.clone());
    let run = session.begin("profile this csv export").await.unwrap();
    let a = &run.activations()[0];
    assert_eq!(a.name, "csv-cleaner");
    assert!(a.tools.is_empty(), "{:?}", a.tools);
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("script tools withheld") && n.contains("not trusted")),
        "{:?}",
        a.notes
    );
    assert!(
        a.notes.iter().any(|n| n.contains("module tools withheld")),
        "{:?}",
        a.notes
    );
    assert!(run.system_prompt("").contains("CSV-CLEANER-BODY-MARKER"));
    assert!(session.tool_names().is_empty());
    let e = run
        .call("run_csv_cleaner_profile", &json!({"data": DATA}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "E_SKILL_TOOL_NOT_FOUND");
    drop(run);

    // A host may offer its own module tools to untrusted skills; scripts stay withheld.
    let session = Session::builder(env.catalog(&[("untrusted", false)]))
        .runner(env.runner())
        .modules(modules)
        .module_tools_for_untrusted(true)
        .build();
    let run = session.begin_with(&["csv-cleaner"]).await.unwrap();
    let tools: Vec<(&str, ToolKind)> = run.tools().map(|t| (t.name.as_str(), t.kind)).collect();
    assert_eq!(tools, [("csv_stats", ToolKind::Module)]);
}

// ---------------------------------------------------------------------------------------------
// Tier 3.

#[tokio::test]
async fn resources_inside_the_skill_are_read_and_escapes_refused() {
    let env = Env::new();
    env.standard();
    std::fs::write(env.dir.path().join("secret.txt"), "SECRET").unwrap();
    let session = env.session(&[("trusted", true)], ModuleRegistry::new());
    let run = session.begin_with(&["csv-cleaner"]).await.unwrap();

    for good in [
        "references/rules.md",
        "./references/../references/rules.md#trim",
    ] {
        let r = run.read_resource("csv-cleaner", good).await.unwrap();
        assert_eq!(r.path, "references/rules.md");
        assert_eq!(r.text(), Some("# Rules\nTrim every cell.\n"));
    }
    let r = run
        .read_resource("csv_cleaner", "scripts/profile.sh")
        .await
        .unwrap();
    assert_eq!(r.text(), Some(PROFILE));

    for (bad, reason) in [
        ("../pdf-forms/SKILL.md", "climbs out"),
        ("../../secret.txt", "climbs out"),
        ("references/../../x", "climbs out"),
        ("/etc/passwd", "absolute"),
        ("https://example.com/rules.md", "URL"),
        ("file:///etc/passwd", "URL"),
        ("references\\rules.md", "backslash"),
        ("", "empty"),
    ] {
        let e = run.read_resource("csv-cleaner", bad).await.unwrap_err();
        assert_eq!(e.code(), "E_SKILL_SOURCE_PATH_REJECTED", "{bad:?}");
        assert!(e.to_string().contains(reason), "{bad:?}: {e}");
        assert!(!e.to_string().contains("SECRET"));
    }
    let e = run
        .read_resource("csv-cleaner", "references/missing.md")
        .await
        .unwrap_err();
    assert_eq!(e.code(), "E_SKILL_RESOURCE_NOT_FOUND");

    // A run reads only the skills active in it; the session reads any catalog skill.
    let e = run
        .read_resource("pdf-forms", "SKILL.md")
        .await
        .unwrap_err();
    assert_eq!(e.code(), "E_SKILL_NOT_ACTIVE");
    let r = session
        .read_resource("pdf-forms", "SKILL.md")
        .await
        .unwrap();
    assert_eq!(r.text(), Some(PDF_FORMS));
    let e = session.read_resource("nope", "SKILL.md").await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_NOT_FOUND");
}

// ---------------------------------------------------------------------------------------------
// The module-tool wrapper: one row per outcome.

enum Expect {
    Content(Content),
    Code(&'static str),
}

#[tokio::test]
async fn module_tool_wrapper_outcomes_and_error_codes() {
    let provenance = Provenance {
        skill: "host-tools".into(),
        version: Some("2.0.1".into()),
        source: "test".into(),
    };
    let png = ModuleResponse::Media {
        mime: "image/png".into(),
        data: vec![0x89, b'P'],
    };
    let answer = Behaviour::Answer;
    let cases: Vec<(&str, Behaviour, TestGate, Json, Expect)> = vec![
        (
            "text",
            answer("fine".into()),
            TestGate::Allow,
            json!({}),
            Expect::Content(Content::Text("fine".into())),
        ),
        (
            "echo of the arguments",
            answer("echo".into()),
            TestGate::Allow,
            json!({"order": "42"}),
            Expect::Content(Content::Text(r#"{"order":"42"}"#.into())),
        ),
        (
            "null arguments are an empty object",
            answer("echo".into()),
            TestGate::Allow,
            Json::Null,
            Expect::Content(Content::Text("{}".into())),
        ),
        (
            "bytes",
            answer(ModuleResponse::Bytes(vec![0, 1, 2])),
            TestGate::Allow,
            json!({}),
            Expect::Content(Content::Bytes(vec![0, 1, 2])),
        ),
        (
            "media",
            answer(png),
            TestGate::Allow,
            json!({}),
            Expect::Content(Content::Media {
                mime: "image/png".into(),
                data: vec![0x89, b'P'],
            }),
        ),
        (
            "failed by error",
            Behaviour::Fail,
            TestGate::Allow,
            json!({}),
            Expect::Code("E_SKILL_TOOL_FAILED"),
        ),
        (
            "failed by panic",
            Behaviour::Panic,
            TestGate::Allow,
            json!({}),
            Expect::Code("E_SKILL_TOOL_FAILED"),
        ),
        (
            "bad response: a JSON value",
            answer(ModuleResponse::Other(json!({"rows": 3}))),
            TestGate::Allow,
            json!({}),
            Expect::Code("E_SKILL_TOOL_BAD_RESPONSE"),
        ),
        (
            "bad response: media without a type/subtype",
            answer(ModuleResponse::Media {
                mime: "png".into(),
                data: vec![1],
            }),
            TestGate::Allow,
            json!({}),
            Expect::Code("E_SKILL_TOOL_BAD_RESPONSE"),
        ),
        (
            "timeout",
            Behaviour::Sleep,
            TestGate::Allow,
            json!({}),
            Expect::Code("E_SKILL_TOOL_TIMEOUT"),
        ),
        (
            "arguments not an object",
            answer("fine".into()),
            TestGate::Allow,
            json!([1, 2]),
            Expect::Code("E_SKILL_TOOL_INVALID_ARGS"),
        ),
        (
            "gate denied",
            answer("fine".into()),
            TestGate::Deny,
            json!({}),
            Expect::Code("E_SKILL_TOOL_DENIED"),
        ),
        (
            "gate unavailable",
            answer("fine".into()),
            TestGate::Unavailable,
            json!({}),
            Expect::Code("E_SKILL_TOOL_GATE_UNAVAILABLE"),
        ),
        (
            "gate failed",
            answer("fine".into()),
            TestGate::Error,
            json!({}),
            Expect::Code("E_SKILL_TOOL_GATE_UNAVAILABLE"),
        ),
        (
            "gate panicked",
            answer("fine".into()),
            TestGate::Panic,
            json!({}),
            Expect::Code("E_SKILL_TOOL_GATE_UNAVAILABLE"),
        ),
    ];
    for (case, behaviour, gate, args, expect) in cases {
        let tool = Arc::new(TestTool {
            claims_trusted: true,
            ..TestTool::new("probe", behaviour)
        });
        let mut registry = ModuleRegistry::new();
        registry
            .register("host-tools", [tool.clone() as _])
            .unwrap();
        let wrapped = registry.wrap(&provenance, Arc::new(gate), Duration::from_millis(200));
        assert_eq!(wrapped.len(), 1);
        let w = &wrapped[0];
        assert_eq!(w.spec().name, "probe", "{case}");
        assert!(!w.spec().trusted, "{case}: the tool claims trust");
        assert_eq!(w.spec().provenance, provenance, "{case}");
        let gate_refuses = matches!(
            expect,
            Expect::Code(c) if c.contains("GATE") || c.contains("DENIED") || c.contains("ARGS")
        );
        match (w.call(&args).await, expect) {
            (Ok(out), Expect::Content(want)) => {
                assert_eq!(out.content, want, "{case}");
                assert!(!out.trusted, "{case}: trusted forced false");
                assert_eq!(out.provenance, provenance, "{case}: provenance");
                assert_eq!(out.kind, ToolKind::Module, "{case}");
                assert_eq!(out.tool, "probe", "{case}");
            }
            (Err(e), Expect::Code(code)) => {
                assert_eq!(e.code(), code, "{case}: {e}");
                assert!(
                    e.to_model_text().starts_with(&format!("Error ({code}): ")),
                    "{case}: {}",
                    e.to_model_text()
                );
            }
            (Ok(out), Expect::Code(code)) => panic!("{case}: expected {code}, got {out:?}"),
            (Err(e), Expect::Content(want)) => panic!("{case}: expected {want:?}, got {e}"),
        }
        let calls = tool.calls.load(Ordering::SeqCst);
        if gate_refuses {
            assert_eq!(
                calls, 0,
                "{case}: the tool ran although the call was refused"
            );
        } else {
            assert_eq!(calls, 1, "{case}");
        }
    }
}

#[tokio::test]
async fn module_tool_failures_say_what_happened() {
    let provenance = Provenance {
        skill: "host-tools".into(),
        version: None,
        source: "test".into(),
    };
    let mut registry = ModuleRegistry::new();
    registry
        .register(
            "host-tools",
            [
                Arc::new(TestTool::new("fails", Behaviour::Fail)) as Arc<dyn ModuleTool>,
                Arc::new(TestTool::new("panics", Behaviour::Panic)),
                Arc::new(EarlyPanic),
            ],
        )
        .unwrap();
    let wrapped = registry.wrap(
        &provenance,
        Arc::new(TestGate::Deny),
        Duration::from_secs(5),
    );
    let e = wrapped[0].call(&json!({})).await.unwrap_err();
    assert_eq!(e.to_string(), "call of 'fails' denied: no fails today");

    let wrapped = registry.wrap(&provenance, Arc::new(AllowAll), Duration::from_secs(5));
    let text: Vec<String> = futures_util::future::join_all(
        wrapped
            .iter()
            .map(|w| async { w.call(&json!({})).await.unwrap_err().to_model_text() }),
    )
    .await;
    assert_eq!(
        text,
        [
            "Error (E_SKILL_TOOL_FAILED): tool 'fails' failed: database offline",
            "Error (E_SKILL_TOOL_FAILED): tool 'panics' panicked: tool blew up",
            "Error (E_SKILL_TOOL_FAILED): tool 'early_panic' panicked: panicked before the future",
        ]
    );
}

#[tokio::test]
async fn module_tool_names_are_checked_before_registration() {
    let long = "x".repeat(65);
    let ok64 = "y".repeat(64);
    let mut base = ModuleRegistry::new();
    base.reserve("read_file").unwrap();
    base.register("other-skill", [TestTool::text("taken", "")])
        .unwrap();
    base.register("host-tools", [TestTool::text("mine", "")])
        .unwrap();

    let bad_schema = Arc::new(TestTool {
        schema: json!({"type": "string"}),
        ..TestTool::new("bad_schema", Behaviour::Fail)
    }) as Arc<dyn ModuleTool>;
    type Tools = Vec<Arc<dyn ModuleTool>>;
    let cases: Vec<(&str, Tools, Option<&str>)> = vec![
        (
            "provider-safe names",
            vec![TestTool::text("a-b_C9", ""), TestTool::text(&ok64, "")],
            None,
        ),
        (
            "empty name",
            vec![TestTool::text("", "")],
            Some("E_SKILL_TOOL_INVALID_NAME"),
        ),
        (
            "space",
            vec![TestTool::text("look up", "")],
            Some("E_SKILL_TOOL_INVALID_NAME"),
        ),
        (
            "dot",
            vec![TestTool::text("look.up", "")],
            Some("E_SKILL_TOOL_INVALID_NAME"),
        ),
        (
            "non-ASCII",
            vec![TestTool::text("lookup_ü", "")],
            Some("E_SKILL_TOOL_INVALID_NAME"),
        ),
        (
            "65 characters",
            vec![TestTool::text(&long, "")],
            Some("E_SKILL_TOOL_INVALID_NAME"),
        ),
        (
            "duplicate within the call",
            vec![TestTool::text("twice", ""), TestTool::text("twice", "")],
            Some("E_SKILL_TOOL_DUPLICATE"),
        ),
        (
            "duplicate of an earlier registration",
            vec![TestTool::text("mine", "")],
            Some("E_SKILL_TOOL_DUPLICATE"),
        ),
        (
            "another skill's tool",
            vec![TestTool::text("taken", "")],
            Some("E_SKILL_TOOL_COLLISION"),
        ),
        (
            "a reserved host tool",
            vec![TestTool::text("read_file", "")],
            Some("E_SKILL_TOOL_COLLISION"),
        ),
        (
            "parameters not an object schema",
            vec![bad_schema],
            Some("E_SKILL_TOOL_INVALID_SCHEMA"),
        ),
    ];
    for (case, tools, want) in cases {
        let mut registry = base.clone();
        let first = tools[0].name().to_string();
        let result = registry.register("host_tools", tools);
        match want {
            None => {
                result.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert!(registry.names_of("host-tools").contains(&first.as_str()));
            }
            Some(code) => {
                let e = result.expect_err(case);
                assert_eq!(e.code(), code, "{case}: {e}");
                // All or nothing: the registry is as it was.
                assert_eq!(registry.names_of("host-tools"), ["mine"], "{case}");
            }
        }
    }
    let e = base.reserve("mine").unwrap_err();
    assert_eq!(e.code(), "E_SKILL_TOOL_COLLISION");
}

#[tokio::test]
async fn module_tools_cannot_take_script_tool_names_and_folded_names_are_offered_by_no_one() {
    let env = Env::new();
    env.standard();
    // A module tool named like one of csv-cleaner's script tools (or its own) is refused when
    // it is registered: `run_` names belong to script tools.
    for (skill, name) in [
        ("pdf-forms", "run_csv_cleaner_profile"),
        ("csv-cleaner", "run_csv_cleaner_fail"),
    ] {
        let mut modules = ModuleRegistry::new();
        let e = modules
            .register(skill, [TestTool::text(name, "")])
            .unwrap_err();
        assert_eq!(e.code(), "E_SKILL_TOOL_INVALID_NAME", "{e}");
        assert!(e.to_string().contains("belongs to script tools"), "{e}");
    }

    // Two skills' module tools whose names fold together: neither is offered, whichever run
    // came first, and a later run does not get the name back.
    let mut modules = ModuleRegistry::new();
    modules
        .register("pdf-forms", [TestTool::text("fill_form", "")])
        .unwrap();
    modules
        .register("order-lookup", [TestTool::text("Fill-Form", "")])
        .unwrap();
    let session = env.session(&[("trusted", true)], modules);
    let pdf = session.begin_with(&["pdf-forms"]).await.unwrap();
    assert_eq!(session.tool_names(), ["fill_form"]);
    let orders = session.begin_with(&["order-lookup"]).await.unwrap();
    assert!(session.tool_names().is_empty(), "withdrawn from both");
    assert_eq!(pdf.tools().count(), 0);
    let e = pdf.call("fill_form", &json!({})).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_TOOL_COLLISION");
    assert!(
        orders.activations()[0]
            .notes
            .iter()
            .any(|n| n.contains("Fill-Form") && n.contains("contested")),
        "{:?}",
        orders.activations()[0].notes
    );
    drop((pdf, orders));
    let pdf = session.begin_with(&["pdf-forms"]).await.unwrap();
    assert_eq!(pdf.tools().count(), 0, "still contested");
    assert_eq!(session.contested_tools()[0].name, "fill_form");
}

#[tokio::test]
async fn a_reserved_host_tool_name_is_never_given_to_a_skill() {
    let env = Env::new();
    env.standard();
    let mut modules = ModuleRegistry::new();
    modules.reserve("run_csv_cleaner_fail").unwrap();
    let session = env.session(&[("trusted", true)], modules);
    let e = session.begin_with(&["csv-cleaner"]).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_TOOL_COLLISION");
    assert!(e.to_string().contains("a reserved host tool"), "{e}");
}

#[test]
fn fixtures_of_the_example_are_sound() {
    // The agent_loop example reads fixtures/runtime/skills; its skills must load without faults.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runtime/skills");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let config = Config::new()
            .with_source(SourceConfig::new(dir.display().to_string()))
            .with_extension_fields(true);
        let catalog = Catalog::from_config(&config);
        let names: Vec<String> = catalog
            .all()
            .await
            .iter()
            .map(|e| e.name().to_string())
            .collect();
        assert_eq!(names, ["csv-cleaner", "lead-scoring", "order-lookup"]);
        let diagnostics = catalog.diagnostics().await;
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
    });
}
