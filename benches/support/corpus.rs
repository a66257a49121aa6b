//! A deterministic corpus of valid Agent Skills for benchmarks.
//!
//! This is a port of the *shape* of the peers' benchmark generator `gen_corpus.py` (same vocabulary, name rules,
//! description styles, frontmatter fields, body sizes and share of skills with `references/` or
//! `scripts/`), not of its exact bytes: the random numbers come from a small splitmix64 generator
//! seeded by the caller, so one seed always gives the same corpus on every platform.
//!
//! Every skill is valid for the reference validator (`skills-ref` 0.1.1) and for skillcat:
//! `name` equals the directory name (lowercase ASCII words and digits joined by single hyphens,
//! ending in the skill's index), the description says what and when in at most 1000 characters
//! (plain, double-quoted or folded `>-`), and the only other keys are an optional `license` and
//! an optional block-style `metadata` map of text.
//!
//! Include it from a bench with `#[path = "support/corpus.rs"] mod corpus;`. Standard library only.

use std::fs;
use std::io;
use std::path::Path;

/// Words that names, descriptions and code lines are built from.
const WORDS: &[&str] = &[
    "pdf",
    "form",
    "filler",
    "data",
    "pipeline",
    "git",
    "workflow",
    "code",
    "review",
    "incident",
    "response",
    "api",
    "style",
    "guide",
    "docker",
    "deploy",
    "kubernetes",
    "rollout",
    "terraform",
    "plan",
    "sql",
    "query",
    "tuner",
    "csv",
    "cleaner",
    "image",
    "resize",
    "audio",
    "transcribe",
    "release",
    "notes",
    "changelog",
    "security",
    "audit",
    "dependency",
    "update",
    "test",
    "triage",
    "log",
    "search",
    "metrics",
    "dashboard",
    "cost",
    "report",
    "invoice",
    "parser",
    "email",
    "draft",
    "meeting",
    "summary",
    "slide",
    "deck",
    "budget",
    "forecast",
    "schema",
    "migrate",
    "cache",
    "warmup",
    "latency",
    "probe",
    "backup",
    "restore",
];

/// Verbs that open a description sentence or a list item.
const VERBS: &[&str] = &[
    "Extract",
    "Generate",
    "Review",
    "Validate",
    "Summarize",
    "Deploy",
    "Convert",
    "Audit",
    "Refactor",
    "Monitor",
    "Plan",
    "Draft",
    "Triage",
];

/// Things the verbs act on.
const OBJECTS: &[&str] = &[
    "PDF forms",
    "pull requests",
    "incident timelines",
    "CSV exports",
    "Terraform plans",
    "SQL queries",
    "release notes",
    "container images",
    "API specs",
    "log files",
    "budget sheets",
    "meeting notes",
];

/// Openings of the "when to use" sentence.
const WHEN: &[&str] = &[
    "Use when the user mentions",
    "Use this when working with",
    "Apply whenever a task involves",
    "Helpful for requests about",
];

/// Values of the optional `license` field.
const LICENSES: &[&str] = &[
    "MIT",
    "Apache-2.0",
    "BSD-3-Clause",
    "Proprietary. See LICENSE.txt",
];

/// Sentences (without the final period) that body paragraphs are built from.
const LOREM: &[&str] = &[
    "Read the input carefully and keep the output deterministic",
    "Prefer small, reviewable steps and explain every assumption you make along the way",
    "When a command fails, capture stderr, report the exit code and stop",
    "Never modify files outside the working directory without asking first",
    "Cite the reference document you relied on for each non-obvious decision",
];

/// Longest description written, in characters (the spec allows 1024).
const MAX_DESCRIPTION: usize = 1000;

/// Writes `n` valid skills into `dir`, deterministically from `seed`.
///
/// `dir` is created if it does not exist. Each skill is a folder `dir/<name>` holding `SKILL.md`
/// (1–5 KB), and for about 30% of the skills `references/REFERENCE.md` and/or an executable
/// `scripts/run.sh`, both linked from the body. Names end in the skill's zero-padded index, so
/// they are unique. Existing files with the same paths are overwritten; nothing is deleted, so
/// use a fresh directory to get exactly `n` skills.
pub fn generate(dir: &Path, n: usize, seed: u64) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut rng = Rng(seed);
    for index in 0..n {
        let name = make_name(&mut rng, index);
        let root = dir.join(&name);
        fs::create_dir_all(&root)?;

        let mut frontmatter = format!("name: {name}\n");
        let description = make_description(&mut rng);
        frontmatter.push_str(&render_description(&mut rng, &description));
        if rng.chance(0.5) {
            frontmatter.push_str(&format!("license: {}\n", rng.choice(LICENSES)));
        }
        if rng.chance(0.4) {
            frontmatter.push_str(&format!(
                "metadata:\n  author: example-org\n  version: \"{}.{}\"\n",
                rng.range(0, 3),
                rng.range(0, 9)
            ));
        }

        let with_references = rng.chance(0.3);
        let with_script = rng.chance(0.15);
        let target = rng.range(900, 4300);
        let mut body = make_body(&mut rng, &name, target);
        if with_references || with_script {
            body.push_str("\n## Resources\n\n");
            if with_references {
                body.push_str("- Details: [the reference](references/REFERENCE.md)\n");
            }
            if with_script {
                body.push_str("- Run [the script](scripts/run.sh) from the skill directory.\n");
            }
        }

        fs::write(
            root.join("SKILL.md"),
            format!("---\n{frontmatter}---\n\n{body}"),
        )?;
        if with_references {
            fs::create_dir_all(root.join("references"))?;
            fs::write(
                root.join("references/REFERENCE.md"),
                "# Reference\n\nDetails.\n",
            )?;
        }
        if with_script {
            fs::create_dir_all(root.join("scripts"))?;
            let script = root.join("scripts/run.sh");
            fs::write(&script, "#!/bin/sh\n# Print a fixed word.\necho run\n")?;
            make_executable(&script)?;
        }
    }
    Ok(())
}

/// One to four distinct words and the zero-padded index, joined by hyphens (at most 64 chars).
fn make_name(rng: &mut Rng, index: usize) -> String {
    let count = rng.range(1, 4);
    let mut name = rng.sample(WORDS, count).join("-");
    name.push_str(&format!("-{index:04}"));
    name.truncate(64);
    name.trim_matches('-').to_string()
}

/// What the skill does and when to use it; sometimes padded towards the length limit.
fn make_description(rng: &mut Rng) -> String {
    let count = rng.range(2, 8);
    let mut text = format!(
        "{} {} and {} {}. {} {} or {}.",
        rng.choice(VERBS),
        rng.choice(OBJECTS),
        rng.choice(VERBS).to_lowercase(),
        rng.choice(OBJECTS),
        rng.choice(WHEN),
        rng.choice(OBJECTS),
        rng.sample(WORDS, count).join(" "),
    );
    while text.len() < 800 && rng.chance(0.35) {
        text.push_str(&format!(" Also covers {}.", rng.sample(WORDS, 6).join(" ")));
    }
    match text.char_indices().nth(MAX_DESCRIPTION) {
        Some((cut, _)) => text[..cut].trim_end().to_string(),
        None => text,
    }
}

/// The `description:` line(s): plain (60%), double-quoted (25%) or folded `>-` (15%).
fn render_description(rng: &mut Rng, text: &str) -> String {
    let style = rng.unit();
    if style < 0.6 {
        format!("description: {text}\n")
    } else if style < 0.85 {
        format!(
            "description: \"{}\"\n",
            text.replace('\\', "\\\\").replace('"', "'")
        )
    } else {
        format!("description: >-\n  {text}\n")
    }
}

/// A Markdown body of at least `target` characters: paragraphs, lists, code, headings, rules.
fn make_body(rng: &mut Rng, name: &str, target: usize) -> String {
    let title: Vec<String> = name.split('-').map(capitalize).collect();
    let mut blocks = vec![
        format!("# {}\n", title.join(" ")),
        "## Overview\n".to_string(),
    ];
    let mut length: usize = blocks.iter().map(String::len).sum();
    let mut step = 0;
    while length < target {
        step += 1;
        let kind = rng.unit();
        let block = if kind < 0.45 {
            format!("{}.\n", rng.sample(LOREM, 4).join(". "))
        } else if kind < 0.65 {
            let items = rng.range(2, 6);
            let lines: Vec<String> = (0..items)
                .map(|_| format!("- {} {}", rng.choice(VERBS), rng.choice(OBJECTS)))
                .collect();
            format!("{}\n", lines.join("\n"))
        } else if kind < 0.80 {
            let commands = rng.range(1, 4);
            let lines: Vec<String> = (0..commands)
                .map(|_| {
                    format!(
                        "./scripts/run.sh --{} {}",
                        rng.choice(WORDS),
                        rng.choice(WORDS)
                    )
                })
                .collect();
            format!("```bash\n{}\n```\n", lines.join("\n"))
        } else if kind < 0.90 {
            format!("## Step {step}\n")
        } else {
            // A Markdown horizontal rule: a `---` line in the body must not confuse a reader.
            "---\n".to_string()
        };
        length += block.len();
        blocks.push(block);
    }
    blocks.join("\n")
}

/// `word` with its first character in upper case (Python's `str.title` on one ASCII word).
fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Sets mode 0755 where the platform has mode bits; elsewhere a no-op.
fn make_executable(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// splitmix64: a tiny, fast, well-mixed generator; plenty for test data, not for secrets.
struct Rng(u64);

impl Rng {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by the multiply-shift method.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A number in `low..=high`, like Python's `randint`.
    fn range(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    /// A float in `[0, 1)` with 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// One element of a non-empty slice.
    fn choice<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// `k` distinct elements in random order (partial Fisher–Yates), like Python's `sample`.
    fn sample<'a>(&mut self, items: &[&'a str], k: usize) -> Vec<&'a str> {
        let mut pool = items.to_vec();
        let k = k.min(pool.len());
        for i in 0..k {
            let j = i + self.below(pool.len() - i);
            pool.swap(i, j);
        }
        pool.truncate(k);
        pool
    }
}
