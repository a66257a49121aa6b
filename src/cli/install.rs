//! `skillcat add`, `install`, `update`, `remove` and `status`: skills placed where agents look
//! for them, pinned by `skills-lock.json` (see `skillcat::install`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use skillcat::install::{
    InstallError, Options, Plan, Progress, Scope, SkillStatus, action_lines, drift_summary,
    parse_agents, status_table, update_lines,
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
    /// Output format (json: each skill's action, and each skill left out as invalid with its
    /// faults).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Add a yanked version asked for as NAME@VERSION (refused without it; a lockfile that
    /// pins a yanked version restores it without this).
    #[arg(long)]
    allow_yanked: bool,
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
                super::progress_bar(p.total, 2, "{bar:30} {pos}/{len} {msg}")
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

/// Prints lines a library operation said, on stdout.
fn print_lines(lines: impl IntoIterator<Item = String>) {
    for line in lines {
        out!("{line}");
    }
}

/// What a dry run says each skill would undergo.
type DryRun = fn(&Plan, &Scope) -> Vec<String>;

/// Applies a plan and prints what it did; or, with `dry`, prints what it would do and how the
/// lockfile would change, and applies nothing.
async fn run_plan(
    plan: Result<Plan, InstallError>,
    bar: &Bar,
    scope: &Scope,
    dry: Option<DryRun>,
) -> CliResult {
    bar.done();
    let plan = plan.map_err(fail)?;
    print_warnings(&plan);
    let total = plan.actions().len() + plan.left_out().len();
    if let Some(lines) = dry {
        print_lines(lines(&plan, scope));
        print_lines(plan.lockfile_change_lines(scope));
        out!("dry run: nothing was changed");
        return Ok(left_out(plan.left_out(), total, true));
    }
    let report = plan.apply().await.map_err(fail)?;
    print_lines(report.lines(scope));
    Ok(left_out(&report.left_out, total, false))
}

/// Names each skill `add` left out as invalid with its faults, on stderr, then how many; exit
/// 1 when any was (so that CI notices), else 0.
fn left_out(left: &[skillcat::install::LeftOut], total: usize, dry: bool) -> ExitStatus {
    if left.is_empty() {
        return ExitStatus::Success;
    }
    for l in left {
        err!(
            "Error: {}: left out, invalid: {}",
            super::shown(&l.location),
            super::shown(&l.faults.join("; "))
        );
    }
    err!(
        "{} of {total} skills left out as invalid ({}); fix them, or pass --force to install \
         the invalid skills anyway",
        left.len(),
        if dry {
            "the others would be installed"
        } else {
            "the others were installed"
        }
    );
    ExitStatus::Faults
}

/// A dry run of `add` or `remove`: a line per action.
fn would(plan: &Plan, scope: &Scope) -> Vec<String> {
    action_lines(plan.actions(), scope, true)
}

/// `skillcat add SOURCE [NAME...] [--dry-run]`
pub async fn add(a: AddArgs, g: &Globals) -> CliResult {
    let agents = match a.agent.as_deref().map(parse_agents).transpose() {
        Ok(x) => x,
        Err(e) => return Err(fail(e)),
    };
    let (scope, mut opts, bar) = prepare(&a.common, a.force, a.dry_run, g)?;
    opts.allow_yanked = a.allow_yanked;
    let plan = Plan::add_from_plugin(
        &opts,
        &a.source,
        a.plugin.as_deref(),
        &a.names,
        agents.as_deref(),
        a.copy,
    )
    .await;
    if a.format == Format::Json {
        return add_json(plan, &bar, a.dry_run).await;
    }
    run_plan(plan, &bar, &scope, a.dry_run.then_some(would as DryRun)).await
}

/// `add --format json`: [`run_plan`] with the report as JSON on stdout.
async fn add_json(plan: Result<Plan, InstallError>, bar: &Bar, dry: bool) -> CliResult {
    use skillcat::install::AddView;
    bar.done();
    let plan = plan.map_err(fail)?;
    print_warnings(&plan);
    let total = plan.actions().len() + plan.left_out().len();
    let json = |v: AddView<'_>| serde_json::to_string_pretty(&v).expect("JSON");
    if dry {
        out!(
            "{}",
            json(AddView::new(plan.actions(), plan.left_out(), true))
        );
        return Ok(left_out(plan.left_out(), total, true));
    }
    let report = plan.apply().await.map_err(fail)?;
    out!(
        "{}",
        json(AddView::new(&report.actions, &report.left_out, false))
    );
    Ok(left_out(&report.left_out, total, false))
}

/// `skillcat install [--frozen]`
pub async fn install(a: InstallArgs, g: &Globals) -> CliResult {
    let (scope, opts, bar) = prepare(&a.common, a.force, false, g)?;
    run_plan(Plan::install(&opts, a.frozen).await, &bar, &scope, None).await
}

/// `skillcat update [NAME...] [--dry-run]`
pub async fn update(a: UpdateArgs, g: &Globals) -> CliResult {
    let (scope, opts, bar) = prepare(&a.common, a.force, a.dry_run, g)?;
    let plan = Plan::update(&opts, &a.names, a.allow_downgrade, a.allow_signer_change).await;
    let dry: DryRun = |plan, _| update_lines(plan.actions());
    run_plan(plan, &bar, &scope, a.dry_run.then_some(dry)).await
}

/// `skillcat remove NAME... [--dry-run]`
pub async fn remove(a: RemoveArgs, g: &Globals) -> CliResult {
    let scope = scope(&a.scope, g)?;
    let mut opts = Options::new(scope.clone());
    opts.dry_run = a.dry_run;
    let plan = Plan::remove(&opts, &a.names).await;
    let dry = a.dry_run.then_some(would as DryRun);
    run_plan(plan, &Bar::default(), &scope, dry).await
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
            let items: Vec<_> = all.iter().map(SkillStatus::view).collect();
            out!("{}", serde_json::to_string_pretty(&items).expect("JSON"));
        }
        Format::Text => {
            if all.is_empty() {
                out!("no skills installed ({})", scope.describe());
            } else {
                print_lines(status_table(&all, &scope));
            }
        }
    }
    if a.check
        && let Some(said) = drift_summary(&all)
    {
        err!("{said}");
        return Ok(ExitStatus::Faults);
    }
    Ok(ExitStatus::Success)
}
