//! What only a PostgreSQL registry has: one migrator at a time, immutability enforced by its
//! triggers against raw SQL, a change feed in commit order, LISTEN wakes, a database that goes
//! away and comes back, and search that never fails on hostile text.
//!
//! Origin: step 30 (issue 52: a registry beyond one machine).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use skillcat::publish::prepare;
use skillcat::registry::store::postgres::{CHANGE_LOCK, PgStore};
use skillcat::registry::store::{self, ChangeAction, Location, Store};
use skillcat::registry::{PublishOptions, RegistryError};
use skillcat::source::{DirOptions, DirSource};

use crate::support::postgres::{self, Cluster};

fn skill(dir: &Path, name: &str, body: &str) {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill\n---\n{body}\n"),
    )
    .unwrap();
}

async fn publish(store: &dyn Store, dir: &Path, name: &str, version: &str) {
    skill(dir, name, &format!("{name} release {version}"));
    let src = DirSource::open(dir, DirOptions::default()).unwrap();
    let opts = PublishOptions {
        version: Some(version.into()),
        ..Default::default()
    };
    let p = prepare(&src, name, &opts).await.unwrap();
    store.commit(Arc::new(p), None).await.unwrap();
}

/// A hang guard: a test that would wait forever fails instead (never a timing assertion).
async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what} never happened"))
}

#[tokio::test(flavor = "multi_thread")]
async fn one_migrator_at_a_time_and_init_refuses_what_it_must() {
    let (url, db) = postgres::fresh_database();
    // Opening a database that holds no registry: missing.
    let missing = PgStore::open(&url, false).await.unwrap_err();
    assert!(
        matches!(missing, RegistryError::Missing { .. }),
        "{missing}"
    );
    // Two creators at once: the lock lets one migrate; the other finds the registry made.
    let (a, b) = tokio::join!(PgStore::open(&url, true), PgStore::open(&url, true));
    let oks = [a.is_ok(), b.is_ok()].iter().filter(|x| **x).count();
    assert_eq!(oks, 1, "{a:?} {b:?}");
    let refused = a.err().or(b.err()).unwrap();
    assert!(
        matches!(refused, RegistryError::AlreadyExists { .. }),
        "{refused}"
    );
    let cluster = db.cluster();
    assert_eq!(
        cluster.psql(db.name(), "SELECT count(*) FROM schema_migrations"),
        skillcat::registry::store::postgres::SCHEMA_VERSION.to_string()
    );
    // Any number of openers at once all succeed.
    let (a, b, c) = tokio::join!(
        PgStore::open(&url, false),
        PgStore::open(&url, false),
        PgStore::open(&url, false)
    );
    for s in [a, b, c] {
        assert_eq!(s.unwrap().schema_version().await.unwrap(), 1);
    }
    // A database holding other tables is not made a registry.
    let (other, other_db) = postgres::fresh_database();
    other_db
        .cluster()
        .psql(other_db.name(), "CREATE TABLE accounts (id int)");
    let err = store::init(&Location::parse(&other)).await.unwrap_err();
    assert!(
        matches!(err, RegistryError::NotARegistry { .. }) && err.to_string().contains("accounts"),
        "{err}"
    );
    // The modes that would verify the server's certificate are refused in words.
    let err = PgStore::open(&format!("{url}?sslmode=verify-full"), false)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("verify-full"), "{err}");
    // TLS required of a server that has none: refused, never sent in the clear.
    let err = PgStore::open(&format!("{url}?sslmode=require"), false)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unavailable { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sslmode_require_encrypts_every_connection() {
    let tmp = tempfile::tempdir().unwrap();
    // A server certificate for the cluster, readable by the server alone.
    let certs = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (crt, pem) = (
        certs.path().join("server.crt"),
        certs.path().join("server.key"),
    );
    std::fs::write(&crt, key.cert.pem()).unwrap();
    std::fs::write(&pem, key.signing_key.serialize_pem()).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pem, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(certs.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    if rustix::process::geteuid().is_root() {
        let status = std::process::Command::new("chown")
            .arg("postgres")
            .args([&crt, &pem])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let cluster = Cluster::private_with(&format!(
        "-c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
        crt.display(),
        pem.display()
    ));
    cluster.psql("postgres", "CREATE DATABASE reg");
    let url = format!("{}?sslmode=require", cluster.url("reg"));
    let store = PgStore::open(&url, true).await.unwrap();
    publish(&store, tmp.path(), "alpha", "1.0.0").await;
    let mut wake = store.wake().unwrap();
    within("listening", wake.changed()).await.unwrap();
    // Every connection of the store (the pool's, the listener's) is encrypted.
    let count = |ssl: bool| {
        cluster.psql(
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid \
                 WHERE a.application_name = 'skillcat' AND a.datname = 'reg' AND s.ssl = {ssl}"
            ),
        )
    };
    assert_ne!(count(true), "0");
    assert_eq!(count(false), "0");
    assert_eq!(store.pins().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_database_refuses_to_rewrite_history() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, db) = postgres::fresh_database();
    let store = PgStore::open(&url, true).await.unwrap();
    publish(&store, tmp.path(), "alpha", "1.0.0").await;
    let cluster = db.cluster();
    for sql in [
        "UPDATE version SET description = 'rewritten'",
        "UPDATE version SET body = 'rewritten'",
        "UPDATE version SET skill_digest = sha256(skill_digest)",
        "UPDATE version SET published_at = 0",
        "DELETE FROM version",
        "TRUNCATE version CASCADE",
        "UPDATE file SET executable = NOT executable",
        "DELETE FROM file",
        "UPDATE blob SET content = 'x'",
        "DELETE FROM change",
    ] {
        let err = cluster.psql_err(db.name(), sql).expect_err(sql);
        assert!(
            err.contains("immutable") || err.contains("never") || err.contains("append-only"),
            "{sql}: {err}"
        );
    }
    // Only the yank flag moves.
    cluster.psql(db.name(), "UPDATE version SET yanked = true");
    assert!(store.versions("alpha").await.unwrap()[0].yanked);
    assert!(store.check().await.unwrap().is_ok());
    // Bytes altered behind the triggers' back (a superuser disabling them) are refused on
    // read and reported by the check; so is a gap in the change feed.
    cluster.psql(
        db.name(),
        "ALTER TABLE blob DISABLE TRIGGER blob_immutable; \
         UPDATE blob SET content = 'altered', size = 7; \
         ALTER TABLE change DISABLE TRIGGER change_never_updated; \
         UPDATE change SET seq = seq + 5",
    );
    let pin = store
        .resolve("alpha", Some("1.0.0"))
        .await
        .unwrap()
        .unwrap();
    let err = store.read_file(&pin, "SKILL.md").await.unwrap_err();
    assert!(matches!(err, RegistryError::Corrupt { .. }), "{err}");
    let report = store.check().await.unwrap();
    let problems = report.problems.join("\n");
    assert!(problems.contains("digest mismatch"), "{problems}");
    assert!(problems.contains("alpha@1.0.0"), "{problems}");
    assert!(problems.contains("change feed"), "{problems}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_change_feed_follows_commit_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, db) = postgres::fresh_database();
    let store = Arc::new(PgStore::open(&url, true).await.unwrap());
    publish(&*store, tmp.path(), "alpha", "1.0.0").await;
    assert_eq!(store.head().await.unwrap(), 1);
    // Transaction A takes the next sequence first, and holds it…
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.batch_execute("BEGIN").await.unwrap();
    client
        .execute("SELECT pg_advisory_xact_lock($1)", &[&CHANGE_LOCK])
        .await
        .unwrap();
    let a: i64 = client
        .query_one(
            "INSERT INTO change (seq, name, version, action, at) \
             SELECT coalesce(max(seq), 0) + 1, 'manual', '1.0.0', 'publish', 0 FROM change \
             RETURNING seq",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    // …while B (a yank through the store) starts later and must wait for it.
    let b = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.set_yanked("alpha", "1.0.0", true, None).await }
    });
    let waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted";
    within("B waiting for the change lock", async {
        while db.cluster().psql(db.name(), waiting) == "0" {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // A poller sees neither yet: nothing to skip past.
    assert_eq!(store.head().await.unwrap(), 1);
    client.batch_execute("COMMIT").await.unwrap();
    assert!(b.await.unwrap().unwrap());
    let page = store.changes(0, 100).await.unwrap();
    let seqs: Vec<i64> = page.changes.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(a, 2);
    assert_eq!(page.changes[2].action, ChangeAction::Yank);
    assert_eq!(page.next, 3);
    assert_eq!(store.changes(3, 100).await.unwrap().changes, []);
    assert_eq!(store.changes(1, 1).await.unwrap().next, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_publish_wakes_every_listener() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, db) = postgres::fresh_database();
    let writer = PgStore::open(&url, true).await.unwrap();
    let reader = PgStore::open(&url, false).await.unwrap();
    let mut wake = reader.wake().unwrap();
    // The first wake says "listening" (changes may have been missed before it).
    within("listening", wake.changed()).await.unwrap();
    let _ = wake.borrow_and_update();
    publish(&writer, tmp.path(), "alpha", "1.0.0").await;
    within("the publish's wake", wake.changed()).await.unwrap();
    assert_eq!(reader.head().await.unwrap(), 1);
    // The LISTEN connections end with their stores.
    drop((reader, writer));
    let listening = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' AND query LIKE 'LISTEN%'",
        db.name()
    );
    within("the listeners' end", async {
        while db.cluster().psql("postgres", &listening) != "0" {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_database_is_unavailable_and_recovered_from() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = Cluster::private();
    cluster.psql("postgres", "CREATE DATABASE reg");
    let url = cluster.url("reg");
    let store = PgStore::open(&url, true).await.unwrap();
    publish(&store, tmp.path(), "alpha", "1.0.0").await;
    let mut wake = store.wake().unwrap();
    within("listening", wake.changed()).await.unwrap();
    let _ = wake.borrow_and_update();

    // Every connection terminated: the pool replaces them, the listener reconnects.
    assert!(cluster.terminate_backends("reg") >= 1);
    within("a wake after the listener reconnects", wake.changed())
        .await
        .unwrap();
    let _ = wake.borrow_and_update();
    assert_eq!(store.pins().await.unwrap().len(), 1);

    // Stopped: reads and writes are unavailable, never a panic.
    cluster.stop();
    let err = store.pins().await.unwrap_err();
    assert!(matches!(err, RegistryError::Unavailable { .. }), "{err}");
    let err = store
        .set_yanked("alpha", "1.0.0", true, None)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unavailable { .. }), "{err}");
    // Back: the same store recovers by itself.
    cluster.start();
    within("recovery", async {
        while store.pins().await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        store
            .set_yanked("alpha", "1.0.0", true, None)
            .await
            .unwrap()
    );
    within("a wake after the restart", wake.changed())
        .await
        .unwrap();
    // A store opened while the database is down says so.
    cluster.stop();
    let err = PgStore::open(&url, false).await.unwrap_err();
    assert!(matches!(err, RegistryError::Unavailable { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn search_never_errors_on_hostile_text() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _db) = postgres::fresh_database();
    let store = PgStore::open(&url, true).await.unwrap();
    publish(&store, tmp.path(), "alpha", "1.0.0").await;
    publish(&store, tmp.path(), "beta-tool", "1.0.0").await;
    let mut hostile: Vec<String> = [
        "",
        " ",
        "\t\n",
        "\"",
        "\"\"",
        "-",
        "--",
        "-alpha",
        ":",
        "name:",
        "name:alpha",
        "{name description}: alpha",
        "NEAR(",
        "NEAR(alpha beta",
        "NEAR(a b, 2)",
        "*",
        "alpha*",
        "^alpha",
        "+",
        "AND",
        "OR",
        "NOT",
        "alpha AND",
        "OR alpha",
        ")",
        "(",
        "()",
        "'",
        "'; DROP TABLE skill; --",
        "\\",
        "\0",
        "a\0b",
        "навык",
        "ẞ ß ﬁ",
        "🦀 emoji",
        "\u{202E}rtl",
        "e\u{301}",
        "%",
        "_",
        "?",
        "[",
        "]",
        "alpha\"beta",
        "&",
        "|",
        "!",
        "<->",
        "alpha & beta",
        "!alpha",
        "alpha:*",
        "a <-> b",
        "$1",
        "@@",
        "::tsquery",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    hostile.push("x".repeat(10 * 1024));
    hostile.push("\"".repeat(10 * 1024));
    hostile.push("NEAR( ".repeat(2 * 1024));
    hostile.push("é".repeat(5 * 1024));
    hostile.push(
        (0..10 * 1024)
            .map(|i| char::from(b"\"-:*()^+ aAN!&|<>"[i % 17]))
            .collect(),
    );
    for q in &hostile {
        let (hits, _) = store
            .search_page(q, 0, 5, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("{:?}: {e}", &q[..q.len().min(40)]));
        assert!(hits.len() <= 5);
    }
    let (hits, total) = store
        .search_page("alpha", 0, 5, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!((hits[0].name.as_str(), total), ("alpha", 1));
    // Past the last page: no hits, the total all the same.
    let (hits, total) = store
        .search_page("release", 5, 5, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!((hits.len(), total), (0, 2));
}

/// Blobs held in memory, as object storage would hold them (`fail`: every put fails).
#[derive(Debug, Default)]
struct MemBlobs {
    held: std::sync::Mutex<std::collections::HashMap<[u8; 32], bytes::Bytes>>,
    fail: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl skillcat::registry::store::blobs::BlobStore for MemBlobs {
    fn url(&self) -> &str {
        "memory:"
    }
    async fn put(&self, sha256: &[u8; 32], bytes: bytes::Bytes) -> skillcat::registry::Result<()> {
        if self.fail.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(RegistryError::Unavailable {
                what: "memory:".into(),
                reason: "the object store is down".into(),
            });
        }
        self.held.lock().unwrap().insert(*sha256, bytes);
        Ok(())
    }
    async fn get(&self, sha256: &[u8; 32]) -> skillcat::registry::Result<Option<bytes::Bytes>> {
        Ok(self.held.lock().unwrap().get(sha256).cloned())
    }
    async fn list(&self) -> skillcat::registry::Result<Vec<([u8; 32], i64)>> {
        Ok(self.held.lock().unwrap().keys().map(|k| (*k, 0)).collect())
    }
    async fn delete(&self, sha256: &[u8; 32]) -> skillcat::registry::Result<()> {
        self.held.lock().unwrap().remove(sha256);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn blobs_in_object_storage_are_written_first_and_hashed_on_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, db) = postgres::fresh_database();
    let blobs = Arc::new(MemBlobs::default());
    let store = PgStore::open_with_blobs(&url, true, blobs.clone())
        .await
        .unwrap();
    assert_eq!(store.blobs_url().await.unwrap().as_deref(), Some("memory:"));
    publish(&store, tmp.path(), "alpha", "1.0.0").await;
    // The bytes are in the object store only; the rows say where.
    let cluster = db.cluster();
    assert_eq!(
        cluster.psql(
            db.name(),
            "SELECT count(*) FROM blob WHERE content IS NOT NULL"
        ),
        "0"
    );
    assert_eq!(blobs.held.lock().unwrap().len(), 1);
    assert_eq!(store.referenced_blobs().await.unwrap().len(), 1);
    let pin = store.resolve("alpha", None).await.unwrap().unwrap();
    let read = store.read_file(&pin, "SKILL.md").await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&read).contains("alpha release 1.0.0"));
    assert!(store.check().await.unwrap().is_ok());

    // A store that fails a put: nothing is committed (never a row without its bytes).
    blobs.fail.store(true, std::sync::atomic::Ordering::Relaxed);
    skill(tmp.path(), "beta", "beta");
    let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
    let opts = PublishOptions {
        version: Some("1.0.0".into()),
        ..Default::default()
    };
    let p = prepare(&src, "beta", &opts).await.unwrap();
    let err = store.commit(Arc::new(p), None).await.unwrap_err();
    assert!(matches!(err, RegistryError::Unavailable { .. }), "{err}");
    assert!(store.versions("beta").await.unwrap().is_empty());
    assert_eq!(cluster.psql(db.name(), "SELECT count(*) FROM blob"), "1");
    blobs
        .fail
        .store(false, std::sync::atomic::Ordering::Relaxed);

    // Altered bytes in the object store are refused, and `check` reports them.
    for bytes in blobs.held.lock().unwrap().values_mut() {
        *bytes = bytes::Bytes::from_static(b"altered");
    }
    let err = store.read_file(&pin, "SKILL.md").await.unwrap_err();
    assert!(matches!(err, RegistryError::Corrupt { .. }), "{err}");
    let report = store.check().await.unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    // Gone altogether: the same.
    blobs.held.lock().unwrap().clear();
    let err = store.read_file(&pin, "SKILL.md").await.unwrap_err();
    assert!(matches!(err, RegistryError::Corrupt { .. }), "{err}");

    // Reopened with another blob store than the one the database names: refused.
    let other = PgStore::open_with_blobs(&url, false, Arc::new(MemBlobsElsewhere))
        .await
        .unwrap_err();
    assert!(other.to_string().contains("memory:"), "{other}");
}

#[derive(Debug)]
struct MemBlobsElsewhere;

#[async_trait::async_trait]
impl skillcat::registry::store::blobs::BlobStore for MemBlobsElsewhere {
    fn url(&self) -> &str {
        "memory:elsewhere"
    }
    async fn put(&self, _: &[u8; 32], _: bytes::Bytes) -> skillcat::registry::Result<()> {
        Ok(())
    }
    async fn get(&self, _: &[u8; 32]) -> skillcat::registry::Result<Option<bytes::Bytes>> {
        Ok(None)
    }
    async fn list(&self) -> skillcat::registry::Result<Vec<([u8; 32], i64)>> {
        Ok(Vec::new())
    }
    async fn delete(&self, _: &[u8; 32]) -> skillcat::registry::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_publishes_through_two_stores_all_land_in_one_ordered_feed() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _db) = postgres::fresh_database();
    let a = Arc::new(PgStore::open(&url, true).await.unwrap());
    let b = Arc::new(PgStore::open(&url, false).await.unwrap());
    // Skills sharing two blobs in opposite path order, and versions of one skill, prepared
    // first and committed all at once through both stores.
    let mut prepared = Vec::new();
    for i in 0..12 {
        let name = format!("skill-{i}");
        let root = tmp.path().join(&name);
        skill(tmp.path(), &name, &format!("Skill {i}."));
        let (first, second) = if i % 2 == 0 { ("P", "Q") } else { ("Q", "P") };
        std::fs::write(root.join("a.txt"), first).unwrap();
        std::fs::write(root.join("b.txt"), second).unwrap();
        prepared.push((name, "1.0.0".to_string()));
    }
    for v in ["1.0.0", "1.1.0", "2.0.0", "0.1.0"] {
        prepared.push(("shared".into(), v.into()));
    }
    let mut tasks = Vec::new();
    for (i, (name, version)) in prepared.into_iter().enumerate() {
        let dir = tmp.path().join(format!("v{i}"));
        skill(&dir, &name, &format!("{name} {version}"));
        if name != "shared" {
            for f in ["a.txt", "b.txt"] {
                std::fs::copy(tmp.path().join(&name).join(f), dir.join(&name).join(f)).unwrap();
            }
        }
        let src = DirSource::open(&dir, DirOptions::default()).unwrap();
        let opts = PublishOptions {
            version: Some(version.clone()),
            ..Default::default()
        };
        let p = Arc::new(prepare(&src, &name, &opts).await.unwrap());
        let store = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move { store.commit(p, None).await }));
    }
    let n = tasks.len();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let page = a.changes(0, 1000).await.unwrap();
    let seqs: Vec<i64> = page.changes.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, (1..=n as i64).collect::<Vec<_>>());
    assert_eq!(a.latest("shared").await.unwrap().unwrap().version, "2.0.0");
    assert_eq!(b.pins().await.unwrap().len(), 13);
    let report = b.check().await.unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_search_past_its_deadline_is_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _db) = postgres::fresh_database();
    let store = PgStore::open(&url, true).await.unwrap();
    publish(&store, tmp.path(), "alpha", "1.0.0").await;
    // Another session holds the search table: the search waits until its deadline stops it.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("BEGIN; LOCK TABLE skill_search IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let err = store
        .search_page("alpha", 0, 5, Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(err.is_interrupted(), "{err}");
    let core: skillcat::Error = err.into();
    assert_eq!(core.kind(), skillcat::ErrorKind::Interrupted);
    client.batch_execute("COMMIT").await.unwrap();
    let (hits, _) = store
        .search_page("alpha", 0, 5, Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
}

/// A database the binary cannot reach says why, with the driver's cause: the port refused,
/// a server without TLS under `sslmode=require`, a password the server asks for and none
/// given (and where to give one), a wrong password — never the password itself.
#[test]
fn a_database_that_cannot_be_reached_says_why() {
    let said = |url: &str| {
        let out = crate::support::bin::run(&["list", url]);
        out.code(2);
        out.stderr.clone()
    };
    let refused = said("postgres://me@127.0.0.1:1/skills");
    assert!(refused.contains("Connection refused"), "{refused}");
    let (url, _db) = postgres::shared().fresh_database();
    let no_tls = said(&format!("{url}?sslmode=require"));
    assert!(no_tls.contains("server does not support TLS"), "{no_tls}");
    // A cluster that asks pwuser for a password (its own pg_hba.conf, readable by the server).
    let hba_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let hba = hba_dir.path().join("pg_hba.conf");
    std::fs::write(
        &hba,
        "host all postgres 127.0.0.1/32 trust\nhost all pwuser 127.0.0.1/32 scram-sha-256\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hba, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(hba_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let cluster = Cluster::private_with(&format!("-c hba_file={}", hba.display()));
    cluster.psql("postgres", "CREATE ROLE pwuser LOGIN PASSWORD 'right'");
    cluster.psql("postgres", "CREATE DATABASE reg OWNER pwuser");
    let url = format!("postgres://pwuser@127.0.0.1:{}/reg", cluster.port());
    let missing = said(&url);
    assert!(missing.contains("asks for a password"), "{missing}");
    assert!(missing.contains("PGPASSWORD"), "{missing}");
    // Not "unavailable": waiting will not bring a password.
    assert!(!missing.contains("unavailable"), "{missing}");
    assert!(!missing.contains("invalid configuration"), "{missing}");
    let wrong = said(&url.replace("pwuser@", "pwuser:n0tright@"));
    assert!(wrong.contains("password authentication failed"), "{wrong}");
    assert!(!wrong.contains("n0tright"), "{wrong}");
    // A password file others may read is ignored, as libpq ignores it, and the refusal says so.
    let pgpass = hba_dir.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!("127.0.0.1:{}:*:pwuser:right\n", cluster.port()),
    )
    .unwrap();
    let with_file = |mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(mode)).unwrap();
        crate::support::bin::Skillcat::new(&["registry", "init", &url])
            .env("PGPASSFILE", &pgpass)
            .env_remove("PGPASSWORD")
            .run()
    };
    let open = with_file(0o644);
    open.code(2);
    assert!(open.stderr.contains("chmod 600"), "{}", open.stderr);
    assert!(
        open.stderr.contains(&pgpass.display().to_string()),
        "{}",
        open.stderr
    );
    with_file(0o600).code(0);
}

/// `export postgres://… DIR` writes the static site of a registry in PostgreSQL, as of a file:
/// its skills, and the versions it keeps.
#[test]
fn a_registry_in_postgres_is_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _db) = postgres::shared().fresh_database();
    let run = crate::support::bin::run;
    run(&["registry", "init", &url]).code(0);
    for v in ["1.0.0", "1.1.0"] {
        skill(tmp.path(), "alpha", &format!("alpha release {v}"));
        let dir = tmp.path().join("alpha").display().to_string();
        run(&["registry", "publish", &url, &dir, "--version", v]).code(0);
    }
    let site = tmp.path().join("site");
    let out = run(&["export", &url, &site.display().to_string()]);
    out.code(0);
    assert!(out.out().starts_with("Exported 1 skill "), "{}", out.out());
    let index = std::fs::read_to_string(site.join(".well-known/agent-skills/index.json")).unwrap();
    assert!(index.contains("\"alpha\""), "{index}");
    assert!(index.contains("1.1.0"), "{index}");
}

/// A database that holds no registry, read as a SOURCE, says so and how to create one, as the
/// `registry` commands say it (not a bare "not found: URL").
#[test]
fn a_database_without_a_registry_says_how_to_create_one() {
    let (url, _db) = postgres::shared().fresh_database();
    for args in [vec!["list", &url], vec!["show", &url, "alpha"]] {
        let out = crate::support::bin::run(&args);
        out.code(2);
        assert!(
            out.stderr.contains(&format!(
                "does not exist (create it with `skillcat registry init {url}`)"
            )),
            "{args:?}: {}",
            out.stderr
        );
    }
}

/// A connection string skillcat refuses (a `sslmode` it does not implement) is no "path
/// rejected": it says what is wrong with the URL, and what to use.
#[test]
fn a_refused_connection_string_is_not_a_path() {
    let out =
        crate::support::bin::run(&["list", "postgres://me@127.0.0.1:1/r?sslmode=verify-full"]);
    out.code(2);
    assert!(!out.stderr.contains("path rejected"), "{}", out.stderr);
    assert!(out.stderr.contains("use sslmode=require"), "{}", out.stderr);
}
