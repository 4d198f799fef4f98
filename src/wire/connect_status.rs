//! Connect status-topic records in `mm2-status.<source>.internal` (groundwork; §3).
//!
//! Each herder pair's `KafkaStatusBackingStore` records whether each connector and task is
//! RUNNING, FAILED (with its stack trace), and so on; Connect's REST API and operators' tooling
//! read it. Writing the same records makes our runs visible the way Java MM2's are.
//!
//! Keys are plain strings:
//!
//! * `status-connector-<name>`
//! * `status-task-<name>-<task>`
//! * `status-topic-<topic>:connector-<name>` (topic tracking, on by default in Connect)
//!
//! Values are JSON from the worker's internal converter (`JsonConverter`, `schemas.enable=false`),
//! so the Connect `Struct`s become plain objects with fields in schema order:
//!
//! * connector/task status (`STATUS_SCHEMA_V0`):
//!   `{"state":"RUNNING","trace":null,"worker_id":"A->B","generation":2}` — `trace` is an
//!   optional field, written as `null` when absent. In dedicated MM2 the worker id is the
//!   herder pair, e.g. `A->B`. A `DESTROYED` status is written as a tombstone instead.
//! * topic status (a map of `"topic"` to `TOPIC_STATUS_VALUE_SCHEMA_V0`):
//!   `{"topic":{"name":"t","connector":"c","task":0,"discoverTimestamp":1700000000000}}`.
//!
//! Sources checked: `apache/kafka`
//! `connect/runtime/src/main/java/org/apache/kafka/connect/storage/KafkaStatusBackingStore.java`
//! (key prefixes, schemas, `serialize`, `parseConnectorStatus`, `parseConnectorTaskId`,
//! `readTopicStatus`), `connect/runtime/src/main/java/org/apache/kafka/connect/runtime/AbstractStatus.java`
//! (state names), and the converter notes in [`super::connect_config`].

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value};

use super::connect_config::parse_task_id;
use super::json::{as_i32, as_i64, jackson_bytes, kind, parse_nullable, ConnectRecordError};

pub const CONNECTOR_STATUS_PREFIX: &str = "status-connector-";
pub const TASK_STATUS_PREFIX: &str = "status-task-";
pub const TOPIC_STATUS_PREFIX: &str = "status-topic-";
pub const TOPIC_STATUS_SEPARATOR: &str = ":connector-";

/// The key of a status-topic record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusKey {
    Connector(String),
    Task { connector: String, task: i32 },
    Topic { topic: String, connector: String },
}

impl fmt::Display for StatusKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusKey::Connector(c) => write!(f, "{CONNECTOR_STATUS_PREFIX}{c}"),
            StatusKey::Task { connector, task } => {
                write!(f, "{TASK_STATUS_PREFIX}{connector}-{task}")
            }
            StatusKey::Topic { topic, connector } => {
                write!(
                    f,
                    "{TOPIC_STATUS_PREFIX}{topic}{TOPIC_STATUS_SEPARATOR}{connector}"
                )
            }
        }
    }
}

impl StatusKey {
    /// Parses a key like Java's `KafkaStatusBackingStore.read`. `None` for keys Java discards.
    pub fn parse(key: &str) -> Option<StatusKey> {
        if let Some(c) = key.strip_prefix(CONNECTOR_STATUS_PREFIX) {
            (!c.is_empty()).then(|| StatusKey::Connector(c.to_string()))
        } else if key.starts_with(TASK_STATUS_PREFIX) {
            let (connector, task) = parse_task_id(key, 2)?;
            Some(StatusKey::Task { connector, task })
        } else if let Some(rest) = key.strip_prefix(TOPIC_STATUS_PREFIX) {
            // Java: topic up to the first ':', connector after the separator's length.
            // Kafka topic names cannot contain ':'.
            let colon = rest.find(':')?;
            let topic = &rest[..colon];
            let connector = rest.get(colon + TOPIC_STATUS_SEPARATOR.len()..)?;
            (!topic.is_empty() && !connector.is_empty()).then(|| StatusKey::Topic {
                topic: topic.to_string(),
                connector: connector.to_string(),
            })
        } else {
            None
        }
    }
}

/// `AbstractStatus.State`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Unassigned,
    Running,
    Paused,
    Failed,
    /// Never stored: written as a tombstone.
    Destroyed,
    Restarting,
    /// Connectors only (KIP-875).
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Unassigned => "UNASSIGNED",
            State::Running => "RUNNING",
            State::Paused => "PAUSED",
            State::Failed => "FAILED",
            State::Destroyed => "DESTROYED",
            State::Restarting => "RESTARTING",
            State::Stopped => "STOPPED",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = String;

    /// Exact, case-sensitive names, like Java's `State.valueOf`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "UNASSIGNED" => State::Unassigned,
            "RUNNING" => State::Running,
            "PAUSED" => State::Paused,
            "FAILED" => State::Failed,
            "DESTROYED" => State::Destroyed,
            "RESTARTING" => State::Restarting,
            "STOPPED" => State::Stopped,
            other => return Err(format!("unknown status state {other:?}")),
        })
    }
}

/// A connector or task status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub state: State,
    /// The failure's stack trace, for `FAILED`.
    pub trace: Option<String>,
    /// In dedicated MM2, the herder pair, e.g. `A->B`.
    pub worker_id: String,
    pub generation: i32,
}

// STATUS_SCHEMA_V0 field order.
#[derive(Serialize)]
struct StatusJson<'a> {
    state: &'static str,
    trace: Option<&'a str>,
    worker_id: &'a str,
    generation: i32,
}

/// The value for a connector or task status. `None` for `DESTROYED`, which Connect writes as a
/// tombstone.
pub fn encode_status(status: &Status) -> Option<Vec<u8>> {
    if status.state == State::Destroyed {
        return None;
    }
    Some(jackson_bytes(&StatusJson {
        state: status.state.as_str(),
        trace: status.trace.as_deref(),
        worker_id: &status.worker_id,
        generation: status.generation,
    }))
}

/// Decodes a connector or task status value. `None` for a tombstone (status removed).
pub fn decode_status(value: Option<&[u8]>) -> Result<Option<Status>, ConnectRecordError> {
    const WHAT: &str = "Connect status value";
    let Some(v) = parse_nullable(WHAT, value)? else {
        return Ok(None);
    };
    let m = object(WHAT, v)?;
    let state = string(WHAT, &m, "state")?
        .parse::<State>()
        .map_err(|e| ConnectRecordError::invalid(WHAT, e))?;
    let trace = match m.get("trace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(ConnectRecordError::invalid(
                WHAT,
                format!("'trace' must be a string or null, not {}", kind(other)),
            ))
        }
    };
    Ok(Some(Status {
        state,
        trace,
        worker_id: string(WHAT, &m, "worker_id")?,
        generation: as_i32(WHAT, "generation", required(WHAT, &m, "generation")?)?,
    }))
}

/// A topic a connector's task has produced to (Connect topic tracking).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicStatus {
    pub topic: String,
    pub connector: String,
    pub task: i32,
    /// Epoch milliseconds.
    pub discover_timestamp: i64,
}

// TOPIC_STATUS_VALUE_SCHEMA_V0 field order, wrapped in {"topic": ...}.
#[derive(Serialize)]
struct TopicStatusJson<'a> {
    topic: TopicStatusInner<'a>,
}

#[derive(Serialize)]
struct TopicStatusInner<'a> {
    name: &'a str,
    connector: &'a str,
    task: i32,
    #[serde(rename = "discoverTimestamp")]
    discover_timestamp: i64,
}

impl TopicStatus {
    /// `status-topic-<topic>:connector-<connector>`.
    pub fn key(&self) -> StatusKey {
        StatusKey::Topic {
            topic: self.topic.clone(),
            connector: self.connector.clone(),
        }
    }
}

pub fn encode_topic_status(status: &TopicStatus) -> Vec<u8> {
    jackson_bytes(&TopicStatusJson {
        topic: TopicStatusInner {
            name: &status.topic,
            connector: &status.connector,
            task: status.task,
            discover_timestamp: status.discover_timestamp,
        },
    })
}

/// Decodes a topic status value. `None` for a tombstone (topic no longer tracked).
pub fn decode_topic_status(
    value: Option<&[u8]>,
) -> Result<Option<TopicStatus>, ConnectRecordError> {
    const WHAT: &str = "Connect topic status value";
    let Some(v) = parse_nullable(WHAT, value)? else {
        return Ok(None);
    };
    let outer = object(WHAT, v)?;
    let inner = match outer.get("topic") {
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(ConnectRecordError::invalid(
                WHAT,
                format!("'topic' must be a JSON object, not {}", kind(other)),
            ))
        }
        None => return Err(ConnectRecordError::invalid(WHAT, "missing 'topic'")),
    };
    Ok(Some(TopicStatus {
        topic: string(WHAT, inner, "name")?,
        connector: string(WHAT, inner, "connector")?,
        task: as_i32(WHAT, "task", required(WHAT, inner, "task")?)?,
        discover_timestamp: as_i64(
            WHAT,
            "discoverTimestamp",
            required(WHAT, inner, "discoverTimestamp")?,
        )?,
    }))
}

/// One decoded status-topic record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusRecord {
    /// `status: None` = removed (tombstone).
    Connector {
        connector: String,
        status: Option<Status>,
    },
    Task {
        connector: String,
        task: i32,
        status: Option<Status>,
    },
    Topic {
        topic: String,
        connector: String,
        status: Option<TopicStatus>,
    },
}

/// Decodes a status-topic record by its key. Errors where Java logs and discards it.
pub fn decode_record(key: &str, value: Option<&[u8]>) -> Result<StatusRecord, ConnectRecordError> {
    let with_key = |e: ConnectRecordError| match e {
        ConnectRecordError::Invalid { what, reason } => ConnectRecordError::Invalid {
            what: format!("{what} for {key}"),
            reason,
        },
        ConnectRecordError::Json { what, source } => ConnectRecordError::Json {
            what: format!("{what} for {key}"),
            source,
        },
    };
    match StatusKey::parse(key) {
        Some(StatusKey::Connector(connector)) => Ok(StatusRecord::Connector {
            status: decode_status(value).map_err(with_key)?,
            connector,
        }),
        Some(StatusKey::Task { connector, task }) => Ok(StatusRecord::Task {
            status: decode_status(value).map_err(with_key)?,
            connector,
            task,
        }),
        Some(StatusKey::Topic { topic, connector }) => Ok(StatusRecord::Topic {
            status: decode_topic_status(value).map_err(with_key)?,
            topic,
            connector,
        }),
        None => Err(ConnectRecordError::invalid(
            format!("status record {key}"),
            "invalid status key",
        )),
    }
}

fn object(what: &str, v: Value) -> Result<Map<String, Value>, ConnectRecordError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(ConnectRecordError::invalid(
            what,
            format!("must be a JSON object, not {}", kind(&other)),
        )),
    }
}

fn required<'m>(
    what: &str,
    m: &'m Map<String, Value>,
    field: &str,
) -> Result<&'m Value, ConnectRecordError> {
    match m.get(field) {
        None | Some(Value::Null) => Err(ConnectRecordError::invalid(
            what,
            format!("missing '{field}'"),
        )),
        Some(v) => Ok(v),
    }
}

fn string(what: &str, m: &Map<String, Value>, field: &str) -> Result<String, ConnectRecordError> {
    match required(what, m, field)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(ConnectRecordError::invalid(
            what,
            format!("'{field}' must be a string, not {}", kind(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(worker: &str, generation: i32) -> Status {
        Status {
            state: State::Running,
            trace: None,
            worker_id: worker.into(),
            generation,
        }
    }

    #[test]
    fn keys_format_and_parse() {
        let keys = [
            (
                StatusKey::Connector("MirrorSourceConnector".into()),
                "status-connector-MirrorSourceConnector",
            ),
            (
                StatusKey::Task {
                    connector: "MirrorSourceConnector".into(),
                    task: 0,
                },
                "status-task-MirrorSourceConnector-0",
            ),
            (
                StatusKey::Topic {
                    topic: "A.t1".into(),
                    connector: "MirrorSourceConnector".into(),
                },
                "status-topic-A.t1:connector-MirrorSourceConnector",
            ),
        ];
        for (key, text) in keys {
            assert_eq!(key.to_string(), text);
            assert_eq!(StatusKey::parse(text), Some(key));
        }
    }

    #[test]
    fn task_keys_with_dashed_connector_names() {
        assert_eq!(
            StatusKey::parse("status-task-my-conn-12"),
            Some(StatusKey::Task {
                connector: "my-conn".into(),
                task: 12
            })
        );
        assert_eq!(StatusKey::parse("status-task-conn"), None);
        assert_eq!(StatusKey::parse("status-task-conn-x"), None);
        assert_eq!(StatusKey::parse("status-connector-"), None);
        assert_eq!(StatusKey::parse("status-topic-:connector-c"), None);
        assert_eq!(StatusKey::parse("status-topic-t"), None);
        assert_eq!(StatusKey::parse("something-else"), None);
    }

    #[test]
    fn status_value_matches_connect_output() {
        // As seen in a real MM2 status topic: trace null, worker id = herder pair.
        assert_eq!(
            String::from_utf8(encode_status(&running("A->B", 2)).unwrap()).unwrap(),
            r#"{"state":"RUNNING","trace":null,"worker_id":"A->B","generation":2}"#
        );
        let failed = Status {
            state: State::Failed,
            trace: Some("org.example.Boom: x\n\tat y".into()),
            worker_id: "A->B".into(),
            generation: 7,
        };
        let bytes = encode_status(&failed).unwrap();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"state":"FAILED","trace":"org.example.Boom: x\n\tat y","worker_id":"A->B","generation":7}"#
        );
        assert_eq!(decode_status(Some(&bytes)).unwrap(), Some(failed));
    }

    #[test]
    fn destroyed_is_a_tombstone() {
        let mut s = running("A->B", 1);
        s.state = State::Destroyed;
        assert_eq!(encode_status(&s), None);
        assert_eq!(decode_status(None).unwrap(), None);
    }

    #[test]
    fn every_state_round_trips() {
        for state in [
            State::Unassigned,
            State::Running,
            State::Paused,
            State::Failed,
            State::Restarting,
            State::Stopped,
        ] {
            let s = Status {
                state,
                ..running("w", 3)
            };
            assert_eq!(
                decode_status(encode_status(&s).as_deref()).unwrap(),
                Some(s)
            );
        }
    }

    #[test]
    fn bad_status_values_are_rejected() {
        let bad: [&[u8]; 7] = [
            br#"{"state":"running","worker_id":"w","generation":1}"#,
            br#"{"worker_id":"w","generation":1}"#,
            br#"{"state":"RUNNING","worker_id":"w","generation":1.5}"#,
            br#"{"state":"RUNNING","worker_id":"w"}"#,
            br#"{"state":"RUNNING","trace":3,"worker_id":"w","generation":1}"#,
            br#"["RUNNING"]"#,
            b"{",
        ];
        for b in bad {
            assert!(
                decode_status(Some(b)).is_err(),
                "{}",
                String::from_utf8_lossy(b)
            );
        }
        // Field order and a missing trace do not matter.
        assert_eq!(
            decode_status(Some(
                br#"{"generation":4,"worker_id":"w","state":"RUNNING"}"#
            ))
            .unwrap(),
            Some(running("w", 4))
        );
    }

    #[test]
    fn topic_status_matches_connect_output() {
        let t = TopicStatus {
            topic: "A.t1".into(),
            connector: "MirrorSourceConnector".into(),
            task: 0,
            discover_timestamp: 1_746_009_337_985,
        };
        let bytes = encode_topic_status(&t);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"topic":{"name":"A.t1","connector":"MirrorSourceConnector","task":0,"discoverTimestamp":1746009337985}}"#
        );
        assert_eq!(
            decode_record(&t.key().to_string(), Some(&bytes)).unwrap(),
            StatusRecord::Topic {
                topic: "A.t1".into(),
                connector: "MirrorSourceConnector".into(),
                status: Some(t)
            }
        );
        assert!(decode_topic_status(Some(br#"{"topic":"x"}"#)).is_err());
    }

    #[test]
    fn records_decode_by_key() {
        let bytes = encode_status(&running("A->B", 5)).unwrap();
        assert_eq!(
            decode_record("status-task-MirrorSourceConnector-3", Some(&bytes)).unwrap(),
            StatusRecord::Task {
                connector: "MirrorSourceConnector".into(),
                task: 3,
                status: Some(running("A->B", 5))
            }
        );
        assert_eq!(
            decode_record("status-connector-MirrorSourceConnector", None).unwrap(),
            StatusRecord::Connector {
                connector: "MirrorSourceConnector".into(),
                status: None
            }
        );
        let err = decode_record("status-connector-c", Some(b"{}"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Connect status value for status-connector-c: missing 'state'"
        );
        assert!(decode_record("bogus", Some(&bytes)).is_err());
    }
}
