//! Replays every committed corpus file through its target's body, on the stable toolchain and
//! without libFuzzer, so CI checks in seconds that no input once found or seeded fails again.

use std::path::Path;

#[test]
fn every_target_replays_its_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut failed = Vec::new();
    for (name, body) in skillcat_fuzz::TARGETS {
        let dir = root.join(name);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("target {name} has no corpus at corpus/{name}: {e}"))
            .map(|entry| entry.expect("a corpus entry").path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "the corpus of {name} is empty");
        for input in inputs {
            let data = std::fs::read(&input).expect("a corpus file");
            let run = std::panic::catch_unwind(|| body(&data));
            if run.is_err() {
                failed.push(format!("{name}: {}", input.display()));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "inputs that fail:\n{}",
        failed.join("\n")
    );
}

#[test]
fn every_target_has_a_binary() {
    let manifest = include_str!("../Cargo.toml");
    for (name, _) in skillcat_fuzz::TARGETS {
        assert!(
            manifest.contains(&format!(
                "name = \"{name}\"\npath = \"fuzz_targets/{name}.rs\""
            )),
            "{name} has no [[bin]] in fuzz/Cargo.toml"
        );
    }
}
