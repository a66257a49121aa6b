//! The confined child: the sandbox helper's built-in entry. Started by [`helper_main`] in
//! place of an `execve`, after every confinement step, it reads its [`Job`] as the first line
//! of stdin, evaluates it, and speaks JSON lines on stdout (host calls, then one final
//! message); host replies arrive on stdin.

use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::process::ExitCode;
use std::time::Instant;

use super::engine::{self, ChildMsg, Job, Recv, Wire};

/// The longest line the child reads from the host (a job's source and arguments, or one
/// reply, bounded by the host's payload quota).
const LINE_MAX: usize = 64 << 20;

/// The sandbox helper with the guest evaluator built in: call it first thing in `main`, before
/// any runtime or thread starts, in place of
/// [`script::sandbox::helper_main`](crate::script::sandbox::helper_main) (it runs scripts as
/// that does). `None` for a normal start.
pub fn helper_main() -> Option<ExitCode> {
    crate::script::sandbox::helper_main_with(evaluate_job)
}

/// The name a guest child shows (`/proc/PID/comm`).
pub const PROCESS_NAME: &str = "skillcat-guest";

/// The built-in entry: one job from stdin, evaluated; its exit code.
fn evaluate_job() -> u8 {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"skillcat-guest".as_ptr(), 0, 0, 0) };
    let mut wire = FdWire {
        buf: Vec::new(),
        // SAFETY: stdin is open for the life of the process.
        stdin: unsafe { BorrowedFd::borrow_raw(0) },
    };
    let job: Job = match wire.recv(Instant::now() + std::time::Duration::from_secs(30)) {
        Recv::Line(line) => match serde_json::from_str(&line) {
            Ok(job) => job,
            Err(e) => {
                wire.send(&ChildMsg::Fault {
                    message: format!("a malformed job: {e}"),
                });
                return 2;
            }
        },
        _ => return 2,
    };
    let last = engine::evaluate(job, &mut wire);
    wire.send(&last);
    0
}

struct FdWire {
    buf: Vec<u8>,
    stdin: BorrowedFd<'static>,
}

impl Wire for FdWire {
    fn send(&mut self, msg: &ChildMsg) -> bool {
        let Ok(mut line) = serde_json::to_vec(msg) else {
            return false;
        };
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        out.write_all(&line).and_then(|()| out.flush()).is_ok()
    }

    fn recv(&mut self, until: Instant) -> Recv {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return match String::from_utf8(line) {
                    Ok(s) => Recv::Line(s),
                    Err(_) => Recv::Closed,
                };
            }
            if self.buf.len() > LINE_MAX {
                return Recv::Closed;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Recv::Timeout;
            }
            let mut pfd = libc::pollfd {
                fd: self.stdin.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one live pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, ms.max(1)) };
            if n < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Recv::Closed;
            }
            if n == 0 {
                continue;
            }
            let mut chunk = [0u8; 64 * 1024];
            // SAFETY: reading into a live local buffer of the given size.
            let got = unsafe {
                libc::read(
                    self.stdin.as_raw_fd(),
                    chunk.as_mut_ptr().cast(),
                    chunk.len(),
                )
            };
            if got <= 0 {
                return Recv::Closed;
            }
            self.buf.extend_from_slice(&chunk[..got as usize]);
        }
    }
}
