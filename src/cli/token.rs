//! `skillcat token create|list|revoke`: the publish tokens of a central registry.
//!
//! The token file (`--tokens FILE`) holds only hashes; `create` prints the new token once, on
//! stdout and alone on its line, so `skillcat token create … > ci.token` captures exactly it (and
//! `skillcat login URL < ci.token` keeps it for a publisher). These commands edit the server's
//! token file and send nothing, so a token kept by `login` has no part in them.
//! Every write goes through a temporary file renamed into place, mode 0600.

use std::io::Write;
use std::path::{Path, PathBuf};

use skillcat::ops::token as ops;
use skillcat::registry::tokens::{TokenError, TokenFileError, revoke_in_file};

use super::{CliError, CliResult, ExitStatus, Format};

/// The `token` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Make a token for publishing (and yanking) skills whose names match the scopes; prints it
    /// once on stdout and stores only its sha256 in the token file (created when missing, 0600).
    #[command(
        after_help = "Example: skillcat token create --tokens tokens.toml --name ci --scope 'acme-*' --can publish,yank > ci.token"
    )]
    Create(CreateArgs),
    /// List the tokens: name, scopes, rights, creation time, revoked. Never the tokens.
    #[command(after_help = "Example: skillcat token list --tokens tokens.toml")]
    List(ListArgs),
    /// Revoke a token: the server refuses it (401) once it has reloaded the file.
    #[command(after_help = "Example: skillcat token revoke ci --tokens tokens.toml")]
    Revoke(RevokeArgs),
}

/// `token create` arguments.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// The token file.
    #[arg(long, value_name = "FILE")]
    tokens: PathBuf,
    /// The token's name, recorded in the audit log (letters, digits, `.`, `_`, `-`; unique).
    #[arg(long)]
    name: String,
    /// A skill-name pattern the token may write (`*` any run of characters, `?` one),
    /// repeatable; at least one.
    #[arg(long = "scope", value_name = "PATTERN", required = true)]
    scopes: Vec<String>,
    /// What the token may do: `publish`, `yank`, `audit` (read the audit log of the names its
    /// scopes match), `mcp` (use `skillcat mcp --http --tokens`: every skill that server
    /// serves, whatever the scopes), comma-separated or repeated.
    #[arg(
        long,
        value_name = "RIGHTS",
        value_delimiter = ',',
        default_value = "publish"
    )]
    can: Vec<String>,
}

/// `token list` arguments.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The token file.
    #[arg(long, value_name = "FILE")]
    tokens: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// `token revoke` arguments.
#[derive(Debug, clap::Args)]
pub struct RevokeArgs {
    /// The token's name.
    name: String,
    /// The token file.
    #[arg(long, value_name = "FILE")]
    tokens: PathBuf,
}

/// Runs a `token` subcommand.
pub fn run(cmd: TokenCommand) -> CliResult {
    match cmd {
        TokenCommand::Create(a) => create(a),
        TokenCommand::List(a) => list(a),
        TokenCommand::Revoke(a) => revoke(a),
    }
}

/// A token file that could not be changed: unreadable or a change refused is the caller's
/// (2), as is a name that does not exist for a revoke (1); a write that failed, 1.
fn file_error(e: TokenFileError, path: &Path) -> CliError {
    match e {
        TokenFileError::Refused(e @ TokenError::NotFound(_)) => {
            failed!("{e} in {}", path.display())
        }
        TokenFileError::Write { .. } => failed!("{e}"),
        e => usage!("{e}"),
    }
}

fn create(a: CreateArgs) -> CliResult {
    super::output_dir_exists(&a.tokens)?;
    let (token, row) =
        ops::create(&a.tokens, &a.name, &a.scopes, &a.can).map_err(|e| file_error(e, &a.tokens))?;
    err!(
        "Created token {} ({} on {}) in {}; it is printed once, below: keep it secret (a \
         publisher keeps it for the registry with `skillcat login URL < FILE`)",
        a.name,
        row.can.join(", "),
        row.scopes.join(" "),
        a.tokens.display()
    );
    out!("{token}");
    Ok(ExitStatus::Success)
}

fn list(a: ListArgs) -> CliResult {
    let rows = ops::list(&a.tokens).map_err(|e| usage!("{e}"))?;
    match a.format {
        Format::Json => out!("{}", serde_json::to_string(&rows).expect("json")),
        Format::Text => {
            if rows.is_empty() {
                err!("No tokens in {}", a.tokens.display());
            }
            for r in &rows {
                out!(
                    "{}  {}  can {}  created {}{}",
                    r.name,
                    r.scopes.join(" "),
                    r.can.join(","),
                    r.created,
                    if r.revoked { "  (revoked)" } else { "" }
                );
            }
        }
    }
    Ok(ExitStatus::Success)
}

fn revoke(a: RevokeArgs) -> CliResult {
    if revoke_in_file(&a.tokens, &a.name).map_err(|e| file_error(e, &a.tokens))? {
        err!(
            "Revoked token {} in {}: a server reading the file refuses it from its next reload",
            a.name,
            a.tokens.display()
        );
    } else {
        err!("Token {} was already revoked", a.name);
    }
    Ok(ExitStatus::Success)
}
