//! What an idle slice costs in round trips to the lease table (issue #4: an idle, caught-up slice
//! is the floor every scheduled invocation pays).
//!
//! The slice runs in-process against the local brokers and the local DynamoDB server, with the
//! real `DynamoLeaseStore` behind a counting wrapper: once slices have copied the data, an idle
//! one must read all of its state in one batch request and write none of it back, and every
//! lease it took must be given back by the time `run_slice` returns.

mod common;

use common::TestRecord;
use mirrorslice::config::{MirrorMakerConfig, SourceAndTarget};
use mirrorslice::lease::dynamodb::DynamoLeaseStore;
use mirrorslice::lease::{connector_key, task_key, LeaseStore};
use mirrorslice::slice::{run_slice, SliceEnv, SliceRequest};
use mirrorslice::state::{StateError, StateStore};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Counts the state requests a slice makes; delegates to the real store.
struct Counting {
    inner: Arc<DynamoLeaseStore>,
    /// Keys read one by one (not through the prefetch).
    gets: Mutex<Vec<String>>,
    batch_gets: AtomicUsize,
    puts: Arc<Mutex<Vec<String>>>,
}

impl StateStore for Counting {
    fn get(&self, key: &str) -> Result<Option<Value>, StateError> {
        self.gets.lock().unwrap().push(key.to_string());
        self.inner.get(key)
    }
    fn put(&self, key: &str, value: &Value) -> Result<(), StateError> {
        self.puts.lock().unwrap().push(key.to_string());
        self.inner.put(key, value)
    }
    fn get_many(&self, keys: &[String]) -> Result<BTreeMap<String, Option<Value>>, StateError> {
        self.batch_gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get_many(keys)
    }
}

impl Counting {
    fn reset(&self) {
        self.gets.lock().unwrap().clear();
        self.batch_gets.store(0, Ordering::SeqCst);
        self.puts.lock().unwrap().clear();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_slice_reads_its_state_once_writes_none_and_returns_every_lease() {
    let stack = common::stack();
    let source = common::unique("isrc").replace('-', "");
    let target = common::unique("idst").replace('-', "");
    let topic = format!("idle-{source}");
    let partitions = 3;
    common::create_topic(&stack.a, &topic, partitions, &[]).await;
    let data: Vec<TestRecord> = (0..300usize)
        .map(|i| TestRecord::kv((i % partitions as usize) as i32, &format!("k{i}"), "v"))
        .collect();
    common::produce(&stack.a, &topic, &data).await;

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mm2.properties");
    let flow = format!("{source}->{target}");
    let body = common::flow_properties(&source, &target, "") + &format!("{flow}.tasks.max = 2\n");
    std::fs::write(&config, body).unwrap();
    let mm = MirrorMakerConfig::load(&config).unwrap();
    let pair = SourceAndTarget::new(&source, &target);

    let table = common::unique("idle-leases");
    let store = Arc::new(DynamoLeaseStore::with_endpoint(
        &stack.dynamodb,
        "us-east-1",
        &table,
    ));
    store.create_table_if_missing().await.unwrap();
    let counting = Arc::new(Counting {
        inner: store.clone(),
        gets: Default::default(),
        batch_gets: AtomicUsize::new(0),
        puts: Default::default(),
    });
    let env = SliceEnv {
        state: counting.clone(),
        leases: store.clone(),
        owner: "idle-slice-test".into(),
    };
    let request = SliceRequest {
        max_duration: Some(Duration::from_secs(60)),
        deadline: None,
    };

    // First slice: copies everything and records its state (hints, sync times, config hash).
    let first = run_slice(&mm, &pair, &env, &request).await.unwrap();
    assert!(first.ok, "{first:#?}");
    assert_eq!(first.records, data.len() as u64);
    assert!(
        !counting.puts.lock().unwrap().is_empty(),
        "the first slice stores state"
    );

    // A slice after a copying one may still move an offsets hint forward (past the other
    // task's commit in the same offsets-topic partition); from then on, idle is idle.
    let settle = run_slice(&mm, &pair, &env, &request).await.unwrap();
    assert!(settle.ok && settle.caught_up, "{settle:#?}");
    assert_eq!(settle.records, 0);

    // An idle slice: nothing to copy.
    counting.reset();
    let idle = run_slice(&mm, &pair, &env, &request).await.unwrap();
    assert!(idle.ok && idle.caught_up, "{idle:#?}");
    assert_eq!(idle.records, 0);
    assert_eq!(
        counting.batch_gets.load(Ordering::SeqCst),
        1,
        "state is read in one request"
    );
    // Every read is served from the prefetch but the assignment record's, which is read
    // under the connector lease (one GetItem, overlapping the connector phase): a prefetched
    // copy could predate another slice's write.
    assert_eq!(
        *counting.gets.lock().unwrap(),
        vec![format!("{flow}/MirrorSourceConnector/assignment")],
        "one read besides the prefetch"
    );
    assert_eq!(
        *counting.puts.lock().unwrap(),
        Vec::<String>::new(),
        "an idle slice changes no state"
    );

    // Every lease is back (expiry 0) once the slice has returned; the fences stay.
    let connector = "MirrorSourceConnector";
    let mut keys = vec![
        connector_key(&flow, connector),
        task_key(&flow, "MirrorHeartbeatConnector", 0),
    ];
    keys.extend((0..2).map(|t| task_key(&flow, connector, t)));
    for key in keys {
        let lease = store.describe(&key).await.unwrap().expect("lease item");
        assert_eq!(lease.expires_at_ms, 0, "{key} released: {lease:?}");
        assert!(lease.fencing_token >= 3, "{key} taken by every slice");
    }
}
