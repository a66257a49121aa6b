//! The HTTP plumbing both providers share: one client, URL checks, one JSON POST.

use std::time::Duration;

use skillcat_remote::client::Policy;
use skillcat_remote::client::reqwest::{self, Url};

use super::EmbedError;

/// The largest answer read from a provider (256 MiB: 256 vectors of 4,096 coordinates written
/// as JSON are about 25 MiB).
const MAX_RESPONSE: usize = 256 << 20;

/// The client every provider uses unless given one: the one client's policy with a total
/// timeout of 5 minutes (a large batch on a slow model), no limit between reads.
pub(super) fn client() -> Result<reqwest::Client, EmbedError> {
    provider_client(Vec::new())
}

/// The providers' client, trusting these CA certificates (PEM) besides the system's: for
/// [`with_client`](super::OpenAiCompatible::with_client) when a provider's certificate is
/// issued by a private authority.
pub fn provider_client(ca_certificates: Vec<Vec<u8>>) -> Result<reqwest::Client, EmbedError> {
    skillcat_remote::client::build(&Policy {
        timeout: Some(Duration::from_secs(300)),
        read_timeout: None,
        ca_certificates,
        ..Policy::default()
    })
    .map_err(|e| EmbedError::Invalid(format!("HTTP client: {e}")))
}

/// Parses a provider's base URL: `http` or `https` only.
pub(super) fn parse_base(base: &str) -> Result<Url, EmbedError> {
    let url = Url::parse(base.trim())
        .map_err(|e| EmbedError::Invalid(format!("embedding URL {:?}: {e}", redact_str(base))))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(EmbedError::Invalid(format!(
            "embedding URL {}: not an http(s) URL",
            redact_str(base)
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

/// The URL as it may be shown: without user name or password.
pub(super) fn redact(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string().trim_end_matches('/').to_string()
}

/// A URL that did not parse, shown without anything before an `@` in its authority.
fn redact_str(raw: &str) -> String {
    let (scheme, rest) = raw.split_once("://").unwrap_or(("", raw));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match (authority.rsplit_once('@'), scheme.is_empty()) {
        (Some((_, host)), false) => format!("{scheme}://…@{host}{path}"),
        (Some((_, host)), true) => format!("…@{host}{path}"),
        (None, _) => raw.to_string(),
    }
}

/// POSTs `body` as JSON and returns the parsed JSON answer of a 2xx response.
pub(super) async fn post_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &Url,
    bearer: Option<&str>,
    body: &serde_json::Value,
) -> Result<T, EmbedError> {
    let shown = redact(url);
    let bytes = serde_json::to_vec(body).map_err(|e| EmbedError::Invalid(e.to_string()))?;
    let mut request = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "application/json")
        .body(bytes);
    if let Some(key) = bearer {
        request = request.bearer_auth(key);
    }
    let transport = |e: reqwest::Error| EmbedError::Transport {
        url: shown.clone(),
        // Without the URL reqwest would repeat (it may hold credentials).
        message: e.without_url().to_string(),
    };
    let mut response = request.send().await.map_err(transport)?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > MAX_RESPONSE {
            return Err(EmbedError::Protocol {
                url: shown,
                message: format!("answer larger than {MAX_RESPONSE} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let excerpt: String = text.trim().chars().take(300).collect();
        return Err(EmbedError::Status {
            url: shown,
            status: status.as_u16(),
            body: excerpt,
        });
    }
    serde_json::from_slice(&body).map_err(|e| EmbedError::Protocol {
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
        assert_eq!(redact(&url), "http://h:1/v1");
        let e = parse_base("ftp://user:secret@h").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        let e = parse_base("http://user:secret@").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        let e = parse_base("user:secret@h").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        assert!(parse_base("not a url").is_err());
    }
}
