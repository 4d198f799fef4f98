//! Creating the compacted internal topics, the way Connect and MM2 do (mm2-compat §3).
//!
//! Two flavours, with the same error handling Java has, so a deployment that works with Java MM2
//! (for example one whose principal may not create topics, with the topics made by an operator)
//! works here too:
//!
//! * [`ensure_worker_topics`] — the Connect worker's offsets, status and config topics on the
//!   target (`mm2-offsets|status|configs.<source>.internal`), sized from the worker config
//!   (`offset.storage.partitions` = 25, `status.storage.partitions` = 5, configs = 1,
//!   `*.storage.replication.factor` = 3, `-1` = broker default), created in one CreateTopics call.
//!   It returns the partition counts the topics *actually* have: an existing offsets topic made
//!   by hand with 50 partitions is placed into with murmur2 over 50, or Java would not find our
//!   offsets. Like Connect's backing stores it refuses a config topic with more than one
//!   partition, and a topic whose `cleanup.policy` is not exactly `compact`.
//! * [`ensure_compacted_topic`] — MM2's `createCompactedTopic`, used by the connectors for the
//!   heartbeats, checkpoints and offset-syncs topics: TopicExists, UnsupportedVersion,
//!   TopicAuthorization and ClusterAuthorization mean "assume it exists"; InvalidConfiguration
//!   and timeouts are errors.
//!
//! Topics are always created explicitly, with their config in the same call: brokers that
//! auto-create on produce (tansu, or Kafka with `auto.create.topics.enable`) would otherwise make
//! a non-compacted topic with the wrong partition count.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::admin::{AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

use crate::config::values::{parse_int, parse_long, parse_short};
use crate::config::{ConfigError, Props};
use crate::kafka::internal_log::{partition_count, LogError};
use crate::kafka::ClientError;

/// Java's `default.api.timeout.ms` default: how long admin calls may take in total.
const DEFAULT_API_TIMEOUT: Duration = Duration::from_secs(60);

/// The worker's three internal topics with their actual partition counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerTopics {
    pub offsets: (String, i32),
    pub status: (String, i32),
    pub configs: (String, i32),
}

/// What happened to a topic we asked to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Creation {
    Created,
    /// It was there already (TopicExists, or found in metadata before asking).
    Existed,
    /// Creation was refused in a way Java treats as "assume it exists or will be auto-created"
    /// (UnsupportedVersion, TopicAuthorization, ClusterAuthorization).
    Assumed {
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Log(#[from] LogError),
    /// Java: `ConnectException("Unable to create topic '<t>': ...")`.
    #[error("Unable to create topic '{topic}': {message}")]
    Create { topic: String, message: String },
    /// Java: `ConnectException("Timed out while checking for or creating topic '<t>'...")`.
    #[error("Timed out while checking for or creating topic '{topic}': {message}")]
    Timeout { topic: String, message: String },
    /// The topic is not in the metadata after it was created (or assumed to exist).
    #[error(
        "topic '{topic}' does not exist after {outcome}; create it with cleanup.policy=compact"
    )]
    Missing { topic: String, outcome: String },
    /// Connect's `verifyTopicCleanupPolicyOnlyCompact` message.
    #[error(
        "Topic '{topic}' supplied via the '{key}' property is required to have \
         'cleanup.policy=compact' to guarantee consistency and durability of {purpose}, but found \
         the topic currently has 'cleanup.policy={policy}'. Continuing would likely result in \
         eventually losing {purpose} and problems restarting this Connect cluster in the future. \
         Change the 'cleanup.policy' property on the topic '{topic}' to 'compact'."
    )]
    NotCompact {
        topic: String,
        key: String,
        purpose: String,
        policy: String,
    },
    /// `KafkaConfigBackingStore.start`'s check.
    #[error(
        "Topic '{topic}' supplied via the 'config.storage.topic' property is required to have a \
         single partition in order to guarantee consistency of connector configurations, but \
         found {partitions} partitions."
    )]
    ConfigTopicPartitions { topic: String, partitions: i32 },
}

/// One topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub name: String,
    /// `-1` = the broker's `num.partitions`.
    pub partitions: i32,
    /// `-1` = the broker's `default.replication.factor`.
    pub replication_factor: i16,
    /// Topic configs; `cleanup.policy=compact` is always added.
    pub configs: Props,
}

/// The storage settings of one worker topic (`offset.storage.*`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
struct StorageTopic {
    prefix: &'static str,
    purpose: &'static str,
    spec: TopicSpec,
}

fn api_timeout(admin: &Props) -> Result<Duration, ConfigError> {
    match admin.get("default.api.timeout.ms") {
        Some(v) => {
            let ms = parse_long("default.api.timeout.ms", v)?;
            if ms <= 0 {
                return Err(ConfigError::invalid(
                    "default.api.timeout.ms",
                    v,
                    "Value must be at least 1",
                ));
            }
            Ok(Duration::from_millis(ms as u64))
        }
        None => Ok(DEFAULT_API_TIMEOUT),
    }
}

/// Reads `<prefix>.topic`, `.partitions`, `.replication.factor` and the extra topic settings
/// (`<prefix>.<topic config>`), as `DistributedConfig.topicSettings` does.
fn storage_topic(
    worker: &Props,
    prefix: &'static str,
    purpose: &'static str,
    default_partitions: Option<i32>,
) -> Result<StorageTopic, ConfigError> {
    let key = |s: &str| format!("{prefix}.{s}");
    let topic_key = key("topic");
    let name = worker
        .get(&topic_key)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or(ConfigError::Missing {
            key: topic_key.clone(),
        })?;
    let partitions = match default_partitions {
        // The config topic always has exactly one partition; there is no key for it.
        None => 1,
        Some(default) => match worker.get(&key("partitions")) {
            None => default,
            Some(v) => {
                let k = key("partitions");
                let n = parse_int(&k, v)?;
                if n < 1 && n != -1 {
                    return Err(ConfigError::invalid(
                        &k,
                        v,
                        "Number of partitions must be positive, or -1 to use the broker's default",
                    ));
                }
                n
            }
        },
    };
    let rf_key = key("replication.factor");
    let replication_factor = match worker.get(&rf_key) {
        None => 3,
        Some(v) => {
            let n = parse_short(&rf_key, v)?;
            if n < 1 && n != -1 {
                return Err(ConfigError::invalid(
                    &rf_key,
                    v,
                    "Replication factor must be positive and not larger than the number of \
                     brokers in the Kafka cluster, or -1 to use the broker's default",
                ));
            }
            n
        }
    };
    let own = [
        "topic",
        "partitions",
        "replication.factor",
        "cleanup.policy",
    ];
    let dotted = format!("{prefix}.");
    let configs = worker
        .iter()
        .filter_map(|(k, v)| {
            let rest = k.strip_prefix(&dotted)?;
            if own.contains(&rest) {
                if rest == "cleanup.policy" && v.trim() != "compact" {
                    tracing::warn!(
                        key = %k,
                        value = %v,
                        "ignoring the cleanup.policy setting; Connect's internal topics are always compacted"
                    );
                }
                return None;
            }
            Some((rest.to_string(), v.clone()))
        })
        .collect();
    Ok(StorageTopic {
        prefix,
        purpose,
        spec: TopicSpec {
            name,
            partitions,
            replication_factor,
            configs,
        },
    })
}

fn admin_client(admin: &Props) -> Result<crate::kafka::SharedAdmin, ClientError> {
    crate::kafka::shared_admin("internal topics admin", admin)
}

fn admin_options(timeout: Duration) -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(timeout))
        .operation_timeout(Some(timeout))
}

/// Creates `specs` in one CreateTopics call, interpreting per-topic errors like MM2's
/// `createCompactedTopic`.
async fn create_topics(
    admin: &Props,
    specs: &[TopicSpec],
    timeout: Duration,
) -> Result<BTreeMap<String, Creation>, TopicError> {
    if specs.is_empty() {
        return Ok(BTreeMap::new());
    }
    let client = admin_client(admin)?;
    let new_topics: Vec<NewTopic<'_>> = specs
        .iter()
        .map(|s| {
            let mut t = NewTopic::new(
                &s.name,
                s.partitions,
                TopicReplication::Fixed(i32::from(s.replication_factor)),
            )
            .set("cleanup.policy", "compact");
            for (k, v) in &s.configs {
                t = t.set(k, v);
            }
            t
        })
        .collect();
    let names = specs
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let results = match client
        .create_topics(new_topics.iter(), &admin_options(timeout))
        .await
    {
        Ok(r) => r,
        Err(KafkaError::AdminOp(code)) if is_timeout(code) => {
            return Err(TopicError::Timeout {
                topic: names,
                message: code.to_string(),
            })
        }
        Err(e) => {
            return Err(TopicError::Create {
                topic: names,
                message: e.to_string(),
            })
        }
    };
    let mut out = BTreeMap::new();
    for r in results {
        match r {
            Ok(name) => {
                tracing::info!(topic = %name, "Created topic");
                out.insert(name, Creation::Created);
            }
            Err((name, code)) => {
                let outcome = interpret_create_error(&name, code)?;
                out.insert(name, outcome);
            }
        }
    }
    Ok(out)
}

fn is_timeout(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::RequestTimedOut | RDKafkaErrorCode::OperationTimedOut
    )
}

/// mm2-compat §3: which CreateTopics errors mean "assume it exists".
fn interpret_create_error(topic: &str, code: RDKafkaErrorCode) -> Result<Creation, TopicError> {
    match code {
        RDKafkaErrorCode::TopicAlreadyExists => {
            tracing::debug!(topic, "Unable to create topic since it already exists.");
            Ok(Creation::Existed)
        }
        RDKafkaErrorCode::UnsupportedVersion
        | RDKafkaErrorCode::TopicAuthorizationFailed
        | RDKafkaErrorCode::ClusterAuthorizationFailed => {
            let reason = match code {
                RDKafkaErrorCode::UnsupportedVersion => {
                    "the brokers do not support the CreateTopics API"
                }
                _ => "not authorized to create topics",
            };
            tracing::warn!(
                topic,
                %code,
                "Unable to create topic ({reason}); falling back to assume it exists or will be auto-created by the broker"
            );
            Ok(Creation::Assumed {
                reason: format!("{reason} ({code})"),
            })
        }
        c if is_timeout(c) => Err(TopicError::Timeout {
            topic: topic.to_string(),
            message: c.to_string(),
        }),
        other => Err(TopicError::Create {
            topic: topic.to_string(),
            message: other.to_string(),
        }),
    }
}

/// MM2's `createCompactedTopic` (§3): one CreateTopics call with `cleanup.policy=compact`.
/// `replication_factor` `-1` (and `partitions` `-1`) mean the broker's default.
pub async fn ensure_compacted_topic(
    admin: &Props,
    name: &str,
    partitions: i32,
    replication_factor: i16,
) -> Result<Creation, TopicError> {
    let timeout = api_timeout(admin)?;
    let spec = TopicSpec {
        name: name.to_string(),
        partitions,
        replication_factor,
        configs: Props::new(),
    };
    let mut out = create_topics(admin, &[spec], timeout).await?;
    Ok(out.remove(name).unwrap_or(Creation::Created))
}

/// The partition count of `topic`, or `None` when it does not exist.
async fn existing_partitions(
    props: &Props,
    topic: &str,
    timeout: Duration,
) -> Result<Option<i32>, TopicError> {
    match partition_count(props, topic, timeout).await {
        Ok(n) => Ok(Some(n)),
        Err(LogError::UnknownTopic { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Waits (up to `timeout`) until a topic we created or assumed shows up in the metadata.
async fn await_partitions(
    props: &Props,
    topic: &str,
    outcome: &Creation,
    timeout: Duration,
) -> Result<i32, TopicError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(n) = existing_partitions(props, topic, timeout).await? {
            return Ok(n);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(TopicError::Missing {
                topic: topic.to_string(),
                outcome: match outcome {
                    Creation::Created => "it was created".to_string(),
                    Creation::Existed => "the broker said it exists".to_string(),
                    Creation::Assumed { reason } => format!("creation was refused: {reason}"),
                },
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `cleanup.policy` of each topic, when the broker lets us describe it.
async fn cleanup_policies(
    admin: &Props,
    topics: &[&str],
    timeout: Duration,
) -> Result<BTreeMap<String, String>, TopicError> {
    let client = admin_client(admin)?;
    let specifiers: Vec<ResourceSpecifier<'_>> =
        topics.iter().map(|t| ResourceSpecifier::Topic(t)).collect();
    let mut out = BTreeMap::new();
    match client
        .describe_configs(specifiers.iter(), &admin_options(timeout))
        .await
    {
        Ok(results) => {
            for (topic, r) in topics.iter().zip(results) {
                match r {
                    Ok(resource) => {
                        if let Some(v) =
                            resource.get("cleanup.policy").and_then(|e| e.value.clone())
                        {
                            out.insert(topic.to_string(), v);
                        }
                    }
                    Err(code) => tracing::info!(
                        topic,
                        %code,
                        "Unable to verify the cleanup policy of the topic is 'compact'"
                    ),
                }
            }
        }
        Err(e) => tracing::info!(
            error = %e,
            "Unable to verify the cleanup policy of Connect's internal topics is 'compact'"
        ),
    }
    Ok(out)
}

/// Java's check: the set of policies must be exactly `{compact}`.
fn is_only_compact(policy: &str) -> bool {
    let parts: std::collections::BTreeSet<&str> = policy
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    parts.len() == 1 && parts.contains("compact")
}

/// Makes sure the worker's offsets, status and config topics exist on the target (§2.12, §3)
/// and returns their names and actual partition counts. `worker` is the pair's worker config
/// (`MirrorMakerConfig::worker_config`, which has the topic-name defaults); `admin` the
/// Java-named admin settings for the target cluster.
pub async fn ensure_worker_topics(
    worker: &Props,
    admin: &Props,
) -> Result<WorkerTopics, TopicError> {
    let topics = [
        storage_topic(
            worker,
            "offset.storage",
            "source connector offsets",
            Some(25),
        )?,
        storage_topic(
            worker,
            "status.storage",
            "connector and task statuses",
            Some(5),
        )?,
        storage_topic(worker, "config.storage", "connector configurations", None)?,
    ];
    let timeout = api_timeout(admin)?;

    let mut found: BTreeMap<String, (i32, Creation)> = BTreeMap::new();
    let mut missing = Vec::new();
    for t in &topics {
        match existing_partitions(admin, &t.spec.name, timeout).await? {
            Some(n) => {
                found.insert(t.spec.name.clone(), (n, Creation::Existed));
            }
            None => missing.push(t.spec.clone()),
        }
    }
    let created = create_topics(admin, &missing, timeout).await?;
    for spec in &missing {
        let outcome = created
            .get(&spec.name)
            .cloned()
            .unwrap_or(Creation::Created);
        let n = await_partitions(admin, &spec.name, &outcome, timeout).await?;
        found.insert(spec.name.clone(), (n, outcome));
    }

    let names: Vec<&str> = topics.iter().map(|t| t.spec.name.as_str()).collect();
    let policies = cleanup_policies(admin, &names, timeout).await?;
    for t in &topics {
        if let Some(policy) = policies.get(&t.spec.name) {
            if !is_only_compact(policy) {
                return Err(TopicError::NotCompact {
                    topic: t.spec.name.clone(),
                    key: format!("{}.topic", t.prefix),
                    purpose: t.purpose.to_string(),
                    policy: policy.clone(),
                });
            }
        }
    }

    let count = |name: &str| found[name].0;
    let [offsets, status, configs] = &topics;
    let config_partitions = count(&configs.spec.name);
    if config_partitions > 1 {
        return Err(TopicError::ConfigTopicPartitions {
            topic: configs.spec.name.clone(),
            partitions: config_partitions,
        });
    }
    Ok(WorkerTopics {
        offsets: (offsets.spec.name.clone(), count(&offsets.spec.name)),
        status: (status.spec.name.clone(), count(&status.spec.name)),
        configs: (configs.spec.name.clone(), config_partitions),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::props_of as props;

    // §2.12: partitions 25 / 5 / 1, replication factor 3 by default.
    #[test]
    fn worker_topic_defaults() {
        let w = props(&[
            ("offset.storage.topic", "mm2-offsets.A.internal"),
            ("status.storage.topic", "mm2-status.A.internal"),
            ("config.storage.topic", "mm2-configs.A.internal"),
        ]);
        let o = storage_topic(&w, "offset.storage", "x", Some(25)).unwrap();
        assert_eq!(o.spec.name, "mm2-offsets.A.internal");
        assert_eq!((o.spec.partitions, o.spec.replication_factor), (25, 3));
        let s = storage_topic(&w, "status.storage", "x", Some(5)).unwrap();
        assert_eq!((s.spec.partitions, s.spec.replication_factor), (5, 3));
        let c = storage_topic(&w, "config.storage", "x", None).unwrap();
        assert_eq!((c.spec.partitions, c.spec.replication_factor), (1, 3));
        assert!(o.spec.configs.is_empty());
    }

    #[test]
    fn worker_topic_overrides_and_extra_topic_settings() {
        let w = props(&[
            ("offset.storage.topic", "offs"),
            ("offset.storage.partitions", "7"),
            ("offset.storage.replication.factor", "-1"),
            ("offset.storage.min.insync.replicas", "2"),
            ("offset.storage.cleanup.policy", "delete"),
            ("config.storage.topic", "cfg"),
            ("config.storage.partitions", "9"),
        ]);
        let o = storage_topic(&w, "offset.storage", "x", Some(25)).unwrap();
        assert_eq!((o.spec.partitions, o.spec.replication_factor), (7, -1));
        // cleanup.policy is never taken from the user: the topic is always compacted.
        assert_eq!(o.spec.configs, props(&[("min.insync.replicas", "2")]));
        // No partitions key for the config topic.
        let c = storage_topic(&w, "config.storage", "x", None).unwrap();
        assert_eq!(c.spec.partitions, 1);
    }

    #[test]
    fn invalid_worker_topic_settings_name_the_key() {
        let w = props(&[
            ("offset.storage.topic", "offs"),
            ("offset.storage.partitions", "0"),
        ]);
        let e = storage_topic(&w, "offset.storage", "x", Some(25))
            .unwrap_err()
            .to_string();
        assert!(e.contains("offset.storage.partitions"), "{e}");
        let w = props(&[
            ("status.storage.topic", "st"),
            ("status.storage.replication.factor", "0"),
        ]);
        let e = storage_topic(&w, "status.storage", "x", Some(5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("status.storage.replication.factor"), "{e}");
        let e = storage_topic(&props(&[]), "config.storage", "x", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("config.storage.topic"), "{e}");
    }

    // §3: TopicExists, UnsupportedVersion, TopicAuthorization, ClusterAuthorization → assume.
    #[test]
    fn create_errors_that_mean_assume_it_exists() {
        assert_eq!(
            interpret_create_error("t", RDKafkaErrorCode::TopicAlreadyExists).unwrap(),
            Creation::Existed
        );
        for code in [
            RDKafkaErrorCode::UnsupportedVersion,
            RDKafkaErrorCode::TopicAuthorizationFailed,
            RDKafkaErrorCode::ClusterAuthorizationFailed,
        ] {
            assert!(matches!(
                interpret_create_error("t", code).unwrap(),
                Creation::Assumed { .. }
            ));
        }
        // §3: InvalidConfiguration and timeouts fail.
        let e = interpret_create_error("hb", RDKafkaErrorCode::InvalidConfig)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("Unable to create topic 'hb'"), "{e}");
        let e = interpret_create_error("hb", RDKafkaErrorCode::RequestTimedOut)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("Timed out while checking for or creating topic 'hb'"),
            "{e}"
        );
    }

    #[test]
    fn only_compact_is_accepted() {
        assert!(is_only_compact("compact"));
        assert!(is_only_compact(" compact "));
        assert!(!is_only_compact("compact,delete"));
        assert!(!is_only_compact("delete"));
        assert!(!is_only_compact(""));
    }

    #[test]
    fn api_timeout_from_admin_settings() {
        assert_eq!(api_timeout(&props(&[])).unwrap(), DEFAULT_API_TIMEOUT);
        assert_eq!(
            api_timeout(&props(&[("default.api.timeout.ms", "1500")])).unwrap(),
            Duration::from_millis(1500)
        );
        assert!(api_timeout(&props(&[("default.api.timeout.ms", "0")])).is_err());
    }
}
