//! Version order: semver precedence, computed in Rust (SQLite cannot sort `1.10.0` after
//! `1.9.0`, nor pre-releases before their release).

use std::cmp::Ordering;

use super::RegistryError;

/// The longest version a registry keeps, in characters (the schema's `CHECK` on
/// `version.version`, checked here first so that it is a refusal, not a failed write).
pub const MAX_VERSION_LEN: usize = 256;

/// Parses a version for publishing: trimmed, strict semver (`MAJOR.MINOR.PATCH`, optional
/// `-pre` and `+build`), at most [`MAX_VERSION_LEN`] characters. `name` is for the error.
pub fn parse_version(name: &str, text: &str) -> Result<semver::Version, RegistryError> {
    let trimmed = text.trim();
    let len = trimmed.chars().count();
    if len > MAX_VERSION_LEN {
        return Err(RegistryError::BadMetadata {
            name: name.to_string(),
            reason: format!(
                "version {:?} is {len} characters long; a registry keeps versions of at most \
                 {MAX_VERSION_LEN}",
                shorten(trimmed)
            ),
        });
    }
    semver::Version::parse(trimmed).map_err(|e| RegistryError::BadVersion {
        name: name.to_string(),
        version: text.to_string(),
        reason: e.to_string(),
    })
}

/// A version text for a message: at most 80 characters of it.
fn shorten(text: &str) -> String {
    if text.chars().count() <= 80 {
        text.to_string()
    } else {
        let head: String = text.chars().take(80).collect();
        format!("{head}…")
    }
}

/// Total order for listing: the one order of versions ([`skillcat_core::version::compare`]).
pub(super) use skillcat_core::version::compare;

/// The key of the highest version among `(key, version text)` pairs.
pub(super) fn highest<K: Copy>(versions: impl IntoIterator<Item = (K, String)>) -> Option<K> {
    versions
        .into_iter()
        .max_by(|a, b| compare(&a.1, &b.1))
        .map(|(key, _)| key)
}

/// The version among `existing` that has the same precedence as `v` but another text
/// (`1.0.0+a` against `1.0.0+b`): they would be one version to anyone comparing.
pub(super) fn same_precedence<'a>(
    v: &semver::Version,
    existing: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let text = v.to_string();
    existing.into_iter().find(|e| {
        *e != text
            && semver::Version::parse(e).is_ok_and(|x| x.cmp_precedence(v) == Ordering::Equal)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_by_semver_not_text() {
        let mut v = vec![
            "1.10.0",
            "1.9.0",
            "1.0.0-rc.1",
            "1.0.0",
            "0.9.0",
            "1.0.0-alpha",
            "2.0.0-beta.2",
            "2.0.0-beta.11",
        ];
        v.sort_by(|a, b| compare(a, b));
        assert_eq!(
            v,
            [
                "0.9.0",
                "1.0.0-alpha",
                "1.0.0-rc.1",
                "1.0.0",
                "1.9.0",
                "1.10.0",
                "2.0.0-beta.2",
                "2.0.0-beta.11"
            ]
        );
    }

    #[test]
    fn highest_picks_the_greatest_precedence() {
        let v = [
            (1, "1.9.0".to_string()),
            (2, "1.10.0".to_string()),
            (3, "1.10.0-rc.1".to_string()),
        ];
        assert_eq!(highest(v), Some(2));
        assert_eq!(highest(Vec::<(i32, String)>::new()), None);
    }

    #[test]
    fn build_metadata_twins_are_found() {
        let v = semver::Version::parse("1.0.0+b").unwrap();
        assert_eq!(same_precedence(&v, ["0.9.0", "1.0.0+a"]), Some("1.0.0+a"));
        assert_eq!(same_precedence(&v, ["1.0.0+b"]), None);
        assert_eq!(same_precedence(&v, ["1.0.0-rc.1"]), None);
    }

    #[test]
    fn parse_is_strict_and_trims() {
        assert_eq!(parse_version("x", " 1.2.3 ").unwrap().to_string(), "1.2.3");
        let long = format!("1.0.0-{}", "a".repeat(294));
        let at_limit = format!("1.0.0-{}", "a".repeat(250));
        assert_eq!(parse_version("x", &at_limit).unwrap().to_string(), at_limit);
        let err = parse_version("x", &long).unwrap_err();
        assert!(matches!(err, RegistryError::BadMetadata { .. }), "{err}");
        let err = err.to_string();
        assert!(
            err.contains("300 characters") && err.contains("256"),
            "{err}"
        );
        for bad in ["1.2", "v1.2.3", "01.2.3", "", "1.2.3.4", "latest"] {
            assert!(
                matches!(
                    parse_version("x", bad),
                    Err(RegistryError::BadVersion { .. })
                ),
                "{bad}"
            );
        }
    }
}
