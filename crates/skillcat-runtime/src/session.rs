//! [`Session`]: a catalog, a matcher, a runner and the host's module tools, and the tool set and
//! loaded set that its runs share. It knows nothing of a run: [`Run`](super::Run) (`run.rs`,
//! above it) starts runs from a session and reaches into its loaded set (`loaded.rs`, below it).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::activation::{Activation, Scripts};
use super::error::{RuntimeError, ToolError};
use super::loaded::{LoadedSet, Prepared};
use super::module::ModuleRegistry;
#[cfg(feature = "guest")]
use super::provider::GuestProvider;
use super::provider::{
    ModuleProvider, Provision, ScriptProvider, SkillContext, ToolProvider, provide,
};
use super::resource::{Resource, read_entry_resource};
use crate::capability::{Capabilities, Ceiling, Context};
use crate::catalog::{Catalog, Entry, Snapshot};
use crate::config::{Config, Environment, RuntimeAudit, ScriptsConfig};
use crate::matching::{Bm25Index, Matcher, SkillDoc};
use crate::script::Provenance;
use crate::script::{
    AllowAll, Gate, Interpreters, Runner, RunnerConfig, ScriptError, ScriptLimits, UserDirs, policy,
};
use crate::source::HeldSource;
use crate::tool::names::Contested;
use skillcat_audit::{AuditOptions, Severity, summary_at};

/// Builds the matcher of a catalog snapshot: hits index [`Snapshot::entries`].
pub type MatcherFactory = Arc<dyn Fn(&Snapshot) -> Arc<dyn Matcher> + Send + Sync>;

/// How long a module tool may take by default.
pub const DEFAULT_MODULE_TIMEOUT: Duration = Duration::from_secs(60);

/// The [`RunnerConfig`] a configuration stands for, for a session over `catalog`: the session
/// policy from the configured ceiling, expanded against `env` (`core` trust allowed only when a
/// source of the catalog is core-trusted: a grant is `core` only for such a source's skills),
/// its run limits, the workspace base of `user_dirs`, its interpreter allow-list (the host default when it names none) with the
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
    user_dirs: UserDirs,
) -> Result<RunnerConfig, ScriptError> {
    let ctx = Context {
        cwd: env.cwd.clone(),
        home: env.home.clone(),
        core_trusted_source: catalog.sources().iter().any(|s| s.is_core_trusted()),
    };
    let mut rc = RunnerConfig::new(
        policy::policy_from_ceiling(config.ceiling(), &ctx),
        user_dirs,
    );
    rc.limits = ScriptLimits::from_ceiling(config.ceiling());
    rc.interpreters = interpreters(&config.scripts)?;
    rc.caller_dir = std::fs::canonicalize(&env.cwd).ok();
    rc.pins = config.ceiling().resolve.clone();
    rc.protect = config.ceiling().protect.clone();
    // The catalog's directories of skills: nothing a run writes may change a skill.
    rc.skill_dirs = config
        .sources
        .iter()
        .filter_map(|s| std::fs::canonicalize(&s.path).ok())
        .filter(|p| p.is_dir())
        .collect();
    Ok(rc)
}

/// The interpreter allow-list a configuration's `[scripts]` section gives: the host default
/// ([`Interpreters::host_default`]) when it names none, with its `by_extension` map. What
/// [`runner_config`] runs scripts with and what the audit judges scripts by.
pub fn interpreters(scripts: &ScriptsConfig) -> Result<Interpreters, ScriptError> {
    let mut out = if scripts.interpreters.is_empty() {
        Interpreters::host_default()
    } else {
        let mut out = Interpreters::new();
        for (name, path) in &scripts.interpreters {
            out.insert(name, path.clone())?;
        }
        out
    };
    for (extension, name) in &scripts.by_extension {
        out.map_extension(extension, name)?;
    }
    Ok(out)
}

/// How a note of an activation starts when the audit withheld the skill's tools
/// (`[runtime] audit = "withhold"`).
pub const AUDIT_WITHHELD: &str = "tools withheld by the audit";

/// Configures a [`Session`]; see [`Session::builder`].
pub struct SessionBuilder {
    catalog: Catalog,
    runner: Option<Arc<Runner>>,
    ceiling: Ceiling,
    granted: Capabilities,
    granted_to: BTreeMap<String, Capabilities>,
    env: Option<Environment>,
    modules: ModuleRegistry,
    gate: Arc<dyn Gate>,
    module_timeout: Duration,
    top_k: usize,
    modules_for_untrusted: bool,
    matcher: Option<MatcherFactory>,
    audit: Option<AuditOptions>,
    user_dirs: Option<UserDirs>,
    #[cfg(feature = "guest")]
    guests: Option<Arc<crate::guest::GuestHost>>,
}

impl SessionBuilder {
    /// The user's directories (as the caller read them from its environment) that
    /// [`configure`](Self::configure) keeps workspaces in: call it first (default: the
    /// configuration environment's home alone, so workspaces go under `~/.cache/skillcat/ws`).
    pub fn user_dirs(mut self, dirs: UserDirs) -> Self {
        self.user_dirs = Some(dirs);
        self
    }

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
        // Without the user's directories given, the workspaces go under the home's cache.
        let dirs = self.user_dirs.clone().unwrap_or_else(|| UserDirs {
            home: env.home.clone(),
            ..UserDirs::default()
        });
        let runner = Runner::new(
            runner_config(config, &env, &self.catalog, dirs)?,
            gate.clone(),
        )?;
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
        let audit = match config.runtime.audit {
            RuntimeAudit::Off => None,
            RuntimeAudit::Withhold => Some(AuditOptions {
                interpreters: interpreters(&config.scripts)?,
                ..AuditOptions::default()
            }),
        };
        let mut this = this
            .config(config)
            .environment(env)
            .runner(Arc::new(runner))
            .gate(gate)
            .audit_tools(audit);
        // `[skills.NAME]`: the operator's grants to one skill.
        for (name, g) in &config.skills {
            this = this.granted_to(
                name,
                Capabilities {
                    fs_read: g.allow_read.clone(),
                    fs_write: g.allow_write.clone(),
                    network: g.allow_net.clone(),
                    ..Capabilities::default()
                },
            );
        }
        Ok(this)
    }

    /// Audit each skill as it is activated and withhold every tool of one with a high finding
    /// (`[runtime] audit = "withhold"`; default `None`: no audit). Its instructions and files
    /// are still given; a note says what was found.
    pub fn audit_tools(mut self, opts: Option<AuditOptions>) -> Self {
        self.audit = opts;
        self
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

    /// What the host grants one skill (by name; `-` and `_` alike) on top of what it declares
    /// and of [`granted`](Self::granted): a `[skills.NAME]` table of the configuration, which
    /// [`configure`](Self::configure) reads. The ceiling still bounds the sum.
    pub fn granted_to(mut self, skill: &str, extra: Capabilities) -> Self {
        self.granted_to.insert(skill.replace('_', "-"), extra);
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
            Environment {
                // No home given: `~` ceiling roots expand to nothing; not absolute when the
                // working directory cannot be read, and relative roots expand to nothing too.
                cwd: std::env::current_dir().unwrap_or_default(),
                home: None,
            }
        });
        let matcher = self.matcher.unwrap_or_else(|| Arc::new(bm25_matcher));
        let loaded = LoadedSet::new(self.modules.reserved());
        Session {
            inner: Arc::new(Inner {
                catalog: self.catalog,
                runner: self.runner,
                ceiling: self.ceiling,
                granted: self.granted,
                granted_to: self.granted_to,
                env,
                modules: self.modules,
                gate: self.gate,
                module_timeout: self.module_timeout,
                top_k: self.top_k,
                modules_for_untrusted: self.modules_for_untrusted,
                matcher,
                audit: self.audit,
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
    /// Per skill, by name with `_` as `-`.
    granted_to: BTreeMap<String, Capabilities>,
    env: Environment,
    modules: ModuleRegistry,
    gate: Arc<dyn Gate>,
    module_timeout: Duration,
    pub(super) top_k: usize,
    modules_for_untrusted: bool,
    matcher: MatcherFactory,
    /// How skills are audited before their tools are offered; `None`: they are not.
    audit: Option<AuditOptions>,
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

impl Session {
    /// A session over `catalog`; configure it and [`build`](SessionBuilder::build).
    pub fn builder(catalog: Catalog) -> SessionBuilder {
        SessionBuilder {
            catalog,
            runner: None,
            ceiling: Ceiling::default(),
            granted: Capabilities::default(),
            granted_to: BTreeMap::new(),
            env: None,
            modules: ModuleRegistry::new(),
            gate: Arc::new(AllowAll),
            module_timeout: DEFAULT_MODULE_TIMEOUT,
            top_k: 1,
            modules_for_untrusted: false,
            matcher: None,
            audit: None,
            user_dirs: None,
            #[cfg(feature = "guest")]
            guests: None,
        }
    }

    /// A session over the same catalog and configuration (runner, ceiling, grants, gate, module
    /// and guest tools, audit, matcher) with a loaded set of its own: its runs share no skill,
    /// tool name or workspace with this session's. The MCP server gives each client session
    /// one, so two clients never see each other's files.
    pub fn fork(&self) -> Session {
        let inner = &self.inner;
        Session {
            inner: Arc::new(Inner {
                catalog: inner.catalog.clone(),
                runner: inner.runner.clone(),
                ceiling: inner.ceiling.clone(),
                granted: inner.granted.clone(),
                granted_to: inner.granted_to.clone(),
                env: inner.env.clone(),
                modules: inner.modules.clone(),
                gate: inner.gate.clone(),
                module_timeout: inner.module_timeout,
                top_k: inner.top_k,
                modules_for_untrusted: inner.modules_for_untrusted,
                matcher: inner.matcher.clone(),
                audit: inner.audit.clone(),
                #[cfg(feature = "guest")]
                guests: inner.guests.clone(),
                ranker: Mutex::new(None),
                loaded: LoadedSet::new(inner.modules.reserved()),
            }),
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

    /// Everything activating `entry` takes, before its tools enter the tool set: each kind of
    /// tool asked in turn ([`provide`]), in the order a model is offered them.
    pub(super) async fn prepare(&self, entry: &Entry) -> Prepared {
        // Audited: from here on the skill's files are the bytes the audit read.
        let (entry, withheld) = self.audited(entry).await;
        let entry = &entry;
        let provenance = Provenance {
            skill: entry.name().to_string(),
            version: entry.skill().version().map(str::to_string),
            source: entry.source_name().to_string(),
        };
        // The session's grants, and the skill's own (`[skills.NAME]`) on top.
        let granted = match self.granted_to.get(&entry.name().replace('_', "-")) {
            Some(own) => self.granted.with(own),
            None => self.granted.clone(),
        };
        let skill = SkillContext {
            entry,
            provenance: &provenance,
            trusted: entry.scripts_allowed(),
            granted: &granted,
            ceiling: &self.ceiling,
            env: &self.env,
        };
        let scripts = ScriptProvider {
            runner: self.runner.as_ref(),
        };
        let modules = ModuleProvider {
            modules: &self.modules,
            gate: &self.gate,
            timeout: self.module_timeout,
            for_untrusted: self.modules_for_untrusted,
        };
        #[cfg(feature = "guest")]
        let guests = GuestProvider {
            host: self.guests.as_ref(),
            gate: &self.gate,
        };
        let providers: &[&dyn ToolProvider] = &[
            &scripts,
            &modules,
            #[cfg(feature = "guest")]
            &guests,
        ];
        let provision = match withheld {
            Some(note) => Provision {
                notes: vec![note],
                ..Provision::default()
            },
            None => provide(providers, &skill).await,
        };
        let (tools, calls) = provision
            .tools
            .into_iter()
            .map(|p| (p.spec, p.call))
            .unzip();
        Prepared {
            activation: Activation {
                name: entry.name().to_string(),
                provenance,
                body: entry.skill().body().to_string(),
                tools,
                notes: provision.notes,
                entry: entry.clone(),
                scripts: provision.scripts.unwrap_or(Scripts::None),
            },
            script: provision.script,
            calls,
        }
    }

    /// `entry` as the session uses it, and why the audit withholds its tools, when the session
    /// audits and it does: a high finding, or a skill that could not be read to be audited.
    ///
    /// When the session audits, the skill's files are read once ([`HeldSource`]) and the entry
    /// returned reads them from there: the audit, the tools offered, the workspace a script
    /// runs in and a guest's `readSkillFile` all take the bytes the audit read, so a file
    /// changed in the source after the audit changes nothing that runs.
    async fn audited(&self, entry: &Entry) -> (Entry, Option<String>) {
        let Some(opts) = self.audit.as_ref() else {
            return (entry.clone(), None);
        };
        let unreadable = |e: &dyn std::fmt::Display| {
            format!(
                "{AUDIT_WITHHELD}: the skill could not be audited ({e}; [runtime] audit = \"withhold\")"
            )
        };
        let held = match HeldSource::read(entry.source().clone(), entry.skill()).await {
            Ok(held) => entry.with_source(Arc::new(held)),
            Err(e) => return (entry.clone(), Some(unreadable(&e))),
        };
        let withheld = match skillcat_audit::audit(&**held.source(), held.skill(), opts).await {
            Ok(findings) => summary_at(&findings, Severity::High).map(|high| {
                format!(
                    "{AUDIT_WITHHELD}: it found {high} ([runtime] audit = \"withhold\"; `skillcat audit` lists them)"
                )
            }),
            Err(e) => Some(unreadable(&e)),
        };
        (held, withheld)
    }

    /// Puts a prepared skill into the loaded set (or joins the one another run put there
    /// meanwhile); a tool name that is taken, by the tool set or a reserved host tool, is
    /// refused and nothing of the skill enters.
    pub(super) fn install(&self, key: String, prepared: Prepared) -> Result<Activation, ToolError> {
        self.loaded.acquire_prepared(key, prepared)
    }
}
