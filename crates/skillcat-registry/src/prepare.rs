//! Publishing a skill read from any source into a registry: the one module that knows both.
//!
//! ```text
//! Source (dir, archive, HTTP, another registry)        Registry (SQLite)
//!   load(root) ── Skill ─┐                               ▲
//!   files(root) ─────────┼─▶ Draft::new ─ read each ─▶ Draft::finish ─▶ Prepared ─▶ commit
//!                        └─ validate, version, paths     hash, verify signature
//! ```
//!
//! The registry stores what it is handed and the sources read what they hold; neither imports
//! the other. Reading for a publish sits above both, as cargo keeps `ops/registry/publish`
//! above its `sources/registry`.

use bytes::Bytes;

use crate::source::{Source, SourceExt};
use crate::{Draft, Prepared, PublishOptions, Published, Registry, RegistryError};
use skillcat_core::error::Error;

/// Reads the skill at `root` of `source` and gets it ready to publish: loaded and checked
/// ([`Draft::new`]), every file read, hashed and the signature checked ([`Draft::finish`]).
/// No database is touched: a server prepares on its runtime and commits in `spawn_blocking`.
pub async fn prepare(
    source: &dyn Source,
    root: &str,
    opts: &PublishOptions<'_>,
) -> Result<Prepared, RegistryError> {
    let read_error = |e: Error| match e {
        Error::InvalidSkill { path, fault } => RegistryError::InvalidSkill {
            location: path,
            faults: vec![fault],
        },
        other => RegistryError::Read {
            location: source.location(root),
            source: Box::new(other),
        },
    };
    let skill = source.load(root).await.map_err(read_error)?;
    // `load` lists the files to find the document; list them again only if it did not keep them.
    let listed;
    let files = if skill.has_files() {
        skill.files()
    } else {
        listed = source.files(root).await.map_err(read_error)?;
        &listed[..]
    };
    let draft = Draft::new(&skill, files, opts)?;
    let limits = draft.limits();
    let mut contents: Vec<Bytes> = Vec::with_capacity(files.len());
    // The listed sizes were checked by `Draft::new`; the bytes read are counted here too, and
    // reading stops as soon as they pass the version's limit (a source whose files grew, or
    // that listed sizes it does not hold, costs at most one file past it).
    let mut read = 0u64;
    for path in draft.paths() {
        let bytes = source
            .read(&crate::path::join_path(root, path))
            .await
            .map_err(read_error)?;
        read = read.saturating_add(bytes.len() as u64);
        limits.check_bytes(draft.name(), draft.version(), read, true)?;
        contents.push(bytes);
    }
    draft.finish(contents, opts)
}

impl Registry {
    /// Publishes the skill at `root` of `source`: [`prepare`], then [`commit`](Self::commit).
    ///
    /// The commit is a short blocking SQLite transaction run on the calling thread; a server
    /// that must not block its runtime calls [`prepare`] itself and runs `commit` in
    /// `spawn_blocking`.
    pub async fn publish(
        &mut self,
        source: &dyn Source,
        root: &str,
        opts: &PublishOptions<'_>,
    ) -> Result<Published, RegistryError> {
        let prepared = prepare(source, root, opts).await?;
        self.commit(&prepared)
    }
}
