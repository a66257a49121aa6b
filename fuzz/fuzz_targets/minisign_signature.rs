//! Fuzz target `minisign_signature`: the body is `skillcat_fuzz::minisign_signature` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::minisign_signature(data));
