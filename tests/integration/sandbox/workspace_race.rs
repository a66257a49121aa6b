//! Workspace materialisation writes only inside the workspace it made, even while the
//! directory above it is swapped for a symbolic link to a prepared look-alike elsewhere: every
//! directory and file is made relative to an open descriptor (`mkdirat`, `openat` with
//! `O_EXCL | O_NOFOLLOW`), never through a path, and removal finds the workspace the same way.
//!
//! Origin: step 14 (issue 19: hostile input measured, the known races closed).
#![cfg(target_os = "linux")]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use skillcat::script::WorkspaceBase;
use skillcat::source::{DirOptions, DirSource, discover};

const DIRS: usize = 8;
const FILES: usize = 40;

fn skill(root: &Path) -> PathBuf {
    let s = root.join("s");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(
        s.join("SKILL.md"),
        "---\nname: s\ndescription: A skill with many files.\n---\nBody.\n",
    )
    .unwrap();
    for d in 0..DIRS {
        let dir = s.join(format!("d{d}/e"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES {
            std::fs::write(dir.join(format!("f{f}")), format!("{d}/{f}")).unwrap();
        }
    }
    s
}

/// Every regular file below `dir`.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

/// Until `stop`: for each workspace that appears in `base`, builds its look-alike under
/// `outside` (same name, `skill/dN/e/` folders ready), and keeps swapping `base` for a link to
/// `outside` and back (each step an atomic rename).
fn swapper(base: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>, swaps: Arc<AtomicU64>) {
    let aside = base.with_extension("real");
    let link = base.with_extension("link");
    while !stop.load(Ordering::Relaxed) {
        if let Ok(rd) = std::fs::read_dir(&base) {
            for e in rd.flatten() {
                let mirror = outside.join(e.file_name()).join("skill");
                if !mirror.exists() {
                    for d in 0..DIRS {
                        let _ = std::fs::create_dir_all(mirror.join(format!("d{d}/e")));
                    }
                    let _ = std::fs::create_dir_all(outside.join(e.file_name()).join("work/tmp"));
                }
            }
        }
        symlink(&outside, &link).unwrap();
        std::fs::rename(&base, &aside).unwrap();
        std::fs::rename(&link, &base).unwrap();
        std::thread::yield_now();
        std::fs::remove_file(&base).unwrap();
        std::fs::rename(&aside, &base).unwrap();
        swaps.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_parent_never_redirects_a_write_or_a_removal() {
    let tmp = tempfile::tempdir().unwrap();
    let src_root = tmp.path().join("src");
    skill(&src_root);
    let source = DirSource::open(&src_root, DirOptions::default()).unwrap();
    let found = discover(&source).await.unwrap();
    let skill = &found.skills[0];
    assert_eq!(skill.files().len(), 1 + DIRS * FILES);

    let parent = tmp.path().join("p");
    std::fs::create_dir(&parent).unwrap();
    let base_dir = parent.join("base");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let base = WorkspaceBase::open(&base_dir, None).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let t = {
        let (b, o, s, n) = (
            base_dir.clone(),
            outside.clone(),
            stop.clone(),
            swaps.clone(),
        );
        std::thread::spawn(move || swapper(b, o, s, n))
    };
    let mut made = Vec::new();
    for _ in 0..25 {
        made.push(base.materialise(&source, skill).await);
    }
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    assert!(swaps > 0, "the race never ran");

    let leaked = files_below(&outside);
    assert!(
        leaked.is_empty(),
        "{} files written outside the workspace through the swapped parent ({swaps} swaps), \
         e.g. {:?}",
        leaked.len(),
        leaked.first()
    );
    let mut kept = Vec::new();
    for ws in made {
        let ws = ws.unwrap_or_else(|e| panic!("materialising failed during the race: {e}"));
        // Each workspace holds the whole skill, read back through its path now the race is over.
        let dir = ws.skill_dir();
        assert_eq!(files_below(&dir).len(), 1 + DIRS * FILES);
        assert_eq!(std::fs::read_to_string(dir.join("d3/e/f7")).unwrap(), "3/7");
        kept.push(ws);
    }
    // Removal goes by the base's descriptor too: the look-alikes outside survive it, the
    // workspaces do not.
    let mirrors = std::fs::read_dir(&outside).unwrap().count();
    drop(kept);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), mirrors);
    let left: Vec<_> = std::fs::read_dir(&base_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "workspaces left behind: {left:?}");
}

/// A workspace moved away from its base while it lives is not removed through whatever now
/// has its name; it is left where it went.
#[tokio::test]
async fn a_workspace_replaced_under_its_name_is_not_what_gets_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let src_root = tmp.path().join("src");
    skill(&src_root);
    let source = DirSource::open(&src_root, DirOptions::default()).unwrap();
    let found = discover(&source).await.unwrap();
    let base = WorkspaceBase::open(tmp.path().join("base"), None).unwrap();
    let ws = base.materialise(&source, &found.skills[0]).await.unwrap();
    let root = ws.root().to_path_buf();
    let moved = tmp.path().join("moved");
    std::fs::rename(&root, &moved).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("keep"), "someone else's").unwrap();
    drop(ws);
    assert_eq!(
        std::fs::read_to_string(root.join("keep")).unwrap(),
        "someone else's"
    );
    assert!(moved.join("skill/SKILL.md").is_file());
}
