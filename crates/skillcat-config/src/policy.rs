//! The audit policy: what the commands that place or serve a skill do with one the audit finds
//! a high finding in. A configuration value, kept here so that the audit (which applies it)
//! reads the same parsed table as install, serve and the runtime.

use serde::{Deserialize, Serialize};

/// What the commands that place or serve a skill do with one the audit finds a high finding
/// in: `[install] audit` for `add`, `install` and `update`, the central registry's publish
/// policy. `mcp`'s `[runtime] audit` says whether its tools are withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Refuse it (the default), naming the findings.
    #[default]
    Refuse,
    /// Take it, saying what was found (install), or record the findings (publish).
    Warn,
}

impl Policy {
    /// `refuse` or `warn`.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Refuse => "refuse",
            Policy::Warn => "warn",
        }
    }

    /// The stricter of two policies: a project's configuration may ask more of an install
    /// than the user's, never less.
    pub fn stricter(self, other: Policy) -> Policy {
        if self == Policy::Refuse || other == Policy::Refuse {
            Policy::Refuse
        } else {
            Policy::Warn
        }
    }
}

/// An audit policy that is neither `refuse` nor `warn` (the text shown escaped, on one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit policy {0:?}: expected \"refuse\" or \"warn\"")]
pub struct PolicyError(String);

impl std::str::FromStr for Policy {
    type Err = PolicyError;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "refuse" => Ok(Policy::Refuse),
            "warn" => Ok(Policy::Warn),
            other => Err(PolicyError(other.chars().take(64).collect())),
        }
    }
}
