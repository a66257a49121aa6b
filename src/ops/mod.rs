//! Library operations: what each command does, without printing (cargo's ops).

pub mod audit;
pub mod init;
pub mod keyring;
pub mod matching;
pub mod mcp;
pub mod read;
pub mod registry;
pub mod script;
pub mod token;
pub mod trust;
