//! What stands between a registry file from anywhere and the code that reads it: bounds on
//! every connection, a budget on every query, and the file's schema compared with the ones
//! skillcat wrote.
//!
//! - **Bounds** ([`limit`]): no value (string, blob or row) past [`MAX_VALUE`], no statement
//!   (ours, or one in the file's schema) past [`MAX_SQL`], no attached database, and at most
//!   [`HEAP_LIMIT`] of memory held by SQLite in the whole process.
//! - **A budget on every query** ([`Guarded`]): a progress handler runs every
//!   [`PROGRESS_EVERY`] virtual-machine instructions and interrupts the statement once its
//!   budget is spent — [`STEPS`] instructions plus [`STEPS_PER_PAGE`] per page of the file, or
//!   [`TIME`] of wall time. The connection is reachable only through [`Guarded`], whose every
//!   borrow arms a fresh budget, so no code path can run a query without one.
//! - **The schema** ([`check_schema`]): every table, index, view and trigger of the file
//!   (`sqlite_schema`'s type, name, table and SQL) must be exactly what the migrations of its
//!   schema version create. The expected schemas are made by applying the migrations to a
//!   database in memory, once per process.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::limits::Limit;

use super::schema::{MIGRATIONS, SCHEMA_VERSION};

/// The largest string, blob or row a connection may hold: 256 MiB (a registry stores each
/// file as one blob; the default archive limit is 16 MiB a file).
pub const MAX_VALUE: i32 = 256 * 1024 * 1024;

/// The longest statement, ours or one in a file's schema: 1 MB (skillcat's longest is under
/// 4 KB).
pub const MAX_SQL: i32 = 1_000_000;

/// The memory SQLite may hold in the whole process, all connections together: 1 GiB. Past it
/// an allocation fails (`out of memory`) instead of growing. Set once, and only ever lowered
/// (`PRAGMA hard_heap_limit`), so a host application's lower limit stands.
pub const HEAP_LIMIT: i64 = 1024 * 1024 * 1024;

/// Virtual-machine instructions between two calls of the progress handler.
pub const PROGRESS_EVERY: i32 = 1_000;

/// The instructions a query may run, whatever the file's size: 100 million (a few seconds;
/// skillcat's reads of a registry of thousands of skills run well under a million).
pub const STEPS: u64 = 100_000_000;

/// The instructions a query may run per page of the file, on top of [`STEPS`]: a scan of a
/// large registry is allowed the time a scan takes.
pub const STEPS_PER_PAGE: u64 = 20_000;

/// The wall time a query may take: 30 s.
pub const TIME: Duration = Duration::from_secs(30);

/// The budget of opening a file (reading its header and schema), before the schema is known
/// to be skillcat's: 1 million instructions and 5 s.
pub const OPEN_STEPS: u64 = 1_000_000;
/// See [`OPEN_STEPS`].
pub const OPEN_TIME: Duration = Duration::from_secs(5);

/// Sets the bounds on `conn` and installs its progress handler, armed with the open budget.
pub(super) fn limit(conn: &mut Connection) -> rusqlite::Result<Arc<Budget>> {
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE)?;
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, MAX_SQL)?;
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    let budget = Arc::new(Budget::new());
    budget.arm(OPEN_STEPS, OPEN_TIME);
    let handler = Arc::clone(&budget);
    conn.progress_handler(PROGRESS_EVERY, Some(move || handler.spend()))?;
    // Only lowers a limit (a host's lower one stands); 0 is "no limit" and is never asked for.
    conn.pragma_update(None, "hard_heap_limit", HEAP_LIMIT)?;
    Ok(budget)
}

/// A query budget: progress-handler calls left, and a deadline.
#[derive(Debug)]
pub(super) struct Budget {
    epoch: Instant,
    ticks_left: AtomicU64,
    /// Nanoseconds after `epoch`.
    deadline: AtomicU64,
    /// What [`arm_query`](Self::arm_query) grants: the calls per query.
    ticks_per_query: AtomicU64,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            epoch: Instant::now(),
            ticks_left: AtomicU64::new(0),
            deadline: AtomicU64::new(0),
            ticks_per_query: AtomicU64::new(STEPS / PROGRESS_EVERY as u64),
        }
    }

    /// Grants `steps` instructions and `time` from now.
    fn arm(&self, steps: u64, time: Duration) {
        let ticks = steps.div_ceil(PROGRESS_EVERY as u64);
        self.ticks_left.store(ticks, Ordering::Relaxed);
        let deadline = (self.epoch.elapsed() + time).as_nanos();
        self.deadline.store(
            u64::try_from(deadline).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Grants one query's budget: [`STEPS`] plus [`STEPS_PER_PAGE`] per page, and [`TIME`].
    fn arm_query(&self) {
        let ticks = self.ticks_per_query.load(Ordering::Relaxed);
        self.arm(ticks.saturating_mul(PROGRESS_EVERY as u64), TIME);
    }

    /// Sizes the query budget for a file of `pages` pages.
    pub(super) fn size_for(&self, pages: u64) {
        let steps = STEPS.saturating_add(STEPS_PER_PAGE.saturating_mul(pages));
        self.ticks_per_query
            .store(steps / PROGRESS_EVERY as u64, Ordering::Relaxed);
    }

    /// The progress handler: `true` (interrupt) once the calls or the time are spent.
    fn spend(&self) -> bool {
        let left = self.ticks_left.load(Ordering::Relaxed);
        if left == 0 {
            return true;
        }
        self.ticks_left.store(left - 1, Ordering::Relaxed);
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        now > self.deadline.load(Ordering::Relaxed)
    }
}

/// A connection reachable only under a budget: every borrow ([`Deref`], [`DerefMut`]) arms a
/// fresh query budget, so every statement prepared, run or stepped through it is bounded.
pub(super) struct Guarded {
    conn: Connection,
    budget: Arc<Budget>,
}

impl Guarded {
    pub(super) fn new(conn: Connection, budget: Arc<Budget>) -> Guarded {
        budget.arm_query();
        Guarded { conn, budget }
    }
}

impl Deref for Guarded {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.budget.arm_query();
        &self.conn
    }
}

impl DerefMut for Guarded {
    fn deref_mut(&mut self) -> &mut Connection {
        self.budget.arm_query();
        &mut self.conn
    }
}

/// Arms the query budget of a connection being opened (after its schema was found to be
/// skillcat's), sized for its file: its page count, but never more pages than `file_len` bytes
/// hold (a header may claim any size).
pub(super) fn open_budget_done(
    conn: &Connection,
    budget: &Budget,
    file_len: Option<u64>,
) -> rusqlite::Result<()> {
    let pages: i64 = conn.pragma_query_value(None, "page_count", |r| r.get(0))?;
    let page_size: i64 = conn.pragma_query_value(None, "page_size", |r| r.get(0))?;
    let mut pages = u64::try_from(pages).unwrap_or(0);
    if let (Some(len), Ok(size)) = (file_len, u64::try_from(page_size)) {
        pages = pages.min(len / size.max(512));
    }
    budget.size_for(pages);
    budget.arm_query();
    Ok(())
}

/// One object of a schema, as `sqlite_schema` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Object {
    kind: String,
    name: String,
    table: String,
    sql: Option<String>,
}

fn objects(conn: &Connection) -> rusqlite::Result<Vec<Object>> {
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY name, type")?;
    stmt.query_map([], |r| {
        Ok(Object {
            kind: r.get(0)?,
            name: r.get(1)?,
            table: r.get(2)?,
            sql: r.get(3)?,
        })
    })?
    .collect()
}

/// The schema of every known version, `0..=SCHEMA_VERSION`: what the migrations make of an
/// empty database, read back from SQLite itself.
fn known() -> &'static [Vec<Object>] {
    static KNOWN: OnceLock<Vec<Vec<Object>>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let conn = Connection::open_in_memory().expect("a database in memory");
        let mut out = vec![objects(&conn).expect("sqlite_schema reads")];
        for m in MIGRATIONS {
            conn.execute_batch(m.sql)
                .unwrap_or_else(|e| panic!("migration {} applies to memory: {e}", m.name));
            out.push(objects(&conn).expect("sqlite_schema reads"));
        }
        out
    })
}

/// Differences past this many are counted, not listed.
const SHOWN: usize = 3;

/// Compares the schema of `conn` with what skillcat writes at `version` (at most
/// [`SCHEMA_VERSION`]): `Ok(None)` when it is exactly that, `Ok(Some(what differs))` when not.
pub(super) fn check_schema(conn: &Connection, version: u32) -> rusqlite::Result<Option<String>> {
    let found = objects(conn)?;
    let expected = &known()[version.min(SCHEMA_VERSION) as usize];
    Ok(difference(&found, expected, version))
}

fn difference(found: &[Object], expected: &[Object], version: u32) -> Option<String> {
    let article = |kind: &str| {
        if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            format!("an {kind}")
        } else {
            format!("a {kind}")
        }
    };
    let shown = |name: &str| {
        let short: String = name.chars().take(64).collect();
        format!("{short:?}")
    };
    let mut problems = Vec::new();
    for f in found {
        match expected
            .iter()
            .find(|e| e.name == f.name && e.kind == f.kind)
        {
            Some(e) if e == f => {}
            Some(_) => problems.push(format!(
                "{} {} differs from schema version {version} (its SQL is not skillcat's)",
                f.kind,
                shown(&f.name)
            )),
            None => match expected.iter().find(|e| e.name == f.name) {
                Some(e) => problems.push(format!(
                    "{} {} is not in schema version {version} (expected {})",
                    f.kind,
                    shown(&f.name),
                    article(&e.kind)
                )),
                None => problems.push(format!(
                    "{} {} is not in schema version {version}",
                    f.kind,
                    shown(&f.name)
                )),
            },
        }
    }
    for e in expected {
        if !found.iter().any(|f| f.name == e.name) {
            problems.push(format!(
                "{} {} of schema version {version} is missing",
                e.kind,
                shown(&e.name)
            ));
        }
    }
    match problems.len() {
        0 => None,
        n if n <= SHOWN => Some(problems.join("; ")),
        n => Some(format!(
            "{}; and {} more difference(s)",
            problems[..SHOWN].join("; "),
            n - SHOWN
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_version_is_what_its_migrations_make_and_grows() {
        let known = known();
        assert_eq!(known.len(), SCHEMA_VERSION as usize + 1);
        assert!(known[0].is_empty());
        for pair in known.windows(2) {
            assert!(pair[1].len() > pair[0].len());
        }
        // The tables a reader queries are tables in every version that has them.
        let last = known.last().unwrap();
        for table in [
            "blob",
            "skill",
            "version",
            "version_text",
            "file",
            "signature",
            "tag",
        ] {
            assert!(
                last.iter().any(|o| o.kind == "table" && o.name == table),
                "{table}"
            );
        }
    }

    #[test]
    fn a_file_made_by_the_migrations_matches_and_an_altered_one_does_not() {
        let conn = Connection::open_in_memory().unwrap();
        for m in MIGRATIONS {
            conn.execute_batch(m.sql).unwrap();
        }
        assert_eq!(check_schema(&conn, SCHEMA_VERSION).unwrap(), None);
        // Any earlier version's schema is not this one.
        let older = check_schema(&conn, SCHEMA_VERSION - 1).unwrap().unwrap();
        assert!(older.contains("not in schema version"), "{older}");
        conn.execute_batch(
            "DROP TABLE tag; CREATE VIEW tag (skill_id, tag, version_id) AS SELECT 1, 2, 3;",
        )
        .unwrap();
        let what = check_schema(&conn, SCHEMA_VERSION).unwrap().unwrap();
        assert!(
            what.starts_with(&format!(
                "view \"tag\" is not in schema version {SCHEMA_VERSION} (expected a table)"
            )),
            "{what}"
        );
        assert!(what.contains("index \"tag_version\""), "{what}");
    }

    #[test]
    fn the_budget_spends_calls_and_time() {
        let b = Budget::new();
        b.arm(3 * PROGRESS_EVERY as u64, Duration::from_secs(60));
        assert!(!b.spend() && !b.spend() && !b.spend());
        assert!(b.spend(), "the fourth call is past three calls' budget");
        assert!(b.spend(), "and stays spent");
        b.arm(u64::MAX, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert!(b.spend(), "past the deadline");
        b.size_for(10);
        b.arm_query();
        assert_eq!(
            b.ticks_left.load(Ordering::Relaxed),
            (STEPS + 10 * STEPS_PER_PAGE) / PROGRESS_EVERY as u64
        );
    }
}
