//! The declarations of a skill's scripts: the sidecar `agents/skillcat.yaml`, or the frontmatter.
//!
//! ```text
//! my-skill/
//! ├── SKILL.md              name, description, metadata: only the specification's fields
//! ├── agents/skillcat.yaml  scripts: [...], fs_read, fs_write, network, timeout, trust
//! └── scripts/deploy.py
//! ```
//!
//! The specification calls any frontmatter key it does not define unexpected, so a typed
//! `scripts:` declaration in `SKILL.md` makes a skill invalid for every other validator. The
//! sidecar keeps them beside the document (as codex keeps per-skill settings in
//! `agents/openai.yaml`), in the same spelling as the frontmatter's top-level keys; the
//! frontmatter form stays readable. [`declarations`] is the one place the two are combined: a
//! key given in both is a fault, never a silent choice.
//!
//! The sidecar is read with the frontmatter's own YAML reader (every scalar text, bounded in
//! size and depth); a key it does not know is a fault.

use std::borrow::Cow;

use super::yaml;
use super::{Fault, FaultKind, Map, Value};

/// Where the sidecar is, relative to the skill's root.
pub const SIDECAR_PATH: &str = "agents/skillcat.yaml";

/// The keys a sidecar may hold: the capability keys and `scripts`, as the frontmatter spells
/// them at the top level.
pub const DECLARATION_KEYS: [&str; 6] = [
    "fs_read", "fs_write", "network", "timeout", "trust", "scripts",
];

/// The largest sidecar read, in bytes (a declaration of many scripts is a few kilobytes).
pub const SIDECAR_LIMIT: usize = 64 * 1024;

/// The prefix of a capability key under `metadata:` (`skillcat.network`).
const METADATA_PREFIX: &str = "skillcat.";

fn invalid(message: impl Into<String>) -> Fault {
    Fault::new(
        FaultKind::SidecarInvalid,
        format!("{SIDECAR_PATH}: {}", message.into()),
    )
}

/// Reads a sidecar from its raw bytes: UTF-8 (a BOM dropped, CRLF read as LF), YAML as strict
/// as the frontmatter's, a mapping (an empty file declares nothing) of the
/// [`DECLARATION_KEYS`] only. Every refusal is a [`FaultKind::SidecarInvalid`] fault.
pub fn parse_sidecar(bytes: &[u8]) -> Result<Map, Fault> {
    if bytes.len() > SIDECAR_LIMIT {
        return Err(invalid(format!(
            "too large ({} bytes; the limit is {SIDECAR_LIMIT} bytes)",
            bytes.len()
        )));
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        invalid(format!(
            "not valid UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    let text = text.replace("\r\n", "\n");
    let value = yaml::parse(&text).map_err(|e| {
        let fault = invalid(format!(
            "invalid YAML: line {}, column {}: {}",
            e.line, e.col, e.message
        ));
        // The frontmatter's advice for a `: ` inside a plain value holds here too.
        match super::frontmatter::quote_hint(&text, e.line, &e.message) {
            Some(hint) => fault.with_hint(hint),
            None => fault,
        }
    })?;
    let map = match value {
        None => Map::new(),
        Some(Value::Map(m)) => m,
        Some(_) => return Err(invalid("must be a YAML mapping")),
    };
    if let Some(k) = map.keys().find(|k| !DECLARATION_KEYS.contains(k)) {
        return Err(invalid(format!(
            "unknown key '{k}' (allowed: {})",
            DECLARATION_KEYS.join(", ")
        )));
    }
    Ok(map)
}

/// A skill's declarations, wherever they were written: read them through
/// [`frontmatter`](Declarations::frontmatter), which holds the document's frontmatter with the
/// sidecar's keys added at its top level (the spelling every reader of capabilities and of
/// `scripts:` already knows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declarations<'a> {
    view: Cow<'a, Map>,
    sidecar: bool,
}

impl Declarations<'_> {
    /// The frontmatter with the sidecar's keys at its top level (the frontmatter alone when the
    /// skill has no sidecar).
    pub fn frontmatter(&self) -> &Map {
        &self.view
    }

    /// The `scripts:` declaration, from either place.
    pub fn scripts(&self) -> Option<&Value> {
        self.view.get("scripts")
    }

    /// Whether a sidecar was read.
    pub fn has_sidecar(&self) -> bool {
        self.sidecar
    }

    /// The paths the `scripts:` declaration names (each `path` that is text, as written), in
    /// order, with the script's name; whatever else is wrong with the declaration is the
    /// script reader's to say.
    pub fn script_paths(&self) -> Vec<(String, String)> {
        let Some(items) = self.scripts().and_then(Value::as_list) else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(Value::as_map)
            .filter_map(|m| {
                let path = m.get("path")?.as_str()?.trim().to_string();
                let name = m
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim()
                    .to_string();
                Some((name, path))
            })
            .collect()
    }
}

/// Combines a frontmatter with its skill's sidecar (read by [`parse_sidecar`]), when it has
/// one. A key the sidecar holds that the frontmatter declares too — at its top level or under
/// `metadata:` as `skillcat.KEY` — is a [`FaultKind::DeclaredTwice`] fault naming it: which
/// one wins would be a guess.
pub fn declarations<'a>(
    frontmatter: &'a Map,
    sidecar: Option<&Map>,
) -> Result<Declarations<'a>, Fault> {
    let Some(sidecar) = sidecar else {
        return Ok(Declarations {
            view: Cow::Borrowed(frontmatter),
            sidecar: false,
        });
    };
    let metadata = frontmatter.get("metadata").and_then(Value::as_map);
    let twice: Vec<&str> = sidecar
        .keys()
        .filter(|k| {
            frontmatter.contains_key(k)
                || metadata.is_some_and(|m| m.contains_key(&format!("{METADATA_PREFIX}{k}")))
        })
        .collect();
    if !twice.is_empty() {
        return Err(Fault::new(
            FaultKind::DeclaredTwice,
            format!(
                "Declared both in SKILL.md and in {SIDECAR_PATH}: {}",
                twice.join(", ")
            ),
        )
        .with_hint(format!(
            "keep one: {SIDECAR_PATH} keeps SKILL.md valid for every validator"
        )));
    }
    let mut view = frontmatter.clone();
    for (k, v) in sidecar.iter() {
        view.insert(k.to_string(), v.clone());
    }
    Ok(Declarations {
        view: Cow::Owned(view),
        sidecar: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::parse_document;

    fn fm(yaml: &str) -> Map {
        parse_document(format!("---\nname: x\ndescription: d\n{yaml}---\n").as_bytes())
            .unwrap()
            .frontmatter
    }

    #[test]
    fn a_sidecar_is_read_like_the_frontmatter() {
        let m = parse_sidecar(
            b"\xEF\xBB\xBFnetwork: true\r\nscripts:\r\n  - name: a\r\n    path: scripts/a.sh\r\n",
        )
        .unwrap();
        assert_eq!(m.get("network"), Some(&Value::Text("true".into())));
        assert!(m.get("scripts").unwrap().as_list().is_some());
        // Empty, or comments only: nothing declared.
        assert!(parse_sidecar(b"").unwrap().is_empty());
        assert!(parse_sidecar(b"# nothing yet\n").unwrap().is_empty());
    }

    #[test]
    fn a_colon_in_a_plain_value_of_the_sidecar_says_to_quote_it() {
        let f =
            parse_sidecar(b"scripts:\n  - name: greet\n    description: Say: hello\n").unwrap_err();
        assert_eq!(f.kind(), FaultKind::SidecarInvalid);
        let hint = f.hint().expect("a hint");
        assert!(hint.contains("description: \"Say: hello\""), "{hint}");
    }

    #[test]
    fn a_sidecar_that_is_not_one_is_a_fault_naming_it() {
        for (bytes, says) in [
            (&b"shell: yes\n"[..], "unknown key 'shell'"),
            (b"- a\n", "must be a YAML mapping"),
            (b"scripts: [a\n", "invalid YAML: line"),
            (b"a: &x 1\nb: *x\n", "invalid YAML"),
            (b"timeout: 1\ntimeout: 2\n", "invalid YAML"),
            (b"network: \xff\n", "not valid UTF-8"),
        ] {
            let f = parse_sidecar(bytes).unwrap_err();
            assert_eq!(f.kind(), FaultKind::SidecarInvalid);
            assert_eq!(f.kind().as_str(), "sidecar-invalid");
            assert!(f.message().starts_with("agents/skillcat.yaml: "), "{f}");
            assert!(f.message().contains(says), "{f} lacks {says}");
        }
        let big = vec![b' '; SIDECAR_LIMIT + 1];
        assert!(
            parse_sidecar(&big)
                .unwrap_err()
                .message()
                .contains("too large")
        );
        // Nested too deep: the reader's own bound.
        let deep = "a:\n".to_string() + &"  - ".repeat(200) + "x\n";
        assert!(parse_sidecar(deep.as_bytes()).is_err());
    }

    #[test]
    fn the_sidecar_s_keys_join_the_frontmatter() {
        let front = fm("metadata:\n  skillcat.fs_read: data\n");
        let side =
            parse_sidecar(b"network: true\nscripts:\n  - name: a\n    path: s/a.sh\n").unwrap();
        let d = declarations(&front, Some(&side)).unwrap();
        assert!(d.has_sidecar());
        assert_eq!(
            d.frontmatter().get("network"),
            Some(&Value::Text("true".into()))
        );
        assert!(d.frontmatter().get("metadata").is_some());
        assert_eq!(d.script_paths(), [("a".to_string(), "s/a.sh".to_string())]);
        // Without a sidecar the frontmatter is read as it is.
        let d = declarations(&front, None).unwrap();
        assert!(!d.has_sidecar() && d.scripts().is_none());
    }

    #[test]
    fn a_key_declared_in_both_places_is_a_fault() {
        let side = parse_sidecar(b"network: true\ntimeout: 5\n").unwrap();
        for front in [
            fm("network: false\n"),
            fm("metadata:\n  skillcat.timeout: '9'\n"),
        ] {
            let f = declarations(&front, Some(&side)).unwrap_err();
            assert_eq!(f.kind(), FaultKind::DeclaredTwice);
            assert_eq!(f.kind().as_str(), "declared-twice");
            assert!(f.hint().unwrap().contains("keep one"), "{f:?}");
        }
        let f = declarations(&fm("network: 'false'\n"), Some(&side)).unwrap_err();
        assert!(f.message().ends_with(": network"), "{f}");
    }
}
