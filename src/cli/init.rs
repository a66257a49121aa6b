//! `skillcat init NAME [--dir PARENT]`: [`skillcat::ops::init`], what it made said on stdout.

use std::io::Write;
use std::path::PathBuf;

use skillcat::ops::init::{FIRST_VERSION, InitError, new_skill};

use super::{CliResult, ExitStatus};

/// `init --help`: what each part of the folder is for.
pub const INIT_ABOUT: &str = "Make a new skill folder NAME (in the working directory, or in \
--dir PARENT), valid as written, to fill in:

  NAME/SKILL.md
      The skill: YAML frontmatter, then the instructions an agent follows once it loads the
      skill. `name` is NAME (lowercase letters, digits and single hyphens, at most 64
      characters, and the folder's name). `description` is a placeholder to replace: agents
      read only the name and description to decide whether to load the skill, so say what it
      does and when to use it, in the words a user would say. `metadata.version` (0.1.0) is the
      version `sign` and `publish` read; raise it for each release (a version, once published,
      cannot change).
  NAME/scripts/hello.sh
      An example tool. Every executable file directly in scripts/ is a tool `skillcat tools`
      offers and `skillcat run` runs confined (no network; it reads and writes only what it is
      granted); its description is its first comment line. Replace it with your own scripts, or
      delete it.
  NAME/references/REFERENCE.md
      Longer material the agent reads only when the instructions point to it, so the skill
      costs little until it is needed.

An existing folder NAME is refused unless it is empty; a NAME that breaks the naming rules is
refused with the rule, worded as `validate` words it.";

/// `init --help`, after the options: the example and what to run next.
pub const INIT_AFTER: &str = "Example: skillcat init log-triage

Then: skillcat validate log-triage · skillcat tools log-triage log-triage · skillcat run \
log-triage log-triage hello --args you · skillcat pack log-triage -o log-triage.tar.gz";

/// `skillcat init` arguments.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The skill's name, also the folder's: lowercase letters, digits and single hyphens.
    name: String,
    /// The folder to make it in (default: the working directory).
    #[arg(long, value_name = "PARENT")]
    dir: Option<PathBuf>,
}

/// `skillcat init NAME [--dir PARENT]`
pub fn init(a: InitArgs) -> CliResult {
    let parent = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let dir = new_skill(&parent, &a.name).map_err(|e| match e {
        InitError::BadName { name, faults } => {
            let shown = skillcat::prompt::escape_controls(&name).into_owned();
            let mut text = format!("{shown:?} cannot name a skill:");
            for f in &faults {
                text.push_str(&format!("\n  - {}", skillcat::prompt::escape_controls(f)));
            }
            super::CliError::Usage(text.into())
        }
        InitError::NoParent(p) => usage!(
            "--dir {}: no such folder (init makes the skill folder inside an existing one)",
            p.display()
        ),
        e @ InitError::NotEmpty(_) => usage!(
            "{e}: init makes a new skill in a new (or empty) folder; pick another NAME or --dir"
        ),
        e @ InitError::NotAFolder(_) => usage!("{e}; pick another NAME or --dir"),
        e @ InitError::Read { .. } => usage!("{e}"),
        e => failed!("{e}"),
    })?;
    let shown = dir.strip_prefix(".").unwrap_or(&dir).display().to_string();
    out!("Created skill {} in {shown}:", a.name);
    out!(
        "  {shown}/SKILL.md                  name, description (replace it), metadata.version {FIRST_VERSION}, instructions"
    );
    out!("  {shown}/scripts/hello.sh          an example tool (skillcat tools, skillcat run)");
    out!("  {shown}/references/REFERENCE.md   details the instructions point to");
    out!("Next: write the description and instructions, then");
    out!("  skillcat validate {shown}");
    out!("  skillcat tools {shown} {}", a.name);
    out!("  skillcat run {shown} {} hello --args you", a.name);
    out!("  skillcat pack {shown} -o {}.tar.gz", a.name);
    Ok(ExitStatus::Success)
}
