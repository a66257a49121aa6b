//! `publish` and `yank`: which skills a publish sends, each with its version and the signature
//! checked to name exactly what is published, before anything is sent.

use std::path::PathBuf;

use crate::document::Fault;
use crate::serve::{Site, SiteOptions, SiteProblem, SiteSkill};
use crate::sign::{self, SignError, Statement, source_signatures::ReadSignatureError};
use crate::source::{Discovery, Source};

/// A skill read for publishing, from one of the paths given.
#[derive(Debug, Clone)]
pub struct ReadSkill {
    /// The path it was read from.
    pub path: String,
    /// Whether that path holds this one skill only (its signature is then `PATH.minisig`, as
    /// `pack --sign` names it).
    pub single: bool,
    /// The skill, packed.
    pub skill: SiteSkill,
}

/// A skill a publish leaves out because it is invalid: where it is and every fault, as
/// `validate` names them.
#[derive(Debug, Clone)]
pub struct Invalid {
    /// Where it is, for people.
    pub location: String,
    /// What is wrong, in the validator's order.
    pub faults: Vec<Fault>,
}

/// What a source of a publish holds: the skills read and packed, the invalid ones, and any
/// other that was left out (it could not be packed, say).
#[derive(Debug, Default)]
pub struct Read {
    /// The valid skills, packed.
    pub skills: Vec<ReadSkill>,
    /// The invalid skills, each with its faults.
    pub invalid: Vec<Invalid>,
    /// The skills left out for another reason.
    pub problems: Vec<SiteProblem>,
}

/// Reads and packs the skills a source of `path` holds, judged as `opts` says; the skills left
/// out are returned with why: the invalid ones with their faults (not as a catalog words them,
/// "not served"), the others as problems.
pub async fn read(
    path: &str,
    src: &dyn Source,
    found: &Discovery,
    opts: &SiteOptions,
) -> crate::Result<Read> {
    // As `pack --sign` names the signatures: SOURCE.minisig for a source of one skill.
    let single = found.skills.len() + found.faults.len() == 1;
    let mut invalid: Vec<Invalid> = (found.faults.iter())
        .map(|f| Invalid {
            location: f.location.clone(),
            faults: vec![f.fault.clone()],
        })
        .collect();
    invalid.extend(found.skills.iter().filter_map(|skill| {
        let faults = skill.validate(&opts.validate);
        (!faults.is_empty()).then(|| Invalid {
            location: skill.location().to_string(),
            faults,
        })
    }));
    let (site, problems) = Site::from_discovery(src, found, opts).await?;
    let skills = (site.skills().iter())
        .map(|s| ReadSkill {
            path: path.to_string(),
            single,
            skill: s.clone(),
        })
        .collect();
    // The site leaves the invalid skills out too: said once, above.
    let problems = (problems.into_iter())
        .filter(|p| !invalid.iter().any(|i| i.location == p.location))
        .collect();
    Ok(Read {
        skills,
        invalid,
        problems,
    })
}

/// One skill to publish: packed, its version known, its signature checked.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Where it was read from, for people: the path given for a source of one skill, else the
    /// skill's location in it.
    pub from: String,
    /// The skill, packed.
    pub skill: SiteSkill,
    /// The version published.
    pub version: String,
    /// The signature sent with it.
    pub signature: Option<Signature>,
}

/// A signature a skill is published with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The `.minisig` text.
    pub text: String,
    /// The id of the key it names.
    pub key_id: String,
    /// Where it was found, for people.
    pub origin: String,
}

/// Where a skill's signature was found: what says how to sign it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureFrom {
    /// The file given for the one skill published.
    Given(PathBuf),
    /// The one its source keeps (a registry's, an index's).
    Kept,
    /// The `.minisig` beside it.
    Beside,
}

/// How a signature differs from what is published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// It signs another skill.
    #[error("is a signature of {signed}, not of {skill}")]
    OtherSkill {
        /// The skill it signs.
        signed: String,
        /// The skill published.
        skill: String,
    },
    /// It signs another version (empty: none).
    #[error("was made for {}, not {version} (the version published now)", made_for(.signed))]
    OtherVersion {
        /// The version it signs.
        signed: String,
        /// The version published.
        version: String,
    },
    /// It signs other content.
    #[error("was made for other content: the skill's files changed since it was signed")]
    OtherContent,
}

fn made_for(version: &str) -> String {
    if version.is_empty() {
        "no version".to_string()
    } else {
        format!("version {version}")
    }
}

/// Why a skill's signature cannot be published with it.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// The `.minisig` beside it could not be read.
    #[error(transparent)]
    Read(#[from] ReadSignatureError),
    /// The signature is not one skillcat can check.
    #[error("{at}: the signature {origin} cannot be used: {cause}")]
    Unusable {
        /// `NAME@VERSION`.
        at: String,
        /// Where it was found.
        origin: String,
        /// Why (boxed: the error stays small).
        cause: Box<SignError>,
    },
    /// The skill has no statement to sign.
    #[error("{at}: {cause}")]
    Statement {
        /// `NAME@VERSION`.
        at: String,
        /// Why (boxed: the error stays small).
        cause: Box<SignError>,
    },
    /// The signature names something else than what is published.
    #[error("{at}: the signature {origin} {mismatch}")]
    Mismatch {
        /// `NAME@VERSION`.
        at: String,
        /// Where it was found.
        origin: String,
        /// Where it was found, as a kind.
        from: SignatureFrom,
        /// The path the skill was read from.
        path: String,
        /// The skill.
        name: String,
        /// How it differs.
        mismatch: Mismatch,
    },
}

/// Why nothing can be published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The paths hold no valid skill.
    #[error("no valid skill in {}", .0.join(", "))]
    NoSkill(Vec<String>),
    /// One signature was given for several skills.
    #[error("a signature given is the signature of one skill; the paths hold {0}")]
    SignatureForMany(usize),
    /// Skills without a version (`metadata.version`).
    #[error("no version for {}: set metadata.version in the SKILL.md frontmatter", .0.join(", "))]
    Unversioned(Vec<String>),
}

/// The skills to publish, in order, each with its signature checked; and the signatures
/// refused. `given` is a signature file and its text, for a publish of one skill.
pub fn plan(
    paths: &[String],
    read: Vec<ReadSkill>,
    given: Option<&(PathBuf, String)>,
) -> Result<(Vec<Planned>, Vec<SignatureError>), PlanError> {
    if read.is_empty() {
        return Err(PlanError::NoSkill(paths.to_vec()));
    }
    if given.is_some() && read.len() != 1 {
        return Err(PlanError::SignatureForMany(read.len()));
    }
    let unversioned: Vec<String> = (read.iter())
        .filter(|r| r.skill.version.is_none())
        .map(|r| r.skill.name.clone())
        .collect();
    if !unversioned.is_empty() {
        return Err(PlanError::Unversioned(unversioned));
    }
    let mut planned = Vec::new();
    let mut refused = Vec::new();
    for r in read {
        let version = r.skill.version.clone().unwrap_or_default();
        match signature_for(&r, &version, given) {
            Ok(signature) => planned.push(Planned {
                from: if r.single {
                    r.path
                } else {
                    r.skill.location.clone()
                },
                skill: r.skill,
                version,
                signature,
            }),
            Err(e) => refused.push(e),
        }
    }
    Ok((planned, refused))
}

/// The signature a skill is published with: `given`, else the one its source keeps, else the
/// `.minisig` beside it (as `sign` and `pack --sign` write it). Each is checked to name exactly
/// what is published.
// A refusal carries what says how to sign again; it is made once a skill, so its size is not
// worth a box.
#[allow(clippy::result_large_err)]
pub fn signature_for(
    r: &ReadSkill,
    version: &str,
    given: Option<&(PathBuf, String)>,
) -> Result<Option<Signature>, SignatureError> {
    let s = &r.skill;
    let at = format!("{}@{version}", s.name);
    let (text, origin, from) = if let Some((file, text)) = given {
        let origin = file.display().to_string();
        (text.clone(), origin, SignatureFrom::Given(file.clone()))
    } else if let Some(text) = &s.signature {
        let origin = format!("the signature {} keeps for {}", r.path, s.name);
        (text.clone(), origin, SignatureFrom::Kept)
    } else {
        match sign::source_signatures::beside_signature(&r.path, &s.name, r.single)? {
            Some(found) => (found.text, found.origin, SignatureFrom::Beside),
            None => return Ok(None),
        }
    };
    let claim = match sign::claim(&text) {
        Ok(c) => c,
        Err(e) => {
            let cause = Box::new(e);
            return Err(SignatureError::Unusable { at, origin, cause });
        }
    };
    let mut manifest = s.manifest.clone();
    manifest.version = version.to_string();
    let expected = match Statement::from_manifest(&manifest) {
        Ok(e) => e,
        Err(e) => {
            let cause = Box::new(e);
            return Err(SignatureError::Statement { at, cause });
        }
    };
    let signed = &claim.statement;
    let mismatch = if *signed == expected {
        let key_id = claim.key_id;
        return Ok(Some(Signature {
            text,
            key_id,
            origin,
        }));
    } else if signed.name != expected.name {
        let (signed, skill) = (signed.name.clone(), s.name.clone());
        Mismatch::OtherSkill { signed, skill }
    } else if signed.version != expected.version {
        let (signed, version) = (signed.version.clone(), version.to_string());
        Mismatch::OtherVersion { signed, version }
    } else {
        Mismatch::OtherContent
    };
    Err(SignatureError::Mismatch {
        at,
        origin,
        from,
        path: r.path.clone(),
        name: s.name.clone(),
        mismatch,
    })
}

/// A version to yank, `NAME@VERSION`: both parts present, neither able to change the request's
/// path. `None` when `spec` is not one.
pub fn yank_target(spec: &str) -> Option<(&str, &str)> {
    spec.split_once('@').filter(|(n, v)| {
        !n.is_empty() && !v.is_empty() && !format!("{n}{v}").contains(['/', '?', '#', '%'])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Manifest;

    fn skill(name: &str, version: Option<&str>) -> ReadSkill {
        let files = [("SKILL.md", &b"---\nname: x\n---\n"[..], false)];
        ReadSkill {
            path: "/nowhere/skills".into(),
            single: false,
            skill: SiteSkill {
                name: name.into(),
                description: "d".into(),
                version: version.map(Into::into),
                location: format!("skills/{name}"),
                archive: Default::default(),
                archive_digest: "sha256:0".into(),
                manifest: Manifest::build(name, version.unwrap_or(""), files),
                files: Vec::new(),
                signature: None,
                page: Default::default(),
            },
        }
    }

    /// A signature of `name@version` with the skill's files, by a new key.
    fn signed(name: &str, version: &str) -> String {
        let (_, secret) = sign::generate_keypair(None).unwrap();
        let mut manifest = skill(name, Some(version)).skill.manifest;
        manifest.version = version.into();
        sign::sign(&Statement::from_manifest(&manifest).unwrap(), &secret, None).unwrap()
    }

    #[test]
    fn nothing_is_planned_without_skills_versions_or_with_one_signature_for_two() {
        let paths = vec!["a".to_string()];
        assert_eq!(
            plan(&paths, Vec::new(), None).unwrap_err(),
            PlanError::NoSkill(paths.clone())
        );
        let two = vec![skill("a", Some("1.0.0")), skill("b", Some("1.0.0"))];
        let given = (PathBuf::from("a.minisig"), String::new());
        assert_eq!(
            plan(&paths, two, Some(&given)).unwrap_err(),
            PlanError::SignatureForMany(2)
        );
        let unversioned = vec![skill("a", Some("1.0.0")), skill("b", None)];
        assert_eq!(
            plan(&paths, unversioned, None).unwrap_err(),
            PlanError::Unversioned(vec!["b".into()])
        );
    }

    #[test]
    fn a_skill_without_a_signature_is_published_unsigned_from_its_location() {
        let (planned, refused) = plan(&[], vec![skill("a", Some("1.0.0"))], None).unwrap();
        assert!(refused.is_empty());
        assert_eq!(planned[0].from, "skills/a");
        assert_eq!(planned[0].version, "1.0.0");
        assert_eq!(planned[0].signature, None);
    }

    #[test]
    fn a_signature_must_name_the_skill_its_version_and_its_content() {
        let r = skill("a", Some("1.0.0"));
        let given = |text: String| (PathBuf::from("a.minisig"), text);
        let good = signature_for(&r, "1.0.0", Some(&given(signed("a", "1.0.0")))).unwrap();
        assert_eq!(good.unwrap().origin, "a.minisig");
        let mismatch = |text| match signature_for(&r, "1.0.0", Some(&given(text))) {
            Err(SignatureError::Mismatch { mismatch, .. }) => mismatch,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            mismatch(signed("b", "1.0.0")),
            Mismatch::OtherSkill {
                signed: "b".into(),
                skill: "a".into()
            }
        );
        let old = mismatch(signed("a", "0.9.0"));
        assert_eq!(
            old.to_string(),
            "was made for version 0.9.0, not 1.0.0 (the version published now)"
        );
        let garbage = signature_for(&r, "1.0.0", Some(&given("not a signature".into())));
        assert!(matches!(garbage, Err(SignatureError::Unusable { .. })));
    }

    #[test]
    fn a_yank_target_is_name_at_version_that_cannot_change_the_path() {
        assert_eq!(yank_target("pdf@1.0.0"), Some(("pdf", "1.0.0")));
        for bad in ["pdf", "@1.0", "pdf@", "p/df@1", "pdf@1%2f"] {
            assert_eq!(yank_target(bad), None, "{bad}");
        }
    }
}
