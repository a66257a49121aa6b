//! The change feed of a registry file, and copying versions between registries
//! ([`Registry::export`], [`Registry::import`]).
//!
//! Placeholders until step 30's SQLite change table lands: each says so instead of answering.

use super::{Registry, RegistryError, Result};
use crate::AuditEntry;
use crate::store::{ChangePage, Imported, VersionRecord};

impl Registry {
    fn not_yet(&self, what: &str) -> RegistryError {
        RegistryError::Unavailable {
            what: self.display().to_string(),
            reason: format!("{what} is not built yet for a registry file"),
        }
    }

    /// At most `limit` changes after `since`, in commit order.
    pub fn changes(&self, _since: i64, _limit: usize) -> Result<ChangePage> {
        Err(self.not_yet("the change feed"))
    }

    /// The `seq` of the last change (0 when none).
    pub fn head(&self) -> Result<i64> {
        Err(self.not_yet("the change feed"))
    }

    /// Everything kept of `name@version`, for a copy.
    pub fn export(&self, _name: &str, _version: &str) -> Result<Option<VersionRecord>> {
        Err(self.not_yet("export"))
    }

    /// Stores a version another registry holds, exactly.
    pub fn import(&mut self, _record: &VersionRecord) -> Result<Imported> {
        Err(self.not_yet("import"))
    }

    /// Appends audit rows another registry holds that this one lacks.
    pub fn import_audit(&mut self, _entries: &[AuditEntry]) -> Result<usize> {
        Err(self.not_yet("import"))
    }
}
