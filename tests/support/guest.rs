//! Shared by the guest tests (`tests/guest.rs` through the runtime, `tests/integration/mcp/guest.rs`
//! through `skillcat mcp`): the hostile guests of `fixtures/guest/skills/hostile` with their
//! exact outcomes, and the check for children left behind.

use serde_json::{Value as Json, json};

/// A call's outcome object (or, for a returned one, its result), or its error's code and
/// message.
pub type Answer = Result<Json, (String, String)>;

/// A guest's exception, as the outcome gives it.
pub fn thrown(kind: &str, message: &str) -> Answer {
    Ok(json!({"ok": false, "thrown": {"kind": kind, "message": message}}))
}

/// Each hostile call (with `timeout_seconds: 1` where it would run forever) and its exact
/// answer under the default limits (host calls limited to 1 second). `never_answers`: whether
/// the host provides `hang`, a function that never answers.
pub fn hostile_cases(never_answers: bool) -> Vec<(&'static str, Json, Answer)> {
    let timeout = |tool: &str| {
        Err((
            "E_SANDBOX_FAILED".to_string(),
            format!("Evaluation timed out after 1 seconds (kind: timed-out; guest tool '{tool}')"),
        ))
    };
    let quota = |tool: &str, what: &str, name: &str| {
        Err((
            "E_SKILL_GUEST_QUOTA_EXCEEDED".to_string(),
            format!("guest tool '{tool}' exceeded a quota: {what} [{name}]"),
        ))
    };
    let one_second = json!({"timeout_seconds": 1});
    let memory = "engine memory (67108864 bytes)";
    let mut cases = vec![
        ("spin", one_second.clone(), timeout("spin")),
        (
            "spin_in_promise",
            one_second.clone(),
            timeout("spin_in_promise"),
        ),
        ("redos", one_second.clone(), timeout("redos")),
        ("job_storm", one_second.clone(), timeout("job_storm")),
        (
            "grow_array",
            json!({}),
            quota("grow_array", memory, "memory"),
        ),
        (
            "grow_string",
            json!({}),
            quota("grow_string", memory, "memory"),
        ),
        (
            "recurse",
            json!({}),
            thrown("error", "RangeError: Maximum call stack size exceeded"),
        ),
        (
            "big_result",
            json!({}),
            quota("big_result", "result size (10485760 bytes)", "result"),
        ),
        (
            "call_flood",
            json!({}),
            quota("call_flood", "host calls per evaluation (1000)", "calls"),
        ),
        (
            "nine_at_once",
            json!({}),
            quota("nine_at_once", "host calls in flight (8)", "in_flight"),
        ),
        (
            "shared_memory",
            json!({}),
            thrown("error", "ReferenceError: SharedArrayBuffer is not defined"),
        ),
        ("escape", json!({}), Ok(json!({"reached": []}))),
        (
            "thrown_value",
            json!({}),
            thrown("value", r#"{"code":7,"why":"a plain object"}"#),
        ),
        (
            "thrown_opaque",
            json!({}),
            thrown("opaque", "the guest threw a symbol that cannot be shown"),
        ),
    ];
    if never_answers {
        cases.push((
            "never_answers",
            json!({}),
            quota("never_answers", "host call time (1 s)", "call_time"),
        ));
    }
    for (what, message) in [
        ("std", "ReferenceError: std is not defined"),
        ("os", "ReferenceError: os is not defined"),
        ("require", "ReferenceError: require is not defined"),
        ("process", "ReferenceError: process is not defined"),
        ("import", "ReferenceError: could not load module 'os'"),
        (
            "date_now",
            "TypeError: Date.now is not available to guest code",
        ),
        (
            "math_random",
            "TypeError: Math.random is not available to guest code",
        ),
        (
            "new_date",
            "TypeError: new Date() (the current time) is not available to guest code",
        ),
        ("fetch", "ReferenceError: fetch is not defined"),
        ("timer", "ReferenceError: setTimeout is not defined"),
    ] {
        cases.push(("reach", json!({"what": what}), thrown("error", message)));
    }
    cases
}

/// The log flood's outcome as a model reads it: its result, and the first of the 1,000
/// entries of at most 8 KiB the guest kept, as many as the output cap (64 KiB) holds, capped.
pub fn check_log_flood(out: &Json) {
    assert_eq!(out["result"], json!("flooded"));
    let logs = out["logs"].as_array().unwrap();
    assert!((1..1000).contains(&logs.len()), "{} entries", logs.len());
    assert!(logs.iter().all(|l| l.as_str().unwrap().len() <= 8192));
    for (i, l) in logs.iter().enumerate() {
        assert!(l.as_str().unwrap().starts_with(&format!("line {i} yyy")));
    }
    assert!(out.to_string().len() <= 64 * 1024);
    assert_eq!(out["logsCapped"], json!(true));
}

/// Prototype pollution of a value a host function returned stays in its evaluation: the
/// second call sees a clean world.
pub fn check_pollution(polluted: Answer, clean: Answer) {
    assert_eq!(
        polluted.unwrap()["result"],
        json!({"polluted": "yes", "map": ["hijacked"]})
    );
    assert_eq!(
        clean.unwrap()["result"],
        json!({"polluted": null, "map": [1],
               "data": {"rates": [1, 2, 3], "note": "hostile fixture data"}})
    );
}

/// The processes below `root` that are sandbox helpers or guest children (`__skillcat-…`).
pub fn children_below(root: u32) -> Vec<String> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // The fields after the command name (which may hold blanks) follow its last ") ".
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let ppid: u32 = rest
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parent_of.push((pid, ppid));
    }
    let below = |mut pid: u32| {
        while pid > 1 {
            let Some(&(_, ppid)) = parent_of.iter().find(|(p, _)| *p == pid) else {
                return false;
            };
            if ppid == root {
                return true;
            }
            pid = ppid;
        }
        false
    };
    parent_of
        .iter()
        .filter(|(pid, _)| below(*pid))
        .filter_map(|(pid, _)| describe(*pid).filter(|d| d.contains("skillcat")))
        .collect()
}

/// `PID comm: command line` of a live sandbox helper or guest child (`__skillcat-…` on its
/// command line, or `skillcat-guest` as its name); `None` for anything else — the server's
/// workspace watcher too (`REAPER_ARG`: it lives as long as the server and runs no skill code).
fn describe(pid: u32) -> Option<String> {
    // A zombie runs nothing (and init reaps it): only live processes count.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if stat.rsplit_once(") ")?.1.starts_with('Z') {
        return None;
    }
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
    if cmd.contains(skillcat::script::REAPER_ARG) {
        return None;
    }
    (cmd.contains("__skillcat") || comm.trim() == "skillcat-guest")
        .then(|| format!("{pid} {}: {cmd}", comm.trim()))
}

/// Guest children anywhere on the machine (named `skillcat-guest`), whoever their parent is
/// now: one orphaned by a killed helper would show here.
pub fn guests_anywhere() -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(describe)
        .filter(|d| d.contains(" skillcat-guest: "))
        .collect()
}
