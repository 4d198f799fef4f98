//! Connect source-offset records in `mm2-offsets.<source>.internal` (mm2-compat §4.7).
//!
//! This is where "how far has replication got" lives, and it is the format a Java MM2 reads when
//! it takes over from us (or we from it). Connect stores each source partition's offset as one
//! record, serialized by `JsonConverter` with schemas disabled:
//!
//! * key: `[<connectorName>, <sourcePartitionMap>]`, e.g.
//!   `["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t1"}]`;
//! * value: `<sourceOffsetMap>`, e.g. `{"offset":41}`, or null (a tombstone) to delete.
//!
//! Java looks offsets up by the **serialized key bytes**, so our keys must be byte-identical,
//! including the field order Java's `HashMap` happens to produce for each fixed key set:
//!
//! | connector | partition map | offset map |
//! |---|---|---|
//! | `MirrorSourceConnector` | `{"cluster":..,"partition":..,"topic":..}` | last replicated upstream offset |
//! | `MirrorCheckpointConnector` | `{"partition":..,"topic":..,"group":..}` | always `0` |
//! | `MirrorHeartbeatConnector` | `{"sourceClusterAlias":..,"targetClusterAlias":..}` | always `0` |
//!
//! The record must also land on the partition Kafka's default partitioner picks
//! ([`offsets_partition`]); otherwise a reader may see a stale value on the old partition.
//!
//! Reading is tolerant: any field order is accepted, and maps of other connectors come back as
//! [`DecodedPartition::Other`]. Numbers must be JSON integers (Connect reads them as `Long`; a
//! float would fail Java's casts), so floats are rejected with a clear error.
//!
//! Sources checked: `apache/kafka` `connect/mirror/src/main/java/org/apache/kafka/connect/mirror/MirrorUtils.java`
//! (`wrapPartition`, `wrapOffset`, `unwrapOffset`), `.../mirror/Checkpoint.java` and
//! `.../mirror/Heartbeat.java` (`connectPartition`), and
//! `connect/json/src/main/java/org/apache/kafka/connect/json/JsonConverter.java`.

use serde::Serialize;
use serde_json::{Map, Value};

use super::json::{as_i64, jackson_bytes, kind, parse, ConnectRecordError};
use super::murmur2;

/// Connector names in dedicated mode (the connector class's simple name).
pub const MIRROR_SOURCE_CONNECTOR: &str = "MirrorSourceConnector";
pub const MIRROR_CHECKPOINT_CONNECTOR: &str = "MirrorCheckpointConnector";
pub const MIRROR_HEARTBEAT_CONNECTOR: &str = "MirrorHeartbeatConnector";

/// The source partition of one of the three MM2 connectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourcePartition {
    /// `MirrorSourceConnector`: one upstream topic-partition of cluster `cluster`.
    Source {
        cluster: String,
        topic: String,
        partition: i32,
    },
    /// `MirrorCheckpointConnector`: one (renamed topic-partition, group).
    Checkpoint {
        partition: i32,
        topic: String,
        group: String,
    },
    /// `MirrorHeartbeatConnector`: the emitting pair.
    Heartbeat {
        source_cluster_alias: String,
        target_cluster_alias: String,
    },
}

// The partition maps, with fields declared in the order Java's HashMap iterates them.
#[derive(Serialize)]
struct SourceMap<'a> {
    cluster: &'a str,
    partition: i32,
    topic: &'a str,
}

#[derive(Serialize)]
struct CheckpointMap<'a> {
    partition: i32,
    topic: &'a str,
    group: &'a str,
}

#[derive(Serialize)]
struct HeartbeatMap<'a> {
    #[serde(rename = "sourceClusterAlias")]
    source_cluster_alias: &'a str,
    #[serde(rename = "targetClusterAlias")]
    target_cluster_alias: &'a str,
}

#[derive(Serialize)]
struct OffsetMap {
    offset: i64,
}

impl SourcePartition {
    /// The connector name this kind of partition belongs to in dedicated mode.
    pub fn default_connector_name(&self) -> &'static str {
        match self {
            SourcePartition::Source { .. } => MIRROR_SOURCE_CONNECTOR,
            SourcePartition::Checkpoint { .. } => MIRROR_CHECKPOINT_CONNECTOR,
            SourcePartition::Heartbeat { .. } => MIRROR_HEARTBEAT_CONNECTOR,
        }
    }

    /// The offsets-topic key, byte-identical to what Java's `OffsetStorageWriter` produces.
    pub fn key_bytes(&self, connector_name: &str) -> Vec<u8> {
        match self {
            SourcePartition::Source {
                cluster,
                topic,
                partition,
            } => jackson_bytes(&(
                connector_name,
                SourceMap {
                    cluster,
                    partition: *partition,
                    topic,
                },
            )),
            SourcePartition::Checkpoint {
                partition,
                topic,
                group,
            } => jackson_bytes(&(
                connector_name,
                CheckpointMap {
                    partition: *partition,
                    topic,
                    group,
                },
            )),
            SourcePartition::Heartbeat {
                source_cluster_alias,
                target_cluster_alias,
            } => jackson_bytes(&(
                connector_name,
                HeartbeatMap {
                    source_cluster_alias,
                    target_cluster_alias,
                },
            )),
        }
    }

    /// Recognises one of the MM2 partition maps, in any field order. `None` when the map has
    /// other keys or the wrong value types.
    fn from_map(map: &Map<String, Value>) -> Option<Self> {
        let has_exactly =
            |keys: &[&str]| map.len() == keys.len() && keys.iter().all(|k| map.contains_key(*k));
        let string = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_string);
        let int = |k: &str| {
            map.get(k)
                .and_then(Value::as_i64)
                .and_then(|n| i32::try_from(n).ok())
        };
        if has_exactly(&["cluster", "partition", "topic"]) {
            Some(SourcePartition::Source {
                cluster: string("cluster")?,
                topic: string("topic")?,
                partition: int("partition")?,
            })
        } else if has_exactly(&["partition", "topic", "group"]) {
            Some(SourcePartition::Checkpoint {
                partition: int("partition")?,
                topic: string("topic")?,
                group: string("group")?,
            })
        } else if has_exactly(&["sourceClusterAlias", "targetClusterAlias"]) {
            Some(SourcePartition::Heartbeat {
                source_cluster_alias: string("sourceClusterAlias")?,
                target_cluster_alias: string("targetClusterAlias")?,
            })
        } else {
            None
        }
    }
}

/// `{"offset":<offset>}`: the value MM2's connectors store (the source connector stores the
/// upstream offset of the last replicated record; the other two always store 0).
pub fn offset_value_bytes(offset: i64) -> Vec<u8> {
    jackson_bytes(&OffsetMap { offset })
}

/// A `MirrorSourceConnector` offset as we store it: the last replicated upstream offset and,
/// beside it, the KIP-516 ID of the source topic it was read from and the fence of the slice
/// that wrote it (`{"offset":41,"topicId":"kq4tPfR3QW2VpsBzxc6rmA","fence":7}`). Java's
/// `MirrorUtils.unwrapOffset` reads only `offset` and ignores other fields, so a Java MM2
/// resumes from these values unchanged; it writes back values without the extra fields, which
/// read as "ID not known" and "not fenced" (docs/connect-offsets.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOffset {
    pub offset: i64,
    /// The source topic's ID when the offset was written, if the source broker reported one.
    pub topic_id: Option<String>,
    /// The writer's connector-lease fencing token: a record with a lower fence than the value
    /// it would replace is a stale writer's, landed late, and does not count.
    pub fence: Option<u64>,
}

impl StoredOffset {
    /// An offset without a topic ID or fence (what Java MM2 and the other two connectors store).
    pub fn plain(offset: i64) -> Self {
        StoredOffset {
            offset,
            topic_id: None,
            fence: None,
        }
    }

    /// The same position: offset and topic ID, whoever wrote it.
    pub fn same_position(&self, other: &StoredOffset) -> bool {
        self.offset == other.offset && self.topic_id == other.topic_id
    }
}

/// Whether a record fenced by `new` replaces a value fenced by `current`: unless both are
/// fenced and `new` is lower. A value without a fence (Java's, or ours written after the lease
/// store was reset) ends the comparison: whatever comes next replaces it.
pub fn fence_admits(new: Option<u64>, current: Option<u64>) -> bool {
    !matches!((new, current), (Some(n), Some(c)) if n < c)
}

#[derive(Serialize)]
struct StoredOffsetMap<'a> {
    offset: i64,
    #[serde(rename = "topicId", skip_serializing_if = "Option::is_none")]
    topic_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fence: Option<u64>,
}

impl<'a> From<&'a StoredOffset> for StoredOffsetMap<'a> {
    fn from(stored: &'a StoredOffset) -> Self {
        StoredOffsetMap {
            offset: stored.offset,
            topic_id: stored.topic_id.as_deref(),
            fence: stored.fence,
        }
    }
}

/// The value bytes of `stored`: exactly Java's `{"offset":41}` without a topic ID or fence.
pub fn stored_offset_bytes(stored: &StoredOffset) -> Vec<u8> {
    jackson_bytes(&StoredOffsetMap::from(stored))
}

/// `stored` as the JSON map its value bytes hold.
pub fn stored_offset_json(stored: &StoredOffset) -> Value {
    serde_json::to_value(StoredOffsetMap::from(stored)).expect("a map of a number and strings")
}

/// The fence of a value, without decoding the rest: `None` when there is none or the value is
/// not a JSON object with a non-negative integer `fence` (such a record is then not fenced).
pub fn value_fence(bytes: Option<&[u8]>) -> Option<u64> {
    let v = serde_json::from_slice::<Value>(bytes?).ok()?;
    v.get("fence")?.as_u64()
}

/// Decodes a value like [`decode_value`], with the `topicId` and `fence` beside the offset
/// when there are. A `topicId` that is not a string, or a `fence` that is not a non-negative
/// integer, is treated as absent: each only adds a check, and its absence keeps the checks made
/// without it.
pub fn decode_stored(bytes: Option<&[u8]>) -> Result<Option<StoredOffset>, ConnectRecordError> {
    let Some(offset) = decode_value(bytes)? else {
        return Ok(None);
    };
    let map = bytes.and_then(|b| serde_json::from_slice::<Value>(b).ok());
    let field = |name| map.as_ref().and_then(|v| v.get(name));
    Ok(Some(StoredOffset {
        offset,
        topic_id: field("topicId").and_then(Value::as_str).map(str::to_string),
        fence: field("fence").and_then(Value::as_u64),
    }))
}

/// The partition map of a decoded key.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodedPartition {
    /// One of the three MM2 shapes.
    Mirror(SourcePartition),
    /// Any other map (another connector, or an MM2 shape with unexpected types).
    Other(Map<String, Value>),
}

/// A decoded offsets-topic key.
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetKey {
    pub connector: String,
    pub partition: DecodedPartition,
}

/// Decodes `[<connectorName>, <partitionMap>]`, accepting any field order in the map.
pub fn decode_key(bytes: &[u8]) -> Result<OffsetKey, ConnectRecordError> {
    const WHAT: &str = "Connect offset key";
    let value = parse(WHAT, bytes)?;
    let items = match value {
        Value::Array(items) if items.len() == 2 => items,
        other => {
            return Err(ConnectRecordError::invalid(
                WHAT,
                format!(
                    "must be a JSON array [connectorName, partitionMap], not {}",
                    describe_array(&other)
                ),
            ))
        }
    };
    let mut items = items.into_iter();
    let connector = match items.next() {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(ConnectRecordError::invalid(
                WHAT,
                format!("connector name must be a string, not {}", kind(&other)),
            ))
        }
        None => unreachable!("length checked above"),
    };
    let map = match items.next() {
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(ConnectRecordError::invalid(
                WHAT,
                format!(
                    "partition of connector {connector} must be a JSON object, not {}",
                    kind(&other)
                ),
            ))
        }
        None => unreachable!("length checked above"),
    };
    let partition = match SourcePartition::from_map(&map) {
        Some(p) => DecodedPartition::Mirror(p),
        None => DecodedPartition::Other(map),
    };
    Ok(OffsetKey {
        connector,
        partition,
    })
}

fn describe_array(v: &Value) -> String {
    match v {
        Value::Array(items) => format!("an array of {} elements", items.len()),
        other => kind(other).to_string(),
    }
}

/// Decodes an offset value. `None` (no stored offset) for a tombstone, a JSON `null`, or a map
/// whose `offset` is missing or null — Java's `MirrorUtils.unwrapOffset` treats all of these as
/// "no offset" (-1). A non-integer `offset` is an error.
pub fn decode_value(bytes: Option<&[u8]>) -> Result<Option<i64>, ConnectRecordError> {
    const WHAT: &str = "Connect offset value";
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    match parse(WHAT, bytes)? {
        Value::Null => Ok(None),
        Value::Object(map) => match map.get("offset") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => as_i64(WHAT, "offset", v).map(Some),
        },
        other => Err(ConnectRecordError::invalid(
            WHAT,
            format!(
                "must be a JSON object like {{\"offset\":41}}, not {}",
                kind(&other)
            ),
        )),
    }
}

/// The partition of the offsets topic (`num_partitions`, 25 by default) that Connect's producer
/// writes `key` to: Kafka's default partitioner, `toPositive(murmur2(key)) % numPartitions`.
pub fn offsets_partition(key: &[u8], num_partitions: i32) -> i32 {
    murmur2::partition_for_key(key, num_partitions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(cluster: &str, topic: &str, partition: i32) -> SourcePartition {
        SourcePartition::Source {
            cluster: cluster.into(),
            topic: topic.into(),
            partition,
        }
    }

    // §4.7 example key and value, and its partition among 25.
    #[test]
    fn source_connector_key_and_value_match_java() {
        let key = source("A", "t1", 0).key_bytes(MIRROR_SOURCE_CONNECTOR);
        assert_eq!(
            String::from_utf8(key.clone()).unwrap(),
            r#"["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t1"}]"#
        );
        assert_eq!(offset_value_bytes(41), br#"{"offset":41}"#.to_vec());
        assert_eq!(offsets_partition(&key, 25), 4);
    }

    // §4.7 table: Java's HashMap order for the checkpoint and heartbeat connectors.
    #[test]
    fn checkpoint_and_heartbeat_keys_use_java_field_order() {
        let cp = SourcePartition::Checkpoint {
            partition: 3,
            topic: "A.t1".into(),
            group: "g".into(),
        };
        assert_eq!(
            cp.key_bytes(cp.default_connector_name()),
            br#"["MirrorCheckpointConnector",{"partition":3,"topic":"A.t1","group":"g"}]"#.to_vec()
        );
        let hb = SourcePartition::Heartbeat {
            source_cluster_alias: "A".into(),
            target_cluster_alias: "B".into(),
        };
        assert_eq!(
            hb.key_bytes(hb.default_connector_name()),
            br#"["MirrorHeartbeatConnector",{"sourceClusterAlias":"A","targetClusterAlias":"B"}]"#
                .to_vec()
        );
        assert_eq!(offset_value_bytes(0), br#"{"offset":0}"#.to_vec());
    }

    #[test]
    fn keys_escape_like_jackson() {
        let key = source("A/é", "t\u{1}", 1).key_bytes(MIRROR_SOURCE_CONNECTOR);
        assert_eq!(
            String::from_utf8(key).unwrap(),
            r#"["MirrorSourceConnector",{"cluster":"A/é","partition":1,"topic":"t\u0001"}]"#
        );
    }

    #[test]
    fn keys_round_trip() {
        let partitions = [
            source("A", "t1", 0),
            source("us-east", "orders\n", 17),
            SourcePartition::Checkpoint {
                partition: 2,
                topic: "A.t1".into(),
                group: "grp".into(),
            },
            SourcePartition::Heartbeat {
                source_cluster_alias: "x".into(),
                target_cluster_alias: "y".into(),
            },
        ];
        for p in partitions {
            let key = decode_key(&p.key_bytes("name")).unwrap();
            assert_eq!(key.connector, "name");
            assert_eq!(key.partition, DecodedPartition::Mirror(p));
        }
    }

    #[test]
    fn decode_key_accepts_any_field_order_and_whitespace() {
        let key = decode_key(
            br#"[ "MirrorSourceConnector" , {"topic":"t1","cluster":"A","partition":5} ]"#,
        )
        .unwrap();
        assert_eq!(
            key.partition,
            DecodedPartition::Mirror(source("A", "t1", 5))
        );
    }

    #[test]
    fn unknown_maps_come_back_as_other() {
        let key = decode_key(br#"["jdbc",{"table":"x"}]"#).unwrap();
        assert_eq!(key.connector, "jdbc");
        match key.partition {
            DecodedPartition::Other(m) => assert_eq!(m.get("table"), Some(&json!("x"))),
            p => panic!("expected Other, got {p:?}"),
        }
        // An MM2 shape with a float partition is not an MM2 key (Java would never find it).
        let key =
            decode_key(br#"["MirrorSourceConnector",{"cluster":"A","partition":0.0,"topic":"t"}]"#)
                .unwrap();
        assert!(matches!(key.partition, DecodedPartition::Other(_)));
        // An extra field makes it a different key too.
        let key = decode_key(
            br#"["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t","x":1}]"#,
        )
        .unwrap();
        assert!(matches!(key.partition, DecodedPartition::Other(_)));
    }

    #[test]
    fn malformed_keys_are_rejected() {
        assert!(decode_key(b"not json").is_err());
        let err = decode_key(br#"["a"]"#).unwrap_err().to_string();
        assert_eq!(
            err,
            "Connect offset key: must be a JSON array [connectorName, partitionMap], not an array of 1 elements"
        );
        assert!(decode_key(br#"{"a":1}"#).is_err());
        assert!(decode_key(br#"[1,{}]"#).is_err());
        assert!(decode_key(br#"["a",[]]"#).is_err());
    }

    #[test]
    fn values_decode_with_java_semantics() {
        assert_eq!(decode_value(Some(br#"{"offset":41}"#)).unwrap(), Some(41));
        assert_eq!(
            decode_value(Some(&offset_value_bytes(i64::MAX))).unwrap(),
            Some(i64::MAX)
        );
        // Tombstone and JSON null: deleted.
        assert_eq!(decode_value(None).unwrap(), None);
        assert_eq!(decode_value(Some(b"null")).unwrap(), None);
        // Missing or null offset: "no offset", as MirrorUtils.unwrapOffset returns -1.
        assert_eq!(decode_value(Some(b"{}")).unwrap(), None);
        assert_eq!(decode_value(Some(br#"{"offset":null}"#)).unwrap(), None);
    }

    #[test]
    fn stored_offsets_carry_the_topic_id_and_fence_beside_java_s_offset() {
        let plain = StoredOffset::plain(41);
        assert_eq!(stored_offset_bytes(&plain), br#"{"offset":41}"#);
        let with_id = StoredOffset {
            topic_id: Some("kq4tPfR3QW2VpsBzxc6rmA".into()),
            ..plain.clone()
        };
        let bytes = stored_offset_bytes(&with_id);
        assert_eq!(
            bytes,
            br#"{"offset":41,"topicId":"kq4tPfR3QW2VpsBzxc6rmA"}"#
        );
        // Java's reading: the offset alone.
        assert_eq!(decode_value(Some(&bytes)).unwrap(), Some(41));
        assert_eq!(decode_stored(Some(&bytes)).unwrap(), Some(with_id.clone()));
        let fenced = StoredOffset {
            fence: Some(7),
            ..with_id.clone()
        };
        let bytes = stored_offset_bytes(&fenced);
        assert_eq!(
            bytes,
            br#"{"offset":41,"topicId":"kq4tPfR3QW2VpsBzxc6rmA","fence":7}"#
        );
        assert_eq!(decode_value(Some(&bytes)).unwrap(), Some(41));
        assert_eq!(decode_stored(Some(&bytes)).unwrap(), Some(fenced.clone()));
        assert_eq!(value_fence(Some(&bytes)), Some(7));
        assert!(fenced.same_position(&with_id) && !fenced.same_position(&plain));
        let fence_only = StoredOffset {
            fence: Some(7),
            ..plain.clone()
        };
        assert_eq!(
            stored_offset_bytes(&fence_only),
            br#"{"offset":41,"fence":7}"#
        );
        assert_eq!(
            decode_stored(Some(br#"{"offset":41}"#)).unwrap(),
            Some(plain)
        );
        // Fields of the wrong type are absent, not errors.
        assert_eq!(
            decode_stored(Some(br#"{"offset":41,"topicId":7,"fence":-1}"#)).unwrap(),
            Some(StoredOffset::plain(41))
        );
        assert_eq!(value_fence(Some(br#"{"offset":41,"fence":"7"}"#)), None);
        assert_eq!(value_fence(Some(b"not json")), None);
        assert_eq!(value_fence(None), None);
        assert_eq!(decode_stored(None).unwrap(), None);
        assert!(decode_stored(Some(br#"{"offset":4.1}"#)).is_err());
    }

    #[test]
    fn a_lower_fence_never_replaces_a_higher_one_and_no_fence_always_does() {
        assert!(fence_admits(Some(7), Some(7)));
        assert!(fence_admits(Some(8), Some(7)));
        assert!(!fence_admits(Some(6), Some(7)));
        assert!(fence_admits(None, Some(7)), "Java's and tombstones apply");
        assert!(fence_admits(Some(1), None), "after a value without a fence");
        assert!(fence_admits(None, None));
    }

    // §4.7: offsets must be JSON integers, never floats.
    #[test]
    fn float_and_non_integer_offsets_are_rejected() {
        let err = decode_value(Some(br#"{"offset":41.0}"#))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Connect offset value: 'offset' must be an integer, not the floating-point number 41.0"
        );
        assert!(decode_value(Some(br#"{"offset":4.1e1}"#)).is_err());
        assert!(decode_value(Some(br#"{"offset":"41"}"#)).is_err());
        assert!(decode_value(Some(br#"{"offset":18446744073709551615}"#)).is_err());
        assert!(decode_value(Some(b"41")).is_err());
        assert!(decode_value(Some(b"{")).is_err());
    }
}
