//! Registry credentials stay with the host they were given for (issue 49, finding 6). Hand-made
//! servers on distinct loopback hosts (`127.0.0.1` and `127.0.0.2`, each its own port) record
//! every `Authorization` header they receive; the real binary runs with environment credentials
//! bound to one of them.
//!
//! Hostile table (what the next red team tries, and what must hold):
//! - a lockfile or a reference naming another registry: no credentials reach it;
//! - a bearer challenge whose token realm sits on another host: the realm gets no basic
//!   credentials (the token is still asked for, anonymously), unless that host is configured
//!   with `SKILLCAT_OCI_REALM`;
//! - username and password set without `SKILLCAT_OCI_REGISTRY`: sent nowhere, and the error
//!   when a registry asks for credentials names the missing variable;
//! - the same host under another port is another registry.

use std::sync::{Arc, Mutex};

use crate::support::bin::Skillcat;
use crate::support::http_response;
use crate::support::project::Project;
use crate::support::registry::{sha256_digest, tar_gz};
use serde_json::json;

const DOC: &str =
    "---\nname: bound-creds\ndescription: Served to test where credentials go.\n---\nHello.\n";
const MT: &str = "application/vnd.oci.image.manifest.v1+json";

/// What a server was sent: (request path, `Authorization` value or "").
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A server on `ip` answering each request with `reply(path, authorization)`; returns its
/// `host:port` and what it was sent.
fn server(
    ip: &str,
    reply: impl Fn(&str, &str) -> Vec<u8> + Send + Sync + 'static,
) -> (String, Seen) {
    let listener = std::net::TcpListener::bind((ip, 0)).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let reply = Arc::new(reply);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (log, reply) = (log.clone(), reply.clone());
            std::thread::spawn(move || {
                use std::io::{BufReader, Write};
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let Some(head) = crate::support::read_head_lines(&mut reader) else {
                    return;
                };
                let path = head[0].split(' ').nth(1).unwrap_or("").to_string();
                let auth = head
                    .iter()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("authorization")
                            .then(|| v.trim().to_string())
                    })
                    .unwrap_or_default();
                log.lock().unwrap().push((path.clone(), auth.clone()));
                let _ = stream.write_all(&reply(&path, &auth));
            });
        }
    });
    (addr, seen)
}

/// The routes of a one-skill artifact (`/v2/x/manifests/1` and its layer).
fn artifact() -> Vec<(String, Vec<u8>)> {
    let layer = tar_gz(&[("SKILL.md", DOC, false)]);
    let config = b"{}".to_vec();
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MT,
        "artifactType": "dev.toolhive.skills.v1",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256_digest(&config), "size": 2},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": sha256_digest(&layer), "size": layer.len()}],
    }))
    .unwrap();
    vec![
        ("/v2/x/manifests/1".into(), manifest),
        (format!("/v2/x/blobs/{}", sha256_digest(&layer)), layer),
    ]
}

fn route(routes: &[(String, Vec<u8>)], path: &str) -> Vec<u8> {
    match routes.iter().find(|(p, _)| p == path) {
        Some((_, body)) => http_response(200, &[("Content-Type", MT)], body),
        None => http_response(404, &[], b""),
    }
}

/// A registry that wants basic credentials for everything.
fn basic_only(ip: &str) -> (String, Seen) {
    server(ip, |_, _| {
        http_response(401, &[("WWW-Authenticate", "Basic realm=\"r\"")], b"")
    })
}

fn basic(user: &str, pw: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    )
}

/// Environment credentials bound to `registry` (or unbound).
fn with_creds(s: Skillcat, registry: Option<&str>) -> Skillcat {
    let s = s
        .env("SKILLCAT_OCI_USERNAME", "alice")
        .env("SKILLCAT_OCI_PASSWORD", "pw")
        .env_remove("SKILLCAT_OCI_REALM")
        .env_remove("DOCKER_CONFIG");
    match registry {
        Some(r) => s.env("SKILLCAT_OCI_REGISTRY", r),
        None => s.env_remove("SKILLCAT_OCI_REGISTRY"),
    }
}

fn auths(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(_, a)| a.clone())
        .filter(|a| !a.is_empty())
        .collect()
}

#[test]
fn environment_credentials_go_only_to_the_registry_they_name() {
    // The registry the credentials are for, answering with the skill to alice only.
    let routes = artifact();
    let want = basic("alice", "pw");
    let (home_reg, _) = server("127.0.0.1", move |path, auth| {
        if auth != want {
            return http_response(401, &[("WWW-Authenticate", "Basic realm=\"r\"")], b"");
        }
        route(&routes, path)
    });
    // Another host, and the same host under another port: both ask for credentials.
    let (other_host, other_seen) = basic_only("127.0.0.2");
    let (other_port, port_seen) = basic_only("127.0.0.1");

    let p = Project::new();
    with_creds(
        p.sc(&[
            "add",
            &format!("oci://{home_reg}/x:1"),
            "--agent",
            "claude-code",
        ]),
        Some(&home_reg),
    )
    .run()
    .code(0);

    // A lockfile naming another registry: `install` sends it nothing.
    for (addr, seen) in [(&other_host, &other_seen), (&other_port, &port_seen)] {
        let lock = String::from_utf8(p.lock_bytes())
            .unwrap()
            .replace(&home_reg, addr);
        let q = Project::new();
        std::fs::write(q.lockfile(), lock).unwrap();
        let out = with_creds(q.sc(&["install"]), Some(&home_reg)).run();
        assert_ne!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains("asks for credentials"),
            "{}",
            out.stderr
        );
        let list = with_creds(
            p.sc(&["list", &format!("oci://{addr}/x:1")]),
            Some(&home_reg),
        )
        .run();
        list.code(2).says(&["asks for credentials"]);
        assert_eq!(auths(seen), Vec::<String>::new(), "{addr} got credentials");
        assert!(!seen.lock().unwrap().is_empty(), "{addr} was asked");
    }

    // Set without SKILLCAT_OCI_REGISTRY: sent nowhere, and the refusal names the variable.
    let q = Project::new();
    let out = with_creds(
        q.sc(&[
            "add",
            &format!("oci://{other_host}/x:1"),
            "--agent",
            "claude-code",
        ]),
        None,
    )
    .run();
    out.code(1).says(&["SKILLCAT_OCI_REGISTRY"]);
    assert_eq!(auths(&other_seen), Vec::<String>::new());
}

#[test]
fn a_token_realm_on_another_host_gets_no_basic_credentials_unless_configured() {
    // The token service, on another host: hands a token to anyone, and records who asked.
    let (realm, realm_seen) = server("127.0.0.2", |_, _| {
        http_response(
            200,
            &[("Content-Type", "application/json")],
            br#"{"token":"good-token"}"#,
        )
    });
    let routes = artifact();
    let challenge = format!("Bearer realm=\"http://{realm}/token\",service=\"reg\"");
    let (reg, _) = server("127.0.0.1", move |path, auth| {
        if auth != "Bearer good-token" {
            return http_response(401, &[("WWW-Authenticate", &challenge)], b"");
        }
        route(&routes, path)
    });
    let src = format!("oci://{reg}/x:1");
    let p = Project::new();

    // Credentials bound to the registry: the realm elsewhere is asked anonymously.
    with_creds(p.sc(&["list", &src]), Some(&reg)).run().code(0);
    assert!(
        !realm_seen.lock().unwrap().is_empty(),
        "the realm was asked"
    );
    assert_eq!(auths(&realm_seen), Vec::<String>::new());

    // Configured: the realm's host named in SKILLCAT_OCI_REALM gets them.
    let q = Project::new();
    with_creds(q.sc(&["list", &src]), Some(&reg))
        .env("SKILLCAT_OCI_REALM", &realm)
        .run()
        .code(0);
    assert_eq!(auths(&realm_seen), vec![basic("alice", "pw")]);
}
