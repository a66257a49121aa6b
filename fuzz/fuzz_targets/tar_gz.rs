//! Fuzz target `tar_gz`: the body is `skillcat_fuzz::tar_gz` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::tar_gz(data));
