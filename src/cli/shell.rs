//! `completions` and `man`: the command line describing itself, from the same clap definition
//! that parses it (so they never drift from the real flags).

use std::io::Write;

use clap::CommandFactory;

use super::{Cli, CliError, CliResult, ExitStatus};

/// `skillcat completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// `skillcat man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The directory to write into (created when missing; its parent must exist).
    pub dir: std::path::PathBuf,
}

/// `skillcat completions SHELL`
pub fn completions(a: CompletionsArgs) -> CliResult {
    let shell = a.shell;
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "skillcat", &mut out);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&out).and_then(|_| stdout.flush()) {
        Ok(()) => Ok(ExitStatus::Success),
        Err(_) => Err(CliError::Output),
    }
}

/// `skillcat man DIR`
pub fn man(a: ManArgs) -> CliResult {
    let dir = a.dir.as_path();
    super::output_dir_exists(dir)?;
    if let Err(e) = std::fs::create_dir_all(dir) {
        return Err(usage!("{}: {e}", dir.display()));
    }
    match clap_mangen::generate_to(Cli::command(), dir) {
        Ok(()) => {
            out!("{}", dir.join("skillcat.1").display());
            Ok(ExitStatus::Success)
        }
        Err(e) => Err(usage!("writing man pages into {}: {e}", dir.display())),
    }
}
