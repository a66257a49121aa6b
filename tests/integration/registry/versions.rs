//! `NAME@VERSION` on the command line: every command that takes a skill name reads any version
//! of a registry, yanked ones included, and a source without versions says so. Publishing
//! versions: `--version` names one skill; a batch without versions says which need one; the
//! served index of a registry carries each skill's published version.
//!
//! Origin: step 9 (issue 14: the first hour of a real user; NAME@VERSION).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::support::bin::{Out, Skillcat};
use serde_json::Value as J;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env("HOME", dir)
        .deadline(Duration::from_secs(60))
        .run()
}

/// Writes the skill `hello` (no metadata.version) whose body and script say `word`.
fn hello(dir: &Path, word: &str) {
    let root = dir.join("hello");
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::write(
        root.join("SKILL.md"),
        format!("---\nname: hello\ndescription: Says {word}.\n---\nThe {word} body.\n"),
    )
    .unwrap();
    let script = root.join("scripts/say.sh");
    std::fs::write(&script, format!("#!/bin/sh\n# Say it.\necho {word}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A registry holding hello 1.0.0 ("one"), 2.0.0 ("two") and 3.0.0 ("three", yanked).
fn registry() -> tempfile::TempDir {
    let tmp = crate::support::sandbox_tempdir("skillcat-versions-");
    let t = tmp.path();
    run(t, &["registry", "init", "r.db"]).code(0);
    for (word, version) in [("one", "1.0.0"), ("two", "2.0.0"), ("three", "3.0.0")] {
        hello(&t.join("src"), word);
        let skill = t.join("src/hello");
        run(
            t,
            &[
                "registry",
                "publish",
                "r.db",
                s(&skill),
                "--version",
                version,
            ],
        )
        .code(0);
    }
    run(t, &["registry", "yank", "r.db", "hello@3.0.0"]).code(0);
    tmp
}

#[test]
fn every_command_reads_any_version_by_its_exact_number() {
    let tmp = registry();
    let t = tmp.path();
    // show: the latest, an older one, a yanked one.
    assert_eq!(run(t, &["show", "r.db", "hello"]).out(), "The two body.\n");
    assert_eq!(
        run(t, &["show", "r.db", "hello@1.0.0"]).out(),
        "The one body.\n"
    );
    let o = run(t, &["show", "r.db", "hello@3.0.0"]);
    o.code(0);
    assert_eq!(o.out(), "The three body.\n");
    // read
    let o = run(t, &["read", "r.db", "hello@1.0.0", "scripts/say.sh"]);
    o.code(0);
    assert!(o.out().ends_with("echo one\n"), "{}", o.out());
    // digest: the manifest names the version the registry keeps.
    let one = run(t, &["digest", "r.db", "hello@1.0.0", "--format", "json"]);
    one.code(0);
    let three = run(t, &["digest", "r.db", "hello@3.0.0", "--format", "json"]);
    three.code(0);
    assert_eq!(one.json()[0]["version"], "1.0.0");
    assert_eq!(three.json()[0]["version"], "3.0.0");
    assert_ne!(one.json()[0]["digest"], three.json()[0]["digest"]);
    // list SOURCE NAME: that version alone.
    let o = run(t, &["list", "r.db", "hello@3.0.0", "--format", "json"]);
    o.code(0);
    let v = o.json();
    assert_eq!(v["skills"].as_array().unwrap().len(), 1);
    assert!(
        v["skills"][0]["location"]
            .as_str()
            .unwrap()
            .ends_with("#hello@3.0.0/SKILL.md"),
        "{v}"
    );
    assert_eq!(v["skills"][0]["digest"], three.json()[0]["digest"]);
    // tools and run: the script of that version, confined.
    let o = run(t, &["tools", "r.db", "hello@1.0.0"]);
    o.code(0);
    assert!(o.out().contains("run_hello_say"), "{}", o.out());
    let o = run(t, &["run", "r.db", "hello@1.0.0", "say"]);
    o.code(0);
    assert!(o.out().starts_with("one\n"), "{}\n{}", o.out(), o.stderr);
    let o = run(t, &["run", "r.db", "hello@3.0.0", "say"]);
    o.code(0);
    assert!(o.out().starts_with("three\n"), "{}\n{}", o.out(), o.stderr);

    // A version the registry lacks: exit 1, naming those it holds.
    let o = run(t, &["show", "r.db", "hello@9.9.9"]);
    o.code(1);
    o.says(&["hello@9.9.9", "1.0.0, 2.0.0, 3.0.0 (yanked)"]);
    run(t, &["show", "r.db", "nobody@1.0.0"])
        .code(1)
        .says(&["holds no skill named nobody"]);
}

#[test]
fn a_source_with_one_version_takes_at_its_own_version_and_names_it_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills");
    let commands: [&[&str]; 5] = [
        &["show"],
        &["digest"],
        &["list"],
        &["tools"],
        &["read", "SKILL.md"],
    ];
    for command in commands {
        let with = |wanted: &str| {
            let mut args = vec![command[0], s(&fixtures), wanted];
            args.extend(&command[1..]);
            run(t, &args)
        };
        // Its own version: the same answer as the name alone.
        let plain = with("pdf-forms");
        plain.code(0);
        let at = with("pdf-forms@0.4.1");
        at.code(0);
        assert_eq!(at.out(), plain.out(), "{command:?}");
        // Another version: exit 1, naming the version it holds and how to ask for it.
        let other = with("pdf-forms@9.9.9");
        other.code(1);
        other.says(&[
            "pdf-forms@9.9.9",
            "holds pdf-forms at version 0.4.1 only",
            "keeps one version of each skill",
            "Name the skill alone: pdf-forms",
        ]);
        assert_eq!(other.out(), "", "{command:?}");
    }
}

#[test]
fn publish_version_names_one_skill_and_a_batch_says_which_need_one() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    run(t, &["registry", "init", "r.db"]).code(0);
    let batch = t.join("batch");
    for (name, version) in [("aa", None), ("bb", Some("1.2.0")), ("cc", None)] {
        let root = batch.join(name);
        std::fs::create_dir_all(&root).unwrap();
        let meta = version.map_or(String::new(), |v| {
            format!("metadata:\n  version: \"{v}\"\n")
        });
        std::fs::write(
            root.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Skill {name}.\n{meta}---\nBody\n"),
        )
        .unwrap();
    }
    // --version over several skills: refused before anything is written.
    let o = run(
        t,
        &[
            "registry",
            "publish",
            "r.db",
            s(&batch),
            "--version",
            "1.0.0",
        ],
    );
    o.code(2);
    o.says(&[
        "--version sets the version of one skill",
        "the sources hold 3",
    ]);
    run(t, &["registry", "versions", "r.db", "bb"]).code(1);

    // Without it: bb is published; aa and cc are named, with how to set a version.
    let o = run(t, &["registry", "publish", "r.db", s(&batch)]);
    o.code(1);
    assert!(o.out().contains("Published bb@1.2.0"), "{}", o.out());
    o.says(&[
        "2 of 3 skills were not published for want of a version: aa (",
        "cc (",
        "metadata:\n    version: \"1.0.0\"",
        "--version V sets the version of one skill",
    ]);
    // One skill: --version is its version.
    run(
        t,
        &[
            "registry",
            "publish",
            "r.db",
            s(&batch.join("aa")),
            "--version",
            "0.1.0",
        ],
    )
    .code(0);

    // The served index carries each skill's published version, metadata.version or not.
    let (mut child, _, url) =
        crate::support::serve::spawn_serve(&t.join("r.db"), &[], Stdio::null());
    let cache = t.join("cache");
    let o = run(
        t,
        &["--cache", s(&cache), "fetch", &url, "--format", "json"],
    );
    let _ = child.kill();
    let _ = child.wait();
    o.code(0);
    let v: J = o.json();
    let version_of = |name: &str| {
        v["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .map(|e| e["version"].clone())
    };
    assert_eq!(version_of("aa"), Some(J::from("0.1.0")), "{v}");
    assert_eq!(version_of("bb"), Some(J::from("1.2.0")), "{v}");
}
