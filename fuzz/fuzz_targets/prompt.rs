//! Fuzz target `prompt`: the body is `skillcat_fuzz::prompt` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::prompt(data));
