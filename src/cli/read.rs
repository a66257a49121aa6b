//! Read-side commands: validate, properties, prompt, list, show, read. Each opens with
//! [`skillcat::ops::read`], which does the work, and prints what it answers.

use std::io::Write;
use std::sync::Arc;

use skillcat::document::{Fault, Skill};
use skillcat::ops::matching::Candidate;
use skillcat::ops::read::{
    FindError, OpenError, PromptIssue, PropertiesError, ReadError, refusal_message,
};
use skillcat::prompt::{PromptFormat, PromptOptions};
use skillcat::source::validate::Report;
use skillcat::source::{self, Detail, Discovery, RootFault, Source};

use super::{CliError, CliResult, ExitStatus, Format, Globals, PromptFormatArg, quiet, shown};

pub(super) use skillcat::ops::read::Opened;

/// Opens and reads what a command line names, documents and file lists (see
/// [`open_and_discover_with`]).
pub(super) async fn open_and_discover(arg: &str, g: &Globals) -> Result<Opened, CliError> {
    open_and_discover_with(arg, Detail::Files, g).await
}

/// Opens and reads what a command line names, as much of each skill as `detail` says
/// ([`skillcat::ops::read::open`]). The source's warnings are printed, errors returned.
pub(super) async fn open_and_discover_with(
    arg: &str,
    detail: Detail,
    g: &Globals,
) -> Result<Opened, CliError> {
    let opened = skillcat::ops::read::open(arg, detail, &g.open)
        .await
        .map_err(open_error)?;
    print_warnings(&opened.found);
    Ok(opened)
}

/// A discovery that failed: read, but nothing in it usable, is a fault of what was read (1),
/// not of reading it (2); so is a server whose certificate does not verify (it answered, and
/// what it is cannot be trusted).
pub(super) fn discover_error(e: skillcat::Error) -> CliError {
    match e {
        skillcat::Error::NothingUsable { .. } | skillcat::Error::Certificate { .. } => {
            failed!(cause = e)
        }
        _ => usage!(cause = e),
    }
}

/// The exit code and words of an argument that could not be opened: a regular file that is no
/// archive nor registry is not a skill directory (1, as `validate` says of it), a skill held
/// at another version only (1, the source's warnings printed first), no such skill (1).
fn open_error(e: OpenError) -> CliError {
    match e {
        OpenError::Discover(e) => discover_error(e),
        OpenError::NotASkill { .. } | OpenError::NotFound(_) => failed!("{e}"),
        OpenError::OtherVersion { ref warnings, .. } => {
            warnings.iter().for_each(|w| note!("warning: {}", shown(w)));
            failed!("{e}")
        }
        e => usage!("{e}"),
    }
}

/// [`open_for`] when a skill is named, else the whole source ([`open_and_discover_with`]).
pub(super) async fn open_maybe_for<'a>(
    arg: &str,
    wanted: Option<&'a str>,
    detail: Detail,
    g: &Globals,
) -> Result<(Opened, Option<&'a str>), CliError> {
    match wanted {
        Some(w) => open_for(arg, w, detail, g).await.map(|(o, n)| (o, Some(n))),
        None => open_and_discover_with(arg, detail, g)
            .await
            .map(|o| (o, None)),
    }
}

/// Opens what `arg` names for the skill `wanted` (`NAME` or `NAME@VERSION`), as
/// [`skillcat::ops::read::open_named`] reads it; its warnings printed. Returns the opened
/// source and the name alone.
pub(super) async fn open_for<'a>(
    arg: &str,
    wanted: &'a str,
    detail: Detail,
    g: &Globals,
) -> Result<(Opened, &'a str), CliError> {
    let (opened, name) = skillcat::ops::read::open_named(arg, wanted, detail, &g.open)
        .await
        .map_err(open_error)?;
    print_warnings(&opened.found);
    Ok((opened, name))
}

/// A discovery's warnings (a stale cached index, say) on stderr, `warning: …` each, with
/// control characters escaped (the text may come from a server).
pub(super) fn print_warnings(found: &Discovery) {
    for w in &found.warnings {
        note!("warning: {}", shown(w));
    }
}

/// Prints each report the reference's way: valid skills on stdout, failures on stderr, in order.
/// Runs of stdout lines are written at once (2,000 skills are not 2,000 system calls).
fn print_text_reports(reports: &[Report]) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for r in reports {
        if r.faults.is_empty() {
            let _ = writeln!(out, "Valid skill: {}", r.path);
        } else {
            let _ = out.flush();
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "Validation failed for {}:", r.path);
            for f in &r.faults {
                let _ = writeln!(err, "  - {}", f.message());
                if let Some(hint) = hint_lines(f) {
                    let _ = write!(err, "{hint}");
                }
            }
        }
        if !r.warnings.is_empty() && !quiet() {
            // Said after the verdict, on stderr: a warning never changes it (and `-q` keeps
            // stderr to errors).
            let _ = out.flush();
            let mut err = std::io::stderr().lock();
            for w in &r.warnings {
                let _ = writeln!(
                    err,
                    "warning: {}: {} [{}]",
                    r.path,
                    shown(w.message()),
                    w.kind()
                );
                if let Some(hint) = hint_lines(w) {
                    let _ = write!(err, "{hint}");
                }
            }
        }
    }
    let _ = out.flush();
}

/// `skillcat validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Skill directories, SKILL.md files, directories of skills or archives.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Admit an extension field in the frontmatter (repeatable).
    #[arg(long = "allow-field", value_name = "NAME")]
    pub allow_field: Vec<String>,
}

/// `skillcat properties`.
#[derive(Debug, clap::Args)]
pub struct PropertiesArgs {
    /// A skill directory or its SKILL.md.
    pub path: String,
}

/// `skillcat prompt`.
#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    /// Skill directories, directories of skills, or any other source (none: the configured
    /// catalog from --config, ./skillcat.toml or the defaults, within its [prompt] budget).
    #[arg(required = false)]
    pub paths: Vec<String>,
    /// Rendering.
    #[arg(long, value_enum, default_value_t)]
    pub format: PromptFormatArg,
    /// Maximum characters of the block; over it, descriptions are shortened (never below
    /// 100 characters, cut at a word), then the lowest-precedence skills omitted, and a
    /// summary goes to stderr.
    #[arg(long, value_name = "CHARS")]
    pub budget: Option<usize>,
    /// Order the skills by relevance to MESSAGE, as `skillcat match` ranks them ([matcher] of
    /// the configuration), so that a budget keeps the most relevant.
    #[arg(long = "for", value_name = "MESSAGE")]
    pub for_message: Option<String>,
}

/// `skillcat list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Any source (none: the configured catalog, shadowed names reported).
    pub source: Option<String>,
    /// Only this skill (`NAME@VERSION`: that version, in a registry).
    pub name: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `skillcat show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Any source.
    pub source: String,
    /// The skill's name (`-` and `_` alike; `NAME@VERSION`: that version, in a registry).
    pub name: String,
}

/// `skillcat read`.
#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// Any source.
    pub source: String,
    /// The skill's name (`NAME@VERSION`: that version, in a registry).
    pub name: String,
    /// A path relative to the skill (`./` and an inner `..` that stays inside are
    /// normalised).
    pub path: String,
}

/// `skillcat validate PATH...`: [`skillcat::source::validate_paths`], printed the reference's
/// way (or as JSON).
pub async fn validate(a: ValidateArgs, g: &Globals) -> CliResult {
    let ValidateArgs {
        paths,
        format,
        allow_field,
    } = a;
    // The configuration's extension fields (`[scripts] extension_fields`), and those given.
    let mut opts = g.validate_options().map_err(super::context_error)?;
    for f in allow_field {
        opts = opts.allow_field(f);
    }
    let targets = skillcat::ops::read::targets(&paths);
    let v = source::validate_paths(&targets, &opts, &g.open).await;
    for w in &v.warnings {
        note!("warning: {}", shown(w));
    }
    match format {
        Format::Text => print_text_reports(&v.reports),
        Format::Json => {
            let rows = skillcat::ops::read::report_rows(&v.reports);
            out!("{}", serde_json::to_string_pretty(&rows).expect("json"));
        }
    }
    Ok(if v.unreadable {
        ExitStatus::Unreadable
    } else {
        ExitStatus::faults_if(!v.is_valid())
    })
}

/// `skillcat properties PATH`
pub async fn properties(a: PropertiesArgs, g: &Globals) -> CliResult {
    let error = |e: PropertiesError| match e {
        PropertiesError::Missing { .. }
        | PropertiesError::Unreadable { .. }
        | PropertiesError::Many { .. } => usage!("{e}"),
        e => failed!("{e}"),
    };
    skillcat::ops::read::properties_arg(&a.path, &g.open).map_err(error)?;
    let o = open_and_discover_with(&a.path, Detail::Frontmatter, g).await?;
    let p = skillcat::ops::read::properties(&o).map_err(error)?;
    out!("{}", serde_json::to_string_pretty(&p).expect("json"));
    Ok(ExitStatus::Success)
}

/// The library's prompt format for the command line's.
fn prompt_format(format: PromptFormatArg) -> PromptFormat {
    match format {
        PromptFormatArg::Xml => PromptFormat::Xml,
        PromptFormatArg::Markdown => PromptFormat::Markdown,
        PromptFormatArg::Json => PromptFormat::Json,
    }
}

/// Prints the block and, on stderr, what the budget did: the summary, or with `verbose` every
/// shortened description and omitted skill.
fn print_rendered(rendered: &skillcat::prompt::Rendered, verbose: bool) {
    out!("{}", super::shown_on_stdout(&rendered.text));
    if rendered.report.is_clean() {
        return;
    }
    if verbose {
        note!("{}", rendered.report.details());
    } else {
        note!("{}", rendered.report);
        note!("(--verbose lists every skill omitted and description shortened)");
    }
}

/// `skillcat prompt PATH...`; without PATH, the configured catalog.
///
/// Renders what is usable and reports every fault on stderr (see
/// [`skillcat::ops::read::prompt_entries`]). Exit 1 when any fault was reported, 2 when a
/// SOURCE could not be read at all (the others are still rendered).
pub async fn prompt(a: PromptArgs, g: &Globals) -> CliResult {
    let PromptArgs {
        paths: args,
        format,
        budget,
        for_message,
    } = a;
    let verbose = g.verbose;
    if for_message.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err(usage!("the message of --for is empty"));
    }
    if args.is_empty() {
        return prompt_configured(format, budget, for_message.as_deref(), verbose, g).await;
    }
    // Ranking for a message reads the bodies too, as `match` does.
    let detail = match for_message {
        Some(_) => Detail::Document,
        None => Detail::Frontmatter,
    };
    let mut code = ExitStatus::Success;
    let mut found = Vec::with_capacity(args.len());
    for arg in &args {
        match open_and_discover_with(arg, detail, g).await {
            Ok(o) => found.push(o),
            // Said now: the other sources are still rendered.
            Err(e) => code = code.max(e.print()),
        }
    }
    if found.is_empty() {
        return Ok(code);
    }
    let entries = skillcat::ops::read::prompt_entries(&found);
    for issue in &entries.issues {
        code = code.max(ExitStatus::Faults);
        // One skill directory gets the reference's words exactly; a skill of a directory of
        // skills is named, so that the broken one can be found.
        match issue {
            PromptIssue::Refused {
                single: true,
                shown,
                fault,
                ..
            } => err!("Error: {}", refusal_message(shown, fault)),
            PromptIssue::Unusable {
                single: true,
                fault,
                ..
            } => err!("Error: {}", fault.message()),
            PromptIssue::Refused {
                location, fault, ..
            }
            | PromptIssue::Unusable {
                location, fault, ..
            } => err!("Error: {}: {}", shown(location), shown(fault.message())),
            PromptIssue::Invalid { location, faults } => {
                err!("Offered all the same, though invalid: {}", shown(location));
                for f in faults {
                    err!("  - {} [{}]", shown(f.message()), f.kind());
                }
            }
        }
    }
    let opts = PromptOptions {
        format: prompt_format(format),
        budget,
        omit_when_empty: false,
    };
    let skills = entries.skills();
    let rendered = match for_message.as_deref() {
        None => skillcat::prompt::render(&skills, &opts),
        Some(message) => {
            let candidates: Vec<Candidate<'_>> = found
                .iter()
                .flat_map(|o| Candidate::of_skills(&o.found.skills))
                .collect();
            let ranked = super::matching::prompt_order(&candidates, &skills, message, g).await?;
            skillcat::prompt::render_by_relevance(&skills, &ranked, &opts)
        }
    };
    print_rendered(&rendered, verbose);
    Ok(code)
}

/// `skillcat prompt` with no PATH: the configured catalog within its `[prompt]` budget (or
/// `--budget`); diagnostics on stderr, exit 1 on any but shadowing and a source's warning.
async fn prompt_configured(
    format: PromptFormatArg,
    budget: Option<usize>,
    for_message: Option<&str>,
    verbose: bool,
    g: &Globals,
) -> CliResult {
    let detail = match for_message {
        Some(_) => Detail::Document,
        None => Detail::Frontmatter,
    };
    let (config, catalog) = configured_catalog(detail, g)?;
    let snapshot = catalog.snapshot().await;
    let faults = print_diagnostics(&snapshot);
    say_where_looked(&config, &snapshot, g);
    let mut opts = config.prompt_options(prompt_format(format));
    opts.budget = budget.or(opts.budget);
    let rendered = match for_message {
        None => snapshot.prompt(&opts),
        Some(message) => {
            let candidates = Candidate::of_catalog(&snapshot);
            let skills: Vec<_> = candidates.iter().map(Candidate::prompt_skill).collect();
            let ranked = super::matching::prompt_order(&candidates, &skills, message, g).await?;
            skillcat::prompt::render_by_relevance(&skills, &ranked, &opts)
        }
    };
    print_rendered(&rendered, verbose);
    Ok(ExitStatus::faults_if(faults))
}

/// A catalog's diagnostics on stderr (`warning: …`); whether any is a fault (anything but a
/// shadowed name or a source's warning).
pub(super) fn print_diagnostics(snapshot: &skillcat::catalog::Snapshot) -> bool {
    use skillcat::catalog::DiagnosticKind;
    let mut faults = false;
    for d in snapshot.diagnostics() {
        // A diagnostic's own form, with the command line's advice for the error behind it.
        let advice = d.error.and_then(super::error::advice).unwrap_or_default();
        let line = format!("{}: {}{advice} [{}]", d.location, d.message, d.kind);
        note!("warning: {}", shown(&line));
        faults |= !matches!(d.kind, DiagnosticKind::Shadowed | DiagnosticKind::Warning);
    }
    faults
}

/// When the configured catalog offers no skill, says on stderr where it looked: which
/// configuration (or that there is none, and where one would be), and each source.
pub(super) fn say_where_looked(
    config: &skillcat::config::Config,
    snapshot: &skillcat::catalog::Snapshot,
    g: &Globals,
) {
    if !snapshot.entries().is_empty() {
        return;
    }
    let from = match &config.origin {
        Some(file) => format!("the sources of {}", file.display()),
        None => {
            let user = g
                .env
                .user_config_dir()
                .map(|d| d.join(skillcat::config::FILE_NAME))
                .map(|f| format!(" or {}", f.display()))
                .unwrap_or_default();
            format!(
                "the default places (no --config, and no configuration at ./{}{user})",
                skillcat::config::FILE_NAME
            )
        }
    };
    let places: Vec<&str> = config.sources.iter().map(|s| s.path.as_str()).collect();
    if places.is_empty() {
        err!("No skills: {from} name no source.");
    } else {
        err!(
            "No skills found in {from}: {}. Name a SOURCE, or list [[sources]] in \
             skillcat.toml.",
            places.join(", ")
        );
    }
}

pub(super) fn print_fault(f: &RootFault) {
    err!(
        "Error: {}: {} [{}]",
        shown(&f.location),
        shown(f.fault.message()),
        f.fault.kind()
    );
}

/// A fault's hint as printed under its `  - message` line: `    hint: …`, its further lines
/// aligned under the first, each ending with a newline.
pub(super) fn hint_lines(f: &Fault) -> Option<String> {
    let hint = f.hint()?;
    let mut text = String::new();
    for (i, line) in hint.lines().enumerate() {
        let lead = if i == 0 { "    hint: " } else { "          " };
        text.push_str(&format!("{lead}{}\n", shown(line)));
    }
    Some(text)
}

/// `skillcat list SOURCE [NAME]`; without SOURCE, the configured catalog. Every fault goes to
/// stderr: roots that are not skills, and the validation faults of skills that are listed.
pub async fn list(a: ListArgs, g: &Globals) -> CliResult {
    let (arg, wanted, format) = (a.source.as_deref(), a.name.as_deref(), a.format);
    let Some(arg) = arg else {
        return list_configured(format, g).await;
    };
    let (opened, name) = open_maybe_for(arg, wanted, Detail::Files, g).await?;
    let listing = skillcat::ops::read::list(arg, opened, name)
        .await
        .map_err(find_error)?;
    for s in &listing.skills {
        if let Some(e) = &s.digest_error {
            err!("Error: {}: {e}", s.location);
        }
    }
    match format {
        Format::Text => {
            let mut out = std::io::stdout().lock();
            for s in &listing.skills {
                let desc = s
                    .description
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let _ = writeln!(out, "{}  {}", shown(&s.name), shown(&desc));
                let digest = s.digest.as_deref().unwrap_or("-");
                let _ = writeln!(out, "    {}  {digest}", shown(&s.location));
            }
        }
        Format::Json => out!("{}", serde_json::to_string_pretty(&listing).expect("json")),
    }
    // Faults on stderr, in the source's order: the invalid skills listed, the roots that are not.
    for s in &listing.skills {
        for f in &s.faults {
            err!(
                "Error: {}: {} [{}]",
                shown(&s.location),
                shown(f.message()),
                f.kind()
            );
        }
    }
    listing.faults.iter().for_each(print_fault);
    Ok(ExitStatus::faults_if(listing.any_fault()))
}

/// The catalog of the configuration (`--config`, `./skillcat.toml` or the defaults), reading
/// as much of each skill as `detail` says.
fn configured_catalog(
    detail: Detail,
    g: &Globals,
) -> Result<(skillcat::config::Config, skillcat::catalog::Catalog), CliError> {
    let (config, _) = super::configuration(g)?;
    let catalog = g.catalog(detail).map_err(super::context_error)?;
    Ok((config, catalog))
}

/// `skillcat list` with no SOURCE: every skill of the configured catalog with its source and
/// trust; diagnostics (shadowed names included) on stderr. Exit 1 on any diagnostic other than
/// shadowing or a source's warning.
async fn list_configured(format: Format, g: &Globals) -> CliResult {
    let (config, catalog) = configured_catalog(Detail::Files, g)?;
    let snapshot = catalog.snapshot().await;
    say_where_looked(&config, &snapshot, g);
    let listing = skillcat::ops::read::list_catalog(&snapshot).await;
    let mut any_fault = false;
    for s in &listing.skills {
        if let Some(e) = &s.digest_error {
            err!("Error: {}: {e}", s.location);
            any_fault = true;
        }
    }
    match format {
        Format::Text => {
            let mut out = std::io::stdout().lock();
            for s in &listing.skills {
                let desc = s
                    .description
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let _ = writeln!(out, "{}  {}", shown(&s.name), shown(&desc));
                let _ = writeln!(
                    out,
                    "    {}  {}  [{}, {}]",
                    shown(&s.location),
                    s.digest.as_deref().unwrap_or("-"),
                    s.source,
                    s.trust
                );
            }
        }
        Format::Json => out!("{}", serde_json::to_string_pretty(&listing).expect("json")),
    }
    any_fault |= print_diagnostics(&snapshot);
    Ok(ExitStatus::faults_if(any_fault))
}

/// The skill named `name` (`NAME` or `NAME@VERSION`) in what `arg` names, with its file list;
/// a missing or broken one is an error.
pub(super) async fn find_skill(
    arg: &str,
    name: &str,
    g: &Globals,
) -> Result<(Arc<dyn Source>, Skill), CliError> {
    find_skill_with(arg, name, Detail::Files, g).await
}

/// [`find_skill`], reading as much of each skill as `detail` says.
async fn find_skill_with(
    arg: &str,
    name: &str,
    detail: Detail,
    g: &Globals,
) -> Result<(Arc<dyn Source>, Skill), CliError> {
    let (o, name) = open_for(arg, name, detail, g).await?;
    let skill = find_in(&o.shown, &o.found, name)?;
    Ok((o.src, skill))
}

/// The skill NAME of a discovery, or (printed) why there is none: no such name, or a root by
/// that name that could not be read.
pub(super) fn find_in(shown: &str, d: &Discovery, name: &str) -> Result<Skill, CliError> {
    skillcat::ops::read::find_in(shown, d, name).map_err(find_error)
}

/// Why there is no such skill; the faults of the roots by that name printed first.
fn find_error(e: FindError) -> CliError {
    match e {
        FindError::NoSuchSkill(message) => CliError::Failed(message.into()),
        FindError::Unreadable { ref faults, .. } => {
            faults.iter().for_each(print_fault);
            failed!("{e}")
        }
    }
}

/// `skillcat show SOURCE NAME`
pub async fn show(a: ShowArgs, g: &Globals) -> CliResult {
    let (_, skill) = find_skill_with(&a.source, &a.name, Detail::Document, g).await?;
    out!("{}", super::shown_on_stdout(skill.body()));
    Ok(ExitStatus::Success)
}

/// `skillcat read SOURCE NAME PATH`
pub async fn read(a: ReadArgs, g: &Globals) -> CliResult {
    let (src, skill) = find_skill(&a.source, &a.name, g).await?;
    let bytes = skillcat::ops::read::read_file(&*src, &skill, &a.path)
        .await
        .map_err(|e: ReadError| failed!("{e}"))?;
    let mut out = std::io::stdout().lock();
    if out.write_all(&bytes).and_then(|_| out.flush()).is_err() {
        return Err(CliError::Output);
    }
    Ok(ExitStatus::Success)
}
