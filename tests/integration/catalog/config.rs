//! The configuration file: the full example, strict errors with key and line, defaults.
//!
//! Origin: step 5 (issue 6: catalog, configuration, capabilities and matching).

use std::path::{Path, PathBuf};

use skillcat::capability::Ceiling;
use skillcat::config::{Config, ConfigError, Environment, SourceConfig};
use skillcat::matching::{Bm25Params, EmbedProvider, MatchMode, MatcherConfig};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn env_at(cwd: &Path) -> Environment {
    Environment {
        cwd: cwd.to_path_buf(),
        home: Some(PathBuf::from("/home/tester")),
    }
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, None, &env_at(Path::new("/work/proj")))
}

/// The error's `(line, column, key, message)`, and its display.
fn invalid(text: &str) -> (usize, usize, String, String) {
    match parse(text) {
        Err(
            e @ ConfigError::Invalid {
                line: Some(line),
                column: Some(column),
                ..
            },
        ) => {
            let ConfigError::Invalid { key, .. } = &e else {
                unreachable!()
            };
            (line, column, key.clone().unwrap_or_default(), e.to_string())
        }
        other => panic!("expected an error with a position for {text:?}, got {other:?}"),
    }
}

#[test]
fn full_example_parses() {
    let path = fixtures().join("skillcat.toml");
    let config = Config::load(&path, &env_at(Path::new("/elsewhere"))).unwrap();
    let dir = fixtures();
    assert_eq!(config.origin.as_deref(), Some(path.as_path()));

    let s = &config.sources;
    assert_eq!(s.len(), 3);
    assert_eq!(s[0].display_name(), "team");
    assert_eq!(s[0].path, dir.join("skills").display().to_string());
    assert!(s[0].trusted && s[0].core);
    assert_eq!(s[1].display_name(), "conformance");
    assert_eq!(
        s[1].path,
        dir.join("conformance/catalog").display().to_string()
    );
    assert!(!s[1].trusted && !s[1].core);
    assert_eq!(s[2].path, "/home/tester/.agents/skills");
    assert!(s[2].trusted && !s[2].core);

    let sb = &config.sandbox;
    assert_eq!(sb.fs_read, [".", "~/.config/skillcat"]);
    assert_eq!(sb.fs_write, ["./out"]);
    assert!(sb.network.is_off());
    assert_eq!((sb.timeout, sb.max_timeout), (30, 120));
    assert_eq!((sb.memory, sb.processes, sb.output), (512 << 20, 32, 65536));

    assert!(config.scripts.extension_fields);
    assert_eq!(
        config
            .scripts
            .interpreters
            .get("python3")
            .map(PathBuf::as_path),
        Some(Path::new("/usr/bin/python3"))
    );
    assert_eq!(config.scripts.interpreters.len(), 2);
    let by_extension: Vec<(&str, &str)> = config
        .scripts
        .by_extension
        .iter()
        .map(|(e, i)| (e.as_str(), i.as_str()))
        .collect();
    assert_eq!(by_extension, [("py", "python3"), ("sh", "sh")]);
    assert_eq!(config.keyring, Some(dir.join("keyring.toml")));
    assert_eq!(config.cache_dir, Some(PathBuf::from("/tmp/skillcat-cache")));
    assert_eq!(
        skillcat::catalog::Catalog::from_config(&config)
            .options()
            .open
            .cache_dir,
        config.cache_dir
    );
    assert_eq!(config.prompt.budget, Some(8000));

    let m = &config.matcher;
    assert_eq!(
        (m.mode, m.top, m.weight, m.cache),
        (MatchMode::Bm25, 5, 0.4, true)
    );
    assert_eq!(m.model_dir, Some(dir.join("models/all-MiniLM-L6-v2")));
    assert_eq!(m.bm25, Bm25Params::default());
    assert_eq!(m.embedder.provider, EmbedProvider::Ollama);
    assert_eq!(m.embedder.url.as_deref(), Some("http://127.0.0.1:11434"));
    assert_eq!(m.embedder.model.as_deref(), Some("nomic-embed-text"));
    assert!(config.install.require_signatures);
    assert_eq!(config.install.audit, skillcat::audit::Policy::Refuse);
    assert_eq!(
        config.runtime.audit,
        skillcat::config::RuntimeAudit::Withhold
    );

    let opts = config.validate_options();
    for f in [
        "fs_read", "fs_write", "network", "timeout", "trust", "scripts",
    ] {
        assert!(opts.allowed_fields.contains(f), "{f}");
    }
}

#[test]
fn extension_fields_are_off_by_default() {
    let c = parse("[scripts]\n").unwrap();
    assert!(c.validate_options().allowed_fields.is_empty());
    let c = parse("[scripts]\nextension_fields = false\n").unwrap();
    assert!(c.validate_options().allowed_fields.is_empty());
}

#[test]
fn unknown_keys_name_the_key_and_line() {
    for (text, line, column, key) in [
        ("colour = 1\n", 1, 1, "colour"),
        (
            "[sandbox]\nnetwork = true\nfs_raed = []\n",
            3,
            1,
            "sandbox.fs_raed",
        ),
        (
            "[[sources]]\npath = \"a\"\n\n[[sources]]\npath = \"b\"\n  trusty = true\n",
            6,
            3,
            "sources[1].trusty",
        ),
        ("[scripts]\ninterpreter = {}\n", 2, 1, "scripts.interpreter"),
        (
            "[prompt]\nbudget = 10\nformat = \"xml\"\n",
            3,
            1,
            "prompt.format",
        ),
        ("[sandbox.extra]\nx = 1\n", 1, 10, "sandbox.extra"),
    ] {
        let (l, c, k, shown) = invalid(text);
        assert_eq!((l, c, k.as_str()), (line, column, key), "{text:?}: {shown}");
        assert!(
            shown.starts_with(&format!("<config>:{line}:{column}: {key}: unknown key")),
            "{shown}"
        );
    }
}

#[test]
fn wrong_types_name_the_key_and_line() {
    for (text, line, column, key, expected) in [
        (
            "[sandbox]\nnetwork = \"yes\"\n",
            2,
            11,
            "sandbox.network",
            "true, false or a list of host patterns",
        ),
        (
            "[sandbox]\ntimeout = \"abc\"\n",
            2,
            11,
            "sandbox.timeout",
            "u64",
        ),
        (
            "[sandbox]\n\ntimeout = -5\n",
            3,
            11,
            "sandbox.timeout",
            "u64",
        ),
        (
            "[sandbox]\nfs_read = \".\"\n",
            2,
            11,
            "sandbox.fs_read",
            "a sequence",
        ),
        (
            "[sandbox]\nfs_write = [\"a\", 3]\n",
            2,
            18,
            "sandbox.fs_write[1]",
            "a string",
        ),
        (
            "[[sources]]\npath = \"a\"\n[[sources]]\npath = \"b\"\ntrusted = 1\n",
            5,
            11,
            "sources[1].trusted",
            "a boolean",
        ),
        (
            "[prompt]\nbudget = \"big\"\n",
            2,
            10,
            "prompt.budget",
            "usize",
        ),
        (
            "[scripts.interpreters]\npython3 = 3\n",
            2,
            11,
            "scripts.interpreters.python3",
            "a string",
        ),
        ("keyring = false\n", 1, 11, "keyring", "a string"),
        ("matcher = 3\n", 1, 11, "matcher", "a table"),
        (
            "[matcher]\ntop = 5\nmodel = \"m\"\n",
            3,
            1,
            "matcher.model",
            "unknown key `model`",
        ),
        (
            "[matcher]\nmode = \"fast\"\n",
            2,
            8,
            "matcher.mode",
            "`bm25`, `neural`, `embed`",
        ),
        ("[matcher]\ntop = \"5\"\n", 2, 7, "matcher.top", "usize"),
        ("[matcher]\ncache = 1\n", 2, 9, "matcher.cache", "a boolean"),
        (
            "[matcher]\nweight = \"half\"\n",
            2,
            10,
            "matcher.weight",
            "a number",
        ),
        (
            "[matcher.bm25]\nk1 = 1.2\nkl = 2\n",
            3,
            1,
            "matcher.bm25.kl",
            "unknown key `kl`",
        ),
        (
            "[matcher.embedder]\nkind = \"ollama\"\n",
            2,
            1,
            "matcher.embedder.kind",
            "unknown key `kind`",
        ),
        (
            "[matcher.embedder]\nprovider = \"cohere\"\n",
            2,
            12,
            "matcher.embedder.provider",
            "expected `openai` or `ollama`",
        ),
    ] {
        let (l, c, k, shown) = invalid(text);
        assert_eq!((l, c, k.as_str()), (line, column, key), "{text:?}: {shown}");
        assert!(
            shown.contains(&format!(":{line}:{column}: {key}: ")),
            "{shown}"
        );
        assert!(shown.contains(expected), "{shown}");
    }
}

#[test]
fn impossible_values_name_the_key_and_line() {
    for (text, line, key, says) in [
        (
            "[[sources]]\npath = \"a\"\ncore = true\n",
            3,
            "sources[0].core",
            "must also be trusted",
        ),
        (
            "[[sources]]\npath = \"  \"\n",
            2,
            "sources[0].path",
            "must not be empty",
        ),
        (
            "[[sources]]\npath = \"a\"\n[[sources]]\npath = \"a\"\n",
            4,
            "sources[1].path",
            "already configured",
        ),
        (
            "[[sources]]\npath = \"a\"\nname = \"x\"\n[[sources]]\npath = \"b\"\nname = \"x\"\n",
            6,
            "sources[1].name",
            "already configured",
        ),
        (
            "[scripts.interpreters]\npython3 = \"python3\"\n",
            2,
            "scripts.interpreters.python3",
            "absolute path",
        ),
        (
            "[sandbox]\ntimeout = 0\n",
            2,
            "sandbox.timeout",
            "at least 1",
        ),
        (
            "[sandbox]\nprocesses = 0\n",
            2,
            "sandbox.processes",
            "at least 1",
        ),
        (
            "[sandbox]\ntimeout = 60\nmax_timeout = 30\n",
            3,
            "sandbox.max_timeout",
            "less than",
        ),
        (
            "[sandbox]\nmax_timeout = 0\n",
            2,
            "sandbox.max_timeout",
            "at least 1",
        ),
        ("[matcher]\n\ntop = 0\n", 3, "matcher.top", "at least 1"),
        (
            "[matcher]\nweight = 1.5\n",
            2,
            "matcher.weight",
            "between 0 and 1",
        ),
        (
            "[matcher.bm25]\nb = -0.5\n",
            2,
            "matcher.bm25.b",
            "between 0 and 1",
        ),
        (
            "[matcher.embedder]\nmodel = \"  \"\n",
            2,
            "matcher.embedder.model",
            "must not be empty",
        ),
    ] {
        let (l, _, k, shown) = invalid(text);
        assert_eq!((l, k.as_str()), (line, key), "{text:?}: {shown}");
        assert!(shown.contains(says), "{shown}");
    }
}

#[test]
fn syntax_errors_have_a_position() {
    let (l, c, _, shown) = invalid("[sandbox]\nnetwork = tru\n");
    assert_eq!((l, c), (2, 11), "{shown}");
    let (l, _, _, shown) = invalid("a = 1\na = 2\n");
    assert_eq!(l, 2, "{shown}");
    let (l, _, k, shown) = invalid("[[sources]]\nname = \"x\"\n");
    assert_eq!((l, k.as_str()), (1, "sources[0]"), "{shown}");
    assert!(shown.contains("missing field `path`"), "{shown}");
}

#[test]
fn errors_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("skillcat.toml");
    std::fs::write(&file, "[sandbox]\nnetwork = 1\n").unwrap();
    let err = Config::load(&file, &env_at(tmp.path())).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:2:11: sandbox.network", file.display())),
        "{err}"
    );
    let lib: skillcat::Error = err.into();
    assert!(lib.to_string().contains("sandbox.network"));
    // The configuration error is kept as the cause, typed.
    assert!(
        matches!(
            std::error::Error::source(&lib).and_then(|c| c.downcast_ref::<ConfigError>()),
            Some(ConfigError::Invalid { .. })
        ),
        "{lib:?}"
    );

    let missing = tmp.path().join("nope.toml");
    let err = Config::discover(Some(&missing), &env_at(tmp.path())).unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }), "{err}");
    assert!(err.to_string().contains("nope.toml"));
}

#[test]
fn sandbox_defaults() {
    let c = parse("").unwrap();
    assert_eq!(c.sandbox, Ceiling::default());
    assert_eq!(c.sandbox.fs_read, ["."]);
    assert!(c.sandbox.fs_write.is_empty() && c.sandbox.network.is_off());
    assert_eq!((c.sandbox.timeout, c.sandbox.max_timeout), (60, 60));
    assert_eq!(
        (c.sandbox.memory, c.sandbox.processes, c.sandbox.output),
        (1 << 30, 64, 65536)
    );

    // Keys left out of [sandbox] keep their defaults.
    let c = parse("[sandbox]\nnetwork = true\n").unwrap();
    assert!(c.sandbox.network.is_all());
    assert_eq!(c.sandbox.fs_read, ["."]);
    // `timeout` alone is also the hard limit; `max_timeout` alone lowers a larger default.
    let c = parse("[sandbox]\ntimeout = 300\n").unwrap();
    assert_eq!((c.sandbox.timeout, c.sandbox.max_timeout), (300, 300));
    let c = parse("[sandbox]\nmax_timeout = 20\n").unwrap();
    assert_eq!((c.sandbox.timeout, c.sandbox.max_timeout), (20, 20));
    let c = parse("[sandbox]\nmax_timeout = 600\n").unwrap();
    assert_eq!((c.sandbox.timeout, c.sandbox.max_timeout), (60, 600));
    let c = parse("[sandbox]\nfs_read = []\n").unwrap();
    assert!(c.sandbox.fs_read.is_empty());
    assert_eq!(c.prompt.budget, None);
    assert_eq!(c.matcher, MatcherConfig::default());
}

#[test]
fn relative_paths_follow_the_file() {
    let c = Config::parse(
        "keyring = \"keys/k.toml\"\n[[sources]]\npath = \"./s\"\n[[sources]]\npath = \"https://h/x/\"\n",
        Some(Path::new("/etc/sc/skillcat.toml")),
        &env_at(Path::new("/work")),
    )
    .unwrap();
    assert_eq!(c.sources[0].path, "/etc/sc/s");
    assert_eq!(c.sources[0].display_name(), "./s");
    assert_eq!(c.sources[1].path, "https://h/x/");
    assert_eq!(c.keyring, Some(PathBuf::from("/etc/sc/keys/k.toml")));
    // Text without a file: against the working directory.
    let c = parse("[[sources]]\npath = \"s\"\n").unwrap();
    assert_eq!(c.sources[0].path, "/work/proj/s");
}

/// A tree `tmp/{.agents/skills, repo/{.git, .agents/skills, a/.agents/skills, a/b}}`.
fn repo_tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let repo = root.join("repo");
    for d in [
        ".agents/skills",
        "repo/.git",
        "repo/.agents/skills",
        "repo/a/.agents/skills",
        "repo/a/b",
        "home/.agents/skills",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    (tmp, root, repo)
}

#[test]
fn defaults_walk_up_to_the_repository_root() {
    let (_tmp, root, repo) = repo_tree();
    let env = Environment {
        cwd: repo.join("a/b"),
        home: Some(root.join("home")),
    };
    let c = Config::defaults(&env);
    let paths: Vec<(&str, bool)> = c
        .sources
        .iter()
        .map(|s| (s.path.as_str(), s.trusted))
        .collect();
    let a = repo.join("a/.agents/skills").display().to_string();
    let r = repo.join(".agents/skills").display().to_string();
    let h = root.join("home/.agents/skills").display().to_string();
    // Nearest first, nothing above the repository root, then the user's (trusted).
    assert_eq!(
        paths,
        [(a.as_str(), false), (r.as_str(), false), (h.as_str(), true)]
    );
    assert!(c.sources.iter().all(|s| !s.core));
    assert_eq!(c.sandbox, Ceiling::default());

    // `.git` may be a file (worktrees, submodules).
    std::fs::remove_dir(repo.join(".git")).unwrap();
    std::fs::write(repo.join(".git"), "gitdir: elsewhere\n").unwrap();
    assert_eq!(Config::defaults(&env).sources.len(), 3);

    // Without a repository: the working directory's, even when missing (an empty source).
    let lone = root.join("lone/dir");
    std::fs::create_dir_all(&lone).unwrap();
    let c = Config::defaults(&Environment {
        cwd: lone.clone(),
        home: None,
    });
    let paths: Vec<&str> = c.sources.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, [lone.join(".agents/skills").display().to_string()]);
}

#[test]
fn repository_root_without_skills_is_still_a_source() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().canonicalize().unwrap().join("r");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    let c = Config::defaults(&Environment {
        cwd: repo.join("sub"),
        home: None,
    });
    let paths: Vec<&str> = c.sources.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, [repo.join(".agents/skills").display().to_string()]);
}

#[test]
fn discover_prefers_explicit_then_local_then_defaults() {
    let (_tmp, root, repo) = repo_tree();
    let env = Environment {
        cwd: repo.clone(),
        home: Some(root.join("home")),
    };
    // No file: defaults.
    let c = Config::discover(None, &env).unwrap();
    assert_eq!(c.origin, None);
    assert_eq!(c.sources.len(), 2);
    // ./skillcat.toml: read; a file without [[sources]] keeps the default sources. It is the
    // project's: until the user trusts the project it may only narrow the user's configuration
    // (the defaults here), so it cannot turn the network on.
    std::fs::write(repo.join("skillcat.toml"), "[sandbox]\nnetwork = true\n").unwrap();
    let c = Config::discover(None, &env).unwrap();
    assert_eq!(c.origin, Some(repo.join("skillcat.toml")));
    assert!(c.sandbox.network.is_off());
    assert_eq!(c.untrusted_project, Some(repo.canonicalize().unwrap()));
    assert_eq!(c.sources.len(), 2);
    // Trusted in the user's own file (`skillcat trust project`), it applies in full: trusted
    // by the digest of its content (step 26; a bare path, from before digests were recorded,
    // trusts no content and counts as changed).
    let user = Config::user_file(&env).unwrap();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        format!("trusted_projects = [{:?}]\n", repo.canonicalize().unwrap()),
    )
    .unwrap();
    let c = Config::discover(None, &env).unwrap();
    assert!(c.sandbox.network.is_off());
    assert!(c.changed_project);
    let digest = skillcat::digest::sha256_digest(b"[sandbox]\nnetwork = true\n");
    std::fs::write(
        &user,
        format!(
            "trusted_projects = [{{ path = {:?}, sha256 = {digest:?} }}]\n",
            repo.canonicalize().unwrap()
        ),
    )
    .unwrap();
    let c = Config::discover(None, &env).unwrap();
    assert!(c.sandbox.network.is_all());
    assert_eq!(c.untrusted_project, None);
    assert!(!c.changed_project);
    assert_eq!(c.sources.len(), 2);
    // Changed since: untrusted again, and marked as changed.
    std::fs::write(repo.join("skillcat.toml"), "[sandbox]\nnetwork = true\n\n").unwrap();
    let c = Config::discover(None, &env).unwrap();
    assert!(c.sandbox.network.is_off() && c.changed_project);
    std::fs::write(repo.join("skillcat.toml"), "[sandbox]\nnetwork = true\n").unwrap();
    // An explicit file wins; `sources = []` means no sources at all.
    std::fs::write(root.join("other.toml"), "sources = []\n").unwrap();
    let c = Config::discover(Some(Path::new("../other.toml")), &env).unwrap();
    assert!(c.sources.is_empty());
}

#[test]
fn builder() {
    let c = Config::new()
        .with_source(SourceConfig::new("/a").named("a").core(true))
        .with_source(SourceConfig::new("/b"))
        .with_sandbox(Ceiling {
            network: skillcat::capability::Network::All,
            ..Ceiling::default()
        })
        .with_interpreter("sh", "/bin/sh")
        .with_extension_fields(true)
        .with_keyring("/k.toml")
        .with_cache_dir("/c")
        .with_prompt_budget(Some(100));
    assert!(c.sources[0].trusted && c.sources[0].core);
    assert_eq!(c.sources[1].display_name(), "/b");
    assert!(c.ceiling().network.is_all());
    assert_eq!(c.prompt_options(Default::default()).budget, Some(100));
    assert_eq!(c.validate_options().allowed_fields.len(), 6);
}

#[test]
fn the_matcher_section_is_typed() {
    let c = parse(
        "[matcher]\nmode = \"neural\"\ntop = 3\nweight = 1\ncache = false\n\
         [matcher.bm25]\nname_weight = 2\nb = 0.5\n\
         [matcher.embedder]\nurl = \"http://h:1\"\nmodel = \"m\"\ndimensions = 128\n",
    )
    .unwrap();
    let m = &c.matcher;
    assert_eq!(
        (m.mode, m.top, m.weight, m.cache),
        (MatchMode::Neural, 3, 1.0, false)
    );
    assert_eq!(m.model_dir, None);
    // The fields added for bodies and tools, and the synonyms' weight, are keys too.
    let fields =
        parse("[matcher.bm25]\nheading_weight = 0.7\ntools_weight = 0\nconcept_weight = 0.2\n")
            .unwrap()
            .matcher
            .bm25;
    assert_eq!(
        (
            fields.heading_weight,
            fields.tools_weight,
            fields.concept_weight
        ),
        (0.7, 0.0, 0.2)
    );
    // A model directory is read against the file's directory, `~` against the home.
    let at = |text: &str| {
        Config::parse(
            text,
            Some(Path::new("/etc/sk/skillcat.toml")),
            &env_at(Path::new("/work/proj")),
        )
        .unwrap()
        .matcher
        .model_dir
    };
    assert_eq!(
        at("[matcher]\nmodel_dir = \"models/all-MiniLM-L6-v2\"\n"),
        Some("/etc/sk/models/all-MiniLM-L6-v2".into())
    );
    assert_eq!(
        at("[matcher]\nmodel_dir = \"/opt/m\"\n"),
        Some("/opt/m".into())
    );
    assert_eq!(
        at("[matcher]\nmodel_dir = \"~/m\"\n"),
        Some("/home/tester/m".into())
    );
    assert_eq!((m.bm25.name_weight, m.bm25.b), (2.0, 0.5));
    assert_eq!(m.bm25.k1, Bm25Params::default().k1);
    assert_eq!(m.embedder.provider, EmbedProvider::OpenAi);
    assert_eq!(m.embedder.url.as_deref(), Some("http://h:1"));
    assert_eq!(m.embedder.dimensions, Some(128));
    // An empty section is the defaults; the builder sets it whole.
    assert_eq!(
        parse("[matcher]\n").unwrap().matcher,
        MatcherConfig::default()
    );
    let built = Config::new().with_matcher(MatcherConfig {
        top: 9,
        ..MatcherConfig::default()
    });
    assert_eq!(built.matcher.top, 9);
}

/// The README's full example is the fixture the tests above load, byte for byte.
#[test]
fn the_readme_example_is_the_tested_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let fixture = std::fs::read_to_string(root.join("fixtures/skillcat.toml")).unwrap();
    let start = readme
        .find("```toml\n# skillcat.toml:")
        .expect("README has the full example")
        + "```toml\n".len();
    let len = readme[start..].find("```").unwrap();
    assert_eq!(&readme[start..start + len], fixture);
}

/// `[install] audit` and `[runtime] audit`: their values, their errors naming the key, and a
/// project's file that may tighten the user's policy but never loosen it.
#[test]
fn the_audit_keys_read_and_narrow() {
    use skillcat::audit::Policy;
    use skillcat::config::RuntimeAudit;
    let tmp = tempfile::tempdir().unwrap();
    let env = Environment {
        cwd: tmp.path().to_path_buf(),
        home: Some(tmp.path().to_path_buf()),
    };
    let load = |text: &str| {
        let p = tmp.path().join("c.toml");
        std::fs::write(&p, text).unwrap();
        Config::load(&p, &env)
    };
    let c = load("[install]\naudit = \"warn\"\n[runtime]\naudit = \"withhold\"\n").unwrap();
    assert_eq!(
        (c.install.audit, c.runtime.audit),
        (Policy::Warn, RuntimeAudit::Withhold)
    );
    let c = load("").unwrap();
    assert_eq!(
        (c.install.audit, c.runtime.audit),
        (Policy::Refuse, RuntimeAudit::Off)
    );
    let e = load("[install]\naudit = \"ignore\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("install.audit") && e.contains("\"refuse\" or \"warn\""),
        "{e}"
    );
    let e = load("[runtime]\naudit = \"on\"\n").unwrap_err().to_string();
    assert!(
        e.contains("runtime.audit") && e.contains("\"off\" or \"withhold\""),
        "{e}"
    );
    // A project may ask for more than the user; it cannot waive what the user asks.
    let user_strict = load("[runtime]\naudit = \"withhold\"\n").unwrap();
    let user_lax = load("[install]\naudit = \"warn\"\n").unwrap();
    let project_lax = load("[install]\naudit = \"warn\"\n[runtime]\naudit = \"off\"\n").unwrap();
    let n = project_lax
        .clone()
        .narrowed_by(&user_strict, &env, tmp.path());
    assert_eq!(
        (n.install.audit, n.runtime.audit),
        (Policy::Refuse, RuntimeAudit::Withhold)
    );
    let project_strict = load("[runtime]\naudit = \"withhold\"\n").unwrap();
    let n = project_strict.narrowed_by(&user_lax, &env, tmp.path());
    assert_eq!(
        (n.install.audit, n.runtime.audit),
        (Policy::Refuse, RuntimeAudit::Withhold)
    );
    let n = project_lax.narrowed_by(&user_lax, &env, tmp.path());
    assert_eq!(n.install.audit, Policy::Warn);
}
