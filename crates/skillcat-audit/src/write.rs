//! Scripts that write outside the skill and the working directory while their skill declares
//! no `fs_write` (a heuristic: write-shaped commands and calls whose target is a literal
//! absolute path or one under the home directory).
//!
//! A confined run writes its workspace, the run's own `/tmp`, and the paths `fs_write`
//! declares: `/tmp/…`, `/dev/null` and the standard streams are never reported, nor paths
//! built at run time (a variable, a join of parts) — those are the heuristic's known misses.

use crate::rule::{Hit, RuleId};
use crate::text::Lines;

/// Whether a literal path is outside the skill and the working directory: absolute, or under
/// the home directory, and not one a confined run may always write.
fn outside(path: &str) -> bool {
    let path = path.trim_matches(['"', '\'', '`']);
    let home = ["~", "$HOME", "${HOME}"]
        .iter()
        .any(|h| path == *h || path.starts_with(&format!("{h}/")));
    if home {
        return true;
    }
    if !path.starts_with('/') || path.starts_with("//") {
        return false;
    }
    !["/tmp", "/dev/", "/proc/self/"].iter().any(|ok| {
        path == ok.trim_end_matches('/')
            || path.starts_with(&format!("{}/", ok.trim_end_matches('/')))
    })
}

/// Shell commands that write every path they are given, and those that write their last.
const WRITES_EACH: &[&str] = &[
    "tee", "rm", "rmdir", "mkdir", "touch", "chmod", "chown", "truncate", "shred",
];
const WRITES_LAST: &[&str] = &["cp", "mv", "install", "ln", "rsync"];

/// Calls whose first literal argument is written (Python `os`, `shutil`, Node `fs`).
const CALLS_FIRST: &[&str] = &[
    "writeFileSync(",
    "writeFile(",
    "appendFileSync(",
    "appendFile(",
    "mkdirSync(",
    "rmSync(",
    "unlinkSync(",
    "createWriteStream(",
    "os.makedirs(",
    "os.mkdir(",
    "os.remove(",
    "os.unlink(",
    "os.rmdir(",
    "shutil.rmtree(",
];
/// Calls whose last literal argument is written (a copy's or a move's destination).
const CALLS_LAST: &[&str] = &[
    "shutil.copy(",
    "shutil.copy2(",
    "shutil.copyfile(",
    "shutil.copytree(",
    "shutil.move(",
    "copyFileSync(",
    "renameSync(",
];
/// Methods that write the path object they are called on (`Path("/etc/x").write_text(…)`).
const PATH_WRITES: &[&str] = &[
    ".write_text(",
    ".write_bytes(",
    ".mkdir(",
    ".touch(",
    ".unlink(",
    ".rename(",
];

/// The string literals in `args` (up to the call's closing parenthesis), in order.
fn literals(args: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut rest = args;
    while let Some(c) = rest.chars().next() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => break,
            ')' => depth -= 1,
            '"' | '\'' | '`' => {
                let body = &rest[1..];
                let Some(end) = body.find(c) else { break };
                out.push(&body[..end]);
                rest = &body[end + 1..];
                continue;
            }
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The first write outside on one line of code: its byte offset in the line and the path.
fn call_write(line: &str) -> Option<(usize, String)> {
    let home_call = ["os.homedir()", "Path.home()", "expanduser("]
        .iter()
        .any(|h| line.contains(h));
    let target = |lits: &[&str], last: bool| {
        let lit = if last { lits.last() } else { lits.first() };
        lit.map(|l| l.to_string())
            .filter(|l| outside(l) || (home_call && !l.starts_with('/')))
    };
    let mut found: Vec<(usize, String)> = Vec::new();
    for needle in CALLS_FIRST.iter().chain(CALLS_LAST) {
        for (at, _) in line.match_indices(needle) {
            let lits = literals(&line[at + needle.len()..]);
            if let Some(path) = target(&lits, CALLS_LAST.contains(needle)) {
                found.push((at, path));
            }
        }
    }
    // `open("/etc/x", "w")`: the first literal is the path, a later one the mode.
    for (at, _) in line.match_indices("open(") {
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let lits = literals(&line[at + 5..]);
        let writes = lits
            .get(1)
            .is_some_and(|m| m.len() <= 3 && m.contains(['w', 'a', 'x', '+']));
        if writes && let Some(path) = target(&lits, false) {
            found.push((at, path));
        }
    }
    if let Some(method) = PATH_WRITES.iter().find_map(|m| line.find(m)) {
        if let Some(at) = line[..method].rfind("Path(") {
            let lits = literals(&line[at + 5..]);
            if let Some(path) = target(&lits, false) {
                found.push((at, path));
            }
        } else if line[..method].contains("Path.home()") {
            found.push((method, "~".to_string()));
        }
    }
    found.into_iter().min_by_key(|(at, _)| *at)
}

/// Whether a script is a shell script: by its extension, or its `#!` line naming a shell.
/// Only shell scripts are read for redirections and commands (`>` in Python is a comparison,
/// in a string a character).
fn is_shell(path: &str, text: &str) -> bool {
    const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh"];
    let ext = path.rsplit_once('.').map(|(_, e)| e);
    if ext.is_some_and(|e| SHELLS.contains(&e)) {
        return true;
    }
    let Some(shebang) = text.lines().next().and_then(|l| l.strip_prefix("#!")) else {
        return false;
    };
    let mut words = shebang.split_whitespace();
    let program = words.next().map(|p| p.rsplit('/').next().unwrap_or(p));
    let program = match program {
        Some("env") => words.find(|w| !w.starts_with('-')),
        other => other,
    };
    program.is_some_and(|p| SHELLS.contains(&p))
}

/// For each byte of a shell line, whether it is outside quotes (`'…'`, `"…"`, a character
/// escaped with `\`).
fn unquoted(line: &str) -> Vec<bool> {
    let mut out = Vec::with_capacity(line.len());
    let (mut single, mut double, mut escaped) = (false, false, false);
    for b in line.bytes() {
        let free = !single && !double && !escaped;
        out.push(free && b != b'\'' && b != b'"' && b != b'\\');
        if escaped {
            escaped = false;
        } else if b == b'\\' && !single {
            escaped = true;
        } else if b == b'\'' && !double {
            single = !single;
        } else if b == b'"' && !single {
            double = !double;
        }
    }
    out
}

/// The first write outside in one line of shell: a redirection or a writing command.
fn shell_write(line: &str) -> Option<(usize, String)> {
    let bytes = line.as_bytes();
    let free = unquoted(line);
    for (at, _) in line.match_indices('>') {
        let prev = at.checked_sub(1).map(|i| bytes[i]);
        if !free[at] || matches!(prev, Some(b'-' | b'=' | b'>' | b'<')) {
            continue;
        }
        let rest = line[at + 1..].trim_start_matches('>').trim_start();
        let path: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '|' | ')' | '&'))
            .collect();
        if !rest.starts_with('&') && outside(&path) {
            return Some((at, path.trim_matches(['"', '\'']).to_string()));
        }
    }
    let mut offset = 0;
    for segment in line.split_inclusive([';', '|', '&']) {
        let words: Vec<&str> = segment
            .trim_end_matches([';', '|', '&'])
            .split_whitespace()
            .collect();
        let start = offset + segment.len() - segment.trim_start().len();
        offset += segment.len();
        let mut words = words.as_slice();
        if words.first() == Some(&"sudo") {
            words = &words[1..];
        }
        let Some((command, args)) = words.split_first() else {
            continue;
        };
        let args: Vec<&str> = args
            .iter()
            .copied()
            .filter(|a| !a.starts_with('-'))
            .collect();
        let target = if WRITES_EACH.contains(command) {
            args.iter().find(|a| outside(a)).copied()
        } else if WRITES_LAST.contains(command) {
            args.last().filter(|a| outside(a)).copied()
        } else {
            None
        };
        if let Some(path) = target {
            return Some((start, path.trim_matches(['"', '\'']).to_string()));
        }
    }
    None
}

/// The hit of one script of a skill that declares no `fs_write`: its first write outside.
pub(crate) fn scan(path: &str, text: &str, lines: &Lines<'_>) -> Option<Hit> {
    let shell = is_shell(path, text);
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let code = line.trim_start();
        if code.starts_with('#') || code.starts_with("//") {
            continue;
        }
        let indent = line.len() - code.len();
        let found = call_write(code).or_else(|| shell.then(|| shell_write(code)).flatten());
        if let Some((at, path)) = found {
            return Some(Hit::at(
                RuleId::UndeclaredWrite,
                lines.position(start + indent + at),
                format!(
                    "heuristic: the script writes {path}, outside the skill and the working directory, but the skill declares no fs_write, so a confined run will fail there or the skill touches files it does not say; declare the path if it needs it (`skillcat.fs_write: PATH` under `metadata:` in SKILL.md, or `fs_write: PATH` in agents/skillcat.yaml), or write under the working directory"
                ),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The write found in a shell script (`scripts/x.sh`).
    fn at(text: &str) -> Option<(u32, u32, String)> {
        at_in("scripts/x.sh", text)
    }

    fn at_in(path: &str, text: &str) -> Option<(u32, u32, String)> {
        scan(path, text, &Lines::new(text)).map(|h| (h.line.unwrap(), h.column.unwrap(), h.message))
    }

    #[test]
    fn shell_rules_read_only_shell_and_only_outside_quotes() {
        // `>` in Python or in a string is no redirection.
        let py = "print(\"see <dir>/ppt/layouts/\", file=sys.stderr)\nif a > /x:\n";
        assert!(at_in("scripts/x.py", py).is_none());
        assert!(at("sed -i 's/<title>.*<\\/title>/<title>x<\\/title>/' index.html\n").is_none());
        assert!(at("echo \"a > /etc/x\"\n").is_none());
        assert!(at("echo a\\> /etc/x\n").is_none());
        // A shell script by its `#!` line, whatever its name.
        let sh = "#!/usr/bin/env bash\necho x > /etc/motd\n";
        assert!(at_in("scripts/setup", sh).is_some());
        assert!(at_in("scripts/setup", "#!/usr/bin/python3\necho x > /etc/motd\n").is_none());
        // Calls are read in every script.
        assert!(at_in("scripts/x.py", "open('/etc/hosts', 'w')\n").is_some());
    }

    #[test]
    fn writes_outside_in_shell_python_and_node() {
        let (line, column, message) = at("#!/bin/sh\nset -e\necho hi > /etc/motd\n").unwrap();
        assert_eq!((line, column), (3, 9));
        assert!(message.contains("writes /etc/motd"), "{message}");
        for (text, column) in [
            ("echo x >> ~/.bashrc\n", 8),
            ("  cp build/app /usr/local/bin/app\n", 3),
            ("mkdir -p $HOME/.config/x\n", 1),
            ("cat x | sudo tee /etc/hosts\n", 9),
            ("rm -rf ~/.cache/thing\n", 1),
            ("with open('/etc/passwd', 'a') as f:\n", 6),
            ("open(os.path.expanduser('~/.ssh/config'), 'w')\n", 1),
            ("Path('/var/lib/x').write_text(data)\n", 1),
            ("(Path.home() / '.npmrc').write_text(t)\n", 25),
            ("fs.writeFileSync('/etc/x.conf', body);\n", 4),
            ("shutil.copy('local.txt', '/usr/share/x')\n", 1),
            ("os.makedirs(\"/opt/tool\", exist_ok=True)\n", 1),
        ] {
            let Some((line, col, _)) = at(text) else {
                panic!("no write found in {text}");
            };
            assert_eq!((line, col), (1, column), "{text}");
        }
    }

    #[test]
    fn writes_inside_reads_and_allowed_places_are_not_reported() {
        for text in [
            "echo hi > out.txt\n",
            "echo hi > /dev/null 2>&1\n",
            "echo x > /tmp/scratch\n",
            "cmd 2>/dev/stderr\n",
            "cp /etc/hosts ./hosts.copy\n",
            "cat /etc/os-release\n",
            "with open('/etc/passwd') as f:\n",
            "open('/etc/hosts', 'r')\n",
            "if [ $a -gt 1 ]; then x=1; fi\n",
            "result = a -> b\n",
            "x => '/etc/x'\n",
            "# echo > /etc/motd (a comment)\n",
            "// fs.writeFileSync('/etc/x')\n",
            "fs.writeFileSync(path.join(dir, 'x'), b)\n",
            "Path('/etc/x').read_text()\n",
            "rm -rf build/\n",
        ] {
            assert!(at(text).is_none(), "{text}: {:?}", at(text));
        }
    }
}
