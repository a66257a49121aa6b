//! The network side of the HTTP source: one GET with limits, retries and redirect rules.
//!
//! ```text
//! get(url, validators, expected size)
//!   ├─ permit (at most `concurrency` requests in flight); then the deadline (`timeout`,
//!   │  60 s) runs over every attempt and wait, and no retry starts that would end after it
//!   ├─ GET  Accept-Encoding: identity (bytes hashed exactly as served; no decompression)
//!   │       If-None-Match / If-Modified-Since when validators are given
//!   ├─ 304 ─────────────────────────────────────────────▶ NotModified (no body read)
//!   ├─ 5xx, 408, 429, connection error, timeout, cut body ─▶ retry: full-jitter backoff,
//!   │                                                        Retry-After (seconds) honoured
//!   ├─ other 4xx ─────────────────────────────────────────▶ error, never retried
//!   └─ 2xx: Content-Length checked first (limit, expected size), then the body is read in
//!          chunks under a running cap; bytes counted, never trusting Content-Length
//! ```
//!
//! Redirects are followed up to a limit; a redirect from https to plain http is refused. URLs
//! in messages go through [`redact`](crate::client::redact): user names, passwords and query strings are never shown.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::header::{self, HeaderMap};
use reqwest::{StatusCode, Url};
use tokio::sync::Semaphore;

use super::HttpOptions;
pub use crate::client::redact;
use crate::client::{self, Failure, Retry, describe, is_retryable_status, retry_after};
use crate::error::Error;

/// What went wrong with one download (mapped into [`Error`] with one `From`).
#[derive(Debug, thiserror::Error)]
pub(super) enum HttpError {
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: {detail}")]
    Transport { url: String, detail: String },
    /// The server's certificate does not verify: never retried, never answered from the cache.
    #[error("{url}: the server's TLS certificate does not verify: {reason}")]
    Certificate { url: String, reason: String },
    #[error("{url}: larger than the limit of {limit} bytes")]
    TooLarge { url: String, size: u64, limit: u64 },
    #[error("{url}: size mismatch (expected {expected} bytes, got {actual})")]
    Size {
        url: String,
        expected: u64,
        actual: u64,
    },
    #[error("{url}: body cut short (expected {expected} bytes from Content-Length, got {actual})")]
    Truncated {
        url: String,
        expected: u64,
        actual: u64,
    },
    #[error("{what}: digest mismatch (expected {expected}, got {actual})")]
    Digest {
        what: String,
        expected: String,
        actual: String,
    },
    #[error("{what} is not cached in {cache}, and --offline forbids the network")]
    NotCached { what: String, cache: String },
}

impl From<HttpError> for Error {
    fn from(e: HttpError) -> Error {
        use std::io::{Error as IoError, ErrorKind};
        match e {
            HttpError::Status { url, status } => {
                client::status_error(url, status, "the server denies this")
            }
            HttpError::Transport { url, detail } => Error::io(url, IoError::other(detail)),
            HttpError::Certificate { url, reason } => Error::Certificate {
                location: url,
                reason,
            },
            HttpError::TooLarge { url, size, limit } => Error::TooLarge {
                path: url,
                size,
                limit,
            },
            HttpError::Size {
                url,
                expected,
                actual,
            } => Error::io(
                url,
                IoError::new(
                    ErrorKind::InvalidData,
                    format!("size mismatch (expected {expected} bytes, got {actual})"),
                ),
            ),
            HttpError::Truncated {
                url,
                expected,
                actual,
            } => Error::io(
                url,
                IoError::new(
                    ErrorKind::UnexpectedEof,
                    format!(
                        "body cut short (expected {expected} bytes from Content-Length, got {actual})"
                    ),
                ),
            ),
            HttpError::Digest {
                what,
                expected,
                actual,
            } => Error::DigestMismatch {
                what,
                expected,
                actual,
            },
            e @ HttpError::NotCached { .. } => Error::NotFound(e.to_string()),
        }
    }
}

/// Validators of a cached response, for a conditional GET.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// A response worth keeping.
#[derive(Debug, Clone)]
pub(super) struct Body {
    /// The body, decoded when the request allowed gzip and the server used it.
    pub bytes: Bytes,
    /// The URL that answered, after redirects: what relative references in the body resolve
    /// against (RFC 3986 §5.1.3).
    pub url: Url,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub cache_control: Option<String>,
    pub content_type: Option<String>,
}

/// What a GET gave.
#[derive(Debug, Clone)]
pub(super) enum Fetched {
    /// 304: the cached copy is current.
    NotModified { cache_control: Option<String> },
    /// 2xx with its body.
    Full(Body),
}

/// Counters over the life of a source (all requests, retries included).
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub requests: AtomicU64,
    pub not_modified: AtomicU64,
    pub bytes: AtomicU64,
}

/// The HTTP client with its limits.
#[derive(Debug)]
pub(super) struct Fetcher {
    client: client::Client,
    permits: Semaphore,
    retries: u32,
    backoff: Duration,
    max_body: u64,
    deadline: Duration,
    slow_notice: Option<Duration>,
    pub counters: Arc<Counters>,
}

impl Fetcher {
    pub(super) fn new(opts: &HttpOptions, counters: Arc<Counters>) -> Result<Fetcher, Error> {
        let client = client::Client::new(&opts.policy())
            .map_err(|e| Error::other("cannot set up the HTTP client", e))?;
        Ok(Fetcher {
            client,
            permits: Semaphore::new(opts.concurrency.max(1)),
            retries: opts.retries,
            backoff: opts.backoff,
            max_body: opts.max_body,
            deadline: opts.timeout,
            slow_notice: opts.slow_notice,
            counters,
        })
    }

    /// GETs `url`, retrying what is worth retrying. `expected_size`, when known, is checked
    /// against Content-Length before the body is read and against the bytes read after.
    /// With `gzip`, the server may answer `Content-Encoding: gzip`: the body is decoded, and
    /// the decoded size counts against the body limit (artifacts never ask: their bytes are
    /// hashed exactly as served).
    pub(super) async fn get(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        expected_size: Option<u64>,
        accept: &str,
        gzip: bool,
    ) -> Result<Fetched, HttpError> {
        // The deadline runs from when the request may go out (not while it queues for a
        // permit) and covers every attempt and every wait between them.
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let start = tokio::time::Instant::now();
        let deadline = start + self.deadline;
        let shown = redact(url);
        let retry = Retry {
            retries: self.retries,
            backoff: self.backoff,
        };
        let attempts = retry.run(Some(deadline), || {
            self.once(url, validators, expected_size, accept, gzip)
        });
        let mut attempts = std::pin::pin!(tokio::time::timeout_at(deadline, attempts));
        let finished = match self.slow_notice {
            None => attempts.await,
            Some(every) => loop {
                match tokio::time::timeout(every, &mut attempts).await {
                    Ok(r) => break r,
                    Err(_) => eprintln!(
                        "skillcat: still waiting for {shown} ({}s so far; giving up after {}s, see --timeout)",
                        start.elapsed().as_secs(),
                        self.deadline.as_secs_f64()
                    ),
                }
            },
        };
        finished.unwrap_or_else(|_| {
            Err(HttpError::Transport {
                url: shown.clone(),
                detail: format!(
                    "no complete answer within {}s (the deadline for one request, --timeout)",
                    self.deadline.as_secs_f64()
                ),
            })
        })
    }

    /// One attempt of [`get`](Self::get): send, then the status, then the body.
    async fn once(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        expected_size: Option<u64>,
        accept: &str,
        gzip: bool,
    ) -> Result<Fetched, Failure<HttpError>> {
        let shown = redact(url);
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let resp = self
            .request(url, validators, accept, gzip)
            .send()
            .await
            .map_err(|e| sent_failure(&shown, e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let final_url = resp.url().clone();
        if status == StatusCode::NOT_MODIFIED && validators.is_some() {
            self.counters.not_modified.fetch_add(1, Ordering::Relaxed);
            return Ok(Fetched::NotModified {
                cache_control: text(&headers, header::CACHE_CONTROL),
            });
        }
        if !status.is_success() {
            return Err(Failure {
                retry: is_retryable_status(status.as_u16()),
                retry_after: retry_after(&headers),
                error: HttpError::Status {
                    url: shown,
                    status: status.as_u16(),
                },
            });
        }
        let announced = resp.content_length();
        self.check_announced(&shown, announced, expected_size)
            .map_err(Failure::last)?;
        let raw = self
            .read_body(resp, &shown, announced, expected_size)
            .await?;
        let bytes = self
            .finish(&shown, raw, &headers, expected_size, gzip)
            .map_err(Failure::last)?;
        Ok(Fetched::Full(Body {
            bytes,
            url: final_url,
            etag: text(&headers, header::ETAG),
            last_modified: text(&headers, header::LAST_MODIFIED),
            cache_control: text(&headers, header::CACHE_CONTROL),
            content_type: text(&headers, header::CONTENT_TYPE),
        }))
    }

    /// The GET of one attempt: identity (or gzip) encoding, `accept`, the validators.
    fn request(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        accept: &str,
        gzip: bool,
    ) -> reqwest::RequestBuilder {
        let mut req = self
            .client
            .request(reqwest::Method::GET, url.clone())
            .header(
                header::ACCEPT_ENCODING,
                if gzip { "gzip, identity" } else { "identity" },
            )
            .header(header::ACCEPT, accept);
        if let Some(v) = validators {
            if let Some(etag) = &v.etag {
                req = req.header(header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = &v.last_modified {
                req = req.header(header::IF_MODIFIED_SINCE, lm);
            }
        }
        req
    }

    /// The sizes known before the body is read: the expected size and Content-Length, each
    /// against the limit, and against each other.
    fn check_announced(
        &self,
        shown: &str,
        announced: Option<u64>,
        expected_size: Option<u64>,
    ) -> Result<(), HttpError> {
        let limit = self.max_body;
        for size in [expected_size, announced].into_iter().flatten() {
            if size > limit {
                return Err(HttpError::TooLarge {
                    url: shown.to_string(),
                    size,
                    limit,
                });
            }
        }
        if let (Some(expected), Some(len)) = (expected_size, announced)
            && expected != len
        {
            return Err(HttpError::Size {
                url: shown.to_string(),
                expected,
                actual: len,
            });
        }
        Ok(())
    }

    /// The body as it arrives, counted, under a running cap (the expected size, else the
    /// limit); a body that breaks off is worth another try.
    async fn read_body(
        &self,
        mut resp: reqwest::Response,
        shown: &str,
        announced: Option<u64>,
        expected_size: Option<u64>,
    ) -> Result<Bytes, Failure<HttpError>> {
        let limit = self.max_body;
        let cap = expected_size.unwrap_or(limit);
        let mut buf = BytesMut::with_capacity(announced.unwrap_or(0).min(cap) as usize);
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ok(buf.freeze()),
                Err(e) => {
                    let got = buf.len() as u64;
                    let error = match announced {
                        Some(expected) if got < expected => HttpError::Truncated {
                            url: shown.to_string(),
                            expected,
                            actual: got,
                        },
                        _ => HttpError::Transport {
                            url: shown.to_string(),
                            detail: describe(e),
                        },
                    };
                    return Err(Failure {
                        error,
                        retry: true,
                        retry_after: None,
                    });
                }
            };
            self.counters
                .bytes
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            let total = (buf.len() + chunk.len()) as u64;
            if total > cap {
                return Err(Failure::last(match expected_size {
                    Some(expected) => HttpError::Size {
                        url: shown.to_string(),
                        expected,
                        actual: total,
                    },
                    None => HttpError::TooLarge {
                        url: shown.to_string(),
                        size: total,
                        limit,
                    },
                }));
            }
            buf.extend_from_slice(&chunk);
        }
    }

    /// The body read whole: its size against the expected one, then decoded when asked.
    fn finish(
        &self,
        shown: &str,
        raw: Bytes,
        headers: &HeaderMap,
        expected_size: Option<u64>,
        gzip: bool,
    ) -> Result<Bytes, HttpError> {
        let got = raw.len() as u64;
        if let Some(expected) = expected_size
            && got != expected
        {
            return Err(HttpError::Size {
                url: shown.to_string(),
                expected,
                actual: got,
            });
        }
        if !gzip {
            return Ok(raw);
        }
        let limit = self.max_body;
        decode(raw, headers, limit).map_err(|detail| match detail {
            Decoded::TooLarge(size) => HttpError::TooLarge {
                url: shown.to_string(),
                size,
                limit,
            },
            Decoded::Bad(detail) => HttpError::Transport {
                url: shown.to_string(),
                detail,
            },
        })
    }
}

/// A request that could not be sent: a certificate that does not verify (asking again gets
/// the same certificate), else a transport failure, retried unless it was a redirect refused
/// or a request that could not be built.
fn sent_failure(shown: &str, e: reqwest::Error) -> Failure<HttpError> {
    let retry = !e.is_redirect() && !e.is_builder();
    match client::RequestError::of(shown, e) {
        client::RequestError::Certificate { url, reason } => {
            Failure::last(HttpError::Certificate { url, reason })
        }
        client::RequestError::Transport { url, detail } => Failure {
            retry,
            error: HttpError::Transport { url, detail },
            retry_after: None,
        },
        other => Failure::last(HttpError::Transport {
            url: shown.to_string(),
            detail: other.to_string(),
        }),
    }
}

/// Why a body could not be decoded.
enum Decoded {
    /// More than the limit once decoded (how much was decoded when it stopped).
    TooLarge(u64),
    /// Not gzip, or an encoding this client does not read.
    Bad(String),
}

/// The body as sent, decoded when `Content-Encoding` says gzip; at most `limit` decoded bytes.
fn decode(raw: Bytes, headers: &HeaderMap, limit: u64) -> Result<Bytes, Decoded> {
    use std::io::Read;
    let encoding = text(headers, header::CONTENT_ENCODING).unwrap_or_default();
    let encoding = encoding.trim().to_ascii_lowercase();
    match encoding.as_str() {
        "" | "identity" => Ok(raw),
        "gzip" | "x-gzip" => {
            let mut out = Vec::with_capacity((raw.len() * 4).min(limit as usize));
            flate2::read::MultiGzDecoder::new(&raw[..])
                .take(limit + 1)
                .read_to_end(&mut out)
                .map_err(|e| Decoded::Bad(format!("Content-Encoding gzip: {e}")))?;
            if out.len() as u64 > limit {
                return Err(Decoded::TooLarge(out.len() as u64));
            }
            Ok(Bytes::from(out))
        }
        other => Err(Decoded::Bad(format!(
            "Content-Encoding {other:?} is not one this client reads (gzip or identity)"
        ))),
    }
}

fn text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_the_library_kinds() {
        let e: Error = HttpError::Status {
            url: "u".into(),
            status: 404,
        }
        .into();
        assert!(matches!(e, Error::NotFound(_)));
        let e: Error = HttpError::Digest {
            what: "u".into(),
            expected: "sha256:a".into(),
            actual: "sha256:b".into(),
        }
        .into();
        assert_eq!(
            e.to_string(),
            "u: digest mismatch (expected sha256:a, got sha256:b)"
        );
        let e: Error = HttpError::Truncated {
            url: "u".into(),
            expected: 10,
            actual: 4,
        }
        .into();
        assert!(e.to_string().contains("expected 10 bytes"), "{e}");
        // A status keeps its kind: who asks, what is denied, what failed on the server.
        let status = |status| -> Error {
            HttpError::Status {
                url: "u".into(),
                status,
            }
            .into()
        };
        let e = status(500);
        assert!(matches!(e, Error::Remote { status: 500, .. }), "{e:?}");
        assert_eq!(e.to_string(), "u: HTTP 500");
        assert!(e.is_unreachable());
        assert!(matches!(status(401), Error::Unauthenticated { .. }));
        assert!(status(401).to_string().starts_with("u: HTTP 401"));
        assert!(matches!(status(403), Error::PermissionDenied { .. }));
        assert!(status(403).to_string().starts_with("u: HTTP 403"));
        for s in [400, 401, 403, 429] {
            assert!(!status(s).is_unreachable(), "{s}");
        }
        let e: Error = HttpError::Transport {
            url: "u".into(),
            detail: "connection refused".into(),
        }
        .into();
        assert!(e.is_unreachable());
    }
}
