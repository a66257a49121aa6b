//! How an [`HttpSource`](super::HttpSource) is configured, and what it reports.

use std::path::PathBuf;
use std::time::Duration;

use super::index::IndexLimits;
use crate::archive::ArchiveLimits;
use crate::client::{Policy, Redirects};
use crate::options::{IndexVerifier, RemoteOptions};

/// How an [`HttpSource`](super::HttpSource) reaches the network and where it caches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// The cache directory; `None`: nothing is cached on disk (the command line gives the
    /// user's cache directory).
    pub cache_dir: Option<PathBuf>,
    /// Serve only what is cached; never touch the network.
    pub offline: bool,
    /// Longest wait for a connection (default 10 s).
    pub connect_timeout: Duration,
    /// Longest wait between two reads of a response (default 30 s).
    pub read_timeout: Duration,
    /// The deadline of one request: every attempt, the waits between them and the bodies
    /// included (default 60 s). No retry starts that would end after it.
    pub timeout: Duration,
    /// While a request waits, print a line on stderr this often saying what is slow
    /// (default `None`: never; the command line sets 5 s when stderr is a terminal).
    pub slow_notice: Option<Duration>,
    /// Further attempts after a retryable failure (default 3).
    pub retries: u32,
    /// Base of the exponential backoff between attempts (default 200 ms).
    pub backoff: Duration,
    /// Largest body accepted, index or artifact (default: the archive limit, 16 MiB).
    pub max_body: u64,
    /// Most redirects followed for one request (default 10).
    pub max_redirects: usize,
    /// Most requests in flight at once (default 8).
    pub concurrency: usize,
    /// Most entries of an index read (default 10,000); the ones after are left out with a
    /// warning.
    pub max_index_entries: usize,
    /// Limits for the archives downloaded.
    pub limits: ArchiveLimits,
    /// PEM certificates trusted as roots beside the platform's (feature `tls`).
    pub ca_certificates: Vec<Vec<u8>>,
    /// How long a cached index may be used without asking the server.
    pub freshness: Freshness,
    /// When set, the index is used only with a signed statement (`index.json.minisig` beside
    /// it) that this accepts; the highest version seen is kept in the cache.
    pub index_verifier: Option<IndexVerifier>,
}

/// How long a cached copy of a mutable document (an index, a v0.1 file) is used without
/// asking the server. A `Cache-Control: max-age` comes from whoever answered (a mirror, a CDN,
/// anyone on the path of `http://`): it is honoured only up to `max_age_cap`, and not at all
/// when `revalidate` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    /// Ask again every time (a conditional request: a 304 costs no body). The commands that
    /// change a project set it.
    pub revalidate: bool,
    /// The longest a copy is used without asking, whatever `max-age` says (default 1 hour).
    pub max_age_cap: Duration,
}

/// The default [`Freshness::max_age_cap`].
pub const DEFAULT_MAX_INDEX_AGE: Duration = Duration::from_secs(3_600);

impl Default for Freshness {
    fn default() -> Self {
        Freshness {
            revalidate: false,
            max_age_cap: DEFAULT_MAX_INDEX_AGE,
        }
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        let limits = ArchiveLimits::default();
        HttpOptions {
            cache_dir: None,
            offline: false,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(60),
            slow_notice: None,
            retries: 3,
            backoff: Duration::from_millis(200),
            max_body: limits.max_compressed,
            max_redirects: 10,
            concurrency: 8,
            max_index_entries: IndexLimits::default().max_entries,
            limits,
            ca_certificates: Vec::new(),
            freshness: Freshness::default(),
            index_verifier: None,
        }
    }
}

impl HttpOptions {
    /// The client policy these options ask for: their timeouts, redirects and roots; the
    /// deadline stays with the caller, which spans retries with it.
    pub fn policy(&self) -> Policy {
        Policy {
            connect_timeout: self.connect_timeout,
            read_timeout: Some(self.read_timeout),
            timeout: None,
            redirects: Redirects::Follow {
                max: self.max_redirects,
            },
            ca_certificates: self.ca_certificates.clone(),
        }
    }

    /// The limits an index is read under.
    pub fn index_limits(&self) -> IndexLimits {
        IndexLimits {
            max_entries: self.max_index_entries,
            ..IndexLimits::default()
        }
    }
}

impl From<&RemoteOptions> for HttpOptions {
    fn from(o: &RemoteOptions) -> Self {
        let d = HttpOptions::default();
        HttpOptions {
            cache_dir: o.cache_dir.clone(),
            offline: o.offline,
            timeout: o.timeout.unwrap_or(d.timeout),
            slow_notice: o.slow_notice,
            max_index_entries: o.max_index_entries.unwrap_or(d.max_index_entries),
            ca_certificates: o.ca_certificates.clone(),
            freshness: Freshness {
                revalidate: o.revalidate,
                max_age_cap: o.max_index_age.unwrap_or(d.freshness.max_age_cap),
            },
            index_verifier: o.index_verifier.clone(),
            ..d
        }
    }
}

impl From<RemoteOptions> for HttpOptions {
    fn from(o: RemoteOptions) -> Self {
        HttpOptions::from(&o)
    }
}

/// One skill as the remote index describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSkill {
    /// Its name (its root in this source).
    pub name: String,
    /// Its description, as the index gives it.
    pub description: String,
    /// Its version, when the index gives one.
    pub version: Option<String>,
    /// `archive`, `skill-md` or `files` (a v0.1 entry).
    pub kind: &'static str,
    /// The artifact's `sha256:` digest, when the index gives one.
    pub digest: Option<String>,
    /// The skill digest skillcat's extra field promises, when present.
    pub skill_digest: Option<String>,
    /// The detached minisign signature the index carries, when present.
    pub signature: Option<String>,
}

/// Where a skill's bytes came from this time (serialized as [`FetchStatus::word`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FetchStatus {
    /// Everything was already in the cache.
    Cached,
    /// Downloaded (and verified, and cached) now.
    Fetched,
    /// Offline, and not in the cache.
    #[serde(rename = "not cached")]
    NotCached,
    /// It could not be fetched; see the message.
    Failed,
}

impl FetchStatus {
    /// `cached`, `fetched`, `not cached` or `failed`.
    pub fn word(self) -> &'static str {
        match self {
            FetchStatus::Cached => "cached",
            FetchStatus::Fetched => "fetched",
            FetchStatus::NotCached => "not cached",
            FetchStatus::Failed => "failed",
        }
    }
}

/// What [`HttpSource::prefetch`](super::HttpSource::prefetch) did for one skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchReport {
    /// The skill.
    pub skill: RemoteSkill,
    /// What happened.
    pub status: FetchStatus,
    /// Why, when it failed or is not cached.
    pub message: Option<String>,
}

/// Counters over the life of an [`HttpSource`](super::HttpSource).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HttpStats {
    /// HTTP requests sent (retries included).
    pub requests: u64,
    /// Of those, answered `304 Not Modified`.
    pub not_modified: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Artifacts served from the cache.
    pub from_cache: u64,
    /// Artifacts downloaded.
    pub downloaded: u64,
}
