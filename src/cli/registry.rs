//! `skillcat registry …`: create a registry, publish into it, yank, search, list versions.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Subcommand;
use serde_json::json;
use skillcat::registry::{
    Outcome, PublishOptions, Published, Registry, RegistryError, VersionLimits, parse_spec,
};
use skillcat::sign::Keyring;
use skillcat::source::{self, DirOptions, DirSource, Source, SourceExt};

use super::{CliError, CliResult, ExitStatus, Format};

/// The `registry` subcommands.
#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// Create an empty registry (a SQLite file; it must not exist yet).
    #[command(after_help = "Example: skillcat registry init skills.db")]
    Init {
        /// The registry file to create.
        db: PathBuf,
    },
    /// Publish skills as immutable versions; a neighbour SOURCE.minisig (or SOURCE.NAME.minisig)
    /// signature is picked up and stored.
    #[command(
        after_help = "Example: skillcat registry publish skills.db pdf-forms.tar.gz --keyring keyring.toml"
    )]
    Publish {
        /// The registry file.
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
        /// The registry file.
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
        /// The registry file.
        db: PathBuf,
        /// Words to look for (any text: it is never read as query syntax).
        query: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        /// At most this many results.
        #[arg(long, default_value_t = std::num::NonZeroUsize::new(20).expect("20 is not zero"))]
        limit: std::num::NonZeroUsize,
    },
    /// List every version of a skill in semver order, with digest, date, yanked and latest.
    #[command(after_help = "Example: skillcat registry versions skills.db pdf-forms --format json")]
    Versions {
        /// The registry file.
        db: PathBuf,
        /// The skill's name.
        name: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
}

/// Runs one `registry` subcommand; returns the exit code.
pub async fn run(cmd: RegistryCommand) -> CliResult {
    match cmd {
        RegistryCommand::Init { db } => init(&db),
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
            let args = PublishArgs {
                sig: sig.as_deref(),
                version,
                keyring: keyring.as_deref(),
                limits: VersionLimits {
                    max_bytes: max_version_size,
                    max_files: max_version_files as usize,
                },
                format,
            };
            publish(&db, &sources, args).await
        }
        RegistryCommand::Yank { db, spec, undo } => yank(&db, &spec, undo),
        RegistryCommand::Search {
            db,
            query,
            format,
            limit,
        } => search(&db, &query, format, limit.get()),
        RegistryCommand::Versions { db, name, format } => versions(&db, &name, format),
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

/// `skillcat registry init DB`
fn init(db: &Path) -> CliResult {
    match Registry::init(db) {
        Ok(r) => {
            let version = r.schema_version().unwrap_or_default();
            out!(
                "Created registry {} (schema version {version})",
                r.display()
            );
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(fail(&e)),
    }
}

struct PublishArgs<'a> {
    sig: Option<&'a Path>,
    version: Option<String>,
    keyring: Option<&'a Path>,
    limits: VersionLimits,
    format: Format,
}

/// One opened SOURCE argument and the skill roots it offers.
struct Opened {
    spec: String,
    src: Arc<dyn Source>,
    roots: Vec<String>,
}

/// A skill directory (one with a document) is one skill; anything else goes through
/// [`source::open`].
fn open_source(spec: &str) -> skillcat::Result<Arc<dyn Source>> {
    let path = Path::new(spec);
    if path.is_dir() && skillcat::source::has_document_entry(path) {
        Ok(Arc::new(DirSource::open_skill(
            path,
            DirOptions::default(),
        )?))
    } else {
        source::open(spec)
    }
}

fn read_text(path: &Path, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))
}

/// `skillcat registry publish DB SOURCE... [--sig FILE] [--version V] [--keyring FILE]`
async fn publish(db: &Path, specs: &[String], args: PublishArgs<'_>) -> CliResult {
    let keyring = match args.keyring.map(Keyring::load).transpose() {
        Ok(k) => k,
        Err(e) => {
            return Err(usage!("{e}"));
        }
    };
    let given_sig = match args.sig.map(|p| read_text(p, "signature")).transpose() {
        Ok(s) => s,
        Err(e) => {
            return Err(usage!("{e}"));
        }
    };
    // Every source is opened and listed before anything is written.
    let mut opened = Vec::with_capacity(specs.len());
    for spec in specs {
        let listed = match open_source(spec) {
            Ok(src) => src.list().await.map(|roots| (src, roots)),
            Err(e) => Err(e),
        };
        match listed {
            Ok((src, roots)) => opened.push(Opened {
                spec: spec.clone(),
                src,
                roots,
            }),
            Err(skillcat::Error::NotFound(_)) => {
                return Err(usage!("Path does not exist: {spec}"));
            }
            Err(e) => {
                return Err(usage!("{spec}: {e}"));
            }
        }
    }
    let total: usize = opened.iter().map(|o| o.roots.len()).sum();
    if total == 0 {
        return Err(failed!("no skill found in {}", specs.join(", ")));
    }
    if given_sig.is_some() && total != 1 {
        return Err(usage!(
            "--sig names the signature of one skill; the sources hold {total}"
        ));
    }
    if let (Some(v), true) = (&args.version, total != 1) {
        return Err(usage!(
            "--version sets the version of one skill; the sources hold {total}. Give each \
             skill its own in its SKILL.md frontmatter (metadata:\n  version: \"{v}\"), or \
             publish them one at a time"
        ));
    }
    let mut registry = match Registry::open(db) {
        Ok(r) => r,
        Err(e) => return Err(fail(&e)),
    };
    let bar = progress_bar(total);
    let mut results = Vec::with_capacity(total);
    let mut code = ExitStatus::Success;
    // Skills refused for want of a version: named together at the end, with how to set it.
    let mut unversioned = Vec::new();
    for o in &opened {
        let single = o.roots.len() == 1;
        for root in &o.roots {
            let shown_root = o.src.location(root);
            bar.set_message(shown_root.clone());
            let kept = kept_by_source(o, root, single).await;
            let outcome = match kept {
                Ok((version, found)) => {
                    let opts = PublishOptions {
                        // The version given, else the one the source keeps (a registry's),
                        // else the skill's metadata.version.
                        version: args.version.clone().or(version),
                        signature: given_sig.clone().or(found),
                        keyring: keyring.as_ref(),
                        limits: args.limits,
                        ..Default::default()
                    };
                    registry
                        .publish(&*o.src, root, &opts)
                        .await
                        .map_err(Failure::Registry)
                }
                Err(e) => Err(Failure::Unreadable(e)),
            };
            bar.suspend(|| match &outcome {
                Ok(p) if args.format == Format::Text => print_published(p),
                Ok(_) => {}
                Err(f) if args.format == Format::Text => f.print(&shown_root),
                Err(_) => {}
            });
            match outcome {
                Ok(p) => results.push(json!({"source": o.spec, "root": root, "published": p})),
                Err(f) => {
                    code = code.max(f.status());
                    if let Failure::Registry(RegistryError::MissingVersion { name }) = &f {
                        unversioned.push((name.clone(), shown_root.clone()));
                    }
                    results.push(f.to_json(&o.spec, root, &shown_root));
                }
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    if total > 1 && !unversioned.is_empty() && args.format == Format::Text {
        err!(
            "{} of {total} skills were not published for want of a version: {}",
            unversioned.len(),
            unversioned
                .iter()
                .map(|(n, at)| format!("{n} ({at})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        err!(
            "Set it in each one's SKILL.md frontmatter, then publish again:\n  metadata:\n    \
             version: \"1.0.0\"\n(--version V sets the version of one skill: `skillcat registry \
             publish {} SKILL-DIR --version V`)",
            db.display()
        );
    }
    if args.format == Format::Json {
        out!("{}", serde_json::to_string_pretty(&results).expect("json"));
    }
    Ok(code)
}

/// Why one skill was not published.
enum Failure {
    Registry(RegistryError),
    Unreadable(String),
}

impl Failure {
    fn status(&self) -> ExitStatus {
        match self {
            Failure::Registry(e) => fail(e).status(),
            Failure::Unreadable(_) => ExitStatus::Unreadable,
        }
    }

    fn print(&self, location: &str) {
        match self {
            Failure::Registry(RegistryError::InvalidSkill {
                location: at,
                faults,
            }) => {
                err!("Refusing to publish {at}:");
                for f in faults {
                    err!("  - {} [{}]", f.message(), f.kind());
                }
            }
            Failure::Registry(e) => err!("Error: {location}: {e}"),
            Failure::Unreadable(e) => err!("Error: {location}: {e}"),
        }
    }

    fn to_json(&self, spec: &str, root: &str, location: &str) -> serde_json::Value {
        let faults: Vec<_> = match self {
            Failure::Registry(e) => e
                .faults()
                .iter()
                .map(|f| json!({"kind": f.kind().as_str(), "message": f.message()}))
                .collect(),
            Failure::Unreadable(_) => Vec::new(),
        };
        let error = match self {
            Failure::Registry(e) => e.to_string(),
            Failure::Unreadable(e) => e.clone(),
        };
        json!({"source": spec, "root": root, "location": location, "error": error, "faults": faults})
    }
}

/// What the source keeps about one skill to publish: the version it holds it as (a registry's,
/// an index entry's) and a signature — one it keeps with the skill, else the file beside it
/// (`SOURCE.minisig`, or `SOURCE.NAME.minisig` for a source of several skills, as `skillcat
/// pack --sign` and `skillcat sign` write them).
async fn kept_by_source(
    o: &Opened,
    root: &str,
    single: bool,
) -> Result<(Option<String>, Option<String>), String> {
    // The file is named after the skill; a skill that does not load has no name (publish then
    // reports why it does not load).
    let Ok(skill) = o.src.load(root).await else {
        return Ok((None, None));
    };
    let record = o.src.record(root).await.map_err(|e| e.to_string())?;
    let found =
        skillcat::sign::source_signatures::signatures_of(&o.spec, &*o.src, &skill, &record, single)
            .map_err(|e| e.to_string())?;
    Ok((record.version, found.into_iter().next().map(|f| f.text)))
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

/// A progress bar on a terminal for more than one skill; nothing when stderr is piped.
fn progress_bar(total: usize) -> indicatif::ProgressBar {
    if total < 2 || !std::io::stderr().is_terminal() || super::quiet() {
        return indicatif::ProgressBar::hidden();
    }
    let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}")
        .expect("a valid template");
    indicatif::ProgressBar::new(total as u64).with_style(style)
}

/// `skillcat registry yank DB NAME@VERSION [--undo]`
fn yank(db: &Path, spec: &str, undo: bool) -> CliResult {
    let (name, version) = match parse_spec(spec) {
        Ok(nv) => nv,
        Err(e) => return Err(fail(&e)),
    };
    let mut registry = match Registry::open(db) {
        Ok(r) => r,
        Err(e) => return Err(fail(&e)),
    };
    let changed = if undo {
        registry.unyank(name, version)
    } else {
        registry.yank(name, version)
    };
    match changed {
        Ok(changed) => {
            let verb = if undo { "unyanked" } else { "yanked" };
            if changed {
                out!(
                    "{}{} {name}@{version}",
                    verb[..1].to_uppercase(),
                    &verb[1..]
                );
            } else {
                out!(
                    "{name}@{version} was already {}",
                    if undo { "not yanked" } else { "yanked" }
                );
            }
            match registry.latest(name) {
                Ok(Some(latest)) => out!("Latest {name} is {}", latest.version),
                Ok(None) => out!("{name} has no unyanked version left"),
                Err(e) => return Err(fail(&e)),
            }
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(fail(&e)),
    }
}

/// `skillcat registry search DB QUERY [--format] [--limit N]`
fn search(db: &Path, query: &str, format: Format, limit: usize) -> CliResult {
    let hits = match Registry::open_read_only(db).and_then(|r| r.search(query, limit)) {
        Ok(h) => h,
        Err(e) => return Err(fail(&e)),
    };
    match format {
        Format::Json => out!("{}", serde_json::to_string_pretty(&hits).expect("json")),
        Format::Text => {
            if hits.is_empty() {
                err!("No skill matches {query:?}");
            }
            for h in &hits {
                let description = h
                    .description
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                out!("{}@{}  {description}", h.name, h.version);
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// `skillcat registry versions DB NAME [--format]`
fn versions(db: &Path, name: &str, format: Format) -> CliResult {
    let list = match Registry::open_read_only(db).and_then(|r| r.versions(name)) {
        Ok(v) => v,
        Err(e) => return Err(fail(&e)),
    };
    if list.is_empty() {
        return Err(failed!("no skill named '{name}' in {}", db.display()));
    }
    match format {
        Format::Json => out!("{}", serde_json::to_string_pretty(&list).expect("json")),
        Format::Text => {
            for v in &list {
                let mut flags = Vec::new();
                if v.latest {
                    flags.push("latest".to_string());
                }
                if v.yanked {
                    flags.push("yanked".to_string());
                }
                if !v.signed_by.is_empty() {
                    flags.push(format!("signed by {}", v.signed_by.join(", ")));
                }
                let flags = if flags.is_empty() {
                    String::new()
                } else {
                    format!("  [{}]", flags.join("; "))
                };
                out!("{}  {}  {}{flags}", v.version, v.digest, v.published);
            }
        }
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    const OK: ExitStatus = ExitStatus::Success;
    const FAULTS: ExitStatus = ExitStatus::Faults;
    const USAGE: ExitStatus = ExitStatus::Unreadable;

    /// The status a command ends the process with, its error's included.
    async fn run(cmd: RegistryCommand) -> ExitStatus {
        super::run(cmd).await.unwrap_or_else(|e| e.status())
    }

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(subcommand)]
        cmd: RegistryCommand,
    }

    fn parse(args: &[&str]) -> RegistryCommand {
        Wrapper::try_parse_from(std::iter::once("registry").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .cmd
    }

    fn catalog(root: &str) -> String {
        format!(
            "{}/fixtures/conformance/catalog/{root}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    #[test]
    fn every_subcommand_has_an_example() {
        use clap::CommandFactory;
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

    #[tokio::test]
    async fn init_publish_yank_search_versions() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("r.db");
        let db_s = db.to_str().unwrap();
        assert_eq!(run(parse(&["init", db_s])).await, OK);
        assert_eq!(
            run(parse(&["init", db_s])).await,
            FAULTS,
            "init refuses an existing registry"
        );

        let alpha = catalog("alpha");
        assert_eq!(
            run(parse(&["publish", db_s, &alpha])).await,
            FAULTS,
            "no version: refused"
        );
        assert_eq!(
            run(parse(&["publish", db_s, &alpha, "--version", "1.0.0"])).await,
            OK
        );
        assert_eq!(
            run(parse(&["publish", db_s, &alpha, "--version", "1.0.0"])).await,
            OK,
            "unchanged"
        );
        assert_eq!(
            run(parse(&[
                "publish",
                db_s,
                &alpha,
                "--version",
                "1.1.0",
                "--format",
                "json"
            ]))
            .await,
            OK
        );
        assert_eq!(
            run(parse(&[
                "publish",
                db_s,
                &catalog("bad-yaml"),
                "--version",
                "1.0.0"
            ]))
            .await,
            FAULTS
        );
        assert_eq!(
            run(parse(&[
                "publish",
                db_s,
                "/nonexistent/skill",
                "--version",
                "1.0.0"
            ]))
            .await,
            USAGE
        );
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert_eq!(
            run(parse(&["publish", db_s, empty.to_str().unwrap()])).await,
            FAULTS,
            "nothing to publish is not a success"
        );
        // A directory of skills: --version would give every one the same version, so it is
        // refused before anything is written; without it, the skills that have no
        // metadata.version are refused (and named), the others published.
        let all = catalog("");
        assert_eq!(
            run(parse(&["publish", db_s, &all, "--version", "2.0.0"])).await,
            USAGE
        );
        let reg = Registry::open_read_only(&db).unwrap();
        assert_eq!(reg.latest("alpha").unwrap().unwrap().version, "1.1.0");
        assert!(reg.versions("beta-tool").unwrap().is_empty());
        drop(reg);
        assert_eq!(run(parse(&["publish", db_s, &all])).await, FAULTS);
        assert_eq!(
            run(parse(&["publish", db_s, &alpha, "--version", "2.0.0"])).await,
            OK
        );

        assert_eq!(run(parse(&["yank", db_s, "alpha@2.0.0"])).await, OK);
        assert_eq!(
            run(parse(&["yank", db_s, "alpha@2.0.0"])).await,
            OK,
            "already yanked"
        );
        assert_eq!(run(parse(&["yank", db_s, "alpha@9.9.9"])).await, FAULTS);
        assert_eq!(run(parse(&["yank", db_s, "alpha"])).await, USAGE);
        let reg = Registry::open_read_only(&db).unwrap();
        assert_eq!(reg.latest("alpha").unwrap().unwrap().version, "1.1.0");
        drop(reg);
        assert_eq!(
            run(parse(&["yank", db_s, "alpha@2.0.0", "--undo"])).await,
            OK
        );

        assert_eq!(
            run(parse(&["search", db_s, "alpha", "--format", "json"])).await,
            OK
        );
        assert_eq!(run(parse(&["search", db_s, "\" NEAR( -x:y *"])).await, OK);
        assert_eq!(run(parse(&["versions", db_s, "alpha"])).await, OK);
        assert_eq!(run(parse(&["versions", db_s, "nope"])).await, FAULTS);
        let missing = tmp.path().join("missing.db");
        assert_eq!(
            run(parse(&["search", missing.to_str().unwrap(), "x"])).await,
            USAGE
        );
    }

    #[tokio::test]
    async fn sig_names_one_skill_only() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("r.db");
        let db_s = db.to_str().unwrap();
        let sig = tmp.path().join("x.minisig");
        std::fs::write(&sig, "not a signature").unwrap();
        assert_eq!(run(parse(&["init", db_s])).await, OK);
        let args = [
            "publish",
            db_s,
            &catalog(""),
            "--sig",
            sig.to_str().unwrap(),
            "--version",
            "1.0.0",
        ];
        assert_eq!(run(parse(&args)).await, USAGE);
        let args = [
            "publish",
            db_s,
            &catalog("alpha"),
            "--sig",
            sig.to_str().unwrap(),
            "--version",
            "1.0.0",
        ];
        assert_eq!(
            run(parse(&args)).await,
            FAULTS,
            "a malformed signature is refused"
        );
    }

    #[tokio::test]
    async fn neighbour_signature_is_used_and_verified() {
        use skillcat::sign;
        let tmp = tempfile::tempdir().unwrap();
        let skill = tmp.path().join("alpha");
        std::fs::create_dir(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: alpha\ndescription: d\nmetadata:\n  version: 1.0.0\n---\nBody\n",
        )
        .unwrap();
        let (public, secret) = sign::generate_keypair(None).unwrap();
        let src = DirSource::open_skill(&skill, DirOptions::default()).unwrap();
        let m = src.manifest("", "alpha", "1.0.0").await.unwrap();
        let sig = sign::sign(&sign::Statement::from_manifest(&m).unwrap(), &secret, None).unwrap();
        let spec = skill.to_str().unwrap();
        std::fs::write(sign::skill_signature_path(spec, "alpha", true), &sig).unwrap();
        let ring = tmp.path().join("keyring.toml");
        std::fs::write(
            &ring,
            format!(
                "[[key]]\npublic_key = \"{}\"\nscopes = [\"alpha\"]\n",
                sign::public_key_base64(&public).unwrap()
            ),
        )
        .unwrap();
        let db = tmp.path().join("r.db");
        let db_s = db.to_str().unwrap();
        assert_eq!(run(parse(&["init", db_s])).await, OK);
        let ring_s = ring.to_str().unwrap();
        assert_eq!(
            run(parse(&["publish", db_s, spec, "--keyring", ring_s])).await,
            OK
        );
        let reg = Registry::open_read_only(&db).unwrap();
        let key = sign::key_id_of_public_key(&public).unwrap();
        assert_eq!(reg.latest("alpha").unwrap().unwrap().signed_by, [key]);
    }
}
