//! The second hour of a user running a registry (issue 35), through the real binary on
//! 127.0.0.1: what a central registry answers names skills and versions, never the server's
//! files; yanked versions stay readable through a served registry; a registry whose every
//! version is yanked says so; `serve --publish` of a directory and `verify` of a registry file
//! say what to do; the server logs yanks; `fetch` says which digest it prints; and one rule for
//! OCI's `latest` (push moves it, a read without a tag finds it, else the highest version tag).

use std::path::Path;

use serde_json::Value as J;

use crate::support::bin::{Out, Skillcat};
use crate::support::central::{doc, registry_dir, token};
use crate::support::project::key;
use crate::support::publish::{Answer, Server, send};
use crate::support::registry::Registry as OciRegistry;
use crate::support::serve::spawn_serve;
use crate::support::write_skill;

/// `skillcat ARGS…` in `dir`, with no token or CA from the environment.
fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env_remove("SKILLCAT_TOKEN")
        .env_remove("SSL_CERT_FILE")
        .run()
}

/// Writes `dir/NAME-VERSION/` (the skill at that version) and publishes it to `url` with the
/// token in `dir/ci.token`.
fn publish(dir: &Path, url: &str, name: &str, version: &str) {
    let folder = format!("{name}-{version}");
    write_skill(
        &dir.join(&folder).join(name),
        &doc(name, version, &format!("Version {version}.")),
        &[("references/notes.md", "Notes.\n", false)],
    );
    let skill = dir.join(&folder).join(name);
    run(
        dir,
        &[
            "publish",
            url,
            skill.to_str().unwrap(),
            "--token-file",
            "ci.token",
        ],
    )
    .code(0);
}

/// A registry folder with a token `ci` (every right) in `ci.token`.
fn registry_with_token() -> (tempfile::TempDir, String) {
    let tmp = registry_dir();
    let ci = token(tmp.path(), "ci", "*", "publish,yank,audit");
    std::fs::write(tmp.path().join("ci.token"), format!("{ci}\n")).unwrap();
    (tmp, ci)
}

/// The served v0.2.0 index.
async fn index_of(url: &str) -> J {
    let text = reqwest::get(format!("{url}.well-known/agent-skills/index.json"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every refusal the publishing API can give, each checked for the server's files: the
/// registry's folder (which holds the registry, the token file and the keyring) never appears
/// in an answer; the server logs the full error instead. `yank URL NAME@VERSION` of a version
/// that does not exist names the version, not the registry file.
#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_of_the_api_names_skills_and_versions_never_server_files() {
    let (tmp, ci) = registry_with_token();
    let dir = tmp.path();
    let folder = dir.to_str().unwrap().to_string();
    let real = std::fs::canonicalize(dir).unwrap();
    let real = real.to_str().unwrap().to_string();
    let reader = token(dir, "reader", "*", "audit");
    let narrow = token(dir, "narrow", "pdf-*", "publish,yank");
    let gone = token(dir, "gone", "*", "publish");
    run(dir, &["token", "revoke", "--tokens", "tokens.toml", "gone"]).code(0);
    let ring = key(dir, "signer", "signed-*");
    let keyring = ring.keyring.to_str().unwrap().to_string();
    let s = Server::start(
        dir,
        &[
            "--max-upload",
            "64KiB",
            "--max-version-files",
            "3",
            "--writes-per-minute",
            "1000",
        ],
    );
    publish(dir, &s.url, "tool-a", "1.0.0");

    let api = |url: &str, rest: &str| format!("{url}api/v1/{rest}");
    let archive = |name: &str, version: &str, body: &str| -> Vec<u8> {
        let d = doc(name, version, body);
        crate::support::registry::tar_gz(&[("SKILL.md", &d, false)])
    };
    let put = reqwest::Method::PUT;
    let del = reqwest::Method::DELETE;
    let get = reqwest::Method::GET;
    let u = s.url.clone();
    let mut answers: Vec<(&str, Answer)> = Vec::new();
    let a = send(
        del.clone(),
        api(&u, "skills/tool-a/9.9.9/yank"),
        Some(&ci),
        vec![],
        &[],
    )
    .await;
    a.is(404, Some("not_found"));
    assert!(a.detail().contains("tool-a@9.9.9"), "{}", a.text);
    answers.push(("yank of a missing version", a));
    let a = send(
        put.clone(),
        api(&u, "skills/tool-a/9.9.9/unyank"),
        Some(&ci),
        vec![],
        &[],
    )
    .await;
    a.is(404, Some("not_found"));
    answers.push(("unyank of a missing version", a));
    let a = send(
        del.clone(),
        api(&u, "skills/nobody/1.0.0/yank"),
        Some(&ci),
        vec![],
        &[],
    )
    .await;
    a.is(404, Some("not_found"));
    answers.push(("yank of a missing skill", a));
    let a = send(get.clone(), api(&u, "nothing-here"), Some(&ci), vec![], &[]).await;
    a.is(404, Some("not_found"));
    answers.push(("an unknown route", a));
    let a = send(
        del.clone(),
        api(&u, "skills/tool-a/1.0.0/yank"),
        None,
        vec![],
        &[],
    )
    .await;
    a.is(401, Some("unauthorized"));
    answers.push(("no token", a));
    let a = send(
        del.clone(),
        api(&u, "skills/tool-a/1.0.0/yank"),
        Some("sk_x"),
        vec![],
        &[],
    )
    .await;
    a.is(401, Some("unauthorized"));
    answers.push(("an unknown token", a));
    let a = send(
        put.clone(),
        api(&u, "skills/tool-a/1.0.1"),
        Some(&gone),
        vec![],
        &[],
    )
    .await;
    a.is(401, Some("unauthorized"));
    answers.push(("a revoked token", a));
    let a = send(
        del.clone(),
        api(&u, "skills/tool-a/1.0.0/yank"),
        Some(&reader),
        vec![],
        &[],
    )
    .await;
    a.is(403, Some("forbidden"));
    answers.push(("no right", a));
    let a = send(
        del.clone(),
        api(&u, "skills/tool-a/1.0.0/yank"),
        Some(&narrow),
        vec![],
        &[],
    )
    .await;
    a.is(403, Some("forbidden"));
    answers.push(("out of scope", a));
    let body = archive("tool-a", "1.0.0", "Other content.");
    let a = send(
        put.clone(),
        api(&u, "skills/tool-a/1.0.0"),
        Some(&ci),
        body,
        &[],
    )
    .await;
    a.is(409, Some("immutable"));
    answers.push(("other content under a published version", a));
    let body = archive("tооl-a", "1.0.0", "");
    let a = send(
        put.clone(),
        api(&u, "skills/t%D0%BE%D0%BEl-a/1.0.0"),
        Some(&ci),
        body,
        &[],
    )
    .await;
    assert!(a.status.is_client_error(), "{}", a.text);
    answers.push(("a look-alike name", a));
    let a = send(
        get.clone(),
        api(&u, "audit?limit=x"),
        Some(&ci),
        vec![],
        &[],
    )
    .await;
    a.is(400, Some("bad_query"));
    answers.push(("a bad audit query", a));
    let sig = [("Skillcat-Signature", "%%%".to_string())];
    let body = archive("tool-b", "1.0.0", "");
    let a = send(
        put.clone(),
        api(&u, "skills/tool-b/1.0.0"),
        Some(&ci),
        body,
        &sig,
    )
    .await;
    a.is(400, Some("bad_signature_header"));
    answers.push(("a bad signature header", a));
    let a = send(
        put.clone(),
        api(&u, "skills/tool-b/1.0.0"),
        Some(&ci),
        vec![],
        &[],
    )
    .await;
    a.is(422, Some("invalid_archive"));
    answers.push(("an empty body", a));
    let a = send(
        put.clone(),
        api(&u, "skills/tool-b/1.0.0"),
        Some(&ci),
        b"junk".to_vec(),
        &[],
    )
    .await;
    a.is(422, Some("invalid_archive"));
    answers.push(("not an archive", a));
    let big = crate::support::incompressible(100 << 10);
    let a = send(
        put.clone(),
        api(&u, "skills/tool-b/1.0.0"),
        Some(&ci),
        big,
        &[],
    )
    .await;
    a.is(413, Some("too_large"));
    answers.push(("over --max-upload", a));
    let d = doc("tool-b", "1.0.0", "");
    let many = crate::support::registry::tar_gz(&[
        ("SKILL.md", &d, false),
        ("a.md", "a", false),
        ("b.md", "b", false),
        ("c.md", "c", false),
    ]);
    let a = send(
        put.clone(),
        api(&u, "skills/tool-b/1.0.0"),
        Some(&ci),
        many,
        &[],
    )
    .await;
    a.is(413, Some("too_large"));
    answers.push(("over --max-version-files", a));
    let bad = crate::support::registry::tar_gz(&[("SKILL.md", "---\nname: tool-b\n---\n", false)]);
    let a = send(
        put.clone(),
        api(&u, "skills/tool-b/1.0.0"),
        Some(&ci),
        bad,
        &[],
    )
    .await;
    a.is(422, Some("invalid_skill"));
    answers.push(("an invalid skill", a));
    let body = archive("tool-b", "1.0.0", "");
    let a = send(
        put.clone(),
        api(&u, "skills/tool-c/1.0.0"),
        Some(&ci),
        body,
        &[],
    )
    .await;
    a.is(422, None);
    answers.push(("another name than the URL's", a));

    // Through the command line: the version, never the file.
    let out = run(
        dir,
        &["yank", &s.url, "tool-a@9.9.9", "--token-file", "ci.token"],
    );
    out.code(1).says(&["tool-a@9.9.9"]);
    assert!(
        !out.stderr.contains(&folder) && !out.stderr.contains(&real),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("r.db"), "{}", out.stderr);
    // The server's log keeps the whole story, the file included.
    let log = s.stop();
    assert!(
        log.lines()
            .any(|l| l.contains("tool-a@9.9.9") && l.contains(&format!("{folder}/r.db"))),
        "the server logs the full error:\n{log}"
    );

    // A server with a keyring, and a rate of one request a minute.
    let s = Server::start(dir, &["--keyring", &keyring, "--writes-per-minute", "1"]);
    let u = s.url.clone();
    let body = archive("tool-d", "1.0.0", "");
    let a = send(
        put.clone(),
        api(&u, "skills/tool-d/1.0.0"),
        Some(&ci),
        body.clone(),
        &[],
    )
    .await;
    a.is(422, Some("signature"));
    answers.push(("unsigned under a keyring", a));
    let a = send(
        put.clone(),
        api(&u, "skills/tool-d/1.0.0"),
        Some(&ci),
        body,
        &[],
    )
    .await;
    a.is(429, Some("rate_limited"));
    answers.push(("over --writes-per-minute", a));
    s.stop();

    for (what, a) in &answers {
        assert!(a.status.as_u16() >= 400, "{what}: {}", a.text);
        for secret in [
            folder.as_str(),
            real.as_str(),
            "r.db",
            "tokens.toml",
            "keyring.toml",
        ] {
            assert!(
                !a.text.contains(secret),
                "{what}: the answer names the server's file {secret:?}: {}",
                a.text
            );
        }
    }
}

/// The server logs yanks and unyanks as it logs publishes: who, what, and the version.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_logs_yanks_and_unyanks_as_it_logs_publishes() {
    let (tmp, _) = registry_with_token();
    let dir = tmp.path();
    let s = Server::start(dir, &[]);
    publish(dir, &s.url, "tool-a", "1.0.0");
    let yank = |extra: &[&str]| {
        let mut args = vec!["yank", &s.url, "tool-a@1.0.0", "--token-file", "ci.token"];
        args.extend_from_slice(extra);
        run(dir, &args).code(0);
    };
    yank(&[]);
    yank(&["--undo"]);
    let log = s.stop();
    assert!(log.contains("ci published tool-a@1.0.0 sha256:"), "{log}");
    assert!(log.contains("ci yanked tool-a@1.0.0"), "{log}");
    assert!(log.contains("ci unyanked tool-a@1.0.0"), "{log}");
}

/// README: yanked versions stay readable by their exact `NAME@VERSION`. Through a served
/// registry too: its index lists them marked yanked, `NAME@VERSION` reads one with a warning,
/// and a bare `NAME` never picks one — after a yank over the API, and from a registry served
/// afresh.
#[tokio::test(flavor = "multi_thread")]
async fn a_yanked_version_stays_readable_by_name_at_version_through_a_served_registry() {
    let (tmp, _) = registry_with_token();
    let dir = tmp.path();
    let s = Server::start(dir, &[]);
    publish(dir, &s.url, "tool-a", "1.0.0");
    publish(dir, &s.url, "tool-a", "1.1.0");
    run(
        dir,
        &["yank", &s.url, "tool-a@1.1.0", "--token-file", "ci.token"],
    )
    .code(0);

    let check = |url: &str, cache: &str| {
        let sc = |args: &[&str]| {
            let mut all = vec!["--cache", cache];
            all.extend_from_slice(args);
            run(dir, &all)
        };
        // A bare name is the highest version that is not yanked.
        let shown = sc(&["show", url, "tool-a"]);
        assert!(
            shown.code(0).out().contains("Version 1.0.0."),
            "{}",
            shown.out()
        );
        let listed = sc(&["list", url]);
        assert!(!listed.code(0).out().contains("1.1.0"), "{}", listed.out());
        // The yanked version by its exact name: read, with a warning.
        let yanked = sc(&["show", url, "tool-a@1.1.0"]);
        yanked
            .code(0)
            .says(&["warning: ", "tool-a@1.1.0", "yanked"]);
        assert!(yanked.out().contains("Version 1.1.0."), "{}", yanked.out());
        let read = sc(&["read", url, "tool-a@1.1.0", "references/notes.md"]);
        assert_eq!(read.code(0).out(), "Notes.\n");
        sc(&["digest", url, "tool-a@1.1.0"])
            .code(0)
            .says(&["yanked"]);
        // A version neither live nor yanked: exit 1 naming the versions served.
        sc(&["show", url, "tool-a@9.9.9"]).code(1).says(&[
            "tool-a@9.9.9",
            "1.0.0",
            "1.1.0 (yanked)",
        ]);
    };
    check(&s.url, "c1");
    let index = index_of(&s.url).await;
    let live: Vec<&J> = index["skills"].as_array().unwrap().iter().collect();
    assert_eq!(live.len(), 1, "{index}");
    assert_eq!(live[0]["version"], "1.0.0");
    let yanked = index["skillcat"]["yanked"]
        .as_array()
        .expect("a yanked list");
    assert_eq!(yanked.len(), 1, "{index}");
    assert_eq!(yanked[0]["name"], "tool-a");
    assert_eq!(yanked[0]["version"], "1.1.0");
    assert_eq!(yanked[0]["yanked"], true);
    s.stop();

    // The same registry served afresh (no --publish) serves the same.
    let (mut child, _, url) = spawn_serve(&dir.join("r.db"), &[], std::process::Stdio::null());
    check(&url, "c2");
    let again = index_of(&url).await;
    assert_eq!(again["skillcat"], index["skillcat"]);
    let _ = child.kill();
    let _ = child.wait();

    // And the registry file itself says the same of the yanked version.
    run(dir, &["show", "r.db", "tool-a@1.1.0"])
        .code(0)
        .says(&["tool-a@1.1.0", "yanked"]);
}

/// `list` of a registry whose every version is yanked says so on stderr (exit 0: nothing is
/// wrong), served or as a file, and names how to read one.
#[tokio::test(flavor = "multi_thread")]
async fn a_registry_whose_every_version_is_yanked_says_so() {
    let (tmp, _) = registry_with_token();
    let dir = tmp.path();
    let s = Server::start(dir, &[]);
    publish(dir, &s.url, "tool-a", "1.0.0");
    run(
        dir,
        &["yank", &s.url, "tool-a@1.0.0", "--token-file", "ci.token"],
    )
    .code(0);
    let served = run(dir, &["--cache", "c", "list", &s.url]);
    served
        .code(0)
        .says(&["tool-a: every version is yanked", "tool-a@1.0.0"]);
    assert_eq!(served.out(), "", "nothing is listed");
    s.stop();
    let file = run(dir, &["list", "r.db"]);
    file.code(0)
        .says(&["tool-a: every version is yanked", "tool-a@1.0.0"]);
}

/// `serve DIR --publish` says a registry file is needed and how to make one, not to run
/// `registry init` on the directory.
#[test]
fn serve_publish_of_a_directory_says_to_create_a_registry_file() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(
        &tmp.path().join("skills/tool-a"),
        &doc("tool-a", "1.0.0", ""),
        &[],
    );
    std::fs::write(tmp.path().join("tokens.toml"), "").unwrap();
    let out = run(
        tmp.path(),
        &[
            "serve",
            "skills",
            "--publish",
            "--tokens",
            "tokens.toml",
            "--addr",
            "127.0.0.1:0",
        ],
    );
    out.code(2).says(&[
        "--publish needs a registry file",
        "skillcat registry init team.db",
    ]);
    assert!(
        !out.stderr.contains("registry init skills"),
        "{}",
        out.stderr
    );
    // A registry file that is not there yet: that one is the file to create.
    let out = run(
        tmp.path(),
        &[
            "serve",
            "new.db",
            "--publish",
            "--tokens",
            "tokens.toml",
            "--addr",
            "127.0.0.1:0",
        ],
    );
    out.code(2).says(&["skillcat registry init new.db"]);
}

/// `verify REGISTRY.db` checks the signatures the registry keeps, and when it keeps none says
/// so as a registry's: no `REGISTRY.db.minisig` is looked for.
#[test]
fn verify_of_a_registry_file_looks_inside_it_not_beside_it() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ring = key(dir, "signer", "*");
    write_skill(&dir.join("tool-a"), &doc("tool-a", "1.0.0", ""), &[]);
    run(dir, &["registry", "publish", "r.db", "tool-a"]).code(0);
    let keyring = ring.keyring.to_str().unwrap();
    let out = run(dir, &["verify", "r.db", "--keyring", keyring]);
    out.code(1).says(&["tool-a@1.0.0", "keeps no signature"]);
    assert!(!out.stderr.contains("beside it"), "{}", out.stderr);
    assert!(!out.stderr.contains("r.db.minisig"), "{}", out.stderr);
    // Signed, then published with its signature: verified from inside the registry.
    write_skill(&dir.join("tool-b"), &doc("tool-b", "1.0.0", ""), &[]);
    let secret = ring.secret.to_str().unwrap();
    run(dir, &["sign", "tool-b", "tool-b", "--key", secret]).code(0);
    run(
        dir,
        &[
            "registry",
            "publish",
            "r.db",
            "tool-b",
            "--sig",
            "tool-b.minisig",
        ],
    )
    .code(0);
    let out = run(dir, &["verify", "r.db", "tool-b", "--keyring", keyring]);
    assert!(
        out.code(0).out().starts_with("Verified tool-b@1.0.0"),
        "{}",
        out.out()
    );
}

/// `fetch` says which digest each line prints: the archive's (what the index promises), or
/// the skill's when the index gives no archive.
#[tokio::test(flavor = "multi_thread")]
async fn fetch_says_which_digest_it_prints() {
    let (tmp, _) = registry_with_token();
    let dir = tmp.path();
    let s = Server::start(dir, &[]);
    publish(dir, &s.url, "tool-a", "1.0.0");
    let index = index_of(&s.url).await;
    let archive = index["skills"][0]["digest"].as_str().unwrap().to_string();
    let out = run(dir, &["--cache", "c", "fetch", &s.url]);
    let line = out
        .code(0)
        .out()
        .lines()
        .find(|l| l.starts_with("tool-a  "))
        .unwrap_or_else(|| panic!("{}", out.out()))
        .to_string();
    assert!(
        line.contains(&format!("{archive} (archive)")),
        "the digest is named as the archive's: {line}"
    );
    s.stop();
}

/// One `oci://` home: its own cache and no credentials from the environment.
fn oci(home: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("DOCKER_CONFIG")
        .env_remove("SKILLCAT_OCI_USERNAME")
        .env_remove("SKILLCAT_OCI_PASSWORD")
        .run()
}

/// The tags a CNCF registry lists for `repo` (plain HTTP, no skillcat code).
fn tags(reg: &OciRegistry, repo: &str) -> Vec<String> {
    let out = std::process::Command::new("curl")
        .args(["-sS", &format!("http://{}/v2/{repo}/tags/list", reg.addr)])
        .output()
        .expect("curl");
    let doc: J = serde_json::from_slice(&out.stdout).unwrap();
    let mut tags: Vec<String> = doc["tags"]
        .as_array()
        .map(|a| a.iter().map(|t| t.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    tags.sort();
    tags
}

/// The version of the skill a reference reads (`digest --format json`).
fn version_read(home: &Path, reference: &str) -> String {
    let out = oci(home, &["digest", reference, "--format", "json"]);
    out.code(0).json()[0]["version"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", out.out()))
        .to_string()
}

/// OCI's `latest`: `push … oci://HOST/REPO` tags the version and moves `latest` (not past a
/// higher version, not with `--no-latest`); `list oci://HOST/REPO` reads `latest`, and a
/// repository without one reads its highest version tag.
#[test]
fn oci_push_moves_latest_and_a_read_without_a_tag_finds_the_highest_version() {
    let reg = OciRegistry::start();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let skill = |version: &str| {
        let dir = h.join(format!("src-{version}/tool-a"));
        write_skill(
            &dir,
            &doc("tool-a", version, &format!("Version {version}.")),
            &[],
        );
        dir.to_str().unwrap().to_string()
    };
    let repo = reg.oci("team/tool-a");
    let first = oci(h, &["push", &skill("1.0.0"), "tool-a", &repo]);
    assert!(first.code(0).out().contains("latest"), "{}", first.out());
    assert_eq!(tags(&reg, "team/tool-a"), ["1.0.0", "latest"]);
    assert_eq!(version_read(h, &repo), "1.0.0");
    oci(h, &["list", &repo]).code(0);

    // A higher version moves latest; an older one pushed after it does not.
    oci(h, &["push", &skill("2.0.0"), "tool-a", &repo]).code(0);
    let older = oci(h, &["push", &skill("1.5.0"), "tool-a", &repo]);
    assert!(
        older.code(0).out().contains("2.0.0"),
        "says why latest stays: {}",
        older.out()
    );
    assert_eq!(version_read(h, &repo), "2.0.0");
    // --no-latest leaves it where it is.
    oci(
        h,
        &["push", &skill("3.0.0"), "tool-a", &repo, "--no-latest"],
    )
    .code(0);
    assert_eq!(version_read(h, &repo), "2.0.0");
    assert_eq!(
        tags(&reg, "team/tool-a"),
        ["1.0.0", "1.5.0", "2.0.0", "3.0.0", "latest"]
    );

    // A repository with version tags and no latest: the highest version is read, and said.
    let bare = reg.oci("team/bare");
    for v in ["1.2.0", "1.10.0", "1.9.0"] {
        oci(h, &["push", &skill(v), "tool-a", &bare, "--no-latest"]).code(0);
    }
    assert_eq!(tags(&reg, "team/bare"), ["1.10.0", "1.2.0", "1.9.0"]);
    let listed = oci(h, &["list", &bare]);
    listed.code(0).says(&["latest", "1.10.0"]);
    assert_eq!(version_read(h, &bare), "1.10.0");
    // A repository that does not exist says so.
    let none = oci(h, &["list", &reg.oci("team/none")]);
    assert_ne!(none.code, 0, "{}", none.out());
    none.says(&["team/none"]);
}
