//! Fuzz target `tool_declarations`: the body is `skillcat_fuzz::tool_declarations` (documented
//! there), which the corpus replay test runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillcat_fuzz::tool_declarations(data));
