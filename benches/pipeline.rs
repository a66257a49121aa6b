//! Step 1 benchmarks: parse+validate one typical SKILL.md, and discover+validate a directory of
//! 2,000 generated skills (the same shape of corpus the peers were timed on).
//!
//! `corpus_2000/discover_validate` reads every skill's file list too (what `discover` does);
//! `corpus_2000/discover_documents_validate` reads the documents alone (what `validate` does).
//!
//! Run: `cargo bench --bench pipeline`. `corpus_2000/cli_validate_wall` is the wall time of the
//! whole `skillcat validate DIR` command on the same corpus (process start to exit, output to a
//! pipe that is drained), the figure the target for the command line is about.

#[path = "support/corpus.rs"]
mod corpus;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use skillcat::document::{ValidateOptions, parse_document, validate_frontmatter};
use skillcat::source::{Detail, DirOptions, DirSource, discover, discover_with};

fn typical_document() -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    corpus::generate(tmp.path(), 20, 7).unwrap();
    // The largest of a few generated documents: a body of a few KB, a long description.
    let mut best = Vec::new();
    for entry in std::fs::read_dir(tmp.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path().join("SKILL.md")).unwrap();
        if bytes.len() > best.len() {
            best = bytes;
        }
    }
    best
}

fn bench(c: &mut Criterion) {
    let doc = typical_document();
    let opts = ValidateOptions::default();
    c.bench_function("parse_validate_one", |b| {
        b.iter(|| {
            let d = parse_document(black_box(&doc)).unwrap();
            black_box(validate_frontmatter(&d.frontmatter, None, &opts))
        })
    });

    let tmp = tempfile::tempdir().unwrap();
    corpus::generate(tmp.path(), 2000, 42).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("corpus_2000");
    group.sample_size(20);
    group.bench_function("discover_validate", |b| {
        b.iter(|| {
            rt.block_on(async {
                let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
                let d = discover(&src).await.unwrap();
                assert_eq!(d.skills.len(), 2000);
                let faults: usize = d.skills.iter().map(|s| s.validate(&opts).len()).sum();
                assert_eq!(faults, 0);
                black_box(d)
            })
        })
    });
    // What `show` and `match` read: the documents alone, no file lists; and what `validate`,
    // `properties` and `prompt` read: the frontmatter alone, no bodies kept.
    for (id, detail) in [
        ("discover_documents_validate", Detail::Document),
        ("discover_frontmatter_validate", Detail::Frontmatter),
    ] {
        group.bench_function(id, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
                    let d = discover_with(&src, detail).await.unwrap();
                    assert_eq!(d.skills.len(), 2000);
                    let faults: usize = d.skills.iter().map(|s| s.validate(&opts).len()).sum();
                    assert_eq!(faults, 0);
                    black_box(d)
                })
            })
        });
    }
    let bin = env!("CARGO_BIN_EXE_skillcat");
    group.bench_function("cli_validate_wall", |b| {
        b.iter(|| {
            let out = std::process::Command::new(bin)
                .arg("validate")
                .arg(tmp.path())
                .output()
                .unwrap();
            assert!(out.status.success());
            assert_eq!(out.stdout.iter().filter(|&&c| c == b'\n').count(), 2000);
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
