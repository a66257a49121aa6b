//! The audit log of a central registry: one row per write made on someone's behalf, written in
//! the transaction of the write itself.

use rusqlite::params;
use serde::Serialize;

use super::{Registry, RegistryError, Result};

/// Who asks for a write: recorded with it in the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The name of the token used (never the token).
    pub token: String,
    /// The client's address.
    pub client: String,
}

/// What an audited write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditAction {
    /// A new version was published.
    Publish,
    /// A signature was added to a version already published with the same content.
    Signature,
    /// A version was yanked.
    Yank,
    /// A version was unyanked.
    Unyank,
}

impl AuditAction {
    /// The action as the log stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Publish => "publish",
            AuditAction::Signature => "signature",
            AuditAction::Yank => "yank",
            AuditAction::Unyank => "unyank",
        }
    }
}

/// One row of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEntry {
    /// Its place in the log (increasing).
    pub id: i64,
    /// When, in Unix seconds.
    pub at: i64,
    /// The same instant as RFC 3339 UTC.
    pub time: String,
    /// The token's name.
    pub token: String,
    /// `publish`, `signature`, `yank` or `unyank`.
    pub action: String,
    /// The skill's name.
    pub name: String,
    /// The version.
    pub version: String,
    /// The version's skill digest, `sha256:<hex>`.
    pub digest: String,
    /// The client's address.
    pub client: String,
}

/// Appends one row inside the caller's write transaction.
pub(super) fn record(
    conn: &rusqlite::Connection,
    actor: &Actor,
    action: AuditAction,
    name: &str,
    version: &str,
    digest: &[u8],
) -> rusqlite::Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    conn.execute(
        "INSERT INTO audit (at, token, action, name, version, digest, client) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            now,
            actor.token,
            action.as_str(),
            name,
            version,
            digest,
            actor.client
        ],
    )?;
    Ok(())
}

impl Registry {
    /// The newest `limit` rows of the audit log with an id below `before` (all when `None`),
    /// newest first.
    pub fn audit(&self, limit: usize, before: Option<i64>) -> Result<Vec<AuditEntry>> {
        self.audit_matching(limit, before, |_| true)
    }

    /// The newest `limit` rows of the audit log with an id below `before` whose skill name
    /// `keep` accepts (a token's scopes), newest first. Rows are read newest first and only as
    /// far as needed.
    pub fn audit_matching(
        &self,
        limit: usize,
        before: Option<i64>,
        mut keep: impl FnMut(&str) -> bool,
    ) -> Result<Vec<AuditEntry>> {
        let sql = |source| RegistryError::Sqlite {
            path: self.shown.clone(),
            source,
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, at, strftime('%Y-%m-%dT%H:%M:%SZ', at, 'unixepoch'), token, action, \
                 name, version, digest, client FROM audit WHERE id < ?1 ORDER BY id DESC",
            )
            .map_err(sql)?;
        let rows = stmt.query_map(params![before.unwrap_or(i64::MAX)], |r| {
            let digest: Vec<u8> = r.get(7)?;
            Ok(AuditEntry {
                id: r.get(0)?,
                at: r.get(1)?,
                time: r.get(2)?,
                token: r.get(3)?,
                action: r.get(4)?,
                name: r.get(5)?,
                version: r.get(6)?,
                digest: format!("sha256:{}", crate::digest::to_hex(digest)),
                client: r.get(8)?,
            })
        });
        let mut out = Vec::new();
        for row in rows.map_err(sql)? {
            if out.len() >= limit {
                break;
            }
            let row = row.map_err(sql)?;
            if keep(&row.name) {
                out.push(row);
            }
        }
        Ok(out)
    }

    /// Who published each version (of the skill `name` alone when given), as the audit log
    /// records it: `(name, version)` → the token's name. A version published without a token
    /// (`skillcat registry publish` of the file) has no row, so it is not in the map.
    pub fn publishers(
        &self,
        name: Option<&str>,
    ) -> Result<std::collections::HashMap<(String, String), String>> {
        let sql = |source| RegistryError::Sqlite {
            path: self.shown.clone(),
            source,
        };
        // Oldest first, so the first publish of a version is the one kept (a version is
        // published once; later rows of it are signatures, yanks and unyanks).
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT name, version, token FROM audit WHERE action = 'publish' \
                 AND (?1 IS NULL OR name = ?1) ORDER BY id",
            )
            .map_err(sql)?;
        let rows = stmt.query_map(params![name], |r| {
            Ok(((r.get::<_, String>(0)?, r.get::<_, String>(1)?), r.get(2)?))
        });
        let mut out = std::collections::HashMap::new();
        for row in rows.map_err(sql)? {
            let (key, token) = row.map_err(sql)?;
            out.entry(key).or_insert(token);
        }
        Ok(out)
    }
}
