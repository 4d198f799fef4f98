//! `mirrorslice translate-offsets` and `mirrorslice failover` end to end: the real binary
//! against the local stack (A = source, B = target).
//!
//! The checkpoints are written here with `mirrorslice::wire::Checkpoint`, as MM2's checkpoint
//! connector would (§4.3), into a per-test `<alias>.checkpoints.internal` on B, so each test
//! controls exactly which records the CLI reads: malformed ones, tombstones, other groups and
//! repeated partitions included. Every test uses its own cluster aliases, so no two tests share
//! a checkpoints topic.
//!
//! The tests run on Apache Kafka and on tansu and expect Kafka's exact answers there. tansu
//! quirks: a group that never existed describes as `Empty` (Kafka: `Dead`); a joined group
//! lists no members; commit metadata is not stored, so only offsets are compared.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{create_topic, produce, stack, unique, TestRecord};
use mirrorslice::kafka::admin_ext::{alter_consumer_group_offsets, list_consumer_group_offsets};
use mirrorslice::wire::checkpoint::Checkpoint;
use rdkafka::admin::AdminClient;
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(10);

/// A flow with fresh aliases: source alias `src` on cluster A, target `tgt` on cluster B.
struct Flow {
    src: String,
    tgt: String,
    config: tempfile::NamedTempFile,
}

impl Flow {
    fn new() -> Flow {
        let stack = stack();
        let src = unique("fo-src");
        let tgt = unique("fo-tgt");
        let body = format!(
            "clusters = {src}, {tgt}\n\
             {src}.bootstrap.servers = {a}\n\
             {tgt}.bootstrap.servers = {b}\n\
             {src}->{tgt}.enabled = true\n\
             replication.factor = 1\n",
            a = stack.a,
            b = stack.b,
        );
        let mut config = tempfile::Builder::new()
            .suffix(".properties")
            .tempfile()
            .unwrap();
        std::io::Write::write_all(&mut config, body.as_bytes()).unwrap();
        Flow { src, tgt, config }
    }

    fn flow(&self) -> String {
        format!("{}->{}", self.src, self.tgt)
    }

    fn path(&self) -> &str {
        self.config.path().to_str().unwrap()
    }

    fn checkpoints_topic(&self) -> String {
        format!("{}.checkpoints.internal", self.src)
    }

    /// The remote copy of a source topic on B, as the source connector names it.
    fn remote(&self, topic: &str) -> String {
        format!("{}.{topic}", self.src)
    }

    /// Runs `mirrorslice <cmd> <config> --flow S->T --group <group> <extra...>`.
    fn cli(&self, cmd: &str, group: &str, extra: &[&str]) -> (i32, String, String) {
        let flow = self.flow();
        let mut args = vec![cmd, self.path(), "--flow", &flow, "--group", group];
        args.extend_from_slice(extra);
        run(&args)
    }
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::mirrorslice_bin())
        .args(args)
        .output()
        .expect("run mirrorslice");
    let (code, stdout, stderr) = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    // Shown for failing tests (and with --nocapture): what the operator would have seen.
    println!(
        "$ mirrorslice {}\n[exit {code}]\n{stdout}--- stderr ---\n{stderr}",
        args.join(" ")
    );
    (code, stdout, stderr)
}

fn checkpoint(group: &str, topic: &str, partition: i32, upstream: i64, down: i64) -> TestRecord {
    let c = Checkpoint {
        consumer_group_id: group.into(),
        topic: topic.into(),
        partition,
        upstream_offset: upstream,
        downstream_offset: down,
        metadata: String::new(),
    };
    TestRecord {
        partition: 0,
        key: Some(c.encode_key().unwrap()),
        value: Some(c.encode_value().unwrap()),
        headers: Vec::new(),
        timestamp: None,
    }
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client")
}

/// The group's committed offsets on B as `(topic, partition, offset)`.
async fn committed(group: &str) -> Vec<(String, i32, i64)> {
    list_consumer_group_offsets(&admin(&stack().b), group, T)
        .await
        .expect("list offsets")
        .into_iter()
        .map(|(t, p, o, _)| (t, p, o))
        .collect()
}

async fn commit(group: &str, offsets: &[(&str, i32, i64)]) {
    let offsets: Vec<_> = offsets
        .iter()
        .map(|(t, p, o)| (t.to_string(), *p, *o, String::new()))
        .collect();
    let results = alter_consumer_group_offsets(&admin(&stack().b), group, &offsets, T)
        .await
        .expect("commit");
    assert!(results.iter().all(|r| r.1.is_ok()), "{results:?}");
}

/// Sets up a flow whose checkpoints topic on B holds, for `group`: `orders` partitions 0 (twice,
/// last 8), 1 (10) and 2 (20), plus records the reader must skip or ignore. `orders` exists on A
/// and its remote copy on B, with 3 partitions.
async fn flow_with_checkpoints(group: &str) -> (Flow, String) {
    let stack = stack();
    let flow = Flow::new();
    let orders = unique("orders");
    let remote = flow.remote(&orders);
    create_topic(&stack.a, &orders, 3, &[]).await;
    create_topic(&stack.b, &remote, 3, &[]).await;
    create_topic(
        &stack.b,
        &flow.checkpoints_topic(),
        1,
        &[("cleanup.policy", "compact")],
    )
    .await;
    let other = format!("{group}-other");
    let records = vec![
        checkpoint(group, &remote, 0, 50, 5),
        checkpoint(&other, &remote, 0, 900, 99),
        checkpoint(group, &remote, 1, 100, 10),
        // Malformed: a value cut short (Java skips it with a SchemaException).
        TestRecord {
            partition: 0,
            key: checkpoint(group, &remote, 2, 0, 0).key,
            value: Some(vec![0, 0, 0, 0]),
            headers: Vec::new(),
            timestamp: None,
        },
        // A tombstone: Java crashes, we skip it.
        TestRecord {
            partition: 0,
            key: checkpoint(group, &remote, 1, 0, 0).key,
            value: None,
            headers: Vec::new(),
            timestamp: None,
        },
        checkpoint(group, &remote, 2, 200, 20),
        checkpoint(group, &remote, 0, 80, 8), // last for partition 0 wins
        checkpoint(&other, &remote, 1, 901, 98),
    ];
    produce(&stack.b, &flow.checkpoints_topic(), &records).await;
    (flow, remote)
}

// §10 translateOffsets: latest checkpoint per partition of the group, sorted; bad records
// skipped with a warning.
#[tokio::test]
async fn translate_offsets_prints_latest_checkpoint_per_partition() {
    let group = unique("fo-grp");
    let (flow, remote) = flow_with_checkpoints(&group).await;

    let (code, stdout, stderr) = flow.cli("translate-offsets", &group, &["--json"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let got: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(
        got,
        json!({"offsets": [
            {"topic": remote, "partition": 0, "offset": 8},
            {"topic": remote, "partition": 1, "offset": 10},
            {"topic": remote, "partition": 2, "offset": 20},
        ]})
    );
    assert!(stderr.contains("does not decode"), "stderr: {stderr}");
    assert!(stderr.contains("tombstone"), "stderr: {stderr}");
    // Exactly the issue's shape, keys in order.
    assert_eq!(
        stdout.trim_end(),
        format!(
            r#"{{"offsets":[{{"topic":"{remote}","partition":0,"offset":8}},{{"topic":"{remote}","partition":1,"offset":10}},{{"topic":"{remote}","partition":2,"offset":20}}]}}"#
        )
    );

    // The other group's checkpoints are its own.
    let (code, stdout, _) = flow.cli("translate-offsets", &format!("{group}-other"), &["--json"]);
    assert_eq!(code, 0);
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        got,
        json!({"offsets": [
            {"topic": remote, "partition": 0, "offset": 99},
            {"topic": remote, "partition": 1, "offset": 98},
        ]})
    );

    // A group without checkpoints: an empty answer, as in Java.
    let (code, stdout, _) = flow.cli("translate-offsets", &unique("nobody"), &["--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!({"offsets": []})
    );

    // Text: one row per partition, and the skip counts.
    let (code, stdout, stderr) = flow.cli("translate-offsets", &group, &[]);
    assert_eq!(code, 0, "stderr: {stderr}");
    for (p, o) in [(0, 8), (1, 10), (2, 20)] {
        let row = [remote.clone(), p.to_string(), o.to_string()];
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == row),
            "row {row:?} missing:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("1 malformed and 1 tombstone(s) skipped"),
        "{stdout}"
    );
}

// Dry run changes nothing; --apply commits to an idle group but never rewinds a partition
// where the target is ahead, unless --allow-rewind.
#[tokio::test]
async fn failover_dry_run_apply_and_no_rewind_rule() {
    let group = unique("fo-grp");
    let (flow, remote) = flow_with_checkpoints(&group).await;
    // The group already consumed on B: behind on partition 1, ahead on partition 2.
    commit(&group, &[(&remote, 1, 4), (&remote, 2, 30)]).await;
    let before = committed(&group).await;
    assert_eq!(
        before,
        vec![(remote.clone(), 1, 4), (remote.clone(), 2, 30)]
    );

    let (code, stdout, stderr) = flow.cli("failover", &group, &["--json"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let plan: Value = serde_json::from_str(&stdout).expect("one JSON object");
    let rows: Vec<_> = plan["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["partition"].as_i64().unwrap(),
                p["current_offset"].as_i64(),
                p["offset"].as_i64().unwrap(),
                p["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (0, None, 8, "commit".to_string()),
            (1, Some(4), 10, "commit".to_string()),
            (2, Some(30), 20, "keep-higher".to_string()),
        ]
    );
    assert_eq!(plan["applied"], false);
    assert_eq!(plan["target_members"], 0);
    if stack().is_kafka() {
        // Offsets but no members. (tansu's state is not checked: see the module doc.)
        assert_eq!(plan["target_state"], "EMPTY", "{plan}");
    }
    assert_eq!(plan["group"], group.as_str());
    assert!(
        plan["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains(&format!("{remote}-2"))),
        "{plan}"
    );
    assert_eq!(committed(&group).await, before, "a dry run must not commit");

    // Text form of the same plan.
    let (code, stdout, _) = flow.cli("failover", &group, &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Dry run"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [remote.as_str(), "2", "30", "20", "keep-higher"]),
        "{stdout}"
    );

    let (code, stdout, stderr) = flow.cli("failover", &group, &["--apply", "--json"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (plan["applied"].clone(), plan["committed"].clone()),
        (json!(true), json!(2))
    );
    assert_eq!(
        committed(&group).await,
        vec![
            (remote.clone(), 0, 8),
            (remote.clone(), 1, 10),
            (remote.clone(), 2, 30),
        ]
    );

    // Once applied, running it again changes nothing.
    let (code, stdout, _) = flow.cli("failover", &group, &["--apply", "--json"]);
    assert_eq!(code, 0);
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(plan["committed"], 0, "{plan}");

    // The operator insists on the translated positions.
    let (code, stdout, stderr) =
        flow.cli("failover", &group, &["--apply", "--allow-rewind", "--json"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(plan["offsets"][2]["action"], "rewind");
    assert_eq!(plan["committed"], 1);
    assert_eq!(
        committed(&group).await,
        vec![
            (remote.clone(), 0, 8),
            (remote.clone(), 1, 10),
            (remote.clone(), 2, 20),
        ]
    );
}

/// A consumer of `group` on B subscribed to `topic`, polled on its own thread until dropped.
struct Member {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Member {
    fn join(group: &str, topic: &str) -> Member {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &stack().b)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        consumer.subscribe(&[topic]).expect("subscribe");
        let stop = Arc::new(AtomicBool::new(false));
        let (assigned_tx, assigned_rx) = mpsc::channel();
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut told = false;
                while !stop.load(Ordering::Relaxed) {
                    let _ = consumer.poll(Duration::from_millis(100));
                    if !told
                        && consumer
                            .assignment()
                            .map(|a| a.count() > 0)
                            .unwrap_or(false)
                    {
                        told = true;
                        let _ = assigned_tx.send(());
                    }
                }
                consumer.unsubscribe();
            })
        };
        assigned_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("member got an assignment");
        Member {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// §13 #8: Java leaves busy groups to the broker; we refuse up front, naming the group.
#[tokio::test]
async fn failover_apply_refuses_group_with_active_member() {
    let group = unique("fo-busy");
    let (flow, remote) = flow_with_checkpoints(&group).await;
    let member = Member::join(&group, &remote);

    let (code, stdout, stderr) = flow.cli("failover", &group, &["--apply"]);
    assert_eq!(code, 1, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stderr.contains(&group), "{stderr}");
    assert!(stderr.contains("refusing"), "{stderr}");
    let kafka = stack().is_kafka();
    if kafka {
        assert!(
            stderr.contains("1 active member(s), state STABLE"),
            "{stderr}"
        );
    } else {
        // tansu quirk: a joined group is STABLE but lists no members; the state alone is
        // reason enough to refuse.
        assert!(
            stderr.contains("1 active member(s), state STABLE")
                || stderr.contains("0 active member(s), state STABLE"),
            "{stderr}"
        );
    }

    // Without --apply the plan is still shown, with the member.
    let (code, stdout, stderr) = flow.cli("failover", &group, &["--json"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(plan["target_state"], "STABLE", "{plan}");
    if kafka {
        assert_eq!(plan["target_members"], 1, "{plan}");
    } else {
        // tansu quirk: no members listed, as above.
        assert!(
            plan["target_members"] == 1 || plan["target_members"] == 0,
            "{plan}"
        );
    }
    drop(member);
    assert!(
        committed(&group).await.is_empty(),
        "nothing may be committed"
    );
}

#[tokio::test]
async fn failover_errors_and_exit_codes() {
    let flow = Flow::new();
    let group = unique("fo-grp");

    // Not a herder pair: a configuration error (2).
    let bogus = format!("{}->nowhere", flow.src);
    let (code, _, stderr) = run(&[
        "translate-offsets",
        flow.path(),
        "--flow",
        &bogus,
        "--group",
        &group,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(&bogus), "{stderr}");
    let (code, _, stderr) = run(&[
        "failover",
        flow.path(),
        "--flow",
        "no-arrow",
        "--group",
        &group,
    ]);
    assert_eq!(code, 2, "{stderr}");

    // No checkpoints topic on the target yet: named in the error (1).
    let (code, _, stderr) = flow.cli("translate-offsets", &group, &["--timeout", "10s"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&flow.checkpoints_topic()), "{stderr}");

    // The topic exists but holds nothing for the group: --apply has nothing to do (1).
    create_topic(&stack().b, &flow.checkpoints_topic(), 1, &[]).await;
    let (code, stdout, stderr) = flow.cli("failover", &group, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("no checkpoints for group"), "{stdout}");
    let (code, _, stderr) = flow.cli("failover", &group, &["--apply"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&group), "{stderr}");
}

// End to end with the real checkpoint connector: a group consumes part of a topic on A, a slice
// replicates it and writes checkpoints, and after `failover --apply` a consumer of the same
// group on B starts exactly at the translated offsets, reading the same records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_after_real_slices_resumes_consumer_on_target() {
    use rdkafka::{Message, Offset, TopicPartitionList};
    let stack = stack();
    // Aliases without `-`, and topic/group filters scoped to this flow: cluster A is shared
    // with every other test, and a slice must only see what this test created.
    let src = unique("fosrc").replace('-', "");
    let tgt = unique("fotgt").replace('-', "");
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    std::fs::write(
        &config,
        format!(
            "clusters = {src}, {tgt}\n\
             {src}.bootstrap.servers = {a}\n\
             {tgt}.bootstrap.servers = {b}\n\
             {src}->{tgt}.enabled = true\n\
             {src}->{tgt}.topics = .*-{src}\n\
             {src}->{tgt}.groups = .*-{src}\n\
             {tgt}->{src}.emit.heartbeats.enabled = false\n\
             emit.checkpoints.interval.seconds = 0\n\
             refresh.groups.interval.seconds = 0\n\
             replication.factor = 1\n\
             offset-syncs.topic.replication.factor = 1\n\
             checkpoints.topic.replication.factor = 1\n\
             heartbeats.topic.replication.factor = 1\n\
             config.storage.replication.factor = 1\n\
             offset.storage.replication.factor = 1\n\
             status.storage.replication.factor = 1\n",
            a = stack.a,
            b = stack.b,
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_string();
    let flow = format!("{src}->{tgt}");
    let topic = format!("orders-{src}");
    let remote = format!("{src}.{topic}");
    let group = format!("app-{src}");

    create_topic(&stack.a, &topic, 2, &[]).await;
    let records: Vec<TestRecord> = (0..2)
        .flat_map(|p| {
            (0..20).map(move |i| TestRecord::kv(p, &format!("k{i}"), &format!("v-{p}-{i}")))
        })
        .collect();
    produce(&stack.a, &topic, &records).await;

    // The application consumes on A and commits part-way: 12 records of partition 0, 7 of 1.
    {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &stack.a)
            .set("group.id", &group)
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer on A");
        let mut tpl = TopicPartitionList::new();
        for p in 0..2 {
            tpl.add_partition_offset(&topic, p, Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&tpl).unwrap();
        let want = [12i64, 7];
        let mut next = [0i64, 0];
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while next != want {
            assert!(
                std::time::Instant::now() < deadline,
                "consumed only {next:?}"
            );
            if let Some(m) = consumer.poll(Duration::from_millis(100)) {
                let m = m.expect("consume on A");
                let p = m.partition() as usize;
                if next[p] < want[p] {
                    next[p] = m.offset() + 1;
                }
            }
        }
        let mut commit = TopicPartitionList::new();
        for (p, o) in want.iter().enumerate() {
            commit
                .add_partition_offset(&topic, p as i32, Offset::Offset(*o))
                .unwrap();
        }
        consumer
            .commit(&commit, rdkafka::consumer::CommitMode::Sync)
            .expect("commit on A");
    }

    let out = Command::new(common::mirrorslice_bin())
        .args([
            "run",
            &config,
            "--flow",
            &flow,
            "--max-duration",
            "60s",
            "--json",
        ])
        .env("MIRRORSLICE_STATE_DIR", state.path())
        .env("MIRRORSLICE_LOG", "warn")
        .output()
        .expect("run mirrorslice");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "slice failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout).expect("slice report");
    let cp = &report["slices"][0]["checkpoints"];
    assert_eq!(cp["status"], "ran", "{report:#}");
    assert!(cp["emitted"].as_u64().unwrap() >= 2, "{cp:#}");

    // The translation: one entry per partition, never past the group's upstream position
    // (a fresh remote topic has the same offsets as its source).
    let (code, stdout, stderr) = run(&[
        "translate-offsets",
        &config,
        "--flow",
        &flow,
        "--group",
        &group,
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let got: Value = serde_json::from_str(&stdout).unwrap();
    let offsets = got["offsets"].as_array().unwrap();
    assert_eq!(offsets.len(), 2, "{got}");
    let translated: Vec<i64> = offsets
        .iter()
        .enumerate()
        .map(|(p, o)| {
            assert_eq!(o["topic"], remote.as_str());
            assert_eq!(o["partition"], p as i64);
            o["offset"].as_i64().unwrap()
        })
        .collect();
    assert!(
        translated[0] <= 12 && translated[1] <= 7 && translated.iter().all(|o| *o > 0),
        "{translated:?}"
    );

    let (code, stdout, stderr) = run(&[
        "failover", &config, "--flow", &flow, "--group", &group, "--apply", "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    // The group has never been on B.
    if stack.is_kafka() {
        assert_eq!(plan["target_state"], "DEAD", "{plan}");
    } else {
        // tansu quirk: a group that never existed is EMPTY.
        assert_eq!(plan["target_state"], "EMPTY", "{plan}");
    }
    assert_eq!(
        (plan["applied"].clone(), plan["committed"].clone()),
        (json!(true), json!(2))
    );

    // The group's consumer on B resumes at the committed (translated) offsets, on the same data.
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &stack.b)
        .set("group.id", &group)
        .set("enable.auto.commit", "false")
        // Without a committed offset it would wait at the end and the test would time out.
        .set("auto.offset.reset", "latest")
        .create()
        .expect("consumer on B");
    let mut tpl = TopicPartitionList::new();
    for p in 0..2 {
        tpl.add_partition(&remote, p); // offset from the group's commit
    }
    consumer.assign(&tpl).unwrap();
    let mut first: [Option<(i64, String)>; 2] = [None, None];
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while first.iter().any(Option::is_none) {
        assert!(
            std::time::Instant::now() < deadline,
            "first records on B: {first:?}"
        );
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.expect("consume on B");
            let p = m.partition() as usize;
            if first[p].is_none() {
                let value = String::from_utf8(m.payload().unwrap().to_vec()).unwrap();
                first[p] = Some((m.offset(), value));
            }
        }
    }
    for (p, f) in first.iter().enumerate() {
        let o = translated[p];
        assert_eq!(
            f.clone().unwrap(),
            (o, format!("v-{p}-{o}")),
            "partition {p}"
        );
    }
}
