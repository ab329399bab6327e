//! The one error type of the crate: a message that says what was being done and why
//! it failed, ready to print.

use std::fmt;

/// Something in the test bed failed. The message names the command or step, and
/// carries the command's standard error where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
    interrupted: bool,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            interrupted: false,
        }
    }

    /// The error returned when [`crate::interrupt::requested`] became true while the
    /// bed was waiting for something.
    pub fn interrupted() -> Error {
        Error {
            message: "interrupted".into(),
            interrupted: true,
        }
    }

    /// True if this error stands for an interruption (Ctrl-C), not a failure.
    pub fn is_interrupted(&self) -> bool {
        self.interrupted
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefix the message with what the caller was doing: `"{context}: {message}"`.
    pub fn context(mut self, context: impl fmt::Display) -> Error {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Add context to the error of a `Result`.
pub trait Context<T> {
    /// On error, prefix the message with `context`.
    fn context(self, context: impl fmt::Display) -> Result<T>;
}

impl<T> Context<T> for Result<T> {
    fn context(self, context: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.context(context))
    }
}
