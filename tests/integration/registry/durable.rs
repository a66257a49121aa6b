//! Durable versions (issue 51, items 1–3), through the real binary on 127.0.0.1: every version
//! a registry has published stays served at its immutable blob URL whatever is published or
//! yanked after it; a lockfile restores the version it pins (a yanked one with a warning); only
//! new resolution skips yanked versions, and `add NAME@VERSION` of one needs `--allow-yanked`;
//! `NAME@VERSION` reads any version of a served registry.

use std::path::Path;

use serde_json::Value as J;

use crate::support::bin::{Out, Skillcat};
use crate::support::central::{doc, registry_dir, token};
use crate::support::project::{Project, key};
use crate::support::publish::Server;
use crate::support::registry::sha256_digest;
use crate::support::write_skill;

/// `skillcat ARGS…` in `dir`, with no token or CA from the environment.
fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env_remove("SKILLCAT_TOKEN")
        .env_remove("SSL_CERT_FILE")
        .run()
}

/// Publishes `csv-stats` at `version` to `url` with the token in `dir/ci.token`.
fn publish(dir: &Path, url: &str, version: &str) {
    let skill = dir.join(format!("v{version}")).join("csv-stats");
    write_skill(
        &skill,
        &doc("csv-stats", version, &format!("Version {version}.")),
        &[("references/notes.md", &format!("Notes {version}.\n"), false)],
    );
    run(
        dir,
        &[
            "publish",
            url,
            skill.to_str().unwrap(),
            "--token-file",
            "ci.token",
        ],
    )
    .code(0);
}

fn yank(dir: &Path, url: &str, version: &str) {
    let spec = format!("csv-stats@{version}");
    run(dir, &["yank", url, &spec, "--token-file", "ci.token"]).code(0);
}

/// `GET url`: status, `Cache-Control`, body.
async fn get(url: &str) -> (u16, String, Vec<u8>) {
    let r = reqwest::get(url).await.unwrap();
    let status = r.status().as_u16();
    let cache = r
        .headers()
        .get("cache-control")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, cache, r.bytes().await.unwrap().to_vec())
}

async fn versions(url: &str) -> Vec<J> {
    let (status, _, body) = get(&format!("{url}api/v1/skills/csv-stats")).await;
    assert_eq!(status, 200);
    let j: J = serde_json::from_slice(&body).unwrap();
    j["versions"].as_array().unwrap().clone()
}

/// Every published version's archive is served, byte for byte the one its digest names, with
/// immutable caching, yanked or not, older or latest; each version's page shows its install
/// command and archive digest; the index still lists the latest version alone.
#[tokio::test(flavor = "multi_thread")]
async fn every_published_version_stays_served() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish,yank,audit");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let s = Server::start(dir, &[]);
    for v in ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"] {
        publish(dir, &s.url, v);
    }
    yank(dir, &s.url, "0.3.0");

    let listed = versions(&s.url).await;
    assert_eq!(listed.len(), 5, "{listed:?}");
    for v in &listed {
        let version = v["version"].as_str().unwrap();
        let digest = v["archive_digest"]
            .as_str()
            .unwrap_or_else(|| panic!("{version}: no archive digest: {v}"));
        let blob = v["archive_url"].as_str().unwrap().trim_start_matches('/');
        let (status, cache, body) = get(&format!("{}{blob}", s.url)).await;
        assert_eq!(status, 200, "{version}: {blob}");
        assert_eq!(cache, "public, max-age=31536000, immutable", "{version}");
        let actual = sha256_digest(&body);
        assert_eq!(actual, digest, "{version}");
        let (status, _, page) = get(&format!("{}skills/csv-stats/{version}/", s.url)).await;
        let page = String::from_utf8(page).unwrap();
        assert_eq!(status, 200, "{version}");
        assert!(
            page.contains(&format!("csv-stats@{version}</code>")),
            "{page}"
        );
        assert!(page.contains(digest), "{version}: {page}");
        assert!(!page.contains("not served"), "{version}: {page}");
    }
    let (_, _, index) = get(&format!("{}.well-known/agent-skills/index.json", s.url)).await;
    let index: J = serde_json::from_slice(&index).unwrap();
    let live = index["skills"].as_array().unwrap();
    assert_eq!(live.len(), 1, "{index}");
    assert_eq!(live[0]["version"], "0.5.0");
    s.stop();

    // The same registry served afresh (no --publish): the same versions, the same blobs.
    let (mut child, _, url) =
        crate::support::serve::spawn_serve(&dir.join("r.db"), &[], std::process::Stdio::null());
    let again = versions(&url).await;
    for (a, b) in listed.iter().zip(&again) {
        assert_eq!(a["archive_digest"], b["archive_digest"]);
        let blob = b["archive_url"].as_str().unwrap().trim_start_matches('/');
        assert_eq!(get(&format!("{url}{blob}")).await.0, 200);
    }
    let _ = child.kill();
    let _ = child.wait();

    // `export` writes every version's archive too, as `serve` answers it.
    run(dir, &["export", "r.db", "site"]).code(0);
    for v in &listed {
        let blob = v["archive_url"].as_str().unwrap().trim_start_matches('/');
        let body = std::fs::read(dir.join("site").join(blob)).unwrap();
        assert_eq!(sha256_digest(&body), v["archive_digest"], "{v}");
    }
}

/// A project locked at 0.4.0 restores 0.4.0 with `install --frozen` after 0.5.0 is out; once
/// 0.4.0 is yanked it still restores, with a warning naming the yank. `add NAME@VERSION` of a
/// yanked version is refused without `--allow-yanked`; an older version reads by its version
/// over HTTP for every reader.
#[tokio::test(flavor = "multi_thread")]
async fn a_lock_restores_what_it_pins_and_name_at_version_reads_any_version() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish,yank,audit");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let s = Server::start(dir, &[]);
    for v in ["0.1.0", "0.2.0", "0.3.0", "0.4.0"] {
        publish(dir, &s.url, v);
    }
    yank(dir, &s.url, "0.3.0");

    let p = Project::new();
    p.run(&["add", &s.url, "csv-stats"]).code(0);
    assert_eq!(p.lock()["skills"]["csv-stats"]["version"], "0.4.0");
    let digest = p.lock()["skills"]["csv-stats"]["digest"].clone();
    let lock = p.lock_bytes();

    publish(dir, &s.url, "0.5.0");
    let restore = |p: &Project| {
        std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
        let out = p.run(&["install", "--frozen"]);
        out.code(0);
        assert_eq!(p.lock_bytes(), lock);
        assert_eq!(p.digest_of(&p.installed("csv-stats")), digest);
        let body = std::fs::read_to_string(p.installed("csv-stats").join("SKILL.md")).unwrap();
        assert!(body.contains("Version 0.4.0."), "{body}");
        out
    };
    restore(&p);
    // Yanked after it was locked: restored all the same, with a warning naming the yank.
    yank(dir, &s.url, "0.4.0");
    restore(&p).says(&["warning", "csv-stats@0.4.0", "yanked"]);

    // Only new resolution skips yanked versions.
    let q = Project::new();
    q.run(&["add", &s.url, "csv-stats@0.3.0"]).code(1).says(&[
        "csv-stats@0.3.0",
        "yanked",
        "--allow-yanked",
    ]);
    assert!(!q.lockfile().exists() || q.lock()["skills"]["csv-stats"].is_null());
    q.run(&["add", &s.url, "csv-stats@0.3.0", "--allow-yanked"])
        .code(0)
        .says(&["yanked"]);
    assert_eq!(q.lock()["skills"]["csv-stats"]["version"], "0.3.0");
    // The same rule for the registry file itself.
    let db = dir.join("r.db");
    let db = db.to_str().unwrap();
    let f = Project::new();
    f.run(&["add", db, "csv-stats@0.3.0"]).code(1).says(&[
        "csv-stats@0.3.0",
        "yanked",
        "--allow-yanked",
    ]);
    f.run(&["add", db, "csv-stats@0.3.0", "--allow-yanked"])
        .code(0);
    assert_eq!(f.lock()["skills"]["csv-stats"]["version"], "0.3.0");

    // An older version, by its version, for every reader.
    let r = Project::new();
    r.run(&["add", &s.url, "csv-stats@0.2.0"]).code(0);
    assert_eq!(r.lock()["skills"]["csv-stats"]["version"], "0.2.0");
    std::fs::remove_dir_all(r.root.join(".agents/skills")).unwrap();
    r.run(&["install", "--frozen"]).code(0);
    let shown = run(dir, &["show", &s.url, "csv-stats@0.2.0"]);
    assert!(
        shown.code(0).out().contains("Version 0.2.0."),
        "{}",
        shown.out()
    );
    let read = run(
        dir,
        &["read", &s.url, "csv-stats@0.2.0", "references/notes.md"],
    );
    assert_eq!(read.code(0).out(), "Notes 0.2.0.\n");
    run(dir, &["digest", &s.url, "csv-stats@0.1.0"]).code(0);
    // Unsigned, so not verified: but found, at that version.
    let ring = key(dir, "signer", "*");
    let keyring = ring.keyring.to_str().unwrap();
    let verify = run(
        dir,
        &["verify", &s.url, "csv-stats@0.1.0", "--keyring", keyring],
    );
    verify.code(1).says(&["csv-stats", "no signature"]);
    run(
        dir,
        &["verify", &s.url, "csv-stats@9.9.9", "--keyring", keyring],
    )
    .code(1)
    .says(&["csv-stats@9.9.9", "no such version"]);
    // A version there is not: the versions there are.
    run(dir, &["show", &s.url, "csv-stats@9.9.9"])
        .code(1)
        .says(&[
            "csv-stats@9.9.9",
            "0.1.0",
            "0.2.0",
            "0.3.0 (yanked)",
            "0.5.0",
        ]);
    s.stop();
}

/// A static file server over `root` on 127.0.0.1 (what any web server does with an export):
/// `index.html` for a folder, `application/json` for `*.json` and `application/octet-stream`
/// for every other file (a static host types by extension), 404 otherwise. Its address.
async fn static_host(root: std::path::PathBuf) -> String {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let root = root.clone();
            tokio::spawn(async move {
                let Some(head) = crate::support::read_request_head(&mut stream).await else {
                    return;
                };
                let path = head.split(' ').nth(1).unwrap_or("/");
                let path = path.split('?').next().unwrap_or("/");
                let rel = path.trim_start_matches('/');
                let mut file = root.join(rel);
                if rel.is_empty() || rel.ends_with('/') {
                    file = file.join("index.html");
                }
                let answer = match std::fs::read(&file) {
                    Ok(body) if !rel.split('/').any(|c| c == "..") => {
                        let ctype = match file.extension().and_then(|e| e.to_str()) {
                            Some("json") => "application/json",
                            Some("html") => "text/html",
                            _ => "application/octet-stream",
                        };
                        crate::support::http_response(200, &[("Content-Type", ctype)], &body)
                    }
                    _ => crate::support::http_response(404, &[], b"not found\n"),
                };
                let _ = stream.write_all(&answer).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    format!("http://{addr}/")
}

/// Publishes `csv-stats` at `version` straight into the registry file `dir/r.db`, with a
/// script (a tool) of its own.
fn publish_file(dir: &Path, version: &str) {
    let skill = dir.join(format!("v{version}")).join("csv-stats");
    write_skill(
        &skill,
        &doc("csv-stats", version, &format!("Version {version}.")),
        &[
            ("references/notes.md", &format!("Notes {version}.\n"), false),
            (
                "scripts/summary.sh",
                &format!("#!/bin/sh\n# Print the summary of version {version}.\necho {version}\n"),
                true,
            ),
        ],
    );
    run(
        dir,
        &["registry", "publish", "r.db", skill.to_str().unwrap()],
    )
    .code(0);
}

/// A registry exported as static files and served by a plain static host keeps every version
/// readable by its version: `export` writes the API answer `serve` gives for
/// `/api/v1/skills/NAME` (the same bytes) as a file, so `read`, `tools`, `add` and `install
/// --frozen` of an older version work there, as the version's page says they do.
#[tokio::test(flavor = "multi_thread")]
async fn a_static_export_serves_every_version_by_its_version() {
    let tmp = registry_dir();
    let dir = tmp.path();
    for v in ["0.1.0", "0.2.0", "0.3.0", "0.4.0"] {
        publish_file(dir, v);
    }
    run(dir, &["registry", "yank", "r.db", "csv-stats@0.3.0"]).code(0);
    run(dir, &["export", "r.db", "site"]).code(0);

    let url = static_host(dir.join("site")).await;
    let read = run(
        dir,
        &["read", &url, "csv-stats@0.1.0", "references/notes.md"],
    );
    assert_eq!(read.code(0).out(), "Notes 0.1.0.\n", "{}", read.stderr);
    let tools = run(dir, &["tools", &url, "csv-stats@0.2.0"]);
    assert!(
        tools.code(0).out().contains("version 0.2.0"),
        "{}",
        tools.out()
    );
    let p = Project::new();
    p.run(&["add", &url, "csv-stats@0.2.0"]).code(0);
    assert_eq!(p.lock()["skills"]["csv-stats"]["version"], "0.2.0");
    std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
    p.run(&["install", "--frozen"]).code(0);
    let body = std::fs::read_to_string(p.installed("csv-stats").join("SKILL.md")).unwrap();
    assert!(body.contains("Version 0.2.0."), "{body}");
    // The file is the very answer `serve` gives.
    let (mut child, _, served) =
        crate::support::serve::spawn_serve(&dir.join("r.db"), &[], std::process::Stdio::null());
    let (status, _, live) = get(&format!("{served}api/v1/skills/csv-stats")).await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200);
    let written = std::fs::read(dir.join("site/api/v1/skills/csv-stats"))
        .expect("export writes api/v1/skills/csv-stats");
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&live)
    );

    // A name it lacks: the skills it has, from its index.
    run(dir, &["registry", "versions", &url, "nope"])
        .code(1)
        .says(&["no skill named 'nope'", "skills: csv-stats"]);
    // The versions there are, from the same file.
    let listed = run(dir, &["registry", "versions", &url, "csv-stats"]);
    for v in ["0.1.0", "0.2.0", "0.3.0", "yanked", "0.4.0"] {
        assert!(listed.code(0).out().contains(v), "{v}: {}", listed.out());
    }
    run(dir, &["show", &url, "csv-stats@9.9.9"]).code(1).says(&[
        "csv-stats@9.9.9",
        "0.1.0",
        "0.2.0",
        "0.3.0 (yanked)",
        "0.4.0",
    ]);
}

/// An older version's page lists its tools as every other version's does, and `registry
/// versions` of a name the served registry lacks names the skills it has, as `add` does.
#[tokio::test(flavor = "multi_thread")]
async fn an_older_page_lists_its_tools_and_a_missing_name_lists_the_skills() {
    let tmp = registry_dir();
    let dir = tmp.path();
    for v in ["0.1.0", "0.2.0"] {
        publish_file(dir, v);
    }
    let (mut child, _, url) =
        crate::support::serve::spawn_serve(&dir.join("r.db"), &[], std::process::Stdio::null());
    let added = run(dir, &["add", &url, "nope", "--dry-run"]);
    added.code(1).says(&["no skill named 'nope'", "csv-stats"]);
    run(dir, &["registry", "versions", &url, "nope"])
        .code(1)
        .says(&["no skill named 'nope'", "skills: csv-stats"]);
    let (status, _, page) = get(&format!("{url}skills/csv-stats/0.1.0/")).await;
    let page = String::from_utf8(page).unwrap();
    assert_eq!(status, 200);
    assert!(!page.contains("not offered as tools"), "{page}");
    assert!(
        page.contains("Print the summary of version 0.1.0."),
        "{page}"
    );

    let _ = child.kill();
    let _ = child.wait();
}

/// A host whose API answer for one skill names another is refused: `read URL a@1.0` must never
/// read (or `add` install) the other skill under the name asked for.
#[tokio::test(flavor = "multi_thread")]
async fn an_api_answer_about_another_skill_is_refused() {
    let tmp = registry_dir();
    let dir = tmp.path();
    for v in ["0.1.0", "0.2.0"] {
        publish_file(dir, v);
    }
    run(dir, &["export", "r.db", "site"]).code(0);
    let api = dir.join("site/api/v1/skills/csv-stats");
    let mut answer: J = serde_json::from_slice(&std::fs::read(&api).unwrap()).unwrap();
    answer["name"] = J::from("other-skill");
    std::fs::write(&api, serde_json::to_vec(&answer).unwrap()).unwrap();
    let url = static_host(dir.join("site")).await;
    run(
        dir,
        &["read", &url, "csv-stats@0.1.0", "references/notes.md"],
    )
    .code(2)
    .says(&["answered about other-skill", "csv-stats"]);
}
