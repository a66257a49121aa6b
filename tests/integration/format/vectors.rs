//! All 123 cases of the reference validator's conformance vectors
//! (`fixtures/conformance/skills-ref-vectors.json`, see `fixtures/conformance/SOURCE.md`).
//!
//! Each case is laid out in a fresh temp root exactly as written, run through the library's
//! reference-compatible functions, and compared with what the reference returned — or, where a
//! case names a divergence, with what skillcat must return instead.
//!
//! Origin: step 1 (issue 2: the core, SKILL.md and the reference validator).

use std::path::{Path, PathBuf};

use base64_decode::decode as b64;
use serde_json::Value as J;
use skillcat::document::{ValidateOptions, parse_document};

mod base64_decode {
    /// A small standard-alphabet base64 decoder for the vectors' raw bytes.
    pub fn decode(s: &str) -> Vec<u8> {
        let val = |c: u8| -> u32 {
            match c {
                b'A'..=b'Z' => (c - b'A') as u32,
                b'a'..=b'z' => (c - b'a' + 26) as u32,
                b'0'..=b'9' => (c - b'0' + 52) as u32,
                b'+' => 62,
                b'/' => 63,
                _ => panic!("bad base64 byte {c}"),
            }
        };
        let bytes: Vec<u8> = s
            .bytes()
            .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
            .collect();
        let mut out = Vec::new();
        for chunk in bytes.chunks(4) {
            let mut acc = 0u32;
            for (i, &c) in chunk.iter().enumerate() {
                acc |= val(c) << (18 - 6 * i);
            }
            let n = chunk.len() * 6 / 8;
            for i in 0..n {
                out.push((acc >> (16 - 8 * i)) as u8);
            }
        }
        out
    }
}

const YAML_PREFIX: &str = "Invalid YAML in frontmatter: ";

fn write_layout(root: &Path, layout: &J) -> PathBuf {
    let dir = root.join(layout["dir"].as_str().unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    for (name, content) in layout["files"].as_object().unwrap() {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let bytes = match (content.get("text"), content.get("base64")) {
            (Some(t), _) => t.as_str().unwrap().as_bytes().to_vec(),
            (_, Some(b)) => b64(b.as_str().unwrap()),
            _ => panic!("file without content"),
        };
        std::fs::write(path, bytes).unwrap();
    }
    dir
}

/// The path the case passes to the API.
fn target_path(root: &Path, case: &J) -> PathBuf {
    let layout = &case["layout"];
    match case["target"].as_str().unwrap() {
        "missing" => root.join(layout["dir"].as_str().unwrap()),
        "dir" => write_layout(root, layout),
        "file" => {
            let dir = write_layout(root, layout);
            let name = layout["files"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .clone();
            dir.join(name)
        }
        "skill_md" => {
            let dir = write_layout(root, layout);
            if dir.join("SKILL.md").is_file() {
                dir.join("SKILL.md")
            } else {
                dir.join("skill.md")
            }
        }
        t => panic!("unknown target {t}"),
    }
}

/// `ParseError: msg` / `ValidationError: msg` → `msg`.
fn error_message(e: &str) -> &str {
    e.split_once(": ").map(|(_, m)| m).unwrap_or(e)
}

fn same_message(got: &str, want: &str, detail_varies: bool) -> bool {
    if detail_varies && want.starts_with(YAML_PREFIX) {
        got.starts_with(YAML_PREFIX) && got.len() > YAML_PREFIX.len()
    } else {
        got == want
    }
}

async fn run_case(case: &J) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let root_str = root.display().to_string();
    let expected = if case["divergence"].is_null() {
        &case["reference"]
    } else {
        &case["expected"]
    };
    let varies = case["yaml_detail_varies"].as_bool().unwrap_or(false);
    let fix = |s: &str| s.replace("<ROOT>", &root_str);
    match case["api"].as_str().unwrap() {
        "validate" => {
            let path = target_path(&root, case);
            let faults = skillcat::compat::validate(&path, &ValidateOptions::default()).await;
            if let Some(kind) = expected.get("fault_kind") {
                let got: Vec<_> = faults.iter().map(|f| f.kind().as_str()).collect();
                return if got.first().copied() == kind.as_str() {
                    Ok(())
                } else {
                    Err(format!("kinds {got:?}"))
                };
            }
            let want: Vec<String> = expected["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| fix(m.as_str().unwrap()))
                .collect();
            let got: Vec<&str> = faults.iter().map(|f| f.message()).collect();
            let ok = got.len() == want.len()
                && got
                    .iter()
                    .zip(&want)
                    .all(|(g, w)| same_message(g, w, varies));
            if ok {
                Ok(())
            } else {
                Err(format!("got {got:#?}\nwant {want:#?}"))
            }
        }
        "read_properties" => {
            let path = target_path(&root, case);
            let got = skillcat::compat::read_properties(&path).await;
            match (got, expected.get("properties"), expected.get("error")) {
                (Ok(p), Some(want), _) if &p == want => Ok(()),
                (Err(f), _, Some(e))
                    if same_message(
                        f.message(),
                        &fix(error_message(e.as_str().unwrap())),
                        varies,
                    ) =>
                {
                    Ok(())
                }
                (got, _, _) => Err(format!("got {got:?}\nwant {expected}")),
            }
        }
        "to_prompt" => {
            let layouts = case["layout"].as_array().unwrap();
            let dirs: Vec<PathBuf> = layouts.iter().map(|l| write_layout(&root, l)).collect();
            let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
            let got = skillcat::compat::to_prompt(&refs).await;
            match (got, expected.get("prompt"), expected.get("error")) {
                (Ok(p), Some(want), _) if p == fix(want.as_str().unwrap()) => Ok(()),
                (Err(f), _, Some(e)) if f.message() == fix(error_message(e.as_str().unwrap())) => {
                    Ok(())
                }
                (got, _, _) => Err(format!("got {got:?}\nwant {expected}")),
            }
        }
        "parse_frontmatter" => {
            let path = target_path(&root, case);
            let bytes = std::fs::read(path).unwrap();
            match (
                parse_document(&bytes),
                expected.get("frontmatter"),
                expected.get("error"),
            ) {
                (Ok(doc), Some(fm), _)
                    if &doc.frontmatter.to_json() == fm && expected["body"] == doc.body =>
                {
                    Ok(())
                }
                (Err(f), _, Some(e))
                    if same_message(f.message(), error_message(e.as_str().unwrap()), varies) =>
                {
                    Ok(())
                }
                (got, _, _) => Err(format!("got {got:?}\nwant {expected}")),
            }
        }
        api => Err(format!("unknown api {api}")),
    }
}

/// skillcat's own cases, observed from the same reference by `fixtures/conformance/observe.py`.
#[tokio::test]
async fn extra_observed_vectors_pass() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/extra-vectors.json");
    let data: J = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(
        data["source"]
            .as_str()
            .unwrap()
            .starts_with("observed from skills-ref"),
        "the extra vectors are observations, not hand-written"
    );
    let cases = data["cases"].as_array().unwrap();
    assert!(cases.len() >= 11, "{} cases", cases.len());
    let failures: Vec<String> = {
        let mut f = Vec::new();
        for case in cases {
            if let Err(e) = run_case(case).await {
                f.push(format!("{} {}: {e}", case["id"], case["api"]));
            }
        }
        f
    };
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn all_reference_vectors_pass() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/skills-ref-vectors.json");
    let data: J = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = data["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 123, "the contract has 123 cases");
    let mut failures = Vec::new();
    for case in cases {
        if let Err(e) = run_case(case).await {
            failures.push(format!("{} {}: {e}", case["id"], case["api"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 123 cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
