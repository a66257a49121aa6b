//! The web catalog: HTML pages for people and a JSON search API for agents, over any site.
//!
//! ```text
//! /                                   home: the skills by name, PAGE a page, a search box
//! /browse/{name|updated}/N/           the other pages of the listing
//! /skills/NAME/                       a skill: its latest version's page
//! /skills/NAME/VERSION/               one version's page
//! /skills/NAME/[VERSION/]files/P.txt  a file of it, as text/plain (never HTML)
//! /assets/style.css                   the one stylesheet
//! /search/?q=…&page=N                 search results (live only; a static copy says so)
//! GET /api/v1/search?q=…&limit=&page= {"results": [{name, description, version, digest, signed, url}], "total"}
//! GET /api/v1/skills/NAME             versions, digests, signatures
//! ```
//!
//! The pages are made when the site is built or a skill of it changes, into the site's
//! resources: `serve` answers them with the same headers as every file and `export` writes
//! them. A skill page's SKILL.md body is rendered on the page's first read (`site::LazyPage`;
//! `serve` renders it in the blocking pool), within the renderer's limits and through its cache. Every string a skill supplies is escaped (`html::esc`); its SKILL.md body
//! is rendered from Markdown and sanitized by an allow-list (`markdown.rs`). HTML answers carry
//! a strict Content-Security-Policy ([`PAGE_CSP`]): no script runs on any page, inline or not.

pub(crate) mod api;
mod html;
mod markdown;
mod pages;
mod search;

use std::fmt;
use std::sync::Arc;

pub use api::{CurrentSite, api_not_found, catalog_routes, search_page};
pub use pages::{PAGE, Sort};
pub use search::{RegistrySearch, SiteSearch, TermSearch};

use crate::sign::Keyring;
use crate::site::Site;

/// `Content-Type` of the pages.
pub const HTML: &str = "text/html; charset=utf-8";
/// `Content-Type` of a file's text view.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// The `Content-Security-Policy` of every HTML page: nothing but the site's own stylesheet
/// loads, no script runs (none is inline, none is allowed), forms post only to the site, and
/// no other site may frame a page.
pub const PAGE_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The `Content-Security-Policy` of every other answer (files, indexes, blobs): a document
/// opened from one runs sandboxed and loads nothing.
pub const FILE_CSP: &str = "default-src 'none'; sandbox";

/// The stylesheet, served as `assets/style.css`.
pub(crate) const STYLE: &str = include_str!("style.css");

/// How a site's pages are made.
#[derive(Clone, Default)]
pub struct WebOptions {
    /// The address people reach the catalog at (`https://skills.example.com/`), shown in the
    /// install commands; `None`: the commands say `URL`.
    pub base_url: Option<String>,
    /// The keyring each signature is checked against: a page then says whether it verifies
    /// and in which scope; without one it names the key that claims it, unchecked.
    pub keyring: Option<Arc<Keyring>>,
    /// What ranks a search (a registry's full-text search, the matcher); `None`: [`TermSearch`].
    pub search: Option<Arc<dyn SiteSearch>>,
}

impl fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebOptions")
            .field("base_url", &self.base_url)
            .field("keyring", &self.keyring.is_some())
            .field("search", &self.search.as_ref().map(|s| s.describe()))
            .finish()
    }
}

/// Every page of `site`.
pub(crate) fn write_all_pages(site: &mut Site) {
    site.remove_prefix("skills/");
    let mut names: Vec<String> = site
        .skills()
        .iter()
        .chain(site.yanked())
        .chain(site.older())
        .map(|s| s.name.clone())
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        pages::write_skill(site, &name);
    }
    pages::write_listings(site);
}

/// The pages of the skill `name`, and the listings (which it may have entered or left).
pub(crate) fn write_pages_of(site: &mut Site, name: &str) {
    pages::write_skill(site, name);
    pages::write_listings(site);
}
