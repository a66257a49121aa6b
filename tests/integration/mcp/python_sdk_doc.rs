//! The Python SDK client of `docs/mcp.md` ("From the Python SDK"), run exactly as written with
//! the venv of the SDK (`SKILLCAT_PY_MCP`) and this build's `skillcat` first on `PATH`; what it
//! prints is the output the document shows (step 29, item 14).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The first fenced block of `lang` after `heading` in `text`.
fn block_after<'a>(text: &'a str, heading: &str, lang: &str) -> &'a str {
    let at = text
        .find(heading)
        .unwrap_or_else(|| panic!("{heading} in docs/mcp.md"));
    let open = format!("```{lang}\n");
    let start = text[at..].find(&open).expect("a fenced block") + at + open.len();
    let end = text[start..].find("```\n").expect("its end") + start;
    &text[start..end]
}

#[test]
fn the_documented_python_client_works_as_written() {
    let Some(python) = crate::support::python_mcp() else {
        return;
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(manifest.join("docs/mcp.md")).unwrap();
    let code = block_after(&doc, "## From the Python SDK", "python");
    let shown = block_after(&doc, "## From the Python SDK", "text");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("client.py");
    std::fs::write(&script, code).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_skillcat")).parent().unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let mut child = Command::new(python)
        .arg(&script)
        .current_dir(manifest)
        .env("PATH", format!("{}:{path}", bin.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a hang fails instead of blocking the run.
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the documented client did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, shown, "what the document says it prints\n{stderr}");
}
