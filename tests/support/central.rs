//! A central registry for the tests: an empty registry in a temporary folder, its tokens, and
//! skill documents that carry a version.

use std::path::Path;

use super::bin::Skillcat;

/// A SKILL.md for `name` at `version`, `extra` in its body (to vary its content).
pub fn doc(name: &str, version: &str, extra: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Does {name} things for the central registry tests.\n\
         metadata:\n  version: \"{version}\"\n---\n# {name}\n\n{extra}\n"
    )
}

/// A temporary folder holding an empty registry, `r.db`.
pub fn registry_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    Skillcat::new(&["registry", "init", "r.db"])
        .cwd(tmp.path())
        .run()
        .code(0);
    tmp
}

/// `skillcat token create` into `dir/tokens.toml`; returns the token.
pub fn token(dir: &Path, name: &str, scope: &str, can: &str) -> String {
    let out = Skillcat::new(&[
        "token",
        "create",
        "--tokens",
        "tokens.toml",
        "--name",
        name,
        "--scope",
        scope,
        "--can",
        can,
    ])
    .cwd(dir)
    .run();
    out.code(0);
    out.out().trim().to_string()
}
