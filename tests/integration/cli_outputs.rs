//! Commands that write files refuse an output whose directory does not exist: exit 2, the
//! directory named, nothing written.

use crate::support::bin::run;

#[test]
fn a_missing_output_directory_is_exit_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let key = tmp.path().join("k");
    run(&["keygen", "-o", key.to_str().unwrap(), "--unencrypted"]).code(0);
    let key_file = format!("{}.key", key.display());
    let skills = crate::support::bin::manifest_dir().join("fixtures/skills");
    let skill = skills.join("pdf-forms");
    let cases: Vec<Vec<String>> = vec![
        vec![
            "pack".into(),
            skill.display().to_string(),
            "-o".into(),
            missing.join("x.tar.gz").display().to_string(),
        ],
        vec![
            "keygen".into(),
            "-o".into(),
            missing.join("k").display().to_string(),
            "--unencrypted".into(),
        ],
        vec![
            "sign".into(),
            skills.display().to_string(),
            "pdf-forms".into(),
            "--key".into(),
            key_file.clone(),
            "-o".into(),
            missing.join("s.minisig").display().to_string(),
        ],
        vec!["man".into(), missing.join("man").display().to_string()],
    ];
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args).code(2).says(&["does not exist", "missing"]);
        assert!(!missing.exists(), "{args:?} created {}", missing.display());
    }
}
