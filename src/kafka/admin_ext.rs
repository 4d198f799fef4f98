//! Admin requests MM2 needs that the `rdkafka` crate does not wrap.
//!
//! Why this exists: MM2's source connector syncs topic configs with `incrementalAlterConfigs`
//! (mm2-compat §6.5) and ACLs with `describeAcls`/`createAcls` (§6.6); its checkpoint connector
//! discovers groups with `listConsumerGroups` and reads/writes their offsets with
//! `describeConsumerGroups`, `listConsumerGroupOffsets` and `alterConsumerGroupOffsets`
//! (§8.1, §8.6). librdkafka implements all of these, but rdkafka 0.39 only exposes the topic and
//! `describe_configs` calls, so this module drives the C API directly through `rdkafka-sys` (the
//! same librdkafka build the `AdminClient` uses) and hands back plain Rust values.
//!
//! Each call is **one admin request bounded by its `timeout`**: the timeout is librdkafka's
//! request timeout, and the reply is awaited a little longer so librdkafka's own timed-out
//! result (more precise than ours) normally arrives first. Nothing here retries; MM2 treats
//! these failures as "log and try again next interval", so the caller decides.
//!
//! How: every call creates a private reply queue, submits the request on the admin client's
//! handle, and waits for the single result event on a blocking thread. The wait is
//! cancellation-safe: if the future is dropped (e.g. by `tokio::time::timeout` when the
//! batch deadline hits), the blocking poll is woken with `rd_kafka_queue_yield` and finishes
//! before the drop returns, so no librdkafka object outlives the borrowed client. Every object
//! we create (options, request objects, event, queue) is owned by a small RAII guard.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::admin::AdminClient;
use rdkafka::client::ClientContext;
use rdkafka::{Offset, TopicPartitionList};
use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as RespErr;

/// Extra time we wait beyond the request timeout for librdkafka to deliver its own result.
const REPLY_GRACE: Duration = Duration::from_secs(1);
/// librdkafka rejects request timeouts above one hour.
const MAX_REQUEST_TIMEOUT_MS: u128 = 3_600_000;

/// Failure of an admin request (the whole call) or of one item in it (a topic, a binding…).
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The broker has no authorizer (`SECURITY_DISABLED`); MM2 skips ACL sync (§6.6).
    #[error("security is disabled on the broker (no authorizer): {0}")]
    SecurityDisabled(String),
    /// The broker does not support the request (Java's `UnsupportedVersionException`, which
    /// §6.5 turns into a connector error rather than a log line).
    #[error("broker does not support this request ({code}): {message}")]
    UnsupportedVersion { code: String, message: String },
    /// Any other Kafka or librdkafka error; `code` is librdkafka's name (`TOPIC_AUTHORIZATION_FAILED`,
    /// `_INVALID_ARG`, …).
    #[error("{code}: {message}")]
    Kafka { code: String, message: String },
    /// No result within the request timeout.
    #[error("admin request timed out")]
    Timeout,
    /// The request could not be built (NUL byte in a name, negative offset, bad ACL binding…).
    #[error("invalid admin request: {0}")]
    InvalidArgument(String),
    /// librdkafka answered with something we did not ask for (a bug, not a broker condition).
    #[error("unexpected admin result: {0}")]
    Protocol(String),
}

impl AdminError {
    /// librdkafka's error code name, when the error came from librdkafka or the broker.
    pub fn code(&self) -> Option<&str> {
        match self {
            AdminError::SecurityDisabled(_) => Some("SECURITY_DISABLED"),
            AdminError::UnsupportedVersion { code, .. } | AdminError::Kafka { code, .. } => {
                Some(code)
            }
            AdminError::Timeout => Some("_TIMED_OUT"),
            AdminError::InvalidArgument(_) | AdminError::Protocol(_) => None,
        }
    }

    fn from_code(code: RespErr, message: String) -> AdminError {
        let message = if message.is_empty() {
            // SAFETY: rd_kafka_err2str returns a static string for every code.
            unsafe { cstr(rd::rd_kafka_err2str(code)) }
        } else {
            message
        };
        // SAFETY: rd_kafka_err2name returns a static string for every code.
        let name = unsafe { cstr(rd::rd_kafka_err2name(code)) };
        match code {
            RespErr::RD_KAFKA_RESP_ERR_SECURITY_DISABLED => AdminError::SecurityDisabled(message),
            RespErr::RD_KAFKA_RESP_ERR__TIMED_OUT => AdminError::Timeout,
            RespErr::RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION
            | RespErr::RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE => AdminError::UnsupportedVersion {
                code: name,
                message,
            },
            _ => AdminError::Kafka {
                code: name,
                message,
            },
        }
    }

    /// `None` for a null or NO_ERROR `rd_kafka_error_t`.
    ///
    /// # Safety
    /// `err` is null or a valid `rd_kafka_error_t` (we do not take ownership).
    unsafe fn from_error_t(err: *const rd::rd_kafka_error_t) -> Option<AdminError> {
        if err.is_null() {
            return None;
        }
        let code = rd::rd_kafka_error_code(err);
        if code == RespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
            return None;
        }
        Some(AdminError::from_code(
            code,
            cstr(rd::rd_kafka_error_string(err)),
        ))
    }
}

/// One change of an `incrementalAlterConfigs` request (§6.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterOp {
    /// Set the config to this value on the topic.
    Set(String),
    /// Remove the topic-level override, reverting to the cluster's default.
    Delete,
}

macro_rules! native_enum {
    (
        $(#[$meta:meta])*
        $name:ident <=> $native:ident { $($variant:ident = $c:ident => $java:literal,)* }
        unknown = $unknown:ident
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant,)* }

        impl $name {
            /// The name Java's Kafka admin API uses (`TOPIC`, `LITERAL`, `ALLOW`…).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $java,)* }
            }

            #[allow(dead_code)] // GroupState is only ever read from librdkafka
            fn to_native(self) -> rd::$native {
                match self { $($name::$variant => rd::$native::$c,)* }
            }

            fn from_native(v: rd::$native) -> Self {
                match v {
                    $(rd::$native::$c => $name::$variant,)*
                    #[allow(unreachable_patterns)]
                    _ => $name::$unknown,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

native_enum! {
    /// Kind of resource an ACL protects. `Cluster` is librdkafka's `BROKER` resource type.
    ResourceType <=> rd_kafka_ResourceType_t {
        Unknown = RD_KAFKA_RESOURCE_UNKNOWN => "UNKNOWN",
        Any = RD_KAFKA_RESOURCE_ANY => "ANY",
        Topic = RD_KAFKA_RESOURCE_TOPIC => "TOPIC",
        Group = RD_KAFKA_RESOURCE_GROUP => "GROUP",
        Cluster = RD_KAFKA_RESOURCE_BROKER => "CLUSTER",
        TransactionalId = RD_KAFKA_RESOURCE_TRANSACTIONAL_ID => "TRANSACTIONAL_ID",
    }
    unknown = Unknown
}

native_enum! {
    /// How an ACL's resource name matches.
    PatternType <=> rd_kafka_ResourcePatternType_t {
        Unknown = RD_KAFKA_RESOURCE_PATTERN_UNKNOWN => "UNKNOWN",
        Any = RD_KAFKA_RESOURCE_PATTERN_ANY => "ANY",
        Match = RD_KAFKA_RESOURCE_PATTERN_MATCH => "MATCH",
        Literal = RD_KAFKA_RESOURCE_PATTERN_LITERAL => "LITERAL",
        Prefixed = RD_KAFKA_RESOURCE_PATTERN_PREFIXED => "PREFIXED",
    }
    unknown = Unknown
}

native_enum! {
    /// Operation an ACL allows or denies.
    AclOperation <=> rd_kafka_AclOperation_t {
        Unknown = RD_KAFKA_ACL_OPERATION_UNKNOWN => "UNKNOWN",
        Any = RD_KAFKA_ACL_OPERATION_ANY => "ANY",
        All = RD_KAFKA_ACL_OPERATION_ALL => "ALL",
        Read = RD_KAFKA_ACL_OPERATION_READ => "READ",
        Write = RD_KAFKA_ACL_OPERATION_WRITE => "WRITE",
        Create = RD_KAFKA_ACL_OPERATION_CREATE => "CREATE",
        Delete = RD_KAFKA_ACL_OPERATION_DELETE => "DELETE",
        Alter = RD_KAFKA_ACL_OPERATION_ALTER => "ALTER",
        Describe = RD_KAFKA_ACL_OPERATION_DESCRIBE => "DESCRIBE",
        ClusterAction = RD_KAFKA_ACL_OPERATION_CLUSTER_ACTION => "CLUSTER_ACTION",
        DescribeConfigs = RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS => "DESCRIBE_CONFIGS",
        AlterConfigs = RD_KAFKA_ACL_OPERATION_ALTER_CONFIGS => "ALTER_CONFIGS",
        IdempotentWrite = RD_KAFKA_ACL_OPERATION_IDEMPOTENT_WRITE => "IDEMPOTENT_WRITE",
    }
    unknown = Unknown
}

native_enum! {
    /// Whether an ACL allows or denies its operation.
    AclPermission <=> rd_kafka_AclPermissionType_t {
        Unknown = RD_KAFKA_ACL_PERMISSION_TYPE_UNKNOWN => "UNKNOWN",
        Any = RD_KAFKA_ACL_PERMISSION_TYPE_ANY => "ANY",
        Deny = RD_KAFKA_ACL_PERMISSION_TYPE_DENY => "DENY",
        Allow = RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW => "ALLOW",
    }
    unknown = Unknown
}

native_enum! {
    /// Consumer group state, as in Java's `ConsumerGroupState`. §8.6 only syncs into `Empty`
    /// groups with care and treats `Dead` as "does not exist".
    GroupState <=> rd_kafka_consumer_group_state_t {
        Unknown = RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN => "UNKNOWN",
        PreparingRebalance = RD_KAFKA_CONSUMER_GROUP_STATE_PREPARING_REBALANCE => "PREPARING_REBALANCE",
        CompletingRebalance = RD_KAFKA_CONSUMER_GROUP_STATE_COMPLETING_REBALANCE => "COMPLETING_REBALANCE",
        Stable = RD_KAFKA_CONSUMER_GROUP_STATE_STABLE => "STABLE",
        Dead = RD_KAFKA_CONSUMER_GROUP_STATE_DEAD => "DEAD",
        Empty = RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY => "EMPTY",
    }
    unknown = Unknown
}

/// One ACL entry with its resource pattern, as in Java's `AclBinding`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern_type: PatternType,
    pub principal: String,
    pub host: String,
    pub operation: AclOperation,
    pub permission: AclPermission,
}

/// A consumer group from `listConsumerGroups` (§8.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    /// A "simple" group only commits offsets and never had members (no protocol type).
    pub is_simple: bool,
    pub state: GroupState,
}

/// A consumer group from `describeConsumerGroups` (§8.6). A group that does not exist is
/// described by Kafka as `Dead` with no members, not as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    pub is_simple: bool,
    pub state: GroupState,
    /// Number of members currently in the group.
    pub members: usize,
    pub partition_assignor: String,
}

// ---------------------------------------------------------------------------------------------
// RAII guards for librdkafka objects.
// ---------------------------------------------------------------------------------------------

/// Copies a C string (null becomes empty).
///
/// # Safety
/// `p` is null or a valid NUL-terminated string.
unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn c_string(what: &str, s: &str) -> Result<CString, AdminError> {
    CString::new(s)
        .map_err(|_| AdminError::InvalidArgument(format!("{what} {s:?} contains a NUL byte")))
}

macro_rules! guard {
    ($(#[$meta:meta])* $name:ident($native:ty) drop $destroy:path) => {
        $(#[$meta])*
        struct $name(*mut $native);

        impl Drop for $name {
            fn drop(&mut self) {
                if !self.0.is_null() {
                    // SAFETY: we own the pointer (created by the matching `_new`), and nothing
                    // uses it after this drop.
                    unsafe { $destroy(self.0) }
                }
            }
        }
    };
}

guard!(
    /// Request options; librdkafka copies them into the request, so they die after submit.
    Options(rd::rd_kafka_AdminOptions_t) drop rd::rd_kafka_AdminOptions_destroy
);
guard!(ConfigResource(rd::rd_kafka_ConfigResource_t) drop rd::rd_kafka_ConfigResource_destroy);
guard!(AclBindingObj(rd::rd_kafka_AclBinding_t) drop rd::rd_kafka_AclBinding_destroy);
guard!(
    ListOffsetsReq(rd::rd_kafka_ListConsumerGroupOffsets_t)
        drop rd::rd_kafka_ListConsumerGroupOffsets_destroy
);
guard!(
    AlterOffsetsReq(rd::rd_kafka_AlterConsumerGroupOffsets_t)
        drop rd::rd_kafka_AlterConsumerGroupOffsets_destroy
);
guard!(
    TopicCollection(rd::rd_kafka_TopicCollection_t) drop rd::rd_kafka_TopicCollection_destroy
);
guard!(
    /// The reply queue of one request.
    Queue(rd::rd_kafka_queue_t) drop rd::rd_kafka_queue_destroy
);
guard!(
    /// The result event of one request; every result object we read is owned by it.
    Event(rd::rd_kafka_event_t) drop rd::rd_kafka_event_destroy
);

// SAFETY: librdkafka queues and events are not tied to a thread; we only ever use each from
// one thread at a time (the waiter's mutex serialises the queue; see `Pending`).
unsafe impl Send for Queue {}
// SAFETY: as above; an event is read by one thread after the poll hands it over.
unsafe impl Send for Event {}

/// Error buffer for librdkafka calls that report through `errstr`.
struct ErrBuf([c_char; 512]);

impl ErrBuf {
    fn new() -> Self {
        ErrBuf([0; 512])
    }
    fn text(&self) -> String {
        // SAFETY: zero-initialised and librdkafka NUL-terminates what it writes.
        unsafe { cstr(self.0.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------------------------
// Submitting a request and waiting for its single result event.
// ---------------------------------------------------------------------------------------------

/// A submitted request: its reply queue, waited on by [`Pending::wait`].
struct Pending {
    queue: Queue,
    timeout: Duration,
    /// The result event type this request produces.
    expected: c_int,
    what: &'static str,
}

/// Creates the options and reply queue, then lets `call` submit the request with
/// `(client, options, queue)`. Request objects built by the caller may be freed after `call`:
/// librdkafka copies them.
fn submit<C: ClientContext>(
    admin: &AdminClient<C>,
    op: rd::rd_kafka_admin_op_t,
    expected: c_int,
    what: &'static str,
    timeout: Duration,
    call: impl FnOnce(*mut rd::rd_kafka_t, *mut rd::rd_kafka_AdminOptions_t, *mut rd::rd_kafka_queue_t),
) -> Result<Pending, AdminError> {
    let client = admin.inner().native_ptr();
    // SAFETY: `client` is the live handle of `admin`, borrowed for this call.
    let options = Options(unsafe { rd::rd_kafka_AdminOptions_new(client, op) });
    if options.0.is_null() {
        return Err(AdminError::InvalidArgument(format!(
            "{what}: cannot create admin options"
        )));
    }
    let ms = timeout.as_millis().clamp(1, MAX_REQUEST_TIMEOUT_MS) as c_int;
    let mut err = ErrBuf::new();
    // SAFETY: `options` is valid; the buffer and its size match.
    let code = unsafe {
        rd::rd_kafka_AdminOptions_set_request_timeout(
            options.0,
            ms,
            err.0.as_mut_ptr(),
            err.0.len(),
        )
    };
    if code != RespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
        return Err(AdminError::InvalidArgument(format!(
            "{what}: request timeout: {}",
            err.text()
        )));
    }
    // SAFETY: as above; the queue is owned by the guard.
    let queue = Queue(unsafe { rd::rd_kafka_queue_new(client) });
    if queue.0.is_null() {
        return Err(AdminError::InvalidArgument(format!(
            "{what}: cannot create reply queue"
        )));
    }
    call(client, options.0, queue.0);
    Ok(Pending {
        queue,
        timeout,
        expected,
        what,
    })
}

/// State shared between the waiting future and the blocking poll.
struct WaitState {
    /// Taken (and destroyed) by whoever finishes with it; see `Pending::wait`.
    queue: Option<Queue>,
    polling: bool,
    cancelled: bool,
}

struct Waiter {
    state: Mutex<WaitState>,
    idle: Condvar,
}

impl Waiter {
    fn lock(&self) -> MutexGuard<'_, WaitState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs when the waiting future finishes *or is dropped*: makes sure the blocking poll has
/// left librdkafka and the queue is destroyed before the borrow of the client ends.
struct CancelOnDrop(Arc<Waiter>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.cancelled = true;
        if st.polling {
            if let Some(q) = &st.queue {
                // SAFETY: the queue is alive (the poller destroys it only under this lock,
                // after `polling` goes false); yield is safe from any thread.
                unsafe { rd::rd_kafka_queue_yield(q.0) };
            }
            while st.polling {
                st = self.0.idle.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        // Destroy the queue here if the poll never ran (runtime shutting down).
        st.queue = None;
    }
}

impl Pending {
    /// Waits for the result event and checks its type and request-level error.
    async fn wait(self) -> Result<Event, AdminError> {
        let Pending {
            queue,
            timeout,
            expected,
            what,
        } = self;
        let waiter = Arc::new(Waiter {
            state: Mutex::new(WaitState {
                queue: Some(queue),
                polling: false,
                cancelled: false,
            }),
            idle: Condvar::new(),
        });
        let _cancel = CancelOnDrop(waiter.clone());
        let deadline = Instant::now() + timeout + REPLY_GRACE;
        let poller = waiter.clone();
        let joined = tokio::task::spawn_blocking(move || poll_until(&poller, deadline)).await;
        let event = match joined {
            Ok(Some(event)) => event,
            Ok(None) => return Err(AdminError::Timeout),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Err(AdminError::Protocol(format!("{what}: wait was cancelled"))),
        };
        check_event(&event, expected, what)?;
        Ok(event)
    }
}

/// The blocking half of [`Pending::wait`]: polls until an event, the deadline or cancellation.
fn poll_until(waiter: &Waiter, deadline: Instant) -> Option<Event> {
    let queue = {
        let mut st = waiter.lock();
        let q = st.queue.as_ref().map(|q| q.0)?;
        if st.cancelled {
            return None;
        }
        st.polling = true;
        q
    };
    let mut event = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || waiter.lock().cancelled {
            break;
        }
        let ms = left.as_millis().min(c_int::MAX as u128) as c_int;
        // SAFETY: the queue stays alive while `polling` is true (see CancelOnDrop).
        let ev = unsafe { rd::rd_kafka_queue_poll(queue, ms) };
        if !ev.is_null() {
            event = Some(Event(ev));
            break;
        }
    }
    let mut st = waiter.lock();
    st.polling = false;
    if st.cancelled {
        // Nobody will read it: free it now, while the client is certainly alive.
        event = None;
    }
    st.queue = None;
    drop(st);
    waiter.idle.notify_all();
    event
}

fn check_event(event: &Event, expected: c_int, what: &str) -> Result<(), AdminError> {
    // SAFETY: `event` is a live event we own.
    let (typ, code) = unsafe {
        (
            rd::rd_kafka_event_type(event.0),
            rd::rd_kafka_event_error(event.0),
        )
    };
    if code != RespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
        // SAFETY: as above; the string is owned by the event.
        let msg = unsafe { cstr(rd::rd_kafka_event_error_string(event.0)) };
        return Err(AdminError::from_code(code, msg));
    }
    if typ != expected {
        return Err(AdminError::Protocol(format!(
            "{what}: result event type {typ}, expected {expected}"
        )));
    }
    Ok(())
}

/// Views a C array of `n` pointers as a slice (empty for null).
///
/// # Safety
/// `p` is null or points to `n` valid elements that outlive the returned slice.
unsafe fn c_array<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n)
    }
}

/// `(topic, partition, offset, metadata, error)` of each element of a borrowed partition list.
///
/// # Safety
/// `list` is null or a valid list that stays alive during the call.
unsafe fn read_partitions(
    list: *const rd::rd_kafka_topic_partition_list_t,
) -> Vec<(String, i32, i64, String, Option<AdminError>)> {
    if list.is_null() {
        return Vec::new();
    }
    let elems = c_array(
        (*list).elems as *const rd::rd_kafka_topic_partition_t,
        (*list).cnt.max(0) as usize,
    );
    elems
        .iter()
        .map(|e| {
            let metadata = if e.metadata.is_null() || e.metadata_size == 0 {
                String::new()
            } else {
                let bytes = std::slice::from_raw_parts(e.metadata as *const u8, e.metadata_size);
                String::from_utf8_lossy(bytes).into_owned()
            };
            let err = if e.err == RespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
                None
            } else {
                Some(AdminError::from_code(e.err, String::new()))
            };
            (cstr(e.topic), e.partition, e.offset, metadata, err)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// incrementalAlterConfigs (§6.5)
// ---------------------------------------------------------------------------------------------

/// Applies SET/DELETE config changes to topics with one `incrementalAlterConfigs` request.
///
/// Returns one result per topic in `changes`; a topic the broker rejected carries its error
/// (e.g. `Kafka { code: "INVALID_CONFIG", .. }`). A broker without the API fails the whole call
/// with [`AdminError::UnsupportedVersion`], which §6.5 treats as a connector error.
pub async fn incremental_alter_topic_configs<C: ClientContext>(
    admin: &AdminClient<C>,
    changes: &BTreeMap<String, Vec<(String, AlterOp)>>,
    timeout: Duration,
) -> Result<BTreeMap<String, Result<(), AdminError>>, AdminError> {
    if changes.is_empty() {
        return Ok(BTreeMap::new());
    }
    let event = start_incremental_alter(admin, changes, timeout)?
        .wait()
        .await?;
    let mut results = BTreeMap::new();
    // SAFETY: the result and everything it points to are owned by `event`, alive here.
    unsafe {
        let res = rd::rd_kafka_event_IncrementalAlterConfigs_result(event.0);
        let mut n = 0;
        let resources = rd::rd_kafka_IncrementalAlterConfigs_result_resources(res, &mut n);
        for &r in c_array(resources, n) {
            let name = cstr(rd::rd_kafka_ConfigResource_name(r));
            let code = rd::rd_kafka_ConfigResource_error(r);
            let outcome = if code == RespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
                Ok(())
            } else {
                Err(AdminError::from_code(
                    code,
                    cstr(rd::rd_kafka_ConfigResource_error_string(r)),
                ))
            };
            results.insert(name, outcome);
        }
    }
    fill_missing(&mut results, changes.keys(), "incrementalAlterConfigs");
    Ok(results)
}

fn fill_missing<'a>(
    results: &mut BTreeMap<String, Result<(), AdminError>>,
    asked: impl Iterator<Item = &'a String>,
    what: &str,
) {
    for name in asked {
        results.entry(name.clone()).or_insert_with(|| {
            Err(AdminError::Protocol(format!(
                "{what}: no result for {name}"
            )))
        });
    }
}

fn start_incremental_alter<C: ClientContext>(
    admin: &AdminClient<C>,
    changes: &BTreeMap<String, Vec<(String, AlterOp)>>,
    timeout: Duration,
) -> Result<Pending, AdminError> {
    let mut resources = Vec::with_capacity(changes.len());
    for (topic, ops) in changes {
        let c_topic = c_string("topic", topic)?;
        // SAFETY: valid type and NUL-terminated name (copied by librdkafka).
        let res = ConfigResource(unsafe {
            rd::rd_kafka_ConfigResource_new(
                rd::rd_kafka_ResourceType_t::RD_KAFKA_RESOURCE_TOPIC,
                c_topic.as_ptr(),
            )
        });
        if res.0.is_null() {
            return Err(AdminError::InvalidArgument(format!(
                "topic {topic:?}: cannot create config resource"
            )));
        }
        for (name, op) in ops {
            let c_name = c_string("config", name)?;
            let (op_type, value) = match op {
                AlterOp::Set(v) => (
                    rd::rd_kafka_AlterConfigOpType_t::RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET,
                    Some(c_string("config value", v)?),
                ),
                AlterOp::Delete => (
                    rd::rd_kafka_AlterConfigOpType_t::RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE,
                    None,
                ),
            };
            let value_ptr = value.as_ref().map_or(ptr::null(), |v| v.as_ptr());
            // SAFETY: `res` is valid; name/value are NUL-terminated (value may be null for
            // DELETE) and copied. The returned error is ours to destroy.
            let err = unsafe {
                rd::rd_kafka_ConfigResource_add_incremental_config(
                    res.0,
                    c_name.as_ptr(),
                    op_type,
                    value_ptr,
                )
            };
            if !err.is_null() {
                // SAFETY: non-null error we own: read it, then destroy it.
                let msg = unsafe {
                    let m = cstr(rd::rd_kafka_error_string(err));
                    rd::rd_kafka_error_destroy(err);
                    m
                };
                return Err(AdminError::InvalidArgument(format!(
                    "topic {topic:?} config {name:?}: {msg}"
                )));
            }
        }
        resources.push(res);
    }
    let mut ptrs: Vec<*mut rd::rd_kafka_ConfigResource_t> = resources.iter().map(|r| r.0).collect();
    submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_INCREMENTALALTERCONFIGS,
        rd::RD_KAFKA_EVENT_INCREMENTALALTERCONFIGS_RESULT,
        "incrementalAlterConfigs",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid; librdkafka copies the resources.
            unsafe {
                rd::rd_kafka_IncrementalAlterConfigs(
                    client,
                    ptrs.as_mut_ptr(),
                    ptrs.len(),
                    options,
                    queue,
                )
            }
        },
    )
}

// ---------------------------------------------------------------------------------------------
// describeAcls / createAcls (§6.6)
// ---------------------------------------------------------------------------------------------

/// `describeAcls(resource=TOPIC, any name, any pattern type, any entry)`, as MM2's ACL sync
/// issues it (§6.6). A broker without an authorizer fails with
/// [`AdminError::SecurityDisabled`], which MM2 treats as "skip ACL sync".
pub async fn describe_topic_acls<C: ClientContext>(
    admin: &AdminClient<C>,
    timeout: Duration,
) -> Result<Vec<AclBinding>, AdminError> {
    let event = start_describe_topic_acls(admin, timeout)?.wait().await?;
    let mut out = Vec::new();
    // SAFETY: the result and the bindings are owned by `event`, alive here.
    unsafe {
        let res = rd::rd_kafka_event_DescribeAcls_result(event.0);
        let mut n = 0;
        let acls = rd::rd_kafka_DescribeAcls_result_acls(res, &mut n);
        for &acl in c_array(acls, n) {
            out.push(AclBinding {
                resource_type: ResourceType::from_native(rd::rd_kafka_AclBinding_restype(acl)),
                name: cstr(rd::rd_kafka_AclBinding_name(acl)),
                pattern_type: PatternType::from_native(
                    rd::rd_kafka_AclBinding_resource_pattern_type(acl),
                ),
                principal: cstr(rd::rd_kafka_AclBinding_principal(acl)),
                host: cstr(rd::rd_kafka_AclBinding_host(acl)),
                operation: AclOperation::from_native(rd::rd_kafka_AclBinding_operation(acl)),
                permission: AclPermission::from_native(rd::rd_kafka_AclBinding_permission_type(
                    acl,
                )),
            });
        }
    }
    Ok(out)
}

fn start_describe_topic_acls<C: ClientContext>(
    admin: &AdminClient<C>,
    timeout: Duration,
) -> Result<Pending, AdminError> {
    let mut err = ErrBuf::new();
    // SAFETY: null name/principal/host mean "any"; the buffer and its size match.
    let filter = AclBindingObj(unsafe {
        rd::rd_kafka_AclBindingFilter_new(
            ResourceType::Topic.to_native(),
            ptr::null(),
            PatternType::Any.to_native(),
            ptr::null(),
            ptr::null(),
            AclOperation::Any.to_native(),
            AclPermission::Any.to_native(),
            err.0.as_mut_ptr(),
            err.0.len(),
        )
    });
    if filter.0.is_null() {
        return Err(AdminError::InvalidArgument(format!(
            "ACL filter: {}",
            err.text()
        )));
    }
    submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_DESCRIBEACLS,
        rd::RD_KAFKA_EVENT_DESCRIBEACLS_RESULT,
        "describeAcls",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid; librdkafka copies the filter.
            unsafe { rd::rd_kafka_DescribeAcls(client, filter.0, options, queue) }
        },
    )
}

/// Creates ACL bindings with one `createAcls` request (additive: nothing is removed, §6.6).
/// Returns one result per binding, in input order.
pub async fn create_acls<C: ClientContext>(
    admin: &AdminClient<C>,
    bindings: &[AclBinding],
    timeout: Duration,
) -> Result<Vec<Result<(), AdminError>>, AdminError> {
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let event = start_create_acls(admin, bindings, timeout)?.wait().await?;
    // SAFETY: the result and the per-binding results are owned by `event`, alive here.
    let out: Vec<Result<(), AdminError>> = unsafe {
        let res = rd::rd_kafka_event_CreateAcls_result(event.0);
        let mut n = 0;
        let results = rd::rd_kafka_CreateAcls_result_acls(res, &mut n);
        c_array(results, n)
            .iter()
            .map(
                |&r| match AdminError::from_error_t(rd::rd_kafka_acl_result_error(r)) {
                    None => Ok(()),
                    Some(e) => Err(e),
                },
            )
            .collect()
    };
    if out.len() != bindings.len() {
        return Err(AdminError::Protocol(format!(
            "createAcls: {} results for {} bindings",
            out.len(),
            bindings.len()
        )));
    }
    Ok(out)
}

fn start_create_acls<C: ClientContext>(
    admin: &AdminClient<C>,
    bindings: &[AclBinding],
    timeout: Duration,
) -> Result<Pending, AdminError> {
    let mut natives = Vec::with_capacity(bindings.len());
    for b in bindings {
        let name = c_string("ACL resource name", &b.name)?;
        let principal = c_string("ACL principal", &b.principal)?;
        let host = c_string("ACL host", &b.host)?;
        let mut err = ErrBuf::new();
        // SAFETY: all strings are NUL-terminated and copied; the buffer and its size match.
        let native = AclBindingObj(unsafe {
            rd::rd_kafka_AclBinding_new(
                b.resource_type.to_native(),
                name.as_ptr(),
                b.pattern_type.to_native(),
                principal.as_ptr(),
                host.as_ptr(),
                b.operation.to_native(),
                b.permission.to_native(),
                err.0.as_mut_ptr(),
                err.0.len(),
            )
        });
        if native.0.is_null() {
            return Err(AdminError::InvalidArgument(format!(
                "ACL binding {b:?}: {}",
                err.text()
            )));
        }
        natives.push(native);
    }
    let mut ptrs: Vec<*mut rd::rd_kafka_AclBinding_t> = natives.iter().map(|b| b.0).collect();
    submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_CREATEACLS,
        rd::RD_KAFKA_EVENT_CREATEACLS_RESULT,
        "createAcls",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid; librdkafka copies the bindings.
            unsafe {
                rd::rd_kafka_CreateAcls(client, ptrs.as_mut_ptr(), ptrs.len(), options, queue)
            }
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Consumer groups (§8.1, §8.6)
// ---------------------------------------------------------------------------------------------

/// All consumer groups of the cluster, like Java's `listConsumerGroups().valid()` (§8.1):
/// brokers that fail to answer are skipped (logged at warn level).
///
/// One deliberate difference: when *no* broker answered (no listing and at least one error,
/// e.g. the cluster is unreachable), this fails with the first error instead of returning an
/// empty list, so a network failure is not mistaken for "the cluster has no groups". Use
/// [`list_consumer_groups_with_errors`] for Java's exact behaviour.
pub async fn list_consumer_groups<C: ClientContext>(
    admin: &AdminClient<C>,
    timeout: Duration,
) -> Result<Vec<GroupListing>, AdminError> {
    let (valid, errors) = list_consumer_groups_with_errors(admin, timeout).await?;
    for e in &errors {
        tracing::warn!(error = %e, "listConsumerGroups: a broker did not answer; its groups are skipped");
    }
    match errors.into_iter().next() {
        Some(first) if valid.is_empty() => Err(first),
        _ => Ok(valid),
    }
}

/// `listConsumerGroups()` as Java returns it: the valid listings and, separately, the errors of
/// the brokers that did not answer (Java's `valid()` and `errors()`).
pub async fn list_consumer_groups_with_errors<C: ClientContext>(
    admin: &AdminClient<C>,
    timeout: Duration,
) -> Result<(Vec<GroupListing>, Vec<AdminError>), AdminError> {
    let event = submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS,
        rd::RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT,
        "listConsumerGroups",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid.
            unsafe { rd::rd_kafka_ListConsumerGroups(client, options, queue) }
        },
    )?
    .wait()
    .await?;
    let mut valid = Vec::new();
    let mut errors = Vec::new();
    // SAFETY: the result, listings and errors are owned by `event`, alive here.
    unsafe {
        let res = rd::rd_kafka_event_ListConsumerGroups_result(event.0);
        let mut n = 0;
        let listings = rd::rd_kafka_ListConsumerGroups_result_valid(res, &mut n);
        for &g in c_array(listings, n) {
            valid.push(GroupListing {
                group_id: cstr(rd::rd_kafka_ConsumerGroupListing_group_id(g)),
                is_simple: rd::rd_kafka_ConsumerGroupListing_is_simple_consumer_group(g) != 0,
                state: GroupState::from_native(rd::rd_kafka_ConsumerGroupListing_state(g)),
            });
        }
        let mut n = 0;
        let errs = rd::rd_kafka_ListConsumerGroups_result_errors(res, &mut n);
        errors.extend(
            c_array(errs, n)
                .iter()
                .filter_map(|&e| AdminError::from_error_t(e)),
        );
    }
    Ok((valid, errors))
}

/// Describes the given groups with one `describeConsumerGroups` request (§8.6 refresh).
/// Each group gets its own result; a group that does not exist is `Ok` with state `Dead`.
pub async fn describe_consumer_groups<C: ClientContext>(
    admin: &AdminClient<C>,
    groups: &[String],
    timeout: Duration,
) -> Result<BTreeMap<String, Result<GroupDescription, AdminError>>, AdminError> {
    if groups.is_empty() {
        return Ok(BTreeMap::new());
    }
    let event = start_describe_groups(admin, groups, timeout)?
        .wait()
        .await?;
    let mut out = BTreeMap::new();
    // SAFETY: the result and descriptions are owned by `event`, alive here.
    unsafe {
        let res = rd::rd_kafka_event_DescribeConsumerGroups_result(event.0);
        let mut n = 0;
        let descs = rd::rd_kafka_DescribeConsumerGroups_result_groups(res, &mut n);
        for &d in c_array(descs, n) {
            let group_id = cstr(rd::rd_kafka_ConsumerGroupDescription_group_id(d));
            let outcome =
                match AdminError::from_error_t(rd::rd_kafka_ConsumerGroupDescription_error(d)) {
                    Some(e) => Err(e),
                    None => Ok(GroupDescription {
                        group_id: group_id.clone(),
                        is_simple: rd::rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(
                            d,
                        ) != 0,
                        state: GroupState::from_native(
                            rd::rd_kafka_ConsumerGroupDescription_state(d),
                        ),
                        members: rd::rd_kafka_ConsumerGroupDescription_member_count(d),
                        partition_assignor: cstr(
                            rd::rd_kafka_ConsumerGroupDescription_partition_assignor(d),
                        ),
                    }),
                };
            out.insert(group_id, outcome);
        }
    }
    for g in groups {
        if !out.contains_key(g) {
            out.insert(
                g.clone(),
                Err(AdminError::Protocol(format!(
                    "describeConsumerGroups: no result for {g}"
                ))),
            );
        }
    }
    Ok(out)
}

fn start_describe_groups<C: ClientContext>(
    admin: &AdminClient<C>,
    groups: &[String],
    timeout: Duration,
) -> Result<Pending, AdminError> {
    let names = groups
        .iter()
        .map(|g| c_string("group", g))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS,
        rd::RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT,
        "describeConsumerGroups",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid; librdkafka copies the names.
            unsafe {
                rd::rd_kafka_DescribeConsumerGroups(
                    client,
                    ptrs.as_mut_ptr(),
                    ptrs.len(),
                    options,
                    queue,
                )
            }
        },
    )
}

/// The topic ID (KIP-516) of each of `topics`, with one `describeTopics` request: `Some(id)`
/// as Kafka prints it (base64url, e.g. `kq4tPfR3QW2VpsBzxc6rmA`), `None` where the broker
/// reports none (a broker without topic IDs answers the all-zero ID). A topic the broker
/// reports with an error (deleted since it was listed, not authorized) is left out; a failed
/// request fails the call.
pub async fn describe_topic_ids<C: ClientContext>(
    admin: &AdminClient<C>,
    topics: &[String],
    timeout: Duration,
) -> Result<BTreeMap<String, Option<String>>, AdminError> {
    if topics.is_empty() {
        return Ok(BTreeMap::new());
    }
    let event = start_describe_topics(admin, topics, timeout)?
        .wait()
        .await?;
    let mut out = BTreeMap::new();
    // SAFETY: the result and descriptions are owned by `event`, alive here.
    unsafe {
        let res = rd::rd_kafka_event_DescribeTopics_result(event.0);
        let mut n = 0;
        let descs = rd::rd_kafka_DescribeTopics_result_topics(res, &mut n);
        for &d in c_array(descs, n) {
            let name = cstr(rd::rd_kafka_TopicDescription_name(d));
            if let Some(e) = AdminError::from_error_t(rd::rd_kafka_TopicDescription_error(d)) {
                tracing::debug!(topic = %name, error = %e, "describeTopics: topic skipped");
                continue;
            }
            let id = rd::rd_kafka_TopicDescription_topic_id(d);
            let known = !id.is_null()
                && (rd::rd_kafka_Uuid_most_significant_bits(id) != 0
                    || rd::rd_kafka_Uuid_least_significant_bits(id) != 0);
            // librdkafka encodes standard base64; Kafka prints IDs (`Uuid.toString`) in the
            // URL-safe alphabet. Both without padding.
            let printed = || {
                cstr(rd::rd_kafka_Uuid_base64str(id))
                    .replace('+', "-")
                    .replace('/', "_")
            };
            out.insert(name, known.then(printed));
        }
    }
    Ok(out)
}

fn start_describe_topics<C: ClientContext>(
    admin: &AdminClient<C>,
    topics: &[String],
    timeout: Duration,
) -> Result<Pending, AdminError> {
    let names = topics
        .iter()
        .map(|t| c_string("topic", t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    // SAFETY: the names outlive the call; librdkafka copies them into the collection.
    let collection = TopicCollection(unsafe {
        rd::rd_kafka_TopicCollection_of_topic_names(ptrs.as_mut_ptr(), ptrs.len())
    });
    submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_DESCRIBETOPICS,
        rd::RD_KAFKA_EVENT_DESCRIBETOPICS_RESULT,
        "describeTopics",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid; librdkafka copies the collection into the request.
            unsafe { rd::rd_kafka_DescribeTopics(client, collection.0, options, queue) }
        },
    )
}

/// The committed offsets of every partition of `group`: `(topic, partition, offset, metadata)`,
/// sorted by topic and partition. An offset of −1 is what Java reports as a `null`
/// `OffsetAndMetadata` (§8.6). Partitions the broker reports with an error are skipped and
/// logged, as Java does; a group-level error fails the call.
pub async fn list_consumer_group_offsets<C: ClientContext>(
    admin: &AdminClient<C>,
    group: &str,
    timeout: Duration,
) -> Result<Vec<(String, i32, i64, String)>, AdminError> {
    let event = start_list_offsets(admin, group, timeout)?.wait().await?;
    let partitions = single_group_result(&event, group, "listConsumerGroupOffsets", |res, n| {
        // SAFETY: `res` is the event's own result of the matching type.
        unsafe {
            rd::rd_kafka_ListConsumerGroupOffsets_result_groups(
                rd::rd_kafka_event_ListConsumerGroupOffsets_result(res),
                n,
            )
        }
    })?;
    let mut out = Vec::with_capacity(partitions.len());
    for (topic, partition, offset, metadata, err) in partitions {
        match err {
            None => out.push((topic, partition, offset, metadata)),
            Some(e) => {
                tracing::warn!(group, topic, partition, error = %e, "listConsumerGroupOffsets: partition skipped")
            }
        }
    }
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok(out)
}

fn start_list_offsets<C: ClientContext>(
    admin: &AdminClient<C>,
    group: &str,
    timeout: Duration,
) -> Result<Pending, AdminError> {
    let c_group = c_string("group", group)?;
    // SAFETY: NUL-terminated group (copied); a null partition list means "all partitions".
    let req = ListOffsetsReq(unsafe {
        rd::rd_kafka_ListConsumerGroupOffsets_new(c_group.as_ptr(), ptr::null())
    });
    if req.0.is_null() {
        return Err(AdminError::InvalidArgument(format!(
            "group {group:?}: cannot create request"
        )));
    }
    let mut ptrs = [req.0];
    submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS,
        rd::RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT,
        "listConsumerGroupOffsets",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid; librdkafka copies the request.
            unsafe {
                rd::rd_kafka_ListConsumerGroupOffsets(
                    client,
                    ptrs.as_mut_ptr(),
                    ptrs.len(),
                    options,
                    queue,
                )
            }
        },
    )
}

/// One result per partition of an `alterConsumerGroupOffsets` call.
pub type PartitionResults = Vec<((String, i32), Result<(), AdminError>)>;

/// Commits `(topic, partition, offset, metadata)` for `group` with an
/// `alterConsumerGroupOffsets` request (§8.6). Returns one result per partition: a group with
/// active members rejects them (`UNKNOWN_MEMBER_ID`), which MM2 logs as a warning.
///
/// Partitions refused because the group's coordinator is moving or loading (a new cluster
/// creating `__consumer_offsets`, a broker restart) are sent again until `timeout`, as Java's
/// admin client does; librdkafka hands those partition errors back as they are.
pub async fn alter_consumer_group_offsets<C: ClientContext>(
    admin: &AdminClient<C>,
    group: &str,
    offsets: &[(String, i32, i64, String)],
    timeout: Duration,
) -> Result<PartitionResults, AdminError> {
    const RETRY_BACKOFF: Duration = Duration::from_millis(100);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut results = alter_offsets_once(admin, group, offsets, timeout).await?;
    loop {
        let retry: Vec<_> = offsets
            .iter()
            .filter(|(t, p, _, _)| {
                results
                    .iter()
                    .any(|((rt, rp), r)| rt == t && rp == p && is_coordinator_moving(r))
            })
            .cloned()
            .collect();
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if retry.is_empty() || left <= RETRY_BACKOFF * 2 {
            return Ok(results);
        }
        tokio::time::sleep(RETRY_BACKOFF).await;
        let again = alter_offsets_once(admin, group, &retry, left - RETRY_BACKOFF).await?;
        for (key, result) in again {
            if let Some(slot) = results.iter_mut().find(|(k, _)| *k == key) {
                slot.1 = result;
            }
        }
    }
}

/// Coordinator errors Java's admin client retries after looking the coordinator up again.
fn is_coordinator_moving(result: &Result<(), AdminError>) -> bool {
    matches!(
        result.as_ref().err().and_then(AdminError::code),
        Some("NOT_COORDINATOR" | "COORDINATOR_NOT_AVAILABLE" | "COORDINATOR_LOAD_IN_PROGRESS")
    )
}

async fn alter_offsets_once<C: ClientContext>(
    admin: &AdminClient<C>,
    group: &str,
    offsets: &[(String, i32, i64, String)],
    timeout: Duration,
) -> Result<PartitionResults, AdminError> {
    if offsets.is_empty() {
        return Ok(Vec::new());
    }
    let event = start_alter_offsets(admin, group, offsets, timeout)?
        .wait()
        .await?;
    let partitions = single_group_result(&event, group, "alterConsumerGroupOffsets", |res, n| {
        // SAFETY: `res` is the event's own result of the matching type.
        unsafe {
            rd::rd_kafka_AlterConsumerGroupOffsets_result_groups(
                rd::rd_kafka_event_AlterConsumerGroupOffsets_result(res),
                n,
            )
        }
    })?;
    Ok(partitions
        .into_iter()
        .map(|(topic, partition, _, _, err)| ((topic, partition), err.map_or(Ok(()), Err)))
        .collect())
}

fn start_alter_offsets<C: ClientContext>(
    admin: &AdminClient<C>,
    group: &str,
    offsets: &[(String, i32, i64, String)],
    timeout: Duration,
) -> Result<Pending, AdminError> {
    let c_group = c_string("group", group)?;
    // rdkafka's list allocates metadata the way librdkafka frees it.
    let mut tpl = TopicPartitionList::with_capacity(offsets.len());
    for (topic, partition, offset, metadata) in offsets {
        c_string("topic", topic)?;
        if *offset < 0 {
            return Err(AdminError::InvalidArgument(format!(
                "group {group}: offset {offset} for {topic}-{partition} is negative"
            )));
        }
        let mut elem = tpl.add_partition(topic, *partition);
        elem.set_offset(Offset::Offset(*offset))
            .map_err(|e| AdminError::InvalidArgument(format!("{topic}-{partition}: {e}")))?;
        elem.set_metadata(metadata);
    }
    // SAFETY: NUL-terminated group and a valid list, both copied by librdkafka.
    let req = AlterOffsetsReq(unsafe {
        rd::rd_kafka_AlterConsumerGroupOffsets_new(c_group.as_ptr(), tpl.ptr())
    });
    if req.0.is_null() {
        return Err(AdminError::InvalidArgument(format!(
            "group {group:?}: cannot create request"
        )));
    }
    let mut ptrs = [req.0];
    submit(
        admin,
        rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS,
        rd::RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT,
        "alterConsumerGroupOffsets",
        timeout,
        |client, options, queue| {
            // SAFETY: all pointers are valid; librdkafka copies the request.
            unsafe {
                rd::rd_kafka_AlterConsumerGroupOffsets(
                    client,
                    ptrs.as_mut_ptr(),
                    ptrs.len(),
                    options,
                    queue,
                )
            }
        },
    )
}

type PartitionRow = (String, i32, i64, String, Option<AdminError>);

/// The partitions of the one group result in `event`, or that group's error.
fn single_group_result(
    event: &Event,
    group: &str,
    what: &str,
    groups_of: impl FnOnce(
        *mut rd::rd_kafka_event_t,
        &mut usize,
    ) -> *mut *const rd::rd_kafka_group_result_t,
) -> Result<Vec<PartitionRow>, AdminError> {
    let mut n = 0;
    let groups = groups_of(event.0, &mut n);
    // SAFETY: the group results are owned by `event`, alive here.
    unsafe {
        let &[g] = c_array(groups, n) else {
            return Err(AdminError::Protocol(format!(
                "{what}: {n} group results for {group}"
            )));
        };
        if let Some(e) = AdminError::from_error_t(rd::rd_kafka_group_result_error(g)) {
            return Err(e);
        }
        Ok(read_partitions(rd::rd_kafka_group_result_partitions(g)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_through_librdkafka_values() {
        // Every variant maps to a distinct native value and back (the ACL sync of §6.6 copies
        // operation and permission as is, so a mix-up would grant the wrong access).
        for op in [
            AclOperation::Unknown,
            AclOperation::Any,
            AclOperation::All,
            AclOperation::Read,
            AclOperation::Write,
            AclOperation::Create,
            AclOperation::Delete,
            AclOperation::Alter,
            AclOperation::Describe,
            AclOperation::ClusterAction,
            AclOperation::DescribeConfigs,
            AclOperation::AlterConfigs,
            AclOperation::IdempotentWrite,
        ] {
            assert_eq!(AclOperation::from_native(op.to_native()), op);
        }
        for p in [
            AclPermission::Unknown,
            AclPermission::Any,
            AclPermission::Deny,
            AclPermission::Allow,
        ] {
            assert_eq!(AclPermission::from_native(p.to_native()), p);
        }
        for t in [
            PatternType::Unknown,
            PatternType::Any,
            PatternType::Match,
            PatternType::Literal,
            PatternType::Prefixed,
        ] {
            assert_eq!(PatternType::from_native(t.to_native()), t);
        }
        for r in [
            ResourceType::Unknown,
            ResourceType::Any,
            ResourceType::Topic,
            ResourceType::Group,
            ResourceType::Cluster,
            ResourceType::TransactionalId,
        ] {
            assert_eq!(ResourceType::from_native(r.to_native()), r);
        }
        for s in [
            GroupState::Unknown,
            GroupState::PreparingRebalance,
            GroupState::CompletingRebalance,
            GroupState::Stable,
            GroupState::Dead,
            GroupState::Empty,
        ] {
            assert_eq!(GroupState::from_native(s.to_native()), s);
        }
    }

    #[test]
    fn enum_names_match_librdkafka_and_java() {
        // Our names are Java's. librdkafka uses the same ones, except BROKER for CLUSTER and
        // CamelCase group states; compare all of them so a mis-wired variant shows up here.
        // SAFETY (all blocks below): the *_name functions return static strings.
        for op in [
            AclOperation::All,
            AclOperation::Read,
            AclOperation::Write,
            AclOperation::ClusterAction,
            AclOperation::DescribeConfigs,
            AclOperation::IdempotentWrite,
        ] {
            assert_eq!(
                unsafe { cstr(rd::rd_kafka_AclOperation_name(op.to_native())) },
                op.as_str()
            );
        }
        for p in [
            AclPermission::Allow,
            AclPermission::Deny,
            AclPermission::Any,
        ] {
            assert_eq!(
                unsafe { cstr(rd::rd_kafka_AclPermissionType_name(p.to_native())) },
                p.as_str()
            );
        }
        for t in [
            PatternType::Literal,
            PatternType::Prefixed,
            PatternType::Match,
            PatternType::Any,
        ] {
            assert_eq!(
                unsafe { cstr(rd::rd_kafka_ResourcePatternType_name(t.to_native())) },
                t.as_str()
            );
        }
        for r in [
            ResourceType::Topic,
            ResourceType::Group,
            ResourceType::TransactionalId,
        ] {
            assert_eq!(
                unsafe { cstr(rd::rd_kafka_ResourceType_name(r.to_native())) },
                r.as_str()
            );
        }
        assert_eq!(
            unsafe {
                cstr(rd::rd_kafka_ResourceType_name(
                    ResourceType::Cluster.to_native(),
                ))
            },
            "BROKER"
        );
        assert_eq!(ResourceType::Cluster.to_string(), "CLUSTER");
        for g in [
            GroupState::Empty,
            GroupState::Stable,
            GroupState::Dead,
            GroupState::PreparingRebalance,
        ] {
            let native = unsafe { cstr(rd::rd_kafka_consumer_group_state_name(g.to_native())) };
            assert_eq!(
                native.to_lowercase(),
                g.as_str().replace('_', "").to_lowercase()
            );
        }
    }

    #[test]
    fn error_codes_map_to_distinct_variants() {
        // §6.6: SECURITY_DISABLED means "skip ACL sync", so it must not look like other errors.
        let e = AdminError::from_code(
            RespErr::RD_KAFKA_RESP_ERR_SECURITY_DISABLED,
            "no authorizer".into(),
        );
        assert!(
            matches!(e, AdminError::SecurityDisabled(ref m) if m == "no authorizer"),
            "{e:?}"
        );
        assert_eq!(e.code(), Some("SECURITY_DISABLED"));
        // §6.5: an unsupported API is a connector error, so it gets its own variant too.
        let e = AdminError::from_code(
            RespErr::RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE,
            String::new(),
        );
        assert!(
            matches!(e, AdminError::UnsupportedVersion { ref code, .. } if code == "_UNSUPPORTED_FEATURE"),
            "{e:?}"
        );
        let e = AdminError::from_code(RespErr::RD_KAFKA_RESP_ERR__TIMED_OUT, String::new());
        assert!(matches!(e, AdminError::Timeout), "{e:?}");
        // Others keep librdkafka's code name, and an empty message falls back to its text.
        let e = AdminError::from_code(RespErr::RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID, String::new());
        match &e {
            AdminError::Kafka { code, message } => {
                assert_eq!(code, "UNKNOWN_MEMBER_ID");
                assert!(!message.is_empty());
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().starts_with("UNKNOWN_MEMBER_ID: "), "{e}");
    }

    #[test]
    fn nul_bytes_are_rejected_before_any_request() {
        let e = c_string("topic", "a\0b").unwrap_err();
        assert!(
            matches!(e, AdminError::InvalidArgument(ref m) if m.contains("topic")),
            "{e:?}"
        );
    }

    #[test]
    fn missing_results_are_reported_per_item() {
        let mut results = BTreeMap::new();
        results.insert("a".to_string(), Ok(()));
        let asked = ["a".to_string(), "b".to_string()];
        fill_missing(&mut results, asked.iter(), "incrementalAlterConfigs");
        assert!(results["a"].is_ok());
        assert!(matches!(results["b"], Err(AdminError::Protocol(_))));
    }

    #[test]
    fn partition_lists_are_read_with_metadata_and_errors() {
        // §8.6 reads offsets *and* metadata back; check the decoding on a list librdkafka built.
        let mut tpl = TopicPartitionList::new();
        let mut e = tpl.add_partition("t", 0);
        e.set_offset(Offset::Offset(42)).unwrap();
        e.set_metadata("ckpt-meta");
        tpl.add_partition("u", 3)
            .set_offset(Offset::Offset(7))
            .unwrap();
        // SAFETY: `tpl` is a valid list alive for the call.
        let rows = unsafe { read_partitions(tpl.ptr()) };
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].0.as_str(), rows[0].1, rows[0].2, rows[0].3.as_str()),
            ("t", 0, 42, "ckpt-meta")
        );
        assert_eq!(
            (rows[1].0.as_str(), rows[1].1, rows[1].2, rows[1].3.as_str()),
            ("u", 3, 7, "")
        );
        assert!(rows.iter().all(|r| r.4.is_none()));
        // SAFETY: null means "no list".
        assert!(unsafe { read_partitions(ptr::null()) }.is_empty());
    }
}
