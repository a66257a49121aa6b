//! `registry gc`: the blobs of a registry's object storage that no version references are
//! collected after a grace period; a registry that keeps its blobs in its database (a file) has
//! nothing to collect and is left as it was.
//!
//! Origin: step 30 (issue 52: a crash between a blob's write and its row's commit leaves an
//! unreferenced blob, "collected later").

use std::path::Path;

use crate::support::bin::run;

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
