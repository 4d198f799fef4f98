//! `OffsetSync`: the records of the offset-syncs topic (mm2-compat §4.2).
//!
//! The source task writes one whenever the link between an upstream offset and the downstream
//! offset it was replicated to must be remembered (§7.5). The checkpoint task reads them to
//! translate consumer group offsets (§8.3). The topic is single-partition and compacted, written
//! on partition 0 (§3), keyed by the **source** topic-partition.
//!
//! * key: `topic: STRING`, `partition: INT32`
//! * value: `upstreamOffset: INT64`, `offset: INT64` (downstream) — no version header.
//!
//! Java's checkpoint task drops the rest of a poll batch after one bad record, and crashes on a
//! tombstone (§4.6), so this module only ever produces complete, non-null records.
//!
//! Checked against `apache/kafka` `connect/mirror/src/main/java/org/apache/kafka/connect/mirror/OffsetSync.java`.

use std::fmt;

use super::schema::{Reader, SchemaError, Writer};

const KEY: &str = "OffsetSync key";
const VALUE: &str = "OffsetSync value";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetSync {
    /// Source cluster topic.
    pub topic: String,
    pub partition: i32,
    pub upstream_offset: i64,
    pub downstream_offset: i64,
}

impl OffsetSync {
    /// `topic: STRING`, `partition: INT32`. Fails only for a topic name over 32767 bytes.
    pub fn encode_key(&self) -> Result<Vec<u8>, SchemaError> {
        let mut w = Writer::new(KEY);
        w.put_string("topic", &self.topic)?.put_i32(self.partition);
        Ok(w.finish())
    }

    /// `upstreamOffset: INT64`, `offset: INT64`.
    pub fn encode_value(&self) -> Vec<u8> {
        let mut w = Writer::new(VALUE);
        w.put_i64(self.upstream_offset)
            .put_i64(self.downstream_offset);
        w.finish()
    }

    /// Decodes one record like Java's `OffsetSync.deserializeRecord`.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Self, SchemaError> {
        let mut k = Reader::new(KEY, key);
        let topic = k.get_string("topic")?;
        let partition = k.get_i32("partition")?;
        let mut v = Reader::new(VALUE, value);
        let upstream_offset = v.get_i64("upstreamOffset")?;
        let downstream_offset = v.get_i64("offset")?;
        Ok(OffsetSync {
            topic,
            partition,
            upstream_offset,
            downstream_offset,
        })
    }

    /// Like [`OffsetSync::decode`], for a consumed record whose key or value may be null.
    pub fn decode_record(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Self, SchemaError> {
        let key = key.ok_or(SchemaError::Null { record: KEY })?;
        let value = value.ok_or(SchemaError::Null { record: VALUE })?;
        Self::decode(key, value)
    }
}

/// Same text as Java's `OffsetSync.toString()`, which the `OffsetSyncFormatter` prints.
impl fmt::Display for OffsetSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "OffsetSync{{topicPartition={}-{}, upstreamOffset={}, downstreamOffset={}}}",
            self.topic, self.partition, self.upstream_offset, self.downstream_offset
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    fn sync(topic: &str, partition: i32, up: i64, down: i64) -> OffsetSync {
        OffsetSync {
            topic: topic.into(),
            partition,
            upstream_offset: up,
            downstream_offset: down,
        }
    }

    // §4.5 OffsetSync key (`t1`, 3) and value (up=100, down=200).
    #[test]
    fn golden_bytes() {
        let s = sync("t1", 3, 100, 200);
        assert_eq!(s.encode_key().unwrap(), hex("00 02 74 31 00 00 00 03"));
        assert_eq!(
            s.encode_value(),
            hex("00 00 00 00 00 00 00 64 00 00 00 00 00 00 00 c8")
        );
        let decoded = OffsetSync::decode(
            &hex("00 02 74 31 00 00 00 03"),
            &hex("00 00 00 00 00 00 00 64 00 00 00 00 00 00 00 c8"),
        )
        .unwrap();
        assert_eq!(decoded, s);
    }

    // §12.7 #75: OffsetSync(`topic-1`:2, 3, 4) round-trips.
    #[test]
    fn round_trip() {
        let s = sync("topic-1", 2, 3, 4);
        let back = OffsetSync::decode(&s.encode_key().unwrap(), &s.encode_value()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn display_matches_java_to_string() {
        assert_eq!(
            sync("t1", 3, 100, 200).to_string(),
            "OffsetSync{topicPartition=t1-3, upstreamOffset=100, downstreamOffset=200}"
        );
    }

    #[test]
    fn short_value_is_rejected_naming_the_field() {
        let s = sync("t1", 3, 100, 200);
        let value = s.encode_value();
        let err = OffsetSync::decode(&s.encode_key().unwrap(), &value[..12]).unwrap_err();
        assert_eq!(
            err,
            SchemaError::Read {
                record: "OffsetSync value",
                field: "offset",
                reason: "need 8 bytes, only 4 bytes available".into()
            }
        );
    }

    #[test]
    fn short_key_is_rejected() {
        assert!(OffsetSync::decode(&hex("00 02 74 31 00 00"), &[0; 16]).is_err());
        // An empty record (as in CheckpointStoreTest's malformed record) is an error, not a panic.
        assert!(OffsetSync::decode(&[], &[]).is_err());
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        let mut key = hex("00 02 74 31 00 00 00 03");
        key.push(0xaa);
        let mut value = sync("t1", 3, 100, 200).encode_value();
        value.extend_from_slice(&[1, 2, 3]);
        assert_eq!(
            OffsetSync::decode(&key, &value).unwrap(),
            sync("t1", 3, 100, 200)
        );
    }

    // §4.6: tombstones are reported, not decoded.
    #[test]
    fn tombstone_is_an_error() {
        let s = sync("t1", 3, 100, 200);
        let key = s.encode_key().unwrap();
        assert_eq!(
            OffsetSync::decode_record(Some(&key), None).unwrap_err(),
            SchemaError::Null {
                record: "OffsetSync value"
            }
        );
        assert!(OffsetSync::decode_record(None, Some(&s.encode_value())).is_err());
        assert_eq!(
            OffsetSync::decode_record(Some(&key), Some(&s.encode_value())).unwrap(),
            s
        );
    }

    #[test]
    fn over_long_topic_is_rejected_on_write() {
        let s = sync(&"t".repeat(40_000), 0, 0, 0);
        assert!(matches!(
            s.encode_key(),
            Err(SchemaError::StringTooLong { len: 40_000, .. })
        ));
    }
}
