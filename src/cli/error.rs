//! Why a command stopped, as `main` prints it: a message, or an error kept whole with its
//! causes, and the command line's advice for the error's kind.

use super::ExitStatus;

/// Why a command stopped: `main` prints it once, on stderr, and exits with its status.
#[derive(Debug)]
pub enum CliError {
    /// A usage error or unreadable input (exit 2).
    Usage(Message),
    /// What was asked failed, or a fault stops it (exit 1).
    Failed(Message),
    /// A tool call or a script run failed: its stable code and message (`E_SKILL_…: …`), as
    /// the line is printed (exit 1).
    Tool(String),
    /// Standard output could not be written (a closed pipe): nothing more to say (exit 2).
    Output,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Failed(m) => {
                write!(f, "Error: {m}")?;
                f.write_str(m.kind().and_then(advice).unwrap_or(""))
            }
            CliError::Tool(line) => f.write_str(line),
            CliError::Output => Ok(()),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Usage(m) | CliError::Failed(m) => m.cause(),
            CliError::Tool(_) | CliError::Output => None,
        }
    }
}

impl CliError {
    /// The exit status this error ends the process with.
    pub fn status(&self) -> ExitStatus {
        match self {
            CliError::Usage(_) | CliError::Output => ExitStatus::Unreadable,
            CliError::Failed(_) | CliError::Tool(_) => ExitStatus::Faults,
        }
    }

    /// Prints the error on stderr, as `main` does, for a command that goes on after it (its
    /// status then counts towards the command's).
    pub fn print(&self) -> ExitStatus {
        use std::io::Write;
        if !matches!(self, CliError::Output) {
            err!("{self}");
        }
        self.status()
    }
}

/// What a [`CliError`] says: the library's [`Report`](skillcat::error::Report) (a message the
/// command wrote, or an error kept whole with its causes), after which the command line's
/// printer gives its advice for the error's kind: advice names flags, so only it gives it.
pub use skillcat::error::{Cause, Report as Message};

/// The command line's advice after an error of `kind`: the flags and variables that change
/// the outcome, which the library (used by other programs too) does not name.
pub(super) fn advice(kind: skillcat::ErrorKind) -> Option<&'static str> {
    match kind {
        skillcat::ErrorKind::Certificate => Some(
            ". If a private certificate authority issued it, trust that authority's PEM \
             certificate with --cacert FILE (skillcat's command line) or SSL_CERT_FILE=FILE",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_error_gets_the_flag_advice_of_the_command_line() {
        let e = skillcat::Error::Certificate {
            location: "https://h/".into(),
            reason: "expired".into(),
        };
        let e = CliError::Failed(Message::caused(None, e));
        assert_eq!(
            e.to_string(),
            "Error: https://h/: the server's TLS certificate does not verify: expired. If a \
             private certificate authority issued it, trust that authority's PEM certificate \
             with --cacert FILE (skillcat's command line) or SSL_CERT_FILE=FILE"
        );
        assert!(std::error::Error::source(&e).is_some());
        let text = CliError::Usage(String::from("no such file").into());
        assert_eq!(text.to_string(), "Error: no such file");
        assert!(std::error::Error::source(&text).is_none());
    }
}
