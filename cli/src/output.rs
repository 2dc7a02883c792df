//! Writing results: text to stdout (a closed pipe, as with `| head`, ends
//! the output quietly) and JSON.

use std::io::Write;

use serde::Serialize;

use crate::Failure;

/// Writes `text` to stdout.
pub fn emit(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure(format!("writing the output: {e}"))),
    }
}

/// Writes `value` as pretty JSON and a line break to stdout.
pub fn emit_json<T: Serialize>(value: &T) -> Result<(), Failure> {
    let mut text = serde_json::to_string_pretty(value).expect("plain data serializes");
    text.push('\n');
    emit(&text)
}
