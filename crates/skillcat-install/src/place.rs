//! Putting folders in place, all or nothing: the scope's lock, staging, the journal, the
//! renames and the lockfile's commit, and recovery after a crash.
//!
//! ```text
//! lock .agents (flock) → recover any journal → journal {items, new lockfile's sha256}
//!   → stage each new folder or link as PARENT/.skillcat-new-… (same file system)
//!   → for each target: rename old → PARENT/.skillcat-old-…, rename staged → target
//!   → rename the new lockfile over skills-lock.json      ← the commit
//!   → remove the old copies and the journal
//! ```
//!
//! A failure before the commit undoes every rename in reverse. A process killed anywhere leaves
//! the journal; [`recover`] (run first by every operation in the scope) reads it and, unless the
//! lockfile on disk is already the new one, puts every old folder back and removes what was
//! staged.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use skillcat_core::fs::AtomicWrite;

use super::{InstallError, Scope};
use crate::digest::{sha256, to_hex};

/// The journal's name, in the scope's `.agents` folder.
const JOURNAL: &str = ".skillcat-journal.json";
/// The journal while older versions wrote it (renamed to [`JOURNAL`] once whole); removed by
/// recovery like the core's temporary files.
const JOURNAL_TEMP: &str = ".skillcat-journal.json.tmp";

/// The scope's lock, held while it lives: exclusive for an operation that writes, shared for a
/// dry run (none at all when the scope has no `.agents` folder yet, which a dry run does not
/// create).
#[derive(Debug)]
pub(crate) struct ScopeLock {
    _file: Option<std::fs::File>,
}

impl ScopeLock {
    /// Waits for the scope's lock (an `flock` on its `.agents` folder), then recovers what a
    /// killed operation left.
    pub(crate) async fn acquire(scope: &Scope) -> Result<ScopeLock, InstallError> {
        let scope = scope.clone();
        tokio::task::spawn_blocking(move || {
            let dir = scope.state_dir();
            std::fs::create_dir_all(&dir).map_err(|e| InstallError::io(&dir, e))?;
            let file = std::fs::File::open(&dir).map_err(|e| InstallError::io(&dir, e))?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
                .map_err(|e| InstallError::io(&dir, e.into()))?;
            let lock = ScopeLock { _file: Some(file) };
            recover_locked(&scope)?;
            Ok(lock)
        })
        .await
        .map_err(|e| InstallError::Source(crate::Error::task("locking the scope", e)))?
    }

    /// The lock of an operation that writes ([`acquire`](Self::acquire)), or with `dry_run`
    /// the lock of a plan that is only shown: shared, taken only when the `.agents` folder
    /// exists (nothing is created), and refused while a journal waits to be recovered
    /// (recovering moves folders, which a dry run must not).
    pub(crate) async fn acquire_for(
        scope: &Scope,
        dry_run: bool,
    ) -> Result<ScopeLock, InstallError> {
        if !dry_run {
            return ScopeLock::acquire(scope).await;
        }
        let scope = scope.clone();
        tokio::task::spawn_blocking(move || {
            let dir = scope.state_dir();
            if !dir.is_dir() {
                return Ok(ScopeLock { _file: None });
            }
            let file = std::fs::File::open(&dir).map_err(|e| InstallError::io(&dir, e))?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockShared)
                .map_err(|e| InstallError::io(&dir, e.into()))?;
            for name in [JOURNAL, JOURNAL_TEMP] {
                if std::fs::symlink_metadata(dir.join(name)).is_ok() {
                    return Err(InstallError::Refused(vec![format!(
                        "an interrupted operation left {}; a dry run does not recover it: run `skillcat status` to complete or undo it, then the dry run again",
                        scope.shown(&dir.join(name))
                    )]));
                }
            }
            Ok(ScopeLock { _file: Some(file) })
        })
        .await
        .map_err(|e| InstallError::Source(crate::Error::task("locking the scope", e)))?
    }
}

/// What goes at one target.
#[derive(Debug, Clone)]
pub(crate) enum NewItem {
    /// A folder of files: `(relative path, bytes, executable)`.
    Dir(Vec<(String, Bytes, bool)>),
    /// A symbolic link with this text.
    Link(PathBuf),
}

/// One path changed: replaced by `new`, or removed (`None`).
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) target: PathBuf,
    pub(crate) new: Option<NewItem>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Journal {
    lockfile: PathBuf,
    lock_temp: Option<PathBuf>,
    /// sha256 (hex) of the new lockfile; `None` when it does not change.
    lock_sha256: Option<String>,
    items: Vec<JournalItem>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JournalItem {
    target: PathBuf,
    staged: Option<PathBuf>,
    backup: PathBuf,
    had_old: bool,
}

/// Applies `changes` and writes `lockfile` (the new lockfile's bytes; `None`: unchanged), all
/// or nothing. The caller holds the scope's [`ScopeLock`].
pub(crate) fn commit(
    scope: &Scope,
    changes: &[Change],
    lockfile: Option<&[u8]>,
) -> Result<(), InstallError> {
    let lock_path = scope.lockfile();
    if lockfile.is_some() {
        refuse_read_only(&lock_path)?;
    }
    for c in changes {
        check_inside(scope, &c.target)?;
    }
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let sibling = |target: &Path, what: &str, i: usize| -> PathBuf {
        let parent = target.parent().unwrap_or(Path::new("/"));
        parent.join(format!(".skillcat-{what}-{nonce}-{i}"))
    };
    let journal = Journal {
        lock_temp: lockfile.map(|_| {
            lock_path.with_file_name(format!(".{}.skillcat-{nonce}", super::LOCKFILE_NAME))
        }),
        lockfile: lock_path.clone(),
        lock_sha256: lockfile.map(|b| to_hex(sha256(b))),
        items: changes
            .iter()
            .enumerate()
            .map(|(i, c)| JournalItem {
                target: c.target.clone(),
                staged: c.new.as_ref().map(|_| sibling(&c.target, "new", i)),
                backup: sibling(&c.target, "old", i),
                had_old: std::fs::symlink_metadata(&c.target).is_ok(),
            })
            .collect(),
    };
    let journal_path = scope.state_dir().join(JOURNAL);
    // Whole or absent: a journal cut short is a temporary file recovery removes.
    AtomicWrite::new(0o644)
        .write(
            &journal_path,
            &serde_json::to_vec_pretty(&journal).expect("JSON"),
        )
        .map_err(|e| InstallError::io(&journal_path, e))?;
    let result = (|| {
        // Stage: nothing visible changes yet.
        for (item, change) in journal.items.iter().zip(changes) {
            if let (Some(staged), Some(new)) = (&item.staged, &change.new) {
                stage(staged, new)?;
            }
        }
        if let (Some(temp), Some(bytes)) = (&journal.lock_temp, lockfile) {
            write_synced(temp, bytes)?;
        }
        test_pause("lockfile-written");
        test_pause("staged");
        for item in &journal.items {
            if item.had_old {
                rename(&item.target, &item.backup)?;
            }
            test_pause("moved-old");
            if let Some(staged) = &item.staged {
                rename(staged, &item.target)?;
            }
            test_pause("moved-new");
        }
        if test_fail("lockfile") {
            return Err(InstallError::io(
                &lock_path,
                std::io::Error::other("failing the lockfile write, as the test asked"),
            ));
        }
        if let Some(temp) = &journal.lock_temp {
            rename(temp, &lock_path)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            test_pause("committed");
            finish(&journal, true);
            let _ = std::fs::remove_file(&journal_path);
            Ok(())
        }
        Err(e) => {
            finish(&journal, false);
            let _ = std::fs::remove_file(&journal_path);
            Err(e)
        }
    }
}

/// Puts the scope back in a consistent state after an operation was killed: takes the scope's
/// lock, and when a journal is left, completes it (the new lockfile is in place) or undoes it.
/// Every operation does this first; returns whether there was anything to recover.
pub async fn recover(scope: &Scope) -> Result<bool, InstallError> {
    let had = scope.state_dir().join(JOURNAL).exists();
    let _lock = ScopeLock::acquire(scope).await?;
    Ok(had)
}

fn recover_locked(scope: &Scope) -> Result<(), InstallError> {
    // A journal cut short was never renamed into place: nothing moved yet.
    remove_journal_temps(&scope.state_dir());
    let path = scope.state_dir().join(JOURNAL);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(InstallError::io(&path, e)),
    };
    let journal: Journal = match serde_json::from_slice(&bytes) {
        Ok(j) => j,
        Err(e) => {
            return Err(InstallError::Refused(vec![format!(
                "{} is not a journal this skillcat can read ({e}); look at what it lists, then move it away to go on",
                path.display()
            )]));
        }
    };
    let committed = journal.lock_sha256.as_ref().is_some_and(|want| {
        std::fs::read(&journal.lockfile).is_ok_and(|b| to_hex(sha256(&b)) == *want)
    });
    finish(&journal, committed);
    std::fs::remove_file(&path).map_err(|e| InstallError::io(&path, e))
}

/// Removes the temporary files of journals cut short: `.skillcat-journal.json.PID.N.tmp` (the
/// core's atomic write) and [`JOURNAL_TEMP`] (older versions).
fn remove_journal_temps(state_dir: &Path) {
    let _ = std::fs::remove_file(state_dir.join(JOURNAL_TEMP));
    let Ok(entries) = std::fs::read_dir(state_dir) else {
        return;
    };
    let prefix = format!("{JOURNAL}.");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with(".tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Completes (`committed`: drop the old copies) or undoes (put every old folder back) what the
/// journal lists, in reverse.
fn finish(journal: &Journal, committed: bool) {
    for item in journal.items.iter().rev() {
        if committed {
            remove_any(&item.backup);
        } else if std::fs::symlink_metadata(&item.backup).is_ok() {
            remove_any(&item.target);
            let _ = std::fs::rename(&item.backup, &item.target);
        } else if !item.had_old {
            remove_any(&item.target);
        }
        if let Some(staged) = &item.staged {
            remove_any(staged);
        }
    }
    if let Some(temp) = &journal.lock_temp {
        let _ = std::fs::remove_file(temp);
    }
}

/// Writes a new folder or link at `at` (which does not exist).
fn stage(at: &Path, new: &NewItem) -> Result<(), InstallError> {
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).map_err(|e| InstallError::io(parent, e))?;
    }
    match new {
        NewItem::Link(text) => {
            std::os::unix::fs::symlink(text, at).map_err(|e| InstallError::io(at, e))
        }
        NewItem::Dir(files) => {
            std::fs::create_dir(at).map_err(|e| InstallError::io(at, e))?;
            for (rel, bytes, exec) in files {
                let path = at.join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| InstallError::io(parent, e))?;
                }
                let mode = if *exec { 0o755 } else { 0o644 };
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(|e| InstallError::io(&path, e))?;
                f.write_all(bytes).map_err(|e| InstallError::io(&path, e))?;
                f.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|e| InstallError::io(&path, e))?;
            }
            Ok(())
        }
    }
}

/// A lockfile without any write bit is the user's way of saying "do not touch": refused before
/// anything is done (root, who may write anyway, is refused too).
fn refuse_read_only(path: &Path) -> Result<(), InstallError> {
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o222 == 0
    {
        return Err(InstallError::Refused(vec![format!(
            "{} is read-only: nothing was changed (make it writable to install)",
            path.display()
        )]));
    }
    Ok(())
}

/// In a project, a target must stay inside it once links are resolved: an agent folder that is
/// a link out of the project (`.claude -> /elsewhere`) is refused.
fn check_inside(scope: &Scope, target: &Path) -> Result<(), InstallError> {
    if scope.is_user() {
        return Ok(());
    }
    let root =
        std::fs::canonicalize(scope.root()).map_err(|e| InstallError::io(scope.root(), e))?;
    let parent = target.parent().unwrap_or(target);
    let existing = parent
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(scope.root());
    let real = std::fs::canonicalize(existing).map_err(|e| InstallError::io(existing, e))?;
    if !real.starts_with(&root) {
        return Err(InstallError::Refused(vec![format!(
            "{}: {} leads out of the project (to {}); nothing was installed there",
            target.display(),
            existing.display(),
            real.display()
        )]));
    }
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<(), InstallError> {
    std::fs::rename(from, to).map_err(|e| {
        InstallError::Source(crate::Error::io(
            format!("{} → {}", from.display(), to.display()),
            e,
        ))
    })
}

/// Removes a file, a link (never what it points to) or a folder and everything in it.
pub(crate) fn remove_any(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Writes a file and syncs it (the journal lists it, so a process killed meanwhile leaves
/// nothing that recovery does not remove).
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), InstallError> {
    let written = (|| {
        let mut f = std::fs::File::create(path)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(path);
        InstallError::io(path, e)
    })
}

/// Debug builds only: `SKILLCAT_TEST_PAUSE_MS=N` sleeps N ms at each step, so that a test can
/// kill the process between any two of them.
fn test_pause(_step: &str) {
    if cfg!(debug_assertions)
        && let Some(ms) = std::env::var("SKILLCAT_TEST_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Debug builds only: `SKILLCAT_TEST_FAIL=STEP` makes that step fail.
fn test_fail(step: &str) -> bool {
    cfg!(debug_assertions) && std::env::var("SKILLCAT_TEST_FAIL").is_ok_and(|v| v == step)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recovery removes what a journal write cut short left (the core's temporary file, or an
    /// older version's), and nothing else.
    #[test]
    fn journal_temporaries_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            ".skillcat-journal.json.4242.0.tmp",
            JOURNAL_TEMP,
            JOURNAL,
            ".skillcat-journal.json.4242.0",
            "skills-lock.json",
        ] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        remove_journal_temps(dir.path());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [JOURNAL, ".skillcat-journal.json.4242.0", "skills-lock.json"]
        );
    }
}
