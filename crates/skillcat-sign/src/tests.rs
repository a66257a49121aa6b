//! Unit tests of signing and verification.

use super::verify::verify_statement;
use super::*;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const SKILL_MD: &[u8] = b"---\nname: acme-pdf\ndescription: PDF tools.\n---\n# PDF\n";
const RUN_SH: &[u8] = b"#!/bin/sh\necho ok\n";

fn manifest_with(files: &[(&str, &[u8], bool)]) -> Manifest {
    Manifest::build("acme-pdf", "1.4.0", files.iter().copied())
}

fn manifest() -> Manifest {
    manifest_with(&[
        ("SKILL.md", SKILL_MD, false),
        ("scripts/run.sh", RUN_SH, true),
    ])
}

struct Fixture {
    public: String,
    secret: String,
    keyring: Keyring,
    manifest: Manifest,
    minisig: String,
}

fn fixture() -> Fixture {
    let (public, secret) = generate_keypair(None).unwrap();
    let mut keyring = Keyring::new();
    keyring
        .add(KeyEntry::new(&public, ["acme-*"]).unwrap())
        .unwrap();
    let manifest = manifest();
    let statement = Statement::from_manifest(&manifest).unwrap();
    let minisig = sign(&statement, &secret, None).unwrap();
    Fixture {
        public,
        secret,
        keyring,
        manifest,
        minisig,
    }
}

/// Alternatives for one byte that keep the text looking plausible.
fn replacements(byte: u8) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(v) = ALPHABET.iter().position(|&c| c == byte) {
        out.push(ALPHABET[v ^ 1]); // differs in the lowest bit (padding bits)
        out.push(ALPHABET[v ^ 0b100000]);
    } else {
        match byte {
            b'=' => out.extend([b'A', b'\n']),
            b'\n' => out.extend([b' ', b'A', b'\r']),
            b' ' => out.extend([b'_', b'\t']),
            b':' => out.push(b';'),
            _ => {}
        }
        if byte.is_ascii_graphic() {
            out.push(if byte == b'x' { b'y' } else { b'x' });
        }
    }
    out.retain(|&r| r != byte);
    assert!(!out.is_empty(), "no replacement for {byte:#x}");
    out
}

#[test]
fn statement_text_and_round_trips() {
    let m = manifest();
    let s = Statement::from_manifest(&m).unwrap();
    assert_eq!(s.name, "acme-pdf");
    assert_eq!(s.version, "1.4.0");
    assert_eq!(s.digest, m.digest);
    assert_eq!(s.manifest, digest::sha256_digest(&m.to_canonical_json()));
    let text = s.to_text();
    assert_eq!(
        text,
        format!(
            "skillcat-statement v1\nname: acme-pdf\nversion: 1.4.0\ndigest: {}\nmanifest: {}\n",
            m.digest, s.manifest
        )
    );
    assert_eq!(Statement::parse(&text).unwrap(), s);
    let comment = s.to_trusted_comment();
    assert_eq!(
        comment,
        format!(
            "skillcat-statement v1 name=acme-pdf version=1.4.0 digest={} manifest={}",
            m.digest, s.manifest
        )
    );
    assert_eq!(Statement::from_trusted_comment(&comment).unwrap(), s);

    // Empty version and a version with spaces round-trip in both forms.
    for version in ["", "1.0 beta", "2 digest=x"] {
        let s = Statement {
            version: version.into(),
            ..s.clone()
        };
        assert_eq!(Statement::parse(&s.to_text()).unwrap(), s);
        assert_eq!(
            Statement::from_trusted_comment(&s.to_trusted_comment()).unwrap(),
            s
        );
    }
}

#[test]
fn statement_parse_is_strict() {
    let s = Statement::from_manifest(&manifest()).unwrap();
    let text = s.to_text();
    let line_of = |t: &str| match Statement::parse(t) {
        Err(SignError::InvalidStatement { line, .. }) => line,
        other => panic!("expected InvalidStatement for {t:?}, got {other:?}"),
    };
    assert_eq!(line_of(text.trim_end()), 5); // no trailing newline
    assert_eq!(line_of(&format!("{text}extra\n")), 6);
    assert_eq!(line_of(&format!("{text}\n")), 6);
    assert_eq!(line_of(&text.replace("v1", "v2")), 1);
    assert_eq!(line_of(&text.replace("\n", "\r\n")), 1);
    assert_eq!(line_of(&text.replace("name: ", "name:")), 2);
    assert_eq!(line_of(&text.replace("acme-pdf", "")), 2);
    assert_eq!(line_of(&text.replace("acme-pdf", "acme pdf")), 2);
    assert_eq!(line_of(&text.replace("1.4.0", " 1.4.0")), 3);
    assert_eq!(
        line_of(&text.replace("digest: sha256:", "digest: sha512:")),
        4
    );
    assert_eq!(
        line_of(&text.replace(&s.manifest, &s.manifest.to_uppercase())),
        5
    );
    // Lines out of order.
    let swapped = text.replace(
        "name: acme-pdf\nversion: 1.4.0",
        "version: 1.4.0\nname: acme-pdf",
    );
    assert_eq!(line_of(&swapped), 2);
    assert_eq!(line_of(&text[..text.find("manifest").unwrap()]), 5);
    // Fields that cannot be written are refused before signing.
    let bad = Statement {
        name: "a\nb".into(),
        ..s.clone()
    };
    assert!(matches!(
        bad.check(),
        Err(SignError::InvalidStatementField { field: "name", .. })
    ));
    let bad = Statement {
        name: "a".repeat(1025),
        ..s.clone()
    };
    assert!(matches!(
        bad.check(),
        Err(SignError::InvalidStatementField { field: "name", .. })
    ));
    let bad = Statement {
        version: "1\n".into(),
        ..s
    };
    assert!(matches!(
        bad.check(),
        Err(SignError::InvalidStatementField {
            field: "version",
            ..
        })
    ));
}

#[test]
fn trusted_comment_parse_is_strict() {
    let s = Statement::from_manifest(&manifest()).unwrap();
    let c = s.to_trusted_comment();
    for bad in [
        String::new(),
        "timestamp:1796020032\tfile:statement.txt\thashed".to_string(),
        c.replace("v1", "v2"),
        c.replace(" version=", " ver="),
        c.replace("name=acme-pdf ", "name= "),
        c.replace(" manifest=", " manifest= "),
        format!("{c} "),
        c[..c.len() - 1].to_string(),
        c.replace(&s.digest, &s.digest.to_uppercase()),
    ] {
        assert!(
            matches!(
                Statement::from_trusted_comment(&bad),
                Err(SignError::TrustedCommentMalformed { .. })
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn base64_is_canonical() {
    for len in 0..10 {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 5) as u8).collect();
        let text = encode_base64(&bytes);
        if len == 0 {
            assert_eq!(decode_base64(&text), None);
        } else {
            assert_eq!(decode_base64(&text).unwrap(), bytes);
        }
    }
    assert_eq!(decode_base64("QQ=="), Some(b"A".to_vec()));
    assert_eq!(decode_base64("QR=="), None, "stray padding bits");
    assert_eq!(decode_base64("QUI="), Some(b"AB".to_vec()));
    assert_eq!(decode_base64("QUJ="), None, "stray padding bits");
    assert_eq!(decode_base64("QQ="), None);
    assert_eq!(decode_base64("QQ"), None);
    assert_eq!(decode_base64("Q==="), None);
    assert_eq!(decode_base64("QQ=A"), None);
    assert_eq!(decode_base64("QU I"), None);
    assert_eq!(decode_base64("QUJD"), Some(b"ABC".to_vec()));
}

#[test]
fn round_trip_sign_verify() {
    let f = fixture();
    let v = verify(&f.manifest, &f.minisig, &f.keyring, "acme-pdf").unwrap();
    assert_eq!(v.key_id, key_id_of_public_key(&f.public).unwrap());
    assert_eq!(v.statement, Statement::from_manifest(&f.manifest).unwrap());
    // The file is a standard minisig: 4 lines, prehashed, statement as trusted comment.
    let lines: Vec<&str> = f.minisig.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0], format!("untrusted comment: {UNTRUSTED_COMMENT}"));
    assert_eq!(&decode_base64(lines[1]).unwrap()[..2], b"ED", "prehashed");
    assert_eq!(
        lines[2],
        format!("trusted comment: {}", v.statement.to_trusted_comment())
    );
    assert!(f.minisig.ends_with('\n'));
    // CRLF line endings are read the same.
    let crlf = f.minisig.replace('\n', "\r\n");
    assert_eq!(
        verify(&f.manifest, &crlf, &f.keyring, "acme-pdf").unwrap(),
        v
    );
    // A missing final newline too.
    let trimmed = f.minisig.trim_end();
    assert_eq!(
        verify(&f.manifest, trimmed, &f.keyring, "acme-pdf").unwrap(),
        v
    );
    // The bare base64 line and the .pub file name the same key.
    let line = f.public.lines().nth(1).unwrap();
    assert_eq!(key_id_of_public_key(line).unwrap(), v.key_id);
    assert_eq!(public_key_base64(&f.public).unwrap(), line);
    assert_eq!(
        f.public.lines().next().unwrap(),
        format!("untrusted comment: minisign public key {}", v.key_id)
    );
    // A detached signature lives beside the archive.
    assert_eq!(
        signature_path(Path::new("dist/acme-pdf.tar.gz")),
        PathBuf::from("dist/acme-pdf.tar.gz.minisig")
    );
    let _ = f.secret;
}

#[test]
fn wrong_name_fails() {
    let f = fixture();
    let err = verify(&f.manifest, &f.minisig, &f.keyring, "acme-other").unwrap_err();
    assert!(matches!(err, SignError::NameMismatch { .. }), "{err}");
    assert!(err.to_string().contains("acme-other") && err.to_string().contains("acme-pdf"));
    // Content of another name, signed with the same key, does not pass as this skill.
    let other = Manifest::build("acme-other", "1.4.0", [("SKILL.md", SKILL_MD, false)]);
    let err = verify(&other, &f.minisig, &f.keyring, "acme-other").unwrap_err();
    assert!(matches!(err, SignError::SignatureMismatch { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("name: expected \"acme-other\", signed \"acme-pdf\""),
        "{err}"
    );
}

#[test]
fn out_of_scope_unknown_and_revoked_keys_fail() {
    let f = fixture();
    let id = key_id_of_public_key(&f.public).unwrap();

    let mut narrow = Keyring::new();
    narrow
        .add(KeyEntry::new(&f.public, ["pdf-tools", "acme-pdf?"]).unwrap())
        .unwrap();
    let err = verify(&f.manifest, &f.minisig, &narrow, "acme-pdf").unwrap_err();
    assert!(matches!(err, SignError::OutOfScope { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("key {id} may not sign skill `acme-pdf`: its scopes are pdf-tools, acme-pdf?")
    );

    let err = verify(&f.manifest, &f.minisig, &Keyring::new(), "acme-pdf").unwrap_err();
    assert!(
        matches!(&err, SignError::UnknownKey { key_id } if *key_id == id),
        "{err}"
    );

    let (other_public, _) = generate_keypair(None).unwrap();
    let mut others = Keyring::new();
    others
        .add(KeyEntry::new(&other_public, ["*"]).unwrap())
        .unwrap();
    let err = verify(&f.manifest, &f.minisig, &others, "acme-pdf").unwrap_err();
    assert!(matches!(err, SignError::UnknownKey { .. }), "{err}");

    let mut revoked = Keyring::new();
    revoked
        .add(KeyEntry::new(&f.public, ["*"]).unwrap().with_revoked(true))
        .unwrap();
    let err = verify(&f.manifest, &f.minisig, &revoked, "acme-pdf").unwrap_err();
    assert!(matches!(err, SignError::RevokedKey { .. }), "{err}");
    assert!(err.to_string().contains(&id));
}

#[test]
fn a_key_with_the_same_id_but_other_bytes_fails() {
    let f = fixture();
    // Same key id, different Ed25519 key: the signature must not verify.
    let (other, _) = generate_keypair(None).unwrap();
    let mut mine = decode_base64(&public_key_base64(&f.public).unwrap()).unwrap();
    let theirs = decode_base64(&public_key_base64(&other).unwrap()).unwrap();
    mine[10..].copy_from_slice(&theirs[10..]);
    let mut keyring = Keyring::new();
    keyring
        .add(KeyEntry::new(&encode_base64(&mine), ["*"]).unwrap())
        .unwrap();
    let err = verify(&f.manifest, &f.minisig, &keyring, "acme-pdf").unwrap_err();
    assert!(matches!(err, SignError::SignatureMismatch { .. }), "{err}");
}

#[test]
fn tampered_trusted_comment_fails() {
    let f = fixture();
    let statement = Statement::from_manifest(&f.manifest).unwrap();
    let comment = statement.to_trusted_comment();

    // Edited in the file without the key: the global signature catches it.
    let forged = f.minisig.replace("version=1.4.0", "version=1.4.1");
    assert_ne!(forged, f.minisig);
    let err = verify(&f.manifest, &forged, &f.keyring, "acme-pdf").unwrap_err();
    assert!(
        matches!(err, SignError::TrustedCommentForged { .. }),
        "{err}"
    );

    // Signed by the key, but over another comment: authentic, yet not this statement.
    let secret = load_secret_key(&f.secret, None).unwrap();
    let other = Statement {
        version: "9.9.9".into(),
        ..statement.clone()
    };
    let sign_with_comment = |trusted: &str| {
        minisign::sign(
            None,
            &secret,
            Cursor::new(statement.to_text().into_bytes()),
            Some(trusted),
            None,
        )
        .unwrap()
        .into_string()
    };
    let minisig = sign_with_comment(&other.to_trusted_comment());
    let err = verify(&f.manifest, &minisig, &f.keyring, "acme-pdf").unwrap_err();
    match &err {
        SignError::TrustedCommentMismatch {
            expected,
            actual,
            differences,
        } => {
            assert_eq!(*expected, comment);
            assert_eq!(*actual, other.to_trusted_comment());
            assert_eq!(differences, "version: expected \"1.4.0\", signed \"9.9.9\"");
        }
        _ => panic!("{err}"),
    }
    assert!(err.to_string().contains(&comment) && err.to_string().contains("9.9.9"));

    // Authentic but not a statement at all (minisign's default comment).
    let minisig = sign_with_comment("timestamp:1796020032\tfile:statement.txt\thashed");
    let err = verify(&f.manifest, &minisig, &f.keyring, "acme-pdf").unwrap_err();
    assert!(
        matches!(err, SignError::TrustedCommentMalformed { .. }),
        "{err}"
    );
}

#[test]
fn legacy_signatures_are_refused() {
    let f = fixture();
    let lines: Vec<&str> = f.minisig.lines().collect();
    let mut sig = decode_base64(lines[1]).unwrap();
    sig[..2].copy_from_slice(b"Ed");
    let legacy = format!(
        "{}\n{}\n{}\n{}\n",
        lines[0],
        encode_base64(&sig),
        lines[2],
        lines[3]
    );
    let err = verify(&f.manifest, &legacy, &f.keyring, "acme-pdf").unwrap_err();
    assert!(matches!(err, SignError::LegacySignature { .. }), "{err}");
    sig[..2].copy_from_slice(b"XX");
    let unknown = format!(
        "{}\n{}\n{}\n{}\n",
        lines[0],
        encode_base64(&sig),
        lines[2],
        lines[3]
    );
    let err = verify(&f.manifest, &unknown, &f.keyring, "acme-pdf").unwrap_err();
    assert!(matches!(err, SignError::MalformedSignature { .. }), "{err}");
}

#[test]
fn malformed_signature_files_fail() {
    let f = fixture();
    let lines: Vec<&str> = f.minisig.lines().collect();
    for bad in [
        String::new(),
        "\n".to_string(),
        lines[..3].join("\n"),
        format!("{}extra\n", f.minisig),
        format!("{}\n", f.minisig),
        format!("\n{}", f.minisig),
        f.minisig.replace("untrusted comment: ", "comment: "),
        f.minisig
            .replace("trusted comment: skillcat", "trusted comment:  skillcat"),
        f.minisig.replace(lines[1], &format!("{} ", lines[1])),
        f.minisig.replace(lines[3], &format!("{}AAAA", lines[3])),
        f.minisig.replace(lines[0], "untrusted comment: a\u{7}b"),
    ] {
        let err = verify(&f.manifest, &bad, &f.keyring, "acme-pdf").unwrap_err();
        assert!(
            matches!(err, SignError::MalformedSignature { .. }),
            "{bad:?}: {err}"
        );
    }
}

#[test]
fn every_byte_of_the_statement_is_covered() {
    let f = fixture();
    let statement = Statement::from_manifest(&f.manifest).unwrap();
    let text = statement.to_text().into_bytes();
    let parsed = parse_minisig(&f.minisig).unwrap();
    let public = parse_public_key(&f.public).unwrap().key;
    let data_only: SignatureBox = SignatureBones::from(parsed.signature).into();
    let mut cases = 0;
    for i in 0..text.len() {
        for r in replacements(text[i]) {
            let mut changed = text.clone();
            changed[i] = r;
            cases += 1;
            // The raw minisign signature over the statement bytes fails …
            assert!(
                minisign::verify(
                    &public,
                    &data_only,
                    Cursor::new(&changed),
                    true,
                    false,
                    false
                )
                .is_err(),
                "byte {i} -> {r:#x}"
            );
            // … and a statement that still parses does not verify.
            let changed = String::from_utf8(changed).unwrap();
            if let Ok(s) = Statement::parse(&changed) {
                assert_ne!(s, statement);
                let result = verify_statement(&s, &f.minisig, &f.keyring, &s.name);
                assert!(result.is_err(), "byte {i} -> {r:#x} verified");
            }
        }
    }
    assert!(cases > text.len());
}

#[test]
fn every_byte_of_the_signature_file_is_covered() {
    let f = fixture();
    let good = verify(&f.manifest, &f.minisig, &f.keyring, "acme-pdf").unwrap();
    let bytes = f.minisig.as_bytes();
    // The untrusted comment's text is, by minisign's design, signed by nothing.
    let free = UNTRUSTED_PREFIX.len()..bytes.iter().position(|&b| b == b'\n').unwrap();
    let (mut failed, mut ignored) = (0, 0);
    for i in 0..bytes.len() {
        for r in replacements(bytes[i]) {
            let mut changed = bytes.to_vec();
            changed[i] = r;
            let changed = String::from_utf8(changed).unwrap();
            let result = verify(&f.manifest, &changed, &f.keyring, "acme-pdf");
            if free.contains(&i) && r != b'\n' && r != b'\r' {
                assert_eq!(result.unwrap(), good, "untrusted comment byte {i}");
                ignored += 1;
            } else {
                assert!(
                    result.is_err(),
                    "byte {i} ({:?}) -> {:?} verified",
                    bytes[i] as char,
                    r as char
                );
                failed += 1;
            }
        }
    }
    assert!(failed > 2 * (bytes.len() - free.len()) - 10, "{failed}");
    assert!(ignored > 0);
}

#[test]
fn every_byte_of_every_file_is_covered() {
    let f = fixture();
    let files: [(&str, &[u8], bool); 2] = [
        ("SKILL.md", SKILL_MD, false),
        ("scripts/run.sh", RUN_SH, true),
    ];
    let mut cases = 0;
    for (which, (_, content, _)) in files.iter().enumerate() {
        for i in 0..content.len() {
            for flip in [0x01u8, 0x20] {
                let mut changed = content.to_vec();
                changed[i] ^= flip;
                let mut tampered = files;
                tampered[which].1 = &changed;
                let m = manifest_with(&tampered);
                let err = verify(&m, &f.minisig, &f.keyring, "acme-pdf").unwrap_err();
                assert!(matches!(err, SignError::SignatureMismatch { .. }), "{err}");
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 2 * (SKILL_MD.len() + RUN_SH.len()));
    // The executable bit, a path, a missing or an extra file.
    for tampered in [
        manifest_with(&[
            ("SKILL.md", SKILL_MD, false),
            ("scripts/run.sh", RUN_SH, false),
        ]),
        manifest_with(&[
            ("SKILL.md", SKILL_MD, false),
            ("scripts/run.py", RUN_SH, true),
        ]),
        manifest_with(&[("SKILL.md", SKILL_MD, false)]),
        manifest_with(&[
            ("SKILL.md", SKILL_MD, false),
            ("scripts/run.sh", RUN_SH, true),
            ("x", b"", false),
        ]),
    ] {
        let err = verify(&tampered, &f.minisig, &f.keyring, "acme-pdf").unwrap_err();
        assert!(matches!(err, SignError::SignatureMismatch { .. }), "{err}");
    }
    // The message names what differs.
    let tampered = manifest_with(&[("SKILL.md", b"x", false), ("scripts/run.sh", RUN_SH, true)]);
    let err = verify(&tampered, &f.minisig, &f.keyring, "acme-pdf").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&tampered.digest) && msg.contains(&f.manifest.digest),
        "{msg}"
    );
}

#[test]
fn an_inconsistent_manifest_is_refused() {
    let f = fixture();
    let mut m = f.manifest.clone();
    m.digest = digest::sha256_digest(b"claimed");
    let err = verify(&m, &f.minisig, &f.keyring, "acme-pdf").unwrap_err();
    assert!(
        matches!(err, SignError::InconsistentManifest { .. }),
        "{err}"
    );
    let mut m = f.manifest.clone();
    m.files.swap(0, 1);
    let err = verify(&m, &f.minisig, &f.keyring, "acme-pdf").unwrap_err();
    assert!(
        matches!(err, SignError::InconsistentManifest { .. }),
        "{err}"
    );
    let mut m = f.manifest.clone();
    m.files[0].digest = "sha256:xyz".into();
    let err = verify(&m, &f.minisig, &f.keyring, "acme-pdf").unwrap_err();
    assert!(
        matches!(err, SignError::InconsistentManifest { .. }),
        "{err}"
    );
    let mut m = f.manifest.clone();
    m.schema = "other".into();
    let err = verify(&m, &f.minisig, &f.keyring, "acme-pdf").unwrap_err();
    assert!(
        matches!(err, SignError::InconsistentManifest { .. }),
        "{err}"
    );
}

#[test]
fn password_protected_key_needs_the_right_password() {
    let (public, secret) = generate_keypair(Some("correct horse")).unwrap();
    assert!(secret.starts_with("untrusted comment: "));
    let statement = Statement::from_manifest(&manifest()).unwrap();
    assert!(matches!(
        sign(&statement, &secret, None),
        Err(SignError::PasswordRequired)
    ));
    assert!(matches!(
        sign(&statement, &secret, Some("battery staple")),
        Err(SignError::WrongPassword)
    ));
    let minisig = sign(&statement, &secret, Some("correct horse")).unwrap();
    let mut keyring = Keyring::new();
    keyring
        .add(KeyEntry::new(&public, ["acme-pdf"]).unwrap())
        .unwrap();
    verify(&manifest(), &minisig, &keyring, "acme-pdf").unwrap();

    let (_, plain) = generate_keypair(None).unwrap();
    assert!(matches!(
        sign(&statement, &plain, Some("x")),
        Err(SignError::SecretKeyNotEncrypted)
    ));
    let long = "p".repeat(1025);
    assert!(matches!(
        generate_keypair(Some(&long)),
        Err(SignError::PasswordTooLong { .. })
    ));
}

#[test]
fn bad_keys_are_refused() {
    let (public, secret) = generate_keypair(None).unwrap();
    let line = public.lines().nth(1).unwrap();
    for bad in [
        "",
        "RWQ",
        &line[1..],
        &format!("{line}A"),
        &format!("a\n{line}"),
        &format!("{public}extra\n"),
        secret.lines().nth(1).unwrap(),
    ] {
        assert!(
            matches!(
                key_id_of_public_key(bad),
                Err(SignError::InvalidPublicKey { .. })
            ),
            "{bad:?}"
        );
    }
    let mut bytes = decode_base64(line).unwrap();
    bytes[0] = b'X';
    assert!(key_id_of_public_key(&encode_base64(&bytes)).is_err());
    // Surrounding whitespace and CRLF are tolerated.
    let id = key_id_of_public_key(&public).unwrap();
    assert_eq!(key_id_of_public_key(&format!("  {line}\n\n")).unwrap(), id);
    assert_eq!(
        key_id_of_public_key(&public.replace('\n', "\r\n")).unwrap(),
        id
    );
    assert_eq!(id.len(), 16);
    assert!(
        id.chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    );

    let statement = Statement::from_manifest(&manifest()).unwrap();
    for bad in [
        "",
        &public,
        line,
        &secret.replace("untrusted comment", "comment"),
    ] {
        assert!(
            matches!(
                sign(&statement, bad, None),
                Err(SignError::InvalidSecretKey { .. })
            ),
            "{bad:?}"
        );
    }
    // A corrupted unencrypted key fails its checksum.
    let sk_line = secret.lines().nth(1).unwrap();
    let mut sk = decode_base64(sk_line).unwrap();
    sk[80] ^= 1;
    let corrupted = secret.replace(sk_line, &encode_base64(&sk));
    assert!(matches!(
        sign(&statement, &corrupted, None),
        Err(SignError::InvalidSecretKey { .. })
    ));
}

#[test]
fn unencrypted_keys_with_a_zero_checksum_are_read_as_minisign_does() {
    // `minisign -G -W` leaves the checksum zero; such a key signs, and a damaged one fails.
    let (public, secret) = generate_keypair(None).unwrap();
    let sk_line = secret.lines().nth(1).unwrap();
    let mut sk = decode_base64(sk_line).unwrap();
    sk[SECRET_KEY_BYTES - 32..].fill(0);
    let zero_chk = secret.replace(sk_line, &encode_base64(&sk));
    let statement = Statement::from_manifest(&manifest()).unwrap();
    let minisig = sign(&statement, &zero_chk, None).unwrap();
    let mut keyring = Keyring::new();
    keyring
        .add(KeyEntry::new(&public, ["acme-pdf"]).unwrap())
        .unwrap();
    verify(&manifest(), &minisig, &keyring, "acme-pdf").unwrap();
    // The secret scalar's seed (offset 62) and the embedded public key (offset 94).
    for at in [62, 80, 94, 120] {
        let mut damaged = sk.clone();
        damaged[at] ^= 1;
        let damaged = secret.replace(sk_line, &encode_base64(&damaged));
        assert!(
            matches!(
                sign(&statement, &damaged, None),
                Err(SignError::InvalidSecretKey { .. })
            ),
            "byte {at}"
        );
    }
}

#[test]
fn glob_matching_table() {
    for (pattern, name, expected) in [
        ("acme-*", "acme-pdf", true),
        ("acme-*", "acme-", true),
        ("acme-*", "acme", false),
        ("acme-*", "xacme-pdf", false),
        ("*", "anything", true),
        ("*", "", true),
        ("pdf-tools", "pdf-tools", true),
        ("pdf-tools", "pdf-tools2", false),
        ("pdf-tools", "pdf-tool", false),
        ("pdf-?", "pdf-a", true),
        ("pdf-?", "pdf-", false),
        ("pdf-?", "pdf-ab", false),
        ("*-pdf", "acme-pdf", true),
        ("*-pdf", "acme-pdf-x", false),
        ("a*b*c", "abc", true),
        ("a*b*c", "axxbyyc", true),
        ("a*b*c", "axxbyy", false),
        ("a*b*c", "acb", false),
        ("a*a*a", "aaaa", true),
        ("**", "x", true),
        ("*?", "", false),
        ("*?", "x", true),
        ("?*?", "x", false),
        ("acme-*-v?", "acme-pdf-v2", true),
        ("acme-*-v?", "acme-pdf-v10", false),
        ("ACME-*", "acme-pdf", false),
        ("données-*", "données-x", true),
        ("d?nnées", "données", true),
    ] {
        assert_eq!(
            glob_match(pattern, name),
            expected,
            "{pattern:?} vs {name:?}"
        );
    }
}

fn keyring_toml(public_line: &str, extra: &str) -> String {
    format!("[[key]]\npublic_key = \"{public_line}\"\nscopes = [\"acme-*\"]\n{extra}")
}

#[test]
fn keyring_toml_format() {
    let (public, _) = generate_keypair(None).unwrap();
    let (public2, _) = generate_keypair(None).unwrap();
    let line = public_key_base64(&public).unwrap();
    let line2 = public_key_base64(&public2).unwrap();
    let id = key_id_of_public_key(&public).unwrap();
    let id2 = key_id_of_public_key(&public2).unwrap();

    let text = format!(
        "[[key]]\nid = \"{id}\"\npublic_key = \"{line}\"\nscopes = [\"acme-*\", \"pdf-tools\"]\n\
             revoked = false\ncomment = \"ACME release key\"\n\n\
             [[key]]\nid = \"{}\"\npublic_key = \"\"\"{public2}\"\"\"\nscopes = [\"*\"]\nrevoked = true\n",
        id2.to_lowercase()
    );
    let keyring = Keyring::from_toml_str(&text).unwrap();
    assert_eq!(keyring.keys().len(), 2);
    let k = keyring.get(&id).unwrap();
    assert_eq!(k.public_key(), line);
    assert_eq!(k.scopes(), ["acme-*", "pdf-tools"]);
    assert_eq!(k.comment(), Some("ACME release key"));
    assert!(!k.is_revoked());
    assert!(keyring.check(&id, "acme-pdf").is_ok());
    assert!(keyring.check(&id.to_lowercase(), "pdf-tools").is_ok());
    assert!(matches!(
        keyring.check(&id, "pdf"),
        Err(SignError::OutOfScope { .. })
    ));
    let k2 = keyring.get(&id2).unwrap();
    assert_eq!(k2.public_key(), line2);
    assert!(matches!(
        keyring.check(&id2, "x"),
        Err(SignError::RevokedKey { .. })
    ));
    assert!(matches!(
        keyring.check("0000000000000000", "x"),
        Err(SignError::UnknownKey { .. })
    ));

    assert!(Keyring::from_toml_str("").unwrap().keys().is_empty());

    let err_of = |text: &str| match Keyring::from_toml_str(text) {
        Err(e @ SignError::InvalidKeyring { .. }) => e.to_string(),
        other => panic!("expected InvalidKeyring for {text:?}, got {other:?}"),
    };
    let e = err_of(&keyring_toml(&line, "revoke = true\n"));
    assert!(e.contains("revoke"), "{e}");
    let e = err_of(&keyring_toml(&line, "revoked = \"no\"\n"));
    assert!(e.contains("revoked") || e.contains("boolean"), "{e}");
    let e = err_of(&format!("{}\n[other]\n", keyring_toml(&line, "")));
    assert!(e.contains("other"), "{e}");
    let e = err_of(&format!("[[key]]\npublic_key = \"{line}\"\n"));
    assert!(e.contains("scopes"), "{e}");
    let e = err_of(&format!("[[key]]\npublic_key = \"{line}\"\nscopes = []\n"));
    assert!(e.contains("#1") && e.contains("no scopes"), "{e}");
    let e = err_of(&format!(
        "[[key]]\npublic_key = \"{line}\"\nscopes = [\"\"]\n"
    ));
    assert!(e.contains("invalid scope"), "{e}");
    let e = err_of(&format!(
        "[[key]]\npublic_key = \"{line}\"\nscopes = \"acme-*\"\n"
    ));
    assert!(e.contains("scopes"), "{e}");
    let e = err_of(&keyring_toml(&line, "id = \"0123456789ABCDEF\"\n"));
    assert!(e.contains("0123456789ABCDEF") && e.contains(&id), "{e}");
    let e = err_of(&keyring_toml("RWQnotakey", ""));
    assert!(e.contains("#1") && e.contains("public key"), "{e}");
    let twice = format!("{}\n{}", keyring_toml(&line, ""), keyring_toml(&line, ""));
    let e = err_of(&twice);
    assert!(
        e.contains("#2") && e.contains(&id) && e.contains("twice"),
        "{e}"
    );
}

#[test]
fn keyring_load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keyring.toml");
    let err = Keyring::load(&path).unwrap_err();
    assert!(matches!(err, SignError::Io { .. }), "{err}");
    std::fs::write(&path, "[[key]]\nbogus = 1\n").unwrap();
    let err = Keyring::load(&path).unwrap_err();
    assert!(err.to_string().contains("keyring.toml"), "{err}");
    let (public, _) = generate_keypair(None).unwrap();
    std::fs::write(
        &path,
        keyring_toml(&public_key_base64(&public).unwrap(), ""),
    )
    .unwrap();
    assert_eq!(Keyring::load(&path).unwrap().keys().len(), 1);
}

#[test]
fn keyring_written_reads_back_and_revoke_and_widen_change_only_what_they_say() {
    let (a, _) = generate_keypair(None).unwrap();
    let (b, _) = generate_keypair(None).unwrap();
    let mut ring = Keyring::new();
    ring.add(
        KeyEntry::new(&a, ["acme-*"])
            .unwrap()
            .with_comment("say \"hi\""),
    )
    .unwrap();
    ring.add(KeyEntry::new(&b, ["*"]).unwrap()).unwrap();
    let id_a = key_id_of_public_key(&a).unwrap();
    let id_b = key_id_of_public_key(&b).unwrap();

    assert_eq!(
        ring.widen(&id_a, &["pdf-?".into(), "acme-*".into()])
            .unwrap(),
        ["pdf-?"]
    );
    assert!(matches!(
        ring.widen(&id_a, &["has space".into()]),
        Err(SignError::InvalidScope { .. })
    ));
    assert!(ring.revoke(&id_b.to_ascii_lowercase()).unwrap());
    assert!(!ring.revoke(&id_b).unwrap(), "already revoked");
    assert!(matches!(
        ring.revoke("0000000000000000"),
        Err(SignError::UnknownKey { .. })
    ));

    let back = Keyring::from_toml_str(&ring.to_toml()).unwrap();
    let ka = back.get(&id_a).unwrap();
    assert_eq!(ka.scopes(), ["acme-*", "pdf-?"]);
    assert_eq!(ka.comment(), Some("say \"hi\""));
    assert!(!ka.is_revoked());
    assert_eq!(ka.public_key(), public_key_base64(&a).unwrap());
    assert!(back.get(&id_b).unwrap().is_revoked());
    assert!(back.check(&id_a, "pdf-x").is_ok());
    assert!(matches!(
        back.check(&id_b, "x"),
        Err(SignError::RevokedKey { .. })
    ));
}

#[test]
fn a_public_key_is_not_a_keyring() {
    let (public, _) = generate_keypair(None).unwrap();
    let id = key_id_of_public_key(&public).unwrap();
    for text in [public.clone(), public_key_base64(&public).unwrap()] {
        match Keyring::from_toml_str(&text) {
            Err(SignError::PublicKeyNotKeyring { key_id, .. }) => assert_eq!(key_id, id),
            other => panic!("{other:?}"),
        }
    }
    let e = Keyring::from_toml_str("hello: world")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a keyring"), "{e}");
}

#[test]
fn key_files_are_written_private_and_not_over_an_existing_pair() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("release");
    let files = KeyFiles::new(base.to_str().unwrap());
    assert_eq!(files.public, tmp.path().join("release.pub"));
    files.check_free(false).unwrap();
    // A secret key file others could read is made private before the key goes in.
    std::fs::write(&files.secret, "old").unwrap();
    std::fs::set_permissions(&files.secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(
        files.check_free(false),
        Err(KeygenError::Exists(p)) if p == files.secret
    ));
    files.check_free(true).unwrap();
    let id = files.generate(None).unwrap();
    let mode = std::fs::metadata(&files.secret)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let public = std::fs::read_to_string(&files.public).unwrap();
    assert_eq!(key_id_of_public_key(&public).unwrap(), id);
    let st = Statement {
        name: "a".into(),
        version: String::new(),
        digest: format!("sha256:{}", "0".repeat(64)),
        manifest: format!("sha256:{}", "1".repeat(64)),
    };
    let secret = std::fs::read_to_string(&files.secret).unwrap();
    assert!(sign(&st, &secret, None).is_ok(), "the pair signs");
    let missing = KeyFiles::new(tmp.path().join("no/such/dir/k").to_str().unwrap());
    assert!(matches!(
        missing.generate(None),
        Err(KeygenError::Write { path, .. }) if path == missing.secret
    ));
}
