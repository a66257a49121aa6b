//! Plans: what `add`, `install`, `update` and `remove` would change, resolved and verified
//! before anything is touched; and `status`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use skillcat_audit::{AuditOptions, Policy, Severity, summary_at};
use skillcat_core::source::no_such_skill;

use super::agents::{AGENTS, Agent, agent};
use super::lockfile::{Entry, Lockfile, computed_hash};
use super::place::{self, Change, NewItem, ScopeLock};
use super::spec::{self, LockSpec, SourceKind, SourceSpec};
use super::{InstallError, Scope, check_name};
use crate::digest::{Manifest, sha256, to_hex};
use crate::document::{Skill, ValidateOptions, name_key};
use crate::path::join_path;
use crate::sign::{self, Keyring};
use crate::source::{self, Detail, OpenOptions, Source, SourceExt, SourceId};

/// How a plan is made.
#[derive(Clone)]
pub struct Options {
    /// Where skills are installed.
    pub scope: Scope,
    /// How remote sources are opened (cache directory, offline, timeout).
    pub open: OpenOptions,
    /// The trusted keys. Without one, signatures are not checked (and say so).
    pub keyring: Option<Keyring>,
    /// Refuse a skill no key of the keyring signed.
    pub require_signature: bool,
    /// What to do with a skill the audit finds a high finding in ([`Policy::Refuse`] by
    /// default: refused, the findings named; `Warn`: placed, and a warning names them;
    /// `--allow-findings` or `[install] audit = "warn"`).
    pub audit: Policy,
    /// How the audit reads a skill (the interpreters that tell which scripts are tools).
    pub audit_options: AuditOptions,
    /// Install skills that fail validation, and overwrite locally modified or unmanaged folders.
    pub force: bool,
    /// How skills are validated.
    pub validate: ValidateOptions,
    /// The longest a `git` command may take.
    pub git_timeout: Duration,
    /// Called as each skill is resolved (for a progress bar).
    pub progress: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
    /// Make a plan to be shown, never applied: the scope is only read (no `.agents` folder is
    /// created, no journal recovered: one waiting is refused) and [`Plan::apply`] refuses it.
    /// Sources are still fetched and verified (into the cache, outside the scope).
    pub dry_run: bool,
    /// `add NAME@VERSION` of a yanked version installs it (`--allow-yanked`); without it, it
    /// is refused. A lockfile that pins a yanked version restores it either way.
    pub allow_yanked: bool,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("scope", &self.scope)
            .field("require_signature", &self.require_signature)
            .field("audit", &self.audit)
            .field("force", &self.force)
            .field("dry_run", &self.dry_run)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Options for `scope` with every default: no keyring, nothing forced.
    pub fn new(scope: Scope) -> Options {
        Options {
            scope,
            open: OpenOptions::default(),
            keyring: None,
            require_signature: false,
            audit: Policy::Refuse,
            audit_options: AuditOptions::default(),
            force: false,
            validate: ValidateOptions::default(),
            git_timeout: Duration::from_secs(300),
            progress: None,
            dry_run: false,
            allow_yanked: false,
        }
    }

    fn progress(&self, done: usize, total: usize, name: &str) {
        if let Some(p) = &self.progress {
            p(Progress {
                done,
                total,
                name: name.to_string(),
            });
        }
    }
}

/// One step of a plan being made.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Skills resolved so far.
    pub done: usize,
    /// Skills to resolve.
    pub total: usize,
    /// The skill just resolved.
    pub name: String,
}

/// A skill fetched and verified: what would be installed.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its name (its folder's name).
    pub name: String,
    /// Its lockfile entry, as it would be written (agents and targets filled in by the plan).
    pub entry: Entry,
    /// Every file: `(relative path, bytes, executable)`.
    pub files: Vec<(String, Bytes, bool)>,
    /// Validation faults accepted with `--force`.
    pub faults: Vec<String>,
}

/// An index entry's artifact ([`Opened::artifact`]).
struct Artifact {
    archive_sha256: Option<String>,
    signatures: Vec<String>,
    index_url: Option<String>,
}

/// What a plan does to one skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    /// Installed where it was not.
    Install,
    /// Its content is replaced (a new version, a repaired copy).
    Replace,
    /// Its content stays; agents' folders change.
    Relink,
    /// Nothing to do.
    Unchanged,
    /// Removed with its agents' folders.
    Remove,
}

/// One skill's part of a plan.
#[derive(Debug, Clone)]
pub struct Action {
    /// The skill.
    pub name: String,
    /// What happens to it.
    pub kind: ActionKind,
    /// Its lockfile entry before.
    pub old: Option<Entry>,
    /// Its lockfile entry after.
    pub new: Option<Entry>,
    /// Which paths change, as the lockfile shows them.
    pub paths: Vec<String>,
}

/// What an applied plan did.
#[derive(Debug, Clone)]
pub struct Report {
    /// Every skill's action.
    pub actions: Vec<Action>,
    /// Whether the lockfile was written.
    pub lockfile_written: bool,
    /// The skills of the source that were not installed because they are invalid
    /// ([`Plan::left_out`]).
    pub left_out: Vec<LeftOut>,
}

/// A skill that `add` of a whole source left out because it is invalid (without `--force`):
/// nothing of it is written or pinned, and the others are installed all the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Its name (its folder's, when the document is not a skill document).
    pub name: String,
    /// Where it is, for people.
    pub location: String,
    /// Every fault, as `validate` words it.
    pub faults: Vec<String>,
}

/// A skill's folders in a scope: the canonical copy and each agent's own folder (those that
/// are not the canonical folder itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    /// `.agents/skills/NAME`.
    pub canonical: PathBuf,
    /// Each agent's folder for it (a link or a copy), in agent order, without repeats.
    pub agents: Vec<PathBuf>,
}

impl Targets {
    /// The folders of `name` for `agents` in `scope`.
    pub fn of(scope: &Scope, name: &str, agents: &[&Agent]) -> Targets {
        let canonical = scope.skills_dir().join(name);
        let mut out: Vec<PathBuf> = Vec::new();
        for a in agents {
            if let Some(dir) = a.dir(scope) {
                let p = dir.join(name);
                if p != canonical && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        Targets {
            canonical,
            agents: out,
        }
    }

    /// [`of`](Self::of), the canonical copy where `entry` has it (see `agents::home`).
    fn of_entry(scope: &Scope, name: &str, agents: &[&Agent], entry: Option<&Entry>) -> Targets {
        let home = super::agents::home(scope, name, entry);
        let mut t = Targets::of(scope, name, agents);
        if home != t.canonical {
            t.agents.retain(|p| *p != home);
            t.canonical = home;
        }
        t
    }

    fn shown(&self, scope: &Scope) -> Vec<String> {
        std::iter::once(&self.canonical)
            .chain(&self.agents)
            .map(|p| scope.shown(p))
            .collect()
    }
}

/// Changed, added and removed files of a locally modified skill.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileDrift {
    /// Files whose content differs from what was installed.
    pub changed: Vec<String>,
    /// Files that were not installed.
    pub added: Vec<String>,
    /// Files installed and now gone.
    pub removed: Vec<String>,
    /// The lockfile has no file list (written by another tool): only the digest is known.
    pub unknown: bool,
}

impl FileDrift {
    fn describe(&self) -> String {
        if self.unknown {
            return "its files differ from the pinned hash (the lockfile lists no files)".into();
        }
        let mut parts = Vec::new();
        for (what, list) in [
            ("changed", &self.changed),
            ("added", &self.added),
            ("removed", &self.removed),
        ] {
            if !list.is_empty() {
                parts.push(format!("{what}: {}", list.join(", ")));
            }
        }
        parts.join("; ")
    }
}

/// One installed skill as `status` sees it.
#[derive(Debug, Clone)]
pub struct SkillStatus {
    /// The skill.
    pub name: String,
    /// Its lockfile entry (`None`: a folder the lockfile does not know).
    pub entry: Option<Entry>,
    /// Whether its canonical folder exists.
    pub present: bool,
    /// The skill digest of what is installed now.
    pub digest: Option<String>,
    /// How it differs from what was installed (`None`: it does not).
    pub drift: Option<FileDrift>,
    /// Agents' folders that are missing or no longer point at the skill (with the canonical
    /// folder gone: those holding something skillcat did not put there).
    pub broken_targets: Vec<String>,
    /// With the canonical folder gone: the agents' folders skillcat made that are still there
    /// (links into the folder that is gone, copies the lockfile records), which `remove`
    /// removes and `install` links again.
    pub left_targets: Vec<String>,
    /// Where its copy is when that is not `.agents/skills/NAME`: an agent's own folder the
    /// `skills` CLI copied it into (`.claude/skills/NAME`), which `install` keeps it in (or,
    /// missing, restores it to).
    pub place: Option<String>,
}

impl SkillStatus {
    /// Whether anything is wrong: modified, missing, not in the lockfile, or a broken link.
    pub fn is_drift(&self) -> bool {
        self.entry.is_none()
            || !self.present
            || self.drift.is_some()
            || !self.broken_targets.is_empty()
    }
}

/// A plan: every skill resolved and verified, nothing changed yet. Holds the scope's lock until
/// it is applied or dropped.
#[derive(Debug)]
pub struct Plan {
    scope: Scope,
    _lock: ScopeLock,
    before: Option<Vec<u8>>,
    lockfile: Lockfile,
    write_lockfile: bool,
    actions: Vec<Action>,
    changes: Vec<Change>,
    warnings: Vec<String>,
    notes: Vec<String>,
    left_out: Vec<LeftOut>,
    dry_run: bool,
}

impl Plan {
    /// The skills of the source that `add` of a whole source leaves out because they are
    /// invalid (not skill documents, or failing validation without `--force`), in source
    /// order. A caller should say so and fail (the `skillcat add` command exits 1).
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// Every skill's action.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// The lockfile as it will be.
    pub fn lockfile(&self) -> &Lockfile {
        &self.lockfile
    }

    /// What the sources warned about (submodules left out, signatures not checked, …).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What was fetched from remote sources (requests made), for people.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether applying would change any file.
    pub fn changes_anything(&self) -> bool {
        !self.changes.is_empty() || self.lockfile_changes()
    }

    /// Whether applying would write the lockfile (its bytes would change). What changes in it
    /// is each action's [`old`](Action::old) and [`new`](Action::new) entry.
    pub fn writes_lockfile(&self) -> bool {
        self.lockfile_changes()
    }

    /// Whether the plan was made with [`Options::dry_run`] (to be shown, not applied).
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    fn lockfile_changes(&self) -> bool {
        self.write_lockfile && self.before.as_deref() != Some(self.lockfile.to_json().as_bytes())
    }

    /// Applies the plan: every folder and the lockfile, or nothing. A dry run's plan is
    /// refused (it was made without the scope's exclusive lock).
    pub async fn apply(self) -> Result<Report, InstallError> {
        if self.dry_run {
            return Err(InstallError::Usage(
                "a plan made for a dry run is not applied".into(),
            ));
        }
        let write = self.lockfile_changes();
        let bytes = write.then(|| self.lockfile.to_json().into_bytes());
        let Plan {
            scope,
            _lock,
            actions,
            changes,
            left_out,
            ..
        } = self;
        tokio::task::spawn_blocking(move || {
            place::commit(&scope, &changes, bytes.as_deref())?;
            drop(_lock);
            Ok(Report {
                actions,
                lockfile_written: write,
                left_out,
            })
        })
        .await
        .map_err(|e| InstallError::Source(crate::Error::task("installing", e)))?
    }

    /// `add SOURCE [NAME…]`: the skills of one source (all of them when no name is given),
    /// for `agents` (`None`: those an entry already names, else the agents found in the
    /// scope), as links or copies.
    pub async fn add(
        opts: &Options,
        source: &str,
        names: &[String],
        agents: Option<&[&'static Agent]>,
        copy: bool,
    ) -> Result<Plan, InstallError> {
        Self::add_from_plugin(opts, source, None, names, agents, copy).await
    }

    /// [`add`](Plan::add) of the skills of one plugin of a Claude Code marketplace
    /// (`add SOURCE --plugin NAME`; `None`: every skill); `names` then picks among them.
    pub async fn add_from_plugin(
        opts: &Options,
        source: &str,
        plugin: Option<&str>,
        names: &[String],
        agents: Option<&[&'static Agent]>,
        copy: bool,
    ) -> Result<Plan, InstallError> {
        check_keyring(opts)?;
        let cwd = std::env::current_dir().map_err(|e| InstallError::io(Path::new("."), e))?;
        let spec = spec::parse(source, &cwd)?;
        let lock = ScopeLock::acquire_for(&opts.scope, opts.dry_run).await?;
        let (lockfile, before) = read_lockfile(&opts.scope)?;
        let mut warnings = Vec::new();
        let mut opened = Opened::open(opts, &spec, None, &mut warnings).await?;
        opened.plugin = plugin.map(str::to_string);
        // A whole source installs what is valid and names the rest (a catalog with one broken
        // skill is not refused whole); names asked for are refused when invalid, as before.
        let mut left_out = Vec::new();
        let leave_out = (names.is_empty() && !opts.force).then_some(&mut left_out);
        let wanted = opened
            .select_valid(names, opts.force, leave_out, &opts.validate, &mut warnings)
            .await?;
        let mut refusals = Vec::new();
        let mut candidates = Vec::new();
        for (i, (root, asked)) in wanted.iter().enumerate() {
            match opened
                .candidate(opts, root, asked.as_deref(), None, &mut warnings)
                .await
            {
                Ok(c) => {
                    opts.progress(i + 1, wanted.len(), &c.name);
                    candidates.push(c);
                }
                Err(InstallError::Refused(r)) => refusals.extend(r),
                Err(e) => return Err(e),
            }
        }
        refuse_if_any(refusals)?;
        let notes: Vec<String> = opened.note().into_iter().collect();
        let mut builder = Builder::new(opts, lockfile, before, lock, warnings);
        let added: Vec<String> = candidates.iter().map(|c| c.name.clone()).collect();
        for c in candidates {
            let old = builder.lockfile.skills.get(&c.name).cloned();
            let chosen: Vec<&'static Agent> = match agents {
                Some(a) => a.to_vec(),
                None => match &old {
                    Some(e) => agents_of(e),
                    None => AGENTS.iter().filter(|a| a.detected(&opts.scope)).collect(),
                },
            };
            builder.place(c, old, &chosen, Some(copy), None)?;
        }
        let look_alikes = look_alikes(&added, builder.lockfile.skills.keys());
        builder.warnings.extend(look_alikes);
        let mut plan = builder.finish(true)?;
        plan.notes = notes;
        plan.left_out = left_out;
        Ok(plan)
    }

    /// `install`: every skill of the lockfile, exactly as pinned. With `frozen`, the lockfile is
    /// never written and an entry without a pin is refused; without it, pins missing from
    /// entries another tool wrote are filled in. Either way, entries whose source no longer
    /// gives the pinned content are all reported, and nothing is changed.
    pub async fn install(opts: &Options, frozen: bool) -> Result<Plan, InstallError> {
        check_keyring(opts)?;
        if !opts.scope.lockfile().exists() {
            return Err(InstallError::Usage(format!(
                "{}: no lockfile to install from",
                opts.scope.lockfile().display()
            )));
        }
        let lock = ScopeLock::acquire_for(&opts.scope, opts.dry_run).await?;
        let (lockfile, before) = read_lockfile(&opts.scope)?;
        if before.is_none() {
            return Err(InstallError::Usage(format!(
                "{}: no lockfile to install from",
                opts.scope.lockfile().display()
            )));
        }
        let lock_dir = lock_dir(&opts.scope);
        let names: Vec<String> = lockfile.skills.keys().cloned().collect();
        // First what is there: a skill whose canonical copy matches its pin needs no source.
        let states = installed_states(&opts.scope, &lockfile, &names);
        let mut refusals = Vec::new();
        let mut fetch: Vec<(String, Entry)> = Vec::new();
        let mut keep: Vec<(String, Entry, Installed)> = Vec::new();
        for (name, state) in names.iter().zip(states) {
            let entry = lockfile.skills[name].clone();
            if frozen && !entry.has_pin() {
                refusals.push(format!(
                    "{name}: the lockfile pins no content (no digest or computedHash); --frozen installs only pinned skills"
                ));
                continue;
            }
            match state {
                Ok(Some(inst)) if inst.matches(&entry) => keep.push((name.clone(), entry, inst)),
                Ok(Some(inst)) if entry.has_pin() && !opts.force => refusals.push(format!(
                    "{name}: {} is locally modified ({}); pass --force to replace it with the pinned copy",
                    opts.scope.shown(&super::agents::home(&opts.scope, name, Some(&entry))),
                    inst.drift(&entry).describe()
                )),
                Ok(_) => fetch.push((name.clone(), entry)),
                Err(e) => refusals.push(format!("{name}: {e}")),
            }
        }
        refuse_if_any(refusals)?;
        let mut warnings = Vec::new();
        let mut candidates = Vec::new();
        let total = fetch.len();
        // One opened source per distinct source (one index, one clone).
        let mut groups: BTreeMap<String, Vec<(String, Entry)>> = BTreeMap::new();
        for (name, entry) in fetch {
            let key = format!(
                "{}\0{}\0{}\0{}",
                entry.source_type,
                entry.source,
                entry.source_url.as_deref().unwrap_or(""),
                entry
                    .commit
                    .as_deref()
                    .or(entry.git_ref.as_deref())
                    .unwrap_or("")
            );
            groups.entry(key).or_default().push((name, entry));
        }
        let mut refusals = Vec::new();
        let mut notes = Vec::new();
        let mut done = 0;
        for (_, group) in groups {
            let (first_name, first) = &group[0];
            let mut spec = SourceSpec::from_entry(first_name, first, &lock_dir)?;
            if spec.kind == SourceKind::Git && first.skill_path.is_some() {
                // A repository is fetched once for all its skills, each found by its
                // skillPath.
                spec.subpath = None;
            }
            let opened = match Opened::open(opts, &spec, Some(first), &mut warnings).await {
                Ok(o) => o,
                Err(InstallError::Refused(r)) => {
                    refusals.extend(r);
                    continue;
                }
                Err(e) => {
                    refusals.extend(group.iter().map(|(n, _)| format!("{n}: {e}")));
                    continue;
                }
            };
            for (name, entry) in &group {
                let root = match opened.root_of(name, Some(entry), &mut warnings).await {
                    Ok(r) => r,
                    Err(e) => {
                        refusals.push(format!("{name}: {e}"));
                        continue;
                    }
                };
                // A lockfile restores what it pins, a yanked version too (as Cargo does).
                if let Some(v) = &entry.version
                    && opened.src.record(&root).await.is_ok_and(|r| r.yanked)
                {
                    warnings.push(format!(
                        "{name}@{v} is yanked from {}: restored because the lockfile pins it; \
                         `skillcat update {name}` moves to the latest version",
                        opened.spec.typed
                    ));
                }
                match opened
                    .candidate(opts, &root, Some(name), Some(entry), &mut warnings)
                    .await
                {
                    Ok(c) => {
                        done += 1;
                        opts.progress(done, total, name);
                        candidates.push((c, entry.clone()));
                    }
                    Err(InstallError::Refused(r)) => refusals.extend(r),
                    Err(e) => refusals.push(format!("{name}: {e}")),
                }
            }
            notes.extend(opened.note());
        }
        refuse_if_any(refusals)?;
        let mut builder = Builder::new(opts, lockfile, before, lock, warnings);
        for (name, entry, inst) in keep {
            let agents = agents_of(&entry);
            let c = Candidate {
                name: name.clone(),
                entry: entry.clone(),
                files: Vec::new(),
                faults: Vec::new(),
            };
            builder.place(c, Some(entry), &agents, None, Some(inst))?;
        }
        for (c, entry) in candidates {
            let agents = agents_of(&entry);
            builder.place(c, Some(entry), &agents, None, None)?;
        }
        let mut plan = builder.finish(!frozen)?;
        plan.notes = notes;
        Ok(plan)
    }

    /// `update [NAME…]`: each skill (all when no name is given) from its source as it is now
    /// (a git source's branch, a registry's latest version). A lower version, a different
    /// signer and a locally modified copy are refused unless allowed.
    pub async fn update(
        opts: &Options,
        names: &[String],
        allow_downgrade: bool,
        allow_signer_change: bool,
    ) -> Result<Plan, InstallError> {
        check_keyring(opts)?;
        let lock = ScopeLock::acquire_for(&opts.scope, opts.dry_run).await?;
        let (lockfile, before) = read_lockfile(&opts.scope)?;
        let lock_dir = lock_dir(&opts.scope);
        let chosen = choose(&lockfile, names)?;
        let mut warnings = Vec::new();
        let mut refusals = Vec::new();
        let mut candidates = Vec::new();
        let states = installed_states(&opts.scope, &lockfile, &chosen);
        for (i, (name, state)) in chosen.iter().zip(states).enumerate() {
            let entry = &lockfile.skills[name];
            let spec = SourceSpec::from_entry(name, entry, &lock_dir)?;
            let result = async {
                let opened = Opened::open(opts, &spec, None, &mut warnings).await?;
                let root = opened.root_of(name, None, &mut warnings).await?;
                opened
                    .candidate(opts, &root, Some(name), None, &mut warnings)
                    .await
            }
            .await;
            let c = match result {
                Ok(c) => c,
                Err(InstallError::Refused(r)) => {
                    refusals.extend(r);
                    continue;
                }
                Err(e) => {
                    refusals.push(format!("{name}: {e}"));
                    continue;
                }
            };
            opts.progress(i + 1, chosen.len(), name);
            if Some(&c.entry.digest) == Some(&entry.digest)
                || (entry.digest.is_none() && c.entry.computed_hash == entry.computed_hash)
            {
                candidates.push(c);
                continue;
            }
            if let (Some(old), Some(new)) = (&entry.version, &c.entry.version)
                && is_lower(new, old)
                && !allow_downgrade
            {
                refusals.push(format!(
                    "{name}: {old} → {new} is a downgrade; pass --allow-downgrade to install it"
                ));
            }
            if let Some(old) = &entry.signer
                && c.entry.signer.as_ref() != Some(old)
                && !allow_signer_change
            {
                refusals.push(format!(
                    "{name}: signed by key {old}, the new version {}; pass --allow-signer-change to accept it",
                    c.entry
                        .signer
                        .as_ref()
                        .map_or("is unsigned".to_string(), |k| format!("by key {k}"))
                ));
            }
            if let Ok(Some(inst)) = &state
                && entry.has_pin()
                && !inst.matches(entry)
                && !opts.force
            {
                refusals.push(format!(
                    "{name}: {} is locally modified ({}); pass --force to overwrite it",
                    opts.scope.shown(&opts.scope.skills_dir().join(name)),
                    inst.drift(entry).describe()
                ));
            }
            candidates.push(c);
        }
        refuse_if_any(refusals)?;
        let mut builder = Builder::new(opts, lockfile, before, lock, warnings);
        for c in candidates {
            let old = builder.lockfile.skills.get(&c.name).cloned();
            let agents = old.as_ref().map(agents_of).unwrap_or_default();
            builder.place(c, old, &agents, None, None)?;
        }
        builder.finish(true)
    }

    /// `remove NAME…`: each skill's canonical folder, its links in every agent's folder (and
    /// the copies it was installed as), and its lockfile entry. Nothing else.
    pub async fn remove(opts: &Options, names: &[String]) -> Result<Plan, InstallError> {
        if names.is_empty() {
            return Err(InstallError::Usage(
                "remove needs the names of skills".into(),
            ));
        }
        let lock = ScopeLock::acquire_for(&opts.scope, opts.dry_run).await?;
        let (mut lockfile, before) = read_lockfile(&opts.scope)?;
        // A skill that is not installed is nothing to remove: a refusal (exit 1), not a
        // malformed request (exit 2).
        let missing: Vec<String> = (names.iter())
            .filter(|n| !lockfile.skills.keys().any(|k| name_key(k) == name_key(n)))
            .map(|n| {
                format!(
                    "{n} is not installed here (not in the lockfile, skills-lock.json): \
                     `skillcat status` lists what is"
                )
            })
            .collect();
        if !missing.is_empty() {
            return Err(InstallError::Refused(missing));
        }
        let chosen = choose(&lockfile, names)?;
        let mut actions = Vec::new();
        let mut changes = Vec::new();
        for name in chosen {
            let entry = lockfile.skills.remove(&name).expect("chosen from it");
            // Where its copy is: the `skills` CLI's in an agent's folder included.
            let canonical = super::agents::home(&opts.scope, &name, Some(&entry));
            let mut paths = Vec::new();
            if std::fs::symlink_metadata(&canonical).is_ok() {
                paths.push(opts.scope.shown(&canonical));
                changes.push(Change {
                    target: canonical.clone(),
                    new: None,
                });
            }
            let recorded: BTreeSet<&str> = entry.targets.iter().map(String::as_str).collect();
            let mut seen = BTreeSet::new();
            for a in AGENTS {
                let Some(dir) = a.dir(&opts.scope) else {
                    continue;
                };
                let p = dir.join(&name);
                if p == canonical || !seen.insert(p.clone()) {
                    continue;
                }
                let ours = match std::fs::symlink_metadata(&p) {
                    // A link into the canonical folder, even one left dangling by a folder
                    // deleted by hand; never a link of the user's that leads elsewhere.
                    Ok(m) if m.file_type().is_symlink() => links_to(&p, &canonical),
                    Ok(m) if m.is_dir() => {
                        entry.copy && recorded.contains(opts.scope.shown(&p).as_str())
                    }
                    _ => false,
                };
                if ours {
                    paths.push(opts.scope.shown(&p));
                    changes.push(Change {
                        target: p,
                        new: None,
                    });
                }
            }
            actions.push(Action {
                name,
                kind: ActionKind::Remove,
                old: Some(entry),
                new: None,
                paths,
            });
        }
        Ok(Plan {
            scope: opts.scope.clone(),
            _lock: lock,
            before,
            lockfile,
            write_lockfile: true,
            actions,
            changes,
            warnings: Vec::new(),
            notes: Vec::new(),
            left_out: Vec::new(),
            dry_run: opts.dry_run,
        })
    }
}

/// `status`: every skill of the lockfile and every folder in `.agents/skills`, each digest
/// recomputed from the files on disk.
pub async fn status(scope: &Scope) -> Result<Vec<SkillStatus>, InstallError> {
    // Nothing was ever installed without a `.agents` folder: then there is nothing to lock or
    // recover, and status creates nothing.
    let lock = match scope.state_dir().is_dir() {
        true => Some(ScopeLock::acquire(scope).await?),
        false => None,
    };
    let (lockfile, _) = read_lockfile(scope)?;
    drop(lock);
    let mut names: Vec<String> = lockfile.skills.keys().cloned().collect();
    if let Ok(dir) = std::fs::read_dir(scope.skills_dir()) {
        for e in dir.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if check_name(&n).is_ok() && !lockfile.skills.contains_key(&n) {
                names.push(n);
            }
        }
    }
    names.sort();
    let states = installed_states(scope, &lockfile, &names);
    let mut out = Vec::new();
    for (name, state) in names.into_iter().zip(states) {
        let entry = lockfile.skills.get(&name).cloned();
        let state = state?;
        let (present, digest, drift) = match (&state, &entry) {
            (Some(inst), Some(e)) => (
                true,
                Some(inst.digest.clone()),
                (!inst.matches(e)).then(|| inst.drift(e)),
            ),
            (Some(inst), None) => (true, Some(inst.digest.clone()), None),
            (None, _) => (false, None, None),
        };
        let mut broken_targets = Vec::new();
        let mut left_targets = Vec::new();
        let home = super::agents::home(scope, &name, entry.as_ref());
        let place = (home != scope.skills_dir().join(&name)).then(|| scope.shown(&home));
        if let Some(e) = &entry {
            let t = Targets::of_entry(scope, &name, &agents_of(e), Some(e));
            for p in &t.agents {
                let shown = scope.shown(p);
                if present {
                    let fine = if e.copy {
                        p.is_dir()
                    } else {
                        points_to(p, &t.canonical)
                    };
                    if !fine {
                        broken_targets.push(shown);
                    }
                } else if std::fs::symlink_metadata(p).is_err() {
                    // Nothing there: `install` makes it with the canonical folder.
                } else if made_by_us(scope, e, p, &t.canonical) {
                    left_targets.push(shown);
                } else {
                    broken_targets.push(shown);
                }
            }
        }
        out.push(SkillStatus {
            name,
            entry,
            present,
            digest,
            drift,
            broken_targets,
            left_targets,
            place,
        });
    }
    Ok(out)
}

fn check_keyring(opts: &Options) -> Result<(), InstallError> {
    if opts.require_signature && opts.keyring.is_none() {
        return Err(InstallError::Usage(
            "signatures are required (--require-signature or [install] require_signatures), but no keyring is set (--keyring FILE, or keyring in skillcat.toml)".into(),
        ));
    }
    Ok(())
}

/// The lockfile entry of a placed skill: one kept as it is stays, with skillcat's pins filled
/// in where missing; the same content again keeps what another tool recorded.
fn settle_entry(entry: &mut Entry, old: Option<&Entry>, kept: Option<&Installed>) {
    if let (Some(e), Some(k)) = (old, kept) {
        // Kept as it is: the entry stays, with skillcat's pins filled in where missing.
        let mut kept_entry = e.clone();
        kept_entry.digest.get_or_insert_with(|| k.digest.clone());
        if kept_entry.files.is_empty() {
            kept_entry.files = k.files.clone();
        }
        if !kept_entry.unsigned && kept_entry.signer.is_none() {
            kept_entry.unsigned = true;
        }
        kept_entry.agents = entry.agents.clone();
        kept_entry.copy = entry.copy;
        kept_entry.targets = entry.targets.clone();
        *entry = kept_entry;
    } else if let Some(e) = old
        && (e.digest == entry.digest
            || (e.digest.is_none() && e.computed_hash == entry.computed_hash))
    {
        // The same content again: what another tool recorded stays.
        entry.other = e.other.clone();
    }
}

fn refuse_if_any(refusals: Vec<String>) -> Result<(), InstallError> {
    if refusals.is_empty() {
        Ok(())
    } else {
        Err(InstallError::Refused(refusals))
    }
}

fn lock_dir(scope: &Scope) -> PathBuf {
    scope
        .lockfile()
        .parent()
        .map_or_else(|| scope.root().to_path_buf(), Path::to_path_buf)
}

fn read_lockfile(scope: &Scope) -> Result<(Lockfile, Option<Vec<u8>>), InstallError> {
    Ok(match Lockfile::read(&scope.lockfile())? {
        Some((l, b)) => (l, Some(b)),
        None => (Lockfile::default(), None),
    })
}

/// The lockfile's names among `names` (all when empty); an unknown one is a usage error.
fn choose(lockfile: &Lockfile, names: &[String]) -> Result<Vec<String>, InstallError> {
    if names.is_empty() {
        return Ok(lockfile.skills.keys().cloned().collect());
    }
    let mut out = Vec::new();
    for n in names {
        let found = lockfile
            .skills
            .keys()
            .find(|k| name_key(k) == name_key(n))
            .ok_or_else(|| {
                InstallError::Usage(format!("{n} is not in the lockfile (skills-lock.json)"))
            })?;
        if !out.contains(found) {
            out.push(found.clone());
        }
    }
    Ok(out)
}

/// The agents an entry names (ids this skillcat does not know are skipped).
fn agents_of(entry: &Entry) -> Vec<&'static Agent> {
    entry.agents.iter().filter_map(|id| agent(id)).collect()
}

/// Whether `link` is a symbolic link that resolves to `target`.
fn points_to(link: &Path, target: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(link) else {
        return false;
    };
    if !meta.file_type().is_symlink() {
        return false;
    }
    match (std::fs::canonicalize(link), std::fs::canonicalize(target)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether `link` is a symbolic link into `target` as skillcat makes them: its text, read
/// against the link's folder with `..` taken as written, names `target` — so a link left
/// dangling by a canonical folder deleted by hand still counts — or it resolves to the same
/// folder. A link that leads anywhere else is not one of skillcat's.
fn links_to(link: &Path, target: &Path) -> bool {
    let Ok(text) = std::fs::read_link(link) else {
        return false;
    };
    let base = link.parent().unwrap_or(Path::new("/"));
    let written = if text.is_absolute() {
        text
    } else {
        base.join(text)
    };
    lexical(&written) == lexical(target) || points_to(link, target)
}

/// `path` with `.` dropped and each `..` taking off the component before it, without reading
/// the file system.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    out
}

/// Whether what is at `p`, an agent's folder of the skill of `entry` whose canonical folder is
/// `canonical`, is something skillcat put there: a link into the canonical folder, or a copy
/// the lockfile records.
fn made_by_us(scope: &Scope, entry: &Entry, p: &Path, canonical: &Path) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_symlink() => links_to(p, canonical),
        Ok(m) if m.is_dir() => entry.copy && entry.targets.iter().any(|t| *t == scope.shown(p)),
        _ => false,
    }
}

/// `new < old` as versions (semver when both parse, else never).
fn is_lower(new: &str, old: &str) -> bool {
    let parse = |v: &str| semver::Version::parse(v.trim_start_matches('v')).ok();
    match (parse(new), parse(old)) {
        (Some(n), Some(o)) => n < o,
        _ => false,
    }
}

/// The text of a link from `link` to `target`: relative when both are under one folder.
fn link_text(link: &Path, target: &Path) -> PathBuf {
    let from = link.parent().unwrap_or(Path::new("/"));
    let (f, t): (Vec<_>, Vec<_>) = (from.components().collect(), target.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    if common <= 1 {
        return target.to_path_buf();
    }
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    out
}

/// A skill folder on disk, read and hashed.
#[derive(Debug, Clone)]
struct Installed {
    digest: String,
    /// Computed only when the entry has no skill digest to compare with.
    computed_hash: Option<String>,
    files: BTreeMap<String, String>,
}

impl Installed {
    fn matches(&self, entry: &Entry) -> bool {
        match (&entry.digest, &entry.computed_hash) {
            (Some(d), _) => *d == self.digest,
            (None, Some(h)) => self.computed_hash.as_ref() == Some(h),
            (None, None) => false,
        }
    }

    fn drift(&self, entry: &Entry) -> FileDrift {
        if entry.files.is_empty() {
            return FileDrift {
                unknown: true,
                ..FileDrift::default()
            };
        }
        let mut d = FileDrift::default();
        for (path, digest) in &self.files {
            match entry.files.get(path) {
                None => d.added.push(path.clone()),
                Some(old) if old != digest => d.changed.push(path.clone()),
                Some(_) => {}
            }
        }
        d.removed = entry
            .files
            .keys()
            .filter(|p| !self.files.contains_key(*p))
            .cloned()
            .collect();
        d
    }
}

/// Reads each named skill's canonical folder (where its entry has it), several at once.
fn installed_states(
    scope: &Scope,
    lockfile: &Lockfile,
    names: &[String],
) -> Vec<Result<Option<Installed>, InstallError>> {
    crate::source::par_map(names, |name| {
        let entry = lockfile.skills.get(name);
        let want_hash = entry.is_some_and(|e| e.digest.is_none());
        read_installed(&super::agents::home(scope, name, entry), want_hash)
    })
}

/// A skill folder's files, hashed (`None`: no folder). Links, devices and the like are refused
/// as drift; ignored entries (`.git/`, `.DS_Store`) are skipped as every source skips them.
fn read_installed(dir: &Path, computed: bool) -> Result<Option<Installed>, InstallError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(InstallError::io(dir, e)),
        Ok(m) if !m.is_dir() => {
            return Err(InstallError::Refused(vec![format!(
                "{} is not a folder",
                dir.display()
            )]));
        }
        Ok(_) => {}
    }
    let mut hashes: Vec<(String, [u8; 32])> = Vec::new();
    let mut contents: Vec<(String, Vec<u8>)> = Vec::new();
    each_file(dir, |rel, path, meta| {
        if meta.is_file() {
            let bytes = std::fs::read(path).map_err(|e| InstallError::io(path, e))?;
            hashes.push((rel.clone(), sha256(&bytes)));
            if computed {
                contents.push((rel, bytes));
            }
        } else {
            // A link or a special file was not installed by skillcat: it shows as drift.
            let text = std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            hashes.push((rel, sha256(format!("link:{text}").as_bytes())));
        }
        Ok(())
    })?;
    let digest = crate::digest::tree_digest(hashes.iter().map(|(p, h)| (p.as_str(), *h)));
    let files = hashes
        .into_iter()
        .map(|(p, h)| (p, format!("sha256:{}", to_hex(h))))
        .collect();
    let computed_hash =
        computed.then(|| computed_hash(contents.iter().map(|(p, b)| (p.as_str(), b.as_slice()))));
    Ok(Some(Installed {
        digest,
        computed_hash,
        files,
    }))
}

/// An opened source, with what it resolved to.
struct Opened {
    spec: SourceSpec,
    src: Arc<dyn Source>,
    /// What the source resolved to ([`Source::id`]): a git commit, an archive's sha256, an
    /// index URL, an OCI digest.
    id: SourceId,
    /// What opening warned about (a git source's submodules left out): not said again when a
    /// discovery returns it.
    opened_warnings: Vec<String>,
    /// The marketplace plugin whose skills alone are selected (`add --plugin`).
    plugin: Option<String>,
    /// `add NAME@VERSION` of a yanked version is allowed (`--allow-yanked`).
    allow_yanked: bool,
}

impl Opened {
    /// Opens `spec`; `pin` is the lockfile entry to hold it to (a git commit, an archive's
    /// sha256, an OCI digest), `None` to take the source as it is now.
    async fn open(
        opts: &Options,
        spec: &SourceSpec,
        pin: Option<&Entry>,
        warnings: &mut Vec<String>,
    ) -> Result<Opened, InstallError> {
        let mut spec = spec.clone();
        spec.pin = match spec.kind {
            SourceKind::Git => pin.and_then(|e| e.commit.clone()),
            SourceKind::Oci => pin.and_then(|e| e.oci_digest.clone()),
            _ => None,
        };
        let mut open = opts.open.clone();
        open.git_timeout = Some(opts.git_timeout);
        let src = {
            let (spec, open) = (spec.clone(), open);
            tokio::task::spawn_blocking(move || source::open_with(&spec, &open))
                .await
                .map_err(|e| InstallError::Source(crate::Error::task("opening a source", e)))?
                .map_err(from_source)?
        };
        // A git source is fetched, and a directory or an archive already read, here; an HTTP
        // index or an OCI manifest is resolved only once a skill is read from it.
        let id = match spec.kind {
            SourceKind::Git | SourceKind::Local | SourceKind::Archive => {
                src.id().await.map_err(from_source)?
            }
            _ => crate::source::SourceId::Location(src.location("")),
        };
        if spec.kind == SourceKind::Archive
            && let (Some(want), Some(got)) = (
                pin.and_then(|e| e.archive_sha256.as_ref()),
                id.archive_sha256(),
            )
            && want != got
        {
            return Err(InstallError::Refused(vec![format!(
                "{}: the archive's sha256 is {got}, the lockfile pins {want} (the file was replaced or tampered with)",
                spec.typed
            )]));
        }
        let opened_warnings = src.warnings();
        warnings.extend(opened_warnings.iter().cloned());
        Ok(Opened {
            spec,
            src,
            id,
            opened_warnings,
            plugin: None,
            allow_yanked: opts.allow_yanked,
        })
    }

    /// How many requests a remote source made, for people.
    fn note(&self) -> Option<String> {
        self.src.summary()
    }

    /// The roots to install for `names` (every skill when empty), each with the name asked
    /// for. A registry's names may be `NAME@VERSION`.
    async fn select(
        &self,
        names: &[String],
        force: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<(String, Option<String>)>, InstallError> {
        self.select_valid(names, force, None, &ValidateOptions::default(), warnings)
            .await
    }

    /// [`select`](Self::select); with `left_out` (a whole source, not forced), a root that is
    /// not a skill or a skill that fails validation is put there instead of refused (refused
    /// only when nothing valid is left).
    async fn select_valid(
        &self,
        names: &[String],
        force: bool,
        left_out: Option<&mut Vec<LeftOut>>,
        validate: &ValidateOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<(String, Option<String>)>, InstallError> {
        if self.spec.kind == SourceKind::Registry && !names.is_empty() {
            let mut out = Vec::new();
            for n in names {
                let (name, version) = match n.split_once('@') {
                    Some((a, b)) => (a.to_string(), Some(b.to_string())),
                    None => (n.clone(), None),
                };
                let root = self.registry_root(&name, version.as_deref()).await?;
                if version.is_some() {
                    self.yanked_asked(&root, n, warnings).await?;
                }
                out.push((root, Some(name)));
            }
            return Ok(out);
        }
        if self.spec.kind == SourceKind::WellKnown && !names.is_empty() {
            // An index names its skills: only the archives asked for are fetched.
            let roots = self.src.list().await?;
            let mut out = Vec::new();
            let mut missing = Vec::new();
            for n in names {
                // `NAME@VERSION`: that version, as the source finds it (a served registry keeps
                // every version it published).
                if let Some((name, version)) = n.split_once('@') {
                    match self.src.version_root(name, version).await {
                        Ok(Some(root)) => {
                            self.yanked_asked(&root, n, warnings).await?;
                            out.push((root, Some(n.clone())));
                            continue;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            missing.push(format!("{}: {e}", self.spec.typed));
                            continue;
                        }
                    }
                }
                match roots.iter().find(|r| name_key(r) == name_key(n)) {
                    Some(r) => out.push((r.clone(), Some(n.clone()))),
                    None => missing.push(no_such_skill(n, &self.spec.typed, roots.clone(), 0)),
                }
            }
            refuse_if_any(missing)?;
            return Ok(out);
        }
        let mut found = source::discover_with(&*self.src, Detail::Document)
            .await
            .map_err(from_source)?;
        if let Some(plugin) = &self.plugin {
            crate::plugin::keep_plugin(&*self.src, &self.spec.typed, plugin, &mut found).await?;
        }
        warnings.extend(
            found
                .warnings
                .iter()
                .filter(|w| !self.opened_warnings.contains(w))
                .cloned(),
        );
        let mut refusals: Vec<String> = Vec::new();
        if names.is_empty() {
            let mut out_of_it = Vec::new();
            for f in &found.faults {
                let line = format!("{}: not a skill: {}", f.location, f.fault.message());
                if force {
                    warnings.push(format!("{line} (skipped)"));
                } else if left_out.is_some() {
                    let left = LeftOut {
                        name: crate::path::base_name(&f.root).to_string(),
                        location: f.location.clone(),
                        faults: vec![format!("not a skill: {}", f.fault.message())],
                    };
                    out_of_it.push((left, line));
                } else {
                    refusals.push(line);
                }
            }
            refuse_if_any(refusals)?;
            let mut valid = Vec::new();
            for s in &found.skills {
                let faults = match left_out {
                    Some(_) => s.validate(validate),
                    None => Vec::new(),
                };
                if faults.is_empty() {
                    valid.push(s);
                } else {
                    let faults: Vec<String> =
                        faults.iter().map(|f| f.message().to_string()).collect();
                    let line = format!(
                        "{}: invalid skill ({}); pass --force to install it anyway",
                        s.name(),
                        faults.join("; ")
                    );
                    let left = LeftOut {
                        name: s.name(),
                        location: s.location().to_string(),
                        faults,
                    };
                    out_of_it.push((left, line));
                }
            }
            if valid.is_empty() && !out_of_it.is_empty() {
                // Nothing to install: each one is refused with its faults, as before.
                return Err(InstallError::Refused(
                    out_of_it.into_iter().map(|(_, line)| line).collect(),
                ));
            }
            if valid.is_empty() {
                return Err(InstallError::Refused(vec![format!(
                    "{}: no skills in it",
                    self.spec.typed
                )]));
            }
            if let Some(l) = left_out {
                l.extend(out_of_it.into_iter().map(|(left, _)| left));
            }
            let mut out = Vec::new();
            for s in valid {
                out.push((self.root_for(s).await?, None));
            }
            return Ok(out);
        }
        let mut out = Vec::new();
        for n in names {
            let key = name_key(n);
            match found.skills.iter().find(|s| name_key(&s.name()) == key) {
                Some(s) => out.push((self.root_for(s).await?, Some(n.clone()))),
                None => refusals.push(no_such_skill(
                    n,
                    &self.spec.typed,
                    found.skills.iter().map(Skill::name).collect(),
                    found.faults.len(),
                )),
            }
        }
        refuse_if_any(refusals)?;
        Ok(out)
    }

    /// A discovered skill's root; in a registry, pinned to its version now.
    async fn root_for(&self, s: &Skill) -> Result<String, InstallError> {
        if self.spec.kind == SourceKind::Registry {
            return self.registry_root(s.root(), None).await;
        }
        Ok(s.root().to_string())
    }

    /// The registry this source names, read through its engine's store: a file, or a
    /// PostgreSQL database (a spec of either kind has its path or its URL).
    async fn registry_store(&self) -> Result<Arc<dyn crate::registry::store::Store>, InstallError> {
        use crate::registry::store::{self, Location};
        let location = match (&self.spec.path, &self.spec.url) {
            (Some(path), _) => Location::File(path.clone()),
            (None, Some(url)) => Location::Postgres(url.clone()),
            (None, None) => Location::File(PathBuf::from(&self.spec.typed)),
        };
        store::open_read_only(&location)
            .await
            .map_err(|e| InstallError::Source(e.into()))
    }

    /// `NAME@VERSION` in the registry: `version`, else the latest now. A miss names what the
    /// registry has: its skills when it has none of that name, else that skill's versions.
    async fn registry_root(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<String, InstallError> {
        let reg = self.registry_store().await?;
        let found = match version {
            Some(v) => reg
                .get(name, v)
                .await
                .map_err(|e| InstallError::Source(e.into()))?
                .map(|r| r.info.version),
            None => reg
                .latest(name)
                .await
                .map_err(|e| InstallError::Source(e.into()))?
                .map(|i| i.version),
        };
        if let Some(v) = found {
            return Ok(format!("{name}@{v}"));
        }
        let versions = reg
            .versions(name)
            .await
            .map_err(|e| InstallError::Source(e.into()))?;
        drop(reg);
        let typed = &self.spec.typed;
        if versions.is_empty() {
            let names = self.src.list().await.map_err(from_source)?;
            return Err(InstallError::Refused(vec![no_such_skill(
                name, typed, names, 0,
            )]));
        }
        let held: Vec<String> = versions
            .iter()
            .map(|i| {
                if i.yanked {
                    format!("{} (yanked)", i.version)
                } else {
                    i.version.clone()
                }
            })
            .collect();
        Err(InstallError::Refused(vec![match version {
            Some(v) => format!(
                "{typed}: {name}@{v} is not in the registry (it holds {name} {})",
                held.join(", ")
            ),
            None => format!(
                "{typed}: every version of {name} is yanked ({}); ask for one as {name}@VERSION to install it anyway",
                held.join(", ")
            ),
        }]))
    }

    /// The root of the skill a lockfile entry names: its pinned registry version; the root a
    /// git checkout of the skill's own folder is; else the skill of that name.
    /// `add NAME@VERSION` of a yanked version: refused unless `--allow-yanked`, then warned of
    /// (only new resolution skips yanked versions; a lockfile restores one it pins).
    async fn yanked_asked(
        &self,
        root: &str,
        asked: &str,
        warnings: &mut Vec<String>,
    ) -> Result<(), InstallError> {
        if !self.src.record(root).await.is_ok_and(|r| r.yanked) {
            return Ok(());
        }
        if !self.allow_yanked {
            return Err(InstallError::Refused(vec![format!(
                "{asked} is yanked from {}: a yanked version is installed only when a lockfile \
                 pins it; pass --allow-yanked to add it anyway",
                self.spec.typed
            )]));
        }
        warnings.push(format!(
            "{asked} is yanked from {}: added because --allow-yanked was given",
            self.spec.typed
        ));
        Ok(())
    }

    async fn root_of(
        &self,
        name: &str,
        pin: Option<&Entry>,
        warnings: &mut Vec<String>,
    ) -> Result<String, InstallError> {
        match self.spec.kind {
            SourceKind::Registry => {
                self.registry_root(name, pin.and_then(|e| e.version.as_deref()))
                    .await
            }
            // A pinned version is read by its version (a served registry keeps every one it
            // published); one the source cannot find is told apart by the checks after.
            SourceKind::WellKnown => match pin.and_then(|e| e.version.as_deref()) {
                Some(v) => Ok(self
                    .src
                    .version_root(name, v)
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| name.to_string())),
                None => Ok(name.to_string()),
            },
            SourceKind::Git
                if self.spec.subpath.is_none() && pin.is_some_and(|e| e.skill_path.is_some()) =>
            {
                let path = pin.and_then(|e| e.skill_path.as_deref()).unwrap_or("");
                Ok(crate::path::document_folder(path).to_string())
            }
            _ => {
                let roots = self.select(&[name.to_string()], false, warnings).await?;
                Ok(roots.into_iter().next().map(|(r, _)| r).unwrap_or_default())
            }
        }
    }

    /// Reads the skill at `root` and verifies it, in order: the archive's sha256 (against the
    /// index, and `pin`), the signature, the skill digest (against `pin`), validation.
    async fn candidate(
        &self,
        opts: &Options,
        root: &str,
        asked: Option<&str>,
        pin: Option<&Entry>,
        warnings: &mut Vec<String>,
    ) -> Result<Candidate, InstallError> {
        let refuse = |why: String| InstallError::Refused(vec![why]);
        // 1. The artifact: an index entry's archive must be the one pinned.
        let Artifact {
            archive_sha256,
            mut signatures,
            index_url,
        } = self.artifact(root, pin).await?;
        let skill = self.src.load(root).await.map_err(|e| match e {
            e @ (crate::Error::InvalidSkill { .. }
            | crate::Error::PathRejected { .. }
            | crate::Error::DigestMismatch { .. }
            | crate::Error::Archive(_)) => refuse(format!("{}: {e}", self.spec.typed)),
            other => InstallError::Source(other),
        })?;
        let name = skill.name();
        if let Err(why) = check_name(&name) {
            return Err(refuse(format!(
                "{}: the skill's name {name:?} cannot be a folder: {why}",
                skill.location()
            )));
        }
        if let Some(a) = asked {
            let asked_name = a.split_once('@').map_or(a, |(n, _)| n);
            if name != asked_name && (pin.is_some() || name_key(&name) != name_key(asked_name)) {
                return Err(refuse(format!(
                    "{asked_name}: the skill found is named {name:?}; a skill is installed under its own name"
                )));
            }
        }
        let version = match self.spec.kind {
            SourceKind::Registry => root.split_once('@').map(|(_, v)| v.to_string()),
            _ => skill.version().map(str::to_string),
        };
        let mut files = Vec::with_capacity(skill.files().len());
        for f in skill.files() {
            let bytes = self
                .src
                .read(&join_path(root, &f.path))
                .await
                .map_err(|e| match e {
                    e @ (crate::Error::PathRejected { .. }
                    | crate::Error::DigestMismatch { .. }) => refuse(format!("{name}: {e}")),
                    other => InstallError::Source(other),
                })?;
            files.push((f.path.clone(), bytes, f.executable));
        }
        let manifest = Manifest::build(
            &name,
            version.as_deref().unwrap_or(""),
            files.iter().map(|(p, b, x)| (p.as_str(), &b[..], *x)),
        );
        // 2. The signature, against the keyring.
        let oci_digest = self.more_signatures(root, &name, &mut signatures).await?;
        let signer = self.check_signature(opts, &name, &manifest, &signatures, pin, warnings)?;
        // 3. The skill digest, against the pin.
        let hash = computed_hash(files.iter().map(|(p, b, _)| (p.as_str(), &b[..])));
        self.check_pin(&name, pin, &manifest, &hash)?;
        // 4. Validation.
        let faults: Vec<String> = skill
            .validate(&opts.validate)
            .iter()
            .map(|f| f.message().to_string())
            .collect();
        if !faults.is_empty() && !opts.force {
            return Err(refuse(format!(
                "{name}: invalid skill ({}); pass --force to install it anyway",
                faults.join("; ")
            )));
        }
        // 5. The audit: what neither a signature vouches for nor a sandbox contains.
        self.audit(opts, &skill, &name, warnings).await?;
        let lock_dir = lock_dir(&opts.scope);
        let skill_path = (self.spec.kind == SourceKind::Git).then(|| {
            // The document the skill has, in the order of preference.
            let doc = crate::path::DOCUMENT_NAMES
                .into_iter()
                .find(|n| files.iter().any(|(p, _, _)| p == n))
                .unwrap_or(crate::path::DOCUMENT_NAMES[1]);
            join_path(
                &join_path(self.spec.subpath.as_deref().unwrap_or(""), root),
                doc,
            )
        });
        let entry = Entry {
            source: self.spec.lock_source(&lock_dir),
            source_url: self.spec.source_url(),
            git_ref: self.spec.git_ref.clone(),
            source_type: self.spec.source_type().to_string(),
            skill_path,
            computed_hash: Some(hash),
            commit: self.id.commit().map(str::to_string),
            version,
            index_url,
            archive_sha256,
            oci_digest,
            digest: Some(manifest.digest.clone()),
            unsigned: signer.is_none(),
            signer,
            files: manifest
                .files
                .iter()
                .map(|f| (f.path.clone(), f.digest.clone()))
                .collect(),
            ..Entry::default()
        };
        Ok(Candidate {
            name,
            entry,
            files,
            faults,
        })
    }

    /// The artifact: an index entry's archive must be the one pinned (the HTTP source itself
    /// checks the bytes against the index before they are used); its sha256, the signatures
    /// the index lists, and the index's URL.
    async fn artifact(&self, root: &str, pin: Option<&Entry>) -> Result<Artifact, InstallError> {
        let refuse = |why: String| InstallError::Refused(vec![why]);
        #[allow(unused_mut)]
        let mut archive_sha256 = self.id.archive_sha256().map(str::to_string);
        let mut signatures: Vec<String> = Vec::new();
        let mut index_url = None;
        if self.spec.kind == SourceKind::WellKnown {
            let roots = self.src.list().await?;
            // `NAME@VERSION` is a version the source found by its version, never listed.
            if !root.contains('@') && !roots.iter().any(|r| r == root) {
                return Err(refuse(no_longer_listed(
                    root,
                    &self.spec.typed,
                    pin.and_then(|e| e.version.as_deref()),
                )));
            }
            let record = self.src.record(root).await?;
            if let (Some(want), Some(got)) = (
                pin.and_then(|e| e.archive_sha256.as_ref()),
                &record.artifact,
            ) && want != got
            {
                return Err(refuse(index_moved_on(
                    root,
                    &self.spec.typed,
                    pin.and_then(|e| e.version.as_deref()),
                    record.version.as_deref(),
                    got,
                    want,
                )));
            }
            archive_sha256 = record.artifact;
            signatures.extend(record.signatures);
            index_url = self.src.id().await?.index_url().map(str::to_string);
        }
        Ok(Artifact {
            archive_sha256,
            signatures,
            index_url,
        })
    }

    /// Adds the signatures the source keeps beside the skill (a git repository's `.minisig`
    /// files, detached files, a registry's, an OCI manifest's referrers); the OCI digest.
    async fn more_signatures(
        &self,
        root: &str,
        name: &str,
        signatures: &mut Vec<String>,
    ) -> Result<Option<String>, InstallError> {
        if self.spec.kind == SourceKind::Git {
            // The `.minisig` files the repository keeps beside the skill.
            signatures.extend(self.src.record(root).await.map_err(from_source)?.signatures);
        }
        signatures.extend(self.signature_files(root, name));
        if self.spec.kind == SourceKind::Registry
            && let Some((n, v)) = root.split_once('@')
        {
            let reg = self.registry_store().await?;
            if let Some(release) = reg
                .get(n, v)
                .await
                .map_err(|e| InstallError::Source(e.into()))?
            {
                signatures.extend(release.signatures.into_iter().map(|s| s.text));
            }
        }
        let mut oci_digest = None;
        if self.spec.kind == SourceKind::Oci {
            // The signatures attached to the manifest as referrers.
            signatures.extend(self.src.record(root).await?.signatures);
            oci_digest = self.src.id().await?.oci_digest().map(str::to_string);
        }
        Ok(oci_digest)
    }

    /// The skill digest (or the computed hash of a lockfile that has no digest) against the pin.
    fn check_pin(
        &self,
        name: &str,
        pin: Option<&Entry>,
        manifest: &Manifest,
        hash: &str,
    ) -> Result<(), InstallError> {
        let refuse = |why: String| InstallError::Refused(vec![why]);
        if let Some(e) = pin {
            let mismatch = match (&e.digest, &e.computed_hash) {
                (Some(d), _) if *d != manifest.digest => Some((d.clone(), manifest.digest.clone())),
                (None, Some(h)) if h != hash => {
                    Some((format!("computedHash:{h}"), format!("computedHash:{hash}")))
                }
                _ => None,
            };
            if let Some((want, got)) = mismatch {
                return Err(refuse(format!(
                    "{name}: {} gives {got}, the lockfile pins {want}",
                    self.spec.shown()
                )));
            }
        }
        Ok(())
    }

    /// The audit: what neither a signature vouches for nor a sandbox contains. High findings
    /// refuse the skill unless the policy only warns; medium ones are a warning.
    async fn audit(
        &self,
        opts: &Options,
        skill: &Skill,
        name: &str,
        warnings: &mut Vec<String>,
    ) -> Result<(), InstallError> {
        let refuse = |why: String| InstallError::Refused(vec![why]);
        let findings = skillcat_audit::audit(&*self.src, skill, &opts.audit_options)
            .await
            .map_err(from_source)?;
        let audit_hint = format!("`skillcat audit {} {name}` lists them", self.spec.typed);
        if let Some(high) = summary_at(&findings, Severity::High) {
            match opts.audit {
                Policy::Refuse => {
                    return Err(refuse(format!(
                        "{name}: the audit found {high}; {audit_hint}; pass --allow-findings (or set [install] audit = \"warn\") to install it anyway"
                    )));
                }
                Policy::Warn => warnings.push(format!(
                    "{name}: {} with {high}, as --allow-findings or [install] audit = \"warn\" allows; {audit_hint}",
                    if opts.dry_run { "would be installed" } else { "installed" }
                )),
            }
        } else if let Some(medium) = summary_at(&findings, Severity::Medium) {
            warnings.push(format!("{name}: the audit found {medium}; {audit_hint}"));
        }
        Ok(())
    }

    /// Detached signature files beside a local skill or an archive: `<skill folder>.minisig`,
    /// `<source>.minisig` and `<source>.<name>.minisig` (a git source's are in its
    /// [`record`](Source::record)).
    fn signature_files(&self, root: &str, name: &str) -> Vec<String> {
        let base = match &self.spec.path {
            Some(p) if matches!(self.spec.kind, SourceKind::Local | SourceKind::Archive) => {
                p.clone()
            }
            _ => return Vec::new(),
        };
        let base_str = base.display().to_string();
        let mut candidates = vec![
            PathBuf::from(format!("{base_str}.{name}{}", sign::SIGNATURE_SUFFIX)),
            sign::signature_path(&base),
        ];
        if !root.is_empty() {
            candidates.insert(0, sign::signature_path(&base.join(root)));
        }
        let mut out = Vec::new();
        for p in candidates {
            if let Ok(text) = std::fs::read_to_string(&p)
                && !out.contains(&text)
            {
                out.push(text);
            }
        }
        out
    }

    /// The signer's key id, when a signature verifies; a refusal when signatures are required
    /// and none verifies, when a signature fails against the keyring, or when the pinned
    /// signer did not sign.
    fn check_signature(
        &self,
        opts: &Options,
        name: &str,
        manifest: &Manifest,
        signatures: &[String],
        pin: Option<&Entry>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<String>, InstallError> {
        let scope = opts.scope.describe();
        let Some(keyring) = &opts.keyring else {
            if !signatures.is_empty() {
                warnings.push(format!(
                    "{name}: its signature was not checked (no keyring: --keyring FILE or keyring in skillcat.toml)"
                ));
            }
            return Ok(None);
        };
        let mut errors = Vec::new();
        for text in signatures {
            match sign::verify(manifest, text, keyring, name) {
                Ok(v) => {
                    if let Some(want) = pin.and_then(|e| e.signer.as_ref())
                        && !want.eq_ignore_ascii_case(&v.key_id)
                    {
                        errors.push(format!(
                            "signed by key {}, the lockfile pins key {want}",
                            v.key_id
                        ));
                        continue;
                    }
                    return Ok(Some(v.key_id));
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        if !errors.is_empty() {
            return Err(InstallError::Refused(vec![format!(
                "{name}: the signature is refused ({scope}): {}",
                errors.join("; ")
            )]));
        }
        if opts.require_signature {
            let keys: Vec<String> = keyring
                .keys()
                .iter()
                .map(|k| format!("{} ({})", k.id(), k.scopes().join(", ")))
                .collect();
            return Err(InstallError::Refused(vec![format!(
                "{name}: unsigned, and {scope} requires a signature by a key of the keyring: {}",
                if keys.is_empty() {
                    "(the keyring is empty)".to_string()
                } else {
                    keys.join(", ")
                }
            )]));
        }
        Ok(None)
    }
}

/// Why an index no longer gives the pinned skill `name`: the skill is gone from it. A served
/// registry drops a skill from its index when its last version is yanked.
fn no_longer_listed(name: &str, typed: &str, pinned: Option<&str>) -> String {
    let what = match pinned {
        Some(v) => format!("{name}@{v}"),
        None => name.to_string(),
    };
    format!(
        "{what}: {typed} no longer lists {name} (every version of it was yanked or removed from the server); \
         `skillcat remove {name}` takes it out of the lockfile, or add it from a source that has it"
    )
}

/// Why an index entry no longer gives the pinned archive. A registry's versions never change
/// content, so an index that offers another version than the pinned one no longer serves the
/// pinned version: below it, the pinned version was yanked (the index offers the highest one
/// left); above it, the index offers only its newest. The same version with another archive is
/// content replaced on the server.
fn index_moved_on(
    name: &str,
    typed: &str,
    pinned: Option<&str>,
    offered: Option<&str>,
    got: &str,
    want: &str,
) -> String {
    match (pinned, offered) {
        (Some(p), Some(o)) if p != o && is_lower(o, p) => format!(
            "{name}@{p} was yanked from {typed}: its index now offers {name}@{o}, the highest version left, \
             and no longer serves the pinned archive {want}; run `skillcat update {name} --allow-downgrade` \
             to move to {o}, or pin another version"
        ),
        (Some(p), Some(o)) if p != o => format!(
            "{name}@{p} is no longer served by {typed}: its index now offers {name}@{o} and not the pinned \
             archive {want} (the pinned version was yanked, or the index lists only the newest); \
             run `skillcat update {name}` to move to {o}, or pin another version"
        ),
        _ => format!("{name}: {typed} now serves the archive {got}, the lockfile pins {want}"),
    }
}

/// A warning for each name of `added` that renders like another installed name (the same
/// UTS #39 confusable skeleton): `pdf-fоrms`, with a Cyrillic `о`, beside `pdf-forms`.
fn look_alikes<'a>(added: &[String], installed: impl Iterator<Item = &'a String>) -> Vec<String> {
    use skillcat_core::lookalike::skeleton;
    let installed: Vec<(&String, String)> = installed.map(|n| (n, skeleton(n))).collect();
    let mut out = Vec::new();
    for name in added {
        let key = skeleton(name);
        for (other, other_key) in &installed {
            // A pair added together is told once.
            let told = added.contains(other) && other.as_str() < name.as_str();
            if *other != name && *other_key == key && !told {
                out.push(format!(
                    "{name:?} looks like {other:?}, also installed (confusable skeleton): \
                     check that each is the skill you meant"
                ));
            }
        }
    }
    out
}

/// Builds a plan's actions and changes from candidates.
struct Builder<'a> {
    opts: &'a Options,
    lockfile: Lockfile,
    before: Option<Vec<u8>>,
    lock: ScopeLock,
    warnings: Vec<String>,
    actions: Vec<Action>,
    changes: Vec<Change>,
}

impl<'a> Builder<'a> {
    fn new(
        opts: &'a Options,
        lockfile: Lockfile,
        before: Option<Vec<u8>>,
        lock: ScopeLock,
        warnings: Vec<String>,
    ) -> Self {
        Builder {
            opts,
            lockfile,
            before,
            lock,
            warnings,
            actions: Vec::new(),
            changes: Vec::new(),
        }
    }

    /// Plans `c` for `agents` (`copy`: `None` keeps the old entry's choice). `kept`: the
    /// canonical copy on disk already matches the entry (its files are not re-read).
    fn place(
        &mut self,
        mut c: Candidate,
        old: Option<Entry>,
        agents: &[&'static Agent],
        copy: Option<bool>,
        kept: Option<Installed>,
    ) -> Result<(), InstallError> {
        let scope = &self.opts.scope;
        let copy = copy.unwrap_or_else(|| old.as_ref().is_some_and(|e| e.copy));
        let t = Targets::of_entry(scope, &c.name, agents, old.as_ref());
        let mut refusals = Vec::new();
        let mut paths = Vec::new();
        let canonical_state = match &kept {
            Some(k) => Some(k.clone()),
            None => read_installed(&t.canonical, c.entry.digest.is_none())?,
        };
        let content_ok = canonical_state
            .as_ref()
            .is_some_and(|s| s.matches(&c.entry));
        if !content_ok {
            if let Some(state) = &canonical_state {
                let known = old.as_ref().is_some_and(|e| state.matches(e));
                if !known && !self.opts.force {
                    refusals.push(match &old {
                        Some(e) if e.has_pin() => format!(
                            "{}: {} is locally modified ({}); pass --force to overwrite it",
                            c.name,
                            scope.shown(&t.canonical),
                            state.drift(e).describe()
                        ),
                        _ => format!(
                            "{}: {} exists and skills-lock.json does not list it; pass --force to replace it",
                            c.name,
                            scope.shown(&t.canonical)
                        ),
                    });
                }
            }
            paths.push(scope.shown(&t.canonical));
            self.changes.push(Change {
                target: t.canonical.clone(),
                new: Some(NewItem::Dir(c.files.clone())),
            });
        }
        let files_for_copy = if copy && c.files.is_empty() {
            read_files(&t.canonical)?
        } else {
            c.files.clone()
        };
        for p in &t.agents {
            let meta = std::fs::symlink_metadata(p).ok();
            let want_link = link_text(p, &t.canonical);
            let fine = match &meta {
                None => false,
                Some(m) if copy => {
                    m.is_dir()
                        && content_ok
                        && read_installed(p, c.entry.digest.is_none())?
                            .is_some_and(|s| s.matches(&c.entry))
                }
                Some(m) => {
                    m.file_type().is_symlink()
                        && std::fs::read_link(p).is_ok_and(|t| t == want_link)
                }
            };
            if fine {
                continue;
            }
            if let Some(m) = &meta {
                let ours = if m.file_type().is_symlink() {
                    true
                } else {
                    old.as_ref()
                        .is_some_and(|e| e.copy && e.targets.iter().any(|s| *s == scope.shown(p)))
                };
                if !ours && !self.opts.force {
                    refusals.push(format!(
                        "{}: {} exists and is not a folder skillcat installed; pass --force to replace it",
                        c.name,
                        scope.shown(p)
                    ));
                }
            }
            paths.push(scope.shown(p));
            self.changes.push(Change {
                target: p.clone(),
                new: Some(if copy {
                    NewItem::Dir(files_for_copy.clone())
                } else {
                    NewItem::Link(want_link)
                }),
            });
        }
        // Agents' folders of the old entry no longer asked for.
        if let Some(e) = &old {
            self.unlink_old_agents(e, &c.name, &t, &mut paths);
        }
        refuse_if_any(refusals)?;
        let kind = match (content_ok, paths.is_empty()) {
            (_, true) => ActionKind::Unchanged,
            (false, _) if canonical_state.is_none() || old.is_none() => ActionKind::Install,
            (false, _) => ActionKind::Replace,
            (true, _) => ActionKind::Relink,
        };
        c.entry.agents = agents.iter().map(|a| a.id.to_string()).collect();
        c.entry.copy = copy && !t.agents.is_empty();
        c.entry.targets = t.shown(scope);
        settle_entry(&mut c.entry, old.as_ref(), kept.as_ref());
        self.lockfile.skills.insert(c.name.clone(), c.entry.clone());
        self.actions.push(Action {
            name: c.name,
            kind,
            old,
            new: Some(c.entry),
            paths,
        });
        Ok(())
    }

    /// The agents' folders of the old entry `e` no longer asked for, when skillcat made them:
    /// removed.
    fn unlink_old_agents(&mut self, e: &Entry, name: &str, t: &Targets, paths: &mut Vec<String>) {
        let scope = &self.opts.scope;
        let old_t = Targets::of(scope, name, &agents_of(e));
        for p in old_t.agents.iter().filter(|p| !t.agents.contains(p)) {
            let ours = match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => links_to(p, &t.canonical),
                Ok(m) if m.is_dir() => e.copy,
                _ => false,
            };
            if ours {
                paths.push(scope.shown(p));
                self.changes.push(Change {
                    target: p.clone(),
                    new: None,
                });
            }
        }
    }

    fn finish(self, write_lockfile: bool) -> Result<Plan, InstallError> {
        Ok(Plan {
            scope: self.opts.scope.clone(),
            _lock: self.lock,
            before: self.before,
            lockfile: self.lockfile,
            write_lockfile,
            actions: self.actions,
            changes: self.changes,
            warnings: self.warnings,
            notes: Vec::new(),
            left_out: Vec::new(),
            dry_run: self.opts.dry_run,
        })
    }
}

/// Every file of an installed folder, for copies of a skill kept as it is.
fn read_files(dir: &Path) -> Result<Vec<(String, Bytes, bool)>, InstallError> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    each_file(dir, |rel, path, meta| {
        if meta.is_file() {
            let bytes = std::fs::read(path).map_err(|e| InstallError::io(path, e))?;
            out.push((
                rel,
                Bytes::from(bytes),
                meta.permissions().mode() & 0o111 != 0,
            ));
        }
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f` with the relative path, the path and the metadata (not following links) of every
/// entry under `dir` that is not a folder, leaving out what every source leaves out (`.git/`,
/// `.DS_Store`).
fn each_file(
    dir: &Path,
    mut f: impl FnMut(String, &Path, &std::fs::Metadata) -> Result<(), InstallError>,
) -> Result<(), InstallError> {
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = stack.pop() {
        for e in std::fs::read_dir(&path).map_err(|e| InstallError::io(&path, e))? {
            let e = e.map_err(|err| InstallError::io(&path, err))?;
            let child = join_path(&rel, &e.file_name().to_string_lossy());
            if crate::path::is_ignored(&child) {
                continue;
            }
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).map_err(|err| InstallError::io(&p, err))?;
            if meta.is_dir() {
                stack.push((p, child));
            } else {
                f(child, &p, &meta)?;
            }
        }
    }
    Ok(())
}

/// A source's error as install reports it, by its kind: a program that failed (git) is
/// [`InstallError::Git`], what a repository holds and is refused [`InstallError::Refused`];
/// the rest as they are.
fn from_source(e: crate::Error) -> InstallError {
    use crate::ErrorKind;
    match e.kind() {
        ErrorKind::Tool => InstallError::Git(e.to_string()),
        ErrorKind::Refused => InstallError::Refused(vec![e.to_string()]),
        _ => InstallError::Source(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_error_is_said_by_its_kind_not_by_its_type() {
        use skillcat_sources::GitError;
        let failed = from_source(GitError::Failed("git: no answer within 5s".into()).into());
        assert!(
            matches!(&failed, InstallError::Git(m) if m == "git: no answer within 5s"),
            "{failed:?}"
        );
        let refused = from_source(GitError::Refused("the pinned commit is gone".into()).into());
        assert!(
            matches!(&refused, InstallError::Refused(m) if m == &["the pinned commit is gone"]),
            "{refused:?}"
        );
        let other = from_source(crate::Error::NotFound("x".into()));
        assert!(matches!(other, InstallError::Source(_)), "{other:?}");
    }

    #[test]
    fn links_are_relative_inside_one_tree() {
        assert_eq!(
            link_text(
                Path::new("/p/.claude/skills/a"),
                Path::new("/p/.agents/skills/a")
            ),
            Path::new("../../.agents/skills/a")
        );
        assert_eq!(
            link_text(Path::new("/c/skills/a"), Path::new("/h/.agents/skills/a")),
            Path::new("/h/.agents/skills/a")
        );
    }

    #[test]
    fn links_are_read_as_written() {
        assert_eq!(
            lexical(Path::new("/p/.claude/skills/../../.agents/skills/a")),
            Path::new("/p/.agents/skills/a")
        );
        assert_eq!(lexical(Path::new("/../a/./b")), Path::new("/a/b"));
        assert_eq!(lexical(Path::new("../a/..")), Path::new(".."));
        let dir = tempfile::tempdir().unwrap();
        let canonical = dir.path().join(".agents/skills/a");
        let claude = dir.path().join(".claude/skills");
        std::fs::create_dir_all(&claude).unwrap();
        let link = claude.join("a");
        // Dangling (the canonical folder is gone), still one of skillcat's.
        std::os::unix::fs::symlink("../../.agents/skills/a", &link).unwrap();
        assert!(links_to(&link, &canonical));
        assert!(!points_to(&link, &canonical));
        // A link of the user's to a folder of the same name elsewhere is not.
        let other = claude.join("b");
        std::os::unix::fs::symlink("../../mine/a", &other).unwrap();
        assert!(!links_to(&other, &canonical));
        assert!(!links_to(&claude, &canonical), "a folder is not a link");
    }

    #[test]
    fn an_index_that_moved_on_says_whether_the_pin_was_yanked() {
        let yanked = index_moved_on("ls", "http://h/", Some("1.2.0"), Some("1.1.0"), "g", "w");
        assert!(
            yanked.starts_with("ls@1.2.0 was yanked from http://h/"),
            "{yanked}"
        );
        assert!(yanked.contains("--allow-downgrade"), "{yanked}");
        let newer = index_moved_on("ls", "http://h/", Some("1.2.0"), Some("1.3.0"), "g", "w");
        assert!(newer.contains("no longer served") && newer.contains("`skillcat update ls`"));
        let replaced = index_moved_on("ls", "http://h/", Some("1.2.0"), Some("1.2.0"), "g", "w");
        assert_eq!(
            replaced,
            "ls: http://h/ now serves the archive g, the lockfile pins w"
        );
    }

    #[test]
    fn versions() {
        assert!(is_lower("1.0.0", "1.1.0"));
        assert!(!is_lower("1.2.0", "1.1.0"));
        assert!(!is_lower("abc", "1.1.0"));
        assert!(is_lower("v0.9.0", "1.0.0"));
    }
}
