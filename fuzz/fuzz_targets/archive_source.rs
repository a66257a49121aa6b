//! Fuzz target `archive_source`: the body is `skillcat_fuzz::archive_source` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::archive_source(data));
