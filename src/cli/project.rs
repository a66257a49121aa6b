//! `skillcat trust project [DIR]`: the user trusts a project's own `skillcat.toml`.
//!
//! Until then a `skillcat.toml` found in the working directory is the project's word, not the
//! user's: it is narrowed to what the user's configuration allows (`Config::discover`). Trusting
//! records the project's canonical directory in the user's configuration
//! (`~/.config/skillcat/skillcat.toml`, `trusted_projects`).

use std::io::Write;
use std::path::Path;

use skillcat::config::{Config, Environment};

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
        TrustCommand::Project { dir } => trust_project(dir.as_deref()),
        TrustCommand::Add(a) => super::keyring::add(a, g),
        TrustCommand::List(a) => super::keyring::list(a, g),
        TrustCommand::Revoke(a) => super::keyring::revoke(a, g),
    }
}

fn trust_project(dir: Option<&Path>) -> CliResult {
    let env = match Environment::current() {
        Ok(e) => e,
        Err(e) => {
            return Err(usage!("cannot read the working directory: {e}"));
        }
    };
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
    if current.trusted_projects.contains(&dir) {
        out!("{} is already trusted ({})", dir.display(), file.display());
        return Ok(ExitStatus::Success);
    }
    let Some(shown) = dir.to_str() else {
        return Err(usage!("{} is not valid UTF-8", dir.display()));
    };
    let new_text = match with_trusted(&text, shown) {
        Ok(t) => t,
        Err(e) => {
            return Err(failed!("{}: {e}", file.display()));
        }
    };
    if let Err(e) = write_private(&file, &new_text) {
        return Err(failed!("{}: {e}", file.display()));
    }
    out!(
        "trusted {}: its skillcat.toml now applies in full (recorded in {})",
        dir.display(),
        file.display()
    );
    Ok(ExitStatus::Success)
}

/// The configuration text with `dir` added to `trusted_projects`. Without that key the line is
/// put first (top-level keys precede tables) and the rest kept as written; with it the file is
/// rewritten (comments are not kept).
fn with_trusted(text: &str, dir: &str) -> Result<String, String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let quoted = toml::Value::String(dir.to_string()).to_string();
    match table.get_mut("trusted_projects") {
        None => Ok(format!("trusted_projects = [{quoted}]\n{text}")),
        Some(toml::Value::Array(a)) => {
            a.push(toml::Value::String(dir.to_string()));
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
