//! The order of skill versions (`metadata.version`, a registry's versions, an index's, an OCI
//! repository's version tags): one order wherever versions are sorted or the highest picked.

use std::cmp::Ordering;

/// Total order of versions: semver precedence (`1.10.0` after `1.9.0`, a pre-release before
/// its release), then the text (which orders build metadata); a version that is not semver
/// sorts before every one that is, and such versions by their text.
pub fn compare(a: &str, b: &str) -> Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(x), Ok(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Err(_), Ok(_)) => Ordering::Less,
        (Ok(_), Err(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_precedence_then_text_and_non_semver_first() {
        let mut v = vec![
            "1.10.0",
            "1.9.0",
            "1.0.0-rc.1",
            "1.0.0",
            "x",
            "1.0.0+b",
            "1.0.0+a",
        ];
        v.sort_by(|a, b| compare(a, b));
        assert_eq!(
            v,
            [
                "x",
                "1.0.0-rc.1",
                "1.0.0",
                "1.0.0+a",
                "1.0.0+b",
                "1.9.0",
                "1.10.0"
            ]
        );
    }
}
