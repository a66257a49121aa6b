//! A central registry through the real binary: `skillcat serve REGISTRY.db --publish --tokens`
//! on 127.0.0.1, driven over HTTP. Each rule of the publishing API has its status and JSON
//! error, refused requests store nothing, writes land in the index and the audit log, and the
//! token never shows up in the server's log, an answer or the audit log.
//!
//! Origin: step 11 (issue 16: a central registry over HTTP).

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value as J;

use crate::support::bin::Skillcat;
use crate::support::central::{doc, registry_dir, token};
use crate::support::publish::{Answer, Server, send};
use crate::support::write_skill;

/// Writes a skill and packs it; returns the archive's path.
fn packed(dir: &Path, name: &str, version: &str, extra: &str) -> PathBuf {
    let root = dir.join(format!("src-{name}-{version}-{}", extra.len()));
    write_skill(&root.join(name), &doc(name, version, extra), &[]);
    let out = dir.join(format!("{name}-{version}-{}.tar.gz", extra.len()));
    Skillcat::new(&[
        "pack",
        root.join(name).to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .run()
    .code(0);
    out
}

/// A request to the API without a body.
async fn api(s: &Server, method: reqwest::Method, path: &str, who: Option<&str>) -> Answer {
    send(
        method,
        format!("{}api/v1/{path}", s.url),
        who,
        Vec::new(),
        &[],
    )
    .await
}

async fn put_skill(s: &Server, who: Option<&str>, spec: &str, archive: &Path) -> Answer {
    let (name, version) = spec.split_once('@').unwrap();
    send(
        reqwest::Method::PUT,
        format!("{}api/v1/skills/{name}/{version}", s.url),
        who,
        std::fs::read(archive).unwrap(),
        &[],
    )
    .await
}

async fn index(s: &Server) -> (String, J) {
    let resp = reqwest::get(format!("{}.well-known/agent-skills/index.json", s.url))
        .await
        .unwrap();
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    let text = resp.text().await.unwrap();
    (etag, serde_json::from_str(&text).unwrap())
}

fn versions_in(index: &J, name: &str) -> Vec<String> {
    index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == name)
        .map(|e| e["version"].as_str().unwrap().to_string())
        .collect()
}

fn stored(dir: &Path, name: &str) -> Vec<String> {
    let out = Skillcat::new(&["registry", "versions", "r.db", name, "--format", "json"])
        .cwd(dir)
        .run();
    if out.code != 0 {
        return Vec::new();
    }
    out.json()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap().to_string())
        .collect()
}

/// A `.tar.gz` of a valid SKILL.md for `pdf-evil` and one more entry: a file at `path` holding
/// `bytes`, or (with `link`) a symbolic link at `path` to `link`.
fn hostile_tar_gz(path: &str, bytes: &[u8], link: Option<&str>) -> Vec<u8> {
    let mut raw = Vec::new();
    {
        let mut b = tar::Builder::new(&mut raw);
        let skill = doc("pdf-evil", "1.0.0", "");
        for (p, data, target) in [("SKILL.md", skill.as_bytes(), None), (path, bytes, link)] {
            let mut h = tar::Header::new_gnu();
            let name = h.as_old_mut().name.as_mut();
            name[..p.len()].copy_from_slice(p.as_bytes());
            h.set_mode(0o644);
            match target {
                Some(t) => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_link_name(t).unwrap();
                    h.set_size(0);
                    h.set_cksum();
                    b.append(&h, &[][..]).unwrap();
                }
                None => {
                    h.set_size(data.len() as u64);
                    h.set_cksum();
                    b.append(&h, data).unwrap();
                }
            }
        }
        b.finish().unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &raw).unwrap();
    gz.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn publishing_rules_statuses_index_and_audit() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "pdf-*", "publish,yank,audit");
    let other = token(dir, "other", "docs-*", "publish");
    let yanker = token(dir, "yanker", "*", "yank");
    let doomed = token(dir, "doomed", "*", "publish");
    let v1 = packed(dir, "pdf-tool", "1.0.0", "");
    let v1_other_content = packed(dir, "pdf-tool", "1.0.0", "changed");
    let v2 = packed(dir, "pdf-tool", "1.1.0", "");
    let s = Server::start(dir, &["--verbose", "--max-upload", "64KiB"]);
    let (etag0, idx0) = index(&s).await;
    assert!(versions_in(&idx0, "pdf-tool").is_empty());

    // 401: no token, an unknown one, a malformed header.
    let a = put_skill(&s, None, "pdf-tool@1.0.0", &v1).await;
    a.is(401, Some("unauthorized"));
    assert!(a.headers.contains_key("www-authenticate"));
    put_skill(&s, Some("skc_00"), "pdf-tool@1.0.0", &v1)
        .await
        .is(401, Some("unauthorized"));
    // 403: outside the token's scope; a token without the publish right.
    put_skill(&s, Some(&other), "pdf-tool@1.0.0", &v1)
        .await
        .is(403, Some("forbidden"));
    put_skill(&s, Some(&yanker), "pdf-tool@1.0.0", &v1)
        .await
        .is(403, Some("forbidden"));
    // 422: the request names another version, or another skill, than the archive's.
    put_skill(&s, Some(&ci), "pdf-tool@9.9.9", &v1)
        .await
        .is(422, Some("mismatch"));
    put_skill(&s, Some(&ci), "pdf-other@1.0.0", &v1)
        .await
        .is(422, Some("mismatch"));
    // 422: not an archive, an empty body, a path that climbs out, an absolute path, links out
    // of the skill, a decompression bomb.
    for (i, body) in [
        b"just some text, not an archive".to_vec(),
        Vec::new(),
        hostile_tar_gz("../escape.md", b"boom", None),
        hostile_tar_gz("/etc/evil.md", b"boom", None),
        hostile_tar_gz("references/passwd", b"", Some("/etc/passwd")),
        hostile_tar_gz("references/up", b"", Some("../../outside")),
        // A bomb: 40 MiB of zeros, some 40 KiB compressed (under the upload limit).
        hostile_tar_gz("references/zeros.md", &vec![0u8; 40 << 20], None),
    ]
    .into_iter()
    .enumerate()
    {
        assert!(body.len() < 64 << 10, "case {i} is under the upload limit");
        let url = format!("{}api/v1/skills/pdf-evil/1.0.0", s.url);
        let a = send(reqwest::Method::PUT, url, Some(&ci), body, &[]).await;
        assert_eq!(a.status.as_u16(), 422, "case {i}: {}", a.text);
    }
    // 413: over --max-upload, whether Content-Length says so or not.
    send(
        reqwest::Method::PUT,
        format!("{}api/v1/skills/pdf-tool/1.0.0", s.url),
        Some(&ci),
        vec![0x1f; 100 * 1024],
        &[],
    )
    .await
    .is(413, Some("too_large"));
    assert!(
        stored(dir, "pdf-tool").is_empty(),
        "nothing stored by refusals"
    );
    assert!(stored(dir, "pdf-evil").is_empty());
    assert_eq!(index(&s).await.0, etag0, "the index did not change");

    // 201, then the same content again is a no-op 200, other content 409.
    let a = put_skill(&s, Some(&ci), "pdf-tool@1.0.0", &v1).await;
    a.is(201, None);
    let published = a.json();
    assert_eq!(published["outcome"], "published");
    let (etag1, idx1) = index(&s).await;
    assert_ne!(etag1, etag0, "a publish changes the index's ETag");
    assert_eq!(versions_in(&idx1, "pdf-tool"), ["1.0.0"]);
    let again = put_skill(&s, Some(&ci), "pdf-tool@1.0.0", &v1).await;
    again.is(200, None);
    assert_eq!(again.json()["outcome"], "unchanged");
    put_skill(&s, Some(&ci), "pdf-tool@1.0.0", &v1_other_content)
        .await
        .is(409, Some("immutable"));
    put_skill(&s, Some(&ci), "pdf-tool@1.1.0", &v2)
        .await
        .is(201, None);
    assert_eq!(stored(dir, "pdf-tool"), ["1.0.0", "1.1.0"]);
    assert_eq!(versions_in(&index(&s).await.1, "pdf-tool"), ["1.1.0"]);

    // Yank and unyank: the right is needed; the second yank changes nothing.
    let yank = |who: String| {
        let url = format!("{}api/v1/skills/pdf-tool/1.1.0/yank", s.url);
        async move { send(reqwest::Method::DELETE, url, Some(&who), Vec::new(), &[]).await }
    };
    yank(other.clone()).await.is(403, Some("forbidden"));
    let y = yank(yanker.clone()).await;
    y.is(200, None);
    assert_eq!(y.json()["changed"], true);
    assert_eq!(versions_in(&index(&s).await.1, "pdf-tool"), ["1.0.0"]);
    assert_eq!(yank(yanker.clone()).await.json()["changed"], false);
    api(
        &s,
        reqwest::Method::PUT,
        "skills/pdf-tool/1.1.0/unyank",
        Some(&yanker),
    )
    .await
    .is(200, None);
    api(
        &s,
        reqwest::Method::DELETE,
        "skills/pdf-tool/7.7.7/yank",
        Some(&yanker),
    )
    .await
    .is(404, Some("not_found"));

    // A revoked token is refused at once: the server re-reads the changed file.
    put_skill(&s, Some(&doomed), "pdf-tool@1.0.0", &v1)
        .await
        .is(200, None);
    Skillcat::new(&["token", "revoke", "doomed", "--tokens", "tokens.toml"])
        .cwd(dir)
        .run()
        .code(0);
    put_skill(&s, Some(&doomed), "pdf-tool@1.0.0", &v1)
        .await
        .is(401, Some("unauthorized"));

    // The audit log: one row per write, newest first, token names only.
    let a = api(&s, reqwest::Method::GET, "audit?limit=10", Some(&ci)).await;
    a.is(200, None);
    let rows: Vec<(String, String, String)> = a.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["token"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
                format!(
                    "{}@{}",
                    e["name"].as_str().unwrap(),
                    e["version"].as_str().unwrap()
                ),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = [
        ("yanker", "unyank", "pdf-tool@1.1.0"),
        ("yanker", "yank", "pdf-tool@1.1.0"),
        ("ci", "publish", "pdf-tool@1.1.0"),
        ("ci", "publish", "pdf-tool@1.0.0"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(rows, want);
    assert!(
        a.text.contains("127.0.0.1:"),
        "client addresses are recorded"
    );
    api(&s, reqwest::Method::GET, "audit", None)
        .await
        .is(401, Some("unauthorized"));
    api(&s, reqwest::Method::GET, "nothing-here", Some(&ci))
        .await
        .is(404, Some("not_found"));

    let log = s.stop();
    assert!(log.contains("ci published pdf-tool@1.0.0"), "{log}");
    for t in [&ci, &other, &yanker, &doomed] {
        let secret = &t[4..];
        assert!(!log.contains(secret), "a token is in the server's log");
        assert!(!a.text.contains(secret), "a token is in the audit log");
    }
    let db = std::fs::read(dir.join("r.db")).unwrap();
    for t in [&ci, &doomed] {
        assert!(
            !db.windows(t.len()).any(|w| w == t.as_bytes()),
            "a token is in the registry file"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_over_its_rate_gets_429_with_retry_after() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish");
    let other = token(dir, "other", "*", "publish");
    let v1 = packed(dir, "rated", "1.0.0", "");
    let s = Server::start(dir, &["--verbose", "--writes-per-minute", "2"]);
    for _ in 0..2 {
        let a = put_skill(&s, Some(&ci), "rated@1.0.0", &v1).await;
        assert!(a.status.is_success(), "{}", a.text);
    }
    let a = put_skill(&s, Some(&ci), "rated@1.0.0", &v1).await;
    a.is(429, Some("rate_limited"));
    let wait: u64 = a.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    // The limit is per token: another token still writes.
    put_skill(&s, Some(&other), "rated@1.0.0", &v1)
        .await
        .is(200, None);
    s.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_keyring_only_signed_skills_in_the_keys_scope_are_published() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish");
    let run = |args: &[&str]| Skillcat::new(args).cwd(dir).run();
    run(&["keygen", "-o", "k", "--unencrypted"]).code(0);
    run(&[
        "trust",
        "add",
        "k.pub",
        "--scope",
        "signed-*",
        "--keyring",
        "kr.toml",
    ])
    .code(0);
    let good = packed(dir, "signed-one", "1.0.0", "");
    let outside = packed(dir, "loose-one", "1.0.0", "");
    let sign = |archive: &Path, name: &str, out: &str| {
        run(&[
            "sign",
            archive.to_str().unwrap(),
            name,
            "--key",
            "k.key",
            "-o",
            out,
        ])
        .code(0);
        base64::engine::general_purpose::STANDARD.encode(std::fs::read(dir.join(out)).unwrap())
    };
    let good_sig = sign(&good, "signed-one", "good.minisig");
    let outside_sig = sign(&outside, "loose-one", "outside.minisig");
    let keyring = dir.join("kr.toml");
    let s = Server::start(dir, &["--verbose", "--keyring", keyring.to_str().unwrap()]);
    let put = |spec: &str, archive: &Path, sig: Option<&String>| {
        let (name, version) = spec.split_once('@').unwrap();
        let headers: Vec<(&str, String)> = sig
            .map(|s| vec![("skillcat-signature", s.clone())])
            .unwrap_or_default();
        let url = format!("{}api/v1/skills/{name}/{version}", s.url);
        let body = std::fs::read(archive).unwrap();
        let ci = ci.clone();
        async move { send(reqwest::Method::PUT, url, Some(&ci), body, &headers).await }
    };
    // Unsigned, a signature of another skill replayed, a key outside its scope, a header that
    // is not base64: all refused, nothing stored.
    put("signed-one@1.0.0", &good, None)
        .await
        .is(422, Some("signature"));
    put("signed-one@1.0.0", &good, Some(&outside_sig))
        .await
        .is(422, Some("signature"));
    put("loose-one@1.0.0", &outside, Some(&outside_sig))
        .await
        .is(422, Some("signature"));
    put("signed-one@1.0.0", &good, Some(&"%%%".to_string()))
        .await
        .is(400, Some("bad_signature_header"));
    assert!(stored(dir, "signed-one").is_empty());
    // Signed by a trusted key in scope: published, and the index carries the signature.
    let a = put("signed-one@1.0.0", &good, Some(&good_sig)).await;
    a.is(201, None);
    assert!(a.json()["signed_by"].is_string());
    let (_, idx) = index(&s).await;
    let entry = idx["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "signed-one")
        .unwrap()
        .clone();
    assert!(
        entry["skillcat"]["signature"]
            .as_str()
            .is_some_and(|t| t.starts_with("untrusted comment:")),
        "{entry}"
    );
    s.stop();
}

#[test]
fn the_client_publishes_yanks_and_a_warm_fetch_sees_the_new_version() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "tool-*", "publish,yank");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let s = Server::start(dir, &["--verbose"]);
    let url = s.url.clone();
    let run = |args: &[&str]| {
        Skillcat::new(args)
            .cwd(dir)
            .env_remove("SKILLCAT_TOKEN")
            .run()
    };
    for (name, version) in [("tool-a", "1.0.0"), ("tool-b", "2.0.0")] {
        write_skill(&dir.join("skills").join(name), &doc(name, version, ""), &[]);
    }

    // A directory of skills: each packed and published, one line each.
    let out = run(&["publish", &url, "skills", "--token-file", "ci.token"]);
    out.code(0);
    let lines: Vec<&str> = out.out().lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.out());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tool-a@1.0.0  sha256:") && l.ends_with("published"))
    );
    assert!(lines.iter().any(|l| l.starts_with("tool-b@2.0.0  sha256:")));
    assert_eq!(stored(dir, "tool-a"), ["1.0.0"]);

    // The same again, the token from the environment: already published, exit 0.
    let out = Skillcat::new(&["publish", &url, "skills/tool-a"])
        .cwd(dir)
        .env("SKILLCAT_TOKEN", &ci)
        .run();
    out.code(0);
    assert!(out.out().ends_with("already published\n"), "{}", out.out());

    // A warm fetch sees a new version after one conditional request for the index.
    run(&["--cache", "c", "fetch", &url]).code(0);
    let idle = run(&["--cache", "c", "fetch", &url]);
    assert!(
        idle.code(0).out().contains("(1 request, 1 not modified"),
        "{}",
        idle.out()
    );
    write_skill(&dir.join("v2/tool-a"), &doc("tool-a", "1.1.0", "new"), &[]);
    run(&["publish", &url, "v2/tool-a", "--token-file", "ci.token"]).code(0);
    // The index changed: one conditional request answered 200, then the one new archive.
    let warm = run(&["--cache", "c", "fetch", &url]);
    let text = warm.code(0).out();
    assert!(text.contains("tool-a  1.1.0  sha256:"), "{text}");
    assert!(text.contains("1 fetched, 1 already cached"), "{text}");
    assert!(text.contains("(2 requests, 0 not modified"), "{text}");

    // Other content under a published version: the server's refusal, exit 1.
    write_skill(
        &dir.join("v3/tool-a"),
        &doc("tool-a", "1.1.0", "other"),
        &[],
    );
    run(&["publish", &url, "v3/tool-a", "--token-file", "ci.token"])
        .code(1)
        .says(&["409", "immutable|published"]);

    // Yank and unyank.
    let y = run(&["yank", &url, "tool-a@1.1.0", "--token-file", "ci.token"]);
    assert_eq!(y.code(0).out(), "Yanked tool-a@1.1.0\n");
    let y = run(&["yank", &url, "tool-a@1.1.0", "--token-file", "ci.token"]);
    assert_eq!(y.code(0).out(), "tool-a@1.1.0 was already yanked\n");
    let y = run(&[
        "yank",
        &url,
        "tool-a@1.1.0",
        "--undo",
        "--token-file",
        "ci.token",
    ]);
    assert_eq!(y.code(0).out(), "Unyanked tool-a@1.1.0\n");
    run(&["yank", &url, "other@1.0.0", "--token-file", "ci.token"])
        .code(1)
        .says(&["403"]);

    // No token; a token for plain http to a host that is not loopback: refused before sending.
    run(&["publish", &url, "skills"])
        .code(2)
        .says(&["no token"]);
    run(&[
        "publish",
        "http://192.0.2.1/",
        "skills",
        "--token-file",
        "ci.token",
    ])
    .code(2)
    .says(&["refusing to send a token over plain http to 192.0.2.1"]);
    run(&[
        "yank",
        "http://192.0.2.1/",
        "a@1.0.0",
        "--token-file",
        "ci.token",
    ])
    .code(2)
    .says(&["plain http"]);
    let log = s.stop();
    assert!(!log.contains(&ci[4..]), "the token is in the server's log");
}
