//! Matching a user message to skills: which skills should an agent look at for this request?
//!
//! ```text
//! message ─▶ tokenize ─▶ Index (BM25F: name, description, headings, body, tools,
//!    │                         grams, synonym concepts) ──────────────────▶ top 50 ─┐
//!    │                                                                            ├▶ fuse ▶ top k
//!    └─▶ Embedder (a model in the process, or an HTTP provider) ─▶ DenseIndex ▶ top 50 ┘
//!             └─ Cached: vectors on disk by sha256(space_id \0 text)
//! ```
//!
//! - [`Bm25Index`] is the default: an embedded, offline BM25F ranker. It needs no model and answers
//!   a query over 10,000 skills in well under a millisecond once built.
//! - An [`Embedder`] turns text into vectors: [`OpenAiCompatible`] (`POST /v1/embeddings`),
//!   [`Ollama`] (`POST /api/embed`), and with the `neural` feature the built-in
//!   `PocketEncoder` (MiniLM-L3) and `SentenceEncoder` (a sentence-transformers directory such
//!   as all-MiniLM-L6-v2). [`Cached`] keeps every vector on disk so that each text is sent to a
//!   provider once.
//! - [`EmbeddingMatcher`] blends the two rankings by normalised score fusion ([`fuse`]).
//! - [`eval`] scores any [`Matcher`] on a labelled set of queries.
//! - [`MatcherConfig`] is the typed `[matcher]` section of `skillcat.toml`.
//!
//! Scores are for ranking only: they do not say whether a skill applies (a threshold does not
//! separate matches from non-matches well). Offer the top few with their descriptions and let the
//! model decide.
//!
//! ```
//! use skillcat_runtime::matching::{Bm25Index, SkillDoc};
//!
//! let skills = [
//!     SkillDoc::new("csv-cleaner", "Profile and clean CSV exports.", ""),
//!     SkillDoc::new("pdf-forms", "Fill PDF forms from a table.", ""),
//! ];
//! let index = Bm25Index::build(&skills);
//! let hits = index.search("tidy up this CSV export please", 3);
//! assert_eq!(skills[hits[0].index].name, "csv-cleaner");
//! ```

mod bm25;
mod dense;
mod embed;
pub mod eval;
mod fusion;
mod hybrid;
mod lexicon;
#[cfg(feature = "neural")]
mod neural;
mod stem;
pub mod tokenize;

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use async_trait::async_trait;

pub use bm25::{Bm25Index, Bm25Params, IndexBuilder};
pub use dense::DenseIndex;
pub use embed::{COMPACT_ABOVE, CacheStats, Cached, EmbedError, Embedder, MAX_BATCH};
pub use embed::{OLLAMA_DEFAULT_URL, Ollama, OpenAiCompatible, provider_client};
pub use fusion::{FUSION_DEPTH, fuse};
pub use hybrid::{DEFAULT_WEIGHT, EmbeddingMatcher};
#[cfg(feature = "neural")]
pub use neural::{PocketEncoder, SentenceEncoder};
pub use skillcat_config::matcher::{EmbedProvider, EmbedderConfig, MatchMode, MatcherConfig};
pub use stem::stem;

/// One skill as the matcher sees it: name, description, body and the tools it offers, borrowed
/// or owned.
///
/// The lexical ranker reads the body's Markdown headings (`# …` to `###### …`, outside code
/// fences) as a field of their own, weighted above the rest of the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillDoc<'a> {
    /// The skill's name (`csv-cleaner`), or a title for people (`CSV Cleaner`).
    pub name: Cow<'a, str>,
    /// What the skill does and when to use it.
    pub description: Cow<'a, str>,
    /// The instructions (may be empty).
    pub body: Cow<'a, str>,
    /// The skill's tools as text: their names, descriptions, parameter names and parameter
    /// descriptions, in any order (may be empty; see [`tools_text`]).
    pub tools: Cow<'a, str>,
}

impl<'a> SkillDoc<'a> {
    /// A document from its three fields.
    pub fn new(
        name: impl Into<Cow<'a, str>>,
        description: impl Into<Cow<'a, str>>,
        body: impl Into<Cow<'a, str>>,
    ) -> Self {
        SkillDoc {
            name: name.into(),
            description: description.into(),
            body: body.into(),
            tools: Cow::Borrowed(""),
        }
    }

    /// The same document with the text of its tools (see [`tools_text`]).
    pub fn with_tools(mut self, tools: impl Into<Cow<'a, str>>) -> Self {
        self.tools = tools.into();
        self
    }

    /// The document of a parsed skill: its catalog name, description, body and tools (see
    /// [`skill_tools_text`]).
    pub fn from_skill(skill: &'a crate::document::Skill) -> Self {
        SkillDoc::new(skill.name(), skill.description(), skill.body())
            .with_tools(skill_tools_text(skill))
    }

    /// The text an embedding model sees: the description, or the name (with `-` and `_` as
    /// spaces) when there is no description. The body is left out: models read a few hundred
    /// tokens at most, and the description is what says when to use a skill. Putting the name in
    /// front measured slightly worse with the bundled model (see `docs/matching.md`).
    pub fn dense_text(&self) -> String {
        let description = self.description.trim();
        if !description.is_empty() {
            return description.to_string();
        }
        self.name
            .chars()
            .map(|c| if c == '-' || c == '_' { ' ' } else { c })
            .collect::<String>()
            .trim()
            .to_string()
    }
}

/// The text of a skill's tools for [`SkillDoc::tools`]: each tool's name and description, then
/// each parameter's name and description, one per line. The names are indexed as words
/// (`run_csv-cleaner_profile` gives `csv`, `cleaner`, `profil`, …).
pub fn tools_text<'t, P>(tools: impl IntoIterator<Item = (&'t str, &'t str, P)>) -> String
where
    P: IntoIterator<Item = (&'t str, &'t str)>,
{
    let mut out = String::new();
    for (name, description, params) in tools {
        for part in [name, description] {
            out.push_str(part);
            out.push('\n');
        }
        for (pname, pdescription) in params {
            out.push_str(pname);
            out.push_str(": ");
            out.push_str(pdescription);
            out.push('\n');
        }
    }
    out
}

/// The tools of a skill as the matcher reads them, without reading a file: each script that
/// its `scripts:` declaration (the sidecar's, read with the skill, or the frontmatter's) declares (its name, description, and its parameters' names and
/// descriptions), then the name of every other file under `scripts/` (`scripts/level_counts.sh`
/// gives `level_counts`), which the sandbox offers as a tool of its own. A `scripts:` value that
/// does not parse adds nothing (validation reports it).
pub fn skill_tools_text(skill: &crate::document::Skill) -> String {
    let declared = skill
        .declarations()
        .ok()
        .and_then(|d| {
            d.scripts()
                .and_then(|v| crate::script::parse_declared(v).ok())
        })
        .unwrap_or_default();
    let mut out = tools_text(declared.iter().map(|d| {
        let params = d
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.description.as_str()));
        (d.name.as_str(), d.description.as_str(), params)
    }));
    for file in skill.files() {
        let Some(rest) = file.path.strip_prefix("scripts/") else {
            continue;
        };
        if rest.contains('/') || declared.iter().any(|d| d.path == file.path) {
            continue;
        }
        let stem = rest.rsplit_once('.').map_or(rest, |(stem, _)| stem);
        if !stem.is_empty() {
            out.push_str(stem);
            out.push('\n');
        }
    }
    out
}

/// A ranked skill: its position in the list the matcher was built from, and its score (higher is
/// better; comparable only within one ranking).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The skill's position in the documents given to the matcher.
    pub index: usize,
    /// The score.
    pub score: f32,
}

/// Anything that ranks the skills it was built from for a message.
///
/// # Contract
///
/// - Hits are best first, at most `k`, each skill at most once; equal scores keep the order of
///   the skills the matcher was built from (the catalog's precedence order).
/// - A matcher that needs no provider never fails.
#[async_trait]
pub trait Matcher: Send + Sync {
    /// The best `k` skills for `message`.
    async fn rank(&self, message: &str, k: usize) -> Result<Vec<Hit>, EmbedError>;

    /// The best `k` skills for each message, in order. Matchers that call a provider override
    /// this to send the messages in batches.
    async fn rank_all(&self, messages: &[&str], k: usize) -> Result<Vec<Vec<Hit>>, EmbedError> {
        let mut out = Vec::with_capacity(messages.len());
        for m in messages {
            out.push(self.rank(m, k).await?);
        }
        Ok(out)
    }
}

#[async_trait]
impl Matcher for Bm25Index {
    async fn rank(&self, message: &str, k: usize) -> Result<Vec<Hit>, EmbedError> {
        Ok(self.search(message, k))
    }
}

/// A hit ordered by rank: a higher score is greater, and for equal scores the earlier skill.
#[derive(Debug, Clone, Copy)]
struct Ranked(Hit);

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .score
            .total_cmp(&other.0.score)
            .then_with(|| other.0.index.cmp(&self.0.index))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

/// The best `k` of `(index, score)` pairs, best first (ties: lower index first), with a heap of
/// size `k`: no allocation proportional to the number of candidates. NaN scores are dropped.
fn top_k(candidates: impl Iterator<Item = (usize, f32)>, k: usize) -> Vec<Hit> {
    if k == 0 {
        return Vec::new();
    }
    let mut heap: BinaryHeap<Reverse<Ranked>> = BinaryHeap::with_capacity(k + 1);
    for (index, score) in candidates {
        if score.is_nan() {
            continue;
        }
        let hit = Ranked(Hit { index, score });
        if heap.len() < k {
            heap.push(Reverse(hit));
        } else if let Some(mut worst) = heap.peek_mut()
            && hit > worst.0
        {
            *worst = Reverse(hit);
        }
    }
    let mut out: Vec<Hit> = heap.into_iter().map(|Reverse(r)| r.0).collect();
    out.sort_by_key(|h| std::cmp::Reverse(Ranked(*h)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_by_score_then_position() {
        let scores = [0.5, 2.0, 0.5, f32::NAN, 3.0, 2.0];
        let hits = top_k(scores.iter().copied().enumerate(), 4);
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [4, 1, 5, 0]);
        assert!(top_k(scores.iter().copied().enumerate(), 0).is_empty());
        assert_eq!(top_k(scores.iter().copied().enumerate(), 100).len(), 5);
    }

    #[test]
    fn dense_text_is_the_description_else_the_name() {
        assert_eq!(
            SkillDoc::new("csv-cleaner", " Clean CSV. ", "body").dense_text(),
            "Clean CSV."
        );
        assert_eq!(
            SkillDoc::new("csv_cleaner", " ", "body").dense_text(),
            "csv cleaner"
        );
    }

    #[test]
    fn a_skill_s_tools_are_its_declared_scripts_and_its_other_scripts() {
        let text = "---\nname: geo\ndescription: Places.\nscripts:\n  - name: lookup\n    \
                    path: scripts/lookup.py\n    description: Find a place by name.\n    params:\n      \
                    - name: city\n        type: string\n        description: The city to find\n---\nBody\n";
        let file = |path: &str| crate::path::FileEntry {
            path: path.into(),
            size: 10,
            executable: path.starts_with("scripts/"),
            private: false,
        };
        let doc = crate::document::parse_document(text.as_bytes()).unwrap();
        let files = [
            "SKILL.md",
            "scripts/lookup.py",
            "scripts/level_counts.sh",
            "scripts/lib/helper.py",
            "references/guide.md",
        ];
        let skill = crate::document::Skill::new(
            String::new(),
            "geo/SKILL.md".into(),
            Some("geo".into()),
            doc,
            files.into_iter().map(file).collect(),
        );
        assert_eq!(
            skill_tools_text(&skill),
            "lookup\nFind a place by name.\ncity: The city to find\nlevel_counts\n"
        );
        assert_eq!(SkillDoc::from_skill(&skill).tools, skill_tools_text(&skill));
    }
}
