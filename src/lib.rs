//! skillcat: catalog Agent Skills (SKILL.md bundles) from pluggable storage and run their
//! scripts confined.
//!
//! One pipeline, many stores: every [`source::Source`] (a directory, a tarball, a zip, a SQLite
//! registry, an HTTP index, an OCI registry) feeds the same discover → validate → digest →
//! prompt pipeline, so a skill gives the same answers from every store. See the README for the
//! command line and the formats.
//!
//! This crate is the `skillcat` command line and a facade over the workspace's layer crates,
//! one module per layer under the names it has always had. The crates, and which imports which,
//! are drawn in `docs/architecture.md`; a crate cannot import one above it.
//!
//! | crate | modules here |
//! | --- | --- |
//! | `skillcat-core` | [`path`], [`document`], [`digest`], [`archive`], [`prompt`], [`capability`], [`source`] (trait, directory and archive stores), [`pack`], [`fs`] (the one atomic write), [`compat`], [`error`], [`units`] |
//! | `skillcat-sign` | [`sign`]: minisign signatures, statements, scoped keyrings |
//! | `skillcat-registry` | [`registry`], [`publish`], the SQLite store ([`source::RegistrySource`]) |
//! | `skillcat-remote` | [`client`] (the one HTTP client), the HTTP and OCI stores ([`source::http`], [`source::oci`]), [`push`] and [`central`] (a central registry's client) |
//! | `skillcat-sources` | [`source::open`]: every kind of store from one [`source::SourceSpec`], git included ([`source::GitSource`]); [`source::validate_paths`]: one report for each skill root a list of paths names |
//! | `skillcat-sandbox` | [`script`] (confined runs), [`guest`] (QuickJS tools) and [`tool`] (what every kind of tool shares: its names, its common failures) |
//! | `skillcat-config` | [`config`]: `skillcat.toml`, parsed once for every layer that reads it |
//! | `skillcat-runtime` | [`catalog`], [`matching`], [`runtime`], [`mcp`] |
//! | `skillcat-install` | [`install`]: skills placed into agents' folders, pinned by `skills-lock.json` |
//! | `skillcat-serve` | [`serve`]: a catalog as static files and a central registry over HTTP |
//! | `skillcat-audit` | [`audit`]: a skill's files checked for hidden Unicode, secrets, content that does not belong, undeclared behaviour and instructions aimed at the host, before `add`, `install`, `update`, a publish or `mcp` trusts it |
//!
//! [`context`] holds what every operation of the command line runs with, built once: the
//! process's environment (read there only), the configuration, the keyring, the remote options.
//! [`ops`] holds what each command does, without printing: the command line parses, calls
//! an operation and prints the data it answers.
//!
//! Feature `cli` (on by default) builds the `skillcat` binary; `tls` (on by default) adds HTTPS;
//! `neural` adds the offline neural ranker.

pub use skillcat_core::{Error, ErrorKind, Result};
pub use skillcat_core::{
    archive, capability, compat, digest, error, fs, pack, path, prompt, units,
};

/// The SKILL.md document, and look-alike names (`skillcat-core`).
pub mod document {
    pub use skillcat_core::document::*;
    pub use skillcat_core::lookalike;
}

/// Where skill bytes live: the [`Source`](source::Source) trait and every store.
pub mod source {
    pub use skillcat_core::source::*;
    pub use skillcat_registry::RegistrySource;
    pub use skillcat_remote::{http, oci};
    pub use skillcat_sources::{
        GitError, GitSource, IndexCheck, IndexVerifier, MarketplaceSource, OpenOptions, ToSpec,
        git, index_verifier, marketplace, open, open_with, validate, validate_paths,
    };
}

pub use skillcat_sign as sign;

pub use skillcat_registry as registry;
pub use skillcat_registry::prepare as publish;
pub use skillcat_remote::{central, client, push, search};

pub use skillcat_sandbox::{guest, script, tool};

pub use skillcat_runtime as runtime;
pub use skillcat_runtime::{catalog, config, matching, mcp};

pub use skillcat_install as install;
pub use skillcat_serve as serve;

pub use skillcat_audit as audit;

pub mod context;
pub mod ops;

// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
