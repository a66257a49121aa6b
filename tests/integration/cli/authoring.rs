//! The second hour of an author (issue 35, items 13–17): `skillcat init` makes a skill every
//! other command takes; `login` keeps a token that `publish` and `yank` use; `publish --dry-run`
//! checks everything and sends nothing; versions are named where an author gets them wrong
//! (`sign` without one, a signature for another version, a top-level `version:`, an old
//! signature beside a re-packed archive); `publish` says which digest it prints.

#![cfg(target_os = "linux")]

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::support::bin::{Out, Skillcat};
use crate::support::central::{doc, registry_dir, token};
use crate::support::publish::Server;
use crate::support::{sandbox_tempdir, write_skill};

/// Longer than a confined run's own timeout.
const DEADLINE: Duration = Duration::from_secs(60);

/// `skillcat ARGS` in `dir`, with `home` as `$HOME` and no token in the environment.
#[track_caller]
fn sc(dir: &Path, home: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env("HOME", home)
        .env_remove("SKILLCAT_TOKEN")
        .env_remove("SKILLCAT_CONFIG")
        .deadline(DEADLINE)
        .run()
}

/// A loopback port that accepts connections but never answers: a client that connects leaves
/// a connection waiting in its backlog, which [`assert_untouched`] finds.
fn silent_port() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    (l, url)
}

/// Nothing connected to the port (the client exited before this is asked).
#[track_caller]
fn assert_untouched(l: &TcpListener) {
    match l.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok((_, peer)) => panic!("something connected from {peer}: a request was sent"),
        Err(e) => panic!("accept: {e}"),
    }
}

/// The key id `keygen` printed (`Key <ID>: …`).
fn key_id(keygen: &Out) -> String {
    keygen
        .out()
        .strip_prefix("Key ")
        .and_then(|s| s.split(':').next())
        .unwrap_or_else(|| panic!("keygen said {:?}", keygen.out()))
        .to_string()
}

#[test]
fn init_makes_a_skill_that_validates_offers_its_tool_runs_and_packs() {
    let tmp = sandbox_tempdir("skillcat-init-");
    let t = tmp.path();
    let o = sc(t, t, &["init", "log-triage"]);
    o.code(0);
    assert!(
        o.out()
            .starts_with("Created skill log-triage in log-triage:"),
        "{}",
        o.out()
    );
    let doc = std::fs::read_to_string(t.join("log-triage/SKILL.md")).unwrap();
    assert!(
        doc.starts_with("---\nname: log-triage\ndescription: \"Replace this"),
        "{doc}"
    );
    assert!(
        doc.contains("metadata:\n  version: \"0.1.0\"\n---\n"),
        "{doc}"
    );
    assert!(t.join("log-triage/references/REFERENCE.md").is_file());
    let script = t.join("log-triage/scripts/hello.sh");
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o111,
        0o111
    );

    // Every command an author runs next takes it as written.
    let valid = sc(t, t, &["validate", "log-triage"]);
    assert_eq!(valid.code(0).out(), "Valid skill: log-triage\n");
    let tools = sc(t, t, &["tools", "log-triage", "log-triage"]);
    let text = tools.code(0).out();
    assert!(text.contains("run_log_triage_hello"), "{text}");
    assert!(text.contains("Say hello to someone"), "{text}");
    let ran = sc(
        t,
        t,
        &["run", "log-triage", "log-triage", "hello", "--args", "you"],
    );
    assert_eq!(
        ran.code(0).out().trim_end(),
        "Hello, you!",
        "{}",
        ran.stderr
    );
    sc(t, t, &["pack", "log-triage", "-o", "log-triage.tar.gz"]).code(0);
    assert!(t.join("log-triage.tar.gz").is_file());

    // A folder that holds something is refused, and left as it was; an empty one is filled.
    sc(t, t, &["init", "log-triage"])
        .code(2)
        .says(&["log-triage exists and is not empty"]);
    assert_eq!(
        std::fs::read_to_string(t.join("log-triage/SKILL.md")).unwrap(),
        doc
    );
    std::fs::create_dir_all(t.join("parent/empty-one")).unwrap();
    sc(t, t, &["init", "empty-one", "--dir", "parent"]).code(0);
    assert!(t.join("parent/empty-one/SKILL.md").is_file());
    sc(t, t, &["validate", "parent/empty-one"]).code(0);
}

#[test]
fn init_refuses_a_bad_name_in_the_words_of_validate_and_explains_each_part() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // What validate says of a skill named Bad_Name in a folder of that name...
    write_skill(
        &t.join("Bad_Name"),
        "---\nname: Bad_Name\ndescription: d\n---\nBody\n",
        &[],
    );
    let v = sc(t, t, &["validate", "Bad_Name"]);
    v.code(1);
    let said: Vec<&str> = v
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("  - "))
        .collect();
    assert!(said.len() >= 2, "{}", v.stderr);
    // ...is what init says of that name, and it makes nothing.
    let o = sc(t, t, &["init", "Bad_Name", "--dir", "elsewhere"]);
    o.code(2);
    let o = sc(t, t, &["init", "Bad_Name"]);
    o.code(2).says(&said);
    assert!(!t.join("Bad_Name/scripts").exists());
    sc(t, t, &["init", "a--b"])
        .code(2)
        .says(&["Skill name cannot contain consecutive hyphens"]);
    assert!(!t.join("a--b").exists());

    let help = sc(t, t, &["init", "--help"]);
    let text = help.code(0).out();
    for part in [
        "SKILL.md",
        "description",
        "metadata.version",
        "scripts/hello.sh",
        "references/REFERENCE.md",
        "Example: skillcat init",
    ] {
        assert!(text.contains(part), "init --help lacks {part:?}:\n{text}");
    }
}

#[test]
fn login_keeps_a_private_token_that_publish_and_yank_use_and_logout_forgets() {
    let dir = registry_dir();
    let d = dir.path();
    let secret = token(d, "ci", "*", "publish,yank");
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let s = Server::start(d, &[]);
    // Logged in under the URL without its trailing slash; published to with it.
    let bare = s.url.trim_end_matches('/').to_string();
    let login = Skillcat::new(&["login", &bare])
        .cwd(d)
        .env("HOME", h)
        .stdin(format!("{secret}\n"))
        .run();
    login.code(0);
    let file = h.join(".config/skillcat/credentials.toml");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", file.display());
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.contains(&format!("[registries.\"{bare}\"]")), "{kept}");
    assert!(kept.contains(&secret));

    write_skill(&d.join("tool-a"), &doc("tool-a", "1.0.0", ""), &[]);
    let published = sc(d, h, &["publish", &s.url, "tool-a"]);
    let line = published.code(0).out().trim_end().to_string();
    // The digest printed is the skill digest, and says so.
    let digest = sc(d, h, &["digest", "tool-a"]);
    let skill_digest = digest
        .code(0)
        .out()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        line,
        format!("tool-a@1.0.0  {skill_digest} (skill digest)  published")
    );
    assert_eq!(
        sc(d, h, &["yank", &s.url, "tool-a@1.0.0"]).code(0).out(),
        "Yanked tool-a@1.0.0\n"
    );
    // A token given explicitly wins over the kept one.
    std::fs::write(d.join("wrong.token"), "skc_not_a_token\n").unwrap();
    sc(
        d,
        h,
        &[
            "yank",
            &s.url,
            "tool-a@1.0.0",
            "--undo",
            "--token-file",
            "wrong.token",
        ],
    )
    .code(1)
    .says(&["401"]);

    let out = sc(d, h, &["logout", &s.url]);
    assert!(
        out.code(0)
            .out()
            .starts_with(&format!("Removed the token kept for {bare}"))
    );
    assert!(!std::fs::read_to_string(&file).unwrap().contains(&secret));
    let again = sc(d, h, &["logout", &s.url]);
    assert_eq!(
        again.code(0).out(),
        format!("No token was kept for {bare} (nothing to remove)\n")
    );
    sc(d, h, &["publish", &s.url, "tool-a"])
        .code(2)
        .says(&["no token", "skillcat login"]);

    // Nothing piped in: refused, nothing kept.
    Skillcat::new(&["login", &bare])
        .cwd(d)
        .env("HOME", h)
        .stdin("")
        .run()
        .code(2)
        .says(&["no token on stdin"]);
    let log = s.stop();
    for o in [&login, &published, &out, &again] {
        assert!(!o.out().contains(&secret) && !o.stderr.contains(&secret));
    }
    assert!(!log.contains(&secret));
}

#[test]
fn publish_dry_run_checks_everything_prints_what_would_go_and_sends_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (port, url) = silent_port();
    write_skill(&t.join("tool-a"), &doc("tool-a", "1.0.0", ""), &[]);
    let id = key_id(sc(t, t, &["keygen", "-o", "k", "--unencrypted"]).code(0));
    sc(t, t, &["sign", "tool-a", "tool-a", "--key", "k.key"]).code(0);
    // No token needed to look; the archive is the one `pack` makes of the same folder.
    let o = sc(t, t, &["publish", &url, "tool-a", "--dry-run"]);
    let text = o.code(0).out().to_string();
    assert!(
        text.starts_with(&format!(
            "Would publish tool-a@1.0.0 from tool-a to {url}\n"
        )),
        "{text}"
    );
    sc(t, t, &["pack", "tool-a", "-o", "tool-a.tar.gz"]).code(0);
    let bytes = std::fs::read(t.join("tool-a.tar.gz")).unwrap();
    let archive = format!("sha256:{}", sha256_hex(&bytes));
    assert!(
        text.contains(&format!("  archive       {archive}  {} bytes", bytes.len())),
        "{text}"
    );
    let digest = sc(t, t, &["digest", "tool-a"]);
    let skill_digest = digest
        .code(0)
        .out()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        text.contains(&format!("  skill digest  {skill_digest}\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("  signed by     key {id} (tool-a.minisig")),
        "{text}"
    );
    assert!(text.ends_with("Nothing sent (--dry-run).\n"), "{text}");
    o.says(&["warning: no token"]);
    assert_untouched(&port);

    // A signature for another version: refused before anything is sent, dry run or not.
    write_skill(&t.join("tool-a"), &doc("tool-a", "1.1.0", ""), &[]);
    std::fs::write(t.join("ci.token"), "skc_anything\n").unwrap();
    for extra in [&["--dry-run"][..], &["--token-file", "ci.token"][..]] {
        let mut args = vec!["publish", url.as_str(), "tool-a"];
        args.extend_from_slice(extra);
        sc(t, t, &args).code(1).says(&[
            "tool-a@1.1.0: the signature tool-a.minisig was made for version 1.0.0, not 1.1.0",
            "Sign it again: skillcat sign tool-a tool-a --key KEY",
            "nothing was sent",
        ]);
    }
    assert_untouched(&port);
    // Signed again as it says: the dry run passes.
    sc(t, t, &["sign", "tool-a", "tool-a", "--key", "k.key"]).code(0);
    let o = sc(t, t, &["publish", &url, "tool-a", "--dry-run"]);
    assert!(o.code(0).out().starts_with("Would publish tool-a@1.1.0"));
    assert_untouched(&port);
}

/// `sha256` of `bytes`, in hex.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    skillcat::digest::to_hex(sha2::Sha256::digest(bytes))
}

#[test]
fn sign_of_a_skill_without_a_version_warns_and_takes_one() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_skill(
        &t.join("bare"),
        "---\nname: bare\ndescription: Has no version.\n---\nBody\n",
        &[],
    );
    sc(t, t, &["keygen", "-o", "k", "--unencrypted"]).code(0);
    sc(t, t, &["sign", "bare", "bare", "--key", "k.key"])
        .code(0)
        .says(&["warning: bare has no version", "--version V"]);
    let o = sc(
        t,
        t,
        &[
            "sign",
            "bare",
            "bare",
            "--key",
            "k.key",
            "--version",
            "2.0.0",
            "--statement",
            "st.txt",
        ],
    );
    assert!(!o.code(0).stderr.contains("warning"), "{}", o.stderr);
    assert!(o.out().starts_with("Signed bare@2.0.0 "), "{}", o.out());
    let st = std::fs::read_to_string(t.join("st.txt")).unwrap();
    assert!(st.contains("\nversion: 2.0.0\n"), "{st}");
    // The signature is the one a registry publish of that version checks.
    sc(
        t,
        t,
        &[
            "trust",
            "add",
            "k.pub",
            "--scope",
            "*",
            "--keyring",
            "ring.toml",
        ],
    )
    .code(0);
    sc(t, t, &["registry", "init", "r.db"]).code(0);
    sc(
        t,
        t,
        &[
            "registry",
            "publish",
            "r.db",
            "bare",
            "--version",
            "2.0.0",
            "--keyring",
            "ring.toml",
        ],
    )
    .code(0);
}

#[test]
fn a_top_level_version_is_the_reference_fault_with_a_hint_at_metadata_version() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_skill(
        &t.join("tool-a"),
        "---\nname: tool-a\ndescription: d\nversion: 2.0.0\n---\nBody\n",
        &[],
    );
    let o = sc(t, t, &["validate", "tool-a"]);
    o.code(1);
    assert_eq!(
        o.stderr,
        "Validation failed for tool-a:\n  - Unexpected fields in frontmatter: version. Only \
         ['allowed-tools', 'compatibility', 'description', 'license', 'metadata', 'name'] are \
         allowed.\n    hint: a skill's version goes under `metadata`, where publish, sign and \
         registries read it:\n          metadata:\n            version: \"2.0.0\"\n"
    );
    // The JSON keeps the reference's message and adds the hint beside it.
    let j = sc(t, t, &["validate", "tool-a", "--format", "json"]).json();
    let fault = &j[0]["faults"][0];
    assert_eq!(fault["kind"], "unexpected-fields");
    assert!(
        fault["hint"]
            .as_str()
            .unwrap()
            .contains("metadata:\n  version: \"2.0.0\"")
    );
}

#[test]
fn pack_over_an_archive_keeps_a_signature_that_still_signs_it_and_removes_a_stale_one() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_skill(&t.join("tool-a"), &doc("tool-a", "1.0.0", ""), &[]);
    sc(t, t, &["keygen", "-o", "k", "--unencrypted"]).code(0);
    sc(
        t,
        t,
        &[
            "trust",
            "add",
            "k.pub",
            "--scope",
            "*",
            "--keyring",
            "ring.toml",
        ],
    )
    .code(0);
    let pack = |signed: bool| {
        let mut args = vec!["pack", "tool-a", "-o", "tool-a.tar.gz"];
        if signed {
            args.extend(["--sign", "k.key"]);
        }
        sc(t, t, &args)
    };
    pack(true).code(0);
    let sig = t.join("tool-a.tar.gz.minisig");
    assert!(sig.is_file());
    // The same files again: the same archive, which the signature still signs.
    pack(false)
        .code(0)
        .says(&["Kept tool-a.tar.gz.minisig: it still signs what was packed"]);
    sc(t, t, &["verify", "tool-a.tar.gz", "--keyring", "ring.toml"]).code(0);
    // A new version: the old signature would sign nothing the archive holds, and goes.
    write_skill(&t.join("tool-a"), &doc("tool-a", "1.1.0", ""), &[]);
    pack(false).code(0).says(&[
        "Removed tool-a.tar.gz.minisig: it signed what tool-a.tar.gz held before",
        "--sign KEY",
    ]);
    assert!(!sig.exists());
    sc(t, t, &["verify", "tool-a.tar.gz", "--keyring", "ring.toml"])
        .code(1)
        .says(&["no signature"]);
}
