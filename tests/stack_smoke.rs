//! Smoke test of the local stack and of the harness in `tests/common`.
//!
//! Why: every other integration test trusts that the brokers round-trip exactly what MM2 must
//! copy — null keys and values (tombstones), repeated header keys in order, null header values,
//! explicit CreateTime timestamps, chosen partitions — and that topic configs set at creation
//! are kept. If a broker (tansu or Apache Kafka, per `MIRRORSLICE_BROKER`: the tests run on
//! both) or the harness lost any of that, mirror tests would pass or fail for the wrong reason,
//! so it is checked here once, directly.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{consume_all, consume_n, create_topic, produce, stack, unique, TestRecord};
use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Offset, Timestamp, TopicPartitionList};

fn rec(
    partition: i32,
    key: Option<&str>,
    value: Option<&str>,
    headers: &[(&str, Option<&str>)],
    timestamp: i64,
) -> TestRecord {
    TestRecord {
        partition,
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(|v| v.as_bytes().to_vec())))
            .collect(),
        timestamp: Some(timestamp),
    }
}

/// Records covering what MM2 must preserve byte for byte.
fn sample_records() -> Vec<TestRecord> {
    // Explicit, distinct and old timestamps: a broker that re-stamps would not reproduce them.
    let t0 = 1_600_000_000_000_i64;
    vec![
        rec(0, Some("k0"), Some("v0"), &[], t0),
        // Null key, value present.
        rec(0, None, Some("no-key"), &[("h", Some("x"))], t0 + 1),
        // Tombstone: key present, null value.
        rec(1, Some("k1"), None, &[], t0 + 2),
        // Null key and null value together.
        rec(1, None, None, &[], t0 + 3),
        // Repeated header keys keep order; a header may have a null or an empty value.
        rec(
            2,
            Some("k2"),
            Some("v2"),
            &[
                ("dup", Some("1")),
                ("dup", Some("2")),
                ("nullh", None),
                ("empty", Some("")),
            ],
            t0 + 4,
        ),
        // Empty key and empty value are not nulls.
        rec(2, Some(""), Some(""), &[("dup", Some("3"))], t0 + 5),
        rec(0, Some("k0"), Some("v0-again"), &[], t0 + 6),
    ]
}

fn ordered(records: &[TestRecord]) -> Vec<TestRecord> {
    // Stable sort: order within a partition is produce order.
    let mut v = records.to_vec();
    v.sort_by_key(|r| r.partition);
    v
}

#[tokio::test]
async fn cluster_a_round_trips_records_exactly() {
    let s = stack();
    let topic = unique("smoke");
    // Not cleanup.policy=compact here: real Kafka rejects null-key records on compacted topics
    // (tansu accepts them), and this test must hold on both.
    create_topic(&s.a, &topic, 3, &[("message.timestamp.type", "CreateTime")]).await;

    let records = sample_records();
    let positions = produce(&s.a, &topic, &records).await;
    // Every record landed in the partition asked for, at consecutive offsets from 0.
    for p in 0..3 {
        let offsets: Vec<i64> = positions
            .iter()
            .zip(&records)
            .filter(|(_, r)| r.partition == p)
            .map(|((dp, off), _)| {
                assert_eq!(*dp, p);
                *off
            })
            .collect();
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(offsets, expected, "offsets in partition {p}");
    }

    let got = consume_n(&s.a, &topic, records.len(), Duration::from_secs(20)).await;
    assert_eq!(got.len(), records.len());
    for r in &got {
        assert_eq!(r.topic, topic);
        assert!(
            matches!(r.timestamp, Timestamp::CreateTime(_)),
            "timestamp type of {r:?}"
        );
    }
    let got_records: Vec<TestRecord> = got.iter().map(|r| r.to_test_record()).collect();
    assert_eq!(got_records, ordered(&records));

    // consume_all stops at the end each partition's Fetch reports; nothing is being produced
    // now, so that is everything.
    let all = consume_all(&s.a, &topic, 3).await;
    assert_eq!(all, got);
}

#[tokio::test]
async fn cluster_a_keeps_topic_config_set_at_creation() {
    let s = stack();
    let topic = unique("smoke-config");
    create_topic(&s.a, &topic, 3, &[("cleanup.policy", "compact")]).await;
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &s.a)
        .create()
        .unwrap();
    let results = admin
        .describe_configs([&ResourceSpecifier::Topic(&topic)], &AdminOptions::new())
        .await
        .unwrap();
    let resource = results.into_iter().next().unwrap().unwrap();
    let policy = resource.get("cleanup.policy").and_then(|e| e.value.clone());
    assert_eq!(policy.as_deref(), Some("compact"));
    assert_eq!(common::created_partition_count(&s.a, &topic), Some(3));
}

#[tokio::test]
async fn cluster_b_answers_metadata() {
    let s = stack();
    let b = s.b.clone();
    let brokers = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &b)
            .create()
            .unwrap();
        let md = consumer
            .fetch_metadata(None, Duration::from_secs(10))
            .unwrap();
        md.brokers()
            .iter()
            .map(|br| format!("{}:{}", br.host(), br.port()))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    // The broker advertises the address we bootstrap from, so clients reconnect correctly.
    assert_eq!(brokers, vec![s.b.clone()]);
    assert_ne!(s.a, s.b, "clusters A and B must be different brokers");
}

#[test]
fn dynamodb_endpoint_answers_http() {
    let s = stack();
    let hostport = s
        .dynamodb
        .strip_prefix("http://")
        .expect("endpoint is an http:// URL");
    let mut conn = TcpStream::connect(hostport).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(conn, "GET / HTTP/1.0\r\nHost: {hostport}\r\n\r\n").unwrap();
    let mut head = [0u8; 16];
    let n = conn.read(&mut head).unwrap();
    let head = String::from_utf8_lossy(&head[..n]);
    assert!(
        head.starts_with("HTTP/1."),
        "not an HTTP response: {head:?}"
    );
}

#[test]
fn unique_names_differ_and_are_topic_safe() {
    let a = unique("t");
    let b = unique("t");
    assert_ne!(a, b);
    for name in [&a, &b] {
        assert!(name.starts_with("t-"));
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{name}"
        );
    }
}

#[tokio::test]
async fn harness_consumer_leaves_no_group_behind() {
    let s = stack();
    let topic = unique("smoke-groups");
    create_topic(&s.a, &topic, 1, &[]).await;
    produce(&s.a, &topic, &[TestRecord::kv(0, "k", "v")]).await;
    consume_n(&s.a, &topic, 1, Duration::from_secs(20)).await;
    let real_group = unique("smoke-group");
    let (a, t, g) = (s.a.clone(), topic.clone(), real_group.clone());
    let groups = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &a)
            .set("group.id", &g)
            .create()
            .unwrap();
        // A group that commits an offset exists on the broker; the harness's never commit.
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&t, 0, Offset::Offset(1)).unwrap();
        consumer.commit(&tpl, CommitMode::Sync).unwrap();
        let list = consumer
            .fetch_group_list(None, Duration::from_secs(10))
            .unwrap();
        list.groups()
            .iter()
            .map(|g| g.name().to_string())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    // The listing itself must work, or the check below proves nothing.
    assert!(
        groups.contains(&real_group),
        "{real_group} not in {groups:?}"
    );
    let pid = format!("harness-{}-", std::process::id());
    assert!(
        !groups.iter().any(|g| g.starts_with(&pid)),
        "harness groups listed: {groups:?}"
    );
}
