//! Matching benchmarks over 10,000 generated skills: BM25 index build, query latency, and the
//! resident memory of a catalog held at tier 1 (name, description, location) with its index.
//!
//! Run: `cargo bench --bench matching`. The memory figures come from a child process (this
//! binary again, with `SKILLCAT_BENCH_RSS` set) so that criterion's own allocations do not count;
//! they are printed before the timings, read from `/proc/self/status` (Linux).

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

fn rss_report(root: &Path) {
    let exe = std::env::current_exe().unwrap();
    for mode in ["tier1", "index"] {
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
}

fn main() {
    if let Some(root) = std::env::var_os(RSS_CHILD) {
        let index = std::env::var("SKILLCAT_BENCH_RSS_MODE").is_ok_and(|m| m == "index");
        rss_child(Path::new(&root), index);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    corpus::generate(tmp.path(), SKILLS, SEED).unwrap();
    rss_report(tmp.path());
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, tmp.path());
    c.final_summary();
}
