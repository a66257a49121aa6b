//! Interoperability of `skillcat::sign` with the `minisign` command-line tool: keys and
//! signatures made by either side verify on the other, and tampering fails on both.
//!
//! Needs `minisign` on PATH (CI installs it); without it each test says so and passes.
//!
//! Origin: step 2 (issue 3: archives, the skill digest, packs and signatures).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use skillcat::digest::Manifest;
use skillcat::sign::{self, KeyEntry, Keyring, SignError, Statement};

const SKILL_MD: &[u8] = b"---\nname: acme-pdf\ndescription: Fill PDF forms.\n---\n# PDF\n";
const RUN_SH: &[u8] = b"#!/bin/sh\necho filled\n";

fn manifest_of(skill_md: &[u8]) -> Manifest {
    Manifest::build(
        "acme-pdf",
        "1.4.0",
        [
            ("SKILL.md", skill_md, false),
            ("scripts/run.sh", RUN_SH, true),
        ],
    )
}

/// Whether `minisign` can be run; says so on stderr when it cannot.
fn minisign_available() -> bool {
    match Command::new("minisign").arg("-v").output() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "SKIPPED: the `minisign` tool is not on PATH (apt-get install minisign); \
                 minisign interoperability was NOT tested"
            );
            false
        }
        Err(e) => panic!("cannot run minisign: {e}"),
    }
}

/// Runs `minisign` in `dir` with `args`, feeding `stdin` (for passwords).
/// `minisign -V` of `statement.txt` in `dir` against `X.pub` and the signature file `sig`.
fn minisign_verify(dir: &Path, sig: &str) -> Output {
    minisign(
        dir,
        &["-V", "-p", "X.pub", "-m", "statement.txt", "-x", sig],
        "",
    )
}

fn minisign(dir: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new("minisign")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn minisign");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn ok(output: Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn keyring_of(public: &str) -> Keyring {
    let mut keyring = Keyring::new();
    keyring
        .add(KeyEntry::new(public, ["acme-*"]).unwrap())
        .unwrap();
    keyring
}

/// Writes the statement of `manifest` to `statement.txt` in `dir`.
fn write_statement(dir: &Path, manifest: &Manifest) -> Statement {
    let statement = Statement::from_manifest(manifest).unwrap();
    std::fs::write(dir.join("statement.txt"), statement.to_text()).unwrap();
    statement
}

#[test]
fn a_cli_key_and_signature_verify_in_skillcat() {
    if !minisign_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(
        minisign(dir, &["-G", "-W", "-p", "X.pub", "-s", "X.key"], ""),
        "minisign -G",
    );
    let public = read(dir.join("X.pub"));
    // skillcat reads the same key id minisign printed in the .pub comment (minisign drops
    // leading zeros; skillcat keeps all 16 digits).
    let key_id = sign::key_id_of_public_key(&public).unwrap();
    let printed = public
        .lines()
        .next()
        .unwrap()
        .strip_prefix("untrusted comment: minisign public key ")
        .unwrap();
    assert_eq!(key_id.len(), 16);
    assert_eq!(
        u64::from_str_radix(printed, 16).unwrap(),
        u64::from_str_radix(&key_id, 16).unwrap()
    );

    let manifest = manifest_of(SKILL_MD);
    let statement = write_statement(dir, &manifest);
    let comment = statement.to_trusted_comment();
    ok(
        minisign(
            dir,
            &["-S", "-s", "X.key", "-m", "statement.txt", "-t", &comment],
            "",
        ),
        "minisign -S",
    );
    let minisig = read(dir.join("statement.txt.minisig"));
    let keyring = keyring_of(&public);
    let verified = sign::verify(&manifest, &minisig, &keyring, "acme-pdf").unwrap();
    assert_eq!(verified.key_id, key_id);
    assert_eq!(verified.statement, statement);
    // The bare base64 line works as well as the .pub file.
    let bare = keyring_of(public.lines().nth(1).unwrap());
    sign::verify(&manifest, &minisig, &bare, "acme-pdf").unwrap();

    // minisign's default trusted comment (timestamp, file name) is not a statement.
    ok(
        minisign(
            dir,
            &[
                "-S",
                "-s",
                "X.key",
                "-m",
                "statement.txt",
                "-x",
                "default.minisig",
            ],
            "",
        ),
        "minisign -S (default comment)",
    );
    let err = sign::verify(
        &manifest,
        &read(dir.join("default.minisig")),
        &keyring,
        "acme-pdf",
    )
    .unwrap_err();
    assert!(
        matches!(err, SignError::TrustedCommentMalformed { .. }),
        "{err}"
    );

    // A legacy (`-l`, non-prehashed) signature is refused.
    ok(
        minisign(
            dir,
            &[
                "-S",
                "-l",
                "-s",
                "X.key",
                "-m",
                "statement.txt",
                "-x",
                "legacy.minisig",
                "-t",
                &comment,
            ],
            "",
        ),
        "minisign -S -l",
    );
    let err = sign::verify(
        &manifest,
        &read(dir.join("legacy.minisig")),
        &keyring,
        "acme-pdf",
    )
    .unwrap_err();
    assert!(matches!(err, SignError::LegacySignature { .. }), "{err}");

    // skillcat signs with the CLI's (unencrypted) secret key; the CLI verifies that.
    let ours = sign::sign(&statement, &read(dir.join("X.key")), None).unwrap();
    std::fs::write(dir.join("ours.minisig"), &ours).unwrap();
    let out = ok(
        minisign(
            dir,
            &[
                "-V",
                "-H",
                "-p",
                "X.pub",
                "-m",
                "statement.txt",
                "-x",
                "ours.minisig",
            ],
            "",
        ),
        "minisign -V of a skillcat signature made with a CLI key",
    );
    assert!(out.contains(&comment), "{out}");
}

#[test]
fn b_a_skillcat_key_and_signature_verify_with_the_cli() {
    if !minisign_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (public, secret) = sign::generate_keypair(None).unwrap();
    std::fs::write(dir.join("X.pub"), &public).unwrap();
    std::fs::write(dir.join("X.key"), &secret).unwrap();

    let manifest = manifest_of(SKILL_MD);
    let statement = write_statement(dir, &manifest);
    let minisig = sign::sign(&statement, &secret, None).unwrap();
    std::fs::write(dir.join("statement.txt.minisig"), &minisig).unwrap();

    let out = ok(
        minisign(dir, &["-V", "-p", "X.pub", "-m", "statement.txt"], ""),
        "minisign -V",
    );
    assert!(
        out.contains(&format!(
            "Trusted comment: {}",
            statement.to_trusted_comment()
        )),
        "{out}"
    );
    // -H requires a prehashed signature; -P takes the bare base64 key.
    let bare = public.lines().nth(1).unwrap();
    ok(
        minisign(dir, &["-V", "-H", "-P", bare, "-m", "statement.txt"], ""),
        "minisign -V -H -P",
    );
    sign::verify(&manifest, &minisig, &keyring_of(&public), "acme-pdf").unwrap();

    // The CLI signs with skillcat's unencrypted secret key; skillcat verifies that.
    let comment = statement.to_trusted_comment();
    ok(
        minisign(
            dir,
            &[
                "-S",
                "-s",
                "X.key",
                "-m",
                "statement.txt",
                "-x",
                "cli.minisig",
                "-t",
                &comment,
            ],
            "",
        ),
        "minisign -S with a skillcat key",
    );
    sign::verify(
        &manifest,
        &read(dir.join("cli.minisig")),
        &keyring_of(&public),
        "acme-pdf",
    )
    .unwrap();
}

#[test]
fn b_a_skillcat_password_protected_key_works_in_the_cli() {
    if !minisign_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (public, secret) = sign::generate_keypair(Some("correct horse")).unwrap();
    std::fs::write(dir.join("X.pub"), &public).unwrap();
    std::fs::write(dir.join("X.key"), &secret).unwrap();
    let manifest = manifest_of(SKILL_MD);
    let statement = write_statement(dir, &manifest);
    let comment = statement.to_trusted_comment();

    // The CLI decrypts the key with the password (read from stdin when it is not a terminal).
    let wrong = minisign(
        dir,
        &["-S", "-s", "X.key", "-m", "statement.txt", "-t", &comment],
        "battery staple\n",
    );
    assert!(
        !wrong.status.success(),
        "the CLI signed with a wrong password"
    );
    ok(
        minisign(
            dir,
            &["-S", "-s", "X.key", "-m", "statement.txt", "-t", &comment],
            "correct horse\n",
        ),
        "minisign -S with a skillcat password-protected key",
    );
    let minisig = read(dir.join("statement.txt.minisig"));
    sign::verify(&manifest, &minisig, &keyring_of(&public), "acme-pdf").unwrap();
}

#[test]
fn c_tampering_fails_on_both_sides() {
    if !minisign_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(
        minisign(dir, &["-G", "-W", "-p", "X.pub", "-s", "X.key"], ""),
        "minisign -G",
    );
    let public = read(dir.join("X.pub"));
    let keyring = keyring_of(&public);
    let manifest = manifest_of(SKILL_MD);
    let statement = write_statement(dir, &manifest);
    let comment = statement.to_trusted_comment();

    // One signature from each side over the same statement.
    ok(
        minisign(
            dir,
            &[
                "-S",
                "-s",
                "X.key",
                "-m",
                "statement.txt",
                "-x",
                "cli.minisig",
                "-t",
                &comment,
            ],
            "",
        ),
        "minisign -S",
    );
    let cli_sig = read(dir.join("cli.minisig"));
    let our_sig = sign::sign(&statement, &read(dir.join("X.key")), None).unwrap();
    std::fs::write(dir.join("ours.minisig"), &our_sig).unwrap();
    for name in ["cli.minisig", "ours.minisig"] {
        ok(minisign_verify(dir, name), name);
    }

    // A changed byte in a file: skillcat recomputes another statement and refuses; the CLI
    // refuses the statement of the changed content.
    let mut changed = SKILL_MD.to_vec();
    changed[10] ^= 1;
    let tampered = manifest_of(&changed);
    write_statement(dir, &tampered);
    for (name, sig) in [("cli.minisig", &cli_sig), ("ours.minisig", &our_sig)] {
        let err = sign::verify(&tampered, sig, &keyring, "acme-pdf").unwrap_err();
        assert!(
            matches!(err, SignError::SignatureMismatch { .. }),
            "{name}: {err}"
        );
        let out = minisign_verify(dir, name);
        assert!(
            !out.status.success(),
            "minisign accepted {name} over a tampered statement"
        );
    }

    // A changed byte in the statement text itself.
    let mut text = statement.to_text().into_bytes();
    text[30] ^= 1;
    std::fs::write(dir.join("statement.txt"), &text).unwrap();
    for name in ["cli.minisig", "ours.minisig"] {
        let out = minisign_verify(dir, name);
        assert!(
            !out.status.success(),
            "minisign accepted {name} over a changed statement"
        );
    }

    // A changed trusted comment: both refuse.
    write_statement(dir, &manifest);
    for (name, sig) in [("cli.minisig", &cli_sig), ("ours.minisig", &our_sig)] {
        let forged = sig.replace("version=1.4.0", "version=1.4.1");
        assert_ne!(&forged, sig);
        let err = sign::verify(&manifest, &forged, &keyring, "acme-pdf").unwrap_err();
        assert!(
            matches!(err, SignError::TrustedCommentForged { .. }),
            "{name}: {err}"
        );
        let forged_name = format!("forged-{name}");
        std::fs::write(dir.join(&forged_name), &forged).unwrap();
        let out = minisign_verify(dir, &forged_name);
        assert!(
            !out.status.success(),
            "minisign accepted a forged trusted comment in {name}"
        );
    }

    // A changed signature byte: both refuse.
    for (name, sig) in [("cli.minisig", &cli_sig), ("ours.minisig", &our_sig)] {
        let line = sig.lines().nth(1).unwrap();
        let at = line.len() / 2;
        let flipped = if &line[at..=at] == "A" { "B" } else { "A" };
        let forged = sig.replacen(
            line,
            &format!("{}{flipped}{}", &line[..at], &line[at + 1..]),
            1,
        );
        let err = sign::verify(&manifest, &forged, &keyring, "acme-pdf").unwrap_err();
        assert!(
            matches!(err, SignError::SignatureMismatch { .. }),
            "{name}: {err}"
        );
        let forged_name = format!("flipped-{name}");
        std::fs::write(dir.join(&forged_name), &forged).unwrap();
        let out = minisign_verify(dir, &forged_name);
        assert!(
            !out.status.success(),
            "minisign accepted a changed signature in {name}"
        );
    }

    // Both still verify the untouched pair.
    for (name, sig) in [("cli.minisig", &cli_sig), ("ours.minisig", &our_sig)] {
        sign::verify(&manifest, sig, &keyring, "acme-pdf").unwrap();
        ok(minisign_verify(dir, name), name);
    }
}

/// The minisign tool encrypts keys with its "sensitive" scrypt parameters (N = 2^20, 1 GiB):
/// about five minutes unoptimised, seconds with `--release`.
#[test]
#[ignore = "scrypt with 1 GiB: run with `cargo test --release --test minisign_interop -- --ignored`"]
fn a_cli_password_protected_key_signs_in_skillcat() {
    if !minisign_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(
        minisign(
            dir,
            &["-G", "-p", "X.pub", "-s", "X.key"],
            "correct horse\ncorrect horse\n",
        ),
        "minisign -G (password-protected)",
    );
    let secret = read(dir.join("X.key"));
    let manifest = manifest_of(SKILL_MD);
    let statement = write_statement(dir, &manifest);
    assert!(matches!(
        sign::sign(&statement, &secret, None),
        Err(SignError::PasswordRequired)
    ));
    let minisig = sign::sign(&statement, &secret, Some("correct horse")).unwrap();
    sign::verify(
        &manifest,
        &minisig,
        &keyring_of(&read(dir.join("X.pub"))),
        "acme-pdf",
    )
    .unwrap();
    std::fs::write(dir.join("statement.txt.minisig"), &minisig).unwrap();
    ok(
        minisign(dir, &["-V", "-p", "X.pub", "-m", "statement.txt"], ""),
        "minisign -V",
    );
}
