//! Tier 3: files a skill's body refers to, read through the skill's source. A path that climbs
//! out of the skill is refused with the reason
//! ([`path::resolve_reference`](crate::path::resolve_reference)), before any source is asked.

use bytes::Bytes;

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
