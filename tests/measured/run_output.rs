//! One output budget, measured: a guest that logs 1,000 entries of 8 KiB of control characters
//! (48 MB of JSON once escaped) and returns 1 MiB of them. Before the budget, `skillcat run`
//! printed 55,446,526 bytes and peaked at 194,724 KiB; now the model reads at most the output
//! cap, and the host never holds the whole flood.
//!
//! Origin: step 26 (issue 48: containment by construction, round 4).

#![cfg(target_os = "linux")]

use std::time::Duration;

use crate::support::lab::{Lab, Out, chmod};

/// The default output cap.
const CAP: usize = 64 * 1024;

/// Peak resident memory allowed (the old build peaked near 190 MiB; this one near 55 MiB).
const PEAK_RSS: u64 = 120 << 20;

#[test]
fn a_guest_flood_of_control_characters_stays_small_in_output_and_memory() {
    let lab = Lab::new();
    let root = lab.path("skills").join("ctl");
    std::fs::create_dir_all(root.join("tools")).unwrap();
    chmod(&root, 0o755);
    chmod(&root.join("tools"), 0o755);
    std::fs::write(
        root.join("SKILL.md"),
        "---\nname: ctl\ndescription: Logs control characters.\nmetadata:\n  \
         skillcat.guest_tools: \"controls\"\n  \
         skillcat.guest.controls.source: tools/controls.js\n  \
         skillcat.guest.controls.description: \"Logs 1,000 entries of 8 KiB of control characters\"\n\
         ---\nControls.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("tools/controls.js"),
        "async () => {\n  const c = \"\\u0001\".repeat(8192);\n  \
         for (let i = 0; i < 1000; i++) console.log(c);\n  \
         return \"\\u0002\".repeat(1 << 20);\n}\n",
    )
    .unwrap();
    let config = lab.path("home/skillcat.toml");
    std::fs::write(&config, "sources = []\n").unwrap();
    let skills = lab.path("skills");
    let cmd = lab
        .command(
            &lab.path("home"),
            &[
                "--config",
                config.to_str().unwrap(),
                "run",
                skills.to_str().unwrap(),
                "ctl",
                "controls",
            ],
        )
        .spawn()
        .unwrap();
    let out = Out::wait(cmd, Duration::from_secs(120));
    assert_eq!(
        out.code,
        Some(0),
        "{}",
        &out.all()[..out.all().len().min(3000)]
    );
    assert!(
        out.stdout.len() <= CAP + 1,
        "{} bytes for the model",
        out.stdout.len()
    );
    let outcome: serde_json::Value = serde_json::from_str(out.stdout.trim_end()).unwrap();
    assert_eq!(outcome["logsCapped"], true);
    assert_eq!(outcome["resultCapped"], true);
    assert!(
        out.peak_rss < PEAK_RSS,
        "peak resident memory {} KiB",
        out.peak_rss >> 10
    );
}
