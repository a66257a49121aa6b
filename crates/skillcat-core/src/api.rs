//! The JSON bodies of skillcat's HTTP API that its server (`skillcat-serve`: the central
//! registry, the catalog's search) and its clients (`skillcat-remote`: `publish`, `yank`,
//! `search`) share, so that what one writes the other reads by the same type.

use serde::{Deserialize, Serialize};

/// An API refusal: `{"errors": [{"code": "…", "detail": "…"}]}`, with the status that says
/// what kind of refusal it is (the shape of the OCI distribution API's errors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What was refused, first the reason that matters most (the server sends one).
    pub errors: Vec<ApiError>,
}

/// One reason of an [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    /// A stable word for programs (`unauthorized`, `not_found`, `audit_failed`, …).
    pub code: String,
    /// The sentence for people.
    pub detail: String,
    /// The audit's findings, when an audit refused the upload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<serde_json::Value>,
}

impl ErrorBody {
    /// A body of one reason.
    pub fn new(code: impl Into<String>, detail: impl Into<String>) -> Self {
        ErrorBody {
            errors: vec![ApiError {
                code: code.into(),
                detail: detail.into(),
                findings: None,
            }],
        }
    }

    /// The first reason's sentence, if any.
    pub fn detail(&self) -> Option<&str> {
        self.errors.first().map(|e| e.detail.as_str())
    }

    /// The body as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("strings and JSON values serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_reads_what_it_writes_and_the_servers_shape() {
        let body = ErrorBody::new("not_found", "no such skill");
        assert_eq!(
            body.to_json(),
            r#"{"errors":[{"code":"not_found","detail":"no such skill"}]}"#
        );
        let read: ErrorBody = serde_json::from_str(&body.to_json()).unwrap();
        assert_eq!(read, body);
        assert_eq!(read.detail(), Some("no such skill"));
        let with: ErrorBody = serde_json::from_str(
            r#"{"errors":[{"code":"audit_failed","detail":"d","findings":[{"rule":"r"}]}]}"#,
        )
        .unwrap();
        assert!(with.errors[0].findings.is_some());
        assert!(with.to_json().contains(r#""findings":[{"rule":"r"}]"#));
    }
}
