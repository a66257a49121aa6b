//! `skillcat audit`: every finding of the audit in the skills of a source, and in the roots of
//! it that are not readable skills, with what could not be audited.

use crate::audit::{AuditOptions, Finding, Severity, audit_all, audit_root};
use crate::document::{FaultKind, Skill};
use crate::source::{RootFault, Source};

/// Something said of a skill or root on the way, in the order it came.
#[derive(Debug)]
pub enum AuditNote {
    /// A directory without a document (a catalog's `docs/`): no skill at all, not audited.
    NotASkill {
        /// Where it is.
        location: String,
    },
    /// A root that is not a readable skill; its files are audited all the same.
    Unreadable(RootFault),
    /// A skill or root whose files could not be audited.
    Unaudited {
        /// Where it is.
        location: String,
        /// Why.
        error: crate::Error,
    },
}

/// What [`audit_source`] found.
#[derive(Debug, Default)]
pub struct AuditReport {
    /// The findings at or above the minimum severity, skill by skill.
    pub findings: Vec<Finding>,
    /// The root in the source of each finding's skill (SARIF's paths), one per finding.
    pub roots: Vec<String>,
    /// The skills' names in the order audited.
    pub headings: Vec<String>,
    /// How many skills and roots were audited.
    pub audited: usize,
    /// What was said on the way, in order.
    pub notes: Vec<AuditNote>,
}

impl AuditReport {
    /// Whether a skill or root could not be read, or not audited.
    pub fn unreadable(&self) -> bool {
        self.notes
            .iter()
            .any(|n| !matches!(n, AuditNote::NotASkill { .. }))
    }

    /// How many findings are of severity `s`.
    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }

    fn keep(&mut self, root: &str, found: Vec<Finding>, min: Severity) {
        for f in found.into_iter().filter(|f| f.severity >= min) {
            self.roots.push(root.to_string());
            self.findings.push(f);
        }
    }
}

/// Audits `skills` of `src`, then each root of `faults`: a root that is not a readable skill
/// has its files audited all the same, but one without a document is no skill and is only
/// noted. Findings below `min` are left out.
pub async fn audit_source(
    src: &dyn Source,
    skills: &[Skill],
    faults: &[RootFault],
    opts: &AuditOptions,
    min: Severity,
) -> AuditReport {
    let mut report = AuditReport::default();
    let results = audit_all(src, skills, opts).await;
    for (skill, result) in skills.iter().zip(results) {
        report.headings.push(skill.name());
        match result {
            Ok(found) => {
                report.audited += 1;
                report.keep(skill.root(), found, min);
            }
            Err(error) => report.notes.push(AuditNote::Unaudited {
                location: skill.location().to_string(),
                error,
            }),
        }
    }
    for f in faults {
        if f.fault.kind() == FaultKind::MissingDocument {
            report.notes.push(AuditNote::NotASkill {
                location: f.location.clone(),
            });
            continue;
        }
        report.notes.push(AuditNote::Unreadable(f.clone()));
        match audit_root(src, &f.root, opts).await {
            Ok(found) => {
                report.audited += 1;
                report
                    .headings
                    .extend(found.first().map(|f| f.skill.clone()));
                report.keep(&f.root, found, min);
            }
            Err(error) => report.notes.push(AuditNote::Unaudited {
                location: f.location.clone(),
                error,
            }),
        }
    }
    report
}

/// The audit's options on this host: a script is judged offered or not by the interpreters
/// the configuration's `[scripts]` allows (what a run would allow).
pub fn options(
    scripts: &crate::config::ScriptsConfig,
) -> Result<AuditOptions, crate::script::ScriptError> {
    Ok(AuditOptions {
        interpreters: crate::runtime::interpreters(scripts)?,
        ..AuditOptions::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{DirOptions, DirSource, discover};
    use std::path::PathBuf;

    #[tokio::test]
    async fn findings_below_the_minimum_are_left_out_and_a_folder_without_document_noted() {
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("leaky");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: leaky\ndescription: d\n---\nRun it\u{202E} now, a\u{200B}b.\n",
        )
        .unwrap();
        std::fs::create_dir_all(tmp.path().join("docs")).unwrap();
        std::fs::write(tmp.path().join("docs/readme.txt"), "x").unwrap();
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let d = discover(&src).await.unwrap();
        let opts = AuditOptions::default();
        let all = audit_source(&src, &d.skills, &d.faults, &opts, Severity::Low).await;
        assert_eq!(all.audited, 1);
        assert_eq!(all.headings, ["leaky"]);
        assert!(!all.findings.is_empty(), "{all:?}");
        assert_eq!(all.roots.len(), all.findings.len());
        assert!(!all.unreadable(), "{:?}", all.notes);
        let above = Severity::High;
        let high = audit_source(&src, &d.skills, &d.faults, &opts, above).await;
        assert!(high.findings.iter().all(|f| f.severity >= above));
        assert_eq!(high.findings.len(), all.count(Severity::High));
    }
    #[test]
    fn options_follow_the_configured_interpreters_and_refuse_a_relative_one() {
        let mut scripts = crate::config::ScriptsConfig::default();
        assert!(options(&scripts).is_ok());
        let python = PathBuf::from("/usr/bin/python3");
        scripts
            .interpreters
            .insert("python3".into(), python.clone());
        let opts = options(&scripts).unwrap();
        assert_eq!(opts.interpreters.get("python3"), Some(python.as_path()));
        scripts.interpreters.insert("sh".into(), "sh".into());
        assert!(options(&scripts).is_err());
    }
}
