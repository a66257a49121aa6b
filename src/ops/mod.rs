//! Library operations: what each command does, without printing (cargo's ops).
//!
//! Each returns data and typed errors; the command line parses its arguments, calls one, and
//! prints what it returns (adding the flags that would help to an error).

pub mod audit;
pub mod init;
pub mod keyring;
pub mod matching;
pub mod mcp;
pub mod publish;
pub mod read;
pub mod registry;
pub mod remote;
pub mod script;
pub mod token;
pub mod trust;
