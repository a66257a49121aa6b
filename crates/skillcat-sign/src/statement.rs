//! The signed statement: its text form, its one-line (trusted comment) form, strict parsing.

use super::*;

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

    /// The statement a `.minisig` file claims to sign: its trusted comment, the file and the
    /// comment read strictly. Not authenticated — only [`verify`](super::verify) says whether
    /// the signature holds; this picks, among signatures kept for a skill, the one meant for
    /// its name, version and content.
    pub fn claimed_by(signature: &str) -> Result<Statement, SignError> {
        Statement::from_trusted_comment(&parse_minisig(signature)?.trusted_comment)
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
    pub fn differences(&self, other: &Statement) -> String {
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

pub(super) fn check_name(name: &str) -> Result<(), SignError> {
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

pub(super) fn check_version(version: &str) -> Result<(), SignError> {
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

pub(super) fn check_digest(field: &'static str, value: &str) -> Result<(), SignError> {
    match digest::parse_digest(value) {
        Some(_) => Ok(()),
        None => Err(SignError::InvalidStatementField {
            field,
            value: value.to_string(),
            reason: "must be `sha256:` and 64 lowercase hex digits",
        }),
    }
}
