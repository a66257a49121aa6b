//! `skillcat trust add|list|revoke`: the keyring of trusted signing keys, without writing TOML
//! by hand.
//!
//! The keyring is `--keyring FILE`, else the `keyring` of the configuration, else
//! `~/.config/skillcat/keyring.toml` (what `verify` reads when given no `--keyring`). `add`
//! appends a `[[key]]` table and keeps the rest of the file as written; `revoke` and an `add`
//! that widens a key's scopes rewrite the file from its entries (`#` comments are not kept, the
//! `comment` fields are). Every write goes through a temporary file renamed into place.

use std::io::Write;
use std::path::{Path, PathBuf};

use skillcat::ops::keyring::{self as ops, TrustError};
use skillcat::sign::{KeyringFile, SignError};

use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// `trust add` arguments.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The minisign public key (`KEY.pub`, as `skillcat keygen` or `minisign -G` writes it).
    pub key: PathBuf,
    /// A skill-name pattern the key may sign (`*` any run of characters, `?` one), repeatable;
    /// at least one.
    #[arg(long = "scope", value_name = "PATTERN", required = true)]
    pub scopes: Vec<String>,
    /// A note kept with the key (who holds it, what for).
    #[arg(long)]
    pub comment: Option<String>,
    /// The keyring file [default: `keyring` of the configuration, else
    /// ~/.config/skillcat/keyring.toml].
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
}

/// `trust list` arguments.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The keyring file [default: as for `trust add`].
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `trust revoke` arguments.
#[derive(Debug, clap::Args)]
pub struct RevokeArgs {
    /// The key id (16 hex digits, as `trust list` and `keygen` print it).
    pub id: String,
    /// The keyring file [default: as for `trust add`].
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
}

/// The keyring used when none is named: the configuration's `keyring`, else
/// `~/.config/skillcat/keyring.toml` (the context's). Errors are printed.
pub(super) fn default_keyring(g: &Globals) -> Result<PathBuf, CliError> {
    g.keyring_path(None)
        .map(|k| k.path)
        .map_err(super::context_error)
}

/// Why a keyring could not be loaded (exit 2), with what a keyring is and how to make one on
/// the next line when the file is something else.
pub(super) fn keyring_error(path: &Path, e: &SignError) -> CliError {
    match e {
        SignError::PublicKeyNotKeyring { .. } => usage!(
            "{e}\nTo trust this key, add it to a keyring: skillcat trust add {} --scope \
             'NAME-PATTERN' --keyring keyring.toml",
            path.display()
        ),
        SignError::InvalidKeyring { .. } => usage!(
            "{e}\nA keyring is written by `skillcat trust add KEY.pub --scope 'NAME-PATTERN'` \
             (see `skillcat trust --help`)"
        ),
        _ => usage!("{e}"),
    }
}

/// The keyring file named, else the default one, read (a file not made yet is empty).
fn open(given: Option<&Path>, g: &Globals) -> Result<KeyringFile, CliError> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => default_keyring(g)?,
    };
    KeyringFile::open(&path).map_err(|e| match e {
        SignError::Io { source, .. } => {
            usage!("cannot read the keyring {}: {source}", path.display())
        }
        e => keyring_error(&path, &e),
    })
}

/// `skillcat trust add KEY.pub --scope PATTERN… [--comment TEXT] [--keyring FILE]`
pub fn add(a: AddArgs, g: &Globals) -> CliResult {
    let entry =
        ops::key_entry(&a.key, &a.scopes, a.comment.as_deref()).map_err(|e| usage!("{e}"))?;
    let mut file = open(a.keyring.as_deref(), g)?;
    let path = file.path().to_path_buf();
    if a.keyring.is_some() {
        super::output_dir_exists(&path)?;
    }
    // The default keyring's folder is made, private, on the first key.
    let t = ops::trust(&mut file, entry, a.keyring.is_none()).map_err(|e| match e {
        TrustError::Revoked(id) => failed!(
            "key {id} is revoked in {}; a revoked key is not trusted again (make a new \
             key with `skillcat keygen`)",
            path.display()
        ),
        TrustError::Keyring(
            e @ (SignError::InvalidKeyring { .. } | SignError::PublicKeyNotKeyring { .. }),
        ) => keyring_error(&path, &e),
        TrustError::Keyring(e) => usage!("{e}"),
        TrustError::Write(e) => failed!("cannot write the keyring {}: {e}", path.display()),
    })?;
    let (id, scopes) = (&t.id, t.scopes.join(", "));
    if t.changed {
        out!("Trusted key {id} for {scopes} in {}", path.display());
    } else {
        out!(
            "Key {id} is already trusted in {} for {scopes}",
            path.display()
        );
    }
    Ok(ExitStatus::Success)
}

/// `skillcat trust list [--keyring FILE] [--format json]`
pub fn list(a: ListArgs, g: &Globals) -> CliResult {
    let file = open(a.keyring.as_deref(), g)?;
    let (path, ring) = (file.path(), file.keyring());
    match a.format {
        Format::Json => out!(
            "{}",
            serde_json::to_string_pretty(&ops::listing(&file)).expect("json")
        ),
        Format::Text => {
            if ring.keys().is_empty() {
                err!(
                    "{} holds no key (add one with `skillcat trust add KEY.pub --scope \
                     'NAME-PATTERN'`)",
                    path.display()
                );
            }
            for k in ring.keys() {
                let mut line = format!("{}  {}", k.id(), k.scopes().join(", "));
                if k.is_revoked() {
                    line.push_str("  [revoked]");
                }
                if let Some(c) = k.comment() {
                    line.push_str(&format!("  # {}", skillcat::prompt::escape_controls(c)));
                }
                out!("{line}");
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// `skillcat trust revoke ID [--keyring FILE]`
pub fn revoke(a: RevokeArgs, g: &Globals) -> CliResult {
    let mut file = open(a.keyring.as_deref(), g)?;
    let path = file.path().display().to_string();
    match file.revoke(&a.id) {
        Ok(false) => out!("Key {} was already revoked in {path}", a.id),
        Ok(true) => {
            file.save(false)
                .map_err(|e| failed!("cannot write the keyring {path}: {e}"))?;
            out!(
                "Revoked key {} in {path}: signatures by it are refused from now on",
                a.id.to_ascii_uppercase(),
            );
        }
        Err(e) => return Err(failed!("{e} ({path})")),
    }
    Ok(ExitStatus::Success)
}
