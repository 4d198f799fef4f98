//! MirrorSourceTask against real brokers: byte-exact copy, exact resume, caught-up detection.
//! The offsets store is replaced by an in-memory map here (the slice tests cover the real one).

mod common;

use common::faults::{PrivateServer, Watermarks};
use common::TestRecord;
use mirrorslice::config::Props;
use mirrorslice::connectors::source::task::{
    run_source_task, run_source_task_on, GapPolicy, SliceClients, SourceTaskSpec, TaskError,
    TaskHooks, TaskOutcome, TopicPartition,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Default)]
struct MemoryHooks {
    offsets: BTreeMap<TopicPartition, i64>,
    commits: usize,
    /// The lease is gone: `owned_until` says no.
    lease_lost: bool,
    /// The lease ends once this many commits were made.
    lose_lease_after_commits: Option<usize>,
    /// The lease's validity ends at this instant.
    lease_ends_at: Option<Instant>,
    /// Once set (by the test), the lease's validity ends at the task's next look at it, and
    /// `lease_ends_at` records when.
    end_lease: Option<Arc<AtomicBool>>,
    /// When `run_source_task` returned (set by the test).
    returned_at: Option<Instant>,
    /// The commit on its way, and how often the task asked for its outcome.
    pending: Option<(BTreeMap<TopicPartition, i64>, usize)>,
    /// A commit is confirmed only at the task's look after this many (or when it waits).
    confirm_after_looks: usize,
    /// The commit with this number (1 = the first) fails instead of being confirmed.
    fail_commit: Option<usize>,
    /// How often the task waited for a commit on its way.
    waits: usize,
    /// Commits started at or after `lease_ends_at`.
    started_without_lease: usize,
    /// Commits started so far, and the offsets each one carried.
    started: Vec<BTreeMap<TopicPartition, i64>>,
}

impl TaskHooks for MemoryHooks {
    fn start_commit(&mut self, offsets: BTreeMap<TopicPartition, i64>) -> Result<(), TaskError> {
        assert!(
            self.pending.is_none(),
            "a commit was started while another was on its way"
        );
        self.started_without_lease += usize::from(
            self.lease_ends_at
                .is_some_and(|ended| Instant::now() >= ended),
        );
        self.started.push(offsets.clone());
        self.pending = Some((offsets, 0));
        Ok(())
    }
    fn commit_outcome(&mut self, wait: bool) -> Option<Result<(), TaskError>> {
        let Some((_, looks)) = self.pending.as_mut() else {
            return Some(Ok(()));
        };
        *looks += 1;
        self.waits += usize::from(wait);
        if !wait && *looks <= self.confirm_after_looks {
            return None;
        }
        let (offsets, _) = self.pending.take().expect("pending");
        if self.fail_commit == Some(self.started.len()) {
            return Some(Err(TaskError::Commit {
                task: "test".into(),
                message: "offsets topic refused the write".into(),
            }));
        }
        self.commits += 1;
        self.offsets.extend(offsets);
        Some(Ok(()))
    }
    fn owned_until(&mut self) -> Option<Instant> {
        if self.lease_ends_at.is_none()
            && self
                .end_lease
                .as_ref()
                .is_some_and(|e| e.load(Ordering::SeqCst))
        {
            self.lease_ends_at = Some(Instant::now());
        }
        let lost = self.lease_lost
            || self
                .lose_lease_after_commits
                .is_some_and(|n| self.commits >= n);
        (!lost).then(|| {
            self.lease_ends_at
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600))
        })
    }
}

fn props(pairs: &[(&str, &str)]) -> Props {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn spec(
    source: &str,
    remote: &str,
    partitions: i32,
    stored: &BTreeMap<TopicPartition, i64>,
) -> SourceTaskSpec {
    let stack = common::stack();
    SourceTaskSpec {
        name: "A->B|MirrorSourceConnector-0".into(),
        partitions: (0..partitions).map(|p| (source.to_string(), p)).collect(),
        remote_topics: [(source.to_string(), remote.to_string())].into(),
        stored_offsets: stored.clone(),
        stored_topic_ids: BTreeMap::new(),
        topic_ids: BTreeMap::new(),
        consumer: props(&[("bootstrap.servers", &stack.a)]),
        producer: props(&[("bootstrap.servers", &stack.b)]),
        offset_syncs: None,
        offset_lag_max: 100,
        flush_interval: Duration::from_secs(60),
        stop_at: Instant::now() + Duration::from_secs(30),
        flush_deadline: Instant::now() + Duration::from_secs(40),
        on_gap: GapPolicy::Fail,
        silence_check_after: Duration::from_secs(3),
        sync_every_commit: true,
    }
}

fn tricky_records(partitions: i32, per_partition: usize) -> Vec<TestRecord> {
    let mut out = Vec::new();
    for p in 0..partitions {
        for i in 0..per_partition {
            let key = match i % 3 {
                0 => None,
                _ => Some(format!("k{p}-{i}").into_bytes()),
            };
            let value = match i % 4 {
                0 => None,
                1 => Some(Vec::new()),
                _ => Some(format!("value {p}/{i}").into_bytes()),
            };
            out.push(TestRecord {
                partition: p,
                key,
                value,
                headers: vec![
                    ("dup".into(), Some(b"1".to_vec())),
                    ("dup".into(), Some(b"2".to_vec())),
                    ("null".into(), None),
                ],
                timestamp: Some(1_600_000_000_000 + (p as i64) * 1000 + i as i64),
            });
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_byte_exact_and_resumes_exactly() {
    let stack = common::stack();
    let source = common::unique("task-src");
    let remote = format!("A.{source}");
    let partitions = 6;
    common::create_topic(&stack.a, &source, partitions, &[]).await;
    common::create_topic(&stack.b, &remote, partitions, &[]).await;

    let mut first = tricky_records(partitions, 7);
    // A record near 1 MB.
    first.push(TestRecord {
        partition: 2,
        key: Some(b"big".to_vec()),
        value: Some(vec![0xAB; 900 * 1024]),
        headers: vec![],
        timestamp: Some(1_600_000_999_000),
    });
    common::produce(&stack.a, &source, &first).await;

    let mut hooks = MemoryHooks::default();
    let s = spec(&source, &remote, partitions, &hooks.offsets);
    let outcome = tokio::task::spawn_blocking(move || {
        let o = run_source_task(&s, &mut hooks);
        (o, hooks)
    })
    .await
    .unwrap();
    let (outcome, mut hooks) = outcome;
    assert_eq!(outcome.error, None);
    assert!(outcome.caught_up, "{outcome:?}");
    assert_eq!(outcome.records, first.len() as u64);
    // Stored offsets are the last replicated upstream offset per partition.
    assert_eq!(hooks.offsets.get(&(source.clone(), 0)), Some(&6));
    assert_eq!(hooks.offsets.get(&(source.clone(), 2)), Some(&7));

    let copied = common::consume_n(&stack.b, &remote, first.len(), Duration::from_secs(20)).await;
    let mut expected = first.clone();
    expected.sort_by_key(|r| (r.partition, r.timestamp));
    let got: Vec<TestRecord> = copied.iter().map(|c| c.to_test_record()).collect();
    assert_eq!(
        got, expected,
        "byte-exact copy, same partitions, headers, timestamps"
    );

    // Second slice: more records, resume from the stored offsets, no duplicates.
    let second = tricky_records(partitions, 3);
    common::produce(&stack.a, &source, &second).await;
    let s = spec(&source, &remote, partitions, &hooks.offsets);
    let (outcome, _hooks) = tokio::task::spawn_blocking(move || {
        let o = run_source_task(&s, &mut hooks);
        (o, hooks)
    })
    .await
    .unwrap();
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.records, second.len() as u64);
    // Read to the end of every partition: an extra (duplicate) record would show up here.
    let all = common::consume_all(&stack.b, &remote, partitions).await;
    assert_eq!(
        all.len(),
        first.len() + second.len(),
        "exact union, no duplicates"
    );
    let mut expected_all: Vec<TestRecord> = first.iter().chain(second.iter()).cloned().collect();
    expected_all.sort_by_key(|r| (r.partition, r.timestamp));
    let mut got_all: Vec<TestRecord> = all.iter().map(|c| c.to_test_record()).collect();
    got_all.sort_by_key(|r| (r.partition, r.timestamp));
    assert_eq!(got_all, expected_all);
}

// Fencing: a task whose lease is gone hands nothing to the producer and commits nothing (the
// holder copies those records; a stale task writing them too would only duplicate them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_without_its_lease_writes_and_commits_nothing() {
    let stack = common::stack();
    let source = common::unique("task-lost");
    let remote = format!("A.{source}");
    let partitions = 2;
    common::create_topic(&stack.a, &source, partitions, &[]).await;
    common::create_topic(&stack.b, &remote, partitions, &[]).await;
    let data = tricky_records(partitions, 5);
    common::produce(&stack.a, &source, &data).await;

    let mut hooks = MemoryHooks {
        lease_lost: true,
        ..Default::default()
    };
    let s = spec(&source, &remote, partitions, &hooks.offsets);
    let (outcome, hooks) = tokio::task::spawn_blocking(move || {
        let o = run_source_task(&s, &mut hooks);
        (o, hooks)
    })
    .await
    .unwrap();
    let error = outcome.error.clone().expect("the task stops");
    assert!(error.contains("lease lost"), "{error}");
    assert_eq!(hooks.commits, 0, "nothing committed without the lease");
    assert!(hooks.offsets.is_empty());
    assert!(!outcome.caught_up);
    assert_eq!(outcome.records, 0, "{outcome:?}");
    assert_eq!(
        common::consume_count_quick(&stack.b, &remote, partitions).await,
        0,
        "nothing written to the target without the lease"
    );
    for p in &outcome.partitions {
        assert!(!p.caught_up, "{p:?}");
        assert_eq!(
            p.end_offset,
            Some(0),
            "no commit: the position stays at the start"
        );
    }
}

/// A 40 MB backlog copied by a task whose lease ends as `hooks` says, with commits every
/// `flush_interval`. Returns the outcome, the hooks, and how many records reached the target.
async fn copy_until_the_lease_ends(
    prefix: &str,
    mut hooks: MemoryHooks,
    flush_interval: Duration,
) -> (TaskOutcome, MemoryHooks, Vec<common::ConsumedRecord>) {
    let stack = common::stack();
    let source = common::unique(prefix);
    let remote = format!("A.{source}");
    let (partitions, per_partition) = (2, 20_000);
    common::create_topic(&stack.a, &source, partitions, &[]).await;
    common::create_topic(&stack.b, &remote, partitions, &[]).await;
    let data: Vec<TestRecord> = (0..partitions)
        .flat_map(|p| {
            (0..per_partition).map(move |i| TestRecord {
                partition: p,
                key: Some(format!("k{i}").into_bytes()),
                value: Some(vec![b'x'; 1024]),
                headers: Vec::new(),
                timestamp: Some(1_600_000_000_000 + i as i64),
            })
        })
        .collect();
    common::produce(&stack.a, &source, &data).await;
    let mut s = spec(&source, &remote, partitions, &hooks.offsets);
    s.flush_interval = flush_interval;
    // Connected before the task starts, so that the lease ends within milliseconds of the
    // target holding LEASE_AFTER records: mid-copy whatever the machine's speed.
    let watch = match hooks.end_lease.clone() {
        Some(flag) => {
            let (b, r) = (stack.b.clone(), remote.clone());
            let watcher = tokio::task::spawn_blocking(move || {
                let w = Watermarks::new(&b);
                w.total(&r, partitions);
                w
            });
            Some((flag, watcher.await.unwrap()))
        }
        None => None,
    };
    let task = tokio::task::spawn_blocking(move || {
        let o = run_source_task(&s, &mut hooks);
        hooks.returned_at = Some(Instant::now());
        (o, hooks)
    });
    if let Some((end_lease, w)) = watch {
        let r = remote.clone();
        let limit = Duration::from_secs(30);
        let reached =
            tokio::task::spawn_blocking(move || w.wait_for(&r, partitions, LEASE_AFTER, limit));
        if reached.await.unwrap() {
            end_lease.store(true, Ordering::SeqCst);
        }
    }
    let (outcome, hooks) = task.await.unwrap();
    let on_target = common::consume_all(&stack.b, &remote, partitions).await;
    assert_eq!(data.len(), 40_000);
    (outcome, hooks, on_target)
}

/// Records on the target when a lease-ending test ends the lease.
const LEASE_AFTER: i64 = 2_000;
/// Records that may reach the target after the lease ended: what was in flight at that moment,
/// at most the producer queue (4 MiB of ~1 KiB records) and the rest of one burst per partition.
const IN_FLIGHT_BOUND: usize = 4 * 1024 + 2 * 512;

// The lease runs out mid-copy, long before the next timed flush is due: the task stops handing
// records to the producer at once (not at the next flush), drops what is queued and commits
// nothing more (commits of the first MiBs came before). Unfenced, it copied all 40,000 records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_runs_out_mid_copy_stops_the_writes_at_once() {
    let hooks = MemoryHooks {
        end_lease: Some(Arc::default()),
        ..Default::default()
    };
    let (outcome, hooks, on_target) =
        copy_until_the_lease_ends("task-fenced", hooks, Duration::from_secs(60)).await;
    let error = outcome.error.clone().expect("the task stops");
    assert!(error.contains("lease lost"), "{error}");
    assert_eq!(
        hooks.started_without_lease, 0,
        "no commit after the lease ended"
    );
    assert!(
        on_target.len() < 40_000,
        "the task copied on after its lease ended"
    );
    // Beyond what the task saw acknowledged, only what was in flight reached the target.
    assert!(
        on_target.len() <= outcome.records as usize + IN_FLIGHT_BOUND,
        "{} records on the target, {} acknowledged (in-flight bound {IN_FLIGHT_BOUND})",
        on_target.len(),
        outcome.records
    );
    let (ended, returned) = (
        hooks.lease_ends_at.expect("the lease ended"),
        hooks.returned_at.unwrap(),
    );
    assert!(
        on_target.len() >= LEASE_AFTER as usize,
        "the lease ended mid-copy"
    );
    eprintln!(
        "lease ran out with {LEASE_AFTER} records on the target: task stopped and returned {:?} later; {} \
         acknowledged, {} of 40000 on the target",
        returned.saturating_duration_since(ended),
        outcome.records,
        on_target.len()
    );
}

// The lease is lost right after the first commit: nothing is committed after it, and every
// committed record is on the target (nothing lost); the rest is bounded by what was in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lost_after_a_commit_commits_nothing_more_and_loses_nothing() {
    let hooks = MemoryHooks {
        lose_lease_after_commits: Some(1),
        ..Default::default()
    };
    let (outcome, hooks, on_target) =
        copy_until_the_lease_ends("task-fenced-commit", hooks, Duration::from_millis(50)).await;
    let error = outcome.error.clone().expect("the task stops");
    assert!(error.contains("lease lost"), "{error}");
    assert_eq!(hooks.commits, 1, "no commit after the lease was lost");
    let committed: usize = hooks.offsets.values().map(|o| *o as usize + 1).sum();
    assert!(committed > 0, "the first commit moved: {:?}", hooks.offsets);
    assert!(
        on_target.len() <= committed + IN_FLIGHT_BOUND,
        "{} records on the target, {committed} committed: more than was in flight",
        on_target.len()
    );
    for ((_, p), last) in &hooks.offsets {
        let here = on_target.iter().filter(|r| r.partition == *p).count() as i64;
        assert!(
            here > *last,
            "partition {p}: committed up to {last}, only {here} on the target"
        );
    }
    eprintln!(
        "lease lost after a commit: {committed} committed, {} of 40000 on the target",
        on_target.len()
    );
}

// A task run alone (`run_source_task_on`) confirms each commit before its copy goes on (the
// slice's copy thread copies on meanwhile, up to another 1 MiB): it waits for every one it
// starts, counts it once confirmed, and each carries newer offsets than the one before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_task_confirms_each_commit_before_the_copy_goes_on() {
    let hooks = MemoryHooks {
        confirm_after_looks: 20,
        ..Default::default()
    };
    let (outcome, hooks, on_target) =
        copy_until_the_lease_ends("task-commits", hooks, Duration::from_millis(1)).await;
    assert_eq!(outcome.error, None);
    assert_eq!(on_target.len(), 40_000, "every record copied once");
    let last: BTreeMap<i32, i64> = hooks.offsets.iter().map(|((_, p), o)| (*p, *o)).collect();
    assert_eq!(
        last,
        [(0, 19_999), (1, 19_999)].into(),
        "the last commit is exact"
    );
    assert!(
        hooks.started.len() >= 3,
        "commits during the copy: {}",
        hooks.started.len()
    );
    for pair in hooks.started.windows(2) {
        let moved = pair[1].iter().any(|(tp, o)| pair[0].get(tp) < Some(o));
        assert!(moved, "a commit without progress since the last: {pair:?}");
    }
    assert_eq!(hooks.commits, hooks.started.len(), "each one confirmed");
    assert_eq!(hooks.waits, hooks.started.len(), "each one waited for");
}

// A commit that fails fails the task, and its offsets never count as committed:
// the report ends where the last confirmed commit ends, and nothing is committed after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_counts_nothing_and_fails_the_task() {
    let hooks = MemoryHooks {
        confirm_after_looks: 5,
        fail_commit: Some(2),
        ..Default::default()
    };
    let (outcome, hooks, _) =
        copy_until_the_lease_ends("task-commit-fails", hooks, Duration::from_millis(1)).await;
    let error = outcome.error.clone().expect("the task fails");
    assert!(error.contains("offsets topic refused the write"), "{error}");
    assert_eq!(hooks.started.len(), 2, "nothing started after the failure");
    assert_eq!(hooks.commits, 1);
    for report in &outcome.partitions {
        let confirmed = hooks.started[0].get(&(report.topic.clone(), report.partition));
        assert_eq!(
            report.end_offset,
            Some(confirmed.map_or(0, |o| o + 1)),
            "partition {}: the report ends at the confirmed commit",
            report.partition
        );
    }
}

// A target that refuses an idempotent producer (CLUSTER_AUTHORIZATION_FAILED on
// InitProducerId: a cluster with ACLs older than Kafka 2.8 without IDEMPOTENT_WRITE) makes
// librdkafka raise a fatal error and purge the producer's queue. Those purged records are not
// a slice's own purge at its end: the task fails, naming the cause, and commits nothing.
// librdkafka's mock cluster is the target, since no real broker here refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_refuses_the_idempotent_producer_fails_the_task() {
    use rdkafka::mocking::MockCluster;
    use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
    let stack = common::stack();
    let source = common::unique("task-no-idempotence");
    let remote = format!("A.{source}");
    common::create_topic(&stack.a, &source, 1, &[]).await;
    common::produce(&stack.a, &source, &common::keyed_records(1, 50)).await;
    let target = MockCluster::new(1).unwrap();
    target.create_topic(&remote, 1, 1).unwrap();
    let refused = [RDKafkaRespErr::RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED; 10];
    target.request_errors(RDKafkaApiKey::InitProducerId, &refused);

    let mut s = spec(&source, &remote, 1, &BTreeMap::new());
    // Idempotent as the shared producer of several tasks is (and as a user may choose).
    let bootstrap = target.bootstrap_servers();
    s.producer = props(&[
        ("bootstrap.servers", &bootstrap),
        ("enable.idempotence", "true"),
    ]);
    s.stop_at = Instant::now() + Duration::from_secs(10);
    s.flush_deadline = s.stop_at + Duration::from_secs(5);
    let (outcome, hooks) = tokio::task::spawn_blocking(move || {
        let mut hooks = MemoryHooks::default();
        (run_source_task(&s, &mut hooks), hooks)
    })
    .await
    .unwrap();
    let error = (outcome.error.clone()).unwrap_or_else(|| panic!("the task fails: {outcome:?}"));
    assert!(
        error
            .to_lowercase()
            .contains("cluster authorization failed"),
        "{error}"
    );
    assert_eq!(outcome.records, 0, "{outcome:?}");
    assert!(hooks.offsets.is_empty(), "committed: {:?}", hooks.offsets);
}

// A fast copy commits after every 1 MiB acknowledged, long before the timed flush (60 s here):
// what a kill re-copies is bounded by bytes, not by the interval. 40 MB of 1 KiB records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_copy_commits_after_every_mib_whatever_the_interval() {
    let (outcome, hooks, on_target) = copy_until_the_lease_ends(
        "task-commit-bytes",
        MemoryHooks::default(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(outcome.error, None);
    assert_eq!(on_target.len(), 40_000);
    // A commit carries the partitions that moved: the position is what all of them add up to.
    let mut position = BTreeMap::new();
    let covered: Vec<i64> = (hooks.started.iter())
        .map(|c| {
            position.extend(c.clone());
            position.values().map(|o| o + 1).sum::<i64>()
        })
        .collect();
    // Each commit but the last covers at least 1 MiB (~1,000 records of ~1 KiB) more than the
    // one before. How much more depends on how acknowledgements arrive: a delivery report
    // covers a whole producer batch (`batch.size`, 1,000,000 B), so on a machine where batches
    // fill up the 1 MiB threshold is crossed by the second one (~1,920 records), and acks keep
    // arriving while a commit is confirmed (at most the 4 MiB producer queue). The bound that
    // holds whatever the speed: threshold + one batch + the queue, ~6 MiB. Commits on the
    // 60 s interval alone would leave one gap of 40,000 records.
    for pair in covered[..covered.len() - 1].windows(2) {
        assert!(pair[1] - pair[0] >= 1_000, "commits too close: {covered:?}");
    }
    let widest = covered.windows(2).map(|p| p[1] - p[0]).chain([covered[0]]);
    assert!(
        widest.max() <= Some(6_200),
        "a commit covers more than ~6 MiB: {covered:?}"
    );
    assert_eq!(covered.last(), Some(&40_000));
}

// The slice's tasks share one data producer (and one consumer). A task that loses its lease
// purges that producer
// (so nothing of its own lands later), which drops the records other tasks had queued too:
// those stay unacknowledged, so no task may commit past them, and the next slice copies them.
// The target is frozen while both tasks queue their records, so every one of them is still
// queued or in flight when the purge comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_of_the_shared_producer_is_never_committed_past() {
    let stack = common::stack();
    let target = PrivateServer::broker();
    let source = common::unique("task-shared");
    let remote = format!("A.{source}");
    common::create_topic(&stack.a, &source, 2, &[]).await;
    common::create_topic(&target.bootstrap(), &remote, 2, &[]).await;
    let data = common::keyed_records(2, 2_000);
    common::produce(&stack.a, &source, &data).await;

    let task_spec = |partition: i32, name: &str| {
        let mut s = spec(&source, &remote, 2, &BTreeMap::new());
        s.name = format!("A->B|MirrorSourceConnector-{name}");
        s.partitions = vec![(source.clone(), partition)];
        s.producer = props(&[("bootstrap.servers", &target.bootstrap())]);
        s.flush_deadline = Instant::now() + Duration::from_secs(15);
        s
    };
    let (lost, kept) = (task_spec(0, "0"), task_spec(1, "1"));
    let clients = SliceClients::open(
        "A->B|shared",
        &lost.consumer,
        &lost.producer,
        2,
        lost.offset_syncs.as_ref(),
    )
    .unwrap();
    let clients = Arc::new(clients);
    let frozen = target.freeze();
    let run = |s: SourceTaskSpec, mut hooks: MemoryHooks| {
        let clients = clients.clone();
        tokio::task::spawn_blocking(move || (run_source_task_on(&s, &clients, &mut hooks), hooks))
    };
    let keeper = run(kept, MemoryHooks::default());
    let loser = run(
        lost,
        MemoryHooks {
            lease_ends_at: Some(Instant::now() + Duration::from_secs(2)),
            ..Default::default()
        },
    );
    let (lost_outcome, lost_hooks) = loser.await.unwrap();
    frozen.thaw();
    let (kept_outcome, kept_hooks) = keeper.await.unwrap();

    let error = lost_outcome
        .error
        .expect("the task whose lease ended stops");
    assert!(error.contains("lease lost"), "{error}");
    assert_eq!(lost_hooks.commits, 0);
    assert_eq!(kept_outcome.error, None, "{kept_outcome:?}");
    assert!(
        !kept_outcome.caught_up,
        "its records were purged: {kept_outcome:?}"
    );
    assert_eq!(
        kept_outcome.records, 0,
        "nothing acknowledged: {kept_outcome:?}"
    );
    assert!(
        kept_hooks.offsets.is_empty(),
        "a commit past purged records: {:?}",
        kept_hooks.offsets
    );

    // The next slice copies the kept task's partition from its (empty) position: all of it.
    let mut s = task_spec(1, "1");
    s.stop_at = Instant::now() + Duration::from_secs(20);
    s.flush_deadline = s.stop_at + Duration::from_secs(10);
    let (outcome, _) = tokio::task::spawn_blocking(move || {
        let mut hooks = MemoryHooks::default();
        (run_source_task(&s, &mut hooks), hooks)
    })
    .await
    .unwrap();
    assert!(outcome.caught_up, "{outcome:?}");
    let copied = common::consume_all(&target.bootstrap(), &remote, 2).await;
    let mut firsts: Vec<usize> = Vec::new();
    for r in copied.iter().filter(|r| r.partition == 1) {
        let key = String::from_utf8(r.key.clone().expect("keyed record")).unwrap();
        let i: usize = key.trim_start_matches('k').parse().expect("key k<i>");
        if !firsts.contains(&i) {
            firsts.push(i);
        }
    }
    assert_eq!(
        firsts.len(),
        1_000,
        "every record of partition 1 on the target"
    );
    assert!(
        firsts.windows(2).all(|w| w[0] < w[1]),
        "first copies in source order"
    );
}

// Source batches compressed with every codec Kafka has (the topic's `compression.type` makes
// the broker store them so, whatever the producer sent) are read and copied byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_source_batches_copy_byte_exact() {
    let stack = common::stack();
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        let source = common::unique(&format!("task-{codec}"));
        let remote = format!("A.{source}");
        let partitions = 2;
        common::create_topic(
            &stack.a,
            &source,
            partitions,
            &[("compression.type", codec)],
        )
        .await;
        common::create_topic(&stack.b, &remote, partitions, &[]).await;
        let data = tricky_records(partitions, 20);
        common::produce(&stack.a, &source, &data).await;
        let s = spec(&source, &remote, partitions, &BTreeMap::new());
        let (outcome, _) = tokio::task::spawn_blocking(move || {
            let mut hooks = MemoryHooks::default();
            (run_source_task(&s, &mut hooks), hooks)
        })
        .await
        .unwrap();
        assert_eq!(outcome.error, None, "{codec}: {outcome:?}");
        assert!(outcome.caught_up, "{codec}: {outcome:?}");
        let copied = common::consume_all(&stack.b, &remote, partitions).await;
        let mut got: Vec<TestRecord> = copied.iter().map(|c| c.to_test_record()).collect();
        got.sort_by_key(|r| (r.partition, r.timestamp));
        let mut expected = data.clone();
        expected.sort_by_key(|r| (r.partition, r.timestamp));
        assert_eq!(got, expected, "{codec}: byte-exact copy");
    }
}
