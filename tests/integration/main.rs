//! The integration tests of skillcat, one binary: the library through the facade, and the
//! `skillcat` binary as a user runs it. Each module is one area; the support is compiled once.
//!
//! Two other binaries keep what needs a process of its own: `tests/guest.rs` asserts that no
//! sandbox helper or guest child is left below its process, which other tests running confined
//! code beside it would break; `tests/measured/` measures children's peak memory.

#[path = "../support/mod.rs"]
mod support;

mod archive_hostile;
mod archive_sources;
mod audit;
mod audited_run;
mod capability;
mod catalog;
mod central_operations;
mod central_registry;
mod central_reliability;
mod cli;
mod cli_help_examples;
mod cli_outputs;
mod cli_shell;
mod cli_trust;
mod config;
mod dir_source;
mod dir_source_race;
mod disk_full;
mod escape;
mod fuzz_findings;
mod guest_mcp;
mod http;
mod http_client_abuse;
mod http_freshness;
mod http_serve;
mod http_serve_abuse;
mod install;
mod install_interop;
mod layers;
mod matching;
mod mcp;
mod mcp_budgets;
mod mcp_http;
mod minisign_interop;
mod net_proxy;
mod oci;
mod oci_credentials;
mod private_dirs;
mod prompt_budget;
mod redteam3_names;
mod redteam3_tty;
mod redteam3_upload;
mod registry;
mod registry_audit;
mod registry_tokens;
mod rough_edges;
mod run_flags;
mod run_hints;
mod run_output;
mod runtime;
mod script_cli;
mod script_run;
mod second_hour_authoring;
mod second_hour_cli;
mod second_hour_install;
mod second_hour_registry;
mod serve_bounds;
mod signature_chain;
mod skill_tree;
mod source_paths;
mod store_equivalence;
mod vectors;
mod versions;
mod web_catalog;
mod workspace_base;
mod workspace_race;
