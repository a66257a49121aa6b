//! Signed statements, minisign keys and signatures, and a scoped keyring.
//!
//! What is signed is never an archive's bytes but a short **statement** that binds a skill's
//! name, version, skill digest and manifest digest (DESIGN §3). Keys and signatures are plain
//! [minisign](https://jedisct1.github.io/minisign/) files, so the `minisign` command-line tool
//! can make and check them too.
//!
//! # The statement
//!
//! Five lines, each ending with `\n` (no `\r`, nothing before or after):
//!
//! ```text
//! skillcat-statement v1
//! name: acme-pdf
//! version: 1.4.0
//! digest: sha256:<skill digest, 64 lowercase hex>
//! manifest: sha256:<sha256 of Manifest::to_canonical_json(), 64 lowercase hex>
//! ```
//!
//! The first line names the format (domain separation). The name is non-empty and holds no
//! whitespace or control character; the version may be empty and holds no control character
//! and no leading or trailing whitespace.
//!
//! # The signature file
//!
//! A standard `.minisig` file: the prehashed (`ED`) minisign signature of the statement's bytes,
//! with the statement on one line as its *trusted comment* (covered by minisign's global
//! signature):
//!
//! ```text
//! untrusted comment: signature from skillcat secret key
//! RU…base64 of "ED" + key id + signature…
//! trusted comment: skillcat-statement v1 name=acme-pdf version=1.4.0 digest=sha256:… manifest=sha256:…
//! …base64 of the global signature…
//! ```
//!
//! It is detached: it lives beside the archive as `<archive>.minisig` ([`signature_path`]), in
//! the registry, or in an HTTP index. The `minisign` tool makes an equivalent one with
//! `minisign -S -s KEY -m statement.txt -t "<trusted comment>"` where `statement.txt` holds
//! [`Statement::to_text`] and the trusted comment is [`Statement::to_trusted_comment`].
//!
//! The file is read strictly: exactly four lines (`\n` or `\r\n`, the last terminator optional),
//! canonical base64 of the right length, no whitespace around the trusted comment. The
//! *untrusted* comment is, as in minisign, covered by no signature: its text is ignored (it may
//! not hold control characters other than tab) and changing it changes nothing [`verify`]
//! reports. Every other byte of the file is checked.
//!
//! Legacy (non-prehashed `Ed`) signatures are refused: minisign and this crate sign prehashed
//! unless legacy is asked for (`minisign -l`), and one algorithm means one code path to trust.
//!
//! # Keys
//!
//! Public keys are the two-line `.pub` file (`untrusted comment: minisign public key <ID>` and
//! the base64 of `Ed`, key id, Ed25519 key) or its bare base64 line; a key id is 16 uppercase hex
//! digits as minisign prints it. Secret keys are minisign's `.key` file, unencrypted (as
//! `minisign -G -W`, whose all-zero checksum is accepted as the tool accepts it) or encrypted
//! with a password (scrypt, as minisign does). Every signature made is checked against the
//! key's own public key before it is returned, so a damaged secret key is reported.
//!
//! # Verification
//!
//! [`verify`] takes a [`Manifest`] the caller **recomputed** from the bytes it holds, and:
//! checks the manifest is self-consistent; rebuilds the statement from it; requires the requested
//! name to be the statement's name; parses the signature file; refuses a legacy signature; looks
//! the signature's key id up in the [`Keyring`] (unknown, revoked, or a name outside the key's
//! scopes is an error); verifies the signature over the statement bytes, then the trusted
//! comment's signature; and requires the trusted comment to be exactly the statement. A digest
//! written in the signature is never trusted: every digest compared is one recomputed here.
//! The caller checks the version it wants against [`Verified::statement`].
//!
//! # The keyring
//!
//! A TOML file pinning public keys, each scoped to glob patterns over skill names (`*` matches
//! any run of characters, `?` exactly one, every other character itself):
//!
//! ```toml
//! [[key]]
//! id = "D4D182C65CFEEF6C"                                          # optional; must match the key
//! public_key = "RWRs7/5cxoLR1Fl8tpquagTby9iZpvgdK0qetcEs2PFnLI44uE5l3tsG" # line 2 of a .pub
//! scopes = ["acme-*", "pdf-tools"]                                 # required, non-empty
//! revoked = false                                                  # optional, default false
//! comment = "ACME release key"                                     # optional
//! ```
//!
//! Unknown fields and wrong types are errors naming the field; two entries with the same key id
//! are an error; `id` is compared without regard to ASCII case. `public_key` may also be the
//! whole two-line `.pub` file.
//!
//! ```
//! use skillcat::sign::Keyring;
//!
//! let keyring = Keyring::from_toml_str(r#"
//! [[key]]
//! id = "D4D182C65CFEEF6C"
//! public_key = "RWRs7/5cxoLR1Fl8tpquagTby9iZpvgdK0qetcEs2PFnLI44uE5l3tsG"
//! scopes = ["acme-*", "pdf-tools"]
//! comment = "ACME release key"
//! "#).unwrap();
//! assert!(keyring.check("D4D182C65CFEEF6C", "acme-pdf").is_ok());
//! assert!(keyring.check("D4D182C65CFEEF6C", "other").is_err());
//! ```

use std::io::Cursor;
use std::path::{Path, PathBuf};

use minisign::{KeyPair, PublicKey, SecretKey, SecretKeyBox, SignatureBones, SignatureBox};
use serde::Deserialize;

use crate::digest::{self, MANIFEST_SCHEMA, Manifest};

/// The first line of a statement (and the start of its one-line form).
pub const STATEMENT_HEADER: &str = "skillcat-statement v1";

/// The suffix of a detached signature file, appended to the archive's file name.
pub const SIGNATURE_SUFFIX: &str = ".minisig";

/// The untrusted comment skillcat writes into signatures it makes.
const UNTRUSTED_COMMENT: &str = "signature from skillcat secret key";

const UNTRUSTED_PREFIX: &str = "untrusted comment: ";
const TRUSTED_PREFIX: &str = "trusted comment: ";
/// The longest name or version a statement holds, so its one-line form stays well within
/// minisign's 8 KiB limit on trusted comments.
const FIELD_MAX_BYTES: usize = 1024;
/// The longest password minisign accepts.
const PASSWORD_MAX_BYTES: usize = 1024;
/// `"Ed"`: the Ed25519 key algorithm, and the legacy (non-prehashed) signature algorithm.
const ALG_ED: [u8; 2] = *b"Ed";
/// `"ED"`: the prehashed (BLAKE2b-512) signature algorithm.
const ALG_PREHASHED: [u8; 2] = *b"ED";
/// `"Sc"`: scrypt key derivation for an encrypted secret key.
const KDF_SCRYPT: [u8; 2] = *b"Sc";
const KDF_NONE: [u8; 2] = [0, 0];
/// `"B2"`: BLAKE2b checksum of a secret key.
const CHK_BLAKE2B: [u8; 2] = *b"B2";
const PUBLIC_KEY_BYTES: usize = 2 + 8 + 32;
const SECRET_KEY_BYTES: usize = 2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32;
const SIGNATURE_BYTES: usize = 2 + 8 + 64;
const GLOBAL_SIGNATURE_BYTES: usize = 64;

/// A signature, key or keyring problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// A statement text broke the format.
    #[error("statement line {line}: {reason}")]
    InvalidStatement {
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A field cannot go into a statement (from a manifest or set by hand).
    #[error("statement field `{field}` = {value:?}: {reason}")]
    InvalidStatementField {
        /// `name`, `version`, `digest` or `manifest`.
        field: &'static str,
        /// The value refused.
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// The manifest handed to [`verify`] contradicts itself.
    #[error("inconsistent manifest: {reason}")]
    InconsistentManifest {
        /// What does not add up.
        reason: String,
    },
    /// The skill asked for is not the skill the content is.
    #[error("requested skill `{requested}` but the content is skill `{actual}`")]
    NameMismatch {
        /// The name the caller asked for.
        requested: String,
        /// The name in the (recomputed) manifest.
        actual: String,
    },
    /// The signature file is not a well-formed minisign signature.
    #[error("malformed minisign signature: {reason}")]
    MalformedSignature {
        /// What is wrong with it.
        reason: String,
    },
    /// A legacy (non-prehashed `Ed`) signature, which skillcat refuses.
    #[error(
        "signature by key {key_id} uses the legacy non-prehashed `Ed` algorithm, which is refused; \
         sign again with a current minisign (prehashed `ED`)"
    )]
    LegacySignature {
        /// The signing key's id.
        key_id: String,
    },
    /// The signature's key is not in the keyring.
    #[error("signature made by key {key_id}, which is not in the keyring")]
    UnknownKey {
        /// The signing key's id.
        key_id: String,
    },
    /// The signature's key is revoked in the keyring.
    #[error("signature made by key {key_id}, which the keyring marks revoked")]
    RevokedKey {
        /// The signing key's id.
        key_id: String,
    },
    /// The key may not sign skills of this name.
    #[error("key {key_id} may not sign skill `{name}`: its scopes are {scopes}")]
    OutOfScope {
        /// The signing key's id.
        key_id: String,
        /// The skill name.
        name: String,
        /// The key's scopes, as written in the keyring (comma-separated).
        scopes: String,
    },
    /// The signature does not verify over the statement recomputed from the content.
    #[error(
        "signature by key {key_id} does not verify over the statement recomputed from the \
         content ({expected}); {detail}"
    )]
    SignatureMismatch {
        /// The signing key's id.
        key_id: String,
        /// The recomputed statement, on one line.
        expected: String,
        /// What the (unauthenticated) trusted comment claims instead, to help find the cause.
        detail: String,
    },
    /// The trusted comment was altered: its signature does not verify.
    #[error(
        "the trusted comment of the signature by key {key_id} was altered: its signature does \
         not verify (trusted comment: {comment:?})"
    )]
    TrustedCommentForged {
        /// The signing key's id.
        key_id: String,
        /// The trusted comment as found.
        comment: String,
    },
    /// The (authentic) trusted comment is not a skillcat statement.
    #[error("trusted comment {comment:?} is not a skillcat statement: {reason}")]
    TrustedCommentMalformed {
        /// The trusted comment as found.
        comment: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The (authentic) trusted comment names another statement than the one recomputed.
    #[error(
        "the signed trusted comment does not match the statement recomputed from the content \
         ({differences}): expected `{expected}`, signed `{actual}`"
    )]
    TrustedCommentMismatch {
        /// The recomputed statement, on one line.
        expected: String,
        /// The trusted comment as signed.
        actual: String,
        /// The fields that differ, with both values.
        differences: String,
    },
    /// A public key could not be read.
    #[error("invalid minisign public key: {reason}")]
    InvalidPublicKey {
        /// Why.
        reason: String,
    },
    /// A secret key could not be read.
    #[error("invalid minisign secret key: {reason}")]
    InvalidSecretKey {
        /// Why.
        reason: String,
    },
    /// The secret key is password-protected and no password was given.
    #[error("the secret key is password-protected: a password is required")]
    PasswordRequired,
    /// The password does not decrypt the secret key.
    #[error("wrong password for the secret key")]
    WrongPassword,
    /// A password was given for a secret key that has none.
    #[error("the secret key is not password-protected, but a password was given")]
    SecretKeyNotEncrypted,
    /// The password is longer than minisign accepts.
    #[error("password too long ({len} bytes; minisign accepts at most 1024)")]
    PasswordTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A keyring scope pattern is unusable.
    #[error("invalid scope pattern {pattern:?}: {reason}")]
    InvalidScope {
        /// The pattern.
        pattern: String,
        /// Why.
        reason: &'static str,
    },
    /// A key entry has no scope.
    #[error("key {key_id} has no scopes: list at least one skill-name pattern")]
    EmptyScopes {
        /// The key's id.
        key_id: String,
    },
    /// The same key id twice in a keyring.
    #[error("key {key_id} appears twice in the keyring")]
    DuplicateKey {
        /// The key's id.
        key_id: String,
    },
    /// A keyring file could not be read.
    #[error("keyring {origin}: {reason}")]
    InvalidKeyring {
        /// The file (or `<string>`).
        origin: String,
        /// What is wrong, naming the entry or field.
        reason: String,
    },
    /// The minisign library failed at something that is not the input's fault.
    #[error("{operation} failed: {message}")]
    Crypto {
        /// What was being done.
        operation: &'static str,
        /// The library's message.
        message: String,
    },
}

fn crypto(operation: &'static str) -> impl FnOnce(minisign::PError) -> SignError {
    move |e| SignError::Crypto {
        operation,
        message: e.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Statement

/// What a signature covers: a skill's name, version, skill digest and manifest digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The skill's name.
    pub name: String,
    /// Its version (may be empty).
    pub version: String,
    /// The skill digest, `sha256:<hex>`.
    pub digest: String,
    /// `sha256:<hex>` of the manifest's canonical JSON.
    pub manifest: String,
}

impl Statement {
    /// The statement of a manifest: its name, version, skill digest and manifest digest.
    pub fn from_manifest(manifest: &Manifest) -> Result<Statement, SignError> {
        let statement = Statement {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            digest: manifest.digest.clone(),
            manifest: manifest.manifest_digest(),
        };
        statement.check()?;
        Ok(statement)
    }

    /// Checks every field can be written into a statement and read back unchanged.
    pub fn check(&self) -> Result<(), SignError> {
        check_name(&self.name)?;
        check_version(&self.version)?;
        check_digest("digest", &self.digest)?;
        check_digest("manifest", &self.manifest)?;
        Ok(())
    }

    /// The statement text: the bytes that are signed.
    pub fn to_text(&self) -> String {
        format!(
            "{STATEMENT_HEADER}\nname: {}\nversion: {}\ndigest: {}\nmanifest: {}\n",
            self.name, self.version, self.digest, self.manifest
        )
    }

    /// The statement on one line, as the signature's trusted comment:
    /// `skillcat-statement v1 name=<n> version=<v> digest=<d> manifest=<m>`.
    pub fn to_trusted_comment(&self) -> String {
        format!(
            "{STATEMENT_HEADER} name={} version={} digest={} manifest={}",
            self.name, self.version, self.digest, self.manifest
        )
    }

    /// Reads a statement text strictly: the five lines in order, each ending with `\n`,
    /// nothing else, every field well-formed.
    pub fn parse(text: &str) -> Result<Statement, SignError> {
        let bad = |line: usize, reason: String| SignError::InvalidStatement { line, reason };
        let Some(body) = text.strip_suffix('\n') else {
            let line = text.split('\n').count();
            return Err(bad(line, "the statement must end with a newline".into()));
        };
        let lines: Vec<&str> = body.split('\n').collect();
        if lines[0] != STATEMENT_HEADER {
            return Err(bad(
                1,
                format!("expected `{STATEMENT_HEADER}`, found {:?}", lines[0]),
            ));
        }
        let keys = ["name", "version", "digest", "manifest"];
        let mut values = [""; 4];
        for (i, key) in keys.iter().enumerate() {
            let line = i + 2;
            let Some(found) = lines.get(i + 1) else {
                return Err(bad(line, format!("missing line `{key}: …`")));
            };
            let prefix = format!("{key}: ");
            let Some(value) = found.strip_prefix(&prefix) else {
                return Err(bad(line, format!("expected `{key}: …`, found {found:?}")));
            };
            values[i] = value;
        }
        if lines.len() > 5 {
            return Err(bad(
                6,
                format!("unexpected line after `manifest:`: {:?}", lines[5]),
            ));
        }
        let [name, version, digest, manifest] = values;
        let statement = Statement {
            name: name.to_string(),
            version: version.to_string(),
            digest: digest.to_string(),
            manifest: manifest.to_string(),
        };
        statement.check().map_err(|e| match e {
            SignError::InvalidStatementField { field, .. } => {
                let line = 2 + keys.iter().position(|k| *k == field).unwrap_or(0);
                bad(line, e.to_string())
            }
            other => other,
        })?;
        Ok(statement)
    }

    /// Reads the one-line form ([`to_trusted_comment`](Self::to_trusted_comment)) strictly.
    pub fn from_trusted_comment(comment: &str) -> Result<Statement, SignError> {
        let bad = |reason: String| SignError::TrustedCommentMalformed {
            comment: comment.to_string(),
            reason,
        };
        let head = format!("{STATEMENT_HEADER} name=");
        let Some(rest) = comment.strip_prefix(&head) else {
            return Err(bad(format!("it does not start with `{head}`")));
        };
        // The tail has a fixed length: ` digest=sha256:<64> manifest=sha256:<64>`.
        const DIGEST_LEN: usize = "sha256:".len() + 64;
        let tail_len = " digest=".len() + DIGEST_LEN + " manifest=".len() + DIGEST_LEN;
        let split = rest
            .len()
            .checked_sub(tail_len)
            .filter(|&at| rest.is_char_boundary(at));
        let Some(split) = split else {
            return Err(bad(
                "it does not end with ` digest=sha256:… manifest=sha256:…`".into(),
            ));
        };
        let (name_version, tail) = rest.split_at(split);
        let digests = tail
            .strip_prefix(" digest=")
            .and_then(|t| t.split_once(" manifest="))
            .filter(|(d, m)| d.len() == DIGEST_LEN && m.len() == DIGEST_LEN);
        let Some((digest, manifest)) = digests else {
            return Err(bad(
                "it does not end with ` digest=sha256:… manifest=sha256:…`".into(),
            ));
        };
        // A name holds no whitespace, so the first space ends it.
        let Some((name, version)) = name_version
            .split_once(' ')
            .and_then(|(n, v)| Some((n, v.strip_prefix("version=")?)))
        else {
            return Err(bad("expected `name=<name> version=<version>`".into()));
        };
        let statement = Statement {
            name: name.to_string(),
            version: version.to_string(),
            digest: digest.to_string(),
            manifest: manifest.to_string(),
        };
        statement.check().map_err(|e| bad(e.to_string()))?;
        Ok(statement)
    }

    /// The fields in which `other` differs from `self`, as `field: expected X, signed Y`.
    fn differences(&self, other: &Statement) -> String {
        let mut out = Vec::new();
        for (field, mine, theirs) in [
            ("name", &self.name, &other.name),
            ("version", &self.version, &other.version),
            ("digest", &self.digest, &other.digest),
            ("manifest", &self.manifest, &other.manifest),
        ] {
            if mine != theirs {
                out.push(format!("{field}: expected {mine:?}, signed {theirs:?}"));
            }
        }
        out.join("; ")
    }
}

fn check_name(name: &str) -> Result<(), SignError> {
    let bad = |reason| SignError::InvalidStatementField {
        field: "name",
        value: name.to_string(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("must not be empty"));
    }
    if name.len() > FIELD_MAX_BYTES {
        return Err(bad(
            "longer than 1024 bytes (minisign caps trusted comments at 8 KiB)",
        ));
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("must not contain whitespace or control characters"));
    }
    Ok(())
}

fn check_version(version: &str) -> Result<(), SignError> {
    let bad = |reason| SignError::InvalidStatementField {
        field: "version",
        value: version.to_string(),
        reason,
    };
    if version.len() > FIELD_MAX_BYTES {
        return Err(bad(
            "longer than 1024 bytes (minisign caps trusted comments at 8 KiB)",
        ));
    }
    if version.chars().any(char::is_control) {
        return Err(bad("must not contain control characters"));
    }
    if version.trim() != version {
        return Err(bad("must not start or end with whitespace"));
    }
    Ok(())
}

fn check_digest(field: &'static str, value: &str) -> Result<(), SignError> {
    match digest::parse_digest(value) {
        Some(_) => Ok(()),
        None => Err(SignError::InvalidStatementField {
            field,
            value: value.to_string(),
            reason: "must be `sha256:` and 64 lowercase hex digits",
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Strict base64 (standard alphabet, padded, canonical: no stray padding bits).

fn base64_value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let padding = bytes.iter().rev().take_while(|&&c| c == b'=').count();
    let data = &bytes[..bytes.len() - padding];
    let expected_padding = match data.len() % 4 {
        0 => 0,
        3 => 1,
        2 => 2,
        _ => return None,
    };
    if padding != expected_padding {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in data {
        acc = (acc << 6) | base64_value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // The bits left over are padding and must be zero, or two texts would decode alike.
    (acc == 0).then_some(out)
}

/// Decodes `text` as canonical base64 of exactly `len` bytes.
fn decode_exact(text: &str, len: usize) -> Result<Vec<u8>, String> {
    match decode_base64(text) {
        Some(bytes) if bytes.len() == len => Ok(bytes),
        Some(bytes) => Err(format!("expected {len} bytes, found {}", bytes.len())),
        None => Err("not canonical base64".to_string()),
    }
}

/// The key id as minisign prints it: the 8 key-id bytes as a little-endian u64, in hex.
fn key_id_hex(keynum: &[u8]) -> String {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&keynum[..8]);
    format!("{:016X}", u64::from_le_bytes(bytes))
}

/// Splits into lines ended by `\n` or `\r\n`; the last terminator is optional.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let line = &rest[..i];
                lines.push(line.strip_suffix('\r').unwrap_or(line));
                rest = &rest[i + 1..];
            }
            None => {
                lines.push(rest);
                rest = "";
            }
        }
    }
    lines
}

// ---------------------------------------------------------------------------------------------
// Keys

struct ParsedPublicKey {
    key: PublicKey,
    base64: String,
    key_id: String,
}

fn parse_public_key(text: &str) -> Result<ParsedPublicKey, SignError> {
    let bad = |reason: String| SignError::InvalidPublicKey { reason };
    let lines = split_lines(text.trim());
    let line = match lines.as_slice() {
        [line] => line.trim(),
        [comment, line] if comment.starts_with("untrusted comment:") => line.trim(),
        [_, _] => {
            return Err(bad(
                "the first of two lines must be `untrusted comment: …`".into()
            ));
        }
        _ => {
            return Err(bad(format!(
                "expected the base64 key line, or a .pub file (comment line + key line); \
                 found {} lines",
                lines.len()
            )));
        }
    };
    let bytes = decode_exact(line, PUBLIC_KEY_BYTES).map_err(|e| bad(format!("key line: {e}")))?;
    if bytes[..2] != ALG_ED {
        return Err(bad(format!("unsupported key algorithm {:?}", &bytes[..2])));
    }
    let key = PublicKey::from_bytes(&bytes).map_err(|e| bad(e.to_string()))?;
    Ok(ParsedPublicKey {
        key,
        base64: line.to_string(),
        key_id: key_id_hex(&bytes[2..10]),
    })
}

/// The key id of a public key (the `.pub` file or its bare base64 line): 16 uppercase hex
/// digits, as minisign prints it.
pub fn key_id_of_public_key(text: &str) -> Result<String, SignError> {
    Ok(parse_public_key(text)?.key_id)
}

/// The bare base64 line of a public key given as a `.pub` file or as that line: what a
/// keyring's `public_key` holds.
pub fn public_key_base64(text: &str) -> Result<String, SignError> {
    Ok(parse_public_key(text)?.base64)
}

fn check_password(password: Option<&str>) -> Result<(), SignError> {
    match password {
        Some(p) if p.len() > PASSWORD_MAX_BYTES => Err(SignError::PasswordTooLong { len: p.len() }),
        _ => Ok(()),
    }
}

/// Reads a secret key file; `password` decrypts a password-protected one.
fn load_secret_key(text: &str, password: Option<&str>) -> Result<SecretKey, SignError> {
    let bad = |reason: String| SignError::InvalidSecretKey { reason };
    check_password(password)?;
    let lines = split_lines(text.trim());
    let line = match lines.as_slice() {
        [comment, line] if comment.starts_with("untrusted comment:") => line.trim(),
        _ => {
            return Err(bad(
                "expected a minisign secret key file: `untrusted comment: …` and a key line".into(),
            ));
        }
    };
    let bytes = decode_exact(line, SECRET_KEY_BYTES).map_err(|e| bad(format!("key line: {e}")))?;
    if bytes[..2] != ALG_ED {
        return Err(bad(format!("unsupported key algorithm {:?}", &bytes[..2])));
    }
    if bytes[4..6] != CHK_BLAKE2B {
        return Err(bad(format!(
            "unsupported checksum algorithm {:?}",
            &bytes[4..6]
        )));
    }
    let encrypted = match [bytes[2], bytes[3]] {
        KDF_NONE => false,
        KDF_SCRYPT => true,
        other => {
            return Err(bad(format!(
                "unsupported key derivation algorithm {other:?}"
            )));
        }
    };
    let key_box = SecretKeyBox::from_string(&format!("{UNTRUSTED_PREFIX}secret key\n{line}\n"))
        .map_err(|e| bad(e.to_string()))?;
    match (encrypted, password) {
        // `minisign -G -W` writes an all-zero checksum and the tool never checks it for an
        // unencrypted key; the crate would call such a key corrupted. Read it as the tool does:
        // `sign` still catches a damaged key, whose signatures its own public key refuses.
        (false, None) if bytes[SECRET_KEY_BYTES - 32..].iter().all(|&b| b == 0) => {
            SecretKey::from_bytes(&bytes).map_err(|e| bad(e.to_string()))
        }
        (false, None) => SecretKey::from_unencrypted_box(key_box)
            .map_err(|e| bad(format!("{e} (checksum mismatch)"))),
        (false, Some(_)) => Err(SignError::SecretKeyNotEncrypted),
        (true, None) => Err(SignError::PasswordRequired),
        (true, Some(password)) => {
            SecretKey::from_box(key_box, Some(password.to_string())).map_err(|e| match e.kind() {
                minisign::ErrorKind::Verify => SignError::WrongPassword,
                _ => bad(e.to_string()),
            })
        }
    }
}

/// Makes a new key pair: `(public key file text, secret key file text)`, both in minisign's
/// formats. With `password` the secret key is encrypted as minisign does (scrypt); without,
/// it is stored unencrypted (as `minisign -G -W`).
pub fn generate_keypair(password: Option<&str>) -> Result<(String, String), SignError> {
    check_password(password)?;
    let pair = match password {
        None => KeyPair::generate_unencrypted_keypair(),
        Some(p) => KeyPair::generate_encrypted_keypair(Some(p.to_string())),
    }
    .map_err(crypto("key generation"))?;
    // Written as the minisign tool writes it (the crate's own box adds a colon to the comment).
    let public = format!(
        "{UNTRUSTED_PREFIX}minisign public key {}\n{}\n",
        key_id_hex(pair.pk.keynum()),
        pair.pk.to_base64()
    );
    let comment = match password {
        Some(_) => "minisign encrypted secret key",
        None => "minisign secret key (not encrypted)",
    };
    let secret = pair
        .sk
        .to_box(Some(comment))
        .map_err(crypto("key generation"))?
        .into_string();
    Ok((public, secret))
}

/// Signs a statement: returns the `.minisig` file text (prehashed, with the statement as the
/// trusted comment). `password` decrypts a password-protected secret key.
pub fn sign(
    statement: &Statement,
    secret_key_text: &str,
    password: Option<&str>,
) -> Result<String, SignError> {
    statement.check()?;
    let secret = load_secret_key(secret_key_text, password)?;
    let public = PublicKey::from_secret_key(&secret).map_err(crypto("signing"))?;
    let text = statement.to_text();
    let trusted = statement.to_trusted_comment();
    // Passing the public key makes minisign check the new signature before returning it.
    let signature = minisign::sign(
        Some(&public),
        &secret,
        Cursor::new(text.as_bytes()),
        Some(&trusted),
        Some(UNTRUSTED_COMMENT),
    )
    .map_err(|e| match e.kind() {
        minisign::ErrorKind::Verify => SignError::InvalidSecretKey {
            reason: "its own public key does not verify its signatures (corrupted key)".into(),
        },
        _ => crypto("signing")(e),
    })?;
    Ok(signature.into_string())
}

/// Where the detached signature of `archive` lives: `<archive>.minisig`.
pub fn signature_path(archive: &Path) -> PathBuf {
    let mut path = archive.as_os_str().to_owned();
    path.push(SIGNATURE_SUFFIX);
    PathBuf::from(path)
}

// ---------------------------------------------------------------------------------------------
// Signature files

struct ParsedSignature {
    key_id: String,
    prehashed: bool,
    trusted_comment: String,
    signature: SignatureBox,
}

fn parse_minisig(text: &str) -> Result<ParsedSignature, SignError> {
    let bad = |reason: String| SignError::MalformedSignature { reason };
    let lines = split_lines(text);
    let [untrusted, signature, trusted, global] = lines.as_slice() else {
        return Err(bad(format!(
            "expected 4 lines (untrusted comment, signature, trusted comment, global signature), \
             found {}",
            lines.len()
        )));
    };
    let Some(untrusted) = untrusted.strip_prefix(UNTRUSTED_PREFIX) else {
        return Err(bad(format!("line 1 must start with `{UNTRUSTED_PREFIX}`")));
    };
    if untrusted.chars().any(|c| c.is_control() && c != '\t') {
        return Err(bad(
            "line 1: control character in the untrusted comment".into()
        ));
    }
    let sig_bytes = decode_exact(signature, SIGNATURE_BYTES)
        .map_err(|e| bad(format!("line 2 (signature): {e}")))?;
    let prehashed = match [sig_bytes[0], sig_bytes[1]] {
        ALG_PREHASHED => true,
        ALG_ED => false,
        other => {
            return Err(bad(format!(
                "line 2: unsupported signature algorithm {other:?}"
            )));
        }
    };
    let key_id = key_id_hex(&sig_bytes[2..10]);
    let Some(comment) = trusted.strip_prefix(TRUSTED_PREFIX) else {
        return Err(bad(format!("line 3 must start with `{TRUSTED_PREFIX}`")));
    };
    if comment.trim() != comment {
        return Err(bad("line 3: whitespace around the trusted comment".into()));
    }
    decode_exact(global, GLOBAL_SIGNATURE_BYTES)
        .map_err(|e| bad(format!("line 4 (global signature): {e}")))?;
    // Everything is checked; hand minisign the canonical text, so its own (more lenient)
    // reader sees exactly what was checked.
    let canonical = format!(
        "{UNTRUSTED_PREFIX}{untrusted}\n{signature}\n{TRUSTED_PREFIX}{comment}\n{global}\n"
    );
    let signature = SignatureBox::from_string(&canonical).map_err(|e| bad(e.to_string()))?;
    if key_id_hex(signature.keynum()) != key_id || signature.is_prehashed() != prehashed {
        return Err(bad("minisign read the signature differently".into()));
    }
    Ok(ParsedSignature {
        key_id,
        prehashed,
        trusted_comment: comment.to_string(),
        signature,
    })
}

// ---------------------------------------------------------------------------------------------
// Verification

/// A signature that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// The signing key's id (16 uppercase hex).
    pub key_id: String,
    /// The statement that was signed (recomputed from the content).
    pub statement: Statement,
}

/// Verifies a detached signature of a skill.
///
/// `manifest` must be **recomputed** by the caller from the bytes it holds (never read from
/// the package); `minisig_text` is the `.minisig` file; `requested_name` the skill the caller
/// asked for. See the [module documentation](self) for the steps; each failure is its own
/// [`SignError`].
pub fn verify(
    manifest: &Manifest,
    minisig_text: &str,
    keyring: &Keyring,
    requested_name: &str,
) -> Result<Verified, SignError> {
    check_manifest(manifest)?;
    let statement = Statement::from_manifest(manifest)?;
    verify_statement(&statement, minisig_text, keyring, requested_name)
}

/// The manifest must agree with itself: schema, sorted unique paths, well-formed per-file
/// digests, and a skill digest that is the tree digest of its files.
fn check_manifest(manifest: &Manifest) -> Result<(), SignError> {
    let bad = |reason: String| SignError::InconsistentManifest { reason };
    if manifest.schema != MANIFEST_SCHEMA {
        return Err(bad(format!(
            "schema is {:?}, expected {MANIFEST_SCHEMA:?}",
            manifest.schema
        )));
    }
    let mut hashes = Vec::with_capacity(manifest.files.len());
    for (i, file) in manifest.files.iter().enumerate() {
        let Some(hash) = digest::parse_digest(&file.digest) else {
            return Err(bad(format!(
                "file `{}`: malformed digest {:?}",
                file.path, file.digest
            )));
        };
        if i > 0 && manifest.files[i - 1].path.as_bytes() >= file.path.as_bytes() {
            return Err(bad(format!(
                "files not in byte order of path, or a path repeats: `{}` then `{}`",
                manifest.files[i - 1].path,
                file.path
            )));
        }
        hashes.push((file.path.as_str(), hash));
    }
    let recomputed = digest::tree_digest(hashes);
    if recomputed != manifest.digest {
        return Err(bad(format!(
            "skill digest {} is not the digest of its files ({recomputed})",
            manifest.digest
        )));
    }
    Ok(())
}

fn verify_statement(
    statement: &Statement,
    minisig_text: &str,
    keyring: &Keyring,
    requested_name: &str,
) -> Result<Verified, SignError> {
    if requested_name != statement.name {
        return Err(SignError::NameMismatch {
            requested: requested_name.to_string(),
            actual: statement.name.clone(),
        });
    }
    let parsed = parse_minisig(minisig_text)?;
    if !parsed.prehashed {
        return Err(SignError::LegacySignature {
            key_id: parsed.key_id,
        });
    }
    let entry = keyring.check(&parsed.key_id, &statement.name)?;
    let text = statement.to_text();
    let expected = statement.to_trusted_comment();

    // The signature over the statement bytes alone (a box without a trusted comment).
    let data_only: SignatureBox = SignatureBones::from(parsed.signature.clone()).into();
    let data = minisign::verify(
        &entry.key,
        &data_only,
        Cursor::new(text.as_bytes()),
        true,
        false,
        false,
    );
    if data.is_err() {
        let detail = match Statement::from_trusted_comment(&parsed.trusted_comment) {
            Ok(claimed) if claimed != *statement => format!(
                "the signature's trusted comment (not authenticated) differs in {}",
                statement.differences(&claimed)
            ),
            _ => format!(
                "the signature's trusted comment (not authenticated) reads {:?}",
                parsed.trusted_comment
            ),
        };
        return Err(SignError::SignatureMismatch {
            key_id: parsed.key_id,
            expected,
            detail,
        });
    }
    // Then the whole box: the data again and the global signature over the trusted comment.
    let whole = minisign::verify(
        &entry.key,
        &parsed.signature,
        Cursor::new(text.as_bytes()),
        true,
        false,
        false,
    );
    if whole.is_err() {
        return Err(SignError::TrustedCommentForged {
            key_id: parsed.key_id,
            comment: parsed.trusted_comment,
        });
    }
    let signed = Statement::from_trusted_comment(&parsed.trusted_comment)?;
    if signed != *statement || parsed.trusted_comment != expected {
        return Err(SignError::TrustedCommentMismatch {
            differences: statement.differences(&signed),
            expected,
            actual: parsed.trusted_comment,
        });
    }
    Ok(Verified {
        key_id: parsed.key_id,
        statement: statement.clone(),
    })
}

// ---------------------------------------------------------------------------------------------
// Keyring

/// Whether `name` matches the glob `pattern`: `*` matches any run of characters (also none),
/// `?` exactly one character, any other character itself. Case-sensitive, whole name.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    // After a `*`: the pattern position after it, and the name position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p + 1, n));
            p += 1;
        } else if p < pattern.len() && (pattern[p] == '?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if let Some((after, upto)) = star {
            // Let the last `*` swallow one more character and retry.
            star = Some((after, upto + 1));
            p = after;
            n = upto + 1;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

fn check_scope(pattern: &str) -> Result<(), SignError> {
    let bad = |reason| SignError::InvalidScope {
        pattern: pattern.to_string(),
        reason,
    };
    if pattern.is_empty() {
        return Err(bad("empty pattern"));
    }
    if pattern.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(
            "whitespace or control character (skill names have none)",
        ));
    }
    Ok(())
}

/// One pinned public key with its scopes.
#[derive(Debug, Clone)]
pub struct KeyEntry {
    id: String,
    public_key: String,
    key: PublicKey,
    scopes: Vec<String>,
    revoked: bool,
    comment: Option<String>,
}

impl KeyEntry {
    /// A key entry from a public key (`.pub` file text or its base64 line) and its scopes
    /// (non-empty glob patterns over skill names).
    pub fn new<S: Into<String>>(
        public_key: &str,
        scopes: impl IntoIterator<Item = S>,
    ) -> Result<KeyEntry, SignError> {
        let parsed = parse_public_key(public_key)?;
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        if scopes.is_empty() {
            return Err(SignError::EmptyScopes {
                key_id: parsed.key_id,
            });
        }
        for scope in &scopes {
            check_scope(scope)?;
        }
        Ok(KeyEntry {
            id: parsed.key_id,
            public_key: parsed.base64,
            key: parsed.key,
            scopes,
            revoked: false,
            comment: None,
        })
    }

    /// Marks the key revoked (or not).
    pub fn with_revoked(mut self, revoked: bool) -> KeyEntry {
        self.revoked = revoked;
        self
    }

    /// Sets the comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> KeyEntry {
        self.comment = Some(comment.into());
        self
    }

    /// The key id (16 uppercase hex).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The public key's base64 line.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// The scope patterns.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether the key is revoked.
    pub fn is_revoked(&self) -> bool {
        self.revoked
    }

    /// The comment, if any.
    pub fn comment(&self) -> Option<&str> {
        self.comment.as_deref()
    }

    /// Whether one of the scopes matches `name`.
    pub fn allows(&self, name: &str) -> bool {
        self.scopes.iter().any(|scope| glob_match(scope, name))
    }
}

/// Pinned public keys, each scoped to skill-name patterns. See the [module docs](self) for
/// the TOML format.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    keys: Vec<KeyEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyringFile {
    #[serde(default)]
    key: Vec<KeyringFileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyringFileEntry {
    id: Option<String>,
    public_key: String,
    scopes: Vec<String>,
    #[serde(default)]
    revoked: bool,
    comment: Option<String>,
}

impl Keyring {
    /// An empty keyring (it trusts nothing).
    pub fn new() -> Keyring {
        Keyring::default()
    }

    /// Adds a key; a key id already present is an error.
    pub fn add(&mut self, entry: KeyEntry) -> Result<(), SignError> {
        if self.get(&entry.id).is_some() {
            return Err(SignError::DuplicateKey { key_id: entry.id });
        }
        self.keys.push(entry);
        Ok(())
    }

    /// The entry for a key id (ASCII case ignored).
    pub fn get(&self, key_id: &str) -> Option<&KeyEntry> {
        self.keys.iter().find(|k| k.id.eq_ignore_ascii_case(key_id))
    }

    /// Every entry, in file order.
    pub fn keys(&self) -> &[KeyEntry] {
        &self.keys
    }

    /// Whether `key_id` may sign skill `name`: it is present, not revoked, and one of its
    /// scopes matches `name`. Returns the entry.
    pub fn check(&self, key_id: &str, name: &str) -> Result<&KeyEntry, SignError> {
        let key_id = key_id.to_ascii_uppercase();
        let Some(entry) = self.get(&key_id) else {
            return Err(SignError::UnknownKey { key_id });
        };
        if entry.revoked {
            return Err(SignError::RevokedKey { key_id });
        }
        if !entry.allows(name) {
            return Err(SignError::OutOfScope {
                key_id,
                name: name.to_string(),
                scopes: entry.scopes.join(", "),
            });
        }
        Ok(entry)
    }

    /// Reads a keyring from TOML text.
    pub fn from_toml_str(text: &str) -> Result<Keyring, SignError> {
        Keyring::parse(text, "<string>")
    }

    /// Reads a keyring file.
    pub fn load(path: impl AsRef<Path>) -> crate::Result<Keyring> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| crate::Error::io(path.display().to_string(), e))?;
        Ok(Keyring::parse(&text, &path.display().to_string())?)
    }

    fn parse(text: &str, origin: &str) -> Result<Keyring, SignError> {
        let bad = |reason: String| SignError::InvalidKeyring {
            origin: origin.to_string(),
            reason,
        };
        let file: KeyringFile = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let mut keyring = Keyring::new();
        for (i, raw) in file.key.into_iter().enumerate() {
            let at = |e: SignError| bad(format!("[[key]] #{}: {e}", i + 1));
            let mut entry = KeyEntry::new(&raw.public_key, raw.scopes).map_err(at)?;
            if let Some(id) = &raw.id
                && !id.eq_ignore_ascii_case(&entry.id)
            {
                return Err(bad(format!(
                    "[[key]] #{}: id {id:?} does not match its public key, whose id is {}",
                    i + 1,
                    entry.id
                )));
            }
            entry.revoked = raw.revoked;
            entry.comment = raw.comment;
            keyring.add(entry).map_err(at)?;
        }
        Ok(keyring)
    }
}

#[cfg(test)]
mod tests {
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
        let tampered =
            manifest_with(&[("SKILL.md", b"x", false), ("scripts/run.sh", RUN_SH, true)]);
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
        assert!(matches!(err, crate::Error::Io { .. }), "{err}");
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
}
