//! `skillcat registry init|publish|yank|search|versions` through the binary: the exit code of
//! each outcome (0 done, 1 refused, 2 unreadable or misused). Moved from the unit tests of
//! `src/cli/registry.rs` when the publishing of many skills became a library operation
//! (`skillcat::publish::Registry::publish_batch`).

use skillcat::registry::Registry;
use skillcat::source::{DirOptions, DirSource, SourceExt};

use crate::support::bin::run;

const OK: i32 = 0;
const FAULTS: i32 = 1;
const USAGE: i32 = 2;

/// The exit code of `skillcat registry ARGS…`.
fn status(args: &[&str]) -> i32 {
    let mut all = vec!["registry"];
    all.extend_from_slice(args);
    run(&all).code
}

fn catalog(root: &str) -> String {
    format!(
        "{}/fixtures/conformance/catalog/{root}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn init_publish_yank_search_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    let db_s = db.to_str().unwrap();
    assert_eq!(status(&["init", db_s]), OK);
    assert_eq!(
        status(&["init", db_s]),
        FAULTS,
        "init refuses an existing registry"
    );

    let alpha = catalog("alpha");
    assert_eq!(
        status(&["publish", db_s, &alpha]),
        FAULTS,
        "no version: refused"
    );
    assert_eq!(status(&["publish", db_s, &alpha, "--version", "1.0.0"]), OK);
    assert_eq!(
        status(&["publish", db_s, &alpha, "--version", "1.0.0"]),
        OK,
        "unchanged"
    );
    assert_eq!(
        status(&[
            "publish",
            db_s,
            &alpha,
            "--version",
            "1.1.0",
            "--format",
            "json"
        ]),
        OK
    );
    assert_eq!(
        status(&["publish", db_s, &catalog("bad-yaml"), "--version", "1.0.0"]),
        FAULTS
    );
    assert_eq!(
        status(&["publish", db_s, "/nonexistent/skill", "--version", "1.0.0"]),
        USAGE
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(
        status(&["publish", db_s, empty.to_str().unwrap()]),
        FAULTS,
        "nothing to publish is not a success"
    );
    // A directory of skills: --version would give every one the same version, so it is
    // refused before anything is written; without it, the skills that have no
    // metadata.version are refused (and named), the others published.
    let all = catalog("");
    assert_eq!(
        status(&["publish", db_s, &all, "--version", "2.0.0"]),
        USAGE
    );
    let reg = Registry::open_read_only(&db).unwrap();
    assert_eq!(reg.latest("alpha").unwrap().unwrap().version, "1.1.0");
    assert!(reg.versions("beta-tool").unwrap().is_empty());
    drop(reg);
    assert_eq!(status(&["publish", db_s, &all]), FAULTS);
    assert_eq!(status(&["publish", db_s, &alpha, "--version", "2.0.0"]), OK);

    assert_eq!(status(&["yank", db_s, "alpha@2.0.0"]), OK);
    assert_eq!(status(&["yank", db_s, "alpha@2.0.0"]), OK, "already yanked");
    assert_eq!(status(&["yank", db_s, "alpha@9.9.9"]), FAULTS);
    assert_eq!(status(&["yank", db_s, "alpha"]), USAGE);
    let reg = Registry::open_read_only(&db).unwrap();
    assert_eq!(reg.latest("alpha").unwrap().unwrap().version, "1.1.0");
    drop(reg);
    assert_eq!(status(&["yank", db_s, "alpha@2.0.0", "--undo"]), OK);

    assert_eq!(status(&["search", db_s, "alpha", "--format", "json"]), OK);
    assert_eq!(status(&["search", db_s, "\" NEAR( -x:y *"]), OK);
    assert_eq!(status(&["versions", db_s, "alpha"]), OK);
    assert_eq!(status(&["versions", db_s, "nope"]), FAULTS);
    let missing = tmp.path().join("missing.db");
    assert_eq!(status(&["search", missing.to_str().unwrap(), "x"]), USAGE);
}

#[test]
fn sig_names_one_skill_only() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    let db_s = db.to_str().unwrap();
    let sig = tmp.path().join("x.minisig");
    std::fs::write(&sig, "not a signature").unwrap();
    assert_eq!(status(&["init", db_s]), OK);
    let args = [
        "publish",
        db_s,
        &catalog(""),
        "--sig",
        sig.to_str().unwrap(),
        "--version",
        "1.0.0",
    ];
    assert_eq!(status(&args), USAGE);
    let args = [
        "publish",
        db_s,
        &catalog("alpha"),
        "--sig",
        sig.to_str().unwrap(),
        "--version",
        "1.0.0",
    ];
    assert_eq!(status(&args), FAULTS, "a malformed signature is refused");
}

#[tokio::test]
async fn neighbour_signature_is_used_and_verified() {
    use skillcat::sign;
    let tmp = tempfile::tempdir().unwrap();
    let skill = tmp.path().join("alpha");
    std::fs::create_dir(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: alpha\ndescription: d\nmetadata:\n  version: 1.0.0\n---\nBody\n",
    )
    .unwrap();
    let (public, secret) = sign::generate_keypair(None).unwrap();
    let src = DirSource::open_skill(&skill, DirOptions::default()).unwrap();
    let m = src.manifest("", "alpha", "1.0.0").await.unwrap();
    let sig = sign::sign(&sign::Statement::from_manifest(&m).unwrap(), &secret, None).unwrap();
    let spec = skill.to_str().unwrap();
    std::fs::write(sign::skill_signature_path(spec, "alpha", true), &sig).unwrap();
    let ring = tmp.path().join("keyring.toml");
    std::fs::write(
        &ring,
        format!(
            "[[key]]\npublic_key = \"{}\"\nscopes = [\"alpha\"]\n",
            sign::public_key_base64(&public).unwrap()
        ),
    )
    .unwrap();
    let db = tmp.path().join("r.db");
    let db_s = db.to_str().unwrap();
    assert_eq!(status(&["init", db_s]), OK);
    let ring_s = ring.to_str().unwrap();
    assert_eq!(status(&["publish", db_s, spec, "--keyring", ring_s]), OK);
    let reg = Registry::open_read_only(&db).unwrap();
    let key = sign::key_id_of_public_key(&public).unwrap();
    assert_eq!(reg.latest("alpha").unwrap().unwrap().signed_by, [key]);
}
