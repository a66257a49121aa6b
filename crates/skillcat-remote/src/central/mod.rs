//! The client of a central registry (`skillcat serve REGISTRY.db --publish`): `publish` and
//! `yank` through its API (`/api/v1/…`, docs/http.md), with a token from a file, the
//! environment or the [`credentials`] `skillcat login` keeps.
//!
//! A token is sent only over https, or over plain http to a loopback address, unless the
//! caller allows it ([`target`]); the API never redirects, so a token never follows one.
//! Answers are read under a limit; a refusal is the server's [`ErrorBody`] sentence with its
//! status ([`CentralError::Refused`]).
//!
//! [`ErrorBody`]: skillcat_core::api::ErrorBody

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use reqwest::{Method, StatusCode};

use crate::client::{Client, ClientError, Policy, Redirects};

pub mod credentials;

pub use credentials::Credentials;
/// The URL type the registry's address is (the HTTP stack's).
pub use reqwest::Url;

/// The environment variable a token may be given in.
pub const TOKEN_ENV: &str = "SKILLCAT_TOKEN";

/// The largest API answer read (its answers are a few lines of JSON).
const MAX_ANSWER: u64 = 1 << 20;

/// The whole of one request when the caller gives no timeout (an upload may be large).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why talking to a central registry failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CentralError {
    /// The registry's address does not parse.
    #[error("{given:?} is not a URL: {reason}")]
    NotAUrl {
        /// The address as given.
        given: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The address is not http or https (or has no host).
    #[error("{given}: the registry is reached over http:// or https://")]
    NotHttp {
        /// The address as given.
        given: String,
    },
    /// The address holds a user name or password: a token is never given in the URL.
    #[error("{given}: a token is not given in the registry's URL")]
    CredentialsInUrl {
        /// The address as given.
        given: String,
    },
    /// A token would cross the network in clear: plain http to a host that is not loopback.
    #[error("refusing to send a token over plain http to {host}: use https://")]
    Insecure {
        /// The host it would go to.
        host: String,
    },
    /// A token that is empty or has blanks or control characters in it.
    #[error("the token is empty or has spaces in it (one line, as `token create` printed it)")]
    BadToken,
    /// A token file that cannot be read.
    #[error("cannot read the token file {}: {source}", path.display())]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The client could not be made (its CA certificates, the HTTP stack).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The request failed on its way: a certificate that does not verify, a transport
    /// failure, an answer too large (the library's kinds).
    #[error(transparent)]
    Request(#[from] crate::error::Error),
    /// A 2xx answer that is not JSON.
    #[error("the registry answered {status} without JSON")]
    NoJson {
        /// Its status.
        status: StatusCode,
    },
    /// The registry refused: its status and its own sentence (the error body's detail, else
    /// the start of what it sent).
    #[error("{status}: {detail}")]
    Refused {
        /// The status.
        status: StatusCode,
        /// What the registry said.
        detail: String,
    },
    /// The credentials file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    CredentialsRead {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The credentials file is not one `login` writes (where, never what: it holds tokens).
    #[error(
        "{} is not a credentials file{}; fix it, or remove it and `skillcat login` again",
        path.display(),
        line.map(|l| format!(" (line {l})")).unwrap_or_default()
    )]
    CredentialsParse {
        /// The file.
        path: PathBuf,
        /// The line the fault is on, when known.
        line: Option<usize>,
    },
    /// The credentials file's `registries` is not a table.
    #[error(
        "{}: `registries` is not a table; fix it, or remove the file and log in again",
        path.display()
    )]
    CredentialsShape {
        /// The file.
        path: PathBuf,
    },
    /// The credentials file cannot be written.
    #[error("cannot write {}: {reason}", path.display())]
    CredentialsWrite {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// A token, and where it came from (for what is said when the registry refuses it). Its
/// secret is never printed (`Debug` hides it).
pub struct Token {
    secret: String,
    /// Where it came from.
    pub from: TokenFrom,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token").field("from", &self.from).finish()
    }
}

/// Where a token came from, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFrom {
    /// `--token-file FILE`.
    File(PathBuf),
    /// `$SKILLCAT_TOKEN`.
    Env,
    /// Kept by `skillcat login`, in this file.
    Login(PathBuf),
}

impl std::fmt::Display for TokenFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenFrom::File(p) => write!(f, "--token-file {}", p.display()),
            TokenFrom::Env => write!(f, "${TOKEN_ENV}"),
            TokenFrom::Login(p) => write!(f, "kept by `skillcat login` in {}", p.display()),
        }
    }
}

impl Token {
    /// A token as read (a file's text, a line of stdin), trimmed; refused when it is empty or
    /// has blanks or control characters in it.
    pub fn new(text: &str, from: TokenFrom) -> Result<Token, CentralError> {
        Ok(Token {
            secret: checked_token(text)?,
            from,
        })
    }

    /// The token in `path` (as `skillcat token create` printed it).
    pub fn from_file(path: &Path) -> Result<Token, CentralError> {
        let text = std::fs::read_to_string(path).map_err(|source| CentralError::TokenFile {
            path: path.to_path_buf(),
            source,
        })?;
        Token::new(&text, TokenFrom::File(path.to_path_buf()))
    }

    /// The token `store` keeps for the registry at `url`, if any.
    pub fn kept(store: &Credentials, url: &Url) -> Result<Option<Token>, CentralError> {
        store
            .token(url)
            .map(|t| Token::new(t, TokenFrom::Login(store.path().to_path_buf())))
            .transpose()
    }
}

/// A token as read, trimmed; refused when it is empty or has blanks or control characters.
pub fn checked_token(text: &str) -> Result<String, CentralError> {
    let token = text.trim();
    if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(CentralError::BadToken);
    }
    Ok(token.to_string())
}

/// Whether `url`'s host is this machine (`localhost`, 127.0.0.0/8, `[::1]`).
pub fn is_loopback(url: &Url) -> bool {
    let host = url.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A registry's address as given: http or https, no user or password in it.
pub fn registry_url(given: &str) -> Result<Url, CentralError> {
    let base = Url::parse(given).map_err(|e| CentralError::NotAUrl {
        given: given.to_string(),
        reason: e.to_string(),
    })?;
    if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
        return Err(CentralError::NotHttp {
            given: given.to_string(),
        });
    }
    if !base.username().is_empty() || base.password().is_some() {
        return Err(CentralError::CredentialsInUrl {
            given: given.to_string(),
        });
    }
    Ok(base)
}

/// The registry's address, checked ([`registry_url`]), and refused when a token would cross
/// the network in clear (plain http to a host that is not loopback) unless `allow_insecure`.
pub fn target(given: &str, allow_insecure: bool) -> Result<Url, CentralError> {
    let base = registry_url(given)?;
    if base.scheme() == "http" && !is_loopback(&base) && !allow_insecure {
        return Err(CentralError::Insecure {
            host: base.host_str().unwrap_or("?").to_string(),
        });
    }
    Ok(base)
}

/// The name a registry's token is kept under: scheme, host, port when not the scheme's
/// default, and path, without a trailing `/` (no query, no fragment). So
/// `https://Skills.example.com:443/team/` and `https://skills.example.com/team` are one.
pub fn registry_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let path = url.path().trim_end_matches('/');
    format!("{}://{host}{port}{path}", url.scheme())
}

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The skill digest the registry keeps for it.
    pub digest: String,
    /// Whether exactly this was already published (nothing changed).
    pub unchanged: bool,
}

/// A client of one central registry: its API, a token and the HTTP client.
#[derive(Debug)]
pub struct Registry {
    api: Url,
    token: Token,
    http: Client,
}

impl Registry {
    /// A client of the registry at `base` (checked by [`target`]) sending `token`, under
    /// `policy` less what an API with a token must not do: no redirect is followed (it could
    /// carry the token elsewhere), and the whole request has a deadline (`policy.timeout`,
    /// else 2 minutes) rather than one between reads.
    pub fn new(mut base: Url, token: Token, policy: &Policy) -> Result<Registry, CentralError> {
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let api = base.join("api/v1/").expect("a relative path joins");
        let policy = Policy {
            timeout: Some(policy.timeout.unwrap_or(DEFAULT_TIMEOUT)),
            read_timeout: None,
            redirects: Redirects::Never,
            ..policy.clone()
        };
        let http = Client::new(&policy)?;
        Ok(Registry { api, token, http })
    }

    /// The token sent.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Publishes `archive` (a skill's `.tar.gz`) as `name@version`, with its detached
    /// signature when given.
    pub async fn publish(
        &self,
        name: &str,
        version: &str,
        archive: Bytes,
        signature: Option<&str>,
    ) -> Result<Published, CentralError> {
        let j = self
            .send(
                Method::PUT,
                &format!("skills/{name}/{version}"),
                Some((archive, signature)),
            )
            .await?;
        Ok(Published {
            digest: j["digest"].as_str().unwrap_or("").to_string(),
            unchanged: j["outcome"].as_str() == Some("unchanged"),
        })
    }

    /// Yanks `name@version` (`undo`: unyanks it); whether anything changed.
    pub async fn yank(&self, name: &str, version: &str, undo: bool) -> Result<bool, CentralError> {
        let (method, action) = if undo {
            (Method::PUT, "unyank")
        } else {
            (Method::DELETE, "yank")
        };
        let j = self
            .send(method, &format!("skills/{name}/{version}/{action}"), None)
            .await?;
        Ok(j["changed"].as_bool().unwrap_or(true))
    }

    /// Sends one API request; `Ok` holds a 2xx answer's JSON.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(Bytes, Option<&str>)>,
    ) -> Result<serde_json::Value, CentralError> {
        let url = self.api.join(path).map_err(|e| CentralError::NotAUrl {
            given: path.to_string(),
            reason: e.to_string(),
        })?;
        // reqwest's errors name the URL, never the headers: the token stays out of them.
        let mut req = self
            .http
            .request(method, url.clone())
            .bearer_auth(&self.token.secret);
        if let Some((bytes, sig)) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/gzip")
                .body(bytes);
            if let Some(sig) = sig {
                use base64::Engine;
                let encoded = base64::engine::general_purpose::STANDARD.encode(sig);
                req = req.header("skillcat-signature", encoded);
            }
        }
        let answer = self
            .http
            .fetch(&url, req, MAX_ANSWER)
            .await
            .map_err(|e| CentralError::Request(e.into()))?;
        let status = answer.status;
        if status.is_success() {
            return serde_json::from_slice(&answer.body)
                .map_err(|_| CentralError::NoJson { status });
        }
        Err(CentralError::Refused {
            status,
            detail: answer.refusal(200),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One registry, however its URL is spelled: case, the default port, a trailing `/`, a
    /// query or fragment; another port or path is another registry.
    #[test]
    fn a_registry_is_named_by_its_normalised_url() {
        let key = |u: &str| registry_key(&Url::parse(u).unwrap());
        for u in [
            "https://Skills.Example.com/team/",
            "https://skills.example.com:443/team",
            "HTTPS://skills.example.com/team?x=1#y",
        ] {
            assert_eq!(key(u), "https://skills.example.com/team", "{u}");
        }
        assert_eq!(key("http://127.0.0.1:8080/"), "http://127.0.0.1:8080");
        assert_eq!(key("http://[::1]:80/"), "http://[::1]");
        assert_ne!(key("https://h:8443/"), key("https://h/"));
        assert_ne!(key("https://h/a"), key("https://h/b"));
    }

    #[test]
    fn addresses_and_tokens_are_checked_before_anything_is_sent() {
        assert!(matches!(
            registry_url("ftp://h/"),
            Err(CentralError::NotHttp { .. })
        ));
        assert!(matches!(
            registry_url("https://u:p@h/"),
            Err(CentralError::CredentialsInUrl { .. })
        ));
        assert!(matches!(
            registry_url("not a url"),
            Err(CentralError::NotAUrl { .. })
        ));
        assert!(matches!(
            target("http://skills.example.com/", false),
            Err(CentralError::Insecure { .. })
        ));
        assert!(target("http://skills.example.com/", true).is_ok());
        for local in ["http://127.0.0.1:1/", "http://localhost/", "http://[::1]/"] {
            assert!(target(local, false).is_ok(), "{local}");
        }
        assert_eq!(checked_token(" t0k\n").unwrap(), "t0k");
        for bad in ["", "  ", "a b", "a\u{7}"] {
            assert!(matches!(checked_token(bad), Err(CentralError::BadToken)));
        }
        let t = Token::new("secret", TokenFrom::Env).unwrap();
        assert!(!format!("{t:?}").contains("secret"));
    }

    /// A server on 127.0.0.1 that answers each of `answers` to one request, in turn, and
    /// hands back the request heads it read.
    async fn answering(
        answers: Vec<(u16, &'static str)>,
    ) -> (Url, tokio::task::JoinHandle<Vec<String>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let server = tokio::spawn(async move {
            let mut heads = Vec::new();
            for (status, body) in answers {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut head = Vec::new();
                while !head.ends_with(b"\r\n\r\n") {
                    let mut byte = [0];
                    if conn.read(&mut byte).await.unwrap() == 0 {
                        break;
                    }
                    head.push(byte[0]);
                }
                heads.push(String::from_utf8_lossy(&head).into_owned());
                let answer = format!(
                    "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                conn.write_all(answer.as_bytes()).await.unwrap();
            }
            heads
        });
        (url, server)
    }

    #[tokio::test]
    async fn answers_are_read_by_their_kind() {
        let refusal = r#"{"errors":[{"code":"unauthorized","detail":"the token is revoked"}]}"#;
        let (url, server) = answering(vec![
            (200, r#"{"changed":false}"#),
            (401, refusal),
            (200, "not json"),
            (500, "  plain words\n"),
        ])
        .await;
        let token = Token::new("t0k", TokenFrom::Env).unwrap();
        let registry = Registry::new(url, token, &Policy::default()).unwrap();
        assert!(!registry.yank("pdf", "1.0.0", false).await.unwrap());
        match registry.yank("pdf", "1.0.0", true).await {
            Err(CentralError::Refused { status, detail }) => {
                assert_eq!(status.as_u16(), 401);
                assert_eq!(detail, "the token is revoked");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            registry.yank("pdf", "1.0.0", false).await,
            Err(CentralError::NoJson { .. })
        ));
        let e = registry.yank("pdf", "1.0.0", false).await.unwrap_err();
        assert_eq!(e.to_string(), "500 Internal Server Error: plain words");
        let heads = server.await.unwrap();
        assert!(
            heads[0].starts_with("DELETE /api/v1/skills/pdf/1.0.0/yank "),
            "{}",
            heads[0]
        );
        assert!(
            heads[1].starts_with("PUT /api/v1/skills/pdf/1.0.0/unyank "),
            "{}",
            heads[1]
        );
        assert!(
            heads[0]
                .to_ascii_lowercase()
                .contains("authorization: bearer t0k")
        );
    }
}
