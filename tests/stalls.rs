//! Slices against a stalled server (issue #17): a server frozen (SIGSTOP) mid-slice must not hold
//! the slice past its deadline (plus a small documented bound), the slice must report the
//! failure, and the next slice after the server recovers must lose nothing. Each test freezes
//! servers of its own (`common::faults`), never the shared stack.

mod common;

use common::faults::{wait_for_exit, PrivateServer, Watermarks};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long after its deadline a slice may still be running when a server stalls: the
/// consumer's close and the producers' purge (0.5 s each), and the CLI's wait for its last
/// status records (1 s). Documented in the README's Guarantees.
const EXIT_BOUND: Duration = Duration::from_secs(3);

struct StallFlow {
    source: String,
    target: String,
    config: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl StallFlow {
    fn new(a: &str, b: &str) -> StallFlow {
        let source = common::unique("ssrc").replace('-', "");
        let target = common::unique("sdst").replace('-', "");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mm2.properties");
        std::fs::write(
            &config,
            common::flow_properties_between(&source, a, &target, b, ""),
        )
        .unwrap();
        StallFlow {
            source,
            target,
            config,
            _dir: dir,
        }
    }

    /// Appends `lines` to the flow's properties.
    fn configure(&self, lines: &str) {
        let body = std::fs::read_to_string(&self.config).unwrap();
        std::fs::write(&self.config, body + lines).unwrap();
    }

    /// Rewrites the flow's properties without the lines that contain `setting`.
    fn unconfigure(&self, setting: &str) {
        let body = std::fs::read_to_string(&self.config).unwrap();
        let kept: Vec<&str> = body.lines().filter(|l| !l.contains(setting)).collect();
        std::fs::write(&self.config, kept.join("\n") + "\n").unwrap();
    }

    fn command(&self, state: &tempfile::TempDir, max_duration: &str) -> Command {
        let mut cmd = Command::new(common::mirrorslice_bin());
        cmd.arg("run")
            .arg(&self.config)
            .args(["--flow", &format!("{}->{}", self.source, self.target)])
            .args(["--max-duration", max_duration, "--json"])
            .env("MIRRORSLICE_STATE_DIR", state.path())
            .env("MIRRORSLICE_LOG", "warn");
        cmd
    }
}

// The target broker (a private one, of the stack's kind) freezes while a 15 s slice is copying: the slice ends by its deadline plus
// EXIT_BOUND, reports `ok: false` and exits 1; after the broker thaws, the next slice copies the
// rest and every record is on the target. Before the fix the slice ran 40 s for a 15 s budget
// and reported `ok: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_broker_stalled_mid_slice_ends_the_slice_by_its_deadline() {
    let stack = common::stack();
    let broker = PrivateServer::broker();
    let flow = StallFlow::new(&stack.a, &broker.bootstrap());
    // A short lease, renewed while the target is stalled: the stall must not pass for a lost
    // lease (an earlier version gave up waiting at the validity known when the wait began).
    flow.configure("mirrorslice.lease.duration = 3s\nmirrorslice.lease.skew.allowance = 1s\n");
    let topic = format!("stall-{}", flow.source);
    let remote = format!("{}.{topic}", flow.source);
    let (partitions, total) = (2, 100_000usize);
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    common::produce(&stack.a, &topic, &common::keyed_records(partitions, total)).await;

    let state = tempfile::tempdir().unwrap();
    let max = Duration::from_secs(15);
    let started = Instant::now();
    let slice = flow
        .command(&state, "15s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::faults::wait_for_copied(&broker.bootstrap(), &remote, partitions, 5_000);
    let frozen = broker.freeze();
    let frozen_at = started.elapsed();
    let (out, _) = wait_for_exit(slice, max + Duration::from_secs(60));
    let took = started.elapsed();
    // Whichever wait the deadline ends (a commit's confirmation, a full producer queue), the
    // error says so.
    let overrun = assert_failed_in_time(&out, took, max, "the slice's deadline");

    frozen.thaw();
    let state = tempfile::tempdir().unwrap();
    assert_caught_up(flow.command(&state, "60s"));
    let duplicates =
        common::assert_all_copied(&broker.bootstrap(), &remote, partitions, total).await;
    eprintln!(
        "target stalled at {frozen_at:?}: the 15 s slice ended after {took:?} ({overrun:?} past \
         its deadline); {} duplicates after the next slice",
        duplicates
    );
}

// The lease table (a private moto) freezes while a slice is copying. The slice's task lease
// (4 s, trusted 3 s after each renewal was sent) cannot be renewed: the copy must stop within
// that trust, no offsets may be committed after it, and the slice must end by its deadline plus
// EXIT_BOUND reporting the failure; after the table thaws, the next slice loses nothing. Before
// the fix, copying went on for the whole outage and the slice reported `ok: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_table_stalled_mid_slice_stops_the_copy_within_the_lease() {
    let stack = common::stack();
    let table_server = PrivateServer::moto();
    let endpoint = format!("http://{}", table_server.bootstrap());
    let table = common::unique("stall-leases");
    DynamoLeaseStore::with_endpoint(&endpoint, "us-east-1", &table)
        .create_table_if_missing()
        .await
        .unwrap();
    let flow = StallFlow::new(&stack.a, &stack.b);
    let trusted = Duration::from_secs(3);
    // Commit often (so a late commit would show), and send one record per produce request so
    // the copy is still running when the lease runs out.
    flow.configure(&format!(
        "mirrorslice.lease.duration = 4s\n\
         mirrorslice.lease.skew.allowance = 1s\n\
         {t}.offset.flush.interval.ms = 200\n\
         {t}.producer.batch.num.messages = 1\n",
        t = flow.target
    ));
    let topic = format!("stall-{}", flow.source);
    let remote = format!("{}.{topic}", flow.source);
    let (partitions, total) = (2, 100_000usize);
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    common::produce(&stack.a, &topic, &common::keyed_records(partitions, total)).await;
    let table_env = |cmd: &mut Command| {
        cmd.env("MIRRORSLICE_LEASE_TABLE", &table)
            .env("AWS_ENDPOINT_URL_DYNAMODB", &endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "stalls")
            .env("AWS_SECRET_ACCESS_KEY", "stalls");
    };

    let state = tempfile::tempdir().unwrap();
    let max = Duration::from_secs(20);
    let started = Instant::now();
    let mut command = flow.command(&state, "20s");
    table_env(&mut command);
    let slice = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::faults::wait_for_copied(&stack.b, &remote, partitions, 2_000);
    let frozen = table_server.freeze();
    let frozen_at = started.elapsed();
    let frozen_wall_ms = chrono::Utc::now().timestamp_millis();
    // Watch the target until a second after the trust ran out (whatever was in flight then is
    // delivered by that time): when did the writes stop?
    let target = Watermarks::new(&stack.b);
    let (mut stopped_with, mut last_write) = (target.total(&remote, partitions), frozen_at);
    while started.elapsed() < frozen_at + trusted + Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(50));
        let now = target.total(&remote, partitions);
        if now != stopped_with {
            (stopped_with, last_write) = (now, started.elapsed());
        }
    }
    let (out, _) = wait_for_exit(slice, max + Duration::from_secs(60));
    let took = started.elapsed();
    let written_late = target.total(&remote, partitions) - stopped_with;
    let overrun = assert_failed_in_time(&out, took, max, "lease lost");
    assert!(
        (stopped_with as usize) < total,
        "the copy finished before the lease ran out: nothing was tested"
    );
    assert_eq!(written_late, 0, "records written after the lease ran out");
    let last_commit_ms = last_commit_ms(&stack.b, &flow.source).await;
    let trusted_until_ms = frozen_wall_ms + trusted.as_millis() as i64;
    assert!(
        last_commit_ms <= trusted_until_ms,
        "offsets committed {} ms after the lease ran out",
        last_commit_ms - trusted_until_ms
    );

    frozen.thaw();
    flow.unconfigure("batch.num.messages");
    let state = tempfile::tempdir().unwrap();
    let mut command = flow.command(&state, "60s");
    table_env(&mut command);
    assert_caught_up(command);
    let duplicates = common::assert_all_copied(&stack.b, &remote, partitions, total).await;
    eprintln!(
        "lease table stalled at {frozen_at:?}; writes stopped {:?} later with {stopped_with} \
         copied; the 20 s slice ended after {took:?} ({overrun:?} past its deadline); last commit {} ms before the trust \
         ran out; {} duplicates after the next slice",
        last_write.saturating_sub(frozen_at),
        trusted_until_ms - last_commit_ms,
        duplicates
    );
}

/// Checks that a slice that met a stalled server failed loudly and in time: exit 1, `ok: false`,
/// its task's error naming `cause`, and an end at most [`EXIT_BOUND`] past its `max` duration.
/// How far past its deadline it ended.
fn assert_failed_in_time(
    out: &std::process::Output,
    took: Duration,
    max: Duration,
    cause: &str,
) -> Duration {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the failure is reported: {stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false, "{report:#}");
    let task = &report["slices"][0]["tasks"][0];
    let error = task["error"].as_str().unwrap_or_default();
    assert!(error.contains(cause), "{task:#}");
    let overrun = took.saturating_sub(max);
    assert!(
        overrun <= EXIT_BOUND,
        "ended {overrun:?} after its deadline: {stderr}"
    );
    overrun
}

/// Runs a slice that must succeed and catch up.
fn assert_caught_up(mut command: Command) {
    let next = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&next.stdout).unwrap();
    assert_eq!(report["slices"][0]["caught_up"], true, "{report:#}");
}

/// When the last record of the flow's Connect offsets topic (on the target) was written.
async fn last_commit_ms(target: &str, source: &str) -> i64 {
    let offsets_topic = format!("mm2-offsets.{source}.internal");
    let records = common::consume_all(target, &offsets_topic, 25).await;
    records
        .iter()
        .filter_map(|r| r.timestamp.to_millis())
        .max()
        .expect("the slice committed offsets before the stall")
}
