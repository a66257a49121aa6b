//! HTTP source: a remote Agent Skills index, read through a local content-addressed cache.
//!
//! ```text
//! HttpSource::new("https://skills.example.com/", opts)     sync, no I/O
//!   list()   GET /.well-known/agent-skills/index.json      (404 → /.well-known/skills/index.json)
//!            or the URL itself when it ends in .json; revalidated with If-None-Match /
//!            If-Modified-Since (a 304 costs no body); roots = entry names, index order
//!   files(root), read(root/path)
//!            archive  → blob by digest: cache hit, else GET, verify, then cache
//!                       → read into a checked archive tree (all archive rules apply)
//!            skill-md → blob by digest → a one-file skill (SKILL.md)
//!            v0.1     → each file at <index dir>/<name>/<path>, revalidated like the index
//!
//! location("alpha/SKILL.md") = "https://skills.example.com/#alpha/SKILL.md"
//! ```
//!
//! # Verification, before anything enters the cache
//!
//! An artifact is checked in this order, and any mismatch is an error naming what was
//! expected and what was found, with nothing stored: its size (when the index gives it; also
//! against `Content-Length` before the body is read), then the sha256 of the raw bytes
//! (requested with `Accept-Encoding: identity`, never decompressed on the way), then — when
//! skillcat's extra field gives one — the skill digest of the files it holds (the archive is
//! opened and checked first). A cache entry is hashed again each time it is read; one that no
//! longer matches is deleted and fetched again.
//!
//! # Cache
//!
//! By default `$XDG_CACHE_HOME/skillcat`, else `~/.cache/skillcat` (see the `cache` module for the
//! layout). Several processes share one cache: each holds a shared file lock, writes go
//! through temp files renamed into place, and content is named by its hash, so concurrent
//! writers of the same blob agree. With `offline`, only what is cached is served and anything
//! else is an error saying it is not cached. When the network fails but a copy of the index is
//! cached, the copy is used and a warning says so.
//!
//! # Network
//!
//! reqwest, with connect, read and total timeouts; retries with full-jitter backoff on 5xx,
//! 408, 429, connection errors and cut bodies (never on other 4xx); a maximum body size counted
//! on bytes received; redirects followed up to a limit, https → http refused; at most
//! [`HttpOptions::concurrency`] requests at once. URLs in messages never show credentials or
//! query strings. HTTPS needs the crate feature `tls` (on by default).

pub(crate) mod artifact;
pub(crate) mod cache;
pub(crate) mod client;
pub mod index;
mod maintain;
mod options;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use reqwest::Url;
use tokio::sync::OnceCell;

use self::artifact::{Held, check_extra};
use self::cache::{Cache, Record};
pub use self::client::redact;
use self::client::{Counters, Fetched, Fetcher, HttpError, Validators};
use self::index::{Artifact, DiscoveryIndex, Extra, IndexEntry};
pub use self::maintain::{CacheInfo, CleanReport, cache_info, clean_cache};
pub use self::options::{
    DEFAULT_MAX_INDEX_AGE, FetchReport, FetchStatus, Freshness, HttpOptions, HttpStats, RemoteSkill,
};
use crate::options::{IndexCheck, IndexVerifier};
use crate::source::{Detail, DocumentSink, RootRecord, Source, SourceId};

use crate::digest::sha256;
use crate::document::name_key;
use crate::error::{Error, Result};
use crate::path::FileEntry;

/// A skill source over HTTP(S): a remote index and its artifacts, through a local cache.
pub struct HttpSource {
    url: Url,
    shown: String,
    opts: HttpOptions,
    cache_dir: Option<PathBuf>,
    fetcher: OnceCell<Fetcher>,
    cache: OnceCell<Option<Arc<Cache>>>,
    remote: OnceCell<Remote>,
    skills: Mutex<HashMap<String, Arc<OnceCell<Arc<Loaded>>>>>,
    /// Versions found through a served registry's API (`NAME@VERSION` of a version its index
    /// does not list: an older one), by root: read like the index's own entries.
    found: Mutex<HashMap<String, (IndexEntry, bool)>>,
    warnings: Mutex<Vec<String>>,
    counters: Arc<Counters>,
    from_cache: AtomicU64,
    downloaded: AtomicU64,
}

/// The index, once read.
struct Remote {
    index_url: Url,
    index: DiscoveryIndex,
    /// Entry position by name.
    by_name: HashMap<String, usize>,
    /// Position in `index.yanked` by root (`NAME@VERSION`): a yanked version is a root only
    /// when asked for by its version ([`Source::version_root`]), never listed.
    yanked_by_root: HashMap<String, usize>,
    /// What reading it warned about (a stale copy used, entries skipped, no cache directory):
    /// true of every discovery over this index, so each one reports them.
    warnings: Vec<String>,
}

/// One skill, verified and held by the core's archive source, and where it came from.
struct Loaded {
    held: Held,
    origin: FetchStatus,
}

impl fmt::Debug for HttpSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSource")
            .field("url", &self.shown)
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.opts.offline)
            .finish()
    }
}

impl HttpSource {
    /// A source for `url`: a site root (`https://host/`, `https://host/prefix/`) or an index
    /// URL (ending in `.json`). Checks the URL and nothing else: the network is first used by
    /// [`list`](Source::list).
    pub fn new(url: &str, opts: HttpOptions) -> Result<HttpSource> {
        let parsed =
            Url::parse(url).map_err(|e| Error::other(format!("{url:?} is not a URL"), e))?;
        let shown = redact(&parsed);
        match parsed.scheme() {
            "http" => {}
            "https" if cfg!(feature = "tls") => {}
            "https" => {
                return Err(Error::Invalid(format!(
                    "{shown}: this skillcat was built without the `tls` feature, so it cannot use https"
                )));
            }
            _ => return Err(Error::UnsupportedSource(shown)),
        }
        if parsed.cannot_be_a_base() || parsed.host_str().is_none_or(str::is_empty) {
            return Err(Error::Invalid(format!(
                "{shown}: not an http(s) URL with a host"
            )));
        }
        let cache_dir = opts.cache_dir.clone();
        Ok(HttpSource {
            url: parsed,
            shown,
            opts,
            cache_dir,
            fetcher: OnceCell::new(),
            cache: OnceCell::new(),
            remote: OnceCell::new(),
            skills: Mutex::new(HashMap::new()),
            found: Mutex::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
            counters: Arc::new(Counters::default()),
            from_cache: AtomicU64::new(0),
            downloaded: AtomicU64::new(0),
        })
    }

    /// The URL as given, as it may be shown (no credentials, no query).
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The cache directory in use (`None`: no cache, nothing is kept between runs).
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// The index URL read, once [`list`](Source::list) has succeeded (as it may be shown).
    pub fn index_url(&self) -> Option<String> {
        self.remote.get().map(|r| redact(&r.index_url))
    }

    /// Counters so far.
    pub fn stats(&self) -> HttpStats {
        HttpStats {
            requests: self.counters.requests.load(Ordering::Relaxed),
            not_modified: self.counters.not_modified.load(Ordering::Relaxed),
            bytes: self.counters.bytes.load(Ordering::Relaxed),
            from_cache: self.from_cache.load(Ordering::Relaxed),
            downloaded: self.downloaded.load(Ordering::Relaxed),
        }
    }

    /// Every skill the index lists, as it describes them (reads the index on first use).
    pub async fn skills(&self) -> Result<Vec<RemoteSkill>> {
        Ok(self
            .remote()
            .await?
            .index
            .entries
            .iter()
            .map(describe)
            .collect())
    }

    /// Fetches every skill the index lists (at most [`HttpOptions::concurrency`] at once),
    /// calling `each` as each one finishes, and returns the reports in index order.
    pub async fn prefetch(&self, each: impl Fn(&FetchReport)) -> Result<Vec<FetchReport>> {
        let entries = &self.remote().await?.index.entries;
        let absent = &self.absent_blobs(entries).await?;
        let mut reports: Vec<(usize, FetchReport)> = stream::iter(0..entries.len())
            .map(|i| async move {
                let entry = &entries[i];
                // An archive or SKILL.md already cached and intact needs no more: it was
                // checked in full (skill digest included) before it entered the cache. One
                // known to be absent is not looked for again.
                let lookup = match artifact_hash(entry) {
                    Some(h) if absent.contains(&h) => Lookup::Absent,
                    _ => Lookup::Check,
                };
                let loaded = match &entry.artifact {
                    Ok(Artifact::Files(_)) | Err(_) => {
                        self.loaded(&entry.name).await.map(|l| l.origin)
                    }
                    Ok(_) => self.fetch_artifact(entry, lookup).await.map(|(_, s)| s),
                };
                let (status, message) = match loaded {
                    Ok(origin) => (origin, None),
                    Err(Error::NotFound(m)) if self.opts.offline => {
                        (FetchStatus::NotCached, Some(m))
                    }
                    Err(e) => (FetchStatus::Failed, Some(e.to_string())),
                };
                let report = FetchReport {
                    skill: describe(entry),
                    status,
                    message,
                };
                (i, report)
            })
            .buffer_unordered(self.opts.concurrency.max(1))
            .inspect(|(_, r)| each(r))
            .collect()
            .await;
        reports.sort_by_key(|(i, _)| *i);
        Ok(reports.into_iter().map(|(_, r)| r).collect())
    }

    /// Which archive and SKILL.md blobs of `entries` the cache does not hold, found in one trip
    /// off the runtime (a cold fetch then skips a cache lookup per skill).
    async fn absent_blobs(&self, entries: &[IndexEntry]) -> Result<HashSet<[u8; 32]>> {
        let Some(cache) = self.cache().await? else {
            return Ok(HashSet::new());
        };
        let hashes: Vec<[u8; 32]> = entries.iter().filter_map(artifact_hash).collect();
        blocking(move || Ok(hashes.into_iter().filter(|h| !cache.has_blob(h)).collect())).await
    }

    fn warn(&self, w: String) {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(w);
    }

    /// Every warning so far, for people: index entries skipped, stale copies used (offline or
    /// after a network error), corrupt cache entries replaced, no cache directory. Discovery
    /// returns the ones that concern it in [`Discovery::warnings`](crate::source::Discovery::warnings).
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn warning_count(&self) -> usize {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn cache_shown(&self) -> String {
        self.cache_dir.as_ref().map_or_else(
            || "(no cache directory)".into(),
            |d| d.display().to_string(),
        )
    }

    async fn fetcher(&self) -> Result<&Fetcher> {
        self.fetcher
            .get_or_try_init(|| async { Fetcher::new(&self.opts, Arc::clone(&self.counters)) })
            .await
    }

    async fn cache(&self) -> Result<Option<Arc<Cache>>> {
        let cache = self
            .cache
            .get_or_try_init(|| cache::open_off_runtime(self.cache_dir.clone(), |w| self.warn(w)))
            .await?;
        Ok(cache.clone())
    }

    async fn remote(&self) -> Result<&Remote> {
        self.remote.get_or_try_init(|| self.read_index()).await
    }

    /// The index URLs to try, in order.
    fn index_candidates(&self) -> Vec<Url> {
        let mut base = self.url.clone();
        base.set_fragment(None);
        if base.path().ends_with(".json") {
            return vec![base];
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        [
            ".well-known/agent-skills/index.json",
            ".well-known/skills/index.json",
        ]
        .iter()
        .filter_map(|p| base.join(p).ok())
        .collect()
    }

    async fn read_index(&self) -> Result<Remote> {
        let first_warning = self.warning_count();
        let candidates = self.index_candidates();
        let mut misses = Vec::new();
        for url in &candidates {
            let limits = self.opts.index_limits();
            // Parsed before it is cached: a body that is not an index never enters the cache.
            let parse = |body: &Bytes, base: &Url| {
                let parsed =
                    index::parse_index_with(body, base, &limits).map_err(|why| match why {
                        index::IndexError::NothingUsable(reason) => Error::NothingUsable {
                            location: redact(url),
                            reason,
                        },
                        index::IndexError::Unreadable(why) => {
                            Error::Invalid(format!("{}: {why}", redact(url)))
                        }
                    })?;
                Ok((parsed, body.clone()))
            };
            match self.mutable(url, "application/json", true, parse).await {
                Ok(((index, body), _)) => {
                    // Checked on every read, from the network or the cache: a copy whose
                    // statement has expired since is refused offline too.
                    if let Some(verifier) = &self.opts.index_verifier {
                        self.check_statement(url, &body, verifier).await?;
                    }
                    for w in &index.warnings {
                        self.warn(format!("{}: {w}", redact(url)));
                    }
                    let by_name: HashMap<String, usize> = index
                        .entries
                        .iter()
                        .enumerate()
                        .map(|(i, e)| (e.name.clone(), i))
                        .collect();
                    let yanked_by_root = index
                        .yanked
                        .iter()
                        .enumerate()
                        .filter_map(|(i, e)| {
                            Some((format!("{}@{}", e.name, e.version.as_ref()?), i))
                        })
                        .collect();
                    for w in all_yanked(&index) {
                        self.warn(w);
                    }
                    let warnings = self.warnings().split_off(first_warning);
                    return Ok(Remote {
                        index_url: url.clone(),
                        index,
                        by_name,
                        yanked_by_root,
                        warnings,
                    });
                }
                Err(Error::NotFound(m)) if candidates.len() > 1 => misses.push(m),
                Err(e) => return Err(e),
            }
        }
        Err(Error::NotFound(format!(
            "no skills index at {}: {}",
            self.shown,
            misses.join("; ")
        )))
    }

    /// Refuses the index read at `index_url` unless the statement published beside it
    /// (`index.json.minisig`) holds for it: signed by a key of the keyring, for this catalog
    /// (the URL's host and port), of these bytes, not expired, not lower than the highest
    /// version seen (kept in the cache, raised here).
    async fn check_statement(
        &self,
        index_url: &Url,
        index: &Bytes,
        verifier: &IndexVerifier,
    ) -> Result<()> {
        let catalog = catalog_of(index_url);
        let mut statement_url = index_url.clone();
        statement_url.set_path(&format!("{}.minisig", index_url.path()));
        // What was read cannot be trusted: a fault of the source (exit 1), as a certificate
        // that does not verify is, not of the command line.
        let refuse = |why: String| Error::NothingUsable {
            location: format!("catalog {catalog}: the index {}", redact(index_url)),
            reason: format!("refused: {why}"),
        };
        let read = self.mutable(&statement_url, "application/octet-stream", false, |b, _| {
            Ok(b.clone())
        });
        let statement = match read.await {
            Ok((b, _)) => b,
            Err(Error::NotFound(why)) => {
                return Err(refuse(format!(
                    "no signed statement: {why} (an index keyring is set: one is required)"
                )));
            }
            Err(e) => return Err(refuse(format!("its signed statement is unreadable: {e}"))),
        };
        let text = std::str::from_utf8(&statement)
            .map_err(|_| refuse("its signed statement is not text".into()))?;
        let cache = self.cache().await?;
        let highest = cache.as_ref().and_then(|c| c.read_highest(&catalog));
        let version = verifier
            .check(IndexCheck {
                catalog: &catalog,
                index,
                statement: text,
                highest,
            })
            .map_err(|e| refuse(e.to_string()))?;
        if let Some(c) = cache
            && highest.is_none_or(|h| version > h)
        {
            blocking(move || c.write_highest(&catalog, version)).await?;
        }
        Ok(())
    }

    /// A mutable URL (an index, a v0.1 file): the cached copy when fresh or confirmed by a
    /// conditional GET, else the new body, which `parse` must accept before it is cached.
    /// `parse` gets the body and the URL its relative references resolve against (where it
    /// was answered from, after redirects).
    /// `warn_stale`: say so when a copy that is no longer fresh is used offline.
    async fn mutable<T>(
        &self,
        url: &Url,
        accept: &str,
        warn_stale: bool,
        parse: impl FnOnce(&Bytes, &Url) -> Result<T>,
    ) -> Result<(T, FetchStatus)> {
        let cache = self.cache().await?;
        let key = url.as_str().to_string();
        let cached = match &cache {
            Some(c) => {
                let (c, key) = (Arc::clone(c), key.clone());
                blocking(move || {
                    let Some(rec) = c.read_record(&key) else {
                        return Ok(None);
                    };
                    let Some(hash) = crate::digest::parse_digest(&rec.body) else {
                        return Ok(None);
                    };
                    Ok(match c.read_blob(&hash)? {
                        cache::Read::Hit(body) => Some((rec, body)),
                        _ => None,
                    })
                })
                .await?
            }
            None => None,
        };
        if self.opts.offline {
            return match cached {
                Some((rec, body)) => {
                    let now = cache::now();
                    if warn_stale && !cache::is_fresh(&rec, now, self.opts.freshness) {
                        self.warn(format!(
                            "{}: offline, using the cached copy from {} ago, which may be out of date",
                            redact(url),
                            cache::age(now.saturating_sub(rec.fetched_at))
                        ));
                    }
                    Ok((parse(&body, &answered_by(url, &rec))?, FetchStatus::Cached))
                }
                None => Err(HttpError::NotCached {
                    what: redact(url),
                    cache: self.cache_shown(),
                }
                .into()),
            };
        }
        if let Some((rec, body)) = &cached
            && cache::is_fresh(rec, cache::now(), self.opts.freshness)
        {
            return Ok((parse(body, &answered_by(url, rec))?, FetchStatus::Cached));
        }
        let validators = cached.as_ref().map(|(rec, _)| Validators {
            etag: rec.etag.clone(),
            last_modified: rec.last_modified.clone(),
        });
        let fetcher = self.fetcher().await?;
        match fetcher
            .get(url, validators.as_ref(), None, accept, true)
            .await
        {
            Ok(Fetched::NotModified { cache_control }) => {
                let (mut rec, body) = cached.expect("304 only answers a conditional request");
                let t = parse(&body, &answered_by(url, &rec))?;
                rec.fetched_at = cache::now();
                if let Some(cc) = cache_control.as_deref().map(cache::parse_cache_control) {
                    rec.max_age = cc.max_age;
                    rec.no_cache = cc.no_cache;
                }
                if let Some(c) = cache {
                    blocking(move || c.write_record(&key, &rec)).await?;
                }
                Ok((t, FetchStatus::Cached))
            }
            Ok(Fetched::Full(b)) => {
                let t = parse(&b.bytes, &b.url)?;
                let cc = b
                    .cache_control
                    .as_deref()
                    .map(cache::parse_cache_control)
                    .unwrap_or_default();
                if let Some(c) = cache.filter(|_| !cc.no_store) {
                    let hash = sha256(&b.bytes);
                    let rec = Record {
                        url: redact(url),
                        etag: b.etag.clone(),
                        last_modified: b.last_modified.clone(),
                        max_age: cc.max_age,
                        no_cache: cc.no_cache,
                        fetched_at: cache::now(),
                        body: format!("sha256:{}", crate::digest::to_hex(hash)),
                        final_url: (without_credentials(&b.url) != without_credentials(url))
                            .then(|| without_credentials(&b.url).to_string()),
                    };
                    let bytes = b.bytes.clone();
                    blocking(move || {
                        c.write_blob(&hash, &bytes)?;
                        c.write_record(&key, &rec)
                    })
                    .await?;
                }
                Ok((t, FetchStatus::Fetched))
            }
            Err(e @ (HttpError::Transport { .. } | HttpError::Status { .. }))
                if cached.is_some()
                    && !matches!(e, HttpError::Status { status, .. } if status < 500) =>
            {
                let (rec, body) = cached.expect("checked above");
                let t = parse(&body, &answered_by(url, &rec))?;
                self.warn(format!("{e}; using the cached copy"));
                Ok((t, FetchStatus::Cached))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// An immutable artifact by its sha256: from the cache when present and intact, else
    /// downloaded and verified. `check` runs (off the runtime) on the verified bytes and the
    /// response's Content-Type; only when it passes are the bytes cached.
    async fn blob<T, F>(
        &self,
        url: &Url,
        hash: [u8; 32],
        size: Option<u64>,
        check: F,
        lookup: Lookup,
    ) -> Result<(Option<T>, FetchStatus)>
    where
        T: Send + 'static,
        F: FnOnce(Bytes, Option<String>) -> Result<T> + Send + 'static,
    {
        let cache = self.cache().await?;
        let mut check = Some(check);
        if let Some(c) = cache.as_ref().filter(|_| lookup != Lookup::Absent) {
            let (c2, f) = (Arc::clone(c), check.take().expect("set above"));
            let open_hit = lookup == Lookup::Open;
            // One trip off the runtime: read, verify, and open what is there.
            let (found, f) = blocking(move || match c2.read_blob(&hash)? {
                cache::Read::Hit(_) if !open_hit => Ok((Some(None), None, false)),
                cache::Read::Hit(bytes) => Ok((Some(Some(f(bytes, None)?)), None, false)),
                cache::Read::Corrupt => Ok((None, Some(f), true)),
                cache::Read::Miss => Ok((None, Some(f), false)),
            })
            .await
            .map(|(t, f, corrupt)| {
                if corrupt {
                    self.warn(format!(
                        "{}: did not match its digest; deleted and fetched again",
                        c.blob_path(&hash).display()
                    ));
                }
                (t, f)
            })?;
            if let Some(t) = found {
                self.from_cache.fetch_add(1, Ordering::Relaxed);
                return Ok((t, FetchStatus::Cached));
            }
            check = f;
        }
        let check = check.expect("kept for a miss");
        let digest = format!("sha256:{}", crate::digest::to_hex(hash));
        if self.opts.offline {
            return Err(HttpError::NotCached {
                what: format!("{} ({digest})", redact(url)),
                cache: self.cache_shown(),
            }
            .into());
        }
        let body = match self
            .fetcher()
            .await?
            .get(url, None, size, "*/*", false)
            .await?
        {
            Fetched::Full(b) => b,
            Fetched::NotModified { .. } => unreachable!("no validators were sent"),
        };
        let shown = redact(url);
        // One trip off the runtime: hash, check, and only then store.
        let t = blocking(move || {
            let actual = sha256(&body.bytes);
            if actual != hash {
                return Err(HttpError::Digest {
                    what: shown,
                    expected: digest,
                    actual: format!("sha256:{}", crate::digest::to_hex(actual)),
                }
                .into());
            }
            let t = check(body.bytes.clone(), body.content_type)?;
            if let Some(c) = cache {
                c.write_blob(&hash, &body.bytes)?;
            }
            Ok(t)
        })
        .await?;
        self.downloaded.fetch_add(1, Ordering::Relaxed);
        Ok((Some(t), FetchStatus::Fetched))
    }

    /// The entry a root stands for: the index's, else a version found through the API.
    fn entry_of(&self, remote: &Remote, root: &str) -> Option<IndexEntry> {
        remote
            .entry(root)
            .cloned()
            .or_else(|| self.found_entry(root))
    }

    fn found_entry(&self, root: &str) -> Option<IndexEntry> {
        self.found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(root)
            .map(|(e, _)| e.clone())
    }

    /// Every version a served registry's API lists for `name` (`api/v1/skills/NAME`, beside
    /// the index: `../../` of it; a static export holds it as a file, typed as the host
    /// pleases), or `None` when there is no such API (another static site) or it does not
    /// answer.
    async fn api_versions(&self, remote: &Remote, name: &str) -> Option<api::Versions> {
        let url = remote
            .index_url
            .join(&format!(
                "../../api/v1/skills/{}",
                crate::path::percent_encode(name)
            ))
            .ok()?;
        let parse = |body: &Bytes, _: &Url| {
            serde_json::from_slice::<api::Versions>(body)
                .map_err(|e| Error::Invalid(format!("{}: {e}", redact(&url))))
        };
        self.mutable(&url, "application/json", false, parse)
            .await
            .ok()
            .map(|(v, _)| v)
    }

    /// `NAME@VERSION` from what a served registry's API lists: the version's archive, read as
    /// an index entry of its own (a yanked one with a warning), or not found naming every
    /// version listed.
    fn api_version(
        &self,
        remote: &Remote,
        listed: api::Versions,
        version: &str,
    ) -> Result<Option<String>> {
        let name = listed.name.clone();
        let Some(v) = listed
            .versions
            .iter()
            .find(|v| v.version.as_deref() == Some(version))
        else {
            let held = listed
                .versions
                .iter()
                .filter_map(|v| Some((v.version.as_deref()?, v.yanked)))
                .collect::<Vec<_>>();
            let mut held = held;
            held.sort_by(|a, b| skillcat_core::version::compare(a.0, b.0));
            return Err(self.no_such_version(&name, version, held));
        };
        if let Some(live) = remote.by_name.get(&name).map(|&i| &remote.index.entries[i])
            && live.version.as_deref() == Some(version)
        {
            return Ok(Some(live.name.clone()));
        }
        let Some(digest) = v.archive_digest.as_deref() else {
            return Err(Error::NotFound(format!(
                "{name}@{version}: {} lists it but serves no archive of it",
                self.shown
            )));
        };
        let hex = digest.trim_start_matches("sha256:");
        let entry = serde_json::json!({
            "$schema": crate::source::DISCOVERY_SCHEMA_V0_2,
            "skills": [{
                "name": name,
                "type": "archive",
                "description": listed.description,
                "url": format!("../../blobs/sha256/{hex}"),
                "digest": digest,
                "version": version,
                "skillcat": {
                    "skill_digest": v.skill_digest,
                    "signature": v.signatures.first().map(|s| &s.signature),
                },
            }],
        });
        let body = serde_json::to_vec(&entry).map_err(|e| Error::other("an API entry", e))?;
        let entry = index::parse_index(&body, &remote.index_url)
            .ok()
            .and_then(|i| i.entries.into_iter().next())
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{name}@{version}: {} lists it with an unusable archive",
                    self.shown
                ))
            })?;
        if v.yanked {
            self.warn(yanked_warning(&name, version));
        }
        let root = format!("{name}@{version}");
        self.found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(root.clone(), (entry, v.yanked));
        Ok(Some(root))
    }

    /// Not found: `NAME@VERSION` and the versions there are (yanked ones marked).
    fn no_such_version(&self, name: &str, version: &str, held: Vec<(&str, bool)>) -> Error {
        let held: Vec<String> = held
            .into_iter()
            .map(|(v, y)| {
                if y {
                    format!("{v} (yanked)")
                } else {
                    v.to_string()
                }
            })
            .collect();
        Error::NotFound(format!(
            "{name}@{version}: no such version; the versions of {name} at {} are {}",
            self.shown,
            held.join(", ")
        ))
    }

    /// The files of one root, loaded once.
    async fn loaded(&self, root: &str) -> Result<Arc<Loaded>> {
        let remote = self.remote().await?;
        let Some(entry) = self.entry_of(remote, root) else {
            return Err(Error::NotFound(self.location(root)));
        };
        let entry = &entry;
        let cell = {
            let mut map = self.skills.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(map.entry(root.to_string()).or_default())
        };
        let loaded = cell
            .get_or_try_init(|| async { self.materialize(entry).await.map(Arc::new) })
            .await?;
        Ok(Arc::clone(loaded))
    }

    /// An archive or SKILL.md entry: from the cache or the network, checked in full before it
    /// is cached. A cache hit is opened only with [`Lookup::Open`] (else `None` comes back).
    async fn fetch_artifact(
        &self,
        entry: &IndexEntry,
        lookup: Lookup,
    ) -> Result<(Option<Held>, FetchStatus)> {
        let what = self.location(&entry.name);
        let extra = entry.extra.clone();
        match &entry.artifact {
            Ok(Artifact::Archive { url, sha256 }) => {
                let (url2, limits, hash) = (url.clone(), self.opts.limits, *sha256);
                // The blob is checked against its sha256 before this runs (and a cache hit is
                // hashed again): the archive source is built from bytes known to be the ones
                // the index promised.
                let check = move |bytes: Bytes, ctype: Option<String>| {
                    let held = Held::archive(&bytes, hash, ctype.as_deref(), &url2, limits)?;
                    check_extra(&what, &held, extra.as_ref())?;
                    Ok(held)
                };
                self.blob(url, *sha256, None, check, lookup).await
            }
            Ok(Artifact::SkillMd { url, sha256 }) => {
                let size = extra
                    .as_ref()
                    .and_then(|x| x.files.iter().find(|f| f.path == "SKILL.md"))
                    .map(|f| f.size);
                let check = move |bytes: Bytes, _: Option<String>| {
                    let held = Held::files(&what, vec![("SKILL.md".to_string(), bytes, false)])?;
                    check_extra(&what, &held, extra.as_ref())?;
                    Ok(held)
                };
                self.blob(url, *sha256, size, check, lookup).await
            }
            Ok(Artifact::Files(_)) => unreachable!("v0.1 entries are loaded file by file"),
            Err(why) => Err(Error::Invalid(format!("{what}: {why}"))),
        }
    }

    async fn materialize(&self, entry: &IndexEntry) -> Result<Loaded> {
        let what = self.location(&entry.name);
        let artifact = entry
            .artifact
            .as_ref()
            .map_err(|why| Error::Invalid(format!("{what}: {why}")))?;
        let (held, origin) = match artifact {
            Artifact::Files(list) => self.files_v0_1(&what, list, entry.extra.as_ref()).await?,
            _ => match self.fetch_artifact(entry, Lookup::Open).await? {
                (Some(held), origin) => (held, origin),
                (None, _) => unreachable!("opened when asked to"),
            },
        };
        Ok(Loaded { held, origin })
    }

    /// A v0.1 entry: every file, by digest when skillcat's extra field gives one, else
    /// revalidated like the index.
    async fn files_v0_1(
        &self,
        what: &str,
        list: &[(String, Url)],
        extra: Option<&Extra>,
    ) -> Result<(Held, FetchStatus)> {
        let results: Vec<Result<(String, Bytes, bool, FetchStatus)>> = stream::iter(0..list.len())
            .map(|i| async move {
                let (path, url) = &list[i];
                let known = extra.and_then(|x| x.files.iter().find(|f| &f.path == path));
                let (bytes, status) = match known {
                    Some(f) => match self
                        .blob(url, f.sha256, Some(f.size), |b, _| Ok(b), Lookup::Open)
                        .await?
                    {
                        (Some(b), s) => (b, s),
                        (None, _) => unreachable!("opened when asked to"),
                    },
                    None => {
                        self.mutable(url, "*/*", false, |b, _| Ok(b.clone()))
                            .await?
                    }
                };
                let exec = known.is_some_and(|f| f.executable);
                Ok((path.clone(), bytes, exec, status))
            })
            .buffered(self.opts.concurrency.max(1))
            .collect()
            .await;
        let mut files = Vec::with_capacity(results.len());
        let mut origin = FetchStatus::Cached;
        let mut total = 0u64;
        for r in results {
            let (path, bytes, exec, status) = r?;
            total += bytes.len() as u64;
            if total > self.opts.limits.max_total {
                return Err(Error::TooLarge {
                    path: what.to_string(),
                    size: total,
                    limit: self.opts.limits.max_total,
                });
            }
            if status == FetchStatus::Fetched {
                origin = FetchStatus::Fetched;
            }
            files.push((path, bytes, exec));
        }
        let held = Held::files(what, files)?;
        check_extra(what, &held, extra)?;
        Ok((held, origin))
    }
}

/// How [`HttpSource::blob`] uses the cache before the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// Read and verify a cached copy, and open it.
    Open,
    /// Read and verify a cached copy; do not open it.
    Check,
    /// Known not to be cached a moment ago: go to the network (a copy another process stores
    /// meanwhile is the same bytes, and storing it again keeps the first).
    Absent,
}

/// The sha256 of an entry's archive or SKILL.md, when it has one.
fn artifact_hash(e: &IndexEntry) -> Option<[u8; 32]> {
    match &e.artifact {
        Ok(Artifact::Archive { sha256, .. } | Artifact::SkillMd { sha256, .. }) => Some(*sha256),
        _ => None,
    }
}

fn describe(e: &IndexEntry) -> RemoteSkill {
    RemoteSkill {
        name: e.name.clone(),
        description: e.description.clone(),
        version: e.version.clone(),
        kind: e.artifact.as_ref().map_or("unreadable", Artifact::kind),
        digest: e.artifact.as_ref().ok().and_then(Artifact::digest),
        skill_digest: e.extra.as_ref().and_then(|x| x.skill_digest.clone()),
        signature: e.extra.as_ref().and_then(|x| x.signature.clone()),
    }
}

/// Runs blocking work off the runtime.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::task("reading the cache", e))?
}

#[async_trait]
impl Source for HttpSource {
    async fn list(&self) -> Result<Vec<String>> {
        Ok(self
            .remote()
            .await?
            .index
            .entries
            .iter()
            .map(|e| e.name.clone())
            .collect())
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        self.loaded(root).await?.held.list().await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        crate::source::check_path(path)?;
        let Some((root, rel)) = path.split_once('/') else {
            return Err(Error::NotFound(self.location(path)));
        };
        let loaded = self.loaded(root).await?;
        loaded
            .held
            .read(rel)
            .await?
            .ok_or_else(|| Error::NotFound(self.location(path)))
    }

    fn location(&self, path: &str) -> String {
        format!("{}#{path}", self.shown)
    }

    /// A root's own name; a yanked version's root (`NAME@VERSION`) stands for its `NAME`.
    fn root_dir_name(&self, root: &str) -> Option<String> {
        if let Some(entry) = self
            .remote
            .get()
            .and_then(|r| r.yanked_by_root.get(root).map(|&i| &r.index.yanked[i]))
        {
            return Some(entry.name.clone());
        }
        if let Some(entry) = self.found_entry(root) {
            return Some(entry.name);
        }
        (!root.is_empty()).then(|| crate::path::base_name(root).to_string())
    }

    /// `NAME@VERSION` through a served registry: the live entry when it is at that version, else
    /// a yanked version its index lists apart (with a warning saying it is yanked), else the
    /// version its API lists (`api/v1/skills/NAME`: every version it published, each archive
    /// served for good), else not found naming the versions there are. A source with neither
    /// keeps one version of the skill: `Ok(None)`, as any such source.
    async fn version_root(&self, name: &str, version: &str) -> Result<Option<String>> {
        let remote = self.remote().await?;
        let key = name_key(name).to_lowercase();
        let same = |e: &&IndexEntry| name_key(&e.name).to_lowercase() == key;
        let yanked: Vec<&IndexEntry> = remote.index.yanked.iter().filter(same).collect();
        let live = remote.index.entries.iter().find(same);
        if let Some(live) = live
            && live.version.as_deref() == Some(version)
        {
            // An index without yanked versions of it is read as any one-version source.
            return Ok((!yanked.is_empty()).then(|| live.name.clone()));
        }
        if let Some(y) = yanked
            .iter()
            .find(|e| e.version.as_deref() == Some(version))
        {
            self.warn(yanked_warning(&y.name, version));
            return Ok(Some(format!("{}@{version}", y.name)));
        }
        let shown_name = live.or(yanked.first().copied()).map(|e| e.name.clone());
        if let Some(listed) = self
            .api_versions(remote, shown_name.as_deref().unwrap_or(name))
            .await
        {
            // The answer must be about the skill asked for: a server naming another one in it
            // would have `add URL a@1.0` install that other skill.
            if name_key(&listed.name).to_lowercase() != key {
                return Err(Error::Invalid(format!(
                    "{}: its API answered about {} when asked for {name}",
                    self.shown, listed.name
                )));
            }
            return self.api_version(remote, listed, version);
        }
        if yanked.is_empty() {
            return Ok(None);
        }
        let shown_name = shown_name.unwrap_or_default();
        let mut held: Vec<(&str, bool)> = live
            .and_then(|e| e.version.as_deref())
            .map(|v| (v, false))
            .into_iter()
            .chain(
                yanked
                    .iter()
                    .filter_map(|e| Some((e.version.as_deref()?, true))),
            )
            .collect();
        held.sort_by(|a, b| skillcat_core::version::compare(a.0, b.0));
        Err(self.no_such_version(&shown_name, version, held))
    }

    /// The index entry's `version` and its `skillcat.signature`, as the index (fresh, or the
    /// cached copy offline) gives them.
    async fn record(&self, root: &str) -> Result<RootRecord> {
        let remote = self.remote().await?;
        let Some(entry) = self.entry_of(remote, root) else {
            return Err(Error::NotFound(self.location(root)));
        };
        let signature = entry.extra.as_ref().and_then(|x| x.signature.clone());
        let artifact = entry.artifact.as_ref().ok().and_then(Artifact::digest);
        let yanked = remote.yanked_by_root.contains_key(root)
            || self
                .found
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(root)
                .is_some_and(|(_, y)| *y);
        Ok(
            RootRecord::new(entry.version.clone(), signature.into_iter().collect())
                .with_artifact(artifact)
                .with_yanked(yanked),
        )
    }

    /// The index URL read (as it may be shown): reads the index on first use.
    async fn id(&self) -> Result<SourceId> {
        Ok(SourceId::Index {
            url: redact(&self.remote().await?.index_url),
        })
    }

    fn warnings(&self) -> Vec<String> {
        HttpSource::warnings(self)
    }

    /// `URL: N requests (A archives downloaded, C from the cache)`.
    fn summary(&self) -> Option<String> {
        let s = self.stats();
        Some(format!(
            "{}: {} request{} ({} archive{} downloaded, {} from the cache)",
            self.url(),
            s.requests,
            if s.requests == 1 { "" } else { "s" },
            s.downloaded,
            if s.downloaded == 1 { "" } else { "s" },
            s.from_cache
        ))
    }

    /// The default per-root reads; the warnings are those of the index the roots came from
    /// (a stale copy used, entries skipped) and those of these reads (a corrupt cache entry
    /// replaced).
    async fn read_documents(
        &self,
        roots: &[String],
        detail: Detail,
        each: DocumentSink,
    ) -> Result<Vec<String>> {
        let first = self.warning_count();
        crate::source::read_each(self, roots, detail, &each).await;
        let new = self.warnings().split_off(first);
        let mut out: Vec<String> = self
            .remote
            .get()
            .map(|r| r.warnings.clone())
            .unwrap_or_default();
        out.retain(|w| !new.contains(w));
        out.extend(new);
        Ok(out)
    }
}

impl Remote {
    /// The entry a root stands for: a listed skill by name, or a yanked version by
    /// `NAME@VERSION`.
    fn entry(&self, root: &str) -> Option<&IndexEntry> {
        self.by_name
            .get(root)
            .map(|&i| &self.index.entries[i])
            .or_else(|| {
                self.yanked_by_root
                    .get(root)
                    .map(|&i| &self.index.yanked[i])
            })
    }
}

/// What reading an index says of each skill it lists only as yanked versions: it is not
/// listed, and how to read one.
fn all_yanked(index: &DiscoveryIndex) -> Vec<String> {
    let live: HashSet<String> = index
        .entries
        .iter()
        .map(|e| name_key(&e.name).to_lowercase())
        .collect();
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for e in &index.yanked {
        let key = name_key(&e.name).to_lowercase();
        if live.contains(&key) {
            continue;
        }
        let v = e.version.as_deref().unwrap_or_default();
        match out
            .iter_mut()
            .find(|(n, _)| name_key(n).to_lowercase() == key)
        {
            Some((_, versions)) => versions.push(v),
            None => out.push((e.name.clone(), vec![v])),
        }
    }
    out.into_iter()
        .map(|(name, mut versions)| {
            versions.sort_by(|a, b| skillcat_core::version::compare(a, b));
            let newest = versions.last().copied().unwrap_or("VERSION");
            format!(
                "{name}: every version is yanked ({}), so it is not listed; read one by its \
                 version: {name}@{newest}",
                versions.join(", ")
            )
        })
        .collect()
}

/// What a served registry's API answers for one skill (`GET /api/v1/skills/NAME`), as far as
/// `NAME@VERSION` reads it.
mod api {
    /// The skill and every version published.
    #[derive(serde::Deserialize)]
    pub(super) struct Versions {
        pub(super) name: String,
        #[serde(default)]
        pub(super) description: String,
        pub(super) versions: Vec<Version>,
    }

    /// One version.
    #[derive(serde::Deserialize)]
    pub(super) struct Version {
        pub(super) version: Option<String>,
        #[serde(default)]
        pub(super) yanked: bool,
        pub(super) skill_digest: Option<String>,
        pub(super) archive_digest: Option<String>,
        #[serde(default)]
        pub(super) signatures: Vec<Signature>,
    }

    /// One signature kept for it.
    #[derive(serde::Deserialize)]
    pub(super) struct Signature {
        pub(super) signature: String,
    }
}

/// What a source says when a yanked version is read by its exact `NAME@VERSION`.
fn yanked_warning(name: &str, version: &str) -> String {
    format!(
        "{name}@{version} is yanked: read because it was named by its version; {name} alone \
         never picks it"
    )
}

/// `url` without user name and password.
/// The catalog an index URL names in a statement: its host, and its port when it has one.
fn catalog_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    }
}

fn without_credentials(url: &Url) -> Url {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u
}

/// Where a cached body was answered from: the record's final URL (with the credentials of
/// `url` when it is on the same origin), else `url`.
fn answered_by(url: &Url, rec: &Record) -> Url {
    let Some(mut fin) = rec.final_url.as_deref().and_then(|u| Url::parse(u).ok()) else {
        return url.clone();
    };
    if fin.origin() == url.origin() {
        let _ = fin.set_username(url.username());
        let _ = fin.set_password(url.password());
    }
    fin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn construction_is_checked_and_does_no_io() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("never-created");
        let opts = HttpOptions {
            cache_dir: Some(cache.clone()),
            ..HttpOptions::default()
        };
        let src = HttpSource::new("http://user:pw@127.0.0.1:9/skills/", opts.clone()).unwrap();
        assert!(!cache.exists());
        assert_eq!(src.url(), "http://***@127.0.0.1:9/skills/");
        assert_eq!(
            src.location("a/SKILL.md"),
            "http://***@127.0.0.1:9/skills/#a/SKILL.md"
        );
        assert!(matches!(
            HttpSource::new("ftp://h/", opts.clone()),
            Err(Error::UnsupportedSource(_))
        ));
        assert!(HttpSource::new("not a url", opts).is_err());
    }

    #[test]
    fn index_candidates() {
        let o = HttpOptions::default();
        let c = |u: &str| -> Vec<String> {
            HttpSource::new(u, o.clone())
                .unwrap()
                .index_candidates()
                .iter()
                .map(|u| u.to_string())
                .collect()
        };
        assert_eq!(
            c("http://h:1"),
            [
                "http://h:1/.well-known/agent-skills/index.json",
                "http://h:1/.well-known/skills/index.json"
            ]
        );
        assert_eq!(
            c("http://h/pre")[0],
            "http://h/pre/.well-known/agent-skills/index.json"
        );
        assert_eq!(c("http://h/x/index.json"), ["http://h/x/index.json"]);
    }
}
