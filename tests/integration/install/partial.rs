//! `add DIR` of a catalog where some skills are invalid: the valid ones are installed, each
//! invalid one is named with its faults and left out (nothing of it written, nothing of it
//! pinned), and the exit is 1 so that CI notices; `--force` still installs them all.
//!
//! Origin: step 29 (issue 51, item 7: one invalid skill of anthropics/skills' 17 aborted all).

use std::path::Path;

use crate::support::project::{Project, skill};
use crate::support::write_skill;

/// alpha and beta, valid; delta, whose description is over the 1,024 characters allowed; and
/// epsilon, whose SKILL.md is not a skill document at all.
fn catalog(src: &Path) {
    skill(src, "alpha", "1.0.0", "a");
    skill(src, "beta", "1.0.0", "b");
    write_skill(
        &src.join("delta"),
        &format!(
            "---\nname: delta\ndescription: {}\n---\n# delta\n",
            "Too long. ".repeat(110)
        ),
        &[],
    );
    write_skill(&src.join("epsilon"), "---\nname: [epsilon\n---\n", &[]);
}

fn pinned(p: &Project) -> Vec<String> {
    let lock = p.lock();
    let mut names: Vec<String> = lock["skills"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

#[test]
fn the_valid_skills_are_installed_and_each_invalid_one_named() {
    let p = Project::new();
    catalog(&p.path("src"));

    // A dry run says the same and changes nothing.
    let dry = p.run(&["add", "../src", "--dry-run"]);
    dry.code(1);
    assert!(dry.out().contains("would install alpha"), "{}", dry.out());
    assert!(dry.stderr.contains("delta"), "{}", dry.stderr);
    assert!(!p.lockfile().exists());
    // The JSON report names them too, each with its faults.
    let json = p.run(&["add", "../src", "--dry-run", "--format", "json"]);
    json.code(1);
    let report = json.json();
    assert_eq!(report["dryRun"], true, "{report}");
    let planned: Vec<&str> = report["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(planned, ["alpha", "beta"], "{report}");
    let left = report["leftOut"].as_array().unwrap();
    let left_names: Vec<&str> = left.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(left_names, ["epsilon", "delta"], "{report}");
    assert!(
        left[1]["faults"][0].as_str().unwrap().contains("1024"),
        "{report}"
    );
    assert!(!p.lockfile().exists());

    let o = p.run(&["add", "../src"]);
    o.code(1);
    assert!(o.out().contains("installed alpha"), "{}", o.out());
    assert!(o.out().contains("installed beta"), "{}", o.out());
    // Each one left out is named with its faults, on stderr.
    let delta = o
        .stderr
        .lines()
        .find(|l| l.contains("delta"))
        .unwrap_or_else(|| panic!("{}", o.stderr));
    assert!(
        delta.contains("left out") && delta.contains("1024"),
        "{delta}"
    );
    let epsilon = o
        .stderr
        .lines()
        .find(|l| l.contains("epsilon"))
        .unwrap_or_else(|| panic!("{}", o.stderr));
    assert!(epsilon.contains("left out"), "{epsilon}");
    assert!(
        o.stderr.contains("2 of 4 skills left out") && o.stderr.contains("--force"),
        "{}",
        o.stderr
    );
    // Nothing invalid is written or pinned.
    assert_eq!(pinned(&p), ["alpha", "beta"]);
    assert!(p.installed("alpha").join("SKILL.md").exists());
    assert!(!p.installed("delta").exists() && !p.installed("epsilon").exists());
    p.run(&["status", "--check"]).code(0);

    // Again: the valid ones are up to date, the invalid ones still named, still exit 1.
    let again = p.run(&["add", "../src"]);
    again.code(1);
    assert!(again.stderr.contains("delta"), "{}", again.stderr);

    // --force keeps its meaning: the invalid skill is installed too (what is not a skill
    // document cannot be, and is skipped with a warning as before).
    let forced = p.run(&["add", "../src", "--force"]);
    forced.code(0);
    assert_eq!(pinned(&p), ["alpha", "beta", "delta"]);
    assert!(p.installed("delta").join("SKILL.md").exists());
}

#[test]
fn a_catalog_with_no_valid_skill_changes_nothing() {
    let p = Project::new();
    let src = p.path("src");
    write_skill(&src.join("epsilon"), "---\nname: [epsilon\n---\n", &[]);
    write_skill(
        &src.join("delta"),
        &format!(
            "---\nname: delta\ndescription: {}\n---\n# delta\n",
            "Too long. ".repeat(110)
        ),
        &[],
    );
    p.run(&["add", "../src"])
        .code(1)
        .says(&["delta", "epsilon", "Nothing was changed"]);
    assert!(!p.lockfile().exists());
    assert!(!p.installed("delta").exists());
}

/// A skill the `skills` CLI (1.7.4) installed for Claude Code alone: it copies it into
/// `.claude/skills/NAME` and makes no `.agents/skills/NAME`. `status` finds it there and checks
/// its digest; `install` keeps it there (restores it there), never a second copy.
///
/// Origin: step 29 (issue 51, item 11: "missing", then a second copy under `.agents/skills`).
#[test]
fn a_skill_the_skills_cli_installed_for_claude_code_is_found_where_it_is() {
    let Some(cli) = super::interop::skills_cli() else {
        return;
    };
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    super::interop::run_cli(
        &cli,
        &p,
        &p.root,
        &["add", "../src", "-s", "alpha", "-a", "claude-code", "-y"],
    );
    let theirs = p.root.join(".claude/skills/alpha");
    assert!(theirs.join("SKILL.md").is_file());
    assert!(!p.installed("alpha").exists());
    let lock = p.lock_bytes();

    let o = p.run(&["status"]);
    o.code(0);
    assert!(o.out().contains("alpha  ok"), "{}", o.out());
    assert!(o.out().contains(".claude/skills/alpha"), "{}", o.out());
    p.run(&["status", "--check"]).code(0);
    let json = p.run(&["status", "--format", "json"]).json();
    assert_eq!(json[0]["state"], "ok", "{json}");
    assert_eq!(json[0]["place"], ".claude/skills/alpha", "{json}");

    // Frozen: nothing to do, and no second copy.
    p.run(&["install", "--frozen"]).code(0);
    assert!(!p.installed("alpha").exists());
    assert_eq!(p.lock_bytes(), lock);

    // A changed copy is named where it is, and restored there.
    std::fs::write(theirs.join("SKILL.md"), "changed").unwrap();
    p.run(&["status", "--check"]).code(1);
    p.run(&["install", "--frozen"])
        .code(1)
        .says(&[".claude/skills/alpha", "locally modified"]);
    p.run(&["install", "--frozen", "--force"]).code(0);
    assert!(!p.installed("alpha").exists());
    assert!(
        std::fs::read_to_string(theirs.join("SKILL.md"))
            .unwrap()
            .contains("name: alpha")
    );
    p.run(&["status", "--check"]).code(0);

    // Without --frozen the lockfile records where it is, and it stays there.
    p.run(&["install"]).code(0);
    assert_eq!(
        p.lock()["skills"]["alpha"]["targets"],
        serde_json::json!([".claude/skills/alpha"])
    );
    assert!(!p.installed("alpha").exists());
    p.run(&["status", "--check"]).code(0);

    // And `remove` removes it from there.
    p.run(&["remove", "alpha"]).code(0);
    assert!(!theirs.exists());
    assert!(p.lock()["skills"].as_object().unwrap().is_empty());
}

/// The same skill, its folder then deleted: `install --frozen` puts it back in
/// `.claude/skills/NAME`, where Claude Code reads it (the `skills` CLI's lockfile records no
/// folder; an agent's folder the CLI made, holding no `.agents/skills`, is where it was), never
/// in `.agents/skills/NAME` alone; and once the lockfile records that folder, `status` names it
/// as the one that is gone, and `install` restores it there.
///
/// Origin: step 29 (issue 51, item 11: restored to `.agents/skills` only, `.claude/skills` left
/// empty; `status` named `.agents/skills/NAME` as missing).
#[test]
fn a_deleted_skill_the_skills_cli_installed_for_claude_code_comes_back_there() {
    let Some(cli) = super::interop::skills_cli() else {
        return;
    };
    let p = Project::new();
    skill(&p.path("src"), "alpha", "1.0.0", "a");
    super::interop::run_cli(
        &cli,
        &p,
        &p.root,
        &["add", "../src", "-s", "alpha", "-a", "claude-code", "-y"],
    );
    let theirs = p.root.join(".claude/skills/alpha");
    assert!(theirs.join("SKILL.md").is_file());

    // Their lockfile (no folder recorded): deleted, then restored where it was.
    std::fs::remove_dir_all(&theirs).unwrap();
    let o = p.run(&["status"]);
    o.code(0);
    assert!(o.out().contains(".claude/skills/alpha"), "{}", o.out());
    p.run(&["install", "--frozen"]).code(0);
    assert!(
        theirs.join("SKILL.md").is_file(),
        "not restored in .claude/skills"
    );
    assert!(
        !p.installed("alpha").exists(),
        "a second copy in .agents/skills"
    );
    p.run(&["status", "--check"]).code(0);

    // skillcat's lockfile records the folder: deleted, named, restored there.
    p.run(&["install"]).code(0);
    assert_eq!(
        p.lock()["skills"]["alpha"]["targets"],
        serde_json::json!([".claude/skills/alpha"])
    );
    std::fs::remove_dir_all(&theirs).unwrap();
    let o = p.run(&["status"]);
    assert!(
        o.out()
            .contains("missing: the folder .claude/skills/alpha is gone"),
        "{}",
        o.out()
    );
    assert!(!o.out().contains(".agents/skills/alpha"), "{}", o.out());
    let json = p.run(&["status", "--format", "json"]).json();
    assert_eq!(json[0]["state"], "missing", "{json}");
    assert_eq!(json[0]["place"], ".claude/skills/alpha", "{json}");
    p.run(&["install", "--frozen"]).code(0);
    assert!(
        theirs.join("SKILL.md").is_file(),
        "not restored in .claude/skills"
    );
    assert!(
        !p.installed("alpha").exists(),
        "a second copy in .agents/skills"
    );
    p.run(&["status", "--check"]).code(0);
}
