//! The `[matcher]` section of `skillcat.toml`, typed: how `skillcat match` ranks skills when no
//! flag says otherwise.
//!
//! ```toml
//! [matcher]
//! mode = "bm25"          # bm25 | neural | embed   (flag: --mode)
//! top = 5                # skills printed          (flag: --top)
//! weight = 0.4           # BM25 share of a blend   (flag: --weight)
//! cache = true           # keep vectors on disk    (flag: --no-cache)
//! model_dir = "models/all-MiniLM-L6-v2"  # neural: a model directory (flag: --model-dir)
//!
//! [matcher.embedder]     # --mode embed
//! provider = "ollama"    # openai | ollama         (flag: --embed-provider)
//! url = "http://127.0.0.1:11434"                   (flag: --embed-url)
//! model = "nomic-embed-text"                       (flag: --embed-model)
//! dimensions = 256       # openai only: ask for shorter vectors
//!
//! [matcher.bm25]         # the ranker's parameters (see Bm25Params); rarely needed
//! name_weight = 3.0
//! ```
//!
//! Every key is optional. Unknown keys, wrong types and impossible values are errors naming the
//! key and its line (see the crate's docs).

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

/// How skills are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    /// BM25 over name, description and body: offline, no model.
    #[default]
    Bm25,
    /// BM25 blended with the bundled MiniLM-L3 model (the `neural` feature).
    Neural,
    /// BM25 blended with an embedding provider over HTTP (`[matcher.embedder]`).
    Embed,
}

impl MatchMode {
    /// `bm25`, `neural` or `embed`, as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchMode::Bm25 => "bm25",
            MatchMode::Neural => "neural",
            MatchMode::Embed => "embed",
        }
    }
}

/// The protocol of an embedding provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedProvider {
    /// `POST {url}/v1/embeddings` (OpenAI, vLLM, llama.cpp, LM Studio, TEI, Ollama's /v1).
    #[default]
    OpenAi,
    /// `POST {url}/api/embed` (Ollama).
    Ollama,
}

impl EmbedProvider {
    /// `openai` or `ollama`, as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedProvider::OpenAi => "openai",
            EmbedProvider::Ollama => "ollama",
        }
    }
}

/// `[matcher.embedder]`: the provider of `mode = "embed"`. The API key is never configured
/// here: it is read from `SKILLCAT_EMBED_API_KEY`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmbedderConfig {
    /// The protocol (default `openai`).
    pub provider: EmbedProvider,
    /// The base URL (`openai`: required; `ollama`: default `http://localhost:11434`).
    pub url: Option<String>,
    /// The model name.
    pub model: Option<String>,
    /// Vector length to ask for (`openai` only; models that support shortening).
    pub dimensions: Option<usize>,
}

/// The `[matcher]` section. [`Default`] is what `skillcat match` does without one.
#[derive(Debug, Clone, PartialEq)]
pub struct MatcherConfig {
    /// The ranker (default BM25).
    pub mode: MatchMode,
    /// How many skills to return (default 5, at least 1).
    pub top: usize,
    /// The BM25 share of a blend in `neural` and `embed` modes, 0..=1 (default
    /// [`DEFAULT_WEIGHT`]).
    pub weight: f32,
    /// Whether embeddings are kept on disk under the cache directory (default true).
    pub cache: bool,
    /// The BM25 parameters (`[matcher.bm25]`; default [`Bm25Params::default`]).
    pub bm25: Bm25Params,
    /// The embedding provider (`[matcher.embedder]`).
    pub embedder: EmbedderConfig,
    /// The model directory of `neural` mode (a sentence-transformers BERT model such as
    /// all-MiniLM-L6-v2); `None`: the MiniLM-L3 compiled into the binary. A relative path in the
    /// file is resolved against the file's directory.
    pub model_dir: Option<std::path::PathBuf>,
}

impl Default for MatcherConfig {
    fn default() -> Self {
        MatcherConfig {
            mode: MatchMode::Bm25,
            top: 5,
            weight: DEFAULT_WEIGHT,
            cache: true,
            bm25: Bm25Params::default(),
            embedder: EmbedderConfig::default(),
            model_dir: None,
        }
    }
}

/// A value of `[matcher]` that parsed but cannot be used: where it is, its dotted key, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    /// Byte range of the value in the file.
    pub span: Range<usize>,
    /// `matcher.weight`, `matcher.bm25.b`, …
    pub key: String,
    /// The message, starting with the key.
    pub message: String,
}

/// A number written as an integer or a float (`weight = 1` is as good as `weight = 1.0`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Number(f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Number;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Number, E> {
                Ok(Number(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// `[matcher]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct RawMatcher {
    mode: Option<MatchMode>,
    top: Option<Spanned<usize>>,
    weight: Option<Spanned<Number>>,
    cache: Option<bool>,
    model_dir: Option<Spanned<String>>,
    bm25: Option<RawBm25>,
    embedder: Option<RawEmbedder>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawBm25 {
    k1: Option<Spanned<Number>>,
    b: Option<Spanned<Number>>,
    name_weight: Option<Spanned<Number>>,
    description_weight: Option<Spanned<Number>>,
    heading_weight: Option<Spanned<Number>>,
    body_weight: Option<Spanned<Number>>,
    tools_weight: Option<Spanned<Number>>,
    gram_weight: Option<Spanned<Number>>,
    concept_weight: Option<Spanned<Number>>,
    idf_exponent: Option<Spanned<Number>>,
    query_k3: Option<Spanned<Number>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawEmbedder {
    provider: Option<EmbedProvider>,
    url: Option<Spanned<String>>,
    model: Option<Spanned<String>>,
    dimensions: Option<Spanned<usize>>,
}

/// A number checked against `range` (inclusive, finite), as `f32`.
fn number(
    value: &Spanned<Number>,
    key: &str,
    range: (f64, f64),
    what: &str,
) -> Result<f32, Invalid> {
    let v = value.get_ref().0;
    if v.is_finite() && v >= range.0 && v <= range.1 {
        Ok(v as f32)
    } else {
        Err(Invalid {
            span: value.span(),
            key: key.to_string(),
            message: format!("{key}: {v} is not {what}"),
        })
    }
}

/// A string that must not be blank, trimmed.
fn text(value: &Spanned<String>, key: &str) -> Result<String, Invalid> {
    let v = value.get_ref().trim();
    if v.is_empty() {
        return Err(Invalid {
            span: value.span(),
            key: key.to_string(),
            message: format!("{key}: must not be empty"),
        });
    }
    Ok(v.to_string())
}

impl RawMatcher {
    /// The typed section, every value checked.
    pub(crate) fn resolve(self) -> Result<MatcherConfig, Invalid> {
        let mut c = MatcherConfig::default();
        if let Some(m) = self.mode {
            c.mode = m;
        }
        if let Some(top) = &self.top {
            if *top.get_ref() == 0 {
                return Err(Invalid {
                    span: top.span(),
                    key: "matcher.top".into(),
                    message: "matcher.top: must be at least 1".into(),
                });
            }
            c.top = *top.get_ref();
        }
        if let Some(w) = &self.weight {
            c.weight = number(w, "matcher.weight", (0.0, 1.0), "between 0 and 1")?;
        }
        if let Some(cache) = self.cache {
            c.cache = cache;
        }
        if let Some(dir) = &self.model_dir {
            c.model_dir = Some(text(dir, "matcher.model_dir")?.into());
        }
        if let Some(b) = &self.bm25 {
            let p = &mut c.bm25;
            let positive = (0.0, f64::from(f32::MAX));
            for (key, value, target, range, what) in [
                ("k1", &b.k1, &mut p.k1, positive, "a number ≥ 0"),
                ("b", &b.b, &mut p.b, (0.0, 1.0), "between 0 and 1"),
                (
                    "name_weight",
                    &b.name_weight,
                    &mut p.name_weight,
                    positive,
                    "a number ≥ 0",
                ),
                (
                    "description_weight",
                    &b.description_weight,
                    &mut p.description_weight,
                    positive,
                    "a number ≥ 0",
                ),
                (
                    "heading_weight",
                    &b.heading_weight,
                    &mut p.heading_weight,
                    positive,
                    "a number ≥ 0",
                ),
                (
                    "body_weight",
                    &b.body_weight,
                    &mut p.body_weight,
                    positive,
                    "a number ≥ 0",
                ),
                (
                    "tools_weight",
                    &b.tools_weight,
                    &mut p.tools_weight,
                    positive,
                    "a number ≥ 0",
                ),
                (
                    "gram_weight",
                    &b.gram_weight,
                    &mut p.gram_weight,
                    positive,
                    "a number ≥ 0",
                ),
                (
                    "concept_weight",
                    &b.concept_weight,
                    &mut p.concept_weight,
                    positive,
                    "a number ≥ 0",
                ),
                (
                    "idf_exponent",
                    &b.idf_exponent,
                    &mut p.idf_exponent,
                    (0.0, 4.0),
                    "between 0 and 4",
                ),
                (
                    "query_k3",
                    &b.query_k3,
                    &mut p.query_k3,
                    positive,
                    "a number ≥ 0",
                ),
            ] {
                if let Some(v) = value {
                    *target = number(v, &format!("matcher.bm25.{key}"), range, what)?;
                }
            }
        }
        if let Some(e) = &self.embedder {
            let out = &mut c.embedder;
            if let Some(p) = e.provider {
                out.provider = p;
            }
            if let Some(u) = &e.url {
                out.url = Some(text(u, "matcher.embedder.url")?);
            }
            if let Some(m) = &e.model {
                out.model = Some(text(m, "matcher.embedder.model")?);
            }
            if let Some(d) = &e.dimensions {
                if *d.get_ref() == 0 {
                    return Err(Invalid {
                        span: d.span(),
                        key: "matcher.embedder.dimensions".into(),
                        message: "matcher.embedder.dimensions: must be at least 1".into(),
                    });
                }
                out.dimensions = Some(*d.get_ref());
            }
        }
        Ok(c)
    }
}

/// The BM25 share of a blend when none is given (0.4: chosen on one half of the MetaTool
/// queries, with all-MiniLM-L6-v2 and with the built-in MiniLM-L3 alike; see
/// `docs/matching.md`).
pub const DEFAULT_WEIGHT: f32 = 0.4;

/// The ranker's parameters. `k1`, `b` and the field weights are the usual constants or priors
/// chosen before looking at any evaluation data; [`gram_weight`](Bm25Params::gram_weight),
/// [`idf_exponent`](Bm25Params::idf_exponent) and [`query_k3`](Bm25Params::query_k3) were chosen
/// on one half of the MetaTool queries and checked on the other (see `docs/matching.md`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation (1.2).
    pub k1: f32,
    /// Length normalisation, the same for every field (0.75).
    pub b: f32,
    /// Weight of the name (3.0): a message that names the skill, or its words, is strong
    /// evidence.
    pub name_weight: f32,
    /// Weight of the description (1.0): what the skill does and when to use it.
    pub description_weight: f32,
    /// Weight of the body's Markdown headings (0.6): the outline of the instructions, what
    /// each part is for; between the description and the rest of the body.
    pub heading_weight: f32,
    /// Weight of the body outside its headings (0.3): instructions mention many things a skill
    /// is not about.
    pub body_weight: f32,
    /// Weight of the tools' names, descriptions and parameters (0.5): what the skill can be
    /// asked to do, often in the words of a request ("file", "sheet", "city").
    pub tools_weight: f32,
    /// Weight of the character grams of name and description (0.1): a tie-breaker, not a match.
    pub gram_weight: f32,
    /// Weight of the synonym concepts of name, description and headings (see the
    /// tokeniser's lexicon): a word of the same group as one of the message's counts this much
    /// of a shared word. 0 turns synonyms off.
    pub concept_weight: f32,
    /// Power of the IDF (1.3): above 1, a rare word shared with the message counts for more
    /// against several common ones (a short description sharing "detailed" and "various" with a
    /// long message should not beat one sharing its subject). 1 is plain BM25.
    pub idf_exponent: f32,
    /// Saturation of a word repeated in the message (1.0): a word said twice counts 4/3 times,
    /// never more than twice. 0 counts each distinct word once.
    pub query_k3: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params {
            k1: 1.2,
            b: 0.75,
            name_weight: 3.0,
            description_weight: 1.0,
            heading_weight: 0.6,
            body_weight: 0.3,
            tools_weight: 0.5,
            gram_weight: 0.1,
            concept_weight: 0.3,
            idf_exponent: 1.3,
            query_k3: 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<MatcherConfig, Invalid> {
        toml::from_str::<RawMatcher>(text).unwrap().resolve()
    }

    #[test]
    fn defaults_and_values() {
        assert_eq!(resolve("").unwrap(), MatcherConfig::default());
        let c = resolve(
            "mode = \"embed\"\ntop = 3\nweight = 1\ncache = false\n\
             [bm25]\nk1 = 2\nname_weight = 1.5\n\
             [embedder]\nprovider = \"ollama\"\nmodel = \" m \"\ndimensions = 64\n",
        )
        .unwrap();
        assert_eq!(
            (c.mode, c.top, c.weight, c.cache),
            (MatchMode::Embed, 3, 1.0, false)
        );
        assert_eq!((c.bm25.k1, c.bm25.name_weight), (2.0, 1.5));
        assert_eq!(c.bm25.b, Bm25Params::default().b);
        assert_eq!(c.embedder.provider, EmbedProvider::Ollama);
        assert_eq!(c.embedder.model.as_deref(), Some("m"));
        assert_eq!((c.embedder.url, c.embedder.dimensions), (None, Some(64)));
    }

    #[test]
    fn impossible_values_name_their_key() {
        for (text, key) in [
            ("top = 0", "matcher.top"),
            ("weight = 1.5", "matcher.weight"),
            ("weight = -0.1", "matcher.weight"),
            ("weight = nan", "matcher.weight"),
            ("[bm25]\nb = 2", "matcher.bm25.b"),
            ("[bm25]\nk1 = -1", "matcher.bm25.k1"),
            ("[bm25]\nquery_k3 = inf", "matcher.bm25.query_k3"),
            ("[embedder]\nurl = \" \"", "matcher.embedder.url"),
            ("[embedder]\ndimensions = 0", "matcher.embedder.dimensions"),
        ] {
            let e = resolve(text).unwrap_err();
            assert_eq!(e.key, key, "{text}");
            assert!(e.message.starts_with(&format!("{key}: ")), "{e:?}");
            assert!(
                !e.span.is_empty() && e.span.end <= text.len(),
                "{text}: {e:?}"
            );
        }
    }
}
