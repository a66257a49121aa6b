//! The keyring `trust add` writes and `verify` reads when given none
//! (`~/.config/skillcat/keyring.toml`) is the one `add`, `install` and `update` check signatures
//! against too (issue 50: they ignored it, installed a signed skill as unsigned and pinned
//! `unsigned: true`).

use crate::support::project::{Key, Project, key, skill};

/// `skillcat sign SRC NAME --key K`: the signature kept beside the source.
#[track_caller]
fn sign(src: &std::path::Path, name: &str, k: &Key) {
    crate::support::bin::run(&[
        "sign",
        &src.to_string_lossy(),
        name,
        "--key",
        &k.secret.to_string_lossy(),
        "--force",
    ])
    .code(0);
}

#[test]
fn add_install_and_update_verify_against_the_default_keyring() {
    let p = Project::new();
    let dir = p.path("");
    let good = key(&dir, "good", "alpha");
    let other = key(&dir, "other", "*");
    let src = skill(&p.path("src"), "alpha", "1.0.0", "one");
    let s = src.to_string_lossy().to_string();
    sign(&src, "alpha", &good);
    let public = good.secret.with_extension("pub");
    p.run(&[
        "trust",
        "add",
        &public.to_string_lossy(),
        "--scope",
        "alpha",
    ])
    .code(0);
    // `verify` finds the key in the default keyring…
    p.run(&["verify", &s, "alpha"]).code(0);
    // …and so does `add`: the signer is pinned, nothing is said about a missing keyring.
    let out = p.run(&["add", &s, "--require-signature"]);
    out.code(0);
    assert!(!out.stderr.contains("not checked"), "{}", out.stderr);
    assert_eq!(p.lock()["skills"]["alpha"]["signer"], good.id.as_str());
    assert!(p.lock()["skills"]["alpha"].get("unsigned").is_none());
    // `install` puts the pinned copy back, verified against the same keyring.
    std::fs::remove_dir_all(p.root.join(".agents/skills")).unwrap();
    let out = p.run(&["install", "--require-signature"]);
    out.code(0);
    assert!(!out.stderr.contains("not checked"), "{}", out.stderr);
    // `update` takes a new version signed by the same key.
    skill(&p.path("src"), "alpha", "1.1.0", "two");
    sign(&src, "alpha", &good);
    let out = p.run(&["update", "--require-signature"]);
    out.code(0);
    assert!(!out.stderr.contains("not checked"), "{}", out.stderr);
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "1.1.0");
    assert_eq!(p.lock()["skills"]["alpha"]["signer"], good.id.as_str());
    // A version signed by a key the default keyring does not hold is refused, as `verify`
    // refuses it.
    skill(&p.path("src"), "alpha", "1.2.0", "three");
    sign(&src, "alpha", &other);
    p.run(&["verify", &s, "alpha"]).code(1);
    p.run(&["update", "--allow-signer-change"])
        .code(1)
        .says(&[&other.id, "not in the keyring"]);
    assert_eq!(p.lock()["skills"]["alpha"]["version"], "1.1.0");
    let q = Project::new();
    q.run(&[
        "trust",
        "add",
        &public.to_string_lossy(),
        "--scope",
        "alpha",
    ])
    .code(0);
    q.run(&["add", &s])
        .code(1)
        .says(&[&other.id, "not in the keyring"]);
    assert!(!q.installed("alpha").exists());
}

/// Every command that reads a keyring says the same thing when it cannot use it: a public key
/// given as a keyring is named as such, with how to make a keyring of it; a configuration that
/// cannot be read is the same error everywhere.
#[test]
fn every_command_says_the_same_of_a_keyring_or_configuration_it_cannot_use() {
    let p = Project::new();
    let dir = p.path("");
    let k = key(&dir, "k", "*");
    let src = skill(&p.path("src"), "alpha", "1.0.0", "a")
        .to_string_lossy()
        .to_string();
    let public = k.secret.with_extension("pub").to_string_lossy().to_string();
    let said = |args: &[&str]| {
        let out = p.run(args);
        out.code(2);
        out.stderr.clone()
    };
    let verify = said(&["verify", &src, "--keyring", &public]);
    assert!(verify.contains("skillcat trust add"), "{verify}");
    for args in [
        &["add", &src, "--keyring", &public][..],
        &["install", "--keyring", &public],
        &["update", "--keyring", &public],
        &["trust", "list", "--keyring", &public],
    ] {
        assert_eq!(said(args), verify, "skillcat {args:?}");
    }
    std::fs::write(p.root.join("broken.toml"), "colour = 1\n").unwrap();
    let verify = said(&["verify", &src, "--config", "broken.toml"]);
    assert!(verify.contains("colour"), "{verify}");
    for args in [
        &["add", &src, "--config", "broken.toml"][..],
        &["install", "--config", "broken.toml"],
        &["validate", &src, "--config", "broken.toml"],
        &["list", "--config", "broken.toml"],
        &["trust", "list", "--config", "broken.toml"],
    ] {
        assert_eq!(said(args), verify, "skillcat {args:?}");
    }
}
