//! `skillcat token create|list|revoke`: the publish tokens of a central registry.
//!
//! The token file (`--tokens FILE`) holds only hashes; `create` prints the new token once, on
//! stdout and alone on its line, so `skillcat token create … > ci.token` captures exactly it (and
//! `skillcat login URL < ci.token` keeps it for a publisher). These commands edit the server's
//! token file and send nothing, so a token kept by `login` has no part in them.
//! Every write goes through a temporary file renamed into place, mode 0600.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use skillcat::registry::tokens::{
    Right, TokenError, TokenFileError, Tokens, create_in_file, revoke_in_file,
};

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

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn create(a: CreateArgs) -> CliResult {
    super::output_dir_exists(&a.tokens)?;
    let rights = a
        .can
        .iter()
        .map(|r| r.parse::<Right>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage!("{e}"))?;
    let (token, entry) = create_in_file(&a.tokens, &a.name, &a.scopes, &rights, now())
        .map_err(|e| file_error(e, &a.tokens))?;
    let rights: Vec<&str> = entry.rights().iter().map(|r| r.as_str()).collect();
    err!(
        "Created token {} ({} on {}) in {}; it is printed once, below: keep it secret (a \
         publisher keeps it for the registry with `skillcat login URL < FILE`)",
        a.name,
        rights.join(", "),
        entry.scopes().join(" "),
        a.tokens.display()
    );
    out!("{token}");
    Ok(ExitStatus::Success)
}

fn list(a: ListArgs) -> CliResult {
    let tokens = Tokens::load(&a.tokens).map_err(|e| usage!("{e}"))?;
    match a.format {
        Format::Json => {
            let rows: Vec<_> = tokens
                .entries()
                .iter()
                .map(|e| {
                    json!({
                        "name": e.name(),
                        "scopes": e.scopes(),
                        "can": e.rights().iter().map(|r| r.as_str()).collect::<Vec<_>>(),
                        "created": skillcat::registry::tokens::format_utc(e.created()),
                        "revoked": e.is_revoked(),
                    })
                })
                .collect();
            out!("{}", serde_json::Value::Array(rows));
        }
        Format::Text => {
            if tokens.entries().is_empty() {
                err!("No tokens in {}", a.tokens.display());
            }
            for e in tokens.entries() {
                let rights: Vec<&str> = e.rights().iter().map(|r| r.as_str()).collect();
                out!(
                    "{}  {}  can {}  created {}{}",
                    e.name(),
                    e.scopes().join(" "),
                    rights.join(","),
                    skillcat::registry::tokens::format_utc(e.created()),
                    if e.is_revoked() { "  (revoked)" } else { "" }
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
