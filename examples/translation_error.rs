//! How far translated consumer-group offsets land from the exact downstream offsets, with and
//! without the offset syncs mirrorslice promotes at the end of every slice (issue #5, part 2).
//!
//! MM2 promotes delayed offset syncs only at each offset commit (`offset.flush.interval.ms`,
//! KAFKA-15906), so between commits the newest sync of a partition can be up to
//! `offset.lag.max` records behind, and translation (which never extrapolates, §8.3) gives
//! `sync.downstream + 1`. A slice commits at its end and promotes then too, so the last record
//! of every partition has a sync when the checkpoints are computed.
//!
//! Workload, run once per mode on the local stack (`infra/local/stack.sh up`): a fresh
//! 10-partition topic, `SLICES` slices; before each, a random number of records (0–300) per
//! partition and random commits of `GROUPS` groups (30 % of them at the log end, the rest at a
//! random position between their previous commit and the end); then one `mirrorslice run`
//! slice with checkpoints every slice. The remote topic is fresh and the copy is in order, so
//! the exact downstream offset of upstream offset `n` is `n` (checked: remote ends = source
//! ends). The distance is `exact − translated` for every (group, partition) whose latest
//! checkpoint translates its current commit; commits without such a checkpoint are counted as
//! "no checkpoint" (behind the oldest sync, or no newer translation).
//!
//! `cargo run --example translation_error` (after `cargo build --bin mirrorslice`); set
//! `MIRRORSLICE_STACK_A` / `MIRRORSLICE_STACK_B` for other brokers.

use mirrorslice::kafka::admin_ext;
use mirrorslice::wire::Checkpoint;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const PARTITIONS: i32 = 10;
const SLICES: usize = 12;

const GROUPS: usize = 6;
const MAX_RECORDS_PER_SLICE: u64 = 300;

/// xorshift64*: deterministic, so both modes see the same workload.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

#[derive(Default)]
struct Stats {
    samples: Vec<i64>,
    at_end: Vec<i64>,
    mid: Vec<i64>,
    no_checkpoint: usize,
    overshoot: usize,
    stale: usize,
    slice_ms: Vec<i64>,
    checkpoint_ms: Vec<i64>,
}

fn summary(v: &[i64]) -> String {
    if v.is_empty() {
        return "n=0".into();
    }
    let mean = v.iter().sum::<i64>() as f64 / v.len() as f64;
    let exact = v.iter().filter(|d| **d == 0).count();
    format!(
        "n={}, mean={mean:.2}, max={}, exact={} ({:.0} %)",
        v.len(),
        v.iter().max().unwrap(),
        exact,
        100.0 * exact as f64 / v.len() as f64
    )
}

fn client(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    c
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}{:x}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros() as u32
    )
}

async fn produce(bootstrap: &str, topic: &str, counts: &[u64]) {
    let p: FutureProducer = client(bootstrap)
        .set("max.in.flight.requests.per.connection", "1")
        .create()
        .unwrap();
    let mut pending = Vec::new();
    for (partition, n) in counts.iter().enumerate() {
        for i in 0..*n {
            let value = format!("v{i}");
            let rec: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic)
                .partition(partition as i32)
                .payload(value.as_bytes());
            pending.push(p.send_result(rec).map_err(|(e, _)| e).unwrap());
        }
    }
    for f in pending {
        f.await.unwrap().map_err(|(e, _)| e).unwrap();
    }
}

async fn commit(bootstrap: &str, group: &str, topic: &str, offsets: &[i64]) {
    let admin: AdminClient<DefaultClientContext> = client(bootstrap).create().unwrap();
    let rows: Vec<(String, i32, i64, String)> = offsets
        .iter()
        .enumerate()
        .map(|(p, o)| (topic.to_string(), p as i32, *o, String::new()))
        .collect();
    for (_, r) in
        admin_ext::alter_consumer_group_offsets(&admin, group, &rows, Duration::from_secs(10))
            .await
            .unwrap()
    {
        r.unwrap();
    }
}

/// A record read back: partition, offset, key, value.
type Read = (i32, i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// Every record of `topic` (partitions 0..n) until each partition reports its end.
fn read_all(bootstrap: &str, topic: &str, partitions: i32) -> Vec<Read> {
    let c: BaseConsumer = client(bootstrap)
        .set("group.id", unique("reader"))
        .set("enable.partition.eof", "true")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut done = vec![false; partitions as usize];
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done.iter().all(|d| *d) {
        assert!(Instant::now() < deadline, "reading {topic} timed out");
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                done[m.partition() as usize] = false;
                out.push((
                    m.partition(),
                    m.offset(),
                    m.key().map(<[u8]>::to_vec),
                    m.payload().map(<[u8]>::to_vec),
                ));
            }
            Some(Err(KafkaError::PartitionEOF(p))) => done[p as usize] = true,
            Some(Err(e)) => panic!("{topic}: {e}"),
            None => {}
        }
    }
    out
}

async fn measure(a: &str, b: &str, every_commit: bool, bin: &PathBuf) -> Stats {
    let source = unique("msrc");
    let target = unique("mdst");
    let topic = format!("meas-{source}");
    let remote = format!("{source}.{topic}");
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    let extra_cfg = std::env::var("MEASURE_EXTRA_CONFIG")
        .unwrap_or_default()
        .replace("{target}", &target);
    std::fs::write(
        &config,
        format!(
            "clusters = {source}, {target}\n\
             {source}.bootstrap.servers = {a}\n\
             {target}.bootstrap.servers = {b}\n\
             {source}->{target}.enabled = true\n\
             {source}->{target}.topics = .*-{source}\n\
             {source}->{target}.groups = .*-{source}\n\
             {source}->{target}.mirrorslice.offset.syncs.every.commit = {every_commit}\n\
             {target}->{source}.emit.heartbeats.enabled = false\n\
             emit.checkpoints.interval.seconds = 0\n\
             refresh.groups.interval.seconds = 0\n\
             replication.factor = 1\n\
             offset-syncs.topic.replication.factor = 1\n\
             checkpoints.topic.replication.factor = 1\n\
             heartbeats.topic.replication.factor = 1\n\
             config.storage.replication.factor = 1\n\
             offset.storage.replication.factor = 1\n\
             status.storage.replication.factor = 1\n{extra_cfg}"
        ),
    )
    .unwrap();
    let admin: AdminClient<DefaultClientContext> = client(a).create().unwrap();
    admin
        .create_topics(
            [&NewTopic::new(
                &topic,
                PARTITIONS,
                TopicReplication::Fixed(1),
            )],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ends = vec![0i64; PARTITIONS as usize];
    let mut commits: Vec<Vec<i64>> = vec![vec![0; PARTITIONS as usize]; GROUPS];
    let groups: Vec<String> = (0..GROUPS).map(|g| format!("g{g}-{source}")).collect();
    let mut stats = Stats::default();
    for slice in 0..SLICES {
        let counts: Vec<u64> = (0..PARTITIONS)
            .map(|_| rng.below(MAX_RECORDS_PER_SLICE + 1))
            .collect();
        produce(a, &topic, &counts).await;
        for (e, c) in ends.iter_mut().zip(&counts) {
            *e += *c as i64;
        }
        for (g, group) in groups.iter().enumerate() {
            for p in 0..PARTITIONS as usize {
                let prev = commits[g][p];
                commits[g][p] = if rng.below(10) < 3 {
                    ends[p]
                } else {
                    prev + rng.below((ends[p] - prev) as u64 + 1) as i64
                };
            }
            commit(a, group, &topic, &commits[g]).await;
        }
        let out = Command::new(bin)
            .arg("run")
            .arg(&config)
            .args(["--flow", &format!("{source}->{target}"), "--json"])
            .env("MIRRORSLICE_STATE_DIR", state.path())
            .env(
                "MIRRORSLICE_LOG",
                std::env::var("MIRRORSLICE_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .output()
            .unwrap();
        if std::env::var_os("MIRRORSLICE_LOG").is_some() {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let slice_report = &report["slices"][0];
        stats
            .slice_ms
            .push(slice_report["duration_ms"].as_i64().unwrap_or(0));
        stats.checkpoint_ms.push(
            slice_report["checkpoints"]["duration_ms"]
                .as_i64()
                .unwrap_or(0),
        );

        // The exact downstream offset of upstream n is n: the remote copy is in order.
        let mut remote_ends = vec![0i64; PARTITIONS as usize];
        for (p, o, _, _) in read_all(b, &remote, PARTITIONS) {
            remote_ends[p as usize] = remote_ends[p as usize].max(o + 1);
        }
        assert_eq!(
            remote_ends, ends,
            "slice {slice}: remote = source, no duplicates"
        );

        let mut latest: BTreeMap<(String, i32), Checkpoint> = BTreeMap::new();
        for (_, _, k, v) in read_all(b, &format!("{source}.checkpoints.internal"), 1) {
            let cp = Checkpoint::decode(&k.unwrap(), &v.unwrap()).unwrap();
            latest.insert((cp.consumer_group_id.clone(), cp.partition), cp);
        }
        for (g, group) in groups.iter().enumerate() {
            for p in 0..PARTITIONS {
                let committed = commits[g][p as usize];
                // What a consumer failing over now would get: the latest checkpoint of the
                // partition (`remoteConsumerOffsets`), even when the monotonic filter kept an
                // older one because the new commit translated no further.
                match latest.get(&(group.clone(), p)) {
                    Some(cp) if cp.topic == remote => {
                        if cp.upstream_offset != committed {
                            stats.stale += 1;
                        }
                        let d = committed - cp.downstream_offset;
                        if d < 0 {
                            stats.overshoot += 1;
                        }
                        stats.samples.push(d);
                        if committed == ends[p as usize] {
                            stats.at_end.push(d);
                        } else {
                            stats.mid.push(d);
                        }
                    }
                    _ => stats.no_checkpoint += 1,
                }
            }
        }
    }
    stats
}

#[tokio::main]
async fn main() {
    let a = std::env::var("MIRRORSLICE_STACK_A").unwrap_or_else(|_| "127.0.0.1:19092".into());
    let b = std::env::var("MIRRORSLICE_STACK_B").unwrap_or_else(|_| "127.0.0.1:29092".into());
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/debug/mirrorslice");
    assert!(
        bin.exists(),
        "build the CLI first: cargo build --bin mirrorslice"
    );
    println!(
        "workload: {PARTITIONS} partitions, {SLICES} slices, 0-{MAX_RECORDS_PER_SLICE} records per partition per slice, \
         {GROUPS} groups (30 % of commits at the log end), offset.lag.max=100, offset.flush.interval.ms=60000"
    );
    for (label, every_commit) in [
        ("with slice-boundary syncs (default)", true),
        (
            "without (MM2: promote only every offset.flush.interval.ms)",
            false,
        ),
    ] {
        let s = measure(&a, &b, every_commit, &bin).await;
        println!("{label}:");
        println!("  all commits:        {}", summary(&s.samples));
        println!("  commits at log end: {}", summary(&s.at_end));
        println!("  commits mid-log:    {}", summary(&s.mid));
        println!(
            "  (group, partition) pairs without any checkpoint: {}",
            s.no_checkpoint
        );
        println!(
            "  latest checkpoint from an earlier commit (the new one translated no further): {}",
            s.stale
        );
        println!("  translated past the exact offset: {}", s.overshoot);
        let mean = |v: &[i64]| v.iter().sum::<i64>() as f64 / v.len().max(1) as f64;
        println!(
            "  slice duration mean {:.0} ms, of which checkpoints {:.0} ms",
            mean(&s.slice_ms),
            mean(&s.checkpoint_ms)
        );
    }
}
