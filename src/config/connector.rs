//! Connector settings: from a connector config (`Props`) to typed values with MM2's defaults.
//!
//! Java MM2 hands each of its three connectors (`MirrorSourceConnector`,
//! `MirrorCheckpointConnector`, `MirrorHeartbeatConnector`) one flat string map built by
//! `MirrorMakerConfig.connectorBaseConfig` (mm2-compat §2.5). Each connector then reads it through
//! its own `ConfigDef` (`MirrorSourceConfig`, `MirrorCheckpointConfig`, `MirrorHeartbeatConfig`,
//! all extending `MirrorConnectorConfig`). This module is that layer:
//!
//! * [`MirrorConnectorConfig`] holds what all three share (§2.8), and derives every client's
//!   settings by role (§2.6). The client configs keep **Java** property names on purpose: they
//!   are what MM2 users write, and the `kafka` module maps them to librdkafka in one place.
//! * [`MirrorSourceConfig`], [`MirrorCheckpointConfig`] and [`MirrorHeartbeatConfig`] add the
//!   keys of §2.9–§2.11, MM2's `validate` rules (§2.13) and the task split (§6.7, §8.1).
//!
//! Two MM2 habits shape the types:
//! * MM2 turns an `….enabled=false` switch into a *negative* interval meaning "never run". Here
//!   such an interval is `None`, and so is a negative interval written by the user.
//! * `validate` must report a bad value **and** keep checking the other rules (§12.4 #45), so it
//!   works on the raw map ([`MirrorSourceConfig::validate_props`]) and never needs a parsed config.
//!
//! Config providers (`${env:…}`) are resolved by the caller before anything here runs.

use std::time::Duration;

use super::values::{parse_bool, parse_int, parse_list, parse_long, parse_short};
use super::{ConfigError, Props};
use crate::filter::{ConfigPropertyFilter, GroupFilter, TopicFilter};
use crate::policy::ReplicationPolicy;

// ---------------------------------------------------------------------------------------------
// Key names (exactly as MM2 spells them)
// ---------------------------------------------------------------------------------------------

pub const NAME: &str = "name";
pub const CONNECTOR_CLASS: &str = "connector.class";
pub const TASKS_MAX: &str = "tasks.max";
pub const TASK_INDEX: &str = "task.index";
pub const ENABLED: &str = "enabled";
pub const SOURCE_CLUSTER_ALIAS: &str = "source.cluster.alias";
pub const TARGET_CLUSTER_ALIAS: &str = "target.cluster.alias";
pub const ADMIN_TIMEOUT_MS: &str = "admin.timeout.ms";
pub const REPLICATION_POLICY_CLASS: &str = "replication.policy.class";
pub const REPLICATION_POLICY_SEPARATOR: &str = "replication.policy.separator";
pub const INTERNAL_TOPIC_SEPARATOR_ENABLED: &str =
    "replication.policy.internal.topic.separator.enabled";
pub const FORWARDING_ADMIN_CLASS: &str = "forwarding.admin.class";
pub const METRIC_REPORTERS: &str = "metric.reporters";
pub const OFFSET_SYNCS_TOPIC_LOCATION: &str = "offset-syncs.topic.location";
pub const EMIT_OFFSET_SYNCS_ENABLED: &str = "emit.offset-syncs.enabled";
pub const CONSUMER_POLL_TIMEOUT_MS: &str = "consumer.poll.timeout.ms";

// MirrorSourceConfig (§2.9)
pub const REFRESH_TOPICS_ENABLED: &str = "refresh.topics.enabled";
pub const REFRESH_TOPICS_INTERVAL_SECONDS: &str = "refresh.topics.interval.seconds";
pub const SYNC_TOPIC_CONFIGS_ENABLED: &str = "sync.topic.configs.enabled";
pub const SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS: &str = "sync.topic.configs.interval.seconds";
pub const SYNC_TOPIC_ACLS_ENABLED: &str = "sync.topic.acls.enabled";
pub const SYNC_TOPIC_ACLS_INTERVAL_SECONDS: &str = "sync.topic.acls.interval.seconds";
pub const REPLICATION_FACTOR: &str = "replication.factor";
pub const OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR: &str = "offset-syncs.topic.replication.factor";
pub const OFFSET_LAG_MAX: &str = "offset.lag.max";
pub const HEARTBEATS_REPLICATION_ENABLED: &str = "heartbeats.replication.enabled";
pub const TASK_ASSIGNED_PARTITIONS: &str = "task.assigned.partitions";
/// Connect's `SourceConnectorConfig` key (KIP-618); not an MM2 key, but MM2 validates it.
pub const EXACTLY_ONCE_SUPPORT: &str = "exactly.once.support";

// MirrorCheckpointConfig (§2.10)
pub const REFRESH_GROUPS_ENABLED: &str = "refresh.groups.enabled";
pub const REFRESH_GROUPS_INTERVAL_SECONDS: &str = "refresh.groups.interval.seconds";
pub const EMIT_CHECKPOINTS_ENABLED: &str = "emit.checkpoints.enabled";
pub const EMIT_CHECKPOINTS_INTERVAL_SECONDS: &str = "emit.checkpoints.interval.seconds";
pub const SYNC_GROUP_OFFSETS_ENABLED: &str = "sync.group.offsets.enabled";
pub const SYNC_GROUP_OFFSETS_INTERVAL_SECONDS: &str = "sync.group.offsets.interval.seconds";
pub const CHECKPOINTS_TOPIC_REPLICATION_FACTOR: &str = "checkpoints.topic.replication.factor";
pub const TASK_ASSIGNED_GROUPS: &str = "task.assigned.groups";

// MirrorHeartbeatConfig (§2.11)
pub const EMIT_HEARTBEATS_ENABLED: &str = "emit.heartbeats.enabled";
pub const EMIT_HEARTBEATS_INTERVAL_SECONDS: &str = "emit.heartbeats.interval.seconds";
pub const HEARTBEATS_TOPIC_REPLICATION_FACTOR: &str = "heartbeats.topic.replication.factor";

/// Defaults that are not plain numbers below.
pub const TARGET_CLUSTER_ALIAS_DEFAULT: &str = "target";
pub const FORWARDING_ADMIN_CLASS_DEFAULT: &str = "org.apache.kafka.clients.admin.ForwardingAdmin";
pub const METRIC_REPORTERS_DEFAULT: &str = "org.apache.kafka.common.metrics.JmxReporter";

/// Connector names as the driver writes them (`name` defaults to the simple class name).
pub const SOURCE_CONNECTOR_NAME: &str = "MirrorSourceConnector";
pub const CHECKPOINT_CONNECTOR_NAME: &str = "MirrorCheckpointConnector";
pub const HEARTBEAT_CONNECTOR_NAME: &str = "MirrorHeartbeatConnector";

/// Client roles (§2.6); they end up in `client.id`, where operators look for them.
pub mod roles {
    pub const REPLICATION_SOURCE_ADMIN: &str = "replication-source-admin";
    pub const REPLICATION_TARGET_ADMIN: &str = "replication-target-admin";
    pub const REPLICATION_CONSUMER: &str = "replication-consumer";
    pub const CHECKPOINT_SOURCE_ADMIN: &str = "checkpoint-source-admin";
    pub const CHECKPOINT_TARGET_ADMIN: &str = "checkpoint-target-admin";
    pub const CHECKPOINTS_TARGET_CONSUMER: &str = "checkpoints-target-consumer";
    pub const HEARTBEATS_TARGET_ADMIN: &str = "heartbeats-target-admin";
}

const SOURCE_CLUSTER_PREFIX: &str = "source.cluster.";
const TARGET_CLUSTER_PREFIX: &str = "target.cluster.";
const CLIENT_ID: &str = "client.id";
const ENABLE_AUTO_COMMIT: &str = "enable.auto.commit";
const AUTO_OFFSET_RESET: &str = "auto.offset.reset";
const ISOLATION_LEVEL: &str = "isolation.level";
const READ_COMMITTED: &str = "read_committed";

// ---------------------------------------------------------------------------------------------
// Client config names (MirrorClientConfig.CLIENT_CONFIG_DEF)
// ---------------------------------------------------------------------------------------------

/// The "client config names" of §2.3/§2.6 (bootstrap, security protocol, client SSL and SASL
/// keys): the only `source.cluster.*` / `target.cluster.*` keys that reach a client. Anything
/// else there (`alias`, worker keys) belongs to the cluster, not to a client. One list for the
/// whole crate, kept in [`super::mm2`].
pub use super::mm2::is_client_config_name;

// ---------------------------------------------------------------------------------------------
// Small enums
// ---------------------------------------------------------------------------------------------

/// Which cluster a client talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterSide {
    Source,
    Target,
}

impl ClusterSide {
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterSide::Source => "source",
            ClusterSide::Target => "target",
        }
    }
}

/// The three Kafka client kinds MM2 configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKind {
    Consumer,
    Producer,
    Admin,
}

impl ClientKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Consumer => "consumer",
            ClientKind::Producer => "producer",
            ClientKind::Admin => "admin",
        }
    }
}

/// `offset-syncs.topic.location` (KIP-716): the cluster that holds the offset-syncs topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OffsetSyncsLocation {
    #[default]
    Source,
    Target,
}

impl OffsetSyncsLocation {
    /// `ConfigDef.ValidString.in("source", "target")`: STRING values are trimmed, then matched
    /// case-sensitively; anything else is a `ConfigException` (§12.2 #19).
    pub fn parse(value: &str) -> Result<Self, ConfigError> {
        match value.trim() {
            "source" => Ok(OffsetSyncsLocation::Source),
            "target" => Ok(OffsetSyncsLocation::Target),
            _ => Err(ConfigError::invalid(
                OFFSET_SYNCS_TOPIC_LOCATION,
                value,
                "String must be one of: source, target",
            )),
        }
    }

    fn from_props(props: &Props) -> Result<Self, ConfigError> {
        props
            .get(OFFSET_SYNCS_TOPIC_LOCATION)
            .map_or(Ok(OffsetSyncsLocation::Source), |v| Self::parse(v))
    }

    pub fn as_str(self) -> &'static str {
        self.side().as_str()
    }

    /// The side whose client configs the offset-syncs clients use (§2.6, last bullet).
    pub fn side(self) -> ClusterSide {
        match self {
            OffsetSyncsLocation::Source => ClusterSide::Source,
            OffsetSyncsLocation::Target => ClusterSide::Target,
        }
    }
}

impl std::fmt::Display for OffsetSyncsLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------------------------
// Typed getters with ConfigDef semantics (absent key -> default; errors name the key)
// ---------------------------------------------------------------------------------------------

fn get_bool(props: &Props, key: &str, default: bool) -> Result<bool, ConfigError> {
    props.get(key).map_or(Ok(default), |v| parse_bool(key, v))
}

fn get_long(props: &Props, key: &str, default: i64) -> Result<i64, ConfigError> {
    props.get(key).map_or(Ok(default), |v| parse_long(key, v))
}

fn get_int(props: &Props, key: &str, default: i32) -> Result<i32, ConfigError> {
    props.get(key).map_or(Ok(default), |v| parse_int(key, v))
}

fn get_short(props: &Props, key: &str, default: i16) -> Result<i16, ConfigError> {
    props.get(key).map_or(Ok(default), |v| parse_short(key, v))
}

/// ConfigDef STRING: trimmed.
fn get_string(props: &Props, key: &str, default: &str) -> String {
    props
        .get(key)
        .map_or_else(|| default.to_string(), |v| v.trim().to_string())
}

fn get_list(props: &Props, key: &str, default: &str) -> Vec<String> {
    parse_list(props.get(key).map_or(default, String::as_str))
}

/// A non-negative millisecond LONG as a `Duration`. MM2 does not validate these; a negative
/// timeout can only mean "no time at all", so it becomes zero.
fn get_millis(props: &Props, key: &str, default: i64) -> Result<Duration, ConfigError> {
    Ok(Duration::from_millis(
        get_long(props, key, default)?.max(0) as u64
    ))
}

/// MM2's `….enabled` + `….interval.seconds` pair. `None` means "disabled": the switch is off,
/// or the interval is negative (MM2's own encoding of "never").
fn get_interval(
    props: &Props,
    enabled_key: &str,
    enabled_default: bool,
    seconds_key: &str,
    seconds_default: i64,
) -> Result<Option<Duration>, ConfigError> {
    let enabled = get_bool(props, enabled_key, enabled_default)?;
    let seconds = get_long(props, seconds_key, seconds_default)?;
    Ok(interval_from(enabled, seconds))
}

fn interval_from(enabled: bool, seconds: i64) -> Option<Duration> {
    if enabled && seconds >= 0 {
        Some(Duration::from_secs(seconds as u64))
    } else {
        None
    }
}

/// `source.cluster.alias` has no default (§2.8).
fn parse_source_alias(props: &Props) -> Result<String, ConfigError> {
    props
        .get(SOURCE_CLUSTER_ALIAS)
        .map(|v| v.trim().to_string())
        .ok_or_else(|| ConfigError::Missing {
            key: SOURCE_CLUSTER_ALIAS.to_string(),
        })
}

/// Connect's `tasks.max`: INT, default 1, at least 1.
fn parse_tasks_max(props: &Props) -> Result<u32, ConfigError> {
    let n = get_int(props, TASKS_MAX, 1)?;
    if n < 1 {
        return Err(ConfigError::invalid(
            TASKS_MAX,
            &props[TASKS_MAX],
            "Value must be at least 1",
        ));
    }
    Ok(n as u32)
}

/// `task.index`: injected into task configs only; a task index is never negative.
fn parse_task_index(props: &Props) -> Result<Option<u32>, ConfigError> {
    match props.get(TASK_INDEX) {
        None => Ok(None),
        Some(v) => {
            let n = parse_int(TASK_INDEX, v)?;
            if n < 0 {
                return Err(ConfigError::invalid(
                    TASK_INDEX,
                    v,
                    "Value must be at least 0",
                ));
            }
            Ok(Some(n as u32))
        }
    }
}

/// The ConfigDef types we check when validating a raw map.
#[derive(Debug, Clone, Copy)]
enum KeyType {
    Boolean,
    Int,
    Long,
    Short,
}

fn check_type(props: &Props, key: &str, ty: KeyType) -> Result<(), ConfigError> {
    let Some(v) = props.get(key) else {
        return Ok(());
    };
    match ty {
        KeyType::Boolean => parse_bool(key, v).map(drop),
        KeyType::Int => parse_int(key, v).map(drop),
        KeyType::Long => parse_long(key, v).map(drop),
        KeyType::Short => parse_short(key, v).map(drop),
    }
}

const COMMON_TYPED_KEYS: &[(&str, KeyType)] = &[
    (ENABLED, KeyType::Boolean),
    (ADMIN_TIMEOUT_MS, KeyType::Long),
    (INTERNAL_TOPIC_SEPARATOR_ENABLED, KeyType::Boolean),
];

const SOURCE_TYPED_KEYS: &[(&str, KeyType)] = &[
    (CONSUMER_POLL_TIMEOUT_MS, KeyType::Long),
    (REFRESH_TOPICS_ENABLED, KeyType::Boolean),
    (REFRESH_TOPICS_INTERVAL_SECONDS, KeyType::Long),
    (SYNC_TOPIC_CONFIGS_ENABLED, KeyType::Boolean),
    (SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS, KeyType::Long),
    (SYNC_TOPIC_ACLS_ENABLED, KeyType::Boolean),
    (SYNC_TOPIC_ACLS_INTERVAL_SECONDS, KeyType::Long),
    (REPLICATION_FACTOR, KeyType::Int),
    (OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR, KeyType::Short),
    (OFFSET_LAG_MAX, KeyType::Long),
    (HEARTBEATS_REPLICATION_ENABLED, KeyType::Boolean),
    (EMIT_OFFSET_SYNCS_ENABLED, KeyType::Boolean),
];

const CHECKPOINT_TYPED_KEYS: &[(&str, KeyType)] = &[
    (CONSUMER_POLL_TIMEOUT_MS, KeyType::Long),
    (REFRESH_GROUPS_ENABLED, KeyType::Boolean),
    (REFRESH_GROUPS_INTERVAL_SECONDS, KeyType::Long),
    (EMIT_CHECKPOINTS_ENABLED, KeyType::Boolean),
    (EMIT_CHECKPOINTS_INTERVAL_SECONDS, KeyType::Long),
    (SYNC_GROUP_OFFSETS_ENABLED, KeyType::Boolean),
    (SYNC_GROUP_OFFSETS_INTERVAL_SECONDS, KeyType::Long),
    (CHECKPOINTS_TOPIC_REPLICATION_FACTOR, KeyType::Short),
];

const HEARTBEAT_TYPED_KEYS: &[(&str, KeyType)] = &[
    (EMIT_HEARTBEATS_ENABLED, KeyType::Boolean),
    (EMIT_HEARTBEATS_INTERVAL_SECONDS, KeyType::Long),
    (HEARTBEATS_TOPIC_REPLICATION_FACTOR, KeyType::Short),
];

fn issue(err: ConfigError) -> (String, String) {
    let key = match &err {
        ConfigError::InvalidValue { key, .. } | ConfigError::Missing { key } => key.clone(),
        _ => String::new(),
    };
    (key, err.to_string())
}

/// ConfigDef-level validation (Connect's `super.validate`): one issue per bad key, all of them.
fn type_issues(props: &Props, specific: &[(&str, KeyType)]) -> Vec<(String, String)> {
    let mut issues = Vec::new();
    let mut push = |r: Result<(), ConfigError>| {
        if let Err(e) = r {
            issues.push(issue(e));
        }
    };
    push(parse_source_alias(props).map(drop));
    push(parse_tasks_max(props).map(drop));
    push(parse_task_index(props).map(drop));
    push(ReplicationPolicy::from_props(props).map(drop));
    for (key, ty) in COMMON_TYPED_KEYS.iter().chain(specific) {
        push(check_type(props, key, *ty));
    }
    // The policy re-parses the internal-separator flag; report such a value once.
    let mut seen = std::collections::BTreeSet::new();
    issues.retain(|i| seen.insert(i.clone()));
    issues
}

/// Entries whose key starts with `prefix`, with the prefix stripped (`originalsWithPrefix`).
fn with_prefix(props: &Props, prefix: &str) -> Props {
    props
        .range(prefix.to_string()..)
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k[prefix.len()..].to_string(), v.clone()))
        .collect()
}

/// §2.6 without `client.id`: cluster-level client names, then `<kind>.*`, then `<side>.<kind>.*`;
/// consumers always get `enable.auto.commit=false` and, unless set, `auto.offset.reset=earliest`.
pub fn base_client_config(props: &Props, side: ClusterSide, kind: ClientKind) -> Props {
    let cluster_prefix = match side {
        ClusterSide::Source => SOURCE_CLUSTER_PREFIX,
        ClusterSide::Target => TARGET_CLUSTER_PREFIX,
    };
    let mut config = with_prefix(props, cluster_prefix);
    config.retain(|k, _| is_client_config_name(k));
    config.extend(with_prefix(props, &format!("{}.", kind.as_str())));
    config.extend(with_prefix(
        props,
        &format!("{}.{}.", side.as_str(), kind.as_str()),
    ));
    if kind == ClientKind::Consumer {
        // MM2 tracks positions itself (Connect offsets), never through group commits.
        config.insert(ENABLE_AUTO_COMMIT.into(), "false".into());
        config
            .entry(AUTO_OFFSET_RESET.into())
            .or_insert_with(|| "earliest".into());
    }
    config
}

/// `addClientId`: a user `client.id` is kept as a prefix, so quotas keyed on it still apply.
fn add_client_id(config: &mut Props, label: &str) {
    let id = match config.get(CLIENT_ID) {
        Some(user) => format!("{user}|{label}"),
        None => label.to_string(),
    };
    config.insert(CLIENT_ID.into(), id);
}

// ---------------------------------------------------------------------------------------------
// MirrorConnectorConfig (§2.8)
// ---------------------------------------------------------------------------------------------

/// Settings common to the three connectors (§2.8), typed, with MM2 defaults.
#[derive(Debug, Clone)]
pub struct MirrorConnectorConfig {
    /// The connector config as given (task configs carry every connector original too).
    pub props: Props,
    /// `name`, or the connector's simple class name.
    pub name: String,
    pub source_alias: String,
    pub target_alias: String,
    /// `enabled` (ConfigDef default `true`; the driver injects `false` unless the flow is on).
    pub enabled: bool,
    /// `admin.timeout.ms` (60000).
    pub admin_timeout: Duration,
    /// `tasks.max` (1), at least 1.
    pub tasks_max: u32,
    /// `task.index`, present only in task configs; it is appended to the connector name in
    /// `client.id`.
    pub task_index: Option<u32>,
    /// `forwarding.admin.class` (KIP-787). Only the default is meaningful to us.
    pub forwarding_admin_class: String,
    /// `metric.reporters` (JmxReporter).
    pub metric_reporters: Vec<String>,
    /// `replication.policy.class` and its separators.
    pub policy: ReplicationPolicy,
}

impl MirrorConnectorConfig {
    /// Parse the common keys. Without a `name` key, the simple name of `connector.class` is used;
    /// with neither, this is a missing `name`.
    pub fn new(props: &Props) -> Result<Self, ConfigError> {
        Self::with_default_name(props, None)
    }

    /// As [`new`](Self::new), naming the connector `default_name` when neither `name` nor
    /// `connector.class` is set.
    pub fn with_default_name(
        props: &Props,
        default_name: Option<&str>,
    ) -> Result<Self, ConfigError> {
        let name = match (props.get(NAME), props.get(CONNECTOR_CLASS), default_name) {
            (Some(n), _, _) => n.trim().to_string(),
            (None, Some(class), _) => class.trim().rsplit('.').next().unwrap_or("").to_string(),
            (None, None, Some(d)) => d.to_string(),
            (None, None, None) => {
                return Err(ConfigError::Missing {
                    key: NAME.to_string(),
                })
            }
        };
        Ok(MirrorConnectorConfig {
            props: props.clone(),
            name,
            source_alias: parse_source_alias(props)?,
            target_alias: get_string(props, TARGET_CLUSTER_ALIAS, TARGET_CLUSTER_ALIAS_DEFAULT),
            enabled: get_bool(props, ENABLED, true)?,
            admin_timeout: get_millis(props, ADMIN_TIMEOUT_MS, 60_000)?,
            tasks_max: parse_tasks_max(props)?,
            task_index: parse_task_index(props)?,
            forwarding_admin_class: get_string(
                props,
                FORWARDING_ADMIN_CLASS,
                FORWARDING_ADMIN_CLASS_DEFAULT,
            ),
            metric_reporters: get_list(props, METRIC_REPORTERS, METRIC_REPORTERS_DEFAULT),
            policy: ReplicationPolicy::from_props(props)?,
        })
    }

    /// The MM2 part of `client.id`: `<source>-><target>|<connector name>[-<task>]|<role>`.
    /// The client builders prefix a user-set `client.id` with `|` (§2.6).
    pub fn client_id(&self, role: &str, task_index: Option<u32>) -> String {
        let task = task_index.map(|i| format!("-{i}")).unwrap_or_default();
        format!(
            "{}->{}|{}{}|{}",
            self.source_alias, self.target_alias, self.name, task, role
        )
    }

    /// Any client, for any role, with an explicit task index for `client.id`.
    pub fn client_config(
        &self,
        side: ClusterSide,
        kind: ClientKind,
        role: &str,
        task_index: Option<u32>,
    ) -> Props {
        let mut config = base_client_config(&self.props, side, kind);
        add_client_id(&mut config, &self.client_id(role, task_index));
        config
    }

    fn client(&self, side: ClusterSide, kind: ClientKind, role: &str) -> Props {
        self.client_config(side, kind, role, self.task_index)
    }

    pub fn source_consumer_config(&self, role: &str) -> Props {
        self.client(ClusterSide::Source, ClientKind::Consumer, role)
    }

    pub fn target_consumer_config(&self, role: &str) -> Props {
        self.client(ClusterSide::Target, ClientKind::Consumer, role)
    }

    pub fn source_producer_config(&self, role: &str) -> Props {
        self.client(ClusterSide::Source, ClientKind::Producer, role)
    }

    pub fn target_producer_config(&self, role: &str) -> Props {
        self.client(ClusterSide::Target, ClientKind::Producer, role)
    }

    pub fn source_admin_config(&self, role: &str) -> Props {
        self.client(ClusterSide::Source, ClientKind::Admin, role)
    }

    pub fn target_admin_config(&self, role: &str) -> Props {
        self.client(ClusterSide::Target, ClientKind::Admin, role)
    }

    /// The offset-syncs clients live on the side named by `offset-syncs.topic.location`, and
    /// their role says so: `offset-syncs-<side>-<kind>`.
    fn offset_syncs_client(
        &self,
        location: OffsetSyncsLocation,
        kind: ClientKind,
        task_index: Option<u32>,
    ) -> Props {
        let side = location.side();
        let role = format!("offset-syncs-{}-{}", side.as_str(), kind.as_str());
        self.client_config(side, kind, &role, task_index)
    }

    /// The offset-syncs topic: it lives on the cluster named by `location` and its name carries
    /// the alias of the **other** cluster (§3), e.g. `mm2-offset-syncs.B.internal` on A.
    fn offset_syncs_topic_at(&self, location: OffsetSyncsLocation) -> String {
        match location {
            OffsetSyncsLocation::Source => self.policy.offset_syncs_topic(&self.target_alias),
            OffsetSyncsLocation::Target => self.policy.offset_syncs_topic(&self.source_alias),
        }
    }

    /// `<source>.checkpoints.internal` on the target (§3).
    pub fn checkpoints_topic(&self) -> String {
        self.policy.checkpoints_topic(&self.source_alias)
    }

    /// A task config: every connector original plus the task's own keys (§4.8).
    fn task_config(&self, index: usize, extra: Option<(&str, String)>) -> Props {
        let mut props = self.props.clone();
        if let Some((key, value)) = extra {
            props.insert(key.to_string(), value);
        }
        props.insert(TASK_INDEX.to_string(), index.to_string());
        props
    }
}

// ---------------------------------------------------------------------------------------------
// MirrorSourceConfig (§2.9)
// ---------------------------------------------------------------------------------------------

/// `MirrorSourceConnector` / `MirrorSourceTask` settings.
#[derive(Debug, Clone)]
pub struct MirrorSourceConfig {
    pub common: MirrorConnectorConfig,
    /// `topics` / `topics.exclude` (`topic.filter.class`).
    pub topic_filter: TopicFilter,
    /// `config.properties.exclude` / `use.defaults.from` (`config.property.filter.class`).
    pub config_property_filter: ConfigPropertyFilter,
    /// `consumer.poll.timeout.ms` (1000).
    pub consumer_poll_timeout: Duration,
    /// `refresh.topics.enabled` / `refresh.topics.interval.seconds` (600).
    pub refresh_topics_interval: Option<Duration>,
    /// `sync.topic.configs.enabled` / `sync.topic.configs.interval.seconds` (600).
    pub sync_topic_configs_interval: Option<Duration>,
    /// `sync.topic.acls.enabled` / `sync.topic.acls.interval.seconds` (600).
    pub sync_topic_acls_interval: Option<Duration>,
    /// `replication.factor` for new remote topics: **2**, not 3 (§13 item 2); −1 = broker default.
    pub replication_factor: i32,
    /// `offset-syncs.topic.replication.factor` (3).
    pub offset_syncs_topic_replication_factor: i16,
    /// `offset.lag.max` (100).
    pub offset_lag_max: i64,
    /// `heartbeats.replication.enabled` (true, 4.0).
    pub heartbeats_replication_enabled: bool,
    /// `emit.offset-syncs.enabled` (true, 3.9).
    pub emit_offset_syncs_enabled: bool,
    /// `offset-syncs.topic.location` (source).
    pub offset_syncs_location: OffsetSyncsLocation,
    /// `task.assigned.partitions`, present only in task configs.
    pub task_assigned_partitions: Option<Vec<(String, i32)>>,
}

impl MirrorSourceConfig {
    pub fn new(props: &Props) -> Result<Self, ConfigError> {
        let common = MirrorConnectorConfig::with_default_name(props, Some(SOURCE_CONNECTOR_NAME))?;
        Ok(MirrorSourceConfig {
            topic_filter: TopicFilter::from_props(props)?,
            config_property_filter: ConfigPropertyFilter::from_props(props)?,
            consumer_poll_timeout: get_millis(props, CONSUMER_POLL_TIMEOUT_MS, 1000)?,
            refresh_topics_interval: get_interval(
                props,
                REFRESH_TOPICS_ENABLED,
                true,
                REFRESH_TOPICS_INTERVAL_SECONDS,
                600,
            )?,
            sync_topic_configs_interval: get_interval(
                props,
                SYNC_TOPIC_CONFIGS_ENABLED,
                true,
                SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS,
                600,
            )?,
            sync_topic_acls_interval: get_interval(
                props,
                SYNC_TOPIC_ACLS_ENABLED,
                true,
                SYNC_TOPIC_ACLS_INTERVAL_SECONDS,
                600,
            )?,
            replication_factor: get_int(props, REPLICATION_FACTOR, 2)?,
            offset_syncs_topic_replication_factor: get_short(
                props,
                OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR,
                3,
            )?,
            offset_lag_max: get_long(props, OFFSET_LAG_MAX, 100)?,
            heartbeats_replication_enabled: get_bool(props, HEARTBEATS_REPLICATION_ENABLED, true)?,
            emit_offset_syncs_enabled: get_bool(props, EMIT_OFFSET_SYNCS_ENABLED, true)?,
            offset_syncs_location: OffsetSyncsLocation::from_props(props)?,
            task_assigned_partitions: props
                .get(TASK_ASSIGNED_PARTITIONS)
                .map(|v| decode_topic_partitions(v))
                .transpose()?,
            common,
        })
    }

    /// `MirrorSourceConnector.validate` on a raw connector config: every ConfigDef error, then
    /// MM2's own rules (§2.13). Works even when [`new`](Self::new) would fail (§12.4 #45).
    pub fn validate_props(props: &Props) -> Vec<(String, String)> {
        let mut issues = type_issues(props, SOURCE_TYPED_KEYS);
        if let Err(e) = TopicFilter::from_props(props) {
            issues.push(issue(e));
        }
        if let Err(e) = ConfigPropertyFilter::from_props(props) {
            issues.push(issue(e));
        }
        if let Err(e) = OffsetSyncsLocation::from_props(props) {
            issues.push(issue(e));
        }
        if let Some(Err(e)) = props
            .get(TASK_ASSIGNED_PARTITIONS)
            .map(|v| decode_topic_partitions(v))
        {
            issues.push(issue(e));
        }
        // Java compares the raw strings: only exactly `required` / `false` trigger these rules.
        if props.get(EXACTLY_ONCE_SUPPORT).map(String::as_str) == Some("required")
            && !Self::exactly_once_supported_props(props)
        {
            issues.push((
                EXACTLY_ONCE_SUPPORT.to_string(),
                format!(
                    "MirrorSourceConnector can only provide exactly-once guarantees when its source \
                     consumer is configured with {ISOLATION_LEVEL} set to '{READ_COMMITTED}'; \
                     otherwise, records from aborted and uncommitted transactions will be \
                     replicated from the source cluster to the target cluster."
                ),
            ));
        }
        let offset_syncs_configured = props
            .keys()
            .any(|k| k.starts_with("offset-syncs-") || k.starts_with("offset-syncs.topic."));
        if props.get(EMIT_OFFSET_SYNCS_ENABLED).map(String::as_str) == Some("false")
            && offset_syncs_configured
        {
            issues.push((
                EMIT_OFFSET_SYNCS_ENABLED.to_string(),
                format!(
                    "MirrorSourceConnector can't setup offset-syncs feature while \
                     {EMIT_OFFSET_SYNCS_ENABLED} set to false"
                ),
            ));
        }
        issues
    }

    /// [`validate_props`](Self::validate_props) on this config's map.
    pub fn validate(&self) -> Vec<(String, String)> {
        Self::validate_props(&self.common.props)
    }

    /// §6.8: exactly-once is supported iff the effective source consumer `isolation.level` is
    /// exactly `read_committed` (`source.consumer.` wins over `consumer.`; §12.4 #44).
    pub fn exactly_once_supported_props(props: &Props) -> bool {
        base_client_config(props, ClusterSide::Source, ClientKind::Consumer)
            .get(ISOLATION_LEVEL)
            .map(String::as_str)
            == Some(READ_COMMITTED)
    }

    pub fn exactly_once_supported(&self) -> bool {
        Self::exactly_once_supported_props(&self.common.props)
    }

    /// The offset-syncs topic this flow writes (§12.2 #19).
    pub fn offset_syncs_topic(&self) -> String {
        self.common
            .offset_syncs_topic_at(self.offset_syncs_location)
    }

    /// `<source>.checkpoints.internal`: the source connector skips it when listing target topics.
    pub fn checkpoints_topic(&self) -> String {
        self.common.checkpoints_topic()
    }

    /// The offset-syncs producer: source- or target-side producer settings by location,
    /// role `offset-syncs-<side>-producer`. `task` overrides this config's own `task.index`.
    pub fn offset_syncs_producer_config(&self, task: Option<u32>) -> Props {
        self.common.offset_syncs_client(
            self.offset_syncs_location,
            ClientKind::Producer,
            task.or(self.common.task_index),
        )
    }

    /// The admin that creates the offset-syncs topic (role `offset-syncs-<side>-admin`).
    pub fn offset_syncs_admin_config(&self) -> Props {
        self.common.offset_syncs_client(
            self.offset_syncs_location,
            ClientKind::Admin,
            self.common.task_index,
        )
    }

    /// §6.7: no tasks when disabled or when nothing matches; otherwise round-robin.
    pub fn task_partitions(&self, partitions: &[(String, i32)]) -> Vec<Vec<(String, i32)>> {
        if !self.common.enabled {
            return Vec::new();
        }
        assign_partitions_round_robin(partitions, self.common.tasks_max)
    }

    /// Task configs as `MirrorSourceConnector.taskConfigs` writes them (§4.8).
    pub fn task_configs(&self, partitions: &[(String, i32)]) -> Vec<Props> {
        self.task_partitions(partitions)
            .iter()
            .enumerate()
            .map(|(i, tps)| {
                self.common.task_config(
                    i,
                    Some((TASK_ASSIGNED_PARTITIONS, encode_topic_partitions(tps))),
                )
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// MirrorCheckpointConfig (§2.10)
// ---------------------------------------------------------------------------------------------

/// `MirrorCheckpointConnector` / `MirrorCheckpointTask` settings.
#[derive(Debug, Clone)]
pub struct MirrorCheckpointConfig {
    pub common: MirrorConnectorConfig,
    /// `groups` / `groups.exclude` (`group.filter.class`).
    pub group_filter: GroupFilter,
    /// `topics` / `topics.exclude`: a group is relevant only with offsets on such a topic.
    pub topic_filter: TopicFilter,
    /// `consumer.poll.timeout.ms` (1000): sleep granularity inside `poll`.
    pub consumer_poll_timeout: Duration,
    /// `emit.checkpoints.enabled` / `emit.checkpoints.interval.seconds` (60).
    pub emit_checkpoints_interval: Option<Duration>,
    /// `sync.group.offsets.enabled` (**false**) / `sync.group.offsets.interval.seconds` (60).
    pub sync_group_offsets_interval: Option<Duration>,
    /// `refresh.groups.enabled` / `refresh.groups.interval.seconds` (600).
    pub refresh_groups_interval: Option<Duration>,
    /// `checkpoints.topic.replication.factor` (3).
    pub checkpoints_topic_replication_factor: i16,
    /// `offset-syncs.topic.location` (source).
    pub offset_syncs_location: OffsetSyncsLocation,
    /// `task.assigned.groups`, present only in task configs.
    pub task_assigned_groups: Option<Vec<String>>,
}

impl MirrorCheckpointConfig {
    pub fn new(props: &Props) -> Result<Self, ConfigError> {
        let common =
            MirrorConnectorConfig::with_default_name(props, Some(CHECKPOINT_CONNECTOR_NAME))?;
        Ok(MirrorCheckpointConfig {
            group_filter: GroupFilter::from_props(props)?,
            topic_filter: TopicFilter::from_props(props)?,
            consumer_poll_timeout: get_millis(props, CONSUMER_POLL_TIMEOUT_MS, 1000)?,
            emit_checkpoints_interval: get_interval(
                props,
                EMIT_CHECKPOINTS_ENABLED,
                true,
                EMIT_CHECKPOINTS_INTERVAL_SECONDS,
                60,
            )?,
            sync_group_offsets_interval: get_interval(
                props,
                SYNC_GROUP_OFFSETS_ENABLED,
                false,
                SYNC_GROUP_OFFSETS_INTERVAL_SECONDS,
                60,
            )?,
            refresh_groups_interval: get_interval(
                props,
                REFRESH_GROUPS_ENABLED,
                true,
                REFRESH_GROUPS_INTERVAL_SECONDS,
                600,
            )?,
            checkpoints_topic_replication_factor: get_short(
                props,
                CHECKPOINTS_TOPIC_REPLICATION_FACTOR,
                3,
            )?,
            offset_syncs_location: OffsetSyncsLocation::from_props(props)?,
            task_assigned_groups: props.get(TASK_ASSIGNED_GROUPS).map(|v| parse_list(v)),
            common,
        })
    }

    /// `MirrorCheckpointConnector.validate` on a raw map: ConfigDef errors, then (only when
    /// `enabled` is not the string `false`) the 3.9 rules of §2.13 (§12.2 #24, §13 item 10).
    pub fn validate_props(props: &Props) -> Vec<(String, String)> {
        let mut issues = type_issues(props, CHECKPOINT_TYPED_KEYS);
        if let Err(e) = GroupFilter::from_props(props) {
            issues.push(issue(e));
        }
        if let Err(e) = TopicFilter::from_props(props) {
            issues.push(issue(e));
        }
        if let Err(e) = OffsetSyncsLocation::from_props(props) {
            issues.push(issue(e));
        }
        // Java: "false".equals(configs.getOrDefault(ENABLED, "true")) — raw strings, no trim.
        if props.get(ENABLED).map(String::as_str) == Some("false") {
            return issues;
        }
        if props.get(EMIT_CHECKPOINTS_ENABLED).map(String::as_str) == Some("false") {
            issues.push((
                EMIT_CHECKPOINTS_ENABLED.to_string(),
                format!(
                    "MirrorCheckpointConnector can't run with {EMIT_CHECKPOINTS_ENABLED} set to false"
                ),
            ));
        }
        if props.get(EMIT_OFFSET_SYNCS_ENABLED).map(String::as_str) == Some("false") {
            issues.push((
                EMIT_OFFSET_SYNCS_ENABLED.to_string(),
                "MirrorCheckpointConnector can't run without offset syncs".to_string(),
            ));
        }
        issues
    }

    pub fn validate(&self) -> Vec<(String, String)> {
        Self::validate_props(&self.common.props)
    }

    /// `<source>.checkpoints.internal` on the target.
    pub fn checkpoints_topic(&self) -> String {
        self.common.checkpoints_topic()
    }

    /// The offset-syncs topic this flow reads (same rule as the source connector).
    pub fn offset_syncs_topic(&self) -> String {
        self.common
            .offset_syncs_topic_at(self.offset_syncs_location)
    }

    /// The consumer that reads the offset-syncs topic (role `offset-syncs-<side>-consumer`).
    pub fn offset_syncs_consumer_config(&self, task: Option<u32>) -> Props {
        self.common.offset_syncs_client(
            self.offset_syncs_location,
            ClientKind::Consumer,
            task.or(self.common.task_index),
        )
    }

    /// The admin on the offset-syncs side (role `offset-syncs-<side>-admin`).
    pub fn offset_syncs_admin_config(&self) -> Props {
        self.common.offset_syncs_client(
            self.offset_syncs_location,
            ClientKind::Admin,
            self.common.task_index,
        )
    }

    /// §8.1 `taskConfigs`: nothing when disabled, when emission is off, or without groups;
    /// otherwise contiguous chunks (§12.7 #71).
    pub fn task_groups(&self, groups: &[String]) -> Vec<Vec<String>> {
        if !self.common.enabled || self.emit_checkpoints_interval.is_none() {
            return Vec::new();
        }
        assign_groups_contiguous(groups, self.common.tasks_max)
    }

    /// Task configs as `MirrorCheckpointConfig.taskConfigForConsumerGroups` writes them.
    pub fn task_configs(&self, groups: &[String]) -> Vec<Props> {
        self.task_groups(groups)
            .iter()
            .enumerate()
            .map(|(i, g)| {
                self.common
                    .task_config(i, Some((TASK_ASSIGNED_GROUPS, g.join(","))))
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// MirrorHeartbeatConfig (§2.11)
// ---------------------------------------------------------------------------------------------

/// `MirrorHeartbeatConnector` / `MirrorHeartbeatTask` settings.
#[derive(Debug, Clone)]
pub struct MirrorHeartbeatConfig {
    pub common: MirrorConnectorConfig,
    /// `emit.heartbeats.enabled` / `emit.heartbeats.interval.seconds` (1).
    pub emit_heartbeats_interval: Option<Duration>,
    /// `heartbeats.topic.replication.factor` (3).
    pub heartbeats_topic_replication_factor: i16,
}

impl MirrorHeartbeatConfig {
    pub fn new(props: &Props) -> Result<Self, ConfigError> {
        let common =
            MirrorConnectorConfig::with_default_name(props, Some(HEARTBEAT_CONNECTOR_NAME))?;
        Ok(MirrorHeartbeatConfig {
            emit_heartbeats_interval: get_interval(
                props,
                EMIT_HEARTBEATS_ENABLED,
                true,
                EMIT_HEARTBEATS_INTERVAL_SECONDS,
                1,
            )?,
            heartbeats_topic_replication_factor: get_short(
                props,
                HEARTBEATS_TOPIC_REPLICATION_FACTOR,
                3,
            )?,
            common,
        })
    }

    /// `heartbeats`, on the target; never renamed by separators.
    pub fn heartbeats_topic(&self) -> String {
        self.common.policy.heartbeats_topic().to_string()
    }

    /// ConfigDef errors only; MM2 adds no rules for this connector.
    pub fn validate_props(props: &Props) -> Vec<(String, String)> {
        type_issues(props, HEARTBEAT_TYPED_KEYS)
    }

    pub fn validate(&self) -> Vec<(String, String)> {
        Self::validate_props(&self.common.props)
    }

    /// Exactly one task (the connector originals) unless emission is off. `enabled` is
    /// ignored on purpose (§1.3, §13 item 1, §12.7 #73).
    pub fn task_configs(&self) -> Vec<Props> {
        match self.emit_heartbeats_interval {
            Some(_) => vec![self.common.props.clone()],
            None => Vec::new(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Task assignment and task config encoding
// ---------------------------------------------------------------------------------------------

/// §6.7 round-robin: `min(tasks_max, n)` tasks; item i goes to task `i % tasks`.
pub fn assign_partitions_round_robin<T: Clone>(items: &[T], tasks_max: u32) -> Vec<Vec<T>> {
    let tasks = (tasks_max.max(1) as usize).min(items.len());
    let mut out: Vec<Vec<T>> = vec![Vec::new(); tasks];
    for (i, item) in items.iter().enumerate() {
        out[i % tasks].push(item.clone());
    }
    out
}

/// §8.1 contiguous chunks (Connect's `ConnectorUtils.groupPartitions`): `k = min(tasks_max, n)`
/// tasks; the first `n mod k` get `⌊n/k⌋ + 1` items, the rest `⌊n/k⌋`.
pub fn assign_groups_contiguous<T: Clone>(items: &[T], tasks_max: u32) -> Vec<Vec<T>> {
    let tasks = (tasks_max.max(1) as usize).min(items.len());
    if tasks == 0 {
        return Vec::new();
    }
    let per_task = items.len() / tasks;
    let leftover = items.len() % tasks;
    let mut rest = items;
    (0..tasks)
        .map(|t| {
            let size = per_task + usize::from(t < leftover);
            let (chunk, tail) = rest.split_at(size);
            rest = tail;
            chunk.to_vec()
        })
        .collect()
}

/// §4.8: `TopicPartition.toString()` values (`topic-partition`), comma-joined.
pub fn encode_topic_partitions(tps: &[(String, i32)]) -> String {
    tps.iter()
        .map(|(topic, partition)| format!("{topic}-{partition}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// §4.8: a LIST of `topic-partition`; the **last** `-` separates the partition, so topics
/// containing `-` survive.
pub fn decode_topic_partitions(s: &str) -> Result<Vec<(String, i32)>, ConfigError> {
    parse_list(s)
        .into_iter()
        .map(|tp| {
            let bad = |why: &str| {
                ConfigError::invalid(TASK_ASSIGNED_PARTITIONS, s, format!("{why} in '{tp}'"))
            };
            let (topic, partition) = tp
                .rsplit_once('-')
                .ok_or_else(|| bad("no '-' before the partition number"))?;
            let partition = partition
                .parse::<i32>()
                .map_err(|_| bad("partition is not a number"))?;
            Ok((topic.to_string(), partition))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Like `MirrorTestUtils.makeProps` in the Java tests.
    fn make_props(extra: &[(&str, &str)]) -> Props {
        let mut props = Props::new();
        props.insert("name".into(), "ConnectorName".into());
        props.insert("connector.class".into(), "ConnectorClass".into());
        props.insert("source.cluster.alias".into(), "source1".into());
        props.insert("target.cluster.alias".into(), "target2".into());
        for (k, v) in extra {
            props.insert(k.to_string(), v.to_string());
        }
        props
    }

    fn map(entries: &[(&str, &str)]) -> Props {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn tp(topic: &str, partition: i32) -> (String, i32) {
        (topic.to_string(), partition)
    }

    #[test]
    fn task_partitions_round_trip() {
        // §12.2 #16
        let tps = vec![tp("topic-1", 2), tp("topic-3", 4), tp("topic-5", 6)];
        let encoded = encode_topic_partitions(&tps);
        assert_eq!(encoded, "topic-1-2,topic-3-4,topic-5-6");
        assert_eq!(decode_topic_partitions(&encoded).unwrap(), tps);

        // Through a task config too.
        let config =
            MirrorSourceConfig::new(&make_props(&[(TASK_ASSIGNED_PARTITIONS, &encoded)])).unwrap();
        assert_eq!(config.task_assigned_partitions, Some(tps));

        assert!(decode_topic_partitions("").unwrap().is_empty());
        assert!(decode_topic_partitions("nodash").is_err());
        let err = decode_topic_partitions("t-x").unwrap_err().to_string();
        assert!(err.contains(TASK_ASSIGNED_PARTITIONS), "{err}");
    }

    #[test]
    fn offset_syncs_topic_location() {
        // §12.2 #19
        let err =
            MirrorSourceConfig::new(&make_props(&[(OFFSET_SYNCS_TOPIC_LOCATION, "something")]))
                .unwrap_err()
                .to_string();
        assert!(err.contains(OFFSET_SYNCS_TOPIC_LOCATION), "{err}");
        assert!(
            MirrorCheckpointConfig::new(&make_props(&[(OFFSET_SYNCS_TOPIC_LOCATION, "x")]))
                .is_err()
        );

        let unset = MirrorSourceConfig::new(&make_props(&[])).unwrap();
        assert_eq!(unset.offset_syncs_location, OffsetSyncsLocation::Source);
        assert_eq!(
            unset.offset_syncs_topic(),
            "mm2-offset-syncs.target2.internal"
        );
        let source =
            MirrorSourceConfig::new(&make_props(&[(OFFSET_SYNCS_TOPIC_LOCATION, "source")]))
                .unwrap();
        assert_eq!(
            source.offset_syncs_topic(),
            "mm2-offset-syncs.target2.internal"
        );
        let target =
            MirrorSourceConfig::new(&make_props(&[(OFFSET_SYNCS_TOPIC_LOCATION, "target")]))
                .unwrap();
        assert_eq!(
            target.offset_syncs_topic(),
            "mm2-offset-syncs.source1.internal"
        );
        let checkpoint =
            MirrorCheckpointConfig::new(&make_props(&[(OFFSET_SYNCS_TOPIC_LOCATION, "target")]))
                .unwrap();
        assert_eq!(
            checkpoint.offset_syncs_topic(),
            "mm2-offset-syncs.source1.internal"
        );
        assert_eq!(
            checkpoint.checkpoints_topic(),
            "source1.checkpoints.internal"
        );
    }

    #[test]
    fn offset_syncs_clients_follow_location() {
        // §12.2 #20
        let extra = [
            ("source.cluster.bootstrap.servers", "s:9092"),
            ("target.cluster.bootstrap.servers", "t:9092"),
            ("source.producer.acks", "1"),
            ("target.producer.acks", "all"),
            ("consumer.max.poll.records", "7"),
        ];
        let without_id = |mut p: Props| {
            p.remove("client.id");
            p
        };

        let src = MirrorSourceConfig::new(&make_props(&extra)).unwrap();
        let producer = src.offset_syncs_producer_config(None);
        assert_eq!(
            producer["client.id"],
            "source1->target2|ConnectorName|offset-syncs-source-producer"
        );
        assert_eq!(
            without_id(producer),
            without_id(src.common.source_producer_config("test"))
        );
        let admin = src.offset_syncs_admin_config();
        assert_eq!(
            admin["client.id"],
            "source1->target2|ConnectorName|offset-syncs-source-admin"
        );
        assert_eq!(
            without_id(admin),
            without_id(src.common.source_admin_config("x"))
        );
        assert_eq!(
            src.common.source_producer_config("test")["client.id"],
            "source1->target2|ConnectorName|test"
        );

        let mut target_extra = extra.to_vec();
        target_extra.push((OFFSET_SYNCS_TOPIC_LOCATION, "target"));
        let tgt = MirrorSourceConfig::new(&make_props(&target_extra)).unwrap();
        let producer = tgt.offset_syncs_producer_config(Some(3));
        assert_eq!(
            producer["client.id"],
            "source1->target2|ConnectorName-3|offset-syncs-target-producer"
        );
        assert_eq!(producer["bootstrap.servers"], "t:9092");
        assert_eq!(
            without_id(producer),
            without_id(tgt.common.target_producer_config("test"))
        );

        let cp = MirrorCheckpointConfig::new(&make_props(&target_extra)).unwrap();
        let consumer = cp.offset_syncs_consumer_config(None);
        assert_eq!(
            consumer["client.id"],
            "source1->target2|ConnectorName|offset-syncs-target-consumer"
        );
        assert_eq!(
            without_id(consumer),
            without_id(cp.common.target_consumer_config("y"))
        );
        let cp_source = MirrorCheckpointConfig::new(&make_props(&extra)).unwrap();
        assert_eq!(
            without_id(cp_source.offset_syncs_consumer_config(None)),
            without_id(cp_source.common.source_consumer_config("y"))
        );
        assert_eq!(
            cp_source.offset_syncs_admin_config()["client.id"],
            "source1->target2|ConnectorName|offset-syncs-source-admin"
        );
    }

    #[test]
    fn source_consumer_config_exact() {
        // §12.2 #21
        let config = MirrorConnectorConfig::new(&make_props(&[
            ("consumer.max.poll.interval.ms", "120000"),
            ("source.cluster.bootstrap.servers", "localhost:2345"),
        ]))
        .unwrap();
        assert_eq!(
            config.source_consumer_config("test"),
            map(&[
                ("enable.auto.commit", "false"),
                ("auto.offset.reset", "earliest"),
                ("max.poll.interval.ms", "120000"),
                ("client.id", "source1->target2|ConnectorName|test"),
                ("bootstrap.servers", "localhost:2345"),
            ])
        );

        let user = MirrorConnectorConfig::new(&make_props(&[
            ("consumer.auto.offset.reset", "latest"),
            ("consumer.enable.auto.commit", "true"),
        ]))
        .unwrap();
        let c = user.source_consumer_config("test");
        assert_eq!(c["auto.offset.reset"], "latest");
        assert_eq!(
            c["enable.auto.commit"], "false",
            "auto commit is always forced off"
        );

        let user = MirrorConnectorConfig::new(&make_props(&[(
            "source.consumer.auto.offset.reset",
            "latest",
        )]))
        .unwrap();
        assert_eq!(
            user.source_consumer_config("test")["auto.offset.reset"],
            "latest"
        );
        // The target consumer does not see `source.consumer.*`.
        assert_eq!(
            user.target_consumer_config("test")["auto.offset.reset"],
            "earliest"
        );
    }

    #[test]
    fn producer_and_admin_configs() {
        // §12.2 #22
        let expected = map(&[
            ("acks", "1"),
            ("client.id", "source1->target2|ConnectorName|test"),
        ]);
        let c = MirrorConnectorConfig::new(&make_props(&[("producer.acks", "1")])).unwrap();
        assert_eq!(c.source_producer_config("test"), expected);
        let c = MirrorConnectorConfig::new(&make_props(&[("source.producer.acks", "1")])).unwrap();
        assert_eq!(c.source_producer_config("test"), expected);
        assert_eq!(c.target_producer_config("test").get("acks"), None);

        let expected = map(&[
            ("connections.max.idle.ms", "10000"),
            ("client.id", "source1->target2|ConnectorName|test"),
        ]);
        let c =
            MirrorConnectorConfig::new(&make_props(&[("admin.connections.max.idle.ms", "10000")]))
                .unwrap();
        assert_eq!(c.source_admin_config("test"), expected);
        assert_eq!(c.target_admin_config("test"), expected);
        let c = MirrorConnectorConfig::new(&make_props(&[(
            "source.admin.connections.max.idle.ms",
            "10000",
        )]))
        .unwrap();
        assert_eq!(c.source_admin_config("test"), expected);
        assert_eq!(
            c.target_admin_config("test").get("connections.max.idle.ms"),
            None
        );
        let c = MirrorConnectorConfig::new(&make_props(&[(
            "target.admin.connections.max.idle.ms",
            "10000",
        )]))
        .unwrap();
        assert_eq!(c.target_admin_config("test"), expected);
        assert_eq!(
            c.source_admin_config("test").get("connections.max.idle.ms"),
            None
        );
    }

    #[test]
    fn client_config_precedence_and_cluster_filtering() {
        // §2.6: cluster client names < `<kind>.*` < `<side>.<kind>.*`; other cluster keys dropped.
        let c = MirrorConnectorConfig::new(&make_props(&[
            ("source.cluster.bootstrap.servers", "cluster:1"),
            ("source.cluster.security.protocol", "SSL"),
            ("source.cluster.ssl.truststore.location", "/ts"),
            ("source.cluster.sasl.mechanism", "PLAIN"),
            ("source.cluster.offset.flush.interval.ms", "5"),
            ("source.cluster.compression.type", "zstd"),
            ("producer.security.protocol", "SASL_SSL"),
            ("source.producer.bootstrap.servers", "side:1"),
            ("target.cluster.bootstrap.servers", "t:1"),
        ]))
        .unwrap();
        let p = c.source_producer_config("r");
        assert_eq!(p["bootstrap.servers"], "side:1");
        assert_eq!(p["security.protocol"], "SASL_SSL");
        assert_eq!(p["ssl.truststore.location"], "/ts");
        assert_eq!(p["sasl.mechanism"], "PLAIN");
        assert!(!p.contains_key("alias"));
        assert!(!p.contains_key("offset.flush.interval.ms"));
        assert!(!p.contains_key("compression.type"));
        let a = c.source_admin_config("r");
        assert_eq!(a["bootstrap.servers"], "cluster:1");
        assert_eq!(a["security.protocol"], "SSL");
        assert_eq!(c.target_admin_config("r")["bootstrap.servers"], "t:1");
        assert_eq!(
            c.target_admin_config("r").get("ssl.truststore.location"),
            None
        );
    }

    #[test]
    fn client_id_format() {
        // §2.6: user client.id kept as a prefix; task index only in task configs.
        let c = MirrorConnectorConfig::new(&make_props(&[("consumer.client.id", "mine")])).unwrap();
        assert_eq!(
            c.source_consumer_config(roles::REPLICATION_CONSUMER)["client.id"],
            "mine|source1->target2|ConnectorName|replication-consumer"
        );
        assert_eq!(
            c.client_id("r", Some(0)),
            "source1->target2|ConnectorName-0|r"
        );
        assert_eq!(c.client_id("r", None), "source1->target2|ConnectorName|r");

        let task = MirrorSourceConfig::new(&make_props(&[(TASK_INDEX, "2")])).unwrap();
        assert_eq!(task.common.task_index, Some(2));
        assert_eq!(
            task.common
                .source_consumer_config(roles::REPLICATION_CONSUMER)["client.id"],
            "source1->target2|ConnectorName-2|replication-consumer"
        );
        assert!(MirrorSourceConfig::new(&make_props(&[(TASK_INDEX, "-1")])).is_err());
    }

    #[test]
    fn connector_name_fallbacks() {
        let mut props = make_props(&[]);
        props.remove("name");
        props.insert(
            "connector.class".into(),
            "org.apache.kafka.connect.mirror.MirrorCheckpointConnector".into(),
        );
        assert_eq!(
            MirrorConnectorConfig::new(&props).unwrap().name,
            "MirrorCheckpointConnector"
        );
        props.remove("connector.class");
        assert!(matches!(
            MirrorConnectorConfig::new(&props),
            Err(ConfigError::Missing { ref key }) if key == "name"
        ));
        assert_eq!(
            MirrorHeartbeatConfig::new(&props).unwrap().common.name,
            HEARTBEAT_CONNECTOR_NAME
        );
        assert_eq!(
            MirrorSourceConfig::new(&props).unwrap().common.name,
            SOURCE_CONNECTOR_NAME
        );
    }

    #[test]
    fn source_alias_required_target_alias_defaults() {
        let mut props = make_props(&[]);
        props.remove(TARGET_CLUSTER_ALIAS);
        assert_eq!(
            MirrorConnectorConfig::new(&props).unwrap().target_alias,
            "target"
        );
        props.remove(SOURCE_CLUSTER_ALIAS);
        let err = MirrorConnectorConfig::new(&props).unwrap_err();
        assert!(err.to_string().contains(SOURCE_CLUSTER_ALIAS), "{err}");
        let issues = MirrorSourceConfig::validate_props(&props);
        assert!(
            issues.iter().any(|(k, _)| k == SOURCE_CLUSTER_ALIAS),
            "{issues:?}"
        );
    }

    #[test]
    fn metric_reporters() {
        // §12.2 #23
        let c = MirrorConnectorConfig::new(&make_props(&[])).unwrap();
        assert_eq!(c.metric_reporters.len(), 1);
        assert_eq!(c.metric_reporters[0], METRIC_REPORTERS_DEFAULT);
        let c = MirrorConnectorConfig::new(&make_props(&[(
            METRIC_REPORTERS,
            "org.apache.kafka.common.metrics.JmxReporter,MockMetricsReporter",
        )]))
        .unwrap();
        assert_eq!(c.metric_reporters.len(), 2);
    }

    #[test]
    fn checkpoint_validation() {
        // §12.2 #24
        for ec in ["true", "false"] {
            for eos in ["true", "false"] {
                let p = make_props(&[
                    (ENABLED, "false"),
                    (EMIT_CHECKPOINTS_ENABLED, ec),
                    (EMIT_OFFSET_SYNCS_ENABLED, eos),
                ]);
                assert!(
                    MirrorCheckpointConfig::validate_props(&p).is_empty(),
                    "{ec} {eos}"
                );
            }
        }
        let p = make_props(&[(ENABLED, "true"), (EMIT_CHECKPOINTS_ENABLED, "false")]);
        let issues = MirrorCheckpointConfig::validate_props(&p);
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].0, EMIT_CHECKPOINTS_ENABLED);

        let p = make_props(&[(ENABLED, "true"), (EMIT_OFFSET_SYNCS_ENABLED, "false")]);
        let issues = MirrorCheckpointConfig::new(&p).unwrap().validate();
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].0, EMIT_OFFSET_SYNCS_ENABLED);
        assert!(issues[0].1.contains("can't run without offset syncs"));

        // `enabled` absent counts as enabled (§13 item 10).
        let p = make_props(&[
            (EMIT_CHECKPOINTS_ENABLED, "false"),
            (EMIT_OFFSET_SYNCS_ENABLED, "false"),
        ]);
        assert_eq!(MirrorCheckpointConfig::validate_props(&p).len(), 2);

        let p = make_props(&[
            (ENABLED, "true"),
            (EMIT_CHECKPOINTS_ENABLED, "true"),
            (EMIT_OFFSET_SYNCS_ENABLED, "true"),
        ]);
        assert!(MirrorCheckpointConfig::validate_props(&p).is_empty());
    }

    #[test]
    fn round_robin_example() {
        // §12.4 #40, the example of §6.7
        let mut partitions = Vec::new();
        for p in 0..8 {
            partitions.push(tp("t0", p));
        }
        for p in 0..2 {
            partitions.push(tp("t1", p));
        }
        for p in 0..2 {
            partitions.push(tp("t2", p));
        }
        let config = MirrorSourceConfig::new(&make_props(&[(TASKS_MAX, "3")])).unwrap();
        let tasks = config.task_configs(&partitions);
        let assigned: Vec<&str> = tasks
            .iter()
            .map(|t| t[TASK_ASSIGNED_PARTITIONS].as_str())
            .collect();
        assert_eq!(
            assigned,
            vec![
                "t0-0,t0-3,t0-6,t1-1",
                "t0-1,t0-4,t0-7,t2-0",
                "t0-2,t0-5,t1-0,t2-1"
            ]
        );
        for (i, t) in tasks.iter().enumerate() {
            assert_eq!(t[TASK_INDEX], i.to_string());
            assert_eq!(
                t["name"], "ConnectorName",
                "task configs carry the originals"
            );
        }

        // numTasks = min(tasks.max, #partitions); none when disabled or empty.
        assert_eq!(assign_partitions_round_robin(&partitions[..2], 5).len(), 2);
        assert!(config.task_configs(&[]).is_empty());
        let disabled =
            MirrorSourceConfig::new(&make_props(&[(TASKS_MAX, "3"), (ENABLED, "false")])).unwrap();
        assert!(disabled.task_configs(&partitions).is_empty());
    }

    #[test]
    fn contiguous_chunks() {
        // §8.1: first n mod k tasks get one extra; not round-robin.
        let groups: Vec<String> = (0..7).map(|i| format!("g{i}")).collect();
        let chunks = assign_groups_contiguous(&groups, 3);
        assert_eq!(
            chunks,
            vec![vec!["g0", "g1", "g2"], vec!["g3", "g4"], vec!["g5", "g6"]]
        );
        let chunks = assign_groups_contiguous(&groups, 10);
        assert_eq!(chunks.len(), 7);
        assert!(chunks.iter().all(|c| c.len() == 1));
        assert_eq!(assign_groups_contiguous(&groups, 1), vec![groups.clone()]);
        assert!(assign_groups_contiguous::<String>(&[], 4).is_empty());
        let chunks = assign_groups_contiguous(&groups[..6], 4);
        assert_eq!(
            chunks.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![2, 2, 1, 1]
        );
    }

    #[test]
    fn checkpoint_task_counts() {
        // §12.7 #71 (task counts only)
        let one = vec!["group".to_string()];
        let c = MirrorCheckpointConfig::new(&make_props(&[(EMIT_CHECKPOINTS_ENABLED, "false")]))
            .unwrap();
        assert!(c.task_configs(&one).is_empty());
        let c = MirrorCheckpointConfig::new(&make_props(&[])).unwrap();
        let tasks = c.task_configs(&one);
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0][TASK_ASSIGNED_GROUPS], "group");
        assert!(c.task_configs(&[]).is_empty());
        let c = MirrorCheckpointConfig::new(&make_props(&[(ENABLED, "false")])).unwrap();
        assert!(c.task_configs(&one).is_empty());
        let c = MirrorCheckpointConfig::new(&make_props(&[(ENABLED, "true")])).unwrap();
        assert_eq!(c.task_configs(&one).len(), 1);

        let groups: Vec<String> = (0..5).map(|i| format!("g{i}")).collect();
        let c = MirrorCheckpointConfig::new(&make_props(&[(TASKS_MAX, "2")])).unwrap();
        let tasks = c.task_configs(&groups);
        assert_eq!(tasks[0][TASK_ASSIGNED_GROUPS], "g0,g1,g2");
        assert_eq!(tasks[1][TASK_ASSIGNED_GROUPS], "g3,g4");
        let task = MirrorCheckpointConfig::new(&tasks[1]).unwrap();
        assert_eq!(
            task.task_assigned_groups,
            Some(vec!["g3".into(), "g4".into()])
        );
        assert_eq!(task.common.task_index, Some(1));
    }

    #[test]
    fn heartbeat_task_counts() {
        // §12.7 #73: emission off -> 0 tasks; `enabled=false` still gives 1.
        let c =
            MirrorHeartbeatConfig::new(&make_props(&[(EMIT_HEARTBEATS_ENABLED, "false")])).unwrap();
        assert!(c.task_configs().is_empty());
        let c = MirrorHeartbeatConfig::new(&make_props(&[(ENABLED, "false")])).unwrap();
        assert_eq!(c.task_configs().len(), 1);
        assert_eq!(c.heartbeats_topic(), "heartbeats");
    }

    #[test]
    fn exactly_once_support_combinations() {
        // §12.4 #44: (consumer.isolation.level, source.consumer.isolation.level) -> supported?
        let committed = Some("read_committed");
        let uncommitted = Some("read_uncommitted");
        let garbage = Some("<)(*^&@#>");
        let cases = [
            (None, None, false),
            (uncommitted, None, false),
            (None, uncommitted, false),
            (uncommitted, uncommitted, false),
            (committed, None, true),
            (None, committed, true),
            (uncommitted, committed, true),
            (committed, committed, true),
            (garbage, None, false),
            (None, garbage, false),
            (garbage, garbage, false),
            (committed, garbage, false),
            (uncommitted, garbage, false),
            (garbage, committed, true),
        ];
        for (default_level, source_level, expected) in cases {
            let mut props = make_props(&[]);
            if let Some(v) = default_level {
                props.insert("consumer.isolation.level".into(), v.into());
            }
            if let Some(v) = source_level {
                props.insert("source.consumer.isolation.level".into(), v.into());
            }
            assert_eq!(
                MirrorSourceConfig::exactly_once_supported_props(&props),
                expected,
                "{default_level:?} {source_level:?}"
            );
            assert_eq!(
                MirrorSourceConfig::new(&props)
                    .unwrap()
                    .exactly_once_supported(),
                expected
            );
        }
    }

    #[test]
    fn source_validation() {
        // §12.4 #45
        for value in [None, Some("requested"), Some("garbage")] {
            let mut props = make_props(&[]);
            if let Some(v) = value {
                props.insert(EXACTLY_ONCE_SUPPORT.into(), v.into());
            }
            assert!(
                MirrorSourceConfig::validate_props(&props).is_empty(),
                "{value:?}"
            );
        }
        let required = make_props(&[(EXACTLY_ONCE_SUPPORT, "required")]);
        let issues = MirrorSourceConfig::validate_props(&required);
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].0, EXACTLY_ONCE_SUPPORT);
        assert!(issues[0].1.contains("isolation.level"));
        let ok = make_props(&[
            (EXACTLY_ONCE_SUPPORT, "required"),
            ("source.consumer.isolation.level", "read_committed"),
        ]);
        assert!(MirrorSourceConfig::validate_props(&ok).is_empty());

        // A bad offset.lag.max gets its own error and does not hide the EOS check.
        let both = make_props(&[(EXACTLY_ONCE_SUPPORT, "required"), (OFFSET_LAG_MAX, "nope")]);
        let issues = MirrorSourceConfig::validate_props(&both);
        let keys: Vec<&str> = issues.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys.len(), 2, "{issues:?}");
        assert!(keys.contains(&OFFSET_LAG_MAX));
        assert!(keys.contains(&EXACTLY_ONCE_SUPPORT));
        assert!(MirrorSourceConfig::new(&both).is_err());
    }

    #[test]
    fn source_validation_emit_offset_syncs() {
        // §2.13: emit.offset-syncs.enabled=false with offset-syncs settings is an error.
        let p = make_props(&[
            (EMIT_OFFSET_SYNCS_ENABLED, "false"),
            (OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR, "1"),
        ]);
        let issues = MirrorSourceConfig::validate_props(&p);
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].0, EMIT_OFFSET_SYNCS_ENABLED);
        let p = make_props(&[
            (EMIT_OFFSET_SYNCS_ENABLED, "false"),
            ("offset-syncs-source-producer.acks", "1"),
        ]);
        assert_eq!(MirrorSourceConfig::validate_props(&p).len(), 1);
        let p = make_props(&[(EMIT_OFFSET_SYNCS_ENABLED, "false")]);
        assert!(MirrorSourceConfig::validate_props(&p).is_empty());
        assert!(
            !MirrorSourceConfig::new(&p)
                .unwrap()
                .emit_offset_syncs_enabled
        );
    }

    #[test]
    fn defaults() {
        // §2.8–§2.12, §13 items 2 and 3
        let s = MirrorSourceConfig::new(&make_props(&[])).unwrap();
        assert!(s.common.enabled);
        assert_eq!(s.common.tasks_max, 1);
        assert_eq!(s.common.admin_timeout, Duration::from_secs(60));
        assert_eq!(s.common.task_index, None);
        assert_eq!(
            s.common.forwarding_admin_class,
            FORWARDING_ADMIN_CLASS_DEFAULT
        );
        assert_eq!(s.replication_factor, 2);
        assert_eq!(s.offset_syncs_topic_replication_factor, 3);
        assert_eq!(s.offset_lag_max, 100);
        assert_eq!(s.consumer_poll_timeout, Duration::from_millis(1000));
        assert_eq!(s.refresh_topics_interval, Some(Duration::from_secs(600)));
        assert_eq!(
            s.sync_topic_configs_interval,
            Some(Duration::from_secs(600))
        );
        assert_eq!(s.sync_topic_acls_interval, Some(Duration::from_secs(600)));
        assert!(s.heartbeats_replication_enabled);
        assert!(s.emit_offset_syncs_enabled);
        assert_eq!(s.task_assigned_partitions, None);
        assert!(s.topic_filter.should_replicate_topic("orders"));
        assert!(!s.topic_filter.should_replicate_topic("__consumer_offsets"));
        assert!(!s
            .config_property_filter
            .should_replicate_config_property("min.insync.replicas"));

        let c = MirrorCheckpointConfig::new(&make_props(&[])).unwrap();
        assert_eq!(c.emit_checkpoints_interval, Some(Duration::from_secs(60)));
        assert_eq!(
            c.sync_group_offsets_interval, None,
            "sync.group.offsets is off by default"
        );
        assert_eq!(c.refresh_groups_interval, Some(Duration::from_secs(600)));
        assert_eq!(c.checkpoints_topic_replication_factor, 3);
        assert_eq!(c.consumer_poll_timeout, Duration::from_millis(1000));
        assert_eq!(c.offset_syncs_location, OffsetSyncsLocation::Source);
        assert!(c.group_filter.should_replicate_group("app"));
        assert!(!c.group_filter.should_replicate_group("console-consumer-1"));

        let h = MirrorHeartbeatConfig::new(&make_props(&[])).unwrap();
        assert_eq!(h.emit_heartbeats_interval, Some(Duration::from_secs(1)));
        assert_eq!(h.heartbeats_topic_replication_factor, 3);
    }

    #[test]
    fn overrides_are_parsed() {
        let s = MirrorSourceConfig::new(&make_props(&[
            (TASKS_MAX, " 4 "),
            (REPLICATION_FACTOR, "-1"),
            (OFFSET_LAG_MAX, "0"),
            (ADMIN_TIMEOUT_MS, "1500"),
            (CONSUMER_POLL_TIMEOUT_MS, "250"),
            (REFRESH_TOPICS_INTERVAL_SECONDS, "30"),
            (HEARTBEATS_REPLICATION_ENABLED, "FALSE"),
        ]))
        .unwrap();
        assert_eq!(s.common.tasks_max, 4);
        assert_eq!(s.replication_factor, -1);
        assert_eq!(s.offset_lag_max, 0);
        assert_eq!(s.common.admin_timeout, Duration::from_millis(1500));
        assert_eq!(s.consumer_poll_timeout, Duration::from_millis(250));
        assert_eq!(s.refresh_topics_interval, Some(Duration::from_secs(30)));
        assert!(!s.heartbeats_replication_enabled);
    }

    #[test]
    fn intervals_can_be_disabled() {
        // §2.9: `x.enabled=false` disables; a negative interval also disables.
        let s = MirrorSourceConfig::new(&make_props(&[
            (REFRESH_TOPICS_ENABLED, "false"),
            (SYNC_TOPIC_CONFIGS_INTERVAL_SECONDS, "-1"),
            (SYNC_TOPIC_ACLS_INTERVAL_SECONDS, "0"),
        ]))
        .unwrap();
        assert_eq!(s.refresh_topics_interval, None);
        assert_eq!(s.sync_topic_configs_interval, None);
        assert_eq!(s.sync_topic_acls_interval, Some(Duration::ZERO));

        let c = MirrorCheckpointConfig::new(&make_props(&[
            (EMIT_CHECKPOINTS_INTERVAL_SECONDS, "-5"),
            (SYNC_GROUP_OFFSETS_ENABLED, "true"),
            (REFRESH_GROUPS_ENABLED, "false"),
        ]))
        .unwrap();
        assert_eq!(c.emit_checkpoints_interval, None);
        assert_eq!(c.sync_group_offsets_interval, Some(Duration::from_secs(60)));
        assert_eq!(c.refresh_groups_interval, None);
        // A negative emission interval means no checkpoint tasks, as in MM2.
        assert!(c.task_configs(&["g".to_string()]).is_empty());

        let h =
            MirrorHeartbeatConfig::new(&make_props(&[(EMIT_HEARTBEATS_INTERVAL_SECONDS, "-1")]))
                .unwrap();
        assert_eq!(h.emit_heartbeats_interval, None);
        assert!(h.task_configs().is_empty());
    }

    #[test]
    fn bad_values_name_their_key() {
        for (key, value) in [
            (TASKS_MAX, "0"),
            (TASKS_MAX, "x"),
            (ENABLED, "yes"),
            (REPLICATION_FACTOR, "two"),
            (OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR, "70000"),
            (REFRESH_TOPICS_ENABLED, "on"),
            (ADMIN_TIMEOUT_MS, "1.5"),
        ] {
            let props = make_props(&[(key, value)]);
            let err = MirrorSourceConfig::new(&props).unwrap_err().to_string();
            assert!(err.contains(key), "{key}={value}: {err}");
            let issues = MirrorSourceConfig::validate_props(&props);
            assert_eq!(issues.len(), 1, "{key}={value}: {issues:?}");
            assert_eq!(issues[0].0, key);
        }
        let props = make_props(&[(CHECKPOINTS_TOPIC_REPLICATION_FACTOR, "x")]);
        assert!(MirrorCheckpointConfig::new(&props).is_err());
        assert_eq!(MirrorCheckpointConfig::validate_props(&props).len(), 1);
        let props = make_props(&[
            (REPLICATION_POLICY_SEPARATOR, "_"),
            (INTERNAL_TOPIC_SEPARATOR_ENABLED, "maybe"),
        ]);
        assert!(MirrorSourceConfig::new(&props).is_err());
        assert_eq!(MirrorSourceConfig::validate_props(&props).len(), 1);
        let props = make_props(&[(HEARTBEATS_TOPIC_REPLICATION_FACTOR, "x")]);
        assert!(MirrorHeartbeatConfig::new(&props).is_err());
        assert_eq!(MirrorHeartbeatConfig::validate_props(&props).len(), 1);
    }

    #[test]
    fn client_config_names() {
        for key in [
            "bootstrap.servers",
            "security.protocol",
            "ssl.truststore.location",
            "ssl.key.password",
            "ssl.endpoint.identification.algorithm",
            "sasl.jaas.config",
            "sasl.mechanism",
            "sasl.oauthbearer.token.endpoint.url",
        ] {
            assert!(is_client_config_name(key), "{key}");
        }
        for key in [
            "client.id",
            "metric.reporters",
            "alias",
            "ssl.client.auth",
            "acks",
        ] {
            assert!(!is_client_config_name(key), "{key}");
        }
    }
}
