//! The directory source reads a file in one step that cannot leave its root (`openat2` with
//! `RESOLVE_BENEATH`): a path component swapped for a symbolic link while it is read never
//! redirects the read outside, and a link in the middle of a path leads nowhere outside.
//!
//! Origin: step 14 (issue 19: hostile input measured, the known races closed).
#![cfg(target_os = "linux")]

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use skillcat::source::{DirOptions, DirSource, Source};

const DOC: &str = "---\nname: s\ndescription: A skill.\n---\nBody.\n";

fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f"), "secret").unwrap();
    std::fs::create_dir(outside.path().join("d")).unwrap();
    std::fs::write(outside.path().join("d/f"), "secret").unwrap();
    let root = tempfile::tempdir().unwrap();
    let s = root.path().join("s");
    std::fs::create_dir_all(s.join("d")).unwrap();
    std::fs::write(s.join("SKILL.md"), DOC).unwrap();
    std::fs::write(s.join("f"), "inside").unwrap();
    std::fs::write(s.join("d/f"), "inside").unwrap();
    (root, outside)
}

/// Flips `at` between what it is now and a symbolic link to `to`, by renaming prepared
/// entries over it (each rename is atomic), until `stop` is set.
fn flipper(at: &Path, to: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let real = at.with_extension("real");
    let link = at.with_extension("link");
    let (at, to) = (at.to_path_buf(), to.to_path_buf());
    let is_dir = at.is_dir();
    std::thread::spawn(move || {
        let mut flips = 0;
        while !stop.load(Ordering::Relaxed) {
            symlink(&to, &link).unwrap();
            if is_dir {
                // A directory cannot be renamed over a link: move it aside, put the link in.
                std::fs::rename(&at, &real).unwrap();
                std::fs::rename(&link, &at).unwrap();
                std::fs::remove_file(&at).unwrap();
                std::fs::rename(&real, &at).unwrap();
            } else {
                std::fs::rename(&link, &at).unwrap();
                std::fs::write(&real, "inside").unwrap();
                std::fs::rename(&real, &at).unwrap();
            }
            flips += 1;
        }
        flips
    })
}

/// Reads `path` 20,000 times while the entry `flipped` (relative to the root, its twin under
/// `outside` of the same name) flips between itself and a link out; no read may give the
/// outside bytes, and the race must have run.
async fn no_read_leaks(flipped: &str, path: &str) {
    let (root, outside) = tree();
    let src = DirSource::open(root.path(), DirOptions::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let twin = outside.path().join(Path::new(flipped).file_name().unwrap());
    let flips = flipper(&root.path().join(flipped), &twin, stop.clone());
    let (mut leaked, mut read) = (0, 0);
    for _ in 0..20_000 {
        match src.read(path).await {
            Ok(bytes) if &bytes[..] == b"secret" => leaked += 1,
            Ok(bytes) => {
                assert_eq!(&bytes[..], b"inside");
                read += 1;
            }
            // Refused (the link leads out) or missing (caught mid-swap): both are fine.
            Err(_) => {}
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flips.join().unwrap();
    assert!(
        flips > 0 && read > 0,
        "the race never ran: {flips} flips, {read} reads"
    );
    assert_eq!(
        leaked, 0,
        "{leaked} reads followed the swapped link out of the root"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_swapped_for_a_link_out_never_redirects_a_read() {
    no_read_leaks("s/f", "s/f").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_out_never_redirects_a_read() {
    no_read_leaks("s/d", "s/d/f").await;
}

#[tokio::test]
async fn a_link_in_the_middle_of_a_path_leads_nowhere_outside() {
    let (root, outside) = tree();
    let s = root.path().join("s");
    symlink(outside.path().join("d"), s.join("out")).unwrap();
    symlink("../../", s.join("up")).unwrap();
    // Links that stay inside still read, relative or absolute.
    symlink("d", s.join("rel")).unwrap();
    symlink(s.join("d"), s.join("abs")).unwrap();
    let src = DirSource::open(root.path(), DirOptions::default()).unwrap();
    let through_up = format!(
        "s/up/{}/f",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    for path in ["s/out/f", through_up.as_str()] {
        let err = src.read(path).await.unwrap_err();
        assert!(
            matches!(err, skillcat::Error::PathRejected { .. }),
            "{path}: {err}"
        );
    }
    for path in ["s/rel/f", "s/abs/f", "s/f", "s/d/f"] {
        assert_eq!(&src.read(path).await.unwrap()[..], b"inside", "{path}");
    }
    for path in ["s/d", "s/missing"] {
        let err = src.read(path).await.unwrap_err();
        assert!(matches!(err, skillcat::Error::NotFound(_)), "{path}: {err}");
    }
}
