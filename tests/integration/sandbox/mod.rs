//! Confined runs: escapes, the network proxy, run flags, hints and output, the skill's own tree, workspaces, capabilities, audited runs and the terminal.

mod escape;
mod net_proxy;
mod run_flags;
mod hints;
mod output;
mod script_run;
mod skill_tree;
mod workspace_base;
mod workspace_race;
mod capability;
mod audited_run;
pub(crate) mod tty;
