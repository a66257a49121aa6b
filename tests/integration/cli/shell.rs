//! `skillcat completions SHELL` and `skillcat man DIR` through the real binary.
//!
//! Origin: step 9 (issue 14: the first hour of a real user).

use crate::support::bin::run;

#[test]
fn completions_cover_every_shell_and_every_command() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = run(&["completions", shell]);
        out.code(0);
        let text = out.out();
        for command in ["validate", "prompt", "registry", "mcp", "completions"] {
            assert!(text.contains(command), "{shell}: no {command} in\n{text}");
        }
    }
    run(&["completions", "tcsh"]).code(2).says(&["tcsh"]);
}

#[test]
fn the_bash_completion_script_is_valid_bash() {
    let out = run(&["completions", "bash"]);
    out.code(0);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("skillcat.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn man_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    let out = run(&["man", man.to_str().unwrap()]);
    out.code(0);
    assert_eq!(
        out.out().trim(),
        man.join("skillcat.1").display().to_string()
    );
    let top = std::fs::read_to_string(man.join("skillcat.1")).unwrap();
    assert!(top.contains(".TH skillcat 1"), "{top}");
    let list = std::fs::read_to_string(man.join("skillcat-list.1")).unwrap();
    assert!(list.contains("List each skill of a source"), "{list}");
    assert!(man.join("skillcat-registry-publish.1").is_file());
}

#[test]
fn man_into_a_missing_parent_names_it_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("missing").join("man");
    run(&["man", target.to_str().unwrap()])
        .code(2)
        .says(&["does not exist", "missing"]);
    assert!(!dir.path().join("missing").exists());
}
