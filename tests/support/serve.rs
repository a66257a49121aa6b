//! `skillcat serve` as a child process on `127.0.0.1:0`, for the tests and the HTTP bench.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The binary under test: `$SKILLCAT_TEST_BIN` when set (to run these tests against another
/// build, such as an earlier release), else the one cargo built.
pub fn bin() -> PathBuf {
    std::env::var_os("SKILLCAT_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_skillcat")))
}

/// Starts `skillcat serve SOURCE --addr 127.0.0.1:0 EXTRA…` and waits for its first line
/// (`Serving N skills on URL`). Returns the child (its stdout consumed, its stderr as `stderr`
/// says), that line, trimmed, and the URL it announced.
pub fn spawn_serve(source: &Path, extra: &[&str], stderr: Stdio) -> (Child, String, String) {
    let mut child = Command::new(bin())
        .arg("serve")
        .arg(source)
        .args(["--addr", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn skillcat serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("read the first line of skillcat serve");
    let line = line.trim().to_string();
    let url = line
        .rsplit_once(" on ")
        .map(|(_, u)| u.to_string())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    (child, line, url)
}
