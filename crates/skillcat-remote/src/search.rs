//! Reading a served catalog's API (`skillcat serve`): `GET /api/v1/search?q=…&limit=&page=`
//! and `GET /api/v1/skills/NAME`, through the one HTTP client ([`crate::client`]).

use reqwest::{Method, StatusCode, Url};
use serde::{Deserialize, Serialize};

use crate::client::{self, Client, Policy, RequestError};
use crate::error::{Error, Result};

/// The largest answer read from the API (a search page holds at most 100 results; a skill's
/// versions, their digests and signatures, stay well below).
const MAX_ANSWER: u64 = 4 << 20;

/// One skill a search found, under the API's names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "AnsweredResult")]
pub struct SearchResult {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its latest version, when the catalog knows one.
    pub version: Option<String>,
    /// The sha256 of its archive (`sha256:…`, the index's `digest`).
    pub archive_digest: String,
    /// Its skill digest (the tree digest of its files); `None` from a catalog older than it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_digest: Option<String>,
    /// Whether a signature is kept for it (verified or not).
    pub signed: bool,
    /// What the catalog checked: `verified` (a signature verifies against its keyring),
    /// `unverified` or `unsigned`; `None` from a catalog older than the word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
    /// The key whose signature verified, when [`trust`](Self::trust) is `verified`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Its page, absolute (resolved against the catalog's address).
    pub url: String,
}

/// A result as a catalog answers it: `archive_digest`, or from a catalog older than the name
/// only `digest` (the same value, the index's name for it).
#[derive(Deserialize)]
struct AnsweredResult {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    archive_digest: Option<String>,
    #[serde(default)]
    digest: Option<String>,
    #[serde(default)]
    skill_digest: Option<String>,
    #[serde(default)]
    signed: bool,
    #[serde(default)]
    trust: Option<String>,
    #[serde(default)]
    key_id: Option<String>,
    #[serde(default)]
    url: String,
}

impl From<AnsweredResult> for SearchResult {
    fn from(a: AnsweredResult) -> SearchResult {
        SearchResult {
            name: a.name,
            description: a.description,
            version: a.version,
            archive_digest: a.archive_digest.or(a.digest).unwrap_or_default(),
            skill_digest: a.skill_digest,
            signed: a.signed,
            trust: a.trust,
            key_id: a.key_id,
            url: a.url,
        }
    }
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
    /// The page answered (from 1).
    #[serde(default)]
    pub page: usize,
    /// The most results a page holds.
    #[serde(default)]
    pub limit: usize,
}

/// `base` (a site root) as a URL ending in `/`, without query or fragment.
fn site_root(base: &str) -> Result<Url> {
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
    Ok(root)
}

/// An answer of the API: its status, its JSON (when it is JSON) and the detail of its error
/// body (when it has one).
struct Answered {
    status: StatusCode,
    json: Option<serde_json::Value>,
    detail: Option<String>,
}

/// `GET url` (`what` says what for, in errors), through the one client.
async fn get(url: &Url, shown: &str, what: &str, policy: &Policy) -> Result<Answered> {
    let http = Client::new(policy).map_err(|e| Error::Invalid(e.to_string()))?;
    let request = http
        .request(Method::GET, url.clone())
        .header(reqwest::header::ACCEPT, "application/json");
    let answer = http
        .fetch(url, request, MAX_ANSWER)
        .await
        .map_err(|e| match e {
            RequestError::Certificate { reason, .. } => Error::Certificate {
                location: shown.to_string(),
                reason,
            },
            RequestError::TooLarge { .. } => {
                Error::Invalid(format!("{shown}: the {what}'s answer is over 4 MiB"))
            }
            RequestError::Transport { detail, .. } => {
                Error::Invalid(format!("{shown}: the {what} could not be sent: {detail}"))
            }
            e => e.into(),
        })?;
    let detail = if answer.status.is_success() {
        None
    } else {
        answer
            .error_body()
            .and_then(|b| b.detail().map(str::to_string))
    };
    Ok(Answered {
        status: answer.status,
        json: serde_json::from_slice(&answer.body).ok(),
        detail,
    })
}

/// The error of an answer that is not a success: the server's sentence when it has one.
fn refused(a: Answered, shown: String) -> Error {
    match a.detail {
        Some(d) => Error::Invalid(format!("{shown}: {}: {d}", a.status)),
        None => Error::Remote {
            url: shown,
            status: a.status.as_u16(),
        },
    }
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
    let root = site_root(base)?;
    let shown = client::redact(&root);
    let mut url = root.join("api/v1/search").expect("a relative path joins");
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("limit", &limit.to_string())
        .append_pair("page", &page.to_string());
    let answer = get(&url, &shown, "search", policy).await?;
    if !answer.status.is_success() {
        if answer.status == StatusCode::NOT_FOUND && answer.detail.is_none() {
            return Err(Error::Invalid(format!(
                "{shown} has no search API (GET /api/v1/search answered 404): is it a catalog \
                 served by `skillcat serve`? A static export cannot be searched"
            )));
        }
        return Err(refused(answer, shown));
    }
    let mut found: SearchPage = (answer.json)
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| Error::Invalid(format!("{shown}: the search's answer is not its JSON")))?;
    // A catalog older than the fields answered the page and limit asked.
    if found.page == 0 {
        found.page = page;
    }
    if found.limit == 0 {
        found.limit = limit;
    }
    for r in &mut found.results {
        if let Ok(abs) = root.join(&r.url) {
            r.url = abs.to_string();
        }
    }
    Ok(found)
}

/// A skill as `GET /api/v1/skills/NAME` answers it: every version the catalog holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedSkill {
    /// Its name.
    pub name: String,
    /// The latest version's description (else the highest version's).
    #[serde(default)]
    pub description: String,
    /// Its latest version (what a bare name reads), if any is not yanked.
    #[serde(default)]
    pub latest: Option<String>,
    /// Every version, highest first.
    pub versions: Vec<ServedVersion>,
}

/// One version of a [`ServedSkill`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedVersion {
    /// The version.
    pub version: Option<String>,
    /// This version's description (`None` from a catalog older than the field).
    #[serde(default)]
    pub description: Option<String>,
    /// When it was published, RFC 3339 UTC, where the catalog keeps that.
    #[serde(default)]
    pub published: Option<String>,
    /// The same instant in Unix seconds (`None` from a catalog older than the field).
    #[serde(default)]
    pub published_at: Option<i64>,
    /// The name of the token that published it, where the catalog's audit log records it.
    #[serde(default)]
    pub published_by: Option<String>,
    /// Whether it is yanked.
    #[serde(default)]
    pub yanked: bool,
    /// Whether it is the latest.
    #[serde(default)]
    pub latest: bool,
    /// Its skill digest, `sha256:…`.
    pub skill_digest: String,
    /// The sha256 of its archive, when the catalog serves it.
    #[serde(default)]
    pub archive_digest: Option<String>,
    /// The signatures kept for it.
    #[serde(default)]
    pub signatures: Vec<ServedSignature>,
}

/// A signature a catalog keeps for a version, as its API names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedSignature {
    /// The signing key's id.
    #[serde(default)]
    pub key_id: String,
    /// What the catalog checked (`verified`, `not verified`, `not checked`, `unreadable`).
    #[serde(default)]
    pub status: String,
    /// The signature file's text, where the catalog serves it.
    #[serde(default)]
    pub signature: Option<String>,
}

/// Every version of the skill `name` the catalog served at `base` holds
/// (`GET /api/v1/skills/NAME`). A skill it does not serve is [`Error::NotFound`]; a server
/// without the API, or any other refusal, is [`Error::Invalid`] saying so; a certificate that
/// does not verify is [`Error::Certificate`].
pub async fn skill(base: &str, name: &str, policy: &Policy) -> Result<ServedSkill> {
    let root = site_root(base)?;
    let shown = client::redact(&root);
    // One path segment whatever the name holds.
    let url = root
        .join(&format!(
            "api/v1/skills/{}",
            crate::path::percent_encode(name)
        ))
        .map_err(|e| Error::Invalid(format!("{name}: not a name a URL can hold: {e}")))?;
    let answer = get(&url, &shown, "request", policy).await?;
    if !answer.status.is_success() {
        return Err(match (answer.status, &answer.detail) {
            (StatusCode::NOT_FOUND, Some(_)) => Error::NotFound(format!("{name} in {shown}")),
            (StatusCode::NOT_FOUND, None) => Error::Invalid(format!(
                "{shown} has no skills API (GET /api/v1/skills/NAME answered 404): is it a \
                 catalog served by `skillcat serve`? Read a static export as a source instead"
            )),
            _ => refused(answer, shown),
        });
    }
    (answer.json)
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| Error::Invalid(format!("{shown}: the skill's answer is not its JSON")))
}

/// One page of a served registry's change feed (`GET /api/v1/changes?since=SEQ`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedChanges {
    /// The changes after the `since` asked, in commit order.
    pub changes: Vec<ServedChange>,
    /// What to ask from next.
    pub next: i64,
}

/// One entry of a [`ServedChanges`] page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedChange {
    /// Its position in the feed.
    pub seq: i64,
    /// The skill.
    pub name: String,
    /// The version.
    pub version: String,
    /// `publish`, `yank` or `unyank`.
    pub action: String,
    /// When, RFC 3339 UTC.
    #[serde(default)]
    pub at: String,
}

/// The changes after `since` of the registry served at `base` (`GET
/// /api/v1/changes?since=SEQ&limit=N`), in commit order; `None` when it serves no change feed
/// (a server older than the route, a static export).
pub async fn changes(
    base: &str,
    since: i64,
    limit: usize,
    policy: &Policy,
) -> Result<Option<ServedChanges>> {
    let root = site_root(base)?;
    let shown = client::redact(&root);
    let mut url = root.join("api/v1/changes").expect("a relative path joins");
    url.query_pairs_mut()
        .append_pair("since", &since.to_string())
        .append_pair("limit", &limit.to_string());
    let answer = get(&url, &shown, "change feed request", policy).await?;
    if answer.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !answer.status.is_success() {
        return Err(refused(answer, shown));
    }
    (answer.json)
        .and_then(|j| serde_json::from_value(j).ok())
        .map(Some)
        .ok_or_else(|| Error::Invalid(format!("{shown}: the change feed's answer is not its JSON")))
}

/// What a served registry says the audit found in a version ([`findings`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ServedFindings {
    /// It was audited when stored: the findings, a JSON array (maybe empty).
    Audited(serde_json::Value),
    /// It was written without an audit (into the file directly).
    NotAudited,
    /// The server has no findings route (one not serving for publishing, a static export).
    NotServed,
}

/// What the audit found in `name@version` when the registry served at `base` stored it (`GET
/// /api/v1/skills/NAME/VERSION/findings`).
pub async fn findings(
    base: &str,
    name: &str,
    version: &str,
    policy: &Policy,
) -> Result<ServedFindings> {
    let root = site_root(base)?;
    let shown = client::redact(&root);
    let url = root
        .join(&format!(
            "api/v1/skills/{}/{}/findings",
            crate::path::percent_encode(name),
            crate::path::percent_encode(version)
        ))
        .map_err(|e| Error::Invalid(format!("{name}@{version}: not a URL path: {e}")))?;
    let answer = get(&url, &shown, "findings request", policy).await?;
    if answer.status == StatusCode::NOT_FOUND {
        return Ok(ServedFindings::NotServed);
    }
    if !answer.status.is_success() {
        return Err(refused(answer, shown));
    }
    let json = answer.json.unwrap_or_default();
    if json.get("audited").and_then(|a| a.as_bool()) != Some(true) {
        return Ok(ServedFindings::NotAudited);
    }
    Ok(match json.get("findings").filter(|f| f.is_array()) {
        Some(f) => ServedFindings::Audited(f.clone()),
        None => ServedFindings::NotAudited,
    })
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
            archive_digest: String::new(),
            skill_digest: None,
            signed: true,
            trust: None,
            key_id: None,
            url: String::new(),
        };
        assert_eq!(r.trust_word(), "signed");
        r.signed = false;
        assert_eq!(r.trust_word(), "unsigned");
        r.trust = Some("verified".into());
        assert_eq!(r.trust_word(), "verified");
    }

    #[test]
    fn the_archive_digest_is_read_under_either_name_and_printed_under_the_apis() {
        let older: SearchResult =
            serde_json::from_str(r#"{"name": "pdf", "digest": "sha256:aa", "url": "/x/"}"#)
                .unwrap();
        assert_eq!(older.archive_digest, "sha256:aa");
        assert_eq!(older.skill_digest, None);
        let newer: SearchResult = serde_json::from_str(
            r#"{"name": "pdf", "digest": "sha256:aa", "archive_digest": "sha256:aa",
                "skill_digest": "sha256:bb", "url": "/x/"}"#,
        )
        .unwrap();
        let json = serde_json::to_value(&newer).unwrap();
        assert_eq!(json["archive_digest"], "sha256:aa");
        assert_eq!(json["skill_digest"], "sha256:bb");
        assert!(json.get("digest").is_none(), "{json}");
    }
}
