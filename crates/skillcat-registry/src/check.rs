//! [`Registry::check`]: the whole registry verified, from SQLite's integrity check down to
//! every blob's hash.

use rusqlite::Connection;
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::{Registry, Result};
use crate::digest::{self, Manifest};

/// Blobs are streamed through the hash in chunks of this size.
const CHUNK: usize = 64 * 1024;

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

impl Registry {
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
                    crate::digest::to_hex(actual),
                    crate::digest::to_hex(&sha)
                ));
            }
        }

        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.name, v.version, v.id, v.skill_digest, x.manifest FROM version v \
                 JOIN skill s ON s.id = v.skill_id \
                 LEFT JOIN version_text x ON x.version_id = v.id ORDER BY v.id",
            )
            .map_err(sql)?;
        // name, version, id, skill digest, manifest JSON.
        type VersionRow = (String, String, i64, Vec<u8>, Option<String>);
        let versions: Vec<VersionRow> = stmt
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
            let rows: Vec<(String, Vec<u8>, i64, bool)> = files
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .and_then(Iterator::collect)
                .map_err(sql)?;
            check_version(
                &name,
                &version,
                &stored,
                manifest_json.as_deref(),
                &rows,
                &mut report.problems,
            );
        }
        Ok(report)
    }
}

/// Checks one version's files against its stored skill digest and manifest, whatever the
/// engine: `files` are `(path, sha256, size, executable)` in path byte order; each problem
/// found is pushed to `problems`, one sentence each.
pub(crate) fn check_version(
    name: &str,
    version: &str,
    stored: &[u8],
    manifest_json: Option<&str>,
    rows: &[(String, Vec<u8>, i64, bool)],
    problems: &mut Vec<String>,
) {
    let what = format!("{name}@{version}");
    if rows.is_empty() {
        problems.push(format!("{what}: no files"));
        return;
    }
    let hashes = rows
        .iter()
        .filter_map(|(p, h, ..)| <[u8; 32]>::try_from(&h[..]).ok().map(|h| (p.as_str(), h)));
    let recomputed = digest::tree_digest(hashes);
    let stored = format!("sha256:{}", crate::digest::to_hex(stored));
    if recomputed != stored {
        problems.push(format!(
            "{what}: its files hash to {recomputed}, stored skill digest {stored}"
        ));
    }
    let Some(manifest_json) = manifest_json else {
        problems.push(format!("{what}: no manifest and body row"));
        return;
    };
    match serde_json::from_str::<Manifest>(manifest_json) {
        Ok(m) => {
            let listed: Vec<(String, u64, String, bool)> = rows
                .iter()
                .map(|(p, h, s, x)| {
                    (
                        p.clone(),
                        *s as u64,
                        format!("sha256:{}", crate::digest::to_hex(h)),
                        *x,
                    )
                })
                .collect();
            let claimed: Vec<(String, u64, String, bool)> = m
                .files
                .iter()
                .map(|f| (f.path.clone(), f.size, f.digest.clone(), f.executable))
                .collect();
            if m.name != name || m.version != version || m.digest != stored || listed != claimed {
                problems.push(format!("{what}: manifest disagrees with the stored files"));
            }
        }
        Err(e) => problems.push(format!("{what}: manifest is not valid JSON: {e}")),
    }
}

/// Streams a blob through sha256 in chunks: `(hash, length)`.
fn hash_blob(conn: &Connection, id: i64) -> rusqlite::Result<([u8; 32], i64)> {
    let blob = conn.blob_open(rusqlite::MAIN_DB, "blob", "content", id, true)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
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
