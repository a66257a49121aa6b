//! Guest tools (tier 2) through the library runtime: the fixture skill of the agent-loop
//! example, every hostile guest of `fixtures/guest/skills/hostile` with its exact outcome (the
//! test process unharmed, no child left behind), the gate, the configuration checks, the
//! unsafe in-process mode. Guests run confined with the `skillcat` binary as the helper.
//!
//! Origin: step 13 (issue 18: tier-2 guest code, confined and bounded).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value as Json, json};
use skillcat::catalog::Catalog;
use skillcat::config::{Config, SourceConfig};
use skillcat::guest::{FnHost, GuestHost, GuestLimits, Rejection};
use skillcat::runtime::{RuntimeError, Session, ToolKind};
use skillcat::script::{AllowAll, DenyAll, Gate, GateDecision, GateError, GateKind, GateRequest};

mod support;

use support::guest::{self, Answer, thrown};

/// Evaluations of this file run one at a time, so the check for children left behind sees
/// only its own.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_skillcat"))
}

/// A session over `dir` (a trusted source) whose guests run confined through the binary.
fn session(dir: &str, trusted: bool, host: GuestHost, gate: Arc<dyn Gate>) -> Session {
    let config = Config::new()
        .with_source(
            SourceConfig::new(manifest().join(dir).to_string_lossy())
                .named("fixtures")
                .trusted(trusted),
        )
        .with_extension_fields(true);
    Session::builder(Catalog::from_config(&config))
        .config(&config)
        .gate(gate)
        .guests(host.helper(helper()))
        .build()
}

/// A session as [`session`] makes it, and a run with `skill` active.
async fn begin(
    skill: &str,
    dir: &str,
    trusted: bool,
    host: GuestHost,
    gate: Arc<dyn Gate>,
) -> (Session, skillcat::runtime::Run) {
    let s = session(dir, trusted, host, gate);
    let run = s.begin_with(&[skill]).await.unwrap();
    (s, run)
}

/// The hostile skill active, in a session allowing every call.
async fn hostile(host: GuestHost) -> (Session, skillcat::runtime::Run) {
    begin(
        "hostile",
        "fixtures/guest/skills",
        true,
        host,
        Arc::new(AllowAll),
    )
    .await
}

/// The test host: `hang` never answers; host calls may take 1 second.
fn hostile_host() -> GuestHost {
    let limits = GuestLimits {
        call_timeout: Duration::from_secs(1),
        ..GuestLimits::default()
    };
    GuestHost::new()
        .global(
            "hang",
            FnHost(|_| async { std::future::pending::<Result<Json, Rejection>>().await }),
        )
        .unwrap()
        .limits(limits)
        .unwrap()
}

/// The sandbox helpers and guest children below this process, and guest children anywhere
/// (no other test of this file evaluates while one holds [`SERIAL`]).
fn children_left() -> Vec<String> {
    let mut left = guest::children_below(std::process::id());
    left.extend(guest::guests_anywhere());
    left.sort();
    left.dedup();
    left
}

/// Calls a tool of a run and gives the outcome object, or the error's code and text.
async fn call(run: &skillcat::runtime::Run, tool: &str, args: Json) -> Answer {
    match run.call(tool, &args).await {
        Ok(out) => {
            assert_eq!(out.kind, ToolKind::Guest);
            assert!(!out.trusted);
            Ok(serde_json::from_str(out.content.as_text().expect("text")).expect("JSON"))
        }
        Err(e) => Err((e.code().to_string(), e.to_string())),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fixture_skill_offers_two_guest_tools_that_work() {
    let _one = SERIAL.lock().await;
    let (s, run) = begin(
        "lead-scoring",
        "fixtures/runtime/skills",
        true,
        GuestHost::new(),
        Arc::new(AllowAll),
    )
    .await;
    let a = &run.activations()[0];
    assert!(a.notes.is_empty(), "{:?}", a.notes);
    let names: Vec<&str> = run.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["score_lead", "quote_discount"]);
    let score = run.tools().next().unwrap();
    assert_eq!(score.kind, ToolKind::Guest);
    assert!(!score.trusted);
    assert_eq!(
        score.provenance.to_string(),
        "lead-scoring@1.0.0 (fixtures)"
    );
    assert_eq!(
        score.parameters["properties"]["tier"],
        json!({"type": "string", "enum": ["gold", "silver", "bronze"]})
    );
    assert_eq!(
        score.parameters["required"],
        json!(["company", "employees"])
    );
    assert_eq!(score.parameters["additionalProperties"], json!(false));
    assert_eq!(
        score.parameters["properties"]["timeout_seconds"],
        json!({"type": "integer", "minimum": 1, "maximum": 60, "default": 10,
               "description": "How long the evaluation may take, in seconds"})
    );
    assert_eq!(s.tool_names(), ["quote_discount", "score_lead"]);

    let out = call(
        &run,
        "score_lead",
        json!({"company": "Acme", "employees": 1200, "tier": "silver", "replied": true}),
    )
    .await
    .unwrap();
    assert_eq!(out["ok"], json!(true));
    assert_eq!(
        out["result"],
        json!({"company": "Acme", "score": 90,
               "reasons": ["enterprise head count", "silver tier", "replied to the last email"]})
    );
    assert_eq!(out["logs"], json!(["scored Acme"]));
    assert_eq!(out["logsCapped"], json!(false));
    assert!(out["durationMs"].as_u64().unwrap() < 10_000);

    // The host global: the discount table is read through readSkillFile.
    let out = call(&run, "quote_discount", json!({"seats": 250}))
        .await
        .unwrap();
    assert_eq!(out["result"], json!({"seats": 250, "percent": 12}));
    // A guest exception is data, not a tool error.
    assert_eq!(
        call(&run, "quote_discount", json!({"seats": 0})).await,
        thrown("error", "RangeError: seats must be at least 1")
    );
    // Unknown keys, wrong types and out-of-range timeouts are refused before anything runs.
    for (args, want) in [
        (
            json!({"seats": 1, "discount": 99}),
            "unknown argument 'discount'",
        ),
        (json!({"seats": "many"}), "'seats' must be an integer"),
        (json!({}), "missing required argument 'seats'"),
        (json!({"seats": 1, "timeout_seconds": 0}), "from 1 to 60"),
        (json!({"seats": 1, "timeout_seconds": 61}), "from 1 to 60"),
    ] {
        let (code, text) = call(&run, "quote_discount", args).await.unwrap_err();
        assert_eq!(code, "E_SKILL_GUEST_INVALID_ARGS");
        assert!(text.contains(want), "{text}");
    }
    run.finish().await.unwrap();
    assert!(s.tool_names().is_empty());
    assert_eq!(children_left(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn every_hostile_guest_ends_with_its_outcome_and_leaves_nothing() {
    let _one = SERIAL.lock().await;
    let (_s, run) = hostile(hostile_host()).await;
    assert!(
        run.activations()[0].notes.is_empty(),
        "{:?}",
        run.activations()[0].notes
    );
    // The check below sees a guest while one runs.
    let one_second = json!({"timeout_seconds": 1});
    let spinning = run.call("spin", &one_second);
    let looking = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        children_left()
    };
    let (spun, seen) = tokio::join!(spinning, looking);
    assert_eq!(spun.unwrap_err().code(), "E_SANDBOX_FAILED");
    assert!(
        seen.iter().any(|c| c.contains(" skillcat-guest: ")),
        "{seen:?}"
    );
    assert_eq!(children_left(), Vec::<String>::new());
    let cases = guest::hostile_cases(true);
    for (tool, args, want) in cases {
        let started = std::time::Instant::now();
        let mut got = call(&run, tool, args).await;
        // A returned outcome is compared by its result; its timing varies.
        if let (Ok(o), Ok(w)) = (&mut got, &want)
            && o["ok"] == json!(true)
            && w.get("ok").is_none()
        {
            *o = o["result"].clone();
        }
        assert_eq!(got, want, "{tool}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{tool} took {:?}",
            started.elapsed()
        );
        // The host is unharmed: a plain guest still answers.
        let ok = call(&run, "ok", json!({"n": 21})).await.unwrap();
        assert_eq!(ok["result"], json!({"doubled": 42}), "after {tool}");
    }

    guest::check_log_flood(&call(&run, "log_flood", json!({})).await.unwrap());

    // Prototype pollution of a value a host function returned stays in its evaluation.
    let polluted = call(&run, "pollute", json!({"step": "pollute"})).await;
    let clean = call(&run, "pollute", json!({"step": "look"})).await;
    guest::check_pollution(polluted, clean);

    run.finish().await.unwrap();
    assert_eq!(children_left(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gate_decides_first_with_distinct_answers() {
    let _one = SERIAL.lock().await;
    /// Answers by the tool asked for, and records the kind of request.
    struct ByTool(std::sync::Mutex<Vec<String>>);
    #[async_trait]
    impl Gate for ByTool {
        async fn check(&self, r: &GateRequest<'_>) -> Result<GateDecision, GateError> {
            if let GateKind::Guest {
                provenance,
                source,
                args,
            } = r.kind
            {
                self.0.lock().unwrap().push(format!(
                    "{} {} {source} {args} {}",
                    r.kind.as_str(),
                    r.tool,
                    provenance
                ));
            }
            match r.tool {
                "score_lead" => Ok(GateDecision::Allow),
                "quote_discount" => Ok(GateDecision::Unavailable("nobody to ask".into())),
                _ => Err("the gate's backend is down".into()),
            }
        }
    }
    let gate = Arc::new(ByTool(Default::default()));
    let (_s, run) = begin(
        "lead-scoring",
        "fixtures/runtime/skills",
        true,
        GuestHost::new(),
        gate.clone(),
    )
    .await;
    call(&run, "score_lead", json!({"company": "A", "employees": 1}))
        .await
        .unwrap();
    // The gate answers before the arguments are looked at.
    let (code, text) = call(&run, "quote_discount", json!({"bogus": 1}))
        .await
        .unwrap_err();
    assert_eq!(code, "E_SKILL_GUEST_GATE_UNAVAILABLE");
    assert!(text.contains("nobody to ask"), "{text}");
    assert_eq!(
        gate.0.lock().unwrap().as_slice(),
        [
            r#"guest score_lead tools/score.js {"company":"A","employees":1} lead-scoring@1.0.0 (fixtures)"#,
            r#"guest quote_discount tools/discount.js {"bogus":1} lead-scoring@1.0.0 (fixtures)"#,
        ]
    );
    run.finish().await.unwrap();

    let (_s, run) = begin(
        "lead-scoring",
        "fixtures/runtime/skills",
        true,
        GuestHost::new(),
        Arc::new(DenyAll::default()),
    )
    .await;
    let e = run
        .call("score_lead", &json!({"company": "A", "employees": 1}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "E_SKILL_GUEST_DENIED");
    assert_eq!(
        e.to_model_text(),
        "Error (E_SKILL_GUEST_DENIED): call of guest tool 'score_lead' denied: guest tools are disabled"
    );
    run.finish().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn untrusted_sources_and_hosts_without_guests_offer_none() {
    let (_s, run) = begin(
        "lead-scoring",
        "fixtures/runtime/skills",
        false,
        GuestHost::new(),
        Arc::new(AllowAll),
    )
    .await;
    assert_eq!(run.tools().count(), 0);
    assert_eq!(
        run.activations()[0].notes,
        ["guest tools withheld: source 'fixtures' is not trusted"]
    );
    drop(run);

    let config = Config::new().with_source(
        SourceConfig::new(manifest().join("fixtures/runtime/skills").to_string_lossy())
            .trusted(true),
    );
    let s = Session::builder(Catalog::from_config(&config)).build();
    let run = s.begin_with(&["lead-scoring"]).await.unwrap();
    assert_eq!(run.tools().count(), 0);
    assert_eq!(
        run.activations()[0].notes,
        ["guest tools withheld: this session runs no guest code"]
    );
    // A declared global the host does not provide: the tool is not offered, with why.
    let (_s, run) = hostile(GuestHost::new()).await;
    assert!(!run.tools().any(|t| t.name == "never_answers"));
    assert_eq!(
        run.activations()[0].notes,
        [
            "guest tool not offered: guest tool 'never_answers' is not declared right: it needs \
          host function 'hang', which this host does not provide \
          (E_SKILL_GUEST_INVALID_DECLARATION)"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn declarations_with_faults_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("faulty");
    std::fs::create_dir_all(skill.join("tools")).unwrap();
    std::fs::write(skill.join("tools/good.js"), "async () => 1").unwrap();
    std::fs::write(skill.join("tools/latin1.js"), b"async () => '\xe9'").unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: faulty\ndescription: Guest declarations with faults.\nmetadata:\n  \
         skillcat.guest_tools: \"good missing bad_type latin1\"\n  \
         skillcat.guest.good.source: tools/good.js\n  \
         skillcat.guest.good.description: Fine\n  \
         skillcat.guest.missing.source: tools/missing.js\n  \
         skillcat.guest.missing.description: No file\n  \
         skillcat.guest.bad_type.source: tools/good.js\n  \
         skillcat.guest.bad_type.description: Bad\n  \
         skillcat.guest.bad_type.params: \"when:date\"\n  \
         skillcat.guest.latin1.source: tools/latin1.js\n  \
         skillcat.guest.latin1.description: Not UTF-8\n  \
         skillcat.guest.stray.source: tools/good.js\n---\nBody\n",
    )
    .unwrap();
    let config = Config::new().with_source(
        SourceConfig::new(dir.path().to_string_lossy())
            .named("tmp")
            .trusted(true),
    );
    let s = Session::builder(Catalog::from_config(&config))
        .guests(GuestHost::new().helper(helper()))
        .build();
    let run = s.begin_with(&["faulty"]).await.unwrap();
    let names: Vec<&str> = run.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let notes = &run.activations()[0].notes;
    for want in [
        "'stray' is not listed in skillcat.guest_tools",
        "guest tool 'missing' is not declared right: source tools/missing.js is not a file of the skill",
        "guest tool 'bad_type' is not declared right: parameter 'when:date': unknown type 'date'",
        "guest tool 'latin1' is not declared right: source tools/latin1.js is not UTF-8",
    ] {
        assert!(
            notes
                .iter()
                .any(|n| n.contains(want) && n.ends_with("(E_SKILL_GUEST_INVALID_DECLARATION)")),
            "no note saying {want}: {notes:?}"
        );
    }
}

#[test]
fn limits_go_up_only_when_said_and_globals_keep_their_names() {
    let up = GuestLimits {
        calls: 5000,
        ..GuestLimits::default()
    };
    let e = GuestHost::new().limits(up).unwrap_err();
    assert_eq!(e.code(), "E_INVALID_SKILLS_CONFIG");
    assert!(
        e.to_string()
            .contains("calls (5000) is above its default (1000)"),
        "{e}"
    );
    let host = GuestHost::new().limits_above_defaults(up).unwrap();
    assert_eq!(host.current_limits().calls, 5000);
    let zero = GuestLimits {
        payload: 0,
        ..GuestLimits::default()
    };
    assert!(GuestHost::new().limits_above_defaults(zero).is_err());
    let down = GuestLimits {
        in_flight: 2,
        ..GuestLimits::default()
    };
    assert_eq!(
        GuestHost::new()
            .limits(down)
            .unwrap()
            .current_limits()
            .in_flight,
        2
    );
    let f = || FnHost(|v: Json| async move { Ok::<Json, Rejection>(v) });
    for bad in ["console", "Date", "__proto", "not-an-identifier", ""] {
        let e = GuestHost::new().global(bad, f()).unwrap_err();
        assert_eq!(e.code(), "E_INVALID_SKILLS_CONFIG", "{bad}");
    }
    let e = GuestHost::new()
        .global("echo", f())
        .unwrap()
        .global("echo", f())
        .unwrap_err();
    assert!(e.to_string().contains("registered twice"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_configured_down_apply() {
    let _one = SERIAL.lock().await;
    let limits = GuestLimits {
        in_flight: 2,
        log_entries: 3,
        log_entry_bytes: 10,
        ..GuestLimits::default()
    };
    let (_s, run) = hostile(hostile_host().limits(limits).unwrap()).await;
    let (code, text) = call(&run, "nine_at_once", json!({})).await.unwrap_err();
    assert_eq!(code, "E_SKILL_GUEST_QUOTA_EXCEEDED");
    assert!(
        text.ends_with("host calls in flight (2) [in_flight]"),
        "{text}"
    );
    let flood = call(&run, "log_flood", json!({})).await.unwrap();
    assert_eq!(
        flood["logs"],
        json!(["line 0 yyy", "line 1 yyy", "line 2 yyy"])
    );
    assert_eq!(flood["logsCapped"], json!(true));
    run.finish().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_of_an_unloaded_skill_is_not_called() {
    let _one = SERIAL.lock().await;
    let config = Config::new().with_source(
        SourceConfig::new(manifest().join("fixtures/runtime/skills").to_string_lossy())
            .named("fixtures")
            .trusted(true),
    );
    let catalog = Catalog::from_config(&config);
    let entry = catalog.find("lead-scoring").await.unwrap();
    let host = Arc::new(GuestHost::new().helper(helper()));
    let gate: Arc<dyn Gate> = Arc::new(AllowAll);
    let provenance = skillcat::script::Provenance {
        skill: "lead-scoring".into(),
        version: Some("1.0.0".into()),
        source: "fixtures".into(),
    };
    let (tools, faults) = skillcat::guest::load(
        &host,
        &gate,
        entry.source(),
        entry.root(),
        entry.skill(),
        &provenance,
        &Default::default(),
    )
    .await;
    // quote_discount needs readSkillFile, which only the runtime provides.
    assert_eq!(tools.len(), 1);
    assert_eq!(faults.len(), 1);
    let score = &tools[0];
    let args = json!({"company": "A", "employees": 5});
    let out = score.call(&args).await.unwrap();
    assert_eq!(out.to_json()["result"]["score"], json!(20));
    score.unload();
    let e = score.call(&args).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_NOT_LOADED");
    assert_eq!(
        e.to_string(),
        "guest tool 'score_lead' belongs to skill 'lead-scoring', which is not loaded"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_process_evaluation_exists_only_behind_its_unsafe_setting() {
    let _one = SERIAL.lock().await;
    let host = hostile_host().unsafe_evaluate_in_process_without_isolation(true);
    let (_s, run) = hostile(host).await;
    let ok = call(&run, "ok", json!({"n": 1.5})).await.unwrap();
    assert_eq!(ok["result"], json!({"doubled": 3}));
    // The engine's interrupt still ends a spinning guest, without a process to kill.
    let (code, _) = call(&run, "spin", json!({"timeout_seconds": 1}))
        .await
        .unwrap_err();
    assert_eq!(code, "E_SANDBOX_FAILED");
    let clean = call(&run, "pollute", json!({"step": "look"}))
        .await
        .unwrap();
    assert_eq!(clean["result"]["polluted"], json!(null));
    run.finish().await.unwrap();
    // No child process was started.
    assert_eq!(children_left(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runtime_error_keeps_the_guest_code() {
    let _one = SERIAL.lock().await;
    let (_s, run) = hostile(hostile_host()).await;
    let e = run.call("big_result", &json!({})).await.unwrap_err();
    assert!(matches!(e, RuntimeError::Guest(_)), "{e:?}");
    assert_eq!(
        e.to_model_text(),
        "Error (E_SKILL_GUEST_QUOTA_EXCEEDED): guest tool 'big_result' exceeded a quota: \
         result size (10485760 bytes) [result]"
    );
    run.finish().await.unwrap();
}
