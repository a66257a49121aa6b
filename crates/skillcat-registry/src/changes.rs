//! The change feed of a registry file (the `change` table, `0005_changes.sql`), and copying
//! versions between registries: [`Registry::export`], [`Registry::import`],
//! [`Registry::import_audit`].

use rusqlite::{OptionalExtension, params};

use super::{Registry, RegistryError, Result, publish, query};
use crate::feed::{ChangeAction, action_of, append};
use crate::store::{Change, ChangePage, Imported, VersionRecord};
use crate::{AuditEntry, Prepared};

/// The most changes one page holds, whatever is asked.
pub(crate) const MAX_PAGE: usize = 1000;

impl Registry {
    /// At most `limit` (at most 1000) changes after `since`, in commit order.
    pub fn changes(&self, since: i64, limit: usize) -> Result<ChangePage> {
        let limit = limit.clamp(1, MAX_PAGE) as i64;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, name, version, action, strftime('%Y-%m-%dT%H:%M:%SZ', at, 'unixepoch') \
                 FROM change WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )
            .map_err(|e| self.sql(e))?;
        let rows: Vec<(i64, String, String, String, String)> = stmt
            .query_map(params![since, limit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.sql(e))?;
        let mut changes = Vec::with_capacity(rows.len());
        for (seq, name, version, action, at) in rows {
            // The table's CHECK allows only these three.
            let Some(action) = action_of(&action) else {
                continue;
            };
            changes.push(Change {
                seq,
                name,
                version,
                action,
                at,
            });
        }
        let next = changes.last().map_or(since, |c| c.seq);
        Ok(ChangePage { changes, next })
    }

    /// The `seq` of the last change (0 when none).
    pub fn head(&self) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT coalesce(max(seq), 0) FROM change")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(|e| self.sql(e))
    }

    /// Everything kept of `name@version` (yanked or not), each file hashed again as it is read;
    /// `None` when there is no such version.
    pub fn export(&self, name: &str, version: &str) -> Result<Option<VersionRecord>> {
        let Some(release) = self.get(name, version)? else {
            return Ok(None);
        };
        let files = self
            .version_contents(name, version)?
            .ok_or_else(|| RegistryError::NotFound(format!("{name}@{version}")))?;
        let findings = self.findings(name, version)?;
        Ok(Some(VersionRecord {
            info: release.info,
            manifest: release.manifest,
            body: release.body,
            files,
            signatures: release.signatures,
            findings,
        }))
    }

    /// Stores a version another registry holds, exactly: the same files, digests, publish
    /// time, yank, signatures and findings, checked against its bytes first
    /// (as a publish checks its own). A version held already must be the same content
    /// ([`RegistryError::Immutable`] otherwise); its yank state and any signature it lacks are
    /// brought up to date. One transaction, with its change rows.
    pub fn import(&mut self, record: &VersionRecord) -> Result<Imported> {
        if self.read_only {
            return Err(RegistryError::ReadOnly {
                path: self.shown.clone(),
            });
        }
        let (prepared, more) = Prepared::from_record(record)?;
        let (tx, sql) = self.begin_write()?;
        let sql = &sql;
        let (name, version) = (prepared.name(), prepared.version());
        let skill_id = publish::skill_id(&tx, name, &sql)?;
        let held: Option<(i64, bool)> = tx
            .query_row(
                "SELECT id, yanked FROM version WHERE skill_id = ?1 AND version = ?2",
                params![skill_id, version],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql)?;
        let (version_id, outcome, was_yanked) = match held {
            Some((id, yanked)) => {
                publish::check_same(&tx, &prepared, id, &sql)?;
                (id, Imported::Present, yanked)
            }
            None => {
                let (blob_ids, _) = publish::store_blobs(&tx, &prepared, &sql)?;
                let id = publish::insert_version(&tx, &prepared, skill_id, &blob_ids, &sql)?;
                append(&tx, name, version, ChangeAction::Publish).map_err(sql)?;
                (id, Imported::Copied, false)
            }
        };
        let mut signed = false;
        for (key_id, text) in prepared.signature_text().into_iter().chain(more) {
            signed |= tx
                .execute(
                    "INSERT INTO signature (version_id, key_id, signature) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (version_id, key_id) DO NOTHING",
                    params![version_id, key_id, text],
                )
                .map_err(sql)?
                > 0;
        }
        if signed && outcome == Imported::Present {
            append(&tx, name, version, ChangeAction::Publish).map_err(sql)?;
        }
        if record_findings(&tx, version_id, prepared.findings_json()).map_err(sql)? {
            // Findings are part of what a reader is told of the version.
            if outcome == Imported::Present && !signed {
                append(&tx, name, version, ChangeAction::Publish).map_err(sql)?;
            }
        }
        if record.info.yanked != was_yanked {
            tx.execute(
                "UPDATE version SET yanked = ?2 WHERE id = ?1",
                params![version_id, record.info.yanked],
            )
            .map_err(sql)?;
            let action = if record.info.yanked {
                ChangeAction::Yank
            } else {
                ChangeAction::Unyank
            };
            append(&tx, name, version, action).map_err(sql)?;
        }
        query::refresh_latest(&tx, skill_id).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(outcome)
    }

    /// Appends the audit rows another registry holds that this one lacks (the same time,
    /// token, action, name, version, digest and client), oldest first; how many were added.
    pub fn import_audit(&mut self, entries: &[AuditEntry]) -> Result<usize> {
        let (tx, sql) = self.begin_write()?;
        let sql = &sql;
        let mut sorted: Vec<&AuditEntry> = entries.iter().collect();
        sorted.sort_by_key(|e| (e.at, e.id));
        let mut added = 0;
        for e in sorted {
            let digest =
                crate::digest::parse_digest(&e.digest).ok_or_else(|| RegistryError::BadSpec {
                    spec: e.digest.clone(),
                    reason: format!(
                        "the audit row {} of {}@{} has no sha256 digest",
                        e.id, e.name, e.version
                    ),
                })?;
            let held: bool = tx
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM audit WHERE at = ?1 AND token = ?2 \
                     AND action = ?3 AND name = ?4 AND version = ?5 AND digest = ?6 \
                     AND client = ?7)",
                )
                .and_then(|mut s| {
                    s.query_row(
                        params![
                            e.at,
                            e.token,
                            e.action,
                            e.name,
                            e.version,
                            &digest[..],
                            e.client
                        ],
                        |r| r.get(0),
                    )
                })
                .map_err(sql)?;
            if !held {
                tx.prepare_cached(
                    "INSERT INTO audit (at, token, action, name, version, digest, client) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        e.at,
                        e.token,
                        e.action,
                        e.name,
                        e.version,
                        &digest[..],
                        e.client
                    ])
                })
                .map_err(sql)?;
                added += 1;
            }
        }
        tx.commit().map_err(sql)?;
        Ok(added)
    }
}

/// Records `findings` for a version that has none yet; whether a row was written.
fn record_findings(
    conn: &rusqlite::Connection,
    version_id: i64,
    findings: Option<&str>,
) -> rusqlite::Result<bool> {
    let Some(findings) = findings else {
        return Ok(false);
    };
    Ok(conn.execute(
        "INSERT INTO version_findings (version_id, findings) VALUES (?1, ?2) \
         ON CONFLICT (version_id) DO NOTHING",
        params![version_id, findings],
    )? > 0)
}
