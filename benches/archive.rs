//! Step 2 comparison bench: discovering a 10,000-skill `.tar.gz` against a plain
//! `gzip -dc FILE > /dev/null` of the same file, and digesting against raw sha256.
//!
//! Run: `cargo bench --bench archive`. Prints the median of several runs of each and the ratios
//! (targets: discover ≤ 1.3× gzip; manifest ≈ sha256 speed).

#[path = "support/corpus.rs"]
mod corpus;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use skillcat::archive::{ArchiveKind, ArchiveLimits};
use skillcat::digest::Manifest;
use skillcat::pack::{PackEntry, write_tar_gz};
use skillcat::path::join_path;
use skillcat::source::{ArchiveSource, DirOptions, DirSource, Source, discover};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm up
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this in test mode: stay quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let n = if quick { 200 } else { 10_000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("corpus");
    corpus::generate(&dir, n, 42).unwrap();

    // Pack the corpus (folder per skill) with skillcat's reproducible writer.
    let src = DirSource::open(
        &dir,
        DirOptions {
            max_dirs: 100_000,
            ..Default::default()
        },
    )
    .unwrap();
    let entries: Vec<PackEntry> = rt.block_on(async {
        let mut entries = Vec::new();
        for root in src.list().await.unwrap() {
            for f in src.files(&root).await.unwrap() {
                let path = join_path(&root, &f.path);
                entries.push(PackEntry {
                    bytes: src.read(&path).await.unwrap(),
                    path,
                    executable: f.executable,
                });
            }
        }
        entries
    });
    let mut tgz = Vec::new();
    write_tar_gz(&entries, &mut tgz).unwrap();
    let file = tmp.path().join("corpus.tar.gz");
    std::fs::write(&file, &tgz).unwrap();
    let unpacked: usize = entries.iter().map(|e| e.bytes.len()).sum();
    println!(
        "corpus: {n} skills, {} files, {} bytes unpacked, {} bytes .tar.gz",
        entries.len(),
        unpacked,
        tgz.len()
    );

    let limits = ArchiveLimits {
        max_compressed: 1 << 30,
        max_total: 1 << 32,
        max_entries: 1 << 20,
        ..ArchiveLimits::default()
    };
    let runs = if quick { 3 } else { 10 };

    let gzip = time(runs, || {
        let st = Command::new("gzip")
            .arg("-dc")
            .arg(&file)
            .stdout(Stdio::null())
            .status()
            .expect("gzip");
        assert!(st.success());
    });
    let disc = time(runs, || {
        rt.block_on(async {
            let bytes = std::fs::read(&file).unwrap();
            let s = ArchiveSource::from_bytes(ArchiveKind::TarGz, "corpus.tar.gz", &bytes, limits)
                .unwrap();
            let d = discover(&s).await.unwrap();
            assert_eq!(d.skills.len(), n);
        })
    });
    println!("gzip -dc FILE > /dev/null        {:>10.2?}", gzip);
    println!(
        "open + discover (tar.gz, {n})  {:>10.2?}   ratio {:.2}x (target <= 1.3x)",
        disc,
        disc.as_secs_f64() / gzip.as_secs_f64()
    );

    // Digesting: raw sha256 of all the bytes vs the manifests (per-file sha256 + tree digest).
    let raw = time(runs, || {
        let mut total = 0u8;
        for e in &entries {
            total ^= Sha256::digest(&e.bytes)[0];
        }
        std::hint::black_box(total);
    });
    let man = time(runs, || {
        let m = Manifest::build(
            "corpus",
            "",
            entries
                .iter()
                .map(|e| (e.path.as_str(), &e.bytes[..], e.executable)),
        );
        std::hint::black_box(m);
    });
    let mbps = |d: Duration| unpacked as f64 / d.as_secs_f64() / 1e6;
    println!(
        "sha256 of every file             {:>10.2?}   {:.0} MB/s",
        raw,
        mbps(raw)
    );
    println!(
        "manifest + skill digest          {:>10.2?}   {:.0} MB/s   ratio {:.2}x",
        man,
        mbps(man),
        man.as_secs_f64() / raw.as_secs_f64()
    );
}
