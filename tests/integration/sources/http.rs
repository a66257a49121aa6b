//! The HTTP source against real local servers on 127.0.0.1:0: the conformance suite through
//! `skillcat serve` and through a static export, the cache (warm runs, offline, corruption,
//! eight processes at once), retries, and hostile servers that lie about what they send.
//!
//! Origin: step 4 (issue 5: serving skills over HTTP, and the remote cache).

use crate::support::http_response as response;

#[path = "../../../benches/support/corpus.rs"]
mod corpus;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value as J;
use skillcat::Error;
use skillcat::digest::sha256_digest;
use skillcat::serve::{AGENT_SKILLS_INDEX, Site, SiteOptions, decode_path};
use skillcat::source::http::{FetchStatus, HttpOptions, HttpSource};
use skillcat::source::{DirOptions, DirSource, Source, SourceExt};
use tokio::io::AsyncWriteExt;

const BIN: &str = env!("CARGO_BIN_EXE_skillcat");

// ---------------------------------------------------------------------------------------------
// A tiny HTTP/1.1 server: one request per connection, answers from a closure, logs requests.

#[derive(Debug, Clone)]
struct Req {
    path: String,
    headers: HashMap<String, String>,
}

type Handler = Arc<dyn Fn(&Req) -> Vec<u8> + Send + Sync>;

struct Server {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<Req>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(handler: impl Fn(&Req) -> Vec<u8> + Send + Sync + 'static) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let log2 = Arc::clone(&log);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (h, log) = (Arc::clone(&handler), Arc::clone(&log2));
                tokio::spawn(connection(stream, h, log));
            }
        });
        Server { addr, log, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> Vec<Req> {
        self.log.lock().unwrap().clone()
    }

    fn clear(&self) {
        self.log.lock().unwrap().clear();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn connection(
    mut stream: tokio::net::TcpStream,
    handler: Handler,
    log: Arc<Mutex<Vec<Req>>>,
) {
    let Some(text) = crate::support::read_request_head(&mut stream).await else {
        return;
    };
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let path = request_line.split(' ').nth(1).unwrap_or("/").to_string();
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let req = Req { path, headers };
    log.lock().unwrap().push(req.clone());
    let response = handler(&req);
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

/// Answers from a built site (ETag + If-None-Match → 304), or 404.
fn from_site(site: &Site, req: &Req) -> Vec<u8> {
    let path = decode_path(&req.path).unwrap_or_default();
    match site.get(path.trim_start_matches('/')) {
        Some(res) if req.headers.get("if-none-match") == Some(&res.etag) => {
            response(304, &[("ETag", &res.etag)], b"")
        }
        Some(res) => response(
            200,
            &[("ETag", &res.etag), ("Content-Type", res.content_type)],
            &res.body,
        ),
        None => response(404, &[], b"not found\n"),
    }
}

/// A static file server over a folder (what any web server does with an export): ETag from the
/// content, 304 on If-None-Match, octet-stream for everything but JSON.
fn static_files(root: PathBuf) -> impl Fn(&Req) -> Vec<u8> + Send + Sync + 'static {
    move |req| {
        let Some(path) = decode_path(&req.path) else {
            return response(400, &[], b"");
        };
        let rel = path.trim_start_matches('/');
        if rel.split('/').any(|c| c == ".." || c.is_empty()) {
            return response(404, &[], b"");
        }
        match std::fs::read(root.join(rel)) {
            Ok(bytes) => {
                let etag = format!("\"{}\"", &sha256_digest(&bytes)[7..]);
                if req.headers.get("if-none-match") == Some(&etag) {
                    return response(304, &[("ETag", &etag)], b"");
                }
                let ctype = if rel.ends_with(".json") {
                    "application/json"
                } else {
                    "application/octet-stream"
                };
                response(200, &[("ETag", &etag), ("Content-Type", ctype)], &bytes)
            }
            Err(_) => response(404, &[], b"not found\n"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn catalog_site_blocking() -> Site {
    let rt = tokio::runtime::Handle::current();
    tokio::task::block_in_place(|| {
        rt.block_on(async {
            let src = DirSource::open(
                &skillcat_core::testing::catalog_dir(),
                DirOptions::default(),
            )
            .unwrap();
            Site::build(&src, &SiteOptions::default()).await.unwrap().0
        })
    })
}

fn opts(cache: &Path) -> HttpOptions {
    HttpOptions {
        cache_dir: Some(cache.to_path_buf()),
        retries: 2,
        backoff: Duration::from_millis(5),
        ..HttpOptions::default()
    }
}

fn offline(cache: &Path) -> HttpOptions {
    HttpOptions {
        offline: true,
        ..opts(cache)
    }
}

/// Every blob file in the cache: (name, whether its content hashes to its name).
fn cache_blobs(cache: &Path) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![cache.join("blobs-v3")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = e.file_name().into_string().unwrap();
                let ok = sha256_digest(&std::fs::read(&p).unwrap())[7..] == name;
                out.push((name, ok));
            }
        }
    }
    out.sort();
    out
}

fn tmp_files(cache: &Path) -> usize {
    std::fs::read_dir(cache.join("tmp")).map_or(0, |d| d.count())
}

/// Digests of the valid catalog roots as the directory source gives them.
async fn dir_digests() -> Vec<(String, String)> {
    let src = DirSource::open(
        &skillcat_core::testing::catalog_dir(),
        DirOptions::default(),
    )
    .unwrap();
    let valid: Vec<String> = catalog_json()
        .iter()
        .filter(|c| c["valid"].as_bool().unwrap())
        .map(|c| c["root"].as_str().unwrap().to_string())
        .collect();
    let mut out = Vec::new();
    for root in valid {
        out.push((
            root.clone(),
            src.manifest(&root, "", "").await.unwrap().digest,
        ));
    }
    out
}

fn catalog_json() -> Vec<J> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog.json");
    serde_json::from_str::<J>(&std::fs::read_to_string(p).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

async fn same_digests_as_the_directory(src: &dyn Source) {
    for (root, digest) in dir_digests().await {
        assert_eq!(
            src.manifest(&root, "", "").await.unwrap().digest,
            digest,
            "{root}"
        );
    }
}

/// `skillcat serve` as a child process; killed on drop.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(source: &Path) -> Served {
        let (child, line, url) = crate::support::serve::spawn_serve(source, &[], Stdio::null());
        assert!(
            line.starts_with("Serving ") && url.starts_with("http://127.0.0.1:"),
            "{line}"
        );
        Served { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Conformance

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_through_skillcat_serve() {
    let served = Served::start(&skillcat_core::testing::catalog_dir());
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new(&served.url, opts(cache.path())).unwrap();
    skillcat_core::testing::check_valid_subset(&src).await;
    same_digests_as_the_directory(&src).await;
    assert!(src.warnings().is_empty(), "{:?}", src.warnings());
    // Warm and offline: the same answers from the cache alone.
    let again = HttpSource::new(&served.url, offline(cache.path())).unwrap();
    skillcat_core::testing::check_valid_subset(&again).await;
    assert_eq!(again.stats().requests, 0);
    assert_eq!(tmp_files(cache.path()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_through_a_static_export() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("site");
    let status = Command::new(BIN)
        .arg("export")
        .arg(skillcat_core::testing::catalog_dir())
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    // Invalid catalog roots are reported and skipped: exit 1, valid ones exported.
    assert_eq!(status.code(), Some(1));
    let server = Server::start(static_files(dir.clone())).await;
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new(&server.url("/"), opts(cache.path())).unwrap();
    skillcat_core::testing::check_valid_subset(&src).await;
    same_digests_as_the_directory(&src).await;
    // Index + one archive per valid skill, nothing twice.
    let valid = dir_digests().await.len();
    assert_eq!(
        server.requests().len(),
        1 + valid,
        "{:?}",
        server.requests()
    );
    // The blobs were served as application/octet-stream: the format came from magic bytes.
    assert!(
        server
            .requests()
            .iter()
            .skip(1)
            .all(|r| r.path.starts_with("/blobs/sha256/"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_run_makes_one_conditional_request_and_no_blob_requests() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("site");
    let site = catalog_site_blocking();
    skillcat::serve::export(&site, &dir, false).unwrap();
    let server = Server::start(static_files(dir)).await;
    let cache = tempfile::tempdir().unwrap();
    let cold = HttpSource::new(&server.url("/"), opts(cache.path())).unwrap();
    let reports = cold.prefetch(|_| {}).await.unwrap();
    assert!(
        reports.iter().all(|r| r.status == FetchStatus::Fetched),
        "{reports:?}"
    );
    server.clear();

    let warm = HttpSource::new(&server.url("/"), opts(cache.path())).unwrap();
    let reports = warm.prefetch(|_| {}).await.unwrap();
    assert!(
        reports.iter().all(|r| r.status == FetchStatus::Cached),
        "{reports:?}"
    );
    skillcat_core::testing::check_valid_subset(&warm).await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert_eq!(reqs[0].path, format!("/{AGENT_SKILLS_INDEX}"));
    assert!(reqs[0].headers.contains_key("if-none-match"), "{reqs:?}");
    // An index may come gzipped (decoded, the decoded size counted against the limit);
    // artifacts never are: their bytes are hashed as served.
    assert_eq!(
        reqs[0].headers.get("accept-encoding").map(String::as_str),
        Some("gzip, identity")
    );
    let stats = warm.stats();
    assert_eq!((stats.requests, stats.not_modified, stats.bytes), (1, 1, 0));
}

// ---------------------------------------------------------------------------------------------
// Hostile servers: every lie is an error naming what was expected and what came, and nothing
// of it enters the cache.

#[derive(Debug, Clone, Copy)]
enum Lie {
    FlipOneByte,
    CutBodyHonestLength,
    CutBodyNoLength,
    ShortContentLength,
    WrongIndexDigest,
    WrongSkillDigest,
    HugeContentLength,
}

/// The archive blob of `alpha` and the index as served.
fn alpha_archive(site: &Site) -> (String, Vec<u8>) {
    let index: J = serde_json::from_slice(&site.get(AGENT_SKILLS_INDEX).unwrap().body).unwrap();
    let alpha = index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "alpha")
        .unwrap();
    let hex = alpha["digest"].as_str().unwrap()[7..].to_string();
    let body = site
        .get(&format!("blobs/sha256/{hex}"))
        .unwrap()
        .body
        .to_vec();
    (hex, body)
}

fn hostile(site: Arc<Site>, lie: Lie) -> impl Fn(&Req) -> Vec<u8> + Send + Sync + 'static {
    let (hex, archive) = alpha_archive(&site);
    move |req| {
        let path = req.path.trim_start_matches('/');
        if path == AGENT_SKILLS_INDEX {
            let mut index: J =
                serde_json::from_slice(&site.get(AGENT_SKILLS_INDEX).unwrap().body).unwrap();
            for e in index["skills"].as_array_mut().unwrap() {
                if e["name"] != "alpha" {
                    continue;
                }
                match lie {
                    Lie::WrongIndexDigest => {
                        e["digest"] = J::from(sha256_digest(b"something else"))
                    }
                    Lie::WrongSkillDigest => {
                        e["skillcat"]["skill_digest"] = J::from(sha256_digest(b"another tree"))
                    }
                    _ => {}
                }
            }
            return response(
                200,
                &[("Content-Type", "application/json")],
                index.to_string().as_bytes(),
            );
        }
        if path == format!("blobs/sha256/{hex}") {
            let n = archive.len();
            return match lie {
                Lie::FlipOneByte => {
                    let mut bad = archive.clone();
                    bad[n / 2] ^= 0x01;
                    response(200, &[], &bad)
                }
                Lie::CutBodyHonestLength => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {n}\r\n\r\n"
                    )
                    .into_bytes();
                    r.extend_from_slice(&archive[..n - 10]);
                    r
                }
                Lie::CutBodyNoLength => {
                    let mut r = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
                    r.extend_from_slice(&archive[..n - 10]);
                    r
                }
                Lie::ShortContentLength => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                        n - 5
                    )
                    .into_bytes();
                    r.extend_from_slice(&archive);
                    r
                }
                Lie::HugeContentLength => {
                    let mut r = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 999999999999\r\n\r\n".to_vec();
                    r.extend_from_slice(&archive);
                    r
                }
                Lie::WrongIndexDigest | Lie::WrongSkillDigest => response(200, &[], &archive),
            };
        }
        from_site(&site, req)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_servers_are_caught_and_nothing_enters_the_cache() {
    let site = Arc::new(catalog_site_blocking());
    let (hex, archive) = alpha_archive(&site);
    let expected = format!("sha256:{hex}");
    for lie in [
        Lie::FlipOneByte,
        Lie::CutBodyHonestLength,
        Lie::CutBodyNoLength,
        Lie::ShortContentLength,
        Lie::WrongIndexDigest,
        Lie::WrongSkillDigest,
        Lie::HugeContentLength,
    ] {
        let server = Server::start(hostile(Arc::clone(&site), lie)).await;
        let cache = tempfile::tempdir().unwrap();
        let src = HttpSource::new(&server.url("/"), opts(cache.path())).unwrap();
        let err = src.files("alpha").await.unwrap_err();
        let msg = err.to_string();
        match lie {
            Lie::FlipOneByte | Lie::CutBodyNoLength | Lie::ShortContentLength => {
                assert!(
                    matches!(err, Error::DigestMismatch { .. }),
                    "{lie:?}: {msg}"
                );
                assert!(
                    msg.contains(&format!("expected {expected}, got sha256:")),
                    "{lie:?}: {msg}"
                );
            }
            Lie::CutBodyHonestLength => {
                let want = format!(
                    "expected {} bytes from Content-Length, got {}",
                    archive.len(),
                    archive.len() - 10
                );
                assert!(msg.contains(&want), "{lie:?}: {msg}");
            }
            Lie::WrongIndexDigest => {
                let want = format!(
                    "expected {}, got {expected}",
                    sha256_digest(b"something else")
                );
                assert!(msg.contains(&want), "{lie:?}: {msg}");
            }
            Lie::WrongSkillDigest => {
                assert!(msg.contains("skill digest"), "{msg}");
                assert!(
                    msg.contains(&format!("expected {}", sha256_digest(b"another tree"))),
                    "{msg}"
                );
                assert!(msg.contains("got sha256:48d9f6661a8eb24635d83d459d0d4c4f0d7de9e8f2d21d85b6b75a2d93aa93a2"), "{msg}");
            }
            Lie::HugeContentLength => {
                assert!(matches!(err, Error::TooLarge { .. }), "{lie:?}: {msg}");
            }
        }
        // Only the index body is cached; no temp file is left; the other skills still load.
        let blobs = cache_blobs(cache.path());
        assert_eq!(blobs.len(), 1, "{lie:?}: {blobs:?}");
        assert!(
            blobs.iter().all(|(name, ok)| *ok && *name != hex),
            "{lie:?}"
        );
        assert_eq!(tmp_files(cache.path()), 0);
        assert_eq!(src.files("beta-tool").await.unwrap().len(), 3, "{lie:?}");
        // Retried only where a retry could help (a cut body), never after a verified lie.
        let alpha_requests = server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with(&hex))
            .count();
        let want = if matches!(lie, Lie::CutBodyHonestLength) {
            3
        } else {
            1
        };
        assert_eq!(alpha_requests, want, "{lie:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Offline and corruption

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_with_an_empty_cache_says_what_is_not_cached() {
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new("http://127.0.0.1:9/", offline(cache.path())).unwrap();
    let err = src.list().await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NotFound(_)), "{msg}");
    assert!(
        msg.contains("not cached") && msg.contains("--offline"),
        "{msg}"
    );
    assert!(msg.contains(&cache.path().display().to_string()), "{msg}");
    // The command line says the same and exits 2.
    let out = Command::new(BIN)
        .arg("--offline")
        .arg("--cache")
        .arg(cache.path())
        .args(["fetch", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not cached"), "{stderr}");
}

/// Serves the conformance catalog, fetches every skill of it into `cache`, stops the server
/// and returns the URL it had: a cache that is warm for a server that is gone.
async fn warmed_cache(cache: &Path) -> String {
    let served = Served::start(&skillcat_core::testing::catalog_dir());
    let src = HttpSource::new(&served.url, opts(cache)).unwrap();
    src.prefetch(|_| {}).await.unwrap();
    served.url.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_cache_works_with_no_server_running() {
    let cache = tempfile::tempdir().unwrap();
    let url = warmed_cache(cache.path()).await;
    let src = HttpSource::new(&url, offline(cache.path())).unwrap();
    skillcat_core::testing::check_valid_subset(&src).await;
    // Online with the server gone: the cached index is used, and a warning says so.
    let src = HttpSource::new(
        &url,
        HttpOptions {
            retries: 0,
            ..opts(cache.path())
        },
    )
    .unwrap();
    skillcat_core::testing::check_valid_subset(&src).await;
    let warnings = src.warnings();
    assert!(
        warnings.iter().any(|w| w.contains("using the cached copy")),
        "{warnings:?}"
    );
    // And the command line, offline, lists every skill as cached.
    let out = Command::new(BIN)
        .arg("--offline")
        .arg("--cache")
        .arg(cache.path())
        .args(["fetch", &url])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with("  cached")).count(),
        7,
        "{stdout}"
    );
}

/// A stale cached index is said on stderr wherever a catalog is used: `skillcat prompt` with
/// no SOURCE (the configured catalog), and the MCP server's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_index_warning_reaches_prompt_and_the_mcp_log() {
    let cache = tempfile::tempdir().unwrap();
    let url = warmed_cache(cache.path()).await;
    // The server is gone: the cached index is all there is.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("skillcat.toml");
    std::fs::write(
        &config,
        format!(
            "cache_dir = {:?}\n\n[[sources]]\nname = \"remote\"\npath = {url:?}\n",
            cache.path().display().to_string()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["prompt"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains("using the cached copy")),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("<name>\nalpha\n</name>"), "{stdout}");

    let out = run(&["mcp"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains("using the cached copy")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_cache_entry_is_deleted_and_fetched_again() {
    let site = Arc::new(catalog_site_blocking());
    let (hex, archive) = alpha_archive(&site);
    let s2 = Arc::clone(&site);
    let server = Server::start(move |r| from_site(&s2, r)).await;
    let cache = tempfile::tempdir().unwrap();
    HttpSource::new(&server.url("/"), opts(cache.path()))
        .unwrap()
        .prefetch(|_| {})
        .await
        .unwrap();
    let path = cache.path().join(format!("blobs-v3/sha256/{hex}"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();

    // Offline, the damaged entry is found, deleted and reported as not cached.
    let off = HttpSource::new(&server.url("/"), offline(cache.path())).unwrap();
    let err = off.files("alpha").await.unwrap_err().to_string();
    assert!(err.contains("not cached"), "{err}");
    assert!(!path.exists());
    std::fs::write(&path, &bytes).unwrap();

    server.clear();
    let src = HttpSource::new(&server.url("/"), opts(cache.path())).unwrap();
    skillcat_core::testing::check_valid_subset(&src).await;
    assert!(
        src.warnings()
            .iter()
            .any(|w| w.contains("deleted and fetched again")),
        "{:?}",
        src.warnings()
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        archive,
        "the entry is whole again"
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            format!("/{AGENT_SKILLS_INDEX}"),
            format!("/blobs/sha256/{hex}")
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Retries, redirects, other indexes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_and_not_found_is_not() {
    let site = Arc::new(catalog_site_blocking());
    let failures = Arc::new(AtomicUsize::new(2));
    let (s2, f2) = (Arc::clone(&site), Arc::clone(&failures));
    let server = Server::start(move |r| {
        if r.path.ends_with("index.json") && f2.load(Ordering::SeqCst) > 0 {
            f2.fetch_sub(1, Ordering::SeqCst);
            return response(503, &[("Retry-After", "0")], b"busy");
        }
        from_site(&s2, r)
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new(&server.url("/"), opts(cache.path())).unwrap();
    assert_eq!(src.list().await.unwrap().len(), 7);
    assert_eq!(server.requests().len(), 3, "two 503s, then success");

    // 404 on an index URL: one request, not found, never retried.
    server.clear();
    let src = HttpSource::new(&server.url("/nothing/index.json"), opts(cache.path())).unwrap();
    let err = src.list().await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    assert_eq!(server.requests().len(), 1);

    // 500 forever: the retries run out, and the error says what happened.
    let always = Server::start(|_| response(500, &[], b"no")).await;
    let src = HttpSource::new(&always.url("/i.json"), opts(cache.path())).unwrap();
    let err = src.list().await.unwrap_err().to_string();
    assert!(err.contains("HTTP 500"), "{err}");
    assert_eq!(always.requests().len(), 3, "one try and two retries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_followed_and_credentials_never_shown() {
    let site = Arc::new(catalog_site_blocking());
    let s2 = Arc::clone(&site);
    let server = Server::start(move |r| {
        if r.path == "/old/index.json" {
            return response(
                301,
                &[("Location", "/.well-known/agent-skills/index.json")],
                b"",
            );
        }
        from_site(&s2, r)
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new(&server.url("/old/index.json"), opts(cache.path())).unwrap();
    skillcat_core::testing::check_valid_subset(&src).await;

    let secret = format!(
        "http://user:hunter2@{}/gone/index.json?token=abc",
        server.addr
    );
    let src = HttpSource::new(&secret, opts(cache.path())).unwrap();
    let err = src.list().await.unwrap_err().to_string();
    assert!(!err.contains("hunter2") && !err.contains("abc"), "{err}");
    assert!(!src.location("a/SKILL.md").contains("hunter2"));
    let sent = server
        .requests()
        .last()
        .unwrap()
        .headers
        .get("authorization")
        .cloned();
    assert!(
        sent.is_some_and(|a| a.starts_with("Basic ")),
        "credentials are sent, not shown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_foreign_indexes_skill_md_zip_v0_1_and_skips_unknown_types() {
    use skillcat::pack::{PackEntry, write_zip};
    let skill_md = b"---\nname: code-review\ndescription: Review code.\n---\nBody.\n".to_vec();
    let mut zip = std::io::Cursor::new(Vec::new());
    write_zip(
        &[
            PackEntry {
                path: "SKILL.md".into(),
                bytes: b"---\nname: zipped\ndescription: In a zip.\n---\n"
                    .to_vec()
                    .into(),
                executable: false,
            },
            PackEntry {
                path: "scripts/go.sh".into(),
                bytes: b"#!/bin/sh\n".to_vec().into(),
                executable: true,
            },
        ],
        &mut zip,
    )
    .unwrap();
    let zip = zip.into_inner();
    let index = serde_json::json!({
        "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": [
            {"name": "code-review", "type": "skill-md", "description": "Review code.",
             "url": "/.well-known/agent-skills/code-review/SKILL.md", "digest": sha256_digest(&skill_md)},
            {"name": "zipped", "type": "archive", "description": "In a zip.",
             "url": "zipped.zip", "digest": sha256_digest(&zip)},
            {"name": "future", "type": "mcp-server", "description": "?", "url": "x", "digest": sha256_digest(b"")}
        ]
    })
    .to_string();
    let v1 = serde_json::json!({"skills": [
        {"name": "legacy", "description": "Old.", "files": ["SKILL.md", "notes/a b.md"]}
    ]})
    .to_string();
    let legacy_md = b"---\nname: legacy\ndescription: Old.\n---\n".to_vec();
    let (sm, z) = (skill_md.clone(), zip.clone());
    let server = Server::start(move |r| match r.path.as_str() {
        "/.well-known/agent-skills/index.json" => response(200, &[], index.as_bytes()),
        "/.well-known/agent-skills/code-review/SKILL.md" => {
            response(200, &[("Content-Type", "text/markdown")], &sm)
        }
        "/.well-known/agent-skills/zipped.zip" => response(200, &[], &z),
        "/v1/.well-known/skills/index.json" => response(200, &[], v1.as_bytes()),
        "/v1/.well-known/skills/legacy/SKILL.md" => response(200, &[("ETag", "\"l\"")], &legacy_md),
        "/v1/.well-known/skills/legacy/notes/a%20b.md" => response(200, &[], b"notes\n"),
        _ => response(404, &[], b""),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new(&server.url("/"), opts(cache.path())).unwrap();
    assert_eq!(src.list().await.unwrap(), ["code-review", "zipped"]);
    assert!(
        src.warnings()
            .iter()
            .any(|w| w.contains("unknown type \"mcp-server\"")),
        "{:?}",
        src.warnings()
    );
    let found = skillcat::source::discover(&src).await.unwrap();
    assert_eq!(found.skills.len(), 2, "{:?}", found.faults);
    assert_eq!(
        &src.read("code-review/SKILL.md").await.unwrap()[..],
        &skill_md[..]
    );
    let files = src.files("zipped").await.unwrap();
    assert_eq!(files[1].path, "scripts/go.sh");
    assert!(files[1].executable);

    // v0.1 at a prefix: the site root falls back to /.well-known/skills/index.json.
    let src = HttpSource::new(&server.url("/v1"), opts(cache.path())).unwrap();
    assert_eq!(src.list().await.unwrap(), ["legacy"]);
    let files: Vec<String> = src
        .files("legacy")
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(files, ["SKILL.md", "notes/a b.md"]);
    assert_eq!(
        &src.read("legacy/notes/a b.md").await.unwrap()[..],
        b"notes\n"
    );
    assert!(
        src.index_url()
            .unwrap()
            .ends_with("/v1/.well-known/skills/index.json")
    );
}

// ---------------------------------------------------------------------------------------------
// Eight processes, one cache

#[test]
fn eight_processes_share_one_cache() {
    let work = tempfile::tempdir().unwrap();
    let corpus_dir = work.path().join("corpus");
    corpus::generate(&corpus_dir, 200, 7).unwrap();
    let served = Served::start(&corpus_dir);
    let cache = work.path().join("cache");
    let children: Vec<Child> = (0..8)
        .map(|_| {
            Command::new(BIN)
                .arg("--cache")
                .arg(&cache)
                .args(["fetch", &served.url])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout
                .lines()
                .filter(|l| l.ends_with("fetched") || l.ends_with("cached"))
                .count(),
            200
        );
    }
    let blobs = cache_blobs(&cache);
    assert_eq!(blobs.len(), 201, "200 archives and the index");
    assert!(blobs.iter().all(|(_, ok)| *ok), "every blob verifies");
    assert_eq!(tmp_files(&cache), 0, "no temp files left");
    assert_eq!(
        std::fs::read_dir(cache.join("index-v1")).unwrap().count(),
        1
    );
    let url = served.url.clone();
    drop(served);
    let out = Command::new(BIN)
        .arg("--offline")
        .arg("--cache")
        .arg(&cache)
        .args(["fetch", "--format", "json", &url])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: J = serde_json::from_slice(&out.stdout).unwrap();
    let skills = doc["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 200);
    assert!(skills.iter().all(|s| s["status"] == "cached"));
    assert_eq!(doc["stats"]["requests"], 0);
}

// ---------------------------------------------------------------------------------------------
// Signatures travel in the index

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_signature_is_served_in_the_index_and_verifies() {
    use skillcat::sign::{self, Keyring, Statement};
    let work = tempfile::tempdir().unwrap();
    let skill = work.path().join("alpha");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::create_dir_all(skill.join("references")).unwrap();
    for f in ["SKILL.md", "scripts/run.sh", "references/guide.md"] {
        std::fs::copy(
            skillcat_core::testing::catalog_dir().join("alpha").join(f),
            skill.join(f),
        )
        .unwrap();
    }
    // Sign the skill as `skillcat sign` does, beside it: alpha.minisig.
    let dir_src = DirSource::open_skill(&skill, DirOptions::default()).unwrap();
    let manifest = dir_src.manifest("", "alpha", "").await.unwrap();
    let (public, secret) = sign::generate_keypair(None).unwrap();
    let sig = sign::sign(&Statement::from_manifest(&manifest).unwrap(), &secret, None).unwrap();
    std::fs::write(work.path().join("alpha.minisig"), &sig).unwrap();

    let served = Served::start(&skill);
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new(&served.url, opts(cache.path())).unwrap();
    let remote = src.skills().await.unwrap();
    assert_eq!(remote.len(), 1);
    assert_eq!(remote[0].signature.as_deref(), Some(sig.as_str()));
    assert_eq!(
        remote[0].skill_digest.as_deref(),
        Some(manifest.digest.as_str())
    );
    // The client verifies against the manifest it recomputes from the bytes it fetched.
    let fetched = src.manifest("alpha", "alpha", "").await.unwrap();
    let keyring = Keyring::from_toml_str(&format!(
        "[[key]]\npublic_key = \"{}\"\nscopes = [\"alpha\"]\n",
        sign::public_key_base64(&public).unwrap()
    ))
    .unwrap();
    sign::verify(
        &fetched,
        remote[0].signature.as_deref().unwrap(),
        &keyring,
        "alpha",
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Warnings reach the read commands; redirect limits; cleaning the cache

fn run_bin(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn read_commands_print_the_sources_warnings_on_stderr() {
    let cache = tempfile::tempdir().unwrap();
    let c = cache.path().to_str().unwrap();
    let served = Served::start(&skillcat_core::testing::catalog_dir());
    let url = served.url.clone();
    // Online: the index is fetched and cached; nothing to warn about.
    let (code, online, stderr) = run_bin(&["--cache", c, "list", &url, "--format", "json"]);
    assert!(!stderr.contains("warning:"), "{stderr}");
    let online_prompt = run_bin(&["--cache", c, "prompt", &url]);
    assert!(!online_prompt.2.contains("warning:"), "{}", online_prompt.2);
    // validate takes a URL like every other read command (not a path that does not exist).
    let (vcode, vout, verr) = run_bin(&["--cache", c, "validate", &url]);
    assert_eq!(vcode, Some(0), "{verr}");
    assert!(
        vout.lines()
            .any(|l| l.starts_with("Valid skill: ") && l.contains(&url)),
        "{vout}"
    );
    drop(served);

    // Offline: the cached index is no longer fresh (the server says no-cache), so it is used
    // with a warning, and the output is what it was online.
    let (code2, offline, stderr) =
        run_bin(&["--offline", "--cache", c, "list", &url, "--format", "json"]);
    assert_eq!((code2, &offline), (code, &online));
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains("offline, using the cached copy")),
        "{stderr}"
    );
    let (code3, text, stderr) = run_bin(&["--offline", "--cache", c, "prompt", &url]);
    assert_eq!((code3, &text), (online_prompt.0, &online_prompt.1));
    assert!(stderr.contains("warning: "), "{stderr}");

    // Online with the server gone: the network error is survived with the cached copy, and
    // the warning says so.
    let (code4, again, stderr) = run_bin(&["--cache", c, "list", &url, "--format", "json"]);
    assert_eq!((code4, &again), (code, &online));
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains("using the cached copy")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_is_refused_with_a_clear_error() {
    let server = Server::start(|r| {
        let next = if r.path == "/a/index.json" {
            "/b/index.json"
        } else {
            "/a/index.json"
        };
        response(302, &[("Location", next)], b"")
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let src = HttpSource::new(&server.url("/a/index.json"), opts(cache.path())).unwrap();
    let err = src.list().await.unwrap_err().to_string();
    assert!(err.contains("more than 10 redirects"), "{err}");
    assert_eq!(
        server.requests().len(),
        11,
        "the first request and ten redirects, never retried"
    );
    // With a lower limit, the error says so and stops sooner.
    server.clear();
    let src = HttpSource::new(
        &server.url("/a/index.json"),
        HttpOptions {
            max_redirects: 2,
            ..opts(cache.path())
        },
    )
    .unwrap();
    let err = src.list().await.unwrap_err().to_string();
    assert!(err.contains("more than 2 redirects"), "{err}");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(cache_blobs(cache.path()), [], "nothing was cached");
}

#[test]
fn cache_clean_removes_only_what_no_cached_index_needs() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let c = cache.to_str().unwrap();
    let served = Served::start(&skillcat_core::testing::catalog_dir());
    let url = served.url.clone();
    let (code, _, stderr) = run_bin(&["--cache", c, "fetch", &url]);
    assert_eq!(code, Some(0), "{stderr}");
    drop(served);
    let kept = cache_blobs(&cache);
    assert_eq!(kept.len(), 8, "7 archives and the index");

    // What a cache collects over time: a blob no index names any more, a temp file left by a
    // killed process, a stray file among the blobs, and an older layout.
    let orphan = b"an archive of a skill the index no longer lists";
    let hex = &sha256_digest(orphan)[7..];
    let orphan_path = cache.join(format!("blobs-v3/sha256/{hex}"));
    std::fs::write(&orphan_path, orphan).unwrap();
    std::fs::write(cache.join("tmp/part-killed"), b"half").unwrap();
    std::fs::write(cache.join("blobs-v3/sha256/.part-x"), b"half").unwrap();
    std::fs::create_dir_all(cache.join("blobs-v2/sha256/ab")).unwrap();
    std::fs::write(cache.join(format!("blobs-v2/sha256/ab/{hex}")), b"old").unwrap();

    let (code, out, stderr) = run_bin(&["--cache", c, "cache", "info", "--format", "json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let info: J = serde_json::from_str(&out).unwrap();
    assert_eq!(info["records"], 1);
    assert_eq!(info["blobs"], 9);
    assert_eq!(info["unreferenced"], 1);
    assert_eq!(info["unreferenced_bytes"], orphan.len());
    assert_eq!(info["stale_files"], 3);

    let (code, out, stderr) = run_bin(&["--cache", c, "cache", "clean", "--format", "json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let report: J = serde_json::from_str(&out).unwrap();
    assert_eq!(report["removed_blobs"], 1);
    assert_eq!(report["removed_records"], 0);
    assert_eq!(report["removed_stale"], 3);
    assert_eq!(report["kept_blobs"], 8);
    assert!(!orphan_path.exists());
    assert!(!cache.join("blobs-v2").exists());
    assert!(!cache.join("blobs-v3/sha256/.part-x").exists());
    assert_eq!(tmp_files(&cache), 0);
    assert_eq!(
        cache_blobs(&cache),
        kept,
        "every referenced blob is still there"
    );

    // Offline, everything the index needs is still served from the cache.
    let (code, out, stderr) = run_bin(&["--offline", "--cache", c, "fetch", &url]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(out.lines().filter(|l| l.ends_with("  cached")).count(), 7);

    // A clean waits for every process using the cache (each holds the shared lock) and runs
    // when they are done.
    let reader = std::fs::File::open(cache.join(".lock")).unwrap();
    reader.lock_shared().unwrap();
    let mut clean = Command::new(BIN)
        .args(["--cache", c, "cache", "clean", "--all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        clean.try_wait().unwrap().is_none(),
        "the clean waits while the cache is in use"
    );
    assert_eq!(cache_blobs(&cache), kept, "nothing removed while in use");
    reader.unlock().unwrap();
    let out = clean.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("waiting for other skillcat processes"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("Removed 8 blobs"), "{stdout}");
    assert_eq!(cache_blobs(&cache), []);
    let (code, _, stderr) = run_bin(&["--offline", "--cache", c, "fetch", &url]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("not cached"), "{stderr}");
}
