//! The skill digest, per-file digests and the manifest.
//!
//! The **skill digest** is a tree digest (Agent Skills Discovery RFC, skill-level digest draft):
//! sort the files by byte order of their path; for each emit `path \0 sha256-hex \n`; hash the
//! whole with sha256; write it `sha256:<hex>`. Directories, modes and timestamps are not part of
//! it, so a directory, a tarball, a zip, a registry and an HTTP cache agree on it. Executable bits
//! live in the [`Manifest`], which a signature covers.

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The manifest's schema tag.
pub const MANIFEST_SCHEMA: &str = "agent-skill-manifest/v1";

/// `sha256:<hex>` of some bytes.
pub fn sha256_digest(bytes: &[u8]) -> String {
    prefixed_hex(&sha256(bytes))
}

/// The raw sha256 of some bytes.
#[inline]
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Parses `sha256:<64 lowercase hex>` into raw bytes.
pub fn parse_digest(s: &str) -> Option<[u8; 32]> {
    let hex_part = s.strip_prefix("sha256:")?;
    if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex_part.as_bytes().chunks_exact(2)) {
        *byte = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
    }
    Some(out)
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hexadecimal of some bytes (what every digest, key id and cache name is written in).
pub fn to_hex(bytes: impl AsRef<[u8]>) -> String {
    let bytes = bytes.as_ref();
    let mut out = vec![0u8; bytes.len() * 2];
    encode_hex(bytes, &mut out);
    String::from_utf8(out).expect("ASCII")
}

/// Writes the lowercase hexadecimal of `bytes` into `out`, which holds exactly twice as many.
fn encode_hex(bytes: &[u8], out: &mut [u8]) {
    debug_assert_eq!(out.len(), bytes.len() * 2);
    for (b, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = HEX_DIGITS[usize::from(b >> 4)];
        pair[1] = HEX_DIGITS[usize::from(b & 0xf)];
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The skill digest of files given as `(path, raw sha256)` pairs, in any order.
pub fn tree_digest<'a>(files: impl IntoIterator<Item = (&'a str, [u8; 32])>) -> String {
    let mut files: Vec<(&str, [u8; 32])> = files.into_iter().collect();
    files.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    tree_digest_sorted(files.iter().map(|(p, h)| (*p, h)))
}

/// [`tree_digest`] of files already in byte order of path.
fn tree_digest_sorted<'a>(files: impl Iterator<Item = (&'a str, &'a [u8; 32])>) -> String {
    let mut hasher = Sha256::new();
    // `\0` + 64 hex digits + `\n` after each path.
    let mut tail = [0u8; 66];
    tail[65] = b'\n';
    for (path, hash) in files {
        hasher.update(path.as_bytes());
        encode_hex(hash, &mut tail[1..65]);
        hasher.update(tail);
    }
    prefixed_hex(&hasher.finalize().into())
}

/// `sha256:<64 lowercase hex>` in one allocation.
#[inline]
fn prefixed_hex(hash: &[u8; 32]) -> String {
    let mut out = [0u8; 71];
    out[..7].copy_from_slice(b"sha256:");
    encode_hex(hash, &mut out[7..]);
    // Only ASCII was written.
    String::from_utf8(out.to_vec()).expect("ASCII")
}

/// One file in a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Path relative to the skill root.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// `sha256:<hex>` of the file's bytes.
    pub digest: String,
    /// Whether the file is executable (omitted from JSON when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub executable: bool,
}

/// Everything a skill consists of: name, version, skill digest, and each file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_SCHEMA`].
    pub schema: String,
    /// The skill's name (from its frontmatter).
    pub name: String,
    /// The version (`metadata.version`, or given at publish); empty when unknown.
    pub version: String,
    /// The skill digest.
    pub digest: String,
    /// Every file, sorted by byte order of path.
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    /// Builds the manifest from `(path, bytes, executable)` triples, in any order.
    pub fn build<'a>(
        name: &str,
        version: &str,
        files: impl IntoIterator<Item = (&'a str, &'a [u8], bool)>,
    ) -> Manifest {
        let mut entries: Vec<(ManifestFile, [u8; 32])> = files
            .into_iter()
            .map(|(path, bytes, executable)| {
                let hash = sha256(bytes);
                (
                    ManifestFile {
                        path: path.to_string(),
                        size: bytes.len() as u64,
                        digest: prefixed_hex(&hash),
                        executable,
                    },
                    hash,
                )
            })
            .collect();
        entries.sort_unstable_by(|a, b| a.0.path.as_bytes().cmp(b.0.path.as_bytes()));
        let digest = tree_digest_sorted(entries.iter().map(|(f, h)| (f.path.as_str(), h)));
        Manifest {
            schema: MANIFEST_SCHEMA.to_string(),
            name: name.to_string(),
            version: version.to_string(),
            digest,
            files: entries.into_iter().map(|(f, _)| f).collect(),
        }
    }

    /// The canonical JSON bytes of this manifest (compact, fields in declaration order).
    /// The signed statement binds `sha256` of exactly these bytes.
    pub fn to_canonical_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest always serialises")
    }

    /// `sha256:<hex>` of [`to_canonical_json`](Self::to_canonical_json).
    pub fn manifest_digest(&self) -> String {
        sha256_digest(&self.to_canonical_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_test_vector() {
        let m = Manifest::build(
            "hello",
            "",
            [
                ("scripts/run.sh", &b"#!/bin/sh\n"[..], true),
                ("SKILL.md", &b"# Hello\n"[..], false),
            ],
        );
        assert_eq!(
            m.digest,
            "sha256:34f7a8c484e9991f3e71a309f31332d6335efc01f544105c4185a7c4ab12eb1e"
        );
        assert_eq!(
            m.files[0].digest,
            "sha256:90f8ec5669cd34183b9b0fdf8b94f5efb4c3672876330f4aa76088c2b4ad17be"
        );
        assert_eq!(
            m.files[1].digest,
            "sha256:a8076d3d28d21e02012b20eaf7dbf75409a6277134439025f282e368e3305abf"
        );
        assert_eq!(m.files[0].path, "SKILL.md");
        assert!(m.files[1].executable);
    }

    #[test]
    fn digest_ignores_exec_bit_and_order_but_not_content_or_path() {
        let a = Manifest::build("x", "", [("a", &b"1"[..], false), ("b", &b"2"[..], false)]);
        let b = Manifest::build("x", "", [("b", &b"2"[..], true), ("a", &b"1"[..], false)]);
        assert_eq!(a.digest, b.digest);
        assert_ne!(
            a.manifest_digest(),
            b.manifest_digest(),
            "exec bit is in the manifest"
        );
        let c = Manifest::build("x", "", [("a", &b"1"[..], false), ("c", &b"2"[..], false)]);
        assert_ne!(a.digest, c.digest);
        let d = Manifest::build("x", "", [("a", &b"1"[..], false), ("b", &b"3"[..], false)]);
        assert_ne!(a.digest, d.digest);
    }

    #[test]
    fn byte_order_sort_not_locale() {
        // 'B' (0x42) sorts before 'a' (0x61) in byte order.
        let m = Manifest::build("x", "", [("a", &b""[..], false), ("B", &b""[..], false)]);
        assert_eq!(m.files[0].path, "B");
    }

    #[test]
    fn parse_digest_is_strict() {
        let d = sha256_digest(b"x");
        assert!(parse_digest(&d).is_some());
        assert!(parse_digest(&d.to_uppercase()).is_none());
        assert!(parse_digest("sha256:abc").is_none());
        assert!(parse_digest(&d.replace("sha256:", "sha512:")).is_none());
    }
}
