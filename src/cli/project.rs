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
    use skillcat::config::ProjectTrust;
    let env = g.env.environment().map_err(super::context_error)?;
    match skillcat::config::trust_project(dir, &env) {
        Ok(ProjectTrust::Already { dir, file }) => {
            out!("{} is already trusted ({})", dir.display(), file.display());
        }
        Ok(ProjectTrust::Trusted { dir, file, digest }) => out!(
            "trusted {}: its skillcat.toml ({digest}) now applies in full, until it changes \
             (recorded in {})",
            dir.display(),
            file.display()
        ),
        Err(e) if e.is_usage() => return Err(usage!("{e}")),
        Err(e) => return Err(failed!("{e}")),
    }
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
