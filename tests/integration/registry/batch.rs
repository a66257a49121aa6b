//! A publish of many skills commits them in batches (one transaction, a savepoint each), and
//! each version is still all or nothing: one refused or failing in the middle of a batch is
//! absent, every other one of the batch is published, and the registry stays sound.
//!
//! Origin: step 29 (issue 51, item 18: 2,000 skills published in seconds, not 39 s).

use std::path::Path;

use skillcat::publish::prepare;
use skillcat::registry::{PublishOptions, Registry, RegistryError};
use skillcat::source::{DirOptions, DirSource};

use crate::support::bin::run;

/// `dir/NAME/SKILL.md` at version 1.0.0 with `body`, and a reference of its own.
fn skill(dir: &Path, name: &str, body: &str) {
    crate::support::write_skill(
        &dir.join(name),
        &format!(
            "---\nname: {name}\ndescription: Does {name} things. Use when testing batches.\n\
             metadata:\n  version: \"1.0.0\"\n---\n{body}\n"
        ),
        &[("references/notes.md", &format!("notes of {name}\n"), false)],
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_refused_version_in_the_middle_of_a_batch_leaves_the_others_published() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two, three) = (
        tmp.path().join("one"),
        tmp.path().join("two"),
        tmp.path().join("three"),
    );
    skill(&one, "alpha", "Body A.");
    skill(&one, "beta", "Body of beta.");
    // The same version with other content: refused, after alpha's write in the same batch.
    skill(&two, "alpha", "Body B, other content.");
    skill(&three, "gamma", "Body of gamma.");
    let db = tmp.path().join("r.db");
    run(&["registry", "init", s(&db)]).code(0);
    let out = run(&["registry", "publish", s(&db), s(&one), s(&two), s(&three)]);
    out.code(1);
    let published: Vec<&str> = out
        .out()
        .lines()
        .filter_map(|l| l.strip_prefix("Published "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        published,
        ["alpha@1.0.0", "beta@1.0.0", "gamma@1.0.0"],
        "{}",
        out.out()
    );
    assert!(
        out.stderr.contains("alpha") && out.stderr.contains("publish a new version"),
        "{}",
        out.stderr
    );
    // alpha is the first content, whole; the refused one is nowhere.
    let digest = |src: &Path| run(&["digest", s(src)]).out().trim().to_string();
    let alpha = run(&["digest", s(&db), "alpha"]);
    alpha.code(0);
    assert_eq!(
        alpha.out().trim(),
        digest(&one.join("alpha")).trim(),
        "the first alpha is kept"
    );
    let reg = Registry::open_read_only(&db).unwrap();
    assert_eq!(reg.versions("alpha").unwrap().len(), 1);
    assert!(reg.check().unwrap().is_ok());
}

/// A version that fails half-way through its write (here: a trigger refuses its text, after its
/// skill row, blobs and version row are written) is rolled back alone: its savepoint, not the
/// batch.
#[tokio::test]
async fn a_version_failing_half_written_in_a_batch_is_rolled_back_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("skills");
    skill(&dir, "alpha", "Body of alpha.");
    skill(&dir, "broken", "Body of broken: FAIL.");
    skill(&dir, "gamma", "Body of gamma.");
    let src = DirSource::open(&dir, DirOptions::default()).unwrap();
    let opts = PublishOptions::default();
    let mut prepared = Vec::new();
    for name in ["alpha", "broken", "gamma"] {
        prepared.push(prepare(&src, name, &opts).await.unwrap());
    }
    let db = tmp.path().join("r.db");
    let mut reg = Registry::init(&db).unwrap();
    reg.connection()
        .execute_batch(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.version_text \
             WHEN NEW.body LIKE '%FAIL%' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        )
        .unwrap();
    let results = reg.commit_many(&prepared);
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert!(
        matches!(&results[1], Err(RegistryError::Sqlite { source, .. })
            if source.to_string().contains("refused by the test")),
        "{results:?}"
    );
    drop(reg);
    let reg = Registry::open_read_only(&db).unwrap();
    let count = |sql: &str| -> i64 { reg.connection().query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM skill WHERE name = 'broken'"), 0);
    assert_eq!(count("SELECT count(*) FROM version"), 2);
    // alpha's and gamma's documents and notes: broken's blobs went with it.
    assert_eq!(count("SELECT count(*) FROM blob"), 4);
    assert!(reg.latest("alpha").unwrap().is_some() && reg.latest("gamma").unwrap().is_some());
    assert!(reg.check().unwrap().is_ok());
}
