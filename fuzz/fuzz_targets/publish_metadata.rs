//! Fuzz target `publish_metadata`: the body is `skillcat_fuzz::publish_metadata` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::publish_metadata(data));
