//! Writes `$OUT_DIR/confusables.rs`: the prototypes of Unicode's confusables, as
//! unicode-security maps them, in tables without addresses (`lookalike::confusables`).
//!
//! unicode-security keeps them as a slice of slices: 10,884 addresses that the loader writes,
//! page by page, at every start of a position-independent binary that links it (161 KB, 39
//! pages copied on write), whether or not the process ever compares a name. Here they are
//! sorted code points, offsets and one string: constant data, read from the binary's file
//! only when a name is compared.

use std::fmt::Write as _;

use unicode_normalization::UnicodeNormalization;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let mut from = Vec::new();
    let mut at = vec![0usize];
    let mut to = String::new();
    // Every character that is its own NFD (what the skeleton looks up after its NFD) and whose
    // skeleton is not itself: its skeleton is its prototype in NFD, or nothing for a
    // default-ignorable one.
    for c in (0..=0x10_ffffu32).filter_map(char::from_u32) {
        let one = c.to_string();
        if !one.nfd().eq([c]) {
            continue;
        }
        let proto: String = unicode_security::skeleton(&one).collect();
        if proto != one {
            from.push(u32::from(c));
            to.push_str(&proto);
            at.push(to.len());
        }
    }
    assert!(
        to.len() <= usize::from(u16::MAX),
        "the prototypes' offsets need a wider type than u16"
    );
    let mut out = String::new();
    let list = |out: &mut String, name: &str, ty: &str, items: Vec<String>| {
        let _ = writeln!(out, "pub(super) static {name}: [{ty}; {}] = [", items.len());
        for row in items.chunks(16) {
            let _ = writeln!(out, "{},", row.join(","));
        }
        out.push_str("];\n");
    };
    list(
        &mut out,
        "FROM",
        "u32",
        from.iter().map(|n| n.to_string()).collect(),
    );
    list(
        &mut out,
        "AT",
        "u16",
        at.iter().map(|n| n.to_string()).collect(),
    );
    let _ = writeln!(out, "pub(super) static TO: &str = {to:?};");
    let dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(std::path::Path::new(&dir).join("confusables.rs"), out)
        .expect("writing confusables.rs");
}
