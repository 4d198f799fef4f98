//! `mirrorslice plan`: what a configuration will do, before anything runs.
//!
//! Config sprawl is a top MM2 complaint: which flows exist, which connectors actually do work,
//! what the effective filters are after top-level, cluster and flow keys are merged. A plan
//! answers that in one place, offline from the file alone, and — when the clusters answer — also
//! lists the source topics a flow would replicate, their remote names and partition counts, and
//! whether each remote topic exists yet.
//!
//! The plan is built with the same code paths `run` uses (herder pairs, connector configs,
//! policies, filters), so what it shows is what will happen.

use crate::config::connector::{
    MirrorCheckpointConfig, MirrorConnectorConfig, MirrorHeartbeatConfig, MirrorSourceConfig,
    OffsetSyncsLocation,
};
use crate::config::providers::ConfigProviders;
use crate::config::{ConfigError, ConnectorKind, MirrorMakerConfig, Props, SourceAndTarget};
use crate::filter::should_replicate_source_topic;
use crate::kafka::cluster::{list_topics, TopicPartitions};
use crate::kafka::probe::require_answer;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Which pairs to plan and whether to ask the clusters.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// `--clusters`: keep pairs whose target is listed (empty = all).
    pub targets: Vec<String>,
    /// `--flow S->T`: keep only this pair.
    pub flow: Option<SourceAndTarget>,
    /// Skip contacting the clusters.
    pub offline: bool,
    /// Bound for each cluster query.
    pub timeout: Duration,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            targets: Vec::new(),
            flow: None,
            offline: false,
            timeout: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Plan {
    pub config_file: Option<String>,
    pub clusters: Vec<ClusterPlan>,
    /// `"source->target"` for every selected herder pair, in MM2's order.
    pub herder_pairs: Vec<String>,
    pub flows: Vec<FlowPlan>,
    /// Problems that stop a connector from doing its work (validation errors).
    pub problems: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct ClusterPlan {
    pub alias: String,
    pub bootstrap_servers: Option<String>,
    /// `null` when offline.
    pub reachable: Option<bool>,
    pub error: Option<String>,
    pub topic_count: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct FlowPlan {
    pub flow: String,
    pub source: String,
    pub target: String,
    /// The connector-level `enabled` (after top-level, flow keys and MM2's injected default).
    pub enabled: bool,
    pub worker: WorkerPlan,
    pub connectors: Vec<ConnectorPlan>,
    /// Topics the connectors create or use for their own bookkeeping.
    pub internal_topics: Vec<InternalTopic>,
    /// Source topics to replicate; `null` when the clusters were not asked or did not answer.
    pub topics: Option<Vec<TopicPlan>>,
    /// Source tasks that would run: `min(tasks.max, partitions)`; `null` when unknown.
    pub source_tasks: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct WorkerPlan {
    pub client_id: Option<String>,
    pub offset_flush_interval_ms: i64,
    pub offset_storage_topic: Option<String>,
    pub config_storage_topic: Option<String>,
    pub status_storage_topic: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ConnectorPlan {
    pub name: String,
    /// Whether this connector does work in this pair.
    pub active: bool,
    /// Why it does not, when `active` is false.
    pub reason: Option<String>,
    /// Effective settings, after all of MM2's merging and defaults.
    pub settings: BTreeMap<String, serde_json::Value>,
    /// Validation errors (MM2 would log these and not run the connector).
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct InternalTopic {
    pub name: String,
    pub cluster: String,
    pub purpose: &'static str,
}

#[derive(Debug, Serialize)]
pub struct TopicPlan {
    pub source_topic: String,
    pub remote_topic: String,
    pub partitions: i32,
    pub remote_exists: bool,
    pub remote_partitions: Option<i32>,
    /// `create`, `add-partitions` or `none`.
    pub action: &'static str,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The connector configs of one pair, typed and with providers resolved.
pub struct PairConfigs {
    pub source: MirrorSourceConfig,
    pub checkpoint: MirrorCheckpointConfig,
    pub heartbeat: MirrorHeartbeatConfig,
    pub worker: Props,
    /// The source connector's config as Java writes it to the config topic: placeholders
    /// unresolved (see [`crate::config::redact`]).
    pub source_raw: Props,
}

/// Resolve the three connector configs and the worker config of one herder pair, the way the
/// Connect worker would when starting the connectors (providers resolved at that point).
pub fn pair_configs(
    mm: &MirrorMakerConfig,
    pair: &SourceAndTarget,
) -> Result<PairConfigs, ConfigError> {
    let providers = ConfigProviders::from_props(mm.raw().map())?;
    let source_raw = mm.connector_base_config(pair, ConnectorKind::Source);
    let resolved = |kind| providers.resolve_all(&mm.connector_base_config(pair, kind));
    // Point a bad value at the line that set it: the flow-scoped key first, then top level.
    let with_origin = |e: ConfigError| match &e {
        ConfigError::InvalidValue { key, .. } => {
            let origin = mm
                .origin(&format!("{pair}.{key}"))
                .or_else(|| mm.origin(key));
            e.with_origin(origin)
        }
        _ => e,
    };
    let source = MirrorSourceConfig::new(&resolved(ConnectorKind::Source)?).map_err(with_origin)?;
    let checkpoint =
        MirrorCheckpointConfig::new(&resolved(ConnectorKind::Checkpoint)?).map_err(with_origin)?;
    let heartbeat =
        MirrorHeartbeatConfig::new(&resolved(ConnectorKind::Heartbeat)?).map_err(with_origin)?;
    let worker = mm.worker_config(pair)?;
    Ok(PairConfigs {
        source,
        checkpoint,
        heartbeat,
        worker,
        source_raw,
    })
}

/// Select herder pairs as `connect-mirror-maker.sh --clusters` does, then narrow to `--flow`.
pub fn select_pairs(
    mm: &MirrorMakerConfig,
    targets: &[String],
    flow: Option<&SourceAndTarget>,
) -> Result<Vec<SourceAndTarget>, ConfigError> {
    let pairs = mm.herder_pairs(targets)?;
    match flow {
        None => Ok(pairs),
        Some(f) => {
            if pairs.contains(f) {
                Ok(vec![f.clone()])
            } else {
                let known: Vec<String> = pairs.iter().map(|p| p.to_string()).collect();
                Err(ConfigError::UnknownFlow(format!(
                    "flow {f} is not a herder pair of this configuration (pairs: {})",
                    known.join(", ")
                )))
            }
        }
    }
}

/// Admin settings MirrorClient would use for a cluster (§10): client names, then `admin.*`.
fn cluster_admin_props(mm: &MirrorMakerConfig, alias: &str) -> Result<Props, ConfigError> {
    let client = mm.client_config(alias)?;
    let mut admin: Props = client
        .iter()
        .filter(|(k, _)| crate::config::mm2::is_client_config_name(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in &client {
        if let Some(stripped) = k.strip_prefix("admin.") {
            admin.insert(stripped.to_string(), v.clone());
        }
    }
    admin.insert("client.id".into(), format!("mirrorslice-plan|{alias}"));
    Ok(admin)
}

/// Probes the clients that connect unlike the admin (a consumer with a password of its own,
/// say) on the clusters that answered the admin: a slice would refuse them at start. A
/// refusal marks the cluster unreachable, with the cause.
async fn probe_other_clients(
    configs: &[PairConfigs],
    clusters: &mut [ClusterPlan],
    timeout: Duration,
) {
    let mut probes = tokio::task::JoinSet::new();
    let mut seen = Vec::new();
    for (alias, connection) in configs.iter().flat_map(crate::slice::client_connections) {
        let answered = clusters
            .iter()
            .any(|c| c.alias == alias && c.reachable == Some(true));
        if !answered || connection.admin || seen.contains(&connection.props) {
            continue;
        }
        seen.push(connection.props.clone());
        probes.spawn(async move {
            let role = format!("{alias}|plan-probe");
            let (what, props) = (&connection.what, &connection.props);
            let found = require_answer(&alias, what, &role, props, timeout).await;
            (alias, found)
        });
    }
    while let Some(joined) = probes.join_next().await {
        let (alias, found) = joined.expect("probe task panicked");
        let Err(e) = found else { continue };
        if let Some(c) = clusters
            .iter_mut()
            .find(|c| c.alias == alias && c.error.is_none())
        {
            c.reachable = Some(false);
            c.error = Some(e.to_string());
        }
    }
}

/// Build the plan. Config errors are returned; unreachable clusters are reported in the plan.
pub async fn build_plan(mm: &MirrorMakerConfig, opts: &PlanOptions) -> Result<Plan, PlanError> {
    let pairs = select_pairs(mm, &opts.targets, opts.flow.as_ref())?;

    let mut configs = Vec::with_capacity(pairs.len());
    for pair in &pairs {
        let cfg = pair_configs(mm, pair)?;
        // Whatever a slice of the pair would refuse before starting.
        crate::slice::check_producers(mm, pair, &cfg)?;
        crate::config::slice::SliceSettings::for_pair(mm, pair)?;
        configs.push(cfg);
    }

    // Ask each involved cluster once, in parallel.
    let mut aliases: Vec<String> = Vec::new();
    for p in &pairs {
        for a in [&p.source, &p.target] {
            if !aliases.contains(a) {
                aliases.push(a.clone());
            }
        }
    }
    let mut clusters = Vec::new();
    let mut topics_by_alias: BTreeMap<String, TopicPartitions> = BTreeMap::new();
    let mut queries = tokio::task::JoinSet::new();
    for alias in &aliases {
        let admin = cluster_admin_props(mm, alias)?;
        let bootstrap = admin.get("bootstrap.servers").cloned();
        if opts.offline || bootstrap.is_none() {
            clusters.push(ClusterPlan {
                alias: alias.clone(),
                bootstrap_servers: bootstrap.clone(),
                reachable: None,
                error: bootstrap
                    .is_none()
                    .then(|| format!("{alias}.bootstrap.servers is not set")),
                topic_count: None,
            });
            continue;
        }
        let alias = alias.clone();
        let timeout = opts.timeout;
        queries.spawn(async move {
            let role = format!("{alias}|plan-admin");
            let result = async {
                require_answer(&alias, "connect", &role, &admin, timeout).await?;
                list_topics(&alias, &role, &admin, timeout).await
            }
            .await;
            (alias, bootstrap, result)
        });
    }
    while let Some(joined) = queries.join_next().await {
        let (alias, bootstrap, result) = joined.expect("metadata query task panicked");
        match result {
            Ok(topics) => {
                clusters.push(ClusterPlan {
                    alias: alias.clone(),
                    bootstrap_servers: bootstrap,
                    reachable: Some(true),
                    error: None,
                    topic_count: Some(topics.len()),
                });
                topics_by_alias.insert(alias, topics);
            }
            Err(e) => clusters.push(ClusterPlan {
                alias,
                bootstrap_servers: bootstrap,
                reachable: Some(false),
                error: Some(e.to_string()),
                topic_count: None,
            }),
        }
    }
    clusters.sort_by_key(|c| aliases.iter().position(|a| *a == c.alias));
    probe_other_clients(&configs, &mut clusters, opts.timeout).await;

    let mut problems: Vec<String> = clusters
        .iter()
        .filter(|c| c.reachable == Some(false))
        .map(|c| c.error.clone().unwrap_or_default())
        .collect();
    let mut flows = Vec::new();
    for (pair, cfg) in pairs.iter().zip(&configs) {
        let flow = flow_plan(pair, cfg, &topics_by_alias);
        for c in &flow.connectors {
            for e in &c.errors {
                problems.push(format!("{pair} {}: {e}", c.name));
            }
        }
        flows.push(flow);
    }

    Ok(Plan {
        config_file: mm.raw().file().map(|p| p.display().to_string()),
        clusters,
        herder_pairs: pairs.iter().map(|p| p.to_string()).collect(),
        flows,
        problems,
    })
}

fn secs(d: Option<Duration>) -> serde_json::Value {
    match d {
        Some(d) => serde_json::json!(d.as_secs_f64()),
        None => serde_json::json!("disabled"),
    }
}

fn common_settings(c: &MirrorConnectorConfig) -> BTreeMap<String, serde_json::Value> {
    use serde_json::json;
    let mut s = BTreeMap::new();
    s.insert("tasks.max".into(), json!(c.tasks_max));
    s.insert(
        "replication.policy.class".into(),
        json!(c.policy.class_name()),
    );
    s.insert(
        "replication.policy.separator".into(),
        json!(c.policy.separator()),
    );
    s
}

fn flow_plan(
    pair: &SourceAndTarget,
    cfg: &PairConfigs,
    topics_by_alias: &BTreeMap<String, TopicPartitions>,
) -> FlowPlan {
    use serde_json::json;
    let src = &cfg.source;
    let policy = &src.common.policy;
    let offset_syncs_cluster = match src.offset_syncs_location {
        OffsetSyncsLocation::Source => pair.source.clone(),
        OffsetSyncsLocation::Target => pair.target.clone(),
    };

    // --- topics, when both clusters answered -------------------------------------------------
    let topics = match (
        topics_by_alias.get(&pair.source),
        topics_by_alias.get(&pair.target),
    ) {
        (Some(source_topics), Some(target_topics)) => {
            let mut list = Vec::new();
            for (topic, partitions) in source_topics {
                if !should_replicate_source_topic(
                    policy,
                    &src.topic_filter,
                    topic,
                    &pair.target,
                    src.heartbeats_replication_enabled,
                ) {
                    continue;
                }
                let remote = policy.format_remote_topic(&pair.source, topic);
                let remote_partitions = target_topics.get(&remote).copied();
                let action = match remote_partitions {
                    None => "create",
                    Some(n) if n < *partitions => "add-partitions",
                    Some(_) => "none",
                };
                list.push(TopicPlan {
                    source_topic: topic.clone(),
                    remote_topic: remote,
                    partitions: *partitions,
                    remote_exists: remote_partitions.is_some(),
                    remote_partitions,
                    action,
                });
            }
            Some(list)
        }
        _ => None,
    };

    // --- source connector -------------------------------------------------------------------
    let mut s = common_settings(&src.common);
    s.insert(
        "topics".into(),
        json!(src.topic_filter.include().patterns()),
    );
    s.insert(
        "topics.exclude".into(),
        json!(src.topic_filter.exclude().patterns()),
    );
    s.insert("replication.factor".into(), json!(src.replication_factor));
    s.insert("offset.lag.max".into(), json!(src.offset_lag_max));
    s.insert(
        "emit.offset-syncs.enabled".into(),
        json!(src.emit_offset_syncs_enabled),
    );
    s.insert(
        "offset-syncs.topic.location".into(),
        json!(match src.offset_syncs_location {
            OffsetSyncsLocation::Source => "source",
            OffsetSyncsLocation::Target => "target",
        }),
    );
    s.insert(
        "heartbeats.replication.enabled".into(),
        json!(src.heartbeats_replication_enabled),
    );
    s.insert(
        "refresh.topics.interval.seconds".into(),
        secs(src.refresh_topics_interval),
    );
    s.insert(
        "sync.topic.configs.interval.seconds".into(),
        secs(src.sync_topic_configs_interval),
    );
    s.insert(
        "sync.topic.acls.interval.seconds".into(),
        secs(src.sync_topic_acls_interval),
    );
    let partitions_total: Option<i64> = topics
        .as_ref()
        .map(|t| t.iter().map(|t| t.partitions as i64).sum());
    let (source_active, source_reason) = if !src.common.enabled {
        (false, Some(format!("{pair}.enabled is not true")))
    } else if partitions_total == Some(0) {
        (false, Some("no source topic-partition matches".to_string()))
    } else {
        (true, None)
    };
    let source_tasks = match (source_active, partitions_total) {
        (true, Some(n)) => Some((src.common.tasks_max as i64).min(n) as u32),
        (false, _) => Some(0),
        _ => None,
    };

    // --- checkpoint connector ---------------------------------------------------------------
    let cp = &cfg.checkpoint;
    let mut c = common_settings(&cp.common);
    c.insert("groups".into(), json!(cp.group_filter.include().patterns()));
    c.insert(
        "groups.exclude".into(),
        json!(cp.group_filter.exclude().patterns()),
    );
    c.insert(
        "emit.checkpoints.interval.seconds".into(),
        secs(cp.emit_checkpoints_interval),
    );
    c.insert(
        "sync.group.offsets.interval.seconds".into(),
        secs(cp.sync_group_offsets_interval),
    );
    c.insert(
        "refresh.groups.interval.seconds".into(),
        secs(cp.refresh_groups_interval),
    );
    let checkpoint_errors: Vec<String> = cp
        .validate()
        .into_iter()
        .map(|(k, m)| format!("{k}: {m}"))
        .collect();
    let (cp_active, cp_reason) = if !cp.common.enabled {
        (false, Some(format!("{pair}.enabled is not true")))
    } else if cp.emit_checkpoints_interval.is_none() {
        (false, Some("emit.checkpoints.enabled is false".into()))
    } else if !checkpoint_errors.is_empty() {
        (false, Some("configuration rejected by validation".into()))
    } else {
        (true, None)
    };

    // --- heartbeat connector ----------------------------------------------------------------
    let hb = &cfg.heartbeat;
    let mut h = BTreeMap::new();
    h.insert(
        "emit.heartbeats.interval.seconds".into(),
        secs(hb.emit_heartbeats_interval),
    );
    let (hb_active, hb_reason) = if hb.emit_heartbeats_interval.is_some() {
        (true, None)
    } else {
        (false, Some("emit.heartbeats.enabled is false".into()))
    };

    let source_errors: Vec<String> = src
        .validate()
        .into_iter()
        .map(|(k, m)| format!("{k}: {m}"))
        .collect();

    let worker = &cfg.worker;
    let mut internal_topics = vec![InternalTopic {
        name: policy.heartbeats_topic().to_string(),
        cluster: pair.target.clone(),
        purpose: "heartbeats (created by the heartbeat connector, always)",
    }];
    for (key, purpose) in [
        ("config.storage.topic", "Connect configs"),
        ("offset.storage.topic", "Connect source offsets"),
        ("status.storage.topic", "Connect status"),
    ] {
        if let Some(name) = worker.get(key) {
            internal_topics.push(InternalTopic {
                name: name.clone(),
                cluster: pair.target.clone(),
                purpose,
            });
        }
    }
    if source_active && src.emit_offset_syncs_enabled {
        internal_topics.push(InternalTopic {
            name: src.offset_syncs_topic(),
            cluster: offset_syncs_cluster,
            purpose: "offset syncs",
        });
    }
    if cp_active {
        internal_topics.push(InternalTopic {
            name: cp.checkpoints_topic(),
            cluster: pair.target.clone(),
            purpose: "checkpoints",
        });
    }

    // A bad value was refused with the pair's settings (`SliceSettings::for_pair`).
    let flush_ms =
        crate::config::slice::offset_flush_interval(worker).map_or(0, |d| d.as_millis() as i64);

    FlowPlan {
        flow: pair.to_string(),
        source: pair.source.clone(),
        target: pair.target.clone(),
        enabled: src.common.enabled,
        worker: WorkerPlan {
            client_id: worker.get("client.id").cloned(),
            offset_flush_interval_ms: flush_ms,
            offset_storage_topic: worker.get("offset.storage.topic").cloned(),
            config_storage_topic: worker.get("config.storage.topic").cloned(),
            status_storage_topic: worker.get("status.storage.topic").cloned(),
        },
        connectors: vec![
            ConnectorPlan {
                name: ConnectorKind::Source.simple_name().into(),
                active: source_active,
                reason: source_reason,
                settings: s,
                errors: source_errors,
            },
            ConnectorPlan {
                name: ConnectorKind::Checkpoint.simple_name().into(),
                active: cp_active,
                reason: cp_reason,
                settings: c,
                errors: checkpoint_errors,
            },
            ConnectorPlan {
                name: ConnectorKind::Heartbeat.simple_name().into(),
                active: hb_active,
                reason: hb_reason,
                settings: h,
                errors: Vec::new(),
            },
        ],
        internal_topics,
        topics,
        source_tasks,
    }
}

/// Human-readable rendering of a plan, for a terminal.
pub fn render_text(plan: &Plan) -> String {
    let mut out = String::new();
    if let Some(f) = &plan.config_file {
        let _ = writeln!(out, "Config: {f}");
    }
    let _ = writeln!(out, "Clusters:");
    for c in &plan.clusters {
        let state = match (c.reachable, &c.error) {
            (Some(true), _) => format!("reachable, {} topics", c.topic_count.unwrap_or(0)),
            (Some(false), Some(e)) => format!("UNREACHABLE: {e}"),
            (None, Some(e)) => e.clone(),
            _ => "not contacted".to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<12} {:<30} {}",
            c.alias,
            c.bootstrap_servers.as_deref().unwrap_or("-"),
            state
        );
    }
    let _ = writeln!(out, "Herder pairs: {}", plan.herder_pairs.join(", "));
    for f in &plan.flows {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Flow {} (replication {})",
            f.flow,
            if f.enabled { "enabled" } else { "disabled" }
        );
        for c in &f.connectors {
            let status = if c.active {
                "active".to_string()
            } else {
                format!("idle: {}", c.reason.as_deref().unwrap_or("-"))
            };
            let _ = writeln!(out, "  {:<26} {}", c.name, status);
            if c.active {
                for (k, v) in &c.settings {
                    let _ = writeln!(out, "      {k} = {v}");
                }
            }
            for e in &c.errors {
                let _ = writeln!(out, "      ERROR {e}");
            }
        }
        let _ = writeln!(out, "  Internal topics:");
        for t in &f.internal_topics {
            let _ = writeln!(out, "      {} on {} ({})", t.name, t.cluster, t.purpose);
        }
        match &f.topics {
            None => {
                let _ = writeln!(out, "  Topics: (clusters not queried or unreachable)");
            }
            Some(topics) if topics.is_empty() => {
                let _ = writeln!(out, "  Topics: none match");
            }
            Some(topics) => {
                let _ = writeln!(
                    out,
                    "  Topics ({} source tasks):",
                    f.source_tasks.unwrap_or(0)
                );
                for t in topics {
                    let remote = match t.remote_partitions {
                        Some(n) => format!("exists, {n} partitions"),
                        None => "missing".to_string(),
                    };
                    let _ = writeln!(
                        out,
                        "      {} [{}] -> {} ({remote}; action: {})",
                        t.source_topic, t.partitions, t.remote_topic, t.action
                    );
                }
            }
        }
    }
    if !plan.problems.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Problems:");
        for p in &plan.problems {
            let _ = writeln!(out, "  {p}");
        }
    }
    out
}
