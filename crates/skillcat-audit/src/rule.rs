//! The rules: their stable ids, severities and rationales, and the finding each reports.

use serde::{Deserialize, Serialize};

/// How much a finding matters. Ordered: `Low < Medium < High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look; often harmless.
    Low,
    /// Likely unwanted; review before trusting the skill.
    Medium,
    /// Refuse the skill until it is explained or fixed.
    High,
}

impl Severity {
    /// `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule's stable id: its kebab-case spelling is what JSON, SARIF and the docs name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleId {
    /// Bidirectional controls (Trojan Source).
    UnicodeBidiControl,
    /// Unicode tag characters.
    UnicodeTagCharacter,
    /// Invisible characters by Unicode property, stray joiners and variation selectors.
    UnicodeInvisible,
    /// Mixed-script or confusable words in a name, a file name or a heading.
    UnicodeConfusable,
    /// PEM and OpenSSH private key blocks.
    SecretPrivateKey,
    /// Cloud and forge tokens of a known shape.
    SecretToken,
    /// A high-entropy value assigned to a name that says it is secret.
    SecretAssignment,
    /// An executable or shared object outside `scripts/`.
    ContentBinary,
    /// An archive inside a skill.
    ContentArchive,
    /// A file over the size limit.
    ContentLarge,
    /// A symbolic link inside a skill.
    ContentSymlink,
    /// A file under `scripts/` that is not offered as a tool.
    ContentScriptNotTool,
    /// Instructions to the model inside an HTML comment of SKILL.md.
    HostHiddenInstruction,
    /// Text telling the model to ignore earlier instructions.
    HostIgnoreInstructions,
    /// A long base64 run in SKILL.md.
    HostBase64Blob,
    /// A script that uses the network while the skill declares none.
    UndeclaredNetwork,
    /// A script that writes outside the skill and the working directory while the skill
    /// declares no `fs_write`.
    UndeclaredWrite,
}

impl RuleId {
    /// The kebab-case id (`unicode-bidi-control`).
    pub fn as_str(self) -> &'static str {
        self.rule().id_str
    }

    /// This rule's entry in [`RULES`].
    pub fn rule(self) -> &'static Rule {
        RULES
            .iter()
            .find(|r| r.id == self)
            .expect("every rule id has an entry in RULES")
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule: what docs and SARIF rule metadata say of it.
#[derive(Debug)]
pub struct Rule {
    /// Its id.
    pub id: RuleId,
    /// Its id as text (what [`RuleId`] serialises to).
    pub id_str: &'static str,
    /// The severity of every finding of this rule.
    pub severity: Severity,
    /// One line: what it finds.
    pub summary: &'static str,
    /// Why it matters.
    pub rationale: &'static str,
}

/// Every rule, in the order the docs list them.
pub const RULES: &[Rule] = &[
    Rule {
        id: RuleId::UnicodeBidiControl,
        id_str: "unicode-bidi-control",
        severity: Severity::High,
        summary: "A bidirectional control character (U+202A-U+202E, U+2066-U+2069) in a text file.",
        rationale: "Bidirectional controls reorder how text is displayed, so what a reviewer reads differs from what a model or an interpreter reads (Trojan Source, CVE-2021-42574). A skill's text has no need of them.",
    },
    Rule {
        id: RuleId::UnicodeTagCharacter,
        id_str: "unicode-tag-character",
        severity: Severity::High,
        summary: "A Unicode tag character (U+E0000-U+E007F) in a text file, outside the three RGI emoji tag sequences (the flags of England, Scotland and Wales).",
        rationale: "Tag characters mirror ASCII but render as nothing: they carry instructions a model reads and a person never sees (ASCII smuggling). Their one ordinary use, the subdivision flags U+1F3F4 + gbeng, gbsct or gbwls + cancel tag, is not reported; any other run of tags, after U+1F3F4 or not, is.",
    },
    Rule {
        id: RuleId::UnicodeInvisible,
        id_str: "unicode-invisible",
        severity: Severity::Medium,
        summary: "An invisible character by its Unicode properties (Default_Ignorable_Code_Point, format characters, line and paragraph separators, bidirectional marks, Hangul fillers, U+FEFF past the start), a joiner outside an emoji or shaping sequence, or a variation selector that makes no standardized variation sequence with the character before it.",
        rationale: "Invisible characters hide text from a reviewer, split words so that filters miss them, and variation selectors, one per character, can encode a hidden message. Sequences Unicode defines are not reported: emoji ZWJ sequences, joiners in scripts that shape with them (Arabic, Indic), emoji and text presentation selectors, standardized variants.",
    },
    Rule {
        id: RuleId::UnicodeConfusable,
        id_str: "unicode-confusable",
        severity: Severity::Medium,
        summary: "A word in the skill's name, a declared name, a file name or a Markdown heading that mixes Latin, Greek and Cyrillic letters, is written wholly in Greek or Cyrillic letters that pass for Latin ones, or uses fullwidth or mathematical letters.",
        rationale: "A name or heading that looks like another is how a skill passes for a trusted one (`pаypal` with a Cyrillic a) or hides a word from a filter; the places a reader takes at a glance are where it matters. Words wholly in another script (a Russian heading) are not reported.",
    },
    Rule {
        id: RuleId::SecretPrivateKey,
        id_str: "secret-private-key",
        severity: Severity::High,
        summary: "A PEM or OpenSSH private key block.",
        rationale: "A private key in a skill is published to everyone who installs it; whoever holds it can sign, decrypt or log in as its owner.",
    },
    Rule {
        id: RuleId::SecretToken,
        id_str: "secret-token",
        severity: Severity::High,
        summary: "A token of a known shape: AWS access key id and secret, GitHub, GitLab, Slack, OpenAI or Anthropic key.",
        rationale: "A live token in a skill is readable by every user and every model that loads it; it must be revoked and removed, and the skill should read credentials from the environment instead.",
    },
    Rule {
        id: RuleId::SecretAssignment,
        id_str: "secret-assignment",
        severity: Severity::High,
        summary: "A high-entropy literal (20+ characters of the base64 or hex alphabet, letters and digits, mixed case or 32+ hex digits, 3.5+ bits per character) assigned to a name that says it is secret (API_KEY, client_secret, password, token).",
        rationale: "Secrets of no known shape are still assigned to names that say what they are; a generated-looking literal there is a credential published with the skill. References to the environment and placeholders are not literals and are not reported.",
    },
    Rule {
        id: RuleId::ContentBinary,
        id_str: "content-binary",
        severity: Severity::Medium,
        summary: "An executable or shared object (ELF, Mach-O, PE) outside scripts/.",
        rationale: "Compiled code cannot be reviewed, and outside scripts/ it is not a tool the skill offers: nothing explains why it is there.",
    },
    Rule {
        id: RuleId::ContentArchive,
        id_str: "content-archive",
        severity: Severity::Medium,
        summary: "An archive (zip, gzip, tar, 7z) inside a skill, by its magic bytes or its extension.",
        rationale: "An archive hides its contents from review and from this audit; a skill should ship its files unpacked. Zip-based documents (.docx, .xlsx, .jar) are zip archives too.",
    },
    Rule {
        id: RuleId::ContentLarge,
        id_str: "content-large",
        severity: Severity::Low,
        summary: "A file over 1 MiB.",
        rationale: "Large files are hard to review, cost context when read, and are where data or binaries get hidden.",
    },
    Rule {
        id: RuleId::ContentSymlink,
        id_str: "content-symlink",
        severity: Severity::Medium,
        summary: "A symbolic link inside a skill's directory.",
        rationale: "A link shows one file and serves another, can point out of the skill when it is copied or installed, and is refused by every archive and registry skillcat writes: a skill should hold the file itself.",
    },
    Rule {
        id: RuleId::ContentScriptNotTool,
        id_str: "content-script-not-tool",
        severity: Severity::Low,
        summary: "A file under scripts/ that is not offered as a tool, with the reason (not executable, no #! line, an interpreter not allowed, a bad declaration).",
        rationale: "A script that is never offered is either a helper (say so: a name starting with `_`, or a subfolder) or a tool that silently does not work; a reviewer should know which code a skill brings but does not expose.",
    },
    Rule {
        id: RuleId::HostHiddenInstruction,
        id_str: "host-hidden-instruction",
        severity: Severity::Medium,
        summary: "Heuristic: an HTML comment in SKILL.md that addresses the model (ignore earlier instructions, keep something from the user, send credentials or files).",
        rationale: "A rendered SKILL.md does not show HTML comments, but a model reads them: instructions there are aimed at the host, out of the user's sight.",
    },
    Rule {
        id: RuleId::HostIgnoreInstructions,
        id_str: "host-ignore-instructions",
        severity: Severity::Low,
        summary: "Heuristic: text in SKILL.md or references/ telling the model to ignore, disregard or forget earlier instructions.",
        rationale: "The classic prompt-injection phrase: a skill adds instructions, it has no reason to cancel the host's or the user's.",
    },
    Rule {
        id: RuleId::HostBase64Blob,
        id_str: "host-base64-blob",
        severity: Severity::Low,
        summary: "Heuristic: a base64 run of 200 characters or more in SKILL.md.",
        rationale: "A model can decode base64 that a reviewer cannot read at a glance: a long blob in the instructions can carry hidden text or a payload.",
    },
    Rule {
        id: RuleId::UndeclaredNetwork,
        id_str: "undeclared-network",
        severity: Severity::Medium,
        summary: "Heuristic: a script under scripts/ that uses the network (curl, wget, nc, urllib, requests, http.client, fetch(, sockets) while the skill declares no network.",
        rationale: "A skill declares the network (`skillcat.network` under `metadata:`, or `network:` in agents/skillcat.yaml) when its scripts need it; one that does not declare it but reaches out either will fail confined or is doing what it does not say.",
    },
    Rule {
        id: RuleId::UndeclaredWrite,
        id_str: "undeclared-write",
        severity: Severity::Medium,
        summary: "Heuristic: a script under scripts/ that writes, moves or deletes an absolute path or one under the home directory (outside /tmp and /dev) while the skill declares no fs_write.",
        rationale: "A confined run writes only its workspace and the paths the skill declares in `fs_write`; a script that writes elsewhere without the declaration either fails confined or reaches for files the skill does not say it touches.",
    },
];

/// One thing the audit found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The skill's name.
    pub skill: String,
    /// The file, relative to the skill's root, `/`-separated.
    pub path: String,
    /// The line, 1-based, when the finding has one.
    pub line: Option<u32>,
    /// The column in characters, 1-based, when the finding has one.
    pub column: Option<u32>,
    /// The rule that found it.
    pub rule: RuleId,
    /// The rule's severity.
    pub severity: Severity,
    /// What was found, why it matters and what to do. Never a whole secret, never a raw
    /// invisible or control character.
    pub message: String,
}

impl Finding {
    /// `path:line:col` (or `path:line`, or the path alone), the path made
    /// [`line_safe`](crate::text::line_safe).
    pub fn place(&self) -> String {
        let path = crate::text::line_safe(&self.path);
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{path}:{l}:{c}"),
            (Some(l), None) => format!("{path}:{l}"),
            _ => path.into_owned(),
        }
    }
}

/// A finding before it knows its skill and file: what a detector returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) rule: RuleId,
    pub(crate) line: Option<u32>,
    pub(crate) column: Option<u32>,
    pub(crate) message: String,
}

impl Hit {
    /// A hit at a 1-based line and column.
    pub(crate) fn at(rule: RuleId, (line, column): (u32, u32), message: String) -> Hit {
        Hit {
            rule,
            line: Some(line),
            column: Some(column),
            message,
        }
    }

    /// A hit of a whole file.
    pub(crate) fn file(rule: RuleId, message: String) -> Hit {
        Hit {
            rule,
            line: None,
            column: None,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_kebab_and_agree_with_serde() {
        for r in RULES {
            let json = serde_json::to_string(&r.id).unwrap();
            assert_eq!(json, format!("\"{}\"", r.id_str));
            assert_eq!(r.id.as_str(), r.id_str);
            assert!(r.summary.ends_with('.') && r.rationale.ends_with('.'));
        }
        assert!(Severity::Low < Severity::Medium && Severity::Medium < Severity::High);
        assert_eq!(serde_json::to_string(&Severity::High).unwrap(), "\"high\"");
    }
}
