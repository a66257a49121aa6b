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
#[derive(Debug)]
pub struct RegistrySearch {
    store: Arc<dyn Store>,
}

impl RegistrySearch {
    /// The search of the registry `store`.
    pub fn new(store: Arc<dyn Store>) -> RegistrySearch {
        RegistrySearch { store }
    }
}

impl SiteSearch for RegistrySearch {
    fn search(
        &self,
        _: &Site,
        query: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<String>, usize)> {
        // Called in `spawn_blocking` (the web API's search), where the runtime's handle runs
        // the store's call.
        let (hits, total) =
            crate::site::block_on(
                self.store
                    .search_page(query, offset, limit, SEARCH_DEADLINE),
            )?;
        Ok((hits.into_iter().map(|h| h.name).collect(), total))
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
