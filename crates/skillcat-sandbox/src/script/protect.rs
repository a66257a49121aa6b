//! The protected set of a write grant: what runs code, or configures what runs, outside the
//! sandbox (git hooks and `core.fsmonitor`, direnv, editor tasks, agent settings, a project's
//! own `skillcat.toml`, shell start-up files, the skills of the catalog). Inside any tree
//! granted for writing, these are mounted read-only in the run's root whatever the grant says
//! (`[sandbox] protect` adds names, never removes one); a grant that names one, or lies inside
//! one, is read-only as a whole.
//!
//! The set is found by name among the entries of each write grant (one directory listed per
//! grant, no walk): a protected name deeper in the tree (a nested repository's `.git`) is
//! reached as the grant says, and one the script creates where there was none is its own.
//! Both are named in the threat model (`docs/sandbox.md`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Names protected wherever a write grant holds them. `.env` also covers every name that
/// starts with it (`.env.local`, `.envrc`).
pub const PROTECTED: &[&str] = &[
    // Version control: hooks, `core.fsmonitor`, filters and aliases run on the user's next
    // command.
    ".git",
    ".gitmodules",
    ".hg",
    ".svn",
    ".jj",
    // Environments loaded by the shell (direnv) or by tools.
    ".env",
    ".envrc",
    // Editors' and agents' workspace settings (tasks, MCP servers, hooks).
    ".vscode",
    ".idea",
    ".agents",
    ".claude",
    ".codex",
    ".cursor",
    ".mcp.json",
    // This project's own configuration and lock.
    "skillcat.toml",
    "skills-lock.json",
    // Shell and editor start-up files.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".inputrc",
    ".vimrc",
    ".gvimrc",
    ".exrc",
    ".nanorc",
    ".emacs",
    ".emacs.d",
];

/// Whether an entry called `name` is protected (`extra`: `[sandbox] protect`).
pub fn is_protected(name: &OsStr, extra: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    name.starts_with(".env")
        || PROTECTED.contains(&name)
        || extra.iter().any(|x| x.as_str() == name)
}

/// The protected paths of `write` (canonical write grants): the grants that name or lie inside a
/// protected name (whole), then each grant's entries with a protected name, `extra`'s relative
/// paths that exist beneath a grant, and every `catalog` directory (a skill source) inside a
/// grant — or the grant itself when it lies inside one. `list` names a directory's entries
/// (injected for tests). Sorted, without duplicates.
pub fn protected_paths(
    write: &[PathBuf],
    extra: &[String],
    catalog: &[PathBuf],
    list: &dyn Fn(&Path) -> Vec<std::ffi::OsString>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for g in write {
        let named = g.components().any(|c| is_protected(c.as_os_str(), extra));
        if named || catalog.iter().any(|c| g.starts_with(c)) {
            out.push(g.clone());
            continue;
        }
        for name in list(g) {
            if is_protected(&name, extra) {
                out.push(g.join(name));
            }
        }
        for x in extra.iter().filter(|x| x.contains('/')) {
            let rel = Path::new(x.trim_start_matches('/'));
            if rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
            {
                let p = g.join(rel);
                if std::fs::symlink_metadata(&p).is_ok() {
                    out.push(p);
                }
            }
        }
        out.extend(
            catalog
                .iter()
                .filter(|c| c.starts_with(g) && c.as_path() != g.as_path())
                .cloned(),
        );
    }
    out.sort();
    out.dedup();
    out
}

/// [`protected_paths`]'s real lister: the names in a directory (none when it is not one).
pub fn list_names(dir: &Path) -> Vec<std::ffi::OsString> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd.flatten().map(|e| e.file_name()).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn the_protected_set_of_each_write_grant() {
        let listing = |d: &Path| -> Vec<OsString> {
            match d.to_str().unwrap() {
                "/repo" => [
                    ".git",
                    ".envrc",
                    ".env.production",
                    ".environment-notes",
                    "skillcat.toml",
                    "src",
                    "README.md",
                    ".vscode",
                    "secrets.yml",
                    ".gitignore",
                ]
                .iter()
                .map(OsString::from)
                .collect(),
                _ => Vec::new(),
            }
        };
        let extra = vec!["secrets.yml".to_string()];
        /// (case, write grants, catalog, protected)
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);
        let cases: &[Case] = &[
            ("nothing granted", &[], &[], &[]),
            (
                "a repository",
                &["/repo"],
                &[],
                &[
                    "/repo/.env.production",
                    "/repo/.environment-notes",
                    "/repo/.envrc",
                    "/repo/.git",
                    "/repo/.vscode",
                    "/repo/secrets.yml",
                    "/repo/skillcat.toml",
                ],
            ),
            (
                "a grant inside .git",
                &["/repo/.git/hooks"],
                &[],
                &["/repo/.git/hooks"],
            ),
            (
                "a grant that is .claude",
                &["/p/.claude"],
                &[],
                &["/p/.claude"],
            ),
            ("a plain directory", &["/repo/src"], &[], &[]),
            (
                "a skill source inside",
                &["/data"],
                &["/data/skills"],
                &["/data/skills"],
            ),
            (
                "inside a skill source",
                &["/skills/x"],
                &["/skills"],
                &["/skills/x"],
            ),
            ("a sibling source", &["/data"], &["/database"], &[]),
        ];
        for (case, write, catalog, want) in cases {
            let write: Vec<PathBuf> = write.iter().map(PathBuf::from).collect();
            let catalog: Vec<PathBuf> = catalog.iter().map(PathBuf::from).collect();
            let got = protected_paths(&write, &extra, &catalog, &listing);
            let want: Vec<PathBuf> = want.iter().map(PathBuf::from).collect();
            assert_eq!(got, want, "{case}");
        }
        assert!(!is_protected(OsStr::new(".gitignore"), &[]));
        assert!(!is_protected(OsStr::new("src"), &extra));
        assert!(is_protected(OsStr::new(".bashrc"), &[]));
    }
}
