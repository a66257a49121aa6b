//! `skills-lock.json`: the `skills` CLI's project lockfile, with skillcat's pins in each entry.
//!
//! ```json
//! {
//!   "version": 1,
//!   "skills": {
//!     "pdf-forms": {
//!       "source": "./vendor/skills",          // as the user typed it (a local path: relative)
//!       "sourceType": "local",                // local | git | github | well-known | archive | registry
//!       "computedHash": "<hex>",              // exactly as the `skills` CLI computes it
//!       "version": "0.4.1",                   // skillcat's own fields from here on
//!       "digest": "sha256:<skill digest>",
//!       "unsigned": true,                     // or "signer": "<key id>"
//!       "agents": ["claude-code"],
//!       "targets": [".agents/skills/pdf-forms", ".claude/skills/pdf-forms"],
//!       "files": {"SKILL.md": "sha256:<hex>"}
//!     }
//!   }
//! }
//! ```
//!
//! The file is written the way that CLI writes it (two-space JSON, skills sorted by name, a
//! final newline, no timestamps), so a project's lockfile stays readable by both tools: fields
//! one of them does not know are kept as they were read ([`Entry::other`], [`Lockfile::other`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{InstallError, check_name};
use crate::digest::to_hex;

/// The lockfile's name, at a project's root (in user scope: `~/.agents/skills-lock.json`).
pub const LOCKFILE_NAME: &str = "skills-lock.json";

/// The lockfile format this skillcat reads and writes.
pub const LOCKFILE_VERSION: u64 = 1;

/// What a source type is called in the lockfile.
pub mod source_type {
    /// A directory on this machine (the `skills` CLI's `local`).
    pub const LOCAL: &str = "local";
    /// A git repository, by URL.
    pub const GIT: &str = "git";
    /// A GitHub repository, by its `owner/repo` shorthand.
    pub const GITHUB: &str = "github";
    /// An HTTP(S) Agent Skills index (the `skills` CLI's `well-known`).
    pub const WELL_KNOWN: &str = "well-known";
    /// A `.tar`, `.tar.gz` or `.zip` file (skillcat's own).
    pub const ARCHIVE: &str = "archive";
    /// A SQLite registry file (skillcat's own).
    pub const REGISTRY: &str = "registry";
    /// An OCI registry: `oci://HOST/REPO[:TAG]` (skillcat's own).
    pub const OCI: &str = "oci";
}

/// A whole lockfile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lockfile {
    /// Every installed skill by name.
    pub skills: BTreeMap<String, Entry>,
    /// Top-level fields other than `version` and `skills`, kept as they were read.
    pub other: serde_json::Map<String, Value>,
}

/// One skill of the lockfile.
///
/// The first fields are the `skills` CLI's (`source`, `sourceUrl`, `ref`, `sourceType`,
/// `skillPath`, `computedHash`); the rest are skillcat's. Every field skillcat does not know is
/// kept in [`other`](Entry::other) and written back.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The source as the user typed it (a local path is written relative to the lockfile).
    pub source: String,
    /// Where the source is fetched from: a git clone URL, an index's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    /// The git branch, tag or commit the user asked for.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// What kind of source it is (see [`source_type`]).
    pub source_type: String,
    /// The skill's `SKILL.md` inside a repository (`skills/pdf/SKILL.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_path: Option<String>,
    /// The `skills` CLI's hash of the skill folder ([`computed_hash`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed_hash: Option<String>,
    /// The git commit the source resolved to (40 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The version installed: the registry's version, else the skill's `metadata.version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The index the skill was found in (an HTTP source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_url: Option<String>,
    /// `sha256:<hex>` of the archive installed from (an archive file, or an index's archive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_sha256: Option<String>,
    /// The OCI manifest (or index) digest an `oci://` reference resolved to (`sha256:<hex>`):
    /// `install` fetches exactly it, whatever the tag points to now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_digest: Option<String>,
    /// The skill digest of the files installed (`sha256:<hex>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The id of the key whose signature verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// No signature was verified.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsigned: bool,
    /// The agents it was installed for (ids of [`AGENTS`](super::AGENTS)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// Agents got copies instead of symbolic links.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copy: bool,
    /// Every folder it was placed in (the canonical copy first), relative to the scope's root
    /// (`~/…` in user scope).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// Each file installed with its sha256, to name what changed when the copy drifts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Fields skillcat does not know, kept as they were read.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

impl Entry {
    /// Whether the entry pins content: a skill digest or the `skills` CLI's hash.
    pub fn has_pin(&self) -> bool {
        self.digest.is_some() || self.computed_hash.is_some()
    }

    /// The lockfile's names of the fields whose values differ between `self` and `other`
    /// (`version`, `digest`, `agents`, …, and fields another tool wrote), in the order written.
    pub fn differences(&self, other: &Entry) -> Vec<String> {
        let as_map = |e: &Entry| match serde_json::to_value(e) {
            Ok(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        let (a, b) = (as_map(self), as_map(other));
        let mut out: Vec<String> = a
            .iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect();
        out.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
        out
    }

    /// The pin as it is shown: the skill digest, else `computedHash:<hex>`.
    pub fn pin_shown(&self) -> String {
        match (&self.digest, &self.computed_hash) {
            (Some(d), _) => d.clone(),
            (None, Some(h)) => format!("computedHash:{h}"),
            (None, None) => "(no pin)".into(),
        }
    }
}

impl Lockfile {
    /// Reads a lockfile's text. `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Lockfile, InstallError> {
        let bad = |reason: String| InstallError::Lockfile {
            path: origin.to_string(),
            reason,
        };
        let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let Value::Object(mut top) = value else {
            return Err(bad("not a JSON object".into()));
        };
        match top.remove("version") {
            Some(Value::Number(n)) if n.as_u64() == Some(LOCKFILE_VERSION) => {}
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v > LOCKFILE_VERSION) => {
                return Err(bad(format!(
                    "version {n} was written by a newer tool; this skillcat reads version {LOCKFILE_VERSION}"
                )));
            }
            Some(other) => {
                return Err(bad(format!(
                    "\"version\" is {other}; this skillcat reads version {LOCKFILE_VERSION}"
                )));
            }
            None => return Err(bad("no \"version\"".into())),
        }
        let skills = match top.remove("skills") {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(bad("\"skills\" is not an object".into())),
            None => serde_json::Map::new(),
        };
        let mut out = Lockfile {
            skills: BTreeMap::new(),
            other: top,
        };
        for (name, raw) in skills {
            check_name(&name).map_err(|why| bad(format!("skill {name:?}: {why}")))?;
            let entry: Entry =
                serde_json::from_value(raw).map_err(|e| bad(format!("skill {name:?}: {e}")))?;
            out.skills.insert(name, entry);
        }
        Ok(out)
    }

    /// Reads the lockfile at `path`, with its bytes; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<(Lockfile, Vec<u8>)>, InstallError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(InstallError::io(path, e)),
        };
        let shown = path.display().to_string();
        let text = std::str::from_utf8(&bytes).map_err(|e| InstallError::Lockfile {
            path: shown.clone(),
            reason: format!("not UTF-8 (invalid byte at offset {})", e.valid_up_to()),
        })?;
        Ok(Some((Lockfile::parse(text, &shown)?, bytes)))
    }

    /// The lockfile's text, as the `skills` CLI writes it: two-space JSON, skills sorted by name
    /// (UTF-16 code units, JavaScript's default sort), and a final newline.
    pub fn to_json(&self) -> String {
        let mut names: Vec<&String> = self.skills.keys().collect();
        names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        let mut skills = serde_json::Map::new();
        for name in names {
            let entry = serde_json::to_value(&self.skills[name]).expect("an entry serialises");
            skills.insert(name.clone(), entry);
        }
        let mut top = serde_json::Map::new();
        top.insert("version".into(), Value::from(LOCKFILE_VERSION));
        top.insert("skills".into(), Value::Object(skills));
        for (k, v) in &self.other {
            top.insert(k.clone(), v.clone());
        }
        let mut text = serde_json::to_string_pretty(&Value::Object(top)).expect("JSON");
        text.push('\n');
        text
    }
}

/// The `skills` CLI's `computedHash` of a skill folder, from its files as `(relative path,
/// bytes)`: files under a `.git` or `node_modules` directory are left out, the rest sorted by
/// path as JavaScript's `localeCompare` sorts (the Unicode root collation, not byte order), and
/// sha256 taken over each path immediately followed by its bytes. Lowercase hex, no prefix.
///
/// ```
/// use skillcat_install::computed_hash;
/// // "B.md" sorts after "a.md" (case is a tertiary difference), unlike byte order.
/// let h = computed_hash([("B.md", &b"b"[..]), ("a.md", &b"a"[..])]);
/// assert_eq!(h, computed_hash([("a.md", &b"a"[..]), ("B.md", &b"b"[..])]));
/// ```
pub fn computed_hash<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut files: Vec<(&str, &[u8])> = files
        .into_iter()
        .filter(|(path, _)| {
            let mut dirs = path.split('/').rev().skip(1);
            !dirs.any(|d| d == ".git" || d == "node_modules")
        })
        .collect();
    let collator = collator();
    files.sort_by(|a, b| collator.compare(a.0, b.0).then_with(|| a.0.cmp(b.0)));
    let mut hasher = Sha256::new();
    for (path, bytes) in files {
        hasher.update(path.as_bytes());
        hasher.update(bytes);
    }
    to_hex(hasher.finalize())
}

/// The root collation (what `localeCompare` uses in the default English locale).
fn collator() -> &'static icu_collator::CollatorBorrowed<'static> {
    static COLLATOR: OnceLock<icu_collator::CollatorBorrowed<'static>> = OnceLock::new();
    COLLATOR.get_or_init(|| {
        icu_collator::CollatorBorrowed::try_new(
            icu_collator::CollatorPreferences::default(),
            icu_collator::options::CollatorOptions::default(),
        )
        .expect("the root collation is compiled in")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_the_cli_format() {
        let text = r#"{
  "version": 1,
  "skills": {
    "pdf-forms": {
      "source": "127.0.0.1",
      "sourceUrl": "http://127.0.0.1:18931",
      "sourceType": "well-known",
      "computedHash": "abc",
      "wellKnownDigest": "sha256:def"
    },
    "alpha": {
      "source": "../src",
      "sourceType": "local",
      "computedHash": "123"
    }
  }
}
"#;
        let lock = Lockfile::parse(text, "t").unwrap();
        assert_eq!(lock.skills.len(), 2);
        let pdf = &lock.skills["pdf-forms"];
        assert_eq!(pdf.other["wellKnownDigest"], "sha256:def");
        let out = lock.to_json();
        // Sorted, unknown fields kept, the same layout.
        assert!(out.find("\"alpha\"").unwrap() < out.find("\"pdf-forms\"").unwrap());
        assert!(out.contains("      \"wellKnownDigest\": \"sha256:def\"\n"));
        assert!(out.ends_with("}\n"));
        assert_eq!(Lockfile::parse(&out, "t").unwrap(), lock);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for (text, says) in [
            (r#"{"version": 2, "skills": {}}"#, "newer"),
            (r#"{"skills": {}}"#, "no \"version\""),
            (r#"{"version": "1"}"#, "version"),
            (r#"[]"#, "not a JSON object"),
            (
                r#"{"version": 1, "skills": {"../x": {"source": "a", "sourceType": "local"}}}"#,
                "../x",
            ),
            (
                r#"{"version": 1, "skills": {"a": {"sourceType": "local"}}}"#,
                "source",
            ),
        ] {
            let e = Lockfile::parse(text, "t").unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn computed_hash_sorts_like_locale_compare_and_skips_like_the_cli() {
        // Byte order would put "B" and "_" first; the root collation puts punctuation first,
        // then letters ignoring case at the first level.
        let files = [
            ("b.md", &b"2"[..]),
            ("B.md", &b"3"[..]),
            ("_x.md", &b"1"[..]),
            ("a.md", &b"0"[..]),
            (".git/config", &b"ignored"[..]),
            ("x/node_modules/m.js", &b"ignored"[..]),
        ];
        let mut want = Sha256::new();
        for (p, b) in [("_x.md", "1"), ("a.md", "0"), ("b.md", "2"), ("B.md", "3")] {
            want.update(p.as_bytes());
            want.update(b.as_bytes());
        }
        assert_eq!(computed_hash(files), to_hex(want.finalize()));
    }
}
