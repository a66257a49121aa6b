//! The integration tests of skillcat, one binary: the library through the facade, and the
//! `skillcat` binary as a user runs it. Each module is one area; the support is compiled once.
//!
//! Two other binaries keep what needs a process of its own: `tests/guest.rs` asserts that no
//! sandbox helper or guest child is left below its process, which other tests running confined
//! code beside it would break; `tests/measured/` measures children's peak memory.
//!
//! Origin: step 19 (issue 29: three integration-test binaries instead of 52); grouped by area by
//! step 28 (issue 50).

#[path = "../support/mod.rs"]
mod support;

mod archives;
mod audit;
mod catalog;
mod cli;
mod format;
mod install;
mod layers;
mod mcp;
mod registry;
mod sandbox;
mod serve;
mod sources;
