//! Scoring a matcher on a labelled set of queries.
//!
//! The set is JSON in the MetaTool shape (the format of `fixtures/matching/metatool-skills.json`):
//!
//! ```text
//! {"skills":  [{"name": "abcmouse", "title": "ABCmouse", "description": "…", "body"?: "…",
//!               "tools"?: [{"name": "…", "description"?: "…", "parameters"?: {"city": "…"}}]}],
//!  "queries": [{"text": "My 4-year-old …", "relevant": ["abcmouse"]}]}
//! ```
//!
//! A skill's `title` (a name for people), when present, is its name for matching; `name` is the
//! identifier `relevant` refers to. A query counts at top-1 when the best skill is relevant, at
//! top-5 when a relevant skill is among the first five; MRR@10 averages 1/rank of the first
//! relevant skill within ten.

use serde::Deserialize;

use super::{Hit, SkillDoc, tools_text};

/// Why [`LabelledSet::from_json`] refused a set.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetError {
    /// The bytes are not a set in JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The set has no skill or no query.
    #[error("the set needs at least one skill and one query")]
    Empty,
    /// Two skills have this name.
    #[error("skill {0:?} appears twice")]
    Duplicate(String),
    /// The query at this index names no relevant skill.
    #[error("query {0} names no relevant skill")]
    NoRelevant(usize),
    /// A query names a relevant skill the set does not have.
    #[error("query {query} names {name:?}, which is not a skill of the set")]
    UnknownRelevant {
        /// The query's index.
        query: usize,
        /// The name it gives.
        name: String,
    },
}

/// A labelled set: skills and queries with the skills relevant to each.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledSet {
    /// The skills to match against.
    pub skills: Vec<LabelledSkill>,
    /// The queries, each with its relevant skills.
    pub queries: Vec<LabelledQuery>,
}

/// One skill of a labelled set.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledSkill {
    /// The identifier queries name in `relevant`.
    pub name: String,
    /// A name for people (`ABCmouse`), used as the name field when present.
    #[serde(default)]
    pub title: Option<String>,
    /// The description.
    pub description: String,
    /// Instructions, when the set has them.
    #[serde(default)]
    pub body: String,
    /// The tools the skill offers, when the set has them.
    #[serde(default)]
    pub tools: Vec<LabelledTool>,
}

/// One tool of a labelled skill.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledTool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its parameters: name → description (a description that is not text counts as none).
    #[serde(default)]
    pub parameters: serde_json::Map<String, serde_json::Value>,
}

/// Which queries of a set to score: the split that `docs/matching.md` tunes on, or the one it
/// holds out. Queries alternate: even positions (0, 2, 4, …) tune, odd positions are held out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// Every query.
    #[default]
    All,
    /// The even-numbered queries: every choice of the matcher was made looking at these only.
    Tune,
    /// The odd-numbered queries: looked at only to report.
    HeldOut,
}

impl Split {
    /// Whether the query at `position` belongs to the split.
    pub fn holds(self, position: usize) -> bool {
        match self {
            Split::All => true,
            Split::Tune => position.is_multiple_of(2),
            Split::HeldOut => !position.is_multiple_of(2),
        }
    }
}

/// One query of a labelled set.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledQuery {
    /// The user message.
    pub text: String,
    /// Names of the skills that answer it.
    pub relevant: Vec<String>,
}

/// Accuracy figures of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    /// Queries scored.
    pub queries: usize,
    /// Share whose best skill is relevant.
    pub top1: f64,
    /// Share with a relevant skill in the first five.
    pub top5: f64,
    /// Mean reciprocal rank of the first relevant skill, within ten (0 beyond).
    pub mrr10: f64,
}

impl LabelledSet {
    /// Parses and checks a set: at least one skill and one query, unique skill names, and every
    /// relevant name a skill of the set.
    pub fn from_json(bytes: &[u8]) -> Result<Self, SetError> {
        let set: LabelledSet = serde_json::from_slice(bytes)?;
        if set.skills.is_empty() || set.queries.is_empty() {
            return Err(SetError::Empty);
        }
        let mut names: Vec<&str> = set.skills.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(SetError::Duplicate(w[0].to_string()));
        }
        for (i, q) in set.queries.iter().enumerate() {
            if q.relevant.is_empty() {
                return Err(SetError::NoRelevant(i));
            }
            if let Some(r) = q
                .relevant
                .iter()
                .find(|r| names.binary_search(&r.as_str()).is_err())
            {
                return Err(SetError::UnknownRelevant {
                    query: i,
                    name: r.clone(),
                });
            }
        }
        Ok(set)
    }

    /// The skills as matcher documents (title as name when present, tools as
    /// [`tools_text`]), in the set's order.
    pub fn docs(&self) -> Vec<SkillDoc<'_>> {
        self.skills
            .iter()
            .map(|s| {
                let doc = SkillDoc::new(
                    s.title.as_deref().unwrap_or(&s.name),
                    s.description.as_str(),
                    s.body.as_str(),
                );
                if s.tools.is_empty() {
                    return doc;
                }
                doc.with_tools(tools_text(s.tools.iter().map(|t| {
                    let params = t
                        .parameters
                        .iter()
                        .map(|(name, d)| (name.as_str(), d.as_str().unwrap_or("")));
                    (t.name.as_str(), t.description.as_str(), params)
                })))
            })
            .collect()
    }

    /// The same set with only the queries of `split`.
    pub fn split(mut self, split: Split) -> Self {
        let mut position = 0;
        self.queries.retain(|_| {
            position += 1;
            split.holds(position - 1)
        });
        self
    }

    /// The query texts, in order.
    pub fn texts(&self) -> Vec<&str> {
        self.queries.iter().map(|q| q.text.as_str()).collect()
    }

    /// Scores rankings (one per query, in order, each best first, indexes into the skills).
    ///
    /// # Panics
    ///
    /// When there are not as many rankings as queries.
    pub fn score(&self, rankings: &[Vec<Hit>]) -> Scores {
        assert_eq!(rankings.len(), self.queries.len(), "one ranking per query");
        let (mut top1, mut top5, mut mrr) = (0usize, 0usize, 0f64);
        for (q, ranking) in self.queries.iter().zip(rankings) {
            let first = ranking
                .iter()
                .take(10)
                .position(|h| q.relevant.iter().any(|r| *r == self.skills[h.index].name));
            if let Some(rank) = first {
                top1 += usize::from(rank == 0);
                top5 += usize::from(rank < 5);
                mrr += 1.0 / (rank + 1) as f64;
            }
        }
        let n = self.queries.len().max(1) as f64;
        Scores {
            queries: self.queries.len(),
            top1: top1 as f64 / n,
            top5: top5 as f64 / n,
            mrr10: mrr / n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SET: &str = r#"{"skills": [
        {"name": "a", "title": "Alpha", "description": "first"},
        {"name": "b", "description": "second", "body": "more"}],
      "queries": [
        {"text": "q1", "relevant": ["a"]},
        {"text": "q2", "relevant": ["b"]}]}"#;

    fn hits(order: &[usize]) -> Vec<Hit> {
        order
            .iter()
            .map(|&index| Hit { index, score: 1.0 })
            .collect()
    }

    #[test]
    fn scores_table() {
        let set = LabelledSet::from_json(SET.as_bytes()).unwrap();
        assert_eq!(set.docs()[0].name, "Alpha");
        assert_eq!(set.docs()[1].name, "b");
        assert_eq!(set.docs()[1].body, "more");
        assert_eq!(set.docs()[1].tools, "");
        let s = set.score(&[hits(&[0, 1]), hits(&[0, 1])]);
        assert_eq!((s.top1, s.top5, s.mrr10), (0.5, 1.0, 0.75));
        let s = set.score(&[hits(&[]), hits(&[1])]);
        assert_eq!((s.top1, s.top5, s.mrr10), (0.5, 0.5, 0.5));
    }

    #[test]
    fn tools_become_text_and_splits_alternate() {
        let json = r#"{"skills": [{"name": "w", "description": "weather",
            "tools": [{"name": "get_weather", "parameters": {"city": "The city", "days": 3}}]}],
          "queries": [{"text": "q0", "relevant": ["w"]}, {"text": "q1", "relevant": ["w"]},
                      {"text": "q2", "relevant": ["w"]}]}"#;
        let set = LabelledSet::from_json(json.as_bytes()).unwrap();
        // A description that is not text counts as none.
        assert_eq!(
            set.docs()[0].tools,
            "get_weather\n\ncity: The city\ndays: \n"
        );
        let texts = |s: LabelledSet| s.texts().join(",");
        assert_eq!(texts(set.clone().split(Split::All)), "q0,q1,q2");
        assert_eq!(texts(set.clone().split(Split::Tune)), "q0,q2");
        assert_eq!(texts(set.split(Split::HeldOut)), "q1");
    }

    #[test]
    fn bad_sets_are_refused() {
        for (json, want) in [
            (r#"{"skills": [], "queries": []}"#, "at least one"),
            (
                r#"{"skills": [{"name": "a", "description": ""}, {"name": "a", "description": ""}],
                 "queries": [{"text": "q", "relevant": ["a"]}]}"#,
                "twice",
            ),
            (
                r#"{"skills": [{"name": "a", "description": ""}],
                 "queries": [{"text": "q", "relevant": ["zz"]}]}"#,
                "not a skill",
            ),
            (
                r#"{"skills": [{"name": "a", "description": ""}],
                 "queries": [{"text": "q", "relevant": []}]}"#,
                "no relevant",
            ),
            ("not json", "expected"),
        ] {
            let e = LabelledSet::from_json(json.as_bytes()).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
    }
}
