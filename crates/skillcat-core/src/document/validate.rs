//! Field rules: every fault at once, in the reference validator's order and wording.
//!
//! Order: unexpected fields; `name` (empty stops the name checks; otherwise length, lowercase,
//! edge hyphen, double hyphen, characters, directory — all that apply); `description`;
//! `compatibility`.

use std::collections::BTreeSet;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use super::{Fault, FaultKind, Map, Value};
use crate::network::{Network, PatternError};

/// The frontmatter keys the specification defines, sorted by code point.
pub const SPEC_FIELDS: [&str; 6] = [
    "allowed-tools",
    "compatibility",
    "description",
    "license",
    "metadata",
    "name",
];

/// Length limits, in Unicode scalar values. A client may tighten them; messages follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthLimits {
    /// Maximum `name` length (after NFKC). Default 64.
    pub name: usize,
    /// Maximum `description` length (as written). Default 1024.
    pub description: usize,
    /// Maximum `compatibility` length. Default 500.
    pub compatibility: usize,
}

impl Default for LengthLimits {
    fn default() -> Self {
        LengthLimits {
            name: 64,
            description: 1024,
            compatibility: 500,
        }
    }
}

/// How to validate: limits and the extension fields this client understands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Length limits.
    pub limits: LengthLimits,
    /// Extra frontmatter keys to accept besides the spec's (empty by default).
    pub allowed_fields: BTreeSet<String>,
}

impl ValidateOptions {
    /// Admits one more extension field.
    pub fn allow_field(mut self, name: impl Into<String>) -> Self {
        self.allowed_fields.insert(name.into());
        self
    }
}

/// The normalised form of a name: trimmed, then NFKC.
pub fn normalize_name(name: &str) -> String {
    let name = name.trim();
    // Every ASCII character is its own NFKC form: skip the normaliser for the common case.
    if name.is_ascii() {
        name.to_owned()
    } else {
        name.nfkc().collect()
    }
}

/// The key skill names are matched by: [`normalize_name`] (trimmed, NFKC), then `_` read as
/// `-`. The catalog looks names up by it; the HTTP index refuses an entry whose key, folded to
/// lower case, is another entry's.
///
/// ```
/// use skillcat_core::document::name_key;
/// assert_eq!(name_key("deploy_checker"), name_key("deploy-checker"));
/// ```
pub fn name_key(name: &str) -> String {
    normalize_name(name).replace('_', "-")
}

/// Python's `str.isalnum` for one character: General Category L* or N*.
/// (Not `char::is_alphanumeric`, which admits combining marks.)
fn is_letter_or_number(c: char) -> bool {
    use GeneralCategory::*;
    matches!(
        get_general_category(c),
        UppercaseLetter
            | LowercaseLetter
            | TitlecaseLetter
            | ModifierLetter
            | OtherLetter
            | DecimalNumber
            | LetterNumber
            | OtherNumber
    )
}

/// Every fault of a frontmatter, in order. `dir_name` is the skill directory's name as it is on
/// disk (the canonical directory); `None` skips the directory check (e.g. a lone skill in an
/// archive has no directory).
pub fn validate_frontmatter(
    fm: &Map,
    dir_name: Option<&str>,
    opts: &ValidateOptions,
) -> Vec<Fault> {
    let mut faults = Vec::new();

    let mut unexpected: Vec<&str> = fm
        .keys()
        .filter(|k| !SPEC_FIELDS.contains(k) && !opts.allowed_fields.contains(*k))
        .collect();
    if !unexpected.is_empty() {
        unexpected.sort_unstable();
        let mut allowed: Vec<&str> = SPEC_FIELDS.to_vec();
        allowed.extend(opts.allowed_fields.iter().map(String::as_str));
        allowed.sort_unstable();
        allowed.dedup();
        let allowed = allowed
            .iter()
            .map(|k| format!("'{k}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut fault = Fault::new(
            FaultKind::UnexpectedFields,
            format!(
                "Unexpected fields in frontmatter: {}. Only [{allowed}] are allowed.",
                unexpected.join(", ")
            ),
        );
        if unexpected.contains(&"version") {
            fault = fault.with_hint(version_hint(fm));
        }
        faults.push(fault);
    }

    match fm.get("name") {
        None => faults.push(Fault::new(
            FaultKind::MissingName,
            "Missing required field in frontmatter: name",
        )),
        Some(value) => validate_name(value, dir_name, opts.limits.name, &mut faults),
    }

    match fm.get("description") {
        None => faults.push(Fault::new(
            FaultKind::MissingDescription,
            "Missing required field in frontmatter: description",
        )),
        Some(Value::Text(d)) if !d.trim().is_empty() => {
            let n = d.chars().count();
            if n > opts.limits.description {
                faults.push(Fault::new(
                    FaultKind::DescriptionTooLong,
                    format!(
                        "Description exceeds {} character limit ({n} chars)",
                        opts.limits.description
                    ),
                ));
            }
        }
        Some(_) => faults.push(Fault::new(
            FaultKind::DescriptionEmpty,
            "Field 'description' must be a non-empty string",
        )),
    }

    match fm.get("compatibility") {
        None => {}
        Some(Value::Text(c)) => {
            let n = c.chars().count();
            if n > opts.limits.compatibility {
                faults.push(Fault::new(
                    FaultKind::CompatibilityTooLong,
                    format!(
                        "Compatibility exceeds {} character limit ({n} chars)",
                        opts.limits.compatibility
                    ),
                ));
            }
        }
        Some(_) => faults.push(Fault::new(
            FaultKind::CompatibilityNotText,
            "Field 'compatibility' must be a string",
        )),
    }

    // skillcat's own: a network declaration that is not one is read as no network; say so.
    if let Some(Err(e)) = network_declaration(fm) {
        faults.push(
            Fault::new(FaultKind::NetworkInvalid, format!("skillcat.network: {e}")).with_hint(
                "write `true`, `false` or host patterns separated by blanks \
                 (`api.github.com uploads.github.com:443 *.example.com`)",
            ),
        );
    }

    faults
}

/// The network a frontmatter declares (`skillcat.network` under `metadata:`, else a top-level
/// `network`), or why it is not a valid declaration; `None` when it declares none. One text
/// (`true`, `false`, host patterns separated by blanks) or a list of patterns. (Read here, below
/// the capability module, so validation can say what the capabilities read.)
pub fn network_declaration(fm: &Map) -> Option<Result<Network, PatternError>> {
    let v = fm
        .get("metadata")
        .and_then(Value::as_map)
        .and_then(|m| m.get("skillcat.network"))
        .or_else(|| fm.get("network"))?;
    Some(match v {
        Value::Text(t) => Network::parse(t),
        Value::List(items) => {
            let words: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            match words {
                Some(w) => Network::from_patterns(w.into_iter().map(str::trim)),
                None => Err(PatternError {
                    text: "network".into(),
                    why: "a list of host patterns holds something other than text".into(),
                }),
            }
        }
        _ => Err(PatternError {
            text: "network".into(),
            why: "`true`, `false` or host patterns separated by blanks".into(),
        }),
    })
}

/// What to do with a top-level `version:` (a fault: the specification has no such field): the
/// version goes under `metadata`, where `publish`, `sign` and registries read it.
fn version_hint(fm: &Map) -> String {
    // A version shown back only when it is plain: short, no quote, backslash or control.
    let plain = |v: &&str| {
        !v.is_empty()
            && v.chars().count() <= 64
            && !v.chars().any(|c| c == '"' || c == '\\' || c.is_control())
    };
    let held = fm
        .get("metadata")
        .and_then(Value::as_map)
        .and_then(|m| m.get("version"))
        .and_then(Value::as_str)
        .map(str::trim);
    if let Some(held) = held {
        let shown = Some(held).filter(plain).map(|v| format!(" ({v})"));
        return format!(
            "the version is metadata.version{}: remove the top-level `version`",
            shown.unwrap_or_default()
        );
    }
    let written = fm
        .get("version")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(plain)
        .unwrap_or("1.0.0");
    format!(
        "a skill's version goes under `metadata`, where publish, sign and registries read \
         it:\nmetadata:\n  version: \"{written}\""
    )
}

fn validate_name(value: &Value, dir_name: Option<&str>, limit: usize, faults: &mut Vec<Fault>) {
    let raw = match value {
        Value::Text(s) if !s.trim().is_empty() => s,
        _ => {
            faults.push(Fault::new(
                FaultKind::NameEmpty,
                "Field 'name' must be a non-empty string",
            ));
            return;
        }
    };
    let name = normalize_name(raw);
    let n = name.chars().count();
    if n > limit {
        faults.push(Fault::new(
            FaultKind::NameTooLong,
            format!("Skill name '{name}' exceeds {limit} character limit ({n} chars)"),
        ));
    }
    let lowercase = if name.is_ascii() {
        !name.bytes().any(|b| b.is_ascii_uppercase())
    } else {
        name == name.to_lowercase()
    };
    if !lowercase {
        faults.push(Fault::new(
            FaultKind::NameNotLowercase,
            format!("Skill name '{name}' must be lowercase"),
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        faults.push(Fault::new(
            FaultKind::NameEdgeHyphen,
            "Skill name cannot start or end with a hyphen",
        ));
    }
    if name.contains("--") {
        faults.push(Fault::new(
            FaultKind::NameDoubleHyphen,
            "Skill name cannot contain consecutive hyphens",
        ));
    }
    if !name.chars().all(|c| c == '-' || is_letter_or_number(c)) {
        faults.push(Fault::new(
            FaultKind::NameBadCharacter,
            format!(
                "Skill name '{name}' contains invalid characters. Only letters, digits, and hyphens are allowed."
            ),
        ));
    }
    if let Some(dir) = dir_name {
        let matches = if dir.is_ascii() {
            dir == name
        } else {
            dir.nfkc().eq(name.chars())
        };
        if !matches {
            faults.push(Fault::new(
                FaultKind::NameMismatch,
                format!("Directory name '{dir}' must match skill name '{name}'"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(pairs: &[(&str, &str)]) -> Map {
        let mut m = Map::new();
        for (k, v) in pairs {
            m.insert(k.to_string(), Value::Text(v.to_string()));
        }
        m
    }

    fn kinds(m: &Map, dir: Option<&str>) -> Vec<&'static str> {
        validate_frontmatter(m, dir, &ValidateOptions::default())
            .iter()
            .map(|f| f.kind().as_str())
            .collect()
    }

    /// A top-level `version` is the reference's unexpected-fields fault, word for word, with a
    /// hint of its own that points at `metadata.version`.
    #[test]
    fn a_top_level_version_is_a_fault_with_a_hint() {
        let m = fm(&[("name", "x"), ("description", "d"), ("version", "2.1.0")]);
        let f = validate_frontmatter(&m, None, &ValidateOptions::default());
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].message(),
            "Unexpected fields in frontmatter: version. Only ['allowed-tools', 'compatibility', \
             'description', 'license', 'metadata', 'name'] are allowed."
        );
        let hint = f[0].hint().unwrap();
        assert!(hint.ends_with("metadata:\n  version: \"2.1.0\""), "{hint}");
        // Another unexpected field has no hint.
        let m = fm(&[("name", "x"), ("description", "d"), ("zz", "1")]);
        let f = validate_frontmatter(&m, None, &ValidateOptions::default());
        assert_eq!(f[0].hint(), None);
        let json = serde_json::to_value(&f[0]).unwrap();
        assert!(json.get("hint").is_none(), "{json}");
    }

    #[test]
    fn name_character_class_is_general_category_not_is_alphanumeric() {
        // U+0902 (Mn) is alphabetic for Rust but not alnum for Python.
        for (name, ok) in [
            ("हिंदी", false),
            ("x\u{301}", false),
            ("技能", true),
            ("мой-навык", true),
            ("ß", true),
            ("σας", true),
            ("٣", true),
            ("rocket-🚀", false),
            ("a\u{200d}b", false),
            ("my skill", false),
        ] {
            let m = fm(&[("name", name), ("description", "d")]);
            let bad = kinds(&m, None).contains(&"name-bad-character");
            assert_eq!(bad, !ok, "{name:?}");
        }
    }

    #[test]
    fn nfkc_folding_and_lowercase() {
        let m = fm(&[("name", "x²"), ("description", "d")]);
        assert!(kinds(&m, Some("x2")).is_empty());
        let m = fm(&[("name", "ǅx"), ("description", "d")]);
        let f = validate_frontmatter(&m, None, &ValidateOptions::default());
        assert_eq!(f[0].message(), "Skill name 'Džx' must be lowercase");
        let m = fm(&[("name", "İstanbul"), ("description", "d")]);
        assert_eq!(kinds(&m, None), ["name-not-lowercase"]);
    }

    #[test]
    fn ascii_fast_paths_agree_with_unicode_rules() {
        // normalize_name and the lowercase check skip NFKC and full case mapping for ASCII:
        // every ASCII character must be its own NFKC form, and uppercase exactly when
        // lowercasing changes it.
        for b in 0u8..128 {
            let s = char::from(b).to_string();
            assert_eq!(s.nfkc().collect::<String>(), s, "NFKC of {b:#x}");
            assert_eq!(
                s.to_lowercase() != s,
                b.is_ascii_uppercase(),
                "lowercase of {b:#x}"
            );
        }
        // A non-ASCII directory name is still folded before it is compared.
        let m = fm(&[("name", "x2"), ("description", "d")]);
        assert!(kinds(&m, Some("x²")).is_empty());
        assert_eq!(kinds(&m, Some("x3")), ["name-mismatch"]);
    }

    #[test]
    fn tightened_limits_show_in_messages() {
        let opts = ValidateOptions {
            limits: LengthLimits {
                name: 3,
                description: 2,
                compatibility: 1,
            },
            ..Default::default()
        };
        let m = fm(&[
            ("name", "abcd"),
            ("description", "abc"),
            ("compatibility", "xy"),
        ]);
        let msgs: Vec<String> = validate_frontmatter(&m, None, &opts)
            .iter()
            .map(|f| f.message().to_string())
            .collect();
        assert_eq!(
            msgs,
            [
                "Skill name 'abcd' exceeds 3 character limit (4 chars)",
                "Description exceeds 2 character limit (3 chars)",
                "Compatibility exceeds 1 character limit (2 chars)",
            ]
        );
    }

    #[test]
    fn allowed_extension_fields() {
        let m = fm(&[
            ("name", "a"),
            ("description", "d"),
            ("timeout", "5"),
            ("zz", "1"),
        ]);
        let opts = ValidateOptions::default().allow_field("timeout");
        let f = validate_frontmatter(&m, None, &opts);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].message(),
            "Unexpected fields in frontmatter: zz. Only ['allowed-tools', 'compatibility', 'description', 'license', 'metadata', 'name', 'timeout'] are allowed."
        );
    }

    #[test]
    fn a_network_declaration_that_is_not_one_is_a_fault() {
        let with = |net: &str| {
            let mut m = fm(&[("name", "a"), ("description", "d")]);
            let mut meta = Map::new();
            meta.insert("skillcat.network".into(), Value::Text(net.into()));
            m.insert("metadata".into(), Value::Map(meta));
            validate_frontmatter(&m, None, &ValidateOptions::default())
        };
        for ok in ["true", "false", "api.github.com *.example.com:8443"] {
            assert!(with(ok).is_empty(), "{ok}");
        }
        let f = with("api.github.com 10.0.0.1");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind(), FaultKind::NetworkInvalid);
        assert_eq!(f[0].kind().as_str(), "network-invalid");
        assert!(
            f[0].message()
                .contains("`10.0.0.1` is not a host pattern: an IP address")
        );
        assert!(f[0].hint().is_some());
    }

    #[test]
    fn missing_everything() {
        assert_eq!(
            kinds(&Map::new(), None),
            ["missing-name", "missing-description"]
        );
    }
}
