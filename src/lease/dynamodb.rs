//! The Lambda lease: one DynamoDB table standing in for Connect's group membership.
//!
//! Java MM2 runs each task on exactly one worker because a Connect group assigns it; on Lambda,
//! EventBridge Scheduler invokes at least once and invocations of one flow overlap, so the
//! "one runner per task" rule is kept by conditional writes on a single DynamoDB table instead.
//! Every write below is a *single* conditional request, so DynamoDB itself decides who wins; no
//! read-then-write race exists anywhere in this file.
//!
//! # Table layout
//! Partition key `lease_key` (S) only; items are never deleted, so the fencing token of a key
//! survives every release and only ever grows.
//!
//! | item | `lease_key` | attributes |
//! |---|---|---|
//! | lease | `A->B/MirrorSourceConnector/0`, `A->B/MirrorSourceConnector/connector` | `owner` (S), `fencing_token` (N), `expires_at_ms` (N), `acquired_at_ms` (N), `renewed_at_ms` (N) |
//! | state ([`StateStore`]) | `state#<key>` | `doc` (S, JSON), `updated_at_ms` (N) |
//!
//! # Rules
//! * **acquire**: `attribute_not_exists(lease_key) OR expires_at_ms < now − skew`, then
//!   `SET owner, expires_at_ms, acquired_at_ms, renewed_at_ms ADD fencing_token 1`. The skew
//!   margin (default [`DEFAULT_CLOCK_SKEW`]) absorbs clock differences between invocations: a
//!   holder whose clock is behind still believes in its lease for up to that long.
//! * **renew**: `owner = :o AND fencing_token = :t AND expires_at_ms > 0`. Expiry is *not*
//!   checked: a lease that expired but was not taken still carries our token — anyone who took
//!   it would have bumped the token — so extending it is safe and saves a slice from stopping
//!   over one slow renewal. `expires_at_ms > 0` refuses to revive a lease we *released*
//!   (a renewal still in flight when [`super::HeldLease::release`] ran must not undo it).
//! * **release**: `owner = :o AND fencing_token = :t` → `SET expires_at_ms = 0`; the token stays.
//! * **describe**: a strongly consistent `GetItem`.
//!
//! # Retries
//! Throttling (`ProvisionedThroughputExceededException`, `ThrottlingException`,
//! `RequestLimitExceeded`) and transient failures (5xx, timeouts, broken connections) are
//! retried by the SDK's *standard* retry strategy — exponential backoff with full jitter —
//! configured here with at most 5 attempts ([`MAX_ATTEMPTS`]). A failed condition is never
//! retried. Because a retried acquire may find the item already written by its own first
//! attempt (the response was lost), a failed acquire asks DynamoDB for the item as it was
//! (`ReturnValuesOnConditionCheckFailure = ALL_OLD`) and recognises its own write.
//!
//! # Sync `StateStore` over an async client
//! [`StateStore`] is synchronous, the SDK is async. [`DynamoLeaseStore::get_state`] and
//! [`DynamoLeaseStore::put_state`] are the async API that async code should call; the trait
//! methods bridge with `tokio::task::block_in_place` + `Handle::block_on`, which needs the
//! **multi-thread** tokio runtime (what `#[tokio::main]` and the Lambda runtime use). On a
//! current-thread runtime, or with no runtime at all, they return a [`StateError::Backend`]
//! instead of panicking or dead-locking.

use super::{LeaseError, LeaseInfo, LeaseStore};
use crate::aws::describe_sdk_error;
use crate::state::{StateError, StateStore};
use async_trait::async_trait;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, KeysAndAttributes,
    ReturnValue, ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableStatus,
};
use aws_sdk_dynamodb::Client;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Environment variable naming the lease table of the Lambda function.
pub const TABLE_ENV: &str = "MIRRORSLICE_LEASE_TABLE";

/// Margin by which a lease must be past its expiry before another owner may take it.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(2);

/// Attempts per request (first try included) of the SDK's standard retry strategy.
pub const MAX_ATTEMPTS: u32 = 5;

/// One attempt may not hang a slice: Lambda's deadline is sacred.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// All attempts of one request, backoff included.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(20);

const KEY: &str = "lease_key";
const STATE_PREFIX: &str = "state#";

/// Leases and small state documents in one DynamoDB table. Cheap to clone (the SDK client is
/// reference-counted).
#[derive(Clone, Debug)]
pub struct DynamoLeaseStore {
    client: Client,
    table: String,
    clock_skew: Duration,
    /// State calls made through the synchronous [`StateStore`] API give up at this instant
    /// (see [`StateStore::bounded_by`]); lease calls are bounded by their callers.
    state_deadline: Option<Instant>,
}

/// Logs (at debug) each table request's key and round-trip time when dropped: the lease and
/// state requests sit on every slice's critical path, so their latency is worth seeing.
struct RequestTimer<'a> {
    op: &'static str,
    key: &'a str,
    started: std::time::Instant,
}

impl<'a> RequestTimer<'a> {
    fn start(op: &'static str, key: &'a str) -> Self {
        RequestTimer {
            op,
            key,
            started: std::time::Instant::now(),
        }
    }
}

impl Drop for RequestTimer<'_> {
    fn drop(&mut self) {
        tracing::debug!(
            op = self.op,
            key = self.key,
            elapsed_us = self.started.elapsed().as_micros() as u64,
            "lease table request"
        );
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn num(n: i64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn retry_config() -> RetryConfig {
    RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS)
}

fn timeout_config() -> TimeoutConfig {
    TimeoutConfig::builder()
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

impl DynamoLeaseStore {
    /// A store on `table` configured by the default AWS chain: region from `AWS_REGION`,
    /// credentials from `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN` (what
    /// Lambda sets) and the rest of the chain, endpoint from `AWS_ENDPOINT_URL_DYNAMODB` or
    /// `AWS_ENDPOINT_URL` when set.
    pub async fn from_env(table: &str) -> Result<Self, LeaseError> {
        let sdk = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(retry_config())
            .timeout_config(timeout_config())
            .load()
            .await;
        if sdk.region().is_none() {
            return Err(LeaseError::Backend {
                key: format!("table {table}"),
                message: "no AWS region configured (set AWS_REGION)".into(),
            });
        }
        Ok(Self::from_client(Client::new(&sdk), table))
    }

    /// A store on a local DynamoDB-API server (moto, DynamoDB Local) at `endpoint`, e.g.
    /// `http://127.0.0.1:18000`. Such servers accept any credentials, so fixed dummy ones are
    /// used and the default credential chain is never consulted (it would probe the EC2
    /// metadata service when the environment has none).
    pub fn with_endpoint(endpoint: &str, region: &str, table: &str) -> Self {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new(region.to_string()))
            .credentials_provider(Credentials::new(
                "mirrorslice-local",
                "mirrorslice-local",
                None,
                None,
                "mirrorslice-static",
            ))
            .retry_config(retry_config())
            .timeout_config(timeout_config())
            .build();
        Self::from_client(Client::from_conf(config), table)
    }

    /// A store over a client built elsewhere (its retry settings are the caller's).
    pub fn from_client(client: Client, table: &str) -> Self {
        DynamoLeaseStore {
            client,
            table: table.to_string(),
            clock_skew: DEFAULT_CLOCK_SKEW,
            state_deadline: None,
        }
    }

    /// Replace the clock-skew margin ([`DEFAULT_CLOCK_SKEW`]).
    pub fn with_clock_skew(mut self, skew: Duration) -> Self {
        self.clock_skew = skew;
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn clock_skew(&self) -> Duration {
        self.clock_skew
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn backend(&self, key: &str, op: &str, detail: String) -> LeaseError {
        LeaseError::Backend {
            key: key.to_string(),
            message: format!("DynamoDB {op} on table {}: {detail}", self.table),
        }
    }

    fn state_backend(&self, key: &str, op: &str, detail: String) -> StateError {
        StateError::Backend {
            key: key.to_string(),
            message: format!("DynamoDB {op} on table {}: {detail}", self.table),
        }
    }

    /// Create the table (on-demand billing) unless it exists, and wait until it is ACTIVE.
    /// For tests and the local stack; in production the table belongs to the deployment
    /// template, and the function's role need not be allowed to create tables.
    pub async fn create_table_if_missing(&self) -> Result<(), LeaseError> {
        let key = format!("table {}", self.table);
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(KEY)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(|e| self.backend(&key, "CreateTable", e.to_string()))?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(KEY)
                    .key_type(KeyType::Hash)
                    .build()
                    .map_err(|e| self.backend(&key, "CreateTable", e.to_string()))?,
            )
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_resource_in_use_exception()) => {}
            Err(e) => return Err(self.backend(&key, "CreateTable", describe_sdk_error(&e))),
        }
        // A new table is CREATING for a few seconds on AWS (moto makes it ACTIVE at once).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            let out = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(|e| self.backend(&key, "DescribeTable", describe_sdk_error(&e)))?;
            let status = out.table().and_then(|t| t.table_status());
            if status == Some(&TableStatus::Active) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(self.backend(
                    &key,
                    "DescribeTable",
                    format!("table not ACTIVE after 120 s (status {status:?})"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The state document stored under `key`, if any. Async twin of [`StateStore::get`].
    pub async fn get_state(&self, key: &str) -> Result<Option<Value>, StateError> {
        let _timer = RequestTimer::start("GetItem(state)", key);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(KEY, s(&format!("{STATE_PREFIX}{key}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.state_backend(key, "GetItem", describe_sdk_error(&e)))?;
        match out.item() {
            None => Ok(None),
            Some(item) => state_from_item(key, item).map(Some),
        }
    }

    /// Several state documents in as few requests as possible (BatchGetItem, 100 keys each,
    /// consistent reads, unprocessed keys retried). Async twin of [`StateStore::get_many`].
    pub async fn get_states(
        &self,
        keys: &[String],
    ) -> Result<std::collections::BTreeMap<String, Option<Value>>, StateError> {
        let mut found: std::collections::BTreeMap<String, Option<Value>> =
            keys.iter().map(|k| (k.clone(), None)).collect();
        // BatchGetItem refuses a list with duplicates: ask for each key once.
        let unique: Vec<String> = found.keys().cloned().collect();
        for chunk in unique.chunks(100) {
            let first = chunk.first().map(String::as_str).unwrap_or_default();
            let _timer = RequestTimer::start("BatchGetItem(state)", first);
            let mut request = KeysAndAttributes::builder().consistent_read(true);
            for key in chunk {
                request = request.keys(HashMap::from([(
                    KEY.to_string(),
                    s(&format!("{STATE_PREFIX}{key}")),
                )]));
            }
            let mut pending = Some(
                request
                    .build()
                    .map_err(|e| self.state_backend(first, "BatchGetItem", e.to_string()))?,
            );
            // The SDK retries throttling; unprocessed keys (partial answers) are ours to retry.
            let mut rounds = 0;
            while let Some(request) = pending.take() {
                rounds += 1;
                if rounds > 10 {
                    return Err(self.state_backend(
                        first,
                        "BatchGetItem",
                        "keys still unprocessed after 10 rounds".into(),
                    ));
                }
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(|e| {
                        self.state_backend(first, "BatchGetItem", describe_sdk_error(&e))
                    })?;
                for item in out
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .into_iter()
                    .flatten()
                {
                    let Some(key) = attr_s(item, KEY).and_then(|k| k.strip_prefix(STATE_PREFIX))
                    else {
                        continue;
                    };
                    let value = state_from_item(key, item)?;
                    found.insert(key.to_string(), Some(value));
                }
                pending = out
                    .unprocessed_keys()
                    .and_then(|u| u.get(&self.table))
                    .filter(|k| !k.keys().is_empty())
                    .cloned();
                if pending.is_some() {
                    tokio::time::sleep(Duration::from_millis(20 * rounds)).await;
                }
            }
        }
        Ok(found)
    }

    /// Store `value` under `key`, replacing what was there. Async twin of [`StateStore::put`].
    pub async fn put_state(&self, key: &str, value: &Value) -> Result<(), StateError> {
        let _timer = RequestTimer::start("PutItem(state)", key);
        let doc = serde_json::to_string(value).expect("JSON value serializes");
        self.client
            .put_item()
            .table_name(&self.table)
            .item(KEY, s(&format!("{STATE_PREFIX}{key}")))
            .item("doc", AttributeValue::S(doc))
            .item("updated_at_ms", num(now_ms()))
            .send()
            .await
            .map_err(|e| self.state_backend(key, "PutItem", describe_sdk_error(&e)))?;
        Ok(())
    }

    /// Store `value` under `key` for the holder of `fencing_token`: refused
    /// ([`StateError::Fenced`]) when the item was written with a newer token. Async twin of
    /// [`StateStore::put_fenced`].
    pub async fn put_state_fenced(
        &self,
        key: &str,
        value: &Value,
        fencing_token: u64,
    ) -> Result<(), StateError> {
        let _timer = RequestTimer::start("PutItem(state, fenced)", key);
        let doc = serde_json::to_string(value).expect("JSON value serializes");
        let token = num(fencing_token as i64);
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(KEY, s(&format!("{STATE_PREFIX}{key}")))
            .item("doc", AttributeValue::S(doc))
            .item("updated_at_ms", num(now_ms()))
            .item("fencing_token", token.clone())
            .condition_expression("attribute_not_exists(fencing_token) OR fencing_token <= :t")
            .expression_attribute_values(":t", token)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(se) if se.is_conditional_check_failed_exception() => Err(StateError::Fenced {
                    key: key.to_string(),
                    token: fencing_token,
                }),
                _ => Err(self.state_backend(key, "PutItem", describe_sdk_error(&e))),
            },
        }
    }

    /// Run `fut` to completion from synchronous code that is itself inside a multi-thread
    /// tokio runtime (see the module doc).
    fn block_on<T>(
        &self,
        key: &str,
        fut: impl std::future::Future<Output = Result<T, StateError>>,
    ) -> Result<T, StateError> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let handle = Handle::try_current().map_err(|_| {
            self.state_backend(
                key,
                "state access",
                "the synchronous StateStore API needs a tokio runtime; use get_state/put_state"
                    .into(),
            )
        })?;
        if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
            return Err(self.state_backend(
                key,
                "state access",
                "the synchronous StateStore API needs the multi-thread tokio runtime \
                 (block_in_place); use get_state/put_state"
                    .into(),
            ));
        }
        let bounded = async {
            let Some(deadline) = self.state_deadline else {
                return fut.await;
            };
            match tokio::time::timeout_at(deadline.into(), fut).await {
                Ok(answer) => answer,
                Err(_) => Err(self.state_backend(
                    key,
                    "state access",
                    "no answer before the slice's deadline".into(),
                )),
            }
        };
        tokio::task::block_in_place(|| handle.block_on(bounded))
    }
}

/// The JSON document of a state item.
fn state_from_item(key: &str, item: &HashMap<String, AttributeValue>) -> Result<Value, StateError> {
    let doc = match item.get("doc") {
        Some(AttributeValue::S(doc)) => doc,
        other => {
            return Err(StateError::Backend {
                key: key.to_string(),
                message: format!("item has no string attribute `doc` (found {other:?})"),
            })
        }
    };
    serde_json::from_str(doc).map_err(|source| StateError::Corrupt {
        key: key.to_string(),
        source,
    })
}

/// Parse one numeric attribute of a lease item.
fn attr_i64(item: &HashMap<String, AttributeValue>, name: &str) -> Option<i64> {
    match item.get(name)? {
        AttributeValue::N(n) => n.parse().ok(),
        _ => None,
    }
}

fn attr_s<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> Option<&'a str> {
    match item.get(name)? {
        AttributeValue::S(v) => Some(v),
        _ => None,
    }
}

/// The [`LeaseInfo`] a lease item describes; `None` when an attribute is missing or malformed.
fn lease_from_item(key: &str, item: &HashMap<String, AttributeValue>) -> Option<LeaseInfo> {
    Some(LeaseInfo {
        key: key.to_string(),
        owner: attr_s(item, "owner")?.to_string(),
        fencing_token: u64::try_from(attr_i64(item, "fencing_token")?).ok()?,
        expires_at_ms: attr_i64(item, "expires_at_ms")?,
    })
}

/// After a failed acquire condition: is the item as it stood (`old`) the write of this very
/// call, made by an earlier attempt whose response was lost? Only then does the lease belong
/// to us. `now` is the `acquired_at_ms` this call wrote, so a lease the same owner took in an
/// earlier call does not match.
fn acquired_by_this_call(
    key: &str,
    old: &HashMap<String, AttributeValue>,
    owner: &str,
    now: i64,
    expires_at_ms: i64,
) -> Option<LeaseInfo> {
    let info = lease_from_item(key, old)?;
    (info.owner == owner
        && attr_i64(old, "acquired_at_ms") == Some(now)
        && info.expires_at_ms == expires_at_ms)
        .then_some(info)
}

#[async_trait]
impl LeaseStore for DynamoLeaseStore {
    async fn try_acquire(
        &self,
        key: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<LeaseInfo>, LeaseError> {
        let _timer = RequestTimer::start("UpdateItem(acquire)", key);
        let now = now_ms();
        let expires = now + ttl.as_millis() as i64;
        let cutoff = now - self.clock_skew.as_millis() as i64;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, s(key))
            .condition_expression("attribute_not_exists(lease_key) OR expires_at_ms < :cutoff")
            // `owner` is a DynamoDB reserved word.
            .update_expression(
                "SET #owner = :o, expires_at_ms = :e, acquired_at_ms = :now, \
                 renewed_at_ms = :now ADD fencing_token :one",
            )
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":o", s(owner))
            .expression_attribute_values(":e", num(expires))
            .expression_attribute_values(":now", num(now))
            .expression_attribute_values(":cutoff", num(cutoff))
            .expression_attribute_values(":one", num(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => {
                let item = out.attributes().ok_or_else(|| {
                    self.backend(key, "UpdateItem", "no attributes returned (ALL_NEW)".into())
                })?;
                lease_from_item(key, item).map(Some).ok_or_else(|| {
                    self.backend(key, "UpdateItem", format!("malformed lease item {item:?}"))
                })
            }
            Err(e) => match e.as_service_error() {
                Some(se) if se.is_conditional_check_failed_exception() => {
                    let old = match se {
                        aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => c.item(),
                        _ => None,
                    };
                    Ok(old.and_then(|old| acquired_by_this_call(key, old, owner, now, expires)))
                }
                _ => Err(self.backend(key, "UpdateItem", describe_sdk_error(&e))),
            },
        }
    }

    async fn renew(
        &self,
        lease: &LeaseInfo,
        ttl: Duration,
    ) -> Result<Option<LeaseInfo>, LeaseError> {
        let _timer = RequestTimer::start("UpdateItem(renew)", &lease.key);
        let now = now_ms();
        let expires = now + ttl.as_millis() as i64;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, s(&lease.key))
            .condition_expression("#owner = :o AND fencing_token = :t AND expires_at_ms > :zero")
            .update_expression("SET expires_at_ms = :e, renewed_at_ms = :now")
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":o", s(&lease.owner))
            .expression_attribute_values(":t", num(lease.fencing_token as i64))
            .expression_attribute_values(":zero", num(0))
            .expression_attribute_values(":e", num(expires))
            .expression_attribute_values(":now", num(now))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Some(LeaseInfo {
                expires_at_ms: expires,
                ..lease.clone()
            })),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(self.backend(&lease.key, "UpdateItem", describe_sdk_error(&e))),
        }
    }

    async fn release(&self, lease: &LeaseInfo) -> Result<(), LeaseError> {
        let _timer = RequestTimer::start("UpdateItem(release)", &lease.key);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, s(&lease.key))
            .condition_expression("#owner = :o AND fencing_token = :t")
            // Keep the token (it must only grow); expiry 0 frees the lease at once.
            .update_expression("SET expires_at_ms = :zero")
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":o", s(&lease.owner))
            .expression_attribute_values(":t", num(lease.fencing_token as i64))
            .expression_attribute_values(":zero", num(0))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Already lost to someone else: nothing of ours to give back.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(self.backend(&lease.key, "UpdateItem", describe_sdk_error(&e))),
        }
    }

    async fn describe(&self, key: &str) -> Result<Option<LeaseInfo>, LeaseError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(KEY, s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.backend(key, "GetItem", describe_sdk_error(&e)))?;
        match out.item() {
            None => Ok(None),
            Some(item) => lease_from_item(key, item).map(Some).ok_or_else(|| {
                self.backend(key, "GetItem", format!("malformed lease item {item:?}"))
            }),
        }
    }

    /// Live by the rule of [`try_acquire`](Self::try_acquire): not yet expired by the table's
    /// clock allowance (`expires_at_ms < now − clock_skew` is what an acquire may take).
    async fn live_holder(&self, key: &str) -> Result<Option<LeaseInfo>, LeaseError> {
        let cutoff = now_ms() - self.clock_skew.as_millis() as i64;
        let lease = self.describe(key).await?;
        Ok(lease.filter(|l| l.expires_at_ms >= cutoff))
    }
}

impl StateStore for DynamoLeaseStore {
    /// A request to a stalled table would otherwise wait out the SDK's retries (up to
    /// `OPERATION_TIMEOUT`), past a slice's deadline.
    fn bounded_by(&self, deadline: Instant) -> Option<Arc<dyn StateStore>> {
        Some(Arc::new(DynamoLeaseStore {
            state_deadline: Some(deadline),
            ..self.clone()
        }))
    }

    /// Needs the multi-thread tokio runtime; see the module doc.
    fn get(&self, key: &str) -> Result<Option<Value>, StateError> {
        self.block_on(key, self.get_state(key))
    }

    /// Needs the multi-thread tokio runtime; see the module doc.
    fn put(&self, key: &str, value: &Value) -> Result<(), StateError> {
        self.block_on(key, self.put_state(key, value))
    }

    /// Needs the multi-thread tokio runtime; see the module doc.
    fn put_fenced(&self, key: &str, value: &Value, fencing_token: u64) -> Result<(), StateError> {
        self.block_on(key, self.put_state_fenced(key, value, fencing_token))
    }

    /// Needs the multi-thread tokio runtime; see the module doc.
    fn get_many(
        &self,
        keys: &[String],
    ) -> Result<std::collections::BTreeMap<String, Option<Value>>, StateError> {
        let first = keys.first().map(String::as_str).unwrap_or_default();
        self.block_on(first, self.get_states(keys))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, AttributeValue)]) -> HashMap<String, AttributeValue> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn lease_item(
        owner: &str,
        token: i64,
        acquired: i64,
        expires: i64,
    ) -> HashMap<String, AttributeValue> {
        item(&[
            (KEY, s("A->B/MirrorSourceConnector/0")),
            ("owner", s(owner)),
            ("fencing_token", num(token)),
            ("acquired_at_ms", num(acquired)),
            ("renewed_at_ms", num(acquired)),
            ("expires_at_ms", num(expires)),
        ])
    }

    #[test]
    fn lease_item_parses_and_rejects_malformed() {
        let k = "A->B/MirrorSourceConnector/0";
        let info = lease_from_item(k, &lease_item("w1", 7, 100, 1100)).unwrap();
        assert_eq!(
            info,
            LeaseInfo {
                key: k.into(),
                owner: "w1".into(),
                fencing_token: 7,
                expires_at_ms: 1100
            }
        );
        let mut bad = lease_item("w1", 7, 100, 1100);
        bad.insert("fencing_token".into(), s("7"));
        assert_eq!(
            lease_from_item(k, &bad),
            None,
            "token stored as S is malformed"
        );
        let mut neg = lease_item("w1", 7, 100, 1100);
        neg.insert("fencing_token".into(), num(-1));
        assert_eq!(
            lease_from_item(k, &neg),
            None,
            "a negative token is malformed"
        );
        let mut no_owner = lease_item("w1", 7, 100, 1100);
        no_owner.remove("owner");
        assert_eq!(lease_from_item(k, &no_owner), None);
    }

    /// A retried acquire whose first attempt won recognises its own write, and only its own.
    #[test]
    fn retried_acquire_recognises_only_its_own_write() {
        let k = "A->B/MirrorSourceConnector/0";
        let ours = lease_item("w1", 3, 5_000, 35_000);
        let got = acquired_by_this_call(k, &ours, "w1", 5_000, 35_000).unwrap();
        assert_eq!((got.owner.as_str(), got.fencing_token), ("w1", 3));
        // Someone else holds it.
        assert!(
            acquired_by_this_call(k, &lease_item("w2", 3, 5_000, 35_000), "w1", 5_000, 35_000)
                .is_none()
        );
        // Same owner, but an earlier acquisition (not this call's write).
        assert!(acquired_by_this_call(k, &ours, "w1", 6_000, 36_000).is_none());
        // Same acquire time, but renewed since (expiry moved): still not this call's write.
        assert!(acquired_by_this_call(k, &ours, "w1", 5_000, 40_000).is_none());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn sync_state_api_refuses_current_thread_runtime_instead_of_panicking() {
        let store = DynamoLeaseStore::with_endpoint("http://127.0.0.1:9", "us-east-1", "t");
        let err = StateStore::get(&store, "A->B/x").unwrap_err().to_string();
        assert!(
            err.contains("state A->B/x") && err.contains("multi-thread"),
            "{err}"
        );
    }

    #[test]
    fn sync_state_api_refuses_no_runtime() {
        let store = DynamoLeaseStore::with_endpoint("http://127.0.0.1:9", "us-east-1", "t");
        let err = StateStore::put(&store, "k", &serde_json::json!(1))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("state k") && err.contains("tokio runtime"),
            "{err}"
        );
    }
}
