//! `skillcat match`: rank a source's skills for a message, or score the ranker on a labelled set.
//!
//! ```text
//! skillcat match SOURCE "message" [--top K] [--format text|json]
//! skillcat match --eval FILE                        last line: top1=0.xxx top5=0.yyy
//!   --mode bm25 | neural | embed                    (neural: built with --features neural)
//!   --embed-provider openai|ollama --embed-url URL --embed-model M   (embed)
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::ValueEnum;
use serde_json::json;
use skillcat::matching::eval::LabelledSet;
use skillcat::matching::{
    CacheStats, Cached, DEFAULT_WEIGHT, EmbedError, Embedder, EmbeddingMatcher, Hit, Index,
    Matcher, OLLAMA_DEFAULT_URL, Ollama, OpenAiCompatible, SkillDoc,
};

use super::read::{Opened, open_and_discover, print_fault};
use super::{FAULTS, Format, OK, USAGE};

/// The environment variable holding an API key for `--embed-provider openai` (never a flag:
/// command lines are visible to other users).
const API_KEY_VAR: &str = "SKILLCAT_EMBED_API_KEY";

/// How skills are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Mode {
    /// BM25 over name, description and body: offline, no model.
    #[default]
    Bm25,
    /// BM25 blended with the bundled MiniLM-L3 model (needs the `neural` feature).
    Neural,
    /// BM25 blended with an embedding provider over HTTP (--embed-url, --embed-model).
    Embed,
}

/// The protocol of the embedding provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Provider {
    /// `POST {url}/v1/embeddings` (OpenAI, vLLM, llama.cpp, LM Studio, TEI, Ollama's /v1). An
    /// API key is read from SKILLCAT_EMBED_API_KEY.
    #[default]
    Openai,
    /// `POST {url}/api/embed` (Ollama; default URL http://localhost:11434).
    Ollama,
}

/// `skillcat match` arguments.
#[derive(Debug, clap::Args)]
pub struct MatchArgs {
    /// Any source: a directory of skills, a skill, an archive. Not needed (and ignored) with
    /// --eval, whose file brings its own skills.
    #[arg(required_unless_present = "eval")]
    source: Option<String>,
    /// The user message to match.
    #[arg(required_unless_present = "eval")]
    message: Option<String>,
    /// How many skills to print.
    #[arg(long, value_name = "K", default_value_t = 5)]
    top: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Score the ranker on a labelled set (MetaTool JSON: skills[{name,title,description}],
    /// queries[{text,relevant[]}]) instead; the last line is `top1=… top5=…`.
    #[arg(long, value_name = "FILE")]
    eval: Option<PathBuf>,
    /// Ranker.
    #[arg(long, value_enum, default_value_t)]
    mode: Mode,
    /// Embedding provider protocol (--mode embed).
    #[arg(long, value_enum, default_value_t)]
    embed_provider: Provider,
    /// Embedding provider base URL (--mode embed; required for openai).
    #[arg(long, value_name = "URL")]
    embed_url: Option<String>,
    /// Embedding model name (--mode embed).
    #[arg(long, value_name = "MODEL")]
    embed_model: Option<String>,
    /// The BM25 share of a blend (--mode neural|embed), from 0 (dense only) to 1 (BM25 only).
    #[arg(long, value_name = "W", default_value_t = DEFAULT_WEIGHT)]
    weight: f32,
    /// Do not keep vectors on disk (by default they are kept under CACHE/embeddings).
    #[arg(long)]
    no_cache: bool,
}

/// `skillcat match`
pub async fn run(a: MatchArgs) -> u8 {
    if !(0.0..=1.0).contains(&a.weight) {
        err!("Error: --weight must be between 0 and 1");
        return USAGE;
    }
    match &a.eval {
        Some(file) => evaluate(&a, file).await,
        None => match_message(&a).await,
    }
}

async fn match_message(a: &MatchArgs) -> u8 {
    let (Some(source), Some(message)) = (a.source.as_deref(), a.message.as_deref()) else {
        err!("Error: give a SOURCE and a message, or --eval FILE");
        return USAGE;
    };
    if message.trim().is_empty() {
        err!("Error: the message is empty");
        return USAGE;
    }
    let Opened { found, .. } = match open_and_discover(source).await {
        Ok(o) => o,
        Err(code) => return code,
    };
    for f in &found.faults {
        print_fault(f);
    }
    let docs: Vec<SkillDoc<'_>> = found.skills.iter().map(SkillDoc::from_skill).collect();
    let Some((matcher, cache)) = build(a, &docs).await else {
        return USAGE;
    };
    let hits = match matcher.rank(message, a.top).await {
        Ok(h) => h,
        Err(e) => return provider_failed(&e),
    };
    report_cache(cache.as_deref());
    let skills = &found.skills;
    match a.format {
        Format::Json => {
            let matches: Vec<_> = hits
                .iter()
                .enumerate()
                .map(|(rank, h)| {
                    let s = &skills[h.index];
                    json!({
                        "rank": rank + 1,
                        "name": s.name(),
                        "score": h.score,
                        "description": s.description(),
                        "location": s.location(),
                    })
                })
                .collect();
            let doc = json!({"mode": mode_name(a.mode), "message": message, "matches": matches});
            out!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        }
        Format::Text => {
            if hits.is_empty() {
                err!("No skill shares a word with the message.");
            }
            let width = hits
                .iter()
                .map(|h| skills[h.index].name().chars().count())
                .max();
            for h in &hits {
                let s = &skills[h.index];
                out!(
                    "{:>8.3}  {:<w$}  {}",
                    h.score,
                    s.name(),
                    shorten(s.description(), 72),
                    w = width.unwrap_or(0)
                );
            }
        }
    }
    if found.faults.is_empty() { OK } else { FAULTS }
}

async fn evaluate(a: &MatchArgs, file: &Path) -> u8 {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            err!("Error: {}: {e}", file.display());
            return USAGE;
        }
    };
    let set = match LabelledSet::from_json(&bytes) {
        Ok(s) => s,
        Err(e) => {
            err!("Error: {}: {e}", file.display());
            return USAGE;
        }
    };
    let started = Instant::now();
    let docs = set.docs();
    let Some((matcher, cache)) = build(a, &docs).await else {
        return USAGE;
    };
    let rankings: Vec<Vec<Hit>> = match matcher.rank_all(&set.texts(), 10).await {
        Ok(r) => r,
        Err(e) => return provider_failed(&e),
    };
    let s = set.score(&rankings);
    report_cache(cache.as_deref());
    err!("Evaluated in {:.2} s.", started.elapsed().as_secs_f64());
    match a.format {
        Format::Json => out!(
            "{}",
            json!({
                "mode": mode_name(a.mode),
                "skills": set.skills.len(),
                "queries": s.queries,
                "top1": s.top1,
                "top5": s.top5,
                "mrr10": s.mrr10,
            })
        ),
        Format::Text => {
            out!(
                "mode={} skills={} queries={} mrr10={:.3}",
                mode_name(a.mode),
                set.skills.len(),
                s.queries,
                s.mrr10
            );
            out!("top1={:.3} top5={:.3}", s.top1, s.top5);
        }
    }
    OK
}

type CacheHandle = Arc<Cached<Box<dyn Embedder>>>;

/// The matcher `--mode` asks for, over `docs`; errors are printed (`None`).
async fn build(
    a: &MatchArgs,
    docs: &[SkillDoc<'_>],
) -> Option<(Box<dyn Matcher>, Option<CacheHandle>)> {
    let embedder: Box<dyn Embedder> = match a.mode {
        Mode::Bm25 => return Some((Box::new(Index::build(docs)), None)),
        Mode::Neural => neural()?,
        Mode::Embed => http_embedder(a)?,
    };
    let (embedder, cache): (Arc<dyn Embedder>, Option<CacheHandle>) = match cache_root(a) {
        Some(root) => {
            let cached = Arc::new(Cached::new(embedder, root));
            (cached.clone(), Some(cached))
        }
        None => (Arc::from(embedder), None),
    };
    match EmbeddingMatcher::build(embedder, docs, a.weight).await {
        Ok(m) => Some((Box::new(m), cache)),
        Err(e) => {
            provider_failed(&e);
            None
        }
    }
}

#[cfg(feature = "neural")]
fn neural() -> Option<Box<dyn Embedder>> {
    match skillcat::matching::PocketEncoder::new() {
        Ok(e) => Some(Box::new(e)),
        Err(e) => {
            err!("Error: {e}");
            None
        }
    }
}

#[cfg(not(feature = "neural"))]
fn neural() -> Option<Box<dyn Embedder>> {
    err!(
        "Error: --mode neural needs a skillcat built with the `neural` feature \
         (cargo install skillcat --features neural); or use --mode embed with a provider"
    );
    None
}

fn http_embedder(a: &MatchArgs) -> Option<Box<dyn Embedder>> {
    let Some(model) = a.embed_model.as_deref() else {
        err!("Error: --mode embed needs --embed-model");
        return None;
    };
    let made: Result<Box<dyn Embedder>, EmbedError> = match a.embed_provider {
        Provider::Openai => {
            let Some(url) = a.embed_url.as_deref() else {
                err!(
                    "Error: --embed-provider openai needs --embed-url (e.g. https://api.openai.com)"
                );
                return None;
            };
            OpenAiCompatible::new(url, model).map(|p| {
                let p = match std::env::var(API_KEY_VAR) {
                    Ok(key) if !key.is_empty() => p.with_api_key(key),
                    _ => p,
                };
                Box::new(p) as Box<dyn Embedder>
            })
        }
        Provider::Ollama => {
            let url = a.embed_url.as_deref().unwrap_or(OLLAMA_DEFAULT_URL);
            Ollama::new(url, model).map(|p| Box::new(p) as Box<dyn Embedder>)
        }
    };
    match made {
        Ok(e) => Some(e),
        Err(e) => {
            err!("Error: {e}");
            None
        }
    }
}

/// Where vectors are kept: `--cache` (or the user's cache directory) + `embeddings`.
fn cache_root(a: &MatchArgs) -> Option<PathBuf> {
    if a.no_cache {
        return None;
    }
    let root = super::globals()
        .open
        .cache_dir
        .clone()
        .or_else(skillcat::source::http::default_cache_dir);
    if root.is_none() {
        err!("Note: no cache directory (set --cache or HOME); vectors are not kept.");
    }
    root.map(|r| r.join("embeddings"))
}

fn report_cache(cache: Option<&Cached<Box<dyn Embedder>>>) {
    if let Some(c) = cache {
        let CacheStats {
            hits,
            misses,
            batches,
            bad_segments,
        } = c.stats();
        err!("Embeddings: {hits} from the cache, {misses} computed in {batches} requests.");
        if bad_segments > 0 {
            err!(
                "Warning: {bad_segments} unreadable cache segments in {} were skipped.",
                c.dir().display()
            );
        }
    }
}

fn provider_failed(e: &EmbedError) -> u8 {
    err!("Error: {e}");
    USAGE
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Bm25 => "bm25",
        Mode::Neural => "neural",
        Mode::Embed => "embed",
    }
}

/// The first `max` characters of `text` with whitespace collapsed, `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let mut out: String = collapsed.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
