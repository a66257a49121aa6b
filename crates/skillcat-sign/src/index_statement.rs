//! The signed index statement: a catalog says which index is current, until when, and in which
//! order (TUF's timestamp role in spirit). A client holding the catalog's key refuses an index
//! that is not the one signed (tampered), a statement past its expiry (a frozen or replayed
//! view), and a version lower than the highest it has seen for that catalog (a rollback).
//!
//! Five lines, each ending with `\n`, signed as minisign signs a skill [`Statement`]
//! (prehashed, the one-line form as the trusted comment):
//!
//! ```text
//! skillcat-index-statement v1
//! catalog: skills.example.com
//! index: sha256:<sha256 of the index.json bytes served, 64 lowercase hex>
//! version: 17
//! expires: 1767225600
//! ```
//!
//! `catalog` names the catalog (no whitespace or control character); `version` is a decimal
//! integer that only grows from one statement to the next (the server uses the time of
//! writing, in seconds); `expires` is in Unix seconds. Hostile table (tests below):
//!
//! | attempt | refusal |
//! |---|---|
//! | another index under a valid statement | [`IndexRefusal::Tampered`] |
//! | a statement past `expires` | [`IndexRefusal::Expired`] |
//! | an older, validly signed statement and index | [`IndexRefusal::RolledBack`] |
//! | a statement of another catalog | [`IndexRefusal::OtherCatalog`] |
//! | a key not in the keyring, or revoked | [`IndexRefusal::Signature`] |
//! | a trusted comment edited | [`IndexRefusal::Signature`] |

use super::*;

/// The first line of an index statement.
pub const INDEX_STATEMENT_HEADER: &str = "skillcat-index-statement v1";

/// What a catalog signs about its index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStatement {
    /// The catalog's name (its host, for a served catalog).
    pub catalog: String,
    /// `sha256:<hex>` of the index bytes.
    pub index: String,
    /// Grows with every statement the catalog signs.
    pub version: u64,
    /// Unix seconds after which the statement is refused.
    pub expires: u64,
}

/// Why an index was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexRefusal {
    /// The statement's signature does not hold for the keyring (or is malformed).
    #[error("the index statement's signature: {0}")]
    Signature(#[from] SignError),
    /// The index is not the one the statement signs.
    #[error("the index is not the one signed: the statement says {signed}, the index is {actual}")]
    Tampered {
        /// The digest signed.
        signed: String,
        /// The digest of the index received.
        actual: String,
    },
    /// The statement expired.
    #[error(
        "the index statement expired {ago} s ago (version {version}): the server's view may be frozen or replayed"
    )]
    Expired {
        /// Its version.
        version: u64,
        /// Seconds since it expired.
        ago: u64,
    },
    /// The statement is older than one already seen for this catalog.
    #[error(
        "the index statement is version {version}, lower than version {highest} already seen for this catalog: a rollback"
    )]
    RolledBack {
        /// Its version.
        version: u64,
        /// The highest version seen before.
        highest: u64,
    },
    /// The statement is for another catalog.
    #[error("the index statement is for catalog {signed:?}, not {expected:?}")]
    OtherCatalog {
        /// The catalog signed.
        signed: String,
        /// The catalog expected.
        expected: String,
    },
}

impl IndexStatement {
    /// The statement of `index` (its bytes) for `catalog`.
    pub fn of(catalog: &str, index: &[u8], version: u64, expires: u64) -> IndexStatement {
        IndexStatement {
            catalog: catalog.to_string(),
            index: digest::sha256_digest(index),
            version,
            expires,
        }
    }

    fn check(&self) -> Result<(), SignError> {
        if self.catalog.is_empty()
            || self.catalog.len() > FIELD_MAX_BYTES
            || self
                .catalog
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(SignError::InvalidStatementField {
                field: "name",
                value: self.catalog.clone(),
                reason: "a catalog is non-empty, at most 1 KiB, without whitespace or control characters",
            });
        }
        if digest::parse_digest(&self.index).is_none() {
            return Err(SignError::InvalidStatementField {
                field: "digest",
                value: self.index.clone(),
                reason: "not sha256:<64 lowercase hex>",
            });
        }
        Ok(())
    }

    /// The bytes signed.
    pub fn to_text(&self) -> String {
        format!(
            "{INDEX_STATEMENT_HEADER}\ncatalog: {}\nindex: {}\nversion: {}\nexpires: {}\n",
            self.catalog, self.index, self.version, self.expires
        )
    }

    /// The one-line form, the signature's trusted comment.
    pub fn to_trusted_comment(&self) -> String {
        format!(
            "{INDEX_STATEMENT_HEADER} catalog={} index={} version={} expires={}",
            self.catalog, self.index, self.version, self.expires
        )
    }

    /// Reads the one-line form strictly.
    pub fn from_trusted_comment(comment: &str) -> Result<IndexStatement, SignError> {
        let bad = |reason: String| SignError::InvalidStatement { line: 1, reason };
        let rest = comment
            .strip_prefix(INDEX_STATEMENT_HEADER)
            .and_then(|r| r.strip_prefix(' '))
            .ok_or_else(|| bad(format!("expected `{INDEX_STATEMENT_HEADER} …`")))?;
        let parts: Vec<&str> = rest.split(' ').collect();
        let [c, i, v, e] = parts.as_slice() else {
            return Err(bad("expected catalog=, index=, version=, expires=".into()));
        };
        let field = |part: &str, key: &str| {
            part.strip_prefix(key)
                .and_then(|p| p.strip_prefix('='))
                .map(str::to_string)
                .ok_or_else(|| bad(format!("expected `{key}=…`, found {part:?}")))
        };
        let number = |part: &str, key: &str| {
            let text = field(part, key)?;
            // Canonical decimal only: the text signed is the text read.
            if text.is_empty() || (text.len() > 1 && text.starts_with('0')) {
                return Err(bad(format!("{key} {text:?} is not a canonical number")));
            }
            text.parse::<u64>()
                .map_err(|_| bad(format!("{key} {text:?} is not a number")))
        };
        let s = IndexStatement {
            catalog: field(c, "catalog")?,
            index: field(i, "index")?,
            version: number(v, "version")?,
            expires: number(e, "expires")?,
        };
        s.check()?;
        Ok(s)
    }

    /// Signs the statement: the `.minisig` text.
    pub fn sign(&self, secret_key_text: &str, password: Option<&str>) -> Result<String, SignError> {
        self.check()?;
        keys::sign_text(
            &self.to_text(),
            &self.to_trusted_comment(),
            secret_key_text,
            password,
        )
    }
}

/// An index statement that held.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifiedIndex {
    /// The key that signed it.
    pub key_id: String,
    /// What it says.
    pub statement: IndexStatement,
}

/// Checks `minisig_text` (an index statement's signature) against `keyring`, and the index
/// bytes against it, at `now` (Unix seconds), for `catalog`; `highest` is the highest version
/// this client has seen for the catalog (the caller remembers it and stores the new one).
pub fn verify_index(
    index: &[u8],
    minisig_text: &str,
    keyring: &Keyring,
    catalog: &str,
    now: u64,
    highest: Option<u64>,
) -> Result<VerifiedIndex, IndexRefusal> {
    let parsed = minisig::parse_minisig(minisig_text)?;
    if !parsed.prehashed {
        return Err(SignError::LegacySignature {
            key_id: parsed.key_id,
        }
        .into());
    }
    let entry = match keyring.get(&parsed.key_id) {
        None => {
            return Err(SignError::UnknownKey {
                key_id: parsed.key_id,
            }
            .into());
        }
        Some(e) if e.is_revoked() => {
            return Err(SignError::RevokedKey {
                key_id: parsed.key_id,
            }
            .into());
        }
        Some(e) => e,
    };
    let statement = IndexStatement::from_trusted_comment(&parsed.trusted_comment)?;
    // The whole box: the statement's bytes and the global signature over the trusted comment.
    let held = minisign::verify(
        &entry.key,
        &parsed.signature,
        Cursor::new(statement.to_text().as_bytes()),
        true,
        false,
        false,
    );
    if held.is_err() {
        return Err(SignError::TrustedCommentForged {
            key_id: parsed.key_id,
            comment: parsed.trusted_comment,
        }
        .into());
    }
    if statement.catalog != catalog {
        return Err(IndexRefusal::OtherCatalog {
            signed: statement.catalog,
            expected: catalog.to_string(),
        });
    }
    let actual = digest::sha256_digest(index);
    if actual != statement.index {
        return Err(IndexRefusal::Tampered {
            signed: statement.index,
            actual,
        });
    }
    if now >= statement.expires {
        return Err(IndexRefusal::Expired {
            version: statement.version,
            ago: now - statement.expires,
        });
    }
    if let Some(h) = highest
        && statement.version < h
    {
        return Err(IndexRefusal::RolledBack {
            version: statement.version,
            highest: h,
        });
    }
    Ok(VerifiedIndex {
        key_id: parsed.key_id,
        statement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyring_of(public: &str) -> Keyring {
        let mut k = Keyring::new();
        k.add(KeyEntry::new(public, vec!["*".to_string()]).unwrap())
            .unwrap();
        k
    }

    #[test]
    fn a_statement_round_trips_through_its_trusted_comment() {
        let s = IndexStatement::of("skills.example.com", b"{}", 17, 1_767_225_600);
        assert_eq!(
            IndexStatement::from_trusted_comment(&s.to_trusted_comment()).unwrap(),
            s
        );
        for bad in [
            "skillcat-index-statement v1 catalog=a index=sha256:00 version=1 expires=2",
            "skillcat-index-statement v1 catalog=a version=1 expires=2",
            "skillcat-statement v1 catalog=a index=x version=1 expires=2",
            &s.to_trusted_comment().replace("version=17", "version=017"),
            &s.to_trusted_comment().replace("version=17", "version=-1"),
            &format!("{} extra=1", s.to_trusted_comment()),
        ] {
            assert!(IndexStatement::from_trusted_comment(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hostile_indexes_are_refused_by_the_rule_they_break() {
        let (public, secret) = generate_keypair(None).unwrap();
        let (other_public, other_secret) = generate_keypair(None).unwrap();
        let ring = keyring_of(&public);
        let index = br#"{"skills":[]}"#;
        let now = 1_000_000;
        let signed = |s: &IndexStatement, key: &str| s.sign(key, None).unwrap();
        let good = IndexStatement::of("cat", index, 10, now + 60);
        let sig = signed(&good, &secret);
        let ok = verify_index(index, &sig, &ring, "cat", now, Some(10)).unwrap();
        assert_eq!(ok.statement, good);
        assert!(verify_index(index, &sig, &ring, "cat", now, None).is_ok());

        let tampered = verify_index(br#"{"skills":[1]}"#, &sig, &ring, "cat", now, None);
        assert!(
            matches!(tampered, Err(IndexRefusal::Tampered { .. })),
            "{tampered:?}"
        );
        let expired = verify_index(index, &sig, &ring, "cat", now + 60, None);
        assert!(
            matches!(expired, Err(IndexRefusal::Expired { ago: 0, .. })),
            "{expired:?}"
        );
        let rolled = verify_index(index, &sig, &ring, "cat", now, Some(11));
        assert!(
            matches!(
                rolled,
                Err(IndexRefusal::RolledBack {
                    version: 10,
                    highest: 11
                })
            ),
            "{rolled:?}"
        );
        let other = verify_index(index, &sig, &ring, "dog", now, None);
        assert!(
            matches!(other, Err(IndexRefusal::OtherCatalog { .. })),
            "{other:?}"
        );
        let stranger = signed(&good, &other_secret);
        let unknown = verify_index(index, &stranger, &ring, "cat", now, None);
        assert!(
            matches!(
                unknown,
                Err(IndexRefusal::Signature(SignError::UnknownKey { .. }))
            ),
            "{unknown:?}"
        );
        let mut revoked_ring = Keyring::new();
        revoked_ring
            .add(
                KeyEntry::new(&public, vec!["*".to_string()])
                    .unwrap()
                    .with_revoked(true),
            )
            .unwrap();
        let revoked = verify_index(index, &sig, &revoked_ring, "cat", now, None);
        assert!(
            matches!(
                revoked,
                Err(IndexRefusal::Signature(SignError::RevokedKey { .. }))
            ),
            "{revoked:?}"
        );
        // The expiry pushed out by editing the trusted comment: the global signature breaks.
        let forged = sig.replace(
            &format!("expires={}", now + 60),
            &format!("expires={}", now + 6_000_000),
        );
        assert_ne!(forged, sig);
        let forged = verify_index(index, &forged, &ring, "cat", now + 120, None);
        assert!(
            matches!(
                forged,
                Err(IndexRefusal::Signature(
                    SignError::TrustedCommentForged { .. }
                ))
            ),
            "{forged:?}"
        );
        let _ = other_public;
    }
}
