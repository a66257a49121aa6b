//! A Model Context Protocol server over a session's catalog (skills, the prompt block, tools).
//!
//! ```text
//! MCP client ──stdio (JSON-RPC)──▶ McpServer (rmcp ServerHandler)
//!                                   ├─ resources   skill://<name>/SKILL.md, skill://<name>/<path>
//!                                   │              size + _meta.digest (sha256) per file
//!                                   ├─ skills/list, skills/get   SEP-2640 entries {uri, frontmatter,
//!                                   │              resources: [{uri, digest, size}]}
//!                                   ├─ prompts     available_skills: the tier-1 block
//!                                   └─ tools       the tools of one session Run with every skill
//!                                                  active: run_<skill>_<script> of trusted
//!                                                  skills (run confined), host module tools
//!  Session: catalog snapshot (taken once at start) ┘
//! ```
//!
//! The server is a client of a [`Session`]: it is built over one snapshot of the session's
//! catalog, and the skills it lists, the block its prompt renders (with `skill://` URIs as
//! locations, since a client reads skills through the server) and the tools it offers are fixed
//! when it starts. Every skill is a resource whatever its source's trust; its tools are what the
//! session gives a run that activates it: script tools only for skills of a trusted source
//! ([`Entry::scripts_allowed`]) and only when the session has a runner. A tool's failure is a
//! tool result with `isError: true`, the model text of the error and its stable code in
//! `_meta.code`; an unknown tool is a protocol error (`-32602`).
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
mod skills;
mod tools;
mod transport;
pub mod uri;

use std::future::Future;
use std::sync::Arc;

use rmcp::ServiceExt as _;
use rmcp::service::RoleServer;
use rmcp::transport::IntoTransport;

use crate::Session;
use crate::catalog::Entry;
use crate::prompt::PromptOptions;
use skills::SkillView;
use tools::ToolSet;

/// The name of the one prompt the server offers: the `<available_skills>` block.
pub const PROMPT_NAME: &str = "available_skills";

/// An MCP server over a catalog snapshot; see the [module docs](self).
///
/// Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    skills: Vec<SkillView>,
    prompt: PromptOptions,
    tools: ToolSet,
    warnings: Vec<String>,
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
    /// A server over the current snapshot of the session's catalog (loading it if needed).
    /// `prompt` renders the prompt block (format and budget; a client may ask for another
    /// format). Every skill is activated now, in one run of the session, and its tools are
    /// offered: what could not be offered is in [`warnings`](Self::warnings), as are the
    /// catalog's diagnostics.
    pub async fn new(session: &Session, prompt: PromptOptions) -> McpServer {
        let snapshot = session.catalog().snapshot().await;
        let entries: Vec<Entry> = snapshot.entries().to_vec();
        let mut warnings: Vec<String> = snapshot
            .diagnostics()
            .iter()
            .map(ToString::to_string)
            .collect();
        let (tools, tool_warnings) = ToolSet::load(session, &entries).await;
        warnings.extend(tool_warnings);
        McpServer {
            inner: Arc::new(Inner {
                skills: entries.into_iter().map(SkillView::new).collect(),
                prompt,
                tools,
                warnings,
            }),
        }
    }

    /// What the server could not offer, and the catalog's diagnostics, in sentences.
    pub fn warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The names of the tools offered, in catalog order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .list()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect()
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

    /// Ends the server's run, removing the workspaces of its skills; later tool calls find no
    /// tool. Returns the workspaces that could not be removed. Serving calls it on exit.
    pub async fn shutdown(&self) -> Vec<crate::script::ScriptError> {
        self.inner.tools.shutdown().await
    }
}
