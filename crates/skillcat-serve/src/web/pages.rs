//! The catalog's pages, rendered once into the site's resources (so `serve` answers them with
//! the site's headers and `export` writes them): the home page in pages of [`PAGE`] skills by
//! name and by update, a page per skill and per version, a text view of every file.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::html::{esc, size, url_path};
use super::{HTML, TEXT, WebOptions};
use crate::capability::Capabilities;
use crate::document::parse_document;
use crate::site::{LazyPage, REVALIDATE, Site, SiteSkill};

/// Skills on one page of the home listing.
pub const PAGE: usize = 50;

/// How the home listing is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// By name (bytes).
    Name,
    /// Most recently published first (sources without dates keep their order).
    Updated,
}

impl Sort {
    fn word(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::Updated => "updated",
        }
    }
}

/// The path (no leading `/`, a folder ending in `/`) of a listing page.
pub(crate) fn listing_path(sort: Sort, page: usize) -> String {
    if sort == Sort::Name && page == 1 {
        String::new()
    } else {
        format!("browse/{}/{page}/", sort.word())
    }
}

/// `../` once per folder of `path` (a folder path ending in `/`, or empty for the root).
fn root_of(path: &str) -> String {
    let depth = path.matches('/').count();
    if depth == 0 {
        "./".to_string()
    } else {
        "../".repeat(depth)
    }
}

/// Whether a version can name a folder as it is (what a registry's semver always can).
pub(crate) fn version_dir_ok(v: &str) -> bool {
    !v.is_empty()
        && v != "."
        && v != ".."
        && v.len() <= 128
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+' | b'_'))
}

/// The folder of a skill's page (`skills/NAME/`).
pub(crate) fn skill_dir(name: &str) -> String {
    format!("skills/{name}/")
}

/// The folder of one version's page: `skills/NAME/VERSION/`, or the skill's folder for a
/// version that has none (no version, or one that cannot name a folder).
fn version_dir(s: &SiteSkill) -> String {
    match s.version.as_deref().filter(|v| version_dir_ok(v)) {
        Some(v) => format!("skills/{}/{v}/", s.name),
        None => skill_dir(&s.name),
    }
}

/// A page: the shared head, header with the search form, `main`, footer.
pub(crate) fn layout(title: &str, root: &str, query: &str, main: &str) -> String {
    let mut out = String::with_capacity(main.len() + 2048);
    let _ = write!(
        out,
        r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>{title} · skillcat catalog</title>
<link rel="stylesheet" href="{root}assets/style.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><div class="wrap bar">
<a class="brand" href="{root}"><span class="logo" aria-hidden="true">◆</span> skillcat <span class="muted">catalog</span></a>
<form class="search" role="search" action="{root}search/" method="get">
<label for="q" class="sr">Search skills</label>
<input id="q" name="q" type="search" placeholder="Search skills" value="{q}" maxlength="500" autocomplete="off">
<button type="submit">Search</button>
</form>
</div></header>
<main id="main" class="wrap">
{main}
</main>
<footer class="foot"><div class="wrap">Served by skillcat · <a href="{root}.well-known/agent-skills/index.json">agent-skills index</a> · <a href="{root}.well-known/skills/index.json">v0.1 index</a></div></footer>
</body>
</html>
"##,
        title = esc(title),
        root = root,
        q = esc(query),
        main = main,
    );
    out
}

/// One row of a listing (home or search).
pub(crate) fn skill_row(out: &mut String, web: &WebOptions, root: &str, s: &SiteSkill) {
    let desc: String = s.description.chars().take(240).collect();
    let more = if s.description.chars().count() > 240 {
        "…"
    } else {
        ""
    };
    let _ = write!(
        out,
        r#"<li class="card"><div class="card-head"><a class="name" href="{root}skills/{href}/">{name}</a>"#,
        href = crate::path::percent_encode(&s.name),
        name = esc(&s.name),
    );
    if let Some(v) = &s.version {
        let _ = write!(out, r#" <span class="ver">{}</span>"#, esc(v));
    }
    out.push_str(&Trust::of(web, s).badge());
    out.push_str("</div>");
    let _ = write!(out, r#"<p class="desc">{}{more}</p>"#, esc(&desc));
    if let Some((_, date)) = &s.page.published {
        let _ = write!(
            out,
            r#"<p class="meta">Updated <time datetime="{d}">{day}</time></p>"#,
            d = esc(date),
            day = esc(date.get(..10).unwrap_or(date)),
        );
    }
    out.push_str("</li>\n");
}

/// What a catalog says of a version's signatures: the same word on every page, in the
/// search results and in the API. Only a signature checked against the catalog's keyring
/// (over the statement recomputed from the files, within the key's scopes) makes a version
/// `verified`; one signed by a key the keyring does not hold, or with no keyring to check
/// against, is `unverified`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trust {
    /// A signature verifies, by this key id.
    Verified(String),
    /// Signatures are kept, none verifies (or there is no keyring to check them against).
    Unverified,
    /// No signature is kept.
    Unsigned,
}

impl Trust {
    /// The trust of `s` under the keyring of `web`.
    pub(crate) fn of(web: &WebOptions, s: &SiteSkill) -> Trust {
        let texts: Vec<&String> = if s.page.signatures.is_empty() {
            s.signature.iter().collect()
        } else {
            s.page.signatures.iter().collect()
        };
        if texts.is_empty() {
            return Trust::Unsigned;
        }
        if web.keyring.is_none() {
            return Trust::Unverified;
        }
        texts
            .into_iter()
            .find_map(|t| match signature_status(web, s, t) {
                (status, key, _) if status == "verified" => Some(Trust::Verified(key)),
                _ => None,
            })
            .unwrap_or(Trust::Unverified)
    }

    /// `verified`, `unverified` or `unsigned`.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Trust::Verified(_) => "verified",
            Trust::Unverified => "unverified",
            Trust::Unsigned => "unsigned",
        }
    }

    /// The key that verifies, when one does.
    pub(crate) fn key(&self) -> Option<&str> {
        match self {
            Trust::Verified(k) => Some(k),
            _ => None,
        }
    }

    /// The badge of a listing row and a skill page (the key in its title when verified).
    fn badge(&self) -> String {
        let word = self.word();
        match self.key() {
            Some(key) => format!(
                r#" <span class="badge {word}" title="signed by key {}">{word}</span>"#,
                esc(key)
            ),
            None => format!(r#" <span class="badge {word}">{word}</span>"#),
        }
    }
}

/// The skills in the order of `sort`.
pub(crate) fn sorted(site: &Site, sort: Sort) -> Vec<&SiteSkill> {
    let mut all: Vec<&SiteSkill> = site.skills().iter().collect();
    match sort {
        Sort::Name => all.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes())),
        Sort::Updated => all.sort_by(|a, b| {
            let at = |s: &SiteSkill| s.page.published.as_ref().map(|p| p.0);
            at(b)
                .cmp(&at(a))
                .then_with(|| a.name.as_bytes().cmp(b.name.as_bytes()))
        }),
    }
    all
}

/// A page of the home listing.
fn listing(web: &WebOptions, all: &[&SiteSkill], sort: Sort, page: usize, pages: usize) -> String {
    let path = listing_path(sort, page);
    let root = root_of(&path);
    let n = all.len();
    let mut main = String::with_capacity(PAGE * 600);
    let _ = write!(
        main,
        r#"<section class="hero"><h1>Skills</h1><p class="lead">{n} {} in this catalog. Each one is a folder of instructions and scripts an agent can load; every version is content-addressed and its signature shown.</p></section>"#,
        if n == 1 { "skill" } else { "skills" }
    );
    main.push_str(
        r#"<nav class="sort" aria-label="Sort the skills"><span class="muted">Sort by</span> "#,
    );
    for (s, word) in [(Sort::Name, "Name"), (Sort::Updated, "Recently updated")] {
        if s == sort {
            let _ = write!(
                main,
                r#"<a aria-current="page" class="on" href="{root}{}">{word}</a> "#,
                listing_path(s, 1)
            );
        } else {
            let _ = write!(
                main,
                r#"<a href="{root}{}">{word}</a> "#,
                listing_path(s, 1)
            );
        }
    }
    main.push_str("</nav>\n");
    if n == 0 {
        main.push_str(r#"<p class="empty">This catalog serves no skills yet.</p>"#);
    }
    main.push_str(r#"<ol class="cards">"#);
    for s in all.iter().skip((page - 1) * PAGE).take(PAGE) {
        skill_row(&mut main, web, &root, s);
    }
    main.push_str("</ol>\n");
    pager(&mut main, pages, page, |p| {
        format!("{root}{}", listing_path(sort, p))
    });
    let title = if page == 1 {
        "Skills".to_string()
    } else {
        format!("Skills, page {page} of {pages}")
    };
    layout(&title, &root, "", &main)
}

/// Previous / next links and the page numbers around this one.
pub(crate) fn pager(out: &mut String, pages: usize, page: usize, href: impl Fn(usize) -> String) {
    if pages <= 1 {
        return;
    }
    out.push_str(r#"<nav class="pager" aria-label="Pages">"#);
    if page > 1 {
        let _ = write!(
            out,
            r#"<a rel="prev" href="{}">← Previous</a>"#,
            href(page - 1)
        );
    }
    let mut shown: Vec<usize> = vec![1, pages];
    shown.extend((page.saturating_sub(2)..=page + 2).filter(|p| *p >= 1 && *p <= pages));
    shown.sort_unstable();
    shown.dedup();
    let mut last = 0;
    for p in shown {
        if p > last + 1 {
            out.push_str(r#"<span class="gap">…</span>"#);
        }
        if p == page {
            let _ = write!(
                out,
                r#"<a aria-current="page" class="on" href="{}">{p}</a>"#,
                href(p)
            );
        } else {
            let _ = write!(out, r#"<a href="{}">{p}</a>"#, href(p));
        }
        last = p;
    }
    if page < pages {
        let _ = write!(out, r#"<a rel="next" href="{}">Next →</a>"#, href(page + 1));
    }
    out.push_str("</nav>\n");
}

/// Every listing page, the stylesheet and the static search page.
pub(crate) fn write_listings(site: &mut Site) {
    site.remove_prefix("browse/");
    let mut pages_out = Vec::new();
    for sort in [Sort::Name, Sort::Updated] {
        let all = sorted(site, sort);
        let pages = all.len().div_ceil(PAGE).max(1);
        for page in 1..=pages {
            pages_out.push((
                format!("{}index.html", listing_path(sort, page)),
                listing(site.web(), &all, sort, page, pages),
            ));
        }
    }
    for (path, body) in pages_out {
        site.put(path, Bytes::from(body), HTML, REVALIDATE);
    }
    site.put(
        "assets/style.css".into(),
        Bytes::from_static(super::STYLE.as_bytes()),
        "text/css; charset=utf-8",
        REVALIDATE,
    );
    let main = r#"<section class="hero"><h1>Search</h1><p class="lead">This is a static copy of the catalog: searching needs the catalog's server (<code>skillcat serve</code>), or <code>skillcat search URL QUERY</code> against it.</p><p><a href="../">Browse every skill by name</a></p></section>"#;
    site.put(
        "search/index.html".into(),
        Bytes::from(layout("Search", "../", "", main)),
        HTML,
        REVALIDATE,
    );
}

/// Every version of `name` the site holds a page for: the live one, the yanked and the
/// older ones, highest version first.
pub(crate) fn versions_of<'a>(site: &'a Site, name: &str) -> Vec<&'a SiteSkill> {
    let mut all: Vec<&SiteSkill> = site
        .skill(name)
        .into_iter()
        .chain(site.yanked().iter().filter(|s| s.name == name))
        .chain(site.older().iter().filter(|s| s.name == name))
        .collect();
    all.sort_by(|a, b| {
        crate::version::compare(
            b.version.as_deref().unwrap_or(""),
            a.version.as_deref().unwrap_or(""),
        )
    });
    all.dedup_by(|a, b| a.version == b.version);
    all
}

/// The pages of the skill `name` (taken out first): its page, a page per version, the file
/// views.
pub(crate) fn write_skill(site: &mut Site, name: &str) {
    site.remove_prefix(&skill_dir(name));
    let versions: Vec<SiteSkill> = versions_of(site, name).into_iter().cloned().collect();
    if versions.is_empty() {
        return;
    }
    let web = site.web().clone();
    // The version a bare name reads, marked `latest` in the versions table.
    let latest = site.skill(name).and_then(|s| s.version.clone());
    let page = |s: &SiteSkill, body: &Body, dir: &str| {
        skill_page(&web, s, body, &versions, latest.as_deref(), dir)
    };
    let mut out: Vec<(String, Bytes, &'static str)> = Vec::new();
    let mut lazy: Vec<(String, LazyPage)> = Vec::new();
    // The skill's own page shows its latest (or, when every version is yanked, the highest).
    let main_one = site
        .skill(name)
        .cloned()
        .unwrap_or_else(|| versions[0].clone());
    // Each version's body is read once, for its page and (the latest's) the skill's; it is
    // rendered on the page's first read.
    let mut main_body = None;
    let page_at = |s: &SiteSkill, body: &Body, dir: String| {
        let html = page(s, body, &dir);
        let path = format!("{dir}index.html");
        body.lazy(html, &root_of(&dir))
            .map(|p| (path.clone(), p))
            .map_err(|html| (path, Bytes::from(html), HTML))
    };
    for s in &versions {
        let dir = version_dir(s);
        let body = Body::of(s);
        match page_at(s, &body, dir.clone()) {
            Ok(p) => lazy.push(p),
            Err(p) => out.push(p),
        }
        if s.version == main_one.version {
            main_body = Some(body);
        }
        for (f, bytes) in s.manifest.files.iter().zip(&s.files) {
            if !s.page.files_withheld && std::str::from_utf8(bytes).is_ok() {
                out.push((format!("{dir}files/{}.txt", f.path), bytes.clone(), TEXT));
            }
        }
    }
    let dir = skill_dir(name);
    if version_dir(&main_one) != dir {
        let body = main_body.unwrap_or_else(|| Body::of(&main_one));
        match page_at(&main_one, &body, dir) {
            Ok(p) => lazy.push(p),
            Err(p) => out.push(p),
        }
    }
    for (path, body, ctype) in out {
        site.put(path, body, ctype, REVALIDATE);
    }
    for (path, page) in lazy {
        site.put_lazy(path, page);
    }
}

/// The document of a packed skill: its SKILL.md parsed again (it parsed when it was served).
fn document(s: &SiteSkill) -> Option<crate::document::Document> {
    let i = s
        .manifest
        .files
        .iter()
        .position(|f| crate::path::DOCUMENT_NAMES.contains(&f.path.as_str()))?;
    parse_document(&s.files[i]).ok()
}

/// A version's document and its body (Markdown, rendered when a page showing it is first
/// read), the links of the body relative to the site's root (`ROOT/` stands for it until a
/// page puts its own `../…` there).
struct Body {
    doc: Option<crate::document::Document>,
    markdown: Option<Arc<str>>,
    files_base: Arc<str>,
    paths: Arc<HashSet<String>>,
}

/// What stands for the page's way to the site's root in a rendered body. A body that holds
/// the same text gets `../` in its place, which can only make a relative link of its own.
const ROOT_MARK: &str = "{{skillcat-root}}/";

/// Where the rendered body goes in a page's HTML until it is rendered. No text a skill gives
/// can hold it: escaping drops control characters.
const BODY_MARK: &str = "\u{0}skillcat-body\u{0}";

impl Body {
    fn of(s: &SiteSkill) -> Body {
        let doc = document(s);
        let paths: HashSet<String> = s.manifest.files.iter().map(|f| f.path.clone()).collect();
        let markdown = doc
            .as_ref()
            .filter(|d| !d.body.trim().is_empty())
            .map(|d| Arc::from(d.body.as_str()));
        Body {
            doc,
            markdown,
            files_base: format!("{ROOT_MARK}{}files/", version_dir(s)).into(),
            paths: Arc::new(paths),
        }
    }

    /// The page `html` (made with [`BODY_MARK`] where the body goes) as a page rendered on
    /// its first read, at `root` from the site's root; `Err(html)` when it has no body to
    /// render.
    fn lazy(&self, html: String, root: &str) -> Result<LazyPage, String> {
        let Some(markdown) = self.markdown.clone() else {
            return Err(html);
        };
        let Some((before, after)) = html.split_once(BODY_MARK) else {
            return Err(html);
        };
        let (before, after) = (before.to_string(), after.to_string());
        let (files_base, paths, root) = (
            self.files_base.clone(),
            self.paths.clone(),
            root.to_string(),
        );
        Ok(LazyPage::new(move || {
            let body = super::markdown::render_cached(&markdown, &files_base, &paths);
            let mut page = String::with_capacity(before.len() + body.len() + after.len());
            page.push_str(&before);
            page.push_str(&body.replace(ROOT_MARK, &root));
            page.push_str(&after);
            page
        }))
    }
}

/// The page of one version `s` of a skill whose versions are `versions`, at folder `dir`.
fn skill_page(
    web: &WebOptions,
    s: &SiteSkill,
    body: &Body,
    versions: &[SiteSkill],
    latest: Option<&str>,
    dir: &str,
) -> String {
    let root = root_of(dir);
    let doc = &body.doc;
    let files_base = format!("{root}{}files/", version_dir(s));
    let name = esc(&s.name);
    let mut m = String::with_capacity(16 * 1024);
    let _ = write!(
        m,
        r#"<nav class="crumbs" aria-label="Breadcrumb"><a href="{root}">Skills</a> <span aria-hidden="true">/</span> <a href="{root}skills/{href}/">{name}</a>"#,
        href = crate::path::percent_encode(&s.name)
    );
    if let Some(v) = &s.version {
        let _ = write!(
            m,
            r#" <span aria-hidden="true">/</span> <span>{}</span>"#,
            esc(v)
        );
    }
    m.push_str("</nav>\n");
    let _ = write!(m, r#"<div class="title"><h1>{name}</h1>"#);
    if let Some(v) = &s.version {
        let _ = write!(m, r#"<span class="ver">{}</span>"#, esc(v));
    }
    m.push_str(&Trust::of(web, s).badge());
    if s.page.yanked {
        m.push_str(r#" <span class="badge yanked">yanked</span>"#);
    }
    m.push_str("</div>\n");
    let _ = write!(m, r#"<p class="lead">{}</p>"#, esc(&s.description));
    if s.page.yanked {
        m.push_str(r#"<p class="warn" role="note">This version is yanked: a bare name never installs it; it stays readable by its exact version.</p>"#);
    }
    m.push_str(r#"<div class="cols"><article class="doc" aria-labelledby="doc-h"><h2 id="doc-h" class="sr">SKILL.md</h2>"#);
    match &body.markdown {
        Some(_) => m.push_str(BODY_MARK),
        None => m.push_str(r#"<p class="muted">This skill's SKILL.md has no body.</p>"#),
    }
    m.push_str("</article>\n<aside class=\"side\">");
    install(&mut m, web, s, dir != skill_dir(&s.name));
    integrity(&mut m, web, s);
    about(&mut m, s, doc.as_ref());
    m.push_str("</aside></div>\n");
    version_table(&mut m, latest, &root, s, versions);
    tools(&mut m, s);
    if let Some(d) = &doc {
        capabilities(&mut m, s.page.declared.as_ref().unwrap_or(&d.frontmatter));
        frontmatter(&mut m, &d.frontmatter);
    }
    file_table(&mut m, &root, &files_base, s);
    findings(&mut m, s);
    let title = match &s.version {
        Some(v) => format!("{} {v}", s.name),
        None => s.name.clone(),
    };
    layout(&title, &root, "", &m)
}

fn section(m: &mut String, id: &str, title: &str) {
    let _ = write!(
        m,
        r#"<section class="box" aria-labelledby="{id}"><h2 id="{id}">{title}</h2>"#
    );
}

/// The install commands; on a version's own page `skillcat add` names that version.
fn install(m: &mut String, web: &WebOptions, s: &SiteSkill, this_version: bool) {
    let url = web.base_url.as_deref().unwrap_or("URL");
    let name = &s.name;
    let pinned = match &s.version {
        Some(v) if this_version => format!("{name}@{v}"),
        _ => name.clone(),
    };
    section(m, "install", "Install");
    let _ = write!(
        m,
        r#"<h3>skillcat</h3><pre class="cmd"><code>skillcat add {url} {pinned}</code></pre><h3>skills CLI</h3><pre class="cmd"><code>npx skills add {url} --skill {name}</code></pre><p class="muted small">Needs Node.js ≥ 22.20.</p><h3>MCP client</h3><pre class="cmd"><code>{mcp}</code></pre>"#,
        url = esc(url),
        pinned = esc(&pinned),
        name = esc(name),
        mcp = esc(&format!(
            "{{\n  \"mcpServers\": {{\n    \"skillcat\": {{\n      \"command\": \"skillcat\",\n      \"args\": [\"mcp\", {}]\n    }}\n  }}\n}}",
            serde_json::to_string(url).unwrap_or_default()
        )),
    );
    if web.base_url.is_none() {
        m.push_str(r#"<p class="muted small">URL: the address this catalog is served at.</p>"#);
    }
    m.push_str("</section>\n");
}

/// The most links the "about" block shows.
const MAX_LINKS: usize = 8;

/// Who published the version (the token's name, where the source records it), its licence
/// (frontmatter `license`) and its links: each `metadata` entry whose value is an absolute
/// `http(s)://` URL, labelled by its key (`homepage`, `repository`, …). Every value is the
/// skill's (or a token's) text, so each is escaped; a value that is not such a URL is never
/// a link.
fn about(m: &mut String, s: &SiteSkill, doc: Option<&crate::document::Document>) {
    use crate::document::Value;
    section(m, "about", "Publisher and licence");
    m.push_str(r#"<dl class="kv">"#);
    if let Some(who) = &s.page.published_by {
        let _ = write!(m, "<dt>Published by</dt><dd>{}</dd>", esc(who));
    }
    let fm = doc.map(|d| &d.frontmatter);
    match fm.and_then(|f| f.get("license")).and_then(Value::as_str) {
        Some(l) if !l.trim().is_empty() => {
            let _ = write!(m, "<dt>Licence</dt><dd>{}</dd>", esc(l.trim()));
        }
        _ => m.push_str(r#"<dt>Licence</dt><dd class="muted">not stated</dd>"#),
    }
    let links: Vec<(&str, &str)> = match fm.and_then(|f| f.get("metadata")) {
        Some(Value::Map(meta)) => meta
            .iter()
            .filter_map(|(k, v)| Some((k, v.as_str()?.trim())))
            .filter(|(_, v)| web_url(v))
            .take(MAX_LINKS)
            .collect(),
        _ => Vec::new(),
    };
    if !links.is_empty() {
        m.push_str("<dt>Links</dt><dd><ul class=\"links\">");
        for (key, url) in links {
            let _ = write!(
                m,
                r#"<li>{}: <a href="{}" rel="noopener noreferrer nofollow ugc">{}</a></li>"#,
                esc(key),
                esc(url),
                esc(url)
            );
        }
        m.push_str("</ul></dd>");
    }
    m.push_str("</dl></section>\n");
}

/// Whether `v` is an absolute `http://` or `https://` URL with a host and nothing a link
/// should not hold (blanks, control characters), of a sane length.
fn web_url(v: &str) -> bool {
    let lower = v.get(..8).unwrap_or(v).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &v[8..]
    } else if lower.starts_with("http://") {
        &v[7..]
    } else {
        return false;
    };
    v.len() <= 2048
        && !rest.is_empty()
        && !rest.starts_with(['/', '\\', '?', '#'])
        && !v.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// What a signature says, checked against the site's keyring when it has one.
pub(crate) fn signature_status(
    web: &WebOptions,
    s: &SiteSkill,
    text: &str,
) -> (String, String, Option<String>) {
    let key = match crate::sign::claim(text) {
        Ok(c) => c.key_id,
        Err(e) => return ("unreadable".into(), String::new(), Some(e.to_string())),
    };
    let Some(keyring) = &web.keyring else {
        return (
            "not checked".into(),
            key,
            Some("this catalog has no keyring to check it against".into()),
        );
    };
    match crate::sign::verify(&s.manifest, text, keyring, &s.name) {
        Ok(v) => {
            let scope = keyring
                .get(&v.key_id)
                .map(|k| k.scopes().join(", "))
                .unwrap_or_default();
            (
                "verified".into(),
                v.key_id,
                Some(format!("keyring scope: {scope}")),
            )
        }
        Err(e) => ("not verified".into(), key, Some(e.to_string())),
    }
}

fn integrity(m: &mut String, web: &WebOptions, s: &SiteSkill) {
    section(m, "integrity", "Integrity");
    let _ = write!(
        m,
        r#"<dl class="kv"><dt>Skill digest</dt><dd><code class="digest">{}</code></dd><dt>Archive digest</dt><dd><code class="digest">{}</code></dd></dl>"#,
        esc(&s.manifest.digest),
        if s.archive_digest.is_empty() {
            "none kept by this catalog"
        } else {
            &s.archive_digest
        },
    );
    m.push_str("<h3>Signatures</h3>");
    if s.page.signatures.is_empty() {
        m.push_str(r#"<p><span class="badge unsigned">unsigned</span> No signature is kept for this version.</p>"#);
    } else {
        m.push_str(r#"<ul class="sigs">"#);
        for text in &s.page.signatures {
            let (status, key, note) = signature_status(web, s, text);
            let class = if status == "verified" {
                "signed"
            } else {
                "unsigned"
            };
            let _ = write!(
                m,
                r#"<li><span class="badge {class}">{}</span> key <code>{}</code>"#,
                esc(&status),
                esc(&key)
            );
            if let Some(n) = note {
                let _ = write!(m, r#"<br><span class="muted small">{}</span>"#, esc(&n));
            }
            m.push_str("</li>");
        }
        m.push_str("</ul>");
    }
    m.push_str("</section>\n");
}

fn version_table(
    m: &mut String,
    latest: Option<&str>,
    root: &str,
    shown: &SiteSkill,
    versions: &[SiteSkill],
) {
    section(m, "versions", "Versions");
    if versions.iter().all(|v| v.version.is_none()) {
        m.push_str(r#"<p class="muted">This source keeps one version of the skill, with no version number.</p></section>"#);
        return;
    }
    m.push_str(r#"<div class="scroll"><table><thead><tr><th scope="col">Version</th><th scope="col">Published</th><th scope="col">Status</th><th scope="col">Signature</th><th scope="col">Skill digest</th></tr></thead><tbody>"#);
    for v in versions {
        let ver = v.version.as_deref().unwrap_or("—");
        let link = if v.version.as_deref().is_some_and(version_dir_ok) {
            format!(
                r#"<a href="{root}{}">{}</a>"#,
                url_path(&version_dir(v)),
                esc(ver)
            )
        } else {
            esc(ver).to_string()
        };
        let current = if v.version == shown.version {
            r#" aria-current="true" class="current""#
        } else {
            ""
        };
        let date = v.page.published.as_ref().map_or("—".to_string(), |(_, d)| {
            format!(
                r#"<time datetime="{0}">{1}</time>"#,
                esc(d),
                esc(d.get(..10).unwrap_or(d))
            )
        });
        let status = if v.page.yanked {
            r#"<span class="badge yanked">yanked</span>"#
        } else if v.version.is_some() && v.version.as_deref() == latest {
            r#"<span class="badge latest">latest</span>"#
        } else {
            ""
        };
        let keys: Vec<String> = v
            .page
            .signatures
            .iter()
            .map(|t| crate::sign::claim(t).map_or_else(|_| "unreadable".into(), |c| c.key_id))
            .collect();
        let sig = if keys.is_empty() {
            "unsigned".to_string()
        } else {
            format!("signed by <code>{}</code>", esc(&keys.join(", ")))
        };
        let _ = write!(
            m,
            r#"<tr{current}><td>{link}</td><td>{date}</td><td>{status}</td><td>{sig}</td><td><code class="digest" title="{d}">{short}</code></td></tr>"#,
            d = esc(&v.manifest.digest),
            short = esc(v.manifest.digest.get(..19).unwrap_or(&v.manifest.digest)),
        );
    }
    m.push_str("</tbody></table></div></section>\n");
}

fn params_table(m: &mut String, schema: &Value) {
    let props = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match props {
        Some(p) if !p.is_empty() => {
            m.push_str(r#"<table class="params"><thead><tr><th scope="col">Parameter</th><th scope="col">Type</th><th scope="col">Required</th><th scope="col">Description</th></tr></thead><tbody>"#);
            for (k, v) in p {
                let ty = v.get("type").map_or_else(
                    || {
                        v.get("enum")
                            .map_or(String::new(), |e| format!("one of {e}"))
                    },
                    |t| t.as_str().map_or_else(|| t.to_string(), str::to_string),
                );
                let _ = write!(
                    m,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(k),
                    esc(&ty),
                    if required.contains(&k.as_str()) {
                        "yes"
                    } else {
                        "no"
                    },
                    esc(v.get("description").and_then(Value::as_str).unwrap_or("")),
                );
            }
            m.push_str("</tbody></table>");
        }
        _ => m.push_str(r#"<p class="muted small">No parameters.</p>"#),
    }
}

fn tools(m: &mut String, s: &SiteSkill) {
    section(m, "tools", "Tools");
    if s.page.tools.is_empty() && s.page.guest_tools.is_empty() && s.page.tools_error.is_none() {
        m.push_str(r#"<p class="muted">This skill offers no tools: it is instructions only.</p>"#);
    }
    if let Some(e) = &s.page.tools_error {
        let _ = write!(
            m,
            r#"<p class="warn">Its scripts are not offered as tools: {}</p>"#,
            esc(e)
        );
    }
    for t in &s.page.tools {
        let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
        let _ = write!(
            m,
            r#"<div class="tool"><h3><code>{}</code> <span class="muted small">script {} · {}</span></h3><p>{}</p>"#,
            esc(text("name")),
            esc(text("path")),
            esc(text("interpreter")),
            esc(text("description")),
        );
        params_table(m, t.get("parameters").unwrap_or(&Value::Null));
        m.push_str("</div>");
    }
    for t in &s.page.guest_tools {
        if let Some(e) = t.get("error").and_then(Value::as_str) {
            let _ = write!(
                m,
                r#"<p class="warn">A guest tool is not offered: {}</p>"#,
                esc(e)
            );
            continue;
        }
        let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
        let _ = write!(
            m,
            r#"<div class="tool"><h3><code>{}</code> <span class="muted small">guest tool (JavaScript, confined) · {}</span></h3><p>{}</p>"#,
            esc(text("name")),
            esc(text("source")),
            esc(text("description")),
        );
        let params = t.get("parameters").and_then(Value::as_array);
        match params {
            Some(p) if !p.is_empty() => {
                m.push_str(r#"<table class="params"><thead><tr><th scope="col">Parameter</th><th scope="col">Type</th><th scope="col">Required</th><th scope="col">Description</th></tr></thead><tbody>"#);
                for p in p {
                    let t = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
                    let _ = write!(
                        m,
                        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(t("name")),
                        esc(t("type")),
                        if p.get("required").and_then(Value::as_bool) == Some(true) {
                            "yes"
                        } else {
                            "no"
                        },
                        esc(t("description")),
                    );
                }
                m.push_str("</tbody></table>");
            }
            _ => m.push_str(r#"<p class="muted small">No parameters.</p>"#),
        }
        m.push_str("</div>");
    }
    m.push_str("</section>\n");
}

fn capabilities(m: &mut String, fm: &crate::document::Map) {
    let caps = Capabilities::from_frontmatter(fm);
    section(m, "capabilities", "Declared capabilities");
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|p| format!("<code>{}</code>", esc(p)))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let network = match &caps.network {
        crate::network::Network::Off => "none".to_string(),
        crate::network::Network::All => "the whole network".to_string(),
        n => format!("<code>{}</code>", esc(&n.to_string())),
    };
    let _ = write!(
        m,
        r#"<dl class="kv"><dt>Files read</dt><dd>{}</dd><dt>Files written</dt><dd>{}</dd><dt>Network</dt><dd>{network}</dd><dt>Timeout</dt><dd>{} s{}</dd></dl><p class="muted small">What the skill asks for; a host grants at most what its own ceiling allows.</p></section>"#,
        list(&caps.fs_read),
        list(&caps.fs_write),
        caps.timeout_secs(),
        if caps.timeout.is_none() {
            " (the default)"
        } else {
            ""
        },
    );
    m.push('\n');
}

fn frontmatter(m: &mut String, fm: &crate::document::Map) {
    section(m, "frontmatter", "Frontmatter");
    m.push_str(r#"<div class="scroll"><table class="fm"><tbody>"#);
    for (k, v) in fm.iter() {
        let shown = match v {
            crate::document::Value::Text(t) => esc(t).to_string(),
            other => format!(
                "<pre><code>{}</code></pre>",
                esc(&serde_json::to_string_pretty(&other.to_json()).unwrap_or_default())
            ),
        };
        let _ = write!(
            m,
            r#"<tr><th scope="row"><code>{}</code></th><td>{shown}</td></tr>"#,
            esc(k)
        );
    }
    m.push_str("</tbody></table></div></section>\n");
}

fn file_table(m: &mut String, root: &str, files_base: &str, s: &SiteSkill) {
    section(m, "files", "Files");
    let total: u64 = s.manifest.files.iter().map(|f| f.size).sum();
    let _ = write!(
        m,
        r#"<p class="muted small">{} files, {}. Each opens as plain text.</p><div class="scroll"><table><thead><tr><th scope="col">Path</th><th scope="col">Size</th><th scope="col">Digest</th></tr></thead><tbody>"#,
        s.manifest.files.len(),
        size(total)
    );
    if s.page.files_withheld {
        m.push_str(r#"<p class="muted small">This catalog serves this version's files in its archive (see Integrity); they are listed here from its manifest.</p>"#);
    }
    for (f, bytes) in s.manifest.files.iter().zip(&s.files) {
        let path = if s.page.files_withheld {
            format!("<code>{}</code>", esc(&f.path))
        } else {
            let href = if std::str::from_utf8(bytes).is_ok() {
                format!("{files_base}{}.txt", url_path(&f.path))
            } else {
                format!(
                    "{root}blobs/sha256/{}",
                    f.digest.trim_start_matches("sha256:")
                )
            };
            format!(r#"<a href="{href}"><code>{}</code></a>"#, esc(&f.path))
        };
        let _ = write!(
            m,
            r#"<tr><td>{path}{}</td><td class="num">{}</td><td><code class="digest" title="{d}">{short}</code></td></tr>"#,
            if f.executable {
                r#" <span class="badge exec">executable</span>"#
            } else {
                ""
            },
            size(f.size),
            d = esc(&f.digest),
            short = esc(f.digest.get(..19).unwrap_or(&f.digest)),
        );
    }
    m.push_str("</tbody></table></div></section>\n");
}

fn findings(m: &mut String, s: &SiteSkill) {
    section(m, "audit", "Audit findings");
    let Some(found) = s.page.findings.as_ref().and_then(Value::as_array) else {
        m.push_str(r#"<p class="muted">This version was not audited.</p></section>"#);
        return;
    };
    let when = if s.page.findings_recorded {
        "recorded when it was published"
    } else {
        "found when this catalog was built"
    };
    if found.is_empty() {
        let _ = write!(
            m,
            r#"<p><span class="badge signed">clean</span> The audit found nothing ({when}).</p></section>"#
        );
        return;
    }
    let _ = write!(
        m,
        r#"<p class="muted small">{} findings, {when}.</p><div class="scroll"><table><thead><tr><th scope="col">Severity</th><th scope="col">Rule</th><th scope="col">Where</th><th scope="col">What</th></tr></thead><tbody>"#,
        found.len()
    );
    for f in found {
        let t = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("");
        let mut place = t("path").to_string();
        if let Some(l) = f.get("line").and_then(Value::as_u64) {
            let _ = write!(place, ":{l}");
        }
        let sev = t("severity");
        let _ = write!(
            m,
            r#"<tr><td><span class="badge sev-{c}">{}</span></td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>"#,
            esc(sev),
            esc(t("rule")),
            esc(&place),
            esc(t("message")),
            c = if matches!(sev, "high" | "medium" | "low" | "info") {
                sev
            } else {
                "info"
            },
        );
    }
    m.push_str("</tbody></table></div></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::{AGENT_SKILLS_INDEX, PageInfo};

    fn skill(name: &str, description: &str, version: Option<&str>) -> SiteSkill {
        let body = format!(
            "---\nname: {name}\ndescription: x\n---\n# {name}\n\n<script>x()</script>[a](refs/a.md)\n"
        );
        let files = [
            ("SKILL.md", body.as_bytes()),
            ("refs/a.md", b"# A\n".as_slice()),
        ];
        let manifest = crate::digest::Manifest::build(
            name,
            version.unwrap_or(""),
            files.iter().map(|(p, b)| (*p, *b, false)),
        );
        SiteSkill {
            name: name.into(),
            description: description.into(),
            version: version.map(str::to_string),
            location: name.into(),
            archive: Bytes::new(),
            archive_digest: "sha256:00".into(),
            files: manifest
                .files
                .iter()
                .map(|f| Bytes::copy_from_slice(files.iter().find(|x| x.0 == f.path).unwrap().1))
                .collect(),
            manifest,
            signature: None,
            page: PageInfo::default(),
        }
    }

    #[test]
    fn only_web_urls_are_links() {
        for ok in ["https://example.com", "HTTP://example.com/a?b=1&c=2"] {
            assert!(web_url(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,x",
            "https://",
            "https:///path",
            "https://a b",
            "https://a\u{7}",
            "//example.com",
            "example.com",
            "ftp://example.com",
        ] {
            assert!(!web_url(bad), "{bad}");
        }
    }

    #[test]
    fn paths_and_roots() {
        assert_eq!(listing_path(Sort::Name, 1), "");
        assert_eq!(listing_path(Sort::Name, 2), "browse/name/2/");
        assert_eq!(listing_path(Sort::Updated, 1), "browse/updated/1/");
        assert_eq!(root_of(""), "./");
        assert_eq!(root_of("skills/a/"), "../../");
        assert!(version_dir_ok("1.2.0-rc.1+build.5"));
        for bad in ["", ".", "..", "1/2", "1 2", "a%2f", "1.0?x"] {
            assert!(!version_dir_ok(bad), "{bad}");
        }
    }

    #[test]
    fn a_site_has_its_pages_and_they_escape_what_skills_say() {
        let site = Site::from_skills(vec![
            skill(
                "alpha",
                "<img src=x onerror=alert(1)> & more",
                Some("1.0.0"),
            ),
            skill("beta", "plain", None),
        ]);
        let text = |p: &str| String::from_utf8(site.get(p).unwrap().body.to_vec()).unwrap();
        let home = text("index.html");
        assert!(
            home.contains("&lt;img src=x onerror=alert(1)&gt; &amp; more"),
            "{home}"
        );
        assert!(!home.contains("<img"));
        assert_eq!(site.get("index.html").unwrap().content_type, HTML);
        for page in [
            "skills/alpha/index.html",
            "skills/alpha/1.0.0/index.html",
            "skills/beta/index.html",
            "browse/updated/1/index.html",
            "search/index.html",
            "assets/style.css",
        ] {
            assert!(site.get(page).is_some(), "{page}");
        }
        let view = site.get("skills/alpha/1.0.0/files/refs/a.md.txt").unwrap();
        assert_eq!(view.content_type, TEXT);
        assert!(site.get("skills/beta/files/SKILL.md.txt").is_some());
        let page = text("skills/alpha/1.0.0/index.html");
        assert!(!page.contains("<script>x()"), "{page}");
        assert!(
            page.contains(r#"href="../../../skills/alpha/1.0.0/files/refs/a.md.txt""#),
            "{page}"
        );
        let main = text("skills/alpha/index.html");
        assert!(
            main.contains(r#"href="../../skills/alpha/1.0.0/files/refs/a.md.txt""#),
            "{main}"
        );
        assert!(site.get(AGENT_SKILLS_INDEX).is_some());
        // Removing a skill takes its pages away, and the listing follows.
        let without = site.with_skill("alpha", None);
        assert!(without.get("skills/alpha/index.html").is_none());
        assert!(
            without
                .get("skills/alpha/1.0.0/files/refs/a.md.txt")
                .is_none()
        );
        let home = String::from_utf8(without.get("index.html").unwrap().body.to_vec()).unwrap();
        assert!(!home.contains("alpha") && home.contains("beta"));
    }

    #[test]
    fn the_listing_is_paged() {
        let skills: Vec<SiteSkill> = (0..(PAGE * 2 + 1))
            .map(|i| skill(&format!("s{i:03}"), "d", None))
            .collect();
        let site = Site::from_skills(skills);
        let text = |p: &str| String::from_utf8(site.get(p).unwrap().body.to_vec()).unwrap();
        let home = text("index.html");
        assert_eq!(home.matches(r#"<li class="card">"#).count(), PAGE);
        assert!(
            home.contains(r#"<a rel="next" href="./browse/name/2/">"#),
            "{home}"
        );
        let last = text("browse/name/3/index.html");
        assert_eq!(last.matches(r#"<li class="card">"#).count(), 1);
        assert!(last.contains("s100"));
        assert!(site.get("browse/name/4/index.html").is_none());
        assert!(site.get("browse/updated/3/index.html").is_some());
    }
}
