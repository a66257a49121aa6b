//! Command definitions and dispatch.

/// `println!` without the panic: a closed stdout (`skillcat list | head -1`) is not a crash.
macro_rules! out {
    ($($arg:tt)*) => {{
        let _ = writeln!($crate::cli::Stream::Out, $($arg)*);
    }};
}

/// `eprintln!` without the panic.
macro_rules! err {
    ($($arg:tt)*) => {{
        let _ = writeln!($crate::cli::Stream::Err, $($arg)*);
    }};
}

/// A warning or a note on stderr, as `err!` writes it, unless `-q` asked for results and
/// errors only.
macro_rules! note {
    ($($arg:tt)*) => {{
        if !$crate::cli::quiet() {
            let _ = writeln!($crate::cli::Stream::Err, $($arg)*);
        }
    }};
}

/// A [`CliError::Usage`] (exit 2) of a formatted message, or of an error kept whole as its
/// cause: `usage!(cause = e)`, `usage!(cause = e, "what was being done")`.
macro_rules! usage {
    (cause = $e:expr) => {
        $crate::cli::CliError::Usage($crate::cli::Message::caused(None, $e))
    };
    (cause = $e:expr, $($arg:tt)*) => {
        $crate::cli::CliError::Usage($crate::cli::Message::caused(Some(format!($($arg)*)), $e))
    };
    ($($arg:tt)*) => {
        $crate::cli::CliError::Usage(format!($($arg)*).into())
    };
}

/// A [`CliError::Failed`] (exit 1) of a formatted message, or of an error kept whole as its
/// cause: `failed!(cause = e)`, `failed!(cause = e, "what was being done")`.
macro_rules! failed {
    (cause = $e:expr) => {
        $crate::cli::CliError::Failed($crate::cli::Message::caused(None, $e))
    };
    (cause = $e:expr, $($arg:tt)*) => {
        $crate::cli::CliError::Failed($crate::cli::Message::caused(Some(format!($($arg)*)), $e))
    };
    ($($arg:tt)*) => {
        $crate::cli::CliError::Failed(format!($($arg)*).into())
    };
}

/// `-q`: stderr carries errors only. Set once, by [`run`], before any command starts: a
/// property of the output streams (as ripgrep keeps its message switches), not an option a
/// command reads.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `-q` was given: warnings, notes and progress are not shown.
pub(crate) fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// Where `out!` and `err!` write: stdout or stderr, each line whole under the stream's lock.
/// In the command line's own unit tests the lines go through the test harness instead
/// (`print!`), which keeps a passing test's expected errors out of the test log.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    /// Standard output.
    Out,
    /// Standard error.
    Err,
}

impl std::io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if cfg!(test) {
            let text = String::from_utf8_lossy(buf);
            match self {
                Stream::Out => print!("{text}"),
                Stream::Err => eprint!("{text}"),
            }
            return Ok(());
        }
        match self {
            Stream::Out => std::io::stdout().lock().write_all(buf),
            Stream::Err => std::io::stderr().lock().write_all(buf),
        }
    }

    /// The whole line formatted first, then written at once.
    fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
        self.write_all(args.to_string().as_bytes())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Out => std::io::stdout().flush(),
            Stream::Err => std::io::stderr().flush(),
        }
    }
}

mod audit;
mod central;
mod error;
mod init;
mod install;
mod keyring;
mod lazy;
mod login;
mod matching;
mod mcp;
mod oci;
mod project;
mod publish;
mod read;
mod registry;
mod remote;
mod script;
mod shell;
mod token;
mod trust;

pub use error::{Cause, CliError, Message};

use clap::{Parser, Subcommand, ValueEnum};
use lazy::{Lazy, LazySub, WithRemote, WithServer};

/// Refuses (exit 2, naming it) an output path whose directory does not exist, before any work
/// is done: every command that writes a file or a folder checks its output here.
pub(crate) fn output_dir_exists(path: &std::path::Path) -> Result<(), CliError> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(usage!(
            "cannot write {}: the directory {} does not exist",
            path.display(),
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// Text from a skill or a store as it is printed for people (`list`, `show` and `prompt` on a
/// terminal, warnings, faults, hints): the audit's [`skillcat::audit::shown`].
pub(crate) use skillcat::audit::shown;

/// The TLS configuration `--tls-cert` and `--tls-key` give (`serve`, `mcp --http`), read
/// before anything is served; `None` without a certificate.
#[cfg(feature = "tls")]
fn tls_config(
    cert: Option<&std::path::Path>,
    key: Option<&std::path::Path>,
) -> Result<Option<skillcat::ops::mcp::TlsConfig>, CliError> {
    let (Some(cert), Some(key)) = (cert, key) else {
        return Ok(None);
    };
    skillcat::serve::server_config(cert, key)
        .map(Some)
        .map_err(|e| usage!("{e}"))
}

/// Without the `tls` feature, `--tls-cert` is refused.
#[cfg(not(feature = "tls"))]
fn tls_config(
    cert: Option<&std::path::Path>,
    _key: Option<&std::path::Path>,
) -> Result<Option<skillcat::ops::mcp::TlsConfig>, CliError> {
    match cert {
        Some(_) => Err(usage!(
            "--tls-cert needs a skillcat built with the `tls` feature"
        )),
        None => Ok(None),
    }
}

/// A progress bar of `total` steps drawn by `template` on stderr when it is a terminal, `-q`
/// was not given and there are at least `at_least` steps; a hidden one otherwise.
pub(crate) fn progress_bar(
    total: usize,
    at_least: usize,
    template: &str,
) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if total < at_least || !std::io::stderr().is_terminal() || quiet() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// Text a program may consume on stdout (`show`'s body, `prompt`'s block): [`shown`] when
/// stdout is a terminal, where a person reads it; byte for byte into a pipe or a file, where a
/// program gets exactly what the skill says (the audit, not the printer, is what refuses a
/// skill hiding text).
pub(crate) fn shown_on_stdout(s: &str) -> std::borrow::Cow<'_, str> {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        shown(s)
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// How a command that ran to its end went; what it found was printed as it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// All good: exit 0.
    Success,
    /// Faults found, or the thing checked failed: exit 1.
    Faults,
    /// Some input could not be read (said so, the rest done): exit 2.
    Unreadable,
}

impl ExitStatus {
    /// [`ExitStatus::Faults`] when `faults`, else [`ExitStatus::Success`].
    pub fn faults_if(faults: bool) -> ExitStatus {
        if faults {
            ExitStatus::Faults
        } else {
            ExitStatus::Success
        }
    }
}

impl ExitStatus {
    /// The process's exit code for this status.
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Faults => 1,
            ExitStatus::Unreadable => 2,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        match status {
            ExitStatus::Success => std::process::ExitCode::SUCCESS,
            ExitStatus::Faults => std::process::ExitCode::from(1),
            ExitStatus::Unreadable => std::process::ExitCode::from(2),
        }
    }
}

/// What every command returns: how it went, or why it stopped.
pub type CliResult = Result<ExitStatus, CliError>;

/// Catalog Agent Skills (SKILL.md bundles) from directories, archives, registries and URLs.
#[derive(Debug, Parser)]
#[command(name = "skillcat", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Configuration file [default: ./skillcat.toml when it exists (a project's: it counts only
    /// as far as your own allows until `skillcat trust project`), else
    /// ~/.config/skillcat/skillcat.toml (your own), else the built-in defaults].
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Print only results and errors: no warnings, notes or progress on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Say more where a command has more to say (`prompt`: every description shortened and
    /// skill omitted; `serve`: every request).
    #[arg(short, long, global = true)]
    verbose: bool,
    /// Remote-source options given before the command (each command that reads remote sources
    /// takes them after it too, and lists them in its help).
    #[command(flatten)]
    remote: RemoteArgs,
}

impl Cli {
    /// Whether the command may run a skill's scripts (`run`, `mcp`): their sandbox helpers are
    /// forked from a zygote the binary makes before any thread starts.
    pub fn runs_scripts(&self) -> bool {
        matches!(self.command, Command::Run(_) | Command::Mcp(_))
    }

    /// Whether the command makes one run and exits (`skillcat run`).
    pub fn makes_one_run(&self) -> bool {
        matches!(self.command, Command::Run(_))
    }
}

/// How remote sources and servers are reached: the options of every command that reads a
/// remote source (http(s) indexes, `oci://`, `git+…`) or talks to a server.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Remote sources")]
pub struct RemoteArgs {
    /// Cache directory for remote (http/https, OCI) sources.
    #[arg(long, value_name = "DIR")]
    cache: Option<std::path::PathBuf>,
    /// Use only what is cached for remote sources; never touch the network.
    #[arg(long)]
    offline: bool,
    /// The most entries of a remote index that are read (default 10000; the rest are counted
    /// in a warning).
    #[arg(long, value_name = "N")]
    max_index_entries: Option<std::num::NonZeroUsize>,
    /// Speak plain HTTP to an OCI registry that is not on this machine (a registry on
    /// localhost or 127.0.0.1 is always reached over plain HTTP).
    #[arg(long)]
    allow_insecure: bool,
    /// The longest a cached remote index is used without asking its server again, whatever
    /// its Cache-Control says: `1h` (default), `10m`, `0` (always ask). add, install and update
    /// always ask (a conditional request).
    #[arg(long, value_name = "TIME", value_parser = remote::parse_age)]
    max_index_age: Option<std::time::Duration>,
    /// Use a remote index only with a valid signed statement beside it
    /// (`index.json.minisig`, from `export --sign-index`) by a key of this keyring: refuse a
    /// tampered, expired, rolled-back or unsigned index.
    #[arg(long, value_name = "FILE")]
    index_keyring: Option<std::path::PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
}

/// How a server is reached: for every command that talks to one.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Remote sources")]
pub struct ServerArgs {
    /// Deadline of one request to a server, retries included: `60s`, `500ms`, `2m`.
    #[arg(long, value_name = "TIME", value_parser = remote::parse_duration)]
    timeout: Option<std::time::Duration>,
    /// Trust this CA certificate (PEM) for https, besides the system's, in every request to a
    /// server: remote sources, OCI registries, a central registry, embedding providers
    /// (repeatable; SSL_CERT_FILE=FILE instead replaces the system's certificates).
    #[arg(long, value_name = "PEM")]
    cacert: Vec<std::path::PathBuf>,
}

impl RemoteArgs {
    /// What these options name with `after`'s (given after the command) on top.
    fn settings(&self, after: &RemoteArgs) -> skillcat::context::RemoteSettings {
        skillcat::context::RemoteSettings {
            cache: after.cache.clone().or_else(|| self.cache.clone()),
            offline: self.offline || after.offline,
            max_index_entries: (after.max_index_entries.or(self.max_index_entries))
                .map(std::num::NonZeroUsize::get),
            allow_insecure: self.allow_insecure || after.allow_insecure,
            max_index_age: after.max_index_age.or(self.max_index_age),
            index_keyring: (after.index_keyring.as_ref().or(self.index_keyring.as_ref())).cloned(),
            timeout: after.server.timeout.or(self.server.timeout),
            ca_files: [&self.server.cacert[..], &after.server.cacert[..]].concat(),
            // On a terminal, a slow server is named while it is waited for.
            slow_notice: (std::io::IsTerminal::is_terminal(&std::io::stderr()) && !quiet())
                .then(|| std::time::Duration::from_secs(5)),
        }
    }

    /// Only the server options, given after a command that talks to a server but reads no
    /// source.
    fn of_server(server: ServerArgs) -> RemoteArgs {
        RemoteArgs {
            server,
            ..RemoteArgs::default()
        }
    }
}

/// What every command runs with: the library's [`skillcat::context::Context`], built once by
/// [`run`] from the command line's options and the process's environment, and lent to every
/// command.
pub type Globals = skillcat::context::Context;

/// The context of the remote settings given, the configuration file and the output settings;
/// a file the settings name that cannot be read is a usage error.
fn context_of(
    remote: &skillcat::context::RemoteSettings,
    config: Option<std::path::PathBuf>,
    verbose: bool,
) -> Result<Globals, CliError> {
    let mut ctx = Globals::new(skillcat::context::Env::from_process())
        .with_remote(remote)
        .map_err(|e| usage!("{e}"))?;
    ctx.config_file = config;
    ctx.verbose = verbose;
    ctx.quiet = quiet();
    Ok(ctx)
}

/// The configuration of the context (read once), its note printed when a trusted project's
/// file changed; every command reads it here and says the same thing when it cannot be read.
pub(crate) fn configuration(
    g: &Globals,
) -> Result<(skillcat::config::Config, skillcat::config::Environment), CliError> {
    let env = g.env.environment().map_err(context_error)?;
    let config = g.config().map_err(context_error)?;
    static NOTED: std::sync::Once = std::sync::Once::new();
    NOTED.call_once(|| project::note_changed(&config));
    Ok(((*config).clone(), env))
}

/// A context error as every command says it (exit 2): a keyring that is something else says
/// what a keyring is and how to make one.
pub(crate) fn context_error(e: skillcat::context::ContextError) -> CliError {
    use skillcat::context::ContextError;
    match e {
        ContextError::Keyring { path, source } => keyring::keyring_error(&path, &source),
        ContextError::NoHome { what } => {
            usage!("no home directory ($HOME) for {what}; pass --keyring FILE")
        }
        ContextError::NoKeyring { default } => usage!(
            "no keyring: pass --keyring FILE, set `keyring` in skillcat.toml, or add a \
             key to {} with `skillcat trust add KEY.pub --scope 'NAME-PATTERN'`",
            default.display()
        ),
        e => usage!("{e}"),
    }
}

/// Output format of reporting commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Lines for people.
    #[default]
    Text,
    /// JSON for programs.
    Json,
}

/// Rendering of the prompt block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum PromptFormatArg {
    /// `<available_skills>` XML, as the reference renders it.
    #[default]
    Xml,
    /// A Markdown list.
    Markdown,
    /// JSON.
    Json,
}

/// `skillcat digest`.
#[derive(Debug, clap::Args)]
pub struct DigestArgs {
    /// Any source.
    pub source: String,
    /// Only this skill (`NAME@VERSION`: that version, in a registry).
    pub name: Option<String>,
    /// Output format (json prints each manifest).
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `skillcat pack`.
#[derive(Debug, clap::Args)]
pub struct PackArgs {
    /// A skill directory or a directory of skills.
    pub dir: String,
    /// The archive to write (`.tar.gz`, `.tgz` or `.zip`).
    #[arg(short, long)]
    pub output: std::path::PathBuf,
    /// Sign each packed skill with this minisign secret key (writes `OUT.minisig`).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<String>,
    /// Pack skills that fail validation.
    #[arg(long)]
    pub force: bool,
}

/// `skillcat keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Base path of the two files.
    #[arg(short, long, value_name = "KEYBASE")]
    pub output: String,
    /// Store the secret key without a password.
    #[arg(long)]
    pub unencrypted: bool,
    /// Overwrite existing files.
    #[arg(long)]
    pub force: bool,
}

/// `skillcat sign`.
#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// Any source.
    pub source: String,
    /// The skill to sign (`NAME@VERSION`: that version, in a registry).
    pub name: String,
    /// The minisign secret key.
    #[arg(long, value_name = "KEY")]
    pub key: String,
    /// Where to write the signature (default: SOURCE.minisig, or SOURCE.NAME.minisig when the
    /// source holds several skills).
    #[arg(short, long, value_name = "SIG")]
    pub output: Option<std::path::PathBuf>,
    /// Also write the signed statement here (for `minisign -V -m FILE`).
    #[arg(long, value_name = "FILE")]
    pub statement: Option<std::path::PathBuf>,
    /// Sign a skill that fails validation (its faults are printed).
    #[arg(long)]
    pub force: bool,
    /// Sign it as this version: for a skill without `metadata.version`, published with
    /// `registry publish … --version V` (a skill without a version is signed with a warning).
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
}

/// `skillcat verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Any source.
    pub source: String,
    /// Only this skill (`NAME@VERSION`: that version, in a registry).
    pub name: Option<String>,
    /// The keyring (TOML) of trusted keys and their scopes [default: `keyring` of
    /// skillcat.toml, else ~/.config/skillcat/keyring.toml, as `trust add` writes it].
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<std::path::PathBuf>,
    /// The signature file, when the source holds one skill (default: what the source keeps,
    /// then SOURCE.minisig).
    #[arg(long, value_name = "FILE")]
    pub sig: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Report every fault of each skill ("Valid skill: P" / "Validation failed for P:").
    #[command(after_help = "Example: skillcat validate fixtures/skills")]
    Validate(Lazy<WithRemote<read::ValidateArgs>>),
    /// Print a skill's frontmatter properties as JSON (like the reference's read-properties).
    #[command(after_help = "Example: skillcat properties fixtures/skills/pdf-forms")]
    Properties(Lazy<read::PropertiesArgs>),
    /// Render the prompt block (tier 1) for the skills of one or more sources.
    #[command(after_help = "Example: skillcat prompt fixtures/skills --budget 2000")]
    Prompt(Lazy<WithRemote<read::PromptArgs>>),
    /// Audit each skill of a source before trusting it: hidden Unicode, secrets, content that
    /// does not belong, undeclared network use or writes, instructions aimed at the host
    /// (docs/audit.md; add, install and update run the same audit and refuse a high finding).
    /// Exit 0 when no finding is at or above --fail-on, 1 when one is, 2 when the source cannot
    /// be read.
    #[command(after_help = "Example: skillcat audit fixtures/skills --format sarif")]
    Audit(Lazy<WithRemote<audit::AuditArgs>>),
    /// List each skill of a source: name, description, location, digest. Faults are reported.
    #[command(after_help = "Example: skillcat list fixtures/skills --format json")]
    List(Lazy<WithRemote<read::ListArgs>>),
    /// Print a skill's instructions (the Markdown body, tier 2).
    #[command(after_help = "Example: skillcat show fixtures/skills pdf-forms")]
    Show(Lazy<WithRemote<read::ShowArgs>>),
    /// Print one file of a skill (tier 3); paths that climb out of the skill are refused.
    #[command(
        after_help = "Example: skillcat read fixtures/skills pdf-forms references/field-types.md"
    )]
    Read(Lazy<WithRemote<read::ReadArgs>>),
    /// Print the skill digest of each skill (`sha256:<hex>  <name>`), or its manifest as JSON.
    #[command(after_help = "Example: skillcat digest fixtures/skills pdf-forms")]
    Digest(Lazy<WithRemote<DigestArgs>>),
    /// Write a reproducible .tar.gz or .zip of a skill or a directory of skills.
    #[command(
        after_help = "Example: skillcat pack fixtures/skills/pdf-forms -o pdf-forms.tar.gz --sign me.key"
    )]
    Pack(Lazy<PackArgs>),
    /// Make a minisign key pair: KEYBASE.key (password-protected unless --unencrypted) and KEYBASE.pub.
    #[command(after_help = "Example: SKILLCAT_PASSWORD=secret skillcat keygen -o release")]
    Keygen(Lazy<KeygenArgs>),
    /// Sign one skill's statement (name, version, skill digest, manifest digest).
    #[command(after_help = "Example: skillcat sign pdf-forms.tar.gz pdf-forms --key release.key")]
    Sign(Lazy<WithRemote<SignArgs>>),
    /// Verify each skill's signature against a keyring, wherever the source keeps it (beside an
    /// archive, in a registry, in a served index or its cache); exit 1 on any failure, saying why.
    #[command(after_help = "Example: skillcat verify pdf-forms.tar.gz --keyring keyring.toml")]
    Verify(Lazy<WithRemote<VerifyArgs>>),
    /// Create a registry (a SQLite file or a PostgreSQL database), publish skills into it, yank,
    /// search, list versions, check it whole, copy it into another and collect its unreferenced
    /// blobs.
    #[command(after_help = "Example: skillcat registry publish skills.db pdf-forms.tar.gz")]
    Registry {
        #[command(subcommand)]
        cmd: LazySub<registry::RegistryCommand>,
    },
    /// Serve a source over HTTP: the well-known indexes and content-addressed blobs.
    #[command(after_help = "Example: skillcat serve fixtures/skills --addr 127.0.0.1:8080")]
    Serve(Lazy<WithRemote<remote::ServeArgs>>),
    /// Write the same tree `serve` answers with as static files, for any static host or CDN.
    #[command(after_help = "Example: skillcat export fixtures/skills public/")]
    Export(Lazy<WithRemote<remote::ExportArgs>>),
    /// Search a catalog served by `skillcat serve`: its skills best first, as its search API
    /// ranks them (a registry's full-text search, else the matcher); exit 1 when none match.
    #[command(
        after_help = "Example: skillcat search https://skills.example.com/ \"fill a pdf form\" --format json"
    )]
    Search(Lazy<WithRemote<remote::SearchArgs>>),
    /// Fill the local cache from a remote index and print what it holds.
    #[command(after_help = "Example: skillcat fetch https://skills.example.com/")]
    Fetch(Lazy<WithRemote<remote::FetchArgs>>),
    /// Show what the cache of remote sources holds, or clean it (`--cache DIR` picks it).
    #[command(after_help = "Example: skillcat cache clean")]
    Cache {
        #[command(subcommand)]
        cmd: remote::CacheCommand,
        /// The cache directory [default: $XDG_CACHE_HOME/skillcat, else ~/.cache/skillcat].
        #[arg(long, value_name = "DIR", global = true)]
        cache: Option<std::path::PathBuf>,
    },
    /// Rank skills for a message: one source's, or the configured catalog's (or evaluate on a
    /// labelled set).
    #[command(
        name = "match",
        after_help = "Examples:\n  skillcat match fixtures/skills \"clean up this csv export\"\n  skillcat match \"clean up this csv export\"   (the configured catalog)"
    )]
    Match(Lazy<WithRemote<matching::MatchArgs>>),
    /// List the script tools a skill offers, with JSON Schema parameters.
    #[command(after_help = "Example: skillcat tools fixtures/skills csv-cleaner --format json")]
    Tools(Lazy<WithRemote<script::ToolsArgs>>),
    /// Run one script of a skill, confined.
    #[command(
        after_help = "Example: skillcat run fixtures/skills csv-cleaner csv_profile --allow-read fixtures/data/orders.csv --args fixtures/data/orders.csv"
    )]
    Run(Lazy<WithRemote<script::RunArgs>>),
    /// Serve skills, the prompt block and confined script tools over MCP (stdio, or Streamable
    /// HTTP with --http ADDR), following changes to the skills.
    #[command(
        after_help = "Example: skillcat mcp fixtures/mcp/skills --config fixtures/mcp/skillcat.toml\n\
                      Over HTTP: skillcat mcp fixtures/mcp/skills --config fixtures/mcp/skillcat.toml --http 127.0.0.1:8765\n\
                      (a client then connects to http://127.0.0.1:8765/mcp; --tokens FILE before listening beyond loopback)"
    )]
    Mcp(Lazy<WithRemote<mcp::McpArgs>>),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) on stdout.
    #[command(
        after_help = "Example: skillcat completions bash > ~/.local/share/bash-completion/completions/skillcat"
    )]
    Completions(Lazy<shell::CompletionsArgs>),
    /// Write man pages (skillcat.1 and one per command, skillcat-list.1, …) into a directory.
    #[command(after_help = "Example: skillcat man man && man -l man/skillcat.1")]
    Man(Lazy<shell::ManArgs>),
    /// Install skills from a source into .agents/skills and agents' folders, pinned in
    /// skills-lock.json.
    #[command(
        after_help = "Examples:\n  skillcat add fixtures/skills pdf-forms --agent claude-code\n  skillcat add git+https://github.com/owner/repo#v1.0:skills --agent all"
    )]
    Add(Lazy<WithRemote<install::AddArgs>>),
    /// Install every skill of skills-lock.json exactly as pinned (CI: --frozen).
    #[command(after_help = "Example: skillcat install --frozen")]
    Install(Lazy<WithRemote<install::InstallArgs>>),
    /// Update installed skills from their sources (a lower version or another signer is refused).
    #[command(after_help = "Example: skillcat update --dry-run")]
    Update(Lazy<WithRemote<install::UpdateArgs>>),
    /// Remove installed skills, their links in agents' folders and their lockfile entries.
    #[command(after_help = "Example: skillcat remove pdf-forms")]
    Remove(Lazy<install::RemoveArgs>),
    /// What is installed, from where, pinned to what; --check: exit 1 on drift.
    #[command(after_help = "Example: skillcat status --check")]
    Status(Lazy<install::StatusArgs>),
    /// Trust signing keys (add, list, revoke), or a project's own skillcat.toml.
    #[command(after_help = "Example: skillcat trust project .")]
    Trust {
        #[command(subcommand)]
        cmd: LazySub<project::TrustCommand>,
    },
    /// Push a skill to an OCI registry as an artifact (ToolHive's layout), signed with --sign.
    #[command(
        after_help = "Example: skillcat push fixtures/skills pdf-forms oci://127.0.0.1:5000/skills/pdf-forms --sign release.key"
    )]
    Push(Lazy<WithRemote<oci::PushArgs>>),
    /// Publish skills to a central registry (`serve REGISTRY.db --publish`): each directory or
    /// archive packed reproducibly, sent with its signature (checked first to name that very
    /// version); prints name@version and the skill digest. `--dry-run`: send nothing.
    #[command(
        after_help = "Example: SKILLCAT_TOKEN=\"$(cat ci.token)\" skillcat publish https://skills.example.com/ fixtures/skills/pdf-forms"
    )]
    Publish(Lazy<WithServer<publish::PublishArgs>>),
    /// Yank a version from a central registry (`--undo`: unyank it).
    #[command(
        after_help = "Example: skillcat yank https://skills.example.com/ pdf-forms@0.4.1 --token-file ci.token"
    )]
    Yank(Lazy<WithServer<publish::YankArgs>>),
    /// Keep a publish token for a central registry (read on stdin), used by `publish` and
    /// `yank` when no token is given.
    #[command(
        long_about = login::LOGIN_ABOUT,
        after_help = "Example: skillcat login https://skills.example.com/ < alice.token"
    )]
    Login(Lazy<login::LoginArgs>),
    /// Forget the token kept for a central registry by `skillcat login`.
    #[command(after_help = "Example: skillcat logout https://skills.example.com/")]
    Logout(Lazy<login::LogoutArgs>),
    /// Make a new skill folder: SKILL.md, an example script and a reference, valid as written.
    #[command(long_about = init::INIT_ABOUT, after_help = init::INIT_AFTER)]
    Init(Lazy<init::InitArgs>),
    /// Publish tokens of a central registry (create, list, revoke); only their hashes are kept.
    #[command(after_help = "Example: skillcat token list --tokens tokens.toml")]
    Token {
        #[command(subcommand)]
        cmd: LazySub<token::TokenCommand>,
    },
}

/// Runs one command: how it went, or the error `main` prints.
pub async fn run(cli: Cli) -> CliResult {
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    let Cli {
        command,
        config,
        quiet: _,
        verbose,
        remote: before,
    } = cli;
    // The remote options given before the command, with those given after it on top.
    let globals = |after: &RemoteArgs| context_of(&before.settings(after), config.clone(), verbose);
    let none = RemoteArgs::default();
    // The context of a command that reaches no server: the remote options given before it are
    // not read.
    let plain = || context_of(&none.settings(&none), config.clone(), verbose);
    match command {
        Command::Validate(Lazy(WithRemote { args, remote })) => {
            read::validate(args, &globals(&remote)?).await
        }
        Command::Properties(Lazy(a)) => read::properties(a, &globals(&none)?).await,
        Command::Prompt(Lazy(WithRemote { args, remote })) => {
            read::prompt(args, &globals(&remote)?).await
        }
        Command::Audit(Lazy(WithRemote { args, remote })) => {
            audit::audit(args, &globals(&remote)?).await
        }
        Command::List(Lazy(WithRemote { args, remote })) => {
            read::list(args, &globals(&remote)?).await
        }
        Command::Show(Lazy(WithRemote { args, remote })) => {
            read::show(args, &globals(&remote)?).await
        }
        Command::Read(Lazy(WithRemote { args, remote })) => {
            read::read(args, &globals(&remote)?).await
        }
        Command::Digest(Lazy(WithRemote { args: a, remote })) => {
            let g = &globals(&remote)?;
            trust::digest(&a.source, a.name.as_deref(), a.format, g).await
        }
        Command::Pack(Lazy(a)) => {
            trust::pack(&a.dir, &a.output, a.sign.as_deref(), a.force, &plain()?).await
        }
        Command::Keygen(Lazy(a)) => trust::keygen(&a.output, a.unencrypted, a.force),
        Command::Sign(Lazy(WithRemote { args: a, remote })) => {
            let sign = trust::SignArgs {
                source: &a.source,
                name: &a.name,
                key: &a.key,
                output: a.output.as_deref(),
                statement: a.statement.as_deref(),
                force: a.force,
                version: a.version.as_deref(),
            };
            trust::sign_cmd(sign, &globals(&remote)?).await
        }
        Command::Registry { cmd: LazySub(cmd) } => {
            registry::run(cmd, &|server| globals(&RemoteArgs::of_server(server))).await
        }
        Command::Serve(Lazy(WithRemote { mut args, remote })) => {
            let g = &globals(&remote)?;
            args.verbose |= g.verbose;
            remote::serve(args, g).await
        }
        Command::Export(Lazy(WithRemote { args, remote })) => {
            remote::export(args, &globals(&remote)?).await
        }
        Command::Fetch(Lazy(WithRemote { args, remote })) => {
            remote::fetch(args, &globals(&remote)?).await
        }
        Command::Search(Lazy(WithRemote { args, remote })) => {
            remote::search(args, &globals(&remote)?).await
        }
        Command::Cache { cmd, cache } => {
            let remote = RemoteArgs {
                cache,
                ..RemoteArgs::default()
            };
            remote::cache(cmd, &globals(&remote)?).await
        }
        Command::Match(Lazy(WithRemote { args, remote })) => {
            matching::run(args, &globals(&remote)?).await
        }
        Command::Tools(Lazy(WithRemote { args, remote })) => {
            script::tools(args, &globals(&remote)?).await
        }
        Command::Run(Lazy(WithRemote { args, remote })) => {
            script::run(args, &globals(&remote)?).await
        }
        Command::Mcp(Lazy(WithRemote { args, remote })) => mcp::run(args, &globals(&remote)?).await,
        Command::Completions(Lazy(a)) => shell::completions(a),
        Command::Man(Lazy(a)) => shell::man(a),
        Command::Trust { cmd: LazySub(cmd) } => project::run(cmd, &globals(&none)?),
        Command::Add(Lazy(WithRemote { args, remote })) => {
            install::add(args, &globals(&remote)?.changing_project()).await
        }
        Command::Install(Lazy(WithRemote { args, remote })) => {
            install::install(args, &globals(&remote)?.changing_project()).await
        }
        Command::Update(Lazy(WithRemote { args, remote })) => {
            install::update(args, &globals(&remote)?.changing_project()).await
        }
        Command::Remove(Lazy(a)) => install::remove(a, &plain()?).await,
        Command::Status(Lazy(a)) => install::status(a, &plain()?).await,
        Command::Token { cmd: LazySub(cmd) } => token::run(cmd),
        Command::Login(Lazy(a)) => login::login(a),
        Command::Logout(Lazy(a)) => login::logout(a),
        Command::Init(Lazy(a)) => init::init(a),
        Command::Push(Lazy(WithRemote { args, remote })) => {
            oci::push(args, &globals(&remote)?).await
        }
        Command::Publish(Lazy(WithServer { args, server })) => {
            publish::publish(args, &globals(&RemoteArgs::of_server(server))?).await
        }
        Command::Yank(Lazy(WithServer { args, server })) => {
            publish::yank(args, &globals(&RemoteArgs::of_server(server))?).await
        }
        Command::Verify(Lazy(WithRemote { args: a, remote })) => {
            let g = &globals(&remote)?;
            let (keyring, sig) = (a.keyring.as_deref(), a.sig.as_deref());
            trust::verify(&a.source, a.name.as_deref(), keyring, sig, a.format, g).await
        }
    }
}
