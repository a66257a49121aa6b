//! The signed index statement a catalog publishes beside its index:
//! `/.well-known/agent-skills/index.json.minisig`, a minisign signature whose trusted comment is
//! a [`skillcat_sign::IndexStatement`] (the catalog, the digest of the index bytes, a version
//! that only grows, an expiry). A client holding the catalog's key refuses an index that is not
//! the one signed, a statement past its expiry, or a version lower than one it has seen.

use std::path::Path;
use std::time::Duration;

use skillcat_sign::IndexStatement;

use super::site::AGENT_SKILLS_INDEX;
use crate::error::{Error, Result};

/// Where the statement of the v0.2.0 index is published, beside it.
pub const INDEX_STATEMENT_PATH: &str = ".well-known/agent-skills/index.json.minisig";

/// How a catalog signs its index statement.
#[derive(Clone)]
pub struct IndexSigning {
    /// The catalog's name in the statement (the host it is served at).
    pub catalog: String,
    /// The minisign secret key file's text.
    pub secret_key: String,
    /// Its password, when it is encrypted.
    pub password: Option<String>,
    /// How long a statement holds after it is signed.
    pub valid_for: Duration,
}

impl std::fmt::Debug for IndexSigning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexSigning")
            .field("catalog", &self.catalog)
            .field("valid_for", &self.valid_for)
            .finish_non_exhaustive()
    }
}

/// The signed statement (`.minisig` text) of `index` at `now` (Unix seconds): version `now`,
/// so a later statement has a higher one.
pub fn sign_index(index: &[u8], signing: &IndexSigning, now: u64) -> Result<String> {
    let statement = IndexStatement::of(
        &signing.catalog,
        index,
        now,
        now.saturating_add(signing.valid_for.as_secs()),
    );
    statement
        .sign(&signing.secret_key, signing.password.as_deref())
        .map_err(|e| Error::Invalid(format!("signing the index statement: {e}")))
}

/// Writes the statement of the index exported in `dir` (read back from disk: what is signed is
/// what a host serves), at `now`. Call it after the export.
pub fn write_for_export(dir: &Path, signing: &IndexSigning, now: u64) -> Result<()> {
    let index_path = dir.join(AGENT_SKILLS_INDEX);
    let shown = index_path.display().to_string();
    let index = std::fs::read(&index_path).map_err(|e| Error::io(&shown, e))?;
    let text = sign_index(&index, signing, now)?;
    let dest = dir.join(INDEX_STATEMENT_PATH);
    std::fs::write(&dest, text).map_err(|e| Error::io(dest.display().to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillcat_sign::{IndexRefusal, KeyEntry, Keyring, generate_keypair, verify_index};

    #[test]
    fn an_exported_statement_verifies_and_expires() {
        let (public, secret) = generate_keypair(None).unwrap();
        let mut ring = Keyring::new();
        ring.add(KeyEntry::new(&public, ["*"]).unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join(AGENT_SKILLS_INDEX);
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        std::fs::write(&index, br#"{"skills":[]}"#).unwrap();
        let signing = IndexSigning {
            catalog: "skills.example.com".into(),
            secret_key: secret,
            password: None,
            valid_for: Duration::from_secs(600),
        };
        write_for_export(dir.path(), &signing, 1_000).unwrap();
        let sig = std::fs::read_to_string(dir.path().join(INDEX_STATEMENT_PATH)).unwrap();
        let body = std::fs::read(&index).unwrap();
        let ok = verify_index(&body, &sig, &ring, "skills.example.com", 1_000, None).unwrap();
        assert_eq!((ok.statement.version, ok.statement.expires), (1_000, 1_600));
        assert!(matches!(
            verify_index(&body, &sig, &ring, "skills.example.com", 1_600, None),
            Err(IndexRefusal::Expired { .. })
        ));
    }
}
