//! `mirrorslice run` end to end on the local stack: the acceptance tests of the source slice.
//!
//! Every test uses its own cluster aliases, so its internal topics (`mm2-offsets.<alias>.internal`
//! …), state directory and leases are its own, and tests can run in parallel.

mod common;

use common::cli_flow::Flow;
use common::TestRecord;
use mirrorslice::wire::connect_offsets::{decode_key, decode_value, offsets_partition};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn records(partitions: i32, per_partition: usize, tag: &str) -> Vec<TestRecord> {
    let mut out = Vec::new();
    for p in 0..partitions {
        for i in 0..per_partition {
            out.push(TestRecord {
                partition: p,
                key: (i % 3 != 0).then(|| format!("{tag}-k{p}-{i}").into_bytes()),
                value: match i % 5 {
                    0 => None,
                    1 => Some(Vec::new()),
                    _ => Some(format!("{tag} value {p}/{i}").into_bytes()),
                },
                headers: vec![
                    ("h".into(), Some(tag.as_bytes().to_vec())),
                    ("h".into(), Some(b"second".to_vec())),
                    ("n".into(), None),
                ],
                timestamp: Some(1_700_000_000_000 + p as i64 * 100_000 + i as i64),
            });
        }
    }
    out
}

fn sorted(mut v: Vec<TestRecord>) -> Vec<TestRecord> {
    v.sort_by(|a, b| {
        (a.partition, a.timestamp, &a.key, &a.value).cmp(&(
            b.partition,
            b.timestamp,
            &b.key,
            &b.value,
        ))
    });
    v
}

async fn target_records(flow: &Flow, topic: &str, partitions: i32) -> Vec<TestRecord> {
    let stack = common::stack();
    common::consume_all(&stack.b, &flow.remote(topic), partitions)
        .await
        .iter()
        .map(|r| r.to_test_record())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_exact_copy_then_exact_resume_across_slices() {
    let stack = common::stack();
    let flow = Flow::new("orders.*", "");
    let topic = format!("orders-{}", flow.source);
    let partitions = 6;
    common::create_topic(&stack.a, &topic, partitions, &[]).await;

    let mut expected = records(partitions, 9, "s1");
    expected.push(TestRecord {
        partition: 4,
        key: Some(b"large".to_vec()),
        value: Some((0..950 * 1024).map(|i| (i % 251) as u8).collect()),
        headers: vec![("h".into(), Some(b"big".to_vec()))],
        timestamp: Some(1_700_000_999_999),
    });
    common::produce(&stack.a, &topic, &expected).await;

    let report = flow.run_ok();
    assert_eq!(report["records"], expected.len() as u64);
    assert_eq!(report["caught_up"], true);
    assert_eq!(report["lag"], 0);
    let created = report["connector"]["created_topics"].as_array().unwrap();
    assert!(created
        .iter()
        .any(|t| t == &Value::from(flow.remote(&topic))));
    assert_eq!(
        common::created_partition_count(&stack.b, &flow.remote(&topic)),
        Some(partitions)
    );
    let got = target_records(&flow, &topic, partitions).await;
    assert_eq!(sorted(got), sorted(expected.clone()), "byte-exact copy");

    // Three more slices with records produced in between: exact union, no duplicates.
    for round in 2..=4 {
        let more = records(partitions, round, &format!("s{round}"));
        common::produce(&stack.a, &topic, &more).await;
        let report = flow.run_ok();
        assert_eq!(report["records"], more.len() as u64, "round {round}");
        expected.extend(more);
    }
    // An idle slice copies nothing.
    assert_eq!(flow.run_ok()["records"], 0);
    let got = target_records(&flow, &topic, partitions).await;
    assert_eq!(got.len(), expected.len(), "no duplicates, nothing missing");
    assert_eq!(sorted(got), sorted(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_are_connect_format_in_the_murmur2_partition() {
    let stack = common::stack();
    let flow = Flow::new("pay.*", "");
    let topic = format!("pay-{}", flow.source);
    common::create_topic(&stack.a, &topic, 3, &[]).await;
    common::produce(&stack.a, &topic, &records(3, 4, "x")).await;
    flow.run_ok();
    // Beside Java's offset, the source topic's ID and the slice's fence, the first token of the
    // flow's connector lease (Java reads the offset alone).
    let id = common::topic_id(&stack.a, &topic)
        .await
        .expect("the broker's topic ID");

    let offsets_topic = format!("mm2-offsets.{}.internal", flow.source);
    assert_eq!(
        common::created_partition_count(&stack.b, &offsets_topic),
        Some(25)
    );
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &stack.b)
        .set("group.id", common::unique("offsets-reader"))
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..25 {
        tpl.add_partition_offset(&offsets_topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut found: BTreeMap<i32, i64> = BTreeMap::new();
    let mut eofs = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while eofs.len() < 25 && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                let key = m.key().unwrap();
                let decoded = decode_key(key).expect("Connect offset key decodes");
                assert_eq!(decoded.connector, "MirrorSourceConnector");
                assert_eq!(
                    m.partition(),
                    offsets_partition(key, 25),
                    "key placed by Kafka's murmur2 partitioner"
                );
                let text = String::from_utf8(key.to_vec()).unwrap();
                let expected_prefix = format!(
                    "[\"MirrorSourceConnector\",{{\"cluster\":\"{}\",\"partition\":",
                    flow.source
                );
                assert!(text.starts_with(&expected_prefix), "{text}");
                assert!(
                    text.ends_with(&format!(",\"topic\":\"{topic}\"}}]")),
                    "{text}"
                );
                let p: i32 = text[expected_prefix.len()..]
                    .split(',')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let value = decode_value(m.payload()).unwrap().unwrap();
                assert_eq!(
                    m.payload().unwrap(),
                    format!("{{\"offset\":{value},\"topicId\":\"{id}\",\"fence\":1}}").as_bytes()
                );
                found.insert(p, value);
            }
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                eofs.insert(p);
            }
            _ => {}
        }
    }
    // Four records per partition: the last replicated offset is 3 (resume at 4).
    assert_eq!(found, BTreeMap::from([(0, 3), (1, 3), (2, 3)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_created_between_slices_is_replicated_with_its_configs() {
    let stack = common::stack();
    let flow = Flow::new("inv.*", "");
    let first = format!("inv-a-{}", flow.source);
    common::create_topic(&stack.a, &first, 2, &[]).await;
    common::produce(&stack.a, &first, &records(2, 3, "a")).await;
    flow.run_ok();

    let second = format!("inv-b-{}", flow.source);
    common::create_topic(
        &stack.a,
        &second,
        3,
        &[("retention.ms", "12345678"), ("cleanup.policy", "compact")],
    )
    .await;
    let data = records(3, 4, "b")
        .into_iter()
        .map(|mut r| {
            // Compacted topics need keys on real Kafka.
            r.key.get_or_insert_with(|| b"k".to_vec());
            r
        })
        .collect::<Vec<_>>();
    common::produce(&stack.a, &second, &data).await;
    let report = flow.run_ok();
    assert_eq!(report["records"], data.len() as u64);
    assert_eq!(
        common::created_partition_count(&stack.b, &flow.remote(&second)),
        Some(3)
    );
    let configs = common::describe_topic_configs(&stack.b, &flow.remote(&second)).await;
    assert_eq!(
        configs.get("retention.ms").map(String::as_str),
        Some("12345678")
    );
    assert_eq!(
        configs.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    let got = target_records(&flow, &second, 3).await;
    assert_eq!(sorted(got), sorted(data));
}

/// Deletes `topic` on cluster A and creates it again with `records` new ones on partition 0;
/// its IDs before and after.
async fn recreate(topic: &str, records_after: usize) -> (String, String) {
    let a = &common::stack().a;
    let old = common::topic_id(a, topic).await.expect("an ID");
    common::delete_topic(a, topic).await;
    common::create_topic(a, topic, 1, &[]).await;
    common::produce(a, topic, &records(1, records_after, "new")).await;
    let new = common::topic_id(a, topic).await.expect("an ID");
    assert_ne!(old, new);
    (old, new)
}

// A source topic deleted and created again since the last slice is told apart by its topic ID
// (KIP-516, stored beside our offset): a `recreated` gap naming both IDs, the slice fails, the
// task is FAILED naming the topic. Here the new topic holds fewer records than our position.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreated_source_topic_with_fewer_records_fails_naming_the_topic() {
    let stack = common::stack();
    let flow = Flow::new("evt.*", "mirrorslice.silence.check.after = 1s\n");
    let topic = format!("evt-{}", flow.source);
    common::create_topic(&stack.a, &topic, 1, &[]).await;
    common::produce(&stack.a, &topic, &records(1, 30, "old")).await;
    flow.run_ok();
    let (old_id, new_id) = recreate(&topic, 5).await;

    let (code, report, stderr) = flow.run();
    assert_ne!(code, 0, "a gap must fail the slice: {report:#}");
    assert!(
        stderr.contains(&format!("{topic}-0")),
        "stderr names the topic-partition: {stderr}"
    );
    let slice = &report["slices"][0];
    assert_eq!(slice["ok"], false);
    let gap = &slice["gaps"][0];
    assert_eq!(gap["topic"], Value::from(topic.clone()));
    assert_eq!(gap["kind"], "recreated");
    assert_eq!(
        gap["from_offset"], 30,
        "we had replicated through offset 29"
    );
    assert_eq!(
        (&gap["old_topic_id"], &gap["new_topic_id"]),
        (&Value::from(old_id), &Value::from(new_id))
    );

    // The task is FAILED in the status topic, with the topic in its trace.
    let statuses =
        common::read_status(&stack.b, &format!("mm2-status.{}.internal", flow.source)).await;
    let task = statuses
        .get("status-task-MirrorSourceConnector-0")
        .expect("task status written");
    assert_eq!(task["state"], "FAILED");
    assert!(task["trace"].as_str().unwrap().contains(&topic));
}

// The case offsets alone cannot see: the recreated topic has grown past our position (3,000
// records; we had copied 1,000). Before topic IDs the next slice copied the new topic from
// offset 1,000 on, exited 0 and reported nothing. Now it is a `recreated` gap that fails the
// slice and copies nothing; with `mirrorslice.on.gap = skip` every record of the new topic is
// copied from its start, the gap still reported, and the slice after that has no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_topic_grown_past_our_position_is_a_gap_and_skip_copies_all_of_it() {
    let stack = common::stack();
    let flow = Flow::new("grown", "");
    let topic = format!("regrown-{}", flow.source);
    common::create_topic(&stack.a, &topic, 1, &[]).await;
    common::produce(&stack.a, &topic, &records(1, 1_000, "old")).await;
    flow.run_ok();
    let (_, new_id) = recreate(&topic, 3_000).await;

    let (code, report, _) = flow.run();
    assert_ne!(code, 0, "{report:#}");
    let gap = &report["slices"][0]["gaps"][0];
    assert_eq!(
        (&gap["kind"], &gap["skipped"]),
        (&Value::from("recreated"), &Value::from(false))
    );
    assert_eq!(
        report["slices"][0]["records"], 0,
        "nothing of the new topic copied"
    );

    flow.add_config("mirrorslice.on.gap = skip\n");
    let (code, report, stderr) = flow.run();
    assert_eq!(code, 0, "{stderr}\n{report:#}");
    let slice = &report["slices"][0];
    let gap = &slice["gaps"][0];
    assert_eq!(
        (&gap["kind"], &gap["skipped"]),
        (&Value::from("recreated"), &Value::from(true))
    );
    assert_eq!(
        (&gap["resumed_at"], &gap["new_topic_id"]),
        (&Value::from(0), &Value::from(new_id))
    );
    assert_eq!(slice["records"], 3_000, "all of the new topic: {slice:#}");
    let got = target_records(&flow, &topic, 1).await;
    let new: Vec<TestRecord> = got.into_iter().skip(1_000).collect();
    assert_eq!(
        new,
        records(1, 3_000, "new"),
        "the new topic, in order, from its first record"
    );

    let slice = flow.run_ok();
    assert_eq!(
        slice["gaps"],
        Value::Array(vec![]),
        "the new ID is stored: {slice:#}"
    );
    assert_eq!(slice["records"], 0);
}

// Offsets stored without a topic ID (by Java MM2, or before IDs were kept) keep the checks
// made from offsets alone: a recreated topic with fewer records than our position is a
// `beyond_log_end` gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_stored_topic_id_a_recreated_topic_is_found_by_its_log_end() {
    let stack = common::stack();
    let flow = Flow::new("legacy", "mirrorslice.silence.check.after = 1s\n");
    let topic = format!("legacy-{}", flow.source);
    common::create_topic(&stack.a, &topic, 1, &[]).await;
    common::produce(&stack.a, &topic, &records(1, 30, "old")).await;
    flow.run_ok();
    // What a Java MM2 writes for the same position: the offset alone.
    let key = mirrorslice::wire::connect_offsets::SourcePartition::Source {
        cluster: flow.source.clone(),
        topic: topic.clone(),
        partition: 0,
    }
    .key_bytes("MirrorSourceConnector");
    let java = TestRecord {
        partition: offsets_partition(&key, 25),
        key: Some(key),
        value: Some(br#"{"offset":29}"#.to_vec()),
        headers: Vec::new(),
        timestamp: None,
    };
    common::produce(
        &stack.b,
        &format!("mm2-offsets.{}.internal", flow.source),
        &[java],
    )
    .await;
    recreate(&topic, 5).await;

    let (code, report, _) = flow.run();
    assert_ne!(code, 0, "{report:#}");
    let gap = &report["slices"][0]["gaps"][0];
    assert_eq!(gap["kind"], "beyond_log_end", "{report:#}");
    assert_eq!(gap["to_offset"], 30);
}

// Records deleted before they were copied (retention; here DeleteRecords, which moves the log
// start the same way) are a `below_log_start` gap. With `mirrorslice.on.gap = fail` the slice
// fails naming the exact range and copies nothing past it; with `skip` it resumes at the log
// start, reports the gap as skipped and copies the rest. Apache Kafka only: tansu has no
// DeleteRecords and no retention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_deleted_before_they_were_copied_are_a_gap_that_fails_or_is_skipped() {
    let Some(stack) = common::kafka_only("it has no DeleteRecords") else {
        return;
    };
    let flow = Flow::new("ret", "");
    let topic = format!("ret-{}", flow.source);
    common::create_topic(&stack.a, &topic, 1, &[]).await;
    let old = records(1, 30, "old");
    common::produce(&stack.a, &topic, &old).await;
    flow.run_ok();
    let new = records(1, 20, "new"); // upstream offsets 30..49
    common::produce(&stack.a, &topic, &new).await;
    common::delete_records(&stack.a, &topic, 0, 40).await;

    let (code, report, stderr) = flow.run();
    assert_ne!(code, 0, "a gap must fail the slice: {report:#}");
    assert!(stderr.contains(&format!("{topic}-0")), "{stderr}");
    let gap = &report["slices"][0]["gaps"][0];
    assert_eq!(gap["kind"], "below_log_start", "{report:#}");
    assert_eq!(gap["from_offset"], 30, "{gap}");
    assert_eq!(gap["to_offset"], 40, "{gap}");
    assert_eq!(gap["skipped"], false, "{gap}");
    assert_eq!(target_records(&flow, &topic, 1).await.len(), 30);

    flow.add_config("mirrorslice.on.gap = skip\n");
    let slice = flow.run_ok();
    assert_eq!(slice["records"], 10, "{slice:#}");
    let gap = &slice["gaps"][0];
    assert_eq!(gap["kind"], "below_log_start", "{slice:#}");
    assert_eq!(gap["skipped"], true, "{gap}");
    assert_eq!(gap["resumed_at"], 40, "{gap}");
    let want: Vec<TestRecord> = old.into_iter().chain(new.into_iter().skip(10)).collect();
    assert_eq!(sorted(target_records(&flow, &topic, 1).await), sorted(want));
}

// A source topic grown between slices (CreatePartitions): the next slice grows the remote topic
// and copies the new partitions from their start; nothing lost, nothing copied twice. Apache
// Kafka only: tansu has no CreatePartitions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_topic_grown_between_slices_is_grown_on_the_target_and_copied() {
    let Some(stack) = common::kafka_only("it has no CreatePartitions") else {
        return;
    };
    let flow = Flow::new("grow", "");
    let topic = format!("grow-{}", flow.source);
    common::create_topic(&stack.a, &topic, 1, &[]).await;
    let before = records(1, 10, "before");
    common::produce(&stack.a, &topic, &before).await;
    flow.run_ok();

    common::grow_topic(&stack.a, &topic, 3).await;
    let after = records(3, 10, "after");
    common::produce(&stack.a, &topic, &after).await;
    let slice = flow.run_ok();
    assert_eq!(slice["records"], 30, "{slice:#}");
    assert_eq!(
        common::created_partition_count(&stack.b, &flow.remote(&topic)),
        Some(3)
    );
    let want: Vec<TestRecord> = before.into_iter().chain(after).collect();
    assert_eq!(sorted(target_records(&flow, &topic, 3).await), sorted(want));
}

// Transactions upstream (Apache Kafka only: tansu's fetch responses list no aborted
// transactions). By default aborted records are copied too, as by MM2, whose source consumer
// keeps Kafka's `isolation.level=read_uncommitted`; with `<source>.consumer.isolation.level =
// read_committed` only committed ones are. Either way the transaction markers are never copied
// and the slice ends caught up at the upstream end, so the next slice copies nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_transactions_are_copied_per_isolation_level_and_the_slice_ends_caught_up() {
    let Some(stack) = common::kafka_only("its fetch responses list no aborted transactions") else {
        return;
    };
    for (isolation, aborted_copied) in [("read_uncommitted", true), ("read_committed", false)] {
        let flow = Flow::new("txn", "");
        if isolation == "read_committed" {
            flow.add_config(&format!(
                "{}.consumer.isolation.level = read_committed\n",
                flow.source
            ));
        }
        let topic = format!("txn-{}", flow.source);
        common::create_topic(&stack.a, &topic, 1, &[]).await;
        let plain = records(1, 5, "plain");
        common::produce(&stack.a, &topic, &plain).await;
        // Offsets 5..9 aborted (marker at 10), 11..15 committed (marker at 16): the log ends
        // on a marker no consumer is ever served.
        produce_in_transaction(&stack.a, &topic, "aborted", false);
        produce_in_transaction(&stack.a, &topic, "committed", true);

        let slice = flow.run_ok();
        let want = if aborted_copied { 15 } else { 10 };
        assert_eq!(slice["records"], want, "{isolation}: {slice:#}");
        assert_eq!(slice["caught_up"], true, "{isolation}: {slice:#}");
        let got = target_records(&flow, &topic, 1).await;
        let tags: Vec<String> = got
            .iter()
            .map(|r| String::from_utf8_lossy(r.key.as_deref().unwrap_or(b"-")).into_owned())
            .filter(|k| k.starts_with("aborted") || k.starts_with("committed"))
            .collect();
        assert_eq!(
            tags.len(),
            want as usize - plain.len(),
            "{isolation}: {tags:?}"
        );
        assert_eq!(
            tags.iter().any(|k| k.starts_with("aborted")),
            aborted_copied,
            "{isolation}: {tags:?}"
        );
        let again = flow.run_ok();
        assert_eq!(again["records"], 0, "{isolation}: {again:#}");
        assert_eq!(again["caught_up"], true, "{isolation}: {again:#}");
    }
}

/// Five records `<tag>-0..4` written to partition 0 in one transaction, then committed or
/// aborted.
fn produce_in_transaction(bootstrap: &str, topic: &str, tag: &str, commit: bool) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let timeout = Duration::from_secs(10);
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", common::unique("txn"))
        .create()
        .expect("transactional producer");
    producer
        .init_transactions(timeout)
        .expect("init transactions");
    producer.begin_transaction().expect("begin");
    for i in 0..5 {
        let key = format!("{tag}-{i}");
        producer
            .send(BaseRecord::to(topic).partition(0).key(&key).payload(tag))
            .map_err(|(e, _)| e)
            .expect("send");
    }
    producer.flush(timeout).expect("flush");
    if commit {
        producer.commit_transaction(timeout).expect("commit");
    } else {
        producer.abort_transaction(timeout).expect("abort");
    }
}

// A retention gap that opens mid-slice (DeleteRecords ahead of the copy, beyond what the
// consumer has prefetched) is handled like one found at start, and at once, not at the deadline:
// with `mirrorslice.on.gap = fail` the slice stops naming the exact range, every record before
// it on the target; with `skip` it resumes at the new log start and copies the rest. Apache
// Kafka only: tansu has no DeleteRecords. Before librdkafka's `__AUTO_OFFSET_RESET` was read as
// "out of range", the partition stalled silently until the deadline and the slice exited 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retention_gap_opening_mid_slice_is_failed_or_skipped_at_once() {
    let Some(stack) = common::kafka_only("it has no DeleteRecords") else {
        return;
    };
    for on_gap in ["fail", "skip"] {
        let flow = Flow::new("midgap", &format!("mirrorslice.on.gap = {on_gap}\n"));
        // One record per produce request: a copy slow enough for the gap to open mid-slice.
        flow.add_config(&format!(
            "{}.producer.batch.num.messages = 1\n",
            flow.target
        ));
        let topic = format!("midgap-{}", flow.source);
        let (total, deleted_below) = (100_000i64, 98_000i64);
        common::create_topic(&stack.a, &topic, 1, &[]).await;
        common::produce(&stack.a, &topic, &common::keyed_records(1, total as usize)).await;

        let child = flow
            .command("60s")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        common::faults::wait_for_copied(&stack.b, &flow.remote(&topic), 1, 1_000);
        common::delete_records(&stack.a, &topic, 0, deleted_below).await;
        let (out, took) = common::faults::wait_for_exit(child, Duration::from_secs(90));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("report is not JSON ({e}); stderr: {stderr}"));
        assert!(
            took < Duration::from_secs(40),
            "{on_gap}: slice ran {took:?}"
        );
        let gap = &report["slices"][0]["gaps"][0];
        assert_eq!(gap["kind"], "below_log_start", "{on_gap}: {report:#}");
        assert_eq!(gap["to_offset"], deleted_below, "{gap}");
        let from = gap["from_offset"].as_i64().expect("from_offset");
        assert!((1_000..deleted_below).contains(&from), "{gap}");
        let mut want: BTreeSet<Vec<u8>> = (0..from).map(|i| format!("k{i}").into_bytes()).collect();
        if on_gap == "fail" {
            assert_ne!(out.status.code(), Some(0), "a gap must fail: {report:#}");
        } else {
            assert_eq!(out.status.code(), Some(0), "{stderr}\n{report:#}");
            assert_eq!(gap["skipped"], true, "{gap}");
            assert_eq!(gap["resumed_at"], deleted_below, "{gap}");
            assert_eq!(report["slices"][0]["caught_up"], true, "{report:#}");
            want.extend((deleted_below..total).map(|i| format!("k{i}").into_bytes()));
        }
        let copied = common::consume_all(&stack.b, &flow.remote(&topic), 1).await;
        let keys: BTreeSet<Vec<u8>> = copied.iter().filter_map(|r| r.key.clone()).collect();
        assert_eq!(keys.len(), want.len(), "{on_gap}: records on the target");
        assert!(
            keys == want,
            "{on_gap}: the target holds other records than expected"
        );
        eprintln!("{on_gap}: gap {from}..{deleted_below} handled; slice ran {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_slice_then_resume_loses_nothing() {
    let stack = common::stack();
    let flow = Flow::new("bulk.*", "");
    // Commit often so the kill lands between commits with work in flight, and — for the slice
    // that gets killed — send one record per produce request so the copy is slow enough to be
    // interrupted. Both are settings of the target cluster's worker (§2.4).
    let normal = std::fs::read_to_string(&flow.config).unwrap()
        + &format!("{}.offset.flush.interval.ms = 100\n", flow.target);
    let throttled = normal.clone() + &format!("{}.producer.batch.num.messages = 1\n", flow.target);
    std::fs::write(&flow.config, throttled).unwrap();

    let topic = format!("bulk-{}", flow.source);
    let partitions = 4;
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    let total = 8_000usize;
    let data: Vec<TestRecord> = (0..total)
        .map(|i| TestRecord {
            partition: (i % partitions as usize) as i32,
            key: Some(format!("{i}").into_bytes()),
            value: Some(vec![b'v'; 256]),
            headers: vec![],
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect();
    common::produce(&stack.a, &topic, &data).await;

    let mut child = flow
        .command("60s")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill as soon as some records have reached the target, while the slice is still copying.
    let remote = flow.remote(&topic);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !common::has_records(&stack.b, &remote, partitions).await {
        assert!(Instant::now() < deadline, "nothing copied within 30s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the slice finished before it could be killed; the test would prove nothing"
    );
    Command::new("kill")
        .args(["-9", &child.id().to_string()])
        .status()
        .expect("kill -9");
    let _ = child.wait();

    // Resume, as the schedule would: slices until one reports caught up. Everything arrives;
    // duplicates are allowed (at-least-once), losses are not.
    std::fs::write(&flow.config, normal).unwrap();
    let mut report = flow.run_ok();
    for _ in 0..5 {
        if report["caught_up"] == true {
            break;
        }
        report = flow.run_ok();
    }
    assert_eq!(report["caught_up"], true, "{report:#}");
    let got = common::consume_all(&stack.b, &remote, partitions).await;
    let keys: BTreeSet<Vec<u8>> = got.iter().filter_map(|r| r.key.clone()).collect();
    if keys.len() != total {
        let mut per: BTreeMap<i32, (usize, i64)> = BTreeMap::new();
        for r in &got {
            let e = per.entry(r.partition).or_default();
            e.0 += 1;
            e.1 = e.1.max(r.offset);
        }
        eprintln!("resume report: {report:#}\nper partition (count, max offset): {per:?}");
    }
    assert_eq!(keys.len(), total, "every source record reached the target");
    assert!(got.len() >= total);
    eprintln!(
        "kill -9 test: target has {} records for {total} sources after the resume",
        got.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_of_one_flow_never_duplicate() {
    let stack = common::stack();
    let flow = Flow::new("par.*", "");
    let name = flow.name();
    // Two tasks, so two runs can share the work or one can do it all.
    let body = std::fs::read_to_string(&flow.config).unwrap() + &format!("{name}.tasks.max = 2\n");
    std::fs::write(&flow.config, body).unwrap();
    let topic = format!("par-{}", flow.source);
    let partitions = 4;
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    let data = records(partitions, 500, "p");
    common::produce(&stack.a, &topic, &data).await;

    let children: Vec<_> = (0..2)
        .map(|_| {
            flow.command("60s")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut copied = 0u64;
    let mut reports = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        copied += report["slices"][0]["records"].as_u64().unwrap();
        reports.push(report["slices"][0].clone());
    }
    // A run that found a task held elsewhere leaves it; catch up what is left.
    let last = flow.run_ok();
    copied += last["records"].as_u64().unwrap();
    reports.push(last);
    if copied != data.len() as u64 {
        for r in &reports {
            eprintln!("{r:#}");
        }
    }
    assert_eq!(copied, data.len() as u64, "each record copied exactly once");
    let got = target_records(&flow, &topic, partitions).await;
    assert_eq!(got.len(), data.len(), "no duplicates on the target");
    assert_eq!(sorted(got), sorted(data));
}

// A producer setting that would let an acknowledged record be lost is refused before anything
// is copied, naming the key and its line; one that only risks order is a loud warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_settings_that_void_the_guarantee_are_refused() {
    let stack = common::stack();
    let flow = Flow::new("acks", "");
    let topic = format!("acks-{}", flow.source);
    common::create_topic(&stack.a, &topic, 1, &[]).await;
    common::produce(&stack.a, &topic, &records(1, 3, "x")).await;
    let body = std::fs::read_to_string(&flow.config).unwrap();
    let key = format!("{}.producer.acks", flow.target);
    std::fs::write(&flow.config, format!("{body}{key} = 1\n")).unwrap();
    let (code, report, stderr) = flow.run();
    assert_eq!(code, 2, "a configuration error: {report:#}\n{stderr}");
    assert!(
        stderr.contains(&key) && stderr.contains("mm2.properties:") && stderr.contains("acks=all"),
        "{stderr}"
    );
    assert_eq!(
        common::created_partition_count(&stack.b, &flow.remote(&topic)),
        None,
        "nothing was set up or copied"
    );

    let warned = format!(
        "{}.producer.max.in.flight.requests.per.connection",
        flow.target
    );
    std::fs::write(&flow.config, format!("{body}{warned} = 5\n")).unwrap();
    let report = flow.run_ok();
    let warnings = report["connector"]["warnings"].to_string();
    assert!(warnings.contains(&warned), "{report:#}");
    assert_eq!(report["records"], 3);
}
