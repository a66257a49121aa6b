//! The change feed's rows: what a write appends, in its own transaction.

use rusqlite::params;
use serde::Serialize;

/// What happened to a version, as the change feed says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeAction {
    /// A new version (or a signature added to one: its statement changed).
    Publish,
    /// The version was yanked.
    Yank,
    /// The version was unyanked.
    Unyank,
}

impl ChangeAction {
    /// `publish`, `yank`, `unyank`: as stored and as served.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeAction::Publish => "publish",
            ChangeAction::Yank => "yank",
            ChangeAction::Unyank => "unyank",
        }
    }
}

/// Now, in Unix seconds.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Appends a change to the feed, in the caller's transaction.
pub(crate) fn append(
    conn: &rusqlite::Connection,
    name: &str,
    version: &str,
    action: ChangeAction,
) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO change (at, name, version, action) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![now(), name, version, action.as_str()])?;
    Ok(())
}

pub(crate) fn action_of(text: &str) -> Option<ChangeAction> {
    match text {
        "publish" => Some(ChangeAction::Publish),
        "yank" => Some(ChangeAction::Yank),
        "unyank" => Some(ChangeAction::Unyank),
        _ => None,
    }
}
