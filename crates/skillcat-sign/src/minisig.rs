//! `.minisig` files: strict parsing of the four lines.

use super::*;

pub(super) struct ParsedSignature {
    pub(super) key_id: String,
    pub(super) prehashed: bool,
    pub(super) trusted_comment: String,
    pub(super) signature: SignatureBox,
}

pub(super) fn parse_minisig(text: &str) -> Result<ParsedSignature, SignError> {
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
