//! What `skillcat serve` and `skillcat export` build from a source, in one call: the [`Site`]
//! with its pages, its search (a registry's full-text search, else the runtime's matcher), the
//! versions and yanked versions a registry keeps, the signatures beside the source, and the
//! audit of every skill; and what a registry served for publishing needs first. An embedder
//! that calls [`build_site`] serves exactly what the command line does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use skillcat_runtime::matching::{Bm25Index, SkillDoc};

use crate::error::Result;
use crate::registry::store::{self, Location, SqliteStore, Store, is_postgres_url};
use crate::registry::{Registry, RegistryError};
use crate::sign::source_signatures::{beside_signature, is_registry_spec};
use crate::sign::{Keyring, Statement};
use crate::site::{
    RegistryVersions, RegistryYanked, SignatureLookup, Signed, Site, SiteOptions, SiteProblem,
    VersionLookup, YankedLookup,
};
use crate::source::{Discovery, Source};
use crate::web::{RegistrySearch, SiteSearch, WebOptions};

/// How a catalog's pages are made, beside what the source holds.
#[derive(Debug, Clone, Default)]
pub struct SiteRequest {
    /// The address people reach the catalog at, shown in its pages' install commands (`None`:
    /// they say `URL`).
    pub base_url: Option<String>,
    /// The keyring each signature shown on the pages is checked against (its key and scope).
    pub keyring: Option<Arc<Keyring>>,
    /// The registry the source reads, when the caller opened it (a database, or a file served
    /// for publishing): its search, versions and yanked versions come from this store. `None`:
    /// a registry file named by the SOURCE is opened read-only here.
    pub registry: Option<Arc<dyn Store>>,
}

/// The registry file a registry SOURCE names (`x.db`, `sqlite:x.db`).
pub fn registry_path(spec: &str) -> PathBuf {
    PathBuf::from(spec.strip_prefix("sqlite:").unwrap_or(spec))
}

/// Builds the site of the source `spec`, opened as `src` and read (with its files) into
/// `found`: only the skills that load and validate are served, the others come back as
/// [`SiteProblem`]s. A registry is searched by its own full-text search and serves its versions
/// and yanked versions; any other source is ranked by the runtime's matcher (BM25F over name,
/// description and body, as `skillcat match` ranks) and shows the signatures lying beside it
/// (`SOURCE.minisig`, as `pack --sign` and `sign` write them). Large buffers go back to the
/// system as they are freed ([`return_large_buffers`]), and the rest of what packing freed
/// afterwards ([`release_freed_memory`]): the peak stays near what the site holds.
pub async fn build_site(
    spec: &str,
    src: &dyn Source,
    found: &Discovery,
    request: SiteRequest,
) -> Result<(Site, Vec<SiteProblem>)> {
    // A registry keeps its yanked versions: served apart, marked, readable by NAME@VERSION.
    let registry: Option<Arc<dyn Store>> = match request.registry {
        Some(store) => Some(store),
        None if is_registry_spec(spec) => {
            Some(Arc::new(SqliteStore::open_read_only(registry_path(spec))?))
        }
        None => None,
    };
    let search: Arc<dyn SiteSearch> = match &registry {
        Some(store) => Arc::new(RegistrySearch::new(store.clone())),
        None => Arc::new(MatcherSearch::new(found)),
    };
    let opts = SiteOptions {
        versions: registry
            .clone()
            .map(|s| Arc::new(RegistryVersions(s)) as Arc<dyn VersionLookup>),
        web: WebOptions {
            base_url: request.base_url,
            keyring: request.keyring,
            search: Some(search),
        },
        audit: true,
        signatures: Some(Arc::new(SpecSignatures {
            spec: spec.to_string(),
            // As `pack --sign` names them: SOURCE.minisig for a source of one skill.
            single: found.skills.len() + found.faults.len() == 1,
        })),
        yanked: registry.map(|s| Arc::new(RegistryYanked(s)) as Arc<dyn YankedLookup>),
        ..SiteOptions::default()
    };
    return_large_buffers();
    let built = Site::from_discovery(src, found, &opts).await;
    release_freed_memory();
    built
}

/// The signature files beside a source (as `skillcat sign` and `pack --sign` write them), for
/// the skills whose source keeps none itself (a registry's and an index's come with the
/// source: [`Source::record`]).
struct SpecSignatures {
    spec: String,
    single: bool,
}

impl SignatureLookup for SpecSignatures {
    fn lookup(&self, name: &str, skill_digest: &str) -> Option<Signed> {
        let found = beside_signature(&self.spec, name, self.single).ok()??;
        let st = Statement::claimed_by(&found.text).ok()?;
        (st.name == name && st.digest == skill_digest).then_some(Signed {
            version: st.version,
            signature: found.text,
        })
    }
}

/// What ranks a catalog search of a source that is not a registry: the runtime's matcher.
struct MatcherSearch {
    index: Bm25Index,
    names: Vec<String>,
}

impl MatcherSearch {
    fn new(found: &Discovery) -> MatcherSearch {
        let docs: Vec<SkillDoc<'_>> = found.skills.iter().map(SkillDoc::from_skill).collect();
        MatcherSearch {
            index: Bm25Index::build(&docs),
            names: found.skills.iter().map(|s| s.name()).collect(),
        }
    }
}

impl SiteSearch for MatcherSearch {
    fn search(
        &self,
        _: &Site,
        query: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<String>, usize)> {
        let hits = self.index.search(query, self.names.len());
        let total = hits.len();
        let names = hits
            .iter()
            .skip(offset)
            .take(limit)
            .map(|h| self.names[h.index].clone())
            .collect();
        Ok((names, total))
    }

    fn describe(&self) -> &'static str {
        "the matcher (BM25F)"
    }
}

/// Hands the memory freed after building a site back to the system. Packing every skill
/// allocates and frees many small buffers; glibc keeps the freed heap, so a server that has
/// (re)built a site of 1,000 skills would otherwise hold hundreds of megabytes it no longer
/// uses. Elsewhere it does nothing.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system; it touches no live data.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Has the allocator give large buffers (128 KiB and more: a packed skill's deflate state,
/// an upload's files) back to the system when they are freed; [`build_site`] and
/// [`publishing_router`](crate::publishing_router) set it. glibc otherwise raises its mmap
/// threshold (and its trim threshold with it) after the first large free and serves later
/// large buffers from per-thread arenas, where a freed buffer is soon split by small
/// allocations that live on and one thread's cannot serve another thread's: memory then grows
/// with the buffers ever freed, not with those in use. Measured: an upload server at 251 MiB
/// peak for what stays at 111 MiB with this; `serve` of 2,000 skills at 386–584 MB peak (one
/// 380 KB deflate state per skill packed) for a live heap that never passes ~115 MB, and
/// 137 MB with this (`benches/serve_rss.sh`). Elsewhere it does nothing.
pub fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` sets one tunable of glibc's allocator; it takes the allocator's own
    // locks and is safe to call while other threads allocate.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// Why a SOURCE cannot be served for publishing.
#[derive(Debug, thiserror::Error)]
pub enum PublishingSourceError {
    /// Named as a registry file (`x.db`, `sqlite:x.db`) that does not exist yet.
    #[error("the registry file {} does not exist", .0.display())]
    NotCreated(PathBuf),
    /// Something else than a registry file: a directory, an archive, a URL, nothing.
    #[error("{spec} {what}")]
    NotRegistry {
        /// The SOURCE as given.
        spec: String,
        /// What it is: `is a directory`, `does not exist`, `is not a registry file`.
        what: &'static str,
    },
    /// The registry did not open (or migrate).
    #[error(transparent)]
    Open(#[from] RegistryError),
}

/// The registry file a SOURCE served for publishing names, opened read-write once so that it
/// is migrated (the audit log) before anything reads it. Anything else than a registry file is
/// refused; a registry file not made yet is [`PublishingSourceError::NotCreated`].
pub fn publishing_registry(spec: &str) -> std::result::Result<PathBuf, PublishingSourceError> {
    let path = registry_path(spec);
    let named_as_registry = spec.starts_with("sqlite:")
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("db") || e.eq_ignore_ascii_case("sqlite"));
    let what = if path.is_dir() {
        Some("is a directory")
    } else if !path.exists() {
        if named_as_registry {
            return Err(PublishingSourceError::NotCreated(path));
        }
        Some("does not exist")
    } else if is_registry_file(&path) {
        None
    } else {
        Some("is not a registry file")
    };
    if let Some(what) = what {
        return Err(PublishingSourceError::NotRegistry {
            spec: spec.to_string(),
            what,
        });
    }
    Registry::open(&path)?;
    Ok(path)
}

/// The registry a SOURCE served for publishing names, opened read-write (migrated forward)
/// as the one store the server reads and writes through: a database (`postgres://…`), or a
/// registry file as [`publishing_registry`] accepts it.
pub async fn publishing_store(
    spec: &str,
) -> std::result::Result<Arc<dyn Store>, PublishingSourceError> {
    if is_postgres_url(spec) {
        return Ok(store::open(&Location::parse(spec)).await?);
    }
    let path = publishing_registry(spec)?;
    Ok(store::open(&Location::File(path)).await?)
}

/// Whether `path` is a file a registry opens (the SQLite magic, or a `.db`/`.sqlite` name).
fn is_registry_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    crate::registry::is_registry_file(path, &head[..n])
}

/// Why a catalog cannot sign its index statement as asked.
#[derive(Debug, thiserror::Error)]
pub enum IndexSigningError {
    /// The catalog's address is not a URL with a host (the host is the catalog signed for).
    #[error("{0:?} is not a URL with a host")]
    NotUrl(String),
    /// The secret key file could not be read.
    #[error("cannot read the secret key {}: {source}", path.display())]
    ReadKey {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A statement that holds for no time at all.
    #[error("a signed index statement must hold for more than 0")]
    NoTime,
}

impl crate::IndexSigning {
    /// How a catalog served at `url` signs its index statement: for the URL's authority
    /// ([`catalog_of_url`]), with the minisign secret key in the file `key` (unlocked by
    /// `password` when it is encrypted), each statement holding `valid_for`.
    pub fn from_key_file(
        url: &str,
        key: &Path,
        password: Option<String>,
        valid_for: std::time::Duration,
    ) -> std::result::Result<crate::IndexSigning, IndexSigningError> {
        let catalog = catalog_of_url(url).ok_or_else(|| IndexSigningError::NotUrl(url.into()))?;
        let secret_key =
            std::fs::read_to_string(key).map_err(|source| IndexSigningError::ReadKey {
                path: key.to_path_buf(),
                source,
            })?;
        if valid_for.is_zero() {
            return Err(IndexSigningError::NoTime);
        }
        Ok(crate::IndexSigning {
            catalog,
            secret_key,
            password,
            valid_for,
        })
    }
}

/// The catalog an index statement names for a site served at `url`: the URL's authority (host
/// and port, lowercased, without user information), as a client derives it from the URL it
/// reads; `None` for text that is not a URL with a host.
pub fn catalog_of_url(url: &str) -> Option<String> {
    url.split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(rest))
        .map(|auth| auth.rsplit('@').next().unwrap_or(auth).to_ascii_lowercase())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Detail, DirOptions, DirSource, discover_with};

    fn skill(dir: &Path, name: &str, description: &str) {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n"),
        )
        .unwrap();
    }

    #[tokio::test]
    async fn a_directory_is_ranked_by_the_matcher_and_shows_the_signature_beside_it() {
        let tmp = tempfile::tempdir().unwrap();
        skill(
            tmp.path(),
            "pdf-forms",
            "Fill in PDF forms and flatten them",
        );
        skill(tmp.path(), "csv-tools", "Clean and join CSV spreadsheets");
        std::fs::create_dir(tmp.path().join("broken")).unwrap();
        std::fs::write(tmp.path().join("broken/SKILL.md"), "no frontmatter").unwrap();
        let src = DirSource::open(tmp.path(), DirOptions::default()).unwrap();
        let found = discover_with(&src, Detail::Files).await.unwrap();
        let spec = tmp.path().to_str().unwrap();
        let (site, problems) = build_site(spec, &src, &found, SiteRequest::default())
            .await
            .unwrap();
        assert_eq!(site.skills().len(), 2);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let search = MatcherSearch::new(&found);
        let (names, total) = search.search(&site, "flatten pdf", 0, 10).unwrap();
        assert_eq!((names[0].as_str(), total), ("pdf-forms", 1));
        let (names, total) = search.search(&site, "spreadsheets", 0, 0).unwrap();
        assert!(names.is_empty() && total == 1, "offset and limit apply");
    }

    #[test]
    fn publishing_needs_a_registry_file_and_migrates_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap();
        assert!(matches!(
            publishing_registry(dir),
            Err(PublishingSourceError::NotRegistry {
                what: "is a directory",
                ..
            })
        ));
        let missing = tmp.path().join("team.db");
        assert!(matches!(
            publishing_registry(missing.to_str().unwrap()),
            Err(PublishingSourceError::NotCreated(p)) if p == missing
        ));
        assert!(matches!(
            publishing_registry(tmp.path().join("x.tar.gz").to_str().unwrap()),
            Err(PublishingSourceError::NotRegistry {
                what: "does not exist",
                ..
            })
        ));
        let text = tmp.path().join("notes.txt");
        std::fs::write(&text, "hello").unwrap();
        assert!(matches!(
            publishing_registry(text.to_str().unwrap()),
            Err(PublishingSourceError::NotRegistry {
                what: "is not a registry file",
                ..
            })
        ));
        Registry::init(&missing).unwrap();
        let spec = format!("sqlite:{}", missing.display());
        assert_eq!(publishing_registry(&spec).unwrap(), missing);
    }

    #[test]
    fn the_catalog_is_the_authority_of_the_url() {
        assert_eq!(
            catalog_of_url("https://User@Skills.Example.com:8443/x?q#f").as_deref(),
            Some("skills.example.com:8443")
        );
        assert_eq!(catalog_of_url("http://h/").as_deref(), Some("h"));
        assert_eq!(catalog_of_url("skills.example.com"), None);
        assert_eq!(catalog_of_url("https:///path"), None);
        assert_eq!(registry_path("sqlite:a.db"), PathBuf::from("a.db"));
    }

    #[test]
    fn index_signing_names_the_host_and_reads_the_key() {
        use crate::IndexSigning;
        use std::time::Duration;
        let tmp = tempfile::tempdir().unwrap();
        let key = tmp.path().join("k.key");
        let day = Duration::from_secs(86_400);
        assert!(matches!(
            IndexSigning::from_key_file("https://h/", &key, None, day),
            Err(IndexSigningError::ReadKey { .. })
        ));
        std::fs::write(&key, "secret").unwrap();
        assert!(matches!(
            IndexSigning::from_key_file("h", &key, None, day),
            Err(IndexSigningError::NotUrl(_))
        ));
        assert!(matches!(
            IndexSigning::from_key_file("https://h/", &key, None, Duration::ZERO),
            Err(IndexSigningError::NoTime)
        ));
        let s =
            IndexSigning::from_key_file("https://H:8443/c/", &key, Some("pw".into()), day).unwrap();
        assert_eq!(
            (s.catalog.as_str(), s.secret_key.as_str(), s.valid_for),
            ("h:8443", "secret", day)
        );
    }
}
