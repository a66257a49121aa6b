//! Writing a file in one step: the one atomic write every crate uses.
//!
//! The bytes go to a new temporary file in the target's folder (created exclusively, with the
//! mode the caller chose whatever the umask, so a private file is never readable by others,
//! not even for a moment), which is synced and then renamed over the target: a reader sees the
//! old file or the new one, never a part. With [`Durability::Durable`] the folder is synced too,
//! so the new name survives a power cut. On any failure the temporary file is removed and the
//! target is left as it was.
//!
//! A temporary file is named `.NAME.PID.N.tmp` (`NAME` the target's file name, its leading dot
//! not doubled): a process killed between the create and the rename leaves one such file, which
//! the owner of the folder may sweep.
//!
//! ```
//! # fn main() -> std::io::Result<()> {
//! # let dir = tempfile::tempdir()?;
//! use skillcat_core::fs::{AtomicWrite, Durability};
//! let config = dir.path().join("config.toml");
//! AtomicWrite::new(0o600)
//!     .durability(Durability::Durable)
//!     .write(&config, b"[scripts]\n")?;
//! assert_eq!(std::fs::read(&config)?, b"[scripts]\n");
//! # Ok(())
//! # }
//! ```

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How much of a write must reach the disk before it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Nothing synced: for caches whose content is checked when read, or made again.
    Unsynced,
    /// The file's bytes are synced before the rename: after a crash the target holds the old
    /// bytes or the new ones, never an empty or partial file.
    File,
    /// The file and then its folder are synced: once the call returns, the new file is there
    /// after a crash too (configuration, keyrings, credentials, journals).
    Durable,
}

/// The settings of an atomic write: the new file's mode, its [`Durability`], whether it may
/// replace a file already there, and where its temporary file goes.
#[derive(Clone, Debug)]
pub struct AtomicWrite {
    mode: u32,
    durability: Durability,
    replace: bool,
    temp_dir: Option<PathBuf>,
}

impl AtomicWrite {
    /// A write of a file with permission bits `mode` (exactly: the umask does not apply), synced
    /// ([`Durability::File`]), replacing any file of the same name.
    pub fn new(mode: u32) -> AtomicWrite {
        AtomicWrite {
            mode,
            durability: Durability::File,
            replace: true,
            temp_dir: None,
        }
    }

    /// How much must reach the disk before the write returns.
    pub fn durability(mut self, durability: Durability) -> AtomicWrite {
        self.durability = durability;
        self
    }

    /// Leave a file already at the target alone: the write then fails with
    /// [`io::ErrorKind::AlreadyExists`] (for content-addressed files, where the file there holds
    /// the same bytes).
    pub fn keep_existing(mut self) -> AtomicWrite {
        self.replace = false;
        self
    }

    /// Put the temporary file in `dir` rather than beside the target: a folder the caller sweeps,
    /// which must be on the same file system as the target.
    pub fn temp_in(mut self, dir: impl Into<PathBuf>) -> AtomicWrite {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Writes `bytes` to `target` in one step.
    pub fn write(&self, target: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut file = self.create(target)?;
        file.write_all(bytes)?;
        file.commit()
    }

    /// A new temporary file for `target`, to be written and then [`commit`](AtomicFile::commit)ted;
    /// dropped without a commit, it is removed and the target is untouched.
    pub fn create(&self, target: &Path) -> io::Result<AtomicFile> {
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a file name to write", target.display()),
            )
        })?;
        let dir = match &self.temp_dir {
            Some(dir) => dir.as_path(),
            None => parent_of(target),
        };
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            // A hidden target's name keeps its one leading dot.
            let hidden = name.as_encoded_bytes().starts_with(b".");
            let mut temp_name = std::ffi::OsString::from(if hidden { "" } else { "." });
            temp_name.push(name);
            temp_name.push(format!(".{}.{n}.tmp", std::process::id()));
            let path = dir.join(temp_name);
            let mut open = OpenOptions::new();
            open.write(true).read(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut open, self.mode);
            match open.open(&path) {
                Ok(file) => {
                    let file = AtomicFile {
                        path,
                        file,
                        target: target.to_path_buf(),
                        durability: self.durability,
                        replace: self.replace,
                        done: false,
                    };
                    // The umask may have taken bits away: the caller's mode, exactly.
                    #[cfg(unix)]
                    {
                        use std::os::unix::fs::PermissionsExt;
                        file.file
                            .set_permissions(std::fs::Permissions::from_mode(self.mode))?;
                    }
                    return Ok(file);
                }
                // Left by a killed process that had the same id: take the next name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "no folder {} to write {} in",
                            dir.display(),
                            target.display()
                        ),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Writes `bytes` to `target` in one step with permission bits `mode`, synced
/// ([`Durability::File`]): [`AtomicWrite::new`]`(mode).write(target, bytes)`.
pub fn write_atomic(target: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    AtomicWrite::new(mode).write(target, bytes)
}

/// A temporary file that becomes the target when [`commit`](Self::commit)ted, and is removed
/// when dropped without a commit.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    file: File,
    target: PathBuf,
    durability: Durability,
    replace: bool,
    done: bool,
}

impl AtomicFile {
    /// The temporary file, open for reading and writing.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Where the temporary file is (to read back what was written before it is committed).
    pub fn temp_path(&self) -> &Path {
        &self.path
    }

    /// Syncs the file as the [`Durability`] asks, then puts it in place of the target.
    pub fn commit(mut self) -> io::Result<()> {
        if self.durability != Durability::Unsynced {
            self.file.sync_all()?;
        }
        if self.replace {
            std::fs::rename(&self.path, &self.target)?;
        } else {
            rename_no_replace(&self.path, &self.target)?;
        }
        self.done = true;
        if self.durability == Durability::Durable {
            // Renamed already: a failure here says the name may not survive a crash.
            File::open(parent_of(&self.target))?.sync_all()?;
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The folder `target` is in (`.` for a bare file name).
fn parent_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Renames `from` to `to` unless `to` exists (`AlreadyExists` then): `renameat2` with
/// `RENAME_NOREPLACE` where the kernel and file system have it, else a hard link and an unlink
/// (the link fails when `to` exists).
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {}
            Err(e) => return Err(e.into()),
        }
    }
    std::fs::hard_link(from, to)?;
    let _ = std::fs::remove_file(from);
    Ok(())
}

/// Makes `dir` and any missing parent folders only their owner can enter (0700), whatever the
/// process umask: where a user's configuration, keyring and credentials are kept, so that no
/// other user can plant a file there (a `keyring.toml`). Folders that already exist keep their
/// mode.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let missing: Vec<&Path> = dir
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .take_while(|p| std::fs::symlink_metadata(p).is_err())
        .collect();
    // Created 0700 less the umask (never wider), then set to exactly 0700: a umask that takes
    // the owner's bits too would leave a folder its owner cannot use.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    for p in missing {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_target_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.toml");
        std::fs::write(&target, "old").unwrap();
        for durability in [Durability::Unsynced, Durability::File, Durability::Durable] {
            AtomicWrite::new(0o644)
                .durability(durability)
                .write(&target, b"new")
                .unwrap();
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
            assert_eq!(names(dir.path()), ["a.toml"]);
        }
        write_atomic(&target, b"newer", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "newer");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("keyring.toml");
        std::fs::write(&target, "old").unwrap();
        // Written, then dropped before the commit (an error on the way): nothing changes.
        let mut file = AtomicWrite::new(0o600).create(&target).unwrap();
        file.write_all(b"half").unwrap();
        assert!(file.temp_path().exists());
        drop(file);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(names(dir.path()), ["keyring.toml"]);
        // The rename itself fails (a folder is in the way): the temporary file is removed.
        let blocked = dir.path().join("blocked");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("inside"), "x").unwrap();
        assert!(write_atomic(&blocked, b"new", 0o644).is_err());
        assert!(blocked.join("inside").exists());
        assert_eq!(names(dir.path()), ["blocked", "keyring.toml"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_mode_is_the_callers_whatever_the_umask_or_the_old_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let private = dir.path().join("tokens.toml");
        std::fs::write(&private, "old").unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o644)).unwrap();
        AtomicWrite::new(0o600)
            .durability(Durability::Durable)
            .write(&private, b"secret")
            .unwrap();
        assert_eq!(mode(&private), 0o600);
        // While it is written, the temporary file is private already.
        let file = AtomicWrite::new(0o600).create(&private).unwrap();
        assert_eq!(mode(file.temp_path()), 0o600);
        drop(file);
        let shared = dir.path().join("skill.tar.gz");
        write_atomic(&shared, b"archive", 0o644).unwrap();
        assert_eq!(mode(&shared), 0o644);
    }

    #[test]
    fn a_missing_folder_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("nowhere/config.toml");
        let e = write_atomic(&target, b"x", 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let shown = e.to_string();
        assert!(
            shown.contains("no folder") && shown.contains("nowhere"),
            "{shown}"
        );
        assert_eq!(names(dir.path()), Vec::<String>::new());
        let e = write_atomic(Path::new("/"), b"x", 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn keep_existing_leaves_a_file_there_alone() {
        let dir = tempfile::tempdir().unwrap();
        let blob = dir.path().join("ab12");
        let write = AtomicWrite::new(0o644)
            .durability(Durability::Unsynced)
            .keep_existing();
        write.write(&blob, b"first").unwrap();
        let e = write.write(&blob, b"second").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&blob).unwrap(), "first");
        assert_eq!(names(dir.path()), ["ab12"]);
    }

    #[test]
    fn the_temporary_file_can_go_elsewhere_and_be_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let target = dir.path().join("out.zip");
        let mut file = AtomicWrite::new(0o644)
            .temp_in(&tmp)
            .create(&target)
            .unwrap();
        assert!(file.temp_path().starts_with(&tmp));
        let name = file
            .temp_path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(".out.zip.") && name.ends_with(".tmp"),
            "{name}"
        );
        file.file().write_all(b"zip").unwrap();
        assert_eq!(std::fs::read(file.temp_path()).unwrap(), b"zip");
        file.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"zip");
        assert_eq!(names(&tmp), Vec::<String>::new());
    }

    #[test]
    fn a_hidden_targets_temporary_keeps_one_leading_dot() {
        let dir = tempfile::tempdir().unwrap();
        let file = AtomicWrite::new(0o644)
            .create(&dir.path().join(".journal.json"))
            .unwrap();
        let name = file.temp_path().file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with(".journal.json.") && name.ends_with(".tmp"),
            "{name}"
        );
    }

    #[test]
    fn private_dirs_are_0700_to_the_top_made_and_others_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("a");
        let dir = top.join("b/c");
        create_private_dir(&dir).unwrap();
        for d in [&top, &top.join("b"), &dir] {
            let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        let before = std::fs::metadata(tmp.path()).unwrap().permissions().mode();
        create_private_dir(&dir).unwrap();
        assert_eq!(
            std::fs::metadata(tmp.path()).unwrap().permissions().mode(),
            before
        );
    }
}
