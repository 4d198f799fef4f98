//! Sends offset syncs as records are acknowledged, at MM2's cadence (mm2-compat §7.3–§7.5;
//! `docs/offset-syncs.md` explains the rules and why the cadence matters to translation).
//!
//! MM2's task calls `maybeQueueOffsetSyncs` and then `firePendingOffsetSyncs` for **every**
//! acknowledged record (`commitRecord`), so a sync that falls due is sent at once unless
//! [`MAX_OUTSTANDING_OFFSET_SYNCS`](super::offset_sync_writer::MAX_OUTSTANDING_OFFSET_SYNCS)
//! sends are already in flight; only then is it kept as pending, where a later sync of the same
//! partition replaces it. Firing only once per batch of acknowledgements instead would replace
//! the early syncs of a long backlog before they were ever sent, and the checkpoint task could
//! then translate no consumer group that lags behind the newest sync (issue #16).
//!
//! A sync is only ever built from a record the target acknowledged, so it never describes a
//! record that is not there. Sends are at-least-once and their failures only logged, as in MM2:
//! a missing sync makes translation fall back to an older one, which re-delivers records but
//! never skips any.

use super::offset_sync_writer::OffsetSyncWriter;
use crate::config::Props;
use crate::kafka::report_thread::{create_producer, ReportThread, SharedProducer};
use crate::kafka::{client_config, ClientError, MirrorContext};
use crate::wire::offset_sync::OffsetSync;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{
    BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext, PurgeConfig,
};
use rdkafka::{ClientContext, Message};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The slice's offset-sync producer, shared by its tasks: one client, one connection and one
/// report thread instead of one per task (eight idle producers cost a fifth of a copy's CPU).
/// Each task keeps its own §7.5 bookkeeping and in-flight bound ([`OffsetSyncSender`]), as
/// each of MM2's tasks does with a producer of its own.
pub struct OffsetSyncProducer {
    /// Serves the producer's delivery reports, so the copy loop never polls it (a poll reads
    /// the clock twice: ~4 % of the copy thread's CPU when it polled per due sync).
    _reports: ReportThread,
    producer: SharedProducer<SyncContext>,
    topic: String,
}

impl OffsetSyncProducer {
    /// A producer for `topic` with `props` (Java names; `acks=all` and `linger.ms=5` unless
    /// set). Not `linger.ms=0`: each sync would wake the producer's broker thread on its own
    /// (a sync per 100 records per partition: thousands of wakeups and context switches a
    /// second at full speed, ~40 % of a copy's switches with eight tasks). 5 ms is the Java
    /// producer's default since Kafka 4.0 (KIP-1030) and delays nothing a checkpoint needs.
    pub fn open(role: &str, props: &Props, topic: &str) -> Result<Self, ClientError> {
        let mut props = props.clone();
        for (k, v) in [("acks", "all"), ("linger.ms", "5")] {
            props.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        let config = client_config(role, &props)?;
        let (reports, producer) = create_producer(role, &config, SyncContext)?;
        Ok(OffsetSyncProducer {
            _reports: reports,
            producer,
            topic: topic.to_string(),
        })
    }
}

/// A task's offset syncs: the §7.5 bookkeeping that decides what it sends, on the slice's
/// [`OffsetSyncProducer`].
pub struct OffsetSyncSender {
    producer: Arc<OffsetSyncProducer>,
    writer: OffsetSyncWriter,
    /// This task's delivery reports, counted by the producer's report thread.
    deliveries: Arc<Deliveries>,
    sent: u64,
}

/// A task's delivery reports, shared with the report thread through each sync's opaque.
struct Deliveries {
    /// Reported and not yet credited to the writer's in-flight count.
    completed: AtomicUsize,
    /// Offset after the last delivered sync (partition 0), -1 before any.
    end: AtomicI64,
}

impl OffsetSyncSender {
    /// A task's sender on the slice's `producer`.
    pub fn new(producer: Arc<OffsetSyncProducer>, offset_lag_max: i64) -> Self {
        OffsetSyncSender {
            producer,
            writer: OffsetSyncWriter::new(offset_lag_max),
            deliveries: Arc::new(Deliveries {
                completed: AtomicUsize::new(0),
                end: AtomicI64::new(-1),
            }),
            sent: 0,
        }
    }

    /// The target acknowledged `upstream` at `downstream` (MM2's `commitRecord`): apply the
    /// §7.5 rules, and send what fell due now if fewer than the bound are in flight.
    pub fn record_acknowledged(
        &mut self,
        topic: &str,
        partition: i32,
        upstream: i64,
        downstream: i64,
    ) {
        if self
            .writer
            .record_written(topic, partition, upstream, downstream)
        {
            self.fire();
        }
    }

    /// Send pending syncs while fewer than the bound are in flight (`firePendingOffsetSyncs`).
    /// Cheap when nothing is pending, so the copy loop calls it every turn: syncs held back by
    /// the bound leave as soon as earlier sends complete.
    pub fn fire(&mut self) {
        if self.writer.pending().is_empty() {
            return;
        }
        self.credit_completions();
        let due = self.writer.take_pending();
        self.send(due);
    }

    /// While a due sync waits for room in flight, take delivery reports and fire, until it
    /// is sent or `deadline` passes. For the end of a slice: the copy loop is over, so waiting
    /// costs no throughput, and the last records copied get syncs at MM2's full cadence
    /// instead of one per partition for the whole final burst of acknowledgements.
    pub fn wait_for_room(&mut self, deadline: Instant) {
        while !self.writer.pending().is_empty() && Instant::now() < deadline {
            std::thread::sleep(REPORT_WAIT);
            self.fire();
        }
    }

    /// After a successful offset commit (MM2's `commit()`): with `promote`, the latest pair of
    /// every partition becomes due (KAFKA-15906); then fire.
    pub fn committed(&mut self, promote: bool) {
        if promote {
            self.writer.promote_delayed();
        }
        self.fire();
    }

    /// End of the slice: send every pending sync whatever the bound (the slice waits for all of
    /// them anyway) and wait for their delivery until `deadline`. The producer is shared, so
    /// this waits for the task's own syncs instead of flushing it.
    pub fn finish(&mut self, deadline: Instant) {
        self.send_all_pending();
        loop {
            self.credit_completions();
            if self.writer.in_flight() == 0 {
                return;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(REPORT_WAIT);
        }
        // Not delivered in time: never delivered later (after the slice, or after the lease
        // passed on). A missing sync only makes a checkpoint less precise. The slice's other
        // tasks are at the same deadline.
        tracing::warn!("offset syncs not all flushed; dropping the rest");
        self.purge();
    }

    /// Drop every sync not yet delivered: the lease was lost, or the slice is out of time.
    /// The producer is the slice's: its other tasks lose their undelivered syncs too, which
    /// only makes their checkpoints less precise.
    pub fn purge(&mut self) {
        self.writer.take_all_pending();
        (self.producer.producer).purge(PurgeConfig::default().queue().inflight());
    }

    /// Send every pending sync now, whatever the bound: before the final commit, so the syncs
    /// already due are not replaced by the commit's promotion (MM2 would have fired them as
    /// their records were acknowledged).
    pub fn send_all_pending(&mut self) {
        let all = self.writer.take_all_pending();
        self.send(all);
    }

    /// Syncs handed to the producer so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Offset after the last delivered sync on partition 0: what a later read must reach.
    pub fn end_offset(&self) -> Option<i64> {
        let end = self.deliveries.end.load(Ordering::SeqCst);
        (end >= 0).then_some(end)
    }

    /// Credit the delivery reports served since to the in-flight bound.
    fn credit_completions(&mut self) {
        for _ in 0..self.deliveries.completed.swap(0, Ordering::SeqCst) {
            self.writer.send_completed();
        }
    }

    fn send(&mut self, syncs: Vec<OffsetSync>) {
        for sync in syncs {
            let producer = &self.producer;
            if send_one(&producer.producer, &producer.topic, &sync, &self.deliveries) {
                self.sent += 1;
            } else {
                // Never handed to the producer: no delivery report will free its place.
                self.writer.send_completed();
            }
        }
    }
}

/// Produce one sync to partition 0; false if it could not be handed to the producer.
fn send_one(
    producer: &BaseProducer<SyncContext>,
    topic: &str,
    sync: &OffsetSync,
    deliveries: &Arc<Deliveries>,
) -> bool {
    let key = match sync.encode_key() {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!(error = %e, "offset sync not encodable");
            return false;
        }
    };
    let value = sync.encode_value();
    let mut record = BaseRecord::with_opaque_to(topic, deliveries.clone())
        .partition(0)
        .key(key.as_slice())
        .payload(value.as_slice());
    loop {
        match producer.send(record) {
            Ok(()) => return true,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                std::thread::sleep(REPORT_WAIT);
            }
            Err((e, _)) => {
                tracing::warn!(error = %e, "offset sync not sent");
                return false;
            }
        }
    }
}

/// How long to wait for delivery reports (served by the report thread) before looking again.
const REPORT_WAIT: Duration = Duration::from_millis(1);

struct SyncContext;

impl ClientContext for SyncContext {
    // MSK IAM: librdkafka's own token requests, answered when the client polls (every client
    // also gets tokens on a timer, see msk_iam).
    crate::kafka::msk_iam::answer_token_requests!();
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        MirrorContext.log(level, fac, message)
    }
    fn error(&self, error: KafkaError, reason: &str) {
        MirrorContext.error(error, reason)
    }
}

impl ProducerContext for SyncContext {
    /// Boxed per sync by rdkafka: a few per thousand records.
    type DeliveryOpaque = Arc<Deliveries>;

    fn delivery(&self, result: &DeliveryResult<'_>, task: Arc<Deliveries>) {
        match result {
            Ok(m) => {
                task.end.fetch_max(m.offset() + 1, Ordering::SeqCst);
            }
            // MM2 only logs failed offset syncs (§7.5): translation then errs toward re-delivery.
            Err((e, _)) => tracing::warn!(error = %e, "offset sync not delivered"),
        }
        task.completed.fetch_add(1, Ordering::SeqCst);
    }
}
