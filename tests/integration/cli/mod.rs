//! The command line as a user meets it: commands, help and its examples, outputs, shells, trust, authoring, certificates, private directories.

mod authoring;
mod certificates;
mod commands;
mod extension_fields;
mod guardrails;
mod help_examples;
mod outputs;
mod private_dirs;
mod rough_edges;
mod script;
mod shell;
mod sidecar;
mod trust;
