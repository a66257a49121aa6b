//! Fuzz the SKILL.md reader: any bytes must give a document or a fault, never a panic, and a
//! document's frontmatter must validate without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillcat::document::{ValidateOptions, parse_document, validate_frontmatter};

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = parse_document(data) {
        let faults = validate_frontmatter(&doc.frontmatter, Some("dir"), &ValidateOptions::default());
        for f in faults {
            assert!(!f.message().is_empty());
        }
        let _ = doc.frontmatter.to_json();
    }
});
