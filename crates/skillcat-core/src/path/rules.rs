//! The canonical path check: one pure function, applied to every entry of every archive format,
//! to every path a source is asked to read, and to every reference the runtime and the server
//! are handed.
//!
//! ```text
//! raw entry name (bytes, as stored)
//!   │ 1. UTF-8                                    NotUtf8
//!   │    strip ONE leading "./"                   (what `tar -C dir .` writes)
//!   │    directory: strip ONE trailing "/"        ("./" alone is the archive root)
//!   ▼
//! candidate path (text)
//!   │ 2. length ≤ 1024 bytes                      PathTooLong
//!   │ 3. not "/…", "\…", "C:…"                    Absolute
//!   │ 4. no C0/C1 control (NUL too), no bidi      ControlChar
//!   │    control, no invisible (ZWSP, ZWJ, BOM)
//!   │ 5. no "\"                                   Backslash
//!   │ 6. per "/"-component:
//!   │      not empty                              EmptyComponent
//!   │      not "." or ".."                        DotComponent
//!   │      ≤ 255 bytes                            ComponentTooLong
//!   │      CON PRN AUX NUL COM1-9 LPT1-9 (stem),  WindowsReserved
//!   │      CONIN$ CONOUT$, `< > : " | ? *`,
//!   │      trailing "." or " ", "NAME~1" shapes
//!   │ 7. ≤ 16 components                          TooDeep
//!   ▼
//! canonical path ("a/b/c")
//! ```
//!
//! The first failing rule is the one reported, in the order above, so each hostile name maps
//! to exactly one rule. Dotfiles (`.gitignore`, `.env.example`) are allowed: only the junk
//! entries of [`is_ignored`] are skipped, and they are checked like any other entry first.
//!
//! Collisions are not a property of one path: [`fold_key`] gives the key under which two
//! paths are "the same file" on a case-insensitive or normalising file system (NFC, then
//! full Unicode case mapping), and the tree builder refuses two entries with one key.

use std::fmt;

use unicode_normalization::UnicodeNormalization;

/// Longest accepted path component, in bytes (the common file-system limit).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Longest accepted path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Most components a path may have.
pub const MAX_DEPTH: usize = 16;

/// The rule a path broke. The archive reader turns it into the matching
/// [`ArchiveError`](crate::archive::ArchiveError) variant, naming the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathRule {
    /// The name is not valid UTF-8.
    NotUtf8,
    /// The path starts at a root: `/`, `\` or a drive letter (`C:`).
    Absolute,
    /// Two separators in a row, a trailing separator on a file, or an empty path.
    EmptyComponent,
    /// A `.` or `..` component.
    DotComponent,
    /// A control character (NUL included), a bidirectional control or an invisible character
    /// (zero-width space and joiners, soft hyphen, byte-order mark).
    ControlChar,
    /// A `\`, which Windows reads as a separator.
    Backslash,
    /// A name Windows reserves or cannot store (`CON`, `nul.txt`, `a:b`, `x.`, `SKILL~1.MD`).
    WindowsReserved,
    /// A component longer than [`MAX_COMPONENT_BYTES`].
    ComponentTooLong,
    /// A path longer than [`MAX_PATH_BYTES`].
    PathTooLong,
    /// More than [`MAX_DEPTH`] components.
    TooDeep,
}

impl fmt::Display for PathRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathRule::NotUtf8 => "name is not UTF-8",
            PathRule::Absolute => "path is absolute",
            PathRule::EmptyComponent => "path has an empty component",
            PathRule::DotComponent => "path has a `.` or `..` component",
            PathRule::ControlChar => "path has a control or invisible character",
            PathRule::Backslash => "path has a backslash",
            PathRule::WindowsReserved => "path has a name Windows reserves",
            PathRule::ComponentTooLong => "path has a component longer than 255 bytes",
            PathRule::PathTooLong => "path is longer than 1024 bytes",
            PathRule::TooDeep => "path is deeper than 16 components",
        })
    }
}

/// Checks that `path` is already canonical: relative, `/`-separated, no empty, `.` or `..`
/// component, nothing Windows or a terminal would misread. No prefix or suffix is stripped.
///
/// ```
/// use skillcat_core::path::{check_canonical, PathRule};
/// assert_eq!(check_canonical("pdf/SKILL.md"), Ok(()));
/// assert_eq!(check_canonical("/etc/passwd"), Err(PathRule::Absolute));
/// assert_eq!(check_canonical("CON.txt"), Err(PathRule::WindowsReserved));
/// ```
pub fn check_canonical(path: &str) -> Result<(), PathRule> {
    if path.len() > MAX_PATH_BYTES {
        return Err(PathRule::PathTooLong);
    }
    if is_absolute(path) {
        return Err(PathRule::Absolute);
    }
    if path.chars().any(is_control_like) {
        return Err(PathRule::ControlChar);
    }
    if path.contains('\\') {
        return Err(PathRule::Backslash);
    }
    let mut depth = 0;
    for component in path.split('/') {
        depth += 1;
        check_component(component)?;
    }
    if depth > MAX_DEPTH {
        return Err(PathRule::TooDeep);
    }
    Ok(())
}

/// Whether an entry is junk every source skips (without failing): anything inside a `.git`
/// or `node_modules` directory, and `.DS_Store` files. The directory source skips the same
/// names, so a skill gives the same file list (and digest) from a directory and its archive.
///
/// `.git` is matched ignoring ASCII case: on a case-insensitive file system `.GIT/config` is
/// the git configuration, and a materialised one could run hooks (the CVE-2014-9390 class).
pub fn is_ignored(path: &str) -> bool {
    path.split('/')
        .any(|c| c.eq_ignore_ascii_case(".git") || c == "node_modules")
        || path.rsplit('/').next() == Some(".DS_Store")
}

/// The key under which two paths name the same file on a case-insensitive or normalising
/// file system: NFC, then full Unicode case mapping (upper, then lower), then NFC again.
/// `SKILL.md` and `skill.md` share a key; so do `é` precomposed and decomposed, and `ß`/`ss`.
pub fn fold_key(path: &str) -> String {
    let mut key = String::new();
    fold_key_into(path, &mut key);
    key
}

/// [`fold_key`] into a buffer (cleared first). ASCII, the common case, is lowercased in place
/// of the Unicode passes: for ASCII text NFC changes nothing and upper-then-lower is lowercase.
pub(crate) fn fold_key_into(path: &str, key: &mut String) {
    key.clear();
    if path.is_ascii() {
        key.extend(path.chars().map(|c| c.to_ascii_lowercase()));
    } else {
        let nfc: String = path.nfc().collect();
        key.extend(nfc.to_uppercase().to_lowercase().nfc());
    }
}

fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    matches!(b.first(), Some(b'/' | b'\\'))
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
}

fn is_control_like(c: char) -> bool {
    // Bidirectional controls make a name display as something else; invisible characters
    // (which HFS+ also ignores: `.g\u{200C}it` is `.git` there) make two names look alike.
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{FEFF}'
        )
}

fn check_component(component: &str) -> Result<(), PathRule> {
    if component.is_empty() {
        return Err(PathRule::EmptyComponent);
    }
    if component == "." || component == ".." {
        return Err(PathRule::DotComponent);
    }
    if component.len() > MAX_COMPONENT_BYTES {
        return Err(PathRule::ComponentTooLong);
    }
    if is_windows_reserved(component) {
        return Err(PathRule::WindowsReserved);
    }
    Ok(())
}

fn is_windows_reserved(component: &str) -> bool {
    if component.ends_with('.') || component.ends_with(' ') {
        return true;
    }
    if component.contains(['<', '>', ':', '"', '|', '?', '*']) {
        return true;
    }
    let stem = component.split('.').next().unwrap_or(component);
    let stem = stem.trim_end_matches(' ');
    is_reserved_stem(stem) || is_short_name_shape(stem)
}

fn is_reserved_stem(stem: &str) -> bool {
    let upper = stem.to_ascii_uppercase();
    if matches!(
        upper.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) {
        return true;
    }
    let Some(rest) = upper
        .strip_prefix("COM")
        .or_else(|| upper.strip_prefix("LPT"))
    else {
        return false;
    };
    // Windows also reserves the superscript digits ¹ ² ³ after COM and LPT.
    let mut chars = rest.chars();
    matches!(
        (chars.next(), chars.next()),
        (Some('1'..='9' | '¹' | '²' | '³'), None)
    )
}

/// `NAME~1`: the shape of an 8.3 short name, which aliases a long name on Windows.
fn is_short_name_shape(stem: &str) -> bool {
    match stem.rsplit_once('~') {
        Some((_, digits)) => !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(n: usize) -> String {
        "a".repeat(n)
    }

    #[test]
    fn first_failing_rule_wins() {
        // Absolute before dot components, control characters before backslashes.
        assert_eq!(check_canonical("/../x"), Err(PathRule::Absolute));
        assert_eq!(check_canonical("a\\\0"), Err(PathRule::ControlChar));
        // Component rules before depth.
        let deep_dotted = format!("{}/..", vec!["d"; 20].join("/"));
        assert_eq!(check_canonical(&deep_dotted), Err(PathRule::DotComponent));
        // Path length before anything else.
        assert_eq!(
            check_canonical(&format!("/{}", long(1100))),
            Err(PathRule::PathTooLong)
        );
    }

    #[test]
    fn canonical_takes_no_prefix() {
        assert_eq!(check_canonical("./SKILL.md"), Err(PathRule::DotComponent));
        assert_eq!(check_canonical("scripts/"), Err(PathRule::EmptyComponent));
        assert_eq!(check_canonical(""), Err(PathRule::EmptyComponent));
        assert_eq!(check_canonical("a/b/c.txt"), Ok(()));
    }

    #[test]
    fn fold_keys() {
        assert_eq!(fold_key("SKILL.md"), fold_key("skill.md"));
        assert_eq!(fold_key("caf\u{e9}"), fold_key("cafe\u{301}"));
        assert_eq!(fold_key("stra\u{df}e"), fold_key("STRASSE"));
        assert_eq!(fold_key("\u{212a}"), fold_key("k"));
        assert_ne!(fold_key("a/b"), fold_key("a/c"));
        // The ASCII shortcut gives what the Unicode passes give, for every ASCII character.
        let ascii: String = (0u8..128).map(char::from).collect();
        let nfc: String = ascii.nfc().collect();
        let full: String = nfc.to_uppercase().to_lowercase().nfc().collect();
        assert_eq!(fold_key(&ascii), full);
    }

    #[test]
    fn ignored_entries() {
        assert!(is_ignored(".git/config"));
        assert!(is_ignored("pdf/.git/objects/ab/cdef"));
        assert!(is_ignored(".git"));
        assert!(is_ignored(".GIT/config"));
        assert!(is_ignored("pdf/.Git/hooks/pre-commit"));
        assert!(is_ignored(".DS_Store"));
        assert!(is_ignored("pdf/scripts/.DS_Store"));
        assert!(is_ignored("pdf/scripts/node_modules/left-pad/index.js"));
        assert!(!is_ignored(".gitignore"));
        assert!(!is_ignored("pdf/.github/workflows/ci.yml"));
        assert!(!is_ignored("DS_Store"));
    }
}
