//! Fuzz target `yaml_fast`: the body is `skillcat_fuzz::yaml_fast` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::yaml_fast(data));
