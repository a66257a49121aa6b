//! Opening a registry file: connection settings, the file's identity and migrations.
//!
//! Every connection is bounded and every query budgeted first ([`super::guard`]: value and
//! statement sizes, SQLite's memory, a step and time budget per query), then gets `foreign_keys=ON`, `busy_timeout` (5 s), `synchronous=FULL`,
//! `trusted_schema=OFF` and SQLite's defensive mode (a registry file may come from elsewhere;
//! its schema must not be able to call functions with side effects), and the query planner
//! stability guarantee (cached statements are never re-planned). Read-write connections
//! switch the file to WAL once (the mode is persistent); read-only connections are also
//! `query_only`.
//!
//! Migrations are the SQL files of the workspace's `migrations/sqlite/`, embedded in the binary, applied in order in one
//! `BEGIN IMMEDIATE` transaction that also sets `PRAGMA application_id` and
//! `PRAGMA user_version` (= the number of migrations applied). A file whose `user_version` is
//! higher than this build knows is refused, naming both numbers; an existing file is opened
//! only when its schema is exactly what the migrations of its version create
//! ([`super::guard::check_schema`]), checked before anything else reads it or writes to it.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::RegistryError;
use super::guard::{self, Guarded};

/// `PRAGMA application_id` of a skillcat registry: `0x534B494C`, ASCII `SKIL`.
pub const APPLICATION_ID: i32 = 0x534B_494C;

/// How long a connection waits for a lock held by another before it reports `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One schema migration: a file of `migrations/sqlite/`, embedded.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The file name (`0001_init.sql`).
    pub name: &'static str,
    /// Its SQL.
    pub sql: &'static str,
}

/// Every migration, in the order they are applied. Append only: a released entry is never
/// edited or removed, since `user_version` counts them.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "0001_init.sql",
        sql: include_str!("../../../migrations/sqlite/0001_init.sql"),
    },
    Migration {
        name: "0002_audit.sql",
        sql: include_str!("../../../migrations/sqlite/0002_audit.sql"),
    },
    Migration {
        name: "0003_skeleton.sql",
        sql: include_str!("../../../migrations/sqlite/0003_skeleton.sql"),
    },
    Migration {
        name: "0004_findings.sql",
        sql: include_str!("../../../migrations/sqlite/0004_findings.sql"),
    },
    Migration {
        name: "0005_changes.sql",
        sql: include_str!("../../../migrations/sqlite/0005_changes.sql"),
    },
];

/// The schema version this build writes and reads: the number of migrations.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// How a registry file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// A new registry: the file must not exist, or be empty.
    Create,
    /// An existing registry, read-write; older schemas are migrated.
    ReadWrite,
    /// An existing registry, read-only; the schema must be current.
    ReadOnly,
    /// A new registry in memory, gone with its connection (tests, fuzzing).
    Memory,
}

/// Opens `path` in `mode`: a configured, bounded connection to a registry of the current
/// schema.
pub(super) fn connect(path: &Path, shown: &str, mode: Mode) -> Result<Guarded, RegistryError> {
    let sql = |source| RegistryError::Sqlite {
        path: shown.to_string(),
        source,
    };
    if mode == Mode::Memory {
        let mut conn = Connection::open_in_memory_with_flags(
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        let budget = guard::limit(&mut conn).map_err(sql)?;
        configure(&conn, mode).map_err(sql)?;
        guard::open_budget_done(&conn, &budget, None).map_err(sql)?;
        migrate(&mut conn, shown, true)?;
        return Ok(Guarded::new(conn, budget));
    }
    match (mode, std::fs::metadata(path)) {
        (Mode::Create, Ok(meta)) if meta.len() > 0 && !is_blank_database(path) => {
            return Err(RegistryError::AlreadyExists {
                path: shown.to_string(),
            });
        }
        (Mode::Create, Err(_)) => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if let Some(dir) = parent.filter(|d| !d.is_dir()) {
                let e = std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the directory {} does not exist", dir.display()),
                );
                return Err(RegistryError::Io {
                    path: shown.to_string(),
                    source: e,
                });
            }
        }
        (Mode::Create, Ok(_)) => {}
        (_, Ok(meta)) if meta.is_file() => {}
        (_, Ok(_)) => {
            return Err(RegistryError::NotARegistry {
                path: shown.to_string(),
                reason: "not a file".into(),
            });
        }
        (_, Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RegistryError::Missing {
                path: shown.to_string(),
            });
        }
        (_, Err(e)) => {
            return Err(RegistryError::Io {
                path: shown.to_string(),
                source: e,
            });
        }
    }
    // No SQLITE_OPEN_URI: a path is a path, never `file:…?mode=…`.
    let flags = match mode {
        Mode::Create | Mode::Memory => {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        }
        Mode::ReadWrite => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        Mode::ReadOnly => OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    };
    let mut conn = Connection::open_with_flags(path, flags).map_err(sql)?;
    // Bounds and the open budget first: the pragmas below read the file's header and schema.
    let budget = guard::limit(&mut conn).map_err(|e| identify(e, shown))?;
    configure(&conn, mode).map_err(|e| identify(e, shown))?;
    let (app_id, found) = identity(&conn).map_err(|e| identify(e, shown))?;
    match mode {
        Mode::Create | Mode::Memory => {
            if app_id != 0 || found != 0 {
                return Err(RegistryError::AlreadyExists {
                    path: shown.to_string(),
                });
            }
            guard::open_budget_done(&conn, &budget, file_len(path)).map_err(sql)?;
            use_wal(&conn).map_err(sql)?;
            migrate(&mut conn, shown, true)?;
        }
        Mode::ReadWrite | Mode::ReadOnly => {
            check_application_id(app_id, shown)?;
            if found > SCHEMA_VERSION {
                return Err(RegistryError::SchemaTooNew {
                    path: shown.to_string(),
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            // Before anything else reads the file or writes to it (even the journal mode).
            verify_schema(&conn, shown, found)?;
            guard::open_budget_done(&conn, &budget, file_len(path)).map_err(sql)?;
            if found < SCHEMA_VERSION && mode == Mode::ReadOnly {
                return Err(RegistryError::SchemaTooOld {
                    path: shown.to_string(),
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            if mode == Mode::ReadWrite {
                use_wal(&conn).map_err(sql)?;
            }
            if found < SCHEMA_VERSION {
                migrate(&mut conn, shown, false)?;
                verify_schema(&conn, shown, SCHEMA_VERSION)?;
            }
        }
    }
    Ok(Guarded::new(conn, budget))
}

/// Refuses a file whose schema is not exactly the one skillcat writes at `version`, saying
/// what differs.
fn verify_schema(conn: &Connection, shown: &str, version: u32) -> Result<(), RegistryError> {
    let refuse = |what: String| RegistryError::NotARegistry {
        path: shown.to_string(),
        reason: format!("its schema is not one skillcat wrote: {what}"),
    };
    match guard::check_schema(conn, version) {
        Ok(None) => Ok(()),
        Ok(Some(what)) => Err(refuse(what)),
        Err(e) => match identify(e, shown) {
            RegistryError::Sqlite { source, .. } => {
                Err(refuse(format!("its schema cannot be read ({source})")))
            }
            other => Err(other),
        },
    }
}

fn configure(conn: &Connection, mode: Mode) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    // The query planner stability guarantee: a statement's plan never depends on the values
    // bound to it, so a cached statement is not re-prepared on each rebind (without it, every
    // join with a parameter is parsed and planned again on each use, about 5x slower).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.pragma_update(None, "trusted_schema", false)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // 8 MiB of page cache (SQLite's default is 2 MiB): lookups in a large registry stay in memory.
    conn.pragma_update(None, "cache_size", -8192)?;
    conn.set_prepared_statement_cache_capacity(32);
    if mode == Mode::ReadOnly {
        conn.pragma_update(None, "query_only", true)?;
    }
    Ok(())
}

/// Switches a file opened read-write to WAL (persistent; a database in memory keeps its own
/// journal mode). Done once the file is known to be a registry, so a refused file is not
/// written to.
fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    let journal: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !journal.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(format!(
                "cannot switch to WAL mode (journal mode is {journal})"
            )),
        ));
    }
    Ok(())
}

/// The size of the file at `path`, with its write-ahead log (where the pages a header claims
/// must be).
fn file_len(path: &Path) -> Option<u64> {
    let main = std::fs::metadata(path).ok()?.len();
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    Some(main + std::fs::metadata(wal).map_or(0, |m| m.len()))
}

/// `(application_id, user_version)`.
fn identity(conn: &Connection) -> rusqlite::Result<(i32, u32)> {
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok((app_id, u32::try_from(version).unwrap_or(u32::MAX)))
}

/// SQLite's "not a database" becomes [`RegistryError::NotARegistry`], and so does a header
/// and schema that cannot be read within the open budget.
fn identify(e: rusqlite::Error, shown: &str) -> RegistryError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => RegistryError::NotARegistry {
            path: shown.to_string(),
            reason: "not a SQLite database".into(),
        },
        Some(rusqlite::ErrorCode::OperationInterrupted) => RegistryError::NotARegistry {
            path: shown.to_string(),
            reason: format!(
                "its header and schema cannot be read within {} instructions and {} s",
                guard::OPEN_STEPS,
                guard::OPEN_TIME.as_secs()
            ),
        },
        _ => RegistryError::Sqlite {
            path: shown.to_string(),
            source: e,
        },
    }
}

fn check_application_id(app_id: i32, shown: &str) -> Result<(), RegistryError> {
    if app_id == APPLICATION_ID {
        return Ok(());
    }
    let reason = if app_id == 0 {
        "a SQLite database without skillcat's application id (create registries with \
         `skillcat registry init`)"
            .to_string()
    } else {
        format!("its application id is {app_id:#010x}, not skillcat's {APPLICATION_ID:#010x}")
    };
    Err(RegistryError::NotARegistry {
        path: shown.to_string(),
        reason,
    })
}

/// Whether a non-empty file is a SQLite database with nothing in it yet (what an `init` that
/// crashed before its first commit leaves behind).
fn is_blank_database(path: &Path) -> bool {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Ok(mut conn) = Connection::open_with_flags(path, flags) else {
        return false;
    };
    if guard::limit(&mut conn).is_err() {
        return false;
    }
    let objects: rusqlite::Result<i64> =
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0));
    matches!((identity(&conn), objects), (Ok((0, 0)), Ok(0)))
}

/// Applies the pending migrations in one `BEGIN IMMEDIATE` transaction. The version is read
/// again under the write lock, so two processes opening an old registry at once migrate it once.
fn migrate(conn: &mut Connection, shown: &str, create: bool) -> Result<(), RegistryError> {
    let sql = |source| RegistryError::Sqlite {
        path: shown.to_string(),
        source,
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let (app_id, found) = identity(&tx).map_err(sql)?;
    if create && (app_id != 0 || found != 0) {
        return Err(RegistryError::AlreadyExists {
            path: shown.to_string(),
        });
    }
    if !create {
        check_application_id(app_id, shown)?;
    }
    if found > SCHEMA_VERSION {
        return Err(RegistryError::SchemaTooNew {
            path: shown.to_string(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for migration in &MIGRATIONS[found as usize..] {
        tx.execute_batch(migration.sql)
            .map_err(|source| RegistryError::Sqlite {
                path: format!("{shown} (migration {})", migration.name),
                source,
            })?;
    }
    if (found as usize) < MIGRATIONS.len() {
        fill_skeletons(&tx).map_err(|source| RegistryError::Sqlite {
            path: format!("{shown} (migration 0003_skeleton.sql: the names' skeletons)"),
            source,
        })?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(sql)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(sql)?;
    tx.commit().map_err(sql)
}

/// The step of `0003_skeleton.sql` SQL cannot do: each skill's confusable skeleton
/// ([`skillcat_core::lookalike::skeleton`]), filled in where it is missing.
fn fill_skeletons(conn: &Connection) -> rusqlite::Result<()> {
    let missing: Vec<(i64, String)> = {
        let mut stmt = conn.prepare("SELECT id, name FROM skill WHERE skeleton IS NULL")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let mut update = conn.prepare("UPDATE skill SET skeleton = ?2 WHERE id = ?1")?;
    for (id, name) in missing {
        update.execute(rusqlite::params![
            id,
            skillcat_core::lookalike::skeleton(&name)
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert!(m.name.starts_with(&format!("{:04}_", i + 1)), "{}", m.name);
            assert!(m.name.ends_with(".sql"), "{}", m.name);
        }
        assert_eq!(SCHEMA_VERSION as usize, MIGRATIONS.len());
    }

    #[test]
    fn application_id_spells_skil() {
        assert_eq!(APPLICATION_ID.to_be_bytes(), *b"SKIL");
    }
}
