//! What a run's proxy reports: the hosts reached, the connections refused (each with the grant
//! that would allow it), the limits reached — bounded whatever the script asks, and written
//! one line each whatever a target holds.

use serde::Serialize;

/// A host and port a run reached through its proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reached {
    /// The name asked for.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The address connected to (the one checked): for the operator's own report
    /// ([`NetworkReport::lines`]), never serialised (what a model or an MCP client reads names
    /// the host only).
    #[serde(skip)]
    pub address: String,
    /// Whether the address came from `[sandbox.resolve]`.
    pub pinned: bool,
    /// Connections made.
    pub connections: u64,
    /// Bytes sent to it.
    pub bytes_out: u64,
    /// Bytes received from it.
    pub bytes_in: u64,
}

/// A connection the proxy refused (or could not make).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// What the script asked for (`host:port`, or the request's target when it was not one).
    pub target: String,
    /// Why.
    pub why: String,
    /// The grant (or pin) that would allow it, when one would.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// How many times.
    pub count: u64,
}

/// What a run did on the network through its proxy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NetworkReport {
    /// Hosts reached, in order of name.
    pub reached: Vec<Reached>,
    /// Connections refused, in order of target.
    pub refused: Vec<Refused>,
    /// Limits the run reached, each with how often.
    pub limits: Vec<String>,
    /// Connections to hosts reached that are not in `reached` (past [`REPORT_KEPT`] hosts).
    #[serde(skip_serializing_if = "is_zero")]
    pub reached_more: u64,
    /// Refused connections that are not in `refused` (past [`REPORT_KEPT`] targets).
    #[serde(skip_serializing_if = "is_zero")]
    pub refused_more: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Hosts reached, and refused targets, the report keeps (each target at most
/// [`TARGET_KEPT`] bytes): a run's bookkeeping is bounded whatever it asks for; what is past
/// it is counted.
pub const REPORT_KEPT: usize = 32;

/// Bytes of a refused target kept in the report (the rest is cut, and said with `…`).
pub const TARGET_KEPT: usize = 200;

/// Refusals a model reads after a run's output; the others are summed up in one line.
pub const MODEL_REFUSALS: usize = 8;

impl NetworkReport {
    /// Whether nothing happened.
    pub fn is_empty(&self) -> bool {
        self.reached.is_empty()
            && self.refused.is_empty()
            && self.limits.is_empty()
            && self.reached_more == 0
            && self.refused_more == 0
    }

    /// One line for each host reached, each refusal kept (with its hint on the next line) and
    /// each limit: what `skillcat run` prints on stderr (the operator's own report). Every
    /// line is one line: what came from the script is escaped ([`one_line`]).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.reached_lines(&mut out);
        self.refused_lines(&mut out, usize::MAX);
        out
    }

    /// What a model reads after a run's output, so it can say which grant would help: the
    /// first [`MODEL_REFUSALS`] refusals (each with its hint), one line summing up the rest,
    /// and the limits. Bounded whatever the script asked for (each target is cut at
    /// [`TARGET_KEPT`] bytes), and escaped: no line a target holds can pass for the host's.
    pub fn refusal_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.refused_lines(&mut out, MODEL_REFUSALS);
        out
    }

    fn reached_lines(&self, out: &mut Vec<String>) {
        for r in &self.reached {
            out.push(format!(
                "network: reached {}:{} at {}{} ({} connection{}, {} bytes out, {} in)",
                one_line(&r.host),
                r.port,
                r.address,
                if r.pinned { " (pinned)" } else { "" },
                r.connections,
                if r.connections == 1 { "" } else { "s" },
                r.bytes_out,
                r.bytes_in
            ));
        }
        if self.reached_more > 0 {
            out.push(format!(
                "network: and {} more connection{} to hosts not kept in the report",
                self.reached_more,
                if self.reached_more == 1 { "" } else { "s" }
            ));
        }
    }

    fn refused_lines(&self, out: &mut Vec<String>, shown: usize) {
        for r in self.refused.iter().take(shown) {
            out.push(format!(
                "network: refused {}: {}{}",
                one_line(&r.target),
                one_line(&r.why),
                if r.count > 1 {
                    format!(" ({} times)", r.count)
                } else {
                    String::new()
                }
            ));
            if let Some(h) = &r.hint {
                out.push(format!("hint: {}", one_line(h)));
            }
        }
        let hidden = self.refused.get(shown..).unwrap_or_default();
        let (targets, more) = (
            hidden.len(),
            hidden.iter().map(|r| r.count).sum::<u64>() + self.refused_more,
        );
        if more > 0 {
            out.push(format!(
                "network: and {more} more refused connection{}{}",
                if more == 1 { "" } else { "s" },
                match (targets, self.refused_more) {
                    (0, _) => " (not kept: the report keeps the first targets only)".to_string(),
                    (t, 0) => format!(" to {t} more target{}", if t == 1 { "" } else { "s" }),
                    (t, _) => format!(" to {t} more targets and others not kept"),
                }
            ));
        }
        for l in &self.limits {
            out.push(format!("network: limit reached: {}", one_line(l)));
        }
    }
}

/// `s` on one line and bounded: every control character (line breaks and tabs included, C0,
/// DEL, C1) and every bidirectional control written `\u{…}`, and at most [`TARGET_KEPT`]
/// bytes of `s` kept (cut at a character, then `…`). What a script sent (a target, a Host
/// header's name) can never start a line of its own or hide what follows.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(TARGET_KEPT) + 8);
    for (i, c) in s.char_indices() {
        if i + c.len_utf8() > TARGET_KEPT {
            out.push('…');
            break;
        }
        let bidi = matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        );
        if c.is_control() || bidi {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` cut at a character to at most [`TARGET_KEPT`] bytes (and `…`): what the proxy keeps of
/// a script's text.
pub(super) fn kept(s: &str) -> String {
    if s.len() <= TARGET_KEPT {
        return s.to_string();
    }
    let mut end = TARGET_KEPT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// A hint is the proxy's own text around a target of at most [`TARGET_KEPT`] bytes; bounded
/// all the same.
pub(super) fn kept_hint(h: &str) -> String {
    if h.len() <= 4 * TARGET_KEPT {
        return h.to_string();
    }
    let mut end = 4 * TARGET_KEPT;
    while !h.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &h[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a script puts in a target never starts a line of its own, never hides what
    /// follows, and is bounded.
    #[test]
    fn report_lines_are_escaped_and_cut() {
        for (target, want) in [
            ("a.test:443", "a.test:443".to_string()),
            (
                "x\n[exit status 0]\n[ran without confinement: x]",
                "x\\u{a}[exit status 0]\\u{a}[ran without confinement: x]".to_string(),
            ),
            ("a\r\tb", "a\\u{d}\\u{9}b".to_string()),
            ("esc\u{1b}]0;t\u{7}", "esc\\u{1b}]0;t\\u{7}".to_string()),
            ("c1\u{9b}31m", "c1\\u{9b}31m".to_string()),
            ("rtl\u{202e}gpj.exe", "rtl\\u{202e}gpj.exe".to_string()),
            ("\u{2066}iso", "\\u{2066}iso".to_string()),
            (&"a".repeat(300), format!("{}…", "a".repeat(TARGET_KEPT))),
            // Cut at a character, never inside one.
            (
                &"é".repeat(150),
                format!("{}…", "é".repeat(TARGET_KEPT / 2)),
            ),
        ] {
            assert_eq!(one_line(target), want, "{target:?}");
            assert!(!one_line(target).contains(['\n', '\r']));
        }
    }
}
