//! How far translated consumer-group offsets land behind the exact downstream offsets
//! (issues #5 and #16). Two workloads, each on the local stack (`infra/local/stack.sh up`):
//!
//! **`backlog`** (issue #16): a fresh topic with `--records` records (1M by default) over
//! `--partitions`, `--groups` consumer groups committed on every partition at a lag behind
//! the log end drawn log-uniformly (so lags of 0, hundreds, thousands and most of the
//! partition are all sampled), then **one** slice copies the whole backlog and checkpoints
//! every group. Prints the offset syncs written (MM2's cadence sends one per
//! `offset.lag.max`+1 records of a partition while fewer than 10 sends are in flight) and, per
//! bucket of a group's lag, how far its checkpoint lands behind the exact offset. Translation
//! never extrapolates (§8.3) and the sync store keeps exponentially spaced syncs, so the error
//! grows with the group's lag; a group without any checkpoint, or one past its exact offset,
//! is a bug.
//!
//! **`slices`** (issue #5): a 10-partition topic, `SLICES` slices; before each, a random number
//! of records (0–300) per partition and random commits of `GROUPS` groups (30 % of them at the
//! log end, the rest between their previous commit and the end); then one slice with
//! checkpoints. Run twice: with the offset syncs mirrorslice promotes at every slice's end, and
//! without (MM2 promotes delayed syncs only every `offset.flush.interval.ms`, KAFKA-15906).
//!
//! The remote topic is fresh and copied in order, so the exact downstream offset of upstream
//! offset `n` is `n` (checked: remote ends = source ends).
//!
//! `cargo build --release --bin mirrorslice && cargo run --release --example translation_error
//! -- --workload backlog` (`--bin PATH` measures another build); set `MIRRORSLICE_STACK_A` /
//! `MIRRORSLICE_STACK_B` for other brokers.

use clap::Parser;
use mirrorslice::kafka::admin_ext;
use mirrorslice::wire::{Checkpoint, OffsetSync};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::BorrowedMessage;
use rdkafka::producer::{BaseProducer, BaseRecord, FutureProducer, FutureRecord, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    let mut out = Vec::new();
    read_each(bootstrap, topic, partitions, |m| {
        out.push((
            m.partition(),
            m.offset(),
            m.key().map(<[u8]>::to_vec),
            m.payload().map(<[u8]>::to_vec),
        ))
    });
    out
}

/// The log end of every partition of `topic`, read (not listed: some brokers list a high
/// watermark that trails the log).
fn read_ends(bootstrap: &str, topic: &str, partitions: i32) -> Vec<i64> {
    let mut ends = vec![0i64; partitions as usize];
    read_each(bootstrap, topic, partitions, |m| {
        let e = &mut ends[m.partition() as usize];
        *e = (*e).max(m.offset() + 1);
    });
    ends
}

/// Calls `f` with every record of `topic` (partitions 0..n) until each partition reports its
/// end; at most two minutes.
fn read_each(bootstrap: &str, topic: &str, partitions: i32, mut f: impl FnMut(&BorrowedMessage)) {
    let c: BaseConsumer = client(bootstrap)
        .set("group.id", unique("reader"))
        .set("enable.partition.eof", "true")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Offset(0))
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut done = vec![false; partitions as usize];
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done.iter().all(|d| *d) {
        assert!(Instant::now() < deadline, "reading {topic} timed out");
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                done[m.partition() as usize] = false;
                f(&m);
            }
            Some(Err(KafkaError::PartitionEOF(p))) => done[p as usize] = true,
            Some(Err(e)) => panic!("{topic}: {e}"),
            None => {}
        }
    }
}

/// An mm2.properties for the flow `source->target` between the clusters at `a` and `b`, with
/// checkpoints in every slice for the groups `.*-<source>`; `extra` is appended.
fn flow_config(source: &str, target: &str, a: &str, b: &str, extra: &str) -> String {
    format!(
        "clusters = {source}, {target}\n\
         {source}.bootstrap.servers = {a}\n\
         {target}.bootstrap.servers = {b}\n\
         {source}->{target}.enabled = true\n\
         {source}->{target}.topics = .*-{source}\n\
         {source}->{target}.groups = .*-{source}\n\
         {target}->{source}.emit.heartbeats.enabled = false\n\
         emit.checkpoints.interval.seconds = 0\n\
         refresh.groups.interval.seconds = 0\n\
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

/// A fresh flow `source->target` measured on its own: its topic `<label>-<source>` (created
/// with `partitions` on A), config file and state directory.
struct TestFlow {
    source: String,
    target: String,
    topic: String,
    remote: String,
    config: PathBuf,
    state: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl TestFlow {
    /// `extra(source, target)` is appended to the flow's mm2.properties.
    async fn create(
        label: &str,
        a: &str,
        b: &str,
        partitions: i32,
        extra: impl FnOnce(&str, &str) -> String,
    ) -> TestFlow {
        let source = unique(&format!("{}src", &label[..1]));
        let target = unique(&format!("{}dst", &label[..1]));
        let topic = format!("{label}-{source}");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mm2.properties");
        let body = flow_config(&source, &target, a, b, &extra(&source, &target));
        std::fs::write(&config, body).unwrap();
        let admin: AdminClient<DefaultClientContext> = client(a).create().unwrap();
        let new_topic = NewTopic::new(&topic, partitions, TopicReplication::Fixed(1));
        for r in admin
            .create_topics([&new_topic], &AdminOptions::new())
            .await
            .unwrap()
        {
            r.unwrap_or_else(|(t, e)| panic!("create {t}: {e}"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        TestFlow {
            remote: format!("{source}.{topic}"),
            source,
            target,
            topic,
            config,
            state: tempfile::tempdir().unwrap(),
            _dir: dir,
        }
    }

    /// One `mirrorslice run` slice; its JSON report. Panics if the run fails.
    fn run_slice(&self, bin: &Path) -> serde_json::Value {
        let flow = format!("{}->{}", self.source, self.target);
        let out = Command::new(bin)
            .arg("run")
            .arg(&self.config)
            .args(["--flow", &flow, "--max-duration", "10m", "--json"])
            .env("MIRRORSLICE_STATE_DIR", self.state.path())
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
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

async fn measure(a: &str, b: &str, every_commit: bool, bin: &Path) -> Stats {
    let extra_cfg = std::env::var("MEASURE_EXTRA_CONFIG").unwrap_or_default();
    let flow = TestFlow::create("meas", a, b, PARTITIONS, |source, target| {
        format!(
            "{source}->{target}.mirrorslice.offset.syncs.every.commit = {every_commit}\n{}",
            extra_cfg.replace("{target}", target)
        )
    })
    .await;
    let (source, topic, remote) = (&flow.source, &flow.topic, &flow.remote);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ends = vec![0i64; PARTITIONS as usize];
    let mut commits: Vec<Vec<i64>> = vec![vec![0; PARTITIONS as usize]; GROUPS];
    let groups: Vec<String> = (0..GROUPS).map(|g| format!("g{g}-{source}")).collect();
    let mut stats = Stats::default();
    for slice in 0..SLICES {
        let counts: Vec<u64> = (0..PARTITIONS)
            .map(|_| rng.below(MAX_RECORDS_PER_SLICE + 1))
            .collect();
        produce(a, topic, &counts).await;
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
            commit(a, group, topic, &commits[g]).await;
        }
        let report = flow.run_slice(bin);
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
        let remote_ends = read_ends(b, remote, PARTITIONS);
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
                    Some(cp) if cp.topic == *remote => {
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

/// Produces `records` records of 100 bytes round-robin over partitions 0..n, fast (batched).
fn produce_backlog(bootstrap: &str, topic: &str, partitions: i32, records: u64) {
    let p: BaseProducer = client(bootstrap)
        .set("linger.ms", "20")
        .set("queue.buffering.max.messages", "200000")
        .create()
        .unwrap();
    let value = [b'x'; 100];
    for i in 0..records {
        let mut rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(topic)
            .partition((i % partitions as u64) as i32)
            .payload(&value[..]);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    rec = back;
                    p.poll(Duration::from_millis(10));
                }
                Err((e, _)) => panic!("produce to {topic}: {e}"),
            }
        }
    }
    p.flush(Duration::from_secs(300)).unwrap();
}

/// A long backlog copied in one slice (issue #16): `records` over `partitions`, `groups`
/// groups committed on every partition at a distance drawn log-uniformly from 0 to the whole
/// partition, behind the log end for half of them and past the log start for the others, so
/// every scale of lag is sampled. Prints the offset syncs written and, per lag bucket, how far
/// each group's checkpoint lands behind its exact offset.
async fn backlog(a: &str, b: &str, bin: &Path, args: &Args) {
    let (partitions, records) = (args.partitions, args.records);
    let extra = format!("offset.lag.max = {}", args.lag_max);
    let flow = TestFlow::create("backlog", a, b, partitions, |_, _| extra).await;
    let (source, target, topic, remote) = (&flow.source, &flow.target, &flow.topic, &flow.remote);
    let t = Instant::now();
    produce_backlog(a, topic, partitions, records);
    let ends = read_ends(a, topic, partitions);
    println!(
        "  produced {records} records in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut commits: Vec<(String, Vec<i64>)> = Vec::new();
    for g in 0..args.groups {
        let group = format!("g{g}-{source}");
        let offsets: Vec<i64> = ends
            .iter()
            .map(|&end| {
                // Log-uniform: as many groups 10-100 records away as 10k-100k away. Half are
                // that far behind the end (live consumers), half that far past the log start
                // (stalled or abandoned ones: the groups that need the early syncs).
                let u = rng.below(1_000_001) as f64 / 1e6;
                let distance = ((end as f64 + 1.0).powf(u) - 1.0).floor() as i64;
                let distance = distance.clamp(0, end);
                if g % 2 == 0 {
                    end - distance
                } else {
                    distance
                }
            })
            .collect();
        commit(a, &group, topic, &offsets).await;
        commits.push((group, offsets));
    }

    let t = Instant::now();
    let report = flow.run_slice(bin);
    let slice = &report["slices"][0];
    assert_eq!(
        slice["caught_up"], true,
        "one slice copies the backlog: {slice:#}"
    );
    println!(
        "  one slice copied it in {:.1} s; checkpoints {} ms",
        t.elapsed().as_secs_f64(),
        slice["checkpoints"]["duration_ms"]
    );
    let checkpoints = &slice["checkpoints"];
    assert_eq!(checkpoints["status"], "ran", "{checkpoints:#}");
    assert_eq!(
        checkpoints["errors"],
        serde_json::json!([]),
        "{checkpoints:#}"
    );
    assert_eq!(read_ends(b, remote, partitions), ends, "remote = source");

    let syncs_topic = format!("mm2-offset-syncs.{target}.internal");
    let mut synced: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    read_each(a, &syncs_topic, 1, |m| {
        if let (Some(k), Some(v)) = (m.key(), m.payload()) {
            match OffsetSync::decode(k, v) {
                Ok(s) if s.topic == *topic => synced
                    .entry(s.partition)
                    .or_default()
                    .push(s.upstream_offset),
                _ => {}
            }
        }
    });
    report_sync_spacing(&synced, records, args.lag_max);

    let mut latest: BTreeMap<(String, i32), Checkpoint> = BTreeMap::new();
    for (_, _, k, v) in read_all(b, &format!("{source}.checkpoints.internal"), 1) {
        let cp = Checkpoint::decode(&k.unwrap(), &v.unwrap()).unwrap();
        latest.insert((cp.consumer_group_id.clone(), cp.partition), cp);
    }
    report_backlog_errors(&commits, &ends, &latest, remote);
}

/// How many offset syncs were written and how far apart (upstream offsets) they are.
fn report_sync_spacing(synced: &BTreeMap<i32, Vec<i64>>, records: u64, lag_max: i64) {
    let count: usize = synced.values().map(Vec::len).sum();
    let ideal = records / (lag_max as u64 + 1);
    println!(
        "  offset syncs written: {count} ({:.0} per 1M records; one per offset.lag.max+1 \
         records would be {ideal})",
        count as f64 * 1e6 / records as f64
    );
    let mut gaps: Vec<i64> = synced
        .values()
        .flat_map(|ups| ups.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>())
        .collect();
    gaps.sort_unstable();
    if let (Some(max), false) = (gaps.last(), gaps.is_empty()) {
        println!(
            "  upstream distance between consecutive syncs of a partition: median {}, p90 {}, \
             max {max}",
            gaps[gaps.len() / 2],
            gaps[gaps.len() * 9 / 10]
        );
    }
}

/// Per bucket of a group's lag behind the log end: how far its checkpoint lands behind the
/// exact offset (upstream n is downstream n on a fresh remote topic).
fn report_backlog_errors(
    commits: &[(String, Vec<i64>)],
    ends: &[i64],
    latest: &BTreeMap<(String, i32), Checkpoint>,
    remote: &str,
) {
    let buckets: [(&str, i64, i64); 5] = [
        ("lag 0 (at the end)", 0, 0),
        ("lag 1-999", 1, 999),
        ("lag 1k-9,999", 1_000, 9_999),
        ("lag 10k-99,999", 10_000, 99_999),
        ("lag >= 100k", 100_000, i64::MAX),
    ];
    let (mut missing, mut overshoot) = (0, 0);
    let mut per_bucket: Vec<(Vec<i64>, Vec<f64>)> = vec![Default::default(); buckets.len()];
    for (group, offsets) in commits {
        for (p, &committed) in offsets.iter().enumerate() {
            let Some(cp) = latest
                .get(&(group.clone(), p as i32))
                .filter(|c| c.topic == remote)
            else {
                missing += 1;
                continue;
            };
            let error = committed - cp.downstream_offset;
            overshoot += usize::from(error < 0);
            let lag = ends[p] - committed;
            let k = buckets
                .iter()
                .position(|(_, lo, hi)| (*lo..=*hi).contains(&lag));
            let (errors, ratios) = &mut per_bucket[k.expect("buckets cover every lag")];
            errors.push(error);
            ratios.push(error as f64 / lag.max(1) as f64);
        }
    }
    println!("  (group, partition) pairs without a checkpoint: {missing}");
    println!("  translated past the exact offset: {overshoot}");
    println!("  records behind the exact offset (exact - checkpoint), by the group's lag:");
    for ((label, _, _), (errors, ratios)) in buckets.iter().zip(&per_bucket) {
        let worst = ratios.iter().cloned().fold(0.0, f64::max);
        println!(
            "    {label:<20} {}; worst error/lag {:.2}",
            summary(errors),
            worst
        );
    }
}

#[derive(Parser)]
struct Args {
    /// `backlog`: one long backlog copied in one slice; `slices`: many short slices, with and
    /// without the slice-boundary syncs; `both`.
    #[arg(long, default_value = "both")]
    workload: String,
    /// Backlog: records in all (over `--partitions`).
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    #[arg(long, default_value_t = 10)]
    partitions: i32,
    /// Backlog: `offset.lag.max` of the flow.
    #[arg(long, default_value_t = 100)]
    lag_max: i64,
    /// Backlog: consumer groups, each committed on every partition.
    #[arg(long, default_value_t = 20)]
    groups: usize,
    /// The mirrorslice binary to measure (default: target/release, else target/debug).
    #[arg(long)]
    bin: Option<PathBuf>,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let a = std::env::var("MIRRORSLICE_STACK_A").unwrap_or_else(|_| "127.0.0.1:19092".into());
    let b = std::env::var("MIRRORSLICE_STACK_B").unwrap_or_else(|_| "127.0.0.1:29092".into());
    let target_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    let bin = args.bin.clone().unwrap_or_else(|| {
        let release = target_dir.join("release/mirrorslice");
        if release.exists() {
            release
        } else {
            target_dir.join("debug/mirrorslice")
        }
    });
    assert!(
        bin.exists(),
        "build the CLI first: cargo build --release --bin mirrorslice"
    );
    println!("binary: {}", bin.display());
    if matches!(args.workload.as_str(), "backlog" | "both") {
        println!(
            "backlog: {} records over {} partitions, copied in one slice, offset.lag.max={}, \
             {} groups",
            args.records, args.partitions, args.lag_max, args.groups
        );
        backlog(&a, &b, &bin, &args).await;
    }
    if !matches!(args.workload.as_str(), "slices" | "both") {
        return;
    }
    println!(
        "slices: {PARTITIONS} partitions, {SLICES} slices, 0-{MAX_RECORDS_PER_SLICE} records per partition per slice, \
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
