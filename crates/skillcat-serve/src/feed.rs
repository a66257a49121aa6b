//! A served registry as one replica of many: the site it holds follows the registry's change
//! feed, and the feed itself is served (`GET /api/v1/changes`).
//!
//! ```text
//!   replica A ──commit──► store (one SQLite file, or PostgreSQL) ◄──commit── replica B
//!      │  catch up at once                 │ changes(since)              │
//!      ▼                                   ▼                             ▼
//!   its site ◄── follower: woken (LISTEN) or every second ──► its site, within 2 s
//! ```
//!
//! Every replica keeps the position of the feed its site holds every change up to. A follower
//! task asks the store for the changes after it whenever the store wakes it (PostgreSQL's
//! LISTEN) and every second anyway, so a missed wake or a dropped connection only delays; for
//! each skill changed it rebuilds that skill's part of the site (its index entries, files,
//! blobs, pages) and swaps the whole site in. A write through this replica catches up at once,
//! in the same way and under the same lock, so the follower then finds nothing new: its own
//! change is applied once. When the database does not answer, the replica keeps serving what
//! it holds, the follower retries with backoff (logging once per outage), and catches up by
//! itself when the database is back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use skillcat_core::api::ErrorBody;

use crate::respond::{UNAVAILABLE_RETRY, error_response, log};

use crate::registry::store::{ChangePage, Store};
use crate::registry::{RegistryError, RegistrySource};
use crate::site::{RegistryVersions, RegistryYanked, Site, SiteOptions};

/// Changes read from the store per request of the follower.
const PAGE: usize = 100;

/// How often the follower polls when nothing wakes it.
const POLL: Duration = Duration::from_secs(1);

/// The longest wait between two retries while the database does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// What `GET /api/v1/changes` answers at most per request, and by default.
pub(crate) const MAX_CHANGES: usize = 1000;
const DEFAULT_CHANGES: usize = 100;

/// `Cache-Control` of the change feed: a CDN may absorb a burst of pollers, never for long.
const FEED_CACHE: &str = "public, max-age=1";

/// The served site of a registry, kept up to date with its store.
pub(crate) struct Replica {
    store: Arc<dyn Store>,
    site: Arc<RwLock<Arc<Site>>>,
    /// One update of the site at a time, each starting from the site swapped in before it; it
    /// guards the feed position the site holds (`None` until the store has told it).
    applying: tokio::sync::Mutex<Option<i64>>,
    /// Whether the follower is in an outage (said once, and once when it ends).
    outage: AtomicBool,
}

impl Replica {
    /// The replica of `store` serving `site`, at the position the site was built at.
    pub(crate) fn new(store: Arc<dyn Store>, site: Arc<RwLock<Arc<Site>>>) -> Arc<Replica> {
        let at = site.read().expect("site lock").seq();
        Arc::new(Replica {
            store,
            site,
            applying: tokio::sync::Mutex::new(at),
            outage: AtomicBool::new(false),
        })
    }

    /// After a write to `name` through this replica: the site catches up with the feed at once
    /// (this write's change included), or, when the feed does not answer, `name` alone is
    /// updated (the follower applies the change again later: harmless).
    pub(crate) async fn after_write(&self, name: &str) {
        let mut at = self.applying.lock().await;
        let caught_up = match *at {
            Some(_) => self.catch_up(&mut at).await.is_ok(),
            None => false,
        };
        if !caught_up && let Err(e) = self.update(name, None).await {
            // The follower applies it when the registry answers again.
            log(format_args!(
                "warning: the index was not updated after a write: {e}"
            ));
        }
    }

    /// Applies the changes after the position held, page by page, moving it only once every
    /// skill of a page is in the site; an error (the feed, or a skill's update, not read)
    /// leaves it at the last page applied whole, so the next round applies the rest again
    /// (an update is idempotent).
    async fn catch_up(&self, at: &mut Option<i64>) -> Result<(), String> {
        let unread = |e: RegistryError| e.to_string();
        let Some(mut since) = *at else {
            // The position the site was built at was not known: from now on, then.
            *at = Some(self.store.head().await.map_err(unread)?);
            return Ok(());
        };
        loop {
            let ChangePage { changes, next } =
                self.store.changes(since, PAGE).await.map_err(unread)?;
            if changes.is_empty() {
                return Ok(());
            }
            let mut names: Vec<&str> = Vec::new();
            for c in &changes {
                if !names.contains(&c.name.as_str()) {
                    names.push(&c.name);
                }
            }
            let last = names.len() - 1;
            for (i, name) in names.into_iter().enumerate() {
                self.update(name, (i == last).then_some(next)).await?;
            }
            since = next;
            *at = Some(next);
            if changes.len() < PAGE {
                return Ok(());
            }
        }
    }

    /// Rebuilds the part of the site of the skill `name` from the store (its index entries,
    /// files, blobs, versions and pages) and swaps the site in, at feed position `seq` when
    /// given; a failure keeps the old site and is said. The caller holds `applying`.
    async fn update(&self, name: &str, seq: Option<i64>) -> Result<(), String> {
        let old = self.site.read().expect("site lock").clone();
        let source = RegistrySource::new(self.store.clone());
        // The findings of what was published are recorded with it: read, not re-run.
        let opts = SiteOptions {
            yanked: Some(Arc::new(RegistryYanked(self.store.clone()))),
            versions: Some(Arc::new(RegistryVersions(self.store.clone()))),
            ..SiteOptions::default()
        };
        match old.updated(&source, name, &opts).await {
            Ok((mut site, problems)) => {
                for p in problems {
                    log(format_args!("warning: {p}"));
                }
                if let Some(seq) = seq {
                    site.set_seq(seq);
                }
                *self.site.write().expect("site lock") = Arc::new(site);
                Ok(())
            }
            Err(e) => Err(format!("{name} was not read: {e}")),
        }
    }

    /// Starts the follower: woken by the store when it can (PostgreSQL's LISTEN) and every
    /// second anyway; while the database does not answer, retries with a backoff up to
    /// [`MAX_BACKOFF`].
    pub(crate) fn follow(self: &Arc<Self>) {
        let replica = Arc::clone(self);
        tokio::spawn(async move {
            let mut wake = replica.store.wake();
            let mut delay = POLL;
            loop {
                let sleep = tokio::time::sleep(delay);
                match wake.as_mut() {
                    Some(rx) => tokio::select! {
                        () = sleep => {}
                        changed = rx.changed() => {
                            if changed.is_err() {
                                wake = None;
                            }
                        }
                    },
                    None => sleep.await,
                }
                let result = {
                    let mut at = replica.applying.lock().await;
                    replica.catch_up(&mut at).await.map(|()| *at)
                };
                delay = replica.outcome(result, delay);
            }
        });
    }

    /// Says an outage once when it starts and once when it ends; the next wait.
    fn outcome(&self, result: Result<Option<i64>, String>, delay: Duration) -> Duration {
        match result {
            Ok(at) => {
                if self.outage.swap(false, Ordering::Relaxed) {
                    log(format_args!(
                        "the registry answers again; this replica has caught up to change {}",
                        at.unwrap_or(0)
                    ));
                }
                POLL
            }
            Err(e) => {
                if !self.outage.swap(true, Ordering::Relaxed) {
                    log(format_args!(
                        "warning: cannot follow the registry's changes ({e}); serving what this \
                         replica holds and retrying"
                    ));
                }
                (delay * 2).min(MAX_BACKOFF)
            }
        }
    }
}

/// What `GET /api/v1/changes` was asked: the position after which to answer, and how many.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ChangesQuery {
    pub(crate) since: i64,
    pub(crate) limit: usize,
}

/// Reads `since` (a position, 0 or more; 0 by default) and `limit` (1 to [`MAX_CHANGES`],
/// [`DEFAULT_CHANGES`] by default; more is read as the most) from a query string. Other keys
/// are ignored (a cache-busting key is harmless); either key given twice, or a value that is
/// not a whole number in range, is refused with a sentence saying why.
pub(crate) fn changes_query(raw: Option<&str>) -> Result<ChangesQuery, String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| format!("the query string does not read: {e}"))?;
    let mut since: Option<&str> = None;
    let mut limit: Option<&str> = None;
    for (key, value) in &pairs {
        let slot = match key.as_str() {
            "since" => &mut since,
            "limit" => &mut limit,
            _ => continue,
        };
        if slot.is_some() {
            return Err(format!("{key} is given more than once"));
        }
        *slot = Some(value);
    }
    let since = match since {
        None => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) if n >= 0 && v.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => {
                return Err(format!(
                    "since must be a change's seq, a whole number from 0 to {} (got {:?})",
                    i64::MAX,
                    shorten(v)
                ));
            }
        },
    };
    let limit = match limit {
        None => DEFAULT_CHANGES,
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            // A huge number is read as the most: only its digits are known to be digits.
            let n = v.parse::<usize>().unwrap_or(MAX_CHANGES);
            if n == 0 {
                return Err("limit must be 1 or more".into());
            }
            n.min(MAX_CHANGES)
        }
        Some(v) => {
            return Err(format!(
                "limit must be a whole number from 1 to {MAX_CHANGES} (got {:?})",
                shorten(v)
            ));
        }
    };
    Ok(ChangesQuery { since, limit })
}

/// A value as an error quotes it: at most 40 characters.
fn shorten(v: &str) -> String {
    let mut s: String = v.chars().take(40).collect();
    if s.len() < v.len() {
        s.push('…');
    }
    s
}

/// `GET /api/v1/changes?since=SEQ&limit=N`: the changes after `since` in commit order and where
/// to ask from next, `{"changes": [{"seq", "name", "version", "action", "at"}], "next": SEQ}`.
/// Needs no token: it says no more than the index does. A bad query is 400; a database that
/// does not answer is 503 with `Retry-After`.
pub(crate) async fn changes(
    State(replica): State<Arc<Replica>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let q = match changes_query(raw.as_deref()) {
        Ok(q) => q,
        Err(why) => return error(StatusCode::BAD_REQUEST, "bad_query", why, None),
    };
    match replica.store.changes(q.since, q.limit).await {
        Ok(page) => {
            let text = serde_json::to_string(&page).expect("a change page serialises");
            Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::CONTENT_LENGTH, text.len())
                .header(header::CACHE_CONTROL, FEED_CACHE)
                .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
                .body(Body::from(text))
                .expect("valid response")
        }
        Err(e @ RegistryError::Unavailable { .. }) => {
            log(format_args!("GET /api/v1/changes: 503: {e}"));
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the registry's database is unavailable; retry".into(),
                Some(UNAVAILABLE_RETRY),
            )
        }
        Err(e) => {
            log(format_args!("GET /api/v1/changes: 500: {e}"));
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the change feed could not be read (see the server's log)".into(),
                None,
            )
        }
    }
}

fn error(status: StatusCode, code: &str, detail: String, retry: Option<u64>) -> Response {
    error_response(status, &ErrorBody::new(code, detail), retry)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hostile table of `GET /api/v1/changes`: every query either reads as the position
    /// and page it says, or is refused with a sentence naming the key.
    #[test]
    fn the_change_feed_query_reads_or_refuses_with_a_reason() {
        let ok = |since, limit| Ok(ChangesQuery { since, limit });
        let cases: &[(Option<&str>, Result<ChangesQuery, &str>)] = &[
            (None, ok(0, 100)),
            (Some(""), ok(0, 100)),
            (Some("since=0"), ok(0, 100)),
            (Some("since=42&limit=7"), ok(42, 7)),
            (Some("since=9223372036854775807"), ok(i64::MAX, 100)),
            (Some("limit=1000"), ok(0, 1000)),
            (Some("limit=1001"), ok(0, 1000)),
            (Some("limit=99999999999999999999999999"), ok(0, 1000)),
            (Some("since=3&_=1700000000"), ok(3, 100)),
            (Some("since=-1"), Err("since must be")),
            (Some("since=9223372036854775808"), Err("since must be")),
            (Some("since=+5"), Err("since must be")),
            (Some("since=abc"), Err("since must be")),
            (Some("since="), Err("since must be")),
            (Some("since=1.5"), Err("since must be")),
            (Some("since=%00"), Err("since must be")),
            (
                Some("since=1&since=2"),
                Err("since is given more than once"),
            ),
            (
                Some("limit=1&limit=1"),
                Err("limit is given more than once"),
            ),
            (Some("limit=0"), Err("limit must be 1 or more")),
            (Some("limit=-3"), Err("limit must be a whole number")),
            (Some("limit=ten"), Err("limit must be a whole number")),
            (Some("limit="), Err("limit must be a whole number")),
        ];
        for (raw, want) in cases {
            match (changes_query(*raw), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want, "{raw:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{raw:?}: {got}"),
                (got, want) => panic!("{raw:?}: {got:?}, wanted {want:?}"),
            }
        }
        let long = format!("since={}", "9".repeat(5000));
        let said = changes_query(Some(&long)).unwrap_err();
        assert!(said.len() < 200, "a huge value is not echoed whole: {said}");
    }
}

#[cfg(test)]
#[path = "feed_tests.rs"]
mod outage_tests;
