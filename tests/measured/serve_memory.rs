//! `serve`'s peak memory, at half the scale issue 51 measured (2,000 skills, at most 300 MB),
//! to keep the test short in a debug build: a registry of 1,000 skills (four files each,
//! 1–6 KB) is served, asked for its home page, a skill's page and its index, and the server's
//! peak resident memory (VmHWM) must stay at most 150 MB. Before, it peaked at 260–294 MB
//! here (343–476 MB at 2,000 skills in a debug build, 386–584 MB in a release build, 670–684 MB
//! on a machine with more cores) before settling near 105 MB: glibc's allocator raised its mmap
//! and trim thresholds after the first 380 KB deflate state was freed, so every archive packed
//! left about that much free heap in its thread's arena until the build ended. The live heap
//! itself stays near what the site holds. Now: about 105 MB here, 150 MB at 2,000 skills
//! (`benches/serve_rss.sh` measures any size).
//!
//! Origin: step 29 (issue 51, item 18).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::support::bin::Skillcat;
use crate::support::serve::spawn_serve;

/// Skills in the registry (issue 51 measured at 2,000).
const SKILLS: usize = 1000;

/// The most the server may hold at its peak: issue 51's 300 MB at 2,000 skills, in proportion.
const PEAK_RSS_KIB: u64 = 150 * 1000;

/// Writes `SKILLS` skills under `dir`, shaped as `benches/support/corpus.sh` writes them.
fn corpus(dir: &Path) {
    for i in 1..=SKILLS {
        let name = format!("skill-{i:04}");
        let d = dir.join(&name);
        let steps =
            format!("Step {i}: read the input, check it, write the result and say what changed.\n")
                .repeat(20);
        let doc = format!(
            "---\nname: {name}\ndescription: Skill {i} does one thing well when the user asks \
             for it.\nmetadata:\n  version: \"1.0.{i}\"\n---\n\n# Skill {i}\n\n{steps}"
        );
        crate::support::write_skill(
            &d,
            &doc,
            &[
                (
                    "scripts/run.sh",
                    &format!("#!/bin/sh\n# skill {i}\nset -eu\nprintf '%s\\n' \"$@\"\n"),
                    true,
                ),
                (
                    "references/guide.md",
                    &format!(
                        "Reference line for skill {i}, with enough words to be a realistic note.\n"
                    )
                    .repeat(40),
                    false,
                ),
                (
                    "references/notes.md",
                    &format!("Field notes for skill {i}.\n"),
                    false,
                ),
            ],
        );
    }
}

/// `GET path` of the server at `url` (`http://127.0.0.1:PORT/`): the status line.
fn get(url: &str, path: &str) -> String {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut stream = TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer);
    text.lines().next().unwrap_or_default().to_string()
}

/// A field of `/proc/PID/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

#[test]
fn serving_a_thousand_skills_peaks_under_150_mb() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("corpus");
    corpus(&dir);
    let db = tmp.path().join("r.db");
    let (db_s, dir_s) = (db.to_str().unwrap(), dir.to_str().unwrap());
    Skillcat::new(&["registry", "init", db_s]).run().code(0);
    // A guard, not a measure: publishing many skills was slow before item 18b.
    Skillcat::new(&["registry", "publish", db_s, dir_s])
        .deadline(Duration::from_secs(600))
        .run()
        .code(0);

    let (mut child, line, url) = spawn_serve(&db, &[], Stdio::null());
    assert_eq!(line, format!("Serving {SKILLS} skills on {url}"));
    for path in [
        "/",
        "/skills/skill-0500/",
        "/.well-known/agent-skills/index.json",
    ] {
        assert_eq!(get(&url, path), "HTTP/1.1 200 OK", "GET {path}");
    }
    let (peak, now) = (
        status_kib(child.id(), "VmHWM:"),
        status_kib(child.id(), "VmRSS:"),
    );
    let _ = (child.kill(), child.wait());
    assert!(
        peak <= PEAK_RSS_KIB,
        "serve of {SKILLS} skills peaked at {} MB (now {} MB); at most {} MB",
        peak / 1000,
        now / 1000,
        PEAK_RSS_KIB / 1000
    );
}
