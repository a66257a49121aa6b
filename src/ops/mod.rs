//! Library operations: what each command does, without printing (cargo's ops).

pub mod mcp;
pub mod script;
