//! The SQLite registry's source passes the conformance suite (`skillcat_core::testing`) for the
//! catalog's valid skills: every root of the fixture catalog is published, the invalid ones are
//! refused with their recorded faults, and a `RegistrySource` over the file gives the valid
//! roots' files, executable bits, digests and names.
//!
//! Origin: step 3 (issue 4: the SQLite registry), moved here from the integration tests'
//! `registry/local.rs` by step 28 (issue 50) so the crate checks the store it owns.

use skillcat_core::source::{DirOptions, DirSource};
use skillcat_core::testing;
use skillcat_registry::{Outcome, PublishOptions, Registry, RegistrySource};

#[tokio::test]
async fn registry_source_passes_the_conformance_suite_for_valid_skills() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("skills.db");
    let mut reg = Registry::init(&db).unwrap();
    let src = DirSource::open(&testing::catalog_dir(), DirOptions::default()).unwrap();
    let cases = testing::cases();
    for case in &cases {
        let root = case["root"].as_str().unwrap();
        // flow-lists carries metadata.version 2.0.0; the others need a version given.
        let (opts, version) = if root == "flow-lists" {
            (PublishOptions::default(), "2.0.0")
        } else {
            let opts = PublishOptions {
                version: Some("1.0.0".into()),
                ..Default::default()
            };
            (opts, "1.0.0")
        };
        let result = reg.publish(&src, root, &opts).await;
        if case["valid"].as_bool().unwrap() {
            let p = result.unwrap_or_else(|e| panic!("{root}: {e}"));
            assert_eq!(p.outcome, Outcome::Published);
            assert_eq!(p.digest, case["digest"].as_str().unwrap(), "{root}");
            assert_eq!(p.version, version);
        } else {
            let err = result.expect_err(root);
            let kinds: Vec<&str> = err.faults().iter().map(|f| f.kind().as_str()).collect();
            let want: Vec<&str> = case["fault_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect();
            assert_eq!(kinds, want, "{root}: {err}");
            assert!(err.is_refusal(), "{root}");
        }
    }
    let skills: i64 = reg
        .connection()
        .query_row("SELECT count(*) FROM skill", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        skills as usize,
        testing::valid_roots().len(),
        "refused skills leave no row"
    );
    assert!(reg.check().unwrap().is_ok());
    drop(reg);
    let src = RegistrySource::open(&db).unwrap();
    testing::check_valid_subset(&src).await;
}
