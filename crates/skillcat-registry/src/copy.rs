//! Copying one registry into another (`skillcat registry copy FROM TO`): every version with
//! its files, digests, publish time, yank, signatures and findings, then the audit log.
//!
//! ```text
//!  FROM (Origin: a Store, or a served registry)             TO (a Store)
//!   changes(0..) ── the versions, in commit order ─┐
//!   all_versions ── (every version, whatever the   ├─ held alike in TO? ── skip
//!                    feed names) ──────────────────┘        │ no
//!   export(name, version) ── VersionRecord ────────────────▶ import (hashed again, one tx)
//!   audit log ──────────────────────────────────────────────▶ import_audit (idempotent)
//! ```
//!
//! Nothing is taken on trust: [`Store::import`] hashes every file again and checks the digests
//! before it writes, and a version FROM cannot read whole (a blob that no longer hashes to its
//! sha256) is refused alone, with nothing of it written. Running a copy again copies only what
//! is new: a version TO already holds with the same digest, yank, signatures and findings is
//! not even read.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use serde::Serialize;

use crate::store::{ChangePage, Store, VersionRecord};
use crate::{AuditEntry, Result, VersionInfo};

/// How many changes are asked for at once.
const PAGE: usize = 1000;

/// What a copy reads from the registry it copies: any [`Store`], or a served registry read
/// over HTTP (which implements it with what its API exposes).
#[async_trait]
pub trait Origin: Send + Sync {
    /// Where it is, as messages show it (no password).
    fn shown(&self) -> String;

    /// At most `limit` changes after `since`, in commit order.
    async fn changes(&self, since: i64, limit: usize) -> Result<ChangePage>;

    /// Every version of every skill.
    async fn all_versions(&self) -> Result<Vec<VersionInfo>>;

    /// Everything kept of `name@version`; `None` when there is no such version.
    async fn export(&self, name: &str, version: &str) -> Result<Option<VersionRecord>>;

    /// The audit findings (JSON) recorded with `name@version`, if any.
    async fn findings(&self, name: &str, version: &str) -> Result<Option<String>>;

    /// The whole audit log; `None` when the origin does not expose it (a served registry).
    async fn audit_log(&self) -> Result<Option<Vec<AuditEntry>>>;

    /// What a copy from it could not carry, one sentence each (nothing for a store); asked
    /// once the copy is done.
    fn not_carried(&self) -> Vec<String> {
        Vec::new()
    }
}

#[async_trait]
impl<S: Store + ?Sized> Origin for S {
    fn shown(&self) -> String {
        self.display().to_string()
    }

    async fn changes(&self, since: i64, limit: usize) -> Result<ChangePage> {
        Store::changes(self, since, limit).await
    }

    async fn all_versions(&self) -> Result<Vec<VersionInfo>> {
        Store::all_versions(self, None).await
    }

    async fn export(&self, name: &str, version: &str) -> Result<Option<VersionRecord>> {
        Store::export(self, name, version).await
    }

    async fn findings(&self, name: &str, version: &str) -> Result<Option<String>> {
        Store::findings(self, name, version).await
    }

    async fn audit_log(&self) -> Result<Option<Vec<AuditEntry>>> {
        // Newest first, a page at a time.
        let mut all = Vec::new();
        let mut before = None;
        loop {
            let page = Store::audit(self, PAGE, before, &|_| true).await?;
            let Some(last) = page.last() else { break };
            before = Some(last.id);
            let short = page.len() < PAGE;
            all.extend(page);
            if short {
                break;
            }
        }
        all.reverse();
        Ok(Some(all))
    }
}

/// What a copy is told of as it goes (for a progress bar on a long copy).
#[derive(Debug, Clone, Copy)]
pub enum CopyEvent<'a> {
    /// The versions FROM holds are known: this many.
    Total(usize),
    /// One version is done (copied, brought up to date, already there, or refused).
    Version {
        /// The skill.
        name: &'a str,
        /// The version.
        version: &'a str,
    },
}

/// How a copy runs.
#[derive(Default)]
pub struct CopyOptions<'a> {
    /// Told of each step, when set.
    pub progress: Option<&'a (dyn Fn(CopyEvent<'_>) + Send + Sync)>,
}

impl std::fmt::Debug for CopyOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyOptions")
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// A version a copy did not bring over, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyFailure {
    /// The skill.
    pub name: String,
    /// The version.
    pub version: String,
    /// Why (nothing of this version was written).
    pub error: String,
}

/// What [`copy`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Where from, as messages show it.
    pub from: String,
    /// Where to.
    pub to: String,
    /// The versions FROM holds.
    pub versions: usize,
    /// Versions TO did not hold, now stored.
    pub copied: usize,
    /// Versions TO held already whose yank, signatures or findings were brought up to date.
    pub updated: usize,
    /// Versions TO held already, just as FROM holds them.
    pub unchanged: usize,
    /// Audit entries added to TO's log.
    pub audit: usize,
    /// Where FROM's change feed was read to: a later copy need ask only what follows.
    pub next: i64,
    /// The versions not copied, each with why.
    pub failed: Vec<CopyFailure>,
    /// What this copy could not carry (a served registry does not expose its audit log).
    pub not_carried: Vec<String>,
}

impl CopyReport {
    /// Whether every version was copied or was there already.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Copies every version `from` holds that `to` lacks (or holds otherwise yanked, signed or
/// with fewer findings), exactly, then `from`'s audit log entries `to` lacks.
///
/// The versions are taken in the order `from`'s change feed committed them, then any the feed
/// does not name (a registry whose feed begins after its first versions). A version that
/// cannot be read or stored is said in [`CopyReport::failed`] and the copy goes on with the
/// rest; only a failure to list `from`, or to read `to`, stops it (`Err`).
pub async fn copy<F: Origin + ?Sized>(
    from: &F,
    to: &dyn Store,
    opts: CopyOptions<'_>,
) -> Result<CopyReport> {
    let tell = |e: CopyEvent<'_>| {
        if let Some(p) = opts.progress {
            p(e);
        }
    };
    let mut report = CopyReport {
        from: from.shown(),
        to: to.display().to_string(),
        ..CopyReport::default()
    };

    // The versions, in commit order, each once.
    let mut order: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut since = 0;
    loop {
        let page = from.changes(since, PAGE).await?;
        for c in page.changes {
            let key = (c.name, c.version);
            if seen.insert(key.clone()) {
                order.push(key);
            }
        }
        if page.next <= since {
            break;
        }
        since = page.next;
    }
    report.next = since;
    let listed = from.all_versions().await?;
    let infos: HashMap<(String, String), VersionInfo> = listed
        .into_iter()
        .map(|v| ((v.name.clone(), v.version.clone()), v))
        .collect();
    // A version the feed named but the listing lacks is gone (no registry deletes one, but a
    // feed may outlive what it names): only what is listed is copied.
    order.retain(|k| infos.contains_key(k));
    let mut rest: Vec<&(String, String)> = infos.keys().filter(|k| !seen.contains(*k)).collect();
    rest.sort();
    let rest: Vec<(String, String)> = rest.into_iter().cloned().collect();
    order.extend(rest);
    report.versions = order.len();
    tell(CopyEvent::Total(order.len()));

    let held: HashMap<(String, String), VersionInfo> = to
        .all_versions(None)
        .await?
        .into_iter()
        .map(|v| ((v.name.clone(), v.version.clone()), v))
        .collect();

    for key in &order {
        let (name, version) = (&key.0, &key.1);
        let want = &infos[key];
        let outcome = copy_one(from, to, want, held.get(key)).await;
        match outcome {
            Ok(Step::Copied) => report.copied += 1,
            Ok(Step::Updated) => report.updated += 1,
            Ok(Step::Unchanged) => report.unchanged += 1,
            Err(e) => report.failed.push(CopyFailure {
                name: name.clone(),
                version: version.clone(),
                error: e.to_string(),
            }),
        }
        tell(CopyEvent::Version { name, version });
    }

    if let Some(log) = from.audit_log().await? {
        // Only the rows of versions TO now holds: a refused version's rows would name
        // what is not there.
        let failed: HashSet<(&str, &str)> = (report.failed.iter())
            .map(|f| (f.name.as_str(), f.version.as_str()))
            .collect();
        let log: Vec<AuditEntry> = log
            .into_iter()
            .filter(|e| !failed.contains(&(e.name.as_str(), e.version.as_str())))
            .collect();
        if !log.is_empty() {
            report.audit = to.import_audit(log).await?;
        }
    }
    // Asked last: an origin may learn what it cannot carry as it is read.
    report.not_carried = from.not_carried();
    Ok(report)
}

enum Step {
    Copied,
    Updated,
    Unchanged,
}

/// One version: skipped when TO holds it alike, else exported and imported whole.
async fn copy_one<F: Origin + ?Sized>(
    from: &F,
    to: &dyn Store,
    want: &VersionInfo,
    held: Option<&VersionInfo>,
) -> Result<Step> {
    let (name, version) = (want.name.as_str(), want.version.as_str());
    if let Some(have) = held
        && have.digest == want.digest
        && have.yanked == want.yanked
        && want.signed_by.iter().all(|k| have.signed_by.contains(k))
    {
        // Findings are not in the listing: asked of both only for a version held alike.
        let theirs = from.findings(name, version).await?;
        if theirs.is_none() || to.findings(name, version).await?.is_some() {
            return Ok(Step::Unchanged);
        }
    }
    let record = from
        .export(name, version)
        .await?
        .ok_or_else(|| crate::RegistryError::NotFound(format!("{name}@{version}")))?;
    Ok(match to.import(record).await? {
        crate::store::Imported::Copied => Step::Copied,
        crate::store::Imported::Present => Step::Updated,
    })
}
