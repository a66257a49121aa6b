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

/// One source opened for a publish of many skills: as the user named it, the store, and the
/// skill roots it offers.
pub struct PublishSource {
    /// The SOURCE as given (signatures beside it are looked for by this name).
    pub spec: String,
    /// The store.
    pub src: std::sync::Arc<dyn Source>,
    /// The skill roots it offers.
    pub roots: Vec<String>,
}

/// What a publish of many skills is asked: the same for each skill.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchOptions<'a> {
    /// The version to publish as (one skill only); else the one the source keeps, else the
    /// skill's `metadata.version`.
    pub version: Option<&'a str>,
    /// The signature of the one skill published; else the one its source keeps, else the file
    /// beside the source.
    pub signature: Option<&'a str>,
    /// Signatures must verify against this keyring.
    pub keyring: Option<&'a crate::sign::Keyring>,
    /// What one version may hold.
    pub limits: crate::VersionLimits,
}

/// Why a publish of many skills is refused before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// The sources hold no skill.
    #[error("no skill found in {0}")]
    Nothing(String),
    /// One signature was given for several skills.
    #[error("a signature names one skill; the sources hold {0}")]
    SignatureForMany(usize),
    /// One version was given for several skills.
    #[error("a version names one skill; the sources hold {total}")]
    VersionForMany {
        /// How many skills the sources hold.
        total: usize,
        /// The version given.
        version: String,
    },
}

/// Why one skill of a batch was not published.
#[derive(Debug, thiserror::Error)]
pub enum SkillFailure {
    /// The registry refused it, or could not store it.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// What its source keeps about it (its version, its signatures) could not be read.
    #[error(transparent)]
    Unreadable(#[from] Error),
    /// The signature file beside the source could not be read.
    #[error(transparent)]
    Signature(#[from] crate::sign::source_signatures::ReadSignatureError),
}

/// How one skill of a batch went.
#[derive(Debug)]
pub struct SkillOutcome {
    /// The SOURCE it came from, as given.
    pub spec: String,
    /// Its root in that source.
    pub root: String,
    /// Where it is, for people.
    pub location: String,
    /// Published (or unchanged), or why not.
    pub result: Result<Published, SkillFailure>,
}

/// What a batch says as it goes: a skill is about to be read, or is done.
pub enum BatchEvent<'a> {
    /// The skill at this location is next.
    Start(&'a str),
    /// A skill is done.
    Done(&'a SkillOutcome),
}

/// How many skills `sources` hold, once checked against `opts`: a signature or a version given
/// names exactly one skill, and an empty batch is refused.
pub fn check_batch(
    sources: &[PublishSource],
    opts: &BatchOptions<'_>,
) -> Result<usize, BatchError> {
    let total: usize = sources.iter().map(|o| o.roots.len()).sum();
    if total == 0 {
        let specs: Vec<&str> = sources.iter().map(|o| o.spec.as_str()).collect();
        return Err(BatchError::Nothing(specs.join(", ")));
    }
    if opts.signature.is_some() && total != 1 {
        return Err(BatchError::SignatureForMany(total));
    }
    if let (Some(v), true) = (opts.version, total != 1) {
        return Err(BatchError::VersionForMany {
            total,
            version: v.to_string(),
        });
    }
    Ok(total)
}

/// Most versions a batch commits at once ([`Registry::commit_many`]).
const BATCH_VERSIONS: usize = 256;
/// Most bytes of files a batch holds before it is committed (a version holds at most 16 MiB by
/// default, so a batch holds at most this and one version more).
const BATCH_BYTES: u64 = 32 << 20;

/// A skill of a batch read, waiting for its batch to be committed.
struct Pending {
    spec: String,
    root: String,
    location: String,
    prepared: Result<Prepared, SkillFailure>,
}

impl Registry {
    /// Publishes every skill of `sources` (checked with [`check_batch`] first), one after the
    /// other, each with the version and signature its source keeps unless `opts` gives them
    /// (a signature beside the source: `SOURCE.minisig`, or `SOURCE.NAME.minisig` for a source
    /// of several skills, as `pack --sign` and `sign` write them). A skill refused does not
    /// stop the others; `each` hears of every skill as it starts, and as it ends once the
    /// batch it is in is committed.
    ///
    /// Skills are read and prepared in turn, and committed in batches (up to 256 versions or
    /// 32 MiB of files: [`commit_many`](Self::commit_many)), each version still all or
    /// nothing within its batch, as if each were committed on its own.
    pub async fn publish_batch(
        &mut self,
        sources: &[PublishSource],
        opts: &BatchOptions<'_>,
        each: impl FnMut(BatchEvent<'_>),
    ) -> Result<Vec<SkillOutcome>, BatchError> {
        batch(sources, opts, each, |ready| {
            std::future::ready(self.commit_many(&ready))
        })
        .await
    }
}

/// [`Registry::publish_batch`] into any [`Store`](crate::store::Store) (a registry file, a
/// database): the same batches, each committed with
/// [`Store::commit_many`](crate::store::Store::commit_many).
pub async fn publish_batch_into(
    store: &dyn crate::store::Store,
    sources: &[PublishSource],
    opts: &BatchOptions<'_>,
    each: impl FnMut(BatchEvent<'_>),
) -> Result<Vec<SkillOutcome>, BatchError> {
    batch(sources, opts, each, |ready| {
        store.commit_many(std::sync::Arc::new(ready), None)
    })
    .await
}

/// The batches of a publish, each handed to `commit` (one result per version, in order).
async fn batch<F, Fut>(
    sources: &[PublishSource],
    opts: &BatchOptions<'_>,
    mut each: impl FnMut(BatchEvent<'_>),
    mut commit: F,
) -> Result<Vec<SkillOutcome>, BatchError>
where
    F: FnMut(Vec<Prepared>) -> Fut,
    Fut: std::future::Future<Output = Vec<Result<Published, RegistryError>>>,
{
    let total = check_batch(sources, opts)?;
    let mut outcomes = Vec::with_capacity(total);
    let mut pending: Vec<Pending> = Vec::new();
    let (mut versions, mut bytes) = (0usize, 0u64);
    for o in sources {
        let single = o.roots.len() == 1;
        for root in &o.roots {
            let location = o.src.location(root);
            each(BatchEvent::Start(&location));
            let prepared = match kept_by_source(o, root, single).await {
                Ok((version, found)) => {
                    let publish = PublishOptions {
                        version: opts.version.map(str::to_string).or(version),
                        signature: opts.signature.map(str::to_string).or(found),
                        keyring: opts.keyring,
                        limits: opts.limits,
                        ..Default::default()
                    };
                    prepare(&*o.src, root, &publish)
                        .await
                        .map_err(SkillFailure::from)
                }
                Err(e) => Err(e),
            };
            if let Ok(p) = &prepared {
                versions += 1;
                bytes = bytes.saturating_add(p.bytes());
            }
            pending.push(Pending {
                spec: o.spec.clone(),
                root: root.clone(),
                location,
                prepared,
            });
            if versions >= BATCH_VERSIONS || bytes >= BATCH_BYTES {
                commit_pending(&mut pending, &mut outcomes, &mut each, &mut commit).await;
                (versions, bytes) = (0, 0);
            }
        }
    }
    commit_pending(&mut pending, &mut outcomes, &mut each, &mut commit).await;
    Ok(outcomes)
}

/// Commits the skills of `pending` prepared, and says how each went, in order.
async fn commit_pending<F, Fut>(
    pending: &mut Vec<Pending>,
    outcomes: &mut Vec<SkillOutcome>,
    each: &mut impl FnMut(BatchEvent<'_>),
    commit: &mut F,
) where
    F: FnMut(Vec<Prepared>) -> Fut,
    Fut: std::future::Future<Output = Vec<Result<Published, RegistryError>>>,
{
    let mut ready = Vec::new();
    let mut rest = Vec::with_capacity(pending.len());
    for p in pending.drain(..) {
        let failed = match p.prepared {
            Ok(prepared) => {
                ready.push(prepared);
                None
            }
            Err(e) => Some(e),
        };
        rest.push((p.spec, p.root, p.location, failed));
    }
    let mut committed = commit(ready).await.into_iter();
    for (spec, root, location, failed) in rest {
        let result = match failed {
            Some(e) => Err(e),
            None => committed
                .next()
                .expect("commit_many answers each version")
                .map_err(SkillFailure::from),
        };
        let outcome = SkillOutcome {
            spec,
            root,
            location,
            result,
        };
        each(BatchEvent::Done(&outcome));
        outcomes.push(outcome);
    }
}

/// What the source keeps about one skill to publish: the version it holds it as (a registry's,
/// an index entry's) and a signature — one it keeps with the skill, else the file beside it.
async fn kept_by_source(
    o: &PublishSource,
    root: &str,
    single: bool,
) -> Result<(Option<String>, Option<String>), SkillFailure> {
    // The file is named after the skill; a skill that does not load has no name (publish then
    // reports why it does not load).
    let Ok(skill) = o.src.load(root).await else {
        return Ok((None, None));
    };
    let record = o.src.record(root).await?;
    let found =
        crate::sign::source_signatures::signatures_of(&o.spec, &*o.src, &skill, &record, single)?;
    Ok((record.version, found.into_iter().next().map(|f| f.text)))
}
