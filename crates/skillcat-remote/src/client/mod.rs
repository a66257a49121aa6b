//! The one HTTP client: every request skillcat sends to a server goes out through a client
//! [`Client::new`] makes — the HTTP and OCI sources, a central registry's API (`publish`, `yank`),
//! embedding providers — under one policy:
//!
//! ```text
//! user agent   skillcat/VERSION
//! timeouts     connect (10 s by default), between two reads of a body, the whole request
//! redirects    none (an API that carries a token), or at most N, never from https to http
//! TLS          rustls with the platform's roots (feature `tls`), plus the CA certificates a
//!              user names (--cacert); without `tls`, extra roots are an error
//! proxies      HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, as reqwest reads them
//! retries      for a caller that may repeat its request: 5xx, 408, 429 and transport errors,
//!              full-jitter exponential backoff capped at 10 s, Retry-After (seconds) honoured
//! ```
//!
//! [`Client`] is the type requests go out through: [`Client::fetch`] reads an answer under the
//! caller's size limit, [`Client::send_json`] sends JSON; a failure is a [`RequestError`] whose
//! kinds (a certificate that does not verify, a transport failure, too large) and the statuses
//! ([`status_error`]) map to the library's error kinds in one place. The loops that repeat a
//! request (the HTTP source's GETs, OCI's) share one retry loop. URLs in messages go through
//! [`redact`], the one function that shows a URL: user names, passwords and query strings are
//! never shown.

use std::time::Duration;

use reqwest::Url;

mod request;
mod retry;

pub(crate) use request::describe;
pub use request::{Answer, Client, RequestError, read_bounded, status_error};
pub(crate) use retry::{Failure, Retry, is_retryable_status, retry_after};

/// The HTTP stack the client is made of: the types its callers name (`Url`, `Method`,
/// `StatusCode`, …), so no other crate depends on it directly.
pub use reqwest;

/// How a client behaves; [`Policy::default`] is what a source uses unless told otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The longest wait for a connection.
    pub connect_timeout: Duration,
    /// The longest wait between two reads of an answer (`None`: no limit but the total).
    pub read_timeout: Option<Duration>,
    /// The longest a whole request may take, body included (`None`: the caller keeps its own
    /// deadline).
    pub timeout: Option<Duration>,
    /// Which redirects are followed.
    pub redirects: Redirects,
    /// PEM certificates (one or several per entry) trusted as roots beside the platform's.
    pub ca_certificates: Vec<Vec<u8>>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Some(Duration::from_secs(30)),
            timeout: None,
            redirects: Redirects::Follow { max: 10 },
            ca_certificates: Vec::new(),
        }
    }
}

/// Which redirects a client follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirects {
    /// None: a 3xx is the answer (an API that sends a token must not send it elsewhere).
    Never,
    /// At most `max`, and never from https to plain http.
    Follow {
        /// The most redirects of one request.
        max: usize,
    },
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// A CA certificate given to trust is not PEM that holds a certificate.
    #[error("a CA certificate to trust is not a PEM certificate: {0}")]
    Certificate(#[source] reqwest::Error),
    /// A CA certificate given to trust holds no `BEGIN CERTIFICATE` block at all.
    #[error("a CA certificate to trust holds no PEM certificate (-----BEGIN CERTIFICATE-----)")]
    NoCertificate,
    /// CA certificates were given to a build without TLS.
    #[error("CA certificates need a skillcat built with the `tls` feature")]
    NoTls,
    /// The HTTP stack refused the configuration.
    #[error("cannot set up the HTTP client: {0}")]
    Build(#[source] reqwest::Error),
}

/// The HTTP stack's client with `policy`: the one place skillcat makes one ([`Client::new`]).
pub(crate) fn build(policy: &Policy) -> Result<reqwest::Client, ClientError> {
    let redirect = match policy.redirects {
        Redirects::Never => reqwest::redirect::Policy::none(),
        Redirects::Follow { max } => reqwest::redirect::Policy::custom(move |attempt| {
            match redirect_refusal(attempt.previous(), attempt.url(), max) {
                Some(why) => attempt.error(why),
                None => attempt.follow(),
            }
        }),
    };
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("skillcat/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(policy.connect_timeout)
        .redirect(redirect);
    if let Some(read) = policy.read_timeout {
        builder = builder.read_timeout(read);
    }
    if let Some(total) = policy.timeout {
        builder = builder.timeout(total);
    }
    builder = add_roots(builder, &policy.ca_certificates)?;
    builder.build().map_err(ClientError::Build)
}

#[cfg(feature = "tls")]
fn add_roots(
    mut builder: reqwest::ClientBuilder,
    pems: &[Vec<u8>],
) -> Result<reqwest::ClientBuilder, ClientError> {
    for pem in pems {
        let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(ClientError::Certificate)?;
        if certs.is_empty() {
            return Err(ClientError::NoCertificate);
        }
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    Ok(builder)
}

#[cfg(not(feature = "tls"))]
fn add_roots(
    builder: reqwest::ClientBuilder,
    pems: &[Vec<u8>],
) -> Result<reqwest::ClientBuilder, ClientError> {
    if pems.is_empty() {
        Ok(builder)
    } else {
        Err(ClientError::NoTls)
    }
}

/// Why TLS refused the server, in plain words, when `e` (or one of its causes) is a failure to
/// verify the server's certificate: a server whose certificate does not verify is not "offline",
/// and no cached copy stands in for it. `None` for every other failure.
pub fn certificate_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        #[cfg(feature = "tls")]
        if let Some(why) = rustls_failure(c) {
            return Some(why);
        }
        // An `io::Error`'s `source()` skips the error it wraps (which may be another
        // `io::Error`, as the TLS stream's is inside the connector's): step into it instead.
        cause = match c
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => c.source(),
        };
    }
    None
}

#[cfg(feature = "tls")]
fn rustls_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rustls::{CertificateError as C, Error as E};
    let cert = match e.downcast_ref::<E>()? {
        E::InvalidCertificate(c) => c,
        E::NoCertificatesPresented => return Some("the server presented no certificate".into()),
        _ => return None,
    };
    Some(
        match cert {
            C::UnknownIssuer => {
                "it is issued by a certificate authority this machine does not trust"
            }
            C::Expired | C::ExpiredContext { .. } => "it has expired",
            C::NotValidYet | C::NotValidYetContext { .. } => "it is not valid yet",
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                "it is not valid for this host name"
            }
            C::Revoked => "it has been revoked",
            C::BadSignature
            | C::UnsupportedSignatureAlgorithmContext { .. }
            | C::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
                "its signature does not verify (an unsupported algorithm, or signed by another key)"
            }
            C::BadEncoding => "it is not a well-formed certificate",
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
                "it is not issued for serving TLS"
            }
            other => return Some(format!("it does not verify ({other:?})")),
        }
        .to_string(),
    )
}

/// A URL as it may be shown: no credentials, no query string.
pub fn redact(url: &Url) -> String {
    let mut u = url.clone();
    if !u.username().is_empty() || u.password().is_some() {
        let _ = u.set_username("***");
        let _ = u.set_password(None);
    }
    let had_query = u.query().is_some();
    u.set_query(None);
    let mut s = u.to_string();
    if had_query {
        // Before any fragment: the fragment (if any) stays at the end.
        match s.find('#') {
            Some(i) => s.insert_str(i, "?…"),
            None => s.push_str("?…"),
        }
    }
    s
}

/// Text meant as a URL that does not parse, as it may be shown: what [`redact`] hides, found
/// by text — anything before an `@` in what would be its authority, and the query.
pub fn unparsed_shown(raw: &str) -> String {
    let (scheme, rest) = match raw.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), raw),
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let fragment = query.find('#').map_or("", |i| &query[i..]);
            format!("{path}?…{fragment}")
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

/// Whether to follow a redirect to `next`, given the URLs visited so far (the first request
/// included): `None` to follow, else why not. Refused: more than `max` redirects (which also
/// ends any loop), and plain http once any step was https (a downgrade would let anyone on
/// the path change what is fetched).
pub(crate) fn redirect_refusal(previous: &[Url], next: &Url, max: usize) -> Option<String> {
    // `previous` holds the original request and every redirect followed so far.
    if previous.len() > max {
        Some(format!("more than {max} redirects"))
    } else if next.scheme() != "https" && previous.iter().any(|u| u.scheme() == "https") {
        Some(format!(
            "refusing a redirect from https to plain http ({})",
            redact(next)
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_credentials_or_queries() {
        let u = Url::parse("https://user:secret@example.com/a/index.json?token=t#frag").unwrap();
        let shown = redact(&u);
        assert!(!shown.contains("secret") && !shown.contains("user") && !shown.contains("token"));
        assert_eq!(shown, "https://***@example.com/a/index.json?…#frag");
        let plain = Url::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(redact(&plain), "http://127.0.0.1:8080/");
    }

    #[test]
    fn text_that_is_no_url_is_shown_without_credentials_or_query() {
        for (raw, shown) in [
            ("http://user:secret@", "http://***@"),
            ("user:secret@h", "***@h"),
            ("ftp://u:p@h/a?token=t#f", "ftp://***@h/a?…#f"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(unparsed_shown(raw), shown, "{raw}");
        }
    }

    #[test]
    fn redirect_policy_limits_hops_and_refuses_downgrades() {
        let u = |s: &str| Url::parse(s).unwrap();
        let chain = |n: usize, scheme: &str| -> Vec<Url> {
            (0..n).map(|i| u(&format!("{scheme}://h/{i}"))).collect()
        };
        // The first redirect: one URL visited so far.
        assert_eq!(
            redirect_refusal(&chain(1, "http"), &u("http://h/x"), 10),
            None
        );
        // Ten redirects are allowed (the original request plus ten hops), the eleventh is not.
        assert_eq!(
            redirect_refusal(&chain(10, "http"), &u("http://h/x"), 10),
            None
        );
        let why = redirect_refusal(&chain(11, "http"), &u("http://h/x"), 10).unwrap();
        assert_eq!(why, "more than 10 redirects");
        // A loop is the same URL again and again: it ends at the limit.
        let looping = vec![u("http://h/loop"); 4];
        assert!(redirect_refusal(&looping, &u("http://h/loop"), 3).is_some());
        assert_eq!(redirect_refusal(&[], &u("http://h/x"), 0), None);
        assert!(redirect_refusal(&chain(1, "http"), &u("http://h/x"), 0).is_some());
        // https → http is refused, at any later step too; http → https and https → https pass.
        let why = redirect_refusal(&[u("https://h/i.json")], &u("http://h/i.json"), 10).unwrap();
        assert!(why.contains("https to plain http"), "{why}");
        let mixed = [u("http://h/a"), u("https://h/b"), u("https://h/c")];
        assert!(redirect_refusal(&mixed, &u("http://h/d"), 10).is_some());
        assert_eq!(
            redirect_refusal(&[u("http://h/a")], &u("https://h/a"), 10),
            None
        );
        assert_eq!(
            redirect_refusal(&[u("https://h/a")], &u("https://cdn/a"), 10),
            None
        );
        // The refusal never shows credentials.
        let why = redirect_refusal(&[u("https://h/a")], &u("http://u:pw@h/a?t=1"), 10).unwrap();
        assert!(!why.contains("pw") && !why.contains("t=1"), "{why}");
    }

    #[test]
    fn a_pem_that_holds_no_certificate_is_refused_and_none_is_fine() {
        assert!(build(&Policy::default()).is_ok());
        let never = Policy {
            redirects: Redirects::Never,
            timeout: Some(Duration::from_secs(1)),
            read_timeout: None,
            ..Policy::default()
        };
        assert!(build(&never).is_ok());
        let bad = Policy {
            ca_certificates: vec![
                b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".to_vec(),
            ],
            ..Policy::default()
        };
        let err = build(&bad).unwrap_err();
        if cfg!(feature = "tls") {
            assert!(matches!(err, ClientError::Certificate(_)), "{err}");
        } else {
            assert!(matches!(err, ClientError::NoTls), "{err}");
        }
        let empty = Policy {
            ca_certificates: vec![b"not a certificate\n".to_vec()],
            ..Policy::default()
        };
        let err = build(&empty).unwrap_err();
        if cfg!(feature = "tls") {
            assert!(matches!(err, ClientError::NoCertificate), "{err}");
        }
    }
}
