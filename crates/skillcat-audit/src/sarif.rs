//! The findings of an audit as a SARIF 2.1.0 log, for code scanning: one run, every rule's
//! metadata, one result a finding.

use serde_json::{Value, json};

use crate::rule::{Finding, RULES, Severity};

/// Where the SARIF report says the tool is documented: the crate's page on crates.io, the one
/// address skillcat is to have (it is not published yet and has no other home page).
const INFORMATION_URI: &str = "https://crates.io/crates/skillcat";

/// A severity as a SARIF level.
fn level(s: Severity) -> &'static str {
    match s {
        Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low => "note",
    }
}

/// The SARIF 2.1.0 log of `findings` (`roots[i]` the root of finding `i`'s skill): one run,
/// every rule's metadata, one result a finding located at its file (relative to the source)
/// and, where it has one, its line and column.
pub fn sarif(findings: &[Finding], roots: &[String]) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.id_str,
                "shortDescription": { "text": r.summary },
                "fullDescription": { "text": r.rationale },
                "defaultConfiguration": { "level": level(r.severity) },
                "properties": { "severity": r.severity },
            })
        })
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .zip(roots)
        .map(|(f, root)| {
            let path = skillcat_core::path::join_path(root, &f.path);
            let mut location = json!({
                "physicalLocation": {
                    "artifactLocation": { "uri": artifact_uri(&path) },
                }
            });
            if let Some(line) = f.line {
                let mut region = json!({ "startLine": line });
                if let Some(column) = f.column {
                    region["startColumn"] = json!(column);
                }
                location["physicalLocation"]["region"] = region;
            }
            json!({
                "ruleId": f.rule,
                "ruleIndex": RULES.iter().position(|r| r.id == f.rule),
                "level": level(f.severity),
                "message": { "text": f.message },
                "locations": [location],
            })
        })
        .collect();
    json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "skillcat",
                    // The workspace has one version: this crate's is skillcat's.
                    "version": env!("CARGO_PKG_VERSION"),
                    "informationUri": INFORMATION_URI,
                    "rules": rules,
                }
            },
            "results": results,
        }]
    })
}

/// A relative URI reference for a `/`-separated path: every byte outside the unreserved set
/// and `/` percent-encoded (a path may hold spaces, `#`, `?` or hidden characters).
fn artifact_uri(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_uris_are_percent_encoded() {
        assert_eq!(artifact_uri("s/a b/#c.md"), "s/a%20b/%23c.md");
        assert_eq!(artifact_uri("é"), "%C3%A9");
    }
}
