//! Homes by allow-list: a grant that holds a home directory (`.` run from `/home`, `/`, a link
//! to either, the home itself) reaches that home's dot-files and dot-directories — where every
//! program keeps its keys, tokens, credentials, settings and histories — only where a grant
//! names them explicitly (`--allow-read ~/.config/app`); everything else in the home is
//! reached as granted. A grant inside another account's home is refused.
//!
//! There is no list of secrets to keep up to date: whatever starts with `.` directly in a
//! home is left out, whatever its name (a tool's token file that did not exist when this was
//! written included). The homes are this process's own (`$HOME` and its user's home in the
//! password database) and every account's of the password database that has one: root's
//! `/root`, and each regular account's (uid 1000 and above, not `nobody`).
//!
//! Landlock cannot say "everything beneath this directory but that one", so a granted path
//! that holds a home is granted **entry by entry** instead: each directory on the way from the
//! granted path down to a home is replaced by rules for its other entries, and the home by
//! rules for its entries that do not start with `.`. The directories on the way and the home
//! itself get no rule, so they cannot be listed (a listing would name what is left out) and
//! nothing can be created in them. Symbolic links among those entries get no rule: a link is
//! followed to its target, whose own place decides. The run's own root (`sandbox::linux`)
//! holds only the rules' paths, so what is left out does not exist for the script at all.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// A home directory (canonical) and whether it is this process's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// The directory.
    pub path: PathBuf,
    /// This process's own (`$HOME`, its user's home); else another account's.
    pub own: bool,
    /// The account's uid (`None` for `$HOME`).
    pub uid: Option<u32>,
}

/// A directory's entries, each with whether it is a symbolic link.
pub type Entries = Vec<(OsString, bool)>;

/// The most entries one directory on the way to a protected path may have (each becomes a
/// rule).
pub const MAX_ENTRIES: usize = 4096;

/// Every home directory this module protects, canonical, each once (own ones first): `$HOME`
/// and the home of this process's user (own), then the homes of the password database's root
/// and regular accounts (uid 0, or 1000 and above but `nobody`).
pub fn homes(home: Option<&Path>) -> Vec<Home> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    homes_from(home.map(Path::to_path_buf), me, &passwd, &|p: &Path| {
        std::fs::canonicalize(p).ok().filter(|c| c.is_dir())
    })
}

/// [`homes`] from `$HOME`, this process's uid and the password database's text; `canonical`
/// resolves a directory (`None`: missing, not a directory).
pub fn homes_from(
    env_home: Option<PathBuf>,
    me: u32,
    passwd: &str,
    canonical: &dyn Fn(&Path) -> Option<PathBuf>,
) -> Vec<Home> {
    let mut out: Vec<Home> = Vec::new();
    let mut add = |path: &Path, own: bool, uid: Option<u32>| {
        if !path.is_absolute() {
            return;
        }
        let Some(path) = canonical(path).filter(|p| p.parent().is_some()) else {
            return;
        };
        if !out.iter().any(|h| h.path == path) {
            out.push(Home { path, own, uid });
        }
    };
    if let Some(h) = env_home.filter(|h| !h.as_os_str().is_empty()) {
        add(&h, true, None);
    }
    let accounts: Vec<(u32, PathBuf)> = passwd
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((f.get(2)?.parse().ok()?, PathBuf::from(f.get(5)?)))
        })
        .collect();
    for (uid, dir) in &accounts {
        if *uid == me {
            add(dir, true, Some(*uid));
        }
    }
    for (uid, dir) in &accounts {
        if *uid != me && (*uid == 0 || (*uid >= 1000 && *uid != 65534)) {
            add(dir, false, Some(*uid));
        }
    }
    out
}

/// What granting `root` (absolute, canonical) amounts to among `homes`: refused
/// (`PermissionDenied`) when it lies in another account's home and in none of this process's
/// own; otherwise [`carve`]d around the dot-entries of every home it holds (`list` names a
/// directory's entries).
pub fn grantable(
    root: &Path,
    homes: &[Home],
    list: &dyn Fn(&Path) -> io::Result<Entries>,
) -> io::Result<Vec<PathBuf>> {
    let inside = |own: bool| {
        homes
            .iter()
            .filter(|h| h.own == own)
            .find(|h| root.starts_with(&h.path))
    };
    if let (Some(other), None) = (inside(false), inside(true)) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is in {}, the home directory of another account{}; a grant never reaches \
                 another user's home",
                root.display(),
                other.path.display(),
                other.uid.map(|u| format!(" (uid {u})")).unwrap_or_default()
            ),
        ));
    }
    let mut protected = Vec::new();
    for h in homes.iter().filter(|h| h.path.starts_with(root)) {
        match list(&h.path) {
            Ok(entries) => protected.extend(
                entries
                    .into_iter()
                    .filter(|(name, _)| name.as_encoded_bytes().starts_with(b"."))
                    .map(|(name, _)| h.path.join(name)),
            ),
            // A home this process cannot list (another account's, 0700): left out whole.
            Err(_) if h.path != root => protected.push(h.path.clone()),
            Err(e) => return Err(e),
        }
    }
    carve(root, &protected, list)
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
                "{} holds a home directory and has {} entries, more than the {} a grant \
                 carved entry by entry may have; grant a narrower path",
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

    /// Protected paths under `/home/u` for [`carve`]'s own tests (one of them deeper than an
    /// entry of the home: carve descends to any depth).
    fn protected(_homes: &[PathBuf]) -> Vec<PathBuf> {
        paths(&[
            "/home/u/.ssh",
            "/home/u/.config",
            "/home/u/.netrc",
            "/home/u/.local/share/keyrings",
        ])
    }

    fn own(p: &str) -> Home {
        Home {
            path: p.into(),
            own: true,
            uid: None,
        }
    }

    fn other(p: &str, uid: u32) -> Home {
        Home {
            path: p.into(),
            own: false,
            uid: Some(uid),
        }
    }

    #[test]
    fn every_dot_entry_of_a_held_home_is_left_out_unless_named() {
        let list = table(&[
            ("/", &[("home", false), ("root", false), ("etc", false)]),
            ("/home", &[("u", false), ("v", false)]),
            (
                "/home/u",
                &[
                    (".cache", false),
                    (".gemini", false),
                    (".terraformrc", false),
                    (".kaggle", false),
                    (".claude.json", false),
                    (".bash_history", false),
                    (".subversion", false),
                    (".config", false),
                    ("notes", false),
                    ("project", false),
                    ("dot-link", true),
                ],
            ),
            ("/home/v", &[(".netrc", false), ("shared", false)]),
            ("/root", &[(".ssh", false), ("work", false)]),
        ]);
        let homes = [own("/home/u"), other("/home/v", 1001), other("/root", 0)];
        // (case, granted, what the grant amounts to)
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "the home itself",
                "/home/u",
                &["/home/u/notes", "/home/u/project"],
            ),
            (
                "the homes' parent",
                "/home",
                &["/home/u/notes", "/home/u/project", "/home/v/shared"],
            ),
            (
                "the whole tree",
                "/",
                &[
                    "/etc",
                    "/home/u/notes",
                    "/home/u/project",
                    "/home/v/shared",
                    "/root/work",
                ],
            ),
            ("inside the home", "/home/u/project", &["/home/u/project"]),
            (
                "a dot path named",
                "/home/u/.config/foo",
                &["/home/u/.config/foo"],
            ),
            ("beside the homes", "/srv", &["/srv"]),
        ];
        for (case, root, want) in cases {
            assert_eq!(
                grantable(Path::new(root), &homes, &list).unwrap(),
                paths(want),
                "{case}"
            );
        }
        // A home that cannot be listed (another account's, closed): left out whole.
        let closed = |d: &Path| -> io::Result<Entries> {
            if d == Path::new("/home/v") {
                Err(io::Error::from(io::ErrorKind::PermissionDenied))
            } else {
                list(d)
            }
        };
        assert_eq!(
            grantable(Path::new("/home"), &homes, &closed).unwrap(),
            paths(&["/home/u/notes", "/home/u/project"])
        );
        for refused in ["/home/v", "/home/v/shared", "/root/work"] {
            let e = grantable(Path::new(refused), &homes, &list).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{refused}");
            assert!(e.to_string().contains("another account"), "{e}");
        }
    }

    #[test]
    fn the_homes_are_own_first_then_root_and_regular_accounts() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n\
                      www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n\
                      nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n\
                      u:x:1000:1000::/home/u:/bin/bash\n\
                      v:x:1001:1001::/home/v:/bin/bash\n\
                      gone:x:1002:1002::/home/gone:/bin/bash\n\
                      rel:x:1003:1003::home/rel:/bin/bash\n";
        let exists = |p: &Path| {
            (!p.starts_with("/home/gone") && !p.starts_with("/nonexistent"))
                .then(|| p.to_path_buf())
        };
        let got = homes_from(Some("/work/me".into()), 1000, passwd, &exists);
        assert_eq!(
            got,
            vec![
                own("/work/me"),
                Home {
                    path: "/home/u".into(),
                    own: true,
                    uid: Some(1000)
                },
                other("/root", 0),
                other("/home/v", 1001),
            ]
        );
        // Root's own home is its own.
        let got = homes_from(None, 0, passwd, &exists);
        assert!(got[0].own && got[0].path == Path::new("/root"), "{got:?}");
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
}
