//! Registry credentials and the `WWW-Authenticate` challenge.
//!
//! Credentials come, first found wins, from `SKILLCAT_OCI_USERNAME` / `SKILLCAT_OCI_PASSWORD`,
//! then from the plain `auths` entries of `$DOCKER_CONFIG/config.json` (default
//! `~/.docker/config.json`), matched by registry host (`host:port`, with or without a scheme
//! and a path). Credential helpers (`credsStore`, `credHelpers`) are not run: an entry that
//! names only a helper is reported as such. Credentials are never shown: [`Credentials`]'s
//! `Debug` hides the password.

use std::fmt;
use std::path::PathBuf;

use base64::Engine;

/// The environment variables of [`Credentials::lookup`].
pub const USERNAME_ENV: &str = "SKILLCAT_OCI_USERNAME";
/// See [`USERNAME_ENV`].
pub const PASSWORD_ENV: &str = "SKILLCAT_OCI_PASSWORD";

/// A user name and password (or identity token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
    /// Where they came from, for messages (`SKILLCAT_OCI_USERNAME`, `~/.docker/config.json`).
    pub origin: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .field("origin", &self.origin)
            .finish()
    }
}

impl Credentials {
    /// The credentials for `registry` (`host[:port]`), from the environment, else the Docker
    /// configuration. `None`: anonymous.
    pub fn lookup(registry: &str) -> Option<Credentials> {
        if let (Ok(u), Ok(p)) = (std::env::var(USERNAME_ENV), std::env::var(PASSWORD_ENV))
            && !u.is_empty()
        {
            return Some(Credentials {
                username: u,
                password: p,
                origin: USERNAME_ENV.into(),
            });
        }
        let path = docker_config_path()?;
        let text = std::fs::read_to_string(&path).ok()?;
        from_docker_config(&text, registry, &path.display().to_string())
    }

    /// The `Authorization: Basic …` value.
    pub fn basic(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

/// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker").join("config.json"))
}

/// The plain `auths` entry of a Docker `config.json` for `registry`.
pub fn from_docker_config(text: &str, registry: &str, origin: &str) -> Option<Credentials> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let auths = json.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(key, v)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        let host = host.split('/').next().unwrap_or(host);
        host.eq_ignore_ascii_case(registry).then_some(v)
    })?;
    if let Some(auth) = entry.get("auth").and_then(|a| a.as_str())
        && !auth.is_empty()
    {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .ok()?;
        let raw = String::from_utf8(raw).ok()?;
        let (u, p) = raw.split_once(':')?;
        return Some(Credentials {
            username: u.to_string(),
            password: p.to_string(),
            origin: origin.to_string(),
        });
    }
    let u = entry.get("username")?.as_str()?;
    let p = entry.get("password")?.as_str()?;
    Some(Credentials {
        username: u.to_string(),
        password: p.to_string(),
        origin: origin.to_string(),
    })
}

/// A parsed `WWW-Authenticate` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// `Basic realm="…"`.
    Basic,
    /// `Bearer realm="…",service="…",scope="…"`.
    Bearer {
        /// The token endpoint.
        realm: String,
        /// The `service` parameter, when given.
        service: Option<String>,
        /// The `scope` parameter, when given.
        scope: Option<String>,
    },
}

/// Reads a `WWW-Authenticate` value: its scheme and `key="value"` parameters.
pub fn parse_challenge(value: &str) -> Option<Challenge> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    let params = parse_params(rest);
    let get = |k: &str| {
        params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(Challenge::Bearer {
            realm: get("realm")?,
            service: get("service"),
            scope: get("scope"),
        });
    }
    None
}

/// `k="v", k2=v2` (quoted values may hold commas and escaped quotes).
fn parse_params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            return out;
        }
        let mut val = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => val.extend(chars.next()),
                    '"' => break,
                    c => val.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                val.push(c);
                chars.next();
            }
        }
        out.push((key.trim().to_string(), val.trim().to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("reg".into()),
                scope: Some("repository:a/b:pull,push".into()),
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Negotiate"), None);
        assert_eq!(parse_challenge("Bearer service=x"), None);
    }

    #[test]
    fn docker_config_entries_match_by_host() {
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        let text = format!(
            r#"{{"auths": {{"https://index.docker.io/v1/": {{"auth": "eA=="}},
                "127.0.0.1:5000": {{"auth": "{auth}"}},
                "reg.example": {{"username": "bob", "password": "pw"}},
                "helper.example": {{}}}}, "credsStore": "desktop"}}"#
        );
        let c = from_docker_config(&text, "127.0.0.1:5000", "cfg").unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("alice", "s3cret")
        );
        let c = from_docker_config(&text, "reg.example", "cfg").unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("bob", "pw"));
        assert!(from_docker_config(&text, "helper.example", "cfg").is_none());
        assert!(from_docker_config(&text, "other:5000", "cfg").is_none());
        assert!(!format!("{c:?}").contains("pw"), "Debug hides the password");
    }
}
