//! Reading a registry (versions, releases, search), yanking, and the `latest` tag.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::{Actor, AuditAction, Registry, RegistryError, Result, fts, order};
use crate::digest::Manifest;

/// The tag that names a skill's highest non-yanked version.
pub(super) const LATEST: &str = "latest";

/// bm25 weights of the indexed columns: name, description, body.
const WEIGHTS: (f64, f64, f64) = (10.0, 4.0, 1.0);

/// One published version, as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionInfo {
    /// The skill's name.
    pub name: String,
    /// The version (semver).
    pub version: String,
    /// The skill digest, `sha256:<hex>`.
    pub digest: String,
    /// The description of this version.
    pub description: String,
    /// When it was published, in Unix seconds.
    pub published_at: i64,
    /// The same instant as RFC 3339 UTC (`2026-03-01T12:00:00Z`).
    pub published: String,
    /// Whether it is yanked (hidden from `latest` and search, still readable by version).
    pub yanked: bool,
    /// Whether it is the skill's `latest`.
    pub latest: bool,
    /// The ids of the keys whose signatures are stored for it.
    pub signed_by: Vec<String>,
}

/// A stored detached signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredSignature {
    /// The signing key's id (16 uppercase hex).
    pub key_id: String,
    /// The signature format (`minisign`).
    pub format: String,
    /// The signature file's text.
    pub text: String,
}

/// Everything stored about one version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Release {
    /// How it is listed.
    pub info: VersionInfo,
    /// Its manifest (name, version, skill digest, every file).
    pub manifest: Manifest,
    /// The Markdown body of its document.
    pub body: String,
    /// Its signatures.
    pub signatures: Vec<StoredSignature>,
}

/// One search result: a skill, as its `latest` version describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The skill's name.
    pub name: String,
    /// Its latest version.
    pub version: String,
    /// That version's description.
    pub description: String,
    /// Relevance: SQLite's bm25 negated, so it is never negative and larger is better (name
    /// matches weigh most). Results come best first.
    pub score: f64,
}

const INFO_COLUMNS: &str = "s.name, v.version, v.skill_digest, v.description, v.published_at, \
     strftime('%Y-%m-%dT%H:%M:%SZ', v.published_at, 'unixepoch'), v.yanked, \
     v.id = (SELECT t.version_id FROM tag t WHERE t.skill_id = s.id AND t.tag = 'latest'), \
     (SELECT group_concat(g.key_id) FROM signature g WHERE g.version_id = v.id), v.id";

fn info_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(VersionInfo, i64)> {
    let digest: Vec<u8> = row.get(2)?;
    let signed: Option<String> = row.get(8)?;
    Ok((
        VersionInfo {
            name: row.get(0)?,
            version: row.get(1)?,
            digest: format!("sha256:{}", crate::digest::to_hex(digest)),
            description: row.get(3)?,
            published_at: row.get(4)?,
            published: row.get(5)?,
            yanked: row.get(6)?,
            latest: row.get::<_, Option<bool>>(7)?.unwrap_or(false),
            signed_by: {
                let mut keys: Vec<String> = signed
                    .map(|s| s.split(',').map(str::to_string).collect())
                    .unwrap_or_default();
                keys.sort();
                keys
            },
        },
        row.get(9)?,
    ))
}

impl Registry {
    /// Every version of `name`, in semver order (oldest first), yanked ones included and
    /// flagged. Empty when no such skill exists.
    pub fn versions(&self, name: &str) -> Result<Vec<VersionInfo>> {
        let sql = format!(
            "SELECT {INFO_COLUMNS} FROM version v JOIN skill s ON s.id = v.skill_id \
             WHERE s.name = ?1"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.sql(e))?;
        let mut out: Vec<VersionInfo> = stmt
            .query_map([name], |r| info_of(r).map(|(info, _)| info))
            .and_then(Iterator::collect)
            .map_err(|e| self.sql(e))?;
        out.sort_by(|a, b| order::compare(&a.version, &b.version));
        Ok(out)
    }

    /// Every yanked version, of the skill `name` alone when given: by name (bytes), then semver
    /// order. What a served registry lists apart, marked yanked.
    pub fn yanked(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        self.versions_where("v.yanked = 1", name)
    }

    /// The versions that `filter` (SQL over `v`, the version, and `s`, its skill) keeps, of
    /// the skill `name` or of all: sorted by name, then by the one order of versions.
    fn versions_where(&self, filter: &str, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        let sql = format!(
            "SELECT {INFO_COLUMNS} FROM version v JOIN skill s ON s.id = v.skill_id \
             WHERE {filter} AND (?1 IS NULL OR s.name = ?1)"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.sql(e))?;
        let mut out: Vec<VersionInfo> = stmt
            .query_map([name], |r| info_of(r).map(|(info, _)| info))
            .and_then(Iterator::collect)
            .map_err(|e| self.sql(e))?;
        out.sort_by(|a, b| {
            a.name
                .as_bytes()
                .cmp(b.name.as_bytes())
                .then_with(|| order::compare(&a.version, &b.version))
        });
        Ok(out)
    }

    /// The skills every version of which is yanked (so none has a `latest`), by name, each with
    /// its versions in semver order.
    pub fn all_yanked(&self) -> Result<Vec<(String, Vec<String>)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.name, v.version FROM skill s JOIN version v ON v.skill_id = s.id \
                 WHERE NOT EXISTS (SELECT 1 FROM tag t WHERE t.skill_id = s.id AND t.tag = ?1) \
                 ORDER BY s.name",
            )
            .map_err(|e| self.sql(e))?;
        let rows: Vec<(String, String)> = stmt
            .query_map([LATEST], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(|e| self.sql(e))?;
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for (name, version) in rows {
            match out.last_mut() {
                Some((n, versions)) if *n == name => versions.push(version),
                _ => out.push((name, vec![version])),
            }
        }
        for (_, versions) in &mut out {
            versions.sort_by(|a, b| order::compare(a, b));
        }
        Ok(out)
    }

    /// The skill's highest non-yanked version, if any.
    pub fn latest(&self, name: &str) -> Result<Option<VersionInfo>> {
        let sql = format!(
            "SELECT {INFO_COLUMNS} FROM skill s JOIN tag t ON t.skill_id = s.id AND t.tag = 'latest' \
             JOIN version v ON v.id = t.version_id WHERE s.name = ?1"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.sql(e))?;
        stmt.query_row([name], |r| info_of(r).map(|(info, _)| info))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// What the audit found in `name@version` when it was published through the central
    /// registry: the JSON array of its findings, `Ok(Some("[]"))` for none; `Ok(None)` when
    /// the version was not audited (published before audits were recorded, or to the file
    /// directly). A version the registry does not hold is [`RegistryError::NotFound`].
    pub fn findings(&self, name: &str, version: &str) -> Result<Option<String>> {
        let row: Option<Option<String>> = self
            .conn
            .prepare_cached(
                "SELECT f.findings FROM version v JOIN skill s ON s.id = v.skill_id \
                 LEFT JOIN version_findings f ON f.version_id = v.id \
                 WHERE s.name = ?1 AND v.version = ?2",
            )
            .and_then(|mut stmt| stmt.query_row([name, version], |r| r.get(0)).optional())
            .map_err(|e| self.sql(e))?;
        row.ok_or_else(|| RegistryError::NotFound(format!("{name}@{version}")))
    }

    /// One version (yanked or not): its listing, manifest, body and signatures.
    pub fn get(&self, name: &str, version: &str) -> Result<Option<Release>> {
        let sql = format!(
            "SELECT {INFO_COLUMNS}, x.manifest, x.body FROM version v \
             JOIN skill s ON s.id = v.skill_id JOIN version_text x ON x.version_id = v.id \
             WHERE s.name = ?1 AND v.version = ?2"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.sql(e))?;
        let row = stmt
            .query_row([name, version], |r| {
                let (info, id) = info_of(r)?;
                Ok((info, id, r.get::<_, String>(10)?, r.get::<_, String>(11)?))
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((info, id, manifest_json, body)) = row else {
            return Ok(None);
        };
        let manifest: Manifest = serde_json::from_str(&manifest_json).map_err(|e| {
            self.sql(rusqlite::Error::FromSqlConversionFailure(
                10,
                rusqlite::types::Type::Text,
                Box::new(e),
            ))
        })?;
        Ok(Some(Release {
            info,
            manifest,
            body,
            signatures: self.signatures_of(id)?,
        }))
    }

    /// The signatures stored for one version (by its row id), by key id.
    pub(crate) fn signatures_of(&self, version_id: i64) -> Result<Vec<StoredSignature>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT key_id, format, signature FROM signature WHERE version_id = ?1 \
                 ORDER BY key_id",
            )
            .map_err(|e| self.sql(e))?;
        stmt.query_map([version_id], |r| {
            Ok(StoredSignature {
                key_id: r.get(0)?,
                format: r.get(1)?,
                text: r.get(2)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.sql(e))
    }

    /// Full-text search over the `latest` version of every skill (name, description, body),
    /// best first; name matches weigh most. Any text is accepted (see [`fts_query`](super::fts_query));
    /// text with nothing to look for gives no results.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let Some(expr) = fts::fts_query(query) else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (n, d, b) = WEIGHTS;
        let sql = format!(
            // Rank in the index alone, then join only the best `limit` rows.
            "SELECT s.name, v.version, v.description, hit.score FROM \
             (SELECT rowid, bm25(skill_search, {n:?}, {d:?}, {b:?}) AS score FROM skill_search \
              WHERE skill_search MATCH ?1 ORDER BY score, rowid LIMIT ?2) AS hit \
             JOIN skill s ON s.id = hit.rowid \
             JOIN tag t ON t.skill_id = s.id AND t.tag = 'latest' \
             JOIN version v ON v.id = t.version_id ORDER BY hit.score, s.name"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.sql(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        stmt.query_map(params![expr, limit], |r| {
            Ok(SearchHit {
                name: r.get(0)?,
                version: r.get(1)?,
                description: r.get(2)?,
                score: (-r.get::<_, f64>(3)?).max(0.0),
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.sql(e))
    }

    /// One page of [`search`](Self::search): at most `limit` hits from the `offset`-th, best
    /// first, and how many skills match in all (what a paged search API says as its total).
    pub fn search_page(
        &self,
        query: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<SearchHit>, usize)> {
        let Some(expr) = fts::fts_query(query) else {
            return Ok((Vec::new(), 0));
        };
        let total: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM skill_search hit \
                 JOIN tag t ON t.skill_id = hit.rowid AND t.tag = 'latest' \
                 WHERE skill_search MATCH ?1",
            )
            .and_then(|mut stmt| stmt.query_row([&expr], |r| r.get(0)))
            .map_err(|e| self.sql(e))?;
        let hits = self.search(query, offset.saturating_add(limit))?;
        Ok((
            hits.into_iter().skip(offset).collect(),
            usize::try_from(total).unwrap_or(0),
        ))
    }

    /// [`search_page`](Self::search_page) stopped after `deadline` of wall time, from outside
    /// the query: a watchdog thread calls `sqlite3_interrupt` on the connection, which also
    /// stops FTS5 inside one step of the virtual machine, where the query's own budget (a
    /// progress handler) is never asked. A search stopped this way is
    /// [`RegistryError::is_interrupted`](super::RegistryError::is_interrupted).
    pub fn search_page_within(
        &self,
        query: &str,
        offset: usize,
        limit: usize,
        deadline: std::time::Duration,
    ) -> Result<(Vec<SearchHit>, usize)> {
        let handle = self.conn.get_interrupt_handle();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if wait.recv_timeout(deadline) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                handle.interrupt();
            }
        });
        let found = self.search_page(query, offset, limit);
        // The watchdog wakes at once and ends: an interrupt after the search is a no-op, as
        // SQLite ignores one when no statement runs.
        drop(done);
        let _ = watchdog.join();
        found
    }

    /// Every version of every skill (of `name` alone when given), yanked ones included and
    /// flagged: by name (bytes), then semver order. One query, for a listing of the whole
    /// registry (a served catalog's pages).
    pub fn all_versions(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        self.versions_where("1", name)
    }

    /// Yanks `name@version`: it leaves `latest` and search but stays readable by version.
    /// Returns whether anything changed (`false` when it was already yanked).
    pub fn yank(&mut self, name: &str, version: &str) -> Result<bool> {
        self.set_yanked_by(name, version, true, None)
    }

    /// Undoes [`yank`](Self::yank). Returns whether anything changed.
    pub fn unyank(&mut self, name: &str, version: &str) -> Result<bool> {
        self.set_yanked_by(name, version, false, None)
    }

    /// Yanks (`yanked`) or unyanks `name@version` on behalf of `actor`: a change also appends
    /// its row to the audit log in the same transaction; no change records nothing.
    pub fn set_yanked_as(
        &mut self,
        name: &str,
        version: &str,
        yanked: bool,
        actor: &Actor,
    ) -> Result<bool> {
        self.set_yanked_by(name, version, yanked, Some(actor))
    }

    pub(crate) fn set_yanked_by(
        &mut self,
        name: &str,
        version: &str,
        yanked: bool,
        actor: Option<&Actor>,
    ) -> Result<bool> {
        let shown = self.shown.clone();
        let (tx, sql) = self.begin_write()?;
        let sql = &sql;
        let found: Option<(i64, i64, bool, Vec<u8>)> = tx
            .query_row(
                "SELECT v.id, v.skill_id, v.yanked, v.skill_digest FROM version v \
                 JOIN skill s ON s.id = v.skill_id WHERE s.name = ?1 AND v.version = ?2",
                [name, version],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(sql)?;
        let Some((id, skill_id, was, digest)) = found else {
            let mut held: Vec<(String, bool)> = tx
                .prepare(
                    "SELECT v.version, v.yanked FROM version v JOIN skill s ON s.id = v.skill_id \
                     WHERE s.name = ?1",
                )
                .and_then(|mut stmt| {
                    stmt.query_map([name], |r| Ok((r.get(0)?, r.get(1)?)))
                        .and_then(Iterator::collect)
                })
                .map_err(sql)?;
            held.sort_by(|a, b| order::compare(&a.0, &b.0));
            return Err(RegistryError::NotFound(if held.is_empty() {
                format!("{name}@{version}: {shown} holds no skill named {name}")
            } else {
                let shown_versions: Vec<String> = held
                    .iter()
                    .map(|(v, y)| {
                        if *y {
                            format!("{v} (yanked)")
                        } else {
                            v.clone()
                        }
                    })
                    .collect();
                format!(
                    "{name}@{version}: no such version; the versions of {name} in {shown} are {}",
                    shown_versions.join(", ")
                )
            }));
        };
        if was == yanked {
            return Ok(false);
        }
        tx.execute(
            "UPDATE version SET yanked = ?2 WHERE id = ?1",
            params![id, yanked],
        )
        .map_err(sql)?;
        refresh_latest(&tx, skill_id).map_err(sql)?;
        let change = if yanked {
            crate::feed::ChangeAction::Yank
        } else {
            crate::feed::ChangeAction::Unyank
        };
        crate::feed::append(&tx, name, version, change).map_err(sql)?;
        if let Some(actor) = actor {
            let action = if yanked {
                AuditAction::Yank
            } else {
                AuditAction::Unyank
            };
            super::audit::record(&tx, actor, action, name, version, &digest).map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(true)
    }
}

/// Points the skill's `latest` tag at its highest non-yanked version (or removes it), and
/// rewrites the skill's search row to match. Runs inside the caller's write transaction.
pub(super) fn refresh_latest(conn: &Connection, skill_id: i64) -> rusqlite::Result<()> {
    let mut stmt =
        conn.prepare_cached("SELECT id, version FROM version WHERE skill_id = ?1 AND yanked = 0")?;
    let live: Vec<(i64, String)> = stmt
        .query_map([skill_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(Iterator::collect)?;
    let best = order::highest(live);
    // Cached: a publish of many skills runs these once per version.
    let current: Option<i64> = conn
        .prepare_cached("SELECT version_id FROM tag WHERE skill_id = ?1 AND tag = ?2")?
        .query_row(params![skill_id, LATEST], |r| r.get(0))
        .optional()?;
    if best == current {
        return Ok(());
    }
    conn.prepare_cached("DELETE FROM skill_search WHERE rowid = ?1")?
        .execute([skill_id])?;
    match best {
        Some(version_id) => {
            conn.prepare_cached(
                "INSERT INTO tag (skill_id, tag, version_id) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (skill_id, tag) DO UPDATE SET version_id = excluded.version_id",
            )?
            .execute(params![skill_id, LATEST, version_id])?;
            conn.prepare_cached(
                "INSERT INTO skill_search (rowid, name, description, body) \
                 SELECT s.id, s.name, v.description, x.body FROM version v \
                 JOIN skill s ON s.id = v.skill_id JOIN version_text x ON x.version_id = v.id \
                 WHERE v.id = ?1",
            )?
            .execute([version_id])?;
        }
        None => {
            conn.execute(
                "DELETE FROM tag WHERE skill_id = ?1 AND tag = ?2",
                params![skill_id, LATEST],
            )?;
        }
    }
    Ok(())
}
