//! The layers drawn in `docs/architecture.md` are the layers the imports follow: every
//! `crate::MODULE` path in a module of the library names a module of a lower layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MARKER: &str = "<!-- tests/layers.rs reads the next block";

/// The layer list of `docs/architecture.md`: module → layer number (0 at the bottom).
fn layers(doc: &str) -> BTreeMap<String, usize> {
    let start = doc
        .find(MARKER)
        .expect("docs/architecture.md has the layer list marker");
    let block = &doc[start..];
    let open = block
        .find("```text\n")
        .expect("a ```text block after the marker")
        + 8;
    let close = block[open..].find("```").expect("the block is closed") + open;
    let lines: Vec<&str> = block[open..close]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut out = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let level = lines.len() - 1 - i;
        let modules = line.split("  ").next().unwrap_or("").trim();
        assert!(!modules.is_empty(), "layer line without modules: {line:?}");
        for module in modules.split(" · ") {
            let module = module.trim();
            assert!(
                out.insert(module.to_string(), level).is_none(),
                "{module} is listed twice"
            );
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments (doc links may point anywhere).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string literal ("http://…") is not a comment; good enough for
            // finding `crate::` paths, which never follow one on the same line in a string.
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module named by a `crate::NAME` path in `code`.
fn imported_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let name: String = code[i + 7..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    // `crate::{a, b::c}` names several.
    for (i, _) in code.match_indices("crate::{") {
        let rest = &code[i + 8..];
        let end = rest.find('}').unwrap_or(rest.len());
        for part in rest[..end].split(',') {
            let name: String = part
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let layers = layers(&doc);
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    let mut seen_modules = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        seen_modules.insert(module.clone());
        let Some(&level) = layers.get(&module) else {
            problems.push(format!(
                "src/{} is in module `{module}`, which docs/architecture.md does not place in a layer",
                rel.display()
            ));
            continue;
        };
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for imported in imported_modules(&code) {
            if imported == module || !layers.contains_key(&imported) && module == "cli" {
                continue;
            }
            match layers.get(&imported) {
                Some(&l) if l < level => {}
                Some(&l) => problems.push(format!(
                    "src/{} (`{module}`, layer {level}) imports `{imported}` (layer {l}): {}",
                    rel.display(),
                    if l == level { "same layer" } else { "a layer above" }
                )),
                None => problems.push(format!(
                    "src/{} imports `{imported}`, which docs/architecture.md does not place in a layer",
                    rel.display()
                )),
            }
        }
    }
    for listed in layers.keys() {
        if !seen_modules.contains(listed) {
            problems.push(format!(
                "docs/architecture.md lists `{listed}`, which is not a module of src/"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_sees_an_upward_import() {
    // The scanner itself: an upward import in a sample is found, comments are not imports.
    let code = code_of(
        "use crate::runtime::Session; // crate::mcp in a comment\n\
         use crate::{source::Source, path};\n\
         let s = \"http://x/crate::nope\";\n\
         fn f() -> skillcat_crate::X {}\n",
    );
    let found = imported_modules(&code);
    assert!(found.contains("runtime") && found.contains("source") && found.contains("path"));
    assert!(!found.contains("mcp"), "{found:?}");
    let layers = layers(&format!(
        "{MARKER} -->\n```text\nruntime      top\nsource · path      bottom\n```\n"
    ));
    assert_eq!(layers["runtime"], 1);
    assert_eq!(layers["source"], 0);
    assert_eq!(layers["path"], 0);
}
