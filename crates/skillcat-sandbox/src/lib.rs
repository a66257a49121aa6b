//! Confined runs of what Agent Skills ship: scripts in per-skill workspaces under namespaces,
//! Landlock, seccomp and limits ([`script`]), and guest JavaScript tools evaluated by QuickJS in
//! a confined child ([`guest`], feature `guest`).

#[cfg(feature = "guest")]
pub mod guest;
pub mod script;

// The core's modules, under the names this crate's code uses.
pub(crate) use skillcat_core::{Error, capability, document, path, source};
