//! Running the real `skillcat` binary from a test: every run has a deadline after which the child
//! is killed (no test can hang), its stdout and stderr are drained on two threads (no pipe can
//! fill up), and it fails on a panic message on stderr or on death by a signal.
//!
//! [`Skillcat`] builds a run (working directory, environment, deadline); [`run`] and
//! [`run_in`] are the common cases. [`Skillcat::spawn`] starts a child that [`Running::wait`]
//! collects later, for tests that run several at once.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value as J;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_skillcat");
/// How long a run may take unless the test asks for longer.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The crate directory: where a run happens unless told otherwise.
pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Out {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Out {
    /// Stdout as text; fails if it is not UTF-8.
    #[track_caller]
    pub fn out(&self) -> &str {
        std::str::from_utf8(&self.stdout).expect("stdout is UTF-8")
    }

    /// Stdout as one JSON document.
    #[track_caller]
    pub fn json(&self) -> J {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Asserts the exit code.
    #[track_caller]
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code,
            want,
            "exit code of skillcat {:?}; stdout:\n{}\nstderr:\n{}",
            self.args,
            String::from_utf8_lossy(&self.stdout),
            self.stderr
        );
        self
    }

    /// Asserts stderr holds every one of `needles` (`a|b`: either `a` or `b`).
    #[track_caller]
    pub fn says(&self, needles: &[&str]) -> &Self {
        for n in needles {
            assert!(
                n.split('|').any(|alt| self.stderr.contains(alt)),
                "skillcat {:?}: stderr lacks {n:?}:\n{}",
                self.args,
                self.stderr
            );
        }
        self
    }
}

/// One run of the binary, to be configured and then [`run`](Skillcat::run) or
/// [`spawn`](Skillcat::spawn)ed.
///
/// Defaults: the crate directory as working directory, the test process's environment plus
/// `RUST_BACKTRACE=0`, stdin from /dev/null (or [`stdin`](Skillcat::stdin)'s bytes), and
/// [`DEADLINE`].
#[must_use]
pub struct Skillcat {
    args: Vec<String>,
    cwd: PathBuf,
    /// Environment changes in the order given: `Some` sets, `None` removes.
    env: Vec<(OsString, Option<OsString>)>,
    deadline: Duration,
    /// What the child reads on stdin (a pipe closed after it), instead of /dev/null.
    stdin: Option<Vec<u8>>,
}

impl Skillcat {
    pub fn new(args: &[&str]) -> Self {
        Skillcat {
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: manifest_dir().to_path_buf(),
            env: Vec::new(),
            deadline: DEADLINE,
            stdin: None,
        }
    }

    /// Feeds `bytes` on stdin through a pipe, closed once they are written.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Runs in `dir`.
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = dir.as_ref().to_path_buf();
        self
    }

    /// Sets an environment variable (after any earlier change to the same one).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Sets each of `vars`, in order.
    pub fn envs(mut self, vars: &[(&str, &str)]) -> Self {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Removes an environment variable (after any earlier change to the same one).
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Kills the child and fails after `deadline` instead of [`DEADLINE`].
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Runs to completion.
    #[track_caller]
    pub fn run(self) -> Out {
        self.spawn().wait()
    }

    /// Starts the child; its deadline counts from now.
    pub fn spawn(self) -> Running {
        // `SKILLCAT_BIN` names another binary (an earlier commit's build shows which tests it
        // fails), as in `support::lab`.
        let bin = std::env::var_os("SKILLCAT_BIN").unwrap_or_else(|| BIN.into());
        let mut cmd = Command::new(bin);
        cmd.args(&self.args)
            .current_dir(&self.cwd)
            .env("RUST_BACKTRACE", "0")
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn skillcat {:?}: {e}", self.args));
        if let (Some(bytes), Some(mut pipe)) = (self.stdin, child.stdin.take()) {
            // On a thread: a child that reads nothing must not block the test on a full pipe.
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&bytes);
            });
        }
        let mut so = child.stdout.take().unwrap();
        let mut se = child.stderr.take().unwrap();
        Running {
            args: self.args,
            child,
            out: std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = so.read_to_end(&mut b);
                b
            }),
            err: std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = se.read_to_end(&mut b);
                b
            }),
            start: Instant::now(),
            deadline: self.deadline,
        }
    }
}

/// Runs `args` in the crate directory with the defaults.
#[track_caller]
pub fn run(args: &[&str]) -> Out {
    Skillcat::new(args).run()
}

/// Runs `args` in `dir` with the defaults.
#[track_caller]
pub fn run_in(dir: impl AsRef<Path>, args: &[&str]) -> Out {
    Skillcat::new(args).cwd(dir).run()
}

/// A child running with its output drained on two threads.
pub struct Running {
    args: Vec<String>,
    child: Child,
    out: JoinHandle<Vec<u8>>,
    err: JoinHandle<Vec<u8>>,
    start: Instant,
    deadline: Duration,
}

impl Running {
    /// Waits for the child (killing it and failing past the deadline), then checks it neither
    /// panicked nor died by a signal.
    #[track_caller]
    pub fn wait(mut self) -> Out {
        let args = self.args;
        let deadline = self.deadline;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if self.start.elapsed() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("skillcat {args:?} did not finish within {deadline:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let stdout = self.out.join().unwrap();
        let stderr = String::from_utf8_lossy(&self.err.join().unwrap()).into_owned();
        assert!(
            !stderr.contains("panicked"),
            "skillcat {args:?} panicked:\n{stderr}"
        );
        let code = status.code().unwrap_or_else(|| {
            panic!("skillcat {args:?} killed by a signal: {status:?}\n{stderr}")
        });
        Out {
            args,
            code,
            stdout,
            stderr,
        }
    }
}
