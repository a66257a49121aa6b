//! Script tools through the library: discovery, argv, results and error codes, the gate, the
//! policy check, workspaces. Real processes, with the `skillcat` binary as the sandbox helper.
//!
//! Origin: step 6 (issue 7: script tools and confined execution).

#![cfg(target_os = "linux")]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value as Json, json};
use skillcat::capability::{Grant, Trust};
use skillcat::script::{
    AllowAll, Confinement, DenyAll, Gate, GateDecision, GateError, GateRequest, LoadedSkill,
    Runner, RunnerConfig, ScriptError,
};
use skillcat::source::{self, DirOptions, DirSource, SourceExt};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: crate::support::sandbox_tempdir("skillcat-script-"),
        }
    }

    fn base(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Writes a skill `name` with extra frontmatter and scripts (path, text, executable).
    fn skill(&self, name: &str, extra: &str, files: &[(&str, &str, bool)]) -> PathBuf {
        let root = self.dir.path().join("skills").join(name);
        let doc = format!("---\nname: {name}\ndescription: A test skill.\n{extra}---\n\nBody.\n");
        crate::support::write_skill(&root, &doc, files);
        root
    }

    fn config(&self, policy: Grant) -> RunnerConfig {
        let mut config =
            RunnerConfig::new(policy, skillcat::context::Env::from_process().user_dirs());
        config.helper = PathBuf::from(env!("CARGO_BIN_EXE_skillcat"));
        config.workspace_base = self.base();
        config
    }

    fn runner(&self) -> Runner {
        Runner::new(self.config(policy()), Arc::new(AllowAll)).unwrap()
    }
}

fn policy() -> Grant {
    Grant {
        fs_read: vec!["/".into()],
        fs_write: vec!["/".into()],
        network: skillcat::capability::Network::Off,
        timeout: Duration::from_secs(60),
        trust: Trust::Core,
    }
}

fn grant(timeout: u64) -> Grant {
    Grant {
        fs_read: vec![],
        fs_write: vec![],
        network: skillcat::capability::Network::Off,
        timeout: Duration::from_secs(timeout),
        trust: Trust::External,
    }
}

async fn load_dir(runner: &Runner, dir: &Path, grant: Grant) -> Result<LoadedSkill, ScriptError> {
    let src = DirSource::open_skill(dir, DirOptions::default()).unwrap();
    let skill = src.load("").await.unwrap();
    runner.load(Arc::new(src), skill, grant).await
}

const HELLO: &str = "#!/bin/sh\n# Say hello.\necho hello \"$@\"\n";
const ARGS: &str = "#!/bin/sh\n# Print each argument.\nprintf '[%s]\\n' \"$@\"\n";

#[tokio::test]
async fn a_trivial_script_runs_confined_and_prints() {
    let env = Env::new();
    let dir = env.skill("hello", "", &[("scripts/say-hello.sh", HELLO, true)]);
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let tool = &skill.tools().tools[0];
    assert_eq!(tool.name, "run_hello_say_hello");
    assert_eq!(tool.description, "Say hello.");
    let out = runner.run(&skill, "say_hello", &Json::Null).await.unwrap();
    assert_eq!(out.to_model_text(), "hello\n");
    assert_eq!(out.exit_code, 0);
    match &out.confinement {
        Confinement::Confined(summary) => {
            assert!(summary.contains("landlock"), "{summary}");
            assert!(summary.contains("seccomp"), "{summary}");
        }
        other => panic!("{other:?}"),
    }
    // The full tool name works as well as the name part.
    let out = runner
        .run(&skill, "run_hello_say_hello", &json!({"args": "you"}))
        .await
        .unwrap();
    assert_eq!(out.output.text, "hello you\n");
}

#[tokio::test]
async fn args_are_split_like_a_shell_and_never_expanded() {
    let env = Env::new();
    let dir = env.skill("args", "", &[("scripts/args.sh", ARGS, true)]);
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let out = runner
        .run(
            &skill,
            "args",
            &json!({"args": "a 'b c' \"$HOME\" '*' ; $(id) `id` x\\ y"}),
        )
        .await
        .unwrap();
    assert_eq!(
        out.output.text,
        "[a]\n[b c]\n[$HOME]\n[*]\n[;]\n[$(id)]\n[`id`]\n[x y]\n"
    );
    let e = runner
        .run(&skill, "args", &json!({"args": "'unterminated"}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_INVALID_ARGS");
}

#[tokio::test]
async fn declared_parameters_build_argv() {
    let env = Env::new();
    let declared = "scripts:\n  - name: deploy\n    path: tools/deploy.sh\n    description: Deploy somewhere.\n    interpreter: sh\n    params:\n      - name: target\n        type: string\n        kind: positional\n        required: true\n        description: Where to deploy.\n      - name: replicas\n        type: integer\n      - name: verbose\n        type: boolean\n      - name: dry-run\n        type: boolean\n";
    let dir = env.skill("deployer", declared, &[("tools/deploy.sh", ARGS, false)]);
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let tool = skill.tools().find("deploy").unwrap();
    assert_eq!(tool.name, "run_deployer_deploy");
    assert_eq!(tool.description, "Deploy somewhere.");
    assert_eq!(
        tool.schema(),
        json!({
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "Where to deploy."},
                "replicas": {"type": "integer"},
                "verbose": {"type": "boolean"},
                "dry-run": {"type": "boolean"}
            },
            "required": ["target"],
            "additionalProperties": false
        })
    );
    let out = runner
        .run(
            &skill,
            "deploy",
            &json!({"target": "prod eu", "replicas": 3, "verbose": true, "dry-run": false}),
        )
        .await
        .unwrap();
    assert_eq!(
        out.output.text,
        "[prod eu]\n[--replicas]\n[3]\n[--verbose]\n"
    );
    let e = runner
        .run(&skill, "deploy", &json!({"target": "x", "replicas": "3"}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_INVALID_ARGS");
    assert!(
        e.to_string()
            .contains("parameter 'replicas' must be an integer, not a string"),
        "{e}"
    );
    let e = runner.run(&skill, "deploy", &json!({})).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("missing required parameter 'target'"),
        "{e}"
    );
}

#[tokio::test]
async fn python_scripts_run() {
    let env = Env::new();
    let py = "#!/usr/bin/env python3\n# Python.\nimport sys, os\nprint('py', sys.argv[1:], os.getcwd() == os.environ['HOME'])\n";
    let dir = env.skill("py", "", &[("scripts/py.py", py, true)]);
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let out = runner
        .run(&skill, "py", &json!({"args": "a b"}))
        .await
        .unwrap();
    assert_eq!(out.output.text, "py ['a', 'b'] True\n");
}

#[tokio::test]
async fn stdout_and_stderr_share_one_ordered_stream() {
    let env = Env::new();
    let s = "#!/bin/sh\necho a\necho b >&2\necho c\n";
    let dir = env.skill("streams", "", &[("scripts/s.sh", s, true)]);
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    assert_eq!(
        runner
            .run(&skill, "s", &Json::Null)
            .await
            .unwrap()
            .output
            .text,
        "a\nb\nc\n"
    );
}

#[tokio::test]
async fn a_non_zero_exit_is_a_failure_with_its_code() {
    let env = Env::new();
    let s = "#!/bin/sh\necho bad\nexit 7\n";
    let dir = env.skill("failing", "", &[("scripts/fail.sh", s, true)]);
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let e = runner.run(&skill, "fail", &Json::Null).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_FAILED");
    assert!(matches!(
        e,
        ScriptError::Failed {
            code: 7,
            signal: None,
            ..
        }
    ));
    assert_eq!(e.to_model_text(), "Error (exit 7):\nbad\n");

    // A host that opts out gets a plain result.
    let mut config = env.config(policy());
    config.fail_on_nonzero = false;
    let runner = Runner::new(config, Arc::new(AllowAll)).unwrap();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let out = runner.run(&skill, "fail", &Json::Null).await.unwrap();
    assert_eq!(out.exit_code, 7);
    assert_eq!(out.to_model_text(), "bad\n[exit status 7]");
}

#[tokio::test]
async fn a_timeout_has_its_own_code() {
    let env = Env::new();
    let s = "#!/bin/sh\necho started\nsleep 100\n";
    let dir = env.skill("slow", "", &[("scripts/slow.sh", s, true)]);
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(1)).await.unwrap();
    let e = runner.run(&skill, "slow", &Json::Null).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_TIMEOUT");
    assert_eq!(e.to_model_text(), "Error (timed out):\nstarted\n");
}

struct Counting(AtomicUsize, GateDecision);

#[async_trait]
impl Gate for Counting {
    async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(self.1.clone())
    }
}

struct Broken;

#[async_trait]
impl Gate for Broken {
    async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        Err("the approval service is down".into())
    }
}

struct Panicking;

#[async_trait]
impl Gate for Panicking {
    async fn check(&self, _: &GateRequest<'_>) -> Result<GateDecision, GateError> {
        panic!("gate bug")
    }
}

#[tokio::test]
async fn the_gate_decides_before_any_process_starts() {
    let env = Env::new();
    let dir = env.skill("gated", "", &[("scripts/hello.sh", HELLO, true)]);
    let cases: Vec<(Arc<dyn Gate>, &str, &str)> = vec![
        (
            Arc::new(DenyAll("not today".into())),
            "E_SKILL_SCRIPT_DENIED",
            "not today",
        ),
        (
            Arc::new(Counting(
                AtomicUsize::new(0),
                GateDecision::Unavailable("no user".into()),
            )),
            "E_SKILL_SCRIPT_GATE_UNAVAILABLE",
            "no user",
        ),
        (
            Arc::new(Broken),
            "E_SKILL_SCRIPT_GATE_UNAVAILABLE",
            "the approval service is down",
        ),
        (
            Arc::new(Panicking),
            "E_SKILL_SCRIPT_GATE_UNAVAILABLE",
            "gate bug",
        ),
    ];
    for (gate, code, message) in cases {
        let runner = Runner::new(env.config(policy()), gate).unwrap();
        let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
        let e = runner.run(&skill, "hello", &Json::Null).await.unwrap_err();
        assert_eq!(e.code(), code);
        assert!(e.to_string().contains(message), "{e}");
        assert!(
            skill.workspace().is_none(),
            "nothing was materialised for a refused run"
        );
    }
}

#[tokio::test]
async fn a_grant_wider_than_the_session_policy_is_refused() {
    let env = Env::new();
    let dir = env.skill("wide", "", &[("scripts/hello.sh", HELLO, true)]);
    let gate = Arc::new(Counting(AtomicUsize::new(0), GateDecision::Allow));
    let mut narrow = policy();
    narrow.fs_write = vec![];
    narrow.fs_read = vec![env.dir.path().to_path_buf()];
    narrow.trust = Trust::External;
    let runner = Runner::new(env.config(narrow), gate.clone()).unwrap();
    let mut network = grant(30);
    network.network = skillcat::capability::Network::All;
    let mut write = grant(30);
    write.fs_write = vec![env.dir.path().to_path_buf()];
    let mut read = grant(30);
    read.fs_read = vec!["/etc".into()];
    let long = grant(61);
    let mut core = grant(30);
    core.trust = Trust::Core;
    for g in [network, write, read, long, core] {
        let skill = load_dir(&runner, &dir, g.clone()).await.unwrap();
        let e = runner.run(&skill, "hello", &Json::Null).await.unwrap_err();
        assert_eq!(e.code(), "E_SKILL_SCRIPT_POLICY_WIDENED", "{g:?}");
    }
    assert_eq!(
        gate.0.load(Ordering::SeqCst),
        0,
        "the gate is not asked about a widened grant"
    );
}

#[tokio::test]
async fn granted_paths_are_usable() {
    let env = Env::new();
    let data = env.dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(data.join("in.txt"), "input\n").unwrap();
    std::fs::set_permissions(data.join("in.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = "#!/bin/sh\ncat \"$1/in.txt\"\necho output > \"$1/out.txt\"\n";
    let dir = env.skill("io", "", &[("scripts/io.sh", s, true)]);
    let runner = env.runner();
    let mut g = grant(30);
    g.fs_read = vec![data.clone()];
    g.fs_write = vec![data.clone()];
    let skill = load_dir(&runner, &dir, g).await.unwrap();
    let out = runner
        .run(&skill, "io", &json!({"args": data.to_string_lossy()}))
        .await
        .unwrap();
    assert_eq!(out.output.text, "input\n");
    assert_eq!(
        std::fs::read_to_string(data.join("out.txt")).unwrap(),
        "output\n"
    );
}

#[tokio::test]
async fn the_workspace_is_materialised_then_removed_on_drop_and_unload() {
    let env = Env::new();
    let dir = env.skill(
        "files",
        "",
        &[
            ("scripts/hello.sh", HELLO, true),
            ("references/guide.md", "# Guide\n", false),
        ],
    );
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    assert!(
        skill.workspace().is_none(),
        "no workspace before the first run"
    );
    runner.run(&skill, "hello", &Json::Null).await.unwrap();
    let ws = skill.workspace().unwrap();
    let root = ws.root().to_path_buf();
    let mode = |p: PathBuf| std::fs::metadata(p).unwrap().mode() & 0o7777;
    assert_eq!(mode(ws.skill_dir().join("scripts/hello.sh")), 0o755);
    assert_eq!(mode(ws.skill_dir().join("references/guide.md")), 0o644);
    assert_eq!(mode(ws.work_dir()), 0o700);
    assert_eq!(
        std::fs::read_to_string(ws.skill_dir().join("references/guide.md")).unwrap(),
        "# Guide\n"
    );
    assert!(root.starts_with(env.base()));
    drop(skill);
    assert!(!root.exists(), "dropping the skill removes its workspace");

    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    runner.run(&skill, "hello", &Json::Null).await.unwrap();
    let root = skill.workspace().unwrap().root().to_path_buf();
    skill.unload().await.unwrap();
    assert!(!root.exists(), "unloading removes the workspace");
}

#[tokio::test]
async fn stale_workspaces_of_dead_processes_are_cleaned_at_start() {
    let env = Env::new();
    let base = env.base();
    std::fs::create_dir(&base).unwrap();
    let mk = |name: &str, lock: bool| {
        let d = base.join(name);
        std::fs::create_dir_all(d.join("work/tmp")).unwrap();
        if lock {
            std::fs::write(d.join(".lock"), "999999\n").unwrap();
        }
        d
    };
    let stale = mk("ws-stale", true);
    let live = mk("ws-live", true);
    let old_unlocked = mk("ws-old", false);
    let new_unlocked = mk("ws-new", false);
    let other = mk("not-a-workspace", false);
    // A live owner holds the lock.
    let held = std::fs::File::open(live.join(".lock")).unwrap();
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on an fd we own.
        assert_eq!(
            unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
    }
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::open(&old_unlocked)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();

    let _runner = env.runner();
    assert!(!stale.exists(), "the workspace of a dead owner is removed");
    assert!(
        !old_unlocked.exists(),
        "an old workspace without a lock is removed"
    );
    assert!(live.exists(), "a live owner's workspace stays");
    assert!(new_unlocked.exists(), "a workspace being created stays");
    assert!(other.exists(), "other entries are left alone");
    drop(held);
}

#[tokio::test]
async fn skills_from_any_source_are_materialised() {
    let env = Env::new();
    let tarball = env.dir.path().join("bundle.tar");
    {
        let mut b = tar::Builder::new(std::fs::File::create(&tarball).unwrap());
        for (path, text, mode) in [
            (
                "packed/SKILL.md",
                "---\nname: packed\ndescription: From a tarball.\n---\nBody\n",
                0o644,
            ),
            ("packed/scripts/hello.sh", HELLO, 0o755),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(text.len() as u64);
            h.set_mode(mode);
            h.set_entry_type(tar::EntryType::Regular);
            h.set_cksum();
            b.append_data(&mut h, path, text.as_bytes()).unwrap();
        }
        b.finish().unwrap();
    }
    let src = source::open(&tarball.to_string_lossy()).unwrap();
    let roots = src.list().await.unwrap();
    let skill = src.load(&roots[0]).await.unwrap();
    let runner = env.runner();
    let loaded = runner.load(src, skill, grant(30)).await.unwrap();
    let out = runner
        .run(&loaded, "hello", &json!({"args": "tar"}))
        .await
        .unwrap();
    assert_eq!(out.output.text, "hello tar\n");
}

#[tokio::test]
async fn scripts_that_cannot_be_offered_are_skipped_with_the_reason() {
    let env = Env::new();
    let dir = env.skill(
        "mixed",
        "",
        &[
            ("scripts/ok.sh", HELLO, true),
            ("scripts/notes.sh", HELLO, false),
            ("scripts/perl.pl", "#!/usr/bin/perl\nprint 1;\n", true),
            ("scripts/bare", "echo no interpreter line\n", true),
            ("scripts/nested/deep.sh", HELLO, true),
        ],
    );
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let names: Vec<&str> = skill
        .tools()
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["run_mixed_ok"],
        "only executable files directly in scripts/ with an allowed interpreter"
    );
    let skipped: Vec<(&str, &str)> = skill
        .tools()
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.error.code()))
        .collect();
    assert_eq!(
        skipped,
        [
            ("scripts/bare", "E_SKILL_SCRIPT_INTERPRETER_REFUSED"),
            ("scripts/notes.sh", "E_SKILL_SCRIPT_INVALID"),
            ("scripts/perl.pl", "E_SKILL_SCRIPT_INTERPRETER_REFUSED"),
        ]
    );
    let e = runner.run(&skill, "perl", &Json::Null).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_INTERPRETER_REFUSED");
    assert!(
        e.to_string()
            .contains("'perl' is not in the host allow-list"),
        "{e}"
    );
    let e = runner.run(&skill, "nope", &Json::Null).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_NOT_FOUND");
}

#[tokio::test]
async fn bad_tool_sets_are_refused_before_registration() {
    let env = Env::new();
    let runner = env.runner();
    // Two files that give the same name.
    let dir = env.skill(
        "dupes",
        "",
        &[
            ("scripts/a-b.sh", HELLO, true),
            ("scripts/a_b.py", HELLO, true),
        ],
    );
    let e = load_dir(&runner, &dir, grant(30)).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_INVALID");
    assert!(
        e.to_string().contains("two tools named 'run_dupes_a_b'"),
        "{e}"
    );
    // A declared path that climbs out of the skill.
    let dir = env.skill(
        "climber",
        "scripts:\n  - name: x\n    path: ../../etc/passwd\n",
        &[],
    );
    let e = load_dir(&runner, &dir, grant(30)).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SOURCE_PATH_REJECTED");
    // A name over 64 characters.
    let long = format!("scripts/{}.sh", "x".repeat(60));
    let dir = env.skill("longname", "", &[(long.as_str(), HELLO, true)]);
    let e = load_dir(&runner, &dir, grant(30)).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_INVALID");
    // A name a host already uses is refused where names are owned, when the skill enters a
    // session (`tool::names::ToolNames`; `runtime::a_reserved_host_tool_name_is_never_given_to_a_skill`).
}

#[tokio::test]
async fn without_landlock_only_core_skills_run_and_they_say_so() {
    let env = Env::new();
    let s = "#!/bin/sh\nid -u\n";
    let dir = env.skill("core", "", &[("scripts/who.sh", s, true)]);
    let runner = Runner::new(env.config(policy()), Arc::new(AllowAll))
        .unwrap()
        .assume_landlock_abi(None);
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let e = runner.run(&skill, "who", &Json::Null).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_SANDBOX_UNAVAILABLE");
    assert!(skill.workspace().is_none());

    let mut core = grant(30);
    core.trust = Trust::Core;
    let skill = load_dir(&runner, &dir, core).await.unwrap();
    let out = runner.run(&skill, "who", &Json::Null).await.unwrap();
    assert!(matches!(out.confinement, Confinement::Unconfined(_)));
    assert!(
        out.to_model_text()
            .contains("[ran without confinement: trust: core"),
        "{}",
        out.to_model_text()
    );
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    assert_eq!(
        out.output.text.trim(),
        me.to_string(),
        "unconfined: the host's own uid"
    );
}

#[tokio::test]
async fn a_missing_helper_is_a_refusal_not_an_unconfined_run() {
    let env = Env::new();
    let dir = env.skill("nohelper", "", &[("scripts/hello.sh", HELLO, true)]);
    let mut config = env.config(policy());
    config.helper = "/nonexistent/skillcat".into();
    let runner = Runner::new(config, Arc::new(AllowAll)).unwrap();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let e = runner.run(&skill, "hello", &Json::Null).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_SANDBOX_UNAVAILABLE");
}

#[tokio::test]
async fn a_granted_path_that_does_not_exist_is_an_error() {
    let env = Env::new();
    let dir = env.skill("typo", "", &[("scripts/hello.sh", HELLO, true)]);
    let runner = env.runner();
    let mut g = grant(30);
    g.fs_read = vec![env.dir.path().join("no-such-dir")];
    let skill = load_dir(&runner, &dir, g).await.unwrap();
    let e = runner.run(&skill, "hello", &Json::Null).await.unwrap_err();
    assert_eq!(e.code(), "E_SKILL_SCRIPT_SANDBOX_FAILED");
    assert!(e.to_string().contains("no-such-dir"), "{e}");
}

/// The workspace's first confined run makes its bounded work directory in its own helper and
/// hands it over as soon as it is made: a run started meanwhile waits for that (not for the
/// first run's end) and joins the same tmpfs, so both see one work directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_runs_share_one_bounded_work_directory() {
    let env = Env::new();
    let slow =
        "#!/bin/sh\n# Leave a note, then stay a while.\necho kept > note\nsleep 3\necho done\n";
    let look = "#!/bin/sh\n# What the work directory holds, a moment later.\nsleep 1\nls\n";
    let dir = env.skill(
        "shared",
        "",
        &[
            ("scripts/slow.sh", slow, true),
            ("scripts/look.sh", look, true),
        ],
    );
    let runner = env.runner();
    let skill = load_dir(&runner, &dir, grant(30)).await.unwrap();
    let started = std::time::Instant::now();
    let first = runner.run(&skill, "slow", &Json::Null);
    let second = async {
        // Started with the first: it finds the work directory not made yet.
        let out = runner.run(&skill, "look", &Json::Null).await;
        (out, started.elapsed())
    };
    let (first, (second, second_done)) = tokio::join!(first, second);
    let first = first.unwrap();
    assert_eq!(first.output.text, "done\n");
    let second = second.unwrap();
    assert!(
        second.output.text.lines().any(|l| l == "note"),
        "the second run sees the first run's work directory: {:?}",
        second.output.text
    );
    assert!(
        second_done < Duration::from_millis(2900),
        "the second run waited for the first run's end ({second_done:?})"
    );
    let ws = skill.workspace().unwrap();
    assert!(ws.is_bounded(), "the work directory is the bounded tmpfs");
    // On the host the tmpfs is seen only through the workspace's descriptor.
    assert!(!ws.work_dir().join("note").exists());
    assert_eq!(
        std::fs::read_to_string(ws.work_view().join("note")).unwrap(),
        "kept\n"
    );
    match &first.confinement {
        Confinement::Confined(summary) => {
            assert!(!summary.contains("on disk"), "{summary}")
        }
        other => panic!("{other:?}"),
    }
}
