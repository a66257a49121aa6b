//! The parked run: a skill's next run made ahead of its call in a process that serves many
//! calls (an MCP server, a library session). Its helper is forked from the zygote with the
//! policy of the call before, minus argv and environment, and confines its child up to the
//! `execve`; a call of the same shape only sends it its argv and environment (see
//! `docs/sandbox.md`, "The parked run").

use std::os::unix::io::{AsRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use super::ScriptError;
use super::process::{ForkedRun, Raw, follow, fork_run};
use super::sandbox::{self, HelperPolicy, HelperRequest, Mode};

/// A run made ahead of its call (`HelperPolicy::parked`): forked from the zygote with the
/// policy of the call before it, confined and waiting, in its child, for the argv and
/// environment of the call that takes it. Each serves one call at most; dropped untaken, its
/// helper's group is killed (and its child reads end-of-file in any case).
pub(crate) struct Parked {
    /// The policy and start directory it was made for, argv and environment left out.
    key: Vec<u8>,
    forked: ForkedRun,
    /// Our end of its release socket (the other is `RELEASE_FD` in the helper).
    release: OwnedFd,
}

/// What a parked run must match to serve a call: the policy without the call's own part
/// (argv, environment) and what every run has of its own (its control group, the
/// supervisor's pid), and the start directory.
fn park_key(policy: &HelperPolicy, cwd: &Path) -> Option<Vec<u8>> {
    let mut shape = policy.clone();
    shape.argv.clear();
    shape.env.clear();
    shape.cgroup.clear();
    shape.supervisor = 0;
    shape.parked = false;
    let mut key = HelperRequest::Run(shape).to_json().ok()?.into_bytes();
    key.push(0);
    key.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(cwd.as_os_str()));
    Some(key)
}

/// Whether a run of `policy` may be parked: confined, no network at all (a proxied run's
/// proxy belongs to its call), joining a workspace made already, nothing built in; and only in
/// a process whose runs are forked from a zygote.
pub(crate) fn parkable(helper: &Path, policy: &HelperPolicy) -> bool {
    policy.mode == Mode::Confined
        && policy.network == sandbox::NetMode::Off
        && policy.workspace.is_some()
        && policy.make_work.is_none()
        && !policy.builtin
        && sandbox::linux::zygote::usable(helper).is_some()
}

/// Parks a run of `policy` (whose argv and environment are left out): its helper forked and
/// confining it now, so a later call of the same shape ([`Parked::fits`]) only releases it.
/// `inherit`: the workspace's namespaces, as for a run. `None`: the zygote did not fork it.
pub(crate) async fn park(
    helper: &Path,
    policy: &HelperPolicy,
    cwd: &Path,
    inherit: &[(&OwnedFd, i32)],
) -> Option<Parked> {
    let zygote = sandbox::linux::zygote::usable(helper)?;
    let key = park_key(policy, cwd)?;
    let mut ahead = policy.clone();
    ahead.argv.clear();
    ahead.env.clear();
    ahead.parked = true;
    // A socket, not a pipe: a release sent to a helper that died meanwhile fails with EPIPE
    // instead of raising SIGPIPE in a host that does not ignore it.
    let (release_r, release) = sandbox::linux::zygote::seqpacket().ok()?;
    let mut all: Vec<(&OwnedFd, i32)> = inherit.to_vec();
    all.push((&release_r, sandbox::RELEASE_FD));
    let forked = fork_run(zygote, &ahead, cwd, &all).await?.ok()?;
    Some(Parked {
        key,
        forked,
        release,
    })
}

impl Parked {
    /// Whether this run can serve a call of `policy` starting in `cwd`: made for the same
    /// shape, still alive (its helper's pidfd not readable), and the call's release small
    /// enough to be sent at once (a pipe's atomic size, well under a socket's buffer).
    pub(crate) fn fits(&self, policy: &HelperPolicy, cwd: &Path) -> bool {
        if park_key(policy, cwd).as_deref() != Some(&self.key[..]) {
            return false;
        }
        let alive = match &self.forked.guard.pidfd {
            Some(fd) => {
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: poll on a local struct.
                unsafe { libc::poll(&mut p, 1, 0) == 0 }
            }
            None => false,
        };
        alive && release_json(policy).is_some_and(|j| j.len() <= libc::PIPE_BUF)
    }

    /// Serves the call of `policy` (checked by [`fits`](Self::fits)): its argv and environment
    /// sent, then the run followed as a forked one. `None`: the release could not be sent (the
    /// helper died since the check), nothing ran, and the caller starts the run as usual.
    pub(crate) async fn run(
        self,
        policy: &HelperPolicy,
        output_cap: usize,
        timeout: Duration,
    ) -> Option<Result<Raw, ScriptError>> {
        let started = Instant::now();
        let json = release_json(policy).unwrap_or_default();
        // One message, small enough to be sent whole without blocking.
        // SAFETY: sending a live buffer on our own socket.
        let n = unsafe {
            libc::send(
                self.release.as_raw_fd(),
                json.as_ptr().cast(),
                json.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n != json.len() as isize {
            return None;
        }
        drop(self.release);
        Some(
            follow(
                self.forked,
                output_cap,
                timeout.saturating_sub(started.elapsed()),
            )
            .await,
        )
    }
}

/// The release of a parked run for `policy`'s call.
fn release_json(policy: &HelperPolicy) -> Option<Vec<u8>> {
    serde_json::to_vec(&sandbox::Release {
        argv: policy.argv.clone(),
        env: policy.env.clone(),
    })
    .ok()
}
