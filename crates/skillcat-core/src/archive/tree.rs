//! The checked in-memory tree an archive is read into, and its skill layout.
//!
//! ```text
//! root layout (the archive IS one skill)      wrapped layout (one folder per skill)
//! ────────────────────────────────────        ─────────────────────────────────────
//! SKILL.md            roots: [""]             pdf/SKILL.md          roots: ["broken", "pdf", "xlsx"]
//! scripts/run.sh                              pdf/scripts/run.sh
//! assets/logo.png                             xlsx/skill.md
//!                                             broken/notes.md       (listed: reported as missing-document)
//!                                             README.md             (loose: in no root)
//! ```
//!
//! - **Root layout**: a `SKILL.md` or `skill.md` file at the archive root. Every file belongs
//!   to the one skill, root `""`. A wrapped document beside it is [`MixedLayout`]: one layout
//!   per archive, never a merge.
//! - **Wrapped layout**: otherwise, every top-level folder that contains at least one file
//!   (at any depth) is a root, in byte order, whether or not it has a document directly:
//!   a folder without one is listed so that `discover` reports it as `missing-document`,
//!   never silently dropped. A folder with no files at all is nothing and is not listed.
//!   Files at the top level of a wrapped archive (`README.md`, `LICENSE`) belong to no skill;
//!   they stay in the tree and [`ArchiveTree::loose_files`] names them.
//! - An archive with no `SKILL.md`/`skill.md` anywhere is [`NoSkill`], not an empty success.
//!
//! While entries are added the builder refuses duplicates, case-fold collisions and a path
//! used both as a file and as a directory, counting the parent directories each path implies.
//!
//! [`MixedLayout`]: super::ArchiveError::MixedLayout
//! [`NoSkill`]: super::ArchiveError::NoSkill

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use super::error::ArchiveError;
use crate::path::{DOCUMENT_NAMES, fold_key_into};

/// One regular file of an archive.
#[derive(Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// Its contents, exactly as stored.
    pub bytes: Bytes,
    /// Whether any executable bit was set in the entry's mode.
    pub executable: bool,
}

impl std::fmt::Debug for TreeFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeFile")
            .field("len", &self.bytes.len())
            .field("executable", &self.executable)
            .finish()
    }
}

/// A checked archive: every regular file by canonical path, and the skill roots it offers.
///
/// ```text
/// root layout: SKILL.md at the root     wrapped layout: one folder per skill
/// SKILL.md             roots: [""]      pdf/SKILL.md     roots: ["broken", "pdf"]
/// scripts/run.sh                        pdf/run.sh
///                                       broken/notes.md  (listed: discover reports missing-document)
///                                       README.md        (loose_files(): in no root)
/// ```
///
/// A `SKILL.md`/`skill.md` file at the root makes the archive one skill (root `""`), and a
/// wrapped document beside it is refused ([`MixedLayout`](super::ArchiveError::MixedLayout)).
/// Otherwise every top-level folder holding at least one file is a root, with or without a
/// document, so a broken skill is reported, never dropped. No document anywhere is
/// [`NoSkill`](super::ArchiveError::NoSkill).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ArchiveTree {
    files: BTreeMap<String, TreeFile>,
    roots: Vec<String>,
    loose: Vec<String>,
}

impl std::fmt::Debug for ArchiveTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveTree")
            .field("roots", &self.roots)
            .field("files", &self.files.len())
            .field("loose", &self.loose)
            .finish()
    }
}

impl ArchiveTree {
    /// The skill roots, in byte order (`[""]` for an archive that is one skill).
    pub fn roots(&self) -> &[String] {
        &self.roots
    }

    /// Top-level files of a wrapped archive, which belong to no skill root.
    pub fn loose_files(&self) -> &[String] {
        &self.loose
    }

    /// The file at a canonical path.
    pub fn get(&self, path: &str) -> Option<&TreeFile> {
        self.files.get(path)
    }

    /// Every file, by canonical path, in byte order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &TreeFile)> {
        self.files.iter().map(|(p, f)| (p.as_str(), f))
    }

    /// Every file under `root` (all files for `""`), with paths relative to it, in byte order.
    pub fn under<'a>(&'a self, root: &str) -> impl Iterator<Item = (&'a str, &'a TreeFile)> {
        let prefix = if root.is_empty() {
            String::new()
        } else {
            format!("{}/", root.trim_end_matches('/'))
        };
        self.files
            .range::<str, _>((
                std::ops::Bound::Included(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .map_while(move |(p, f)| p.strip_prefix(prefix.as_str()).map(|rel| (rel, f)))
    }

    /// The tree of one skill (root `""`) held in memory without an archive around it (a lone
    /// `SKILL.md` downloaded, the files an index lists one by one): every path must be
    /// canonical, and the builder refuses duplicates, case-fold collisions and a path that is
    /// both a file and a folder, as for an archive. No layout is decided: every file belongs to
    /// the one root, and a missing document is left for discovery to report.
    pub fn of_skill(
        files: impl IntoIterator<Item = (String, TreeFile)>,
    ) -> Result<ArchiveTree, ArchiveError> {
        let mut builder = TreeBuilder::default();
        for (path, file) in files {
            crate::path::RelPath::new(&path)
                .map_err(|rule| ArchiveError::from_path_rule(rule, path.clone()))?;
            builder.add_file(&path, file)?;
        }
        Ok(ArchiveTree {
            files: builder.files,
            roots: vec![String::new()],
            loose: Vec::new(),
        })
    }

    /// How many files the tree holds.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the tree holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// Collects checked entries, refusing duplicates and collisions as they arrive.
#[derive(Default)]
pub(crate) struct TreeBuilder {
    files: BTreeMap<String, TreeFile>,
    /// Every path seen, explicit or implied by a descendant, by its fold key: one lookup finds
    /// the path itself and any path that collides with it.
    nodes: HashMap<String, Node>,
    /// Scratch space for fold keys (most lookups hit an ancestor already seen: no allocation).
    key: String,
    /// The parent directory of the last path added, whose ancestors are all known directories:
    /// entries arrive grouped by directory, so most need no ancestor lookups at all.
    last_parent: String,
}

struct Node {
    path: String,
    kind: Kind,
    /// Given by an entry of its own (directories without their trailing `/`).
    explicit: bool,
}

impl TreeBuilder {
    /// Records a directory entry (canonical path, `""` for the root).
    pub(crate) fn add_dir(&mut self, path: &str) -> Result<(), ArchiveError> {
        if path.is_empty() {
            return Ok(());
        }
        self.add(path, Kind::Dir)
    }

    /// Records a file entry (canonical path).
    pub(crate) fn add_file(&mut self, path: &str, file: TreeFile) -> Result<(), ArchiveError> {
        self.add(path, Kind::File)?;
        self.files.insert(path.to_string(), file);
        Ok(())
    }

    /// Checks a file path before its contents are read (so a duplicate is refused as a
    /// duplicate, not after its bytes were counted).
    pub(crate) fn check_new_file(&mut self, path: &str) -> Result<(), ArchiveError> {
        self.check_new(path, Kind::File)
    }

    fn check_new(&mut self, path: &str, kind: Kind) -> Result<(), ArchiveError> {
        fold_key_into(path, &mut self.key);
        match self.nodes.get(self.key.as_str()) {
            Some(node) if node.explicit && node.path == path => Err(if node.kind == kind {
                ArchiveError::Duplicate {
                    entry: path.to_string(),
                }
            } else {
                ArchiveError::PathConflict {
                    entry: path.to_string(),
                    other: path.to_string(),
                }
            }),
            _ => Ok(()),
        }
    }

    fn add(&mut self, path: &str, kind: Kind) -> Result<(), ArchiveError> {
        // A second explicit entry for the path is refused before anything else about it.
        self.check_new(path, kind)?;
        let parent = path.rsplit_once('/').map_or("", |(parent, _)| parent);
        if parent != self.last_parent {
            let mut end = 0;
            while let Some(i) = path[end..].find('/') {
                end += i;
                self.node(&path[..end], Kind::Dir, path, false)?;
                end += 1;
            }
            self.last_parent.clear();
            self.last_parent.push_str(parent);
        }
        self.node(path, kind, path, true)
    }

    fn node(
        &mut self,
        path: &str,
        kind: Kind,
        entry: &str,
        explicit: bool,
    ) -> Result<(), ArchiveError> {
        fold_key_into(path, &mut self.key);
        match self.nodes.get_mut(self.key.as_str()) {
            Some(node) if node.path != path => Err(ArchiveError::CaseCollision {
                entry: entry.to_string(),
                other: node.path.clone(),
            }),
            Some(node) if node.kind != kind => Err(ArchiveError::PathConflict {
                entry: entry.to_string(),
                other: path.to_string(),
            }),
            Some(node) => {
                node.explicit |= explicit;
                Ok(())
            }
            None => {
                self.nodes.insert(
                    self.key.clone(),
                    Node {
                        path: path.to_string(),
                        kind,
                        explicit,
                    },
                );
                Ok(())
            }
        }
    }

    /// Decides the layout and returns the tree.
    pub(crate) fn finish(self) -> Result<ArchiveTree, ArchiveError> {
        let files = self.files;
        let is_document = |p: &str| {
            DOCUMENT_NAMES
                .iter()
                .any(|d| p.rsplit('/').next() == Some(d))
        };
        if !files.keys().any(|p| is_document(p)) {
            return Err(ArchiveError::NoSkill);
        }
        let at_root = DOCUMENT_NAMES.iter().any(|d| files.contains_key(*d));
        if at_root {
            let wrapped = files.keys().find(|p| {
                let mut parts = p.split('/');
                matches!(
                    (parts.next(), parts.next(), parts.next()),
                    (Some(_), Some(name), None) if DOCUMENT_NAMES.contains(&name)
                )
            });
            if let Some(entry) = wrapped {
                return Err(ArchiveError::MixedLayout {
                    entry: entry.clone(),
                });
            }
            return Ok(ArchiveTree {
                files,
                roots: vec![String::new()],
                loose: Vec::new(),
            });
        }
        let mut roots: Vec<String> = Vec::new();
        let mut loose = Vec::new();
        for path in files.keys() {
            match path.split_once('/') {
                Some((top, _)) => {
                    if roots.last().map(String::as_str) != Some(top) {
                        roots.push(top.to_string());
                    }
                }
                None => loose.push(path.clone()),
            }
        }
        // Byte order of paths is not byte order of their first components ("a-b/x" < "a/x").
        roots.sort();
        roots.dedup();
        Ok(ArchiveTree {
            files,
            roots,
            loose,
        })
    }
}

/// Whether `path` sits where a skill document may sit (`SKILL.md` or `<folder>/SKILL.md`),
/// so the document limit applies to it.
pub(crate) fn is_document_position(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or("");
    let depth = 1 + parts.count();
    depth <= 2 && DOCUMENT_NAMES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(s: &str) -> TreeFile {
        TreeFile {
            bytes: Bytes::copy_from_slice(s.as_bytes()),
            executable: false,
        }
    }

    fn build(paths: &[&str]) -> Result<ArchiveTree, ArchiveError> {
        let mut b = TreeBuilder::default();
        for p in paths {
            match p.strip_suffix('/') {
                Some(d) => b.add_dir(d)?,
                None => b.add_file(p, file(p))?,
            }
        }
        b.finish()
    }

    #[test]
    fn root_layout() {
        let t = build(&["SKILL.md", "scripts/", "scripts/run.sh"]).unwrap();
        assert_eq!(t.roots(), [""]);
        let under: Vec<_> = t.under("").map(|(p, _)| p).collect();
        assert_eq!(under, ["SKILL.md", "scripts/run.sh"]);
    }

    #[test]
    fn wrapped_layout_lists_every_folder_with_files() {
        let t = build(&[
            "pdf/SKILL.md",
            "pdf/a.txt",
            "b/skill.md",
            "broken/x.md",
            "empty/",
            "README.md",
            "a-b/c/SKILL.md",
        ])
        .unwrap();
        assert_eq!(t.roots(), ["a-b", "b", "broken", "pdf"]);
        assert_eq!(t.loose_files(), ["README.md"]);
        let under: Vec<_> = t.under("pdf").map(|(p, _)| p).collect();
        assert_eq!(under, ["SKILL.md", "a.txt"]);
        assert_eq!(t.under("p").count(), 0);
    }

    #[test]
    fn layout_faults() {
        assert!(matches!(
            build(&["README.md", "docs/a.md"]),
            Err(ArchiveError::NoSkill)
        ));
        assert!(matches!(
            build(&["SKILL.md", "pdf/SKILL.md"]),
            Err(ArchiveError::MixedLayout { entry }) if entry == "pdf/SKILL.md"
        ));
        // A nested document is not a wrapped skill: the root skill keeps it as a file.
        assert_eq!(build(&["SKILL.md", "a/b/SKILL.md"]).unwrap().roots(), [""]);
    }

    #[test]
    fn collisions() {
        assert!(matches!(
            build(&["SKILL.md", "SKILL.md"]),
            Err(ArchiveError::Duplicate { .. })
        ));
        assert!(matches!(
            build(&["a/", "a/"]),
            Err(ArchiveError::Duplicate { .. })
        ));
        assert!(matches!(
            build(&["SKILL.md", "skill.md"]),
            Err(ArchiveError::CaseCollision { entry, other }) if entry == "skill.md" && other == "SKILL.md"
        ));
        assert!(matches!(
            build(&["A/x", "a/y"]),
            Err(ArchiveError::CaseCollision { .. })
        ));
        assert!(matches!(
            build(&["a", "a/b"]),
            Err(ArchiveError::PathConflict { .. })
        ));
        assert!(matches!(
            build(&["a/b", "a"]),
            Err(ArchiveError::PathConflict { .. })
        ));
        assert!(matches!(
            build(&["a/", "a"]),
            Err(ArchiveError::PathConflict { .. })
        ));
        // An explicit directory after files inside it is fine.
        assert!(build(&["a/SKILL.md", "a/"]).is_ok());
    }

    #[test]
    fn document_positions() {
        assert!(is_document_position("SKILL.md"));
        assert!(is_document_position("pdf/skill.md"));
        assert!(!is_document_position("a/b/SKILL.md"));
        assert!(!is_document_position("README.md"));
    }

    #[test]
    fn a_skill_held_in_memory_is_one_root_with_the_builders_checks() {
        let of =
            |paths: &[&str]| ArchiveTree::of_skill(paths.iter().map(|p| (p.to_string(), file(p))));
        // No document: still one root, for discovery to report.
        let t = of(&["notes.md", "scripts/run.sh"]).unwrap();
        assert_eq!(t.roots(), [""]);
        assert_eq!(
            t.under("").map(|(p, _)| p).collect::<Vec<_>>(),
            ["notes.md", "scripts/run.sh"]
        );
        assert!(matches!(
            of(&["SKILL.md", "skill.MD"]),
            Err(ArchiveError::CaseCollision { .. })
        ));
        assert!(matches!(
            of(&["a", "a/b"]),
            Err(ArchiveError::PathConflict { .. })
        ));
        assert!(of(&["../x"]).is_err());
        assert!(of(&["a//b"]).is_err());
    }
}
