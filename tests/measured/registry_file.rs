//! Red team, step 18: registry files from strangers and names nobody can impersonate.
//!
//! - A registry file is opened only when its schema is exactly one skillcat wrote: a recursive
//!   view in place of `tag`, an extra table, trigger or index, a table with an extra column and
//!   an object whose SQL differs are each refused quickly, with bounded memory, naming what
//!   differs, and the file is left as it was.
//! - Every query runs under a step and time budget, and no value may grow past a bound.
//! - The registry (local and central) refuses a name that mixes scripts or whose confusable
//!   skeleton (UTS #39) equals one it holds, naming the skill it holds; `add` warns when two
//!   installed names are confusable.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::bin::{Out, Skillcat};
use skillcat::registry::{MIGRATIONS, Registry, RegistryError};

// ---------------------------------------------------------------------------------------------
// Helpers

/// A skill folder `dir/NAME` whose document carries `version`.
fn skill_dir(dir: &Path, name: &str, version: &str) -> PathBuf {
    let root = dir.join(format!("src-{}", dir_safe(name))).join(name);
    crate::support::write_skill(
        &root,
        &format!(
            "---\nname: {name}\ndescription: Fills in {name} things. Use when testing.\n\
             metadata:\n  version: \"{version}\"\n---\n# {name}\n\nBody of {name}.\n"
        ),
        &[("references/notes.md", "notes\n", false)],
    );
    root
}

/// A folder name for any skill name (each character's code point).
fn dir_safe(name: &str) -> String {
    name.chars().map(|c| format!("{:x}-", c as u32)).collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `dir/r.db`: a registry the binary made, holding pdf-forms@1.0.0.
fn real_registry(dir: &Path) -> PathBuf {
    let db = dir.join("r.db");
    Skillcat::new(&["registry", "init", s(&db)]).run().code(0);
    let src = skill_dir(dir, "pdf-forms", "1.0.0");
    Skillcat::new(&["registry", "publish", s(&db), s(&src)])
        .run()
        .code(0);
    db
}

/// A copy of the real registry at `dir/NAME`, changed by `sql` (run without defensive mode, as
/// anyone crafting a file would).
fn crafted(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let real = dir.join("r.db");
    if !real.exists() {
        real_registry(dir);
    }
    let path = dir.join(name);
    std::fs::copy(&real, &path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(sql).unwrap();
    let app_id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    assert_eq!(
        app_id.to_be_bytes(),
        *b"SKIL",
        "the crafted file keeps the id"
    );
    drop(conn);
    path
}

/// What a run gave, with its peak resident memory.
struct Bounded {
    out: Out,
    max_rss_kib: i64,
    took: Duration,
}

/// Runs the binary with `args`, killing it after 20 s or once it holds 1 GiB (and failing):
/// the exit code, output, peak resident memory (from `wait4`) and wall time.
#[track_caller]
fn run_bounded(args: &[&str]) -> Bounded {
    const KILL_AFTER: Duration = Duration::from_secs(20);
    const KILL_ABOVE_KIB: i64 = 1024 * 1024;
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also gives its peak memory"
    )]
    let mut child = Command::new(crate::support::bin::BIN)
        .args(args)
        .current_dir(crate::support::bin::manifest_dir())
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = so.read_to_end(&mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = se.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let mut killed = None;
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value to be overwritten by wait4.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child, not reaped yet (std's Child never waited for it).
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            break (status, usage);
        }
        assert_eq!(got, 0, "wait4: {}", std::io::Error::last_os_error());
        if killed.is_none() {
            let rss = resident_kib(pid);
            if start.elapsed() > KILL_AFTER {
                killed = Some(format!(
                    "still running after {KILL_AFTER:?} (holding {rss} KiB)"
                ));
            } else if rss > KILL_ABOVE_KIB {
                killed = Some(format!("holding {rss} KiB after {:?}", start.elapsed()));
            }
            if killed.is_some() {
                // SAFETY: signalling our own unreaped child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    let stdout = out.join().unwrap();
    let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
    if let Some(why) = killed {
        panic!("skillcat {args:?} was killed: {why}\nstderr:\n{stderr}");
    }
    assert!(
        libc::WIFEXITED(status),
        "skillcat {args:?} died by a signal ({status:#x}):\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    Bounded {
        out: Out {
            args: args.iter().map(|a| a.to_string()).collect(),
            code: libc::WEXITSTATUS(status),
            stdout,
            stderr,
        },
        max_rss_kib: usage.ru_maxrss,
        took,
    }
}

/// The resident memory of a running process, in KiB (0 once it is gone).
fn resident_kib(pid: libc::pid_t) -> i64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Another application's SQLite database at `dir/other.sqlite`: an unreadable source.
fn other_database(dir: &Path) -> PathBuf {
    let other = dir.join("other.sqlite");
    if !other.exists() {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("PRAGMA application_id = 42; CREATE TABLE t (x);")
            .unwrap();
    }
    other
}

/// Peak memory a refused open may reach (the binary's own footprint is a few MiB).
const REFUSAL_RSS_KIB: i64 = 100 * 1024;

/// `list` and `registry publish` on `file` are both refused, quickly and in bounded memory,
/// saying the schema is not skillcat's and naming `what`; the file is left byte for byte.
#[track_caller]
fn assert_refused(dir: &Path, file: &Path, what: &[&str]) {
    let other = other_database(dir);
    let before = std::fs::read(file).unwrap();
    let src = skill_dir(dir, "other-skill", "1.0.0");
    for args in [
        vec!["list", s(file)],
        vec!["registry", "search", s(file), "pdf"],
        vec!["registry", "publish", s(file), s(&src)],
    ] {
        // The exit code of the same command on another application's database.
        let unreadable: Vec<&str> = args
            .iter()
            .map(|a| if *a == s(file) { s(&other) } else { a })
            .collect();
        let code = Skillcat::new(&unreadable).run().code;
        assert_ne!(code, 0);
        let run = run_bounded(&args);
        run.out.code(code);
        let mut needles = vec!["its schema is not one skillcat wrote"];
        needles.extend_from_slice(what);
        run.out.says(&needles);
        assert!(
            run.max_rss_kib < REFUSAL_RSS_KIB,
            "skillcat {args:?} peaked at {} KiB",
            run.max_rss_kib
        );
        // Loose: the refusal comes before any query, well under the 20 s kill.
        assert!(run.took < Duration::from_secs(10), "{:?}", run.took);
        assert_eq!(
            std::fs::read(file).unwrap(),
            before,
            "skillcat {args:?} changed the refused file"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Finding 1: files from elsewhere are checked before they are trusted

#[test]
fn a_recursive_view_in_place_of_tag_is_refused_in_bounded_time_and_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = crafted(
        tmp.path(),
        "evil.db",
        "DROP TABLE tag;
         CREATE VIEW tag (skill_id, tag, version_id) AS
           WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
           SELECT v.skill_id, 'latest', v.id FROM r, version v;",
    );
    assert_refused(tmp.path(), &evil, &["view \"tag\"", "expected a table"]);
}

#[test]
fn an_extra_table_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = crafted(tmp.path(), "extra-table.db", "CREATE TABLE notes (x TEXT);");
    assert_refused(
        tmp.path(),
        &evil,
        &["table \"notes\"", "not in schema version"],
    );
}

#[test]
fn an_extra_trigger_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = crafted(
        tmp.path(),
        "extra-trigger.db",
        "CREATE TRIGGER spin AFTER INSERT ON skill BEGIN
           SELECT count(*) FROM (WITH RECURSIVE r (n) AS
             (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r);
         END;",
    );
    assert_refused(tmp.path(), &evil, &["trigger \"spin\""]);
}

#[test]
fn an_extra_index_on_an_expression_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = crafted(
        tmp.path(),
        "extra-index.db",
        "CREATE INDEX slow ON skill (length(name) * length(name));",
    );
    assert_refused(tmp.path(), &evil, &["index \"slow\""]);
}

#[test]
fn a_table_with_the_right_name_and_an_extra_column_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = crafted(
        tmp.path(),
        "extra-column.db",
        "ALTER TABLE tag ADD COLUMN note TEXT;",
    );
    assert_refused(tmp.path(), &evil, &["table \"tag\"", "differs"]);
}

#[test]
fn the_right_objects_with_other_sql_are_refused() {
    // The immutability trigger replaced by one that lets a version be rewritten.
    let tmp = tempfile::tempdir().unwrap();
    let evil = crafted(
        tmp.path(),
        "other-sql.db",
        "DROP TRIGGER version_content_immutable;
         CREATE TRIGGER version_content_immutable BEFORE UPDATE OF yanked ON version
         BEGIN SELECT 1; END;",
    );
    assert_refused(
        tmp.path(),
        &evil,
        &["trigger \"version_content_immutable\"", "differs"],
    );
}

#[test]
fn a_missing_object_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = crafted(tmp.path(), "missing.db", "DROP TRIGGER blob_immutable;");
    assert_refused(
        tmp.path(),
        &evil,
        &["trigger \"blob_immutable\"", "missing"],
    );
}

#[test]
fn registries_of_every_known_schema_version_still_open_and_migrate() {
    let tmp = tempfile::tempdir().unwrap();
    // Each older version exactly as its migrations left it (nothing else in the file).
    for version in 0..MIGRATIONS.len() {
        let db = tmp.path().join(format!("v{version}.db"));
        let conn = rusqlite::Connection::open(&db).unwrap();
        for m in &MIGRATIONS[..version] {
            conn.execute_batch(m.sql).unwrap();
        }
        conn.pragma_update(None, "application_id", skillcat::registry::APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", version as i64)
            .unwrap();
        drop(conn);
        let src = skill_dir(tmp.path(), "pdf-forms", "1.0.0");
        Skillcat::new(&["registry", "publish", s(&db), s(&src)])
            .run()
            .code(0);
        let out = Skillcat::new(&["list", s(&db)]).run();
        assert!(out.code(0).out().contains("pdf-forms"), "{}", out.out());
    }
    // And the current one, made by `registry init`, reads and writes.
    let db = real_registry(&tmp.path().join("current").tap_mkdir());
    Skillcat::new(&["list", s(&db)]).run().code(0);
}

/// `create_dir_all`, returning the path.
trait TapMkdir {
    fn tap_mkdir(self) -> PathBuf;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> PathBuf {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn a_file_with_skillcats_id_but_objects_of_its_own_is_not_migrated() {
    // user_version 0 with the id set is no state skillcat leaves a file in: it is refused, not
    // migrated around the stranger's table.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("v0-extra.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "application_id", skillcat::registry::APPLICATION_ID)
        .unwrap();
    conn.execute_batch("CREATE TABLE keep_me (x)").unwrap();
    drop(conn);
    let err = Registry::open(&db).unwrap_err();
    assert!(matches!(err, RegistryError::NotARegistry { .. }), "{err}");
    assert!(err.to_string().contains("table \"keep_me\""), "{err}");
}

/// Runs `sql` on the registry's connection from another thread, interrupting it (and failing)
/// if it is still running after `limit`: the budget must stop it first.
fn run_or_interrupt(reg: Registry, sql: &'static str, limit: Duration) -> rusqlite::Result<i64> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let conn = reg.connection();
        handle_tx.send(conn.get_interrupt_handle()).unwrap();
        let got = conn.query_row(sql, [], |r| r.get::<_, i64>(0));
        let _ = tx.send(got);
    });
    let handle = handle_rx.recv().unwrap();
    match rx.recv_timeout(limit) {
        Ok(got) => got,
        Err(_) => {
            handle.interrupt();
            panic!("{sql:?} was still running after {limit:?}: no budget stopped it");
        }
    }
}

#[test]
fn the_step_budget_stops_a_query_that_would_run_forever() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = Registry::init(tmp.path().join("r.db")).unwrap();
    let start = Instant::now();
    let got = run_or_interrupt(
        reg,
        "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) \
         SELECT count(*) FROM r",
        Duration::from_secs(90),
    );
    let err = got.expect_err("an endless query is stopped");
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::OperationInterrupted),
        "{err}"
    );
    eprintln!("stopped after {:?}", start.elapsed());
}

#[test]
fn no_value_may_grow_past_the_length_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = Registry::init(tmp.path().join("r.db")).unwrap();
    // 512 MiB in one value: past the bound, refused before it is made.
    let got = run_or_interrupt(
        reg,
        "SELECT length(randomblob(512 * 1024 * 1024))",
        Duration::from_secs(90),
    );
    let err = got.expect_err("a value past the bound is refused");
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::TooBig),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Finding 6: look-alike names

/// Publishes `name` into `db`; returns the run.
fn publish(dir: &Path, db: &Path, name: &str) -> Out {
    let src = skill_dir(dir, name, "1.0.0");
    Skillcat::new(&["registry", "publish", s(db), s(&src)]).run()
}

fn names_in(db: &Path) -> Vec<String> {
    let reg = Registry::open_read_only(db).unwrap();
    let mut stmt = reg
        .connection()
        .prepare("SELECT name FROM skill ORDER BY name")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn cyrillic_and_greek_look_alikes_are_refused_naming_the_skill_held() {
    let tmp = tempfile::tempdir().unwrap();
    let db = real_registry(tmp.path());
    let before = std::fs::read(&db).unwrap();
    for look_alike in [
        "pdf-f\u{43e}rms", // Cyrillic о
        "\u{440}df-forms", // Cyrillic р
        "pdf-f\u{3bf}rms", // Greek ο
        "\u{440}df-f\u{43e}rms",
    ] {
        let out = publish(tmp.path(), &db, look_alike);
        out.code(1).says(&[
            &format!("{look_alike:?} looks like \"pdf-forms\""),
            "already holds",
        ]);
        assert_eq!(
            std::fs::read(&db).unwrap(),
            before,
            "refusing {look_alike:?} changed the registry file"
        );
    }
    assert_eq!(names_in(&db), ["pdf-forms"]);
    // A new version of the name held is still welcome.
    let src = skill_dir(&tmp.path().join("v2").tap_mkdir(), "pdf-forms", "1.1.0");
    Skillcat::new(&["registry", "publish", s(&db), s(&src)])
        .run()
        .code(0);
}

#[test]
fn a_name_that_mixes_scripts_is_refused_even_with_nothing_like_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    Skillcat::new(&["registry", "init", s(&db)]).run().code(0);
    let out = publish(tmp.path(), &db, "inv\u{43e}ice-tool"); // Cyrillic о among Latin
    out.code(1).says(&["mixes scripts", "Cyrillic", "Latin"]);
    assert!(names_in(&db).is_empty());
}

#[test]
fn names_in_one_script_or_a_recommended_mix_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let db = real_registry(tmp.path());
    // All Cyrillic; all Greek; Japanese with Latin (UTS #39 "highly restrictive").
    for name in [
        "\u{444}\u{43e}\u{440}\u{43c}\u{44b}",
        "\u{3bb}\u{3cc}\u{3b3}\u{3bf}\u{3c2}",
        "ocr-\u{65e5}\u{672c}\u{8a9e}",
    ] {
        publish(tmp.path(), &db, name).code(0);
    }
    assert_eq!(names_in(&db).len(), 4);
}

#[test]
fn ascii_names_that_render_alike_are_refused_too() {
    // UTS #39 skeletons: "l" and "1", "rn" and "m" look alike.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    Skillcat::new(&["registry", "init", s(&db)]).run().code(0);
    publish(tmp.path(), &db, "tool-l").code(0);
    publish(tmp.path(), &db, "tool-1")
        .code(1)
        .says(&["\"tool-1\" looks like \"tool-l\""]);
    publish(tmp.path(), &db, "modem").code(0);
    publish(tmp.path(), &db, "rnodem")
        .code(1)
        .says(&["looks like \"modem\""]);
}

#[test]
fn a_registry_written_before_skeletons_is_backfilled_when_migrated() {
    // A schema-version-2 registry (before the skeleton column) holding pdf-forms.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("v2.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for m in &MIGRATIONS[..2] {
        conn.execute_batch(m.sql).unwrap();
    }
    conn.execute_batch("INSERT INTO skill (name) VALUES ('pdf-forms');")
        .unwrap();
    conn.pragma_update(None, "application_id", skillcat::registry::APPLICATION_ID)
        .unwrap();
    conn.pragma_update(None, "user_version", 2).unwrap();
    drop(conn);
    publish(tmp.path(), &db, "pdf-f\u{43e}rms")
        .code(1)
        .says(&["looks like \"pdf-forms\""]);
}

#[test]
fn the_central_registry_refuses_look_alikes_naming_the_skill_held() {
    use crate::support::central::{doc, registry_dir, token};
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let tokens = dir.join("tokens.toml");
    let (mut child, _line, url) = crate::support::serve::spawn_serve(
        &dir.join("r.db"),
        &["--publish", "--tokens", s(&tokens)],
        Stdio::from(log),
    );
    let publish = |name: &str| {
        let root = dir.join(dir_safe(name)).join(name);
        crate::support::write_skill(&root, &doc(name, "1.0.0", ""), &[]);
        Skillcat::new(&["publish", &url, s(&root), "--token-file", "ci.token"])
            .cwd(dir)
            .env_remove("SKILLCAT_TOKEN")
            .run()
    };
    publish("pdf-forms").code(0);
    for look_alike in ["pdf-f\u{43e}rms", "\u{440}df-forms"] {
        publish(look_alike)
            .code(1)
            .says(&["looks like \"pdf-forms\""]);
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(names_in(&dir.join("r.db")), ["pdf-forms"]);
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap();
    assert!(
        !log.contains("error:"),
        "a refusal is no server error:\n{log}"
    );
}

#[test]
fn add_warns_when_two_installed_names_are_confusable() {
    let p = crate::support::project::Project::new();
    crate::support::project::skill(&p.path("src"), "pdf-forms", "1.0.0", "real");
    crate::support::project::skill(&p.path("other"), "pdf-f\u{43e}rms", "1.0.0", "look-alike");
    let out = p.run(&["add", "../src"]);
    out.code(0);
    assert!(!out.stderr.contains("looks like"), "{}", out.stderr);
    let out = p.run(&["add", "../other"]);
    out.code(0)
        .says(&["\"pdf-f\u{43e}rms\" looks like \"pdf-forms\""]);
}

#[test]
fn a_registry_an_earlier_skillcat_wrote_is_trusted_migrated_and_backfilled() {
    // fixtures/registry/v2-pdf-forms.db: `registry init` and `registry publish` of
    // fixtures/skills/pdf-forms at 1.0.0 by skillcat at schema version 2 (before this step), so
    // its schema is SQLite's own text of that day, FTS5 shadow tables included.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("v2.db");
    std::fs::copy(
        crate::support::bin::manifest_dir().join("fixtures/registry/v2-pdf-forms.db"),
        &db,
    )
    .unwrap();
    match Registry::open_read_only(&db) {
        Err(RegistryError::SchemaTooOld { found: 2, .. }) => {}
        other => panic!("a version-2 file is skillcat's, only older: {other:?}"),
    }
    publish(tmp.path(), &db, "pdf-f\u{43e}rms")
        .code(1)
        .says(&["looks like \"pdf-forms\""]);
    let reg = Registry::open_read_only(&db).unwrap();
    assert_eq!(
        reg.schema_version().unwrap(),
        skillcat::registry::SCHEMA_VERSION
    );
    let report = reg.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.versions, 1);
    drop(reg);
    let out = Skillcat::new(&["list", s(&db)]).run();
    assert!(out.code(0).out().contains("pdf-forms"), "{}", out.out());
}
