//! Why a failed run could not reach a file: the paths a script's output reports as
//! `Permission denied` (or not found), set against the run's grant, so that a host can say what
//! would let the script reach them (`skillcat run` prints a hint naming the flag or the
//! frontmatter key).
//!
//! ```text
//! cat: /home/u/p/app.log: Permission denied        → /home/u/p/app.log, NotGranted
//! sh: 1: cannot create out.txt: Permission denied   → <start>/out.txt,   ReadOnly (cwd readable)
//! awk: cannot open app.log (No such file or directory)
//!                      (script started in its work directory) → <caller>/app.log, InCallerDir
//! ```
//!
//! The output is a script's own text: this reads it for hints only, never to decide anything.
//! And since a script can name any path it likes, a grant is suggested by allow-list only
//! ([`may_suggest`]): a path in the caller's directory or under a root the run already grants,
//! never a hidden (dot) file or directory there or in a home (`.git`, `.env`, `.ssh`), nor a
//! project's configuration (`skillcat.toml`, `skills-lock.json`). Beyond those bases, a path the
//! run's own arguments named ([`RunPlace::named`]: the caller asked for it, the script only
//! repeats it) that exists on the host, in a home or a temporary directory (`/tmp`,
//! `/var/tmp`, `$TMPDIR`), is suggested too, unless a part of it is hidden. Any other reported
//! path is still named, with no grant ([`Denial::grant`] is `None`).
//!
//! A run granted a host list reaches the network only through its proxy; a direct connection
//! (to an IP address, bypassing `HTTPS_PROXY`) is refused by the kernel with `Permission
//! denied`. [`direct_connection`] finds it in the output, so that a host can say to connect to
//! the granted name through the proxy.

use std::path::{Path, PathBuf};

use super::policy::lexical_normalize;
use crate::capability::Grant;

/// Why the script could not reach a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Outside everything the run may read or write: a grant would reach it.
    NotGranted,
    /// Readable in this run but not writable (a write was refused): a write grant would reach
    /// it.
    ReadOnly,
    /// Granted, yet the file's permissions keep out the unprivileged user scripts run as on a
    /// root host (uid 65534).
    FilePermissions,
    /// Not found where the script looked (it started in its work directory), but it exists in
    /// the caller's directory: the script starts there only when its grant reaches it.
    InCallerDir,
}

/// A path a failed run's output reports, and why the script could not reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The path as the output wrote it.
    pub written: String,
    /// The path, absolute and lexically clean.
    pub path: PathBuf,
    /// What would have let the script reach it.
    pub reach: Reach,
    /// What to grant: the path when it exists, else its nearest existing directory (a grant
    /// needs a file to bind; a file the script wanted to create is reached through its
    /// directory). `None` when no grant may be suggested for it ([`may_suggest`]).
    pub grant: Option<PathBuf>,
}

/// Where a run happened, for [`denials`].
#[derive(Debug, Clone, Copy)]
pub struct RunPlace<'a> {
    /// The run's grant (its paths canonical, as [`crate::capability::intersect`] gives them).
    pub grant: &'a Grant,
    /// The caller's directory, when it has one ([`super::RunnerConfig::caller_dir`]).
    pub caller: Option<&'a Path>,
    /// Whether the script started in the caller's directory ([`super::start_dir`]); otherwise
    /// it started in its work directory, where a relative path pointed.
    pub started_in_caller: bool,
    /// Paths the script could read without a grant (the system directories).
    pub system: &'a [PathBuf],
    /// The workspaces directory: what lies there is the script's own.
    pub workspaces: &'a Path,
    /// Home directories (the caller's, root's): their hidden files and directories are never
    /// suggested for a grant, whatever the run's grant holds.
    pub homes: &'a [PathBuf],
    /// The words of the run's arguments ([`argument_words`]): a path among them was the
    /// caller's to name, so it may be suggested in a home or a temporary directory too (when
    /// it exists on the host and no part of it is hidden).
    pub named: &'a [String],
}

/// Every string of a run's JSON arguments, whole and word by word (`{"args": "-n /data/x"}`
/// gives `-n /data/x`, `-n`, `/data/x`), for [`RunPlace::named`].
pub fn argument_words(args: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim_matches(|c: char| c == '\'' || c == '"');
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    let mut stack = vec![args];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::String(s) => {
                push(s);
                s.split_whitespace().for_each(&mut push);
            }
            serde_json::Value::Array(a) => stack.extend(a),
            serde_json::Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    out
}

/// Whether `path` (absolute, clean) is one the run's arguments named (as written, or relative
/// to the caller's directory), in a home or a temporary directory, with no hidden part nor a
/// project's configuration anywhere in it: the caller asked for it, so suggesting its grant
/// tells them nothing new. Still an allow-list: a system file the arguments name
/// (`/etc/hostname`) is not suggested.
fn named_by_caller(path: &Path, place: &RunPlace<'_>) -> bool {
    let temp = std::env::temp_dir();
    let in_base = place
        .homes
        .iter()
        .map(PathBuf::as_path)
        .chain([Path::new("/tmp"), Path::new("/var/tmp"), temp.as_path()])
        .filter(|b| b.parent().is_some())
        .any(|b| path.starts_with(b) && path != b);
    let plain = path.components().all(|c| match c {
        std::path::Component::RootDir => true,
        std::path::Component::Normal(n) => {
            let n = n.to_string_lossy();
            !n.starts_with('.') && !PROJECT_FILES.contains(&n.as_ref())
        }
        _ => false,
    });
    plain
        && in_base
        && place.named.iter().any(|w| {
            let w = Path::new(w);
            let full = if w.is_absolute() {
                lexical_normalize(w)
            } else if let Some(c) = place.caller {
                lexical_normalize(&c.join(w))
            } else {
                return false;
            };
            full == path
        })
}

/// At most this many denials with a grant to suggest are reported (the first ones in the
/// output), and at most as many without one.
const MAX_DENIALS: usize = 5;

/// Names never suggested for a grant even where everything else is: a project's own
/// configuration (hidden files and directories are refused by their leading dot).
const PROJECT_FILES: [&str; 2] = ["skillcat.toml", "skills-lock.json"];

/// Whether a grant of `path` (absolute, lexically clean) may be suggested: it lies in the
/// caller's directory or under a root the run already grants — a base that is not `/` — and
/// no part of it below that base, nor below a home holding it, is hidden (starts with `.`),
/// nor is it a project's configuration. An allow-list: every other path is not suggested.
pub fn may_suggest(path: &Path, place: &RunPlace<'_>) -> bool {
    let plain = |rel: &Path| {
        rel.components().all(|c| match c {
            std::path::Component::Normal(n) => {
                let n = n.to_string_lossy();
                !n.starts_with('.') && !PROJECT_FILES.contains(&n.as_ref())
            }
            _ => false,
        })
    };
    let in_base = place
        .caller
        .into_iter()
        .chain(place.grant.fs_read.iter().map(PathBuf::as_path))
        .chain(place.grant.fs_write.iter().map(PathBuf::as_path))
        .filter(|b| b.parent().is_some())
        .any(|b| path.strip_prefix(b).is_ok_and(plain));
    let hidden_in_home = place
        .homes
        .iter()
        .filter(|h| h.parent().is_some())
        .any(|h| path.strip_prefix(h).is_ok_and(|rel| !plain(rel)));
    in_base && !hidden_in_home
}

/// The paths `output` reports as `Permission denied` (or `Read-only file system`: a read grant
/// is a read-only mount on a root host) outside what the run could reach, or as
/// missing when they exist in the caller's directory, each with why (at most five, in the order
/// of the output, each path once). A path within the script's own workspace, or one the output
/// does not name recognisably, gives nothing.
pub fn denials(output: &str, place: &RunPlace<'_>) -> Vec<Denial> {
    let mut out: Vec<Denial> = Vec::new();
    let count = |out: &[Denial], suggested: bool| {
        out.iter()
            .filter(|d| d.grant.is_some() == suggested)
            .count()
    };
    for line in output.lines() {
        let lower = line.to_lowercase();
        // A read grant is a read-only mount on a root host: a write there is EROFS.
        let read_only = lower.contains("read-only file system") || lower.contains("erofs");
        let denied = read_only || lower.contains("permission denied") || lower.contains("eacces");
        let missing = lower.contains("no such file or directory") || lower.contains("enoent");
        if !denied && !missing {
            continue;
        }
        for written in candidates(line) {
            let found = if denied {
                denied_path(&written, place, read_only)
            } else {
                missing_path(&written, place)
            };
            if let Some(d) = found
                && !out.iter().any(|o| o.path == d.path)
                && count(&out, d.grant.is_some()) < MAX_DENIALS
            {
                out.push(d);
            }
            if count(&out, true) == MAX_DENIALS && count(&out, false) == MAX_DENIALS {
                return out;
            }
        }
    }
    out
}

/// [`denials`] for a run of a runner configured with `config` under `grant` (the skill's
/// script grant), its arguments' words `named`: the place a host that holds a runner (an MCP
/// server) knows without an environment of its own.
pub fn runner_denials(
    output: &str,
    grant: &Grant,
    config: &super::RunnerConfig,
    named: &[String],
) -> Vec<Denial> {
    let caller = config.caller_dir.as_deref();
    let workspaces = std::fs::canonicalize(&config.workspace_base)
        .unwrap_or_else(|_| config.workspace_base.clone());
    let system = super::sandbox::system_read_paths(grant.network.any());
    let mut homes: Vec<PathBuf> = config.user_dirs.home.iter().cloned().collect();
    homes.push(PathBuf::from("/root"));
    let place = RunPlace {
        grant,
        caller,
        started_in_caller: caller.is_some_and(|c| super::start_dir(grant, c).is_some()),
        system: &system,
        workspaces: &workspaces,
        homes: &homes,
        named,
    };
    denials(output, &place)
}

/// A path reported as `Permission denied` (`read_only`: as `Read-only file system`).
fn denied_path(written: &str, place: &RunPlace<'_>, read_only: bool) -> Option<Denial> {
    let base = if Path::new(written).is_absolute() {
        Path::new("/")
    } else if place.started_in_caller {
        place.caller?
    } else {
        // Relative to the work directory: the script's own.
        return None;
    };
    let path = lexical_normalize(&base.join(written));
    if !path.is_absolute() || path.starts_with(place.workspaces) || path == Path::new("/") {
        return None;
    }
    let under = |roots: &[PathBuf]| roots.iter().any(|r| path.starts_with(r));
    let grant = place.grant;
    let reach = if under(&grant.fs_write) {
        if !is_root_host() {
            return None;
        }
        Reach::FilePermissions
    } else if under(&grant.fs_read) || under(place.system) {
        // Readable here: a write was refused, unless the file is there and the sandbox user
        // cannot read it.
        if !read_only && path.exists() && is_root_host() && !world_reachable(&path) {
            Reach::FilePermissions
        } else {
            Reach::ReadOnly
        }
    } else {
        Reach::NotGranted
    };
    // Never suggest granting the whole file system.
    let grant = existing(&path).filter(|p| p.parent().is_some())?;
    Some(Denial {
        written: written.to_string(),
        grant: ((may_suggest(&path, place) && may_suggest(&grant, place))
            || (grant == path && named_by_caller(&path, place)))
        .then_some(grant),
        path,
        reach,
    })
}

/// A path reported missing: a relative one that exists in the caller's directory, where the
/// script did not start; or one that exists on the host outside the grant (the run's own root
/// holds only what it was granted, so there such a path is not found rather than refused).
fn missing_path(written: &str, place: &RunPlace<'_>) -> Option<Denial> {
    if Path::new(written).is_absolute() || place.started_in_caller {
        let base = if Path::new(written).is_absolute() {
            Path::new("/")
        } else {
            place.caller?
        };
        let path = lexical_normalize(&base.join(written));
        let under = |roots: &[PathBuf]| roots.iter().any(|r| path.starts_with(r));
        let grant = place.grant;
        if !path.is_absolute()
            || path.starts_with(place.workspaces)
            || path.parent().is_none()
            || under(&grant.fs_read)
            || under(&grant.fs_write)
            || under(place.system)
            || std::fs::symlink_metadata(&path).is_err()
        {
            return None;
        }
        return Some(Denial {
            written: written.to_string(),
            grant: (may_suggest(&path, place) || named_by_caller(&path, place))
                .then(|| path.clone()),
            path,
            reach: Reach::NotGranted,
        });
    }
    let caller = place.caller?;
    let path = lexical_normalize(&caller.join(written));
    if !path.starts_with(caller) || !path.exists() {
        return None;
    }
    Some(Denial {
        written: written.to_string(),
        grant: may_suggest(&path, place).then(|| path.clone()),
        path,
        reach: Reach::InCallerDir,
    })
}

/// The path itself when it exists, else its nearest existing ancestor.
fn existing(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|p| std::fs::symlink_metadata(p).is_ok())
        .map(Path::to_path_buf)
}

fn is_root_host() -> bool {
    // SAFETY: geteuid has no preconditions.
    cfg!(target_os = "linux") && unsafe { libc::geteuid() } == 0
}

/// Whether "others" may read the file and search every directory above it (what uid 65534
/// needs).
fn world_reachable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode());
    mode(path).is_ok_and(|m| m & 0o004 != 0)
        && path
            .ancestors()
            .skip(1)
            .all(|d| mode(d).is_ok_and(|m| m & 0o001 != 0))
}

/// The words of a line that may be paths: quoted text (`'…'`, `"…"`, `` `…' ``, `‘…’`, `“…”`),
/// then each blank-separated word of the rest stripped of punctuation around it that names a
/// path (holds a `/` or a `.` between other characters), skipping the program name that opens
/// the line (`cat:`).
fn candidates(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !s.contains('\0') && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    // Quoted text first; what is left, with the quoted parts blanked, is read word by word.
    let mut unquoted = line.to_string();
    for (open, close) in [
        ('`', '\''),
        ('\'', '\''),
        ('"', '"'),
        ('‘', '’'),
        ('“', '”'),
    ] {
        let mut from = 0;
        while let Some(i) = unquoted[from..].find(open).map(|i| from + i) {
            let start = i + open.len_utf8();
            let Some(j) = unquoted[start..].find(close).map(|j| start + j) else {
                break;
            };
            let quoted = unquoted[start..j].to_string();
            if looks_like_path(&quoted) {
                push(&quoted);
                let end = j + close.len_utf8();
                unquoted.replace_range(i..end, &" ".repeat(end - i));
                from = end;
            } else {
                from = start;
            }
        }
    }
    // The word that opens the line is the program's name (`cat:`, `/bin/sh:`) unless nothing
    // else on the line names a path.
    let mut program = None;
    for (i, word) in unquoted.split_whitespace().enumerate() {
        if i == 0 && word.ends_with(':') {
            program = Some(word.trim_end_matches(':'));
            continue;
        }
        let word = word.trim_matches(|c: char| {
            matches!(
                c,
                ':' | ',' | ';' | '(' | ')' | '[' | ']' | '\'' | '"' | '`' | '‘' | '’' | '“' | '”'
            )
        });
        if looks_like_path(word) {
            push(word);
        }
    }
    if let Some(word) = program.filter(|w| looks_like_path(w))
        && out.is_empty()
    {
        out.push(word.to_string());
    }
    out
}

/// Holds a `/`, or a `.` with something on both sides (`app.log`, not `done.`); not a URL.
fn looks_like_path(s: &str) -> bool {
    let s = s.trim();
    if s.is_empty() || s.contains("://") || s.len() > 4096 || ip_literal(s).is_some() {
        return false;
    }
    s.contains('/')
        || s.find('.')
            .is_some_and(|i| i > 0 && i + 1 < s.len() && !s.ends_with('.'))
}

/// The address of `s` when it is an IP literal, with or without a port (`93.184.216.34`,
/// `93.184.216.34:443`, `[2001:db8::1]:443`, `2001:db8::1`).
fn ip_literal(s: &str) -> Option<std::net::IpAddr> {
    let s = s.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ';' | '\'' | '"'));
    if let Ok(a) = s.parse::<std::net::SocketAddr>() {
        return Some(a.ip());
    }
    let host = s.trim_start_matches('[').trim_end_matches(']');
    host.parse::<std::net::IpAddr>().ok()
}

/// A connection the script made around its run's proxy, refused by the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectConnection {
    /// The address the output names (`93.184.216.34` or `93.184.216.34:443`), when it names
    /// one.
    pub target: Option<String>,
}

/// A direct connection the output reports refused, for a run granted a host list (whose
/// only way out is its proxy: the sandbox refuses every other `connect` with `EACCES`).
/// Read from the common wordings: Python's `PermissionError: [Errno 13] Permission denied`
/// after a traceback through `connect`, Node's `connect EACCES 1.2.3.4:443`, a line that
/// names an address and says `Permission denied`. Advice only: nothing is decided from it.
///
/// When the output names no address, the one among `named` (the run's argument words) is
/// taken: the caller gave it.
pub fn direct_connection(output: &str, named: &[String]) -> Option<DirectConnection> {
    let denied = |l: &str| {
        let l = l.to_lowercase();
        l.contains("permission denied") || l.contains("eacces")
    };
    let address = |l: &str| {
        l.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
            .find(|w| ip_literal(w).is_some())
            .map(|w| {
                w.trim_matches(|c: char| matches!(c, '\'' | '"' | ';'))
                    .to_string()
            })
    };
    let mentions_connect = output.to_lowercase().contains("connect");
    for line in output.lines() {
        if !denied(line) {
            continue;
        }
        let lower = line.to_lowercase();
        // A line that names an address it was refused: Node, curl, nc, most clients.
        if let Some(target) = address(line) {
            return Some(DirectConnection {
                target: Some(target),
            });
        }
        // Python: the refusal names no path, and the traceback went through `connect`.
        if mentions_connect && candidates(line).is_empty() && !lower.contains("open") {
            let target = output
                .lines()
                .filter(|l| l.to_lowercase().contains("connect"))
                .find_map(address)
                .or_else(|| named.iter().find(|w| ip_literal(w).is_some()).cloned());
            return Some(DirectConnection { target });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::capability::Trust;

    #[test]
    fn candidates_from_common_tools() {
        for (line, want) in [
            (
                "cat: /etc/hostname: Permission denied",
                vec!["/etc/hostname"],
            ),
            (
                "awk: cannot open /tmp/np (Permission denied)",
                vec!["/tmp/np"],
            ),
            (
                "awk: cannot open app.log (No such file or directory)",
                vec!["app.log"],
            ),
            (
                "sh: 1: cannot create out.txt: Permission denied",
                vec!["out.txt"],
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/data/My Notes.txt'",
                vec!["/data/My Notes.txt"],
            ),
            (
                "head: cannot open '/tmp/np' for reading: Permission denied",
                vec!["/tmp/np"],
            ),
            (
                "ls: cannot open directory '/root': Permission denied",
                vec!["/root"],
            ),
            (
                "Error: EACCES: permission denied, open '/srv/x.json'",
                vec!["/srv/x.json"],
            ),
            ("/bin/sh: 1: ./run: Permission denied", vec!["./run"]),
            (
                "sort: cannot read: /tmp/np: Permission denied",
                vec!["/tmp/np"],
            ),
            ("fetch https://example.com/x: Permission denied", vec![]),
            ("Permission denied. Done.", vec![]),
            ("data/app.log: Permission denied", vec!["data/app.log"]),
        ] {
            assert_eq!(candidates(line), want, "{line}");
        }
    }

    fn grant(read: &[&str], write: &[&str]) -> Grant {
        Grant {
            fs_read: read.iter().map(PathBuf::from).collect(),
            fs_write: write.iter().map(PathBuf::from).collect(),
            network: crate::capability::Network::Off,
            timeout: Duration::from_secs(1),
            trust: Trust::External,
        }
    }

    #[test]
    fn each_reported_path_against_the_grant() {
        let dir = tempfile::tempdir().unwrap();
        let caller = dir.path();
        std::fs::write(caller.join("app.log"), "x").unwrap();
        std::fs::write(caller.join("orders.csv"), "x").unwrap();
        std::fs::create_dir(caller.join("granted")).unwrap();
        let ws = caller.join("ws");
        let system = [PathBuf::from("/usr")];
        let g = grant(&[caller.join("granted").to_str().unwrap()], &[]);
        let place = |started_in_caller| RunPlace {
            grant: &g,
            caller: Some(caller),
            started_in_caller,
            system: &system,
            workspaces: &ws,
            homes: &[],
            named: &[],
        };
        let c = caller.display();
        let output = format!(
            "cat: {c}/app.log: Permission denied\n\
             sh: 1: cannot create granted/new.txt: Permission denied\n\
             awk: cannot open orders.csv (No such file or directory)\n\
             awk: cannot open missing.csv (No such file or directory)\n\
             cat: {c}/ws/ws-1/work/x: Permission denied\n\
             cp: cannot create regular file '/usr/lib/x': Permission denied\n\
             grep: {c}/app.log: Permission denied\n\
             cat: /no/such/dir/f: Permission denied\n"
        );
        let got: Vec<(String, Reach, Option<PathBuf>)> = denials(&output, &place(true))
            .into_iter()
            .map(|d| (d.written, d.reach, d.grant))
            .collect();
        assert_eq!(
            got,
            [
                (
                    format!("{c}/app.log"),
                    Reach::NotGranted,
                    Some(caller.join("app.log"))
                ),
                (
                    "granted/new.txt".into(),
                    Reach::ReadOnly,
                    Some(caller.join("granted"))
                ),
                // Missing where the script started (the caller's directory, not granted): the
                // run's own root holds only its grants, so a file there is not found rather
                // than refused; it is in the caller's directory, so it may be suggested.
                (
                    "orders.csv".into(),
                    Reach::NotGranted,
                    Some(caller.join("orders.csv"))
                ),
                // Outside the caller's directory and the grant: named, never suggested
                // (step 26: hints by allow-list).
                ("/usr/lib/x".into(), Reach::ReadOnly, None),
            ]
        );
        // Started in the work directory: relative denials are the script's own; a missing
        // relative file that is in the caller's directory is reported.
        let got: Vec<(String, Reach)> = denials(&output, &place(false))
            .into_iter()
            .map(|d| (d.written, d.reach))
            .collect();
        assert_eq!(
            got,
            [
                (format!("{c}/app.log"), Reach::NotGranted),
                ("orders.csv".to_string(), Reach::InCallerDir),
                ("/usr/lib/x".to_string(), Reach::ReadOnly),
            ]
        );
        assert!(denials("all fine\n", &place(true)).is_empty());
    }

    #[test]
    fn a_write_into_a_read_only_mount_is_a_write_the_grant_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let caller = dir.path();
        std::fs::create_dir(caller.join("granted")).unwrap();
        // Closed to others: on a root host a Permission denied here would be the file's modes.
        let closed = caller.join("granted/closed.txt");
        std::fs::write(&closed, "x").unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o600)).unwrap();
        let ws = caller.join("ws");
        let g = grant(&[caller.join("granted").to_str().unwrap()], &[]);
        let place = RunPlace {
            grant: &g,
            caller: Some(caller),
            started_in_caller: true,
            system: &[],
            workspaces: &ws,
            homes: &[],
            named: &[],
        };
        let got: Vec<(String, Reach)> = denials(
            "sh: 1: cannot create granted/closed.txt: Read-only file system\n\
             touch: cannot touch 'granted/new.txt': Read-only file system\n",
            &place,
        )
        .into_iter()
        .map(|d| (d.written, d.reach))
        .collect();
        assert_eq!(
            got,
            [
                ("granted/closed.txt".to_string(), Reach::ReadOnly),
                ("granted/new.txt".to_string(), Reach::ReadOnly),
            ]
        );
    }

    /// A script names any path it likes: each case one that must never be suggested for a
    /// grant, however its output words the denial; the ordinary file beside them still is.
    #[test]
    fn hostile_denials_never_suggest_a_dangerous_grant() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (home, caller, data) = (root.join("home"), root.join("proj"), root.join("data"));
        for d in [
            home.join(".ssh"),
            caller.join(".git/hooks"),
            caller.join(".vscode"),
            caller.join("src"),
            data.join(".cache"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let ws = root.join("ws");
        let g = grant(&[data.to_str().unwrap(), "/"], &[]);
        let homes = [home.clone(), caller.clone()];
        let place = RunPlace {
            grant: &g,
            caller: Some(&caller),
            started_in_caller: true,
            system: &[],
            workspaces: &ws,
            homes: &homes,
            named: &[],
        };
        for (name, path) in [
            ("a home's ssh key", home.join(".ssh/id_rsa")),
            ("a home's shell rc", home.join(".bashrc")),
            ("a repository's config", caller.join(".git/config")),
            (
                "a repository's hook",
                caller.join(".git/hooks/post-checkout"),
            ),
            ("an env file", caller.join(".env.local")),
            ("an editor's settings", caller.join(".vscode/settings.json")),
            ("the project's configuration", caller.join("skillcat.toml")),
            ("the skills lockfile", caller.join("skills-lock.json")),
            (
                "a hidden directory of a granted tree",
                data.join(".cache/x"),
            ),
            ("a system secret", PathBuf::from("/etc/shadow")),
            (
                "another user's home",
                PathBuf::from("/home/other/notes.txt"),
            ),
            ("root's home", PathBuf::from("/root/.ssh/authorized_keys")),
            (
                "a climb out of the caller",
                caller.join("../home/.ssh/id_rsa"),
            ),
        ] {
            let output = format!("cat: {}: Permission denied\n", path.display());
            for d in denials(&output, &place) {
                assert_eq!(d.grant, None, "{name}: {d:?}");
            }
        }
        let ok = caller.join("src/main.rs");
        let got = denials(
            &format!("cat: {}: Permission denied\n", ok.display()),
            &place,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].grant.as_deref(), Some(caller.join("src").as_path()));
        // Flooding the output with refused paths does not push out the one to suggest.
        let mut flood = String::new();
        for i in 0..20 {
            flood.push_str(&format!("cat: /etc/x{i}: Permission denied\n"));
        }
        flood.push_str(&format!("cat: {}: Permission denied\n", ok.display()));
        assert!(denials(&flood, &place).iter().any(|d| d.grant.is_some()));
    }

    /// A path outside every base is suggested only when the run's own arguments named it,
    /// it exists, and no part of it is hidden (step 29, item 8).
    #[test]
    fn a_path_the_arguments_named_is_suggested_wherever_it_lies() {
        // (Not `.tmp…`: a hidden part anywhere keeps a named path from being suggested.)
        let dir = tempfile::Builder::new()
            .prefix("denial-")
            .tempdir()
            .unwrap();
        let root = dir.path();
        let (caller, private) = (root.join("proj"), root.join("private"));
        std::fs::create_dir_all(&caller).unwrap();
        std::fs::create_dir_all(private.join(".keys")).unwrap();
        std::fs::write(private.join("notes.txt"), "x").unwrap();
        std::fs::write(private.join(".keys/k"), "x").unwrap();
        let ws = root.join("ws");
        let g = grant(&[], &[]);
        let notes = private.join("notes.txt");
        let key = private.join(".keys/k");
        let named = argument_words(&serde_json::json!({
            "args": format!("-n {} {} {}", notes.display(), key.display(), root.join("gone").display())
        }));
        let place = |named| RunPlace {
            grant: &g,
            caller: Some(&caller),
            started_in_caller: false,
            system: &[],
            workspaces: &ws,
            homes: &[],
            named,
        };
        let output = format!(
            "cat: {}: No such file or directory\ncat: {}: No such file or directory\n\
             cat: {}: No such file or directory\n",
            notes.display(),
            key.display(),
            root.join("gone").display()
        );
        let got: Vec<(PathBuf, Option<PathBuf>)> = denials(&output, &place(&named))
            .into_iter()
            .map(|d| (d.path, d.grant))
            .collect();
        // The hidden one is named without advice; the one that does not exist, not at all.
        assert_eq!(
            got,
            [(notes.clone(), Some(notes.clone())), (key.clone(), None)]
        );
        // Not named by the arguments: no advice, as before.
        assert!(
            denials(&output, &place(&[]))
                .iter()
                .all(|d| d.grant.is_none())
        );
        // Named, but a system file: no advice either.
        let etc = "cat: /etc/hostname: No such file or directory\n";
        let named = ["/etc/hostname".to_string()];
        assert!(
            denials(etc, &place(&named))
                .iter()
                .all(|d| d.grant.is_none())
        );
    }

    #[test]
    fn direct_connections_in_common_wordings() {
        let python = "Traceback (most recent call last):\n  File \"/x/conn.py\", line 3, in <module>\n    \
                      socket.create_connection((sys.argv[1], 443), timeout=5)\n    sock.connect(sa)\n\
                      PermissionError: [Errno 13] Permission denied\n";
        assert_eq!(
            direct_connection(python, &[]),
            Some(DirectConnection { target: None })
        );
        assert_eq!(
            direct_connection(python, &["93.184.216.34".to_string()]),
            Some(DirectConnection {
                target: Some("93.184.216.34".into())
            })
        );
        assert_eq!(
            direct_connection("Error: connect EACCES 93.184.216.34:443\n", &[]),
            Some(DirectConnection {
                target: Some("93.184.216.34:443".into())
            })
        );
        assert_eq!(
            direct_connection(
                "nc: connect to 10.0.0.7 port 80 (tcp) failed: Permission denied\n",
                &[]
            ),
            Some(DirectConnection {
                target: Some("10.0.0.7".into())
            })
        );
        // A file refused is not a connection, nor is output without a refusal.
        assert_eq!(
            direct_connection("cat: /etc/x: Permission denied\nconnected\n", &[]),
            None
        );
        assert_eq!(direct_connection("connect 1.2.3.4 ok\n", &[]), None);
        // An address is never read as a path.
        assert!(candidates("Error: connect EACCES 93.184.216.34:443").is_empty());
    }
}
