//! Content that does not belong in a skill: compiled code outside `scripts/`, archives, and
//! files over the size limit.

use crate::rule::{Hit, RuleId};

/// The compiled-code format `bytes` starts with, from its magic bytes.
fn executable_format(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x7f, b'E', b'L', b'F', ..] => Some("ELF executable or shared object"),
        [0xfe, 0xed, 0xfa, 0xce | 0xcf, ..] | [0xce | 0xcf, 0xfa, 0xed, 0xfe, ..] => {
            Some("Mach-O executable or library")
        }
        [0xca, 0xfe, 0xba, 0xbe, ..] => Some("Mach-O universal binary (or Java class file)"),
        [b'M', b'Z', ..] if pe_header(bytes) => Some("PE (Windows) executable or DLL"),
        _ => None,
    }
}

/// Whether an `MZ` file points at a `PE\0\0` header (offset at 0x3C): a real PE image, not a
/// text file that happens to start with `MZ`.
fn pe_header(bytes: &[u8]) -> bool {
    let Some(offset) = bytes.get(0x3c..0x40) else {
        return false;
    };
    let at = u32::from_le_bytes([offset[0], offset[1], offset[2], offset[3]]) as usize;
    bytes.get(at..at.saturating_add(4)) == Some(b"PE\0\0")
}

/// The archive format of a file, from its magic bytes, else its extension.
fn archive_format(path: &str, bytes: &[u8]) -> Option<&'static str> {
    let magic = match bytes {
        [b'P', b'K', 3, 4, ..] | [b'P', b'K', 5, 6, ..] => Some("zip archive"),
        [0x1f, 0x8b, ..] => Some("gzip archive"),
        [b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c, ..] => Some("7z archive"),
        _ if bytes.get(257..262) == Some(b"ustar") => Some("tar archive"),
        _ => None,
    };
    let lower = path.to_ascii_lowercase();
    magic.or_else(|| {
        [
            (".zip", "zip archive"),
            (".tgz", "gzip archive"),
            (".gz", "gzip archive"),
            (".tar", "tar archive"),
            (".7z", "7z archive"),
        ]
        .into_iter()
        .find(|(ext, _)| lower.ends_with(ext))
        .map(|(_, what)| what)
    })
}

/// The size over which a file is reported by default: 1 MiB.
pub const LARGE_FILE: u64 = 1 << 20;

/// The hits of one file of a skill, from its path, size and bytes.
pub(crate) fn scan(path: &str, size: u64, bytes: &[u8], large: u64) -> Vec<Hit> {
    let mut hits = Vec::new();
    if !path.starts_with("scripts/")
        && let Some(what) = executable_format(bytes)
    {
        hits.push(Hit::file(
            RuleId::ContentBinary,
            format!(
                "{what} outside scripts/: compiled code cannot be reviewed and is no tool the skill offers; remove it, or ship its source under scripts/"
            ),
        ));
    }
    if let Some(what) = archive_format(path, bytes) {
        hits.push(Hit::file(
            RuleId::ContentArchive,
            format!(
                "{what} inside the skill: its contents are hidden from review and from this audit; ship the files unpacked"
            ),
        ));
    }
    if size > large {
        hits.push(Hit::file(
            RuleId::ContentLarge,
            format!(
                "{} bytes ({:.1} MiB), over the {} bytes a skill's file is expected to stay under: hard to review and costly to read; check what it is for",
                size,
                size as f64 / (1u64 << 20) as f64,
                large
            ),
        ));
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(path: &str, bytes: &[u8]) -> Vec<RuleId> {
        scan(path, bytes.len() as u64, bytes, LARGE_FILE)
            .into_iter()
            .map(|h| h.rule)
            .collect()
    }

    #[test]
    fn executables_outside_scripts_only() {
        assert_eq!(
            rules("bin/tool", b"\x7fELF\x02\x01\x01"),
            vec![RuleId::ContentBinary]
        );
        assert_eq!(
            rules("lib.dylib", &[0xcf, 0xfa, 0xed, 0xfe, 7]),
            vec![RuleId::ContentBinary]
        );
        assert!(rules("scripts/tool", b"\x7fELF\x02\x01\x01").is_empty());
        let mut pe = vec![0u8; 0x48];
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3c] = 0x40;
        pe[0x40..0x44].copy_from_slice(b"PE\0\0");
        assert_eq!(rules("tool.exe", &pe), vec![RuleId::ContentBinary]);
        // Text that starts with MZ is not a PE image.
        assert!(
            rules(
                "notes.md",
                b"MZ is a prefix of many words, and this is text......................."
            )
            .is_empty()
        );
        assert!(rules("SKILL.md", b"---\nname: x\n").is_empty());
    }

    #[test]
    fn archives_by_magic_or_extension() {
        assert_eq!(
            rules("data.bin", b"PK\x03\x04rest"),
            vec![RuleId::ContentArchive]
        );
        assert_eq!(
            rules("a.gz", &[0x1f, 0x8b, 8]),
            vec![RuleId::ContentArchive]
        );
        assert_eq!(
            rules("x", b"7z\xbc\xaf\x27\x1c\x00"),
            vec![RuleId::ContentArchive]
        );
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(rules("x", &tar), vec![RuleId::ContentArchive]);
        assert_eq!(rules("empty.TAR", b""), vec![RuleId::ContentArchive]);
        assert!(rules("notes.md", b"zip and tar are words").is_empty());
    }

    #[test]
    fn large_files_say_the_limit() {
        let hits = scan("data.csv", LARGE_FILE + 1, b"a,b\n", LARGE_FILE);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].rule, RuleId::ContentLarge);
        assert!(
            hits[0].message.contains("over the 1048576 bytes"),
            "{}",
            hits[0].message
        );
        assert!(scan("data.csv", LARGE_FILE, b"a,b\n", LARGE_FILE).is_empty());
    }
}
