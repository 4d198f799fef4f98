//! JSON exactly as Kafka Connect's `JsonConverter` writes it (Jackson, compact).
//!
//! Connect's internal topics (offsets, status, configs) hold JSON produced by Jackson's default
//! `ObjectMapper`: no whitespace, and strings escaped with Jackson's rules (mm2-compat §4.7):
//!
//! * `"` and `\` as `\"` and `\\`;
//! * `\b \t \n \f \r` in their short forms;
//! * every other character below 0x20 as `\u00XX` with **upper-case** hex;
//! * nothing else: not `/`, not DEL, not non-ASCII (written as raw UTF-8).
//!
//! `serde_json` agrees on all of it except the case of the hex digits, so [`JacksonFormatter`]
//! overrides just that. Byte equality matters for offsets: Java looks offset keys up by their
//! serialized bytes, so an alias or topic with a control character in it would otherwise be a
//! different key.
//!
//! Field order is the caller's job: serialize structs whose fields are declared in Java's
//! order (serde keeps declaration order), never a `serde_json::Value` map.
//!
//! This module also holds [`ConnectRecordError`], the one error type for decoding Connect's
//! JSON records.

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter};

/// A compact `serde_json` formatter that escapes strings the way Jackson does.
#[derive(Debug, Clone, Copy, Default)]
pub struct JacksonFormatter;

impl Formatter for JacksonFormatter {
    fn write_char_escape<W>(&mut self, writer: &mut W, char_escape: CharEscape) -> io::Result<()>
    where
        W: ?Sized + io::Write,
    {
        let short = match char_escape {
            CharEscape::Quote => b'"',
            CharEscape::ReverseSolidus => b'\\',
            CharEscape::Solidus => b'/',
            CharEscape::Backspace => b'b',
            CharEscape::FormFeed => b'f',
            CharEscape::LineFeed => b'n',
            CharEscape::CarriageReturn => b'r',
            CharEscape::Tab => b't',
            CharEscape::AsciiControl(byte) => {
                // Jackson's CharTypes.HC is "0123456789ABCDEF".
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                return writer.write_all(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(byte >> 4) as usize],
                    HEX[(byte & 0xf) as usize],
                ]);
            }
        };
        writer.write_all(&[b'\\', short])
    }
}

/// Serializes `value` to the bytes Jackson would write for the same JSON tree.
pub fn to_jackson_vec<T: ?Sized + Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(64);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JacksonFormatter);
    value.serialize(&mut ser)?;
    Ok(out)
}

/// [`to_jackson_vec`] for types that cannot fail to serialize (plain structs of strings and
/// integers). Panics otherwise, which would be a bug in this crate, not bad input.
pub(crate) fn jackson_bytes<T: ?Sized + Serialize>(value: &T) -> Vec<u8> {
    to_jackson_vec(value).expect("plain structs of strings and integers always serialize")
}

/// A Connect internal-topic record (offsets, status or config) that cannot be decoded.
///
/// `what` names the record kind (for example `offset key` or `status value for
/// status-task-MirrorSourceConnector-0`), so a log line says which record was skipped.
#[derive(Debug, thiserror::Error)]
pub enum ConnectRecordError {
    /// The bytes are not JSON.
    #[error("{what} is not valid JSON: {source}")]
    Json {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    /// Valid JSON with the wrong shape or types.
    #[error("{what}: {reason}")]
    Invalid { what: String, reason: String },
}

impl ConnectRecordError {
    pub(crate) fn invalid(what: impl Into<String>, reason: impl Into<String>) -> Self {
        ConnectRecordError::Invalid {
            what: what.into(),
            reason: reason.into(),
        }
    }
}

/// Parses JSON bytes for a Connect record, naming the record on failure.
pub(crate) fn parse(what: &str, bytes: &[u8]) -> Result<serde_json::Value, ConnectRecordError> {
    serde_json::from_slice(bytes).map_err(|source| ConnectRecordError::Json {
        what: what.to_string(),
        source,
    })
}

/// Parses an optional record value as Connect's `JsonConverter` does: a null value (tombstone)
/// and the JSON literal `null` both mean "no value".
pub(crate) fn parse_nullable(
    what: &str,
    bytes: Option<&[u8]>,
) -> Result<Option<serde_json::Value>, ConnectRecordError> {
    match bytes {
        None => Ok(None),
        Some(b) => match parse(what, b)? {
            serde_json::Value::Null => Ok(None),
            v => Ok(Some(v)),
        },
    }
}

/// A short description of a JSON value's type, for error messages.
pub(crate) fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        serde_json::Value::Number(_) => "a floating-point number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Reads a JSON integer that fits in `i64`. Connect reads integral JSON numbers as `Long`;
/// a float (`1.0`, `1e3`) is a `Double` there and fails Java's casts, so it is rejected here.
pub(crate) fn as_i64(
    what: &str,
    field: &str,
    v: &serde_json::Value,
) -> Result<i64, ConnectRecordError> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().ok_or_else(|| {
            if n.is_u64() {
                ConnectRecordError::invalid(
                    what,
                    format!("'{field}' {n} does not fit in a 64-bit integer"),
                )
            } else {
                ConnectRecordError::invalid(
                    what,
                    format!("'{field}' must be an integer, not the floating-point number {n}"),
                )
            }
        }),
        other => Err(ConnectRecordError::invalid(
            what,
            format!("'{field}' must be an integer, not {}", kind(other)),
        )),
    }
}

/// Reads a JSON integer that fits in `i32` (Connect `INT32` fields such as `partition`).
pub(crate) fn as_i32(
    what: &str,
    field: &str,
    v: &serde_json::Value,
) -> Result<i32, ConnectRecordError> {
    let n = as_i64(what, field, v)?;
    i32::try_from(n).map_err(|_| {
        ConnectRecordError::invalid(
            what,
            format!("'{field}' {n} does not fit in a 32-bit integer"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_characters_use_upper_case_hex() {
        let s = "\u{1}\u{1f}\u{0b}\u{0}";
        assert_eq!(
            to_jackson_vec(s).unwrap(),
            br#""\u0001\u001F\u000B\u0000""#.to_vec()
        );
        // serde_json's own output differs only in case: this is why the formatter exists.
        assert_eq!(
            serde_json::to_vec(s).unwrap(),
            br#""\u0001\u001f\u000b\u0000""#.to_vec()
        );
    }

    #[test]
    fn short_escapes_are_kept() {
        assert_eq!(
            to_jackson_vec("\"\\\u{8}\t\n\u{c}\r").unwrap(),
            br#""\"\\\b\t\n\f\r""#.to_vec()
        );
    }

    #[test]
    fn slash_del_and_non_ascii_are_not_escaped() {
        let s = "a/b\u{7f}é€😀\u{2028}";
        let out = to_jackson_vec(s).unwrap();
        let mut expected = vec![b'"'];
        expected.extend_from_slice(s.as_bytes());
        expected.push(b'"');
        assert_eq!(out, expected);
    }

    #[test]
    fn output_is_compact_and_keys_are_escaped_too() {
        #[derive(Serialize)]
        struct S<'a> {
            z: i64,
            a: &'a str,
        }
        assert_eq!(
            to_jackson_vec(&S { z: -41, a: "x" }).unwrap(),
            br#"{"z":-41,"a":"x"}"#.to_vec()
        );
        let mut m = std::collections::BTreeMap::new();
        m.insert("k\u{1}", "v");
        assert_eq!(to_jackson_vec(&m).unwrap(), br#"{"k\u0001":"v"}"#.to_vec());
    }

    #[test]
    fn integers_reject_floats_and_out_of_range() {
        assert_eq!(as_i64("w", "offset", &json!(41)).unwrap(), 41);
        assert_eq!(as_i64("w", "offset", &json!(-1)).unwrap(), -1);
        let err = as_i64("w", "offset", &json!(1.0)).unwrap_err().to_string();
        assert_eq!(
            err,
            "w: 'offset' must be an integer, not the floating-point number 1.0"
        );
        assert!(as_i64("w", "offset", &json!(u64::MAX)).is_err());
        assert!(as_i64("w", "offset", &json!("1")).is_err());
        assert_eq!(as_i32("w", "partition", &json!(7)).unwrap(), 7);
        assert!(as_i32("w", "partition", &json!(i64::from(i32::MAX) + 1)).is_err());
    }

    #[test]
    fn parse_names_the_record() {
        let err = parse("offset key", b"[1,").unwrap_err();
        assert!(
            err.to_string().starts_with("offset key is not valid JSON"),
            "{err}"
        );
    }
}
