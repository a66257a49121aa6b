//! The bodies of skillcat's fuzz targets, one function per target, each taking the raw input.
//!
//! Every `fuzz_targets/*.rs` binary is a one-line call into this library, so the same bodies are
//! replayed over the committed corpora by `tests/replay.rs` on the stable toolchain, without
//! libFuzzer (see [`TARGETS`]). Each body goes through a public entry point with its real
//! limits, and asserts invariants beyond "no panic" where the format has one.

use std::future::Future;

use skillcat::archive::{ArchiveKind, ArchiveLimits, ArchiveTree, read_archive};
use skillcat::config::{Config, Environment};
use skillcat::document::{ValidateOptions, parse_document, validate_frontmatter};
use skillcat::install::Lockfile;
use skillcat::pack::{PackEntry, write_tar_gz, write_zip};
use skillcat::prompt::{PromptFormat, PromptOptions, PromptSkill, render};
use skillcat::registry::{Outcome, PublishOptions, Registry};
use skillcat::sign::{Keyring, Statement, key_id_of_public_key, public_key_base64, sign};
use skillcat::source::http::index::parse_index;
use skillcat::source::{ArchiveSource, Source};

/// A target's body: it takes the raw input and panics when an invariant breaks.
pub type Body = fn(&[u8]);

/// Every target by name: the name of its binary and of its corpus folder, and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("document", document),
    ("yaml_fast", yaml_fast),
    ("tar", tar),
    ("tar_gz", tar_gz),
    ("zip", zip),
    ("archive_source", archive_source),
    ("http_index", http_index),
    ("minisign_public_key", minisign_public_key),
    ("minisign_signature", minisign_signature),
    ("statement", statement),
    ("keyring", keyring),
    ("config", config),
    ("lockfile", lockfile),
    ("mcp_uri", mcp_uri),
    ("prompt", prompt),
    ("minisign_secret_key", minisign_secret_key),
    ("registry_publish", registry_publish),
    ("serve_request", serve_request),
    ("oci_manifest", oci_manifest),
    ("tool_declarations", tool_declarations),
    ("publish_metadata", publish_metadata),
    ("audit", audit),
];

/// The SKILL.md reader: any bytes give a document or a fault; a document's frontmatter
/// validates without panicking and every fault says something.
pub fn document(data: &[u8]) {
    if let Ok(doc) = parse_document(data) {
        let faults =
            validate_frontmatter(&doc.frontmatter, Some("dir"), &ValidateOptions::default());
        for f in faults {
            assert!(!f.message().is_empty());
        }
        let _ = doc.frontmatter.to_json();
    }
}

/// The YAML fast path against the saphyr path: whatever the fast path reads, the saphyr path
/// reads to the same value.
pub fn yaml_fast(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let (fast, saphyr) = skillcat::document::__fuzz_yaml_paths(src);
    if let Some(value) = fast {
        assert_eq!(
            saphyr,
            Ok(Some(value)),
            "the fast path reads {src:?} differently"
        );
    }
}

/// A tar archive through the checked reader, then the repack invariant.
pub fn tar(data: &[u8]) {
    checked_archive(ArchiveKind::Tar, data);
}

/// A gzip-compressed tar archive through the checked reader, then the repack invariant.
pub fn tar_gz(data: &[u8]) {
    checked_archive(ArchiveKind::TarGz, data);
}

/// A zip archive through the checked reader, then the repack invariant.
pub fn zip(data: &[u8]) {
    checked_archive(ArchiveKind::Zip, data);
}

/// Reads `data` as `kind` under the default limits. An archive the reader accepts must hold
/// no more than the limits allow, and packed again by `pack` (as `.tar.gz` and as `.zip`) must
/// read back to the same tree: the same roots, files, bytes and executable bits, hence the
/// same skill digests.
fn checked_archive(kind: ArchiveKind, data: &[u8]) {
    let limits = ArchiveLimits::default();
    let Ok(tree) = read_archive(kind, data, &limits) else {
        return;
    };
    let total: u64 = tree.iter().map(|(_, f)| f.bytes.len() as u64).sum();
    assert!(
        total <= limits.max_total,
        "{total} bytes held past the limit"
    );
    assert!(tree.len() as u64 <= limits.max_entries);
    for (_, f) in tree.iter() {
        assert!(f.bytes.len() as u64 <= limits.max_file);
    }
    let entries: Vec<PackEntry> = tree
        .iter()
        .map(|(path, f)| PackEntry {
            path: path.to_string(),
            bytes: f.bytes.clone(),
            executable: f.executable,
        })
        .collect();
    // The repacked archive compresses differently, so only the size and ratio limits are
    // lifted for the second read; every other check applies again.
    let again = ArchiveLimits {
        max_compressed: u64::MAX,
        max_ratio: u64::MAX,
        ..limits
    };
    let mut gz = Vec::new();
    write_tar_gz(&entries, &mut gz).expect("pack writes to memory");
    let reread = read_archive(ArchiveKind::TarGz, &gz, &again)
        .unwrap_or_else(|e| panic!("an accepted archive, packed as .tar.gz, is refused: {e}"));
    assert_same_tree(&tree, &reread, "tar.gz");
    let mut zip = std::io::Cursor::new(Vec::new());
    write_zip(&entries, &mut zip).expect("pack writes to memory");
    let reread = read_archive(ArchiveKind::Zip, zip.get_ref(), &again)
        .unwrap_or_else(|e| panic!("an accepted archive, packed as .zip, is refused: {e}"));
    assert_same_tree(&tree, &reread, "zip");
}

fn assert_same_tree(first: &ArchiveTree, again: &ArchiveTree, format: &str) {
    assert_eq!(
        first.roots(),
        again.roots(),
        "roots differ after packing as {format}"
    );
    assert_eq!(first, again, "files differ after packing as {format}");
    for root in first.roots() {
        assert_eq!(
            root_digest(first, root),
            root_digest(again, root),
            "the digest of {root:?} differs after packing as {format}"
        );
    }
}

fn root_digest(tree: &ArchiveTree, root: &str) -> String {
    skillcat::digest::tree_digest(
        tree.under(root)
            .map(|(path, f)| (path, skillcat::digest::sha256(&f.bytes))),
    )
}

/// An archive source over any bytes: a zip by its magic, else a `.tar.gz`; `None` when the
/// archive reader refuses them.
fn sniffed_archive(data: &[u8]) -> Option<ArchiveSource> {
    let kind = if data.starts_with(b"PK") {
        ArchiveKind::Zip
    } else {
        ArchiveKind::TarGz
    };
    ArchiveSource::from_bytes(kind, "fuzz", data, ArchiveLimits::default()).ok()
}

/// An archive source over any bytes (its kind told by the first byte's magic), and discovery
/// over it: every root is a skill or a fault, never both and never dropped.
pub fn archive_source(data: &[u8]) {
    let Some(source) = sniffed_archive(data) else {
        return;
    };
    let roots = source.tree().roots().len();
    let Ok(found) = block_on(skillcat::source::discover(&source)) else {
        return;
    };
    assert_eq!(
        found.skills.len() + found.faults.len(),
        roots,
        "discovery lost or doubled a root"
    );
    for fault in &found.faults {
        assert!(!fault.fault.message().is_empty());
    }
}

/// The HTTP discovery index (v0.1 and v0.2.0, told apart by its `$schema`) under the default
/// limits: what it gives is unique by name and every URL stays an http(s) URL.
pub fn http_index(data: &[u8]) {
    let url = url::Url::parse("https://skills.example/.well-known/skills/index.json")
        .expect("a valid URL");
    let Ok(index) = parse_index(data, &url) else {
        return;
    };
    let mut names: Vec<&str> = index.entries.iter().map(|e| e.name.as_str()).collect();
    let len = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), len, "two entries share a name");
}

/// A minisign public key file.
pub fn minisign_public_key(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(id) = key_id_of_public_key(text) {
        assert!(!id.is_empty());
        public_key_base64(text).expect("a key with an id has a base64 form");
    }
}

/// A `.minisig` signature file, verified against a fixed manifest and an empty keyring: it
/// must be refused (nobody is trusted), without panicking.
pub fn minisign_signature(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let manifest =
        skillcat::digest::Manifest::build("fuzz", "1.0.0", [("SKILL.md", &b"x"[..], false)]);
    let keyring = Keyring::default();
    assert!(skillcat::sign::verify(&manifest, text, &keyring, "fuzz").is_err());
}

/// A signed statement, as a file and as a trusted comment: what parses, written again,
/// parses to the same statement.
pub fn statement(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(st) = Statement::parse(text) {
        let again = Statement::parse(&st.to_text()).expect("a written statement reads back");
        assert_eq!(again, st);
    }
    if let Ok(st) = Statement::from_trusted_comment(text) {
        let again = Statement::from_trusted_comment(&st.to_trusted_comment())
            .expect("a written trusted comment reads back");
        assert_eq!(again, st);
    }
}

/// A keyring TOML file.
pub fn keyring(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Keyring::from_toml_str(text);
    }
}

/// `skillcat.toml`, parsed against a fixed environment.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = Environment {
        cwd: "/project".into(),
        home: Some("/home/fuzz".into()),
    };
    if let Err(e) = Config::parse(
        text,
        Some(std::path::Path::new("/project/skillcat.toml")),
        &env,
    ) {
        assert!(!e.to_string().is_empty());
    }
}

/// `skills-lock.json`: what parses, written again, parses to the same lockfile.
pub fn lockfile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(lock) = Lockfile::parse(text, "skills-lock.json") {
        let again = Lockfile::parse(&lock.to_json(), "skills-lock.json")
            .expect("a lockfile written by skillcat reads back");
        assert_eq!(again, lock);
    }
}

/// The MCP resource URI: what it names is a decoded name and path with no empty, `.` or `..`
/// segment and no NUL.
pub fn mcp_uri(data: &[u8]) {
    let Ok(uri) = std::str::from_utf8(data) else {
        return;
    };
    if let Some((name, path)) = skillcat::mcp::uri::parse(uri) {
        assert!(!name.is_empty() && !name.contains(['/', '\0']));
        for segment in path.split('/') {
            assert!(!segment.is_empty() && segment != "." && segment != "..");
            assert!(!segment.contains('\0'));
        }
    }
}

/// Prompt rendering with a catalog and budget taken from the input: the block never exceeds
/// the budget, every skill is included, shortened or omitted exactly once, and every included
/// skill's name and location appear whole.
pub fn prompt(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let Some((&budget_byte, rest)) = rest.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut fields = text.split('\u{1}');
    let mut owned = Vec::new();
    while let (Some(name), Some(description)) = (fields.next(), fields.next()) {
        owned.push((
            name.to_string(),
            description.to_string(),
            format!("/s/{}/SKILL.md", owned.len()),
        ));
    }
    let skills: Vec<PromptSkill<'_>> = owned
        .iter()
        .map(|(name, description, location)| PromptSkill {
            name,
            description,
            location,
        })
        .collect();
    let format = match head % 3 {
        0 => PromptFormat::Xml,
        1 => PromptFormat::Markdown,
        _ => PromptFormat::Json,
    };
    let budget = (head & 0x80 == 0).then_some(usize::from(budget_byte) * 16);
    let opts = PromptOptions {
        format,
        budget,
        omit_when_empty: head & 0x40 != 0,
    };
    let out = render(&skills, &opts);
    if let Some(budget) = budget {
        assert!(
            out.text.chars().count() <= budget,
            "{} characters past a budget of {budget}",
            out.text.chars().count()
        );
    }
    assert_eq!(out.report.total, skills.len());
    assert_eq!(out.report.included + out.report.omitted.len(), skills.len());
    if format == PromptFormat::Json && !out.text.is_empty() {
        let v: serde_json::Value = serde_json::from_str(&out.text).expect("the JSON block is JSON");
        let listed = v["skills"].as_array().expect("a skills array");
        assert_eq!(listed.len(), out.report.included);
        for s in listed {
            let location = s["location"].as_str().expect("a location");
            assert!(owned.iter().any(|(_, _, l)| l == location));
        }
    }
}

/// A minisign secret key file, as `sign` reads it (no password: an encrypted key is refused
/// before any key derivation, so the fuzzer never runs scrypt with parameters of its own
/// choosing). A key that signs makes a signature that reads back as a statement.
pub fn minisign_secret_key(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let manifest =
        skillcat::digest::Manifest::build("fuzz", "1.0.0", [("SKILL.md", &b"x"[..], false)]);
    let statement = Statement::from_manifest(&manifest).expect("a valid statement");
    if let Ok(signature) = sign(&statement, text, None) {
        let trusted = signature
            .lines()
            .find_map(|l| l.strip_prefix("trusted comment: "))
            .expect("a signature has a trusted comment");
        assert_eq!(
            Statement::from_trusted_comment(trusted).expect("it reads back"),
            statement
        );
    }
}

/// The central registry's upload path, as `serve --publish` takes a body: sniffed, read by the
/// checked archive reader under its limits, one skill at the root, prepared and committed into a
/// fresh registry in memory. A committed version is sound (`check`: integrity, every file
/// re-hashed against the skill digest), and committing the same again changes nothing.
pub fn registry_publish(data: &[u8]) {
    let head = &data[..data.len().min(skillcat::archive::SNIFF_LEN)];
    let Some(kind) = skillcat::archive::sniff(std::path::Path::new(""), head) else {
        return;
    };
    let Ok(source) = ArchiveSource::from_bytes(kind, "upload", data, ArchiveLimits::default())
    else {
        return;
    };
    let prepared = block_on(async {
        let roots = source.list().await.ok()?;
        let [root] = &roots[..] else {
            return None;
        };
        skillcat::publish::prepare(&source, root, &PublishOptions::default())
            .await
            .ok()
    });
    let Some(prepared) = prepared else {
        return;
    };
    let mut reg = Registry::in_memory().expect("a registry in memory");
    let first = reg
        .commit(&prepared)
        .expect("a prepared skill commits into an empty registry");
    assert_eq!(first.outcome, Outcome::Published);
    let report = reg.check().expect("check runs");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.versions, 1);
    let again = reg
        .commit(&prepared)
        .expect("the same content again is fine");
    assert_eq!(again.outcome, Outcome::Unchanged);
    assert_eq!(again.digest, first.digest);
}

/// The read side of `skillcat serve` over the fixtures: the first line of the input is the
/// method and the request target, the next ones `Range`, `If-None-Match` and `If-Range`. The
/// answer is one of the statuses the server gives, a body always matches its length headers, a
/// range answer is within the file, and nothing outside the site is ever found.
pub fn serve_request(data: &[u8]) {
    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use skillcat::serve::{Site, SiteOptions, answer};
    use std::sync::OnceLock;

    static SITE: OnceLock<Site> = OnceLock::new();
    let site = SITE.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/skills");
        let source =
            skillcat::source::DirSource::open(&dir, Default::default()).expect("the fixtures open");
        block_on(Site::build(&source, &SiteOptions::default()))
            .expect("the fixtures build a site")
            .0
    });
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or_default();
    let (method, target) = first.split_once(' ').unwrap_or(("GET", first));
    let mut req = Request::builder().method(method).uri(target);
    for (name, value) in [header::RANGE, header::IF_NONE_MATCH, header::IF_RANGE]
        .into_iter()
        .zip(lines)
    {
        req = req.header(name, value);
    }
    let Ok(req) = req.body(Body::empty()) else {
        return;
    };
    let head = req.method() == axum::http::Method::HEAD;
    let res = answer(site, &req);
    let status = res.status();
    assert!(
        [200, 204, 206, 304, 308, 404, 405, 416].contains(&status.as_u16()),
        "unexpected status {status}"
    );
    let length: Option<u64> = res
        .headers()
        .get(header::CONTENT_LENGTH)
        .map(|v| v.to_str().unwrap().parse().unwrap());
    let range = res
        .headers()
        .get(header::CONTENT_RANGE)
        .map(|v| v.to_str().unwrap().to_string());
    if status == StatusCode::PERMANENT_REDIRECT {
        // Only a folder named without its `/` is redirected, to itself with the `/`.
        let to = res
            .headers()
            .get(header::LOCATION)
            .expect("a 308 says where");
        let to = to.to_str().expect("an ASCII location");
        assert!(
            to.starts_with(&format!("{}/", req.uri().path())),
            "{to} is not the folder of {}",
            req.uri()
        );
    }
    let body = block_on(axum::body::to_bytes(res.into_body(), usize::MAX)).unwrap();
    if !head && let Some(length) = length {
        assert_eq!(body.len() as u64, length);
    }
    if status == StatusCode::OK || status == StatusCode::PARTIAL_CONTENT {
        let path = skillcat::serve::decode_path(req.uri().path()).expect("a found path decodes");
        let path = path.strip_prefix('/').unwrap_or(&path);
        // A folder's page is its `index.html`, as a static host serves it.
        let file = if path.is_empty() || path.ends_with('/') {
            site.get(&format!("{path}index.html"))
        } else {
            site.get(path)
        }
        .expect("a found path is a file of the site");
        if status == StatusCode::PARTIAL_CONTENT {
            let range = range.expect("a 206 says its range");
            let (span, total) = range
                .strip_prefix("bytes ")
                .and_then(|r| r.split_once('/'))
                .expect("bytes A-B/N");
            let (a, b) = span.split_once('-').expect("A-B");
            let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
            assert_eq!(total.parse::<usize>().unwrap(), file.body.len());
            assert!(a <= b && b < file.body.len());
            if !head {
                assert_eq!(&body[..], &file.body[a..=b]);
            }
        } else if !head {
            assert_eq!(body, file.body);
        }
    }
}

/// Runs a future to completion on one current-thread runtime per fuzzing thread (the archive
/// source hands work to `spawn_blocking`).
fn block_on<F: Future>(future: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a tokio runtime");
    }
    RUNTIME.with(|rt| rt.block_on(future))
}

/// OCI manifests and indexes as a registry answers them, and `oci://` references (an input
/// starting with a NUL byte): what parses has sha256 descriptors only and writes back to the
/// same document; a recognised layout's layer is one of the manifest's layers; a parsed
/// reference prints back to the text it came from.
pub fn oci_manifest(data: &[u8]) {
    use skillcat::source::oci::Reference;
    use skillcat::source::oci::layout::{Document, parse, pick_from_index, skill_layout};
    if let Some(rest) = data.strip_prefix(b"\0") {
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        if let Ok(r) = Reference::parse(&format!("oci://{text}")) {
            let (host, rest) = text.split_once('/').expect("a parsed reference has a /");
            assert_eq!(
                r.to_string(),
                format!("oci://{}/{rest}", host.to_ascii_lowercase())
            );
        }
        return;
    }
    for content_type in [None, Some("application/vnd.oci.image.index.v1+json")] {
        let Ok(doc) = parse(data, content_type) else {
            continue;
        };
        let digests_ok = |d: &str| {
            d.strip_prefix("sha256:")
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|c| c.is_ascii_hexdigit()))
        };
        match &doc {
            Document::Manifest(m) => {
                assert!(digests_ok(&m.config.digest));
                assert!(m.layers.iter().all(|l| digests_ok(&l.digest)));
                if let Ok(found) = skill_layout(m) {
                    assert!(m.layers.contains(&found.layer));
                }
                let again = parse(&serde_json::to_vec(m.as_ref()).unwrap(), None)
                    .expect("a manifest written back parses");
                assert_eq!(again, doc);
            }
            Document::Index(i) => {
                assert!(i.manifests.iter().all(|d| digests_ok(&d.digest)));
                if let Ok(d) = pick_from_index(i) {
                    assert!(i.manifests.contains(d));
                }
            }
        }
    }
}

/// The tools a skill author declares, as `tools`, `run` and `skillcat mcp` read them from a
/// `SKILL.md`: the `scripts:` list, the guest tools under `metadata:`, and the `#!` line and
/// first comment of a script (the body stands in for one). Every accepted declaration gives a
/// closed schema naming exactly its parameters, and arguments made to that schema are accepted:
/// a script's argv holds its positionals first, in order, then `--flag value` pairs; a guest
/// gets its arguments without `timeout_seconds`. An unknown argument is refused by both.
pub fn tool_declarations(data: &[u8]) {
    use skillcat::script::argv::{
        ParamKind, ParamType, Params, build_argv, check_skill_path, description_from_source,
        parse_shebang, schema, split_args,
    };
    use skillcat::script::parse_declared;

    let Ok(doc) = parse_document(data) else {
        return;
    };
    let body = doc.body.as_str();
    if let Some(shebang) = parse_shebang(body) {
        assert!(!shebang.name.is_empty() && !shebang.name.contains('/'));
    }
    if let Some(description) = description_from_source(body) {
        assert!(!description.is_empty() && !description.contains('\n'));
    }
    let first_line = body.lines().next().unwrap_or_default();
    let implicit = build_argv(
        &Params::Implicit,
        &serde_json::json!({ "args": first_line }),
    );
    assert_eq!(implicit.ok(), split_args(first_line).ok());

    if let Some(Ok(declared)) = doc.frontmatter.get("scripts").map(parse_declared) {
        for d in declared {
            assert_eq!(
                check_skill_path(&d.path).ok().as_deref(),
                Some(d.path.as_str())
            );
            let params = Params::Declared(d.params.clone());
            let schema = schema(&params);
            assert_closed_schema(&schema, d.params.iter().map(|p| p.name.as_str()));
            let mut args = serde_json::Map::new();
            let mut expected = Vec::new();
            let mut flags = Vec::new();
            for p in &d.params {
                let (value, text) = match p.ty {
                    ParamType::String => (serde_json::json!("-v x"), "-v x"),
                    ParamType::Integer => (serde_json::json!(7), "7"),
                    ParamType::Number => (serde_json::json!(1.5), "1.5"),
                    ParamType::Boolean => (serde_json::json!(true), ""),
                };
                args.insert(p.name.clone(), value);
                match (p.kind, p.ty) {
                    (ParamKind::Positional, _) => expected.push(text.to_string()),
                    (ParamKind::Flag, ParamType::Boolean) => flags.push(format!("--{}", p.name)),
                    (ParamKind::Flag, _) => {
                        flags.push(format!("--{}", p.name));
                        flags.push(text.to_string());
                    }
                }
            }
            expected.extend(flags);
            let argv = build_argv(&params, &serde_json::Value::Object(args.clone()))
                .unwrap_or_else(|e| panic!("arguments made to the schema of {}: {e}", d.name));
            assert_eq!(argv, expected);
            args.insert("not-a-parameter ".into(), serde_json::json!("x"));
            assert!(build_argv(&params, &serde_json::Value::Object(args)).is_err());
        }
    }

    for declaration in skillcat::guest::declare::declarations(&doc.frontmatter) {
        let Ok(d) = declaration else {
            continue;
        };
        assert_eq!(
            check_skill_path(&d.source).ok().as_deref(),
            Some(d.source.as_str())
        );
        let schema = d.schema(30, 300);
        let timeout = skillcat::guest::declare::TIMEOUT_PARAM;
        assert_closed_schema(
            &schema,
            d.params.iter().map(|p| p.name.as_str()).chain([timeout]),
        );
        let mut args = serde_json::Map::new();
        for p in &d.params {
            let value = match &p.ty {
                skillcat::guest::GuestType::String => serde_json::json!("x"),
                skillcat::guest::GuestType::Number => serde_json::json!(1.5),
                skillcat::guest::GuestType::Integer => serde_json::json!(7),
                skillcat::guest::GuestType::Boolean => serde_json::json!(false),
                skillcat::guest::GuestType::Enum(values) => serde_json::json!(values[0]),
            };
            args.insert(p.name.clone(), value);
        }
        let given = serde_json::Value::Object(args.clone());
        args.insert(timeout.into(), serde_json::json!(9));
        let (passed, seconds) = d
            .check_args(&serde_json::Value::Object(args.clone()), 30, 300)
            .unwrap_or_else(|e| panic!("arguments made to the schema of {}: {e}", d.name));
        assert_eq!((passed, seconds), (given, 9));
        args.insert(timeout.into(), serde_json::json!(0));
        assert!(
            d.check_args(&serde_json::Value::Object(args.clone()), 30, 300)
                .is_err()
        );
        args.remove(timeout);
        args.insert("not a parameter".into(), serde_json::json!(1));
        assert!(
            d.check_args(&serde_json::Value::Object(args), 30, 300)
                .is_err()
        );
    }
}

/// A tool's input schema is a closed object whose properties are exactly `names`, and whose
/// required names are among them.
fn assert_closed_schema<'a>(schema: &serde_json::Value, names: impl Iterator<Item = &'a str>) {
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    let props = schema["properties"].as_object().expect("properties");
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    names.dedup();
    let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, names);
    for r in schema["required"].as_array().expect("required") {
        assert!(props.contains_key(r.as_str().expect("a required name")));
    }
}

/// The publish path with hostile metadata, as a local `registry publish` and the central
/// registry both run it (`Draft::new`, `Draft::finish`, `Registry::commit`): the input's first
/// byte holds flags (bit 0: the version is given, not read from `metadata.version`; bit 1:
/// `pdf-forms` is published first; bit 2: the same is published twice), the rest is text split
/// at `\u{1}` into a name, a version, a description, then pairs of a file path and the size the
/// file claims (its bytes are that size modulo 1 MiB). Every outcome is a publish or a clean
/// refusal, never a panic, a SQLite failure or a constraint error; a published version lists
/// the bytes it was given (never a claimed size), passes `check`, and no two names the
/// registry holds look alike.
pub fn publish_metadata(data: &[u8]) {
    use skillcat::document::lookalike::skeleton;
    use skillcat::path::FileEntry;
    use skillcat::registry::{Draft, RegistryError};

    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut fields = text.split('\u{1}');
    let name = fields.next().unwrap_or_default();
    let version = fields.next().unwrap_or_default();
    let description = fields.next().unwrap_or_default();
    let json = |s: &str| serde_json::to_string(s).expect("a string is JSON");
    let doc = format!(
        "---\nname: {}\ndescription: {}\nmetadata:\n  version: {}\n---\n# Fuzz\n",
        json(name),
        json(description),
        json(version)
    );
    let mut files = vec![FileEntry {
        path: "SKILL.md".into(),
        size: doc.len() as u64,
        executable: false,
        private: false,
    }];
    let mut contents = vec![bytes::Bytes::from(doc.clone().into_bytes())];
    while let (Some(path), Some(size)) = (fields.next(), fields.next()) {
        if files.len() > 8 {
            break;
        }
        let claimed: u64 = size.trim().parse().unwrap_or(size.len() as u64);
        let actual = (claimed % (1 << 20)) as usize;
        files.push(FileEntry {
            path: path.to_string(),
            size: claimed,
            executable: claimed % 2 == 1,
            private: false,
        });
        contents.push(bytes::Bytes::from(vec![b'x'; actual]));
    }
    let Ok(parsed) = parse_document(doc.as_bytes()) else {
        return;
    };
    let skill = skillcat::document::Skill::new(
        String::new(),
        "fuzz/SKILL.md".into(),
        None,
        parsed,
        files.clone(),
    );
    let opts = PublishOptions {
        version: (flags & 1 != 0).then(|| version.to_string()),
        ..Default::default()
    };
    let clean = |e: &RegistryError, step: &str| {
        assert!(
            e.is_refusal(),
            "{step} failed instead of refusing ({e:?}): {e}"
        );
        // A constraint of the schema is a refusal too (the server answers 422), but reaching
        // one means a check before the write missed the input.
        assert!(
            !matches!(e, RegistryError::Sqlite { .. }),
            "{step} reached SQLite instead of a check before the write ({e:?}): {e}"
        );
        assert!(!e.to_string().is_empty());
    };
    let mut reg = Registry::in_memory().expect("a registry in memory");
    if flags & 2 != 0 {
        let real = skillcat::document::Skill::new(
            String::new(),
            "real/SKILL.md".into(),
            None,
            parse_document(
                b"---\nname: pdf-forms\ndescription: Fills in PDF forms.\n---\n# Real\n",
            )
            .expect("the real skill parses"),
            vec![FileEntry {
                path: "SKILL.md".into(),
                size: 1,
                executable: false,
                private: false,
            }],
        );
        let with_version = PublishOptions {
            version: Some("1.0.0".into()),
            ..Default::default()
        };
        let draft = Draft::new(&real, real.files(), &with_version).expect("the real skill drafts");
        let prepared = draft
            .finish(vec![bytes::Bytes::from_static(b"x")], &with_version)
            .expect("the real skill prepares");
        reg.commit(&prepared).expect("the real skill commits");
    }
    let draft = match Draft::new(&skill, &files, &opts) {
        Ok(d) => d,
        Err(e) => return clean(&e, "Draft::new"),
    };
    let order: Vec<usize> = draft
        .paths()
        .map(|p| {
            files
                .iter()
                .position(|f| f.path == p)
                .expect("a drafted path is a listed path")
        })
        .collect();
    let given: Vec<bytes::Bytes> = order.iter().map(|&i| contents[i].clone()).collect();
    let prepared = match draft.finish(given, &opts) {
        Ok(p) => p,
        Err(e) => return clean(&e, "Draft::finish"),
    };
    for f in &prepared.manifest().files {
        let i = files
            .iter()
            .position(|e| e.path == f.path)
            .expect("a manifest path is a listed path");
        assert_eq!(
            f.size,
            contents[i].len() as u64,
            "the manifest of {:?} trusts a claimed size",
            f.path
        );
    }
    let times = if flags & 4 != 0 { 2 } else { 1 };
    for _ in 0..times {
        match reg.commit(&prepared) {
            Ok(published) => assert_eq!(published.files, prepared.manifest().files.len()),
            Err(e) => return clean(&e, "commit"),
        }
    }
    let report = reg.check().expect("check runs");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let mut stmt = reg
        .connection()
        .prepare("SELECT name FROM skill")
        .expect("the names read");
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(Iterator::collect)
        .expect("the names read");
    let mut skeletons: Vec<String> = names.iter().map(|n| skeleton(n)).collect();
    skeletons.sort();
    skeletons.dedup();
    assert_eq!(skeletons.len(), names.len(), "look-alikes held: {names:?}");
}

/// The audit over an archive of any bytes (a zip by its magic, else a `.tar.gz`), every skill
/// and every root that is not one: no rule panics, and every finding is well formed — its path
/// a file of the skill, its line and column 1-based, its severity the rule's, its message
/// non-empty and line-safe (no raw control, bidirectional or invisible character).
pub fn audit(data: &[u8]) {
    use skillcat::audit::{AuditOptions, audit_all, audit_root, line_safe};
    let Some(source) = sniffed_archive(data) else {
        return;
    };
    let Ok(found) = block_on(skillcat::source::discover_with(
        &source,
        skillcat::source::Detail::Files,
    )) else {
        return;
    };
    let opts = AuditOptions::default();
    let mut all = Vec::new();
    for (skill, result) in
        found
            .skills
            .iter()
            .zip(block_on(audit_all(&source, &found.skills, &opts)))
    {
        let Ok(findings) = result else { continue };
        all.push((skill.root().to_string(), findings));
    }
    for fault in &found.faults {
        if let Ok(findings) = block_on(audit_root(&source, &fault.root, &opts)) {
            all.push((fault.root.clone(), findings));
        }
    }
    for (root, findings) in all {
        let files = block_on(source.files(&root)).unwrap_or_default();
        for f in findings {
            assert!(
                files.iter().any(|e| e.path == f.path) || f.path == "SKILL.md",
                "a finding on a file the skill does not have: {f:?}"
            );
            assert!(f.line.is_none_or(|l| l >= 1) && f.column.is_none_or(|c| c >= 1));
            assert!(f.column.is_none() || f.line.is_some());
            assert_eq!(f.severity, f.rule.rule().severity);
            assert!(!f.message.is_empty());
            assert_eq!(line_safe(&f.message), f.message.as_str(), "{f:?}");
        }
    }
}
