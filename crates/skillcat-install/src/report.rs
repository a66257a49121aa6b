//! What a plan, a report and `status` say, as data and as the sentences people read: a line per
//! action, the lockfile's change entry by entry, a status table and its JSON. Nothing here
//! prints; the caller decides where each line goes.

use serde::Serialize;

use crate::{Action, ActionKind, Entry, FileDrift, LeftOut, Plan, Report, Scope, SkillStatus};

/// `sha256:0123456789ab` (the first 12 hex digits), for lines people read.
pub fn short_digest(digest: &str) -> String {
    match digest.split_once(':') {
        Some((alg, hex)) => format!("{alg}:{}", &hex[..hex.len().min(12)]),
        None => digest.chars().take(12).collect(),
    }
}

impl Entry {
    /// The version pinned, or `-`.
    pub fn version_shown(&self) -> &str {
        self.version.as_deref().unwrap_or("-")
    }

    /// `signed by KEY`, or `unsigned`.
    pub fn signer_shown(&self) -> String {
        match &self.signer {
            Some(k) => format!("signed by {k}"),
            None => "unsigned".into(),
        }
    }

    /// The pin, shortened for lines people read.
    pub fn pin_short(&self) -> String {
        short_digest(&self.pin_shown())
    }
}

/// One line per action that changes something: what was done or, with `dry`, what would be;
/// then how many skills were already up to date.
pub fn action_lines(actions: &[Action], scope: &Scope, dry: bool) -> Vec<String> {
    let verb = |done: &'static str, planned: &'static str| if dry { planned } else { done };
    let mut lines = Vec::new();
    let mut unchanged = 0;
    for a in actions {
        let new = a.new.as_ref();
        let paths = a.paths.join(", ");
        let line = match a.kind {
            ActionKind::Unchanged => {
                unchanged += 1;
                continue;
            }
            ActionKind::Install => {
                let e = new.expect("an install has an entry");
                format!(
                    "{} {} {} {} ({}) → {paths}",
                    verb("installed", "would install"),
                    a.name,
                    e.version_shown(),
                    e.pin_short(),
                    e.signer_shown(),
                )
            }
            ActionKind::Replace
                if a.old.as_ref().map(Entry::pin_shown) == new.map(Entry::pin_shown) =>
            {
                let e = new.expect("a replacement has an entry");
                format!(
                    "{} {} {} {} in {paths}",
                    verb("restored", "would restore"),
                    a.name,
                    e.version_shown(),
                    e.pin_short(),
                )
            }
            ActionKind::Replace => {
                let e = new.expect("a replacement has an entry");
                let from = a
                    .old
                    .as_ref()
                    .map(|o| format!("{} {}", o.version_shown(), o.pin_short()))
                    .unwrap_or_default();
                format!(
                    "{} {} {from} → {} {} ({}) in {paths}",
                    verb("replaced", "would replace"),
                    a.name,
                    e.version_shown(),
                    e.pin_short(),
                    e.signer_shown(),
                )
            }
            ActionKind::Relink => format!("{} {} → {paths}", verb("linked", "would link"), a.name),
            ActionKind::Remove => {
                let verb = verb("removed", "would remove");
                let canonical = scope.shown(&scope.skills_dir().join(&a.name));
                if a.paths.is_empty() {
                    format!(
                        "{verb} {} (from the lockfile; none of its folders was there)",
                        a.name
                    )
                } else if !a.paths.contains(&canonical) {
                    // The canonical folder was deleted by hand: what is left goes.
                    format!("{verb} {} ({paths}; {canonical} was already gone)", a.name)
                } else {
                    format!("{verb} {} ({paths})", a.name)
                }
            }
        };
        lines.push(line);
    }
    if unchanged > 0 {
        let s = if unchanged == 1 { "" } else { "s" };
        lines.push(format!("{unchanged} skill{s} already up to date"));
    }
    lines
}

impl Report {
    /// What an applied plan did, a line each, and the lockfile written.
    pub fn lines(&self, scope: &Scope) -> Vec<String> {
        let mut lines = action_lines(&self.actions, scope, false);
        if self.lockfile_written {
            lines.push(format!("wrote {}", scope.shown(&scope.lockfile())));
        }
        lines
    }
}

/// What `update --dry-run` says of one skill: up to date, or old → new version, pin and
/// signer; `None` for a skill that is not being updated.
pub fn update_line(a: &Action) -> Option<String> {
    let (Some(old), Some(new)) = (&a.old, &a.new) else {
        return None;
    };
    if a.kind == ActionKind::Unchanged || old.pin_shown() == new.pin_shown() {
        return Some(format!(
            "{}: up to date ({} {})",
            a.name,
            old.version_shown(),
            old.pin_short()
        ));
    }
    let signer = match (&old.signer, &new.signer) {
        (Some(o), Some(n)) => format!("signer {o} → {n}"),
        (None, Some(n)) => format!("signer (unsigned) → {n}"),
        (Some(o), None) => format!("signer {o} → (unsigned)"),
        (None, None) => "unsigned".into(),
    };
    Some(format!(
        "{}: {} {} → {} {}, {signer}",
        a.name,
        old.version_shown(),
        old.pin_short(),
        new.version_shown(),
        new.pin_short()
    ))
}

/// What `update --dry-run` says: each skill's [`update_line`], and under each that changes
/// the folders it would replace.
pub fn update_lines(actions: &[Action]) -> Vec<String> {
    let mut lines = Vec::new();
    for a in actions {
        lines.extend(update_line(a));
        if a.kind != ActionKind::Unchanged && !a.paths.is_empty() {
            lines.push(format!("  would change {}", a.paths.join(", ")));
        }
    }
    lines
}

/// What `status --check` says when any skill differs from what the lockfile pins.
pub fn drift_summary(all: &[SkillStatus]) -> Option<String> {
    let n = all.iter().filter(|s| s.is_drift()).count();
    match n {
        0 => None,
        1 => Some("1 skill differs from what the lockfile pins".into()),
        n => Some(format!("{n} skills differ from what the lockfile pins")),
    }
}

impl Plan {
    /// How the lockfile would change, entry by entry: `+` added, `-` removed, `~` changed (old
    /// → new version and pin, or the fields that change), under a line naming the file.
    pub fn lockfile_change_lines(&self, scope: &Scope) -> Vec<String> {
        let file = scope.shown(&scope.lockfile());
        if !self.writes_lockfile() {
            return vec![format!("{file} would not change")];
        }
        let mut lines = vec![format!("{file} would change:")];
        for a in self.actions() {
            let (name, pin) = (&a.name, Entry::pin_short);
            lines.push(match (&a.old, &a.new) {
                (None, Some(n)) => format!("  + {name} {} {}", n.version_shown(), pin(n)),
                (Some(o), None) => format!("  - {name} {} {}", o.version_shown(), pin(o)),
                (Some(o), Some(n)) if o != n => {
                    if o.pin_shown() != n.pin_shown() || o.version != n.version {
                        let (ov, nv) = (o.version_shown(), n.version_shown());
                        format!("  ~ {name} {ov} {} → {nv} {}", pin(o), pin(n))
                    } else {
                        format!("  ~ {name} ({})", o.differences(n).join(", "))
                    }
                }
                _ => continue,
            });
        }
        if lines.len() == 1 {
            lines.push("  (the same entries, rewritten as skillcat writes the file)".into());
        }
        lines
    }
}

/// The columns of the status table, after a header row.
pub const STATUS_HEADER: [&str; 6] = ["NAME", "STATE", "VERSION", "DIGEST", "SOURCE", "SIGNER"];

/// What `add --format json` prints: each skill's action (done, or with `dry_run` planned)
/// and each skill left out as invalid with its faults.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddView<'a> {
    /// Whether nothing was changed (a dry run).
    pub dry_run: bool,
    /// Each skill of the source installed (or up to date).
    pub actions: Vec<ActionView<'a>>,
    /// Each skill left out ([`Plan::left_out`]).
    pub left_out: &'a [LeftOut],
}

/// One [`Action`] as JSON shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ActionView<'a> {
    /// The skill.
    pub name: &'a str,
    /// `install`, `replace`, `relink`, `unchanged` or `remove`.
    pub action: &'static str,
    /// The version pinned after it.
    pub version: Option<&'a str>,
    /// The pin after it ([`Entry::pin_shown`]).
    pub pinned: Option<String>,
    /// The folders it changes, as the lockfile shows them.
    pub paths: &'a [String],
}

impl<'a> AddView<'a> {
    /// The view of `actions` and `left_out` (a plan's, or an applied plan's [`Report`]).
    pub fn new(actions: &'a [Action], left_out: &'a [LeftOut], dry_run: bool) -> Self {
        let actions = actions
            .iter()
            .map(|a| ActionView {
                name: &a.name,
                action: match a.kind {
                    ActionKind::Install => "install",
                    ActionKind::Replace => "replace",
                    ActionKind::Relink => "relink",
                    ActionKind::Unchanged => "unchanged",
                    ActionKind::Remove => "remove",
                },
                version: a.new.as_ref().and_then(|e| e.version.as_deref()),
                pinned: a.new.as_ref().map(Entry::pin_shown),
                paths: &a.paths,
            })
            .collect();
        AddView {
            dry_run,
            actions,
            left_out,
        }
    }
}

/// A skill's `status` as JSON shows it (camelCase, the lockfile's own names).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusView<'a> {
    /// The skill.
    pub name: &'a str,
    /// [`SkillStatus::state`].
    pub state: &'static str,
    /// The version pinned.
    pub version: Option<&'a str>,
    /// The skill digest of what is installed now.
    pub digest: Option<&'a str>,
    /// The pin ([`Entry::pin_shown`]).
    pub pinned: Option<String>,
    /// Where it came from.
    pub source: Option<&'a str>,
    /// The kind of source.
    pub source_type: Option<&'a str>,
    /// The git commit pinned.
    pub commit: Option<&'a str>,
    /// The archive's sha256 pinned.
    pub archive_sha256: Option<&'a str>,
    /// The key that signed it.
    pub signer: Option<&'a str>,
    /// The agents' folders the lockfile records.
    pub targets: &'a [String],
    /// How its files differ from what was installed.
    pub drift: Option<&'a FileDrift>,
    /// [`SkillStatus::broken_targets`].
    pub broken_targets: &'a [String],
    /// [`SkillStatus::left_targets`].
    pub left_targets: &'a [String],
    /// [`SkillStatus::place`] (only when it is not `.agents/skills/NAME`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<&'a str>,
}

impl Serialize for FileDrift {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("FileDrift", 4)?;
        m.serialize_field("changed", &self.changed)?;
        m.serialize_field("added", &self.added)?;
        m.serialize_field("removed", &self.removed)?;
        m.serialize_field("unknown", &self.unknown)?;
        m.end()
    }
}

impl SkillStatus {
    /// One word for its state: `untracked`, `missing`, `modified`, `broken-link` or `ok`.
    pub fn state(&self) -> &'static str {
        if self.entry.is_none() {
            "untracked"
        } else if !self.present {
            "missing"
        } else if self.drift.is_some() {
            "modified"
        } else if !self.broken_targets.is_empty() {
            "broken-link"
        } else {
            "ok"
        }
    }

    /// Its JSON view.
    pub fn view(&self) -> StatusView<'_> {
        let e = self.entry.as_ref();
        StatusView {
            name: &self.name,
            state: self.state(),
            version: e.and_then(|e| e.version.as_deref()),
            digest: self.digest.as_deref(),
            pinned: e.map(Entry::pin_shown),
            source: e.map(|e| e.source.as_str()),
            source_type: e.map(|e| e.source_type.as_str()),
            commit: e.and_then(|e| e.commit.as_deref()),
            archive_sha256: e.and_then(|e| e.archive_sha256.as_deref()),
            signer: e.and_then(|e| e.signer.as_deref()),
            targets: e.map_or(&[], |e| &e.targets),
            drift: self.drift.as_ref(),
            broken_targets: &self.broken_targets,
            left_targets: &self.left_targets,
            place: self.place.as_deref(),
        }
    }

    /// Its row of the status table: the skill, its state, and what the lockfile pins.
    pub fn row(&self) -> [String; 6] {
        let state = self.state().to_string();
        let Some(e) = &self.entry else {
            return [
                self.name.clone(),
                state,
                "-".into(),
                self.digest.as_deref().map(short_digest).unwrap_or_default(),
                "(a folder skills-lock.json does not list)".into(),
                "-".into(),
            ];
        };
        let mut pin = String::new();
        if let Some(c) = &e.commit {
            pin = format!(" @ {}", &c[..c.len().min(12)]);
        } else if let Some(a) = &e.archive_sha256 {
            pin = format!(" ({})", short_digest(a));
        }
        [
            self.name.clone(),
            state,
            e.version_shown().to_string(),
            e.pin_short(),
            format!("{} {}{pin}", e.source_type, e.source),
            e.signer_shown(),
        ]
    }

    /// What is wrong with it, a line each (indented, to go under its row).
    pub fn details(&self, scope: &Scope) -> Vec<String> {
        let mut lines = Vec::new();
        let Some(e) = &self.entry else {
            return lines;
        };
        if !self.present {
            // Where it is restored: an agent's folder when its entry puts it there.
            let canonical = self
                .place
                .clone()
                .unwrap_or_else(|| scope.shown(&scope.skills_dir().join(&self.name)));
            if self.left_targets.is_empty() {
                lines.push(format!(
                    "  missing: the folder {canonical} is gone (`skillcat install` puts it back)"
                ));
            } else {
                let mut folders: Vec<String> = self
                    .left_targets
                    .iter()
                    .map(|t| {
                        std::path::Path::new(t)
                            .parent()
                            .map_or_else(|| t.clone(), |p| p.display().to_string())
                    })
                    .collect();
                folders.dedup();
                lines.push(format!(
                    "  missing: the folder {canonical} is gone; {} left in {} (`skillcat install` puts it back, `skillcat remove {}` removes what is left)",
                    if e.copy { "copies" } else { "links" },
                    folders.join(", "),
                    self.name
                ));
            }
            lines.extend(
                (self.broken_targets.iter())
                    .map(|t| format!("  not skillcat's: {t} (left as it is)")),
            );
            return lines;
        }
        if let Some(place) = &self.place {
            lines.push(format!(
                "  in {place}, not {} (where the `skills` CLI put it; checked there)",
                scope.shown(&scope.skills_dir().join(&self.name))
            ));
        }
        if let Some(d) = &self.drift {
            if d.unknown {
                lines.push(
                    "  files differ from the pinned hash (the lockfile lists no files)".into(),
                );
            }
            for (what, list) in [
                ("changed", &d.changed),
                ("added", &d.added),
                ("removed", &d.removed),
            ] {
                lines.extend(list.iter().map(|p| format!("  {what}: {p}")));
            }
        }
        lines.extend((self.broken_targets.iter()).map(|t| format!("  not linked: {t}")));
        lines
    }
}

/// The status table: a header row and every skill's row, the columns aligned, each row
/// followed by what is wrong with that skill.
pub fn status_table(all: &[SkillStatus], scope: &Scope) -> Vec<String> {
    let rows: Vec<[String; 6]> = all.iter().map(SkillStatus::row).collect();
    let mut widths = STATUS_HEADER.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            text.push_str(cell);
            if i + 1 != cells.len() {
                text.push_str(&" ".repeat(w - cell.chars().count() + 2));
            }
        }
        text
    };
    let mut lines = vec![line(&STATUS_HEADER)];
    for (s, row) in all.iter().zip(&rows) {
        lines.push(line(&row.each_ref().map(String::as_str)));
        lines.extend(s.details(scope));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(version: &str, digest: &str, signer: Option<&str>) -> Entry {
        Entry {
            version: Some(version.into()),
            digest: Some(digest.into()),
            signer: signer.map(Into::into),
            source: "skills/".into(),
            source_type: "local".into(),
            ..Entry::default()
        }
    }

    fn status(entry: Option<Entry>) -> SkillStatus {
        SkillStatus {
            name: "pdf".into(),
            entry,
            present: true,
            digest: Some(format!("sha256:{}", "ab".repeat(32))),
            drift: None,
            broken_targets: Vec::new(),
            left_targets: Vec::new(),
            place: None,
        }
    }

    #[test]
    fn digests_are_shortened_to_twelve_hex_digits() {
        assert_eq!(
            short_digest(&format!("sha256:{}", "0".repeat(64))),
            "sha256:000000000000"
        );
        assert_eq!(short_digest("abc"), "abc");
    }

    #[test]
    fn an_update_line_names_old_and_new_version_and_signer() {
        let a = Action {
            name: "pdf".into(),
            kind: ActionKind::Replace,
            old: Some(entry("1.0.0", "sha256:1111111111111111", Some("K1"))),
            new: Some(entry("1.1.0", "sha256:2222222222222222", None)),
            paths: Vec::new(),
        };
        assert_eq!(
            update_line(&a).as_deref(),
            Some(
                "pdf: 1.0.0 sha256:111111111111 → 1.1.0 sha256:222222222222, signer K1 → (unsigned)"
            )
        );
    }

    #[test]
    fn a_check_counts_the_skills_that_drift() {
        let ok = status(Some(entry("1.0.0", "sha256:1", None)));
        assert_eq!(drift_summary(std::slice::from_ref(&ok)), None);
        let two = [status(None), ok, status(None)];
        assert_eq!(
            drift_summary(&two).as_deref(),
            Some("2 skills differ from what the lockfile pins")
        );
    }

    #[test]
    fn status_says_each_state_and_its_json_view() {
        assert_eq!(status(None).state(), "untracked");
        let mut s = status(Some(entry("1.0.0", "sha256:1", None)));
        assert_eq!(s.state(), "ok");
        s.drift = Some(FileDrift {
            changed: vec!["SKILL.md".into()],
            ..FileDrift::default()
        });
        assert_eq!(s.state(), "modified");
        let json = serde_json::to_value(s.view()).unwrap();
        assert_eq!(json["state"], "modified");
        assert_eq!(json["sourceType"], "local");
        assert_eq!(json["drift"]["changed"][0], "SKILL.md");
        s.present = false;
        assert_eq!(s.state(), "missing");
    }

    #[test]
    fn the_table_aligns_its_columns() {
        let scope = Scope::find_project(&std::env::temp_dir(), crate::AgentEnv::default());
        let lines = status_table(&[status(Some(entry("1.0.0", "sha256:1", None)))], &scope);
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("NAME  STATE  VERSION  DIGEST    "),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("pdf   ok     1.0.0    sha256:1  "),
            "{lines:?}"
        );
    }
}
