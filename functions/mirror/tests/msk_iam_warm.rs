//! MSK IAM in a warm Lambda: the process keeps its admin clients and producers across
//! invocations, and is frozen in between (here: SIGSTOP, as Lambda freezes an idle
//! environment). After a freeze longer than the tokens' validity, the next invocation must
//! authenticate every client with a fresh token. Apache Kafka stack only (its IAM listeners).

// First: its `env!` serves the shared harness below (see tests/lambda).
#[macro_use]
mod lambda;
#[path = "../../../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::faults::Frozen;
use lambda::{Function, RuntimeStub};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;

/// Tokens valid this long (`MIRRORSLICE_MSK_IAM_TOKEN_SECONDS`); the freeze lasts twice that.
const VALIDITY_SECS: u64 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thawed_function_authenticates_with_fresh_tokens() {
    let Some(iam) = common::iam::iam() else {
        return;
    };
    let stack = common::stack();
    let (source, target) = (
        common::unique("iws").replace('-', ""),
        common::unique("iwt").replace('-', ""),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    let extra = format!(
        "{target}.offset.flush.interval.ms = 200\n{}",
        iam.settings(&source)
    );
    let body = common::flow_properties_between(&source, &iam.a, &target, &iam.b, &extra);
    std::fs::write(&config, body).unwrap();
    let topic = format!("orders-{source}");
    common::create_topic(&stack.a, &topic, 2, &[]).await;
    // The function signs with the listeners' credential and region; its lease table is in
    // that region too (moto keeps tables per region).
    let table = common::unique("iam-leases");
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, &iam.region, &table);
    leases.create_table_if_missing().await.unwrap();
    let validity = VALIDITY_SECS.to_string();
    let mut env: Vec<(&str, &str)> = vec![("MIRRORSLICE_MSK_IAM_TOKEN_SECONDS", &validity)];
    let iam_env = iam.env();
    env.extend(iam_env.iter().map(|(k, v)| (*k, v.as_str())));
    let mut stub = RuntimeStub::start();
    let mut function = Function::start_with(&stub.addr, &config, &table, &env);
    let flow = format!("{source}->{target}");

    let mut copied = 0;
    for round in 0..2 {
        let records: Vec<_> = (0..100)
            .map(|i| common::TestRecord::kv(i % 2, &format!("r{round}-{i}"), "v"))
            .collect();
        common::produce(&stack.a, &topic, &records).await;
        copied += 100;
        let mark = iam.mark();
        let posted = stub.invoke(
            &format!("inv-{round}"),
            serde_json::json!({"flow": flow}),
            Duration::from_secs(60),
        );
        assert_eq!(posted.kind, "response", "{posted:?}\n{}", function.stderr());
        assert_eq!(posted.body["ok"], true, "{posted:?}");
        let tokens: Vec<_> = (iam.tokens_since(mark).into_iter())
            .filter(|t| t["access_key_id"] == iam.access_key_id.as_str())
            .filter(|t| t["expires"] == VALIDITY_SECS)
            .collect();
        assert!(
            !tokens.is_empty(),
            "round {round}: no token reached the listeners"
        );
        for t in &tokens {
            assert_eq!(t["valid"], true, "round {round}: {t}");
        }
        if round == 0 {
            // Idle and frozen, as Lambda leaves a warm environment: every token it holds
            // expires meanwhile.
            let frozen = Frozen::pid(function.pid());
            tokio::time::sleep(Duration::from_secs(2 * VALIDITY_SECS)).await;
            frozen.thaw();
        }
    }
    let duplicates =
        common::assert_all_copied(&stack.b, &format!("{source}.{topic}"), 2, copied).await;
    assert_eq!(duplicates, 0);
    stub.finish();
    function.wait_exit(Duration::from_secs(30));
}
