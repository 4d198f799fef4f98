//! Benchmarks of issue #3: throughput, slice start-up and memory of `mirrorslice run`, each as a
//! ratio against a baseline measured in the same run, on the same data, on the same brokers.
//!
//! ```text
//! cargo bench --bench slice                       # everything (~20–25 min on 2 cores)
//! MIRRORSLICE_BENCH_ONLY=throughput cargo bench --bench slice
//! MIRRORSLICE_BENCH_ONLY=startup MIRRORSLICE_BENCH_HISTORY_SECS=0 cargo bench --bench slice
//! ```
//!
//! `cargo bench` builds this file and the `mirrorslice` binary with the release profile (the
//! `bench` profile inherits it), starts the local stack (`infra/local/stack.sh up`: tansu brokers
//! A = 127.0.0.1:19092 and B = 127.0.0.1:29092, or with `MIRRORSLICE_BROKER=kafka` Apache Kafka
//! on 19192 and 29192), names every topic, cluster alias and state
//! directory uniquely, prints tables, deletes the big topics it made, and exits 0. It exits
//! non-zero only when a measurement itself went wrong (a slice failed, a record went missing);
//! a missed target is printed as `MISS`, not an error. It is not part of `cargo test`.
//! The machine's load average is printed with each table: other work on a 2-core box moves
//! wall-clock figures a lot, so the throughput table also gives each process's CPU time.
//! CPU figures settle when the measured processes do not share cores with the brokers: pin the
//! running brokers to one core and the bench (and so every process it measures) to the other —
//! `taskset -a -p -c 0 <pid>` for each broker (the PIDs are in `infra/local/.run/*.pid`), then
//! `taskset -c 1 cargo bench --bench slice` (build first: cargo itself then runs on one core).
//! Pinned, the client is CPU-bound, so its throughput ratio measures CPU efficiency too; the
//! header's CPU count says which way a table was measured.
//! Housekeeping for the in-memory brokers (a 1M-record copy holds ~0.6 GB in tansu):
//! `target/release/deps/slice-<hash> __topics 127.0.0.1:29092 benchpipe-` lists topics by prefix,
//! `... __delete 127.0.0.1:29092 TOPIC...` deletes them.
//!
//! Settings (environment):
//! * `MIRRORSLICE_BENCH_RECORDS` (1000000), `MIRRORSLICE_BENCH_SIZE` (512 bytes of value),
//!   `MIRRORSLICE_BENCH_PARTITIONS` (8) — the throughput data set;
//! * `MIRRORSLICE_BENCH_PRIOR_SLICES` (1000) — history of the "many prior slices" flow;
//! * `MIRRORSLICE_BENCH_HISTORY_SECS` (600) — how long real prior slices may run; the rest of
//!   the history is written through the library exactly as a slice writes it (see below);
//! * `MIRRORSLICE_BENCH_REPS` (3) — repetitions of each start-up measurement (median printed);
//! * `MIRRORSLICE_BENCH_TP_REPS` (3) — how many times the pipe and the one-task slice alternate
//!   in the throughput measurement (ratios are medians);
//! * `MIRRORSLICE_BENCH_ONLY` = `throughput` | `startup` | `secured` (Apache Kafka stack only:
//!   see `benches/slice/secured.rs`) | `matrix` (issue #14's grid of record sizes, partition
//!   counts, compression and `tasks.max`, not part of a full run: see `benches/slice/matrix.rs`);
//! * `MIRRORSLICE_BENCH_BIN` — measure another `mirrorslice` build (e.g. before a change)
//!   against the same baselines;
//! * `MIRRORSLICE_BENCH_CONSUMER`, `MIRRORSLICE_BENCH_PRODUCER` (both `none`: skipped), e.g.
//!   `queued.max.messages.kbytes=1024`, `queue.buffering.max.kbytes=2048` — a second set of
//!   throughput runs with these librdkafka settings on top of the task's defaults, given alike
//!   to the pipe and to `mirrorslice` (as `<source>.consumer.<key>`, `<target>.producer.<key>`);
//!   `none` for both skips that set. The matrix runs its whole grid with them instead of the
//!   defaults, e.g. `MIRRORSLICE_BENCH_PRODUCER=enable.idempotence=true,
//!   max.in.flight.requests.per.connection=5` (one line, no space).
//!
//! **1. Throughput.** One source topic on A is seeded with N records (key `key-<i>`, a header,
//! a timestamp) round-robin over the partitions. The baseline is a bare rdkafka pipe (a child
//! process of this bench, `__pipe` mode): `BaseConsumer` assigned from the beginning,
//! `BaseProducer` to a fresh topic on B, same partition, copying key/value/headers/timestamp, with
//! exactly the consumer and producer settings `mirrorslice`'s task uses by default
//! (`src/connectors/source/task.rs`: CONSUMER_FORCED, CONSUMER_DEFAULTS, PRODUCER_DEFAULTS); it
//! stops when every partition is at EOF and every delivery is acknowledged. The pipe and a
//! one-task slice alternate `MIRRORSLICE_BENCH_TP_REPS` times, then an eight-task slice, the
//! diagnostic pipe and a last pipe run; every copy is deleted from B right after its run (the
//! brokers keep data in memory, and a fuller broker is a slower one). Ratios are medians over
//! the runs against the median pipe. A diagnostic row runs the
//! pipe with one queue per partition, as the task reads: librdkafka's
//! `queued.max.messages.kbytes` then bounds each partition's queue instead of the consumer's,
//! which decides both speed and memory. `mirrorslice` figures
//! come from its report (records, bytes, duration_ms) and from the process's wall-clock time;
//! the pipe's from its own timer (client creation → last ack) and its wall-clock time.
//!
//! **2. Start-up.** Two flows with equal data (8 partitions, PRIOR records each, stored offset
//! PRIOR-1 on every partition): one with 1 prior slice, one with PRIOR prior slices. Real prior
//! slices (produce one record per partition, run a slice) are used while they fit in
//! `MIRRORSLICE_BENCH_HISTORY_SECS`; the rest of the history is written as a slice writes it:
//! per slice one `OffsetStore::commit` of every partition's key (same state dir and hint key as
//! task 0, so the hint moves as after real slices) and the status records of a slice
//! (`StatusStore`: connector RUNNING, task RUNNING, task UNASSIGNED + slice report, connector
//! UNASSIGNED). (Not simulated: offset syncs on the source cluster, which start-up never reads,
//! and whatever the checkpoint/heartbeat part of a slice writes.)
//! Then, interleaving the two flows: (a) produce one record per partition and measure the time
//! from process start until the first of them is readable on B, plus the slice's duration;
//! (b) an idle slice's duration. Both with the position hint and without it (hint file deleted
//! from the state dir before each run, forcing the full read of our offsets-topic partitions).
//!
//! **3. Peak RSS** of each throughput process (`/usr/bin/time -f %M`, i.e. the kernel's
//! ru_maxrss; falls back to polling `VmHWM` in /proc when `/usr/bin/time` is missing).

use mirrorslice::config::Props;
use mirrorslice::connect::offset_store::{OffsetStore, PartitionKey};
use mirrorslice::connect::status_store::{StatusStore, StatusUpdate};
use mirrorslice::state::LocalStateStore;
use mirrorslice::wire::connect_status::{State, Status};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientConfig, Message, Offset, Timestamp, TopicPartitionList};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[path = "slice/matrix.rs"]
mod matrix;
#[path = "slice/secured.rs"]
mod secured;

const CONNECTOR: &str = "MirrorSourceConnector";
const MIRRORSLICE: &str = env!("CARGO_BIN_EXE_mirrorslice");

/// The `mirrorslice` binary measured: this build's, or `MIRRORSLICE_BENCH_BIN` (another build,
/// to compare before and after a change against the same pipe).
fn mirrorslice_bin() -> String {
    std::env::var("MIRRORSLICE_BENCH_BIN").unwrap_or_else(|_| MIRRORSLICE.to_string())
}
const TIME_BIN: &str = "/usr/bin/time";

/// The task's settings, copied from `src/connectors/source/clients.rs` (CONSUMER_FORCED,
/// CONSUMER_DEFAULTS, PRODUCER_DEFAULTS, the prefetch budget) so the baseline pipe runs with
/// the same ones: those of a one-task slice, which the pipe is. (Several tasks share an
/// idempotent producer with five requests in flight, SHARED_PRODUCER_DEFAULTS; the pipe with
/// it measured as fast as without: `MIRRORSLICE_BENCH_PRODUCER` gives it to both.) The pipe
/// reads one queue, so the task's whole budget (2 MiB) bounds it; with
/// `MIRRORSLICE_BENCH_PIPE_PARTITION_QUEUES=1` each partition gets the task's share instead.
const PIPE_CONSUMER: &[(&str, &str)] = &[
    ("enable.partition.eof", "true"),
    ("enable.auto.commit", "false"),
    ("enable.auto.offset.store", "false"),
    ("auto.offset.reset", "error"),
    ("fetch.wait.max.ms", "10"),
    ("fetch.queue.backoff.ms", "10"),
    ("isolation.level", "read_uncommitted"),
    // Checking each fetched batch's CRC is a per-byte cost (a tenth of the CPU at 10 KiB
    // records); the task checks them, as Java's consumer does.
    ("check.crcs", "true"),
];
const PIPE_PREFETCH_BUDGET_KB: usize = 2 * 1024;
const PIPE_PREFETCH_MIN_KB: usize = 64;
/// The prefetch budget in records (`queued.min.messages`), split alike.
const PIPE_PREFETCH_RECORDS: usize = 4096;
const PIPE_PREFETCH_MIN_RECORDS: usize = 512;
const PIPE_PRODUCER: &[(&str, &str)] = &[
    ("acks", "all"),
    ("enable.idempotence", "false"),
    ("max.in.flight.requests.per.connection", "1"),
    ("linger.ms", "5"),
    ("queue.buffering.max.kbytes", "4096"),
    ("queue.buffering.max.messages", "16384"),
    ("compression.type", "none"),
];

type BenchResult<T> = Result<T, String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__pipe") {
        std::process::exit(match pipe_main(&args[1..]) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("pipe: {e}");
                1
            }
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // Housekeeping for the in-memory brokers: `__topics BOOTSTRAP PREFIX` lists topics whose
    // names start with PREFIX, `__delete BOOTSTRAP TOPIC...` deletes them.
    match (args.first().map(String::as_str), args.get(1)) {
        (Some("__topics"), Some(bootstrap)) => {
            let prefix = args.get(2).map(String::as_str).unwrap_or("");
            let c: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", bootstrap)
                .create()
                .expect("consumer");
            let md = c
                .fetch_metadata(None, Duration::from_secs(10))
                .expect("metadata");
            for t in md.topics().iter().filter(|t| t.name().starts_with(prefix)) {
                println!("{}", t.name());
            }
            return;
        }
        (Some("__delete"), Some(bootstrap)) => {
            runtime.block_on(delete_topics(bootstrap, &args[2..]));
            return;
        }
        _ => {}
    }
    if let Err(e) = runtime.block_on(bench_main()) {
        eprintln!("bench failed: {e}");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------------------
// Settings, stack, helpers
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Settings {
    records: u64,
    size: usize,
    partitions: i32,
    prior: usize,
    history_secs: u64,
    reps: usize,
    tp_reps: usize,
    only: Option<String>,
    /// Extra client settings for the throughput runs, applied alike to the pipe and to
    /// `mirrorslice` (as `<source>.consumer.*` / `<target>.producer.*`).
    consumer_extra: Vec<(String, String)>,
    producer_extra: Vec<(String, String)>,
    a: String,
    b: String,
}

fn env_num<T: std::str::FromStr>(key: &str, default: T) -> T {
    match std::env::var(key) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{key}={v} is not a number")),
        Err(_) => default,
    }
}

/// `k=v,k=v` from the environment (`none` or empty: no pairs).
fn pairs(key: &str, default: &str) -> Vec<(String, String)> {
    std::env::var(key)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter(|kv| kv.trim() != "none")
        .filter(|kv| !kv.trim().is_empty())
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| panic!("{key}: {kv} is not key=value"));
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect()
}

fn settings() -> Settings {
    let (a, b) = stack_addresses();
    Settings {
        records: env_num("MIRRORSLICE_BENCH_RECORDS", 1_000_000u64),
        size: env_num("MIRRORSLICE_BENCH_SIZE", 512usize),
        partitions: env_num("MIRRORSLICE_BENCH_PARTITIONS", 8i32),
        prior: env_num("MIRRORSLICE_BENCH_PRIOR_SLICES", 1000usize).max(2),
        history_secs: env_num("MIRRORSLICE_BENCH_HISTORY_SECS", 600u64),
        reps: env_num("MIRRORSLICE_BENCH_REPS", 3usize).max(1),
        tp_reps: env_num("MIRRORSLICE_BENCH_TP_REPS", 3usize).max(1),
        only: std::env::var("MIRRORSLICE_BENCH_ONLY").ok(),
        consumer_extra: pairs("MIRRORSLICE_BENCH_CONSUMER", "none"),
        producer_extra: pairs("MIRRORSLICE_BENCH_PRODUCER", "none"),
        a,
        b,
    }
}

/// Bootstrap addresses of clusters A and B as `stack.sh env` prints them: the script knows the
/// ports of each kind of broker (`MIRRORSLICE_BROKER`) and the overrides.
fn stack_addresses() -> (String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("infra/local/stack.sh");
    let out = Command::new(&script)
        .arg("env")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} env: {}",
        script.display(),
        out.status
    );
    let env = String::from_utf8_lossy(&out.stdout);
    let var = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("export {k}=")))
            .unwrap_or_else(|| panic!("`stack.sh env` printed no {k}"))
            .to_string()
    };
    (var("MIRRORSLICE_STACK_A"), var("MIRRORSLICE_STACK_B"))
}

fn stack_up() -> BenchResult<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("infra/local/stack.sh");
    let status = Command::new(&script)
        .arg("up")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !status.success() {
        return Err(format!("{} up failed: {status}", script.display()));
    }
    Ok(())
}

/// Lower-case alphanumeric, unique across runs: cluster aliases, topic and group names.
fn unique(prefix: &str) -> String {
    use std::sync::atomic::AtomicU32;
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}{:x}{:x}{}",
        (nanos % (1 << 36)) as u64,
        std::process::id() % 4096,
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

fn admin(bootstrap: &str) -> BenchResult<AdminClient<DefaultClientContext>> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .map_err(|e| format!("admin client for {bootstrap}: {e}"))
}

async fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> BenchResult<()> {
    let admin = admin(bootstrap)?;
    let results = admin
        .create_topics(
            &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(30))),
        )
        .await
        .map_err(|e| format!("create {topic}: {e}"))?;
    for r in results {
        r.map_err(|(t, e)| format!("create {t}: {e}"))?;
    }
    Ok(())
}

/// Best effort: the brokers keep everything in memory, so drop the big topics when done.
/// Failures are printed (with the names, for `__delete`), never fatal.
async fn delete_topics(bootstrap: &str, topics: &[String]) {
    if topics.is_empty() {
        return;
    }
    let Ok(admin) = admin(bootstrap) else { return };
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    match admin.delete_topics(&names, &opts).await {
        Ok(results) => {
            for r in results {
                if let Err((t, e)) = r {
                    eprintln!("note: deleting {t} on {bootstrap}: {e}");
                }
            }
        }
        Err(e) => eprintln!("note: deleting {names:?} on {bootstrap}: {e}"),
    }
}

/// One producer per cluster for the whole run: a new idempotent producer waits ~0.5 s for its
/// producer id, which would dominate producing one record per partition before each slice.
fn seed_producer(bootstrap: &str, compression: &str) -> BenchResult<&'static BaseProducer> {
    use std::sync::{Mutex, OnceLock};
    static PRODUCERS: OnceLock<Mutex<BTreeMap<String, &'static BaseProducer>>> = OnceLock::new();
    let mut map = PRODUCERS
        .get_or_init(Default::default)
        .lock()
        .expect("producers lock");
    let id = format!("{bootstrap} {compression}");
    if let Some(p) = map.get(&id) {
        return Ok(p);
    }
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "10")
        .set("enable.idempotence", "true")
        .set("compression.type", compression)
        .create()
        .map_err(|e| format!("seed producer: {e}"))?;
    let p: &'static BaseProducer = Box::leak(Box::new(p));
    map.insert(id, p);
    Ok(p)
}

/// Produces `per_partition` records to every partition (key `<tag>-<p>-<i>`, a header, the
/// current time) with the seed example's settings, in batches compressed with `compression`
/// (librdkafka's `compression.type`), waiting for every delivery. Values are hex digits from a pseudo-random stream (about 2:1 compressible, like text)
/// rather than one repeated byte, which would compress a hundredfold.
fn produce(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    per_partition: u64,
    size: usize,
    tag: &str,
    compression: &str,
) -> BenchResult<()> {
    let producer = seed_producer(bootstrap, compression)?;
    let values = hex_stream(size + 64 * 1024);
    let total = per_partition * partitions as u64;
    for i in 0..total {
        let partition = (i % partitions as u64) as i32;
        let key = format!("{tag}-{partition}-{}", i / partitions as u64);
        let at = (i as usize * 7919) % (values.len() - size);
        let mut record = BaseRecord::to(topic)
            .partition(partition)
            .key(key.as_bytes())
            .payload(&values[at..at + size])
            .timestamp(chrono::Utc::now().timestamp_millis())
            .headers(OwnedHeaders::new().insert(Header {
                key: "seed",
                value: Some("1"),
            }));
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(10));
                }
                Err((e, _)) => return Err(format!("seed {topic}: {e}")),
            }
        }
        producer.poll(Duration::ZERO);
    }
    producer
        .flush(Duration::from_secs(300))
        .map_err(|e| format!("seed {topic}: flush: {e}"))
}

/// `len` hex digits from a fixed xorshift stream.
fn hex_stream(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b"0123456789abcdef"[(x & 15) as usize]
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// A finished child process. Wall time is from just before spawn to exit. The peak RSS is
/// ru_maxrss from /usr/bin/time, or VmHWM polled every 20 ms when /usr/bin/time is missing.
/// CPU time (user + system, from /usr/bin/time) does not depend on the machine's other load
/// the way wall time does: on a shared 2-core box it is the steadier measure of efficiency.
struct Finished {
    success: bool,
    stdout: String,
    stderr: String,
    wall: Duration,
    peak_rss_kib: Option<u64>,
    cpu: Option<Duration>,
    started: Instant,
}

fn run_measured(program: &str, args: &[String], envs: &[(&str, String)]) -> BenchResult<Finished> {
    let rss_file = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let use_time = Path::new(TIME_BIN).exists();
    let mut cmd = if use_time {
        let mut c = Command::new(TIME_BIN);
        c.arg("-f")
            .arg("%M %U %S")
            .arg("-o")
            .arg(rss_file.path())
            .arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| format!("spawn {program}: {e}"))?;
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let poller = (!use_time).then(|| {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0u64;
            while !done.load(Ordering::Relaxed) {
                if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                    if let Some(kib) = s
                        .lines()
                        .find(|l| l.starts_with("VmHWM:"))
                        .and_then(|l| l.split_whitespace().nth(1))
                        .and_then(|n| n.parse::<u64>().ok())
                    {
                        peak = peak.max(kib);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("wait {program}: {e}"))?;
    let wall = started.elapsed();
    done.store(true, Ordering::Relaxed);
    // /usr/bin/time's last line: "<max RSS KiB> <user s> <system s>".
    let timed: Vec<f64> = std::fs::read_to_string(rss_file.path())
        .ok()
        .and_then(|s| s.lines().last().map(str::to_string))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let peak_rss_kib = match poller {
        Some(p) => p.join().ok().filter(|&k| k > 0),
        None => timed.first().map(|&k| k as u64),
    };
    let cpu = (timed.len() == 3).then(|| Duration::from_secs_f64(timed[1] + timed[2]));
    Ok(Finished {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        wall,
        peak_rss_kib,
        cpu,
        started,
    })
}

// ---------------------------------------------------------------------------------------------
// A mirrorslice flow with its own aliases, config file and state directory
// ---------------------------------------------------------------------------------------------

struct Flow {
    source: String,
    target: String,
    config: PathBuf,
    state: PathBuf,
    _dir: tempfile::TempDir,
}

impl Flow {
    /// `topics` is the flow's topic filter; `extra` more properties lines.
    fn new(s: &Settings, topics: Option<&str>, extra: &str) -> BenchResult<Flow> {
        let source = unique("bs");
        let target = unique("bt");
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let config = dir.path().join("mm2.properties");
        let topics = topics
            .map(str::to_string)
            .unwrap_or_else(|| format!(".*-{source}"));
        let body = format!(
            "clusters = {source}, {target}\n\
             {source}.bootstrap.servers = {a}\n\
             {target}.bootstrap.servers = {b}\n\
             {source}->{target}.enabled = true\n\
             {source}->{target}.topics = {topics}\n\
             {source}->{target}.use.defaults.from = source\n\
             {target}->{source}.emit.heartbeats.enabled = false\n\
             replication.factor = 1\n\
             offset-syncs.topic.replication.factor = 1\n\
             checkpoints.topic.replication.factor = 1\n\
             heartbeats.topic.replication.factor = 1\n\
             config.storage.replication.factor = 1\n\
             offset.storage.replication.factor = 1\n\
             status.storage.replication.factor = 1\n\
             {extra}\n",
            a = s.a,
            b = s.b,
        );
        std::fs::write(&config, body).map_err(|e| e.to_string())?;
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).map_err(|e| e.to_string())?;
        Ok(Flow {
            source,
            target,
            config,
            state,
            _dir: dir,
        })
    }

    fn name(&self) -> String {
        format!("{}->{}", self.source, self.target)
    }

    fn remote(&self, topic: &str) -> String {
        format!("{}.{topic}", self.source)
    }

    /// One slice; fails unless it exits 0 with `ok: true`.
    fn run(&self, max_duration: &str, log: &str) -> BenchResult<(Finished, Value)> {
        self.run_with(max_duration, log, &[])
    }

    /// [`Flow::run`] with more environment.
    fn run_with(
        &self,
        max_duration: &str,
        log: &str,
        env: &[(&str, String)],
    ) -> BenchResult<(Finished, Value)> {
        let args = vec![
            "run".to_string(),
            self.config.display().to_string(),
            "--flow".into(),
            self.name(),
            "--max-duration".into(),
            max_duration.into(),
            "--json".into(),
        ];
        let mut envs = vec![
            ("MIRRORSLICE_STATE_DIR", self.state.display().to_string()),
            ("MIRRORSLICE_LOG", log.to_string()),
            ("NO_COLOR", "1".to_string()),
        ];
        envs.extend(env.iter().cloned());
        let f = run_measured(&mirrorslice_bin(), &args, &envs)?;
        let report: Value = serde_json::from_str(&f.stdout).map_err(|e| {
            format!(
                "{}: report is not JSON ({e}): {}\nstderr: {}",
                self.name(),
                f.stdout,
                tail(&f.stderr, 20)
            )
        })?;
        if !f.success || report["ok"] != true {
            return Err(format!(
                "{}: slice failed\n{report:#}\nstderr: {}",
                self.name(),
                tail(&f.stderr, 20)
            ));
        }
        Ok((f, report))
    }

    fn append(&self, lines: &str) -> BenchResult<()> {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&self.config)
            .and_then(|mut f| f.write_all(lines.as_bytes()))
            .map_err(|e| format!("{}: {e}", self.config.display()))
    }

    /// Internal topics of this flow: (on the source cluster, on the target cluster).
    fn internal_topics(&self) -> (Vec<String>, Vec<String>) {
        let (s, t) = (&self.source, &self.target);
        (
            vec![format!("mm2-offset-syncs.{t}.internal")],
            vec![
                format!("mm2-configs.{s}.internal"),
                format!("mm2-offsets.{s}.internal"),
                format!("mm2-status.{s}.internal"),
            ],
        )
    }

    /// Deletes the position hints, forcing the offsets store's full-read fallback.
    fn delete_hints(&self) -> BenchResult<usize> {
        let dir = self.state.join("state");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.to_string_lossy().contains("offsets-hint") {
                std::fs::remove_file(&path).map_err(|e| e.to_string())?;
                n += 1;
            }
        }
        Ok(n)
    }
}

fn tail(s: &str, lines: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

// ---------------------------------------------------------------------------------------------
// 1. Throughput (and 3. peak RSS)
// ---------------------------------------------------------------------------------------------

struct ThroughputRow {
    label: String,
    records: u64,
    bytes: u64,
    /// The tool's own timer: the pipe's client creation → last ack, or the report's duration_ms.
    own: Duration,
    wall: Duration,
    rss_kib: Option<u64>,
    cpu: Option<Duration>,
}

impl ThroughputRow {
    fn mbps(&self, d: Duration) -> f64 {
        self.bytes as f64 / 1e6 / d.as_secs_f64()
    }
    fn rps(&self, d: Duration) -> f64 {
        self.records as f64 / d.as_secs_f64()
    }
    fn cpu_s_per_gb(&self) -> Option<f64> {
        Some(self.cpu?.as_secs_f64() / (self.bytes as f64 / 1e9))
    }
}

/// One set of client settings the throughput runs are repeated with.
struct SettingsSet {
    name: &'static str,
    consumer: Vec<(String, String)>,
    producer: Vec<(String, String)>,
}

async fn throughput(s: &Settings) -> BenchResult<()> {
    let topic = unique("benchtp-");
    create_topic(&s.a, &topic, s.partitions).await?;
    let t = Instant::now();
    let per_partition = s.records.div_ceil(s.partitions as u64);
    let records = per_partition * s.partitions as u64;
    produce(
        &s.a,
        &topic,
        s.partitions,
        per_partition,
        s.size,
        "key",
        "none",
    )?;
    eprintln!(
        "throughput: seeded {records} records of {} B into {topic} ({} partitions) in {:.1?}",
        s.size,
        s.partitions,
        t.elapsed()
    );
    let mut sets = vec![SettingsSet {
        name: "the task's defaults (PRODUCER_DEFAULTS, CONSUMER_DEFAULTS)",
        consumer: Vec::new(),
        producer: Vec::new(),
    }];
    if !s.consumer_extra.is_empty() || !s.producer_extra.is_empty() {
        sets.push(SettingsSet {
            name: "the task's defaults + MIRRORSLICE_BENCH_CONSUMER/PRODUCER",
            consumer: s.consumer_extra.clone(),
            producer: s.producer_extra.clone(),
        });
    }
    for set in &sets {
        throughput_set(s, &topic, records, set).await?;
    }
    delete_topics(&s.a, &[topic]).await;
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Runner {
    /// The baseline, one consumer queue.
    Pipe,
    /// Diagnostic: the pipe with one queue per partition, like the task.
    PipePartitionQueues,
    Mirrorslice {
        tasks: u32,
    },
}

async fn throughput_set(
    s: &Settings,
    topic: &str,
    records: u64,
    set: &SettingsSet,
) -> BenchResult<()> {
    // The pipe and one task alternate `reps` times, so drift of the shared 2-core machine or of
    // the brokers hits both alike; each run's copy is deleted right after it, so no run writes
    // into a fuller broker than another.
    let mut plan = Vec::new();
    for _ in 0..s.tp_reps {
        plan.extend([Runner::Pipe, Runner::Mirrorslice { tasks: 1 }]);
    }
    plan.extend([
        Runner::Mirrorslice { tasks: 8 },
        Runner::PipePartitionQueues,
        Runner::Pipe,
    ]);
    let rows = run_plan(s, topic, records, set, &plan).await?;
    print_throughput(s, records, set, &rows);
    Ok(())
}

fn joined(kv: &[(String, String)]) -> String {
    kv.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Copies `topic` (`records` records) from A to B once per entry of `plan`, in order, and
/// checks every copy is complete; each copy is deleted from B right after its run.
async fn run_plan(
    s: &Settings,
    topic: &str,
    records: u64,
    set: &SettingsSet,
    plan: &[Runner],
) -> BenchResult<Vec<(Runner, ThroughputRow)>> {
    let mut rows: Vec<(Runner, ThroughputRow)> = Vec::new();
    let (mut a_topics, mut b_topics) = (Vec::new(), Vec::new());
    let mut run_no: BTreeMap<String, usize> = BTreeMap::new();
    let mut numbered = |label: String| {
        let n = run_no.entry(label.clone()).or_default();
        *n += 1;
        format!("{label} #{n}")
    };
    for &runner in plan {
        let copy_topic;
        let row = match runner {
            Runner::Pipe | Runner::PipePartitionQueues => {
                let split = runner == Runner::PipePartitionQueues;
                let label = if split {
                    "pipe, per-partition queues (diagnostic)".to_string()
                } else {
                    numbered("bare rdkafka pipe".to_string())
                };
                let dest = unique("benchpipe-");
                create_topic(&s.b, &dest, s.partitions).await?;
                copy_topic = dest.clone();
                eprintln!("throughput: {label} → {dest}");
                let me = std::env::current_exe().map_err(|e| e.to_string())?;
                let args = vec![
                    "__pipe".to_string(),
                    s.a.clone(),
                    topic.to_string(),
                    s.b.clone(),
                    dest,
                    s.partitions.to_string(),
                ];
                let envs = [
                    ("MIRRORSLICE_BENCH_CONSUMER", joined(&set.consumer)),
                    ("MIRRORSLICE_BENCH_PRODUCER", joined(&set.producer)),
                    (
                        "MIRRORSLICE_BENCH_PIPE_PARTITION_QUEUES",
                        if split { "1" } else { "0" }.to_string(),
                    ),
                ];
                let f = run_measured(&me.display().to_string(), &args, &envs)?;
                if !f.success {
                    return Err(format!("pipe failed: {}", tail(&f.stderr, 20)));
                }
                let out: Value = serde_json::from_str(f.stdout.trim())
                    .map_err(|e| format!("pipe output ({e}): {}", f.stdout))?;
                ThroughputRow {
                    label,
                    records: out["records"].as_u64().unwrap_or(0),
                    bytes: out["bytes"].as_u64().unwrap_or(0),
                    own: Duration::from_millis(out["elapsed_ms"].as_u64().unwrap_or(0)),
                    wall: f.wall,
                    rss_kib: f.peak_rss_kib,
                    cpu: f.cpu,
                }
            }
            Runner::Mirrorslice { tasks } => {
                let flow = Flow::new(s, Some(&format!("^{topic}$")), "")?;
                let mut lines = format!("{}.tasks.max = {tasks}\n", flow.name());
                for (k, v) in &set.consumer {
                    lines += &format!("{}.consumer.{k} = {v}\n", flow.source);
                }
                for (k, v) in &set.producer {
                    lines += &format!("{}.producer.{k} = {v}\n", flow.target);
                }
                flow.append(&lines)?;
                copy_topic = flow.remote(topic);
                let (on_a, on_b) = flow.internal_topics();
                a_topics.extend(on_a);
                b_topics.extend(on_b);
                eprintln!(
                    "throughput: mirrorslice run, tasks.max={tasks}, flow {}",
                    flow.name()
                );
                let (f, report) = flow.run("20m", "warn")?;
                let slice = &report["slices"][0];
                if slice["caught_up"] != true {
                    return Err(format!("tasks.max={tasks}: not caught up\n{report:#}"));
                }
                let ntasks = slice["tasks"].as_array().map_or(0, Vec::len);
                ThroughputRow {
                    label: numbered(format!(
                        "mirrorslice run, tasks.max={tasks} ({ntasks} tasks)"
                    )),
                    records: slice["records"].as_u64().unwrap_or(0),
                    bytes: slice["bytes"].as_u64().unwrap_or(0),
                    own: Duration::from_millis(slice["duration_ms"].as_u64().unwrap_or(0)),
                    wall: f.wall,
                    rss_kib: f.peak_rss_kib,
                    cpu: f.cpu,
                }
            }
        };
        if row.records != records {
            return Err(format!(
                "{}: copied {} records, expected {records}",
                row.label, row.records
            ));
        }
        eprintln!(
            "  {} records, {:.1} MB in {:.2?} (wall {:.2?}), peak RSS {:?} KiB, CPU {:.2?}",
            row.records,
            row.bytes as f64 / 1e6,
            row.own,
            row.wall,
            row.rss_kib,
            row.cpu.unwrap_or_default()
        );
        delete_topics(&s.b, &[copy_topic]).await;
        rows.push((runner, row));
    }
    delete_topics(&s.a, &a_topics).await;
    delete_topics(&s.b, &b_topics).await;
    Ok(rows)
}

/// The throughput table of one settings set, and each `tasks.max`'s verdict against #14's
/// goals.
fn print_throughput(
    s: &Settings,
    records: u64,
    set: &SettingsSet,
    rows: &[(Runner, ThroughputRow)],
) {
    let pipes: Vec<&ThroughputRow> = rows
        .iter()
        .filter(|(r, _)| *r == Runner::Pipe)
        .map(|(_, row)| row)
        .collect();
    let base_own = median(&pipes.iter().map(|r| r.mbps(r.own)).collect::<Vec<_>>());
    let base_wall = median(&pipes.iter().map(|r| r.mbps(r.wall)).collect::<Vec<_>>());

    println!();
    println!(
        "== 1. Throughput: {records} records × {} B value, {} partitions, A→B; client settings: {} ==",
        s.size, s.partitions, set.name
    );
    if !set.consumer.is_empty() || !set.producer.is_empty() {
        println!(
            "   extra consumer settings: {}; extra producer settings: {}",
            joined(&set.consumer),
            joined(&set.producer)
        );
    }
    println!("   (MB = 10^6 bytes of key+value; \"own\" = pipe's timer / report's duration_ms; ratio = row ÷ median of the pipe runs;");
    println!("    CPU = user+system seconds of the process, ×pipe = CPU ÷ mean pipe CPU, lower is better)");
    let cpus: Vec<f64> = pipes
        .iter()
        .filter_map(|r| r.cpu.map(|c| c.as_secs_f64()))
        .collect();
    let base_cpu = median(&cpus);
    println!(
        "{:<42} {:>8} {:>7} {:>10} {:>6} {:>8} {:>10} {:>6} {:>7} {:>6} {:>10}",
        "run",
        "own s",
        "MB/s",
        "records/s",
        "ratio",
        "wall s",
        "records/s",
        "ratio",
        "CPU s",
        "×pipe",
        "peak RSS"
    );
    let rss = |r: &ThroughputRow| {
        r.rss_kib
            .map(|k| format!("{:.1} MiB", k as f64 / 1024.0))
            .unwrap_or_else(|| "?".into())
    };
    for (_, r) in rows {
        println!(
            "{:<42} {:>8.2} {:>7.1} {:>10.0} {:>6.2} {:>8.2} {:>10.0} {:>6.2} {:>7} {:>6} {:>10}",
            r.label,
            r.own.as_secs_f64(),
            r.mbps(r.own),
            r.rps(r.own),
            r.mbps(r.own) / base_own,
            r.wall.as_secs_f64(),
            r.rps(r.wall),
            r.mbps(r.wall) / base_wall,
            r.cpu
                .map(|c| format!("{:.2}", c.as_secs_f64()))
                .unwrap_or_else(|| "?".into()),
            r.cpu
                .map(|c| format!("{:.2}", c.as_secs_f64() / base_cpu))
                .unwrap_or_else(|| "?".into()),
            rss(r),
        );
    }
    println!();
    let mut task_counts: Vec<u32> = rows
        .iter()
        .filter_map(|(k, _)| match k {
            Runner::Mirrorslice { tasks } => Some(*tasks),
            _ => None,
        })
        .collect();
    task_counts.dedup();
    for tasks in task_counts {
        let runs: Vec<&ThroughputRow> = rows
            .iter()
            .filter(|(k, _)| *k == Runner::Mirrorslice { tasks })
            .map(|(_, r)| r)
            .collect();
        let ratio = median(
            &runs
                .iter()
                .map(|r| r.mbps(r.own) / base_own)
                .collect::<Vec<_>>(),
        );
        let ratio_wall = median(
            &runs
                .iter()
                .map(|r| r.mbps(r.wall) / base_wall)
                .collect::<Vec<_>>(),
        );
        let peak = runs.iter().filter_map(|r| r.rss_kib).max();
        let label = format!("tasks.max={tasks} ({} runs)", runs.len());
        println!(
            "   {label:<24} median throughput ratio {ratio:.2} (report) / {ratio_wall:.2} (wall) — target ≥ 0.90: {}",
            verdict(ratio.min(ratio_wall) >= 0.9)
        );
        println!(
            "   {label:<24} highest peak RSS {} — target ≤ 64 MiB: {}",
            peak.map(|k| format!("{:.1} MiB", k as f64 / 1024.0))
                .unwrap_or_else(|| "?".into()),
            peak.map(|k| verdict(k as f64 / 1024.0 <= 64.0))
                .unwrap_or("?")
        );
    }
    println!(
        "   peak RSS measured with {}; load average now {}",
        if Path::new(TIME_BIN).exists() {
            "/usr/bin/time (ru_maxrss)"
        } else {
            "VmHWM polling every 20 ms"
        },
        load()
    );
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "OK"
    } else {
        "MISS"
    }
}

/// Counts acknowledged and failed deliveries of the baseline pipe.
struct AckCounter {
    acked: AtomicU64,
    failed: AtomicU64,
}

impl ClientContext for AckCounter {}

impl ProducerContext for AckCounter {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.acked.fetch_add(1, Ordering::Relaxed),
            Err((e, _)) => {
                eprintln!("pipe: delivery failed: {e}");
                self.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

/// Produces `m` to the same partition of `dest`: key, value, headers, timestamp. Returns the
/// key+value bytes.
fn copy_one(
    producer: &BaseProducer<AckCounter>,
    dest: &str,
    m: &rdkafka::message::BorrowedMessage<'_>,
) -> BenchResult<u64> {
    let mut bytes = 0;
    let headers = m.headers().map(|hs| {
        let mut owned = OwnedHeaders::new_with_capacity(hs.count());
        for h in hs.iter() {
            owned = owned.insert(Header {
                key: h.key,
                value: h.value,
            });
        }
        owned
    });
    let mut record: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(dest).partition(m.partition());
    if let Some(k) = m.key() {
        record = record.key(k);
        bytes += k.len() as u64;
    }
    if let Some(v) = m.payload() {
        record = record.payload(v);
        bytes += v.len() as u64;
    }
    if let Some(h) = headers {
        record = record.headers(h);
    }
    if let Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) = m.timestamp() {
        if t >= 0 {
            record = record.timestamp(t);
        }
    }
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(bytes),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                producer.poll(Duration::from_millis(5));
            }
            Err((e, _)) => return Err(format!("produce: {e}")),
        }
    }
}

/// `__pipe SRC TOPIC DST DEST_TOPIC PARTITIONS`: the baseline, in its own process so its wall
/// time and peak RSS are comparable with `mirrorslice run`'s. Prints one JSON line.
fn pipe_main(args: &[String]) -> BenchResult<()> {
    let [src, topic, dst, dest, partitions] = args else {
        return Err("usage: __pipe SRC TOPIC DST DEST_TOPIC PARTITIONS".into());
    };
    let partitions: i32 = partitions.parse().map_err(|_| "bad partition count")?;
    let started = Instant::now();
    let mut cc = ClientConfig::new();
    cc.set("bootstrap.servers", src)
        .set("group.id", unique("benchpipe"));
    for (k, v) in PIPE_CONSUMER {
        cc.set(*k, *v);
    }
    let split = std::env::var("MIRRORSLICE_BENCH_PIPE_PARTITION_QUEUES").as_deref() == Ok("1");
    let prefetch_kb = if split {
        (PIPE_PREFETCH_BUDGET_KB / partitions.max(1) as usize).max(PIPE_PREFETCH_MIN_KB)
    } else {
        PIPE_PREFETCH_BUDGET_KB
    };
    cc.set("queued.max.messages.kbytes", prefetch_kb.to_string());
    let prefetch_records = if split {
        (PIPE_PREFETCH_RECORDS / partitions.max(1) as usize).max(PIPE_PREFETCH_MIN_RECORDS)
    } else {
        PIPE_PREFETCH_RECORDS
    };
    cc.set("queued.min.messages", prefetch_records.to_string());
    for (k, v) in pairs("MIRRORSLICE_BENCH_CONSUMER", "") {
        cc.set(k, v);
    }
    let consumer: BaseConsumer = cc.create().map_err(|e| format!("consumer: {e}"))?;
    let mut pc = ClientConfig::new();
    pc.set("bootstrap.servers", dst);
    for (k, v) in PIPE_PRODUCER {
        pc.set(*k, *v);
    }
    for (k, v) in pairs("MIRRORSLICE_BENCH_PRODUCER", "") {
        pc.set(k, v);
    }
    let producer: BaseProducer<AckCounter> = pc
        .create_with_context(AckCounter {
            acked: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
        .map_err(|e| format!("producer: {e}"))?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .map_err(|e| e.to_string())?;
    }
    consumer.assign(&tpl).map_err(|e| format!("assign: {e}"))?;

    // By default one loop over the consumer's queue, as a bare pipe would. With
    // MIRRORSLICE_BENCH_PIPE_PARTITION_QUEUES=1, one queue per partition polled in bursts, as
    // `mirrorslice`'s task does (this changes what `queued.max.messages.kbytes` bounds: the
    // whole consumer, or each partition).
    let consumer = Arc::new(consumer);
    let queues: Vec<_> = if split {
        (0..partitions)
            .map(|p| {
                consumer
                    .split_partition_queue(topic, p)
                    .ok_or_else(|| format!("no queue for partition {p}"))
            })
            .collect::<BenchResult<_>>()?
    } else {
        Vec::new()
    };
    let mut at_end = vec![false; partitions as usize];
    let (mut sent, mut bytes) = (0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs(1800);
    while !at_end.iter().all(|e| *e) {
        if Instant::now() > deadline {
            return Err("pipe did not reach the end within 30 min".into());
        }
        if split {
            let mut progressed = false;
            for (p, q) in queues.iter().enumerate() {
                for _ in 0..512 {
                    match q.poll(Duration::ZERO) {
                        None => break,
                        Some(Ok(m)) => {
                            progressed = true;
                            at_end[p] = false;
                            bytes += copy_one(&producer, dest, &m)?;
                            sent += 1;
                        }
                        Some(Err(KafkaError::PartitionEOF(_))) => {
                            at_end[p] = true;
                            break;
                        }
                        Some(Err(e)) => eprintln!("pipe: consumer error: {e}"),
                    }
                }
            }
            let wait = if progressed {
                Duration::ZERO
            } else {
                Duration::from_millis(5)
            };
            if let Some(Err(e)) = consumer.poll(wait) {
                eprintln!("pipe: consumer error: {e}");
            }
        } else {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => {
                    at_end[m.partition() as usize] = false;
                    bytes += copy_one(&producer, dest, &m)?;
                    sent += 1;
                }
                Some(Err(KafkaError::PartitionEOF(p))) => at_end[p as usize] = true,
                Some(Err(e)) => eprintln!("pipe: consumer error: {e}"),
                None => {}
            }
        }
        producer.poll(Duration::ZERO);
    }
    producer
        .flush(Duration::from_secs(300))
        .map_err(|e| format!("flush: {e}"))?;
    let ctx = producer.context();
    let (acked, failed) = (
        ctx.acked.load(Ordering::Relaxed),
        ctx.failed.load(Ordering::Relaxed),
    );
    if acked != sent || failed != 0 {
        return Err(format!(
            "sent {sent}, acknowledged {acked}, failed {failed}"
        ));
    }
    let elapsed = started.elapsed();
    println!(
        "{}",
        json!({"records": acked, "bytes": bytes, "elapsed_ms": elapsed.as_millis() as u64})
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 2. Start-up after 1 and after PRIOR prior slices
// ---------------------------------------------------------------------------------------------

struct History {
    flow: Flow,
    topic: String,
    real: usize,
    simulated: usize,
}

/// One slice whose copy start we time: `(first record on B after process start, slice
/// duration_ms, wall, phase log)`.
struct Startup {
    first_record: Option<Duration>,
    duration: Duration,
    wall: Duration,
    records: u64,
    phases: Vec<(String, u64)>,
    load: String,
}

/// A flow with `prior` slices of history and PRIOR records per partition, stored offset
/// PRIOR-1 everywhere (see the module comment).
async fn history(s: &Settings, prior: usize, budget: Duration) -> BenchResult<History> {
    let flow = Flow::new(s, None, "")?;
    let topic = format!("startup-{}", flow.source);
    create_topic(&s.a, &topic, s.partitions).await?;
    let total = s.prior as u64; // records per partition, equal for every flow
    let started = Instant::now();
    // Slice 1 is always real: it creates the remote topic and writes the connector's configs.
    let first_batch = if prior == 1 { total } else { 1 };
    produce(&s.a, &topic, s.partitions, first_batch, s.size, "h", "none")?;
    let (_, mut last_report) = flow.run("2m", "warn")?;
    let mut real = 1;
    let mut per_partition = first_batch;
    while real < prior && started.elapsed() < budget {
        produce(&s.a, &topic, s.partitions, 1, s.size, "h", "none")?;
        per_partition += 1;
        last_report = flow.run("2m", "warn")?.1;
        real += 1;
        if real % 50 == 0 {
            eprintln!(
                "startup: {} — {real} real slices in {:.0?}",
                flow.name(),
                started.elapsed()
            );
        }
    }
    let simulated = prior - real;
    if simulated > 0 {
        produce(
            &s.a,
            &topic,
            s.partitions,
            total - per_partition,
            s.size,
            "h",
            "none",
        )?;
        simulate(s, &flow, &topic, simulated, &last_report).await?;
    } else if per_partition < total {
        // Real history only: the remaining records are copied by one more real slice.
        produce(
            &s.a,
            &topic,
            s.partitions,
            total - per_partition,
            s.size,
            "h",
            "none",
        )?;
        flow.run("2m", "warn")?;
        real += 1;
    }
    eprintln!(
        "startup: {} — history of {} slices ({real} real, {simulated} simulated) in {:.1?}",
        flow.name(),
        real + simulated,
        started.elapsed()
    );
    Ok(History {
        flow,
        topic,
        real,
        simulated,
    })
}

/// Writes `slices` slices' worth of history as `mirrorslice run` writes it, committing offsets
/// that walk from the currently stored ones up to the last record of each partition.
async fn simulate(
    s: &Settings,
    flow: &Flow,
    topic: &str,
    slices: usize,
    last_report: &Value,
) -> BenchResult<()> {
    let mut client: Props = BTreeMap::new();
    client.insert("bootstrap.servers".into(), s.b.clone());
    let offsets_topic = format!("mm2-offsets.{}.internal", flow.source);
    let status_topic = format!("mm2-status.{}.internal", flow.source);
    let count = |t: String| {
        let client = client.clone();
        async move {
            mirrorslice::kafka::internal_log::partition_count(&client, &t, Duration::from_secs(10))
                .await
                .map_err(|e| format!("{t}: {e}"))
        }
    };
    let offsets_partitions = count(offsets_topic.clone()).await?;
    let status_partitions = count(status_topic.clone()).await?;
    let state = Arc::new(LocalStateStore::new(&flow.state));
    // Task 0 owns every partition with tasks.max=1; same hint key as src/slice.rs.
    let mut store = OffsetStore::new(
        offsets_topic,
        offsets_partitions,
        client.clone(),
        client.clone(),
        state,
        format!("{}/{CONNECTOR}/0/offsets-hint", flow.name()),
    );
    let status = StatusStore::new(status_topic, status_partitions, client.clone(), client);
    let keys: Vec<PartitionKey> = (0..s.partitions)
        .map(|p| PartitionKey::source(&flow.source, topic, p))
        .collect();
    let loaded = store
        .load(&keys.iter().map(|k| k.0.clone()).collect::<Vec<_>>())
        .await
        .map_err(|e| format!("load: {e}"))?;
    let mut next: Vec<i64> = keys
        .iter()
        .map(|k| loaded.offsets.get(k).copied().unwrap_or(-1))
        .collect();
    let worker = flow.name();
    let status_of = |state| Status {
        state,
        trace: None,
        worker_id: worker.clone(),
        generation: 0,
    };
    let report = last_report["slices"][0]["tasks"][0].clone();
    let t = Instant::now();
    for i in 0..slices {
        status
            .put_connector(CONNECTOR, &status_of(State::Running))
            .await
            .map_err(|e| e.to_string())?;
        status
            .put_task(CONNECTOR, 0, &status_of(State::Running))
            .await
            .map_err(|e| e.to_string())?;
        let commit: BTreeMap<PartitionKey, i64> = keys
            .iter()
            .zip(next.iter_mut())
            .map(|(k, o)| {
                *o += 1;
                (k.clone(), *o)
            })
            .collect();
        store.commit(&commit).await.map_err(|e| e.to_string())?;
        status
            .put_all(&[
                StatusUpdate::Task {
                    connector: CONNECTOR.into(),
                    task: 0,
                    status: status_of(State::Unassigned),
                },
                StatusUpdate::SliceReport {
                    connector: CONNECTOR.into(),
                    task: 0,
                    report: report.clone(),
                },
            ])
            .await
            .map_err(|e| e.to_string())?;
        status
            .put_connector(CONNECTOR, &status_of(State::Unassigned))
            .await
            .map_err(|e| e.to_string())?;
        if (i + 1) % 200 == 0 {
            eprintln!(
                "startup: {} — {} simulated slices in {:.1?}",
                flow.name(),
                i + 1,
                t.elapsed()
            );
        }
    }
    // The last real slice can end one record short: the test brokers serve (and list) a record
    // a moment after acknowledging it, and a slice is caught up with what the broker shows.
    // Such a record is the next slice's; here, the simulated history ends with it copied.
    let expected = s.prior as i64 - 1;
    if next.iter().any(|&o| o < expected) {
        eprintln!("startup: simulated history ends at {next:?}; one more commit to {expected}");
        let commit: BTreeMap<PartitionKey, i64> =
            keys.iter().map(|k| (k.clone(), expected)).collect();
        store.commit(&commit).await.map_err(|e| e.to_string())?;
    } else if next.iter().any(|&o| o != expected) {
        return Err(format!(
            "simulated history ends at {next:?}, beyond {expected}"
        ));
    }
    Ok(())
}

/// `elapsed_ms=` phase lines and the offsets-load summary from a debug log.
fn parse_log(stderr: &str) -> (Vec<(String, u64)>, String) {
    let mut phases = Vec::new();
    let mut load = String::new();
    for raw in stderr.lines() {
        let line = strip_ansi(raw);
        if let Some(at) = line.find(" elapsed_ms=") {
            let ms: u64 = line[at + 12..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let what = line[..at].rsplit(": ").next().unwrap_or("").trim();
            phases.push((what.to_string(), ms));
        }
        if line.contains("full_read=") {
            let field = |name: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .unwrap_or("?")
                    .to_string()
            };
            load = format!(
                "full_read={} records_read={}",
                field("full_read="),
                field("records_read=")
            );
        }
    }
    (phases, load)
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One measured slice. In `Data` mode one record per partition is produced first and a
/// consumer on B times the first of them from the moment the process is spawned.
fn measure_slice(s: &Settings, h: &History, mode: Mode) -> BenchResult<Startup> {
    let tag = unique("probe");
    let watcher = if mode == Mode::Data {
        produce(&s.a, &h.topic, s.partitions, 1, s.size, &tag, "none")?;
        Some(Watcher::start(
            &s.b,
            &h.flow.remote(&h.topic),
            s.partitions,
            &tag,
        )?)
    } else {
        None
    };
    let (f, report) = h.flow.run("2m", "warn,mirrorslice=debug")?;
    let first_record = match watcher {
        Some(w) => Some(
            w.finish()?
                .ok_or_else(|| format!("{}: probe record never seen on B", h.flow.name()))?
                .saturating_duration_since(f.started),
        ),
        None => None,
    };
    let slice = &report["slices"][0];
    let records = slice["records"].as_u64().unwrap_or(0);
    let expected = if mode == Mode::Data {
        s.partitions as u64
    } else {
        0
    };
    if records != expected {
        return Err(format!(
            "{}: copied {records} records, expected {expected}\n{report:#}",
            h.flow.name()
        ));
    }
    let (phases, load) = parse_log(&f.stderr);
    Ok(Startup {
        first_record,
        duration: Duration::from_millis(slice["duration_ms"].as_u64().unwrap_or(0)),
        wall: f.wall,
        records,
        phases,
        load,
    })
}

/// A consumer on the remote topic, positioned at its end before the slice starts, polling in a
/// thread until a record whose key starts with the probe tag arrives.
struct Watcher {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<BenchResult<Option<Instant>>>,
}

impl Watcher {
    fn start(bootstrap: &str, topic: &str, partitions: i32, tag: &str) -> BenchResult<Watcher> {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", unique("benchwatch"))
            .set("enable.auto.commit", "false")
            .set("fetch.wait.max.ms", "5")
            .set("fetch.error.backoff.ms", "5")
            .create()
            .map_err(|e| format!("watcher: {e}"))?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition_offset(topic, p, Offset::End)
                .map_err(|e| e.to_string())?;
        }
        consumer.assign(&tpl).map_err(|e| format!("watcher: {e}"))?;
        // Resolve the End positions (a ListOffsets round trip) and open the fetch sessions
        // before the slice starts. tansu's ListOffsets may answer short of the real end, so
        // older records can still arrive: they are told apart by the probe tag in the key.
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            let _ = consumer.poll(Duration::from_millis(50));
            let resolved = consumer.position().map(|tpl| {
                tpl.elements()
                    .iter()
                    .all(|e| matches!(e.offset(), Offset::Offset(_)))
            });
            if resolved == Ok(true) {
                break;
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let tag = tag.as_bytes().to_vec();
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match consumer.poll(Duration::from_millis(5)) {
                    Some(Ok(m)) if m.key().is_some_and(|k| k.starts_with(&tag)) => {
                        return Ok(Some(Instant::now()))
                    }
                    Some(Err(e)) => eprintln!("watcher: {e}"),
                    _ => {}
                }
            }
            Ok(None)
        });
        Ok(Watcher { stop, thread })
    }

    /// When the first probe record was seen; waits up to 10 s after the slice exited.
    fn finish(self) -> BenchResult<Option<Instant>> {
        let until = Instant::now() + Duration::from_secs(10);
        while !self.thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| "watcher panicked".to_string())?
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// One new record per partition: time to the first copied record.
    Data,
    /// Nothing new: the whole slice is start-up and shutdown.
    Idle,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn startup(s: &Settings) -> BenchResult<()> {
    // The real-slice budget goes to the long history; the 1-slice flow needs one slice.
    let budget = Duration::from_secs(s.history_secs);
    let t = Instant::now();
    let one = history(s, 1, budget).await?;
    // One idle slice of the short flow, to see what a slice costs and so what the budget buys.
    let (probe_idle, _) = one.flow.run("2m", "warn")?;
    eprintln!(
        "startup: one idle slice takes {:.2?} (wall); {} real slices would take ~{:.0?}",
        probe_idle.wall,
        s.prior,
        probe_idle.wall * s.prior as u32
    );
    let many = history(s, s.prior, budget).await?;
    eprintln!("startup: histories ready in {:.1?}", t.elapsed());
    let histories = [&one, &many];

    // results[(hint, mode, flow index)] = runs
    let mut results: BTreeMap<(bool, u8, usize), Vec<Startup>> = BTreeMap::new();
    for hint in [true, false] {
        for mode in [Mode::Data, Mode::Idle] {
            for _ in 0..s.reps {
                // Interleave the flows so drift on the shared brokers hits both alike.
                for (i, h) in histories.iter().enumerate() {
                    if !hint {
                        h.flow.delete_hints()?;
                    }
                    let run = measure_slice(s, h, mode)?;
                    results.entry((hint, mode as u8, i)).or_default().push(run);
                }
            }
        }
    }

    println!();
    println!(
        "== 2. Start-up: a flow with 1 prior slice vs {} prior slices ({} real + {} simulated), \
         {} partitions, tasks.max=1; median of {} runs ==",
        many.real + many.simulated,
        many.real,
        many.simulated,
        s.partitions,
        s.reps
    );
    println!("   first record = process spawn → first new record readable on B (data slice, one new record per partition)");
    println!("   idle slice   = report duration_ms of a slice with nothing to copy (wall = process time)");
    println!(
        "{:<12} {:<14} {:>10} {:>10} {:>8} {:>14}  offsets load (last run)",
        "position", "measure", "1 prior", "N prior", "ratio", "target ≤ 1.2"
    );
    let names = ["1 prior", "N prior"];
    for hint in [true, false] {
        let hint_label = if hint { "hint" } else { "no hint" };
        for (mode, label, pick) in [
            (Mode::Data, "first record", 0u8),
            (Mode::Data, "data wall", 1),
            (Mode::Idle, "idle slice", 2),
            (Mode::Idle, "idle wall", 1),
        ] {
            let figure = |i: usize| -> f64 {
                let runs = &results[&(hint, mode as u8, i)];
                median(
                    &runs
                        .iter()
                        .map(|r| match pick {
                            0 => r.first_record.map(ms).unwrap_or(f64::NAN),
                            1 => ms(r.wall),
                            _ => ms(r.duration),
                        })
                        .collect::<Vec<_>>(),
                )
            };
            let (a, b) = (figure(0), figure(1));
            let ratio = b / a;
            let loads: Vec<String> = (0..2)
                .map(|i| {
                    let runs = &results[&(hint, mode as u8, i)];
                    format!(
                        "{}: {}",
                        names[i],
                        runs.last().map(|r| r.load.as_str()).unwrap_or("")
                    )
                })
                .collect();
            println!(
                "{:<12} {:<14} {:>8.0}ms {:>8.0}ms {:>8.2} {:>14}  {}",
                hint_label,
                label,
                a,
                b,
                ratio,
                if hint && pick != 1 {
                    verdict(ratio <= 1.2)
                } else {
                    ""
                },
                if pick == 1 {
                    String::new()
                } else {
                    loads.join("; ")
                }
            );
        }
    }

    // Where the time goes: the slice's own phase log (elapsed since the slice's t0), median
    // per phase over the runs.
    println!();
    println!("   phase timeline (ms since the slice's t0, medians; from MIRRORSLICE_LOG=mirrorslice=debug):");
    for hint in [true, false] {
        for mode in [Mode::Data, Mode::Idle] {
            for (i, name) in names.iter().enumerate() {
                let runs = &results[&(hint, mode as u8, i)];
                let mut by_phase: Vec<(String, Vec<f64>)> = Vec::new();
                for r in runs {
                    for (what, at) in &r.phases {
                        match by_phase.iter_mut().find(|(w, _)| w == what) {
                            Some((_, v)) => v.push(*at as f64),
                            None => by_phase.push((what.clone(), vec![*at as f64])),
                        }
                    }
                }
                let mut line: Vec<String> = by_phase
                    .iter()
                    .map(|(w, v)| format!("{w} {:.0}", median(v)))
                    .collect();
                let durations: Vec<f64> = runs.iter().map(|r| ms(r.duration)).collect();
                line.push(format!("slice end (duration_ms) {:.0}", median(&durations)));
                println!(
                    "   {:<8} {:<5} {:<8} {}",
                    if hint { "hint" } else { "no hint" },
                    if mode == Mode::Data { "data" } else { "idle" },
                    name,
                    line.join(" | ")
                );
            }
        }
    }
    println!("   load average after the start-up runs: {}", load());
    for h in histories {
        let (mut on_a, mut on_b) = h.flow.internal_topics();
        on_a.push(h.topic.clone());
        on_b.push(h.flow.remote(&h.topic));
        delete_topics(&s.a, &on_a).await;
        delete_topics(&s.b, &on_b).await;
    }
    let total_records: u64 = results.values().flatten().map(|r| r.records).sum();
    eprintln!("startup: measured slices copied {total_records} records in all");
    Ok(())
}

/// The 1-minute load average: other work on the machine skews every figure (2 cores).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

async fn bench_main() -> BenchResult<()> {
    let s = settings();
    stack_up()?;
    let revision = Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "mirrorslice benchmarks (issue #3): revision {revision}, {} CPUs, load average {} at start; binary {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load(),
        mirrorslice_bin()
    );
    let only = s.only.as_deref();
    if only.is_none() || only == Some("throughput") {
        throughput(&s).await?;
    }
    if only.is_none() || only == Some("startup") {
        startup(&s).await?;
    }
    if only == Some("matrix") {
        matrix::matrix(&s).await?;
    }
    if only.is_none() || only == Some("secured") {
        secured::secured(&s).await?;
    }
    Ok(())
}
