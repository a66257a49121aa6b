//! The shared vocabulary of paths inside a skill: the bottom layer every other module may use.
//!
//! ```text
//! source "team/pdf"  ── a skill root, relative to its source ("" for a lone skill)
//!   └─ RelPath "scripts/fill.py"  ── a file of the skill, canonical (one check, rules.rs)
//!        join_path(root, rel) = "team/pdf/scripts/fill.py"  ── what Source::read takes
//! FileEntry { path, size, executable, private }  ── one listed file
//! DOCUMENT_NAMES = ["SKILL.md", "skill.md"]  ── the document, in order of preference
//! ```
//!
//! Every path that crosses a trust boundary — an archive entry, a name in an HTTP index, a
//! reference a model asks the runtime to read, a request path of the server — goes through the
//! one check of [`check_canonical`] (usually as [`RelPath::new`]), so a path refused by one
//! store is refused by all of them, for the same [`PathRule`].

mod rules;

use std::fmt;

pub(crate) use rules::fold_key_into;
pub use rules::{
    MAX_COMPONENT_BYTES, MAX_DEPTH, MAX_PATH_BYTES, PathRule, check_canonical, fold_key, is_ignored,
};

/// The names a skill's document may have, in order of preference: `SKILL.md`, else `skill.md`.
pub const DOCUMENT_NAMES: [&str; 2] = ["SKILL.md", "skill.md"];

/// The folder a document path names (`a/b/SKILL.md` → `a/b`, `skill.md` → ``), or the path
/// itself, without a trailing `/`, when it does not end in one of the [`DOCUMENT_NAMES`].
pub fn document_folder(path: &str) -> &str {
    DOCUMENT_NAMES
        .iter()
        .find_map(|n| path.strip_suffix(n))
        .unwrap_or(path)
        .trim_end_matches('/')
}

/// Whether a file name is one of the [`DOCUMENT_NAMES`].
pub fn is_document_name(name: &str) -> bool {
    DOCUMENT_NAMES.contains(&name)
}

/// One regular file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the skill root, `/`-separated, canonical (no `.`, `..` or empty parts).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Whether the file is executable (a mode bit on disk, a flag in a manifest).
    pub executable: bool,
    /// Whether the file is closed to others (no read bit for them on disk; `false` where the
    /// source keeps no modes): a workspace keeps it so (0600, 0700 when executable), never
    /// handing out as 0644 a file its owner kept private.
    pub private: bool,
}

/// Joins a root and a relative path with `/` (either may be empty).
///
/// ```
/// use skillcat_core::path::join_path;
/// assert_eq!(join_path("team/pdf", "SKILL.md"), "team/pdf/SKILL.md");
/// assert_eq!(join_path("", "SKILL.md"), "SKILL.md");
/// ```
pub fn join_path(root: &str, rel: &str) -> String {
    match (root.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_string(),
        (false, true) => root.to_string(),
        (false, false) => format!("{}/{}", root.trim_end_matches('/'), rel),
    }
}

/// The last `/`-separated component of a path (`"a/b/c"` → `"c"`, `""` → `""`).
pub fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// Percent-encodes one path segment for a URI: RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`) stay, every other byte is `%XX` (uppercase hex), so the result never
/// holds a `/`, `?`, `#` or space.
///
/// ```
/// use skillcat_core::path::percent_encode;
/// assert_eq!(percent_encode("my notes.md"), "my%20notes.md");
/// assert_eq!(percent_encode("résumé"), "r%C3%A9sum%C3%A9");
/// ```
pub fn percent_encode(segment: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    out
}

/// Decodes `%XX` escapes (two hex digits, either case). `None` for a broken escape (`%2`,
/// `%+1`, `%zz`) or a result that is not UTF-8. Nothing else is changed: `+` stays `+`.
///
/// ```
/// use skillcat_core::path::percent_decode;
/// assert_eq!(percent_decode("a%20b/%D0%BD").as_deref(), Some("a b/н"));
/// assert_eq!(percent_decode("%2"), None);
/// assert_eq!(percent_decode("%ff"), None);
/// ```
pub fn percent_decode(text: &str) -> Option<String> {
    fn digit(b: u8) -> Option<u8> {
        char::from(b).to_digit(16).map(|d| d as u8)
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = digit(*bytes.get(i + 1)?)?;
            let lo = digit(*bytes.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Why a reference from a skill's body names no file inside the skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BadReference {
    /// Nothing (or only a `#fragment`).
    Empty,
    /// A control character.
    ControlChar,
    /// It starts at `/`.
    Absolute,
    /// A `\`.
    Backslash,
    /// A scheme (`https:`, `mailto:`) or a drive (`C:`) before any `/`.
    Url,
    /// A `..` that climbs out of the skill.
    ClimbsOut,
    /// It names the skill's root (`.`, `a/..`).
    Root,
    /// After normalising, it breaks a path rule (a name Windows reserves, a path too long, …).
    Rule(PathRule),
}

impl fmt::Display for BadReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BadReference::Empty => "an empty path names no file",
            BadReference::ControlChar => "control characters are not allowed in a path",
            BadReference::Absolute => "an absolute path is outside the skill",
            BadReference::Backslash => "a backslash is not a path separator here",
            BadReference::Url => "a URL (or a drive) is not a file of the skill",
            BadReference::ClimbsOut => "the path climbs out of the skill",
            BadReference::Root => "the path names the skill's root, not a file",
            BadReference::Rule(rule) => return write!(f, "{rule}"),
        })
    }
}

impl std::error::Error for BadReference {}

/// Resolves a reference from a skill's body (tier 3) to the file it names inside the skill:
/// a `#fragment` is dropped, `./` and inner `..` are normalised, and the result must pass the
/// one path check. URLs and other schemes, absolute paths, backslashes and a `..` that climbs
/// out are refused, each with its reason.
///
/// ```
/// use skillcat_core::path::{BadReference, resolve_reference};
/// assert_eq!(resolve_reference("./references/../guide.md#usage").unwrap().as_str(), "guide.md");
/// assert_eq!(resolve_reference("../other/SKILL.md"), Err(BadReference::ClimbsOut));
/// assert_eq!(resolve_reference("https://example.com/x"), Err(BadReference::Url));
/// ```
pub fn resolve_reference(reference: &str) -> Result<RelPath, BadReference> {
    let r = reference.split('#').next().unwrap_or("").trim();
    if r.is_empty() {
        return Err(BadReference::Empty);
    }
    if r.chars().any(char::is_control) {
        return Err(BadReference::ControlChar);
    }
    if r.starts_with('/') {
        return Err(BadReference::Absolute);
    }
    if r.contains('\\') {
        return Err(BadReference::Backslash);
    }
    if r.find(':').is_some_and(|colon| !r[..colon].contains('/')) {
        return Err(BadReference::Url);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in r.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or(BadReference::ClimbsOut)?;
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(BadReference::Root);
    }
    RelPath::new(parts.join("/")).map_err(BadReference::Rule)
}

/// A path inside a skill that passed [`check_canonical`]: relative, `/`-separated, no empty,
/// `.` or `..` component, nothing a file system or a terminal would misread. Checked once, when
/// made; every holder may use it without checking again.
///
/// ```
/// use skillcat_core::path::{PathRule, RelPath};
/// let p = RelPath::new("references/forms.md").unwrap();
/// assert_eq!(p.as_str(), "references/forms.md");
/// assert_eq!(p.file_name(), "forms.md");
/// assert_eq!(RelPath::new("../SKILL.md"), Err(PathRule::DotComponent));
/// assert_eq!(RelPath::new("/etc/passwd"), Err(PathRule::Absolute));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl RelPath {
    /// Checks `path` and keeps it; the first rule it breaks otherwise.
    pub fn new(path: impl Into<String>) -> Result<RelPath, PathRule> {
        let path = path.into();
        check_canonical(&path)?;
        Ok(RelPath(path))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its last component.
    pub fn file_name(&self) -> &str {
        base_name(&self.0)
    }

    /// The path under a skill root, as [`Source::read`](crate::source::Source::read) takes it.
    pub fn under(&self, root: &str) -> String {
        join_path(root, &self.0)
    }

    /// Whether this is a skill's document ([`DOCUMENT_NAMES`]).
    pub fn is_document(&self) -> bool {
        is_document_name(&self.0)
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for RelPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for RelPath {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<RelPath> for String {
    fn from(p: RelPath) -> String {
        p.0
    }
}

impl TryFrom<&str> for RelPath {
    type Error = PathRule;
    fn try_from(path: &str) -> Result<RelPath, PathRule> {
        RelPath::new(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_and_base() {
        assert_eq!(join_path("", "SKILL.md"), "SKILL.md");
        assert_eq!(join_path("a/b", "SKILL.md"), "a/b/SKILL.md");
        assert_eq!(join_path("a/", "x"), "a/x");
        assert_eq!(join_path("a", ""), "a");
        assert_eq!(base_name("a/b/c"), "c");
        assert_eq!(base_name("c"), "c");
        assert_eq!(base_name(""), "");
        assert_eq!(base_name("a/b/"), "b");
    }

    #[test]
    fn percent_coding_round_trips_and_refuses_broken_escapes() {
        for text in ["", "plain", "a b", "résumé/x?y#z", "100%", "\u{0}", "🦀"] {
            assert_eq!(percent_decode(&percent_encode(text)).as_deref(), Some(text));
        }
        assert_eq!(percent_decode("%41%62").as_deref(), Some("Ab"));
        assert_eq!(percent_decode("%e2%82%ac").as_deref(), Some("€"));
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        // `from_str_radix` would read "+1" as a number; an escape is two hex digits.
        assert_eq!(percent_decode("%+1"), None);
        assert_eq!(percent_decode("%-1"), None);
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("abc%4"), None);
        assert_eq!(percent_decode("%C3"), None);
    }

    #[test]
    fn references_resolve_or_say_why_not() {
        for (input, want) in [
            ("references/guide.md", Ok("references/guide.md")),
            ("./references/guide.md", Ok("references/guide.md")),
            ("references/../scripts/run.sh", Ok("scripts/run.sh")),
            ("references/guide.md#usage", Ok("references/guide.md")),
            ("a/./b.md", Ok("a/b.md")),
            ("a//b.md", Ok("a/b.md")),
            ("../other/SKILL.md", Err(BadReference::ClimbsOut)),
            ("references/../../x", Err(BadReference::ClimbsOut)),
            ("a/../../x", Err(BadReference::ClimbsOut)),
            ("/etc/passwd", Err(BadReference::Absolute)),
            ("https://example.com/x.md", Err(BadReference::Url)),
            ("mailto:a@b.c", Err(BadReference::Url)),
            ("C:/x", Err(BadReference::Url)),
            ("a\\b", Err(BadReference::Backslash)),
            ("a\u{7}b", Err(BadReference::ControlChar)),
            ("a\0b", Err(BadReference::ControlChar)),
            ("", Err(BadReference::Empty)),
            ("#top", Err(BadReference::Empty)),
            (".", Err(BadReference::Root)),
            ("a/..", Err(BadReference::Root)),
            (
                "references/CON.md",
                Err(BadReference::Rule(PathRule::WindowsReserved)),
            ),
        ] {
            let got = resolve_reference(input);
            assert_eq!(
                got.as_ref().map(RelPath::as_str),
                want.as_ref().map(|s| *s),
                "{input:?}"
            );
        }
        // Each reason names itself, for the refusal a model or a person reads.
        for (bad, word) in [
            (BadReference::Empty, "empty"),
            (BadReference::ControlChar, "control"),
            (BadReference::Absolute, "absolute"),
            (BadReference::Backslash, "backslash"),
            (BadReference::Url, "URL"),
            (BadReference::ClimbsOut, "climbs out"),
            (BadReference::Root, "root"),
        ] {
            assert!(bad.to_string().contains(word), "{bad:?}");
        }
    }

    #[test]
    fn rel_path_is_checked_once_by_the_one_rule_set() {
        for (path, want) in [
            ("SKILL.md", Ok(())),
            ("scripts/run.sh", Ok(())),
            ("", Err(PathRule::EmptyComponent)),
            ("a//b", Err(PathRule::EmptyComponent)),
            ("./SKILL.md", Err(PathRule::DotComponent)),
            ("references/../SKILL.md", Err(PathRule::DotComponent)),
            ("/abs", Err(PathRule::Absolute)),
            ("C:/x", Err(PathRule::Absolute)),
            ("a\\b", Err(PathRule::Backslash)),
            ("a\u{1b}[2J", Err(PathRule::ControlChar)),
            ("CON.txt", Err(PathRule::WindowsReserved)),
        ] {
            assert_eq!(RelPath::new(path).map(|_| ()), want, "{path:?}");
            assert_eq!(check_canonical(path), want, "{path:?}");
        }
        let p = RelPath::new("scripts/run.sh").unwrap();
        assert_eq!(p.under("team/pdf"), "team/pdf/scripts/run.sh");
        assert_eq!(p.under(""), "scripts/run.sh");
        assert!(!p.is_document());
        assert!(RelPath::new("skill.md").unwrap().is_document());
        assert_eq!(document_folder("skills/pdf/SKILL.md"), "skills/pdf");
        assert_eq!(document_folder("skills/pdf/skill.md"), "skills/pdf");
        assert_eq!(document_folder("SKILL.md"), "");
        assert_eq!(document_folder("skills/pdf/"), "skills/pdf");
        assert_eq!(document_folder("skills/README.md"), "skills/README.md");
    }
}
