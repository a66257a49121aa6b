//! The prompt budget on a large catalog: 1,500 generated skills in 8,000 characters. Every
//! description shown says something (whole, or at least 100 characters cut at a word), the
//! skills left out are the last by precedence then name, and the report is a summary with the
//! full list behind `--verbose`.
//!
//! Origin: step 9 (issue 14: the first hour of a real user; the prompt's budget policy).

use std::collections::HashMap;
use std::path::Path;

use crate::support::bin::{Out, Skillcat};

const SKILLS: usize = 1500;
const BUDGET: &str = "8000";

fn run(dir: &Path, args: &[&str]) -> Out {
    Skillcat::new(args).cwd(dir).env("HOME", dir).run()
}

/// A small deterministic generator (xorshift), so the catalog is the same on every run.
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "parse",
    "validate",
    "render",
    "export",
    "convert",
    "summarise",
    "index",
    "search",
    "filter",
    "merge",
    "split",
    "review",
    "deploy",
    "release",
    "tables",
    "forms",
    "reports",
    "logs",
    "metrics",
    "alerts",
    "invoices",
    "contracts",
    "tickets",
    "commits",
    "diffs",
];

/// `n` skills `gen-0001`… under `root`, each with a description of 20 to 80 words; returns
/// the descriptions by name.
fn generate(root: &Path, prefix: &str, n: usize, seed: u64) -> HashMap<String, String> {
    let mut g = Gen(seed);
    let mut out = HashMap::new();
    for i in 1..=n {
        let name = format!("{prefix}-{i:04}");
        let words: Vec<&str> = (0..20 + g.below(60))
            .map(|_| WORDS[g.below(WORDS.len())])
            .collect();
        let description = format!("Helps {}. Use when asked.", words.join(" "));
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nBody.\n"),
        )
        .unwrap();
        out.insert(name, description);
    }
    out
}

/// (name, description) of each skill of an XML block, in order.
fn shown(block: &str) -> Vec<(String, String)> {
    block
        .split("<skill>\n<name>\n")
        .skip(1)
        .map(|rest| {
            let (name, rest) = rest.split_once("\n</name>\n<description>\n").unwrap();
            let (description, _) = rest.split_once("\n</description>").unwrap();
            (name.to_string(), description.to_string())
        })
        .collect()
}

#[test]
fn fifteen_hundred_skills_in_eight_thousand_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let all = generate(&t.join("skills"), "gen", SKILLS, 0x5EED);
    let o = run(t, &["prompt", "skills", "--budget", BUDGET]);
    o.code(0);
    let block = o.out();
    assert!(block.chars().count() <= 8001, "{}", block.chars().count());
    let skills = shown(block);
    assert!(skills.len() >= 20, "only {} skills shown", skills.len());

    // The first skills by name are shown, in order; the rest are left out.
    let mut names: Vec<&String> = all.keys().collect();
    names.sort();
    for (i, (name, description)) in skills.iter().enumerate() {
        assert_eq!(name, names[i]);
        let original = &all[name];
        match description.strip_suffix('…') {
            None => assert_eq!(description, original),
            Some(cut) => {
                assert!(cut.chars().count() >= 100, "{name}: {description:?}");
                assert!(original.starts_with(cut), "{name}");
                // Cut at a word: the original goes on with a space.
                assert!(original[cut.len()..].starts_with(' '), "{name}: {cut:?}");
            }
        }
    }

    // The report: a summary of a few lines, naming the first and last skill left out.
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(lines.len() <= 3, "{}", o.stderr);
    let omitted = SKILLS - skills.len();
    assert!(
        lines[0].contains(&format!("{omitted} of {SKILLS} skills omitted"))
            && lines[0].contains(&format!("`{}` … `gen-1500`", names[skills.len()])),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("--verbose"), "{}", o.stderr);

    // --verbose: one line per omitted skill and per shortened description.
    let v = run(t, &["prompt", "skills", "--budget", BUDGET, "--verbose"]);
    v.code(0);
    assert_eq!(v.stdout, o.stdout);
    let omitted_lines: Vec<&str> = v
        .stderr
        .lines()
        .filter(|l| {
            l.ends_with("omitted: it does not fit the 8000-character budget of the prompt block")
        })
        .collect();
    assert_eq!(omitted_lines.len(), omitted);
    assert!(omitted_lines[0].contains(&format!("`{}`", names[skills.len()])));
    let cut = skills.iter().filter(|(_, d)| d.ends_with('…')).count();
    assert_eq!(v.stderr.lines().count(), omitted + cut, "{}", v.stderr);

    // Markdown and JSON follow the same policy within the same budget.
    for format in ["markdown", "json"] {
        let o = run(
            t,
            &["prompt", "skills", "--budget", BUDGET, "--format", format],
        );
        o.code(0);
        assert!(o.out().chars().count() <= 8001, "{format}");
        assert!(o.stderr.lines().count() <= 3, "{format}: {}", o.stderr);
    }
}

#[test]
fn a_configured_catalog_drops_the_lower_precedence_source_first() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // The first source's names sort after the second's: precedence wins over name.
    generate(&t.join("first"), "zed", 30, 1);
    generate(&t.join("second"), "abc", 30, 2);
    std::fs::write(
        t.join("skillcat.toml"),
        "[[sources]]\npath = \"first\"\n[[sources]]\npath = \"second\"\n[prompt]\nbudget = 3000\n",
    )
    .unwrap();
    let o = Skillcat::new(&["prompt", "--config", "skillcat.toml"])
        .cwd(t)
        .env("HOME", t)
        .run();
    o.code(0);
    let skills = shown(o.out());
    assert!(!skills.is_empty());
    assert!(
        skills.iter().all(|(n, _)| n.starts_with("zed-")),
        "{skills:?}"
    );
    assert_eq!(skills[0].0, "zed-0001");
    assert!(o.stderr.contains("`abc-0030`"), "{}", o.stderr);
}
