//! `skillcat serve` and `skillcat export` as a client sees them: the well-known indexes, ETag and
//! 304, immutable blobs, HEAD, single ranges (206, 416), 404, the v0.1 index and its files, the
//! access log, and an export that holds exactly what the server answers.
//!
//! Origin: step 4 (issue 5: serving skills over HTTP).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap};
use serde_json::Value as J;
use skillcat::digest::sha256_digest;

const BIN: &str = env!("CARGO_BIN_EXE_skillcat");

fn catalog() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog")
}

struct Served {
    child: Child,
    base: String,
}

impl Served {
    fn start(extra: &[&str]) -> Served {
        let (child, line, url) =
            crate::support::serve::spawn_serve(&catalog(), extra, Stdio::piped());
        assert!(
            line.starts_with("Serving 7 skills on http://127.0.0.1:"),
            "{line}"
        );
        let base = url.trim_end_matches('/').to_string();
        Served { child, base }
    }

    /// Stops the server with SIGINT (as Ctrl-C does) and returns its stderr.
    fn stop(mut self) -> String {
        interrupt(self.child.id());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "graceful shutdown exits 0: {status:?}");
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        err
    }
}

/// `kill -INT PID`, as Ctrl-C would (through the `kill` command: no unsafe code in tests).
fn interrupt(pid: u32) {
    let ok = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().build().unwrap()
}

async fn get(
    c: &reqwest::Client,
    url: &str,
    headers: &[(header::HeaderName, &str)],
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut req = c.get(url);
    for (k, v) in headers {
        req = req.header(k, *v);
    }
    let resp = req.send().await.unwrap();
    let (status, h) = (resp.status(), resp.headers().clone());
    (status, h, resp.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn indexes_blobs_ranges_and_errors() {
    let served = Served::start(&["--verbose"]);
    let c = client();
    let base = &served.base;

    // The v0.2.0 index: strong ETag, revalidated, JSON.
    let (status, h, body) = get(
        &c,
        &format!("{base}/.well-known/agent-skills/index.json"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h[header::CONTENT_TYPE], "application/json");
    assert_eq!(h[header::CACHE_CONTROL], "no-cache");
    let etag = h[header::ETAG].to_str().unwrap().to_string();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{etag}");
    let index: J = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        index["$schema"],
        "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
    );
    let names: Vec<&str> = index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "alpha",
            "beta-tool",
            "bom-doc",
            "crlf-doc",
            "flow-lists",
            "lower-doc",
            "навык"
        ]
    );
    let flow = &index["skills"][4];
    assert_eq!(flow["version"], "2.0.0");
    let (status, h, body) = get(
        &c,
        &format!("{base}/.well-known/agent-skills/index.json"),
        &[(header::IF_NONE_MATCH, &etag)],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert_eq!(h[header::ETAG].to_str().unwrap(), etag);

    // The archive blob: immutable, gzip, the digest the index promises.
    let alpha = &index["skills"][0];
    let url = reqwest::Url::parse(&format!("{base}/.well-known/agent-skills/index.json"))
        .unwrap()
        .join(alpha["url"].as_str().unwrap())
        .unwrap();
    let (status, h, archive) = get(&c, url.as_str(), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        h[header::CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(h[header::CONTENT_TYPE], "application/gzip");
    assert_eq!(sha256_digest(&archive), alpha["digest"].as_str().unwrap());
    let len = archive.len();

    // HEAD: the headers of GET, no body.
    let resp = c.head(url.as_str()).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()[header::CONTENT_LENGTH],
        len.to_string().as_str()
    );
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/gzip");
    assert!(resp.bytes().await.unwrap().is_empty());

    // Ranges: one range → 206; past the end → 416; several → the whole body.
    let (status, h, part) = get(&c, url.as_str(), &[(header::RANGE, "bytes=10-19")]).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        h[header::CONTENT_RANGE],
        format!("bytes 10-19/{len}").as_str()
    );
    assert_eq!(part, archive[10..20]);
    let (status, _, part) = get(&c, url.as_str(), &[(header::RANGE, "bytes=-5")]).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(part, archive[len - 5..]);
    let (status, h, _) = get(
        &c,
        url.as_str(),
        &[(header::RANGE, &format!("bytes={len}-"))],
    )
    .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(h[header::CONTENT_RANGE], format!("bytes */{len}").as_str());
    let (status, _, whole) = get(&c, url.as_str(), &[(header::RANGE, "bytes=0-1,5-6")]).await;
    assert_eq!((status, whole.len()), (StatusCode::OK, len));

    // Each file by content: SKILL.md is Markdown.
    let md = &alpha["skillcat"]["files"][0];
    assert_eq!(md["path"], "SKILL.md");
    let hex = &md["digest"].as_str().unwrap()[7..];
    let (status, h, body) = get(&c, &format!("{base}/blobs/sha256/{hex}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h[header::CONTENT_TYPE], "text/markdown; charset=utf-8");
    assert_eq!(
        body,
        std::fs::read(catalog().join("alpha/SKILL.md")).unwrap()
    );

    // The v0.1 index and its files, names percent-encoded.
    let (status, _, body) = get(&c, &format!("{base}/.well-known/skills/index.json"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let v1: J = serde_json::from_slice(&body).unwrap();
    assert!(v1.get("$schema").is_none());
    assert_eq!(
        v1["skills"][0],
        serde_json::json!({
            "name": "alpha",
            "description": alpha["description"],
            "files": ["SKILL.md", "references/guide.md", "scripts/run.sh"]
        })
    );
    let (status, _, body) = get(
        &c,
        &format!("{base}/.well-known/skills/alpha/scripts/run.sh"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        std::fs::read(catalog().join("alpha/scripts/run.sh")).unwrap()
    );
    let (status, _, body) = get(
        &c,
        &format!("{base}/.well-known/skills/%D0%BD%D0%B0%D0%B2%D1%8B%D0%BA/SKILL.md"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        std::fs::read(catalog().join("навык/SKILL.md")).unwrap()
    );
    let (status, _, _) = get(
        &c,
        &format!("{base}/.well-known/agent-skills/beta-tool/references/a/b/c.md"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // Invalid skills are not served; unknown paths are 404; other methods 405.
    for path in [
        "/.well-known/skills/name-mismatch/SKILL.md",
        "/.well-known/skills/alpha/scripts",
        "/blobs/sha256/00",
        "/skills/name-mismatch/",
        "/nope",
    ] {
        let (status, _, _) = get(&c, &format!("{base}{path}"), &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let resp = c
        .post(format!("{base}/.well-known/skills/index.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);

    // Invalid skills were reported; --verbose logged each request; Ctrl-C stops it cleanly.
    let stderr = served.stop();
    assert!(
        stderr.contains("name-mismatch") && stderr.contains("not served"),
        "{stderr}"
    );
    assert!(
        stderr.contains("\"GET /.well-known/agent-skills/index.json HTTP/1.1\" 304"),
        "{stderr}"
    );
    assert!(stderr.contains("\"HEAD /blobs/sha256/"), "{stderr}");
    assert!(stderr.contains("Stopped."), "{stderr}");
}

#[tokio::test]
async fn an_export_holds_exactly_what_serve_answers() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("public");
    let run = |args: &[&str]| Command::new(BIN).args(args).output().unwrap();
    let d = dir.to_str().unwrap();
    let c = catalog();
    let src = c.to_str().unwrap();
    // The pages name the address they are served at: the same one for both.
    let url = "https://skills.example.com/";
    let first = run(&["export", src, d, "--url", url]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "invalid roots are reported: exit 1"
    );
    assert!(String::from_utf8_lossy(&first.stdout).starts_with("Exported 7 skills ("));
    // A folder that is not empty is refused without --force, and nothing is changed.
    let again = run(&["export", src, d]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert_eq!(
        run(&["export", src, d, "--force", "--url", url])
            .status
            .code(),
        Some(1)
    );

    let served = Served::start(&["--url", url]);
    let c = client();
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                files.push(e.path());
            }
        }
    }
    assert!(
        files.iter().all(|f| !f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".skillcat-")),
        "no temp files"
    );
    // 42 files of the wire layout, and the catalog's pages: a listing page by name and one by
    // update, a page per skill (and per version), each file's text view, the stylesheet and
    // the static search page.
    let pages = files
        .iter()
        .filter(|f| {
            let rel = f.strip_prefix(&dir).unwrap();
            !rel.starts_with(".well-known") && !rel.starts_with("blobs")
        })
        .count();
    assert_eq!(files.len() - pages, 42);
    assert!(dir.join("index.html").is_file() && dir.join("assets/style.css").is_file());
    for f in &files {
        let rel = f.strip_prefix(&dir).unwrap().to_str().unwrap();
        let url = reqwest::Url::parse(&format!("{}/", served.base))
            .unwrap()
            .join(rel)
            .unwrap();
        let (status, _, body) = get(&c, url.as_str(), &[]).await;
        assert_eq!(status, StatusCode::OK, "{rel}");
        assert_eq!(body, std::fs::read(f).unwrap(), "{rel}");
    }
}
