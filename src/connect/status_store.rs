//! Connector and task status in `mm2-status.<source>.internal`, as Connect's
//! `KafkaStatusBackingStore` writes it.
//!
//! Operators look here (through Connect's REST API, or by consuming the topic) to see whether
//! MM2 is RUNNING or FAILED and why; a slice writes the same records so the answer is the same
//! whichever implementation ran last. Keys and JSON values come from
//! [`crate::wire::connect_status`]; records are placed on `murmur2(key) % partitions` over the
//! topic's actual partition count, exactly where Java's producer (default partitioner) puts
//! them, so a reader never sees an older value of the same key on another partition.
//!
//! We also leave one `mirrorslice-report-<connector>-<task>` record per task and slice (the
//! slice report as JSON). Java's store logs and discards keys it does not know, so this is
//! harmless to a Java worker sharing the topic.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::config::Props;
use crate::kafka::internal_log::{InternalLog, LogError, BEGINNING};
use crate::wire::connect_status::{encode_status, Status, StatusKey};
use crate::wire::json::to_jackson_vec;
use crate::wire::murmur2::partition_for_key;

/// Prefix of our slice-report records.
pub const SLICE_REPORT_PREFIX: &str = "mirrorslice-report-";

/// `mirrorslice-report-<connector>-<task>`.
pub fn slice_report_key(connector: &str, task: i32) -> String {
    format!("{SLICE_REPORT_PREFIX}{connector}-{task}")
}

#[derive(Debug, thiserror::Error)]
pub enum StatusStoreError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("status record {key} in {topic}: cannot serialize the slice report: {source}")]
    Report {
        topic: String,
        key: String,
        #[source]
        source: serde_json::Error,
    },
}

/// One record to write to the status topic.
#[derive(Debug, Clone, PartialEq)]
pub enum StatusUpdate {
    Connector {
        name: String,
        status: Status,
    },
    Task {
        connector: String,
        task: i32,
        status: Status,
    },
    SliceReport {
        connector: String,
        task: i32,
        report: serde_json::Value,
    },
}

/// Writes (and for diagnostics reads) the status topic.
#[derive(Debug)]
pub struct StatusStore {
    log: InternalLog,
    partitions: i32,
    /// The last write queued by [`StatusStore::put_all_in_background`]; each such write waits
    /// for the one before it, so they land in the order they were queued.
    background: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl StatusStore {
    /// `topic` with `partitions` partitions (its actual count); Java-named client settings for
    /// the target cluster.
    pub fn new(
        topic: impl Into<String>,
        partitions: i32,
        consumer: Props,
        producer: Props,
    ) -> Self {
        assert!(
            partitions > 0,
            "status topic partition count must be positive"
        );
        StatusStore {
            log: InternalLog::new(topic, consumer, producer),
            partitions,
            background: std::sync::Mutex::new(None),
        }
    }

    pub fn topic(&self) -> &str {
        self.log.topic()
    }

    /// The status-topic partition for a key (Kafka's default partitioner).
    pub fn partition_for(&self, key: &str) -> i32 {
        partition_for_key(key.as_bytes(), self.partitions)
    }

    /// `status-connector-<name>`.
    pub async fn put_connector(&self, name: &str, status: &Status) -> Result<(), StatusStoreError> {
        self.put_all(&[StatusUpdate::Connector {
            name: name.to_string(),
            status: status.clone(),
        }])
        .await
    }

    /// `status-task-<name>-<task>`.
    pub async fn put_task(
        &self,
        name: &str,
        task: i32,
        status: &Status,
    ) -> Result<(), StatusStoreError> {
        self.put_all(&[StatusUpdate::Task {
            connector: name.to_string(),
            task,
            status: status.clone(),
        }])
        .await
    }

    /// `mirrorslice-report-<connector>-<task>`: the slice report as JSON.
    pub async fn put_slice_report(
        &self,
        connector: &str,
        task: i32,
        report: &serde_json::Value,
    ) -> Result<(), StatusStoreError> {
        self.put_all(&[StatusUpdate::SliceReport {
            connector: connector.to_string(),
            task,
            report: report.clone(),
        }])
        .await
    }

    /// Writes several records in one batch and waits until all are delivered.
    pub async fn put_all(&self, updates: &[StatusUpdate]) -> Result<(), StatusStoreError> {
        let mut records = Vec::with_capacity(updates.len());
        for u in updates {
            let (key, value) = match u {
                StatusUpdate::Connector { name, status } => (
                    StatusKey::Connector(name.clone()).to_string(),
                    encode_status(status),
                ),
                StatusUpdate::Task {
                    connector,
                    task,
                    status,
                } => (
                    StatusKey::Task {
                        connector: connector.clone(),
                        task: *task,
                    }
                    .to_string(),
                    encode_status(status),
                ),
                StatusUpdate::SliceReport {
                    connector,
                    task,
                    report,
                } => {
                    let key = slice_report_key(connector, *task);
                    let value =
                        to_jackson_vec(report).map_err(|source| StatusStoreError::Report {
                            topic: self.topic().to_string(),
                            key: key.clone(),
                            source,
                        })?;
                    (key, Some(value))
                }
            };
            records.push((self.partition_for(&key), key.into_bytes(), value));
        }
        self.log.append(records).await?;
        Ok(())
    }

    /// Write `updates` without waiting for them: statuses are for people and tools, not on a
    /// slice's critical path. Writes queued this way land in queue order; a failure is logged
    /// (as Connect's status backing store does). The receiver fires once this write is done,
    /// delivered or not; [`StatusStore::flush_background`] waits for all of them.
    pub fn put_all_in_background(
        self: &Arc<Self>,
        updates: Vec<StatusUpdate>,
    ) -> tokio::sync::oneshot::Receiver<()> {
        let (done, written) = tokio::sync::oneshot::channel();
        let store = self.clone();
        let mut last = self.background.lock().expect("status queue poisoned");
        let previous = last.take();
        *last = Some(tokio::spawn(async move {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            if let Err(e) = store.put_all(&updates).await {
                tracing::warn!(topic = store.topic(), error = %e, "status update failed");
            }
            let _ = done.send(());
        }));
        written
    }

    /// Wait until every write queued with [`StatusStore::put_all_in_background`] is done.
    pub async fn flush_background(&self) {
        let last = self
            .background
            .lock()
            .expect("status queue poisoned")
            .take();
        if let Some(last) = last {
            let _ = last.await;
        }
    }

    /// The latest value of every key in the topic (`None` = tombstone), read from the beginning.
    /// For tests and diagnostics; a slice never needs it.
    pub async fn read_all(
        &self,
        timeout: Duration,
    ) -> Result<BTreeMap<String, Option<Vec<u8>>>, StatusStoreError> {
        let starts: BTreeMap<i32, i64> = (0..self.partitions).map(|p| (p, BEGINNING)).collect();
        let mut latest = BTreeMap::new();
        self.log
            .read_to_end_with(&starts, timeout, |r| {
                if let Some(k) = r.key {
                    latest.insert(
                        String::from_utf8_lossy(k).into_owned(),
                        r.value.map(<[u8]>::to_vec),
                    );
                }
            })
            .await?;
        Ok(latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_keys() {
        assert_eq!(
            slice_report_key("MirrorSourceConnector", 3),
            "mirrorslice-report-MirrorSourceConnector-3"
        );
        // Java's status store discards keys it does not recognise.
        assert_eq!(StatusKey::parse(&slice_report_key("c", 0)), None);
    }

    #[test]
    fn records_are_placed_like_javas_default_partitioner() {
        let s = StatusStore::new("mm2-status.A.internal", 5, Props::new(), Props::new());
        let key = "status-task-MirrorSourceConnector-0";
        let expected = (crate::wire::murmur2::murmur2(key.as_bytes()) & 0x7fff_ffff) % 5;
        assert_eq!(s.partition_for(key), expected);
        let one = StatusStore::new("t", 1, Props::new(), Props::new());
        assert_eq!(one.partition_for(key), 0);
    }
}
