//! The client type and what every one-shot request shares: sending with TLS failures told
//! apart, reading an answer under a size limit, a JSON body sent, and one mapping of what went
//! wrong to the library's error kinds.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::header::{self, HeaderMap};
use reqwest::{Method, StatusCode, Url};
use skillcat_core::api::ErrorBody;

use super::{ClientError, Policy, build, certificate_failure, redact};
use crate::error::Error;

/// A client made under a [`Policy`]: the one type requests go out through. Cheap to clone
/// (its connections are shared).
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
}

/// An answer read whole: its status, headers and body (at most the limit asked for).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

/// Why one request failed. URLs in it are redacted ([`redact`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server's certificate does not verify: asking again gets the same certificate.
    #[error("{url}: the server's TLS certificate does not verify: {reason}")]
    Certificate {
        /// The URL asked.
        url: String,
        /// What is wrong with the certificate, in plain words.
        reason: String,
    },
    /// Nothing (or not all) came back: a refused connection, a name that did not resolve, a
    /// timeout, a body cut short.
    #[error("{url}: {detail}")]
    Transport {
        /// The URL asked.
        url: String,
        /// What failed, with its causes, without the URL.
        detail: String,
    },
    /// The body stopped arriving for longer than the caller allows between two reads.
    #[error("{url}: the body stalled")]
    Stalled {
        /// The URL asked.
        url: String,
    },
    /// The answer is longer than the limit asked for.
    #[error("{url}: larger than the limit of {limit} bytes")]
    TooLarge {
        /// The URL asked.
        url: String,
        /// The bytes announced or read when it stopped.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

impl RequestError {
    /// The failure of `send` for `url` (shown redacted): a certificate that does not verify,
    /// else a transport failure with its causes.
    pub fn of(url: &str, e: reqwest::Error) -> Self {
        match certificate_failure(&e) {
            Some(reason) => RequestError::Certificate {
                url: url.to_string(),
                reason,
            },
            None => RequestError::Transport {
                url: url.to_string(),
                detail: describe(e),
            },
        }
    }
}

impl From<RequestError> for Error {
    fn from(e: RequestError) -> Error {
        match e {
            RequestError::Certificate { url, reason } => Error::Certificate {
                location: url,
                reason,
            },
            RequestError::Transport { url, detail } => {
                Error::io(url, std::io::Error::other(detail))
            }
            RequestError::Stalled { url } => Error::io(
                url,
                std::io::Error::new(std::io::ErrorKind::TimedOut, "the body stalled"),
            ),
            RequestError::TooLarge { url, size, limit } => Error::TooLarge {
                path: url,
                size,
                limit,
            },
        }
    }
}

/// The one mapping of an unwelcome status to the library's kinds: 404 and 410 are not found,
/// 401 asks for credentials, 403 denies them (`denied` says what), anything else is the
/// server's failure ([`Error::Remote`], unreachable when 5xx).
pub fn status_error(url: String, status: u16, denied: &str) -> Error {
    match status {
        404 | 410 => Error::NotFound(format!("{url} (HTTP {status})")),
        401 => Error::Unauthenticated {
            location: url,
            reason: "HTTP 401: the server asks for credentials".into(),
        },
        403 => Error::PermissionDenied {
            location: url,
            reason: format!("HTTP 403: {denied}"),
        },
        status => Error::Remote { url, status },
    }
}

impl Client {
    /// A client with `policy`.
    pub fn new(policy: &Policy) -> Result<Client, ClientError> {
        build(policy).map(|http| Client { http })
    }

    /// The HTTP stack's client inside, for a caller that drives a request loop of its own (the
    /// HTTP source's conditional GETs, OCI's challenge and answer).
    pub fn inner(&self) -> &reqwest::Client {
        &self.http
    }

    /// A request to build on.
    pub fn request(&self, method: Method, url: Url) -> reqwest::RequestBuilder {
        self.http.request(method, url)
    }

    /// Sends `request` (to `url`, shown redacted) once and reads the answer, whatever its
    /// status, refusing a body over `limit` bytes (by Content-Length first, then by what
    /// arrives).
    pub async fn fetch(
        &self,
        url: &Url,
        request: reqwest::RequestBuilder,
        limit: u64,
    ) -> Result<Answer, RequestError> {
        let shown = redact(url);
        let resp = request
            .send()
            .await
            .map_err(|e| RequestError::of(&shown, e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = read_bounded(resp, &shown, limit, None).await?;
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// Sends `body` as JSON (or nothing) with `method` to `url`, with a bearer token when
    /// given, asking for JSON back; the answer is read as [`fetch`](Self::fetch) reads it.
    pub async fn send_json(
        &self,
        method: Method,
        url: &Url,
        bearer: Option<&str>,
        body: Option<&serde_json::Value>,
        limit: u64,
    ) -> Result<Answer, RequestError> {
        let mut request = self
            .http
            .request(method, url.clone())
            .header(header::ACCEPT, "application/json");
        if let Some(body) = body {
            request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        self.fetch(url, request, limit).await
    }
}

impl From<reqwest::Client> for Client {
    fn from(http: reqwest::Client) -> Self {
        Client { http }
    }
}

impl Answer {
    /// The API's error body, when the answer is one ([`ErrorBody`]).
    pub fn error_body(&self) -> Option<ErrorBody> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The first reason of the API's error body, else the start of the body as text (at most
    /// `chars` characters, trimmed).
    pub fn refusal(&self, chars: usize) -> String {
        match self.error_body().as_ref().and_then(ErrorBody::detail) {
            Some(d) => d.to_string(),
            None => String::from_utf8_lossy(&self.body)
                .trim()
                .chars()
                .take(chars)
                .collect(),
        }
    }
}

/// The body of `resp`, at most `limit` bytes: Content-Length is checked first, then the bytes
/// as they arrive (Content-Length is never trusted alone). With `stall`, a wait for the next
/// bytes longer than that is [`RequestError::Stalled`].
pub async fn read_bounded(
    mut resp: reqwest::Response,
    shown: &str,
    limit: u64,
    stall: Option<Duration>,
) -> Result<Bytes, RequestError> {
    let too_large = |size| RequestError::TooLarge {
        url: shown.to_string(),
        size,
        limit,
    };
    if let Some(len) = resp.content_length()
        && len > limit
    {
        return Err(too_large(len));
    }
    let mut buf = BytesMut::new();
    loop {
        let next = match stall {
            Some(wait) => tokio::time::timeout(wait, resp.chunk())
                .await
                .map_err(|_| RequestError::Stalled {
                    url: shown.to_string(),
                })?,
            None => resp.chunk().await,
        };
        let chunk = next.map_err(|e| RequestError::Transport {
            url: shown.to_string(),
            detail: describe(e),
        })?;
        let Some(chunk) = chunk else {
            return Ok(buf.freeze());
        };
        if (buf.len() + chunk.len()) as u64 > limit {
            return Err(too_large((buf.len() + chunk.len()) as u64));
        }
        buf.extend_from_slice(&chunk);
    }
}

/// A reqwest error as text, without the URL it carries (which may hold credentials), with
/// its chain of causes.
pub(crate) fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_library_kinds() {
        let e = |s| status_error("u".into(), s, "the server denies this");
        assert!(matches!(e(404), Error::NotFound(_)));
        assert!(matches!(e(410), Error::NotFound(_)));
        assert!(matches!(e(401), Error::Unauthenticated { .. }));
        assert!(matches!(e(403), Error::PermissionDenied { .. }));
        assert!(
            e(403)
                .to_string()
                .contains("HTTP 403: the server denies this")
        );
        assert!(matches!(e(500), Error::Remote { status: 500, .. }));
        assert!(e(503).is_unreachable() && !e(429).is_unreachable());
        let cert: Error = RequestError::Certificate {
            url: "u".into(),
            reason: "it has expired".into(),
        }
        .into();
        assert!(matches!(cert, Error::Certificate { .. }));
        let cut: Error = RequestError::Transport {
            url: "u".into(),
            detail: "connection refused".into(),
        }
        .into();
        assert!(cut.is_unreachable());
    }

    #[test]
    fn a_refusal_is_the_error_bodys_detail_else_the_text() {
        let answer = |body: &str| Answer {
            status: StatusCode::BAD_REQUEST,
            headers: HeaderMap::new(),
            body: Bytes::from(body.to_string()),
        };
        let body = ErrorBody::new("bad", "no version").to_json();
        assert_eq!(answer(&body).refusal(200), "no version");
        assert_eq!(answer("  plain words \n").refusal(5), "plain");
    }
}
