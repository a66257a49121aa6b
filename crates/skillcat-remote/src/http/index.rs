//! Reading a remote index: the Agent Skills Discovery RFC v0.2.0 shape, the legacy v0.1 shape,
//! and skillcat's optional extra field. Pure: bytes and the index URL in, entries out.
//!
//! ```text
//! $schema == "https://schemas.agentskills.io/discovery/0.2.0/schema.json"  → v0.2.0
//!     entry: name, type (archive | skill-md; others skipped with a warning), description,
//!            url (resolved against the index URL), digest (sha256 of the artifact), version?
//! no $schema                                                               → v0.1
//!     entry: name, description, files: [paths]; file URL = <index dir>/<name>/<path>
//! any other $schema                                                        → refused
//! either: "skillcat": {"skill_digest", "files": [{path, digest, size, executable}],
//!                      "signature"}   optional; other clients ignore it
//! v0.2.0, at the top: "skillcat": {"yanked": [entry…]}   a served registry's yanked versions,
//!                      each a v0.2.0 entry with a version; read only by NAME@VERSION
//! ```
//!
//! One broken entry never hides the others: an entry whose name is usable but whose artifact
//! is not (no URL, a malformed digest, an http:// artifact under an https:// index) stays
//! listed and fails when it is loaded, so `discover` reports it. Entries without a usable name,
//! duplicates, names that collide with an earlier one under the catalog's name matching
//! folded to lower case (`PDF-Forms`, `pdf_forms` after `pdf-forms`) and unknown types are
//! skipped with a warning.
//!
//! What an index can cost is bounded ([`IndexLimits`]): at most 10,000 entries are read, at
//! most 5 warnings kept (then one counting the rest), and an index none of whose entries is
//! usable is an error.

use std::collections::{HashMap, HashSet};

use reqwest::Url;

use crate::digest::parse_digest;
use crate::document::name_key;
use crate::path::check_canonical;

mod raw;

use crate::source::DISCOVERY_SCHEMA_V0_2 as SCHEMA_V0_2;

/// Which shape an index has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexVersion {
    /// No `$schema`: entries list their files.
    V0_1,
    /// RFC v0.2.0: one artifact per entry.
    V0_2,
}

/// What to download for one skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Artifact {
    /// A `.tar.gz` or `.zip` whose root is the skill (RFC `archive`).
    Archive {
        /// Where it is.
        url: Url,
        /// The sha256 of its bytes.
        sha256: [u8; 32],
    },
    /// A lone `SKILL.md` (RFC `skill-md`).
    SkillMd {
        /// Where it is.
        url: Url,
        /// The sha256 of its bytes.
        sha256: [u8; 32],
    },
    /// Each file at its own URL (v0.1), in the order listed.
    Files(Vec<(String, Url)>),
}

impl Artifact {
    /// The RFC `type` of this artifact (`files` for a v0.1 entry).
    pub fn kind(&self) -> &'static str {
        match self {
            Artifact::Archive { .. } => "archive",
            Artifact::SkillMd { .. } => "skill-md",
            Artifact::Files(_) => "files",
        }
    }

    /// The artifact's `sha256:` digest, when the index gives one.
    pub fn digest(&self) -> Option<String> {
        match self {
            Artifact::Archive { sha256, .. } | Artifact::SkillMd { sha256, .. } => {
                Some(format!("sha256:{}", crate::digest::to_hex(sha256)))
            }
            Artifact::Files(_) => None,
        }
    }
}

/// One file as skillcat's extra field describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraFile {
    /// Path relative to the skill root.
    pub path: String,
    /// Its sha256.
    pub sha256: [u8; 32],
    /// Its size in bytes.
    pub size: u64,
    /// Whether it is executable.
    pub executable: bool,
}

/// skillcat's extra field of an entry (`"skillcat": {...}`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extra {
    /// The skill digest (tree digest) the files must give, `sha256:<hex>`.
    pub skill_digest: Option<String>,
    /// Every file of the skill.
    pub files: Vec<ExtraFile>,
    /// The detached minisign signature of the skill's statement.
    pub signature: Option<String>,
}

/// One skill of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The skill's name: the root it is listed under.
    pub name: String,
    /// Its description, as the index gives it.
    pub description: String,
    /// Its version, when given.
    pub version: Option<String>,
    /// What to download, or why it cannot be (reported when the skill is loaded).
    pub artifact: Result<Artifact, String>,
    /// skillcat's extra field, when present and well formed.
    pub extra: Option<Extra>,
}

/// A parsed index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryIndex {
    /// Its shape.
    pub version: IndexVersion,
    /// Its usable entries, in the index's order, names unique (also under [`name_key`]
    /// folded to lower case).
    pub entries: Vec<IndexEntry>,
    /// The yanked versions a served registry lists apart (`"skillcat": {"yanked": […]}`), in
    /// the index's order: each has a version, and a name and version are listed once. Never
    /// roots of the index; a client reads one only when asked for it by `NAME@VERSION`.
    pub yanked: Vec<IndexEntry>,
    /// Entries skipped or fields ignored, one sentence each: at most
    /// [`IndexLimits::max_warnings`], then one saying how many more there were.
    pub warnings: Vec<String>,
}

/// What one index may make the client do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexLimits {
    /// Entries read (default 10,000); the ones after are left out with one warning.
    pub max_entries: usize,
    /// Warnings kept (default 5); the others are counted in one more.
    pub max_warnings: usize,
}

impl Default for IndexLimits {
    fn default() -> Self {
        IndexLimits {
            max_entries: 10_000,
            max_warnings: 5,
        }
    }
}

/// Parses an index body fetched from `index_url` under the default [`IndexLimits`].
pub fn parse_index(body: &[u8], index_url: &Url) -> Result<DiscoveryIndex, IndexError> {
    parse_index_with(body, index_url, &IndexLimits::default())
}

/// Why an index body gives no index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexError {
    /// The document as a whole is not an index this client reads (not JSON, no `skills`, …).
    Unreadable(String),
    /// It lists entries and none of them is usable: a fault of its content.
    NothingUsable(String),
}

impl std::fmt::Display for IndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexError::Unreadable(why) | IndexError::NothingUsable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for IndexError {}

impl From<String> for IndexError {
    fn from(why: String) -> Self {
        IndexError::Unreadable(why)
    }
}

impl From<&str> for IndexError {
    fn from(why: &str) -> Self {
        IndexError::Unreadable(why.to_string())
    }
}

/// Parses an index body fetched from `index_url`. Fails when the document as a whole is not an
/// index this client reads, or when it lists entries and none of them is usable.
///
/// The body is read as a stream: only the fields of an entry this client uses are kept (any
/// other value is skipped without being built), the entries after `limits.max_entries` are
/// only counted, and at most `limits.max_warnings` warnings are kept. What an index costs is
/// then its body plus what its usable entries hold.
pub fn parse_index_with(
    body: &[u8],
    index_url: &Url,
    limits: &IndexLimits,
) -> Result<DiscoveryIndex, IndexError> {
    let top: raw::Top = raw::parse(body, limits.max_entries.max(1))
        .map_err(|e| IndexError::Unreadable(format!("the index is not JSON: {e}")))?;
    if !top.object {
        return Err("the index is not a JSON object".into());
    }
    let version = match &top.schema {
        raw::Str::Absent => IndexVersion::V0_1,
        raw::Str::Got(s) if s == SCHEMA_V0_2 => IndexVersion::V0_2,
        raw::Str::Got(s) => {
            return Err(IndexError::Unreadable(format!(
                "unknown index $schema {s:?}: this client reads {SCHEMA_V0_2} and v0.1 (no $schema)"
            )));
        }
        _ => return Err("the index's $schema is not a string".into()),
    };
    let Some(skills) = top.skills else {
        return Err("the index has no \"skills\" array".into());
    };
    let mut warnings = Warnings::new(limits.max_warnings);
    let mut entries = Vec::with_capacity(skills.kept.len());
    let mut names: HashSet<String> = HashSet::with_capacity(skills.kept.len());
    let mut folded: HashMap<String, usize> = HashMap::with_capacity(skills.kept.len());
    for (i, item) in skills.kept.into_iter().enumerate() {
        let extra_fault = item.as_ref().and_then(|e| e.extra_fault.clone());
        match parse_entry(item, version, index_url) {
            Ok(entry) => {
                let key = name_key(&entry.name).to_lowercase();
                if names.contains(&entry.name) {
                    warnings.push(format!(
                        "skills[{i}]: skipped: a second entry named {:?}",
                        entry.name
                    ));
                } else if let Some(&first) = folded.get(&key) {
                    warnings.push(format!(
                        "skills[{i}]: skipped: {:?} collides with {:?} (names that differ only \
                         in case or in - and _ are the same skill)",
                        entry.name,
                        entries_name(&entries, first)
                    ));
                } else {
                    names.insert(entry.name.clone());
                    folded.insert(key, entries.len());
                    entries.push(entry);
                }
            }
            Err(why) => warnings.push(format!("skills[{i}]: skipped: {why}")),
        }
        if let Some(w) = extra_fault {
            warnings.push(format!("skills[{i}]: skillcat field ignored: {w}"));
        }
    }
    let mut yanked: Vec<IndexEntry> = Vec::new();
    if let (IndexVersion::V0_2, Some(list)) = (version, top.yanked) {
        let mut seen: HashSet<(String, String)> = HashSet::with_capacity(list.kept.len());
        for (i, item) in list.kept.into_iter().enumerate() {
            match parse_entry(item, version, index_url) {
                Ok(entry) => match &entry.version {
                    None => warnings.push(format!(
                        "skillcat.yanked[{i}]: skipped: {:?} has no version",
                        entry.name
                    )),
                    Some(v) if !seen.insert((name_key(&entry.name).to_lowercase(), v.clone())) => {
                        warnings.push(format!(
                            "skillcat.yanked[{i}]: skipped: {}@{v} is listed twice",
                            entry.name
                        ))
                    }
                    Some(_) => yanked.push(entry),
                },
                Err(why) => warnings.push(format!("skillcat.yanked[{i}]: skipped: {why}")),
            }
        }
    }
    let listed = skills.total;
    if listed > limits.max_entries {
        warnings.push_always(format!(
            "the index lists {listed} entries; only the first {} were read",
            limits.max_entries
        ));
    }
    if entries.is_empty() && yanked.is_empty() && listed > 0 {
        let shown = warnings.finish();
        return Err(IndexError::NothingUsable(format!(
            "none of the index's {listed} entries is usable: {}",
            shown.join("; ")
        )));
    }
    Ok(DiscoveryIndex {
        version,
        entries,
        yanked,
        warnings: warnings.finish(),
    })
}

fn entries_name(entries: &[IndexEntry], i: usize) -> &str {
    &entries[i].name
}

/// At most `max` warnings, then a count of the others.
struct Warnings {
    max: usize,
    kept: Vec<String>,
    more: usize,
    always: Vec<String>,
}

impl Warnings {
    fn new(max: usize) -> Warnings {
        Warnings {
            max,
            kept: Vec::new(),
            more: 0,
            always: Vec::new(),
        }
    }

    fn push(&mut self, w: String) {
        if self.kept.len() < self.max {
            self.kept.push(w);
        } else {
            self.more += 1;
        }
    }

    fn push_always(&mut self, w: String) {
        self.always.push(w);
    }

    fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.kept.push(format!(
                "and {} more entries skipped or fields ignored",
                self.more
            ));
        }
        self.kept.append(&mut self.always);
        self.kept
    }
}

/// A name usable as a root: one canonical path component.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('/') {
        return Err(format!("name {name:?} is not one path component"));
    }
    check_canonical(name).map_err(|rule| format!("name {name:?}: {rule}"))
}

/// One entry, or why it is skipped.
fn parse_entry(
    item: Option<raw::IndexEntry>,
    version: IndexVersion,
    index_url: &Url,
) -> Result<IndexEntry, String> {
    let Some(obj) = item else {
        return Err("not a JSON object".into());
    };
    let name = match obj.name {
        raw::Str::Got(s) => s,
        _ => return Err("no \"name\" string".into()),
    };
    check_name(&name)?;
    let description = obj.description.into_option().unwrap_or_default();
    let version_field = obj.version.into_option();
    let extra = obj.extra;
    let artifact = match version {
        IndexVersion::V0_2 => {
            let kind = match &obj.kind {
                raw::Str::Got(t) => t.as_str(),
                _ => return Err(format!("{name}: no \"type\" string")),
            };
            if kind != "archive" && kind != "skill-md" {
                return Err(format!(
                    "{name}: unknown type {kind:?} (this client reads archive and skill-md)"
                ));
            }
            artifact_v0_2(obj.url, obj.digest, kind, index_url)
        }
        IndexVersion::V0_1 => files_v0_1(obj.files, &name, index_url),
    };
    Ok(IndexEntry {
        name,
        description,
        version: version_field,
        artifact,
        extra,
    })
}

fn artifact_v0_2(
    url: raw::Str,
    digest: raw::Str,
    kind: &str,
    index_url: &Url,
) -> Result<Artifact, String> {
    let url = match url {
        raw::Str::Got(u) => resolve(index_url, &u).map_err(|e| e.to_string())?,
        _ => return Err("the index entry has no \"url\" string".into()),
    };
    let digest = match digest {
        raw::Str::Got(d) => d,
        _ => return Err("the index entry has no \"digest\" string".into()),
    };
    let sha256 = parse_digest(&digest).ok_or_else(|| {
        format!("the index entry's digest {digest:?} is not sha256:<64 lowercase hex>")
    })?;
    Ok(if kind == "archive" {
        Artifact::Archive { url, sha256 }
    } else {
        Artifact::SkillMd { url, sha256 }
    })
}

fn files_v0_1(files: raw::StrList, name: &str, index_url: &Url) -> Result<Artifact, String> {
    let files = match files {
        raw::StrList::Absent | raw::StrList::Wrong => {
            return Err("the v0.1 index entry has no \"files\" array".into());
        }
        raw::StrList::NotAllStrings => return Err("a \"files\" item is not a string".into()),
        raw::StrList::Got(files) => files,
    };
    let mut out = Vec::with_capacity(files.len());
    let mut seen = HashSet::with_capacity(files.len());
    for path in files {
        check_canonical(&path).map_err(|rule| format!("file {path:?}: {rule}"))?;
        if !seen.insert(path.clone()) {
            return Err(format!("file {path:?} is listed twice"));
        }
        let url = file_url(index_url, name, &path).map_err(|e| e.to_string())?;
        out.push((path, url));
    }
    if out.is_empty() {
        return Err("the v0.1 index entry lists no files".into());
    }
    Ok(Artifact::Files(out))
}

/// Why an index entry's address cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// The index's URL cannot hold a path (`mailto:`, `data:`).
    #[error("{scheme}: cannot hold a path")]
    NoPath {
        /// Its scheme.
        scheme: String,
    },
    /// The entry's `url` does not resolve against the index's.
    #[error("url {reference:?}: {reason}")]
    Join {
        /// The `url` as written.
        reference: String,
        /// Why it does not resolve.
        reason: String,
    },
    /// The entry's `url` is not http(s).
    #[error("url {reference:?}: scheme {scheme:?} is not http(s)")]
    Scheme {
        /// The `url` as written.
        reference: String,
        /// Its scheme.
        scheme: String,
    },
    /// An https index points at plain http.
    #[error("url {url}: an https index may not point at plain http")]
    Downgrade {
        /// The URL, redacted.
        url: String,
    },
}

/// `<index dir>/<name>/<path>`, each component percent-encoded.
pub fn file_url(index_url: &Url, name: &str, path: &str) -> Result<Url, UrlError> {
    let mut url = index_url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| UrlError::NoPath {
            scheme: index_url.scheme().to_string(),
        })?
        .pop()
        .push(name)
        .extend(path.split('/'));
    Ok(url)
}

/// Resolves an entry's `url` against the index URL (RFC 3986 §5). Only http(s) is followed,
/// and an https index never sends the client to plain http.
pub fn resolve(index_url: &Url, reference: &str) -> Result<Url, UrlError> {
    let url = index_url.join(reference).map_err(|e| UrlError::Join {
        reference: reference.to_string(),
        reason: e.to_string(),
    })?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(UrlError::Scheme {
                reference: reference.to_string(),
                scheme: other.to_string(),
            });
        }
    }
    if index_url.scheme() == "https" && url.scheme() == "http" {
        return Err(UrlError::Downgrade {
            url: super::client::redact(&url),
        });
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> Url {
        Url::parse("https://example.com/.well-known/agent-skills/index.json").unwrap()
    }

    fn digest(c: char) -> String {
        format!("sha256:{}", c.to_string().repeat(64))
    }

    #[test]
    fn reads_a_v0_2_index_from_anyone() {
        let body = serde_json::json!({
            "$schema": SCHEMA_V0_2,
            "skills": [
                {"name": "code-review", "type": "skill-md", "description": "Review code.",
                 "url": "/.well-known/agent-skills/code-review/SKILL.md", "digest": digest('a')},
                {"name": "wrangler", "type": "archive", "description": "Deploy.",
                 "url": "wrangler.tar.gz", "digest": digest('b'), "version": "0.1.1",
                 "unknown-field": true},
                {"name": "cdn", "type": "archive", "description": "x",
                 "url": "https://cdn.example.net/a/cdn.zip", "digest": digest('c')},
                {"name": "task", "type": "task", "description": "x", "url": "x", "digest": digest('d')}
            ]
        });
        let idx = parse_index(body.to_string().as_bytes(), &url()).unwrap();
        assert_eq!(idx.version, IndexVersion::V0_2);
        let names: Vec<_> = idx.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["code-review", "wrangler", "cdn"]);
        match &idx.entries[1].artifact {
            Ok(Artifact::Archive { url, .. }) => {
                assert_eq!(
                    url.as_str(),
                    "https://example.com/.well-known/agent-skills/wrangler.tar.gz"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(idx.entries[1].version.as_deref(), Some("0.1.1"));
        match &idx.entries[0].artifact {
            Ok(Artifact::SkillMd { url, .. }) => {
                assert_eq!(url.path(), "/.well-known/agent-skills/code-review/SKILL.md")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(idx.warnings.len(), 1);
        assert!(
            idx.warnings[0].contains("unknown type \"task\""),
            "{:?}",
            idx.warnings
        );
    }

    #[test]
    fn schema_is_matched_exactly() {
        let body = serde_json::json!({"$schema": "https://schemas.agentskills.io/discovery/0.3.0/schema.json", "skills": []});
        let err = parse_index(body.to_string().as_bytes(), &url()).unwrap_err();
        assert!(matches!(err, IndexError::Unreadable(_)), "{err:?}");
        assert!(err.to_string().contains("unknown index $schema"), "{err}");
        assert!(parse_index(b"[]", &url()).is_err());
        assert!(parse_index(b"{}", &url()).is_err());
        assert!(parse_index(b"not json", &url()).is_err());
    }

    #[test]
    fn reads_v0_1_with_percent_encoded_file_urls() {
        let u = Url::parse("http://h/.well-known/skills/index.json").unwrap();
        let body = serde_json::json!({"skills": [
            {"name": "навык", "description": "d", "files": ["SKILL.md", "references/a b.md"]},
            {"name": "bad", "description": "d", "files": ["../x"]},
            {"name": "nofiles", "description": "d"}
        ]});
        let idx = parse_index(body.to_string().as_bytes(), &u).unwrap();
        assert_eq!(idx.version, IndexVersion::V0_1);
        let Ok(Artifact::Files(files)) = &idx.entries[0].artifact else {
            panic!()
        };
        assert_eq!(
            files[1].1.as_str(),
            "http://h/.well-known/skills/%D0%BD%D0%B0%D0%B2%D1%8B%D0%BA/references/a%20b.md"
        );
        // Broken entries stay listed, so that loading them reports why.
        assert!(idx.entries[1].artifact.is_err());
        assert!(idx.entries[2].artifact.is_err());
    }

    #[test]
    fn broken_entries_stay_listed_or_are_skipped_with_a_warning() {
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": [
            {"name": "a", "type": "archive", "description": "", "url": "a.tgz", "digest": "sha256:ABC"},
            {"name": "b", "type": "archive", "description": "", "url": "http://elsewhere/b.tgz", "digest": digest('1')},
            {"name": "c", "type": "archive", "description": "", "url": "file:///etc/passwd", "digest": digest('1')},
            {"name": "a", "type": "archive", "description": "", "url": "a.tgz", "digest": digest('1')},
            {"name": "../x", "type": "archive", "url": "a.tgz", "digest": digest('1')},
            {"type": "archive"},
            7
        ]});
        let idx = parse_index(body.to_string().as_bytes(), &url()).unwrap();
        let names: Vec<_> = idx.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(
            idx.entries[0]
                .artifact
                .as_ref()
                .unwrap_err()
                .contains("digest")
        );
        assert!(
            idx.entries[1]
                .artifact
                .as_ref()
                .unwrap_err()
                .contains("plain http")
        );
        assert!(
            idx.entries[2]
                .artifact
                .as_ref()
                .unwrap_err()
                .contains("scheme")
        );
        assert_eq!(idx.warnings.len(), 4, "{:?}", idx.warnings);
    }

    #[test]
    fn reads_the_skillcat_extra_field() {
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": [
            {"name": "a", "type": "archive", "description": "", "url": "a.tgz", "digest": digest('1'),
             "skillcat": {"skill_digest": digest('2'), "signature": null,
                          "files": [{"path": "SKILL.md", "digest": digest('3'), "size": 5, "executable": false}]}},
            {"name": "b", "type": "archive", "description": "", "url": "b.tgz", "digest": digest('1'),
             "skillcat": {"skill_digest": "nope"}}
        ]});
        let idx = parse_index(body.to_string().as_bytes(), &url()).unwrap();
        let extra = idx.entries[0].extra.as_ref().unwrap();
        assert_eq!(extra.skill_digest.as_deref(), Some(digest('2').as_str()));
        assert_eq!(extra.files[0].size, 5);
        assert!(idx.entries[1].extra.is_none());
        assert_eq!(idx.warnings.len(), 1);
    }
    #[test]
    fn reads_the_yanked_versions_a_registry_lists_apart() {
        let mut y = entry("a");
        y["version"] = "1.0.0".into();
        y["yanked"] = true.into();
        let mut again = y.clone();
        again["name"] = "A".into();
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": [],
            "skillcat": {"yanked": [y, entry("b"), again, 7], "other": 1}});
        let idx = parse_index(body.to_string().as_bytes(), &url()).unwrap();
        assert!(idx.entries.is_empty());
        let yanked: Vec<_> = idx
            .yanked
            .iter()
            .map(|e| (e.name.as_str(), e.version.as_deref()))
            .collect();
        assert_eq!(yanked, [("a", Some("1.0.0"))]);
        assert_eq!(idx.warnings.len(), 3, "{:?}", idx.warnings);
        // Not in a v0.1 index, and a field of the wrong shape is no list.
        let body = serde_json::json!({"skills": [], "skillcat": {"yanked": [entry("a")]}});
        assert!(
            parse_index(body.to_string().as_bytes(), &url())
                .unwrap()
                .yanked
                .is_empty()
        );
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": [], "skillcat": [1]});
        assert!(
            parse_index(body.to_string().as_bytes(), &url())
                .unwrap()
                .yanked
                .is_empty()
        );
    }

    fn entry(name: &str) -> serde_json::Value {
        serde_json::json!({"name": name, "type": "archive", "description": "d",
                           "url": format!("{name}.tgz"), "digest": digest('1')})
    }

    #[test]
    fn names_that_collide_under_name_matching_are_refused() {
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": [
            entry("pdf-forms"), entry("PDF-FORMS"), entry("pdf_forms"), entry("Pdf_Forms"),
            entry("other")
        ]});
        let idx = parse_index(body.to_string().as_bytes(), &url()).unwrap();
        let names: Vec<_> = idx.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["pdf-forms", "other"]);
        assert_eq!(idx.warnings.len(), 3, "{:?}", idx.warnings);
        assert!(
            idx.warnings[0].contains("\"PDF-FORMS\" collides with \"pdf-forms\""),
            "{:?}",
            idx.warnings
        );
    }

    #[test]
    fn a_hundred_thousand_entries_and_the_cap() {
        let skills: Vec<_> = (0..100_000).map(|i| entry(&format!("s{i}"))).collect();
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": skills}).to_string();
        let all = IndexLimits {
            max_entries: 100_000,
            ..IndexLimits::default()
        };
        let idx = parse_index_with(body.as_bytes(), &url(), &all).unwrap();
        assert_eq!(idx.entries.len(), 100_000);
        assert!(idx.warnings.is_empty());
        // The default cap: the first 10,000, and one warning for the rest.
        let idx = parse_index(body.as_bytes(), &url()).unwrap();
        assert_eq!(idx.entries.len(), 10_000);
        assert_eq!(
            idx.warnings,
            ["the index lists 100000 entries; only the first 10000 were read"]
        );
    }

    #[test]
    fn junk_costs_a_few_warnings_and_an_error_when_nothing_is_usable() {
        let junk = format!("{{\"skills\": [{}1]}}", "1,".repeat(50_000));
        let err = parse_index(junk.as_bytes(), &url()).unwrap_err();
        assert!(matches!(err, IndexError::NothingUsable(_)), "{err:?}");
        let err = err.to_string();
        assert!(
            err.starts_with("none of the index's 50001 entries is usable: "),
            "{err}"
        );
        assert!(err.contains("and 9995 more entries skipped"), "{err}");
        assert!(err.len() < 1000, "{} bytes", err.len());
        // Some usable, much junk: at most five warnings, then a count.
        let mut skills: Vec<serde_json::Value> = vec![serde_json::json!(7); 100];
        skills.push(entry("ok"));
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": skills}).to_string();
        let idx = parse_index(body.as_bytes(), &url()).unwrap();
        assert_eq!(idx.entries.len(), 1);
        assert_eq!(idx.warnings.len(), 6, "{:?}", idx.warnings);
        assert_eq!(
            idx.warnings[5],
            "and 95 more entries skipped or fields ignored"
        );
        // An empty index is fine; deep nesting is not JSON this client reads.
        let empty = serde_json::json!({"$schema": SCHEMA_V0_2, "skills": []}).to_string();
        assert!(
            parse_index(empty.as_bytes(), &url())
                .unwrap()
                .entries
                .is_empty()
        );
        let deep = format!(
            "{{\"skills\": [{}{}]}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(parse_index(deep.as_bytes(), &url()).is_err());
        // Unknown fields of any shape are skipped, in entries and at the top.
        let body = serde_json::json!({"$schema": SCHEMA_V0_2, "x": [[{"y": 1}]], "skills": [
            {"name": "a", "type": "archive", "description": "", "url": "a.tgz",
             "digest": digest('1'), "unknown": {"deep": [1, 2, {"z": null}]}}
        ]});
        let idx = parse_index(body.to_string().as_bytes(), &url()).unwrap();
        assert_eq!(idx.entries.len(), 1);
        assert!(idx.warnings.is_empty());
    }
}
