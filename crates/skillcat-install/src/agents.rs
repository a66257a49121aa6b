//! The agents skillcat installs for, and where each looks for skills: the table, in one place.

use std::path::{Path, PathBuf};

use super::{InstallError, Scope};

/// Where an agent's user-scope folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UserDir {
    /// `$VAR/skills` when the variable is set (and not blank), else `~/DEFAULT/skills`.
    HomeVar(&'static str, &'static str),
    /// `~/DIR`.
    Home(&'static str),
    /// `$XDG_CONFIG_HOME/DIR`, else `~/.config/DIR`.
    Config(&'static str),
}

/// One agent: where it reads skills in a project and in the user's home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    /// Its id on the command line and in the lockfile (`claude-code`), as the `skills` CLI
    /// names it.
    pub id: &'static str,
    /// Its name for people.
    pub name: &'static str,
    /// Its folder of skills in a project, relative to the project's root.
    pub project_dir: &'static str,
    user: UserDir,
}

/// Every agent skillcat knows, in the order they are listed.
///
/// | id | project folder | user folder |
/// |---|---|---|
/// | `claude-code` | `.claude/skills` | `$CLAUDE_CONFIG_DIR/skills`, else `~/.claude/skills` |
/// | `codex` | `.agents/skills` | `$CODEX_HOME/skills`, else `~/.codex/skills` |
/// | `cursor` | `.agents/skills` | `~/.cursor/skills` |
/// | `gemini-cli` | `.agents/skills` | `~/.gemini/skills` |
/// | `github-copilot` | `.agents/skills` | `~/.copilot/skills` |
/// | `goose` | `.goose/skills` | `$XDG_CONFIG_HOME/goose/skills`, else `~/.config/goose/skills` |
/// | `opencode` | `.agents/skills` | `$XDG_CONFIG_HOME/opencode/skills`, else `~/.config/opencode/skills` |
pub const AGENTS: &[Agent] = &[
    Agent {
        id: "claude-code",
        name: "Claude Code",
        project_dir: ".claude/skills",
        user: UserDir::HomeVar("CLAUDE_CONFIG_DIR", ".claude"),
    },
    Agent {
        id: "codex",
        name: "Codex",
        project_dir: CANONICAL_DIR,
        user: UserDir::HomeVar("CODEX_HOME", ".codex"),
    },
    Agent {
        id: "cursor",
        name: "Cursor",
        project_dir: CANONICAL_DIR,
        user: UserDir::Home(".cursor/skills"),
    },
    Agent {
        id: "gemini-cli",
        name: "Gemini CLI",
        project_dir: CANONICAL_DIR,
        user: UserDir::Home(".gemini/skills"),
    },
    Agent {
        id: "github-copilot",
        name: "GitHub Copilot",
        project_dir: CANONICAL_DIR,
        user: UserDir::Home(".copilot/skills"),
    },
    Agent {
        id: "goose",
        name: "Goose",
        project_dir: ".goose/skills",
        user: UserDir::Config("goose/skills"),
    },
    Agent {
        id: "opencode",
        name: "OpenCode",
        project_dir: CANONICAL_DIR,
        user: UserDir::Config("opencode/skills"),
    },
];

/// Where the canonical copy of every skill lives, relative to the project's root (or the home
/// directory in user scope).
pub const CANONICAL_DIR: &str = ".agents/skills";

/// What the agents' folders depend on: the home directory and the variables that move them, as
/// the caller read them (blank or relative values left out; the `skillcat` facade's
/// `context::Env::agents` reads this process's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentEnv {
    /// The home directory.
    pub home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`.
    pub claude_config_dir: Option<PathBuf>,
    /// `CODEX_HOME`.
    pub codex_home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
}

impl AgentEnv {
    fn var(&self, name: &str) -> Option<&Path> {
        match name {
            "CLAUDE_CONFIG_DIR" => self.claude_config_dir.as_deref(),
            "CODEX_HOME" => self.codex_home.as_deref(),
            _ => None,
        }
    }
}

impl Agent {
    /// The agent's folder of skills in `scope` (`None`: user scope without a home directory).
    pub fn dir(&self, scope: &Scope) -> Option<PathBuf> {
        if !scope.is_user() {
            return Some(scope.root().join(self.project_dir));
        }
        self.user_dir(scope.env())
    }

    /// The agent's folder of skills in the user's home.
    pub fn user_dir(&self, env: &AgentEnv) -> Option<PathBuf> {
        let home = env.home.as_deref();
        match self.user {
            UserDir::HomeVar(var, default) => env
                .var(var)
                .map(Path::to_path_buf)
                .or_else(|| home.map(|h| h.join(default)))
                .map(|d| d.join("skills")),
            UserDir::Home(dir) => home.map(|h| h.join(dir)),
            UserDir::Config(dir) => env
                .xdg_config_home
                .clone()
                .or_else(|| home.map(|h| h.join(".config")))
                .map(|c| c.join(dir)),
        }
    }

    /// Whether the agent seems to be used here: its project folder's top directory exists
    /// (`.claude/`), or in user scope its folder's parent does (`~/.claude/`).
    pub fn detected(&self, scope: &Scope) -> bool {
        if !scope.is_user() {
            let top = self
                .project_dir
                .split('/')
                .next()
                .unwrap_or(self.project_dir);
            return top != ".agents" && scope.root().join(top).is_dir();
        }
        self.dir(scope)
            .and_then(|d| d.parent().map(Path::to_path_buf))
            .is_some_and(|p| p.is_dir())
    }
}

/// The agent with this id.
pub fn agent(id: &str) -> Option<&'static Agent> {
    AGENTS.iter().find(|a| a.id == id)
}

/// The agents a `--agent` value names: ids separated by commas, or `all`.
pub fn parse_agents(spec: &str) -> Result<Vec<&'static Agent>, InstallError> {
    if spec.trim() == "all" {
        return Ok(AGENTS.iter().collect());
    }
    let mut out: Vec<&'static Agent> = Vec::new();
    for id in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some(a) = agent(id) else {
            return Err(InstallError::Usage(format!(
                "unknown agent {id:?}; known agents: {}, or all",
                AGENTS.iter().map(|a| a.id).collect::<Vec<_>>().join(", ")
            )));
        };
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        return Err(InstallError::Usage(
            "--agent names no agent (give ids separated by commas, or all)".into(),
        ));
    }
    Ok(out)
}

/// Where a skill's one real copy is in `scope`: `.agents/skills/NAME`, unless `entry` puts it
/// in an agent's own folder. The `skills` CLI, asked for one agent with a folder of its own
/// (`skills add … -a claude-code`), copies the skill into that folder alone
/// (`.claude/skills/NAME`), makes no `.agents/skills/NAME`, and records no folder in
/// `skills-lock.json`: for such an entry (no `targets`) whose canonical folder is missing, the
/// first agent's folder holding the skill as a folder is its place; with that folder deleted
/// too, the first agent's folder of skills that exists while `.agents/skills` does not (the
/// folder the CLI made for it), so that `install` puts it back where the agent reads it. An
/// entry skillcat wrote names its place first in `targets`.
pub(crate) fn home(scope: &Scope, name: &str, entry: Option<&crate::Entry>) -> PathBuf {
    let canonical = scope.skills_dir().join(name);
    let Some(entry) = entry else {
        return canonical;
    };
    let mut agent_dirs = AGENTS
        .iter()
        .filter_map(|a| a.dir(scope))
        .map(|d| d.join(name))
        .filter(|p| *p != canonical);
    if let Some(first) = entry.targets.first() {
        return agent_dirs
            .find(|p| scope.shown(p) == *first)
            .unwrap_or(canonical);
    }
    if std::fs::symlink_metadata(&canonical).is_ok() {
        return canonical;
    }
    let agent_dirs: Vec<PathBuf> = agent_dirs.collect();
    if let Some(copy) = agent_dirs
        .iter()
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
    {
        return copy.clone();
    }
    // Only a folder the CLI made with no canonical one beside it (and no link to one) says
    // where the copy was.
    if std::fs::symlink_metadata(scope.skills_dir()).is_ok()
        || agent_dirs
            .iter()
            .any(|p| std::fs::symlink_metadata(p).is_ok())
    {
        return canonical;
    }
    agent_dirs
        .into_iter()
        .find(|p| p.parent().is_some_and(Path::is_dir))
        .unwrap_or(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_folders_follow_the_variables() {
        let mut env = AgentEnv {
            home: Some("/h".into()),
            ..AgentEnv::default()
        };
        let claude = agent("claude-code").unwrap();
        let codex = agent("codex").unwrap();
        let goose = agent("goose").unwrap();
        assert_eq!(
            claude.user_dir(&env).unwrap(),
            Path::new("/h/.claude/skills")
        );
        assert_eq!(codex.user_dir(&env).unwrap(), Path::new("/h/.codex/skills"));
        assert_eq!(
            goose.user_dir(&env).unwrap(),
            Path::new("/h/.config/goose/skills")
        );
        env.claude_config_dir = Some("/c".into());
        env.codex_home = Some("/x".into());
        env.xdg_config_home = Some("/cfg".into());
        assert_eq!(claude.user_dir(&env).unwrap(), Path::new("/c/skills"));
        assert_eq!(codex.user_dir(&env).unwrap(), Path::new("/x/skills"));
        assert_eq!(
            goose.user_dir(&env).unwrap(),
            Path::new("/cfg/goose/skills")
        );
    }

    #[test]
    fn agent_lists() {
        assert_eq!(parse_agents("all").unwrap().len(), AGENTS.len());
        let two = parse_agents("codex, claude-code,codex").unwrap();
        assert_eq!(
            two.iter().map(|a| a.id).collect::<Vec<_>>(),
            ["codex", "claude-code"]
        );
        assert!(
            parse_agents("nope")
                .unwrap_err()
                .to_string()
                .contains("claude-code")
        );
        assert!(parse_agents(",").is_err());
    }

    #[test]
    fn a_skill_is_at_home_where_its_entry_puts_it() {
        let tmp = tempfile::tempdir().unwrap();
        let scope = Scope::project(tmp.path(), AgentEnv::default());
        let canonical = scope.skills_dir().join("a");
        let claude = tmp.path().join(".claude/skills/a");
        let theirs = crate::Entry::default();
        // Nothing anywhere, or no entry: the canonical folder.
        assert_eq!(home(&scope, "a", Some(&theirs)), canonical);
        std::fs::create_dir_all(&claude).unwrap();
        assert_eq!(home(&scope, "a", None), canonical);
        // Another tool's entry (no targets), the canonical folder missing: the agent's copy.
        assert_eq!(home(&scope, "a", Some(&theirs)), claude);
        // A link there is not a copy of it.
        std::fs::remove_dir(&claude).unwrap();
        std::os::unix::fs::symlink(&canonical, &claude).unwrap();
        assert_eq!(home(&scope, "a", Some(&theirs)), canonical);
        // The copy deleted too: the agent's folder of skills, while no canonical one exists.
        std::fs::remove_file(&claude).unwrap();
        assert_eq!(home(&scope, "a", Some(&theirs)), claude);
        std::fs::create_dir_all(scope.skills_dir()).unwrap();
        assert_eq!(home(&scope, "a", Some(&theirs)), canonical);
        // skillcat's entry names its place first.
        let ours = crate::Entry {
            targets: vec![".claude/skills/a".into()],
            ..crate::Entry::default()
        };
        assert_eq!(home(&scope, "a", Some(&ours)), claude);
        let ours = crate::Entry {
            targets: vec![".agents/skills/a".into(), ".claude/skills/a".into()],
            ..crate::Entry::default()
        };
        assert_eq!(home(&scope, "a", Some(&ours)), canonical);
    }
}
