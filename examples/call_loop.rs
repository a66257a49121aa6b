//! One script tool called again and again through the library's session, a call a line: what
//! `benches/run_vs_bwrap.sh` times for "one call through the library" (no process start, no
//! protocol: `Run::call` as an embedder makes it).
//!
//! ```text
//! cargo run --release --example call_loop -- SKILLS_DIR SKILL TOOL
//! ```
//!
//! `SKILLS_DIR` is a trusted source; the run activates `SKILL` once. For each line read on
//! standard input it calls `TOOL` (no arguments) and writes one line: `ok` and the tool's output
//! with its line ends escaped, or `error` and why. Standard input's end ends the run (its
//! workspace removed). The sandbox helper is this very binary, so `main` hands over to it first.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use skillcat::catalog::Catalog;
use skillcat::config::{Config, SourceConfig};
use skillcat::runtime::Session;
use skillcat::script::AllowAll;

fn main() -> ExitCode {
    if let Some(code) = skillcat::guest::helper_main() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, skill, tool] = args.as_slice() else {
        eprintln!("usage: call_loop SKILLS_DIR SKILL TOOL");
        return ExitCode::from(2);
    };
    // Its helpers forked from a zygote made now, before the runtime's threads (as `skillcat
    // mcp` does), which also lets the session park each next run ahead.
    let _ = skillcat::script::sandbox::start_zygote();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("call_loop: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(dir, skill, tool)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("call_loop: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(dir: &str, skill: &str, tool: &str) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::new().with_source(SourceConfig::new(dir).named("bench").trusted(true));
    let dirs = skillcat::context::Env::from_process();
    let session = Session::builder(Catalog::from_config(&config))
        .user_dirs(dirs.user_dirs())
        .configure(&config, dirs.environment()?, Arc::new(AllowAll))?
        .build();
    let run = session.begin_with(&[skill]).await?;
    let (lines, mut out) = (std::io::stdin().lock().lines(), std::io::stdout().lock());
    for line in lines {
        line?;
        let answer = match run.call(tool, &json!({})).await {
            Ok(o) => format!("ok {}", o.to_model_text().escape_default()),
            Err(e) => format!("error {}", e.to_model_text().escape_default()),
        };
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    run.finish().await?;
    Ok(())
}
