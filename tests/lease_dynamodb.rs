//! The DynamoDB lease table against the local stack's moto server.
//!
//! Why: on Lambda the lease is all that stands between two overlapping invocations and a task
//! copied twice (MM2 has a Connect group for that). What must hold is what DynamoDB's
//! conditional writes decide, so it is checked against a real DynamoDB-API server, not a mock
//! of our own: one winner among concurrent acquirers, takeover only after expiry plus the
//! clock-skew margin, stale holders fenced off, tokens that only grow, and `HeldLease` noticing
//! a lost lease. Every test uses its own table ([`common::unique`]).
//!
//! Tests that touch the synchronous `StateStore` API or run acquirers in parallel use the
//! multi-thread runtime, as the CLI and the Lambda function do.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use mirrorslice::lease::dynamodb::{DynamoLeaseStore, DEFAULT_CLOCK_SKEW, TABLE_ENV};
use mirrorslice::lease::{connector_key, task_key, HeldLease, LeaseInfo, LeaseStore, LeaseTiming};
use mirrorslice::state::{StateError, StateStore};
use serde_json::json;

const REGION: &str = "us-east-1";

/// A store on a fresh table of the local stack.
async fn fresh_store() -> DynamoLeaseStore {
    let stack = common::stack();
    let table = common::unique("lease");
    let store = DynamoLeaseStore::with_endpoint(&stack.dynamodb, REGION, &table);
    store.create_table_if_missing().await.expect("create table");
    store
}

/// Another process's view of the same table: its own client and connections.
fn other(store: &DynamoLeaseStore) -> DynamoLeaseStore {
    DynamoLeaseStore::with_endpoint(&common::stack().dynamodb, REGION, store.table())
        .with_clock_skew(store.clock_skew())
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn raw_item(store: &DynamoLeaseStore, key: &str) -> HashMap<String, AttributeValue> {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .key("lease_key", AttributeValue::S(key.into()))
        .consistent_read(true)
        .send()
        .await
        .expect("GetItem")
        .item()
        .cloned()
        .unwrap_or_else(|| panic!("no item {key}"))
}

fn n(item: &HashMap<String, AttributeValue>, name: &str) -> i64 {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().unwrap(),
        other => panic!("attribute {name} is not a number: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_acquirers_exactly_one_winner() {
    let store = fresh_store().await;
    // Three rounds on three keys: a lucky interleaving must not hide a race.
    for task in 0..3 {
        let key = task_key("A->B", "MirrorSourceConnector", task);
        let barrier = Arc::new(tokio::sync::Barrier::new(20));
        let mut handles = Vec::new();
        for i in 0..20 {
            let (mine, key, barrier) = (other(&store), key.clone(), barrier.clone());
            handles.push(tokio::spawn(async move {
                barrier.wait().await;
                mine.try_acquire(&key, &format!("worker-{i}"), Duration::from_secs(30))
                    .await
                    .expect("acquire")
            }));
        }
        let mut winners = Vec::new();
        for h in handles {
            if let Some(info) = h.await.unwrap() {
                winners.push(info);
            }
        }
        assert_eq!(winners.len(), 1, "key {key}: winners {winners:?}");
        assert_eq!(winners[0].fencing_token, 1);
        let held = store.describe(&key).await.unwrap().unwrap();
        assert_eq!(held, winners[0], "the table names the one winner");
    }
}

#[tokio::test]
async fn takeover_after_expiry_fences_off_the_stale_holder() {
    let a = fresh_store().await.with_clock_skew(Duration::ZERO);
    let b = other(&a);
    let key = task_key("A->B", "MirrorSourceConnector", 0);
    let ttl = Duration::from_millis(300);
    let first = a.try_acquire(&key, "a", ttl).await.unwrap().unwrap();
    assert!(
        b.try_acquire(&key, "b", ttl).await.unwrap().is_none(),
        "not expired yet"
    );

    tokio::time::sleep(ttl + Duration::from_millis(150)).await;
    let second = b
        .try_acquire(&key, "b", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("expired lease is taken over");
    assert_eq!(second.fencing_token, first.fencing_token + 1);

    // The stale holder can neither renew nor release the new holder's lease.
    assert!(a.renew(&first, ttl).await.unwrap().is_none());
    a.release(&first).await.unwrap();
    let now = b.describe(&key).await.unwrap().unwrap();
    assert_eq!(
        now, second,
        "stale release left the new holder's item alone"
    );
    assert!(b
        .renew(&second, Duration::from_secs(30))
        .await
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn clock_skew_margin_delays_takeover() {
    let strict = fresh_store().await;
    assert_eq!(strict.clock_skew(), DEFAULT_CLOCK_SKEW);
    let key = connector_key("A->B", "MirrorCheckpointConnector");
    let ttl = Duration::from_millis(200);
    let first = strict.try_acquire(&key, "a", ttl).await.unwrap().unwrap();
    tokio::time::sleep(ttl + Duration::from_millis(300)).await;
    // Expired by ~300 ms, but within the default 2 s margin: a holder with a slow clock may
    // still be working, so nobody takes it.
    assert!(strict.try_acquire(&key, "b", ttl).await.unwrap().is_none());
    let lax = other(&strict).with_clock_skew(Duration::from_millis(100));
    let second = lax.try_acquire(&key, "b", ttl).await.unwrap().unwrap();
    assert_eq!(second.fencing_token, first.fencing_token + 1);
}

#[tokio::test]
async fn fencing_token_strictly_increases_over_cycles() {
    let store = fresh_store().await;
    let key = task_key("A->B", "MirrorSourceConnector", 3);
    let mut last = 0;
    for cycle in 0..5 {
        let owner = format!("owner-{}", cycle % 2);
        let info = store
            .try_acquire(&key, &owner, Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("cycle {cycle}: released lease not free"));
        assert!(info.fencing_token > last, "cycle {cycle}: {info:?}");
        assert_eq!(info.fencing_token, last + 1);
        last = info.fencing_token;
        store.release(&info).await.unwrap();
        let released = store.describe(&key).await.unwrap().unwrap();
        assert_eq!(released.expires_at_ms, 0, "release frees the lease at once");
        assert_eq!(
            released.fencing_token, info.fencing_token,
            "release keeps the token"
        );
    }
    assert_eq!(last, 5);
}

#[tokio::test]
async fn describe_shows_holder_expiry_and_timestamps() {
    let store = fresh_store().await;
    let key = task_key("A->B", "MirrorSourceConnector", 1);
    assert_eq!(store.describe(&key).await.unwrap(), None);

    let ttl = Duration::from_secs(30);
    let before = now_ms();
    let info = store.try_acquire(&key, "w1", ttl).await.unwrap().unwrap();
    let after = now_ms();
    let seen = store.describe(&key).await.unwrap().unwrap();
    assert_eq!(seen, info);
    assert_eq!(seen.owner, "w1");
    assert!(
        (before + 30_000..=after + 30_000).contains(&seen.expires_at_ms),
        "{before} {after} {seen:?}"
    );
    let raw = raw_item(&store, &key).await;
    let acquired = n(&raw, "acquired_at_ms");
    assert!((before..=after).contains(&acquired));
    assert_eq!(n(&raw, "renewed_at_ms"), acquired);

    tokio::time::sleep(Duration::from_millis(20)).await;
    let renewed = store.renew(&info, ttl).await.unwrap().unwrap();
    assert!(renewed.expires_at_ms > info.expires_at_ms);
    let raw = raw_item(&store, &key).await;
    assert!(
        n(&raw, "renewed_at_ms") > acquired,
        "renew stamps renewed_at_ms"
    );
    assert_eq!(
        n(&raw, "acquired_at_ms"),
        acquired,
        "renew keeps acquired_at_ms"
    );
    assert_eq!(n(&raw, "expires_at_ms"), renewed.expires_at_ms);
}

#[tokio::test]
async fn held_lease_is_not_acquired_twice_and_release_is_not_undone_by_renew() {
    let store = fresh_store().await;
    let key = task_key("A->B", "MirrorSourceConnector", 2);
    let ttl = Duration::from_secs(30);
    let info = store.try_acquire(&key, "w1", ttl).await.unwrap().unwrap();
    // Even the same owner gets None while the lease is held (as with the file lock).
    assert!(store.try_acquire(&key, "w1", ttl).await.unwrap().is_none());
    store.release(&info).await.unwrap();
    // A renewal that arrives after the release must not revive the lease.
    assert!(store.renew(&info, ttl).await.unwrap().is_none());
    assert_eq!(
        store.describe(&key).await.unwrap().unwrap().expires_at_ms,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_lease_renews_then_notices_theft() {
    let store = fresh_store().await;
    let key = task_key("A->B", "MirrorSourceConnector", 4);
    let timing = LeaseTiming {
        duration: Duration::from_millis(1500),
        skew_allowance: Duration::from_millis(300),
    };
    let store_dyn: Arc<dyn LeaseStore> = Arc::new(store.clone());
    let held = HeldLease::acquire(store_dyn, &key, "me", timing)
        .await
        .unwrap()
        .expect("a fresh lease is free");
    let info = held.info();

    // Past the first ttl the lease is still ours, because it was renewed.
    let watch_until = Instant::now() + timing.duration * 2;
    while Instant::now() < watch_until {
        assert!(held.still_owner(), "lost while renewing normally");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A renewal may land between the reads, and its answer reach the holder a moment after the
    // table holds it: the holder knows the stored expiry before the read or soon after it.
    let mut known = vec![held.info().expires_at_ms];
    let current = store.describe(&key).await.unwrap().unwrap();
    for _ in 0..100 {
        known.push(held.info().expires_at_ms);
        if known.last() >= Some(&current.expires_at_ms) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        current.expires_at_ms > info.expires_at_ms,
        "expiry grows: {current:?} vs {info:?}"
    );
    assert_eq!(current.fencing_token, info.fencing_token);
    assert!(
        known.contains(&current.expires_at_ms),
        "the holder knows the stored expiry: {current:?}, {known:?}"
    );

    // Another owner takes the item over directly, as a newer acquirer would.
    let stolen = LeaseInfo {
        key: key.clone(),
        owner: "thief".into(),
        fencing_token: info.fencing_token + 1,
        expires_at_ms: now_ms() + 60_000,
    };
    store
        .client()
        .put_item()
        .table_name(store.table())
        .item("lease_key", AttributeValue::S(key.clone()))
        .item("owner", AttributeValue::S(stolen.owner.clone()))
        .item(
            "fencing_token",
            AttributeValue::N(stolen.fencing_token.to_string()),
        )
        .item(
            "expires_at_ms",
            AttributeValue::N(stolen.expires_at_ms.to_string()),
        )
        .send()
        .await
        .unwrap();
    let stolen_at = Instant::now();
    while held.still_owner() {
        assert!(
            stolen_at.elapsed() < timing.duration + Duration::from_millis(500),
            "still_owner() stayed true after the lease was taken"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Releasing a lost lease is not an error and leaves the thief's item alone.
    held.release().await.unwrap();
    assert_eq!(store.describe(&key).await.unwrap().unwrap(), stolen);
}

// A position written for lease token N is never overwritten by a holder of an older token: a
// task that lost its lease while frozen cannot move its successor's position back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_state_writes_refuse_a_stale_fencing_token() {
    let store = fresh_store().await;
    let key = "A->B/MirrorSourceConnector/0/offsets-hint";
    let state: &dyn StateStore = &store;
    state.put_fenced(key, &json!({"at": 1}), 5).unwrap();
    state.put_fenced(key, &json!({"at": 2}), 5).unwrap();
    let stale = state.put_fenced(key, &json!({"at": 0}), 4);
    assert!(
        matches!(stale, Err(StateError::Fenced { token: 4, .. })),
        "{stale:?}"
    );
    let message = stale.unwrap_err().to_string();
    assert!(
        message.contains(key) && message.contains("newer lease holder"),
        "{message}"
    );
    assert_eq!(state.get(key).unwrap(), Some(json!({"at": 2})), "unchanged");
    state.put_fenced(key, &json!({"at": 3}), 6).unwrap();
    assert_eq!(state.get(key).unwrap(), Some(json!({"at": 3})));
    assert!(state.put_fenced(key, &json!({"at": 9}), 5).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_round_trip_missing_key_and_corrupt_doc() {
    let store = fresh_store().await;
    let key = "A->B/MirrorSourceConnector/0/offsets-hint";
    // The synchronous trait, called from async code as the connectors do.
    let state: &dyn StateStore = &store;
    assert_eq!(state.get(key).unwrap(), None);
    state.put(key, &json!({"partitions": {"t-0": 41}})).unwrap();
    assert_eq!(
        state.get(key).unwrap(),
        Some(json!({"partitions": {"t-0": 41}}))
    );
    state.put(key, &json!({"partitions": {"t-0": 42}})).unwrap();
    assert_eq!(
        store.get_state(key).await.unwrap(),
        Some(json!({"partitions": {"t-0": 42}}))
    );

    // A state document and a lease of the same name do not collide.
    let lease_key = task_key("A->B", "MirrorSourceConnector", 0);
    state.put(&lease_key, &json!("doc")).unwrap();
    assert!(store
        .try_acquire(&lease_key, "w", Duration::from_secs(30))
        .await
        .unwrap()
        .is_some());
    assert_eq!(state.get(&lease_key).unwrap(), Some(json!("doc")));

    // A document that is not JSON is reported as corrupt, naming the key.
    store
        .client()
        .put_item()
        .table_name(store.table())
        .item("lease_key", AttributeValue::S("state#bad".into()))
        .item("doc", AttributeValue::S("{not json".into()))
        .send()
        .await
        .unwrap();
    match state.get("bad") {
        Err(e @ StateError::Corrupt { .. }) => {
            assert!(e.to_string().contains("state bad"), "{e}")
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_many_answers_like_get_for_present_missing_and_many_keys() {
    let store = fresh_store().await;
    let state: &dyn StateStore = &store;
    // More keys than one BatchGetItem takes (100), some stored, some not, and one lease item
    // of the same name (state and leases must not mix).
    let keys: Vec<String> = (0..130).map(|i| format!("A->B/k{i}")).collect();
    for (i, key) in keys.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        state.put(key, &json!({ "n": i })).unwrap();
    }
    store
        .try_acquire(&keys[1], "w", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("lease");
    let many = state.get_many(&keys).unwrap();
    assert_eq!(many.len(), keys.len());
    for key in &keys {
        assert_eq!(many[key], state.get(key).unwrap(), "{key}");
    }
    assert_eq!(many["A->B/k3"], Some(json!({ "n": 3 })));
    assert_eq!(many["A->B/k1"], None, "a lease is not a state document");
    assert_eq!(state.get_many(&[]).unwrap(), Default::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_key_and_the_dynamodb_code() {
    let stack = common::stack();
    let missing = DynamoLeaseStore::with_endpoint(&stack.dynamodb, REGION, &common::unique("nope"));
    let key = task_key("A->B", "MirrorSourceConnector", 9);
    let err = missing
        .try_acquire(&key, "w", Duration::from_secs(1))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&key) && err.contains("ResourceNotFoundException"),
        "{err}"
    );
    let err = missing.describe(&key).await.unwrap_err().to_string();
    assert!(
        err.contains(&key) && err.contains("ResourceNotFoundException"),
        "{err}"
    );
    let err = StateStore::get(&missing, "hint").unwrap_err().to_string();
    assert!(
        err.contains("state hint") && err.contains("ResourceNotFoundException"),
        "{err}"
    );
}

/// `from_env` reads the standard AWS variables. The environment is given to a child copy of
/// this test binary rather than set here: `setenv` while other test threads run is a data race
/// (see `common::Stack::env`).
#[test]
fn from_env_uses_the_standard_aws_variables() {
    let stack = common::stack();
    let table = common::unique("lease-env");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "from_env_child", "--ignored", "--nocapture"])
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL")
        .envs(stack.env())
        .env(TABLE_ENV, &table)
        // Never reach for the EC2 metadata service from a test.
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("from_env acquired token 1"),
        "child failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The child wrote to the stack's table, so the endpoint came from the environment.
    let check = DynamoLeaseStore::with_endpoint(&stack.dynamodb, REGION, &table);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let seen = rt
        .block_on(check.describe(&connector_key("A->B", "MirrorSourceConnector")))
        .unwrap()
        .unwrap();
    assert_eq!(seen.owner, "env-child");
}

/// Runs only as the child of [`from_env_uses_the_standard_aws_variables`].
#[tokio::test]
#[ignore = "child process of from_env_uses_the_standard_aws_variables"]
async fn from_env_child() {
    let table = std::env::var(TABLE_ENV).expect("run by from_env_uses_the_standard_aws_variables");
    let store = DynamoLeaseStore::from_env(&table).await.unwrap();
    store.create_table_if_missing().await.unwrap();
    let info = store
        .try_acquire(
            &connector_key("A->B", "MirrorSourceConnector"),
            "env-child",
            Duration::from_secs(30),
        )
        .await
        .unwrap()
        .unwrap();
    println!("from_env acquired token {}", info.fencing_token);
}
