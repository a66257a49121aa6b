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
//! ```
//!
//! One broken entry never hides the others: an entry whose name is usable but whose artifact
//! is not (no URL, a malformed digest, an http:// artifact under an https:// index) stays
//! listed and fails when it is loaded, so `discover` reports it. Entries without a usable name,
//! duplicates and unknown types are skipped with a warning.

use reqwest::Url;
use serde_json::Value;

use crate::digest::parse_digest;
use crate::path::check_canonical;

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
pub struct Entry {
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
pub struct Index {
    /// Its shape.
    pub version: IndexVersion,
    /// Its usable entries, in the index's order, names unique.
    pub entries: Vec<Entry>,
    /// Entries skipped or fields ignored, one sentence each.
    pub warnings: Vec<String>,
}

/// Parses an index body fetched from `index_url`. Fails only when the document as a whole is
/// not an index this client reads.
pub fn parse_index(body: &[u8], index_url: &Url) -> Result<Index, String> {
    let doc: Value =
        serde_json::from_slice(body).map_err(|e| format!("the index is not JSON: {e}"))?;
    let Value::Object(top) = &doc else {
        return Err("the index is not a JSON object".into());
    };
    let version = match top.get("$schema") {
        None => IndexVersion::V0_1,
        Some(Value::String(s)) if s == SCHEMA_V0_2 => IndexVersion::V0_2,
        Some(Value::String(s)) => {
            return Err(format!(
                "unknown index $schema {s:?}: this client reads {SCHEMA_V0_2} and v0.1 (no $schema)"
            ));
        }
        Some(_) => return Err("the index's $schema is not a string".into()),
    };
    let Some(Value::Array(items)) = top.get("skills") else {
        return Err("the index has no \"skills\" array".into());
    };
    let mut index = Index {
        version,
        entries: Vec::with_capacity(items.len()),
        warnings: Vec::new(),
    };
    for (i, item) in items.iter().enumerate() {
        match parse_entry(item, version, index_url) {
            Ok(entry) => {
                if index.entries.iter().any(|e| e.name == entry.name) {
                    index.warnings.push(format!(
                        "skills[{i}]: skipped: a second entry named {:?}",
                        entry.name
                    ));
                } else {
                    index.entries.push(entry);
                }
            }
            Err(why) => index.warnings.push(format!("skills[{i}]: skipped: {why}")),
        }
        if let Some(w) = item.get("skillcat").and_then(|x| parse_extra(x).err()) {
            index
                .warnings
                .push(format!("skills[{i}]: skillcat field ignored: {w}"));
        }
    }
    Ok(index)
}

/// A name usable as a root: one canonical path component.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('/') {
        return Err(format!("name {name:?} is not one path component"));
    }
    check_canonical(name).map_err(|rule| format!("name {name:?}: {rule}"))
}

/// One entry, or why it is skipped.
fn parse_entry(item: &Value, version: IndexVersion, index_url: &Url) -> Result<Entry, String> {
    let Value::Object(obj) = item else {
        return Err("not a JSON object".into());
    };
    let name = match obj.get("name") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("no \"name\" string".into()),
    };
    check_name(&name)?;
    let description = obj
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let version_field = obj
        .get("version")
        .and_then(Value::as_str)
        .map(str::to_string);
    let extra = obj.get("skillcat").and_then(|x| parse_extra(x).ok());
    let artifact = match version {
        IndexVersion::V0_2 => {
            let kind = match obj.get("type") {
                Some(Value::String(t)) => t.as_str(),
                _ => return Err(format!("{name}: no \"type\" string")),
            };
            if kind != "archive" && kind != "skill-md" {
                return Err(format!(
                    "{name}: unknown type {kind:?} (this client reads archive and skill-md)"
                ));
            }
            artifact_v0_2(obj, kind, index_url)
        }
        IndexVersion::V0_1 => files_v0_1(obj, &name, index_url),
    };
    Ok(Entry {
        name,
        description,
        version: version_field,
        artifact,
        extra,
    })
}

fn artifact_v0_2(
    obj: &serde_json::Map<String, Value>,
    kind: &str,
    index_url: &Url,
) -> Result<Artifact, String> {
    let url = match obj.get("url") {
        Some(Value::String(u)) => resolve(index_url, u)?,
        _ => return Err("the index entry has no \"url\" string".into()),
    };
    let digest = match obj.get("digest") {
        Some(Value::String(d)) => d,
        _ => return Err("the index entry has no \"digest\" string".into()),
    };
    let sha256 = parse_digest(digest).ok_or_else(|| {
        format!("the index entry's digest {digest:?} is not sha256:<64 lowercase hex>")
    })?;
    Ok(if kind == "archive" {
        Artifact::Archive { url, sha256 }
    } else {
        Artifact::SkillMd { url, sha256 }
    })
}

fn files_v0_1(
    obj: &serde_json::Map<String, Value>,
    name: &str,
    index_url: &Url,
) -> Result<Artifact, String> {
    let Some(Value::Array(files)) = obj.get("files") else {
        return Err("the v0.1 index entry has no \"files\" array".into());
    };
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let Value::String(path) = f else {
            return Err("a \"files\" item is not a string".into());
        };
        check_canonical(path).map_err(|rule| format!("file {path:?}: {rule}"))?;
        if out.iter().any(|(p, _)| p == path) {
            return Err(format!("file {path:?} is listed twice"));
        }
        out.push((path.clone(), file_url(index_url, name, path)?));
    }
    if out.is_empty() {
        return Err("the v0.1 index entry lists no files".into());
    }
    Ok(Artifact::Files(out))
}

/// `<index dir>/<name>/<path>`, each component percent-encoded.
pub fn file_url(index_url: &Url, name: &str, path: &str) -> Result<Url, String> {
    let mut url = index_url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| format!("{}: cannot hold a path", index_url.scheme()))?
        .pop()
        .push(name)
        .extend(path.split('/'));
    Ok(url)
}

/// Resolves an entry's `url` against the index URL (RFC 3986 §5). Only http(s) is followed,
/// and an https index never sends the client to plain http.
pub fn resolve(index_url: &Url, reference: &str) -> Result<Url, String> {
    let url = index_url
        .join(reference)
        .map_err(|e| format!("url {reference:?}: {e}"))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "url {reference:?}: scheme {other:?} is not http(s)"
            ));
        }
    }
    if index_url.scheme() == "https" && url.scheme() == "http" {
        return Err(format!(
            "url {}: an https index may not point at plain http",
            super::client::redact(&url)
        ));
    }
    Ok(url)
}

fn parse_extra(v: &Value) -> Result<Extra, String> {
    let Value::Object(obj) = v else {
        return Err("not an object".into());
    };
    let skill_digest = match obj.get("skill_digest") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if parse_digest(d).is_some() => Some(d.clone()),
        Some(_) => return Err("skill_digest is not sha256:<64 lowercase hex>".into()),
    };
    let signature = match obj.get("signature") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("signature is not a string or null".into()),
    };
    let mut files = Vec::new();
    match obj.get("files") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let path = item.get("path").and_then(Value::as_str);
                let digest = item
                    .get("digest")
                    .and_then(Value::as_str)
                    .and_then(parse_digest);
                let size = item.get("size").and_then(Value::as_u64);
                let (Some(path), Some(sha256), Some(size)) = (path, digest, size) else {
                    return Err("a files item lacks path, digest or size".into());
                };
                check_canonical(path).map_err(|rule| format!("file {path:?}: {rule}"))?;
                let executable = item
                    .get("executable")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                files.push(ExtraFile {
                    path: path.to_string(),
                    sha256,
                    size,
                    executable,
                });
            }
        }
        Some(_) => return Err("files is not an array".into()),
    }
    Ok(Extra {
        skill_digest,
        files,
        signature,
    })
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
        assert!(err.contains("unknown index $schema"), "{err}");
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
}
