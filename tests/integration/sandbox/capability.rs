//! Capability intersection against real directories and symbolic links: one named case per rule.
//! (The value rules — string vs list, network, timeout, trust — are table-tested in
//! `crates/skillcat-core/src/capability.rs`; here the same rules are checked through a parsed SKILL.md.)
//!
//! Origin: step 5 (issue 6: catalog, configuration, capabilities and matching).

use std::path::{Path, PathBuf};

use skillcat::capability::{
    Access, Capabilities, Ceiling, Context, Trust, intersect, intersect_detailed, resolve,
};
use skillcat::document::parse_document;

/// ```text
/// tmp/
/// ├── proj/            ← the working directory
/// │   ├── data/f.txt
/// │   ├── out/
/// │   ├── link_in  → proj/data
/// │   ├── link_out → outside
/// │   ├── dangling → outside/new (missing)
/// │   └── loop     → proj/loop
/// ├── proj-evil/       ← shares a string prefix with proj
/// ├── outside/secret
/// └── home/x/
/// ```
struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Tree {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for d in ["proj/data", "proj/out", "proj-evil", "outside", "home/x"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("proj/data/f.txt"), "f").unwrap();
        std::fs::write(root.join("outside/secret"), "s").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("proj/data"), root.join("proj/link_in")).unwrap();
            std::os::unix::fs::symlink(root.join("outside"), root.join("proj/link_out")).unwrap();
            std::os::unix::fs::symlink(root.join("outside/new"), root.join("proj/dangling"))
                .unwrap();
            std::os::unix::fs::symlink(root.join("proj/loop"), root.join("proj/loop")).unwrap();
        }
        Tree { _tmp: tmp, root }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn ctx(&self) -> Context {
        Context {
            cwd: self.p("proj"),
            home: Some(self.p("home")),
            core_trusted_source: false,
        }
    }
}

fn ceiling(read: &[&str], write: &[&str]) -> Ceiling {
    Ceiling {
        fs_read: read.iter().map(|s| s.to_string()).collect(),
        fs_write: write.iter().map(|s| s.to_string()).collect(),
        ..Ceiling::default()
    }
}

fn reads(paths: &[&str]) -> Capabilities {
    Capabilities {
        fs_read: paths.iter().map(|s| s.to_string()).collect(),
        ..Capabilities::default()
    }
}

#[cfg(unix)]
#[test]
fn read_paths_under_a_ceiling_of_dot() {
    let t = Tree::new();
    let c = ceiling(&["."], &[]);
    for (name, requested, granted) in [
        ("system directory outside", "/etc", None),
        ("root", "/", None),
        ("climbs out through data", "./data/../..", None),
        ("climbs out to a sibling", "../outside/secret", None),
        ("sibling sharing a string prefix", "../proj-evil", None),
        ("home outside the ceiling", "~/x", None),
        ("another user's home", "~root", None),
        ("link inside pointing outside", "link_out", None),
        (
            "file behind a link pointing outside",
            "link_out/secret",
            None,
        ),
        (
            "missing file behind a link pointing outside",
            "link_out/new",
            None,
        ),
        ("the ceiling root itself", ".", Some("proj")),
        ("climbs and comes back", "data/..", Some("proj")),
        ("plain relative", "data", Some("proj/data")),
        ("relative with ./", "./data/f.txt", Some("proj/data/f.txt")),
        ("up and back in", "../proj/data", Some("proj/data")),
        ("absolute inside", "PROJ/data", Some("proj/data")),
        ("link inside pointing inside", "link_in", Some("proj/data")),
        (
            "file behind an inside link",
            "link_in/f.txt",
            Some("proj/data/f.txt"),
        ),
        (
            "missing path inside",
            "missing/new.txt",
            Some("proj/missing/new.txt"),
        ),
    ] {
        let requested = requested.replace("PROJ", &t.p("proj").display().to_string());
        let g = intersect(&reads(&[&requested]), &c, &t.ctx());
        let want: Vec<PathBuf> = granted.map(|g| t.p(g)).into_iter().collect();
        assert_eq!(g.fs_read, want, "{name}: {requested}");
        assert!(g.fs_write.is_empty(), "{name}");
    }
}

#[cfg(unix)]
#[test]
fn dropped_paths_are_reported() {
    let t = Tree::new();
    let caps = Capabilities {
        fs_read: vec!["/etc".into(), "data".into(), "~nobody/x".into()],
        fs_write: vec!["data".into()],
        ..Capabilities::default()
    };
    let r = intersect_detailed(&caps, &ceiling(&["."], &[]), &t.ctx());
    assert_eq!(r.grant.fs_read, [t.p("proj/data")]);
    let dropped: Vec<(Access, &str, Option<&Path>)> = r
        .dropped
        .iter()
        .map(|d| (d.access, d.requested.as_str(), d.expanded.as_deref()))
        .collect();
    assert_eq!(
        dropped,
        [
            (Access::Read, "/etc", Some(Path::new("/etc"))),
            (Access::Read, "~nobody/x", None),
            (Access::Write, "data", Some(t.p("proj/data").as_path())),
        ]
    );
}

#[cfg(unix)]
#[test]
fn home_paths() {
    let t = Tree::new();
    let g = intersect(
        &reads(&["~/x", "~", "~/../outside"]),
        &ceiling(&["~/x"], &[]),
        &t.ctx(),
    );
    assert_eq!(g.fs_read, [t.p("home/x")]);
    // Without a home, `~` expands to nothing on either side.
    let ctx = Context {
        home: None,
        ..t.ctx()
    };
    assert!(
        intersect(&reads(&["~/x"]), &ceiling(&["~"], &[]), &ctx)
            .fs_read
            .is_empty()
    );
    assert!(
        intersect(&reads(&["/etc"]), &ceiling(&["~"], &[]), &ctx)
            .fs_read
            .is_empty()
    );
}

#[cfg(unix)]
#[test]
fn write_paths_need_a_write_root() {
    let t = Tree::new();
    let caps = Capabilities {
        fs_read: vec!["out/log".into()],
        fs_write: vec![
            "out/new".into(),
            "data".into(),
            "link_out".into(),
            "./out".into(),
        ],
        ..Capabilities::default()
    };
    // No write roots: no writes at all.
    let g = intersect(&caps, &ceiling(&["."], &[]), &t.ctx());
    assert!(g.fs_write.is_empty());
    // A write root admits writes beneath it (and reads: writable implies readable).
    let g = intersect(&caps, &ceiling(&[], &["./out"]), &t.ctx());
    assert_eq!(g.fs_write, [t.p("proj/out/new"), t.p("proj/out")]);
    assert_eq!(g.fs_read, [t.p("proj/out/log")]);
    // A read root never admits a write.
    let g = intersect(&caps, &ceiling(&["."], &["/nonexistent-root"]), &t.ctx());
    assert!(g.fs_write.is_empty());
}

#[cfg(unix)]
#[test]
fn ceiling_roots_are_expanded_too() {
    let t = Tree::new();
    // A ceiling given through a link: the same canonical directory.
    let g = intersect(
        &reads(&["data/f.txt", "link_in"]),
        &ceiling(&["link_in"], &[]),
        &t.ctx(),
    );
    assert_eq!(g.fs_read, [t.p("proj/data/f.txt"), t.p("proj/data")]);
    // A ceiling with `..`: the parent of the working directory, which holds everything here.
    let g = intersect(
        &reads(&["../outside/secret"]),
        &ceiling(&[".."], &[]),
        &t.ctx(),
    );
    assert_eq!(g.fs_read, [t.p("outside/secret")]);
    // A dangling link as a root grants nothing.
    assert!(
        intersect(
            &reads(&["dangling"]),
            &ceiling(&["dangling"], &[]),
            &t.ctx()
        )
        .fs_read
        .is_empty()
    );
    // Duplicates after expansion are granted once.
    let g = intersect(
        &reads(&["data", "./data", "link_in", "data/"]),
        &ceiling(&["."], &[]),
        &t.ctx(),
    );
    assert_eq!(g.fs_read, [t.p("proj/data")]);
}

#[cfg(unix)]
#[test]
fn resolve_follows_links_in_the_existing_prefix() {
    let t = Tree::new();
    let home = Some(t.p("home"));
    let cwd = t.p("proj");
    for (input, want) in [
        ("link_out/secret", "outside/secret"),
        ("link_out/a/b", "outside/a/b"),
        ("link_in/../f", "proj/f"),
        ("~/x/../x", "home/x"),
    ] {
        assert_eq!(
            resolve(input, &cwd, home.as_deref()),
            Some(t.p(want)),
            "{input}"
        );
    }
}

fn caps_of(frontmatter: &str) -> Capabilities {
    let text = format!("---\nname: s\ndescription: d\n{frontmatter}---\nbody\n");
    let doc = parse_document(text.as_bytes()).unwrap();
    Capabilities::from_frontmatter(&doc.frontmatter)
}

#[test]
fn declared_in_a_skill_md() {
    for (frontmatter, read, write, network, timeout, trust) in [
        ("", vec![], vec![], false, 60, Trust::External),
        (
            "fs_read: data\n",
            vec!["data"],
            vec![],
            false,
            60,
            Trust::External,
        ),
        (
            "fs_read: [a, \"b c\"]\nfs_write: out\n",
            vec!["a", "b c"],
            vec!["out"],
            false,
            60,
            Trust::External,
        ),
        (
            "fs_read:\n  - a\n  - ~/b\n",
            vec!["a", "~/b"],
            vec![],
            false,
            60,
            Trust::External,
        ),
        (
            "fs_read:\n  k: v\n",
            vec![],
            vec![],
            false,
            60,
            Trust::External,
        ),
        (
            "network: true\ntimeout: 30\ntrust: core\n",
            vec![],
            vec![],
            true,
            30,
            Trust::Core,
        ),
        (
            "network: yes\ntimeout: 0\ntrust: admin\n",
            vec![],
            vec![],
            false,
            60,
            Trust::External,
        ),
        (
            "network: \"true\"\ntimeout: -5\n",
            vec![],
            vec![],
            true,
            60,
            Trust::External,
        ),
        ("timeout: abc\n", vec![], vec![], false, 60, Trust::External),
        (
            "timeout: 999\n",
            vec![],
            vec![],
            false,
            999,
            Trust::External,
        ),
        (
            "timeout: [30]\nnetwork: [true]\n",
            vec![],
            vec![],
            false,
            60,
            Trust::External,
        ),
    ] {
        let c = caps_of(frontmatter);
        assert_eq!(c.fs_read, read, "{frontmatter:?}");
        assert_eq!(c.fs_write, write, "{frontmatter:?}");
        assert_eq!(c.network.is_all(), network, "{frontmatter:?}");
        assert_eq!(c.timeout_secs(), timeout, "{frontmatter:?}");
        assert_eq!(c.trust, trust, "{frontmatter:?}");
    }
}

#[test]
fn declared_timeout_against_the_ceiling() {
    let ctx = Context {
        cwd: "/p".into(),
        home: None,
        core_trusted_source: false,
    };
    let default = Ceiling::default();
    let wide = Ceiling {
        timeout: 300,
        max_timeout: 300,
        ..Ceiling::default()
    };
    for (declared, c, want) in [
        ("0", &default, 60),
        ("-5", &default, 60),
        ("abc", &default, 60),
        ("999", &default, 60),
        ("999", &wide, 300),
        ("5", &wide, 5),
        ("abc", &wide, 60),
    ] {
        let g = intersect(&caps_of(&format!("timeout: {declared}\n")), c, &ctx);
        assert_eq!(g.timeout.as_secs(), want, "{declared} vs {}", c.timeout);
    }
}

#[test]
fn no_configuration_grants_little() {
    let ctx = Context {
        cwd: "/nonexistent/p".into(),
        home: None,
        core_trusted_source: true,
    };
    let caps =
        caps_of("fs_read: [., /etc]\nfs_write: .\nnetwork: true\ntimeout: 500\ntrust: core\n");
    let g = intersect(&caps, &Ceiling::default(), &ctx);
    assert_eq!(g.fs_read, [PathBuf::from("/nonexistent/p")]);
    assert!(g.fs_write.is_empty());
    assert!(g.network.is_off());
    assert_eq!(g.timeout.as_secs(), 60);
    // Core only because the source is core-trusted.
    assert!(g.is_core());
    let g = intersect(
        &caps,
        &Ceiling::default(),
        &Context {
            core_trusted_source: false,
            ..ctx
        },
    );
    assert!(!g.is_core());
}

/// The directories a context carries come from the process's environment, read once by the
/// facade's `context::Env` (the capability rules read no variable themselves).
#[test]
fn context_from_env() {
    let env = skillcat::context::Env::from_process();
    let ctx = Context {
        cwd: env.cwd.clone().unwrap(),
        home: env.home.clone(),
        core_trusted_source: false,
    };
    assert!(ctx.cwd.is_absolute());
    assert!(!ctx.core_trusted_source);
}
