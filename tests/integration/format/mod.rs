//! The format: the reference validator's conformance vectors and what fuzzing found.

mod fuzz_findings;
mod vectors;
