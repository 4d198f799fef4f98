//! Kafka clients built from resolved MM2 settings.
//!
//! MM2 builds every client from a per-role Java config (mm2-compat §2.6). We keep that model:
//! callers pass the Java-named [`Props`] for one role, [`client_config::translate`] maps it to
//! librdkafka names, and errors always name the role (`A->B|MirrorSourceConnector|…`), so a bad
//! `A.consumer.*` key is traced back to where it came from.

pub mod admin_ext;
mod certificate_check;
pub mod client_config;
pub mod cluster;
pub mod internal_log;
pub mod msk_iam;
pub mod probe;
pub mod report_thread;

use crate::config::Props;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::ClientContext;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("client {role}: unsupported setting {source}")]
    Unsupported {
        role: String,
        #[source]
        source: client_config::UnsupportedSetting,
    },
    #[error("client {role}: {source}")]
    Build {
        role: String,
        #[source]
        source: KafkaError,
    },
    #[error("client {role}: MSK IAM: {message}")]
    Iam { role: String, message: String },
    #[error("client {role}: cannot start its thread: {source}")]
    Thread {
        role: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cluster {cluster} ({bootstrap}): {what}: {message}")]
    Request {
        cluster: String,
        bootstrap: String,
        what: String,
        message: String,
    },
}

/// librdkafka config for one client role, from that role's Java-named settings.
pub fn client_config(role: &str, java: &Props) -> Result<ClientConfig, ClientError> {
    let translated = client_config::translate(java).map_err(|source| ClientError::Unsupported {
        role: role.to_string(),
        source,
    })?;
    if !translated.ignored.is_empty() {
        tracing::debug!(role, ignored = ?translated.ignored, "Java-only client settings ignored");
    }
    let mut config = ClientConfig::new();
    // Without a termination signal, destroying a client waits for librdkafka's threads to time
    // out their blocking calls (~100 ms per client); a slice creates and drops many clients.
    // librdkafka installs its own no-op handler for the signal and only sends it to its own
    // threads. SIGIO is not used by tokio, the Lambda runtime or this program.
    config.set("internal.termination.signal", TERMINATION_SIGNAL);
    // With sparse connections (librdkafka's default) a new client connects to a broker only
    // when a request needs one, and its first request often waits out a reconnect back-off
    // (~50 ms, every other client here). Our clients are short-lived and talk to few brokers:
    // connect to all of them at once. `rdkafka.enable.sparse.connections` overrides.
    config.set("enable.sparse.connections", "false");
    for (k, v) in &translated.settings {
        config.set(k, v);
    }
    // A missing credential fails here, naming the client, not later as a stalled connection.
    if let Some(iam) = msk_iam::settings_of(&config) {
        msk_iam::check(&iam).map_err(|message| ClientError::Iam {
            role: role.to_string(),
            message,
        })?;
    }
    Ok(config)
}

/// A client made by [`create`]: derefs to the librdkafka client. An MSK IAM client is handed
/// fresh tokens while it lives ([`msk_iam::register`]); the registration is dropped first (field
/// order), so no token is handed to a client being destroyed.
pub struct Managed<T> {
    registration: Option<msk_iam::Registration>,
    client: T,
}

impl<T> Managed<T> {
    /// The same client in another wrapper (e.g. an `Arc` to split partition queues from),
    /// still registered.
    pub fn map<U>(self, wrap: impl FnOnce(T) -> U) -> Managed<U> {
        Managed {
            registration: self.registration,
            client: wrap(self.client),
        }
    }
}

impl<T> std::ops::Deref for Managed<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.client
    }
}

impl<T> std::ops::DerefMut for Managed<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.client
    }
}

/// Creates the client `role`, as `config.create_with_context(context)` does; a failure names
/// the role ([`build_error`]). An MSK IAM client gets its first token at once and fresh ones
/// while it lives (see [`msk_iam`]). Every client of ours is made here.
pub fn create<T, C>(
    role: &str,
    config: &ClientConfig,
    context: C,
) -> Result<Managed<T>, ClientError>
where
    C: ClientContext,
    T: rdkafka::config::FromClientConfigAndContext<C> + msk_iam::HasClient,
{
    let client = T::from_config_and_context(config, context).map_err(|e| build_error(role, e))?;
    let registration = msk_iam::register(config, client.raw_client());
    Ok(Managed {
        registration,
        client,
    })
}

/// A process-wide admin client (see [`shared_admin`]).
pub type SharedAdmin = std::sync::Arc<Managed<rdkafka::admin::AdminClient<MirrorContext>>>;

/// An admin client for these settings, shared process-wide.
///
/// rdkafka's `AdminClient` runs a polling thread that sleeps in 100 ms steps, and dropping the
/// client waits for it; a slice needs several admin clients per cluster. Sharing them by
/// identical settings removes that wait from every slice, and lets a warm Lambda container
/// reuse connections across invocations. Admin requests are independent, so sharing is safe.
pub fn shared_admin(role: &str, java: &Props) -> Result<SharedAdmin, ClientError> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static ADMINS: OnceLock<Mutex<HashMap<String, SharedAdmin>>> = OnceLock::new();
    // `client.id` carries the role (which connector, which task); it must not split the cache.
    let mut identity = java.clone();
    identity.remove("client.id");
    let key = serde_json::to_string(&identity).expect("props serialize");
    let cache = ADMINS.get_or_init(Default::default);
    if let Some(admin) = cache.lock().expect("admin cache poisoned").get(&key) {
        return Ok(admin.clone());
    }
    let config = client_config(role, java)?;
    let admin = SharedAdmin::new(create(role, &config, MirrorContext)?);
    cache
        .lock()
        .expect("admin cache poisoned")
        .insert(key, admin.clone());
    Ok(admin)
}

/// `SIGIO`, as a string for librdkafka's `internal.termination.signal`.
const TERMINATION_SIGNAL: &str = "29";

/// Map a client-creation failure to an error naming the role (librdkafka names the key).
fn build_error(role: &str, source: KafkaError) -> ClientError {
    ClientError::Build {
        role: role.to_string(),
        source,
    }
}

/// Client context for every consumer and admin client we create: librdkafka's own logs go to
/// `tracing` (target `librdkafka`) at matching levels, and routine events are not errors.
///
/// With `enable.partition.eof`, reaching the end of a partition is how we know we are caught
/// up; librdkafka also reports it as a "global error" on the main queue, which rdkafka's default
/// context would log at ERROR level on every read.
#[derive(Debug, Clone, Copy, Default)]
pub struct MirrorContext;

impl ClientContext for MirrorContext {
    // MSK IAM: librdkafka's own token requests, answered when the client polls (every client
    // also gets tokens on a timer, see msk_iam).
    crate::kafka::msk_iam::answer_token_requests!();
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", facility = fac, "{message}")
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", facility = fac, "{message}")
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", facility = fac, "{message}")
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", facility = fac, "{message}")
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_partition_eof(&error) {
            tracing::trace!(target: "librdkafka", %error, reason, "end of partition");
        } else {
            tracing::warn!(target: "librdkafka", %error, reason, "client error");
        }
    }
}

impl ConsumerContext for MirrorContext {}

/// Close a consumer that has a `group.id` before dropping it.
///
/// rdkafka's `Drop` for such a consumer closes it and then polls in 100 ms steps until
/// librdkafka reports it closed, so every dropped consumer costs ~100 ms; a slice drops several
/// on its critical path. Closing here polls in 1 ms steps; the later `Drop` then finds the
/// consumer closed. Bounded by `budget`.
pub fn close_consumer<C: ConsumerContext>(
    consumer: &rdkafka::consumer::BaseConsumer<C>,
    budget: std::time::Duration,
) {
    if consumer.closed() || consumer.close_queue().is_err() {
        return;
    }
    let deadline = std::time::Instant::now() + budget;
    while !consumer.closed() && std::time::Instant::now() < deadline {
        let _ = consumer.poll(std::time::Duration::from_millis(1));
    }
}

/// The broker's listed start (`Offset::Beginning`) or end (`Offset::End`) offsets of several
/// partitions, in one ListOffsets request (librdkafka's offsets-for-times with the special
/// timestamps -2 / -1).
///
/// Partitions without a leader yet are retried until `timeout` ([`offsets_for_times`]).
pub fn listed_offsets<C: ConsumerContext>(
    consumer: &rdkafka::consumer::BaseConsumer<C>,
    partitions: &[(String, i32)],
    which: rdkafka::Offset,
    timeout: std::time::Duration,
) -> Result<std::collections::BTreeMap<(String, i32), i64>, KafkaError> {
    if partitions.is_empty() {
        return Ok(Default::default());
    }
    let mut tpl = rdkafka::TopicPartitionList::new();
    for (topic, partition) in partitions {
        tpl.add_partition_offset(topic, *partition, which)?;
    }
    let answer = offsets_for_times(consumer, &tpl, timeout)?;
    Ok(answer
        .elements()
        .iter()
        .filter(|e| e.error().is_ok())
        .filter_map(|e| match e.offset() {
            // A negative answer is "no offset", never a position to use.
            rdkafka::Offset::Offset(o) if o >= 0 => {
                Some(((e.topic().to_string(), e.partition()), o))
            }
            _ => None,
        })
        .collect())
}

/// librdkafka's offsets-for-times (one ListOffsets request per leader). Right after a topic is
/// created (or deleted and created again) Apache Kafka may not have a leader for it in its
/// metadata yet, and librdkafka fails the whole request with `NotLeaderForPartition` or
/// `LeaderNotAvailable`; after a broker was paused past its KRaft session, a partition answers
/// `UnknownLeaderEpoch` until the broker catches up with the leadership it was given back.
/// Those are retried until `timeout`; then the answer is returned as it stands.
pub fn offsets_for_times<C: ConsumerContext>(
    consumer: &rdkafka::consumer::BaseConsumer<C>,
    tpl: &rdkafka::TopicPartitionList,
    timeout: std::time::Duration,
) -> Result<rdkafka::TopicPartitionList, KafkaError> {
    const RETRY_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let answer = consumer.offsets_for_times(tpl.clone(), left);
        let electing = match &answer {
            Err(e) => is_leader_election(e),
            Ok(list) => list
                .elements()
                .iter()
                .any(|e| e.error().is_err_and(|e| is_leader_election(&e))),
        };
        if !electing || left <= RETRY_BACKOFF * 2 {
            return answer;
        }
        std::thread::sleep(RETRY_BACKOFF);
    }
}

/// A partition without a known leader for now, or whose leader and its clients disagree on
/// the leader epoch for a moment: a new topic, or a leadership change. Retriable in Java too.
fn is_leader_election(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::NotLeaderForPartition
                | RDKafkaErrorCode::LeaderNotAvailable
                | RDKafkaErrorCode::UnknownLeaderEpoch
                | RDKafkaErrorCode::FencedLeaderEpoch
        )
    )
}

/// Log directives every `tracing` setup of ours adds: after [`close_consumer`], rdkafka's own
/// `Drop` tries to close the consumer again and logs the (harmless) refusal at ERROR level.
/// Client errors that matter reach us through [`MirrorContext`] (target `librdkafka`).
pub const LOG_DIRECTIVES: &[&str] = &["rdkafka::consumer::base_consumer=off"];

/// End of partition, however librdkafka chose to report it.
pub fn is_partition_eof(error: &KafkaError) -> bool {
    matches!(
        error,
        KafkaError::PartitionEOF(_) | KafkaError::Global(RDKafkaErrorCode::PartitionEOF)
    )
}
