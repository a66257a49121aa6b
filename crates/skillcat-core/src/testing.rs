//! The source conformance suite (feature `testing`): plain functions that take any [`Source`]
//! holding the fixture catalog (`fixtures/conformance/catalog/` of the skillcat repository) and
//! check that it yields exactly the roots, files, executable bits, parse outcomes, validation
//! faults and skill digests recorded in `fixtures/conformance/catalog.json`. Every store's tests
//! call [`check_source`] (or [`check_valid_subset`], [`check_one`], [`check_root`] for a store
//! that holds less), whichever crate the store lives in.
//!
//! The fixtures are found in the workspace this crate was built from (two directories above
//! its manifest): the suite runs in skillcat's own repository. A published crate does not ship
//! them, so there every function here panics, saying where the fixtures were looked for. The
//! feature is for tests only: it is off by default and adds no dependency.
//!
//! Each check panics with every difference it found, so a test is one call:
//!
//! ```no_run
//! # async fn t() {
//! use skillcat_core::source::{DirOptions, DirSource};
//! use skillcat_core::testing;
//!
//! let src = DirSource::open(&testing::catalog_dir(), DirOptions::default()).unwrap();
//! testing::check_source(&src).await;
//! # }
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value as J;

use crate::document::ValidateOptions;
use crate::source::{self, Source, SourceExt};

/// The fixtures directory, `fixtures/conformance/` of the workspace this crate was built in.
fn fixtures() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = manifest
        .parent()
        .and_then(Path::parent)
        .unwrap_or(manifest)
        .join("fixtures/conformance");
    assert!(
        dir.join("catalog.json").is_file(),
        "the conformance fixtures are not at {} (they live in skillcat's repository, \
         not in the published crate)",
        dir.display()
    );
    dir
}

/// The fixture catalog directory: one skill root a folder, valid and invalid ones.
pub fn catalog_dir() -> PathBuf {
    fixtures().join("catalog")
}

/// The recorded cases of the catalog, one a root in byte order of the root: `root`, `valid`,
/// `loads`, `name`, `files` (`path`, `size`, `executable`), `digest`, `fault_kinds`, `refusal`.
pub fn cases() -> Vec<J> {
    let path = fixtures().join("catalog.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    match serde_json::from_str::<J>(&text) {
        Ok(J::Array(cases)) => cases,
        other => panic!("{} is not an array of cases: {other:?}", path.display()),
    }
}

/// What a check reads of each skill it compares.
type Describe = dyn Fn(&crate::document::Skill) -> String;

/// Checks `src` against the catalog; panics with every difference found.
pub async fn check_source(src: &dyn Source) {
    check_cases(src, cases(), "the conformance suite").await;
}

/// Checks `src` against the catalog's **valid** roots only (`"valid": true`): a store that
/// refuses invalid skills (the SQLite registry) must still list exactly those roots and give
/// each the catalog's files, executable bits, skill digest, name and no fault.
pub async fn check_valid_subset(src: &dyn Source) {
    let valid = cases()
        .into_iter()
        .filter(|c| c["valid"].as_bool().unwrap())
        .collect();
    check_cases(src, valid, "the conformance suite (valid subset)").await;
}

/// Checks a store that holds the catalog's roots `roots` only (a store that, by design, does
/// not hold some of them) against their cases.
pub async fn check_roots(src: &dyn Source, roots: &[&str]) {
    let some = cases()
        .into_iter()
        .filter(|c| roots.iter().any(|r| c["root"] == *r))
        .collect::<Vec<_>>();
    assert_eq!(
        some.len(),
        roots.len(),
        "{roots:?} are not all catalog roots"
    );
    check_cases(src, some, &format!("the conformance suite ({roots:?})")).await;
}

/// Checks a store that holds one skill (an OCI artifact: its one root is `""`) against the
/// catalog's case `root`: the same files, executable bits, skill digest, name and faults as
/// that root gives from every other store.
pub async fn check_one(src: &dyn Source, root: &str) {
    let mut case = case(root);
    case["root"] = J::from("");
    check_cases(src, vec![case], &format!("the conformance suite ({root})")).await;
}

/// Checks a store that holds one skill of the catalog under its own root (a
/// [`HeldSource`](crate::source::HeldSource) read from the catalog) against the case `root`.
pub async fn check_root(src: &dyn Source, root: &str) {
    let case = case(root);
    check_cases(src, vec![case], &format!("the conformance suite ({root})")).await;
}

/// The catalog's valid roots (`"valid": true`).
pub fn valid_roots() -> Vec<String> {
    cases()
        .into_iter()
        .filter(|c| c["valid"].as_bool().unwrap())
        .map(|c| c["root"].as_str().unwrap().to_string())
        .collect()
}

fn case(root: &str) -> J {
    cases()
        .into_iter()
        .find(|c| c["root"] == root)
        .unwrap_or_else(|| panic!("no case {root} in the conformance catalog"))
}

/// The skills and faults of a discovery, as its checks compare them.
fn outline(d: &source::Discovery) -> (Vec<String>, Vec<String>) {
    let skills: Vec<String> = d.skills.iter().map(|s| format!("{s:?}")).collect();
    let faults: Vec<String> = d
        .faults
        .iter()
        .map(|f| format!("{} {} {}", f.root, f.location, f.fault))
        .collect();
    (skills, faults)
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
    check_partial_reads(src, &found, &mut problems).await;
    for case in &want {
        check_case(src, &found, case, &mut problems).await;
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

/// A backend's own `read_documents` and the lesser details agree with the whole discovery
/// `found`.
async fn check_partial_reads(
    src: &dyn Source,
    found: &source::Discovery,
    problems: &mut Vec<String>,
) {
    // A backend's own read_documents must agree with the generic per-root reads.
    let each = source::discover_each(src).await.expect("discover_each");
    if outline(found) != outline(&each) {
        problems.push(format!(
            "discover and discover_each disagree:\n{:?}\n{:?}",
            outline(found),
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
    let with_body = |s: &crate::document::Skill| s.body().to_string();
    let with_faults = |s: &crate::document::Skill| {
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
        if seen(partial) != seen(found) {
            problems.push(format!(
                "discovering {what} alone disagrees:\n{:?}\n{:?}",
                seen(partial),
                seen(found)
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
}

/// One case of the catalog: its files, digest, parse outcome and faults.
async fn check_case(
    src: &dyn Source,
    found: &source::Discovery,
    case: &J,
    problems: &mut Vec<String>,
) {
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
