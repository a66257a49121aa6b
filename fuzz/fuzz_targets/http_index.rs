//! Fuzz target `http_index`: the body is `skillcat_fuzz::http_index` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::http_index(data));
