//! The small things that decide whether people keep the tool: a plain file is the same fault
//! to every command, a path that steps out and back in is read as documented, an invalid skill
//! is not signed by accident, and an empty configured catalog says where it looked.
//!
//! Origin: step 9 (issue 14: the first hour of a real user).

use std::path::Path;

use crate::support::bin::{Out, Skillcat, manifest_dir};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args).cwd(dir).env("HOME", dir).run()
}

#[test]
fn a_plain_file_is_not_a_directory_to_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::write(t.join("plain.txt"), "just text\n").unwrap();
    let o = run(t, &["validate", "plain.txt"]);
    o.code(1);
    o.says(&["Not a directory: plain.txt"]);
    for args in [
        vec!["list", "plain.txt"],
        vec!["prompt", "plain.txt"],
        vec!["show", "plain.txt", "x"],
        vec!["digest", "plain.txt"],
    ] {
        let o = run(t, &args);
        o.code(1);
        o.says(&["Error: Not a directory: plain.txt"]);
        assert_eq!(o.out(), "", "{args:?}");
    }
}

#[test]
fn read_normalises_a_path_that_stays_inside_and_refuses_one_that_leaves() {
    let skills = manifest_dir().join("fixtures/skills");
    let t = manifest_dir();
    let doc = std::fs::read(skills.join("pdf-forms/SKILL.md")).unwrap();
    let o = run(
        t,
        &["read", s(&skills), "pdf-forms", "references/../SKILL.md"],
    );
    o.code(0);
    assert_eq!(o.stdout, doc);
    let o = run(
        t,
        &[
            "read",
            s(&skills),
            "pdf-forms",
            "./references/field-types.md",
        ],
    );
    o.code(0);
    for out in [
        "../csv-cleaner/SKILL.md",
        "references/../../csv-cleaner/SKILL.md",
        "/etc/passwd",
    ] {
        let o = run(t, &["read", s(&skills), "pdf-forms", out]);
        o.code(1);
        o.says(&["is not a file inside skill 'pdf-forms'"]);
        assert_eq!(o.out(), "", "{out}");
    }
}

#[test]
fn sign_refuses_an_invalid_skill_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    run(t, &["keygen", "-o", "k", "--unencrypted"]).code(0);
    let dir = t.join("wrong-dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: other-name\ndescription: A skill in the wrong directory.\n---\nBody\n",
    )
    .unwrap();
    let o = run(t, &["sign", "wrong-dir", "other-name", "--key", "k.key"]);
    o.code(1);
    o.says(&[
        "Refusing to sign",
        "must match skill name 'other-name' [name-mismatch]",
        "nothing signed; fix the skill or pass --force",
    ]);
    assert!(!t.join("wrong-dir.minisig").exists());
    // As pack does.
    run(t, &["pack", "wrong-dir", "-o", "w.tar.gz"])
        .code(1)
        .says(&["Refusing to pack"]);
    let forced = [
        "sign",
        "wrong-dir",
        "other-name",
        "--key",
        "k.key",
        "--force",
    ];
    let o = run(t, &forced);
    o.code(0);
    o.says(&["Signing anyway (--force)", "[name-mismatch]"]);
    assert!(t.join("wrong-dir.minisig").is_file());
    // A missing output directory is named before the key is used.
    run(t, &[&forced[..], &["-o", "no/dir/x.minisig"]].concat())
        .code(2)
        .says(&["the directory no/dir does not exist"]);
}

#[test]
fn an_empty_configured_catalog_says_where_it_looked() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, t) = (tmp.path().join("home"), tmp.path().join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&t).unwrap();
    let run = |args: &[&str]| Skillcat::new(args).cwd(&t).env("HOME", &home).run();
    let user_file = home.join(".config/skillcat/skillcat.toml");
    for args in [
        vec!["list"],
        vec!["prompt"],
        vec!["match", "fill a pdf form"],
    ] {
        let o = run(&args);
        o.code(0);
        o.says(&[
            "No skills found in the default places",
            "no configuration",
            "./skillcat.toml",
            s(&user_file),
            s(&t.join(".agents/skills")),
            s(&home.join(".agents/skills")),
        ]);
    }
    // With a configuration: its sources.
    std::fs::write(t.join("c.toml"), "[[sources]]\npath = \"empty\"\n").unwrap();
    std::fs::create_dir(t.join("empty")).unwrap();
    let o = run(&["list", "--config", "c.toml"]);
    o.code(0);
    o.says(&["No skills found in the sources of", "c.toml", "empty"]);
    // Skills found: nothing said.
    std::fs::create_dir_all(t.join(".agents/skills/one")).unwrap();
    std::fs::write(
        t.join(".agents/skills/one/SKILL.md"),
        "---\nname: one\ndescription: The only one.\n---\nBody\n",
    )
    .unwrap();
    let o = run(&["list"]);
    o.code(0);
    assert_eq!(o.stderr, "");
}
