//! `skillcat token create|list|revoke` through the real binary: the token is printed once and
//! only its hash is stored (0600, written whole); bad input changes nothing; revoked tokens are
//! refused by the file's reader.
//!
//! Origin: step 11 (issue 16: a central registry over HTTP).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use sha2::{Digest, Sha256};
use skillcat::registry::tokens::{AuthError, Right, Tokens};

use crate::support::bin::{Out, Skillcat};

fn token(dir: &Path, args: &[&str]) -> Out {
    let mut all = vec!["token"];
    all.extend_from_slice(args);
    Skillcat::new(&all).cwd(dir).run()
}

fn create(dir: &Path, name: &str, extra: &[&str]) -> Out {
    let mut args = vec!["create", "--tokens", "tokens.toml", "--name", name];
    args.extend_from_slice(extra);
    token(dir, &args)
}

#[test]
fn create_prints_the_token_once_and_stores_only_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let out = create(
        dir.path(),
        "ci",
        &[
            "--scope",
            "acme-*",
            "--scope",
            "tools",
            "--can",
            "publish,yank",
        ],
    );
    out.code(0).says(&["Created token ci", "keep it secret"]);
    let printed = out.out().trim_end().to_string();
    assert_eq!(
        out.out(),
        format!("{printed}\n"),
        "stdout is the token alone"
    );
    assert!(
        printed.starts_with("skc_") && printed.len() == 68,
        "{printed}"
    );
    assert!(
        !out.stderr.contains(&printed[4..]),
        "the token is not on stderr"
    );

    let file = dir.path().join("tokens.toml");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains(&printed[4..]),
        "the file holds no token:\n{text}"
    );
    let hash = Sha256::digest(printed.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    assert!(text.contains(&format!("sha256:{hash}")), "{text}");

    let tokens = Tokens::load(&file).unwrap();
    let entry = tokens.authenticate(&printed).unwrap();
    assert_eq!(entry.name(), "ci");
    assert_eq!(entry.rights(), &[Right::Publish, Right::Yank]);
    assert!(entry.allows("acme-pdf") && entry.allows("tools") && !entry.allows("toolsx"));

    // A second token: another secret, the first one kept; rights default to publish only.
    let second = create(dir.path(), "dev", &["--scope", "dev-*"]);
    second.code(0);
    let second = second.out().trim_end().to_string();
    assert_ne!(second, printed);
    let tokens = Tokens::load(&file).unwrap();
    assert_eq!(tokens.authenticate(&printed).unwrap().name(), "ci");
    let dev = tokens.authenticate(&second).unwrap();
    assert_eq!(dev.rights(), &[Right::Publish]);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn list_shows_names_scopes_rights_and_never_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let secret = create(dir.path(), "ci", &["--scope", "acme-*", "--can", "yank"]);
    let secret = secret.code(0).out().trim_end().to_string();
    let text = token(dir.path(), &["list", "--tokens", "tokens.toml"]);
    text.code(0);
    let line = text.out();
    assert!(
        line.starts_with("ci  acme-*  can yank  created 20"),
        "{line}"
    );
    assert!(!line.contains("revoked") && !line.contains(&secret[4..]));

    let json = token(
        dir.path(),
        &["list", "--tokens", "tokens.toml", "--format", "json"],
    );
    let rows = json.code(0).json();
    assert_eq!(rows[0]["name"], "ci");
    assert_eq!(rows[0]["scopes"], serde_json::json!(["acme-*"]));
    assert_eq!(rows[0]["can"], serde_json::json!(["yank"]));
    assert_eq!(rows[0]["revoked"], false);
    assert!(rows[0]["created"].as_str().unwrap().ends_with('Z'));
    assert!(!json.out().contains(&secret[4..]));

    // A file that does not exist is an error for list (a typo must not look like "no tokens").
    token(dir.path(), &["list", "--tokens", "nope.toml"])
        .code(2)
        .says(&["cannot read the token file nope.toml"]);
}

#[test]
fn revoke_marks_the_token_and_its_reader_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = create(dir.path(), "a", &["--scope", "*"]);
    let a = a.code(0).out().trim_end().to_string();
    let b = create(dir.path(), "b", &["--scope", "*"]);
    let b = b.code(0).out().trim_end().to_string();

    token(dir.path(), &["revoke", "a", "--tokens", "tokens.toml"])
        .code(0)
        .says(&["Revoked token a"]);
    let file = dir.path().join("tokens.toml");
    let tokens = Tokens::load(&file).unwrap();
    assert!(matches!(tokens.authenticate(&a), Err(AuthError::Revoked(e)) if e.name() == "a"));
    assert_eq!(tokens.authenticate(&b).unwrap().name(), "b");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let list = token(dir.path(), &["list", "--tokens", "tokens.toml"]);
    assert!(
        list.code(0)
            .out()
            .lines()
            .next()
            .unwrap()
            .ends_with("(revoked)")
    );

    token(dir.path(), &["revoke", "a", "--tokens", "tokens.toml"])
        .code(0)
        .says(&["already revoked"]);
    let before = std::fs::read(&file).unwrap();
    token(dir.path(), &["revoke", "zz", "--tokens", "tokens.toml"])
        .code(1)
        .says(&["no token named \"zz\""]);
    // A revoked name is not handed out again.
    create(dir.path(), "a", &["--scope", "*"])
        .code(2)
        .says(&["already exists", "revoked"]);
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing changed");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.toml");
    for (name, extra, says) in [
        (
            "ci",
            vec!["--scope", "*", "--can", "delete"],
            "unknown right \"delete\"",
        ),
        ("c i", vec!["--scope", "*"], "invalid token name"),
        ("ci", vec!["--scope", "a b"], "invalid scope"),
    ] {
        let out = create(dir.path(), name, &extra);
        out.code(2).says(&[says]);
        assert!(out.out().is_empty());
        assert!(!file.exists(), "{name} {extra:?} wrote a file");
    }
    // No scope at all is a usage error from the argument parser.
    create(dir.path(), "ci", &[]).code(2).says(&["--scope"]);

    create(dir.path(), "ci", &["--scope", "*"]).code(0);
    let before = std::fs::read(&file).unwrap();
    let out = create(dir.path(), "ci", &["--scope", "x"]);
    out.code(2).says(&["a token named \"ci\" already exists"]);
    assert!(
        out.out().is_empty(),
        "no token printed for a refused create"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // A damaged file is named and left as it is.
    std::fs::write(&file, "[[token]]\nname = 1\n").unwrap();
    create(dir.path(), "other", &["--scope", "*"])
        .code(2)
        .says(&["tokens.toml is not a valid token file"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"[[token]]\nname = 1\n");

    // An output folder that does not exist is named before anything is made.
    token(
        dir.path(),
        &[
            "create",
            "--tokens",
            "no/such/t.toml",
            "--name",
            "x",
            "--scope",
            "*",
        ],
    )
    .code(2)
    .says(&["the directory no/such does not exist"]);
}
