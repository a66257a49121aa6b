//! The site model: every path `serve` answers and `export` writes, built once from a source.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use serde_json::{Value, json};

use crate::digest::{Manifest, sha256};
use crate::document::{Skill, ValidateOptions};
use crate::error::{Error, Result};
use crate::pack::{PackEntry, write_tar_gz};
use crate::path::join_path;
use crate::registry::store::Store;
use crate::source::DISCOVERY_SCHEMA_V0_2 as SCHEMA_V0_2;
use crate::source::{Discovery, Source, discover};
use crate::web::WebOptions;

/// Path of the RFC v0.2.0 index.
pub const AGENT_SKILLS_INDEX: &str = ".well-known/agent-skills/index.json";
/// Path of the legacy v0.1 index.
pub const SKILLS_INDEX: &str = ".well-known/skills/index.json";
/// `Cache-Control` of content-addressed paths (RFC 8246).
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// `Cache-Control` of paths whose content may change (indexes, files by name).
pub const REVALIDATE: &str = "no-cache";

/// How many skills are read and packed at once.
const CONCURRENCY: usize = 8;

/// One path of the site.
#[derive(Clone, PartialEq, Eq)]
pub struct SiteFile {
    /// The bytes served.
    pub body: Bytes,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its strong `ETag` (quoted sha256 hex of the body; a registry's indexes name the change
    /// feed position first, [`Site::set_seq`]).
    pub etag: String,
    /// Its `Cache-Control`: [`IMMUTABLE`] or [`REVALIDATE`].
    pub cache_control: &'static str,
}

impl fmt::Debug for SiteFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SiteFile")
            .field("len", &self.body.len())
            .field("content_type", &self.content_type)
            .field("etag", &self.etag)
            .finish()
    }
}

/// A detached signature found for a skill, and the version it was signed as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The version the signed statement names.
    pub version: String,
    /// The `.minisig` text.
    pub signature: String,
}

/// Finds the detached signature of a skill (beside an archive, in a registry, …).
pub trait SignatureLookup: Send + Sync {
    /// The signature of the skill `name` whose files give `skill_digest`, if there is one.
    fn lookup(&self, name: &str, skill_digest: &str) -> Option<Signed>;
}

/// Finds the yanked versions a source keeps (a registry's): a served registry lists them
/// apart, marked yanked, so that `NAME@VERSION` still reads one; a bare name never does.
pub trait YankedLookup: Send + Sync {
    /// The roots (`NAME@VERSION`) of the yanked versions, of the skill `name` alone when given,
    /// by name and then version. Blocking.
    fn yanked(&self, name: Option<&str>) -> Result<Vec<String>>;
}

/// The yanked versions of a registry (a file or a database).
#[derive(Debug, Clone)]
pub struct RegistryYanked(pub Arc<dyn Store>);

impl YankedLookup for RegistryYanked {
    fn yanked(&self, name: Option<&str>) -> Result<Vec<String>> {
        Ok(block_on(self.0.yanked(name))?
            .into_iter()
            .map(|v| format!("{}@{}", v.name, v.version))
            .collect())
    }
}

/// One version a source keeps of a skill, as its catalog pages list it (a registry's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionMeta {
    /// The skill's name.
    pub name: String,
    /// The version.
    pub version: String,
    /// When it was published: Unix seconds and RFC 3339 UTC.
    pub published: Option<(i64, String)>,
    /// The name of the token that published it, where the audit log records one (a
    /// publish over HTTP; a file's own `registry publish` records none).
    pub published_by: Option<String>,
    /// Whether it is yanked.
    pub yanked: bool,
    /// Whether it is the skill's latest (what a bare name reads).
    pub latest: bool,
    /// What the audit found when it was published (a JSON array), when that was recorded.
    pub findings: Option<Value>,
    /// Its manifest as the source keeps it, for a version that is neither the latest nor
    /// yanked (its page lists its files from it; they are served in its archive alone).
    pub manifest: Option<Manifest>,
    /// The detached signatures kept for it (the same versions as `manifest`).
    pub signatures: Vec<String>,
}

/// Finds every version a source keeps (a registry's), for the catalog pages: each version has
/// a page; one that is neither the latest nor yanked gets it from its manifest and document
/// alone (its files are not held), and its archive is packed when it is asked for.
pub trait VersionLookup: Send + Sync {
    /// Every version (of the skill `name` alone when given), by name and then version.
    /// Blocking.
    fn versions(&self, name: Option<&str>) -> Result<Vec<VersionMeta>>;

    /// The reproducible archive of `name@version`, packed from the files the source keeps
    /// (`None` when it keeps no such version, or cannot give its files). Blocking. A version
    /// once published stays served this way, without the site holding its bytes.
    fn archive(&self, name: &str, version: &str) -> Result<Option<Bytes>> {
        let _ = (name, version);
        Ok(None)
    }
}

/// The versions of a registry (a file or a database): dates, yanked marks and recorded audit
/// findings.
#[derive(Debug, Clone)]
pub struct RegistryVersions(pub Arc<dyn Store>);

impl VersionLookup for RegistryVersions {
    fn versions(&self, name: Option<&str>) -> Result<Vec<VersionMeta>> {
        let registry = &self.0;
        let mut publishers = block_on(registry.publishers(name))?;
        let mut out = Vec::new();
        for v in block_on(registry.all_versions(name))? {
            let findings = block_on(registry.findings(&v.name, &v.version))?
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .filter(Value::is_array);
            let (manifest, signatures) = if v.latest || v.yanked {
                (None, Vec::new())
            } else {
                match block_on(registry.get(&v.name, &v.version))? {
                    Some(r) => (
                        Some(r.manifest),
                        r.signatures.into_iter().map(|s| s.text).collect(),
                    ),
                    None => (None, Vec::new()),
                }
            };
            out.push(VersionMeta {
                manifest,
                signatures,
                published: Some((v.published_at, v.published)),
                published_by: publishers.remove(&(v.name.clone(), v.version.clone())),
                yanked: v.yanked,
                latest: v.latest,
                findings,
                name: v.name,
                version: v.version,
            });
        }
        Ok(out)
    }

    fn archive(&self, name: &str, version: &str) -> Result<Option<Bytes>> {
        let Some(files) = block_on(self.0.version_contents(name, version))? else {
            return Ok(None);
        };
        let entries: Vec<PackEntry> = files
            .into_iter()
            .map(|(f, bytes)| PackEntry {
                path: f.path,
                bytes,
                executable: f.executable,
            })
            .collect();
        let mut archive = Vec::new();
        write_tar_gz(&entries, &mut archive)
            .map_err(|e| Error::io(format!("{name}@{version}"), e))?;
        Ok(Some(Bytes::from(archive)))
    }
}

/// Runs a registry call from the blocking code the lookups are (each is called in
/// `spawn_blocking`, or outside any runtime): on the runtime's handle when there is one,
/// else on a runtime of its own.
pub(crate) fn block_on<T>(
    f: impl std::future::Future<Output = crate::registry::Result<T>>,
) -> Result<T> {
    let done = match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.block_on(f),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io("a registry runtime", e))?
            .block_on(f),
    };
    Ok(done?)
}

/// Where a site's older versions' archives are packed from when asked for (a registry).
#[derive(Clone)]
struct Archives(Arc<dyn VersionLookup>);

impl fmt::Debug for Archives {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Archives")
    }
}

/// How a site is built.
#[derive(Clone, Default)]
pub struct SiteOptions {
    /// What counts as valid (only valid skills are served).
    pub validate: ValidateOptions,
    /// Where signatures come from (none by default).
    pub signatures: Option<Arc<dyn SignatureLookup>>,
    /// Where the source's yanked versions come from (none by default: a source that keeps one
    /// version of each skill has none).
    pub yanked: Option<Arc<dyn YankedLookup>>,
    /// Where the source's versions come from, with their dates and audit findings (none by
    /// default: a page then shows the one version served).
    pub versions: Option<Arc<dyn VersionLookup>>,
    /// How the catalog's pages are made: the site's address, the keyring signatures are
    /// checked against, the search.
    pub web: WebOptions,
    /// Audit each skill for its page (`true` by default in [`SiteOptions::new`]); a version
    /// whose findings were recorded at publishing shows those instead.
    pub audit: bool,
}

impl SiteOptions {
    /// The defaults, with the audit of every skill for its page on.
    pub fn new() -> SiteOptions {
        SiteOptions {
            audit: true,
            ..SiteOptions::default()
        }
    }
}

impl fmt::Debug for SiteOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SiteOptions")
            .field("validate", &self.validate)
            .field("signatures", &self.signatures.is_some())
            .field("yanked", &self.yanked.is_some())
            .field("versions", &self.versions.is_some())
            .field("web", &self.web)
            .field("audit", &self.audit)
            .finish()
    }
}

/// A skill that was not served, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteProblem {
    /// Where it is in the source.
    pub location: String,
    /// Why it is left out.
    pub message: String,
}

impl fmt::Display for SiteProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// One served skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSkill {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its version (`metadata.version`, or the signed version), when known.
    pub version: Option<String>,
    /// Where it came from in the source.
    pub location: String,
    /// The reproducible `.tar.gz` of its files (one skill at the archive root).
    pub archive: Bytes,
    /// `sha256:` of [`archive`](Self::archive): the index entry's `digest`.
    pub archive_digest: String,
    /// Its manifest (skill digest, every file's digest, size and exec bit).
    pub manifest: Manifest,
    /// Every file's bytes, by path (the manifest's order).
    pub files: Vec<Bytes>,
    /// Its detached signature, when one was found.
    pub signature: Option<String>,
    /// What its catalog page shows beyond its files.
    pub page: PageInfo,
}

/// What a version's catalog page shows beyond its files and document: filled in as the site
/// is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageInfo {
    /// When it was published (Unix seconds, RFC 3339 UTC), where the source keeps that.
    pub published: Option<(i64, String)>,
    /// The name of the token that published it, where the source records one (a registry's
    /// audit log).
    pub published_by: Option<String>,
    /// Whether it is yanked.
    pub yanked: bool,
    /// The audit's findings (a JSON array of `Finding`s): recorded at publishing, else the
    /// audit run as the site was built; `None` when neither.
    pub findings: Option<Value>,
    /// Whether [`findings`](Self::findings) were recorded when the version was published.
    pub findings_recorded: bool,
    /// Every detached signature the source keeps for it (the first is [`SiteSkill::signature`]).
    pub signatures: Vec<String>,
    /// Its script tools, as `skillcat tools --format json` lists them.
    pub tools: Vec<Value>,
    /// Why its scripts are not tools, when their declaration is refused.
    pub tools_error: Option<String>,
    /// The guest (JavaScript) tools it declares: name, description, parameters.
    pub guest_tools: Vec<Value>,
    /// Whether its files are not held (an older version: only its document is, read for its
    /// page; the others are listed from its manifest, without views).
    pub files_withheld: bool,
    /// Its declarations when it has a sidecar `agents/skillcat.yaml`: the frontmatter with the
    /// sidecar's keys (`Skill::declarations`), for the capabilities the page shows.
    pub declared: Option<crate::document::Map>,
}

/// A page made when it is first asked for: everything but the SKILL.md body is written as
/// the site is built, the body (untrusted Markdown, the one costly part) is rendered on the
/// first read, within the renderer's limits and through its cache. `serve` renders it in the
/// blocking pool ([`Site::unrendered`]), so building or updating a site, listening and
/// answering a publish never wait for a page.
pub(crate) struct LazyPage {
    make: Box<dyn Fn() -> String + Send + Sync>,
    file: OnceLock<SiteFile>,
}

impl LazyPage {
    /// A page whose HTML `make` gives (called once, on the first read).
    pub(crate) fn new(make: impl Fn() -> String + Send + Sync + 'static) -> LazyPage {
        LazyPage {
            make: Box::new(make),
            file: OnceLock::new(),
        }
    }

    /// The page, rendered now if it was not yet.
    pub(crate) fn file(&self) -> &SiteFile {
        self.file.get_or_init(|| {
            let body = Bytes::from((self.make)());
            SiteFile {
                etag: format!("\"{}\"", crate::digest::to_hex(sha256(&body))),
                body,
                content_type: crate::web::HTML,
                cache_control: REVALIDATE,
            }
        })
    }

    fn rendered(&self) -> bool {
        self.file.get().is_some()
    }
}

impl fmt::Debug for LazyPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyPage")
            .field("rendered", &self.rendered())
            .finish()
    }
}

/// Everything a site serves, by path (no leading `/`, not percent-encoded).
#[derive(Debug, Clone, Default)]
pub struct Site {
    resources: BTreeMap<String, SiteFile>,
    /// The pages rendered on their first read (a path is in one map or the other).
    lazy: BTreeMap<String, Arc<LazyPage>>,
    skills: Vec<SiteSkill>,
    /// Each skill's entry in the v0.2.0 and in the v0.1 index, in the order of `skills`.
    entries: Vec<(Value, Value)>,
    /// The yanked versions served (a registry's), by name and then version: each only as its
    /// archive, listed under the v0.2.0 index's `skillcat.yanked`.
    yanked: Vec<SiteSkill>,
    /// Their v0.2.0 index entries (`"yanked": true`), in the order of `yanked`.
    yanked_entries: Vec<Value>,
    /// The versions that are neither a skill's latest nor yanked (a registry's older ones),
    /// by name and then version: their manifest and document alone, for their pages, and
    /// their archive's digest (the archive itself is packed when it is asked for).
    older: Vec<SiteSkill>,
    /// Where the older versions' archives are packed from.
    archives: Option<Archives>,
    /// How the pages are made.
    web: WebOptions,
    /// The registry's change feed position the site holds every change up to, when the source
    /// is a registry with a feed: part of the indexes' `ETag`s.
    seq: Option<i64>,
}

/// Why `skill` is not served, when it does not validate.
fn invalid(skill: &Skill, opts: &SiteOptions) -> Option<SiteProblem> {
    let faults = skill.validate(&opts.validate);
    if faults.is_empty() {
        return None;
    }
    let why: Vec<String> = faults
        .iter()
        .map(|f| format!("{} [{}]", f.message(), f.kind()))
        .collect();
    Some(SiteProblem {
        location: skill.location().to_string(),
        message: format!("not served (invalid): {}", why.join("; ")),
    })
}

/// Where each file of a skill is served by name.
const BY_NAME: [&str; 2] = [".well-known/skills", ".well-known/agent-skills"];

/// A yanked version's entry: its v0.2.0 entry, marked.
fn yanked_entry(s: &SiteSkill) -> Value {
    let mut entry = index_entries(s).0;
    entry
        .as_object_mut()
        .expect("an object")
        .insert("yanked".into(), Value::Bool(true));
    entry
}

/// A skill's entries in the v0.2.0 and the v0.1 index.
fn index_entries(s: &SiteSkill) -> (Value, Value) {
    let archive_hex = s.archive_digest.trim_start_matches("sha256:");
    let paths: Vec<&str> = s.manifest.files.iter().map(|f| f.path.as_str()).collect();
    let mut entry = json!({
        "name": s.name,
        "type": "archive",
        "description": s.description,
        "url": format!("../../blobs/sha256/{archive_hex}"),
        "digest": s.archive_digest,
    });
    let obj = entry.as_object_mut().expect("an object");
    if let Some(v) = &s.version {
        obj.insert("version".into(), Value::from(v.as_str()));
    }
    obj.insert("files".into(), json!(paths));
    obj.insert(
        "skillcat".into(),
        json!({
            "skill_digest": s.manifest.digest,
            "files": s.manifest.files.iter().map(|f| json!({
                "path": f.path, "digest": f.digest, "size": f.size, "executable": f.executable
            })).collect::<Vec<_>>(),
            "signature": s.signature,
        }),
    );
    let v1 = json!({"name": s.name, "description": s.description, "files": paths});
    (entry, v1)
}

impl Site {
    /// Reads every skill of `source` and builds the site from the valid ones; the others are
    /// returned as problems, never silently dropped.
    pub async fn build(
        source: &dyn Source,
        opts: &SiteOptions,
    ) -> Result<(Site, Vec<SiteProblem>)> {
        let found = discover(source).await?;
        Self::from_discovery(source, &found, opts).await
    }

    /// Like [`build`](Self::build), from a discovery already made over `source`.
    pub async fn from_discovery(
        source: &dyn Source,
        found: &Discovery,
        opts: &SiteOptions,
    ) -> Result<(Site, Vec<SiteProblem>)> {
        let mut problems: Vec<SiteProblem> = found
            .faults
            .iter()
            .map(|f| SiteProblem {
                location: f.location.clone(),
                message: format!("not served: {} [{}]", f.fault.message(), f.fault.kind()),
            })
            .collect();
        let mut chosen: Vec<&Skill> = Vec::new();
        for skill in &found.skills {
            if let Some(problem) = invalid(skill, opts) {
                problems.push(problem);
                continue;
            }
            let name = skill.name();
            if let Some(first) = chosen.iter().find(|s| s.name() == name) {
                problems.push(SiteProblem {
                    location: skill.location().to_string(),
                    message: format!(
                        "not served: a skill named {name} is already served from {}",
                        first.location()
                    ),
                });
                continue;
            }
            chosen.push(skill);
        }
        let chosen = &chosen;
        let built: Vec<Result<SiteSkill>> = stream::iter(0..chosen.len())
            .map(|i| pack_skill(source, chosen[i], opts))
            .buffered(CONCURRENCY)
            .collect()
            .await;
        let mut skills = Vec::with_capacity(built.len());
        for (r, skill) in built.into_iter().zip(chosen) {
            match r {
                Ok(s) => skills.push(s),
                Err(e) => problems.push(SiteProblem {
                    location: skill.location().to_string(),
                    message: format!("not served: {e}"),
                }),
            }
        }
        let mut yanked = pack_yanked(source, None, opts, &mut problems).await?;
        let older = with_versions(
            source,
            None,
            opts,
            &mut skills,
            &mut yanked,
            &mut problems,
            &Known::new(),
        )
        .await?;
        let mut site = Site::from_versions(skills, yanked, older, opts.web.clone());
        site.archives = opts.versions.clone().map(Archives);
        Ok((site, problems))
    }

    /// Assembles the site from packed skills (pure: no I/O).
    pub fn from_skills(skills: Vec<SiteSkill>) -> Site {
        Self::from_parts(skills, Vec::new())
    }

    /// Assembles the site from packed skills and yanked versions (by name, then version; pure).
    pub fn from_parts(skills: Vec<SiteSkill>, yanked: Vec<SiteSkill>) -> Site {
        Self::from_versions(skills, yanked, Vec::new(), WebOptions::default())
    }

    /// Assembles the site from packed skills, yanked versions and older versions (each by name,
    /// then version), its pages made as `web` says (pure).
    pub fn from_versions(
        skills: Vec<SiteSkill>,
        yanked: Vec<SiteSkill>,
        older: Vec<SiteSkill>,
        web: WebOptions,
    ) -> Site {
        let mut site = Site {
            web,
            ..Site::default()
        };
        site.older = older;
        for s in &skills {
            site.add_files(s);
        }
        for y in &yanked {
            site.put_blob(
                y.archive_digest.trim_start_matches("sha256:"),
                y.archive.clone(),
                "application/gzip",
            );
        }
        site.entries = skills.iter().map(index_entries).collect();
        site.skills = skills;
        site.yanked_entries = yanked.iter().map(yanked_entry).collect();
        site.yanked = yanked;
        site.write_indexes();
        crate::web::write_all_pages(&mut site);
        site
    }

    /// This site with the skill named `name` as `source` holds it now: its index entries, its
    /// files by name and its blobs replaced (or added, or removed when the source no longer
    /// serves a valid skill of that name); every other skill's resources are shared, not
    /// re-read. The result is the site [`build`](Self::build) would make, when `source` lists
    /// its roots in byte order of name, as a registry does (a new name is put in that order).
    /// The skill left out, if it is invalid, comes back as a problem.
    pub async fn updated(
        &self,
        source: &dyn Source,
        name: &str,
        opts: &SiteOptions,
    ) -> Result<(Site, Vec<SiteProblem>)> {
        let mut problems = Vec::new();
        let mut yanked = pack_yanked(source, Some(name), opts, &mut problems).await?;
        let live = match crate::source::load(source, name).await {
            Ok(skill) => match invalid(&skill, opts) {
                Some(problem) => {
                    problems.push(problem);
                    None
                }
                None => Some(pack_skill(source, &skill, opts).await?),
            },
            Err(Error::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        let mut live: Vec<SiteSkill> = live.into_iter().collect();
        // A version never changes: the digests already known are not packed again.
        let known: Known = self
            .older
            .iter()
            .chain(&self.skills)
            .chain(&self.yanked)
            .filter(|o| o.name == name && !o.archive_digest.is_empty())
            .filter_map(|o| Some((o.version.clone()?, o.archive_digest.clone())))
            .collect();
        let older = with_versions(
            source,
            Some(name),
            opts,
            &mut live,
            &mut yanked,
            &mut problems,
            &known,
        )
        .await?;
        // One copy of the site, its indexes and the skill's pages (with the listings) written
        // once, after all three parts of the skill are in.
        let mut site = self.clone();
        site.archives = opts.versions.clone().map(Archives);
        site.replace_skill(name, live.pop());
        site.replace_yanked(name, yanked);
        site.replace_older(name, older);
        site.write_indexes();
        crate::web::write_pages_of(&mut site, name);
        Ok((site, problems))
    }

    /// This site with the yanked versions of `name` replaced by `yanked` (by version); pure.
    pub fn with_yanked(&self, name: &str, yanked: Vec<SiteSkill>) -> Site {
        let mut site = self.clone();
        site.replace_yanked(name, yanked);
        site.write_indexes();
        crate::web::write_pages_of(&mut site, name);
        site
    }

    /// [`with_yanked`](Self::with_yanked) in place, the indexes and pages not yet written.
    fn replace_yanked(&mut self, name: &str, yanked: Vec<SiteSkill>) {
        let all = std::mem::take(&mut self.yanked)
            .into_iter()
            .zip(std::mem::take(&mut self.yanked_entries));
        let (old, kept): (Vec<_>, Vec<_>) = all.partition(|(y, _)| y.name == name);
        (self.yanked, self.yanked_entries) = kept.into_iter().unzip();
        for (y, _) in &old {
            self.remove_blob(&y.archive_digest);
        }
        let i = self
            .yanked
            .partition_point(|y| y.name.as_bytes() < name.as_bytes());
        for (k, y) in yanked.into_iter().enumerate() {
            self.put_blob(
                y.archive_digest.trim_start_matches("sha256:"),
                y.archive.clone(),
                "application/gzip",
            );
            self.yanked_entries.insert(i + k, yanked_entry(&y));
            self.yanked.insert(i + k, y);
        }
    }

    /// This site with the older versions of `name` (neither latest nor yanked) replaced by
    /// `older` (by version); pure.
    pub fn with_older(&self, name: &str, older: Vec<SiteSkill>) -> Site {
        let mut site = self.clone();
        site.replace_older(name, older);
        crate::web::write_pages_of(&mut site, name);
        site
    }

    /// [`with_older`](Self::with_older) in place, the pages not yet written (older versions
    /// are in no index).
    fn replace_older(&mut self, name: &str, older: Vec<SiteSkill>) {
        self.older.retain(|o| o.name != name);
        let i = self
            .older
            .partition_point(|o| o.name.as_bytes() < name.as_bytes());
        for (k, o) in older.into_iter().enumerate() {
            self.older.insert(i + k, o);
        }
    }

    /// This site with the skill `name` replaced by `skill` (`None`: removed); pure. A new name
    /// goes in byte order of names.
    pub fn with_skill(&self, name: &str, skill: Option<SiteSkill>) -> Site {
        let mut site = self.clone();
        site.replace_skill(name, skill);
        site.write_indexes();
        crate::web::write_pages_of(&mut site, name);
        site
    }

    /// [`with_skill`](Self::with_skill) in place, the indexes and pages not yet written.
    fn replace_skill(&mut self, name: &str, skill: Option<SiteSkill>) {
        let at = self.skills.iter().position(|s| s.name == name);
        if let Some(i) = at {
            let old = self.skills.remove(i);
            self.entries.remove(i);
            self.remove_files(&old);
        }
        if let Some(skill) = skill {
            let i = at.unwrap_or_else(|| {
                self.skills
                    .partition_point(|s| s.name.as_bytes() < skill.name.as_bytes())
            });
            self.add_files(&skill);
            self.entries.insert(i, index_entries(&skill));
            self.skills.insert(i, skill);
        }
    }

    /// Puts a skill's blobs (archive and files) and its files by name.
    fn add_files(&mut self, s: &SiteSkill) {
        let archive_hex = s.archive_digest.trim_start_matches("sha256:");
        self.put_blob(archive_hex, s.archive.clone(), "application/gzip");
        for (f, bytes) in s.manifest.files.iter().zip(&s.files) {
            let hex = f.digest.trim_start_matches("sha256:");
            let ctype = content_type(&f.path, bytes);
            self.put_blob(hex, bytes.clone(), ctype);
            for dir in BY_NAME {
                self.put(
                    format!("{dir}/{}/{}", s.name, f.path),
                    bytes.clone(),
                    ctype,
                    REVALIDATE,
                );
            }
        }
    }

    /// Takes out a removed skill's files by name, and each of its blobs that no skill left
    /// holds (a blob another skill shares is put again from that skill, so that its type is
    /// the one a fresh build gives it).
    fn remove_files(&mut self, old: &SiteSkill) {
        for f in &old.manifest.files {
            for dir in BY_NAME {
                self.resources
                    .remove(&format!("{dir}/{}/{}", old.name, f.path));
            }
        }
        for digest in
            std::iter::once(&old.archive_digest).chain(old.manifest.files.iter().map(|f| &f.digest))
        {
            self.remove_blob(digest);
        }
    }

    /// Takes out the blob `digest` unless a skill left (or a yanked version's archive) holds
    /// it; one still held is put again from what holds it, so that its type is the one a fresh
    /// build gives it.
    fn remove_blob(&mut self, digest: &str) {
        let hex = digest.trim_start_matches("sha256:");
        self.resources.remove(&format!("blobs/sha256/{hex}"));
        let mut again = Vec::new();
        for s in &self.skills {
            if s.archive_digest.trim_start_matches("sha256:") == hex {
                again.push((s.archive.clone(), "application/gzip"));
            }
            for (f, bytes) in s.manifest.files.iter().zip(&s.files) {
                if f.digest.trim_start_matches("sha256:") == hex {
                    again.push((bytes.clone(), content_type(&f.path, bytes)));
                }
            }
        }
        for y in &self.yanked {
            if y.archive_digest.trim_start_matches("sha256:") == hex {
                again.push((y.archive.clone(), "application/gzip"));
            }
        }
        for (bytes, ctype) in again {
            self.put_blob(hex, bytes, ctype);
        }
    }

    /// Writes both indexes from the skills' entries.
    fn write_indexes(&mut self) {
        #[derive(serde::Serialize)]
        struct Extra<'a> {
            yanked: Vec<&'a Value>,
        }
        #[derive(serde::Serialize)]
        struct Index<'a> {
            #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
            schema: Option<&'static str>,
            skills: Vec<&'a Value>,
            /// skillcat's own key (other clients ignore it): the yanked versions, when any.
            #[serde(skip_serializing_if = "Option::is_none")]
            skillcat: Option<Extra<'a>>,
        }
        let v2 = Index {
            schema: Some(SCHEMA_V0_2),
            skills: self.entries.iter().map(|e| &e.0).collect(),
            skillcat: (!self.yanked_entries.is_empty()).then(|| Extra {
                yanked: self.yanked_entries.iter().collect(),
            }),
        };
        let v1 = Index {
            schema: None,
            skills: self.entries.iter().map(|e| &e.1).collect(),
            skillcat: None,
        };
        let bodies = [(AGENT_SKILLS_INDEX, &v2), (SKILLS_INDEX, &v1)].map(|(path, doc)| {
            let mut body = serde_json::to_vec_pretty(doc).expect("an index always serialises");
            body.push(b'\n');
            (path, body)
        });
        for (path, body) in bodies {
            self.put(
                path.to_string(),
                Bytes::from(body),
                "application/json",
                REVALIDATE,
            );
        }
        self.seq_etags();
    }

    /// The change feed position this site holds every change up to (a registry's), if known.
    pub fn seq(&self) -> Option<i64> {
        self.seq
    }

    /// Records that this site holds every change of its registry up to `seq`: the indexes'
    /// `ETag`s follow it (`"s<seq>-<sha256 hex>"`), so a mirror or CDN that revalidates sees
    /// which position of the feed it holds; the body's digest stays in it, so two sites at one
    /// position with different bytes never share a tag.
    pub fn set_seq(&mut self, seq: i64) {
        self.seq = Some(seq);
        self.seq_etags();
    }

    fn seq_etags(&mut self) {
        let Some(seq) = self.seq else { return };
        for path in [AGENT_SKILLS_INDEX, SKILLS_INDEX] {
            if let Some(file) = self.resources.get_mut(path) {
                let hex = crate::digest::to_hex(sha256(&file.body));
                file.etag = format!("\"s{seq}-{hex}\"");
            }
        }
    }

    pub(crate) fn put(
        &mut self,
        path: String,
        body: Bytes,
        content_type: &'static str,
        cache_control: &'static str,
    ) {
        let etag = format!("\"{}\"", crate::digest::to_hex(sha256(&body)));
        self.lazy.remove(&path);
        self.resources.insert(
            path,
            SiteFile {
                body,
                content_type,
                etag,
                cache_control,
            },
        );
    }

    /// A content-addressed blob; when the same bytes serve several purposes, the most specific
    /// type wins (archive, then Markdown, then text).
    fn put_blob(&mut self, hex: &str, body: Bytes, content_type: &'static str) {
        let path = format!("blobs/sha256/{hex}");
        if let Some(existing) = self.resources.get(&path)
            && type_rank(existing.content_type) >= type_rank(content_type)
        {
            return;
        }
        self.resources.insert(
            path,
            SiteFile {
                body,
                content_type,
                etag: format!("\"{hex}\""),
                cache_control: IMMUTABLE,
            },
        );
    }

    /// A page rendered on its first read ([`LazyPage`]).
    pub(crate) fn put_lazy(&mut self, path: String, page: LazyPage) {
        self.resources.remove(&path);
        self.lazy.insert(path, Arc::new(page));
    }

    /// The resource at `path` (no leading `/`, percent-decoded). A page not yet rendered is
    /// rendered now (bounded; in async code, render it first in the blocking pool:
    /// `Site::unrendered`).
    pub fn get(&self, path: &str) -> Option<&SiteFile> {
        self.resources
            .get(path)
            .or_else(|| self.lazy.get(path).map(|p| p.file()))
    }

    /// Whether the site has `path`, without rendering it.
    pub fn contains(&self, path: &str) -> bool {
        self.resources.contains_key(path) || self.lazy.contains_key(path)
    }

    /// The page at `path` when it is still to be rendered: render it with
    /// [`LazyPage::file`] off the async runtime, then [`get`](Self::get) finds it made.
    pub(crate) fn unrendered(&self, path: &str) -> Option<Arc<LazyPage>> {
        self.lazy.get(path).filter(|p| !p.rendered()).cloned()
    }

    /// Every path and its resource, in byte order of path (pages not yet rendered are
    /// rendered: this is for `export` and tests, which want every byte).
    pub fn resources(&self) -> impl Iterator<Item = (&str, &SiteFile)> {
        let mut all: Vec<(&str, &SiteFile)> = self
            .resources
            .iter()
            .map(|(p, r)| (p.as_str(), r))
            .chain(self.lazy.iter().map(|(p, l)| (p.as_str(), l.file())))
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all.into_iter()
    }

    /// The skills served, in the source's order.
    pub fn skills(&self) -> &[SiteSkill] {
        &self.skills
    }

    /// The yanked versions served (by name, then version).
    pub fn yanked(&self) -> &[SiteSkill] {
        &self.yanked
    }

    /// The older versions held for their pages (by name, then version; manifest and document
    /// alone).
    pub fn older(&self) -> &[SiteSkill] {
        &self.older
    }

    /// The older version whose archive is the blob at `path` (`blobs/sha256/HEX`) and where
    /// to pack it from, when the site does not hold that blob itself: `serve` packs it in the
    /// blocking pool (`older_archive`).
    pub(crate) fn older_blob(
        &self,
        path: &str,
    ) -> Option<(Arc<dyn VersionLookup>, String, String)> {
        let hex = path.strip_prefix("blobs/sha256/")?;
        let archives = self.archives.as_ref()?;
        if hex.is_empty() || self.resources.contains_key(path) {
            return None;
        }
        let o = self.older.iter().find(|o| {
            o.archive_digest.strip_prefix("sha256:") == Some(hex) && o.version.is_some()
        })?;
        Some((
            Arc::clone(&archives.0),
            o.name.clone(),
            o.version.clone().unwrap_or_default(),
        ))
    }

    /// Every older version's archive the site lists but does not hold (`Self::older_blob`'s
    /// answers, for `export`): path, where to pack it from, name and version.
    pub(crate) fn older_blobs(&self) -> Vec<(String, Arc<dyn VersionLookup>, String, String)> {
        let mut out: Vec<_> = self
            .older
            .iter()
            .filter(|o| !o.archive_digest.is_empty())
            .filter_map(|o| {
                let path = format!(
                    "blobs/sha256/{}",
                    o.archive_digest.trim_start_matches("sha256:")
                );
                let (lookup, name, version) = self.older_blob(&path)?;
                Some((path, lookup, name, version))
            })
            .collect();
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// How the site's pages are made.
    pub fn web(&self) -> &WebOptions {
        &self.web
    }

    /// The skill served as `name`, if any.
    pub fn skill(&self, name: &str) -> Option<&SiteSkill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Takes out every resource whose path starts with `prefix`.
    pub(crate) fn remove_prefix(&mut self, prefix: &str) {
        let doomed: Vec<String> = self
            .resources
            .range(prefix.to_string()..)
            .take_while(|(p, _)| p.starts_with(prefix))
            .map(|(p, _)| p.clone())
            .collect();
        for p in doomed {
            self.resources.remove(&p);
        }
        let doomed: Vec<String> = self
            .lazy
            .range(prefix.to_string()..)
            .take_while(|(p, _)| p.starts_with(prefix))
            .map(|(p, _)| p.clone())
            .collect();
        for p in doomed {
            self.lazy.remove(&p);
        }
    }
}

fn type_rank(ctype: &str) -> u8 {
    match ctype {
        "application/gzip" => 3,
        MARKDOWN => 2,
        "application/octet-stream" => 0,
        _ => 1,
    }
}

const MARKDOWN: &str = "text/markdown; charset=utf-8";

/// The `Content-Type` a file is served with: by extension for the formats a skill ships,
/// else text when it is UTF-8, else bytes. Never HTML or SVG (a skill's files must not run
/// as pages of the serving origin).
pub fn content_type(path: &str, bytes: &[u8]) -> &'static str {
    let name = crate::path::base_name(path).to_ascii_lowercase();
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    if name.ends_with(".tar.gz") {
        return "application/gzip";
    }
    match ext {
        "md" | "markdown" => MARKDOWN,
        "json" => "application/json",
        "gz" | "tgz" => "application/gzip",
        "zip" => "application/zip",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The yanked versions of the source (of `name` alone when given) that `opts.yanked` names,
/// each read and packed; one that does not load or validate is a problem, not served.
async fn pack_yanked(
    source: &dyn Source,
    name: Option<&str>,
    opts: &SiteOptions,
    problems: &mut Vec<SiteProblem>,
) -> Result<Vec<SiteSkill>> {
    let Some(lookup) = opts.yanked.clone() else {
        return Ok(Vec::new());
    };
    let name = name.map(str::to_string);
    let roots = tokio::task::spawn_blocking(move || lookup.yanked(name.as_deref()))
        .await
        .map_err(|e| Error::task("listing yanked versions", e))??;
    let mut out = Vec::with_capacity(roots.len());
    for root in roots {
        let skill = match crate::source::load(source, &root).await {
            Ok(skill) => skill,
            Err(e) => {
                problems.push(SiteProblem {
                    location: source.location(&root),
                    message: format!("yanked version not served: {e}"),
                });
                continue;
            }
        };
        if let Some(mut problem) = invalid(&skill, opts) {
            problem.message = format!("yanked version {}", problem.message);
            problems.push(problem);
            continue;
        }
        let mut packed = pack_skill(source, &skill, opts).await?;
        packed.page.yanked = true;
        out.push(packed);
    }
    Ok(out)
}

/// Reads one skill's files and packs them: archive, manifest, signature.
async fn pack_skill(source: &dyn Source, skill: &Skill, opts: &SiteOptions) -> Result<SiteSkill> {
    let signatures = opts.signatures.clone();
    let page = page_info(source, skill, opts).await;
    let mut entries = Vec::with_capacity(skill.files().len());
    for f in skill.files() {
        let bytes = source.read(&join_path(skill.root(), &f.path)).await?;
        entries.push(PackEntry {
            path: f.path.clone(),
            bytes,
            executable: f.executable,
        });
    }
    let name = skill.name();
    let description = skill.description().to_string();
    let location = skill.location().to_string();
    // The version the source keeps the skill as (a registry's), else `metadata.version`.
    let record = source.record(skill.root()).await?;
    let mut page = page;
    page.signatures = record.signatures.clone();
    let mut version = record.version.clone().or_else(|| {
        skill
            .version()
            .map(str::to_string)
            .filter(|v| !v.is_empty())
    });
    let shown = location.clone();
    tokio::task::spawn_blocking(move || {
        let mut archive = Vec::new();
        write_tar_gz(&entries, &mut archive).map_err(|e| Error::io(&shown, e))?;
        let files = |v: &str| {
            Manifest::build(
                &name,
                v,
                entries
                    .iter()
                    .map(|e| (e.path.as_str(), &e.bytes[..], e.executable)),
            )
        };
        let mut manifest = files(version.as_deref().unwrap_or(""));
        // A signature the source keeps with this version (a registry checked at publishing
        // that it names this very statement; an index entry carries its own), else one found
        // beside the source for this content.
        let kept = record
            .signatures
            .into_iter()
            .next()
            .map(|signature| Signed {
                version: version.clone().unwrap_or_default(),
                signature,
            });
        let signed = kept.or_else(|| signatures.and_then(|s| s.lookup(&name, &manifest.digest)));
        if page.signatures.is_empty()
            && let Some(s) = &signed
        {
            page.signatures.push(s.signature.clone());
        }
        if let Some(signed) = &signed
            && version.as_deref() != Some(signed.version.as_str())
        {
            version = Some(signed.version.clone()).filter(|v| !v.is_empty());
            manifest = files(&signed.version);
        }
        let mut by_path: Vec<&PackEntry> = entries.iter().collect();
        by_path.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        let contents = by_path.iter().map(|e| e.bytes.clone()).collect();
        Ok(SiteSkill {
            archive_digest: crate::digest::sha256_digest(&archive),
            archive: Bytes::from(archive),
            name,
            description,
            version,
            location,
            manifest,
            files: contents,
            signature: signed.map(|s| s.signature),
            page,
        })
    })
    .await
    .map_err(|e| Error::task("packing a skill", e))?
}

/// What a skill's page shows that is read from the skill: its tools, and (when `opts.audit`)
/// the audit's findings. Whatever fails here is said on the page, never a reason to leave the
/// skill out.
async fn page_info(source: &dyn Source, skill: &Skill, opts: &SiteOptions) -> PageInfo {
    let mut page = tools_info(source, skill).await;
    if opts.audit {
        let audit = skillcat_audit::AuditOptions::default();
        if let Ok(found) = skillcat_audit::audit(source, skill, &audit).await {
            page.findings = Some(serde_json::to_value(found).unwrap_or(Value::Null));
        }
    }
    page
}

/// The tools a skill's page lists (its scripts, its guest tools, its declarations), for
/// every version alike: a discovery failure is said on the page.
async fn tools_info(source: &dyn Source, skill: &Skill) -> PageInfo {
    use skillcat_sandbox::script::{Interpreters, discover as script_tools};
    let mut page = PageInfo::default();
    match script_tools(source, skill, &Interpreters::host_default()).await {
        Ok(found) => page.tools = found.tools.iter().map(|t| t.to_json()).collect(),
        Err(e) => page.tools_error = Some(e.to_string()),
    }
    page.guest_tools = guest_tools(skill);
    page.declared = skill
        .declarations()
        .ok()
        .filter(|d| d.has_sidecar())
        .map(|d| d.frontmatter().clone());
    page
}

#[cfg(feature = "guest")]
fn guest_tools(skill: &Skill) -> Vec<Value> {
    skillcat_sandbox::guest::declare::declarations(skill.frontmatter())
        .into_iter()
        .map(|d| match d {
            Ok(d) => json!({
                "name": d.name,
                "description": d.description,
                "source": d.source,
                "parameters": d.params.iter().map(|p| json!({
                    "name": p.name,
                    "type": format!("{:?}", p.ty).to_lowercase(),
                    "required": p.required,
                    "description": p.description,
                })).collect::<Vec<_>>(),
            }),
            Err(e) => json!({"error": e.to_string()}),
        })
        .collect()
}

#[cfg(not(feature = "guest"))]
fn guest_tools(_: &Skill) -> Vec<Value> {
    Vec::new()
}

/// With `opts.versions`: each packed version gets its date, yanked mark and recorded
/// findings, and the versions that are neither latest nor yanked are read for their pages
/// (manifest and document alone; returned, by name and then version).
/// The archive digests of older versions already known, by version (of one skill).
type Known = BTreeMap<String, String>;

async fn with_versions(
    source: &dyn Source,
    name: Option<&str>,
    opts: &SiteOptions,
    live: &mut [SiteSkill],
    yanked: &mut [SiteSkill],
    problems: &mut Vec<SiteProblem>,
    known: &Known,
) -> Result<Vec<SiteSkill>> {
    let Some(lookup) = opts.versions.clone() else {
        return Ok(Vec::new());
    };
    // Each older version is packed once to learn its archive's digest: several at a time as
    // the site is built, one at a time after a publish (the upload path's memory bound holds
    // uploads at the size limit, and a publish may come with versions the site never held).
    let at_once = if name.is_some() { 1 } else { CONCURRENCY };
    let name = name.map(str::to_string);
    let listing = Arc::clone(&lookup);
    let metas = tokio::task::spawn_blocking(move || listing.versions(name.as_deref()))
        .await
        .map_err(|e| Error::task("listing versions", e))??;
    let apply = |s: &mut SiteSkill, m: &VersionMeta| {
        s.page.published = m.published.clone();
        s.page.published_by = m.published_by.clone();
        s.page.yanked = m.yanked;
        if m.findings.is_some() {
            s.page.findings = m.findings.clone();
            s.page.findings_recorded = true;
        }
    };
    let mut wanted: Vec<&VersionMeta> = Vec::new();
    for m in &metas {
        let same =
            |s: &&mut SiteSkill| s.name == m.name && s.version.as_deref() == Some(&m.version);
        if let Some(s) = live.iter_mut().find(same) {
            apply(s, m);
            continue;
        }
        if let Some(s) = yanked.iter_mut().find(same) {
            apply(s, m);
            continue;
        }
        if m.yanked {
            continue;
        }
        wanted.push(m);
    }
    let roots: Vec<String> = wanted
        .iter()
        .map(|m| format!("{}@{}", m.name, m.version))
        .collect();
    let (lookup, roots_ref, wanted_ref) = (&lookup, &roots, &wanted);
    let read: Vec<Result<SiteSkill>> = stream::iter(0..wanted.len())
        .map(|i| {
            let m = wanted_ref[i];
            older_version(source, &roots_ref[i], m, lookup, known.get(&m.version))
        })
        .buffered(at_once)
        .collect()
        .await;
    let mut older = Vec::with_capacity(read.len());
    for ((got, root), m) in read.into_iter().zip(&roots).zip(&wanted) {
        match got {
            Ok(mut light) => {
                apply(&mut light, m);
                older.push(light);
            }
            Err(e) => problems.push(SiteProblem {
                location: source.location(root),
                message: format!("older version has no page: {e}"),
            }),
        }
    }
    Ok(older)
}

/// An older version (neither latest nor yanked) as its page needs it: its manifest as the
/// source keeps it and its document alone, read, and its archive's digest; its other files
/// and the archive are not held (a registry may hold many versions of a large skill): the
/// archive is packed again, the same bytes, when it is asked for (`older_archive`).
async fn older_version(
    source: &dyn Source,
    root: &str,
    m: &VersionMeta,
    lookup: &Arc<dyn VersionLookup>,
    known: Option<&String>,
) -> Result<SiteSkill> {
    let manifest = m
        .manifest
        .clone()
        .ok_or_else(|| Error::NotFound(format!("{root}: its manifest")))?;
    let skill = crate::source::load(source, root).await?;
    let mut files = vec![Bytes::new(); manifest.files.len()];
    if let Some(i) = manifest
        .files
        .iter()
        .position(|f| crate::path::DOCUMENT_NAMES.contains(&f.path.as_str()))
    {
        files[i] = source
            .read(&join_path(root, &manifest.files[i].path))
            .await?;
    }
    let (lookup, name, version) = (Arc::clone(lookup), m.name.clone(), m.version.clone());
    let archive_digest = match known {
        Some(d) => d.clone(),
        None => tokio::task::spawn_blocking(move || {
            Ok::<_, Error>(
                lookup
                    .archive(&name, &version)?
                    .map(|a| crate::digest::sha256_digest(&a))
                    .unwrap_or_default(),
            )
        })
        .await
        .map_err(|e| Error::task("packing an older version", e))??,
    };
    // Its tools, as every version's page lists them: its scripts are read for them (their
    // first 8 KiB, not held), and only when it has some (a publish builds every older version
    // of the skill again).
    let scripted = manifest
        .files
        .iter()
        .any(|f| f.path.starts_with("scripts/"))
        || skill.declarations().is_ok_and(|d| d.scripts().is_some());
    let tools = if scripted {
        tools_info(source, &skill).await
    } else {
        PageInfo {
            guest_tools: guest_tools(&skill),
            ..PageInfo::default()
        }
    };
    Ok(SiteSkill {
        name: m.name.clone(),
        description: skill.description().to_string(),
        version: Some(m.version.clone()),
        location: skill.location().to_string(),
        archive: Bytes::new(),
        archive_digest,
        manifest,
        files,
        signature: m.signatures.first().cloned(),
        page: PageInfo {
            signatures: m.signatures.clone(),
            files_withheld: true,
            ..tools
        },
    })
}

/// Older archives packed again on request (`older_archive`): at most [`REPACKING`] at once
/// (each is a read of the registry and a deflate, in the blocking pool), requests for one being
/// packed waiting for it, and the last ones kept, up to [`REPACKED_BYTES`], so a burst of
/// requests for one blob packs it once. A client asking for older blobs over and over costs the
/// server one packing at a time, not one per request. Keyed by the archive's digest, which each
/// body was checked against: what one site kept is right for any other.
struct Repacked {
    permits: tokio::sync::Semaphore,
    kept: std::sync::Mutex<std::collections::VecDeque<(String, Bytes)>>,
    /// The packings under way, by digest: a request for one being packed waits for it.
    packing: std::sync::Mutex<std::collections::HashMap<String, Arc<Packing>>>,
}

/// One packing under way: its body once done (`None`: it could not be packed, or did not hash
/// to its digest).
type Packing = tokio::sync::OnceCell<Option<Bytes>>;

/// How many older archives are packed at once, server-wide.
const REPACKING: usize = 2;

/// The most bytes of packed older archives kept for the next request.
const REPACKED_BYTES: usize = 32 << 20;

static REPACKED: std::sync::LazyLock<Repacked> = std::sync::LazyLock::new(|| Repacked {
    permits: tokio::sync::Semaphore::new(REPACKING),
    kept: std::sync::Mutex::new(std::collections::VecDeque::new()),
    packing: std::sync::Mutex::new(std::collections::HashMap::new()),
});

impl Repacked {
    fn get(&self, hex: &str) -> Option<Bytes> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().find(|(h, _)| h == hex).map(|(_, b)| b.clone())
    }

    fn keep(&self, hex: &str, body: &Bytes) {
        // One archive may take at most a quarter of the room: a few large ones never flush
        // every other.
        if body.len() > REPACKED_BYTES / 4 {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.push_back((hex.to_string(), body.clone()));
        while kept.iter().map(|(_, b)| b.len()).sum::<usize>() > REPACKED_BYTES {
            kept.pop_front();
        }
    }
}

/// The archive of `name@version` packed again from `lookup`, served only when it hashes to
/// `hex` (the digest the site lists); `None` otherwise, or when it cannot be packed.
pub(crate) async fn older_archive(
    lookup: Arc<dyn VersionLookup>,
    name: String,
    version: String,
    hex: String,
) -> Option<SiteFile> {
    let r = &*REPACKED;
    let body = match r.get(&hex) {
        Some(body) => body,
        None => {
            let cell = {
                let mut packing = r.packing.lock().unwrap_or_else(|e| e.into_inner());
                Arc::clone(packing.entry(hex.clone()).or_default())
            };
            let body = cell
                .get_or_init(|| async {
                    let _permit = r.permits.acquire().await.ok()?;
                    let body = tokio::task::spawn_blocking(move || lookup.archive(&name, &version))
                        .await
                        .ok()?
                        .ok()??;
                    if crate::digest::to_hex(sha256(&body)) != hex {
                        return None;
                    }
                    r.keep(&hex, &body);
                    Some(body)
                })
                .await
                .clone();
            let mut packing = r.packing.lock().unwrap_or_else(|e| e.into_inner());
            if packing.get(&hex).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                packing.remove(&hex);
            }
            body?
        }
    };
    Some(SiteFile {
        body,
        content_type: "application/gzip",
        etag: format!("\"{hex}\""),
        cache_control: IMMUTABLE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, files: &[(&str, &[u8], bool)]) -> SiteSkill {
        let entries: Vec<PackEntry> = files
            .iter()
            .map(|(p, b, x)| PackEntry {
                path: p.to_string(),
                bytes: Bytes::copy_from_slice(b),
                executable: *x,
            })
            .collect();
        let mut archive = Vec::new();
        write_tar_gz(&entries, &mut archive).unwrap();
        let manifest = Manifest::build(name, "", files.iter().map(|(p, b, x)| (*p, *b, *x)));
        let contents = manifest
            .files
            .iter()
            .map(|f| Bytes::copy_from_slice(files.iter().find(|x| x.0 == f.path).unwrap().1))
            .collect();
        SiteSkill {
            name: name.into(),
            description: "d".into(),
            version: None,
            location: name.into(),
            archive_digest: crate::digest::sha256_digest(&archive),
            archive: Bytes::from(archive),
            manifest,
            files: contents,
            signature: None,
            page: PageInfo::default(),
        }
    }

    #[test]
    fn layout_of_a_site() {
        let site = Site::from_skills(vec![skill(
            "hello",
            &[
                ("SKILL.md", b"# Hello\n", false),
                ("scripts/run.sh", b"#!/bin/sh\n", true),
            ],
        )]);
        let paths: Vec<&str> = site.resources().map(|(p, _)| p).collect();
        assert!(paths.contains(&AGENT_SKILLS_INDEX) && paths.contains(&SKILLS_INDEX));
        assert!(paths.contains(&".well-known/skills/hello/scripts/run.sh"));
        assert!(paths.contains(&".well-known/agent-skills/hello/SKILL.md"));
        let md = site
            .get("blobs/sha256/90f8ec5669cd34183b9b0fdf8b94f5efb4c3672876330f4aa76088c2b4ad17be")
            .unwrap();
        assert_eq!(md.content_type, MARKDOWN);
        assert_eq!(md.cache_control, IMMUTABLE);
        let index: Value =
            serde_json::from_slice(&site.get(AGENT_SKILLS_INDEX).unwrap().body).unwrap();
        assert_eq!(index["$schema"], SCHEMA_V0_2);
        let e = &index["skills"][0];
        assert_eq!(e["type"], "archive");
        assert_eq!(e["files"], json!(["SKILL.md", "scripts/run.sh"]));
        assert_eq!(
            e["skillcat"]["skill_digest"],
            "sha256:34f7a8c484e9991f3e71a309f31332d6335efc01f544105c4185a7c4ab12eb1e"
        );
        let hex = e["digest"].as_str().unwrap().trim_start_matches("sha256:");
        assert_eq!(e["url"], format!("../../blobs/sha256/{hex}"));
        let archive = site.get(&format!("blobs/sha256/{hex}")).unwrap();
        assert_eq!(archive.content_type, "application/gzip");
        assert_eq!(crate::digest::sha256_digest(&archive.body), e["digest"]);
        assert!(e.get("version").is_none());
        let v1: Value = serde_json::from_slice(&site.get(SKILLS_INDEX).unwrap().body).unwrap();
        assert_eq!(
            v1,
            json!({"skills": [{"name": "hello", "description": "d", "files": ["SKILL.md", "scripts/run.sh"]}]})
        );
    }

    #[test]
    fn the_same_files_give_the_same_site() {
        let a = Site::from_skills(vec![skill("a", &[("SKILL.md", b"x", false)])]);
        let b = Site::from_skills(vec![skill("a", &[("SKILL.md", b"x", false)])]);
        assert_eq!(a.get(AGENT_SKILLS_INDEX), b.get(AGENT_SKILLS_INDEX));
    }

    /// Replacing, adding and removing one skill gives the very site a build of the new list
    /// gives, shared blobs included.
    #[test]
    fn an_updated_site_is_the_site_built_afresh() {
        let a = || {
            skill(
                "alpha",
                &[("SKILL.md", b"# A\n", false), ("x.md", b"shared", false)],
            )
        };
        let c = || {
            skill(
                "charlie",
                &[("SKILL.md", b"# C\n", false), ("y.txt", b"shared", false)],
            )
        };
        let a2 = || skill("alpha", &[("SKILL.md", b"# A2\n", false)]);
        let b = || skill("bravo", &[("SKILL.md", b"# B\n", false)]);
        let same = |x: &Site, y: &Site| {
            let x: Vec<_> = x.resources().collect();
            let y: Vec<_> = y.resources().collect();
            assert_eq!(x, y);
        };
        let site = Site::from_skills(vec![a(), c()]);
        let replaced = site.with_skill("alpha", Some(a2()));
        same(&replaced, &Site::from_skills(vec![a2(), c()]));
        assert_ne!(
            replaced.get(AGENT_SKILLS_INDEX).unwrap().etag,
            site.get(AGENT_SKILLS_INDEX).unwrap().etag
        );
        let added = replaced.with_skill("bravo", Some(b()));
        same(&added, &Site::from_skills(vec![a2(), b(), c()]));
        let removed = added.with_skill("charlie", None);
        same(&removed, &Site::from_skills(vec![a2(), b()]));
        // The old site is untouched: readers holding it keep a whole, consistent view.
        same(&site, &Site::from_skills(vec![a(), c()]));
    }

    /// Yanked versions are listed apart (only their archives served), and replacing those of
    /// one name gives the site a build of the new list gives.
    #[test]
    fn yanked_versions_are_listed_apart_and_replaced_by_name() {
        let same = |x: &Site, y: &Site| {
            let x: Vec<_> = x.resources().collect();
            let y: Vec<_> = y.resources().collect();
            assert_eq!(x, y);
        };
        let live = || skill("alpha", &[("SKILL.md", b"# A\n", false)]);
        let mut old = skill("alpha", &[("SKILL.md", b"# A0\n", false)]);
        old.version = Some("0.9.0".into());
        let site = Site::from_parts(vec![live()], vec![old.clone()]);
        let index: Value =
            serde_json::from_slice(&site.get(AGENT_SKILLS_INDEX).unwrap().body).unwrap();
        assert_eq!(index["skills"].as_array().unwrap().len(), 1);
        let y = &index["skillcat"]["yanked"][0];
        assert_eq!(
            (&y["name"], &y["version"], &y["yanked"]),
            (&json!("alpha"), &json!("0.9.0"), &json!(true))
        );
        let hex = old.archive_digest.trim_start_matches("sha256:");
        assert!(site.get(&format!("blobs/sha256/{hex}")).is_some());
        let v1: Value = serde_json::from_slice(&site.get(SKILLS_INDEX).unwrap().body).unwrap();
        assert!(
            v1.get("skillcat").is_none(),
            "the v0.1 index lists no yanked version"
        );
        let none = site.with_yanked("alpha", Vec::new());
        same(&none, &Site::from_skills(vec![live()]));
        assert!(none.get(&format!("blobs/sha256/{hex}")).is_none());
        same(&none.with_yanked("alpha", vec![old]), &site);
    }

    /// An older version's archive is not held: the site names where to pack it from, by the
    /// digest it lists; a blob it holds, or a digest it does not list, is not packed.
    #[tokio::test]
    async fn an_older_versions_archive_is_packed_on_demand_and_checked() {
        struct Fake(Bytes);
        impl VersionLookup for Fake {
            fn versions(&self, _: Option<&str>) -> Result<Vec<VersionMeta>> {
                Ok(Vec::new())
            }
            fn archive(&self, _: &str, _: &str) -> Result<Option<Bytes>> {
                Ok(Some(self.0.clone()))
            }
        }
        let live = skill("alpha", &[("SKILL.md", b"# A2\n", false)]);
        let mut old = skill("alpha", &[("SKILL.md", b"# A1\n", false)]);
        old.version = Some("1.0.0".into());
        let archive = std::mem::take(&mut old.archive);
        let hex = old.archive_digest.trim_start_matches("sha256:").to_string();
        let mut site = Site::from_versions(
            vec![live.clone()],
            Vec::new(),
            vec![old],
            WebOptions::default(),
        );
        let path = format!("blobs/sha256/{hex}");
        assert!(site.get(&path).is_none(), "not held");
        assert!(site.older_blob(&path).is_none(), "nowhere to pack it from");
        // Bytes that do not hash to the digest listed are never served (nor kept).
        site.archives = Some(Archives(Arc::new(Fake(Bytes::from_static(b"other")))));
        let (lookup, name, version) = site.older_blob(&path).unwrap();
        assert!(
            older_archive(lookup, name, version, hex.clone())
                .await
                .is_none()
        );
        site.archives = Some(Archives(Arc::new(Fake(archive.clone()))));
        let (lookup, name, version) = site.older_blob(&path).expect("listed");
        assert_eq!((name.as_str(), version.as_str()), ("alpha", "1.0.0"));
        let file = older_archive(lookup, name, version, hex.clone())
            .await
            .unwrap();
        assert_eq!((file.body, file.cache_control), (archive, IMMUTABLE));
        let live_hex = live.archive_digest.trim_start_matches("sha256:");
        assert!(
            site.older_blob(&format!("blobs/sha256/{live_hex}"))
                .is_none()
        );
    }

    /// A burst of requests for one older archive packs it once, and never more than
    /// `REPACKING` packings run at once, whatever the number of requests.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_burst_of_requests_for_older_archives_packs_each_once_a_few_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counting {
            archives: BTreeMap<String, Bytes>,
            calls: AtomicUsize,
            running: AtomicUsize,
            most: AtomicUsize,
        }
        impl VersionLookup for Counting {
            fn versions(&self, _: Option<&str>) -> Result<Vec<VersionMeta>> {
                Ok(Vec::new())
            }
            fn archive(&self, _: &str, version: &str) -> Result<Option<Bytes>> {
                self.calls.fetch_add(1, Ordering::SeqCst);
                let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
                self.most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(20));
                self.running.fetch_sub(1, Ordering::SeqCst);
                Ok(self.archives.get(version).cloned())
            }
        }
        // Six versions of a skill no other test packs (the kept archives are process-wide).
        let olds: Vec<SiteSkill> = (0..6)
            .map(|i| {
                let body = format!("# burst {i}\n");
                skill("burst", &[("SKILL.md", body.as_bytes(), false)])
            })
            .collect();
        let lookup = Arc::new(Counting {
            archives: olds
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("1.0.{i}"), o.archive.clone()))
                .collect(),
            calls: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        });
        let mut tasks = Vec::new();
        for round in 0..8 {
            for (i, o) in olds.iter().enumerate() {
                let hex = o.archive_digest.trim_start_matches("sha256:").to_string();
                let l: Arc<dyn VersionLookup> = lookup.clone();
                let v = format!("1.0.{i}");
                tasks.push(tokio::spawn(async move {
                    let _ = round;
                    older_archive(l, "burst".into(), v, hex).await
                }));
            }
        }
        for t in tasks {
            assert!(t.await.unwrap().is_some());
        }
        assert_eq!(lookup.calls.load(Ordering::SeqCst), 6, "each packed once");
        assert!(lookup.most.load(Ordering::SeqCst) <= REPACKING);
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type("SKILL.md", b"x"), MARKDOWN);
        assert_eq!(content_type("a/b.TAR.GZ", b"x"), "application/gzip");
        assert_eq!(
            content_type("run.sh", b"#!/bin/sh"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            content_type("page.html", b"<script>"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            content_type("blob.bin", &[0xff, 0xfe, 0]),
            "application/octet-stream"
        );
    }
}
