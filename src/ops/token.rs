//! `skillcat token …`: the publish tokens of a central registry's token file, made and listed.

use std::path::Path;

use serde::Serialize;

use crate::registry::tokens::{
    Right, TokenEntry, TokenError, TokenFileError, Tokens, create_in_file, format_utc,
};

/// A token as `token list` shows it: never the token itself.
#[derive(Debug, Serialize)]
pub struct TokenRow {
    /// Its name.
    pub name: String,
    /// The skill-name patterns it may write.
    pub scopes: Vec<String>,
    /// What it may do.
    pub can: Vec<&'static str>,
    /// When it was made, `YYYY-MM-DDTHH:MM:SSZ`.
    pub created: String,
    /// Whether it is revoked.
    pub revoked: bool,
}

impl TokenRow {
    /// The row of one entry of a token file.
    pub fn of(e: &TokenEntry) -> TokenRow {
        TokenRow {
            name: e.name().to_string(),
            scopes: e.scopes().to_vec(),
            can: e.rights().iter().map(|r| r.as_str()).collect(),
            created: format_utc(e.created()),
            revoked: e.is_revoked(),
        }
    }
}

/// Every token of the token file `path`.
pub fn list(path: &Path) -> Result<Vec<TokenRow>, TokenError> {
    Ok(Tokens::load(path)?
        .entries()
        .iter()
        .map(TokenRow::of)
        .collect())
}

/// Makes the token `name` in the token file `path` (created when missing), for `scopes`, with
/// the rights named in `can` (`publish`, `yank`, `audit`, `mcp`), made now. Returns the token,
/// the only time it exists in the clear, and its row. A right that is not one is refused.
pub fn create(
    path: &Path,
    name: &str,
    scopes: &[String],
    can: &[String],
) -> Result<(String, TokenRow), TokenFileError> {
    let rights = can
        .iter()
        .map(|r| r.parse::<Right>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(TokenFileError::Refused)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (token, entry) = create_in_file(path, name, scopes, &rights, now)?;
    Ok((token, TokenRow::of(&entry)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_made_is_listed_without_itself_and_a_bad_right_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("tokens.toml");
        let scopes = ["acme-*".to_string()];
        let can = ["publish".to_string(), "yank".to_string()];
        let (token, row) = create(&path, "ci", &scopes, &can).unwrap();
        assert_eq!(row.can, ["publish", "yank"]);
        let rows = list(&path).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].name.as_str(), rows[0].revoked), ("ci", false));
        let json = serde_json::to_string(&rows).unwrap();
        assert!(!json.contains(&token), "{json}");
        assert!(rows[0].created.ends_with('Z'), "{}", rows[0].created);
        let bad = ["fly".to_string()];
        assert!(matches!(
            create(&path, "other", &scopes, &bad),
            Err(TokenFileError::Refused(_))
        ));
        assert_eq!(list(&path).unwrap().len(), 1);
    }
}
