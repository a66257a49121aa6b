//! skillcat: catalog Agent Skills (SKILL.md bundles) from pluggable storage.
//!
//! One pipeline, many stores: every [`source::Source`] (a directory, a tarball, a zip, …) feeds
//! the same discover → validate → digest → prompt pipeline, so a skill gives the same answers
//! from every store. See the README for the command line and the formats.
//!
//! The layers of the library, the data flow from a store to a prompt and to a confined run, and
//! how to add a store are in `docs/architecture.md`; `tests/layers.rs` checks that every import
//! follows the layer list drawn there. The layers above the core are Cargo features:
//!
//! | feature | adds |
//! | --- | --- |
//! | (none) | `path`, `document`, `digest`, `archive`, `prompt`, `capability`, `source` (directory and archive stores), `pack`, `compat` |
//! | `sign` | [`sign`]: minisign signatures, statements, scoped keyrings |
//! | `registry` | [`registry`], [`publish`], the SQLite store (`sign` too) |
//! | `http` | the HTTP store and its verified cache (`tls` for https) |
//! | `catalog` | [`config`], [`catalog`], [`matching`] |
//! | `runtime` | [`script`] (confined runs) and [`runtime`] (`catalog` too) |
//! | `serve` | [`serve`]: a catalog as static files over HTTP |
//! | `mcp` | [`mcp`]: the MCP server (`runtime` too) |
//! | `install` | [`install`]: skills placed into agents' folders, pinned by `skills-lock.json` |
//! | `cli` | the `skillcat` binary (all of the above); on by default |

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
#[cfg(feature = "oci")]
pub mod push;
#[cfg(feature = "registry")]
pub mod registry;

#[cfg(feature = "catalog")]
pub mod catalog;
#[cfg(feature = "catalog")]
pub mod config;
#[cfg(feature = "catalog")]
pub mod matching;

#[cfg(feature = "guest")]
pub mod guest;
#[cfg(feature = "runtime")]
pub mod runtime;
#[cfg(feature = "runtime")]
pub mod script;

#[cfg(feature = "install")]
pub mod install;
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
