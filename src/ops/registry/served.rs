//! A served registry (`skillcat serve x.db`) as the origin of `registry copy URL TO`: what
//! its HTTP API exposes, read as a [`Origin`].
//!
//! ```text
//! GET /api/v1/changes?since=SEQ           the versions, in commit order (else the index's names)
//! GET /api/v1/skills/NAME                 each version: digest, date, yank, signatures' text
//! NAME@VERSION (index, API, archive)      the files, the archive checked against its digest
//! GET /api/v1/skills/NAME/VERSION/findings  what the audit found when it was stored
//! ```
//!
//! The audit log is not carried: the API gives it only to a token with the `audit` right,
//! and only for the names of its scopes. Everything read is checked again when TO imports it
//! (the manifest rebuilt from the bytes must give the digest the API lists).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use crate::client::Policy;
use crate::digest::Manifest;
use crate::registry::copy::Origin;
use crate::registry::store::{Change, ChangeAction, ChangePage, VersionRecord};
use crate::registry::{AuditEntry, RegistryError, StoredSignature, VersionInfo};
use crate::search::{ServedFindings, ServedSkill};
use crate::source::http::{HttpOptions, HttpSource};
use crate::source::{Source, SourceExt};

/// The index of the registry served at `url`, read with `policy`'s certificates and timeout
/// and no cache: what a copy and `add URL NAME` read.
pub(super) fn index_of(url: &str, policy: &Policy) -> crate::Result<HttpSource> {
    let mut opts = HttpOptions {
        cache_dir: None,
        ca_certificates: policy.ca_certificates.clone(),
        ..HttpOptions::default()
    };
    if let Some(t) = policy.timeout {
        opts.timeout = t;
    }
    HttpSource::new(url, opts)
}

/// A served registry read for a copy.
pub(super) struct ServedOrigin {
    url: String,
    shown: String,
    policy: Policy,
    http: HttpSource,
    /// Each skill's API answer, asked once.
    skills: Mutex<HashMap<String, ServedSkill>>,
    /// The server answered that it has no findings route.
    findings_unserved: AtomicBool,
}

impl ServedOrigin {
    pub(super) fn new(url: &str, policy: &Policy) -> crate::Result<ServedOrigin> {
        let http = index_of(url, policy)?;
        Ok(ServedOrigin {
            url: url.to_string(),
            shown: crate::source::redact_password(url),
            policy: policy.clone(),
            http,
            skills: Mutex::new(HashMap::new()),
            findings_unserved: AtomicBool::new(false),
        })
    }

    /// Reads its index: whether it answers, before anything is created for the copy.
    pub(super) async fn reachable(&self) -> crate::Result<()> {
        self.http.list().await.map(drop)
    }

    fn unavailable(&self, e: crate::Error) -> RegistryError {
        RegistryError::Read {
            location: self.shown.clone(),
            source: Box::new(e),
        }
    }

    /// The API's answer about `name`, asked once.
    async fn skill(&self, name: &str) -> Result<ServedSkill, RegistryError> {
        if let Some(s) = self.lock().get(name) {
            return Ok(s.clone());
        }
        let skill = crate::search::skill(&self.url, name, &self.policy)
            .await
            .map_err(|e| self.unavailable(e))?;
        self.lock().insert(name.to_string(), skill.clone());
        Ok(skill)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ServedSkill>> {
        self.skills
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every version of `name` as a registry file lists it: semver order.
    async fn versions_of(&self, name: &str) -> Result<Vec<VersionInfo>, RegistryError> {
        let skill = self.skill(name).await?;
        Ok((skill.versions.iter().rev())
            .filter_map(|v| {
                Some(VersionInfo {
                    name: skill.name.clone(),
                    version: v.version.clone()?,
                    digest: v.skill_digest.clone(),
                    description: (v.description.clone())
                        .unwrap_or_else(|| skill.description.clone()),
                    published_at: v.published_at.unwrap_or_default(),
                    published: v.published.clone().unwrap_or_default(),
                    yanked: v.yanked,
                    latest: v.latest,
                    signed_by: (v.signatures.iter())
                        .filter(|s| s.signature.is_some() && !s.key_id.is_empty())
                        .map(|s| s.key_id.clone())
                        .collect(),
                })
            })
            .collect())
    }
}

#[async_trait]
impl Origin for ServedOrigin {
    fn shown(&self) -> String {
        self.shown.clone()
    }

    async fn changes(&self, since: i64, limit: usize) -> crate::registry::Result<ChangePage> {
        let page = crate::search::changes(&self.url, since, limit, &self.policy)
            .await
            .map_err(|e| self.unavailable(e))?;
        // No feed (an older server): the index's names stand for it (`all_versions`).
        let Some(page) = page else {
            return Ok(ChangePage {
                changes: Vec::new(),
                next: since,
            });
        };
        let changes = (page.changes.into_iter())
            .filter_map(|c| {
                let action = match c.action.as_str() {
                    "publish" => ChangeAction::Publish,
                    "yank" => ChangeAction::Yank,
                    "unyank" => ChangeAction::Unyank,
                    _ => return None,
                };
                Some(Change {
                    seq: c.seq,
                    name: c.name,
                    version: c.version,
                    action,
                    at: c.at,
                })
            })
            .collect();
        // A feed that does not move on is read to its end.
        let next = page.next.max(since);
        Ok(ChangePage { changes, next })
    }

    async fn all_versions(&self) -> crate::registry::Result<Vec<VersionInfo>> {
        // The names the feed named, and those the index lists (a skill every version of which
        // is yanked is in the feed only).
        let mut names: Vec<String> = self.lock().keys().cloned().collect();
        let mut since = 0;
        loop {
            let page = Origin::changes(self, since, 1000).await?;
            names.extend(page.changes.into_iter().map(|c| c.name));
            if page.next <= since {
                break;
            }
            since = page.next;
        }
        let listed = self.http.list().await.map_err(|e| self.unavailable(e))?;
        names.extend(listed.into_iter().map(|root| match root.split_once('@') {
            Some((name, _)) => name.to_string(),
            None => root,
        }));
        names.sort();
        names.dedup();
        let mut all = Vec::new();
        for name in names {
            all.extend(self.versions_of(&name).await?);
        }
        Ok(all)
    }

    async fn export(
        &self,
        name: &str,
        version: &str,
    ) -> crate::registry::Result<Option<VersionRecord>> {
        let Some(info) = (self.versions_of(name).await?)
            .into_iter()
            .find(|v| v.version == version)
        else {
            return Ok(None);
        };
        let skill = self.skill(name).await?;
        let served = skill
            .versions
            .iter()
            .find(|v| v.version.as_deref() == Some(version));
        let signatures = (served.map(|v| v.signatures.clone()).unwrap_or_default())
            .into_iter()
            .filter_map(|s| {
                Some(StoredSignature {
                    key_id: s.key_id,
                    format: "minisign".into(),
                    text: s.signature?,
                })
            })
            .collect();
        let read = |e: crate::Error| self.unavailable(e);
        let root = (self.http.version_root(name, version).await)
            .map_err(read)?
            .unwrap_or_else(|| name.to_string());
        let loaded = self.http.load(&root).await.map_err(read)?;
        let entries = self.http.files(&root).await.map_err(read)?;
        let mut files: Vec<(crate::path::FileEntry, Bytes)> = Vec::with_capacity(entries.len());
        for entry in entries {
            let bytes = (self
                .http
                .read(&crate::path::join_path(&root, &entry.path))
                .await)
                .map_err(read)?;
            files.push((entry, bytes));
        }
        files.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        let manifest = Manifest::build(
            name,
            version,
            files
                .iter()
                .map(|(e, b)| (e.path.as_str(), &b[..], e.executable)),
        );
        let findings = Origin::findings(self, name, version).await?;
        Ok(Some(VersionRecord {
            info,
            manifest,
            body: loaded.body().to_string(),
            files,
            signatures,
            findings,
        }))
    }

    async fn findings(&self, name: &str, version: &str) -> crate::registry::Result<Option<String>> {
        let found = crate::search::findings(&self.url, name, version, &self.policy)
            .await
            .map_err(|e| self.unavailable(e))?;
        Ok(match found {
            ServedFindings::Audited(f) => Some(f.to_string()),
            ServedFindings::NotAudited => None,
            ServedFindings::NotServed => {
                self.findings_unserved.store(true, Ordering::Relaxed);
                None
            }
        })
    }

    async fn audit_log(&self) -> crate::registry::Result<Option<Vec<AuditEntry>>> {
        Ok(None)
    }

    fn not_carried(&self) -> Vec<String> {
        let mut not = vec![format!(
            "the audit log of {}: a served registry gives it only to a token with the audit \
             right (copy its registry file or database to carry it)",
            self.shown
        )];
        if self.findings_unserved.load(Ordering::Relaxed) {
            not.push(format!(
                "the audit findings of {}: it serves them only when served for publishing \
                 (`serve --publish`)",
                self.shown
            ));
        }
        not
    }
}
