//! Publish tokens: who may publish into (or yank from, or read the audit log of) a central
//! registry, and which skill names.
//!
//! A token is `skc_` followed by 64 hex digits: 256 random bits from the operating system,
//! shown once when it is made. The token file keeps only its `sha256:` hash, next to a name,
//! name scopes (globs as in a keyring: `*` any run of characters, `?` one), rights and the
//! creation time:
//!
//! ```toml
//! [[token]]
//! name = "ci"
//! hash = "sha256:1f3a…"
//! scopes = ["acme-*"]
//! can = ["publish", "yank"]
//! created = 2026-12-01T18:00:00Z
//! # revoked = true       (set by `skillcat token revoke`; the token is refused from then on)
//! ```
//!
//! **Why a plain sha256.** A slow password hash (scrypt, argon2) exists to make guessing a
//! *low-entropy* secret from its hash expensive. A token is 256 uniformly random bits: no
//! dictionary holds it and no number of sha256 evaluations finds it, so a fast hash gives the
//! same protection to a leaked token file and keeps every request cheap (crates.io stores its
//! API tokens the same way). What the file must not be is *writable* by others, since a write
//! can add a token: it is written mode 0600 through a renamed temporary file.
//!
//! [`Tokens::authenticate`] hashes the presented token and compares it with every stored hash
//! without stopping early, so the time taken says nothing about which hash, or how much of it,
//! matched.

use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::sign::glob_match;

/// The prefix of every token (makes a leaked token easy to recognise and to scan for).
pub const TOKEN_PREFIX: &str = "skc_";

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Right {
    /// Publish new versions.
    Publish,
    /// Yank and unyank versions.
    Yank,
    /// Read the audit log (the entries of the names its scopes match).
    Audit,
    /// Use the MCP server over HTTP (`skillcat mcp --http --tokens`): every skill it serves.
    Mcp,
}

impl Right {
    /// Every right, in order.
    pub const ALL: [Right; 4] = [Right::Publish, Right::Yank, Right::Audit, Right::Mcp];

    /// The right's name in the token file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Right::Publish => "publish",
            Right::Yank => "yank",
            Right::Audit => "audit",
            Right::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Right {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Right {
    type Err = TokenError;

    fn from_str(s: &str) -> Result<Right, TokenError> {
        Right::ALL
            .into_iter()
            .find(|r| r.as_str() == s.trim())
            .ok_or_else(|| TokenError::UnknownRight(s.to_string()))
    }
}

/// Why a token file or a token operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token file could not be read.
    #[error("cannot read the token file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The token file is not a token file.
    #[error("{origin} is not a valid token file: {reason}")]
    Invalid {
        /// The file (or `<string>`).
        origin: String,
        /// What is wrong, naming the entry.
        reason: String,
    },
    /// A token name outside the rules.
    #[error(
        "invalid token name {0:?}: use 1 to 64 ASCII letters, digits, '.', '_' or '-' \
         (the name is what the audit log records)"
    )]
    InvalidName(String),
    /// A scope pattern that no skill name could match.
    #[error("invalid scope {0:?}: a skill-name pattern has no whitespace or control characters")]
    InvalidScope(String),
    /// A token needs at least one scope and one right.
    #[error("a token needs at least one {0}")]
    Missing(&'static str),
    /// An unknown right.
    #[error("unknown right {0:?}: the rights are publish, yank, audit and mcp")]
    UnknownRight(String),
    /// The name is taken (revoked names stay taken, so the audit log stays unambiguous).
    #[error("a token named {0:?} already exists{1}")]
    Exists(String, &'static str),
    /// No token of that name.
    #[error("no token named {0:?}")]
    NotFound(String),
    /// The system's random number generator failed.
    #[error("cannot draw random bytes for a token: {0}")]
    Random(std::io::Error),
}

/// One token as the file holds it: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenEntry {
    name: String,
    hash: [u8; 32],
    scopes: Vec<String>,
    rights: Vec<Right>,
    created: u64,
    revoked: bool,
}

impl TokenEntry {
    /// The token's name (what logs and the audit log record).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The skill-name patterns the token may write.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// What the token may do.
    pub fn rights(&self) -> &[Right] {
        &self.rights
    }

    /// When the token was made (Unix seconds).
    pub fn created(&self) -> u64 {
        self.created
    }

    /// Whether the token has been revoked.
    pub fn is_revoked(&self) -> bool {
        self.revoked
    }

    /// The stored hash, `sha256:<hex>`.
    pub fn hash(&self) -> String {
        format!("sha256:{}", crate::digest::to_hex(self.hash))
    }

    /// Whether one of the scopes matches the skill `name`.
    pub fn allows(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| glob_match(s, name))
    }

    /// Whether the token has `right`.
    pub fn can(&self, right: Right) -> bool {
        self.rights.contains(&right)
    }

    fn to_toml(&self) -> String {
        let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
        let list = |items: Vec<String>| items.join(", ");
        let mut out = format!(
            "[[token]]\nname = {}\nhash = {}\nscopes = [{}]\ncan = [{}]\ncreated = {}\n",
            quote(&self.name),
            quote(&self.hash()),
            list(self.scopes.iter().map(|s| quote(s)).collect()),
            list(self.rights.iter().map(|r| quote(r.as_str())).collect()),
            format_utc(self.created)
        );
        if self.revoked {
            out.push_str("revoked = true\n");
        }
        out
    }
}

/// The result of [`Tokens::authenticate`] when it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthError<'a> {
    /// No stored hash matches (or the text is not shaped like a token).
    Unknown,
    /// The token was revoked; its entry.
    Revoked(&'a TokenEntry),
}

/// The tokens of one token file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    entries: Vec<TokenEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    token: Vec<FileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    name: String,
    hash: String,
    scopes: Vec<String>,
    can: Vec<String>,
    created: toml::value::Datetime,
    #[serde(default)]
    revoked: bool,
}

/// The first lines of a token file.
const HEADER: &str = "# skillcat publish tokens: only the sha256 of each token is kept here.\n\
    # Managed with `skillcat token create|list|revoke`; `skillcat serve --publish --tokens` reads it.\n";

impl Tokens {
    /// No tokens (every request is refused).
    pub fn new() -> Tokens {
        Tokens::default()
    }

    /// Every entry, revoked ones included, in file order.
    pub fn entries(&self) -> &[TokenEntry] {
        &self.entries
    }

    /// Reads a token file.
    pub fn load(path: impl AsRef<Path>) -> Result<Tokens, TokenError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Tokens::parse(&text, &path.display().to_string())
    }

    /// Reads a token file, or no tokens when the file does not exist yet (what `token create`
    /// starts from).
    pub fn load_or_new(path: impl AsRef<Path>) -> Result<Tokens, TokenError> {
        match Tokens::load(path) {
            Err(TokenError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(Tokens::new())
            }
            other => other,
        }
    }

    /// Writes the token file ([`to_toml`](Self::to_toml)) through a temporary file in the same
    /// folder, synced and renamed into place, readable by its owner only (0600) whatever the
    /// file had: it holds only hashes, but who may publish is nobody else's to read.
    pub fn save(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        // 0600 from the moment the temporary file exists; synced with its folder: a token
        // file is configuration.
        skillcat_core::fs::AtomicWrite::new(0o600)
            .durability(skillcat_core::fs::Durability::Durable)
            .write(path.as_ref(), self.to_toml().as_bytes())
    }

    /// Reads token-file text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Tokens, TokenError> {
        let bad = |reason: String| TokenError::Invalid {
            origin: origin.to_string(),
            reason,
        };
        let file: File = toml::from_str(text).map_err(|e| {
            bad(format!(
                "expected [[token]] tables with name, hash, scopes, can and created: {e}"
            ))
        })?;
        let mut tokens = Tokens::new();
        for (i, raw) in file.token.into_iter().enumerate() {
            let at = |e: String| bad(format!("[[token]] #{}: {e}", i + 1));
            let hash = crate::digest::parse_digest(&raw.hash).ok_or_else(|| {
                at(format!(
                    "hash {:?} is not sha256: and 64 lowercase hex digits",
                    raw.hash
                ))
            })?;
            let rights = raw
                .can
                .iter()
                .map(|r| r.parse::<Right>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| at(e.to_string()))?;
            let created = unix_seconds(&raw.created).ok_or_else(|| {
                at(format!(
                    "created {} is not a UTC date and time (YYYY-MM-DDTHH:MM:SSZ)",
                    raw.created
                ))
            })?;
            let entry = TokenEntry {
                name: raw.name,
                hash,
                scopes: raw.scopes,
                rights,
                created,
                revoked: raw.revoked,
            };
            check_entry(&entry).map_err(|e| at(e.to_string()))?;
            if tokens.find(&entry.name).is_some() {
                return Err(at(format!("the name {:?} appears twice", entry.name)));
            }
            if tokens.entries.iter().any(|e| e.hash == entry.hash) {
                return Err(at(format!(
                    "{} has the hash of an earlier entry",
                    entry.name
                )));
            }
            tokens.entries.push(entry);
        }
        Ok(tokens)
    }

    /// The file text: a header and one `[[token]]` table per entry; [`parse`](Self::parse)
    /// reads it back to the same entries.
    pub fn to_toml(&self) -> String {
        let tables: Vec<String> = self.entries.iter().map(TokenEntry::to_toml).collect();
        format!("{HEADER}\n{}", tables.join("\n"))
    }

    /// The entry named `name`.
    pub fn find(&self, name: &str) -> Option<&TokenEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Makes a new token named `name` with `scopes` and `rights`, adds its entry (created
    /// `now`, Unix seconds) and returns the token: the only time it exists in the clear.
    pub fn create(
        &mut self,
        name: &str,
        scopes: &[String],
        rights: &[Right],
        now: u64,
    ) -> Result<String, TokenError> {
        let mut rights = rights.to_vec();
        rights.sort();
        rights.dedup();
        let mut entry = TokenEntry {
            name: name.to_string(),
            hash: [0; 32],
            scopes: scopes.to_vec(),
            rights,
            created: now,
            revoked: false,
        };
        check_entry(&entry)?;
        if let Some(old) = self.find(name) {
            let why = if old.revoked {
                " (revoked; names are not reused so the audit log stays unambiguous)"
            } else {
                ""
            };
            return Err(TokenError::Exists(name.to_string(), why));
        }
        let mut secret = [0u8; 32];
        fill_random(&mut secret)?;
        let token = format!("{TOKEN_PREFIX}{}", crate::digest::to_hex(secret));
        entry.hash = crate::digest::sha256(token.as_bytes());
        self.entries.push(entry);
        Ok(token)
    }

    /// Marks the token `name` revoked; `Ok(false)` when it already was.
    pub fn revoke(&mut self, name: &str) -> Result<bool, TokenError> {
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.name == name)
            .ok_or_else(|| TokenError::NotFound(name.to_string()))?;
        let was = entry.revoked;
        entry.revoked = true;
        Ok(!was)
    }

    /// The entry whose hash is the sha256 of `presented`. Every stored hash is compared in
    /// full, whatever matches, so timing reveals nothing about the stored hashes.
    pub fn authenticate(&self, presented: &str) -> Result<&TokenEntry, AuthError<'_>> {
        let digest = crate::digest::sha256(presented.as_bytes());
        let mut found = None;
        for entry in &self.entries {
            if constant_time_eq(&digest, &entry.hash) {
                found = Some(entry);
            }
        }
        match found {
            Some(entry) if entry.revoked => Err(AuthError::Revoked(entry)),
            Some(entry) => Ok(entry),
            None => Err(AuthError::Unknown),
        }
    }
}

fn check_entry(entry: &TokenEntry) -> Result<(), TokenError> {
    let name_ok = (1..=64).contains(&entry.name.len())
        && entry
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !name_ok {
        return Err(TokenError::InvalidName(entry.name.clone()));
    }
    if entry.scopes.is_empty() {
        return Err(TokenError::Missing("scope"));
    }
    if let Some(bad) = entry
        .scopes
        .iter()
        .find(|s| s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(TokenError::InvalidScope(bad.clone()));
    }
    if entry.rights.is_empty() {
        return Err(TokenError::Missing("right (publish, yank, audit or mcp)"));
    }
    Ok(())
}

/// Equality of two digests that always looks at every byte.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn fill_random(buf: &mut [u8]) -> Result<(), TokenError> {
    let mut filled = 0;
    while filled < buf.len() {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(TokenError::Random(e.into())),
        }
    }
    Ok(())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the civil-calendar algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix seconds.
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn unix_seconds(dt: &toml::value::Datetime) -> Option<u64> {
    let (date, time) = (dt.date?, dt.time?);
    // Only UTC (`Z` or `+00:00`) is written; accept what a person would type for it.
    match dt.offset {
        Some(toml::value::Offset::Z) => {}
        Some(toml::value::Offset::Custom { minutes: 0 }) => {}
        _ => return None,
    }
    let days = days_from_civil(
        i64::from(date.year),
        i64::from(date.month),
        i64::from(date.day),
    );
    let secs = days * 86_400
        + i64::from(time.hour) * 3600
        + i64::from(time.minute) * 60
        + i64::from(time.second.unwrap_or(0));
    u64::try_from(secs).ok()
}

/// Why a change to a token file was not made.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read, or is not a token file.
    #[error(transparent)]
    Read(TokenError),
    /// The change was refused (a name taken, a scope or right that is not one, no such
    /// token); the file is as it was.
    #[error(transparent)]
    Refused(TokenError),
    /// The changed file could not be written; the old one is intact.
    #[error("cannot write the token file {}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// `skillcat token create`: adds a token named `name` to the token file `path` (created when
/// missing, 0600), created `now` (Unix seconds), and saves it. Returns the token, the only time
/// it exists in the clear, and its entry.
pub fn create_in_file(
    path: &Path,
    name: &str,
    scopes: &[String],
    rights: &[Right],
    now: u64,
) -> Result<(String, TokenEntry), TokenFileError> {
    let mut tokens = Tokens::load_or_new(path).map_err(TokenFileError::Read)?;
    let token = tokens
        .create(name, scopes, rights, now)
        .map_err(TokenFileError::Refused)?;
    save_to(&tokens, path)?;
    let entry = tokens.find(name).cloned().expect("the entry just created");
    Ok((token, entry))
}

/// `skillcat token revoke`: revokes the token named `name` in the token file `path` and saves
/// the file when that changed anything. Returns whether it did (`false`: already revoked).
pub fn revoke_in_file(path: &Path, name: &str) -> Result<bool, TokenFileError> {
    let mut tokens = Tokens::load(path).map_err(TokenFileError::Read)?;
    let changed = tokens.revoke(name).map_err(TokenFileError::Refused)?;
    if changed {
        save_to(&tokens, path)?;
    }
    Ok(changed)
}

fn save_to(tokens: &Tokens, path: &Path) -> Result<(), TokenFileError> {
    tokens.save(path).map_err(|source| TokenFileError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_created_token_authenticates_and_only_its_hash_is_written() {
        let mut tokens = Tokens::new();
        let token = tokens
            .create("ci", &scopes(&["acme-*"]), &[Right::Publish], 1_764_612_000)
            .unwrap();
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(token.len(), TOKEN_PREFIX.len() + 64);
        let text = tokens.to_toml();
        assert!(!text.contains(&token[TOKEN_PREFIX.len()..]), "{text}");
        let back = Tokens::parse(&text, "t").unwrap();
        assert_eq!(back, tokens);
        let entry = back.authenticate(&token).unwrap();
        assert_eq!(entry.name(), "ci");
        assert!(entry.allows("acme-pdf") && !entry.allows("other"));
        assert!(entry.can(Right::Publish) && !entry.can(Right::Yank));
        assert_eq!(back.authenticate("skc_00"), Err(AuthError::Unknown));
        // One character off is unknown.
        let mut wrong = token.clone();
        wrong.pop();
        wrong.push(if token.ends_with('0') { '1' } else { '0' });
        assert_eq!(back.authenticate(&wrong), Err(AuthError::Unknown));
    }

    #[test]
    fn two_tokens_differ_and_names_are_not_reused() {
        let mut tokens = Tokens::new();
        let a = tokens
            .create("a", &scopes(&["*"]), &[Right::Yank], 0)
            .unwrap();
        let b = tokens
            .create("b", &scopes(&["*"]), &[Right::Yank], 0)
            .unwrap();
        assert_ne!(a, b);
        assert!(matches!(
            tokens.create("a", &scopes(&["*"]), &[Right::Yank], 0),
            Err(TokenError::Exists(..))
        ));
        assert!(tokens.revoke("a").unwrap());
        assert!(!tokens.revoke("a").unwrap());
        assert!(matches!(tokens.authenticate(&a), Err(AuthError::Revoked(e)) if e.name() == "a"));
        assert_eq!(tokens.authenticate(&b).unwrap().name(), "b");
        assert!(matches!(
            tokens.create("a", &scopes(&["*"]), &[Right::Yank], 0),
            Err(TokenError::Exists(_, why)) if why.contains("revoked")
        ));
        assert!(matches!(tokens.revoke("zz"), Err(TokenError::NotFound(_))));
    }

    #[test]
    fn bad_entries_are_refused_with_the_reason() {
        let mut tokens = Tokens::new();
        for (name, sc, rights) in [
            ("", vec!["*"], vec![Right::Publish]),
            ("a b", vec!["*"], vec![Right::Publish]),
            ("ok", vec![], vec![Right::Publish]),
            ("ok", vec!["a b"], vec![Right::Publish]),
            ("ok", vec!["*"], vec![]),
        ] {
            assert!(tokens.create(name, &scopes(&sc), &rights, 0).is_err());
        }
        assert!(tokens.entries().is_empty());
        for text in [
            "[[token]]\nname = \"a\"\n",
            "[[token]]\nname = \"a\"\nhash = \"sha256:00\"\nscopes = [\"*\"]\ncan = [\"publish\"]\ncreated = 2026-01-01T00:00:00Z\n",
            "[[token]]\nname = \"a\"\nhash = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\nscopes = [\"*\"]\ncan = [\"delete\"]\ncreated = 2026-01-01T00:00:00Z\n",
            "[[token]]\nname = \"a\"\nhash = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\nscopes = [\"*\"]\ncan = [\"publish\"]\ncreated = 2026-01-01\n",
            "[[token]]\nname = \"a\"\nhash = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\nscopes = [\"*\"]\ncan = [\"publish\"]\ncreated = 2026-01-01T00:00:00Z\nextra = 1\n",
        ] {
            let err = Tokens::parse(text, "f.toml").unwrap_err().to_string();
            assert!(err.contains("f.toml"), "{err}");
        }
    }

    #[test]
    fn dates_round_trip() {
        for secs in [0, 951_782_400, 1_764_612_345, 4_102_444_800] {
            let text = format_utc(secs);
            let dt: toml::value::Datetime = text.parse().unwrap();
            assert_eq!(unix_seconds(&dt), Some(secs), "{text}");
        }
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn save_is_private_and_load_or_new_starts_from_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("tokens.toml");
        let mut tokens = Tokens::load_or_new(&path).unwrap();
        assert!(tokens.entries().is_empty());
        tokens
            .create("ci", &scopes(&["acme-*"]), &[Right::Publish], 0)
            .unwrap();
        // A file others could read is made private by the save.
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        tokens.save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(Tokens::load_or_new(&path).unwrap(), tokens);
        std::fs::write(&path, "[[token]]\nname = 1\n").unwrap();
        assert!(matches!(
            Tokens::load_or_new(&path),
            Err(TokenError::Invalid { .. })
        ));
    }

    #[test]
    fn tokens_are_created_and_revoked_in_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("tokens.toml");
        let (token, entry) =
            create_in_file(&path, "ci", &scopes(&["a*"]), &[Right::Yank], 7).unwrap();
        assert_eq!((entry.name(), entry.created()), ("ci", 7));
        assert!(Tokens::load(&path).unwrap().authenticate(&token).is_ok());
        assert!(matches!(
            create_in_file(&path, "ci", &scopes(&["a*"]), &[Right::Yank], 8),
            Err(TokenFileError::Refused(TokenError::Exists(..)))
        ));
        assert!(revoke_in_file(&path, "ci").unwrap());
        assert!(!revoke_in_file(&path, "ci").unwrap(), "already revoked");
        assert!(Tokens::load(&path).unwrap().authenticate(&token).is_err());
        assert!(matches!(
            revoke_in_file(&path, "nope"),
            Err(TokenFileError::Refused(TokenError::NotFound(_)))
        ));
        assert!(matches!(
            revoke_in_file(&tmp.path().join("missing.toml"), "ci"),
            Err(TokenFileError::Read(TokenError::Io { .. }))
        ));
        let no_dir = tmp.path().join("no/such/tokens.toml");
        assert!(matches!(
            create_in_file(&no_dir, "ci", &scopes(&["a*"]), &[Right::Yank], 0),
            Err(TokenFileError::Write { .. })
        ));
    }
}
