//! Library operations: what each command does, without printing (cargo's ops).

pub mod init;
