//! Signatures follow the skill: `pack --sign` → `registry publish` → `serve` → `verify URL`
//! closes with a real server on 127.0.0.1, and one byte changed in the served archive or in
//! the signature makes `verify` exit 1. The keyring is made with `trust add`, not by hand.
//!
//! Origin: step 9 (issue 14: the first hour of a real user; signatures follow the skill).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;

use crate::support::bin::{Out, Skillcat, manifest_dir};
use crate::support::serve::spawn_serve;
use serde_json::Value as J;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs in `dir` with `HOME` there too (no user configuration, no default keyring but the
/// one a test writes).
fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args).cwd(dir).env("HOME", dir).run()
}

/// `keygen -o BASE --unencrypted` in `t`.
fn keygen(t: &Path, base: &str) {
    run(t, &["keygen", "-o", base, "--unencrypted"]).code(0);
}

/// The fixture `pdf-forms` packed into `out` in `t`, signed with `key` when one is given.
fn pack_pdf(t: &Path, out: &str, key: Option<&str>) {
    let pdf = manifest_dir().join("fixtures/skills/pdf-forms");
    let mut args = vec!["pack", s(&pdf), "-o", out];
    args.extend(key.map(|k| ["--sign", k]).iter().flatten());
    run(t, &args).code(0);
}

/// A key pair, the fixture `pdf-forms` packed and signed with it, a keyring trusting it for
/// `pdf-*` (made with `trust add`), and a registry the signed archive is published into.
struct Chain {
    tmp: tempfile::TempDir,
}

impl Chain {
    fn new() -> Chain {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        keygen(t, "me");
        pack_pdf(t, "pdf.tar.gz", Some("me.key"));
        run(
            t,
            &[
                "trust",
                "add",
                "me.pub",
                "--scope",
                "pdf-*",
                "--keyring",
                "k.toml",
            ],
        )
        .code(0);
        run(t, &["registry", "init", "r.db"]).code(0);
        let o = run(t, &["registry", "publish", "r.db", "pdf.tar.gz"]);
        o.code(0);
        assert!(o.out().contains("signed by"), "{}", o.out());
        Chain { tmp }
    }

    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// `verify SOURCE --keyring k.toml` with a fresh cache (nothing is reused between runs).
    fn verify(&self, source: &str) -> Out {
        let cache = tempfile::tempdir().unwrap();
        run(
            self.dir(),
            &[
                "--cache",
                s(cache.path()),
                "verify",
                source,
                "--keyring",
                "k.toml",
            ],
        )
    }
}

/// `skillcat serve SOURCE` on 127.0.0.1, stopped on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(source: &Path) -> Server {
        let (child, _, url) = spawn_serve(source, &[], Stdio::null());
        Server { child, url }
    }

    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Tamper = dyn Fn(&str, &str, Vec<u8>) -> Vec<u8> + Send + Sync;

/// An HTTP/1.1 proxy on 127.0.0.1 in front of `upstream` (`host:port`): each response body
/// goes through `tamper(path, content type, body)` before it is sent on, with its length
/// fixed up. One request per connection.
fn proxy(upstream: String, tamper: Arc<Tamper>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (upstream, tamper) = (upstream.clone(), tamper.clone());
            std::thread::spawn(move || {
                let _ = forward(&mut conn, &upstream, &*tamper);
            });
        }
    });
    format!("http://{addr}/")
}

fn forward(conn: &mut TcpStream, upstream: &str, tamper: &Tamper) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut first = head.lines().next().unwrap_or_default().split(' ');
    let (method, path) = (first.next().unwrap_or("GET"), first.next().unwrap_or("/"));
    let mut up = TcpStream::connect(upstream)?;
    write!(
        up,
        "{method} {path} HTTP/1.1\r\nHost: {upstream}\r\nAccept-Encoding: identity\r\n\
         Connection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    up.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(answer.len(), |i| i + 4);
    let (up_head, body) = answer.split_at(split);
    let up_head = String::from_utf8_lossy(up_head);
    let status: u16 = up_head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(502);
    let content_type = up_head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let body = tamper(path, &content_type, body.to_vec());
    conn.write_all(&crate::support::http_response(
        status,
        &[("Content-Type", &content_type)],
        &body,
    ))
}

/// The index entry of `pdf-forms` in an index body.
fn entry(index: &J) -> &J {
    index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "pdf-forms")
        .unwrap()
}

/// `body` as JSON with `f` applied to the `pdf-forms` entry.
fn edit_index(body: Vec<u8>, f: impl Fn(&mut J)) -> Vec<u8> {
    let mut index: J = serde_json::from_slice(&body).unwrap();
    for e in index["skills"].as_array_mut().unwrap() {
        if e["name"] == "pdf-forms" {
            f(e);
        }
    }
    serde_json::to_vec(&index).unwrap()
}

/// One character of the signature's second line (the signature proper) changed.
fn flip_signature_char(sig: &str) -> String {
    let mut lines: Vec<String> = sig.lines().map(str::to_string).collect();
    let line = &mut lines[1];
    let i = line.len() / 2;
    let c = line.as_bytes()[i];
    let swapped = if c == b'A' { 'B' } else { 'A' };
    line.replace_range(i..i + 1, &swapped.to_string());
    lines.join("\n") + "\n"
}

#[test]
fn pack_publish_serve_verify_closes_and_any_changed_byte_fails() {
    let chain = Chain::new();
    let t = chain.dir();

    // Beside the archive, in the registry: both verify.
    chain.verify("pdf.tar.gz").code(0);
    let o = chain.verify("r.db");
    o.code(0);
    assert!(o.out().starts_with("Verified pdf-forms@0.4.1 (sha256:"));

    // Served from the registry: the index carries the signature, and verify finds it there.
    let server = Server::start(&t.join("r.db"));
    let index: J = serde_json::from_slice(&http_get(&format!(
        "{}.well-known/agent-skills/index.json",
        server.url
    )))
    .unwrap();
    let signature = entry(&index)["skillcat"]["signature"]
        .as_str()
        .expect("the served index carries the signature")
        .to_string();
    assert_eq!(entry(&index)["version"], "0.4.1");
    let o = chain.verify(&server.url);
    o.code(0);
    assert!(o.out().contains("Verified pdf-forms@0.4.1"), "{}", o.out());

    // From the cache, offline: the cached index keeps the signature.
    let cache = tempfile::tempdir().unwrap();
    let c = s(cache.path());
    run(t, &["--cache", c, "fetch", &server.url]).code(0);
    let o = run(
        t,
        &[
            "--cache",
            c,
            "--offline",
            "verify",
            &server.url,
            "--keyring",
            "k.toml",
        ],
    );
    o.code(0);
    assert!(o.out().contains("Verified pdf-forms@0.4.1"), "{}", o.out());

    // Through a proxy that changes nothing: still verified (the proxy is honest).
    let honest = proxy(server.addr(), Arc::new(|_: &str, _: &str, b: Vec<u8>| b));
    chain.verify(&honest).code(0);

    // One byte of the served archive changed: exit 1, saying why.
    let archive_byte = proxy(
        server.addr(),
        Arc::new(|_: &str, ctype: &str, mut b: Vec<u8>| {
            if ctype == "application/gzip" {
                let i = b.len() / 2;
                b[i] ^= 0x01;
            }
            b
        }),
    );
    let o = chain.verify(&archive_byte);
    o.code(1);
    assert!(!o.out().contains("Verified"), "{}", o.out());
    o.says(&["pdf-forms", "digest"]);

    // One character of the signature in the served index changed: exit 1.
    let sig_byte = proxy(
        server.addr(),
        Arc::new(|path: &str, _: &str, b: Vec<u8>| {
            if path.ends_with("index.json") {
                return edit_index(b, |e| {
                    let sig = e["skillcat"]["signature"].as_str().unwrap().to_string();
                    e["skillcat"]["signature"] = J::from(flip_signature_char(&sig));
                });
            }
            b
        }),
    );
    let o = chain.verify(&sig_byte);
    o.code(1);
    assert!(!o.out().contains("Verified"), "{}", o.out());
    o.says(&["Verification failed for pdf-forms"]);

    // The signature taken away: exit 1, saying there is none.
    let unsigned = proxy(
        server.addr(),
        Arc::new(|path: &str, _: &str, b: Vec<u8>| {
            if path.ends_with("index.json") {
                return edit_index(b, |e| e["skillcat"]["signature"] = J::Null);
            }
            b
        }),
    );
    chain
        .verify(&unsigned)
        .code(1)
        .says(&["Verification failed for pdf-forms: no signature"]);

    // Other content served consistently (index, archive and digests all agree) under the
    // genuine signature: only the signature can tell, and it does.
    let forged_dir = t.join("forged/pdf-forms");
    copy_dir(
        &manifest_dir().join("fixtures/skills/pdf-forms"),
        &forged_dir,
    );
    let notes = forged_dir.join("references/field-types.md");
    let mut text = std::fs::read(&notes).unwrap();
    text[10] ^= 0x20;
    std::fs::write(&notes, text).unwrap();
    let forged = Server::start(&t.join("forged"));
    let genuine = signature.clone();
    let grafted = proxy(
        forged.addr(),
        Arc::new(move |path: &str, _: &str, b: Vec<u8>| {
            if path.ends_with("index.json") {
                let sig = genuine.clone();
                return edit_index(b, move |e| {
                    e["skillcat"]["signature"] = J::from(sig.clone())
                });
            }
            b
        }),
    );
    let o = chain.verify(&grafted);
    o.code(1);
    assert!(!o.out().contains("Verified"), "{}", o.out());
    o.says(&["Verification failed for pdf-forms", "digest"]);
}

#[test]
fn every_store_gives_verify_the_signature_it_keeps_and_says_where_it_looked() {
    let chain = Chain::new();
    let t = chain.dir();
    // NAME selects one skill; NAME@VERSION a version of a registry.
    let o = run(
        t,
        &["verify", "r.db", "pdf-forms@0.4.1", "--keyring", "k.toml"],
    );
    o.code(0);
    assert!(o.out().contains("Verified pdf-forms@0.4.1"), "{}", o.out());
    run(t, &["verify", "r.db", "nope", "--keyring", "k.toml"])
        .code(1)
        .says(&["no skill named 'nope'"]);

    // An archive with no signature beside it: where verify looked.
    pack_pdf(t, "bare.zip", None);
    chain.verify("bare.zip").code(1).says(&[
        "Verification failed for pdf-forms: no signature",
        "no bare.zip.minisig beside it",
    ]);
    // A registry publish of an unsigned skill keeps no signature: said as much.
    run(t, &["registry", "init", "plain.db"]).code(0);
    run(t, &["registry", "publish", "plain.db", "bare.zip"]).code(0);
    chain
        .verify("plain.db")
        .code(1)
        .says(&["Verification failed for pdf-forms: no signature"]);
}

/// A temporary directory holding the unencrypted key pairs `BASE.key`/`BASE.pub` of `bases`.
fn with_keys(bases: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for base in bases {
        keygen(tmp.path(), base);
    }
    tmp
}

#[test]
fn trust_add_list_revoke_make_and_keep_the_keyring() {
    let tmp = with_keys(&["a", "b"]);
    let t = tmp.path();
    let id_of = |pubfile: &str| {
        let text = std::fs::read_to_string(t.join(pubfile)).unwrap();
        text.lines()
            .next()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
    };
    let (a, b) = (id_of("a.pub"), id_of("b.pub"));

    // No --keyring: the default one, beside the user's configuration.
    let o = run(
        t,
        &[
            "trust",
            "add",
            "a.pub",
            "--scope",
            "acme-*",
            "--comment",
            "release",
        ],
    );
    o.code(0);
    let default = t.join(".config/skillcat/keyring.toml");
    assert!(
        o.out().contains(&format!("Trusted key {a} for acme-*")),
        "{}",
        o.out()
    );
    assert!(default.is_file());
    // Another scope for the same key widens it; a second key is appended.
    run(t, &["trust", "add", "a.pub", "--scope", "pdf-forms"]).code(0);
    run(t, &["trust", "add", "b.pub", "--scope", "*"]).code(0);
    let o = run(t, &["trust", "list", "--format", "json"]);
    o.code(0);
    let keys = o.json()["keys"].clone();
    assert_eq!(keys[0]["id"], a.as_str());
    assert_eq!(
        keys[0]["scopes"],
        serde_json::json!(["acme-*", "pdf-forms"])
    );
    assert_eq!(keys[0]["comment"], "release");
    assert_eq!(keys[1]["id"], b.as_str());
    assert_eq!(keys[1]["revoked"], false);

    // The keyring verifies what the key signed, with no --keyring named.
    pack_pdf(t, "p.tar.gz", Some("a.key"));
    run(t, &["verify", "p.tar.gz"]).code(0);

    // Revoked: verification now fails, saying so; the listing shows it.
    let o = run(t, &["trust", "revoke", &a.to_lowercase()]);
    o.code(0);
    assert!(o.out().contains(&format!("Revoked key {a}")), "{}", o.out());
    run(t, &["verify", "p.tar.gz"])
        .code(1)
        .says(&["which the keyring marks revoked"]);
    let o = run(t, &["trust", "list"]);
    assert!(
        o.out()
            .lines()
            .any(|l| l.starts_with(&a) && l.contains("[revoked]")),
        "{}",
        o.out()
    );
    // A revoked key is not trusted again by adding it; an unknown id cannot be revoked.
    run(t, &["trust", "add", "a.pub", "--scope", "x"])
        .code(1)
        .says(&["is revoked"]);
    run(t, &["trust", "revoke", "0000000000000000"])
        .code(1)
        .says(&["not in the keyring"]);
    // Scopes are checked before anything is written.
    let before = std::fs::read(&default).unwrap();
    run(t, &["trust", "add", "b.pub", "--scope", "has space"])
        .code(2)
        .says(&["invalid scope pattern"]);
    assert_eq!(std::fs::read(&default).unwrap(), before);

    // --keyring FILE: a keyring of its own; its parent must exist.
    let add_b = |keyring: &str| {
        run(
            t,
            &[
                "trust",
                "add",
                "b.pub",
                "--scope",
                "*",
                "--keyring",
                keyring,
            ],
        )
    };
    add_b("own.toml").code(0);
    assert!(t.join("own.toml").is_file());
    add_b("no/dir/k.toml").code(2).says(&["does not exist"]);
}

#[test]
fn a_public_key_given_as_keyring_says_what_a_keyring_is() {
    let tmp = with_keys(&["me"]);
    let t = tmp.path();
    pack_pdf(t, "p.tar.gz", Some("me.key"));
    let o = run(t, &["verify", "p.tar.gz", "--keyring", "me.pub"]);
    o.code(2);
    o.says(&[
        "this is the minisign public key",
        "not a keyring",
        "skillcat trust add me.pub --scope",
    ]);
    assert!(!o.stderr.contains("TOML parse error"), "{}", o.stderr);
    // Any other text: what a keyring is, and how to make one.
    std::fs::write(t.join("notes.txt"), "hello: world\n").unwrap();
    let o = run(t, &["verify", "p.tar.gz", "--keyring", "notes.txt"]);
    o.code(2);
    o.says(&["not a keyring", "skillcat trust add"]);
    // No keyring at all: where one would come from.
    run(t, &["verify", "p.tar.gz"])
        .code(2)
        .says(&["no keyring", "--keyring FILE", "trust add"]);
}

/// GET `url` with a plain HTTP/1.1 request; the body.
fn http_get(url: &str) -> Vec<u8> {
    let rest = url.trim_start_matches("http://");
    let (addr, path) = rest.split_once('/').unwrap();
    let mut c = TcpStream::connect(addr).unwrap();
    write!(
        c,
        "GET /{path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    c.read_to_end(&mut answer).unwrap();
    let at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    answer[at..].to_vec()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
