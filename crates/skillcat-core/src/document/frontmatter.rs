//! Splitting a SKILL.md into frontmatter and body.
//!
//! ```text
//! [BOM]---            ← opening line: exactly `---` (trailing blanks allowed)
//! name: pdf-forms     ← strict YAML, every scalar text
//! description: …
//! ---                 ← closing line: exactly `---`; a `---` inside a value closes nothing
//! # Body              ← Markdown, trimmed
//! ```
//!
//! CRLF is read as LF. Only a text that is not a skill document is refused here; field rules are
//! [`validate`](super::validate)'s business.

use std::borrow::Cow;

use super::yaml;
use super::{Fault, FaultKind, Map, Value};

/// A parsed SKILL.md: the frontmatter mapping and the Markdown body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The whole frontmatter, in document order.
    pub frontmatter: Map,
    /// The Markdown after the closing `---`, with surrounding whitespace trimmed.
    pub body: String,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Whether a line (without its `\n`) is a fence: `---` followed only by blanks.
fn is_fence(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.bytes().all(|b| b == b' ' || b == b'\t'))
}

/// Reads a SKILL.md from its raw bytes.
///
/// Refusals (each a [`Fault`] with its stable kind): `not-utf8` (naming the byte offset),
/// `missing-frontmatter`, `unclosed-frontmatter`, `bad-yaml` (with line and column in the file),
/// `not-a-mapping`.
pub fn parse_document(bytes: &[u8]) -> Result<Document, Fault> {
    parse(bytes, true)
}

/// Reads a SKILL.md's frontmatter from its raw bytes, checked exactly as [`parse_document`]
/// checks the whole document (the same refusals, the whole text UTF-8), without copying the
/// body out: the [`Document`]'s `body` is empty. For callers that need tier 1 alone — validating
/// or prompting thousands of skills, where the bodies' copies were a third of the work.
pub fn parse_frontmatter(bytes: &[u8]) -> Result<Document, Fault> {
    parse(bytes, false)
}

fn parse(bytes: &[u8], keep_body: bool) -> Result<Document, Fault> {
    let (bytes, bom_len) = match bytes.strip_prefix(BOM) {
        Some(rest) => (rest, BOM.len()),
        None => (bytes, 0),
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Fault::new(
            FaultKind::NotUtf8,
            format!(
                "SKILL.md is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to() + bom_len
            ),
        )
    })?;
    // The whole document is scanned for `\r`: with SIMD, not byte by byte.
    let text: Cow<'_, str> = if memchr::memchr(b'\r', text.as_bytes()).is_some() {
        Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(text)
    };
    parse_text(&text, keep_body)
}

fn missing_frontmatter() -> Fault {
    Fault::new(
        FaultKind::MissingFrontmatter,
        "SKILL.md must start with YAML frontmatter (---)",
    )
}

fn parse_text(text: &str, keep_body: bool) -> Result<Document, Fault> {
    let (first, rest) = match text.split_once('\n') {
        Some((first, rest)) => (first, rest),
        None => (text, ""),
    };
    if !is_fence(first) {
        return Err(missing_frontmatter());
    }
    // Find the closing fence: a whole line, starting at `rest`.
    let mut offset = 0;
    let mut close = None;
    for line in rest.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        if is_fence(content) {
            close = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start)) = close else {
        return Err(Fault::new(
            FaultKind::UnclosedFrontmatter,
            "SKILL.md frontmatter not properly closed with ---",
        ));
    };
    let yaml_text = &rest[..yaml_end];
    let body = if keep_body {
        rest[body_start..].trim().to_string()
    } else {
        String::new()
    };
    let value = yaml::parse(yaml_text).map_err(|e| {
        let fault = Fault::new(
            FaultKind::BadYaml,
            // Lines are counted in the file: the opening fence is line 1.
            format!(
                "Invalid YAML in frontmatter: line {}, column {}: {}",
                e.line + 1,
                e.col,
                e.message
            ),
        );
        match quote_hint(yaml_text, e.line, &e.message) {
            Some(hint) => fault.with_hint(hint),
            None => fault,
        }
    })?;
    match value {
        Some(Value::Map(frontmatter)) => Ok(Document { frontmatter, body }),
        _ => Err(Fault::new(
            FaultKind::NotAMapping,
            "SKILL.md frontmatter must be a YAML mapping",
        )),
    }
}

/// For YAML's "mapping values are not allowed" on a plain `key: value` line (`description: Use
/// when: x`, a `: ` inside the value): the line with its value quoted, as the author should
/// write it. `line` counts from 1 in `yaml_text`.
pub(crate) fn quote_hint(yaml_text: &str, line: usize, message: &str) -> Option<String> {
    if !message.starts_with("mapping values are not allowed") {
        return None;
    }
    let text = yaml_text.lines().nth(line.checked_sub(1)?)?;
    let (key, value) = text.split_once(": ")?;
    let value = value.trim();
    let plain = |k: &str| {
        !k.trim().is_empty()
            && !k.trim_start().starts_with(['-', '#', '"', '\''])
            && !k.contains(['"', '\'', '{', '[', ':'])
    };
    if !plain(key) || value.is_empty() || value.starts_with(['"', '\'', '|', '>', '[', '{']) {
        return None;
    }
    let quoted = value.replace('\\', "\\\\").replace('"', "\\\"");
    Some(format!(
        "a value holding \": \" must be quoted; write:\n{key}: \"{quoted}\""
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(src: &[u8]) -> FaultKind {
        parse_document(src).unwrap_err().kind()
    }

    #[test]
    fn fences_must_be_whole_lines() {
        assert_eq!(kind(b"# no frontmatter"), FaultKind::MissingFrontmatter);
        assert_eq!(kind(b""), FaultKind::MissingFrontmatter);
        assert_eq!(kind(b"----\nname: x\n---\n"), FaultKind::MissingFrontmatter);
        assert_eq!(kind(b" ---\nname: x\n---\n"), FaultKind::MissingFrontmatter);
        assert_eq!(kind(b"---\nname: x\n"), FaultKind::UnclosedFrontmatter);
        assert_eq!(
            kind(b"---\nname: x\n----\n"),
            FaultKind::UnclosedFrontmatter
        );
        assert_eq!(kind(b"---"), FaultKind::UnclosedFrontmatter);
    }

    #[test]
    fn invalid_utf8_names_the_offset() {
        let f = parse_document(b"---\nname: \xff\n---\n").unwrap_err();
        assert_eq!(f.kind(), FaultKind::NotUtf8);
        assert!(f.message().contains("offset 10"), "{}", f.message());
        // The offset counts the BOM too: it is a position in the file.
        let f = parse_document(b"\xEF\xBB\xBF---\n\xfe").unwrap_err();
        assert!(f.message().contains("offset 7"), "{}", f.message());
    }

    #[test]
    fn bom_and_crlf_and_trailing_blanks_on_fences() {
        let d =
            parse_document(b"\xEF\xBB\xBF---  \r\nname: a\r\n---\t\r\nBody\r\nmore\r\n").unwrap();
        assert_eq!(d.body, "Body\nmore");
    }

    #[test]
    fn closing_fence_at_end_of_file_without_newline() {
        let d = parse_document(b"---\nname: a\n---").unwrap();
        assert_eq!(d.body, "");
    }

    #[test]
    fn frontmatter_alone_is_checked_as_the_whole_document() {
        let inputs: [&[u8]; 7] = [
            b"---\nname: a\ndescription: b\n---\nBody\n",
            b"\xEF\xBB\xBF---\r\nname: a\r\n---\r\nBody\r\n",
            // A bad byte in the body is the document's fault, whatever is kept.
            b"---\nname: a\n---\nBody \xff\n",
            b"---\nname: [a\n---\n",
            b"---\nname: a\n",
            b"no fence\n",
            b"---\n- a\n---\n",
        ];
        for input in inputs {
            let whole = parse_document(input);
            let tier1 = parse_frontmatter(input);
            match (whole, tier1) {
                (Ok(w), Ok(t)) => {
                    assert_eq!(w.frontmatter, t.frontmatter);
                    assert_eq!(t.body, "");
                }
                (Err(w), Err(t)) => assert_eq!((w.kind(), w.message()), (t.kind(), t.message())),
                (w, t) => panic!("{input:?}: {w:?} vs {t:?}"),
            }
        }
        assert_eq!(parse_document(inputs[0]).unwrap().body, "Body");
    }

    #[test]
    fn a_colon_in_a_plain_value_says_to_quote_it() {
        let f =
            parse_document(b"---\nname: a\ndescription: Use when: \"x\" fails\n---\n").unwrap_err();
        assert_eq!(f.kind(), FaultKind::BadYaml);
        assert!(
            f.message().contains("mapping values are not allowed"),
            "{f}"
        );
        assert_eq!(
            f.hint(),
            Some(
                "a value holding \": \" must be quoted; write:\ndescription: \"Use when: \\\"x\\\" fails\""
            )
        );
        // Another YAML error gets no such hint.
        let f = parse_document(b"---\nname: [a\n---\n").unwrap_err();
        assert_eq!(f.hint(), None);
    }

    #[test]
    fn empty_frontmatter_is_not_a_mapping() {
        assert_eq!(kind(b"---\n---\nbody"), FaultKind::NotAMapping);
    }
}
