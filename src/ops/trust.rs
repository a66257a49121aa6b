//! `skillcat sign` and `verify`: what a signature of a skill will say and where it goes; each
//! skill of a source checked against a keyring, as rows the command prints or reports as JSON.

use std::path::PathBuf;

use serde::Serialize;

use crate::digest::Manifest;
use crate::document::{Skill, name_key};
use crate::sign::source_signatures::{FoundSignature, at_version, manifest_of, verify_skill};
use crate::sign::{Keyring, Statement, skill_signature_path};
use crate::source::oci::Reference;
use crate::source::{Discovery, Source, SourceExt};

/// How the version a signature names compares with the skill's own `metadata.version`.
#[derive(Debug, PartialEq, Eq)]
pub enum VersionNote {
    /// The same, or the skill's own.
    Same,
    /// The skill has none, and none was given: the signature names no version.
    Missing,
    /// The version given replaces the skill's own (`was`).
    Replaced {
        /// The skill's own version.
        was: String,
    },
}

/// What [`to_sign`] prepared.
#[derive(Debug)]
pub struct ToSign {
    /// The skill's manifest, at the version the signature names.
    pub manifest: Manifest,
    /// How that version came about.
    pub note: VersionNote,
    /// Where the signature goes unless told: beside the source.
    pub path: PathBuf,
}

/// The manifest a signature of `skill` (of the source `spec`, opened as `src`) will vouch for,
/// at `version` when given, and the file beside the source it is written to by default
/// (`SPEC.minisig` for a source of one skill, `SPEC.NAME.minisig` for several).
pub async fn to_sign(
    spec: &str,
    src: &dyn Source,
    skill: &Skill,
    version: Option<&str>,
) -> crate::Result<ToSign> {
    let many = src.list().await.map(|r| r.len() > 1).unwrap_or(false);
    let (mut manifest, _) = manifest_of(src, skill).await?;
    let note = match (version, manifest.version.is_empty()) {
        (None, true) => VersionNote::Missing,
        (Some(v), false) if v != manifest.version => VersionNote::Replaced {
            was: std::mem::replace(&mut manifest.version, v.to_string()),
        },
        (Some(v), true) => {
            manifest.version = v.to_string();
            VersionNote::Same
        }
        _ => VersionNote::Same,
    };
    let path = skill_signature_path(spec, &manifest.name, !many);
    Ok(ToSign {
        manifest,
        note,
        path,
    })
}

/// One skill (or unreadable root) of a verify, as `--format json` reports it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum VerifyRow {
    /// A root that is not a readable skill: nothing to verify.
    Unreadable {
        /// The root.
        root: String,
        /// Always false.
        verified: bool,
        /// Why it could not be read.
        error: String,
    },
    /// A signature verified.
    Verified {
        /// `NAME@VERSION` (or `NAME`), for people.
        #[serde(skip)]
        shown: String,
        /// The skill's name.
        name: String,
        /// Its version (empty when it has none).
        version: String,
        /// Its digest.
        digest: String,
        /// Always true.
        verified: bool,
        /// The key that signed it.
        key_id: String,
    },
    /// No signature verified.
    Failed {
        /// The skill's name.
        name: String,
        /// Always false.
        verified: bool,
        /// Why.
        error: String,
    },
}

impl VerifyRow {
    /// Whether it verified.
    pub fn verified(&self) -> bool {
        matches!(self, VerifyRow::Verified { .. })
    }
}

/// Why a skill pushed to an OCI registry could not be given a statement to sign.
#[derive(Debug, thiserror::Error)]
pub enum PushStatementError {
    /// The skill has no `metadata.version`, and the target names no tag to stand for it.
    #[error("{0}: the skill has no metadata.version, so name a tag")]
    NoVersion(String),
    /// Its files could not be read.
    #[error(transparent)]
    Read(#[from] crate::Error),
    /// Its manifest makes no statement.
    #[error(transparent)]
    Statement(#[from] crate::sign::SignError),
}

/// The statement a signature of `skill` pushed to `target` vouches for: its manifest at the
/// version it is pushed as (its `metadata.version`, else the tag).
pub async fn push_statement(
    src: &dyn Source,
    skill: &Skill,
    target: &Reference,
) -> Result<Statement, PushStatementError> {
    let Some(version) = crate::push::version_of(skill, target) else {
        return Err(PushStatementError::NoVersion(target.to_string()));
    };
    let (root, files, name) = (skill.root(), skill.files(), skill.name());
    let m = SourceExt::manifest_of(src, root, files, &name, &version).await?;
    Ok(Statement::from_manifest(&m)?)
}

/// Why a verify was not attempted.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The name asked for is not in the source.
    #[error("no skill named '{0}'")]
    NoSuchSkill(String),
    /// A signature was given, but the skills it could be for are not one.
    #[error("one signature given; the source holds {0} skills")]
    SignatureForMany(usize),
}

/// Verifies the skills of `found` (only `name`'s, when given) against `ring`: with `given`,
/// that signature; else the one the source keeps or the file beside it (`SPEC.minisig` for a
/// source of one skill, `SPEC.NAME.minisig` for several). The roots that are not readable
/// skills come first, as failed rows.
pub async fn verify(
    spec: &str,
    src: &dyn Source,
    found: &Discovery,
    name: Option<&str>,
    ring: &Keyring,
    given: Option<&FoundSignature>,
) -> Result<Vec<VerifyRow>, VerifyError> {
    let key = name.map(name_key);
    let skills: Vec<&Skill> = found
        .skills
        .iter()
        .filter(|s| key.as_ref().is_none_or(|k| *k == name_key(&s.name())))
        .collect();
    let mut rows: Vec<VerifyRow> = found
        .faults
        .iter()
        .map(|f| VerifyRow::Unreadable {
            root: f.root.clone(),
            verified: false,
            error: f.fault.message().to_string(),
        })
        .collect();
    if let (Some(w), true) = (name, skills.is_empty() && found.faults.is_empty()) {
        return Err(VerifyError::NoSuchSkill(w.to_string()));
    }
    let single = found.skills.len() == 1 && found.faults.is_empty();
    if given.is_some() && skills.len() + found.faults.len() != 1 {
        return Err(VerifyError::SignatureForMany(
            skills.len() + found.faults.len(),
        ));
    }
    for skill in skills {
        rows.push(
            match verify_skill(spec, src, skill, ring, given, single).await {
                Ok((m, v)) => VerifyRow::Verified {
                    shown: at_version(&m),
                    name: m.name,
                    version: m.version,
                    digest: m.digest,
                    verified: true,
                    key_id: v.key_id,
                },
                Err(e) => VerifyRow::Failed {
                    name: skill.name(),
                    verified: false,
                    error: e.to_string(),
                },
            },
        );
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{DirOptions, DirSource, discover};

    #[tokio::test]
    async fn a_version_given_replaces_the_skills_own_and_its_lack_is_noted() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, meta) in [("one", "metadata:\n  version: \"1.0.0\"\n"), ("two", "")] {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            let md = format!("---\nname: {name}\ndescription: d\n{meta}---\n");
            std::fs::write(dir.join("SKILL.md"), md).unwrap();
        }
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let found = discover(&src).await.unwrap();
        let spec = tmp.path().display().to_string();
        let one = found.find("one").unwrap();
        let same = to_sign(&spec, &src, one, None).await.unwrap();
        assert_eq!(same.note, VersionNote::Same);
        assert_eq!(same.manifest.version, "1.0.0");
        assert_eq!(same.path, skill_signature_path(&spec, "one", false));
        let replaced = to_sign(&spec, &src, one, Some("2.0.0")).await.unwrap();
        assert_eq!(replaced.manifest.version, "2.0.0");
        let was = "1.0.0".to_string();
        assert_eq!(replaced.note, VersionNote::Replaced { was });
        let two = found.find("two").unwrap();
        let missing = to_sign(&spec, &src, two, None).await.unwrap();
        assert_eq!(missing.note, VersionNote::Missing);
        let given = to_sign(&spec, &src, two, Some("0.1.0")).await.unwrap();
        assert_eq!(
            (given.note, given.manifest.version.as_str()),
            (VersionNote::Same, "0.1.0")
        );
    }

    #[tokio::test]
    async fn an_unsigned_skill_fails_and_a_missing_name_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("one");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: one\ndescription: d\n---\n",
        )
        .unwrap();
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let found = discover(&src).await.unwrap();
        let ring = Keyring::default();
        let spec = tmp.path().display().to_string();
        let rows = verify(&spec, &src, &found, None, &ring, None)
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].verified());
        let json = serde_json::to_value(&rows[0]).unwrap();
        assert_eq!(json["name"], "one");
        assert_eq!(json["verified"], false);
        assert!(matches!(
            verify(&spec, &src, &found, Some("two"), &ring, None).await,
            Err(VerifyError::NoSuchSkill(n)) if n == "two"
        ));
    }
}
