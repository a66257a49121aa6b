//! Fuzz target `oci_manifest`: the body is `skillcat_fuzz::oci_manifest` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::oci_manifest(data));
