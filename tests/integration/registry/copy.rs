//! `skillcat registry check LOCATION` and `skillcat registry copy FROM TO` through the binary:
//! a registry verified whole, and copied into another (a file, a database, from a served
//! registry's URL) with identical digests, only what is new on a second run.

use std::path::Path;

use serde_json::Value as J;
use skillcat::registry::{Actor, PublishOptions, Registry};
use skillcat::source::{DirOptions, DirSource};

use crate::support::bin::{Skillcat, run};
use crate::support::central::doc;

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

fn actor(token: &str) -> Actor {
    Actor {
        token: token.into(),
        client: "127.0.0.1:4000".into(),
    }
}

/// A registry file with something of every kind a copy carries: pdf-forms@1.0.0 published on
/// behalf of a token with audit findings, signed-one@1.0.0 with a signature, alpha@1.0.0
/// (yanked on behalf of a token) and alpha@1.1.0.
async fn rich_registry(dir: &Path) -> String {
    let db = registry(dir, "from.db");
    // Signed: a key, the skill signed as `sign` signs it, published with its signature.
    let at = |args: &[&str]| Skillcat::new(args).cwd(dir).run();
    at(&["keygen", "-o", "k", "--unencrypted"]).code(0);
    let skill = dir.join("signed-one");
    std::fs::create_dir(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), doc("signed-one", "1.0.0", "signed")).unwrap();
    at(&[
        "sign",
        "signed-one",
        "signed-one",
        "--key",
        "k.key",
        "-o",
        "s.minisig",
    ])
    .code(0);
    at(&[
        "registry",
        "publish",
        "from.db",
        "signed-one",
        "--sig",
        "s.minisig",
    ])
    .code(0);

    let mut reg = Registry::open(&db).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills");
    let source = DirSource::open(&root, DirOptions::default()).unwrap();
    let opts = PublishOptions {
        version: Some("1.0.0".into()),
        ..Default::default()
    };
    let prepared = skillcat::publish::prepare(&source, "pdf-forms", &opts)
        .await
        .unwrap()
        .with_findings(r#"[{"rule":"network","severity":"warning"}]"#.into())
        .unwrap();
    reg.commit_as(&prepared, Some(&actor("ci"))).unwrap();
    assert!(
        reg.set_yanked_as("alpha", "1.0.0", true, &actor("ops"))
            .unwrap()
    );
    db
}

/// `registry versions LOCATION NAME --format json`, as JSON.
fn versions(db: &str, name: &str) -> J {
    let out = run(&["registry", "versions", db, name, "--format", "json"]);
    out.code(0).json()
}

/// The audit log of a registry file, oldest first, without its row ids.
fn audit_rows(db: &str) -> Vec<(i64, String, String, String, String, String, String)> {
    let reg = Registry::open_read_only(db).unwrap();
    let mut rows: Vec<_> = (reg.audit(1000, None).unwrap().into_iter())
        .map(|e| {
            (
                e.at, e.token, e.action, e.name, e.version, e.digest, e.client,
            )
        })
        .collect();
    rows.reverse();
    rows
}

fn copy_json(from: &str, to: &str) -> J {
    let out = run(&["registry", "copy", from, to, "--format", "json"]);
    out.code(0).json()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_is_copied_exactly_and_a_second_run_copies_only_what_is_new() {
    let tmp = tempfile::tempdir().unwrap();
    let from = rich_registry(tmp.path()).await;
    let to = tmp.path().join("to.db").display().to_string();

    let first = copy_json(&from, &to);
    assert_eq!(first["created"], true, "{first}");
    assert_eq!(first["versions"], 4, "{first}");
    assert_eq!(first["copied"], 4, "{first}");
    assert_eq!(first["failed"], serde_json::json!([]), "{first}");
    assert_eq!(first["audit"], 2, "{first}");
    // Every version alike: the same digests, publish times, yanks, latest and signatures.
    for name in ["alpha", "pdf-forms", "signed-one"] {
        assert_eq!(versions(&from, name), versions(&to, name), "{name}");
    }
    let alpha = versions(&to, "alpha");
    assert_eq!(alpha[0]["yanked"], true, "{alpha}");
    let signed = versions(&to, "signed-one");
    assert_eq!(
        signed[0]["signed_by"].as_array().unwrap().len(),
        1,
        "{signed}"
    );
    let (f, t) = (
        Registry::open_read_only(&from).unwrap(),
        Registry::open_read_only(&to).unwrap(),
    );
    let findings = t.findings("pdf-forms", "1.0.0").unwrap();
    assert!(
        findings.as_deref().unwrap().contains("network"),
        "{findings:?}"
    );
    assert_eq!(f.findings("pdf-forms", "1.0.0").unwrap(), findings);
    drop((f, t));
    assert_eq!(audit_rows(&from), audit_rows(&to));
    assert_eq!(audit_rows(&to).len(), 2);
    run(&["registry", "check", &to]).code(0);

    // Again: nothing new.
    let again = copy_json(&from, &to);
    assert_eq!(again["created"], false, "{again}");
    assert_eq!(again["copied"], 0, "{again}");
    assert_eq!(again["unchanged"], 4, "{again}");
    assert_eq!(again["audit"], 0, "{again}");
    assert_eq!(audit_rows(&to).len(), 2);

    // One new version and one unyank in FROM: exactly those.
    run(&[
        "registry",
        "publish",
        &from,
        &catalog("alpha"),
        "--version",
        "1.2.0",
    ])
    .code(0);
    run(&["registry", "yank", &from, "alpha@1.0.0", "--undo"]).code(0);
    let out = run(&["registry", "copy", &from, &to]);
    out.code(0);
    assert!(
        out.out().contains("Copied 1 version from ")
            && out.out().contains("(1 brought up to date, 3 already there"),
        "{}",
        out.out()
    );
    assert_eq!(versions(&from, "alpha"), versions(&to, "alpha"));
    assert_eq!(versions(&to, "alpha")[0]["yanked"], false);
}

#[test]
fn a_version_whose_blob_no_longer_hashes_is_refused_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let from = tmp.path().join("from.db").display().to_string();
    run(&["registry", "init", &from]).code(0);
    run(&[
        "registry",
        "publish",
        &from,
        &catalog("alpha"),
        "--version",
        "1.0.0",
    ])
    .code(0);
    run(&[
        "registry",
        "publish",
        &from,
        &catalog("beta-tool"),
        "--version",
        "2.0.0",
    ])
    .code(0);
    alter_first_blob(&from);
    let to = tmp.path().join("to.db").display().to_string();
    let out = run(&["registry", "copy", &from, &to, "--format", "json"]);
    let json = out.code(1).json();
    assert_eq!(json["copied"], 1, "{json}");
    let failed = json["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{json}");
    assert_eq!(failed[0]["name"], "alpha", "{json}");
    // Nothing of it written; the other version whole.
    let out = run(&["registry", "versions", &to, "alpha"]);
    out.code(1);
    run(&["registry", "versions", &to, "beta-tool"]).code(0);
    run(&["registry", "check", &to]).code(0);
    // Said in text too, with exit 1.
    let out = run(&["registry", "copy", &from, &to]);
    out.code(1);
    assert!(
        out.stderr.contains("Not copied: alpha@1.0.0:"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_copy_from_nowhere_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let from = tmp.path().join("missing.db").display().to_string();
    let to = tmp.path().join("to.db");
    run(&["registry", "copy", &from, to.to_str().unwrap()]).code(2);
    assert!(!to.exists());
    // Nor from a served registry that does not answer.
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", nobody.local_addr().unwrap());
    drop(nobody);
    let out = run(&["registry", "copy", &url, to.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(!to.exists(), "{}", out.stderr);
}

/// A registry in PostgreSQL is a SOURCE and a LOCATION like a file; whether this build
/// reaches it or has no PostgreSQL support, the password in its URL is never printed.
#[test]
fn a_postgres_url_is_a_registry_and_its_password_is_never_shown() {
    let url = "postgres://me:secret@127.0.0.1:1/skills";
    let shown = "postgres://me:***@127.0.0.1:1/skills";
    for args in [
        vec!["list", url],
        vec!["show", url, "alpha"],
        vec!["digest", url],
        vec!["registry", "versions", url, "alpha"],
        vec!["registry", "search", url, "pdf"],
        vec!["registry", "check", url],
        vec!["registry", "yank", url, "alpha@1.0.0"],
        vec!["registry", "copy", url, "sqlite:to.db"],
    ] {
        let out = Skillcat::new(&args)
            .cwd(tempfile::tempdir().unwrap().path())
            .run();
        assert_ne!(out.code, 0, "{args:?}");
        let all = format!("{}{}", out.out(), out.stderr);
        assert!(!all.contains("secret"), "{args:?}: {all}");
        assert!(all.contains(shown), "{args:?}: {all}");
        assert!(!all.contains("unsupported source"), "{args:?}: {all}");
    }
}

/// `registry copy URL TO`: a served registry read through its API and archives — every
/// version, digest, publish time, yank, signature and finding — and the audit log said not
/// carried.
#[tokio::test(flavor = "multi_thread")]
async fn a_served_registry_is_copied_through_its_api() {
    let tmp = tempfile::tempdir().unwrap();
    let from = rich_registry(tmp.path()).await;
    // Served for publishing, as a central registry is (its API serves findings).
    crate::support::central::token(tmp.path(), "ci", "*", "publish");
    let tokens = tmp.path().join("tokens.toml").display().to_string();
    let (child, _, url) = crate::support::serve::spawn_serve(
        Path::new(&from),
        &["--publish", "--tokens", &tokens],
        std::process::Stdio::null(),
    );
    let _server = Killed(child);
    let to = tmp.path().join("to.db").display().to_string();
    let out = run(&["registry", "copy", &url, &to, "--format", "json"]);
    let first = out.code(0).json();
    assert_eq!(first["copied"], 4, "{first}");
    assert_eq!(first["failed"], serde_json::json!([]), "{first}");
    assert_eq!(first["audit"], 0, "{first}");
    assert_eq!(first["from"], url.as_str(), "{first}");
    // Its change feed followed to its end (five changes: four publishes and a yank).
    assert_eq!(first["next"], 5, "{first}");
    let not_carried = first["not_carried"].to_string();
    assert!(not_carried.contains("audit log"), "{first}");
    for name in ["alpha", "pdf-forms", "signed-one"] {
        assert_eq!(versions(&from, name), versions(&to, name), "{name}");
    }
    let t = Registry::open_read_only(&to).unwrap();
    let findings = t.findings("pdf-forms", "1.0.0").unwrap();
    assert!(
        findings.as_deref().unwrap().contains("network"),
        "{findings:?}"
    );
    drop(t);
    run(&["registry", "check", &to]).code(0);
    // Again: nothing new.
    let again = run(&["registry", "copy", &url, &to, "--format", "json"]);
    let again = again.code(0).json();
    assert_eq!(again["copied"], 0, "{again}");
    assert_eq!(again["unchanged"], 4, "{again}");
    let out = run(&["registry", "copy", &url, &to]);
    assert!(
        out.stderr.contains("Not carried: the audit log"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("findings"), "{}", out.stderr);

    // Served only for reading, it has no findings route: said, not guessed.
    let (child, _, url) =
        crate::support::serve::spawn_serve(Path::new(&from), &[], std::process::Stdio::null());
    let _server = Killed(child);
    let other = tmp.path().join("other.db").display().to_string();
    let out = run(&["registry", "copy", &url, &other]);
    out.code(0);
    assert!(
        out.stderr.contains("Not carried: the audit findings of"),
        "{}",
        out.stderr
    );
    let o = Registry::open_read_only(&other).unwrap();
    assert_eq!(o.findings("pdf-forms", "1.0.0").unwrap(), None);
    drop(o);
}

/// A registry whose change feed names nothing (one older than its feed, a served registry
/// without the route): what it lists stands for it.
struct NoFeed(std::sync::Arc<dyn skillcat::registry::store::Store>);

#[async_trait::async_trait]
impl skillcat::registry::copy::Origin for NoFeed {
    fn shown(&self) -> String {
        self.0.display().to_string()
    }
    async fn changes(
        &self,
        since: i64,
        _limit: usize,
    ) -> skillcat::registry::Result<skillcat::registry::store::ChangePage> {
        Ok(skillcat::registry::store::ChangePage {
            changes: Vec::new(),
            next: since,
        })
    }
    async fn all_versions(
        &self,
    ) -> skillcat::registry::Result<Vec<skillcat::registry::VersionInfo>> {
        self.0.all_versions(None).await
    }
    async fn export(
        &self,
        name: &str,
        version: &str,
    ) -> skillcat::registry::Result<Option<skillcat::registry::store::VersionRecord>> {
        self.0.export(name, version).await
    }
    async fn findings(
        &self,
        name: &str,
        version: &str,
    ) -> skillcat::registry::Result<Option<String>> {
        self.0.findings(name, version).await
    }
    async fn audit_log(
        &self,
    ) -> skillcat::registry::Result<Option<Vec<skillcat::registry::AuditEntry>>> {
        Ok(None)
    }
}

/// The library's copy, from an origin whose feed is empty: every version it lists is copied,
/// with the same digests, and a second copy finds nothing new.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_feed_every_listed_version_is_copied() {
    use skillcat::registry::copy::{CopyOptions, copy};
    use skillcat::registry::store::{self, Location};
    let tmp = tempfile::tempdir().unwrap();
    let from = rich_registry(tmp.path()).await;
    let origin = NoFeed(store::open(&Location::parse(&from)).await.unwrap());
    let to_path = tmp.path().join("to.db").display().to_string();
    let to = store::init(&Location::parse(&to_path)).await.unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |e: skillcat::registry::copy::CopyEvent<'_>| {
        seen.lock().unwrap().push(format!("{e:?}"));
    };
    let opts = CopyOptions {
        progress: Some(&progress),
    };
    let report = copy(&origin, &*to, opts).await.unwrap();
    assert_eq!((report.versions, report.copied, report.next), (4, 4, 0));
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        5,
        "the total, then each version"
    );
    for name in ["alpha", "pdf-forms", "signed-one"] {
        assert_eq!(versions(&from, name), versions(&to_path, name), "{name}");
    }
    let again = copy(&origin, &*to, CopyOptions::default()).await.unwrap();
    assert_eq!((again.copied, again.unchanged), (0, 4), "{again:?}");
}

/// Moving in: `registry copy OLD.db postgres://…` carries every version, yank, signature,
/// finding and audit entry with the same digests, creates the registry in the empty database,
/// copies nothing on a second run; and the database copied back into a file is the same again.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_is_moved_into_postgres_and_back() {
    let tmp = tempfile::tempdir().unwrap();
    let from = rich_registry(tmp.path()).await;
    let (url, _db) = crate::support::postgres::shared().fresh_database();

    let first = copy_json(&from, &url);
    assert_eq!(first["created"], true, "{first}");
    assert_eq!(first["copied"], 4, "{first}");
    assert_eq!(first["audit"], 2, "{first}");
    assert_eq!(first["failed"], serde_json::json!([]), "{first}");
    for name in ["alpha", "pdf-forms", "signed-one"] {
        assert_eq!(versions(&from, name), versions(&url, name), "{name}");
    }
    run(&["registry", "check", &url]).code(0);
    // The database is a SOURCE as the file is: the same skills, bodies, files and digests.
    for args in [
        vec!["list"],
        vec!["digest"],
        vec!["show", "pdf-forms"],
        vec!["read", "alpha@1.0.0", "SKILL.md"],
    ] {
        let at = |db: &str| {
            let mut all = vec![args[0], db];
            all.extend(&args[1..]);
            let out = run(&all);
            out.code(0);
            out.out().replace(db, "DB")
        };
        let (file, database) = (at(&from), at(&url));
        assert!(!file.is_empty(), "{args:?}");
        assert_eq!(
            file.replace(
                &std::path::absolute(&from).unwrap().display().to_string(),
                "DB"
            ),
            database,
            "{args:?}"
        );
    }
    let again = copy_json(&from, &url);
    assert_eq!(
        (again["copied"].clone(), again["unchanged"].clone()),
        (0.into(), 4.into()),
        "{again}"
    );
    assert_eq!(again["audit"], 0, "{again}");

    let back = tmp.path().join("back.db").display().to_string();
    let out = copy_json(&url, &back);
    assert_eq!(out["copied"], 4, "{out}");
    for name in ["alpha", "pdf-forms", "signed-one"] {
        assert_eq!(versions(&from, name), versions(&back, name), "{name}");
    }
    assert_eq!(audit_rows(&from), audit_rows(&back));
    let b = Registry::open_read_only(&back).unwrap();
    let findings = b.findings("pdf-forms", "1.0.0").unwrap();
    assert!(
        findings.as_deref().unwrap().contains("network"),
        "{findings:?}"
    );
}

/// Every registry command on a database, through the binary, says what it says of a file.
#[test]
fn every_registry_command_takes_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("r.db").display().to_string();
    let (url, _db) = crate::support::postgres::shared().fresh_database();
    let both = |args: &[&str]| -> (String, String) {
        let at = |db: &str| {
            let all: Vec<&str> = args
                .iter()
                .map(|a| if *a == "DB" { db } else { a })
                .collect();
            let out = run(&all);
            out.code(0);
            let shown = std::path::absolute(db).unwrap().display().to_string();
            out.out().replace(&shown, "DB").replace(db, "DB")
        };
        (at(&file), at(&url))
    };
    // Each engine has its own migrations, so its own schema version.
    let (f, d) = both(&["registry", "init", "DB"]);
    for said in [f, d] {
        assert!(
            said.starts_with("Created registry DB (schema version "),
            "{said}"
        );
    }
    let alpha = catalog("alpha");
    for v in ["1.0.0", "1.1.0"] {
        let (f, d) = both(&["registry", "publish", "DB", &alpha, "--version", v]);
        assert_eq!(f, d);
        assert!(
            d.starts_with(&format!("Published alpha@{v} sha256:")),
            "{d}"
        );
    }
    let (f, d) = both(&["registry", "yank", "DB", "alpha@1.1.0"]);
    assert_eq!(
        (f.as_str(), d.as_str()),
        (d.as_str(), "Yanked alpha@1.1.0\nLatest alpha is 1.0.0\n")
    );
    let (f, d) = both(&["registry", "search", "DB", "alpha", "--format", "json"]);
    let (f, d): (J, J) = (
        serde_json::from_str(&f).unwrap(),
        serde_json::from_str(&d).unwrap(),
    );
    assert_eq!(f[0]["name"], "alpha");
    assert_eq!(f[0]["version"], d[0]["version"]);
    let (f, d) = (versions(&file, "alpha"), versions(&url, "alpha"));
    assert_eq!(f.as_array().unwrap().len(), 2);
    assert_eq!(f[0]["digest"], d[0]["digest"]);
    assert_eq!(f[1]["yanked"], d[1]["yanked"]);
    let (f, d) = both(&["registry", "check", "DB", "--format", "json"]);
    assert_eq!(f, d);
    // A database that holds a registry already is not created again (exit 1, as for a file).
    let out = run(&["registry", "init", &url]);
    out.code(1);
}

/// A server child killed when the test ends, passed or failed.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
