//! `match`: skills ranked for a message, or the ranker scored on a labelled set; the settings
//! of a run (the caller's choices over `[matcher]` of the configuration) and the matcher they
//! ask for.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::config::Config;
use crate::document::Skill;
use crate::matching::eval::{LabelledSet, Scores, SetError, Split};
use crate::matching::{
    Bm25Index, CacheStats, Cached, EmbedError, EmbedProvider, Embedder, EmbeddingMatcher, Hit,
    MatchMode, Matcher, MatcherConfig, OLLAMA_DEFAULT_URL, Ollama, OpenAiCompatible, SkillDoc,
    provider_client,
};
use crate::source::OpenOptions;

/// What a caller chose over `[matcher]` of the configuration (`None`: the configuration's).
#[derive(Debug, Clone, Default)]
pub struct Choices {
    /// The ranker.
    pub mode: Option<MatchMode>,
    /// How many skills to keep.
    pub top: Option<usize>,
    /// The BM25 share of a blend, from 0 to 1 (the caller checks the range).
    pub weight: Option<f32>,
    /// The embedding provider's protocol.
    pub embed_provider: Option<EmbedProvider>,
    /// The embedding provider's base URL.
    pub embed_url: Option<String>,
    /// The embedding model's name.
    pub embed_model: Option<String>,
    /// The neural ranker's model directory.
    pub model_dir: Option<PathBuf>,
    /// Keep no vectors on disk.
    pub no_cache: bool,
    /// The API key of an OpenAI-compatible provider (the caller reads it; never a command-line
    /// argument, which other users can see).
    pub api_key: Option<String>,
}

/// The settings of one run: the choices over `[matcher]`.
#[derive(Debug)]
pub struct Settings {
    /// The matcher's configuration, the choices applied.
    pub matcher: MatcherConfig,
    /// The cache directory: the options', else the configuration's, else the user's.
    pub cache_dir: Option<PathBuf>,
    /// CA certificates trusted for an embedding provider.
    pub ca_certificates: Vec<Vec<u8>>,
    /// The API key of an OpenAI-compatible provider.
    pub api_key: Option<String>,
}

/// Why a matcher could not be built, or could not rank.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    /// The neural ranker was asked of a build without the `neural` feature.
    #[error("the neural ranker needs a skillcat built with the `neural` feature")]
    NeuralUnavailable,
    /// The neural ranker's model could not be loaded.
    #[error("{0}")]
    Model(#[source] EmbedError),
    /// The CA certificates given could not be used.
    #[error("CA certificates: {0}")]
    Certificates(#[source] EmbedError),
    /// The embedding ranker was asked without a model name.
    #[error("the embedding ranker needs a model name")]
    NoModel,
    /// An OpenAI-compatible provider was asked without its URL.
    #[error("an OpenAI-compatible provider needs a URL")]
    NoUrl,
    /// The embedding provider failed (or could not be set up).
    #[error("{0}")]
    Provider(#[source] EmbedError),
    /// A labelled set could not be read.
    #[error("{}: {source}", .file.display())]
    ReadSet {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A labelled set is not one.
    #[error("{}: {source}", .file.display())]
    BadSet {
        /// The file.
        file: PathBuf,
        /// Why.
        source: SetError,
    },
}

impl Settings {
    /// The choices over `config`'s `[matcher]`; the cache directory and certificates of `open`.
    pub fn new(choices: Choices, config: &Config, open: &OpenOptions) -> Settings {
        let mut m = config.matcher.clone();
        if let Some(mode) = choices.mode {
            m.mode = mode;
        }
        if let Some(top) = choices.top {
            m.top = top;
        }
        if let Some(w) = choices.weight {
            m.weight = w;
        }
        if let Some(p) = choices.embed_provider {
            m.embedder.provider = p;
        }
        if let Some(u) = choices.embed_url {
            m.embedder.url = Some(u);
        }
        if let Some(model) = choices.embed_model {
            m.embedder.model = Some(model);
        }
        if let Some(dir) = choices.model_dir {
            m.model_dir = Some(dir);
        }
        m.cache &= !choices.no_cache;
        let cache_dir = open
            .cache_dir
            .clone()
            .or_else(|| config.cache_dir.clone())
            .or_else(|| open.user_cache_dir.clone());
        Settings {
            matcher: m,
            cache_dir,
            ca_certificates: open.ca_certificates.clone(),
            api_key: choices.api_key,
        }
    }

    /// The embedder of the ranker asked for; `None` for BM25, which needs none.
    pub fn embedder(&self) -> Result<Option<Box<dyn Embedder>>, MatchError> {
        match self.matcher.mode {
            MatchMode::Bm25 => Ok(None),
            MatchMode::Neural => neural(self.matcher.model_dir.as_deref()).map(Some),
            MatchMode::Embed => self.http_embedder().map(Some),
        }
    }

    /// Whether vectors would be kept but there is no directory to keep them in.
    pub fn cache_missing(&self) -> bool {
        self.matcher.cache && self.cache_dir.is_none()
    }

    /// Where vectors are kept: the cache directory + `embeddings`; `None` when the cache is off.
    fn cache_root(&self) -> Option<PathBuf> {
        let dir = self.cache_dir.as_ref().filter(|_| self.matcher.cache)?;
        Some(dir.join("embeddings"))
    }

    fn http_embedder(&self) -> Result<Box<dyn Embedder>, MatchError> {
        let e = &self.matcher.embedder;
        // The providers' own client unless certificates to trust were given.
        let client = if self.ca_certificates.is_empty() {
            None
        } else {
            Some(provider_client(self.ca_certificates.clone()).map_err(MatchError::Certificates)?)
        };
        let model = e.model.as_deref().ok_or(MatchError::NoModel)?;
        let made: Result<Box<dyn Embedder>, EmbedError> = match e.provider {
            EmbedProvider::OpenAi => {
                let url = e.url.as_deref().ok_or(MatchError::NoUrl)?;
                OpenAiCompatible::new(url, model).map(|p| {
                    let p = match &self.api_key {
                        Some(key) if !key.is_empty() => p.with_api_key(key.clone()),
                        _ => p,
                    };
                    let p = match e.dimensions {
                        Some(d) => p.with_dimensions(d),
                        None => p,
                    };
                    let p = match client {
                        Some(c) => p.with_client(c),
                        None => p,
                    };
                    Box::new(p) as Box<dyn Embedder>
                })
            }
            EmbedProvider::Ollama => {
                let url = e.url.as_deref().unwrap_or(OLLAMA_DEFAULT_URL);
                Ollama::new(url, model).map(|p| {
                    let p = match client {
                        Some(c) => p.with_client(c),
                        None => p,
                    };
                    Box::new(p) as Box<dyn Embedder>
                })
            }
        };
        made.map_err(MatchError::Provider)
    }

    /// The matcher over `docs`: BM25 without an embedder, else a blend with it (its vectors
    /// kept in the cache when there is one).
    pub async fn matcher(
        &self,
        embedder: Option<Box<dyn Embedder>>,
        docs: &[SkillDoc<'_>],
    ) -> Result<Built, MatchError> {
        let m = &self.matcher;
        let Some(embedder) = embedder else {
            return Ok(Built {
                matcher: Box::new(Bm25Index::build_with(docs, m.bm25)),
                cache: None,
            });
        };
        let (embedder, cache): (Arc<dyn Embedder>, Option<CacheHandle>) = match self.cache_root()
        {
            Some(root) => {
                let cached = Arc::new(Cached::new(embedder, root));
                (cached.clone(), Some(cached))
            }
            None => (Arc::from(embedder), None),
        };
        let matcher = EmbeddingMatcher::build_with(embedder, docs, m.weight, m.bm25)
            .await
            .map_err(MatchError::Provider)?;
        Ok(Built {
            matcher: Box::new(matcher),
            cache,
        })
    }
}

type CacheHandle = Arc<Cached<Box<dyn Embedder>>>;

/// A matcher built, with its cache when vectors are kept.
pub struct Built {
    /// The matcher.
    pub matcher: Box<dyn Matcher>,
    cache: Option<CacheHandle>,
}

impl Built {
    /// What the cache did so far, and where it is; `None` without a cache.
    pub fn cache_report(&self) -> Option<CacheReport> {
        self.cache.as_ref().map(|c| CacheReport {
            stats: c.stats(),
            dir: c.dir().to_path_buf(),
        })
    }
}

/// What an embedding cache did.
#[derive(Debug, Clone)]
pub struct CacheReport {
    /// Its counts.
    pub stats: CacheStats,
    /// Its directory.
    pub dir: PathBuf,
}

#[cfg(feature = "neural")]
fn neural(model: Option<&Path>) -> Result<Box<dyn Embedder>, MatchError> {
    let loaded: Result<Box<dyn Embedder>, EmbedError> = match model {
        Some(dir) => crate::matching::SentenceEncoder::load(dir).map(|e| Box::new(e) as _),
        None => crate::matching::PocketEncoder::new().map(|e| Box::new(e) as _),
    };
    loaded.map_err(MatchError::Model)
}

#[cfg(not(feature = "neural"))]
fn neural(_model: Option<&Path>) -> Result<Box<dyn Embedder>, MatchError> {
    Err(MatchError::NeuralUnavailable)
}

/// A skill to rank, with the name and location it goes by.
pub struct Candidate<'a> {
    /// Its name.
    pub name: String,
    /// Its location.
    pub location: &'a str,
    /// The skill.
    pub skill: &'a Skill,
}

/// One skill ranked.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    /// From 1.
    pub rank: usize,
    /// The skill's name.
    pub name: String,
    /// Its score (as wide as JSON numbers are).
    pub score: f64,
    /// Its description.
    pub description: String,
    /// Its location.
    pub location: String,
}

/// The best skills for a message.
#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    /// The ranker.
    pub mode: &'static str,
    /// The message.
    pub message: String,
    /// Best first.
    pub matches: Vec<Ranked>,
    /// What the embedding cache did, when there is one.
    #[serde(skip)]
    pub cache: Option<CacheReport>,
}

/// Ranks `candidates` for `message` with `built` and keeps the best `top` of the settings.
pub async fn rank(
    s: &Settings,
    built: &Built,
    candidates: &[Candidate<'_>],
    message: &str,
) -> Result<Ranking, MatchError> {
    let hits = built
        .matcher
        .rank(message, s.matcher.top)
        .await
        .map_err(MatchError::Provider)?;
    let matches = hits
        .iter()
        .enumerate()
        .map(|(rank, h)| {
            let c = &candidates[h.index];
            Ranked {
                rank: rank + 1,
                name: c.name.clone(),
                score: f64::from(h.score),
                description: c.skill.description().to_string(),
                location: c.location.to_string(),
            }
        })
        .collect();
    Ok(Ranking {
        mode: s.matcher.mode.as_str(),
        message: message.to_string(),
        matches,
        cache: built.cache_report(),
    })
}

/// The figures of a labelled set ranked.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The set's skills.
    pub skills: usize,
    /// The scores.
    pub scores: Scores,
    /// What the embedding cache did, when there is one.
    pub cache: Option<CacheReport>,
}

/// A labelled set (MetaTool JSON), the part `split` names.
pub fn load_set(file: &Path, split: Split) -> Result<LabelledSet, MatchError> {
    let bytes = std::fs::read(file).map_err(|source| MatchError::ReadSet {
        file: file.to_path_buf(),
        source,
    })?;
    LabelledSet::from_json(&bytes)
        .map(|set| set.split(split))
        .map_err(|source| MatchError::BadSet {
            file: file.to_path_buf(),
            source,
        })
}

/// The set's own skills ranked for each of its queries with `built`, scored.
pub async fn evaluate(set: &LabelledSet, built: &Built) -> Result<Evaluation, MatchError> {
    let rankings: Vec<Vec<Hit>> = built
        .matcher
        .rank_all(&set.texts(), 10)
        .await
        .map_err(MatchError::Provider)?;
    let scores = set.score(&rankings);
    Ok(Evaluation {
        skills: set.skills.len(),
        scores,
        cache: built.cache_report(),
    })
}
