//! MirrorHeartbeatConnector and MirrorHeartbeatTask in slices (mm2-compat §9).
//!
//! **Why heartbeats matter even though nothing in MM2 reads them.** Client tooling
//! (`RemoteClusterUtils.upstreamClusters`, `replicationHops`, §10) derives the replication
//! topology from the *names* of heartbeat topics: `heartbeats` on every target, replicated
//! downstream as `A.heartbeats`, `B.A.heartbeats`, … Monitoring reads the timestamps for lag
//! and liveness. So every herder pair — including pairs that exist only for heartbeats, whose
//! `enabled` is false (§1.3, §13 #1) — creates `heartbeats` on its target, always, and emits
//! into it unless `emit.heartbeats.enabled=false`.
//!
//! **In a slice.** Java's task emits one heartbeat per `emit.heartbeats.interval.seconds`
//! forever. A slice emits one at its start and then one per interval until the source tasks
//! finish (or the deadline nears), so a scheduled flow leaves one heartbeat per slice at least.
//! The single heartbeat task is guarded by a lease like every other task; when another
//! invocation of the flow holds it, that invocation emits and this one does not.
//!
//! Records: topic `heartbeats`, partition 0, key `(source, target)` and value `(v0, now)`
//! (§4.4), record timestamp = the value's timestamp, no headers, never a tombstone (§4.6).

use crate::config::connector::{roles, MirrorHeartbeatConfig};
use crate::config::Props;
use crate::connect::internal_topics::{ensure_compacted_topic, Creation};
use crate::lease::{task_key, HeldLease, LeaseStore, LeaseTiming};
use crate::report::HeartbeatActivity;
use crate::wire::Heartbeat;
use rdkafka::producer::FutureRecord;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The connector name MM2 gives the heartbeat connector (and its lease keys).
pub const CONNECTOR: &str = "MirrorHeartbeatConnector";

/// A record for a single-partition MM2 topic: key, value, record timestamp (epoch ms).
pub type TimestampedRecord = (Vec<u8>, Vec<u8>, i64);

/// Writes `records` to partition 0 of `topic` with their timestamps and waits for every
/// delivery report. `producer` holds Java-named settings. Returns the offsets written.
///
/// Unless the settings say otherwise: `acks=all`, and no idempotence but one request in flight,
/// which keeps the records in order. A retried duplicate is harmless in these compacted topics
/// (readers keep the last record per key), while an idempotent producer's start-up
/// (`InitProducerId`) cost about 500 ms per call on the test broker — per slice and per
/// heartbeat.
///
/// Used for heartbeats and checkpoints, whose record timestamp is part of the format (§4.3,
/// §4.4) — which is why this does not go through the internal-topic log's `append`.
pub async fn send_timestamped(
    role: &str,
    producer: &Props,
    topic: &str,
    records: &[TimestampedRecord],
    timeout: Duration,
) -> Result<Vec<i64>, String> {
    if records.is_empty() {
        return Ok(Vec::new());
    }
    // Same ordered, non-idempotent defaults as the internal topics: a duplicate in a compacted
    // topic is harmless.
    let p = crate::kafka::internal_log::shared_producer(producer, topic)
        .map_err(|e| format!("{role}: {e}"))?;
    let mut pending = Vec::with_capacity(records.len());
    for (i, (key, value, ts)) in records.iter().enumerate() {
        let record: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic)
            .partition(0)
            .key(key.as_slice())
            .payload(value.as_slice())
            .timestamp(*ts);
        match p.send_result(record) {
            Ok(f) => pending.push(f),
            Err((e, _)) => return Err(format!("{topic}: cannot enqueue record #{i}: {e}")),
        }
    }
    let mut offsets = Vec::with_capacity(pending.len());
    let deadline = tokio::time::Instant::now() + timeout;
    for (i, f) in pending.into_iter().enumerate() {
        match tokio::time::timeout_at(deadline, f).await {
            Ok(Ok(Ok(d))) => offsets.push(d.offset),
            Ok(Ok(Err((e, _)))) => return Err(format!("{topic}: record #{i} not delivered: {e}")),
            Ok(Err(_)) => return Err(format!("{topic}: delivery of record #{i} cancelled")),
            Err(_) => {
                return Err(format!(
                    "{topic}: record #{i} not delivered within {timeout:?}"
                ))
            }
        }
    }
    Ok(offsets)
}

/// One heartbeat record of `source -> target` at `now_ms` (§4.4): key, value, timestamp.
pub fn heartbeat_record(source: &str, target: &str, now_ms: i64) -> TimestampedRecord {
    let hb = Heartbeat {
        source_cluster_alias: source.to_string(),
        target_cluster_alias: target.to_string(),
        timestamp: now_ms,
    };
    let key = hb
        .encode_key()
        .expect("cluster aliases are far shorter than 32767 bytes");
    (key, hb.encode_value(), now_ms)
}

/// When the next heartbeat is due: one interval after the previous one, or now when the
/// previous one is unknown.
fn next_due(last: Option<Instant>, interval: Duration) -> Option<Instant> {
    last.map(|t| t + interval)
}

/// Where a slice's heartbeat task gets its leases.
pub struct HeartbeatLeases {
    pub store: Arc<dyn LeaseStore>,
    pub owner: String,
    pub timing: LeaseTiming,
}

/// The heartbeat connector and task for one slice of `flow`.
///
/// Creates `heartbeats` on the target (always), then — if emission is enabled and the task's
/// lease is free — emits one heartbeat at once and one per interval until `stop` is set or
/// `stop_at` passes. `producer` is the Connect worker's producer for the target with the
/// connector's `producer.override.*` applied.
pub async fn run_heartbeats(
    cfg: &MirrorHeartbeatConfig,
    flow: &str,
    producer: &Props,
    leases: &HeartbeatLeases,
    mut stop: tokio::sync::watch::Receiver<bool>,
    stop_at: Instant,
) -> HeartbeatActivity {
    let topic = cfg.heartbeats_topic();
    let mut activity = HeartbeatActivity {
        status: "ran".into(),
        topic: topic.clone(),
        ..Default::default()
    };

    // Connector start: the topic, whatever the other settings (§9).
    let admin = cfg
        .common
        .target_admin_config(roles::HEARTBEATS_TARGET_ADMIN);
    match ensure_compacted_topic(&admin, &topic, 1, cfg.heartbeats_topic_replication_factor).await {
        Ok(Creation::Created) => activity.topic_created = true,
        Ok(Creation::Existed) => {}
        Ok(Creation::Assumed { reason }) => {
            tracing::info!(topic, reason, "heartbeats topic assumed to exist")
        }
        Err(e) => {
            // MM2 logs and carries on; the emission below then fails visibly too.
            activity.errors.push(format!(
                "cluster {}: create {topic}: {e}",
                cfg.common.target_alias
            ));
        }
    }

    let Some(interval) = cfg.emit_heartbeats_interval else {
        activity.status = "disabled".into();
        return activity;
    };

    let key = task_key(flow, CONNECTOR, 0);
    let acquired = HeldLease::acquire(leases.store.clone(), &key, &leases.owner, leases.timing);
    let lease = match acquired.await {
        Ok(Some(lease)) => lease,
        Ok(None) => {
            activity.status = "held elsewhere".into();
            return activity;
        }
        Err(e) => {
            activity.status = format!("failed: {e}");
            return activity;
        }
    };

    let role = cfg.common.client_id("heartbeats-producer", Some(0));
    let mut last: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let due = next_due(last, interval).is_none_or(|t| now >= t);
        if due {
            if !lease.still_owner() {
                activity
                    .errors
                    .push(format!("lease {key} lost; heartbeats stopped"));
                break;
            }
            let now_ms = chrono::Utc::now().timestamp_millis();
            let record =
                heartbeat_record(&cfg.common.source_alias, &cfg.common.target_alias, now_ms);
            // A heartbeat that cannot be written before the stop time is not worth waiting for.
            let timeout = stop_at
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_secs(1), Duration::from_secs(30));
            match send_timestamped(&role, producer, &topic, &[record], timeout).await {
                Ok(_) => {
                    activity.emitted += 1;
                    activity.last_timestamp_ms = Some(now_ms);
                }
                Err(e) => {
                    tracing::warn!(topic, error = %e, "heartbeat not written");
                    activity.errors.push(e);
                }
            }
            last = Some(now);
        }
        // A dropped sender means the slice is gone: stop too.
        let stopped = |stop: &tokio::sync::watch::Receiver<bool>| {
            *stop.borrow() || stop.has_changed().is_err()
        };
        if stopped(&stop) || Instant::now() >= stop_at {
            break;
        }
        // Sleep until the next heartbeat or `stop`, whichever comes first: the slice's end
        // waits for this task, so noticing `stop` late would cost every slice.
        let next = next_due(last, interval).unwrap_or(now);
        let wait = next
            .saturating_duration_since(Instant::now())
            .min(stop_at.saturating_duration_since(Instant::now()));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => {}
        }
    }
    if let Err(e) = lease.release().await {
        tracing::warn!(lease = key, error = %e, "heartbeat lease release failed");
    }
    if activity.emitted == 0 && !activity.errors.is_empty() {
        activity.status = format!("failed: {}", activity.errors[0]);
    }
    activity
}

#[cfg(test)]
mod tests {
    use super::*;

    // §4.5: Heartbeat key (A, B) and value (v0, ts=1700000000000), record timestamp = value's.
    #[test]
    fn heartbeat_record_has_the_spec_bytes_and_its_own_timestamp() {
        let (key, value, ts) = heartbeat_record("A", "B", 1_700_000_000_000);
        assert_eq!(key, vec![0x00, 0x01, 0x41, 0x00, 0x01, 0x42]);
        assert_eq!(
            value,
            vec![0x00, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00]
        );
        assert_eq!(ts, 1_700_000_000_000);
        let decoded = Heartbeat::decode(&key, &value).unwrap();
        assert_eq!(decoded.timestamp, ts);
    }

    #[test]
    fn first_heartbeat_is_due_at_once_then_one_per_interval() {
        let t0 = Instant::now();
        assert_eq!(next_due(None, Duration::from_secs(1)), None);
        assert_eq!(
            next_due(Some(t0), Duration::from_secs(1)),
            Some(t0 + Duration::from_secs(1))
        );
    }
}
