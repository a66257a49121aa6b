//! The audit log of a registry: a write made on someone's behalf appends exactly one row in its
//! own transaction; a write that changes nothing appends none; rows cannot be altered.
//!
//! Origin: step 11 (issue 16: a central registry over HTTP).

use skillcat::registry::{Actor, Outcome, PublishOptions, Registry};
use skillcat::source::{DirOptions, DirSource};

fn actor(token: &str) -> Actor {
    Actor {
        token: token.into(),
        client: "127.0.0.1:4000".into(),
    }
}

#[tokio::test]
async fn writes_on_behalf_of_a_token_are_logged_once_and_no_ops_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut reg = Registry::init(dir.path().join("r.db")).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills");
    let source = DirSource::open(&root, DirOptions::default()).unwrap();
    let opts = PublishOptions {
        version: Some("1.0.0".into()),
        ..Default::default()
    };
    let prepared = skillcat::publish::prepare(&source, "pdf-forms", &opts)
        .await
        .unwrap();

    let first = reg.commit_as(&prepared, Some(&actor("ci"))).unwrap();
    assert_eq!(first.outcome, Outcome::Published);
    let again = reg.commit_as(&prepared, Some(&actor("ci"))).unwrap();
    assert_eq!(again.outcome, Outcome::Unchanged);
    assert!(
        reg.set_yanked_as("pdf-forms", "1.0.0", true, &actor("ops"))
            .unwrap()
    );
    assert!(
        !reg.set_yanked_as("pdf-forms", "1.0.0", true, &actor("ops"))
            .unwrap()
    );
    assert!(
        reg.set_yanked_as("pdf-forms", "1.0.0", false, &actor("ops"))
            .unwrap()
    );
    // A local write (no actor) is not logged.
    assert!(reg.yank("pdf-forms", "1.0.0").unwrap());

    let log = reg.audit(10, None).unwrap();
    let rows: Vec<(&str, &str, &str, &str)> = log
        .iter()
        .map(|e| {
            (
                e.token.as_str(),
                e.action.as_str(),
                e.name.as_str(),
                e.version.as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("ops", "unyank", "pdf-forms", "1.0.0"),
            ("ops", "yank", "pdf-forms", "1.0.0"),
            ("ci", "publish", "pdf-forms", "1.0.0"),
        ]
    );
    for e in &log {
        assert_eq!(e.digest, first.digest);
        assert_eq!(e.client, "127.0.0.1:4000");
        assert!(e.time.ends_with('Z') && e.at > 0);
    }
    // Paging: older than the newest row.
    let older = reg.audit(1, Some(log[0].id)).unwrap();
    assert_eq!(older, vec![log[1].clone()]);

    // Append-only, even to raw SQL.
    for sql in ["UPDATE audit SET token = 'x'", "DELETE FROM audit"] {
        let e = reg.connection().execute(sql, []).unwrap_err();
        assert!(e.to_string().contains("append-only"), "{e}");
    }
    assert_eq!(reg.audit(10, None).unwrap().len(), 3);
}
