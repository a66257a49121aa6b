//! The live parts of the catalog: the search page and the JSON API (`/api/v1/search`,
//! `/api/v1/skills/NAME`). Everything else is a page rendered into the site.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, RawQuery};
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};
use skillcat_core::api::ErrorBody;

use super::pages::{
    Trust, layout, pager, signature_status, skill_row, version_dir_ok, versions_of,
};
use super::{HTML, SiteSearch, TermSearch};
use crate::site::{Site, SiteSkill};

/// What gives the site as it is now (a registry's is swapped after each publish).
pub type CurrentSite = Arc<dyn Fn() -> Arc<Site> + Send + Sync>;

/// The most results one request may ask for.
pub const MAX_LIMIT: usize = 100;
/// Results when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 20;
/// The deepest page one may ask for.
pub const MAX_PAGE: usize = 1000;
/// The longest query read, in characters (the rest is ignored).
pub const MAX_QUERY: usize = 500;

/// `router` with the catalog's live routes: `GET /search` (and `/search/`) and, under
/// `/api/v1`, `GET /search` and `GET /skills/{name}`. `api` is the router nested at
/// `/api/v1` (where the publishing API may already be); both are returned, `api` to nest.
pub fn catalog_routes<S>(
    router: Router<S>,
    api: Router<S>,
    current: CurrentSite,
) -> (Router<S>, Router<S>)
where
    S: Clone + Send + Sync + 'static,
{
    let (a, b, c) = (current.clone(), current.clone(), current);
    let page = move |RawQuery(q): RawQuery| {
        let current = a.clone();
        async move { search_page(current(), q.as_deref().unwrap_or("")).await }
    };
    let router = router
        .route("/search", get(page.clone()))
        .route("/search/", get(page));
    let api = api
        .route(
            "/search",
            get(move |RawQuery(q): RawQuery| {
                let current = b.clone();
                async move { search_api(current(), q.as_deref().unwrap_or("")).await }
            }),
        )
        .route(
            "/skills/{name}",
            get(move |UrlPath(name): UrlPath<String>| {
                let current = c.clone();
                async move { skill_api(&current(), &name) }
            }),
        );
    (router, api)
}

/// A JSON answer.
pub(crate) fn json_answer(status: StatusCode, body: &Value) -> Response {
    let text = body.to_string();
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, text.len())
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::REFERRER_POLICY, "no-referrer")
        .header(header::CONTENT_SECURITY_POLICY, super::FILE_CSP)
        .body(Body::from(text))
        .expect("valid response")
}

/// What `/api/v1/…` answers for a route it does not have.
pub async fn api_not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such API route (see docs/http.md)".into(),
    )
}

fn error(status: StatusCode, code: &str, detail: String) -> Response {
    json_answer(
        status,
        &serde_json::to_value(ErrorBody::new(code, detail)).expect("an error body serializes"),
    )
}

/// An HTML answer with the pages' headers.
pub(crate) fn html_answer(status: StatusCode, body: String) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, HTML)
        .header(header::CONTENT_LENGTH, body.len())
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::REFERRER_POLICY, "no-referrer")
        .header(header::CONTENT_SECURITY_POLICY, super::PAGE_CSP)
        .header(header::X_FRAME_OPTIONS, "DENY")
        .body(Body::from(body))
        .expect("valid response")
}

/// A search as asked: the query, the page (1-based) and the results a page.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asked {
    q: String,
    page: usize,
    limit: usize,
}

/// Reads `q`, `page` and `limit` of a query string; a bad value is a sentence saying why.
fn asked(raw: &str) -> Result<Asked, (&'static str, String)> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw).map_err(|e| {
        (
            "bad_query",
            format!("the query string is not form-encoded: {e}"),
        )
    })?;
    let get = |k: &str| {
        pairs
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let number = |k: &str, default: usize, max: usize| -> Result<usize, (&'static str, String)> {
        match get(k) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| {
                    (
                        "bad_parameter",
                        format!("{k} must be a whole number from 1 to {max}, not {v:?}"),
                    )
                }),
        }
    };
    Ok(Asked {
        q: get("q").unwrap_or("").chars().take(MAX_QUERY).collect(),
        page: number("page", 1, MAX_PAGE)?,
        limit: number("limit", DEFAULT_LIMIT, MAX_LIMIT)?,
    })
}

/// Why a search gave no results, as every answer says it (JSON and HTML alike): a status, a
/// stable code and a sentence that names no file of the server. The whole error goes to the
/// server's log.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SearchFailure {
    status: StatusCode,
    code: &'static str,
    detail: String,
}

impl SearchFailure {
    /// The one place a failed search becomes what a client is told.
    fn of(cause: &str, stopped: bool) -> SearchFailure {
        let _ = writeln!(
            std::io::stderr().lock(),
            "skillcat serve: a search failed: {cause}"
        );
        if stopped {
            SearchFailure {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "search_timeout",
                detail: format!(
                    "the search took longer than {} s and was stopped; search for fewer or other words",
                    super::search::SEARCH_DEADLINE.as_secs()
                ),
            }
        } else {
            SearchFailure {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                code: "internal",
                detail: "the search failed on the server (its log says why)".into(),
            }
        }
    }

    fn from_error(e: &crate::Error) -> SearchFailure {
        let stopped = e.kind() == crate::error::ErrorKind::Interrupted;
        let failure = SearchFailure::of(&e.to_string(), stopped);
        // A registry's database that does not answer: the search may succeed on a retry.
        if e.kind() == crate::error::ErrorKind::Remote {
            return SearchFailure {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "unavailable",
                detail: "the registry's database is unavailable; retry".into(),
            };
        }
        failure
    }
}

/// Runs a search off the runtime: the skills of this page, best first, and the total.
async fn run_search(site: Arc<Site>, a: &Asked) -> Result<(Vec<SiteSkill>, usize), SearchFailure> {
    let (q, offset, limit) = (a.q.clone(), (a.page - 1) * a.limit, a.limit);
    tokio::task::spawn_blocking(move || {
        let ranker: Arc<dyn SiteSearch> = site
            .web()
            .search
            .clone()
            .unwrap_or_else(|| Arc::new(TermSearch));
        let (names, total) = ranker
            .search(&site, &q, offset, limit)
            .map_err(|e| SearchFailure::from_error(&e))?;
        let found = names
            .iter()
            .filter_map(|n| site.skill(n).cloned())
            .collect();
        Ok((found, total))
    })
    .await
    .map_err(|e| SearchFailure::of(&e.to_string(), false))?
}

/// Whether a signature is kept (verified or not): the API's `signed`, kept for the clients
/// that read it; `trust` says what the catalog checked.
fn signed(s: &SiteSkill) -> bool {
    !s.page.signatures.is_empty() || s.signature.is_some()
}

fn skill_url(name: &str) -> String {
    format!("/skills/{}/", crate::path::percent_encode(name))
}

/// `GET /api/v1/search?q=…&limit=&page=`.
async fn search_api(site: Arc<Site>, raw: &str) -> Response {
    let a = match asked(raw) {
        Ok(a) => a,
        Err((code, detail)) => return error(StatusCode::BAD_REQUEST, code, detail),
    };
    if a.q.trim().is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "missing_query",
            "q must hold something to search for (GET /api/v1/search?q=pdf+forms)".into(),
        );
    }
    let web = site.web().clone();
    let web = &web;
    match run_search(site, &a).await {
        Ok((found, total)) => {
            let results: Vec<Value> = found
                .iter()
                .map(|s| {
                    let trust = Trust::of(web, s);
                    json!({
                        "name": s.name,
                        "description": s.description,
                        "version": s.version,
                        // `digest` (the index's name) stays for older clients.
                        "digest": s.archive_digest,
                        "archive_digest": s.archive_digest,
                        "skill_digest": s.manifest.digest,
                        "signed": signed(s),
                        "trust": trust.word(),
                        "key_id": trust.key(),
                        "url": skill_url(&s.name),
                    })
                })
                .collect();
            json_answer(
                StatusCode::OK,
                &json!({"results": results, "total": total, "page": a.page, "limit": a.limit}),
            )
        }
        Err(f) => error(f.status, f.code, f.detail),
    }
}

/// `GET /api/v1/skills/NAME`: every version with its digests and signatures.
fn skill_api(site: &Site, name: &str) -> Response {
    match skill_answer(site, name) {
        Some(body) => json_answer(StatusCode::OK, &body),
        None => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("this catalog serves no skill named {name:?}"),
        ),
    }
}

/// The JSON `GET /api/v1/skills/NAME` answers (`None`: no such skill): `serve` answers it and
/// `export` writes it as a file, the same bytes, so that `NAME@VERSION` of any version reads
/// from a static host too.
pub(crate) fn skill_answer(site: &Site, name: &str) -> Option<Value> {
    let versions = versions_of(site, name);
    if versions.is_empty() {
        return None;
    }
    let live = site.skill(name);
    let web = site.web();
    let list: Vec<Value> = versions
        .iter()
        .map(|s| {
            let signatures: Vec<Value> = s
                .page
                .signatures
                .iter()
                .map(|t| {
                    let (status, key, detail) = signature_status(web, s, t);
                    json!({"key_id": key, "status": status, "detail": detail, "signature": t})
                })
                .collect();
            let trust = Trust::of(web, s);
            let url = match s.version.as_deref().filter(|v| version_dir_ok(v)) {
                Some(v) => format!("{}{v}/", skill_url(name)),
                None => skill_url(name),
            };
            json!({
                "version": s.version,
                "published": s.page.published.as_ref().map(|p| &p.1),
                "published_at": s.page.published.as_ref().map(|p| p.0),
                "published_by": s.page.published_by,
                "description": s.description,
                "yanked": s.page.yanked,
                "latest": live.is_some_and(|l| l.version == s.version),
                "skill_digest": s.manifest.digest,
                // Every version's archive is served (null only from a source that keeps none).
                "archive_digest": (!s.archive_digest.is_empty()).then_some(&s.archive_digest),
                "archive_url": (!s.archive_digest.is_empty()).then(|| format!(
                    "/blobs/sha256/{}",
                    s.archive_digest.trim_start_matches("sha256:")
                )),
                "signed": signed(s),
                "trust": trust.word(),
                "key_id": trust.key(),
                "signatures": signatures,
                "url": url,
            })
        })
        .collect();
    let head = live.unwrap_or(versions[0]);
    Some(json!({
        "name": head.name,
        "description": head.description,
        "latest": live.and_then(|l| l.version.clone()),
        "url": skill_url(name),
        "versions": list,
    }))
}

/// `GET /search/?q=…&page=N`: the results as a page (bad numbers read as page 1).
pub async fn search_page(site: Arc<Site>, raw: &str) -> Response {
    let a = asked(raw).unwrap_or_else(|_| Asked {
        q: serde_urlencoded::from_str::<Vec<(String, String)>>(raw)
            .ok()
            .and_then(|p| p.into_iter().find(|(k, _)| k == "q").map(|(_, v)| v))
            .unwrap_or_default()
            .chars()
            .take(MAX_QUERY)
            .collect(),
        page: 1,
        limit: DEFAULT_LIMIT,
    });
    let root = "../";
    let mut main = String::new();
    if a.q.trim().is_empty() {
        main.push_str(r#"<section class="hero"><h1>Search</h1><p class="lead">Type what you need done: a file format, a task, a tool.</p></section>"#);
        return html_answer(StatusCode::OK, layout("Search", root, "", &main));
    }
    let web = site.web().clone();
    let web = &web;
    match run_search(site, &a).await {
        Ok((found, total)) => {
            let _ = write!(
                main,
                r#"<section class="hero"><h1>Search</h1><p class="lead" role="status">{total} {} for “{}”</p></section>"#,
                if total == 1 {
                    "skill matches"
                } else {
                    "skills match"
                },
                super::html::esc(&a.q)
            );
            if found.is_empty() {
                main.push_str(
                    r#"<p class="empty">No skill matches. Try fewer or other words.</p>"#,
                );
            }
            main.push_str(r#"<ol class="cards">"#);
            for s in &found {
                skill_row(&mut main, web, root, s);
            }
            main.push_str("</ol>");
            let pages = total.div_ceil(a.limit).clamp(1, MAX_PAGE);
            let q = crate::path::percent_encode(&a.q);
            pager(&mut main, pages, a.page, |p| format!("?q={q}&amp;page={p}"));
            html_answer(StatusCode::OK, layout("Search", root, &a.q, &main))
        }
        Err(f) => {
            let _ = write!(
                main,
                r#"<section class="hero"><h1>Search</h1><p class="warn" data-code="{}">{}</p></section>"#,
                f.code,
                super::html::esc(&capitalized(&f.detail))
            );
            html_answer(f.status, layout("Search", root, &a.q, &main))
        }
    }
}

/// `text` with its first letter upper case (a sentence on a page).
fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked() {
        assert_eq!(
            asked("q=pdf+forms&limit=5&page=2"),
            Ok(Asked {
                q: "pdf forms".into(),
                page: 2,
                limit: 5
            })
        );
        assert_eq!(asked("").unwrap().limit, DEFAULT_LIMIT);
        assert!(asked("q=x&page=0").unwrap_err().1.contains("page must be"));
        assert!(asked("q=x&page=abc").is_err());
        assert!(asked("q=x&limit=101").unwrap_err().1.contains("1 to 100"));
        assert!(asked("q=x&limit=-1").is_err());
        assert_eq!(
            asked(&format!("q={}", "a".repeat(2000))).unwrap().q.len(),
            MAX_QUERY
        );
    }
}

#[cfg(test)]
mod failure_tests {
    use super::*;

    /// Whatever a search failed with, the answer names no file of the server.
    #[test]
    fn a_failed_search_names_no_server_file() {
        for (cause, stopped, status) in [
            ("registry /srv/reg.db: interrupted", true, 503),
            (
                "registry /srv/reg.db: database disk image is malformed",
                false,
                500,
            ),
            ("/srv/reg.db: Permission denied (os error 13)", false, 500),
        ] {
            let f = SearchFailure::of(cause, stopped);
            assert_eq!(f.status.as_u16(), status);
            assert!(
                !f.detail.contains("/srv") && !f.detail.contains("reg.db"),
                "{f:?}"
            );
        }
        // A database that does not answer is a 503 to retry, naming no server either.
        let lost = crate::Error::from(crate::registry::RegistryError::Unavailable {
            what: "postgres://skills@db.internal/skills".into(),
            reason: "connection refused".into(),
        });
        let f = SearchFailure::from_error(&lost);
        assert_eq!((f.status.as_u16(), f.code), (503, "unavailable"));
        assert!(!f.detail.contains("db.internal"), "{f:?}");
    }
}
