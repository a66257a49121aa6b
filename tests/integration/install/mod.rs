//! Installing skills into agents' folders: add, install, update, remove, status, the lockfile and its interoperability with the `skills` CLI and Claude Code plugin marketplaces.

mod commands;
mod default_keyring;
mod interop;
mod marketplace;
mod partial;
mod repair;
