//! How the registry's routes answer in JSON, below every route: a body with its length, never
//! cached and never sniffed; an error (the API's `ErrorBody`) with an optional `Retry-After`;
//! and the server's own stderr line.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

/// The `Retry-After` of an answer refused because the database did not answer, in seconds.
pub(crate) const UNAVAILABLE_RETRY: u64 = 2;

/// `body` as the answer, `no-store`.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let text = body.to_string();
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, text.len())
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .body(Body::from(text))
        .expect("valid response")
}

/// An error body as the answer, with `Retry-After: secs` when a retry may succeed.
pub(crate) fn error_response(
    status: StatusCode,
    body: &skillcat_core::api::ErrorBody,
    retry: Option<u64>,
) -> Response {
    let body = serde_json::to_value(body).expect("an error body serializes");
    let mut r = json_response(status, &body);
    if let Some(secs) = retry {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// One stderr line (never a token or a password: only token names are passed here, and a
/// store shows itself without its password).
pub(crate) fn log(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
