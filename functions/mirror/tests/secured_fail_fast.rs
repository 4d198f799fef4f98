//! A Lambda invocation whose cluster refuses the password fails within seconds, naming the
//! cluster and the cause, not at its deadline (librdkafka retries a refused login forever).
//! Apache Kafka stack only: its cluster A serves the secured listeners.

#[macro_use]
mod lambda;
#[path = "../../../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::secured::{sasl, secured};
use lambda::{Function, RuntimeStub};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;

/// Well before the invocation's own timeout (60 s below).
const AT_ONCE: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_fails_the_invocation_at_once_naming_the_cluster() {
    let Some(sec) = secured() else { return };
    let stack = common::stack();
    let (source, target) = (
        common::unique("ffs").replace('-', ""),
        common::unique("fft").replace('-', ""),
    );
    let extra = sasl(
        &source,
        "SASL_PLAINTEXT",
        "SCRAM-SHA-512",
        &sec.scram_user,
        "wrong",
    );
    let body =
        common::flow_properties_between(&source, &sec.sasl_plaintext, &target, &stack.b, &extra);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    std::fs::write(&config, body).unwrap();
    let table = common::unique("ff-leases");
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &table);
    leases.create_table_if_missing().await.unwrap();

    let mut stub = RuntimeStub::start();
    let mut function = Function::start(&stub.addr, &config, &table);
    let flow = format!("{source}->{target}");
    let posted = stub.invoke(
        "inv-wrong-password",
        serde_json::json!({"flow": flow}),
        Duration::from_secs(60),
    );
    stub.finish();
    function.wait_exit(Duration::from_secs(30));

    let took = Duration::from_millis(posted.at_ms.saturating_sub(posted.dispatched_ms));
    assert!(took < AT_ONCE, "the invocation took {took:?}: {posted:?}");
    assert_eq!(posted.kind, "error", "{posted:?}");
    let message = posted.body["errorMessage"].as_str().unwrap_or_default();
    let named = format!("cluster {source} ({}): connect:", sec.sasl_plaintext);
    assert!(message.contains(&named), "{posted:?}");
    assert!(message.contains("Authentication failed"), "{posted:?}");
}
