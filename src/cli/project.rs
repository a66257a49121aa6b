//! `skillcat trust project [DIR]`: the user trusts a project's own `skillcat.toml`.
//!
//! Until then a `skillcat.toml` found in the working directory is the project's word, not the
//! user's: it is narrowed to what the user's configuration allows (`Config::discover`). Trusting
//! records the project's canonical directory and the sha256 of its `skillcat.toml` in the
//! user's configuration (`~/.config/skillcat/skillcat.toml`, `trusted_projects`): the trust is
//! in that content, and a file changed since (by a script with a write grant, say) counts as
//! untrusted until trusted again ([`note_changed`] says so).

use std::io::Write;
use std::path::Path;

use skillcat::config::Config;

use super::{CliResult, ExitStatus, Globals};

/// The `trust` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TrustCommand {
    /// Let the project's own skillcat.toml apply in full (its ceiling, trusted sources,
    /// interpreters), recorded in your configuration (~/.config/skillcat/skillcat.toml).
    #[command(after_help = "Example: skillcat trust project .")]
    Project {
        /// The project's directory (default: the working directory).
        dir: Option<std::path::PathBuf>,
    },
    /// Trust a signing key for skill names matching the scopes: adds it to the keyring
    /// (--keyring FILE, else `keyring` of skillcat.toml, else ~/.config/skillcat/keyring.toml).
    #[command(after_help = "Example: skillcat trust add release.pub --scope 'acme-*'")]
    Add(super::keyring::AddArgs),
    /// List the keys of the keyring: id, scopes, revoked, comment.
    #[command(after_help = "Example: skillcat trust list --format json")]
    List(super::keyring::ListArgs),
    /// Revoke a key: signatures by it are refused from now on.
    #[command(after_help = "Example: skillcat trust revoke D4D182C65CFEEF6C")]
    Revoke(super::keyring::RevokeArgs),
}

/// Runs a `trust` subcommand.
pub fn run(cmd: TrustCommand, g: &Globals) -> CliResult {
    match cmd {
        TrustCommand::Project { dir } => trust_project(dir.as_deref(), g),
        TrustCommand::Add(a) => super::keyring::add(a, g),
        TrustCommand::List(a) => super::keyring::list(a, g),
        TrustCommand::Revoke(a) => super::keyring::revoke(a, g),
    }
}

fn trust_project(dir: Option<&Path>, g: &Globals) -> CliResult {
    let env = g.env.environment().map_err(super::context_error)?;
    let dir = dir.map_or_else(|| env.cwd.clone(), |d| env.cwd.join(d));
    let dir = match std::fs::canonicalize(&dir) {
        Ok(d) if d.is_dir() => d,
        Ok(d) => {
            return Err(usage!("{} is not a directory", d.display()));
        }
        Err(e) => {
            return Err(usage!("{}: {e}", dir.display()));
        }
    };
    let Some(file) = Config::user_file(&env) else {
        return Err(usage!(
            "no home directory ($HOME) to hold your configuration"
        ));
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(failed!("{}: {e}", file.display()));
        }
    };
    let current = match Config::parse(&text, Some(&file), &env) {
        Ok(c) => c,
        Err(e) => {
            return Err(failed!("{e}"));
        }
    };
    let project_file = dir.join(skillcat::config::FILE_NAME);
    let digest = match std::fs::read(&project_file) {
        Ok(bytes) => skillcat::digest::sha256_digest(&bytes),
        Err(e) => {
            return Err(usage!(
                "{}: {e} (a project is trusted by the content of its skillcat.toml)",
                project_file.display()
            ));
        }
    };
    if current
        .trusted_projects
        .iter()
        .any(|t| t.trusts(&dir, &digest))
    {
        out!("{} is already trusted ({})", dir.display(), file.display());
        return Ok(ExitStatus::Success);
    }
    let Some(shown) = dir.to_str() else {
        return Err(usage!("{} is not valid UTF-8", dir.display()));
    };
    let new_text = match with_trusted(&text, shown, &digest) {
        Ok(t) => t,
        Err(e) => {
            return Err(failed!("{}: {e}", file.display()));
        }
    };
    if let Err(e) = write_private(&file, &new_text) {
        return Err(failed!("{}: {e}", file.display()));
    }
    out!(
        "trusted {}: its skillcat.toml ({digest}) now applies in full, until it changes \
         (recorded in {})",
        dir.display(),
        file.display()
    );
    Ok(ExitStatus::Success)
}

/// Says on stderr that the project's `skillcat.toml` is not the file the user trusted (changed
/// since, or trusted before digests were recorded), so it counts as untrusted, and how to
/// trust it again.
pub(super) fn note_changed(config: &Config) {
    if let (true, Some(dir)) = (config.changed_project, &config.untrusted_project) {
        note!(
            "note: {}/skillcat.toml changed since you trusted it (or was trusted before skillcat \
             recorded the digest of its content): it counts only as far as your own \
             configuration allows until you review it and run `skillcat trust project {}` again",
            dir.display(),
            dir.display()
        );
    }
}

/// The configuration text with `dir` trusted with the file of digest `sha256` in
/// `trusted_projects` (an earlier entry for `dir` replaced). Without that key the line is put
/// first (top-level keys precede tables) and the rest kept as written; with it the file is
/// rewritten (comments are not kept).
fn with_trusted(text: &str, dir: &str, sha256: &str) -> Result<String, String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut entry = toml::Table::new();
    entry.insert("path".into(), toml::Value::String(dir.to_string()));
    entry.insert("sha256".into(), toml::Value::String(sha256.to_string()));
    match table.get_mut("trusted_projects") {
        None => Ok(format!(
            "trusted_projects = [{{ path = {}, sha256 = {} }}]\n{text}",
            quote(dir),
            quote(sha256)
        )),
        Some(toml::Value::Array(a)) => {
            a.retain(|v| match v {
                toml::Value::String(p) => p != dir,
                toml::Value::Table(t) => t.get("path").and_then(toml::Value::as_str) != Some(dir),
                _ => true,
            });
            a.push(toml::Value::Table(entry));
            toml::to_string(&table).map_err(|e| e.to_string())
        }
        Some(_) => Err("trusted_projects: not an array".into()),
    }
}

/// Writes the file (0600, its directory 0700 when created), replacing it in one step.
fn write_private(file: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = file
        .parent()
        .ok_or_else(|| std::io::Error::other("no directory"))?;
    super::create_private_dir(dir)?;
    let tmp = dir.join(format!(".skillcat.toml.{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, file)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}
