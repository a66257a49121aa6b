//! The catalog: several sources in precedence order, loaded lazily once, queried by name.
//!
//! ```text
//! Catalog ── sources (precedence order) ── CatalogSource { name, spec | Arc<dyn Source>,
//!    │                                                      trusted, core_trusted }
//!    └─ snapshot (loaded on first use, once, under a lock; replaced by reload)
//!          ├─ entries      Entry { skill, source, root, trust flags }  first source wins a name
//!          └─ diagnostics  Diagnostic { source, root, location, kind, message }
//!                          (a source's warnings too: a stale cached index, say)
//! ```
//!
//! Loading is forgiving: a source whose root does not exist is an empty source; a source that
//! cannot be opened or listed, a root that is not a skill, a skill without a name or a
//! description, and a skill that breaks a validation rule each become a [`Diagnostic`] while
//! everything else loads (a skill with validation faults is still loaded; the others are not).
//! A name offered twice, by two sources or within one, resolves to the first offer (the higher
//! precedence, then the source's list order), and every hidden offer is a
//! [`DiagnosticKind::Shadowed`] diagnostic. Names are compared with `-` and `_` alike, so
//! `deploy_checker` finds `deploy-checker` (see [`name_key`]).
//!
//! Every skill is listed whatever its source's trust; [`Entry::scripts_allowed`] is true only
//! for skills of a trusted source.
//!
//! A [`Catalog`] is a cheap handle (`Clone` shares it) and is `Send + Sync`. Loading reads the
//! sources concurrently and opens them off the async runtime; it needs a Tokio runtime.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use skillcat_runtime::catalog::Catalog;
//! use skillcat_runtime::config::{Config, Environment};
//! use skillcat_core::prompt::PromptFormat;
//!
//! let env = Environment { cwd: std::env::current_dir()?, home: Some("/home/me".into()) };
//! let config = Config::discover(None, &env)?;
//! let catalog = Catalog::from_config(&config);
//! if let Some(entry) = catalog.find("pdf_forms").await {
//!     println!("{} from {} (scripts allowed: {})", entry.name(), entry.source_name(),
//!              entry.scripts_allowed());
//! }
//! for d in catalog.diagnostics().await {
//!     eprintln!("warning: {d}");
//! }
//! let block = catalog.prompt(&config.prompt_options(PromptFormat::Xml)).await;
//! println!("{}", block.text);
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::OnceCell;

use crate::capability::{Capabilities, Ceiling, Context, Grant, intersect};
use crate::config::{Config, SourceConfig};
use crate::document::{FaultKind, Skill, ValidateOptions, name_key};
use crate::prompt::{PromptOptions, PromptSkill, Rendered, render};
use crate::source::{self, Detail, Discovery, OpenOptions, Source};
use skillcat_core::error::Error;

/// Where a catalog source's skills come from.
#[derive(Debug, Clone)]
enum Origin {
    /// A specification opened with [`source::open_with`] at each load.
    Spec(String),
    /// A source already opened.
    Source(Arc<dyn Source>),
}

/// One source of a catalog, with its trust flags.
#[derive(Debug, Clone)]
pub struct CatalogSource {
    name: String,
    origin: Origin,
    trusted: bool,
    core_trusted: bool,
    /// A discovery already made of this source, used by the first load instead of reading the
    /// source again (shared by clones; taken once).
    discovered: Arc<std::sync::Mutex<Option<Discovery>>>,
}

impl CatalogSource {
    /// A source opened from `spec` (anything [`skillcat_sources::open`] accepts) when the catalog loads,
    /// again at each reload; named after `spec`, untrusted.
    pub fn spec(spec: impl Into<String>) -> Self {
        let spec = spec.into();
        CatalogSource {
            name: spec.clone(),
            origin: Origin::Spec(spec),
            trusted: false,
            core_trusted: false,
            discovered: Arc::default(),
        }
    }

    /// A source already opened, untrusted.
    pub fn from_source(name: impl Into<String>, source: Arc<dyn Source>) -> Self {
        CatalogSource {
            name: name.into(),
            origin: Origin::Source(source),
            trusted: false,
            core_trusted: false,
            discovered: Arc::default(),
        }
    }

    /// A source already opened and discovered (the caller had to read it anyway): the first
    /// load takes `found` instead of reading the source again; reloads read it. A discovery
    /// without file lists is taken only by a catalog that reads documents alone.
    pub fn discovered(name: impl Into<String>, source: Arc<dyn Source>, found: Discovery) -> Self {
        let src = CatalogSource::from_source(name, source);
        *src.discovered
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(found);
        src
    }

    /// Renames the source (the name reports use).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Marks the source trusted: its skills may run scripts.
    pub fn trusted(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        if !trusted {
            self.core_trusted = false;
        }
        self
    }

    /// Marks the source core-trusted (and so trusted): its `trust: core` skills count as core.
    pub fn core_trusted(mut self, core: bool) -> Self {
        self.core_trusted = core;
        self.trusted |= core;
        self
    }

    /// The name reports use.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The specification it is opened from, when it is not an already opened source.
    pub fn spec_str(&self) -> Option<&str> {
        match &self.origin {
            Origin::Spec(s) => Some(s),
            Origin::Source(_) => None,
        }
    }

    /// Whether its skills may run scripts.
    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    /// Whether its `trust: core` skills count as core.
    pub fn is_core_trusted(&self) -> bool {
        self.core_trusted
    }
}

impl From<&SourceConfig> for CatalogSource {
    fn from(c: &SourceConfig) -> Self {
        CatalogSource::spec(c.path.clone())
            .named(c.display_name())
            .trusted(c.trusted || c.core)
            .core_trusted(c.core)
    }
}

/// How a catalog opens sources and validates skills.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogOptions {
    /// How sources given by specification are opened.
    pub open: OpenOptions,
    /// The rules skills are checked against (faults become diagnostics; the skill still loads).
    pub validate: ValidateOptions,
    /// How much of each skill loading reads: by default the file lists too (what script tools,
    /// resources and digests need); [`Detail::Document`] for a catalog that only names,
    /// describes and matches skills, whose skills then have no file list;
    /// [`Detail::Frontmatter`] for one that only names and describes them (a prompt block),
    /// whose skills have no body either.
    pub detail: Detail,
}

/// One skill of the catalog: the skill, where it came from and how far it is trusted.
///
/// Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct Entry(Arc<EntryInner>);

#[derive(Debug)]
struct EntryInner {
    name: String,
    skill: Skill,
    source: Arc<dyn Source>,
    source_name: String,
    trusted: bool,
    core_trusted: bool,
}

impl Entry {
    /// The skill's name as the catalog knows it ([`Skill::name`]).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The skill.
    pub fn skill(&self) -> &Skill {
        &self.0.skill
    }

    /// The source that holds it (to read its files).
    pub fn source(&self) -> &Arc<dyn Source> {
        &self.0.source
    }

    /// This entry with its files read from `source` instead (the same skill, name and trust):
    /// a held copy of what the audit read ([`HeldSource`](crate::source::HeldSource)).
    pub(crate) fn with_source(&self, source: Arc<dyn Source>) -> Entry {
        let e = &self.0;
        Entry(Arc::new(EntryInner {
            name: e.name.clone(),
            skill: e.skill.clone(),
            source,
            source_name: e.source_name.clone(),
            trusted: e.trusted,
            core_trusted: e.core_trusted,
        }))
    }

    /// The name of that source in the catalog.
    pub fn source_name(&self) -> &str {
        &self.0.source_name
    }

    /// The root the source lists it under.
    pub fn root(&self) -> &str {
        self.0.skill.root()
    }

    /// Where its document is, for people and for the prompt block.
    pub fn location(&self) -> &str {
        self.0.skill.location()
    }

    /// Whether its source is trusted.
    pub fn is_trusted(&self) -> bool {
        self.0.trusted
    }

    /// Whether its source is core-trusted.
    pub fn is_core_trusted(&self) -> bool {
        self.0.core_trusted
    }

    /// Whether its scripts may run at all: only for a trusted source. (Untrusted skills are
    /// still listed and offered in the prompt block.)
    pub fn scripts_allowed(&self) -> bool {
        self.0.trusted
    }

    /// What it declares, in its sidecar `agents/skillcat.yaml` or its frontmatter
    /// (declarations that do not read — a broken sidecar, a key declared twice — ask for
    /// nothing: validation reports them).
    pub fn capabilities(&self) -> Capabilities {
        self.0
            .skill
            .declarations()
            .map(|d| Capabilities::from_frontmatter(d.frontmatter()))
            .unwrap_or_default()
    }

    /// Its effective grant under `ceiling`, with relative and `~` paths taken against `cwd` and
    /// `home`; `trust: core` counts only when the source is core-trusted.
    pub fn grant(&self, ceiling: &Ceiling, cwd: &Path, home: Option<&Path>) -> Grant {
        self.grant_with(&Capabilities::default(), ceiling, cwd, home)
    }

    /// [`grant`](Self::grant) of what it declares with `extra` added ([`Capabilities::with`]:
    /// what the host grants on top, e.g. `skillcat run --allow-read`); the ceiling bounds both.
    ///
    /// The one grant function: a [`Session`](crate::Session) calls it when it loads
    /// the skill's scripts, for the runtime, `skillcat run` and `skillcat mcp` alike.
    pub fn grant_with(
        &self,
        extra: &Capabilities,
        ceiling: &Ceiling,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Grant {
        let ctx = Context {
            cwd: cwd.to_path_buf(),
            home: home.map(Path::to_path_buf),
            core_trusted_source: self.0.core_trusted,
        };
        intersect(&self.capabilities().with(extra), ceiling, &ctx)
    }
}

/// What kind of problem a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// The source could not be opened or listed; it contributes nothing.
    SourceUnavailable,
    /// The root is not a loadable skill (the fault says why); it is not in the catalog.
    Refused(FaultKind),
    /// The skill breaks a validation rule; it is in the catalog all the same.
    Invalid(FaultKind),
    /// The skill is hidden by a skill of the same name offered earlier.
    Shadowed,
    /// The source warned about what it served (a stale cached index after a network error,
    /// say); everything it offered is loaded.
    Warning,
}

impl DiagnosticKind {
    /// A stable code: `source-unavailable`, `refused`, `invalid`, `shadowed` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticKind::SourceUnavailable => "source-unavailable",
            DiagnosticKind::Refused(_) => "refused",
            DiagnosticKind::Invalid(_) => "invalid",
            DiagnosticKind::Shadowed => "shadowed",
            DiagnosticKind::Warning => "warning",
        }
    }

    /// The fault behind a refusal or a validation problem.
    pub fn fault(self) -> Option<FaultKind> {
        match self {
            DiagnosticKind::Refused(f) | DiagnosticKind::Invalid(f) => Some(f),
            _ => None,
        }
    }

    /// Whether the skill concerned is left out of the catalog (refused, shadowed, or its whole
    /// source unavailable).
    pub fn excludes(self) -> bool {
        !matches!(self, DiagnosticKind::Invalid(_) | DiagnosticKind::Warning)
    }
}

impl fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fault() {
            Some(k) => write!(f, "{}: {}", self.as_str(), k.as_str()),
            None => f.write_str(self.as_str()),
        }
    }
}

/// Something the catalog found while loading; never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The name of the source.
    pub source: String,
    /// The root within the source (`""` for the whole source, or a lone skill).
    pub root: String,
    /// Where it is, for people.
    pub location: String,
    /// What kind of problem.
    pub kind: DiagnosticKind,
    /// What is wrong, in a sentence.
    pub message: String,
    /// The kind of the error behind a [`SourceUnavailable`](DiagnosticKind::SourceUnavailable)
    /// (a certificate that does not verify, a server not reached, …): what a caller's own
    /// advice depends on, which the message does not give.
    pub error: Option<crate::ErrorKind>,
}

/// `location: message [kind]`.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} [{}]", self.location, self.message, self.kind)
    }
}

/// One loaded state of a catalog: entries and diagnostics that belong together.
#[derive(Debug, Default)]
pub struct Snapshot {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    diagnostics: Vec<Diagnostic>,
}

impl Snapshot {
    /// Every skill, in precedence order (sources in order, then each source's skills by name).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Everything found while loading, sources in order.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The skill of that name (`-` and `_` alike).
    pub fn find(&self, name: &str) -> Option<&Entry> {
        self.index.get(&name_key(name)).map(|&i| &self.entries[i])
    }

    /// The tier-1 block of every entry, in order, rendered as `opts` says.
    pub fn prompt(&self, opts: &PromptOptions) -> Rendered {
        let skills: Vec<PromptSkill<'_>> = self
            .entries
            .iter()
            .map(|e| PromptSkill {
                name: e.name(),
                description: e.skill().description(),
                location: e.location(),
            })
            .collect();
        render(&skills, opts)
    }
}

/// Skills from several sources in precedence order; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct Catalog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    sources: Vec<CatalogSource>,
    options: CatalogOptions,
    /// The current snapshot cell: filled once on first use; replaced whole by a reload.
    state: RwLock<Arc<OnceCell<Arc<Snapshot>>>>,
}

const _: () = {
    const fn shared<T: Send + Sync + Clone>() {}
    shared::<Catalog>();
    shared::<Entry>();
};

impl Catalog {
    /// A catalog of these sources (first = highest precedence), default options.
    pub fn new(sources: Vec<CatalogSource>) -> Self {
        Self::with_options(sources, CatalogOptions::default())
    }

    /// A catalog of these sources with options.
    pub fn with_options(sources: Vec<CatalogSource>, options: CatalogOptions) -> Self {
        Catalog {
            inner: Arc::new(Inner {
                sources,
                options,
                state: RwLock::new(Arc::new(OnceCell::new())),
            }),
        }
    }

    /// The configured sources, opened with the configured cache directory and validated with
    /// [`Config::validate_options`].
    pub fn from_config(config: &Config) -> Self {
        Self::with_options(
            config.sources.iter().map(CatalogSource::from).collect(),
            CatalogOptions {
                open: OpenOptions {
                    cache_dir: config.cache_dir.clone(),
                    ..OpenOptions::default()
                },
                validate: config.validate_options(),
                detail: Detail::default(),
            },
        )
    }

    /// The sources, in precedence order.
    pub fn sources(&self) -> &[CatalogSource] {
        &self.inner.sources
    }

    /// The options.
    pub fn options(&self) -> &CatalogOptions {
        &self.inner.options
    }

    /// Whether a snapshot is loaded.
    pub fn is_loaded(&self) -> bool {
        self.current().initialized()
    }

    fn current(&self) -> Arc<OnceCell<Arc<Snapshot>>> {
        self.inner
            .state
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The loaded state, loading it first if nobody has: concurrent callers wait for the one
    /// load.
    pub async fn snapshot(&self) -> Arc<Snapshot> {
        let cell = self.current();
        cell.get_or_init(|| self.load()).await.clone()
    }

    /// Every skill, in precedence order.
    pub async fn all(&self) -> Vec<Entry> {
        self.snapshot().await.entries.clone()
    }

    /// The skill of that name (`-` and `_` alike), from the highest-precedence source offering it.
    pub async fn find(&self, name: &str) -> Option<Entry> {
        self.snapshot().await.find(name).cloned()
    }

    /// Everything found while loading.
    pub async fn diagnostics(&self) -> Vec<Diagnostic> {
        self.snapshot().await.diagnostics.clone()
    }

    /// Reads every source again and replaces the loaded state; callers keep seeing the old one
    /// until the new one is complete.
    pub async fn reload(&self) {
        let fresh = self.load().await;
        *self
            .inner
            .state
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) =
            Arc::new(OnceCell::new_with(Some(fresh)));
    }

    /// The tier-1 block of the catalog, within `opts.budget` (see [`crate::prompt`]).
    pub async fn prompt(&self, opts: &PromptOptions) -> Rendered {
        self.snapshot().await.prompt(opts)
    }

    async fn load(&self) -> Arc<Snapshot> {
        let options = &self.inner.options;
        let loads = self.inner.sources.iter().map(|s| load_source(s, options));
        let per_source = futures_util::future::join_all(loads).await;

        let mut snap = Snapshot::default();
        for (src, loaded) in self.inner.sources.iter().zip(per_source) {
            snap.diagnostics.extend(loaded.diagnostics);
            let Some(handle) = loaded.source else {
                continue;
            };
            for (name, skill) in loaded.skills {
                let key = name_key(&name);
                if let Some(&winner) = snap.index.get(&key) {
                    let w: &Entry = &snap.entries[winner];
                    snap.diagnostics.push(Diagnostic {
                        source: src.name.clone(),
                        root: skill.root().to_string(),
                        location: skill.location().to_string(),
                        kind: DiagnosticKind::Shadowed,
                        error: None,
                        message: format!(
                            "skill `{name}` is shadowed by `{}` from source `{}` ({})",
                            w.name(),
                            w.source_name(),
                            w.location()
                        ),
                    });
                    continue;
                }
                snap.index.insert(key, snap.entries.len());
                snap.entries.push(Entry(Arc::new(EntryInner {
                    name,
                    skill,
                    source: handle.clone(),
                    source_name: src.name.clone(),
                    trusted: src.trusted,
                    core_trusted: src.core_trusted,
                })));
            }
        }
        Arc::new(snap)
    }
}

/// What one source gave.
struct Loaded {
    source: Option<Arc<dyn Source>>,
    skills: Vec<(String, Skill)>,
    diagnostics: Vec<Diagnostic>,
}

/// Whether a skill read earlier has all that `detail` asks for.
fn read_enough(skill: &Skill, detail: Detail) -> bool {
    match detail {
        Detail::Frontmatter => true,
        Detail::Document => skill.has_body(),
        Detail::Files => skill.has_body() && skill.has_files(),
    }
}

async fn load_source(src: &CatalogSource, options: &CatalogOptions) -> Loaded {
    let (open, validate) = (&options.open, &options.validate);
    let mut out = Loaded {
        source: None,
        skills: Vec::new(),
        diagnostics: Vec::new(),
    };
    let unavailable = |location: String, message: String, error: Option<&Error>| Diagnostic {
        source: src.name.clone(),
        root: String::new(),
        location,
        kind: DiagnosticKind::SourceUnavailable,
        message,
        error: error.map(Error::kind),
    };
    let handle: Arc<dyn Source> = match &src.origin {
        Origin::Source(s) => s.clone(),
        Origin::Spec(spec) => {
            let (spec_owned, opts) = (spec.clone(), open.clone());
            match crate::script::offload(move || source::open_with(&spec_owned, &opts)).await {
                Ok(Ok(s)) => s,
                // A missing root is an empty source.
                Ok(Err(Error::NotFound(_))) => return out,
                Ok(Err(e)) => {
                    out.diagnostics.push(unavailable(
                        spec.clone(),
                        format!("cannot open source: {e}"),
                        Some(&e),
                    ));
                    return out;
                }
                Err(join) => {
                    out.diagnostics.push(unavailable(
                        spec.clone(),
                        format!("cannot open source: {join}"),
                        None,
                    ));
                    return out;
                }
            }
        }
    };
    let seeded = src
        .discovered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .filter(|d| d.skills.iter().all(|s| read_enough(s, options.detail)));
    let found = match seeded {
        Some(found) => Ok(found),
        None => source::discover_with(&*handle, options.detail).await,
    };
    let found = match found {
        Ok(found) => found,
        Err(Error::NotFound(_)) => return out,
        Err(e) => {
            out.diagnostics.push(unavailable(
                handle.location(""),
                format!("cannot list source: {e}"),
                Some(&e),
            ));
            return out;
        }
    };
    // The source's warnings first, then diagnostics in its root order; skills by name (below).
    for w in found.warnings {
        out.diagnostics.push(Diagnostic {
            source: src.name.clone(),
            root: String::new(),
            location: handle.location(""),
            kind: DiagnosticKind::Warning,
            message: w,
            error: None,
        });
    }
    let mut diags: Vec<Diagnostic> = Vec::new();
    for f in found.faults {
        diags.push(Diagnostic {
            source: src.name.clone(),
            message: f.fault.message().to_string(),
            kind: DiagnosticKind::Refused(f.fault.kind()),
            root: f.root,
            location: f.location,
            error: None,
        });
    }
    for skill in found.skills {
        let diag = |kind, message: &str| Diagnostic {
            source: src.name.clone(),
            root: skill.root().to_string(),
            location: skill.location().to_string(),
            kind,
            message: message.to_string(),
            error: None,
        };
        if let Err(f) = skill.properties() {
            diags.push(diag(DiagnosticKind::Refused(f.kind()), f.message()));
            continue;
        }
        for f in skill.validate(validate) {
            diags.push(diag(DiagnosticKind::Invalid(f.kind()), f.message()));
        }
        out.skills.push((skill.name(), skill));
    }
    diags.sort_by(|a, b| a.root.as_bytes().cmp(b.root.as_bytes()));
    out.diagnostics.extend(diags);
    // A source's skills by name (ties keep the list order): precedence, then name, is the
    // order of the catalog and of its prompt block, which a budget cuts from the end.
    out.skills
        .sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.source = Some(handle);
    out
}
