//! Signed statements, minisign keys and signatures, and a scoped keyring.
//!
//! What is signed is never an archive's bytes but a short **statement** that binds a skill's
//! name, version, skill digest and manifest digest (see `docs/architecture.md`). Keys and signatures are plain
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
//! use skillcat_sign::Keyring;
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

use skillcat_core::digest::{self, MANIFEST_SCHEMA, Manifest};

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
    /// A keyring file holds a minisign public key instead: a keyring pins public keys to the
    /// skill names each may sign.
    #[error(
        "keyring {origin}: this is the minisign public key {key_id}, not a keyring; a keyring \
         is a TOML file of [[key]] entries, each a public key (public_key) and the skill-name \
         patterns it may sign (scopes)"
    )]
    PublicKeyNotKeyring {
        /// The file (or `<string>`).
        origin: String,
        /// The public key's id.
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
    /// A key, keyring or signature file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
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

mod encoding;
pub mod index_statement;
mod keyring;
mod keyring_file;
mod keys;
mod minisig;
pub mod pack_signed;
pub mod source_signatures;
mod statement;
#[cfg(test)]
mod tests;
mod verify;

pub use index_statement::{IndexRefusal, IndexStatement, VerifiedIndex, verify_index};
pub use keyring::{KeyEntry, Keyring, glob_match};
pub use keyring_file::{KEYRING_FILE_NAME, KEYRING_HEADER, KeyringFile, Trusted};
pub use keys::{
    KeyFiles, KeygenError, generate_keypair, key_id_of_public_key, public_key_base64, sign,
    signature_path,
};
pub use pack_signed::{pack_dir, pack_dir_validating, skill_signature_path};
pub use statement::Statement;
pub use verify::{Claim, Verified, claim, verify};

impl From<SignError> for skillcat_core::Error {
    /// A signature, key or keyring problem, kept whole as
    /// [`Error::Layer`](skillcat_core::Error::Layer) of kind
    /// [`Signature`](skillcat_core::ErrorKind::Signature).
    fn from(e: SignError) -> Self {
        skillcat_core::Error::layer(skillcat_core::ErrorKind::Signature, e)
    }
}

use encoding::*;
use keys::*;
use minisig::*;
