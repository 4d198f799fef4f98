//! MirrorSourceTask against real brokers: byte-exact copy, exact resume, caught-up detection.
//! The offsets store is replaced by an in-memory map here (the slice tests cover the real one).

mod common;

use common::TestRecord;
use mirrorslice::config::Props;
use mirrorslice::connectors::source::task::{
    run_source_task, GapPolicy, SourceTaskSpec, TaskError, TaskHooks, TaskMemory, TopicPartition,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[derive(Default)]
struct MemoryHooks {
    offsets: BTreeMap<TopicPartition, i64>,
    commits: usize,
    /// The lease is gone: `still_owner` says no.
    lease_lost: bool,
}

impl TaskHooks for MemoryHooks {
    fn commit(&mut self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<(), TaskError> {
        self.commits += 1;
        self.offsets
            .extend(offsets.iter().map(|(k, v)| (k.clone(), *v)));
        Ok(())
    }
    fn still_owner(&mut self) -> bool {
        !self.lease_lost
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
        memory: TaskMemory::default(),
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

// A task that loses its lease commits nothing more, and its report still says what reached the
// target (those records are copied again by the next holder: at-least-once, never loss).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_commits_nothing_and_reports_what_was_copied() {
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
    assert!(error.contains("lease"), "{error}");
    assert_eq!(hooks.commits, 0, "nothing committed without the lease");
    assert!(hooks.offsets.is_empty());
    assert!(!outcome.caught_up);
    assert_eq!(outcome.records, data.len() as u64, "{outcome:?}");
    for p in &outcome.partitions {
        assert_eq!(p.records, 5, "{p:?}");
        assert!(p.bytes > 0, "{p:?}");
        assert!(!p.caught_up, "{p:?}");
        assert_eq!(
            p.end_offset,
            Some(0),
            "no commit: the position stays at the start"
        );
    }
}
