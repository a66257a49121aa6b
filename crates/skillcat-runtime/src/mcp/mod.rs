//! A Model Context Protocol server over a session's catalog (skills, the prompt block, tools),
//! over stdio or Streamable HTTP: one handler, two transports.
//!
//! ```text
//! MCP client ──stdio (JSON-RPC lines)──────┐
//! MCP clients ─HTTP POST/GET/DELETE /mcp ──┤ (http.rs: Origin 403 · bearer token 401 ·
//!                                          │  token's requests 429 · session id 400/404 ·
//!                                          │  body 408/413 · stream duration; sessions.rs:
//!                                          │  sessions 503, each bound to its token)
//!                                          ▼
//!            McpServer (rmcp ServerHandler; one per client session, sharing one View)
//!              ├─ resources   skill://<name>/SKILL.md, skill://<name>/<path>; size + digest
//!              ├─ resources/directory/read   skill://<name>, skill://<name>/<dir>
//!              ├─ skills/list, skills/get    SEP-2640 {uri, frontmatter, resources}
//!              ├─ prompts     available_skills: the tier-1 block
//!              └─ tools       the tools of the session's own Run (a Session::fork of its
//!                             own: its own workspaces), made for the View it was first
//!                             asked under
//!  View: catalog snapshot + file index + tool list; replaced by the live catalog (live.rs)
//!        on a change, which each session hears as notifications/…/list_changed
//! ```
//!
//! The server is a client of a [`Session`]: the skills it lists, the block its prompt renders
//! (with `skill://` URIs as locations, since a client reads skills through the server) and the
//! tools it offers are those of the current **view**, made from one catalog snapshot. Without
//! [`watch`](McpServer::watch) the view is the one made at start; with it, a change on disk
//! (or in a source re-checked on an interval) makes a new view, and every client session is
//! told what changed. Every skill is a resource whatever its source's trust; its tools are
//! what the session gives a run that activates it: script tools only for skills of a trusted
//! source ([`Entry::scripts_allowed`](crate::catalog::Entry::scripts_allowed)) and only when the session has a runner. A tool's
//! failure is a tool result with `isError: true`, the model text of the error and its stable
//! code in `_meta.code`; an unknown tool is a protocol error (`-32602`).
//!
//! **Client sessions.** Each client session (the stdio client; each `Mcp-Session-Id` over
//! HTTP) has a [`Session::fork`] of its own and so its own workspaces, made at its first tool
//! call and removed when it ends. A tool call keeps the tool set (and the workspaces) it
//! started with when the view changes under it; the session's next call uses a tool set of
//! the new view.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use skillcat_runtime::catalog::{Catalog, CatalogSource};
//! use skillcat_runtime::mcp::McpServer;
//! use skillcat_core::prompt::PromptOptions;
//! use skillcat_runtime::Session;
//!
//! let catalog = Catalog::new(vec![CatalogSource::spec("fixtures/skills")]);
//! // A session without a runner: resources and the prompt, no script tools.
//! let session = Session::builder(catalog).build();
//! let server = McpServer::new(&session, PromptOptions::default()).await;
//! for w in server.warnings() {
//!     eprintln!("warning: {w}");
//! }
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```

mod handler;
mod hints;
#[cfg(feature = "http")]
mod http;
mod live;
#[cfg(feature = "http")]
mod sessions;
mod skills;
mod tools;
mod transport;
pub mod uri;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::service::RoleServer;
use rmcp::transport::IntoTransport;

use crate::Session;
use crate::prompt::PromptOptions;
#[cfg(feature = "http")]
pub use http::{EventStream, HttpError, HttpOptions, McpHttp};
use live::{Changed, View};
pub use live::{LiveOptions, Log, Watching};
use tools::ToolSet;

/// The name of the one prompt the server offers: the `<available_skills>` block.
pub const PROMPT_NAME: &str = "available_skills";

/// SEP-2640's host limit on the files of one skill: a skill with more is not offered through
/// `skills/list` (it is still a resource).
pub const SKILL_FILE_LIMIT: usize = 512;

/// SEP-2640's host limit on the bytes of one skill's files (16 MiB).
pub const SKILL_BYTE_LIMIT: u64 = 16 * 1024 * 1024;

/// What one client session may do at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Tool calls one client session may have running at once (default 8); one more is
    /// refused with a protocol error (`-32000`, `data.code = "E_SKILL_MCP_BUSY"`).
    pub max_calls_per_session: usize,
    /// Tool calls running at once in the whole server, every client session and every
    /// request of the stateless revision counted (default 64); one more is refused as
    /// `max_calls_per_session` refuses.
    pub max_runs: usize,
    /// On [`shutdown`](McpServer::shutdown), how long calls still running are given to end
    /// before their workspaces are removed under them (default 10 s).
    pub drain_timeout: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_calls_per_session: 8,
            max_runs: 64,
            drain_timeout: Duration::from_secs(10),
        }
    }
}

impl ServerOptions {
    /// The defaults with `n` calls at once per client session (at least 1).
    pub fn with_max_calls_per_session(mut self, n: usize) -> Self {
        self.max_calls_per_session = n.max(1);
        self
    }

    /// The defaults with `n` calls at once in the whole server (at least 1).
    pub fn with_max_runs(mut self, n: usize) -> Self {
        self.max_runs = n.max(1);
        self
    }

    /// The defaults with another drain timeout.
    pub fn with_drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
}

/// An MCP server over a catalog; see the [module docs](self).
///
/// Cheap to clone: a clone is the same client session. [`client_session`](Self::client_session)
/// makes another one over the same view.
#[derive(Debug, Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    local: Arc<Local>,
}

/// What every client session shares: the session it forks, the current view, the live
/// catalog's news.
#[derive(Debug)]
struct Shared {
    session: Session,
    prompt: PromptOptions,
    options: ServerOptions,
    view: RwLock<Arc<View>>,
    changes: tokio::sync::broadcast::Sender<Changed>,
    /// What the first view could not offer, and the catalog's diagnostics then.
    warnings: Vec<String>,
    /// Every client session alive (for shutdown).
    locals: Mutex<Vec<Weak<Local>>>,
    /// Tool calls running, in every client session.
    calls: AtomicUsize,
    /// The server's run slots (`max_runs`).
    runs: Arc<tokio::sync::Semaphore>,
    /// Set by [`McpServer::shutdown`]: no tool set is made after it.
    closed: std::sync::atomic::AtomicBool,
}

/// One client session: its tool set (made for one view, on first use) and its call limit.
#[derive(Debug)]
struct Local {
    tools: tokio::sync::Mutex<Option<Arc<ToolSet>>>,
    calls: Arc<tokio::sync::Semaphore>,
    /// Cancelled when the client session is gone (the notifier stops).
    gone: tokio_util::sync::CancellationToken,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.gone.cancel();
    }
}

/// The run slots of the caller's token, which the HTTP transport puts on each request it
/// passes on; a `tools/call` takes one for as long as it runs.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct TokenRuns {
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    pub(crate) limit: usize,
}

/// Why serving stopped with an error; the transport's or the service's own error is kept as
/// the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The client never completed the protocol's initialisation (or the transport failed first).
    #[error("MCP initialisation failed: {0}")]
    Initialize(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The service task failed.
    #[error("the MCP service failed: {0}")]
    Service(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Serving ended, but a workspace could not be removed.
    #[error("removing workspaces failed:{}", each_failure(.0))]
    Cleanup(Vec<crate::script::ScriptError>),
}

/// `" e1; e2;"`: each workspace that could not be removed.
fn each_failure(errors: &[crate::script::ScriptError]) -> String {
    errors.iter().map(|e| format!(" {e};")).collect()
}

impl McpServer {
    /// A server over the current snapshot of the session's catalog (loading it if needed),
    /// with the default [`ServerOptions`]. `prompt` renders the prompt block (format and
    /// budget; a client may ask for another format). Every skill is activated now, once, to
    /// know the tools offered: what could not be offered is in [`warnings`](Self::warnings),
    /// as are the catalog's diagnostics.
    pub async fn new(session: &Session, prompt: PromptOptions) -> McpServer {
        Self::with_options(session, prompt, ServerOptions::default()).await
    }

    /// [`new`](Self::new) with options.
    pub async fn with_options(
        session: &Session,
        prompt: PromptOptions,
        options: ServerOptions,
    ) -> McpServer {
        let snapshot = session.catalog().snapshot().await;
        let view = View::make(session, &snapshot, 0).await;
        let warnings = view.warnings.clone();
        let (changes, _) = tokio::sync::broadcast::channel(16);
        let runs = Arc::new(tokio::sync::Semaphore::new(options.max_runs.max(1)));
        let shared = Arc::new(Shared {
            session: session.clone(),
            prompt,
            options,
            view: RwLock::new(Arc::new(view)),
            changes,
            warnings,
            locals: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
            runs,
            closed: std::sync::atomic::AtomicBool::new(false),
        });
        let local = Shared::local(&shared);
        McpServer { shared, local }
    }

    /// Another client session over the same view, with its own tool set and workspaces (what
    /// the HTTP transport makes for each `Mcp-Session-Id`).
    pub fn client_session(&self) -> McpServer {
        McpServer {
            shared: self.shared.clone(),
            local: Shared::local(&self.shared),
        }
    }

    /// What the server could not offer at start, and the catalog's diagnostics, in sentences.
    pub fn warnings(&self) -> &[String] {
        &self.shared.warnings
    }

    /// The names of the tools offered now, in catalog order.
    pub fn tool_names(&self) -> Vec<String> {
        self.view()
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// The current view.
    fn view(&self) -> Arc<View> {
        self.shared.view()
    }

    /// Serves over standard input and output until the client closes its end (EOF), then
    /// [shuts down](Self::shutdown). Nothing but protocol messages is written to stdout.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve_stdio_until(std::future::pending()).await
    }

    /// [`serve_stdio`](Self::serve_stdio), stopping early when `stop` completes (a signal).
    pub async fn serve_stdio_until(self, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
        // Non-blocking when both ends are pipes (as MCP clients start servers), so a stop does
        // not leave a blocking read of stdin behind.
        // Every line that is not a JSON-RPC message gets its JSON-RPC answer (-32700 with a
        // null id for one that is not JSON), and the server reads on.
        let (read, write) = rmcp::transport::stdio_pipes();
        self.serve_until(transport::LineTransport::new(read, write), stop)
            .await
    }

    /// Serves over any transport rmcp accepts until the client disconnects or `stop`
    /// completes, then [shuts down](Self::shutdown).
    pub async fn serve_until<T, E, A>(
        self,
        transport: T,
        stop: impl Future<Output = ()>,
    ) -> Result<(), ServeError>
    where
        T: IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let mut stop = std::pin::pin!(stop);
        let running = tokio::select! {
            r = self.clone().serve(transport) => r,
            () = &mut stop => {
                return self.finish(Ok(())).await;
            }
        };
        let running = match running {
            Ok(r) => r,
            Err(e) => {
                return self.finish(Err(ServeError::Initialize(Box::new(e)))).await;
            }
        };
        // The service loop ends on EOF or a transport failure; a stop cancels it, and the
        // same wait then collects it.
        let cancel = running.cancellation_token();
        let mut wait = std::pin::pin!(running.waiting());
        let outcome = tokio::select! {
            r = &mut wait => r,
            () = &mut stop => {
                cancel.cancel();
                wait.await
            }
        };
        let outcome = outcome
            .map(|_| ())
            .map_err(|e| ServeError::Service(Box::new(e)));
        self.finish(outcome).await
    }

    async fn finish(&self, outcome: Result<(), ServeError>) -> Result<(), ServeError> {
        let failures = self.shutdown().await;
        outcome?;
        if failures.is_empty() {
            Ok(())
        } else {
            Err(ServeError::Cleanup(failures))
        }
    }

    /// Tool calls running now, in every client session.
    pub fn calls_in_flight(&self) -> usize {
        self.shared.calls.load(Ordering::SeqCst)
    }

    /// Ends every client session's tool set, removing their workspaces; later tool calls find
    /// no tool. A call still running is given [`ServerOptions::drain_timeout`] to end first.
    /// Returns the workspaces that could not be removed. Serving calls it on exit.
    pub async fn shutdown(&self) -> Vec<crate::script::ScriptError> {
        let deadline = tokio::time::Instant::now() + self.shared.options.drain_timeout;
        self.shutdown_by(deadline).await
    }

    /// [`shutdown`](Self::shutdown), a call still running given until `deadline` (what a
    /// transport that drained first passes on, so the drain timeout is spent once).
    pub async fn shutdown_by(
        &self,
        deadline: tokio::time::Instant,
    ) -> Vec<crate::script::ScriptError> {
        self.shared
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let locals: Vec<Arc<Local>> = self
            .shared
            .locals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let mut failures = Vec::new();
        for local in locals {
            let set = local.tools.lock().await.take();
            if let Some(set) = set {
                failures.extend(set.shutdown_by(deadline).await);
            }
        }
        failures
    }
}

impl Shared {
    fn view(&self) -> Arc<View> {
        self.view
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn local(this: &Arc<Shared>) -> Arc<Local> {
        let local = Arc::new(Local {
            tools: tokio::sync::Mutex::new(None),
            calls: Arc::new(tokio::sync::Semaphore::new(
                this.options.max_calls_per_session.max(1),
            )),
            gone: tokio_util::sync::CancellationToken::new(),
        });
        let mut locals = this.locals.lock().unwrap_or_else(PoisonError::into_inner);
        locals.retain(|l| l.strong_count() > 0);
        locals.push(Arc::downgrade(&local));
        local
    }
}

impl Local {
    /// The session's tool set for `view`: the one it has when made for that view, otherwise a
    /// new one in a fork of the session (the old one stays with the calls that hold it, and
    /// goes, with its workspaces, when the last of them ends). `None` once shut down.
    async fn tools_for(&self, shared: &Shared, view: &View) -> Option<Arc<ToolSet>> {
        let mut slot = self.tools.lock().await;
        if shared.closed.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(set) = slot.as_ref()
            && set.version() == view.version
        {
            return Some(set.clone());
        }
        let (set, _) = ToolSet::load(&shared.session.fork(), &view.entries, view.version).await;
        let set = Arc::new(set);
        *slot = Some(set.clone());
        Some(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Catalog, CatalogSource};
    use crate::{ModuleError, ModuleRegistry, ModuleResponse, ModuleTool};
    use serde_json::Value as Json;

    /// A host module tool, for the tests of this module and of its children (`tools`).
    pub(super) struct Lookup;

    #[async_trait::async_trait]
    impl ModuleTool for Lookup {
        fn name(&self) -> &str {
            "lookup_order"
        }
        fn description(&self) -> &str {
            "Look up an order."
        }
        fn parameters(&self) -> Json {
            serde_json::json!({"type": "object"})
        }
        async fn call(&self, _args: Json) -> Result<ModuleResponse, ModuleError> {
            Ok("order 42: shipped".into())
        }
    }

    async fn server() -> (Session, McpServer) {
        let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/runtime/skills");
        let catalog = Catalog::new(vec![CatalogSource::spec(skills).trusted(true)]);
        let mut modules = ModuleRegistry::new();
        modules
            .register("order-lookup", [Arc::new(Lookup) as Arc<dyn ModuleTool>])
            .unwrap();
        let session = Session::builder(catalog).modules(modules).build();
        let server = McpServer::new(&session, PromptOptions::default()).await;
        (session, server)
    }

    #[tokio::test]
    async fn each_client_session_has_a_tool_set_of_its_own() {
        let (session, server) = server().await;
        assert_eq!(server.tool_names(), ["lookup_order"]);
        // Knowing the tools activated nothing in the session itself, nor left anything.
        assert!(session.loaded_skills().is_empty());
        let other = server.client_session();
        let view = server.view();
        let a = server.local.tools_for(&server.shared, &view).await.unwrap();
        let again = server.local.tools_for(&server.shared, &view).await.unwrap();
        assert!(Arc::ptr_eq(&a, &again), "one set per session and view");
        let b = other.local.tools_for(&other.shared, &view).await.unwrap();
        assert!(!Arc::ptr_eq(&a, &b), "another session, another set");
        assert!(session.loaded_skills().is_empty(), "each set is in a fork");
        assert!(matches!(
            a.call("lookup_order", None).await,
            tools::Call::Done(_)
        ));
        // Shutdown ends every session's set; later calls find no tool set.
        assert!(server.shutdown().await.is_empty());
        assert!(
            server
                .local
                .tools_for(&server.shared, &view)
                .await
                .is_none()
        );
    }

    #[tokio::test]
    async fn directories_list_their_children_and_skills_list_keeps_the_limits() {
        let skills = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/mcp/skills");
        let session = Session::builder(Catalog::new(vec![CatalogSource::spec(skills)])).build();
        let server = McpServer::new(&session, PromptOptions::default()).await;
        let view = server.view();
        let echo = view.skill("echo").unwrap();
        let uris = |list: Vec<rmcp::model::Resource>| -> Vec<(String, Option<String>)> {
            list.into_iter()
                .map(|r| (r.uri.clone(), r.mime_type.clone()))
                .collect()
        };
        let root = uris(echo.directory("").await.unwrap());
        assert_eq!(
            root,
            [
                ("skill://echo/SKILL.md".into(), Some("text/markdown".into())),
                ("skill://echo/assets".into(), Some("inode/directory".into())),
                (
                    "skill://echo/references".into(),
                    Some("inode/directory".into())
                ),
                (
                    "skill://echo/scripts".into(),
                    Some("inode/directory".into())
                ),
            ]
        );
        let scripts = uris(echo.directory("scripts").await.unwrap());
        assert_eq!(scripts.len(), 3, "{scripts:?}");
        assert!(echo.directory("nope").await.is_none());
        assert!(echo.directory("scripts/greet.sh").await.is_none());

        assert_eq!(
            live::over_host_limit(SKILL_FILE_LIMIT, SKILL_BYTE_LIMIT),
            None
        );
        let files = live::over_host_limit(SKILL_FILE_LIMIT + 1, 0).unwrap();
        assert!(
            files.contains("513 files") && files.contains("512"),
            "{files}"
        );
        let bytes = live::over_host_limit(1, SKILL_BYTE_LIMIT + 1).unwrap();
        assert!(bytes.contains("16 MiB"), "{bytes}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_view_follows_the_directory_and_tells_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, description: &str| {
            let root = dir.path().join(name);
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(
                root.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"),
            )
            .unwrap();
        };
        write("first", "The first skill.");
        let catalog = Catalog::new(vec![CatalogSource::spec(dir.path().to_str().unwrap())]);
        let session = Session::builder(catalog).build();
        let server = McpServer::new(&session, PromptOptions::default()).await;
        let mut changes = server.shared.changes.subscribe();
        let watching = server.watch(LiveOptions::new(vec![dir.path().to_path_buf()], None));
        assert!(watching.problems().is_empty(), "{:?}", watching.problems());
        let before = server.view();
        // After the first check the watch sees the change (not the check made as it starts).
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        write("second", "Added while watched.");
        let changed = tokio::time::timeout(std::time::Duration::from_secs(10), changes.recv())
            .await
            .expect("a change within seconds")
            .unwrap();
        assert_eq!(
            changed,
            Changed {
                resources: true,
                tools: false,
                prompts: true
            }
        );
        let after = server.view();
        assert!(after.version > before.version);
        assert!(after.skill("second").is_some());
        // The old view is unchanged for whoever still holds it.
        assert!(before.skill("second").is_none());
        drop(watching);
    }
}
