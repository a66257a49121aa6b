//! The keyring: trusted keys, each scoped to skill-name patterns, with revocation.

use super::*;

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

pub(super) fn check_scope(pattern: &str) -> Result<(), SignError> {
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
    pub(super) id: String,
    pub(super) public_key: String,
    pub(super) key: PublicKey,
    pub(super) scopes: Vec<String>,
    pub(super) revoked: bool,
    pub(super) comment: Option<String>,
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

    /// The entry as one `[[key]]` table of a keyring file (`revoked` and `comment` only when
    /// set), ending with a line break.
    pub fn to_toml(&self) -> String {
        let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
        let scopes: Vec<String> = self.scopes.iter().map(|s| quote(s)).collect();
        let mut out = format!(
            "[[key]]\nid = {}\npublic_key = {}\nscopes = [{}]\n",
            quote(&self.id),
            quote(&self.public_key),
            scopes.join(", ")
        );
        if self.revoked {
            out.push_str("revoked = true\n");
        }
        if let Some(c) = &self.comment {
            out.push_str(&format!("comment = {}\n", quote(c)));
        }
        out
    }
}

/// Pinned public keys, each scoped to skill-name patterns. See the [module docs](crate) for
/// the TOML format.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    pub(super) keys: Vec<KeyEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeyringFile {
    #[serde(default)]
    pub(super) key: Vec<KeyringFileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeyringFileEntry {
    pub(super) id: Option<String>,
    pub(super) public_key: String,
    pub(super) scopes: Vec<String>,
    #[serde(default)]
    pub(super) revoked: bool,
    pub(super) comment: Option<String>,
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

    /// Marks the key `key_id` revoked: signatures by it are refused from now on (reported as
    /// made by a revoked key, not an unknown one). Returns whether anything changed (`false`
    /// when it was already revoked); a key not in the keyring is [`SignError::UnknownKey`].
    pub fn revoke(&mut self, key_id: &str) -> Result<bool, SignError> {
        let entry = self.entry_mut(key_id)?;
        Ok(!std::mem::replace(&mut entry.revoked, true))
    }

    /// The entry for a key id (ASCII case ignored), or [`SignError::UnknownKey`].
    fn entry_mut(&mut self, key_id: &str) -> Result<&mut KeyEntry, SignError> {
        self.keys
            .iter_mut()
            .find(|k| k.id.eq_ignore_ascii_case(key_id))
            .ok_or_else(|| SignError::UnknownKey {
                key_id: key_id.to_ascii_uppercase(),
            })
    }

    /// Adds `scopes` the key `key_id` lacks (each checked as a pattern). Returns those added;
    /// a key not in the keyring is [`SignError::UnknownKey`].
    pub fn widen(&mut self, key_id: &str, scopes: &[String]) -> Result<Vec<String>, SignError> {
        for scope in scopes {
            check_scope(scope)?;
        }
        let entry = self.entry_mut(key_id)?;
        let mut added = Vec::new();
        for scope in scopes {
            if !entry.scopes.contains(scope) && !added.contains(scope) {
                added.push(scope.clone());
            }
        }
        entry.scopes.extend(added.iter().cloned());
        Ok(added)
    }

    /// The keyring as TOML that [`from_toml_str`](Self::from_toml_str) reads back to the same
    /// entries: one `[[key]]` table each ([`KeyEntry::to_toml`]), in order.
    pub fn to_toml(&self) -> String {
        self.keys
            .iter()
            .map(KeyEntry::to_toml)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Reads a keyring from TOML text.
    pub fn from_toml_str(text: &str) -> Result<Keyring, SignError> {
        Keyring::parse(text, "<string>")
    }

    /// Reads a keyring file.
    pub fn load(path: impl AsRef<Path>) -> Result<Keyring, SignError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SignError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Keyring::parse(&text, &path.display().to_string())
    }

    pub(super) fn parse(text: &str, origin: &str) -> Result<Keyring, SignError> {
        let bad = |reason: String| SignError::InvalidKeyring {
            origin: origin.to_string(),
            reason,
        };
        // A public key where a keyring was expected (`--keyring me.pub`) is a common slip:
        // say what it is rather than how it fails to be TOML.
        if let Ok(key) = parse_public_key(text) {
            return Err(SignError::PublicKeyNotKeyring {
                origin: origin.to_string(),
                key_id: key.key_id,
            });
        }
        let file: KeyringFile = toml::from_str(text).map_err(|e| {
            bad(format!(
                "not a keyring (TOML of [[key]] entries with public_key and scopes): {e}"
            ))
        })?;
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
