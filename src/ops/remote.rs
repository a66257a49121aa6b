//! `fetch`: every skill of an HTTP index brought into the cache, and what that took.

use serde::Serialize;

use crate::source::http::{FetchStatus, HttpOptions, HttpSource, HttpStats};

/// Why a fetch did not happen.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The address is not one an HTTP source reads.
    #[error(transparent)]
    Url(crate::Error),
    /// The index could not be read.
    #[error(transparent)]
    Index(crate::Error),
}

/// An index opened for fetching: its skills known, nothing fetched yet.
pub struct Fetch {
    src: HttpSource,
    total: usize,
}

/// What a fetch did: each skill, and the counters of the whole.
#[derive(Debug, Clone, Serialize)]
pub struct Fetched {
    /// The address given (credentials redacted).
    pub url: String,
    /// The index read (credentials redacted).
    pub index: Option<String>,
    /// The cache folder, or `(none)`.
    pub cache: String,
    /// Every skill of the index, in its order.
    pub skills: Vec<FetchedSkill>,
    /// Requests, bytes, and what came from the cache.
    pub stats: HttpStats,
}

/// One skill of a fetch.
#[derive(Debug, Clone, Serialize)]
pub struct FetchedSkill {
    /// Its name.
    pub name: String,
    /// Its version, when the index says it.
    pub version: Option<String>,
    /// What the artifact is: `archive` or `skill-md`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The artifact's digest, as the index promises it.
    pub digest: Option<String>,
    /// The skill digest, as the index says it.
    pub skill_digest: Option<String>,
    /// Whether the index keeps a signature for it.
    pub signed: bool,
    /// What happened.
    pub status: FetchStatus,
    /// Why, when it failed or is not cached.
    pub message: Option<String>,
}

impl Fetch {
    /// Reads the index at `url`.
    pub async fn open(url: &str, opts: HttpOptions) -> Result<Fetch, FetchError> {
        let src = HttpSource::new(url, opts).map_err(FetchError::Url)?;
        let total = src.skills().await.map_err(FetchError::Index)?.len();
        Ok(Fetch { src, total })
    }

    /// How many skills the index lists.
    pub fn total(&self) -> usize {
        self.total
    }

    /// What the index and the fetch warned of (an entry left out, a stale cache).
    pub fn warnings(&self) -> Vec<String> {
        self.src.warnings()
    }

    /// Fetches every skill into the cache; `each` is called after each one with the bytes
    /// received so far.
    pub async fn run(&self, each: impl Fn(u64)) -> Result<Fetched, FetchError> {
        let src = &self.src;
        let reports =
            (src.prefetch(|_| each(src.stats().bytes)).await).map_err(FetchError::Index)?;
        let skills = (reports.into_iter())
            .map(|r| FetchedSkill {
                signed: r.skill.signature.is_some(),
                name: r.skill.name,
                version: r.skill.version,
                kind: r.skill.kind,
                digest: r.skill.digest,
                skill_digest: r.skill.skill_digest,
                status: r.status,
                message: r.message,
            })
            .collect();
        Ok(Fetched {
            url: src.url().to_string(),
            index: src.index_url(),
            cache: (src.cache_dir()).map_or_else(|| "(none)".into(), |d| d.display().to_string()),
            skills,
            stats: src.stats(),
        })
    }
}

/// Its summary, one line: how many skills from where, how each ended, the requests and bytes,
/// the cache.
impl std::fmt::Display for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.skills.len();
        write!(
            f,
            "{n} {} from {}: {} fetched, {} already cached, {} not cached, {} failed ({} \
             request{}, {} not modified, {} byte{} received); cache: {}",
            if n == 1 { "skill" } else { "skills" },
            self.index.as_deref().unwrap_or(&self.url),
            self.count(FetchStatus::Fetched),
            self.count(FetchStatus::Cached),
            self.count(FetchStatus::NotCached),
            self.count(FetchStatus::Failed),
            self.stats.requests,
            if self.stats.requests == 1 { "" } else { "s" },
            self.stats.not_modified,
            self.stats.bytes,
            if self.stats.bytes == 1 { "" } else { "s" },
            self.cache,
        )
    }
}

impl Fetched {
    /// How many skills ended as `status`.
    pub fn count(&self, status: FetchStatus) -> usize {
        self.skills.iter().filter(|s| s.status == status).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(status: FetchStatus) -> FetchedSkill {
        FetchedSkill {
            name: "pdf".into(),
            version: None,
            kind: "archive",
            digest: None,
            skill_digest: None,
            signed: false,
            status,
            message: None,
        }
    }

    #[test]
    fn a_fetch_counts_each_status_and_says_it_in_words() {
        let fetched = Fetched {
            url: "http://x/".into(),
            index: None,
            cache: "(none)".into(),
            skills: vec![skill(FetchStatus::NotCached), skill(FetchStatus::Fetched)],
            stats: HttpStats::default(),
        };
        assert_eq!(fetched.count(FetchStatus::NotCached), 1);
        assert_eq!(fetched.count(FetchStatus::Failed), 0);
        let json = serde_json::to_value(&fetched).unwrap();
        assert_eq!(json["skills"][0]["status"], "not cached");
        assert_eq!(json["skills"][0]["type"], "archive");
        assert_eq!(json["stats"]["not_modified"], 0);
        assert_eq!(
            fetched.to_string(),
            "2 skills from http://x/: 1 fetched, 0 already cached, 1 not cached, 0 failed (0 \
             requests, 0 not modified, 0 bytes received); cache: (none)"
        );
        // Every count agrees in number with its noun.
        let one = Fetched {
            skills: vec![skill(FetchStatus::Fetched)],
            stats: HttpStats {
                requests: 1,
                bytes: 1,
                ..HttpStats::default()
            },
            ..fetched
        };
        assert_eq!(
            one.to_string(),
            "1 skill from http://x/: 1 fetched, 0 already cached, 0 not cached, 0 failed (1 \
             request, 0 not modified, 1 byte received); cache: (none)"
        );
    }

    #[tokio::test]
    async fn an_address_that_is_not_a_url_is_said_before_anything_is_read() {
        let opened = Fetch::open("not a url", HttpOptions::default()).await;
        assert!(matches!(opened, Err(FetchError::Url(_))));
    }
}
