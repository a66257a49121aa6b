//! Library operations: what each command does, without printing (cargo's ops).

pub mod matching;
pub mod mcp;
pub mod read;
pub mod script;
