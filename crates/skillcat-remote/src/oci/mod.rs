//! OCI source: one skill in one repository of an OCI registry, read through the verified cache.
//!
//! ```text
//! OciSource::new("oci://ghcr.io/org/skills/pdf:1.2.0", opts)      sync, no I/O
//!   list()   GET /v2/org/skills/pdf/manifests/1.2.0 (an index: the manifest it lists); no
//!            tag: `latest`, and without one the highest version tag (GET …/tags/list)
//!            → the layout (ToolHive, Skillet, Agent Skills) → its one tar+gzip layer
//!            → blob by digest: cache hit (hashed again), else GET, verify, open, then cache
//!            roots = [""] (a repository holds one skill; tag = version)
//!   record() the version annotation, and the minisign signatures attached as referrers
//!            (GET /v2/…/referrers/<digest>, else the tag sha256-<hex>)
//! location("SKILL.md") = "oci://ghcr.io/org/skills/pdf:1.2.0#SKILL.md"
//! ```
//!
//! Manifests, layers and signatures are content: they go into the HTTP source's cache as blobs
//! named by their sha256 (which is their OCI digest), after they were verified, and are hashed
//! again when read. A tag is a mutable name: its record (the HTTP source's records) keeps the
//! digest it last resolved to. With `offline`, a tag is resolved from that record and the skill
//! is served from the cache with a warning; online, a registry that cannot be reached is
//! answered the same way when the skill is cached.

pub mod auth;
pub mod client;
pub mod layout;
pub mod reference;

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::OnceCell;

use self::client::{Client, ClientOptions};
use self::layout::{Annotated, Document, Layout, Manifest};
pub use self::reference::Reference;
use super::http::artifact::Held;
use super::http::cache::{self, Cache, Read, Record};
use super::http::{HttpOptions, blocking};
use crate::digest::{parse_digest, sha256};
use crate::error::{Error, Result};
use crate::options::RemoteOptions;
use crate::path::FileEntry;
use crate::source::{RootRecord, Source, SourceId};

/// The largest signature referrer layer read (a `.minisig` is under 1 KiB).
const MAX_SIGNATURE: u64 = 64 << 10;

/// How an [`OciSource`] is opened.
#[derive(Debug, Clone, Default)]
pub struct OciOptions {
    /// Timeouts, limits, cache directory, offline (the HTTP source's options).
    pub http: HttpOptions,
    /// Speak plain HTTP to a registry that is not on this machine.
    pub allow_insecure: bool,
    /// The Docker configuration credentials are looked up in (`None`: none is read).
    pub docker_config: Option<PathBuf>,
}

impl From<&RemoteOptions> for OciOptions {
    fn from(o: &RemoteOptions) -> Self {
        OciOptions {
            http: HttpOptions::from(o),
            allow_insecure: o.allow_insecure,
            docker_config: o.docker_config.clone(),
        }
    }
}

/// A skill stored as an OCI artifact.
pub struct OciSource {
    reference: Reference,
    shown: String,
    opts: OciOptions,
    cache_dir: Option<PathBuf>,
    client: OnceCell<Client>,
    cache: OnceCell<Option<Arc<Cache>>>,
    loaded: OnceCell<Loaded>,
    signatures: OnceCell<Vec<String>>,
    warnings: Mutex<Vec<String>>,
}

/// The skill, verified and held in memory.
struct Loaded {
    /// The digest of the skill's image manifest (inside an index, the one it points to).
    manifest_digest: String,
    /// What the tag (or digest) named: the manifest, or the index holding it.
    top_digest: String,
    layout: Layout,
    annotated: Annotated,
    /// The layer's files, held by the core's archive source.
    held: Held,
}

impl fmt::Debug for OciSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OciSource")
            .field("reference", &self.shown)
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.opts.http.offline)
            .finish()
    }
}

impl OciSource {
    /// A source for `oci://HOST[:PORT]/REPO[:TAG|@sha256:…]`. Checks the reference and nothing
    /// else: the network is first used by [`list`](Source::list).
    pub fn new(text: &str, opts: OciOptions) -> Result<OciSource> {
        let reference = Reference::parse(text)?;
        let cache_dir = opts.http.cache_dir.clone();
        Ok(OciSource {
            shown: reference.to_string(),
            reference,
            opts,
            cache_dir,
            client: OnceCell::new(),
            cache: OnceCell::new(),
            loaded: OnceCell::new(),
            signatures: OnceCell::new(),
            warnings: Mutex::new(Vec::new()),
        })
    }

    /// The reference as given.
    pub fn reference(&self) -> &Reference {
        &self.reference
    }

    /// The digest the reference resolved to (the manifest, or the index holding it): what an
    /// install pins. Reads the skill on first use.
    pub async fn resolved_digest(&self) -> Result<String> {
        Ok(self.loaded().await?.top_digest.clone())
    }

    /// The digest of the skill's image manifest (what signatures refer to).
    pub async fn manifest_digest(&self) -> Result<String> {
        Ok(self.loaded().await?.manifest_digest.clone())
    }

    /// The layout the skill was found in.
    pub async fn layout(&self) -> Result<Layout> {
        Ok(self.loaded().await?.layout)
    }

    /// Requests made to the registry so far.
    pub fn requests(&self) -> u64 {
        self.client.get().map_or(0, Client::requests)
    }

    fn warn(&self, w: String) {
        let mut ws = self.warnings.lock().unwrap_or_else(PoisonError::into_inner);
        if !ws.contains(&w) {
            ws.push(w);
        }
    }

    fn client(&self) -> Result<&Client> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let c = Client::new(
            &self.reference,
            &ClientOptions {
                http: self.opts.http.clone(),
                allow_insecure: self.opts.allow_insecure,
                push: false,
                docker_config: self.opts.docker_config.clone(),
            },
        )?;
        if let Some(why) = c.unbound_credentials() {
            self.warn(format!("{}: {why}", self.shown));
        }
        let _ = self.client.set(c);
        Ok(self.client.get().expect("just set"))
    }

    async fn cache(&self) -> Result<Option<Arc<Cache>>> {
        let cache = self
            .cache
            .get_or_try_init(|| cache::open_off_runtime(self.cache_dir.clone(), |w| self.warn(w)))
            .await?;
        Ok(cache.clone())
    }

    /// The record key of the tag: the reference without credentials (it has none) or digest.
    /// A reference without a tag keeps what it resolved to under `latest` (the highest version
    /// tag when the repository has no `latest`).
    fn tag_key(&self) -> String {
        format!(
            "oci://{}/{}:{}",
            self.reference.registry,
            self.reference.repository,
            self.reference
                .tag
                .as_deref()
                .unwrap_or(reference::DEFAULT_TAG)
        )
    }

    fn referrers_key(&self, digest: &str) -> String {
        format!(
            "oci://{}/{}@{digest}#referrers",
            self.reference.registry, self.reference.repository
        )
    }

    async fn loaded(&self) -> Result<&Loaded> {
        self.loaded
            .get_or_try_init(|| async {
                if self.opts.http.offline {
                    let l = self.load(Mode::Offline).await?;
                    self.warn(format!(
                        "{}: --offline: serving the cached copy (manifest {})",
                        self.shown, l.top_digest
                    ));
                    return Ok(l);
                }
                match self.load(Mode::Online).await {
                    Err(e) if e.is_unreachable() => match self.load(Mode::Offline).await {
                        Ok(l) => {
                            self.warn(format!(
                                "{}: the registry could not be reached ({e}); serving the cached copy (manifest {})",
                                self.shown, l.top_digest
                            ));
                            Ok(l)
                        }
                        Err(_) => Err(e),
                    },
                    other => other,
                }
            })
            .await
    }

    /// A manifest or index by digest: from the cache (verified), else fetched (verified) and
    /// stored.
    async fn document(&self, digest: &str, mode: Mode) -> Result<(Document, Bytes)> {
        let bytes = self
            .content(digest, layout::MAX_MANIFEST, mode, Fetch::Manifest)
            .await?;
        let doc = layout::parse(&bytes, None)
            .map_err(|e| Error::Invalid(format!("{}: manifest {digest}: {e}", self.shown)))?;
        Ok((doc, bytes))
    }

    /// Content by digest through the cache. Offline, a miss is an error saying so.
    async fn content(&self, digest: &str, limit: u64, mode: Mode, how: Fetch) -> Result<Bytes> {
        let hash = parse_digest(digest).ok_or_else(|| {
            Error::Invalid(format!("{}: {digest:?} is not a sha256 digest", self.shown))
        })?;
        let cache = self.cache().await?;
        if let Some(c) = cache.clone() {
            match blocking(move || c.read_blob(&hash)).await? {
                Read::Hit(b) => return Ok(b),
                Read::Corrupt => self.warn(format!(
                    "{}: the cached copy of {digest} was corrupt; it was removed",
                    self.shown
                )),
                Read::Miss => {}
            }
        }
        if mode == Mode::Offline {
            return Err(self.not_cached(digest));
        }
        let got = match how {
            Fetch::Manifest => self.client()?.manifest(digest).await?,
            Fetch::Blob => self.client()?.blob(digest, limit).await?,
        };
        if got.bytes.len() as u64 > limit {
            return Err(Error::TooLarge {
                path: format!("{}: {digest}", self.shown),
                size: got.bytes.len() as u64,
                limit,
            });
        }
        Ok(got.bytes)
    }

    /// Stores verified content.
    async fn store(&self, bytes: Bytes) -> Result<()> {
        if let Some(c) = self.cache().await? {
            let hash = sha256(&bytes);
            blocking(move || c.write_blob(&hash, &bytes)).await?;
        }
        Ok(())
    }

    /// Records that the mutable name `key` (a tag, a referrers listing) stands for the content
    /// `digest` now.
    async fn point(&self, key: String, digest: String) -> Result<()> {
        let Some(c) = self.cache().await? else {
            return Ok(());
        };
        let rec = Record {
            url: key.clone(),
            etag: None,
            last_modified: None,
            max_age: None,
            no_cache: true,
            fetched_at: cache::now(),
            body: digest,
            final_url: None,
        };
        blocking(move || c.write_record(&key, &rec)).await
    }

    fn not_cached(&self, what: &str) -> Error {
        Error::NotFound(format!(
            "{}: {what} is not cached{}, and --offline forbids the network",
            self.shown,
            self.cache_dir
                .as_ref()
                .map_or(String::new(), |d| format!(" in {}", d.display()))
        ))
    }

    /// What the reference names now, online: its tag; without one, `latest`, and when the
    /// repository has no `latest`, its highest version tag (said in a warning).
    async fn resolve_online(&self) -> Result<client::Received> {
        let client = self.client()?;
        let wanted = self.reference.manifest_ref();
        let missing = match client.manifest(wanted).await {
            Err(Error::NotFound(m)) if self.reference.tag.is_none() => m,
            other => return other,
        };
        let tags = match client.tags().await {
            Ok(tags) => tags,
            Err(Error::NotFound(_)) => {
                return Err(Error::NotFound(format!(
                    "{}: the registry has no such repository, or it holds no tag {}: {missing}",
                    self.shown,
                    reference::DEFAULT_TAG
                )));
            }
            Err(e) => return Err(e),
        };
        let Some(highest) = reference::highest_version(tags.iter().map(String::as_str)) else {
            return Err(Error::NotFound(format!(
                "{}: no tag {} and no version tag to read instead ({}); name a tag \
                 (oci://HOST/REPO:TAG)",
                self.shown,
                reference::DEFAULT_TAG,
                if tags.is_empty() {
                    "the repository lists no tags".to_string()
                } else {
                    format!("its tags: {}", tags.join(", "))
                }
            )));
        };
        let got = client.manifest(highest).await?;
        self.warn(format!(
            "{}: no tag {}; reading {highest}, its highest version tag (`skillcat push` moves \
             {} to each version it pushes)",
            self.shown,
            reference::DEFAULT_TAG,
            reference::DEFAULT_TAG
        ));
        Ok(got)
    }

    /// Resolves the reference, reads the layout, fetches and checks the layer, and stores what
    /// was fetched only once all of it checked out.
    async fn load(&self, mode: Mode) -> Result<Loaded> {
        let mut fetched: Vec<Bytes> = Vec::new();
        let top_digest = match (&self.reference.digest, mode) {
            (Some(d), _) => d.clone(),
            (None, Mode::Offline) => {
                let key = self.tag_key();
                let cache = self
                    .cache()
                    .await?
                    .ok_or_else(|| self.not_cached("the tag"))?;
                let rec = blocking(move || Ok(cache.read_record(&key)))
                    .await?
                    .ok_or_else(|| self.not_cached("the tag"))?;
                rec.body
            }
            (None, Mode::Online) => {
                let got = self.resolve_online().await?;
                let d = got.digest.clone();
                fetched.push(got.bytes);
                d
            }
        };
        // The document the tag named (fetched just now, or by digest).
        let top = match fetched.first() {
            Some(b) => b.clone(),
            None => {
                self.content(&top_digest, layout::MAX_MANIFEST, mode, Fetch::Manifest)
                    .await?
            }
        };
        let doc = layout::parse(&top, None)
            .map_err(|e| Error::Invalid(format!("{}: {e}", self.shown)))?;
        let (manifest_digest, manifest): (String, Manifest) = match doc {
            Document::Manifest(m) => (top_digest.clone(), *m),
            Document::Index(index) => {
                let pick = layout::pick_from_index(&index)
                    .map_err(|e| Error::Invalid(format!("{}: {e}", self.shown)))?
                    .clone();
                let (doc, bytes) = self.document(&pick.digest, mode).await?;
                let Document::Manifest(m) = doc else {
                    return Err(Error::Invalid(format!(
                        "{}: the index points to {}, another index (one level is read)",
                        self.shown, pick.digest
                    )));
                };
                fetched.push(bytes);
                (pick.digest, *m)
            }
        };
        let skill = layout::skill_layout(&manifest)
            .map_err(|e| Error::Invalid(format!("{}: {e}", self.shown)))?;
        let limit = self.opts.http.limits.max_compressed;
        if skill.layer.size > limit {
            return Err(Error::TooLarge {
                path: format!("{}: layer {}", self.shown, skill.layer.digest),
                size: skill.layer.size,
                limit,
            });
        }
        let layer = self
            .content(&skill.layer.digest, skill.layer.size, mode, Fetch::Blob)
            .await?;
        if layer.len() as u64 != skill.layer.size {
            return Err(Error::Invalid(format!(
                "{}: layer {} is {} bytes; the manifest says {}",
                self.shown,
                skill.layer.digest,
                layer.len(),
                skill.layer.size
            )));
        }
        let url = reqwest::Url::parse(&self.shown)
            .map_err(|e| Error::other(format!("{}: not a URL", self.shown), e))?;
        let limits = self.opts.http.limits;
        let layer_bytes = layer.clone();
        // The layer was checked against its digest (fetched, or read back from the cache) by
        // `content`: the archive source is built from the bytes the manifest names.
        let layer_hash = parse_digest(&skill.layer.digest).ok_or_else(|| {
            Error::Invalid(format!(
                "{}: {:?} is not a sha256 digest",
                self.shown, skill.layer.digest
            ))
        })?;
        let held = blocking(move || {
            Held::archive(
                &layer_bytes,
                layer_hash,
                Some("application/gzip"),
                &url,
                limits,
            )
        })
        .await?;
        let annotated = layout::annotated(&manifest);
        if let Some(want) = &annotated.skill_digest {
            let got = held.skill_digest();
            if &got != want {
                return Err(Error::DigestMismatch {
                    what: format!("{}: the skill digest of the layer's files", self.shown),
                    expected: want.clone(),
                    actual: got,
                });
            }
        }
        // Everything checked: what came over the network goes into the cache now.
        if mode == Mode::Online {
            fetched.push(layer);
            for b in fetched {
                self.store(b).await?;
            }
            if self.reference.digest.is_none() {
                self.point(self.tag_key(), top_digest.clone()).await?;
            }
        }
        Ok(Loaded {
            manifest_digest,
            top_digest,
            layout: skill.layout,
            annotated,
            held,
        })
    }

    /// The `.minisig` texts attached to the skill's manifest as skillcat signature referrers.
    pub async fn signatures(&self) -> Result<Vec<String>> {
        self.signatures
            .get_or_try_init(|| async {
                let digest = self.manifest_digest().await?;
                let offline = self.opts.http.offline;
                if offline {
                    self.referrers(&digest, Mode::Offline).await
                } else {
                    match self.referrers(&digest, Mode::Online).await {
                        Err(e) if e.is_unreachable() => {
                            self.referrers(&digest, Mode::Offline).await.map_err(|_| e)
                        }
                        other => other,
                    }
                }
            })
            .await
            .cloned()
    }

    async fn referrers(&self, digest: &str, mode: Mode) -> Result<Vec<String>> {
        let key = self.referrers_key(digest);
        let listing: Option<Bytes> = match mode {
            Mode::Offline => {
                let Some(cache) = self.cache().await? else {
                    return Ok(Vec::new());
                };
                let k = key.clone();
                match blocking(move || Ok(cache.read_record(&k))).await? {
                    Some(rec) => Some(
                        self.content(&rec.body, layout::MAX_MANIFEST, mode, Fetch::Manifest)
                            .await?,
                    ),
                    // Never looked up online: no signature is known.
                    None => None,
                }
            }
            Mode::Online => {
                let client = self.client()?;
                match client.referrers_api(digest).await? {
                    Some(r) => Some(r.bytes),
                    None => match client.manifest(&layout::fallback_tag(digest)).await {
                        Ok(r) => Some(r.bytes),
                        Err(Error::NotFound(_)) => None,
                        Err(e) => return Err(e),
                    },
                }
            }
        };
        let index = match &listing {
            Some(bytes) => match layout::parse(bytes, None) {
                Ok(Document::Index(i)) => i,
                Ok(Document::Manifest(_)) | Err(_) => {
                    self.warn(format!(
                        "{}: the referrers of {digest} are not an image index; no signature read",
                        self.shown
                    ));
                    layout::Index::new()
                }
            },
            None => layout::Index::new(),
        };
        let mut out = Vec::new();
        for d in &index.manifests {
            if d.artifact_type.as_deref() != Some(layout::SIGNATURE_ARTIFACT) {
                continue;
            }
            let (doc, bytes) = self.document(&d.digest, mode).await?;
            let Document::Manifest(m) = doc else { continue };
            let refers = m.subject.as_ref().is_some_and(|s| s.digest == digest);
            let layer = m
                .layers
                .iter()
                .find(|l| l.media_type == layout::MINISIG_LAYER);
            let (true, Some(layer)) = (refers, layer) else {
                self.warn(format!(
                    "{}: referrer {} is not a signature of {digest}; ignored",
                    self.shown, d.digest
                ));
                continue;
            };
            let sig = self
                .content(
                    &layer.digest,
                    MAX_SIGNATURE.min(layer.size),
                    mode,
                    Fetch::Blob,
                )
                .await?;
            let Ok(text) = std::str::from_utf8(&sig) else {
                self.warn(format!(
                    "{}: signature {} is not text; ignored",
                    self.shown, layer.digest
                ));
                continue;
            };
            out.push(text.to_string());
            if mode == Mode::Online {
                self.store(bytes).await?;
                self.store(sig).await?;
            }
        }
        if mode == Mode::Online
            && let Some(bytes) = listing
        {
            let body = crate::digest::sha256_digest(&bytes);
            self.store(bytes).await?;
            self.point(key, body).await?;
        }
        Ok(out)
    }
}

/// Whether the network may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Online,
    Offline,
}

/// How content is requested when it is not cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetch {
    Manifest,
    Blob,
}

#[async_trait]
impl Source for OciSource {
    async fn list(&self) -> Result<Vec<String>> {
        self.loaded().await?;
        Ok(vec![String::new()])
    }

    async fn files(&self, root: &str) -> Result<Vec<FileEntry>> {
        if !root.is_empty() {
            return Err(Error::NotFound(self.location(root)));
        }
        self.loaded().await?.held.list().await
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        crate::source::check_path(path)?;
        self.loaded()
            .await?
            .held
            .read(path)
            .await?
            .ok_or_else(|| Error::NotFound(self.location(path)))
    }

    fn location(&self, path: &str) -> String {
        format!("{}#{path}", self.shown)
    }

    /// The version the manifest is annotated with, and the signatures attached to it.
    async fn record(&self, root: &str) -> Result<RootRecord> {
        if !root.is_empty() {
            return Err(Error::NotFound(self.location(root)));
        }
        let version = self.loaded().await?.annotated.version.clone();
        Ok(RootRecord::new(version, self.signatures().await?))
    }

    /// The digest the reference resolved to (the manifest, or the index holding it): reads
    /// the skill on first use.
    async fn id(&self) -> Result<SourceId> {
        Ok(SourceId::Oci {
            digest: self.resolved_digest().await?,
        })
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
