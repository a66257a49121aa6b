//! Home containment: a grant that holds a home directory (`.` run from `/home`, `/`, a link to
//! either) never reaches the secrets kept there.
//!
//! Landlock cannot say "everything beneath this directory but that one", so a granted path
//! that holds a protected path is granted **entry by entry** instead: each directory on the
//! way from the granted path down to a protected path is replaced by rules for its other
//! entries, and the protected path gets no rule at all. The directories on the way themselves
//! get none either, so they cannot be listed (a listing would name what is protected), and
//! nothing can be created in them; everything else in the grant is reached as before.
//! Symbolic links among those entries get no rule: a link is followed to its target, whose
//! own place decides (a link to `~/.ssh/id_rsa` reaches nothing).
//!
//! The protected set ([`SECRETS`]) is kept under every home directory this process can name:
//! `$HOME` and the home of its user in the password database, whoever runs skillcat (root's
//! `/root` included).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// What is protected under a home directory: keys, tokens, credentials, the configuration of
/// every program (`~/.config`, skillcat's own keyring and tokens among them), shell histories
/// and browser profiles. Relative to the home directory.
pub const SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".gcloud",
    ".config",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".gitconfig",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".boto",
    ".s3cfg",
    ".oci",
    ".vault-token",
    ".terraform.d",
    ".password-store",
    ".local/share/keyrings",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".pki",
    ".mozilla",
    ".thunderbird",
    ".claude",
    ".codex",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".node_repl_history",
    ".lesshst",
    ".viminfo",
];

/// A directory's entries, each with whether it is a symbolic link.
pub type Entries = Vec<(OsString, bool)>;

/// The most entries one directory on the way to a protected path may have (each becomes a
/// rule).
pub const MAX_ENTRIES: usize = 4096;

/// The home directories of this process, canonical: `$HOME` and its user's home in the
/// password database (either may be missing, or both the same).
pub fn homes() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        v.push(PathBuf::from(h));
    }
    if let Some(h) = passwd_home() {
        v.push(h);
    }
    let mut out: Vec<PathBuf> = v
        .into_iter()
        .filter(|h| h.is_absolute() && h.parent().is_some())
        .filter_map(|h| std::fs::canonicalize(h).ok())
        .filter(|h| h.parent().is_some())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn passwd_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: a zeroed plain-data struct and a live buffer; getpwuid_r fills them.
    unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut out: *mut libc::passwd = std::ptr::null_mut();
        let r = libc::getpwuid_r(
            libc::geteuid(),
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut out,
        );
        if r != 0 || out.is_null() || pw.pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr(pw.pw_dir);
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())))
    }
}

/// The protected paths under `homes`.
pub fn protected(homes: &[PathBuf]) -> Vec<PathBuf> {
    homes
        .iter()
        .flat_map(|h| SECRETS.iter().map(move |s| h.join(s)))
        .collect()
}

/// What granting `root` (absolute, canonical) amounts to once the `protected` paths beneath it
/// are carved out: `[root]` when it holds none of them (the common case: no directory is
/// read); otherwise the other entries of every directory on the way down to each, with the
/// protected paths, the directories on the way and symbolic links left out. `list` names a
/// directory's entries (injected for tests). A directory on the way with more than
/// [`MAX_ENTRIES`] entries is an error.
pub fn carve(
    root: &Path,
    protected: &[PathBuf],
    list: &dyn Fn(&Path) -> io::Result<Entries>,
) -> io::Result<Vec<PathBuf>> {
    let beneath: Vec<&PathBuf> = protected
        .iter()
        .filter(|p| p.starts_with(root) && p.as_path() != root)
        .collect();
    if beneath.is_empty() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = list(&dir)?;
        if entries.len() > MAX_ENTRIES {
            return Err(io::Error::other(format!(
                "{} holds a home directory's secrets and has {} entries, more than the {} a \
                 grant carved entry by entry may have; grant a narrower path",
                dir.display(),
                entries.len(),
                MAX_ENTRIES
            )));
        }
        for (name, is_link) in entries {
            let child = dir.join(&name);
            if beneath.iter().any(|p| **p == child) || is_link {
                continue;
            }
            if beneath.iter().any(|p| p.starts_with(&child)) {
                stack.push(child);
            } else {
                out.push(child);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// [`carve`]'s real lister: the entries of a directory, each with whether it is a symbolic
/// link (a missing directory has none).
pub fn list_dir(dir: &Path) -> io::Result<Entries> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
    };
    let mut v = Vec::new();
    for e in rd {
        let e = e?;
        let link = e.file_type().map(|t| t.is_symlink()).unwrap_or(true);
        v.push((e.file_name(), link));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A lister over a table of directories.
    fn table(t: &[(&str, &[(&str, bool)])]) -> impl Fn(&Path) -> io::Result<Vec<(OsString, bool)>> {
        let map: BTreeMap<PathBuf, Vec<(OsString, bool)>> = t
            .iter()
            .map(|(d, es)| {
                (
                    PathBuf::from(d),
                    es.iter().map(|(n, l)| (OsString::from(n), *l)).collect(),
                )
            })
            .collect();
        move |p: &Path| Ok(map.get(p).cloned().unwrap_or_default())
    }

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn a_grant_beside_the_home_is_kept_whole() {
        let p = protected(&paths(&["/home/u"]));
        let list = table(&[]);
        for root in [
            "/srv/data",
            "/home/u/project",
            "/home/uu",
            "/home/u/.config/app",
        ] {
            assert_eq!(
                carve(Path::new(root), &p, &list).unwrap(),
                paths(&[root]),
                "{root}"
            );
        }
    }

    #[test]
    fn a_grant_holding_the_home_is_carved_entry_by_entry() {
        let p = protected(&paths(&["/home/u"]));
        let list = table(&[
            ("/", &[("home", false), ("etc", false), ("srv", false)]),
            ("/home", &[("u", false), ("v", false), ("lost", true)]),
            (
                "/home/u",
                &[
                    (".ssh", false),
                    (".config", false),
                    (".netrc", false),
                    ("notes.txt", false),
                    ("project", false),
                    ("key-link", true),
                    (".local", false),
                ],
            ),
            ("/home/u/.local", &[("share", false), ("bin", false)]),
            (
                "/home/u/.local/share",
                &[("keyrings", false), ("fonts", false)],
            ),
        ]);
        assert_eq!(
            carve(Path::new("/home"), &p, &list).unwrap(),
            paths(&[
                "/home/u/.local/bin",
                "/home/u/.local/share/fonts",
                "/home/u/notes.txt",
                "/home/u/project",
                "/home/v",
            ])
        );
        assert_eq!(
            carve(Path::new("/"), &p, &list).unwrap(),
            paths(&[
                "/etc",
                "/home/u/.local/bin",
                "/home/u/.local/share/fonts",
                "/home/u/notes.txt",
                "/home/u/project",
                "/home/v",
                "/srv",
            ])
        );
        // The home itself, granted: the same carve below it.
        assert_eq!(
            carve(Path::new("/home/u"), &p, &list).unwrap(),
            paths(&[
                "/home/u/.local/bin",
                "/home/u/.local/share/fonts",
                "/home/u/notes.txt",
                "/home/u/project",
            ])
        );
    }

    #[test]
    fn a_directory_too_large_to_carve_is_refused() {
        let p = protected(&paths(&["/home/u"]));
        let many: Vec<(String, bool)> = (0..=MAX_ENTRIES)
            .map(|i| (format!("f{i}"), false))
            .collect();
        let list = move |d: &Path| -> io::Result<Vec<(OsString, bool)>> {
            Ok(if d == Path::new("/home/u") {
                many.iter().map(|(n, l)| (OsString::from(n), *l)).collect()
            } else {
                vec![(OsString::from("u"), false)]
            })
        };
        let e = carve(Path::new("/home"), &p, &list).unwrap_err();
        assert!(e.to_string().contains("more than the 4096"), "{e}");
    }

    #[test]
    fn the_secret_set_covers_keys_tokens_and_configuration() {
        for s in [
            ".ssh", ".gnupg", ".aws", ".config", ".netrc", ".docker", ".kube",
        ] {
            assert!(SECRETS.contains(&s), "{s}");
        }
        assert!(
            SECRETS
                .iter()
                .all(|s| !s.starts_with('/') && !s.contains(".."))
        );
    }
}
