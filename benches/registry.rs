//! Registry benchmarks on the generated corpus (`support/corpus.rs`):
//!
//! - `publish_1000`: publish 1,000 skills into a fresh registry (one transaction each,
//!   `synchronous=FULL`: every publish is durable when it returns);
//! - `latest_by_name_10k` / `read_skill_md_10k`: look one skill up by name in a 10,000-skill
//!   registry (target ≤ 100 µs), directly and through `RegistrySource` (async, pooled);
//! - `search_10k`: one full-text query over 10,000 skills;
//! - `discover_10k`: discover all 10,000 skills through a fresh `RegistrySource`.
//!
//! The corpus and the 10,000-skill registry are built once per run. Run:
//! `cargo bench --bench registry`.

#[path = "support/corpus.rs"]
mod corpus;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use skillcat::registry::{PublishOptions, Registry};
use skillcat::source::{DirOptions, DirSource, RegistrySource, Source, SourceExt, discover};

const CORPUS: usize = 10_000;
const PUBLISH: usize = 1_000;

/// The corpus's `metadata.version` values are `X.Y`, not semver: publish as 1.0.0.
fn opts() -> PublishOptions<'static> {
    PublishOptions {
        version: Some("1.0.0".into()),
        ..Default::default()
    }
}

async fn publish_all(db: &Path, src: &DirSource, roots: &[String]) {
    let mut reg = Registry::init(db).unwrap();
    for root in roots {
        reg.publish(src, root, &opts()).await.unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let corpus_dir = tmp.path().join("corpus");
    corpus::generate(&corpus_dir, CORPUS, 42).unwrap();
    let src = DirSource::open(&corpus_dir, DirOptions::default()).unwrap();
    let roots = rt.block_on(src.list()).unwrap();
    assert_eq!(roots.len(), CORPUS);

    let db = tmp.path().join("10k.db");
    let started = Instant::now();
    rt.block_on(publish_all(&db, &src, &roots));
    eprintln!(
        "setup: published {CORPUS} skills in {:.1?}",
        started.elapsed()
    );

    let mut group = c.benchmark_group("registry");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(45));
    let first = &roots[..PUBLISH];
    group.bench_function("publish_1000", |b| {
        b.iter_batched(
            || tempfile::tempdir().unwrap(),
            |dir| rt.block_on(publish_all(&dir.path().join("r.db"), &src, first)),
            BatchSize::PerIteration,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("registry_10k");
    let reg = Registry::open_read_only(&db).unwrap();
    let mut i = 0;
    group.bench_function("latest_by_name", |b| {
        b.iter(|| {
            i = (i + 7919) % CORPUS;
            black_box(reg.latest(&roots[i]).unwrap().unwrap())
        })
    });
    group.bench_function("get_manifest", |b| {
        b.iter(|| {
            i = (i + 7919) % CORPUS;
            black_box(reg.get(&roots[i], "1.0.0").unwrap().unwrap())
        })
    });
    let rsrc = RegistrySource::open(&db).unwrap();
    group.bench_function("read_skill_md", |b| {
        b.iter(|| {
            i = (i + 7919) % CORPUS;
            let path = format!("{}/SKILL.md", roots[i]);
            black_box(rt.block_on(rsrc.read_to_string(&path)).unwrap())
        })
    });
    group.bench_function("search", |b| {
        b.iter(|| black_box(reg.search("terraform plans review", 10).unwrap()))
    });
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("discover_all", |b| {
        b.iter(|| {
            rt.block_on(async {
                let fresh = RegistrySource::open(&db).unwrap();
                let d = discover(&fresh).await.unwrap();
                assert_eq!((d.skills.len(), d.faults.len()), (CORPUS, 0));
                black_box(d)
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
