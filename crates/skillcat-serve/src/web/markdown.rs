//! A skill's SKILL.md body as HTML: Markdown rendered by pulldown-cmark, then sanitized by
//! ammonia against an allow-list. The body is untrusted: raw HTML in it is parsed and cleaned
//! like everything else, so no script, event handler, `javascript:`/`data:` URL, iframe, form,
//! SVG, style or image reaches a page. Images become links (a page loads nothing a skill
//! names); relative links to the skill's own files go to their text views.

use std::borrow::Cow;
use std::collections::HashSet;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Tags ammonia allows by default that a skill's body does not get: images and image maps
/// (a page loads nothing a skill names), and landmarks (a page has its own).
const REMOVED_TAGS: [&str; 7] = ["img", "map", "area", "nav", "header", "footer", "hgroup"];

/// The body as sanitized HTML. `files_base` is where the skill's file views are (a relative
/// URL ending in `/`, joined to `PATH.txt`); `files` the skill's file paths: a relative link
/// to one of them goes to its view, any other relative link is dropped.
pub(crate) fn render(body: &str, files_base: &str, files: &HashSet<String>) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(body, opts).map(|e| match e {
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
    let mut raw = String::with_capacity(body.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut raw, events);
    sanitizer(files_base, files).clean(&raw).to_string()
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
}
