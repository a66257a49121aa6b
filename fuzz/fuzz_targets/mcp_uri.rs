//! Fuzz target `mcp_uri`: the body is `skillcat_fuzz::mcp_uri` (documented there), which the
//! corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::mcp_uri(data));
