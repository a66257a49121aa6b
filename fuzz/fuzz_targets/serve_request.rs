//! Fuzz target `serve_request`: the body is `skillcat_fuzz::serve_request` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::serve_request(data));
