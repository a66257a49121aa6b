//! `skillcat add`, `install`, `update`, `remove` and `status`: skills placed where agents look
//! for them, pinned by `skills-lock.json` (see `skillcat::install`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::json;
use skillcat::install::{
    Action, ActionKind, Entry, InstallError, Options, Plan, Progress, Report, Scope, SkillStatus,
    parse_agents,
};

use super::{CliError, CliResult, ExitStatus, Format, Globals};

/// Where to install: the project (default) or the user's home.
#[derive(Debug, clap::Args)]
pub struct ScopeArgs {
    /// The user scope: ~/.agents/skills and each agent's folder in your home, pinned by
    /// ~/.agents/skills-lock.json (default: the project, from its root).
    #[arg(long, short = 'g')]
    global: bool,
}

/// How what is installed is verified.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The keyring of trusted signing keys (default: `keyring` in skillcat.toml, else
    /// ~/.config/skillcat/keyring.toml when it exists, as `trust add` writes it).
    #[arg(long, value_name = "FILE")]
    keyring: Option<PathBuf>,
    /// Refuse a skill no key of the keyring signed (also `[install] require_signatures`).
    #[arg(long)]
    require_signature: bool,
    /// Install a skill the audit finds a high finding in (hidden Unicode, a secret, …),
    /// warning instead of refusing (also `[install] audit = "warn"`; `skillcat audit` lists
    /// the findings).
    #[arg(long)]
    allow_findings: bool,
}

/// The scope and the verification, for the commands that fetch.
#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    #[command(flatten)]
    verify: VerifyArgs,
}

/// `skillcat add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// A directory, a .tar.gz or .zip, a registry (.db), an http(s):// index, or a git
    /// repository (git+https://host/owner/repo[#ref][:path], git+file://…, git://…, owner/repo).
    source: String,
    /// The skills to install (default: every skill of the source); NAME@VERSION in a registry.
    names: Vec<String>,
    /// Install the skills of this plugin of a Claude Code plugin marketplace (a source with
    /// .claude-plugin/marketplace.json); NAMEs then pick among them.
    #[arg(long, value_name = "NAME")]
    plugin: Option<String>,
    #[command(flatten)]
    common: CommonArgs,
    /// The agents to install for: ids separated by commas, or `all` (default: those whose
    /// folder the project already has, e.g. .claude/). The canonical copy in .agents/skills
    /// serves Codex, Cursor, Gemini CLI, GitHub Copilot and OpenCode.
    #[arg(long, value_name = "A,B|all")]
    agent: Option<String>,
    /// Copy the skill into each agent's folder instead of linking to the canonical copy.
    #[arg(long)]
    copy: bool,
    /// Install skills that fail validation, and replace folders that were modified locally or
    /// that the lockfile does not list.
    #[arg(long)]
    force: bool,
    /// Fetch and verify, then print what would be installed and linked and how skills-lock.json
    /// would change; change nothing in the project.
    #[arg(long)]
    dry_run: bool,
}

/// `skillcat install`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Install exactly what the lockfile pins and never write it; fail on any mismatch, a
    /// missing pin, or a source that no longer has the pinned version (for CI).
    #[arg(long)]
    frozen: bool,
    #[command(flatten)]
    common: CommonArgs,
    /// Replace locally modified skills with their pinned copies.
    #[arg(long)]
    force: bool,
}

/// `skillcat update`.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// The skills to update (default: all of the lockfile).
    names: Vec<String>,
    /// Print the plan (old → new version and digest, signer, the folders replaced and how
    /// skills-lock.json would change) and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Accept a lower version than the one installed.
    #[arg(long)]
    allow_downgrade: bool,
    /// Accept a new version signed by another key than the one pinned, or unsigned.
    #[arg(long)]
    allow_signer_change: bool,
    #[command(flatten)]
    common: CommonArgs,
    /// Overwrite locally modified skills.
    #[arg(long)]
    force: bool,
}

/// `skillcat remove`.
#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// The skills to remove.
    #[arg(required = true)]
    names: Vec<String>,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Print the folders and links that would be removed and how skills-lock.json would
    /// change; change nothing.
    #[arg(long)]
    dry_run: bool,
}

/// `skillcat status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Exit 1 when a skill was modified, is missing, is not in the lockfile, or an agent's
    /// folder no longer points at it.
    #[arg(long)]
    check: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// The scope a command works in.
fn scope(args: &ScopeArgs, g: &Globals) -> Result<Scope, CliError> {
    let env = g.env.agents();
    if args.global {
        return Scope::user(env).map_err(fail);
    }
    let cwd = g.env.cwd().map_err(super::context_error)?;
    Ok(Scope::find_project(cwd, env))
}

/// The scope, the options and the progress bar of a command that fetches and verifies.
fn prepare(
    common: &CommonArgs,
    force: bool,
    dry_run: bool,
    g: &Globals,
) -> Result<(Scope, Options, Bar), CliError> {
    let scope = scope(&common.scope, g)?;
    let bar = Bar::default();
    let mut opts = options(scope.clone(), &common.verify, force, &bar, g)?;
    opts.dry_run = dry_run;
    Ok((scope, opts, bar))
}

/// The options of a command that fetches and verifies.
fn options(
    scope: Scope,
    verify: &VerifyArgs,
    force: bool,
    bar: &Bar,
    g: &Globals,
) -> Result<Options, CliError> {
    // The configuration's note, once, before anything is fetched.
    super::configuration(g)?;
    let request = skillcat::context::InstallRequest {
        keyring: verify.keyring.clone(),
        require_signature: verify.require_signature,
        allow_findings: verify.allow_findings,
        force,
    };
    let mut opts = g
        .install_options(scope, &request)
        .map_err(super::context_error)?;
    opts.progress = bar.callback();
    Ok(opts)
}

/// An install error as the command line says it: each of its lines an `Error:` line, and that
/// nothing was changed when it is a refusal (exit 2 for usage, 1 for refusals and failures).
fn fail(e: InstallError) -> CliError {
    let usage = e.is_usage();
    let message = match e {
        // A source's error of one line is kept whole: the printer says its causes and its
        // kind's advice (how to trust a certificate authority).
        InstallError::Source(e) if !e.to_string().contains('\n') => super::Message::caused(None, e),
        e => {
            let mut text = e.to_string().lines().collect::<Vec<_>>().join("\nError: ");
            if matches!(e, InstallError::Refused(_)) {
                text.push_str("\nNothing was changed.");
            }
            text.into()
        }
    };
    if usage {
        CliError::Usage(message)
    } else {
        CliError::Failed(message)
    }
}

/// A progress bar on a terminal while several skills are resolved.
#[derive(Default)]
struct Bar {
    bar: Arc<Mutex<Option<indicatif::ProgressBar>>>,
}

impl Bar {
    fn callback(&self) -> Option<Arc<dyn Fn(Progress) + Send + Sync>> {
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) || super::quiet() {
            return None;
        }
        let slot = Arc::clone(&self.bar);
        Some(Arc::new(move |p: Progress| {
            if p.total < 2 {
                return;
            }
            let mut guard = slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let bar = guard.get_or_insert_with(|| {
                let b = indicatif::ProgressBar::new(p.total as u64);
                b.set_style(
                    indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                        .expect("a valid template"),
                );
                b
            });
            bar.set_position(p.done as u64);
            bar.set_message(p.name);
        }))
    }

    fn done(&self) {
        if let Some(b) = self
            .bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            b.finish_and_clear();
        }
    }
}

/// Prints a plan's warnings and notes.
fn print_warnings(plan: &Plan) {
    for w in plan.warnings() {
        note!("warning: {w}");
    }
    for n in plan.notes() {
        err!("{n}");
    }
}

/// `sha256:0123456789ab` (the first 12 hex digits), for lines people read.
fn short(digest: &str) -> String {
    match digest.split_once(':') {
        Some((alg, hex)) => format!("{alg}:{}", &hex[..hex.len().min(12)]),
        None => digest.chars().take(12).collect(),
    }
}

fn version_of(e: &Entry) -> &str {
    e.version.as_deref().unwrap_or("-")
}

fn signer_of(e: &Entry) -> String {
    match &e.signer {
        Some(k) => format!("signed by {k}"),
        None => "unsigned".into(),
    }
}

fn pin_of(e: &Entry) -> String {
    short(&e.pin_shown())
}

/// One line per action that changes something: what was done or, in a dry run, what would be.
fn print_actions(actions: &[Action], scope: &Scope, dry: bool) {
    let verb = |done: &'static str, planned: &'static str| if dry { planned } else { done };
    let mut unchanged = 0;
    for a in actions {
        let new = a.new.as_ref();
        match a.kind {
            ActionKind::Unchanged => unchanged += 1,
            ActionKind::Install => {
                let e = new.expect("an install has an entry");
                out!(
                    "{} {} {} {} ({}) → {}",
                    verb("installed", "would install"),
                    a.name,
                    version_of(e),
                    pin_of(e),
                    signer_of(e),
                    a.paths.join(", ")
                );
            }
            ActionKind::Replace
                if a.old.as_ref().map(Entry::pin_shown) == new.map(Entry::pin_shown) =>
            {
                let e = new.expect("a replacement has an entry");
                out!(
                    "{} {} {} {} in {}",
                    verb("restored", "would restore"),
                    a.name,
                    version_of(e),
                    pin_of(e),
                    a.paths.join(", ")
                );
            }
            ActionKind::Replace => {
                let e = new.expect("a replacement has an entry");
                let from = a
                    .old
                    .as_ref()
                    .map(|o| format!("{} {}", version_of(o), pin_of(o)))
                    .unwrap_or_default();
                out!(
                    "{} {} {from} → {} {} ({}) in {}",
                    verb("replaced", "would replace"),
                    a.name,
                    version_of(e),
                    pin_of(e),
                    signer_of(e),
                    a.paths.join(", ")
                );
            }
            ActionKind::Relink => out!(
                "{} {} → {}",
                verb("linked", "would link"),
                a.name,
                a.paths.join(", ")
            ),
            ActionKind::Remove => {
                let verb = verb("removed", "would remove");
                let canonical = scope.shown(&scope.skills_dir().join(&a.name));
                if a.paths.is_empty() {
                    out!(
                        "{verb} {} (from the lockfile; none of its folders was there)",
                        a.name
                    );
                } else if !a.paths.contains(&canonical) {
                    // The canonical folder was deleted by hand: what is left goes.
                    out!(
                        "{verb} {} ({}; {canonical} was already gone)",
                        a.name,
                        a.paths.join(", ")
                    );
                } else {
                    out!("{verb} {} ({})", a.name, a.paths.join(", "));
                }
            }
        }
    }
    if unchanged > 0 {
        out!(
            "{unchanged} skill{} already up to date",
            if unchanged == 1 { "" } else { "s" }
        );
    }
}

/// What an applied plan did.
fn print_report(report: &Report, scope: &Scope) {
    print_actions(&report.actions, scope, false);
    if report.lockfile_written {
        out!("wrote {}", scope.shown(&scope.lockfile()));
    }
}

/// How the lockfile would change, entry by entry: `+` added, `-` removed, `~` changed (old →
/// new version and pin, or the fields that change).
fn print_lockfile_change(plan: &Plan, scope: &Scope) {
    let file = scope.shown(&scope.lockfile());
    if !plan.writes_lockfile() {
        out!("{file} would not change");
        return;
    }
    out!("{file} would change:");
    let mut any = false;
    for a in plan.actions() {
        match (&a.old, &a.new) {
            (None, Some(n)) => out!("  + {} {} {}", a.name, version_of(n), pin_of(n)),
            (Some(o), None) => out!("  - {} {} {}", a.name, version_of(o), pin_of(o)),
            (Some(o), Some(n)) if o != n => {
                if o.pin_shown() != n.pin_shown() || o.version != n.version {
                    out!(
                        "  ~ {} {} {} → {} {}",
                        a.name,
                        version_of(o),
                        pin_of(o),
                        version_of(n),
                        pin_of(n)
                    );
                } else {
                    out!("  ~ {} ({})", a.name, o.differences(n).join(", "));
                }
            }
            _ => continue,
        }
        any = true;
    }
    if !any {
        out!("  (the same entries, rewritten as skillcat writes the file)");
    }
}

/// A dry run's plan: its warnings, what it would do, the lockfile's change; nothing applied.
fn print_dry_run(plan: &Plan, scope: &Scope, actions: impl FnOnce(&[Action])) {
    print_warnings(plan);
    actions(plan.actions());
    print_lockfile_change(plan, scope);
    out!("dry run: nothing was changed");
}

async fn run_plan(plan: Result<Plan, InstallError>, bar: &Bar, scope: &Scope) -> CliResult {
    bar.done();
    let plan = match plan {
        Ok(p) => p,
        Err(e) => return Err(fail(e)),
    };
    print_warnings(&plan);
    match plan.apply().await {
        Ok(report) => {
            print_report(&report, scope);
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(fail(e)),
    }
}

/// `skillcat add SOURCE [NAME...] [--dry-run]`
pub async fn add(a: AddArgs, g: &Globals) -> CliResult {
    let agents = match a.agent.as_deref().map(parse_agents).transpose() {
        Ok(x) => x,
        Err(e) => return Err(fail(e)),
    };
    let (scope, opts, bar) = prepare(&a.common, a.force, a.dry_run, g)?;
    let plan = Plan::add_from_plugin(
        &opts,
        &a.source,
        a.plugin.as_deref(),
        &a.names,
        agents.as_deref(),
        a.copy,
    )
    .await;
    if !a.dry_run {
        return run_plan(plan, &bar, &scope).await;
    }
    bar.done();
    let plan = plan.map_err(fail)?;
    print_dry_run(&plan, &scope, |actions| {
        print_actions(actions, &scope, true)
    });
    Ok(ExitStatus::Success)
}

/// `skillcat install [--frozen]`
pub async fn install(a: InstallArgs, g: &Globals) -> CliResult {
    let (scope, opts, bar) = prepare(&a.common, a.force, false, g)?;
    run_plan(Plan::install(&opts, a.frozen).await, &bar, &scope).await
}

/// `skillcat update [NAME...] [--dry-run]`
pub async fn update(a: UpdateArgs, g: &Globals) -> CliResult {
    let (scope, opts, bar) = prepare(&a.common, a.force, a.dry_run, g)?;
    let plan = Plan::update(&opts, &a.names, a.allow_downgrade, a.allow_signer_change).await;
    if !a.dry_run {
        return run_plan(plan, &bar, &scope).await;
    }
    bar.done();
    let plan = plan.map_err(fail)?;
    print_dry_run(&plan, &scope, |actions| {
        for a in actions {
            print_update_line(a);
            if a.kind != ActionKind::Unchanged && !a.paths.is_empty() {
                out!("  would change {}", a.paths.join(", "));
            }
        }
    });
    Ok(ExitStatus::Success)
}

fn print_update_line(a: &Action) {
    let (Some(old), Some(new)) = (&a.old, &a.new) else {
        return;
    };
    if a.kind == ActionKind::Unchanged || old.pin_shown() == new.pin_shown() {
        out!(
            "{}: up to date ({} {})",
            a.name,
            version_of(old),
            pin_of(old)
        );
        return;
    }
    let signer = match (&old.signer, &new.signer) {
        (Some(o), Some(n)) => format!("signer {o} → {n}"),
        (None, Some(n)) => format!("signer (unsigned) → {n}"),
        (Some(o), None) => format!("signer {o} → (unsigned)"),
        (None, None) => "unsigned".into(),
    };
    out!(
        "{}: {} {} → {} {}, {signer}",
        a.name,
        version_of(old),
        pin_of(old),
        version_of(new),
        pin_of(new)
    );
}

/// `skillcat remove NAME... [--dry-run]`
pub async fn remove(a: RemoveArgs, g: &Globals) -> CliResult {
    let scope = scope(&a.scope, g)?;
    let mut opts = Options::new(scope.clone());
    opts.dry_run = a.dry_run;
    let plan = Plan::remove(&opts, &a.names).await;
    if !a.dry_run {
        return run_plan(plan, &Bar::default(), &scope).await;
    }
    let plan = plan.map_err(fail)?;
    print_dry_run(&plan, &scope, |actions| {
        print_actions(actions, &scope, true)
    });
    Ok(ExitStatus::Success)
}

fn state_of(s: &SkillStatus) -> &'static str {
    if s.entry.is_none() {
        "untracked"
    } else if !s.present {
        "missing"
    } else if s.drift.is_some() {
        "modified"
    } else if !s.broken_targets.is_empty() {
        "broken-link"
    } else {
        "ok"
    }
}

/// `skillcat status [--check] [--format json]`
pub async fn status(a: StatusArgs, g: &Globals) -> CliResult {
    let scope = scope(&a.scope, g)?;
    let all = match skillcat::install::status(&scope).await {
        Ok(s) => s,
        Err(e) => return Err(fail(e)),
    };
    match a.format {
        Format::Json => {
            let items: Vec<_> = all.iter().map(status_json).collect();
            out!("{}", serde_json::to_string_pretty(&items).expect("JSON"));
        }
        Format::Text => {
            if all.is_empty() {
                out!("no skills installed ({})", scope.describe());
            } else {
                print_status_table(&all, &scope);
            }
        }
    }
    if a.check && all.iter().any(SkillStatus::is_drift) {
        let n = all.iter().filter(|s| s.is_drift()).count();
        err!(
            "{n} skill{} the lockfile pins",
            if n == 1 {
                " differs from what"
            } else {
                "s differ from what"
            }
        );
        return Ok(ExitStatus::Faults);
    }
    Ok(ExitStatus::Success)
}

/// The columns of `status`, after a header row.
const STATUS_HEADER: [&str; 6] = ["NAME", "STATE", "VERSION", "DIGEST", "SOURCE", "SIGNER"];

/// One row of `status`: the skill, its state, and what the lockfile pins.
fn status_row(s: &SkillStatus) -> [String; 6] {
    let state = state_of(s).to_string();
    let Some(e) = &s.entry else {
        return [
            s.name.clone(),
            state,
            "-".into(),
            s.digest.as_deref().map(short).unwrap_or_default(),
            "(a folder skills-lock.json does not list)".into(),
            "-".into(),
        ];
    };
    let mut pin = String::new();
    if let Some(c) = &e.commit {
        pin = format!(" @ {}", &c[..c.len().min(12)]);
    } else if let Some(a) = &e.archive_sha256 {
        pin = format!(" ({})", short(a));
    }
    [
        s.name.clone(),
        state,
        version_of(e).to_string(),
        pin_of(e),
        format!("{} {}{pin}", e.source_type, e.source),
        signer_of(e),
    ]
}

/// Every skill's row under the header, the columns aligned, each followed by what is wrong
/// with it.
fn print_status_table(all: &[SkillStatus], scope: &Scope) {
    let rows: Vec<[String; 6]> = all.iter().map(status_row).collect();
    let mut widths = STATUS_HEADER.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let pad = w - cell.chars().count();
                text.push_str(cell);
                text.push_str(&" ".repeat(pad + 2));
            }
        }
        out!("{text}");
    };
    line(&STATUS_HEADER);
    for (s, row) in all.iter().zip(&rows) {
        line(&row.each_ref().map(String::as_str));
        print_status_details(s, scope);
    }
}

/// What is wrong with one skill, a line each under its row.
fn print_status_details(s: &SkillStatus, scope: &Scope) {
    let Some(e) = &s.entry else {
        return;
    };
    if !s.present {
        let canonical = scope.shown(&scope.skills_dir().join(&s.name));
        if s.left_targets.is_empty() {
            out!("  missing: the folder {canonical} is gone (`skillcat install` puts it back)");
        } else {
            let mut folders: Vec<String> = s
                .left_targets
                .iter()
                .map(|t| {
                    std::path::Path::new(t)
                        .parent()
                        .map_or_else(|| t.clone(), |p| p.display().to_string())
                })
                .collect();
            folders.dedup();
            out!(
                "  missing: the folder {canonical} is gone; {} left in {} (`skillcat install` puts it back, `skillcat remove {}` removes what is left)",
                if e.copy { "copies" } else { "links" },
                folders.join(", "),
                s.name
            );
        }
        for t in &s.broken_targets {
            out!("  not skillcat's: {t} (left as it is)");
        }
        return;
    }
    if let Some(d) = &s.drift {
        if d.unknown {
            out!("  files differ from the pinned hash (the lockfile lists no files)");
        }
        for (what, list) in [
            ("changed", &d.changed),
            ("added", &d.added),
            ("removed", &d.removed),
        ] {
            for p in list {
                out!("  {what}: {p}");
            }
        }
    }
    for t in &s.broken_targets {
        out!("  not linked: {t}");
    }
}

fn status_json(s: &SkillStatus) -> serde_json::Value {
    let e = s.entry.as_ref();
    json!({
        "name": s.name,
        "state": state_of(s),
        "version": e.and_then(|e| e.version.clone()),
        "digest": s.digest,
        "pinned": e.map(Entry::pin_shown),
        "source": e.map(|e| e.source.clone()),
        "sourceType": e.map(|e| e.source_type.clone()),
        "commit": e.and_then(|e| e.commit.clone()),
        "archiveSha256": e.and_then(|e| e.archive_sha256.clone()),
        "signer": e.and_then(|e| e.signer.clone()),
        "targets": e.map(|e| e.targets.clone()).unwrap_or_default(),
        "drift": s.drift.as_ref().map(|d| json!({
            "changed": d.changed, "added": d.added, "removed": d.removed, "unknown": d.unknown,
        })),
        "brokenTargets": s.broken_targets,
        "leftTargets": s.left_targets,
    })
}
