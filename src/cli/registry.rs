//! `skillcat registry …`: create a registry, publish into it, yank, search, list versions.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use skillcat::ops::registry::{
    self as ops, CopyError, PrepareError, PublishInputs, PublishRow, VersionsError, unversioned,
};
use skillcat::publish::{BatchError, BatchEvent, SkillFailure, publish_batch_into};
use skillcat::registry::copy::CopyEvent;
use skillcat::registry::store;
use skillcat::registry::{Outcome, Published, RegistryError, VersionLimits};

use super::{CliError, CliResult, ExitStatus, Format, Globals, ServerArgs};

/// The context of a command that reads a served registry, built from its server options only
/// when it does.
pub type ServerContext<'a> = &'a dyn Fn(ServerArgs) -> Result<Globals, CliError>;

/// The `registry` subcommands.
#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// Create an empty registry (a SQLite file, which must not exist yet, or the schema in an
    /// empty PostgreSQL database).
    #[command(after_help = "Example: skillcat registry init skills.db")]
    #[command(
        after_help = "Example: skillcat registry init postgres://skillcat@db.internal/skills --blobs file:///srv/skillcat-blobs"
    )]
    Init {
        /// The registry to create: a file (`sqlite:FILE`), or `postgres://USER@HOST:PORT/DB`.
        #[arg(value_name = "LOCATION")]
        db: PathBuf,
        /// Keep a PostgreSQL registry's blobs in object storage instead of its database:
        /// `file:///DIR`, `s3://BUCKET?endpoint=URL&region=R` (credentials from
        /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). Recorded in the database, so every
        /// replica uses the same.
        #[arg(long, value_name = "URL")]
        blobs: Option<String>,
    },
    /// Publish skills as immutable versions; a neighbour SOURCE.minisig (or SOURCE.NAME.minisig)
    /// signature is picked up and stored.
    #[command(
        after_help = "Example: skillcat registry publish skills.db pdf-forms.tar.gz --keyring keyring.toml"
    )]
    Publish {
        /// The registry: a file (`sqlite:FILE`), or `postgres://USER@HOST:PORT/DB`.
        #[arg(value_name = "LOCATION")]
        db: PathBuf,
        /// Skill directories, directories of skills, or archives (each may hold many skills).
        #[arg(required = true)]
        sources: Vec<String>,
        /// The signature of the one skill published (default: the neighbour .minisig file).
        #[arg(long, value_name = "FILE")]
        sig: Option<PathBuf>,
        /// Publish as this version (default: the skill's metadata.version); must be semver.
        #[arg(long, value_name = "V")]
        version: Option<String>,
        /// Require every skill to carry a signature that verifies against this keyring (TOML).
        #[arg(long, value_name = "FILE")]
        keyring: Option<PathBuf>,
        /// The most a version may hold, all files together: bytes, or with a unit (`16MiB`).
        #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = super::central::parse_size)]
        max_version_size: u64,
        /// The most files a version may hold.
        #[arg(long, value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
        max_version_files: u32,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Yank a version (hidden from latest and search, still readable as NAME@VERSION), or undo it.
    #[command(after_help = "Example: skillcat registry yank skills.db pdf-forms@1.2.0")]
    Yank {
        /// The registry: a file (`sqlite:FILE`), or `postgres://USER@HOST:PORT/DB`.
        #[arg(value_name = "LOCATION")]
        db: PathBuf,
        /// The version, as NAME@VERSION.
        spec: String,
        /// Unyank instead.
        #[arg(long)]
        undo: bool,
    },
    /// Full-text search over each skill's latest version (name, description, body).
    #[command(
        after_help = "Example: skillcat registry search skills.db \"fill pdf forms\" --limit 5"
    )]
    Search {
        /// The registry: a file (`sqlite:FILE`), `postgres://USER@HOST:PORT/DB`, or a served
        /// registry's http(s):// URL (`skillcat serve`).
        #[arg(value_name = "LOCATION")]
        db: PathBuf,
        /// Words to look for (any text: it is never read as query syntax).
        query: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        /// At most this many results (at most 100 from a served registry).
        #[arg(long, default_value_t = std::num::NonZeroUsize::new(20).expect("20 is not zero"))]
        limit: std::num::NonZeroUsize,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List every version of a skill in semver order, with digest, date, yanked and latest.
    #[command(after_help = "Example: skillcat registry versions skills.db pdf-forms --format json")]
    Versions {
        /// The registry: a file (`sqlite:FILE`), `postgres://USER@HOST:PORT/DB`, or a served
        /// registry's http(s):// URL (`skillcat serve`).
        #[arg(value_name = "LOCATION")]
        db: PathBuf,
        /// The skill's name.
        name: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Copy a registry into another: every version it lacks (files, digests, publish time,
    /// yank, signatures, findings), then the audit log; run again, it copies only what is new.
    #[command(
        after_help = "Example: skillcat registry copy skills.db postgres://skillcat@db.internal/skills"
    )]
    Copy {
        /// The registry copied: a file (`sqlite:FILE`), `postgres://USER@HOST:PORT/DB`, or a
        /// served registry's http(s):// URL (`skillcat serve`).
        #[arg(value_name = "FROM")]
        from: PathBuf,
        /// The registry written: a file or `postgres://…`, created when there is none yet.
        #[arg(value_name = "TO")]
        to: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Verify a whole registry: the database's own integrity checks, every blob against its
    /// sha256, every version's files against its digest and manifest; exit 1 on any problem.
    #[command(after_help = "Example: skillcat registry check skills.db --format json")]
    Check {
        /// The registry: a file (`sqlite:FILE`), or `postgres://USER@HOST:PORT/DB`.
        #[arg(value_name = "LOCATION")]
        db: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Delete the blobs of a registry's object storage that no version references and that are
    /// older than a grace period (a publish writes its blobs before its row commits).
    #[command(
        after_help = "Example: skillcat registry gc postgres://skillcat@db/skills --grace 1h --dry-run"
    )]
    Gc {
        /// The registry: a file (`sqlite:FILE`), or `postgres://USER@HOST:PORT/DB`.
        #[arg(value_name = "LOCATION")]
        db: PathBuf,
        /// Keep unreferenced blobs written less than this long ago: `1h`, `30m`, `0`.
        #[arg(long, value_name = "TIME", default_value = "1h", value_parser = super::remote::parse_age)]
        grace: std::time::Duration,
        /// Say what would be deleted, and delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
}

/// Runs one `registry` subcommand; returns the exit code. `context` builds what a command
/// reading a served registry needs.
pub async fn run(cmd: RegistryCommand, context: ServerContext<'_>) -> CliResult {
    if let Some(refusal) = local_only(&cmd) {
        return Err(refusal);
    }
    match cmd {
        RegistryCommand::Init { db, blobs } => init(&db, blobs.as_deref()).await,
        RegistryCommand::Publish {
            db,
            sources,
            sig,
            version,
            keyring,
            max_version_size,
            max_version_files,
            format,
        } => {
            let inputs = PublishInputs {
                sig: sig.as_deref(),
                version: version.as_deref(),
                keyring: keyring.as_deref(),
                limits: VersionLimits {
                    max_bytes: max_version_size,
                    max_files: max_version_files as usize,
                },
            };
            publish(&db, &sources, inputs, format).await
        }
        RegistryCommand::Yank { db, spec, undo } => yank(&db, &spec, undo).await,
        RegistryCommand::Check { db, format } => check(&db, format).await,
        RegistryCommand::Copy {
            from,
            to,
            format,
            server,
        } => {
            let policy = match ops::served_url(&from) {
                Some(_) => policy(&context(server)?),
                None => skillcat::client::Policy::default(),
            };
            copy(&from, &to, format, &policy).await
        }
        RegistryCommand::Search {
            db,
            query,
            format,
            limit,
            server,
        } => match ops::served_url(&db) {
            Some(url) => served_search(url, &query, format, limit.get(), &context(server)?).await,
            None => search(&db, &query, format, limit.get()).await,
        },
        RegistryCommand::Versions {
            db,
            name,
            format,
            server,
        } => match ops::served_url(&db) {
            Some(url) => {
                let policy = policy(&context(server)?);
                let list = ops::served_versions(url, &name, &policy).await;
                print_versions(list.map_err(versions_error)?, format)
            }
            None => versions(&db, &name, format).await,
        },
        RegistryCommand::Gc {
            db,
            grace,
            dry_run,
            format,
        } => gc(&db, grace, dry_run, format).await,
    }
}

/// A subcommand that writes a registry file, given a served registry's URL: refused (exit 1),
/// saying what works on a served registry.
fn local_only(cmd: &RegistryCommand) -> Option<CliError> {
    let (command, db) = match cmd {
        RegistryCommand::Init { db, .. } => ("init", db),
        RegistryCommand::Publish { db, .. } => ("publish", db),
        RegistryCommand::Yank { db, .. } => ("yank", db),
        RegistryCommand::Check { db, .. } => ("check", db),
        RegistryCommand::Copy { to, .. } => ("copy", to),
        RegistryCommand::Gc { db, .. } => ("gc", db),
        RegistryCommand::Search { .. } | RegistryCommand::Versions { .. } => return None,
    };
    let url = ops::served_url(db)?;
    let instead = match cmd {
        RegistryCommand::Init { .. } => format!(
            "it creates a registry file or database. {url} is served by `skillcat serve \
             LOCATION --publish --tokens TOKENS` of one (`skillcat registry init LOCATION` on the \
             server)"
        ),
        RegistryCommand::Gc { .. } => {
            format!("it works on a registry's own storage. {url} is served from one: run it there")
        }
        RegistryCommand::Yank { .. } => format!(
            "it works on a registry file or database. To yank from a served registry use \
             `skillcat yank \
             {url} NAME@VERSION`"
        ),
        RegistryCommand::Copy { .. } => format!(
            "it writes a registry file or database. {url} is served from one: copy into \
             that, or from {url} into a new one"
        ),
        RegistryCommand::Check { .. } => format!(
            "it reads a registry file or database whole. {url} is served from one: check it \
             where it is"
        ),
        _ => format!(
            "it works on a registry file or database. To publish to a served registry use \
             `skillcat publish {url} DIR`"
        ),
    };
    Some(failed!(
        "`skillcat registry {command}` is local-only: {instead}"
    ))
}

/// How a served registry is asked: the context's timeout (60 s by default) and certificates.
fn policy(g: &Globals) -> skillcat::client::Policy {
    skillcat::client::Policy {
        timeout: Some(g.open.timeout.unwrap_or(std::time::Duration::from_secs(60))),
        ca_certificates: g.open.ca_certificates.clone(),
        ..skillcat::client::Policy::default()
    }
}

/// A served registry's error: a certificate that does not verify is exit 1, as for
/// `skillcat search`; one that cannot be reached or refuses is exit 2, as a missing file is.
fn served_error(e: skillcat::Error) -> CliError {
    match e {
        skillcat::Error::Certificate { .. } => failed!(cause = e),
        _ => usage!(cause = e),
    }
}

fn versions_error(e: VersionsError) -> CliError {
    match e {
        VersionsError::Registry(e) => fail(&e),
        VersionsError::Served(e) => served_error(e),
        e @ (VersionsError::NoSuchSkill { .. } | VersionsError::NotServed { .. }) => {
            failed!("{e}")
        }
    }
}

/// A registry error as the command line says it: exit 1 when the request was refused, 2 when
/// something could not be read or written.
fn fail(e: &RegistryError) -> CliError {
    if e.is_refusal() {
        failed!("{e}")
    } else {
        usage!("{e}")
    }
}

/// `skillcat registry init LOCATION`
async fn init(db: &Path, blobs: Option<&str>) -> CliResult {
    match ops::init(&ops::location(db), blobs).await {
        Ok((shown, version)) => {
            out!("Created registry {shown} (schema version {version})");
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(fail(&e)),
    }
}

/// `skillcat registry copy FROM TO [--format]`: [`ops::copy`], a bar on stderr as it goes;
/// exit 1 when a version could not be copied.
async fn copy(
    from: &Path,
    to: &Path,
    format: Format,
    policy: &skillcat::client::Policy,
) -> CliResult {
    let bar = std::sync::OnceLock::<indicatif::ProgressBar>::new();
    let progress = |e: CopyEvent<'_>| match e {
        CopyEvent::Total(n) => {
            bar.get_or_init(|| super::progress_bar(n, 50, "{bar:30} {pos}/{len} {wide_msg}"));
        }
        CopyEvent::Version { name, version } => {
            if let Some(b) = bar.get() {
                b.set_message(format!("{name}@{version}"));
                b.inc(1);
            }
        }
    };
    let copied = ops::copy(from, to, Some(&progress), policy).await;
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    let copied = copied.map_err(|e| match e {
        CopyError::Registry(e) => fail(&e),
        CopyError::Served(e) => served_error(e),
    })?;
    let r = &copied.report;
    match format {
        Format::Json => out!("{}", serde_json::to_string_pretty(&copied).expect("json")),
        Format::Text => {
            if copied.created {
                out!("Created registry {}", r.to);
            }
            let plural =
                |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
            out!(
                "Copied {} from {} into {} ({} brought up to date, {} already there, {} added)",
                plural(r.copied, "version"),
                r.from,
                r.to,
                r.updated,
                r.unchanged,
                plural(r.audit, "audit entry").replace("entrys", "entries"),
            );
            for f in &r.failed {
                err!("Not copied: {}@{}: {}", f.name, f.version, f.error);
            }
            for n in &r.not_carried {
                err!("Not carried: {n}");
            }
        }
    }
    Ok(ExitStatus::faults_if(!r.is_ok()))
}

/// `skillcat registry check LOCATION [--format]`: what [`ops::check`] found; exit 1 when
/// anything is wrong.
async fn check(db: &Path, format: Format) -> CliResult {
    let report = ops::check(&ops::location(db)).await.map_err(|e| fail(&e))?;
    match format {
        Format::Json => out!("{}", serde_json::to_string_pretty(&report).expect("json")),
        Format::Text => {
            out!(
                "Checked {} blob{} and {} version{}",
                report.blobs,
                if report.blobs == 1 { "" } else { "s" },
                report.versions,
                if report.versions == 1 { "" } else { "s" },
            );
            for p in &report.problems {
                out!("  - {}", super::shown_on_stdout(p));
            }
            if report.is_ok() {
                out!("No problem found");
            } else {
                err!(
                    "{} problem{} found",
                    report.problems.len(),
                    if report.problems.len() == 1 { "" } else { "s" }
                );
            }
        }
    }
    Ok(ExitStatus::faults_if(!report.is_ok()))
}

/// `skillcat registry publish LOCATION SOURCE... [--sig FILE] [--version V] [--keyring FILE]`:
/// [`publish_batch_into`], each skill said as it goes.
async fn publish(
    db: &Path,
    specs: &[String],
    inputs: PublishInputs<'_>,
    format: Format,
) -> CliResult {
    // Every source is opened and listed before anything is written.
    let prepared = ops::prepare(specs, inputs).await.map_err(|e| match e {
        PrepareError::Open(e) => match e.source {
            skillcat::Error::NotFound(_) => usage!("Path does not exist: {}", e.spec),
            _ => usage!("{e}"),
        },
        PrepareError::Batch(e @ BatchError::Nothing(_)) => failed!("{e}"),
        PrepareError::Batch(BatchError::SignatureForMany(total)) => {
            usage!("--sig names the signature of one skill; the sources hold {total}")
        }
        PrepareError::Batch(BatchError::VersionForMany { total, version: v }) => usage!(
            "--version sets the version of one skill; the sources hold {total}. Give each \
             skill its own in its SKILL.md frontmatter (metadata:\n  version: \"{v}\"), or \
             publish them one at a time"
        ),
        e => usage!("{e}"),
    })?;
    let (opened, opts, total) = (&prepared.sources, prepared.options(), prepared.total);
    let store = store::open(&ops::location(db))
        .await
        .map_err(|e| fail(&e))?;
    let bar = super::progress_bar(total, 2, "{bar:30} {pos}/{len} {wide_msg}");
    let text = format == Format::Text;
    let outcomes = publish_batch_into(&*store, opened, &opts, |event| match event {
        BatchEvent::Start(at) => bar.set_message(at.to_string()),
        BatchEvent::Done(o) => {
            bar.suspend(|| match &o.result {
                Ok(p) if text => print_published(p),
                Err(f) if text => print_failure(f, &o.location),
                _ => {}
            });
            bar.inc(1);
        }
    })
    .await
    .map_err(|e| usage!("{e}"))?;
    bar.finish_and_clear();
    let mut code = ExitStatus::Success;
    for f in outcomes.iter().filter_map(|o| o.result.as_ref().err()) {
        code = code.max(match f {
            SkillFailure::Registry(e) => fail(e).status(),
            _ => ExitStatus::Unreadable,
        });
    }
    // Skills refused for want of a version: named together at the end, with how to set it.
    let unversioned = unversioned(&outcomes);
    if total > 1 && !unversioned.is_empty() && text {
        err!(
            "{} of {total} skills were not published for want of a version: {}",
            unversioned.len(),
            unversioned.join(", ")
        );
        err!(
            "Set it in each one's SKILL.md frontmatter, then publish again:\n  metadata:\n    \
             version: \"1.0.0\"\n(--version V sets the version of one skill: `skillcat registry \
             publish {} SKILL-DIR --version V`)",
            db.display()
        );
    }
    if format == Format::Json {
        let results: Vec<_> = outcomes.iter().map(PublishRow::of).collect();
        out!("{}", serde_json::to_string_pretty(&results).expect("json"));
    }
    Ok(code)
}

/// Why one skill was not published, on stderr.
fn print_failure(f: &SkillFailure, location: &str) {
    match f {
        SkillFailure::Registry(RegistryError::InvalidSkill {
            location: at,
            faults,
        }) => {
            err!("Refusing to publish {at}:");
            for f in faults {
                err!("  - {} [{}]", f.message(), f.kind());
            }
        }
        f => err!("Error: {location}: {f}"),
    }
}

fn print_published(p: &Published) {
    let verb = match p.outcome {
        Outcome::Published => "Published",
        Outcome::Unchanged => "Unchanged",
    };
    let mut line = format!("{verb} {}@{} {}", p.name, p.version, p.digest);
    if p.outcome == Outcome::Published {
        let plural = if p.files == 1 { "" } else { "s" };
        line.push_str(&format!(" ({} file{plural}, {} new)", p.files, p.new_blobs));
    }
    if let Some(key) = &p.signed_by {
        line.push_str(&format!(", signed by {key}"));
        if p.outcome == Outcome::Unchanged && p.signature_added {
            line.push_str(" (signature added)");
        }
    }
    out!("{line}");
}

/// `skillcat registry yank LOCATION NAME@VERSION [--undo]`
async fn yank(db: &Path, spec: &str, undo: bool) -> CliResult {
    let y = (ops::yank(&ops::location(db), spec, undo).await).map_err(|e| fail(&e))?;
    let (name, version) = (&y.name, &y.version);
    if y.changed {
        out!(
            "{} {name}@{version}",
            if undo { "Unyanked" } else { "Yanked" }
        );
    } else {
        out!(
            "{name}@{version} was already {}",
            if undo { "not yanked" } else { "yanked" }
        );
    }
    match y.latest.map_err(|e| fail(&e))? {
        Some(latest) => out!("Latest {name} is {latest}"),
        None => out!("{name} has no unyanked version left"),
    }
    Ok(ExitStatus::Success)
}

/// `skillcat registry search LOCATION QUERY [--format] [--limit N]`
async fn search(db: &Path, query: &str, format: Format, limit: usize) -> CliResult {
    let hits = (ops::search(&ops::location(db), query, limit).await).map_err(|e| fail(&e))?;
    print_hits(&hits, query, format, |h| {
        (&h.name, &h.version, &h.description)
    })
}

/// `skillcat registry search URL QUERY [--format] [--limit N]`: as for a file, through the
/// served registry's search API (which ranks without a score).
async fn served_search(
    url: &str,
    query: &str,
    format: Format,
    limit: usize,
    g: &Globals,
) -> CliResult {
    let hits = ops::served_search(url, query, limit, &policy(g))
        .await
        .map_err(served_error)?;
    print_hits(&hits, query, format, |h| {
        (&h.name, &h.version, &h.description)
    })
}

/// Search hits as `registry search` prints them, from a file or a served registry: JSON as
/// given, or one `NAME@VERSION  description` line each (the description on one line).
fn print_hits<H: serde::Serialize>(
    hits: &[H],
    query: &str,
    format: Format,
    fields: impl Fn(&H) -> (&str, &str, &str),
) -> CliResult {
    match format {
        Format::Json => out!("{}", serde_json::to_string_pretty(hits).expect("json")),
        Format::Text => {
            if hits.is_empty() {
                err!("No skill matches {query:?}");
            }
            for h in hits {
                let (name, version, description) = fields(h);
                let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
                out!(
                    "{}@{}  {}",
                    super::shown_on_stdout(name),
                    super::shown_on_stdout(version),
                    super::shown_on_stdout(&description)
                );
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// `skillcat registry versions LOCATION NAME [--format]`
async fn versions(db: &Path, name: &str, format: Format) -> CliResult {
    let list = ops::versions(&ops::location(db), name).await;
    print_versions(list.map_err(versions_error)?, format)
}

/// Every version, as `registry versions` prints them for a file and a served registry alike.
fn print_versions(list: Vec<skillcat::registry::VersionInfo>, format: Format) -> CliResult {
    match format {
        Format::Json => out!("{}", serde_json::to_string_pretty(&list).expect("json")),
        Format::Text => {
            for v in &list {
                let flags = ops::marks(v);
                let flags = if flags.is_empty() {
                    String::new()
                } else {
                    format!("  [{}]", flags.join("; "))
                };
                // A served registry's answer is someone else's text: shown safely on a terminal.
                let safe = super::shown_on_stdout;
                out!(
                    "{}  {}  {}{}",
                    safe(&v.version),
                    safe(&v.digest),
                    safe(&v.published),
                    safe(&flags)
                );
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// The subcommands' definitions; what each does is tested through the binary
/// (`tests/integration/registry/commands.rs`).
/// `skillcat registry gc LOCATION [--grace TIME] [--dry-run] [--format]`
async fn gc(db: &Path, grace: std::time::Duration, dry_run: bool, format: Format) -> CliResult {
    let (shown, report) = ops::gc(db, grace, dry_run).await.map_err(|e| fail(&e))?;
    if format == Format::Json {
        out!("{}", serde_json::to_string_pretty(&report).expect("json"));
        return Ok(ExitStatus::Success);
    }
    let Some(r) = report else {
        out!("{shown} keeps its blobs in its database: nothing to collect");
        return Ok(ExitStatus::Success);
    };
    for hex in &r.collected {
        out!(
            "{} sha256:{hex}",
            if dry_run { "Would delete" } else { "Deleted" }
        );
    }
    out!(
        "{} {} of {} blobs in {} ({} referenced, {} unreferenced but younger than {})",
        if dry_run {
            "Would collect"
        } else {
            "Collected"
        },
        r.collected.len(),
        r.held,
        r.store,
        r.referenced,
        r.young,
        match grace.as_secs() {
            s if s > 0 && s % 3600 == 0 => format!("{}h", s / 3600),
            s if s > 0 && s % 60 == 0 => format!("{}m", s / 60),
            s => format!("{s}s"),
        },
    );
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(subcommand)]
        cmd: RegistryCommand,
    }

    #[test]
    fn every_subcommand_has_an_example() {
        let cmd = Wrapper::command();
        for sub in cmd.get_subcommands() {
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.starts_with("Example: skillcat registry "),
                "{}: {help:?}",
                sub.get_name()
            );
        }
        Wrapper::command().debug_assert();
    }
}
