//! The `skillcat` command line: argument parsing, output formats and exit codes over the library.
//!
//! Exit codes: 0 all good; 1 faults found or the thing checked failed; 2 usage error or
//! unreadable input.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The sandbox helper re-executes this binary (for scripts, and with the guest evaluator
    // built in); it must run before any thread starts.
    if let Some(code) = skillcat::guest::helper_main() {
        return code;
    }
    // Commands that run scripts fork their sandbox helpers from a zygote made while this
    // process has one thread; where it cannot start, runs re-execute this binary. When the
    // command is the first argument (`skillcat run …`, `skillcat mcp …`) the zygote is made
    // before parsing: the fork then shares less of this process's memory, so fewer of its pages
    // are copied when written afterwards (about 190 page faults of a `run`). Otherwise it is
    // made after parsing, which starts no thread either.
    let early = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "run" || a == "mcp");
    if early {
        let _ = skillcat::script::sandbox::start_zygote();
    }
    let args = cli::Cli::parse();
    if args.runs_scripts() && !early {
        let _ = skillcat::script::sandbox::start_zygote();
    }
    // `run` makes one run and exits: one thread drives it (no worker threads to start, and no
    // wake-ups passed between threads while it waits on the helper's pipes); a command that
    // serves (`mcp`) or fetches keeps the two workers.
    let one_run = args.makes_one_run();
    let mut builder = if one_run {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let why = cli::Message::caused(
                Some("cannot start the async runtime".into()),
                cli::Cause::new(e),
            );
            return cli::CliError::Usage(why).print().into();
        }
    };
    let status = match runtime.block_on(cli::run(args)) {
        Ok(status) => status,
        // The one place a command's final error is printed.
        Err(e) => e.print(),
    };
    if one_run {
        // Its output is written (unbuffered) and what it leaves is the cleaner's: exit now,
        // without shutting the runtime's blocking pool down and dropping the rest first, and,
        // once its standard streams are flushed, without the C library's exit handlers (the
        // main thread's thread-local destructors and every loaded object's), which a finished
        // run needs none of: 0.3 ms of CPU and 80 page faults of the process, measured; and
        // with its memory released by a keeper after its exit, not before its parent sees it.
        skillcat::script::exit_after_run(status.code())
    }
    status.into()
}
