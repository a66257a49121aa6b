//! Matching: `skillcat match` through the real binary (ranking, JSON, the labelled-set floor),
//! the tokeniser through the public API, and the embedding providers and their cache against a
//! fake provider on 127.0.0.1:0 that counts every request.
//!
//! Origin: step 5 (issue 6: catalog, configuration, capabilities and matching).

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value as J, json};
use skillcat::matching::tokenize::{grams, terms};
use skillcat::matching::{
    Bm25Index, Cached, EmbedError, Embedder, EmbeddingMatcher, Matcher, Ollama, OpenAiCompatible,
    SkillDoc,
};

const BIN: &str = env!("CARGO_BIN_EXE_skillcat");
const DEADLINE: Duration = Duration::from_secs(120);
const METATOOL: &str = "fixtures/matching/metatool-skills.json";

/// The BM25 floor on the MetaTool set: measured 0.552 / 0.705 (see docs/matching.md); the
/// issue's target is 0.55.
const BM25_TOP1_FLOOR: f64 = 0.55;
const BM25_TOP5_FLOOR: f64 = 0.70;

// ---------------------------------------------------------------------------------------------
// The binary

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the binary in the crate directory with a deadline; fails on a panic message.
#[track_caller]
fn run(args: &[&str]) -> Out {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_BACKTRACE", "0")
        .env_remove("SKILLCAT_EMBED_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn skillcat");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("skillcat {args:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = Out {
        code: status.code().expect("not killed by a signal"),
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    };
    assert!(
        !out.stderr.contains("panicked"),
        "{args:?} panicked: {out:?}"
    );
    out
}

#[test]
fn a_csv_message_finds_csv_cleaner() {
    let out = run(&[
        "match",
        "fixtures/skills",
        "This CSV export has duplicate rows and odd dates, can you tidy it up?",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let first = out.stdout.lines().next().expect("a line per match");
    assert!(first.contains("csv-cleaner"), "{out:?}");
    assert!(out.stdout.lines().count() <= 5);
}

#[test]
fn each_fixture_skill_has_an_obvious_message() {
    for (message, want) in [
        (
            "which fields does this PDF form have? fill it from my table",
            "pdf-forms",
        ),
        (
            "write the changelog for the release since the last git tag",
            "git-release-notes",
        ),
        (
            "here is the meeting transcript, what did we decide?",
            "meeting-summary",
        ),
        (
            "why did the server fail last night? look at the error logs",
            "log-search",
        ),
        (
            "review my OpenAPI spec for naming and status codes",
            "api-style-review",
        ),
        (
            "build a postmortem timeline from these alert emails",
            "incident-timeline",
        ),
    ] {
        let out = run(&["match", "fixtures/skills", message, "--top", "1"]);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.stdout.lines().count(), 1, "{out:?}");
        assert!(out.stdout.contains(want), "{message:?} → {}", out.stdout);
    }
}

#[test]
fn json_output_parses_and_is_ranked() {
    let out = run(&[
        "match",
        "fixtures/skills",
        "clean up my csv export",
        "--format",
        "json",
        "--top",
        "3",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: J = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(doc["mode"], "bm25");
    assert_eq!(doc["message"], "clean up my csv export");
    let matches = doc["matches"].as_array().unwrap();
    assert!(!matches.is_empty() && matches.len() <= 3);
    assert_eq!(matches[0]["name"], "csv-cleaner");
    assert_eq!(matches[0]["rank"], 1);
    assert!(
        matches[0]["location"]
            .as_str()
            .unwrap()
            .ends_with("SKILL.md")
    );
    assert!(!matches[0]["description"].as_str().unwrap().is_empty());
    let scores: Vec<f64> = matches
        .iter()
        .map(|m| m["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
}

#[test]
fn nothing_in_common_is_an_empty_answer() {
    let out = run(&["match", "fixtures/skills", "zxqv wqpt", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: J = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["matches"], json!([]));
    let out = run(&["match", "fixtures/skills", "zxqv wqpt"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out:?}");
}

#[test]
fn eval_prints_top1_and_top5_last_with_a_floor() {
    let out = run(&["match", "--eval", METATOOL]);
    assert_eq!(out.code, 0, "{out:?}");
    let (top1, top5) = parse_eval(&out.stdout);
    assert!(
        top1 >= BM25_TOP1_FLOOR,
        "top1 {top1} below the floor: {out:?}"
    );
    assert!(top5 >= BM25_TOP5_FLOOR, "top5 {top5}: {out:?}");
    assert!(top5 >= top1);
    // SOURCE is ignored with --eval.
    let again = run(&["match", "fixtures/skills", "--eval", METATOOL]);
    assert_eq!(parse_eval(&again.stdout), (top1, top5));
}

#[test]
fn eval_split_scores_the_tuning_or_the_held_out_half() {
    let whole = run(&["match", "--eval", METATOOL]);
    let tune = run(&["match", "--eval", METATOOL, "--eval-split", "tune"]);
    let held = run(&["match", "--eval", METATOOL, "--eval-split", "held-out"]);
    for out in [&whole, &tune, &held] {
        assert_eq!(out.code, 0, "{out:?}");
    }
    assert!(
        whole.stdout.contains("split=all skills=199 queries=1990"),
        "{whole:?}"
    );
    assert!(
        tune.stdout.contains("split=tune skills=199 queries=995"),
        "{tune:?}"
    );
    assert!(
        held.stdout
            .contains("split=held-out skills=199 queries=995"),
        "{held:?}"
    );
    // The halves partition the queries: the whole's top-1 is their mean (to the rounding of
    // three printed digits).
    let (all1, _) = parse_eval(&whole.stdout);
    let (t1, _) = parse_eval(&tune.stdout);
    let (h1, _) = parse_eval(&held.stdout);
    assert!(((t1 + h1) / 2.0 - all1).abs() <= 0.001, "{t1} {h1} {all1}");
    assert!(t1 >= BM25_TOP1_FLOOR && h1 >= 0.53, "{t1} {h1}");
    // JSON names the split too.
    let json = run(&[
        "match",
        "--eval",
        METATOOL,
        "--eval-split",
        "held-out",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(json.stdout.trim()).unwrap();
    assert_eq!(
        (v["split"].as_str(), v["queries"].as_u64()),
        (Some("held-out"), Some(995))
    );
    // A split without --eval, or a split that does not exist, is a usage error.
    let alone = run(&["match", "fixtures/skills", "csv", "--eval-split", "tune"]);
    assert_eq!(alone.code, 2, "{alone:?}");
    assert!(alone.stderr.contains("--eval"), "{alone:?}");
    let bad = run(&["match", "--eval", METATOOL, "--eval-split", "odd"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("held-out"), "{bad:?}");
}

#[test]
fn eval_reads_tools_and_ranks_by_them() {
    // Two skills alike but for their tools' parameters: the query names a parameter.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("set.json");
    std::fs::write(
        &file,
        r#"{"skills": [
            {"name": "a", "description": "Look things up.",
             "tools": [{"name": "lookup_a", "parameters": {"isbn": "The book's ISBN"}}]},
            {"name": "b", "description": "Look things up.",
             "tools": [{"name": "lookup_b", "parameters": {"ticker": "A stock ticker symbol"}}]}],
          "queries": [{"text": "what is the price of ticker MSFT", "relevant": ["b"]},
                      {"text": "find the title for ISBN 0-306-40615-2", "relevant": ["a"]}]}"#,
    )
    .unwrap();
    let out = run(&["match", "--eval", &file.display().to_string()]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(parse_eval(&out.stdout), (1.0, 1.0), "{out:?}");
    // A tool that is not a map is refused with the file's name.
    std::fs::write(
        &file,
        r#"{"skills": [{"name": "a", "description": "", "tools": [3]}],
        "queries": [{"text": "q", "relevant": ["a"]}]}"#,
    )
    .unwrap();
    let out = run(&["match", "--eval", &file.display().to_string()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("set.json"), "{out:?}");
}

#[test]
fn a_skill_is_found_by_its_script_tools_and_headings() {
    let root = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = root.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "geo/SKILL.md",
        "---\nname: geo\ndescription: Answers questions about places.\nscripts:\n  - name: lookup\n    \
         path: scripts/lookup.py\n    description: Look up a place.\n    params:\n      - name: postcode\n        \
         type: string\n        description: A postal code\n---\nSee the script.\n",
    );
    write(
        "geo/scripts/lookup.py",
        "#!/usr/bin/env python3\nprint('x')\n",
    );
    write(
        "notes/SKILL.md",
        "---\nname: notes\ndescription: Answers questions about places.\n---\n# Timezones\nText.\n",
    );
    let dir = root.path().display().to_string();
    let first = |out: &Out| out.stdout.split_whitespace().nth(1).map(str::to_string);
    let out = run(&["match", &dir, "which town has postcode 75001", "--top", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(first(&out).as_deref(), Some("geo"), "{out:?}");
    let out = run(&["match", &dir, "timezones of places", "--top", "1"]);
    assert_eq!(first(&out).as_deref(), Some("notes"), "{out:?}");
}

#[cfg(feature = "neural")]
#[test]
fn a_model_directory_that_is_not_a_model_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().display().to_string();
    let out = run(&[
        "match",
        "fixtures/skills",
        "csv",
        "--mode",
        "neural",
        "--model-dir",
        &dir,
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(&dir) && out.stderr.contains("config.json"),
        "{out:?}"
    );
}

/// The neural floor (run by hand: the model takes about 25 s in a release build, far longer in a
/// debug one): `cargo test --release --features neural --test matching -- --ignored neural`.
#[cfg(feature = "neural")]
#[test]
#[ignore = "slow: embeds 2,189 texts with the bundled model"]
fn neural_eval_meets_its_floor() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().display().to_string();
    let out = run(&[
        "match", "--eval", METATOOL, "--mode", "neural", "--cache", &dir,
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let (top1, top5) = parse_eval(&out.stdout);
    assert!(top1 >= 0.60 && top5 >= 0.77, "{out:?}");
}

/// `top1=… top5=…` from the last line.
#[track_caller]
fn parse_eval(stdout: &str) -> (f64, f64) {
    let last = stdout.lines().last().expect("a last line");
    let fields: Vec<(&str, f64)> = last
        .split(' ')
        .map(|f| {
            let (k, v) = f.split_once('=').expect("key=value");
            (k, v.parse().expect("a number"))
        })
        .collect();
    assert_eq!(fields.len(), 2, "{last:?}");
    assert_eq!((fields[0].0, fields[1].0), ("top1", "top5"), "{last:?}");
    (fields[0].1, fields[1].1)
}

#[test]
fn usage_errors() {
    for args in [
        &["match", "fixtures/skills"][..],
        &["match"],
        &["match", "fixtures/skills", "   "],
        &["match", "fixtures/skills", "csv", "--weight", "2"],
        &["match", "fixtures/skills", "csv", "--mode", "embed"],
        &[
            "match",
            "fixtures/skills",
            "csv",
            "--mode",
            "embed",
            "--embed-model",
            "m",
        ],
        &["match", "no/such/dir", "csv"],
        &["match", "--eval", "no/such/file.json"],
        &["match", "--eval", "Cargo.toml"],
        // Two messages with --source; a source and nothing else.
        &["match", "--source", "fixtures/skills", "csv", "pdf"],
        &["match", "--source", "fixtures/skills"],
        &["match", "fixtures/skills", "csv", "--top", "x"],
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn source_as_an_option_is_the_same_as_first_argument() {
    let message = "why did the server fail? look at the error logs";
    let positional = run(&["match", "fixtures/skills", message, "--format", "json"]);
    let option = run(&[
        "match",
        "--source",
        "fixtures/skills",
        message,
        "--format",
        "json",
    ]);
    assert_eq!(positional.code, 0, "{positional:?}");
    assert_eq!(positional.stdout, option.stdout);
    let doc: J = serde_json::from_str(&option.stdout).unwrap();
    assert_eq!(doc["matches"][0]["name"], "log-search");
}

/// Writes a skill `name` under `root` with `description`.
fn write_skill(root: &Path, name: &str, description: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: \"{description}\"\n---\n\n# {name}\n"),
    )
    .unwrap();
}

/// A directory holding `skillcat.toml` (`sources` then `rest`) and a source `extra/`: a second
/// `csv-cleaner` (shadowed by the fixtures' one) and two skills described in Chinese and Japanese.
fn configured(rest: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let extra = dir.path().join("extra");
    write_skill(&extra, "csv-cleaner", "A shadowed copy: never listed.");
    write_skill(
        &extra,
        "data-dedupe",
        "清洗数据文件，删除重复的行和空白的列。",
    );
    write_skill(
        &extra,
        "gijiroku",
        "会議の議事録から決定事項と宿題を要約します。",
    );
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/skills");
    let file = dir.path().join("skillcat.toml");
    std::fs::write(
        &file,
        format!(
            "[[sources]]\nname = \"fixtures\"\npath = {:?}\n\n[[sources]]\nname = \"extra\"\n\
             path = \"extra\"\n\n{rest}",
            fixtures.display().to_string()
        ),
    )
    .unwrap();
    let file = file.display().to_string();
    (dir, file)
}

#[test]
fn a_message_alone_ranks_the_configured_catalog() {
    let (dir, config) = configured("[matcher]\ntop = 2\n");
    let message = "tidy up this csv export with duplicate rows";
    let out = run(&["match", "--config", &config, message, "--format", "json"]);
    // Shadowing is reported, not a fault.
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("warning:") && out.stderr.contains("shadowed"),
        "{out:?}"
    );
    let doc: J = serde_json::from_str(&out.stdout).unwrap();
    let matches = doc["matches"].as_array().unwrap();
    // [matcher] top = 2.
    assert_eq!(matches.len(), 2, "{doc}");
    assert_eq!(matches[0]["name"], "csv-cleaner");
    // The higher-precedence copy: the fixtures', not the shadowed one.
    let location = matches[0]["location"].as_str().unwrap();
    assert!(location.contains("fixtures"), "{location}");
    assert!(!location.contains(&dir.path().display().to_string()));

    // Flags override the file.
    let out = run(&["match", "--config", &config, message, "--top", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.lines().count(), 1, "{out:?}");

    // A bundle the catalog refuses is printed on stderr; the rest still rank, and matches
    // printed are a success (exit 0) whatever else is broken.
    std::fs::create_dir_all(dir.path().join("extra/broken")).unwrap();
    std::fs::write(dir.path().join("extra/broken/SKILL.md"), "no frontmatter\n").unwrap();
    let out = run(&["match", "--config", &config, message]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("broken"), "{out:?}");
    assert!(out.stdout.contains("csv-cleaner"), "{out:?}");
    // Nothing matched and a fault found: exit 1.
    let out = run(&["match", "--config", &config, "zxqv wqpt"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(out.stderr.contains("broken"), "{out:?}");
}

#[test]
fn the_matcher_section_is_read_and_checked() {
    // mode = "neural" in the file: without the feature, the error says so; --mode bm25 wins.
    let (_dir, config) = configured("[matcher]\nmode = \"neural\"\n");
    let out = run(&["match", "--config", &config, "csv export"]);
    if cfg!(feature = "neural") {
        assert_eq!(out.code, 0, "{out:?}");
    } else {
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains("--features neural"), "{out:?}");
    }
    let out = run(&["match", "--config", &config, "csv export", "--mode", "bm25"]);
    assert_eq!(out.code, 0, "{out:?}");
    // A wrong value is an error naming the key and its line.
    let (_dir, config) = configured("[matcher]\ntop = 3\nweight = 7\n");
    let out = run(&["match", "--config", &config, "csv export"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains(":11:10: matcher.weight:"), "{out:?}");
    // --eval reads it too (its own skills, the file's ranker): every field weighed zero
    // ranks nothing.
    let (_dir, config) = configured(
        "[matcher.bm25]\nname_weight = 0\ndescription_weight = 0\ngram_weight = 0\nconcept_weight = 0\n",
    );
    let out = run(&["match", "--config", &config, "--eval", METATOOL]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(parse_eval(&out.stdout), (0.0, 0.0), "{out:?}");
}

#[test]
fn chinese_and_japanese_messages_find_their_skills() {
    let (_dir, config) = configured("");
    for (message, want) in [
        ("帮我删除这个文件里重复的行", "data-dedupe"),
        ("数据清洗", "data-dedupe"),
        ("昨日の会議の議事録を要約して", "gijiroku"),
    ] {
        let out = run(&["match", "--config", &config, message, "--top", "1"]);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(out.stdout.contains(want), "{message} → {out:?}");
    }
}

#[cfg(not(feature = "neural"))]
#[test]
fn neural_without_the_feature_says_how_to_get_it() {
    let out = run(&["match", "fixtures/skills", "csv", "--mode", "neural"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--features neural"), "{out:?}");
}

#[test]
fn embed_mode_second_run_calls_the_provider_zero_times() {
    let fake = Fake::start();
    let cache = tempfile::tempdir().unwrap();
    let url = fake.url();
    let args = |provider: &'static str| -> Vec<String> {
        [
            "match",
            "fixtures/skills",
            "tidy up this csv export with duplicate rows",
            "--mode",
            "embed",
            "--embed-provider",
            provider,
            "--embed-url",
            &url,
            "--embed-model",
            "fake-model",
            "--format",
            "json",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(["--cache".to_string(), cache.path().display().to_string()])
        .collect()
    };
    for provider in ["openai", "ollama"] {
        let before = fake.requests();
        let a = args(provider);
        let argv: Vec<&str> = a.iter().map(String::as_str).collect();
        let first = run(&argv);
        assert_eq!(first.code, 0, "{first:?}");
        // The skills in one request, then the message.
        assert_eq!(fake.requests() - before, 2, "{provider}");
        let doc: J = serde_json::from_str(&first.stdout).unwrap();
        assert_eq!(doc["mode"], "embed");
        assert_eq!(doc["matches"][0]["name"], "csv-cleaner", "{provider}");

        let second = run(&argv);
        assert_eq!(second.code, 0, "{second:?}");
        assert_eq!(
            fake.requests() - before,
            2,
            "{provider}: the second run used the cache"
        );
        assert_eq!(first.stdout, second.stdout);
        assert!(
            second.stderr.contains("0 computed in 0 requests"),
            "{second:?}"
        );
    }
}

#[test]
fn eval_in_embed_mode_batches_and_caches() {
    let fake = Fake::start();
    let cache = tempfile::tempdir().unwrap();
    let url = fake.url();
    let cache_dir = cache.path().display().to_string();
    let argv = [
        "match",
        "--eval",
        METATOOL,
        "--mode",
        "embed",
        "--embed-url",
        &url,
        "--embed-model",
        "fake-model",
        "--cache",
        &cache_dir,
    ];
    let first = run(&argv);
    assert_eq!(first.code, 0, "{first:?}");
    // 199 skills in one request, 1,990 queries in ⌈1990 / 256⌉ = 8.
    assert_eq!(fake.requests(), 9);
    assert!(fake.max_batch() <= 256);
    let second = run(&argv);
    assert_eq!(fake.requests(), 9);
    assert_eq!(parse_eval(&first.stdout), parse_eval(&second.stdout));
}

// ---------------------------------------------------------------------------------------------
// The tokeniser

#[test]
fn tokeniser_splits_names_and_keeps_them_whole() {
    assert_eq!(terms("csv-cleaner"), ["csv-cleaner", "csv", "cleaner"]);
    assert_eq!(
        terms("deploy_checker"),
        ["deploy-checker", "deploi", "checker"]
    );
    assert_eq!(terms("Deploy-Checker"), terms("deploy_checker"));
}

#[test]
fn tokeniser_folds_case_width_and_forms() {
    assert_eq!(terms("Cleaning CSV Exports"), ["clean", "csv", "export"]);
    assert_eq!(terms("ＣＳＶ"), ["csv"]);
    assert_eq!(terms("ÉTÉ Straße"), ["été", "straße"]);
    assert_eq!(terms("connected connecting connection"), ["connect"; 3]);
}

#[test]
fn tokeniser_drops_stop_words_and_punctuation() {
    assert_eq!(
        terms("Can you please help me with this?!"),
        Vec::<String>::new()
    );
    assert_eq!(terms("it's the user's file."), ["user", "file"]);
    assert_eq!(terms("(pdf), [forms]; {fields}"), ["pdf", "form", "field"]);
}

#[test]
fn tokeniser_grams_cover_solid_names() {
    let name = grams("keywordexplorer");
    let word = grams("keyword");
    assert!(word.iter().filter(|g| name.contains(g)).count() >= 5);
    assert!(grams("the of and").is_empty());
}

#[test]
fn tokeniser_splits_camel_case_and_digits_but_keeps_the_word() {
    assert_eq!(terms("SEOTool"), ["seotool", "seo", "tool"]);
    assert_eq!(terms("AI2sql"), ["ai2sql", "ai", "2", "sql"]);
    // A message writing the name solid, or in words, meets it.
    let name = terms("GitHub");
    assert!(terms("github").iter().all(|t| name.contains(t)));
    assert!(terms("git hub").iter().all(|t| name.contains(t)));
    assert_eq!(terms("PDFs"), ["pdf"]);
}

#[test]
fn tokeniser_cuts_cjk_into_pairs() {
    assert_eq!(terms("数据清洗"), ["数据", "据清", "清洗"]);
    assert_eq!(terms("議事録"), ["議事", "事録"]);
    // Latin inside CJK text is a word of its own.
    assert_eq!(terms("导出CSV文件"), ["导出", "csv", "文件"]);
    let docs = [
        SkillDoc::new("data-dedupe", "清洗数据文件，删除重复的行。", ""),
        SkillDoc::new("meeting-notes", "会議の議事録を要約します。", ""),
        SkillDoc::new("log-search", "在服务器日志中搜索错误。", ""),
    ];
    let index = Bm25Index::build(&docs);
    for (message, want) in [
        ("请删除重复的行", 0),
        ("議事録の要約", 1),
        ("服务器有什么错误", 2),
    ] {
        assert_eq!(index.search(message, 1)[0].index, want, "{message}");
    }
    assert!(index.search("天气", 3).is_empty());
}

#[test]
fn index_ranks_fixture_like_skills() {
    let docs = [
        SkillDoc::new(
            "csv-cleaner",
            "Profile and clean CSV exports.",
            "Write a cleaned copy.",
        ),
        SkillDoc::new("pdf-forms", "Fill PDF forms.", "Never guess a field."),
    ];
    let index = Bm25Index::build(&docs);
    assert_eq!(index.search("clean this CSV", 2)[0].index, 0);
    assert_eq!(index.search("fill the pdf form fields", 2)[0].index, 1);
}

// ---------------------------------------------------------------------------------------------
// The embedders, against a fake provider

#[tokio::test]
async fn openai_puts_items_back_in_order_and_sends_the_key() {
    let fake = Fake::start();
    let p = OpenAiCompatible::new(&fake.url(), "fake-model")
        .unwrap()
        .with_api_key("sk-test");
    let texts = ["alpha beta", "gamma", "delta delta"];
    let got = p.embed(&texts).await.unwrap();
    // The fake answers in reverse order; the client sorts by index.
    assert_eq!(got, texts.map(fake_vector));
    assert_eq!(fake.requests(), 1);
    assert_eq!(fake.last_auth().as_deref(), Some("Bearer sk-test"));
    assert_eq!(fake.last_body()["model"], "fake-model");
    assert_eq!(fake.last_body()["encoding_format"], "float");
    assert!(p.space_id().starts_with("openai|"));
    assert!(!format!("{p:?}").contains("sk-test"));
    // Nothing to embed, nothing sent.
    assert!(p.embed(&[]).await.unwrap().is_empty());
    assert_eq!(fake.requests(), 1);
}

#[tokio::test]
async fn openai_sends_at_most_256_texts_per_request() {
    let fake = Fake::start();
    let p = OpenAiCompatible::new(&format!("{}/v1", fake.url()), "m").unwrap();
    let texts: Vec<String> = (0..600).map(|i| format!("text number {i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let got = p.embed(&refs).await.unwrap();
    assert_eq!(got.len(), 600);
    assert_eq!(got[599], fake_vector("text number 599"));
    assert_eq!(fake.requests(), 3);
    assert_eq!(fake.max_batch(), 256);
    assert_eq!(fake.last_auth(), None);
}

#[tokio::test]
async fn ollama_embeds() {
    let fake = Fake::start();
    let p = Ollama::new(&fake.url(), "fake-model").unwrap();
    let got = p.embed(&["one", "two two"]).await.unwrap();
    assert_eq!(got, [fake_vector("one"), fake_vector("two two")]);
    assert_eq!(fake.requests(), 1);
    assert_eq!(fake.last_path().as_deref(), Some("/api/embed"));
    assert!(p.space_id().starts_with("ollama|"));
}

#[tokio::test]
async fn a_missing_vector_is_an_error() {
    let fake = Fake::start();
    fake.set(Behaviour::DropOne);
    let openai = OpenAiCompatible::new(&fake.url(), "m").unwrap();
    let e = openai.embed(&["a", "b"]).await.unwrap_err();
    assert!(matches!(e, EmbedError::Protocol { .. }), "{e:?}");
    assert!(e.to_string().contains("sent 2 texts, received 1"), "{e}");
    let ollama = Ollama::new(&fake.url(), "m").unwrap();
    let e = ollama.embed(&["a", "b"]).await.unwrap_err();
    assert!(e.to_string().contains("sent 2 texts, received 1"), "{e}");
}

#[tokio::test]
async fn a_server_error_is_an_error_naming_the_status() {
    let fake = Fake::start();
    fake.set(Behaviour::Fail500);
    for p in [
        Box::new(OpenAiCompatible::new(&fake.url(), "m").unwrap()) as Box<dyn Embedder>,
        Box::new(Ollama::new(&fake.url(), "m").unwrap()),
    ] {
        let e = p.embed(&["a"]).await.unwrap_err();
        match &e {
            EmbedError::Status { status, body, .. } => {
                assert_eq!(*status, 500);
                assert!(body.contains("model exploded"), "{body}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_an_error() {
    let fake = Fake::start();
    fake.set(Behaviour::Garbage);
    let e = OpenAiCompatible::new(&fake.url(), "m")
        .unwrap()
        .embed(&["a"])
        .await
        .unwrap_err();
    assert!(matches!(e, EmbedError::Protocol { .. }), "{e:?}");
}

#[tokio::test]
async fn an_unreachable_provider_is_an_error_without_credentials() {
    // Bind, then close: nothing listens on the port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = OpenAiCompatible::new(&format!("http://user:hunter2@127.0.0.1:{port}"), "m").unwrap();
    let e = p.embed(&["a"]).await.unwrap_err();
    assert!(matches!(e, EmbedError::Transport { .. }), "{e:?}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(!p.space_id().contains("hunter2"));
    assert!(OpenAiCompatible::new("file:///etc/passwd", "m").is_err());
}

#[tokio::test]
async fn the_cache_sends_each_text_once_per_space() {
    let fake = Fake::start();
    let dir = tempfile::tempdir().unwrap();
    let texts = ["clean csv", "fill pdf", "search logs"];
    let openai = || Cached::new(OpenAiCompatible::new(&fake.url(), "m").unwrap(), dir.path());

    let first = openai();
    let a = first.embed(&texts).await.unwrap();
    assert_eq!(fake.requests(), 1);
    let second = openai();
    let b = second.embed(&texts).await.unwrap();
    assert_eq!(a, b);
    assert_eq!(fake.requests(), 1, "second run: zero provider calls");
    assert_eq!((second.stats().hits, second.stats().misses), (3, 0));

    // A new text goes alone.
    second.embed(&["clean csv", "a new text"]).await.unwrap();
    assert_eq!(fake.requests(), 2);
    assert_eq!(fake.last_body()["input"], json!(["a new text"]));

    // Another provider or model is another space: nothing shared.
    let ollama = Cached::new(Ollama::new(&fake.url(), "m").unwrap(), dir.path());
    ollama.embed(&texts).await.unwrap();
    assert_eq!(fake.requests(), 3);
    assert_ne!(ollama.dir(), second.dir());
    assert_ne!(ollama.key_hex("clean csv"), second.key_hex("clean csv"));
    let other_model = Cached::new(
        OpenAiCompatible::new(&fake.url(), "m2").unwrap(),
        dir.path(),
    );
    other_model.embed(&texts).await.unwrap();
    assert_eq!(fake.requests(), 4);
}

#[tokio::test]
async fn a_failed_batch_caches_nothing_and_fails() {
    let fake = Fake::start();
    let dir = tempfile::tempdir().unwrap();
    fake.set(Behaviour::Fail500);
    let cached = Cached::new(Ollama::new(&fake.url(), "m").unwrap(), dir.path());
    assert!(cached.embed(&["x"]).await.is_err());
    fake.set(Behaviour::Normal);
    cached.embed(&["x"]).await.unwrap();
    assert_eq!(fake.requests(), 2);
}

#[tokio::test]
async fn embedding_matcher_over_the_fake_provider() {
    let fake = Fake::start();
    let docs = [
        SkillDoc::new("csv-cleaner", "Profile and clean CSV exports.", ""),
        SkillDoc::new("pdf-forms", "Fill PDF forms from a table.", ""),
        SkillDoc::new("log-search", "Search server logs for errors.", ""),
    ];
    let p = OpenAiCompatible::new(&fake.url(), "m").unwrap();
    let matcher = EmbeddingMatcher::build(p, &docs, 0.5).await.unwrap();
    assert_eq!(fake.requests(), 1);
    let hits = matcher.rank("errors in the server logs", 2).await.unwrap();
    assert_eq!(hits[0].index, 2);
    let all = matcher
        .rank_all(&["fill pdf forms", "clean csv exports"], 1)
        .await
        .unwrap();
    assert_eq!((all[0][0].index, all[1][0].index), (1, 0));
    assert_eq!(fake.requests(), 3, "one request per rank_all batch");
}

// ---------------------------------------------------------------------------------------------
// The fake provider

/// What the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Behaviour {
    Normal = 0,
    DropOne = 1,
    Fail500 = 2,
    Garbage = 3,
}

#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    max_batch: AtomicUsize,
    behaviour: AtomicU8,
    last: Mutex<(Option<String>, Option<String>, J)>,
}

/// An embeddings server on 127.0.0.1:0 serving both protocols with [`fake_vector`], on its own
/// thread and runtime (so the binary, a child process, can call it too).
struct Fake {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl Fake {
    fn start() -> Fake {
        let seen = Arc::new(Seen::default());
        let state = seen.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = axum::Router::new()
                    .route("/v1/embeddings", post(openai))
                    .route("/api/embed", post(ollama))
                    .with_state(state);
                axum::serve(listener, app).await.unwrap();
            });
        });
        Fake {
            addr: rx.recv().unwrap(),
            seen,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn set(&self, b: Behaviour) {
        self.seen.behaviour.store(b as u8, Ordering::SeqCst);
    }

    fn requests(&self) -> usize {
        self.seen.requests.load(Ordering::SeqCst)
    }

    fn max_batch(&self) -> usize {
        self.seen.max_batch.load(Ordering::SeqCst)
    }

    fn last_path(&self) -> Option<String> {
        self.seen.last.lock().unwrap().0.clone()
    }

    fn last_auth(&self) -> Option<String> {
        self.seen.last.lock().unwrap().1.clone()
    }

    fn last_body(&self) -> J {
        self.seen.last.lock().unwrap().2.clone()
    }
}

/// A deterministic bag-of-words vector: each word adds 1 to one of 64 coordinates.
fn fake_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; 64];
    for word in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        v[(h % 63) as usize] += 1.0;
    }
    v[63] = 0.01;
    v
}

/// Records the request; returns the input texts, or the error response to send.
fn receive(
    seen: &Seen,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Vec<String>, Box<Response>> {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    let body: J = serde_json::from_slice(body).unwrap_or(J::Null);
    let auth = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap().to_string());
    let inputs: Vec<String> = body["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    seen.max_batch.fetch_max(inputs.len(), Ordering::SeqCst);
    *seen.last.lock().unwrap() = (Some(path.to_string()), auth, body);
    match seen.behaviour.load(Ordering::SeqCst) {
        2 => Err(Box::new(
            (StatusCode::INTERNAL_SERVER_ERROR, "model exploded").into_response(),
        )),
        3 => Err(Box::new(
            (StatusCode::OK, "<html>not json</html>").into_response(),
        )),
        _ => Ok(inputs),
    }
}

fn json_response(value: J) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn drop_one(seen: &Seen) -> bool {
    seen.behaviour.load(Ordering::SeqCst) == Behaviour::DropOne as u8
}

async fn openai(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: Bytes) -> Response {
    let inputs = match receive(&seen, "/v1/embeddings", &headers, &body) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let mut data: Vec<J> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_vector(t)}))
        .collect();
    if drop_one(&seen) {
        data.pop();
    }
    // Out of order on purpose: clients must sort by index.
    data.reverse();
    json_response(json!({"object": "list", "data": data, "model": "fake", "usage": {}}))
}

async fn ollama(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: Bytes) -> Response {
    let inputs = match receive(&seen, "/api/embed", &headers, &body) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let mut embeddings: Vec<Vec<f32>> = inputs.iter().map(|t| fake_vector(t)).collect();
    if drop_one(&seen) {
        embeddings.pop();
    }
    json_response(json!({"model": "fake", "embeddings": embeddings}))
}

#[test]
fn fixtures_are_here_not_in_shared() {
    // The labelled set travels with the crate.
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(METATOOL)
            .is_file()
    );
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/matching/SOURCE.md")
            .is_file()
    );
}

/// The BM25 parameter rows of docs/matching.md: `cargo test --release --test matching --
/// --ignored --nocapture ablation`. Each row: top-1 / top-5 on the whole set, then top-1 on the
/// even-numbered queries (where parameters were chosen) and on the odd-numbered ones (held out).
#[test]
#[ignore = "prints figures; run by hand"]
fn ablation() {
    use skillcat::matching::Bm25Params;
    use skillcat::matching::eval::LabelledSet;
    let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(METATOOL)).unwrap();
    let set = LabelledSet::from_json(&bytes).unwrap();
    let texts = set.texts();
    let d = Bm25Params::default();
    let one_field: Vec<SkillDoc<'_>> = set
        .docs()
        .into_iter()
        .map(|s| SkillDoc::new("", format!("{}: {}", s.name, s.description), ""))
        .collect();
    let docs = set.docs();
    let top1_of = |rankings: &[Vec<skillcat::matching::Hit>], parity: usize| {
        let (mut hit, mut n) = (0usize, 0usize);
        for (i, (q, r)) in set.queries.iter().zip(rankings).enumerate() {
            if i % 2 == parity {
                n += 1;
                hit += usize::from(
                    r.first()
                        .is_some_and(|h| q.relevant.contains(&set.skills[h.index].name)),
                );
            }
        }
        hit as f64 / n as f64
    };
    for (label, docs, params) in [
        (
            "one field \"title: description\", no grams",
            &one_field,
            Bm25Params {
                gram_weight: 0.0,
                ..d
            },
        ),
        (
            "e 1, k3 0 (plain BM25F)",
            &docs,
            Bm25Params {
                idf_exponent: 1.0,
                query_k3: 0.0,
                ..d
            },
        ),
        ("e 1.3, k3 0", &docs, Bm25Params { query_k3: 0.0, ..d }),
        (
            "e 1, k3 1",
            &docs,
            Bm25Params {
                idf_exponent: 1.0,
                ..d
            },
        ),
        ("default (e 1.3, k3 1)", &docs, d),
        (
            "default, e 1.5",
            &docs,
            Bm25Params {
                idf_exponent: 1.5,
                ..d
            },
        ),
        ("default, k3 2", &docs, Bm25Params { query_k3: 2.0, ..d }),
        (
            "default, name 1.0",
            &docs,
            Bm25Params {
                name_weight: 1.0,
                ..d
            },
        ),
        (
            "default, grams 0.05",
            &docs,
            Bm25Params {
                gram_weight: 0.05,
                ..d
            },
        ),
        (
            "default, no grams",
            &docs,
            Bm25Params {
                gram_weight: 0.0,
                ..d
            },
        ),
        ("default, k1 2.0", &docs, Bm25Params { k1: 2.0, ..d }),
        ("default, b 0.5", &docs, Bm25Params { b: 0.5, ..d }),
    ] {
        let index = Bm25Index::build_with(docs, params);
        let rankings: Vec<_> = texts.iter().map(|t| index.search(t, 10)).collect();
        let s = set.score(&rankings);
        println!(
            "| {label} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            s.top1,
            s.top5,
            s.mrr10,
            top1_of(&rankings, 0),
            top1_of(&rankings, 1)
        );
    }
}
