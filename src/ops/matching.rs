//! `match`: skills ranked for a message, or the ranker scored on a labelled set; the settings
//! of a run (the caller's choices over `[matcher]` of the configuration) and the matcher they
//! ask for.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::catalog::Snapshot;
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
        let (embedder, cache): (Arc<dyn Embedder>, Option<CacheHandle>) = match self.cache_root() {
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

impl<'a> Candidate<'a> {
    /// The skills of a source, by their own names.
    pub fn of_skills(skills: &'a [Skill]) -> Vec<Candidate<'a>> {
        skills
            .iter()
            .map(|skill| Candidate {
                name: skill.name(),
                location: skill.location(),
                skill,
            })
            .collect()
    }

    /// The candidate as a prompt block shows it (as [`Snapshot::prompt`] does).
    pub fn prompt_skill(&self) -> crate::prompt::PromptSkill<'_> {
        crate::prompt::PromptSkill {
            name: &self.name,
            description: self.skill.description(),
            location: self.location,
        }
    }

    /// The skills a catalog offers, by the names it offers them under.
    pub fn of_catalog(snapshot: &'a Snapshot) -> Vec<Candidate<'a>> {
        snapshot
            .entries()
            .iter()
            .map(|e| Candidate {
                name: e.name().to_string(),
                location: e.location(),
                skill: e.skill(),
            })
            .collect()
    }
}

/// What the matcher reads of each candidate, under the name it goes by.
pub fn docs<'a>(candidates: &'a [Candidate<'_>]) -> Vec<SkillDoc<'a>> {
    candidates
        .iter()
        .map(|c| SkillDoc {
            name: c.name.as_str().into(),
            ..SkillDoc::from_skill(c.skill)
        })
        .collect()
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

/// `prompt --for MESSAGE`: the positions in `skills` (the entries of a prompt block, told apart
/// by location) of those `built` ranks highest for `message` among `candidates`, best first, as
/// `match` ranks them; for [`crate::prompt::render_by_relevance`], which puts the rest after.
pub async fn prompt_ranking(
    built: &Built,
    candidates: &[Candidate<'_>],
    skills: &[crate::prompt::PromptSkill<'_>],
    message: &str,
) -> Result<Vec<usize>, MatchError> {
    let hits = built
        .matcher
        .rank(message, candidates.len())
        .await
        .map_err(MatchError::Provider)?;
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, s) in skills.iter().enumerate() {
        at.entry(s.location).or_insert(i);
    }
    Ok(hits
        .iter()
        .filter_map(|h| at.get(candidates[h.index].location).copied())
        .collect())
}

/// The figures of a labelled set ranked.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// The ranker.
    pub mode: &'static str,
    /// The part of the queries scored: `all`, `tune` or `held-out`.
    pub split: &'static str,
    /// The set's skills.
    pub skills: usize,
    /// The queries scored.
    pub queries: usize,
    /// The share of queries whose first skill is relevant.
    pub top1: f64,
    /// The share of queries with a relevant skill in the first five.
    pub top5: f64,
    /// The mean reciprocal rank of the first relevant skill within ten.
    pub mrr10: f64,
    /// What the embedding cache did, when there is one.
    #[serde(skip)]
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

/// The set's own skills ranked for each of its queries with `built`, scored; `split` is the
/// part of the set's queries `load_set` kept.
pub async fn evaluate(
    s: &Settings,
    set: &LabelledSet,
    split: Split,
    built: &Built,
) -> Result<Evaluation, MatchError> {
    let rankings: Vec<Vec<Hit>> = built
        .matcher
        .rank_all(&set.texts(), 10)
        .await
        .map_err(MatchError::Provider)?;
    let Scores {
        queries,
        top1,
        top5,
        mrr10,
        ..
    } = set.score(&rankings);
    Ok(Evaluation {
        mode: s.matcher.mode.as_str(),
        split: match split {
            Split::All => "all",
            Split::Tune => "tune",
            Split::HeldOut => "held-out",
        },
        skills: set.skills.len(),
        queries,
        top1,
        top5,
        mrr10,
        cache: built.cache_report(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn skill(dir: &Path, name: &str, description: &str) -> Skill {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let text = format!("---\nname: {name}\ndescription: {description}\n---\nBody.\n");
        std::fs::write(d.join("SKILL.md"), text).unwrap();
        let src = crate::source::DirSource::open_skill(&d, Default::default()).unwrap();
        let found = crate::source::discover_with(&src, crate::source::Detail::Document).await;
        found.unwrap().skills.remove(0)
    }

    #[test]
    fn choices_go_over_the_configuration() {
        let mut config = Config::default();
        config.matcher.top = 3;
        config.cache_dir = Some(PathBuf::from("/config-cache"));
        let open = OpenOptions {
            user_cache_dir: Some(PathBuf::from("/user-cache")),
            ..OpenOptions::default()
        };
        let s = Settings::new(Choices::default(), &config, &open);
        assert_eq!(s.matcher.top, 3);
        assert_eq!(s.cache_dir, Some(PathBuf::from("/config-cache")));
        let choices = Choices {
            top: Some(7),
            mode: Some(MatchMode::Embed),
            no_cache: true,
            ..Choices::default()
        };
        let open = OpenOptions {
            cache_dir: Some(PathBuf::from("/given")),
            ..open
        };
        let s = Settings::new(choices, &config, &open);
        assert_eq!((s.matcher.top, s.matcher.mode), (7, MatchMode::Embed));
        assert_eq!(s.cache_dir, Some(PathBuf::from("/given")));
        assert!(!s.matcher.cache && !s.cache_missing() && s.cache_root().is_none());
    }

    #[test]
    fn an_embedder_needs_its_model_and_url() {
        let config = Config::default();
        let open = OpenOptions::default();
        let at = |mode, model: Option<&str>, url: Option<&str>| {
            let choices = Choices {
                mode: Some(mode),
                embed_provider: Some(EmbedProvider::OpenAi),
                embed_model: model.map(str::to_string),
                embed_url: url.map(str::to_string),
                ..Choices::default()
            };
            Settings::new(choices, &config, &open).embedder()
        };
        assert!(at(MatchMode::Bm25, None, None).unwrap().is_none());
        let no_model = at(MatchMode::Embed, None, None).err().unwrap();
        assert!(matches!(no_model, MatchError::NoModel), "{no_model:?}");
        let no_url = at(MatchMode::Embed, Some("m"), None).err().unwrap();
        assert!(matches!(no_url, MatchError::NoUrl), "{no_url:?}");
        let made = at(MatchMode::Embed, Some("m"), Some("http://127.0.0.1:9"));
        assert!(made.unwrap().is_some());
        #[cfg(not(feature = "neural"))]
        assert!(matches!(
            at(MatchMode::Neural, None, None),
            Err(MatchError::NeuralUnavailable)
        ));
    }

    #[tokio::test]
    async fn bm25_ranks_the_skill_sharing_the_words_first() {
        let tmp = tempfile::tempdir().unwrap();
        let skills = [
            skill(
                tmp.path(),
                "pdf-tools",
                "Extract text and tables from PDF files.",
            )
            .await,
            skill(tmp.path(), "git-helper", "Write commit messages for git.").await,
        ];
        let s = Settings::new(
            Choices::default(),
            &Config::default(),
            &OpenOptions::default(),
        );
        let candidates = Candidate::of_skills(&skills);
        let built = s.matcher(None, &docs(&candidates)).await.unwrap();
        let r = rank(&s, &built, &candidates, "extract tables from a pdf")
            .await
            .unwrap();
        assert_eq!(r.mode, "bm25");
        assert_eq!(
            (r.matches[0].rank, r.matches[0].name.as_str()),
            (1, "pdf-tools")
        );
        assert!(r.cache.is_none());
        let json = serde_json::to_value(&r).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["mode", "message", "matches"]);
    }

    #[tokio::test]
    async fn a_labelled_set_is_loaded_scored_or_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("set.json");
        let e = load_set(&file, Split::All).unwrap_err();
        assert!(matches!(e, MatchError::ReadSet { .. }), "{e:?}");
        std::fs::write(&file, "{").unwrap();
        let e = load_set(&file, Split::All).unwrap_err();
        assert!(matches!(e, MatchError::BadSet { .. }), "{e:?}");
        let set = serde_json::json!({
            "skills": [
                {"name": "weather", "description": "Forecasts the weather in a city."},
                {"name": "calculator", "description": "Adds and multiplies numbers."}
            ],
            "queries": [
                {"text": "what is the weather forecast", "relevant": ["weather"]},
                {"text": "multiply these numbers", "relevant": ["calculator"]}
            ]
        });
        std::fs::write(&file, set.to_string()).unwrap();
        let set = load_set(&file, Split::HeldOut).unwrap();
        let s = Settings::new(
            Choices::default(),
            &Config::default(),
            &OpenOptions::default(),
        );
        let built = s.matcher(None, &set.docs()).await.unwrap();
        let e = evaluate(&s, &set, Split::HeldOut, &built).await.unwrap();
        assert_eq!((e.split, e.skills, e.queries), ("held-out", 2, 1));
        assert_eq!(e.top1, 1.0);
    }
}
