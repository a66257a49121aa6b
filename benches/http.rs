//! Step 4 comparison bench: a cold fetch of 1,000 skills from `skillcat serve` on loopback
//! through the HTTP source (concurrent, every archive verified and cached) against downloading
//! the same bytes with a plain sequential reqwest loop (no verification, no cache), then a warm
//! run (one conditional request, everything from the cache).
//!
//! Run: `cargo bench --bench http`. Prints the median of several runs of each and the ratio
//! plain ÷ skillcat (target ≥ 0.5: skillcat at most twice the time of a bare download loop).

#[path = "support/corpus.rs"]
mod corpus;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use skillcat::source::http::{HttpOptions, HttpSource};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this in test mode: stay quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (n, runs) = if quick { (100, 1) } else { (1_000, 5) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-rt")
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("corpus");
    corpus::generate(&dir, n, 42).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_skillcat"))
        .arg("serve")
        .arg(&dir)
        .args(["--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _served = Served(child);
    let base = line.trim().rsplit_once(" on ").unwrap().1.to_string();
    println!("{}", line.trim());

    // The archive URLs, as any client would read them from the index.
    let index_url = reqwest::Url::parse(&base)
        .unwrap()
        .join(".well-known/agent-skills/index.json")
        .unwrap();
    let client = reqwest::Client::new();
    let urls: Vec<reqwest::Url> = rt.block_on(async {
        let body = client
            .get(index_url.clone())
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let index: serde_json::Value = serde_json::from_slice(&body).unwrap();
        index["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| index_url.join(e["url"].as_str().unwrap()).unwrap())
            .collect()
    });
    assert_eq!(urls.len(), n);

    // Baseline: a plain sequential loop over the same bytes (index included).
    let mut bytes = 0;
    let plain = median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                bytes = rt.block_on(async {
                    let mut total = 0;
                    total += client
                        .get(index_url.clone())
                        .send()
                        .await
                        .unwrap()
                        .bytes()
                        .await
                        .unwrap()
                        .len();
                    for u in &urls {
                        total += client
                            .get(u.clone())
                            .send()
                            .await
                            .unwrap()
                            .bytes()
                            .await
                            .unwrap()
                            .len();
                    }
                    total
                });
                t.elapsed()
            })
            .collect(),
    );

    // skillcat, cold: a fresh cache each run (HTTP_BENCH_CONCURRENCY: requests in flight).
    let concurrency = std::env::var("HTTP_BENCH_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(HttpOptions::default().concurrency);
    // HTTP_BENCH_CACHE_IN=/dev/shm puts the caches on another file system (to see what the
    // disk costs); by default they are in the system's temp folder.
    let cache_in = std::env::var_os("HTTP_BENCH_CACHE_IN").map(std::path::PathBuf::from);
    let caches: Vec<tempfile::TempDir> = (0..runs)
        .map(|_| match &cache_in {
            Some(d) => tempfile::tempdir_in(d).unwrap(),
            None => tempfile::tempdir().unwrap(),
        })
        .collect();
    let cold = median(
        caches
            .iter()
            .map(|cache| {
                let src = HttpSource::new(
                    &base,
                    HttpOptions {
                        cache_dir: Some(cache.path().to_path_buf()),
                        concurrency,
                        ..HttpOptions::default()
                    },
                )
                .unwrap();
                let t = Instant::now();
                let reports = rt.block_on(src.prefetch(|_| {})).unwrap();
                let elapsed = t.elapsed();
                assert_eq!(reports.len(), n);
                elapsed
            })
            .collect(),
    );

    // skillcat, warm: the first cache again.
    let mut requests = 0;
    let warm = median(
        (0..runs)
            .map(|_| {
                let src = HttpSource::new(
                    &base,
                    HttpOptions {
                        cache_dir: Some(caches[0].path().to_path_buf()),
                        ..HttpOptions::default()
                    },
                )
                .unwrap();
                let t = Instant::now();
                rt.block_on(src.prefetch(|_| {})).unwrap();
                let elapsed = t.elapsed();
                requests = src.stats().requests;
                elapsed
            })
            .collect(),
    );

    println!("corpus: {n} skills, {bytes} bytes served (index + archives)");
    println!(
        "plain sequential reqwest loop   {:>9.1} ms",
        plain.as_secs_f64() * 1e3
    );
    println!(
        "skillcat cold fetch (verified)  {:>9.1} ms",
        cold.as_secs_f64() * 1e3
    );
    println!(
        "ratio plain / skillcat          {:>9.2}x  (target >= 0.5)",
        plain.as_secs_f64() / cold.as_secs_f64()
    );
    println!(
        "skillcat warm fetch             {:>9.1} ms  ({requests} request{})",
        warm.as_secs_f64() * 1e3,
        if requests == 1 { "" } else { "s" }
    );
}
