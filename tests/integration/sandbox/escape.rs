//! Escape attempts against the script sandbox: real processes, the real kernel.
//!
//! Each case runs a script from `fixtures/escape/attack-*/` through the library runner (with the
//! `skillcat` binary as the sandbox helper), asserts the specific error or denial, and checks
//! that the host was not harmed: nothing written, read, leaked, left running or signalled.
//! Nothing is granted unless a case says so; the session policy itself is wide open, so every
//! denial below comes from the sandbox, not from the policy check.
//!
//! Origin: step 6 (issue 7: script tools and confined execution).

#![cfg(target_os = "linux")]

use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use skillcat::capability::{Grant, Trust};
use skillcat::script::{AllowAll, LoadedSkill, Runner, RunnerConfig, ScriptError, ScriptOutput};
use skillcat::source::{DirOptions, DirSource, SourceExt};

/// A private scratch area under `/tmp`, searchable by the sandbox uid (0711), holding the
/// workspace base and the files the attacks go after.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::Builder::new()
            .prefix("skillcat-escape-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let scratch = dir.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        // World-readable, so only the sandbox (not file permissions) stands between a script and it.
        std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o755)).unwrap();
        Env { dir }
    }

    fn base(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn scratch(&self) -> PathBuf {
        self.dir.path().join("scratch")
    }

    /// A world-readable secret file under the scratch directory.
    fn secret(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.scratch().join(rel);
        let mut dir = p.parent().unwrap().to_path_buf();
        std::fs::create_dir_all(&dir).unwrap();
        while dir.starts_with(self.scratch()) {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            dir.pop();
        }
        std::fs::write(&p, content).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        p
    }

    fn runner(&self) -> Runner {
        let mut config = RunnerConfig::new(
            wide_policy(),
            skillcat::context::Env::from_process().user_dirs(),
        );
        config.helper = PathBuf::from(env!("CARGO_BIN_EXE_skillcat"));
        config.workspace_base = self.base();
        Runner::new(config, Arc::new(AllowAll)).unwrap()
    }
}

/// A session policy that allows everything, so the sandbox alone is under test.
fn wide_policy() -> Grant {
    Grant {
        fs_read: vec!["/".into()],
        fs_write: vec!["/".into()],
        network: skillcat::capability::Network::All,
        timeout: Duration::from_secs(120),
        trust: Trust::Core,
    }
}

/// Nothing granted.
fn nothing(timeout_secs: u64) -> Grant {
    Grant {
        fs_read: vec![],
        fs_write: vec![],
        network: skillcat::capability::Network::Off,
        timeout: Duration::from_secs(timeout_secs),
        trust: Trust::External,
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/escape")
        .join(name)
}

async fn load(runner: &Runner, name: &str, grant: Grant) -> LoadedSkill {
    let src = DirSource::open_skill(&fixture(name), DirOptions::default()).unwrap();
    let skill = src.load("").await.unwrap();
    runner.load(Arc::new(src), skill, grant).await.unwrap()
}

struct Attack {
    result: Result<ScriptOutput, ScriptError>,
    elapsed: Duration,
    skill: LoadedSkill,
}

impl Attack {
    /// The output, whichever way the run ended (a refusal has none: that fails the case).
    fn text(&self) -> String {
        match &self.result {
            Ok(o) => o.output.text.clone(),
            Err(e) => match e.output() {
                Some(o) => o.text.clone(),
                None => panic!("no output: {e} ({})", e.code()),
            },
        }
    }

    /// What the script left in its work directory, seen from this process.
    fn work(&self) -> PathBuf {
        self.skill
            .workspace()
            .expect("the run made a workspace")
            .work_view()
    }

    fn assert_contained(&self) {
        let text = self.text();
        assert!(!text.contains("ESCAPED"), "escaped:\n{text}");
    }

    fn code(&self) -> &'static str {
        match &self.result {
            Ok(_) => "ok",
            Err(e) => e.code(),
        }
    }
}

async fn attack_with(env: &Env, name: &str, args: &str, grant: Grant) -> Attack {
    let runner = env.runner();
    let skill = load(&runner, name, grant).await;
    let started = Instant::now();
    let result = runner.run(&skill, "attack", &json!({ "args": args })).await;
    Attack {
        result,
        elapsed: started.elapsed(),
        skill,
    }
}

async fn attack(env: &Env, name: &str, args: &str) -> Attack {
    attack_with(env, name, args, nothing(30)).await
}

fn q(p: &Path) -> String {
    shell_words::quote(&p.to_string_lossy()).into_owned()
}

/// A host process holding a secret in its environment.
fn holder(secret: &str) -> Child {
    Command::new("sleep")
        .arg("30")
        .env("SKILLCAT_TEST_SECRET", secret)
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn read_a_file_outside_the_grant_is_denied() {
    let env = Env::new();
    let secret = env.secret("data/secret.txt", "SECRET-READ-7f3a");
    let a = attack(&env, "attack-read-outside", &q(&secret)).await;
    assert_eq!(a.code(), "E_SKILL_SCRIPT_FAILED");
    let text = a.text();
    // Refused by Landlock, or (in the run's own root, which holds only its grants) not there.
    assert!(
        text.contains("Permission denied") || text.contains("No such file or directory"),
        "{text}"
    );
    assert!(!text.contains("SECRET-READ"), "{text}");
    a.assert_contained();
}

#[tokio::test]
async fn read_ssh_keys_is_denied() {
    let env = Env::new();
    let key = env.secret("home/.ssh/id_ed25519", "SECRET-KEY-91bd");
    let home = key.parent().unwrap().parent().unwrap().to_path_buf();
    let a = attack(&env, "attack-read-ssh", &q(&home)).await;
    assert_eq!(a.code(), "ok");
    let text = a.text();
    // Refused by Landlock, or (in the run's own root, which holds only its grants) not there.
    assert!(
        text.contains(&format!("{}: Permission denied", key.display()))
            || text.contains(&format!("{}: No such file or directory", key.display())),
        "{text}"
    );
    assert!(!text.contains("SECRET-KEY"), "{text}");
    a.assert_contained();
}

#[tokio::test]
async fn write_outside_the_workspace_is_denied() {
    let env = Env::new();
    let out = env.scratch().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let target = out.join("pwned");
    let nonce = format!("{}-{}", std::process::id(), line!());
    let a = attack(
        &env,
        "attack-write-outside",
        &format!("{} {nonce}", q(&target)),
    )
    .await;
    assert_eq!(a.code(), "ok");
    // Refused by Landlock, or (in the run's own root: read-only, holding only its grants) not
    // there to write.
    let text = a.text();
    assert!(
        text.contains("Permission denied")
            || (text.contains("Directory nonexistent") && text.contains("Read-only file system")),
        "{text}"
    );
    a.assert_contained();
    assert!(!target.exists());
    assert!(!Path::new(&format!("/tmp/skillcat-escape-{nonce}")).exists());
    assert!(!Path::new(&format!("/var/tmp/skillcat-escape-{nonce}")).exists());
}

#[tokio::test]
async fn writing_into_the_skill_itself_is_denied() {
    let env = Env::new();
    let a = attack(&env, "attack-write-skill", "").await;
    a.assert_contained();
    let skill_dir = a.skill.workspace().unwrap().skill_dir();
    let original = std::fs::read(fixture("attack-write-skill").join("scripts/attack.sh")).unwrap();
    assert_eq!(
        std::fs::read(skill_dir.join("scripts/attack.sh")).unwrap(),
        original
    );
    assert!(skill_dir.join("SKILL.md").exists());
    assert!(!skill_dir.join("scripts/new.sh").exists());
    // The move failed (no ESCAPED-MOVE, the original is intact above). Where the work
    // directory is a tmpfs, `mv` across file systems copies before it tries to remove the
    // original, so a copy may be left there: reading the skill is allowed, `cp` does as much.
    let stolen = a.work().join("stolen.sh");
    assert!(!stolen.exists() || std::fs::read(&stolen).unwrap() == original);
}

#[tokio::test]
async fn a_symlink_planted_in_the_workspace_does_not_reach_outside() {
    let env = Env::new();
    let secret = env.secret("linked/secret.txt", "SECRET-LINK-c0de");
    let a = attack(&env, "attack-symlink", &q(&secret)).await;
    let text = a.text();
    assert!(
        text.contains("Permission denied")
            || text.contains("Operation not permitted")
            || text.contains("No such file or directory"),
        "{text}"
    );
    assert!(!text.contains("SECRET-LINK"), "{text}");
    a.assert_contained();
}

#[tokio::test]
async fn tcp_to_a_local_listener_fails_without_network() {
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let a = attack(&env, "attack-tcp", &port.to_string()).await;
    let text = a.text();
    assert!(
        text.contains("contained 127.0.0.1 [Errno 1] Operation not permitted"),
        "{text}"
    );
    assert!(text.contains("contained packet"), "{text}");
    a.assert_contained();
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        ErrorKind::WouldBlock,
        "nothing connected"
    );
}

#[tokio::test]
async fn dns_resolution_fails_without_network() {
    let env = Env::new();
    let a = attack(&env, "attack-dns", "").await;
    let text = a.text();
    assert!(text.contains("contained example.com"), "{text}");
    assert!(
        text.contains("contained udp [Errno 1] Operation not permitted"),
        "{text}"
    );
    a.assert_contained();
}

#[tokio::test]
async fn a_fork_bomb_is_contained() {
    let env = Env::new();
    let a = attack_with(&env, "attack-fork-bomb", "", nothing(3)).await;
    // The bomb hits the process limit (bash reports the failed forks) and the script runs into
    // the timeout; every process it made dies with the PID namespace.
    assert_eq!(a.code(), "E_SKILL_SCRIPT_TIMEOUT");
    assert!(a.elapsed < Duration::from_secs(30), "took {:?}", a.elapsed);
    assert!(
        a.text().contains("Resource temporarily unavailable"),
        "{}",
        a.text()
    );
    // The host can still start processes.
    assert!(Command::new("true").status().unwrap().success());
}

#[tokio::test]
async fn allocating_4_gib_fails_at_once() {
    let env = Env::new();
    let a = attack(&env, "attack-memory", "").await;
    assert_eq!(a.code(), "E_SKILL_SCRIPT_FAILED");
    assert!(a.text().contains("contained MemoryError"), "{}", a.text());
    assert!(matches!(a.result, Err(ScriptError::Failed { code: 3, .. })));
    assert!(a.elapsed < Duration::from_secs(15), "took {:?}", a.elapsed);
}

#[tokio::test]
async fn spinning_past_the_timeout_is_a_timeout() {
    let env = Env::new();
    let a = attack_with(&env, "attack-spin", "", nothing(1)).await;
    assert_eq!(a.code(), "E_SKILL_SCRIPT_TIMEOUT");
    assert!(
        a.result
            .as_ref()
            .unwrap_err()
            .to_model_text()
            .starts_with("Error (timed out):\n")
    );
    assert!(a.elapsed >= Duration::from_secs(1), "{:?}", a.elapsed);
    assert!(a.elapsed < Duration::from_secs(10), "{:?}", a.elapsed);
}

#[tokio::test]
async fn printing_100_mb_is_capped_and_finishes_quickly() {
    let env = Env::new();
    let a = attack(&env, "attack-flood", "").await;
    let out = a.result.as_ref().expect("finishes normally");
    assert_eq!(out.output.kept, 64 * 1024);
    assert!(out.output.total >= 100_000_000, "{}", out.output.total);
    assert!(out.output.truncated());
    assert!(
        out.to_model_text()
            .contains("[output truncated: kept 65536 of 1000000")
    );
    assert!(a.elapsed < Duration::from_secs(20), "took {:?}", a.elapsed);
}

#[tokio::test]
async fn background_children_die_when_the_script_exits() {
    let env = Env::new();
    let a = attack(&env, "attack-background", "").await;
    assert_eq!(a.text().trim(), "started");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(
        !a.work().join("marker").exists(),
        "a background child survived"
    );
    assert!(
        !a.work().join("marker2").exists(),
        "a double-forked child survived"
    );
}

#[tokio::test]
async fn background_children_die_on_timeout() {
    let env = Env::new();
    let a = attack_with(&env, "attack-background", "wait", nothing(1)).await;
    assert_eq!(a.code(), "E_SKILL_SCRIPT_TIMEOUT");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(
        !a.work().join("marker").exists(),
        "a background child survived"
    );
    assert!(
        !a.work().join("marker2").exists(),
        "a double-forked child survived"
    );
}

#[tokio::test]
async fn setsid_and_setpgid_are_refused() {
    let env = Env::new();
    let a = attack_with(&env, "attack-setsid", "", nothing(1)).await;
    assert_eq!(a.code(), "E_SKILL_SCRIPT_TIMEOUT");
    let text = a.text();
    assert!(text.contains("contained-setsid"), "{text}");
    assert!(text.contains("contained-setpgid"), "{text}");
    assert!(text.contains("Operation not permitted"), "{text}");
    a.assert_contained();
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert!(!a.work().join("marker").exists(), "a setsid child survived");
}

#[tokio::test]
async fn ptrace_of_a_sibling_is_refused() {
    let env = Env::new();
    let a = attack(&env, "attack-ptrace", "").await;
    let text = a.text();
    assert!(text.contains("ptrace -1 Operation not permitted"), "{text}");
    assert!(
        text.contains("process_vm_readv -1 Operation not permitted"),
        "{text}"
    );
}

#[tokio::test]
async fn proc_environ_and_the_host_environment_stay_hidden() {
    // A secret in this (the supervisor's) environment, and one in another host process's.
    // SAFETY: only this test touches this variable, and std serialises its own environment
    // access; nothing in this process reads it through libc concurrently.
    unsafe { std::env::set_var("SKILLCAT_TEST_HOST_SECRET", "SECRET-HOST-ENV-a41c") };
    let env = Env::new();
    let mut h = holder("SECRET-ENV-5e11");
    let args = format!("{} {}", h.id(), std::process::id());
    let a = attack(&env, "attack-proc-environ", &args).await;
    h.kill().ok();
    h.wait().ok();
    let text = a.text();
    a.assert_contained();
    assert!(!text.contains("SECRET-ENV"), "{text}");
    assert!(!text.contains("SECRET-HOST-ENV"), "{text}");
    assert!(!text.contains("SKILLCAT_TEST_HOST_SECRET"), "{text}");
    assert!(
        text.contains("/proc/1/environ: Permission denied"),
        "{text}"
    );
    // The script's environment is exactly the fixed minimal set (sh adds PWD).
    let env_block = text
        .split("--- env\n")
        .nth(1)
        .unwrap()
        .split("--- end")
        .next()
        .unwrap();
    let mut names: Vec<&str> = env_block
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["HOME", "LANG", "PATH", "PWD", "TMPDIR"],
        "{env_block}"
    );
    assert!(env_block.contains("PATH=/usr/local/bin:/usr/bin:/bin\n"));
    assert!(env_block.contains("LANG=C.UTF-8\n"));
}

#[tokio::test]
async fn signalling_the_supervisor_or_host_processes_is_refused() {
    let env = Env::new();
    let mut h = holder("x");
    let args = format!("{} {}", std::process::id(), h.id());
    let a = attack(&env, "attack-kill-parent", &args).await;
    let text = a.text();
    assert!(
        !text.contains("ESCAPED-SUPERVISOR") && !text.contains("ESCAPED-HOST"),
        "{text}"
    );
    // Host pids do not exist in the script's PID namespace (ESRCH); without one, the unprivileged
    // uid and the Landlock signal scope refuse (EPERM).
    assert!(
        text.contains("No such process") || text.contains("Operation not permitted"),
        "{text}"
    );
    assert!(
        h.try_wait().unwrap().is_none(),
        "the host process was killed"
    );
    h.kill().ok();
    h.wait().ok();
}

#[tokio::test]
async fn device_nodes_and_setuid_bits_are_refused() {
    let env = Env::new();
    let a = attack(&env, "attack-mknod-suid", "").await;
    a.assert_contained();
    let f = a.work().join("f");
    let mode = std::fs::metadata(&f).unwrap().permissions().mode();
    assert_eq!(mode & 0o6000, 0, "setuid/setgid set: {mode:o}");
    assert!(!a.work().join("null").exists());
    assert!(a.text().contains("Operation not permitted"), "{}", a.text());
}

#[tokio::test]
async fn io_uring_is_refused() {
    let env = Env::new();
    let a = attack(&env, "attack-io-uring", "").await;
    assert!(
        a.text()
            .contains("io_uring_setup -1 Operation not permitted"),
        "{}",
        a.text()
    );
}

/// `sync()` and `syncfs()` make the host write back every dirty page of every file system (or
/// of the one under the workspace): work outside the run's limits, for others' files.
#[tokio::test]
async fn host_wide_writeback_is_refused() {
    let env = Env::new();
    let a = attack(&env, "attack-sync", "").await;
    let text = a.text();
    assert!(text.contains("sync -1 Operation not permitted"), "{text}");
    assert!(text.contains("syncfs -1 Operation not permitted"), "{text}");
}

#[tokio::test]
async fn new_namespaces_are_refused() {
    let env = Env::new();
    let a = attack(&env, "attack-unshare", "").await;
    let text = a.text();
    a.assert_contained();
    for ns in ["user", "mount", "net"] {
        assert!(
            text.contains(&format!("unshare {ns} -1 Operation not permitted")),
            "{text}"
        );
    }
}

#[tokio::test]
#[cfg(target_arch = "x86_64")]
async fn x32_system_calls_are_refused() {
    let env = Env::new();
    let a = attack(&env, "attack-x32", "").await;
    let text = a.text();
    // EPERM from the guard filter, not ENOSYS: the call never reached the kernel's x32 table.
    assert!(
        text.contains("x32 socket -1 Operation not permitted"),
        "{text}"
    );
    assert!(
        text.contains("x32 getpid -1 Operation not permitted"),
        "{text}"
    );
}

#[tokio::test]
async fn host_unix_sockets_are_unreachable() {
    let env = Env::new();
    let path = env.scratch().join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let name = format!("skillcat-escape-{}-{}", std::process::id(), line!());
    let abstract_addr = {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap()
    };
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&abstract_addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let a = attack(&env, "attack-unix-socket", &format!("{} {name}", q(&path))).await;
    let text = a.text();
    a.assert_contained();
    assert_eq!(text.matches("contained").count(), 2, "{text}");
    assert_eq!(listener.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    assert_eq!(
        abstract_listener.accept().unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
}

#[tokio::test]
async fn metadata_of_host_files_cannot_change() {
    let env = Env::new();
    let victim = env.secret("victim.txt", "victim");
    let before = std::fs::metadata(&victim).unwrap();
    let a = attack(&env, "attack-chmod-host", &q(&victim)).await;
    a.assert_contained();
    let after = std::fs::metadata(&victim).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(before.mode(), after.mode());
    assert_eq!(before.uid(), after.uid());
    assert_eq!(before.mtime(), after.mtime());
}

#[tokio::test]
async fn programs_written_into_the_work_directory_do_not_execute() {
    let env = Env::new();
    let a = attack(&env, "attack-exec-work", "").await;
    a.assert_contained();
    assert!(a.text().contains("Permission denied"), "{}", a.text());
}

#[tokio::test]
async fn host_devices_are_closed_but_dev_null_works() {
    let env = Env::new();
    let a = attack(&env, "attack-devices", "").await;
    a.assert_contained();
    assert!(a.text().contains("null-ok"), "{}", a.text());
}

// Controls: the same attacks succeed exactly where the grant allows them, so the denials above
// are the sandbox's doing and not a broken fixture.

#[tokio::test]
async fn control_a_granted_read_is_allowed() {
    let env = Env::new();
    let secret = env.secret("granted/secret.txt", "GRANTED-READ-1234");
    let mut grant = nothing(30);
    grant.fs_read.push(secret.parent().unwrap().to_path_buf());
    let a = attack_with(&env, "attack-read-outside", &q(&secret), grant).await;
    assert_eq!(a.code(), "ok");
    assert!(a.text().contains("GRANTED-READ-1234"), "{}", a.text());
}

#[tokio::test]
async fn control_a_granted_network_connects() {
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut grant = nothing(30);
    grant.network = skillcat::capability::Network::All;
    let a = attack_with(&env, "attack-tcp", &port.to_string(), grant).await;
    assert!(a.text().contains("ESCAPED 127.0.0.1"), "{}", a.text());
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "the granted connection arrived");
}
