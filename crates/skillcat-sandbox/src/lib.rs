//! Confined runs of what Agent Skills ship: scripts in per-skill workspaces under namespaces,
//! Landlock, seccomp and limits ([`script`]), and guest JavaScript tools evaluated by QuickJS in
//! a confined child ([`guest`], feature `guest`); what every kind of tool shares — its kind, its
//! name rules and its common failures — in [`tool`].

#[cfg(feature = "guest")]
pub mod guest;
pub mod script;
pub mod tool;

// The core's modules, under the names this crate's code uses.
pub(crate) use skillcat_core::{Error, capability, document, path, source};
