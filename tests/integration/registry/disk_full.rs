//! Disk full, for real: the HTTP cache and the registry on a tmpfs of 2 MiB (mounted in a
//! user and mount namespace of their own by `unshare`, so no root is needed), filled by a skill
//! too big for it mid-fetch and mid-publish. Each says "No space left on device", keeps
//! everything it already held readable and verified, and keeps nothing partial.
//!
//! Origin: step 14 (issue 19: hostile input measured, the known races closed).
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::serve::{bin, spawn_serve};
use skillcat::registry::Registry;

/// A small skill `name` under `root`.
fn small(root: &Path, name: &str) {
    let d = root.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: A small skill.\nmetadata:\n  version: 1.0.0\n---\nBody of {name}.\n"),
    )
    .unwrap();
}

/// A skill `big` under `root` with 3 MiB of incompressible bytes: more than the tmpfs holds.
fn big(root: &Path) {
    small(root, "big");
    std::fs::create_dir_all(root.join("big/assets")).unwrap();
    std::fs::write(
        root.join("big/assets/blob.bin"),
        crate::support::incompressible(3 << 20),
    )
    .unwrap();
}

/// Runs `script` with `sh -eu` in a new user and mount namespace where `$T` is a fresh 2 MiB
/// tmpfs, `$B` the binary under test and `$O` a folder outside the tmpfs for what the test
/// reads afterwards (the tmpfs goes with the namespace). Returns the script's stdout.
fn in_small_tmpfs(script: &str, out: &Path) -> String {
    let mount = out.join("mnt");
    std::fs::create_dir_all(&mount).unwrap();
    let full = format!("mount -t tmpfs -o size=2m tmpfs \"$T\"\n{script}");
    let o = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-euc", &full])
        .env("T", &mount)
        .env("B", bin())
        .env("O", out)
        .stdin(Stdio::null())
        .output()
        .expect("run unshare (util-linux)");
    assert!(
        o.status.success(),
        "the script failed: {}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `sha256:…  NAME` lines of `skillcat digest SOURCE`, sorted.
fn digests(source: &Path) -> Vec<String> {
    let o = Command::new(bin())
        .arg("digest")
        .arg(source)
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut lines: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_full_disk_mid_fetch_keeps_the_cache_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (smalls, bigs) = (tmp.path().join("smalls"), tmp.path().join("bigs"));
    small(&smalls, "alpha");
    small(&smalls, "beta");
    big(&bigs);
    let (mut s1, _, url1) = spawn_serve(&smalls, &[], Stdio::null());
    let (mut s2, _, url2) = spawn_serve(&bigs, &[], Stdio::null());
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = format!(
        r#"
"$B" --cache "$T/cache" fetch {url1} > "$O/fetch1.out"
if "$B" --cache "$T/cache" fetch {url2} > "$O/fetch2.out" 2> "$O/fetch2.err"; then
    echo "fetch2: succeeded"
else
    echo "fetch2: failed"
fi
"$B" --cache "$T/cache" --offline digest {url1} > "$O/offline.out" 2> "$O/offline.err"
ls -A "$T/cache/tmp" > "$O/tmp.ls"
(cd "$T/cache" && find . -type f | sort) > "$O/files.ls"
"#
    );
    let said = in_small_tmpfs(&script, &out);
    let _ = (s1.kill(), s2.kill(), s1.wait(), s2.wait());
    assert_eq!(said.trim(), "fetch2: failed");
    let err = read(out.join("fetch2.err"));
    assert!(err.contains("No space left on device"), "{err}");
    // What was cached before is still served offline, verified, with the source's digests.
    let mut offline: Vec<String> = read(out.join("offline.out"))
        .lines()
        .map(str::to_string)
        .collect();
    offline.sort();
    assert_eq!(offline, digests(&smalls));
    // Nothing partial: no temporary file left, and no blob of the big skill's size.
    assert_eq!(read(out.join("tmp.ls")), "");
    let files = read(out.join("files.ls"));
    assert!(!files.contains("/tmp/"), "{files}");
}

#[test]
fn a_full_disk_mid_publish_keeps_the_registry_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (smalls, bigs) = (tmp.path().join("smalls"), tmp.path().join("bigs"));
    small(&smalls, "alpha");
    big(&bigs);
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = format!(
        r#"
"$B" registry init "$T/reg.db" > /dev/null
"$B" registry publish "$T/reg.db" {smalls} > "$O/publish1.out"
if "$B" registry publish "$T/reg.db" {bigs} > "$O/publish2.out" 2> "$O/publish2.err"; then
    echo "publish2: succeeded"
else
    echo "publish2: failed"
fi
"$B" registry versions "$T/reg.db" alpha > "$O/versions.out"
"$B" digest "$T/reg.db" > "$O/digest.out"
cp "$T"/reg.db* "$O/"
"#,
        smalls = smalls.join("alpha").display(),
        bigs = bigs.join("big").display(),
    );
    let said = in_small_tmpfs(&script, &out);
    assert_eq!(said.trim(), "publish2: failed");
    let err = read(out.join("publish2.err"));
    assert!(err.contains("No space left on device"), "{err}");
    assert!(read(out.join("versions.out")).contains("1.0.0"));
    assert_eq!(
        read(out.join("digest.out")).lines().collect::<Vec<_>>(),
        digests(&smalls)
    );
    // The file copied out of the tmpfs is sound: integrity_check, every stored version
    // re-hashes to its digest, and the big skill is nowhere in it.
    let reg = Registry::open_read_only(out.join("reg.db")).unwrap();
    let report = reg.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    for sql in [
        "SELECT count(*) FROM skill WHERE name = 'big'",
        "SELECT count(*) FROM blob WHERE size > 1048576",
    ] {
        let rows: i64 = reg.connection().query_row(sql, [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 0, "{sql}");
    }
}

/// A batch publish (origin: step 29, issue 51 item 18): a full disk rolls back the batch's
/// transaction, and every version of it is committed again on its own, so the skills before
/// and after the one too big are published and it alone is absent.
#[test]
fn a_full_disk_mid_batch_keeps_the_versions_around_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    small(&src, "alpha");
    big(&src);
    small(&src, "gamma");
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = format!(
        r#"
"$B" registry init "$T/reg.db" > /dev/null
if "$B" registry publish "$T/reg.db" {src} > "$O/publish.out" 2> "$O/publish.err"; then
    echo "publish: succeeded"
else
    echo "publish: failed"
fi
cp "$T"/reg.db* "$O/"
"#,
        src = src.display(),
    );
    let said = in_small_tmpfs(&script, &out);
    assert_eq!(said.trim(), "publish: failed");
    let err = read(out.join("publish.err"));
    assert!(err.contains("No space left on device"), "{err}");
    let published = read(out.join("publish.out"));
    assert!(
        published.contains("Published alpha@1.0.0") && published.contains("Published gamma@1.0.0"),
        "{published}"
    );
    let reg = Registry::open_read_only(out.join("reg.db")).unwrap();
    let report = reg.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let rows: i64 = reg
        .connection()
        .query_row("SELECT count(*) FROM skill WHERE name = 'big'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(rows, 0);
}
