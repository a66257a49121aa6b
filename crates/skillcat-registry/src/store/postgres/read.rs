//! The [`Store`] of a PostgreSQL registry: its reads here, its writes in `write.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::PgStore;
use crate::digest::{self, Manifest};
use crate::path::FileEntry;
use crate::store::{Change, ChangeAction, ChangePage, Engine, Imported, Store, VersionRecord};
use crate::{
    Actor, AuditEntry, CheckReport, Pin, Prepared, Published, RegistryError, Release, Result,
    SearchHit, StoredSignature, VersionInfo, order,
};

/// The most changes one page holds, whatever is asked (as a registry file's feed).
const MAX_PAGE: usize = 1000;

/// `published_at` as RFC 3339 UTC, as the SQLite registry writes it.
pub(super) const RFC3339: &str =
    "to_char(to_timestamp({}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

fn rfc3339(column: &str) -> String {
    RFC3339.replace("{}", column)
}

/// The columns [`info_of`] reads, over `v` (version) and `s` (skill).
fn info_columns() -> String {
    format!(
        "s.name, v.version, v.skill_digest, v.description, v.published_at, {}, v.yanked, \
         coalesce(v.id = (SELECT t.version_id FROM tag t WHERE t.skill_id = s.id \
         AND t.tag = 'latest'), false), \
         (SELECT string_agg(g.key_id, ',') FROM signature g WHERE g.version_id = v.id), v.id",
        rfc3339("v.published_at")
    )
}

pub(super) fn info_of(row: &Row) -> (VersionInfo, i64) {
    let digest: &[u8] = row.get(2);
    let signed: Option<String> = row.get(8);
    let mut signed_by: Vec<String> = signed
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    signed_by.sort();
    (
        VersionInfo {
            name: row.get(0),
            version: row.get(1),
            digest: format!("sha256:{}", digest::to_hex(digest)),
            description: row.get(3),
            published_at: row.get(4),
            published: row.get(5),
            yanked: row.get(6),
            latest: row.get(7),
            signed_by,
        },
        row.get(9),
    )
}

fn pin_of(row: &Row) -> Pin {
    Pin {
        version_id: row.get(0),
        name: row.get(1),
        version: row.get(2),
        yanked: row.get(3),
    }
}

fn sort_by_name_then_version(out: &mut [VersionInfo]) {
    out.sort_by(|a, b| {
        a.name
            .as_bytes()
            .cmp(b.name.as_bytes())
            .then_with(|| order::compare(&a.version, &b.version))
    });
}

impl PgStore {
    async fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(|e| self.db(e))?;
        client.query(&stmt, params).await.map_err(|e| self.db(e))
    }

    async fn query_opt(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        Ok(self.query(sql, params).await?.into_iter().next())
    }

    async fn versions_where(&self, filter: &str, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        let sql = format!(
            "SELECT {} FROM version v JOIN skill s ON s.id = v.skill_id \
             WHERE {filter} AND ($1::text IS NULL OR s.name = $1)",
            info_columns()
        );
        let mut out: Vec<VersionInfo> = self
            .query(&sql, &[&name])
            .await?
            .iter()
            .map(|r| info_of(r).0)
            .collect();
        sort_by_name_then_version(&mut out);
        Ok(out)
    }

    /// The bytes of a blob, from the table or the object store, hashed again.
    pub(super) async fn blob_bytes(
        &self,
        sha: &[u8],
        inline: Option<Vec<u8>>,
        what: impl Fn() -> String,
    ) -> Result<Bytes> {
        let bytes = match (inline, &self.blobs) {
            (Some(bytes), _) => Bytes::from(bytes),
            (None, Some(store)) => {
                let key = <[u8; 32]>::try_from(sha).unwrap_or([0; 32]);
                store
                    .get(&key)
                    .await?
                    .ok_or_else(|| RegistryError::Corrupt {
                        path: self.shown.clone(),
                        what: what(),
                        expected: format!("sha256:{}", digest::to_hex(sha)),
                        actual: format!("nothing (absent from {})", store.url()),
                    })?
            }
            (None, None) => {
                return Err(RegistryError::Corrupt {
                    path: self.shown.clone(),
                    what: what(),
                    expected: format!("sha256:{}", digest::to_hex(sha)),
                    actual: "nothing (its bytes are in object storage, none is configured)".into(),
                });
            }
        };
        let actual = digest::sha256(&bytes);
        if actual[..] != sha[..] {
            return Err(RegistryError::Corrupt {
                path: self.shown.clone(),
                what: what(),
                expected: format!("sha256:{}", digest::to_hex(sha)),
                actual: format!("sha256:{}", digest::to_hex(actual)),
            });
        }
        Ok(bytes)
    }

    async fn version_id(&self, name: &str, version: &str) -> Result<Option<Pin>> {
        Ok(self
            .query_opt(
                "SELECT v.id, s.name, v.version, v.yanked FROM skill s \
                 JOIN version v ON v.skill_id = s.id WHERE s.name = $1 AND v.version = $2",
                &[&name, &version],
            )
            .await?
            .map(|r| pin_of(&r)))
    }

    async fn signatures_of(&self, version_id: i64) -> Result<Vec<StoredSignature>> {
        Ok(self
            .query(
                "SELECT key_id, format, signature FROM signature WHERE version_id = $1 \
                 ORDER BY key_id COLLATE \"C\"",
                &[&version_id],
            )
            .await?
            .iter()
            .map(|r| StoredSignature {
                key_id: r.get(0),
                format: r.get(1),
                text: r.get(2),
            })
            .collect())
    }

    async fn search_in(
        &self,
        phrases: &[String],
        offset: usize,
        limit: usize,
        deadline: Duration,
    ) -> Result<(Vec<SearchHit>, usize)> {
        // One phraseto_tsquery per phrase, AND-ed: each parameter is plain words (the same
        // capped tokens the SQLite search sends), so no user text is ever query syntax.
        let query = (1..=phrases.len())
            .map(|i| format!("phraseto_tsquery('simple', ${i})"))
            .collect::<Vec<_>>()
            .join(" && ");
        let n = phrases.len();
        let sql = format!(
            "WITH q AS (SELECT {query} AS q), \
             hit AS MATERIALIZED (SELECT x.skill_id, ts_rank(x.document, q.q) AS score \
                     FROM skill_search x, q WHERE x.document @@ q.q) \
             SELECT s.name, v.version, v.description, hit.score::float8, count(*) OVER () \
             FROM hit JOIN skill s ON s.id = hit.skill_id \
             JOIN tag t ON t.skill_id = s.id AND t.tag = 'latest' \
             JOIN version v ON v.id = t.version_id \
             ORDER BY hit.score DESC, s.name COLLATE \"C\" OFFSET ${} LIMIT ${}",
            n + 1,
            n + 2
        );
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut params: Vec<&(dyn ToSql + Sync)> =
            phrases.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        params.push(&offset);
        params.push(&limit);
        let mut client = self.client().await?;
        // The deadline is kept here, not by a transaction's statement_timeout (BEGIN, SET and
        // COMMIT were three of a search's four round trips): past it, the server is asked to
        // cancel the statement (preparing it included, which waits on locks too), as
        // statement_timeout would, and the search is interrupted.
        let cancel = client.cancel_token();
        let search = async {
            let stmt = client.prepare_cached(&sql).await?;
            client.query(&stmt, &params).await
        };
        let rows = match tokio::time::timeout(deadline, search).await {
            Ok(rows) => rows.map_err(|e| self.db(e))?,
            Err(_) => {
                let _ = cancel.cancel_query(self.tls.clone()).await;
                return Err(RegistryError::Postgres {
                    what: self.shown.clone(),
                    code: Some("57014".into()),
                    message: format!(
                        "the search was cancelled after {} ms (its deadline)",
                        deadline.as_millis()
                    ),
                });
            }
        };
        let mut total = rows.first().map_or(0, |r| r.get::<_, i64>(4) as usize);
        if rows.is_empty() && offset > 0 {
            // Past the last page: counted alone.
            let count = format!(
                "SELECT count(*) FROM skill_search x JOIN tag t ON t.skill_id = x.skill_id \
                 AND t.tag = 'latest' WHERE x.document @@ ({query})"
            );
            let ms = deadline.as_millis().clamp(1, i32::MAX as u128);
            let tx = client.transaction().await.map_err(|e| self.db(e))?;
            tx.batch_execute(&format!("SET LOCAL statement_timeout = {ms}"))
                .await
                .map_err(|e| self.db(e))?;
            let row = tx
                .query_one(&count, &params[..n])
                .await
                .map_err(|e| self.db(e))?;
            total = row.get::<_, i64>(0) as usize;
        }
        let hits = rows
            .iter()
            .map(|r| SearchHit {
                name: r.get(0),
                version: r.get(1),
                description: r.get(2),
                score: r.get::<_, f64>(3).max(0.0),
            })
            .collect();
        Ok((hits, total))
    }
}

/// Versions a batch must write before the planner's statistics are refreshed after it.
const ANALYZE_AFTER: usize = 100;

#[async_trait]
impl Store for PgStore {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn display(&self) -> &str {
        &self.shown
    }

    async fn schema_version(&self) -> Result<u32> {
        let client = self.client().await?;
        Ok(super::migrate::applied(&client, &self.shown)
            .await?
            .unwrap_or(0))
    }

    async fn pins(&self) -> Result<Vec<Pin>> {
        let rows = self
            .query(
                "SELECT v.id, s.name, v.version, v.yanked FROM tag t \
                 JOIN skill s ON s.id = t.skill_id JOIN version v ON v.id = t.version_id \
                 WHERE t.tag = 'latest'",
                &[],
            )
            .await?;
        let mut pins: Vec<Pin> = rows.iter().map(pin_of).collect();
        pins.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(pins)
    }

    async fn resolve(&self, name: &str, version: Option<&str>) -> Result<Option<Pin>> {
        match version {
            Some(version) => self.version_id(name, version).await,
            None => Ok(self
                .query_opt(
                    "SELECT v.id, s.name, v.version, v.yanked FROM skill s \
                     JOIN tag t ON t.skill_id = s.id AND t.tag = 'latest' \
                     JOIN version v ON v.id = t.version_id WHERE s.name = $1",
                    &[&name],
                )
                .await?
                .map(|r| pin_of(&r))),
        }
    }

    async fn version_files(&self, pin: &Pin) -> Result<Vec<FileEntry>> {
        let rows = self
            .query(
                "SELECT f.path, b.size, f.executable FROM file f JOIN blob b ON b.sha256 = f.sha256 \
                 WHERE f.version_id = $1",
                &[&pin.version_id],
            )
            .await?;
        let mut files: Vec<FileEntry> = rows
            .iter()
            .map(|r| FileEntry {
                path: r.get(0),
                size: r.get::<_, i64>(1) as u64,
                executable: r.get(2),
                private: false,
            })
            .collect();
        // Byte order, whatever the database's collation.
        files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        Ok(files)
    }

    async fn read_file(&self, pin: &Pin, path: &str) -> Result<Option<Bytes>> {
        let Some(row) = self
            .query_opt(
                "SELECT b.sha256, b.content FROM file f JOIN blob b ON b.sha256 = f.sha256 \
                 WHERE f.version_id = $1 AND f.path = $2",
                &[&pin.version_id, &path],
            )
            .await?
        else {
            return Ok(None);
        };
        let sha: Vec<u8> = row.get(0);
        let bytes = self
            .blob_bytes(&sha, row.get(1), || format!("file {path}"))
            .await?;
        Ok(Some(bytes))
    }

    async fn signatures(&self, pin: &Pin) -> Result<Vec<StoredSignature>> {
        self.signatures_of(pin.version_id).await
    }

    async fn version_contents(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<Vec<(FileEntry, Bytes)>>> {
        let Some(pin) = self.version_id(name, version).await? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for f in self.version_files(&pin).await? {
            let bytes = self
                .read_file(&pin, &f.path)
                .await?
                .ok_or_else(|| RegistryError::NotFound(format!("{name}@{version}/{}", f.path)))?;
            out.push((f, bytes));
        }
        Ok(Some(out))
    }

    async fn versions(&self, name: &str) -> Result<Vec<VersionInfo>> {
        self.versions_where("true", Some(name)).await
    }

    async fn all_versions(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        self.versions_where("true", name).await
    }

    async fn yanked(&self, name: Option<&str>) -> Result<Vec<VersionInfo>> {
        self.versions_where("v.yanked", name).await
    }

    async fn all_yanked(&self) -> Result<Vec<(String, Vec<String>)>> {
        let rows = self
            .query(
                "SELECT s.name, v.version FROM skill s JOIN version v ON v.skill_id = s.id \
                 WHERE NOT EXISTS (SELECT 1 FROM tag t WHERE t.skill_id = s.id \
                 AND t.tag = 'latest')",
                &[],
            )
            .await?;
        let mut by_name: std::collections::BTreeMap<Vec<u8>, (String, Vec<String>)> =
            Default::default();
        for r in &rows {
            let name: String = r.get(0);
            by_name
                .entry(name.as_bytes().to_vec())
                .or_insert_with(|| (name.clone(), Vec::new()))
                .1
                .push(r.get(1));
        }
        Ok(by_name
            .into_values()
            .map(|(name, mut versions)| {
                versions.sort_by(|a, b| order::compare(a, b));
                (name, versions)
            })
            .collect())
    }

    async fn latest(&self, name: &str) -> Result<Option<VersionInfo>> {
        let sql = format!(
            "SELECT {} FROM skill s JOIN tag t ON t.skill_id = s.id AND t.tag = 'latest' \
             JOIN version v ON v.id = t.version_id WHERE s.name = $1",
            info_columns()
        );
        Ok(self.query_opt(&sql, &[&name]).await?.map(|r| info_of(&r).0))
    }

    async fn get(&self, name: &str, version: &str) -> Result<Option<Release>> {
        let sql = format!(
            "SELECT {}, v.manifest, v.body FROM version v JOIN skill s ON s.id = v.skill_id \
             WHERE s.name = $1 AND v.version = $2",
            info_columns()
        );
        let Some(row) = self.query_opt(&sql, &[&name, &version]).await? else {
            return Ok(None);
        };
        let (info, id) = info_of(&row);
        let manifest: Manifest =
            serde_json::from_str(row.get(10)).map_err(|e| RegistryError::Postgres {
                what: self.shown.clone(),
                code: None,
                message: format!("{name}@{version}: its stored manifest is not valid: {e}"),
            })?;
        Ok(Some(Release {
            info,
            manifest,
            body: row.get(11),
            signatures: self.signatures_of(id).await?,
        }))
    }

    async fn findings(&self, name: &str, version: &str) -> Result<Option<String>> {
        let row = self
            .query_opt(
                "SELECT f.findings FROM version v JOIN skill s ON s.id = v.skill_id \
                 LEFT JOIN version_findings f ON f.version_id = v.id \
                 WHERE s.name = $1 AND v.version = $2",
                &[&name, &version],
            )
            .await?;
        match row {
            Some(r) => Ok(r.get(0)),
            None => Err(RegistryError::NotFound(format!("{name}@{version}"))),
        }
    }

    async fn search_page(
        &self,
        query: &str,
        offset: usize,
        limit: usize,
        deadline: Duration,
    ) -> Result<(Vec<SearchHit>, usize)> {
        let Some(expr) = crate::fts_query(query) else {
            return Ok((Vec::new(), 0));
        };
        // The FTS5 expression is quoted phrases of letters and digits: its phrases, unquoted.
        let phrases: Vec<String> = expr
            .split('"')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_lowercase)
            .collect();
        self.search_in(&phrases, offset, limit, deadline).await
    }

    async fn audit(
        &self,
        limit: usize,
        before: Option<i64>,
        keep: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<AuditEntry>> {
        let mut out = Vec::new();
        let mut before = before.unwrap_or(i64::MAX);
        let page = limit.clamp(64, 1024) as i64;
        let sql = format!(
            "SELECT id, at, {}, token, action, name, version, digest, client FROM audit \
             WHERE id < $1 ORDER BY id DESC LIMIT $2",
            rfc3339("at")
        );
        while out.len() < limit {
            let rows = self.query(&sql, &[&before, &page]).await?;
            for r in &rows {
                before = r.get(0);
                if out.len() < limit && keep(r.get::<_, &str>(5)) {
                    out.push(AuditEntry {
                        id: r.get(0),
                        at: r.get(1),
                        time: r.get(2),
                        token: r.get(3),
                        action: r.get(4),
                        name: r.get(5),
                        version: r.get(6),
                        digest: format!("sha256:{}", digest::to_hex(r.get::<_, &[u8]>(7))),
                        client: r.get(8),
                    });
                }
            }
            if (rows.len() as i64) < page {
                break;
            }
        }
        Ok(out)
    }

    async fn publishers(&self, name: Option<&str>) -> Result<HashMap<(String, String), String>> {
        let rows = self
            .query(
                "SELECT name, version, token FROM audit WHERE action = 'publish' \
                 AND ($1::text IS NULL OR name = $1) ORDER BY id",
                &[&name],
            )
            .await?;
        let mut out = HashMap::new();
        for r in &rows {
            out.entry((r.get(0), r.get(1))).or_insert(r.get(2));
        }
        Ok(out)
    }

    async fn check(&self) -> Result<CheckReport> {
        super::write::check(self).await
    }

    async fn changes(&self, since: i64, limit: usize) -> Result<ChangePage> {
        let limit = limit.clamp(1, MAX_PAGE) as i64;
        let sql = format!(
            "SELECT seq, name, version, action, {} FROM change WHERE seq > $1 \
             ORDER BY seq LIMIT $2",
            rfc3339("at")
        );
        let rows = self.query(&sql, &[&since, &limit]).await?;
        let changes: Vec<Change> = rows
            .iter()
            .map(|r| Change {
                seq: r.get(0),
                name: r.get(1),
                version: r.get(2),
                action: match r.get::<_, &str>(3) {
                    "yank" => ChangeAction::Yank,
                    "unyank" => ChangeAction::Unyank,
                    _ => ChangeAction::Publish,
                },
                at: r.get(4),
            })
            .collect();
        let next = changes.last().map_or(since, |c| c.seq);
        Ok(ChangePage { changes, next })
    }

    async fn head(&self) -> Result<i64> {
        let row = self
            .query_opt("SELECT coalesce(max(seq), 0) FROM change", &[])
            .await?;
        Ok(row.map_or(0, |r| r.get(0)))
    }

    fn wake(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.wake.clone())
    }

    async fn commit(&self, prepared: Arc<Prepared>, actor: Option<Actor>) -> Result<Published> {
        super::write::commit(self, &prepared, actor.as_ref()).await
    }

    async fn commit_many(
        &self,
        prepared: Arc<Vec<Prepared>>,
        actor: Option<Actor>,
    ) -> Vec<Result<Published>> {
        // One transaction each: a version refused (or failing) leaves the others written.
        let mut out = Vec::with_capacity(prepared.len());
        for p in prepared.iter() {
            out.push(super::write::commit(self, p, actor.as_ref()).await);
        }
        // A batch can change the tables' sizes by orders of magnitude (a registry filled at
        // once): the planner is told now, not at autovacuum's next round, so that the first
        // searches after it are planned on what is there. Best effort: the versions are in.
        if out.iter().filter(|r| r.is_ok()).count() >= ANALYZE_AFTER
            && let Ok(client) = self.client().await
        {
            let _ = client
                .batch_execute("ANALYZE skill, tag, version, skill_search")
                .await;
        }
        out
    }

    async fn set_yanked(
        &self,
        name: &str,
        version: &str,
        yanked: bool,
        actor: Option<Actor>,
    ) -> Result<bool> {
        super::write::set_yanked(self, name, version, yanked, actor.as_ref()).await
    }

    async fn export(&self, name: &str, version: &str) -> Result<Option<VersionRecord>> {
        let Some(release) = self.get(name, version).await? else {
            return Ok(None);
        };
        let files = self
            .version_contents(name, version)
            .await?
            .unwrap_or_default();
        let findings = self.findings(name, version).await?;
        Ok(Some(VersionRecord {
            info: release.info,
            manifest: release.manifest,
            body: release.body,
            files,
            signatures: release.signatures,
            findings,
        }))
    }

    async fn import(&self, record: VersionRecord) -> Result<Imported> {
        super::write::import(self, &record).await
    }

    async fn import_audit(&self, entries: Vec<AuditEntry>) -> Result<usize> {
        super::write::import_audit(self, &entries).await
    }

    async fn blob_references(&self) -> Result<Option<crate::store::BlobReferences>> {
        let Some(blobs) = self.blobs.clone() else {
            return Ok(None);
        };
        let referenced = self.referenced_blobs().await?.into_iter().collect();
        Ok(Some((blobs, referenced)))
    }
}
