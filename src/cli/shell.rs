//! `completions` and `man`: the command line describing itself, from the same clap definition
//! that parses it (so they never drift from the real flags).

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use super::{Cli, OK, USAGE};

/// `skillcat completions SHELL`
pub fn completions(shell: clap_complete::Shell) -> u8 {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "skillcat", &mut out);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&out).and_then(|_| stdout.flush()) {
        Ok(()) => OK,
        Err(_) => USAGE,
    }
}

/// `skillcat man DIR`
pub fn man(dir: &Path) -> u8 {
    if let Err(code) = super::output_dir_exists(dir) {
        return code;
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        err!("Error: {}: {e}", dir.display());
        return USAGE;
    }
    match clap_mangen::generate_to(Cli::command(), dir) {
        Ok(()) => {
            out!("{}", dir.join("skillcat.1").display());
            OK
        }
        Err(e) => {
            err!("Error: writing man pages into {}: {e}", dir.display());
            USAGE
        }
    }
}
