//! What a new author expects `validate` to catch before anyone else sees the skill: `init`'s
//! template left as it was (a warning; a central registry refuses it), a plain value YAML cannot
//! read because of a `: ` in it (say to quote it), and a link in the body to a file the skill
//! lacks (a warning). Warnings never change an exit code.
//!
//! Origin: step 29 (issue 51, item 6).

use std::path::Path;

use crate::support::bin::{Out, Skillcat};
use crate::support::central::{registry_dir, token};
use crate::support::publish::Server;
use crate::support::write_skill;

/// `skillcat ARGS` in `dir`, with `dir` as `$HOME` (no user configuration).
#[track_caller]
fn sc(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env("HOME", dir)
        .env_remove("SKILLCAT_CONFIG")
        .env_remove("SKILLCAT_TOKEN")
        .run()
}

#[test]
fn validate_warns_about_init_s_template_and_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    sc(t, &["init", "log-triage"]).code(0);
    let o = sc(t, &["validate", "log-triage"]);
    o.code(0);
    assert!(o.out().contains("Valid skill"), "{}", o.out());
    o.says(&["warning", "template", "description", "scripts/hello.sh"]);
    // `-q` keeps stderr to errors: the warning is not said, the verdict is.
    let o = sc(t, &["-q", "validate", "log-triage"]);
    o.code(0);
    assert!(o.out().contains("Valid skill"), "{}", o.out());
    assert!(!o.stderr.contains("warning"), "-q said: {}", o.stderr);
    // As JSON too, and still exit 0.
    let o = sc(t, &["validate", "log-triage", "--format", "json"]);
    o.code(0);
    assert!(o.out().contains("init-template"), "{}", o.out());

    // Once the author wrote a description and replaced the script, nothing is said.
    let md = std::fs::read_to_string(t.join("log-triage/SKILL.md")).unwrap();
    let line = md.lines().find(|l| l.starts_with("description:")).unwrap();
    let md = md.replace(line, "description: Triage a log file by level.");
    std::fs::write(t.join("log-triage/SKILL.md"), md).unwrap();
    std::fs::write(
        t.join("log-triage/scripts/hello.sh"),
        "#!/bin/sh\n# Count levels.\ngrep -c ERROR \"$1\"\n",
    )
    .unwrap();
    let o = sc(t, &["validate", "log-triage"]);
    o.code(0);
    assert!(!o.stderr.contains("template"), "{}", o.stderr);
}

#[test]
fn a_central_registry_refuses_init_s_template_with_the_reason() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    sc(dir, &["init", "log-triage"]).code(0);
    let server = Server::start(dir, &[]);
    let o = sc(
        dir,
        &[
            "publish",
            &server.url,
            "log-triage",
            "--token-file",
            "ci.token",
        ],
    );
    o.code(1).says(&["422", "template"]);
    server.stop();
}

#[test]
fn a_colon_in_a_plain_value_says_to_quote_it() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_skill(
        &t.join("colon"),
        "---\nname: colon\ndescription: Use when: the logs are long\n---\nBody\n",
        &[],
    );
    let o = sc(t, &["validate", "colon"]);
    o.code(1);
    let all = format!("{}{}", o.out(), o.stderr);
    assert!(all.contains("mapping values are not allowed"), "{all}");
    assert!(all.contains("quote"), "{all}");
    assert!(
        all.contains("description: \"Use when: the logs are long\""),
        "{all}"
    );
}

#[test]
fn a_link_to_a_file_the_skill_lacks_is_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_skill(
        &t.join("linked"),
        "---\nname: linked\ndescription: Links to its references.\n---\nSee \
         [the guide](references/guide.md), [the missing one](references/missing.md#top), \
         [a site](https://example.com/x.md) and [a section](#usage).\n",
        &[("references/guide.md", "# Guide\n", false)],
    );
    let o = sc(t, &["validate", "linked"]);
    o.code(0);
    o.says(&["warning", "references/missing.md"]);
    assert!(!o.stderr.contains("guide.md"), "{}", o.stderr);
    assert!(!o.stderr.contains("example.com"), "{}", o.stderr);
    let o = sc(t, &["validate", "linked", "--format", "json"]);
    o.code(0);
    assert!(o.out().contains("link-missing"), "{}", o.out());
}
