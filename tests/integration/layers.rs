//! The layers drawn in `docs/architecture.md` are the layers the code follows: each crate
//! depends on exactly the `skillcat-*` crates the drawing lists for it, every module a crate
//! declares is drawn, and inside a crate every `crate::MODULE` path (or `super::` path that
//! reaches the crate's root) in a module names a module of a lower layer of that crate.
//!
//! Origin: step 16 (issue 21: one drawing of the layers, checked), per crate since step 19
//! (issue 29); step 28 (issue 50) made an undrawn module and a `super::` import fail it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MARKER: &str = "<!-- tests/integration/layers.rs reads the next block";

/// One crate of the drawing.
#[derive(Debug)]
struct Layer {
    /// Module → layer inside the crate (0 at the bottom).
    modules: BTreeMap<String, usize>,
    /// Module → its knot (`a + b`: modules that import each other, drawn as one), if any.
    knots: BTreeMap<String, String>,
    /// The `skillcat-*` crates it depends on, full names.
    deps: BTreeSet<String>,
    /// The drawing's order, top first.
    order: usize,
}

/// The crate list of `docs/architecture.md`: crate name → its modules and dependencies.
fn crates(doc: &str) -> BTreeMap<String, Layer> {
    let start = doc
        .find(MARKER)
        .expect("docs/architecture.md has the layer list marker");
    let block = &doc[start..];
    let open = block
        .find("```text\n")
        .expect("a ```text block after the marker")
        + 8;
    let close = block[open..].find("```").expect("the block is closed") + open;
    let mut out = BTreeMap::new();
    for (order, line) in block[open..close]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
    {
        let (left, deps) = line
            .split_once('→')
            .unwrap_or_else(|| panic!("a crate line without →: {line:?}"));
        let left = left.trim();
        let (name, modules) = left
            .split_once(' ')
            .unwrap_or_else(|| panic!("a crate line without modules: {line:?}"));
        let layers: Vec<&str> = modules.trim().split(" / ").collect();
        let mut map = BTreeMap::new();
        let mut knots = BTreeMap::new();
        for (i, layer) in layers.iter().enumerate() {
            for item in layer.split(" · ") {
                let knot: Vec<&str> = item.split(" + ").map(str::trim).collect();
                for module in &knot {
                    assert!(!module.is_empty(), "an empty module in {line:?}");
                    assert!(
                        map.insert(module.to_string(), layers.len() - 1 - i)
                            .is_none(),
                        "{module} is listed twice in {name}"
                    );
                    if knot.len() > 1 {
                        knots.insert(module.to_string(), item.trim().to_string());
                    }
                }
            }
        }
        let deps = deps
            .split_whitespace()
            .map(|d| format!("skillcat-{d}"))
            .collect();
        let layer = Layer {
            modules: map,
            knots,
            deps,
            order,
        };
        assert!(
            out.insert(name.to_string(), layer).is_none(),
            "{name} is listed twice"
        );
    }
    out
}

/// The `skillcat-*` crates a manifest's `[dependencies]` (and its target-specific ones) name.
fn manifest_deps(manifest: &str) -> BTreeSet<String> {
    let value: toml::Table = manifest.parse().expect("a Cargo.toml parses");
    let mut out = BTreeSet::new();
    let mut add = |table: Option<&toml::Value>| {
        for name in table
            .and_then(|t| t.as_table())
            .into_iter()
            .flat_map(|t| t.keys())
        {
            if name.starts_with("skillcat-") {
                out.insert(name.clone());
            }
        }
    };
    add(value.get("dependencies"));
    if let Some(targets) = value.get("target").and_then(|t| t.as_table()) {
        for target in targets.values() {
            add(target.get("dependencies"));
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
        out.extend(group_heads(&code[i + 8..]));
    }
    out
}

/// The first name of each part of a `use` group, `rest` following its `{`: `a, b::{C, d}, E}`
/// gives `a`, `b` (and `E`, which no module is named).
fn group_heads(rest: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && !c.is_whitespace() => {
                start = false;
                let name: String = rest[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    heads.push(name);
                }
            }
            _ => {}
        }
    }
    heads
}

/// Every top-level module named by a `super::` path in `code` that reaches the crate's root:
/// one `super::` in `src/a.rs` or `src/a/mod.rs`, two in `src/a/b.rs`. (`depth` is the file's:
/// 1 for those two; an inline module is not seen, so `super::x` in a file's `mod tests` is
/// read as the crate's `x`, which it names whenever that is a module of the crate.)
fn super_modules(code: &str, depth: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if depth == 0 {
        return out;
    }
    for (i, _) in code.match_indices("super::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut rest = &code[i..];
        let mut count = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            rest = r;
            count += 1;
        }
        if count != depth {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            out.extend(group_heads(group));
        } else {
            let name: String = rest
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

/// The modules a crate's root declares (`mod NAME;` in `src/lib.rs` or `src/main.rs`, whatever
/// its visibility and `#[cfg]`); inline modules (`mod x { … }`) are part of the root's file.
fn declared_modules(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for root in ["lib.rs", "main.rs"] {
        let Ok(text) = std::fs::read_to_string(src.join(root)) else {
            continue;
        };
        for line in code_of(&text).lines() {
            let mut line = line.trim();
            // `#[cfg(test)] mod x;` on one line.
            while line.starts_with("#[") {
                match line.find(']') {
                    Some(end) => line = line[end + 1..].trim_start(),
                    None => break,
                }
            }
            if let Some(rest) = line.strip_prefix("pub") {
                line = match rest.trim_start().strip_prefix('(') {
                    Some(r) => r.split_once(')').map_or("", |(_, r)| r),
                    None => rest,
                }
                .trim_start();
            }
            if let Some(name) = line
                .strip_prefix("mod ")
                .and_then(|r| r.trim().strip_suffix(';'))
            {
                out.insert(name.trim().to_string());
            }
        }
    }
    out
}

/// The module of the drawing a file of a crate belongs to: its first path component when the
/// crate lists it, else the crate's home module (`skillcat-registry` → `registry`; the root
/// crate → `cli`), else none (a `lib.rs` that only declares modules).
fn module_of(crate_name: &str, layer: &Layer, rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let first = first.trim_end_matches(".rs");
    if layer.modules.contains_key(first) {
        return Some(first.to_string());
    }
    let home = match crate_name {
        "skillcat" => "cli",
        name => name.trim_start_matches("skillcat-"),
    };
    layer.modules.contains_key(home).then(|| home.to_string())
}

/// What breaks the rule in one crate's `src/`.
fn check_crate(crate_name: &str, layer: &Layer, src: &Path, problems: &mut Vec<String>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut seen = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let Some(module) = module_of(crate_name, layer, rel) else {
            continue;
        };
        seen.insert(module.clone());
        let level = layer.modules[&module];
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        // How many `super::` reach the root from this file (`a.rs`, `a/mod.rs`: 1).
        let depth = rel.components().count() - usize::from(rel.ends_with("mod.rs"));
        let mut imports = imported_modules(&code);
        imports.extend(super_modules(&code, depth));
        for imported in imports {
            // A name the crate does not list is one of its own submodules or a crate below,
            // named through its `pub(crate) use` block: Cargo keeps those in order.
            let Some(&l) = layer.modules.get(&imported) else {
                continue;
            };
            let knot = layer.knots.get(&module);
            if knot.is_some() && knot == layer.knots.get(&imported) {
                continue;
            }
            if imported != module && l >= level {
                problems.push(format!(
                    "{} (`{module}`, layer {level} of {crate_name}) imports `{imported}` (layer {l}): {}",
                    file.display(),
                    if l == level { "same layer" } else { "a layer above" }
                ));
            }
        }
    }
    for declared in declared_modules(src) {
        if !layer.modules.contains_key(&declared) {
            problems.push(format!(
                "docs/architecture.md does not list `{declared}`, a module {crate_name} declares"
            ));
        }
    }
    for listed in layer.modules.keys() {
        if !seen.contains(listed) {
            problems.push(format!(
                "docs/architecture.md lists `{listed}` in {crate_name}, which has no such module"
            ));
        }
    }
}

#[test]
fn every_crate_depends_and_imports_only_downward_as_drawn() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let drawn = crates(&doc);
    let mut problems = Vec::new();

    let mut on_disk = BTreeMap::new();
    on_disk.insert("skillcat".to_string(), root.to_path_buf());
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("Cargo.toml").is_file() {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            on_disk.insert(name, dir);
        }
    }
    for name in on_disk.keys() {
        if !drawn.contains_key(name) {
            problems.push(format!("crate {name} is not in docs/architecture.md"));
        }
    }
    for (name, layer) in &drawn {
        let Some(dir) = on_disk.get(name) else {
            problems.push(format!(
                "docs/architecture.md draws {name}, which is not a crate"
            ));
            continue;
        };
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let deps = manifest_deps(&manifest);
        if deps != layer.deps {
            problems.push(format!(
                "{name} depends on {deps:?}; docs/architecture.md says {:?}",
                layer.deps
            ));
        }
        for dep in &layer.deps {
            match drawn.get(dep) {
                Some(below) if below.order > layer.order => {}
                Some(_) => problems.push(format!("{name} depends on {dep}, drawn above it")),
                None => problems.push(format!("{name} depends on {dep}, which is not drawn")),
            }
        }
        check_crate(name, layer, &dir.join("src"), &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_sees_an_upward_import_and_a_dependency_not_drawn() {
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

    let drawn = crates(&format!(
        "{MARKER} -->\n```text\nskillcat-a   runtime / source · path   → b\nskillcat-b   x   →\n```\n"
    ));
    let a = &drawn["skillcat-a"];
    assert_eq!(a.modules["runtime"], 1);
    assert_eq!(a.modules["source"], 0);
    assert_eq!(a.modules["path"], 0);
    assert_eq!(a.deps, BTreeSet::from(["skillcat-b".to_string()]));
    assert!(drawn["skillcat-b"].deps.is_empty());

    // A module importing a module of its own layer or above is reported.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("path.rs"), "use crate::source::Source;\n").unwrap();
    std::fs::write(dir.path().join("source.rs"), "use crate::path::RelPath;\n").unwrap();
    std::fs::write(dir.path().join("runtime.rs"), "use crate::path::RelPath;\n").unwrap();
    let mut problems = Vec::new();
    check_crate("skillcat-a", a, dir.path(), &mut problems);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().all(|p| p.contains("same layer")),
        "{problems:?}"
    );

    // Dependencies are read from the manifest, target-specific ones too.
    let deps = manifest_deps(
        "[dependencies]\nskillcat-core.workspace = true\nserde = \"1\"\n\
         [target.'cfg(unix)'.dependencies]\nskillcat-sign = { path = \"x\" }\n\
         [dev-dependencies]\nskillcat-registry = \"1\"\n",
    );
    assert_eq!(
        deps,
        BTreeSet::from(["skillcat-core".to_string(), "skillcat-sign".to_string()])
    );
}

/// Every module a crate declares must be drawn (issue 50): a module missing from the block was
/// silently left out of the check, so its imports went unchecked and the page was not true.
#[test]
fn the_checker_sees_a_module_the_drawing_does_not_list() {
    let drawn = crates(&format!(
        "{MARKER} -->\n```text\nskillcat-a   source / path   →\n```\n"
    ));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "pub mod path;\npub mod source;\n#[cfg(test)]\nmod stray;\nmod inline {\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("path.rs"), "").unwrap();
    std::fs::write(dir.path().join("source.rs"), "use crate::path::RelPath;\n").unwrap();
    std::fs::write(dir.path().join("stray.rs"), "use crate::source::Source;\n").unwrap();
    let mut problems = Vec::new();
    check_crate(
        "skillcat-a",
        &drawn["skillcat-a"],
        dir.path(),
        &mut problems,
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("`stray`") && problems[0].contains("does not list"),
        "{problems:?}"
    );
}

/// A module names its siblings through `super::` as often as through `crate::` (`use
/// super::session::Session` in a top-level module is `crate::session`): both are imports.
#[test]
fn the_checker_reads_super_paths_that_reach_the_crate_root() {
    let drawn = crates(&format!(
        "{MARKER} -->\n```text\nskillcat-a   source / path   →\n```\n"
    ));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "pub mod path;\npub mod source;\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("path")).unwrap();
    std::fs::create_dir(dir.path().join("source")).unwrap();
    // Upward, from a top-level file and from a submodule two levels down.
    std::fs::write(
        dir.path().join("path/mod.rs"),
        "mod rules;\nuse super::{source::Source, path};\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("path/rules.rs"),
        "use super::super::source;\n",
    )
    .unwrap();
    // Not the root: `super::path` in `source/dir.rs` is `source::path`, a submodule.
    std::fs::write(dir.path().join("source/mod.rs"), "mod dir;\nmod path;\n").unwrap();
    std::fs::write(dir.path().join("source/path.rs"), "").unwrap();
    std::fs::write(dir.path().join("source/dir.rs"), "use super::path::X;\n").unwrap();
    let mut problems = Vec::new();
    check_crate(
        "skillcat-a",
        &drawn["skillcat-a"],
        dir.path(),
        &mut problems,
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().all(|p| p.contains("imports `source`")),
        "{problems:?}"
    );
}

/// Two modules that import each other are drawn as one knot (`site + web`): they may name each
/// other, and every other rule holds for both.
#[test]
fn a_knot_may_import_itself_and_nothing_above() {
    let drawn = crates(&format!(
        "{MARKER} -->\n```text\nskillcat-a   api / site + web · limits   →\n```\n"
    ));
    let a = &drawn["skillcat-a"];
    assert_eq!(
        (a.modules["site"], a.modules["web"], a.modules["api"]),
        (0, 0, 1)
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("site.rs"), "use crate::web::Page;\n").unwrap();
    std::fs::write(
        dir.path().join("web.rs"),
        "use super::{site::Site, limits};\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("limits.rs"), "use crate::site::Site;\n").unwrap();
    std::fs::write(dir.path().join("api.rs"), "use crate::{site, web};\n").unwrap();
    let mut problems = Vec::new();
    check_crate("skillcat-a", a, dir.path(), &mut problems);
    // web → limits is its own layer; limits → site is not in the knot.
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("web.rs") && problems[0].contains("imports `limits`"),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("limits.rs") && problems[1].contains("imports `site`"),
        "{problems:?}"
    );
}
