//! Interop with the real Java MirrorMaker 2 (Apache Kafka's `connect-mirror`, the version of
//! the brokers, run in dedicated mode by `stack.sh mm2-exec`) on the same `mm2.properties`:
//! either can take over a flow from the other, and each reads what the other wrote. These
//! run on Apache Kafka only (the stack's `MIRRORSLICE_BROKER=kafka` run): a take-over happens
//! on the clusters our users run, and Java's Connect worker leans on group and offset APIs
//! where tansu is known to differ. What differs by design: `docs/java-mm2-interop.md`.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::faults::PrivateServer;
use common::java_mm2::{java_topology, java_translate_offsets, JavaMirrorMaker};
use common::{consume_all, create_topic, keyed_records, partition_count, produce, stack, unique};
use mirrorslice::kafka::admin_ext::alter_consumer_group_offsets;
use mirrorslice::wire::checkpoint::Checkpoint;
use mirrorslice::wire::heartbeat::Heartbeat;
use mirrorslice::wire::offset_sync::OffsetSync;
use mirrorslice::wire::{connect_config, connect_offsets, connect_status};
use rdkafka::admin::AdminClient;
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;
use serde_json::Value;

const PARTITIONS: i32 = 3;

/// A flow `src->tgt` from cluster A to B with aliases of its own, in one `mm2.properties` that
/// both implementations run on.
struct Flow {
    /// Cluster A's bootstrap servers (the stack's, or a test's own).
    a: String,
    src: String,
    tgt: String,
    config: PathBuf,
    state: tempfile::TempDir,
    dir: tempfile::TempDir,
}

impl Flow {
    /// A flow from the stack's cluster A.
    fn new() -> Flow {
        Flow::from_cluster(&stack().a)
    }

    /// A flow from the cluster at `a` to the stack's B.
    fn from_cluster(a: &str) -> Flow {
        let src = unique("jsrc").replace('-', "");
        let tgt = unique("jtgt").replace('-', "");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mm2.properties");
        // Offsets flush every 10 s on the Java side, so a kill leaves an uncommitted tail;
        // checkpoints every second on both sides; groups scoped to this flow (A is shared).
        let body = common::flow_properties_between(
            &src,
            a,
            &tgt,
            &stack().b,
            &format!(
                "{src}->{tgt}.groups = .*-{src}\n\
                 {tgt}.offset.flush.interval.ms = 10000\n\
                 emit.checkpoints.interval.seconds = 1\n\
                 refresh.groups.interval.seconds = 1\n"
            ),
        );
        std::fs::write(&config, body).unwrap();
        Flow {
            a: a.to_string(),
            src,
            tgt,
            config,
            state: tempfile::tempdir().unwrap(),
            dir,
        }
    }

    /// The flow's main topic on A (3 partitions).
    fn topic(&self) -> String {
        format!("orders-{}", self.src)
    }

    /// A second topic on A (1 partition) for the test that needs one.
    fn other_topic(&self) -> String {
        format!("audit-{}", self.src)
    }

    /// The remote copy on B of `topic`.
    fn remote_of(&self, topic: &str) -> String {
        format!("{}.{topic}", self.src)
    }

    fn remote(&self) -> String {
        self.remote_of(&self.topic())
    }

    fn group(&self) -> String {
        format!("app-{}", self.src)
    }

    fn start_java(&self) -> JavaMirrorMaker {
        JavaMirrorMaker::start(&self.config, &self.tgt, self.dir.path().join("mm2.log"))
    }

    fn mirrorslice(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(common::mirrorslice_bin())
            .args(args)
            .env("MIRRORSLICE_STATE_DIR", self.state.path())
            .env("MIRRORSLICE_LOG", "warn")
            .output()
            .expect("run mirrorslice");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        println!("$ mirrorslice {}\n{stdout}{stderr}", args.join(" "));
        (out.status.code().unwrap_or(-1), stdout, stderr)
    }

    /// One `mirrorslice run` slice of `flow` (`src->tgt` or the reverse): exit code and the
    /// whole JSON output.
    fn try_slice(&self, flow: &str) -> (i32, Value) {
        let config = self.config.to_str().unwrap();
        let (code, stdout, _) = self.mirrorslice(&[
            "run",
            config,
            "--flow",
            flow,
            "--max-duration",
            "60s",
            "--json",
        ]);
        (code, serde_json::from_str(&stdout).expect("JSON output"))
    }

    /// [`Flow::try_slice`] that must succeed; its report.
    fn run_slice(&self, flow: &str) -> Value {
        let (code, out) = self.try_slice(flow);
        assert_eq!(code, 0, "slice of {flow} failed: {out:#}");
        out["slices"][0].clone()
    }

    /// Checks that a slice's output is the refusal to run beside Java's workers in the flow's
    /// Connect group (exit 1, no report, the group and cluster named); the error.
    fn assert_refused_beside_java(&self, code: i32, out: &Value) -> String {
        let error = out["errors"][0]["error"].as_str().unwrap_or_default();
        let group = format!("Connect group \"{}-mm2\" on cluster {}", self.src, self.tgt);
        assert!(error.contains(&group), "not refused beside Java: {out:#}");
        assert_eq!(code, 1, "{out:#}");
        assert!(out["slices"].as_array().unwrap().is_empty(), "{out:#}");
        error.to_string()
    }

    fn forward(&self) -> String {
        format!("{}->{}", self.src, self.tgt)
    }

    /// `mirrorslice translate-offsets --json` for the flow's group.
    fn translate_offsets(&self) -> BTreeMap<(String, i32), i64> {
        let config = self.config.to_str().unwrap();
        let flow = self.forward();
        let group = self.group();
        let (code, stdout, stderr) = self.mirrorslice(&[
            "translate-offsets",
            config,
            "--flow",
            &flow,
            "--group",
            &group,
            "--json",
        ]);
        assert_eq!(code, 0, "translate-offsets: {stderr}");
        let got: Value = serde_json::from_str(&stdout).unwrap();
        got["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let topic = o["topic"].as_str().unwrap().to_string();
                let partition = o["partition"].as_i64().unwrap() as i32;
                ((topic, partition), o["offset"].as_i64().unwrap())
            })
            .collect()
    }

    /// Commits the flow's group on A at `offsets` (per partition of the main topic).
    async fn commit_group(&self, offsets: [i64; PARTITIONS as usize]) {
        let topic = self.topic();
        let offsets: Vec<_> = (0..PARTITIONS)
            .map(|p| (topic.as_str(), p, offsets[p as usize]))
            .collect();
        self.commit_group_at(&offsets).await;
    }

    /// Commits the flow's group on A at `(topic, partition, offset)`.
    async fn commit_group_at(&self, offsets: &[(&str, i32, i64)]) {
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", &self.a)
            .create()
            .unwrap();
        let offsets: Vec<_> = offsets
            .iter()
            .map(|(t, p, o)| (t.to_string(), *p, *o, String::new()))
            .collect();
        let results =
            alter_consumer_group_offsets(&admin, &self.group(), &offsets, Duration::from_secs(10))
                .await
                .expect("commit on A");
        assert!(results.iter().all(|r| r.1.is_ok()), "{results:?}");
    }

    /// The next upstream offset to copy per partition, as last committed in the Connect offsets
    /// topic by either side (MM2 stores the last copied offset; a task resumes one past it).
    async fn committed(&self) -> BTreeMap<i32, i64> {
        self.committed_of(&self.topic()).await
    }

    /// [`Flow::committed`] for `topic`.
    async fn committed_of(&self, topic: &str) -> BTreeMap<i32, i64> {
        let offsets_topic = format!("mm2-offsets.{}.internal", self.src);
        if partition_count(&stack().b, &offsets_topic).is_none() {
            return BTreeMap::new();
        }
        common::committed_history(&stack().b, &self.src, topic)
            .await
            .into_iter()
            .map(|(p, history)| (p, history.last().unwrap() + 1))
            .collect()
    }

    /// The remote topic's high watermark per partition.
    async fn remote_ends(&self) -> BTreeMap<i32, i64> {
        let mut ends = BTreeMap::new();
        for r in consume_all(&stack().b, &self.remote(), PARTITIONS).await {
            ends.insert(r.partition, r.offset + 1);
        }
        ends
    }
}

fn sum(map: &BTreeMap<i32, i64>) -> i64 {
    map.values().sum()
}

/// How many records of each of the flow's internal topics (both clusters) mirrorslice's
/// decoders read; panics listing every record one of them refuses. Java's own records are
/// among them once Java has run, ours once we have. Our slice reports in the status topic are
/// skipped: Java discards keys it does not know, and so do we here.
async fn decode_internal_topics(flow: &Flow) -> BTreeMap<String, usize> {
    type Decode = fn(&common::ConsumedRecord) -> Result<(), String>;
    fn key_str(r: &common::ConsumedRecord) -> &str {
        std::str::from_utf8(r.key.as_deref().unwrap_or_default()).unwrap_or("<not UTF-8>")
    }
    fn checked<T, E: std::fmt::Display>(decoded: Result<T, E>) -> Result<(), String> {
        decoded.map(drop).map_err(|e| e.to_string())
    }
    let config: Decode = |r| {
        checked(connect_config::decode_record(
            key_str(r),
            r.value.as_deref(),
        ))
    };
    let status: Decode = |r| {
        let key = key_str(r);
        if key.starts_with(mirrorslice::connect::status_store::SLICE_REPORT_PREFIX) {
            return Ok(());
        }
        checked(connect_status::decode_record(key, r.value.as_deref()))
    };
    let offsets: Decode = |r| {
        checked(connect_offsets::decode_key(
            r.key.as_deref().unwrap_or_default(),
        ))?;
        checked(connect_offsets::decode_value(r.value.as_deref()))
    };
    let checkpoint: Decode = |r| {
        checked(Checkpoint::decode_record(
            r.key.as_deref(),
            r.value.as_deref(),
        ))
    };
    let heartbeat: Decode = |r| {
        checked(Heartbeat::decode_record(
            r.key.as_deref(),
            r.value.as_deref(),
        ))
    };
    let sync: Decode = |r| {
        checked(OffsetSync::decode_record(
            r.key.as_deref(),
            r.value.as_deref(),
        ))
    };
    let (a, b, src) = (&flow.a, &stack().b, &flow.src);
    let topics: [(&str, String, Decode); 6] = [
        (b, format!("mm2-configs.{src}.internal"), config),
        (b, format!("mm2-status.{src}.internal"), status),
        (b, format!("mm2-offsets.{src}.internal"), offsets),
        (b, format!("{src}.checkpoints.internal"), checkpoint),
        (b, "heartbeats".to_string(), heartbeat),
        (a, format!("mm2-offset-syncs.{}.internal", flow.tgt), sync),
    ];
    let mut counts = BTreeMap::new();
    let mut refused = Vec::new();
    for (bootstrap, topic, decode) in topics {
        let partitions = partition_count(bootstrap, &topic)
            .unwrap_or_else(|| panic!("no {topic} on {bootstrap}"));
        let records = consume_all(bootstrap, &topic, partitions).await;
        for r in &records {
            if let Err(e) = decode(r) {
                refused.push(format!("{topic} {}@{}: {e}", r.partition, r.offset));
            }
        }
        counts.insert(topic, records.len());
    }
    assert!(
        refused.is_empty(),
        "records refused:\n{}",
        refused.join("\n")
    );
    counts
}

/// How many slice reports (records only we write) the flow's status topic holds.
async fn slice_reports(flow: &Flow) -> usize {
    let topic = format!("mm2-status.{}.internal", flow.src);
    let partitions = partition_count(&stack().b, &topic).expect("status topic");
    consume_all(&stack().b, &topic, partitions)
        .await
        .iter()
        .filter(|r| {
            r.key.as_deref().is_some_and(|k| {
                k.starts_with(mirrorslice::connect::status_store::SLICE_REPORT_PREFIX.as_bytes())
            })
        })
        .count()
}

/// The latest checkpoint of the flow's group per remote topic and partition.
async fn latest_checkpoints(flow: &Flow) -> BTreeMap<(String, i32), Checkpoint> {
    let topic = format!("{}.checkpoints.internal", flow.src);
    let mut latest = BTreeMap::new();
    if partition_count(&stack().b, &topic).is_none() {
        return latest;
    }
    for r in consume_all(&stack().b, &topic, 1).await {
        let cp = Checkpoint::decode_record(r.key.as_deref(), r.value.as_deref()).unwrap();
        if cp.consumer_group_id == flow.group() {
            latest.insert((cp.topic.clone(), cp.partition), cp);
        }
    }
    latest
}

/// Polls `check` while Java runs; panics with Java's log if it exits or `limit` passes.
async fn wait_for<F, Fut>(java: &mut JavaMirrorMaker, what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        java.assert_running();
        if check().await {
            println!("{what}: after {:.1?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < limit,
            "{what}: not within {limit:?}; Java's log:\n{}",
            java.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// How long Java MirrorMaker may take to start and reach a state a test waits for (it starts
/// in about 7 s here, then its first offset flush comes after `offset.flush.interval.ms`).
const JAVA_LIMIT: Duration = Duration::from_secs(120);

/// Interop 1 and half of 3: Java MM2 copies two topics and checkpoints a group, then is
/// killed (nothing flushed); mirrorslice slices take over from Java's Connect offsets. Nothing
/// is lost, the only duplicates are what Java copied past its last offset commit, we translate
/// Java's checkpoints as Java does, and our checkpoint task translates from Java's offset syncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrorslice_takes_over_from_a_killed_java_mm2_and_reads_what_it_wrote() {
    let Some(stack) = common::kafka_only("Java MirrorMaker runs against Apache Kafka only") else {
        return;
    };
    let flow = Flow::new();
    let (topic, audit) = (flow.topic(), flow.other_topic());
    create_topic(&stack.a, &topic, PARTITIONS, &[]).await;
    create_topic(&stack.a, &audit, 1, &[]).await;
    let records = keyed_records(PARTITIONS, 12_000);
    produce(&stack.a, &topic, &records[..6_000]).await;
    produce(&stack.a, &audit, &keyed_records(1, 1_000)).await;
    flow.commit_group([700, 1_500, 300]).await;
    flow.commit_group_at(&[(&audit, 0, 300)]).await;

    let mut java = flow.start_java();
    wait_for(
        &mut java,
        "Java committed the first batch",
        JAVA_LIMIT,
        || async {
            sum(&flow.committed().await) == 6_000 && sum(&flow.committed_of(&audit).await) == 1_000
        },
    )
    .await;
    wait_for(
        &mut java,
        "Java checkpointed the group",
        JAVA_LIMIT,
        || async { latest_checkpoints(&flow).await.len() == PARTITIONS as usize + 1 },
    )
    .await;
    // A second batch, copied by Java; killed right after, its last offsets are not committed.
    produce(&stack.a, &topic, &records[6_000..]).await;
    wait_for(
        &mut java,
        "Java copied the second batch",
        JAVA_LIMIT,
        || async { sum(&flow.remote_ends().await) >= 12_000 },
    )
    .await;
    java.kill();
    let java_committed = flow.committed().await;
    let java_copied = flow.remote_ends().await;
    let tail: i64 = (0..PARTITIONS)
        .map(|p| java_copied[&p] - java_committed[&p])
        .sum();
    println!("Java: copied {java_copied:?}, committed {java_committed:?}: uncommitted tail {tail}");
    assert!(java_errors_are_none(&java), "{}", java.log());

    // Java's checkpoints: we translate them as Java's RemoteClusterUtils does.
    let ours = flow.translate_offsets();
    assert_eq!(ours.len(), PARTITIONS as usize + 1, "{ours:?}");
    assert_eq!(
        ours,
        java_translate_offsets(&stack.b, &flow.src, &flow.group())
    );
    let counts = decode_internal_topics(&flow).await;
    assert!(
        counts.values().all(|n| *n > 0),
        "Java wrote every topic: {counts:?}"
    );

    // The group moves on within what Java copied and synced; then mirrorslice takes over.
    flow.commit_group([1_200, 1_800, 900]).await;
    flow.commit_group_at(&[(&audit, 0, 800)]).await;
    let java_checkpoints = latest_checkpoints(&flow).await;
    // The killed worker stays in the Connect group until its session times out (10 s); until
    // then a slice refuses to run beside it.
    let killed_at = Instant::now();
    let slice = loop {
        let (code, out) = flow.try_slice(&flow.forward());
        if code == 0 {
            break out["slices"][0].clone();
        }
        let error = flow.assert_refused_beside_java(code, &out);
        assert!(killed_at.elapsed() < Duration::from_secs(60), "{error}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    println!(
        "first slice after the kill ran {:.1?} after it",
        killed_at.elapsed()
    );
    assert_eq!(slice["checkpoints"]["status"], "ran", "{slice:#}");
    let duplicates = common::assert_all_copied(&stack.b, &flow.remote(), PARTITIONS, 12_000).await;
    assert_eq!(
        duplicates as i64, tail,
        "duplicates are Java's uncommitted tail"
    );
    assert_eq!(
        common::assert_all_copied(&stack.b, &flow.remote_of(&audit), 1, 1_000).await,
        0
    );
    assert_eq!(
        flow.committed().await,
        (0..PARTITIONS).map(|p| (p, 4_000)).collect(),
        "our commits continue Java's"
    );

    // `audit` was copied and committed in full by Java, so its offset syncs are all Java's:
    // our checkpoint at the moved position was translated from them.
    let checkpoints = latest_checkpoints(&flow).await;
    let cp = &checkpoints[&(flow.remote_of(&audit), 0)];
    assert_eq!(cp.upstream_offset, 800, "{cp}");
    assert!((1..=800).contains(&cp.downstream_offset), "{cp}");
    // On an `orders` partition where we re-copied Java's tail, our syncs went back upstream,
    // which (as in Java after a restart, §8.3's rewind rule) leaves nothing to translate the
    // positions before them with: the group keeps Java's checkpoint rather than a wrong one.
    // Where there was no tail, Java's syncs translate the moved position.
    for (p, moved) in [1_200, 1_800, 900].into_iter().enumerate() {
        let key = (flow.remote(), p as i32);
        if java_copied[&key.1] > java_committed[&key.1] {
            assert_eq!(checkpoints[&key], java_checkpoints[&key], "partition {p}");
        } else {
            assert_eq!(checkpoints[&key].upstream_offset, moved, "partition {p}");
            assert!((1..=moved).contains(&checkpoints[&key].downstream_offset));
        }
    }
    assert_eq!(
        flow.translate_offsets(),
        java_translate_offsets(&stack.b, &flow.src, &flow.group()),
        "Java translates our checkpoints as we do"
    );
    decode_internal_topics(&flow).await;
}

/// Java's ERROR lines, printed; whether there were none.
fn java_errors_are_none(java: &JavaMirrorMaker) -> bool {
    let errors = java.errors();
    for e in &errors {
        println!("Java MirrorMaker ERROR: {e}");
    }
    errors.is_empty()
}

/// Interop 2, the other half of 3, and 4: mirrorslice copies a topic, checkpoints a group and
/// emits heartbeats; Java's RemoteClusterUtils reads our checkpoints and counts hops across our
/// heartbeats; Java MM2 started on the same config resumes from our Connect offsets (nothing
/// copied twice), and after Java stops a slice resumes from Java's, reading the configs and
/// statuses Java wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_mm2_takes_over_from_mirrorslice_and_reads_what_it_wrote() {
    let Some(stack) = common::kafka_only("Java MirrorMaker runs against Apache Kafka only") else {
        return;
    };
    // A cluster A of this test's own: the reverse pair below emits into A's `heartbeats`, which
    // every other flow from the shared A would then copy.
    let cluster_a = tokio::task::spawn_blocking(PrivateServer::kafka)
        .await
        .unwrap();
    let flow = Flow::from_cluster(&cluster_a.bootstrap());
    let (src, tgt) = (flow.src.clone(), flow.tgt.clone());
    // The reverse pair emits heartbeats into A, which the forward flow copies to B.
    let body = std::fs::read_to_string(&flow.config).unwrap();
    let body = body.replace(
        &format!("{tgt}->{src}.emit.heartbeats.enabled = false\n"),
        "",
    );
    std::fs::write(&flow.config, body).unwrap();
    let topic = flow.topic();
    create_topic(&flow.a, &topic, PARTITIONS, &[]).await;
    let records = keyed_records(PARTITIONS, 6_000);
    produce(&flow.a, &topic, &records[..3_000]).await;
    let positions = [300, 650, 999];
    flow.commit_group(positions).await;

    let reverse = flow.run_slice(&format!("{tgt}->{src}"));
    assert!(
        reverse["heartbeats"]["emitted"].as_u64().unwrap() >= 1,
        "{reverse:#}"
    );
    let slice = flow.run_slice(&flow.forward());
    assert_eq!(slice["checkpoints"]["status"], "ran", "{slice:#}");
    assert_eq!(
        common::assert_all_copied(&stack.b, &flow.remote(), PARTITIONS, 3_000).await,
        0
    );

    // Java's RemoteClusterUtils reads our checkpoints and heartbeats.
    let ours = flow.translate_offsets();
    assert_eq!(ours.len(), PARTITIONS as usize, "{ours:?}");
    for ((_, p), offset) in &ours {
        assert!((1..=positions[*p as usize]).contains(offset), "{ours:?}");
    }
    assert_eq!(ours, java_translate_offsets(&stack.b, &src, &flow.group()));
    let topology = java_topology(&stack.b, &src);
    println!("Java's topology of B: {topology:?}");
    assert_eq!(topology.hops, 1, "{topology:?}");
    assert!(topology.upstream_clusters.contains(&src), "{topology:?}");
    assert!(topology
        .heartbeat_topics
        .contains(&format!("{src}.heartbeats")));
    assert!(topology
        .checkpoint_topics
        .contains(&format!("{src}.checkpoints.internal")));

    // Java takes over from our Connect offsets: it copies only the new records.
    produce(&flow.a, &topic, &records[3_000..]).await;
    let started = Instant::now();
    let mut java = flow.start_java();
    wait_for(
        &mut java,
        "Java copied and committed the rest",
        JAVA_LIMIT,
        || async { sum(&flow.committed().await) == 6_000 },
    )
    .await;
    let took = started.elapsed();
    // While Java runs the flow, a slice refuses to run beside it, writing nothing.
    let reports_before = slice_reports(&flow).await;
    let (code, out) = flow.try_slice(&flow.forward());
    println!("refused: {}", flow.assert_refused_beside_java(code, &out));
    assert_eq!(
        slice_reports(&flow).await,
        reports_before,
        "a refused slice writes nothing"
    );
    java.assert_running();
    let stopped_in = java.stop();
    println!("Java took over in {took:.1?} (start, copy, first offset flush); stopped in {stopped_in:.1?}");
    assert!(java_errors_are_none(&java), "{}", java.log());
    let duplicates = common::assert_all_copied(&stack.b, &flow.remote(), PARTITIONS, 6_000).await;
    assert_eq!(duplicates, 0, "Java re-copied records we had committed");
    let counts = decode_internal_topics(&flow).await;
    println!("internal topics: {counts:?}");

    // And back: a slice resumes from Java's offsets, reading the configs Java rewrote.
    let slice = flow.run_slice(&flow.forward());
    assert_eq!(slice["caught_up"], true, "{slice:#}");
    assert_eq!(
        common::assert_all_copied(&stack.b, &flow.remote(), PARTITIONS, 6_000).await,
        0
    );
    assert_eq!(
        flow.committed().await,
        (0..PARTITIONS).map(|p| (p, 2_000)).collect()
    );
}
