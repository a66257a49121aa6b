//! The writes of a PostgreSQL registry, one transaction each, and its check.
//!
//! A write that touches a skill first takes `pg_advisory_xact_lock` on the skill's confusable
//! skeleton, so writes to one skill (or to two look-alike names) run one at a time, as SQLite's
//! single writer would run them; writes to other skills run side by side. The change row comes
//! last, under the one change lock held to the commit, so `seq` follows commit order.

use deadpool_postgres::Transaction;

use super::{CHANGE_LOCK, CHANNEL, NAME_LOCK_CLASS, PgStore};
use crate::digest;
use crate::store::{ChangeAction, Imported, VersionRecord};
use crate::{
    Actor, AuditAction, AuditEntry, CheckReport, Outcome, Prepared, Published, RegistryError,
    Result, order,
};
use skillcat_core::lookalike;

/// The tag that names a skill's highest non-yanked version.
const LATEST: &str = "latest";

/// At most this much of a body is indexed for search (a `tsvector` holds at most 1 MB).
const INDEXED_BODY_CHARS: i32 = 200_000;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Runs `$sql` in the transaction, mapping errors to the store's.
/// Each statement is prepared once per connection (the pool's statement cache): a publish runs
/// a few statements per file, and preparing each anew doubled its round trips.
macro_rules! exec {
    ($store:expr, $tx:expr, $sql:expr, $($p:expr),*) => {
        match $tx.prepare_cached($sql).await {
            Ok(stmt) => $tx.execute(&stmt, &[$(&$p),*]).await.map_err(|e| $store.db(e)),
            Err(e) => Err($store.db(e)),
        }
    };
}

macro_rules! rows {
    ($store:expr, $tx:expr, $sql:expr, $($p:expr),*) => {
        match $tx.prepare_cached($sql).await {
            Ok(stmt) => $tx.query(&stmt, &[$(&$p),*]).await.map_err(|e| $store.db(e)),
            Err(e) => Err($store.db(e)),
        }
    };
}

async fn lock_name(store: &PgStore, tx: &Transaction<'_>, name: &str) -> Result<String> {
    let skeleton = lookalike::skeleton(name);
    exec!(
        store,
        tx,
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        NAME_LOCK_CLASS,
        skeleton
    )?;
    Ok(skeleton)
}

/// Appends the change row (numbered under the change lock, held to the commit) and notifies
/// the listeners, who hear of it only once the transaction commits.
async fn record_change(
    store: &PgStore,
    tx: &Transaction<'_>,
    name: &str,
    version: &str,
    action: ChangeAction,
) -> Result<i64> {
    exec!(store, tx, "SELECT pg_advisory_xact_lock($1)", CHANGE_LOCK)?;
    let rows = rows!(
        store,
        tx,
        "INSERT INTO change (seq, name, version, action, at) \
         SELECT coalesce(max(seq), 0) + 1, $1, $2, $3, $4 FROM change RETURNING seq",
        name,
        version,
        action.as_str(),
        now()
    )?;
    let seq: i64 = rows[0].get(0);
    exec!(
        store,
        tx,
        "SELECT pg_notify($1, $2)",
        CHANNEL,
        seq.to_string()
    )?;
    Ok(seq)
}

async fn record_audit(
    store: &PgStore,
    tx: &Transaction<'_>,
    actor: &Actor,
    action: AuditAction,
    name: &str,
    version: &str,
    digest: &[u8],
) -> Result<()> {
    exec!(
        store,
        tx,
        "INSERT INTO audit (at, token, action, name, version, digest, client) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        now(),
        actor.token,
        action.as_str(),
        name,
        version,
        digest,
        actor.client
    )?;
    Ok(())
}

/// The id of the skill `name`, added when new: refused when it looks like a name held or
/// mixes scripts (the caller holds the skeleton's lock).
async fn skill_id(
    store: &PgStore,
    tx: &Transaction<'_>,
    name: &str,
    skeleton: &str,
) -> Result<i64> {
    if let Some(r) = rows!(store, tx, "SELECT id FROM skill WHERE name = $1", name)?.first() {
        return Ok(r.get(0));
    }
    let existing = rows!(
        store,
        tx,
        "SELECT name FROM skill WHERE skeleton = $1 ORDER BY id LIMIT 1",
        skeleton
    )?;
    if let Some(r) = existing.first() {
        return Err(RegistryError::LookAlike {
            name: name.to_string(),
            existing: r.get(0),
        });
    }
    if let Some(scripts) = lookalike::mixed_scripts(name) {
        return Err(RegistryError::MixedScripts {
            name: name.to_string(),
            scripts,
        });
    }
    let rows = rows!(
        store,
        tx,
        "INSERT INTO skill (name, skeleton) VALUES ($1, $2) RETURNING id",
        name,
        skeleton
    )?;
    Ok(rows[0].get(0))
}

async fn is_latest(
    store: &PgStore,
    tx: &Transaction<'_>,
    skill: i64,
    version: i64,
) -> Result<bool> {
    let rows = rows!(
        store,
        tx,
        "SELECT version_id FROM tag WHERE skill_id = $1 AND tag = $2",
        skill,
        LATEST
    )?;
    Ok(rows.first().map(|r| r.get::<_, i64>(0)) == Some(version))
}

/// Points `latest` at the skill's highest non-yanked version (or removes it) and rewrites the
/// skill's search document to match.
async fn refresh_latest(store: &PgStore, tx: &Transaction<'_>, skill: i64) -> Result<()> {
    let live: Vec<(i64, String)> = rows!(
        store,
        tx,
        "SELECT id, version FROM version WHERE skill_id = $1 AND NOT yanked",
        skill
    )?
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect();
    let best = order::highest(live);
    let current = rows!(
        store,
        tx,
        "SELECT version_id FROM tag WHERE skill_id = $1 AND tag = $2",
        skill,
        LATEST
    )?
    .first()
    .map(|r| r.get::<_, i64>(0));
    if best == current {
        return Ok(());
    }
    exec!(
        store,
        tx,
        "DELETE FROM skill_search WHERE skill_id = $1",
        skill
    )?;
    match best {
        Some(version) => {
            exec!(
                store,
                tx,
                "INSERT INTO tag (skill_id, tag, version_id) VALUES ($1, $2, $3) \
                 ON CONFLICT (skill_id, tag) DO UPDATE SET version_id = excluded.version_id",
                skill,
                LATEST,
                version
            )?;
            exec!(
                store,
                tx,
                "INSERT INTO skill_search (skill_id, document) \
                 SELECT s.id, setweight(to_tsvector('simple', s.name), 'A') \
                 || setweight(to_tsvector('simple', v.description), 'B') \
                 || setweight(to_tsvector('simple', left(v.body, $2)), 'C') \
                 FROM version v JOIN skill s ON s.id = v.skill_id WHERE v.id = $1",
                version,
                INDEXED_BODY_CHARS
            )?;
        }
        None => {
            exec!(
                store,
                tx,
                "DELETE FROM tag WHERE skill_id = $1 AND tag = $2",
                skill,
                LATEST
            )?;
        }
    }
    Ok(())
}

/// Stores the blobs of a new version: in object storage first when the registry keeps them
/// there (before the commit: a row never lacks its bytes), then their rows. How many were new.
async fn store_blobs<'a>(
    store: &PgStore,
    tx: &Transaction<'_>,
    files: impl Iterator<Item = (&'a [u8; 32], &'a bytes::Bytes)>,
) -> Result<usize> {
    // In address order: two publishes sharing blobs then lock their rows in the same order,
    // so neither waits on the other in a cycle (a deadlock PostgreSQL would break by failing
    // one of them).
    let mut files: Vec<_> = files.collect();
    files.sort_by_key(|(sha, _)| **sha);
    files.dedup_by_key(|(sha, _)| **sha);
    let mut new = 0;
    for (sha, bytes) in files {
        let content: Option<&[u8]> = match &store.blobs {
            Some(blobs) => {
                blobs.put(sha, bytes.clone()).await?;
                None
            }
            None => Some(&bytes[..]),
        };
        new += exec!(
            store,
            tx,
            "INSERT INTO blob (sha256, size, content) VALUES ($1, $2, $3) \
             ON CONFLICT (sha256) DO NOTHING",
            &sha[..],
            bytes.len() as i64,
            content
        )? as usize;
    }
    Ok(new)
}

/// A version published again must be the same: the same files (its digest) and the same
/// manifest (executable bits).
fn check_same(p: &Prepared, stored: &[u8], manifest: &str) -> Result<()> {
    if stored != &p.digest[..] {
        return Err(RegistryError::Immutable {
            name: p.name().to_string(),
            version: p.version().to_string(),
            what: format!(
                "published sha256:{}, this is {}",
                digest::to_hex(stored),
                p.manifest.digest
            ),
        });
    }
    if manifest != p.manifest_json {
        return Err(RegistryError::Immutable {
            name: p.name().to_string(),
            version: p.version().to_string(),
            what: "same files, but the manifest differs (executable bits)".into(),
        });
    }
    Ok(())
}

/// Inserts a new version with its blobs, files, signature and findings; its id.
async fn insert_version(
    store: &PgStore,
    tx: &Transaction<'_>,
    p: &Prepared,
    skill: i64,
) -> Result<i64> {
    let rows = rows!(
        store,
        tx,
        "INSERT INTO version (skill_id, version, skill_digest, published_at, description, \
         manifest, body) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        skill,
        p.version(),
        &p.digest[..],
        p.published_at.unwrap_or_else(now),
        p.description,
        p.manifest_json,
        p.body
    )?;
    let id: i64 = rows[0].get(0);
    for f in &p.files {
        exec!(
            store,
            tx,
            "INSERT INTO file (version_id, path, path_fold, sha256, executable) \
             VALUES ($1, $2, $3, $4, $5)",
            id,
            f.path,
            f.fold,
            &f.sha256[..],
            f.executable
        )?;
    }
    if let Some(sig) = &p.signature {
        exec!(
            store,
            tx,
            "INSERT INTO signature (version_id, key_id, signature) VALUES ($1, $2, $3)",
            id,
            sig.key_id,
            sig.text
        )?;
    }
    if let Some(findings) = &p.findings {
        exec!(
            store,
            tx,
            "INSERT INTO version_findings (version_id, findings) VALUES ($1, $2)",
            id,
            findings
        )?;
    }
    Ok(id)
}

/// Stores `p` in one transaction (see [`Store::commit`](crate::store::Store::commit)).
pub(super) async fn commit(
    store: &PgStore,
    p: &Prepared,
    actor: Option<&Actor>,
) -> Result<Published> {
    let name = p.name().to_string();
    let version = p.version().to_string();
    let mut published = Published {
        name: name.clone(),
        version: version.clone(),
        digest: p.manifest.digest.clone(),
        outcome: Outcome::Published,
        files: p.files.len(),
        new_blobs: 0,
        signed_by: p.signed_by().map(str::to_string),
        signature_added: false,
        latest: false,
    };
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.db(e))?;
    let skeleton = lock_name(store, &tx, &name).await?;
    let skill = skill_id(store, &tx, &name, &skeleton).await?;
    let existing: Vec<(i64, String)> = rows!(
        store,
        tx,
        "SELECT id, version FROM version WHERE skill_id = $1",
        skill
    )?
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect();
    if let Some((id, _)) = existing.iter().find(|(_, v)| *v == version) {
        let row = &rows!(
            store,
            tx,
            "SELECT skill_digest, manifest FROM version WHERE id = $1",
            id
        )?[0];
        check_same(p, row.get(0), row.get(1))?;
        published.outcome = Outcome::Unchanged;
        if let Some(sig) = &p.signature {
            let n = exec!(
                store,
                tx,
                "INSERT INTO signature (version_id, key_id, signature) VALUES ($1, $2, $3) \
                 ON CONFLICT (version_id, key_id) DO NOTHING",
                id,
                sig.key_id,
                sig.text
            )?;
            published.signature_added = n > 0;
        }
        published.latest = is_latest(store, &tx, skill, *id).await?;
        if published.signature_added {
            if let Some(actor) = actor {
                let action = AuditAction::Signature;
                record_audit(store, &tx, actor, action, &name, &version, &p.digest).await?;
            }
            record_change(store, &tx, &name, &version, ChangeAction::Publish).await?;
            tx.commit().await.map_err(|e| store.db(e))?;
        }
        return Ok(published);
    }
    if let Some(twin) = order::same_precedence(&p.semver, existing.iter().map(|(_, v)| v.as_str()))
    {
        return Err(RegistryError::VersionConflict {
            name,
            version,
            existing: twin.to_string(),
        });
    }
    published.new_blobs =
        store_blobs(store, &tx, p.files.iter().map(|f| (&f.sha256, &f.bytes))).await?;
    let id = insert_version(store, &tx, p, skill).await?;
    published.signature_added = p.signature.is_some();
    refresh_latest(store, &tx, skill).await?;
    published.latest = is_latest(store, &tx, skill, id).await?;
    if let Some(actor) = actor {
        let action = AuditAction::Publish;
        record_audit(store, &tx, actor, action, &name, &version, &p.digest).await?;
    }
    record_change(store, &tx, &name, &version, ChangeAction::Publish).await?;
    tx.commit().await.map_err(|e| store.db(e))?;
    Ok(published)
}

/// Yanks or unyanks `name@version` in one transaction; whether anything changed.
pub(super) async fn set_yanked(
    store: &PgStore,
    name: &str,
    version: &str,
    yanked: bool,
    actor: Option<&Actor>,
) -> Result<bool> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.db(e))?;
    lock_name(store, &tx, name).await?;
    let found = rows!(
        store,
        tx,
        "SELECT v.id, v.skill_id, v.yanked, v.skill_digest FROM version v \
         JOIN skill s ON s.id = v.skill_id WHERE s.name = $1 AND v.version = $2",
        name,
        version
    )?;
    let Some(row) = found.first() else {
        let mut held: Vec<(String, bool)> = rows!(
            store,
            tx,
            "SELECT v.version, v.yanked FROM version v JOIN skill s ON s.id = v.skill_id \
             WHERE s.name = $1",
            name
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
        held.sort_by(|a, b| order::compare(&a.0, &b.0));
        let shown = &store.shown;
        return Err(RegistryError::NotFound(if held.is_empty() {
            format!("{name}@{version}: {shown} holds no skill named {name}")
        } else {
            let listed: Vec<String> = held
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
                listed.join(", ")
            )
        }));
    };
    let (id, skill, was): (i64, i64, bool) = (row.get(0), row.get(1), row.get(2));
    let digest: Vec<u8> = row.get(3);
    if was == yanked {
        return Ok(false);
    }
    exec!(
        store,
        tx,
        "UPDATE version SET yanked = $2 WHERE id = $1",
        id,
        yanked
    )?;
    refresh_latest(store, &tx, skill).await?;
    let (audit, change) = if yanked {
        (AuditAction::Yank, ChangeAction::Yank)
    } else {
        (AuditAction::Unyank, ChangeAction::Unyank)
    };
    if let Some(actor) = actor {
        record_audit(store, &tx, actor, audit, name, version, &digest).await?;
    }
    record_change(store, &tx, name, version, change).await?;
    tx.commit().await.map_err(|e| store.db(e))?;
    Ok(true)
}

/// Stores a version another registry holds, exactly, after checking its digests against its
/// bytes ([`Prepared::from_record`], as the SQLite registry does). Idempotent: a version held
/// already must be the same content; its yank state, signatures and findings are brought up
/// to date, each change with its change row.
pub(super) async fn import(store: &PgStore, record: &VersionRecord) -> Result<Imported> {
    let (p, more) = Prepared::from_record(record)?;
    let (name, version) = (p.name(), p.version());
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.db(e))?;
    let skeleton = lock_name(store, &tx, name).await?;
    let skill = skill_id(store, &tx, name, &skeleton).await?;
    let held = rows!(
        store,
        tx,
        "SELECT id, yanked, skill_digest, manifest FROM version \
         WHERE skill_id = $1 AND version = $2",
        skill,
        version
    )?;
    let (id, outcome, was_yanked) = match held.first() {
        Some(row) => {
            check_same(&p, row.get(2), row.get(3))?;
            (
                row.get::<_, i64>(0),
                Imported::Present,
                row.get::<_, bool>(1),
            )
        }
        None => {
            store_blobs(store, &tx, p.files.iter().map(|f| (&f.sha256, &f.bytes))).await?;
            let id = insert_version(store, &tx, &p, skill).await?;
            record_change(store, &tx, name, version, ChangeAction::Publish).await?;
            (id, Imported::Copied, false)
        }
    };
    let mut signed = false;
    for (key_id, text) in p.signature_text().into_iter().chain(more) {
        signed |= exec!(
            store,
            tx,
            "INSERT INTO signature (version_id, key_id, signature) VALUES ($1, $2, $3) \
             ON CONFLICT (version_id, key_id) DO NOTHING",
            id,
            key_id,
            text
        )? > 0;
    }
    if signed && outcome == Imported::Present {
        record_change(store, &tx, name, version, ChangeAction::Publish).await?;
    }
    if let Some(findings) = p.findings_json() {
        let wrote = exec!(
            store,
            tx,
            "INSERT INTO version_findings (version_id, findings) VALUES ($1, $2) \
             ON CONFLICT (version_id) DO NOTHING",
            id,
            findings
        )? > 0;
        // Findings are part of what a reader is told of the version.
        if wrote && outcome == Imported::Present && !signed {
            record_change(store, &tx, name, version, ChangeAction::Publish).await?;
        }
    }
    if record.info.yanked != was_yanked {
        exec!(
            store,
            tx,
            "UPDATE version SET yanked = $2 WHERE id = $1",
            id,
            record.info.yanked
        )?;
        let action = if record.info.yanked {
            ChangeAction::Yank
        } else {
            ChangeAction::Unyank
        };
        record_change(store, &tx, name, version, action).await?;
    }
    refresh_latest(store, &tx, skill).await?;
    tx.commit().await.map_err(|e| store.db(e))?;
    Ok(outcome)
}

/// Appends the audit rows this registry lacks (the same time, token, action, name, version,
/// digest and client), oldest first, in one transaction; how many.
pub(super) async fn import_audit(store: &PgStore, entries: &[AuditEntry]) -> Result<usize> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.db(e))?;
    // Oldest first, so the copy's log keeps the original's order.
    let mut sorted: Vec<&AuditEntry> = entries.iter().collect();
    sorted.sort_by_key(|e| (e.at, e.id));
    let mut added = 0;
    for e in sorted {
        let digest = digest::parse_digest(&e.digest).ok_or_else(|| RegistryError::BadMetadata {
            name: e.name.clone(),
            reason: format!("audit entry {} has no sha256 digest: {:?}", e.id, e.digest),
        })?;
        added += exec!(
            store,
            tx,
            "INSERT INTO audit (at, token, action, name, version, digest, client) \
             SELECT $1, $2, $3, $4, $5, $6, $7 WHERE NOT EXISTS (SELECT 1 FROM audit \
             WHERE at = $1 AND token = $2 AND action = $3 AND name = $4 AND version = $5 \
             AND digest = $6 AND client = $7)",
            e.at,
            e.token,
            e.action,
            e.name,
            e.version,
            &digest[..],
            e.client
        )? as usize;
    }
    tx.commit().await.map_err(|e| store.db(e))?;
    Ok(added)
}

/// Blob addresses are read this many at a time (a page, never the whole table).
const BLOB_PAGE: i64 = 256;

/// The whole registry verified (see [`Store::check`](crate::store::Store::check)): every blob
/// hashed, page by page; orphaned blob rows; every version against its skill digest and
/// manifest; the change feed numbered 1, 2, 3… without gaps.
pub(super) async fn check(store: &PgStore) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let client = store.client().await?;
    let db = |e| store.db(e);
    // Addresses a page at a time, bytes one blob at a time: never more than one in memory.
    let content = client
        .prepare("SELECT content FROM blob WHERE sha256 = $1")
        .await
        .map_err(db)?;
    let mut after: Vec<u8> = Vec::new();
    loop {
        let rows = client
            .query(
                "SELECT sha256, size FROM blob WHERE sha256 > $1 ORDER BY sha256 LIMIT $2",
                &[&after, &BLOB_PAGE],
            )
            .await
            .map_err(db)?;
        for r in &rows {
            let sha: Vec<u8> = r.get(0);
            let size: i64 = r.get(1);
            report.blobs += 1;
            let hex = digest::to_hex(&sha);
            let inline: Option<Vec<u8>> = client
                .query_opt(&content, &[&sha])
                .await
                .map_err(db)?
                .and_then(|r| r.get(0));
            match store
                .blob_bytes(&sha, inline, || format!("blob sha256:{hex}"))
                .await
            {
                Ok(bytes) if bytes.len() as i64 != size => report.problems.push(format!(
                    "blob sha256:{hex}: {} bytes, stored as {size}",
                    bytes.len()
                )),
                Ok(_) => {}
                Err(e @ RegistryError::Corrupt { .. }) => report.problems.push(e.to_string()),
                Err(e) => return Err(e),
            }
            after = sha;
        }
        if (rows.len() as i64) < BLOB_PAGE {
            break;
        }
    }
    let orphans = client
        .query(
            "SELECT b.sha256 FROM blob b WHERE NOT EXISTS \
             (SELECT 1 FROM file f WHERE f.sha256 = b.sha256) ORDER BY 1",
            &[],
        )
        .await
        .map_err(db)?;
    for r in &orphans {
        report.problems.push(format!(
            "blob sha256:{}: no file references it (an orphaned row)",
            digest::to_hex(r.get::<_, &[u8]>(0))
        ));
    }
    let versions = client
        .query(
            "SELECT s.name, v.version, v.id, v.skill_digest, v.manifest FROM version v \
             JOIN skill s ON s.id = v.skill_id ORDER BY v.id",
            &[],
        )
        .await
        .map_err(db)?;
    let files = client
        .prepare(
            "SELECT f.path, b.sha256, b.size, f.executable FROM file f \
             JOIN blob b ON b.sha256 = f.sha256 WHERE f.version_id = $1",
        )
        .await
        .map_err(db)?;
    for v in &versions {
        report.versions += 1;
        let id: i64 = v.get(2);
        let mut rows: Vec<(String, Vec<u8>, i64, bool)> = client
            .query(&files, &[&id])
            .await
            .map_err(db)?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect();
        rows.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        crate::check::check_version(
            v.get(0),
            v.get(1),
            v.get(3),
            Some(v.get(4)),
            &rows,
            &mut report.problems,
        );
    }
    let feed = client
        .query_one(
            "SELECT count(*), coalesce(min(seq), 0), coalesce(max(seq), 0) FROM change",
            &[],
        )
        .await
        .map_err(db)?;
    let (n, first, last): (i64, i64, i64) = (feed.get(0), feed.get(1), feed.get(2));
    if n > 0 && (first != 1 || last != n) {
        report.problems.push(format!(
            "change feed: {n} changes numbered {first} to {last} (expected 1 to {n}, no gaps)"
        ));
    }
    Ok(report)
}
