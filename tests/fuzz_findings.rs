//! Regression tests for what fuzzing found, each named after its finding (the input is kept in
//! the target's corpus under fuzz/corpus/, which CI replays too).

#![cfg(feature = "install")]

use skillcat::install::Lockfile;

/// fuzz target `lockfile`: a large number in a field skillcat does not know was read to one
/// float and written back as text that read to another, so a read-write cycle changed a field
/// kept "as it was read" (serde_json parses floats exactly now: `float_roundtrip`).
#[test]
fn lockfile_float_in_an_unknown_field_round_trips() {
    let text = r#"{"version": 1, "skills": {}, "other": [1100000000000000000000000000, 0.1, 1e308, {"a": null}]}"#;
    let lock = Lockfile::parse(text, "skills-lock.json").unwrap();
    let written = lock.to_json();
    let again = Lockfile::parse(&written, "skills-lock.json").unwrap();
    assert_eq!(again, lock, "{written}");
    assert_eq!(again.to_json(), written);
}
