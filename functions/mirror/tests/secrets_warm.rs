//! Secrets Manager values in a warm Lambda: each secret is fetched once per invocation, however
//! many properties name it, and a warm process reuses it until the provider's `cache.ttl.ms`
//! has passed. Observed through the `mirror` binary: the flow's topic filter comes from a
//! secret that is rotated between invocations, and the debug line the provider logs per
//! GetSecretValue call is counted per invocation (by the `requestId` of lambda_runtime's span).
//! Plaintext clusters only, so it runs on tansu as on Apache Kafka.

// First: its `env!` serves the shared harness below (see tests/lambda).
#[macro_use]
mod lambda;
#[path = "../../../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lambda::{Function, RuntimeStub};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use serde_json::{json, Value};

/// Long enough for two invocations (checked), short enough to wait out once.
const TTL: Duration = Duration::from_secs(20);
/// What `mirrorslice::config::secrets_manager::fetch` logs per GetSecretValue call.
const FETCH_LINE: &str = "fetching secret from Secrets Manager";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_function_fetches_each_secret_once_and_again_after_the_ttl() {
    let stack = common::stack();
    let (source, target) = (
        common::unique("sws").replace('-', ""),
        common::unique("swt").replace('-', ""),
    );
    let (orders, other) = (format!("orders-{source}"), format!("other-{source}"));
    // The flow's filters from one JSON secret, named by two properties; the target's address
    // from a second, plain one.
    let filters = common::unique("mm2-warm-filters");
    let filters_json =
        |topic: &str| json!({"topics": topic, "groups": format!("g-{source}")}).to_string();
    common::secrets::put_secret(&filters, &filters_json(&orders)).await;
    let address = common::unique("mm2-warm-target");
    common::secrets::put_secret(&address, &stack.b).await;
    let flow = format!("{source}->{target}");
    let extra = format!(
        "config.providers = secrets\n\
         config.providers.secrets.class = SecretsManagerConfigProvider\n\
         config.providers.secrets.param.cache.ttl.ms = {ttl}\n\
         {flow}.topics = ${{secrets:{filters}:topics}}\n\
         {flow}.groups = ${{secrets:{filters}:groups}}\n\
         {target}.offset.flush.interval.ms = 200\n",
        ttl = TTL.as_millis(),
    );
    let placeholder = format!("${{secrets:{address}}}");
    let body = common::flow_properties_between(&source, &stack.a, &target, &placeholder, &extra);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    std::fs::write(&config, body).unwrap();
    common::create_topic(&stack.a, &orders, 2, &[]).await;
    common::create_topic(&stack.a, &other, 1, &[]).await;
    common::produce(&stack.a, &other, &batch(1, "other", 30)).await;

    let table = common::unique("secret-leases");
    let leases = DynamoLeaseStore::with_endpoint(&stack.dynamodb, "us-east-1", &table);
    leases.create_table_if_missing().await.unwrap();
    let mut stub = RuntimeStub::start();
    // lambda_runtime's info span carries the requestId the fetch lines are counted by.
    let log = "warn,lambda_runtime=info,mirrorslice::config::secrets_manager=debug";
    let mut function =
        Function::start_with(&stub.addr, &config, &table, &[("MIRRORSLICE_LOG", log)]);
    let run = |id: &str| {
        let posted = stub.invoke(id, json!({"flow": flow}), Duration::from_secs(60));
        assert_eq!(posted.kind, "response", "{posted:?}\n{}", function.stderr());
        assert_eq!(posted.body["ok"], true, "{posted:?}");
    };
    let (remote_orders, remote_other) = (format!("{source}.{orders}"), format!("{source}.{other}"));

    // 1. Cold: both secrets fetched, once each.
    let first = Instant::now();
    common::produce(&stack.a, &orders, &batch(2, "r1", 50)).await;
    run("inv-1");
    let fetched = Instant::now();
    assert_eq!(
        common::assert_all_copied(&stack.b, &remote_orders, 2, 50).await,
        0
    );

    // 2. Rotated to a filter that would copy the other topic instead: within the TTL the
    // cached filter still holds, and nothing is fetched.
    common::secrets::update_secret(&filters, &filters_json(&other)).await;
    common::produce(&stack.a, &orders, &batch(2, "r2", 50)).await;
    run("inv-2");
    assert!(
        first.elapsed() < TTL,
        "two invocations took {:?}, the cache TTL is {TTL:?}: the second may have refetched",
        first.elapsed()
    );
    assert_eq!(
        common::assert_all_copied(&stack.b, &remote_orders, 2, 100).await,
        0
    );
    assert_eq!(
        common::partition_count(&stack.b, &remote_other),
        None,
        "rotation seen early"
    );

    // 3. After the TTL: fetched again, and the rotated filter copies the other topic only.
    tokio::time::sleep(TTL.saturating_sub(fetched.elapsed()) + Duration::from_millis(500)).await;
    common::produce(&stack.a, &orders, &batch(2, "r3", 50)).await;
    run("inv-3");
    assert_eq!(
        common::assert_all_copied(&stack.b, &remote_other, 1, 30).await,
        0
    );
    let copied = common::consume_all(&stack.b, &remote_orders, 2).await;
    assert_eq!(
        copied.len(),
        100,
        "copied with the old filter after the TTL"
    );

    stub.finish();
    function.wait_exit(Duration::from_secs(30));
    let once_each = BTreeMap::from([(address.clone(), 1), (filters.clone(), 1)]);
    let fetches = fetches_by_invocation(&function.stderr());
    assert_eq!(fetches.get("inv-1"), Some(&once_each), "{fetches:?}");
    assert_eq!(
        fetches.get("inv-2"),
        None,
        "fetched within the TTL: {fetches:?}"
    );
    assert_eq!(fetches.get("inv-3"), Some(&once_each), "{fetches:?}");
}

/// `n` records for partitions `0..partitions` (round robin), keys `<label>-<i>`.
fn batch(partitions: i32, label: &str, n: i32) -> Vec<common::TestRecord> {
    (0..n)
        .map(|i| common::TestRecord::kv(i % partitions, &format!("{label}-{i}"), "v"))
        .collect()
}

/// GetSecretValue calls per invocation (`requestId`) and secret, from the function's JSON
/// logs. A fetch line outside an invocation's span panics: it could not be attributed.
fn fetches_by_invocation(stderr: &str) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut fetches: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for line in stderr.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if event["fields"]["message"] != FETCH_LINE {
            continue;
        }
        let invocation = event["span"]["requestId"].as_str();
        let invocation = invocation.unwrap_or_else(|| panic!("no requestId: {line}"));
        let secret = event["fields"]["secret"].as_str().expect("the secret id");
        *fetches
            .entry(invocation.to_string())
            .or_default()
            .entry(secret.to_string())
            .or_default() += 1;
    }
    fetches
}
