//! The rmcp [`ServerHandler`]: each MCP method answered from the server's state.

use std::sync::atomic::Ordering;

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, GetSkillRequestParams, GetSkillResult, Implementation, ListPromptsResult,
    ListResourcesResult, ListSkillsResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptArgument, PromptMessage, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Role, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{
    NotificationContext, RequestContext, SubscriptionContext, SubscriptionSendError,
};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value as Json, json};

use super::live::Changed;
use super::tools::Call;
use super::uri::{self, DOCUMENT};
use super::{McpServer, PROMPT_NAME};
use crate::prompt::PromptFormat;

const INSTRUCTIONS: &str = "Agent Skills served by skillcat. Read the `available_skills` prompt \
(or resources/list) to see which skills exist; read a skill's skill://<name>/SKILL.md resource \
before using it, and the files it references through the same skill:// URIs. Tools named \
run_<skill>_<script> run that skill's scripts in a sandbox.";

/// The JSON-RPC error of a call refused because the client session has as many running as it
/// may (an implementation-defined server error).
const BUSY: ErrorCode = ErrorCode(-32000);

/// The refusal of a call beyond one of its limits (`what` says which).
fn busy(what: String, limit: usize) -> ErrorData {
    ErrorData::new(
        BUSY,
        format!("{what}; try again when one has finished"),
        Some(json!({ "code": "E_SKILL_MCP_BUSY", "limit": limit })),
    )
}

/// The run slots of the token of the HTTP request a call came in (none over stdio, nor
/// without tokens).
fn token_runs(context: &RequestContext<RoleServer>) -> Option<super::TokenRuns> {
    #[cfg(feature = "http")]
    {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<super::TokenRuns>())
            .cloned()
    }
    #[cfg(not(feature = "http"))]
    {
        let _ = context;
        None
    }
}

/// Counts a running call in the server's total for as long as it lives.
struct InFlight<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(count: &'a std::sync::atomic::AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sends a client session what changed, until the session is gone or the peer is.
async fn notify(
    peer: rmcp::Peer<RoleServer>,
    mut changes: tokio::sync::broadcast::Receiver<Changed>,
    gone: tokio_util::sync::CancellationToken,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let changed = tokio::select! {
            () = gone.cancelled() => return,
            r = changes.recv() => match r {
                Ok(c) => c,
                Err(RecvError::Lagged(_)) => Changed::ALL,
                Err(RecvError::Closed) => return,
            },
        };
        let sent = async {
            if changed.resources {
                peer.notify_resource_list_changed().await?;
            }
            if changed.tools {
                peer.notify_tool_list_changed().await?;
            }
            if changed.prompts {
                peer.notify_prompt_list_changed().await?;
            }
            Ok::<(), rmcp::ServiceError>(())
        };
        if sent.await.is_err() {
            return;
        }
    }
}

fn prompt_format(
    args: Option<&serde_json::Map<String, Json>>,
) -> Result<Option<PromptFormat>, ErrorData> {
    match args.and_then(|a| a.get("format")) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => match s.as_str() {
            "xml" => Ok(Some(PromptFormat::Xml)),
            "markdown" => Ok(Some(PromptFormat::Markdown)),
            "json" => Ok(Some(PromptFormat::Json)),
            other => Err(ErrorData::invalid_params(
                format!("format must be xml, markdown or json, not {other:?}"),
                None,
            )),
        },
        Some(other) => Err(ErrorData::invalid_params(
            format!("format must be a string, not {other}"),
            None,
        )),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts_list_changed()
                .enable_resources_list_changed()
                .enable_skills_with_directory_read()
                .build(),
        )
        .with_server_info(
            Implementation::new("skillcat", env!("CARGO_PKG_VERSION"))
                .with_title("skillcat")
                .with_description("Agent Skills (SKILL.md bundles) as resources, a prompt and confined script tools"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // 2026-07-28's subscriptions/listen: the list changes (rmcp keeps what was asked).
        Some(
            SubscriptionFilter::builder()
                .resources_list_changed()
                .tools_list_changed()
                .prompts_list_changed()
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        use tokio::sync::broadcast::error::RecvError;
        let mut changes = self.shared.changes.subscribe();
        loop {
            let changed = tokio::select! {
                () = context.cancelled() => return Ok(()),
                r = changes.recv() => match r {
                    Ok(c) => c,
                    Err(RecvError::Lagged(_)) => Changed::ALL,
                    Err(RecvError::Closed) => return Ok(()),
                },
            };
            let sink = context.sink();
            // A kind the listener did not ask for is not sent; any other failure ends it.
            let open = |r: Result<(), SubscriptionSendError>| {
                matches!(
                    r,
                    Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_))
                )
            };
            if (changed.resources && !open(sink.notify_resource_list_changed().await))
                || (changed.tools && !open(sink.notify_tool_list_changed().await))
                || (changed.prompts && !open(sink.notify_prompt_list_changed().await))
            {
                return Ok(());
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // The session hears every change of the view from now on.
        tokio::spawn(notify(
            context.peer.clone(),
            self.shared.changes.subscribe(),
            self.local.gone.clone(),
        ));
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let view = self.view();
        let lists = futures_util::future::join_all(view.skills.iter().map(|s| s.resources())).await;
        Ok(ListResourcesResult::with_all_items(
            lists.into_iter().flatten().collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let not_found = || {
            ErrorData::resource_not_found(
                format!("no such resource: {}", request.uri),
                Some(json!({ "uri": request.uri })),
            )
        };
        let Some((name, path)) = uri::parse(&request.uri) else {
            return Err(not_found());
        };
        let snapshot = self.view();
        let Some(view) = snapshot.skill(&name) else {
            return Err(not_found());
        };
        match view.read(&path).await {
            Ok(Some(contents)) => Ok(ReadResourceResult::new(vec![contents]).into()),
            Ok(None) => Err(not_found()),
            Err(e) => Err(ErrorData::internal_error(
                format!("cannot read {}: {e}", request.uri),
                None,
            )),
        }
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let view = self.view();
        let entries =
            futures_util::future::join_all(view.skills.iter().map(|s| s.sep_entry())).await;
        // A skill the extension cannot carry (unreadable file, name it refuses) is still a
        // resource; it is only left out of this listing.
        Ok(ListSkillsResult::with_all_items(
            entries.into_iter().filter_map(Result::ok).collect(),
        ))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let unknown =
            |why: String| ErrorData::invalid_params(why, Some(json!({ "uri": request.uri })));
        let snapshot = self.view();
        let view = match uri::parse(&request.uri) {
            Some((name, path)) if path == DOCUMENT => snapshot.skill(&name),
            _ => None,
        };
        let Some(view) = view.filter(|v| v.document_uri() == request.uri) else {
            return Err(unknown(format!("unknown skill {}", request.uri)));
        };
        match view.sep_entry().await {
            Ok(skill) => Ok(GetSkillResult::new(skill)),
            Err(why) => Err(unknown(format!(
                "skill {} cannot be offered through the skills extension: {why}",
                request.uri
            ))),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompt = Prompt::new(
            PROMPT_NAME,
            Some("The <available_skills> block: each skill's name, description and the skill:// URI of its SKILL.md"),
            Some(vec![PromptArgument::new("format")
                .with_description("xml (default), markdown or json")
                .with_required(false)]),
        )
        .with_title("Available skills");
        Ok(ListPromptsResult::with_all_items(vec![prompt]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != PROMPT_NAME {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt {:?} (this server offers {PROMPT_NAME})",
                    request.name
                ),
                None,
            ));
        }
        let format =
            prompt_format(request.arguments.as_ref())?.unwrap_or(self.shared.prompt.format);
        let (text, report) = self.view().prompt_text(&self.shared.prompt, format);
        let description = if report.is_empty() {
            "The skills this server offers".to_string()
        } else {
            format!("The skills this server offers ({report})")
        };
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(description)
                .into(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // What the view offers: the session's own tool set, made at its first call, offers
        // the same tools.
        Ok(ListToolsResult::with_all_items(self.view().tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.view().tool(name).cloned()
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        let not_dir = || {
            ErrorData::invalid_params(
                format!("not a directory: {}", request.uri),
                Some(json!({ "uri": request.uri })),
            )
        };
        let snapshot = self.view();
        let (name, dir) = uri::parse_directory(&request.uri).ok_or_else(not_dir)?;
        let view = snapshot.skill(&name).ok_or_else(not_dir)?;
        let children = view.directory(&dir).await.ok_or_else(not_dir)?;
        Ok(ReadResourceDirectoryResult::with_all_items(children))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let unknown = || {
            ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                Some(json!({ "code": "E_SKILL_SCRIPT_NOT_FOUND", "tool": request.name })),
            )
        };
        // The view the call starts under, and the session's tool set for it: both kept to
        // the end of the call, whatever changes meanwhile.
        let view = self.view();
        if view.tool(&request.name).is_none() {
            return Err(unknown());
        }
        // Three slots, each refused at once when none is free: the client session's, its
        // token's (a request of the stateless revision is a session of its own, so only these
        // two bound it), and the server's.
        let Ok(_permit) = self.local.calls.clone().try_acquire_owned() else {
            let limit = self.shared.options.max_calls_per_session;
            return Err(busy(
                format!(
                    "this session already has {limit} tool call(s) running, as many as it may (skillcat mcp --max-calls-per-session)"
                ),
                limit,
            ));
        };
        let _token_slot = match token_runs(&context) {
            Some(runs) => match runs.slots.try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    return Err(busy(
                        format!(
                            "this token already has {} tool call(s) running, as many as it may (skillcat mcp --max-runs-per-token)",
                            runs.limit
                        ),
                        runs.limit,
                    ));
                }
            },
            None => None,
        };
        let Ok(_run) = self.shared.runs.clone().try_acquire_owned() else {
            let limit = self.shared.options.max_runs;
            return Err(busy(
                format!(
                    "the server already has {limit} tool call(s) running, as many as it may (skillcat mcp --max-runs)"
                ),
                limit,
            ));
        };
        let _counted = InFlight::enter(&self.shared.calls);
        let Some(tools) = self.local.tools_for(&self.shared, &view).await else {
            return Err(unknown());
        };
        let call = tools.call(&request.name, request.arguments);
        let call = tokio::select! {
            c = call => c,
            // Dropping the run kills the sandboxed process.
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        match call {
            Call::Done(result) => Ok(result.into()),
            Call::Unknown => Err(unknown()),
        }
    }
}
