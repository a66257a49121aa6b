//! Private configuration directories (issue 49, item 8): every directory skillcat creates to
//! keep its configuration, keyring and credentials in is 0700 whatever the umask, so that no
//! other user can plant a `keyring.toml` or a `credentials.toml` there. Run through the real
//! binary under `umask 000`, where a directory made with the process umask would be 0777.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::bin::BIN;

/// `skillcat ARGS` under `umask 000`, with `home` as `$HOME` and working directory, `stdin`
/// piped in.
fn under_umask_000(home: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("SKILLCAT_CONFIG")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "skillcat {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The directories `trust add` (the default keyring), `login` (the credentials file) and
/// `trust project` (the user's configuration) create are 0700, `~/.config` included when it
/// is made; one that existed before keeps its mode.
#[test]
fn config_directories_are_private_whatever_the_umask() {
    // `trust add` with no keyring named: ~/.config/skillcat/keyring.toml.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    under_umask_000(h, &["keygen", "-o", "k", "--unencrypted"], "");
    under_umask_000(h, &["trust", "add", "k.pub", "--scope", "acme-*"], "");
    assert!(h.join(".config/skillcat/keyring.toml").is_file());
    assert_eq!(mode(&h.join(".config/skillcat")), 0o700, "keyring's folder");
    assert_eq!(mode(&h.join(".config")), 0o700, "~/.config made for it");

    // `login`: ~/.config/skillcat/credentials.toml; ~/.config already there, left as it was.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir(h.join(".config")).unwrap();
    std::fs::set_permissions(h.join(".config"), std::fs::Permissions::from_mode(0o755)).unwrap();
    under_umask_000(
        h,
        &["login", "http://127.0.0.1:9"],
        "scat_abcdef0123456789\n",
    );
    assert_eq!(mode(&h.join(".config/skillcat/credentials.toml")), 0o600);
    assert_eq!(
        mode(&h.join(".config/skillcat")),
        0o700,
        "credentials' folder"
    );
    assert_eq!(mode(&h.join(".config")), 0o755);

    // `trust project`: the user's skillcat.toml.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir(h.join("proj")).unwrap();
    // A project is trusted by its skillcat.toml's content, so it has one.
    std::fs::write(h.join("proj/skillcat.toml"), "sources = []\n").unwrap();
    under_umask_000(h, &["trust", "project", "proj"], "");
    assert!(h.join(".config/skillcat/skillcat.toml").is_file());
    assert_eq!(
        mode(&h.join(".config/skillcat")),
        0o700,
        "configuration's folder"
    );
    assert_eq!(mode(&h.join(".config")), 0o700);
}

/// The cache of remote sources is closed to others too, whatever the umask: another user who
/// could write there could plant an index the next `list` or `add` trusts.
#[test]
fn the_remote_cache_is_private_whatever_the_umask() {
    let (mut server, _, url) = crate::support::serve::spawn_serve(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/skills")
            .as_path(),
        &[],
        Stdio::null(),
    );
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let out = under_umask_000(h, &["list", &url, "--cache", "c/remote"], "");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("csv-cleaner"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for d in [
        "c",
        "c/remote",
        "c/remote/index-v1",
        "c/remote/tmp",
        "c/remote/blobs-v3",
    ] {
        assert_eq!(mode(&h.join(d)), 0o700, "{d}");
    }
    let _ = server.kill();
    let _ = server.wait();
}
