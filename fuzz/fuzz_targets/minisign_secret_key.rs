//! Fuzz target `minisign_secret_key`: the body is `skillcat_fuzz::minisign_secret_key` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::minisign_secret_key(data));
