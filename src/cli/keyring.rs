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

use serde_json::json;
use skillcat::sign::{KeyEntry, Keyring, SignError};

use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// The first lines of a keyring `trust add` creates.
const HEADER: &str = "# skillcat keyring: trusted signing keys, each scoped to the skill names it may sign.\n\
     # Managed with `skillcat trust add|list|revoke`; `skillcat verify` reads it.\n";

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

/// The keyring file to use and its text (empty when it does not exist yet).
fn open(given: Option<&Path>, g: &Globals) -> Result<(PathBuf, String), CliError> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => default_keyring(g)?,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((path, String::new())),
        Err(e) => Err(usage!("cannot read the keyring {}: {e}", path.display())),
    }
}

/// Parses the keyring text of `path`; errors are printed.
fn parse(path: &Path, text: &str) -> Result<Keyring, CliError> {
    Keyring::from_toml_str(text).map_err(|e| {
        // Name the file, not `<string>`.
        let e = match e {
            SignError::InvalidKeyring { reason, .. } => SignError::InvalidKeyring {
                origin: path.display().to_string(),
                reason,
            },
            SignError::PublicKeyNotKeyring { key_id, .. } => SignError::PublicKeyNotKeyring {
                origin: path.display().to_string(),
                key_id,
            },
            other => other,
        };
        keyring_error(path, &e)
    })
}

/// `skillcat trust add KEY.pub --scope PATTERN… [--comment TEXT] [--keyring FILE]`
pub fn add(a: AddArgs, g: &Globals) -> CliResult {
    let public = match std::fs::read_to_string(&a.key) {
        Ok(t) => t,
        Err(e) => {
            return Err(usage!(
                "cannot read the public key {}: {e}",
                a.key.display()
            ));
        }
    };
    let mut entry = match KeyEntry::new(&public, a.scopes.iter().cloned()) {
        Ok(e) => e,
        Err(e) => {
            return Err(usage!("{}: {e}", a.key.display()));
        }
    };
    if let Some(c) = &a.comment {
        entry = entry.with_comment(c.clone());
    }
    let (path, text) = open(a.keyring.as_deref(), g)?;
    if a.keyring.is_some()
        && let Err(e) = super::output_dir_exists(&path)
    {
        return Err(e);
    }
    let mut ring = parse(&path, &text)?;
    let id = entry.id().to_string();
    let new_text = match ring.get(&id) {
        Some(existing) if existing.is_revoked() => {
            return Err(failed!(
                "key {id} is revoked in {}; a revoked key is not trusted again (make a new \
                 key with `skillcat keygen`)",
                path.display()
            ));
        }
        Some(_) => {
            let added = match ring.widen(&id, entry.scopes()) {
                Ok(added) => added,
                Err(e) => {
                    return Err(usage!("{e}"));
                }
            };
            if added.is_empty() {
                let scopes = ring.get(&id).map(|k| k.scopes().join(", "));
                out!(
                    "Key {id} is already trusted in {} for {}",
                    path.display(),
                    scopes.unwrap_or_default()
                );
                return Ok(ExitStatus::Success);
            }
            format!("{HEADER}\n{}", ring.to_toml())
        }
        None => {
            let mut t = if text.trim().is_empty() {
                HEADER.to_string()
            } else {
                text.clone()
            };
            if !t.ends_with('\n') {
                t.push('\n');
            }
            t.push('\n');
            t.push_str(&entry.to_toml());
            t
        }
    };
    // What is written must read back as the keyring meant.
    let back = parse(&path, &new_text)?;
    let Some(written) = back.get(&id) else {
        return Err(failed!("the keyring written would not hold key {id}"));
    };
    if let Err(e) = write_atomically(&path, &new_text, a.keyring.is_none(), None) {
        return Err(failed!("cannot write the keyring {}: {e}", path.display()));
    }
    out!(
        "Trusted key {id} for {} in {}",
        written.scopes().join(", "),
        path.display()
    );
    Ok(ExitStatus::Success)
}

/// `skillcat trust list [--keyring FILE] [--format json]`
pub fn list(a: ListArgs, g: &Globals) -> CliResult {
    let (path, text) = open(a.keyring.as_deref(), g)?;
    let ring = parse(&path, &text)?;
    match a.format {
        Format::Json => {
            let keys: Vec<_> = ring
                .keys()
                .iter()
                .map(|k| {
                    json!({"id": k.id(), "public_key": k.public_key(), "scopes": k.scopes(),
                           "revoked": k.is_revoked(), "comment": k.comment()})
                })
                .collect();
            out!(
                "{}",
                serde_json::to_string_pretty(&json!({"keyring": path, "keys": keys}))
                    .expect("json")
            );
        }
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
    let (path, text) = open(a.keyring.as_deref(), g)?;
    let mut ring = parse(&path, &text)?;
    match ring.revoke(&a.id) {
        Ok(false) => {
            out!("Key {} was already revoked in {}", a.id, path.display());
            Ok(ExitStatus::Success)
        }
        Ok(true) => {
            let new_text = format!("{HEADER}\n{}", ring.to_toml());
            if let Err(e) = write_atomically(&path, &new_text, false, None) {
                return Err(failed!("cannot write the keyring {}: {e}", path.display()));
            }
            out!(
                "Revoked key {} in {}: signatures by it are refused from now on",
                a.id.to_ascii_uppercase(),
                path.display()
            );
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(failed!("{e} ({})", path.display())),
    }
}

/// Writes `text` to `path` through a temporary file in the same folder renamed into place;
/// `create_dir` makes the folder first, private ([`create_private_dir`](super::create_private_dir):
/// the default keyring's `~/.config/skillcat`); `mode`, when
/// given, is the new file's permission bits whatever the old file had.
pub(super) fn write_atomically(
    path: &Path,
    text: &str,
    create_dir: bool,
    mode: Option<u32>,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if create_dir {
        super::create_private_dir(dir)?;
    }
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    // Readable by others as a keyring is (it holds public keys), or as the file was.
    let mode = mode.unwrap_or_else(|| {
        std::fs::metadata(path).map_or(0o644, |m| {
            std::os::unix::fs::PermissionsExt::mode(&m.permissions())
        })
    });
    tmp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
