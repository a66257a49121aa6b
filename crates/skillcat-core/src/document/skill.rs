//! The [`Skill`] value: one parsed skill and the three tiers an agent reads.

use super::{
    Declarations, Document, Fault, FaultKind, Map, SIDECAR_PATH, ValidateOptions, Value,
    declarations, network_declaration, normalize_name, parse_sidecar, validate_frontmatter,
};
use crate::path::{BadReference, FileEntry, RelPath, resolve_reference};

/// One skill read from a source: its frontmatter, body and, when it was read, its file list.
///
/// Tier 1 is [`summary`](Skill::summary) (name, description, location), tier 2 is
/// [`body`](Skill::body), tier 3 is [`resolve`](Skill::resolve) for files the body names.
///
/// Discovery reads the file list only when asked ([`Detail::Files`](crate::source::Detail),
/// what [`discover`](crate::source::discover) and the default catalog do): validating, listing
/// and prompting need the document alone, and listing every file of every skill was most of
/// their system calls. A skill read without it answers [`files`](Skill::files) with nothing and
/// [`has_files`](Skill::has_files) with `false`; its source lists the files on demand
/// ([`Source::files`](crate::source::Source::files)). In the same way, a skill read for its
/// frontmatter alone ([`Detail::Frontmatter`](crate::source::Detail)) has an empty
/// [`body`](Skill::body) and answers [`has_body`](Skill::has_body) with `false`.
#[derive(Debug, Clone)]
pub struct Skill {
    root: String,
    location: String,
    dir_name: Option<String>,
    doc: Document,
    files: Option<Vec<FileEntry>>,
    has_body: bool,
    /// The sidecar `agents/skillcat.yaml`, when it was read: its keys, or why it is refused.
    sidecar: Option<Result<Map, Fault>>,
}

impl Skill {
    /// Builds a skill from what a source gave: its root, the location of its document, the parsed
    /// document and its file list. `dir_name` is the name of the skill's directory, when it has
    /// one, for the name check.
    pub fn new(
        root: String,
        location: String,
        dir_name: Option<String>,
        doc: Document,
        files: Vec<FileEntry>,
    ) -> Self {
        Skill {
            files: Some(files),
            ..Skill::without_files(root, location, dir_name, doc)
        }
    }

    /// Builds a skill whose file list was not read (see [`Skill::new`] for the rest).
    pub fn without_files(
        root: String,
        location: String,
        dir_name: Option<String>,
        doc: Document,
    ) -> Self {
        Skill {
            root,
            location,
            dir_name,
            doc,
            files: None,
            has_body: true,
            sidecar: None,
        }
    }

    /// Builds a skill from its frontmatter alone ([`parse_frontmatter`](super::parse_frontmatter)):
    /// no body, no file list (see [`Skill::new`] for the rest).
    pub fn without_body(
        root: String,
        location: String,
        dir_name: Option<String>,
        doc: Document,
    ) -> Self {
        Skill {
            has_body: false,
            ..Skill::without_files(root, location, dir_name, doc)
        }
    }

    /// The root this skill was listed under in its source (`""` for a source that is one skill).
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Where the document is, for people and for the prompt block (an absolute path for a
    /// directory source).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The name of the skill's directory, when it has one.
    pub fn dir_name(&self) -> Option<&str> {
        self.dir_name.as_deref()
    }

    /// The `name` field, trimmed, when it is text.
    pub fn raw_name(&self) -> Option<&str> {
        self.text("name").map(str::trim).filter(|s| !s.is_empty())
    }

    /// The name as the catalog knows it: trimmed and NFKC-normalised; when the frontmatter has no
    /// usable name, the directory's name.
    pub fn name(&self) -> String {
        match self.raw_name() {
            Some(n) => normalize_name(n),
            None => self.dir_name.clone().unwrap_or_default(),
        }
    }

    /// The `description`, trimmed (empty when missing or not text).
    pub fn description(&self) -> &str {
        self.text("description").map(str::trim).unwrap_or("")
    }

    /// The Markdown body (tier 2), trimmed; empty when it was not read (see
    /// [`has_body`](Skill::has_body)).
    pub fn body(&self) -> &str {
        &self.doc.body
    }

    /// Whether the body was read with the skill ([`body`](Skill::body) is the whole body).
    pub fn has_body(&self) -> bool {
        self.has_body
    }

    /// The whole frontmatter.
    pub fn frontmatter(&self) -> &Map {
        &self.doc.frontmatter
    }

    /// Every regular file of the skill, sorted by path, when its file list was read (empty
    /// otherwise: see [`has_files`](Skill::has_files)).
    pub fn files(&self) -> &[FileEntry] {
        self.files.as_deref().unwrap_or(&[])
    }

    /// Whether the file list was read with the skill ([`files`](Skill::files) is the whole list).
    pub fn has_files(&self) -> bool {
        self.files.is_some()
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.doc.frontmatter.get(key).and_then(Value::as_str)
    }

    /// The `license` field, when it is text.
    pub fn license(&self) -> Option<&str> {
        self.text("license")
    }

    /// The `compatibility` field, when it is text.
    pub fn compatibility(&self) -> Option<&str> {
        self.text("compatibility")
    }

    /// The `metadata` map's text entries (other values are skipped; the whole frontmatter stays
    /// available from [`frontmatter`](Skill::frontmatter)).
    pub fn metadata(&self) -> Vec<(&str, &str)> {
        match self.doc.frontmatter.get("metadata") {
            Some(Value::Map(m)) => m
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k, v)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `metadata.version`, when present and text.
    pub fn version(&self) -> Option<&str> {
        self.metadata()
            .into_iter()
            .find(|(k, _)| *k == "version")
            .map(|(_, v)| v.trim())
    }

    /// The `allowed-tools` entries: a list's items, or a string split on blanks outside
    /// parentheses (so `Bash(git add *) Read` is two tools).
    pub fn allowed_tools(&self) -> Vec<String> {
        match self.doc.frontmatter.get("allowed-tools") {
            Some(Value::Text(s)) => split_tools(s),
            Some(Value::List(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// One line for a catalog: `name: description (location)`, whitespace collapsed.
    pub fn summary(&self) -> String {
        let description = self
            .description()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        format!("{}: {} ({})", self.name(), description, self.location)
    }

    /// Keeps the bytes of the skill's sidecar `agents/skillcat.yaml`
    /// ([`parse_sidecar`](super::parse_sidecar)): its declarations join the frontmatter's
    /// ([`declarations`](Skill::declarations)), and a sidecar that is not one is a fault of
    /// [`validate`](Skill::validate). Discovery does this for every skill whose file list
    /// holds one.
    pub fn attach_sidecar(&mut self, bytes: &[u8]) {
        self.sidecar = Some(parse_sidecar(bytes));
    }

    /// Records that the skill's sidecar exists but could not be read: a fault of
    /// [`validate`](Skill::validate) and of [`declarations`](Skill::declarations).
    pub fn attach_sidecar_error(&mut self, why: impl std::fmt::Display) {
        self.sidecar = Some(Err(Fault::new(
            FaultKind::SidecarInvalid,
            format!("{SIDECAR_PATH}: cannot be read: {why}"),
        )));
    }

    /// Whether a sidecar was attached ([`attach_sidecar`](Skill::attach_sidecar)).
    pub fn has_sidecar(&self) -> bool {
        self.sidecar.is_some()
    }

    /// What the skill declares for its scripts — `scripts:` and the capability keys — from its
    /// sidecar and its frontmatter together ([`declarations`](super::declarations)); the
    /// sidecar's fault when it is not one, or a key declared in both places. The one reader of
    /// declarations: tools, runs, grants, the audit and the web pages all read through it.
    pub fn declarations(&self) -> Result<Declarations<'_>, Fault> {
        match &self.sidecar {
            None => declarations(&self.doc.frontmatter, None),
            Some(Ok(side)) => declarations(&self.doc.frontmatter, Some(side)),
            Some(Err(fault)) => Err(fault.clone()),
        }
    }

    /// Every validation fault of this skill, in the reference order, then skillcat's own about
    /// its declarations: a sidecar that is not one, a key declared twice, and — when the file
    /// list was read — each declared script the skill does not hold.
    pub fn validate(&self, opts: &ValidateOptions) -> Vec<Fault> {
        let mut faults =
            validate_frontmatter(&self.doc.frontmatter, self.dir_name.as_deref(), opts);
        match self.declarations() {
            Err(fault) => faults.push(fault),
            Ok(d) if matches!(&self.sidecar, Some(Ok(side)) if side.contains_key("network")) => {
                // The frontmatter's own was checked above; the sidecar's is checked here.
                if let Some(Err(e)) = network_declaration(d.frontmatter()) {
                    faults.push(Fault::new(
                        FaultKind::NetworkInvalid,
                        format!("{SIDECAR_PATH}: network: {e}"),
                    ));
                }
                self.missing_scripts(&d, &mut faults);
            }
            Ok(d) => self.missing_scripts(&d, &mut faults),
        }
        faults
    }

    /// A fault for each script the declarations name that the skill does not hold, when its
    /// file list was read.
    fn missing_scripts(&self, d: &Declarations<'_>, faults: &mut Vec<Fault>) {
        if self.has_files() {
            for (name, path) in d.script_paths() {
                // A path that breaks the path rules is the script reader's refusal to say.
                let Ok(rel) = resolve_reference(&path) else {
                    continue;
                };
                if !self.files().iter().any(|f| f.path == rel.as_str()) {
                    let from = match &self.sidecar {
                        Some(Ok(side)) if side.contains_key("scripts") => SIDECAR_PATH,
                        _ => "SKILL.md",
                    };
                    faults.push(Fault::new(
                        FaultKind::DeclaredScriptMissing,
                        format!(
                            "Declared script '{name}' ({from}): {path} is not a file of the skill"
                        ),
                    ));
                }
            }
        }
    }

    /// The properties the reference's `read-properties` prints, as JSON: `name`, `description`,
    /// then `license`, `compatibility`, `allowed-tools`, `metadata` when present and non-empty.
    /// The first missing/empty `name` or `description` is the error, as in the reference.
    pub fn properties(&self) -> Result<serde_json::Value, Fault> {
        let fm = &self.doc.frontmatter;
        let name = match fm.get("name") {
            None => {
                return Err(Fault::new(
                    FaultKind::MissingName,
                    "Missing required field in frontmatter: name",
                ));
            }
            Some(Value::Text(s)) if !s.trim().is_empty() => s.trim(),
            Some(_) => {
                return Err(Fault::new(
                    FaultKind::NameEmpty,
                    "Field 'name' must be a non-empty string",
                ));
            }
        };
        let description = match fm.get("description") {
            None => {
                return Err(Fault::new(
                    FaultKind::MissingDescription,
                    "Missing required field in frontmatter: description",
                ));
            }
            Some(Value::Text(s)) if !s.trim().is_empty() => s.trim(),
            Some(_) => {
                return Err(Fault::new(
                    FaultKind::DescriptionEmpty,
                    "Field 'description' must be a non-empty string",
                ));
            }
        };
        let mut out = serde_json::Map::new();
        out.insert("name".into(), name.into());
        out.insert("description".into(), description.into());
        // Present but empty is kept as "" (the reference leaves out only what is absent).
        for key in ["license", "compatibility", "allowed-tools"] {
            if let Some(v) = fm.get(key) {
                out.insert(key.into(), v.to_json());
            }
        }
        match fm.get("metadata") {
            Some(Value::Map(m)) => {
                let texts: serde_json::Map<String, serde_json::Value> = m
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.to_string(), s.into())))
                    .collect();
                if !texts.is_empty() {
                    out.insert("metadata".into(), texts.into());
                }
            }
            Some(Value::Text(s)) if s.is_empty() => {}
            Some(v) => {
                out.insert("metadata".into(), v.to_json());
            }
            None => {}
        }
        Ok(serde_json::Value::Object(out))
    }

    /// Resolves a reference from the body (tier 3) to a file of the skill
    /// ([`path::resolve_reference`](crate::path::resolve_reference)): URLs and other schemes,
    /// absolute paths, backslashes and `..` that climbs out are refused with the reason; `./`
    /// and inner `..` are normalised; a `#fragment` is dropped.
    pub fn resolve(&self, reference: &str) -> Result<RelPath, BadReference> {
        resolve_reference(reference)
    }
}

fn split_tools(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill_with(front: &str, files: &[&str]) -> Skill {
        let doc = crate::document::parse_document(
            format!("---\nname: s\ndescription: d\n{front}---\n").as_bytes(),
        )
        .unwrap();
        let files = files
            .iter()
            .map(|p| FileEntry {
                path: p.to_string(),
                size: 1,
                executable: true,
                private: false,
            })
            .collect();
        Skill::new(
            String::new(),
            "s/SKILL.md".into(),
            Some("s".into()),
            doc,
            files,
        )
    }

    #[test]
    fn declarations_come_from_the_sidecar_and_are_validated() {
        let mut s = skill_with("", &["SKILL.md", "agents/skillcat.yaml", "scripts/a.sh"]);
        assert!(s.declarations().unwrap().scripts().is_none());
        s.attach_sidecar(b"scripts:\n  - name: a\n    path: ./scripts/a.sh\n  - name: b\n    path: scripts/b.sh\n");
        assert!(s.has_sidecar());
        assert!(s.declarations().unwrap().scripts().is_some());
        let f = s.validate(&ValidateOptions::default());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind().as_str(), "declared-script-missing");
        assert_eq!(
            f[0].message(),
            "Declared script 'b' (agents/skillcat.yaml): scripts/b.sh is not a file of the skill"
        );
        // A sidecar that is not one is a fault of validation and of the declarations alike.
        s.attach_sidecar(b"shell: yes\n");
        assert_eq!(
            s.declarations().unwrap_err().kind(),
            FaultKind::SidecarInvalid
        );
        assert_eq!(
            s.validate(&ValidateOptions::default())[0].kind(),
            FaultKind::SidecarInvalid
        );
        // The sidecar's network is checked as the frontmatter's is.
        s.attach_sidecar(b"network: 10.0.0.1\n");
        assert_eq!(
            s.validate(&ValidateOptions::default())[0].kind(),
            FaultKind::NetworkInvalid
        );
        // The frontmatter form still reads, and its missing script is named from SKILL.md.
        let s = skill_with("scripts:\n  - name: c\n    path: c.sh\n", &["SKILL.md"]);
        let f = s.validate(&ValidateOptions::default().allow_field("scripts"));
        assert!(f[0].message().contains("(SKILL.md): c.sh"), "{f:?}");
    }

    #[test]
    fn tools_split_outside_parentheses() {
        assert_eq!(
            split_tools("Bash(git add *) Read  Write"),
            ["Bash(git add *)", "Read", "Write"]
        );
        assert!(split_tools("  ").is_empty());
    }
}
