//! Tier 3: files a skill's body refers to, read through the skill's source. A path that climbs
//! out of the skill is refused with the reason
//! ([`path::resolve_reference`](crate::path::resolve_reference)), before any source is asked.

use bytes::Bytes;

use super::error::RuntimeError;
use crate::catalog::Entry;
use crate::path::join_path;

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The skill's name.
    pub skill: String,
    /// The path within the skill, resolved (`./a/../b.md` → `b.md`).
    pub path: String,
    /// The bytes.
    pub data: Bytes,
}

impl Resource {
    /// The contents as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.data).ok()
    }
}

/// A file of a catalog entry's skill, by a path as its body writes it (tier 3).
pub(super) async fn read_entry_resource(
    entry: &Entry,
    reference: &str,
) -> Result<Resource, RuntimeError> {
    let skill = entry.name().to_string();
    let path: String = crate::path::resolve_reference(reference)
        .map_err(|bad| RuntimeError::PathRejected {
            skill: skill.clone(),
            path: reference.to_string(),
            reason: bad.to_string(),
        })?
        .into();
    if !entry.skill().files().iter().any(|f| f.path == path) {
        return Err(RuntimeError::ResourceNotFound { skill, path });
    }
    match entry.source().read(&join_path(entry.root(), &path)).await {
        Ok(data) => Ok(Resource { skill, path, data }),
        Err(crate::Error::PathRejected { reason, .. }) => Err(RuntimeError::PathRejected {
            skill,
            path: reference.to_string(),
            reason,
        }),
        Err(e) => Err(RuntimeError::ResourceUnreadable {
            skill,
            path,
            reason: e.to_string(),
        }),
    }
}
