//! Step 4 comparison bench: a cold fetch of 1,000 skills from `skillcat serve` on loopback
//! through the HTTP source (concurrent, every archive verified and cached) against downloading
//! the same bytes with a plain sequential reqwest loop (no verification, no cache), then a warm
//! run (one conditional request, everything from the cache).
//!
//! Run: `cargo bench --bench http`. Prints the median of several interleaved runs of each, the
//! load average, and two ratios (target ≥ 0.5: skillcat at most twice the time of the baseline):
//! - `curl --parallel` ÷ skillcat: curl downloads every archive (and the index) to its own file
//!   in a fresh folder on the same file system as the caches, with as many transfers in flight
//!   as skillcat — the same job minus the verification (skipped where curl is not installed);
//! - plain ÷ skillcat: a sequential reqwest loop that keeps nothing (no file is written).
//!
//! A concurrent plain loop is printed too, for reference.
//!
//! Then the client against a 100,000-entry index (`HttpOptions::max_index_entries` raised to
//! 100,000 and the body limit to 64 MiB for it): the time to read it (fetch, parse, cache) and
//! again from the cache (a 304), and the peak resident memory of a process that does only that
//! (this bench run again as a child).

#[path = "support/corpus.rs"]
mod corpus;
#[path = "../tests/support/serve.rs"]
mod serve;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use skillcat::source::http::{FetchStatus, HttpOptions, HttpSource};

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
    if let Ok(url) = std::env::var("HTTP_BENCH_INDEX_CHILD") {
        index_child(&url);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this in test mode: stay quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    big_index(if quick { 1_000 } else { 100_000 });
    let (n, runs) = if quick { (100, 1) } else { (1_000, 7) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-rt")
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("corpus");
    corpus::generate(&dir, n, 42).unwrap();

    let (child, line, base) = serve::spawn_serve(&dir, &[], Stdio::null());
    let _served = Served(child);
    println!("{line}");

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

    // skillcat's settings (HTTP_BENCH_CONCURRENCY: requests in flight).
    let concurrency = std::env::var("HTTP_BENCH_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(HttpOptions::default().concurrency);
    // HTTP_BENCH_CACHE_IN=/dev/shm puts the caches on another file system (to see what the
    // disk costs); by default they are in the system's temp folder.
    // curl's downloads go to the same file system, so both pay what it costs to create files.
    let cache_in = std::env::var_os("HTTP_BENCH_CACHE_IN").map(std::path::PathBuf::from);
    let scratch = || -> Vec<tempfile::TempDir> {
        (0..runs)
            .map(|_| match &cache_in {
                Some(d) => tempfile::tempdir_in(d).unwrap(),
                None => tempfile::tempdir().unwrap(),
            })
            .collect()
    };
    let caches = scratch();
    let curl_dirs = scratch();
    let load_before = loadavg();

    // The runs are interleaved (plain, concurrent plain, cold; plain, …) so that the load of a
    // shared machine falls on all three alike; each pair gives a ratio, and the median of the
    // ratios is reported beside the medians of the times.
    let mut bytes = 0;
    let (mut plain, mut plain_conc, mut cold, mut ratios) = (vec![], vec![], vec![], vec![]);
    let (mut curl, mut curl_ratios) = (vec![], vec![]);
    let have_curl = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let (mut plain_cpu, mut cold_cpu) = (0.0, 0.0);
    for (cache, curl_dir) in caches.iter().zip(&curl_dirs) {
        // Baseline: a plain sequential loop over the same bytes (index included).
        let (t, cpu) = (Instant::now(), cpu_ms());
        bytes = rt.block_on(async {
            let mut total = get(&client, &index_url).await;
            for u in &urls {
                total += get(&client, u).await;
            }
            total
        });
        let p = t.elapsed();
        plain_cpu += cpu_ms() - cpu;
        // The same bytes with as many requests in flight as skillcat uses.
        let t = Instant::now();
        let conc_bytes = rt.block_on(async {
            let index = get(&client, &index_url).await;
            stream::iter(&urls)
                .map(|u| get(&client, u))
                .buffer_unordered(concurrency)
                .fold(index, |a, b| async move { a + b })
                .await
        });
        assert_eq!(conc_bytes, bytes);
        plain_conc.push(t.elapsed());
        // skillcat, cold: a fresh cache each run; every archive verified (size, sha256, skill
        // digest) and stored.
        let src = HttpSource::new(
            &base,
            HttpOptions {
                cache_dir: Some(cache.path().to_path_buf()),
                concurrency,
                ..HttpOptions::default()
            },
        )
        .unwrap();
        let (t, cpu) = (Instant::now(), cpu_ms());
        let reports = rt.block_on(src.prefetch(|_| {})).unwrap();
        let c = t.elapsed();
        cold_cpu += cpu_ms() - cpu;
        assert_eq!(reports.len(), n);
        assert!(reports.iter().all(|r| r.status == FetchStatus::Fetched));
        ratios.push(p.as_secs_f64() / c.as_secs_f64());
        if have_curl {
            let t = curl_parallel(&index_url, &urls, curl_dir.path(), concurrency);
            assert_eq!(dir_bytes(curl_dir.path()), bytes);
            curl_ratios.push(t.as_secs_f64() / c.as_secs_f64());
            curl.push(t);
        }
        plain.push(p);
        cold.push(c);
    }

    // skillcat, warm: the first cache again.
    let mut requests = 0;
    let mut warm = vec![];
    for _ in 0..runs {
        let src = HttpSource::new(
            &base,
            HttpOptions {
                cache_dir: Some(caches[0].path().to_path_buf()),
                ..HttpOptions::default()
            },
        )
        .unwrap();
        let t = Instant::now();
        let reports = rt.block_on(src.prefetch(|_| {})).unwrap();
        warm.push(t.elapsed());
        assert!(reports.iter().all(|r| r.status == FetchStatus::Cached));
        requests = src.stats().requests;
    }
    let load_after = loadavg();

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    ratios.sort_by(f64::total_cmp);
    curl_ratios.sort_by(f64::total_cmp);
    println!("corpus: {n} skills, {bytes} bytes served (index + archives); {runs} runs each");
    println!("load average before: {load_before}  after: {load_after}  (2 cores is full)");
    println!(
        "plain sequential reqwest loop   {:>9.1} ms",
        ms(median(plain))
    );
    println!(
        "plain reqwest, {concurrency:>2} in flight     {:>9.1} ms",
        ms(median(plain_conc))
    );
    println!(
        "skillcat cold fetch (verified)  {:>9.1} ms  ({concurrency} in flight)",
        ms(median(cold))
    );
    if have_curl {
        println!(
            "curl --parallel to files        {:>9.1} ms  ({concurrency} in flight)",
            ms(median(curl))
        );
        println!(
            "ratio curl / skillcat           {:>9.2}x  (median of {runs} paired runs, min {:.2}, max {:.2}; target >= 0.5)",
            curl_ratios[curl_ratios.len() / 2],
            curl_ratios[0],
            curl_ratios[curl_ratios.len() - 1],
        );
    } else {
        println!("curl --parallel                 (curl not installed: skipped)");
    }
    println!(
        "ratio plain / skillcat          {:>9.2}x  (median of {runs} paired runs, min {:.2}, max {:.2}; target >= 0.5)",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
    );
    println!(
        "client CPU per run (user+sys)   plain {:.0} ms, skillcat cold {:.0} ms",
        plain_cpu / runs as f64,
        cold_cpu / runs as f64
    );
    println!(
        "skillcat warm fetch             {:>9.1} ms  ({requests} request{}, every blob re-hashed)",
        ms(median(warm)),
        if requests == 1 { "" } else { "s" }
    );
}

/// The client against an index of `n` entries served from memory: a child process reads it
/// cold and then warm, and reports its times and its peak resident memory.
fn big_index(n: usize) {
    let skills: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "name": format!("skill-{i:06}"), "type": "archive",
                "description": format!("Skill number {i}: does one thing well when the user asks for it."),
                "url": format!("../../blobs/sha256/{:064x}", i),
                "digest": format!("sha256:{:064x}", i), "version": "1.0.0",
            })
        })
        .collect();
    let body = serde_json::to_vec(&serde_json::json!({
        "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": skills,
    }))
    .unwrap();
    let etag = format!("\"{n}\"");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let size = body.len();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut head = Vec::new();
            let mut b = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => head.extend_from_slice(&b[..k]),
                }
            }
            let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
            let answer = if text.contains(&format!("if-none-match: {etag}")) {
                format!("HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\nConnection: close\r\n\r\n")
                    .into_bytes()
            } else {
                let mut a = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: {etag}\r\n\
                     Cache-Control: no-cache\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                a.extend_from_slice(&body);
                a
            };
            let _ = conn.write_all(&answer);
        }
    });
    let out = Command::new(std::env::current_exe().unwrap())
        .env(
            "HTTP_BENCH_INDEX_CHILD",
            format!("http://{addr}/.well-known/agent-skills/index.json"),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "client, index of {n} entries ({size} bytes): {}",
        String::from_utf8_lossy(&out.stdout).trim()
    );
}

/// The child of [`big_index`]: reads the index at `url` cold, then warm (a 304, parsed from the
/// cache), and prints the times and its peak resident memory.
fn index_child(url: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let opts = HttpOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        max_index_entries: 100_000,
        max_body: 64 << 20,
        ..HttpOptions::default()
    };
    let mut times = Vec::new();
    let mut entries = 0;
    for _ in 0..2 {
        let src = HttpSource::new(url, opts.clone()).unwrap();
        let t = Instant::now();
        entries = rt.block_on(src.skills()).unwrap().len();
        times.push(t.elapsed());
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .map_or("?", |l| l.trim_start_matches("VmHWM:").trim());
    println!(
        "{entries} entries read cold in {:.0} ms, warm (304, from the cache) in {:.0} ms; \
         peak RSS {hwm}",
        times[0].as_secs_f64() * 1e3,
        times[1].as_secs_f64() * 1e3
    );
}

/// `curl --parallel`: the index and every archive, each to its own file in `dir`, `max` in
/// flight; the wall time of the whole command.
fn curl_parallel(
    index: &reqwest::Url,
    urls: &[reqwest::Url],
    dir: &std::path::Path,
    max: usize,
) -> Duration {
    let mut config = String::new();
    for (i, u) in std::iter::once(index).chain(urls).enumerate() {
        let out = dir.join(format!("{i}.bin"));
        config.push_str(&format!("url = \"{u}\"\noutput = \"{}\"\n", out.display()));
    }
    let config_path = dir.join("curl.config");
    std::fs::write(&config_path, config).unwrap();
    let t = Instant::now();
    let status = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--no-progress-meter"])
        .arg("--parallel")
        .args(["--parallel-max", &max.to_string()])
        .arg("--config")
        .arg(&config_path)
        .status()
        .unwrap();
    let elapsed = t.elapsed();
    assert!(status.success(), "curl failed: {status}");
    std::fs::remove_file(&config_path).unwrap();
    elapsed
}

/// The total size of the files directly in `dir`.
fn dir_bytes(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len() as usize)
        .sum()
}

/// One GET, its body length.
async fn get(client: &reqwest::Client, url: &reqwest::Url) -> usize {
    let resp = client.get(url.clone()).send().await.unwrap();
    resp.bytes().await.unwrap().len()
}

/// The first three fields of `/proc/loadavg` (`?` where there is none).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// CPU time of this process so far (user + system, all threads), in milliseconds; 0 where
/// `/proc` is missing. Counted in clock ticks (10 ms), so only sums over runs are meaningful.
fn cpu_ms() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum::<f64>() * 10.0
}
