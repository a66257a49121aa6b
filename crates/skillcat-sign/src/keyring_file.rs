//! A keyring file as `skillcat trust add|revoke` edit it: read (a file not made yet is an empty
//! keyring), changed, and written back through a temporary file renamed into place.
//!
//! Adding a key appends its `[[key]]` table and keeps the rest of the file as written (its `#`
//! comments too); revoking a key, or widening one's scopes, rewrites the file from its entries
//! ([`Keyring::save`]: the `comment` fields are kept, `#` comments are not).

use super::*;
use skillcat_core::fs::create_private_dir;

/// The file name of the default keyring, beside the user's configuration.
pub const KEYRING_FILE_NAME: &str = "keyring.toml";

/// The first lines of a keyring skillcat writes.
pub const KEYRING_HEADER: &str = "# skillcat keyring: trusted signing keys, each scoped to the skill names it may sign.\n\
     # Managed with `skillcat trust add|list|revoke`; `skillcat verify` reads it.\n";

impl Keyring {
    /// Writes the keyring to `path` as [`KEYRING_HEADER`] and [`to_toml`](Self::to_toml),
    /// through a temporary file in the same folder renamed into place (a reader sees the old
    /// keyring or the new one, never part of one). The file keeps the permissions it had, else
    /// is made readable by all (it holds public keys only).
    pub fn save(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        write_replacing(path.as_ref(), &self.file_text(), false)
    }

    fn file_text(&self) -> String {
        format!("{KEYRING_HEADER}\n{}", self.to_toml())
    }
}

/// What [`KeyringFile::trust`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trusted {
    /// The key was new: its table is appended.
    Added,
    /// The key was there: these scopes were added to it.
    Widened(Vec<String>),
    /// The key was there with every scope asked for: nothing changed.
    Already,
    /// The key is revoked here: a revoked key is not trusted again, nothing changed.
    Revoked,
}

/// A keyring file, read to be changed and saved.
#[derive(Debug, Clone)]
pub struct KeyringFile {
    path: PathBuf,
    text: String,
    keyring: Keyring,
}

impl KeyringFile {
    /// Reads the keyring at `path`; a file that does not exist is an empty keyring (the first
    /// [`trust`](Self::trust) makes it). Errors name the file.
    pub fn open(path: impl Into<PathBuf>) -> Result<KeyringFile, SignError> {
        let path = path.into();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(SignError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let keyring = Keyring::parse(&text, &path.display().to_string())?;
        Ok(KeyringFile {
            path,
            text,
            keyring,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The keys as they are now (with any change not saved yet).
    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    /// Trusts `entry`'s key for its scopes: a new key is appended (the rest of the file kept as
    /// written), a known one gains the scopes it lacks, a revoked one is left revoked. The new
    /// text is read back before it is kept, so what [`save`](Self::save) writes is a keyring
    /// that holds the key.
    pub fn trust(&mut self, entry: KeyEntry) -> Result<Trusted, SignError> {
        let id = entry.id().to_string();
        let (text, outcome) = match self.keyring.get(&id) {
            Some(existing) if existing.is_revoked() => return Ok(Trusted::Revoked),
            Some(_) => {
                let mut ring = self.keyring.clone();
                let added = ring.widen(&id, entry.scopes())?;
                if added.is_empty() {
                    return Ok(Trusted::Already);
                }
                (ring.file_text(), Trusted::Widened(added))
            }
            None => {
                let mut t = if self.text.trim().is_empty() {
                    KEYRING_HEADER.to_string()
                } else {
                    self.text.clone()
                };
                if !t.ends_with('\n') {
                    t.push('\n');
                }
                t.push('\n');
                t.push_str(&entry.to_toml());
                (t, Trusted::Added)
            }
        };
        let origin = self.path.display().to_string();
        let back = Keyring::parse(&text, &origin)?;
        if back.get(&id).is_none() {
            return Err(SignError::InvalidKeyring {
                origin,
                reason: format!("the keyring written would not hold key {id}"),
            });
        }
        self.text = text;
        self.keyring = back;
        Ok(outcome)
    }

    /// Revokes the key `key_id` ([`Keyring::revoke`]); the file is rewritten from its entries
    /// when saved.
    pub fn revoke(&mut self, key_id: &str) -> Result<bool, SignError> {
        let changed = self.keyring.revoke(key_id)?;
        if changed {
            self.text = self.keyring.file_text();
        }
        Ok(changed)
    }

    /// Writes the file as it is now, through a temporary file renamed into place. With
    /// `create_dir`, a missing folder is made first, private (0700: the default keyring's
    /// `~/.config/skillcat`, where no other user may plant a keyring).
    pub fn save(&self, create_dir: bool) -> std::io::Result<()> {
        write_replacing(&self.path, &self.text, create_dir)
    }
}

/// Writes `text` to `path` through a temporary file in the same folder, synced, then renamed
/// into place; the new file keeps the old one's permissions, else 0644.
fn write_replacing(path: &Path, text: &str, create_dir: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if create_dir {
        create_private_dir(dir)?;
    }
    let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode());
    skillcat_core::fs::AtomicWrite::new(mode)
        .durability(skillcat_core::fs::Durability::Durable)
        .write(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entry(scopes: &[&str]) -> KeyEntry {
        let (public, _) = generate_keypair(None).unwrap();
        KeyEntry::new(&public, scopes.iter().map(|s| s.to_string())).unwrap()
    }

    #[test]
    fn a_missing_file_is_an_empty_keyring_and_the_first_key_makes_it_private_dir_included() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("conf/skillcat/keyring.toml");
        let mut file = KeyringFile::open(&path).unwrap();
        assert!(file.keyring().keys().is_empty());
        let e = entry(&["acme-*"]);
        let id = e.id().to_string();
        assert_eq!(file.trust(e).unwrap(), Trusted::Added);
        file.save(true).unwrap();
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(KEYRING_HEADER), "{text}");
        assert!(Keyring::load(&path).unwrap().check(&id, "acme-pdf").is_ok());
    }

    #[test]
    fn adding_keeps_the_comments_widening_and_revoking_rewrite() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("keyring.toml");
        let first = entry(&["a"]);
        std::fs::write(&path, format!("# mine\n{}", first.to_toml())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();

        let mut file = KeyringFile::open(&path).unwrap();
        assert_eq!(file.trust(entry(&["b"])).unwrap(), Trusted::Added);
        file.save(false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640, "the file keeps its permissions");

        let mut file = KeyringFile::open(&path).unwrap();
        let again = KeyEntry::new(first.public_key(), ["a".to_string()]).unwrap();
        assert_eq!(file.trust(again).unwrap(), Trusted::Already);
        let wider = KeyEntry::new(first.public_key(), ["a", "c"]).unwrap();
        assert_eq!(
            file.trust(wider).unwrap(),
            Trusted::Widened(vec!["c".to_string()])
        );
        assert!(file.revoke(first.id()).unwrap());
        assert!(!file.revoke(first.id()).unwrap(), "already revoked");
        file.save(false).unwrap();
        let ring = Keyring::load(&path).unwrap();
        assert!(ring.get(first.id()).unwrap().is_revoked());
        assert_eq!(ring.get(first.id()).unwrap().scopes(), ["a", "c"]);
        assert!(!std::fs::read_to_string(&path).unwrap().contains("# mine"));

        let mut file = KeyringFile::open(&path).unwrap();
        let back = KeyEntry::new(first.public_key(), ["z".to_string()]).unwrap();
        assert_eq!(file.trust(back).unwrap(), Trusted::Revoked);
        assert!(matches!(
            file.revoke("0000000000000000"),
            Err(SignError::UnknownKey { .. })
        ));
    }

    #[test]
    fn a_file_that_is_not_a_keyring_is_named_in_the_error() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("k.toml");
        std::fs::write(&path, "not = [toml").unwrap();
        match KeyringFile::open(&path) {
            Err(SignError::InvalidKeyring { origin, .. }) => {
                assert_eq!(origin, path.display().to_string())
            }
            other => panic!("{other:?}"),
        }
        let (public, _) = generate_keypair(None).unwrap();
        std::fs::write(&path, public).unwrap();
        assert!(matches!(
            KeyringFile::open(&path),
            Err(SignError::PublicKeyNotKeyring { .. })
        ));
    }

    #[test]
    fn save_writes_the_header_and_every_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("k.toml");
        let mut ring = Keyring::new();
        ring.add(entry(&["x"])).unwrap();
        ring.save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        assert_eq!(Keyring::load(&path).unwrap().keys().len(), 1);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with(KEYRING_HEADER)
        );
    }
}
