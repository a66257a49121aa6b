//! `skillcat registry check LOCATION` and `skillcat registry copy FROM TO` through the binary:
//! a registry verified whole, and copied into another (a file, a database, from a served
//! registry's URL) with identical digests, only what is new on a second run.

use crate::support::bin::run;

fn catalog(root: &str) -> String {
    format!(
        "{}/fixtures/conformance/catalog/{root}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A registry file holding alpha@1.0.0 and alpha@1.1.0.
fn registry(dir: &std::path::Path, name: &str) -> String {
    let db = dir.join(name).display().to_string();
    run(&["registry", "init", &db]).code(0);
    for v in ["1.0.0", "1.1.0"] {
        run(&[
            "registry",
            "publish",
            &db,
            &catalog("alpha"),
            "--version",
            v,
        ])
        .code(0);
    }
    db
}

#[test]
fn check_says_a_sound_registry_is_sound_and_names_an_altered_blob() {
    let tmp = tempfile::tempdir().unwrap();
    let db = registry(tmp.path(), "r.db");
    let out = run(&["registry", "check", &db]);
    out.code(0);
    assert!(out.out().contains("blobs"), "{}", out.out());
    let json = run(&["registry", "check", &db, "--format", "json"]);
    let json = json.code(0).json();
    assert_eq!(json["problems"], serde_json::json!([]), "{json}");
    assert_eq!(json["versions"], 2, "{json}");
    assert!(json["blobs"].as_u64().unwrap() >= 1, "{json}");

    alter_first_blob(&db);
    let out = run(&["registry", "check", &db]);
    out.code(1);
    let all = format!("{}{}", out.out(), out.stderr);
    assert!(all.contains("blob 1:"), "{all}");
    let json = run(&["registry", "check", &db, "--format", "json"]);
    let json = json.code(1).json();
    assert!(!json["problems"].as_array().unwrap().is_empty(), "{json}");

    // Nothing there: exit 2, as for every registry command.
    let missing = tmp.path().join("missing.db").display().to_string();
    run(&["registry", "check", &missing]).code(2);
}

/// The bytes of the registry file's first blob changed behind its back (its immutability
/// trigger dropped for the update and put back exactly as it was), its sha256 left as it was.
fn alter_first_blob(db: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let trigger: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'blob_immutable'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute_batch(&format!(
        "DROP TRIGGER blob_immutable;
         UPDATE blob SET content = CAST(upper(CAST(content AS TEXT)) AS BLOB)
          WHERE id = (SELECT min(id) FROM blob);
         {trigger};"
    ))
    .unwrap();
}
