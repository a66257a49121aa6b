//! The audit: every rule through the binary and the library.

mod rules;
