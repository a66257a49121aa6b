//! Scripts that can reach the user's input, through the real binary: `skillcat run`'s
//! `--allow-read`, `--allow-write` and `--allow-net` within the configured ceiling, relative
//! arguments that name the caller's files, the hint after a sandbox denial, the `metadata:`
//! spelling of capabilities, `[scripts.by_extension]`, and the README's example as written.
//!
//! Origin: step 9 (issue 14: the first hour of a real user).

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::bin::{Out, Skillcat, manifest_dir};
use crate::support::{copy_dir, sandbox_tempdir, write_skill};

/// A user's world: a home without configuration, a working directory holding the user's files,
/// and a directory of skills elsewhere. All reachable by the sandbox uid when tests run as root.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
    skills: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = sandbox_tempdir("skillcat-runflags-");
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (home, cwd, skills) = (root.join("home"), root.join("cwd"), root.join("skills"));
        for d in [&home, &cwd, &skills] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(cwd.join("data.txt"), "hello from data\n").unwrap();
        std::fs::write(cwd.join("secret.txt"), "not granted\n").unwrap();
        World {
            _dir: dir,
            home,
            cwd,
            skills,
        }
    }

    /// `skillcat ARGS` in the working directory, with the world's home.
    #[track_caller]
    fn run(&self, args: &[&str]) -> Out {
        self.run_in(&self.cwd, args)
    }

    #[track_caller]
    fn run_in(&self, cwd: &Path, args: &[&str]) -> Out {
        Skillcat::new(args)
            .cwd(cwd)
            .env("HOME", &self.home)
            .env_remove("SKILLCAT_CONFIG")
            .deadline(Duration::from_secs(60))
            .run()
    }

    /// Writes a configuration file named `name` into the home; its path, for `--config`.
    fn config(&self, name: &str, text: &str) -> String {
        let path = self.home.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    }

    fn skills(&self) -> &str {
        self.skills.to_str().unwrap()
    }

    /// `skillcat [--config CONFIG] run SKILLS SKILL SCRIPT FLAGS… [--args ARGS]`.
    #[track_caller]
    fn script(
        &self,
        config: Option<&str>,
        skill: &str,
        script: &str,
        flags: &[&str],
        args: Option<&str>,
    ) -> Out {
        let mut a = Vec::new();
        if let Some(c) = config {
            a.extend_from_slice(&["--config", c]);
        }
        a.extend_from_slice(&["run", self.skills(), skill, script]);
        a.extend_from_slice(flags);
        if let Some(args) = args {
            a.extend_from_slice(&["--args", args]);
        }
        self.run(&a)
    }

    /// A skill that declares nothing: `show` prints its arguments' files, `where` its working
    /// directory and home, `write` writes its second argument into the file named first.
    fn reader(&self) {
        write_skill(
            &self.skills.join("reader"),
            "---\nname: reader\ndescription: Reads files.\n---\nBody\n",
            &[
                (
                    "scripts/show.sh",
                    "#!/bin/sh\n# Print files.\ncat \"$@\"\n",
                    true,
                ),
                (
                    "scripts/where.sh",
                    "#!/bin/sh\n# Say where it runs.\npwd\necho \"$HOME\"\n",
                    true,
                ),
                (
                    "scripts/write.sh",
                    "#!/bin/sh\n# Write a file.\necho \"$2\" > \"$1\"\n",
                    true,
                ),
                (
                    "scripts/net.py",
                    "#!/usr/bin/env python3\n# Open a TCP socket.\nimport socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM).close()\nprint('socket ok')\n",
                    true,
                ),
            ],
        );
    }
}

#[test]
fn a_relative_argument_names_the_callers_file_once_the_run_may_read_it() {
    let w = World::new();
    w.reader();
    let cwd = w.cwd.display().to_string();

    // Nothing granted: the script starts in its work directory, where `data.txt` is not; the
    // failure says which flag makes the name mean the user's file.
    let o = w.script(None, "reader", "show", &[], Some("data.txt"));
    o.code(1).says(&[
        "E_SKILL_SCRIPT_FAILED",
        "hint: data.txt is in your working directory",
        "Run with --allow-read data.txt",
    ]);
    assert!(o.out().contains("No such file or directory"), "{}", o.out());
    let o = w.script(None, "reader", "where", &[], None);
    o.code(0);
    let lines: Vec<&str> = o.out().lines().collect();
    assert!(lines[0].ends_with("/work"), "{lines:?}");
    assert_ne!(lines[0], cwd);

    // Granted: it starts in the caller's directory and reads the file there.
    let data = ["--allow-read", "data.txt"];
    let o = w.script(None, "reader", "show", &data, Some("data.txt"));
    o.code(0);
    assert_eq!(o.out(), "hello from data\n");
    let o = w.script(None, "reader", "where", &data, None);
    o.code(0);
    let lines: Vec<&str> = o.out().lines().collect();
    assert_eq!(lines[0], cwd, "starts where the user is");
    assert!(lines[1].ends_with("/work"), "HOME stays the work directory");

    // A file beside it is still not granted, and the hint names it and the flag and key.
    let o = w.script(None, "reader", "show", &data, Some("secret.txt"));
    o.code(1).says(&[
        &format!("hint: the sandbox kept the script from {cwd}/secret.txt"),
        "run with --allow-read secret.txt",
        "`skillcat.fs_read`",
    ]);
    // Refused by Landlock, or (in the run's own root, which holds only its grants) not there.
    assert!(
        o.out().contains("Permission denied") || o.out().contains("No such file or directory"),
        "{}",
        o.out()
    );
    assert!(!o.out().contains("not granted"), "{}", o.out());
    // …and an absolute path outside the working directory and the grant is named, but no
    // grant of it is suggested (step 26: a hint's grants come from an allow-list; the script's
    // output could name any path).
    let o = w.script(
        None,
        "reader",
        "show",
        &["--allow-read", "."],
        Some("/etc/hostname"),
    );
    o.code(1).says(&[
        "hint: the sandbox kept the script from /etc/hostname",
        "skillcat suggests no change for it",
    ]);
    assert!(
        !o.stderr.contains("--allow-read /etc/hostname"),
        "{}",
        o.stderr
    );
}

#[test]
fn flags_the_ceiling_does_not_allow_are_usage_errors_and_nothing_runs() {
    let w = World::new();
    w.reader();
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["--allow-read", "/etc/hostname"],
            &[
                "--allow-read /etc/hostname: /etc/hostname is outside the configured ceiling, which wins",
                "it allows reading under",
                "`fs_read` under [sandbox]",
            ],
        ),
        (
            &["--allow-write", "."],
            &[
                "--allow-write .:",
                "it allows writing nowhere",
                "`fs_write`",
            ],
        ),
        (
            &["--allow-net"],
            &[
                "--allow-net: the configured ceiling allows no network",
                "network = true",
            ],
        ),
        (
            &["--allow-read", "missing.txt"],
            &["--allow-read missing.txt:", "does not exist"],
        ),
        (&["--allow-read", "~nobody/x"], &["cannot be resolved"]),
    ];
    for (flags, says) in cases {
        let o = w.script(None, "reader", "write", flags, Some("marker.txt ran"));
        o.code(2).says(says);
        assert!(o.out().is_empty(), "{flags:?}: {}", o.out());
    }
    assert!(!w.cwd.join("marker.txt").exists());

    // Started in the home directory, the default ceiling `.` allows nothing, and says why.
    std::fs::write(w.home.join("notes.txt"), "mine\n").unwrap();
    let o = w.run_in(
        &w.home,
        &[
            "run",
            w.skills(),
            "reader",
            "show",
            "--allow-read",
            "notes.txt",
        ],
    );
    o.code(2).says(&[
        "it allows reading nowhere (`.` allows nothing when the working directory is / or your \
         home directory",
    ]);
}

#[test]
fn writes_and_the_network_within_a_configured_ceiling() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    w.reader();
    let out = w.cwd.join("out");
    std::fs::create_dir(&out).unwrap();
    // The sandbox uid of a root host must be able to create files there.
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let config = w.config(
        "ceiling.toml",
        "sources = []\n\n[sandbox]\nfs_write = [\"out\"]\nnetwork = true\n",
    );
    let run = |script: &str, flags: &[&str], args: Option<&str>| {
        w.script(Some(&config), "reader", script, flags, args)
    };

    // Readable but not writable: the hint names the directory to grant for writing.
    let o = run("write", &["--allow-read", "."], Some("out/result.txt done"));
    o.code(1).says(&[
        &format!(
            "hint: the sandbox let the script read {}/out/result.txt but not write it",
            w.cwd.display()
        ),
        "run with --allow-write out,",
        "`skillcat.fs_write`",
    ]);
    assert!(!out.join("result.txt").exists());
    let o = run(
        "write",
        &["--allow-write", "out"],
        Some("out/result.txt done"),
    );
    o.code(0);
    assert_eq!(
        std::fs::read_to_string(out.join("result.txt")).unwrap(),
        "done\n"
    );
    // Writing beside the granted directory is still refused.
    let o = run("write", &["--allow-write", "out"], Some("beside.txt x"));
    o.code(1);
    assert!(!w.cwd.join("beside.txt").exists());

    // The network: refused unless the flag asks for it (the ceiling allows it).
    let o = run("net", &[], None);
    o.code(1);
    assert!(
        o.out().contains("Operation not permitted") || o.out().contains("PermissionError"),
        "{}",
        o.out()
    );
    let o = run("net", &["--allow-net"], None);
    o.code(0);
    assert_eq!(o.out(), "socket ok\n");
}

#[test]
fn the_metadata_spelling_grants_and_stays_valid_for_validators() {
    let w = World::new();
    std::fs::create_dir(w.cwd.join("notes")).unwrap();
    std::fs::write(w.cwd.join("notes/n.txt"), "a note\n").unwrap();
    let show = (
        "scripts/show.sh",
        "#!/bin/sh\n# Print files.\ncat \"$@\"\n",
        true,
    );
    write_skill(
        &w.skills.join("portable"),
        "---\nname: portable\ndescription: Reads notes.\nmetadata:\n  skillcat.fs_read: \"notes\"\n  author: someone\n---\nBody\n",
        &[show],
    );
    write_skill(
        &w.skills.join("legacy"),
        "---\nname: legacy\ndescription: Reads notes.\nfs_read: notes\n---\nBody\n",
        &[show],
    );
    let portable = w.skills.join("portable");
    w.run(&["validate", portable.to_str().unwrap()])
        .code(0)
        .says(&[]);
    let legacy = w.skills.join("legacy");
    w.run(&["validate", legacy.to_str().unwrap()])
        .code(1)
        .says(&["Unexpected fields in frontmatter: fs_read"]);
    // Both spellings grant, and the script starts where the granted folder is.
    for skill in ["portable", "legacy"] {
        let o = w.run(&["run", w.skills(), skill, "show", "--args", "notes/n.txt"]);
        o.code(0);
        assert_eq!(o.out(), "a note\n", "{skill}");
        w.run(&["run", w.skills(), skill, "show", "--args", "data.txt"])
            .code(1)
            .says(&["run with --allow-read data.txt"]);
    }
}

#[test]
fn files_without_the_exec_bit_or_a_shebang_run_by_extension_when_configured() {
    let w = World::new();
    write_skill(
        &w.skills.join("ext"),
        "---\nname: ext\ndescription: Scripts as published.\n---\nBody\n",
        &[
            (
                "scripts/plain.py",
                "\"\"\"Say hello from Python.\"\"\"\nimport sys\nprint('py ran', *sys.argv[1:])\n",
                false,
            ),
            (
                "scripts/tool.sh",
                "#!/bin/sh\n# Say hello from sh.\necho \"sh ran $*\"\n",
                false,
            ),
            ("scripts/bare.sh", "echo bare ran\n", true),
            ("scripts/app.js", "console.log('js')\n", false),
            ("scripts/__init__.py", "", false),
            ("scripts/notes.txt", "not a script\n", false),
        ],
    );
    let tools = |config: Option<&str>| -> serde_json::Value {
        let mut args = vec![];
        if let Some(c) = config {
            args.extend_from_slice(&["--config", c]);
        }
        args.extend_from_slice(&["tools", w.skills(), "ext", "--format", "json"]);
        let o = w.run(&args);
        o.code(0);
        o.json()
    };
    let names = |doc: &serde_json::Value, key: &str, field: &str| -> Vec<String> {
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t[field].as_str().unwrap().to_string())
            .collect()
    };

    // Off unless configured: nothing offered, and the reason says how to offer them.
    let doc = tools(None);
    assert!(names(&doc, "tools", "name").is_empty(), "{doc}");
    let skipped = doc["skipped"].as_array().unwrap();
    let why = |path: &str| {
        skipped
            .iter()
            .find(|s| s["path"] == path)
            .unwrap_or_else(|| panic!("{path} not skipped: {doc}"))
            .clone()
    };
    assert!(
        why("scripts/plain.py")["message"]
            .as_str()
            .unwrap()
            .contains("map .py to an interpreter in [scripts.by_extension]"),
        "{doc}"
    );
    assert_eq!(
        why("scripts/bare.sh")["code"],
        "E_SKILL_SCRIPT_INTERPRETER_REFUSED"
    );

    let config = &w.config(
        "ext.toml",
        "sources = []\n\n[scripts.by_extension]\npy = \"python3\"\nsh = \"sh\"\njs = \"node\"\n",
    );
    let doc = tools(Some(config));
    assert_eq!(
        names(&doc, "tools", "name"),
        ["run_ext_bare", "run_ext_plain", "run_ext_tool"]
    );
    assert_eq!(
        names(&doc, "tools", "description"),
        ["bare", "Say hello from Python.", "Say hello from sh."]
    );
    assert_eq!(names(&doc, "tools", "interpreter"), ["sh", "python3", "sh"]);
    let skipped: Vec<(String, String)> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "scripts/__init__.py".into(),
                "E_SKILL_SCRIPT_INVALID".into()
            ),
            (
                "scripts/app.js".into(),
                "E_SKILL_SCRIPT_INTERPRETER_REFUSED".into()
            ),
            ("scripts/notes.txt".into(), "E_SKILL_SCRIPT_INVALID".into()),
        ]
    );
    // They run, confined, like any tool.
    for (script, args, want) in [
        ("plain", "a 'b c'", "py ran a b c\n"),
        ("tool", "x", "sh ran x\n"),
        ("bare", "", "bare ran\n"),
    ] {
        let o = w.script(Some(config), "ext", script, &[], Some(args));
        o.code(0);
        assert_eq!(o.out(), want, "{script}");
    }
    let o = w.script(Some(config), "ext", "app", &[], None);
    o.code(1)
        .says(&["interpreter 'node' is not in the host allow-list"]);

    // The interpreter must still be allowed: an allow-list without python3 refuses plain.py.
    let sh_only = w.config(
        "sh-only.toml",
        "sources = []\n\n[scripts.interpreters]\nsh = \"/bin/sh\"\n\n[scripts.by_extension]\npy = \"python3\"\nsh = \"sh\"\n",
    );
    let doc = tools(Some(&sh_only));
    assert_eq!(
        names(&doc, "tools", "name"),
        ["run_ext_bare", "run_ext_tool"]
    );

    // A project's own skillcat.toml cannot turn it on: the user's (empty) map applies.
    std::fs::write(
        w.cwd.join("skillcat.toml"),
        "[scripts.by_extension]\npy = \"python3\"\nsh = \"sh\"\n",
    )
    .unwrap();
    assert!(names(&tools(None), "tools", "name").is_empty());

    // A malformed map is a configuration error naming the key.
    for (text, says) in [
        (
            "[scripts.by_extension]\n\".py\" = \"python3\"\n",
            "scripts.by_extension..py: an extension is letters, digits",
        ),
        (
            "[scripts.by_extension]\npy = \"/usr/bin/python3\"\n",
            "scripts.by_extension.py: must name an interpreter",
        ),
    ] {
        let bad = w.config("bad.toml", text);
        w.run(&["--config", &bad, "tools", w.skills(), "ext"])
            .code(2)
            .says(&[says]);
    }
}

/// The README's example of running the bundled skills on a user's files, and `run --help`'s
/// example, run as written. They run in a copy of `fixtures/` (the same relative layout): the
/// checkout may lie under a directory the sandbox uid cannot search when tests run as root.
#[test]
fn the_readme_and_help_examples_run_as_written() {
    let w = World::new();
    let root = w.cwd.join("checkout");
    std::fs::create_dir_all(root.join("fixtures")).unwrap();
    for d in ["skills", "data"] {
        copy_dir(
            &manifest_dir().join("fixtures").join(d),
            &root.join("fixtures"),
        );
    }

    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let marker = "<!-- tests/integration/sandbox/run_flags.rs runs these commands as written";
    let at = readme.find(marker).expect("README marks the example");
    let block = |from: usize, fence: &str| -> (String, usize) {
        let start = from + readme[from..].find(fence).unwrap() + fence.len();
        let len = readme[start..].find("```").unwrap();
        (readme[start..start + len].to_string(), start + len + 3)
    };
    let (commands, end) = block(at, "```sh\n");
    let (shown, _) = block(end, "```text\n");

    let mut cwd = root.clone();
    let mut outputs = Vec::new();
    for line in commands.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["cd", dir] => cwd = cwd.join(dir),
            ["skillcat", args @ ..] => {
                let o = w.run_in(&cwd, args);
                o.code(0);
                outputs.push(o.out().to_string());
            }
            other => panic!("the README example has a line this test cannot run: {other:?}"),
        }
    }
    assert_eq!(outputs.len(), 2, "{commands}");
    assert_eq!(outputs[0].trim_end(), shown.trim_end());
    assert!(
        outputs[1].contains("rows: 5 (blank: 1, exact duplicates: 1)"),
        "{}",
        outputs[1]
    );

    let help = w.run(&["run", "--help"]);
    help.code(0);
    let example = help
        .out()
        .lines()
        .find_map(|l| l.strip_prefix("Example: skillcat "))
        .expect("run --help has an example");
    let args: Vec<&str> = example.split_whitespace().collect();
    let o = w.run_in(&root, &args);
    o.code(0);
    assert!(o.out().starts_with("delimiter: ','\n"), "{}", o.out());
}

/// A project's own `skillcat.toml` that the user has not trusted counts only as far as the
/// user's configuration allows: a flag it lists is refused, and the advice is the fix that
/// works — `skillcat trust project`, or the user's own file — never "add it to" the project's
/// file, which lists it already. Once trusted, the same run works.
#[test]
fn a_grant_an_untrusted_project_lists_points_at_trusting_the_project() {
    let w = World::new();
    w.reader();
    let out = w.cwd.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(
        w.cwd.join("skillcat.toml"),
        "[sandbox]\nfs_write = [\"out\"]\n",
    )
    .unwrap();
    let user_file = w.home.join(".config/skillcat/skillcat.toml");
    let project_file = w.cwd.join("skillcat.toml");
    let write = |flags: &[&str]| w.script(None, "reader", "write", flags, Some("out/x.txt hi"));

    let o = write(&["--allow-write", "out"]);
    o.code(2).says(&[
        &format!("The project's {} lists it", project_file.display()),
        "you have not trusted this project",
        &format!("run `skillcat trust project` in {}", w.cwd.display()),
        &format!("under [sandbox] in {}", user_file.display()),
    ]);
    assert!(
        !o.stderr
            .contains(&format!("under [sandbox] in {}", project_file.display())),
        "{}",
        o.stderr
    );
    // A path the project's file does not list either: the user's own file is the place.
    std::fs::create_dir(w.cwd.join("elsewhere")).unwrap();
    let o = write(&["--allow-write", "elsewhere"]);
    o.code(2).says(&[&format!(
        "to `fs_write` under [sandbox] in your own configuration ({})",
        user_file.display()
    )]);
    assert!(!out.join("x.txt").exists());

    w.run(&["trust", "project"]).code(0);
    write(&["--allow-write", "out"]).code(0);
    assert_eq!(std::fs::read_to_string(out.join("x.txt")).unwrap(), "hi\n");
}

/// A world with the reader skill, on a root host; `None` (said on stderr) elsewhere.
fn root_host_reader() -> Option<World> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a root host's case");
        return None;
    }
    let w = World::new();
    w.reader();
    Some(w)
}

/// A new directory open to all (0755), owned by `uid` when one is given (else by us).
fn open_dir(path: &Path, uid: Option<u32>) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    if uid.is_some() {
        std::os::unix::fs::chown(path, uid, uid).unwrap();
    }
    path.to_path_buf()
}

#[test]
fn a_root_file_in_a_tree_another_user_owns_is_refused_by_that_trees_modes_on_a_root_host() {
    use std::os::unix::fs::PermissionsExt;
    let Some(w) = root_host_reader() else {
        return;
    };
    // A tree of uid 1000 that holds a file of root's, closed to others: the tree is not
    // root's, so it is not mapped, and the file's modes keep the script out.
    let theirs = open_dir(&w.cwd.join("theirs"), Some(1000));
    let secret = theirs.join("secret.txt");
    std::fs::write(&secret, "s3cret\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = w.config(
        "ceiling.toml",
        "sources = []\n\n[sandbox]\nfs_read = [\"theirs\"]\n",
    );
    let o = w.script(
        Some(&config),
        "reader",
        "show",
        &["--allow-read", "theirs"],
        Some("theirs/secret.txt"),
    );
    o.code(1).says(&[
        &format!("hint: {} is granted", secret.display()),
        &format!(
            "{} belongs to uid 1000, so root's files in it stay root's",
            theirs.display()
        ),
        &format!("make {} readable by others", secret.display()),
    ]);
    // Not the cause of a tree that cannot be mapped.
    assert!(!o.stderr.contains("work directory"), "{}", o.stderr);
    assert!(!o.stderr.contains("s3cret"), "{}", o.stderr);
}

/// On a root host, root's own files in a granted directory are the script's; a write that file
/// modes still refuse is another owner's directory, and the hint says so — a write, that owner,
/// and what would let it — not "make it readable".
#[test]
fn a_write_refused_by_another_owners_modes_on_a_root_host_names_that_owner() {
    let Some(w) = root_host_reader() else {
        return;
    };
    let theirs = open_dir(&w.cwd.join("theirs"), Some(1000));
    let mine = open_dir(&w.cwd.join("mine"), None);
    let config = w.config(
        "ceiling.toml",
        "sources = []\n\n[sandbox]\nfs_write = [\"theirs\", \"mine\"]\n",
    );
    let o = w.script(
        Some(&config),
        "reader",
        "write",
        &["--allow-write", "theirs"],
        Some("theirs/x.txt hi"),
    );
    o.code(1).says(&[
        &format!(
            "hint: {}/theirs/x.txt is granted for writing",
            w.cwd.display()
        ),
        &format!("{} belongs to uid 1000", theirs.display()),
        "make it writable by others, or run skillcat as uid 1000",
    ]);
    assert!(!o.stderr.contains("readable by others"), "{}", o.stderr);
    // Root's own directory, 0755, is the script's to write.
    w.script(
        Some(&config),
        "reader",
        "write",
        &["--allow-write", "mine"],
        Some("mine/x.txt hi"),
    )
    .code(0);
    assert_eq!(std::fs::read_to_string(mine.join("x.txt")).unwrap(), "hi\n");
}
