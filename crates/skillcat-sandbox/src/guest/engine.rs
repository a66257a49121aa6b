//! The evaluation itself: one fresh QuickJS runtime per call, the hardened global object, the
//! host stubs, the job loop and the conversion of JavaScript values to JSON within the quotas.
//!
//! It runs in the confined child ([`helper_main`](super::helper_main)'s built-in entry) and,
//! only behind the
//! unsafe in-process setting, on a thread of the host. Either way it talks to the host through
//! a [`Wire`]: JSON lines out ([`ChildMsg`]), host replies in ([`HostReply`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rquickjs::context::intrinsic;
use rquickjs::function::Rest;
use rquickjs::{Context, Ctx, Exception, Function, Runtime, Type, Value};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::error::Quota;

/// Everything a child needs for one evaluation: the first line the host sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Job {
    /// The tool's source: one `async (args) => { … }` expression.
    pub source: String,
    /// The checked arguments (`timeout_seconds` removed).
    pub args: Json,
    /// The names of the host functions the guest may call.
    pub globals: Vec<String>,
    /// The limits of the evaluation.
    pub limits: EngineLimits,
}

/// The limits the engine enforces itself (the host checks them again on what it receives).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct EngineLimits {
    pub memory: usize,
    pub stack: usize,
    pub timeout_ms: u64,
    pub payload: usize,
    pub calls: usize,
    pub in_flight: usize,
    pub depth: usize,
    pub nodes: usize,
    pub log_entries: usize,
    pub log_entry_bytes: usize,
    /// Bytes of all log entries together ([`LOG_BYTES`](super::host::LOG_BYTES) at most).
    pub log_bytes: usize,
    pub result: usize,
}

/// What the child says, one JSON line each.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum ChildMsg {
    /// The guest called a host function.
    Call { id: u64, name: String, args: Json },
    /// The guest's promise resolved.
    Returned {
        result: Json,
        logs: Vec<String>,
        logs_capped: bool,
    },
    /// The guest threw (or its promise rejected).
    Thrown { kind: String, message: String },
    /// A quota was exceeded (by its stable name).
    Quota { quota: Quota },
    /// The deadline passed.
    Timeout,
    /// The evaluation could not go on (the engine would not start, a promise nothing can
    /// settle).
    Fault { message: String },
}

/// The host's answer to one call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct HostReply {
    pub id: u64,
    /// `Ok(value)`, or the message the guest's promise rejects with.
    pub result: Result<Json, String>,
}

/// What a wire read gave.
pub(crate) enum Recv {
    Line(String),
    Timeout,
    Closed,
}

/// The channel to the host.
pub(crate) trait Wire {
    /// Sends one message (a line of JSON).
    fn send(&mut self, msg: &ChildMsg) -> bool;
    /// Waits for one host reply until `until`.
    fn recv(&mut self, until: Instant) -> Recv;
}

/// Runs before the guest: takes the host's `send` and `log`, hides what the guest must not
/// reach, installs the declared globals as async stubs and `console`, and returns `settle`,
/// the function the loop resolves host calls with. Nothing it uses stays reachable by name.
const PRELUDE: &str = r#"(function (send, log, names) {
  "use strict";
  const P = Promise, parse = JSON.parse, M = Map, Err = Error, TE = TypeError;
  const define = Object.defineProperty, freeze = Object.freeze, apply = Reflect.apply;
  const pending = new M();
  const refuse = (what) => function () { throw new TE(what + " is not available to guest code"); };
  // Non-deterministic or reaching out: gone, or refusing with a clear message.
  for (const name of ["SharedArrayBuffer", "Atomics", "WeakRef", "FinalizationRegistry",
                      "performance", "queueMicrotask", "setTimeout", "setInterval",
                      "clearTimeout", "clearInterval", "fetch", "require", "process",
                      "std", "os", "gc", "navigator", "scriptArgs", "print"]) {
    delete globalThis[name];
  }
  define(Math, "random", { value: refuse("Math.random"), writable: false, configurable: false });
  const D = Date;
  const GuestDate = function Date(...a) {
    if (!new.target) throw new TE("Date() (the current time) is not available to guest code");
    if (a.length === 0) throw new TE("new Date() (the current time) is not available to guest code");
    return Reflect.construct(D, a, new.target);
  };
  GuestDate.prototype = D.prototype;
  define(D.prototype, "constructor", { value: GuestDate, writable: true, configurable: true });
  define(GuestDate, "parse", { value: D.parse });
  define(GuestDate, "UTC", { value: D.UTC });
  define(GuestDate, "now", { value: refuse("Date.now"), writable: false, configurable: false });
  define(globalThis, "Date", { value: GuestDate, writable: true, configurable: true });
  for (const name of names) {
    const stub = { [name]: function (args) {
      return new P((resolve, reject) => { pending.set(send(name, args), { resolve, reject }); });
    } }[name];
    define(globalThis, name, { value: stub, writable: false, enumerable: true, configurable: false });
  }
  const write = (...a) => { apply(log, undefined, a); };
  define(globalThis, "console", {
    value: freeze({ log: write, info: write, warn: write, error: write, debug: write }),
    writable: false, configurable: false,
  });
  return function settle(id, ok, text) {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    if (ok) p.resolve(parse(text)); else p.reject(new Err(text));
  };
})"#;

/// The engine's state shared with the host functions it calls (Rust data only: no JavaScript
/// value is kept outside the engine).
#[derive(Default)]
struct State {
    calls: usize,
    in_flight: usize,
    next_id: u64,
    outbox: Vec<ChildMsg>,
    logs: Vec<String>,
    /// Bytes of `logs` together.
    log_bytes: usize,
    logs_capped: bool,
    fatal: Option<Quota>,
}

/// Evaluates `job` to its last message (sent by the caller). Host calls go out on `wire` as
/// they are made; their replies come back on it.
pub(crate) fn evaluate(job: Job, wire: &mut dyn Wire) -> ChildMsg {
    let l = job.limits;
    let deadline = Instant::now() + Duration::from_millis(l.timeout_ms);
    let rt = match Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            return ChildMsg::Fault {
                message: format!("the JavaScript engine did not start: {e}"),
            };
        }
    };
    rt.set_memory_limit(l.memory);
    rt.set_max_stack_size(l.stack);
    let fatal = Arc::new(AtomicBool::new(false));
    let timed_out = Arc::new(AtomicBool::new(false));
    {
        let (fatal, timed_out) = (fatal.clone(), timed_out.clone());
        // Returning true ends evaluation with an exception the guest cannot catch; QuickJS
        // asks often, also inside a regular expression's backtracking.
        rt.set_interrupt_handler(Some(Box::new(move || {
            if fatal.load(Ordering::Relaxed) {
                return true;
            }
            if Instant::now() >= deadline {
                timed_out.store(true, Ordering::Relaxed);
                return true;
            }
            false
        })));
    }
    type Intrinsics = (
        intrinsic::Date,
        intrinsic::Eval,
        intrinsic::RegExpCompiler,
        intrinsic::RegExp,
        intrinsic::Json,
        intrinsic::Proxy,
        intrinsic::MapSet,
        intrinsic::TypedArrays,
        intrinsic::Promise,
    );
    let context = match Context::custom::<Intrinsics>(&rt) {
        Ok(c) => c,
        Err(e) => {
            return ChildMsg::Fault {
                message: format!("the JavaScript engine did not start: {e}"),
            };
        }
    };
    let state = Rc::new(RefCell::new(State::default()));
    let ended = |state: &RefCell<State>| -> Option<ChildMsg> {
        if timed_out.load(Ordering::Relaxed) {
            return Some(ChildMsg::Timeout);
        }
        state.borrow().fatal.map(|quota| ChildMsg::Quota { quota })
    };
    context.with(|ctx| {
        let settle = match install(&ctx, &job, &state, &fatal) {
            Ok(f) => f,
            Err(e) => {
                return ChildMsg::Fault {
                    message: format!("the guest's globals could not be set up: {e}"),
                };
            }
        };
        let value = match call_guest(&ctx, &job) {
            Ok(v) => v,
            Err(_) => {
                let thrown = ctx.catch();
                return ended(&state).unwrap_or_else(|| thrown_msg(&ctx, thrown, l));
            }
        };
        loop {
            // Everything the guest queued goes out before anything waits.
            let out = std::mem::take(&mut state.borrow_mut().outbox);
            for msg in &out {
                if !wire.send(msg) {
                    return ChildMsg::Fault {
                        message: "the host stopped listening".into(),
                    };
                }
            }
            if let Some(end) = ended(&state) {
                return end;
            }
            // The interrupt handler ends long jobs; a stream of tiny ones ends here.
            if Instant::now() >= deadline {
                return ChildMsg::Timeout;
            }
            if ctx.execute_pending_job() {
                continue;
            }
            let Some(promise) = value.as_promise() else {
                return settled(&ctx, Ok(value.clone()), &state, l);
            };
            match promise.state() {
                rquickjs::promise::PromiseState::Resolved => {
                    let v: Value = promise
                        .result()
                        .and_then(Result::ok)
                        .unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                    return settled(&ctx, Ok(v), &state, l);
                }
                rquickjs::promise::PromiseState::Rejected => {
                    let v = match promise.result::<Value>() {
                        Some(Err(_)) => ctx.catch(),
                        Some(Ok(v)) => v,
                        None => Value::new_undefined(ctx.clone()),
                    };
                    return ended(&state).unwrap_or_else(|| thrown_msg(&ctx, v, l));
                }
                rquickjs::promise::PromiseState::Pending => {}
            }
            if state.borrow().in_flight == 0 {
                return ChildMsg::Fault {
                    message: "the guest's promise never settles: it awaits nothing the host \
                              can answer (or a promise callback ended at the memory limit)"
                        .into(),
                };
            }
            let line = match wire.recv(deadline) {
                Recv::Line(line) => line,
                Recv::Timeout => return ChildMsg::Timeout,
                Recv::Closed => {
                    return ChildMsg::Fault {
                        message: "the host stopped answering".into(),
                    };
                }
            };
            let Ok(reply) = serde_json::from_str::<HostReply>(&line) else {
                return ChildMsg::Fault {
                    message: "the host sent a malformed reply".into(),
                };
            };
            state.borrow_mut().in_flight -= 1;
            let (ok, text) = match reply.result {
                Ok(v) => (true, v.to_string()),
                Err(m) => (false, m),
            };
            if settle.call::<_, ()>((reply.id, ok, text)).is_err() {
                let thrown = ctx.catch();
                if let Some(end) = ended(&state) {
                    return end;
                }
                return thrown_msg(&ctx, thrown, l);
            }
        }
    })
}

/// Runs the prelude with the host's two functions; returns `settle`.
fn install<'js>(
    ctx: &Ctx<'js>,
    job: &Job,
    state: &Rc<RefCell<State>>,
    fatal: &Arc<AtomicBool>,
) -> rquickjs::Result<Function<'js>> {
    let l = job.limits;
    let prelude: Function = ctx.eval(PRELUDE)?;
    let send = {
        let (state, fatal) = (state.clone(), fatal.clone());
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, args: rquickjs::function::Opt<Value<'js>>| {
                let mut s = state.borrow_mut();
                let breach = |s: &mut State, q: Quota| {
                    s.fatal.get_or_insert(q);
                    fatal.store(true, Ordering::Relaxed);
                    Exception::throw_range(&ctx, &format!("quota exceeded: {}", q.describe()))
                };
                if s.calls >= l.calls {
                    return Err(breach(&mut s, Quota::Calls(l.calls)));
                }
                if s.in_flight >= l.in_flight {
                    return Err(breach(&mut s, Quota::InFlight(l.in_flight)));
                }
                let mut budget = Budget::new(l.depth, l.nodes, l.payload, Quota::Payload);
                let args = match args.0 {
                    Some(v) => match to_json(&v, 0, &mut budget) {
                        Ok(j) => j.unwrap_or(Json::Null),
                        Err(Conv::Quota(q)) => return Err(breach(&mut s, q)),
                        Err(Conv::Unserialisable(what)) => {
                            return Err(Exception::throw_type(
                                &ctx,
                                &format!("the arguments of {name}() cannot be sent: {what}"),
                            ));
                        }
                        Err(Conv::Js) => return Err(rquickjs::Error::Exception),
                    },
                    None => Json::Null,
                };
                s.calls += 1;
                s.in_flight += 1;
                s.next_id += 1;
                let id = s.next_id;
                s.outbox.push(ChildMsg::Call { id, name, args });
                Ok(id)
            },
        )?
    };
    let log = {
        let state = state.clone();
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, parts: Rest<Value<'js>>| {
                let mut s = state.borrow_mut();
                if s.logs.len() >= l.log_entries {
                    s.logs_capped = true;
                    return;
                }
                let mut line = String::new();
                for (i, v) in parts.0.into_iter().enumerate() {
                    if i > 0 {
                        line.push(' ');
                    }
                    line.push_str(&show(&ctx, v, l.log_entry_bytes));
                    if line.len() > l.log_entry_bytes {
                        break;
                    }
                }
                truncate(&mut line, l.log_entry_bytes);
                // What a model can read of a call is far less: entries past the total are
                // dropped here, not carried to the host.
                if s.log_bytes + line.len() > l.log_bytes {
                    s.logs_capped = true;
                    return;
                }
                s.log_bytes += line.len();
                s.logs.push(line);
            },
        )?
    };
    prelude.call((send, log, job.globals.clone()))
}

/// Evaluates the source and calls it with the arguments.
fn call_guest<'js>(ctx: &Ctx<'js>, job: &Job) -> rquickjs::Result<Value<'js>> {
    // The parentheses keep the source one expression; a line break before the closing one
    // keeps a trailing line comment from swallowing it.
    let f: Value = ctx.eval(format!("(\n{}\n)", job.source))?;
    let Some(f) = f.as_function() else {
        return Err(Exception::throw_type(
            ctx,
            "the tool's source is not a function expression",
        ));
    };
    let args = ctx.json_parse(job.args.to_string())?;
    f.call((args,))
}

/// The final message for a settled guest.
fn settled<'js>(
    ctx: &Ctx<'js>,
    value: rquickjs::Result<Value<'js>>,
    state: &RefCell<State>,
    l: EngineLimits,
) -> ChildMsg {
    let value = match value {
        Ok(v) => v,
        Err(_) => return thrown_msg(ctx, ctx.catch(), l),
    };
    let mut budget = Budget::new(l.depth, l.nodes, l.result, Quota::Result);
    match to_json(&value, 0, &mut budget) {
        Ok(result) => {
            let mut s = state.borrow_mut();
            ChildMsg::Returned {
                result: result.unwrap_or(Json::Null),
                logs: std::mem::take(&mut s.logs),
                logs_capped: s.logs_capped,
            }
        }
        Err(Conv::Quota(quota)) => ChildMsg::Quota { quota },
        Err(Conv::Unserialisable(what)) => ChildMsg::Thrown {
            kind: "error".into(),
            message: format!("TypeError: the result cannot be returned: {what}"),
        },
        Err(Conv::Js) => thrown_msg(ctx, ctx.catch(), l),
    }
}

/// What the guest threw, as the outcome says it: an `Error` (its name and message), another
/// value (its JSON), or something that cannot be shown.
fn thrown_msg<'js>(ctx: &Ctx<'js>, v: Value<'js>, l: EngineLimits) -> ChildMsg {
    if let Some(e) = v.as_exception() {
        let text_of = |key: &str| -> Option<String> {
            let v: Value = e.get(key).ok()?;
            js_text(v.as_string()?).ok()
        };
        let name = text_of("name").unwrap_or_else(|| "Error".into());
        // A message that is not a string is shown as the engine coerces it.
        let message = text_of("message")
            .or_else(|| e.message())
            .unwrap_or_default();
        if name == "InternalError" && message == "out of memory" {
            return ChildMsg::Quota {
                quota: Quota::Memory(l.memory),
            };
        }
        let mut text = format!("{name}: {message}");
        truncate(&mut text, l.log_entry_bytes);
        return ChildMsg::Thrown {
            kind: "error".into(),
            message: text,
        };
    }
    let mut budget = Budget::new(l.depth, l.nodes, l.log_entry_bytes, Quota::Result);
    match to_json(&v, 0, &mut budget) {
        Ok(Some(j)) => ChildMsg::Thrown {
            kind: "value".into(),
            message: j.to_string(),
        },
        _ => {
            // A failed conversion may leave the guest's exception pending.
            let _ = ctx.catch();
            ChildMsg::Thrown {
                kind: "opaque".into(),
                message: format!("the guest threw a {} that cannot be shown", v.type_name()),
            }
        }
    }
}

/// A value as one log line shows it: text as it is, anything else as JSON.
fn show<'js>(ctx: &Ctx<'js>, v: Value<'js>, max: usize) -> String {
    if let Some(s) = v.as_string() {
        return js_text(s).unwrap_or_default();
    }
    let mut budget = Budget::new(32, 10_000, max + 1, Quota::Result);
    match to_json(&v, 0, &mut budget) {
        Ok(Some(j)) => j.to_string(),
        Ok(None) => v.type_name().to_string(),
        Err(_) => {
            let _ = ctx.catch();
            format!("[{}]", v.type_name())
        }
    }
}

/// A JavaScript string as Rust text. JavaScript strings are UTF-16 and may hold a lone
/// surrogate, which no Rust string can: QuickJS hands one over as its three-byte (WTF-8) form,
/// and each is shown as U+FFFD, the replacement character (as `String.prototype.toWellFormed`
/// gives it). A proper pair is one character, kept.
fn js_text(s: &rquickjs::String<'_>) -> rquickjs::Result<String> {
    match s.to_string() {
        Err(rquickjs::Error::Utf8(_)) => {
            let c = s.clone().to_cstring()?;
            // SAFETY: `c` points to `c.len()` bytes that QuickJS keeps alive while `c` lives;
            // they are read here as bytes, never assumed to be UTF-8.
            let bytes = unsafe { std::slice::from_raw_parts(c.as_ptr().cast::<u8>(), c.len()) };
            Ok(from_wtf8_lossy(bytes))
        }
        other => other,
    }
}

/// Bytes as text, each lone surrogate (`ED A0..BF 80..BF`) and each other invalid sequence
/// replaced by one U+FFFD.
fn from_wtf8_lossy(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                out.push_str(text);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{FFFD}');
                let skip = match rest {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                    _ => e.error_len().unwrap_or(rest.len()),
                };
                bytes = &rest[skip..];
            }
        }
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub(crate) fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

/// How much of a serialisation is left.
struct Budget {
    depth: usize,
    nodes: usize,
    bytes: usize,
    size_quota: fn(usize) -> Quota,
    max_bytes: usize,
    max_nodes: usize,
}

impl Budget {
    fn new(depth: usize, nodes: usize, bytes: usize, size_quota: fn(usize) -> Quota) -> Self {
        Budget {
            depth,
            nodes,
            bytes,
            size_quota,
            max_bytes: bytes,
            max_nodes: nodes,
        }
    }

    fn spend(&mut self, bytes: usize) -> Result<(), Conv> {
        self.bytes = self
            .bytes
            .checked_sub(bytes)
            .ok_or(Conv::Quota((self.size_quota)(self.max_bytes)))?;
        Ok(())
    }
}

enum Conv {
    Quota(Quota),
    Unserialisable(String),
    /// A getter or proxy trap of the guest threw.
    Js,
}

impl From<rquickjs::Error> for Conv {
    fn from(_: rquickjs::Error) -> Self {
        Conv::Js
    }
}

/// A JavaScript value as JSON, as `JSON.stringify` would give it (functions, symbols and
/// `undefined` left out of objects, `null` in arrays; non-finite numbers `null`), within the
/// depth, node and byte budget: stopped as soon as one is spent, before the rest is built.
fn to_json(v: &Value<'_>, depth: usize, b: &mut Budget) -> Result<Option<Json>, Conv> {
    if depth > b.depth {
        return Err(Conv::Quota(Quota::Depth(b.depth)));
    }
    if b.nodes == 0 {
        return Err(Conv::Quota(Quota::Nodes(b.max_nodes)));
    }
    b.nodes -= 1;
    Ok(Some(match v.type_of() {
        Type::Uninitialized | Type::Undefined | Type::Function | Type::Constructor => {
            return Ok(None);
        }
        Type::Symbol => return Ok(None),
        Type::Null => {
            b.spend(4)?;
            Json::Null
        }
        Type::Bool => {
            b.spend(5)?;
            Json::Bool(v.as_bool().unwrap_or_default())
        }
        Type::Int => {
            b.spend(11)?;
            Json::from(v.as_int().unwrap_or_default())
        }
        Type::Float => {
            b.spend(24)?;
            let f = v.as_float().unwrap_or(f64::NAN);
            // An integral number prints as an integer, as JSON.stringify prints it.
            if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                Json::from(f as i64)
            } else {
                serde_json::Number::from_f64(f)
                    .map(Json::Number)
                    .unwrap_or(Json::Null)
            }
        }
        Type::String => {
            let s = v.as_string().map(js_text).transpose()?;
            let s = s.unwrap_or_default();
            b.spend(s.len() + 2)?;
            Json::String(s)
        }
        Type::BigInt => return Err(Conv::Unserialisable("a BigInt".into())),
        Type::Module | Type::Unknown => {
            return Err(Conv::Unserialisable(v.type_name().into()));
        }
        Type::Array => {
            let a = v.as_array().ok_or(Conv::Js)?;
            b.spend(2)?;
            let mut out = Vec::new();
            for i in 0..a.len() {
                let item: Value = a.get(i)?;
                b.spend(1)?;
                out.push(to_json(&item, depth + 1, b)?.unwrap_or(Json::Null));
            }
            Json::Array(out)
        }
        Type::Object | Type::Exception | Type::Promise | Type::Proxy => {
            let o = v.as_object().ok_or(Conv::Js)?;
            b.spend(2)?;
            let mut out = serde_json::Map::new();
            for prop in o.props::<rquickjs::Atom, Value>() {
                let (k, item) = prop?;
                let k = js_text(&k.to_js_string()?)?;
                if let Some(j) = to_json(&item, depth + 1, b)? {
                    b.spend(k.len() + 4)?;
                    out.insert(k, j);
                }
            }
            Json::Object(out)
        }
    }))
}
