//! The typed error an operation returns, mapped 1:1 onto the WIT `error` variant.

use std::fmt;

use crate::bindings::wasmhub::plugin::types::Error as WitError;

/// Why an operation failed. The message is shown to the model: say what was wrong
/// and how to fix it.
///
/// Each variant is one case of the WIT `error` variant, so the hub reports it with
/// the same code on every surface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input passed the schema but is still unacceptable (an expression that
    /// does not parse, a limit exceeded). Input that does not decode into the
    /// operation's input type is reported this way too, with the path of the field.
    InvalidInput(String),
    /// Something the input names does not exist.
    NotFound(String),
    /// The plugin was not allowed to do what the operation needed (a host or a
    /// directory its manifest does not grant).
    Forbidden(String),
    /// The operation ran and failed.
    Failed(String),
}

impl Error {
    /// The input is unacceptable; `message` says why and how to fix it.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::InvalidInput(message.into())
    }

    /// Something the input names does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Error::NotFound(message.into())
    }

    /// The sandbox or the manifest did not allow what the operation needed.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Error::Forbidden(message.into())
    }

    /// The operation ran and failed.
    pub fn failed(message: impl Into<String>) -> Self {
        Error::Failed(message.into())
    }

    /// The message, whatever the kind.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidInput(m) | Error::NotFound(m) | Error::Forbidden(m) | Error::Failed(m) => m,
        }
    }

    /// The wire code of the kind, as the WIT spells it (`invalid-input`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "invalid-input",
            Error::NotFound(_) => "not-found",
            Error::Forbidden(_) => "forbidden",
            Error::Failed(_) => "failed",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for Error {}

impl From<Error> for WitError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidInput(m) => WitError::InvalidInput(m),
            Error::NotFound(m) => WitError::NotFound(m),
            Error::Forbidden(m) => WitError::Forbidden(m),
            Error::Failed(m) => WitError::Failed(m),
        }
    }
}

impl From<WitError> for Error {
    fn from(e: WitError) -> Self {
        match e {
            WitError::InvalidInput(m) => Error::InvalidInput(m),
            WitError::NotFound(m) => Error::NotFound(m),
            WitError::Forbidden(m) => Error::Forbidden(m),
            WitError::Failed(m) => Error::Failed(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_map_one_to_one_onto_the_wit_variant() {
        let cases = [
            (
                Error::invalid_input("a"),
                WitError::InvalidInput("a".into()),
                "invalid-input",
            ),
            (Error::not_found("b"), WitError::NotFound("b".into()), "not-found"),
            (
                Error::forbidden("c"),
                WitError::Forbidden("c".into()),
                "forbidden",
            ),
            (Error::failed("d"), WitError::Failed("d".into()), "failed"),
        ];
        for (ours, wit, code) in cases {
            assert_eq!(ours.code(), code);
            let converted: WitError = ours.clone().into();
            assert_eq!(format!("{converted:?}"), format!("{wit:?}"));
            assert_eq!(Error::from(converted), ours);
        }
    }

    #[test]
    fn display_names_the_code_and_the_message() {
        assert_eq!(
            Error::not_found("no key `x`").to_string(),
            "not-found: no key `x`"
        );
    }
}
