//! skillcat: catalog Agent Skills (SKILL.md bundles) from pluggable storage.
//!
//! One pipeline, many stores: every [`source::Source`] (a directory, a tarball, a zip, …) feeds
//! the same discover → validate → digest → prompt pipeline, so a skill gives the same answers
//! from every store. See the README for the command line and the formats.
//!
//! Layers, each importing only from those below it:
//!
//! ```text
//! mcp · serve                                             protocols over the runtime / sources
//! runtime                                                 sessions, activation, tool sets
//! catalog · script/ (workspace, sandbox/)                 many sources → one view; confined runs
//! source/ (dir, tarball, zip, sqlite, http/) · compat     where bytes live; the reference's API
//! registry/ · sign · config · matching/ · prompt · pack   stores, trust, settings, ranking, rendering
//! document/ · digest · archive/ · capability              pure: no I/O beyond what they are handed
//! ```

pub mod archive;
pub mod capability;
pub mod compat;
pub mod digest;
pub mod document;
pub mod error;
pub mod pack;
pub mod path;
pub mod prompt;
pub mod source;

#[cfg(feature = "sign")]
pub mod sign;

#[cfg(feature = "registry")]
pub mod publish;
#[cfg(feature = "registry")]
pub mod registry;

#[cfg(feature = "catalog")]
pub mod catalog;
#[cfg(feature = "catalog")]
pub mod config;
#[cfg(feature = "catalog")]
pub mod matching;

#[cfg(feature = "runtime")]
pub mod runtime;
#[cfg(feature = "runtime")]
pub mod script;

#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "serve")]
pub mod serve;

pub use error::{Error, Result};

#[cfg(test)]
mod test_rng;

// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
