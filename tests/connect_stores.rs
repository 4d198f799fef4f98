//! Connect's internal topics and stores against the local brokers.
//!
//! Why: Java MM2 finds our offsets, status and configs only if the records have Connect's exact
//! bytes, sit on the partition Kafka's default partitioner picks, and live in compacted topics
//! with the partition counts Connect expects. And a slice's start-up must stay cheap as history
//! grows (the position hint), without ever missing a record someone else wrote. Each test here
//! checks one of those on a real broker, Apache Kafka or tansu (`MIRRORSLICE_BROKER`; the tests
//! run on both). tansu's quirks — a ListOffsets end that trails the log end, silence when
//! fetching beyond the end — are exactly what the stores must survive; where Kafka answers
//! exactly, the tests expect exact counts.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use common::{consume_all, create_topic, stack, unique};
use mirrorslice::config::Props;
use mirrorslice::connect::config_store::ConfigStore;
use mirrorslice::connect::internal_topics::{
    ensure_compacted_topic, ensure_worker_topics, Creation, TopicError,
};
use mirrorslice::connect::offset_store::{
    LoadedOffsets, OffsetStore, OffsetStoreError, PartitionKey,
};
use mirrorslice::connect::status_store::StatusStore;
use mirrorslice::kafka::internal_log::{self, LogError, BEGINNING};
use mirrorslice::state::{LocalStateStore, StateError, StateStore};
use mirrorslice::wire::connect_config::{self, ConfigRecord};
use mirrorslice::wire::connect_offsets::{offset_value_bytes, offsets_partition, SourcePartition};
use mirrorslice::wire::connect_status::{self, State, Status, StatusRecord};
use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;
use serde_json::Value;

fn props(bootstrap: &str) -> Props {
    let mut p = Props::new();
    p.insert("bootstrap.servers".into(), bootstrap.into());
    p
}

const READ_TIMEOUT: Duration = Duration::from_secs(20);

// Offset syncs are written a few at a time, so their topic holds thousands of one-record
// batches. tansu answers a 1 ms fetch with one batch, and past a few thousand batches with
// none: a read must notice, go on with longer fetches from where it stands, and still return
// every record once, in order (a checkpoint run read 2,832 of 2,958 syncs in 60 s and failed).
#[tokio::test]
async fn internal_log_reads_thousands_of_small_batches_completely() {
    let s = stack();
    let topic = unique("ibatches");
    create_topic(&s.a, &topic, 1, &[]).await;
    let producer: rdkafka::producer::FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &s.a)
        .set("linger.ms", "0")
        .create()
        .unwrap();
    const N: i64 = 3000;
    for i in 0..N {
        // Awaited one by one: one batch per record.
        let key = format!("k{i}");
        let record = rdkafka::producer::FutureRecord::<str, str>::to(&topic)
            .partition(0)
            .key(&key)
            .payload("v");
        producer
            .send(record, Duration::from_secs(10))
            .await
            .unwrap_or_else(|(e, _)| panic!("produce #{i}: {e}"));
    }
    let starts: BTreeMap<i32, i64> = [(0, BEGINNING)].into();
    let got = internal_log::read_to_end(&props(&s.a), &topic, &starts, READ_TIMEOUT)
        .await
        .unwrap();
    let offsets: Vec<i64> = got.iter().map(|r| r.offset).collect();
    assert_eq!(
        offsets,
        (0..N).collect::<Vec<_>>(),
        "every record once, in order"
    );
    for r in &got {
        assert_eq!(r.key.as_deref(), Some(format!("k{}", r.offset).as_bytes()));
    }
}

#[tokio::test]
async fn internal_log_reads_to_the_true_end_despite_trailing_list_offsets() {
    let s = stack();
    let topic = unique("ilog");
    create_topic(&s.b, &topic, 2, &[("cleanup.policy", "compact")]).await;
    let p = props(&s.b);
    // One append = one batch per partition: ListOffsets on tansu then trails by batch size - 1.
    let records: Vec<_> = (0..10)
        .map(|i| {
            (
                i % 2,
                format!("k{i}").into_bytes(),
                Some(format!("v{i}").into_bytes()),
            )
        })
        .collect();
    let positions = internal_log::append(&p, &topic, records.clone())
        .await
        .unwrap();
    assert_eq!(positions.len(), 10);
    for (i, (part, off)) in positions.iter().enumerate() {
        assert_eq!(*part, (i % 2) as i32);
        assert_eq!(*off, (i / 2) as i64, "record #{i}");
    }
    let starts: BTreeMap<i32, i64> = [(0, BEGINNING), (1, 3)].into();
    let got = internal_log::read_to_end(&p, &topic, &starts, READ_TIMEOUT)
        .await
        .unwrap();
    let got: Vec<(i32, i64, Vec<u8>)> = got
        .into_iter()
        .map(|r| (r.partition, r.offset, r.key.unwrap()))
        .collect();
    let mut expected: Vec<(i32, i64, Vec<u8>)> = Vec::new();
    for (i, (part, off)) in positions.iter().enumerate() {
        if *part == 0 || *off >= 3 {
            expected.push((*part, *off, records[i].1.clone()));
        }
    }
    let mut got_sorted = got.clone();
    got_sorted.sort();
    expected.sort();
    assert_eq!(got_sorted, expected);

    // read_to_end_with reports the true end of each partition.
    let ends = internal_log::read_to_end_with(&p, &topic, &starts, READ_TIMEOUT, |_| {})
        .await
        .unwrap();
    assert_eq!(ends, BTreeMap::from([(0, 5), (1, 5)]));
    // Reading from exactly the end returns nothing and finishes.
    let at_end: BTreeMap<i32, i64> = [(0, 5), (1, 5)].into();
    let mut n = 0;
    let ends = internal_log::read_to_end_with(&p, &topic, &at_end, READ_TIMEOUT, |_| n += 1)
        .await
        .unwrap();
    assert_eq!((n, ends), (0, BTreeMap::from([(0, 5), (1, 5)])));
    assert_eq!(
        internal_log::partition_count(&p, &topic, READ_TIMEOUT)
            .await
            .unwrap(),
        2
    );
}

#[tokio::test]
async fn internal_log_read_beyond_the_end_restarts_at_the_log_start_or_times_out() {
    let s = stack();
    let topic = unique("ilog-beyond");
    create_topic(&s.b, &topic, 1, &[]).await;
    let p = props(&s.b);
    internal_log::append(&p, &topic, vec![(0, b"k".to_vec(), Some(b"v".to_vec()))])
        .await
        .unwrap();
    let starts: BTreeMap<i32, i64> = [(0, 100)].into();
    let read = internal_log::read_to_end(&p, &topic, &starts, Duration::from_secs(3)).await;
    if s.is_kafka() {
        // Apache Kafka answers OFFSET_OUT_OF_RANGE and `auto.offset.reset=earliest` restarts the
        // read at the log start: a start past the end (a stale hint) becomes a full read.
        let records = read.unwrap();
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0].offset, 0);
        return;
    }
    // tansu answers such a fetch with nothing at all: the read ends at its timeout, loudly.
    let err = read.unwrap_err();
    let msg = err.to_string();
    match err {
        LogError::ReadTimeout { unfinished, .. } => {
            assert_eq!(unfinished.len(), 1);
            assert_eq!(unfinished[0].partition, 0);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(msg.contains(&topic) && msg.contains("partition 0"), "{msg}");
}

#[tokio::test]
async fn partition_count_of_a_missing_topic_does_not_create_it() {
    let s = stack();
    let topic = unique("ilog-missing");
    let p = props(&s.b);
    let err = internal_log::partition_count(&p, &topic, READ_TIMEOUT)
        .await
        .unwrap_err();
    assert!(matches!(err, LogError::UnknownTopic { .. }), "{err:?}");
    assert_eq!(common::partition_count(&s.b, &topic), None);
}

/// `cleanup.policy` of a topic, as the broker describes it.
async fn cleanup_policy(bootstrap: &str, topic: &str) -> Option<String> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let results = admin
        .describe_configs([&ResourceSpecifier::Topic(topic)], &AdminOptions::new())
        .await
        .unwrap();
    let resource = results.into_iter().next().unwrap().unwrap();
    resource.get("cleanup.policy").and_then(|e| e.value.clone())
}

async fn delete_topic(bootstrap: &str, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let r = admin
        .delete_topics(&[topic], &AdminOptions::new())
        .await
        .unwrap();
    assert!(r.iter().all(|r| r.is_ok()), "delete {topic}: {r:?}");
    // Wait until the metadata no longer lists it.
    for _ in 0..100 {
        if common::partition_count(bootstrap, topic).is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{topic} still listed after delete");
}

/// A worker config as `MirrorMakerConfig::worker_config` gives it, with unique topic names
/// and replication factor 1 (tansu is a single broker).
fn worker(prefix: &str) -> Props {
    let mut w = Props::new();
    for (k, v) in [
        ("offset.storage.topic", unique(&format!("{prefix}-offsets"))),
        ("status.storage.topic", unique(&format!("{prefix}-status"))),
        ("config.storage.topic", unique(&format!("{prefix}-configs"))),
        ("offset.storage.replication.factor", "1".to_string()),
        ("status.storage.replication.factor", "1".to_string()),
        ("config.storage.replication.factor", "1".to_string()),
    ] {
        w.insert(k.to_string(), v);
    }
    w
}

// §2.12 and §3: 25 / 5 / 1 partitions, cleanup.policy=compact; existing topics keep theirs.
#[tokio::test]
async fn worker_topics_are_created_compacted_with_connect_partition_counts() {
    let s = stack();
    let admin = props(&s.b);
    let w = worker("wt");
    let topics = ensure_worker_topics(&w, &admin).await.unwrap();
    assert_eq!(topics.offsets, (w["offset.storage.topic"].clone(), 25));
    assert_eq!(topics.status, (w["status.storage.topic"].clone(), 5));
    assert_eq!(topics.configs, (w["config.storage.topic"].clone(), 1));
    for (name, n) in [&topics.offsets, &topics.status, &topics.configs] {
        assert_eq!(
            common::created_partition_count(&s.b, name),
            Some(*n),
            "{name}"
        );
        assert_eq!(
            cleanup_policy(&s.b, name).await.as_deref(),
            Some("compact"),
            "{name}"
        );
    }
    // Idempotent: a second call finds them.
    assert_eq!(ensure_worker_topics(&w, &admin).await.unwrap(), topics);

    // An existing offsets topic with another partition count is used as it is.
    let mut w2 = worker("wt2");
    w2.insert("status.storage.partitions".into(), "3".into());
    create_topic(
        &s.b,
        &w2["offset.storage.topic"],
        7,
        &[("cleanup.policy", "compact")],
    )
    .await;
    let t2 = ensure_worker_topics(&w2, &admin).await.unwrap();
    assert_eq!((t2.offsets.1, t2.status.1, t2.configs.1), (7, 3, 1));
}

#[tokio::test]
async fn worker_topics_that_are_not_compacted_or_multi_partition_configs_are_refused() {
    let s = stack();
    let admin = props(&s.b);
    let w = worker("wt-bad");
    create_topic(
        &s.b,
        &w["status.storage.topic"],
        5,
        &[("cleanup.policy", "delete")],
    )
    .await;
    let err = ensure_worker_topics(&w, &admin).await.unwrap_err();
    assert!(matches!(err, TopicError::NotCompact { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&w["status.storage.topic"]) && msg.contains("status.storage.topic"),
        "{msg}"
    );

    let w = worker("wt-cfg");
    create_topic(
        &s.b,
        &w["config.storage.topic"],
        2,
        &[("cleanup.policy", "compact")],
    )
    .await;
    let err = ensure_worker_topics(&w, &admin).await.unwrap_err();
    assert!(
        matches!(err, TopicError::ConfigTopicPartitions { partitions: 2, .. }),
        "{err:?}"
    );
}

// §3 createCompactedTopic: created once, then "exists" is fine.
#[tokio::test]
async fn compacted_topic_for_connectors_is_created_once() {
    let s = stack();
    let admin = props(&s.b);
    let topic = unique("heartbeats-like");
    assert_eq!(
        ensure_compacted_topic(&admin, &topic, 1, 1).await.unwrap(),
        Creation::Created
    );
    assert_eq!(
        ensure_compacted_topic(&admin, &topic, 1, 1).await.unwrap(),
        Creation::Existed
    );
    assert_eq!(common::created_partition_count(&s.b, &topic), Some(1));
    assert_eq!(
        cleanup_policy(&s.b, &topic).await.as_deref(),
        Some("compact")
    );
}

fn src(topic: &str, partition: i32) -> SourcePartition {
    SourcePartition::Source {
        cluster: "A".into(),
        topic: topic.into(),
        partition,
    }
}

/// Where Connect puts `sp`'s offsets record on the offsets topic of `partitions` partitions.
fn placed(sp: &SourcePartition, partitions: i32) -> (i32, Vec<u8>) {
    let key = sp.key_bytes("MirrorSourceConnector");
    (offsets_partition(&key, partitions), key)
}

struct OffsetsFixture {
    bootstrap: String,
    topic: String,
    partitions: i32,
    _dir: tempfile::TempDir,
    state: Arc<dyn StateStore>,
}

impl OffsetsFixture {
    async fn new() -> Self {
        let s = stack();
        let w = worker("os");
        let topics = ensure_worker_topics(&w, &props(&s.b)).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let state: Arc<dyn StateStore> = Arc::new(LocalStateStore::new(dir.path()));
        OffsetsFixture {
            bootstrap: s.b.clone(),
            topic: topics.offsets.0,
            partitions: topics.offsets.1,
            _dir: dir,
            state,
        }
    }

    fn store(&self, state: Arc<dyn StateStore>) -> OffsetStore {
        OffsetStore::new(
            &self.topic,
            self.partitions,
            props(&self.bootstrap),
            props(&self.bootstrap),
            state,
            "A->B/MirrorSourceConnector/0/offsets-hint",
        )
        .with_read_timeout(READ_TIMEOUT)
    }

    /// Loads `parts` and commits [`offsets_of`]`(parts, base)` with the fixture's state, so the
    /// next load from it has a hint.
    async fn committed(&self, parts: &[SourcePartition], base: i64) {
        let mut store = self.store(self.state.clone());
        store.load(parts).await.unwrap();
        store.commit(&offsets_of(parts, base)).await.unwrap();
    }

    /// A store with its own empty state: no hint, so a full read.
    fn fresh_store(&self) -> (OffsetStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let state: Arc<dyn StateStore> = Arc::new(LocalStateStore::new(dir.path()));
        (self.store(state), dir)
    }
}

fn offsets_of(parts: &[SourcePartition], base: i64) -> BTreeMap<PartitionKey, i64> {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| (PartitionKey(p.clone()), base + i as i64))
        .collect()
}

// §4.7: commit, then a fresh store (full read) finds the same offsets; records sit on the
// murmur2 partition with Connect's exact key and value bytes.
#[tokio::test]
async fn offsets_commit_then_load_round_trips_on_the_murmur2_partition() {
    let f = OffsetsFixture::new().await;
    let parts: Vec<SourcePartition> = (0..6).map(|p| src("t1", p)).collect();
    let mut store = f.store(f.state.clone());
    let first = store.load(&parts).await.unwrap();
    assert!(first.offsets.is_empty() && first.full_read);
    let offsets = offsets_of(&parts, 40);
    assert_eq!(store.commit(&offsets).await.unwrap(), 6);
    // Unchanged values are not written again.
    assert_eq!(store.commit(&offsets).await.unwrap(), 0);

    let (mut fresh, _dir) = f.fresh_store();
    let loaded = fresh.load(&parts).await.unwrap();
    assert!(loaded.full_read);
    assert_eq!(loaded.offsets, offsets);

    let records = consume_all(&f.bootstrap, &f.topic, f.partitions).await;
    assert_eq!(records.len(), 6, "one record per changed key: {records:?}");
    for (i, p) in parts.iter().enumerate() {
        let key = p.key_bytes("MirrorSourceConnector");
        let r = records
            .iter()
            .find(|r| r.key.as_deref() == Some(key.as_slice()))
            .expect("record for key");
        assert_eq!(
            r.partition,
            offsets_partition(&key, 25),
            "partition of {p:?}"
        );
        assert_eq!(
            r.value.as_deref(),
            Some(offset_value_bytes(40 + i as i64).as_slice())
        );
    }
    // The §4.7 example key lands on partition 4 of 25.
    let r = records
        .iter()
        .find(|r| {
            r.key.as_deref()
                == Some(
                    br#"["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t1"}]"#
                        .as_slice(),
                )
        })
        .unwrap();
    assert_eq!(r.partition, 4);
}

// The position hint bounds start-up by what changed since the last slice, not by history.
#[tokio::test]
async fn hinted_load_reads_far_fewer_records_and_agrees_with_a_full_read() {
    let f = OffsetsFixture::new().await;
    // 30 keys on 25 partitions: some share a partition, so commits write multi-record
    // batches, whose end tansu's ListOffsets under-reports.
    let parts: Vec<SourcePartition> = (0..30).map(|p| src("orders", p)).collect();
    let mut store = f.store(f.state.clone());
    store.load(&parts).await.unwrap();
    for round in 0..50 {
        store
            .commit(&offsets_of(&parts, round * 100))
            .await
            .unwrap();
    }
    let expected = offsets_of(&parts, 49 * 100);

    let mut hinted = f.store(f.state.clone());
    let with_hint = hinted.load(&parts).await.unwrap();
    let (mut full, _dir) = f.fresh_store();
    let without_hint = full.load(&parts).await.unwrap();
    eprintln!(
        "records_read: with hint {}, without hint {} (50 commits of {} keys)",
        with_hint.records_read,
        without_hint.records_read,
        parts.len()
    );
    assert!(!with_hint.full_read);
    assert!(without_hint.full_read);
    assert_eq!(with_hint.offsets, expected);
    assert_eq!(without_hint.offsets, expected);
    assert_eq!(without_hint.records_read, 50 * parts.len());
    if stack().is_kafka() {
        // Kafka's ListOffsets is exact: nothing was written since the last commit's hint.
        assert_eq!(with_hint.records_read, 0);
    } else {
        // tansu quirk: its trailing ListOffsets makes the load verify by reading below the hint.
        assert!(
            with_hint.records_read * 10 <= without_hint.records_read,
            "with hint {} vs without {}",
            with_hint.records_read,
            without_hint.records_read
        );
    }
}

// A hint pointing past the end (the topic was deleted and recreated) falls back to a full read.
#[tokio::test]
async fn hint_past_the_end_of_a_recreated_topic_falls_back_to_a_full_read() {
    let f = OffsetsFixture::new().await;
    let parts: Vec<SourcePartition> = (0..4).map(|p| src("recreated", p)).collect();
    let mut store = f.store(f.state.clone());
    store.load(&parts).await.unwrap();
    for round in 0..5 {
        store.commit(&offsets_of(&parts, round * 10)).await.unwrap();
    }
    delete_topic(&f.bootstrap, &f.topic).await;
    create_topic(
        &f.bootstrap,
        &f.topic,
        f.partitions,
        &[("cleanup.policy", "compact")],
    )
    .await;
    // One key gets a value in the new topic; the others have none any more.
    let key = parts[0].key_bytes("MirrorSourceConnector");
    let p = offsets_partition(&key, f.partitions);
    internal_log::append(
        &props(&f.bootstrap),
        &f.topic,
        vec![(p, key, Some(offset_value_bytes(7)))],
    )
    .await
    .unwrap();

    let mut after = f.store(f.state.clone());
    let loaded = after.load(&parts).await.unwrap();
    assert!(loaded.full_read, "the stale hint must not be used");
    assert_eq!(
        loaded.offsets,
        BTreeMap::from([(PartitionKey(parts[0].clone()), 7)])
    );
}

// Records written by someone else after our hint (Java MM2, an offset reset) are seen, and a
// tombstone deletes the offset.
#[tokio::test]
async fn records_written_by_others_after_the_hint_are_seen_and_tombstones_delete() {
    let f = OffsetsFixture::new().await;
    let parts: Vec<SourcePartition> = (0..3).map(|p| src("shared", p)).collect();
    f.committed(&parts, 100).await;

    let log = props(&f.bootstrap);
    let (p1, k1) = placed(&parts[1], f.partitions);
    let (p2, k2) = placed(&parts[2], f.partitions);
    internal_log::append(
        &log,
        &f.topic,
        vec![(p1, k1, Some(offset_value_bytes(999)))],
    )
    .await
    .unwrap();
    internal_log::append(&log, &f.topic, vec![(p2, k2, None)])
        .await
        .unwrap();

    let mut next = f.store(f.state.clone());
    let loaded = next.load(&parts).await.unwrap();
    assert!(!loaded.full_read);
    assert_eq!(
        loaded.offsets,
        BTreeMap::from([
            (PartitionKey(parts[0].clone()), 100),
            (PartitionKey(parts[1].clone()), 999),
        ])
    );
    if stack().is_kafka() {
        // Exactly the two records written by others.
        assert_eq!(loaded.records_read, 2);
    } else {
        // tansu quirk: its trailing ListOffsets makes the load read a few records below the hint.
        assert!(
            loaded.records_read <= 6,
            "read {} records",
            loaded.records_read
        );
    }
    // A full read agrees.
    let (mut full, _dir) = f.fresh_store();
    assert_eq!(full.load(&parts).await.unwrap().offsets, loaded.offsets);
}

// Someone else writes one of our keys between our load and our commit, on the partition our
// commit then writes to: the hint must not skip their record.
#[tokio::test]
async fn a_write_by_others_between_load_and_commit_is_not_skipped() {
    let f = OffsetsFixture::new().await;
    // Two of our keys on the same offsets-topic partition.
    let all: Vec<SourcePartition> = (0..200).map(|p| src("interleaved", p)).collect();
    let part_of = |sp: &SourcePartition| {
        offsets_partition(&sp.key_bytes("MirrorSourceConnector"), f.partitions)
    };
    let (a, b) = all
        .iter()
        .enumerate()
        .find_map(|(i, x)| {
            all[i + 1..]
                .iter()
                .find(|y| part_of(x) == part_of(y))
                .map(|y| (x.clone(), y.clone()))
        })
        .expect("two keys on one partition");
    let parts = vec![a.clone(), b.clone()];
    let mut store = f.store(f.state.clone());
    store.load(&parts).await.unwrap();
    store.commit(&offsets_of(&parts, 100)).await.unwrap();

    internal_log::append(
        &props(&f.bootstrap),
        &f.topic,
        vec![(
            part_of(&a),
            a.key_bytes("MirrorSourceConnector"),
            Some(offset_value_bytes(555)),
        )],
    )
    .await
    .unwrap();
    store
        .commit(&BTreeMap::from([(PartitionKey(b.clone()), 1000)]))
        .await
        .unwrap();

    let mut next = f.store(f.state.clone());
    let loaded = next.load(&parts).await.unwrap();
    assert!(!loaded.full_read);
    assert_eq!(
        loaded.offsets,
        BTreeMap::from([(PartitionKey(a), 555), (PartitionKey(b), 1000)])
    );
}

// Java keeps only a key's latest record: a malformed one that a valid one superseded is
// history, not an error, with or without a hint. A malformed latest one fails the load and is
// named (Java would log it and start the partition over).
#[tokio::test]
async fn a_superseded_malformed_offset_is_ignored_and_a_malformed_latest_one_is_named() {
    let f = OffsetsFixture::new().await;
    let parts: Vec<SourcePartition> = (0..2).map(|p| src("malformed", p)).collect();
    f.committed(&parts, 10).await;

    let log = props(&f.bootstrap);
    let (p0, k0) = placed(&parts[0], f.partitions);
    let (p1, k1) = placed(&parts[1], f.partitions);
    let superseded = vec![
        (p0, k0.clone(), Some(b"not json".to_vec())),
        (p0, k0, Some(offset_value_bytes(77))),
    ];
    internal_log::append(&log, &f.topic, superseded)
        .await
        .unwrap();
    let bad = vec![(p1, k1.clone(), Some(br#"{"offset":"#.to_vec()))];
    let at = internal_log::append(&log, &f.topic, bad).await.unwrap();

    let err = f.store(f.state.clone()).load(&parts).await.unwrap_err();
    let (partition, offset, key) = match err {
        OffsetStoreError::BadValue {
            partition,
            offset,
            key,
            ..
        } => (partition, offset, key),
        e => panic!("expected BadValue, got {e}"),
    };
    assert_eq!((partition, offset), at[0]);
    assert!(key.contains("malformed"), "{key}");
    let hinted = f.store(f.state.clone()).load(&parts[..1]).await.unwrap();
    let full = f.fresh_store().0.load(&parts[..1]).await.unwrap();
    for loaded in [hinted, full] {
        assert_eq!(
            loaded.offsets,
            BTreeMap::from([(PartitionKey(parts[0].clone()), 77)])
        );
    }

    let fixed = vec![(p1, k1, Some(offset_value_bytes(88)))];
    internal_log::append(&log, &f.topic, fixed).await.unwrap();
    let loaded = f.store(f.state.clone()).load(&parts).await.unwrap();
    assert_eq!(loaded.offsets[&PartitionKey(parts[1].clone())], 88);
}

/// A store of the fixture's state, fenced by `fence`, with what it loaded of `parts`.
async fn fenced_load(
    f: &OffsetsFixture,
    parts: &[SourcePartition],
    fence: u64,
) -> (OffsetStore, LoadedOffsets) {
    let mut store = f.store(f.state.clone()).with_commit_fence(fence);
    let loaded = store.load(parts).await.unwrap();
    (store, loaded)
}

/// A load from the fixture's hint and a full read both find `expected` for `parts[0]`.
async fn loads_agree(f: &OffsetsFixture, parts: &[SourcePartition], expected: Option<i64>) {
    let hinted = f.store(f.state.clone()).load(parts).await.unwrap();
    let full = f.fresh_store().0.load(parts).await.unwrap();
    assert!(!hinted.full_read && full.full_read);
    for loaded in [hinted, full] {
        let found = loaded.offsets.get(&PartitionKey(parts[0].clone()));
        assert_eq!(found.copied(), expected, "{loaded:?}");
    }
}

/// The value bytes of the last record on `partition` of the offsets topic.
async fn last_value(f: &OffsetsFixture, partition: i32, key: &[u8]) -> Option<Vec<u8>> {
    let records = consume_all(&f.bootstrap, &f.topic, f.partitions).await;
    let mut ours = records
        .into_iter()
        .filter(|r| r.partition == partition && r.key.as_deref() == Some(key));
    ours.next_back().expect("a record of the key").value
}

// A commit sent before a freeze can be written at the thaw, after a successor's: its lower
// fence keeps it from moving the stored offset back, on a load with or without a hint. A
// store whose lease token is below the stored fence (the lease store was reset) writes one
// value without a fence, then fences again. A value without a fence (Java's) and a tombstone
// always apply.
#[tokio::test]
async fn a_late_commit_of_a_stale_writer_is_skipped_by_its_lower_fence() {
    let f = OffsetsFixture::new().await;
    let parts = vec![src("fenced", 0)];
    let key = PartitionKey(parts[0].clone());
    let (p0, k0) = placed(&parts[0], f.partitions);
    let (mut stale, _) = fenced_load(&f, &parts, 5).await;
    stale.commit(&offsets_of(&parts, 100)).await.unwrap();
    let (mut successor, loaded) = fenced_load(&f, &parts, 6).await;
    assert_eq!(loaded.offsets[&key], 100);
    successor.commit(&offsets_of(&parts, 200)).await.unwrap();
    assert_eq!(
        last_value(&f, p0, &k0).await.as_deref(),
        Some(br#"{"offset":200,"fence":6}"#.as_slice())
    );

    // The stale writer's commit of 150 lands now.
    let late = vec![(
        p0,
        k0.clone(),
        Some(br#"{"offset":150,"fence":5}"#.to_vec()),
    )];
    internal_log::append(&props(&f.bootstrap), &f.topic, late)
        .await
        .unwrap();
    loads_agree(&f, &parts, Some(200)).await;

    // A lease store started over: tokens from 1 again.
    let (mut reset, loaded) = fenced_load(&f, &parts, 2).await;
    assert_eq!(loaded.offsets[&key], 200);
    reset.commit(&offsets_of(&parts, 300)).await.unwrap();
    assert_eq!(
        last_value(&f, p0, &k0).await.as_deref(),
        Some(br#"{"offset":300}"#.as_slice())
    );
    reset.commit(&offsets_of(&parts, 400)).await.unwrap();
    assert_eq!(
        last_value(&f, p0, &k0).await.as_deref(),
        Some(br#"{"offset":400,"fence":2}"#.as_slice())
    );
    loads_agree(&f, &parts, Some(400)).await;

    // Java's value, then a tombstone.
    let java = vec![(p0, k0.clone(), Some(offset_value_bytes(120)))];
    internal_log::append(&props(&f.bootstrap), &f.topic, java)
        .await
        .unwrap();
    loads_agree(&f, &parts, Some(120)).await;
    let tombstone = vec![(p0, k0, None)];
    internal_log::append(&props(&f.bootstrap), &f.topic, tombstone)
        .await
        .unwrap();
    loads_agree(&f, &parts, None).await;
}

/// A state store whose position hints are corrupt documents (a damaged item, a bad edit).
struct CorruptHints(Arc<dyn StateStore>);

impl StateStore for CorruptHints {
    fn get(&self, key: &str) -> Result<Option<Value>, StateError> {
        match key.ends_with("offsets-hint") {
            true => Err(StateError::Corrupt {
                key: key.into(),
                source: serde_json::from_str::<Value>("{\"positions\":").unwrap_err(),
            }),
            false => self.0.get(key),
        }
    }
    fn put(&self, key: &str, value: &Value) -> Result<(), StateError> {
        self.0.put(key, value)
    }
}

// The hint is a shortcut: a corrupt one costs a full read, never the slice, and is replaced.
#[tokio::test]
async fn a_corrupt_hint_falls_back_to_a_full_read_and_is_rewritten() {
    let f = OffsetsFixture::new().await;
    let parts: Vec<SourcePartition> = (0..3).map(|p| src("corrupt-hint", p)).collect();
    f.committed(&parts, 30).await;

    let corrupt: Arc<dyn StateStore> = Arc::new(CorruptHints(f.state.clone()));
    let loaded = f.store(corrupt).load(&parts).await.unwrap();
    assert!(loaded.full_read);
    assert_eq!(loaded.offsets, offsets_of(&parts, 30));
    let after = f.store(f.state.clone()).load(&parts).await.unwrap();
    assert!(!after.full_read, "the rewritten hint is used");
    assert_eq!(after.offsets, loaded.offsets);
}

// A task commits every second; its hint (two state-store round trips) is written at most every
// hint interval, and once more when the task is done, so it may lag the commits in between:
// a load from a lagging hint still finds the newest offsets (it reads past the hint).
#[tokio::test]
async fn commits_write_the_hint_at_its_interval_and_the_end_only() {
    let f = OffsetsFixture::new().await;
    let parts: Vec<SourcePartition> = (0..2).map(|p| src("hint-interval", p)).collect();
    let hint = |state: &Arc<dyn StateStore>| {
        state
            .get("A->B/MirrorSourceConnector/0/offsets-hint")
            .unwrap()
    };
    let mut store = f
        .store(f.state.clone())
        .with_hint_interval(Duration::from_secs(3600));
    store.load(&parts).await.unwrap();
    let at_load = hint(&f.state);
    store.commit(&offsets_of(&parts, 5)).await.unwrap();
    store.commit(&offsets_of(&parts, 9)).await.unwrap();
    assert_eq!(hint(&f.state), at_load, "no hint write inside the interval");
    let lagging = f.store(f.state.clone()).load(&parts).await.unwrap();
    assert_eq!(lagging.offsets, offsets_of(&parts, 9));

    store.save_hint_if_stale().unwrap();
    let at_end = hint(&f.state);
    assert_ne!(at_end, at_load, "written when the task is done");
    store.save_hint_if_stale().unwrap();
    assert_eq!(hint(&f.state), at_end);
    let loaded = f.store(f.state.clone()).load(&parts).await.unwrap();
    assert!(!loaded.full_read);
    assert_eq!(loaded.offsets, offsets_of(&parts, 9));
}

// A hint taken from a read of every partition knows each key sits on its own partition: a key
// it does not cover (a new task partition) costs a read of that partition only.
#[tokio::test]
async fn a_new_key_reads_only_its_own_partition_beside_the_hint() {
    let f = OffsetsFixture::new().await;
    let parts: Vec<SourcePartition> = (0..2).map(|p| src("new-key", p)).collect();
    let mut store = f.store(f.state.clone());
    store.load(&parts[..1]).await.unwrap();
    store.commit(&offsets_of(&parts, 5)).await.unwrap();
    let loaded = f.store(f.state.clone()).load(&parts).await.unwrap();
    assert!(!loaded.full_read);
    assert_eq!(loaded.offsets, offsets_of(&parts, 5));
}

// Connect places a key by the partition count the writer sees (murmur2 % count). Once the
// offsets topic has gained partitions, the records written before stay where they were while
// the key's hash points elsewhere: Java reads every partition and finds them, and so must we,
// also for keys a later hint does not cover. Our commits go to the key's new partition.
#[tokio::test]
async fn offsets_written_before_the_offsets_topic_gained_partitions_are_found() {
    let s = stack();
    let topic = unique("grown-offsets");
    create_topic(&s.b, &topic, 30, &[("cleanup.policy", "compact")]).await;
    let parts: Vec<SourcePartition> = (0..8).map(|p| src("grown", p)).collect();
    let moved = |sp: &SourcePartition| placed(sp, 25).0 != placed(sp, 30).0;
    assert!(parts[..4].iter().any(moved) && parts[4..].iter().any(moved));
    // As a worker that saw 25 partitions wrote them.
    let old = parts
        .iter()
        .zip(100..)
        .map(|(sp, v)| {
            let (p, key) = placed(sp, 25);
            (p, key, Some(offset_value_bytes(v)))
        })
        .collect();
    internal_log::append(&props(&s.b), &topic, old)
        .await
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let state: Arc<dyn StateStore> = Arc::new(LocalStateStore::new(dir.path()));
    let store = || {
        OffsetStore::new(
            &topic,
            30,
            props(&s.b),
            props(&s.b),
            state.clone(),
            "A->B/MirrorSourceConnector/0/offsets-hint",
        )
        .with_read_timeout(READ_TIMEOUT)
    };
    let mut first = store();
    let loaded = first.load(&parts[..4]).await.unwrap();
    assert!(loaded.full_read);
    assert_eq!(loaded.offsets, offsets_of(&parts[..4], 100));
    first.commit(&offsets_of(&parts[..4], 500)).await.unwrap();
    let records = consume_all(&s.b, &topic, 30).await;
    for (sp, v) in parts[..4].iter().zip(500..) {
        let (p, key) = placed(sp, 30);
        let written = records
            .iter()
            .find(|r| r.key.as_deref() == Some(&key[..]) && r.value == Some(offset_value_bytes(v)));
        assert_eq!(written.map(|r| r.partition), Some(p), "{sp:?}");
    }

    // The hint covers half the keys, and knows some records are off their partition.
    let mut expected = offsets_of(&parts[..4], 500);
    expected.extend(offsets_of(&parts[4..], 104));
    let loaded = store().load(&parts).await.unwrap();
    assert!(loaded.full_read);
    assert_eq!(loaded.offsets, expected);
    let again = store().load(&parts).await.unwrap();
    assert!(!again.full_read);
    assert_eq!(again.offsets, expected);
}

// Connect status records: keys, JSON and placement Java's status store expects.
#[tokio::test]
async fn status_records_decode_with_connect_status_and_sit_on_the_murmur2_partition() {
    let s = stack();
    let w = worker("st");
    let topics = ensure_worker_topics(&w, &props(&s.b)).await.unwrap();
    let (topic, partitions) = topics.status.clone();
    let store = StatusStore::new(&topic, partitions, props(&s.b), props(&s.b));
    let running = Status {
        state: State::Running,
        trace: None,
        worker_id: "A->B".into(),
        generation: 3,
    };
    let failed = Status {
        state: State::Failed,
        trace: Some("gap: t1-0 offsets 10..20 were deleted".into()),
        worker_id: "A->B".into(),
        generation: 3,
    };
    store
        .put_connector("MirrorSourceConnector", &running)
        .await
        .unwrap();
    store
        .put_task("MirrorSourceConnector", 0, &running)
        .await
        .unwrap();
    store
        .put_task("MirrorSourceConnector", 1, &failed)
        .await
        .unwrap();
    let report = serde_json::json!({"records": 12, "caught_up": true});
    store
        .put_slice_report("MirrorSourceConnector", 0, &report)
        .await
        .unwrap();
    // A later status of the same task replaces the earlier one for readers.
    let unassigned = Status {
        state: State::Unassigned,
        ..running.clone()
    };
    store
        .put_task("MirrorSourceConnector", 0, &unassigned)
        .await
        .unwrap();

    let all = store.read_all(READ_TIMEOUT).await.unwrap();
    assert_eq!(all.len(), 4, "{:?}", all.keys().collect::<Vec<_>>());
    let decode = |k: &str| connect_status::decode_record(k, all[k].as_deref()).unwrap();
    assert_eq!(
        decode("status-connector-MirrorSourceConnector"),
        StatusRecord::Connector {
            connector: "MirrorSourceConnector".into(),
            status: Some(running.clone())
        }
    );
    assert_eq!(
        decode("status-task-MirrorSourceConnector-0"),
        StatusRecord::Task {
            connector: "MirrorSourceConnector".into(),
            task: 0,
            status: Some(unassigned)
        }
    );
    assert_eq!(
        decode("status-task-MirrorSourceConnector-1"),
        StatusRecord::Task {
            connector: "MirrorSourceConnector".into(),
            task: 1,
            status: Some(failed)
        }
    );
    let r: serde_json::Value = serde_json::from_slice(
        all["mirrorslice-report-MirrorSourceConnector-0"]
            .as_deref()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(r, report);

    for rec in consume_all(&s.b, &topic, partitions).await {
        let key = rec.key.unwrap();
        assert_eq!(
            rec.partition,
            offsets_partition(&key, partitions),
            "{}",
            String::from_utf8_lossy(&key)
        );
    }
}

// Configs are written once, in Java's order, and again only when they change.
#[tokio::test]
async fn config_store_writes_once_and_again_only_on_change() {
    let s = stack();
    let w = worker("cs");
    let topics = ensure_worker_topics(&w, &props(&s.b)).await.unwrap();
    let topic = topics.configs.0.clone();
    let dir = tempfile::tempdir().unwrap();
    let state: Arc<dyn StateStore> = Arc::new(LocalStateStore::new(dir.path()));
    let store = ConfigStore::new(&topic, props(&s.b), props(&s.b), state.clone())
        .with_read_timeout(READ_TIMEOUT);
    let p = |pairs: &[(&str, &str)]| -> Props {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let connector = p(&[
        (
            "connector.class",
            "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        ),
        ("source.cluster.alias", "A"),
    ]);
    let tasks = vec![
        p(&[
            ("task.assigned.partitions", "t1-0,t1-2"),
            ("task.index", "0"),
        ]),
        p(&[("task.assigned.partitions", "t1-1"), ("task.index", "1")]),
    ];
    let hash_key = "A->B/MirrorSourceConnector/config-hash";
    assert!(store
        .put_connector_and_tasks("MirrorSourceConnector", &connector, &tasks, hash_key)
        .await
        .unwrap());
    let after_first = store.read_all(READ_TIMEOUT).await.unwrap();
    let keys: Vec<String> = after_first
        .iter()
        .map(|r| String::from_utf8(r.key.clone().unwrap()).unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "connector-MirrorSourceConnector",
            "task-MirrorSourceConnector-0",
            "task-MirrorSourceConnector-1",
            "commit-MirrorSourceConnector",
            "target-state-MirrorSourceConnector"
        ]
    );
    let decoded: Vec<ConfigRecord> = after_first
        .iter()
        .map(|r| {
            connect_config::decode_record(
                &String::from_utf8_lossy(r.key.as_deref().unwrap()),
                r.value.as_deref(),
            )
            .unwrap()
        })
        .collect();
    // Stored as Connect's worker stores them: with the task class a Java worker starts.
    assert_eq!(
        decoded[1],
        ConfigRecord::TaskConfig {
            connector: "MirrorSourceConnector".into(),
            task: 0,
            properties: with_task_class(tasks[0].clone()),
        }
    );
    assert_eq!(
        decoded[3],
        ConfigRecord::TasksCommit {
            connector: "MirrorSourceConnector".into(),
            tasks: 2
        }
    );

    // Unchanged: nothing written (hash path), and with lost state (full-read path).
    assert!(!store
        .put_connector_and_tasks("MirrorSourceConnector", &connector, &tasks, hash_key)
        .await
        .unwrap());
    let other_dir = tempfile::tempdir().unwrap();
    let lost: Arc<dyn StateStore> = Arc::new(LocalStateStore::new(other_dir.path()));
    let no_state = ConfigStore::new(&topic, props(&s.b), props(&s.b), lost.clone())
        .with_read_timeout(READ_TIMEOUT);
    assert!(!no_state
        .put_connector_and_tasks("MirrorSourceConnector", &connector, &tasks, hash_key)
        .await
        .unwrap());
    assert!(
        lost.get(hash_key).unwrap().is_some(),
        "the fallback stores the hash it verified"
    );
    assert_eq!(store.read_all(READ_TIMEOUT).await.unwrap().len(), 5);

    // A task config changes: everything is written again and readers see the new tasks.
    let mut changed = tasks.clone();
    changed[1].insert("task.assigned.partitions".into(), "t1-1,t1-3".into());
    assert!(store
        .put_connector_and_tasks("MirrorSourceConnector", &connector, &changed, hash_key)
        .await
        .unwrap());
    assert_eq!(store.read_all(READ_TIMEOUT).await.unwrap().len(), 10);
    let stored = store.read_connector("MirrorSourceConnector").await.unwrap();
    assert_eq!(stored.config.as_ref(), Some(&connector));
    assert_eq!(
        stored.tasks,
        changed.into_iter().map(with_task_class).collect::<Vec<_>>()
    );
}

// The config topic never holds a secret: literal secrets are hidden, placeholders stay
// placeholders in the connector config and come back in the task configs (Java's
// `reverseTransform`), while the tasks were generated from resolved values.
#[tokio::test]
async fn config_store_writes_no_secret() {
    let s = stack();
    let w = worker("cs-secret");
    let topics = ensure_worker_topics(&w, &props(&s.b)).await.unwrap();
    let topic = topics.configs.0.clone();
    let dir = tempfile::tempdir().unwrap();
    let state: Arc<dyn StateStore> = Arc::new(LocalStateStore::new(dir.path()));
    let store =
        ConfigStore::new(&topic, props(&s.b), props(&s.b), state).with_read_timeout(READ_TIMEOUT);
    let literal = unique("literal-pw");
    let resolved = unique("resolved-pw");
    let jaas = format!(
        "org.apache.kafka.common.security.scram.ScramLoginModule required \
         username=\"mirror\" password=\"{literal}\";"
    );
    let placeholder = "${env:MIRROR_KEY_PASSWORD}";
    let connector: Props = [
        (
            "connector.class",
            "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        ),
        ("source.cluster.sasl.jaas.config", jaas.as_str()),
        ("target.producer.ssl.key.password", placeholder),
        ("source.cluster.sasl.mechanism", "SCRAM-SHA-512"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    // What `MirrorSourceConnector.taskConfigs` returns: the resolved connector config.
    let mut task = connector.clone();
    task.insert("target.producer.ssl.key.password".into(), resolved.clone());
    task.insert("task.assigned.partitions".into(), "t-0".into());
    assert!(store
        .put_connector_and_tasks("MirrorSourceConnector", &connector, &[task], "k")
        .await
        .unwrap());

    let records = store.read_all(READ_TIMEOUT).await.unwrap();
    assert_eq!(records.len(), 4);
    for r in &records {
        let bytes = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default());
        assert!(
            !bytes.contains(&literal) && !bytes.contains(&resolved),
            "{bytes}"
        );
    }
    let stored = store.read_connector("MirrorSourceConnector").await.unwrap();
    for config in std::iter::once(stored.config.as_ref().unwrap()).chain(&stored.tasks) {
        assert_eq!(config["source.cluster.sasl.jaas.config"], "[hidden]");
        assert_eq!(config["target.producer.ssl.key.password"], placeholder);
        assert_eq!(config["source.cluster.sasl.mechanism"], "SCRAM-SHA-512");
    }
    assert_eq!(stored.tasks[0]["task.assigned.partitions"], "t-0");
}

/// A source task config as Connect's worker stores it: with the task class a Java worker
/// starts the task from.
fn with_task_class(mut task: BTreeMap<String, String>) -> BTreeMap<String, String> {
    task.insert(
        "task.class".into(),
        "org.apache.kafka.connect.mirror.MirrorSourceTask".into(),
    );
    task
}
