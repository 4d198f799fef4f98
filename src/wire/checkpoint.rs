//! `Checkpoint`: the records of `<source>.checkpoints.internal` on the target (mm2-compat §4.3).
//!
//! A checkpoint says "consumer group G, which had committed upstream offset U on this partition,
//! may resume at downstream offset D". `RemoteClusterUtils.translateOffsets` and
//! `MirrorClient.remoteConsumerOffsets` read these, so a failover tool written in Java works
//! against offsets computed by us.
//!
//! * key: `group: STRING`, `topic: STRING`, `partition: INT32` — the topic is the **target-side
//!   (renamed)** topic, e.g. `A.t1`.
//! * value: header `version: INT16` (always 0), then V0: `upstreamOffset: INT64`,
//!   `offset: INT64` (downstream), `metadata: STRING` (never null; `""` when there is none).
//!
//! Java readers read the version and then always use V0 (the version check is a disabled
//! `assert`), so we decode the same way. Records go to partition 0; never write tombstones:
//! Java's readers crash on them (§4.6).
//!
//! Checked against `apache/kafka` `connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/Checkpoint.java`.

use std::fmt;

use super::schema::{Reader, SchemaError, Writer};

const KEY: &str = "Checkpoint key";
const VALUE: &str = "Checkpoint value";

/// The only value version MM2 has ever written.
pub const VERSION: i16 = 0;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub consumer_group_id: String,
    /// Target-side (renamed) topic.
    pub topic: String,
    pub partition: i32,
    pub upstream_offset: i64,
    pub downstream_offset: i64,
    /// The upstream group's commit metadata; `""` when there is none.
    pub metadata: String,
}

impl Checkpoint {
    /// `group`, `topic`, `partition`. Fails only for strings over 32767 bytes.
    pub fn encode_key(&self) -> Result<Vec<u8>, SchemaError> {
        let mut w = Writer::new(KEY);
        w.put_string("group", &self.consumer_group_id)?
            .put_string("topic", &self.topic)?
            .put_i32(self.partition);
        Ok(w.finish())
    }

    /// Version 0 header, then `upstreamOffset`, `offset`, `metadata`. Fails only for metadata
    /// over 32767 bytes (Java fails the same way).
    pub fn encode_value(&self) -> Result<Vec<u8>, SchemaError> {
        let mut w = Writer::new(VALUE);
        w.put_i16(VERSION)
            .put_i64(self.upstream_offset)
            .put_i64(self.downstream_offset)
            .put_string("metadata", &self.metadata)?;
        Ok(w.finish())
    }

    /// Decodes one record like Java's `Checkpoint.deserializeRecord`.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Self, SchemaError> {
        let mut v = Reader::new(VALUE, value);
        // Any version is read as V0, as Java does with assertions off.
        let _version = v.get_i16("version")?;
        let upstream_offset = v.get_i64("upstreamOffset")?;
        let downstream_offset = v.get_i64("offset")?;
        let metadata = v.get_string("metadata")?;
        let mut k = Reader::new(KEY, key);
        let consumer_group_id = k.get_string("group")?;
        let topic = k.get_string("topic")?;
        let partition = k.get_i32("partition")?;
        Ok(Checkpoint {
            consumer_group_id,
            topic,
            partition,
            upstream_offset,
            downstream_offset,
            metadata,
        })
    }

    /// Like [`Checkpoint::decode`], for a consumed record whose key or value may be null.
    pub fn decode_record(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Self, SchemaError> {
        let key = key.ok_or(SchemaError::Null { record: KEY })?;
        let value = value.ok_or(SchemaError::Null { record: VALUE })?;
        Self::decode(key, value)
    }
}

/// Same text as Java's `Checkpoint.toString()`, which the `CheckpointFormatter` prints.
impl fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Checkpoint{{consumerGroupId={}, topicPartition={}-{}, upstreamOffset={}, downstreamOffset={}, metadata={}}}",
            self.consumer_group_id,
            self.topic,
            self.partition,
            self.upstream_offset,
            self.downstream_offset,
            self.metadata
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

    fn cp(group: &str, topic: &str, partition: i32, up: i64, down: i64, md: &str) -> Checkpoint {
        Checkpoint {
            consumer_group_id: group.into(),
            topic: topic.into(),
            partition,
            upstream_offset: up,
            downstream_offset: down,
            metadata: md.into(),
        }
    }

    const KEY_HEX: &str = "00 01 67 00 04 41 2e 74 31 00 00 00 03";
    const VALUE_HEX: &str = "00 00 00 00 00 00 00 00 00 64 00 00 00 00 00 00 00 c9 00 00";

    // §4.5 Checkpoint key (`g`, `A.t1`, 3) and value (v0, up=100, down=201, metadata "").
    #[test]
    fn golden_bytes() {
        let c = cp("g", "A.t1", 3, 100, 201, "");
        assert_eq!(c.encode_key().unwrap(), hex(KEY_HEX));
        assert_eq!(c.encode_value().unwrap(), hex(VALUE_HEX));
        assert_eq!(
            Checkpoint::decode(&hex(KEY_HEX), &hex(VALUE_HEX)).unwrap(),
            c
        );
    }

    // §12.7 #75: Checkpoint(`group-1`, `topic-2`:3, 4, 5, `metadata-6`) round-trips.
    #[test]
    fn round_trip() {
        let c = cp("group-1", "topic-2", 3, 4, 5, "metadata-6");
        let back =
            Checkpoint::decode(&c.encode_key().unwrap(), &c.encode_value().unwrap()).unwrap();
        assert_eq!(back, c);
    }

    // §4.6: the CheckpointFormatter prints toString().
    #[test]
    fn display_matches_java_to_string() {
        assert_eq!(
            cp("g", "A.t1", 3, 100, 201, "").to_string(),
            "Checkpoint{consumerGroupId=g, topicPartition=A.t1-3, upstreamOffset=100, downstreamOffset=201, metadata=}"
        );
        assert_eq!(
            cp("g", "t", 0, 1, 2, "m").to_string(),
            "Checkpoint{consumerGroupId=g, topicPartition=t-0, upstreamOffset=1, downstreamOffset=2, metadata=m}"
        );
    }

    #[test]
    fn other_versions_are_read_as_v0() {
        let mut value = hex(VALUE_HEX);
        value[1] = 1; // version 1, V0 layout
        let c = Checkpoint::decode(&hex(KEY_HEX), &value).unwrap();
        assert_eq!(c.downstream_offset, 201);
    }

    #[test]
    fn malformed_records_are_rejected() {
        // CheckpointStoreTest's "malformed empty record".
        assert!(Checkpoint::decode(&[], &[]).is_err());
        let value = hex(VALUE_HEX);
        let err = Checkpoint::decode(&hex(KEY_HEX), &value[..value.len() - 1]).unwrap_err();
        assert!(
            matches!(
                err,
                SchemaError::Read {
                    field: "metadata",
                    ..
                }
            ),
            "{err}"
        );
        let key = hex(KEY_HEX);
        let err = Checkpoint::decode(&key[..key.len() - 2], &value).unwrap_err();
        assert!(
            matches!(
                err,
                SchemaError::Read {
                    field: "partition",
                    ..
                }
            ),
            "{err}"
        );
        let mut negative = hex(KEY_HEX);
        negative[0] = 0x80;
        assert!(Checkpoint::decode(&negative, &value).is_err());
    }

    // §4.6: never decode (or write) tombstones.
    #[test]
    fn tombstone_is_an_error() {
        assert_eq!(
            Checkpoint::decode_record(Some(&hex(KEY_HEX)), None).unwrap_err(),
            SchemaError::Null {
                record: "Checkpoint value"
            }
        );
        assert!(Checkpoint::decode_record(None, Some(&hex(VALUE_HEX))).is_err());
    }

    #[test]
    fn over_long_metadata_is_rejected_on_write() {
        let c = cp("g", "t", 0, 0, 0, &"m".repeat(32_768));
        assert!(matches!(
            c.encode_value(),
            Err(SchemaError::StringTooLong {
                field: "metadata",
                ..
            })
        ));
    }
}
