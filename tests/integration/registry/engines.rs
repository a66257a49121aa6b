//! The same registry in SQLite and in PostgreSQL gives the same answers: one scenario (the
//! conformance catalog, versions, yanks, signatures, findings, audited writes, refusals) run
//! against a registry file and a fresh database through the `Store` trait, every answer
//! compared. Search is compared by the names it finds, in order, not by score (bm25 and
//! ts_rank score differently).
//!
//! Origin: step 30 (issue 52: a registry beyond one machine).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as J;
use skillcat::publish::prepare;
use skillcat::registry::store::{self, Location, Store};
use skillcat::registry::{Actor, PublishOptions, RegistryError, VersionInfo};
use skillcat::source::{DirOptions, DirSource};

use crate::support::postgres;

fn catalog() -> Vec<J> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog.json");
    serde_json::from_str::<J>(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn version(v: &str) -> PublishOptions<'static> {
    PublishOptions {
        version: Some(v.into()),
        ..Default::default()
    }
}

/// Writes a skill `name` with `body` under `dir/name`.
fn skill(dir: &Path, name: &str, description: &str, body: &str) {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
    .unwrap();
}

fn actor(token: &str) -> Option<Actor> {
    Some(Actor {
        token: token.into(),
        client: "127.0.0.1".into(),
    })
}

/// A listing without its publish time (the two registries were written seconds apart).
fn timeless(mut v: Vec<VersionInfo>) -> Vec<VersionInfo> {
    for i in &mut v {
        i.published_at = 0;
        i.published = String::new();
    }
    v
}

/// Everything the scenario asks of a store, as one comparable value (errors as their kind).
async fn run(store: Arc<dyn Store>, dir: &Path) -> Vec<(String, String)> {
    let mut said: Vec<(String, String)> = Vec::new();
    let mut say = |what: &str, v: String| said.push((what.to_string(), v));
    let catalog_src = DirSource::open(
        &skillcat_core::testing::catalog_dir(),
        DirOptions::default(),
    )
    .unwrap();
    for case in catalog() {
        let root = case["root"].as_str().unwrap();
        let opts = if root == "flow-lists" {
            PublishOptions::default()
        } else {
            version("1.0.0")
        };
        let Ok(p) = prepare(&catalog_src, root, &opts).await else {
            continue;
        };
        let published = store.commit(Arc::new(p), None).await;
        say(&format!("publish {root}"), format!("{published:?}"));
    }

    // Versions of one skill, published through "a server" (audited, with findings).
    let src_dir = dir.join("src");
    let versions = ["1.0.0", "1.2.0", "0.9.0", "2.0.0-beta.1", "1.10.0"];
    for (i, v) in versions.iter().enumerate() {
        skill(
            &src_dir,
            "pdf-forms",
            &format!("Fill PDF forms, edition {i}"),
            &format!("Fill forms in PDF files. Release {v} of the form filler."),
        );
        let src = DirSource::open(&src_dir, DirOptions::default()).unwrap();
        let p = prepare(&src, "pdf-forms", &version(v))
            .await
            .unwrap()
            .with_findings(format!("[{{\"rule\":\"r{i}\"}}]"))
            .unwrap();
        let published = store.commit(Arc::new(p), actor("ci")).await;
        say(&format!("publish pdf-forms@{v}"), format!("{published:?}"));
    }
    // The same again: unchanged. Other content under a published version: immutable.
    let src = DirSource::open(&src_dir, DirOptions::default()).unwrap();
    let again = prepare(&src, "pdf-forms", &version("1.10.0"))
        .await
        .unwrap();
    say(
        "again",
        format!("{:?}", store.commit(Arc::new(again), actor("ci")).await),
    );
    let other = prepare(&src, "pdf-forms", &version("1.0.0")).await.unwrap();
    let refused = store.commit(Arc::new(other), actor("ci")).await;
    assert!(
        matches!(refused, Err(RegistryError::Immutable { .. })),
        "{refused:?}"
    );
    say("immutable", format!("{refused:?}"));
    // Same precedence, other spelling: a conflict.
    let twin = prepare(&src, "pdf-forms", &version("1.2.0+build.7"))
        .await
        .unwrap();
    say(
        "conflict",
        format!("{:?}", store.commit(Arc::new(twin), None).await),
    );
    // A look-alike name (a Cyrillic `о`), and a name mixing scripts.
    let look_dir = dir.join("look");
    skill(&look_dir, "pdf-fоrms", "Looks alike", "Body.");
    skill(&look_dir, "skillх", "Mixes scripts", "Body.");
    let src = DirSource::open(&look_dir, DirOptions::default()).unwrap();
    for root in ["pdf-fоrms", "skillх"] {
        let r = match prepare(&src, root, &version("1.0.0")).await {
            Ok(p) => store.commit(Arc::new(p), None).await,
            Err(e) => Err(e),
        };
        assert!(
            matches!(
                r,
                Err(RegistryError::LookAlike { .. } | RegistryError::MixedScripts { .. })
            ),
            "{root}: {r:?}"
        );
        say(&format!("refused {root}"), format!("{r:?}"));
    }
    // A bad signature is refused before any store is asked: the same either way.
    let bad = PublishOptions {
        version: Some("3.0.0".into()),
        signature: Some("not a signature".into()),
        ..Default::default()
    };
    say(
        "bad signature",
        format!(
            "{:?}",
            prepare(&src_dir_source(&src_dir), "pdf-forms", &bad)
                .await
                .err()
        ),
    );

    // Yanks.
    for (v, yanked) in [
        ("1.10.0", true),
        ("1.10.0", true),
        ("1.2.0", true),
        ("1.2.0", false),
    ] {
        let r = store.set_yanked("pdf-forms", v, yanked, actor("ops")).await;
        say(&format!("yank {v} {yanked}"), format!("{r:?}"));
    }
    let missing = store.set_yanked("pdf-forms", "9.9.9", true, None).await;
    assert!(matches!(missing, Err(RegistryError::NotFound(_))));
    let missing = store.set_yanked("no-such", "1.0.0", true, None).await;
    assert!(matches!(missing, Err(RegistryError::NotFound(_))));
    // A skill every version of which is yanked.
    store
        .set_yanked("flow-lists", "2.0.0", true, None)
        .await
        .unwrap();

    // Reads.
    say(
        "versions",
        format!("{:?}", timeless(store.versions("pdf-forms").await.unwrap())),
    );
    say(
        "all_versions",
        format!("{:?}", timeless(store.all_versions(None).await.unwrap())),
    );
    say(
        "yanked",
        format!("{:?}", timeless(store.yanked(None).await.unwrap())),
    );
    say(
        "all_yanked",
        format!("{:?}", store.all_yanked().await.unwrap()),
    );
    let latest = store.latest("pdf-forms").await.unwrap().map(|i| i.version);
    say("latest", format!("{latest:?}"));
    let mut got = store.get("pdf-forms", "1.2.0").await.unwrap().unwrap();
    got.info.published_at = 0;
    got.info.published.clear();
    say("get", format!("{got:?}"));
    say(
        "get missing",
        format!("{:?}", store.get("pdf-forms", "7.0.0").await.unwrap()),
    );
    say(
        "findings",
        format!("{:?}", store.findings("pdf-forms", "0.9.0").await),
    );
    say(
        "findings none",
        format!("{:?}", store.findings("alpha", "1.0.0").await),
    );
    say(
        "findings missing",
        format!("{:?}", store.findings("alpha", "5.0.0").await.is_err()),
    );
    let pins = store.pins().await.unwrap();
    say(
        "pins",
        format!(
            "{:?}",
            pins.iter()
                .map(|p| format!("{}@{} {}", p.name, p.version, p.yanked))
                .collect::<Vec<_>>()
        ),
    );
    for pin in &pins {
        let files = store.version_files(pin).await.unwrap();
        say(&format!("files {}", pin.name), format!("{files:?}"));
        for f in &files {
            let bytes = store.read_file(pin, &f.path).await.unwrap().unwrap();
            say(
                &format!("read {}/{}", pin.name, f.path),
                format!("{bytes:?}"),
            );
        }
        assert_eq!(store.read_file(pin, "no/such").await.unwrap(), None);
        say(
            &format!("signatures {}", pin.name),
            format!("{:?}", store.signatures(pin).await.unwrap()),
        );
    }
    let yanked_pin = store
        .resolve("pdf-forms", Some("1.10.0"))
        .await
        .unwrap()
        .unwrap();
    say(
        "resolve yanked",
        format!("{} {}", yanked_pin.version, yanked_pin.yanked),
    );
    say(
        "resolve missing",
        format!("{:?}", store.resolve("nope", None).await.unwrap()),
    );
    let contents = store.version_contents("pdf-forms", "1.10.0").await.unwrap();
    say("contents", format!("{contents:?}"));
    // `true`: the order is compared too (a clear best first); `false`: the hits only, for a
    // query whose hits tie on the words asked (bm25 then weighs document length, ts_rank
    // does not).
    for (q, ordered) in [
        ("alpha", true),
        ("pdf forms", true),
        ("form", true),
        ("test needs", false),
        ("release", true),
        ("pdf-forms", true),
        ("кириллическим", true),
        ("\"", true),
        ("", true),
    ] {
        let (hits, total) = store
            .search_page(q, 0, 50, Duration::from_secs(10))
            .await
            .unwrap();
        let mut names: Vec<String> = hits
            .iter()
            .map(|h| format!("{}@{}", h.name, h.version))
            .collect();
        if !ordered {
            names.sort();
        }
        say(&format!("search {q:?}"), format!("{names:?} of {total}"));
    }
    let audit = store.audit(100, None, &|_| true).await.unwrap();
    say(
        "audit",
        format!(
            "{:?}",
            audit
                .iter()
                .map(|e| (
                    &e.token, &e.action, &e.name, &e.version, &e.digest, &e.client
                ))
                .collect::<Vec<_>>()
        ),
    );
    let only = store.audit(2, None, &|n| n == "pdf-forms").await.unwrap();
    say("audit page", format!("{}", only.len()));
    let mut publishers: Vec<_> = store.publishers(None).await.unwrap().into_iter().collect();
    publishers.sort();
    say("publishers", format!("{publishers:?}"));
    let report = store.check().await.unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    say(
        "check",
        format!("{} blobs, {} versions", report.blobs, report.versions),
    );
    // The change feed: the same changes, in the same order, paged the same way.
    let page = store.changes(0, 1000).await.unwrap();
    say(
        "changes",
        format!(
            "{:?} next {}",
            page.changes
                .iter()
                .map(|c| (c.seq, &c.name, &c.version, c.action))
                .collect::<Vec<_>>(),
            page.next
        ),
    );
    say("head", format!("{}", store.head().await.unwrap()));
    let page = store.changes(3, 2).await.unwrap();
    say(
        "changes page",
        format!(
            "{:?} {}",
            page.changes.iter().map(|c| c.seq).collect::<Vec<_>>(),
            page.next
        ),
    );
    said
}

/// Every version of `from` copied into `to` through export and import; how many were new.
async fn copy(from: &dyn Store, to: &dyn Store) -> usize {
    let mut copied = 0;
    for info in from.all_versions(None).await.unwrap() {
        let record = from
            .export(&info.name, &info.version)
            .await
            .unwrap()
            .unwrap();
        if to.import(record).await.unwrap() == store::Imported::Copied {
            copied += 1;
        }
    }
    let audit = from.audit(10_000, None, &|_| true).await.unwrap();
    to.import_audit(audit).await.unwrap();
    copied
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_copies_exactly_between_the_engines_and_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _db) = postgres::fresh_database();
    let (url2, _db2) = postgres::fresh_database();
    let sqlite = store::init(&Location::File(tmp.path().join("a.db")))
        .await
        .unwrap();
    run(Arc::clone(&sqlite), &tmp.path().join("src")).await;
    let pg = store::init(&Location::parse(&url)).await.unwrap();
    let n = sqlite.all_versions(None).await.unwrap().len();
    assert_eq!(copy(&*sqlite, &*pg).await, n);
    // Again: nothing new.
    assert_eq!(copy(&*sqlite, &*pg).await, 0);
    // PostgreSQL to a new file, and to another database.
    let back = store::init(&Location::File(tmp.path().join("b.db")))
        .await
        .unwrap();
    assert_eq!(copy(&*pg, &*back).await, n);
    let pg2 = store::init(&Location::parse(&url2)).await.unwrap();
    assert_eq!(copy(&*pg, &*pg2).await, n);
    for s in [&sqlite, &pg, &back, &pg2] {
        assert!(s.check().await.unwrap().is_ok(), "{}", s.display());
    }
    // The same versions, digests, publish times, yanks and signatures everywhere.
    let want = sqlite.all_versions(None).await.unwrap();
    for s in [&pg, &back, &pg2] {
        assert_eq!(s.all_versions(None).await.unwrap(), want, "{}", s.display());
        assert_eq!(
            s.all_yanked().await.unwrap(),
            sqlite.all_yanked().await.unwrap()
        );
        assert_eq!(
            s.findings("pdf-forms", "0.9.0").await.unwrap(),
            sqlite.findings("pdf-forms", "0.9.0").await.unwrap()
        );
        let audit = |e: &skillcat::registry::AuditEntry| {
            (
                e.at,
                e.token.clone(),
                e.action.clone(),
                e.name.clone(),
                e.digest.clone(),
            )
        };
        let a: Vec<_> = s
            .audit(1000, None, &|_| true)
            .await
            .unwrap()
            .iter()
            .map(audit)
            .collect();
        let b: Vec<_> = sqlite
            .audit(1000, None, &|_| true)
            .await
            .unwrap()
            .iter()
            .map(audit)
            .collect();
        assert_eq!(a, b, "{}", s.display());
    }
}

fn src_dir_source(dir: &Path) -> DirSource {
    DirSource::open(dir, DirOptions::default()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_and_postgres_give_the_same_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _db) = postgres::fresh_database();
    let sqlite = store::init(&Location::File(tmp.path().join("reg.db")))
        .await
        .unwrap();
    let pg = store::init(&Location::parse(&url)).await.unwrap();
    let a = run(sqlite, &tmp.path().join("a")).await;
    let b = run(pg, &tmp.path().join("b")).await;
    assert_eq!(a.len(), b.len());
    for ((what, x), (_, y)) in a.iter().zip(&b) {
        // Error messages name their registry: compared without it.
        let x = x.replace(&tmp.path().join("reg.db").display().to_string(), "REG");
        let y = y.replace(&url, "REG");
        assert_eq!(x, y, "{what}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_registry_source_passes_the_conformance_suite() {
    let (url, _db) = postgres::fresh_database();
    let location = Location::parse(&url);
    let pg = store::init(&location).await.unwrap();
    let src = DirSource::open(
        &skillcat_core::testing::catalog_dir(),
        DirOptions::default(),
    )
    .unwrap();
    for case in skillcat_core::testing::cases() {
        let root = case["root"].as_str().unwrap();
        let opts = if root == "flow-lists" {
            PublishOptions::default()
        } else {
            version("1.0.0")
        };
        let prepared = prepare(&src, root, &opts).await;
        if case["valid"].as_bool().unwrap() {
            let p = prepared.unwrap_or_else(|e| panic!("{root}: {e}"));
            let published = pg.commit(Arc::new(p), None).await.unwrap();
            assert_eq!(published.digest, case["digest"].as_str().unwrap(), "{root}");
        } else {
            assert!(prepared.is_err(), "{root}");
        }
    }
    // Read back through the registry source, as `list`, `show` and `read` do.
    let source = skillcat::registry::RegistrySource::connect(&location)
        .await
        .unwrap();
    skillcat_core::testing::check_valid_subset(&source).await;
}
