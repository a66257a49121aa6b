//! skillcat: catalog Agent Skills (SKILL.md bundles) from pluggable storage.
//!
//! One pipeline, many stores: every [`source::Source`] (a directory, a tarball, a zip, …) feeds
//! the same discover → validate → digest → prompt pipeline, so a skill gives the same answers
//! from every store. See the README for the command line and the formats.
//!
//! Layers, each importing only from those below it:
//!
//! ```text
//! source/ (dir, tarball, zip) · compat                    where bytes live; the reference's API
//! sign · prompt · pack                                    trust, rendering, reproducible archives
//! document/ · digest · archive/                           pure: no I/O beyond what they are handed
//! ```

pub mod archive;
pub mod capability;
pub mod catalog;
pub mod compat;
pub mod config;
pub mod digest;
pub mod document;
pub mod error;
pub mod matching;
pub mod mcp;
pub mod pack;
pub mod prompt;
pub mod registry;
pub mod runtime;
pub mod script;
pub mod serve;
pub mod sign;
pub mod source;

pub use error::{Error, Result};

// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
