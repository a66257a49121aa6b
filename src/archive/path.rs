//! The canonical path check: one pure function, applied to every entry of every archive format
//! (and to every path a source is asked to read).
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
/// [`ArchiveError`](super::ArchiveError) variant, naming the entry.
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

/// Checks a raw archive entry name and returns its canonical form.
///
/// One leading `./` is stripped (as `tar -C dir .` writes); a directory may end in one `/`.
/// A directory named `./` is the archive root and gives `""`; a file can never be `""`.
///
/// ```
/// use skillcat::archive::{check_entry_path, PathRule};
/// assert_eq!(check_entry_path(b"./scripts/run.sh", false), Ok("scripts/run.sh".to_string()));
/// assert_eq!(check_entry_path(b"scripts/", true), Ok("scripts".to_string()));
/// assert_eq!(check_entry_path(b"a/../../b", false), Err(PathRule::DotComponent));
/// ```
pub fn check_entry_path(raw: &[u8], is_dir: bool) -> Result<String, PathRule> {
    let text = std::str::from_utf8(raw).map_err(|_| PathRule::NotUtf8)?;
    if is_dir && text == "./" {
        return Ok(String::new());
    }
    let mut path = text.strip_prefix("./").unwrap_or(text);
    if is_dir && let Some(trimmed) = path.strip_suffix('/').filter(|p| !p.is_empty()) {
        path = trimmed;
    }
    check_canonical(path)?;
    Ok(path.to_string())
}

/// Checks that `path` is already canonical: relative, `/`-separated, no empty, `.` or `..`
/// component, nothing Windows or a terminal would misread. No prefix or suffix is stripped.
///
/// ```
/// use skillcat::archive::{check_canonical, PathRule};
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
    fn entry_path_table() {
        let deep_ok = vec!["d"; 16].join("/");
        let deep_bad = vec!["d"; 17].join("/");
        let comp_ok = long(255);
        let comp_bad = long(256);
        let path_ok = format!(
            "{}/{}/{}/{}/{}",
            long(200),
            long(200),
            long(200),
            long(200),
            long(220)
        );
        let path_bad = format!("{path_ok}x");
        assert_eq!(path_ok.len(), 1024);
        let cases: Vec<(&[u8], bool, Result<&str, PathRule>)> = vec![
            // accepted
            (b"SKILL.md", false, Ok("SKILL.md")),
            (b"scripts/run.sh", false, Ok("scripts/run.sh")),
            (b"./SKILL.md", false, Ok("SKILL.md")),
            (b"./scripts/", true, Ok("scripts")),
            (b"scripts/", true, Ok("scripts")),
            (b"scripts", true, Ok("scripts")),
            (b"./", true, Ok("")),
            (b".gitignore", false, Ok(".gitignore")),
            (b"a/.env.example", false, Ok("a/.env.example")),
            (
                b"caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9.md",
                false,
                Ok("café/résumé.md"),
            ),
            (b"console.md", false, Ok("console.md")),
            (b"COM0", false, Ok("COM0")),
            (b"com10.txt", false, Ok("com10.txt")),
            (b"a~b.txt", false, Ok("a~b.txt")),
            (b"backup~", false, Ok("backup~")),
            (b"name with space.md", false, Ok("name with space.md")),
            (deep_ok.as_bytes(), false, Ok(&deep_ok)),
            (comp_ok.as_bytes(), false, Ok(&comp_ok)),
            (path_ok.as_bytes(), false, Ok(&path_ok)),
            // not UTF-8
            (b"caf\xe9.md", false, Err(PathRule::NotUtf8)),
            (b"\xff", true, Err(PathRule::NotUtf8)),
            // absolute
            (b"/etc/passwd", false, Err(PathRule::Absolute)),
            (b"/", true, Err(PathRule::Absolute)),
            (b"//", true, Err(PathRule::Absolute)),
            (b"C:\\x", false, Err(PathRule::Absolute)),
            (b"c:x", false, Err(PathRule::Absolute)),
            (b"\\\\srv\\share\\x", false, Err(PathRule::Absolute)),
            (b".//etc/passwd", false, Err(PathRule::Absolute)),
            // empty component
            (b"", false, Err(PathRule::EmptyComponent)),
            (b"", true, Err(PathRule::EmptyComponent)),
            (b"./", false, Err(PathRule::EmptyComponent)),
            (b"a//b", false, Err(PathRule::EmptyComponent)),
            (b"a/", false, Err(PathRule::EmptyComponent)),
            (b"a//", true, Err(PathRule::EmptyComponent)),
            // dot components
            (b"../x", false, Err(PathRule::DotComponent)),
            (b"a/../../b", false, Err(PathRule::DotComponent)),
            (b"a/../b", false, Err(PathRule::DotComponent)),
            (b"a/./b", false, Err(PathRule::DotComponent)),
            (b"././a", false, Err(PathRule::DotComponent)),
            (b".", true, Err(PathRule::DotComponent)),
            (b"..", true, Err(PathRule::DotComponent)),
            (b"a/..", true, Err(PathRule::DotComponent)),
            // control characters
            (b"a\0b", false, Err(PathRule::ControlChar)),
            (b"SKILL.md\0.txt", false, Err(PathRule::ControlChar)),
            (b"a\nb", false, Err(PathRule::ControlChar)),
            (b"a\x1bb", false, Err(PathRule::ControlChar)),
            (b"a\x7f", false, Err(PathRule::ControlChar)),
            (b"a\xc2\x85b", false, Err(PathRule::ControlChar)),
            (b"evil\xe2\x80\xaegnp.sh", false, Err(PathRule::ControlChar)),
            (
                b".g\xe2\x80\x8cit/config",
                false,
                Err(PathRule::ControlChar),
            ),
            (b"\xef\xbb\xbfSKILL.md", false, Err(PathRule::ControlChar)),
            (b"SKI\xc2\xadLL.md", false, Err(PathRule::ControlChar)),
            // backslash
            (b"a\\b", false, Err(PathRule::Backslash)),
            (b"scripts\\..\\x", false, Err(PathRule::Backslash)),
            // Windows names
            (b"CON", false, Err(PathRule::WindowsReserved)),
            (b"con", true, Err(PathRule::WindowsReserved)),
            (b"nul.txt", false, Err(PathRule::WindowsReserved)),
            (b"a/Aux.tar.gz", false, Err(PathRule::WindowsReserved)),
            (b"PRN", false, Err(PathRule::WindowsReserved)),
            (b"COM1", false, Err(PathRule::WindowsReserved)),
            (b"lpt9.md", false, Err(PathRule::WindowsReserved)),
            (b"COM\xc2\xb9", false, Err(PathRule::WindowsReserved)),
            (b"CONOUT$", false, Err(PathRule::WindowsReserved)),
            (b"NUL .txt", false, Err(PathRule::WindowsReserved)),
            (b"file.", false, Err(PathRule::WindowsReserved)),
            (b"file ", false, Err(PathRule::WindowsReserved)),
            (b"dir./x", false, Err(PathRule::WindowsReserved)),
            (b"a:b", false, Err(PathRule::Absolute)), // drive A:, relative
            (b"ab:c", false, Err(PathRule::WindowsReserved)),
            (b"SKILL.md:stream", false, Err(PathRule::WindowsReserved)),
            (b"what?.md", false, Err(PathRule::WindowsReserved)),
            (b"a|b", false, Err(PathRule::WindowsReserved)),
            (b"SKILL~1.MD", false, Err(PathRule::WindowsReserved)),
            (b"PROGRA~12", true, Err(PathRule::WindowsReserved)),
            // lengths and depth
            (comp_bad.as_bytes(), false, Err(PathRule::ComponentTooLong)),
            (path_bad.as_bytes(), false, Err(PathRule::PathTooLong)),
            (deep_bad.as_bytes(), false, Err(PathRule::TooDeep)),
        ];
        for (raw, is_dir, want) in cases {
            let got = check_entry_path(raw, is_dir);
            let want = want.map(str::to_string);
            assert_eq!(
                got,
                want,
                "{:?} (dir: {is_dir})",
                String::from_utf8_lossy(raw)
            );
        }
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
