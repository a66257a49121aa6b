//! A complete agent loop over skillcat, with a scripted stand-in for the model (no network).
//!
//! For each user message: match → activate (bodies into the system prompt, tools into the
//! run's tool set) → the "model" calls tools (the host's own `read_skill_file`, a confined
//! script tool, a native module tool, guest tools: JavaScript evaluated confined, one of them
//! calling the host function `readSkillFile`) → results go back to it → it answers → the run
//! ends and everything it brought is put away.
//!
//! ```text
//! cargo run --example agent_loop
//! ```
//!
//! The skills are in `fixtures/runtime/skills`. Script tools and guest tools run confined
//! (Landlock, seccomp); the sandbox helper and the guest evaluator are this very binary, so
//! `main` hands over to them first thing.

use std::process::ExitCode;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value as Json, json};
use skillcat::catalog::Catalog;
use skillcat::config::{Config, SourceConfig};
use skillcat::runtime::{
    ModuleError, ModuleRegistry, ModuleResponse, ModuleTool, Run, Session, ToolKind,
};
use skillcat::script::{Confinement, Gate, GateDecision, GateError, GateRequest};

const SYSTEM: &str = "You are a helpful operations assistant.";

/// The host's own tool (not a skill's): tier-3 reads of an active skill's files.
const READ_SKILL_FILE: &str = "read_skill_file";

fn main() -> ExitCode {
    // Script and guest tools re-execute this binary as the sandbox helper (the guest
    // evaluator built in): it must come first.
    if let Some(code) = skillcat::guest::helper_main() {
        return code;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent_loop: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(agent()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent_loop: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn agent() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The catalog, the host's module tools, and everything the configuration says (ceiling,
    //    limits, interpreters: the runner) with one gate for script and module tools alike.
    let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/runtime/skills");
    let config = Config::new()
        .with_source(SourceConfig::new(skills).named("fixtures").trusted(true))
        .with_extension_fields(true);
    // The process's directories, read once.
    let dirs = skillcat::context::Env::from_process();
    let env = dirs.environment()?;
    let mut modules = ModuleRegistry::new();
    modules.reserve(READ_SKILL_FILE)?;
    modules.register(
        "order-lookup",
        [Arc::new(LookupOrder) as Arc<dyn ModuleTool>],
    )?;
    let session = Session::builder(Catalog::from_config(&config))
        .user_dirs(dirs.user_dirs())
        .configure(&config, env, Arc::new(PrintingGate))?
        .modules(modules)
        .build();

    // 2. The conversation.
    let model = ScriptedModel::new();
    for (i, message) in MESSAGES.iter().enumerate() {
        println!("turn {}: user: {message}", i + 1);
        turn(&session, &model, message).await?;
    }
    Ok(())
}

/// One agent turn: a run over the skills that match the message.
async fn turn(
    session: &Session,
    model: &ScriptedModel,
    message: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let run = session.begin(message).await?;
    let names: Vec<&str> = run.activations().iter().map(|a| a.name.as_str()).collect();
    println!("  matched: {}", list(&names));
    for a in run.activations() {
        for note in &a.notes {
            println!("  note: {note}");
        }
    }

    let system = run.system_prompt(SYSTEM);
    println!(
        "  system prompt: {} skill block(s) before the base prompt",
        system.matches("<skill name=").count()
    );
    let mut tools: Vec<Json> = run.tools().map(|t| t.to_function_json()).collect();
    for t in run.tools() {
        println!(
            "  tool offered: {} ({} tool of {}, trusted={})",
            t.name,
            t.kind.as_str(),
            t.provenance,
            t.trusted
        );
    }
    if !run.activations().is_empty() {
        tools.push(json!({
            "name": READ_SKILL_FILE,
            "description": "Read a file an active skill refers to.",
            "parameters": {
                "type": "object",
                "properties": {"skill": {"type": "string"}, "path": {"type": "string"}},
                "required": ["skill", "path"],
            },
        }));
    }

    let mut transcript = vec![Message::User(message.to_string())];
    loop {
        match model.reply(&system, &tools, &transcript) {
            Reply::Call { name, args } => {
                println!("  model calls: {name} {args}");
                let result = dispatch(&run, &name, &args).await;
                for line in result.lines() {
                    println!("  result:{}{line}", if line.is_empty() { "" } else { " " });
                }
                transcript.push(Message::ToolResult(result));
            }
            Reply::Say(text) => {
                println!("  model: {text}");
                break;
            }
        }
    }

    println!("  tool set during the run: {}", list(&session.tool_names()));
    let workspaces: Vec<_> = names.iter().filter_map(|n| run.workspace(n)).collect();
    run.finish().await?;
    let left = session.tool_names();
    println!("  tool set after the run: {}", list(&left));
    if !workspaces.is_empty() {
        let removed = workspaces.iter().all(|w| !w.exists());
        println!(
            "  workspace removed: {}",
            if removed { "yes" } else { "NO" }
        );
    }
    Ok(())
}

/// Runs one tool call of the model: the host's own tool, or a tool of the run. Failures go back
/// to the model as text with their stable code.
async fn dispatch(run: &Run, name: &str, args: &Json) -> String {
    if name == READ_SKILL_FILE {
        let field = |k: &str| args.get(k).and_then(Json::as_str).unwrap_or_default();
        return match run.read_resource(field("skill"), field("path")).await {
            Ok(r) => r
                .text()
                .map(str::to_string)
                .unwrap_or_else(|| format!("[{} bytes]", r.data.len())),
            Err(e) => e.to_model_text(),
        };
    }
    match run.call(name, args).await {
        Ok(out) => {
            let how = match out.script.as_ref().map(|s| &s.confinement) {
                Some(Confinement::Confined(_)) => "script, confined",
                Some(Confinement::Unconfined(_)) => "script, NOT confined",
                None if out.kind == ToolKind::Guest => "guest, confined",
                None => "module",
            };
            let mut text = out.to_model_text();
            if out.kind == ToolKind::Guest {
                // The outcome object; its durationMs is left out so the transcript is the same
                // on every run.
                if let Ok(Json::Object(mut outcome)) = serde_json::from_str::<Json>(&text) {
                    outcome.shift_remove("durationMs");
                    text = Json::Object(outcome).to_string();
                }
            }
            format!(
                "{} ({how}, from {}, trusted={})",
                text.trim_end(),
                out.provenance,
                out.trusted
            )
        }
        Err(e) => e.to_model_text(),
    }
}

fn list<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        "(none)".to_string()
    } else {
        items
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

// ---------------------------------------------------------------------------------------------
// The host's native tool for the order-lookup skill, and its gate.

/// Looks up an order in a (fixed, in-memory) order system.
struct LookupOrder;

#[async_trait]
impl ModuleTool for LookupOrder {
    fn name(&self) -> &str {
        "lookup_order"
    }

    fn description(&self) -> &str {
        "The shipping status of an order, by order number."
    }

    fn parameters(&self) -> Json {
        json!({
            "type": "object",
            "properties": {"order": {"type": "string", "description": "The order number."}},
            "required": ["order"],
        })
    }

    async fn call(&self, args: Json) -> Result<ModuleResponse, ModuleError> {
        let order = args.get("order").and_then(Json::as_str).unwrap_or_default();
        match order {
            "42" => Ok("order 42: shipped on 2025-03-14, arriving Monday".into()),
            "7" => Ok("order 7: awaiting payment".into()),
            other => Err(format!("no order {other:?} in the order system").into()),
        }
    }
}

/// Says what it decides; allows every call, script, module or guest tool.
struct PrintingGate;

#[async_trait]
impl Gate for PrintingGate {
    async fn check(&self, request: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        println!("  gate: allow {} of {}", request.tool, request.skill);
        Ok(GateDecision::Allow)
    }
}

// ---------------------------------------------------------------------------------------------
// The scripted model.

enum Message {
    User(String),
    ToolResult(String),
}

enum Reply {
    Call { name: String, args: Json },
    Say(String),
}

/// One planned turn: for a user message, the tool calls to make, then an answer made from
/// their results.
struct Plan {
    user: &'static str,
    calls: Vec<(&'static str, Json)>,
    answer: fn(&[&str]) -> String,
}

const MESSAGES: [&str; 4] = [
    "Please profile this CSV export before we clean it.",
    "Where is my order 42?",
    "And order 99?",
    "Score this sales lead: Acme Corp, 1200 employees, gold tier. What discount for 250 seats?",
];

/// Plays a fixed script, as a model would: it calls only the tools it is offered, one at a
/// time, and answers from what they returned.
struct ScriptedModel {
    plans: Vec<Plan>,
}

impl ScriptedModel {
    fn new() -> Self {
        let plans = vec![
            Plan {
                user: MESSAGES[0],
                calls: vec![
                    (
                        READ_SKILL_FILE,
                        json!({"skill": "csv-cleaner", "path": "references/rules.md"}),
                    ),
                    (
                        "run_csv_cleaner_profile",
                        json!({"data": "name,city,joined\nAda,London,1843\nGrace,Arlington,1944"}),
                    ),
                ],
                answer: |results| {
                    let profile = results.last().copied().unwrap_or_default();
                    let counts = profile.split(" (").next().unwrap_or(profile);
                    format!("Your export profiles as {counts}; I will trim every cell.")
                },
            },
            Plan {
                user: MESSAGES[1],
                calls: vec![("lookup_order", json!({"order": "42"}))],
                answer: |results| {
                    let status = results[0].split(" (").next().unwrap_or(results[0]);
                    format!("Here is what the order system says: {status}.")
                },
            },
            Plan {
                user: MESSAGES[2],
                calls: vec![("lookup_order", json!({"order": "99"}))],
                answer: |results| {
                    if results[0].starts_with("Error (") {
                        "I could not find order 99; could you check the number?".to_string()
                    } else {
                        format!("Order 99: {}", results[0])
                    }
                },
            },
            Plan {
                user: MESSAGES[3],
                calls: vec![
                    (
                        "score_lead",
                        json!({"company": "Acme Corp", "employees": 1200, "tier": "gold"}),
                    ),
                    ("quote_discount", json!({"seats": 250})),
                ],
                answer: |results| {
                    // Each result is the outcome object, then what the host adds in brackets.
                    let outcome = |r: &str| -> Json {
                        serde_json::from_str(r.split(" (guest").next().unwrap_or(r))
                            .unwrap_or_default()
                    };
                    let (score, quote) = (outcome(results[0]), outcome(results[1]));
                    let reasons: Vec<&str> = score["result"]["reasons"]
                        .as_array()
                        .map(|r| r.iter().filter_map(Json::as_str).collect())
                        .unwrap_or_default();
                    format!(
                        "{} scores {} ({}): call them this week. 250 seats get a {}% discount.",
                        score["result"]["company"].as_str().unwrap_or("?"),
                        score["result"]["score"],
                        reasons.join(", "),
                        quote["result"]["percent"]
                    )
                },
            },
        ];
        ScriptedModel { plans }
    }

    fn reply(&self, _system: &str, tools: &[Json], transcript: &[Message]) -> Reply {
        let mut user = "";
        let mut results: Vec<&str> = Vec::new();
        for m in transcript {
            match m {
                Message::User(text) => user = text,
                Message::ToolResult(r) => results.push(r),
            }
        }
        let Some(plan) = self.plans.iter().find(|p| p.user == user) else {
            return Reply::Say("I am not sure how to help with that.".to_string());
        };
        if let Some((name, args)) = plan.calls.get(results.len()) {
            if tools.iter().any(|t| t["name"] == *name) {
                return Reply::Call {
                    name: name.to_string(),
                    args: args.clone(),
                };
            }
            return Reply::Say(format!("I have no tool named {name} for this."));
        }
        Reply::Say((plan.answer)(&results))
    }
}
