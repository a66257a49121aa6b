//! The read-side commands through the real binary: `validate`, `properties`, `prompt`, `list`,
//! `show`, `read` — output bytes, exit codes (0 ok, 1 faults, 2 usage/unreadable), hostile input.
//!
//! Every run goes through [`run`], which kills the child after a deadline (no test can hang) and
//! fails on any panic message on stderr.
//!
//! Origin: step 1 (issue 2: the read-side commands) and step 2 (issue 3: the distribution
//! commands).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as J;

use crate::support::bin::{BIN, DEADLINE, manifest_dir, run, run_in};

/// Writes `ROOT/<dir>/SKILL.md` with the given text and returns the directory.
fn write_skill(root: &Path, dir: &str, text: &str) -> PathBuf {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("SKILL.md"), text).unwrap();
    d
}

fn simple(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nBody of {name}.\n")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn canon(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

const SKILLS: [&str; 7] = [
    "api-style-review",
    "csv-cleaner",
    "git-release-notes",
    "incident-timeline",
    "log-search",
    "meeting-summary",
    "pdf-forms",
];

fn catalog_expected() -> Vec<J> {
    let text =
        std::fs::read_to_string(manifest_dir().join("fixtures/conformance/catalog.json")).unwrap();
    serde_json::from_str::<J>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn kinds(faults: &J) -> Vec<String> {
    faults
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Help
// ---------------------------------------------------------------------------------------------

#[test]
fn help_of_every_read_command_shows_an_example() {
    for cmd in ["validate", "properties", "prompt", "list", "show", "read"] {
        let o = run(&[cmd, "--help"]);
        o.code(0);
        let example = format!("Example: skillcat {cmd} ");
        assert!(
            o.out().lines().any(|l| l.starts_with(&example)),
            "{cmd} --help has no `{example}` line:\n{}",
            o.out()
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    let o = run(&["validate"]);
    o.code(2);
    assert!(o.stderr.contains("Usage"), "{}", o.stderr);
    run(&["prompt", "fixtures/skills", "--format", "yaml"]).code(2);
    run(&["prompt", "fixtures/skills", "--budget", "-3"]).code(2);
    run(&["read", "fixtures/skills", "pdf-forms"]).code(2);
}

// ---------------------------------------------------------------------------------------------
// validate
// ---------------------------------------------------------------------------------------------

#[test]
fn validate_directory_of_skills_reports_each_as_path_slash_root() {
    let o = run(&["validate", "fixtures/skills"]);
    o.code(0);
    let want: String = SKILLS
        .iter()
        .map(|n| format!("Valid skill: fixtures/skills/{n}\n"))
        .collect();
    assert_eq!(o.out(), want);
    assert_eq!(o.stderr, "");
}

#[test]
fn validate_text_matches_the_reference_wording() {
    let o = run(&[
        "validate",
        "fixtures/conformance/catalog/upper-case",
        "fixtures/skills/pdf-forms",
    ]);
    o.code(1);
    assert_eq!(o.out(), "Valid skill: fixtures/skills/pdf-forms\n");
    assert_eq!(
        o.stderr,
        "Validation failed for fixtures/conformance/catalog/upper-case:\n\
         \x20 - Skill name 'Upper-Case' must be lowercase\n\
         \x20 - Directory name 'upper-case' must match skill name 'Upper-Case'\n"
    );
}

#[test]
fn validate_conformance_catalog_gives_the_recorded_outcomes() {
    let o = run(&[
        "validate",
        "fixtures/conformance/catalog",
        "--format",
        "json",
    ]);
    o.code(1);
    let got = o.json();
    let got = got.as_array().expect("one JSON array");
    let want = catalog_expected();
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, w) in got.iter().zip(&want) {
        let root = w["root"].as_str().unwrap();
        assert_eq!(g["path"], format!("fixtures/conformance/catalog/{root}"));
        assert_eq!(g["valid"], w["valid"], "{root}");
        assert_eq!(g["name"], w["name"], "{root}");
        let want_kinds: Vec<String> = w["fault_kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        assert_eq!(kinds(&g["faults"]), want_kinds, "{root}");
    }
}

#[test]
fn validate_json_has_path_name_valid_and_faults() {
    let o = run(&[
        "validate",
        "fixtures/skills/pdf-forms",
        "fixtures/conformance/catalog/name-mismatch",
        "--format",
        "json",
    ]);
    o.code(1);
    let v = o.json();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    for r in arr {
        let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["faults", "name", "path", "valid"]);
    }
    assert_eq!(
        arr[0],
        serde_json::json!({"path": "fixtures/skills/pdf-forms", "name": "pdf-forms", "valid": true, "faults": []})
    );
    assert_eq!(
        arr[1],
        serde_json::json!({"path": "fixtures/conformance/catalog/name-mismatch", "name": "other-name", "valid": false,
            "faults": [{"kind": "name-mismatch", "message": "Directory name 'name-mismatch' must match skill name 'other-name'"}]})
    );
    // Text on stderr only in text mode.
    assert_eq!(o.stderr, "");
}

#[test]
fn validate_skill_md_argument_is_reported_as_its_directory() {
    let o = run(&[
        "validate",
        "fixtures/skills/pdf-forms/SKILL.md",
        "fixtures/conformance/catalog/lower-doc/skill.md",
    ]);
    o.code(0);
    assert_eq!(
        o.out(),
        "Valid skill: fixtures/skills/pdf-forms\nValid skill: fixtures/conformance/catalog/lower-doc\n"
    );
}

#[test]
fn validate_prints_paths_the_way_the_reference_does() {
    // The reference prints pathlib's spelling: no trailing slash, no `./`, `..` kept.
    let o = run(&[
        "validate",
        "fixtures/skills/pdf-forms/",
        "./fixtures/skills//log-search",
        "fixtures/../fixtures/skills/csv-cleaner",
    ]);
    o.code(0);
    assert_eq!(
        o.out(),
        "Valid skill: fixtures/skills/pdf-forms\nValid skill: fixtures/skills/log-search\n\
         Valid skill: fixtures/../fixtures/skills/csv-cleaner\n"
    );
    let o = run_in(
        manifest_dir().join("fixtures/skills/log-search"),
        &["validate", "../pdf-forms/"],
    );
    o.code(0);
    assert_eq!(o.out(), "Valid skill: ../pdf-forms\n");
}

#[test]
fn validate_dot_inside_a_skill_uses_the_canonical_directory_name() {
    let dir = manifest_dir().join("fixtures/skills/pdf-forms");
    let o = run_in(&dir, &["validate", "."]);
    o.code(0);
    assert_eq!(o.out(), "Valid skill: .\n");
    let o = run_in(&dir, &["validate", "SKILL.md"]);
    o.code(0);
    assert_eq!(o.out(), "Valid skill: .\n");

    // And the name check really uses the directory's name: `.` of a mismatching skill fails.
    let tmp = tempfile::tempdir().unwrap();
    let d = write_skill(tmp.path(), "other-dir", &simple("my-skill", "d"));
    let o = run_in(&d, &["validate", "."]);
    o.code(1);
    assert_eq!(
        o.stderr,
        "Validation failed for .:\n  - Directory name 'other-dir' must match skill name 'my-skill'\n"
    );
}

#[test]
fn validate_dot_on_a_directory_of_skills_names_each_root() {
    let o = run_in(manifest_dir().join("fixtures/skills"), &["validate", "."]);
    o.code(0);
    let want: String = SKILLS
        .iter()
        .map(|n| format!("Valid skill: {n}\n"))
        .collect();
    assert_eq!(o.out(), want);
}

#[test]
fn validate_allow_field_admits_an_extension_field() {
    let tmp = tempfile::tempdir().unwrap();
    let d = write_skill(
        tmp.path(),
        "ext",
        "---\nname: ext\ndescription: d\nx-team: core\n---\nBody\n",
    );
    let o = run(&["validate", s(&d)]);
    o.code(1);
    assert_eq!(
        o.stderr,
        format!(
            "Validation failed for {}:\n  - Unexpected fields in frontmatter: x-team. Only ['allowed-tools', \
             'compatibility', 'description', 'license', 'metadata', 'name'] are allowed.\n",
            s(&d)
        )
    );
    let o = run(&["validate", s(&d), "--allow-field", "x-team"]);
    o.code(0);
    assert_eq!(o.out(), format!("Valid skill: {}\n", s(&d)));
    // Admitting another field does not admit this one.
    let o = run(&[
        "validate",
        s(&d),
        "--allow-field",
        "x-other",
        "--format",
        "json",
    ]);
    o.code(1);
    assert_eq!(kinds(&o.json()[0]["faults"]), ["unexpected-fields"]);
}

#[test]
fn validate_reports_every_path_and_an_unreadable_one_makes_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let o = run(&[
        "validate",
        s(&missing),
        "fixtures/skills/pdf-forms",
        "fixtures/conformance/catalog/unclosed",
    ]);
    o.code(2);
    assert_eq!(o.out(), "Valid skill: fixtures/skills/pdf-forms\n");
    assert!(
        o.stderr
            .contains(&format!("  - Path does not exist: {}\n", s(&missing))),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .contains("  - SKILL.md frontmatter not properly closed with ---\n"),
        "{}",
        o.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_path_is_exit_2_path_does_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("absent");
    let ps = s(&p);
    let o = run(&["validate", ps]);
    o.code(2);
    assert_eq!(o.out(), "");
    assert_eq!(
        o.stderr,
        format!("Validation failed for {ps}:\n  - Path does not exist: {ps}\n")
    );
    let o = run(&["validate", ps, "--format", "json"]);
    o.code(2);
    assert_eq!(kinds(&o.json()[0]["faults"]), ["missing-path"]);
    for args in [
        vec!["properties", ps],
        vec!["prompt", ps],
        vec!["list", ps],
        vec!["show", ps, "x"],
        vec!["read", ps, "x", "SKILL.md"],
    ] {
        let o = run(&args);
        o.code(2);
        assert_eq!(o.out(), "", "{args:?}");
        assert!(
            o.stderr
                .contains(&format!("Error: Path does not exist: {ps}")),
            "{args:?}: {}",
            o.stderr
        );
    }
}

#[test]
fn regular_file_is_not_a_directory() {
    let o = run(&["validate", "Cargo.toml"]);
    o.code(1);
    assert_eq!(
        o.stderr,
        "Validation failed for Cargo.toml:\n  - Not a directory: Cargo.toml\n"
    );
    let o = run(&["validate", "Cargo.toml", "--format", "json"]);
    o.code(1);
    assert_eq!(kinds(&o.json()[0]["faults"]), ["not-a-directory"]);
    let o = run(&["properties", "Cargo.toml"]);
    o.code(1);
    assert_eq!(o.stderr, "Error: Not a directory: Cargo.toml\n");
    assert_eq!(o.out(), "");
}

#[test]
fn directory_with_no_skills_is_a_missing_document() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let notes = tmp.path().join("notes-only");
    std::fs::create_dir_all(notes.join("sub")).unwrap();
    std::fs::write(notes.join("README.txt"), "not a skill").unwrap();

    for dir in [&empty, &notes] {
        let d = s(dir);
        let o = run(&["validate", d]);
        o.code(1);
        assert_eq!(o.out(), "");
        assert!(
            o.stderr.contains(&format!(
                "Validation failed for {d}:\n  - Missing required file: SKILL.md\n"
            )),
            "{}",
            o.stderr
        );

        let o = run(&["properties", d]);
        o.code(1);
        assert_eq!(o.stderr, format!("Error: SKILL.md not found in {d}\n"));

        // The directory is a skill missing its document: a fault (exit 1), and nothing usable
        // to render but the empty block.
        let o = run(&["prompt", d]);
        o.code(1);
        assert_eq!(o.out(), "<available_skills>\n</available_skills>\n");
        assert_eq!(o.stderr, format!("Error: SKILL.md not found in {d}\n"));

        let o = run(&["list", d, "--format", "json"]);
        o.code(1);
        let v = o.json();
        assert_eq!(v["skills"], serde_json::json!([]));
        assert_eq!(v["faults"][0]["kind"], "missing-document");

        let o = run(&["show", d, "anything"]);
        o.code(1);
        assert_eq!(o.out(), "");
        assert!(o.stderr.contains("Error:"), "{}", o.stderr);
    }
    let o = run(&["validate", s(&empty), "--format", "json"]);
    assert_eq!(kinds(&o.json()[0]["faults"]), ["missing-document"]);
}

#[test]
fn skill_md_that_is_a_directory_is_a_missing_document() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("cat/odd");
    std::fs::create_dir_all(bad.join("SKILL.md")).unwrap();
    std::fs::write(bad.join("SKILL.md/notes.txt"), "x").unwrap();
    write_skill(
        &tmp.path().join("cat"),
        "good",
        &simple("good", "A good one."),
    );

    let o = run(&["validate", s(&bad), "--format", "json"]);
    o.code(1);
    assert_eq!(kinds(&o.json()[0]["faults"]), ["missing-document"]);
    let o = run(&["validate", s(&bad)]);
    o.code(1);
    assert_eq!(
        o.stderr,
        format!(
            "Validation failed for {}:\n  - Missing required file: SKILL.md\n",
            s(&bad)
        )
    );

    // Naming the directory called SKILL.md: it is a directory without a document.
    let inner = bad.join("SKILL.md");
    let o = run(&["validate", s(&inner)]);
    o.code(1);
    assert_eq!(
        o.stderr,
        format!(
            "Validation failed for {}:\n  - Missing required file: SKILL.md\n",
            s(&inner)
        )
    );

    let o = run(&["properties", s(&bad)]);
    o.code(1);
    assert_eq!(
        o.stderr,
        format!("Error: SKILL.md not found in {}\n", s(&bad))
    );

    // Inside a directory of skills, the good one is still reported.
    let cat = tmp.path().join("cat");
    let o = run(&["validate", s(&cat), "--format", "json"]);
    o.code(1);
    let v = o.json();
    let by_path: Vec<(String, bool)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["valid"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by_path,
        [
            (format!("{}/good", s(&cat)), true),
            (format!("{}/odd", s(&cat)), false)
        ]
    );
    assert_eq!(kinds(&v[1]["faults"]), ["missing-document"]);
}

#[test]
fn invalid_utf8_is_a_not_utf8_fault_naming_the_byte_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("bad-utf");
    std::fs::create_dir(&d).unwrap();
    let mut bytes = b"---\nname: bad-utf\ndescription: caf".to_vec();
    let offset = bytes.len();
    bytes.extend_from_slice(b"\xe9 au lait\n---\nBody\n");
    std::fs::write(d.join("SKILL.md"), &bytes).unwrap();

    let o = run(&["validate", s(&d), "--format", "json"]);
    o.code(1);
    let v = o.json();
    assert_eq!(kinds(&v[0]["faults"]), ["not-utf8"]);
    let msg = v[0]["faults"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains(&offset.to_string()) && msg.contains("offset"),
        "offset {offset} not named: {msg}"
    );

    let o = run(&["validate", s(&d)]);
    o.code(1);
    assert!(o.stderr.contains(&format!("  - {msg}\n")), "{}", o.stderr);

    let o = run(&["properties", s(&d)]);
    o.code(1);
    assert_eq!(o.stderr, format!("Error: {msg}\n"));
}

#[test]
fn ten_megabyte_document_is_refused_by_size() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("big");
    std::fs::create_dir(&d).unwrap();
    let mut text = b"---\nname: big\ndescription: A big one.\n---\n".to_vec();
    text.resize(10 * 1024 * 1024, b'a');
    let size = text.len();
    std::fs::write(d.join("SKILL.md"), &text).unwrap();

    let o = run(&["validate", s(&d), "--format", "json"]);
    o.code(1);
    let v = o.json();
    assert_eq!(kinds(&v[0]["faults"]), ["document-too-large"]);
    let msg = v[0]["faults"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains(&size.to_string()),
        "size {size} not named: {msg}"
    );
    assert!(
        msg.contains(&(1u64 << 20).to_string()),
        "limit not named: {msg}"
    );

    let o = run(&["properties", s(&d)]);
    o.code(1);
    assert_eq!(o.stderr, format!("Error: {msg}\n"));
    let o = run(&["list", tmp.path().to_str().unwrap()]);
    o.code(1);
    assert!(o.stderr.contains("[document-too-large]"), "{}", o.stderr);
}

#[test]
fn huge_sparse_document_is_refused_from_its_size_without_reading_it() {
    // 64 GiB on paper, a few bytes on disk: reading it whole would blow the deadline and memory,
    // and a read capped at the source's file limit would give a different fault.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("sparse");
    std::fs::create_dir(&d).unwrap();
    let f = std::fs::File::create(d.join("SKILL.md")).unwrap();
    std::io::Write::write_all(&mut &f, b"---\nname: sparse\ndescription: d\n---\n").unwrap();
    f.set_len(64 << 30).unwrap();
    drop(f);
    let start = Instant::now();
    let o = run(&["validate", s(&d), "--format", "json"]);
    o.code(1);
    let v = o.json();
    assert_eq!(kinds(&v[0]["faults"]), ["document-too-large"], "{v}");
    assert!(
        v[0]["faults"][0]["message"]
            .as_str()
            .unwrap()
            .contains(&(64u64 << 30).to_string())
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
}

#[cfg(unix)]
#[test]
fn symlink_loops_in_a_directory_of_skills_terminate() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("cat");
    let good = write_skill(&cat, "good", &simple("good", "Still found."));
    symlink("self", cat.join("self")).unwrap();
    symlink("b", cat.join("a")).unwrap();
    symlink("a", cat.join("b")).unwrap();
    symlink(".", cat.join("here")).unwrap();
    std::fs::create_dir_all(good.join("sub")).unwrap();
    symlink("..", good.join("sub/back")).unwrap();
    symlink(".", good.join("sub/here")).unwrap();

    let c = s(&cat);
    let o = run(&["validate", c]);
    o.code(0);
    assert_eq!(o.out(), format!("Valid skill: {c}/good\n"));
    let o = run(&["list", c, "--format", "json"]);
    o.code(0);
    let v = o.json();
    assert_eq!(v["skills"].as_array().unwrap().len(), 1);
    assert_eq!(v["skills"][0]["name"], "good");
    let o = run(&["prompt", c]);
    o.code(0);
    assert!(o.out().contains("<name>\ngood\n</name>"), "{}", o.out());
    let o = run(&["show", c, "good"]);
    o.code(0);
    assert_eq!(o.out(), "# good\n\nBody of good.\n");
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_skill_is_never_read() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").unwrap();
    let d = write_skill(tmp.path(), "leak", &simple("leak", "Leaks."));
    symlink(&secret, d.join("pw")).unwrap();
    let o = run(&["read", s(&d), "leak", "pw"]);
    o.code(1);
    assert_eq!(o.out(), "");
    assert!(!o.stderr.contains("TOP-SECRET"));
    assert!(o.stderr.contains("outside"), "{}", o.stderr);
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    for args in [
        &["validate", "fixtures/skills"][..],
        &["list", "fixtures/skills"],
        &["prompt", "fixtures/skills"],
        &["show", "fixtures/skills", "pdf-forms"],
        &["properties", "fixtures/skills/pdf-forms"],
    ] {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(manifest_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes away before anything is written
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                panic!("{args:?} hung on a closed stdout");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(
            !err.contains("panicked"),
            "{args:?} panicked on a closed stdout:\n{err}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// properties
// ---------------------------------------------------------------------------------------------

#[test]
fn properties_prints_reference_keys_in_order_with_indent_2() {
    let tmp = tempfile::tempdir().unwrap();
    let d = write_skill(
        tmp.path(),
        "p",
        "---\nmetadata:\n  b: \"2\"\n  a: one\nallowed-tools: Read Write\ncompatibility: needs git\n\
         license: MIT\ndescription: \"  Spaced out  \"\nname: p\n---\nBody\n",
    );
    let o = run(&["properties", s(&d)]);
    o.code(0);
    assert_eq!(
        o.out(),
        "{\n  \"name\": \"p\",\n  \"description\": \"Spaced out\",\n  \"license\": \"MIT\",\n  \
         \"compatibility\": \"needs git\",\n  \"allowed-tools\": \"Read Write\",\n  \"metadata\": {\n    \
         \"b\": \"2\",\n    \"a\": \"one\"\n  }\n}\n"
    );
    // The SKILL.md path names the same skill.
    let o2 = run(&["properties", s(&d.join("SKILL.md"))]);
    o2.code(0);
    assert_eq!(o2.stdout, o.stdout);
    // Only what is present: name and description alone.
    let o = run(&["properties", "fixtures/conformance/catalog/alpha"]);
    o.code(0);
    let keys: Vec<String> = o.json().as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["name", "description"]);
}

#[test]
fn properties_output_is_raw_utf8() {
    let o = run(&["properties", "fixtures/conformance/catalog/навык"]);
    o.code(0);
    assert!(o.out().contains("\"name\": \"навык\""), "{}", o.out());
    assert!(
        o.out().contains("Навык с кириллическим именем."),
        "{}",
        o.out()
    );
    assert!(!o.out().contains("\\u"), "escaped: {}", o.out());
}

#[test]
fn properties_reads_flow_collections_as_text() {
    let o = run(&["properties", "fixtures/conformance/catalog/flow-lists"]);
    o.code(0);
    let v = o.json();
    assert_eq!(v["allowed-tools"], serde_json::json!(["Read", "Write"]));
    assert_eq!(
        v["metadata"],
        serde_json::json!({"version": "2.0.0", "owner": "team"})
    );
}

#[test]
fn properties_errors_are_one_error_line_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let nodesc = write_skill(tmp.path(), "my-skill", "---\nname: my-skill\n---\nBody\n");
    for (path, want) in [
        (
            "fixtures/conformance/catalog/unclosed".to_string(),
            "Error: SKILL.md frontmatter not properly closed with ---\n".to_string(),
        ),
        (
            "fixtures/conformance/catalog/not-mapping".into(),
            "Error: SKILL.md frontmatter must be a YAML mapping\n".into(),
        ),
        (
            "fixtures/conformance/catalog/no-document".into(),
            "Error: SKILL.md not found in fixtures/conformance/catalog/no-document\n".into(),
        ),
        (
            s(&nodesc).to_string(),
            "Error: Missing required field in frontmatter: description\n".into(),
        ),
    ] {
        let o = run(&["properties", &path]);
        o.code(1);
        assert_eq!(o.out(), "", "{path}");
        assert_eq!(o.stderr, want, "{path}");
    }
    let o = run(&["properties", "fixtures/conformance/catalog/bad-yaml"]);
    o.code(1);
    assert!(
        o.stderr
            .starts_with("Error: Invalid YAML in frontmatter: line 3, column"),
        "{}",
        o.stderr
    );
}

#[test]
fn properties_of_many_skills_asks_for_one() {
    let o = run(&["properties", "fixtures/skills"]);
    o.code(2);
    assert_eq!(o.out(), "");
    assert!(o.stderr.contains("7 skills"), "{}", o.stderr);
}

// ---------------------------------------------------------------------------------------------
// prompt
// ---------------------------------------------------------------------------------------------

#[test]
fn prompt_xml_is_byte_identical_to_the_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_skill(
        tmp.path(),
        "alpha-one",
        "---\nname: alpha-one\ndescription: Use <foo> & \"q\" 'x' here.\n---\nA\n",
    );
    let b = write_skill(tmp.path(), "beta", &simple("beta", "Plain words."));
    // Input order, not sorted.
    let o = run(&["prompt", s(&b), s(&a)]);
    o.code(0);
    let want = format!(
        "<available_skills>\n<skill>\n<name>\nbeta\n</name>\n<description>\nPlain words.\n</description>\n\
         <location>\n{}/SKILL.md\n</location>\n</skill>\n<skill>\n<name>\nalpha-one\n</name>\n<description>\n\
         Use &lt;foo&gt; &amp; &quot;q&quot; &#x27;x&#x27; here.\n</description>\n<location>\n{}/SKILL.md\n\
         </location>\n</skill>\n</available_skills>\n",
        canon(&b),
        canon(&a)
    );
    assert_eq!(o.out(), want);
    assert_eq!(o.stderr, "");
    // The SKILL.md path and a relative path give the same block.
    let o2 = run_in(tmp.path(), &["prompt", "beta/SKILL.md", "./alpha-one/"]);
    o2.code(0);
    assert_eq!(o2.out(), want);
}

#[test]
fn prompt_budget_keeps_the_block_within_it_and_reports() {
    let full = run(&["prompt", "fixtures/skills"]);
    full.code(0);
    let full_len = full.out().chars().count();
    for budget in [2000usize, 600, 300, 10] {
        assert!(full_len > budget + 1, "the fixtures must overflow {budget}");
        let o = run(&["prompt", "fixtures/skills", "--budget", &budget.to_string()]);
        o.code(0);
        let text = o.out();
        assert!(text.ends_with('\n'), "{text:?}");
        assert!(
            text.chars().count() <= budget + 1,
            "{} chars over a budget of {budget}:\n{text}",
            text.chars().count()
        );
        assert!(
            o.stderr.contains(&format!("{budget}-character budget")),
            "no report for {budget}: {}",
            o.stderr
        );
        if budget >= 300 {
            assert!(
                text.starts_with("<available_skills>\n") && text.ends_with("</available_skills>\n"),
                "{text}"
            );
        }
        if budget >= 600 {
            assert!(text.contains("<name>\napi-style-review\n</name>"), "{text}");
        }
        // Every description shown says something: whole, or 100 characters at least.
        for d in text.split("<description>\n").skip(1) {
            let d = d.split("\n</description>").next().unwrap();
            if let Some(cut) = d.strip_suffix('…') {
                assert!(cut.chars().count() >= 100, "{budget}: {d:?}");
            }
        }
        // The report is a summary, not a line per skill.
        assert!(o.stderr.lines().count() <= 3, "{}", o.stderr);
    }
    // A budget that fits changes nothing and reports nothing.
    let o = run(&[
        "prompt",
        "fixtures/skills",
        "--budget",
        &full_len.to_string(),
    ]);
    o.code(0);
    assert_eq!(o.stdout, full.stdout);
    assert_eq!(o.stderr, "");
}

#[test]
fn prompt_markdown_and_json_name_every_skill() {
    let o = run(&["prompt", "fixtures/skills", "--format", "markdown"]);
    o.code(0);
    for n in SKILLS {
        assert!(
            o.out().contains(&format!("**{n}**")),
            "{n} missing:\n{}",
            o.out()
        );
    }
    assert!(!o.out().contains("<skill>"));

    let o = run(&["prompt", "fixtures/skills", "--format", "json"]);
    o.code(0);
    let v = o.json();
    let skills = v["skills"].as_array().expect("skills array");
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, SKILLS);
    let pdf = canon(&manifest_dir().join("fixtures/skills/pdf-forms"));
    assert_eq!(skills[6]["location"], format!("{pdf}/SKILL.md"));
    assert!(
        skills[6]["description"]
            .as_str()
            .unwrap()
            .starts_with("Inspect the fillable fields of a PDF form")
    );
}

#[test]
fn prompt_renders_the_usable_skills_and_reports_every_fault() {
    let o = run(&["prompt", "fixtures/conformance/catalog"]);
    o.code(1);
    // Every skill that parses and has a name and a description is offered, the invalid ones
    // too (as the catalog and the reference's to-prompt offer them)...
    let want = catalog_expected();
    let offered: Vec<&str> = want
        .iter()
        .filter(|c| c["loads"] == true)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in &offered {
        assert!(
            o.out().contains(&format!("<name>\n{name}\n</name>")),
            "{name}: {}",
            o.out()
        );
    }
    assert_eq!(o.out().matches("<skill>").count(), offered.len());
    // ...and each invalid one is reported.
    let mismatch = canon(&manifest_dir().join("fixtures/conformance/catalog/name-mismatch"));
    assert!(
        o.stderr.contains(&format!(
            "Offered all the same, though invalid: {mismatch}/SKILL.md\n  - "
        )),
        "{}",
        o.stderr
    );
    let unclosed = canon(&manifest_dir().join("fixtures/conformance/catalog/unclosed"));
    assert!(
        o.stderr.contains(&format!(
            "Error: {unclosed}/SKILL.md: SKILL.md frontmatter not properly closed with ---\n"
        )),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("not-mapping"), "{}", o.stderr);

    // One skill directory: the reference's words, no location.
    let tmp = tempfile::tempdir().unwrap();
    let d = write_skill(tmp.path(), "my-skill", "---\nname: my-skill\n---\nBody\n");
    let o = run(&["prompt", "fixtures/skills/pdf-forms", s(&d)]);
    o.code(1);
    assert_eq!(o.out().matches("<skill>").count(), 1, "{}", o.out());
    assert!(
        o.out().contains("<name>\npdf-forms\n</name>"),
        "{}",
        o.out()
    );
    assert_eq!(
        o.stderr,
        "Error: Missing required field in frontmatter: description\n"
    );
    // A SOURCE that cannot be read at all: exit 2, the others still rendered.
    let missing = tmp.path().join("absent");
    let o = run(&["prompt", "fixtures/skills/pdf-forms", s(&missing)]);
    o.code(2);
    assert!(
        o.out().contains("<name>\npdf-forms\n</name>"),
        "{}",
        o.out()
    );
    o.says(&["Error: Path does not exist"]);
}

// ---------------------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------------------

fn is_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

#[test]
fn list_shows_name_description_location_and_digest() {
    let o = run(&["list", "fixtures/skills"]);
    o.code(0);
    assert_eq!(o.stderr, "");
    let lines: Vec<&str> = o.out().lines().collect();
    assert_eq!(lines.len(), 2 * SKILLS.len(), "{}", o.out());
    for (i, n) in SKILLS.iter().enumerate() {
        let head = lines[2 * i];
        assert!(head.starts_with(&format!("{n}  ")), "{head}");
        let (location, digest) = lines[2 * i + 1].trim().split_once("  ").unwrap();
        assert_eq!(
            location,
            format!(
                "{}/SKILL.md",
                canon(&manifest_dir().join("fixtures/skills").join(n))
            )
        );
        assert!(is_digest(digest), "{digest}");
    }
    assert!(lines[12].starts_with(
        "pdf-forms  Inspect the fillable fields of a PDF form and prepare the values"
    ));
}

#[test]
fn list_conformance_catalog_matches_recorded_digests_and_faults() {
    let o = run(&["list", "fixtures/conformance/catalog", "--format", "json"]);
    o.code(1);
    let v = o.json();
    let want = catalog_expected();
    let skills = v["skills"].as_array().unwrap();
    let faults = v["faults"].as_array().unwrap();
    let loads: Vec<&J> = want.iter().filter(|c| c["loads"] == true).collect();
    let refused: Vec<&J> = want.iter().filter(|c| c["loads"] == false).collect();
    assert_eq!(skills.len(), loads.len());
    assert_eq!(faults.len(), refused.len());
    for (g, w) in skills.iter().zip(&loads) {
        assert_eq!(g["root"], w["root"]);
        assert_eq!(g["digest"], w["digest"], "{}", w["root"]);
        assert_eq!(g["valid"], w["valid"], "{}", w["root"]);
        assert!(
            g["location"].as_str().unwrap().ends_with("SKILL.md")
                || g["location"].as_str().unwrap().ends_with("skill.md")
        );
    }
    for (g, w) in faults.iter().zip(&refused) {
        assert_eq!(g["root"], w["root"]);
        assert_eq!(g["kind"], w["refusal"], "{}", w["root"]);
        // Each refused root is also on stderr, with its kind.
        assert!(
            o.stderr
                .contains(&format!("[{}]", w["refusal"].as_str().unwrap())),
            "{}",
            o.stderr
        );
        assert!(
            o.stderr
                .contains(&format!("/{}", w["root"].as_str().unwrap())),
            "{}",
            o.stderr
        );
    }
    // And every validation fault of a skill that is listed: one line each, on stderr.
    let invalid: usize = loads
        .iter()
        .map(|w| w["fault_kinds"].as_array().unwrap().len())
        .sum();
    assert!(invalid > 0);
    for w in loads.iter().filter(|w| w["valid"] == false) {
        for kind in w["fault_kinds"].as_array().unwrap() {
            let line = format!("/{}/SKILL.md: ", w["root"].as_str().unwrap());
            assert!(
                o.stderr
                    .lines()
                    .any(|l| l.contains(&line)
                        && l.ends_with(&format!("[{}]", kind.as_str().unwrap()))),
                "{}",
                o.stderr
            );
        }
    }
    assert_eq!(
        o.stderr.lines().count(),
        refused.len() + invalid,
        "{}",
        o.stderr
    );
}

#[test]
fn list_text_puts_every_fault_on_stderr_and_exits_1() {
    let o = run(&["list", "fixtures/conformance/catalog"]);
    o.code(1);
    // An invalid skill is listed on stdout; its faults go to stderr, as the README says.
    assert!(
        o.out().lines().any(|l| l.starts_with("Upper-Case  ")),
        "{}",
        o.out()
    );
    assert!(!o.out().contains("must be lowercase"), "{}", o.out());
    let upper = canon(&manifest_dir().join("fixtures/conformance/catalog/upper-case"));
    assert!(
        o.stderr.contains(&format!(
            "Error: {upper}/SKILL.md: Skill name 'Upper-Case' must be lowercase [name-not-lowercase]\n"
        )),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .contains("SKILL.md frontmatter not properly closed with --- [unclosed-frontmatter]"),
        "{}",
        o.stderr
    );
    // The broken roots are not listed as skills on stdout.
    assert!(
        !o.out().lines().any(|l| l.starts_with("unclosed")),
        "{}",
        o.out()
    );
}

// ---------------------------------------------------------------------------------------------
// show / read
// ---------------------------------------------------------------------------------------------

fn body_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let rest = text.strip_prefix("---\n").unwrap();
    let end = rest.find("\n---\n").unwrap();
    rest[end + 5..].trim().to_string()
}

#[test]
fn show_prints_the_body() {
    let want = format!(
        "{}\n",
        body_of(&manifest_dir().join("fixtures/skills/pdf-forms/SKILL.md"))
    );
    assert!(want.starts_with("# PDF forms\n"));
    let o = run(&["show", "fixtures/skills", "pdf-forms"]);
    o.code(0);
    assert_eq!(o.out(), want);
    assert_eq!(o.stderr, "");
    // `_` and `-` alike; a single skill directory is a source too.
    let o = run(&["show", "fixtures/skills", "pdf_forms"]);
    o.code(0);
    assert_eq!(o.out(), want);
    let o = run(&["show", "fixtures/skills/pdf-forms", "pdf-forms"]);
    o.code(0);
    assert_eq!(o.out(), want);
    // Another skill gives another body.
    let o = run(&["show", "fixtures/skills", "log_search"]);
    o.code(0);
    assert_ne!(o.out(), want);
    assert_eq!(
        o.out(),
        format!(
            "{}\n",
            body_of(&manifest_dir().join("fixtures/skills/log-search/SKILL.md"))
        )
    );
}

#[test]
fn show_unknown_name_exits_1_with_a_message() {
    let o = run(&["show", "fixtures/skills", "no-such-skill"]);
    o.code(1);
    assert_eq!(o.out(), "");
    assert!(
        o.stderr
            .contains("no skill named 'no-such-skill' in fixtures/skills"),
        "{}",
        o.stderr
    );
    let o = run(&["read", "fixtures/skills", "no-such-skill", "SKILL.md"]);
    o.code(1);
    assert_eq!(o.out(), "");
    assert!(
        o.stderr.contains("no skill named 'no-such-skill'"),
        "{}",
        o.stderr
    );
}

#[test]
fn show_of_a_broken_skill_says_why() {
    let o = run(&["show", "fixtures/conformance/catalog", "unclosed"]);
    o.code(1);
    assert_eq!(o.out(), "");
    assert!(
        o.stderr
            .contains("SKILL.md frontmatter not properly closed with --- [unclosed-frontmatter]"),
        "{}",
        o.stderr
    );
    // ... and only about that one.
    assert!(!o.stderr.contains("not-a-mapping"), "{}", o.stderr);
}

#[test]
fn read_prints_the_exact_bytes_of_a_file() {
    let path = "references/field-types.md";
    let want = std::fs::read(manifest_dir().join("fixtures/skills/pdf-forms").join(path)).unwrap();
    let o = run(&["read", "fixtures/skills", "pdf-forms", path]);
    o.code(0);
    assert_eq!(o.stdout, want);
    let o = run(&[
        "read",
        "fixtures/skills",
        "pdf_forms",
        "./references/../references/field-types.md",
    ]);
    o.code(0);
    assert_eq!(o.stdout, want);

    // Binary content, no trailing newline, not UTF-8: passed through untouched.
    let tmp = tempfile::tempdir().unwrap();
    let d = write_skill(tmp.path(), "bin", &simple("bin", "Binary."));
    std::fs::create_dir(d.join("assets")).unwrap();
    let blob: Vec<u8> = (0u8..=255)
        .chain([0xff, 0xfe, 0, b'\r', b'\n', 0xc3])
        .collect();
    std::fs::write(d.join("assets/blob.bin"), &blob).unwrap();
    let o = run(&["read", s(&d), "bin", "assets/blob.bin"]);
    o.code(0);
    assert_eq!(o.stdout, blob);
    // The document itself is a file of the skill.
    let o = run(&["read", s(&d), "bin", "SKILL.md"]);
    o.code(0);
    assert_eq!(o.out(), simple("bin", "Binary."));
}

#[test]
fn read_refuses_paths_that_leave_the_skill() {
    for p in [
        "../x",
        "/etc/passwd",
        "https://x",
        "references/../../log-search/SKILL.md",
        "../pdf-forms/SKILL.md",
        "file:///etc/passwd",
    ] {
        let o = run(&["read", "fixtures/skills", "pdf-forms", p]);
        o.code(1);
        assert_eq!(o.out(), "", "{p}");
        assert!(
            o.stderr.contains(&format!(
                "Error: '{p}' is not a file inside skill 'pdf-forms'"
            )),
            "{p}: {}",
            o.stderr
        );
    }
}

#[test]
fn read_of_a_missing_file_or_a_directory_exits_1() {
    for p in ["references/nope.md", "references", "scripts/"] {
        let o = run(&["read", "fixtures/skills", "pdf-forms", p]);
        o.code(1);
        assert_eq!(o.out(), "", "{p}");
        assert!(o.stderr.contains("has no file"), "{p}: {}", o.stderr);
    }
}
