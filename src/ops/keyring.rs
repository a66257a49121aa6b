//! `skillcat trust …`: the keyring of trusted signing keys, listed, and a public key file read
//! into an entry to trust.

use std::path::Path;

use serde::Serialize;

use crate::sign::{KeyEntry, KeyringFile, SignError, Trusted};

/// A keyring as `trust list` reports it.
#[derive(Debug, Serialize)]
pub struct KeyringListing<'a> {
    /// The keyring file.
    pub keyring: &'a Path,
    /// Its keys, in the file's order.
    pub keys: Vec<KeyRow<'a>>,
}

/// A key of a [`KeyringListing`].
#[derive(Debug, Serialize)]
pub struct KeyRow<'a> {
    /// The key id (16 hex digits).
    pub id: &'a str,
    /// The minisign public key.
    pub public_key: &'a str,
    /// The skill-name patterns it may sign.
    pub scopes: &'a [String],
    /// Whether it is revoked.
    pub revoked: bool,
    /// The note kept with it.
    pub comment: Option<&'a str>,
}

/// Every key of a keyring file.
pub fn listing(file: &KeyringFile) -> KeyringListing<'_> {
    let keys = file.keyring().keys().iter().map(|k| KeyRow {
        id: k.id(),
        public_key: k.public_key(),
        scopes: k.scopes(),
        revoked: k.is_revoked(),
        comment: k.comment(),
    });
    KeyringListing {
        keyring: file.path(),
        keys: keys.collect(),
    }
}

/// Why a public key file gave no entry to trust.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// It could not be read.
    #[error("cannot read the public key {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It holds no public key, or a scope is not a pattern.
    #[error("{}: {source}", path.display())]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: SignError,
    },
}

/// The entry that trusts the minisign public key in the file `key` for `scopes`, with
/// `comment` kept beside it.
pub fn key_entry(
    key: &Path,
    scopes: &[String],
    comment: Option<&str>,
) -> Result<KeyEntry, KeyFileError> {
    let public = std::fs::read_to_string(key).map_err(|source| KeyFileError::Read {
        path: key.into(),
        source,
    })?;
    let entry =
        KeyEntry::new(&public, scopes.iter().cloned()).map_err(|source| KeyFileError::Invalid {
            path: key.into(),
            source,
        })?;
    Ok(match comment {
        Some(c) => entry.with_comment(c.to_string()),
        None => entry,
    })
}

/// What [`trust`] did.
#[derive(Debug)]
pub struct TrustedKey {
    /// The key's id.
    pub id: String,
    /// Every scope it is trusted for now.
    pub scopes: Vec<String>,
    /// Whether the keyring changed (false: it already trusted the key for every scope asked).
    pub changed: bool,
}

/// Why a key was not trusted.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The key is revoked in this keyring: a revoked key is not trusted again.
    #[error("key {0} is revoked")]
    Revoked(String),
    /// The keyring or the entry is not one.
    #[error(transparent)]
    Keyring(SignError),
    /// The keyring could not be written; the old file is intact.
    #[error("cannot write the keyring: {0}")]
    Write(std::io::Error),
}

/// Trusts `entry` in the keyring `file` (a new key added, a known one's scopes widened) and
/// saves it when that changed it, making its folder (private) when `create_dir`.
pub fn trust(
    file: &mut KeyringFile,
    entry: KeyEntry,
    create_dir: bool,
) -> Result<TrustedKey, TrustError> {
    let id = entry.id().to_string();
    let changed = match file.trust(entry).map_err(TrustError::Keyring)? {
        Trusted::Revoked => return Err(TrustError::Revoked(id)),
        Trusted::Already => false,
        Trusted::Added | Trusted::Widened(_) => true,
    };
    if changed {
        file.save(create_dir).map_err(TrustError::Write)?;
    }
    let scopes = file.keyring().get(&id).map(|k| k.scopes().to_vec());
    Ok(TrustedKey {
        id,
        scopes: scopes.unwrap_or_default(),
        changed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_key_is_listed_with_its_scopes_and_comment() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("k").display().to_string();
        let files = crate::sign::KeyFiles::new(&base);
        let id = files.generate(None).unwrap();
        let scopes = ["acme-*".to_string()];
        let entry = key_entry(&files.public, &scopes, Some("ci")).unwrap();
        let ring = tmp.path().join("ring.toml");
        let mut file = KeyringFile::open(&ring).unwrap();
        let trusted = trust(&mut file, entry.clone(), false).unwrap();
        assert!(trusted.changed);
        assert_eq!(trusted.scopes, scopes);
        assert!(ring.is_file(), "saved");
        assert!(!trust(&mut file, entry.clone(), false).unwrap().changed);
        assert!(file.revoke(&trusted.id).unwrap());
        assert!(matches!(
            trust(&mut file, entry, false),
            Err(TrustError::Revoked(_))
        ));
        let json = serde_json::to_value(listing(&file)).unwrap();
        assert_eq!(json["keys"][0]["id"], id.to_string());
        assert_eq!(json["keys"][0]["scopes"][0], "acme-*");
        assert_eq!(json["keys"][0]["comment"], "ci");
        assert_eq!(json["keys"][0]["revoked"], true, "revoked above");
        let missing = tmp.path().join("none.pub");
        assert!(matches!(
            key_entry(&missing, &scopes, None),
            Err(KeyFileError::Read { .. })
        ));
        let not_a_key = tmp.path().join("not.pub");
        std::fs::write(&not_a_key, "hello\n").unwrap();
        assert!(matches!(
            key_entry(&not_a_key, &scopes, None),
            Err(KeyFileError::Invalid { .. })
        ));
    }
}
