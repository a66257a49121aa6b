//! `skillcat match`: rank skills for a message, or score the ranker on a labelled set.
//!
//! ```text
//! skillcat match "message"                          the configured catalog (skillcat.toml)
//! skillcat match SOURCE "message"                   one source (or --source SOURCE "message")
//! skillcat match --eval FILE [--eval-split PART]    last line: top1=0.xxx top5=0.yyy
//!   [--top K] [--format text|json]
//!   --mode bm25 | neural | embed                    (neural: built with --features neural)
//!   --model-dir DIR                                 (neural: all-MiniLM-L6-v2, not the built-in)
//!   --embed-provider openai|ollama --embed-url URL --embed-model M   (embed)
//! ```
//!
//! Settings come from the flags, else from `[matcher]` of the configuration, else the defaults.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::ValueEnum;
use skillcat::config::Config;
use skillcat::matching::eval::Split;
use skillcat::matching::{CacheStats, EmbedProvider, MatchMode, SkillDoc};
use skillcat::ops::matching::{
    Built, CacheReport, Candidate, Choices, MatchError, Settings, load_set,
};
use skillcat::source::Detail;

use super::read::{Opened, open_and_discover_with, print_fault};
use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// The environment variable holding an API key for `--embed-provider openai` (never a flag:
/// command lines are visible to other users).
const API_KEY_VAR: &str = "SKILLCAT_EMBED_API_KEY";

/// How skills are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// BM25 over name, description and body: offline, no model.
    Bm25,
    /// BM25 blended with the bundled MiniLM-L3 model (needs the `neural` feature).
    Neural,
    /// BM25 blended with an embedding provider over HTTP (--embed-url, --embed-model).
    Embed,
}

impl From<Mode> for MatchMode {
    fn from(m: Mode) -> Self {
        match m {
            Mode::Bm25 => MatchMode::Bm25,
            Mode::Neural => MatchMode::Neural,
            Mode::Embed => MatchMode::Embed,
        }
    }
}

/// The protocol of the embedding provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Provider {
    /// `POST {url}/v1/embeddings` (OpenAI, vLLM, llama.cpp, LM Studio, TEI, Ollama's /v1). An
    /// API key is read from SKILLCAT_EMBED_API_KEY.
    Openai,
    /// `POST {url}/api/embed` (Ollama; default URL http://localhost:11434).
    Ollama,
}

impl From<Provider> for EmbedProvider {
    fn from(p: Provider) -> Self {
        match p {
            Provider::Openai => EmbedProvider::OpenAi,
            Provider::Ollama => EmbedProvider::Ollama,
        }
    }
}

/// `skillcat match` arguments. Options left out come from `[matcher]` of the configuration.
#[derive(Debug, clap::Args)]
#[command(override_usage = "skillcat match [OPTIONS] MESSAGE\n       \
    skillcat match [OPTIONS] SOURCE MESSAGE\n       \
    skillcat match [OPTIONS] --source SOURCE MESSAGE\n       \
    skillcat match [OPTIONS] --eval FILE")]
pub struct MatchArgs {
    /// `MESSAGE` alone ranks the configured catalog (--config, ./skillcat.toml or the default
    /// sources); `SOURCE MESSAGE` ranks one source: a directory of skills, a skill, an archive,
    /// a URL. Not needed with --eval.
    #[arg(value_names = ["SOURCE", "MESSAGE"], num_args = 0..=2)]
    args: Vec<String>,
    /// The source to rank, instead of the configured catalog (then one argument: the message).
    #[arg(long, value_name = "SOURCE")]
    source: Option<String>,
    /// How many skills to print [config: matcher.top; default: 5].
    #[arg(long, value_name = "K")]
    top: Option<std::num::NonZeroUsize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Score the ranker on a labelled set (MetaTool JSON: skills[{name,title,description}],
    /// queries[{text,relevant[]}]) instead; the last line is `top1=… top5=…`. The file brings
    /// its own skills: no source is read.
    #[arg(long, value_name = "FILE", conflicts_with = "source")]
    eval: Option<PathBuf>,
    /// With --eval, score only part of the queries: `tune` (the even-numbered ones, which every
    /// choice of the ranker looked at) or `held-out` (the odd-numbered ones, which none did).
    #[arg(
        long,
        value_enum,
        default_value_t,
        value_name = "PART",
        requires = "eval"
    )]
    eval_split: EvalSplit,
    /// Ranker [config: matcher.mode; default: bm25].
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// Embedding provider protocol (--mode embed) [config: matcher.embedder.provider; default:
    /// openai].
    #[arg(long, value_enum)]
    embed_provider: Option<Provider>,
    /// Embedding provider base URL (--mode embed; required for openai) [config:
    /// matcher.embedder.url].
    #[arg(long, value_name = "URL")]
    embed_url: Option<String>,
    /// Embedding model name (--mode embed) [config: matcher.embedder.model].
    #[arg(long, value_name = "MODEL")]
    embed_model: Option<String>,
    /// The BM25 share of a blend (--mode neural|embed), from 0 (dense only) to 1 (BM25 only)
    /// [config: matcher.weight; default: 0.4].
    #[arg(long, value_name = "W")]
    weight: Option<f32>,
    /// The model of --mode neural: a sentence-transformers directory (all-MiniLM-L6-v2, as
    /// scripts/vendor-model unpacks it from PyPI) [config: matcher.model_dir; default: the
    /// MiniLM-L3 built in].
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Do not keep vectors on disk [config: matcher.cache = false]; by default they are kept
    /// under CACHE/embeddings.
    #[arg(long)]
    no_cache: bool,
}

/// `--eval-split`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
enum EvalSplit {
    /// Every query.
    #[default]
    All,
    /// The even-numbered queries (the tuning half).
    Tune,
    /// The odd-numbered queries (the held-out half).
    HeldOut,
}

impl From<EvalSplit> for Split {
    fn from(s: EvalSplit) -> Self {
        match s {
            EvalSplit::All => Split::All,
            EvalSplit::Tune => Split::Tune,
            EvalSplit::HeldOut => Split::HeldOut,
        }
    }
}

/// The run's choices: the flags (the API key from its environment variable).
fn choices(a: &MatchArgs) -> Result<Choices, CliError> {
    if a.weight.is_some_and(|w| !(0.0..=1.0).contains(&w)) {
        return Err(usage!("--weight must be between 0 and 1"));
    }
    Ok(Choices {
        mode: a.mode.map(Into::into),
        top: a.top.map(|t| t.get()),
        weight: a.weight,
        embed_provider: a.embed_provider.map(Into::into),
        embed_url: a.embed_url.clone(),
        embed_model: a.embed_model.clone(),
        model_dir: a.model_dir.clone(),
        no_cache: a.no_cache,
        api_key: std::env::var(API_KEY_VAR).ok(),
    })
}

/// `skillcat match`
pub async fn run(a: MatchArgs, g: &Globals) -> CliResult {
    let (config, _) = super::configuration(g)?;
    let settings = Settings::new(choices(&a)?, &config, &g.open);
    if let Some(file) = &a.eval {
        return evaluate(&settings, a.format, file, a.eval_split).await;
    }
    let (source, message) = match (a.source.as_deref(), a.args.as_slice()) {
        (Some(_), [_, _]) => {
            return Err(usage!("with --source, give only the message"));
        }
        (Some(s), [m]) => (Some(s), m.as_str()),
        (None, [s, m]) => (Some(s.as_str()), m.as_str()),
        (None, [m]) => {
            // A lone argument that is an existing path is a source whose message was forgotten,
            // not a message: say so rather than search the catalog for a file name.
            if !m.contains(char::is_whitespace) && Path::new(m).exists() {
                return Err(usage!(
                    "`{m}` is a path: give the message after it \
                     (skillcat match {m} \"message\"), or --source {m} \"message\""
                ));
            }
            (None, m.as_str())
        }
        (_, _) => {
            return Err(usage!(
                "give a message (and optionally a SOURCE before it), or --eval FILE"
            ));
        }
    };
    if message.trim().is_empty() {
        return Err(usage!("the message is empty"));
    }
    match source {
        Some(source) => match_source(&settings, a.format, source, message, g).await,
        None => match_catalog(&settings, a.format, &config, message, g).await,
    }
}

/// `match SOURCE MESSAGE`: one source, its faults printed.
async fn match_source(
    s: &Settings,
    format: Format,
    source: &str,
    message: &str,
    g: &Globals,
) -> CliResult {
    let Opened { found, .. } = open_and_discover_with(source, Detail::Document, g).await?;
    for f in &found.faults {
        print_fault(f);
    }
    let candidates = Candidate::of_skills(&found.skills);
    outcome(
        rank_and_print(s, format, &candidates, message).await,
        !found.faults.is_empty(),
    )
}

/// The exit code of a ranking: 0 when it printed matches, whatever else is broken (the faults
/// are on stderr: a broken skill elsewhere does not make the matches wrong); 1 when nothing
/// matched and faults were found; the error's code when ranking failed.
fn outcome(ranked: Result<usize, CliError>, faults: bool) -> CliResult {
    match ranked {
        Ok(0) if faults => Ok(ExitStatus::Faults),
        Ok(_) => Ok(ExitStatus::Success),
        Err(e) => Err(e),
    }
}

/// `match MESSAGE`: the configured catalog, its diagnostics on stderr as `list` and `prompt`
/// print them (and where it looked, when it holds no skill); exit as [`outcome`] says.
async fn match_catalog(
    s: &Settings,
    format: Format,
    config: &Config,
    message: &str,
    g: &Globals,
) -> CliResult {
    // Ranking needs names, descriptions and bodies: no file lists.
    let catalog = g.catalog(Detail::Document).map_err(super::context_error)?;
    let snapshot = catalog.snapshot().await;
    let faults = super::read::print_diagnostics(&snapshot);
    super::read::say_where_looked(config, &snapshot, g);
    let candidates = Candidate::of_catalog(&snapshot);
    outcome(
        rank_and_print(s, format, &candidates, message).await,
        faults,
    )
}

/// Ranks the candidates and prints the best [`skillcat::matching::MatcherConfig::top`];
/// returns how many were printed, or the exit code of a failure (printed).
async fn rank_and_print(
    s: &Settings,
    format: Format,
    candidates: &[Candidate<'_>],
    message: &str,
) -> Result<usize, CliError> {
    let built = build(s, &skillcat::ops::matching::docs(candidates)).await?;
    let ranking = skillcat::ops::matching::rank(s, &built, candidates, message)
        .await
        .map_err(match_error)?;
    report_cache(ranking.cache.as_ref());
    let hits = &ranking.matches;
    match format {
        Format::Json => out!(
            "{}",
            serde_json::to_string_pretty(&ranking).unwrap_or_default()
        ),
        Format::Text => {
            if hits.is_empty() {
                err!("No skill shares a word with the message.");
            }
            let width = hits.iter().map(|h| h.name.chars().count()).max();
            for h in hits {
                // A name and a description are the skill author's text: shown as a person may
                // read them (controls and hidden characters escaped).
                out!(
                    "{:>8.3}  {:<w$}  {}",
                    h.score,
                    super::shown(&h.name),
                    super::shown(&shorten(&h.description, 72)),
                    w = width.unwrap_or(0)
                );
            }
        }
    }
    Ok(hits.len())
}

/// `prompt --for MESSAGE`: the positions of `skills` most relevant to the message first,
/// ranked as `match` ranks `candidates` with the configuration's `[matcher]`.
pub(super) async fn prompt_order(
    candidates: &[Candidate<'_>],
    skills: &[skillcat::prompt::PromptSkill<'_>],
    message: &str,
    g: &Globals,
) -> Result<Vec<usize>, CliError> {
    let (config, _) = super::configuration(g)?;
    let s = Settings::new(Choices::default(), &config, &g.open);
    let built = build(&s, &skillcat::ops::matching::docs(candidates)).await?;
    let ranked = skillcat::ops::matching::prompt_ranking(&built, candidates, skills, message)
        .await
        .map_err(match_error)?;
    report_cache(built.cache_report().as_ref());
    Ok(ranked)
}

/// `match --eval FILE`: the set's own skills, ranked with the settings; figures on stdout.
async fn evaluate(s: &Settings, format: Format, file: &Path, split: EvalSplit) -> CliResult {
    let set = load_set(file, split.into()).map_err(match_error)?;
    let started = Instant::now();
    let built = build(s, &set.docs()).await?;
    let e = skillcat::ops::matching::evaluate(s, &set, split.into(), &built)
        .await
        .map_err(match_error)?;
    report_cache(e.cache.as_ref());
    err!("Evaluated in {:.2} s.", started.elapsed().as_secs_f64());
    match format {
        Format::Json => out!("{}", serde_json::to_string(&e).unwrap_or_default()),
        Format::Text => {
            out!(
                "mode={} split={} skills={} queries={} mrr10={:.3}",
                e.mode,
                e.split,
                e.skills,
                e.queries,
                e.mrr10
            );
            out!("top1={:.3} top5={:.3}", e.top1, e.top5);
        }
    }
    Ok(ExitStatus::Success)
}

/// The matcher the settings ask for, over `docs`; a note when vectors cannot be kept.
async fn build(s: &Settings, docs: &[SkillDoc<'_>]) -> Result<Built, CliError> {
    let embedder = s.embedder().map_err(match_error)?;
    if embedder.is_some() && s.cache_missing() {
        note!("Note: no cache directory (set --cache or HOME); vectors are not kept.");
    }
    s.matcher(embedder, docs).await.map_err(match_error)
}

/// A failure of `match`, with the flags that would mend it.
fn match_error(e: MatchError) -> CliError {
    match e {
        MatchError::NeuralUnavailable => usage!(
            "--mode neural needs a skillcat built with the `neural` feature \
             (from a checkout of skillcat: cargo install --locked --path . --features neural); or \
             use --mode embed with a provider"
        ),
        MatchError::Certificates(e) => usage!("--cacert: {e}"),
        MatchError::NoModel => {
            usage!("--mode embed needs --embed-model (or [matcher.embedder] model)")
        }
        MatchError::NoUrl => usage!(
            "--embed-provider openai needs --embed-url (or [matcher.embedder] \
             url), e.g. https://api.openai.com"
        ),
        e => usage!("{e}"),
    }
}

fn report_cache(cache: Option<&CacheReport>) {
    if let Some(CacheReport { stats, dir }) = cache {
        let CacheStats {
            hits,
            misses,
            batches,
            bad_segments,
        } = *stats;
        let s = if batches == 1 { "" } else { "s" };
        err!("Embeddings: {hits} from the cache, {misses} computed in {batches} request{s}.");
        if bad_segments > 0 {
            err!(
                "Warning: {bad_segments} unreadable cache segments in {} were skipped.",
                dir.display()
            );
        }
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
