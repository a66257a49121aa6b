//! Library operations: what each command does, without printing (cargo's ops).

pub mod audit;
pub mod init;
pub mod keyring;
pub mod registry;
pub mod token;
pub mod trust;
