//! Shared test support: the source conformance suite.
#![allow(dead_code)]

pub mod conformance;
