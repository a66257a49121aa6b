//! `skill://` URIs and media types: pure functions, no I/O.
//!
//! ```text
//! skill://<name>/SKILL.md          the skill's document (whatever its file is called: SKILL.md or skill.md)
//! skill://<name>/<path>            any other file, `/`-separated, each segment percent-encoded
//! ```
//!
//! Segments keep RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`) and encode every other
//! byte as `%XX` (uppercase hex), so a URI never holds a `/`, `?`, `#` or space of a name or path.

use crate::path::{DOCUMENT_NAMES, percent_decode, percent_encode};

/// The scheme prefix of every resource the server offers.
pub const SCHEME: &str = "skill://";

/// The last segment of a skill's document URI (SEP-2640 requires exactly this spelling).
pub const DOCUMENT: &str = DOCUMENT_NAMES[0];

/// The URI of a file of a skill: `skill://<name>/<path>`, with `path` relative to the skill root
/// and `/`-separated. Pass [`DOCUMENT`] for the document.
///
/// ```
/// use skillcat_runtime::mcp::uri::file_uri;
/// assert_eq!(file_uri("pdf-forms", "SKILL.md"), "skill://pdf-forms/SKILL.md");
/// assert_eq!(file_uri("pdf-forms", "references/field list.md"),
///            "skill://pdf-forms/references/field%20list.md");
/// ```
pub fn file_uri(name: &str, path: &str) -> String {
    let mut uri = String::from(SCHEME);
    uri.push_str(&percent_encode(name));
    for segment in path.split('/') {
        uri.push('/');
        uri.push_str(&percent_encode(segment));
    }
    uri
}

/// Splits a `skill://<name>/<path>` URI into the decoded name and path. `None` for another
/// scheme, a query or fragment, an empty segment, `.`/`..` segments, a decoded segment holding
/// `/` or NUL, or a broken escape: such a URI names nothing the server offers.
pub fn parse(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.contains(['?', '#']) {
        return None;
    }
    let mut segments = rest.split('/');
    let name = percent_decode(segments.next()?)?;
    let mut path = Vec::new();
    for s in segments {
        let s = percent_decode(s)?;
        if s.is_empty() || s == "." || s == ".." || s.contains(['/', '\0']) {
            return None;
        }
        path.push(s);
    }
    if name.is_empty() || name.contains(['/', '\0']) || path.is_empty() {
        return None;
    }
    Some((name, path.join("/")))
}

/// Splits a directory URI — `skill://<name>` (the skill's root, also with a `/` after it) or
/// `skill://<name>/<folder>` — into the decoded name and folder path (`""` for the root), by
/// the same rules as [`parse`].
///
/// ```
/// use skillcat_runtime::mcp::uri::parse_directory;
/// assert_eq!(parse_directory("skill://pdf"), Some(("pdf".into(), "".into())));
/// assert_eq!(parse_directory("skill://pdf/scripts/"), Some(("pdf".into(), "scripts".into())));
/// assert_eq!(parse_directory("skill://pdf/../x"), None);
/// ```
pub fn parse_directory(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if !rest.contains('/') {
        if rest.contains(['?', '#']) {
            return None;
        }
        let name = percent_decode(rest)?;
        return (!name.is_empty() && !name.contains(['/', '\0'])).then_some((name, String::new()));
    }
    parse(&format!("{SCHEME}{rest}"))
}

/// The media type of a file, from its extension; for an unknown extension, `text/plain` when the
/// bytes are text ([`is_text`]) and `application/octet-stream` otherwise (or when they are not
/// known).
pub fn media_type(path: &str, bytes: Option<&[u8]>) -> &'static str {
    let ext = path
        .rsplit('/')
        .next()
        .and_then(|file| file.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    let known = match ext.as_deref() {
        Some("md" | "markdown") => Some("text/markdown"),
        Some("txt" | "text") => Some("text/plain"),
        Some("py") => Some("text/x-python"),
        Some("sh" | "bash") => Some("text/x-shellscript"),
        Some("js" | "mjs") => Some("text/javascript"),
        Some("ts") => Some("text/x-typescript"),
        Some("rb") => Some("text/x-ruby"),
        Some("html" | "htm") => Some("text/html"),
        Some("css") => Some("text/css"),
        Some("csv") => Some("text/csv"),
        Some("json") => Some("application/json"),
        Some("yaml" | "yml") => Some("application/yaml"),
        Some("toml") => Some("application/toml"),
        Some("xml") => Some("application/xml"),
        Some("svg") => Some("image/svg+xml"),
        Some("png") => Some("image/png"),
        Some("jpg" | "jpeg") => Some("image/jpeg"),
        Some("gif") => Some("image/gif"),
        Some("webp") => Some("image/webp"),
        Some("pdf") => Some("application/pdf"),
        Some("zip") => Some("application/zip"),
        Some("gz" | "tgz") => Some("application/gzip"),
        Some("wasm") => Some("application/wasm"),
        _ => None,
    };
    match (known, bytes) {
        (Some(m), _) => m,
        (None, Some(b)) if is_text(b) => "text/plain",
        (None, _) => "application/octet-stream",
    }
}

/// Whether a media type is read as text: `text/*`, JSON, YAML, TOML, XML and their `+json`,
/// `+xml` kinds.
pub fn is_textual(media_type: &str) -> bool {
    media_type.starts_with("text/")
        || matches!(
            media_type,
            "application/json" | "application/yaml" | "application/toml" | "application/xml"
        )
        || media_type.ends_with("+json")
        || media_type.ends_with("+xml")
}

/// Whether bytes can travel as text: UTF-8 without NUL.
pub fn is_text(bytes: &[u8]) -> bool {
    !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip() {
        for (name, path) in [
            ("pdf-forms", "SKILL.md"),
            ("pdf-forms", "scripts/fill.py"),
            ("résumé", "my notes/a?b#c%d.md"),
            ("x", "a/b/c/d.txt"),
        ] {
            let uri = file_uri(name, path);
            assert!(!uri[SCHEME.len()..].contains(['?', '#', ' ']), "{uri}");
            assert_eq!(
                parse(&uri),
                Some((name.to_string(), path.to_string())),
                "{uri}"
            );
        }
    }

    #[test]
    fn uris_that_name_nothing_are_refused() {
        for uri in [
            "file:///etc/passwd",
            "skill://",
            "skill://x",
            "skill://x/",
            "skill:///SKILL.md",
            "skill://x//SKILL.md",
            "skill://x/../y/SKILL.md",
            "skill://x/./SKILL.md",
            "skill://x/%2E%2E/SKILL.md",
            "skill://x/a%2Fb",
            "skill://x/a%00b",
            "skill://x/SKILL.md?raw",
            "skill://x/SKILL.md#top",
            "skill://x/%zz",
            "skill://x/%4",
            "skill://x/%FF",
        ] {
            assert_eq!(parse(uri), None, "{uri}");
        }
    }

    #[test]
    fn lowercase_escapes_decode() {
        assert_eq!(
            parse("skill://r%c3%a9sum%c3%a9/SKILL.md"),
            Some(("résumé".into(), "SKILL.md".into()))
        );
    }

    #[test]
    fn media_types() {
        assert_eq!(media_type("SKILL.md", None), "text/markdown");
        assert_eq!(media_type("scripts/run.SH", None), "text/x-shellscript");
        assert_eq!(media_type("assets/logo.png", Some(b"\x89PNG")), "image/png");
        assert_eq!(media_type("LICENSE", Some(b"MIT")), "text/plain");
        assert_eq!(
            media_type("blob.bin", Some(b"\x00\x01")),
            "application/octet-stream"
        );
        assert_eq!(
            media_type("no-extension", Some(b"\xff\xfe")),
            "application/octet-stream"
        );
        assert_eq!(media_type("dir.d/file", None), "application/octet-stream");
        assert!(is_textual("text/markdown"));
        assert!(is_textual("application/json"));
        assert!(is_textual("image/svg+xml"));
        assert!(!is_textual("image/png"));
        assert!(!is_textual("application/octet-stream"));
    }
}
