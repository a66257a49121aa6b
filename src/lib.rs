//! skillcat: catalog Agent Skills (SKILL.md bundles) from pluggable storage.

pub mod archive;
pub mod compat;
pub mod document;
pub mod error;
pub mod sign;

pub use error::{Error, Result};
pub mod digest;
pub mod pack;
pub mod prompt;
pub mod source;
