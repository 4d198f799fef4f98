//! A tiny codec for Kafka's protocol `Schema`/`Struct` encoding (mm2-compat §4.1).
//!
//! MM2's own records (offset syncs, checkpoints, heartbeats) are not JSON: they are written
//! with `org.apache.kafka.common.protocol.types.Schema`, the same machinery as the Kafka wire
//! protocol. A struct is just its fields back to back, in schema order, with no tags and no
//! length prefix. Only the four types MM2 uses are needed here:
//!
//! * `INT16`, `INT32`, `INT64`: big-endian two's complement;
//! * `STRING`: an `INT16` byte length N, then N bytes of UTF-8. N must be ≤ 32767, and a
//!   string can never be null.
//!
//! The reader mirrors Java's `Schema.read`: a negative string length, or any field running past
//! the end of the buffer, is a `SchemaException` naming the field; bytes after the last field
//! are ignored (so a version-0 reader accepts a longer future value). Java decodes string bytes
//! with `new String(bytes, UTF_8)`, which replaces malformed sequences instead of failing, and
//! so do we: a Java reader and ours agree on every record.
//!
//! Checked against `apache/kafka` `clients/src/main/java/org/apache/kafka/common/protocol/types/Type.java`
//! (`STRING.read`/`write`) and `.../types/Schema.java` (`read` wraps every failure as
//! `Error reading field '<name>': ...`).

/// The largest string length a Kafka protocol `STRING` can carry (`Short.MAX_VALUE`).
pub const MAX_STRING_LEN: usize = i16::MAX as usize;

/// A record that cannot be encoded or decoded. Java raises `SchemaException` in the same cases.
///
/// `record` names what was being read or written (for example `OffsetSync key`), so a log line
/// tells an operator which topic's record is bad.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A field could not be read: short buffer or negative string length.
    #[error("{record}: Error reading field '{field}': {reason}")]
    Read {
        record: &'static str,
        field: &'static str,
        reason: String,
    },
    /// A string is longer than a protocol `STRING` allows.
    #[error(
        "{record}: Error writing field '{field}': String length {len} is larger than the maximum string length."
    )]
    StringTooLong {
        record: &'static str,
        field: &'static str,
        len: usize,
    },
    /// A null key or value (a tombstone). Java readers crash on these with a
    /// NullPointerException (§4.6); we report them as an ordinary bad record instead.
    #[error("{record} is null (tombstone); MM2 never writes tombstones to this topic")]
    Null { record: &'static str },
}

/// Writes fields back to back, in the order the caller puts them (the schema order).
#[derive(Debug)]
pub struct Writer {
    record: &'static str,
    buf: Vec<u8>,
}

impl Writer {
    /// Start a struct. `record` is only used in error messages, e.g. `"Checkpoint key"`.
    pub fn new(record: &'static str) -> Self {
        Writer {
            record,
            buf: Vec::new(),
        }
    }

    pub fn put_i16(&mut self, v: i16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn put_i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn put_i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// Writes an `INT16` length and the UTF-8 bytes. Longer than 32767 bytes is an error,
    /// exactly as in Java: the length prefix could not represent it.
    pub fn put_string(&mut self, field: &'static str, s: &str) -> Result<&mut Self, SchemaError> {
        let bytes = s.as_bytes();
        if bytes.len() > MAX_STRING_LEN {
            return Err(SchemaError::StringTooLong {
                record: self.record,
                field,
                len: bytes.len(),
            });
        }
        self.put_i16(bytes.len() as i16);
        self.buf.extend_from_slice(bytes);
        Ok(self)
    }

    /// The encoded struct.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads fields in schema order from a byte slice. Trailing bytes are never an error.
#[derive(Debug)]
pub struct Reader<'a> {
    record: &'static str,
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Start reading a struct. `record` is only used in error messages.
    pub fn new(record: &'static str, buf: &'a [u8]) -> Self {
        Reader {
            record,
            buf,
            pos: 0,
        }
    }

    /// Bytes not consumed yet (Java's `ByteBuffer.remaining()`).
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn error(&self, field: &'static str, reason: String) -> SchemaError {
        SchemaError::Read {
            record: self.record,
            field,
            reason,
        }
    }

    fn take<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], SchemaError> {
        if self.remaining() < N {
            // Java surfaces a BufferUnderflowException here; say what was missing instead.
            return Err(self.error(
                field,
                format!("need {N} bytes, only {} bytes available", self.remaining()),
            ));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    pub fn get_i16(&mut self, field: &'static str) -> Result<i16, SchemaError> {
        self.take::<2>(field).map(i16::from_be_bytes)
    }

    pub fn get_i32(&mut self, field: &'static str) -> Result<i32, SchemaError> {
        self.take::<4>(field).map(i32::from_be_bytes)
    }

    pub fn get_i64(&mut self, field: &'static str) -> Result<i64, SchemaError> {
        self.take::<8>(field).map(i64::from_be_bytes)
    }

    /// Reads an `INT16` length then that many bytes, with Java's error messages.
    pub fn get_string(&mut self, field: &'static str) -> Result<String, SchemaError> {
        let len = self.get_i16(field)?;
        if len < 0 {
            return Err(self.error(field, format!("String length {len} cannot be negative")));
        }
        let len = len as usize;
        if len > self.remaining() {
            return Err(self.error(
                field,
                format!(
                    "Error reading string of length {len}, only {} bytes available",
                    self.remaining()
                ),
            ));
        }
        let bytes = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        // Lossy like Java's `new String(bytes, UTF_8)`, so both sides read the same text.
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_are_big_endian() {
        let mut w = Writer::new("t");
        w.put_i16(0x0102).put_i32(-2).put_i64(0x0102030405060708);
        let bytes = w.finish();
        assert_eq!(
            bytes,
            [1, 2, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8].to_vec()
        );
        let mut r = Reader::new("t", &bytes);
        assert_eq!(r.get_i16("a").unwrap(), 0x0102);
        assert_eq!(r.get_i32("b").unwrap(), -2);
        assert_eq!(r.get_i64("c").unwrap(), 0x0102030405060708);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn string_is_length_prefixed_utf8() {
        let mut w = Writer::new("t");
        w.put_string("s", "é/").unwrap();
        let bytes = w.finish();
        assert_eq!(bytes, vec![0x00, 0x03, 0xc3, 0xa9, b'/']);
        assert_eq!(Reader::new("t", &bytes).get_string("s").unwrap(), "é/");
    }

    #[test]
    fn string_of_max_length_is_written() {
        let s = "x".repeat(MAX_STRING_LEN);
        let mut w = Writer::new("t");
        w.put_string("s", &s).unwrap();
        let bytes = w.finish();
        assert_eq!(&bytes[..2], &[0x7f, 0xff]);
        assert_eq!(Reader::new("t", &bytes).get_string("s").unwrap(), s);
    }

    // §4.1: N must be ≤ 32767; Java throws on write.
    #[test]
    fn string_longer_than_32767_bytes_is_rejected_on_write() {
        let s = "x".repeat(MAX_STRING_LEN + 1);
        let err = Writer::new("OffsetSync key")
            .put_string("topic", &s)
            .unwrap_err();
        assert_eq!(
            err,
            SchemaError::StringTooLong {
                record: "OffsetSync key",
                field: "topic",
                len: 32768
            }
        );
        assert_eq!(
            err.to_string(),
            "OffsetSync key: Error writing field 'topic': String length 32768 is larger than the maximum string length."
        );
    }

    // §4.1: readers reject negative N.
    #[test]
    fn negative_string_length_is_rejected() {
        let err = Reader::new("t", &[0xff, 0xff, b'a'])
            .get_string("topic")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t: Error reading field 'topic': String length -1 cannot be negative"
        );
    }

    // §4.1: readers reject N larger than the remaining bytes.
    #[test]
    fn string_longer_than_buffer_is_rejected() {
        let err = Reader::new("t", &[0x00, 0x03, b'a', b'b'])
            .get_string("topic")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t: Error reading field 'topic': Error reading string of length 3, only 2 bytes available"
        );
    }

    #[test]
    fn short_buffer_is_rejected_for_every_int_width() {
        assert!(Reader::new("t", &[0]).get_i16("a").is_err());
        assert!(Reader::new("t", &[0, 0, 0]).get_i32("a").is_err());
        let err = Reader::new("t", &[0; 7]).get_i64("offset").unwrap_err();
        assert!(
            matches!(
                err,
                SchemaError::Read {
                    field: "offset",
                    ..
                }
            ),
            "{err}"
        );
        assert!(Reader::new("t", &[]).get_string("s").is_err());
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        let mut r = Reader::new("t", &[0, 7, 0xde, 0xad]);
        assert_eq!(r.get_i16("a").unwrap(), 7);
        assert_eq!(r.remaining(), 2);
    }

    #[test]
    fn malformed_utf8_is_replaced_like_java() {
        let s = Reader::new("t", &[0, 2, b'a', 0xff])
            .get_string("s")
            .unwrap();
        assert_eq!(s, "a\u{fffd}");
    }
}
