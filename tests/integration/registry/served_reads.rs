//! Reading a served registry (issue 51, items 4, 10 and 16), through the real binary on
//! 127.0.0.1: `registry versions|search URL …` answer as they do for the registry file
//! itself; the commands that only work on a file say so when given a URL; a skill's page
//! installs it by name with the `skills` CLI (and says which Node it needs), and shows who
//! published the version, its licence and its links, escaped; `search --format json` prints
//! what the API answers under the API's names; `publish` of an invalid skill names its faults.
//!
//! Origin: step 29 (issue 51).

use std::path::Path;

use serde_json::Value as J;

use crate::support::bin::{Out, Skillcat};
use crate::support::central::{registry_dir, token};
use crate::support::publish::{Server, send};
use crate::support::write_skill;

/// `skillcat ARGS…` in `dir`, with no token or CA from the environment.
fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env_remove("SKILLCAT_TOKEN")
        .env_remove("SSL_CERT_FILE")
        .run()
}

/// A SKILL.md with a licence and links; `license` and `homepage` as given (unquoted YAML
/// scalars: the tests give plain text).
fn doc(name: &str, version: &str, license: &str, homepage: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Fills {name} forms for the served reads tests.\n\
         license: \"{license}\"\nmetadata:\n  version: \"{version}\"\n  homepage: \"{homepage}\"\n  \
         repository: \"https://git.example.com/{name}\"\n---\n# {name}\n\nVersion {version}.\n"
    )
}

/// Writes `dir/NAME-VERSION/NAME/` and publishes it to `url` with `dir/ci.token`.
fn publish(dir: &Path, url: &str, name: &str, version: &str, license: &str, homepage: &str) {
    let skill = dir.join(format!("{name}-{version}")).join(name);
    write_skill(&skill, &doc(name, version, license, homepage), &[]);
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

/// A registry folder with a token named `alice-ci` (every right) in `ci.token`, served.
fn served() -> (tempfile::TempDir, Server) {
    let tmp = registry_dir();
    let ci = token(tmp.path(), "alice-ci", "*", "publish,yank");
    std::fs::write(tmp.path().join("ci.token"), format!("{ci}\n")).unwrap();
    let server = Server::start(tmp.path(), &[]);
    (tmp, server)
}

async fn get(url: String) -> (u16, String) {
    let resp = reqwest::get(&url).await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

/// `registry versions` and `registry search` of the server's URL print what they print for
/// the registry file it serves, text and JSON; a skill the server lacks is exit 1, as for the
/// file.
#[tokio::test(flavor = "multi_thread")]
async fn versions_and_search_of_a_served_registry_read_as_the_file_does() {
    let (tmp, server) = served();
    let (dir, url) = (tmp.path(), server.url.clone());
    for v in ["1.0.0", "1.1.0", "1.2.0"] {
        publish(dir, &url, "pdf-forms", v, "MIT", "https://example.com/pdf");
    }
    publish(
        dir,
        &url,
        "csv-stats",
        "0.1.0",
        "MIT",
        "https://example.com/csv",
    );
    run(
        dir,
        &["yank", &url, "pdf-forms@1.1.0", "--token-file", "ci.token"],
    )
    .code(0);

    let file = run(dir, &["registry", "versions", "r.db", "pdf-forms"]);
    file.code(0);
    let remote = run(dir, &["registry", "versions", &url, "pdf-forms"]);
    remote.code(0);
    assert_eq!(remote.out(), file.out(), "{}", remote.stderr);
    assert!(file.out().contains("[yanked]"), "{}", file.out());
    let json = |where_: &str| {
        let out = run(
            dir,
            &[
                "registry",
                "versions",
                where_,
                "pdf-forms",
                "--format",
                "json",
            ],
        );
        out.code(0);
        out.json()
    };
    assert_eq!(json(&url), json("r.db"));

    let missing = run(dir, &["registry", "versions", &url, "ghost"]);
    missing.code(1).says(&["no skill named 'ghost'"]);
    assert!(
        !missing.stderr.contains("registry init"),
        "{}",
        missing.stderr
    );

    let file = run(dir, &["registry", "search", "r.db", "forms"]);
    file.code(0);
    let remote = run(dir, &["registry", "search", &url, "forms"]);
    remote.code(0);
    assert_eq!(remote.out(), file.out(), "{}", remote.stderr);
    assert!(file.out().contains("pdf-forms@1.2.0"), "{}", file.out());
    let hits = |where_: &str| {
        let out = run(
            dir,
            &["registry", "search", where_, "stats", "--format", "json"],
        );
        out.code(0);
        out.json()
    };
    let (local, remote) = (hits("r.db"), hits(&url));
    assert_eq!(remote.as_array().unwrap().len(), 1, "{remote}");
    for key in ["name", "version", "description"] {
        assert_eq!(remote[0][key], local[0][key], "{key}: {remote}");
    }
    let none = run(dir, &["registry", "search", &url, "nothing-like-it"]);
    none.code(0).says(&["No skill matches"]);
    server.stop();
}

/// The commands that write a registry file refuse a URL plainly, exit 1, saying what works on
/// a served registry, and never suggest `registry init` of the URL.
#[tokio::test(flavor = "multi_thread")]
async fn local_only_commands_given_a_url_say_so() {
    let (tmp, server) = served();
    let (dir, url) = (tmp.path(), server.url.clone());
    write_skill(
        &dir.join("pdf-forms"),
        &doc("pdf-forms", "1.0.0", "MIT", "https://example.com"),
        &[],
    );
    for (args, hint) in [
        (vec!["registry", "init", &url], "skillcat serve".to_string()),
        (
            vec!["registry", "publish", &url, "pdf-forms"],
            format!("skillcat publish {url} DIR"),
        ),
        (
            vec!["registry", "yank", &url, "pdf-forms@1.0.0"],
            format!("skillcat yank {url} NAME@VERSION"),
        ),
    ] {
        let out = run(dir, &args);
        out.code(1).says(&["is local-only", &hint]);
        assert!(!out.stderr.contains("registry init http"), "{}", out.stderr);
        assert!(!out.stderr.contains("does not exist"), "{}", out.stderr);
    }
    // Nothing was written to the server.
    let (status, _) = get(format!("{url}api/v1/skills/pdf-forms")).await;
    assert_eq!(status, 404);
    server.stop();
}

/// A skill's page: `npx skills add URL --skill NAME` (the Node it needs said), who published
/// the version (the token's name, from the audit log; the API's `published_by` too), its
/// licence and its links; what the skill wrote is escaped, and a link that is not http(s) is
/// not a link.
#[tokio::test(flavor = "multi_thread")]
async fn a_skill_page_installs_it_by_name_and_says_who_published_it() {
    let (tmp, server) = served();
    let (dir, url) = (tmp.path(), server.url.clone());
    publish(
        dir,
        &url,
        "pdf-forms",
        "1.0.0",
        "MIT <b>bold</b>",
        "https://example.com/pdf?a=1&b=2",
    );
    publish(
        dir,
        &url,
        "csv-stats",
        "0.1.0",
        "Apache-2.0",
        "javascript:alert(1)",
    );
    let (status, page) = get(format!("{url}skills/pdf-forms/")).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(&format!("npx skills add {url} --skill pdf-forms")),
        "{page}"
    );
    assert!(page.contains("Node.js ≥ 22.20"), "{page}");
    assert!(page.contains("Published by"), "{page}");
    assert!(page.contains("alice-ci"), "{page}");
    assert!(page.contains("MIT &lt;b&gt;bold&lt;/b&gt;"), "{page}");
    assert!(!page.contains("<b>bold"), "{page}");
    assert!(
        page.contains(r#"href="https://example.com/pdf?a=1&amp;b=2""#),
        "{page}"
    );
    assert!(
        page.contains(r#"href="https://git.example.com/pdf-forms""#),
        "{page}"
    );
    let (_, other) = get(format!("{url}skills/csv-stats/")).await;
    assert!(other.contains("Apache-2.0"), "{other}");
    assert!(!other.contains("href=\"javascript:"), "{other}");
    let (status, api) = get(format!("{url}api/v1/skills/pdf-forms")).await;
    assert_eq!(status, 200);
    let api: J = serde_json::from_str(&api).unwrap();
    assert_eq!(api["versions"][0]["published_by"], "alice-ci", "{api}");
    server.stop();
}

/// `search --format json` prints the API's fields under the API's names: `archive_digest`,
/// `skill_digest`, `page`, `limit`.
#[tokio::test(flavor = "multi_thread")]
async fn search_json_prints_what_the_api_answers() {
    let (tmp, server) = served();
    let (dir, url) = (tmp.path(), server.url.clone());
    publish(
        dir,
        &url,
        "pdf-forms",
        "1.0.0",
        "MIT",
        "https://example.com",
    );
    let (_, api) = get(format!("{url}api/v1/search?q=forms")).await;
    let api: J = serde_json::from_str(&api).unwrap();
    let out = run(
        dir,
        &["search", &url, "forms", "--format", "json", "--limit", "5"],
    );
    out.code(0);
    let cli = out.json();
    let (hit, served) = (&cli["results"][0], &api["results"][0]);
    assert_eq!(hit["archive_digest"], served["archive_digest"], "{cli}");
    assert!(
        hit["archive_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(hit["skill_digest"], served["skill_digest"], "{cli}");
    assert!(hit["skill_digest"].as_str().unwrap().starts_with("sha256:"));
    assert_ne!(hit["skill_digest"], hit["archive_digest"]);
    assert_eq!(cli["page"], 1, "{cli}");
    assert_eq!(cli["limit"], 5, "{cli}");
    assert_eq!(cli["total"], 1, "{cli}");
    server.stop();
}

/// `publish URL DIR` of an invalid skill says the skill is invalid and names its faults, as
/// `validate` does (not that it is "not served"); the server refuses one sent anyway with a
/// 422 naming the fault.
#[tokio::test(flavor = "multi_thread")]
async fn publish_of_an_invalid_skill_names_its_faults() {
    let (tmp, server) = served();
    let (dir, url) = (tmp.path(), server.url.clone());
    write_skill(
        &dir.join("bad"),
        "---\nname: Bad_Name\ndescription: x\nmetadata:\n  version: \"1.0.0\"\n---\nbody\n",
        &[],
    );
    let out = run(dir, &["publish", &url, "bad", "--token-file", "ci.token"]);
    out.code(1).says(&[
        "is invalid",
        "Skill name 'Bad_Name' must be lowercase",
        "Directory name 'bad' must match skill name 'Bad_Name'",
    ]);
    assert!(!out.stderr.contains("not served"), "{}", out.stderr);
    let ci = std::fs::read_to_string(dir.join("ci.token")).unwrap();
    let body = crate::support::registry::tar_gz(&[(
        "SKILL.md",
        "---\nname: tool-b\nmetadata:\n  version: \"1.0.0\"\n---\n",
        false,
    )]);
    let a = send(
        reqwest::Method::PUT,
        format!("{url}api/v1/skills/tool-b/1.0.0"),
        Some(ci.trim()),
        body,
        &[],
    )
    .await;
    a.is(422, Some("invalid_skill"));
    assert!(a.detail().contains("description"), "{}", a.text);
    server.stop();
}
