//! Fuzz target `keyring`: the body is `skillcat_fuzz::keyring` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::keyring(data));
