//! The tokens `skillcat login` keeps: one per central registry, as `cargo login` keeps one per
//! registry, in a TOML file the caller names (`credentials.toml` beside the user's
//! configuration), readable by its owner alone (0600), written through a temporary file
//! renamed into place. A registry is named by [`registry_key`](super::registry_key()).

use std::path::{Path, PathBuf};

use reqwest::Url;

use super::{CentralError, registry_key};

/// The file name of the kept tokens, beside the user's configuration.
pub const CREDENTIALS_FILE: &str = "credentials.toml";

/// The first lines of the credentials file.
const HEADER: &str = "# skillcat credentials: a publish token for each central registry, kept by \
`skillcat login URL`\n# and used by `skillcat publish` and `yank`. Readable by you alone; \
`skillcat logout URL` removes one.\n\n";

/// The kept tokens, as read from their file (empty when there is no file yet).
#[derive(Clone)]
pub struct Credentials {
    path: PathBuf,
    table: toml::Table,
}

impl std::fmt::Debug for Credentials {
    // The tokens are never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The tokens kept in `path`; none when there is no such file.
    pub fn load(path: &Path) -> Result<Credentials, CentralError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(CentralError::CredentialsRead {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        // A TOML error quotes the line it is on, which may hold a token: say where, not what.
        let table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| CentralError::CredentialsParse {
                    path: path.to_path_buf(),
                    line: e.span().map(|s| text[..s.start].lines().count().max(1)),
                })?;
        Ok(Credentials {
            path: path.to_path_buf(),
            table,
        })
    }

    /// The file they are kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The token kept for the registry at `url`.
    pub fn token(&self, url: &Url) -> Option<&str> {
        self.table
            .get("registries")
            .and_then(toml::Value::as_table)
            .and_then(|r| r.get(&registry_key(url)))
            .and_then(|e| e.get("token"))
            .and_then(toml::Value::as_str)
    }

    /// Keeps `token` for the registry at `url` (not yet written: [`save`](Self::save));
    /// whether it replaced one.
    pub fn keep(&mut self, url: &Url, token: &str) -> Result<bool, CentralError> {
        let registries = self
            .table
            .entry("registries")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(registries) = registries.as_table_mut() else {
            return Err(CentralError::CredentialsShape {
                path: self.path.clone(),
            });
        };
        let mut entry = toml::Table::new();
        entry.insert("token".into(), toml::Value::String(token.to_string()));
        Ok(registries
            .insert(registry_key(url), toml::Value::Table(entry))
            .is_some())
    }

    /// Forgets the token kept for the registry at `url` (not yet written); whether there was
    /// one.
    pub fn forget(&mut self, url: &Url) -> bool {
        let removed = self
            .table
            .get_mut("registries")
            .and_then(toml::Value::as_table_mut)
            .and_then(|r| r.remove(&registry_key(url)))
            .is_some();
        if self
            .table
            .get("registries")
            .and_then(toml::Value::as_table)
            .is_some_and(toml::Table::is_empty)
        {
            self.table.remove("registries");
        }
        removed
    }

    /// Writes the file: its folder made private (0700) when missing, the file 0600, through a
    /// temporary file synced and renamed into place (a crash leaves the old file or the new).
    pub fn save(&self) -> Result<(), CentralError> {
        let failed = |reason: String| CentralError::CredentialsWrite {
            path: self.path.clone(),
            reason,
        };
        let text = format!(
            "{HEADER}{}",
            toml::to_string(&self.table).map_err(|e| failed(e.to_string()))?
        );
        write_private(&self.path, &text).map_err(|e| failed(e.to_string()))
    }
}

/// `text` into `path`, readable by its owner alone, its missing folders made 0700.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    skillcat_core::fs::create_private_dir(dir)?;
    // 0600 from the moment the temporary file exists, synced before it replaces the old one.
    skillcat_core::fs::AtomicWrite::new(0o600)
        .durability(skillcat_core::fs::Durability::Durable)
        .write(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_kept_forgotten_and_written_privately() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/credentials.toml");
        let url = Url::parse("https://Skills.example.com:443/team/").unwrap();
        let mut c = Credentials::load(&path).unwrap();
        assert_eq!(c.token(&url), None);
        assert!(!c.keep(&url, "t1").unwrap());
        assert!(c.keep(&url, "t2").unwrap());
        c.save().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let again = Credentials::load(&path).unwrap();
        let other_spelling = Url::parse("https://skills.example.com/team").unwrap();
        assert_eq!(again.token(&other_spelling), Some("t2"));
        let mut c = again;
        assert!(c.forget(&url));
        assert!(!c.forget(&url));
        c.save().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# skillcat credentials") && !text.contains("registries"));
    }

    #[test]
    fn a_broken_file_is_refused_naming_the_line_not_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        std::fs::write(&path, "# ok\n[registries]\n\"x\" = { token = \"secret\n").unwrap();
        let e = Credentials::load(&path).unwrap_err().to_string();
        assert!(e.contains("is not a credentials file (line 3)"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        std::fs::write(&path, "registries = 1\n").unwrap();
        let mut c = Credentials::load(&path).unwrap();
        let url = Url::parse("https://h/").unwrap();
        assert!(matches!(
            c.keep(&url, "t"),
            Err(CentralError::CredentialsShape { .. })
        ));
    }
}
