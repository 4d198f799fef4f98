//! The built `mirror` binary driven over the real Lambda Runtime API protocol.
//!
//! Why a hand-written stub instead of an emulator: the protocol is four HTTP calls, and owning
//! the server lets the test set each invocation's deadline, see *when* the response is posted
//! relative to it, and read the function's stdout (EMF) and stderr (JSON logs) separately. The
//! stub long-polls `GET /2018-06-01/runtime/invocation/next` until the test queues an
//! invocation, as Lambda does; once the test is done it answers `/next` with a 500, on which the
//! runtime client exits — so the process ends without being killed.
//!
//! Everything else is real: the local stack's brokers and moto (DynamoDB API) for the leases.

// First: its `env!` serves the shared harness below (see tests/lambda).
#[macro_use]
mod lambda;
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::TestRecord;
use lambda::{emf_lines, flow_config, Function, RuntimeStub};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use mirrorslice::lease::{task_key, LeaseStore};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invocations_over_the_runtime_api() {
    let stack = common::stack();
    let source = common::unique("lsrc").replace('-', "");
    let target = common::unique("ldst").replace('-', "");
    let flow = format!("{source}->{target}");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    // The first data slice sends one record per produce request, so a short deadline cuts it.
    let throttled = flow_config(
        &source,
        &target,
        &format!("{target}.producer.batch.num.messages = 1"),
    );
    std::fs::write(&config, &throttled).unwrap();

    let table = common::unique("mirror-leases");
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &table);
    leases.create_table_if_missing().await.unwrap();

    let topic = format!("fn-{source}");
    let partitions = 4;
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    // Enough that the throttled copy (one record per request) cannot finish before the 8 s
    // deadline, whatever the producer settings.
    let total = 60_000usize;
    let data: Vec<TestRecord> = (0..total)
        .map(|i| TestRecord {
            partition: (i % partitions as usize) as i32,
            key: Some(format!("{i}").into_bytes()),
            value: Some(vec![b'v'; 200]),
            headers: vec![],
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect();
    common::produce(&stack.a, &topic, &data).await;

    let mut stub = RuntimeStub::start();
    let mut function = Function::start(&stub.addr, &config, &table);

    // 1. A flow the config does not have: a function error with its own type.
    let posted = stub.invoke(
        "inv-unknown",
        serde_json::json!({"flow": format!("{target}->nowhere")}),
        Duration::from_secs(20),
    );
    assert_eq!(posted.kind, "error", "{posted:?}");
    assert_eq!(posted.body["errorType"], "UnknownFlow", "{posted:?}");
    // lambda_runtime sends the header as "unhandled"; the type that shows is in the body.
    assert!(posted.error_type.is_some(), "{posted:?}");
    assert!(
        posted.body["errorMessage"]
            .as_str()
            .unwrap()
            .contains("nowhere"),
        "{posted:?}"
    );

    // 2. dry_run returns the plan of the flow.
    let posted = stub.invoke(
        "inv-plan",
        serde_json::json!({"flow": flow, "dry_run": true}),
        Duration::from_secs(20),
    );
    assert_eq!(posted.kind, "response", "{posted:?}");
    assert_eq!(posted.body["herder_pairs"], serde_json::json!([flow]));

    // 3. Another invocation holds the task's lease: a successful no-op.
    let foreign = leases
        .try_acquire(
            &task_key(&flow, "MirrorSourceConnector", 0),
            "another-invocation",
            Duration::from_secs(120),
        )
        .await
        .unwrap()
        .expect("lease is free");
    let posted = stub.invoke(
        "inv-held",
        serde_json::json!({"flow": flow}),
        Duration::from_secs(20),
    );
    assert_eq!(posted.kind, "response", "{posted:?}");
    let report = &posted.body;
    assert_eq!(report["records"], 0, "{report:#}");
    assert_eq!(report["tasks"][0]["run"], "held_elsewhere", "{report:#}");
    assert_eq!(report["caught_up"], false);
    leases.release(&foreign).await.unwrap();

    // 4. More data than fits before an 8 s deadline: the slice stops, commits and answers in
    // time, not caught up.
    let timeout = Duration::from_secs(8);
    let posted = stub.invoke("inv-cut", serde_json::json!({"flow": flow}), timeout);
    assert_eq!(posted.kind, "response", "{posted:?}");
    let report = posted.body.clone();
    let first_records = report["records"].as_u64().unwrap();
    assert!(first_records > 0, "copied something: {report:#}");
    assert!(
        (first_records as usize) < total,
        "the slice must be cut by its deadline: {report:#}"
    );
    assert_eq!(report["caught_up"], false, "{report:#}");
    assert_eq!(report["ok"], true, "{report:#}");
    assert!(
        posted.at_ms < posted.deadline_ms,
        "posted {} ms after the deadline",
        posted.at_ms - posted.deadline_ms
    );
    // Time left before the *slice* deadline (invocation deadline less the function's margin)
    // when the slice's last commit ended. Printed, not asserted: what the function promises is
    // the post before the invocation deadline, checked above; the default margin is sized from
    // this number.
    let margin_ms = report["deadline_margin_ms"].as_i64().unwrap();
    eprintln!(
        "deadline slice: {first_records} records in {} ms; slice deadline margin {margin_ms} ms; \
         response posted {} ms before the invocation deadline ({} ms after dispatch)",
        report["duration_ms"],
        posted.deadline_ms - posted.at_ms,
        posted.at_ms - posted.dispatched_ms,
    );

    // 5. The next invocations continue where it stopped; the config is re-read, so dropping the
    // throttle takes effect at once.
    std::fs::write(&config, flow_config(&source, &target, "")).unwrap();
    let mut copied = first_records;
    let mut last = Value::Null;
    for n in 0..5 {
        let posted = stub.invoke(
            &format!("inv-more-{n}"),
            serde_json::json!({"flow": flow}),
            Duration::from_secs(60),
        );
        assert_eq!(posted.kind, "response", "{posted:?}");
        assert!(posted.at_ms < posted.deadline_ms);
        copied += posted.body["records"].as_u64().unwrap();
        last = posted.body;
        if last["caught_up"] == true {
            break;
        }
    }
    assert_eq!(last["caught_up"], true, "{last:#}");
    assert_eq!(
        copied, total as u64,
        "the reports count each record once across slices"
    );
    let got = common::consume_all(&stack.b, &format!("{source}.{topic}"), partitions).await;
    let keys: BTreeSet<Vec<u8>> = got.iter().filter_map(|r| r.key.clone()).collect();
    assert_eq!(keys.len(), total, "every record reached the target");
    // At-least-once: records still in flight when the cut slice gave up waiting for their
    // acknowledgements may have landed without being committed, and are copied again.
    assert!(got.len() >= total);
    eprintln!(
        "target holds {} records for {total} sources ({} re-copied after the deadline cut)",
        got.len(),
        got.len() - total
    );

    // One EMF line per slice that ran, on stdout, nothing else there.
    stub.finish();
    let status = function.wait_exit(Duration::from_secs(20));
    assert!(!status.success(), "exits with an error once /next fails");
    let stdout = function.stdout();
    let emf = emf_lines(&stdout);
    let slices = 1 + 1 + (copied > first_records) as usize; // held + cut + at least one more
    assert!(emf.len() >= slices, "{stdout}");
    let mut records_in_emf = 0;
    for line in &emf {
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "mirrorslice", "{line}");
        assert_eq!(directive["Dimensions"], serde_json::json!([["Flow"]]));
        assert_eq!(line["Flow"], Value::from(flow.clone()));
        records_in_emf += line["Records"].as_u64().unwrap();
    }
    assert_eq!(records_in_emf, total as u64, "EMF Records add up: {stdout}");
    let cut = &emf[1];
    assert_eq!(cut["CaughtUp"], 0);
    assert_eq!(cut["Records"], first_records);

    // Logs are JSON lines on stderr.
    let stderr = function.stderr();
    let log_lines: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        log_lines
            .iter()
            .any(|l| l["fields"]["message"] == "slice starting"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "no ANSI colours in Lambda logs");
    // No task accumulates across invocations: the live task count after each slice is flat.
    let alive: Vec<u64> = log_lines
        .iter()
        .filter_map(|l| l["fields"]["alive_tasks"].as_u64())
        .collect();
    eprintln!("alive tokio tasks after each slice: {alive:?}");
    let per_slice: BTreeMap<usize, u64> = alive.iter().copied().enumerate().collect();
    assert!(alive.len() >= 3, "{stderr}");
    let first = per_slice[&0];
    assert!(
        alive.iter().all(|&n| n <= first + 2),
        "tokio tasks pile up across invocations: {alive:?}"
    );
}
