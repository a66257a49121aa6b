//! `skillcat registry …`: the sources of a publish opened, each skill's outcome as its report
//! says it, a version yanked.

mod served;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::publish::{
    BatchError, BatchOptions, PublishSource, SkillFailure, SkillOutcome, check_batch,
};
use crate::registry::copy::{CopyEvent, CopyOptions, CopyReport};
use crate::registry::store::{self, Location, redact_password};
use crate::registry::{
    CheckReport, Published, RegistryError, SearchHit, VersionInfo, VersionLimits, parse_spec,
};
use crate::sign::{Keyring, SignError};
use crate::source::{self, DirOptions, DirSource, Source};

/// A source of a publish that could not be opened or listed.
#[derive(Debug, thiserror::Error)]
#[error("{spec}: {source}")]
pub struct OpenError {
    /// The source as given.
    pub spec: String,
    /// Why (of kind `NotFound` when nothing is there).
    pub source: crate::Error,
}

/// A skill directory (one with a document) is one skill; anything else goes through
/// [`source::open`].
fn open_source(spec: &str) -> crate::Result<Arc<dyn Source>> {
    let path = Path::new(spec);
    if path.is_dir() && source::has_document_entry(path) {
        Ok(Arc::new(DirSource::open_skill(
            path,
            DirOptions::default(),
        )?))
    } else {
        source::open(spec)
    }
}

/// Every source opened and listed, before anything is written; the first that fails stops it.
pub async fn open_sources(specs: &[String]) -> Result<Vec<PublishSource>, OpenError> {
    let mut opened = Vec::with_capacity(specs.len());
    for spec in specs {
        let listed = match open_source(spec) {
            Ok(src) => src.list().await.map(|roots| (src, roots)),
            Err(e) => Err(e),
        };
        match listed {
            Ok((src, roots)) => opened.push(PublishSource {
                spec: spec.clone(),
                src,
                roots,
            }),
            Err(source) => {
                return Err(OpenError {
                    spec: spec.clone(),
                    source,
                });
            }
        }
    }
    Ok(opened)
}

/// What a publish reads before anything is written.
#[derive(Debug, Clone, Copy)]
pub struct PublishInputs<'a> {
    /// The signature of the one skill published (else each one's beside its source).
    pub sig: Option<&'a Path>,
    /// The version of the one skill published (else each one's own).
    pub version: Option<&'a str>,
    /// The keyring every skill's signature must verify against, when one is required.
    pub keyring: Option<&'a Path>,
    /// The most a version may hold.
    pub limits: VersionLimits,
}

/// A publish ready to run: its sources opened and listed, its keyring and signature read.
pub struct Prepared<'a> {
    /// The sources, each with its skill roots.
    pub sources: Vec<PublishSource>,
    /// How many skills they hold together.
    pub total: usize,
    keyring: Option<Keyring>,
    signature: Option<String>,
    inputs: PublishInputs<'a>,
}

impl Prepared<'_> {
    /// What each skill of the batch is published with.
    pub fn options(&self) -> BatchOptions<'_> {
        BatchOptions {
            version: self.inputs.version,
            signature: self.signature.as_deref(),
            keyring: self.keyring.as_ref(),
            limits: self.inputs.limits,
        }
    }
}

/// Why a publish did not start (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The keyring could not be read.
    #[error(transparent)]
    Keyring(SignError),
    /// The signature given could not be read.
    #[error("cannot read the signature {}: {source}", path.display())]
    Signature {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A source could not be opened or listed.
    #[error(transparent)]
    Open(OpenError),
    /// The batch does not go with what it was given.
    #[error(transparent)]
    Batch(BatchError),
}

/// Reads the keyring and signature `inputs` name, opens and lists every source of `specs`, and
/// checks the batch, before anything is written.
pub async fn prepare<'a>(
    specs: &[String],
    inputs: PublishInputs<'a>,
) -> Result<Prepared<'a>, PrepareError> {
    let keyring = inputs.keyring.map(Keyring::load).transpose();
    let keyring = keyring.map_err(PrepareError::Keyring)?;
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| PrepareError::Signature {
            path: p.into(),
            source,
        })
    };
    let signature = inputs.sig.map(read).transpose()?;
    let sources = open_sources(specs).await.map_err(PrepareError::Open)?;
    let mut prepared = Prepared {
        sources,
        total: 0,
        keyring,
        signature,
        inputs,
    };
    prepared.total =
        check_batch(&prepared.sources, &prepared.options()).map_err(PrepareError::Batch)?;
    Ok(prepared)
}

/// One skill of a publish, as `--format json` reports it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PublishRow<'a> {
    /// Published, or already there.
    Published {
        /// The source as given.
        source: &'a str,
        /// The skill's root in it.
        root: &'a str,
        /// What was stored.
        published: &'a Published,
    },
    /// Not published.
    Failed {
        /// The source as given.
        source: &'a str,
        /// The skill's root in it.
        root: &'a str,
        /// Where it is, for people.
        location: &'a str,
        /// Why not.
        error: String,
        /// The validation faults, when it was refused for them.
        faults: Vec<FaultRow<'a>>,
    },
}

/// A validation fault in a [`PublishRow`].
#[derive(Debug, Serialize)]
pub struct FaultRow<'a> {
    /// The fault's kind.
    pub kind: &'static str,
    /// What is wrong.
    pub message: &'a str,
}

impl<'a> PublishRow<'a> {
    /// The row of one skill's outcome.
    pub fn of(o: &'a SkillOutcome) -> PublishRow<'a> {
        match &o.result {
            Ok(published) => PublishRow::Published {
                source: &o.spec,
                root: &o.root,
                published,
            },
            Err(f) => PublishRow::Failed {
                source: &o.spec,
                root: &o.root,
                location: &o.location,
                error: f.to_string(),
                faults: match f {
                    SkillFailure::Registry(e) => e
                        .faults()
                        .iter()
                        .map(|f| FaultRow {
                            kind: f.kind().as_str(),
                            message: f.message(),
                        })
                        .collect(),
                    _ => Vec::new(),
                },
            },
        }
    }
}

/// The skills refused for want of a version, each as `NAME (LOCATION)`.
pub fn unversioned(outcomes: &[SkillOutcome]) -> Vec<String> {
    outcomes
        .iter()
        .filter_map(|o| match &o.result {
            Err(SkillFailure::Registry(RegistryError::MissingVersion { name })) => {
                Some(format!("{name} ({})", o.location))
            }
            _ => None,
        })
        .collect()
}

/// What [`yank`] did.
#[derive(Debug)]
pub struct Yanked {
    /// The skill.
    pub name: String,
    /// The version.
    pub version: String,
    /// Whether it changed (false: it already was as asked).
    pub changed: bool,
    /// The skill's latest version after it, if any is left unyanked.
    pub latest: Result<Option<String>, RegistryError>,
}

/// Where a registry command's LOCATION names a registry: a file (`skills.db`,
/// `sqlite:skills.db`) or a PostgreSQL database (`postgres://…`, `postgresql://…`).
pub fn location(spec: &Path) -> Location {
    match spec.to_str() {
        Some(text) => Location::parse(text),
        None => Location::File(spec.to_path_buf()),
    }
}

/// A location as a message names it: a file as given, a database without its password.
pub fn typed(location: &Location) -> String {
    match location {
        Location::File(p) => p.display().to_string(),
        Location::Postgres(url) => redact_password(url),
    }
}

/// Creates an empty registry at `location` (a new file, or the schema in an empty database);
/// where it is, as messages show it, and its schema version. `blobs` names the object storage
/// of a PostgreSQL registry's blobs (refused for a file).
pub async fn init(
    location: &Location,
    blobs: Option<&str>,
) -> Result<(String, u32), RegistryError> {
    let store = store::init_with(location, blobs).await?;
    let version = store.schema_version().await.unwrap_or_default();
    Ok((store.display().to_string(), version))
}

/// Yanks `NAME@VERSION` in the registry at `location` (unyanks it when `undo`).
pub async fn yank(location: &Location, spec: &str, undo: bool) -> Result<Yanked, RegistryError> {
    let (name, version) = parse_spec(spec)?;
    let store = store::open(location).await?;
    let changed = store.set_yanked(name, version, !undo, None).await?;
    Ok(Yanked {
        name: name.to_string(),
        version: version.to_string(),
        changed,
        latest: store.latest(name).await.map(|l| l.map(|l| l.version)),
    })
}

/// How long a search of a registry on the command line may take: as long as it takes (the
/// user waits for it and may interrupt it).
const SEARCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// At most `limit` skills of the registry at `location` whose latest version matches the
/// words of `query` (any text: it is never read as query syntax), best first.
pub async fn search(
    location: &Location,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, RegistryError> {
    let store = store::open_read_only(location).await?;
    let (hits, _) = store.search_page(query, 0, limit, SEARCH_DEADLINE).await?;
    Ok(hits)
}

/// The registry at `location` verified whole ([`Store::check`](store::Store::check)): the engine's integrity
/// checks, every blob against its sha256, every version against its digest and manifest.
pub async fn check(location: &Location) -> Result<CheckReport, RegistryError> {
    store::open_read_only(location).await?.check().await
}

/// Why `registry versions` lists nothing.
#[derive(Debug, thiserror::Error)]
pub enum VersionsError {
    /// The registry could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// It holds no skill of that name.
    #[error("no skill named '{name}' in {location}")]
    NoSuchSkill {
        /// The name asked for.
        name: String,
        /// The registry, as given (a database without its password).
        location: String,
    },
    /// The served registry holds no skill of that name.
    #[error("{}", source::no_such_skill(name, url, names.clone(), 0))]
    NotServed {
        /// The name asked for.
        name: String,
        /// The registry's address.
        url: String,
        /// The skills its index lists (empty when it could not be read).
        names: Vec<String>,
    },
    /// The served registry could not be asked, or refused.
    #[error(transparent)]
    Served(crate::Error),
}

/// Every version of `name` in the registry at `location`, in semver order (yanked ones
/// flagged).
pub async fn versions(location: &Location, name: &str) -> Result<Vec<VersionInfo>, VersionsError> {
    let list = store::open_read_only(location)
        .await?
        .versions(name)
        .await?;
    if list.is_empty() {
        return Err(VersionsError::NoSuchSkill {
            name: name.to_string(),
            location: typed(location),
        });
    }
    Ok(list)
}

/// What [`copy`] did: the library's report, and whether TO was created for it.
#[derive(Debug, Serialize)]
pub struct Copied {
    /// What was copied.
    #[serde(flatten)]
    pub report: CopyReport,
    /// TO did not exist and was created (`registry init`) for the copy.
    pub created: bool,
}

/// Copies the registry `from` (a file, a database, or a served registry's URL) into `to` (a
/// file or a database, created when there is none yet): every version it lacks, exactly,
/// then the audit log ([`registry::copy::copy`](crate::registry::copy::copy)).
pub async fn copy(
    from: &Path,
    to: &Path,
    progress: Option<&(dyn Fn(CopyEvent<'_>) + Send + Sync)>,
    policy: &crate::client::Policy,
) -> Result<Copied, CopyError> {
    let to_location = location(to);
    // FROM is opened first: nothing is created for a copy from nowhere.
    let origin: Box<dyn CopyOrigin> = match served_url(from) {
        Some(url) => served_origin(url, policy)?,
        None => Box::new(StoreOrigin(store::open_read_only(&location(from)).await?)),
    };
    origin.reachable().await?;
    let (target, created) = match store::open(&to_location).await {
        Ok(s) => (s, false),
        Err(RegistryError::Missing { .. }) => (store::init(&to_location).await?, true),
        Err(e) => return Err(e.into()),
    };
    let opts = CopyOptions { progress };
    let report = origin.copy_into(&*target, opts).await?;
    Ok(Copied { report, created })
}

/// Why `registry copy` did not run (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A registry could not be opened, listed or written.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The served registry could not be asked, or refused.
    #[error(transparent)]
    Served(#[from] crate::Error),
}

/// A copy's origin behind one object: a store, or a served registry.
#[async_trait::async_trait]
trait CopyOrigin: Send + Sync {
    /// Whether it answers at all, asked before anything is created for the copy.
    async fn reachable(&self) -> Result<(), CopyError> {
        Ok(())
    }

    async fn copy_into(
        &self,
        to: &dyn store::Store,
        opts: CopyOptions<'_>,
    ) -> Result<CopyReport, RegistryError>;
}

/// A served registry as a copy's origin.
fn served_origin(url: &str, policy: &crate::client::Policy) -> crate::Result<Box<dyn CopyOrigin>> {
    Ok(Box::new(ServedCopy(served::ServedOrigin::new(
        url, policy,
    )?)))
}

struct ServedCopy(served::ServedOrigin);

#[async_trait::async_trait]
impl CopyOrigin for ServedCopy {
    async fn reachable(&self) -> Result<(), CopyError> {
        self.0.reachable().await.map_err(CopyError::Served)
    }

    async fn copy_into(
        &self,
        to: &dyn store::Store,
        opts: CopyOptions<'_>,
    ) -> Result<CopyReport, RegistryError> {
        crate::registry::copy::copy(&self.0, to, opts).await
    }
}

struct StoreOrigin(std::sync::Arc<dyn store::Store>);

#[async_trait::async_trait]
impl CopyOrigin for StoreOrigin {
    async fn copy_into(
        &self,
        to: &dyn store::Store,
        opts: CopyOptions<'_>,
    ) -> Result<CopyReport, RegistryError> {
        crate::registry::copy::copy(&*self.0, to, opts).await
    }
}

/// The address of a served registry (`skillcat serve REGISTRY`) when `db` is one
/// (`http://…`, `https://…`) rather than a registry file.
pub fn served_url(db: &Path) -> Option<&str> {
    let text = db.to_str()?;
    let scheme = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    (scheme.starts_with("http://") || scheme.starts_with("https://")).then_some(text)
}

/// Every version of `name` in the registry served at `url`, through its API
/// (`GET /api/v1/skills/NAME`), as [`versions`] lists a file's: semver order, the skill
/// digest, the date, `latest`, `yanked` and the keys of the signatures kept.
pub async fn served_versions(
    url: &str,
    name: &str,
    policy: &crate::client::Policy,
) -> Result<Vec<VersionInfo>, VersionsError> {
    let skill = match crate::search::skill(url, name, policy).await {
        Ok(s) => s,
        Err(e) if e.is_not_found() => {
            return Err(VersionsError::NotServed {
                name: name.to_string(),
                url: url.to_string(),
                names: served_names(url, policy).await,
            });
        }
        // A static export answers a name it lacks with a bare 404 ("no skills API"): its
        // index says whether the name is there at all.
        Err(e @ crate::Error::Invalid(_)) => {
            let names = served_names(url, policy).await;
            if names.is_empty() || names.iter().any(|n| n == name) {
                return Err(VersionsError::Served(e));
            }
            return Err(VersionsError::NotServed {
                name: name.to_string(),
                url: url.to_string(),
                names,
            });
        }
        Err(e) => return Err(VersionsError::Served(e)),
    };
    // The API lists the highest version first; a file lists them in semver order.
    let list: Vec<VersionInfo> = (skill.versions.into_iter().rev())
        .filter_map(|v| {
            Some(VersionInfo {
                name: skill.name.clone(),
                version: v.version?,
                digest: v.skill_digest,
                description: v.description.unwrap_or_else(|| skill.description.clone()),
                published_at: v.published_at.unwrap_or_default(),
                published: v.published.unwrap_or_default(),
                yanked: v.yanked,
                latest: v.latest,
                signed_by: (v.signatures.into_iter())
                    .map(|s| s.key_id)
                    .filter(|k| !k.is_empty())
                    .collect(),
            })
        })
        .collect();
    if list.is_empty() {
        return Err(VersionsError::NotServed {
            name: name.to_string(),
            url: url.to_string(),
            names: served_names(url, policy).await,
        });
    }
    Ok(list)
}

/// The skills the index of the registry served at `url` lists, as `add URL NAME` names them
/// when it lacks `NAME`; none when the index cannot be read (the error says only the name).
async fn served_names(url: &str, policy: &crate::client::Policy) -> Vec<String> {
    match served::index_of(url, policy) {
        Ok(http) => http.list().await.unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// One skill a served registry's search found: a file's [`SearchHit`] but for its score (the
/// API ranks, best first, without saying by how much).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServedHit {
    /// The skill's name.
    pub name: String,
    /// Its latest version.
    pub version: String,
    /// That version's description.
    pub description: String,
}

/// The most results a served registry answers at once (its API's page).
pub const SERVED_SEARCH_MAX: usize = 100;

/// At most `limit` (at most [`SERVED_SEARCH_MAX`]) skills of the registry served at `url`
/// whose latest version matches the words of `query`, best first, through its search API.
pub async fn served_search(
    url: &str,
    query: &str,
    limit: usize,
    policy: &crate::client::Policy,
) -> crate::Result<Vec<ServedHit>> {
    // As a file's search: nothing to look for finds nothing (the API would refuse it).
    if query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let limit = limit.clamp(1, SERVED_SEARCH_MAX);
    let page = crate::search::search(url, query, 1, limit, policy).await?;
    Ok((page.results.into_iter())
        .map(|r| ServedHit {
            name: r.name,
            version: r.version.unwrap_or_default(),
            description: r.description,
        })
        .collect())
}

/// What a listed version is marked with, in this order: `latest`, `yanked`, `signed by K1, K2`.
pub fn marks(v: &VersionInfo) -> Vec<String> {
    let mut marks = Vec::new();
    if v.latest {
        marks.push("latest".to_string());
    }
    if v.yanked {
        marks.push("yanked".to_string());
    }
    if !v.signed_by.is_empty() {
        marks.push(format!("signed by {}", v.signed_by.join(", ")));
    }
    marks
}

/// Collects the garbage of the object storage of the registry at `db` (a file or a database
/// URL): the blobs no version references, written longer than `grace` ago (only named when
/// `dry_run`). The registry as messages show it, and the report: `None` when it keeps its
/// blobs in its database.
pub async fn gc(
    db: &Path,
    grace: std::time::Duration,
    dry_run: bool,
) -> Result<(String, Option<crate::registry::store::blobs::GcReport>), RegistryError> {
    use crate::registry::store::{self, Location, blobs};
    let location = Location::parse(&db.to_string_lossy());
    let store = store::open(&location).await?;
    let report = blobs::collect_registry_garbage(&*store, grace, dry_run).await?;
    Ok((location.shown(), report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_source_is_not_found_and_a_skill_dir_is_one_root() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nothing").display().to_string();
        let e = open_sources(std::slice::from_ref(&missing))
            .await
            .err()
            .expect("refused");
        assert_eq!(e.spec, missing);
        assert_eq!(e.source.kind(), crate::ErrorKind::NotFound);
        let dir = tmp.path().join("one");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: one\ndescription: d\n---\n",
        )
        .unwrap();
        let opened = open_sources(&[dir.display().to_string()]).await.unwrap();
        assert_eq!(opened.len(), 1);
        assert_eq!(opened[0].roots.len(), 1);
    }

    #[tokio::test]
    async fn a_signature_for_many_skills_is_refused_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        for name in ["one", "two"] {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            let md = format!("---\nname: {name}\ndescription: d\n---\n");
            std::fs::write(dir.join("SKILL.md"), md).unwrap();
        }
        let sig = tmp.path().join("x.minisig");
        std::fs::write(&sig, "not read as a signature yet").unwrap();
        let specs = [tmp.path().display().to_string()];
        let limits = VersionLimits {
            max_bytes: 1 << 20,
            max_files: 8,
        };
        let mut inputs = PublishInputs {
            sig: None,
            version: None,
            keyring: None,
            limits,
        };
        assert_eq!(prepare(&specs, inputs).await.unwrap().total, 2);
        inputs.sig = Some(&sig);
        assert!(matches!(
            prepare(&specs, inputs).await,
            Err(PrepareError::Batch(BatchError::SignatureForMany(2)))
        ));
        let missing = tmp.path().join("missing.minisig");
        inputs.sig = Some(&missing);
        assert!(matches!(
            prepare(&specs, inputs).await,
            Err(PrepareError::Signature { .. })
        ));
    }

    #[tokio::test]
    async fn a_yank_of_a_missing_version_or_a_bad_spec_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Location::File(tmp.path().join("r.db"));
        init(&db, None).await.unwrap();
        assert!(matches!(
            yank(&db, "no-version", false).await,
            Err(RegistryError::BadSpec { .. })
        ));
        let e = yank(&db, "ghost@1.0.0", false).await.expect_err("refused");
        assert!(e.is_refusal(), "{e}");
    }
    #[tokio::test]
    async fn versions_of_a_missing_skill_are_refused_and_marks_come_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("r.db");
        let db = location(&path);
        assert!(matches!(
            versions(&db, "ghost").await,
            Err(VersionsError::Registry(_))
        ));
        assert!(search(&db, "anything", 5).await.is_err());
        init(&db, None).await.unwrap();
        assert!(search(&db, "anything", 5).await.unwrap().is_empty());
        let e = versions(&db, "ghost").await.expect_err("no such skill");
        assert_eq!(
            e.to_string(),
            format!("no skill named 'ghost' in {}", path.display())
        );
        let pg = location(Path::new("postgres://me:secret@127.0.0.1:1/r"));
        assert_eq!(typed(&pg), "postgres://me:***@127.0.0.1:1/r");
        let mut v = VersionInfo {
            name: "one".into(),
            version: "1.0.0".into(),
            digest: "sha256:00".into(),
            description: String::new(),
            published_at: 0,
            published: String::new(),
            yanked: false,
            latest: false,
            signed_by: Vec::new(),
        };
        assert!(marks(&v).is_empty());
        (v.latest, v.yanked) = (true, true);
        v.signed_by = vec!["K1".into(), "K2".into()];
        assert_eq!(marks(&v), ["latest", "yanked", "signed by K1, K2"]);
    }
}
