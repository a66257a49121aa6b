//! The catalog: precedence and shadowing, lookup, forgiving loads, lazy single loading, reload,
//! trust flags and the prompt block.
//!
//! Origin: step 5 (issue 6: catalog, configuration, capabilities and matching).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use skillcat::capability::{Ceiling, Trust};
use skillcat::catalog::{Catalog, CatalogOptions, CatalogSource, DiagnosticKind};
use skillcat::config::{Config, Environment};
use skillcat::document::FaultKind;
use skillcat::document::name_key;
use skillcat::path::FileEntry;
use skillcat::prompt::{PromptFormat, PromptOptions};
use skillcat::source::{DirOptions, DirSource, Source};

use crate::support::bin::Skillcat;

fn write_skill(dir: &Path, dir_name: &str, name: &str, description: &str, extra: &str) {
    let d = dir.join(dir_name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n"),
    )
    .unwrap();
}

fn skill(dir: &Path, name: &str, description: &str) {
    write_skill(dir, name, name, description, "");
}

fn spec(dir: &Path) -> String {
    dir.display().to_string()
}

fn names(entries: &[skillcat::catalog::Entry]) -> Vec<String> {
    entries.iter().map(|e| e.name().to_string()).collect()
}

/// Two directories: `a` (x, y, deploy-checker) before `b` (y, z, deploy_checker).
fn two_sources() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    skill(&a, "x", "X from a.");
    skill(&a, "y", "Y from a.");
    skill(&a, "deploy-checker", "Checks deploys (a).");
    skill(&b, "y", "Y from b.");
    skill(&b, "z", "Z from b.");
    write_skill(
        &b,
        "deploy_checker",
        "deploy_checker",
        "Checks deploys (b).",
        "",
    );
    (tmp, a, b)
}

#[tokio::test]
async fn precedence_and_shadowing() {
    let (_tmp, a, b) = two_sources();
    let cat = Catalog::new(vec![
        CatalogSource::spec(spec(&a)).named("project"),
        CatalogSource::spec(spec(&b)).named("user").trusted(true),
    ]);
    let all = cat.all().await;
    assert_eq!(names(&all), ["deploy-checker", "x", "y", "z"]);
    let y = cat.find("y").await.unwrap();
    assert_eq!(y.source_name(), "project");
    assert_eq!(y.skill().description(), "Y from a.");
    assert!(y.location().starts_with(&spec(&a)));

    let shadowed: Vec<_> = cat
        .diagnostics()
        .await
        .into_iter()
        .filter(|d| d.kind == DiagnosticKind::Shadowed)
        .collect();
    assert_eq!(shadowed.len(), 2, "{shadowed:#?}");
    // Reported on the hidden offer, naming the winner.
    let dy = shadowed.iter().find(|d| d.root == "y").unwrap();
    assert_eq!(dy.source, "user");
    assert!(dy.location.starts_with(&spec(&b)));
    assert!(dy.message.contains("`project`"), "{}", dy.message);
    assert!(dy.to_string().ends_with("[shadowed]"));
    // `-` and `_` are the same name, so b's deploy_checker is hidden as well.
    let dd = shadowed
        .iter()
        .find(|d| d.root == "deploy_checker")
        .unwrap();
    assert!(dd.message.contains("deploy-checker"), "{}", dd.message);

    // Reversed precedence, reversed winner.
    let cat = Catalog::new(vec![
        CatalogSource::spec(spec(&b)),
        CatalogSource::spec(spec(&a)),
    ]);
    assert_eq!(
        cat.find("y").await.unwrap().skill().description(),
        "Y from b."
    );
}

#[tokio::test]
async fn same_name_twice_in_one_source_keeps_the_first_listed() {
    let tmp = tempfile::tempdir().unwrap();
    write_skill(tmp.path(), "one", "dup", "First.", "");
    write_skill(tmp.path(), "two", "dup", "Second.", "");
    let cat = Catalog::new(vec![CatalogSource::spec(spec(tmp.path()))]);
    assert_eq!(cat.find("dup").await.unwrap().root(), "one");
    let d = cat.diagnostics().await;
    assert!(
        d.iter()
            .any(|d| d.kind == DiagnosticKind::Shadowed && d.root == "two"),
        "{d:#?}"
    );
}

#[tokio::test]
async fn lookup_treats_dash_and_underscore_alike() {
    let (_tmp, a, _b) = two_sources();
    let cat = Catalog::new(vec![CatalogSource::spec(spec(&a))]);
    for q in [
        "deploy-checker",
        "deploy_checker",
        " deploy_checker ",
        "ｄｅｐｌｏｙ-checker",
    ] {
        assert_eq!(
            cat.find(q).await.map(|e| e.name().to_string()).as_deref(),
            Some("deploy-checker"),
            "{q:?}"
        );
    }
    assert!(cat.find("deploy").await.is_none());
    assert!(cat.find("").await.is_none());
    assert_eq!(name_key("a_b-c"), "a-b-c");
}

#[tokio::test]
async fn missing_roots_are_empty_sources() {
    let tmp = tempfile::tempdir().unwrap();
    skill(tmp.path(), "only", "The only skill.");
    let cat = Catalog::new(vec![
        CatalogSource::spec(spec(&tmp.path().join("no/such/dir"))),
        CatalogSource::spec(spec(tmp.path())),
        CatalogSource::spec("/nonexistent/skillcat-test/skills.tar.gz"),
    ]);
    assert_eq!(names(&cat.all().await), ["only"]);
    assert!(cat.diagnostics().await.is_empty());
    // An empty catalog renders the empty block.
    let empty = Catalog::new(vec![CatalogSource::spec("/nonexistent/skillcat-test")]);
    assert!(empty.all().await.is_empty());
    assert_eq!(
        empty.prompt(&PromptOptions::default()).await.text,
        "<available_skills>\n</available_skills>"
    );
    let opts = PromptOptions {
        omit_when_empty: true,
        ..PromptOptions::default()
    };
    assert_eq!(empty.prompt(&opts).await.text, "");
}

#[tokio::test]
async fn bad_bundles_become_diagnostics_and_the_rest_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    skill(dir, "good", "A good skill.");
    std::fs::create_dir_all(dir.join("bad-yaml")).unwrap();
    std::fs::write(dir.join("bad-yaml/SKILL.md"), "---\nname: [unclosed\n---\n").unwrap();
    write_skill(dir, "no-description", "no-description", "\"\"", "");
    write_skill(dir, "Shouty", "Shouty", "Loaded with a warning.", "");
    let cat = Catalog::new(vec![CatalogSource::spec(spec(dir)).named("d")]);
    assert_eq!(names(&cat.all().await), ["Shouty", "good"]);
    let d = cat.diagnostics().await;
    let kinds: Vec<(&str, DiagnosticKind)> = d.iter().map(|d| (d.root.as_str(), d.kind)).collect();
    assert!(
        kinds.contains(&(
            "no-description",
            DiagnosticKind::Refused(FaultKind::DescriptionEmpty)
        )),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(
            "Shouty",
            DiagnosticKind::Invalid(FaultKind::NameNotLowercase)
        )),
        "{kinds:?}"
    );
    let bad = d
        .iter()
        .find(|d| d.root == "bad-yaml")
        .expect("bad-yaml reported");
    assert_eq!(bad.kind.as_str(), "refused");
    assert!(bad.kind.excludes());
    assert_eq!(bad.source, "d");
    assert!(
        bad.location.ends_with("bad-yaml/SKILL.md"),
        "{}",
        bad.location
    );
    assert!(!DiagnosticKind::Invalid(FaultKind::NameNotLowercase).excludes());
}

#[tokio::test]
async fn conformance_catalog_loads_what_it_can() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance/catalog");
    let cat = Catalog::new(vec![CatalogSource::spec(spec(&dir))]);
    let all = cat.all().await;
    assert!(all.iter().any(|e| e.name() == "alpha"));
    let d = cat.diagnostics().await;
    for root in ["bad-yaml", "unclosed", "not-mapping", "no-document"] {
        assert!(
            d.iter()
                .any(|d| d.root == root && matches!(d.kind, DiagnosticKind::Refused(_))),
            "{root}: {d:#?}"
        );
    }
    // Nothing is dropped silently: every listed root is an entry or a diagnostic.
    let roots = DirSource::open(&dir, DirOptions::default())
        .unwrap()
        .list()
        .await
        .unwrap();
    for r in roots {
        assert!(
            all.iter().any(|e| e.root() == r) || d.iter().any(|d| d.root == r),
            "{r}"
        );
    }
}

#[tokio::test]
async fn unreadable_source_is_a_diagnostic() {
    let tmp = tempfile::tempdir().unwrap();
    let not_archive = tmp.path().join("notes.txt");
    std::fs::write(&not_archive, "just text").unwrap();
    skill(&tmp.path().join("s"), "ok", "Fine.");
    let cat = Catalog::new(vec![
        CatalogSource::spec(spec(&not_archive)).named("broken"),
        CatalogSource::spec(spec(&tmp.path().join("s"))),
    ]);
    assert_eq!(names(&cat.all().await), ["ok"]);
    let d = cat.diagnostics().await;
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].kind, DiagnosticKind::SourceUnavailable);
    assert_eq!(d[0].source, "broken");
}

/// A source that counts how often it is listed.
#[derive(Debug)]
struct Counting {
    inner: DirSource,
    lists: AtomicUsize,
}

#[async_trait]
impl Source for Counting {
    async fn list(&self) -> skillcat::Result<Vec<String>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        // Widen the window in which concurrent callers could start a second load.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        self.inner.list().await
    }
    async fn files(&self, root: &str) -> skillcat::Result<Vec<FileEntry>> {
        self.inner.files(root).await
    }
    async fn read(&self, path: &str) -> skillcat::Result<Bytes> {
        self.inner.read(path).await
    }
    fn location(&self, path: &str) -> String {
        self.inner.location(path)
    }
}

#[tokio::test]
async fn a_source_discovered_already_is_not_read_again_until_a_reload() {
    let tmp = tempfile::tempdir().unwrap();
    skill(tmp.path(), "one", "First.");
    let counting = Arc::new(Counting {
        inner: DirSource::open(tmp.path(), DirOptions::default()).unwrap(),
        lists: AtomicUsize::new(0),
    });
    // What a command did to find its skill: one full discovery.
    let found = skillcat::source::discover(&*counting).await.unwrap();
    assert_eq!(counting.lists.load(Ordering::SeqCst), 1);
    let cat = Catalog::new(vec![CatalogSource::discovered(
        "seeded",
        counting.clone(),
        found,
    )]);
    assert_eq!(names(&cat.all().await), ["one"]);
    assert!(cat.find("one").await.unwrap().skill().has_files());
    assert_eq!(
        counting.lists.load(Ordering::SeqCst),
        1,
        "the first load takes the discovery it was given"
    );
    skill(tmp.path(), "two", "Second.");
    cat.reload().await;
    assert_eq!(
        counting.lists.load(Ordering::SeqCst),
        2,
        "a reload reads the source"
    );
    assert_eq!(names(&cat.all().await), ["one", "two"]);

    // A discovery without file lists does not stand in for a catalog that needs them.
    let documents = skillcat::source::discover_with(&*counting, skillcat::source::Detail::Document)
        .await
        .unwrap();
    assert_eq!(counting.lists.load(Ordering::SeqCst), 3);
    let cat = Catalog::new(vec![CatalogSource::discovered(
        "documents only",
        counting.clone(),
        documents,
    )]);
    assert!(cat.find("one").await.unwrap().skill().has_files());
    assert_eq!(counting.lists.load(Ordering::SeqCst), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn loads_lazily_once_under_concurrent_access() {
    let tmp = tempfile::tempdir().unwrap();
    skill(tmp.path(), "one", "First.");
    let counting = Arc::new(Counting {
        inner: DirSource::open(tmp.path(), DirOptions::default()).unwrap(),
        lists: AtomicUsize::new(0),
    });
    let cat = Catalog::new(vec![CatalogSource::from_source(
        "counted",
        counting.clone(),
    )]);
    assert_eq!(
        counting.lists.load(Ordering::SeqCst),
        0,
        "nothing is read before first use"
    );
    assert!(!cat.is_loaded());

    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let cat = cat.clone();
            tokio::spawn(async move {
                match i % 3 {
                    0 => cat.all().await.len(),
                    1 => usize::from(cat.find("one").await.is_some()),
                    _ => cat.prompt(&PromptOptions::default()).await.report.included,
                }
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), 1);
    }
    assert_eq!(counting.lists.load(Ordering::SeqCst), 1);
    assert!(cat.is_loaded());

    // Reload reads again and sees what changed; the old snapshot stays valid meanwhile.
    let before = cat.snapshot().await;
    skill(tmp.path(), "two", "Second.");
    cat.reload().await;
    assert_eq!(counting.lists.load(Ordering::SeqCst), 2);
    assert_eq!(names(&cat.all().await), ["one", "two"]);
    assert_eq!(before.entries().len(), 1);
    assert_eq!(counting.lists.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn trust_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = "trust: core\nnetwork: true\nfs_read: [., /etc]\n";
    for d in ["core", "trusted", "untrusted"] {
        write_skill(
            &tmp.path().join(d),
            &format!("{d}-skill"),
            &format!("{d}-skill"),
            "D.",
            extra,
        );
    }
    let cat = Catalog::new(vec![
        CatalogSource::spec(spec(&tmp.path().join("core"))).core_trusted(true),
        CatalogSource::spec(spec(&tmp.path().join("trusted"))).trusted(true),
        CatalogSource::spec(spec(&tmp.path().join("untrusted"))),
    ]);
    let core = cat.find("core-skill").await.unwrap();
    let trusted = cat.find("trusted-skill").await.unwrap();
    let untrusted = cat.find("untrusted-skill").await.unwrap();
    assert!(core.is_trusted() && core.is_core_trusted() && core.scripts_allowed());
    assert!(trusted.is_trusted() && !trusted.is_core_trusted() && trusted.scripts_allowed());
    assert!(
        !untrusted.is_trusted() && !untrusted.is_core_trusted() && !untrusted.scripts_allowed()
    );
    assert_eq!(cat.all().await.len(), 3, "untrusted skills are listed");

    // Every one declares `trust: core`; it counts only from the core-trusted source.
    let ceiling = Ceiling {
        network: skillcat::capability::Network::All,
        ..Ceiling::default()
    };
    let cwd = tmp.path();
    assert_eq!(core.capabilities().trust, Trust::Core);
    let g = core.grant(&ceiling, cwd, None);
    assert!(g.is_core() && g.network.is_all());
    assert_eq!(g.fs_read, [cwd.canonicalize().unwrap()]);
    assert!(!trusted.grant(&ceiling, cwd, None).is_core());
    assert!(!untrusted.grant(&ceiling, cwd, None).is_core());

    // `trusted(false)` also withdraws core trust.
    let s = CatalogSource::spec("x").core_trusted(true).trusted(false);
    assert!(!s.is_trusted() && !s.is_core_trusted());
}

#[tokio::test]
async fn prompt_within_budget() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..12 {
        skill(
            tmp.path(),
            &format!("skill-{i:02}"),
            &"A long description of this skill. ".repeat(8),
        );
    }
    let cat = Catalog::new(vec![CatalogSource::spec(spec(tmp.path()))]);
    let whole = cat.prompt(&PromptOptions::default()).await;
    assert!(whole.report.is_clean());
    assert_eq!(whole.report.included, 12);
    let full_len = whole.text.chars().count();

    for budget in [full_len, full_len - 1, 2000, 800, 100, 10] {
        let opts = PromptOptions {
            budget: Some(budget),
            ..PromptOptions::default()
        };
        let r = cat.prompt(&opts).await;
        assert!(r.text.chars().count() <= budget, "{budget}");
        assert_eq!(r.report.included + r.report.omitted.len(), 12);
    }
    let r = cat
        .prompt(&PromptOptions {
            budget: Some(800),
            ..PromptOptions::default()
        })
        .await;
    assert!(!r.report.omitted.is_empty());
    assert_eq!(
        r.report.omitted.last().map(String::as_str),
        Some("skill-11"),
        "lowest precedence goes first"
    );

    let md = cat
        .prompt(&PromptOptions {
            format: PromptFormat::Markdown,
            ..PromptOptions::default()
        })
        .await;
    assert!(md.text.starts_with("## Available skills\n- **skill-00**"));
}

#[tokio::test]
async fn from_config_uses_sources_trust_and_validation() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write_skill(
        &root.join("team"),
        "runner",
        "runner",
        "Runs things.",
        "timeout: 30\nfs_read: data\n",
    );
    skill(&root.join("user"), "helper", "Helps.");
    let text = "[[sources]]\nname = \"team\"\npath = \"team\"\ntrusted = true\ncore = true\n\n\
                [[sources]]\nname = \"user\"\npath = \"user\"\n\n[prompt]\nbudget = 5000\n";
    std::fs::write(
        root.join("skillcat.toml"),
        format!("{text}[scripts]\nextension_fields = true\n"),
    )
    .unwrap();
    std::fs::write(root.join("plain.toml"), text).unwrap();
    let env = Environment {
        cwd: root.to_path_buf(),
        home: None,
    };

    // Named explicitly: the user's own file (a `./skillcat.toml` found by itself is the
    // project's, and may not trust its own sources).
    let config = Config::discover(Some(&root.join("skillcat.toml")), &env).unwrap();
    let cat = Catalog::from_config(&config);
    assert_eq!(cat.sources().len(), 2);
    assert!(cat.sources()[0].is_core_trusted() && cat.sources()[0].is_trusted());
    assert!(!cat.sources()[1].is_trusted());
    assert_eq!(names(&cat.all().await), ["runner", "helper"]);
    assert!(
        cat.diagnostics().await.is_empty(),
        "capability keys are known extension fields"
    );
    assert_eq!(
        cat.find("runner").await.unwrap().capabilities().timeout,
        Some(30)
    );
    let r = cat.prompt(&config.prompt_options(PromptFormat::Xml)).await;
    assert_eq!(r.report.budget, Some(5000));

    // Without `extension_fields` the same keys are unexpected fields (the skill still loads).
    let config = Config::discover(Some(Path::new("plain.toml")), &env).unwrap();
    let cat = Catalog::from_config(&config);
    assert_eq!(cat.all().await.len(), 2);
    let d = cat.diagnostics().await;
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(
        d[0].kind,
        DiagnosticKind::Invalid(FaultKind::UnexpectedFields)
    );
    assert_eq!(d[0].source, "team");
}

#[tokio::test]
async fn example_configuration_loads_the_fixture_skills() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let home = tempfile::tempdir().unwrap();
    let env = Environment {
        cwd: fixtures.clone(),
        home: Some(home.path().to_path_buf()),
    };
    let config = Config::load(&fixtures.join("skillcat.toml"), &env).unwrap();
    let cat = Catalog::with_options(
        config.sources.iter().map(CatalogSource::from).collect(),
        CatalogOptions {
            validate: config.validate_options(),
            ..CatalogOptions::default()
        },
    );
    let all = cat.all().await;
    let pdf = cat.find("pdf_forms").await.unwrap();
    assert_eq!(pdf.source_name(), "team");
    assert!(pdf.scripts_allowed() && pdf.is_core_trusted());
    let alpha = cat.find("alpha").await.unwrap();
    assert_eq!(alpha.source_name(), "conformance");
    assert!(!alpha.scripts_allowed());
    // Team skills come first, in their source's order.
    assert_eq!(all[0].source_name(), "team");
    // The user source (`~/.agents/skills`) does not exist: an empty source, no diagnostic.
    assert!(cat.diagnostics().await.iter().all(|d| d.source != "user"));
}

#[test]
fn cli_without_source_uses_the_configured_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    skill(&repo.join(".agents/skills"), "hello", "Says hello.");
    skill(
        &root.join("home/.agents/skills"),
        "hello",
        "The user's hello.",
    );
    skill(&root.join("home/.agents/skills"), "mine", "The user's own.");
    let run = |args: &[&str]| {
        Skillcat::new(args)
            .cwd(repo.join("sub"))
            .env("HOME", root.join("home"))
            .run()
    };

    // Defaults: the project's skills before the user's; the shadowed one is reported.
    let out = run(&["list", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed: Vec<(&str, &str)> = v["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["trust"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [("hello", "untrusted"), ("mine", "trusted")]);
    assert_eq!(v["diagnostics"][0]["kind"], "shadowed");
    let stderr = &out.stderr;
    assert!(stderr.contains("shadowed by `hello`"), "{stderr}");

    let out = run(&["prompt"]);
    assert_eq!(out.code, 0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\nSays hello.\n") && text.contains("\nmine\n"),
        "{text}"
    );
    assert!(!text.contains("The user's hello."));

    // A configuration named with --config, with its budget.
    let conf = root.join("c.toml");
    std::fs::write(
        &conf,
        format!(
            "[[sources]]\npath = \"{}\"\n[prompt]\nbudget = 200\n",
            root.join("home/.agents/skills").display()
        ),
    )
    .unwrap();
    let out = run(&["prompt", "--config", conf.to_str().unwrap()]);
    assert_eq!(out.code, 0);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .chars()
            .count()
            <= 200
    );
    assert!(out.stderr.contains("200-character budget"));

    // A bad configuration is a usage error naming the key and line.
    std::fs::write(&conf, "[prompt]\nbudget = \"x\"\n").unwrap();
    let out = run(&["list", "--config", conf.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("c.toml:2:10: prompt.budget"));
}
