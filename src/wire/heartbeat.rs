//! `Heartbeat`: the records of the `heartbeats` topic (mm2-compat §4.4, §9).
//!
//! The heartbeat connector of every herder pair `S->T` writes one record per interval into
//! `heartbeats` on T. Once replicated onwards, the heartbeat topics show which clusters are
//! upstream of which, which is how `RemoteClusterUtils.upstreamClusters` and replication-lag
//! checks work.
//!
//! * key: `sourceClusterAlias: STRING`, `targetClusterAlias: STRING` (the emitting pair);
//! * value: header `version: INT16` (always 0), then `timestamp: INT64` (epoch ms). The record
//!   timestamp is the same value. Partition 0.
//!
//! Checked against `apache/kafka` `connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/Heartbeat.java`.

use std::fmt;

use super::schema::{Reader, SchemaError, Writer};

const KEY: &str = "Heartbeat key";
const VALUE: &str = "Heartbeat value";

/// The only value version MM2 has ever written.
pub const VERSION: i16 = 0;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    pub source_cluster_alias: String,
    pub target_cluster_alias: String,
    /// Epoch milliseconds.
    pub timestamp: i64,
}

impl Heartbeat {
    /// `sourceClusterAlias`, `targetClusterAlias`. Fails only for aliases over 32767 bytes.
    pub fn encode_key(&self) -> Result<Vec<u8>, SchemaError> {
        let mut w = Writer::new(KEY);
        w.put_string("sourceClusterAlias", &self.source_cluster_alias)?
            .put_string("targetClusterAlias", &self.target_cluster_alias)?;
        Ok(w.finish())
    }

    /// Version 0 header, then `timestamp`.
    pub fn encode_value(&self) -> Vec<u8> {
        let mut w = Writer::new(VALUE);
        w.put_i16(VERSION).put_i64(self.timestamp);
        w.finish()
    }

    /// Decodes one record like Java's `Heartbeat.deserializeRecord` (any version read as V0).
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Self, SchemaError> {
        let mut v = Reader::new(VALUE, value);
        let _version = v.get_i16("version")?;
        let timestamp = v.get_i64("timestamp")?;
        let mut k = Reader::new(KEY, key);
        let source_cluster_alias = k.get_string("sourceClusterAlias")?;
        let target_cluster_alias = k.get_string("targetClusterAlias")?;
        Ok(Heartbeat {
            source_cluster_alias,
            target_cluster_alias,
            timestamp,
        })
    }

    /// Like [`Heartbeat::decode`], for a consumed record whose key or value may be null.
    pub fn decode_record(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Self, SchemaError> {
        let key = key.ok_or(SchemaError::Null { record: KEY })?;
        let value = value.ok_or(SchemaError::Null { record: VALUE })?;
        Self::decode(key, value)
    }
}

/// Same text as Java's `Heartbeat.toString()`, which the `HeartbeatFormatter` prints.
impl fmt::Display for Heartbeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Heartbeat{{sourceClusterAlias={}, targetClusterAlias={}, timestamp={}}}",
            self.source_cluster_alias, self.target_cluster_alias, self.timestamp
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

    fn hb(s: &str, t: &str, ts: i64) -> Heartbeat {
        Heartbeat {
            source_cluster_alias: s.into(),
            target_cluster_alias: t.into(),
            timestamp: ts,
        }
    }

    // §4.5 Heartbeat key (`A`, `B`) and value (v0, ts=1700000000000).
    #[test]
    fn golden_bytes() {
        let h = hb("A", "B", 1_700_000_000_000);
        assert_eq!(h.encode_key().unwrap(), hex("00 01 41 00 01 42"));
        assert_eq!(h.encode_value(), hex("00 00 00 00 01 8b cf e5 68 00"));
        assert_eq!(
            Heartbeat::decode(
                &hex("00 01 41 00 01 42"),
                &hex("00 00 00 00 01 8b cf e5 68 00")
            )
            .unwrap(),
            h
        );
    }

    // §12.7 #75: Heartbeat(`source-1`, `target-2`, 1234567890) round-trips.
    #[test]
    fn round_trip() {
        let h = hb("source-1", "target-2", 1_234_567_890);
        let back = Heartbeat::decode(&h.encode_key().unwrap(), &h.encode_value()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn display_matches_java_to_string() {
        assert_eq!(
            hb("A", "B", 1_700_000_000_000).to_string(),
            "Heartbeat{sourceClusterAlias=A, targetClusterAlias=B, timestamp=1700000000000}"
        );
    }

    #[test]
    fn malformed_records_are_rejected() {
        assert!(
            Heartbeat::decode(&hex("00 01 41 00 01"), &hb("A", "B", 1).encode_value()).is_err()
        );
        let err = Heartbeat::decode(&hex("00 01 41 00 01 42"), &hex("00 00 00 00 01")).unwrap_err();
        assert!(
            matches!(
                err,
                SchemaError::Read {
                    field: "timestamp",
                    ..
                }
            ),
            "{err}"
        );
        assert!(Heartbeat::decode_record(None, Some(&hb("A", "B", 1).encode_value())).is_err());
        assert!(Heartbeat::decode_record(Some(&hex("00 01 41 00 01 42")), None).is_err());
    }
}
