//! The reference validator's functions (`validate`, `read_properties`, `to_prompt`), with
//! skillcat's fixes (see the README's divergences). The command line's `validate`, `properties`
//! and `prompt` are built on these, and the conformance vectors test them.

use std::path::Path;

use crate::document::{Fault, FaultKind, ValidateOptions};
use crate::prompt::{PromptOptions, PromptSkill};
use crate::source::{self, DirOptions, DirSource};

/// Every fault of the skill directory at `path` (missing path, not a directory, missing document,
/// a refusal of the document, or the field faults), in the reference's order.
pub async fn validate(path: &Path, opts: &ValidateOptions) -> Vec<Fault> {
    if let Err(fault) = source::check(path) {
        return vec![fault];
    }
    let src = match DirSource::open_skill(path, DirOptions::default()) {
        Ok(s) => s,
        Err(e) => return vec![Fault::unreadable(e)],
    };
    match source::load(&src, "").await {
        Ok(skill) => skill.validate(opts),
        Err(crate::Error::InvalidSkill { fault, .. }) => vec![fault],
        Err(e) => vec![Fault::unreadable(e)],
    }
}

/// Loads the one skill at `path` (a directory), with the reference's wording for a missing
/// document (`SKILL.md not found in {path}`).
async fn load_one(path: &Path) -> Result<crate::document::Skill, Fault> {
    let missing = || {
        Fault::new(
            FaultKind::MissingDocument,
            format!("SKILL.md not found in {}", path.display()),
        )
    };
    if source::check(path).is_err() {
        return Err(missing());
    }
    let src = DirSource::open_skill(path, DirOptions::default()).map_err(Fault::unreadable)?;
    match source::load(&src, "").await {
        Ok(s) => Ok(s),
        Err(crate::Error::InvalidSkill { fault, .. })
            if fault.kind() == FaultKind::MissingDocument =>
        {
            Err(missing())
        }
        Err(crate::Error::InvalidSkill { fault, .. }) => Err(fault),
        Err(e) => Err(Fault::unreadable(e)),
    }
}

/// The properties of the skill at `path` as the reference's `read_properties` gives them, or the
/// first fault that stops it.
pub async fn read_properties(path: &Path) -> Result<serde_json::Value, Fault> {
    load_one(path).await?.properties()
}

/// The `<available_skills>` block for the skill directories `paths`, in order; the first failing
/// skill is the error, as in the reference.
pub async fn to_prompt(paths: &[&Path]) -> Result<String, Fault> {
    let mut entries = Vec::with_capacity(paths.len());
    for p in paths {
        let skill = load_one(p).await?;
        skill.properties()?;
        entries.push(skill);
    }
    let names: Vec<String> = entries
        .iter()
        .map(|s| s.raw_name().unwrap_or_default().to_string())
        .collect();
    let skills: Vec<PromptSkill<'_>> = entries
        .iter()
        .zip(&names)
        .map(|(s, n)| PromptSkill {
            name: n,
            description: s.description(),
            location: s.location(),
        })
        .collect();
    Ok(crate::prompt::render(&skills, &PromptOptions::default()).text)
}
