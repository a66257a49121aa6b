//! The third red team's terminal escapes (issue 27, item 8): `skillcat run` under a real pty
//! shows control characters of a script's output escaped (an OSC title or clipboard sequence
//! never reaches the terminal raw), piped output stays byte-exact, and a `hint:` line escapes a
//! path's control characters always.

#![cfg(target_os = "linux")]

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::bin::{BIN, Skillcat};
use crate::support::{sandbox_tempdir, write_skill};

/// What the script prints, on stdout and on stderr: OSC 0 (title), OSC 52 (clipboard), a CSI
/// (clear screen), a C1 CSI (U+009B), a bidi override (U+202E), DEL, a BEL, and a tab.
const NOISE: &str = "printf 'title\\033]0;PWNED\\007 clip\\033]52;c;ZXZpbA==\\007 \
csi\\033[2J c1\\302\\233[31m bidi\\342\\200\\256x del\\177 bel\\007 tab\\there\\n'";

/// The same, as the bytes the script writes.
const RAW: &str = "title\x1b]0;PWNED\x07 clip\x1b]52;c;ZXZpbA==\x07 csi\x1b[2J c1\u{9b}[31m \
bidi\u{202e}x del\x7f bel\x07 tab\there\n";

/// The same, as a terminal is shown it.
const SHOWN: &str = "title\\x1b]0;PWNED\\x07 clip\\x1b]52;c;ZXZpbA==\\x07 csi\\x1b[2J \
c1\\u{9b}[31m bidi\\u{202e}x del\\x7f bel\\x07 tab\there\n";

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = sandbox_tempdir("skillcat-tty-");
        write_skill(
            &dir.path().join("skills/noisy"),
            "---\nname: noisy\ndescription: Prints terminal escapes.\n---\nBody.\n",
            &[
                ("scripts/noise.sh", &format!("#!/bin/sh\n{NOISE}\n"), true),
                (
                    "scripts/noise_err.sh",
                    &format!("#!/bin/sh\n{NOISE} >&2\nexit 3\n"),
                    true,
                ),
                (
                    "scripts/deny.sh",
                    "#!/bin/sh\nprintf 'cat: /etc/evil\\033]0;T\\007dir\\302\\233x/f: Permission denied\\n' >&2\nexit 1\n",
                    true,
                ),
            ],
        );
        std::fs::write(dir.path().join("skillcat.toml"), "sources = []\n").unwrap();
        World { dir }
    }

    fn source(&self) -> String {
        self.dir.path().join("skills").display().to_string()
    }

    fn config(&self) -> String {
        self.dir.path().join("skillcat.toml").display().to_string()
    }

    /// `skillcat run SOURCE noisy SCRIPT` with stdout and stderr on one pty: exit code and what
    /// the terminal got (`\r\n` read back as `\n`).
    fn on_pty(&self, script: &str) -> (i32, String) {
        let (mut master, slave) = openpty();
        let mut child = Command::new(BIN)
            .args(["run", &self.source(), "noisy", script])
            .current_dir(self.dir.path())
            .env("SKILLCAT_CONFIG", self.config())
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        // Reading ends with EIO once the child (the last holder of the slave) has exited.
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match master.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            got
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("skillcat run on a pty did not finish");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let got = reader.join().unwrap();
        let text = String::from_utf8(got).expect("the terminal got UTF-8");
        (status.code().unwrap_or(-1), text.replace("\r\n", "\n"))
    }
}

/// A pty pair: (master as a file, slave).
pub(crate) fn openpty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: two out-pointers to ints; no name, default termios and size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty gave two fresh descriptors we own.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

/// No control character but newline and tab, no C1, no bidi control.
fn assert_inert(text: &str) {
    for c in text.chars() {
        let bad = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}');
        assert!(!bad, "raw {:?} reached the terminal:\n{text}", c);
    }
}

#[test]
fn run_on_a_terminal_shows_a_scripts_control_characters_escaped() {
    let w = World::new();
    let (code, text) = w.on_pty("noise");
    assert_eq!(code, 0, "{text}");
    assert_inert(&text);
    assert!(
        text.contains(SHOWN),
        "shown escaped, newline and tab kept:\n{text}"
    );

    // On stderr too, with the failure's own lines.
    let (code, text) = w.on_pty("noise_err");
    assert_eq!(code, 1, "{text}");
    assert_inert(&text);
    assert!(text.contains("\\x1b]0;PWNED\\x07"), "{text}");
    assert!(text.contains("\\x1b]52;c;"), "{text}");
}

#[test]
fn run_piped_keeps_a_scripts_output_byte_exact() {
    let w = World::new();
    let o = Skillcat::new(&["run", &w.source(), "noisy", "noise"])
        .env("SKILLCAT_CONFIG", w.config())
        .run();
    o.code(0);
    assert!(
        o.out().contains(RAW),
        "byte-exact when piped: {:?}",
        o.out()
    );
}

#[test]
fn hints_escape_a_paths_control_characters_always() {
    let w = World::new();
    // Piped.
    let o = Skillcat::new(&["run", &w.source(), "noisy", "deny"])
        .env("SKILLCAT_CONFIG", w.config())
        .run();
    o.code(1);
    let hint = o
        .stderr
        .lines()
        .find(|l| l.starts_with("hint:"))
        .unwrap_or_else(|| panic!("a hint: {}", o.stderr));
    assert_inert(hint);
    assert!(
        hint.contains("/etc/evil\\x1b]0;T\\x07dir\\u{9b}x/f"),
        "the path escaped: {hint}"
    );
    // On a terminal.
    let (code, text) = w.on_pty("deny");
    assert_eq!(code, 1, "{text}");
    assert_inert(&text);
    assert!(text.contains("hint: "), "{text}");
    assert!(text.contains("/etc/evil\\x1b]0;T\\x07dir"), "{text}");
}
