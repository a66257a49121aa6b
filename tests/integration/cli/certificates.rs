//! Step 25's dead ends after the first success, through the real binary: a certificate that
//! does not verify, `--cacert` for every command, files a script leaves behind, and the hints
//! and help that point at the fix that works.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use crate::support::bin::Skillcat;
use crate::support::central::certificates;
use crate::support::serve::spawn_serve;
use crate::support::{copy_dir, sandbox_tempdir, write_skill};

/// A run in `dir` that trusts only the system's certificates.
fn in_dir(dir: &Path, args: &[&str]) -> crate::support::bin::Out {
    Skillcat::new(args)
        .cwd(dir)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .env_remove("SKILLCAT_CONFIG")
        .run()
}

#[test]
fn a_certificate_that_does_not_verify_is_an_error_and_no_cached_copy_stands_in() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    certificates(dir);
    copy_dir(
        &crate::support::bin::manifest_dir().join("fixtures/skills"),
        &dir.join("skills"),
    );
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let (mut server, _, url) = spawn_serve(
        &dir.join("skills"),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        Stdio::null(),
    );
    assert!(url.starts_with("https://"), "{url}");

    // A warm cache, through the CA named with the global --cacert.
    let warm = in_dir(dir, &["--cache", "c", "--cacert", "ca.pem", "list", &url]);
    assert!(warm.code(0).out().contains("pdf-forms"), "{}", warm.out());

    // Without the CA the certificate does not verify: an error in plain words naming the
    // server and the two ways to trust its authority; never "offline, using the cache".
    let refused = in_dir(dir, &["--cache", "c", "list", &url]);
    refused.code(1).says(&[
        "127.0.0.1",
        "TLS certificate does not verify",
        "issued by a certificate authority this machine does not trust",
        "--cacert FILE",
        "SSL_CERT_FILE",
    ]);
    assert!(
        !refused.stderr.contains("using the cached copy") && refused.out().is_empty(),
        "{}\n{}",
        refused.stderr,
        refused.out()
    );

    // A configured catalog says the same of a source whose certificate does not verify, in
    // its warning: the library's diagnostic names no flag, the command line's printer does.
    std::fs::write(
        dir.join("remote.toml"),
        format!("[[sources]]\nname = \"remote\"\npath = \"{url}\"\n"),
    )
    .unwrap();
    in_dir(dir, &["--config", "remote.toml", "--cache", "c", "list"]).says(&[
        "warning: ",
        "TLS certificate does not verify",
        "--cacert FILE",
        "SSL_CERT_FILE",
        "[source-unavailable]",
    ]);

    // --cacert after the command works as well as before it (a global option).
    in_dir(dir, &["list", &url, "--cache", "c", "--cacert", "ca.pem"]).code(0);
    // --offline is the way to read the cache without the server.
    in_dir(dir, &["--cache", "c", "--offline", "list", &url]).code(0);

    // A server that cannot be reached is being offline: the cache stands in, saying so.
    let _ = server.kill();
    let _ = server.wait();
    let gone = in_dir(dir, &["--cache", "c", "--cacert", "ca.pem", "list", &url]);
    gone.code(0).says(&["using the cached copy"]);
    assert!(gone.out().contains("pdf-forms"), "{}", gone.out());
}

#[test]
fn a_cacert_that_cannot_be_read_is_a_usage_error_before_anything_is_done() {
    let tmp = tempfile::tempdir().unwrap();
    let out = in_dir(
        tmp.path(),
        &["--cacert", "missing.pem", "list", "https://127.0.0.1:9/"],
    );
    out.code(2)
        .says(&["cannot read the CA certificate missing.pem"]);
    std::fs::write(tmp.path().join("junk.pem"), "not a certificate\n").unwrap();
    let out = in_dir(
        tmp.path(),
        &["--cacert", "junk.pem", "fetch", "https://127.0.0.1:9/"],
    );
    assert_ne!(out.code, 0, "{}", out.stderr);
    out.says(&["PEM"]);
}

/// A skill whose script writes in its working directory: a file, a file in a folder, and a
/// link to a host file.
fn writer() -> tempfile::TempDir {
    let tmp = sandbox_tempdir("skillcat-left-");
    let root = tmp.path().join("skills/writer");
    write_skill(
        &root,
        "---\nname: writer\ndescription: Writes files in its working directory.\n---\nBody\n",
        &[(
            "scripts/write.sh",
            "#!/bin/sh\n# Write some files.\necho hello > out.txt\nmkdir -p sub && echo x > sub/y.txt\nln -s /etc/passwd link\nmkdir -p tmp/scratch && echo s > tmp/scratch/s\necho wrote out.txt\n",
            true,
        )],
    );
    for d in [
        tmp.path().join("skills"),
        root.clone(),
        root.join("scripts"),
    ] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    tmp
}

#[test]
fn files_a_script_leaves_in_its_work_directory_are_named_and_kept_on_request() {
    let tmp = writer();
    let dir = tmp.path();
    // Without --keep-work: the run succeeds and says what went with the workspace, and how
    // to keep it. TMPDIR's scratch is not named.
    let out = in_dir(dir, &["run", "skills", "writer", "write"]);
    assert_eq!(out.code(0).out(), "wrote out.txt\n");
    out.says(&[
        "the script left 3 files in its work directory, which is removed with the run",
        "out.txt (6 bytes)",
        "sub/y.txt (2 bytes)",
        "link (not a regular file)",
        "--keep-work DIR",
    ]);
    assert!(!out.stderr.contains("scratch"), "{}", out.stderr);
    assert!(!dir.join("out.txt").exists());

    // With it: the regular files and their folders are copied out, the link is not.
    let out = in_dir(
        dir,
        &["run", "skills", "writer", "write", "--keep-work", "kept"],
    );
    out.code(0)
        .says(&["kept 2 files (8 bytes)", "not kept", "link"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("kept/out.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("kept/sub/y.txt")).unwrap(),
        "x\n"
    );
    assert!(std::fs::symlink_metadata(dir.join("kept/link")).is_err());
    assert!(!dir.join("kept/tmp").exists());

    // A folder that holds something is refused before the script runs; nothing in it changes.
    let out = in_dir(
        dir,
        &["run", "skills", "writer", "write", "--keep-work", "kept"],
    );
    out.code(2)
        .says(&["--keep-work kept: the directory is not empty"]);
    assert!(out.out().is_empty(), "the script ran: {}", out.out());
    assert_eq!(
        std::fs::read_to_string(dir.join("kept/out.txt")).unwrap(),
        "hello\n"
    );
    // …and so is one whose parent does not exist.
    in_dir(
        dir,
        &["run", "skills", "writer", "write", "--keep-work", "no/such"],
    )
    .code(2)
    .says(&["the directory no does not exist"]);
}

#[test]
fn a_script_that_leaves_nothing_gets_no_note() {
    let tmp = sandbox_tempdir("skillcat-left-");
    let root = tmp.path().join("quiet");
    write_skill(
        &root,
        "---\nname: quiet\ndescription: Prints and writes nothing.\n---\nBody\n",
        &[("scripts/hi.sh", "#!/bin/sh\n# Say hi.\necho hi\n", true)],
    );
    for d in [root.clone(), root.join("scripts")] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = in_dir(tmp.path(), &["run", "quiet", "quiet", "hi"]);
    assert_eq!(out.code(0).out(), "hi\n");
    assert!(!out.stderr.contains("work directory"), "{}", out.stderr);
}

#[test]
fn the_neural_hint_names_a_command_that_works_from_a_checkout() {
    let out = Skillcat::new(&[
        "match",
        "fixtures/skills",
        "clean a csv",
        "--mode",
        "neural",
    ])
    .run();
    if out.code == 0 {
        // A build with the `neural` feature ranks instead.
        return;
    }
    out.code(2)
        .says(&["cargo install --locked --path . --features neural"]);
    assert!(
        !out.stderr.contains("cargo install skillcat"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_config_help_names_every_default_location() {
    let out = Skillcat::new(&["--help"]).run();
    let help = out.code(0).out();
    for want in [
        "./skillcat.toml",
        "~/.config/skillcat/skillcat.toml",
        "skillcat trust project",
        "built-in defaults",
    ] {
        assert!(help.contains(want), "--help lacks {want:?}:\n{help}");
    }
}

#[test]
fn remote_options_are_in_the_help_of_the_commands_that_read_remote_sources_only() {
    for cmd in [
        "list", "show", "fetch", "add", "install", "run", "mcp", "push", "validate",
    ] {
        let help = Skillcat::new(&[cmd, "--help"]).run();
        let text = help.code(0).out();
        for want in [
            "Remote sources:",
            "--cache <DIR>",
            "--offline",
            "--cacert <PEM>",
        ] {
            assert!(text.contains(want), "{cmd} --help lacks {want}:\n{text}");
        }
    }
    // publish and yank talk to a server but read no source: its timeout and CA only.
    for cmd in ["publish", "yank"] {
        let help = Skillcat::new(&[cmd, "--help"]).run();
        let text = help.code(0).out();
        assert!(
            text.contains("--cacert <PEM>") && text.contains("--timeout"),
            "{text}"
        );
        assert!(
            !text.contains("--offline") && !text.contains("--max-index-entries"),
            "{text}"
        );
    }
    for cmd in [
        "pack",
        "keygen",
        "properties",
        "remove",
        "status",
        "completions",
        "man",
    ] {
        let help = Skillcat::new(&[cmd, "--help"]).run();
        let text = help.code(0).out();
        for lacking in [
            "--cache",
            "--offline",
            "--max-index-entries",
            "--allow-insecure",
            "--cacert",
        ] {
            assert!(
                !text.contains(lacking),
                "{cmd} --help has {lacking}:\n{text}"
            );
        }
        // …and none of them takes them after the command.
        assert!(
            text.contains("-q, --quiet") && text.contains("-v, --verbose"),
            "{cmd} --help lacks -q/-v:\n{text}"
        );
    }
    Skillcat::new(&[
        "pack",
        "fixtures/skills/pdf-forms",
        "-o",
        "x.tar.gz",
        "--offline",
    ])
    .run()
    .code(2)
    .says(&["unexpected argument '--offline'"]);
    // Before the command, as before this change, they are still taken by every command.
    Skillcat::new(&["--offline", "list", "fixtures/skills"])
        .run()
        .code(0);
}

#[test]
fn the_cache_commands_have_examples_that_run_as_printed() {
    let home = tempfile::tempdir().unwrap();
    for sub in ["info", "clean"] {
        let help = Skillcat::new(&["cache", sub, "--help"]).run();
        let text = help.code(0).out().to_string();
        let examples: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("skillcat cache "))
            .collect();
        assert!(examples.len() >= 2, "cache {sub} --help:\n{text}");
        for example in examples {
            let args: Vec<&str> = example.split_whitespace().skip(1).collect();
            Skillcat::new(&args)
                .cwd(home.path())
                .env("HOME", home.path())
                .env_remove("XDG_CACHE_HOME")
                .run()
                .code(0);
        }
    }
}

#[test]
fn quiet_keeps_results_and_errors_and_drops_warnings_and_notes() {
    let tmp = writer();
    let dir = tmp.path();
    let loud = in_dir(dir, &["run", "skills", "writer", "write"]);
    assert!(loud.code(0).stderr.contains("note:"), "{}", loud.stderr);
    let quiet = in_dir(dir, &["-q", "run", "skills", "writer", "write"]);
    assert_eq!(quiet.code(0).out(), "wrote out.txt\n");
    assert_eq!(quiet.stderr, "", "-q printed on stderr");
    // Errors stay.
    let failed = in_dir(dir, &["run", "skills", "writer", "nope", "-q"]);
    assert_ne!(failed.code, 0);
    assert!(!failed.stderr.is_empty());
    // -v says more: prompt lists every omission instead of the summary.
    let budget = ["prompt", "fixtures/skills", "--budget", "300"];
    let summary = Skillcat::new(&budget).run();
    let mut verbose_args = budget.to_vec();
    verbose_args.push("-v");
    let detailed = Skillcat::new(&verbose_args).run();
    assert!(
        summary.stderr.contains("--verbose lists"),
        "{}",
        summary.stderr
    );
    assert!(
        detailed.stderr.contains("omitted: it does not fit")
            && !detailed.stderr.contains("--verbose lists"),
        "{}",
        detailed.stderr
    );
    let mut quiet_args = budget.to_vec();
    quiet_args.push("-q");
    assert_eq!(Skillcat::new(&quiet_args).run().code(0).stderr, "");
}
