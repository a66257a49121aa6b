//! `skillcat init NAME [--dir PARENT]`: a new skill folder, valid as written, that a new author
//! fills in. Every part it writes is one the other commands read: `validate` accepts it, `tools`
//! offers its example script, `run` runs it confined, `pack`, `sign` and `publish` take it.

use std::io::Write;
use std::path::{Path, PathBuf};

use skillcat::document::{Map, ValidateOptions, Value, validate_frontmatter};

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

/// The version a new skill starts at.
const FIRST_VERSION: &str = "0.1.0";

/// `SKILL.md` of a new skill `name`.
fn skill_md(name: &str) -> String {
    format!(
        r#"---
name: {name}
description: "Replace this with what the skill does and when to use it, in the words a user would say (an agent reads only this line to decide whether to load the skill)."
metadata:
  version: "{FIRST_VERSION}"
---

# {name}

Write the instructions an agent follows once it loads this skill: the steps, in order, what
to check before each one, and what to hand back to the user.

## Scripts

`scripts/hello.sh` is an example tool. An agent calls it as a tool; from a shell, in the
folder that holds this skill's folder:

```sh
skillcat tools {name} {name}
skillcat run {name} {name} hello --args "you"
```

A script runs confined: no network, and it reads or writes only what it is granted (see
`skillcat run --help`). Replace it with your own scripts, or delete it.

## Reference

Details the agent needs only sometimes live in [the reference](references/REFERENCE.md);
say here when to read it.
"#
    )
}

/// The example script: a tool `tools` offers (executable, a `#!` line, a comment line that
/// describes it).
const HELLO_SH: &str = r#"#!/bin/sh
# Say hello to someone (an example tool: replace it with your own script).
#
# `skillcat run SKILL-DIR SKILL-NAME hello --args "you"` runs it confined; its arguments are
# split as a shell splits them, but no shell runs.
echo "Hello, ${1:-world}!"
"#;

/// `references/REFERENCE.md` of a new skill `name`.
fn reference_md(name: &str) -> String {
    format!(
        "# {name}: reference\n\nMaterial the agent reads only when SKILL.md sends it here: \
         tables, formats, long examples, edge cases. Keep SKILL.md short and link here.\n"
    )
}

/// The name's faults as `validate` words them, checked as the frontmatter `init` writes.
fn name_faults(name: &str) -> Vec<String> {
    let mut fm = Map::new();
    fm.insert("name".to_string(), Value::Text(name.to_string()));
    fm.insert("description".to_string(), Value::Text("x".to_string()));
    validate_frontmatter(&fm, Some(name), &ValidateOptions::default())
        .iter()
        .map(|f| f.message().to_string())
        .collect()
}

/// Whether `dir` is missing, or an empty directory; else why it is refused.
fn check_target(dir: &Path) -> Result<bool, super::CliError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(usage!(
                    "{} exists and is not empty: init makes a new skill in a new (or empty) \
                     folder; pick another NAME or --dir",
                    dir.display()
                ));
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) if dir.exists() && !dir.is_dir() => Err(usage!(
            "{} exists and is not a folder; pick another NAME or --dir",
            dir.display()
        )),
        Err(e) => Err(usage!("cannot read {}: {e}", dir.display())),
    }
}

/// Writes the skill's files into `dir` (which exists).
fn write_files(dir: &Path, name: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(dir.join("SKILL.md"), skill_md(name))?;
    std::fs::create_dir(dir.join("scripts"))?;
    let script = dir.join("scripts/hello.sh");
    std::fs::write(&script, HELLO_SH)?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    std::fs::create_dir(dir.join("references"))?;
    std::fs::write(dir.join("references/REFERENCE.md"), reference_md(name))?;
    Ok(())
}

/// `skillcat init NAME [--dir PARENT]`
pub fn init(a: InitArgs) -> CliResult {
    let faults = name_faults(&a.name);
    if !faults.is_empty() {
        let shown = skillcat::prompt::escape_controls(&a.name).into_owned();
        let mut text = format!("{shown:?} cannot name a skill:");
        for f in &faults {
            text.push_str(&format!("\n  - {}", skillcat::prompt::escape_controls(f)));
        }
        return Err(super::CliError::Usage(text.into()));
    }
    let parent = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !parent.is_dir() {
        return Err(usage!(
            "--dir {}: no such folder (init makes the skill folder inside an existing one)",
            parent.display()
        ));
    }
    let dir = parent.join(&a.name);
    let existed = check_target(&dir)?;
    if !existed && let Err(e) = std::fs::create_dir(&dir) {
        return Err(failed!("cannot make {}: {e}", dir.display()));
    }
    if let Err(e) = write_files(&dir, &a.name) {
        // Leave nothing half made: the folder as it was (missing, or empty).
        if existed {
            for part in ["SKILL.md", "scripts", "references"] {
                let p = dir.join(part);
                let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
            }
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return Err(failed!(
            "cannot write the skill into {}: {e}",
            dir.display()
        ));
    }
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
