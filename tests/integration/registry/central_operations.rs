//! Running a central registry, through the real binary on 127.0.0.1: HTTPS with a private CA
//! (`serve --tls-cert/--tls-key`, `publish --cacert`, `fetch` trusting the CA), the keyring
//! re-read while the server runs, and a token kept out of the process list, the environment of
//! children and the server's log.
//!
//! Origin: step 11 (issue 16: a central registry over HTTP).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as J;

use crate::support::bin::Skillcat;
use crate::support::central::{certificates, doc, registry_dir, token};
use crate::support::serve::{bin, spawn_serve};
use crate::support::write_skill;

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

/// `skillcat serve r.db --publish --tokens tokens.toml EXTRA…` with its log in `dir/server.log`.
fn serve(dir: &Path, extra: &[&str]) -> (Child, String) {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let tokens = path(dir, "tokens.toml");
    let mut args = vec!["--publish", "--tokens", &tokens, "--verbose"];
    args.extend_from_slice(extra);
    let (child, line, url) = spawn_serve(&dir.join("r.db"), &args, Stdio::from(log));
    assert!(line.contains("publishing at /api/v1/"), "{line}");
    (child, url)
}

fn stop(mut child: Child, dir: &Path) -> String {
    let _ = child.kill();
    let _ = child.wait();
    std::fs::read_to_string(dir.join("server.log")).unwrap()
}

#[test]
fn https_with_a_private_ca_publishes_and_fetches_and_refuses_an_unknown_issuer() {
    let tmp = registry_dir();
    let dir = tmp.path();
    certificates(dir);
    let ci = token(dir, "ci", "*", "publish");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    write_skill(&dir.join("tool-a"), &doc("tool-a", "1.0.0", ""), &[]);
    let (cert, key) = (path(dir, "cert.pem"), path(dir, "key.pem"));
    let (child, url) = serve(dir, &["--tls-cert", &cert, "--tls-key", &key]);
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let run = |args: &[&str]| {
        Skillcat::new(args)
            .cwd(dir)
            .env_remove("SKILLCAT_TOKEN")
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .run()
    };

    // Without the CA, the client refuses the server's certificate and sends nothing.
    run(&["publish", &url, "tool-a", "--token-file", "ci.token"])
        .code(1)
        .says(&["TLS certificate does not verify", "--cacert FILE"]);
    // With it, the publish lands.
    let out = run(&[
        "publish",
        &url,
        "tool-a",
        "--token-file",
        "ci.token",
        "--cacert",
        "ca.pem",
    ]);
    assert!(
        out.code(0).out().starts_with("tool-a@1.0.0  sha256:"),
        "{}",
        out.out()
    );
    // An agent's fetch over https: refused without the CA, served with it (SSL_CERT_FILE).
    let refused = run(&["--cache", "c0", "fetch", &url]);
    assert_ne!(refused.code, 0, "{}", refused.out());
    refused.says(&["TLS certificate does not verify", "--cacert FILE"]);
    let fetched = Skillcat::new(&["--cache", "c1", "fetch", &url])
        .cwd(dir)
        .env("SSL_CERT_FILE", dir.join("ca.pem"))
        .run();
    assert!(
        fetched.code(0).out().contains("tool-a  1.0.0  sha256:"),
        "{}",
        fetched.out()
    );
    // Plain http to the https port gets no answer it could take for one.
    let plain = url.replacen("https://", "http://", 1);
    let refused = run(&["--cache", "c2", "fetch", &plain]);
    assert_ne!(refused.code, 0, "{}", refused.out());
    let log = stop(child, dir);
    assert!(log.contains("PUT /api/v1/skills/tool-a/1.0.0"), "{log}");
    assert!(!log.contains(&ci[4..]), "the token is in the server's log");
}

#[test]
fn bad_certificate_or_key_files_stop_the_server_at_start_saying_why() {
    let tmp = registry_dir();
    let dir = tmp.path();
    certificates(dir);
    std::fs::write(dir.join("junk.pem"), "not a PEM file\n").unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("missing.pem", "key.pem", "cannot read"),
        ("junk.pem", "key.pem", "junk.pem: holds no certificate"),
        (
            "cert.pem",
            "junk.pem",
            "junk.pem: holds no usable private key",
        ),
        ("cert.pem", "other-key.pem", "cannot serve TLS"),
    ];
    for (cert, key, says) in cases {
        let out = Skillcat::new(&[
            "serve",
            "r.db",
            "--addr",
            "127.0.0.1:0",
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ])
        .cwd(dir)
        .run();
        out.code(2).says(&[says]);
        assert!(out.out().is_empty(), "{cert} {key}: {}", out.out());
    }
    Skillcat::new(&["serve", "r.db", "--tls-cert", "cert.pem"])
        .cwd(dir)
        .run()
        .code(2)
        .says(&["--tls-key"]);
}

/// The id of the key `pubkey` (as `trust list --format json` shows it).
fn key_id(dir: &Path, keyring: &str, pubkey: &str) -> String {
    let text = std::fs::read_to_string(dir.join(pubkey)).unwrap();
    let listed = Skillcat::new(&["trust", "list", "--keyring", keyring, "--format", "json"])
        .cwd(dir)
        .run();
    let keys: J = listed.code(0).json();
    let keys = keys
        .as_array()
        .or_else(|| keys["keys"].as_array())
        .unwrap_or_else(|| panic!("{keys}"))
        .clone();
    keys.iter()
        .map(|k| k["id"].as_str().unwrap().to_string())
        .find(|id| text.contains(&id.to_lowercase()) || text.contains(id) || keys.len() == 1)
        .unwrap_or_else(|| panic!("no id for {pubkey} in {keys:?}"))
}

#[test]
fn a_key_added_to_the_keyring_is_accepted_and_a_revoked_one_refused_without_restart() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let run = |args: &[&str]| Skillcat::new(args).cwd(dir).run();
    for k in ["one", "two"] {
        run(&["keygen", "-o", k, "--unencrypted"]).code(0);
    }
    run(&[
        "trust",
        "add",
        "one.pub",
        "--scope",
        "*",
        "--keyring",
        "kr.toml",
    ])
    .code(0);
    let one_id = key_id(dir, "kr.toml", "one.pub");
    // Skills signed as `pack --sign` signs them: the .minisig beside the archive.
    let packed = |name: &str, version: &str, key: &str| {
        let src = dir.join(format!("src-{name}-{version}"));
        write_skill(&src.join(name), &doc(name, version, key), &[]);
        let out = format!("{name}-{version}.tar.gz");
        run(&[
            "pack",
            src.join(name).to_str().unwrap(),
            "-o",
            &out,
            "--sign",
            &format!("{key}.key"),
        ])
        .code(0);
        out
    };
    let by_two = packed("tool-a", "1.0.0", "two");
    let by_one = packed("tool-b", "1.0.0", "one");
    let keyring = path(dir, "kr.toml");
    let (child, url) = serve(dir, &["--keyring", &keyring]);
    let publish = |archive: &str| run(&["publish", &url, archive, "--token-file", "ci.token"]);

    // Key two is not in the keyring yet: refused.
    publish(&by_two).code(1).says(&["422"]);
    // Trusted while the server runs: the next publish is accepted, no restart.
    run(&[
        "trust",
        "add",
        "two.pub",
        "--scope",
        "tool-*",
        "--keyring",
        "kr.toml",
    ])
    .code(0);
    publish(&by_two).code(0);
    // Key one revoked while the server runs: its signature is refused from then on.
    run(&["trust", "revoke", &one_id, "--keyring", "kr.toml"]).code(0);
    publish(&by_one).code(1).says(&["422", "revoked"]);
    // A keyring that no longer reads keeps the keys read before (two still trusted).
    let good = std::fs::read_to_string(dir.join("kr.toml")).unwrap();
    std::fs::write(dir.join("kr.toml"), "[[key]\nbroken").unwrap();
    let by_two_again = packed("tool-c", "1.0.0", "two");
    publish(&by_two_again).code(0);
    // SIGHUP re-reads it even when nothing about the file looks changed.
    std::fs::write(dir.join("kr.toml"), good).unwrap();
    let reloads = log_count(dir, "Reloaded");
    let hup = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let start = Instant::now();
    while log_count(dir, "Reloaded") == reloads {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "SIGHUP reloaded nothing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = stop(child, dir);
    assert!(log.contains("stays in force"), "{log}");
}

/// How many times the server's log says `needle`.
fn log_count(dir: &Path, needle: &str) -> usize {
    std::fs::read_to_string(dir.join("server.log"))
        .unwrap()
        .matches(needle)
        .count()
}

/// Every NUL-separated string of /proc/PID/FILE.
fn proc_strings(pid: u32, file: &str) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/{file}"))
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The children of every thread of `pid`, where the kernel says (CONFIG_PROC_CHILDREN).
fn children_of(pid: u32) -> Option<Vec<String>> {
    let mut all = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let text = std::fs::read_to_string(task.ok()?.path().join("children")).ok()?;
        all.extend(text.split_whitespace().map(str::to_string));
    }
    Some(all)
}

/// Starts `skillcat publish` against a listener that takes the request and never answers;
/// returns the client and the request head it sent (so it is known to have read its token).
fn stalled_publish(dir: &Path, env_token: Option<&str>) -> (Child, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir)
        .args(["publish", &url, "tool-a"])
        .env_remove("SKILLCAT_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match env_token {
        Some(t) => cmd.env("SKILLCAT_TOKEN", t),
        None => cmd.args(["--token-file", "ci.token"]),
    };
    let child = cmd.spawn().unwrap();
    let (conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut head = String::new();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    // Keep the connection open (the client waits for an answer) while the caller looks.
    std::mem::forget(reader);
    (child, head)
}

#[test]
fn the_token_stays_out_of_the_process_list_childrens_environment_and_the_server_log() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish");
    let secret = ci[4..].to_string();
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    write_skill(&dir.join("tool-a"), &doc("tool-a", "1.0.0", ""), &[]);

    // The client, its token from a file, then from $SKILLCAT_TOKEN: the token is on the wire
    // (the listener saw it) but never in its command line, and it starts no child that could
    // inherit it.
    for from_env in [false, true] {
        let (mut client, head) = stalled_publish(dir, from_env.then_some(ci.as_str()));
        assert!(head.contains(&format!("Bearer {ci}")), "{head}");
        let pid = client.id();
        let cmdline = proc_strings(pid, "cmdline");
        assert!(cmdline.iter().any(|a| a == "publish"), "{cmdline:?}");
        assert!(
            !cmdline.iter().any(|a| a.contains(&secret)),
            "the token is in the client's command line: {cmdline:?}"
        );
        if !from_env {
            let environ = proc_strings(pid, "environ");
            assert!(!environ.iter().any(|v| v.contains(&secret)), "{environ:?}");
        }
        if let Some(children) = children_of(pid) {
            assert!(children.is_empty(), "the client started {children:?}");
        }
        let _ = client.kill();
        let _ = client.wait();
    }

    // The server: its command line names the token file, never a token; a good token, an
    // unknown one and a revoked one never reach its log or its answers.
    let (server, url) = serve(dir, &[]);
    let spid = server.id();
    let revoked = token(dir, "gone", "*", "publish");
    Skillcat::new(&["token", "revoke", "gone", "--tokens", "tokens.toml"])
        .cwd(dir)
        .run()
        .code(0);
    let unknown = format!("{}{}", &ci[..4], "x".repeat(ci.len() - 4));
    let mut answers = String::new();
    for t in [&ci, &revoked, &unknown] {
        let out = Skillcat::new(&["publish", &url, "tool-a"])
            .cwd(dir)
            .env("SKILLCAT_TOKEN", t)
            .run();
        answers.push_str(out.out());
        answers.push_str(&out.stderr);
        assert!(
            !answers.contains(&t[4..]),
            "a token is in the client's output"
        );
    }
    let cmdline = proc_strings(spid, "cmdline").join(" ");
    assert!(cmdline.contains("tokens.toml"), "{cmdline}");
    let log = stop(server, dir);
    assert!(log.contains("PUT /api/v1/skills/tool-a/1.0.0"), "{log}");
    for t in [&ci, &revoked, &unknown] {
        assert!(
            !cmdline.contains(&t[4..]),
            "a token is in the server's command line"
        );
        assert!(!log.contains(&t[4..]), "a token is in the server's log");
    }
}

/// The `ETag` and body of `path` on the server at `url` (a 200 is required).
async fn get(url: &str, path: &str) -> (String, Vec<u8>) {
    let resp = reqwest::get(format!("{url}{path}")).await.unwrap();
    assert_eq!(resp.status(), 200, "{path}");
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    (etag, resp.bytes().await.unwrap().to_vec())
}

#[tokio::test(flavor = "multi_thread")]
async fn after_publishes_and_yanks_the_served_site_is_the_one_a_fresh_server_builds() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let ci = token(dir, "ci", "*", "publish,yank");
    std::fs::write(dir.join("ci.token"), format!("{ci}\n")).unwrap();
    let (server, url) = serve(dir, &[]);
    let run = |args: &[&str]| Skillcat::new(args).cwd(dir).run();
    let publish = |name: &str, version: &str, extra: &str| {
        let src = dir.join(format!("src-{name}-{version}"));
        write_skill(
            &src.join(name),
            &doc(name, version, extra),
            &[("notes.md", "shared notes\n", false)],
        );
        run(&[
            "publish",
            &url,
            src.join(name).to_str().unwrap(),
            "--token-file",
            "ci.token",
        ])
        .code(0);
    };
    let (etag0, _) = get(&url, ".well-known/agent-skills/index.json").await;
    publish("charlie", "1.0.0", "c");
    publish("alpha", "1.0.0", "a");
    let (etag1, _) = get(&url, ".well-known/agent-skills/index.json").await;
    assert_ne!(etag0, etag1);
    publish("alpha", "1.1.0", "a2");
    publish("bravo", "1.0.0", "b");
    run(&["yank", &url, "charlie@1.0.0", "--token-file", "ci.token"]).code(0);
    publish("delta", "1.0.0", "d");
    run(&["yank", &url, "alpha@1.1.0", "--token-file", "ci.token"]).code(0);

    let (fresh, fresh_line, fresh_url) = spawn_serve(&dir.join("r.db"), &[], Stdio::null());
    assert!(fresh_line.contains("Serving 3 skills"), "{fresh_line}");
    for path in [
        ".well-known/agent-skills/index.json",
        ".well-known/skills/index.json",
        ".well-known/skills/alpha/SKILL.md",
        ".well-known/agent-skills/delta/notes.md",
    ] {
        let (etag_a, body_a) = get(&url, path).await;
        let (etag_b, body_b) = get(&fresh_url, path).await;
        assert!(!body_a.is_empty(), "{path}");
        assert_eq!(
            String::from_utf8_lossy(&body_a),
            String::from_utf8_lossy(&body_b),
            "{path}"
        );
        assert_eq!(etag_a, etag_b, "{path}");
    }
    let (_, index) = get(&url, ".well-known/agent-skills/index.json").await;
    let index: J = serde_json::from_slice(&index).unwrap();
    let names: Vec<(&str, &str)> = index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["version"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [("alpha", "1.0.0"), ("bravo", "1.0.0"), ("delta", "1.0.0")]
    );
    // Every blob the index names is served.
    for e in index["skills"].as_array().unwrap() {
        let blob = e["url"].as_str().unwrap().trim_start_matches("../../");
        let (etag, body) = get(&url, blob).await;
        assert!(!body.is_empty() && etag.contains(&e["digest"].as_str().unwrap()[7..]));
    }
    let mut fresh = fresh;
    let _ = fresh.kill();
    let _ = fresh.wait();
    stop(server, dir);
}

/// Sends a GET of the index on `conn` and reads the status line of the answer.
fn status_line(conn: &mut std::net::TcpStream) -> String {
    use std::io::Write;
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(b"GET /.well-known/skills/index.json HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut line = String::new();
    BufReader::new(conn).read_line(&mut line).unwrap();
    line.trim().to_string()
}

#[test]
fn a_connection_over_its_address_cap_waits_for_a_slot_briefly_then_is_refused() {
    let tmp = registry_dir();
    let dir = tmp.path();
    let (mut server, _, url) = spawn_serve(
        &dir.join("r.db"),
        &["--max-connections-per-address", "2"],
        Stdio::null(),
    );
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let connect = || std::net::TcpStream::connect(addr).unwrap();
    let (mut a, mut b) = (connect(), connect());
    assert!(status_line(&mut a).starts_with("HTTP/1.1 200"));
    assert!(status_line(&mut b).starts_with("HTTP/1.1 200"));
    // A third while two are open: it waits, and is served once one of the two closes (as a
    // client recycling its connections at its cap does), instead of being refused.
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(a);
    });
    let mut c = connect();
    assert!(status_line(&mut c).starts_with("HTTP/1.1 200"));
    closer.join().unwrap();
    // A fourth while b and c stay open: refused once the grace (1 s) has passed.
    let start = Instant::now();
    // (It sends nothing: the refusal comes before any request, then the connection closes.)
    let d = connect();
    d.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut line = String::new();
    BufReader::new(d).read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 503"), "{line}");
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    drop((b, c));
    let _ = server.kill();
    let _ = server.wait();
}

/// The first line `skillcat serve` prints, and what it said on stderr by then.
fn first_words(dir: &Path, args: &[&str]) -> (String, String) {
    let mut child = Command::new(bin())
        .current_dir(dir)
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (line, err)
}

#[test]
fn publishing_over_plain_http_off_loopback_warns_and_over_https_or_loopback_does_not() {
    let tmp = registry_dir();
    let dir = tmp.path();
    certificates(dir);
    token(dir, "ci", "*", "publish");
    let publish = ["r.db", "--publish", "--tokens", "tokens.toml"];
    let with = |extra: &[&str]| {
        let mut args = publish.to_vec();
        args.extend_from_slice(extra);
        first_words(dir, &args)
    };
    let (line, err) = with(&["--addr", "0.0.0.0:0"]);
    assert!(line.contains("on http://0.0.0.0:"), "{line}");
    assert!(
        err.contains("warning: serving the publishing API over plain HTTP")
            && err.contains("unencrypted"),
        "{err}"
    );
    let (line, err) = with(&[
        "--addr",
        "0.0.0.0:0",
        "--tls-cert",
        "cert.pem",
        "--tls-key",
        "key.pem",
    ]);
    assert!(line.contains("on https://0.0.0.0:"), "{line}");
    assert!(!err.contains("warning"), "{err}");
    let (_, err) = with(&["--addr", "127.0.0.1:0"]);
    assert!(!err.contains("warning"), "{err}");
}

/// A registry's answer is read under a limit: an answer of 8 MiB to a publish (the API's are a
/// few lines of JSON) is refused by its Content-Length, not read whole into memory and taken
/// for a publish.
#[test]
fn an_answer_larger_than_the_limit_is_refused_not_read_whole() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("ci.token"), "t0ken\n").unwrap();
    write_skill(&dir.join("tool-a"), &doc("tool-a", "1.0.0", ""), &[]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(conn);
        let head = crate::support::read_head_lines(&mut reader).unwrap();
        let length: usize = head
            .iter()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let digest = "a".repeat(8 << 20);
        let answer = format!(r#"{{"outcome":"published","digest":"sha256:{digest}"}}"#);
        let mut conn = reader.into_inner();
        // The client may hang up once it has read the head: that is the point.
        let _ = conn.write_all(&crate::support::http_response(
            200,
            &[("Content-Type", "application/json")],
            answer.as_bytes(),
        ));
    });
    Skillcat::new(&["publish", &url, "tool-a", "--token-file", "ci.token"])
        .cwd(dir)
        .env_remove("SKILLCAT_TOKEN")
        .run()
        .code(1)
        .says(&["tool-a@1.0.0", "too large", "the limit is 1048576"]);
    server.join().unwrap();
}
