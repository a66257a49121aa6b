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
            CliError::Usage(m) | CliError::Failed(m) => write!(f, "Error: {m}"),
            CliError::Tool(line) => f.write_str(line),
            CliError::Output => Ok(()),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Usage(m) | CliError::Failed(m) => m.source(),
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

/// What a [`CliError`] says: a message the command wrote, or an error kept whole (with what
/// the command was doing, when it says). Shown as the message, then each cause in the error's
/// [`source`](std::error::Error::source) chain that the text before it does not already say
/// (so a cause is said once), then the command line's advice for the error's kind (how to
/// trust a private certificate authority): advice names flags, so only this printer gives it.
#[derive(Debug)]
pub struct Message {
    context: Option<String>,
    cause: Option<Cause>,
}

impl Message {
    /// What the command was doing (`context`, when it says), failed because of `cause`.
    pub fn caused(context: Option<String>, cause: impl Into<Cause>) -> Message {
        Message {
            context,
            cause: Some(cause.into()),
        }
    }

    /// The error this message keeps, when it keeps one.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_ref().map(|c| &*c.error as _)
    }
}

impl From<String> for Message {
    fn from(text: String) -> Message {
        Message {
            context: Some(text),
            cause: None,
        }
    }
}

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.context.clone().unwrap_or_default();
        if let Some(cause) = &self.cause {
            text = skillcat::error::said_with_causes(text, &*cause.error);
            if let Some(advice) = cause.kind.and_then(advice) {
                text.push_str(advice);
            }
        }
        f.write_str(&text)
    }
}

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

/// An error a [`Message`] keeps whole, with its [`ErrorKind`](skillcat::ErrorKind) when it
/// is the library's.
#[derive(Debug)]
pub struct Cause {
    kind: Option<skillcat::ErrorKind>,
    error: Box<dyn std::error::Error + Send + Sync>,
}

impl Cause {
    /// Any error, of no kind the library reports.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause {
            kind: None,
            error: Box::new(error),
        }
    }
}

impl From<skillcat::Error> for Cause {
    fn from(error: skillcat::Error) -> Cause {
        Cause {
            kind: Some(error.kind()),
            error: Box::new(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error whose text already says its cause, as `Error::Io` does.
    #[derive(Debug, thiserror::Error)]
    #[error("f.txt: {source}")]
    struct Says {
        source: std::io::Error,
    }

    /// An error whose cause is said only in its source chain, as a transport error's is.
    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Hides {
        source: std::io::Error,
    }

    #[test]
    fn each_cause_is_said_once() {
        let says = Says {
            source: std::io::Error::other("disk on fire"),
        };
        let m = Message::caused(None, Cause::new(says));
        assert_eq!(m.to_string(), "f.txt: disk on fire");
        let hides = Hides {
            source: std::io::Error::other("connection refused"),
        };
        let m = Message::caused(Some("cannot reach h".into()), Cause::new(hides));
        assert_eq!(
            m.to_string(),
            "cannot reach h: error sending request: connection refused"
        );
        let e = CliError::Failed(m);
        assert_eq!(
            std::error::Error::source(&e).map(ToString::to_string),
            Some("error sending request".into())
        );
        assert_eq!(
            e.to_string(),
            "Error: cannot reach h: error sending request: connection refused"
        );
    }

    #[test]
    fn a_message_of_text_has_no_cause() {
        let e = CliError::Usage(String::from("no such file").into());
        assert_eq!(e.to_string(), "Error: no such file");
        assert!(std::error::Error::source(&e).is_none());
    }

    #[test]
    fn a_certificate_error_gets_the_flag_advice_of_the_command_line() {
        let e = skillcat::Error::Certificate {
            location: "https://h/".into(),
            reason: "expired".into(),
        };
        let m = Message::caused(None, e);
        assert_eq!(
            m.to_string(),
            "https://h/: the server's TLS certificate does not verify: expired. If a private \
             certificate authority issued it, trust that authority's PEM certificate with \
             --cacert FILE (skillcat's command line) or SSL_CERT_FILE=FILE"
        );
    }
}
