//! Tier 3: files a skill's body refers to, read through the skill's source. A path that climbs
//! out of the skill is refused with the reason, before any source is asked.

use bytes::Bytes;

use crate::document::resolve_reference;

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The skill's name.
    pub skill: String,
    /// The path within the skill, resolved (`./a/../b.md` → `b.md`).
    pub path: String,
    /// The bytes.
    pub data: Bytes,
}

impl Resource {
    /// The contents as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.data).ok()
    }
}

/// The skill-relative path a reference names (as [`Skill::resolve`](crate::document::Skill::resolve)
/// reads it), or why it names nothing inside the skill.
///
/// ```
/// use skillcat::runtime::check_resource_path;
/// assert_eq!(check_resource_path("./references/../guide.md#usage").as_deref(), Ok("guide.md"));
/// assert!(check_resource_path("../other/SKILL.md").unwrap_err().contains("climbs out"));
/// assert!(check_resource_path("https://example.com/x").unwrap_err().contains("URL"));
/// ```
pub fn check_resource_path(reference: &str) -> Result<String, String> {
    if let Some(path) = resolve_reference(reference) {
        return Ok(path);
    }
    let r = reference.split('#').next().unwrap_or("").trim();
    let reason = if r.is_empty() {
        "an empty path names no file"
    } else if r.contains('\0') || r.chars().any(char::is_control) {
        "control characters are not allowed in a path"
    } else if r.starts_with('/') {
        "an absolute path is outside the skill"
    } else if r.contains('\\') {
        "a backslash is not a path separator here"
    } else if r.find(':').is_some_and(|c| !r[..c].contains('/')) {
        "a URL (or a drive) is not a file of the skill"
    } else if r.split('/').any(|p| p == "..") {
        "the path climbs out of the skill"
    } else {
        "the path names the skill's root, not a file"
    };
    Err(reason.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_its_reason() {
        for (input, want) in [
            ("", "empty"),
            ("#top", "empty"),
            ("a\u{7}b", "control"),
            ("/etc/passwd", "absolute"),
            ("a\\b", "backslash"),
            ("https://example.com/x.md", "URL"),
            ("C:/x", "URL"),
            ("../x", "climbs out"),
            ("a/../../x", "climbs out"),
            (".", "root"),
        ] {
            let e = check_resource_path(input).unwrap_err();
            assert!(e.contains(want), "{input:?}: {e}");
        }
        assert_eq!(check_resource_path("a/./b.md").as_deref(), Ok("a/b.md"));
    }
}
