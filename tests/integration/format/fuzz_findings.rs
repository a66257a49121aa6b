//! Regression tests for what fuzzing found, each named after its finding (the input is kept in
//! the target's corpus under fuzz/corpus/, which CI replays too).
//!
//! Origin: step 14 (issue 19: fuzz every parser an attacker can reach).

use skillcat::install::Lockfile;
use skillcat::script::argv::{check_skill_path, parse_shebang};

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

/// fuzz target `tool_declarations`: `#!/usr/bin/env -S tool/` named the empty interpreter (the
/// part after the last `/`), where a plain `#!/usr/bin/` gives no `#!` line at all; the script
/// was then skipped for an interpreter '' instead of as a script with no interpreter line.
#[test]
fn tool_declarations_env_shebang_ending_in_a_slash_names_no_interpreter() {
    for line in [
        "#!/usr/bin/env -S pynts\x08things./",
        "#!/usr/bin/env tools/",
        "#!/usr/bin/",
    ] {
        assert_eq!(parse_shebang(line), None, "{line:?}");
    }
    let python = parse_shebang("#!/usr/bin/env -S /opt/py/python3 -u").expect("a #! line");
    assert_eq!(
        (python.name.as_str(), python.args),
        ("python3", vec!["-u".to_string()])
    );
}

/// fuzz target `tool_declarations`: `./ - {name:}` was accepted and made canonical as
/// ` - {name:}`, which the same check refuses (a colon in the first component reads as a drive
/// letter or a URL scheme); the colon is now checked on the canonical form, so whatever the
/// check returns passes it again.
#[test]
fn tool_declarations_skill_path_canonical_form_passes_its_own_check() {
    for path in ["./ - {name:}", ".//c:x", "./http://h/x"] {
        assert!(check_skill_path(path).is_err(), "{path:?}");
    }
    for path in ["scripts/a.sh", "./scripts//a:b.sh", "a/./b:c"] {
        let canonical = check_skill_path(path).expect("a relative path");
        assert_eq!(check_skill_path(&canonical).ok(), Some(canonical.clone()));
    }
}
