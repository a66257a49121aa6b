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
use std::path::PathBuf;

use skillcat::client::reqwest::Url;

use super::{CliError, CliResult, ExitStatus};

/// The file name of the kept tokens, beside the user's configuration.
const CREDENTIALS_FILE: &str = "credentials.toml";

/// The first lines of the credentials file.
const HEADER: &str = "# skillcat credentials: a publish token for each central registry, kept by \
`skillcat login URL`\n# and used by `skillcat publish` and `yank`. Readable by you alone; \
`skillcat logout URL` removes one.\n\n";

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

/// The name a registry's token is kept under: scheme, host, port when not the scheme's default,
/// and path, without a trailing `/` (no query, no fragment).
pub(super) fn registry_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let path = url.path().trim_end_matches('/');
    format!("{}://{host}{port}{path}", url.scheme())
}

/// `~/.config/skillcat/credentials.toml`, where the user's configuration is.
fn credentials_file() -> Result<PathBuf, CliError> {
    let env = skillcat::context::Env::from_process()
        .environment()
        .map_err(super::context_error)?;
    skillcat::config::Config::user_file(&env)
        .and_then(|f| f.parent().map(|d| d.join(CREDENTIALS_FILE)))
        .ok_or_else(|| {
            usage!("no home directory ($HOME) to keep the token in; pass --token-file FILE instead")
        })
}

/// The kept tokens: the file's TOML table (empty when there is no file yet).
fn load(path: &std::path::Path) -> Result<toml::Table, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(toml::Table::new()),
        Err(e) => return Err(usage!("cannot read {}: {e}", path.display())),
    };
    // A TOML error quotes the line it is on, which may hold a token: say where, not what.
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e
            .span()
            .map(|s| format!(" (line {})", text[..s.start].lines().count().max(1)))
            .unwrap_or_default();
        usage!(
            "{} is not a credentials file{at}; fix it, or remove it and `skillcat login` again",
            path.display()
        )
    })?;
    Ok(table)
}

/// The registries' tokens in `table`, when it has the shape `login` writes.
fn registries(table: &toml::Table) -> Option<&toml::Table> {
    table.get("registries").and_then(toml::Value::as_table)
}

/// The token `skillcat login` kept for the registry at `url`, and the file it is kept in.
pub(super) fn kept_token(url: &Url) -> Result<Option<(String, PathBuf)>, CliError> {
    let path = credentials_file()?;
    let table = load(&path)?;
    let key = registry_key(url);
    let token = registries(&table)
        .and_then(|r| r.get(&key))
        .and_then(|e| e.get("token"))
        .and_then(toml::Value::as_str)
        .map(str::to_string);
    Ok(token.map(|t| (t, path)))
}

fn save(path: &std::path::Path, table: &toml::Table) -> Result<(), CliError> {
    let text = format!(
        "{HEADER}{}",
        toml::to_string(table).map_err(|e| failed!("cannot write {}: {e}", path.display()))?
    );
    super::keyring::write_atomically(path, &text, true, Some(0o600))
        .map_err(|e| failed!("cannot write {}: {e}", path.display()))
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
    super::publish::checked_token(&text)
}

/// `skillcat login URL` (the token on stdin)
pub fn login(a: LoginArgs) -> CliResult {
    let url = super::publish::registry_url(&a.url)?;
    let key = registry_key(&url);
    let path = credentials_file()?;
    // Refuse a broken file before asking for anything.
    let mut table = load(&path)?;
    let token = read_token(&key)?;
    let registries = table
        .entry("registries")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(registries) = registries.as_table_mut() else {
        return Err(usage!(
            "{}: `registries` is not a table; fix it, or remove the file and log in again",
            path.display()
        ));
    };
    let mut entry = toml::Table::new();
    entry.insert("token".into(), toml::Value::String(token));
    let replaced = registries
        .insert(key.clone(), toml::Value::Table(entry))
        .is_some();
    save(&path, &table)?;
    out!(
        "{} the token for {key} in {} (readable by you alone); publish and yank to it use it \
         unless given --token-file or $SKILLCAT_TOKEN",
        if replaced { "Replaced" } else { "Kept" },
        path.display()
    );
    if url.scheme() == "http" && !super::publish::is_loopback(&url) {
        note!(
            "warning: {key} is plain http: publish sends the token there only with \
             --allow-insecure (use https://)"
        );
    }
    Ok(ExitStatus::Success)
}

/// `skillcat logout URL`
pub fn logout(a: LogoutArgs) -> CliResult {
    let url = super::publish::registry_url(&a.url)?;
    let key = registry_key(&url);
    let path = credentials_file()?;
    let mut table = load(&path)?;
    let removed = table
        .get_mut("registries")
        .and_then(toml::Value::as_table_mut)
        .and_then(|r| r.remove(&key))
        .is_some();
    if !removed {
        out!("No token was kept for {key} (nothing to remove)");
        return Ok(ExitStatus::Success);
    }
    if table
        .get("registries")
        .and_then(toml::Value::as_table)
        .is_some_and(toml::Table::is_empty)
    {
        table.remove("registries");
    }
    save(&path, &table)?;
    out!(
        "Removed the token kept for {key} from {}; it stays valid on the registry until it is \
         revoked there (skillcat token revoke NAME --tokens FILE)",
        path.display()
    );
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One registry, however its URL is spelled: case, the default port, a trailing `/`, a
    /// query or fragment; another port or path is another registry.
    #[test]
    fn a_registry_is_named_by_its_normalised_url() {
        let key = |u: &str| registry_key(&Url::parse(u).unwrap());
        for u in [
            "https://Skills.Example.com/team/",
            "https://skills.example.com:443/team",
            "HTTPS://skills.example.com/team?x=1#y",
        ] {
            assert_eq!(key(u), "https://skills.example.com/team", "{u}");
        }
        assert_eq!(key("http://127.0.0.1:8080/"), "http://127.0.0.1:8080");
        assert_eq!(key("http://[::1]:80/"), "http://[::1]");
        assert_ne!(key("https://h:8443/"), key("https://h/"));
        assert_ne!(key("https://h/a"), key("https://h/b"));
    }
}
