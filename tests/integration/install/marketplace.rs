//! Claude Code plugin marketplaces both ways, through the real binary and the real Claude Code
//! CLI (npm `@anthropic-ai/claude-code@2.1.332`): a marketplace (`fixtures/marketplace`, the
//! shape of anthropics/skills: several plugins over one `skills/` folder, `"source": "./"`,
//! `"strict": false`) read as a source with `add --plugin`, and a registry exported with
//! `export --marketplace` that `claude plugin validate`, `marketplace add` and `install` take.
//!
//! `scripts/test` installs the CLI and sets `SKILLCAT_CLAUDE_CODE` to the folder holding its
//! `node_modules`. Without it the tests that run it fail, naming that step;
//! `SKILLCAT_SKIP_CLAUDE_CODE=1` skips them on a machine without npm (never in CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::bin::manifest_dir;
use crate::support::copy_dir;
use crate::support::project::{Project, commit_all, skill};

fn fixture() -> PathBuf {
    manifest_dir().join("fixtures/marketplace")
}

/// The `claude` binary, or `None` when skipped on purpose.
fn claude() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("SKILLCAT_CLAUDE_CODE") else {
        if std::env::var_os("SKILLCAT_SKIP_CLAUDE_CODE").is_some_and(|v| v == "1")
            && std::env::var_os("CI").is_none()
        {
            eprintln!("skipped: SKILLCAT_SKIP_CLAUDE_CODE=1");
            return None;
        }
        panic!(
            "SKILLCAT_CLAUDE_CODE is not set: run the tests with scripts/test, which installs \
             Claude Code (npm install @anthropic-ai/claude-code@2.1.332) and sets it \
             (SKILLCAT_SKIP_CLAUDE_CODE=1 skips these tests on a machine without npm, never in CI)"
        );
    };
    let dir = PathBuf::from(dir).join("node_modules/@anthropic-ai");
    let version = std::fs::read_to_string(dir.join("claude-code/package.json")).unwrap_or_default();
    assert!(
        version.contains("\"version\": \"2.1.332\""),
        "@anthropic-ai/claude-code@2.1.332 is the version tested: run scripts/test to install it"
    );
    // The package's launcher, else the native binary of its platform package.
    ["claude-code/bin/claude.exe", "claude-code-linux-x64/claude"]
        .iter()
        .map(|p| dir.join(p))
        .find(|p| p.is_file())
        .or_else(|| panic!("no claude binary under {}", dir.display()))
}

/// Runs `claude ARGS` with the project's scratch home and no network beyond what it is told to
/// read; returns (exit code, stdout + stderr).
fn run_claude(claude: &Path, p: &Project, args: &[&str]) -> (i32, String) {
    let out = Command::new(claude)
        .args(args)
        .current_dir(&p.root)
        .env("HOME", &p.home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[track_caller]
fn claude_ok(claude: &Path, p: &Project, args: &[&str]) -> String {
    let (code, text) = run_claude(claude, p, args);
    assert_eq!(code, 0, "claude {args:?}:\n{text}");
    text
}

#[test]
fn add_plugin_installs_exactly_that_plugins_skills() {
    let p = Project::new();
    let market = p.path("market");
    copy_dir(&fixture(), &market);
    let m = market.to_str().unwrap();
    p.run(&[
        "add",
        m,
        "--plugin",
        "document-skills",
        "--agent",
        "claude-code",
    ])
    .code(0);
    assert!(p.installed("pdf").join("SKILL.md").is_file());
    assert!(p.installed("xlsx").join("SKILL.md").is_file());
    assert!(!p.installed("brand-guide").exists());
    assert!(!p.installed("canvas").exists());
    let lock = p.lock();
    let names: Vec<_> = lock["skills"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(names, ["pdf", "xlsx"]);

    // A plugin the marketplace does not have: refused, naming the ones it has; exit 1 as for
    // a skill the source lacks (2 is for usage errors). Origin: step 29 (issue 51: it was 2).
    let out = p.run(&["add", m, "--plugin", "nope"]);
    out.code(1);
    out.says(&["nope", "document-skills", "example-skills"]);

    // The same marketplace as a git repository.
    commit_all(&market, "market");
    let q = Project::new();
    let url = format!("git+file://{m}");
    q.run(&[
        "add",
        &url,
        "--plugin",
        "example-skills",
        "--agent",
        "claude-code",
    ])
    .code(0);
    assert!(q.installed("brand-guide").is_dir() && q.installed("canvas").is_dir());
    assert!(!q.installed("pdf").exists());
    let lock = q.lock();
    assert_eq!(
        lock["skills"]["canvas"]["skillPath"],
        "skills/canvas/SKILL.md"
    );
    // Restored exactly as pinned, from the lockfile alone.
    std::fs::remove_dir_all(q.root.join(".agents")).unwrap();
    q.run(&["install", "--frozen"]).code(0);
    assert!(q.installed("canvas").join("SKILL.md").is_file());
}

#[test]
fn list_shows_each_skills_plugin_and_a_broken_marketplace_precisely() {
    let p = Project::new();
    let market = p.path("market");
    copy_dir(&fixture(), &market);
    let m = market.to_str().unwrap();
    let out = p.run(&["list", m, "--format", "json"]);
    out.code(0);
    let json = out.json();
    let plugins: Vec<(String, String)> = json["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["plugins"][0].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    assert_eq!(
        plugins,
        [
            ("pdf".into(), "document-skills".into()),
            ("xlsx".into(), "document-skills".into()),
            ("brand-guide".into(), "example-skills".into()),
            ("canvas".into(), "example-skills".into()),
        ]
    );

    // A duplicate plugin name, then a missing path: each named, exit 1.
    let catalog = market.join(".claude-plugin/marketplace.json");
    let original = std::fs::read_to_string(&catalog).unwrap();
    std::fs::write(
        &catalog,
        original.replace("\"example-skills\"", "\"document-skills\""),
    )
    .unwrap();
    let out = p.run(&["list", m]);
    assert_ne!(out.code, 0);
    out.says(&[
        "marketplace.json",
        "the plugin name \"document-skills\" is used twice",
    ]);
    std::fs::write(
        &catalog,
        original.replace("./skills/canvas", "./skills/gone"),
    )
    .unwrap();
    let out = p.run(&["list", m]);
    assert_ne!(out.code, 0);
    out.says(&["plugin \"example-skills\": skill path \"./skills/gone\": no SKILL.md"]);
}

/// The fixture is a marketplace Claude Code itself accepts and installs from.
#[test]
fn the_fixture_is_a_marketplace_claude_code_installs() {
    let Some(claude) = claude() else { return };
    let p = Project::new();
    let market = p.path("market");
    copy_dir(&fixture(), &market);
    let m = market.to_str().unwrap();
    claude_ok(&claude, &p, &["plugin", "validate", m]);
    claude_ok(&claude, &p, &["plugin", "marketplace", "add", m]);
    claude_ok(
        &claude,
        &p,
        &["plugin", "install", "document-skills@fixture-skills"],
    );
}

/// `export --marketplace`: one plugin per skill that Claude Code validates, adds and installs,
/// each skill byte for byte (the registry's digest); a new version moves only its plugin.
#[test]
fn a_registry_exported_as_a_marketplace_installs_in_claude_code() {
    let p = Project::new();
    let src = p.path("src");
    skill(&src, "pdf-forms", "1.0.0", "Fill in forms.");
    skill(&src, "csv-clean", "2.1.0", "Clean CSV files.");
    let reg = p.path("team.db");
    let reg_s = reg.to_str().unwrap();
    p.run(&["registry", "init", reg_s]).code(0);
    for s in ["pdf-forms", "csv-clean"] {
        p.run(&["registry", "publish", reg_s, src.join(s).to_str().unwrap()])
            .code(0);
    }
    let out_dir = p.path("market");
    let out_s = out_dir.to_str().unwrap();
    p.run(&[
        "export",
        reg_s,
        out_s,
        "--marketplace",
        "team-skills",
        "--owner",
        "Team",
    ])
    .code(0);
    let catalog: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out_dir.join(".claude-plugin/marketplace.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(catalog["name"], "team-skills");
    assert_eq!(catalog["owner"]["name"], "Team");
    let versions = |c: &serde_json::Value| -> Vec<(String, String)> {
        c["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_string(),
                    e["version"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        versions(&catalog),
        [
            ("csv-clean".to_string(), "2.1.0".to_string()),
            ("pdf-forms".to_string(), "1.0.0".to_string())
        ]
    );
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out_dir.join("plugins/pdf-forms/.claude-plugin/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["name"], "pdf-forms");
    assert_eq!(manifest["version"], "1.0.0");
    assert_eq!(manifest["author"]["name"], "Team");
    let exported = out_dir.join("plugins/pdf-forms/skills/pdf-forms");
    let reg_digest = p.run(&["list", reg_s, "--format", "json"]).json()["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "pdf-forms")
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(p.digest_of(&exported), reg_digest);
    // What skillcat exports, skillcat reads back as a marketplace.
    p.run(&["list", out_s, "--format", "json"]).code(0);

    // Reserved names are refused with Claude Code's reason, nothing written.
    let refused = p.path("refused");
    let out = p.run(&[
        "export",
        reg_s,
        refused.to_str().unwrap(),
        "--marketplace",
        "anthropic-agent-skills",
    ]);
    assert_ne!(out.code, 0);
    out.says(&["reserved for official Anthropic marketplaces"]);
    assert!(!refused.join(".claude-plugin").exists());

    if let Some(claude) = claude() {
        let validated = claude_ok(&claude, &p, &["plugin", "validate", out_s]);
        // The export says what the marketplace is: Claude Code's validator has nothing to ask.
        assert!(
            !validated.contains("No marketplace description"),
            "{validated}"
        );
        claude_ok(&claude, &p, &["plugin", "marketplace", "add", out_s]);
        claude_ok(&claude, &p, &["plugin", "install", "pdf-forms@team-skills"]);
        let installed = p
            .home
            .join(".claude/plugins/cache/team-skills/pdf-forms/1.0.0/skills/pdf-forms");
        assert!(
            installed.join("SKILL.md").is_file(),
            "{}",
            installed.display()
        );
        assert_eq!(p.digest_of(&installed), reg_digest);
    }

    // A new version of one skill: re-exporting moves only that plugin's version.
    skill(&src, "pdf-forms", "1.1.0", "Fill in forms, faster.");
    p.run(&[
        "registry",
        "publish",
        reg_s,
        src.join("pdf-forms").to_str().unwrap(),
    ])
    .code(0);
    p.run(&[
        "export",
        reg_s,
        out_s,
        "--marketplace",
        "team-skills",
        "--owner",
        "Team",
        "--force",
    ])
    .code(0);
    let again: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out_dir.join(".claude-plugin/marketplace.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        versions(&again),
        [
            ("csv-clean".to_string(), "2.1.0".to_string()),
            ("pdf-forms".to_string(), "1.1.0".to_string())
        ]
    );
}

/// Plugins held in other repositories (`url` pinned by `sha`, `git-subdir`), read through the
/// git source: the pinned commit, not the branch's newest, is what is installed and restored.
#[test]
fn plugins_in_other_repositories_are_read_at_their_pinned_commit() {
    let p = Project::new();
    let work = p.path("work");
    skill(&work.join("skills"), "deploy", "1.0.0", "Deploy it.");
    skill(&work.join("tools/skills"), "lint", "1.0.0", "Lint it.");
    // The plugin's own manifest names one more folder (it travels through the git source).
    skill(&work.join("tools/more"), "format", "1.0.0", "Format it.");
    std::fs::create_dir_all(work.join("tools/.claude-plugin")).unwrap();
    std::fs::write(
        work.join("tools/.claude-plugin/plugin.json"),
        r#"{"name": "tools", "skills": ["./more/format"]}"#,
    )
    .unwrap();
    let pinned = commit_all(&work, "one");
    skill(&work.join("skills"), "deploy", "2.0.0", "Deploy it, newer.");
    commit_all(&work, "two");
    let served = p.path("served");
    std::fs::create_dir_all(&served).unwrap();
    crate::support::project::git(
        &served,
        &["clone", "-q", "--bare", work.to_str().unwrap(), "plug.git"],
    );
    let d = super::commands::git_daemon(&served);
    let url = format!("git://127.0.0.1:{}/plug.git", d.port);
    let market = p.path("market");
    std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        format!(
            r#"{{"name": "remote-skills", "owner": {{"name": "Ops"}}, "plugins": [
              {{"name": "ops", "source": {{"source": "url", "url": "{url}", "sha": "{pinned}"}}}},
              {{"name": "tools", "source": {{"source": "git-subdir", "url": "{url}", "path": "tools"}}}}
            ]}}"#
        ),
    )
    .unwrap();
    let m = market.to_str().unwrap();
    let out = p.run(&["list", m, "--format", "json"]);
    out.code(0);
    out.says(&["plugin \"tools\"", "is not pinned by a sha"]);
    let rows: Vec<(String, String, String)> = out.json()["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["root"].as_str().unwrap().to_string(),
                s["plugins"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("deploy".into(), "@ops/skills/deploy".into(), "ops".into()),
            ("format".into(), "@tools/more/format".into(), "tools".into()),
            ("lint".into(), "@tools/skills/lint".into(), "tools".into()),
        ]
    );
    p.run(&["add", m, "--plugin", "ops", "--agent", "claude-code"])
        .code(0);
    let doc = std::fs::read_to_string(p.installed("deploy").join("SKILL.md")).unwrap();
    assert!(doc.contains("\"1.0.0\""), "{doc}");
    assert!(!p.installed("lint").exists());
    // Restored from the lockfile: the same pinned bytes.
    std::fs::remove_dir_all(p.root.join(".agents")).unwrap();
    p.run(&["install", "--frozen"]).code(0);
    let again = std::fs::read_to_string(p.installed("deploy").join("SKILL.md")).unwrap();
    assert_eq!(again, doc);
}
