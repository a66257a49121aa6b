//! The example at the end of each command's `--help` works as printed, run from a fresh
//! checkout (the crate directory): a new user tries exactly those first. Commands whose example
//! writes files run in a copy of the fixtures; long-running servers (`serve`, `mcp`) and
//! examples that need what an earlier one wrote are checked for their command name only.
//!
//! Origin: step 9 (issue 14: the first hour of a real user).

use crate::support::bin::{Skillcat, manifest_dir, run};

/// Every command's `Example: …` line, as `--help` prints it.
fn examples() -> Vec<(String, String)> {
    let top = run(&["--help"]);
    top.code(0);
    let mut out = Vec::new();
    let mut in_commands = false;
    for line in top.out().lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands && !line.starts_with("  ") {
            break;
        }
        let Some(cmd) = line.split_whitespace().next().filter(|_| in_commands) else {
            continue;
        };
        if cmd == "help" {
            continue;
        }
        let help = run(&[cmd, "--help"]);
        help.code(0);
        if let Some(example) = help
            .out()
            .lines()
            .find_map(|l| l.strip_prefix("Example: skillcat "))
        {
            out.push((cmd.to_string(), example.to_string()));
        }
    }
    out
}

#[test]
fn every_read_only_example_runs_as_printed() {
    let examples = examples();
    assert!(examples.len() >= 15, "{examples:?}");
    let read_only = [
        "validate",
        "properties",
        "prompt",
        "list",
        "show",
        "read",
        "digest",
        "tools",
    ];
    let mut ran = 0;
    for (cmd, example) in &examples {
        if !read_only.contains(&cmd.as_str()) {
            continue;
        }
        let args: Vec<&str> = example.split_whitespace().collect();
        Skillcat::new(&args).cwd(manifest_dir()).run().code(0);
        ran += 1;
    }
    assert_eq!(ran, read_only.len(), "{examples:?}");
}

#[test]
fn the_man_and_completions_examples_run_in_a_fresh_directory() {
    let examples = examples();
    let tmp = tempfile::tempdir().unwrap();
    for (cmd, example) in &examples {
        if cmd != "man" && cmd != "completions" {
            continue;
        }
        // Only the skillcat part of the example (before a pipe or `&&`).
        let first = example.split(['&', '>', '|']).next().unwrap();
        let args: Vec<&str> = first.split_whitespace().collect();
        Skillcat::new(&args).cwd(tmp.path()).run().code(0);
    }
    assert!(tmp.path().join("man/skillcat.1").is_file());
}
