//! One skill's files read once and held in memory: what an audit read is what is used after
//! it (the tools offered, the workspace a script runs in, a guest's `readSkillFile`).
//!
//! ```text
//! HeldSource::read(source, skill) ── every file of the skill's list read once (read_many),
//!                                    and its links listed
//!   ├── list()      → [the skill's root]
//!   ├── files(root) → the list, as read
//!   ├── read(path)  → the bytes held (never the source again)
//!   └── symlinks()  → the links, as listed
//! ```
//!
//! A writer that changes a file of the source after the audit read it changes nothing that
//! runs: nothing goes back to the source for bytes.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::{RootRecord, Source, SourceId, Symlink};
use crate::document::Skill;
use crate::error::{Error, Result};
use crate::path::{FileEntry, join_path};

/// One skill's files, read once from a source and held.
#[derive(Debug)]
pub struct HeldSource {
    inner: Arc<dyn Source>,
    root: String,
    files: Vec<FileEntry>,
    bytes: HashMap<String, Bytes>,
    links: Vec<Symlink>,
}

impl HeldSource {
    /// Reads every file of `skill` (its file list, else the source's list of its root) from
    /// `source`, once, and lists its links.
    pub async fn read(source: Arc<dyn Source>, skill: &Skill) -> Result<HeldSource> {
        let root = skill.root().to_string();
        let files = if skill.has_files() {
            skill.files().to_vec()
        } else {
            source.files(&root).await?
        };
        let paths: Vec<String> = files.iter().map(|f| join_path(&root, &f.path)).collect();
        let read = source.read_many(&paths).await?;
        let bytes = files
            .iter()
            .zip(read)
            .map(|(f, b)| (f.path.clone(), b))
            .collect();
        let links = source.symlinks(&root).await?;
        Ok(HeldSource {
            inner: source,
            root,
            files,
            bytes,
            links,
        })
    }

    /// The relative path of `path` inside the held root, when it is inside.
    fn inside<'p>(&self, path: &'p str) -> Option<&'p str> {
        if self.root.is_empty() {
            return Some(path);
        }
        path.strip_prefix(self.root.as_str())?.strip_prefix('/')
    }
}

#[async_trait]
impl Source for HeldSource {
    async fn list(&self) -> Result<Vec<String>> {
        Ok(vec![self.root.clone()])
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        if root != self.root {
            return Err(Error::NotFound(self.inner.location(root)));
        }
        Ok(self.files.clone())
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        super::check_path(path)?;
        self.inside(path)
            .and_then(|rel| self.bytes.get(rel))
            .cloned()
            .ok_or_else(|| Error::NotFound(self.inner.location(path)))
    }

    fn location(&self, path: &str) -> String {
        self.inner.location(path)
    }

    fn root_dir_name(&self, root: &str) -> Option<String> {
        self.inner.root_dir_name(root)
    }

    async fn record(&self, root: &str) -> Result<RootRecord> {
        self.inner.record(root).await
    }

    async fn id(&self) -> Result<SourceId> {
        self.inner.id().await
    }

    async fn symlinks(&self, root: &str) -> Result<Vec<Symlink>> {
        if root != self.root {
            return Err(Error::NotFound(self.inner.location(root)));
        }
        Ok(self.links.clone())
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{DirOptions, DirSource, discover};

    /// Held bytes are the bytes read once: a file changed, removed or swapped for a link
    /// afterwards changes nothing read through the held source, and nothing outside the
    /// skill's list is read through it.
    #[tokio::test]
    async fn a_held_skill_answers_the_bytes_read_once() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("s");
        std::fs::create_dir_all(s.join("scripts")).unwrap();
        std::fs::write(s.join("SKILL.md"), "---\nname: s\ndescription: d\n---\nB\n").unwrap();
        std::fs::write(s.join("scripts/run.sh"), "echo first\n").unwrap();
        let src: Arc<dyn Source> =
            Arc::new(DirSource::open(tmp.path(), DirOptions::default()).unwrap());
        let d = discover(&*src).await.unwrap();
        let held = HeldSource::read(src.clone(), &d.skills[0]).await.unwrap();
        std::fs::write(s.join("scripts/run.sh"), "echo CHANGED\n").unwrap();
        std::fs::write(s.join("scripts/new.sh"), "echo new\n").unwrap();
        assert_eq!(
            &held.read("s/scripts/run.sh").await.unwrap()[..],
            b"echo first\n"
        );
        assert_eq!(
            &src.read("s/scripts/run.sh").await.unwrap()[..],
            b"echo CHANGED\n"
        );
        for bad in ["s/scripts/new.sh", "s/../s/SKILL.md", "other/SKILL.md", "s"] {
            assert!(held.read(bad).await.is_err(), "{bad}");
        }
        assert_eq!(held.list().await.unwrap(), ["s"]);
        assert_eq!(held.files("s").await.unwrap(), d.skills[0].files());
        assert!(held.files("t").await.is_err());
    }
}
