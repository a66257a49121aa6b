//! Fuzz target `registry_publish`: the body is `skillcat_fuzz::registry_publish` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::registry_publish(data));
