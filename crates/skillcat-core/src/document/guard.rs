//! Warnings for authors: what makes a skill look unfinished without making it invalid.
//!
//! - `init-template`: the skill is still what `skillcat init` wrote — its placeholder
//!   description, its example script byte for byte. A central registry refuses it.
//! - `link-missing`: a relative link in the body (`[x](references/missing.md)`) names a file
//!   the skill does not hold.
//!
//! Each is a [`Fault`] whose kind [is a warning](FaultKind::is_warning): shown, never a reason
//! to refuse a skill on a client, never a change of exit code.

use super::{Fault, FaultKind};
use crate::path::{FileEntry, resolve_reference};

/// The description `skillcat init` writes, for the author to replace.
pub const TEMPLATE_DESCRIPTION: &str = "Replace this with what the skill does and when to use it, in the words a user would say (an agent reads only this line to decide whether to load the skill).";

/// Where `skillcat init` writes its example script, relative to the skill.
pub const TEMPLATE_SCRIPT_PATH: &str = "scripts/hello.sh";

/// The example script `skillcat init` writes: a tool `tools` offers (executable, a `#!` line, a
/// comment line that describes it).
pub const TEMPLATE_SCRIPT: &str = r#"#!/bin/sh
# Say hello to someone (an example tool: replace it with your own script).
#
# `skillcat run SKILL-DIR SKILL-NAME hello --args "you"` runs it confined; its arguments are
# split as a shell splits them, but no shell runs.
echo "Hello, ${1:-world}!"
"#;

/// What of `skillcat init`'s template a skill still holds: its `description` (trimmed) and the
/// bytes of its [`TEMPLATE_SCRIPT_PATH`] (`None`: the skill has no such file). One warning
/// naming each part left as it was; none when the author replaced both.
pub fn template_warnings(description: &str, example_script: Option<&[u8]>) -> Vec<Fault> {
    let mut left = Vec::new();
    if description.trim() == TEMPLATE_DESCRIPTION {
        left.push("the placeholder description".to_string());
    }
    if example_script == Some(TEMPLATE_SCRIPT.as_bytes()) {
        left.push(format!("the example script {TEMPLATE_SCRIPT_PATH}"));
    }
    if left.is_empty() {
        return Vec::new();
    }
    vec![
        Fault::new(
            FaultKind::InitTemplate,
            format!(
                "The skill is still skillcat init's template: {}",
                left.join(" and ")
            ),
        )
        .with_hint(
            "write what the skill does and when to use it as its description, and replace (or \
             delete) the example script",
        ),
    ]
}

/// The targets of the body's inline Markdown links and images (`[x](target)`,
/// `![x](target "title")`), outside fenced code blocks and inline code, in order.
pub fn link_targets(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in body.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Inline code spans hold examples, not links: skip what is between backticks.
        let mut code = false;
        let mut rest = line;
        while let Some(i) = rest.find(['`', ']']) {
            let (c, after) = (rest.as_bytes()[i], &rest[i + 1..]);
            rest = after;
            if c == b'`' {
                code = !code;
                continue;
            }
            if code {
                continue;
            }
            let Some(inner) = rest.strip_prefix('(') else {
                continue;
            };
            let Some(end) = inner.find(')') else {
                continue;
            };
            let target = inner[..end].trim();
            let target = match target.strip_prefix('<') {
                Some(t) => t.split('>').next().unwrap_or(""),
                None => target.split_whitespace().next().unwrap_or(""),
            };
            if !target.is_empty() {
                out.push(target);
            }
            rest = &inner[end + 1..];
        }
    }
    out
}

/// One warning for each relative link of `body` to a file (or folder) `files` lacks, in order,
/// each target once. URLs, absolute paths, `#anchors` and links that climb out of the skill
/// are not the skill's files and are not checked.
pub fn link_warnings(body: &str, files: &[FileEntry]) -> Vec<Fault> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for target in link_targets(body) {
        let Ok(path) = resolve_reference(target) else {
            continue;
        };
        let p = path.as_str();
        let folder = format!("{p}/");
        let held = files
            .iter()
            .any(|f| f.path == p || f.path.starts_with(&folder));
        if held || seen.contains(&p.to_string()) {
            continue;
        }
        seen.push(p.to_string());
        out.push(Fault::new(
            FaultKind::LinkMissing,
            format!("The body links to {target}, which is not a file of the skill"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> FileEntry {
        FileEntry {
            path: path.to_string(),
            size: 1,
            executable: false,
            private: false,
        }
    }

    #[test]
    fn links_are_found_outside_code() {
        let body = "See [a](references/a.md) and ![img](<img/x y.png> \"t\").\n\
                    `[not](code.md)` but [b](b.md#top)\n```\n[no](fenced.md)\n```\n[c]: d.md\n";
        assert_eq!(
            link_targets(body),
            ["references/a.md", "img/x y.png", "b.md#top"]
        );
    }

    #[test]
    fn missing_relative_links_are_warned_once_each() {
        let files = [file("SKILL.md"), file("references/a.md")];
        let body = "[a](./references/a.md) [folder](references/) [m](references/m.md) \
                    [m again](references/m.md#x) [web](https://x.org/m.md) [up](../x.md) \
                    [anchor](#usage) [abs](/etc/passwd)";
        let w = link_warnings(body, &files);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].kind(), FaultKind::LinkMissing);
        assert_eq!(w[0].kind().as_str(), "link-missing");
        assert!(w[0].kind().is_warning());
        assert!(w[0].message().contains("references/m.md"), "{}", w[0]);
    }

    #[test]
    fn the_template_is_recognised_part_by_part() {
        let script = TEMPLATE_SCRIPT.as_bytes();
        let w = template_warnings(TEMPLATE_DESCRIPTION, Some(script));
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].kind().as_str(), "init-template");
        assert!(w[0].message().contains("description"), "{}", w[0]);
        assert!(w[0].message().contains(TEMPLATE_SCRIPT_PATH), "{}", w[0]);
        let w = template_warnings("Triage logs.", Some(script));
        assert!(!w[0].message().contains("description"), "{}", w[0]);
        assert!(template_warnings("Triage logs.", Some(b"#!/bin/sh\n")).is_empty());
        assert!(template_warnings("Triage logs.", None).is_empty());
        assert_eq!(template_warnings(TEMPLATE_DESCRIPTION, None).len(), 1);
    }
}
