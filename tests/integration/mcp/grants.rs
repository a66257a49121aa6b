//! The operator's grants for an MCP server, and hints a model can act on (step 29, item 12):
//! `skillcat mcp --allow-read/--allow-write/--allow-net` (as `run`'s flags), the per-skill
//! tables of `skillcat.toml` (`[skills.NAME] allow_read = […]`), and a failed call's text that
//! says what the model can do or ask the operator for — never a flag it cannot pass.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value as Json, json};

use crate::support::{sandbox_tempdir, spawn_mcp_in, write_skill};

/// A working directory with `data/notes.txt`, a home with an empty configuration (the default
/// ceiling: the working directory), and a skill whose script prints a file.
struct World {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    home: PathBuf,
    skills: PathBuf,
    notes: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = sandbox_tempdir("skillcat-grants-");
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (cwd, home, skills) = (root.join("cwd"), root.join("home"), root.join("skills"));
        std::fs::create_dir_all(cwd.join("data")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let notes = cwd.join("data/notes.txt");
        std::fs::write(&notes, "granted notes\n").unwrap();
        write_skill(
            &skills.join("reader"),
            "---\nname: reader\ndescription: Reads a file.\n---\nBody\n",
            &[(
                "scripts/show.py",
                "#!/usr/bin/python3\n# Print a file.\nimport sys\nprint(open(sys.argv[1]).read(), end='')\n",
                true,
            )],
        );
        World {
            _dir: dir,
            cwd,
            home,
            skills,
            notes,
        }
    }

    /// One call of `run_reader_show` on `path` by a server started with `flags`.
    async fn show(&self, flags: &[&str], path: &Path) -> Json {
        let skills = self.skills.to_string_lossy().into_owned();
        let args: Vec<&str> = [&[skills.as_str()][..], flags].concat();
        let (mut child, _tmp) = spawn_mcp_in(&self.cwd, Some(&self.home), &args);
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
        let params = CallToolRequestParams::new("run_reader_show").with_arguments(
            json!({"args": path.to_string_lossy()})
                .as_object()
                .unwrap()
                .clone(),
        );
        let r = tokio::time::timeout(Duration::from_secs(60), client.call_tool(params))
            .await
            .expect("the call ends")
            .expect("a tool result");
        client.cancel().await.unwrap();
        let _ = child.wait().await;
        serde_json::to_value(r).unwrap()
    }
}

fn text(r: &Json) -> &str {
    r["content"][0]["text"].as_str().unwrap_or_default()
}

/// Without a grant the script cannot see the file; the text the model reads says what it can
/// do and what to ask the operator for, in the server's terms.
#[tokio::test(flavor = "multi_thread")]
async fn a_hidden_file_gets_a_hint_the_model_can_act_on() {
    let w = World::new();
    let r = w.show(&[], &w.notes).await;
    assert_eq!(r["isError"], json!(true), "{r}");
    let t = text(&r);
    assert!(t.contains("FileNotFoundError"), "{t}");
    let hint = t
        .lines()
        .find(|l| l.starts_with("[hint:"))
        .unwrap_or_else(|| panic!("a hint for the model: {t}"));
    let path = w.notes.display().to_string();
    for want in [
        format!("skillcat mcp … --allow-read {path}"),
        format!("allow_read = [\"{path}\"]` under [skills.reader]"),
        "work directory".to_string(),
    ] {
        assert!(hint.contains(&want), "{want:?} in {hint}");
    }
    assert!(!t.contains("run with --allow-read"), "{t}");
    // A file outside the server's working directory that only the model's arguments name
    // gets no hint: it would tell the model what exists on the host.
    let outside = w.cwd.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "x\n").unwrap();
    let r = w.show(&[], &outside).await;
    let t = text(&r);
    assert!(t.contains("FileNotFoundError"), "{t}");
    assert!(!t.contains("[hint:"), "{t}");
}

/// `skillcat mcp --allow-read PATH` grants it to the server's script tools, as `run`'s flag.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_allow_read_grants_a_path() {
    let w = World::new();
    let r = w.show(&["--allow-read", "data/notes.txt"], &w.notes).await;
    assert_eq!(r["isError"], json!(false), "{r}");
    assert_eq!(text(&r), "granted notes\n", "{r}");
}

/// A path outside the ceiling is a usage error at start, as for `run` (never dropped).
#[test]
fn mcp_allow_read_outside_the_ceiling_is_refused() {
    let w = World::new();
    let o = crate::support::bin::Skillcat::new(&[
        "mcp",
        w.skills.to_str().unwrap(),
        "--allow-read",
        "/etc/hostname",
    ])
    .cwd(&w.cwd)
    .env("HOME", &w.home)
    .env_remove("SKILLCAT_CONFIG")
    .deadline(Duration::from_secs(60))
    .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains(
            "--allow-read /etc/hostname: /etc/hostname is outside the configured ceiling"
        ),
        "{}",
        o.stderr
    );
}

/// A `[skills.NAME]` table grants that skill's scripts, in `mcp` and in `run` alike.
#[tokio::test(flavor = "multi_thread")]
async fn a_skills_table_grants_one_skill() {
    let w = World::new();
    let config = w.home.join("skillcat.toml");
    std::fs::write(
        &config,
        "[skills.reader]\nallow_read = [\"data/notes.txt\"]\n",
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let r = w.show(&["--config", &config], &w.notes).await;
    assert_eq!(r["isError"], json!(false), "{r}");
    assert_eq!(text(&r), "granted notes\n", "{r}");
    let o = crate::support::bin::Skillcat::new(&[
        "--config",
        &config,
        "run",
        w.skills.to_str().unwrap(),
        "reader",
        "show",
        "--args",
        w.notes.to_str().unwrap(),
    ])
    .cwd(&w.cwd)
    .env("HOME", &w.home)
    .env_remove("SKILLCAT_CONFIG")
    .deadline(Duration::from_secs(60))
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.out(), "granted notes\n");
    // Another skill's table grants this one nothing.
    std::fs::write(
        &config,
        "[skills.other]\nallow_read = [\"data/notes.txt\"]\n",
    )
    .unwrap();
    let r = w.show(&["--config", &config], &w.notes).await;
    assert_eq!(r["isError"], json!(true), "{r}");
}

/// A host outside the grant: the model reads what to ask the operator for, not `run`'s flag.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_host_is_the_operators_to_grant() {
    let w = World::new();
    let config = w.home.join("skillcat.toml");
    std::fs::write(&config, "[sandbox]\nnetwork = true\n").unwrap();
    write_skill(
        &w.skills.join("net"),
        "---\nname: net\ndescription: Fetches.\nmetadata:\n  skillcat.network: \"api.test:443\"\n---\nBody\n",
        &[(
            "scripts/fetch.sh",
            "#!/bin/sh\n# Fetch a page.\ncurl -sS https://other.test/ -o /dev/null\n",
            true,
        )],
    );
    let skills = w.skills.to_string_lossy().into_owned();
    let config = config.to_string_lossy().into_owned();
    let (mut child, _tmp) = spawn_mcp_in(&w.cwd, Some(&w.home), &[&skills, "--config", &config]);
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        client.call_tool(CallToolRequestParams::new("run_net_fetch")),
    )
    .await
    .expect("the call ends")
    .expect("a tool result");
    client.cancel().await.unwrap();
    let _ = child.wait().await;
    let r = serde_json::to_value(r).unwrap();
    let t = text(&r);
    assert!(t.contains("[network: refused other.test:443"), "{t}");
    assert!(
        t.contains("ask the operator to grant it (`skillcat mcp … --allow-net other.test:443`"),
        "{t}"
    );
    assert!(!t.contains("for one run"), "{t}");
}

/// A direct connection to an address (around the proxy) is refused with "Permission
/// denied": the model reads that it must connect to the granted name through the proxy
/// (step 29, item 13).
#[tokio::test(flavor = "multi_thread")]
async fn a_direct_connection_tells_the_model_to_use_the_proxy() {
    let w = World::new();
    let config = w.home.join("skillcat.toml");
    std::fs::write(&config, "[sandbox]\nnetwork = true\n").unwrap();
    write_skill(
        &w.skills.join("net"),
        "---\nname: net\ndescription: Connects.\nmetadata:\n  skillcat.network: \"api.test:443\"\n---\nBody\n",
        &[(
            "scripts/conn.py",
            "#!/usr/bin/python3\n# Connect to an address.\nimport socket\nsocket.create_connection((\"192.0.2.7\", 443), timeout=5)\n",
            true,
        )],
    );
    let skills = w.skills.to_string_lossy().into_owned();
    let config = config.to_string_lossy().into_owned();
    let (mut child, _tmp) = spawn_mcp_in(&w.cwd, Some(&w.home), &[&skills, "--config", &config]);
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("MCP initialisation");
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        client.call_tool(CallToolRequestParams::new("run_net_conn")),
    )
    .await
    .expect("the call ends")
    .expect("a tool result");
    client.cancel().await.unwrap();
    let _ = child.wait().await;
    let r = serde_json::to_value(r).unwrap();
    let t = text(&r);
    assert!(t.contains("Permission denied"), "{t}");
    let hint = t
        .lines()
        .find(|l| l.starts_with("[hint:"))
        .unwrap_or_else(|| panic!("a hint for the model: {t}"));
    for want in ["192.0.2.7", "proxy", "HTTPS_PROXY", "api.test:443"] {
        assert!(hint.contains(want), "{want} in {hint}");
    }
}

/// A table's path outside the ceiling is not granted, and stderr says so (a table is not a
/// flag: nothing is refused, nothing dropped without a word).
#[test]
fn a_skills_tables_grant_outside_the_ceiling_is_named() {
    let w = World::new();
    let config = w.home.join("skillcat.toml");
    std::fs::write(
        &config,
        "[skills.reader]\nallow_read = [\"/etc/hostname\"]\n",
    )
    .unwrap();
    let o = crate::support::bin::Skillcat::new(&[
        "--config",
        config.to_str().unwrap(),
        "run",
        w.skills.to_str().unwrap(),
        "reader",
        "show",
        "--args",
        "/etc/hostname",
    ])
    .cwd(&w.cwd)
    .env("HOME", &w.home)
    .env_remove("SKILLCAT_CONFIG")
    .deadline(Duration::from_secs(60))
    .run();
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains(
            "warning: [skills.reader] allow_read \"/etc/hostname\": /etc/hostname is outside the configured ceiling"
        ),
        "{}",
        o.stderr
    );
}

/// A project's `skillcat.toml` the user has not trusted narrows, never widens: its
/// `[skills.NAME]` grants count only as far as the user's own file grants the same skill, and
/// fully once `skillcat trust project` records it.
#[test]
fn an_untrusted_projects_skills_table_grants_nothing_the_user_did_not() {
    let w = World::new();
    std::fs::write(
        w.cwd.join("skillcat.toml"),
        "[skills.reader]\nallow_read = [\"data/notes.txt\"]\n",
    )
    .unwrap();
    let run = || {
        crate::support::bin::Skillcat::new(&[
            "run",
            w.skills.to_str().unwrap(),
            "reader",
            "show",
            "--args",
            w.notes.to_str().unwrap(),
        ])
        .cwd(&w.cwd)
        .env("HOME", &w.home)
        .env_remove("SKILLCAT_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .deadline(Duration::from_secs(60))
        .run()
    };
    let o = run();
    assert_ne!(
        o.code,
        0,
        "an untrusted checkout granted a read: {}",
        o.out()
    );
    assert!(!o.out().contains("granted notes"), "{}", o.out());
    // The user's own file granting the same skill the same path: the project may keep it.
    let own = w.home.join(".config/skillcat");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("skillcat.toml"),
        "[skills.reader]\nallow_read = [\"data/notes.txt\"]\n",
    )
    .unwrap();
    let o = run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.out(), "granted notes\n");
    // Trusted: the project's own grants count.
    std::fs::remove_file(own.join("skillcat.toml")).unwrap();
    let t = crate::support::bin::Skillcat::new(&["trust", "project"])
        .cwd(&w.cwd)
        .env("HOME", &w.home)
        .env_remove("SKILLCAT_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .run();
    assert_eq!(t.code, 0, "{}", t.stderr);
    let o = run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.out(), "granted notes\n");
}
