//! What ranks a catalog search: a registry's full-text search, the runtime's matcher (given by
//! the caller, as `skillcat serve` does for directories and URLs), or plain term matching.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::registry::store::Store;
use crate::site::Site;

/// Ranks the skills of a site for a query.
pub trait SiteSearch: Send + Sync {
    /// The names of the skills matching `query`, best first: at most `limit` from the
    /// `offset`-th, and how many match in all. Names the site does not serve are skipped by the
    /// caller. Blocking.
    fn search(
        &self,
        site: &Site,
        query: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<String>, usize)>;

    /// What ranks, for logs and debugging (`registry full-text search`).
    fn describe(&self) -> &'static str;
}

/// Plain term matching, when nothing better is given: every word of the query must be in the
/// skill's name or description (case folded); a word in the name counts three times.
#[derive(Debug, Clone, Copy, Default)]
pub struct TermSearch;

impl SiteSearch for TermSearch {
    fn search(
        &self,
        site: &Site,
        query: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<String>, usize)> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(32)
            .map(str::to_lowercase)
            .collect();
        if words.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let mut hits: Vec<(u32, &str)> = Vec::new();
        for s in site.skills() {
            let name = s.name.to_lowercase();
            let desc = s.description.to_lowercase();
            let mut score = 0;
            let mut all = true;
            for w in &words {
                let n = name.matches(w.as_str()).count() as u32 * 3;
                let d = desc.matches(w.as_str()).count() as u32;
                if n + d == 0 {
                    all = false;
                    break;
                }
                score += n + d;
            }
            if all {
                hits.push((score, &s.name));
            }
        }
        hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let total = hits.len();
        Ok((
            hits.into_iter()
                .skip(offset)
                .take(limit)
                .map(|(_, n)| n.to_string())
                .collect(),
            total,
        ))
    }

    fn describe(&self) -> &'static str {
        "term matching"
    }
}

/// The wall time one registry search may take; then the engine is interrupted from outside
/// and the search answers `503 search_timeout`.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(2);

/// A registry's own full-text search (SQLite FTS5 or PostgreSQL's `tsvector`, over name,
/// description and body of each skill's latest version), through the registry's store. Its
/// cost is capped by the query it sends (terms per query and per phrase) and by a deadline
/// (`SEARCH_DEADLINE`, 2 s).
///
/// Answers are kept for the change-feed position of the site that asked ([`Site::seq`]): a
/// registry's search at one position always answers the same, so a replica answers a query it
/// has answered since the last change from memory — as it answers its index and pages — and
/// forgets them all when its site moves on. The same query thus costs the database once per
/// change, and a replica whose database is lost still answers the queries it holds. Bounded:
/// at most 4,096 answers, of queries up to 256 bytes, each at most a
/// page of names.
#[derive(Debug)]
pub struct RegistrySearch {
    store: Arc<dyn Store>,
    cache: std::sync::Mutex<Answers>,
}

/// How many answers a registry's search keeps at most.
const CACHED_ANSWERS: usize = 4096;

/// The longest query (bytes) whose answer is kept.
const CACHED_QUERY: usize = 256;

/// The answers kept for one position of the feed, by (query, offset, limit).
#[derive(Debug, Default)]
struct Answers {
    seq: Option<i64>,
    by_query: std::collections::HashMap<(String, usize, usize), (Vec<String>, usize)>,
}

impl RegistrySearch {
    /// The search of the registry `store`.
    pub fn new(store: Arc<dyn Store>) -> RegistrySearch {
        RegistrySearch {
            store,
            cache: Default::default(),
        }
    }

    fn cached(
        &self,
        seq: Option<i64>,
        key: &(String, usize, usize),
    ) -> Option<(Vec<String>, usize)> {
        let answers = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        (seq.is_some() && answers.seq == seq)
            .then(|| answers.by_query.get(key).cloned())
            .flatten()
    }

    fn keep(&self, seq: Option<i64>, key: (String, usize, usize), answer: &(Vec<String>, usize)) {
        if seq.is_none() || key.0.len() > CACHED_QUERY {
            return;
        }
        let mut answers = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if answers.seq != seq || answers.by_query.len() >= CACHED_ANSWERS {
            // Another position (every answer kept is of the old one), or full: start afresh.
            answers.by_query.clear();
            answers.seq = seq;
        }
        answers.by_query.insert(key, answer.clone());
    }
}

impl SiteSearch for RegistrySearch {
    fn search(
        &self,
        site: &Site,
        query: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<String>, usize)> {
        let seq = site.seq();
        let key = (query.to_string(), offset, limit);
        if let Some(answer) = self.cached(seq, &key) {
            return Ok(answer);
        }
        // Called in `spawn_blocking` (the web API's search), where the runtime's handle runs
        // the store's call.
        let (hits, total) =
            crate::site::block_on(
                self.store
                    .search_page(query, offset, limit, SEARCH_DEADLINE),
            )?;
        let answer = (hits.into_iter().map(|h| h.name).collect(), total);
        self.keep(seq, key, &answer);
        Ok(answer)
    }

    fn describe(&self) -> &'static str {
        "registry full-text search"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_search_wants_every_word_and_weighs_names() {
        let mk = |name: &str, description: &str| crate::site::SiteSkill {
            name: name.into(),
            description: description.into(),
            version: None,
            location: name.into(),
            archive: bytes::Bytes::new(),
            archive_digest: String::new(),
            manifest: crate::digest::Manifest::build(name, "", std::iter::empty()),
            files: Vec::new(),
            signature: None,
            page: Default::default(),
        };
        let site = Site::from_skills(vec![
            mk("pdf-forms", "Fill forms."),
            mk("csv-cleaner", "Clean CSV files, also from PDF exports."),
        ]);
        let (names, total) = TermSearch.search(&site, "PDF", 0, 10).unwrap();
        assert_eq!(
            (names, total),
            (vec!["pdf-forms".to_string(), "csv-cleaner".into()], 2)
        );
        let (names, _) = TermSearch.search(&site, "pdf clean", 0, 10).unwrap();
        assert_eq!(names, ["csv-cleaner"]);
        assert_eq!(TermSearch.search(&site, " -- ", 0, 10).unwrap().1, 0);
        let (names, total) = TermSearch.search(&site, "pdf", 1, 10).unwrap();
        assert_eq!((names.len(), total), (1, 2));
    }
}
