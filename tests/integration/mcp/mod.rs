//! The runtime and the MCP server: stdio and Streamable HTTP, budgets, guest tools, tool names.

mod stdio;
mod budgets;
mod http;
mod guest;
mod tool_names;
mod runtime;
