//! MirrorSourceTask for one slice (mm2-compat §7): copy records, track acknowledgements, commit
//! Connect offsets, emit offset syncs — and stop at the deadline or as soon as caught up.
//!
//! # The life of a slice's task
//!
//! 1. **Position.** Each assigned source partition resumes at *stored + 1* (the stored Connect
//!    offset is the last replicated record), or, with no stored offset, where MM2's
//!    `auto.offset.reset` says. Before any record is copied the partition's log start is
//!    checked: if the next offset we need was deleted by retention, that is a **gap** (below).
//! 2. **Copy.** Records are read from one queue per partition (so end-of-partition and error
//!    events name their topic) and produced byte for byte to the remote topic's *same*
//!    partition: key, value (null kept), headers in order with duplicates, timestamp.
//!    librdkafka copies the bytes into its own batch, so nothing is buffered beyond what the
//!    producer needs.
//! 3. **Acknowledge.** Every delivery report is matched to its source record. A partition's
//!    *committable* offset only advances over a contiguous run of acknowledged records, so a
//!    failed or outstanding record is never committed past (§7.6). Acknowledged records feed
//!    the offset-sync rules (§7.5).
//! 4. **Commit.** Every `offset.flush.interval.ms` and at the end, committable offsets go to the
//!    caller's [`TaskHooks::commit`] (the Connect offsets topic) and delayed offset syncs are
//!    promoted and sent (KAFKA-15906). Before committing, [`TaskHooks::still_owner`] must
//!    confirm the lease: a task that lost it stops and commits nothing more.
//! 5. **Stop.** At `stop_at`, or when every partition has reported end-of-partition at its
//!    position. "Caught up" comes from the consumer's own end-of-partition event, never from
//!    watermark arithmetic (some brokers report a high watermark that trails the log end).
//!
//! # Gaps are loud
//! If the next offset is below the log start (retention deleted records we never copied) or
//! beyond the log end (topic deleted and recreated, or truncated), the exact range is recorded.
//! With [`GapPolicy::Fail`] (default) the task stops and the slice fails; with
//! [`GapPolicy::Skip`] the partition jumps to the log start and the gap is still reported.

use super::offset_sync_sender::OffsetSyncSender;
use crate::config::Props;
use crate::kafka::{
    build_error, client_config, close_consumer, listed_offsets, ClientError, MirrorContext,
};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Header, Headers, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Message, Offset, Timestamp, TopicPartitionList};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A source topic-partition.
pub type TopicPartition = (String, i32);

/// What to do when the next offset needed no longer exists in the source log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GapPolicy {
    /// Stop the task, mark it FAILED and fail the slice (default).
    Fail,
    /// Continue from the log start; the gap is still reported.
    Skip,
}

/// Where the task's partitions start when no offset is stored (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetPolicy {
    Earliest,
    Latest,
    /// `none`: a partition without a stored offset is an error.
    None,
}

impl ResetPolicy {
    /// From the replication consumer's Java `auto.offset.reset` (MM2 forces `earliest` if unset).
    pub fn from_consumer_props(props: &Props) -> Result<Self, TaskError> {
        match props
            .get("auto.offset.reset")
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("earliest") => Ok(ResetPolicy::Earliest),
            Some("latest") => Ok(ResetPolicy::Latest),
            Some("none") => Ok(ResetPolicy::None),
            Some(other) => Err(TaskError::Config(format!(
                "consumer auto.offset.reset={other} is not one of earliest, latest, none"
            ))),
        }
    }
}

/// Everything one task needs for one slice.
#[derive(Debug, Clone)]
pub struct SourceTaskSpec {
    /// For logs and errors, e.g. `A->B|MirrorSourceConnector-0`.
    pub name: String,
    /// Source partitions this task owns, in assignment order.
    pub partitions: Vec<TopicPartition>,
    /// Source topic → remote topic on the target.
    pub remote_topics: BTreeMap<String, String>,
    /// Stored Connect offsets: the last replicated upstream offset per partition.
    pub stored_offsets: BTreeMap<TopicPartition, i64>,
    /// Java-named settings of the replication consumer (source cluster).
    pub consumer: Props,
    /// Java-named settings of the data producer (target cluster).
    pub producer: Props,
    /// Offset syncs: producer settings and topic, when `emit.offset-syncs.enabled`.
    pub offset_syncs: Option<(Props, String)>,
    pub offset_lag_max: i64,
    pub flush_interval: Duration,
    /// Stop consuming at this instant; flushing and committing happen after it.
    pub stop_at: Instant,
    /// Hard bound for the final flush of the producers.
    pub flush_deadline: Instant,
    pub on_gap: GapPolicy,
    /// How long a partition may stay silent (no record, no end-of-partition) before its position
    /// is checked against the log end: brokers that do not answer OFFSET_OUT_OF_RANGE for a
    /// fetch beyond the end stay silent instead.
    pub silence_check_after: Duration,
    /// Promote delayed offset syncs at the final commit of the slice too (default), so the last
    /// replicated record of every partition has a sync and groups at the end of the log
    /// translate exactly. `false` promotes only every `flush_interval`, as an always-on MM2
    /// does (used to measure the difference).
    pub sync_every_commit: bool,
    /// The task's share of the slice's memory budget.
    pub memory: TaskMemory,
}

/// How much of a slice's memory one task's clients may use for records in flight.
///
/// Prefetched and queued records are most of a slice's memory, and a slice's memory is what an
/// invocation is sized and billed by — so the budget belongs to the process, not the task: the
/// tasks a slice runs side by side split it ([`TaskMemory::share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskMemory {
    /// Consumer prefetch, KiB, split again across the task's partitions.
    pub prefetch_kb: usize,
    /// Producer queue (`queue.buffering.max.kbytes`), KiB.
    pub producer_queue_kb: usize,
}

impl TaskMemory {
    /// One task's share when `tasks` run in one slice.
    pub fn share(tasks: usize) -> Self {
        let tasks = tasks.max(1);
        TaskMemory {
            prefetch_kb: SLICE_PREFETCH_BUDGET_KB / tasks,
            producer_queue_kb: (SLICE_PRODUCER_QUEUE_KB / tasks).max(PRODUCER_QUEUE_MIN_KB),
        }
    }
}

impl Default for TaskMemory {
    /// The whole budget: a task running alone.
    fn default() -> Self {
        TaskMemory::share(1)
    }
}

/// The caller's side of a task: durable commits and lease ownership.
pub trait TaskHooks: Send {
    /// Persist committable offsets (the last replicated upstream offset per partition).
    fn commit(&mut self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<(), TaskError>;
    /// False once this invocation no longer owns the task's lease.
    fn still_owner(&mut self) -> bool;
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error(transparent)]
    Client(#[from] Box<ClientError>),
    #[error("{0}")]
    Config(String),
    #[error("{task}: {what}: {source}")]
    Kafka {
        task: String,
        what: String,
        #[source]
        source: Box<KafkaError>,
    },
    #[error("{task}: delivery to {topic}-{partition} failed for source offset {offset}: {reason}")]
    Delivery {
        task: String,
        topic: String,
        partition: i32,
        offset: i64,
        reason: String,
    },
    #[error("{0}")]
    Gap(String),
    #[error("{task}: lease lost; stopped without committing further")]
    LeaseLost { task: String },
    #[error("{task}: commit failed: {message}")]
    Commit { task: String, message: String },
}

/// A range of upstream offsets that can no longer be replicated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    pub topic: String,
    pub partition: i32,
    /// First missing upstream offset (inclusive).
    pub from_offset: i64,
    /// End of the missing range (exclusive).
    pub to_offset: i64,
    /// `below_log_start` (retention) or `beyond_log_end` (recreated or truncated topic).
    pub kind: &'static str,
    /// Whether the task skipped over it (`mirrorslice.on.gap=skip`).
    pub skipped: bool,
    /// Where the task continued after skipping: the log start.
    pub resumed_at: Option<i64>,
}

impl Gap {
    pub fn describe(&self) -> String {
        match self.kind {
            "below_log_start" => format!(
                "{}-{}: upstream offsets {}..{} were deleted from the source before they were \
                 replicated ({} records lost)",
                self.topic,
                self.partition,
                self.from_offset,
                self.to_offset,
                self.to_offset - self.from_offset
            ),
            _ => format!(
                "{}-{}: next offset {} is beyond the source log end {}: the topic was deleted and \
                 recreated, or truncated",
                self.topic, self.partition, self.to_offset, self.from_offset
            ),
        }
    }
}

/// Per-partition figures for the slice report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PartitionReport {
    pub topic: String,
    pub partition: i32,
    pub remote_topic: String,
    /// First upstream offset this slice read (the resume position).
    pub start_offset: Option<i64>,
    /// Next upstream offset to replicate after this slice (committed position + 1).
    pub end_offset: Option<i64>,
    pub records: u64,
    pub bytes: u64,
    /// Records known to remain after `end_offset` (0 when caught up).
    pub lag: Option<i64>,
    pub caught_up: bool,
    pub newest_record_timestamp_ms: Option<i64>,
    pub oldest_record_timestamp_ms: Option<i64>,
}

/// What one task did in one slice.
#[derive(Debug, Clone, Serialize)]
pub struct TaskOutcome {
    pub partitions: Vec<PartitionReport>,
    pub records: u64,
    pub bytes: u64,
    pub caught_up: bool,
    pub commits: u32,
    pub offset_syncs_sent: u64,
    /// Offset after the last offset sync delivered (partition 0 of the offset-syncs topic): a
    /// checkpoint read later in the slice must read at least that far.
    pub offset_syncs_end: Option<i64>,
    pub gaps: Vec<Gap>,
    /// Set when the task failed; committed offsets are still exact.
    pub error: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Delivery tracking
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckState {
    Pending,
    Acked(i64),
    Failed,
}

/// A record sent to the target and not yet retired.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    upstream: i64,
    state: AckState,
    size: u64,
    timestamp: Option<i64>,
}

/// In-order acknowledgement tracking for one partition.
#[derive(Debug, Default)]
struct PartitionAcks {
    /// Sent, not yet retired records, in send order.
    in_flight: VecDeque<InFlight>,
    /// Last upstream offset whose record and all earlier ones were acknowledged.
    committable: Option<i64>,
    failure: Option<(i64, String)>,
    /// Records and bytes retired as acknowledged: what the slice actually replicated.
    acked_records: u64,
    acked_bytes: u64,
    newest_timestamp: Option<i64>,
    oldest_timestamp: Option<i64>,
}

/// Shared between the copy loop and the producer's delivery callback.
#[derive(Debug, Default)]
struct AckTracker {
    partitions: Vec<PartitionAcks>,
    /// (partition index, upstream, downstream) acknowledged in order, for offset syncs.
    acknowledged: Vec<(usize, i64, i64)>,
    outstanding: usize,
}

impl AckTracker {
    fn sent(&mut self, idx: usize, upstream: i64, size: u64, timestamp: Option<i64>) {
        self.partitions[idx].in_flight.push_back(InFlight {
            upstream,
            state: AckState::Pending,
            size,
            timestamp,
        });
        self.outstanding += 1;
    }

    /// A record was purged unsent: it stays pending (never committed past), but no longer
    /// counts as outstanding.
    fn purged(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    fn completed(&mut self, idx: usize, upstream: i64, result: Result<i64, String>) {
        self.outstanding = self.outstanding.saturating_sub(1);
        let p = &mut self.partitions[idx];
        // Reports usually arrive in send order, so the entry is at or near the front.
        if let Some(entry) = p.in_flight.iter_mut().find(|r| r.upstream == upstream) {
            entry.state = match &result {
                Ok(down) => AckState::Acked(*down),
                Err(_) => AckState::Failed,
            };
        }
        if let Err(reason) = result {
            if p.failure.is_none() {
                p.failure = Some((upstream, reason));
            }
        }
        while let Some(InFlight {
            upstream: up,
            state: AckState::Acked(down),
            size,
            timestamp,
        }) = p.in_flight.front().copied()
        {
            p.in_flight.pop_front();
            p.committable = Some(up);
            p.acked_records += 1;
            p.acked_bytes += size;
            if let Some(t) = timestamp {
                p.newest_timestamp = Some(p.newest_timestamp.map_or(t, |n| n.max(t)));
                p.oldest_timestamp = Some(p.oldest_timestamp.map_or(t, |o| o.min(t)));
            }
            self.acknowledged.push((idx, up, down));
        }
    }
}

struct CopyContext {
    tracker: Arc<Mutex<AckTracker>>,
}

impl ClientContext for CopyContext {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        MirrorContext.log(level, fac, message)
    }
    fn error(&self, error: KafkaError, reason: &str) {
        MirrorContext.error(error, reason)
    }
}

/// Delivery opaque: which partition (by index) and which upstream offset.
type SentRecord = Box<(usize, i64)>;

impl ProducerContext for CopyContext {
    type DeliveryOpaque = SentRecord;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: SentRecord) {
        let (idx, upstream) = *opaque;
        let outcome = match result {
            Ok(msg) => Ok(msg.offset()),
            Err((
                KafkaError::MessageProduction(
                    RDKafkaErrorCode::PurgeQueue | RDKafkaErrorCode::PurgeInflight,
                ),
                _,
            )) => {
                // Purged at the slice's end: not delivered, and not a failure either. The
                // record stays unacknowledged, so the committed offset stops before it and the
                // next slice copies it.
                self.tracker.lock().expect("ack tracker poisoned").purged();
                return;
            }
            Err((e, _)) => Err(e.to_string()),
        };
        self.tracker
            .lock()
            .expect("ack tracker poisoned")
            .completed(idx, upstream, outcome);
    }
}

// ---------------------------------------------------------------------------------------------
// The copy loop
// ---------------------------------------------------------------------------------------------

struct PartitionRun {
    tp: TopicPartition,
    remote: String,
    /// Next upstream offset to read (known once positioned or a record arrived).
    next: Option<i64>,
    report: PartitionReport,
    /// End-of-partition seen at the current position (cleared by a new record).
    at_end: bool,
    /// When the partition was (re)positioned without a record or end event since.
    silent_since: Option<Instant>,
    /// Since when end-of-partition has stood short of the listed end (see `confirm_at_end`).
    short_of_listed_since: Option<Instant>,
    done: bool,
}

/// Settings we choose unless the user set them: bounded memory, ordered idempotent delivery.
fn with_defaults(mut props: Props, defaults: &[(&str, &str)]) -> Props {
    for (k, v) in defaults {
        props
            .entry((*k).to_string())
            .or_insert_with(|| (*v).to_string());
    }
    props
}

/// Consumer defaults: end-of-partition events drive "caught up"; `auto.offset.reset=error`
/// because we position every partition explicitly — a silent reset would hide a gap.
const CONSUMER_FORCED: &[(&str, &str)] = &[
    ("enable.partition.eof", "true"),
    ("enable.auto.commit", "false"),
    ("enable.auto.offset.store", "false"),
];
const CONSUMER_DEFAULTS: &[(&str, &str)] = &[
    // An empty fetch at the log end is held by the broker this long: it bounds how soon a
    // caught-up slice notices it is done (an idle slice waits on it once). Not lower: while
    // some partitions still stream, the others' broker is polled this often (at 2 ms the test
    // brokers fell behind serving acknowledged records).
    ("fetch.wait.max.ms", "10"),
    // With small prefetch queues (below), librdkafka's default 1 s back-off after a full queue
    // would stall the copy; retry fetching quickly instead.
    ("fetch.queue.backoff.ms", "10"),
];

/// Prefetch budget of a slice's consumers, in KiB, split across its tasks and then across each
/// task's partitions: with one queue per partition librdkafka applies
/// `queued.max.messages.kbytes` to *each* partition, so a fixed per-partition value would grow
/// memory with the partition count. Prefetched records are most of a slice's memory
/// (librdkafka keeps each fetch response whole until its last record is forwarded, and
/// overshoots the limit by a fetch): measured on 8 partitions, 2 MiB (256 KiB each) copied as
/// fast as 16 MiB with 40 MiB less peak RSS. The floor keeps a partition's queue useful on
/// tasks with many partitions. `<source>.consumer.rdkafka.queued.max.messages.kbytes`
/// overrides (e.g. for a high-latency link).
const SLICE_PREFETCH_BUDGET_KB: usize = 2 * 1024;
const CONSUMER_PREFETCH_MIN_KB: usize = 64;
/// Records waiting for delivery (librdkafka's copies), for all of a slice's producers. 4 MiB
/// keeps the broker busy at loopback speed for one task; 2 MiB measured 10 % slower, 8 MiB
/// only used 10 MiB more memory. A task's producer gets at least the floor.
const SLICE_PRODUCER_QUEUE_KB: usize = 4 * 1024;
const PRODUCER_QUEUE_MIN_KB: usize = 512;
/// Producer defaults, used unless the user set the key (`<target>.producer.*`).
const PRODUCER_DEFAULTS: &[(&str, &str)] = &[
    // Connect's defaults for a source task's producer (mm2-compat §2.4): order per partition
    // from a single request in flight. Measured here, an idempotent producer was slower (its
    // broker threads spin) and waited ~0.5 s for a producer id before the first record.
    ("acks", "all"),
    ("enable.idempotence", "false"),
    ("max.in.flight.requests.per.connection", "1"),
    ("linger.ms", "5"),
];

/// The data producer's settings: the user's, then [`PRODUCER_DEFAULTS`], then the task's share
/// of the queue budget unless the user sized the queue (`buffer.memory` or librdkafka's key).
fn producer_props(spec: &SourceTaskSpec) -> Props {
    let mut props = with_defaults(spec.producer.clone(), PRODUCER_DEFAULTS);
    let sized = [
        "buffer.memory",
        "queue.buffering.max.kbytes",
        "rdkafka.queue.buffering.max.kbytes",
    ]
    .iter()
    .any(|k| props.contains_key(*k));
    if !sized {
        props.insert(
            "queue.buffering.max.kbytes".into(),
            spec.memory.producer_queue_kb.to_string(),
        );
    }
    props
}

/// Run one task for one slice. Blocking: call it from a blocking thread.
pub fn run_source_task(spec: &SourceTaskSpec, hooks: &mut dyn TaskHooks) -> TaskOutcome {
    let mut outcome = TaskOutcome {
        partitions: Vec::new(),
        records: 0,
        bytes: 0,
        caught_up: false,
        commits: 0,
        offset_syncs_sent: 0,
        offset_syncs_end: None,
        gaps: Vec::new(),
        error: None,
    };
    // Created by `copy` beside the other clients; read here so every way out reports it.
    let mut syncs: Option<OffsetSyncSender> = None;
    if let Err(e) = copy(spec, hooks, &mut syncs, &mut outcome) {
        outcome.error = Some(e.to_string());
    }
    if let Some(s) = &syncs {
        outcome.offset_syncs_sent = s.sent();
        outcome.offset_syncs_end = s.end_offset();
    }
    outcome.records = outcome.partitions.iter().map(|p| p.records).sum();
    outcome.bytes = outcome.partitions.iter().map(|p| p.bytes).sum();
    outcome.caught_up = outcome.error.is_none()
        && !outcome.partitions.is_empty()
        && outcome.partitions.iter().all(|p| p.caught_up)
        || (outcome.error.is_none() && spec.partitions.is_empty());
    outcome
}

fn kafka_err(task: &str, what: impl Into<String>) -> impl FnOnce(KafkaError) -> TaskError + '_ {
    let what = what.into();
    move |source| TaskError::Kafka {
        task: task.to_string(),
        what,
        source: Box::new(source),
    }
}

fn copy(
    spec: &SourceTaskSpec,
    hooks: &mut dyn TaskHooks,
    syncs: &mut Option<OffsetSyncSender>,
    outcome: &mut TaskOutcome,
) -> Result<(), TaskError> {
    let task = spec.name.as_str();
    let reset = ResetPolicy::from_consumer_props(&spec.consumer)?;

    let mut runs: Vec<PartitionRun> = spec
        .partitions
        .iter()
        .map(|tp| {
            let remote = spec
                .remote_topics
                .get(&tp.0)
                .cloned()
                .unwrap_or_else(|| tp.0.clone());
            PartitionRun {
                tp: tp.clone(),
                remote: remote.clone(),
                next: None,
                report: PartitionReport {
                    topic: tp.0.clone(),
                    partition: tp.1,
                    remote_topic: remote,
                    ..Default::default()
                },
                at_end: false,
                silent_since: None,
                short_of_listed_since: None,
                done: false,
            }
        })
        .collect();
    if runs.is_empty() {
        return Ok(());
    }

    // --- clients -------------------------------------------------------------------------
    let mut consumer_props = with_defaults(spec.consumer.clone(), CONSUMER_DEFAULTS);
    let per_partition_kb =
        (spec.memory.prefetch_kb / runs.len().max(1)).max(CONSUMER_PREFETCH_MIN_KB);
    if !consumer_props.contains_key("queued.max.messages.kbytes") {
        consumer_props
            .entry("rdkafka.queued.max.messages.kbytes".into())
            .or_insert_with(|| per_partition_kb.to_string());
    }
    for (k, v) in CONSUMER_FORCED {
        consumer_props.insert((*k).to_string(), (*v).to_string());
    }
    // We position partitions ourselves; librdkafka must never reset silently.
    consumer_props.insert("auto.offset.reset".into(), "error".into());
    // librdkafka refuses assign() without a group id. Nothing is ever committed to the source
    // (§7.1), so the group never materialises there.
    consumer_props
        .entry("group.id".into())
        .or_insert_with(|| "mirrorslice-replication".into());
    let consumer_role = format!("{task}|replication-consumer");
    let consumer: Arc<BaseConsumer<MirrorContext>> = Arc::new(
        client_config(&consumer_role, &consumer_props)
            .map_err(Box::new)?
            .create_with_context(MirrorContext)
            .map_err(|e| Box::new(build_error(&consumer_role, e)))?,
    );

    let tracker = Arc::new(Mutex::new(AckTracker {
        partitions: (0..runs.len()).map(|_| PartitionAcks::default()).collect(),
        ..Default::default()
    }));
    let producer_role = format!("{task}|replication-producer");
    let producer: BaseProducer<CopyContext> = client_config(&producer_role, &producer_props(spec))
        .map_err(Box::new)?
        .create_with_context(CopyContext {
            tracker: tracker.clone(),
        })
        .map_err(|e| Box::new(build_error(&producer_role, e)))?;

    if let Some((props, topic)) = &spec.offset_syncs {
        let role = format!("{task}|offset-syncs-producer");
        *syncs = Some(
            OffsetSyncSender::new(&role, props, topic, spec.offset_lag_max).map_err(Box::new)?,
        );
    }

    // --- positioning and the log-start gap check ----------------------------------------
    let watermark_timeout = Duration::from_secs(10);
    // The log starts of every partition, in one ListOffsets request: the gap check, and where
    // `earliest` starts. (Log ends are listed when the slice believes it is caught up, not now:
    // some brokers list records acknowledged a moment ago only a moment later.)
    let all: Vec<TopicPartition> = runs.iter().map(|r| r.tp.clone()).collect();
    let log_starts = listed_offsets(&consumer, &all, Offset::Beginning, watermark_timeout)
        .map_err(kafka_err(task, "list log start offsets"))?;
    let mut assignment = TopicPartitionList::new();
    for run in runs.iter_mut() {
        let (topic, partition) = (&run.tp.0, run.tp.1);
        let offset = match spec.stored_offsets.get(&run.tp) {
            Some(stored) if *stored >= 0 => {
                let next = stored + 1;
                let low = *log_starts.get(&run.tp).ok_or_else(|| {
                    TaskError::Config(format!(
                        "{task}: the broker listed no log start for {topic}-{partition}"
                    ))
                })?;
                if next < low {
                    let gap = Gap {
                        topic: topic.clone(),
                        partition,
                        from_offset: next,
                        to_offset: low,
                        kind: "below_log_start",
                        skipped: spec.on_gap == GapPolicy::Skip,
                        resumed_at: (spec.on_gap == GapPolicy::Skip).then_some(low),
                    };
                    tracing::error!(task, gap = %gap.describe(), "replication gap");
                    outcome.gaps.push(gap.clone());
                    if spec.on_gap == GapPolicy::Fail {
                        outcome.partitions = runs.iter().map(|r| r.report.clone()).collect();
                        return Err(TaskError::Gap(format!("{task}: {}", gap.describe())));
                    }
                    run.next = Some(low);
                    Offset::Offset(low)
                } else {
                    run.next = Some(next);
                    Offset::Offset(next)
                }
            }
            _ => match reset {
                // The listed log start, not librdkafka's logical BEGINNING: resolving that on a
                // new consumer waits a fixed 500 ms retry before the leader is known.
                ResetPolicy::Earliest => match log_starts.get(&run.tp) {
                    Some(&low) => {
                        run.next = Some(low);
                        Offset::Offset(low)
                    }
                    None => Offset::Beginning,
                },
                ResetPolicy::Latest => Offset::End,
                ResetPolicy::None => {
                    return Err(TaskError::Config(format!(
                        "{task}: {topic}-{partition} has no stored offset and the consumer's \
                         auto.offset.reset is none"
                    )))
                }
            },
        };
        run.report.start_offset = run.next;
        run.silent_since = Some(Instant::now());
        assignment
            .add_partition_offset(topic, partition, offset)
            .map_err(kafka_err(task, "build assignment"))?;
    }
    // One queue per partition: events then name their topic-partition. A non-empty callback
    // wakes the loop when any queue gets data, so an idle loop does not spin. Split *before*
    // assign: a record or end-of-partition fetched in between would land in the consumer's
    // main queue instead (librdkafka keeps an application's forwarding across assign).
    let wake = Arc::new((Mutex::new(false), Condvar::new()));
    let mut queues = Vec::with_capacity(runs.len());
    for run in &runs {
        let mut q = consumer
            .split_partition_queue(&run.tp.0, run.tp.1)
            .ok_or_else(|| {
                TaskError::Config(format!(
                    "{task}: cannot open a queue for {}-{}",
                    run.tp.0, run.tp.1
                ))
            })?;
        let wake = wake.clone();
        q.set_nonempty_callback(move || {
            let (lock, cv) = &*wake;
            *lock.lock().expect("wake lock") = true;
            cv.notify_one();
        });
        queues.push(q);
    }

    consumer
        .assign(&assignment)
        .map_err(kafka_err(task, "assign partitions"))?;

    // --- copy ----------------------------------------------------------------------------
    let mut last_commit = Instant::now();
    let mut committed: BTreeMap<TopicPartition, i64> = BTreeMap::new();
    let mut result: Result<(), TaskError> = Ok(());
    const BURST: usize = 512;

    'copy: loop {
        if Instant::now() >= spec.stop_at {
            break;
        }
        if runs.iter().all(|r| r.done || r.at_end)
            && { true }
            && confirm_at_end(&consumer, &mut runs)
        {
            break;
        }
        // Drive the consumer's main queue (errors, statistics) and the producer's callbacks.
        match consumer.poll(Duration::ZERO) {
            Some(Err(e)) => tracing::warn!(task, error = %e, "consumer error"),
            Some(Ok(m)) => {
                // Cannot happen with the queues split before assign; if it did, copying on
                // past this record would commit over it.
                result = Err(TaskError::Config(format!(
                    "{task}: record {}-{}@{} arrived outside its partition queue",
                    m.topic(),
                    m.partition(),
                    m.offset()
                )));
                break;
            }
            None => {}
        }
        producer.poll(Duration::ZERO);

        let mut progressed = false;
        for (idx, queue) in queues.iter().enumerate() {
            if runs[idx].done {
                continue;
            }
            for _ in 0..BURST {
                let Some(event) = queue.poll(Duration::ZERO) else {
                    break;
                };
                progressed = true;
                match event {
                    Ok(msg) => {
                        if let Err(e) = forward(&producer, &mut runs[idx], idx, &msg, &tracker) {
                            result = Err(TaskError::Kafka {
                                task: task.to_string(),
                                what: format!("produce to {}", runs[idx].remote),
                                source: Box::new(e),
                            });
                            break 'copy;
                        }
                    }
                    Err(KafkaError::PartitionEOF(_)) => {
                        let run = &mut runs[idx];
                        run.at_end = true;
                        run.silent_since = None;
                        if run.next.is_none() {
                            // Positioned by reset policy on an empty log: learn the position.
                            run.next = position_of(&consumer, &run.tp);
                            run.report.start_offset = run.next;
                        }
                        break;
                    }
                    Err(KafkaError::MessageConsumption(RDKafkaErrorCode::OffsetOutOfRange)) => {
                        match out_of_range_gap(&consumer, spec, &runs[idx], watermark_timeout) {
                            Ok(gap) => {
                                tracing::error!(task, gap = %gap.describe(), "replication gap");
                                outcome.gaps.push(gap.clone());
                                if spec.on_gap == GapPolicy::Fail {
                                    runs[idx].done = true;
                                    result =
                                        Err(TaskError::Gap(format!("{task}: {}", gap.describe())));
                                    break 'copy;
                                }
                                let low = gap
                                    .resumed_at
                                    .expect("skipped gaps record where they resume");
                                reposition(&consumer, &mut runs[idx], low)?;
                            }
                            Err(e) => {
                                result = Err(e);
                                break 'copy;
                            }
                        }
                        break;
                    }
                    Err(e) => {
                        // MM2 logs KafkaExceptions from poll and carries on (§7.2).
                        tracing::warn!(task, topic = %runs[idx].tp.0, partition = runs[idx].tp.1, error = %e, "consumer error");
                        break;
                    }
                }
            }
        }

        // A partition that neither delivers nor reaches its end may be positioned beyond the
        // log end on a broker that stays silent instead of answering OFFSET_OUT_OF_RANGE.
        #[allow(clippy::needless_range_loop)] // `runs[idx]` is re-borrowed mutably below
        for idx in 0..runs.len() {
            let silent_for = runs[idx]
                .silent_since
                .map(|t| t.elapsed())
                .unwrap_or_default();
            if runs[idx].done || runs[idx].at_end || silent_for < spec.silence_check_after {
                continue;
            }
            runs[idx].silent_since = Some(Instant::now());
            let Some(next) = runs[idx].next else { continue };
            let (topic, partition) = (&runs[idx].tp.0, runs[idx].tp.1);
            let (low, high) = consumer
                .fetch_watermarks(topic, partition, watermark_timeout)
                .map_err(kafka_err(
                    task,
                    format!("list offsets of {topic}-{partition}"),
                ))?;
            if next > high {
                let gap = Gap {
                    topic: topic.clone(),
                    partition,
                    from_offset: high,
                    to_offset: next,
                    kind: "beyond_log_end",
                    skipped: spec.on_gap == GapPolicy::Skip,
                    resumed_at: (spec.on_gap == GapPolicy::Skip).then_some(low),
                };
                tracing::error!(task, gap = %gap.describe(), "replication gap");
                outcome.gaps.push(gap.clone());
                if spec.on_gap == GapPolicy::Fail {
                    runs[idx].done = true;
                    result = Err(TaskError::Gap(format!("{task}: {}", gap.describe())));
                    break 'copy;
                }
                reposition(&consumer, &mut runs[idx], low)?;
            }
        }

        feed_syncs(&tracker, &runs, syncs.as_mut(), None);
        if let Some(failure) = first_failure(task, &tracker, &runs) {
            result = Err(failure);
            break;
        }

        if last_commit.elapsed() >= spec.flush_interval {
            if !hooks.still_owner() {
                outcome.partitions = finish_reports(&runs, &committed, &tracker);
                return Err(TaskError::LeaseLost {
                    task: task.to_string(),
                });
            }
            commit(
                task,
                hooks,
                &tracker,
                &runs,
                &mut committed,
                syncs.as_mut(),
                true,
            )?;
            outcome.commits += 1;
            last_commit = Instant::now();
        }

        if !progressed {
            // Nothing queued: sleep until a queue signals data, or briefly, to re-check the
            // deadline and drive callbacks.
            let (lock, cv) = &*wake;
            let mut woken = lock.lock().expect("wake lock");
            if !*woken {
                let wait = Duration::from_millis(20)
                    .min(spec.stop_at.saturating_duration_since(Instant::now()));
                woken = cv.wait_timeout(woken, wait).expect("wake lock").0;
            }
            *woken = false;
        }
    }

    // --- finish: flush, then commit exactly what was acknowledged -------------------------
    // Stop fetching first: nothing more will be read, and a closed consumer drops instantly.
    drop(queues);
    close_consumer(&consumer, Duration::from_millis(500));
    let flush_budget = spec
        .flush_deadline
        .saturating_duration_since(Instant::now());
    if let Err(e) = producer.flush(flush_budget) {
        // Out of time: drop what librdkafka has not sent yet, so those records cannot land
        // after the commit and be copied again by the next slice. Requests already in flight
        // may still succeed; they are the only possible duplicates (at-least-once).
        tracing::warn!(task, error = %e, "producer flush incomplete; purging unsent records, which the next slice replicates");
        producer.purge(rdkafka::producer::PurgeConfig::default().queue());
        producer.poll(Duration::from_millis(100));
    }
    feed_syncs(&tracker, &runs, syncs.as_mut(), Some(spec.flush_deadline));
    if result.is_ok() {
        if let Some(failure) = first_failure(task, &tracker, &runs) {
            result = Err(failure);
        }
    }
    if !hooks.still_owner() {
        outcome.partitions = finish_reports(&runs, &committed, &tracker);
        return Err(TaskError::LeaseLost {
            task: task.to_string(),
        });
    }
    if let Some(s) = syncs.as_mut() {
        // Syncs held back by the in-flight bound go out before the commit's promotion can
        // replace them: MM2 would have fired them before its next commit.
        s.send_all_pending();
    }
    commit(
        task,
        hooks,
        &tracker,
        &runs,
        &mut committed,
        syncs.as_mut(),
        spec.sync_every_commit || last_commit.elapsed() >= spec.flush_interval,
    )?;
    outcome.commits += 1;
    if let Some(s) = syncs.as_mut() {
        // Offset syncs of the final commit are part of the slice: flush them before exiting.
        s.finish(spec.flush_deadline);
    }

    // Figures count only what was acknowledged and committed. A partition is caught up when
    // the consumer reached its end AND everything read was acknowledged: a slice that ran out
    // of time with records in flight is not caught up, whatever the consumer saw.
    let acks = tracker.lock().expect("ack tracker poisoned");
    for (idx, run) in runs.iter_mut().enumerate() {
        let p = &acks.partitions[idx];
        run.report.records = p.acked_records;
        run.report.bytes = p.acked_bytes;
        run.report.newest_record_timestamp_ms = p.newest_timestamp;
        run.report.oldest_record_timestamp_ms = p.oldest_timestamp;
        let committed_next = committed
            .get(&run.tp)
            .map(|o| o + 1)
            .or(run.report.start_offset);
        run.report.end_offset = committed_next.or(run.next);
        run.report.caught_up =
            run.at_end && !run.done && p.in_flight.is_empty() && p.failure.is_none();
        run.report.lag = if run.report.caught_up {
            Some(0)
        } else {
            // Records read but not acknowledged are lag for certain; the broker's end offset
            // may show more (some brokers report it low, so take the larger).
            let read_to = run.next;
            let listed = consumer
                .fetch_watermarks(&run.tp.0, run.tp.1, Duration::from_secs(2))
                .ok()
                .map(|(_, high)| high);
            match (committed_next, read_to.max(listed)) {
                (Some(n), Some(end)) => Some((end - n).max(0)),
                (None, Some(end)) => Some(end.max(0)),
                _ => None,
            }
        };
    }
    drop(acks);
    outcome.partitions = runs.iter().map(|r| r.report.clone()).collect();
    result
}

/// Every partition reported end-of-partition: confirm it against the broker's listed end
/// offsets before calling the slice caught up. Some brokers answer a fetch with
/// end-of-partition at the old position just after acknowledging new records; the listed end
/// then shows them. A partition listed beyond its position keeps reading (its next records
/// arrive as usual) for up to [`SHORT_OF_LISTED_GRACE`]: a listed end can also count records
/// no consumer is ever served (a transaction's commit marker), and such a partition must not
/// hold the slice until its deadline. On a broker whose listed end trails the log (by the last batch),
/// this check can only err toward "not yet", never toward a false "caught up". The request
/// waits behind the consumer's held fetch, at most `fetch.wait.max.ms` (10 ms by default).
fn confirm_at_end(consumer: &BaseConsumer<MirrorContext>, runs: &mut [PartitionRun]) -> bool {
    let at_end: Vec<TopicPartition> = runs
        .iter()
        .filter(|r| !r.done && r.at_end)
        .map(|r| r.tp.clone())
        .collect();
    // One request for all partitions; if it fails, trust the end-of-partition events.
    let ends =
        listed_offsets(consumer, &at_end, Offset::End, Duration::from_secs(5)).unwrap_or_default();
    let mut all = true;
    for run in runs.iter_mut().filter(|r| !r.done && r.at_end) {
        let position = run.next.or_else(|| position_of(consumer, &run.tp));
        let listed = ends.get(&run.tp).copied();
        match (position, listed) {
            (Some(position), Some(listed)) if listed > position => {
                let since = *run.short_of_listed_since.get_or_insert_with(|| {
                    tracing::debug!(
                        topic = %run.tp.0,
                        partition = run.tp.1,
                        position,
                        listed,
                        "end-of-partition before the listed end; reading on"
                    );
                    Instant::now()
                });
                if since.elapsed() < SHORT_OF_LISTED_GRACE {
                    all = false;
                } else {
                    // Never served: a transaction marker at the end (consumers do not see
                    // control records), or a broker that lists records it will not serve yet.
                    // The end-of-partition stands; anything real is the next slice's.
                    tracing::debug!(
                        topic = %run.tp.0,
                        partition = run.tp.1,
                        position,
                        listed,
                        "listed end not served; caught up at the end-of-partition"
                    );
                }
            }
            _ => run.short_of_listed_since = None,
        }
    }
    all
}

/// How long a partition at end-of-partition but short of its listed end keeps reading before
/// the end-of-partition stands (records acknowledged a moment ago normally appear well within).
const SHORT_OF_LISTED_GRACE: Duration = Duration::from_secs(2);

/// Produce one consumed record to the same partition of the remote topic, byte for byte.
fn forward(
    producer: &BaseProducer<CopyContext>,
    run: &mut PartitionRun,
    idx: usize,
    msg: &BorrowedMessage<'_>,
    tracker: &Arc<Mutex<AckTracker>>,
) -> Result<(), KafkaError> {
    let upstream = msg.offset();
    let headers = msg.headers().map(|hs| {
        let mut owned = OwnedHeaders::new_with_capacity(hs.count());
        for h in hs.iter() {
            owned = owned.insert(Header {
                key: h.key,
                value: h.value,
            });
        }
        owned
    });
    let timestamp = match msg.timestamp() {
        Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) if t >= 0 => Some(t),
        _ => None,
    };
    let key = msg.key();
    let payload = msg.payload();
    let size = (key.map_or(0, |k| k.len()) + payload.map_or(0, |p| p.len())) as u64;

    tracker
        .lock()
        .expect("ack tracker poisoned")
        .sent(idx, upstream, size, timestamp);
    let mut record: BaseRecord<'_, [u8], [u8], SentRecord> =
        BaseRecord::with_opaque_to(&run.remote, Box::new((idx, upstream))).partition(run.tp.1);
    if let Some(k) = key {
        record = record.key(k);
    }
    if let Some(p) = payload {
        record = record.payload(p);
    }
    if let Some(h) = headers {
        record = record.headers(h);
    }
    if let Some(t) = timestamp {
        record = record.timestamp(t);
    }
    loop {
        match producer.send(record) {
            Ok(()) => break,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                // Back-pressure: let deliveries drain, then retry the same record.
                record = back;
                producer.poll(Duration::from_millis(5));
            }
            Err((e, back)) => {
                // Never sent: forget it so it cannot block the committable offset.
                let (idx, up) = *back.delivery_opaque;
                let mut t = tracker.lock().expect("ack tracker poisoned");
                t.completed(idx, up, Err(e.to_string()));
                return Err(e);
            }
        }
    }

    if run.report.start_offset.is_none() {
        run.report.start_offset = Some(upstream);
    }
    run.next = Some(upstream + 1);
    run.at_end = false;
    run.silent_since = None;
    Ok(())
}

fn position_of(consumer: &BaseConsumer<MirrorContext>, tp: &TopicPartition) -> Option<i64> {
    let positions = consumer.position().ok()?;
    match positions.find_partition(&tp.0, tp.1)?.offset() {
        Offset::Offset(o) => Some(o),
        _ => None,
    }
}

/// Classify an OFFSET_OUT_OF_RANGE answer by the current log bounds.
fn out_of_range_gap(
    consumer: &BaseConsumer<MirrorContext>,
    spec: &SourceTaskSpec,
    run: &PartitionRun,
    timeout: Duration,
) -> Result<Gap, TaskError> {
    let (topic, partition) = (&run.tp.0, run.tp.1);
    let (low, high) = consumer
        .fetch_watermarks(topic, partition, timeout)
        .map_err(kafka_err(
            &spec.name,
            format!("list offsets of {topic}-{partition}"),
        ))?;
    let next = run.next.unwrap_or(low);
    let skipped = spec.on_gap == GapPolicy::Skip;
    Ok(if next < low {
        Gap {
            topic: topic.clone(),
            partition,
            from_offset: next,
            to_offset: low,
            kind: "below_log_start",
            skipped,
            resumed_at: skipped.then_some(low),
        }
    } else {
        Gap {
            topic: topic.clone(),
            partition,
            from_offset: high,
            to_offset: next,
            kind: "beyond_log_end",
            skipped,
            resumed_at: skipped.then_some(low),
        }
    })
}

fn reposition(
    consumer: &Arc<BaseConsumer<MirrorContext>>,
    run: &mut PartitionRun,
    offset: i64,
) -> Result<(), TaskError> {
    consumer
        .seek(
            &run.tp.0,
            run.tp.1,
            Offset::Offset(offset),
            Duration::from_secs(10),
        )
        .map_err(|source| TaskError::Kafka {
            task: run.report.remote_topic.clone(),
            what: format!("seek {}-{} to {offset}", run.tp.0, run.tp.1),
            source: Box::new(source),
        })?;
    run.next = Some(offset);
    run.at_end = false;
    run.silent_since = Some(Instant::now());
    Ok(())
}

/// Hand acknowledged records to the offset-sync sender one by one, as MM2's `commitRecord`
/// does (a sync due is sent at once, within the in-flight bound); then fire syncs an earlier
/// turn held back. With `wait_until` (the slice's end, when the copy loop is over) a sync held
/// back by the bound waits for room instead of being replaced by a later one.
///
/// A turn's acknowledgements arrive grouped by partition (one delivered batch after another);
/// they are handed over round-robin across partitions, each partition's in order, so the
/// in-flight bound is shared fairly instead of going to the first partitions of the burst.
fn feed_syncs(
    tracker: &Arc<Mutex<AckTracker>>,
    runs: &[PartitionRun],
    syncs: Option<&mut OffsetSyncSender>,
    wait_until: Option<Instant>,
) {
    let acked = std::mem::take(&mut tracker.lock().expect("ack tracker poisoned").acknowledged);
    let Some(syncs) = syncs else { return };
    if acked.is_empty() {
        syncs.fire();
        return;
    }
    let mut seen = vec![0u32; runs.len()];
    let mut interleaved: Vec<(u32, usize, i64, i64)> = acked
        .into_iter()
        .map(|(idx, up, down)| {
            seen[idx] += 1;
            (seen[idx], idx, up, down)
        })
        .collect();
    interleaved.sort_unstable_by_key(|&(rank, idx, _, _)| (rank, idx));
    for (_, idx, up, down) in interleaved {
        let tp = &runs[idx].tp;
        syncs.record_acknowledged(&tp.0, tp.1, up, down);
        if let Some(deadline) = wait_until {
            syncs.wait_for_room(deadline);
        }
    }
    syncs.fire();
}

fn first_failure(
    task: &str,
    tracker: &Arc<Mutex<AckTracker>>,
    runs: &[PartitionRun],
) -> Option<TaskError> {
    let t = tracker.lock().expect("ack tracker poisoned");
    t.partitions
        .iter()
        .enumerate()
        .find_map(|(idx, p)| p.failure.clone().map(|f| (idx, f)))
        .map(|(idx, (offset, reason))| TaskError::Delivery {
            task: task.to_string(),
            topic: runs[idx].remote.clone(),
            partition: runs[idx].tp.1,
            offset,
            reason,
        })
}

fn commit(
    task: &str,
    hooks: &mut dyn TaskHooks,
    tracker: &Arc<Mutex<AckTracker>>,
    runs: &[PartitionRun],
    committed: &mut BTreeMap<TopicPartition, i64>,
    syncs: Option<&mut OffsetSyncSender>,
    promote: bool,
) -> Result<(), TaskError> {
    let offsets: BTreeMap<TopicPartition, i64> = {
        let t = tracker.lock().expect("ack tracker poisoned");
        t.partitions
            .iter()
            .enumerate()
            .filter_map(|(idx, p)| p.committable.map(|o| (runs[idx].tp.clone(), o)))
            .filter(|(tp, o)| committed.get(tp) != Some(o))
            .collect()
    };
    if !offsets.is_empty() {
        hooks.commit(&offsets).map_err(|e| TaskError::Commit {
            task: task.to_string(),
            message: e.to_string(),
        })?;
        committed.extend(offsets);
    }
    // §7.4: after each successful offset commit, the latest pair of every partition is due.
    if let Some(s) = syncs {
        s.committed(promote);
    }
    Ok(())
}

/// Partition reports of a task that stops early (its lease is lost): what reached the target
/// (acknowledged records, which the next slice copies again as it resumes from the last
/// commit) and where the committed position ends. Nothing is caught up.
fn finish_reports(
    runs: &[PartitionRun],
    committed: &BTreeMap<TopicPartition, i64>,
    tracker: &Arc<Mutex<AckTracker>>,
) -> Vec<PartitionReport> {
    let acks = tracker.lock().expect("ack tracker poisoned");
    runs.iter()
        .enumerate()
        .map(|(idx, r)| {
            let p = &acks.partitions[idx];
            let mut rep = r.report.clone();
            rep.records = p.acked_records;
            rep.bytes = p.acked_bytes;
            rep.newest_record_timestamp_ms = p.newest_timestamp;
            rep.oldest_record_timestamp_ms = p.oldest_timestamp;
            rep.end_offset = committed.get(&r.tp).map(|o| o + 1).or(rep.start_offset);
            rep.caught_up = false;
            rep
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(n: usize) -> AckTracker {
        AckTracker {
            partitions: (0..n).map(|_| PartitionAcks::default()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn committable_advances_only_over_contiguous_acks() {
        let mut t = tracker(1);
        for up in 10..15 {
            t.sent(0, up, 1, None);
        }
        t.completed(0, 11, Ok(101));
        assert_eq!(t.partitions[0].committable, None, "10 still outstanding");
        t.completed(0, 10, Ok(100));
        assert_eq!(t.partitions[0].committable, Some(11));
        assert_eq!(t.acknowledged, vec![(0, 10, 100), (0, 11, 101)]);
        t.completed(0, 13, Ok(103));
        assert_eq!(t.partitions[0].committable, Some(11));
        t.completed(0, 12, Err("broker down".into()));
        assert_eq!(
            t.partitions[0].committable,
            Some(11),
            "never commit past a failed record"
        );
        assert_eq!(t.partitions[0].failure, Some((12, "broker down".into())));
        t.completed(0, 14, Ok(104));
        assert_eq!(t.partitions[0].committable, Some(11));
        assert_eq!(t.outstanding, 0);
    }

    #[test]
    fn partitions_are_tracked_independently() {
        let mut t = tracker(2);
        t.sent(0, 0, 1, None);
        t.sent(1, 0, 1, None);
        t.completed(1, 0, Ok(7));
        assert_eq!(t.partitions[1].committable, Some(0));
        assert_eq!(t.partitions[0].committable, None);
    }

    #[test]
    fn reset_policy_from_java_props() {
        let mut p = Props::new();
        assert_eq!(
            ResetPolicy::from_consumer_props(&p).unwrap(),
            ResetPolicy::Earliest
        );
        p.insert("auto.offset.reset".into(), "latest".into());
        assert_eq!(
            ResetPolicy::from_consumer_props(&p).unwrap(),
            ResetPolicy::Latest
        );
        p.insert("auto.offset.reset".into(), "sideways".into());
        assert!(ResetPolicy::from_consumer_props(&p).is_err());
    }

    #[test]
    fn gap_descriptions_name_partition_and_range() {
        let below = Gap {
            topic: "orders".into(),
            partition: 3,
            from_offset: 100,
            to_offset: 250,
            kind: "below_log_start",
            skipped: false,
            resumed_at: None,
        };
        let text = below.describe();
        assert!(text.contains("orders-3") && text.contains("100..250") && text.contains("150"));
        let beyond = Gap {
            topic: "orders".into(),
            partition: 0,
            from_offset: 5,
            to_offset: 100,
            kind: "beyond_log_end",
            skipped: true,
            resumed_at: Some(0),
        };
        assert!(beyond.describe().contains("recreated"));
    }
}
