//! Subcommands built when given: every start parses one command, so only that command's
//! arguments are made (clap's `Command::defer`); the others are names and one-line abouts, for
//! the top-level help. A whole tree (`completions`, `man`, the tests) is built on demand by
//! `Command::build`, which runs every deferred part.
//!
//! Measured on `skillcat run`: parsing went from building 40 subcommands' arguments to one's.

use clap::{ArgMatches, Args, Command, Error, FromArgMatches, Subcommand};

/// A subcommand's arguments, made only when that subcommand is the one parsed.
#[derive(Debug, Clone)]
pub struct Lazy<T>(pub T);

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, Error> {
        T::from_arg_matches(m).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), Error> {
        self.0.update_from_arg_matches(m)
    }
}

impl<T: Args> Args for Lazy<T> {
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }

    fn augment_args(cmd: Command) -> Command {
        cmd.defer(|c| keeping_texts(c, T::augment_args))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(|c| keeping_texts(c, T::augment_args_for_update))
    }
}

/// A command group's subcommands, made only when that group is the one parsed.
#[derive(Debug, Clone)]
pub struct LazySub<T>(pub T);

impl<T: FromArgMatches> FromArgMatches for LazySub<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, Error> {
        T::from_arg_matches(m).map(LazySub)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), Error> {
        self.0.update_from_arg_matches(m)
    }
}

impl<T: Subcommand> Subcommand for LazySub<T> {
    fn augment_subcommands(cmd: Command) -> Command {
        cmd.defer(|c| keeping_texts(c, T::augment_subcommands))
    }

    fn augment_subcommands_for_update(cmd: Command) -> Command {
        cmd.defer(|c| keeping_texts(c, T::augment_subcommands_for_update))
    }

    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}

/// Runs a deferred part, keeping the texts the subcommand itself set: built eagerly, the
/// parts came first and the subcommand's own about and help texts over them; deferred, the
/// parts come last, and their doc comments would replace the subcommand's.
fn keeping_texts(cmd: Command, part: fn(Command) -> Command) -> Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let before = cmd.get_before_help().cloned();
    let after = cmd.get_after_help().cloned();
    let after_long = cmd.get_after_long_help().cloned();
    let mut cmd = part(cmd);
    if let Some(text) = about {
        cmd = cmd.about(text);
    }
    if let Some(text) = long_about {
        cmd = cmd.long_about(text);
    }
    if let Some(text) = before {
        cmd = cmd.before_help(text);
    }
    if let Some(text) = after {
        cmd = cmd.after_help(text);
    }
    if let Some(text) = after_long {
        cmd = cmd.after_long_help(text);
    }
    cmd
}

/// A command's own arguments and the remote-source options (one deferred part: a command has
/// one).
#[derive(Debug, Clone, Args)]
pub struct WithRemote<A: Args> {
    #[command(flatten)]
    pub args: A,
    #[command(flatten)]
    pub remote: super::RemoteArgs,
}

/// A command's own arguments and the server options.
#[derive(Debug, Clone, Args)]
pub struct WithServer<A: Args> {
    #[command(flatten)]
    pub args: A,
    #[command(flatten)]
    pub server: super::ServerArgs,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::super::Cli;

    /// Built whole (as `completions`, `man` and `--help` build it), every subcommand keeps
    /// its own about and example, and has its arguments: deferring them changed neither.
    #[test]
    fn a_deferred_subcommand_keeps_its_texts_and_gets_its_arguments() {
        let unbuilt = Cli::command();
        let mut built = Cli::command();
        built.build();
        let mut deferred = 0;
        for (before, after) in unbuilt.get_subcommands().zip(built.get_subcommands()) {
            assert_eq!(before.get_name(), after.get_name());
            let name = after.get_name();
            assert_eq!(
                before.get_about().map(ToString::to_string),
                after.get_about().map(ToString::to_string),
                "{name}: its about"
            );
            assert_eq!(
                before.get_after_help().map(ToString::to_string),
                after.get_after_help().map(ToString::to_string),
                "{name}: its example"
            );
            // Unbuilt, a deferred subcommand has no arguments yet; built, it has its own
            // (or its subcommands).
            if before.get_arguments().next().is_none() && before.get_subcommands().next().is_none()
            {
                deferred += 1;
                assert!(
                    after.get_arguments().any(|a| !a.is_global_set())
                        || after.get_subcommands().next().is_some(),
                    "{name}: no arguments once built"
                );
            }
        }
        assert!(deferred >= 30, "only {deferred} subcommands deferred");
        Cli::command().debug_assert();
    }

    /// What `skillcat run` parses is what it parsed when every subcommand was built.
    #[test]
    fn a_deferred_subcommand_parses_as_before() {
        let cli = <Cli as clap::Parser>::try_parse_from([
            "skillcat",
            "-q",
            "run",
            "fixtures/skills",
            "csv-cleaner",
            "csv_profile",
            "--args",
            "x",
            "--allow-read",
            "a",
            "--config",
            "c.toml",
        ])
        .expect("parses");
        assert!(cli.makes_one_run() && cli.quiet);
        assert_eq!(cli.config.as_deref(), Some(std::path::Path::new("c.toml")));
        let e =
            <Cli as clap::Parser>::try_parse_from(["skillcat", "run", "-q", "-v", "a", "b", "c"])
                .expect_err("refused");
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
    }
}
