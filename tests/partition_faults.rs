//! Source partitions that go wrong under a slice (issue #19): a partition the consumer cannot
//! read fails loudly (its report names the error, the task is FAILED, the slice exits non-zero)
//! while the others are copied; a source broker that crashes and restarts mid-slice loses
//! nothing. Each test runs its source on an Apache Kafka node of its own
//! (`common::faults::PrivateServer`), never the shared stack.

mod common;

use common::cli_flow::Flow;
use common::faults::{PrivateServer, Watermarks};
use common::TestRecord;
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

/// Flips one byte of the first occurrence of `marker` in partition `partition`'s active log
/// segment on a private Apache Kafka node: the batch holding it then fails its CRC check. The
/// broker serves segments without checking them (zero-copy), as after a disk or memory fault.
fn corrupt_on_disk(broker: &PrivateServer, topic: &str, partition: i32, marker: &[u8]) {
    let segment = broker
        .log_dir()
        .join(format!("{topic}-{partition}"))
        .join("00000000000000000000.log");
    let mut bytes = std::fs::read(&segment).expect("the partition's first segment");
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap_or_else(|| panic!("{marker:?} not found in {}", segment.display()));
    bytes[at] ^= 0xff;
    std::fs::write(&segment, bytes).expect("rewrite the segment");
}

// Partition 1 holds a batch whose bytes were damaged on the source broker's disk. The consumer
// checks CRCs (Java's default; librdkafka's is off): the partition fails at that batch, its
// report and the task's FAILED status name the error, the slice exits non-zero; partition 0 is
// still copied completely, and nothing of the damaged batch or after it reaches the target.
// Before, librdkafka's unchecked read would have re-written the damaged record under a fresh CRC.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_whose_batch_is_corrupt_fails_loudly_and_the_others_are_copied() {
    let Some(stack) = common::kafka_only("corrupts a log segment on an Apache Kafka node's disk")
    else {
        return;
    };
    let source = PrivateServer::kafka();
    let flow = Flow::between(&source.bootstrap(), &stack.b, "");
    let topic = format!("crc-{}", flow.source);
    common::create_topic(&source.bootstrap(), &topic, 2, &[]).await;
    let before: Vec<TestRecord> = (0..2)
        .flat_map(|p| (0..50).map(move |i| TestRecord::kv(p, &format!("k{i}"), "healthy")))
        .collect();
    common::produce(&source.bootstrap(), &topic, &before).await;
    let marker = b"DAMAGED-ON-DISK";
    let damaged = TestRecord::kv(1, "bad", std::str::from_utf8(marker).unwrap());
    common::produce(&source.bootstrap(), &topic, &[damaged]).await;
    let after: Vec<TestRecord> = (0..2)
        .flat_map(|p| (50..80).map(move |i| TestRecord::kv(p, &format!("k{i}"), "healthy")))
        .collect();
    common::produce(&source.bootstrap(), &topic, &after).await;
    corrupt_on_disk(&source, &topic, 1, marker);

    let (code, report, stderr) = flow.run();
    assert_ne!(code, 0, "a failed partition fails the slice: {report:#}");
    let slice = &report["slices"][0];
    assert_eq!(slice["ok"], false, "{report:#}");
    let task = &slice["tasks"][0];
    let error = task["error"].as_str().expect("the task's error");
    assert!(
        error.contains(&format!("{topic}-1")) && error.contains("at offset 50"),
        "the task error names the partition and where it stopped: {error}"
    );
    let partitions = task["partitions"].as_array().unwrap();
    let p = |n: i64| {
        partitions
            .iter()
            .find(|r| r["partition"] == n)
            .unwrap_or_else(|| panic!("partition {n} reported: {report:#}"))
    };
    assert!(p(1)["error"].is_string(), "{report:#}");
    assert_eq!(p(1)["caught_up"], false);
    assert_eq!(p(1)["end_offset"], 50, "committed up to the damaged batch");
    assert_eq!(p(0)["error"], Value::Null);
    assert_eq!(p(0)["caught_up"], true, "the healthy partition is copied");
    assert!(stderr.contains("source partition failed"), "{stderr}");

    let copied = common::consume_all(&stack.b, &flow.remote(&topic), 2).await;
    let on = |n: i32| copied.iter().filter(|r| r.partition == n).count();
    assert_eq!(on(0), 80, "all of partition 0");
    assert_eq!(
        on(1),
        50,
        "partition 1 up to the damaged batch, nothing of it or after"
    );
    let statuses =
        common::read_status(&stack.b, &format!("mm2-status.{}.internal", flow.source)).await;
    let status = &statuses["status-task-MirrorSourceConnector-0"];
    assert_eq!(status["state"], "FAILED");
    assert!(status["trace"].as_str().unwrap().contains(&topic));

    // The next slice fails the same way: the partition is never skipped silently.
    let (code, report, _) = flow.run();
    assert_ne!(code, 0, "{report:#}");
    assert_eq!(
        common::consume_all(&stack.b, &flow.remote(&topic), 2)
            .await
            .len(),
        130
    );
}

// The source broker crashes (SIGKILL) while a slice is copying and comes back on the same port
// with its data. The consumer's connection errors are the broker's transient state, not a
// partition failure: the slice rides them out, and with the next slice every record is on the
// target, nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_broker_restarted_mid_slice_loses_nothing() {
    let Some(stack) = common::kafka_only("restarts an Apache Kafka node with its data") else {
        return;
    };
    let mut source = PrivateServer::kafka();
    let flow = Flow::between(&source.bootstrap(), &stack.b, "");
    let topic = format!("restart-{}", flow.source);
    let (partitions, total) = (2, 100_000usize);
    common::create_topic(&source.bootstrap(), &topic, partitions, &[]).await;
    common::produce(
        &source.bootstrap(),
        &topic,
        &common::keyed_records(partitions, total),
    )
    .await;

    let remote = flow.remote(&topic);
    let slice = flow
        .command("60s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let target = Watermarks::new(&stack.b);
    assert!(
        target.wait_for(&remote, partitions, 5_000, Duration::from_secs(60)),
        "the slice started copying"
    );
    source.restart();
    let (out, took) = common::faults::wait_for_exit(slice, Duration::from_secs(120));
    let copied_then = target.total(&remote, partitions);
    eprintln!(
        "slice across the restart: exit {:?} after {took:?}, {copied_then} of {total} copied",
        out.status.code()
    );

    let (code, report, stderr) = flow.run();
    assert_eq!(code, 0, "the slice after the restart: {stderr}\n{report:#}");
    assert_eq!(report["slices"][0]["caught_up"], true, "{report:#}");
    let duplicates = common::assert_all_copied(&stack.b, &remote, partitions, total).await;
    eprintln!("{duplicates} duplicates after the restart");
}
