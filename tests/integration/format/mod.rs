//! The format: the reference validator's conformance vectors and what fuzzing found.

mod vectors;
mod fuzz_findings;
