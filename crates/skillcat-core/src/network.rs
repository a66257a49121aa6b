//! Network grants by host name: the `skillcat.network` grammar, host patterns, the
//! intersection with the configured ceiling, and the pins of `[sandbox.resolve]`.
//!
//! A skill's `skillcat.network` (or top-level `network`) is one of:
//!
//! | value | meaning |
//! |---|---|
//! | `true` (`True`, `TRUE`) | the whole network, as before host lists existed ([`Network::All`]) |
//! | `false`, empty, absent | no network ([`Network::Off`]) |
//! | `"api.github.com uploads.github.com:443 *.example.com"` | only these hosts, through skillcat's proxy ([`Network::Hosts`]) |
//!
//! A **host pattern** is a DNS name (`api.github.com`), or `*.` and a name of at least two
//! labels (`*.example.com`: every name *below* `example.com`, at any depth, not `example.com`
//! itself), optionally followed by `:PORT` (1–65535). **A pattern without a port allows ports
//! 80 and 443** (HTTP and HTTPS); with one, only that port. Names are compared in ASCII
//! lowercase with a trailing dot removed. Refused, with a [`PatternError`] saying why: IP
//! addresses (and names whose last label is all digits, which resolvers read as one: `127.1`),
//! `*` alone or `*.com` (too broad), a `*` anywhere but the first label, labels longer than 63
//! or names longer than 253 characters, characters other than ASCII letters, digits, `-` and
//! `_` (write an international name in its `xn--` form), a port of 0 or out of range.
//!
//! The ceiling (`[sandbox] network = true | false | ["host", …]`) and the command line
//! (`--allow-net HOST`) use the same patterns. [`Network::intersect`] is the set intersection:
//! the grant allows a host and port exactly when both the request and the ceiling allow it
//! (`*.github.com` under a ceiling of `api.github.com:443` is `api.github.com:443`; `true`
//! under a list is the list; a list under `true` is the list).
//!
//! ```
//! use skillcat_core::network::Network;
//!
//! let asked = Network::parse("api.github.com *.example.com:8443").unwrap();
//! let ceiling = Network::parse("*.github.com a.example.com:8443").unwrap();
//! let (grant, dropped) = asked.intersect(&ceiling);
//! assert_eq!(grant.to_string(), "api.github.com a.example.com:8443");
//! assert!(dropped.is_empty());
//! assert!(grant.allows("api.github.com", 443));
//! assert!(!grant.allows("api.github.com", 22));
//! assert!(Network::parse("10.0.0.1").is_err());
//! ```

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The ports a pattern without one allows: HTTP and HTTPS.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// The longest host list a declaration, the ceiling or the command line may hold.
pub const MAX_PATTERNS: usize = 256;

/// What network a run may use.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Network {
    /// None.
    #[default]
    Off,
    /// Only these hosts and ports, through the run's proxy (never empty: an empty list is
    /// [`Network::Off`]).
    Hosts(Vec<HostPattern>),
    /// The whole network (no network namespace; the host's loopback services included).
    All,
}

/// Whether a name matches one host exactly or every name below a domain.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostMatch {
    /// This name.
    Exact(String),
    /// Every name ending in `.` and this domain (`*.example.com` → `example.com`), at any
    /// depth; not the domain itself.
    Below(String),
}

/// One host pattern: a name or `*.domain`, and a port (`None`: 80 and 443).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPattern {
    /// The names it matches.
    pub host: HostMatch,
    /// The one port it allows, or `None` for [`DEFAULT_PORTS`].
    pub port: Option<u16>,
}

/// Why a host pattern (or a name a script asked for) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a host pattern: {why}")]
pub struct PatternError {
    /// The pattern as written (control characters escaped).
    pub text: String,
    /// Why.
    pub why: String,
}

impl PatternError {
    fn new(text: &str, why: impl Into<String>) -> Self {
        PatternError {
            text: text.escape_debug().to_string(),
            why: why.into(),
        }
    }
}

/// A host name as the proxy and the patterns compare it: ASCII lowercase, no trailing dot,
/// checked label by label. `Err` says why it is not a name (an IP address among the reasons).
pub fn normalize_host(text: &str) -> Result<String, PatternError> {
    let err = |why: &str| PatternError::new(text, why);
    if text.is_empty() {
        return Err(err("the name is empty"));
    }
    if text.parse::<IpAddr>().is_ok()
        || (text.starts_with('[') && text.ends_with(']'))
        || text.contains(':')
    {
        return Err(err(
            "an IP address; list a host name (skillcat resolves names itself; a name can be \
             pinned to an address with [sandbox.resolve])",
        ));
    }
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if name.len() > 253 {
        return Err(err("the name is longer than 253 characters"));
    }
    let labels: Vec<&str> = name.split('.').collect();
    for l in &labels {
        if l.is_empty() {
            return Err(err("an empty label (two dots in a row, or a leading dot)"));
        }
        if l.len() > 63 {
            return Err(err("a label is longer than 63 characters"));
        }
        if let Some(c) = l
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(err(&if c == '*' {
                "`*` is allowed only as the whole first label (`*.example.com`)".to_string()
            } else if c.is_ascii() {
                format!("the character {:?} cannot be in a host name", c)
            } else {
                "a character outside ASCII; write an international name in its `xn--` form"
                    .to_string()
            }));
        }
        if l.starts_with('-') || l.ends_with('-') {
            return Err(err("a label starts or ends with `-`"));
        }
    }
    if labels
        .last()
        .is_some_and(|l| l.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(err(
            "the last label is all digits, which resolvers read as an IP address",
        ));
    }
    if labels.len() < 2 {
        return Err(err(
            "a single label (`localhost`, `yes`); list a full name such as `api.example.com`",
        ));
    }
    Ok(name)
}

impl HostPattern {
    /// Parses one pattern (`api.github.com`, `*.example.com`, `uploads.github.com:443`).
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let err = |why: &str| PatternError::new(text, why);
        if text.starts_with('[') || text.matches(':').count() > 1 {
            // `[::1]:443`, `::1`: an address.
            return Err(normalize_host(text)
                .err()
                .unwrap_or_else(|| err("an IP address")));
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((h, p)) => {
                if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) || p.len() > 5 {
                    return Err(err("the port must be a number from 1 to 65535"));
                }
                match p.parse::<u16>() {
                    Ok(n) if n > 0 => (h, Some(n)),
                    _ => return Err(err("the port must be a number from 1 to 65535")),
                }
            }
            None => (text, None),
        };
        let host = if host == "*" {
            return Err(err(
                "`*` alone would allow every host; use `true` for the whole network",
            ));
        } else if let Some(domain) = host.strip_prefix("*.") {
            if !domain.trim_end_matches('.').contains('.') {
                return Err(err(
                    "too broad: `*.` must be followed by a name of at least two labels \
                     (`*.example.com`, not `*.com`)",
                ));
            }
            HostMatch::Below(normalize_host(domain).map_err(|e| err(&e.why))?)
        } else {
            HostMatch::Exact(normalize_host(host).map_err(|e| err(&e.why))?)
        };
        Ok(HostPattern { host, port })
    }

    /// The ports it allows.
    pub fn ports(&self) -> Vec<u16> {
        match self.port {
            Some(p) => vec![p],
            None => DEFAULT_PORTS.to_vec(),
        }
    }

    /// Whether it allows `host` (already [normalized](normalize_host)) on `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => DEFAULT_PORTS.contains(&port),
        };
        port_ok && host_within(host, &self.host)
    }

    /// The patterns both this one and `other` allow (at most one).
    pub fn intersect(&self, other: &HostPattern) -> Option<HostPattern> {
        let port = match (self.port, other.port) {
            (None, None) => None,
            (Some(p), None) | (None, Some(p)) if DEFAULT_PORTS.contains(&p) => Some(p),
            (Some(p), Some(q)) if p == q => Some(p),
            _ => return None,
        };
        let host = if match_within(&self.host, &other.host) {
            self.host.clone()
        } else if match_within(&other.host, &self.host) {
            other.host.clone()
        } else {
            return None;
        };
        Some(HostPattern { host, port })
    }

    /// Whether everything this pattern allows, `other` allows too.
    pub fn within(&self, other: &HostPattern) -> bool {
        let ports = match (self.port, other.port) {
            (_, None) => self.ports().iter().all(|p| DEFAULT_PORTS.contains(p)),
            (Some(p), Some(q)) => p == q,
            (None, Some(_)) => false,
        };
        ports && match_within(&self.host, &other.host)
    }
}

/// Whether the name `host` is one `m` matches.
fn host_within(host: &str, m: &HostMatch) -> bool {
    match m {
        HostMatch::Exact(h) => h == host,
        HostMatch::Below(d) => {
            host.len() > d.len() + 1 && host.ends_with(d.as_str()) && {
                host.as_bytes()[host.len() - d.len() - 1] == b'.'
            }
        }
    }
}

/// Whether every name `a` matches, `b` matches.
fn match_within(a: &HostMatch, b: &HostMatch) -> bool {
    match (a, b) {
        (HostMatch::Exact(h), _) => host_within(h, b),
        (HostMatch::Below(_), HostMatch::Exact(_)) => false,
        (HostMatch::Below(d), HostMatch::Below(e)) => d == e || host_within(d, b),
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostMatch::Exact(h) => f.write_str(h)?,
            HostMatch::Below(d) => write!(f, "*.{d}")?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for HostPattern {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HostPattern::parse(s)
    }
}

/// YAML 1.2 core schema's spellings.
fn is_true(s: &str) -> bool {
    matches!(s, "true" | "True" | "TRUE")
}
fn is_false(s: &str) -> bool {
    matches!(s, "false" | "False" | "FALSE" | "")
}

impl Network {
    /// Reads a declaration: `true`, `false` (or empty), or host patterns separated by blanks.
    /// Every pattern must be valid: one bad pattern refuses the whole value.
    pub fn parse(text: &str) -> Result<Network, PatternError> {
        let t = text.trim();
        if is_true(t) {
            return Ok(Network::All);
        }
        if is_false(t) {
            return Ok(Network::Off);
        }
        Network::from_patterns(t.split_whitespace())
    }

    /// A host list from patterns, each parsed (duplicates kept once); empty → [`Network::Off`].
    pub fn from_patterns<'a>(
        patterns: impl IntoIterator<Item = &'a str>,
    ) -> Result<Network, PatternError> {
        let mut out: Vec<HostPattern> = Vec::new();
        for p in patterns {
            if p == "true" || p == "false" {
                return Err(PatternError::new(
                    p,
                    "`true` and `false` stand alone, not in a list of hosts",
                ));
            }
            let pat = HostPattern::parse(p)?;
            if !out.contains(&pat) {
                out.push(pat);
            }
            if out.len() > MAX_PATTERNS {
                return Err(PatternError::new(
                    p,
                    format!("more than {MAX_PATTERNS} host patterns"),
                ));
            }
        }
        Ok(Network::hosts(out))
    }

    /// A host list, [`Network::Off`] when empty.
    pub fn hosts(list: Vec<HostPattern>) -> Network {
        if list.is_empty() {
            Network::Off
        } else {
            Network::Hosts(list)
        }
    }

    /// `true` → [`Network::All`], `false` → [`Network::Off`].
    pub fn from_bool(all: bool) -> Network {
        if all { Network::All } else { Network::Off }
    }

    /// Whether this is no network at all.
    pub fn is_off(&self) -> bool {
        matches!(self, Network::Off)
    }

    /// Whether this is the whole network.
    pub fn is_all(&self) -> bool {
        matches!(self, Network::All)
    }

    /// The host list, when this is one.
    pub fn host_list(&self) -> Option<&[HostPattern]> {
        match self {
            Network::Hosts(h) => Some(h),
            _ => None,
        }
    }

    /// Whether any network is allowed (the whole of it or some hosts).
    pub fn any(&self) -> bool {
        !self.is_off()
    }

    /// Whether `host` (already [normalized](normalize_host)) on `port` is allowed. The whole
    /// network allows every one.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        match self {
            Network::Off => false,
            Network::All => true,
            Network::Hosts(h) => h.iter().any(|p| p.matches(host, port)),
        }
    }

    /// Both: the whole network when either asks for it, else the two lists together.
    pub fn union(&self, other: &Network) -> Network {
        match (self, other) {
            (Network::All, _) | (_, Network::All) => Network::All,
            (Network::Off, n) | (n, Network::Off) => n.clone(),
            (Network::Hosts(a), Network::Hosts(b)) => {
                let mut out = a.clone();
                out.extend(b.iter().filter(|p| !a.contains(p)).cloned());
                Network::Hosts(out)
            }
        }
    }

    /// The set intersection with a ceiling: the grant, and the requested patterns the ceiling
    /// allows nothing of (for a warning). A pure function; see the [module docs](self).
    pub fn intersect(&self, ceiling: &Network) -> (Network, Vec<HostPattern>) {
        match (self, ceiling) {
            (Network::Off, _) => (Network::Off, Vec::new()),
            (n, Network::All) => (n.clone(), Vec::new()),
            (Network::All, c) => (c.clone(), Vec::new()),
            (Network::Hosts(asked), Network::Off) => (Network::Off, asked.clone()),
            (Network::Hosts(asked), Network::Hosts(allowed)) => {
                let mut out: Vec<HostPattern> = Vec::new();
                let mut dropped = Vec::new();
                for a in asked {
                    let mut any = false;
                    for c in allowed {
                        if let Some(p) = a.intersect(c) {
                            any = true;
                            if !out.contains(&p) {
                                out.push(p);
                            }
                        }
                    }
                    if !any {
                        dropped.push(a.clone());
                    }
                }
                // A pattern another one kept already holds adds nothing.
                let all = out.clone();
                out.retain(|p| !all.iter().any(|q| q != p && p.within(q)));
                (Network::hosts(out), dropped)
            }
        }
    }

    /// Whether everything `self` allows, `limit` allows too (a grant within a session policy,
    /// a `--allow-net` flag within the ceiling).
    pub fn within(&self, limit: &Network) -> bool {
        match (self, limit) {
            (Network::Off, _) | (_, Network::All) => true,
            (Network::All, _) | (Network::Hosts(_), Network::Off) => false,
            (Network::Hosts(a), Network::Hosts(b)) => {
                a.iter().all(|p| b.iter().any(|q| p.within(q)))
            }
        }
    }

    /// The patterns of `self` that `limit` does not wholly allow.
    pub fn outside(&self, limit: &Network) -> Vec<HostPattern> {
        match self {
            Network::Hosts(a) => a
                .iter()
                .filter(|p| !Network::Hosts(vec![(*p).clone()]).within(limit))
                .cloned()
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// `true`, `false`, or the patterns separated by one blank.
impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Network::Off => f.write_str("false"),
            Network::All => f.write_str("true"),
            Network::Hosts(h) => {
                let words: Vec<String> = h.iter().map(ToString::to_string).collect();
                f.write_str(&words.join(" "))
            }
        }
    }
}

/// As JSON and TOML: `true`, `false`, or a list of patterns.
impl Serialize for Network {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::Off => s.serialize_bool(false),
            Network::All => s.serialize_bool(true),
            Network::Hosts(h) => {
                let words: Vec<String> = h.iter().map(ToString::to_string).collect();
                words.serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            List(Vec<String>),
        }
        match Raw::deserialize(d)? {
            Raw::Bool(b) => Ok(Network::from_bool(b)),
            Raw::List(l) => Network::from_patterns(l.iter().map(String::as_str))
                .map_err(serde::de::Error::custom),
        }
    }
}

/// One `[sandbox.resolve]` entry: a name and port the proxy connects to a fixed address,
/// which may then be private or loopback (the host's choice, on purpose).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pin {
    /// The name ([normalized](normalize_host)).
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// Where the proxy connects instead of resolving the name.
    pub addr: SocketAddr,
}

impl Pin {
    /// `"api.internal:443" = "10.0.0.5:443"`: both sides need a port; the key is a name, the
    /// value an address (`[::1]:443` for IPv6).
    pub fn parse(key: &str, value: &str) -> Result<Pin, PinError> {
        let shown = |text: &str| text.escape_debug().to_string();
        let (host, port) = key
            .rsplit_once(':')
            .ok_or_else(|| PinError::NoPort(shown(key)))?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| PinError::BadPort(shown(key)))?;
        let host = normalize_host(host)?;
        let addr = value
            .parse::<SocketAddr>()
            .map_err(|_| PinError::BadAddress(shown(value)))?;
        Ok(Pin { host, port, addr })
    }
}

/// Why a `[sandbox.resolve]` entry is refused; each names what was written (control
/// characters escaped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The key has no `:PORT`.
    #[error("`{0}`: write the name with its port (`name:443`)")]
    NoPort(String),
    /// The key's port is not a number from 1 to 65535.
    #[error("`{0}`: the port must be a number from 1 to 65535")]
    BadPort(String),
    /// The key's name is not a host name.
    #[error(transparent)]
    Host(#[from] PatternError),
    /// The value is not an address with a port.
    #[error("`{0}`: not an address with a port (`10.0.0.5:443`, `[fd00::5]:443`)")]
    BadAddress(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Network {
        Network::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn the_grammar() {
        assert_eq!(n("true"), Network::All);
        assert_eq!(n(" TRUE "), Network::All);
        assert_eq!(n("false"), Network::Off);
        assert_eq!(n(""), Network::Off);
        assert_eq!(
            n("API.GitHub.com. uploads.github.com:443 *.example.com").to_string(),
            "api.github.com uploads.github.com:443 *.example.com"
        );
        assert_eq!(n("a.com a.com").to_string(), "a.com");
        for (bad, why) in [
            ("10.0.0.1", "an IP address"),
            ("10.0.0.1:443", "an IP address"),
            ("[::1]:443", "an IP address"),
            ("::1", "an IP address"),
            ("fd00:ec2::254", "an IP address"),
            ("127.1", "all digits"),
            ("2130706433", "all digits"),
            ("*", "every host"),
            ("*.com", "too broad"),
            ("a.*.com", "first label"),
            ("*a.com", "first label"),
            ("a..com", "empty label"),
            (".a.com", "empty label"),
            ("-a.com", "starts or ends"),
            ("a.com:0", "port"),
            ("a.com:65536", "port"),
            ("a.com:", "port"),
            ("a.com:+1", "port"),
            ("a.com:http", "port"),
            ("a/b.com", "character"),
            ("exämple.com", "xn--"),
            ("a.com true", "stand alone"),
            ("user@a.com", "character"),
            ("yes", "single label"),
            ("localhost:8080", "single label"),
            ("tRuE", "single label"),
        ] {
            let e = Network::parse(bad).expect_err(bad);
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
        let long = format!("{}.com", "a".repeat(64));
        assert!(Network::parse(&long).is_err());
    }

    #[test]
    fn matching() {
        let g = n("api.github.com *.example.com:8443 x.org:80");
        for (host, port, want) in [
            ("api.github.com", 443, true),
            ("api.github.com", 80, true),
            ("api.github.com", 22, false),
            ("github.com", 443, false),
            ("evilapi.github.com", 443, false),
            ("a.example.com", 8443, true),
            ("a.b.example.com", 8443, true),
            ("example.com", 8443, false),
            ("a.example.com", 443, false),
            ("badexample.com", 8443, false),
            ("x.org", 80, true),
            ("x.org", 443, false),
        ] {
            assert_eq!(g.allows(host, port), want, "{host}:{port}");
        }
    }

    /// The intersection table: (asked, ceiling, grant, dropped).
    #[test]
    fn intersection_table() {
        for (asked, ceiling, want, dropped) in [
            ("false", "true", "false", ""),
            ("true", "false", "false", ""),
            ("true", "true", "true", ""),
            ("a.com", "false", "false", "a.com"),
            ("a.com", "true", "a.com", ""),
            ("true", "a.com b.com:22", "a.com b.com:22", ""),
            ("a.com", "a.com", "a.com", ""),
            ("a.com", "b.com", "false", "a.com"),
            ("a.com", "a.com:443", "a.com:443", ""),
            ("a.com:443", "a.com", "a.com:443", ""),
            ("a.com:22", "a.com", "false", "a.com:22"),
            ("a.com:22", "a.com:22", "a.com:22", ""),
            ("a.com:22", "a.com:23", "false", "a.com:22"),
            ("api.github.com", "*.github.com", "api.github.com", ""),
            (
                "*.github.com",
                "api.github.com:443",
                "api.github.com:443",
                "",
            ),
            ("*.github.com", "*.github.com", "*.github.com", ""),
            ("*.a.github.com", "*.github.com", "*.a.github.com", ""),
            ("*.github.com", "*.a.github.com", "*.a.github.com", ""),
            ("github.com", "*.github.com", "false", "github.com"),
            ("*.github.com", "github.com", "false", "*.github.com"),
            ("x.com y.com", "y.com z.com", "y.com", "x.com"),
            (
                "*.github.com",
                "api.github.com *.github.com",
                "*.github.com",
                "",
            ),
        ] {
            let (g, d) = n(asked).intersect(&n(ceiling));
            assert_eq!(g.to_string(), want, "{asked} ∩ {ceiling}");
            let d: Vec<String> = d.iter().map(ToString::to_string).collect();
            assert_eq!(d.join(" "), dropped, "{asked} ∩ {ceiling} dropped");
            // The grant never allows more than either side.
            assert!(
                g.within(&n(ceiling)) && g.within(&n(asked)),
                "{asked} ∩ {ceiling}"
            );
        }
    }

    #[test]
    fn within_and_union() {
        assert!(n("a.com:443").within(&n("a.com")));
        assert!(!n("a.com").within(&n("a.com:443")));
        assert!(n("x.a.com").within(&n("*.a.com")));
        assert!(!n("*.a.com").within(&n("x.a.com")));
        assert!(!n("true").within(&n("a.com")));
        assert!(n("false").within(&n("false")));
        assert!(!n("a.com").within(&n("false")));
        assert_eq!(
            n("a.com").union(&n("b.com a.com")).to_string(),
            "a.com b.com"
        );
        assert_eq!(n("a.com").union(&n("true")), Network::All);
        assert_eq!(n("false").union(&n("b.com")).to_string(), "b.com");
        let out: Vec<String> = n("a.com b.com:22")
            .outside(&n("*.x.com a.com"))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(out, ["b.com:22"]);
    }

    #[test]
    fn serde_forms() {
        let j = |s: &str| serde_json::from_str::<Network>(s);
        assert_eq!(j("true").unwrap(), Network::All);
        assert_eq!(j("false").unwrap(), Network::Off);
        assert_eq!(
            j(r#"["a.com", "b.com:22"]"#).unwrap().to_string(),
            "a.com b.com:22"
        );
        assert!(j(r#"["10.0.0.1"]"#).is_err());
        assert_eq!(serde_json::to_string(&n("a.com")).unwrap(), r#"["a.com"]"#);
        assert_eq!(serde_json::to_string(&Network::Off).unwrap(), "false");
    }

    #[test]
    fn pins() {
        let p = Pin::parse("API.internal:443", "10.0.0.5:8443").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("api.internal", 443));
        assert_eq!(p.addr, "10.0.0.5:8443".parse().unwrap());
        assert!(Pin::parse("api.internal", "10.0.0.5:443").is_err());
        assert!(Pin::parse("api.internal:443", "10.0.0.5").is_err());
        assert!(Pin::parse("10.0.0.1:443", "10.0.0.5:443").is_err());
        assert!(Pin::parse("a.com:443", "[fd00::5]:443").is_ok());
    }
}
