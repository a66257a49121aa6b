use super::*;

/// A marketplace of the anthropics/skills shape (written for this test): two plugins over one
/// `skills/` folder, `"source": "./"`, `"strict": false`.
const SHAPE: &str = r#"{
  "name": "team-skills",
  "owner": {"name": "Team", "email": "team@example.com"},
  "metadata": {"description": "d", "version": "1.0.0"},
  "plugins": [
    {"name": "document-skills", "description": "Docs", "source": "./", "strict": false,
     "skills": ["./skills/pdf", "./skills/xlsx"]},
    {"name": "example-skills", "source": "./", "strict": false, "skills": ["./skills/brand"]},
    {"name": "remote", "source": {"source": "github", "repo": "o/r", "ref": "v1",
     "sha": "0123456789abcdef0123456789abcdef01234567"}},
    {"name": "sub", "source": {"source": "git-subdir", "url": "https://h/o/r.git", "path": "plugins/x"}}
  ]
}"#;

#[test]
fn reads_the_anthropics_shape_and_git_sources() {
    let m = parse(SHAPE.as_bytes()).unwrap();
    assert_eq!(m.name, "team-skills");
    assert_eq!(m.owner.as_deref(), Some("Team"));
    let names: Vec<_> = m.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["document-skills", "example-skills", "remote", "sub"]
    );
    assert_eq!(m.plugins[0].source, PluginSource::Path(String::new()));
    assert_eq!(
        m.plugins[0].skills.as_deref(),
        Some(&["skills/pdf".to_string(), "skills/xlsx".to_string()][..])
    );
    assert_eq!(
        m.plugins[2].source,
        PluginSource::Git {
            url: "https://github.com/o/r.git".into(),
            subpath: None,
            git_ref: Some("v1".into()),
            sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
        }
    );
    assert!(matches!(
        &m.plugins[3].source,
        PluginSource::Git { subpath: Some(p), .. } if p == "plugins/x"
    ));
    assert_eq!(m.plugins[3].skills, None);
}

#[test]
fn plugin_root_prefixes_bare_folders_only() {
    let m = parse(
        br#"{"name":"m","metadata":{"pluginRoot":"./plugins"},
        "plugins":[{"name":"a","source":"a"},{"name":"b","source":"./b"}]}"#,
    )
    .unwrap();
    assert_eq!(m.plugins[0].source, PluginSource::Path("plugins/a".into()));
    assert_eq!(m.plugins[1].source, PluginSource::Path("b".into()));
}

/// Hostile and broken catalogs: each is refused, naming the problem.
#[test]
fn hostile_catalogs_are_refused_precisely() {
    let big = format!(
        r#"{{"name":"m","plugins":[{}]}}"#,
        vec![r#"{"name":"p","source":"./"}"#; MAX_PLUGINS + 1].join(",")
    );
    let many_skills = format!(
        r#"{{"name":"m","plugins":[{{"name":"p","source":"./","skills":[{}]}}]}}"#,
        (0..=MAX_SKILLS)
            .map(|i| format!("\"./s{i}\""))
            .collect::<Vec<_>>()
            .join(",")
    );
    let huge = format!(
        r#"{{"name":"m","plugins":[],"pad":"{}"}}"#,
        "x".repeat(MAX_FILE)
    );
    let remote = format!(
        r#"{{"name":"m","plugins":[{}]}}"#,
        (0..=MAX_GIT_PLUGINS)
            .map(|i| format!(r#"{{"name":"p{i}","source":{{"source":"github","repo":"o/r{i}"}}}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let long_name = format!(r#"{{"name":"{}","plugins":[]}}"#, "a".repeat(MAX_NAME + 1));
    let cases: &[(&str, &str)] = &[
        ("[]", "not a JSON object"),
        ("{", "not JSON"),
        (r#"{"plugins":[]}"#, "name: missing"),
        (r#"{"name":"m"}"#, "plugins: missing"),
        (&big, "the limit is 1000"),
        (&many_skills, "skills: 1001 entries"),
        (&huge, "the limit is 1048576"),
        (&long_name, "longer than 128"),
        (&remote, "65 plugins in other repositories; the limit is 64"),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"url","url":"http://h/r.git"}}]}"#,
            "is not an https://",
        ),
        (r#"{"name":"my market","plugins":[]}"#, "not kebab-case"),
        (r#"{"name":"../up","plugins":[]}"#, "not kebab-case"),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":"../outside"}]}"#,
            "source \"../outside\"",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":"./a/../../b"}]}"#,
            "source \"./a/../../b\"",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":"/etc"}]}"#,
            "not a relative path",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":".\\x"}]}"#,
            "not a relative path",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":"./","skills":["../../x"]}]}"#,
            "skills: \"../../x\"",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":"./","skills":["./a","a/"]}]}"#,
            "listed twice",
        ),
        (
            r#"{"name":"m","metadata":{"pluginRoot":"../x"},"plugins":[]}"#,
            "metadata.pluginRoot",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":"./"},{"name":"P","source":"./x"}]}"#,
            "the plugin name \"P\" is used twice",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p/q","source":"./"}]}"#,
            "plugins[0].name",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"npm","package":"x"}}]}"#,
            "\"npm\" plugin sources are not read",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"svn","url":"x"}}]}"#,
            "unknown kind \"svn\"",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"url","url":"file:///etc"}}]}"#,
            "is not an https://",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"url","url":"ext::sh -c x"}}]}"#,
            "is not an https://",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"github","repo":"o/r/x"}}]}"#,
            "is not OWNER/REPO",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"github","repo":"o/r","sha":"abc"}}]}"#,
            "is not a commit",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"github","repo":"o/r","ref":"--upload-pack=x"}}]}"#,
            "is not a branch or tag",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":{"source":"git-subdir","url":"https://h/r.git","path":"../x"}}]}"#,
            "path: \"../x\"",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p","source":7}]}"#,
            "neither a path",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"p"}]}"#,
            "source: missing",
        ),
    ];
    for (json, want) in cases {
        let err = parse(json.as_bytes()).expect_err(&json[..json.len().min(80)]);
        assert!(
            err.to_string().contains(want),
            "{}: {err} (wanted {want:?})",
            &json[..json.len().min(80)]
        );
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let err = parse(
        br#"{"name":"m","plugins":[{"name":"a","source":"../x"},{"name":"b","source":{"source":"npm"}}]}"#,
    )
    .unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
}

#[test]
fn reserved_names_get_claude_codes_reason() {
    for name in [
        "anthropic-agent-skills",
        "Claude-Plugins-Official",
        "healthcare",
    ] {
        let why = check_reserved(name).unwrap_err().to_string();
        assert!(
            why.contains("reserved for official Anthropic marketplaces"),
            "{why}"
        );
    }
    assert!(
        check_reserved("skills-dir")
            .unwrap_err()
            .to_string()
            .contains("reserved")
    );
    assert!(
        check_reserved("the-official-claude-store")
            .unwrap_err()
            .to_string()
            .contains("impersonates")
    );
    check_reserved("team-skills").unwrap();
    // Reading is not claiming: a catalog under a reserved name (anthropics/skills' own) parses.
    parse(br#"{"name":"anthropic-agent-skills","plugins":[]}"#).unwrap();
}

fn write(dir: &std::path::Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn skill(dir: &std::path::Path, root: &str) {
    write(
        dir,
        &format!("{root}/SKILL.md"),
        &format!(
            "---\nname: {}\ndescription: d\n---\n",
            crate::path::base_name(root)
        ),
    );
}

#[tokio::test]
async fn a_directory_marketplace_lists_its_plugins_skills() {
    let dir = tempfile::tempdir().unwrap();
    for s in [
        "skills/pdf",
        "skills/xlsx",
        "skills/brand",
        "plugins/p/skills/deploy",
        "stray",
    ] {
        skill(dir.path(), s);
    }
    write(
        dir.path(),
        MARKETPLACE_FILE,
        r#"{"name":"m","plugins":[
          {"name":"document-skills","source":"./","strict":false,"skills":["./skills/pdf","./skills/xlsx"]},
          {"name":"example-skills","source":"./","strict":false,"skills":["./skills/brand","./skills/pdf"]},
          {"name":"p","source":"./plugins/p"}]}"#,
    );
    let src = crate::open(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(
        src.list().await.unwrap(),
        [
            "skills/pdf",
            "skills/xlsx",
            "skills/brand",
            "plugins/p/skills/deploy"
        ]
    );
    let rec = src.record("skills/pdf").await.unwrap();
    assert_eq!(rec.plugins, ["document-skills", "example-skills"]);
    assert_eq!(
        src.record("plugins/p/skills/deploy").await.unwrap().plugins,
        ["p"]
    );
    let found = skillcat_core::source::discover(&*src).await.unwrap();
    assert_eq!(found.skills.len(), 4, "{:?}", found.faults);

    // A listed path without a skill is an error naming the plugin and the path.
    write(
        dir.path(),
        MARKETPLACE_FILE,
        r#"{"name":"m","plugins":[{"name":"a","source":"./","skills":["./skills/gone"]}]}"#,
    );
    let err = crate::open(dir.path().to_str().unwrap())
        .unwrap()
        .list()
        .await
        .unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("marketplace.json")
            && shown.contains("plugin \"a\": skill path \"./skills/gone\""),
        "{shown}"
    );
    assert_eq!(err.kind(), skillcat_core::error::ErrorKind::Invalid);
}

#[tokio::test]
async fn an_export_reads_back_as_the_same_skills_and_refuses_reserved_names() {
    let tmp = tempfile::tempdir().unwrap();
    let src_dir = tmp.path().join("src");
    skill(&src_dir, "pdf");
    skill(&src_dir, "xlsx");
    write(&src_dir, "pdf/scripts/run.sh", "#!/bin/sh\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let run = src_dir.join("pdf/scripts/run.sh");
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write(&src_dir, "pdf/stale.md", "old\n");
    let src = crate::open(src_dir.to_str().unwrap()).unwrap();
    let found = skillcat_core::source::discover_with(&*src, skillcat_core::source::Detail::Files)
        .await
        .unwrap();
    let out = tmp.path().join("out");
    let opts = |name: &str, force: bool| ExportOptions {
        name: name.into(),
        owner: None,
        description: None,
        force,
    };

    let err = export(&*src, &found, &out, &opts("anthropic-agent-skills", false))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("reserved for official Anthropic"),
        "{err}"
    );
    assert!(!out.exists());

    let done = export(&*src, &found, &out, &opts("team", false))
        .await
        .unwrap();
    assert_eq!(done.plugins, 2);
    // A description Claude Code shows (and its validator asks for), by default how many
    // skills and whose.
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(MARKETPLACE_FILE)).unwrap()).unwrap();
    assert_eq!(
        catalog["metadata"]["description"],
        "2 Agent Skills of team, one plugin each"
    );
    let back = crate::open(out.to_str().unwrap()).unwrap();
    assert_eq!(
        back.list().await.unwrap(),
        ["plugins/pdf/skills/pdf", "plugins/xlsx/skills/xlsx"]
    );
    for (root, name) in [
        ("plugins/pdf/skills/pdf", "pdf"),
        ("plugins/xlsx/skills/xlsx", "xlsx"),
    ] {
        assert_eq!(back.record(root).await.unwrap().plugins, [name]);
        use skillcat_core::source::SourceExt as _;
        let a = src.manifest(name, name, "").await.unwrap();
        let b = back.manifest(root, name, "").await.unwrap();
        assert_eq!(a.digest, b.digest, "{name}");
    }

    // Not over a folder that has something, unless forced; forced, a file gone from the skill
    // is gone from its plugin.
    assert!(
        export(&*src, &found, &out, &opts("team", false))
            .await
            .is_err()
    );
    std::fs::remove_file(src_dir.join("pdf/stale.md")).unwrap();
    let found = skillcat_core::source::discover_with(&*src, skillcat_core::source::Detail::Files)
        .await
        .unwrap();
    export(&*src, &found, &out, &opts("team", true))
        .await
        .unwrap();
    assert!(!out.join("plugins/pdf/skills/pdf/stale.md").exists());
    assert!(out.join("plugins/pdf/skills/pdf/scripts/run.sh").is_file());
}

#[tokio::test]
async fn a_plugins_own_manifest_adds_its_skill_folders_unless_not_strict() {
    let dir = tempfile::tempdir().unwrap();
    for s in ["p/skills/a", "p/extra/b", "q/skills/c"] {
        skill(dir.path(), s);
    }
    write(
        dir.path(),
        "p/.claude-plugin/plugin.json",
        r#"{"name":"p","skills":["./extra/b"]}"#,
    );
    write(
        dir.path(),
        "q/.claude-plugin/plugin.json",
        r#"{"name":"q","skills":"./nothing"}"#,
    );
    write(
        dir.path(),
        MARKETPLACE_FILE,
        r#"{"name":"m","plugins":[{"name":"p","source":"./p"},{"name":"q","source":"./q","strict":false}]}"#,
    );
    let src = crate::open(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(
        src.list().await.unwrap(),
        ["p/extra/b", "p/skills/a", "q/skills/c"]
    );
    // Strict, q's manifest names a folder with no skill: said.
    write(
        dir.path(),
        MARKETPLACE_FILE,
        r#"{"name":"m","plugins":[{"name":"q","source":"./q"}]}"#,
    );
    let err = crate::open(dir.path().to_str().unwrap())
        .unwrap()
        .list()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("skill path \"./nothing\""),
        "{err}"
    );
    // A folder that looks like a plugin held elsewhere (`@NAME/…`) is refused.
    skill(dir.path(), "@ops/skills/z");
    write(
        dir.path(),
        MARKETPLACE_FILE,
        r#"{"name":"m","plugins":[{"name":"z","source":"./@ops"}]}"#,
    );
    let err = crate::open(dir.path().to_str().unwrap())
        .unwrap()
        .list()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("starts with '@'"), "{err}");
    assert!(parse_plugin_skills(br#"{"skills":["../x"]}"#).is_err());
    assert!(parse_plugin_skills(b"[").is_err());
}
