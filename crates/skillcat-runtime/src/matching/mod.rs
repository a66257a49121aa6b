//! Matching a user message to skills: which skills should an agent look at for this request?
//!
//! ```text
//! message ──▶ tokenize ──▶ Index (BM25F: name, description, body, grams) ──▶ top 50 ─┐
//!    │                                                                               ├▶ fuse ▶ top k
//!    └─────▶ Embedder (HTTP provider, or the bundled model) ─▶ DenseIndex ▶ top 50 ──┘
//!                 └─ Cached: vectors on disk by sha256(space_id \0 text)
//! ```
//!
//! - [`Bm25Index`] is the default: an embedded, offline BM25F ranker. It needs no model and answers
//!   a query over 10,000 skills in well under a millisecond once built.
//! - An [`Embedder`] turns text into vectors: [`OpenAiCompatible`] (`POST /v1/embeddings`),
//!   [`Ollama`] (`POST /api/embed`), and with the `neural` feature the bundled
//!   `PocketEncoder`. [`Cached`] keeps every vector on disk so that each text is sent to a
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
#[cfg(feature = "neural")]
mod neural;
mod settings;
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
pub use neural::PocketEncoder;
pub(crate) use settings::RawMatcher;
pub use settings::{EmbedProvider, EmbedderConfig, MatchMode, MatcherConfig};
pub use stem::stem;

/// One skill as the matcher sees it: name, description and body, borrowed or owned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillDoc<'a> {
    /// The skill's name (`csv-cleaner`), or a title for people (`CSV Cleaner`).
    pub name: Cow<'a, str>,
    /// What the skill does and when to use it.
    pub description: Cow<'a, str>,
    /// The instructions (may be empty).
    pub body: Cow<'a, str>,
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
        }
    }

    /// The document of a parsed skill: its catalog name, description and body.
    pub fn from_skill(skill: &'a crate::document::Skill) -> Self {
        SkillDoc::new(skill.name(), skill.description(), skill.body())
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
}
