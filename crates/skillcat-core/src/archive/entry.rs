//! Archive entry names: the canonical path check plus what archivers write around it.

use crate::path::{PathRule, check_canonical};

/// Checks a raw archive entry name and returns its canonical form.
///
/// One leading `./` is stripped (as `tar -C dir .` writes); a directory may end in one `/`.
/// A directory named `./` is the archive root and gives `""`; a file can never be `""`.
///
/// ```
/// use skillcat_core::archive::check_entry_path;
/// use skillcat_core::path::PathRule;
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
}
