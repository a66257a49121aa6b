//! `prompt --for MESSAGE`: the skills in the order `match` ranks them for the message, so that
//! a budget that binds keeps the most relevant ones (without it, the first by precedence and
//! name); without `--for` the block is unchanged.
//!
//! Origin: step 29 (issue 51, item 17).

use std::path::Path;

use crate::support::bin::{Out, Skillcat};

fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args).cwd(dir).env("HOME", dir).run()
}

/// Three skills whose names sort opposite to their relevance to a PDF question.
fn catalog(root: &Path) {
    for (name, description, body) in [
        (
            "alpha-meetings",
            "Turn a meeting transcript into a short summary with decisions, action items and \
             open questions. Use when the user pastes a transcript or meeting notes.",
            "Summarise the meeting.",
        ),
        (
            "beta-logs",
            "Search application and server logs for errors and spikes, and summarise what \
             they show. Use when the user asks why a service failed last night.",
            "Search the logs.",
        ),
        (
            "zulu-pdf",
            "Inspect the fillable fields of a PDF form and prepare the values to fill it in. \
             Use when the user wants a PDF form filled from a table.",
            "Fill the PDF form fields.",
        ),
    ] {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
        )
        .unwrap();
    }
}

/// The names of an XML block's skills, in order.
fn names(block: &str) -> Vec<&str> {
    block
        .split("<skill>\n<name>\n")
        .skip(1)
        .map(|rest| rest.split_once("\n</name>").unwrap().0)
        .collect()
}

/// A budget room for one skill of the three: the empty block and one entry.
const BUDGET: &str = "420";

#[test]
fn the_budget_keeps_the_skill_most_relevant_to_the_message() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    catalog(&t.join("skills"));

    // Without --for: the first by name, as before.
    let o = run(t, &["prompt", "skills", "--budget", BUDGET]);
    o.code(0);
    assert_eq!(names(o.out()), ["alpha-meetings"], "{}", o.out());

    // With it: the PDF skill, and the report says the others were the least relevant.
    let o = run(
        t,
        &[
            "prompt",
            "skills",
            "--budget",
            BUDGET,
            "--for",
            "fill in this PDF form",
        ],
    );
    o.code(0);
    assert_eq!(names(o.out()), ["zulu-pdf"], "{}", o.out());
    assert!(o.stderr.contains("least relevant"), "{}", o.stderr);
    assert!(!o.stderr.contains("precedence"), "{}", o.stderr);

    // No budget: every skill, the most relevant first, then the rest in their own order.
    let o = run(
        t,
        &[
            "prompt",
            "skills",
            "--for",
            "why did the service fail? check the logs",
        ],
    );
    o.code(0);
    assert_eq!(
        names(o.out()),
        ["beta-logs", "alpha-meetings", "zulu-pdf"],
        "{}",
        o.out()
    );
    assert_eq!(o.stderr, "");
}

#[test]
fn a_configured_catalog_is_ordered_for_the_message_too() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    catalog(&t.join("skills"));
    std::fs::write(
        t.join("skillcat.toml"),
        format!("[[sources]]\npath = \"skills\"\n[prompt]\nbudget = {BUDGET}\n"),
    )
    .unwrap();
    let o = run(t, &["prompt", "--config", "skillcat.toml"]);
    o.code(0);
    assert_eq!(names(o.out()), ["alpha-meetings"], "{}", o.out());

    let o = run(
        t,
        &[
            "prompt",
            "--config",
            "skillcat.toml",
            "--for",
            "fill in this PDF form",
        ],
    );
    o.code(0);
    assert_eq!(names(o.out()), ["zulu-pdf"], "{}", o.out());

    // An empty message is a usage error, as for `match`.
    run(t, &["prompt", "skills", "--for", " "]).code(2);
}
