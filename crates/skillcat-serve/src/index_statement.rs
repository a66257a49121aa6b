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

/// The signed statement (`.minisig` text) of `index` at `now_ms` (Unix milliseconds): its
/// version is `now_ms`, or one more than `previous` (the version last published) when the clock
/// has not passed it, so versions only grow, strictly, even for two signings in one millisecond
/// or after the clock stepped back. It expires `valid_for` after `now_ms` (in Unix seconds).
pub fn sign_index(
    index: &[u8],
    signing: &IndexSigning,
    now_ms: u64,
    previous: Option<u64>,
) -> Result<String> {
    let version = previous.map_or(now_ms, |p| now_ms.max(p.saturating_add(1)));
    let statement = IndexStatement::of(
        &signing.catalog,
        index,
        version,
        (now_ms / 1_000).saturating_add(signing.valid_for.as_secs()),
    );
    statement
        .sign(&signing.secret_key, signing.password.as_deref())
        .map_err(|e| Error::other("signing the index statement", e))
}

/// Writes the statement of the index exported in `dir` (read back from disk: what is signed is
/// what a host serves), at `now_ms` (Unix milliseconds), with a version above that of the
/// statement already there (an export again into the same directory). Call it after the export.
pub fn write_for_export(dir: &Path, signing: &IndexSigning, now_ms: u64) -> Result<()> {
    let index_path = dir.join(AGENT_SKILLS_INDEX);
    let shown = index_path.display().to_string();
    let index = std::fs::read(&index_path).map_err(|e| Error::io(&shown, e))?;
    let dest = dir.join(INDEX_STATEMENT_PATH);
    let previous = std::fs::read_to_string(&dest)
        .ok()
        .as_deref()
        .and_then(published_version);
    let text = sign_index(&index, signing, now_ms, previous)?;
    std::fs::write(&dest, text).map_err(|e| Error::io(dest.display().to_string(), e))
}

/// The statement a running server publishes for its index, signed when first asked for and
/// again when the index changed or half its validity has passed: a server that runs for
/// weeks never serves an expired one, and its versions only grow.
#[derive(Debug)]
pub struct LiveStatement {
    signing: IndexSigning,
    held: std::sync::Mutex<Option<Held>>,
}

/// The statement last signed.
#[derive(Debug)]
struct Held {
    index: [u8; 32],
    signed_ms: u64,
    version: u64,
    text: String,
}

impl LiveStatement {
    /// A server's statement, signed as `signing` says.
    pub fn new(signing: IndexSigning) -> LiveStatement {
        LiveStatement {
            signing,
            held: std::sync::Mutex::new(None),
        }
    }

    /// The statement of `index` at `now_ms` (Unix milliseconds).
    pub fn text(&self, index: &[u8], now_ms: u64) -> Result<String> {
        let digest = crate::digest::sha256(index);
        let half = u64::try_from(self.signing.valid_for.as_millis() / 2).unwrap_or(u64::MAX);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.as_ref()
            && h.index == digest
            && now_ms >= h.signed_ms
            && now_ms - h.signed_ms < half
        {
            return Ok(h.text.clone());
        }
        let previous = held.as_ref().map(|h| h.version);
        let version = previous.map_or(now_ms, |p| now_ms.max(p.saturating_add(1)));
        let text = sign_index(index, &self.signing, now_ms, previous)?;
        *held = Some(Held {
            index: digest,
            signed_ms: now_ms,
            version,
            text: text.clone(),
        });
        Ok(text)
    }
}

/// The version a statement already published says (unverified: it only raises the next one).
fn published_version(minisig_text: &str) -> Option<u64> {
    let comment = minisig_text
        .lines()
        .find_map(|l| l.strip_prefix("trusted comment: "))?;
    IndexStatement::from_trusted_comment(comment.trim_end())
        .ok()
        .map(|s| s.version)
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
        write_for_export(dir.path(), &signing, 1_000_000).unwrap();
        let read = || std::fs::read_to_string(dir.path().join(INDEX_STATEMENT_PATH)).unwrap();
        let sig = read();
        let body = std::fs::read(&index).unwrap();
        let ok = verify_index(&body, &sig, &ring, "skills.example.com", 1_000, None).unwrap();
        assert_eq!(
            (ok.statement.version, ok.statement.expires),
            (1_000_000, 1_600)
        );
        assert!(matches!(
            verify_index(&body, &sig, &ring, "skills.example.com", 1_600, None),
            Err(IndexRefusal::Expired { .. })
        ));
        // Signed again in the same millisecond, then with the clock stepped back: the version
        // still grows, strictly.
        let version = |now| {
            write_for_export(dir.path(), &signing, now).unwrap();
            IndexStatement::from_trusted_comment(
                read()
                    .lines()
                    .find_map(|l| l.strip_prefix("trusted comment: "))
                    .unwrap(),
            )
            .unwrap()
            .version
        };
        assert_eq!(version(1_000_000), 1_000_001);
        assert_eq!(version(5), 1_000_002);
        assert_eq!(version(2_000_000), 2_000_000);
    }

    #[test]
    fn a_live_statement_is_signed_again_before_it_expires_or_when_the_index_changes() {
        let (_, secret) = generate_keypair(None).unwrap();
        let live = LiveStatement::new(IndexSigning {
            catalog: "c".into(),
            secret_key: secret,
            password: None,
            valid_for: Duration::from_secs(100),
        });
        let version = |text: String| {
            IndexStatement::from_trusted_comment(
                text.lines()
                    .find_map(|l| l.strip_prefix("trusted comment: "))
                    .unwrap(),
            )
            .unwrap()
            .version
        };
        let first = live.text(b"a", 1_000_000).unwrap();
        // Within half its validity, the same statement.
        assert_eq!(live.text(b"a", 1_049_999).unwrap(), first);
        // Past it, or another index, or a clock stepped back: signed again, a higher version.
        let later = version(live.text(b"a", 1_050_000).unwrap());
        assert_eq!(later, 1_050_000);
        assert_eq!(version(live.text(b"b", 1_050_000).unwrap()), 1_050_001);
        assert_eq!(version(live.text(b"b", 3).unwrap()), 1_050_002);
    }
}
