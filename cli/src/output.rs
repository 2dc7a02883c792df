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

/// A number for a message: plain decimals for everyday magnitudes, the
/// shortest exponent form for the very large and the very small (a label
/// of 1e300 is "1e300", not three hundred digits).
pub fn number(v: f64) -> String {
    let magnitude = v.abs();
    if v.is_finite() && v != 0.0 && !(1e-4..1e15).contains(&magnitude) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(super::number(1e300), "1e300");
        assert_eq!(super::number(2.5), "2.5");
        assert_eq!(super::number(-3e-7), "-3e-7");
    }
}
