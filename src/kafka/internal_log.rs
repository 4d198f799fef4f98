//! A compacted internal topic read as a log: Kafka Connect's `KafkaBasedLog`, for one slice.
//!
//! Connect keeps its offsets, status and configs in compacted topics and learns their state by
//! reading them "to the end" and replaying every record in order. A slice has to do the same, but
//! must also know *exactly* when it has reached the end, and must not hang when it cannot.
//!
//! "The end" is decided from the consumer's partition-EOF events, never from ListOffsets: the
//! local test broker (tansu) answers ListOffsets(LATEST) with one more than the base offset of
//! the last batch, which trails the real end by up to a batch. librdkafka emits `PartitionEOF`
//! when a Fetch response shows the consumer at the high watermark, and events for one partition
//! arrive in order, so **a partition is done once it has emitted EOF after the last record we
//! received**.
//! That rule is also right on real Kafka.
//!
//! A fetch that starts beyond the log end returns nothing at all on tansu (real Kafka answers
//! OFFSET_OUT_OF_RANGE), so every read is bounded by a timeout, and the error names the topic and
//! the partitions that did not finish.
//!
//! Writes ([`append`]) wait for every delivery report: callers (offset commits, status, configs)
//! must know a record is durable before they act on it. The producer uses `acks=all` and
//! `enable.idempotence=true` unless the user's producer settings say otherwise, so records of
//! one partition land in the order they were sent.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer, PurgeConfig};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::{client_config, close_consumer, listed_offsets, ClientError, Managed, MirrorContext};
use crate::config::Props;

/// Start position meaning "the log start of the partition" (Kafka's `EARLIEST` = -2).
pub const BEGINNING: i64 = -2;

/// Default bound for metadata and ListOffsets requests made here.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One record of an internal topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    /// `None` is a tombstone.
    pub value: Option<Vec<u8>>,
}

/// A record as seen by a [`read_to_end_with`] callback, borrowed from the consumer so that
/// records the caller does not care about are never copied.
#[derive(Debug, Clone, Copy)]
pub struct RecordRef<'a> {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// The record's timestamp (ms), when it has one.
    pub timestamp: Option<i64>,
}

impl RecordRef<'_> {
    pub fn to_owned_record(&self) -> LogRecord {
        LogRecord {
            partition: self.partition,
            offset: self.offset,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
        }
    }
}

/// A record to append: `(partition, key, value)`; a `None` value is a tombstone.
pub type AppendRecord = (i32, Vec<u8>, Option<Vec<u8>>);

/// Where a partition stood when a read gave up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    pub partition: i32,
    /// Offset after the last record received, `None` when none arrived.
    pub next_offset: Option<i64>,
    /// The requested start ([`BEGINNING`] or an offset).
    pub start: i64,
}

fn describe_unfinished(list: &[Unfinished]) -> String {
    list.iter()
        .map(|u| {
            let start = if u.start == BEGINNING {
                "the beginning".to_string()
            } else {
                format!("offset {}", u.start)
            };
            match u.next_offset {
                Some(n) => format!("partition {} (read up to offset {n})", u.partition),
                None => format!("partition {} (nothing received from {start})", u.partition),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Not every partition reached its end in time. On tansu this is also what a start
    /// position beyond the log end looks like.
    #[error(
        "reading {topic} to the end did not finish within {timeout:?}: {}{}",
        describe_unfinished(unfinished),
        last_error.as_ref().map(|e| format!("; last consumer error: {e}")).unwrap_or_default()
    )]
    ReadTimeout {
        topic: String,
        timeout: Duration,
        unfinished: Vec<Unfinished>,
        last_error: Option<String>,
    },
    /// The consumer reported an error that retrying will not fix (authorization, …).
    #[error("reading {topic}{}: {message}", partition.map(|p| format!(" partition {p}")).unwrap_or_default())]
    Read {
        topic: String,
        partition: Option<i32>,
        message: String,
    },
    /// A record could not be delivered.
    #[error("appending to {topic} partition {partition}: record #{index} (key {key}) was not delivered: {message}")]
    Delivery {
        topic: String,
        partition: i32,
        index: usize,
        key: String,
        message: String,
    },
    #[error("{what} of {topic}: {message}")]
    Request {
        topic: String,
        what: &'static str,
        message: String,
    },
    #[error("topic {topic} does not exist")]
    UnknownTopic { topic: String },
}

/// A key for error messages: UTF-8 (lossy), shortened.
pub(crate) fn display_key(key: &[u8]) -> String {
    let s = String::from_utf8_lossy(key);
    if s.chars().count() > 200 {
        let cut: String = s.chars().take(200).collect();
        format!("{cut}…")
    } else {
        s.into_owned()
    }
}

fn role(topic: &str, client: &str) -> String {
    format!("internal topic {topic} {client}")
}

/// A group id nobody else uses. librdkafka wants one for `assign()`; it is never joined and
/// nothing is committed, so it leaves no trace on the broker.
fn throwaway_group() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "mirrorslice-internal-log-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn consumer_config(consumer: &Props, topic: &str) -> Result<ClientConfig, ClientError> {
    let mut config = client_config(&role(topic, "consumer"), consumer)?;
    // Like KafkaBasedLog: no commits, and a position out of range restarts at the log start.
    config
        .set("enable.partition.eof", "true")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("allow.auto.create.topics", "false");
    if !consumer.contains_key("group.id") {
        config.set("group.id", throwaway_group());
    }
    Ok(config)
}

fn producer_config(producer: &Props, topic: &str) -> Result<ClientConfig, ClientError> {
    let mut config = client_config(&role(topic, "producer"), producer)?;
    if !producer.contains_key("acks") {
        config.set("acks", "all");
    }
    // A write here is waited for (an offset commit holds the copy loop, a status write the
    // slice's end): send at once instead of lingering librdkafka's default 5 ms for a batch.
    // Java's producers linger 0 ms up to Kafka 3.9 (KIP-1030 made it 5 ms in 4.0).
    if !producer.contains_key("linger.ms") {
        config.set("linger.ms", "0");
    }
    // Like Connect's KafkaBasedLog: order comes from one request in flight, not from an
    // idempotent producer, whose producer-id handshake would add a round of latency (half a
    // second on some brokers) before every slice's first status write.
    if !producer.contains_key("enable.idempotence") {
        config.set("enable.idempotence", "false");
    }
    let idempotent = producer
        .get("enable.idempotence")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if !idempotent && !producer.contains_key("max.in.flight.requests.per.connection") {
        config.set("max.in.flight.requests.per.connection", "1");
    }
    Ok(config)
}

/// Consumer errors that will not go away by waiting.
fn is_fatal(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::TopicAuthorizationFailed
            | RDKafkaErrorCode::GroupAuthorizationFailed
            | RDKafkaErrorCode::ClusterAuthorizationFailed
            | RDKafkaErrorCode::SaslAuthenticationFailed
            | RDKafkaErrorCode::Authentication
            | RDKafkaErrorCode::OffsetOutOfRange
    )
}

/// Reads the given partitions of `topic` from their start positions ([`BEGINNING`] or an
/// offset) to their current end and returns every record, in order per partition.
pub async fn read_to_end(
    consumer: &Props,
    topic: &str,
    starts: &BTreeMap<i32, i64>,
    timeout: Duration,
) -> Result<Vec<LogRecord>, LogError> {
    read_to_end_at_least(consumer, topic, starts, &BTreeMap::new(), timeout).await
}

/// Like [`read_to_end`], but hands each record to `on_record` without copying it, and returns
/// each partition's end: the offset after the last record received (the start position when
/// none arrived; 0 for an empty partition read from the beginning).
pub async fn read_to_end_with<F>(
    consumer: &Props,
    topic: &str,
    starts: &BTreeMap<i32, i64>,
    timeout: Duration,
    on_record: F,
) -> Result<BTreeMap<i32, i64>, LogError>
where
    F: FnMut(RecordRef<'_>),
{
    read_to_at_least(
        consumer,
        topic,
        starts,
        &BTreeMap::new(),
        timeout,
        on_record,
    )
    .await
}

/// Like [`read_to_end`], but a partition's read does not end before `min_ends[p]`: records this
/// process knows were written are read even from a broker that serves them a moment after
/// acknowledging them. If they do not appear within a few seconds the read ends without them
/// (see `read_assigned`).
pub async fn read_to_end_at_least(
    consumer: &Props,
    topic: &str,
    starts: &BTreeMap<i32, i64>,
    min_ends: &BTreeMap<i32, i64>,
    timeout: Duration,
) -> Result<Vec<LogRecord>, LogError> {
    let mut out = Vec::new();
    read_to_at_least(consumer, topic, starts, min_ends, timeout, |r| {
        out.push(r.to_owned_record())
    })
    .await?;
    Ok(out)
}

/// [`read_to_end_at_least`] with the records handed to `on_record` as in [`read_to_end_with`].
pub async fn read_to_at_least<F>(
    consumer: &Props,
    topic: &str,
    starts: &BTreeMap<i32, i64>,
    min_ends: &BTreeMap<i32, i64>,
    timeout: Duration,
    mut on_record: F,
) -> Result<BTreeMap<i32, i64>, LogError>
where
    F: FnMut(RecordRef<'_>),
{
    if starts.is_empty() {
        return Ok(BTreeMap::new());
    }
    let consumer_role = role(topic, "consumer");
    let deadline = tokio::time::Instant::now() + timeout;
    let mut starts = starts.clone();
    let mut fetch_wait = (!consumer.contains_key("fetch.max.wait.ms")).then_some(SHORT_FETCH_WAIT);
    loop {
        // A BaseConsumer (not a StreamConsumer) so it can be closed quickly at the end: see
        // `close_consumer`.
        let mut config = consumer_config(consumer, topic)?;
        if let Some(wait) = fetch_wait {
            config.set("fetch.wait.max.ms", wait.as_millis().to_string());
        }
        let c: Managed<BaseConsumer<MirrorContext>> =
            crate::kafka::create(&consumer_role, &config, MirrorContext)?;
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let short_fetches = fetch_wait == Some(SHORT_FETCH_WAIT);
        let result = read_assigned(
            &c,
            topic,
            &starts,
            min_ends,
            remaining,
            short_fetches,
            &mut on_record,
        )
        .await;
        close_consumer(&c, Duration::from_secs(1));
        match result? {
            ReadEnd::Done(ends) => return Ok(ends),
            ReadEnd::Stalled(positions) => {
                tracing::debug!(
                    topic,
                    ?positions,
                    "internal topic read: no answer to short fetches; reading on with longer ones"
                );
                starts.extend(positions);
                fetch_wait = Some(FALLBACK_FETCH_WAIT);
            }
        }
    }
}

/// Internal reads hold no fetch at the log end: a read stops there, and a broker holds an empty
/// fetch for up to `fetch.wait.max.ms` (500 ms by default) before answering it.
const SHORT_FETCH_WAIT: Duration = Duration::from_millis(1);
/// Some brokers do not answer short fetches well: tansu 0.6 gathers batches for a fetch only
/// until `fetch.wait.max.ms` has passed, so at 1 ms it serves one batch per fetch (2,958
/// one-record batches took 15 s to read; 39 ms at 5 ms) and, once a partition holds a few
/// thousand batches, none at all. So a read that has received records for [`SLOW_AFTER`] and
/// is still short of its end, or that received nothing for [`STALLED_AFTER`], reads on from
/// where it stands with [`FALLBACK_FETCH_WAIT`]. (Kafka answers at once with what it has, so
/// on Kafka only a long read switches, at the cost of one reconnect.)
const SLOW_AFTER: Duration = Duration::from_millis(250);
const STALLED_AFTER: Duration = Duration::from_secs(1);
const FALLBACK_FETCH_WAIT: Duration = Duration::from_millis(25);

/// How a [`read_assigned`] ended.
enum ReadEnd {
    /// Every partition reached its end: the offset after the last record of each.
    Done(BTreeMap<i32, i64>),
    /// Slow or stalled short fetches: where each partition that received records stands.
    Stalled(BTreeMap<i32, i64>),
}

/// How long a read at its end waits for records the broker listed but did not serve yet.
const LISTED_END_WAIT: Duration = Duration::from_secs(1);
/// How long a read at its end waits for records this process knows were written
/// (`min_ends`) before it concludes they are gone (a recreated topic).
const MIN_END_WAIT: Duration = Duration::from_secs(5);

/// Where a partition's read stands: after its last record, else where it started, else (a read
/// "from the beginning") where librdkafka moved it, else 0.
fn read_position(
    next: Option<i64>,
    start: i64,
    positions: Option<&TopicPartitionList>,
    topic: &str,
    partition: i32,
) -> i64 {
    next.or((start >= 0).then_some(start))
        .or_else(
            || match positions?.find_partition(topic, partition)?.offset() {
                Offset::Offset(o) if o >= 0 => Some(o),
                _ => None,
            },
        )
        .unwrap_or(0)
}

/// Read every assigned partition to its end.
///
/// "The end" is end-of-partition at a position that is not short of a known target. Some
/// brokers (tansu) answer a fetch with end-of-partition just before records they acknowledged
/// a moment ago are visible, so a read that ends at the first end-of-partition can miss a
/// record written by this very process a moment earlier. Targets: `min_ends` (records this
/// process knows were written; waited for up to [`MIN_END_WAIT`]), and, checked once, the
/// listed end offsets (which may trail the log, never lead it; waited for up to
/// [`LISTED_END_WAIT`], as records they count may never be served, e.g. a transaction marker).
/// With `short_fetches`, a read that is slow or stalled (see [`SLOW_AFTER`]) while a partition
/// is short of its end gives up early with [`ReadEnd::Stalled`].
async fn read_assigned<F>(
    c: &BaseConsumer<MirrorContext>,
    topic: &str,
    starts: &BTreeMap<i32, i64>,
    min_ends: &BTreeMap<i32, i64>,
    timeout: Duration,
    short_fetches: bool,
    on_record: &mut F,
) -> Result<ReadEnd, LogError>
where
    F: FnMut(RecordRef<'_>),
{
    let mut tpl = TopicPartitionList::new();
    for (&p, &start) in starts {
        // "From the beginning" is offset 0, not librdkafka's logical BEGINNING: a new consumer
        // resolves a logical offset before it knows the partition's leader, fails, and retries
        // only after a fixed 500 ms. Should retention have moved the log start past 0, the
        // fetch is out of range and `auto.offset.reset=earliest` moves it there.
        let offset = if start == BEGINNING || start < 0 {
            Offset::Offset(0)
        } else {
            Offset::Offset(start)
        };
        tpl.add_partition_offset(topic, p, offset)
            .map_err(|e| LogError::Read {
                topic: topic.to_string(),
                partition: Some(p),
                message: e.to_string(),
            })?;
    }
    c.assign(&tpl).map_err(|e| LogError::Read {
        topic: topic.to_string(),
        partition: None,
        message: format!("assign: {e}"),
    })?;

    // Per partition: offset after the last record received; which partitions' latest event is
    // end-of-partition; the offsets each must reach.
    let mut next: BTreeMap<i32, Option<i64>> = starts.keys().map(|&p| (p, None)).collect();
    let mut at_eof: std::collections::BTreeSet<i32> = std::collections::BTreeSet::new();
    let mut targets: BTreeMap<i32, (i64, Duration)> = min_ends
        .iter()
        .filter(|(p, _)| starts.contains_key(p))
        .map(|(&p, &end)| (p, (end, MIN_END_WAIT)))
        .collect();
    let mut listed_checked = false;
    let mut waiting_since: Option<tokio::time::Instant> = None;
    let mut last_error: Option<String> = None;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last_event = tokio::time::Instant::now();
    let mut first_event: Option<tokio::time::Instant> = None;

    loop {
        // Non-blocking poll; when nothing is queued, yield briefly. Reads are short (they end at
        // the log end), so a 1 ms step costs nothing noticeable and keeps this async-friendly.
        let Some(event) = c.poll(Duration::ZERO) else {
            if at_eof.len() == starts.len() {
                let positions = c.position().ok();
                let position =
                    |p: i32| read_position(next[&p], starts[&p], positions.as_ref(), topic, p);
                let short: Vec<(i32, i64, Duration)> = targets
                    .iter()
                    .filter(|(&p, &(end, _))| position(p) < end)
                    .map(|(&p, &(end, wait))| (p, end, wait))
                    .collect();
                if short.is_empty() && listed_checked {
                    break;
                }
                if short.is_empty() {
                    // Checked once per read: one ListOffsets request, behind a held fetch of
                    // at most `fetch.wait.max.ms`.
                    listed_checked = true;
                    let ours: Vec<(String, i32)> =
                        starts.keys().map(|&p| (topic.to_string(), p)).collect();
                    match listed_offsets(c, &ours, Offset::End, timeout.min(Duration::from_secs(5)))
                    {
                        Ok(listed) => {
                            for ((_, p), end) in listed {
                                if end > position(p) {
                                    let t = targets.entry(p).or_insert((end, LISTED_END_WAIT));
                                    t.0 = t.0.max(end);
                                }
                            }
                        }
                        Err(e) => tracing::debug!(
                            topic,
                            error = %e,
                            "cannot list end offsets; trusting end-of-partition"
                        ),
                    }
                    continue;
                }
                let since = *waiting_since.get_or_insert_with(tokio::time::Instant::now);
                let wait = short.iter().map(|s| s.2).max().unwrap_or_default();
                if since.elapsed() >= wait {
                    tracing::debug!(
                        topic,
                        ?short,
                        "end-of-partition short of known records; they did not appear"
                    );
                    break;
                }
            }
            let slow = first_event.is_some_and(|t| t.elapsed() >= SLOW_AFTER)
                || last_event.elapsed() >= STALLED_AFTER;
            if short_fetches && slow && at_eof.len() < starts.len() {
                let reached = next
                    .iter()
                    .filter_map(|(&p, n)| n.map(|n| (p, n)))
                    .collect();
                return Ok(ReadEnd::Stalled(reached));
            }
            if tokio::time::Instant::now() >= deadline {
                let unfinished = starts
                    .keys()
                    .filter(|p| !at_eof.contains(p))
                    .map(|&p| Unfinished {
                        partition: p,
                        next_offset: next[&p],
                        start: starts[&p],
                    })
                    .collect();
                return Err(LogError::ReadTimeout {
                    topic: topic.to_string(),
                    timeout,
                    unfinished,
                    last_error,
                });
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        last_event = tokio::time::Instant::now();
        first_event.get_or_insert(last_event);
        match event {
            Ok(m) => {
                let p = m.partition();
                if let Some(slot) = next.get_mut(&p) {
                    *slot = Some(m.offset() + 1);
                    at_eof.remove(&p);
                    on_record(RecordRef {
                        partition: p,
                        offset: m.offset(),
                        key: m.key(),
                        value: m.payload(),
                        timestamp: m.timestamp().to_millis(),
                    });
                }
            }
            Err(KafkaError::PartitionEOF(p)) => {
                at_eof.insert(p);
            }
            Err(KafkaError::MessageConsumptionFatal(code)) => {
                return Err(LogError::Read {
                    topic: topic.to_string(),
                    partition: None,
                    message: format!("fatal consumer error: {code}"),
                })
            }
            Err(KafkaError::MessageConsumption(code)) if is_fatal(code) => {
                return Err(LogError::Read {
                    topic: topic.to_string(),
                    partition: None,
                    message: code.to_string(),
                })
            }
            Err(e) => {
                // Transient (broker transport, leader change, metadata not yet propagated):
                // librdkafka retries; the timeout bounds it.
                tracing::debug!(topic, error = %e, "internal topic read: consumer error");
                last_error = Some(e.to_string());
            }
        }
    }

    let positions = c.position().ok();
    Ok(ReadEnd::Done(
        next.keys()
            .map(|&p| {
                (
                    p,
                    read_position(next[&p], starts[&p], positions.as_ref(), topic, p),
                )
            })
            .collect(),
    ))
}

/// Appends records and waits until every one is delivered; returns each record's
/// `(partition, offset)` in input order.
pub async fn append(
    producer: &Props,
    topic: &str,
    records: Vec<AppendRecord>,
) -> Result<Vec<(i32, i64)>, LogError> {
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let p = shared_producer(producer, topic)?;
    append_with(&p, topic, records).await
}

/// Producers for internal topics (and MM2's own records: heartbeats, checkpoints), shared
/// process-wide by identical settings: the stores and writers of a slice use one producer per
/// cluster, and a warm Lambda container reuses it across invocations instead of reconnecting.
/// Creating one per write would also cost ~100 ms on drop (rdkafka's polling thread). `topic`
/// only names the client in errors.
pub fn shared_producer(
    producer: &Props,
    topic: &str,
) -> Result<FutureProducer<MirrorContext>, LogError> {
    // `client.id` names the role (which store, which task); it must not split the cache.
    let mut identity = producer.clone();
    identity.remove("client.id");
    let key = serde_json::to_string(&identity).expect("props serialize");
    let cache = PRODUCERS.get_or_init(Default::default);
    if let Some(p) = cache.lock().expect("producer cache poisoned").get(&key) {
        return Ok(FutureProducer::clone(p));
    }
    let producer_role = role(topic, "producer");
    let p: Managed<FutureProducer<MirrorContext>> = crate::kafka::create(
        &producer_role,
        &producer_config(producer, topic)?,
        MirrorContext,
    )?;
    let clone = FutureProducer::clone(&p);
    // The cache keeps the client (and its MSK IAM registration) for the process.
    cache
        .lock()
        .expect("producer cache poisoned")
        .insert(key, p);
    Ok(clone)
}

type ProducerCache =
    Mutex<std::collections::HashMap<String, Managed<FutureProducer<MirrorContext>>>>;
static PRODUCERS: std::sync::OnceLock<ProducerCache> = std::sync::OnceLock::new();

/// Waits until `deadline` for the records still queued in the shared producers (heartbeats,
/// checkpoints, status), then drops what is left: nothing a slice produced may go out after its
/// invocation returned (a frozen Lambda would send it on its next thaw, after newer records).
/// Blocking. Returns how many producers had records left at the deadline.
pub fn settle_shared_producers(deadline: Instant) -> usize {
    let Some(cache) = PRODUCERS.get() else {
        return 0;
    };
    let producers: Vec<_> = cache
        .lock()
        .expect("producer cache poisoned")
        .values()
        .map(|p| FutureProducer::clone(p))
        .collect();
    let mut unsettled = 0;
    for p in producers {
        if p.in_flight_count() == 0 {
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if p.flush(left).is_err() {
            tracing::warn!(
                queued = p.in_flight_count(),
                "internal-topic records not delivered by the deadline; dropped"
            );
            p.purge(PurgeConfig::default().queue().inflight());
            unsettled += 1;
        }
    }
    unsettled
}

async fn await_delivery(
    topic: &str,
    index: usize,
    record: &AppendRecord,
    future: DeliveryFuture,
) -> Result<(i32, i64), LogError> {
    let fail = |message: String| LogError::Delivery {
        topic: topic.to_string(),
        partition: record.0,
        index,
        key: display_key(&record.1),
        message,
    };
    match future.await {
        Ok(Ok(d)) => Ok((d.partition, d.offset)),
        Ok(Err((e, _))) => Err(fail(e.to_string())),
        Err(_) => Err(fail("delivery cancelled (producer closed)".into())),
    }
}

async fn append_with(
    producer: &FutureProducer<MirrorContext>,
    topic: &str,
    records: Vec<AppendRecord>,
) -> Result<Vec<(i32, i64)>, LogError> {
    let mut positions = vec![(0, 0); records.len()];
    let mut in_flight: VecDeque<(usize, DeliveryFuture)> = VecDeque::new();
    for (index, record) in records.iter().enumerate() {
        loop {
            let mut rec: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic)
                .partition(record.0)
                .key(record.1.as_slice());
            if let Some(v) = &record.2 {
                rec = rec.payload(v.as_slice());
            }
            match producer.send_result(rec) {
                Ok(f) => {
                    in_flight.push_back((index, f));
                    break;
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    // Make room by waiting for the oldest delivery.
                    match in_flight.pop_front() {
                        Some((i, f)) => {
                            positions[i] = await_delivery(topic, i, &records[i], f).await?
                        }
                        None => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                }
                Err((e, _)) => {
                    return Err(LogError::Delivery {
                        topic: topic.to_string(),
                        partition: record.0,
                        index,
                        key: display_key(&record.1),
                        message: format!("cannot enqueue: {e}"),
                    })
                }
            }
        }
    }
    while let Some((i, f)) = in_flight.pop_front() {
        positions[i] = await_delivery(topic, i, &records[i], f).await?;
    }
    Ok(positions)
}

/// The number of partitions of `topic` (from metadata; never auto-creates it).
pub async fn partition_count(
    props: &Props,
    topic: &str,
    timeout: Duration,
) -> Result<i32, LogError> {
    let config = consumer_config(props, topic)?;
    let (topic_owned, consumer_role) = (topic.to_string(), role(topic, "consumer"));
    let result = tokio::task::spawn_blocking(move || -> Result<i32, LogError> {
        let c: Managed<BaseConsumer<MirrorContext>> =
            crate::kafka::create(&consumer_role, &config, MirrorContext)?;
        let md = c.fetch_metadata(Some(&topic_owned), timeout);
        close_consumer(&c, Duration::from_secs(1));
        let md = md.map_err(|e| LogError::Request {
            topic: topic_owned.clone(),
            what: "metadata",
            message: e.to_string(),
        })?;
        let Some(t) = md.topics().iter().find(|t| t.name() == topic_owned) else {
            return Err(LogError::UnknownTopic { topic: topic_owned });
        };
        match t.error() {
            None if !t.partitions().is_empty() => Ok(t.partitions().len() as i32),
            None => Err(LogError::UnknownTopic { topic: topic_owned }),
            Some(e) => {
                let code = RDKafkaErrorCode::from(e);
                if code == RDKafkaErrorCode::UnknownTopicOrPartition {
                    Err(LogError::UnknownTopic { topic: topic_owned })
                } else {
                    Err(LogError::Request {
                        topic: topic_owned.clone(),
                        what: "metadata",
                        message: code.to_string(),
                    })
                }
            }
        }
    })
    .await;
    result.unwrap_or_else(|join| {
        Err(LogError::Request {
            topic: topic.to_string(),
            what: "metadata",
            message: join.to_string(),
        })
    })
}

/// ListOffsets(LATEST) for the given partitions, in one request.
///
/// On real Kafka this is the log end. On tansu it is the base offset of the last batch + 1, so
/// callers may only use it as a **lower bound** of the end ("the log reaches at least here").
pub async fn end_offsets_lower_bound(
    consumer: &Props,
    topic: &str,
    partitions: &[i32],
    timeout: Duration,
) -> Result<BTreeMap<i32, i64>, LogError> {
    if partitions.is_empty() {
        return Ok(BTreeMap::new());
    }
    let config = consumer_config(consumer, topic)?;
    let (topic_owned, consumer_role) = (topic.to_string(), role(topic, "consumer"));
    let partitions = partitions.to_vec();
    let result = tokio::task::spawn_blocking(move || -> Result<BTreeMap<i32, i64>, LogError> {
        let c: Managed<BaseConsumer<MirrorContext>> =
            crate::kafka::create(&consumer_role, &config, MirrorContext)?;
        let err = |message: String| LogError::Request {
            topic: topic_owned.clone(),
            what: "list end offsets",
            message,
        };
        let mut tpl = TopicPartitionList::new();
        for &p in &partitions {
            // The "timestamp" -1 asks for the latest offset.
            tpl.add_partition_offset(&topic_owned, p, Offset::End)
                .map_err(|e| err(e.to_string()))?;
        }
        let answer = super::offsets_for_times(&c, &tpl, timeout);
        close_consumer(&c, Duration::from_secs(1));
        let answer = answer.map_err(|e| err(e.to_string()))?;
        let mut out = BTreeMap::new();
        for e in answer.elements() {
            if let Err(code) = e.error() {
                return Err(err(format!("partition {}: {code}", e.partition())));
            }
            match e.offset() {
                Offset::Offset(o) => {
                    out.insert(e.partition(), o);
                }
                other => {
                    return Err(err(format!(
                        "partition {}: no end offset ({other:?})",
                        e.partition()
                    )))
                }
            }
        }
        Ok(out)
    })
    .await;
    result.unwrap_or_else(|join| {
        Err(LogError::Request {
            topic: topic.to_string(),
            what: "list end offsets",
            message: join.to_string(),
        })
    })
}

/// One internal topic with the clients to read and write it. The producer is created on first
/// use and kept, so repeated appends (a commit per flush interval) reuse its connections.
pub struct InternalLog {
    topic: String,
    consumer: Props,
    producer: Props,
    cached_producer: Mutex<Option<FutureProducer<MirrorContext>>>,
}

impl std::fmt::Debug for InternalLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InternalLog")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl InternalLog {
    /// `consumer` and `producer` are Java-named client settings for the cluster holding `topic`.
    pub fn new(topic: impl Into<String>, consumer: Props, producer: Props) -> Self {
        InternalLog {
            topic: topic.into(),
            consumer,
            producer,
            cached_producer: Mutex::new(None),
        }
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn consumer_props(&self) -> &Props {
        &self.consumer
    }

    pub async fn read_to_end(
        &self,
        starts: &BTreeMap<i32, i64>,
        timeout: Duration,
    ) -> Result<Vec<LogRecord>, LogError> {
        read_to_end(&self.consumer, &self.topic, starts, timeout).await
    }

    pub async fn read_to_end_with<F>(
        &self,
        starts: &BTreeMap<i32, i64>,
        timeout: Duration,
        on_record: F,
    ) -> Result<BTreeMap<i32, i64>, LogError>
    where
        F: FnMut(RecordRef<'_>),
    {
        read_to_end_with(&self.consumer, &self.topic, starts, timeout, on_record).await
    }

    pub async fn read_to_at_least_with<F>(
        &self,
        starts: &BTreeMap<i32, i64>,
        min_ends: &BTreeMap<i32, i64>,
        timeout: Duration,
        on_record: F,
    ) -> Result<BTreeMap<i32, i64>, LogError>
    where
        F: FnMut(RecordRef<'_>),
    {
        read_to_at_least(
            &self.consumer,
            &self.topic,
            starts,
            min_ends,
            timeout,
            on_record,
        )
        .await
    }

    pub async fn append(&self, records: Vec<AppendRecord>) -> Result<Vec<(i32, i64)>, LogError> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let producer = {
            let mut cached = self
                .cached_producer
                .lock()
                .expect("producer cache poisoned");
            match cached.as_ref() {
                Some(p) => p.clone(),
                None => {
                    let p = shared_producer(&self.producer, &self.topic)?;
                    *cached = Some(p.clone());
                    p
                }
            }
        };
        append_with(&producer, &self.topic, records).await
    }

    pub async fn partition_count(&self, timeout: Duration) -> Result<i32, LogError> {
        partition_count(&self.consumer, &self.topic, timeout).await
    }

    pub async fn end_offsets_lower_bound(
        &self,
        partitions: &[i32],
        timeout: Duration,
    ) -> Result<BTreeMap<i32, i64>, LogError> {
        end_offsets_lower_bound(&self.consumer, &self.topic, partitions, timeout).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    #[test]
    fn producer_defaults_to_acks_all_and_one_request_in_flight() {
        // Like Connect's KafkaBasedLog: ordered by a single request in flight, without the
        // idempotent producer's producer-id handshake on every start.
        let c = producer_config(&props(&[("bootstrap.servers", "x:1")]), "t").unwrap();
        assert_eq!(c.get("acks"), Some("all"));
        assert_eq!(c.get("enable.idempotence"), Some("false"));
        assert_eq!(c.get("max.in.flight.requests.per.connection"), Some("1"));
    }

    #[test]
    fn idempotence_when_asked_keeps_librdkafka_in_flight_default() {
        let c = producer_config(&props(&[("enable.idempotence", "true")]), "t").unwrap();
        assert_eq!(c.get("enable.idempotence"), Some("true"));
        assert_eq!(c.get("max.in.flight.requests.per.connection"), None);
    }

    #[test]
    fn user_producer_settings_win() {
        let c = producer_config(
            &props(&[("acks", "1"), ("enable.idempotence", "false")]),
            "t",
        )
        .unwrap();
        assert_eq!(c.get("acks"), Some("1"));
        assert_eq!(c.get("enable.idempotence"), Some("false"));
        // Order per partition is still kept without idempotence.
        assert_eq!(c.get("max.in.flight.requests.per.connection"), Some("1"));
    }

    #[test]
    fn consumer_never_commits_and_reports_eof() {
        let c = consumer_config(&props(&[("auto.offset.reset", "latest")]), "t").unwrap();
        assert_eq!(c.get("enable.partition.eof"), Some("true"));
        assert_eq!(c.get("enable.auto.commit"), Some("false"));
        assert_eq!(c.get("auto.offset.reset"), Some("earliest"));
        let g = c.get("group.id").unwrap().to_string();
        assert!(g.starts_with("mirrorslice-internal-log-"), "{g}");
        let c2 = consumer_config(&props(&[("group.id", "mine")]), "t").unwrap();
        assert_eq!(c2.get("group.id"), Some("mine"));
    }

    #[test]
    fn timeout_error_names_topic_and_partitions() {
        let e = LogError::ReadTimeout {
            topic: "mm2-offsets.A.internal".into(),
            timeout: Duration::from_secs(3),
            unfinished: vec![
                Unfinished {
                    partition: 4,
                    next_offset: Some(17),
                    start: BEGINNING,
                },
                Unfinished {
                    partition: 9,
                    next_offset: None,
                    start: 120,
                },
            ],
            last_error: None,
        }
        .to_string();
        assert_eq!(
            e,
            "reading mm2-offsets.A.internal to the end did not finish within 3s: partition 4 \
             (read up to offset 17), partition 9 (nothing received from offset 120)"
        );
    }

    #[test]
    fn long_keys_are_shortened_in_messages() {
        let k = vec![b'a'; 500];
        let d = display_key(&k);
        assert!(d.ends_with('…') && d.chars().count() == 201, "{d}");
        assert_eq!(display_key(b"k"), "k");
    }
}
