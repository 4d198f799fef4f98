//! `mirrorslice run` under DynamoDB leases: concurrent runs of one flow on "different machines".
//!
//! EventBridge Scheduler invokes at least once, so overlapping slices of one flow are normal on
//! Lambda. Each run here gets its *own* state directory, as separate containers would, so the
//! local file locks protect nothing: only the DynamoDB table (moto on the local stack) can keep
//! two runs off the same task. The result must still be an exact copy.

mod common;

use common::faults::{wait_for_exit, Frozen};
use common::TestRecord;
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use mirrorslice::lease::{connector_key, task_key, LeaseStore};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

struct Flow {
    source: String,
    target: String,
    config: std::path::PathBuf,
    table: String,
    _dir: tempfile::TempDir,
}

impl Flow {
    /// A flow with its own aliases, topic filter and lease table.
    async fn new(extra: &str) -> Flow {
        let stack = common::stack();
        let source = common::unique("lsrc").replace('-', "");
        let target = common::unique("ldst").replace('-', "");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mm2.properties");
        let body = common::flow_properties(&source, &target, extra);
        std::fs::write(&config, body).unwrap();
        let table = common::unique("slice-leases");
        DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &table)
            .create_table_if_missing()
            .await
            .unwrap();
        Flow {
            source,
            target,
            config,
            table,
            _dir: dir,
        }
    }

    fn name(&self) -> String {
        format!("{}->{}", self.source, self.target)
    }

    /// `mirrorslice run` with the lease table in the environment and a state directory of its
    /// own (the caller keeps the TempDir alive).
    fn command(&self, state: &tempfile::TempDir) -> Command {
        self.command_for(state, "60s")
    }

    /// [`Flow::command`] with another `--max-duration`.
    fn command_for(&self, state: &tempfile::TempDir, max_duration: &str) -> Command {
        let mut cmd = Command::new(common::mirrorslice_bin());
        cmd.arg("run")
            .arg(&self.config)
            .args([
                "--flow",
                &self.name(),
                "--max-duration",
                max_duration,
                "--json",
            ])
            .env("MIRRORSLICE_STATE_DIR", state.path())
            .env("MIRRORSLICE_LEASE_TABLE", &self.table)
            .env("MIRRORSLICE_LOG", "warn");
        for (k, v) in common::stack().env() {
            cmd.env(k, v);
        }
        cmd
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_concurrent_runs_share_one_flow_exactly() {
    let stack = common::stack();
    let flow = Flow::new("").await;
    let name = flow.name();
    let body = std::fs::read_to_string(&flow.config).unwrap() + &format!("{name}.tasks.max = 4\n");
    std::fs::write(&flow.config, body).unwrap();
    let topic = format!("lease-{}", flow.source);
    let partitions = 4;
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    let data: Vec<TestRecord> = (0..4_000usize)
        .map(|i| TestRecord {
            partition: (i % partitions as usize) as i32,
            key: Some(format!("k{i}").into_bytes()),
            value: Some(format!("value {i}").into_bytes()),
            headers: vec![("h".into(), Some(b"x".to_vec()))],
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect();
    common::produce(&stack.a, &topic, &data).await;

    let states: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let children: Vec<_> = states
        .iter()
        .map(|state| {
            flow.command(state)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut copied = 0u64;
    let mut ran = 0usize;
    let mut held = 0usize;
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let slice = &report["slices"][0];
        assert_eq!(slice["ok"], true, "{slice:#}");
        copied += slice["records"].as_u64().unwrap();
        for task in slice["tasks"].as_array().unwrap() {
            match task["run"].as_str().unwrap() {
                "ran" => ran += 1,
                "held_elsewhere" => held += 1,
                other => panic!("unexpected task run {other}"),
            }
        }
    }
    // Every task ran exactly once at a time: across the four runs, each of the 4 tasks is
    // either run or found held; a run that found tasks held leaves them to the next slice.
    assert_eq!(ran + held, 4 * 4, "each run reports every task");
    assert!(ran >= 4, "every task ran somewhere: ran {ran}, held {held}");
    let state = tempfile::tempdir().unwrap();
    let out = flow.command(&state).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last: Value = serde_json::from_slice(&out.stdout).unwrap();
    copied += last["slices"][0]["records"].as_u64().unwrap();
    assert_eq!(last["slices"][0]["caught_up"], true, "{last:#}");

    assert_eq!(copied, data.len() as u64, "each record copied exactly once");
    let got = common::consume_all(&stack.b, &format!("{}.{topic}", flow.source), partitions).await;
    assert_eq!(got.len(), data.len(), "no duplicates on the target");
    let mut got: Vec<TestRecord> = got.iter().map(|r| r.to_test_record()).collect();
    let mut want = data.clone();
    let order = |r: &TestRecord| (r.partition, r.timestamp);
    got.sort_by_key(order);
    want.sort_by_key(order);
    assert_eq!(got, want, "byte-exact copy");

    // The leases really are in the table: released (expiry 0), fencing tokens counted up.
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &flow.table);
    for key in (0..4)
        .map(|t| task_key(&name, "MirrorSourceConnector", t))
        .chain([connector_key(&name, "MirrorSourceConnector")])
    {
        let lease = leases
            .describe(&key)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no lease item {key} in {}", flow.table));
        assert!(lease.fencing_token >= 1, "{lease:?}");
        assert_eq!(lease.expires_at_ms, 0, "released: {lease:?}");
    }
}

/// Every committed value of every source partition of `topic`, in commit order.

// A slice frozen (SIGSTOP) past its lease while another invocation takes the lease over and
// copies everything; then thawed. It must stop writing at once (its extra duplicates bounded by
// what it had in flight), report the lost lease and exit non-zero; no stored offset moves
// backwards, and nothing is lost. Unfenced, the thawed slice copied the rest of its backlog
// again (297,275 duplicates in the run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slice_frozen_past_its_lease_stops_writing_when_it_thaws() {
    let stack = common::stack();
    let flow = Flow::new("").await;
    let name = flow.name();
    let topic = format!("frozen-{}", flow.source);
    let remote = format!("{}.{topic}", flow.source);
    let (partitions, total) = (2, 200_000usize);
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    common::produce(&stack.a, &topic, &common::keyed_records(partitions, total)).await;
    // Small produce requests (one in flight), as in the tasks.max-change test: the first slice
    // must still be far from done when it freezes (once it had copied 108,724 by then).
    flow.append(&format!("{}.producer.batch.size = 4096\n", flow.target));

    // 1. The first slice copies until a few thousand records are on the target; then it freezes.
    let state1 = tempfile::tempdir().unwrap();
    let first = flow.spawn_long(&state1);
    common::faults::wait_for_copied(&stack.b, &remote, partitions, 5_000);
    let frozen = Frozen::pid(first.id());
    let at_freeze = common::consume_count_quick(&stack.b, &remote, partitions).await;
    assert!(
        at_freeze < total / 2,
        "froze too late to tell: {at_freeze} copied"
    );

    // 2. Its task lease expires; a second invocation takes it and copies everything.
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &flow.table);
    let key = task_key(&name, "MirrorSourceConnector", 0);
    common::faults::wait_for_lease_expiry(&leases, &key).await;
    let state2 = tempfile::tempdir().unwrap();
    let second = flow.command(&state2).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(report["slices"][0]["caught_up"], true, "{report:#}");
    let before_thaw = common::consume_count_quick(&stack.b, &remote, partitions).await;

    // 3. The frozen slice thaws: it finds its lease gone and stops.
    frozen.thaw();
    let (out, exit_after) = wait_for_exit(first, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "reports the lost lease: {stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let task = &report["slices"][0]["tasks"][0];
    let error = task["error"].as_str().unwrap_or_default();
    assert!(error.contains("lease lost"), "{task:#}");
    let after_thaw = common::consume_count_quick(&stack.b, &remote, partitions).await;
    // In flight at the freeze: at most the producer queue (4 MiB of 512 B records) and the rest
    // of one burst per partition.
    let in_flight_bound = 4 * 1024 * 1024 / 512 + 2 * 512;
    let extra = after_thaw
        .checked_sub(before_thaw)
        .unwrap_or_else(|| panic!("the target shrank from {before_thaw} to {after_thaw} records"));
    assert!(
        extra <= in_flight_bound,
        "{extra} records written after the thaw"
    );

    // 4. No stored offset moved backwards, and a last slice finds nothing left: nothing lost.
    for (partition, values) in
        common::committed_history(&common::stack().b, &flow.source, &topic).await
    {
        assert!(
            values.windows(2).all(|w| w[0] <= w[1]),
            "partition {partition}: committed offsets went backwards: {values:?}"
        );
        assert_eq!(
            values.last(),
            Some(&(total as i64 / 2 - 1)),
            "partition {partition}"
        );
    }
    let state3 = tempfile::tempdir().unwrap();
    let last = flow.command(&state3).output().unwrap();
    let report: Value = serde_json::from_slice(&last.stdout).unwrap();
    assert_eq!(report["slices"][0]["caught_up"], true, "{report:#}");
    assert_eq!(report["slices"][0]["records"], 0, "{report:#}");
    let got = common::consume_all(&stack.b, &remote, partitions).await;
    let keys: BTreeSet<(i32, Vec<u8>)> = got
        .iter()
        .map(|r| (r.partition, r.key.clone().unwrap()))
        .collect();
    assert_eq!(keys.len(), total, "every source record is on the target");
    eprintln!(
        "frozen slice: {at_freeze} copied before the freeze, {extra} written after the thaw \
         (bound {in_flight_bound}), exited {exit_after:?} after SIGCONT; {} duplicates in all",
        got.len() - total
    );
}

impl Flow {
    fn append(&self, lines: &str) {
        let body = std::fs::read_to_string(&self.config).unwrap();
        std::fs::write(&self.config, body + lines).unwrap();
    }

    fn set_tasks_max(&self, tasks: u32) {
        let body = std::fs::read_to_string(&self.config).unwrap();
        let kept: String = body
            .lines()
            .filter(|l| !l.contains(".tasks.max"))
            .map(|l| format!("{l}\n"))
            .collect();
        let name = self.name();
        std::fs::write(
            &self.config,
            kept + &format!("{name}.tasks.max = {tasks}\n"),
        )
        .unwrap();
    }

    /// A slice with room to copy for minutes, spawned with its output captured.
    fn spawn_long(&self, state: &tempfile::TempDir) -> std::process::Child {
        self.command_for(state, "300s")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Clean slices, each on a fresh state directory, until one catches up (at most `limit`);
    /// the last report.
    fn run_until_caught_up(&self, limit: usize) -> Value {
        for _ in 0..limit {
            let state = tempfile::tempdir().unwrap();
            let out = self.command(&state).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{stderr}");
            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
            if report["slices"][0]["caught_up"] == true {
                return report;
            }
        }
        panic!("not caught up after {limit} clean slices");
    }
}

/// The first slice, left to run, exits 0; then slices run until caught up (the last report).
fn exits_ok_then_catches_up(flow: &Flow, first: std::process::Child) -> Value {
    let (out, _) = wait_for_exit(first, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    flow.run_until_caught_up(5)
}

/// While `first` (spawned, copying) is frozen with its leases live, a second invocation with a
/// moved assignment must start nothing that `first` copies: every task waits for `first`'s
/// task 0. Returns the second invocation's report.
fn second_slice_while_frozen(flow: &Flow, first: &std::process::Child) -> Value {
    let frozen = Frozen::pid(first.id());
    let state = tempfile::tempdir().unwrap();
    let second = flow.command(&state).output().unwrap();
    frozen.thaw();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&second.stdout).unwrap();
    let slice = &report["slices"][0];
    assert_eq!(
        slice["records"], 0,
        "copied beside the running slice: {slice:#}"
    );
    for task in slice["tasks"].as_array().unwrap() {
        assert_eq!(task["run"], "waiting", "{task:#}");
        let waits_for = task["waiting_for"].as_str().unwrap();
        assert!(
            waits_for.starts_with("task 0 of the previous assignment, held by "),
            "{waits_for}"
        );
    }
    report
}

/// Asserts `remote` holds the `total` keyed records exactly once each, in source order.
async fn assert_exact_copy(remote: &str, partitions: i32, total: usize) {
    let order = common::copy_order(&common::stack().b, remote, partitions, total).await;
    assert_eq!(
        (order.lost, order.duplicates, order.restarts),
        (0, 0, 0),
        "{remote}: {order:?}"
    );
    assert!(order.first_copies_in_order, "{remote}: {order:?}");
}

// A topic that sorts first arrives while a slice copies: the round robin moves the old topic's
// partition from task 0 to task 1, which no invocation holds. Without the assignment record
// the second invocation copied it beside the first (the run: 164,000 records on the
// target for 84,000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_topic_sorting_first_starts_nothing_beside_the_running_slice() {
    let stack = common::stack();
    let flow = Flow::new("").await;
    flow.set_tasks_max(2);
    // Small produce requests (one in flight): the first slice must still be copying when it
    // freezes, after the new topic was created and filled, however fast the machine copies.
    flow.append(&format!("{}.producer.batch.size = 4096\n", flow.target));
    let (old, new) = (format!("m-{}", flow.source), format!("a-{}", flow.source));
    let (old_remote, new_remote) = (
        format!("{}.{old}", flow.source),
        format!("{}.{new}", flow.source),
    );
    let total = 100_000;
    common::create_topic(&stack.a, &old, 1, &[]).await;
    common::produce(&stack.a, &old, &common::keyed_records(1, total)).await;

    let state1 = tempfile::tempdir().unwrap();
    let first = flow.spawn_long(&state1);
    common::faults::wait_for_copied(&stack.b, &old_remote, 1, 2_000);
    common::create_topic(&stack.a, &new, 1, &[]).await;
    common::produce(&stack.a, &new, &common::keyed_records(1, 1_000)).await;
    let second = second_slice_while_frozen(&flow, &first);
    assert_eq!(second["slices"][0]["tasks"].as_array().unwrap().len(), 2);

    let last = exits_ok_then_catches_up(&flow, first);
    let ran = last["slices"][0]["tasks"].as_array().unwrap();
    assert!(ran.iter().all(|t| t["run"] == "ran"), "{last:#}");
    assert_exact_copy(&old_remote, 1, total).await;
    assert_exact_copy(&new_remote, 1, 1_000).await;
}

// `tasks.max` raised while a slice copies: partition 1 moves to the new task 1. Without the
// assignment record a second invocation won task 1's (free) lease and copied partition 1 beside
// the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_max_change_starts_nothing_beside_the_running_slice() {
    let stack = common::stack();
    let flow = Flow::new("").await;
    flow.set_tasks_max(1);
    // Small produce requests (one in flight): the first slice must still be copying when it
    // freezes, however fast the machine copies (it once finished first on a loaded machine).
    flow.append(&format!("{}.producer.batch.size = 4096\n", flow.target));
    let topic = format!("m-{}", flow.source);
    let remote = format!("{}.{topic}", flow.source);
    let (partitions, total) = (2, 100_000);
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    common::produce(&stack.a, &topic, &common::keyed_records(partitions, total)).await;

    let state1 = tempfile::tempdir().unwrap();
    let first = flow.spawn_long(&state1);
    common::faults::wait_for_copied(&stack.b, &remote, partitions, 2_000);
    flow.set_tasks_max(2);
    let second = second_slice_while_frozen(&flow, &first);
    assert_eq!(second["slices"][0]["tasks"].as_array().unwrap().len(), 2);

    let last = exits_ok_then_catches_up(&flow, first);
    let ran = last["slices"][0]["tasks"].as_array().unwrap();
    assert_eq!(ran.len(), 2, "the new assignment runs: {last:#}");
    assert_exact_copy(&remote, partitions, total).await;
}

/// Children of a storm, SIGKILLed by PID when dropped: a failing test leaves no slice running.
struct Storm {
    children: Vec<(std::process::Child, tempfile::TempDir)>,
    kills: usize,
    /// Slices that ended by themselves with exit 1 (a lease lost to a successor).
    lost_leases: usize,
}

impl Storm {
    /// SIGKILLs the child at `idx` and reaps it.
    fn kill(&mut self, idx: usize) {
        let (mut child, _state) = self.children.swap_remove(idx);
        if child.try_wait().unwrap().is_none() {
            common::faults::signal(child.id(), nix::sys::signal::Signal::SIGKILL);
            self.kills += 1;
        }
        child.wait().unwrap();
    }

    /// Reaps children that ended by themselves; each must have exited 0 or 1 (a slice that
    /// found its lease taken over), never crashed.
    fn reap(&mut self) {
        let mut i = 0;
        while i < self.children.len() {
            if let Some(status) = self.children[i].0.try_wait().unwrap() {
                let log = self.children[i].1.path().join("stderr");
                let stderr = std::fs::read_to_string(log).unwrap_or_default();
                assert!(matches!(status.code(), Some(0 | 1)), "{status:?}: {stderr}");
                self.lost_leases += usize::from(status.code() == Some(1));
                self.children.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }
}

impl Drop for Storm {
    fn drop(&mut self) {
        while !self.children.is_empty() {
            self.kill(0);
        }
    }
}

/// A small xorshift: the storm's timing varies per run; the seed is printed to replay it.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

// The kill -9 storm: overlapping `mirrorslice run` processes under the DynamoDB lease,
// SIGKILLed at random while the source is being written; then clean slices. Nothing may be lost
// or reordered, and a kill may re-copy only what its slice copied since its last position commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_storm_loses_nothing_and_duplicates_little() {
    let stack = common::stack();
    let flow =
        Flow::new("mirrorslice.lease.duration = 4s\nmirrorslice.lease.skew.allowance = 1s\n").await;
    flow.set_tasks_max(2);
    let topic = format!("storm-{}", flow.source);
    let remote = format!("{}.{topic}", flow.source);
    // A small backlog, then a steady stream (~10,000 records/s) while the storm goes on: each
    // slice starts behind (by what arrived while the leases of killed slices ran out) and
    // catches up, so kills land before, during and after copies.
    let (partitions, total, backlog) = (4, 200_000usize, 20_000usize);
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    let data = common::keyed_records(partitions, total);
    common::produce(&stack.a, &topic, &data[..backlog]).await;
    let writer = {
        let (bootstrap, topic) = (stack.a.clone(), topic.clone());
        tokio::spawn(async move {
            for part in data[backlog..].chunks(3_000) {
                common::produce(&bootstrap, &topic, part).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };

    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("kill storm seed {seed}");
    let mut storm = Storm {
        children: Vec::new(),
        kills: 0,
        lost_leases: 0,
    };
    let storm_started = std::time::Instant::now();
    for _ in 0..500 {
        if storm.kills >= 25 || storm_started.elapsed() > Duration::from_secs(240) {
            break;
        }
        storm.reap();
        while storm.children.len() < 3 {
            let state = tempfile::tempdir().unwrap();
            let stderr = std::fs::File::create(state.path().join("stderr")).unwrap();
            let child = flow
                .command(&state)
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .unwrap();
            storm.children.push((child, state));
        }
        tokio::time::sleep(Duration::from_millis(200 + next_random(&mut seed) % 1_300)).await;
        // The victim among those still running: a slice that found its tasks held exits at
        // once, and killing what already ended would not be a kill.
        storm.reap();
        if !storm.children.is_empty() {
            let victim = (next_random(&mut seed) % storm.children.len() as u64) as usize;
            storm.kill(victim);
        }
    }
    let (kills, lost_leases) = (storm.kills, storm.lost_leases);
    assert!(kills >= 25, "only {kills} kills");
    drop(storm);
    let during = common::consume_count_quick(&stack.b, &remote, partitions).await;
    eprintln!(
        "kill storm: {during} records on the target when the storm ended after {:?}",
        storm_started.elapsed()
    );
    tokio::time::timeout(Duration::from_secs(120), writer)
        .await
        .expect("the writer finished")
        .unwrap();

    // The leases of the killed slices expire; then clean slices.
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &flow.table);
    for task in 0..2 {
        let key = task_key(&flow.name(), "MirrorSourceConnector", task);
        common::faults::wait_for_lease_expiry(&leases, &key).await;
    }
    let last = flow.run_until_caught_up(5);
    assert_eq!(last["slices"][0]["ok"], true, "{last:#}");
    let order = common::copy_order(&stack.b, &remote, partitions, total).await;
    eprintln!(
        "kill storm: {kills} kills, {lost_leases} lost leases, {} records, {} lost, \
         {} duplicates ({:.2} %), {} restarts, the largest going back {} records",
        total,
        order.lost,
        order.duplicates,
        100.0 * order.duplicates as f64 / total as f64,
        order.restarts,
        order.largest_step_back
    );
    assert_eq!(order.lost, 0, "{order:?}");
    assert!(order.first_copies_in_order, "{order:?}");
    // Each kill re-copies what its slice wrote since its last position commit. A task commits
    // after every 1 MiB acknowledged (or every second) and copies on while that commit is
    // pending until another 1 MiB is acknowledged, and the slice's producer queue (4 MiB) keeps
    // delivering meanwhile; what it delivers waits for the next commit: at most ~6 MiB,
    // ~12,000 of these 512 B records, per restart. Measured before copying went on during a
    // commit: up to 2,788 on Kafka; on tansu 1,500-4,500 here and 6,377 once under CI load.
    // With one commit a second, a slice catching up re-copied up to a whole partition's
    // backlog (~25,000); two writers at once double whole partitions.
    const MAX_RECOPY_PER_RESTART: usize = (2 + 4) * 1024 * 1024 / 512;
    assert!(
        order.duplicates <= order.restarts * MAX_RECOPY_PER_RESTART,
        "more than {MAX_RECOPY_PER_RESTART} records re-copied per restart: {order:?}"
    );
    // In all, it depends on how many kills land mid-copy: 0.7-5.2 % measured on Kafka (2-5
    // restarts of up to 2,788 records), 0.7 % on tansu; with a commit every 4 MiB, tansu in CI
    // re-copied 26 % (16 restarts of ~3,300 records).
    assert!(
        order.duplicates * 8 <= total,
        "more than an eighth duplicated: {order:?}"
    );
    // A re-copy starts once per partition of a slice that stopped without its last commit;
    // two writers at once would restart again and again as their copies interleave.
    let stops = (kills + lost_leases) * partitions as usize;
    assert!(order.restarts <= stops, "{order:?} after {stops} stops");
}
