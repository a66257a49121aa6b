//! `skillcat tools` and `skillcat run`: the command line over the script runner.
//!
//! Origin: step 6 (issue 7: script tools and confined execution).

#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::support::bin::{Out, Skillcat};

/// Longer than the scripts' own 20-second timeout, so the runner's limit is what a slow script
/// meets.
const DEADLINE: Duration = Duration::from_secs(60);

#[track_caller]
fn skillcat(cwd: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(cwd)
        .env_remove("SKILLCAT_CONFIG")
        .deadline(DEADLINE)
        .run()
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A directory of skills searchable by the sandbox uid.
fn skills() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("skillcat-cli-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("echo");
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::write(
        root.join("SKILL.md"),
        "---\nname: echo\ndescription: Echo things.\nfs_read: [.]\ntimeout: 20\nscripts:\n  - name: greet\n    path: scripts/greet.sh\n    params:\n      - name: who\n        kind: positional\n        required: true\n      - name: loud\n        type: boolean\n---\nBody\n",
    )
    .unwrap();
    for (name, text) in [
        (
            "echo-args.sh",
            "#!/bin/sh\n# Print each argument.\nprintf '[%s]\\n' \"$@\"\n",
        ),
        (
            "greet.sh",
            "#!/bin/sh\n# Greet someone.\necho \"hello $*\"\n",
        ),
        ("read.sh", "#!/bin/sh\n# Read a file.\ncat \"$1\"\n"),
    ] {
        let p = root.join("scripts").join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(dir.path().join("data.txt"), "readable from cwd\n").unwrap();
    dir
}

#[test]
fn run_prints_the_result_and_exits_0() {
    let d = skills();
    let o = skillcat(
        d.path(),
        &["run", ".", "echo", "echo_args", "--args", "a 'b c'"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.out(), "[a]\n[b c]\n");
    // The full tool name, and `_` for `-` in the skill name, work too.
    let o = skillcat(
        d.path(),
        &[
            "run",
            ".",
            "echo",
            "run_echo_echo_args",
            "--json",
            r#"{"args":"x"}"#,
        ],
    );
    assert_eq!(o.out(), "[x]\n");
}

#[test]
fn declared_parameters_come_from_json() {
    let d = skills();
    let o = skillcat(
        d.path(),
        &[
            "run",
            ".",
            "echo",
            "greet",
            "--json",
            r#"{"who":"world","loud":true}"#,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.out(), "hello world --loud\n");
    let o = skillcat(
        d.path(),
        &["run", ".", "echo", "greet", "--json", r#"{"who":1}"#],
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("E_SKILL_SCRIPT_INVALID_ARGS"),
        "{}",
        o.stderr
    );
    let o = skillcat(d.path(), &["run", ".", "echo", "greet", "--args", "world"]);
    assert_eq!(o.code, 2, "a declared script takes --json: {}", o.stderr);
}

#[test]
fn the_frontmatter_grant_reads_the_working_directory_only() {
    let d = skills();
    // Scripts run in their workspace: a file of the caller's directory is named absolutely.
    let data = d.path().join("data.txt");
    let o = skillcat(
        d.path(),
        &[
            "run",
            ".",
            "echo",
            "read",
            "--args",
            &data.to_string_lossy(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.out(), "readable from cwd\n");
    let o = skillcat(
        d.path(),
        &["run", ".", "echo", "read", "--args", "/etc/hostname"],
    );
    assert_eq!(o.code, 1);
    assert!(o.out().starts_with("Error (exit 1):\n"), "{}", o.out());
    // Refused by Landlock, or (in the run's own root, which holds only its grants) not there.
    assert!(
        o.out().contains("Permission denied") || o.out().contains("No such file or directory"),
        "{}",
        o.out()
    );
    assert!(o.stderr.contains("E_SKILL_SCRIPT_FAILED"), "{}", o.stderr);
}

#[test]
fn failures_and_refusals_exit_1_with_the_code_on_stderr() {
    let escape = manifest().join("fixtures/escape");
    let o = skillcat(
        manifest(),
        &["run", &escape.to_string_lossy(), "attack-memory", "attack"],
    );
    assert_eq!(o.code, 1);
    assert!(o.out().starts_with("Error (exit 3):\n"), "{}", o.out());
    assert!(o.stderr.contains("E_SKILL_SCRIPT_FAILED"), "{}", o.stderr);
    let o = skillcat(
        manifest(),
        &["run", &escape.to_string_lossy(), "attack-memory", "nope"],
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("E_SKILL_SCRIPT_NOT_FOUND"),
        "{}",
        o.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    let d = skills();
    let o = skillcat(
        d.path(),
        &["run", ".", "echo", "echo_args", "--json", "{not json"],
    );
    assert_eq!(o.code, 2);
    let o = skillcat(
        d.path(),
        &["run", ".", "echo", "echo_args", "--json", "[1]"],
    );
    assert_eq!(o.code, 2);
    let o = skillcat(
        d.path(),
        &[
            "run",
            ".",
            "echo",
            "echo_args",
            "--args",
            "a",
            "--json",
            "{}",
        ],
    );
    assert_eq!(o.code, 2);
    let o = skillcat(d.path(), &["run", "."]);
    assert_eq!(o.code, 2);
}

#[test]
fn tools_lists_each_tool_with_its_schema() {
    let d = skills();
    let o = skillcat(d.path(), &["tools", ".", "echo", "--format", "json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc: serde_json::Value = serde_json::from_str(o.out()).unwrap();
    let names: Vec<&str> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["run_echo_greet", "run_echo_echo_args", "run_echo_read"]
    );
    let greet = &doc["tools"][0];
    assert_eq!(greet["description"], "Greet someone.");
    assert_eq!(greet["parameters"]["required"], serde_json::json!(["who"]));
    assert_eq!(greet["parameters"]["additionalProperties"], false);
    assert_eq!(
        doc["tools"][1]["parameters"]["properties"]["args"]["type"],
        "string"
    );

    let o = skillcat(d.path(), &["tools", ".", "echo"]);
    assert_eq!(o.code, 0);
    assert!(
        o.out().contains("run_echo_greet  Greet someone."),
        "{}",
        o.out()
    );
    assert!(
        o.out()
            .contains("parameters: who: string (positional), loud?: boolean"),
        "{}",
        o.out()
    );
}

#[test]
fn the_configuration_sets_the_ceiling_and_the_interpreters() {
    let d = skills();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let skill = d.path().join("writer");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: writer\ndescription: Writes.\nfs_write: out\n---\nBody\n",
    )
    .unwrap();
    let w = skill.join("scripts/write.sh");
    std::fs::write(
        &w,
        "#!/bin/sh\n# Write a file.\necho written > \"$1/result.txt\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).unwrap();
    let py = skill.join("scripts/py.py");
    std::fs::write(&py, "#!/usr/bin/env python3\nprint(1)\n").unwrap();
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out_arg = out.to_string_lossy().into_owned();

    // Without configuration no write is granted.
    let o = skillcat(
        d.path(),
        &["run", ".", "writer", "write", "--args", &out_arg],
    );
    assert_eq!(o.code, 1, "{}", o.out());
    assert!(!out.join("result.txt").exists());

    let sh = ["/usr/bin/sh", "/bin/sh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap();
    std::fs::write(
        d.path().join("skillcat.toml"),
        format!("sources = []\n\n[sandbox]\nfs_write = [\"out\"]\n\n[scripts.interpreters]\nsh = \"{sh}\"\n"),
    )
    .unwrap();
    // Found in the working directory, the file is the project's: it may narrow the user's
    // configuration, never widen it, so the write is still refused.
    let o = skillcat(
        d.path(),
        &["run", ".", "writer", "write", "--args", &out_arg],
    );
    assert_eq!(o.code, 1, "{} {}", o.out(), o.stderr);
    assert!(!out.join("result.txt").exists());
    // Named with --config, it is the user's own.
    let o = skillcat(
        d.path(),
        &[
            "--config",
            "skillcat.toml",
            "run",
            ".",
            "writer",
            "write",
            "--args",
            &out_arg,
        ],
    );
    assert_eq!(o.code, 0, "{} {}", o.out(), o.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("result.txt")).unwrap(),
        "written\n"
    );
    // python3 is not in the configured allow-list.
    let o = skillcat(
        d.path(),
        &["--config", "skillcat.toml", "run", ".", "writer", "py"],
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("E_SKILL_SCRIPT_INTERPRETER_REFUSED"),
        "{}",
        o.stderr
    );
}
