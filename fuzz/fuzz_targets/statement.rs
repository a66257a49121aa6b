//! Fuzz target `statement`: the body is `skillcat_fuzz::statement` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::statement(data));
