//! `MirrorMakerConfig`: from one `mm2.properties` to herder pairs, worker configs and the base
//! config of each connector (mm2-compat §1.2, §2.1–§2.5, §10).
//!
//! An MM2 file mixes three namespaces: top-level keys (`topics=...`), cluster-scoped keys
//! (`A.bootstrap.servers`) and flow-scoped keys (`A->B.enabled`). Java MM2 merges them with a
//! handful of `putAll`/`putIfAbsent` rules whose order decides which value wins. Those rules are
//! reproduced here step by step, because a user moving from Java MM2 must get exactly the same
//! effective settings, including the surprising outcomes:
//!
//! * pairs are computed with `Boolean.parseBoolean`, so `A->B.enabled = true␠` is **false**
//!   (§13 item 12), and heartbeats (on by default) create a pair for every ordered couple;
//! * an unknown top-level key never reaches a connector, but a known one (even `enabled=true`)
//!   reaches **every** pair's connectors (§13 item 31);
//! * worker configs resolve `${provider:path:key}` placeholders; connector configs do not
//!   (§12.1 #15), so secrets are not written to the config topic in clear text.
//!
//! Everything here is pure: no I/O except reading provider files during resolution.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use super::error::Origin;
use super::providers::{ConfigProviders, CONFIG_PROVIDERS_CONFIG};
use super::values::{java_parse_boolean, parse_bool, parse_list};
use super::{ConfigError, Properties, Props};

pub const CLUSTERS_CONFIG: &str = "clusters";
pub const ENABLE_INTERNAL_REST_CONFIG: &str = "dedicated.mode.enable.internal.rest";
pub const SECURITY_PROTOCOL_CONFIG: &str = "security.protocol";
pub const EMIT_HEARTBEATS_ENABLED: &str = "emit.heartbeats.enabled";
pub const ENABLED: &str = "enabled";

/// Kafka's `SecurityProtocol` names, in enum order (used in the error message).
const SECURITY_PROTOCOLS: [&str; 4] = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

const BYTE_ARRAY_CONVERTER: &str = "org.apache.kafka.connect.converters.ByteArrayConverter";

/// Top-level key prefixes MM2 copies into every worker config (§2.4 step 2).
const WORKER_TOP_LEVEL_PREFIXES: [&str; 9] = [
    "offset.storage",
    "config.storage",
    "status.storage",
    "key.converter",
    "value.converter",
    "header.converter",
    "task",
    "worker",
    "replication.policy",
];

/// `MirrorClientConfig.CLIENT_CONFIG_DEF` (Kafka 4.0): `bootstrap.servers`,
/// `security.protocol`, and Kafka's client SSL (`SslConfigs.addClientSslSupport`) and SASL
/// (`SaslConfigs.addClientSaslSupport`) definitions. These are the keys a cluster's
/// `producer.`, `consumer.` and `admin.` settings inherit (§2.3).
pub const CLIENT_CONFIG_NAMES: &[&str] = &[
    "bootstrap.servers",
    "security.protocol",
    // SslConfigs.addClientSslSupport
    "ssl.protocol",
    "ssl.provider",
    "ssl.cipher.suites",
    "ssl.enabled.protocols",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
    // SaslConfigs.addClientSaslSupport
    "sasl.kerberos.service.name",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.client.callback.handler.class",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms",
    "sasl.login.retry.backoff.max.ms",
    "sasl.login.retry.backoff.ms",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.header.urlencode",
];

/// Is `key` one of [`CLIENT_CONFIG_NAMES`]?
pub fn is_client_config_name(key: &str) -> bool {
    CLIENT_CONFIG_NAMES.contains(&key)
}

/// Keys defined by the connector ConfigDefs themselves (Kafka 4.0), without the client
/// SSL/SASL keys, which [`connector_config_names`] appends.
const CONNECTOR_OWN_CONFIG_NAMES: &[&str] = &[
    // Connect's ConnectorConfig.configDef()
    "name",
    "connector.class",
    "tasks.max",
    "tasks.max.enforce",
    "key.converter",
    "value.converter",
    "header.converter",
    "transforms",
    "predicates",
    "config.action.reload",
    "errors.retry.timeout",
    "errors.retry.delay.max.ms",
    "errors.tolerance",
    "errors.log.enable",
    "errors.log.include.messages",
    // MirrorConnectorConfig.BASE_CONNECTOR_CONFIG_DEF (§2.8)
    "enabled",
    "source.cluster.alias",
    "target.cluster.alias",
    "admin.timeout.ms",
    "replication.policy.class",
    "replication.policy.separator",
    "replication.policy.internal.topic.separator.enabled",
    "forwarding.admin.class",
    "metric.reporters",
    "security.protocol",
    // MirrorSourceConfig (§2.9)
    "topics",
    "topics.exclude",
    "config.properties.exclude",
    "topic.filter.class",
    "config.property.filter.class",
    "consumer.poll.timeout.ms",
    "refresh.topics.enabled",
    "refresh.topics.interval.seconds",
    "sync.topic.configs.enabled",
    "sync.topic.configs.interval.seconds",
    "sync.topic.acls.enabled",
    "sync.topic.acls.interval.seconds",
    "replication.factor",
    "offset-syncs.topic.replication.factor",
    "offset.lag.max",
    "offset-syncs.topic.location",
    "heartbeats.replication.enabled",
    "emit.offset-syncs.enabled",
    // MirrorCheckpointConfig (§2.10)
    "groups",
    "groups.exclude",
    "group.filter.class",
    "refresh.groups.enabled",
    "refresh.groups.interval.seconds",
    "emit.checkpoints.enabled",
    "emit.checkpoints.interval.seconds",
    "sync.group.offsets.enabled",
    "sync.group.offsets.interval.seconds",
    "checkpoints.topic.replication.factor",
    // MirrorHeartbeatConfig (§2.11)
    "emit.heartbeats.enabled",
    "emit.heartbeats.interval.seconds",
    "heartbeats.topic.replication.factor",
];

/// MM2's `allConfigNames()`: the union of the source, checkpoint and heartbeat connector
/// ConfigDefs (§2.5 step 1). Task-only keys (`task.assigned.*`, `task.index`) are not part of
/// it, nor are `exactly.once.support`, `transaction.boundary` and `use.defaults.from`.
pub fn connector_config_names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<&'static str> = CONNECTOR_OWN_CONFIG_NAMES.to_vec();
        for name in CLIENT_CONFIG_NAMES {
            // `bootstrap.servers` is a client key but not a connector key.
            if *name != "bootstrap.servers" && !names.contains(name) {
                names.push(name);
            }
        }
        names
    })
}

/// A directed replication flow, written `source->target` as in MM2.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceAndTarget {
    pub source: String,
    pub target: String,
}

impl SourceAndTarget {
    pub fn new(source: impl Into<String>, target: impl Into<String>) -> Self {
        SourceAndTarget {
            source: source.into(),
            target: target.into(),
        }
    }
}

impl fmt::Display for SourceAndTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}->{}", self.source, self.target)
    }
}

impl FromStr for SourceAndTarget {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once("->") {
            Some((source, target)) if !source.is_empty() && !target.is_empty() => {
                Ok(SourceAndTarget::new(source, target))
            }
            _ => Err(ConfigError::invalid(
                "flow",
                s,
                "expected <source>-><target>, for example A->B",
            )),
        }
    }
}

/// The three connectors MM2 runs in every herder pair (§1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectorKind {
    Source,
    Checkpoint,
    Heartbeat,
}

impl ConnectorKind {
    pub const ALL: [ConnectorKind; 3] = [
        ConnectorKind::Source,
        ConnectorKind::Checkpoint,
        ConnectorKind::Heartbeat,
    ];

    /// The connector name MM2 uses (`Class.getSimpleName()`).
    pub const fn simple_name(self) -> &'static str {
        match self {
            ConnectorKind::Source => "MirrorSourceConnector",
            ConnectorKind::Checkpoint => "MirrorCheckpointConnector",
            ConnectorKind::Heartbeat => "MirrorHeartbeatConnector",
        }
    }

    /// The `connector.class` MM2 writes (`Class.getName()`).
    pub fn class_name(self) -> &'static str {
        match self {
            ConnectorKind::Source => "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            ConnectorKind::Checkpoint => {
                "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
            }
            ConnectorKind::Heartbeat => "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
        }
    }

    /// The connector whose `connector.class` is `class`.
    pub fn from_class_name(class: &str) -> Option<ConnectorKind> {
        ConnectorKind::ALL
            .into_iter()
            .find(|k| k.class_name() == class)
    }

    /// The `task.class` Connect's `Worker` adds to every task config it stores
    /// (`Connector.taskClass().getName()`): a Java worker reading the config topic starts the
    /// task from it, and fails the task without it.
    pub fn task_class_name(self) -> &'static str {
        match self {
            ConnectorKind::Source => "org.apache.kafka.connect.mirror.MirrorSourceTask",
            ConnectorKind::Checkpoint => "org.apache.kafka.connect.mirror.MirrorCheckpointTask",
            ConnectorKind::Heartbeat => "org.apache.kafka.connect.mirror.MirrorHeartbeatTask",
        }
    }
}

impl fmt::Display for ConnectorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.simple_name())
    }
}

/// The whole MM2 configuration: raw properties plus MM2's derivation rules.
#[derive(Debug)]
pub struct MirrorMakerConfig {
    raw: Properties,
    clusters: Vec<String>,
    providers: ConfigProviders,
}

impl MirrorMakerConfig {
    /// Validate like Java's `MirrorMakerConfig` constructor: `clusters` is required,
    /// `security.protocol` must name a protocol, booleans must parse, and the declared config
    /// providers must be known.
    pub fn new(raw: Properties) -> Result<Self, ConfigError> {
        let clusters_value = raw
            .get(CLUSTERS_CONFIG)
            .ok_or_else(|| ConfigError::Missing {
                key: CLUSTERS_CONFIG.to_string(),
            })?;
        // A LIST turned into a set by MM2; we keep first-seen order for deterministic output.
        let mut seen = HashSet::new();
        let clusters: Vec<String> = parse_list(clusters_value)
            .into_iter()
            .filter(|alias| seen.insert(alias.clone()))
            .collect();

        if let Some(v) = raw.get(ENABLE_INTERNAL_REST_CONFIG) {
            parse_bool(ENABLE_INTERNAL_REST_CONFIG, v)
                .map_err(|e| e.with_origin(raw.origin(ENABLE_INTERNAL_REST_CONFIG)))?;
        }
        for (key, value) in raw.map() {
            if is_security_protocol_key(key) {
                validate_security_protocol(key, value)
                    .map_err(|e| e.with_origin(raw.origin(key)))?;
            }
        }
        let providers = ConfigProviders::from_props(raw.map()).map_err(|e| {
            let origin = match &e {
                ConfigError::InvalidValue { key, .. } => raw.origin(key),
                _ => None,
            };
            e.with_origin(origin)
        })?;
        Ok(MirrorMakerConfig {
            raw,
            clusters,
            providers,
        })
    }

    /// Read `mm2.properties` (Java `.properties` rules) and validate it.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        MirrorMakerConfig::new(Properties::load(path)?)
    }

    /// [`load`](Self::load), then fetch every secret a Secrets Manager placeholder names
    /// (see [`super::secrets_manager`]): what every command runs before resolving anything.
    pub async fn load_fetching_secrets(path: &Path) -> Result<Self, ConfigError> {
        let mm = Self::load(path)?;
        mm.providers.fetch_secrets(mm.raw.map()).await?;
        Ok(mm)
    }

    pub fn raw(&self) -> &Properties {
        &self.raw
    }

    /// The aliases of `clusters`, duplicates removed, in first-seen order.
    pub fn clusters(&self) -> &[String] {
        &self.clusters
    }

    /// Where a raw key was defined, for error messages.
    pub fn origin(&self, key: &str) -> Option<Origin> {
        self.raw.origin(key)
    }

    /// MM2's `clusterPairs()` (§1.2 steps 1–3): every ordered pair of distinct aliases whose
    /// flow is enabled or whose heartbeats are on. Values are read with Java's
    /// `Boolean.parseBoolean`: untrimmed, only a case-insensitive `true` is true.
    pub fn cluster_pairs(&self) -> Vec<SourceAndTarget> {
        let global_heartbeats = match self.raw.get(EMIT_HEARTBEATS_ENABLED) {
            Some(v) => java_parse_boolean(Some(v)),
            None => true,
        };
        let mut pairs = Vec::new();
        for source in &self.clusters {
            for target in &self.clusters {
                if source == target {
                    continue;
                }
                let prefix = format!("{source}->{target}.");
                let enabled = java_parse_boolean(self.raw.get(&format!("{prefix}{ENABLED}")));
                let heartbeats = match self.raw.get(&format!("{prefix}{EMIT_HEARTBEATS_ENABLED}")) {
                    Some(v) => java_parse_boolean(Some(v)),
                    None => global_heartbeats,
                };
                if enabled || heartbeats {
                    pairs.push(SourceAndTarget::new(source.clone(), target.clone()));
                }
            }
        }
        pairs
    }

    /// The pairs this node runs (§1.2 steps 4–5): those whose **target** is in `targets`
    /// (`--clusters`), or all pairs when `targets` is empty.
    pub fn herder_pairs(&self, targets: &[String]) -> Result<Vec<SourceAndTarget>, ConfigError> {
        for alias in targets {
            if !self.clusters.contains(alias) {
                return Err(ConfigError::UnknownFlow(format!(
                    "cluster alias '{alias}' given in --clusters is not in clusters ({})",
                    self.clusters.join(", ")
                )));
            }
        }
        let pairs: Vec<SourceAndTarget> = self
            .cluster_pairs()
            .into_iter()
            .filter(|p| targets.is_empty() || targets.contains(&p.target))
            .collect();
        if pairs.is_empty() {
            return Err(ConfigError::NoFlows);
        }
        Ok(pairs)
    }

    /// MM2's `clusterProps(alias)` (§2.3), placeholders unresolved.
    pub fn cluster_props(&self, alias: &str) -> Props {
        // 1. `<alias>.k`, prefix stripped (plain string prefix, so `A` also sees `A.B.x`).
        let mut props = with_prefix_stripped(self.raw.map(), &format!("{alias}."));
        // 2. The cluster's own client settings are inherited by its producer/consumer/admin.
        for &k in CLIENT_CONFIG_NAMES {
            if let Some(v) = props.get(k).cloned() {
                for role in ["producer", "consumer", "admin"] {
                    props
                        .entry(format!("{role}.{k}"))
                        .or_insert_with(|| v.clone());
                }
            }
        }
        // 3. Top-level client settings fill whatever is still missing.
        for &k in CLIENT_CONFIG_NAMES {
            if let Some(v) = self.raw.get(k) {
                for role in ["producer", "consumer", "admin"] {
                    props
                        .entry(format!("{role}.{k}"))
                        .or_insert_with(|| v.to_string());
                }
                props.entry(k.to_string()).or_insert_with(|| v.to_string());
            }
        }
        props
    }

    /// MM2's `workerConfig(pair)` (§2.4): the Connect worker of a pair talks to the target.
    pub fn worker_config(&self, pair: &SourceAndTarget) -> Result<Props, ConfigError> {
        // 1. Target cluster props.
        let mut props = self.cluster_props(&pair.target);
        // 2. Selected top-level keys, prefix kept. `task` also matches `tasks.max`, as in Java.
        for prefix in WORKER_TOP_LEVEL_PREFIXES {
            props.extend(with_prefix(self.raw.map(), prefix));
        }
        // 3. Resolve placeholders now (the worker does not), then add the provider keys.
        let mut props = self.providers.resolve_all(&props)?;
        props.extend(with_prefix(self.raw.map(), CONFIG_PROVIDERS_CONFIG));
        // 4. Dedicated-mode defaults (§1.4).
        let source = &pair.source;
        let defaults = [
            ("client.id", pair.to_string()),
            ("group.id", format!("{source}-mm2")),
            (
                "offset.storage.topic",
                format!("mm2-offsets.{source}.internal"),
            ),
            (
                "status.storage.topic",
                format!("mm2-status.{source}.internal"),
            ),
            (
                "config.storage.topic",
                format!("mm2-configs.{source}.internal"),
            ),
            ("key.converter", BYTE_ARRAY_CONVERTER.to_string()),
            ("value.converter", BYTE_ARRAY_CONVERTER.to_string()),
            ("header.converter", BYTE_ARRAY_CONVERTER.to_string()),
        ];
        for (k, v) in defaults {
            props.entry(k.to_string()).or_insert(v);
        }
        Ok(props)
    }

    /// MM2's `connectorBaseConfig(pair, connectorClass)` (§2.5, steps 1–8). Placeholders are
    /// **not** resolved here (§12.1 #15).
    pub fn connector_base_config(&self, pair: &SourceAndTarget, kind: ConnectorKind) -> Props {
        let raw = self.raw.map();
        // 1. Known connector keys from the top level; unknown keys are dropped.
        let names = connector_config_names();
        let mut props: Props = raw
            .iter()
            .filter(|(k, _)| names.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // 2. Provider and replication policy keys.
        props.extend(with_prefix(raw, CONFIG_PROVIDERS_CONFIG));
        props.extend(with_prefix(raw, "replication.policy"));
        // 3.–5. Cluster props of both sides.
        for (alias, cluster_prefix, client_prefix) in [
            (&pair.source, "source.cluster.", "source."),
            (&pair.target, "target.cluster.", "target."),
        ] {
            for (k, v) in self.cluster_props(alias) {
                let prefix = if is_client_prefixed(&k) {
                    client_prefix
                } else {
                    cluster_prefix
                };
                props.insert(format!("{prefix}{k}"), v);
            }
        }
        // 6. Identity, unless already set.
        for (k, v) in [
            ("name", kind.simple_name()),
            ("connector.class", kind.class_name()),
            ("source.cluster.alias", pair.source.as_str()),
            ("target.cluster.alias", pair.target.as_str()),
        ] {
            props.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        // 7. Flow-level keys win over everything, unfiltered.
        props.extend(with_prefix_stripped(raw, &format!("{pair}.")));
        // 8. Disabled unless the flow says otherwise.
        props
            .entry(ENABLED.to_string())
            .or_insert_with(|| "false".to_string());
        props
    }

    /// MM2's `clientConfig(alias)` (§10): all top-level keys, then the cluster props of
    /// `alias`, with placeholders resolved. This is what `MirrorClient` is built from.
    pub fn client_config(&self, alias: &str) -> Result<Props, ConfigError> {
        let mut props = self.raw.map().clone();
        props.extend(self.cluster_props(alias));
        self.providers.resolve_all(&props)
    }
}

/// `security.protocol` at any scope: top level, `A.`, `A.producer.`, `A->B.`, ...
fn is_security_protocol_key(key: &str) -> bool {
    key == SECURITY_PROTOCOL_CONFIG
        || key
            .strip_suffix(SECURITY_PROTOCOL_CONFIG)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// ConfigDef STRING with `CaseInsensitiveValidString`: trimmed, case-insensitive. Values that
/// hold a provider placeholder are checked by the client once resolved.
fn validate_security_protocol(key: &str, value: &str) -> Result<(), ConfigError> {
    if value.contains("${") {
        return Ok(());
    }
    let v = value.trim();
    if SECURITY_PROTOCOLS.iter().any(|p| p.eq_ignore_ascii_case(v)) {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            key,
            value,
            format!(
                "String must be one of (case insensitive): {}",
                SECURITY_PROTOCOLS.join(", ")
            ),
        ))
    }
}

/// Java's `key.matches("(^consumer.*|^producer.*|^admin.*)")`. No dot is needed after the
/// word, and `.` does not match line terminators, so a key with one is not a client key.
fn is_client_prefixed(key: &str) -> bool {
    ["consumer", "producer", "admin"].iter().any(|word| {
        key.strip_prefix(word).is_some_and(|rest| {
            !rest
                .chars()
                .any(|c| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'))
        })
    })
}

/// Kafka's `Utils.entriesWithPrefix(map, prefix, strip=false)`.
fn with_prefix(map: &Props, prefix: &str) -> Props {
    map.iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Kafka's `Utils.entriesWithPrefix(map, prefix)` (prefix stripped).
fn with_prefix_stripped(map: &Props, prefix: &str) -> Props {
    map.iter()
        .filter_map(|(k, v)| k.strip_prefix(prefix).map(|s| (s.to_string(), v.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::providers::FILE_CONFIG_PROVIDER;

    fn config(pairs: &[(&str, &str)]) -> MirrorMakerConfig {
        MirrorMakerConfig::new(Properties::from_pairs(pairs.iter().copied())).unwrap()
    }

    fn pair(s: &str, t: &str) -> SourceAndTarget {
        SourceAndTarget::new(s, t)
    }

    /// A temp file holding `password=secret2`, standing in for Java's `FakeConfigProvider`.
    fn fake_secret_file() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "password=secret2\n").unwrap();
        let placeholder = format!("${{fake:{}:password}}", path.display());
        (dir, placeholder)
    }

    /// `MirrorClientConfig.{admin,producer}Config` as §10 describes it: client config names
    /// from the plain props, overridden by the `<role>.`-prefixed client config names.
    fn client_role_config(props: &Props, role: &str) -> Props {
        let mut out: Props = props
            .iter()
            .filter(|(k, _)| is_client_config_name(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.extend(
            with_prefix_stripped(props, &format!("{role}."))
                .into_iter()
                .filter(|(k, _)| is_client_config_name(k)),
        );
        out
    }

    #[test]
    fn cluster_configs_reach_connector_config() {
        // §12.1 #1
        let c = config(&[
            ("clusters", "a, b"),
            ("a.bootstrap.servers", "servers-one"),
            ("b.bootstrap.servers", "servers-two"),
            ("security.protocol", "SSL"),
        ]);
        let cc = c.connector_base_config(&pair("a", "b"), ConnectorKind::Source);
        assert_eq!(cc["source.cluster.bootstrap.servers"], "servers-one");
        assert_eq!(cc["target.cluster.bootstrap.servers"], "servers-two");
        assert_eq!(cc["security.protocol"], "SSL");
        // Inherited into both sides' client prefixes too.
        assert_eq!(cc["source.producer.security.protocol"], "SSL");
        assert_eq!(cc["target.admin.bootstrap.servers"], "servers-two");
    }

    #[test]
    fn flow_level_tasks_max() {
        // §12.1 #2
        let c = config(&[("clusters", "a, b"), ("a->b.tasks.max", "123")]);
        let cc = c.connector_base_config(&pair("a", "b"), ConnectorKind::Source);
        assert_eq!(cc["tasks.max"], "123");
        let reverse = c.connector_base_config(&pair("b", "a"), ConnectorKind::Source);
        assert!(!reverse.contains_key("tasks.max"));
    }

    #[test]
    fn client_config_for_cluster() {
        // §12.1 #3
        let (_dir, secret) = fake_secret_file();
        let c = config(&[
            ("clusters", "a, b"),
            ("config.providers", "fake"),
            ("config.providers.fake.class", FILE_CONFIG_PROVIDER),
            ("replication.policy.separator", "__"),
            ("ssl.key.password", &secret),
            ("security.protocol", "SSL"),
            ("a.security.protocol", "PLAINTEXT"),
            ("a.producer.security.protocol", "SSL"),
            ("a.bootstrap.servers", "one:9092, two:9092"),
            ("metrics.reporter", "FakeMetricsReporter"),
            ("a.xxx", "yyy"),
            ("xxx", "zzz"),
            ("b.forwarding.admin.class", "FakeForwardingAdmin"),
        ]);
        let a = c.client_config("a").unwrap();
        assert_eq!(a["replication.policy.separator"], "__");
        let admin = client_role_config(&a, "admin");
        assert_eq!(admin["bootstrap.servers"], "one:9092, two:9092");
        assert_eq!(admin["security.protocol"], "PLAINTEXT");
        let producer = client_role_config(&a, "producer");
        assert_eq!(producer["security.protocol"], "SSL");
        assert_eq!(admin["ssl.key.password"], "secret2");
        assert_eq!(a["ssl.key.password"], "secret2");
        for role in [&admin, &producer] {
            assert!(!role.contains_key("xxx"));
            assert!(!role.contains_key("metrics.reporter"));
        }
        assert!(!a.contains_key("forwarding.admin.class"));
        let b = c.client_config("b").unwrap();
        assert_eq!(b["forwarding.admin.class"], "FakeForwardingAdmin");
    }

    #[test]
    fn top_level_connector_keys_reach_connectors_unknown_do_not() {
        // §12.1 #4
        let c = config(&[
            ("clusters", "source, target"),
            ("tasks.max", "100"),
            ("topics", "topic-1"),
            ("groups", "group-2"),
            ("replication.policy.separator", "__"),
            ("config.properties.exclude", "property-3"),
            ("metric.reporters", "FakeMetricsReporter"),
            ("topic.filter.class", "FakeTopicFilter"),
            ("xxx", "yyy"),
        ]);
        for kind in ConnectorKind::ALL {
            let cc = c.connector_base_config(&pair("source", "target"), kind);
            assert_eq!(cc["tasks.max"], "100");
            assert_eq!(cc["topics"], "topic-1");
            assert_eq!(cc["groups"], "group-2");
            assert_eq!(cc["replication.policy.separator"], "__");
            assert_eq!(cc["config.properties.exclude"], "property-3");
            assert_eq!(cc["metric.reporters"], "FakeMetricsReporter");
            assert_eq!(cc["topic.filter.class"], "FakeTopicFilter");
            assert!(!cc.contains_key("xxx"));
            assert_eq!(cc["name"], kind.simple_name());
            assert_eq!(cc["connector.class"], kind.class_name());
        }
        // Unknown keys are still in the raw properties.
        assert_eq!(c.raw().get("xxx"), Some("yyy"));
    }

    #[test]
    fn task_classes_pair_with_connector_classes() {
        for kind in ConnectorKind::ALL {
            assert_eq!(
                ConnectorKind::from_class_name(kind.class_name()),
                Some(kind)
            );
            // Java's naming: the connector's class with Task for Connector.
            assert_eq!(
                kind.task_class_name(),
                kind.class_name().replace("Connector", "Task")
            );
        }
        assert_eq!(
            ConnectorKind::from_class_name("MirrorSourceConnector"),
            None
        );
    }

    #[test]
    fn flow_level_topic_lists() {
        // §12.1 #5
        let c = config(&[
            ("clusters", "source, target"),
            ("source->target.topics", "topic1, topic2"),
            ("source->target.topics.exclude", "topic3"),
        ]);
        let cc = c.connector_base_config(&pair("source", "target"), ConnectorKind::Source);
        assert_eq!(parse_list(&cc["topics"]), vec!["topic1", "topic2"]);
        assert_eq!(parse_list(&cc["topics.exclude"]), vec!["topic3"]);
    }

    #[test]
    fn worker_config_top_level_storage_keys() {
        // §12.1 #6
        let c = config(&[
            ("clusters", "a, b"),
            ("offset.storage.replication.factor", "123"),
            ("b.status.storage.replication.factor", "456"),
        ]);
        let w = c.worker_config(&pair("b", "a")).unwrap();
        assert_eq!(w["client.id"], "b->a");
        assert_eq!(w["offset.storage.replication.factor"], "123");
        // b's cluster-scoped worker keys apply only to pairs targeting b.
        assert!(!w.contains_key("status.storage.replication.factor"));
    }

    #[test]
    fn worker_config_inheritance_and_resolution() {
        // §12.1 #7. Java's test uses `b.producer.security.protocol=SASL`, which is not a
        // security protocol; we validate every scope up front (see `invalid_cluster_scoped...`),
        // so SASL_SSL stands in for it here.
        let (_dir, secret) = fake_secret_file();
        let c = config(&[
            ("clusters", "a, b"),
            ("config.providers", "fake"),
            ("config.providers.fake.class", FILE_CONFIG_PROVIDER),
            ("replication.policy.separator", "__"),
            ("offset.storage.replication.factor", "123"),
            ("b.status.storage.replication.factor", "456"),
            ("b.producer.client.id", "client-one"),
            ("b.security.protocol", "PLAINTEXT"),
            ("b.producer.security.protocol", "SASL_SSL"),
            ("ssl.truststore.password", "secret1"),
            ("ssl.key.password", &secret),
            ("b.xxx", "yyy"),
        ]);
        let w = c.worker_config(&pair("a", "b")).unwrap();
        assert_eq!(w["client.id"], "a->b");
        assert_eq!(w["status.storage.replication.factor"], "456");
        assert_eq!(w["offset.storage.replication.factor"], "123");
        assert_eq!(w["producer.client.id"], "client-one");
        assert_eq!(w["producer.security.protocol"], "SASL_SSL");
        assert_eq!(w["consumer.security.protocol"], "PLAINTEXT");
        assert_eq!(w["security.protocol"], "PLAINTEXT");
        assert_eq!(w["ssl.truststore.password"], "secret1");
        assert_eq!(w["producer.ssl.truststore.password"], "secret1");
        assert_eq!(w["ssl.key.password"], "secret2");
        assert_eq!(w["producer.ssl.key.password"], "secret2");
        assert_eq!(w["replication.policy.separator"], "__");
        assert_eq!(w["config.providers"], "fake");
        assert_eq!(w["config.providers.fake.class"], FILE_CONFIG_PROVIDER);
        // Cluster-scoped unknown keys go to the worker (it talks to b).
        assert_eq!(w["xxx"], "yyy");
        // §1.4 defaults.
        assert_eq!(w["group.id"], "a-mm2");
        assert_eq!(w["offset.storage.topic"], "mm2-offsets.a.internal");
        assert_eq!(w["status.storage.topic"], "mm2-status.a.internal");
        assert_eq!(w["config.storage.topic"], "mm2-configs.a.internal");
        for k in ["key.converter", "value.converter", "header.converter"] {
            assert_eq!(w[k], BYTE_ARRAY_CONVERTER);
        }
    }

    #[test]
    fn worker_defaults_can_be_overridden() {
        let c = config(&[
            ("clusters", "a, b"),
            ("b.group.id", "custom-group"),
            ("key.converter", "org.example.Conv"),
            ("tasks.max", "4"),
        ]);
        let w = c.worker_config(&pair("a", "b")).unwrap();
        assert_eq!(w["group.id"], "custom-group");
        assert_eq!(w["key.converter"], "org.example.Conv");
        // Java's `task` prefix also copies `tasks.max` into the worker config.
        assert_eq!(w["tasks.max"], "4");
    }

    fn sorted(mut pairs: Vec<SourceAndTarget>) -> Vec<String> {
        pairs.sort();
        pairs.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn three_clusters_give_six_pairs() {
        // §12.1 #8
        let c = config(&[("clusters", "a, b, c")]);
        let pairs = c.cluster_pairs();
        assert_eq!(pairs.len(), 6);
        // Deterministic order: clusters order, source then target.
        let names: Vec<String> = pairs.iter().map(|p| p.to_string()).collect();
        assert_eq!(names, ["a->b", "a->c", "b->a", "b->c", "c->a", "c->b"]);
    }

    #[test]
    fn heartbeats_off_gives_no_pairs() {
        // §12.1 #9
        let c = config(&[
            ("clusters", "a, b, c"),
            ("emit.heartbeats.enabled", "false"),
        ]);
        assert!(c.cluster_pairs().is_empty());
        assert!(matches!(c.herder_pairs(&[]), Err(ConfigError::NoFlows)));
    }

    #[test]
    fn flow_heartbeats_off_removes_pairs() {
        // §12.1 #10
        let c = config(&[
            ("clusters", "a, b, c"),
            ("a->b.emit.heartbeats.enabled", "false"),
            ("a->c.emit.heartbeats.enabled", "false"),
        ]);
        assert_eq!(sorted(c.cluster_pairs()), ["b->a", "b->c", "c->a", "c->b"]);
    }

    #[test]
    fn enabled_flows_without_heartbeats() {
        // §12.1 #11
        let c = config(&[
            ("clusters", "a, b, c, d, e, f"),
            ("emit.heartbeats.enabled", "false"),
            ("a->b.enabled", "true"),
            ("a->c.enabled", "true"),
            ("a->d.enabled", "true"),
            ("a->e.enabled", "false"),
            ("a->f.enabled", "false"),
        ]);
        let pairs = sorted(c.cluster_pairs());
        assert_eq!(pairs, ["a->b", "a->c", "a->d"]);
        assert!(!pairs.contains(&"b->a".to_string()));
    }

    #[test]
    fn heartbeat_only_pair() {
        // §12.1 #12
        let c = config(&[
            ("clusters", "central, local_one, local_two, beats_emitter"),
            ("emit.heartbeats.enabled", "false"),
            ("central->local_one.enabled", "true"),
            ("central->local_two.enabled", "true"),
            ("beats_emitter->central.emit.heartbeats.enabled", "true"),
        ]);
        assert_eq!(
            sorted(c.cluster_pairs()),
            [
                "beats_emitter->central",
                "central->local_one",
                "central->local_two"
            ]
        );
    }

    #[test]
    fn invalid_security_protocol() {
        // §12.1 #13
        let raw = Properties::parse(
            "clusters=a, b\nsecurity.protocol=abc\n",
            Some(Path::new("mm2.properties")),
        )
        .unwrap();
        let err = MirrorMakerConfig::new(raw).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::InvalidValue { .. }));
        assert!(msg.contains("security.protocol"), "{msg}");
        assert!(msg.contains("mm2.properties:2"), "{msg}");
        let c = config(&[("clusters", "a, b"), ("security.protocol", "sasl_ssl")]);
        assert_eq!(c.raw().get("security.protocol"), Some("sasl_ssl"));
        let cc = c.connector_base_config(&pair("a", "b"), ConnectorKind::Source);
        assert_eq!(cc["security.protocol"], "sasl_ssl");
    }

    #[test]
    fn invalid_cluster_scoped_security_protocol() {
        for key in [
            "a.security.protocol",
            "a.producer.security.protocol",
            "a->b.consumer.security.protocol",
        ] {
            let err = MirrorMakerConfig::new(Properties::from_pairs([
                ("clusters", "a, b"),
                (key, "SASL"),
            ]))
            .unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
        // Trimmed and case-insensitive, like ConfigDef; placeholders are left to the client.
        config(&[("clusters", "a"), ("a.security.protocol", " Ssl ")]);
        config(&[("clusters", "a"), ("a.security.protocol", "${env:PROTO}")]);
        // A key that merely ends in the same letters is not a security protocol.
        config(&[("clusters", "a"), ("xsecurity.protocol", "nope")]);
    }

    #[test]
    fn connector_config_names_union() {
        // §12.1 #14
        let names = connector_config_names();
        for k in [
            "topics",
            "groups",
            "emit.heartbeats.enabled",
            "enabled",
            "tasks.max",
            "ssl.truststore.location",
            "sasl.jaas.config",
        ] {
            assert!(names.contains(&k), "{k}");
        }
        for k in [
            "exactly.once.support",
            "transaction.boundary",
            "use.defaults.from",
            "bootstrap.servers",
        ] {
            assert!(!names.contains(&k), "{k}");
        }
        let unique: HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn connector_config_keeps_placeholders() {
        // §12.1 #15
        let (_dir, secret) = fake_secret_file();
        let c = config(&[
            ("clusters", "a, b"),
            ("config.providers", "fake"),
            ("config.providers.fake.class", FILE_CONFIG_PROVIDER),
            ("ssl.key.password", &secret),
            ("b->a.topics", &secret),
        ]);
        let cc = c.connector_base_config(&pair("b", "a"), ConnectorKind::Source);
        assert_eq!(cc["ssl.key.password"], secret);
        assert_eq!(cc["topics"], secret);
        assert_eq!(cc["config.providers"], "fake");
        // The worker config of the same pair does resolve them.
        let w = c.worker_config(&pair("b", "a")).unwrap();
        assert_eq!(w["ssl.key.password"], "secret2");
    }

    #[test]
    fn herder_pairs_filter_by_target() {
        let c = config(&[("clusters", "a, b, c")]);
        assert_eq!(c.herder_pairs(&[]).unwrap().len(), 6);
        let only_b = c.herder_pairs(&["b".to_string()]).unwrap();
        assert_eq!(sorted(only_b), ["a->b", "c->b"]);
        let b_and_c = c.herder_pairs(&["b".to_string(), "c".to_string()]).unwrap();
        assert_eq!(b_and_c.len(), 4);
        let err = c.herder_pairs(&["z".to_string()]).unwrap_err();
        assert!(matches!(err, ConfigError::UnknownFlow(_)));
        assert!(err.to_string().contains('z'));
    }

    #[test]
    fn herder_pairs_none_left_for_target() {
        let c = config(&[
            ("clusters", "a, b, c"),
            ("emit.heartbeats.enabled", "false"),
            ("a->b.enabled", "true"),
        ]);
        assert!(matches!(
            c.herder_pairs(&["c".to_string()]),
            Err(ConfigError::NoFlows)
        ));
        assert_eq!(
            c.herder_pairs(&["b".to_string()]).unwrap(),
            [pair("a", "b")]
        );
    }

    #[test]
    fn trailing_space_enabled_does_not_count() {
        // §13 item 12: parsed from a file, the trailing space is kept and parseBoolean fails.
        let raw = Properties::parse(
            "clusters = A, B\nemit.heartbeats.enabled = false\nA->B.enabled = true \n",
            None,
        )
        .unwrap();
        let c = MirrorMakerConfig::new(raw).unwrap();
        assert!(c.cluster_pairs().is_empty());
        let raw = Properties::parse(
            "clusters = A, B\nemit.heartbeats.enabled = false\nA->B.enabled = TRUE\n",
            None,
        )
        .unwrap();
        let c = MirrorMakerConfig::new(raw).unwrap();
        assert_eq!(c.cluster_pairs(), [pair("A", "B")]);
    }

    #[test]
    fn top_level_enabled_reaches_every_pair() {
        // §13 item 31
        let c = config(&[("clusters", "a, b, c"), ("enabled", "true")]);
        for p in c.cluster_pairs() {
            for kind in ConnectorKind::ALL {
                assert_eq!(c.connector_base_config(&p, kind)["enabled"], "true");
            }
        }
        // Without it, flows are disabled unless the flow key says otherwise.
        let c = config(&[("clusters", "a, b"), ("a->b.enabled", "true")]);
        assert_eq!(
            c.connector_base_config(&pair("a", "b"), ConnectorKind::Source)["enabled"],
            "true"
        );
        assert_eq!(
            c.connector_base_config(&pair("b", "a"), ConnectorKind::Source)["enabled"],
            "false"
        );
    }

    #[test]
    fn per_flow_keys_outside_the_union() {
        // exactly.once.support and use.defaults.from only work per flow (§2.5, §13 item 25).
        let c = config(&[
            ("clusters", "a, b"),
            ("exactly.once.support", "required"),
            ("use.defaults.from", "source"),
            ("a->b.use.defaults.from", "source"),
        ]);
        let ab = c.connector_base_config(&pair("a", "b"), ConnectorKind::Source);
        assert_eq!(ab["use.defaults.from"], "source");
        assert!(!ab.contains_key("exactly.once.support"));
        let ba = c.connector_base_config(&pair("b", "a"), ConnectorKind::Source);
        assert!(!ba.contains_key("use.defaults.from"));
    }

    #[test]
    fn client_prefix_regex_needs_no_dot() {
        // §2.5 step 3: `consumerx` starts with `consumer`, so it becomes `source.consumerx`.
        let c = config(&[
            ("clusters", "a, b"),
            ("a.consumerx", "1"),
            ("a.admin.request.timeout.ms", "2"),
            ("a.offset.flush.interval.ms", "3"),
        ]);
        let cc = c.connector_base_config(&pair("a", "b"), ConnectorKind::Source);
        assert_eq!(cc["source.consumerx"], "1");
        assert_eq!(cc["source.admin.request.timeout.ms"], "2");
        assert_eq!(cc["source.cluster.offset.flush.interval.ms"], "3");
        assert!(!cc.contains_key("source.cluster.consumerx"));
        assert!(is_client_prefixed("producer"));
        assert!(!is_client_prefixed("consumer\nx"));
        assert!(!is_client_prefixed("xconsumer"));
    }

    #[test]
    fn cluster_props_precedence() {
        // §2.3: A.producer.K > A.K > top-level K; only client keys inherit from top level.
        let c = config(&[
            ("clusters", "A, B"),
            ("security.protocol", "SSL"),
            ("producer.compression.type", "zstd"),
            ("A.security.protocol", "SASL_SSL"),
            ("A.producer.security.protocol", "PLAINTEXT"),
            ("ssl.truststore.location", "/top"),
        ]);
        let a = c.cluster_props("A");
        assert_eq!(a["producer.security.protocol"], "PLAINTEXT");
        assert_eq!(a["consumer.security.protocol"], "SASL_SSL");
        assert_eq!(a["security.protocol"], "SASL_SSL");
        assert_eq!(a["admin.ssl.truststore.location"], "/top");
        assert!(!a.contains_key("producer.compression.type"));
        let b = c.cluster_props("B");
        assert_eq!(b["security.protocol"], "SSL");
        assert_eq!(b["admin.security.protocol"], "SSL");
    }

    #[test]
    fn flow_keys_win_over_cluster_and_identity() {
        let c = config(&[
            ("clusters", "a, b"),
            ("a.bootstrap.servers", "one"),
            ("a->b.source.cluster.bootstrap.servers", "override"),
            ("a->b.name", "custom"),
            ("a->b.enabled", "true"),
        ]);
        let cc = c.connector_base_config(&pair("a", "b"), ConnectorKind::Checkpoint);
        assert_eq!(cc["source.cluster.bootstrap.servers"], "override");
        assert_eq!(cc["name"], "custom");
        assert_eq!(cc["source.cluster.alias"], "a");
        assert_eq!(cc["target.cluster.alias"], "b");
        assert_eq!(cc["enabled"], "true");
    }

    #[test]
    fn clusters_required_and_deduplicated() {
        let err = MirrorMakerConfig::new(Properties::from_pairs([("a.x", "1")])).unwrap_err();
        assert!(matches!(err, ConfigError::Missing { ref key } if key == "clusters"));
        let c = config(&[("clusters", "b, a, b, c, a")]);
        assert_eq!(c.clusters(), ["b", "a", "c"]);
    }

    #[test]
    fn constructor_validates_booleans_and_providers() {
        let err = MirrorMakerConfig::new(Properties::from_pairs([
            ("clusters", "a"),
            ("dedicated.mode.enable.internal.rest", "yes"),
        ]))
        .unwrap_err();
        assert!(err
            .to_string()
            .contains("dedicated.mode.enable.internal.rest"));
        let err = MirrorMakerConfig::new(Properties::from_pairs([
            ("clusters", "a"),
            ("config.providers", "v"),
            ("config.providers.v.class", "com.example.Vault"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("config.providers.v.class"));
    }

    #[test]
    fn source_and_target_parse_and_display() {
        let p: SourceAndTarget = "us-east->eu-west".parse().unwrap();
        assert_eq!(p, pair("us-east", "eu-west"));
        assert_eq!(p.to_string(), "us-east->eu-west");
        for bad in ["ab", "->b", "a->", ""] {
            assert!(bad.parse::<SourceAndTarget>().is_err(), "{bad}");
        }
        assert_eq!(
            ConnectorKind::Heartbeat.to_string(),
            "MirrorHeartbeatConnector"
        );
        assert_eq!(
            ConnectorKind::Checkpoint.class_name(),
            "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
        );
    }

    #[test]
    fn load_from_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mm2.properties");
        std::fs::write(
            &path,
            "clusters = A, B\nA.bootstrap.servers = a:9092\n# comment\nA->B.enabled = true\n",
        )
        .unwrap();
        let c = MirrorMakerConfig::load(&path).unwrap();
        assert_eq!(c.clusters(), ["A", "B"]);
        assert_eq!(c.origin("A->B.enabled").unwrap().line, 4);
        let cc = c.connector_base_config(&pair("A", "B"), ConnectorKind::Source);
        assert_eq!(cc["source.cluster.bootstrap.servers"], "a:9092");
    }
}
