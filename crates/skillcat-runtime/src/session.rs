//! [`Session`]: a catalog, a matcher, a runner and the host's module tools, and the tool set and
//! loaded set that its [`Run`]s share.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::{RuntimeError, ToolError};
use super::loaded::{LoadedSet, Prepared};
use super::module::{ModuleRegistry, WrappedTool};
use super::resource::Resource;
use super::run::Run;
use super::spec::ToolSpec;
use crate::capability::{Capabilities, Ceiling, Context, Grant};
use crate::catalog::{Catalog, Entry, Snapshot};
use crate::config::{Config, Environment};
use crate::matching::{Bm25Index, Matcher, SkillDoc};
use crate::path::join_path;
use crate::script::Provenance;
use crate::script::{
    AllowAll, Gate, Interpreters, Runner, RunnerConfig, ScriptError, ScriptLimits, SkillTools,
    policy,
};
use crate::tool::ToolKind;
use crate::tool::names::Contested;

/// Builds the matcher of a catalog snapshot: hits index [`Snapshot::entries`].
pub type MatcherFactory = Arc<dyn Fn(&Snapshot) -> Arc<dyn Matcher> + Send + Sync>;

/// How long a module tool may take by default.
pub const DEFAULT_MODULE_TIMEOUT: Duration = Duration::from_secs(60);

/// The [`RunnerConfig`] a configuration stands for, for a session over `catalog`: the session
/// policy from the configured ceiling, expanded against `env` (`core` trust allowed only when a
/// source of the catalog is core-trusted: a grant is `core` only for such a source's skills),
/// its run limits, its interpreter allow-list (the host default when it names none) with the
/// `[scripts.by_extension]` map, and `env`'s working directory as the caller's (a script whose
/// grant reaches it starts there: [`start_dir`](crate::script::start_dir)). The
/// helper is the current executable, which must call
/// [`helper_main`](crate::script::sandbox::helper_main) first thing in `main`.
///
/// The one place a runner configuration is made from a configuration;
/// [`SessionBuilder::configure`] calls it.
pub fn runner_config(
    config: &Config,
    env: &Environment,
    catalog: &Catalog,
) -> Result<RunnerConfig, ScriptError> {
    let ctx = Context {
        cwd: env.cwd.clone(),
        home: env.home.clone(),
        core_trusted_source: catalog.sources().iter().any(|s| s.is_core_trusted()),
    };
    let mut rc = RunnerConfig::new(policy::policy_from_ceiling(config.ceiling(), &ctx));
    rc.limits = ScriptLimits::from_ceiling(config.ceiling());
    if !config.scripts.interpreters.is_empty() {
        let mut interpreters = Interpreters::new();
        for (name, path) in &config.scripts.interpreters {
            interpreters.insert(name, path.clone())?;
        }
        rc.interpreters = interpreters;
    }
    for (extension, name) in &config.scripts.by_extension {
        rc.interpreters.map_extension(extension, name)?;
    }
    rc.caller_dir = std::fs::canonicalize(&env.cwd).ok();
    Ok(rc)
}

/// Configures a [`Session`]; see [`Session::builder`].
pub struct SessionBuilder {
    catalog: Catalog,
    runner: Option<Arc<Runner>>,
    ceiling: Ceiling,
    granted: Capabilities,
    env: Option<Environment>,
    modules: ModuleRegistry,
    gate: Arc<dyn Gate>,
    module_timeout: Duration,
    top_k: usize,
    modules_for_untrusted: bool,
    matcher: Option<MatcherFactory>,
    #[cfg(feature = "guest")]
    guests: Option<Arc<crate::guest::GuestHost>>,
}

impl SessionBuilder {
    /// Everything a configuration says: its ceiling, the directories grants are expanded
    /// against, and script tools run by the runner the configuration stands for
    /// ([`runner_config`]). `gate` is asked before every script run and every module tool call.
    ///
    /// Fails when the configured interpreters are not acceptable
    /// ([`ScriptError::InvalidDeclaration`]) or the workspace base cannot be opened.
    pub fn configure(
        self,
        config: &Config,
        env: Environment,
        gate: Arc<dyn Gate>,
    ) -> Result<Self, ScriptError> {
        let runner = Runner::new(runner_config(config, &env, &self.catalog)?, gate.clone())?;
        // Guest tools are evaluated by the same binary the runner re-executes.
        #[cfg(feature = "guest")]
        let this = {
            let helper = runner.config().helper.clone();
            let host = self.guests.clone();
            let host = host
                .map(|h| (*h).clone())
                .unwrap_or_default()
                .helper(helper);
            self.guests(host)
        };
        #[cfg(not(feature = "guest"))]
        let this = self;
        Ok(this
            .config(config)
            .environment(env)
            .runner(Arc::new(runner))
            .gate(gate))
    }

    /// The runner of script tools (it has its own gate). Without one, no script tool is offered.
    pub fn runner(mut self, runner: Arc<Runner>) -> Self {
        self.runner = Some(runner);
        self
    }

    /// The capability ceiling skills' grants are computed under (default: [`Ceiling::default`],
    /// read-only access to the working directory).
    pub fn ceiling(mut self, ceiling: Ceiling) -> Self {
        self.ceiling = ceiling;
        self
    }

    /// The ceiling of a configuration.
    pub fn config(self, config: &Config) -> Self {
        self.ceiling(config.ceiling().clone())
    }

    /// What the host grants every skill of the session on top of what it declares (default:
    /// nothing): paths to read or write and the network, as `skillcat run --allow-read PATH
    /// --allow-write PATH --allow-net` give them ([`Capabilities::with`]). The
    /// [ceiling](Self::ceiling) still bounds the sum: a path outside it is not granted.
    pub fn granted(mut self, extra: Capabilities) -> Self {
        self.granted = extra;
        self
    }

    /// The working and home directories grants are expanded against (default: the process's;
    /// when those cannot be read, relative and `~` paths grant nothing).
    pub fn environment(mut self, env: Environment) -> Self {
        self.env = Some(env);
        self
    }

    /// The host's module tools (and reserved tool names).
    pub fn modules(mut self, modules: ModuleRegistry) -> Self {
        self.modules = modules;
        self
    }

    /// The gate asked before every module tool call (default: allow all). Scripts are asked
    /// about by the runner's gate: [`configure`](Self::configure) gives both the same one.
    pub fn gate(mut self, gate: Arc<dyn Gate>) -> Self {
        self.gate = gate;
        self
    }

    /// How long a module tool may take (default [`DEFAULT_MODULE_TIMEOUT`]).
    pub fn module_timeout(mut self, timeout: Duration) -> Self {
        self.module_timeout = timeout;
        self
    }

    /// How many of the best-matching skills a message activates (default 1).
    pub fn top_k(mut self, k: usize) -> Self {
        self.top_k = k;
        self
    }

    /// Whether skills of untrusted sources get their module tools (default `false`: an
    /// untrusted skill brings its instructions only, never tools).
    pub fn module_tools_for_untrusted(mut self, on: bool) -> Self {
        self.modules_for_untrusted = on;
        self
    }

    /// The host of guest tools (tier 2): the host functions guests may call and the limits.
    /// Without one, no guest tool is offered; [`configure`](Self::configure) sets one with no
    /// host functions (keeping one set before), run by the runner's helper.
    #[cfg(feature = "guest")]
    pub fn guests(mut self, host: crate::guest::GuestHost) -> Self {
        self.guests = Some(Arc::new(host));
        self
    }

    /// How the matcher is built from each catalog snapshot (default: the BM25 [`Bm25Index`] over
    /// name, description and body).
    pub fn matcher(mut self, factory: MatcherFactory) -> Self {
        self.matcher = Some(factory);
        self
    }

    /// The session.
    pub fn build(self) -> Session {
        let env = self.env.unwrap_or_else(|| {
            Environment::current().unwrap_or(Environment {
                // Not absolute: relative and `~` ceiling roots expand to nothing.
                cwd: PathBuf::new(),
                home: None,
            })
        });
        let matcher = self.matcher.unwrap_or_else(|| Arc::new(bm25_matcher));
        let loaded = LoadedSet::new(self.modules.reserved());
        Session {
            inner: Arc::new(Inner {
                catalog: self.catalog,
                runner: self.runner,
                ceiling: self.ceiling,
                granted: self.granted,
                env,
                modules: self.modules,
                gate: self.gate,
                module_timeout: self.module_timeout,
                top_k: self.top_k,
                modules_for_untrusted: self.modules_for_untrusted,
                matcher,
                #[cfg(feature = "guest")]
                guests: self.guests,
                ranker: Mutex::new(None),
                loaded,
            }),
        }
    }
}

fn bm25_matcher(snapshot: &Snapshot) -> Arc<dyn Matcher> {
    let docs: Vec<SkillDoc<'_>> = snapshot
        .entries()
        .iter()
        .map(|e| SkillDoc::from_skill(e.skill()))
        .collect();
    Arc::new(Bm25Index::build(&docs))
}

/// An agent's view of a catalog: matching, activation for a run, tool calls, resources. A
/// cheap handle: `Clone` shares it, and it is `Send + Sync`.
///
/// The session keeps one **tool set** and one **loaded set**: the tools and skills of every run
/// in progress. A skill active in two runs at once is loaded once and shared; its tools and
/// workspace go when the last run using it ends.
#[derive(Clone)]
pub struct Session {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) catalog: Catalog,
    pub(super) runner: Option<Arc<Runner>>,
    ceiling: Ceiling,
    granted: Capabilities,
    env: Environment,
    modules: ModuleRegistry,
    gate: Arc<dyn Gate>,
    module_timeout: Duration,
    pub(super) top_k: usize,
    modules_for_untrusted: bool,
    matcher: MatcherFactory,
    #[cfg(feature = "guest")]
    guests: Option<Arc<crate::guest::GuestHost>>,
    /// The matcher of the last snapshot ranked against.
    ranker: Mutex<Option<Ranker>>,
    /// The loaded set and tool map every run shares.
    pub(super) loaded: LoadedSet,
}

/// A snapshot and the matcher built from it.
type Ranker = (Arc<Snapshot>, Arc<dyn Matcher>);

const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Session>();
    shared::<Run>();
};

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("catalog", &self.inner.catalog)
            .field("runner", &self.inner.runner)
            .field("modules", &self.inner.modules)
            .field("top_k", &self.inner.top_k)
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

/// A skill ranked for a message.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The skill.
    pub entry: Entry,
    /// Its score (for ranking only).
    pub score: f32,
}

/// What activating a skill gave a run: its instructions (tier 2) and its tools.
#[derive(Debug, Clone)]
pub struct Activation {
    /// The skill's name.
    pub name: String,
    /// Name, version and source.
    pub provenance: Provenance,
    /// The body of its SKILL.md: instructions for the model.
    pub body: String,
    /// The tools it brings: script tools (trusted sources only), then module tools.
    pub tools: Vec<ToolSpec>,
    /// Why tools were withheld or scripts skipped; never silent.
    pub notes: Vec<String>,
    pub(super) entry: Entry,
    pub(super) scripts: Scripts,
}

/// What became of a skill's scripts at activation.
#[derive(Debug, Clone)]
pub(super) enum Scripts {
    /// Not loaded: none, an untrusted source, or a session without a runner (see the notes).
    None,
    /// Loaded: what discovery found, and the grant the runs get.
    Loaded(Arc<SkillTools>, Grant),
    /// Loading failed.
    Failed(ScriptError),
}

impl Activation {
    /// The catalog entry activated.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// The skill's script tools as found when its scripts were loaded: those offered (also in
    /// [`tools`](Self::tools)) and those skipped, with why. `None` when its scripts were not
    /// loaded (see [`notes`](Self::notes) and [`script_error`](Self::script_error)).
    pub fn script_tools(&self) -> Option<&SkillTools> {
        match &self.scripts {
            Scripts::Loaded(tools, _) => Some(tools),
            _ => None,
        }
    }

    /// The effective grant of the skill's scripts (declared ∩ ceiling), when they were loaded.
    pub fn script_grant(&self) -> Option<&Grant> {
        match &self.scripts {
            Scripts::Loaded(_, grant) => Some(grant),
            _ => None,
        }
    }

    /// Why the skill's scripts could not be loaded (also in the notes).
    pub fn script_error(&self) -> Option<&ScriptError> {
        match &self.scripts {
            Scripts::Failed(e) => Some(e),
            _ => None,
        }
    }
}

impl Session {
    /// A session over `catalog`; configure it and [`build`](SessionBuilder::build).
    pub fn builder(catalog: Catalog) -> SessionBuilder {
        SessionBuilder {
            catalog,
            runner: None,
            ceiling: Ceiling::default(),
            granted: Capabilities::default(),
            env: None,
            modules: ModuleRegistry::new(),
            gate: Arc::new(AllowAll),
            module_timeout: DEFAULT_MODULE_TIMEOUT,
            top_k: 1,
            modules_for_untrusted: false,
            matcher: None,
            #[cfg(feature = "guest")]
            guests: None,
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The host's module tools.
    pub fn modules(&self) -> &ModuleRegistry {
        &self.inner.modules
    }

    /// The best `k` skills for `message`, best first.
    pub async fn rank(&self, message: &str, k: usize) -> Result<Vec<Candidate>, RuntimeError> {
        let (snapshot, matcher) = self.inner.matcher().await;
        let hits = matcher
            .rank(message, k)
            .await
            .map_err(|e| RuntimeError::Match {
                reason: e.to_string(),
            })?;
        Ok(hits
            .into_iter()
            .filter_map(|h| {
                snapshot.entries().get(h.index).map(|e| Candidate {
                    entry: e.clone(),
                    score: h.score,
                })
            })
            .collect())
    }

    /// A run with nothing active yet.
    pub fn start(&self) -> Run {
        Run::new(self.clone())
    }

    /// A run with the best-matching skills for `message` active (at most
    /// [`top_k`](SessionBuilder::top_k); none when nothing matches).
    pub async fn begin(&self, message: &str) -> Result<Run, RuntimeError> {
        let mut run = self.start();
        run.activate_matching(message).await?;
        Ok(run)
    }

    /// A run with the skills of these names active (`-` and `_` alike).
    pub async fn begin_with(&self, names: &[&str]) -> Result<Run, RuntimeError> {
        let mut run = self.start();
        for name in names {
            run.activate(name).await?;
        }
        Ok(run)
    }

    /// The names of the session's tool set (every run in progress), sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.loaded.tool_names()
    }

    /// Every tool name the session has seen contested — two or more tools whose names are one
    /// to a model (case and `-`/`_` aside) — with who claimed it. None of them is offered under
    /// such a name, now or later in the session, whatever order the skills were activated in.
    pub fn contested_tools(&self) -> Vec<Contested> {
        self.inner.loaded.contested()
    }

    /// The names of the skills in the loaded set (active in some run), sorted.
    pub fn loaded_skills(&self) -> Vec<String> {
        self.inner.loaded.skill_names()
    }

    /// Tier 3: a file of any catalog skill, by a path as its body writes it.
    pub async fn read_resource(&self, skill: &str, path: &str) -> Result<Resource, RuntimeError> {
        let entry =
            self.inner
                .catalog
                .find(skill)
                .await
                .ok_or_else(|| RuntimeError::SkillNotFound {
                    name: skill.to_string(),
                })?;
        read_entry_resource(&entry, path).await
    }
}

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

impl Inner {
    async fn matcher(&self) -> (Arc<Snapshot>, Arc<dyn Matcher>) {
        let snapshot = self.catalog.snapshot().await;
        let mut ranker = self.ranker.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, m)) = &*ranker
            && Arc::ptr_eq(s, &snapshot)
        {
            return (s.clone(), m.clone());
        }
        let matcher = (self.matcher)(&snapshot);
        *ranker = Some((snapshot.clone(), matcher.clone()));
        (snapshot, matcher)
    }

    /// Everything activating `entry` takes, before its tools enter the tool set.
    pub(super) async fn prepare(&self, entry: &Entry) -> Prepared {
        let provenance = Provenance {
            skill: entry.name().to_string(),
            version: entry.skill().version().map(str::to_string),
            source: entry.source_name().to_string(),
        };
        let mut tools = Vec::new();
        let mut notes = Vec::new();
        let trusted = entry.scripts_allowed();
        let has_scripts = entry.skill().frontmatter().get("scripts").is_some()
            || entry
                .skill()
                .files()
                .iter()
                .any(|f| f.path.starts_with("scripts/"));
        let mut scripts = Scripts::None;
        let script = match (&self.runner, trusted) {
            _ if !has_scripts => None,
            (_, false) => {
                notes.push(format!(
                    "script tools withheld: source '{}' is not trusted",
                    entry.source_name()
                ));
                None
            }
            (None, true) => {
                notes.push("script tools withheld: this session runs no scripts".to_string());
                None
            }
            (Some(runner), true) => {
                // The one place a skill's grant is computed.
                let grant = entry.grant_with(
                    &self.granted,
                    &self.ceiling,
                    &self.env.cwd,
                    self.env.home.as_deref(),
                );
                match runner
                    .load(entry.source().clone(), entry.skill().clone(), grant)
                    .await
                {
                    Ok(loaded) => {
                        for s in &loaded.tools().skipped {
                            notes.push(format!(
                                "script {} not offered: {} ({})",
                                s.path,
                                s.error,
                                s.error.code()
                            ));
                        }
                        tools.extend(loaded.tools().tools.iter().map(|t| ToolSpec {
                            name: t.name.clone(),
                            description: t.description.clone(),
                            parameters: t.schema(),
                            kind: ToolKind::Script,
                            provenance: provenance.clone(),
                            trusted: false,
                        }));
                        scripts = Scripts::Loaded(
                            Arc::new(loaded.tools().clone()),
                            loaded.grant().clone(),
                        );
                        Some(Arc::new(loaded))
                    }
                    Err(e) => {
                        notes.push(format!("script tools withheld: {e} ({})", e.code()));
                        scripts = Scripts::Failed(e);
                        None
                    }
                }
            }
        };
        let modules: Vec<Arc<WrappedTool>> = if trusted || self.modules_for_untrusted {
            self.modules
                .wrap(&provenance, self.gate.clone(), self.module_timeout)
                .into_iter()
                .map(Arc::new)
                .collect()
        } else {
            if !self.modules.names_of(entry.name()).is_empty() {
                notes.push(format!(
                    "module tools withheld: source '{}' is not trusted",
                    entry.source_name()
                ));
            }
            Vec::new()
        };
        tools.extend(modules.iter().map(|m| m.spec().clone()));
        #[cfg(feature = "guest")]
        let guests = self
            .prepare_guests(entry, trusted, &provenance, &mut tools, &mut notes)
            .await;
        Prepared {
            activation: Activation {
                name: entry.name().to_string(),
                provenance,
                body: entry.skill().body().to_string(),
                tools,
                notes,
                entry: entry.clone(),
                scripts,
            },
            script,
            modules,
            #[cfg(feature = "guest")]
            guests,
        }
    }

    /// A skill's guest tools (trusted sources only, like scripts), with `readSkillFile` (a file
    /// of the skill itself, as tier 3 reads it) among the host functions they may declare.
    #[cfg(feature = "guest")]
    async fn prepare_guests(
        &self,
        entry: &Entry,
        trusted: bool,
        provenance: &Provenance,
        tools: &mut Vec<ToolSpec>,
        notes: &mut Vec<String>,
    ) -> Vec<Arc<crate::guest::GuestTool>> {
        use crate::guest::{Globals, declare::TOOLS_KEY};
        let declares = entry
            .skill()
            .frontmatter()
            .get("metadata")
            .and_then(crate::document::Value::as_map)
            .is_some_and(|m| m.contains_key(TOOLS_KEY));
        let host = match (&self.guests, trusted) {
            _ if !declares => return Vec::new(),
            (_, false) => {
                notes.push(format!(
                    "guest tools withheld: source '{}' is not trusted",
                    entry.source_name()
                ));
                return Vec::new();
            }
            (None, true) => {
                notes.push("guest tools withheld: this session runs no guest code".to_string());
                return Vec::new();
            }
            (Some(host), true) => host,
        };
        let mut extra = Globals::new();
        extra.insert(
            "readSkillFile".to_string(),
            Arc::new(SkillFile(entry.clone())),
        );
        let (guests, faults) = crate::guest::load(
            host,
            &self.gate,
            entry.source(),
            entry.root(),
            entry.skill(),
            provenance,
            &extra,
        )
        .await;
        for f in faults {
            notes.push(format!("guest tool not offered: {f} ({})", f.code()));
        }
        tools.extend(guests.iter().map(|g| ToolSpec {
            name: g.name().to_string(),
            description: g.declaration().description.clone(),
            parameters: g.schema(),
            kind: ToolKind::Guest,
            provenance: provenance.clone(),
            trusted: false,
        }));
        guests
    }

    /// Puts a prepared skill into the loaded set (or joins the one another run put there
    /// meanwhile); a tool name that is taken, by the tool set or a reserved host tool, is
    /// refused and nothing of the skill enters.
    pub(super) fn install(&self, key: String, prepared: Prepared) -> Result<Activation, ToolError> {
        self.loaded.acquire_prepared(key, prepared)
    }
}

/// `readSkillFile(path)`: a guest reads a file of its own skill (text), by a path as the
/// skill's body writes it; nothing outside the skill.
#[cfg(feature = "guest")]
struct SkillFile(Entry);

#[cfg(feature = "guest")]
#[async_trait::async_trait]
impl crate::guest::HostFunction for SkillFile {
    async fn call(&self, args: serde_json::Value) -> Result<serde_json::Value, String> {
        let path = match &args {
            serde_json::Value::String(p) => p.as_str(),
            other => other
                .get("path")
                .and_then(serde_json::Value::as_str)
                .ok_or("readSkillFile takes a path (a string)")?,
        };
        let r = read_entry_resource(&self.0, path)
            .await
            .map_err(|e| e.to_string())?;
        String::from_utf8(r.data.to_vec())
            .map(serde_json::Value::String)
            .map_err(|_| format!("{path} is not UTF-8 text"))
    }
}
