//! The password file libpq reads (`~/.pgpass`, or `PGPASSFILE`), read the way libpq reads it:
//! tokio-postgres does not.
//!
//! One entry a line, `hostname:port:database:username:password`; `*` in any of the first four
//! fields matches anything; `\:` and `\\` escape a colon and a backslash; lines starting with
//! `#` are comments; the first entry that matches wins. A file that is not a regular file, or
//! that its group or others may read or write, is ignored (libpq warns and does the same).

use std::path::Path;

/// The password `file` holds for a connection to `host:port/dbname` as `user`, if any.
pub fn lookup(file: &Path, host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return None;
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    find(&text, host, port, dbname, user)
}

/// The password the text of a password file holds for the connection, if any.
pub fn find(text: &str, host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    let wanted = [host, port.as_str(), dbname, user];
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some(fields) = split(line) else { continue };
        let matches = fields[..4]
            .iter()
            .zip(wanted)
            .all(|((field, wild), want)| *wild || field == want);
        if matches {
            return Some(fields[4].0.clone());
        }
    }
    None
}

/// The five fields of a line, unescaped, each with whether it is the wildcard `*`; `None`
/// when the line has fewer than five.
fn split(line: &str) -> Option<Vec<(String, bool)>> {
    let mut fields = Vec::with_capacity(5);
    let mut field = String::new();
    let mut escaped_any = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            // The password is the rest of the line (its colons unescaped all the same).
            ':' if fields.len() < 4 => {
                let wild = field == "*" && !escaped_any;
                fields.push((std::mem::take(&mut field), wild));
                escaped_any = false;
            }
            '\\' => {
                escaped_any = true;
                match chars.next() {
                    Some(next) => field.push(next),
                    None => field.push('\\'),
                }
            }
            c => field.push(c),
        }
    }
    if fields.len() < 4 {
        return None;
    }
    fields.push((field, false));
    Some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let text = "# comment\n\
                    db.example:5432:skills:alice:first\n\
                    *:5432:skills:alice:second\n\
                    127.0.0.1:*:*:bob:p\\:w\\\\d:x\n\
                    host\\:odd:1:d:u:colon-host\n\
                    \\*:1:d:u:not-a-wildcard\n\
                    short:line\n";
        let f = |h, p, d, u| find(text, h, p, d, u);
        assert_eq!(
            f("db.example", 5432, "skills", "alice").as_deref(),
            Some("first")
        );
        assert_eq!(
            f("other", 5432, "skills", "alice").as_deref(),
            Some("second")
        );
        assert_eq!(f("other", 5433, "skills", "alice"), None);
        // Escapes in the password; the rest of the line (colons too) is the password.
        assert_eq!(f("127.0.0.1", 1, "x", "bob").as_deref(), Some("p:w\\d:x"));
        assert_eq!(f("host:odd", 1, "d", "u").as_deref(), Some("colon-host"));
        // An escaped `*` is a literal host named `*`, not a wildcard.
        assert_eq!(f("anything", 1, "d", "u"), None);
        assert_eq!(f("*", 1, "d", "u").as_deref(), Some("not-a-wildcard"));
        assert_eq!(f("short", 1, "line", "x"), None);
        assert_eq!(
            find("a:1:d:u:pw\r\n", "a", 1, "d", "u").as_deref(),
            Some("pw")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_read_is_ignored() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:*:secret\n").unwrap();
        for (mode, found) in [(0o600, true), (0o400, true), (0o640, false), (0o604, false)] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let got = lookup(&file, "h", 5432, "d", "u");
            assert_eq!(got.is_some(), found, "mode {mode:o}");
        }
        // A directory is not a password file.
        assert_eq!(lookup(dir.path(), "h", 5432, "d", "u"), None);
    }
}
