//! What one hostile skill or query may cost a catalog server, through the real binary on
//! 127.0.0.1: a SKILL.md body nested a million levels deep is published, served and listed
//! without stopping the server (the page shows it as text), a restarted server listens at
//! once, and a search built to be expensive ends at the server's deadline with an answer that
//! names no server file.
//!
//! Origin: step 27 (issue 49: hostile content and clients, round 4).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::bin::Skillcat;
use crate::support::central::{doc, registry_dir, token};
use crate::support::publish::{Server, send};
use crate::support::serve::bin;
use crate::support::write_skill;

/// `skillcat pack DIR/NAME -o DIR/NAME.tar.gz`; the archive's bytes.
fn pack(dir: &Path, name: &str) -> Vec<u8> {
    let out = dir.join(format!("{name}.tar.gz"));
    Skillcat::new(&[
        "pack",
        dir.join(name).to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .run()
    .code(0);
    std::fs::read(out).unwrap()
}

/// A GET that must answer within `within` (the bound), with its status and body.
async fn get_within(url: &str, within: Duration) -> (u16, String) {
    let client = reqwest::Client::builder().timeout(within).build().unwrap();
    let resp = client
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url} did not answer within {within:?}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

/// Starts `skillcat serve r.db` and waits at most `within` for its first line; `None` when the
/// server has not said it listens by then (it is killed).
fn serve_listening_within(dir: &Path, within: Duration) -> Option<(std::process::Child, String)> {
    let mut child = Command::new(bin())
        .arg("serve")
        .arg(dir.join("r.db"))
        .args(["--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(within) {
        Ok(line) if line.starts_with("Serving ") => {
            let url = line.trim().rsplit_once(" on ").unwrap().1.to_string();
            Some((child, url))
        }
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }
}

/// Finding 1 of issue 49: `>` × 999,000 (a 1 KiB archive) stopped a central registry for good.
/// Rendering is bounded now (too deep: shown as text with a note), lazy (never before the
/// server listens, never before a publish answers) and off the async runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_markdown_neither_stops_a_registry_nor_its_restart_nor_a_local_publish() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let deep = ">".repeat(999_000);
    write_skill(&dir.join("deep"), &doc("deep", "1.0.0", &deep), &[]);
    write_skill(&dir.join("plain"), &doc("plain", "1.0.0", "Plain."), &[]);
    let archive = pack(dir, "deep");
    assert!(archive.len() < 16 * 1024, "{} bytes", archive.len());
    let plain = pack(dir, "plain");
    let server = Server::start(dir, &[]);
    let url = server.url.clone();

    // The nested publish in flight, the server answers a read at once and another publish.
    let put = {
        let (url, ci) = (url.clone(), ci.clone());
        tokio::spawn(async move {
            send(
                reqwest::Method::PUT,
                format!("{url}api/v1/skills/deep/1.0.0"),
                Some(&ci),
                archive,
                &[],
            )
            .await
        })
    };
    let (status, _) = get_within(&url, Duration::from_secs(1)).await;
    assert_eq!(status, 200);
    send(
        reqwest::Method::PUT,
        format!("{url}api/v1/skills/plain/1.0.0"),
        Some(&ci),
        plain,
        &[],
    )
    .await
    .is(201, None);
    put.await.unwrap().is(201, None);
    let (_, index) = get_within(
        &format!("{url}.well-known/agent-skills/index.json"),
        Duration::from_secs(1),
    )
    .await;
    assert!(
        index.contains("\"deep\"") && index.contains("\"plain\""),
        "{index}"
    );
    // Its page answers, the body shown as escaped text with a note saying why.
    let (status, page) = get_within(&format!("{url}skills/deep/"), Duration::from_secs(5)).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("not rendered as Markdown"),
        "{}",
        &page[..2000]
    );
    assert!(page.contains("&gt;&gt;&gt;&gt;"));
    assert!(!page.contains("<blockquote"));
    let (status, _) = get_within(&url, Duration::from_secs(1)).await;
    assert_eq!(status, 200);

    // `skillcat publish` of the same body answers too (it read it into a site, rendered).
    write_skill(&dir.join("v2/deep"), &doc("deep", "1.0.1", &deep), &[]);
    Skillcat::new(&[
        "publish",
        &url,
        dir.join("v2/deep").to_str().unwrap(),
        "--token-file",
        "ci.token",
    ])
    .cwd(dir)
    .env_remove("SKILLCAT_TOKEN")
    .deadline(Duration::from_secs(60))
    .run()
    .code(0);
    server.stop();

    // A restart over the registry that holds it listens within 5 s.
    let (mut child, url) = serve_listening_within(dir, Duration::from_secs(5))
        .expect("the restarted server did not listen within 5 s");
    let (status, page) = get_within(&format!("{url}skills/deep/"), Duration::from_secs(5)).await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200);
    assert!(page.contains("not rendered as Markdown"));
}

/// Finding 4 of issue 49: a hyphen-joined query of repeated words was one FTS5 phrase of up
/// to 250 terms; against 1 MB bodies it answered 500 after 31–43 s naming the registry's file
/// (`registry /tmp/…/r.db: interrupted`), on the API and on the search page. The query is
/// capped now (terms per query and per phrase) and a deadline interrupts SQLite from outside;
/// whatever happens, an answer names no file of the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expensive_search_is_capped_and_its_answer_names_no_server_file() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let body = "word ".repeat(190_000);
    for name in (b'a'..=b'l').map(|c| format!("big-{}", c as char)) {
        let name = name.as_str();
        let src = dir.join(format!("src-{name}"));
        write_skill(&src.join(name), &doc(name, "1.0.0", &body), &[]);
        Skillcat::new(&["registry", "publish", "r.db", src.to_str().unwrap()])
            .cwd(dir)
            .run()
            .code(0);
    }
    let server = crate::support::serve::spawn_serve(&dir.join("r.db"), &[], Stdio::null());
    let (mut child, _, url) = server;
    let hostile = ["word"; 100].join("-");
    let spaced = ["word"; 32].join(" ");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let shown = dir.to_str().unwrap().to_string();
    for q in [&hostile, &spaced] {
        for path in ["api/v1/search", "search/"] {
            let resp = client
                .get(format!("{url}{path}?q={}", q.replace(' ', "+")))
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap();
            assert!(
                !text.contains(&shown) && !text.contains("r.db") && !text.contains("/tmp"),
                "{path}: {status} {}",
                &text[..text.len().min(400)]
            );
            match status {
                200 => assert!(text.contains("big-a"), "{path}: {text}"),
                503 => assert!(text.contains("search_timeout"), "{path}: {text}"),
                other => panic!("{path}: {other} {}", &text[..text.len().min(400)]),
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
