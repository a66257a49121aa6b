//! The tests that measure a child's peak memory (`wait4`'s `ru_maxrss`): Linux counts in it the
//! memory of the process the child was forked from, so they run from a small process of their
//! own, not beside the hundreds of tests of `tests/integration/`.
//!
//! Origin: step 19 (issue 29: fewer test binaries; these keep a process of their own).

#[path = "../support/mod.rs"]
mod support;

mod mcp_calls;
mod registry_file;
mod run_output;
mod sandbox_escapes;
mod sandbox_supervision;
mod sandbox_view;
mod serve_memory;
