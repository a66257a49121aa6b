//! The rmcp [`ServerHandler`]: each MCP method answered from the server's state.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, GetSkillRequestParams, GetSkillResult, Implementation, ListPromptsResult,
    ListResourcesResult, ListSkillsResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Role, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value as Json, json};

use super::tools::Call;
use super::uri::{self, DOCUMENT};
use super::{McpServer, PROMPT_NAME};
use crate::prompt::{PromptFormat, PromptSkill, render};

const INSTRUCTIONS: &str = "Agent Skills served by skillcat. Read the `available_skills` prompt \
(or resources/list) to see which skills exist; read a skill's skill://<name>/SKILL.md resource \
before using it, and the files it references through the same skill:// URIs. Tools named \
run_<skill>_<script> run that skill's scripts in a sandbox.";

impl McpServer {
    /// The prompt block with `skill://` URIs as locations, in `format`.
    fn prompt_text(&self, format: PromptFormat) -> (String, String) {
        let uris: Vec<String> = self.inner.skills.iter().map(|s| s.document_uri()).collect();
        let skills: Vec<PromptSkill<'_>> = self
            .inner
            .skills
            .iter()
            .zip(&uris)
            .map(|(s, uri)| PromptSkill {
                name: s.entry().name(),
                description: s.entry().skill().description(),
                location: uri,
            })
            .collect();
        let mut opts = self.inner.prompt;
        opts.format = format;
        let rendered = render(&skills, &opts);
        (rendered.text, rendered.report.to_string())
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
                .enable_resources()
                .enable_prompts()
                .enable_tools()
                .enable_skills()
                .build(),
        )
        .with_server_info(
            Implementation::new("skillcat", env!("CARGO_PKG_VERSION"))
                .with_title("skillcat")
                .with_description("Agent Skills (SKILL.md bundles) as resources, a prompt and confined script tools"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let lists =
            futures_util::future::join_all(self.inner.skills.iter().map(|s| s.resources())).await;
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
        let Some(view) = self.inner.skills.iter().find(|s| s.entry().name() == name) else {
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
        let entries =
            futures_util::future::join_all(self.inner.skills.iter().map(|s| s.sep_entry())).await;
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
        let view = match uri::parse(&request.uri) {
            Some((name, path)) if path == DOCUMENT => {
                self.inner.skills.iter().find(|s| s.entry().name() == name)
            }
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
        let format = prompt_format(request.arguments.as_ref())?.unwrap_or(self.inner.prompt.format);
        let (text, report) = self.prompt_text(format);
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
        Ok(ListToolsResult::with_all_items(self.inner.tools.list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = self.inner.tools.call(&request.name, request.arguments);
        let call = tokio::select! {
            c = call => c,
            // Dropping the run kills the sandboxed process.
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        match call {
            Call::Done(result) => Ok(result.into()),
            Call::Unknown => Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                Some(json!({ "code": "E_SKILL_SCRIPT_NOT_FOUND", "tool": request.name })),
            )),
        }
    }
}
