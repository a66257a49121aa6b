//! Writing HTML by hand, safely: every string that is not the page's own markup goes through
//! [`esc`] (text and attribute values) or [`url_path`] (a path inside a URL).

use std::fmt;

/// Text escaped for HTML: `&`, `<`, `>`, `"` and `'` become entities, so the result is safe
/// as element text and as a quoted attribute value. Control characters other than tab and
/// line feed are dropped (they have no business on a page).
pub(crate) struct Esc<'a>(&'a str);

/// `text`, escaped for HTML when displayed.
pub(crate) fn esc(text: &str) -> Esc<'_> {
    Esc(text)
}

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(|c: char| {
            matches!(c, '&' | '<' | '>' | '"' | '\'') || (c.is_control() && c != '\n' && c != '\t')
        }) {
            f.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().expect("a char at i");
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&#39;")?,
                _ => {}
            }
            rest = &rest[i + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// A relative path (`references/a b.md`) as the path of a URL: each segment percent-encoded
/// (RFC 3986 unreserved characters stay), the `/` between them kept.
pub(crate) fn url_path(path: &str) -> String {
    path.split('/')
        .map(crate::path::percent_encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// Bytes as people read them: `812 B`, `1.3 KiB`, `2.0 MiB`.
pub(crate) fn size(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_could_open_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\"").to_string(),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(esc("a\u{1b}[2Jb\nc").to_string(), "a[2Jb\nc");
        assert_eq!(esc("навык").to_string(), "навык");
    }

    #[test]
    fn url_paths_keep_slashes_only() {
        assert_eq!(url_path("refs/a b.md"), "refs/a%20b.md");
        assert_eq!(url_path("x\"><s>"), "x%22%3E%3Cs%3E");
        assert_eq!(url_path("a?b#c"), "a%3Fb%23c");
    }

    #[test]
    fn sizes() {
        assert_eq!(size(812), "812 B");
        assert_eq!(size(1290), "1.3 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
    }
}
