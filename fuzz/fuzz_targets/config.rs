//! Fuzz target `config`: the body is `skillcat_fuzz::config` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::config(data));
