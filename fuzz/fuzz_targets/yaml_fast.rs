//! Fuzz the YAML fast path against the saphyr-parser path: whenever the fast path reads a text,
//! the saphyr path must read it too, to the same value (never refuse it, never read it otherwise).
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillcat::document::__fuzz_yaml_paths;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let (fast, saphyr) = __fuzz_yaml_paths(src);
    if let Some(value) = fast {
        assert_eq!(
            saphyr,
            Ok(Some(value)),
            "the fast path reads {src:?} differently"
        );
    }
});
