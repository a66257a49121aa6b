//! The PostgreSQL schema: `migrations/postgres/NNNN_name.sql`, embedded at build time, applied
//! in order, each in a transaction of its own, recorded in `schema_migrations`, by one migrator
//! at a time (`pg_advisory_lock`): two processes opening a database at once both succeed and
//! each migration is applied once.

use super::{MIGRATE_LOCK, db_error};
use crate::{RegistryError, Result};

/// Every migration, in order: `(version, name, SQL)`.
pub const MIGRATIONS: &[(u32, &str, &str)] = &[(
    1,
    "init",
    include_str!("../../../../../migrations/postgres/0001_init.sql"),
)];

/// The schema version this build writes: the last migration's.
pub const SCHEMA_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Brings the database's schema to [`SCHEMA_VERSION`] (see the module doc). With `create`,
/// the database must hold no registry and no other tables; then `blobs`, when given, is
/// recorded as where its blobs live.
pub(super) async fn migrate(
    client: &mut tokio_postgres::Client,
    shown: &str,
    create: bool,
    blobs: Option<&str>,
) -> Result<u32> {
    let db = |e| db_error(shown, e);
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATE_LOCK])
        .await
        .map_err(db)?;
    let result = migrate_locked(client, shown, create, blobs).await;
    // Session locks outlive a failed statement: released whatever happened (a lost
    // connection releases it anyway).
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATE_LOCK])
        .await;
    result
}

async fn migrate_locked(
    client: &mut tokio_postgres::Client,
    shown: &str,
    create: bool,
    blobs: Option<&str>,
) -> Result<u32> {
    let db = |e| db_error(shown, e);
    let current = applied(client, shown).await?;
    match (create, current) {
        (true, Some(_)) => {
            return Err(RegistryError::AlreadyExists {
                path: shown.to_string(),
            });
        }
        (true, None) => {
            let tables: Vec<String> = client
                .query(
                    "SELECT table_name::text FROM information_schema.tables \
                     WHERE table_schema = current_schema() ORDER BY 1 LIMIT 5",
                    &[],
                )
                .await
                .map_err(db)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            if !tables.is_empty() {
                return Err(RegistryError::NotARegistry {
                    path: shown.to_string(),
                    reason: format!(
                        "the database holds other tables ({}); a registry is created only in \
                         an empty database",
                        tables.join(", ")
                    ),
                });
            }
        }
        (false, None) => {
            return Err(RegistryError::Missing {
                path: shown.to_string(),
            });
        }
        (false, Some(found)) if found > super::SCHEMA_VERSION => {
            return Err(RegistryError::SchemaTooNew {
                path: shown.to_string(),
                found,
                supported: super::SCHEMA_VERSION,
            });
        }
        (false, Some(_)) => {}
    }
    let from = current.unwrap_or(0);
    for (version, name, sql) in MIGRATIONS.iter().filter(|(v, ..)| *v > from) {
        let tx = client.transaction().await.map_err(db)?;
        if *version == 1 {
            tx.batch_execute(
                "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, \
                 applied_at timestamptz NOT NULL DEFAULT now())",
            )
            .await
            .map_err(db)?;
        }
        tx.batch_execute(sql).await.map_err(db)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&(*version as i32), name],
        )
        .await
        .map_err(db)?;
        if *version == 1
            && let Some(url) = blobs
        {
            tx.execute(
                "INSERT INTO setting (key, value) VALUES ('blobs', $1)",
                &[&url],
            )
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
    }
    Ok(super::SCHEMA_VERSION.max(from))
}

/// The last migration applied, `None` when the database holds no registry.
pub(super) async fn applied(client: &tokio_postgres::Client, shown: &str) -> Result<Option<u32>> {
    let db = |e| db_error(shown, e);
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await
        .map_err(db)?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let v: Option<i32> = client
        .query_one("SELECT max(version) FROM schema_migrations", &[])
        .await
        .map_err(db)?
        .get(0);
    Ok(v.map(|v| v as u32))
}
