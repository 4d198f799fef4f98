//! Checkpoints, group offset sync and heartbeats in slices, end to end on the local stack
//! (mm2-compat §8, §9; acceptance cases §12.8 #78, #80, #83, #84).
//!
//! Like `tests/source_slice.rs`, every test has its own cluster aliases, topic filter
//! (`.*-<source>`), group filter (`.*-<source>`) and state directory, because the brokers are
//! shared. They run on Apache Kafka and on tansu (`MIRRORSLICE_BROKER`), expecting Kafka's
//! exact answers where tansu's differ. The heartbeat test starts its own pair of tansu brokers
//! on either: it must put a `heartbeats` topic on the *source* cluster, and on the shared
//! cluster A every other test's flow would replicate it (heartbeat topics bypass the topic
//! filter, §13 #16) and count its records.

mod common;

use common::TestRecord;
use mirrorslice::kafka::admin_ext;
use rdkafka::admin::AdminClient;
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Timestamp};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One flow `src->dst`, with its own aliases and state.
struct Flow {
    source: String,
    target: String,
    a: String,
    b: String,
    config: PathBuf,
    state: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl Flow {
    fn new(extra: &str) -> Flow {
        let stack = common::stack();
        Flow::between(&stack.a, &stack.b, extra)
    }

    /// A flow from the cluster at `a` to the one at `b`, checkpointing and syncing group offsets
    /// in every slice (intervals 0).
    fn between(a: &str, b: &str, extra: &str) -> Flow {
        let source = common::unique("src").replace('-', "");
        let target = common::unique("dst").replace('-', "");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mm2.properties");
        let body = format!(
            "clusters = {source}, {target}\n\
             {source}.bootstrap.servers = {a}\n\
             {target}.bootstrap.servers = {b}\n\
             {source}->{target}.enabled = true\n\
             {source}->{target}.topics = .*-{source}\n\
             {source}->{target}.groups = .*-{source}\n\
             {target}->{source}.emit.heartbeats.enabled = false\n\
             emit.checkpoints.interval.seconds = 0\n\
             refresh.groups.interval.seconds = 0\n\
             sync.group.offsets.enabled = true\n\
             sync.group.offsets.interval.seconds = 0\n\
             replication.factor = 1\n\
             offset-syncs.topic.replication.factor = 1\n\
             checkpoints.topic.replication.factor = 1\n\
             heartbeats.topic.replication.factor = 1\n\
             config.storage.replication.factor = 1\n\
             offset.storage.replication.factor = 1\n\
             status.storage.replication.factor = 1\n\
             {extra}\n"
        );
        std::fs::write(&config, body).unwrap();
        Flow {
            source,
            target,
            a: a.to_string(),
            b: b.to_string(),
            config,
            state: tempfile::tempdir().unwrap(),
            _dir: dir,
        }
    }

    fn name(&self) -> String {
        format!("{}->{}", self.source, self.target)
    }

    fn remote(&self, topic: &str) -> String {
        format!("{}.{topic}", self.source)
    }

    fn checkpoints_topic(&self) -> String {
        format!("{}.checkpoints.internal", self.source)
    }

    fn group(&self, label: &str) -> String {
        format!("{label}-{}", self.source)
    }

    fn edit_config(&self, edit: impl FnOnce(String) -> String) {
        let body = std::fs::read_to_string(&self.config).unwrap();
        std::fs::write(&self.config, edit(body)).unwrap();
    }

    /// Run one slice of `flow`; returns that slice's report.
    fn run_flow(&self, flow: &str) -> Value {
        self.run_flow_for(flow, "60s")
    }

    fn run_flow_for(&self, flow: &str, max_duration: &str) -> Value {
        let out = Command::new(common::mirrorslice_bin())
            .arg("run")
            .arg(&self.config)
            .args(["--flow", flow, "--max-duration", max_duration, "--json"])
            .env("MIRRORSLICE_STATE_DIR", self.state.path())
            .env("MIRRORSLICE_LOG", "warn")
            .output()
            .expect("run mirrorslice");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let report: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("report is not JSON ({e}): {stdout}\nstderr: {stderr}"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "slice failed: {stderr}\n{report:#}"
        );
        assert_eq!(report["ok"], true, "{report:#}");
        report["slices"][0].clone()
    }

    fn run_ok(&self) -> Value {
        self.run_flow(&self.name())
    }
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client")
}

/// Commits `group`'s offsets on a cluster, like a consumer that stopped there.
async fn commit(bootstrap: &str, group: &str, offsets: &[(&str, i32, i64)]) {
    let rows: Vec<(String, i32, i64, String)> = offsets
        .iter()
        .map(|(t, p, o)| (t.to_string(), *p, *o, String::new()))
        .collect();
    let results = admin_ext::alter_consumer_group_offsets(
        &admin(bootstrap),
        group,
        &rows,
        Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|e| panic!("commit {group}: {e}"));
    for (tp, r) in results {
        r.unwrap_or_else(|e| panic!("commit {group} {tp:?}: {e}"));
    }
}

/// A group's committed offsets on a cluster, by (topic, partition).
async fn group_offsets(bootstrap: &str, group: &str) -> BTreeMap<(String, i32), i64> {
    admin_ext::list_consumer_group_offsets(&admin(bootstrap), group, Duration::from_secs(10))
        .await
        .unwrap_or_else(|e| panic!("list offsets of {group}: {e}"))
        .into_iter()
        .filter(|(_, _, o, _)| *o >= 0)
        .map(|(t, p, o, _)| ((t, p), o))
        .collect()
}

fn values(partitions: i32, per_partition: usize, tag: &str) -> Vec<TestRecord> {
    (0..partitions)
        .flat_map(|p| {
            (0..per_partition)
                .map(move |i| TestRecord::kv(p, &format!("k{i}"), &format!("{tag}-{p}-{i}")))
        })
        .collect()
}

/// A checkpoint decoded by hand from the §4.3 layout (not with the crate's decoder), with the
/// record's timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cp {
    group: String,
    topic: String,
    partition: i32,
    upstream: i64,
    downstream: i64,
    metadata: String,
    timestamp: Option<i64>,
}

fn take_string(bytes: &[u8], at: &mut usize) -> String {
    let n = i16::from_be_bytes([bytes[*at], bytes[*at + 1]]) as usize;
    *at += 2;
    let s = String::from_utf8(bytes[*at..*at + n].to_vec()).unwrap();
    *at += n;
    s
}

fn take_i64(bytes: &[u8], at: &mut usize) -> i64 {
    let v = i64::from_be_bytes(bytes[*at..*at + 8].try_into().unwrap());
    *at += 8;
    v
}

/// Every record of `<source>.checkpoints.internal`, in order. Asserts the §4.3 layout: key =
/// group, topic, partition; value = version 0, upstream, downstream, metadata; nothing after.
async fn checkpoints(flow: &Flow) -> Vec<Cp> {
    let records = common::consume_all(&flow.b, &flow.checkpoints_topic(), 1).await;
    records
        .iter()
        .map(|r| {
            assert_eq!(r.partition, 0);
            let key = r.key.as_ref().expect("checkpoint keys are never null");
            let value = r.value.as_ref().expect("checkpoints are never tombstones");
            let mut k = 0;
            let group = take_string(key, &mut k);
            let topic = take_string(key, &mut k);
            let partition = i32::from_be_bytes(key[k..k + 4].try_into().unwrap());
            assert_eq!(k + 4, key.len(), "nothing after the key fields");
            let mut v = 0;
            assert_eq!(&value[0..2], &[0, 0], "value version 0");
            v += 2;
            let upstream = take_i64(value, &mut v);
            let downstream = take_i64(value, &mut v);
            let metadata = take_string(value, &mut v);
            assert_eq!(v, value.len(), "nothing after the value fields");
            Cp {
                group,
                topic,
                partition,
                upstream,
                downstream,
                metadata,
                timestamp: match r.timestamp {
                    Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) => Some(t),
                    Timestamp::NotAvailable => None,
                },
            }
        })
        .collect()
}

/// The latest checkpoint per (group, partition) of one renamed topic.
fn latest(cps: &[Cp], group: &str, topic: &str) -> BTreeMap<i32, Cp> {
    cps.iter()
        .filter(|c| c.group == group && c.topic == topic)
        .map(|c| (c.partition, c.clone()))
        .collect()
}

/// Records per partition of the remote topic (its log end on a fresh topic).
async fn remote_ends(flow: &Flow, topic: &str, partitions: i32) -> BTreeMap<i32, i64> {
    let mut ends: BTreeMap<i32, i64> = (0..partitions).map(|p| (p, 0)).collect();
    for r in common::consume_all(&flow.b, &flow.remote(topic), partitions).await {
        let e = ends.get_mut(&r.partition).unwrap();
        *e = (*e).max(r.offset + 1);
    }
    ends
}

// §12.8 #78/#80, and "exact at slice boundaries": the final commit of every slice promotes the
// delayed offset syncs, so a group committed at the end of the source log translates to the end
// of the remote log; a group in the middle never translates past its exact offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_log_groups_translate_exactly_mid_log_groups_never_overshoot() {
    let flow = Flow::new("");
    let topic = format!("orders-{}", flow.source);
    let remote = flow.remote(&topic);
    let partitions = 3;
    common::create_topic(&flow.a, &topic, partitions, &[]).await;
    common::produce(&flow.a, &topic, &values(partitions, 40, "a")).await;
    let (end, mid) = (flow.group("end"), flow.group("mid"));
    commit(
        &flow.a,
        &end,
        &[(&topic, 0, 40), (&topic, 1, 40), (&topic, 2, 40)],
    )
    .await;
    // Partition 2 never committed by this group: it must get no checkpoint (§12.8 #83).
    commit(&flow.a, &mid, &[(&topic, 0, 17), (&topic, 1, 25)]).await;

    let before_ms = chrono::Utc::now().timestamp_millis();
    let report = flow.run_ok();
    let after_ms = chrono::Utc::now().timestamp_millis();
    let cp = &report["checkpoints"];
    assert_eq!(cp["status"], "ran", "{report:#}");
    assert_eq!(cp["groups"], 2, "{cp:#}");
    assert_eq!(cp["emitted"], 5, "{cp:#}");
    assert_eq!(cp["errors"], Value::Array(vec![]), "{cp:#}");

    let ends = remote_ends(&flow, &topic, partitions).await;
    let all = checkpoints(&flow).await;
    let at_end = latest(&all, &end, &remote);
    assert_eq!(at_end.len(), 3);
    for (p, c) in &at_end {
        assert_eq!(c.upstream, 40);
        assert_eq!(
            c.downstream, ends[p],
            "end of log translates exactly: {c:?}"
        );
        assert_eq!(c.metadata, "");
        let ts = c.timestamp.expect("checkpoint records carry a timestamp");
        assert!(
            (before_ms..=after_ms).contains(&ts),
            "{ts} within the slice"
        );
    }
    let in_middle = latest(&all, &mid, &remote);
    assert_eq!(
        in_middle.keys().copied().collect::<Vec<_>>(),
        vec![0, 1],
        "no checkpoint for a partition the group never committed"
    );
    // A fresh topic maps upstream n to downstream n: that is the exact offset.
    assert!(in_middle[&0].downstream <= 17, "{:?}", in_middle[&0]);
    assert!(in_middle[&1].downstream <= 25, "{:?}", in_middle[&1]);

    // Group offset sync: the target groups now hold the checkpointed offsets.
    let synced = cp["groups_synced"].as_array().unwrap();
    assert_eq!(synced.len(), 2, "{cp:#}");
    let target_end = group_offsets(&flow.b, &end).await;
    for p in 0..partitions {
        assert_eq!(target_end[&(remote.clone(), p)], ends[&p]);
    }
    let target_mid = group_offsets(&flow.b, &mid).await;
    assert_eq!(target_mid.len(), 2);
    assert_eq!(target_mid[&(remote.clone(), 0)], in_middle[&0].downstream);
}

/// Every offset sync of `topic` in the flow's offset-syncs topic (on the source cluster, the
/// default location), per partition in the order written: (upstream, downstream).
async fn offset_syncs(flow: &Flow, topic: &str) -> BTreeMap<i32, Vec<(i64, i64)>> {
    let syncs_topic = format!("mm2-offset-syncs.{}.internal", flow.target);
    let mut out: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for r in common::consume_all(&flow.a, &syncs_topic, 1).await {
        let (key, value) = (r.key.unwrap(), r.value.unwrap());
        let sync = mirrorslice::wire::OffsetSync::decode(&key, &value).unwrap();
        if sync.topic == topic {
            out.entry(sync.partition)
                .or_default()
                .push((sync.upstream_offset, sync.downstream_offset));
        }
    }
    out
}

// Issue #16 (mm2-compat §7.5, §8.3): a backlog many times `offset.lag.max` copied in one slice.
// Offset syncs go out as records are acknowledged, so the early syncs of every partition reach
// the topic instead of being replaced by later ones before being sent: every group committed
// mid-log gets a checkpoint, also behind the newest sync, through a sync really written and
// never past its exact offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_group_lagging_in_a_long_backlog_gets_a_checkpoint() {
    let flow = Flow::new("offset.lag.max = 100");
    let topic = format!("backlog-{}", flow.source);
    let remote = flow.remote(&topic);
    let (partitions, per_partition) = (3, 2000);
    common::create_topic(&flow.a, &topic, partitions, &[]).await;
    common::produce(&flow.a, &topic, &values(partitions, per_partition, "b")).await;
    let commits: [(&str, [i64; 3]); 4] = [
        ("first", [0, 1, 5]),
        ("issue", [150, 101, 250]),
        ("mid", [1000, 777, 1500]),
        ("late", [1999, 1900, 1234]),
    ];
    for (label, offsets) in &commits {
        let rows: Vec<(&str, i32, i64)> = (0..partitions)
            .map(|p| (topic.as_str(), p, offsets[p as usize]))
            .collect();
        commit(&flow.a, &flow.group(label), &rows).await;
    }

    let report = flow.run_ok();
    assert_eq!(report["caught_up"], true, "{report:#}");
    let cp = &report["checkpoints"];
    assert_eq!(cp["status"], "ran", "{report:#}");
    assert_eq!(cp["errors"], Value::Array(vec![]), "{cp:#}");
    assert_eq!(
        cp["emitted"], 12,
        "a checkpoint per (group, partition): {cp:#}"
    );

    let syncs = offset_syncs(&flow, &topic).await;
    let end = per_partition as i64 - 1;
    for p in 0..partitions {
        let s = &syncs[&p];
        assert_eq!(
            s.first(),
            Some(&(0, 0)),
            "partition {p}: the first record's sync"
        );
        assert_eq!(
            s.last(),
            Some(&(end, end)),
            "partition {p}: the slice-end sync"
        );
    }
    let all = checkpoints(&flow).await;
    for (label, offsets) in &commits {
        let latest = latest(&all, &flow.group(label), &remote);
        for p in 0..partitions {
            let committed = offsets[p as usize];
            let c = latest
                .get(&p)
                .unwrap_or_else(|| panic!("{label} p{p} at {committed}: no checkpoint"));
            assert_eq!(c.upstream, committed, "{c:?}");
            // A fresh topic copied in order maps upstream n to downstream n: the exact offset.
            assert!(c.downstream <= committed, "past the exact offset: {c:?}");
            // Translation goes through a sync in the topic: its downstream, +1 when the group is
            // past it (§8.3), never extrapolated.
            let through_a_sync = syncs[&p].iter().any(|&(up, down)| {
                up <= committed && c.downstream == down + i64::from(up != committed)
            });
            assert!(through_a_sync, "{c:?} from none of {:?}", syncs[&p]);
        }
    }
}

// §12.8 #84 and §8.5: checkpoints stay monotonic per (group, partition) across slices, which
// each load the previous checkpoints; an idle slice writes nothing new; a target group that
// moved ahead (its consumers failed over) is never rewound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_stay_monotonic_across_slices_and_idle_groups_are_not_rewound() {
    let flow = Flow::new("");
    let topic = format!("pay-{}", flow.source);
    let remote = flow.remote(&topic);
    let partitions = 2;
    common::create_topic(&flow.a, &topic, partitions, &[]).await;
    let group = flow.group("g");
    let mut produced = 0i64;
    for round in 0..4 {
        common::produce(
            &flow.a,
            &topic,
            &values(partitions, 30, &format!("r{round}")),
        )
        .await;
        produced += 30;
        // The group trails the log by 7, then catches up in the last round.
        let at = if round == 3 { produced } else { produced - 7 };
        commit(&flow.a, &group, &[(&topic, 0, at), (&topic, 1, at)]).await;
        let report = flow.run_ok();
        assert_eq!(report["checkpoints"]["status"], "ran", "{report:#}");
    }
    let all = checkpoints(&flow).await;
    for p in 0..partitions {
        let series: Vec<&Cp> = all
            .iter()
            .filter(|c| c.group == group && c.topic == remote && c.partition == p)
            .collect();
        assert!(
            series.len() >= 2,
            "one checkpoint per advancing slice: {series:?}"
        );
        for w in series.windows(2) {
            assert!(w[0].upstream <= w[1].upstream, "{w:?}");
            assert!(
                w[0].downstream < w[1].downstream,
                "strictly advancing: {w:?}"
            );
        }
        assert_eq!(series.last().unwrap().downstream, 120, "ends exact");
    }

    // Idle: nothing new to say.
    let report = flow.run_ok();
    assert_eq!(report["checkpoints"]["emitted"], 0, "{report:#}");

    // A consumer on the target moved past the checkpoint: the sync must not rewind it.
    commit(&flow.b, &group, &[(&remote, 0, 120), (&remote, 1, 125)]).await;
    common::produce(&flow.a, &topic, &values(partitions, 2, "late")).await;
    commit(&flow.a, &group, &[(&topic, 0, 122), (&topic, 1, 122)]).await;
    let report = flow.run_ok();
    assert_eq!(report["checkpoints"]["emitted"], 2, "{report:#}");
    let target = group_offsets(&flow.b, &group).await;
    assert_eq!(target[&(remote.clone(), 0)], 122, "advanced");
    assert_eq!(target[&(remote.clone(), 1)], 125, "never rewound");
}

// §12.8 #83: committed offsets on a topic with nothing mirrored yet give no checkpoint; once data
// is replicated, they do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_checkpoints_for_unmirrored_partitions_until_data_flows() {
    let flow = Flow::new("");
    let with_data = format!("full-{}", flow.source);
    let empty = format!("empty-{}", flow.source);
    common::create_topic(&flow.a, &with_data, 1, &[]).await;
    common::create_topic(&flow.a, &empty, 1, &[]).await;
    common::produce(&flow.a, &with_data, &values(1, 10, "d")).await;
    let group = flow.group("g");
    commit(&flow.a, &group, &[(&with_data, 0, 10), (&empty, 0, 0)]).await;

    flow.run_ok();
    let all = checkpoints(&flow).await;
    assert_eq!(latest(&all, &group, &flow.remote(&with_data)).len(), 1);
    assert!(
        latest(&all, &group, &flow.remote(&empty)).is_empty(),
        "no checkpoint without offset syncs: {all:?}"
    );

    common::produce(&flow.a, &empty, &values(1, 4, "e")).await;
    commit(&flow.a, &group, &[(&empty, 0, 4)]).await;
    flow.run_ok();
    let all = checkpoints(&flow).await;
    let now_there = latest(&all, &group, &flow.remote(&empty));
    assert_eq!(now_there[&0].downstream, 4, "{all:?}");
}

// Beyond MM2 (§13 #8): a target group with active members is never written, and the report
// says so. A group created on the target by a running consumer stays as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_active_target_group_is_not_written() {
    let flow = Flow::new("");
    let topic = format!("live-{}", flow.source);
    let remote = flow.remote(&topic);
    common::create_topic(&flow.a, &topic, 1, &[]).await;
    common::produce(&flow.a, &topic, &values(1, 12, "x")).await;
    flow.run_ok(); // creates the remote topic

    let group = flow.group("live");
    // A consumer of the remote topic in that group, polling until the test ends.
    let stop = Arc::new(AtomicBool::new(false));
    let member = {
        let (b, group, remote, stop) =
            (flow.b.clone(), group.clone(), remote.clone(), stop.clone());
        std::thread::spawn(move || {
            let c: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", &b)
                .set("group.id", &group)
                .set("enable.auto.commit", "false")
                .set("session.timeout.ms", "30000")
                .create()
                .unwrap();
            c.subscribe(&[&remote]).unwrap();
            while !stop.load(Ordering::SeqCst) {
                let _ = c.poll(Duration::from_millis(100));
            }
        })
    };
    // Wait until the target reports the group with a member.
    let kafka = common::stack().is_kafka();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let d = admin_ext::describe_consumer_groups(
            &admin(&flow.b),
            std::slice::from_ref(&group),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let joined = match &d[&group] {
            Ok(g) if kafka => g.members == 1 && g.state == admin_ext::GroupState::Stable,
            // tansu quirk: a member count of 0 for a group with a running consumer, but its
            // state is STABLE: both mean "active" to the checkpoint task.
            Ok(g) => g.members > 0 || g.state == admin_ext::GroupState::Stable,
            Err(_) => false,
        };
        if joined {
            break;
        }
        assert!(Instant::now() < deadline, "consumer never joined: {d:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    commit(&flow.a, &group, &[(&topic, 0, 12)]).await;
    let report = flow.run_ok();
    stop.store(true, Ordering::SeqCst);
    member.join().unwrap();
    let cp = &report["checkpoints"];
    assert_eq!(cp["emitted"], 1, "the checkpoint itself is written: {cp:#}");
    assert_eq!(
        cp["groups_skipped_active"],
        serde_json::json!([group]),
        "{cp:#}"
    );
    assert_eq!(cp["groups_synced"], serde_json::json!([]), "{cp:#}");
    assert!(
        group_offsets(&flow.b, &group).await.is_empty(),
        "nothing committed into the active group"
    );
}

/// Two tansu brokers of our own (whichever broker the stack runs: the heartbeat topic name is
/// shared by every flow, so this test needs clusters no other test writes to), stopped by their
/// process ids when dropped.
struct PrivateClusters {
    a: String,
    b: String,
    _servers: [common::faults::PrivateServer; 2],
}

impl PrivateClusters {
    fn start() -> PrivateClusters {
        let servers = [
            common::faults::PrivateServer::tansu(),
            common::faults::PrivateServer::tansu(),
        ];
        PrivateClusters {
            a: servers[0].bootstrap(),
            b: servers[1].bootstrap(),
            _servers: servers,
        }
    }
}

/// Heartbeats in a topic, with each record's timestamp.
async fn heartbeats(bootstrap: &str, topic: &str) -> Vec<(mirrorslice::wire::Heartbeat, i64)> {
    common::consume_all(bootstrap, topic, 1)
        .await
        .iter()
        .map(|r| {
            let hb = mirrorslice::wire::Heartbeat::decode(
                r.key.as_ref().unwrap(),
                r.value.as_ref().unwrap(),
            )
            .expect("heartbeat decodes (§4.4)");
            (hb, r.timestamp.to_millis().unwrap())
        })
        .collect()
}

// §9, §12.8 #78 ("heartbeats exists on both clusters, and primary.heartbeats on backup"), §1.3:
// the reverse pair is disabled, yet its heartbeat connector emits into the source cluster; the
// forward pair replicates that topic as `<source>.heartbeats` and emits into its own target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_reach_the_target_as_remote_heartbeats_topics() {
    let clusters = PrivateClusters::start();
    let flow = Flow::between(&clusters.a, &clusters.b, "");
    let (src, dst) = (flow.source.clone(), flow.target.clone());
    flow.edit_config(|body| {
        body.replace(
            &format!("{dst}->{src}.emit.heartbeats.enabled = false\n"),
            "",
        )
    });
    let topic = format!("t-{src}");
    common::create_topic(&clusters.a, &topic, 1, &[]).await;
    common::produce(&clusters.a, &topic, &values(1, 5, "h")).await;

    // B->A only emits heartbeats (its `enabled` is false).
    let before_ms = chrono::Utc::now().timestamp_millis();
    let reverse = flow.run_flow(&format!("{dst}->{src}"));
    assert_eq!(reverse["records"], 0);
    assert_eq!(reverse["source_tasks"], 0);
    assert_eq!(reverse["rpo_ms"], Value::Null, "no replication, no RPO");
    assert_eq!(reverse["checkpoints"]["status"], "disabled");
    let hb = &reverse["heartbeats"];
    assert_eq!(hb["status"], "ran", "{hb:#}");
    assert_eq!(hb["topic_created"], true, "{hb:#}");
    assert!(hb["emitted"].as_u64().unwrap() >= 1, "{hb:#}");
    let on_a = heartbeats(&clusters.a, "heartbeats").await;
    assert!(!on_a.is_empty());
    for (h, ts) in &on_a {
        assert_eq!(
            (
                h.source_cluster_alias.as_str(),
                h.target_cluster_alias.as_str()
            ),
            (dst.as_str(), src.as_str())
        );
        assert_eq!(*ts, h.timestamp, "record timestamp = heartbeat timestamp");
        assert!(h.timestamp >= before_ms);
    }

    // A->B replicates them, and emits its own into B.
    let forward = flow.run_ok();
    assert_eq!(forward["caught_up"], true, "{forward:#}");
    assert_eq!(forward["records"], 5 + on_a.len() as u64, "{forward:#}");
    let rpo = forward["rpo_ms"].as_i64().expect("caught up: RPO known");
    assert!((0..10_000).contains(&rpo), "rpo {rpo}");
    assert!(forward["heartbeats"]["emitted"].as_u64().unwrap() >= 1);
    let remote = heartbeats(&clusters.b, &format!("{src}.heartbeats")).await;
    assert_eq!(
        remote.iter().map(|(h, _)| h.clone()).collect::<Vec<_>>(),
        on_a.iter().map(|(h, _)| h.clone()).collect::<Vec<_>>(),
        "replicated byte for byte"
    );
    let on_b = heartbeats(&clusters.b, "heartbeats").await;
    assert!(on_b
        .iter()
        .any(|(h, _)| h.source_cluster_alias == src && h.target_cluster_alias == dst));

    // emit.heartbeats.enabled=false: the topic is still ensured, nothing is emitted.
    let quiet = Flow::between(&clusters.a, &clusters.b, "emit.heartbeats.enabled = false");
    let report = quiet.run_ok();
    assert_eq!(report["heartbeats"]["status"], "disabled");
    assert_eq!(report["heartbeats"]["emitted"], 0);
    assert!(!heartbeats(&clusters.b, "heartbeats")
        .await
        .iter()
        .any(|(h, _)| h.source_cluster_alias == quiet.source));
}

// RPO when a slice does not catch up: the age of the oldest record not yet replicated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpo_of_a_slice_that_falls_behind_is_the_age_of_the_oldest_missing_record() {
    let flow = Flow::new("");
    // One record per produce request on the target: slow enough not to catch up in a second.
    flow.edit_config(|body| body + &format!("{}.producer.batch.num.messages = 1\n", flow.target));
    let topic = format!("slow-{}", flow.source);
    common::create_topic(&flow.a, &topic, 2, &[]).await;
    let hour_ago = chrono::Utc::now().timestamp_millis() - 3_600_000;
    // Enough that the slice cannot copy them all: ~4,000 records/s here one per request.
    let total = 60_000;
    let data: Vec<TestRecord> = (0..total)
        .map(|i| TestRecord {
            partition: i % 2,
            key: None,
            value: Some(vec![b'v'; 64]),
            headers: vec![],
            // Oldest first, one millisecond apart.
            timestamp: Some(hour_ago + i as i64),
        })
        .collect();
    common::produce(&flow.a, &topic, &data).await;
    let report = flow.run_flow_for(&flow.name(), "6s");
    assert_eq!(report["caught_up"], false, "{report:#}");
    let copied = report["records"].as_i64().unwrap();
    assert!(copied < total as i64, "{report:#}");
    let rpo = report["rpo_ms"]
        .as_i64()
        .unwrap_or_else(|| panic!("RPO read from the source: {report:#}"));
    // The oldest missing record was produced about an hour ago, after those copied.
    let newest_possible = 3_600_000 + 60_000;
    assert!(
        (3_600_000 - total as i64..newest_possible).contains(&rpo),
        "rpo {rpo} for {copied} records copied"
    );
}
