//! Confined runs: escapes, the network proxy, run flags, hints and output, the skill's own tree, workspaces, capabilities, audited runs and the terminal.

mod audited_run;
mod capability;
mod escape;
mod hints;
mod net_proxy;
mod output;
mod run_flags;
mod script_run;
mod skill_store;
mod skill_tree;
pub(crate) mod tty;
mod workspace_base;
mod workspace_race;
mod zygote;
