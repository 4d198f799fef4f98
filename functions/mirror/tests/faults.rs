//! The fault tests of `tests/stalls.rs` and `tests/lease_slices.rs`, through the `mirror`
//! Lambda binary, where the path differs from the CLI: the invocation's deadline comes from the
//! Runtime API (less `MIRRORSLICE_DEADLINE_MARGIN`), the response must be posted before it (or
//! Lambda kills the invocation and its report is lost), and the process-wide producers must be
//! settled before the handler returns (a frozen environment would send them on its next thaw).
//! Each test freezes servers or processes of its own (SIGSTOP, undone in a guard).

// First: its `env!` serves the shared harness below (see tests/lambda).
#[macro_use]
mod lambda;
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::faults::{wait_for_copied, Frozen, PrivateServer, Watermarks};
use lambda::{Function, Posted, RuntimeStub};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use mirrorslice::lease::task_key;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// One flow of the test's own between `a` and `b`, its config file and its lease table.
struct LambdaFlow {
    source: String,
    target: String,
    config: PathBuf,
    table: String,
    _dir: tempfile::TempDir,
}

impl LambdaFlow {
    /// A flow whose lease table `table` is created on `dynamodb`.
    async fn new(a: &str, b: &str, dynamodb: &str, extra: &str) -> LambdaFlow {
        let source = common::unique("fsrc").replace('-', "");
        let target = common::unique("fdst").replace('-', "");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mm2.properties");
        let extra = format!("{target}.offset.flush.interval.ms = 200\n{extra}");
        let body = common::flow_properties_between(&source, a, &target, b, &extra);
        std::fs::write(&config, body).unwrap();
        let table = common::unique("fault-leases");
        DynamoLeaseStore::with_endpoint(dynamodb, "us-east-1", &table)
            .create_table_if_missing()
            .await
            .unwrap();
        LambdaFlow {
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

    /// Send one record per produce request from now on (`true`) or not: a copy slow enough to
    /// be caught by a fault. The function re-reads its config at every invocation.
    fn throttle(&self, on: bool) {
        let setting = format!("{}.producer.batch.num.messages = 1", self.target);
        let body = std::fs::read_to_string(&self.config).unwrap();
        let kept: Vec<&str> = body.lines().filter(|l| *l != setting).collect();
        let mut body = kept.join("\n") + "\n";
        if on {
            body += &format!("{setting}\n");
        }
        std::fs::write(&self.config, body).unwrap();
    }

    /// A topic of the flow on `a` holding `total` records of 512 B over two partitions.
    async fn source_topic(&self, a: &str, total: usize) -> (String, i32) {
        let topic = format!("fault-{}", self.source);
        let partitions = 2;
        common::create_topic(a, &topic, partitions, &[]).await;
        common::produce(a, &topic, &common::keyed_records(partitions, total)).await;
        (format!("{}.{topic}", self.source), partitions)
    }
}

/// The slice report the function posted, after checking it is a response posted before the
/// invocation's deadline.
fn in_time(posted: &Posted) -> &Value {
    assert_eq!(posted.kind, "response", "{posted:?}");
    assert_before_deadline(posted);
    &posted.body
}

/// The message of a failed slice (a `SliceFailed` function error), after checking it was
/// posted before the invocation's deadline.
fn failed_in_time(posted: &Posted) -> &str {
    assert_eq!(posted.kind, "error", "{posted:?}");
    assert_eq!(posted.body["errorType"], "SliceFailed", "{posted:?}");
    assert_before_deadline(posted);
    posted.body["errorMessage"].as_str().unwrap_or_default()
}

fn assert_before_deadline(posted: &Posted) {
    assert!(
        posted.at_ms <= posted.deadline_ms,
        "posted {} ms after the invocation deadline",
        posted.at_ms - posted.deadline_ms
    );
}

/// Invokes `flow` until a slice reports it caught up (at most 5 invocations of 60 s).
fn invoke_until_caught_up(stub: &RuntimeStub, flow: &str, label: &str) {
    let mut last = Value::Null;
    for n in 0..5 {
        let posted = stub.invoke(
            &format!("{label}-{n}"),
            json!({ "flow": flow }),
            Duration::from_secs(60),
        );
        let report = in_time(&posted);
        assert_eq!(report["ok"], true, "{report:#}");
        if report["caught_up"] == true {
            return;
        }
        last = report.clone();
    }
    panic!("{flow} not caught up after 5 invocations: {last:#}");
}

/// The last `n` lines of a function's log.
fn last_lines(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Ends the function the way the tests of `runtime_api.rs` do (`/next` fails; it exits).
fn shut_down(mut stub: RuntimeStub, mut function: Function) {
    stub.finish();
    function.wait_exit(Duration::from_secs(30));
}

// The target broker (a private one, of the stack's kind) freezes while an invocation with a 15 s deadline is
// copying: the function must still post its response before the deadline, reporting the
// failure; after the broker thaws, the next invocations copy the rest and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_target_broker_still_gets_the_response_posted_in_time() {
    let stack = common::stack();
    let broker = PrivateServer::broker();
    let lease = "mirrorslice.lease.duration = 4s\nmirrorslice.lease.skew.allowance = 1s\n";
    let flow = LambdaFlow::new(&stack.a, &broker.bootstrap(), &stack.dynamodb, lease).await;
    // Unthrottled, the copy can finish (about 1.5 s) before the broker is frozen.
    flow.throttle(true);
    let total = 100_000;
    let (remote, partitions) = flow.source_topic(&stack.a, total).await;
    let stub = RuntimeStub::start();
    let function = Function::start(&stub.addr, &flow.config, &flow.table);

    stub.dispatch(
        "stalled",
        json!({ "flow": flow.name() }),
        Duration::from_secs(15),
    );
    wait_for_copied(&broker.bootstrap(), &remote, partitions, 1_000);
    let frozen = broker.freeze();
    let posted = stub.wait_posted("stalled", Duration::from_secs(45));
    let error = failed_in_time(&posted);
    // Whichever wait the deadline ends (a commit's confirmation, a full producer queue), the
    // error says so.
    assert!(error.contains("the slice's deadline"), "{error}");
    eprintln!(
        "stalled target: failure posted {} ms before the invocation deadline: {error}",
        posted.deadline_ms - posted.at_ms,
    );

    frozen.thaw();
    flow.throttle(false);
    // Its task's final status write was stalled too, so the lease was not given back by the
    // deadline: it expires instead (4 s here), and then the next invocation takes it.
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &flow.table);
    let key = task_key(&flow.name(), "MirrorSourceConnector", 0);
    common::faults::wait_for_lease_expiry(&leases, &key).await;
    invoke_until_caught_up(&stub, &flow.name(), "after-thaw");
    let duplicates =
        common::assert_all_copied(&broker.bootstrap(), &remote, partitions, total).await;
    eprintln!("stalled target: {duplicates} duplicates, nothing lost");
    shut_down(stub, function);
}

// The lease table (a private moto) freezes while an invocation is copying under a 4 s lease
// trusted 3 s: the copy stops within that trust, the task reports the lost lease, and the
// response is still posted before the deadline; after the table thaws, nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_lease_table_stops_the_copy_and_the_response_is_posted_in_time() {
    let stack = common::stack();
    let table_server = PrivateServer::moto();
    let endpoint = format!("http://{}", table_server.bootstrap());
    let lease = "mirrorslice.lease.duration = 4s\nmirrorslice.lease.skew.allowance = 1s\n";
    let flow = LambdaFlow::new(&stack.a, &stack.b, &endpoint, lease).await;
    flow.throttle(true);
    let total = 100_000;
    let (remote, partitions) = flow.source_topic(&stack.a, total).await;
    let stub = RuntimeStub::start();
    let env = [("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str())];
    let function = Function::start_with(&stub.addr, &flow.config, &flow.table, &env);

    // The deadline leaves the lease's 3 s of trust room after the freeze even when the phases
    // before the copy are slow (creating `__consumer_offsets` on a fresh Apache Kafka broker
    // takes seconds) and the throttled copy runs at a few hundred records a second.
    stub.dispatch(
        "stalled",
        json!({ "flow": flow.name() }),
        Duration::from_secs(30),
    );
    wait_for_copied(&stack.b, &remote, partitions, 500);
    let frozen = table_server.freeze();
    // Trusted for 3 s after the last renewal was sent (before the freeze); whatever was in
    // flight then is delivered within a second.
    let target = Watermarks::new(&stack.b);
    std::thread::sleep(Duration::from_secs(4));
    let stopped_with = target.total(&remote, partitions);
    let posted = stub.wait_posted("stalled", Duration::from_secs(50));
    let written_late = target.total(&remote, partitions) - stopped_with;
    let error = failed_in_time(&posted);
    assert!(error.contains("lease lost"), "{error}");
    assert!(
        (stopped_with as usize) < total,
        "copy done before the stall"
    );
    assert_eq!(written_late, 0, "records written after the lease ran out");

    frozen.thaw();
    flow.throttle(false);
    invoke_until_caught_up(&stub, &flow.name(), "after-thaw");
    let duplicates = common::assert_all_copied(&stack.b, &remote, partitions, total).await;
    eprintln!(
        "stalled lease table: copy stopped with {stopped_with} records; failure posted {} ms \
         before the invocation deadline; {duplicates} duplicates, nothing lost",
        posted.deadline_ms - posted.at_ms
    );
    shut_down(stub, function);
}

// A function frozen (SIGSTOP, as Lambda freezes an environment) past its lease while a second
// function takes the lease and copies everything; then thawed. It must stop writing at once
// (extra duplicates bounded by what it had in flight), post a response reporting the lost
// lease, and no stored offset moves backwards; nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_frozen_past_its_lease_stops_writing_when_it_thaws() {
    let stack = common::stack();
    let lease = "mirrorslice.lease.duration = 4s\nmirrorslice.lease.skew.allowance = 1s\n";
    let flow = LambdaFlow::new(&stack.a, &stack.b, &stack.dynamodb, lease).await;
    flow.throttle(true);
    let total = 100_000;
    let (remote, partitions) = flow.source_topic(&stack.a, total).await;
    let first_stub = RuntimeStub::start();
    let first = Function::start(&first_stub.addr, &flow.config, &flow.table);

    first_stub.dispatch(
        "frozen",
        json!({ "flow": flow.name() }),
        Duration::from_secs(60),
    );
    wait_for_copied(&stack.b, &remote, partitions, 2_000);
    let frozen = Frozen::pid(first.pid());
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &flow.table);
    let key = task_key(&flow.name(), "MirrorSourceConnector", 0);
    common::faults::wait_for_lease_expiry(&leases, &key).await;

    flow.throttle(false);
    let second_stub = RuntimeStub::start();
    let second = Function::start(&second_stub.addr, &flow.config, &flow.table);
    invoke_until_caught_up(&second_stub, &flow.name(), "successor");
    let target = Watermarks::new(&stack.b);
    let before_thaw = target.total(&remote, partitions);
    // The successor copied everything before the frozen function could write again: a record
    // missing here was lost at the handover, not by the thawed function. (Logs are shown only
    // if an assertion fails: the harness keeps a passing test's output.)
    eprintln!("successor's log:\n{}", last_lines(&second.stderr(), 200));
    common::assert_all_copied(&stack.b, &remote, partitions, total).await;

    frozen.thaw();
    let posted = first_stub.wait_posted("frozen", Duration::from_secs(60));
    let error = failed_in_time(&posted);
    assert!(error.contains("lease lost"), "{error}");
    let extra = target.total(&remote, partitions) - before_thaw;
    // In flight at the freeze: at most the producer queue (4 MiB of 512 B records) and the rest
    // of one burst per partition.
    let in_flight_bound = 4 * 1024 * 1024 / 512 + 2 * 512;
    assert!(
        extra <= in_flight_bound,
        "{extra} records written after the thaw"
    );

    let topic = remote.trim_start_matches(&format!("{}.", flow.source));
    let history = common::committed_history(&stack.b, &flow.source, topic).await;
    for (partition, values) in &history {
        assert!(
            values.windows(2).all(|w| w[0] <= w[1]),
            "partition {partition}: committed offsets went backwards: {values:?}"
        );
    }
    eprintln!("committed offsets: {history:?}\nthawed function's response: {posted:?}");
    eprintln!(
        "thawed function's log:\n{}",
        last_lines(&first.stderr(), 200)
    );
    let duplicates = common::assert_all_copied(&stack.b, &remote, partitions, total).await;
    eprintln!(
        "frozen function: {extra} records written after the thaw (bound {in_flight_bound}); \
         {duplicates} duplicates in all, nothing lost"
    );
    shut_down(second_stub, second);
    shut_down(first_stub, first);
}
