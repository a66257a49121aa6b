//! Reading a registry (versions, releases, search, files for the source), yanking, the
//! `latest` tag, and the consistency check.

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::{Registry, RegistryError, Result, fts, order};
use crate::digest::{self, Manifest};
use crate::source::FileEntry;

/// The tag that names a skill's highest non-yanked version.
pub(super) const LATEST: &str = "latest";

/// Blobs up to this size are read with the row; larger ones are streamed through incremental
/// blob I/O in chunks of this size.
const INLINE_BLOB: i64 = 64 * 1024;

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
    /// bm25 relevance (lower is better; name matches weigh most).
    pub score: f64,
}

/// What [`Registry::check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// Blobs hashed.
    pub blobs: u64,
    /// Versions whose files were checked against their skill digest and manifest.
    pub versions: u64,
    /// Every problem, one sentence each; empty when the registry is sound.
    pub problems: Vec<String>,
}

impl CheckReport {
    /// Whether nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// A root resolved to one version (what a [`RegistrySource`](crate::source::RegistrySource)
/// pins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pin {
    pub(crate) version_id: i64,
    pub(crate) name: String,
    pub(crate) version: String,
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
            digest: format!("sha256:{}", hex::encode(digest)),
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

    /// One version (yanked or not): its listing, manifest, body and signatures.
    pub fn get(&self, name: &str, version: &str) -> Result<Option<Release>> {
        let sql = format!(
            "SELECT {INFO_COLUMNS}, v.manifest, v.body FROM version v \
             JOIN skill s ON s.id = v.skill_id WHERE s.name = ?1 AND v.version = ?2"
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
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT key_id, format, signature FROM signature WHERE version_id = ?1 \
                 ORDER BY key_id",
            )
            .map_err(|e| self.sql(e))?;
        let signatures = stmt
            .query_map([id], |r| {
                Ok(StoredSignature {
                    key_id: r.get(0)?,
                    format: r.get(1)?,
                    text: r.get(2)?,
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.sql(e))?;
        Ok(Some(Release {
            info,
            manifest,
            body,
            signatures,
        }))
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
                score: r.get(3)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.sql(e))
    }

    /// Yanks `name@version`: it leaves `latest` and search but stays readable by version.
    /// Returns whether anything changed (`false` when it was already yanked).
    pub fn yank(&mut self, name: &str, version: &str) -> Result<bool> {
        self.set_yanked(name, version, true)
    }

    /// Undoes [`yank`](Self::yank). Returns whether anything changed.
    pub fn unyank(&mut self, name: &str, version: &str) -> Result<bool> {
        self.set_yanked(name, version, false)
    }

    fn set_yanked(&mut self, name: &str, version: &str, yanked: bool) -> Result<bool> {
        if self.read_only {
            return Err(RegistryError::ReadOnly {
                path: self.shown.clone(),
            });
        }
        let shown = &self.shown;
        let sql = |source| RegistryError::Sqlite {
            path: shown.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let found: Option<(i64, i64, bool)> = tx
            .query_row(
                "SELECT v.id, v.skill_id, v.yanked FROM version v JOIN skill s ON s.id = v.skill_id \
                 WHERE s.name = ?1 AND v.version = ?2",
                [name, version],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(sql)?;
        let Some((id, skill_id, was)) = found else {
            return Err(RegistryError::NotFound(format!(
                "{name}@{version} in {shown}"
            )));
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
        tx.commit().map_err(sql)?;
        Ok(true)
    }

    /// Checks the whole registry: SQLite's `integrity_check` and foreign keys, every blob
    /// against its sha256 (streamed), and every version's files against its skill digest and
    /// manifest. Reads only.
    pub fn check(&self) -> Result<CheckReport> {
        let mut report = CheckReport::default();
        let sql = |e| self.sql(e);
        let mut stmt = self.conn.prepare("PRAGMA integrity_check").map_err(sql)?;
        let lines: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .and_then(Iterator::collect)
            .map_err(sql)?;
        if lines != ["ok"] {
            report
                .problems
                .extend(lines.into_iter().map(|l| format!("integrity_check: {l}")));
        }
        let mut stmt = self.conn.prepare("PRAGMA foreign_key_check").map_err(sql)?;
        let fk: Vec<String> = stmt
            .query_map([], |r| {
                Ok(format!(
                    "foreign key: {} row {:?}",
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<i64>>(1)?
                ))
            })
            .and_then(Iterator::collect)
            .map_err(sql)?;
        report.problems.extend(fk);

        let mut stmt = self
            .conn
            .prepare("SELECT id, sha256, size FROM blob ORDER BY id")
            .map_err(sql)?;
        let blobs: Vec<(i64, Vec<u8>, i64)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(Iterator::collect)
            .map_err(sql)?;
        for (id, sha, size) in blobs {
            report.blobs += 1;
            let (actual, len) = hash_blob(&self.conn, id).map_err(sql)?;
            if actual[..] != sha[..] || len != size {
                report.problems.push(format!(
                    "blob {id}: {len} bytes hashing to sha256:{}, stored as {size} bytes sha256:{}",
                    hex::encode(actual),
                    hex::encode(&sha)
                ));
            }
        }

        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.name, v.version, v.id, v.skill_digest, v.manifest FROM version v \
                 JOIN skill s ON s.id = v.skill_id ORDER BY v.id",
            )
            .map_err(sql)?;
        let versions: Vec<(String, String, i64, Vec<u8>, String)> = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .and_then(Iterator::collect)
            .map_err(sql)?;
        let mut files = self
            .conn
            .prepare(
                "SELECT f.path, b.sha256, b.size, f.executable FROM file f \
                 JOIN blob b ON b.id = f.blob_id WHERE f.version_id = ?1 ORDER BY f.path",
            )
            .map_err(sql)?;
        for (name, version, id, stored, manifest_json) in versions {
            report.versions += 1;
            let what = format!("{name}@{version}");
            let rows: Vec<(String, Vec<u8>, i64, bool)> = files
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .and_then(Iterator::collect)
                .map_err(sql)?;
            if rows.is_empty() {
                report.problems.push(format!("{what}: no files"));
                continue;
            }
            let hashes = rows.iter().filter_map(|(p, h, ..)| {
                <[u8; 32]>::try_from(&h[..]).ok().map(|h| (p.as_str(), h))
            });
            let recomputed = digest::tree_digest(hashes);
            let stored = format!("sha256:{}", hex::encode(&stored));
            if recomputed != stored {
                report.problems.push(format!(
                    "{what}: its files hash to {recomputed}, stored skill digest {stored}"
                ));
            }
            match serde_json::from_str::<Manifest>(&manifest_json) {
                Ok(m) => {
                    let listed: Vec<(String, u64, String, bool)> = rows
                        .iter()
                        .map(|(p, h, s, x)| {
                            (
                                p.clone(),
                                *s as u64,
                                format!("sha256:{}", hex::encode(h)),
                                *x,
                            )
                        })
                        .collect();
                    let claimed: Vec<(String, u64, String, bool)> = m
                        .files
                        .iter()
                        .map(|f| (f.path.clone(), f.size, f.digest.clone(), f.executable))
                        .collect();
                    if m.name != name
                        || m.version != version
                        || m.digest != stored
                        || listed != claimed
                    {
                        report
                            .problems
                            .push(format!("{what}: manifest disagrees with the stored files"));
                    }
                }
                Err(e) => report
                    .problems
                    .push(format!("{what}: manifest is not valid JSON: {e}")),
            }
        }
        Ok(report)
    }

    // --- For RegistrySource -----------------------------------------------------------------

    /// The `latest` version of every skill, by name in byte order.
    pub(crate) fn pins(&self) -> Result<Vec<Pin>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT v.id, s.name, v.version FROM tag t JOIN skill s ON s.id = t.skill_id \
                 JOIN version v ON v.id = t.version_id WHERE t.tag = 'latest' ORDER BY s.name",
            )
            .map_err(|e| self.sql(e))?;
        stmt.query_map([], |r| {
            Ok(Pin {
                version_id: r.get(0)?,
                name: r.get(1)?,
                version: r.get(2)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.sql(e))
    }

    /// `name` resolved to its `latest` version, or `name@version` to that version (yanked or not).
    pub(crate) fn resolve(&self, name: &str, version: Option<&str>) -> Result<Option<Pin>> {
        let (sql, args): (&str, Vec<&str>) = match version {
            None => (
                "SELECT v.id, s.name, v.version FROM skill s \
                 JOIN tag t ON t.skill_id = s.id AND t.tag = 'latest' \
                 JOIN version v ON v.id = t.version_id WHERE s.name = ?1",
                vec![name],
            ),
            Some(version) => (
                "SELECT v.id, s.name, v.version FROM skill s JOIN version v ON v.skill_id = s.id \
                 WHERE s.name = ?1 AND v.version = ?2",
                vec![name, version],
            ),
        };
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sql(e))?;
        stmt.query_row(rusqlite::params_from_iter(args), |r| {
            Ok(Pin {
                version_id: r.get(0)?,
                name: r.get(1)?,
                version: r.get(2)?,
            })
        })
        .optional()
        .map_err(|e| self.sql(e))
    }

    /// The files of a version, by path in byte order.
    pub(crate) fn version_files(&self, version_id: i64) -> Result<Vec<FileEntry>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.path, b.size, f.executable FROM file f JOIN blob b ON b.id = f.blob_id \
                 WHERE f.version_id = ?1 ORDER BY f.path",
            )
            .map_err(|e| self.sql(e))?;
        stmt.query_map([version_id], |r| {
            Ok(FileEntry {
                path: r.get(0)?,
                size: r.get::<_, i64>(1)? as u64,
                executable: r.get(2)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.sql(e))
    }

    /// The bytes of one file of a version, hashed again: a blob that does not hash to its
    /// address is [`RegistryError::Corrupt`]. `None` when the version has no such file.
    pub(crate) fn read_file(&self, version_id: i64, path: &str) -> Result<Option<Bytes>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT b.id, b.sha256, CASE WHEN b.size <= ?3 THEN b.content END \
                 FROM file f JOIN blob b ON b.id = f.blob_id \
                 WHERE f.version_id = ?1 AND f.path = ?2",
            )
            .map_err(|e| self.sql(e))?;
        type Row = (i64, Vec<u8>, Option<Vec<u8>>);
        let row: Option<Row> = stmt
            .query_row(params![version_id, path, INLINE_BLOB], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((id, sha, inline)) = row else {
            return Ok(None);
        };
        let bytes = match inline {
            Some(bytes) => bytes,
            None => read_blob(&self.conn, id).map_err(|e| self.sql(e))?,
        };
        let actual = digest::sha256(&bytes);
        if actual[..] != sha[..] {
            return Err(RegistryError::Corrupt {
                path: self.shown.clone(),
                what: format!("file {path} (blob {id})"),
                expected: format!("sha256:{}", hex::encode(&sha)),
                actual: format!("sha256:{}", hex::encode(actual)),
            });
        }
        Ok(Some(Bytes::from(bytes)))
    }
}

/// Reads a whole blob through incremental blob I/O.
fn read_blob(conn: &Connection, id: i64) -> rusqlite::Result<Vec<u8>> {
    let blob = conn.blob_open(rusqlite::MAIN_DB, "blob", "content", id, true)?;
    let mut buf = vec![0u8; blob.len()];
    blob.read_at_exact(&mut buf, 0)?;
    Ok(buf)
}

/// Streams a blob through sha256 in chunks: `(hash, length)`.
fn hash_blob(conn: &Connection, id: i64) -> rusqlite::Result<([u8; 32], i64)> {
    let blob = conn.blob_open(rusqlite::MAIN_DB, "blob", "content", id, true)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; INLINE_BLOB as usize];
    let mut at = 0;
    while at < blob.len() {
        let n = blob.read_at(&mut buf, at)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        at += n;
    }
    Ok((hasher.finalize().into(), at as i64))
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
    let current: Option<i64> = conn
        .query_row(
            "SELECT version_id FROM tag WHERE skill_id = ?1 AND tag = ?2",
            params![skill_id, LATEST],
            |r| r.get(0),
        )
        .optional()?;
    if best == current {
        return Ok(());
    }
    conn.execute("DELETE FROM skill_search WHERE rowid = ?1", [skill_id])?;
    match best {
        Some(version_id) => {
            conn.execute(
                "INSERT INTO tag (skill_id, tag, version_id) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (skill_id, tag) DO UPDATE SET version_id = excluded.version_id",
                params![skill_id, LATEST, version_id],
            )?;
            conn.execute(
                "INSERT INTO skill_search (rowid, name, description, body) \
                 SELECT s.id, s.name, v.description, v.body FROM version v \
                 JOIN skill s ON s.id = v.skill_id WHERE v.id = ?1",
                [version_id],
            )?;
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
