//! A skill's SKILL.md body as HTML: Markdown rendered by pulldown-cmark, then sanitized by
//! ammonia against an allow-list. The body is untrusted: raw HTML in it is parsed and cleaned
//! like everything else, so no script, event handler, `javascript:`/`data:` URL, iframe, form,
//! SVG, style or image reaches a page. Images become links (a page loads nothing a skill
//! names); relative links to the skill's own files go to their text views.
//!
//! **Bounded by construction.** The body is also hostile to the CPU: nested containers
//! (`>` × 999,000, `1. ` × 20,000) cost a Markdown parser time that grows faster than their
//! length, and deep raw HTML (`<div>` × N) does the same to the sanitizer's HTML parser. So a
//! body is rendered only within [`LIMITS`]: its size, the container markers that open on one
//! line (checked before the parser sees the body), the nesting depth and the number of
//! elements of what was parsed (Markdown and raw HTML tags alike, counted as the parser goes,
//! stopping it at the first one over). A body past any of them is shown as escaped text, with
//! a note saying which limit it passed ([`render`] never fails). Rendered bodies are kept by
//! the digest of what they are made from ([`render_cached`]), so a body is rendered once
//! however many pages, versions and site updates show it.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::html::esc;

/// Tags ammonia allows by default that a skill's body does not get: images and image maps
/// (a page loads nothing a skill names), and landmarks (a page has its own).
const REMOVED_TAGS: [&str; 7] = ["img", "map", "area", "nav", "header", "footer", "hgroup"];

/// What one body may cost to render; past any limit it is shown as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RenderLimits {
    /// Bytes of Markdown.
    pub max_input: usize,
    /// Nesting: container markers opening on one line (`>`, `-`, `1.`), the depth of the
    /// parsed elements, and the depth of raw HTML tags, each.
    pub max_depth: usize,
    /// Elements: Markdown elements and raw HTML tags together.
    pub max_elements: usize,
    /// Character references (`&lt;`, `&amp;`, …) in one run of text of the HTML handed to
    /// the sanitizer: its HTML parser appends each to the text before it at a cost that grows
    /// with the text (`&amp;` × 20,000 took 11 s).
    pub max_refs_per_text: usize,
}

/// The limits of `serve`, `export` and `publish` alike (every site is made by one renderer).
/// A long SKILL.md of real skills is under 100 KiB, a few levels deep and a few thousand
/// elements; these leave room for ten times that.
pub(crate) const LIMITS: RenderLimits = RenderLimits {
    max_input: 512 * 1024,
    max_depth: 32,
    max_elements: 50_000,
    max_refs_per_text: 2_048,
};

/// Which limit a body passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OverLimit {
    /// Longer than `max_input`.
    Size(usize),
    /// Nested deeper than `max_depth`.
    Depth,
    /// More than `max_elements` elements.
    Elements,
    /// A run of text with more than `max_refs_per_text` escaped characters.
    Refs,
}

impl OverLimit {
    fn why(self, l: &RenderLimits) -> String {
        match self {
            OverLimit::Size(n) => format!(
                "it is {} KiB, over the {} KiB a page renders",
                n.div_ceil(1024),
                l.max_input / 1024
            ),
            OverLimit::Depth => format!("it nests deeper than {} levels", l.max_depth),
            OverLimit::Elements => format!("it has more than {} elements", l.max_elements),
            OverLimit::Refs => format!(
                "a run of its text has more than {} characters to escape (<, >, &)",
                l.max_refs_per_text
            ),
        }
    }
}

/// The body as sanitized HTML. `files_base` is where the skill's file views are (a relative
/// URL ending in `/`, joined to `PATH.txt`); `files` the skill's file paths: a relative link
/// to one of them goes to its view, any other relative link is dropped. A body over
/// [`LIMITS`] comes back as escaped text with a note.
pub(crate) fn render(body: &str, files_base: &str, files: &HashSet<String>) -> String {
    render_within(body, files_base, files, &LIMITS)
}

/// [`render`] under `limits`.
pub(crate) fn render_within(
    body: &str,
    files_base: &str,
    files: &HashSet<String>,
    limits: &RenderLimits,
) -> String {
    match bounded(body, files_base, files, limits) {
        Ok(html) => html,
        Err(over) => as_text(body, &over.why(limits)),
    }
}

/// The body shown as text: a note saying why, then the body escaped in a `<pre>`.
fn as_text(body: &str, why: &str) -> String {
    let mut out = String::with_capacity(body.len() + body.len() / 4 + 200);
    let _ = write!(
        out,
        r#"<p class="warn" role="note">This SKILL.md is shown as text, not rendered as Markdown: {}.</p><pre class="raw">{}</pre>"#,
        esc(why),
        esc(body)
    );
    out
}

/// The rendering, or the first limit the body passes.
fn bounded(
    body: &str,
    files_base: &str,
    files: &HashSet<String>,
    limits: &RenderLimits,
) -> Result<String, OverLimit> {
    if body.len() > limits.max_input {
        return Err(OverLimit::Size(body.len()));
    }
    if body.lines().any(|l| line_depth(l) > limits.max_depth) {
        return Err(OverLimit::Depth);
    }
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut count = Count::default();
    let mut events = Vec::new();
    for e in Parser::new_ext(body, opts) {
        count.event(&e, limits)?;
        events.push(match e {
            // An image is shown as a link to it: the page loads nothing a skill names.
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }),
            Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
            other => other,
        });
    }
    let mut raw = String::with_capacity(body.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut raw, events.into_iter());
    if max_refs_in_a_text(&raw) > limits.max_refs_per_text {
        return Err(OverLimit::Refs);
    }
    Ok(sanitizer(files_base, files).clean(&raw).to_string())
}

/// The most character references (`&…;`) in one run of text (between two tags) of `html`.
fn max_refs_in_a_text(html: &str) -> usize {
    html.split('<')
        .map(|run| run.bytes().filter(|&c| c == b'&').count())
        .max()
        .unwrap_or(0)
}

/// How many container markers open on one line: block quotes (`>`) and list items (`-`, `+`,
/// `*`, `1.`, `1)`, each followed by a space), in any mix, before its text. A parser keeps a
/// container open for each, so this is the depth the line asks for, counted without parsing.
/// A thematic break (`* * *`, `- - -`) opens nothing.
pub(crate) fn line_depth(line: &str) -> usize {
    let b = line.as_bytes();
    let is_break = {
        let marks: Vec<u8> = b
            .iter()
            .copied()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        marks.len() >= 3
            && matches!(marks[0], b'*' | b'-' | b'_')
            && marks.iter().all(|&c| c == marks[0])
    };
    if is_break {
        return 0;
    }
    let (mut i, mut depth) = (0, 0);
    loop {
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        let Some(&c) = b.get(i) else { return depth };
        let spaced = |j: usize| j >= b.len() || b[j] == b' ' || b[j] == b'\t';
        match c {
            b'>' => i += 1,
            b'-' | b'+' | b'*' if spaced(i + 1) => i += 1,
            b'0'..=b'9' => {
                let digits = b[i..].iter().take_while(|d| d.is_ascii_digit()).count();
                let j = i + digits;
                if digits <= 9 && matches!(b.get(j), Some(b'.' | b')')) && spaced(j + 1) {
                    i = j + 1;
                } else {
                    return depth;
                }
            }
            _ => return depth,
        }
        depth += 1;
    }
}

/// The depth and the number of elements of what the parser gave so far, raw HTML tags
/// included.
#[derive(Default)]
struct Count {
    depth: usize,
    html_depth: usize,
    elements: usize,
}

/// Elements that never have content (their tag opens nothing).
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

impl Count {
    fn event(&mut self, e: &Event<'_>, l: &RenderLimits) -> Result<(), OverLimit> {
        match e {
            Event::Start(_) => {
                self.depth += 1;
                self.elements += 1;
            }
            Event::End(_) => self.depth = self.depth.saturating_sub(1),
            Event::Html(html) | Event::InlineHtml(html) => self.html(html, l)?,
            _ => {}
        }
        if self.depth > l.max_depth {
            return Err(OverLimit::Depth);
        }
        if self.elements > l.max_elements {
            return Err(OverLimit::Elements);
        }
        Ok(())
    }

    /// Counts the tags of raw HTML: an open tag adds an element and (unless void or
    /// self-closing) a level, a close tag takes a level. Tags left open count as nested, as
    /// an HTML parser may keep them; erring deep only shows a body as text.
    fn html(&mut self, html: &str, l: &RenderLimits) -> Result<(), OverLimit> {
        let b = html.as_bytes();
        let mut i = 0;
        while let Some(k) = b[i..].iter().position(|&c| c == b'<') {
            let at = i + k + 1;
            i = at;
            let close = b.get(at) == Some(&b'/');
            let start = at + usize::from(close);
            let name_len = b[start.min(b.len())..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            if name_len == 0 || !b[start].is_ascii_alphabetic() {
                continue;
            }
            let name = html[start..start + name_len].to_ascii_lowercase();
            if close {
                self.html_depth = self.html_depth.saturating_sub(1);
                continue;
            }
            self.elements += 1;
            let end = b[start..]
                .iter()
                .position(|&c| c == b'>')
                .map(|p| start + p);
            let self_closing = end.is_some_and(|e| e > 0 && b[e - 1] == b'/');
            if !VOID.contains(&name.as_str()) && !self_closing {
                self.html_depth += 1;
                if self.html_depth > l.max_depth {
                    return Err(OverLimit::Depth);
                }
            }
            if self.elements > l.max_elements {
                return Err(OverLimit::Elements);
            }
        }
        Ok(())
    }
}

/// Bytes of rendered bodies kept ([`render_cached`]): a site's worth for most catalogs; past
/// it the oldest go first.
const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// Rendered bodies by the digest of what they were made from.
#[derive(Default)]
struct Cache {
    by_key: HashMap<[u8; 32], Arc<str>>,
    order: VecDeque<[u8; 32]>,
    bytes: usize,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// [`render`], kept by the sha256 of its inputs (body, files' base, file paths): the same body
/// on several pages, or again after a site update, is rendered once.
pub(crate) fn render_cached(body: &str, files_base: &str, files: &HashSet<String>) -> Arc<str> {
    let key = {
        let mut paths: Vec<&str> = files.iter().map(String::as_str).collect();
        paths.sort_unstable();
        let mut input = Vec::with_capacity(body.len() + files_base.len() + 64);
        for part in [body, files_base].into_iter().chain(paths) {
            input.extend_from_slice(&(part.len() as u64).to_le_bytes());
            input.extend_from_slice(part.as_bytes());
        }
        crate::digest::sha256(&input)
    };
    if let Some(hit) = CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|c| c.by_key.get(&key).cloned())
    {
        return hit;
    }
    // Rendered outside the lock: a slow body holds up no other.
    let html: Arc<str> = render(body, files_base, files).into();
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let cache = guard.get_or_insert_with(Cache::default);
    if html.len() <= CACHE_BYTES && !cache.by_key.contains_key(&key) {
        cache.bytes += html.len();
        cache.by_key.insert(key, html.clone());
        cache.order.push_back(key);
        while cache.bytes > CACHE_BYTES {
            let Some(old) = cache.order.pop_front() else {
                break;
            };
            if let Some(gone) = cache.by_key.remove(&old) {
                cache.bytes -= gone.len();
            }
        }
    }
    html
}

/// A description or any other short text a skill gives is never Markdown on a page: it is
/// escaped text (see `html::esc`). This is the allow-list for the body.
fn sanitizer<'a>(files_base: &str, files: &HashSet<String>) -> ammonia::Builder<'a> {
    let mut b = ammonia::Builder::default();
    b.rm_tags(REMOVED_TAGS)
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .link_rel(Some("noopener noreferrer nofollow ugc"))
        .strip_comments(true)
        .id_prefix(Some("body-"));
    b.url_relative(ammonia::UrlRelative::Custom(Box::new(Relative {
        base: files_base.to_string(),
        files: files.clone(),
    })));
    b
}

/// Rewrites the body's relative links ([`relative`]).
struct Relative {
    base: String,
    files: HashSet<String>,
}

impl<'a> ammonia::UrlRelativeEvaluate<'a> for Relative {
    fn evaluate<'url>(&self, url: &'url str) -> Option<Cow<'url, str>> {
        relative(&self.base, &self.files, url)
    }
}

/// Where a relative link of the body goes: a fragment stays, a file of the skill (`./a.md`,
/// `refs/x.md#part`) goes to its view, anything else is dropped.
fn relative(base: &str, files: &HashSet<String>, url: &str) -> Option<Cow<'static, str>> {
    if url.starts_with('#') {
        return Some(Cow::Owned(url.to_string()));
    }
    let (path, fragment) = match url.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (url, None),
    };
    let path = path.split('?').next().unwrap_or("");
    let decoded = crate::path::percent_decode(path)?;
    let clean = decoded.trim_start_matches("./");
    if !files.contains(clean) {
        return None;
    }
    let mut out = format!("{base}{}.txt", super::html::url_path(clean));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(&crate::path::percent_encode(f));
    }
    Some(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(body: &str) -> String {
        let files: HashSet<String> = ["SKILL.md", "refs/a b.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        render(body, "files/", &files)
    }

    #[test]
    fn markdown_renders() {
        let out = html(
            "# Title\n\nSome *text* and a [link](https://example.com/x).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(out.contains("<h1>Title</h1>"), "{out}");
        assert!(out.contains("<em>text</em>"), "{out}");
        assert!(
            out.contains(
                r#"<a href="https://example.com/x" rel="noopener noreferrer nofollow ugc">link</a>"#
            ),
            "{out}"
        );
        assert!(out.contains("<table>"), "{out}");
    }

    #[test]
    fn hostile_markup_is_removed() {
        let out = html(concat!(
            "<script>fetch('http://x/1')</script>\n\n",
            "<img src=x onerror=\"fetch('http://x/2')\">\n\n",
            "<a href=\"javascript:alert(1)\">j</a> <a href=\"data:text/html,<script>\">d</a>\n\n",
            "[md](javascript:alert(1)) ![pic](http://x/3.png)\n\n",
            "<svg onload=\"fetch('http://x/4')\"><circle/></svg>\n\n",
            "<iframe src=\"http://x/5\"></iframe><style>body{background:url(http://x/6)}</style>\n\n",
            "<div onclick=\"x()\" style=\"background:url(http://x/7)\">div</div>",
            "<form action=\"http://x/8\"><input name=a></form><object data=\"http://x/9\"></object>",
            "<base href=\"http://x/\"><meta http-equiv=refresh content=\"0;url=http://x/10\">",
            "<link rel=stylesheet href=\"http://x/11\">",
        ));
        for bad in [
            "<script",
            "onerror",
            "javascript:",
            "data:",
            "<svg",
            "onload",
            "<iframe",
            "<style",
            "style=",
            "onclick",
            "<img",
            "<form",
            "<input",
            "<object",
            "<base",
            "<meta",
            "<link",
        ] {
            assert!(!out.contains(bad), "{bad} in {out}");
        }
        // The image is a link now, to where it pointed: nothing loads it.
        assert!(out.contains(r#"href="http://x/3.png""#), "{out}");
    }

    #[test]
    fn relative_links_go_to_file_views_or_nowhere() {
        let out = html("[a](refs/a%20b.md#top) [b](./SKILL.md) [c](../../etc/passwd) [d](#sec)");
        assert!(
            out.contains(r#"href="files/refs/a%20b.md.txt#top""#),
            "{out}"
        );
        assert!(out.contains(r#"href="files/SKILL.md.txt""#), "{out}");
        assert!(!out.contains("passwd\""), "{out}");
        assert!(out.contains(r##"href="#sec""##), "{out}");
    }
    /// The hostile bodies of issue 49 and the next red team's variants: each is shown as
    /// text with a note (a limit it passes) or rendered, and every one comes back.
    #[test]
    fn hostile_bodies_are_bounded() {
        let lines = |f: &dyn Fn(usize) -> String, n: usize| (0..n).map(f).collect::<String>();
        let text: Vec<(&str, String)> = vec![
            ("quote x 999,000 (issue 49)", ">".repeat(999_000)),
            ("quote x 20,000", ">".repeat(20_000)),
            ("ordered x 20,000", "1. ".repeat(20_000)),
            ("bullets x 20,000", format!("{}x", "- ".repeat(20_000))),
            ("mixed containers", "> - 1) + * ".repeat(4_000)),
            ("spaced quotes", "> ".repeat(50_000)),
            ("div x 100,000", "<div>".repeat(100_000)),
            ("div x 40", "<div>".repeat(40)),
            ("bold tags x 10,000", "<b>".repeat(10_000)),
            (
                "nested spans inline",
                format!("a {}", "<span>".repeat(5_000)),
            ),
            (
                "lists nested by indent",
                lines(&|k| format!("{}- x\n", "  ".repeat(k)), 200),
            ),
            (
                "quotes one per line",
                lines(&|k| format!("{}\n", ">".repeat(k)), 2_000),
            ),
            ("60,000 list items", "- a\n".repeat(60_000)),
            ("over the size", "word ".repeat(120_000)),
            ("entities x 100,000", "&amp;".repeat(100_000)),
            ("angle brackets x 200,000", "<".repeat(200_000)),
            (
                "ampersands in code",
                format!("```\n{}\n```\n", "&".repeat(100_000)),
            ),
            (
                "emphasis nested",
                format!("{}a{}", "*a ".repeat(40), " a*".repeat(40)),
            ),
        ];
        for (what, body) in &text {
            let out = html(body);
            assert!(
                out.contains("not rendered as Markdown"),
                "{what}: {}",
                &out[..out.len().min(300)]
            );
            assert!(
                !out.contains("<blockquote") && !out.contains("<div"),
                "{what}"
            );
            assert!(out.contains("</pre>"), "{what}");
        }
        // Flat or shallow, however long: rendered (whatever the parser makes of it).
        let rendered: Vec<(&str, String)> = vec![
            ("stars", "*".repeat(200_000)),
            ("brackets", "[".repeat(200_000)),
            ("image brackets", "![".repeat(100_000)),
            ("backticks", "`".repeat(200_000)),
            ("unclosed links", "[a](".repeat(50_000)),
            ("emphasis runs", "a **b ".repeat(30_000)),
            (
                "escapes across paragraphs",
                "a < b & c \"d\"\n\n".repeat(10_000),
            ),
            (
                "quotes in code",
                format!("```\n{}\n```\n", "\"".repeat(100_000)),
            ),
            (
                "code with quotes",
                format!("```json\n{}```\n", "{\"key\": \"value\"}\n".repeat(400)),
            ),
            (
                "table columns",
                format!("{}\n{}\n", "|a".repeat(5_000), "|-".repeat(5_000)),
            ),
            ("a thematic break of 20,000", "- ".repeat(20_000)),
            (
                "thematic break",
                "* * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * *".into(),
            ),
        ];
        for (what, body) in &rendered {
            let out = html(body);
            assert!(!out.contains("not rendered as Markdown"), "{what}");
        }
    }

    #[test]
    fn shallow_nesting_renders_and_depth_is_counted_without_parsing() {
        let out = html("> > > deep enough\n\n1. a\n   - b\n     > c\n\n<div><div>x</div></div>\n");
        assert_eq!(out.matches("<blockquote>").count(), 4, "{out}");
        assert!(
            out.contains("<ol>") && out.contains("<ul>") && out.contains("<div>"),
            "{out}"
        );
        for (line, depth) in [
            ("> > > x", 3),
            ("1. - > x", 3),
            ("12) 3. x", 2),
            ("-x", 0),
            ("* * *", 0),
            ("- - - -", 0),
            ("1234567890. x", 0),
            ("   >>> - ", 4),
            ("", 0),
        ] {
            assert_eq!(line_depth(line), depth, "{line:?}");
        }
    }

    #[test]
    fn a_body_past_a_limit_is_escaped_text_with_the_reason() {
        let tight = RenderLimits {
            max_input: 64,
            max_depth: 2,
            max_elements: 3,
            max_refs_per_text: 4,
        };
        let files = HashSet::new();
        let r = |b: &str| render_within(b, "f/", &files, &tight);
        assert!(r(&"x".repeat(65)).contains("it is 1 KiB, over the 0 KiB"));
        assert!(r("> > > <script>x</script>").contains("nests deeper than 2 levels"));
        let out = r("> > > <script>x</script>");
        assert!(out.contains("&gt; &gt; &gt; &lt;script&gt;"), "{out}");
        assert!(!out.contains("<script"), "{out}");
        assert!(r("a\n\nb\n\nc\n\nd").contains("more than 3 elements"));
        assert!(r("<p><p><p>").contains("nests deeper"));
        assert!(!r("a<br>b<br/>").contains("not rendered"));
        assert!(r("`<<<<<`").contains("more than 4 characters to escape"));
        assert!(!r("`<<<<`").contains("not rendered"));
    }

    #[test]
    fn the_cache_gives_the_same_rendering_once() {
        let files: HashSet<String> = ["SKILL.md".to_string()].into();
        let a = render_cached("# cached body 49", "f/", &files);
        let b = render_cached("# cached body 49", "f/", &files);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, render("# cached body 49", "f/", &files));
        let other = render_cached("# cached body 49", "g/", &files);
        assert!(!Arc::ptr_eq(&a, &other));
    }
}
