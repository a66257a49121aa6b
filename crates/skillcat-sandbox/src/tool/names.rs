//! The one owner of tool names: how names are told apart ([`tool_name_key`]: ASCII case folded,
//! `-` read as `_`), the script tools' namespace ([`in_script_namespace`]), the host's reserved
//! names, and who owns each name a model can call ([`ToolNames`]: one owner per name; a name two
//! claims fold to is *contested* and offered by neither, whatever order they came in).
//!
//! ```text
//! a skill's tool names ──ToolNames::admit(owner, skill, names)──▶ all or nothing:
//!   a name given twice by the skill      → Refused::Repeated
//!   a name a host tool keeps (folded)    → Refused::Reserved
//!   otherwise each name claimed          → owned, or contested (remembered for good)
//! ```

use std::collections::{BTreeMap, BTreeSet};

/// The key tool names are told apart by: ASCII letters folded to lower case, `-` read as `_`.
/// Two names with one key are one name to a model (and to some providers), so they never
/// belong to two tools.
///
/// ```
/// use skillcat_sandbox::tool::names::tool_name_key;
/// assert_eq!(tool_name_key("Run-Foo_bar"), "run_foo_bar");
/// ```
pub fn tool_name_key(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// The prefix of script tools' names (`run_<skill>_<script>`), as [`tool_name_key`] reads it.
pub const SCRIPT_TOOL_PREFIX: &str = "run_";

/// Whether a name lies in the script tools' namespace: its key starts with `run_`. A guest or
/// module tool may not take such a name (it could stand in for a skill's script tool).
///
/// ```
/// use skillcat_sandbox::tool::names::in_script_namespace;
/// assert!(in_script_namespace("RUN-victim-deploy"));
/// assert!(!in_script_namespace("runner"));
/// ```
pub fn in_script_namespace(name: &str) -> bool {
    tool_name_key(name).starts_with(SCRIPT_TOOL_PREFIX)
}

/// One skill's claim on a tool name: the skill (as named) and the name exactly as it offers it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolClaim {
    /// The skill.
    pub skill: String,
    /// The tool name as the skill spells it.
    pub name: String,
}

/// A tool name two or more claims fold to ([`tool_name_key`]): offered by none of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contested {
    /// The name's key (`run_foo_bar_baz`).
    pub name: String,
    /// Every claim made on it, sorted.
    pub claims: Vec<ToolClaim>,
}

/// What [`ToolNames::claim`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The name is this claim's (unless a later claim contests it).
    Owned,
    /// The name is contested: offered by no one, now or later. Every claim on it, this one
    /// included, sorted.
    Contested(Vec<ToolClaim>),
    /// The host keeps the name for its own tool ([`ToolNames::reserve`]): nothing is claimed.
    Reserved,
}

/// Why [`ToolNames::admit`] took none of a skill's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The skill offers two tools of this name (spelt the same).
    Repeated {
        /// The name.
        tool: String,
    },
    /// The name is one of the host's own ([`tool_name_key`] reads them alike).
    Reserved {
        /// The name as the skill spells it.
        tool: String,
    },
}

/// Who owns each tool name a model can call: **one owner per name**.
///
/// Names are told apart by [`tool_name_key`]. A claim on a name that another claim holds (another
/// skill's, or the same skill's under another spelling) makes it *contested*: from then on no
/// claim owns it — not the first, not the last — so the order claims arrive in cannot decide
/// who is offered under it. The registry remembers a contested name for its whole life, even
/// after the claims are released. A claim that repeats one held (the same owner, the same
/// spelling) changes nothing. The host's reserved names are never claimed.
///
/// ```
/// use skillcat_sandbox::tool::names::{Claimed, ToolNames};
/// let mut r = ToolNames::new();
/// assert_eq!(r.claim("foo", "foo", "run_foo_bar_baz"), Claimed::Owned);
/// assert_eq!(r.owner("run_foo_bar_baz"), Some("foo"));
/// assert!(matches!(r.claim("foo-bar", "foo-bar", "run_foo_bar_baz"), Claimed::Contested(_)));
/// assert_eq!(r.owner("run_foo_bar_baz"), None);
/// r.release("foo-bar");
/// assert_eq!(r.owner("run_foo_bar_baz"), None, "remembered");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolNames {
    /// Keys of the host's own tools.
    reserved: BTreeSet<String>,
    /// Key → the live claims on it, with their owners (an owner is a lookup key of a skill).
    live: BTreeMap<String, Vec<(String, ToolClaim)>>,
    /// Key → every claim ever made on it once contested.
    contested: BTreeMap<String, BTreeSet<ToolClaim>>,
}

impl ToolNames {
    /// No names taken.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names kept for the host's own tools, none claimed yet.
    pub fn with_reserved<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut out = Self::new();
        for name in names {
            out.reserve(name);
        }
        out
    }

    /// Takes a name (as [`tool_name_key`] reads it) for the host's own tools; `false` when it is
    /// already taken.
    pub fn reserve(&mut self, name: &str) -> bool {
        let key = tool_name_key(name);
        if self.live.contains_key(&key) || self.contested.contains_key(&key) {
            return false;
        }
        self.reserved.insert(key)
    }

    /// Whether a name (as [`tool_name_key`] reads it) is one of the host's.
    pub fn is_reserved(&self, name: &str) -> bool {
        self.reserved.contains(&tool_name_key(name))
    }

    /// Admits a skill's tool names, all or nothing: refused, with nothing claimed, when the
    /// skill gives a name twice or one of them is the host's ([`Refused`], checked in the
    /// order given). Otherwise every name is [claimed](Self::claim) for `owner` (the skill's
    /// lookup key; `skill` is its name as shown), and the names that came out contested are
    /// returned, each with every claim on it: those are offered by no one.
    pub fn admit<'a>(
        &mut self,
        owner: &str,
        skill: &str,
        names: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Result<Vec<(String, Vec<ToolClaim>)>, Refused> {
        let mut fresh = BTreeSet::new();
        for name in names.clone() {
            if !fresh.insert(name) {
                return Err(Refused::Repeated {
                    tool: name.to_string(),
                });
            }
            if self.is_reserved(name) {
                return Err(Refused::Reserved {
                    tool: name.to_string(),
                });
            }
        }
        let mut contested = Vec::new();
        for name in names {
            if let Claimed::Contested(claims) = self.claim(owner, skill, name) {
                contested.push((name.to_string(), claims));
            }
        }
        Ok(contested)
    }

    /// Claims `name` for `owner` (a skill's lookup key; `skill` is its name as shown).
    pub fn claim(&mut self, owner: &str, skill: &str, name: &str) -> Claimed {
        let key = tool_name_key(name);
        if self.reserved.contains(&key) {
            return Claimed::Reserved;
        }
        let claim = ToolClaim {
            skill: skill.to_string(),
            name: name.to_string(),
        };
        let live = self.live.entry(key.clone()).or_default();
        if !live.iter().any(|(o, c)| o == owner && c.name == name) {
            live.push((owner.to_string(), claim.clone()));
        }
        let rival = live.iter().any(|(o, c)| o != owner || c.name != name);
        if rival || self.contested.contains_key(&key) {
            let all = self.contested.entry(key).or_default();
            all.extend(live.iter().map(|(_, c)| c.clone()));
            return Claimed::Contested(all.iter().cloned().collect());
        }
        Claimed::Owned
    }

    /// Gives back every claim of `owner` (its skill is unloaded). Contested names stay
    /// contested.
    pub fn release(&mut self, owner: &str) {
        self.live.retain(|_, claims| {
            claims.retain(|(o, _)| o != owner);
            !claims.is_empty()
        });
    }

    /// The owner of `name`, spelt exactly as its one live claim spells it, when the name is not
    /// contested.
    pub fn owner(&self, name: &str) -> Option<&str> {
        let key = tool_name_key(name);
        if self.contested.contains_key(&key) || self.reserved.contains(&key) {
            return None;
        }
        match self.live.get(&key).map(Vec::as_slice) {
            Some([(owner, claim)]) if claim.name == name => Some(owner),
            _ => None,
        }
    }

    /// The claims on `name` when it is contested.
    pub fn contested_claims(&self, name: &str) -> Option<Vec<ToolClaim>> {
        self.contested
            .get(&tool_name_key(name))
            .map(|c| c.iter().cloned().collect())
    }

    /// Every contested name, by key.
    pub fn contested(&self) -> Vec<Contested> {
        self.contested
            .iter()
            .map(|(name, claims)| Contested {
                name: name.clone(),
                claims: claims.iter().cloned().collect(),
            })
            .collect()
    }

    /// The names owned now (each spelt as its owner spells it), sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .live
            .values()
            .filter_map(|claims| match claims.as_slice() {
                [(_, claim)] => Some(claim.name.clone()),
                _ => None,
            })
            .filter(|n| !self.contested.contains_key(&tool_name_key(n)))
            .collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Step 17's red-team case: `foo/scripts/bar-baz.sh`, `foo-bar/scripts/baz.sh` and a
    /// third spelling all fold to `run_foo_bar_baz`; whatever order they come in, none owns it
    /// and each skill keeps its own other tool.
    #[test]
    fn one_owner_per_name_whatever_the_order() {
        let claims = [
            ("foo", "run_foo_bar_baz"),
            ("foo-bar", "run_foo_bar_baz"),
            ("foo-bar-baz", "RUN_foo-bar-baz"),
        ];
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
            let mut r = ToolNames::new();
            for &i in &order {
                let (skill, name) = claims[i];
                r.claim(skill, skill, name);
                r.claim(skill, skill, &format!("{skill}_own"));
            }
            assert_eq!(r.owner("run_foo_bar_baz"), None, "{order:?}");
            assert_eq!(r.contested().len(), 1, "{order:?}");
            assert_eq!(r.contested()[0].claims.len(), 3, "{order:?}");
            assert_eq!(r.names().len(), 3, "each skill's own tool stays: {order:?}");
        }
        // Two spellings of one skill contest each other too.
        let mut r = ToolNames::new();
        assert_eq!(r.claim("a", "a", "Deploy"), Claimed::Owned);
        assert_eq!(
            r.claim("a", "a", "Deploy"),
            Claimed::Owned,
            "a repeat is no rival"
        );
        assert!(matches!(r.claim("a", "a", "deploy"), Claimed::Contested(c) if c.len() == 2));
        assert!(r.names().is_empty());
        // Released, still remembered.
        r.release("a");
        assert!(matches!(r.claim("b", "b", "DEPLOY"), Claimed::Contested(c) if c.len() == 3));
        assert_eq!(r.owner("DEPLOY"), None);
        // The owner answers only to its own spelling.
        let mut r = ToolNames::new();
        r.claim("a", "a", "Lookup");
        assert_eq!(r.owner("Lookup"), Some("a"));
        assert_eq!(r.owner("lookup"), None);
        assert!(in_script_namespace("Run-x") && !in_script_namespace("rung"));
    }

    /// A name the host uses is never a skill's, in any case or `-`/`_` spelling, and a skill
    /// that offers one gets none of its names.
    #[test]
    fn reserved_names_are_refused_whole() {
        let mut r = ToolNames::with_reserved(["run_host_tool"]);
        assert!(r.is_reserved("RUN-host-tool"));
        assert_eq!(
            r.admit("host", "host", ["run_host_ok", "RUN-host-tool"]),
            Err(Refused::Reserved {
                tool: "RUN-host-tool".into()
            })
        );
        assert!(r.names().is_empty(), "all or nothing");
        assert_eq!(r.claim("x", "x", "run_host_tool"), Claimed::Reserved);
        assert_eq!(r.owner("run_host_tool"), None);
        assert!(!r.reserve("Run_Host_Tool"), "reserved once");
        // A name claimed already cannot be reserved after the fact.
        r.claim("x", "x", "lookup");
        assert!(!r.reserve("LOOKUP"));
    }

    #[test]
    fn a_skill_gives_a_name_once_and_its_contests_are_reported() {
        let mut r = ToolNames::new();
        assert_eq!(
            r.admit("a", "a", ["deploy", "check", "deploy"]),
            Err(Refused::Repeated {
                tool: "deploy".into()
            })
        );
        assert!(r.names().is_empty(), "all or nothing");
        assert_eq!(r.admit("a", "a", ["deploy", "check"]), Ok(vec![]));
        let contested = r.admit("b-c", "b-c", ["Deploy", "mine"]).unwrap();
        assert_eq!(contested.len(), 1);
        assert_eq!(contested[0].0, "Deploy");
        assert_eq!(
            contested[0].1,
            [
                ToolClaim {
                    skill: "a".into(),
                    name: "deploy".into()
                },
                ToolClaim {
                    skill: "b-c".into(),
                    name: "Deploy".into()
                },
            ]
        );
        assert_eq!(r.names(), ["check", "mine"]);
        assert_eq!(r.owner("deploy"), None);
    }
}
