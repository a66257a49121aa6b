//! Call overhead of guest tools through the runtime, side by side with a confined script:
//! p50 and p99 over 200 calls of a trivial guest tool (`async () => 1`: spawn, engine start,
//! evaluate, answer) and of a trivial script tool (`echo hi`), both through `Run::call` of one
//! session, called in turn; then a guest that makes 100 host calls in sequence.
//!
//! `cargo bench --bench guest_overhead` (add `-- N` for N calls of each).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use skillcat::capability::{Grant, Trust};
use skillcat::catalog::Catalog;
use skillcat::config::{Config, SourceConfig};
use skillcat::guest::{FnHost, GuestHost};
use skillcat::runtime::{Run, Session};
use skillcat::script::{AllowAll, Runner, RunnerConfig};

const SKILL: &str = "---
name: bench
description: Trivial tools for the guest overhead benchmark.
metadata:
  skillcat.guest_tools: \"trivial hundred\"
  skillcat.guest.trivial.source: tools/trivial.js
  skillcat.guest.trivial.description: Returns 1
  skillcat.guest.hundred.source: tools/hundred.js
  skillcat.guest.hundred.description: Makes 100 host calls
  skillcat.guest.hundred.globals: echo
---
Body
";

fn percentiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
    (
        at(0.50).as_secs_f64() * 1000.0,
        at(0.99).as_secs_f64() * 1000.0,
    )
}

/// p50 and p99 of each tool over `calls` calls, the tools called in turn (one call of each per
/// round), so a change of the machine's load weighs on all of them alike.
async fn time(run: &Run, tools: &[(&str, Json)], calls: usize) -> Vec<(f64, f64)> {
    for (tool, args) in tools {
        for _ in 0..5 {
            run.call(tool, args).await.expect("warm-up call");
        }
    }
    let mut times = vec![Vec::with_capacity(calls); tools.len()];
    for _ in 0..calls {
        for (i, (tool, args)) in tools.iter().enumerate() {
            let t = Instant::now();
            let out = run.call(tool, args).await.expect("a call");
            times[i].push(t.elapsed());
            std::hint::black_box(out);
        }
    }
    times.into_iter().map(percentiles).collect()
}

async fn bench(calls: usize) {
    let dir = tempfile::Builder::new()
        .prefix("skillcat-bench-guest-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let skill = dir.path().join("skills/bench");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::create_dir_all(skill.join("tools")).unwrap();
    std::fs::write(skill.join("SKILL.md"), SKILL).unwrap();
    let script = skill.join("scripts/hi.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(skill.join("tools/trivial.js"), "async () => 1\n").unwrap();
    std::fs::write(
        skill.join("tools/hundred.js"),
        "async () => {\n  let sum = 0;\n  for (let i = 0; i < 100; i++) sum += await echo(i);\n  return sum;\n}\n",
    )
    .unwrap();

    let helper = PathBuf::from(env!("CARGO_BIN_EXE_skillcat"));
    let mut rc = RunnerConfig::new(
        Grant {
            fs_read: vec![],
            fs_write: vec![],
            network: skillcat::capability::Network::Off,
            timeout: Duration::from_secs(60),
            trust: Trust::External,
        },
        skillcat::context::Env::from_process().user_dirs(),
    );
    rc.helper = helper.clone();
    rc.workspace_base = dir.path().join("ws");
    let runner = Runner::new(rc, Arc::new(AllowAll)).unwrap();
    let host = GuestHost::new()
        .helper(helper)
        .global("echo", FnHost(|v: Json| async move { Ok(v) }))
        .unwrap();
    let config = Config::new().with_source(
        SourceConfig::new(dir.path().join("skills").to_string_lossy())
            .named("bench")
            .trusted(true),
    );
    let session = Session::builder(Catalog::from_config(&config))
        .runner(Arc::new(runner))
        .guests(host)
        .build();
    let run = session.begin_with(&["bench"]).await.unwrap();
    let names: Vec<&str> = run.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["run_bench_hi", "trivial", "hundred"]);
    let sum = run.call("hundred", &json!({})).await.unwrap();
    assert!(
        sum.to_model_text().contains("\"result\":4950"),
        "{}",
        sum.to_model_text()
    );

    let both = time(
        &run,
        &[("run_bench_hi", json!({})), ("trivial", json!({}))],
        calls,
    )
    .await;
    let (script, guest) = (both[0], both[1]);
    let hundred = time(&run, &[("hundred", json!({}))], calls / 4).await[0];
    println!(
        "guest overhead through Run::call ({calls} calls each; 100-call guest: {}):",
        calls / 4
    );
    println!("  {:<34} {:>9} {:>9}", "", "p50 ms", "p99 ms");
    println!(
        "  {:<34} {:>9.2} {:>9.2}",
        "trivial confined script (echo hi)", script.0, script.1
    );
    println!(
        "  {:<34} {:>9.2} {:>9.2}",
        "trivial guest tool (async () => 1)", guest.0, guest.1
    );
    println!(
        "  {:<34} {:>9.2} {:>9.2}",
        "guest making 100 host calls", hundred.0, hundred.1
    );
    println!(
        "  guest / script at p50: {:.2}x, at p99: {:.2}x",
        guest.0 / script.0,
        guest.1 / script.1
    );
    run.finish().await.unwrap();
}

fn main() {
    let calls = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench(calls));
}
