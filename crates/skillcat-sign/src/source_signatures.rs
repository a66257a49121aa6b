//! The signatures of a source's skills, wherever they are kept, and checking one skill against
//! them: what `skillcat verify`, `registry publish`, `publish` and `serve` share.
//!
//! A skill's signature is kept by its source (a registry's stored ones, an HTTP index entry's
//! `skillcat.signature`) or lies beside it, as `pack --sign` and `sign` write it
//! ([`skill_signature_path`]). A manifest checked is always one recomputed from the bytes the
//! source holds; nothing a signature or an index claims is trusted.

use std::path::PathBuf;

use skillcat_core::digest::Manifest;
use skillcat_core::document::Skill;
use skillcat_core::source::{
    Discovery, RootFault, RootRecord, Source, SourceExt, SourceKind, SourceSpec,
};

use crate::{Keyring, Verified, skill_signature_path, verify};

/// A signature of one skill and where it was found (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundSignature {
    /// Where: `kept by the source for …`, or the file.
    pub origin: String,
    /// The `.minisig` text.
    pub text: String,
}

/// A signature file beside a source exists but cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the signature {}: {source}", path.display())]
pub struct ReadSignatureError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// Whether a SOURCE is a registry file (`x.db`, `sqlite:x.db`): it keeps its signatures inside,
/// with the versions they sign; none is looked for beside it.
pub fn is_registry_spec(spec: &str) -> bool {
    SourceSpec::parse(spec).is_ok_and(|s| s.kind == SourceKind::Registry)
}

/// The file beside a source that `pack --sign` and `sign` write for its skill `name`
/// ([`skill_signature_path`]; `single`: the source holds one skill), read when it exists. A
/// spec that is not a path (a URL, `sqlite:`, a git repository) or is a registry has none.
pub fn beside_signature(
    spec: &str,
    name: &str,
    single: bool,
) -> Result<Option<FoundSignature>, ReadSignatureError> {
    if !SourceSpec::is_path_spelling(spec) || is_registry_spec(spec) {
        return Ok(None);
    }
    let path = skill_signature_path(spec, name, single);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(FoundSignature {
            origin: path.display().to_string(),
            text,
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ReadSignatureError { path, source }),
    }
}

/// Every signature of one skill of the source `spec` opened as `src`: those the source keeps
/// with it (`record`: a registry's stored ones, an HTTP index entry's, which a cached index
/// keeps offline), then the file beside the source.
pub fn signatures_of(
    spec: &str,
    src: &dyn Source,
    skill: &Skill,
    record: &RootRecord,
    single: bool,
) -> Result<Vec<FoundSignature>, ReadSignatureError> {
    let kept_by = src.location(skill.root());
    let mut found: Vec<FoundSignature> = record
        .signatures
        .iter()
        .map(|text| FoundSignature {
            origin: format!("kept by the source for {kept_by}"),
            text: text.clone(),
        })
        .collect();
    found.extend(beside_signature(spec, &skill.name(), single)?);
    Ok(found)
}

/// The manifest of a skill, recomputed from its bytes, under the version its source keeps it
/// as (a registry's published version, an index entry's), else its `metadata.version`; and
/// what the source keeps about it.
pub async fn manifest_of(
    src: &dyn Source,
    skill: &Skill,
) -> skillcat_core::Result<(Manifest, RootRecord)> {
    let record = src.record(skill.root()).await?;
    let version = record.version.as_deref().or(skill.version()).unwrap_or("");
    let m = if skill.has_files() {
        src.manifest_of(skill.root(), skill.files(), &skill.name(), version)
            .await?
    } else {
        src.manifest(skill.root(), &skill.name(), version).await?
    };
    Ok((m, record))
}

/// One root's manifest, as `skillcat digest` lists them, or why it could not be computed.
#[derive(Debug)]
pub struct RootDigest<'a> {
    /// Why the root is not a skill, when it is not (its files still have a digest).
    pub fault: Option<&'a RootFault>,
    /// Where the root is, for people.
    pub location: String,
    /// Its manifest ([`manifest_of`] for a skill; for a root that is not one, under its
    /// folder's name and no version), or why it could not be read.
    pub manifest: skillcat_core::Result<Manifest>,
}

/// The manifest of every skill of `found` (of the one named `name` when given, names compared
/// as [`name_key`](skillcat_core::document::name_key) folds them), then, when no name is given,
/// of every root that is not a skill: what `skillcat digest` prints.
pub async fn digests<'a>(
    src: &dyn Source,
    found: &'a Discovery,
    name: Option<&str>,
) -> Vec<RootDigest<'a>> {
    use skillcat_core::document::name_key;
    let key = name.map(name_key);
    let mut out = Vec::new();
    for skill in &found.skills {
        if key.as_ref().is_some_and(|k| *k != name_key(&skill.name())) {
            continue;
        }
        out.push(RootDigest {
            fault: None,
            location: skill.location().to_string(),
            manifest: manifest_of(src, skill).await.map(|(m, _)| m),
        });
    }
    if name.is_none() {
        for f in &found.faults {
            let base = skillcat_core::path::base_name(&f.root);
            out.push(RootDigest {
                fault: Some(f),
                location: f.location.clone(),
                manifest: src.manifest(&f.root, base, "").await,
            });
        }
    }
    out
}

/// `name@version`, or the name alone when the skill has no version.
pub fn at_version(m: &Manifest) -> String {
    if m.version.is_empty() {
        m.name.clone()
    } else {
        format!("{}@{}", m.name, m.version)
    }
}

/// Why one skill of a source did not verify.
#[derive(Debug, thiserror::Error)]
pub enum SkillVerifyError {
    /// Its bytes could not be read to recompute its manifest.
    #[error(transparent)]
    Read(#[from] skillcat_core::Error),
    /// A signature file beside the source could not be read.
    #[error(transparent)]
    Signature(#[from] ReadSignatureError),
    /// No signature was found: the message says where one was looked for.
    #[error("{}", no_signature(.spec, .skill, *.single))]
    NoSignature {
        /// The source as given.
        spec: String,
        /// `NAME@VERSION`, or the name.
        skill: String,
        /// The source holds one skill (its signature is `SOURCE.minisig`).
        single: bool,
    },
    /// Every signature found was refused: why, for each, with where it was found.
    #[error("{}", .0.join("; "))]
    Refused(Vec<String>),
}

/// Verifies one skill of the source `spec` (opened as `src`) against `keyring`: its manifest
/// recomputed from its bytes, checked against `given` when a signature is named, else against
/// every signature the source keeps or has beside it ([`signatures_of`]) until one holds.
pub async fn verify_skill(
    spec: &str,
    src: &dyn Source,
    skill: &Skill,
    keyring: &Keyring,
    given: Option<&FoundSignature>,
    single: bool,
) -> Result<(Manifest, Verified), SkillVerifyError> {
    let (m, record) = manifest_of(src, skill).await?;
    let candidates = match given {
        Some(g) => vec![g.clone()],
        None => signatures_of(spec, src, skill, &record, single)?,
    };
    if candidates.is_empty() {
        return Err(SkillVerifyError::NoSignature {
            spec: spec.to_string(),
            skill: at_version(&m),
            single,
        });
    }
    let name = skill.name();
    let mut failures = Vec::new();
    for c in &candidates {
        match verify(&m, &c.text, keyring, &name) {
            Ok(v) => return Ok((m, v)),
            Err(e) => failures.push(format!("{e} (signature {})", c.origin)),
        }
    }
    Err(SkillVerifyError::Refused(failures))
}

/// Why a skill (`NAME@VERSION` when it has one) has no signature to check: where one was
/// looked for.
fn no_signature(spec: &str, skill: &str, single: bool) -> String {
    let name = skill.split_once('@').map_or(skill, |(n, _)| n);
    if is_registry_spec(spec) {
        return format!(
            "no signature: the registry {spec} keeps no signature for {skill}; a registry keeps \
             the signatures published with a version (`skillcat registry publish {spec} DIR \
             --sig FILE`, or `skillcat publish URL DIR` with the .minisig beside the skill); \
             --sig FILE checks another"
        );
    }
    if !SourceSpec::is_path_spelling(spec) {
        format!("no signature: {spec} keeps none for {name}")
    } else {
        format!(
            "no signature: the source keeps none for {name}, and there is no {} beside it \
             (skillcat sign and pack --sign write it; --sig FILE names another)",
            skill_signature_path(spec, name, single).display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillcat_core::source::{Detail, DirOptions, DirSource};

    /// A skill `alpha` at version 1.0.0 in its own directory, a keyring trusting a new key for
    /// it, and the signature that key makes.
    async fn signed_skill(dir: &std::path::Path) -> (String, Keyring, String) {
        let skill = dir.join("alpha");
        std::fs::create_dir(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: alpha\ndescription: d\nmetadata:\n  version: 1.0.0\n---\nBody\n",
        )
        .unwrap();
        let (public, secret) = crate::generate_keypair(None).unwrap();
        let src = DirSource::open_skill(&skill, DirOptions::default()).unwrap();
        let m = src.manifest("", "alpha", "1.0.0").await.unwrap();
        let st = crate::Statement::from_manifest(&m).unwrap();
        let sig = crate::sign(&st, &secret, None).unwrap();
        let mut ring = Keyring::new();
        ring.add(crate::KeyEntry::new(&public, ["alpha".to_string()]).unwrap())
            .unwrap();
        (skill.to_str().unwrap().to_string(), ring, sig)
    }

    async fn open(spec: &str) -> (DirSource, Skill) {
        let src = DirSource::open_skill(std::path::Path::new(spec), DirOptions::default()).unwrap();
        let found = skillcat_core::source::discover_with(&src, Detail::Files)
            .await
            .unwrap();
        let skill = found.skills.into_iter().next().unwrap();
        (src, skill)
    }

    #[tokio::test]
    async fn the_signature_beside_the_source_verifies_and_a_missing_one_says_where() {
        let tmp = tempfile::tempdir().unwrap();
        let (spec, ring, sig) = signed_skill(tmp.path()).await;
        let (src, skill) = open(&spec).await;
        let err = verify_skill(&spec, &src, &skill, &ring, None, true)
            .await
            .unwrap_err();
        assert!(matches!(err, SkillVerifyError::NoSignature { .. }));
        assert!(
            err.to_string()
                .contains(&format!("there is no {spec}.minisig beside it")),
            "{err}"
        );
        std::fs::write(format!("{spec}.minisig"), &sig).unwrap();
        let (m, v) = verify_skill(&spec, &src, &skill, &ring, None, true)
            .await
            .unwrap();
        assert_eq!(at_version(&m), "alpha@1.0.0");
        assert_eq!(v.statement.name, "alpha");
    }

    #[tokio::test]
    async fn a_given_signature_is_the_only_one_tried_and_refusals_name_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (spec, ring, sig) = signed_skill(tmp.path()).await;
        std::fs::write(format!("{spec}.minisig"), &sig).unwrap();
        let (src, skill) = open(&spec).await;
        let bad = FoundSignature {
            origin: "x.minisig".into(),
            text: "not a signature".into(),
        };
        let err = verify_skill(&spec, &src, &skill, &ring, Some(&bad), true)
            .await
            .unwrap_err();
        assert!(matches!(err, SkillVerifyError::Refused(ref r) if r.len() == 1));
        assert!(err.to_string().ends_with("(signature x.minisig)"), "{err}");
        // Outside the key's scopes: refused although the signature is sound.
        let (src, skill) = open(&spec).await;
        let empty = Keyring::new();
        assert!(matches!(
            verify_skill(&spec, &src, &skill, &empty, None, true).await,
            Err(SkillVerifyError::Refused(_))
        ));
    }

    #[tokio::test]
    async fn digests_cover_the_skills_then_the_roots_that_are_not_skills() {
        let tmp = tempfile::tempdir().unwrap();
        signed_skill(tmp.path()).await;
        std::fs::create_dir(tmp.path().join("broken")).unwrap();
        std::fs::write(tmp.path().join("broken/SKILL.md"), "no frontmatter").unwrap();
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let found = skillcat_core::source::discover_with(&src, Detail::Files)
            .await
            .unwrap();
        let all = digests(&src, &found, None).await;
        assert_eq!(all.len(), 2);
        assert!(all[0].fault.is_none());
        let m = all[0].manifest.as_ref().unwrap();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("alpha", "1.0.0"));
        assert!(all[1].fault.is_some());
        assert_eq!(all[1].manifest.as_ref().unwrap().name, "broken");
        let one = digests(&src, &found, Some("alpha")).await;
        assert_eq!(one.len(), 1, "a name leaves the other roots out");
        assert!(digests(&src, &found, Some("beta")).await.is_empty());
    }

    #[test]
    fn no_file_is_looked_for_beside_a_url_or_a_registry() {
        assert!(
            beside_signature("https://example.com/", "a", true)
                .unwrap()
                .is_none()
        );
        assert!(
            beside_signature("sqlite:x.db", "a", true)
                .unwrap()
                .is_none()
        );
        assert!(is_registry_spec("sqlite:x.db"));
        assert!(!is_registry_spec("dir/"));
        assert_eq!(
            no_signature("https://example.com/", "a@1.0.0", true),
            "no signature: https://example.com/ keeps none for a"
        );
        assert!(
            no_signature("sqlite:x.db", "a@1.0.0", true).starts_with(
                "no signature: the registry sqlite:x.db keeps no signature for a@1.0.0"
            )
        );
    }
}
