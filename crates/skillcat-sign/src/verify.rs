//! Verification: a recomputed manifest, a keyring, a signature.

use super::*;

/// A signature that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// The signing key's id (16 uppercase hex).
    pub key_id: String,
    /// The statement that was signed (recomputed from the content).
    pub statement: Statement,
}

/// What a signature file says of itself before any key checks it: the key that made it and
/// the statement its trusted comment names. Nothing here is authenticated; it says which
/// statement a signature was made for (to tell an author their signature is for another
/// version before a registry refuses it), never whether it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Claim {
    /// The id of the key the signature says made it (16 uppercase hex).
    pub key_id: String,
    /// The statement its trusted comment names.
    pub statement: Statement,
}

/// Reads a `.minisig` file strictly (as [`verify`] does) and returns what it claims; a legacy
/// signature, which [`verify`] refuses, is refused here too.
pub fn claim(minisig_text: &str) -> Result<Claim, SignError> {
    let parsed = parse_minisig(minisig_text)?;
    if !parsed.prehashed {
        return Err(SignError::LegacySignature {
            key_id: parsed.key_id,
        });
    }
    Ok(Claim {
        statement: Statement::from_trusted_comment(&parsed.trusted_comment)?,
        key_id: parsed.key_id,
    })
}

/// Verifies a detached signature of a skill.
///
/// `manifest` must be **recomputed** by the caller from the bytes it holds (never read from
/// the package); `minisig_text` is the `.minisig` file; `requested_name` the skill the caller
/// asked for. See the [module documentation](crate) for the steps; each failure is its own
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
pub(super) fn check_manifest(manifest: &Manifest) -> Result<(), SignError> {
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

pub(super) fn verify_statement(
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
