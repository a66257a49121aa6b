//! The shared vocabulary of paths inside a skill: the bottom layer every other module may use.
//!
//! ```text
//! source "team/pdf"  ── a skill root, relative to its source ("" for a lone skill)
//!   └─ RelPath "scripts/fill.py"  ── a file of the skill, canonical (one check, rules.rs)
//!        join_path(root, rel) = "team/pdf/scripts/fill.py"  ── what Source::read takes
//! FileEntry { path, size, executable }  ── one listed file
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
}

/// Joins a root and a relative path with `/` (either may be empty).
///
/// ```
/// use skillcat::path::join_path;
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

/// A path inside a skill that passed [`check_canonical`]: relative, `/`-separated, no empty,
/// `.` or `..` component, nothing a file system or a terminal would misread. Checked once, when
/// made; every holder may use it without checking again.
///
/// ```
/// use skillcat::path::{PathRule, RelPath};
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
    }
}
