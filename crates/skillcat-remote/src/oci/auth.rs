//! Registry credentials and the `WWW-Authenticate` challenge.
//!
//! Credentials are bound to a host and sent to no other. They come, first found wins, from
//! `SKILLCAT_OCI_USERNAME` / `SKILLCAT_OCI_PASSWORD`, used only for the registry named by
//! `SKILLCAT_OCI_REGISTRY` (`host[:port]`, exactly as in the `oci://` reference), then from the
//! plain `auths` entries of `$DOCKER_CONFIG/config.json` (default `~/.docker/config.json`),
//! matched by registry host (`host:port`, with or without a scheme and a path). A bearer token
//! realm gets basic credentials only when it is on the registry's own host, or on a host named
//! in `SKILLCAT_OCI_REALM` (for the environment credentials), or on a host the Docker
//! configuration has an entry for (that entry's). Credential helpers (`credsStore`,
//! `credHelpers`) are not run: an entry that names only a helper is reported as such.
//! Credentials are never shown: [`Credentials`]'s `Debug` hides the password.
//!
//! Hostile table (tests below and in `tests/integration/sources/oci_credentials.rs`):
//!
//! | attempt | answer |
//! |---|---|
//! | a lockfile or reference naming another registry | no credentials sent there |
//! | the same host on another port | another registry: nothing sent |
//! | a token realm on another host | asked without credentials, unless configured |
//! | username and password without `SKILLCAT_OCI_REGISTRY` | sent nowhere; the error says why |

use std::fmt;
use std::path::Path;

use base64::Engine;

/// The environment variables of [`EnvCredentials`].
pub const USERNAME_ENV: &str = "SKILLCAT_OCI_USERNAME";
/// See [`USERNAME_ENV`].
pub const PASSWORD_ENV: &str = "SKILLCAT_OCI_PASSWORD";
/// The one registry (`host[:port]`) the environment credentials are for.
pub const REGISTRY_ENV: &str = "SKILLCAT_OCI_REGISTRY";
/// Token realm hosts (`host[:port]`, comma-separated) on another host than the registry that
/// may also receive the environment credentials (Docker Hub's `auth.docker.io`).
pub const REALM_ENV: &str = "SKILLCAT_OCI_REALM";

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
    /// The credentials for `registry` (`host[:port]`): the environment's when bound to it,
    /// else what the Docker configuration at `docker_config` holds. `None`: anonymous.
    pub fn lookup(registry: &str, docker_config: Option<&Path>) -> Option<Credentials> {
        EnvCredentials::read()
            .for_registry(registry)
            .or_else(|| docker_lookup(docker_config, registry))
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

/// The credentials the Docker configuration at `path` (`config.json`) holds for `host`.
pub fn docker_lookup(path: Option<&Path>, host: &str) -> Option<Credentials> {
    let path = path?;
    let text = std::fs::read_to_string(path).ok()?;
    from_docker_config(&text, host, &path.display().to_string())
}

/// The environment's credentials and the hosts they are bound to, as set.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnvCredentials {
    /// `SKILLCAT_OCI_USERNAME` (empty: unset).
    pub username: String,
    /// `SKILLCAT_OCI_PASSWORD`.
    pub password: Option<String>,
    /// `SKILLCAT_OCI_REGISTRY`, normalised (no scheme, no path, lowercase).
    pub registry: Option<String>,
    /// `SKILLCAT_OCI_REALM`'s hosts, normalised.
    pub realms: Vec<String>,
}

impl fmt::Debug for EnvCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvCredentials")
            .field("username", &self.username)
            .field("registry", &self.registry)
            .field("realms", &self.realms)
            .finish_non_exhaustive()
    }
}

impl EnvCredentials {
    /// Reads the four variables.
    pub fn read() -> EnvCredentials {
        let var = |k| {
            std::env::var(k)
                .ok()
                .filter(|v: &String| !v.trim().is_empty())
        };
        EnvCredentials {
            username: var(USERNAME_ENV).unwrap_or_default(),
            password: std::env::var(PASSWORD_ENV).ok(),
            registry: var(REGISTRY_ENV).map(|r| host_of(&r)),
            realms: var(REALM_ENV)
                .map(|r| {
                    r.split(',')
                        .map(host_of)
                        .filter(|h| !h.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Whether a user name and password are set at all.
    pub fn is_set(&self) -> bool {
        !self.username.is_empty() && self.password.is_some()
    }

    fn credentials(&self) -> Option<Credentials> {
        self.is_set().then(|| Credentials {
            username: self.username.clone(),
            password: self.password.clone().unwrap_or_default(),
            origin: USERNAME_ENV.into(),
        })
    }

    /// The credentials for `registry` when they are bound to it.
    pub fn for_registry(&self, registry: &str) -> Option<Credentials> {
        if self.registry.as_deref()? != host_of(registry) {
            return None;
        }
        self.credentials()
    }

    /// The credentials for the token realm on `realm_host`, another host than `registry`:
    /// only when they are bound to `registry` and `realm_host` is named in
    /// `SKILLCAT_OCI_REALM`.
    pub fn for_realm(&self, registry: &str, realm_host: &str) -> Option<Credentials> {
        let realm_host = host_of(realm_host);
        if !self.realms.contains(&realm_host) {
            return None;
        }
        self.for_registry(registry)
    }

    /// Why credentials that are set were not used for `registry`, when they were not.
    pub fn unused(&self, registry: &str) -> Option<String> {
        if !self.is_set() {
            return None;
        }
        match &self.registry {
            None => Some(format!(
                "{USERNAME_ENV} and {PASSWORD_ENV} are set but {REGISTRY_ENV} is not: environment credentials are sent only to the registry it names (set {REGISTRY_ENV}={registry} to use them here)"
            )),
            Some(bound) if *bound != host_of(registry) => Some(format!(
                "the environment credentials are bound to {REGISTRY_ENV}={bound}, not to {registry}"
            )),
            Some(_) => None,
        }
    }
}

/// `host[:port]` of a registry or realm as written (`https://Reg.example:5000/v2/` →
/// `reg.example:5000`).
pub fn host_of(text: &str) -> String {
    let t = text.trim();
    let t = t
        .strip_prefix("https://")
        .or_else(|| t.strip_prefix("http://"))
        .unwrap_or(t);
    t.split('/').next().unwrap_or(t).to_ascii_lowercase()
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

    fn env(registry: Option<&str>, realms: &[&str]) -> EnvCredentials {
        EnvCredentials {
            username: "alice".into(),
            password: Some("pw".into()),
            registry: registry.map(host_of),
            realms: realms.iter().map(|r| host_of(r)).collect(),
        }
    }

    #[test]
    fn environment_credentials_go_only_to_the_host_they_name() {
        let bound = env(Some("https://Reg.example:5000/"), &[]);
        let got = bound.for_registry("reg.example:5000").unwrap();
        assert_eq!(
            (got.username.as_str(), got.origin.as_str()),
            ("alice", USERNAME_ENV)
        );
        // Hostile table: another host, the same host on another port or none, a look-alike.
        for other in [
            "other.example",
            "reg.example",
            "reg.example:5001",
            "reg.example.evil:5000",
        ] {
            assert_eq!(bound.for_registry(other), None, "{other}");
            assert!(
                bound
                    .unused(other)
                    .unwrap()
                    .contains("bound to SKILLCAT_OCI_REGISTRY=reg.example:5000")
            );
        }
        assert_eq!(bound.unused("reg.example:5000"), None);
        // Unbound: sent nowhere, and said why.
        let unbound = env(None, &[]);
        assert_eq!(unbound.for_registry("reg.example:5000"), None);
        assert!(
            unbound
                .unused("reg.example:5000")
                .unwrap()
                .contains("SKILLCAT_OCI_REGISTRY=reg.example:5000")
        );
        // Nothing set: nothing to say.
        assert_eq!(EnvCredentials::default().unused("x"), None);
        assert_eq!(EnvCredentials::default().for_registry("x"), None);
    }

    #[test]
    fn a_realm_on_another_host_gets_environment_credentials_only_when_named() {
        let plain = env(Some("reg.example"), &[]);
        assert_eq!(plain.for_realm("reg.example", "auth.example"), None);
        let named = env(
            Some("reg.example"),
            &["https://auth.example", "x.example:8443"],
        );
        assert!(named.for_realm("reg.example", "auth.example").is_some());
        assert!(named.for_realm("reg.example", "x.example:8443").is_some());
        assert_eq!(named.for_realm("reg.example", "x.example"), None);
        // Named as a realm, but the credentials are for another registry.
        assert_eq!(named.for_realm("other.example", "auth.example"), None);
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
