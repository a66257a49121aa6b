//! `oci://` sources and `skillcat push` against the real CNCF distribution registry (Debian
//! `docker-registry`, started per test on 127.0.0.1 with a throwaway storage folder), once
//! without auth and once with htpasswd; artifacts built by hand with curl; skopeo reading what
//! skillcat pushed; a hostile registry written here (flipped bytes, wrong digests, a bearer
//! token flow); the cache, offline; and the conformance suite over each valid catalog skill.
//!
//! Origin: step 12 (issue 17: OCI registries).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::bin::{Out, Skillcat};
use crate::support::project::{Project, key};
use crate::support::registry::{Registry, cache_blobs, sha256_digest, tar_gz};
use serde_json::{Value as J, json};

/// A home folder of its own (cache, ~/.docker) for every run of one test.
struct Home {
    tmp: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            tmp: tempfile::Builder::new()
                .prefix("skillcat-oci-")
                .tempdir()
                .unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn cache(&self) -> PathBuf {
        self.path().join("cache")
    }

    fn sc(&self, args: &[&str]) -> Skillcat {
        Skillcat::new(args)
            .env("HOME", self.path())
            .env("XDG_CACHE_HOME", self.cache())
            .env_remove("DOCKER_CONFIG")
            .env_remove("SKILLCAT_OCI_USERNAME")
            .env_remove("SKILLCAT_OCI_PASSWORD")
            .env_remove("SKILLCAT_OCI_REGISTRY")
            .env_remove("SKILLCAT_OCI_REALM")
    }

    fn run(&self, args: &[&str]) -> Out {
        self.sc(args).run()
    }

    /// A skill folder `name` with a script (executable) and a reference.
    fn skill(&self, name: &str, version: &str, body: &str) -> PathBuf {
        let dir = self.path().join("src").join(name);
        crate::support::write_skill(
            &dir,
            &format!(
                "---\nname: {name}\ndescription: Does {name} things when asked about {name}.\nlicense: MIT\nmetadata:\n  version: \"{version}\"\n---\n{body}\n"
            ),
            &[
                ("scripts/run.sh", "#!/bin/sh\necho ran\n", true),
                ("references/notes.md", "Some notes.\n", false),
            ],
        );
        dir
    }
}

/// The manifest digest of a push: the `@sha256:…` of its `Pushed … → oci://…` line.
fn pushed_digest(out: &Out) -> String {
    let line = out
        .out()
        .lines()
        .find(|l| l.starts_with("Pushed "))
        .unwrap_or_else(|| panic!("no Pushed line: {}", out.out()));
    let at = line.rsplit('@').next().unwrap();
    at.split_whitespace().next().unwrap().to_string()
}

/// `skopeo inspect --raw [--config]` of `repo:tag` in `reg` (no skillcat code).
fn skopeo(reg: &Registry, repo_tag: &str, config: bool) -> Vec<u8> {
    let mut cmd = Command::new("skopeo");
    cmd.args(["inspect", "--raw", "--tls-verify=false"]);
    if config {
        cmd.arg("--config");
    }
    let out = cmd
        .arg(format!("docker://{}/{repo_tag}", reg.addr))
        .output()
        .expect("skopeo (scripts/test installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `digest --format json` of a source: the manifest of each skill.
fn manifests(home: &Home, source: &str) -> J {
    home.run(&["digest", source, "--format", "json"])
        .code(0)
        .json()
}

#[test]
fn push_then_every_reading_command_agrees_with_the_directory() {
    let reg = Registry::start();
    let home = Home::new();
    let dir = home.skill("csv-tidy", "1.2.0", "Tidy CSV files.");
    let src = dir.to_string_lossy().to_string();
    let target = reg.oci("team/skills/csv-tidy");
    let first = home.run(&["push", &src, "csv-tidy", &target]);
    first.code(0);
    let digest = pushed_digest(&first);
    assert!(
        first.out().contains(&format!("{target}:1.2.0@{digest}")),
        "the tag defaults to the version: {}",
        first.out()
    );
    // The same skill again: the same manifest, nothing new uploaded.
    let again = home.run(&["push", &src, "csv-tidy", &target]);
    assert_eq!(pushed_digest(again.code(0)), digest);
    assert!(
        again.out().contains("(0 of 2 blobs uploaded)"),
        "{}",
        again.out()
    );

    let at_tag = format!("{target}:1.2.0");
    let at_digest = format!("{target}@{digest}");
    let want = manifests(&home, &src);
    for source in [&at_tag, &at_digest] {
        assert_eq!(manifests(&home, source), want, "{source}");
        let listed = home
            .run(&["list", source, "--format", "json"])
            .code(0)
            .json();
        assert_eq!(listed["skills"][0]["name"], "csv-tidy", "{listed}");
        assert_eq!(listed["skills"][0]["digest"], want[0]["digest"], "{listed}");
        let shown = home.run(&["show", source, "csv-tidy"]);
        assert!(shown.code(0).out().contains("Tidy CSV files."));
        let read = home.run(&["read", source, "csv-tidy", "scripts/run.sh"]);
        assert_eq!(read.code(0).out(), "#!/bin/sh\necho ran\n");
        home.run(&["validate", source]).code(0);
        let tools = home.run(&["tools", source, "csv-tidy"]);
        assert!(
            tools.code(0).out().contains("scripts/run.sh"),
            "{}",
            tools.out()
        );
        let ran = home.run(&["run", source, "csv-tidy", "run"]);
        assert_eq!(ran.code(0).out().trim(), "ran", "{}", ran.stderr);
        let prompt = home.run(&["prompt", source]);
        assert!(prompt.code(0).out().contains("csv-tidy"));
    }
    // Through `skillcat mcp`: the skill as resources, its script as a tool.
    let mut mcp = std::process::Command::new(crate::support::serve::bin())
        .args(["mcp", &at_tag])
        .env("HOME", home.path())
        .env("XDG_CACHE_HOME", home.cache())
        .env_remove("DOCKER_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = mcp.stdin.take().unwrap();
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"skill://csv-tidy/scripts/run.sh"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
        ] {
            writeln!(stdin, "{line}").unwrap();
        }
    }
    let answered = mcp.wait_with_output().unwrap();
    let answers: Vec<J> = String::from_utf8(answered.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: i64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {answers:?}"))
    };
    assert_eq!(
        by_id(2)["result"]["contents"][0]["text"],
        "#!/bin/sh\necho ran\n"
    );
    let tools = by_id(3)["result"]["tools"].as_array().unwrap();
    assert!(
        tools.iter().any(|t| t["name"] == "run_csv_tidy_run"),
        "{tools:?}"
    );
    // In a catalog (skillcat.toml), as any other source.
    let config = home.path().join("skillcat.toml");
    std::fs::write(&config, format!("[[sources]]\npath = \"{at_tag}\"\n")).unwrap();
    let listed = home.run(&["list", "--config", &config.to_string_lossy()]);
    assert!(
        listed.code(0).out().contains("csv-tidy"),
        "{}",
        listed.out()
    );
    // A path that climbs out is refused as from every other source.
    home.run(&["read", &at_tag, "csv-tidy", "../../etc/passwd"])
        .code(1)
        .says(&["climbs out of the skill"]);

    // skopeo (no skillcat code) reads what was pushed.
    let raw = skopeo(&reg, "team/skills/csv-tidy:1.2.0", false);
    assert_eq!(sha256_digest(&raw), digest, "skopeo sees the same manifest");
    let m: J = serde_json::from_slice(&raw).unwrap();
    assert_eq!(m["artifactType"], "dev.toolhive.skills.v1");
    assert_eq!(
        m["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    assert_eq!(m["layers"].as_array().unwrap().len(), 1);
    assert_eq!(
        m["layers"][0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    assert_eq!(
        m["layers"][0]["annotations"]["org.opencontainers.image.title"],
        "skill.tar.gz"
    );
    let a = &m["annotations"];
    assert_eq!(a["dev.toolhive.skills.name"], "csv-tidy");
    assert_eq!(a["dev.toolhive.skills.version"], "1.2.0");
    assert_eq!(a["dev.skillcat.skill.digest"], want[0]["digest"]);
    assert!(
        a["dev.skillcat.manifest.digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let cfg: J = serde_json::from_slice(&skopeo(&reg, "team/skills/csv-tidy:1.2.0", true)).unwrap();
    let labels = &cfg["config"]["Labels"];
    assert_eq!(labels["dev.toolhive.skills.name"], "csv-tidy");
    assert_eq!(labels["dev.toolhive.skills.license"], "MIT");
    assert_eq!(
        labels["dev.toolhive.skills.files"],
        r#"["SKILL.md","references/notes.md","scripts/run.sh"]"#
    );
}

/// An image manifest with `artifact_type`, a config of `config_type` and one layer.
fn artifact(
    reg: &Registry,
    repo: &str,
    artifact_type: Option<&str>,
    config_type: &str,
    config: &[u8],
    layer_type: &str,
    layer: &[u8],
) -> (Vec<u8>, String) {
    let config_digest = reg.put_blob(repo, config);
    let layer_digest = reg.put_blob(repo, layer);
    let mut m = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": config_type, "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": layer_type, "digest": layer_digest, "size": layer.len(),
                    "annotations": {"org.opencontainers.image.title": "skill.tar.gz"}}],
        "annotations": {"org.opencontainers.image.created": "2025-01-01T00:00:00Z"},
    });
    if let Some(a) = artifact_type {
        m["artifactType"] = json!(a);
    }
    let bytes = serde_json::to_vec(&m).unwrap();
    let digest = sha256_digest(&bytes);
    (bytes, digest)
}

const DOC: &str =
    "---\nname: hand-made\ndescription: Built from raw OCI JSON by a test.\n---\nHello.\n";

#[test]
fn hand_built_artifacts_in_every_layout_are_read_and_others_named() {
    let reg = Registry::start();
    let home = Home::new();
    // The same files in a folder, for the digest they must give.
    let dir = home.path().join("hand-made");
    crate::support::write_skill(&dir, DOC, &[("scripts/go.sh", "echo go\n", true)]);
    let want = manifests(&home, &dir.to_string_lossy());
    let flat = tar_gz(&[
        ("SKILL.md", DOC, false),
        ("scripts/go.sh", "echo go\n", true),
    ]);

    // ToolHive: the manifest inside an image index for two platforms, as ToolHive pushes it.
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Labels": {"dev.toolhive.skills.name": "hand-made", "dev.toolhive.skills.version": "0.1.0"}},
        "rootfs": {"type": "layers", "diff_ids": []}
    }))
    .unwrap();
    let (m, md) = artifact(
        &reg,
        "dockyard/hand-made",
        Some("dev.toolhive.skills.v1"),
        "application/vnd.oci.image.config.v1+json",
        &config,
        "application/vnd.oci.image.layer.v1.tar+gzip",
        &flat,
    );
    reg.put_manifest(
        "dockyard/hand-made",
        &md,
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": m.len(),
             "artifactType": "dev.toolhive.skills.v1", "platform": {"architecture": "amd64", "os": "linux"}},
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": m.len(),
             "artifactType": "dev.toolhive.skills.v1", "platform": {"architecture": "arm64", "os": "linux"}}
        ]
    }))
    .unwrap();
    let index_digest = reg.put_manifest(
        "dockyard/hand-made",
        "0.1.0",
        "application/vnd.oci.image.index.v1+json",
        &index,
    );
    let toolhive = format!("{}:0.1.0", reg.oci("dockyard/hand-made"));
    assert_eq!(manifests(&home, &toolhive)[0]["digest"], want[0]["digest"]);
    assert_eq!(
        home.run(&["read", &toolhive, "hand-made", "scripts/go.sh"])
            .code(0)
            .out(),
        "echo go\n"
    );

    // Installing it pins the digest the tag resolved to (the index).
    let p = Project::new();
    p.run(&["add", &toolhive, "--agent", "claude-code"]).code(0);
    let entry = &p.lock()["skills"]["hand-made"];
    assert_eq!(entry["sourceType"], "oci");
    assert_eq!(entry["ociDigest"], json!(index_digest));
    assert_eq!(entry["digest"], want[0]["digest"]);

    // Skillet, ToolHive's older media type.
    let (m, _) = artifact(
        &reg,
        "old/hand-made",
        None,
        "application/vnd.stacklok.skillet.skill.v1+json",
        b"{}",
        "application/vnd.oci.image.layer.v1.tar+gzip",
        &flat,
    );
    reg.put_manifest(
        "old/hand-made",
        "1",
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    assert_eq!(
        manifests(&home, &format!("{}:1", reg.oci("old/hand-made")))[0]["digest"],
        want[0]["digest"]
    );

    // The Agent Skills proposal: files under <name>/.
    let wrapped = tar_gz(&[
        ("hand-made/SKILL.md", DOC, false),
        ("hand-made/scripts/go.sh", "echo go\n", true),
    ]);
    let (m, _) = artifact(
        &reg,
        "as/hand-made",
        None,
        "application/vnd.agentskills.skill.config.v1+json",
        b"{}",
        "application/vnd.agentskills.skill.content.v1.tar+gzip",
        &wrapped,
    );
    reg.put_manifest(
        "as/hand-made",
        "1",
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    assert_eq!(
        manifests(&home, &format!("{}:1", reg.oci("as/hand-made")))[0]["digest"],
        want[0]["digest"]
    );

    // Something else: refused, naming what was found.
    let (m, _) = artifact(
        &reg,
        "agent/x",
        None,
        "application/vnd.docker.agent.config.v1+json",
        b"{}",
        "application/yaml",
        b"name: x\n",
    );
    reg.put_manifest(
        "agent/x",
        "1",
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    home.run(&["list", &format!("{}:1", reg.oci("agent/x"))])
        .code(2)
        .says(&[
            "application/vnd.docker.agent.config.v1+json",
            "application/yaml",
            "not a skill in a layout skillcat reads",
        ]);
}

#[test]
fn signatures_are_referrers_found_through_the_tag_fallback_and_installs_are_pinned() {
    let reg = Registry::start();
    let home = Home::new();
    let dir = home.skill("signed-one", "2.0.0", "Signed.");
    let src = dir.to_string_lossy().to_string();
    let k = key(home.path(), "release", "*");
    let other = key(home.path(), "other", "*");
    let target = reg.oci("skills/signed-one");
    let out = home.run(&[
        "push",
        &src,
        "signed-one",
        &target,
        "--sign",
        &k.secret.to_string_lossy(),
    ]);
    out.code(0);
    assert!(
        out.out().contains("sha256-<hex>: no referrers API"),
        "{}",
        out.out()
    );
    let digest = pushed_digest(&out);
    // The fallback tag holds an index listing the referrer, whose subject is the manifest.
    let fallback = digest.replacen(':', "-", 1);
    let index: J = serde_json::from_slice(&skopeo(
        &reg,
        &format!("skills/signed-one:{fallback}"),
        false,
    ))
    .unwrap();
    assert_eq!(
        index["manifests"][0]["artifactType"],
        "application/vnd.skillcat.signature.v1"
    );
    // Signing again adds the new signature beside the first (minisign signatures differ from
    // one signing to the next); no referrer is listed twice.
    home.run(&[
        "push",
        &src,
        "signed-one",
        &target,
        "--sign",
        &k.secret.to_string_lossy(),
    ])
    .code(0);
    let again: J = serde_json::from_slice(&skopeo(
        &reg,
        &format!("skills/signed-one:{fallback}"),
        false,
    ))
    .unwrap();
    let mut listed: Vec<&str> = again["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["digest"].as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&index["manifests"][0]["digest"].as_str().unwrap()),
        "{again}"
    );
    let count = listed.len();
    listed.dedup();
    assert_eq!((count, listed.len()), (2, 2), "{again}");

    let at = format!("{target}:2.0.0");
    let v = home.run(&["verify", &at, "--keyring", &k.keyring.to_string_lossy()]);
    assert!(
        v.code(0).out().contains(&format!("signed by key {}", k.id)),
        "{}",
        v.out()
    );
    // A keyring without the signer's key: refused, saying why.
    let v = home.run(&["verify", &at, "--keyring", &other.keyring.to_string_lossy()]);
    v.code(1);
    assert!(format!("{}{}", v.out(), v.stderr).contains("not in the keyring"));

    // An install that requires a signature takes it from the referrer and pins the manifest.
    let p = Project::new();
    p.run(&[
        "add",
        &at,
        "--agent",
        "claude-code",
        "--keyring",
        &k.keyring.to_string_lossy(),
        "--require-signature",
    ])
    .code(0);
    let entry = p.lock()["skills"]["signed-one"].clone();
    assert_eq!(entry["ociDigest"], json!(digest));
    assert_eq!(entry["signer"], json!(k.id));
    let p2 = Project::new();
    p2.run(&[
        "add",
        &at,
        "--agent",
        "claude-code",
        "--keyring",
        &other.keyring.to_string_lossy(),
        "--require-signature",
    ])
    .code(1)
    .says(&["not in the keyring"]);
    assert!(!p2.installed("signed-one").exists());
    // An unsigned skill is refused when a signature is required.
    let plain = home.skill("plain-one", "1.0.0", "Unsigned.");
    home.run(&[
        "push",
        &plain.to_string_lossy(),
        "plain-one",
        &reg.oci("skills/plain-one"),
    ])
    .code(0);
    p2.run(&[
        "add",
        &format!("{}:1.0.0", reg.oci("skills/plain-one")),
        "--agent",
        "claude-code",
        "--keyring",
        &k.keyring.to_string_lossy(),
        "--require-signature",
    ])
    .code(1);

    // The tag moves to other content; the lockfile still installs the pinned manifest.
    std::fs::write(dir.join("references/notes.md"), "Changed notes.\n").unwrap();
    let moved = home.run(&["push", &src, "signed-one", &at]);
    assert_ne!(pushed_digest(moved.code(0)), digest);
    std::fs::remove_dir_all(p.installed("signed-one")).unwrap();
    p.run(&[
        "install",
        "--frozen",
        "--keyring",
        &k.keyring.to_string_lossy(),
    ])
    .code(0);
    assert_eq!(
        p.digest_of(&p.installed("signed-one")),
        entry["digest"].as_str().unwrap()
    );
}

#[test]
fn htpasswd_auth_credentials_from_the_environment_or_docker_config_and_clear_refusals() {
    let reg = Registry::start_with_auth("alice", "wonder-land-42");
    let home = Home::new();
    let dir = home.skill("locked", "1.0.0", "Behind a password.");
    let src = dir.to_string_lossy().to_string();
    let target = reg.oci("private/locked");
    // No credentials.
    let out = home.run(&["push", &src, "locked", &target]);
    out.code(1)
        .says(&["authentication failed", "SKILLCAT_OCI_USERNAME"]);
    // Wrong credentials: said so, the password never shown.
    let out = home
        .sc(&["push", &src, "locked", &target])
        .env("SKILLCAT_OCI_USERNAME", "alice")
        .env("SKILLCAT_OCI_PASSWORD", "not-the-password")
        .env("SKILLCAT_OCI_REGISTRY", &reg.addr)
        .run();
    out.code(1)
        .says(&["refused the credentials of user \"alice\""]);
    assert!(!out.stderr.contains("not-the-password") && !out.out().contains("not-the-password"));
    // Right ones from the environment.
    home.sc(&["push", &src, "locked", &target])
        .env("SKILLCAT_OCI_USERNAME", "alice")
        .env("SKILLCAT_OCI_PASSWORD", "wonder-land-42")
        .env("SKILLCAT_OCI_REGISTRY", &reg.addr)
        .run()
        .code(0);
    // From ~/.docker/config.json (a plain `auths` entry), for reading.
    std::fs::create_dir_all(home.path().join(".docker")).unwrap();
    let auth = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode("alice:wonder-land-42")
    };
    std::fs::write(
        home.path().join(".docker/config.json"),
        json!({"auths": {reg.addr.clone(): {"auth": auth}}}).to_string(),
    )
    .unwrap();
    let at = format!("{target}:1.0.0");
    assert_eq!(manifests(&home, &at), manifests(&home, &src));
    // A wrong password in the config: an authentication error, not a digest or a missing skill.
    let bad = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode("alice:nope")
    };
    std::fs::write(
        home.path().join(".docker/config.json"),
        json!({"auths": {format!("http://{}", reg.addr): {"auth": bad}}}).to_string(),
    )
    .unwrap();
    let cold = Home::new();
    std::fs::create_dir_all(cold.path().join(".docker")).unwrap();
    std::fs::copy(
        home.path().join(".docker/config.json"),
        cold.path().join(".docker/config.json"),
    )
    .unwrap();
    let out = cold.run(&["list", &at]);
    out.code(2)
        .says(&["authentication failed", "refused the credentials"]);
    assert!(!out.stderr.contains("nope"));
}

#[test]
fn offline_serves_the_cached_skill_with_a_warning_once_the_registry_is_gone() {
    let mut reg = Registry::start();
    let home = Home::new();
    let dir = home.skill("cached-one", "1.0.0", "Cached.");
    let src = dir.to_string_lossy().to_string();
    let target = format!("{}:1.0.0", reg.oci("skills/cached-one"));
    home.run(&["push", &src, "cached-one", &reg.oci("skills/cached-one")])
        .code(0);
    let want = manifests(&home, &src);
    assert_eq!(manifests(&home, &target), want);
    reg.stop();
    let out = home.run(&["--offline", "digest", &target, "--format", "json"]);
    out.code(0).says(&["--offline: serving the cached copy"]);
    assert_eq!(out.json(), want);
    // Without --offline, the unreachable registry is said, and the cached copy served.
    home.run(&["list", &target])
        .code(0)
        .says(&["could not be reached", "serving the cached copy"]);
    // What was never fetched is not cached: said so.
    home.run(&[
        "--offline",
        "list",
        &format!("{}:2.0.0", reg.oci("skills/cached-one")),
    ])
    .code(2)
    .says(&["not cached", "--offline"]);
}

/// A hostile registry: serves what `routes` maps a request path to (status, content type,
/// body); everything else 404. With `bearer`, the /v2/ paths want `Bearer good-token`, handed
/// out by /token to `Basic alice:pw` only.
fn hostile(routes: Vec<(String, &'static str, Vec<u8>)>, bearer: bool) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let realm = format!("http://{addr}/token");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let routes = routes.clone();
            let realm = realm.clone();
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
                        l.strip_prefix("authorization: ")
                            .or_else(|| l.strip_prefix("Authorization: "))
                    })
                    .unwrap_or("")
                    .to_string();
                let basic = {
                    use base64::Engine;
                    format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode("alice:pw")
                    )
                };
                let reply = if bearer && path.starts_with("/token") {
                    if auth == basic {
                        crate::support::http_response(
                            200,
                            &[("Content-Type", "application/json")],
                            br#"{"token":"good-token"}"#,
                        )
                    } else {
                        crate::support::http_response(401, &[], b"")
                    }
                } else if bearer && auth != "Bearer good-token" {
                    let challenge = format!(
                        "Bearer realm=\"{realm}\",service=\"hostile\",scope=\"repository:x:pull\""
                    );
                    crate::support::http_response(401, &[("WWW-Authenticate", &challenge)], b"")
                } else {
                    match routes.iter().find(|(p, _, _)| *p == path) {
                        Some((_, ct, body)) => {
                            crate::support::http_response(200, &[("Content-Type", ct)], body)
                        }
                        None => crate::support::http_response(404, &[], b""),
                    }
                };
                let _ = stream.write_all(&reply);
            });
        }
    });
    addr
}

/// A ToolHive manifest for `layer`, claiming `layer_digest`, and skillcat's skill digest.
fn toolhive_manifest(layer_digest: &str, size: usize, skill_digest: Option<&str>) -> Vec<u8> {
    let mut m = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "dev.toolhive.skills.v1",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256_digest(b"{}"), "size": 2},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": size}],
    });
    if let Some(d) = skill_digest {
        m["annotations"] = json!({"dev.skillcat.skill.digest": d});
    }
    serde_json::to_vec(&m).unwrap()
}

#[test]
fn a_hostile_registry_is_refused_and_nothing_enters_the_cache() {
    const MT: &str = "application/vnd.oci.image.manifest.v1+json";
    let layer = tar_gz(&[("SKILL.md", DOC, false)]);
    let good = sha256_digest(&layer);
    let mut flipped = layer.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x01;
    let honest_manifest = toolhive_manifest(&good, layer.len(), None);
    let wrong_skill = toolhive_manifest(
        &good,
        layer.len(),
        Some(&format!("sha256:{}", "0".repeat(64))),
    );
    let other_manifest = toolhive_manifest(&good, layer.len() + 1, None);
    let addr = hostile(
        vec![
            // The layer's bytes with one bit flipped, under the honest digest.
            ("/v2/flip/manifests/1".into(), MT, honest_manifest.clone()),
            (
                format!("/v2/flip/blobs/{good}"),
                "application/octet-stream",
                flipped,
            ),
            // A layer whose files do not give the skill digest the manifest claims.
            ("/v2/claim/manifests/1".into(), MT, wrong_skill),
            (
                format!("/v2/claim/blobs/{good}"),
                "application/octet-stream",
                layer.clone(),
            ),
            // Asked by digest, another manifest served.
            (
                format!("/v2/swap/manifests/{}", sha256_digest(&honest_manifest)),
                MT,
                other_manifest,
            ),
        ],
        false,
    );
    let home = Home::new();
    home.run(&["list", &format!("oci://{addr}/flip:1")])
        .code(2)
        .says(&["digest mismatch", &good]);
    home.run(&["list", &format!("oci://{addr}/claim:1")])
        .code(2)
        .says(&["digest mismatch", "skill digest"]);
    home.run(&[
        "list",
        &format!("oci://{addr}/swap@{}", sha256_digest(&honest_manifest)),
    ])
    .code(2)
    .says(&["digest mismatch"]);
    assert_eq!(
        cache_blobs(&home.cache()),
        Vec::<PathBuf>::new(),
        "nothing was cached"
    );
}

#[test]
fn bearer_token_challenge_is_answered_with_the_credentials_and_refused_without() {
    const MT: &str = "application/vnd.oci.image.manifest.v1+json";
    let layer = tar_gz(&[("SKILL.md", DOC, false)]);
    let manifest = toolhive_manifest(&sha256_digest(&layer), layer.len(), None);
    let addr = hostile(
        vec![
            ("/v2/x/manifests/1".into(), MT, manifest),
            (
                format!("/v2/x/blobs/{}", sha256_digest(&layer)),
                "application/octet-stream",
                layer,
            ),
        ],
        true,
    );
    let home = Home::new();
    let src = format!("oci://{addr}/x:1");
    home.run(&["list", &src])
        .code(2)
        .says(&["asks for credentials"]);
    home.sc(&["list", &src])
        .env("SKILLCAT_OCI_USERNAME", "alice")
        .env("SKILLCAT_OCI_PASSWORD", "wrong")
        .env("SKILLCAT_OCI_REGISTRY", &addr)
        .run()
        .code(2)
        .says(&["refused the credentials of user \"alice\""]);
    let out = home
        .sc(&["list", &src])
        .env("SKILLCAT_OCI_USERNAME", "alice")
        .env("SKILLCAT_OCI_PASSWORD", "pw")
        .env("SKILLCAT_OCI_REGISTRY", &addr)
        .run();
    assert!(out.code(0).out().contains("hand-made"));
}

#[test]
fn the_readme_block_works_as_written_against_a_local_registry() {
    let readme =
        std::fs::read_to_string(crate::support::bin::manifest_dir().join("README.md")).unwrap();
    let section = &readme[readme
        .find("## OCI registries")
        .expect("the README section")..];
    let block = &section[section.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let reg = Registry::start();
    let p = Project::new();
    let fixtures = crate::support::bin::manifest_dir().join("fixtures");
    let mut ran = 0;
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let line = line
            .replace("127.0.0.1:5000", &reg.addr)
            .replace("fixtures/", &format!("{}/", fixtures.display()));
        let args: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(args[0], "skillcat", "{line}");
        let out = p.run(&args[1..]);
        assert_eq!(out.code, 0, "{line}:\n{}\n{}", out.out(), out.stderr);
        ran += 1;
    }
    assert_eq!(ran, 8);
    assert!(p.installed("pdf-forms").join("SKILL.md").is_file());
}

/// Every valid skill of the conformance catalog, pushed from its directory with `skillcat push`
/// and read back through the OCI source, gives what every other store gives for it: the same
/// files and executable bits, skill digest, name and faults (`skillcat_core::testing::check_one`).
#[test]
fn each_pushed_catalog_skill_passes_the_conformance_suite() {
    let reg = Registry::start();
    let home = Home::new();
    let catalog = skillcat_core::testing::catalog_dir();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let roots = skillcat_core::testing::valid_roots();
    assert!(roots.len() >= 5, "the catalog's valid roots: {roots:?}");
    for (i, root) in roots.iter().enumerate() {
        let dir = catalog.join(root).to_string_lossy().to_string();
        let listed = home.run(&["list", &dir, "--format", "json"]).code(0).json();
        let name = listed["skills"][0]["name"].as_str().unwrap().to_string();
        let target = reg.oci(&format!("conformance/case{i}:conformance"));
        home.run(&["push", &dir, &name, &target]).code(0);
        let opts = skillcat::source::OpenOptions {
            cache_dir: Some(home.path().join(format!("lib-cache-{i}"))),
            ..Default::default()
        };
        let src = skillcat::source::open_with(&target, &opts).unwrap();
        runtime.block_on(skillcat_core::testing::check_one(&*src, root));
    }
}
