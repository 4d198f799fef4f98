//! Integration-test harness shared by every `tests/*.rs` file (`mod common;`).
//!
//! Why it exists: MM2 compatibility can only be shown against real Kafka-protocol brokers, so
//! each test talks to the local stack from `infra/local/stack.sh` — two brokers standing in for
//! clusters A and B (tansu, or Apache Kafka with `MIRRORSLICE_BROKER=kafka`), and moto as the DynamoDB endpoint for leases. The stack is started at
//! most once per test process ([`stack`]); the script's `flock` makes concurrent test binaries
//! safe. The brokers are shared by all tests, so every test names its topics, groups and tables
//! with [`unique`] and never depends on what another test wrote.
//!
//! The Kafka helpers use the same `rdkafka` client as the crate, but stay deliberately plain
//! (no consumer group, no retries beyond librdkafka's own) so a test failure points at the code
//! under test, not at the harness. Consumers here never set `group.id`: tests of checkpoint and
//! offset translation list consumer groups, and a harness group would show up in them.
//!
//! tansu quirk to keep in mind: ListOffsets(LATEST) — rdkafka's `fetch_watermarks` — answers
//! the last batch's base offset + 1, which trails the log end by up to that batch's size; the
//! high watermark in Fetch responses is right. So [`consume_all`] stops on partition EOF (from
//! Fetch), and [`consume_n`] waits for an expected count without looking at watermarks.
#![allow(dead_code)] // each test binary uses a different subset of the helpers

pub mod cli_flow;
pub mod faults;
pub mod iam;
pub mod java_mm2;
pub mod secrets;
pub mod secured;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::admin::{AdminClient, AdminOptions, NewPartitions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, Timestamp, TopicPartitionList};

/// How long a single broker request from the harness may take before the test fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Which kind of broker plays clusters A and B (`MIRRORSLICE_BROKER`, as in `stack.sh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broker {
    /// tansu: a young Kafka-protocol broker with known gaps (no DeleteRecords, retention or
    /// CreatePartitions; ListOffsets(LATEST) trails the log end). The default.
    Tansu,
    /// Apache Kafka, the broker our users run (Amazon MSK is Apache Kafka).
    Kafka,
}

impl Broker {
    fn from_env_value(value: &str) -> Broker {
        match value {
            "" | "tansu" => Broker::Tansu,
            "kafka" => Broker::Kafka,
            other => panic!("MIRRORSLICE_BROKER={other}: expected tansu or kafka"),
        }
    }
}

/// Addresses of the running local stack.
#[derive(Debug, Clone)]
pub struct Stack {
    /// Bootstrap servers of cluster A (`host:port`).
    pub a: String,
    /// Bootstrap servers of cluster B (`host:port`).
    pub b: String,
    /// DynamoDB endpoint URL (`http://host:port`), as in `AWS_ENDPOINT_URL_DYNAMODB`.
    pub dynamodb: String,
    /// The brokers behind A and B: tests of what tansu cannot do run on Apache Kafka only.
    pub broker: Broker,
}

impl Stack {
    /// Environment for a child process (`mirrorslice` CLI) or an AWS SDK client: the same
    /// variables `stack.sh env` prints. Passed explicitly rather than set in this process,
    /// because `setenv` races with librdkafka's threads reading the environment.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MIRRORSLICE_STACK_A", self.a.clone()),
            ("MIRRORSLICE_STACK_B", self.b.clone()),
            ("AWS_ENDPOINT_URL_DYNAMODB", self.dynamodb.clone()),
            // moto serves every AWS API it mocks on one endpoint.
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", self.dynamodb.clone()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ACCESS_KEY_ID", "test".to_string()),
            ("AWS_SECRET_ACCESS_KEY", "test".to_string()),
        ]
    }

    /// Whether A and B are Apache Kafka brokers.
    pub fn is_kafka(&self) -> bool {
        self.broker == Broker::Kafka
    }
}

/// Path of the stack script, independent of the test's working directory.
pub fn stack_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("infra/local/stack.sh")
}

/// Runs `stack.sh <command>` (which inherits `MIRRORSLICE_BROKER` and the port variables) and
/// returns its standard output; a failure panics with both streams.
fn run_stack_script(command: &str) -> String {
    let script = stack_script();
    let out = Command::new("bash")
        .arg(&script)
        .arg(command)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    if !out.status.success() {
        panic!(
            "{} {command} failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts the local stack once per test process and returns its addresses.
///
/// `MIRRORSLICE_BROKER` (`tansu`, the default, or `kafka`) picks the brokers and the ports
/// follow the script's variables; the addresses are read from `stack.sh env`, so the script is
/// the one place that knows them. With `MIRRORSLICE_STACK_EXTERNAL=1` the script is not run and
/// `MIRRORSLICE_STACK_A`, `MIRRORSLICE_STACK_B` and `AWS_ENDPOINT_URL_DYNAMODB` name brokers
/// managed elsewhere.
pub fn stack() -> &'static Stack {
    static STACK: OnceLock<Stack> = OnceLock::new();
    STACK.get_or_init(|| {
        let broker = Broker::from_env_value(
            std::env::var("MIRRORSLICE_BROKER")
                .unwrap_or_default()
                .as_str(),
        );
        if std::env::var("MIRRORSLICE_STACK_EXTERNAL").as_deref() == Ok("1") {
            let var = |k: &str| {
                std::env::var(k)
                    .unwrap_or_else(|_| panic!("MIRRORSLICE_STACK_EXTERNAL=1 needs {k} set"))
            };
            return Stack {
                a: var("MIRRORSLICE_STACK_A"),
                b: var("MIRRORSLICE_STACK_B"),
                dynamodb: var("AWS_ENDPOINT_URL_DYNAMODB"),
                broker,
            };
        }
        run_stack_script("up");
        let var = stack_exports();
        Stack {
            a: var("MIRRORSLICE_STACK_A"),
            b: var("MIRRORSLICE_STACK_B"),
            dynamodb: var("AWS_ENDPOINT_URL_DYNAMODB"),
            broker,
        }
    })
}

/// The variables `stack.sh env` exports, as a lookup that panics naming a missing one.
pub fn stack_exports() -> impl Fn(&str) -> String {
    let exports: BTreeMap<String, String> = run_stack_script("env")
        .lines()
        .filter_map(|line| line.strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| {
        exports
            .get(k)
            .cloned()
            .unwrap_or_else(|| panic!("`stack.sh env` printed no {k}"))
    }
}

/// The stack if its brokers are Apache Kafka; on tansu `None`, after saying why the calling
/// test is skipped there (`why`: what tansu lacks).
pub fn kafka_only(why: &str) -> Option<&'static Stack> {
    let stack = stack();
    if !stack.is_kafka() {
        eprintln!("skipped on tansu: {why}");
        return None;
    }
    Some(stack)
}

/// A name no other test (in this or a parallel test process, or an earlier run against the
/// same brokers) uses: `prefix-<pid>-<counter>-<time>`. Only `[a-zA-Z0-9-]` are added, so the
/// result is a legal topic, group and table name, and contains no `.` that MM2's default
/// replication policy would read as a separator.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock before 1970")
        .as_micros();
    // Low 32 bits of microseconds: distinct across runs, short enough to read in a failure.
    format!("{prefix}-{}-{n}-{:x}", std::process::id(), micros as u32)
}

/// The `mirrorslice` CLI binary built for this test run.
pub fn mirrorslice_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mirrorslice"))
}

/// A record to produce. `None` key/value are Kafka nulls (distinct from empty); headers keep
/// their order and may repeat keys; `timestamp: None` lets the producer stamp it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRecord {
    pub partition: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp: Option<i64>,
}

impl TestRecord {
    /// A record with a key and value and nothing else, for tests that only count records.
    pub fn kv(partition: i32, key: &str, value: &str) -> Self {
        TestRecord {
            partition,
            key: Some(key.as_bytes().to_vec()),
            value: Some(value.as_bytes().to_vec()),
            headers: Vec::new(),
            timestamp: None,
        }
    }
}

/// A record read back from a broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp: Timestamp,
}

impl ConsumedRecord {
    /// The produce-side view of this record, for comparing with what a test produced.
    /// The timestamp is `Some` for both CreateTime and LogAppendTime.
    pub fn to_test_record(&self) -> TestRecord {
        TestRecord {
            partition: self.partition,
            key: self.key.clone(),
            value: self.value.clone(),
            headers: self.headers.clone(),
            timestamp: self.timestamp.to_millis(),
        }
    }
}

fn client_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("client.id", "mirrorslice-test-harness");
    c
}

/// Runs blocking librdkafka calls off the async runtime (tests use a current-thread runtime
/// by default), re-raising a panic with its original message.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Creates `topic` with `partitions` partitions (replication factor 1) and the given topic
/// configs, and waits until metadata shows every partition. Panics if creation fails.
pub async fn create_topic(bootstrap: &str, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
    let admin: AdminClient<DefaultClientContext> =
        client_config(bootstrap).create().expect("admin client");
    let mut new_topic = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        new_topic = new_topic.set(k, v);
    }
    let opts = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
    let results = admin
        .create_topics([&new_topic], &opts)
        .await
        .unwrap_or_else(|e| panic!("create topic {topic} on {bootstrap}: {e}"));
    for r in results {
        if let Err((name, code)) = r {
            panic!("create topic {name} on {bootstrap}: {code:?}");
        }
    }
    wait_for_partitions(bootstrap, topic, partitions).await
}

/// Waits until metadata shows `topic` with `partitions` partitions; panics after
/// `REQUEST_TIMEOUT`.
async fn wait_for_partitions(bootstrap: &str, topic: &str, partitions: i32) {
    let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
    blocking(move || {
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        while partition_count(&bootstrap, &topic) != Some(partitions) {
            assert!(
                Instant::now() < deadline,
                "topic {topic} on {bootstrap} did not show {partitions} partitions in metadata"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
}

/// Partition count of `topic` from a metadata request, `None` if the broker does not know it.
/// Blocking.
pub fn partition_count(bootstrap: &str, topic: &str) -> Option<i32> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("allow.auto.create.topics", "false")
        .create()
        .expect("metadata client");
    let md = consumer.fetch_metadata(Some(topic), REQUEST_TIMEOUT).ok()?;
    let t = md.topics().iter().find(|t| t.name() == topic)?;
    if t.error().is_some() || t.partitions().is_empty() {
        return None;
    }
    Some(t.partitions().len() as i32)
}

/// Partition count of a topic that was just created: Apache Kafka answers CreateTopics before
/// every broker's metadata cache shows the topic, so a metadata request right after it can still
/// say "unknown topic". Polls for up to `REQUEST_TIMEOUT`; `None` only if it never appears.
/// Blocking.
pub fn created_partition_count(bootstrap: &str, topic: &str) -> Option<i32> {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    loop {
        let count = partition_count(bootstrap, topic);
        if count.is_some() || Instant::now() >= deadline {
            return count;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Produces `records` in order and waits for every delivery report; panics on any failure.
/// Returns the `(partition, offset)` each record was written at, in input order.
pub async fn produce(bootstrap: &str, topic: &str, records: &[TestRecord]) -> Vec<(i32, i64)> {
    let producer: FutureProducer = client_config(bootstrap)
        .set("message.timeout.ms", "30000")
        // One in-flight request keeps per-partition order even across retries.
        .set("max.in.flight.requests.per.connection", "1")
        // Below librdkafka's default (100000), so that every large batch goes through the
        // queue-full path below, not only the ones that meet a slow broker.
        .set("queue.buffering.max.messages", "20000")
        .create()
        .expect("producer");
    // Deliveries in flight, oldest first. When librdkafka's local queue is full (a big batch
    // against a slow broker), the oldest delivery is awaited to make room, then the send retried.
    let mut pending = VecDeque::new();
    let mut positions = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let mut rec = test_record(topic, r);
        loop {
            match producer.send_result(rec) {
                Ok(f) => break pending.push_back((i, f)),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back))
                    if !pending.is_empty() =>
                {
                    rec = back;
                    let (j, f) = pending.pop_front().expect("checked non-empty");
                    positions.push(delivered(j, f, topic, bootstrap).await);
                }
                Err((e, _)) => panic!("enqueue record #{i} for {topic} on {bootstrap}: {e}"),
            }
        }
    }
    for (j, f) in pending {
        positions.push(delivered(j, f, topic, bootstrap).await);
    }
    positions
}

fn test_record<'a>(topic: &'a str, r: &'a TestRecord) -> FutureRecord<'a, [u8], [u8]> {
    let mut headers = OwnedHeaders::new_with_capacity(r.headers.len());
    for (k, v) in &r.headers {
        headers = headers.insert(Header {
            key: k.as_str(),
            value: v.as_deref(),
        });
    }
    let mut rec = FutureRecord::to(topic)
        .partition(r.partition)
        .headers(headers);
    if let Some(k) = &r.key {
        rec = rec.key(k.as_slice());
    }
    if let Some(v) = &r.value {
        rec = rec.payload(v.as_slice());
    }
    if let Some(ts) = r.timestamp {
        rec = rec.timestamp(ts);
    }
    rec
}

/// The `(partition, offset)` of record #`i`'s delivery; panics on failure.
async fn delivered(i: usize, f: DeliveryFuture, topic: &str, bootstrap: &str) -> (i32, i64) {
    match f.await {
        Ok(Ok(d)) => (d.partition, d.offset),
        Ok(Err((e, _))) => panic!("deliver record #{i} to {topic} on {bootstrap}: {e}"),
        Err(_) => panic!("delivery of record #{i} to {topic} on {bootstrap} was cancelled"),
    }
}

fn assigned_consumer(bootstrap: &str, topic: &str, partitions: i32, eof: bool) -> BaseConsumer {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("enable.partition.eof", if eof { "true" } else { "false" })
        // librdkafka's assign() needs a group handle, but with assign (no subscribe) and no
        // commits the group is never joined, so it does not appear in group listings.
        .set("group.id", unique("harness"))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("allow.auto.create.topics", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .expect("assignment");
    }
    consumer.assign(&tpl).expect("assign");
    consumer
}

fn to_consumed<M: Message>(m: &M) -> ConsumedRecord {
    ConsumedRecord {
        topic: m.topic().to_string(),
        partition: m.partition(),
        offset: m.offset(),
        key: m.key().map(<[u8]>::to_vec),
        value: m.payload().map(<[u8]>::to_vec),
        headers: m
            .headers()
            .map(|hs| {
                hs.iter()
                    .map(|h| (h.key.to_string(), h.value.map(<[u8]>::to_vec)))
                    .collect()
            })
            .unwrap_or_default(),
        timestamp: m.timestamp(),
    }
}

fn sort_records(records: &mut [ConsumedRecord]) {
    records.sort_by_key(|r| (r.partition, r.offset));
}

/// Every record in partitions `0..partitions` of `topic`, from the log start to the end the
/// broker reports in its fetch responses, sorted by (partition, offset).
///
/// "End" is librdkafka's partition-EOF event, which comes from the high watermark in Fetch
/// responses. tansu gets that one right but answers ListOffsets(LATEST) — what
/// `fetch_watermarks` asks — with the last batch's *base* offset + 1, so comparing positions
/// with `fetch_watermarks` would stop early. When the count is known, [`consume_n`] is simpler.
pub async fn consume_all(bootstrap: &str, topic: &str, partitions: i32) -> Vec<ConsumedRecord> {
    let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
    blocking(move || {
        let consumer = assigned_consumer(&bootstrap, &topic, partitions, true);
        let mut at_end = vec![false; partitions as usize];
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !at_end.iter().all(|e| *e) {
            assert!(
                Instant::now() < deadline,
                "consume_all {topic} on {bootstrap}: partitions at end {at_end:?} after 30s"
            );
            match consumer.poll(Duration::from_millis(100)) {
                None => {}
                Some(Err(KafkaError::PartitionEOF(p))) => at_end[p as usize] = true,
                Some(Err(e)) => panic!("consume {topic} on {bootstrap}: {e}"),
                Some(Ok(m)) => {
                    at_end[m.partition() as usize] = false;
                    out.push(to_consumed(&m));
                }
            }
        }
        sort_records(&mut out);
        out
    })
    .await
}

/// Reads `topic` (all its partitions, from the beginning) until `n` records have arrived, and
/// returns them sorted by (partition, offset). Waits for the topic to appear if it does not
/// exist yet (a mirror may still be creating it). Panics after `timeout` with what it got.
/// Records beyond `n` that arrive in the same poll are not returned.
pub async fn consume_n(
    bootstrap: &str,
    topic: &str,
    n: usize,
    timeout: Duration,
) -> Vec<ConsumedRecord> {
    let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
    blocking(move || {
        let deadline = Instant::now() + timeout;
        let partitions = loop {
            if let Some(p) = partition_count(&bootstrap, &topic) {
                break p;
            }
            assert!(
                Instant::now() < deadline,
                "consume_n: topic {topic} does not exist on {bootstrap} after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let consumer = assigned_consumer(&bootstrap, &topic, partitions, false);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if Instant::now() >= deadline {
                sort_records(&mut out);
                panic!(
                    "consume_n: {} of {n} records from {topic} on {bootstrap} after {timeout:?}; got {out:#?}",
                    out.len()
                );
            }
            match consumer.poll(Duration::from_millis(100)) {
                None => {}
                Some(Err(e)) => panic!("consume {topic} on {bootstrap}: {e}"),
                Some(Ok(m)) => out.push(to_consumed(&m)),
            }
        }
        sort_records(&mut out);
        out
    })
    .await
}

/// Deletes the records of `topic`'s `partition` below offset `before` (DeleteRecords, which
/// moves the log start exactly as retention does) and checks the new log start. Apache Kafka
/// only: tansu has no DeleteRecords.
pub async fn delete_records(bootstrap: &str, topic: &str, partition: i32, before: i64) {
    let admin: AdminClient<DefaultClientContext> =
        client_config(bootstrap).create().expect("admin client");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, Offset::Offset(before))
        .expect("partition offset");
    let opts = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
    let result = admin
        .delete_records(&tpl, &opts)
        .await
        .unwrap_or_else(|e| panic!("delete records of {topic}-{partition} on {bootstrap}: {e}"));
    for e in result.elements() {
        if let Err(err) = e.error() {
            panic!("delete records of {topic}-{partition} on {bootstrap}: {err}");
        }
        assert_eq!(
            e.offset(),
            Offset::Offset(before),
            "log start after DeleteRecords"
        );
    }
}

/// Grows `topic` to `partitions` partitions (CreatePartitions) and waits until metadata shows
/// them. Apache Kafka only: tansu has no CreatePartitions.
pub async fn grow_topic(bootstrap: &str, topic: &str, partitions: usize) {
    let admin: AdminClient<DefaultClientContext> =
        client_config(bootstrap).create().expect("admin client");
    let opts = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
    let results = admin
        .create_partitions([&NewPartitions::new(topic, partitions)], &opts)
        .await
        .unwrap_or_else(|e| panic!("grow {topic} on {bootstrap}: {e}"));
    for r in results {
        if let Err((name, code)) = r {
            panic!("grow {name} on {bootstrap}: {code:?}");
        }
    }
    wait_for_partitions(bootstrap, topic, partitions as i32).await
}

/// Deletes `topic` and waits until metadata no longer lists it.
pub async fn delete_topic(bootstrap: &str, topic: &str) {
    let admin: AdminClient<DefaultClientContext> =
        client_config(bootstrap).create().expect("admin client");
    let opts = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
    let results = admin
        .delete_topics(&[topic], &opts)
        .await
        .unwrap_or_else(|e| panic!("delete topic {topic} on {bootstrap}: {e}"));
    for r in results {
        if let Err((name, code)) = r {
            panic!("delete topic {name} on {bootstrap}: {code:?}");
        }
    }
    let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
    blocking(move || {
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        while partition_count(&bootstrap, &topic).is_some() {
            assert!(
                Instant::now() < deadline,
                "{topic} still listed after delete"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
}

/// `topic`'s KIP-516 ID as mirrorslice reads it (`None` when the broker reports none).
pub async fn topic_id(bootstrap: &str, topic: &str) -> Option<String> {
    let admin: AdminClient<DefaultClientContext> =
        client_config(bootstrap).create().expect("admin client");
    let topics = [topic.to_string()];
    let ids = mirrorslice::kafka::admin_ext::describe_topic_ids(&admin, &topics, REQUEST_TIMEOUT)
        .await
        .unwrap_or_else(|e| panic!("describe {topic} on {bootstrap}: {e}"));
    ids.get(topic).cloned().flatten()
}

/// The configs `describe_configs` reports for a topic, by name.
pub async fn describe_topic_configs(
    bootstrap: &str,
    topic: &str,
) -> std::collections::BTreeMap<String, String> {
    use rdkafka::admin::ResourceSpecifier;
    let admin: AdminClient<DefaultClientContext> =
        client_config(bootstrap).create().expect("admin client");
    let opts = AdminOptions::new().request_timeout(Some(REQUEST_TIMEOUT));
    let results = admin
        .describe_configs([&ResourceSpecifier::Topic(topic)], &opts)
        .await
        .unwrap_or_else(|e| panic!("describe configs {topic}: {e}"));
    let resource = results
        .into_iter()
        .next()
        .expect("one result")
        .unwrap_or_else(|e| panic!("describe configs {topic}: {e:?}"));
    resource
        .entries
        .into_iter()
        .filter_map(|e| e.value.map(|v| (e.name, v)))
        .collect()
}

/// Latest JSON value per key of a Connect status topic (5 partitions), tombstones removed.
pub async fn read_status(
    bootstrap: &str,
    topic: &str,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let partitions = partition_count(bootstrap, topic).expect("status topic exists");
    let mut latest = std::collections::BTreeMap::new();
    for r in consume_all(bootstrap, topic, partitions).await {
        let key = String::from_utf8(r.key.clone().expect("status keys are set")).unwrap();
        match r.value {
            Some(v) => {
                latest.insert(
                    key,
                    serde_json::from_slice(&v).expect("status value is JSON"),
                );
            }
            None => {
                latest.remove(&key);
            }
        }
    }
    latest
}

/// How many records `topic` holds right now, by reading to the end once; 0 if it does not
/// exist yet. For polling progress while another process writes.
pub async fn consume_count_quick(bootstrap: &str, topic: &str, partitions: i32) -> usize {
    if partition_count(bootstrap, topic).is_none() {
        return 0;
    }
    consume_all(bootstrap, topic, partitions).await.len()
}

/// Whether any partition of `topic` has records (cheap: watermarks only). False when the topic
/// does not exist yet.
pub async fn has_records(bootstrap: &str, topic: &str, partitions: i32) -> bool {
    let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
    blocking(move || {
        partition_count(&bootstrap, &topic).is_some()
            && faults::Watermarks::new(&bootstrap).total(&topic, partitions) > 0
    })
    .await
}

/// The `mm2.properties` body of a test flow `source->target` between the stack's clusters A
/// and B. Only topics named `*-<source>` are replicated, because the brokers are shared with
/// other tests and earlier runs; replication factors are 1 (single-broker clusters); the
/// reverse pair emits no heartbeats. `extra` is appended verbatim.
pub fn flow_properties(source: &str, target: &str, extra: &str) -> String {
    let stack = stack();
    flow_properties_between(source, &stack.a, target, &stack.b, extra)
}

/// [`flow_properties`] with the clusters at `a` and `b` (e.g. a test's private broker).
pub fn flow_properties_between(
    source: &str,
    a: &str,
    target: &str,
    b: &str,
    extra: &str,
) -> String {
    format!(
        "clusters = {source}, {target}\n\
         {source}.bootstrap.servers = {a}\n\
         {target}.bootstrap.servers = {b}\n\
         {source}->{target}.enabled = true\n\
         {source}->{target}.topics = .*-{source}\n\
         {source}->{target}.use.defaults.from = source\n\
         {target}->{source}.emit.heartbeats.enabled = false\n\
         replication.factor = 1\n\
         offset-syncs.topic.replication.factor = 1\n\
         checkpoints.topic.replication.factor = 1\n\
         heartbeats.topic.replication.factor = 1\n\
         config.storage.replication.factor = 1\n\
         offset.storage.replication.factor = 1\n\
         status.storage.replication.factor = 1\n\
         {extra}\n"
    )
}

/// Every offset stored for `topic`'s partitions in the Connect offsets topic of a flow from
/// `source_alias`, on `target`, in commit order: to check that none ever moved backwards. A
/// record the load skips for its lower fence (a stale writer's commit landing late, README
/// "The window that remains") stores nothing, so it is left out, as the load leaves it.
pub async fn committed_history(
    target: &str,
    source_alias: &str,
    topic: &str,
) -> BTreeMap<i32, Vec<i64>> {
    use mirrorslice::wire::connect_offsets::{
        decode_key, decode_value, fence_admits, value_fence, DecodedPartition, SourcePartition,
    };
    let offsets_topic = format!("mm2-offsets.{source_alias}.internal");
    let mut records = consume_all(target, &offsets_topic, 25).await;
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut history: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    let mut fences: BTreeMap<i32, Option<u64>> = BTreeMap::new();
    for r in records {
        let key = decode_key(r.key.as_deref().unwrap()).unwrap();
        if let DecodedPartition::Mirror(SourcePartition::Source {
            topic: t,
            partition,
            ..
        }) = key.partition
        {
            let fence = value_fence(r.value.as_deref());
            let current = fences.get(&partition).copied().flatten();
            if t == topic && fence_admits(fence, current) {
                fences.insert(partition, fence);
                if let Some(v) = decode_value(r.value.as_deref()).unwrap() {
                    history.entry(partition).or_default().push(v);
                }
            }
        }
    }
    history
}

/// Every one of `total` source records is on `bootstrap` in `remote` (by partition and key), at
/// least once; how many duplicates there are.
pub async fn assert_all_copied(
    bootstrap: &str,
    remote: &str,
    partitions: i32,
    total: usize,
) -> usize {
    let got = consume_all(bootstrap, remote, partitions).await;
    let keys: BTreeSet<(i32, Vec<u8>)> = got
        .iter()
        .map(|r| (r.partition, r.key.clone().unwrap()))
        .collect();
    assert_eq!(
        keys.len(),
        total,
        "every record is on the target; {}",
        missing_keyed_records(&got, partitions, total)
    );
    got.len() - total
}

/// Which of `total` [`keyed_records`] over `partitions` are not among `got`, each with its
/// source offset and the target offsets of the copies of its neighbours in the source: enough to
/// tell a gap at a slice boundary from one inside a produce batch.
fn missing_keyed_records(got: &[ConsumedRecord], partitions: i32, total: usize) -> String {
    let mut at: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    for r in got {
        let index = r.key.as_deref().and_then(|k| std::str::from_utf8(k).ok());
        match index.and_then(|k| k.strip_prefix('k')?.parse().ok()) {
            Some(i) => at.entry(i).or_default().push(r.offset),
            None => return format!("{} records, keys not of keyed_records", got.len()),
        }
    }
    let step = partitions as usize;
    let missing: Vec<usize> = (0..total).filter(|i| !at.contains_key(i)).collect();
    let describe = |i: &usize| {
        let before = i.checked_sub(step).and_then(|b| at.get(&b));
        format!(
            "k{i} (partition {}, source offset {}; copies of the one before at {before:?}, \
             of the one after at {:?})",
            i % step,
            i / step,
            at.get(&(i + step))
        )
    };
    let shown: Vec<String> = missing.iter().take(20).map(describe).collect();
    format!("{} missing: {}", missing.len(), shown.join("; "))
}

/// `total` records over `partitions` partitions (round robin): keys `k<i>`, 512-byte values,
/// increasing timestamps; as fault tests copy them.
pub fn keyed_records(partitions: i32, total: usize) -> Vec<TestRecord> {
    (0..total)
        .map(|i| TestRecord {
            partition: (i % partitions as usize) as i32,
            key: Some(format!("k{i}").into_bytes()),
            value: Some(vec![b'v'; 512]),
            headers: Vec::new(),
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect()
}

/// How the records of [`keyed_records`] sit in a remote topic, partition by partition.
#[derive(Debug, Default)]
pub struct CopyOrder {
    /// Source records not on the target.
    pub lost: usize,
    /// Copies beyond the first of a record.
    pub duplicates: usize,
    /// Places where a partition does not continue with the next source record: a re-copy after
    /// a kill restarts once; two writers at once restart again and again.
    pub restarts: usize,
    /// The most records one restart went back by: what the largest re-copy repeated.
    pub largest_step_back: usize,
    /// Whether every record's first copy sits in source order, in its source partition.
    pub first_copies_in_order: bool,
}

/// Reads `remote` and compares it with `total` [`keyed_records`] over `partitions`.
pub async fn copy_order(bootstrap: &str, remote: &str, partitions: i32, total: usize) -> CopyOrder {
    let got = consume_all(bootstrap, remote, partitions).await;
    let mut by_partition: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for r in &got {
        let key = String::from_utf8(r.key.clone().expect("keyed record")).unwrap();
        let i: usize = key.trim_start_matches('k').parse().expect("key k<i>");
        assert_eq!(
            i % partitions as usize,
            r.partition as usize,
            "record k{i} moved partition"
        );
        by_partition.entry(r.partition).or_default().push(i);
    }
    let mut order = CopyOrder {
        first_copies_in_order: true,
        ..CopyOrder::default()
    };
    let mut seen = BTreeSet::new();
    for seq in by_partition.values() {
        let mut last_first = None;
        for (n, i) in seq.iter().enumerate() {
            if !seen.insert(*i) {
                order.duplicates += 1;
            } else {
                order.first_copies_in_order &= last_first.is_none_or(|l| l < *i);
                last_first = Some(*i);
            }
            if n > 0 && *i != seq[n - 1] + partitions as usize {
                order.restarts += 1;
                let back = (seq[n - 1] + partitions as usize).saturating_sub(*i);
                let back = back / partitions as usize;
                order.largest_step_back = order.largest_step_back.max(back);
            }
        }
    }
    order.lost = total - seen.len();
    order
}
