//! The agent runtime: sessions over a catalog, activation of skills for one run, host tools.
//!
//! ```text
//! Session (catalog · matcher · runner · ceiling · ModuleRegistry · Gate)
//!   │        SessionBuilder::configure(config, env, gate): runner_config → Runner, one Gate
//!   │
//!   ├─ begin(message) ─▶ rank ─▶ top k ─┐
//!   ├─ begin_with([names]) ─────────────┼─▶ Run (guard) ── activate each skill:
//!   │                                   │      body (tier 2) ─▶ instructions() / system_prompt()
//!   │                                   │      script tools   (trusted sources only;
//!   │                                   │                      Entry::grant_with, Runner::load)
//!   │                                   │      module tools   (wrapped; trusted sources only)
//!   │                                   │      (each kind a ToolProvider: prepare, then call)
//!   │                                   │      LoadedSet::acquire: one owner per name
//!   │                                   │      (tool::names::ToolNames: case and -/_ folded;
//!   │                                   │      a shared name is contested, offered by
//!   │                                   │      neither); a skill two runs use is loaded once
//!   │                                   │
//!   │                                   ├─ call(tool, args) ─▶ LoadedSet::lookup(name) ─▶ its ToolCall
//!   │                                   │      script: Gate (Script) ─▶ Runner::run (confined)
//!   │                                   │      module: Gate (Module) ─▶ WrappedTool::call
//!   │                                   │      guest:  Gate (Guest)  ─▶ GuestTool::call (confined)
//!   │                                   ├─ read_resource(skill, path)   (tier 3, no escapes)
//!   │                                   └─ finish() / error / panic / drop: LoadedSet::release
//!   │                                        tools leave the tool map; a skill no run holds
//!   │                                        leaves the loaded set and its workspace is removed
//!   └─ tool_names() / loaded_skills(): what every run in progress holds
//! ```
//!
//! The MCP server ([`McpServer`](crate::mcp::McpServer)) and the `skillcat run` and
//! `skillcat tools` commands are clients of a [`Session`]: they build their tools the same way.
//!
//! Tool results are data, never instructions: every [`ToolSpec`] and [`ToolOutput`] says
//! `trusted: false` and carries its [`Provenance`](crate::script::Provenance) (skill, version, source). Every failure is a
//! [`RuntimeError`] with a stable `E_SKILL_*` code and a text for a model; module-tool failures
//! are [`ToolError`]s, script failures [`ScriptError`](crate::script::ScriptError)s, guest
//! failures `GuestError`s, and what every kind shares — denied, gate unavailable, invalid
//! arguments, timeout — is one [`ToolFailure`] inside them ([`RuntimeError::failure`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use skillcat_runtime::catalog::Catalog;
//! use skillcat_runtime::config::{Config, Environment};
//! use skillcat_runtime::Session;
//! use skillcat_sandbox::script::AllowAll;
//!
//! // The directories are the caller's to read (the `skillcat` facade's `context::Env` does).
//! let env = Environment { cwd: std::env::current_dir()?, home: Some("/home/me".into()) };
//! let config = Config::discover(None, &env)?;
//! let session = Session::builder(Catalog::from_config(&config))
//!     .configure(&config, env, Arc::new(AllowAll))?
//!     .build();
//!
//! let run = session.begin("clean up this CSV export").await?;
//! let system = run.system_prompt("You are a helpful agent.");
//! let tools: Vec<_> = run.tools().map(|t| t.to_function_json()).collect();
//! // … send `system`, `tools` and the message to a model; for each tool call it makes:
//! // let out = run.call(&name, &args).await; feed out.to_model_text() (or the error's) back.
//! run.finish().await?;
//! # let _ = (system, tools);
//! # Ok(()) }
//! ```
//!
//! See `docs/runtime.md` for plugging skillcat into an agent.

mod activation;
pub mod catalog;
/// Configuration: `skillcat.toml` (the `skillcat-config` crate, below every crate that reads
/// it).
pub use skillcat_config as config;
mod error;
mod loaded;
pub mod matching;
pub mod mcp;
mod module;
mod provider;
mod resource;
mod run;
mod session;
mod spec;

// The layers below, under the names this crate's code uses.
pub(crate) use skillcat_core::{Error, ErrorKind};
pub(crate) use skillcat_core::{capability, digest, document, path, prompt};
// The token file of the HTTP transport.
#[cfg(feature = "http")]
pub(crate) use skillcat_registry as registry;
#[cfg(feature = "guest")]
pub(crate) use skillcat_sandbox::guest;
pub(crate) use skillcat_sandbox::script;
pub(crate) use skillcat_sandbox::tool;

/// The core's source module and the opener of every kind, as the code names them.
pub(crate) mod source {
    pub(crate) use skillcat_core::source::*;
    pub(crate) use skillcat_sources::{OpenOptions, open_with};
}

pub use activation::Activation;
pub use error::{RuntimeError, ToolError};
pub use module::{
    BadResponse, ModuleError, ModuleRegistry, ModuleResponse, ModuleTool, WrappedTool,
    is_provider_safe_name,
};
pub use resource::Resource;
pub use run::Run;
pub use session::{
    Candidate, DEFAULT_MODULE_TIMEOUT, MatcherFactory, Session, SessionBuilder, interpreters,
    runner_config,
};
pub use skillcat_sandbox::tool::{FailureKind, ToolFailure, ToolKind};
pub use spec::{Content, ToolOutput, ToolSpec};
