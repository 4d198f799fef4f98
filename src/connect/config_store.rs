//! Connector and task configs in `mm2-configs.<source>.internal`, as Connect's
//! `KafkaConfigBackingStore` writes them.
//!
//! In dedicated mode Java MM2 (re)writes each connector's config at start-up, and the leader
//! writes task configs whenever the connector's task configs change. A Java worker taking over
//! reads this topic to learn the connectors and tasks, and operators see them through Connect's
//! REST API. We write the same records, in Java's order for one update: `connector-<name>`, then
//! `task-<name>-<i>` for every task, then `commit-<name>` `{"tasks":N}` (task configs only take
//! effect when a reader reaches the commit record after them), then `target-state-<name>`
//! STARTED.
//!
//! A slice runs every few minutes, so it must not append the same configs every time (the topic
//! would grow with every slice until compaction catches up, and every Java reader would see a
//! config "change"). Whether anything changed is decided against a hash of what we last wrote,
//! kept in the [`StateStore`] under a key the caller chooses. Without a stored hash (first run,
//! lost state, or a topic that no longer holds our record) we read the single-partition topic
//! from the beginning and compare with the latest connector config and committed task configs
//! found there, replayed with Connect's rules (task configs are applied by a complete commit).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::redact::{redact_secrets, reverse_transform};
use crate::config::{ConnectorKind, Props};
use crate::kafka::internal_log::{InternalLog, LogError, LogRecord, BEGINNING};
use crate::state::{StateError, StateStore};
use crate::wire::connect_config::{
    decode_record, encode_commit, encode_connector_config, encode_target_state, encode_task_config,
    ConfigKey, ConfigRecord, TargetState,
};

/// Default bound for reading the config topic.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(60);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const STATE_VERSION: i64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ConfigStoreError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("config topic {topic}: {connector} has {tasks} task configs, more than a commit record can count")]
    TooManyTasks {
        topic: String,
        connector: String,
        tasks: usize,
    },
}

/// A connector's configs as a Connect reader would see them after replaying the topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredConnector {
    /// The latest `connector-<name>` record; `None` if absent or deleted.
    pub config: Option<Props>,
    /// Task configs applied by the latest complete commit record, in task order.
    pub tasks: Vec<Props>,
    /// A commit record was found whose task configs were missing (Connect's "inconsistent").
    pub inconsistent: bool,
    /// Offset of the latest `connector-<name>` record.
    pub connector_offset: Option<i64>,
}

/// Replays config-topic records for one connector with `KafkaConfigBackingStore`'s rules.
pub fn replay_connector(connector: &str, records: &[LogRecord]) -> StoredConnector {
    let mut out = StoredConnector::default();
    let mut deferred: BTreeMap<i32, Props> = BTreeMap::new();
    let mut committed: BTreeMap<i32, Props> = BTreeMap::new();
    let mut count = 0i32;
    for r in records {
        let Some(key) = r.key.as_deref().map(String::from_utf8_lossy) else {
            continue;
        };
        // Cheap filter before decoding: only this connector's records.
        let ours = match ConfigKey::parse(&key) {
            Some(ConfigKey::Connector(c)) | Some(ConfigKey::Commit(c)) => c == connector,
            Some(ConfigKey::Task { connector: c, .. }) => c == connector,
            _ => false,
        };
        if !ours {
            continue;
        }
        match decode_record(&key, r.value.as_deref()) {
            Ok(ConfigRecord::ConnectorConfig { properties, .. }) => {
                if properties.is_none() {
                    // A deleted connector loses its tasks too.
                    committed.clear();
                    deferred.clear();
                    count = 0;
                    out.inconsistent = false;
                }
                out.config = properties;
                out.connector_offset = Some(r.offset);
            }
            Ok(ConfigRecord::TaskConfig {
                task, properties, ..
            }) => {
                deferred.insert(task, properties);
            }
            Ok(ConfigRecord::TasksCommit { tasks, .. }) => {
                let complete = (0..tasks).all(|i| deferred.contains_key(&i));
                if complete {
                    committed.append(&mut deferred);
                    out.inconsistent = false;
                } else {
                    out.inconsistent = true;
                }
                deferred.clear();
                count = tasks;
            }
            Ok(_) => {}
            Err(e) => {
                // Java logs and ignores such records; a rewrite will fix the difference.
                tracing::warn!(key = %key, offset = r.offset, error = %e, "ignoring invalid config record");
            }
        }
    }
    out.tasks = (0..count)
        .map_while(|i| committed.get(&i).cloned())
        .collect();
    if out.tasks.len() != count.max(0) as usize {
        out.inconsistent = true;
    }
    out
}

/// 64-bit FNV-1a: stable across Rust versions and platforms (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Fingerprint of what we would write, over the exact record bytes (length-prefixed).
/// `task_configs` with `task.class` set as Connect's `Worker.connectorTaskConfigs` sets it,
/// for the MM2 connector named by `connector.class` (other classes are left as they are).
fn with_task_class(connector_config: &Props, task_configs: &[Props]) -> Vec<Props> {
    let kind = connector_config
        .get("connector.class")
        .and_then(|class| ConnectorKind::from_class_name(class));
    task_configs
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if let Some(kind) = kind {
                t.insert("task.class".into(), kind.task_class_name().into());
            }
            t
        })
        .collect()
}

fn fingerprint(connector: &str, connector_config: &Props, task_configs: &[Props]) -> String {
    let mut parts: Vec<Vec<u8>> = vec![
        connector.as_bytes().to_vec(),
        encode_connector_config(connector_config),
    ];
    parts.extend(task_configs.iter().map(encode_task_config));
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in &parts {
        h = fnv1a(&(p.len() as u64).to_le_bytes(), h);
        h = fnv1a(p, h);
    }
    format!("{h:016x}-{}", task_configs.len())
}

/// Writes connector and task configs to the config topic when they change.
pub struct ConfigStore {
    log: InternalLog,
    state: Arc<dyn StateStore>,
    read_timeout: Duration,
}

impl std::fmt::Debug for ConfigStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigStore")
            .field("topic", &self.log.topic())
            .finish_non_exhaustive()
    }
}

impl ConfigStore {
    /// `topic` is the (single-partition) config topic; Java-named client settings for the
    /// target cluster; `state` keeps the fingerprint of what we last wrote.
    pub fn new(
        topic: impl Into<String>,
        consumer: Props,
        producer: Props,
        state: Arc<dyn StateStore>,
    ) -> Self {
        ConfigStore {
            log: InternalLog::new(topic, consumer, producer),
            state,
            read_timeout: DEFAULT_READ_TIMEOUT,
        }
    }

    pub fn with_read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    pub fn topic(&self) -> &str {
        self.log.topic()
    }

    /// Writes `connector-<connector>`, `task-<connector>-<i>`…, `commit-<connector>` and
    /// `target-state-<connector>` (STARTED), in that order, unless exactly these configs are
    /// already stored. `raw_connector_config` has its placeholders unresolved; `task_configs`
    /// are the connector's (`taskConfigs`, resolved). What is written holds no secret: task
    /// configs get the raw placeholders back and literal secrets are hidden
    /// ([`crate::config::redact`]); each task config also gets the `task.class` Connect's
    /// worker adds. `state_key` names the fingerprint in the state store (e.g.
    /// `A->B/MirrorSourceConnector/config-hash`). Returns whether anything was written.
    pub async fn put_connector_and_tasks(
        &self,
        connector: &str,
        raw_connector_config: &Props,
        task_configs: &[Props],
        state_key: &str,
    ) -> Result<bool, ConfigStoreError> {
        let connector_config = &redact_secrets(raw_connector_config);
        let task_configs: Vec<Props> = reverse_transform(raw_connector_config, task_configs)
            .iter()
            .map(redact_secrets)
            .collect();
        let task_configs = &with_task_class(connector_config, &task_configs);
        let tasks =
            i32::try_from(task_configs.len()).map_err(|_| ConfigStoreError::TooManyTasks {
                topic: self.topic().to_string(),
                connector: connector.to_string(),
                tasks: task_configs.len(),
            })?;
        let print = fingerprint(connector, connector_config, task_configs);
        match self.stored_fingerprint(state_key).await? {
            Some(stored) if stored == print => return Ok(false),
            Some(_) => {}
            None => {
                // No usable fingerprint: compare with what the topic holds.
                let stored = self.read_connector(connector).await?;
                let same = !stored.inconsistent
                    && stored.config.as_ref() == Some(connector_config)
                    && stored.tasks.as_slice() == task_configs;
                if same {
                    if let Some(offset) = stored.connector_offset {
                        self.save_fingerprint(state_key, &print, offset)?;
                    }
                    return Ok(false);
                }
            }
        }

        let key = |k: ConfigKey| k.to_string().into_bytes();
        let mut records = vec![(
            0,
            key(ConfigKey::Connector(connector.to_string())),
            Some(encode_connector_config(connector_config)),
        )];
        for (i, t) in task_configs.iter().enumerate() {
            records.push((
                0,
                key(ConfigKey::Task {
                    connector: connector.to_string(),
                    task: i as i32,
                }),
                Some(encode_task_config(t)),
            ));
        }
        records.push((
            0,
            key(ConfigKey::Commit(connector.to_string())),
            Some(encode_commit(tasks)),
        ));
        records.push((
            0,
            key(ConfigKey::TargetState(connector.to_string())),
            Some(encode_target_state(TargetState::Started)),
        ));
        let delivered = self.log.append(records).await?;
        tracing::info!(
            topic = %self.topic(),
            connector,
            tasks,
            "wrote connector and task configs"
        );
        self.save_fingerprint(state_key, &print, delivered[0].1)?;
        Ok(true)
    }

    /// The stored fingerprint, if it is for this topic and the topic still reaches the record
    /// it was taken at (a recreated topic does not).
    async fn stored_fingerprint(
        &self,
        state_key: &str,
    ) -> Result<Option<String>, ConfigStoreError> {
        let doc = match self.state.get(state_key) {
            Ok(Some(doc)) => doc,
            Ok(None) => return Ok(None),
            // Only a lost shortcut: the config topic is read instead.
            Err(e @ StateError::Corrupt { .. }) => {
                tracing::warn!(state_key, error = %e, "config fingerprint is corrupt; reading the config topic");
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let field = |k: &str| doc.get(k).cloned().unwrap_or(Value::Null);
        if field("version").as_i64() != Some(STATE_VERSION)
            || field("topic").as_str() != Some(self.topic())
        {
            tracing::info!(state_key, topic = %self.topic(), "config fingerprint is for another topic or version; reading the config topic");
            return Ok(None);
        }
        let (Some(hash), Some(offset)) = (
            field("hash").as_str().map(str::to_string),
            field("offset").as_i64(),
        ) else {
            return Ok(None);
        };
        // A lower bound of the end (exact on Kafka, trailing on tansu) above our record proves
        // the record's position still exists.
        let ends = self
            .log
            .end_offsets_lower_bound(&[0], REQUEST_TIMEOUT)
            .await?;
        if ends.get(&0).copied().unwrap_or(0) <= offset {
            tracing::info!(
                state_key,
                topic = %self.topic(),
                offset,
                "config topic does not reach the record the fingerprint was taken at (recreated?); reading it"
            );
            return Ok(None);
        }
        Ok(Some(hash))
    }

    fn save_fingerprint(
        &self,
        state_key: &str,
        print: &str,
        offset: i64,
    ) -> Result<(), ConfigStoreError> {
        self.state.put(
            state_key,
            &json!({
                "version": STATE_VERSION,
                "topic": self.topic(),
                "hash": print,
                "offset": offset,
            }),
        )?;
        Ok(())
    }

    /// Replays the config topic for one connector.
    pub async fn read_connector(
        &self,
        connector: &str,
    ) -> Result<StoredConnector, ConfigStoreError> {
        let records = self.read_all(self.read_timeout).await?;
        Ok(replay_connector(connector, &records))
    }

    /// Every record of the config topic, in order. For tests, diagnostics and the fallback.
    pub async fn read_all(&self, timeout: Duration) -> Result<Vec<LogRecord>, ConfigStoreError> {
        let starts = BTreeMap::from([(0, BEGINNING)]);
        Ok(self.log.read_to_end(&starts, timeout).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    fn rec(offset: i64, key: &str, value: Option<Vec<u8>>) -> LogRecord {
        LogRecord {
            partition: 0,
            offset,
            key: Some(key.as_bytes().to_vec()),
            value,
        }
    }

    #[test]
    fn fingerprint_changes_with_any_config() {
        let c = props(&[("a", "1")]);
        let t0 = props(&[("task.index", "0")]);
        let base = fingerprint("C", &c, std::slice::from_ref(&t0));
        assert_eq!(base, fingerprint("C", &c, std::slice::from_ref(&t0)));
        assert_ne!(base, fingerprint("D", &c, std::slice::from_ref(&t0)));
        assert_ne!(
            base,
            fingerprint("C", &props(&[("a", "2")]), std::slice::from_ref(&t0))
        );
        assert_ne!(base, fingerprint("C", &c, &[props(&[("task.index", "1")])]));
        assert_ne!(base, fingerprint("C", &c, &[t0.clone(), t0.clone()]));
        assert_ne!(base, fingerprint("C", &c, &[]));
    }

    #[test]
    fn replay_applies_tasks_only_on_a_complete_commit() {
        let c1 = props(&[("x", "1")]);
        let t = |i: &str| props(&[("task.index", i)]);
        let records = vec![
            rec(0, "connector-C", Some(encode_connector_config(&c1))),
            rec(1, "task-C-0", Some(encode_task_config(&t("0")))),
            rec(2, "task-C-1", Some(encode_task_config(&t("1")))),
            rec(3, "commit-C", Some(encode_commit(2))),
            rec(
                4,
                "connector-Other",
                Some(encode_connector_config(&props(&[]))),
            ),
            // Deferred and never committed: not applied.
            rec(5, "task-C-0", Some(encode_task_config(&t("zz")))),
        ];
        let s = replay_connector("C", &records);
        assert_eq!(s.config, Some(c1.clone()));
        assert_eq!(s.tasks, vec![t("0"), t("1")]);
        assert!(!s.inconsistent);
        assert_eq!(s.connector_offset, Some(0));

        // A commit for more tasks than were written is inconsistent, as in Connect.
        let mut bad = records.clone();
        bad.push(rec(6, "commit-C", Some(encode_commit(3))));
        let s = replay_connector("C", &bad);
        assert!(s.inconsistent);

        // A tombstone deletes the connector and its tasks.
        let mut deleted = records;
        deleted.push(rec(6, "connector-C", None));
        let s = replay_connector("C", &deleted);
        assert_eq!((s.config, s.tasks.len()), (None, 0));
    }

    #[test]
    fn replay_with_dashed_connector_names_keeps_them_apart() {
        let records = vec![
            rec(
                0,
                "connector-a-b",
                Some(encode_connector_config(&props(&[("k", "ab")]))),
            ),
            rec(
                1,
                "connector-a",
                Some(encode_connector_config(&props(&[("k", "a")]))),
            ),
            rec(
                2,
                "task-a-b-0",
                Some(encode_task_config(&props(&[("t", "ab0")]))),
            ),
            rec(3, "commit-a-b", Some(encode_commit(1))),
        ];
        let ab = replay_connector("a-b", &records);
        assert_eq!(ab.config, Some(props(&[("k", "ab")])));
        assert_eq!(ab.tasks, vec![props(&[("t", "ab0")])]);
        let a = replay_connector("a", &records);
        assert_eq!(a.config, Some(props(&[("k", "a")])));
        assert!(a.tasks.is_empty());
    }
}
