//! Searching a served catalog: `GET /api/v1/search?q=…&limit=&page=` of `skillcat serve`,
//! through the one HTTP client ([`crate::client`]).

use reqwest::{Method, Url};
use serde::{Deserialize, Serialize};

use crate::client::{self, Client, Policy, RequestError};
use crate::error::{Error, Result};

/// The largest answer read from a search (a page holds at most 100 results).
const MAX_ANSWER: u64 = 4 << 20;

/// One skill a search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its latest version, when the catalog knows one.
    pub version: Option<String>,
    /// The sha256 of its archive (`sha256:…`, the index's `digest`).
    pub digest: String,
    /// Whether a signature is kept for it (verified or not).
    pub signed: bool,
    /// What the catalog checked: `verified` (a signature verifies against its keyring),
    /// `unverified` or `unsigned`; `None` from a catalog older than the word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
    /// Its page, absolute (resolved against the catalog's address).
    pub url: String,
}

impl SearchResult {
    /// What the catalog checked, in a word: its [`trust`](Self::trust), else (from a catalog
    /// older than the word) whether a signature is kept.
    pub fn trust_word(&self) -> &str {
        match (&self.trust, self.signed) {
            (Some(word), _) => word,
            (None, true) => "signed",
            (None, false) => "unsigned",
        }
    }
}

/// One page of results, best first, and how many skills match in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchPage {
    /// The results of this page.
    pub results: Vec<SearchResult>,
    /// How many skills match in all.
    pub total: usize,
}

/// Searches the catalog served at `base` (a site root, `https://skills.example.com/`) for
/// `query`: `limit` results (1 to 100) of page `page` (from 1). A refusal (400, 404, …) is
/// [`Error::Invalid`] with the server's own sentence, and so is a server that cannot be
/// reached (saying why); a certificate that does not verify is
/// [`Error::Certificate`].
pub async fn search(
    base: &str,
    query: &str,
    page: usize,
    limit: usize,
    policy: &Policy,
) -> Result<SearchPage> {
    let mut root = Url::parse(base)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| Error::Invalid(format!("{base}: not an http:// or https:// URL")))?;
    if !root.path().ends_with('/') {
        let path = format!("{}/", root.path());
        root.set_path(&path);
    }
    root.set_query(None);
    root.set_fragment(None);
    let shown = client::redact(&root);
    let mut url = root.join("api/v1/search").expect("a relative path joins");
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("limit", &limit.to_string())
        .append_pair("page", &page.to_string());
    let http = Client::new(policy).map_err(|e| Error::Invalid(e.to_string()))?;
    let request = http
        .request(Method::GET, url.clone())
        .header(reqwest::header::ACCEPT, "application/json");
    let answer = http
        .fetch(&url, request, MAX_ANSWER)
        .await
        .map_err(|e| match e {
            RequestError::Certificate { reason, .. } => Error::Certificate {
                location: shown.clone(),
                reason,
            },
            RequestError::TooLarge { .. } => {
                Error::Invalid(format!("{shown}: the search's answer is over 4 MiB"))
            }
            RequestError::Transport { detail, .. } => {
                Error::Invalid(format!("{shown}: the search could not be sent: {detail}"))
            }
            e => e.into(),
        })?;
    let status = answer.status;
    let json: Option<serde_json::Value> = serde_json::from_slice(&answer.body).ok();
    if !status.is_success() {
        let detail = answer
            .error_body()
            .and_then(|b| b.detail().map(str::to_string));
        return Err(match (status.as_u16(), detail) {
            (404, None) => Error::Invalid(format!(
                "{shown} has no search API (GET /api/v1/search answered 404): is it a catalog \
                 served by `skillcat serve`? A static export cannot be searched"
            )),
            (_, Some(d)) => Error::Invalid(format!("{shown}: {status}: {d}")),
            (_, None) => Error::Remote {
                url: shown,
                status: status.as_u16(),
            },
        });
    }
    let mut page: SearchPage = json
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| Error::Invalid(format!("{shown}: the search's answer is not its JSON")))?;
    for r in &mut page.results {
        if let Ok(abs) = root.join(&r.url) {
            r.url = abs.to_string();
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trust_word_is_the_catalogs_else_whether_a_signature_is_kept() {
        let mut r = SearchResult {
            name: "pdf".into(),
            description: String::new(),
            version: None,
            digest: String::new(),
            signed: true,
            trust: None,
            url: String::new(),
        };
        assert_eq!(r.trust_word(), "signed");
        r.signed = false;
        assert_eq!(r.trust_word(), "unsigned");
        r.trust = Some("verified".into());
        assert_eq!(r.trust_word(), "verified");
    }
}
