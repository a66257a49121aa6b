//! One skill asked for by name: `NAME`, or `NAME@VERSION` for one version of a source that
//! keeps several (a registry), read from any [`Source`].
//!
//! Every command that names a skill (`list`, `show`, `read`, `digest`, `sign`, `verify`, `run`,
//! …) reads it through [`discover_named`], so `NAME@VERSION` means the same everywhere: in a
//! source that keeps versions ([`Source::version_root`]) that version alone is read; in one that
//! keeps one version of each skill it names the skill when the skill is at that version (the
//! version the source records for it, else its `metadata.version`).

use super::{Detail, Discovery, RootFault, Source, SourceExt, discover_with};
use crate::document::{Skill, name_key};
use crate::error::Error;

/// A skill as a person names it: `NAME`, or `NAME@VERSION`. Skill names hold no `@`, so the
/// first `@` splits; an empty name or version leaves the whole text a name (`@x`, `x@`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillRef<'a> {
    /// The name (`-` and `_` alike when looked up).
    pub name: &'a str,
    /// The version asked for, if any.
    pub version: Option<&'a str>,
}

impl<'a> SkillRef<'a> {
    /// Reads `NAME` or `NAME@VERSION`.
    pub fn parse(wanted: &'a str) -> SkillRef<'a> {
        match wanted.split_once('@') {
            Some((name, version)) if !name.is_empty() && !version.is_empty() => SkillRef {
                name,
                version: Some(version),
            },
            _ => SkillRef {
                name: wanted,
                version: None,
            },
        }
    }
}

impl Discovery {
    /// The skill called `name` (`-` and `_` alike, as [`name_key`] compares names).
    pub fn find(&self, name: &str) -> Option<&Skill> {
        let want = name_key(name);
        self.skills.iter().find(|s| name_key(&s.name()) == want)
    }
}

/// Why [`discover_named`] read nothing it could answer with.
#[derive(Debug)]
pub enum NamedError {
    /// Asking the source where that version is failed ([`Source::version_root`]).
    Lookup(Error),
    /// Reading what the source holds failed ([`discover_with`]).
    Discover(Error),
    /// Reading the one version the source keeps apart failed ([`SourceExt::load`], other than the
    /// skill being invalid, which is a fault of the discovery).
    Load(Error),
    /// The source keeps one version of each skill and holds this one at another version, or
    /// without one: what was read, and the version held.
    OtherVersion {
        /// What the source holds (its warnings included).
        found: Discovery,
        /// The version the skill is held at, if any.
        held: Option<String>,
    },
}

/// Reads what `source` holds for the skill `wanted`, as much of it as `detail` says.
///
/// Without a version, the whole source is read as [`discover_with`] reads it (the caller looks
/// the name up, and says why when it is missing). With one, from a source that keeps versions,
/// that version alone is read, its document and file list whatever `detail` asks: a discovery
/// of that one skill, or of the fault that refused it. From a source that keeps one version of
/// each skill, the whole source is read; the skill is found when it is at that version (or
/// absent: the caller says so as for a plain name), else [`NamedError::OtherVersion`].
pub async fn discover_named(
    source: &(impl Source + ?Sized),
    wanted: SkillRef<'_>,
    detail: Detail,
) -> Result<Discovery, NamedError> {
    let Some(version) = wanted.version else {
        return discover_with(source, detail)
            .await
            .map_err(NamedError::Discover);
    };
    let root = source
        .version_root(&name_key(wanted.name), version)
        .await
        .map_err(NamedError::Lookup)?;
    let Some(root) = root else {
        let found = discover_with(source, detail)
            .await
            .map_err(NamedError::Discover)?;
        let Some(skill) = found.find(wanted.name) else {
            return Ok(found);
        };
        let recorded = source.record(skill.root()).await.ok();
        let held = recorded
            .and_then(|r| r.version)
            .or_else(|| skill.version().map(str::to_string))
            .filter(|v| !v.is_empty());
        if held.as_deref() == Some(version) {
            return Ok(found);
        }
        return Err(NamedError::OtherVersion { found, held });
    };
    let mut found = Discovery::default();
    match source.load(&root).await {
        Ok(skill) => found.skills.push(skill),
        Err(Error::InvalidSkill { path, fault }) => found.faults.push(RootFault {
            root,
            location: path,
            fault,
        }),
        Err(e) => return Err(NamedError::Load(e)),
    }
    // What the source had to say on the way (that version is yanked, a stale index used).
    found.warnings = source.warnings();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{DirOptions, DirSource};

    #[test]
    fn a_name_and_a_version_split_at_the_first_at() {
        assert_eq!(
            SkillRef::parse("pdf-forms@1.2.0"),
            SkillRef {
                name: "pdf-forms",
                version: Some("1.2.0")
            }
        );
        assert_eq!(SkillRef::parse("pdf-forms").version, None);
        for whole in ["@1.0.0", "pdf@", "@"] {
            assert_eq!(
                SkillRef::parse(whole),
                SkillRef {
                    name: whole,
                    version: None
                }
            );
        }
        assert_eq!(SkillRef::parse("a@b@c").version, Some("b@c"));
    }

    fn skill(dir: &std::path::Path, name: &str, version: Option<&str>) {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let meta = version.map_or(String::new(), |v| {
            format!("metadata:\n  version: \"{v}\"\n")
        });
        std::fs::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: d\n{meta}---\nBody\n"),
        )
        .unwrap();
    }

    /// A directory keeps one version of each skill: `NAME@VERSION` is that skill only at the
    /// version it holds; a name it does not hold reads the whole source for the caller to say so.
    #[tokio::test]
    async fn a_source_of_one_version_names_the_skill_only_at_its_version() {
        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "alpha", Some("1.0.0"));
        skill(tmp.path(), "beta_tool", None);
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();

        let found = discover_named(&src, SkillRef::parse("alpha@1.0.0"), Detail::Files)
            .await
            .unwrap();
        assert_eq!(found.skills.len(), 2, "the whole source is read");
        assert!(found.find("alpha").unwrap().has_files());

        match discover_named(&src, SkillRef::parse("alpha@2.0.0"), Detail::Frontmatter).await {
            Err(NamedError::OtherVersion { held, found }) => {
                assert_eq!(held.as_deref(), Some("1.0.0"));
                assert!(found.find("alpha").is_some());
            }
            other => panic!("{other:?}"),
        }
        match discover_named(
            &src,
            SkillRef::parse("beta-tool@1.0.0"),
            Detail::Frontmatter,
        )
        .await
        {
            Err(NamedError::OtherVersion { held: None, .. }) => {}
            other => panic!("`-` and `_` alike, and no version held: {other:?}"),
        }
        let found = discover_named(&src, SkillRef::parse("gamma@1.0.0"), Detail::Frontmatter)
            .await
            .unwrap();
        assert!(found.find("gamma").is_none() && found.skills.len() == 2);

        let plain = discover_named(&src, SkillRef::parse("alpha"), Detail::Frontmatter)
            .await
            .unwrap();
        assert_eq!(plain.skills.len(), 2);
        assert!(!plain.find("alpha").unwrap().has_files(), "detail is kept");
    }

    /// A source that keeps versions apart: the version's root alone is loaded, with its files;
    /// an invalid one is a fault of the discovery; a failed look-up or load is an error.
    #[tokio::test]
    async fn a_source_of_many_versions_reads_that_version_alone() {
        use crate::path::FileEntry;
        use async_trait::async_trait;
        use bytes::Bytes;

        #[derive(Debug)]
        struct Versions(DirSource);

        #[async_trait]
        impl Source for Versions {
            async fn list(&self) -> crate::error::Result<Vec<String>> {
                self.0.list().await
            }
            async fn files(&self, root: &str) -> crate::error::Result<Vec<FileEntry>> {
                self.0.files(root).await
            }
            async fn read(&self, path: &str) -> crate::error::Result<Bytes> {
                self.0.read(path).await
            }
            fn location(&self, root: &str) -> String {
                self.0.location(root)
            }
            async fn version_root(
                &self,
                name: &str,
                version: &str,
            ) -> crate::error::Result<Option<String>> {
                match (name, version) {
                    ("alpha", "1") => Ok(Some("v1".into())),
                    ("alpha", "2") => Ok(Some("v2".into())),
                    ("alpha", "gone") => Ok(Some("missing".into())),
                    ("broken", _) => Err(Error::NotFound("broken".into())),
                    _ => Ok(None),
                }
            }
        }

        let tmp = tempfile::tempdir().unwrap();
        skill(tmp.path(), "v1", None);
        std::fs::create_dir_all(tmp.path().join("v2")).unwrap();
        std::fs::write(tmp.path().join("v2/SKILL.md"), "no frontmatter\n").unwrap();
        let src = Versions(DirSource::open(tmp.path(), DirOptions::default()).unwrap());

        let found = discover_named(&src, SkillRef::parse("alpha@1"), Detail::Frontmatter)
            .await
            .unwrap();
        assert_eq!(found.skills.len(), 1);
        assert_eq!(found.skills[0].root(), "v1");
        assert!(
            found.skills[0].has_files(),
            "its files whatever detail asks"
        );
        assert!(found.faults.is_empty());

        let found = discover_named(&src, SkillRef::parse("alpha@2"), Detail::Files)
            .await
            .unwrap();
        assert!(found.skills.is_empty());
        assert_eq!(found.faults.len(), 1);
        assert_eq!(found.faults[0].root, "v2");

        assert!(matches!(
            discover_named(&src, SkillRef::parse("alpha@gone"), Detail::Files).await,
            Err(NamedError::Load(_))
        ));
        assert!(matches!(
            discover_named(&src, SkillRef::parse("broken@1"), Detail::Files).await,
            Err(NamedError::Lookup(e)) if e.is_not_found()
        ));
    }
}
