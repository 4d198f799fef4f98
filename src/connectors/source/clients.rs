//! The settings we choose for the slice's replication consumer and data producer, which all
//! its source tasks share. Prefetched and queued records are most of a slice's memory, and a
//! slice's memory is what an invocation is sized and billed by: with one consumer and one
//! producer per slice, the budgets below hold whatever the number of tasks.

use crate::config::Props;

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
    // Java's name: these props are Java-named until translated, so a user's
    // `fetch.max.wait.ms` replaces this default instead of being overridden by it.
    ("fetch.max.wait.ms", "10"),
    // With small prefetch queues (below), librdkafka's default 1 s back-off after a full queue
    // would stall the copy; retry fetching quickly instead.
    ("fetch.queue.backoff.ms", "10"),
    // Java's consumer default, which MM2's source consumer keeps: records of aborted upstream
    // transactions are copied too (docs/transactions.md). librdkafka's own default is
    // read_committed, which would drop them, and stall every partition behind an open
    // transaction until it ends.
    ("isolation.level", "read_uncommitted"),
    // Java's consumer default (`check.crcs=true`). librdkafka's is false: a batch corrupted on
    // the source's disk or on the wire would be re-written to the target under a fresh CRC.
    // Checked, it fails its partition loudly instead (`_BAD_MSG`).
    ("check.crcs", "true"),
];

/// Prefetch budget of a slice's consumer, in KiB, split across its tasks' queues: librdkafka
/// applies `queued.max.messages.kbytes` to *each* queue fetched records land in (a task's
/// partitions share its queue, see `task_queue`). Prefetched records are most of a slice's
/// memory (librdkafka keeps each fetch response whole until its last record is forwarded, and
/// overshoots the limit by a fetch). The floor keeps a queue useful with many tasks.
/// `<source>.consumer.rdkafka.queued.max.messages.kbytes` overrides (e.g. for a high-latency
/// link).
const SLICE_PREFETCH_BUDGET_KB: usize = 2 * 1024;
const CONSUMER_PREFETCH_MIN_KB: usize = 256;
/// The same budget in records (`queued.min.messages`, split alike): librdkafka counts only
/// payload bytes against the byte limit, but keeps a few hundred bytes of its own per record,
/// so small records multiplied memory (100 B records: 80 MiB peak with one task, 50 MiB with
/// this bound, and copied as fast or faster). 4096 is the byte budget at 512 B records, so
/// records of 512 B and more are bounded by bytes as before.
const SLICE_PREFETCH_RECORDS: usize = 4096;
const CONSUMER_PREFETCH_MIN_RECORDS: usize = 512;
/// The most one partition's fetch asks for (Java's `max.partition.fetch.bytes`): its default,
/// 1 MiB, or a queue's prefetch budget when that is smaller (eight tasks: 256 KiB). Fetch sizes
/// count compressed bytes, and librdkafka decompresses a fetched batch whole, keeping it until
/// its last record is copied: with a queue per task refilled partition by partition, 1 MiB
/// fetches of 2:1 zstd batches held 170–220 MiB with eight tasks against ~85 MiB with one;
/// 256 KiB brought eight tasks to 82–85 MiB, throughput within run-to-run spread and CPU
/// unchanged (docs/throughput.md). Kafka returns a batch larger than this whole (KIP-74), so
/// it never stalls a partition.
const PARTITION_FETCH_MAX_BYTES: usize = 1024 * 1024;
/// Records waiting for delivery (librdkafka's copies) in the slice's data producer, which all
/// its tasks share. 4 MiB keeps the broker busy at loopback speed; 2 MiB measured 10 % slower,
/// 8 MiB only used 10 MiB more memory.
const SLICE_PRODUCER_QUEUE_KB: usize = 4 * 1024;
/// The producer queue's bound in records (`queue.buffering.max.messages`, librdkafka's default
/// 100000), for the same reason: it binds only records under 256 B. Half of it measured slower.
const SLICE_PRODUCER_QUEUE_RECORDS: usize = 16 * 1024;
/// Producer defaults, used unless the user set the key (`<target>.producer.*`).
const PRODUCER_DEFAULTS: &[(&str, &str)] = &[
    // Connect's defaults for a source task's producer (mm2-compat §2.4): order per partition
    // from a single request in flight.
    ("acks", "all"),
    ("enable.idempotence", "false"),
    ("max.in.flight.requests.per.connection", "1"),
    ("linger.ms", "5"),
];
/// The data producer of a slice with several tasks, unless the user chose idempotence or the
/// requests in flight: idempotent, five requests in flight, order per partition kept by
/// sequence numbers (KIP-98). librdkafka sends one partition per produce request, so one
/// request in flight serialises partitions; one task hands the producer long runs of one
/// partition (full batches), several tasks hand it all their partitions a little at a time
/// (half-full batches, twice the requests). Measured with eight tasks, 1M × 512 B: ~20 % less
/// wall and CPU time, and no gain with one task on loopback, which keeps Connect's settings
/// (docs/throughput.md, "one partition per produce request"); against a target 2 ms away one
/// task copies twice as fast with it too ("a target one round trip away"), but is not given
/// it until a record loss seen once in a fault test with it is explained. At 10 KiB records it
/// costs CPU instead (1.2-1.3x the pipe's against 1.1x): librdkafka 2.12 keeps one request in
/// flight per partition when idempotent, and its broker thread polls without waiting while a
/// partition's next batch is ready behind it ("the idempotent producer's broker thread spins").
const SHARED_PRODUCER_DEFAULTS: &[(&str, &str)] = &[
    ("enable.idempotence", "true"),
    ("max.in.flight.requests.per.connection", "5"),
];
/// Keys by which a user chooses the producer's ordering (Java and librdkafka names).
const ORDERING_KEYS: &[&str] = &[
    "enable.idempotence",
    "max.in.flight.requests.per.connection",
    "max.in.flight",
];

/// The data producer's settings for a slice of `tasks` tasks: the user's (`producer`), then
/// [`SHARED_PRODUCER_DEFAULTS`] with several tasks, then [`PRODUCER_DEFAULTS`], then the
/// slice's queue budget unless the user sized the queue (`buffer.memory` or librdkafka's key).
pub fn producer_props(producer: &Props, tasks: usize) -> Props {
    let shared = tasks > 1 && !ORDERING_KEYS.iter().any(|k| user_set(producer, k));
    let mut props = producer.clone();
    if shared {
        props = with_defaults(props, SHARED_PRODUCER_DEFAULTS);
    }
    let mut props = with_defaults(props, PRODUCER_DEFAULTS);
    let sized = ["buffer.memory", "queue.buffering.max.kbytes"]
        .iter()
        .any(|k| user_set(&props, k));
    if !sized {
        props.insert(
            "queue.buffering.max.kbytes".into(),
            SLICE_PRODUCER_QUEUE_KB.to_string(),
        );
    }
    let records = SLICE_PRODUCER_QUEUE_RECORDS;
    librdkafka_default(&mut props, "queue.buffering.max.messages", records);
    props
}

/// `max.partition.fetch.bytes` unless the user set it (by its Java or a librdkafka name): the
/// smaller of [`PARTITION_FETCH_MAX_BYTES`] and a queue's budget — the user's
/// `queued.max.messages.kbytes` if set (raising it for a high-latency link raises this too),
/// else `default_queue_kb`.
fn default_partition_fetch(props: &mut Props, default_queue_kb: usize) {
    let names = ["max.partition.fetch.bytes", "fetch.message.max.bytes"];
    if names.iter().any(|n| user_set(props, n)) {
        return;
    }
    let queue_kb = [
        "queued.max.messages.kbytes",
        "rdkafka.queued.max.messages.kbytes",
    ]
    .iter()
    .find_map(|k| props.get(*k)?.trim().parse::<usize>().ok())
    .unwrap_or(default_queue_kb);
    let bytes = PARTITION_FETCH_MAX_BYTES.min(queue_kb.saturating_mul(1024));
    props.insert("max.partition.fetch.bytes".into(), bytes.to_string());
}

/// Whether `key` is set, by its own name or as `rdkafka.<key>`.
fn user_set(props: &Props, key: &str) -> bool {
    props.contains_key(key) || props.contains_key(&format!("rdkafka.{key}"))
}

/// Sets librdkafka's `key` (as `rdkafka.<key>`) unless the user set it, by either name.
fn librdkafka_default(props: &mut Props, key: &str, value: usize) {
    if !user_set(props, key) {
        props.insert(format!("rdkafka.{key}"), value.to_string());
    }
}

/// The replication consumer's settings: the user's (`consumer`), then [`CONSUMER_DEFAULTS`],
/// each of the slice's `queues` its share of the prefetch budget unless the user sized it,
/// and the settings the copy loop relies on ([`CONSUMER_FORCED`], no silent reset, a group id).
pub(super) fn consumer_props(consumer: &Props, queues: usize) -> Props {
    let mut props = with_defaults(consumer.clone(), CONSUMER_DEFAULTS);
    let queues = queues.max(1);
    let per_queue_kb = (SLICE_PREFETCH_BUDGET_KB / queues).max(CONSUMER_PREFETCH_MIN_KB);
    librdkafka_default(&mut props, "queued.max.messages.kbytes", per_queue_kb);
    let per_queue_records = (SLICE_PREFETCH_RECORDS / queues).max(CONSUMER_PREFETCH_MIN_RECORDS);
    librdkafka_default(&mut props, "queued.min.messages", per_queue_records);
    default_partition_fetch(&mut props, per_queue_kb);
    for (k, v) in CONSUMER_FORCED {
        props.insert((*k).to_string(), (*v).to_string());
    }
    // We position partitions ourselves; librdkafka must never reset silently.
    props.insert("auto.offset.reset".into(), "error".into());
    // librdkafka refuses assign() without a group id. Nothing is ever committed to the source
    // (§7.1), so the group never materialises there.
    props
        .entry("group.id".into())
        .or_insert_with(|| "mirrorslice-replication".into());
    props
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_java_fetch_wait_wins_over_the_default() {
        let mut user = Props::new();
        user.insert("fetch.max.wait.ms".into(), "500".into());
        let translated =
            crate::kafka::client_config::translate(&with_defaults(user, CONSUMER_DEFAULTS));
        assert_eq!(translated.unwrap().settings["fetch.wait.max.ms"], "500");
        let defaulted = with_defaults(Props::new(), CONSUMER_DEFAULTS);
        let translated = crate::kafka::client_config::translate(&defaulted).unwrap();
        assert_eq!(translated.settings["fetch.wait.max.ms"], "10");
    }

    #[test]
    fn the_prefetch_budget_is_split_across_queues_in_bytes_and_records() {
        let one = consumer_props(&Props::new(), 1);
        assert_eq!(one["rdkafka.queued.max.messages.kbytes"], "2048");
        assert_eq!(one["rdkafka.queued.min.messages"], "4096");
        let eight = consumer_props(&Props::new(), 8);
        assert_eq!(eight["rdkafka.queued.max.messages.kbytes"], "256");
        assert_eq!(eight["rdkafka.queued.min.messages"], "512");
        // A user's setting wins, by either name.
        let mut user = Props::new();
        user.insert("rdkafka.queued.min.messages".into(), "100000".into());
        user.insert("queued.max.messages.kbytes".into(), "65536".into());
        let sized = consumer_props(&user, 1);
        assert_eq!(sized["rdkafka.queued.min.messages"], "100000");
        assert!(!sized.contains_key("rdkafka.queued.max.messages.kbytes"));
    }

    #[test]
    fn a_partition_fetch_is_at_most_a_queues_budget_unless_the_user_sized_it() {
        let fetch = |user: &[(&str, &str)], tasks| {
            let props: Props = user
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            consumer_props(&props, tasks)
                .get("max.partition.fetch.bytes")
                .cloned()
        };
        assert_eq!(fetch(&[], 1).as_deref(), Some("1048576"));
        assert_eq!(fetch(&[], 8).as_deref(), Some("262144"));
        // A larger queue (a high-latency link) raises it, up to Java's default.
        let big_queue = [("rdkafka.queued.max.messages.kbytes", "512")];
        assert_eq!(fetch(&big_queue, 8).as_deref(), Some("524288"));
        assert_eq!(
            fetch(&[("queued.max.messages.kbytes", "65536")], 8).as_deref(),
            Some("1048576")
        );
        // The user's own, by either name, is left alone.
        assert_eq!(
            fetch(&[("max.partition.fetch.bytes", "65536")], 8).as_deref(),
            Some("65536")
        );
        let librdkafka_name = [("rdkafka.fetch.message.max.bytes", "65536")];
        assert_eq!(fetch(&librdkafka_name, 8), None);
        // librdkafka accepts the Java name (its alias), so it reaches the client unchanged.
        let translated = crate::kafka::client_config::translate(&consumer_props(&Props::new(), 8));
        assert_eq!(
            translated.unwrap().settings["max.partition.fetch.bytes"],
            "262144"
        );
    }

    #[test]
    fn several_tasks_share_an_idempotent_producer_unless_the_user_chose_the_ordering() {
        let one = producer_props(&Props::new(), 1);
        assert_eq!(one["enable.idempotence"], "false");
        assert_eq!(one["max.in.flight.requests.per.connection"], "1");
        let eight = producer_props(&Props::new(), 8);
        assert_eq!(eight["enable.idempotence"], "true");
        assert_eq!(eight["max.in.flight.requests.per.connection"], "5");
        assert_eq!(eight["acks"], "all");
        // Either key, by either name, keeps Connect's settings for the other.
        for key in [
            "max.in.flight.requests.per.connection",
            "rdkafka.max.in.flight",
            "enable.idempotence",
        ] {
            let mut user = Props::new();
            user.insert(key.into(), "1".into());
            let chosen = producer_props(&user, 8);
            assert_ne!(
                chosen.get("enable.idempotence").map(String::as_str),
                Some("true"),
                "{key}"
            );
            assert_ne!(
                chosen
                    .get("max.in.flight.requests.per.connection")
                    .map(String::as_str),
                Some("5"),
                "{key}"
            );
        }
    }

    #[test]
    fn the_producer_queue_is_bounded_in_bytes_and_records_unless_sized() {
        let props = producer_props(&Props::new(), 1);
        assert_eq!(props["queue.buffering.max.kbytes"], "4096");
        assert_eq!(props["rdkafka.queue.buffering.max.messages"], "16384");
        let mut user = Props::new();
        user.insert("buffer.memory".into(), "1048576".into());
        user.insert("queue.buffering.max.messages".into(), "1000".into());
        let sized = producer_props(&user, 1);
        assert!(!sized.contains_key("queue.buffering.max.kbytes"));
        assert!(!sized.contains_key("rdkafka.queue.buffering.max.messages"));
    }
}
