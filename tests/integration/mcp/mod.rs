//! The runtime and the MCP server: stdio and Streamable HTTP, budgets, guest tools, tool names.

mod budgets;
mod grants;
mod guest;
mod http;
mod python_sdk_doc;
mod runtime;
mod stdio;
mod tool_names;
