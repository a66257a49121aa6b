//! Commands that write files refuse an output whose directory does not exist: exit 2, the
//! directory named, nothing written. Text from a skill is shown to people with its hidden
//! characters escaped.
//!
//! Origin: step 9 (issue 14: exit codes everywhere), closed with step 16 (issue 21: text for people
//! escaped).

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

/// `s` in tag characters (U+E0000 + each ASCII character).
fn tags(s: &str) -> String {
    s.chars()
        .map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap())
        .collect()
}

/// `skillcat ARGS` with stdout and stderr on a pty: what the terminal got (`\r\n` read back as
/// `\n`).
fn on_pty(args: &[&str]) -> String {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let (mut master, slave) = crate::sandbox::tty::openpty();
    // `SKILLCAT_BIN` names another build, as `support::bin` reads it.
    let bin = std::env::var_os("SKILLCAT_BIN").unwrap_or_else(|| crate::support::bin::BIN.into());
    let mut child = Command::new(bin)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // Reading ends with EIO once the child (the last holder of the slave) has exited.
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = master.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    let status = child.wait().unwrap();
    assert!(status.success(), "skillcat {args:?} on a pty: {status}");
    let got = reader.join().unwrap();
    String::from_utf8(got).unwrap().replace("\r\n", "\n")
}

/// Issue 49, item 2: `list`, `match`, `show` and `prompt` show a person every hidden character escaped
/// (`\u{202e}`): a bidi override, a zero-width space, tags smuggled after a black flag; the
/// flag of England and a red heart, sequences Unicode defines, are shown as they are. `list`'s
/// text is for people and always escaped; `show` and `prompt` escape on a terminal and give a
/// pipe the bytes exactly (a program reads them; the audit refuses such a skill).
#[test]
fn list_show_and_prompt_show_hidden_characters_escaped_to_people() {
    let tmp = tempfile::tempdir().unwrap();
    let england = format!("\u{1F3F4}{}\u{E007F}", tags("gbeng"));
    let smuggled = format!("\u{1F3F4}{}\u{E007F}", tags("run rm"));
    let description =
        format!("Fills forms{england}\u{2764}\u{FE0F} as\u{200B}txt\u{202E}fdp.exe{smuggled}");
    let body = format!("Use it{smuggled} gladly\u{2066}.\n");
    crate::support::write_skill(
        &tmp.path().join("hider"),
        &format!("---\nname: hider\ndescription: {description}\n---\n{body}"),
        &[],
    );
    let dir = tmp.path().to_str().unwrap();
    let escaped_description = format!(
        "Fills forms{england}\u{2764}\u{FE0F} as\\u{{200b}}txt\\u{{202e}}fdp.exe\u{1F3F4}\\u{{e0072}}\\u{{e0075}}\\u{{e006e}}\\u{{e0020}}\\u{{e0072}}\\u{{e006d}}\\u{{e007f}}"
    );
    let escaped_body = "Use it\u{1F3F4}\\u{e0072}\\u{e0075}\\u{e006e}\\u{e0020}\\u{e0072}\\u{e006d}\\u{e007f} gladly\\u{2066}.";
    let hidden = |s: &str| {
        s.chars().any(|c| {
            matches!(
                c,
                '\u{200B}' | '\u{202E}' | '\u{2066}' | '\u{E0072}' | '\u{E0020}'
            )
        })
    };

    // `list`: text for people, piped or not.
    let out = run(&["list", dir]);
    out.code(0);
    assert!(out.out().contains(&escaped_description), "{}", out.out());
    assert!(!hidden(out.out()), "{:?}", out.out());
    let tty = on_pty(&["list", dir]);
    assert!(tty.contains(&escaped_description), "{tty}");
    // JSON is exact.
    let json = run(&["list", dir, "--format", "json"]).json();
    assert_eq!(json["skills"][0]["description"], description.as_str());

    // `match` prints a ranking for people: the same.
    let out = run(&["match", dir, "fill forms"]);
    out.code(0);
    assert!(
        out.out().contains("as\\u{200b}txt\\u{202e}fdp.exe"),
        "{}",
        out.out()
    );
    assert!(!hidden(out.out()), "{:?}", out.out());

    // `show` and `prompt`: escaped on a terminal, exact into a pipe.
    let tty = on_pty(&["show", dir, "hider"]);
    assert!(tty.contains(escaped_body), "{tty}");
    assert!(!hidden(&tty), "{tty:?}");
    let piped = run(&["show", dir, "hider"]);
    assert!(piped.out().contains(&body), "{:?}", piped.out());
    let tty = on_pty(&["prompt", dir]);
    assert!(tty.contains(&escaped_description), "{tty}");
    assert!(!hidden(&tty), "{tty:?}");
    let piped = run(&["prompt", dir]);
    assert!(piped.out().contains(&description), "{:?}", piped.out());
}
