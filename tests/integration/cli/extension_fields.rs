//! `[scripts] extension_fields = true` admits the capability keys at the top level of the
//! frontmatter in every command that validates a skill before acting on it — `validate`,
//! `pack`, `sign` and `publish` — as the catalog's own diagnostics do (issue 50: `validate`
//! never read it, so the documented way to declare typed scripts stayed invalid).

use std::path::Path;

use crate::support::bin::{Out, Skillcat};
use crate::support::write_skill;

/// A skill that declares its capabilities as top-level keys.
const TYPED: &str = "---\nname: typed\ndescription: Reads its data folder and calls an API.\n\
                     fs_read: [data]\nnetwork: true\nmetadata:\n  version: \"1.0.0\"\n---\n# typed\n";

/// `skillcat ARGS` in `dir`, with `dir` as `$HOME` (no user configuration).
#[track_caller]
fn sc(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args)
        .cwd(dir)
        .env("HOME", dir)
        .env_remove("SKILLCAT_TOKEN")
        .run()
}

#[test]
fn extension_fields_reach_validate_pack_sign_and_publish() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    write_skill(&t.join("typed"), TYPED, &[]);
    std::fs::write(t.join("on.toml"), "[scripts]\nextension_fields = true\n").unwrap();
    sc(t, &["keygen", "-o", "k", "--unencrypted"]).code(0);
    let url = "http://127.0.0.1:9/";
    // Without the setting the keys are unexpected fields everywhere.
    sc(t, &["validate", "typed"]).code(1);
    sc(t, &["pack", "typed", "-o", "off.tar.gz"]).code(1);
    sc(t, &["sign", "typed", "typed", "--key", "k.key"]).code(1);
    // With it, every one of them takes the skill.
    let on = ["--config", "on.toml"];
    let with = |args: &[&str]| sc(t, &[args, &on[..]].concat());
    let o = with(&["validate", "typed"]);
    o.code(0);
    assert!(o.out().contains("Valid skill"), "{}", o.out());
    with(&["validate", "typed", "--format", "json"]).code(0);
    with(&["pack", "typed", "-o", "typed.tar.gz"]).code(0);
    with(&["sign", "typed", "typed", "--key", "k.key"]).code(0);
    let o = with(&["publish", url, "typed", "--dry-run"]);
    o.code(0);
    assert!(
        o.out().starts_with("Would publish typed@1.0.0 from typed"),
        "{}",
        o.out()
    );
    // Without it, the signed skill is still not published.
    sc(t, &["publish", url, "typed", "--dry-run"]).code(1);
}
