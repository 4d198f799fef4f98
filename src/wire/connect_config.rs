//! Connect config-topic records in `mm2-configs.<source>.internal` (groundwork; §1.4, §3).
//!
//! In MM2's dedicated mode each herder pair runs a Connect `DistributedHerder` whose
//! `KafkaConfigBackingStore` keeps connector configs, task configs and target states in this
//! single-partition compacted topic. Writing the same records lets Java MM2 (and Connect's
//! REST view of it) see the connectors and tasks we run, and lets us read what Java left.
//!
//! Keys are plain strings; values are JSON from the worker's internal converter, which is a
//! `JsonConverter` with `schemas.enable=false` (see `Worker`'s `internalConverterConfig`), so a
//! Connect `Struct` becomes a plain JSON object with fields in schema order:
//!
//! | key | value (schema) |
//! |---|---|
//! | `connector-<name>` | `{"properties":{...}}` (`CONNECTOR_CONFIGURATION_V0`); null = connector removed |
//! | `task-<name>-<n>` | `{"properties":{...}}` (`TASK_CONFIGURATION_V0`) |
//! | `commit-<name>` | `{"tasks":N}` (`CONNECTOR_TASKS_COMMIT_V0`): applies the buffered task configs |
//! | `target-state-<name>` | `{"state":"STARTED","state.v2":"STARTED"}` (`TARGET_STATE_V1`, Kafka 3.5+); null = removed |
//! | `tasks-fencing-<name>` | `{"task-count":N}` (`TASK_COUNT_RECORD_V0`, exactly-once source support) |
//! | `restart-connector-<name>` | `{"include-tasks":b,"only-failed":b}` (`RESTART_REQUEST_V0`) |
//! | `session-key` | `{"key":base64,"algorithm":..,"creation-timestamp":ms}` (`SESSION_KEY_V0`) |
//! | `logger-cluster-<namespace>` | `{"level":"DEBUG"}` (`LOGGER_LEVEL_V0`) |
//!
//! Target states: writers since 3.5 put the real state in `state.v2` and, for `STOPPED` (which
//! older workers do not know), `PAUSED` in `state`. Readers prefer `state.v2` and fall back on
//! `state`, so records from before 3.5 (`{"state":"STARTED"}`) are read too.
//!
//! Task config records only take effect once a `commit-<name>` record with the task count is
//! read after them; that buffering belongs to the config store, not to this codec.
//!
//! Sources checked: `apache/kafka`
//! `connect/runtime/src/main/java/org/apache/kafka/connect/storage/KafkaConfigBackingStore.java`
//! (key prefixes, schemas, `serializeTargetState`, `ConsumeCallback`, `parseTaskId`),
//! `connect/runtime/src/main/java/org/apache/kafka/connect/runtime/Worker.java` (internal
//! converter = `JsonConverter`, `schemas.enable=false`), `connect/mirror/.../MirrorMaker.java`
//! (the config and status stores get `worker.getInternalValueConverter()`), and
//! `connect/json/src/main/java/org/apache/kafka/connect/json/JsonConverter.java`
//! (`convertToJson` writes struct fields in schema order, null optional fields as `null`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use super::json::{as_i32, as_i64, jackson_bytes, kind, parse_nullable, ConnectRecordError};

pub const CONNECTOR_PREFIX: &str = "connector-";
pub const TASK_PREFIX: &str = "task-";
pub const COMMIT_TASKS_PREFIX: &str = "commit-";
pub const TARGET_STATE_PREFIX: &str = "target-state-";
pub const TASK_COUNT_RECORD_PREFIX: &str = "tasks-fencing-";
pub const RESTART_PREFIX: &str = "restart-connector-";
pub const SESSION_KEY_KEY: &str = "session-key";
pub const LOGGER_CLUSTER_PREFIX: &str = "logger-cluster-";

/// The key of a config-topic record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigKey {
    Connector(String),
    Task { connector: String, task: i32 },
    Commit(String),
    TargetState(String),
    TaskCount(String),
    Restart(String),
    SessionKey,
    LoggerCluster(String),
}

impl fmt::Display for ConfigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigKey::Connector(c) => write!(f, "{CONNECTOR_PREFIX}{c}"),
            ConfigKey::Task { connector, task } => write!(f, "{TASK_PREFIX}{connector}-{task}"),
            ConfigKey::Commit(c) => write!(f, "{COMMIT_TASKS_PREFIX}{c}"),
            ConfigKey::TargetState(c) => write!(f, "{TARGET_STATE_PREFIX}{c}"),
            ConfigKey::TaskCount(c) => write!(f, "{TASK_COUNT_RECORD_PREFIX}{c}"),
            ConfigKey::Restart(c) => write!(f, "{RESTART_PREFIX}{c}"),
            ConfigKey::SessionKey => f.write_str(SESSION_KEY_KEY),
            ConfigKey::LoggerCluster(ns) => write!(f, "{LOGGER_CLUSTER_PREFIX}{ns}"),
        }
    }
}

impl ConfigKey {
    /// Classifies a key in the same order as Java's `ConsumeCallback`. `None` for keys Java
    /// discards (unknown prefix, or a `task-` key whose last `-` part is not a number).
    pub fn parse(key: &str) -> Option<ConfigKey> {
        if let Some(c) = key.strip_prefix(TARGET_STATE_PREFIX) {
            Some(ConfigKey::TargetState(c.to_string()))
        } else if let Some(c) = key.strip_prefix(CONNECTOR_PREFIX) {
            Some(ConfigKey::Connector(c.to_string()))
        } else if key.starts_with(TASK_PREFIX) {
            let (connector, task) = parse_task_id(key, 1)?;
            Some(ConfigKey::Task { connector, task })
        } else if let Some(c) = key.strip_prefix(COMMIT_TASKS_PREFIX) {
            Some(ConfigKey::Commit(c.to_string()))
        } else if let Some(c) = key.strip_prefix(RESTART_PREFIX) {
            Some(ConfigKey::Restart(c.to_string()))
        } else if let Some(c) = key.strip_prefix(TASK_COUNT_RECORD_PREFIX) {
            Some(ConfigKey::TaskCount(c.to_string()))
        } else if key == SESSION_KEY_KEY {
            Some(ConfigKey::SessionKey)
        } else {
            key.strip_prefix(LOGGER_CLUSTER_PREFIX)
                .map(|ns| ConfigKey::LoggerCluster(ns.to_string()))
        }
    }
}

/// Java's `String.split("-")`: trailing empty strings are removed; no `-` gives the input.
fn java_split_dash(s: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = s.split('-').collect();
    if parts.len() > 1 {
        while parts.last() == Some(&"") {
            parts.pop();
        }
    }
    parts
}

/// Parses `<prefix>-<connector>-<task>` the way Connect does (`parseTaskId`,
/// `parseConnectorTaskId`): split on every `-`, skip the `prefix_parts` prefix words, the last
/// part is the task number and the rest, re-joined with `-`, is the connector name. This is why
/// connector names may contain dashes.
pub(crate) fn parse_task_id(key: &str, prefix_parts: usize) -> Option<(String, i32)> {
    let parts = java_split_dash(key);
    if parts.len() < prefix_parts + 2 {
        return None;
    }
    let task: i32 = parts[parts.len() - 1].parse().ok()?;
    let connector = parts[prefix_parts..parts.len() - 1].join("-");
    Some((connector, task))
}

/// A connector's desired state (`TargetState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    Started,
    Paused,
    Stopped,
}

impl TargetState {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetState::Started => "STARTED",
            TargetState::Paused => "PAUSED",
            TargetState::Stopped => "STOPPED",
        }
    }
}

impl fmt::Display for TargetState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TargetState {
    type Err = String;

    /// Exact, case-sensitive names, like Java's `TargetState.valueOf`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "STARTED" => Ok(TargetState::Started),
            "PAUSED" => Ok(TargetState::Paused),
            "STOPPED" => Ok(TargetState::Stopped),
            other => Err(format!("unknown target state {other:?}")),
        }
    }
}

#[derive(Serialize)]
struct PropertiesJson<'a> {
    properties: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
struct CommitJson {
    tasks: i32,
}

#[derive(Serialize)]
struct TargetStateJson {
    state: &'static str,
    #[serde(rename = "state.v2")]
    state_v2: &'static str,
}

#[derive(Serialize)]
struct TaskCountJson {
    #[serde(rename = "task-count")]
    task_count: i32,
}

#[derive(Serialize)]
struct RestartJson {
    #[serde(rename = "include-tasks")]
    include_tasks: bool,
    #[serde(rename = "only-failed")]
    only_failed: bool,
}

/// Value of `connector-<name>`: `{"properties":{...}}` (keys in sorted order; readers do not
/// care about order).
pub fn encode_connector_config(properties: &BTreeMap<String, String>) -> Vec<u8> {
    jackson_bytes(&PropertiesJson { properties })
}

/// Value of `task-<name>-<n>`: the same shape as a connector config.
pub fn encode_task_config(properties: &BTreeMap<String, String>) -> Vec<u8> {
    encode_connector_config(properties)
}

/// Value of `commit-<name>`: `{"tasks":N}`.
pub fn encode_commit(tasks: i32) -> Vec<u8> {
    jackson_bytes(&CommitJson { tasks })
}

/// Value of `target-state-<name>` as written since Kafka 3.5 (`TARGET_STATE_V1`):
/// `STOPPED` is written as `{"state":"PAUSED","state.v2":"STOPPED"}` so older workers pause.
pub fn encode_target_state(state: TargetState) -> Vec<u8> {
    let legacy = match state {
        TargetState::Stopped => TargetState::Paused,
        other => other,
    };
    jackson_bytes(&TargetStateJson {
        state: legacy.as_str(),
        state_v2: state.as_str(),
    })
}

/// Value of `tasks-fencing-<name>`: `{"task-count":N}`.
pub fn encode_task_count(task_count: i32) -> Vec<u8> {
    jackson_bytes(&TaskCountJson { task_count })
}

/// Value of `restart-connector-<name>`: `{"include-tasks":b,"only-failed":b}`.
pub fn encode_restart_request(include_tasks: bool, only_failed: bool) -> Vec<u8> {
    jackson_bytes(&RestartJson {
        include_tasks,
        only_failed,
    })
}

/// One decoded config-topic record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigRecord {
    /// `None` = the connector was deleted (tombstone).
    ConnectorConfig {
        connector: String,
        properties: Option<BTreeMap<String, String>>,
    },
    TaskConfig {
        connector: String,
        task: i32,
        properties: BTreeMap<String, String>,
    },
    TasksCommit {
        connector: String,
        tasks: i32,
    },
    /// `None` = removed (written together with a connector deletion).
    TargetState {
        connector: String,
        state: Option<TargetState>,
    },
    TaskCount {
        connector: String,
        task_count: i32,
    },
    Restart {
        connector: String,
        include_tasks: bool,
        only_failed: bool,
    },
    SessionKey {
        /// Base64, as stored.
        key: String,
        algorithm: String,
        creation_timestamp: i64,
    },
    LoggerLevel {
        namespace: String,
        level: String,
    },
}

/// Decodes a config-topic record. Errors where Java logs and ignores the record: unknown keys,
/// wrong shapes, and tombstones for keys that are never deleted.
pub fn decode_record(key: &str, value: Option<&[u8]>) -> Result<ConfigRecord, ConnectRecordError> {
    let what = format!("config record {key}");
    let Some(parsed) = ConfigKey::parse(key) else {
        return Err(ConnectRecordError::invalid(what, "unknown config key"));
    };
    let value = parse_nullable(&what, value)?;
    // Only connector configs and target states may be deleted.
    let object = |v: Option<Value>| -> Result<serde_json::Map<String, Value>, ConnectRecordError> {
        match v {
            Some(Value::Object(m)) => Ok(m),
            Some(other) => Err(ConnectRecordError::invalid(
                &what,
                format!("value must be a JSON object, not {}", kind(&other)),
            )),
            None => Err(ConnectRecordError::invalid(
                &what,
                "value is unexpectedly null",
            )),
        }
    };
    let required =
        |m: &serde_json::Map<String, Value>, field: &str| -> Result<Value, ConnectRecordError> {
            m.get(field)
                .cloned()
                .ok_or_else(|| ConnectRecordError::invalid(&what, format!("missing '{field}'")))
        };
    let string =
        |m: &serde_json::Map<String, Value>, field: &str| -> Result<String, ConnectRecordError> {
            match required(m, field)? {
                Value::String(s) => Ok(s),
                other => Err(ConnectRecordError::invalid(
                    &what,
                    format!("'{field}' must be a string, not {}", kind(&other)),
                )),
            }
        };

    Ok(match parsed {
        ConfigKey::Connector(connector) => ConfigRecord::ConnectorConfig {
            properties: match value {
                None => None,
                v => Some(properties(&what, &object(v)?)?),
            },
            connector,
        },
        ConfigKey::Task { connector, task } => ConfigRecord::TaskConfig {
            properties: properties(&what, &object(value)?)?,
            connector,
            task,
        },
        ConfigKey::Commit(connector) => {
            let m = object(value)?;
            ConfigRecord::TasksCommit {
                tasks: as_i32(&what, "tasks", &required(&m, "tasks")?)?,
                connector,
            }
        }
        ConfigKey::TargetState(connector) => ConfigRecord::TargetState {
            state: match value {
                None => None,
                v => Some(target_state(&what, &object(v)?)?),
            },
            connector,
        },
        ConfigKey::TaskCount(connector) => {
            let m = object(value)?;
            ConfigRecord::TaskCount {
                task_count: as_i32(&what, "task-count", &required(&m, "task-count")?)?,
                connector,
            }
        }
        ConfigKey::Restart(connector) => {
            let m = object(value)?;
            // Java falls back on false (with a warning) for a missing or non-boolean flag.
            let flag = |field: &str| m.get(field).and_then(Value::as_bool).unwrap_or(false);
            ConfigRecord::Restart {
                include_tasks: flag("include-tasks"),
                only_failed: flag("only-failed"),
                connector,
            }
        }
        ConfigKey::SessionKey => {
            let m = object(value)?;
            ConfigRecord::SessionKey {
                key: string(&m, "key")?,
                algorithm: string(&m, "algorithm")?,
                creation_timestamp: as_i64(
                    &what,
                    "creation-timestamp",
                    &required(&m, "creation-timestamp")?,
                )?,
            }
        }
        ConfigKey::LoggerCluster(namespace) => {
            let m = object(value)?;
            ConfigRecord::LoggerLevel {
                level: string(&m, "level")?,
                namespace,
            }
        }
    })
}

/// The `properties` map. Values are `OPTIONAL_STRING` in Connect's schema; a `null` value is
/// dropped here (Connect treats such a key as unset in practice).
fn properties(
    what: &str,
    m: &serde_json::Map<String, Value>,
) -> Result<BTreeMap<String, String>, ConnectRecordError> {
    let props = match m.get("properties") {
        Some(Value::Object(p)) => p,
        Some(other) => {
            return Err(ConnectRecordError::invalid(
                what,
                format!("'properties' must be a JSON object, not {}", kind(other)),
            ))
        }
        None => return Err(ConnectRecordError::invalid(what, "missing 'properties'")),
    };
    let mut out = BTreeMap::new();
    for (k, v) in props {
        match v {
            Value::String(s) => {
                out.insert(k.clone(), s.clone());
            }
            Value::Null => {}
            other => {
                return Err(ConnectRecordError::invalid(
                    what,
                    format!("property '{k}' must be a string, not {}", kind(other)),
                ))
            }
        }
    }
    Ok(out)
}

/// Java's `processTargetStateRecord`: prefer a string `state.v2`, else `state`.
fn target_state(
    what: &str,
    m: &serde_json::Map<String, Value>,
) -> Result<TargetState, ConnectRecordError> {
    let name = match (m.get("state.v2"), m.get("state")) {
        (Some(Value::String(v2)), _) => v2,
        (_, Some(Value::String(v1))) => v1,
        (_, Some(other)) => {
            return Err(ConnectRecordError::invalid(
                what,
                format!("'state' must be a string, not {}", kind(other)),
            ))
        }
        (_, None) => return Err(ConnectRecordError::invalid(what, "missing 'state'")),
    };
    name.parse()
        .map_err(|e: String| ConnectRecordError::invalid(what, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn keys_format_and_parse() {
        let keys = [
            (
                ConfigKey::Connector("MirrorSourceConnector".into()),
                "connector-MirrorSourceConnector",
            ),
            (
                ConfigKey::Task {
                    connector: "MirrorSourceConnector".into(),
                    task: 2,
                },
                "task-MirrorSourceConnector-2",
            ),
            (ConfigKey::Commit("c".into()), "commit-c"),
            (ConfigKey::TargetState("c".into()), "target-state-c"),
            (ConfigKey::TaskCount("c".into()), "tasks-fencing-c"),
            (ConfigKey::Restart("c".into()), "restart-connector-c"),
            (ConfigKey::SessionKey, "session-key"),
            (
                ConfigKey::LoggerCluster("org.apache".into()),
                "logger-cluster-org.apache",
            ),
        ];
        for (key, text) in keys {
            assert_eq!(key.to_string(), text);
            assert_eq!(ConfigKey::parse(text), Some(key));
        }
        assert_eq!(ConfigKey::parse("bogus-key"), None);
    }

    #[test]
    fn task_keys_split_like_java() {
        assert_eq!(
            ConfigKey::parse("task-my-dashed-conn-10"),
            Some(ConfigKey::Task {
                connector: "my-dashed-conn".into(),
                task: 10
            })
        );
        // Not a number, or too few parts: Java discards these.
        assert_eq!(ConfigKey::parse("task-conn-x"), None);
        assert_eq!(ConfigKey::parse("task-3"), None);
        // Java's split drops trailing empty strings, so a trailing dash is ignored.
        assert_eq!(
            ConfigKey::parse("task-a-1-"),
            Some(ConfigKey::Task {
                connector: "a".into(),
                task: 1
            })
        );
        assert_eq!(java_split_dash("a--b"), vec!["a", "", "b"]);
        assert_eq!(java_split_dash("---"), Vec::<&str>::new());
        assert_eq!(java_split_dash(""), vec![""]);
    }

    #[test]
    fn connector_and_task_configs() {
        let p = props(&[
            (
                "connector.class",
                "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            ),
            ("tasks.max", "1"),
        ]);
        let bytes = encode_connector_config(&p);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"properties":{"connector.class":"org.apache.kafka.connect.mirror.MirrorSourceConnector","tasks.max":"1"}}"#
        );
        assert_eq!(
            decode_record("connector-MirrorSourceConnector", Some(&bytes)).unwrap(),
            ConfigRecord::ConnectorConfig {
                connector: "MirrorSourceConnector".into(),
                properties: Some(p.clone())
            }
        );
        assert_eq!(
            decode_record(
                "task-MirrorSourceConnector-0",
                Some(&encode_task_config(&p))
            )
            .unwrap(),
            ConfigRecord::TaskConfig {
                connector: "MirrorSourceConnector".into(),
                task: 0,
                properties: p
            }
        );
    }

    #[test]
    fn connector_tombstone_is_a_removal_but_task_tombstone_is_an_error() {
        assert_eq!(
            decode_record("connector-c", None).unwrap(),
            ConfigRecord::ConnectorConfig {
                connector: "c".into(),
                properties: None
            }
        );
        let err = decode_record("task-c-0", None).unwrap_err().to_string();
        assert_eq!(err, "config record task-c-0: value is unexpectedly null");
        assert!(decode_record("commit-c", None).is_err());
    }

    #[test]
    fn null_property_values_are_dropped_and_others_rejected() {
        let rec =
            decode_record("connector-c", Some(br#"{"properties":{"a":"1","b":null}}"#)).unwrap();
        assert_eq!(
            rec,
            ConfigRecord::ConnectorConfig {
                connector: "c".into(),
                properties: Some(props(&[("a", "1")]))
            }
        );
        assert!(decode_record("connector-c", Some(br#"{"properties":{"a":1}}"#)).is_err());
        assert!(decode_record("connector-c", Some(br#"{"props":{}}"#)).is_err());
        assert!(decode_record("connector-c", Some(br#"[]"#)).is_err());
    }

    #[test]
    fn commit_records() {
        assert_eq!(encode_commit(3), br#"{"tasks":3}"#.to_vec());
        assert_eq!(
            decode_record("commit-MirrorSourceConnector", Some(&encode_commit(3))).unwrap(),
            ConfigRecord::TasksCommit {
                connector: "MirrorSourceConnector".into(),
                tasks: 3
            }
        );
        let err = decode_record("commit-c", Some(br#"{"tasks":3.0}"#))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "config record commit-c: 'tasks' must be an integer, not the floating-point number 3.0"
        );
        assert!(decode_record("commit-c", Some(br#"{}"#)).is_err());
    }

    #[test]
    fn target_states_use_v1_with_legacy_fallback() {
        assert_eq!(
            encode_target_state(TargetState::Started),
            br#"{"state":"STARTED","state.v2":"STARTED"}"#.to_vec()
        );
        assert_eq!(
            encode_target_state(TargetState::Stopped),
            br#"{"state":"PAUSED","state.v2":"STOPPED"}"#.to_vec()
        );
        for s in [
            TargetState::Started,
            TargetState::Paused,
            TargetState::Stopped,
        ] {
            assert_eq!(
                decode_record("target-state-c", Some(&encode_target_state(s))).unwrap(),
                ConfigRecord::TargetState {
                    connector: "c".into(),
                    state: Some(s)
                }
            );
        }
        // Pre-3.5 records, and a non-string state.v2, fall back on `state`.
        let legacy = decode_record("target-state-c", Some(br#"{"state":"PAUSED"}"#)).unwrap();
        assert_eq!(
            legacy,
            ConfigRecord::TargetState {
                connector: "c".into(),
                state: Some(TargetState::Paused)
            }
        );
        let odd = decode_record(
            "target-state-c",
            Some(br#"{"state":"STARTED","state.v2":5}"#),
        )
        .unwrap();
        assert!(matches!(
            odd,
            ConfigRecord::TargetState {
                state: Some(TargetState::Started),
                ..
            }
        ));
        assert!(decode_record("target-state-c", Some(br#"{"state":"started"}"#)).is_err());
        assert_eq!(
            decode_record("target-state-c", None).unwrap(),
            ConfigRecord::TargetState {
                connector: "c".into(),
                state: None
            }
        );
    }

    #[test]
    fn task_count_restart_session_and_logger_records() {
        assert_eq!(encode_task_count(2), br#"{"task-count":2}"#.to_vec());
        assert_eq!(
            decode_record("tasks-fencing-c", Some(&encode_task_count(2))).unwrap(),
            ConfigRecord::TaskCount {
                connector: "c".into(),
                task_count: 2
            }
        );
        assert_eq!(
            encode_restart_request(true, false),
            br#"{"include-tasks":true,"only-failed":false}"#.to_vec()
        );
        assert_eq!(
            decode_record(
                "restart-connector-c",
                Some(&encode_restart_request(true, true))
            )
            .unwrap(),
            ConfigRecord::Restart {
                connector: "c".into(),
                include_tasks: true,
                only_failed: true
            }
        );
        assert_eq!(
            decode_record("restart-connector-c", Some(br#"{"include-tasks":"yes"}"#)).unwrap(),
            ConfigRecord::Restart {
                connector: "c".into(),
                include_tasks: false,
                only_failed: false
            }
        );
        assert_eq!(
            decode_record(
                "session-key",
                Some(br#"{"key":"AAEC","algorithm":"HmacSHA256","creation-timestamp":1700000000000}"#)
            )
            .unwrap(),
            ConfigRecord::SessionKey {
                key: "AAEC".into(),
                algorithm: "HmacSHA256".into(),
                creation_timestamp: 1_700_000_000_000
            }
        );
        assert_eq!(
            decode_record(
                "logger-cluster-org.apache.kafka",
                Some(br#"{"level":"DEBUG"}"#)
            )
            .unwrap(),
            ConfigRecord::LoggerLevel {
                namespace: "org.apache.kafka".into(),
                level: "DEBUG".into()
            }
        );
    }

    #[test]
    fn unknown_keys_and_bad_json_are_rejected() {
        assert_eq!(
            decode_record("nope", Some(b"{}")).unwrap_err().to_string(),
            "config record nope: unknown config key"
        );
        assert!(decode_record("commit-c", Some(b"{")).is_err());
    }
}
