//! The second hour of a user of `add / install / update / remove / status` (issue 35), through
//! the real binary: `remove` after the canonical folder was deleted by hand takes the links it
//! left and never a user's own folder of the same name; `status` names that state; a frozen
//! install after a yank on a served registry names the yanked version and what to do;
//! `--dry-run` of `add`, `update` and `remove` shows the plan and changes no byte; an unknown
//! name lists the names the source has; `status` has a header row.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::bin::Skillcat;
use crate::support::central::{doc, registry_dir, token};
use crate::support::project::{Project, skill};
use crate::support::publish::Server;

/// Every entry under `dir` with what it is: a file's mode and bytes, a link's text, a folder.
/// Two equal trees are byte-identical.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn go(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                go(base, &p, out);
                "dir".to_string()
            } else {
                format!(
                    "file {:o} {}",
                    meta.permissions().mode(),
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap())
                )
            };
            out.insert(rel, what);
        }
    }
    let mut out = BTreeMap::new();
    go(dir, dir, &mut out);
    out
}

fn is_there(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[test]
fn remove_takes_the_links_left_by_a_folder_deleted_by_hand_and_status_names_it() {
    let p = Project::new();
    skill(&p.path("src"), "log-search", "1.0.0", "search logs");
    p.run(&[
        "add",
        "../src",
        "log-search",
        "--agent",
        "claude-code,goose",
    ])
    .code(0);
    let claude = p.root.join(".claude/skills/log-search");
    let goose = p.root.join(".goose/skills/log-search");
    assert!(std::fs::read_link(&claude).is_ok() && std::fs::read_link(&goose).is_ok());
    std::fs::remove_dir_all(p.installed("log-search")).unwrap();

    // status calls it what it is: the folder is gone, the links are left.
    let out = p.run(&["status"]);
    out.code(0);
    assert!(
        out.out().contains(
            "  missing: the folder .agents/skills/log-search is gone; links left in .claude/skills, .goose/skills"
        ),
        "{}",
        out.out()
    );
    assert!(
        out.out().contains("skillcat remove log-search"),
        "{}",
        out.out()
    );
    assert!(!out.out().contains("not linked"), "{}", out.out());
    p.run(&["status", "--check"]).code(1);
    let json = p.run(&["status", "--format", "json"]);
    json.code(0);
    let s = &json.json()[0];
    assert_eq!(s["state"], "missing");
    assert_eq!(
        s["leftTargets"],
        serde_json::json!([".claude/skills/log-search", ".goose/skills/log-search"])
    );
    assert_eq!(s["brokenTargets"], serde_json::json!([]));

    // remove cleans every place it installed.
    let out = p.run(&["remove", "log-search"]);
    out.code(0);
    assert!(
        out.out().contains(
            "removed log-search (.claude/skills/log-search, .goose/skills/log-search; .agents/skills/log-search was already gone)"
        ),
        "{}",
        out.out()
    );
    assert!(
        !is_there(&claude),
        "the dangling link in .claude/skills is removed"
    );
    assert!(
        !is_there(&goose),
        "the dangling link in .goose/skills is removed"
    );
    assert!(p.lock()["skills"].as_object().unwrap().is_empty());
    p.run(&["status", "--check"]).code(0);
}

#[test]
fn remove_never_takes_a_users_own_folder_or_link_of_the_same_name() {
    let p = Project::new();
    skill(&p.path("src"), "log-search", "1.0.0", "search logs");
    p.run(&["add", "../src", "log-search", "--agent", "claude-code"])
        .code(0);
    let claude = p.root.join(".claude/skills/log-search");
    // The user replaces the link with a folder of their own, puts their own link (to a folder
    // elsewhere, which does not exist) where Goose looks, and deletes the canonical folder.
    std::fs::remove_file(&claude).unwrap();
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("SKILL.md"), "mine\n").unwrap();
    let goose = p.root.join(".goose/skills/log-search");
    std::fs::create_dir_all(goose.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("../../../mine/log-search", &goose).unwrap();
    std::fs::remove_dir_all(p.installed("log-search")).unwrap();

    let out = p.run(&["status"]);
    out.code(0);
    assert!(
        out.out()
            .contains("  not skillcat's: .claude/skills/log-search (left as it is)"),
        "{}",
        out.out()
    );
    assert!(
        out.out()
            .contains("  missing: the folder .agents/skills/log-search is gone (`skillcat install` puts it back)"),
        "{}",
        out.out()
    );

    let out = p.run(&["remove", "log-search"]);
    out.code(0);
    assert!(
        out.out()
            .contains("removed log-search (from the lockfile; none of its folders was there)"),
        "{}",
        out.out()
    );
    assert_eq!(
        std::fs::read_to_string(claude.join("SKILL.md")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        std::fs::read_link(&goose).unwrap(),
        Path::new("../../../mine/log-search")
    );

    // The same with the canonical folder in place: only skillcat's own link goes.
    std::fs::remove_file(&goose).unwrap();
    p.run(&["add", "../src", "log-search", "--agent", "goose"])
        .code(0);
    p.run(&["remove", "log-search"]).code(0);
    assert!(!is_there(&goose));
    assert!(!p.installed("log-search").exists());
    assert_eq!(
        std::fs::read_to_string(claude.join("SKILL.md")).unwrap(),
        "mine\n"
    );
}

#[test]
fn a_frozen_install_after_a_yank_restores_the_pinned_version_and_names_the_yank() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish,yank");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let server = Server::start(dir, &[]);
    let url = server.url.clone();
    let run = |args: &[&str]| {
        Skillcat::new(args)
            .cwd(dir)
            .env_remove("SKILLCAT_TOKEN")
            .run()
    };
    // Another skill keeps the index from ever being empty.
    for (name, v) in [
        ("log-search", "1.1.0"),
        ("log-search", "1.2.0"),
        ("other", "1.0.0"),
    ] {
        let root = dir.join(format!("v{v}/{name}"));
        crate::support::write_skill(&root, &doc(name, v, v), &[]);
        run(&[
            "publish",
            &url,
            &root.to_string_lossy(),
            "--token-file",
            "ci.token",
        ])
        .code(0);
    }
    let p = Project::new();
    p.run(&["add", &url, "log-search"]).code(0);
    assert_eq!(p.lock()["skills"]["log-search"]["version"], "1.2.0");
    let lock = p.lock_bytes();
    let digest = p.lock()["skills"]["log-search"]["digest"]
        .as_str()
        .unwrap()
        .to_string();

    run(&["yank", &url, "log-search@1.2.0", "--token-file", "ci.token"]).code(0);
    std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
    // A lockfile restores what it pins, a yanked version too (issue 51), and says so.
    let out = p.run(&["install", "--frozen"]);
    out.code(0).says(&[
        &format!("log-search@1.2.0 is yanked from {url}"),
        "restored because the lockfile pins it",
        "`skillcat update log-search`",
    ]);
    assert_eq!(p.digest_of(&p.installed("log-search")), digest);
    assert_eq!(p.lock_bytes(), lock, "--frozen writes nothing");
    // Moving on is new resolution: it skips the yanked version (a downgrade here).
    p.run(&["update", "log-search", "--allow-downgrade"])
        .code(0);
    assert_eq!(p.lock()["skills"]["log-search"]["version"], "1.1.0");

    // Every version yanked: the index no longer lists the skill, and the pinned version is
    // still restored, with the warning.
    run(&["yank", &url, "log-search@1.1.0", "--token-file", "ci.token"]).code(0);
    std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
    p.run(&["install", "--frozen"])
        .code(0)
        .says(&[&format!("log-search@1.1.0 is yanked from {url}")]);
    assert!(p.installed("log-search").join("SKILL.md").exists());
}

#[test]
fn dry_runs_show_the_plan_and_change_no_byte() {
    let p = Project::new();
    let src = skill(&p.path("src"), "log-search", "1.0.0", "search logs");
    let before = tree(&p.root);

    // add: nothing is created, not even .agents.
    let out = p.run(&[
        "add",
        "../src",
        "log-search",
        "--agent",
        "claude-code",
        "--dry-run",
    ]);
    out.code(0);
    for line in [
        "would install log-search 1.0.0 sha256:",
        "→ .agents/skills/log-search, .claude/skills/log-search",
        "skills-lock.json would change:\n  + log-search 1.0.0 sha256:",
        "dry run: nothing was changed",
    ] {
        assert!(out.out().contains(line), "{line:?} in {}", out.out());
    }
    assert_eq!(tree(&p.root), before, "add --dry-run changes nothing");

    // update: the new version, the folder it would replace, the lockfile's change.
    p.run(&["add", "../src", "log-search", "--agent", "claude-code"])
        .code(0);
    crate::support::write_skill(
        &src,
        &crate::support::project::doc("log-search", "1.1.0", "search logs better"),
        &[],
    );
    let before = tree(&p.root);
    let out = p.run(&["update", "--dry-run"]);
    out.code(0);
    for line in [
        "log-search: 1.0.0 sha256:",
        "→ 1.1.0 sha256:",
        "  would change .agents/skills/log-search",
        "skills-lock.json would change:\n  ~ log-search 1.0.0 sha256:",
        "dry run: nothing was changed",
    ] {
        assert!(out.out().contains(line), "{line:?} in {}", out.out());
    }
    assert_eq!(tree(&p.root), before, "update --dry-run changes nothing");

    // remove: every folder and link it would take, and the entry.
    let out = p.run(&["remove", "log-search", "--dry-run"]);
    out.code(0);
    for line in [
        "would remove log-search (.agents/skills/log-search, .claude/skills/log-search)",
        "skills-lock.json would change:\n  - log-search 1.0.0 sha256:",
        "dry run: nothing was changed",
    ] {
        assert!(out.out().contains(line), "{line:?} in {}", out.out());
    }
    assert_eq!(tree(&p.root), before, "remove --dry-run changes nothing");

    // A dry run refuses to recover what an interrupted operation left (that moves folders).
    let journal = p.root.join(".agents/.skillcat-journal.json");
    std::fs::write(&journal, "{}").unwrap();
    let before = tree(&p.root);
    p.run(&["remove", "log-search", "--dry-run"])
        .code(1)
        .says(&[
            "interrupted",
            ".agents/.skillcat-journal.json",
            "skillcat status",
        ]);
    assert_eq!(tree(&p.root), before);
    std::fs::remove_file(&journal).unwrap();

    // The same commands without --dry-run do what was shown.
    p.run(&["update"]).code(0);
    assert_eq!(p.lock()["skills"]["log-search"]["version"], "1.1.0");
    p.run(&["remove", "log-search"]).code(0);
    assert!(!is_there(&p.root.join(".claude/skills/log-search")));
}

#[test]
fn an_unknown_name_lists_the_names_the_source_has_as_show_does() {
    let p = Project::new();
    for n in ["beta", "alpha"] {
        skill(&p.path("src"), n, "1.0.0", n);
    }
    let add = p.run(&["add", "../src", "gamma"]);
    add.code(1)
        .says(&["no skill named 'gamma' in ../src (skills: alpha, beta)"]);
    let show = p.run(&["show", "../src", "gamma"]);
    show.code(1)
        .says(&["no skill named 'gamma' in", "(skills: alpha, beta)"]);

    // A registry names its skills the same way.
    let db = p.path("skills.db");
    let db_s = db.to_string_lossy().to_string();
    crate::support::bin::run(&["registry", "init", &db_s]).code(0);
    crate::support::bin::run(&[
        "registry",
        "publish",
        &db_s,
        &p.path("src/alpha").to_string_lossy(),
    ])
    .code(0);
    p.run(&["add", &db_s, "gamma"])
        .code(1)
        .says(&[&format!("no skill named 'gamma' in {db_s} (skills: alpha)")]);
    p.run(&["add", &db_s, "alpha@9.9.9"])
        .code(1)
        .says(&["alpha@9.9.9 is not in the registry (it holds alpha 1.0.0)"]);
    // And every version yanked is said as such.
    crate::support::bin::run(&["registry", "yank", &db_s, "alpha@1.0.0"]).code(0);
    p.run(&["add", &db_s, "alpha"]).code(1).says(&[
        "every version of alpha is yanked (1.0.0 (yanked))",
        "alpha@VERSION",
    ]);
}

#[test]
fn status_has_a_header_row_and_aligned_columns() {
    let p = Project::new();
    skill(&p.path("src"), "a", "1.0.0", "a");
    skill(&p.path("src"), "log-search", "10.0.0", "b");
    p.run(&["add", "../src"]).code(0);
    let out = p.run(&["status"]);
    out.code(0);
    let lines: Vec<&str> = out.out().lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.out());
    let header = lines[0];
    assert!(
        header.starts_with("NAME        STATE  VERSION  DIGEST"),
        "{header}"
    );
    assert!(header.ends_with("SOURCE        SIGNER"), "{header}");
    for row in &lines[1..] {
        // Each column starts where its header does.
        for col in ["STATE", "VERSION", "DIGEST", "SOURCE", "SIGNER"] {
            let at = header.find(col).unwrap();
            assert_eq!(&row[at - 2..at], "  ", "{col} of {row:?} under {header:?}");
            assert_ne!(&row[at..at + 1], " ", "{col} of {row:?} under {header:?}");
        }
    }
    assert!(
        lines[1].starts_with("a           ok     1.0.0    sha256:"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("log-search  ok     10.0.0   sha256:"),
        "{}",
        lines[2]
    );
}
