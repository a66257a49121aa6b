//! `skillcat login URL` and `skillcat logout URL`: a publish token kept per central registry,
//! as `cargo login` keeps one per registry.
//!
//! The token is read on stdin — without echo on a terminal, else the first line — never from the
//! command line, where other users could read it in the process list. It is kept in
//! `credentials.toml` beside the user's configuration (`~/.config/skillcat/`, `$HOME` deciding
//! where, as for the keyring and `skillcat.toml`), readable by its owner alone (0600), written
//! through a temporary file renamed into place. A registry is named by its URL normalised:
//! scheme, host, port (when not the scheme's default) and path, without a trailing `/`; so
//! `https://Skills.example.com:443/team/` and `https://skills.example.com/team` are one registry.
//! `publish` and `yank` use the kept token when given neither `--token-file` nor
//! `$SKILLCAT_TOKEN`. `logout` forgets it here; it stays valid on the server until it is revoked
//! there (`skillcat token revoke`).

use std::io::{BufRead, IsTerminal, Read, Write};

use skillcat::central::{self, Credentials};

use super::publish::said;
use super::{CliError, CliResult, ExitStatus};

/// The longest line read as a token on stdin.
const MAX_TOKEN_LINE: u64 = 64 * 1024;

/// `login --help`.
pub const LOGIN_ABOUT: &str = "Keep a publish token for a central registry, so that `publish` \
and `yank` to it need no --token-file.

The token is read on stdin: typed or pasted without echo on a terminal, else the first line of \
what is piped in (`skillcat login URL < alice.token`). It is never taken from the command line, \
where other users could read it.

It is kept in ~/.config/skillcat/credentials.toml (under $HOME), readable by you alone (mode \
0600), under the registry's URL normalised (scheme, host, port and path, without a trailing /). \
A token given with --token-file or $SKILLCAT_TOKEN still wins over the kept one. `skillcat \
logout URL` forgets it; revoking it on the server is `skillcat token revoke` there.";

/// `skillcat login` arguments.
#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// The registry's address (`https://skills.example.com/`), as given to `publish`.
    url: String,
}

/// `skillcat logout` arguments.
#[derive(Debug, clap::Args)]
pub struct LogoutArgs {
    /// The registry's address, as given to `login`.
    url: String,
}

/// The tokens `skillcat login` keeps, in `~/.config/skillcat/credentials.toml` (where the user's
/// configuration is).
pub(super) fn credentials() -> Result<Credentials, CliError> {
    let path = skillcat::context::Env::from_process()
        .credentials_file()
        .map_err(super::context_error)?
        .ok_or_else(|| {
            usage!("no home directory ($HOME) to keep the token in; pass --token-file FILE instead")
        })?;
    Credentials::load(&path).map_err(said)
}

/// The token on stdin: asked without echo on a terminal, else the first line piped in.
fn read_token(key: &str) -> Result<String, CliError> {
    let stdin = std::io::stdin();
    let text = if stdin.is_terminal() {
        rpassword::prompt_password(format!(
            "Token for {key} (as `skillcat token create` printed it; not shown): "
        ))
        .map_err(|e| usage!("cannot read the token: {e}"))?
    } else {
        let mut line = String::new();
        stdin
            .lock()
            .take(MAX_TOKEN_LINE)
            .read_line(&mut line)
            .map_err(|e| usage!("cannot read the token on stdin: {e}"))?;
        if line.trim().is_empty() {
            return Err(usage!(
                "no token on stdin: pipe it in (skillcat login {key} < alice.token) or run on \
                 a terminal to paste it"
            ));
        }
        line
    };
    central::checked_token(&text).map_err(said)
}

/// `skillcat login URL` (the token on stdin)
pub fn login(a: LoginArgs) -> CliResult {
    let url = central::registry_url(&a.url).map_err(said)?;
    let key = central::registry_key(&url);
    // Refuse a broken file before asking for anything.
    let mut store = credentials()?;
    let token = read_token(&key)?;
    let replaced = store.keep(&url, &token).map_err(said)?;
    store.save().map_err(said)?;
    out!(
        "{} the token for {key} in {} (readable by you alone); publish and yank to it use it \
         unless given --token-file or $SKILLCAT_TOKEN",
        if replaced { "Replaced" } else { "Kept" },
        store.path().display()
    );
    if url.scheme() == "http" && !central::is_loopback(&url) {
        note!(
            "warning: {key} is plain http: publish sends the token there only with \
             --allow-insecure (use https://)"
        );
    }
    Ok(ExitStatus::Success)
}

/// `skillcat logout URL`
pub fn logout(a: LogoutArgs) -> CliResult {
    let url = central::registry_url(&a.url).map_err(said)?;
    let key = central::registry_key(&url);
    let mut store = credentials()?;
    if !store.forget(&url) {
        out!("No token was kept for {key} (nothing to remove)");
        return Ok(ExitStatus::Success);
    }
    store.save().map_err(said)?;
    out!(
        "Removed the token kept for {key} from {}; it stays valid on the registry until it is \
         revoked there (skillcat token revoke NAME --tokens FILE)",
        store.path().display()
    );
    Ok(ExitStatus::Success)
}
