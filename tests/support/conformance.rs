//! The source conformance suite: plain functions that take any [`Source`] holding the fixture
//! catalog (`fixtures/conformance/catalog/`) and check that it yields exactly the roots, files,
//! executable bits, parse outcomes, validation faults and skill digests recorded in
//! `fixtures/conformance/catalog.json`. Every backend's tests call [`check_source`].

use std::path::{Path, PathBuf};

use serde_json::Value as J;
use skillcat::document::ValidateOptions;
use skillcat::source::{self, Source, SourceExt};

/// The fixture catalog directory.
pub fn catalog_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog")
}

fn expected() -> Vec<J> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog.json");
    serde_json::from_str::<J>(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// What a check reads of each skill it compares.
type Describe = dyn Fn(&skillcat::document::Skill) -> String;

/// Checks `src` against the catalog; panics with every difference found.
pub async fn check_source(src: &dyn Source) {
    check_cases(src, expected(), "the conformance suite").await;
}

/// Checks `src` against the catalog's **valid** roots only (`"valid": true`): a store that
/// refuses invalid skills (the SQLite registry) must still list exactly those roots and give
/// each the catalog's files, executable bits, skill digest, name and no fault.
pub async fn check_valid_subset(src: &dyn Source) {
    let valid = expected()
        .into_iter()
        .filter(|c| c["valid"].as_bool().unwrap())
        .collect();
    check_cases(src, valid, "the conformance suite (valid subset)").await;
}

/// Checks a store that holds one skill (an OCI artifact: its one root is `""`) against the
/// catalog's case `root`: the same files, executable bits, skill digest, name and faults as
/// that root gives from every other store.
pub async fn check_one(src: &dyn Source, root: &str) {
    let mut case = expected()
        .into_iter()
        .find(|c| c["root"] == root)
        .unwrap_or_else(|| panic!("no case {root} in the conformance catalog"));
    case["root"] = J::from("");
    check_cases(src, vec![case], &format!("the conformance suite ({root})")).await;
}

/// The catalog's valid roots (`"valid": true`).
pub fn valid_roots() -> Vec<String> {
    expected()
        .into_iter()
        .filter(|c| c["valid"].as_bool().unwrap())
        .map(|c| c["root"].as_str().unwrap().to_string())
        .collect()
}

async fn check_cases(src: &dyn Source, want: Vec<J>, suite: &str) {
    let mut problems = Vec::new();

    let mut roots = src.list().await.expect("list");
    roots.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let want_roots: Vec<&str> = want.iter().map(|c| c["root"].as_str().unwrap()).collect();
    if roots != want_roots {
        problems.push(format!("roots: got {roots:?}, want {want_roots:?}"));
    }

    let found = source::discover(src).await.expect("discover");
    // A backend's own read_documents must agree with the generic per-root reads.
    let each = source::discover_each(src).await.expect("discover_each");
    let outline = |d: &source::Discovery| {
        let skills: Vec<String> = d.skills.iter().map(|s| format!("{s:?}")).collect();
        let faults: Vec<String> = d
            .faults
            .iter()
            .map(|f| format!("{} {} {}", f.root, f.location, f.fault))
            .collect();
        (skills, faults)
    };
    if outline(&found) != outline(&each) {
        problems.push(format!(
            "discover and discover_each disagree:\n{:?}\n{:?}",
            outline(&found),
            outline(&each)
        ));
    }
    // Reading less than everything gives the same skills and faults as far as it reads: the
    // documents alone (no file lists), the frontmatter alone (no bodies either; validation
    // included).
    let documents = source::discover_with(src, source::Detail::Document)
        .await
        .expect("discover documents");
    let frontmatters = source::discover_with(src, source::Detail::Frontmatter)
        .await
        .expect("discover frontmatters");
    let with_body = |s: &skillcat::document::Skill| s.body().to_string();
    let with_faults = |s: &skillcat::document::Skill| {
        format!(
            "{:?} {:?}",
            s.frontmatter(),
            s.validate(&ValidateOptions::default())
        )
    };
    let checks: [(&str, &source::Discovery, &Describe); 2] = [
        ("documents", &documents, &with_body),
        ("frontmatters", &frontmatters, &with_faults),
    ];
    for (what, partial, read) in checks {
        let seen = |d: &source::Discovery| {
            let skills: Vec<String> = d
                .skills
                .iter()
                .map(|s| {
                    format!(
                        "{} {} {:?} {}",
                        s.root(),
                        s.location(),
                        s.dir_name(),
                        read(s)
                    )
                })
                .collect();
            (skills, outline(d).1)
        };
        if seen(partial) != seen(&found) {
            problems.push(format!(
                "discovering {what} alone disagrees:\n{:?}\n{:?}",
                seen(partial),
                seen(&found)
            ));
        }
    }
    if documents.skills.iter().any(|s| s.has_files()) || found.skills.iter().any(|s| !s.has_files())
    {
        problems.push("file lists read when not asked for, or missing when asked for".into());
    }
    if frontmatters
        .skills
        .iter()
        .any(|s| s.has_body() || !s.body().is_empty() || s.has_files())
        || found.skills.iter().any(|s| !s.has_body())
    {
        problems.push("bodies kept when not asked for, or missing when asked for".into());
    }
    for case in &want {
        let root = case["root"].as_str().unwrap();
        // Files, sizes and executable bits.
        match src.files(root).await {
            Ok(files) => {
                let got: Vec<J> = files
                    .iter()
                    .map(|f| serde_json::json!({"path": f.path, "size": f.size, "executable": f.executable}))
                    .collect();
                if got != case["files"].as_array().unwrap().clone() {
                    problems.push(format!("{root}: files {got:?}, want {}", case["files"]));
                }
            }
            Err(e) => problems.push(format!("{root}: files failed: {e}")),
        }
        // The skill digest, recomputed from the bytes the source holds.
        match src.manifest(root, "", "").await {
            Ok(m) if m.digest == case["digest"].as_str().unwrap() => {}
            Ok(m) => problems.push(format!(
                "{root}: digest {}, want {}",
                m.digest, case["digest"]
            )),
            Err(e) => problems.push(format!("{root}: manifest failed: {e}")),
        }
        // Parse outcome and validation faults.
        let loads = case["loads"].as_bool().unwrap();
        let skill = found.skills.iter().find(|s| s.root() == root);
        let fault = found.faults.iter().find(|f| f.root == root);
        match (loads, skill, fault) {
            (true, Some(s), None) => {
                if s.raw_name() != case["name"].as_str() {
                    problems.push(format!(
                        "{root}: name {:?}, want {}",
                        s.raw_name(),
                        case["name"]
                    ));
                }
                let kinds: Vec<&str> = s
                    .validate(&ValidateOptions::default())
                    .iter()
                    .map(|f| f.kind().as_str())
                    .collect();
                let want_kinds: Vec<&str> = case["fault_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap())
                    .collect();
                if kinds != want_kinds {
                    problems.push(format!("{root}: faults {kinds:?}, want {want_kinds:?}"));
                }
            }
            (false, None, Some(f)) => {
                if f.fault.kind().as_str() != case["refusal"].as_str().unwrap() {
                    problems.push(format!(
                        "{root}: refused as {}, want {}",
                        f.fault.kind(),
                        case["refusal"]
                    ));
                }
            }
            (_, s, f) => problems.push(format!(
                "{root}: loads={loads} but skill={} fault={:?}",
                s.is_some(),
                f.map(|f| f.fault.message())
            )),
        }
    }
    let total = found.skills.len() + found.faults.len();
    if total != want.len() {
        problems.push(format!(
            "discover gave {total} results for {} roots",
            want.len()
        ));
    }
    assert!(
        problems.is_empty(),
        "{src:?} breaks {suite}:\n{}",
        problems.join("\n")
    );
}
