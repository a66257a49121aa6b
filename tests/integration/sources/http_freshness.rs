//! A client's view of an index cannot be frozen (issue 49, finding 5). A registry is exported
//! and served by a static server that stamps every answer `Cache-Control: max-age=315360000`
//! (what a MITM on http://, a mirror or a CDN can do), with an `ETag` and 304 answers; then a
//! version is published and the old one yanked, and the real binary runs against it.
//!
//! Hostile table (what must hold):
//! - ten years of `max-age`: `add`, `install` and `update` ask again (conditionally) anyway;
//! - read-only commands honour `max-age` only up to `--max-index-age` (default 1 h): within it
//!   no request, past it a conditional one;
//! - offline, a copy older than the cap is served with a warning on stderr;
//! - with `--index-keyring`, an index without a statement, one the statement does not sign
//!   (tampered), one whose statement expired (online and offline), one older than the version
//!   already seen (a rollback), or one signed by a key not in the keyring is refused.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::support::bin::run;
use crate::support::http_response;
use crate::support::project::{Project, skill};

const INDEX: &str = "/.well-known/agent-skills/index.json";

/// Request paths a server was sent.
type Log = Arc<Mutex<Vec<String>>>;

/// A static server over `root` on 127.0.0.1 that tells every client to keep every answer for
/// ten years; `ETag` = the content's digest, 304 on `If-None-Match`.
fn frozen_server(root: PathBuf) -> (String, Log) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let seen = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (root, seen) = (root.clone(), seen.clone());
            std::thread::spawn(move || {
                use std::io::{BufReader, Write};
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let Some(head) = crate::support::read_head_lines(&mut reader) else {
                    return;
                };
                let path = head[0].split(' ').nth(1).unwrap_or("/").to_string();
                let inm = head.iter().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("if-none-match")
                        .then(|| v.trim().to_string())
                });
                seen.lock().unwrap().push(path.clone());
                let rel = path.trim_start_matches('/');
                let reply = match (
                    rel.split('/').any(|c| c == ".."),
                    std::fs::read(root.join(rel)),
                ) {
                    (false, Ok(body)) => {
                        let etag =
                            format!("\"{}\"", crate::support::registry::sha256_digest(&body));
                        let cc = ("Cache-Control", "public, max-age=315360000");
                        if inm.as_deref() == Some(etag.as_str()) {
                            http_response(304, &[("ETag", &etag), cc], b"")
                        } else {
                            let ct = if rel.ends_with(".json") {
                                "application/json"
                            } else {
                                "application/octet-stream"
                            };
                            http_response(200, &[("ETag", &etag), ("Content-Type", ct), cc], &body)
                        }
                    }
                    _ => http_response(404, &[], b"not found\n"),
                };
                let _ = stream.write_all(&reply);
            });
        }
    });
    (url, log)
}

fn index_requests(log: &Log) -> usize {
    log.lock().unwrap().iter().filter(|p| *p == INDEX).count()
}

/// A registry holding alpha 1.0.0, exported to `site/` and served frozen.
struct Frozen {
    p: Project,
    db: String,
    site: PathBuf,
    url: String,
    log: Log,
    cache: String,
}

impl Frozen {
    fn new() -> Frozen {
        let p = Project::new();
        let db = p.path("skills.db").to_string_lossy().to_string();
        run(&["registry", "init", &db]).code(0);
        let site = p.path("site");
        let (url, log) = frozen_server(site.clone());
        let cache = p.path("cache").to_string_lossy().to_string();
        let f = Frozen {
            p,
            db,
            site,
            url,
            log,
            cache,
        };
        f.publish("1.0.0", "first");
        f
    }

    fn publish(&self, version: &str, body: &str) {
        let src = skill(
            &self.p.path(&format!("reg-{version}")),
            "alpha",
            version,
            body,
        );
        run(&["registry", "publish", &self.db, &src.to_string_lossy()]).code(0);
        self.export();
    }

    fn export(&self) {
        let site = self.site.to_string_lossy();
        run(&["export", &self.db, &site, "--force", "--url", &self.url]);
        assert!(self.site.join(INDEX.trim_start_matches('/')).is_file());
    }

    fn version_in(&self, p: &Project) -> String {
        p.lock()["skills"]["alpha"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

fn with_cache<'a>(args: &[&'a str], cache: &'a str) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["--cache", cache]);
    v
}

#[test]
fn add_install_and_update_ask_again_whatever_max_age_says() {
    let f = Frozen::new();
    let first = Project::new();
    first
        .run(&with_cache(&["add", &f.url, "alpha"], &f.cache))
        .code(0);
    assert_eq!(f.version_in(&first), "1.0.0");
    // A new version, and the old one yanked: the server's answers change.
    f.publish("1.1.0", "second");
    run(&["registry", "yank", &f.db, "alpha@1.0.0"]).code(0);
    f.export();
    let before = index_requests(&f.log);

    // `add` in another project sharing the cache: the new version, not the frozen yanked one.
    let second = Project::new();
    second
        .run(&with_cache(&["add", &f.url, "alpha"], &f.cache))
        .code(0);
    assert_eq!(f.version_in(&second), "1.1.0");
    assert!(
        std::fs::read_to_string(second.installed("alpha").join("SKILL.md"))
            .unwrap()
            .contains("second")
    );
    // `update` in the first: it moves off the yanked version.
    first.run(&with_cache(&["update"], &f.cache)).code(0);
    assert_eq!(f.version_in(&first), "1.1.0");
    // `install` (the lockfile as it is) asks again too: each command asked at least once.
    std::fs::remove_dir_all(second.root.join(".agents")).unwrap();
    second.run(&with_cache(&["install"], &f.cache)).code(0);
    assert!(
        index_requests(&f.log) >= before + 3,
        "every project-changing command revalidated the index: {:?}",
        f.log.lock().unwrap()
    );
}

#[test]
fn read_only_commands_honour_max_age_only_up_to_the_cap() {
    let f = Frozen::new();
    let p = Project::new();
    let list = |extra: &[&str]| {
        let mut args = vec!["list", f.url.as_str(), "--cache", f.cache.as_str()];
        args.extend(extra);
        p.run(&args)
    };
    list(&[]).code(0);
    assert_eq!(index_requests(&f.log), 1);
    // Within the cap (default 1 h) and within max-age: no request.
    list(&[]).code(0);
    assert_eq!(index_requests(&f.log), 1, "served from the cache");
    // A cap of 0: past it, asked again (a conditional request, answered 304).
    list(&["--max-index-age", "0s"]).code(0);
    assert_eq!(index_requests(&f.log), 2, "past the cap, asked again");
    // Offline: within the cap, nothing said; past it, the stale copy is named on stderr.
    let quiet = list(&["--offline"]);
    quiet.code(0);
    assert!(!quiet.stderr.contains("out of date"), "{}", quiet.stderr);
    list(&["--offline", "--max-index-age", "0s"])
        .code(0)
        .says(&["offline", "out of date"]);
    assert_eq!(index_requests(&f.log), 2, "offline asks nothing");
    // The configuration's `max_index_age` (seconds) sets the cap of a catalog's sources.
    let conf = p.path("skillcat.toml");
    std::fs::write(
        &conf,
        format!(
            "max_index_age = 0\ncache_dir = {:?}\n\n[[sources]]\npath = {:?}\n",
            f.cache, f.url
        ),
    )
    .unwrap();
    let conf = conf.to_string_lossy().to_string();
    p.run(&["list", "--config", &conf]).code(0);
    assert_eq!(
        index_requests(&f.log),
        3,
        "the configured cap of 0 asked again"
    );
    // A cap that is not a duration is a usage error.
    list(&["--max-index-age", "soon"]).code(2);
}

#[test]
fn export_signs_an_index_statement_that_a_keyring_checks() {
    let f = Frozen::new();
    let k = crate::support::project::key(&f.p.path(""), "catalog", "*");
    let site = f.site.to_string_lossy().to_string();
    let secret = k.secret.to_string_lossy().to_string();
    let catalog = f
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let sign = |expires: &str| {
        run(&[
            "export",
            &f.db,
            &site,
            "--force",
            "--url",
            &f.url,
            "--sign-index",
            &secret,
            "--index-expires",
            expires,
        ])
        .code(0);
        let index = std::fs::read(f.site.join(INDEX.trim_start_matches('/'))).unwrap();
        let sig = std::fs::read_to_string(
            f.site
                .join(INDEX.trim_start_matches('/'))
                .with_extension("json.minisig"),
        )
        .unwrap();
        (index, sig)
    };
    let ring = skillcat::sign::Keyring::load(&k.keyring).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (index, sig) = sign("1h");
    let ok = skillcat::sign::verify_index(&index, &sig, &ring, &catalog, now, None).unwrap();
    assert!(ok.statement.expires > now && ok.statement.expires <= now + 3_600 + 60);
    // Hostile: a tampered index, an expired statement, a rollback, another catalog.
    use skillcat::sign::IndexRefusal as R;
    let mut tampered = index.clone();
    tampered.extend_from_slice(b" ");
    assert!(matches!(
        skillcat::sign::verify_index(&tampered, &sig, &ring, &catalog, now, None),
        Err(R::Tampered { .. })
    ));
    assert!(matches!(
        skillcat::sign::verify_index(&index, &sig, &ring, &catalog, now + 7_200, None),
        Err(R::Expired { .. })
    ));
    assert!(matches!(
        skillcat::sign::verify_index(
            &index,
            &sig,
            &ring,
            &catalog,
            now,
            Some(ok.statement.version + 1)
        ),
        Err(R::RolledBack { .. })
    ));
    assert!(matches!(
        skillcat::sign::verify_index(&index, &sig, &ring, "other.example", now, None),
        Err(R::OtherCatalog { .. })
    ));
    // Signing needs --url (the catalog it names).
    run(&["export", &f.db, &site, "--force", "--sign-index", &secret]).code(2);
}

/// `export --sign-index` of the registry into the served site, valid for `expires`.
fn export_signed(f: &Frozen, secret: &str, expires: &str) {
    let site = f.site.to_string_lossy();
    run(&[
        "export",
        &f.db,
        &site,
        "--force",
        "--url",
        &f.url,
        "--sign-index",
        secret,
        "--index-expires",
        expires,
    ])
    .code(0);
}

/// The client with `--index-keyring` refuses what the statement does not vouch for: each
/// hostile case is first shown accepted without the keyring (what every client did before).
#[test]
fn a_keyring_refuses_an_unsigned_tampered_expired_or_rolled_back_index() {
    let f = Frozen::new();
    let k = crate::support::project::key(&f.p.path(""), "catalog", "*");
    let other = crate::support::project::key(&f.p.path(""), "stranger", "*");
    let secret = k.secret.to_string_lossy().to_string();
    let (ring, stranger) = (
        k.keyring.to_string_lossy().to_string(),
        other.keyring.to_string_lossy().to_string(),
    );
    let index_path = f.site.join(INDEX.trim_start_matches('/'));
    let statement_path = index_path.with_extension("json.minisig");
    let p = Project::new();
    // Always ask the server (a conditional request): each case is what it serves now.
    let list = |keyring: Option<&str>, extra: &[&str]| {
        let mut args = vec!["list", f.url.as_str(), "--cache", f.cache.as_str()];
        args.extend(["--max-index-age", "0s"]);
        if let Some(k) = keyring {
            args.extend(["--index-keyring", k]);
        }
        args.extend(extra);
        p.run(&args)
    };
    let listed = |keyring: Option<&str>| {
        let out = list(keyring, &[]);
        out.code(0);
        assert!(out.out().contains("alpha"), "{}", out.out());
    };
    let refused = |extra: &[&str], why: &[&str]| {
        let out = list(Some(&ring), extra);
        out.code(1);
        let mut said = vec!["catalog 127.0.0.1:", "refused"];
        said.extend(why);
        out.says(&said);
        assert!(!out.out().contains("alpha"), "{}", out.out());
    };

    // Unsigned (the plain export of Frozen::new): accepted without a keyring, refused with one.
    listed(None);
    refused(&[], &["no signed statement", "index.json.minisig"]);

    // Signed: listed; a keyring without the catalog's key refuses it.
    export_signed(&f, &secret, "1h");
    listed(Some(&ring));
    list(Some(&stranger), &[])
        .code(1)
        .says(&["refused", "signature"]);

    // Tampered: one byte more after the statement was signed.
    let signed = std::fs::read(&index_path).unwrap();
    let mut tampered = signed.clone();
    tampered.push(b'\n');
    std::fs::write(&index_path, &tampered).unwrap();
    listed(None);
    refused(&[], &["not the one signed"]);
    std::fs::write(&index_path, &signed).unwrap();
    listed(Some(&ring));

    // Rolled back: a newer export is seen, then the older index and statement are served.
    let old_statement = std::fs::read(&statement_path).unwrap();
    f.publish("1.1.0", "second");
    export_signed(&f, &secret, "1h");
    listed(Some(&ring));
    let (new_index, new_statement) = (
        std::fs::read(&index_path).unwrap(),
        std::fs::read(&statement_path).unwrap(),
    );
    std::fs::write(&index_path, &signed).unwrap();
    std::fs::write(&statement_path, &old_statement).unwrap();
    listed(None);
    refused(&[], &["rollback"]);
    std::fs::write(&index_path, &new_index).unwrap();
    std::fs::write(&statement_path, &new_statement).unwrap();
    listed(Some(&ring));

    // Expired: the current index, re-signed (a version higher still) with an expiry passed.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let catalog = f.url.trim_start_matches("http://").trim_end_matches('/');
    let current = std::str::from_utf8(&new_statement).unwrap();
    let comment = current
        .lines()
        .find_map(|l| l.strip_prefix("trusted comment: "))
        .unwrap();
    let version = skillcat::sign::IndexStatement::from_trusted_comment(comment)
        .unwrap()
        .version;
    let expired = skillcat::sign::IndexStatement::of(catalog, &new_index, version + 1, now - 60)
        .sign(&std::fs::read_to_string(&k.secret).unwrap(), None)
        .unwrap();
    std::fs::write(&statement_path, expired).unwrap();
    listed(None);
    refused(&[], &["expired"]);
    // Offline, the cached copy and its cached (expired) statement are refused just the same.
    refused(&["--offline"], &["expired"]);
    // A keyring that cannot be read is a usage error.
    list(Some("/nonexistent/keyring.toml"), &[]).code(2);
}

/// `serve --sign-index` publishes the statement of the index it serves: a client with the
/// catalog's keyring lists it, a client with another keyring refuses it.
#[test]
fn serve_signs_the_index_it_serves() {
    let f = Frozen::new();
    let k = crate::support::project::key(&f.p.path(""), "catalog", "*");
    let other = crate::support::project::key(&f.p.path(""), "stranger", "*");
    let secret = k.secret.to_string_lossy().to_string();
    let (mut child, _, url) = crate::support::serve::spawn_serve(
        std::path::Path::new(&f.db),
        &["--sign-index", &secret],
        std::process::Stdio::null(),
    );
    let p = Project::new();
    let list = |keyring: &std::path::Path| {
        let ring = keyring.to_string_lossy().to_string();
        p.run(&["list", &url, "--cache", &f.cache, "--index-keyring", &ring])
    };
    let out = list(&k.keyring);
    out.code(0);
    assert!(out.out().contains("alpha"), "{}", out.out());
    list(&other.keyring).code(1).says(&["refused", "signature"]);
    let _ = child.kill();
    let _ = child.wait();
    // A central registry signs the index it serves now: a publish through its API changes the
    // index, and the statement the client fetches next signs the new one.
    let dir = f.p.path("");
    let token = crate::support::central::token(&dir, "ci", "*", "publish");
    let tokens = dir.join("tokens.toml");
    let (mut child, line, url) = crate::support::serve::spawn_serve(
        std::path::Path::new(&f.db),
        &[
            "--sign-index",
            &secret,
            "--publish",
            "--tokens",
            tokens.to_str().unwrap(),
        ],
        std::process::Stdio::null(),
    );
    assert!(line.contains("publishing at /api/v1/"), "{line}");
    let list = |keyring: &std::path::Path| {
        let ring = keyring.to_string_lossy().to_string();
        p.run(&["list", &url, "--cache", &f.cache, "--index-keyring", &ring])
    };
    let out = list(&k.keyring);
    out.code(0);
    assert!(out.out().contains("alpha"), "{}", out.out());
    let src = skill(&f.p.path("central-beta"), "beta", "1.0.0", "second");
    p.sc(&["publish", &url, &src.to_string_lossy()])
        .env("SKILLCAT_TOKEN", &token)
        .run()
        .code(0);
    let out = list(&k.keyring);
    out.code(0);
    assert!(
        out.out().contains("alpha") && out.out().contains("beta"),
        "{}",
        out.out()
    );
    list(&other.keyring).code(1).says(&["refused", "signature"]);
    let _ = child.kill();
    let _ = child.wait();
}
