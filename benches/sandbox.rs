//! Cost of confinement: a confined run of a trivial `/bin/sh` script against a bare spawn of the
//! same script (same output capture), median of many runs. Target: confined ≤ bare + 5 ms.
//!
//! A run granted a host list also starts its proxy (loopback brought up in its namespace, the
//! listener handed over, the proxy task): its line against the no-network one is the proxy's
//! start cost (target ≤ +3 ms; `cargo bench --bench proxy` measures a request through it).
//!
//! `cargo bench --bench sandbox` (add `-- 200` for 200 runs of each).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use skillcat::capability::{Grant, Network, Trust};
use skillcat::script::{AllowAll, Runner, RunnerConfig};
use skillcat::source::{DirOptions, DirSource, SourceExt};
use tokio::io::AsyncReadExt;

fn grant(network: Network) -> Grant {
    Grant {
        fs_read: vec![],
        fs_write: vec![],
        network,
        timeout: Duration::from_secs(30),
        trust: Trust::External,
    }
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort_unstable();
    (v[v.len() / 2], v[v.len() * 9 / 10])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn bench(runs: usize) {
    let dir = tempfile::Builder::new()
        .prefix("skillcat-bench-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let skill_dir = dir.path().join("trivial");
    std::fs::create_dir_all(skill_dir.join("scripts")).unwrap();
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: trivial\ndescription: Trivial.\n---\nBody\n",
    )
    .unwrap();
    let script = skill_dir.join("scripts/hi.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let mut config = RunnerConfig::new(
        Grant {
            fs_read: vec!["/".into()],
            fs_write: vec!["/".into()],
            network: skillcat::capability::Network::All,
            timeout: Duration::from_secs(60),
            trust: Trust::External,
        },
        skillcat::context::Env::from_process().user_dirs(),
    );
    config.helper = PathBuf::from(env!("CARGO_BIN_EXE_skillcat"));
    config.workspace_base = dir.path().join("ws");
    let runner = Runner::new(config, Arc::new(AllowAll)).unwrap();

    let mut results = Vec::new();
    let modes = [
        Network::Off,
        Network::All,
        Network::parse("bench.test:443").unwrap(),
    ];
    for network in modes {
        let src = DirSource::open_skill(&skill_dir, DirOptions::default()).unwrap();
        let skill = src.load("").await.unwrap();
        let loaded = runner
            .load(Arc::new(src), skill, grant(network.clone()))
            .await
            .unwrap();
        // The first run materialises the workspace; it is not measured.
        let first = runner
            .run(&loaded, "hi", &serde_json::Value::Null)
            .await
            .unwrap();
        assert_eq!(first.output.text, "hi\n");
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            let out = runner
                .run(&loaded, "hi", &serde_json::Value::Null)
                .await
                .unwrap();
            times.push(t.elapsed());
            assert_eq!(out.output.text, "hi\n");
        }
        results.push((network, stats(times)));
    }

    let mut bare = Vec::with_capacity(runs);
    for _ in 0..runs + 1 {
        let t = Instant::now();
        let mut child = tokio::process::Command::new("/bin/sh")
            .arg(&script)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .await
            .unwrap();
        child.wait().await.unwrap();
        bare.push(t.elapsed());
        assert_eq!(out, "hi\n");
    }
    bare.remove(0);
    let (bare_med, bare_p90) = stats(bare);

    println!("sandbox: {runs} runs each of a trivial /bin/sh script");
    println!(
        "  bare spawn                     median {:7.2} ms   p90 {:7.2} ms",
        ms(bare_med),
        ms(bare_p90)
    );
    let off = results
        .iter()
        .find(|(n, _)| n.is_off())
        .map(|(_, (med, _))| *med);
    for (network, (med, p90)) in &results {
        let label = match network {
            Network::Off => "confined, no network (net ns)",
            Network::All => "confined, network granted",
            Network::Hosts(_) => "confined, host list (proxy)",
        };
        println!(
            "  {label:<30} median {:7.2} ms   p90 {:7.2} ms   overhead {:+.2} ms (target ≤ +5 ms)",
            ms(*med),
            ms(*p90),
            ms(*med) - ms(bare_med)
        );
        if let (Network::Hosts(_), Some(off)) = (network, off) {
            println!(
                "  proxy start over no network    {:+.2} ms (target ≤ +3 ms)",
                ms(*med) - ms(off)
            );
        }
    }
}

fn main() {
    let runs = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(50)
        .max(3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench(runs));
}
