//! The host side: [`GuestHost`] (the globals a guest may call, the limits, where the child
//! comes from), one evaluation driven to its [`Outcome`], and the quotas checked again on
//! everything the child sends.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::{Value as Json, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::declare::is_js_name;
use super::engine::{self, ChildMsg, EngineLimits, HostReply, Job};
use super::error::{GuestError, Quota};
use crate::tool::{FailureKind, ToolFailure, ToolKind};

/// A function of the host a guest may call by name: it takes the guest's argument as JSON and
/// answers JSON, or a [`Rejection`] the guest's promise rejects with.
#[async_trait]
pub trait HostFunction: Send + Sync {
    /// Answers one call.
    async fn call(&self, args: Json) -> Result<Json, Rejection>;
}

/// Why a [`HostFunction`] refused a call: the message the guest's promise rejects with (the
/// guest sees this text, and nothing of the host's own errors but what it says).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejection(String);

impl Rejection {
    /// A rejection with `message`.
    pub fn new(message: impl Into<String>) -> Rejection {
        Rejection(message.into())
    }

    /// The message, as the guest gets it.
    pub fn into_message(self) -> String {
        self.0
    }
}

impl From<String> for Rejection {
    fn from(message: String) -> Rejection {
        Rejection(message)
    }
}

impl From<&str> for Rejection {
    fn from(message: &str) -> Rejection {
        Rejection(message.to_string())
    }
}

/// A [`HostFunction`] from an async closure.
pub struct FnHost<F>(pub F);

#[async_trait]
impl<F, Fut> HostFunction for FnHost<F>
where
    F: Fn(Json) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Result<Json, Rejection>> + Send,
{
    async fn call(&self, args: Json) -> Result<Json, Rejection> {
        (self.0)(args).await
    }
}

/// The host functions one evaluation sees, by name.
pub type Globals = BTreeMap<String, Arc<dyn HostFunction>>;

/// The limits of guest evaluations. The defaults are the reference battery's quotas plus an
/// engine heap and stack; [`GuestHost::limits`] takes any of them lower, only
/// [`GuestHost::limits_above_defaults`] higher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestLimits {
    /// Bytes the engine's heap may hold (default 64 MiB).
    pub memory: usize,
    /// Bytes of native stack the engine may use (default 1 MiB).
    pub stack: usize,
    /// Seconds an evaluation may take when the call does not say (default 10).
    pub default_timeout: u64,
    /// The most `timeout_seconds` a call may ask for (default 60).
    pub max_timeout: u64,
    /// How long after the deadline the child is killed when it has not ended itself
    /// (default 1 s).
    pub grace: Duration,
    /// Bytes of one host call's arguments, and of its answer (default 1 MiB).
    pub payload: usize,
    /// Host calls per evaluation (default 1,000).
    pub calls: usize,
    /// Host calls waiting for an answer at once (default 8).
    pub in_flight: usize,
    /// How long one host call may take (default 10 s).
    pub call_timeout: Duration,
    /// Nesting depth of a value sent or returned (default 32).
    pub depth: usize,
    /// Values in one value sent or returned (default 10,000).
    pub nodes: usize,
    /// `console.log` entries kept (default 1,000), and at most [`LOG_BYTES`] of them in all;
    /// later ones are dropped and the outcome says `logsCapped`.
    pub log_entries: usize,
    /// Bytes of one log entry (default 8 KiB; longer ones are cut).
    pub log_entry_bytes: usize,
    /// Bytes of the final result as JSON (default 10 MiB).
    pub result: usize,
}

impl Default for GuestLimits {
    fn default() -> Self {
        GuestLimits {
            memory: 64 << 20,
            stack: 1 << 20,
            default_timeout: 10,
            max_timeout: 60,
            grace: Duration::from_secs(1),
            payload: 1 << 20,
            calls: 1000,
            in_flight: 8,
            call_timeout: Duration::from_secs(10),
            depth: 32,
            nodes: 10_000,
            log_entries: 1000,
            log_entry_bytes: 8 << 10,
            result: 10 << 20,
        }
    }
}

impl GuestLimits {
    /// Checks that every limit is usable (none zero, the default timeout within the maximum)
    /// and, unless `above` is set, that none is above its default.
    fn check(&self, above: bool) -> Result<(), GuestError> {
        let d = GuestLimits::default();
        let fields: [(&str, u128, u128); 14] = [
            ("memory", self.memory as u128, d.memory as u128),
            ("stack", self.stack as u128, d.stack as u128),
            (
                "default_timeout",
                self.default_timeout.into(),
                d.default_timeout.into(),
            ),
            ("max_timeout", self.max_timeout.into(), d.max_timeout.into()),
            ("grace", self.grace.as_millis(), d.grace.as_millis()),
            ("payload", self.payload as u128, d.payload as u128),
            ("calls", self.calls as u128, d.calls as u128),
            ("in_flight", self.in_flight as u128, d.in_flight as u128),
            (
                "call_timeout",
                self.call_timeout.as_millis(),
                d.call_timeout.as_millis(),
            ),
            ("depth", self.depth as u128, d.depth as u128),
            ("nodes", self.nodes as u128, d.nodes as u128),
            (
                "log_entries",
                self.log_entries as u128,
                d.log_entries as u128,
            ),
            (
                "log_entry_bytes",
                self.log_entry_bytes as u128,
                d.log_entry_bytes as u128,
            ),
            ("result", self.result as u128, d.result as u128),
        ];
        for (name, value, default) in fields {
            if value == 0 {
                return Err(GuestError::config(format!("guest limit {name} is zero")));
            }
            if value > default && !above {
                return Err(GuestError::config(format!(
                    "guest limit {name} ({value}) is above its default ({default}); raise \
                     limits only with limits_above_defaults"
                )));
            }
        }
        if self.default_timeout > self.max_timeout {
            return Err(GuestError::config(format!(
                "guest default_timeout ({}) is above max_timeout ({})",
                self.default_timeout, self.max_timeout
            )));
        }
        if self.memory < 1 << 20 || self.stack < 64 << 10 {
            return Err(GuestError::config(
                "guest memory must be at least 1 MiB and stack at least 64 KiB",
            ));
        }
        Ok(())
    }

    fn engine(&self, timeout: Duration) -> EngineLimits {
        EngineLimits {
            memory: self.memory,
            stack: self.stack,
            timeout_ms: timeout.as_millis() as u64,
            payload: self.payload,
            calls: self.calls,
            in_flight: self.in_flight,
            depth: self.depth,
            nodes: self.nodes,
            log_entries: self.log_entries,
            log_entry_bytes: self.log_entry_bytes,
            log_bytes: self.log_bytes(),
            result: self.result,
        }
    }

    /// Bytes of all log entries of one evaluation together.
    fn log_bytes(&self) -> usize {
        LOG_BYTES.min(self.log_entries.saturating_mul(self.log_entry_bytes))
    }
}

/// Bytes of all log entries of one evaluation together (256 KiB): more than a model reads of
/// one call (the output cap, 64 KiB by default), and what keeps the final message — and the
/// host's memory for it — small whatever the guest logs (1,000 entries of 8 KiB of control
/// characters were 48 MB of JSON).
pub const LOG_BYTES: usize = 256 << 10;

/// What the guest threw, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrownKind {
    /// An `Error` (or subclass): the message is `Name: message`.
    Error,
    /// Another value: the message is its JSON.
    Value,
    /// A value that cannot be shown (a symbol, a function, one whose getters throw).
    Opaque,
}

impl ThrownKind {
    /// `error`, `value` or `opaque`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThrownKind::Error => "error",
            ThrownKind::Value => "value",
            ThrownKind::Opaque => "opaque",
        }
    }
}

/// How an evaluation ended: the guest's result, or what it threw. Both are data for the
/// model, never tool errors.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The guest's promise resolved.
    Returned {
        /// Its value as JSON.
        result: Json,
        /// From the start of the call to the answer.
        duration: Duration,
        /// What it wrote with `console.log` (each entry at most the entry limit).
        logs: Vec<String>,
        /// Whether entries were dropped at the entry limit.
        logs_capped: bool,
    },
    /// The guest threw, or its promise rejected.
    Thrown {
        /// What kind of value it threw.
        kind: ThrownKind,
        /// What it says.
        message: String,
    },
}

impl Outcome {
    /// The outcome object a tool call returns:
    /// `{"ok":true,"result":…,"durationMs":…,"logs":[…],"logsCapped":bool}` or
    /// `{"ok":false,"thrown":{"kind":"error"|"value"|"opaque","message":…}}`.
    pub fn to_json(&self) -> Json {
        match self {
            Outcome::Returned {
                result,
                duration,
                logs,
                logs_capped,
            } => json!({
                "ok": true,
                "result": result,
                "durationMs": duration.as_millis() as u64,
                "logs": logs,
                "logsCapped": logs_capped,
            }),
            Outcome::Thrown { kind, message } => json!({
                "ok": false,
                "thrown": {"kind": kind.as_str(), "message": message},
            }),
        }
    }
}

/// Names a host function may not take: the engine's own globals and what the prelude defines.
const RESERVED: &[&str] = &[
    "globalThis",
    "console",
    "Object",
    "Function",
    "Array",
    "Number",
    "String",
    "Boolean",
    "Symbol",
    "Error",
    "TypeError",
    "RangeError",
    "SyntaxError",
    "ReferenceError",
    "EvalError",
    "URIError",
    "InternalError",
    "AggregateError",
    "Promise",
    "JSON",
    "Math",
    "Reflect",
    "Proxy",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "Date",
    "RegExp",
    "eval",
    "undefined",
    "NaN",
    "Infinity",
    "BigInt",
    "ArrayBuffer",
    "DataView",
    "Iterator",
    "parseInt",
    "parseFloat",
    "isNaN",
    "isFinite",
    "escape",
    "unescape",
    "encodeURI",
    "decodeURI",
    "encodeURIComponent",
    "decodeURIComponent",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
    "TypedArray",
    "arguments",
];

/// The host of guest tools: the globals guests may call, the limits, the child's executable,
/// and whether evaluation may happen in this process (never, unless set by its unsafe name).
#[derive(Clone)]
pub struct GuestHost {
    globals: Globals,
    limits: GuestLimits,
    helper: PathBuf,
    in_process: bool,
}

impl std::fmt::Debug for GuestHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestHost")
            .field("globals", &self.globals.keys().collect::<Vec<_>>())
            .field("limits", &self.limits)
            .field("helper", &self.helper)
            .field("in_process", &self.in_process)
            .finish()
    }
}

impl Default for GuestHost {
    fn default() -> Self {
        Self::new()
    }
}

impl GuestHost {
    /// No globals, the default limits, this executable as the sandbox helper (it must call
    /// [`guest::helper_main`](super::helper_main) first thing in `main`).
    pub fn new() -> Self {
        GuestHost {
            globals: Globals::new(),
            limits: GuestLimits::default(),
            helper: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
            in_process: false,
        }
    }

    /// Registers a host function guests may call as `name(args)` (a promise of its answer),
    /// when a tool declares it in its `globals`. Refused (`E_INVALID_SKILLS_CONFIG`): a name
    /// that is not a JavaScript identifier, one of the engine's own globals, one starting with
    /// `__`, or one already registered.
    pub fn global(
        mut self,
        name: &str,
        function: impl HostFunction + 'static,
    ) -> Result<Self, GuestError> {
        if !is_js_name(name) || name.starts_with("__") || RESERVED.contains(&name) {
            return Err(GuestError::config(format!(
                "'{name}' cannot be a guest global (not an identifier, or a built-in name)"
            )));
        }
        if self.globals.contains_key(name) {
            return Err(GuestError::config(format!(
                "guest global '{name}' is registered twice"
            )));
        }
        self.globals.insert(name.to_string(), Arc::new(function));
        Ok(self)
    }

    /// Sets the limits; each must be at most its default ([`GuestLimits::default`]) and none
    /// zero (`E_INVALID_SKILLS_CONFIG` otherwise).
    pub fn limits(mut self, limits: GuestLimits) -> Result<Self, GuestError> {
        limits.check(false)?;
        self.limits = limits;
        Ok(self)
    }

    /// Sets limits that may exceed the defaults: the explicit way up.
    pub fn limits_above_defaults(mut self, limits: GuestLimits) -> Result<Self, GuestError> {
        limits.check(true)?;
        self.limits = limits;
        Ok(self)
    }

    /// The executable re-run as the sandbox helper, whose built-in entry evaluates (default:
    /// this one).
    pub fn helper(mut self, path: impl Into<PathBuf>) -> Self {
        self.helper = path.into();
        self
    }

    /// **Unsafe**: evaluate guests on a thread of this process, with no process boundary, no
    /// namespaces, no Landlock, no seccomp and no kill at the deadline — only the engine's own
    /// limits and its interrupt. A guest that finds a bug in the engine owns the agent. Off by
    /// default; meant for platforms without the sandbox helper and for debugging.
    pub fn unsafe_evaluate_in_process_without_isolation(mut self, on: bool) -> Self {
        self.in_process = on;
        self
    }

    /// The limits in force.
    pub fn current_limits(&self) -> &GuestLimits {
        &self.limits
    }

    /// The names of the registered globals, sorted.
    pub fn global_names(&self) -> Vec<String> {
        self.globals.keys().cloned().collect()
    }

    /// A registered global.
    pub fn global_fn(&self, name: &str) -> Option<Arc<dyn HostFunction>> {
        self.globals.get(name).cloned()
    }

    /// Evaluates `(source)(args)` in a fresh engine (confined child, or this process when the
    /// unsafe setting is on) with `globals` as the host functions it may call, within
    /// `timeout`. `tool` names the tool in errors.
    pub async fn evaluate(
        &self,
        tool: &str,
        source: &str,
        args: Json,
        globals: &Globals,
        timeout: Duration,
    ) -> Result<Outcome, GuestError> {
        let job = Job {
            source: source.to_string(),
            args,
            globals: globals.keys().cloned().collect(),
            limits: self.limits.engine(timeout),
        };
        let mut d = Driver {
            child_ended: false,
            tool,
            limits: &self.limits,
            globals,
            timeout,
        };
        if self.in_process {
            return d.in_process(job).await;
        }
        d.confined(&self.helper, job).await
    }
}

/// A line from the child, or a line too long to be one.
type Incoming = Result<String, usize>;

/// Why driving ended without an outcome.
enum Stop {
    Error(GuestError),
    /// The child's output ended without a final message.
    Closed,
}

struct Driver<'a> {
    /// Whether the child sent its last message (it is ending by itself).
    child_ended: bool,
    tool: &'a str,
    limits: &'a GuestLimits,
    globals: &'a Globals,
    timeout: Duration,
}

impl Driver<'_> {
    fn failed(&self, reason: impl Into<String>) -> GuestError {
        GuestError::SandboxFailed {
            tool: self.tool.to_string(),
            reason: reason.into(),
        }
    }

    fn quota(&self, quota: Quota) -> Stop {
        Stop::Error(GuestError::Quota {
            tool: self.tool.to_string(),
            quota,
        })
    }

    fn timed_out(&self) -> Stop {
        Stop::Error(
            ToolFailure::new(
                ToolKind::Guest,
                self.tool,
                FailureKind::Timeout {
                    after: self.timeout,
                },
            )
            .into(),
        )
    }

    /// The longest line the child may send: the final message with the result and the logs.
    fn line_max(&self) -> usize {
        let l = self.limits;
        // JSON writes a control character in six bytes.
        let logs = (l.log_entries * (6 * l.log_entry_bytes + 4))
            .min(6 * l.log_bytes() + 4 * l.log_entries);
        l.result.max(l.payload) + logs + (64 << 10)
    }

    /// Answers the child's host calls and waits for its final message, checking every quota
    /// on what it receives; the deadline plus the grace period ends it.
    async fn drive(
        &mut self,
        lines: &mut mpsc::Receiver<Incoming>,
        replies: &mpsc::UnboundedSender<String>,
        started: Instant,
    ) -> Result<Outcome, Stop> {
        let l = *self.limits;
        let deadline = tokio::time::sleep(self.timeout + l.grace);
        tokio::pin!(deadline);
        let mut calls: JoinSet<(u64, Option<Result<Json, Rejection>>)> = JoinSet::new();
        let mut made = 0usize;
        loop {
            tokio::select! {
                _ = &mut deadline => return Err(self.timed_out()),
                Some(done) = calls.join_next(), if !calls.is_empty() => {
                    let Ok((id, answer)) = done else {
                        return Err(Stop::Error(self.failed("a host call task was lost")));
                    };
                    let result = match answer {
                        None => {
                            return Err(self.quota(Quota::CallTime(
                                l.call_timeout.as_millis() as u64,
                            )));
                        }
                        Some(Ok(v)) => {
                            if let Err(q) = within(&v, l.depth, l.nodes, l.payload, Quota::Payload) {
                                return Err(self.quota(q));
                            }
                            Ok(v)
                        }
                        Some(Err(m)) => {
                            let mut m = m.into_message();
                            engine::truncate(&mut m, l.log_entry_bytes);
                            Err(m)
                        }
                    };
                    let line = serde_json::to_string(&HostReply { id, result })
                        .unwrap_or_default();
                    // A child that is gone cannot take it; its last lines (or the end of its
                    // output) still come through `lines`.
                    let _ = replies.send(line + "\n");
                }
                line = lines.recv() => {
                    let text = match line {
                        None => return Err(Stop::Closed),
                        Some(Err(n)) => {
                            return Err(Stop::Error(self.failed(format!(
                                "the guest sent a message over {n} bytes"
                            ))));
                        }
                        Some(Ok(t)) => t,
                    };
                    let msg: ChildMsg = serde_json::from_str(&text).map_err(|e| {
                        Stop::Error(self.failed(format!("the guest broke the protocol: {e}")))
                    })?;
                    self.child_ended = !matches!(msg, ChildMsg::Call { .. });
                    match msg {
                        ChildMsg::Call { id, name, args } => {
                            made += 1;
                            if made > l.calls {
                                return Err(self.quota(Quota::Calls(l.calls)));
                            }
                            if calls.len() >= l.in_flight {
                                return Err(self.quota(Quota::InFlight(l.in_flight)));
                            }
                            within(&args, l.depth, l.nodes, l.payload, Quota::Payload)
                                .map_err(|q| self.quota(q))?;
                            let Some(f) = self.globals.get(&name).cloned() else {
                                return Err(Stop::Error(self.failed(format!(
                                    "the guest called '{name}', which it was not given"
                                ))));
                            };
                            let limit = l.call_timeout;
                            calls.spawn(async move {
                                let call = AssertUnwindSafe(f.call(args)).catch_unwind();
                                let answer = match tokio::time::timeout(limit, call).await {
                                    Err(_) => None,
                                    Ok(Ok(r)) => Some(r),
                                    Ok(Err(_)) => {
                                        Some(Err(format!("host function {name} failed").into()))
                                    }
                                };
                                (id, answer)
                            });
                        }
                        ChildMsg::Returned { result, logs, logs_capped } => {
                            within(&result, l.depth, l.nodes, l.result, Quota::Result)
                                .map_err(|q| self.quota(q))?;
                            let mut capped = logs_capped || logs.len() > l.log_entries;
                            let mut total = 0usize;
                            let logs = logs
                                .into_iter()
                                .take(l.log_entries)
                                .map(|mut s| {
                                    engine::truncate(&mut s, l.log_entry_bytes);
                                    s
                                })
                                .take_while(|s| {
                                    total += s.len();
                                    capped |= total > l.log_bytes();
                                    total <= l.log_bytes()
                                })
                                .collect();
                            return Ok(Outcome::Returned {
                                result,
                                duration: started.elapsed(),
                                logs,
                                logs_capped: capped,
                            });
                        }
                        ChildMsg::Thrown { kind, mut message } => {
                            engine::truncate(&mut message, l.log_entry_bytes);
                            let kind = match kind.as_str() {
                                "error" => ThrownKind::Error,
                                "value" => ThrownKind::Value,
                                _ => ThrownKind::Opaque,
                            };
                            return Ok(Outcome::Thrown { kind, message });
                        }
                        ChildMsg::Quota { quota } => return Err(self.quota(self.own(quota))),
                        ChildMsg::Timeout => return Err(self.timed_out()),
                        ChildMsg::Fault { mut message } => {
                            engine::truncate(&mut message, l.log_entry_bytes);
                            return Err(Stop::Error(self.failed(message)));
                        }
                    }
                }
            }
        }
    }

    /// The quota a child reported, with the limit the host set (never the child's word).
    fn own(&self, q: Quota) -> Quota {
        let l = self.limits;
        match q {
            Quota::Payload(_) => Quota::Payload(l.payload),
            Quota::Calls(_) => Quota::Calls(l.calls),
            Quota::InFlight(_) => Quota::InFlight(l.in_flight),
            Quota::CallTime(_) => Quota::CallTime(l.call_timeout.as_millis() as u64),
            Quota::Depth(_) => Quota::Depth(l.depth),
            Quota::Nodes(_) => Quota::Nodes(l.nodes),
            Quota::Result(_) => Quota::Result(l.result),
            Quota::Memory(_) => Quota::Memory(l.memory),
        }
    }

    fn finish(
        &self,
        r: Result<Outcome, Stop>,
        closed: impl FnOnce() -> String,
    ) -> Result<Outcome, GuestError> {
        match r {
            Ok(o) => Ok(o),
            Err(Stop::Error(e)) => Err(e),
            Err(Stop::Closed) => Err(self.failed(closed())),
        }
    }

    /// The unsafe mode: the engine on a thread of this process.
    async fn in_process(&mut self, job: Job) -> Result<Outcome, GuestError> {
        let started = Instant::now();
        let (out_tx, mut out_rx) = mpsc::channel::<Incoming>(64);
        let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<String>();
        let (in_tx, in_rx) = std::sync::mpsc::channel::<String>();
        // Replies cross from the async side to the engine's thread.
        let forward = tokio::spawn(async move {
            while let Some(line) = reply_rx.recv().await {
                if in_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let thread = std::thread::Builder::new()
            .name("skillcat-guest".into())
            .stack_size(self.limits.stack + (4 << 20))
            .spawn(move || {
                let mut wire = ChanWire {
                    out: out_tx,
                    input: in_rx,
                };
                let last = engine::evaluate(job, &mut wire);
                engine::Wire::send(&mut wire, &last);
            });
        if let Err(e) = thread {
            forward.abort();
            return Err(self.failed(format!("cannot start the evaluation thread: {e}")));
        }
        let r = self.drive(&mut out_rx, &reply_tx, started).await;
        forward.abort();
        // The thread ends at the engine's own deadline; it is not waited for.
        self.finish(r, || "the evaluation thread ended without an answer".into())
    }

    /// The confined child, started through the sandbox helper.
    #[cfg(target_os = "linux")]
    async fn confined(
        &mut self,
        helper: &std::path::Path,
        job: Job,
    ) -> Result<Outcome, GuestError> {
        use std::process::Stdio;

        use crate::script::process::{helper_command, policy_memfd, read_status, status_pipe_pair};
        use crate::script::sandbox::{self, HelperRequest};

        if sandbox::landlock_abi().is_none() {
            return Err(self.failed(
                "guest code runs only confined, and Landlock is not available on this kernel",
            ));
        }
        // Forked from the zygote where there is one (no second exec of the binary).
        if let Some(outcome) = self.confined_forked(helper, &job).await {
            return outcome;
        }
        let started = Instant::now();
        let policy = guest_policy(helper, self.limits, self.timeout);
        let json = HelperRequest::Run(policy)
            .to_json()
            .map_err(|e| self.failed(format!("cannot serialise the policy: {e}")))?;
        let policy_fd = policy_memfd(json.as_bytes())
            .map_err(|e| self.failed(format!("cannot pass the policy: {e}")))?;
        let (status_r, status_w) =
            status_pipe_pair().map_err(|e| self.failed(format!("status pipe: {e}")))?;
        let mut cmd = tokio::process::Command::from(helper_command(
            helper,
            &status_w,
            &policy_fd,
            Stdio::piped(),
        ));
        cmd.process_group(0).kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| self.failed(format!("cannot start {}: {e}", helper.display())))?;
        drop(status_w);
        drop(policy_fd);
        let pid = child.id().map(|p| p as libc::pid_t);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(self.failed("the child's pipes are missing"));
        };
        let (reply_tx, reply_rx) = mpsc::unbounded_channel::<String>();
        let first = serde_json::to_string(&job).unwrap_or_default() + "\n";
        let writer = tokio::spawn(write_lines(stdin, first, reply_rx));
        let (line_tx, mut line_rx) = mpsc::channel::<Incoming>(64);
        let max = self.line_max();
        let reader = tokio::spawn(read_lines(stdout, max, line_tx));
        let r = self.drive(&mut line_rx, &reply_tx, started).await;
        // A child that gave its last message is ending: the helper reaps it and exits, which
        // leaves no process behind, not even for a moment. Then, always, the whole group goes
        // (the helper, and with it the child in its PID namespace) and the helper is reaped.
        let mut exited = None;
        if self.child_ended {
            exited = tokio::time::timeout(Duration::from_millis(500), child.wait())
                .await
                .ok();
        }
        let status = match exited {
            // Reaped: its group id may be anyone's now, and nothing of the call is left.
            Some(status) => status,
            None => {
                if let Some(pid) = pid {
                    // SAFETY: signalling the process group this call created and has not
                    // reaped.
                    unsafe { libc::killpg(pid, libc::SIGKILL) };
                }
                child.wait().await
            }
        };
        writer.abort();
        reader.abort();
        let lines = tokio::task::spawn_blocking(move || read_status(status_r))
            .await
            .unwrap_or_default();
        self.finish(r, || ended_without_answer(&lines, status))
    }

    /// [`confined`](Self::confined) with the helper forked from the sandbox zygote; `None`
    /// when the zygote is not there for it (nothing was started).
    #[cfg(target_os = "linux")]
    async fn confined_forked(
        &mut self,
        helper: &std::path::Path,
        job: &Job,
    ) -> Option<Result<Outcome, GuestError>> {
        use crate::script::process::{fork_guest, policy_memfd, read_status, status_pipe_pair};
        use crate::script::sandbox::HelperRequest;

        let zygote = crate::script::sandbox::linux::zygote::usable(helper)?;
        let started = Instant::now();
        let mut policy = guest_policy(helper, self.limits, self.timeout);
        // The helper's parent is the zygote: its backstop checks for that pid.
        policy.supervisor = zygote;
        let json = HelperRequest::Run(policy).to_json().ok()?;
        let policy_fd = policy_memfd(json.as_bytes()).ok()?;
        let (status_r, status_w) = status_pipe_pair().ok()?;
        let mut child = fork_guest(&status_w, &policy_fd).await?;
        drop(status_w);
        drop(policy_fd);
        let (reply_tx, reply_rx) = mpsc::unbounded_channel::<String>();
        let first = serde_json::to_string(job).unwrap_or_default() + "\n";
        let (line_tx, mut line_rx) = mpsc::channel::<Incoming>(64);
        let max = self.line_max();
        let (stdin, stdout) = (child.stdin.take()?, child.stdout.take()?);
        let writer = tokio::spawn(write_lines(stdin, first, reply_rx));
        let reader = tokio::spawn(read_lines(stdout, max, line_tx));
        let r = self.drive(&mut line_rx, &reply_tx, started).await;
        // As in `confined`: a child that gave its last message is ending; otherwise, and
        // always after a moment, the whole group goes.
        let mut exited = false;
        if self.child_ended {
            exited = tokio::time::timeout(Duration::from_millis(500), child.exited())
                .await
                .is_ok();
        }
        if !exited {
            child.kill();
            let _ = tokio::time::timeout(Duration::from_secs(2), child.exited()).await;
        }
        child.disarm();
        writer.abort();
        reader.abort();
        let lines = tokio::task::spawn_blocking(move || read_status(status_r))
            .await
            .unwrap_or_default();
        // The zygote, not this process, reaped the helper: its own status is not known here.
        let status = if exited {
            Err(std::io::Error::other("reaped by the sandbox zygote"))
        } else {
            use std::os::unix::process::ExitStatusExt;
            Ok(std::process::ExitStatus::from_raw(libc::SIGKILL))
        };
        Some(self.finish(r, || ended_without_answer(&lines, status)))
    }

    #[cfg(not(target_os = "linux"))]
    async fn confined(&mut self, _: &std::path::Path, _: Job) -> Result<Outcome, GuestError> {
        Err(self
            .failed("guest code runs confined only on Linux (the in-process setting is unsafe)"))
    }
}

/// The evaluator is the helper's built-in entry: nothing is executed, so no file at all is
/// readable (Landlock with no rule).
#[cfg(target_os = "linux")]
fn guest_policy(
    helper: &std::path::Path,
    l: &GuestLimits,
    timeout: Duration,
) -> crate::script::sandbox::HelperPolicy {
    use crate::script::sandbox::{HelperPolicy, Mode, RunLimits};
    let wall = timeout + l.grace;
    // The evaluator is the helper's built-in entry: nothing is executed, so no file at all
    // is readable (Landlock with no rule).
    HelperPolicy {
        mode: Mode::Confined,
        program: helper.to_path_buf(),
        argv: vec![helper.to_string_lossy().into_owned()],
        env: Vec::new(),
        rules: Vec::new(),
        network: crate::script::sandbox::NetMode::Off,
        proxy_port: 0,
        limits: RunLimits {
            cpu_seconds: wall.as_secs() + 2,
            // The engine's heap is bounded by its own limit; this is the backstop for
            // everything around it (the binary's mappings, the copy of a result).
            address_space: (l.memory as u64) * 4 + (1 << 30) + (l.result as u64) * 2,
            file_size: 1 << 20,
            open_files: 32,
            processes: 1,
        },
        timeout_seconds: wall.as_secs().max(1),
        supervisor: std::process::id(),
        workspace: None,
        make_work: None,
        builtin: true,
        cgroup: Vec::new(),
        protect: Vec::new(),
        granted: Vec::new(),
        parked: false,
    }
}

/// Writes the job, then every reply, to the child's stdin, until either side is gone.
#[cfg(target_os = "linux")]
async fn write_lines(
    mut stdin: impl tokio::io::AsyncWrite + Unpin,
    first: String,
    mut reply_rx: mpsc::UnboundedReceiver<String>,
) {
    use tokio::io::AsyncWriteExt;
    if stdin.write_all(first.as_bytes()).await.is_err() {
        return;
    }
    while let Some(line) = reply_rx.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Reads the child's lines of at most `max` bytes (a longer one is reported once, and ends
/// the reading) until it closes its stdout.
#[cfg(target_os = "linux")]
async fn read_lines(
    stdout: impl tokio::io::AsyncRead + Unpin,
    max: usize,
    line_tx: mpsc::Sender<Incoming>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let mut r = BufReader::new(stdout);
    loop {
        let mut buf = Vec::new();
        match (&mut r)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) if buf.last() != Some(&b'\n') => {
                let _ = line_tx.send(Err(max)).await;
                return;
            }
            Ok(_) => {
                let text = String::from_utf8_lossy(&buf).into_owned();
                if line_tx.send(Ok(text)).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Why a confined child ended without an answer: the helper's error, else how it ended.
#[cfg(target_os = "linux")]
fn ended_without_answer(
    lines: &[String],
    status: std::io::Result<std::process::ExitStatus>,
) -> String {
    lines
        .iter()
        .find_map(|l| l.strip_prefix("error "))
        .map(|e| {
            let (_, msg) = e.split_once(' ').unwrap_or(("", e));
            format!("the sandbox could not be set up: {msg}")
        })
        .or_else(|| {
            lines
                .iter()
                .find(|l| l.starts_with("signal ") || l.starts_with("exit "))
                .map(|l| format!("the guest process ended without an answer ({l})"))
        })
        .unwrap_or_else(|| match status {
            Ok(s) => format!("the guest process ended without an answer ({s})"),
            Err(e) => format!("the guest process ended without an answer: {e}"),
        })
}

/// The in-process wire: lines to the async side, replies from it.
struct ChanWire {
    out: mpsc::Sender<Incoming>,
    input: std::sync::mpsc::Receiver<String>,
}

impl engine::Wire for ChanWire {
    fn send(&mut self, msg: &ChildMsg) -> bool {
        let line = serde_json::to_string(msg).unwrap_or_default();
        self.out.blocking_send(Ok(line)).is_ok()
    }

    fn recv(&mut self, until: Instant) -> engine::Recv {
        let left = until.saturating_duration_since(Instant::now());
        match self.input.recv_timeout(left) {
            Ok(line) => engine::Recv::Line(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => engine::Recv::Timeout,
            Err(_) => engine::Recv::Closed,
        }
    }
}

/// Whether a JSON value is within the depth and node quotas and `bytes` serialised (`size`
/// names that quota).
pub(crate) fn within(
    v: &Json,
    depth: usize,
    nodes: usize,
    bytes: usize,
    size: fn(usize) -> Quota,
) -> Result<(), Quota> {
    fn walk(v: &Json, d: usize, max_d: usize, left: &mut usize, max_n: usize) -> Result<(), Quota> {
        if d > max_d {
            return Err(Quota::Depth(max_d));
        }
        if *left == 0 {
            return Err(Quota::Nodes(max_n));
        }
        *left -= 1;
        match v {
            Json::Array(a) => a
                .iter()
                .try_for_each(|x| walk(x, d + 1, max_d, left, max_n)),
            Json::Object(o) => o
                .values()
                .try_for_each(|x| walk(x, d + 1, max_d, left, max_n)),
            _ => Ok(()),
        }
    }
    let mut left = nodes;
    walk(v, 0, depth, &mut left, nodes)?;
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, v);
    if counter.0 > bytes {
        return Err(size(bytes));
    }
    Ok(())
}

struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
