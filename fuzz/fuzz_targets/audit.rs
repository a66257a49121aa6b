//! Fuzz target `audit`: the body is `skillcat_fuzz::audit` (documented there), which the corpus
//! replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::audit(data));
