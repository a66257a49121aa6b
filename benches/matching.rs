//! Matching benchmarks over 10,000 generated skills: BM25 index build, query latency, and the
//! resident memory of a catalog held at tier 1 (name, description, location) with its index.
//!
//! Run: `cargo bench --bench matching`. The memory figures come from a child process (this
//! binary again, with `SKILLCAT_BENCH_RSS` set) so that criterion's own allocations do not count;
//! they are printed before the timings, read from `/proc/self/status` (Linux).
//!
//! With the model: `scripts/vendor-model target/models/all-MiniLM-L6-v2`, then
//! `cargo bench --features neural --bench matching` (`SKILLCAT_BENCH_MODEL=DIR` for another
//! directory). It adds the model's load time, a query ranked by BM25 and the model over the
//! 10,000 skills (the message embedded, BM25, the cosine scan, the fusion), and the memory of
//! the catalog with both indexes and the model loaded. The skills' vectors are random unit
//! vectors: embedding 10,000 descriptions takes minutes, and a scan costs the same whatever the
//! vectors hold.

#[path = "support/corpus.rs"]
mod corpus;

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::Criterion;
use skillcat::document::parse_document;
use skillcat::matching::{Bm25Index, Bm25Params, IndexBuilder, SkillDoc};

const SKILLS: usize = 10_000;
const SEED: u64 = 5;
const RSS_CHILD: &str = "SKILLCAT_BENCH_RSS";

/// Messages of the lengths people type: a few words to a long paragraph.
const MESSAGES: &[&str] = &[
    "clean up this csv export",
    "Summarize the meeting notes into action items and draft an email to the team",
    "Our kubernetes rollout failed after the terraform plan; review the deploy logs, \
     find the latency spike in the metrics dashboard and write an incident timeline",
    "zzz nothing matches this",
];

/// Every skill directory of a generated corpus, sorted.
fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

/// (name, description, body) of one generated skill.
fn read_skill(dir: &Path) -> (String, String, String) {
    let bytes = std::fs::read(dir.join("SKILL.md")).unwrap();
    let doc = parse_document(&bytes).unwrap();
    let text = |k: &str| {
        doc.frontmatter
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    (text("name"), text("description"), doc.body.clone())
}

fn load(root: &Path) -> Vec<SkillDoc<'static>> {
    skill_dirs(root)
        .iter()
        .map(|d| {
            let (n, desc, body) = read_skill(d);
            SkillDoc::new(n, desc, body)
        })
        .collect()
}

/// `VmRSS` and `VmHWM` of this process in KiB (0 where `/proc` is missing).
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The child: load the corpus at `root` as a tier-1 catalog (name, description, location), and
/// with `index` set stream every skill (body included) through the index builder, keeping only
/// the index. Prints one line of memory figures.
fn rss_child(root: &Path, index: bool) {
    let mib = |kib: u64| kib as f64 / 1024.0;
    let (start, _) = rss_kib();
    let mut tier1: Vec<(String, String, String)> = Vec::with_capacity(SKILLS);
    let mut builder = IndexBuilder::new(Bm25Params::default());
    for d in &skill_dirs(root) {
        let (name, description, body) = read_skill(d);
        if index {
            builder.add(&SkillDoc::new(
                name.as_str(),
                description.as_str(),
                body.as_str(),
            ));
        }
        let location = d.join("SKILL.md").display().to_string();
        tier1.push((name, description, location));
    }
    let index = index.then(|| builder.finish());
    let (rss, peak) = rss_kib();
    let text: usize = tier1
        .iter()
        .map(|(a, b, c)| a.len() + b.len() + c.len())
        .sum();
    let what = match &index {
        Some(i) => {
            let (terms, postings) = i.stats();
            format!("tier 1 + BM25 index ({terms} terms, {postings} postings)")
        }
        None => "tier 1 only".to_string(),
    };
    println!(
        "rss: {} skills, {what}: VmRSS {:.1} MiB, peak (VmHWM) {:.1} MiB; \
         process start {:.1} MiB; tier-1 text {:.1} MiB",
        tier1.len(),
        mib(rss),
        mib(peak),
        mib(start),
        text as f64 / 1048576.0
    );
    black_box((&tier1, &index));
}

/// The model directory of the model figures, when there is one.
#[cfg(feature = "neural")]
fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SKILLCAT_BENCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/models/all-MiniLM-L6-v2")
        });
    dir.join("model.safetensors").is_file().then_some(dir)
}

/// `n` random unit vectors of `dims` coordinates (a fixed xorshift stream).
#[cfg(feature = "neural")]
fn unit_vectors(n: usize, dims: usize) -> Vec<Vec<f32>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..dims)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}

/// The blended matcher over `docs`: the BM25 index, the model, random skill vectors.
#[cfg(feature = "neural")]
fn model_matcher(
    docs: &[SkillDoc<'_>],
    dir: &Path,
) -> skillcat::matching::EmbeddingMatcher<skillcat::matching::SentenceEncoder> {
    use skillcat::matching::{DEFAULT_WEIGHT, DenseIndex, EmbeddingMatcher, SentenceEncoder};
    let started = std::time::Instant::now();
    let encoder = SentenceEncoder::load(dir).unwrap();
    let loaded = started.elapsed();
    let dense = DenseIndex::new(unit_vectors(docs.len(), 384)).unwrap();
    println!(
        "model: all-MiniLM-L6-v2 loaded in {:.0} ms",
        loaded.as_secs_f64() * 1e3
    );
    EmbeddingMatcher::from_parts(encoder, Bm25Index::build(docs), dense, DEFAULT_WEIGHT).unwrap()
}

fn rss_report(root: &Path) {
    let exe = std::env::current_exe().unwrap();
    #[cfg(feature = "neural")]
    let modes: &[&str] = if model_dir().is_some() {
        &["tier1", "index", "model"]
    } else {
        &["tier1", "index"]
    };
    #[cfg(not(feature = "neural"))]
    let modes: &[&str] = &["tier1", "index"];
    for &mode in modes {
        let out = std::process::Command::new(&exe)
            .env(RSS_CHILD, root)
            .env("SKILLCAT_BENCH_RSS_MODE", mode)
            .output()
            .expect("run the memory child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            eprintln!(
                "memory child failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

fn bench(c: &mut Criterion, root: &Path) {
    let docs = load(root);
    assert_eq!(docs.len(), SKILLS);

    let mut group = c.benchmark_group("matching_10000");
    group.sample_size(10);
    group.bench_function("index_build", |b| {
        b.iter(|| black_box(Bm25Index::build(&docs)))
    });
    group.finish();

    let index = Bm25Index::build(&docs);
    let mut group = c.benchmark_group("matching_10000_query");
    for (i, message) in MESSAGES.iter().enumerate() {
        let words = message.split_whitespace().count();
        group.bench_function(format!("q{i}_{words}_words"), |b| {
            b.iter(|| black_box(index.search(black_box(message), 5)))
        });
    }
    group.finish();

    #[cfg(feature = "neural")]
    if let Some(dir) = model_dir() {
        use skillcat::matching::Matcher;
        let matcher = model_matcher(&docs, &dir);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut group = c.benchmark_group("matching_10000_model_query");
        group.sample_size(20);
        for (i, message) in MESSAGES.iter().enumerate() {
            let words = message.split_whitespace().count();
            group.bench_function(format!("q{i}_{words}_words"), |b| {
                b.iter(|| black_box(rt.block_on(matcher.rank(black_box(message), 5)).unwrap()))
            });
        }
        group.finish();
    }
}

/// The model child: the catalog at tier 1 with its BM25 index (bodies streamed through the
/// builder, as the `index` child does), the model and 10,000 skill vectors.
#[cfg(feature = "neural")]
fn rss_model_child(root: &Path) {
    use skillcat::matching::{DEFAULT_WEIGHT, DenseIndex, EmbeddingMatcher, SentenceEncoder};
    let mut tier1: Vec<(String, String, String)> = Vec::with_capacity(SKILLS);
    let mut builder = IndexBuilder::new(Bm25Params::default());
    for d in &skill_dirs(root) {
        let (name, description, body) = read_skill(d);
        builder.add(&SkillDoc::new(
            name.as_str(),
            description.as_str(),
            body.as_str(),
        ));
        tier1.push((name, description, d.join("SKILL.md").display().to_string()));
    }
    let encoder = SentenceEncoder::load(&model_dir().expect("a model")).unwrap();
    let dense = DenseIndex::new(unit_vectors(tier1.len(), 384)).unwrap();
    let matcher =
        EmbeddingMatcher::from_parts(encoder, builder.finish(), dense, DEFAULT_WEIGHT).unwrap();
    let (rss, peak) = rss_kib();
    println!(
        "rss: {} skills, tier 1 + BM25 index + all-MiniLM-L6-v2 + 384-d vectors: \
         VmRSS {:.1} MiB, peak (VmHWM) {:.1} MiB",
        tier1.len(),
        rss as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    black_box((&tier1, &matcher));
}

fn main() {
    if let Some(root) = std::env::var_os(RSS_CHILD) {
        let mode = std::env::var("SKILLCAT_BENCH_RSS_MODE").unwrap_or_default();
        #[cfg(feature = "neural")]
        if mode == "model" {
            rss_model_child(Path::new(&root));
            return;
        }
        rss_child(Path::new(&root), mode == "index");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    corpus::generate(tmp.path(), SKILLS, SEED).unwrap();
    rss_report(tmp.path());
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, tmp.path());
    c.final_summary();
}
