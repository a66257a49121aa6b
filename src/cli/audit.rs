//! `skillcat audit SOURCE [NAME...]`: every finding of the audit in each skill of a source, as
//! text grouped by skill, JSON or SARIF 2.1.0; the exit status says whether one is at or above
//! `--fail-on`.

use std::io::Write;

use clap::ValueEnum;
use serde_json::{Value, json};
use skillcat::audit::{Finding, Severity, line_safe};
use skillcat::document::Skill;
use skillcat::ops::audit::{AuditNote, AuditReport, audit_source};

use super::read::{Opened, find_in, open_and_discover, print_fault};
use super::{CliError, CliResult, ExitStatus, Globals};

/// The output of `skillcat audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum AuditFormat {
    /// `path:line:col: severity rule: message`, grouped by skill.
    #[default]
    Text,
    /// `{"findings":[…]}`.
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
}

/// A severity on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeverityArg {
    /// Low, medium and high.
    Low,
    /// Medium and high.
    Medium,
    /// High only.
    High,
}

impl From<SeverityArg> for Severity {
    fn from(s: SeverityArg) -> Severity {
        match s {
            SeverityArg::Low => Severity::Low,
            SeverityArg::Medium => Severity::Medium,
            SeverityArg::High => Severity::High,
        }
    }
}

/// `skillcat audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// Any source.
    pub source: String,
    /// Only these skills.
    pub names: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: AuditFormat,
    /// Report findings of this severity and above.
    #[arg(long, value_enum, default_value = "low")]
    pub min_severity: SeverityArg,
    /// Exit 1 when a finding of this severity or above is reported.
    #[arg(long, value_enum, default_value = "high")]
    pub fail_on: SeverityArg,
}

/// `skillcat audit SOURCE [NAME...]`: exit 0 when no finding is at or above `fail_on`, 1 when
/// one is, 2 when the source (or a root of it) cannot be read or a name is not in it.
pub async fn audit(a: AuditArgs, g: &Globals) -> CliResult {
    let AuditArgs {
        source,
        names,
        format,
        min_severity,
        fail_on,
    } = a;
    let (arg, names) = (source.as_str(), names.as_slice());
    let Opened {
        shown,
        src,
        found: mut d,
        ..
    } = open_and_discover(arg, g).await?;
    let skills: Vec<Skill> = if names.is_empty() {
        std::mem::take(&mut d.skills)
    } else {
        // A name the source lacks is a mistake on the command line, not a finding.
        names
            .iter()
            .map(|n| {
                find_in(&shown, &d, n).map_err(|e| match e {
                    CliError::Failed(m) => CliError::Usage(m),
                    e => e,
                })
            })
            .collect::<Result<_, _>>()?
    };
    // Scripts are judged offered or not by the interpreters this host's runs would allow.
    let (config, _) = super::configuration(g)?;
    let opts =
        skillcat::ops::audit::options(&config.scripts).map_err(|e| usage!("[scripts]: {e}"))?;
    let faults = if names.is_empty() { &d.faults[..] } else { &[] };
    let min = Severity::from(min_severity);
    let report = audit_source(&*src, &skills, faults, &opts, min).await;
    for n in &report.notes {
        match n {
            AuditNote::NotASkill { location } => note!(
                "warning: {}: no SKILL.md, not a skill: not audited",
                line_safe(location)
            ),
            AuditNote::Unreadable(f) => print_fault(f),
            // Says that a skill (or root) could not be audited, and why: exit 2.
            AuditNote::Unaudited { location, error } => err!(
                "Error: {}: {}; its files were not audited",
                line_safe(location),
                line_safe(&error.to_string())
            ),
        }
    }
    let findings = &report.findings;
    match format {
        AuditFormat::Text => print_text(&report),
        AuditFormat::Json => print_json(&json!({ "findings": findings }))?,
        AuditFormat::Sarif => print_json(&skillcat::audit::sarif(findings, &report.roots))?,
    }
    let fail_on = Severity::from(fail_on);
    if report.unreadable() {
        return Ok(ExitStatus::Unreadable);
    }
    Ok(ExitStatus::faults_if(
        findings.iter().any(|f| f.severity >= fail_on),
    ))
}

/// Each skill with findings under its name (in the order audited), one line a finding; a
/// summary of the skills audited on stderr.
fn print_text(report: &AuditReport) {
    let (findings, audited) = (&report.findings, report.audited);
    // Each skill's findings, grouped once (a catalog has thousands of skills, few findings).
    let mut by_skill: std::collections::HashMap<&str, Vec<&Finding>> = Default::default();
    for f in findings {
        by_skill.entry(f.skill.as_str()).or_default().push(f);
    }
    for name in &report.headings {
        // A name printed once, where it first comes.
        let Some(mine) = by_skill.remove(name.as_str()) else {
            continue;
        };
        out!("{}", line_safe(name));
        for f in mine {
            out!(
                "  {}: {} {}: {}",
                f.place(),
                f.severity,
                f.rule,
                line_safe(&f.message)
            );
        }
    }
    let count = |s| report.count(s);
    note!(
        "audited {} skill{}: {} high, {} medium, {} low",
        audited,
        if audited == 1 { "" } else { "s" },
        count(Severity::High),
        count(Severity::Medium),
        count(Severity::Low)
    );
}

fn print_json(value: &Value) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| failed!("{e}"))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|_| CliError::Output)
}
