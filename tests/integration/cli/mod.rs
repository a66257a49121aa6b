//! The command line as a user meets it: commands, help and its examples, outputs, shells, trust, authoring, certificates, private directories.

mod commands;
mod help_examples;
mod outputs;
mod shell;
mod trust;
mod rough_edges;
mod certificates;
mod authoring;
mod script;
mod private_dirs;
mod extension_fields;
