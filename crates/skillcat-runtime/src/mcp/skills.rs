//! The skills of a catalog snapshot as MCP resources and SEP-2640 entries.
//!
//! Each skill's files are read and hashed once, on first use (a listing, `skills/get`, a read),
//! and the digests and sizes are kept; reads always return the bytes the source holds now, with
//! the digest of exactly those bytes in `_meta`, so a client comparing against the listing sees
//! any change.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{
    MetaObject, Resource, ResourceContents, Skill as SepSkill, SkillFrontmatter, SkillResource,
    SkillResources,
};
use serde_json::{Value as Json, json};
use tokio::sync::OnceCell;

use super::uri::{self, DOCUMENT};
use crate::catalog::Entry;
use crate::digest::{parse_digest, sha256_digest, tree_digest};
use crate::path::join_path;
use crate::source::{self};

/// One file of a skill as the server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileInfo {
    /// Path relative to the skill root, as the source stores it.
    pub path: String,
    /// Its `skill://` URI (the document's is always `…/SKILL.md`).
    pub uri: String,
    /// Bytes (as read; as listed when the read failed).
    pub size: u64,
    /// `sha256:<hex>` of the bytes; `None` when the file could not be read.
    pub digest: Option<String>,
    /// Media type.
    pub media_type: &'static str,
}

/// One skill of the snapshot, with its file index made on first use.
#[derive(Debug)]
pub(crate) struct SkillView {
    entry: Entry,
    /// The document's file name in the source (`SKILL.md`, or `skill.md`).
    document: String,
    files: OnceCell<Arc<Vec<FileInfo>>>,
}

impl SkillView {
    pub(crate) fn new(entry: Entry) -> Self {
        let document = source::document_name(entry.skill().files())
            .unwrap_or(DOCUMENT)
            .to_string();
        SkillView {
            entry,
            document,
            files: OnceCell::new(),
        }
    }

    pub(crate) fn entry(&self) -> &Entry {
        &self.entry
    }

    /// The URI of the skill's document.
    pub(crate) fn document_uri(&self) -> String {
        uri::file_uri(self.entry.name(), DOCUMENT)
    }

    /// The URI path (`SKILL.md` for the document) of a stored path.
    fn uri_path<'a>(&self, path: &'a str) -> &'a str {
        if path == self.document {
            DOCUMENT
        } else {
            path
        }
    }

    /// The stored path a URI path names, when it is one of the skill's files.
    fn stored_path(&self, uri_path: &str) -> Option<String> {
        let path = if uri_path == DOCUMENT {
            self.document.as_str()
        } else if uri_path == self.document {
            // The document is offered once, as `SKILL.md`.
            return None;
        } else {
            uri_path
        };
        self.entry
            .skill()
            .files()
            .iter()
            .any(|f| f.path == path)
            .then(|| path.to_string())
    }

    /// Every file, read and hashed on first use.
    pub(crate) async fn files(&self) -> Arc<Vec<FileInfo>> {
        self.files
            .get_or_init(|| async {
                let e = &self.entry;
                let mut out = Vec::with_capacity(e.skill().files().len());
                for f in e.skill().files() {
                    let uri = uri::file_uri(e.name(), self.uri_path(&f.path));
                    let info = match e.source().read(&join_path(e.root(), &f.path)).await {
                        Ok(bytes) => FileInfo {
                            path: f.path.clone(),
                            uri,
                            size: bytes.len() as u64,
                            digest: Some(sha256_digest(&bytes)),
                            media_type: uri::media_type(&f.path, Some(&bytes)),
                        },
                        Err(_) => FileInfo {
                            path: f.path.clone(),
                            uri,
                            size: f.size,
                            digest: None,
                            media_type: uri::media_type(&f.path, None),
                        },
                    };
                    out.push(info);
                }
                // The document first, then the rest in the source's (byte) order.
                out.sort_by_key(|f| f.path != self.document);
                Arc::new(out)
            })
            .await
            .clone()
    }

    /// The skill's files as resources: the document describes the skill; each carries its size,
    /// and its digest in `_meta`.
    pub(crate) async fn resources(&self) -> Vec<Resource> {
        let e = &self.entry;
        self.files()
            .await
            .iter()
            .map(|f| {
                let mut meta = MetaObject::new();
                meta.0.insert("skill".into(), e.name().into());
                meta.0.insert("path".into(), f.path.clone().into());
                if let Some(d) = &f.digest {
                    meta.0.insert("digest".into(), d.clone().into());
                }
                let r = Resource::new(f.uri.clone(), format!("{}/{}", e.name(), f.path))
                    .with_mime_type(f.media_type)
                    .with_size(f.size)
                    .with_meta(meta);
                if f.path == self.document {
                    r.with_title(e.name())
                        .with_description(e.skill().description())
                } else {
                    r
                }
            })
            .collect()
    }

    /// The SEP-2640 entry: URI, frontmatter, every file with digest and size. `Err` says why the
    /// skill cannot be offered that way (a file that cannot be read, a name the extension
    /// refuses).
    pub(crate) async fn sep_entry(&self) -> Result<SepSkill, String> {
        let e = &self.entry;
        let files = self.files().await;
        if let Some(why) =
            super::live::over_host_limit(files.len(), files.iter().map(|f| f.size).sum())
        {
            return Err(why);
        }
        let mut resources = Vec::with_capacity(files.len());
        let mut hashes = Vec::with_capacity(files.len());
        for f in files.iter() {
            let Some(d) = &f.digest else {
                return Err(format!("{} could not be read", f.path));
            };
            resources.push(SkillResource::new(f.uri.clone(), d.clone(), f.size));
            if let Some(raw) = parse_digest(d) {
                hashes.push((f.path.as_str(), raw));
            }
        }
        let mut frontmatter = SkillFrontmatter::new(e.name(), e.skill().description());
        if let Json::Object(fm) = e.skill().frontmatter().to_json() {
            for (k, v) in fm {
                if k != "name" && k != "description" {
                    frontmatter.extra.insert(k, v);
                }
            }
        }
        let mut meta = MetaObject::new();
        meta.0.insert("digest".into(), tree_digest(hashes).into());
        meta.0.insert("source".into(), e.source_name().into());
        meta.0
            .insert("scriptsAllowed".into(), e.scripts_allowed().into());
        let skill = SepSkill::new(
            self.document_uri(),
            frontmatter,
            SkillResources::Files(resources),
        )
        .with_meta(meta);
        skill.validate().map_err(|e| e.to_string())?;
        Ok(skill)
    }

    /// The direct children of a folder of the skill (`""`: its root) as resources: each file
    /// with its media type, size and digest, each folder as an `inode/directory` resource.
    /// `None` when the skill has no such folder.
    pub(crate) async fn directory(&self, dir: &str) -> Option<Vec<Resource>> {
        let name = self.entry.name();
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let files = self.files().await;
        let mut out = Vec::new();
        let mut folders: Vec<&str> = Vec::new();
        let mut found = dir.is_empty();
        for f in files.iter() {
            let Some(rest) = f.path.strip_prefix(&prefix) else {
                continue;
            };
            found = true;
            match rest.split_once('/') {
                Some((folder, _)) => {
                    if !folders.contains(&folder) {
                        folders.push(folder);
                    }
                }
                None => {
                    let mut meta = MetaObject::new();
                    if let Some(d) = &f.digest {
                        meta.0.insert("digest".into(), d.clone().into());
                    }
                    let shown = if f.path == self.document {
                        DOCUMENT
                    } else {
                        rest
                    };
                    out.push(
                        Resource::new(f.uri.clone(), shown)
                            .with_mime_type(f.media_type)
                            .with_size(f.size)
                            .with_meta(meta),
                    );
                }
            }
        }
        if !found {
            return None;
        }
        folders.sort_unstable();
        for folder in folders {
            let path = format!("{prefix}{folder}");
            out.push(
                Resource::new(uri::file_uri(name, &path), folder)
                    .with_mime_type(rmcp::model::DIRECTORY_MIME_TYPE),
            );
        }
        Some(out)
    }

    /// Reads one file named by its URI path: text for a textual type holding UTF-8, base64 otherwise;
    /// `_meta` carries the digest and size of the bytes served. `Ok(None)` when the skill has no
    /// such file.
    pub(crate) async fn read(&self, uri_path: &str) -> Result<Option<ResourceContents>, String> {
        let Some(path) = self.stored_path(uri_path) else {
            return Ok(None);
        };
        let e = &self.entry;
        let bytes = e
            .source()
            .read(&join_path(e.root(), &path))
            .await
            .map_err(|err| err.to_string())?;
        let media = uri::media_type(&path, Some(&bytes));
        let the_uri = uri::file_uri(e.name(), self.uri_path(&path));
        let contents = match std::str::from_utf8(&bytes) {
            Ok(text) if uri::is_textual(media) && !bytes.contains(&0) => {
                ResourceContents::text(text, the_uri)
            }
            _ => ResourceContents::blob(BASE64.encode(&bytes), the_uri),
        };
        let meta = json!({ "digest": sha256_digest(&bytes), "size": bytes.len() });
        let Json::Object(meta) = meta else {
            unreachable!("a JSON object literal")
        };
        Ok(Some(
            contents.with_mime_type(media).with_meta(MetaObject(meta)),
        ))
    }
}
