//! Errors as PostgreSQL errors: every failure of the extension is a
//! [`Failure`] carrying a SQLSTATE, raised with `ereport(ERROR)` at the
//! SQL boundary ([`Failure::raise`]). A bad argument, a corrupt page or a
//! limit is an ERROR that aborts the statement, never a crashed backend.

use pgrx::prelude::*;
use tocpile_lib::Error;

/// What went wrong, with the SQLSTATE PostgreSQL reports for it.
#[derive(Debug)]
pub struct Failure {
    code: PgSqlErrorCode,
    message: String,
}

/// The extension's result type.
pub type Result<T> = std::result::Result<T, Failure>;

impl Failure {
    /// A bad argument of a SQL function (SQLSTATE 22023).
    pub fn argument(message: impl Into<String>) -> Failure {
        Failure {
            code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            message: message.into(),
        }
    }

    /// Data the extension cannot use: a NULL feature, a non-finite value,
    /// rows of the wrong width (SQLSTATE 22000).
    pub fn data(message: impl Into<String>) -> Failure {
        Failure {
            code: PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            message: message.into(),
        }
    }

    /// Stored bytes that break their format: a page, a label section, a
    /// model or the metadata of a page table (SQLSTATE XX001).
    pub fn corrupt(message: impl Into<String>) -> Failure {
        Failure {
            code: PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
            message: message.into(),
        }
    }

    /// A table the user may not read, or not through a heap scan
    /// (SQLSTATE 42501).
    pub fn privilege(message: impl Into<String>) -> Failure {
        Failure {
            code: PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            message: message.into(),
        }
    }

    /// A resource the request needs beyond what may be allocated
    /// (SQLSTATE 53200).
    pub fn out_of_memory(message: impl Into<String>) -> Failure {
        Failure {
            code: PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
            message: message.into(),
        }
    }

    /// A cancelled run: the SGD thread stopped because the backend asked
    /// it to (the backend then raises PostgreSQL's own error, SQLSTATE
    /// 57014, or goes on as the interrupt says).
    pub fn cancelled() -> Failure {
        Failure {
            code: PgSqlErrorCode::ERRCODE_QUERY_CANCELED,
            message: "training stopped: the statement was cancelled".into(),
        }
    }

    /// A NULL where `function` needs argument `name`.
    pub fn null_argument(function: &str, name: &str) -> Failure {
        Failure {
            code: PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            message: format!("{function}: argument {name} must not be NULL"),
        }
    }

    /// The library's error `error`, prefixed with where it happened.
    /// A limit of the library's resource policy names the setting that
    /// raises it here (the library names its command-line option).
    pub fn from_lib(context: &str, error: Error) -> Failure {
        // The error itself, under the file or page context it may carry.
        let mut inner: &Error = &error;
        while let Some(e) = std::error::Error::source(inner).and_then(|s| s.downcast_ref::<Error>())
        {
            inner = e;
        }
        let code = match inner {
            Error::BadArgument { .. } => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            Error::LimitExceeded { .. } | Error::TooLarge { .. } => {
                PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED
            }
            Error::OutOfMemory { .. } => PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
            Error::BadLabel { .. }
            | Error::Diverged { .. }
            | Error::BadValue { .. }
            | Error::LengthMismatch { .. } => PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            Error::Io { .. } => PgSqlErrorCode::ERRCODE_IO_ERROR,
            _ => PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        };
        let mut text = error.to_string();
        if let Error::LimitExceeded { raise, .. } = inner {
            let setting = crate::access::setting_for_limit(raise);
            text = text.replace(raise, &setting);
        }
        let message = if context.is_empty() {
            text
        } else {
            format!("{context}: {text}")
        };
        Failure { code, message }
    }

    /// The message (for tests and reports).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The SQLSTATE.
    pub fn code(&self) -> PgSqlErrorCode {
        self.code
    }

    /// Raises the failure as a PostgreSQL ERROR (does not return).
    pub fn raise(self) -> ! {
        ereport!(ERROR, self.code, self.message);
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure::from_lib("", error)
    }
}

/// Adds a context to the library's errors.
pub trait Context<T> {
    /// The error prefixed with `context` (evaluated on error only).
    fn context(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, Error> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Failure::from_lib(&context(), e))
    }
}

/// The value, or the failure raised as a PostgreSQL ERROR: the one exit of
/// every SQL function.
pub trait OrRaise<T> {
    /// Unwraps or raises.
    fn or_raise(self) -> T;
}

impl<T> OrRaise<T> for Result<T> {
    fn or_raise(self) -> T {
        match self {
            Ok(v) => v,
            Err(f) => f.raise(),
        }
    }
}

/// An empty vector with room for `len` items, or an out-of-memory
/// failure naming `what`: user-sized buffers must fail with an ERROR, not
/// abort the backend (Rust aborts on a refused allocation).
pub fn try_vec<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, len, what)?;
    Ok(v)
}

/// Reserves room for `extra` more items (doubling, as `Vec` does), or an
/// out-of-memory failure naming `what`.
pub fn reserve<T>(v: &mut Vec<T>, extra: usize, what: &str) -> Result<()> {
    if v.capacity() - v.len() >= extra {
        return Ok(());
    }
    let want = (v.len() + extra).max(2 * v.capacity());
    v.try_reserve_exact(want - v.len())
        .or_else(|_| v.try_reserve_exact(extra))
        .map_err(|_| {
            Failure::out_of_memory(format!(
                "cannot allocate {} bytes for {what}",
                (v.len() + extra).saturating_mul(std::mem::size_of::<T>())
            ))
        })
}
