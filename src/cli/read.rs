//! Read-side commands: validate, properties, prompt, list, show, read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use skillcat::document::{Fault, FaultKind, Skill, ValidateOptions};
use skillcat::prompt::{PromptFormat, PromptOptions, PromptSkill};
use skillcat::source::validate::{Report, Target, join_shown};
use skillcat::source::{
    self, Detail, DirOptions, DirSource, Discovery, NamedError, RootFault, SkillRef, Source,
    SourceExt, SourceSpec,
};

use super::{CliError, CliResult, ExitStatus, Format, Globals, PromptFormatArg, shown};

/// A path argument spelled the way the reference (Python's `pathlib`) prints it: repeated `/`
/// collapsed, `.` parts and a trailing `/` dropped (`./a//b/` → `a/b`, `` → `.`); `..` is kept.
fn display_path(arg: &str) -> String {
    let parts: Vec<&str> = arg
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let joined = parts.join("/");
    if arg.starts_with('/') {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// A PATH argument naming a `SKILL.md` (any case) stands for its directory, as in the reference.
/// Returns the path as printed (see [`display_path`]) and as opened.
fn skill_dir_of(arg: &str) -> (String, PathBuf) {
    // URLs, `sqlite:`, `oci://`, `git+` and `github:` specs are not file paths: keep them
    // exactly as given.
    if !SourceSpec::is_path_spelling(arg) {
        return (arg.to_string(), PathBuf::from(arg));
    }
    let shown = display_path(arg);
    let is_doc = Path::new(&shown)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case("skill.md"));
    if is_doc && Path::new(&shown).is_file() {
        let parent = match shown.rsplit_once('/') {
            None => ".".to_string(),
            Some(("", _)) => "/".to_string(),
            Some((dir, _)) => dir.to_string(),
        };
        let path = PathBuf::from(&parent);
        return (parent, path);
    }
    let path = PathBuf::from(&shown);
    (shown, path)
}

/// A source named on the command line, read.
pub(super) struct Opened {
    /// The argument as printed.
    pub(super) shown: String,
    /// Whether the argument is one skill directory (the reference's single-skill commands).
    pub(super) single: bool,
    pub(super) src: Arc<dyn Source>,
    pub(super) found: Discovery,
}

/// Opens and reads what a command line names, documents and file lists (see
/// [`open_and_discover_with`]).
pub(super) async fn open_and_discover(arg: &str, g: &Globals) -> Result<Opened, CliError> {
    open_and_discover_with(arg, Detail::Files, g).await
}

/// Opens and reads what a command line names, as much of each skill as `detail` says: a skill
/// directory (or its SKILL.md) as one skill, anything else through [`source::open`]. A
/// directory with no document and no skill anywhere below it is a skill directory missing its
/// document (as `validate` says), never an empty success. The source's warnings are printed,
/// errors returned.
pub(super) async fn open_and_discover_with(
    arg: &str,
    detail: Detail,
    g: &Globals,
) -> Result<Opened, CliError> {
    let opened = open_arg(arg, g)?;
    let found = source::discover_with(&*opened.src, detail)
        .await
        .map_err(discover_error)?;
    Ok(finish_opened(opened, found))
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

/// What was read of a source opened: its warnings printed, and a directory with nothing in it
/// is one skill directory missing its document.
fn finish_opened(opened: OpenedArg, mut found: Discovery) -> Opened {
    let OpenedArg {
        shown,
        is_dir,
        single,
        src,
    } = opened;
    print_warnings(&found);
    let empty_dir = is_dir && found.skills.is_empty() && found.faults.is_empty();
    if empty_dir {
        found.faults.push(RootFault {
            root: String::new(),
            location: src.location(""),
            fault: Fault::missing_document(),
        });
    }
    Opened {
        shown,
        single: single || empty_dir,
        src,
        found,
    }
}

/// A SOURCE argument, opened but not read yet.
struct OpenedArg {
    shown: String,
    is_dir: bool,
    /// Whether it is one skill directory.
    single: bool,
    src: Arc<dyn Source>,
}

/// Opens what a command line names (see [`open_and_discover_with`]). A
/// regular file that is no archive nor registry is not a skill directory: exit 1, as
/// `validate` says of it.
fn open_arg(arg: &str, g: &Globals) -> Result<OpenedArg, CliError> {
    let (shown, path) = skill_dir_of(arg);
    let is_dir = path.is_dir();
    let single = is_dir && source::has_document_entry(&path);
    let result = if single {
        DirSource::open_skill(&path, DirOptions::default()).map(|s| Arc::new(s) as Arc<dyn Source>)
    } else {
        source::open_with(&path.to_string_lossy(), &g.open)
    };
    let src = result.map_err(|e| match e {
        skillcat::Error::UnsupportedSource(_) if path.is_file() => failed!(
            "{} (nor an archive, a registry or a SKILL.md)",
            Fault::not_a_directory(&shown).message()
        ),
        e => usage!("{}", describe_open_error(&shown, &e)),
    })?;
    Ok(OpenedArg {
        shown,
        is_dir,
        single,
        src,
    })
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

/// Opens what `arg` names for the skill `wanted` (`NAME` or `NAME@VERSION`), read as
/// [`source::discover_named`] reads it: with a version, that version alone from a source that
/// keeps versions, else the whole source when it holds the skill at that version (an error
/// saying so when it does not); without, the whole source as [`open_and_discover_with`] reads
/// it. Returns the opened source and the name alone.
pub(super) async fn open_for<'a>(
    arg: &str,
    wanted: &'a str,
    detail: Detail,
    g: &Globals,
) -> Result<(Opened, &'a str), CliError> {
    let want = SkillRef::parse(wanted);
    let opened = open_arg(arg, g)?;
    match source::discover_named(&*opened.src, want, detail).await {
        Ok(found) => Ok((finish_opened(opened, found), want.name)),
        Err(NamedError::OtherVersion { found, held }) => {
            print_warnings(&found);
            let (shown, name) = (&opened.shown, want.name);
            Err(failed!(
                "{wanted}: {shown} holds {name} {} only: a directory, an archive or an \
                 index keeps one version of each skill (a registry, x.db, keeps many). Name the \
                 skill alone: {name}",
                match held {
                    Some(v) => format!("at version {v}"),
                    None => "without a metadata.version".to_string(),
                }
            ))
        }
        Err(NamedError::Lookup(e)) if e.is_not_found() => Err(failed!("{e}")),
        Err(NamedError::Lookup(e) | NamedError::Load(e)) => Err(usage!("{e}")),
        Err(NamedError::Discover(e)) => Err(discover_error(e)),
    }
}

/// A discovery's warnings (a stale cached index, say) on stderr, `warning: …` each, with
/// control characters escaped (the text may come from a server).
pub(super) fn print_warnings(found: &Discovery) {
    for w in &found.warnings {
        note!("warning: {}", shown(w));
    }
}

fn describe_open_error(shown: &str, e: &skillcat::Error) -> String {
    match e {
        skillcat::Error::NotFound(_) => format!("Path does not exist: {shown}"),
        other => other.to_string(),
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
    let targets: Vec<Target> = paths
        .iter()
        .map(|arg| {
            let (shown, path) = skill_dir_of(arg);
            Target {
                shown,
                path,
                // A spec (a URL, `sqlite:`, a git repository) is opened as given; a path is looked at
                // first.
                spec: !SourceSpec::is_path_spelling(arg),
            }
        })
        .collect();
    let v = source::validate_paths(&targets, &opts, &g.open).await;
    for w in &v.warnings {
        note!("warning: {}", shown(w));
    }
    match format {
        Format::Text => print_text_reports(&v.reports),
        Format::Json => {
            let arr: Vec<_> = v
                .reports
                .iter()
                .map(|r| json!({"path": r.path, "name": r.name, "valid": r.faults.is_empty(), "faults": r.faults}))
                .collect();
            out!("{}", serde_json::to_string_pretty(&arr).expect("json"));
        }
    }
    Ok(if v.unreadable {
        ExitStatus::Unreadable
    } else {
        ExitStatus::faults_if(!v.is_valid())
    })
}

/// The reference's wording for a refusal in `properties` and `prompt`.
fn refusal_message(location: &str, fault: &Fault) -> String {
    if fault.kind() == FaultKind::MissingDocument {
        format!("SKILL.md not found in {location}")
    } else {
        fault.message().to_string()
    }
}

/// `skillcat properties PATH`
pub async fn properties(a: PropertiesArgs, g: &Globals) -> CliResult {
    let arg = a.path.as_str();
    let (shown, path) = skill_dir_of(arg);
    let is_url = !SourceSpec::is_path_spelling(arg);
    match std::fs::metadata(&path) {
        _ if is_url => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(usage!("Path does not exist: {shown}"));
        }
        Err(e) => {
            return Err(usage!("{shown}: {e}"));
        }
        // An archive (or registry) of one skill reads like that skill's directory.
        Ok(m)
            if !m.is_dir()
                && matches!(
                    source::open_with(&shown, &g.open),
                    Err(skillcat::Error::UnsupportedSource(_))
                ) =>
        {
            // A regular file that is not a SKILL.md nor a source: not a skill directory (as
            // `validate` says).
            return Err(failed!("Not a directory: {shown}"));
        }
        Ok(_) => {}
    }
    let o = open_and_discover_with(arg, Detail::Frontmatter, g).await?;
    let count = o.found.skills.len() + o.found.faults.len();
    if count > 1 {
        return Err(usage!(
            "{shown} holds {count} skills; name one skill directory"
        ));
    }
    if let Some(f) = o.found.faults.first() {
        return Err(failed!(
            "{}",
            refusal_message(&join_shown(&shown, &f.root), &f.fault)
        ));
    }
    let Some(skill) = o.found.skills.first() else {
        return Err(failed!("SKILL.md not found in {shown}"));
    };
    match skill.properties() {
        Ok(p) => {
            out!("{}", serde_json::to_string_pretty(&p).expect("json"));
            Ok(ExitStatus::Success)
        }
        Err(f) => Err(failed!("{}", f.message())),
    }
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
/// Renders what is usable and reports every fault on stderr: a root that cannot be read, or a
/// skill without a name or a description, is left out; a skill that parses and has both is
/// offered even when it breaks a validation rule (as the catalog and the reference's
/// `to-prompt` offer it), its faults reported. Exit 1 when any fault was reported, 2 when a
/// SOURCE could not be read at all (the others are still rendered).
pub async fn prompt(a: PromptArgs, g: &Globals) -> CliResult {
    let PromptArgs {
        paths: args,
        format,
        budget,
    } = a;
    let verbose = g.verbose;
    if args.is_empty() {
        return prompt_configured(format, budget, verbose, g).await;
    }
    let mut code = ExitStatus::Success;
    let mut found = Vec::with_capacity(args.len());
    for arg in &args {
        match open_and_discover_with(arg, Detail::Frontmatter, g).await {
            Ok(o) => found.push(o),
            // Said now: the other sources are still rendered.
            Err(e) => code = code.max(e.print()),
        }
    }
    if found.is_empty() {
        return Ok(code);
    }
    let opts = ValidateOptions::default();
    let mut entries: Vec<(usize, String, String, String)> = Vec::new();
    for (i, o) in found.iter().enumerate() {
        // One skill directory gets the reference's words exactly; a skill of a directory of
        // skills is named, so that the broken one can be found.
        for f in &o.found.faults {
            code = code.max(ExitStatus::Faults);
            if o.single {
                err!("Error: {}", refusal_message(&o.shown, &f.fault));
            } else {
                err!(
                    "Error: {}: {}",
                    shown(&f.location),
                    shown(f.fault.message())
                );
            }
        }
        for s in &o.found.skills {
            if let Err(f) = s.properties() {
                code = code.max(ExitStatus::Faults);
                if o.single {
                    err!("Error: {}", f.message());
                } else {
                    err!("Error: {}: {}", shown(s.location()), shown(f.message()));
                }
                continue;
            }
            let faults = s.validate(&opts);
            if !faults.is_empty() {
                code = code.max(ExitStatus::Faults);
                err!(
                    "Offered all the same, though invalid: {}",
                    shown(s.location())
                );
                for f in &faults {
                    err!("  - {} [{}]", shown(f.message()), f.kind());
                }
            }
            entries.push((
                i,
                s.raw_name().unwrap_or_default().to_string(),
                s.description().to_string(),
                s.location().to_string(),
            ));
        }
    }
    // Precedence (the order of the arguments), then name: the order a budget cuts from the end.
    entries.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.as_bytes().cmp(b.1.as_bytes()))
    });
    let skills: Vec<PromptSkill<'_>> = entries
        .iter()
        .map(|(_, n, d, l)| PromptSkill {
            name: n,
            description: d,
            location: l,
        })
        .collect();
    let opts = PromptOptions {
        format: prompt_format(format),
        budget,
        omit_when_empty: false,
    };
    print_rendered(&skillcat::prompt::render(&skills, &opts), verbose);
    Ok(code)
}

/// `skillcat prompt` with no PATH: the configured catalog within its `[prompt]` budget (or
/// `--budget`); diagnostics on stderr, exit 1 on any but shadowing and a source's warning.
async fn prompt_configured(
    format: PromptFormatArg,
    budget: Option<usize>,
    verbose: bool,
    g: &Globals,
) -> CliResult {
    let (config, catalog) = configured_catalog(Detail::Frontmatter, g)?;
    let snapshot = catalog.snapshot().await;
    let faults = print_diagnostics(&snapshot);
    say_where_looked(&config, &snapshot, g);
    let mut opts = config.prompt_options(prompt_format(format));
    opts.budget = budget.or(opts.budget);
    print_rendered(&snapshot.prompt(&opts), verbose);
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
    let opened = open_maybe_for(arg, wanted, Detail::Files, g).await;
    let (
        Opened {
            shown: shown_arg,
            src,
            found: mut d,
            ..
        },
        name,
    ) = opened?;
    if let Some(name) = name {
        // One skill: it, or why there is none; other roots' faults are not its business.
        match find_in(&shown_arg, &d, name) {
            Ok(skill) => {
                d.skills = vec![skill];
                d.faults.clear();
            }
            Err(e) => return Err(e),
        }
    }
    let opts = ValidateOptions::default();
    let marketplace_kind = SourceSpec::parse(arg).is_ok_and(|s| {
        matches!(
            s.kind,
            skillcat::source::SourceKind::Local | skillcat::source::SourceKind::Git
        )
    });
    let mut rows = Vec::new();
    let mut any_fault = !d.faults.is_empty();
    for s in &d.skills {
        let faults = s.validate(&opts);
        any_fault |= !faults.is_empty();
        let name = s.name();
        // The file list was read with the skill: hash those files, without listing them again.
        let manifest = src
            .manifest_of(s.root(), s.files(), &name, s.version().unwrap_or(""))
            .await;
        let digest = match manifest {
            Ok(m) => Some(m.digest),
            Err(e) => {
                err!("Error: {}: {e}", s.location());
                any_fault = true;
                None
            }
        };
        // A marketplace's skills name their plugins; only a directory or a repository is one
        // (a registry's record would cost a query per skill for nothing).
        let plugins = match marketplace_kind {
            true => src
                .record(s.root())
                .await
                .map(|r| r.plugins)
                .unwrap_or_default(),
            false => Vec::new(),
        };
        rows.push((s, name, digest, faults, plugins));
    }
    match format {
        Format::Text => {
            let mut out = std::io::stdout().lock();
            for (s, name, digest, _, _) in &rows {
                let desc = s
                    .description()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let _ = writeln!(out, "{}  {}", shown(name), shown(&desc));
                let _ = writeln!(
                    out,
                    "    {}  {}",
                    shown(s.location()),
                    digest.as_deref().unwrap_or("-")
                );
            }
        }
        Format::Json => {
            let skills: Vec<_> = rows
                .iter()
                .map(|(s, name, digest, faults, plugins)| {
                    let mut row = json!({"name": name, "description": s.description(), "location": s.location(),
                           "root": s.root(), "digest": digest, "valid": faults.is_empty(), "faults": faults});
                    if !plugins.is_empty() {
                        row["plugins"] = json!(plugins);
                    }
                    row
                })
                .collect();
            let faults: Vec<_> = d
                .faults
                .iter()
                .map(|f| json!({"root": f.root, "location": f.location, "kind": f.fault.kind().as_str(), "message": f.fault.message()}))
                .collect();
            out!(
                "{}",
                serde_json::to_string_pretty(&json!({"skills": skills, "faults": faults}))
                    .expect("json")
            );
        }
    }
    // Faults on stderr, in the source's order: the invalid skills listed, the roots that are not.
    for (s, _, _, faults, _) in &rows {
        for f in faults {
            err!(
                "Error: {}: {} [{}]",
                shown(s.location()),
                shown(f.message()),
                f.kind()
            );
        }
    }
    d.faults.iter().for_each(print_fault);
    Ok(ExitStatus::faults_if(any_fault))
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
    let mut any_fault = false;
    let mut rows = Vec::new();
    say_where_looked(&config, &snapshot, g);
    for e in snapshot.entries() {
        let s = e.skill();
        let digest = match e
            .source()
            .manifest_of(s.root(), s.files(), e.name(), s.version().unwrap_or(""))
            .await
        {
            Ok(m) => Some(m.digest),
            Err(err) => {
                err!("Error: {}: {err}", e.location());
                any_fault = true;
                None
            }
        };
        rows.push((e, digest));
    }
    let trust = |e: &skillcat::catalog::Entry| match (e.is_core_trusted(), e.is_trusted()) {
        (true, _) => "core-trusted",
        (false, true) => "trusted",
        (false, false) => "untrusted",
    };
    match format {
        Format::Text => {
            let mut out = std::io::stdout().lock();
            for (e, digest) in &rows {
                let desc = e
                    .skill()
                    .description()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let _ = writeln!(out, "{}  {}", shown(e.name()), shown(&desc));
                let _ = writeln!(
                    out,
                    "    {}  {}  [{}, {}]",
                    shown(e.location()),
                    digest.as_deref().unwrap_or("-"),
                    e.source_name(),
                    trust(e)
                );
            }
        }
        Format::Json => {
            let skills: Vec<_> = rows
                .iter()
                .map(|(e, digest)| {
                    json!({"name": e.name(), "description": e.skill().description(),
                           "location": e.location(), "root": e.root(), "digest": digest,
                           "source": e.source_name(), "trust": trust(e),
                           "scripts_allowed": e.scripts_allowed()})
                })
                .collect();
            let diagnostics: Vec<_> = snapshot
                .diagnostics()
                .iter()
                .map(|d| {
                    json!({"source": d.source, "root": d.root, "location": d.location,
                           "kind": d.kind.as_str(), "fault": d.kind.fault().map(|f| f.as_str()),
                           "message": d.message})
                })
                .collect();
            out!(
                "{}",
                serde_json::to_string_pretty(
                    &json!({"skills": skills, "diagnostics": diagnostics})
                )
                .expect("json")
            );
        }
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
    let (
        Opened {
            shown,
            src,
            found: d,
            ..
        },
        name,
    ) = open_for(arg, name, detail, g).await?;
    let skill = find_in(&shown, &d, name)?;
    Ok((src, skill))
}

/// The skill NAME of a discovery, or (printed) why there is none: no such name, or a root by
/// that name that could not be read.
pub(super) fn find_in(shown: &str, d: &Discovery, name: &str) -> Result<Skill, CliError> {
    if let Some(s) = d.find(name) {
        return Ok(s.clone());
    }
    // A root by that name that could not be read: say why, rather than "no such skill".
    let want = skillcat::document::name_key(name);
    let broken: Vec<&RootFault> = d
        .faults
        .iter()
        .filter(|f| {
            skillcat::document::name_key(skillcat::path::base_name(&f.root)) == want
                || (f.root.is_empty() && d.faults.len() == 1)
        })
        .collect();
    if broken.is_empty() {
        let names: Vec<String> = d.skills.iter().map(Skill::name).collect();
        Err(CliError::Failed(
            skillcat::source::no_such_skill(name, shown, names, 0).into(),
        ))
    } else {
        for f in broken {
            print_fault(f);
        }
        Err(failed!("skill '{name}' in {shown} could not be read"))
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
    let (arg, name, path) = (a.source.as_str(), a.name.as_str(), a.path.as_str());
    let (src, skill) = find_skill(arg, name, g).await?;
    let rel = match skill.resolve(path) {
        Ok(rel) => rel,
        Err(why) => {
            return Err(failed!(
                "'{path}' is not a file inside skill '{}': {why} (absolute paths, '..' and URLs are refused)",
                skill.name()
            ));
        }
    };
    if !skill.files().iter().any(|f| f.path == rel.as_str()) {
        return Err(failed!("skill '{}' has no file '{rel}'", skill.name()));
    }
    match src
        .read(&skillcat::path::join_path(skill.root(), &rel))
        .await
    {
        Ok(bytes) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(&bytes).and_then(|_| out.flush()).is_err() {
                return Err(CliError::Output);
            }
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(failed!("{e}")),
    }
}
