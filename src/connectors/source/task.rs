//! MirrorSourceTask for one slice (mm2-compat §7): copy records, track acknowledgements, commit
//! Connect offsets, emit offset syncs — and stop at the deadline or as soon as caught up.
//!
//! # The life of a slice's task
//!
//! 1. **Position.** Each assigned source partition resumes at *stored + 1* (the stored Connect
//!    offset is the last replicated record), or, with no stored offset, where MM2's
//!    `auto.offset.reset` says. Before any record is copied the partition's log start is
//!    checked: if the next offset we need was deleted by retention, that is a **gap** (below).
//! 2. **Copy.** Records are read from the task's queue, into which its partitions' queues are
//!    forwarded, up to 512 at a time, and produced byte for byte to the remote
//!    topic's *same* partition: key, value (null kept), headers in order with duplicates,
//!    timestamp. librdkafka copies the bytes into its own batch, so nothing is buffered beyond
//!    what the producer needs. The consumer and the producer are the slice's
//!    ([`SliceClients`]), shared by its tasks; each task reads and writes only its own
//!    partitions. A slice's tasks copy on one thread, a step each in turn
//!    ([`super::copier`]); a task that runs alone drives its steps itself
//!    ([`run_source_task_on`]).
//! 3. **Acknowledge.** Every delivery report is matched to its source record. A partition's
//!    *committable* offset only advances over a contiguous run of acknowledged records, so a
//!    failed or outstanding record is never committed past (§7.6). Acknowledged records feed
//!    the offset-sync rules (§7.5).
//! 4. **Commit.** Every `offset.flush.interval.ms`, after every 1 MiB acknowledged, and at the
//!    end, committable offsets go to the caller's [`TaskHooks::start_commit`] (the Connect
//!    offsets topic). One commit is on its way at a time; the task copies on meanwhile, up to
//!    another 1 MiB acknowledged, then waits for [`TaskHooks::commit_outcome`] to confirm it:
//!    then its offsets count as committed and delayed offset syncs are promoted and sent
//!    (KAFKA-15906). Records, syncs and commits are handed over only within
//!    [`TaskHooks::owned_until`]: a task whose lease lapsed or was taken drops what is queued,
//!    stops and commits nothing more.
//! 5. **Stop.** At `stop_at`, or when every partition has reported end-of-partition at its
//!    position. "Caught up" comes from the consumer's own end-of-partition event, never from
//!    watermark arithmetic (some brokers report a high watermark that trails the log end).
//!
//! # Gaps are loud
//! If the next offset is below the log start (retention deleted records we never copied) or
//! beyond the log end (topic deleted and recreated, or truncated), the exact range is recorded.
//! With [`GapPolicy::Fail`] (default) the task stops and the slice fails; with
//! [`GapPolicy::Skip`] the partition jumps to the log start and the gap is still reported.

use super::acks::{AckTracker, PartitionAcks};
pub use super::clients::producer_props;
pub use super::data_producer::DataProducer;
use super::data_producer::{RecordHeaders, TaskSlot, TopicHandle};
use super::offset_sync_sender::{OffsetSyncProducer, OffsetSyncSender};
use super::position::{
    apply_gap, confirm_at_end, out_of_range_gap, position_of, position_partitions, silent_gap,
    PartitionRun,
};
pub use super::position::{Gap, GapPolicy, ResetPolicy};
pub use super::replication_consumer::ReplicationConsumer;
use super::task_queue::{FetchedMessage, TaskQueue};
use crate::config::Props;
use crate::kafka::{listed_offsets, ClientError, MirrorContext};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::PurgeConfig;
use rdkafka::{Message, Offset, TopicPartitionList};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A source topic-partition.
pub type TopicPartition = (String, i32);

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
    /// The source topic ID stored beside each stored offset, where there is one.
    pub stored_topic_ids: BTreeMap<TopicPartition, String>,
    /// Each source topic's ID now (KIP-516), where the source broker reports one: a stored ID
    /// that differs is a `recreated` gap.
    pub topic_ids: BTreeMap<String, String>,
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
}

/// The caller's side of a task: durable commits and lease ownership.
pub trait TaskHooks: Send {
    /// Hands committable offsets (the last replicated upstream offset per partition) over to be
    /// persisted, without waiting for them: the copy goes on meanwhile. Called only when no
    /// commit is pending, i.e. after [`TaskHooks::commit_outcome`] reported the previous one.
    fn start_commit(&mut self, offsets: BTreeMap<TopicPartition, i64>) -> Result<(), TaskError>;
    /// The pending commit's outcome, `Some(Ok(()))` when none is pending. Without `wait`,
    /// `None` while it is still on its way; with `wait`, waits until it is confirmed or failed
    /// (the wait is the caller's to bound: by the lease's validity and the slice's deadline).
    fn commit_outcome(&mut self, wait: bool) -> Option<Result<(), TaskError>>;
    /// Until when this invocation may act as the task's owner (it moves on as the lease is
    /// renewed); `None` once the lease was lost. No record, offset sync or commit is handed to
    /// a producer at or after it, and waits for their delivery end by it.
    fn owned_until(&mut self) -> Option<Instant>;
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
    /// The consumer reported an error for one source partition (authorization, a corrupt or
    /// undecodable batch, an unknown topic): that partition stopped, the others went on.
    #[error("{task}: source partition {topic}-{partition} failed at offset {offset}: {reason}")]
    Partition {
        task: String,
        topic: String,
        partition: i32,
        /// The next offset the partition needed (`?` when it was never positioned).
        offset: String,
        reason: String,
    },
    /// The task's lease ran out or was taken; `stopped` says what became of its last commit.
    #[error("{task}: lease lost; {stopped}")]
    LeaseLost { task: String, stopped: String },
    #[error("{task}: commit failed: {message}")]
    Commit { task: String, message: String },
}

impl TaskError {
    /// The lease was found gone before anything more was handed over.
    pub fn lease_lost(task: &str) -> Self {
        TaskError::LeaseLost {
            task: task.to_string(),
            stopped: "stopped without committing further".to_string(),
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
    /// Why the partition stopped early in this slice (a consumer error), if it did.
    pub error: Option<String>,
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
// The copy loop
// ---------------------------------------------------------------------------------------------

impl TaskOutcome {
    /// A task that did nothing (yet), or failed with `error` before copying.
    pub fn empty(error: Option<String>) -> Self {
        TaskOutcome {
            partitions: Vec::new(),
            records: 0,
            bytes: 0,
            caught_up: false,
            commits: 0,
            offset_syncs_sent: 0,
            offset_syncs_end: None,
            gaps: Vec::new(),
            error,
        }
    }
}

/// Run one task for one slice, alone: with a replication consumer and a data producer of its
/// own. Blocking: call it from a blocking thread.
pub fn run_source_task(spec: &SourceTaskSpec, hooks: &mut dyn TaskHooks) -> TaskOutcome {
    let syncs = spec.offset_syncs.as_ref();
    match SliceClients::open(&spec.name, &spec.consumer, &spec.producer, 1, syncs) {
        Ok(clients) => run_source_task_on(spec, &Arc::new(clients), hooks),
        Err(e) => TaskOutcome::empty(Some(TaskError::Client(Box::new(e)).to_string())),
    }
}

/// The clients a slice's source tasks share: one replication consumer of the source, one data
/// producer to the target, and the offset-sync producer when syncs are emitted.
pub struct SliceClients {
    pub consumer: ReplicationConsumer,
    pub producer: Arc<DataProducer>,
    pub offset_syncs: Option<Arc<OffsetSyncProducer>>,
}

impl SliceClients {
    /// Opens them, named after `owner` (e.g. the flow and connector); `consumer` and
    /// `producer` are the Java-named settings, `tasks` how many tasks share them, and
    /// `offset_syncs` the offset-sync producer's settings and topic.
    pub fn open(
        owner: &str,
        consumer: &Props,
        producer: &Props,
        tasks: usize,
        offset_syncs: Option<&(Props, String)>,
    ) -> Result<Self, ClientError> {
        let role = format!("{owner}|replication-consumer");
        let consumer = ReplicationConsumer::open(&role, consumer, tasks)?;
        let role = format!("{owner}|replication-producer");
        let producer = Arc::new(DataProducer::open(&role, &producer_props(producer, tasks))?);
        let role = format!("{owner}|offset-syncs-producer");
        let offset_syncs = offset_syncs
            .map(|(props, topic)| OffsetSyncProducer::open(&role, props, topic).map(Arc::new))
            .transpose()?;
        Ok(SliceClients {
            consumer,
            producer,
            offset_syncs,
        })
    }
}

/// Run one task for one slice with the slice's shared `clients`, alone on this thread. Unlike
/// the slice's copy thread, it waits for each commit it starts before copying on (the tests'
/// loop). Blocking: call it from a blocking thread.
pub fn run_source_task_on(
    spec: &SourceTaskSpec,
    clients: &Arc<SliceClients>,
    hooks: &mut dyn TaskHooks,
) -> TaskOutcome {
    let wake = Wake::default();
    let mut task = match ActiveTask::start(Arc::new(spec.clone()), clients, &wake) {
        Ok(task) => task,
        Err(ended) => return ended,
    };
    loop {
        match task.step(hooks) {
            Turn::Progressed => {}
            Turn::Idle => wake.wait(IDLE_WAIT, spec.stop_at),
            Turn::CommitPending => task.await_commit(hooks),
            Turn::Stopped => break,
        }
    }
    task.finish(hooks)
}

/// The figures of a task's outcome from its partitions' reports and its offset syncs.
fn finalize(
    mut outcome: TaskOutcome,
    syncs: Option<&OffsetSyncSender>,
    no_partitions: bool,
) -> TaskOutcome {
    if let Some(s) = syncs {
        outcome.offset_syncs_sent = s.sent();
        outcome.offset_syncs_end = s.end_offset();
    }
    outcome.records = outcome.partitions.iter().map(|p| p.records).sum();
    outcome.bytes = outcome.partitions.iter().map(|p| p.bytes).sum();
    outcome.caught_up = outcome.error.is_none()
        && (no_partitions
            || !outcome.partitions.is_empty() && outcome.partitions.iter().all(|p| p.caught_up));
    outcome
}

pub(super) fn kafka_err(
    task: &str,
    what: impl Into<String>,
) -> impl FnOnce(KafkaError) -> TaskError + '_ {
    let what = what.into();
    move |source| TaskError::Kafka {
        task: task.to_string(),
        what,
        source: Box::new(source),
    }
}

/// A task's clients and per-partition state for one slice.
struct CopyLoop {
    spec: Arc<SourceTaskSpec>,
    /// The slice's replication consumer.
    consumer: Arc<BaseConsumer<MirrorContext>>,
    /// The partitions this task added to its assignment and has not taken out again.
    assigned: Vec<TopicPartition>,
    /// This task's registration with the slice's data producer.
    slot: TaskSlot,
    tracker: Arc<Mutex<AckTracker>>,
    runs: Vec<PartitionRun>,
    /// Each run's remote topic, as the producer's handle.
    topics: Vec<Arc<TopicHandle>>,
    /// Records taken from the task's queue at once, and the records of one partition among
    /// them (both kept to reuse their allocations).
    batch: Vec<FetchedMessage>,
    burst: Vec<FetchedMessage>,
    /// Which run a record's source partition is, by librdkafka's topic handle and partition
    /// (learnt from each partition's first record).
    run_index: HashMap<(usize, i32), usize>,
    /// Turns taken so far (the consumer's main queue is polled every [`MAIN_QUEUE_EVERY`]).
    turns: u32,
    /// Set when records or events arrive in the task's queue, cleared when a turn empties it.
    ready: Arc<AtomicBool>,
    /// When the task last took a step.
    last_step: Instant,
    /// Last offset committed (and confirmed) per partition in this slice.
    committed: BTreeMap<TopicPartition, i64>,
    /// The commit handed to the hooks and not yet confirmed.
    in_flight: Option<CommitInFlight>,
    /// When the end-of-partition of every partition may be confirmed again, after a
    /// confirmation found a partition short of its listed end ([`CopyLoop::confirm_due`]).
    next_confirm: Option<Instant>,
    /// When the last commit was started, and the bytes acknowledged by then.
    last_commit: Instant,
    acked_at_commit: u64,
    /// When a confirmed commit last promoted the delayed offset syncs.
    last_promotion: Instant,
    /// The lease's validity as of this turn ([`TaskHooks::owned_until`]): no record is handed
    /// to the producer at or after it.
    owned_until: Option<Instant>,
    /// Keeps the slice's clients open while the task runs: the last holder closes them.
    _clients: Arc<SliceClients>,
}

/// Why the copy loop stopped (an `Err` from it aborts the task: nothing more is committed).
enum Stop {
    /// Deadline reached, or caught up.
    Done,
    /// A failure; what was acknowledged before it is still flushed and committed.
    Failed(TaskError),
}

/// A commit started and not yet confirmed.
struct CommitInFlight {
    offsets: BTreeMap<TopicPartition, i64>,
    /// Its confirmation promotes the delayed offset syncs.
    promote: bool,
}

/// Set by the task queues' callbacks so an idle copy loop sleeps instead of spinning.
#[derive(Clone, Default)]
pub(crate) struct Wake(Arc<(Mutex<bool>, Condvar)>);

impl Wake {
    /// Wakes the loop waiting on it (or its next wait).
    pub(crate) fn notify(&self) {
        let (lock, cv) = &*self.0;
        *lock.lock().expect("wake lock") = true;
        cv.notify_one();
    }

    /// Sleeps until notified, or for `at_most` (never past `stop_at`), to re-check the
    /// deadline and drive callbacks.
    pub(crate) fn wait(&self, at_most: Duration, stop_at: Instant) {
        let (lock, cv) = &*self.0;
        let mut woken = lock.lock().expect("wake lock");
        if !*woken {
            let wait = at_most.min(stop_at.saturating_duration_since(Instant::now()));
            woken = cv.wait_timeout(woken, wait).expect("wake lock").0;
        }
        *woken = false;
    }
}

/// How long the end-of-slice lag probe may wait for the broker's listed end offsets.
const LAG_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A task commits once this many bytes were acknowledged since its last commit (if it is not
/// due earlier by time): what a kill re-copies. Measured on the local Apache Kafka stack (1M x
/// 512 B records, 3 runs each): 4 MiB, 1 MiB and 512 KiB cost the same throughput and CPU time
/// within the run-to-run spread (114-182 MB/s, 2.2-2.7 CPU s).
const COMMIT_AFTER_BYTES: u64 = 1024 * 1024;

/// Delayed offset syncs are promoted at a commit at most this often (unless the flush interval
/// is longer), and at the slice's last commit: the cadence of syncs before commits became
/// frequent (see `docs/offset-syncs.md`).
const SYNC_PROMOTION_INTERVAL: Duration = Duration::from_secs(1);

/// How long a task whose partitions are all at their end, but not all confirmed there, reads on
/// before it confirms again ([`confirm_at_end`]).
const CONFIRM_RETRY: Duration = Duration::from_millis(50);

/// How long an idle copy loop sleeps at most before it looks at its deadline and callbacks.
pub(crate) const IDLE_WAIT: Duration = Duration::from_millis(20);

/// Records taken from the task's queue at once.
const BURST: usize = 512;

/// A task polls the consumer's main queue every this many turns.
const MAIN_QUEUE_EVERY: u32 = 8;

/// How long a task sleeps between looks at its deliveries (the data producer's own thread
/// serves them) while it waits for room in the producer queue or for its last reports.
const DELIVERY_WAIT: Duration = Duration::from_millis(1);

/// How long a task waits for the reports of records it purged at its deadline.
const PURGE_REPORTS: Duration = Duration::from_millis(100);

/// A task whose partitions are assigned: stepped a turn at a time (alone, or beside the
/// slice's other tasks on one thread) until it stops, then finished.
pub(crate) struct ActiveTask {
    task: CopyLoop,
    queue: Option<TaskQueue<MirrorContext>>,
    syncs: Option<OffsetSyncSender>,
    outcome: TaskOutcome,
    /// Why the copy stopped, once it did.
    stop: Option<Result<Stop, TaskError>>,
}

/// What one step of a task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Records or events were forwarded.
    Progressed,
    /// Nothing arrived: its queue's callback sets the wake when something does.
    Idle,
    /// A commit is unconfirmed and the task copies nothing (it copied its share past the
    /// commit, or nothing arrived): the copy thread looks for the outcome again soon.
    CommitPending,
    /// The copy ended: [`ActiveTask::finish`] it.
    Stopped,
}

impl ActiveTask {
    /// Opens the task's side of the slice's clients, positions its partitions and adds them to
    /// the consumer's assignment; its queue sets `wake` when records arrive. A task that has
    /// nothing to copy, or fails on the way, ends at once with its outcome.
    pub(crate) fn start(
        spec: Arc<SourceTaskSpec>,
        clients: &Arc<SliceClients>,
        wake: &Wake,
    ) -> Result<Self, TaskOutcome> {
        let mut outcome = TaskOutcome::empty(None);
        if spec.partitions.is_empty() {
            return Err(finalize(outcome, None, true));
        }
        let mut syncs = None;
        let mut task = match CopyLoop::open(spec, clients, &mut syncs) {
            Ok(task) => task,
            Err(e) => {
                outcome.error = Some(e.to_string());
                return Err(finalize(outcome, syncs.as_ref(), false));
            }
        };
        match task.assign(wake, &mut outcome.gaps) {
            Ok(queue) => Ok(ActiveTask {
                task,
                queue: Some(queue),
                syncs,
                outcome,
                stop: None,
            }),
            Err(e) => {
                outcome.partitions = task.reports();
                outcome.error = Some(e.to_string());
                Err(finalize(outcome, syncs.as_ref(), false))
            }
        }
    }

    /// One turn of the copy ([`CopyLoop::step`]); [`Turn::Stopped`] once it ended.
    pub(crate) fn step(&mut self, hooks: &mut dyn TaskHooks) -> Turn {
        if self.stop.is_some() {
            return Turn::Stopped;
        }
        let queue = self.queue.as_ref().expect("a running task has its queue");
        match (self.task).step(hooks, queue, self.syncs.as_mut(), &mut self.outcome) {
            Ok(ControlFlow::Continue(turn)) => turn,
            Ok(ControlFlow::Break(stop)) => self.stopped(Ok(stop)),
            Err(e) => self.stopped(Err(e)),
        }
    }

    /// When the task stops copying (its slice's deadline).
    pub(crate) fn stop_at(&self) -> Instant {
        self.task.spec.stop_at
    }

    /// Whether stepping it at `now` has anything to do ([`CopyLoop::wants_step`]).
    pub(crate) fn wants_step(&self, now: Instant) -> bool {
        self.stop.is_some() || self.task.wants_step(now)
    }

    /// Waits for the task's unconfirmed commit (when it runs alone: nothing else to do).
    pub(crate) fn await_commit(&mut self, hooks: &mut dyn TaskHooks) {
        let settled =
            (self.task).settle_commit(hooks, true, self.syncs.as_mut(), &mut self.outcome);
        if let Err(e) = settled {
            self.stopped(Err(e));
        }
    }

    /// When the copy stopped, before anything else: a lost lease drops what is queued, as
    /// every moment lets more queued records out.
    fn stopped(&mut self, stop: Result<Stop, TaskError>) -> Turn {
        if let Err(TaskError::LeaseLost { .. }) = &stop {
            self.task.abandon(self.syncs.as_mut());
        }
        self.stop = Some(stop);
        Turn::Stopped
    }

    /// Ends the task: settles its last commit, stops fetching, flushes, commits what was
    /// acknowledged and reports. Blocking (it waits for deliveries and the commit).
    pub(crate) fn finish(mut self, hooks: &mut dyn TaskHooks) -> TaskOutcome {
        if !matches!(self.stop, Some(Err(_))) {
            self.await_commit(hooks);
        }
        let ActiveTask {
            mut task,
            queue,
            mut syncs,
            mut outcome,
            stop,
        } = self;
        // Stop fetching: nothing more will be read (the queue goes once its partitions are out).
        task.unassign_all();
        drop(queue);
        let ended = match stop.unwrap_or(Ok(Stop::Done)) {
            Ok(stop) => task.finish(hooks, syncs.as_mut(), stop, &mut outcome),
            Err(e) => {
                outcome.partitions = task.early_reports();
                Err(e)
            }
        };
        if let Err(e) = ended {
            outcome.error = Some(e.to_string());
        }
        finalize(outcome, syncs.as_ref(), false)
    }
}

impl CopyLoop {
    /// Creates the replication consumer and, when offset syncs are enabled, the offset-sync
    /// sender; registers with the data producer.
    fn open(
        spec: Arc<SourceTaskSpec>,
        clients: &Arc<SliceClients>,
        syncs: &mut Option<OffsetSyncSender>,
    ) -> Result<Self, TaskError> {
        let producer = &clients.producer;
        let task = spec.name.as_str();
        let runs: Vec<PartitionRun> = spec
            .partitions
            .iter()
            .map(|tp| {
                let remote = spec.remote_topics.get(&tp.0).unwrap_or(&tp.0);
                PartitionRun::new(tp, remote.clone())
            })
            .collect();
        let tracker = Arc::new(Mutex::new(AckTracker {
            partitions: (0..runs.len()).map(|_| PartitionAcks::default()).collect(),
            ordered: producer.keeps_order(),
            ..Default::default()
        }));
        let slot = (producer.register(tracker.clone(), runs.len()))
            .map_err(|e| TaskError::Config(format!("{task}: {e}")))?;
        let topics = (runs.iter())
            .map(|run| producer.topic(&run.remote))
            .collect::<Result<Vec<_>, _>>()
            .map_err(kafka_err(task, "open the remote topics"))?;
        if spec.offset_syncs.is_some() {
            let Some(producer) = &clients.offset_syncs else {
                let message = "offset syncs are emitted, but the slice has no offset-sync producer";
                return Err(TaskError::Config(format!("{task}: {message}")));
            };
            *syncs = Some(OffsetSyncSender::new(producer.clone(), spec.offset_lag_max));
        }
        Ok(CopyLoop {
            spec,
            consumer: clients.consumer.client().clone(),
            _clients: clients.clone(),
            assigned: Vec::new(),
            slot,
            tracker,
            runs,
            topics,
            batch: Vec::with_capacity(BURST),
            burst: Vec::with_capacity(BURST),
            run_index: HashMap::new(),
            turns: 0,
            ready: Arc::new(AtomicBool::new(true)),
            last_step: Instant::now(),
            committed: BTreeMap::new(),
            in_flight: None,
            next_confirm: None,
            last_commit: Instant::now(),
            acked_at_commit: 0,
            last_promotion: Instant::now(),
            owned_until: None,
        })
    }

    /// The task's queue, into which its partitions' queues are forwarded ([`TaskQueue`]). A
    /// non-empty callback wakes the loop when records or events arrive, so an idle loop does
    /// not spin.
    fn open_queue(&self, wake: &Wake) -> Result<TaskQueue<MirrorContext>, TaskError> {
        let tps: Vec<TopicPartition> = self.runs.iter().map(|r| r.tp.clone()).collect();
        let mut queue = TaskQueue::forwarding(&self.consumer, &tps)
            .map_err(|e| TaskError::Config(format!("{}: {e}", self.spec.name)))?;
        let (wake, ready) = (wake.clone(), self.ready.clone());
        queue.set_nonempty_callback(move || {
            ready.store(true, Ordering::Release);
            wake.notify();
        });
        Ok(queue)
    }

    /// Positions the partitions, forwards them into the task's queue (which sets `wake` when
    /// records arrive) and adds them to the slice consumer's assignment, beside the other
    /// tasks' partitions.
    fn assign(
        &mut self,
        wake: &Wake,
        gaps: &mut Vec<Gap>,
    ) -> Result<TaskQueue<MirrorContext>, TaskError> {
        let assignment = position_partitions(&self.spec, &self.consumer, &mut self.runs, gaps)?;
        let queue = self.open_queue(wake)?;
        self.consumer
            .incremental_assign(&assignment)
            .map_err(kafka_err(&self.spec.name, "assign partitions"))?;
        self.assigned = self.runs.iter().map(|r| r.tp.clone()).collect();
        Ok(queue)
    }

    /// One step of the copy: a turn ([`CopyLoop::turn`]), then the offset syncs, the checks
    /// and a commit when one is due. Breaks at the deadline, when caught up, or at a failure;
    /// an `Err` aborts the task (nothing more is committed). While a commit is unconfirmed the
    /// task copies on up to [`COMMIT_AFTER_BYTES`] past it; a commit left on its way across a
    /// freeze lands at the thaw, possibly after a successor's, where its fence keeps it from
    /// moving the stored offset back (`docs/connect-offsets.md`).
    fn step(
        &mut self,
        hooks: &mut dyn TaskHooks,
        queue: &TaskQueue<MirrorContext>,
        mut syncs: Option<&mut OffsetSyncSender>,
        outcome: &mut TaskOutcome,
    ) -> Result<ControlFlow<Stop, Turn>, TaskError> {
        let spec = self.spec.clone();
        self.last_step = Instant::now();
        if self.last_step >= spec.stop_at {
            return Ok(ControlFlow::Break(Stop::Done));
        }
        // Unconfirmed, the commit stops the copy only once another COMMIT_AFTER_BYTES were
        // acknowledged (see `bytes_due`).
        if !self.settle_commit(hooks, false, syncs.as_deref_mut(), outcome)? && self.bytes_due() {
            return Ok(ControlFlow::Continue(Turn::CommitPending));
        }
        if self.runs.iter().all(|r| r.done || r.at_end) && self.confirm_due() {
            if confirm_at_end(&self.consumer, &mut self.runs) {
                return Ok(ControlFlow::Break(Stop::Done));
            }
            self.next_confirm = Some(Instant::now() + CONFIRM_RETRY);
        }
        self.owned_until = hooks.owned_until();
        let progressed = match self.turn(hooks, queue, &mut outcome.gaps) {
            Ok(progressed) => progressed,
            Err(e @ TaskError::LeaseLost { .. }) => return Err(e),
            Err(e) => return Ok(ControlFlow::Break(Stop::Failed(e))),
        };
        // Offset syncs are writes too: only while the lease holds (as of this turn).
        if !self.owned_now() {
            return Err(self.lease_lost());
        }
        feed_syncs(&self.tracker, &self.runs, syncs, None);
        if let Some(failure) = first_failure(&spec.name, &self.tracker, &self.runs) {
            return Ok(ControlFlow::Break(Stop::Failed(failure)));
        }
        if self.tracker.lock().expect("ack tracker poisoned").purged > 0 {
            // Another task of the slice lost its lease and purged the shared producer:
            // nothing copied after the hole can be committed, so stop and commit up to it.
            tracing::warn!(task = %spec.name, "records purged from the shared producer; stopping early");
            return Ok(ControlFlow::Break(Stop::Done));
        }
        if self.in_flight.is_none() && self.commit_due() {
            self.check_owner(hooks)?;
            let promote = self.promotion_due();
            self.start_commit(hooks, promote)?;
            return Ok(ControlFlow::Continue(Turn::CommitPending));
        }
        Ok(ControlFlow::Continue(match progressed {
            true => Turn::Progressed,
            // Not idle: an idle copy thread sleeps IDLE_WAIT, which would delay the commit's
            // confirmation (and the syncs it promotes) for a caught-up task.
            false if self.in_flight.is_some() => Turn::CommitPending,
            false => Turn::Idle,
        }))
    }

    /// One turn: drive the clients' callbacks, forward up to [`BURST`] records and events of
    /// the task's queue, and check partitions that stay silent. True when any event arrived.
    fn turn(
        &mut self,
        hooks: &mut dyn TaskHooks,
        queue: &TaskQueue<MirrorContext>,
        gaps: &mut Vec<Gap>,
    ) -> Result<bool, TaskError> {
        let spec = self.spec.clone();
        // The consumer's main queue carries errors and statistics, never records: with the
        // partitions forwarded to the task's queue before assign, a record here would be
        // copied out of order. It is the slice's, polled by every task: every few turns is
        // often enough.
        self.turns = self.turns.wrapping_add(1);
        let main_queue_due = self.turns % MAIN_QUEUE_EVERY == 1;
        match main_queue_due
            .then(|| self.consumer.poll(Duration::ZERO))
            .flatten()
        {
            Some(Err(e)) => tracing::warn!(task = %spec.name, error = %e, "consumer error"),
            Some(Ok(m)) => {
                return Err(TaskError::Config(format!(
                    "{}: record {}-{}@{} arrived outside its partition queue",
                    spec.name,
                    m.topic(),
                    m.partition(),
                    m.offset()
                )))
            }
            None => {}
        }

        // librdkafka clears the forwarding when it stops a partition it assigns again, but
        // possibly only after the assign returns: forward again until the partition's first
        // record or event shows it stands.
        for (idx, run) in self.runs.iter().enumerate() {
            if run.reassigned {
                queue.forward_again(idx);
            }
        }
        let progressed = self.drain(hooks, queue, gaps)?;
        for run in self.runs.iter_mut() {
            if let Some(gap) = silent_gap(&spec, &self.consumer, run)? {
                apply_gap(&spec, &self.consumer, run, gap, gaps)?;
            }
        }
        Ok(progressed)
    }

    /// Forwards up to [`BURST`] records and events taken from the task's queue at once, each
    /// partition's in order. True when any arrived.
    fn drain(
        &mut self,
        hooks: &mut dyn TaskHooks,
        queue: &TaskQueue<MirrorContext>,
        gaps: &mut Vec<Gap>,
    ) -> Result<bool, TaskError> {
        // Once per batch, not per record: a freeze mid-batch lets at most the rest of the
        // batch through after it thaws (see the README's Guarantees).
        if !self.owned_now() {
            return Err(self.lease_lost());
        }
        let mut batch = std::mem::take(&mut self.batch);
        // Cleared before the take: what arrives after it sets the flag again.
        self.ready.store(false, Ordering::Release);
        queue.take(&mut batch, BURST);
        if batch.len() == BURST {
            self.ready.store(true, Ordering::Release); // more may be waiting
        }
        let progressed = !batch.is_empty();
        let drained = self.forward_batch(hooks, &mut batch, gaps);
        batch.clear(); // destroys what was not forwarded
        self.batch = batch;
        drained.map(|()| progressed)
    }

    /// Forwards a batch, a burst at a time: the records of one partition that follow each
    /// other. At an out-of-range error or a partition failure the partition's other records
    /// in the batch are dropped: records fetched before a re-position (or for a stopped
    /// partition) must not be copied. So are records of a partition already done.
    fn forward_batch(
        &mut self,
        hooks: &mut dyn TaskHooks,
        batch: &mut Vec<FetchedMessage>,
        gaps: &mut Vec<Gap>,
    ) -> Result<(), TaskError> {
        // Partitions stopped or re-positioned in this batch (rarely more than none).
        let mut dropped: Vec<usize> = Vec::new();
        let mut burst = std::mem::take(&mut self.burst);
        let mut records = batch.drain(..).peekable();
        let mut result = Ok(());
        while let Some(first) = records.next() {
            let source = first.source();
            burst.push(first);
            while let Some(next) = records.next_if(|m| m.source() == source) {
                burst.push(next);
            }
            let idx = match self.run_of(&burst[0]) {
                Ok(idx) => idx,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            if self.runs[idx].done || dropped.contains(&idx) {
                burst.clear(); // fetched before the partition stopped or moved
                continue;
            }
            // A record or event forwarded to us after a re-assign: the forwarding stands.
            self.runs[idx].reassigned = false;
            // Empties `burst` whatever it returns.
            match self.forward_burst(hooks, idx, &mut burst, gaps) {
                Ok(true) => {}
                Ok(false) => dropped.push(idx),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        drop(records); // destroys what was not forwarded after an error
        burst.clear();
        self.burst = burst;
        result
    }

    /// The index of the run `msg` belongs to: one of this task's partitions, or the task's
    /// queue got what it must not.
    fn run_of(&mut self, msg: &FetchedMessage) -> Result<usize, TaskError> {
        let (topic_handle, partition) = msg.source();
        let key = (topic_handle as usize, partition);
        if let Some(idx) = self.run_index.get(&key) {
            return Ok(*idx);
        }
        let topic = msg.topic();
        let idx = (self.runs.iter())
            .position(|r| Some(r.tp.0.as_str()) == topic && r.tp.1 == partition)
            .ok_or_else(|| {
                TaskError::Config(format!(
                    "{}: the task's queue got {} of {}-{partition}, not one of its partitions",
                    self.spec.name,
                    msg.error().map_or("a record".into(), |e| e.to_string()),
                    topic.unwrap_or("(no topic)"),
                ))
            })?;
        self.run_index.insert(key, idx);
        Ok(idx)
    }

    /// Forwards the records of partition `idx` in `burst`. False when it stopped early: the
    /// partition was re-positioned or failed, and the rest of the burst must not be copied.
    fn forward_burst(
        &mut self,
        hooks: &mut dyn TaskHooks,
        idx: usize,
        burst: &mut Vec<FetchedMessage>,
        gaps: &mut Vec<Gap>,
    ) -> Result<bool, TaskError> {
        let spec = self.spec.clone();
        let mut limit = WaitLimit::new(self.owned_until, spec.flush_deadline);
        for msg in burst.drain(..) {
            let run = &mut self.runs[idx];
            match msg.error() {
                None => {
                    let sent = forward(
                        &self.slot,
                        &self.topics[idx],
                        run,
                        idx,
                        &msg,
                        &self.tracker,
                        &mut limit,
                        hooks,
                    );
                    self.owned_until = limit.owned_until;
                    if let Err(e) = sent {
                        if !self.owned_now() {
                            return Err(self.lease_lost());
                        }
                        let remote = &self.runs[idx].remote;
                        // Only at the deadline does a full queue end the copy (see `produce`).
                        let what = match &e {
                            KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull) => format!(
                                "produce to {remote}: the producer queue stayed full up to the \
                                 slice's deadline (the target acknowledged nothing)"
                            ),
                            _ => format!("produce to {remote}"),
                        };
                        return Err(TaskError::Kafka {
                            task: spec.name.clone(),
                            what,
                            source: Box::new(e),
                        });
                    }
                }
                Some(KafkaError::PartitionEOF(_)) => {
                    // Records fetched after it may follow in the burst: they clear `at_end`.
                    run.at_end = true;
                    run.silent_since = None;
                    if run.next.is_none() {
                        // Positioned by reset policy on an empty log: learn the position.
                        run.next = position_of(&self.consumer, &run.tp);
                        run.report.start_offset = run.next;
                    }
                }
                // With `auto.offset.reset=error` librdkafka reports a fetch out of range as
                // `__AUTO_OFFSET_RESET` (the "reset" it applies is the error), not as the
                // broker's OFFSET_OUT_OF_RANGE: retention passed our position mid-slice.
                Some(KafkaError::MessageConsumption(
                    RDKafkaErrorCode::OffsetOutOfRange | RDKafkaErrorCode::AutoOffsetReset,
                )) => {
                    let gap = out_of_range_gap(&self.consumer, &spec, run)?;
                    apply_gap(&spec, &self.consumer, run, gap, gaps)?;
                    return Ok(false);
                }
                Some(e) => {
                    self.fail_partition(idx, &e);
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// A consumer error for partition `idx` stops that partition, loudly: its report carries
    /// the error and the task ends FAILED, while the other partitions go on to the end of the
    /// slice. What it copied before the error is still committed. (MM2 logs such errors and
    /// polls on, §7.2, which stalls or skips the partition unreported.) librdkafka retries
    /// the transient ones itself (leader moves, a broker restarting) and passes on only those
    /// it cannot: authorization, a corrupt or undecodable batch, an unknown topic.
    fn fail_partition(&mut self, idx: usize, error: &KafkaError) {
        let run = &mut self.runs[idx];
        let reason = error.to_string();
        tracing::error!(task = %self.spec.name, topic = %run.tp.0, partition = run.tp.1,
            next_offset = ?run.next, error = %reason, "source partition failed");
        run.done = true;
        run.report.error = Some(reason);
        // Its queue is no longer drained: stop fetching into it.
        let tp = run.tp.clone();
        self.unassign(&[tp]);
    }

    /// Takes `partitions` out of the consumer's assignment: no more is fetched for them.
    fn unassign(&mut self, partitions: &[TopicPartition]) {
        let mut tpl = TopicPartitionList::new();
        for (topic, partition) in partitions {
            tpl.add_partition(topic, *partition);
        }
        self.assigned.retain(|tp| !partitions.contains(tp));
        if let Err(e) = self.consumer.incremental_unassign(&tpl) {
            tracing::warn!(task = %self.spec.name, error = %e, "could not unassign partitions");
        }
    }

    /// Takes every partition of this task out of the consumer's assignment.
    fn unassign_all(&mut self) {
        let assigned = std::mem::take(&mut self.assigned);
        if !assigned.is_empty() {
            self.unassign(&assigned);
        }
    }

    /// Commits what is acknowledged and not yet committed, and waits for it.
    fn commit(
        &mut self,
        hooks: &mut dyn TaskHooks,
        syncs: Option<&mut OffsetSyncSender>,
        promote: bool,
        outcome: &mut TaskOutcome,
    ) -> Result<(), TaskError> {
        self.start_commit(hooks, promote)?;
        self.settle_commit(hooks, true, syncs, outcome).map(|_| ())
    }

    /// Hands what is acknowledged and not yet committed to the hooks, without waiting; with
    /// `promote` (§7.4), its confirmation makes the latest offset sync of every partition due.
    fn start_commit(&mut self, hooks: &mut dyn TaskHooks, promote: bool) -> Result<(), TaskError> {
        debug_assert!(self.in_flight.is_none(), "one commit at a time");
        self.last_commit = Instant::now();
        self.acked_at_commit = self.acked_bytes();
        let offsets = committable(&self.tracker, &self.runs, &self.committed);
        if !offsets.is_empty() {
            hooks.start_commit(offsets.clone())?;
        }
        self.in_flight = Some(CommitInFlight { offsets, promote });
        Ok(())
    }

    /// Settles the commit in flight, if any, waiting for it with `wait`. True when none is left
    /// in flight: its offsets count as committed, and promoted syncs go out.
    fn settle_commit(
        &mut self,
        hooks: &mut dyn TaskHooks,
        wait: bool,
        syncs: Option<&mut OffsetSyncSender>,
        outcome: &mut TaskOutcome,
    ) -> Result<bool, TaskError> {
        let Some(commit) = &self.in_flight else {
            return Ok(true);
        };
        let confirmed = match commit.offsets.is_empty() {
            true => Ok(()),
            false => match hooks.commit_outcome(wait) {
                Some(confirmed) => confirmed,
                None => return Ok(false),
            },
        };
        let commit = self.in_flight.take().expect("a commit in flight");
        confirmed?;
        self.committed.extend(commit.offsets);
        outcome.commits += 1;
        if commit.promote {
            self.last_promotion = Instant::now();
        }
        if let Some(s) = syncs {
            s.committed(commit.promote);
        }
        Ok(true)
    }

    /// Whether a step at `now` has anything to do: records or events arrived, a commit or a
    /// re-assigned partition waits, or [`IDLE_WAIT`] passed since the last step (deadline,
    /// acknowledgements, silent partitions, commits by time). A slice's copy thread skips the
    /// other tasks: eight tasks, one of them with records, cost seven empty steps per batch.
    fn wants_step(&self, now: Instant) -> bool {
        self.ready.load(Ordering::Acquire)
            || self.in_flight.is_some()
            || now >= self.last_step + IDLE_WAIT
            || self.runs.iter().any(|r| r.reassigned)
    }

    /// Whether an end-of-partition may be confirmed now: the first time at once, again only
    /// after [`CONFIRM_RETRY`]. Each confirmation is a request that waits behind the
    /// consumer's held fetch, on the thread every task of the slice copies on.
    fn confirm_due(&self) -> bool {
        self.next_confirm.is_none_or(|t| Instant::now() >= t)
    }

    /// A commit is due every flush interval, and as soon as [`COMMIT_AFTER_BYTES`] were
    /// acknowledged since the last one: a kill re-copies what was acknowledged since the last
    /// commit, so at full speed that is bounded by bytes (and one commit's round trip), not by
    /// the interval; a slow copy commits on the interval alone.
    fn commit_due(&self) -> bool {
        self.last_commit.elapsed() >= self.spec.flush_interval || self.bytes_due()
    }

    /// Whether [`COMMIT_AFTER_BYTES`] were acknowledged since the last commit started. Then a
    /// commit is due; and a commit still unconfirmed stops the copy, which otherwise goes on
    /// during its round trip, so a kill re-copies at most twice that (and what the producer
    /// holds). Waiting for every commit before copying on left the producer short of records
    /// after each round trip: one task at 512 B copied 1.23-1.30x the pipe's speed at
    /// 0.67-0.74x its CPU per GB instead of 1.08-1.17x at 0.77-0.81x (two batches); at 10 KiB
    /// 1.14x instead of 1.04x at the same CPU (docs/throughput.md, "Copying on while a commit
    /// is confirmed").
    fn bytes_due(&self) -> bool {
        self.acked_bytes() >= self.acked_at_commit + COMMIT_AFTER_BYTES
    }

    fn acked_bytes(&self) -> u64 {
        self.tracker
            .lock()
            .expect("ack tracker poisoned")
            .acked_bytes
    }

    /// Whether the next commit promotes the delayed offset syncs: Java does at every commit
    /// (§7.4), mirrorslice at most every [`SYNC_PROMOTION_INTERVAL`] or flush interval. Its
    /// commits are more frequent, and each promotion writes a sync per partition that moved
    /// to the offset-syncs topic, which every checkpoint slice reads from its beginning.
    fn promotion_due(&self) -> bool {
        self.last_promotion.elapsed() >= self.spec.flush_interval.max(SYNC_PROMOTION_INTERVAL)
    }

    /// Flushes, then commits exactly what was acknowledged and sends the slice's last syncs.
    /// Every wait ends by the flush deadline or the lease's validity, whichever comes first;
    /// a lease lost on the way commits nothing and drops what is still queued.
    fn finish(
        mut self,
        hooks: &mut dyn TaskHooks,
        mut syncs: Option<&mut OffsetSyncSender>,
        stop: Stop,
        outcome: &mut TaskOutcome,
    ) -> Result<(), TaskError> {
        let spec = self.spec.clone();
        self.owned_until = hooks.owned_until();
        self.flush_records(hooks);
        let result = match stop {
            Stop::Done => first_failure(&spec.name, &self.tracker, &self.runs)
                .or_else(|| partition_failure(&spec.name, &self.runs))
                .map_or(Ok(()), Err),
            Stop::Failed(e) => Err(e),
        };
        let fenced = self.check_owner(hooks).and_then(|()| {
            let until = self.wait_until(spec.flush_deadline);
            feed_syncs(&self.tracker, &self.runs, syncs.as_deref_mut(), Some(until));
            self.check_owner(hooks)
        });
        if let Err(lost) = fenced {
            self.abandon(syncs);
            outcome.partitions = self.early_reports();
            return Err(lost);
        }
        if let Some(s) = syncs.as_deref_mut() {
            // Syncs held back by the in-flight bound go out before the commit's promotion can
            // replace them: MM2 would have fired them before its next commit.
            s.send_all_pending();
        }
        let promote = spec.sync_every_commit || self.promotion_due();
        self.commit(hooks, syncs.as_deref_mut(), promote, outcome)?;
        if let Some(s) = syncs {
            // Offset syncs of the final commit are part of the slice: flush them before exiting,
            // while the lease (as it stands after the commit's wait) holds.
            self.owned_until = hooks.owned_until();
            s.finish(self.wait_until(spec.flush_deadline));
        }
        outcome.partitions = self.final_reports();
        result
    }

    /// Waits for this task's deliveries until the flush deadline (or the lease's end). The
    /// producer is shared, so this waits for the task's own records to be reported instead of
    /// flushing it: other tasks may still be sending.
    fn flush_records(&mut self, hooks: &mut dyn TaskHooks) {
        let mut limit = WaitLimit::new(self.owned_until, self.spec.flush_deadline);
        let flushed = loop {
            if self.outstanding() == 0 {
                break true;
            }
            if limit.reached(hooks) {
                break false;
            }
            std::thread::sleep(DELIVERY_WAIT);
        };
        self.owned_until = limit.owned_until;
        if !flushed {
            // Out of time: drop what librdkafka has not sent yet, so those records cannot land
            // after the commit and be copied again by the next slice. Requests already in
            // flight may still succeed; they are the only possible duplicates (at-least-once).
            // The slice's other tasks are at the same deadline (or their own lease's end).
            tracing::warn!(task = %self.spec.name, "producer flush incomplete; purging unsent records, which the next slice replicates");
            self.slot.producer().purge(PurgeConfig::default().queue());
            let reported = Instant::now() + PURGE_REPORTS;
            while self.outstanding() > 0 && Instant::now() < reported {
                std::thread::sleep(DELIVERY_WAIT);
            }
        }
    }

    /// Records of this task handed to the producer and not yet reported.
    fn outstanding(&self) -> usize {
        self.tracker
            .lock()
            .expect("ack tracker poisoned")
            .outstanding
    }

    /// Figures count only what was acknowledged and committed. A partition is caught up when
    /// the consumer reached its end AND everything read was acknowledged: a slice that ran out
    /// of time with records in flight is not caught up, whatever the consumer saw.
    fn final_reports(&mut self) -> Vec<PartitionReport> {
        let acks = self.tracker.lock().expect("ack tracker poisoned");
        for (idx, run) in self.runs.iter_mut().enumerate() {
            let p = &acks.partitions[idx];
            fill_acked(&mut run.report, p);
            run.report.end_offset = committed_next(&self.committed, run).or(run.next);
            run.report.caught_up =
                run.at_end && !run.done && p.in_flight.is_empty() && p.failure.is_none();
        }
        drop(acks);
        // Records read but not acknowledged are lag for certain; the broker's end offset may
        // show more (some brokers list it low, so take the larger). One request for every
        // lagging partition, and never past the flush deadline.
        let lagging: Vec<TopicPartition> = self
            .runs
            .iter()
            .filter(|r| !r.report.caught_up)
            .map(|r| r.tp.clone())
            .collect();
        let budget = self
            .spec
            .flush_deadline
            .saturating_duration_since(Instant::now())
            .min(LAG_PROBE_TIMEOUT);
        let listed = if lagging.is_empty() || budget.is_zero() {
            Default::default()
        } else {
            listed_offsets(&self.consumer, &lagging, Offset::End, budget).unwrap_or_default()
        };
        for run in &mut self.runs {
            let next = committed_next(&self.committed, run);
            let lag = match (next, run.next.max(listed.get(&run.tp).copied())) {
                _ if run.report.caught_up => Some(0),
                (Some(n), Some(end)) => Some((end - n).max(0)),
                (None, Some(end)) => Some(end.max(0)),
                _ => None,
            };
            run.report.lag = lag;
        }
        self.reports()
    }

    /// Partition reports of a task that stops early (its lease is lost): what reached the
    /// target (acknowledged records, which the next slice copies again as it resumes from the
    /// last commit) and where the committed position ends. Nothing is caught up.
    fn early_reports(&self) -> Vec<PartitionReport> {
        let acks = self.tracker.lock().expect("ack tracker poisoned");
        self.runs
            .iter()
            .zip(&acks.partitions)
            .map(|(run, p)| {
                let mut report = run.report.clone();
                fill_acked(&mut report, p);
                report.end_offset = committed_next(&self.committed, run);
                report.caught_up = false;
                report
            })
            .collect()
    }

    /// Refreshes the lease's validity; an error when it no longer holds.
    fn check_owner(&mut self, hooks: &mut dyn TaskHooks) -> Result<(), TaskError> {
        self.owned_until = hooks.owned_until();
        if self.owned_now() {
            Ok(())
        } else {
            Err(self.lease_lost())
        }
    }

    /// Whether the lease held as of the last check is still within its validity.
    fn owned_now(&self) -> bool {
        self.owned_until.is_some_and(|t| Instant::now() < t)
    }

    fn lease_lost(&self) -> TaskError {
        TaskError::lease_lost(&self.spec.name)
    }

    /// When a wait for deliveries must end: at `deadline`, or earlier when the lease's
    /// validity ends first.
    fn wait_until(&self, deadline: Instant) -> Instant {
        self.owned_until.map_or(deadline, |t| t.min(deadline))
    }

    /// The lease is lost: drop every record and offset sync not yet delivered (the new owner
    /// copies them from our last commit), so nothing of ours lands after this point but
    /// requests already on the wire.
    ///
    /// The data producer is the slice's: its other tasks lose their queued records too. Those
    /// stay unacknowledged (never committed past), and each of those tasks stops copying as
    /// soon as it sees the hole (see [`CopyLoop::run`]).
    fn abandon(&self, syncs: Option<&mut OffsetSyncSender>) {
        (self.slot.producer()).purge(PurgeConfig::default().queue().inflight());
        if let Some(s) = syncs {
            s.purge();
        }
    }

    fn reports(&self) -> Vec<PartitionReport> {
        self.runs.iter().map(|r| r.report.clone()).collect()
    }
}

/// The committed position + 1 (where the next slice resumes), or where this one started.
fn committed_next(committed: &BTreeMap<TopicPartition, i64>, run: &PartitionRun) -> Option<i64> {
    committed
        .get(&run.tp)
        .map(|o| o + 1)
        .or(run.report.start_offset)
}

/// A report's figures from what its partition had acknowledged.
fn fill_acked(report: &mut PartitionReport, acks: &PartitionAcks) {
    report.records = acks.acked_records;
    report.bytes = acks.acked_bytes;
    report.newest_record_timestamp_ms = acks.newest_timestamp;
    report.oldest_record_timestamp_ms = acks.oldest_timestamp;
}

/// Produce one consumed record to the same partition of the remote topic, byte for byte. A
/// full producer queue is waited out until `limit` is reached (the flush deadline, or the
/// lease's end) and no longer: then the record is never handed over, and stays uncommitted.
#[allow(clippy::too_many_arguments)]
fn forward(
    slot: &TaskSlot,
    topic: &TopicHandle,
    run: &mut PartitionRun,
    idx: usize,
    msg: &FetchedMessage,
    tracker: &Arc<Mutex<AckTracker>>,
    limit: &mut WaitLimit,
    hooks: &mut dyn TaskHooks,
) -> Result<(), KafkaError> {
    let upstream = msg.offset();
    let timestamp = msg.timestamp();
    let size = msg.size() as u64;
    let mut headers = RecordHeaders::detach(msg);
    let seq = (tracker.lock().expect("ack tracker poisoned")).sent(idx, upstream, size, timestamp);
    loop {
        match slot.send(topic, run.tp.1, msg, &mut headers, timestamp, idx, seq) {
            Ok(()) => break,
            Err(RDKafkaErrorCode::QueueFull) => {
                if limit.reached(hooks) {
                    tracker.lock().expect("ack tracker poisoned").purged();
                    return Err(KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull));
                }
                // Back-pressure: let deliveries drain, then retry the same record.
                std::thread::sleep(DELIVERY_WAIT);
            }
            Err(code) => {
                // Never sent: forget it so it cannot block the committable offset.
                let e = KafkaError::MessageProduction(code);
                let mut t = tracker.lock().expect("ack tracker poisoned");
                t.completed(idx, seq, Err(e.to_string()));
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
    for (idx, up, down) in round_robin(&acked, runs.len()) {
        let tp = &runs[idx].tp;
        syncs.record_acknowledged(&tp.0, tp.1, up, down);
        if let Some(deadline) = wait_until {
            syncs.wait_for_room(deadline);
        }
    }
    syncs.fire();
}

/// `acked` (partition index, upstream, downstream) reordered round-robin across partitions,
/// each partition's in order: its first of every partition (by index), then its second, ...
fn round_robin(acked: &[(usize, i64, i64)], partitions: usize) -> Vec<(usize, i64, i64)> {
    // Bucket by partition, keeping order (a counting sort), then take one from each in turn.
    let mut start = vec![0usize; partitions + 1];
    for &(idx, _, _) in acked {
        start[idx + 1] += 1;
    }
    for i in 0..partitions {
        start[i + 1] += start[i];
    }
    let mut next = start.clone();
    let mut bucketed = vec![(0, 0, 0); acked.len()];
    for &entry in acked {
        bucketed[next[entry.0]] = entry;
        next[entry.0] += 1;
    }
    let mut cursors: Vec<(usize, usize)> = (0..partitions)
        .map(|i| (start[i], start[i + 1]))
        .filter(|(at, end)| at < end)
        .collect();
    let mut out = Vec::with_capacity(acked.len());
    while !cursors.is_empty() {
        for (at, _) in cursors.iter_mut() {
            out.push(bucketed[*at]);
            *at += 1;
        }
        cursors.retain(|(at, end)| at < end);
    }
    out
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

/// The task's error when partitions failed ([`CopyLoop::fail_partition`]): the first, and how
/// many others (each partition's report names its own).
fn partition_failure(task: &str, runs: &[PartitionRun]) -> Option<TaskError> {
    let mut failed = runs
        .iter()
        .filter_map(|r| r.report.error.as_ref().map(|e| (r, e)));
    let (run, reason) = failed.next()?;
    let others = failed.count();
    let mut reason = reason.clone();
    if others > 0 {
        reason.push_str(&format!(" (and {others} more partitions failed)"));
    }
    Some(TaskError::Partition {
        task: task.to_string(),
        topic: run.tp.0.clone(),
        partition: run.tp.1,
        offset: run.next.map_or_else(|| "?".into(), |o| o.to_string()),
        reason,
    })
}

/// Each partition's committable offset where it differs from what is committed.
fn committable(
    tracker: &Arc<Mutex<AckTracker>>,
    runs: &[PartitionRun],
    committed: &BTreeMap<TopicPartition, i64>,
) -> BTreeMap<TopicPartition, i64> {
    let t = tracker.lock().expect("ack tracker poisoned");
    t.partitions
        .iter()
        .enumerate()
        .filter_map(|(idx, p)| p.committable.map(|o| (runs[idx].tp.clone(), o)))
        .filter(|(tp, o)| committed.get(tp) != Some(o))
        .collect()
}

/// When a wait for the producer must end: at the flush deadline, or when the lease stops being
/// trusted if that comes first. The lease's validity is asked again when reached, because a
/// renewal in the background extends it: a target that stalls for longer than a renewal period
/// must not pass for a lost lease.
struct WaitLimit {
    owned_until: Option<Instant>,
    deadline: Instant,
}

impl WaitLimit {
    fn new(owned_until: Option<Instant>, deadline: Instant) -> Self {
        WaitLimit {
            owned_until,
            deadline,
        }
    }

    fn until(&self) -> Instant {
        self.owned_until
            .map_or(self.deadline, |t| t.min(self.deadline))
    }

    /// Whether the wait must end now; asks `hooks` for the lease's current validity first.
    fn reached(&mut self, hooks: &mut dyn TaskHooks) -> bool {
        if Instant::now() < self.until() {
            return false;
        }
        self.owned_until = hooks.owned_until();
        self.owned_until
            .is_none_or(|t| Instant::now() >= t.min(self.deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::round_robin;

    #[test]
    fn acknowledgements_are_handed_over_round_robin_each_partition_in_order() {
        // Delivered batch by batch: partition 1's, then 0's, then 1's again, then 3's.
        let acked = [
            (1, 10, 0),
            (1, 11, 1),
            (0, 5, 0),
            (1, 12, 2),
            (3, 7, 0),
            (3, 8, 1),
        ];
        let order: Vec<(usize, i64)> = round_robin(&acked, 4)
            .into_iter()
            .map(|(idx, up, _)| (idx, up))
            .collect();
        assert_eq!(
            order,
            vec![(0, 5), (1, 10), (3, 7), (1, 11), (3, 8), (1, 12)]
        );
        assert!(round_robin(&[], 4).is_empty());
    }
}
