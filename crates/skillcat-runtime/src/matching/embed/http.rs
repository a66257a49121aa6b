//! The HTTP plumbing both providers share: one client, URL checks, one JSON POST.

use std::time::Duration;

use skillcat_remote::client::reqwest::{Method, Url};
use skillcat_remote::client::{Client, Policy, RequestError, redact, unparsed_shown};

use super::EmbedError;

/// The largest answer read from a provider (256 MiB: 256 vectors of 4,096 coordinates written
/// as JSON are about 25 MiB).
const MAX_RESPONSE: u64 = 256 << 20;

/// The client every provider uses unless given one: the one client's policy with a total
/// timeout of 5 minutes (a large batch on a slow model), no limit between reads.
pub(super) fn client() -> Result<Client, EmbedError> {
    provider_client(Vec::new())
}

/// The providers' client, trusting these CA certificates (PEM) besides the system's: for
/// [`with_client`](super::OpenAiCompatible::with_client) when a provider's certificate is
/// issued by a private authority.
pub fn provider_client(ca_certificates: Vec<Vec<u8>>) -> Result<Client, EmbedError> {
    Client::new(&Policy {
        timeout: Some(Duration::from_secs(300)),
        read_timeout: None,
        ca_certificates,
        ..Policy::default()
    })
    .map_err(|e| EmbedError::Invalid(format!("HTTP client: {e}")))
}

/// Parses a provider's base URL: `http` or `https` only.
pub(super) fn parse_base(base: &str) -> Result<Url, EmbedError> {
    let url = Url::parse(base.trim()).map_err(|e| {
        EmbedError::Invalid(format!("embedding URL {:?}: {e}", unparsed_shown(base)))
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(EmbedError::Invalid(format!(
            "embedding URL {}: not an http(s) URL",
            unparsed_shown(base)
        )));
    }
    Ok(url)
}

/// `base` with `path` appended (`http://h:1/v1` + `v1/embeddings` → `http://h:1/v1/embeddings`:
/// a base that already ends with the path's first segment is not given it twice).
pub(super) fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let mut prefix = base.path().trim_end_matches('/').to_string();
    let mut rest = path;
    if let Some((first, tail)) = path.split_once('/')
        && prefix.rsplit('/').next() == Some(first)
    {
        rest = tail;
    }
    prefix.push('/');
    prefix.push_str(rest);
    url.set_path(&prefix);
    url
}

/// The provider's base as it names an embedding space (the cache's key, not a display): no
/// user name or password (a key is not part of the space), no trailing `/`.
pub(super) fn space_url(url: &Url) -> String {
    let mut base = url.clone();
    let _ = base.set_username("");
    let _ = base.set_password(None);
    base.to_string().trim_end_matches('/').to_string()
}

/// POSTs `body` as JSON and returns the parsed JSON answer of a 2xx response, read under
/// [`MAX_RESPONSE`].
pub(super) async fn post_json<T: serde::de::DeserializeOwned>(
    client: &Client,
    url: &Url,
    bearer: Option<&str>,
    body: &serde_json::Value,
) -> Result<T, EmbedError> {
    let shown = redact(url);
    let answer = client
        .send_json(Method::POST, url, bearer, Some(body), MAX_RESPONSE)
        .await
        .map_err(|e| match e {
            RequestError::TooLarge { .. } => EmbedError::Protocol {
                url: shown.clone(),
                message: format!("answer larger than {MAX_RESPONSE} bytes"),
            },
            RequestError::Transport { detail, .. } => EmbedError::Transport {
                url: shown.clone(),
                message: detail,
            },
            other => EmbedError::Transport {
                url: shown.clone(),
                message: other.to_string(),
            },
        })?;
    if !answer.status.is_success() {
        let text = String::from_utf8_lossy(&answer.body);
        return Err(EmbedError::Status {
            url: shown,
            status: answer.status.as_u16(),
            body: text.trim().chars().take(300).collect(),
        });
    }
    serde_json::from_slice(&answer.body).map_err(|e| EmbedError::Protocol {
        url: shown,
        message: format!("unexpected answer: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        for (base, path, want) in [
            ("http://h:1", "v1/embeddings", "http://h:1/v1/embeddings"),
            ("http://h:1/", "v1/embeddings", "http://h:1/v1/embeddings"),
            ("http://h:1/v1", "v1/embeddings", "http://h:1/v1/embeddings"),
            (
                "http://h:1/v1/",
                "v1/embeddings",
                "http://h:1/v1/embeddings",
            ),
            (
                "http://h:1/proxy",
                "api/embed",
                "http://h:1/proxy/api/embed",
            ),
            (
                "https://h/openai/v1",
                "v1/embeddings",
                "https://h/openai/v1/embeddings",
            ),
        ] {
            let url = endpoint(&parse_base(base).unwrap(), path);
            assert_eq!(url.as_str(), want, "{base}");
        }
    }

    #[test]
    fn credentials_never_shown() {
        let url = parse_base("http://user:secret@h:1/v1").unwrap();
        assert_eq!(space_url(&url), "http://h:1/v1");
        assert!(!redact(&url).contains("secret"));
        let e = parse_base("ftp://user:secret@h").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        let e = parse_base("http://user:secret@").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        let e = parse_base("user:secret@h").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        assert!(parse_base("not a url").is_err());
    }
}
