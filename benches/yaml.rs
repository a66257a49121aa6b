//! Does the YAML fast path earn its keep? The same 2,000 generated documents parsed twice through
//! the public `parse_document`: as generated (every frontmatter lies in the fast path's subset),
//! and with a comment line added at the top of the frontmatter, which the fast path declines, so
//! the whole text goes through the saphyr-parser event builder. Both give the same frontmatter
//! (checked before timing); the ratio is what a second YAML reader buys.
//!
//! Run: `cargo bench --bench yaml`.

#[path = "support/corpus.rs"]
mod corpus;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use skillcat::document::parse_document;

fn documents() -> Vec<Vec<u8>> {
    let tmp = tempfile::tempdir().unwrap();
    corpus::generate(tmp.path(), 2000, 42).unwrap();
    let mut docs: Vec<Vec<u8>> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path().join("SKILL.md")).unwrap())
        .collect();
    docs.sort();
    docs
}

/// The same document with `# comment` as the first line of its frontmatter.
fn with_comment(doc: &[u8]) -> Vec<u8> {
    let rest = doc
        .strip_prefix(b"---\n")
        .expect("a generated document opens with ---");
    [
        b"---\n# a comment the fast path declines\n".as_slice(),
        rest,
    ]
    .concat()
}

fn bench(c: &mut Criterion) {
    let fast = documents();
    let slow: Vec<Vec<u8>> = fast.iter().map(|d| with_comment(d)).collect();
    for (a, b) in fast.iter().zip(&slow) {
        let (a, b) = (parse_document(a).unwrap(), parse_document(b).unwrap());
        assert_eq!(
            a.frontmatter, b.frontmatter,
            "both readers give the same frontmatter"
        );
    }
    let mut group = c.benchmark_group("yaml_2000_documents");
    group.sample_size(30);
    group.bench_function("fast_path", |b| {
        b.iter(|| {
            for d in &fast {
                black_box(parse_document(black_box(d)).unwrap());
            }
        })
    });
    group.bench_function("event_parser", |b| {
        b.iter(|| {
            for d in &slow {
                black_box(parse_document(black_box(d)).unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
