//! A central registry under concurrent, racing, interrupted and hostile use, through the real
//! binary and a real server on 127.0.0.1: every publish lands whole or not at all.
//!
//! Origin: step 11 (issue 16: a central registry over HTTP).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use skillcat::registry::Registry;

use crate::support::bin::Skillcat;
use crate::support::central::{doc, registry_dir, token};
use crate::support::serve::{bin, spawn_serve};
use crate::support::write_skill;

fn setup() -> (tempfile::TempDir, String) {
    let tmp = registry_dir();
    let token = token(tmp.path(), "ci", "*", "publish,yank");
    std::fs::write(tmp.path().join("ci.token"), &token).unwrap();
    (tmp, token)
}

fn start(dir: &Path, extra: &[&str]) -> (Child, String) {
    let tokens = dir.join("tokens.toml");
    let mut args = vec!["--publish", "--tokens", tokens.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (child, _, url) = spawn_serve(&dir.join("r.db"), &args, Stdio::null());
    (child, url)
}

/// `skillcat publish URL PATH --token-file ci.token`, started, not waited for.
fn publisher(dir: &Path, url: &str, path: &Path) -> Child {
    Command::new(bin())
        .args(["publish", url])
        .arg(path)
        .args(["--token-file", "ci.token"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The registry is sound: integrity_check, every stored version re-hashes to its digest, and
/// every version has exactly one `publish` row in the audit log.
fn assert_sound(db: &Path) -> usize {
    let reg = Registry::open_read_only(db).unwrap();
    let report = reg.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let versions: i64 = reg
        .connection()
        .query_row("SELECT count(*) FROM version", [], |r| r.get(0))
        .unwrap();
    let rows: i64 = reg
        .connection()
        .query_row(
            "SELECT count(*) FROM audit WHERE action = 'publish'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(versions, rows, "one audit row per stored version");
    assert_eq!(report.versions as i64, versions);
    versions as usize
}

#[test]
fn eight_publishers_at_once_all_land() {
    let (tmp, _) = setup();
    let dir = tmp.path();
    let (mut server, url) = start(dir, &[]);
    let paths: Vec<PathBuf> = (0..8)
        .map(|i| {
            let name = format!("skill-{i}");
            let p = dir.join("src").join(&name);
            write_skill(&p, &doc(&name, "1.0.0", &"x".repeat(i * 100)), &[]);
            p
        })
        .collect();
    let children: Vec<Child> = paths.iter().map(|p| publisher(dir, &url, p)).collect();
    for (i, child) in children.into_iter().enumerate() {
        let (code, out, err) = finish(child);
        assert_eq!(code, 0, "publisher {i}: {out}{err}");
        assert!(
            out.starts_with(&format!("skill-{i}@1.0.0  sha256:")),
            "{out}"
        );
    }
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(assert_sound(&dir.join("r.db")), 8);
}

#[test]
fn two_racing_the_same_version_one_wins_the_other_gets_409() {
    let (tmp, _) = setup();
    let dir = tmp.path();
    let (mut server, url) = start(dir, &[]);
    for round in 0..3 {
        let version = format!("1.0.{round}");
        let a = dir.join(format!("a{round}/racer"));
        let b = dir.join(format!("b{round}/racer"));
        write_skill(&a, &doc("racer", &version, "content A"), &[]);
        write_skill(&b, &doc("racer", &version, "content B, different"), &[]);
        let (ca, cb) = (publisher(dir, &url, &a), publisher(dir, &url, &b));
        let results = [finish(ca), finish(cb)];
        let winners: Vec<&(i32, String, String)> =
            results.iter().filter(|(code, ..)| *code == 0).collect();
        assert_eq!(winners.len(), 1, "exactly one wins: {results:?}");
        let loser = results.iter().find(|(code, ..)| *code != 0).unwrap();
        assert_eq!(loser.0, 1, "{loser:?}");
        assert!(
            loser.2.contains("409"),
            "the loser is told 409: {}",
            loser.2
        );
        // The stored version is the winner's.
        let digest = winners[0].1.split_whitespace().nth(1).unwrap().to_string();
        let out = Skillcat::new(&["registry", "versions", "r.db", "racer", "--format", "json"])
            .cwd(dir)
            .run();
        let stored = out.code(0).json();
        let entry = stored
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["version"] == version.as_str())
            .unwrap()
            .clone();
        assert_eq!(entry["digest"], digest.as_str());
    }
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(assert_sound(&dir.join("r.db")), 3);
}

/// A small deterministic generator for the kill points (the seed is printed on failure).
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

#[test]
fn sigkill_during_uploads_leaves_no_partial_version() {
    let (tmp, _) = setup();
    let dir = tmp.path();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut state = seed;
    eprintln!("kill-point seed {seed}");
    // Big enough that an upload and its write take a few milliseconds.
    let body: String = (0..2000)
        .map(|i| format!("line {i} of padding\n"))
        .collect();
    let (mut server, mut url) = start(dir, &[]);
    let mut kills = 0;
    // The skills whose publish was confirmed: each must be stored (durable once answered).
    let mut confirmed = Vec::new();
    for i in 0..50 {
        let name = format!("crash-{i}");
        let p = dir.join("src").join(&name);
        write_skill(
            &p,
            &doc(&name, "1.0.0", &body),
            &[("references/big.md", &body, false)],
        );
        let child = publisher(dir, &url, &p);
        // Kill at a random moment, in three uploads out of four.
        if !next(&mut state).is_multiple_of(4) {
            std::thread::sleep(Duration::from_micros(next(&mut state) % 40_000));
            let _ = server.kill();
            let _ = server.wait();
            kills += 1;
            if finish(child).0 == 0 {
                confirmed.push(name);
            }
            // Sound after each kill, before the restart migrates or touches anything.
            assert_sound(&dir.join("r.db"));
            (server, url) = start(dir, &[]);
        } else {
            let (code, out, err) = finish(child);
            assert_eq!(code, 0, "seed {seed}: {out}{err}");
            confirmed.push(name);
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(kills >= 25, "seed {seed}: {kills} kills");
    let stored = assert_sound(&dir.join("r.db"));
    assert!(stored >= confirmed.len(), "seed {seed}");
    let reg = Registry::open_read_only(dir.join("r.db")).unwrap();
    for name in &confirmed {
        assert!(
            reg.get(name, "1.0.0").unwrap().is_some(),
            "seed {seed}: {name} was confirmed but is not stored"
        );
    }
}

/// Sends raw bytes and returns the status line (empty when the server closed without one).
fn raw(addr: &str, request: &[u8], wait: Duration) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let _ = s.write_all(request);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn hostile_requests_store_nothing_and_a_stalled_upload_frees_its_slot() {
    let (tmp, token) = setup();
    let dir = tmp.path();
    let (mut server, url) = start(
        dir,
        &[
            "--request-timeout",
            "1s",
            "--max-connections",
            "2",
            "--max-upload",
            "1MiB",
        ],
    );
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let put = |len: usize, body: &[u8]| {
        let mut r = format!(
            "PUT /api/v1/skills/x/1.0.0 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Content-Length: {len}\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    };
    // A body longer than its Content-Length: only the declared bytes are the body (not an
    // archive: 422); the rest is never taken as a second request that could write.
    let line = raw(&addr, &put(10, &[0x1f; 5000]), Duration::from_secs(5));
    assert!(line.contains(" 422 ") || line.contains(" 400 "), "{line}");
    // A Content-Length over the limit: 413 before the body is read.
    let line = raw(&addr, &put(50 << 20, b""), Duration::from_secs(5));
    assert!(line.contains(" 413 "), "{line}");
    // A stalled upload: it declares 1000 bytes and sends 10. The request timeout closes it.
    let started = Instant::now();
    let mut stalled = TcpStream::connect(&addr).unwrap();
    stalled.write_all(&put(1000, &[0x1f; 10])).unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = Vec::new();
    let _ = stalled.read_to_end(&mut buf);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(8),
        "the stalled upload was cut ({waited:?})"
    );
    // The slots are free again: two connections at once are served. The server lets go of the
    // stalled connection's slot just after it closes it, so on a busy machine the client may
    // see the close first: the slot must come back within a few seconds, not at that instant.
    let a = TcpStream::connect(&addr).unwrap();
    let get = format!(
        "GET /.well-known/agent-skills/index.json HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let line = loop {
        let line = raw(&addr, get.as_bytes(), Duration::from_secs(5));
        if line.contains(" 200 ") || Instant::now() > deadline {
            break line;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(line.contains(" 200 "), "{line}");
    drop(a);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(assert_sound(&dir.join("r.db")), 0, "nothing stored");
}
