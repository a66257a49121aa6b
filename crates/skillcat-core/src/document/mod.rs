//! The SKILL.md document: reading, the [`Skill`] value, limits and validation.
//!
//! Reading is lenient about fields (a document with no name still parses and
//! [`Skill::validate`] says what is wrong); only a text that is not a skill document at all is
//! refused, with a [`Fault`] whose kind says why.

mod fault;
mod frontmatter;
mod guard;
mod sidecar;
mod skill;
mod validate;
mod value;
pub(crate) mod yaml;

pub use fault::{Fault, FaultKind};
pub use frontmatter::{Document, parse_document, parse_frontmatter};
pub use guard::{
    TEMPLATE_DESCRIPTION, TEMPLATE_SCRIPT, TEMPLATE_SCRIPT_PATH, link_targets, link_warnings,
    template_warnings,
};
pub use sidecar::{
    DECLARATION_KEYS, Declarations, SIDECAR_LIMIT, SIDECAR_PATH, declarations, parse_sidecar,
};
pub use skill::Skill;
pub use validate::{
    LengthLimits, SPEC_FIELDS, ValidateOptions, name_key, network_declaration, normalize_name,
    validate_frontmatter,
};
pub use value::{Map, Value};

/// Fuzzing hook, not part of the API and absent from every build but the fuzz crate's (feature
/// `fuzz-hooks`, which only `fuzz/Cargo.toml` turns on): what the YAML fast path and the saphyr-parser path each
/// make of `src` (the fast path's `None` means it declined the text).
///
/// Why two readers: the fast path reads the common shapes of frontmatter ~4× faster than the
/// event parser (`cargo bench --bench yaml`: 2,000 documents in 3.4 ms against 14.4 ms), and
/// the `yaml_fast` fuzz target checks that it never reads a text differently.
#[cfg(feature = "fuzz-hooks")]
#[doc(hidden)]
pub fn __fuzz_yaml_paths(src: &str) -> (Option<Value>, Result<Option<Value>, String>) {
    yaml::both_paths(src)
}
