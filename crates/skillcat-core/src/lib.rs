//! skillcat's core: the Agent Skills format and the stores every layer above builds on.
//!
//! One pipeline, many stores: every [`source::Source`] (a directory, a tarball, a zip, and in
//! the crates above a SQLite registry, an HTTP index, an OCI registry) feeds the same discover →
//! validate → digest → prompt pipeline, so a skill gives the same answers from every store.
//!
//! | module | what |
//! | --- | --- |
//! | [`path`] | relative paths a skill may hold, and the rules they keep |
//! | [`document`] | SKILL.md: frontmatter, the [`document::Skill`] value, validation and faults |
//! | [`lookalike`] | names that render alike: UTS #39 skeletons and mixed scripts |
//! | [`digest`] | the skill digest and file manifests |
//! | [`archive`] | reading and writing tar and zip archives under safety limits |
//! | [`prompt`] | the catalog as prompt text, under a budget |
//! | [`capability`] | what a skill declares it may do (files, network, time) |
//! | [`network`] | network grants by host name: patterns, intersection, pins |
//! | [`source`] | the [`source::Source`] trait; directory and archive sources |
//! | [`pack`] | reproducible archives of a skill |
//! | [`fs`] | the one atomic write: a temporary file synced and renamed into place |
//! | [`compat`] | the reference validator's (`skills-ref`) API |
//! | [`api`] | the JSON error body of the HTTP API, shared by its server and its clients |
//! | [`error`] | the library's one error type |
//! | [`version`] | the one order of versions |
//! | `testing` | the source conformance suite every store's tests run (feature `testing`) |
//!
//! The crates above this one, and how they fit, are drawn in `docs/architecture.md`.

pub mod api;
pub mod archive;
pub mod capability;
pub mod compat;
pub mod digest;
pub mod document;
pub mod error;
pub mod fs;
pub mod lookalike;
pub mod network;
pub mod pack;
pub mod path;
pub mod prompt;
pub mod source;
#[cfg(feature = "testing")]
pub mod testing;
pub mod units;
pub mod version;

pub use error::{Error, ErrorKind, Result};

#[cfg(test)]
mod test_rng;
