//! `skillcat init`: a new skill folder, valid as written, that a new author fills in. Every part
//! it writes is one the other commands read: `validate` accepts it, `tools` offers its example
//! script, `run` runs it confined, `pack`, `sign` and `publish` take it.

use std::path::{Path, PathBuf};

use crate::document::{
    Map, TEMPLATE_DESCRIPTION, TEMPLATE_SCRIPT, TEMPLATE_SCRIPT_PATH, ValidateOptions, Value,
    validate_frontmatter,
};

/// The version a new skill starts at.
pub const FIRST_VERSION: &str = "0.1.0";

/// Why no skill folder was made.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The name breaks the naming rules; `faults` word each broken rule as `validate` does.
    #[error("{name:?} cannot name a skill: {}", faults.join("; "))]
    BadName {
        /// The name asked for.
        name: String,
        /// Each rule it breaks.
        faults: Vec<String>,
    },
    /// The folder to make the skill in does not exist.
    #[error("{}: no such folder", .0.display())]
    NoParent(PathBuf),
    /// The skill's folder exists and holds something.
    #[error("{} exists and is not empty", .0.display())]
    NotEmpty(PathBuf),
    /// The skill's folder's name is taken by something else than a folder.
    #[error("{} exists and is not a folder", .0.display())]
    NotAFolder(PathBuf),
    /// The skill's folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The skill's folder could not be made.
    #[error("cannot make {}: {source}", path.display())]
    Make {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file of the skill could not be written (the folder is left as it was).
    #[error("cannot write the skill into {}: {source}", path.display())]
    Write {
        /// The skill's folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// `SKILL.md` of a new skill `name`. Its description and example script are the template
/// `validate` warns about and a central registry refuses until the author replaces them.
fn skill_md(name: &str) -> String {
    format!(
        r#"---
name: {name}
description: "{TEMPLATE_DESCRIPTION}"
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

/// Whether `dir` is missing (false), or an empty directory (true); else why it is refused.
fn check_target(dir: &Path) -> Result<bool, InitError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            Some(_) => Err(InitError::NotEmpty(dir.into())),
            None => Ok(true),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) if dir.exists() && !dir.is_dir() => Err(InitError::NotAFolder(dir.into())),
        Err(source) => Err(InitError::Read {
            path: dir.into(),
            source,
        }),
    }
}

/// Writes the skill's files into `dir` (which exists).
fn write_files(dir: &Path, name: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(dir.join("SKILL.md"), skill_md(name))?;
    std::fs::create_dir(dir.join("scripts"))?;
    let script = dir.join(TEMPLATE_SCRIPT_PATH);
    std::fs::write(&script, TEMPLATE_SCRIPT)?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    std::fs::create_dir(dir.join("references"))?;
    std::fs::write(dir.join("references/REFERENCE.md"), reference_md(name))?;
    Ok(())
}

/// Makes the skill `name` in the folder `parent/name` (missing, or empty): `SKILL.md`,
/// `scripts/hello.sh`, `references/REFERENCE.md`. Returns the skill's folder. On a failed
/// write, nothing is left half made: the folder is as it was.
pub fn new_skill(parent: &Path, name: &str) -> Result<PathBuf, InitError> {
    let faults = name_faults(name);
    if !faults.is_empty() {
        return Err(InitError::BadName {
            name: name.to_string(),
            faults,
        });
    }
    if !parent.is_dir() {
        return Err(InitError::NoParent(parent.into()));
    }
    let dir = parent.join(name);
    let existed = check_target(&dir)?;
    if !existed && let Err(source) = std::fs::create_dir(&dir) {
        return Err(InitError::Make { path: dir, source });
    }
    if let Err(source) = write_files(&dir, name) {
        if existed {
            for part in ["SKILL.md", "scripts", "references"] {
                let p = dir.join(part);
                let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
            }
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return Err(InitError::Write { path: dir, source });
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_skill_is_valid_and_its_script_executable() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = new_skill(tmp.path(), "log-triage").unwrap();
        assert_eq!(dir, tmp.path().join("log-triage"));
        let md = std::fs::read(dir.join("SKILL.md")).unwrap();
        let doc = crate::document::parse_frontmatter(&md).unwrap();
        let faults =
            validate_frontmatter(&doc.frontmatter, Some("log-triage"), &Default::default());
        assert!(faults.is_empty(), "{faults:?}");
        let text = String::from_utf8(md).unwrap();
        assert!(text.contains("\n# log-triage\n"), "{text}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("scripts/hello.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111);
        assert!(dir.join("references/REFERENCE.md").is_file());
        // What validate and a central registry recognise as the template is what init writes.
        let description = doc.frontmatter.get("description").and_then(Value::as_str);
        assert_eq!(description, Some(TEMPLATE_DESCRIPTION));
        let script = std::fs::read(dir.join("scripts/hello.sh")).unwrap();
        assert_eq!(script, TEMPLATE_SCRIPT.as_bytes());
    }

    #[test]
    fn a_bad_name_a_full_folder_and_a_missing_parent_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        match new_skill(tmp.path(), "Bad--Name") {
            Err(InitError::BadName { faults, .. }) => assert!(!faults.is_empty()),
            other => panic!("{other:?}"),
        }
        std::fs::create_dir(tmp.path().join("full")).unwrap();
        std::fs::write(tmp.path().join("full/x"), "").unwrap();
        assert!(matches!(
            new_skill(tmp.path(), "full"),
            Err(InitError::NotEmpty(_))
        ));
        std::fs::write(tmp.path().join("file"), "").unwrap();
        assert!(matches!(
            new_skill(tmp.path(), "file"),
            Err(InitError::NotAFolder(_))
        ));
        assert!(matches!(
            new_skill(&tmp.path().join("nowhere"), "x"),
            Err(InitError::NoParent(_))
        ));
        // An empty folder is taken.
        std::fs::create_dir(tmp.path().join("empty")).unwrap();
        assert!(new_skill(tmp.path(), "empty").is_ok());
    }
}
