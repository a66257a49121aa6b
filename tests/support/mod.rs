//! Shared test support: the source conformance suite, and running the real binary.
#![allow(dead_code)]

pub mod bin;
pub mod conformance;
