//! The connector phase of `MirrorSourceConnector` for one herder pair (mm2-compat §6).
//!
//! Java MM2 runs its source connector forever: it creates the remote topics once at start,
//! refreshes topics every `refresh.topics.interval.seconds` (10 minutes by default), and syncs
//! topic configs and ACLs on their own timers. A slice lives for minutes, so this module does all
//! of that *once*, at the start of every slice, and remembers what must outlive the slice:
//!
//! * **Discovery every slice.** Source and target topics are listed at slice start, so a new
//!   topic is replicated by the next slice instead of up to ten minutes later (KAFKA-12798).
//! * **Remote topics are born with their configs.** The remote topic's configs (§6.5 "create"
//!   mode) go into the same `CreateTopics` request that creates it. Java MM2 historically created
//!   topics with broker defaults and fixed them at the next config sync (KAFKA-12254): a compacted
//!   source topic could be mirrored into a `delete` topic and lose keys in between.
//! * **Intervals honoured across slices.** Config sync (§6.5) and ACL sync (§6.6) run when due;
//!   their last run time is kept in the [`StateStore`], so a 5-minute slice schedule still syncs
//!   configs every `sync.topic.configs.interval.seconds`, not every slice.
//! * **Loud when a cluster is unreachable.** Java only logs its connector-start failures; a slice
//!   that cannot list topics or create a remote topic fails, because the task that follows would
//!   otherwise produce into a missing (or auto-created, default-config) topic.
//!
//! The rules that decide *what* to do (config filtering in both modes, ACL rewriting, which topics
//! to create or grow, whether a sync is due) are pure functions below, unit tested against the
//! MM2 acceptance cases (§12.4 #35, #38–#42); the phase function only does the I/O around them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::kafka::MirrorContext;
use rdkafka::admin::{
    AdminClient, AdminOptions, ConfigEntry as RdConfigEntry, ConfigSource as RdConfigSource,
    NewPartitions, NewTopic, OwnedResourceSpecifier, ResourceSpecifier, TopicReplication,
};
use rdkafka::types::RDKafkaErrorCode;
use serde_json::json;

use crate::config::connector::{roles, MirrorSourceConfig, OffsetSyncsLocation};
use crate::config::Props;
use crate::connect::internal_topics::{ensure_compacted_topic, Creation};
use crate::filter::{should_replicate_source_topic, ConfigPropertyFilter};
use crate::kafka::admin_ext::{
    self, AclBinding, AclOperation, AclPermission, AdminError, AlterOp, PatternType, ResourceType,
};
use crate::kafka::ClientError;
use crate::policy::ReplicationPolicy;
use crate::state::StateStore;

type Admin = crate::kafka::Managed<AdminClient<MirrorContext>>;

/// State-store key suffixes (after the caller's prefix, e.g. `A->B/MirrorSourceConnector`).
const CONFIG_SYNC_STATE: &str = "topic-config-sync";
const ACL_SYNC_STATE: &str = "topic-acl-sync";

/// The state keys the connector phase reads under `state_prefix` (`<flow>/<connector>`), for
/// the slice's prefetch.
pub fn state_keys(state_prefix: &str) -> Vec<String> {
    [CONFIG_SYNC_STATE, ACL_SYNC_STATE]
        .iter()
        .map(|name| format!("{state_prefix}/{name}"))
        .collect()
}

/// The hint Java logs the first time ACL sync meets a broker without an authorizer (§12.4 #36).
pub const SECURITY_DISABLED_HINT: &str = "Consider disabling topic ACL syncing by setting \
     sync.topic.acls.enabled to 'false': the source cluster has no authorizer \
     (SecurityDisabledException); skipping topic ACL sync";

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A connector-phase failure; every variant names the cluster alias and what was attempted.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// A client could not be built from its settings (the message names the client role).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A whole request failed: cluster unreachable, timeout, unsupported API.
    #[error("cluster {cluster}: {operation} failed: {message}")]
    Request {
        cluster: String,
        operation: String,
        message: String,
    },
    /// `describeConfigs` failed for topics whose remote topics must be created (§12.4 #37 wording).
    #[error(
        "{message} occurred while trying to describe configs for topics [{}] on {cluster} cluster",
        topics.join(", ")
    )]
    DescribeConfigs {
        cluster: String,
        topics: Vec<String>,
        message: String,
    },
    /// A topic could not be created (remote topics, or the offset-syncs topic).
    #[error("cluster {cluster}: create topic {topic} failed: {message}")]
    CreateTopic {
        cluster: String,
        topic: String,
        message: String,
    },
}

impl ConnectorError {
    fn request(cluster: &str, operation: &str, message: impl ToString) -> Self {
        ConnectorError::Request {
            cluster: cluster.to_string(),
            operation: operation.to_string(),
            message: message.to_string(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Outcome types
// ---------------------------------------------------------------------------------------------

/// A remote topic created by this phase, with the configs it was created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    pub name: String,
    pub partitions: i32,
    pub configs: Props,
}

/// What a periodic sync (topic configs §6.5, topic ACLs §6.6) did in this phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncRun {
    /// Switched off (`sync.topic.*.enabled=false` or a negative interval).
    Disabled,
    /// Ran less than one interval ago (in an earlier slice); runs again at `next_due_ms`.
    NotDue { next_due_ms: i64 },
    /// Due, but the source cluster has no authorizer (ACL sync only); counts as a run.
    Skipped { reason: String },
    /// Due, but the request as a whole failed; not remembered, so the next slice retries.
    Failed { error: String },
    /// Ran. Config sync: `topics` remote topics altered, `set`/`deleted` config ops.
    /// ACL sync: `set` bindings created on `topics` remote topics, `deleted` is always 0 (MM2
    /// never removes ACLs). `errors` are per-topic or per-binding failures (logged by Java).
    Ran {
        topics: usize,
        set: usize,
        deleted: usize,
        errors: Vec<String>,
    },
}

/// Everything the slice needs from the connector phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorPhaseOutcome {
    /// All replicated source topic-partitions, sorted by topic then partition (§6.7 list order).
    pub source_partitions: Vec<(String, i32)>,
    /// Replicated source topic → its remote topic on the target.
    pub remote_topics: BTreeMap<String, String>,
    /// Replicated source topic → its topic ID (KIP-516), where the source broker reports one.
    pub topic_ids: BTreeMap<String, String>,
    /// §6.7 round robin: `min(tasks.max, #partitions)` tasks.
    pub task_partitions: Vec<Vec<(String, i32)>>,
    /// `MirrorSourceConnector.taskConfigs` for those assignments (§4.8).
    pub task_configs: Vec<Props>,
    pub created_topics: Vec<CreatedTopic>,
    /// Remote topics grown: `(remote topic, partitions before, partitions wanted)`.
    pub grown_topics: Vec<(String, i32, i32)>,
    pub config_sync: SyncRun,
    pub acl_sync: SyncRun,
    /// Things Java would log at WARN and carry on (growth unsupported, ACL hint, …).
    pub warnings: Vec<String>,
}

impl ConnectorPhaseOutcome {
    fn empty() -> Self {
        ConnectorPhaseOutcome {
            source_partitions: Vec::new(),
            remote_topics: BTreeMap::new(),
            topic_ids: BTreeMap::new(),
            task_partitions: Vec::new(),
            task_configs: Vec::new(),
            created_topics: Vec::new(),
            grown_topics: Vec::new(),
            config_sync: SyncRun::Disabled,
            acl_sync: SyncRun::Disabled,
            warnings: Vec::new(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pure rules: topic configs (§6.5)
// ---------------------------------------------------------------------------------------------

/// Where a described config value comes from (Java's `ConfigEntry.ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigValueSource {
    DynamicTopic,
    DynamicBroker,
    DynamicDefaultBroker,
    StaticBroker,
    /// `DEFAULT_CONFIG`: the only source that counts as "default" in §6.5.
    Default,
    Unknown,
}

/// One entry of a source topic's `describeConfigs` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigValueSource,
    pub read_only: bool,
    pub sensitive: bool,
}

impl TopicConfigEntry {
    fn from_rdkafka(e: &RdConfigEntry) -> Self {
        TopicConfigEntry {
            name: e.name.clone(),
            value: e.value.clone(),
            source: match e.source {
                RdConfigSource::DynamicTopic => ConfigValueSource::DynamicTopic,
                RdConfigSource::DynamicBroker => ConfigValueSource::DynamicBroker,
                RdConfigSource::DynamicDefaultBroker => ConfigValueSource::DynamicDefaultBroker,
                RdConfigSource::StaticBroker => ConfigValueSource::StaticBroker,
                RdConfigSource::Default => ConfigValueSource::Default,
                RdConfigSource::Unknown => ConfigValueSource::Unknown,
            },
            read_only: e.is_read_only,
            sensitive: e.is_sensitive,
        }
    }

    /// Java's `ConfigEntry.isDefault()`: source is `DEFAULT_CONFIG`, nothing else. Values
    /// inherited from dynamic broker defaults are synced as explicit values (§6.5).
    pub fn is_default(&self) -> bool {
        self.source == ConfigValueSource::Default
    }
}

/// The filters both modes share: not read-only or sensitive, not `STATIC_BROKER_CONFIG`, and
/// accepted by the `ConfigPropertyFilter` (`config.properties.exclude`).
fn passes_common_filters(e: &TopicConfigEntry, filter: &ConfigPropertyFilter) -> bool {
    !e.read_only
        && !e.sensitive
        && e.source != ConfigValueSource::StaticBroker
        && filter.should_replicate_config_property(&e.name)
}

/// §6.5 **create** mode (`targetConfig(config, incremental=false)`): the configs a new remote
/// topic is created with. Defaults are kept only with `use.defaults.from=source`. Entries
/// without a value cannot be sent and are dropped.
pub fn create_mode_configs(entries: &[TopicConfigEntry], filter: &ConfigPropertyFilter) -> Props {
    entries
        .iter()
        .filter(|e| !e.is_default() || filter.should_replicate_source_default(&e.name))
        .filter(|e| passes_common_filters(e, filter))
        .filter_map(|e| Some((e.name.clone(), e.value.clone()?)))
        .collect()
}

/// §6.5 **sync** mode (`targetConfig(incremental=true)` + `incrementalAlterConfigs`): one op per
/// kept entry. A default becomes DELETE (the target reverts to its own default) unless
/// `use.defaults.from=source`; everything else is SET to the source value. Excluded properties
/// get no op at all, so they stay as they are on the target.
pub fn sync_mode_ops(
    entries: &[TopicConfigEntry],
    filter: &ConfigPropertyFilter,
) -> Vec<(String, AlterOp)> {
    entries
        .iter()
        .filter(|e| passes_common_filters(e, filter))
        .filter_map(|e| {
            if e.is_default() && !filter.should_replicate_source_default(&e.name) {
                Some((e.name.clone(), AlterOp::Delete))
            } else {
                // Java would SET a null value; the broker rejects that, so skip it.
                Some((e.name.clone(), AlterOp::Set(e.value.clone()?)))
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Pure rules: ACLs (§6.6)
// ---------------------------------------------------------------------------------------------

/// §6.6: which source ACL bindings MM2 copies and what they become on the target. Keeps LITERAL
/// TOPIC bindings of replicated topics, drops `ALLOW WRITE` (only MM2 writes to remote topics),
/// renames the topic with the replication policy and downgrades `ALLOW ALL` to `ALLOW READ`.
/// DENY entries are copied unchanged.
pub fn target_acl_bindings(
    source_bindings: &[AclBinding],
    should_replicate_topic: impl Fn(&str) -> bool,
    policy: &ReplicationPolicy,
    source_alias: &str,
) -> Vec<AclBinding> {
    source_bindings
        .iter()
        .filter(|b| b.resource_type == ResourceType::Topic)
        .filter(|b| b.pattern_type == PatternType::Literal)
        .filter(|b| !(b.permission == AclPermission::Allow && b.operation == AclOperation::Write))
        .filter(|b| should_replicate_topic(&b.name))
        .map(|b| {
            let operation =
                if b.permission == AclPermission::Allow && b.operation == AclOperation::All {
                    AclOperation::Read
                } else {
                    b.operation
                };
            AclBinding {
                resource_type: ResourceType::Topic,
                name: policy.format_remote_topic(source_alias, &b.name),
                pattern_type: PatternType::Literal,
                principal: b.principal.clone(),
                host: b.host.clone(),
                operation,
                permission: b.permission,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Pure rules: discovery, creation, growth (§6.3, §6.4), schedule
// ---------------------------------------------------------------------------------------------

/// What `computeAndCreateTopicPartitions` must do, given both sides' topics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicPlan {
    /// Replicated source topic → remote topic name.
    pub remote_topics: BTreeMap<String, String>,
    /// `(source topic, remote topic, partitions)` for remote topics that do not exist yet.
    pub to_create: Vec<(String, String, i32)>,
    /// `(remote topic, current partitions, wanted partitions)`: remote topic is smaller.
    pub to_grow: Vec<(String, i32, i32)>,
    /// Replicated source topics whose remote topic exists (config sync works on these).
    pub being_replicated: Vec<String>,
}

/// §6.3/§6.4 on listed topics. `source` must already be filtered by §6.2. A remote topic counts
/// as known only if the policy says it comes from `source_alias` and it is not the checkpoints
/// topic (`findTargetTopicPartitions`). Remote topics are never shrunk nor deleted.
pub fn plan_topics(
    source: &BTreeMap<String, i32>,
    target: &BTreeMap<String, i32>,
    policy: &ReplicationPolicy,
    source_alias: &str,
    checkpoints_topic: &str,
) -> TopicPlan {
    let mut plan = TopicPlan::default();
    for (topic, &partitions) in source {
        let remote = policy.format_remote_topic(source_alias, topic);
        let known = target.get(&remote).filter(|_| {
            policy.topic_source(&remote).as_deref() == Some(source_alias)
                && remote != checkpoints_topic
        });
        match known {
            None => plan
                .to_create
                .push((topic.clone(), remote.clone(), partitions)),
            Some(&have) => {
                if have < partitions {
                    plan.to_grow.push((remote.clone(), have, partitions));
                }
                plan.being_replicated.push(topic.clone());
            }
        }
        plan.remote_topics.insert(topic.clone(), remote);
    }
    plan
}

/// Every partition of every topic, sorted by topic then partition (§6.7 list order).
pub fn expand_partitions(topics: &BTreeMap<String, i32>) -> Vec<(String, i32)> {
    topics
        .iter()
        .flat_map(|(t, &n)| (0..n).map(move |p| (t.clone(), p)))
        .collect()
}

/// Whether a periodic sync runs now. `Ok(())` = due; `Err(run)` = `Disabled` or `NotDue`.
/// A last run in the future (clock moved back) counts as due, so a bad clock cannot stop syncs.
pub fn sync_due(
    interval: Option<Duration>,
    last_run_ms: Option<i64>,
    now_ms: i64,
) -> Result<(), SyncRun> {
    let Some(interval) = interval else {
        return Err(SyncRun::Disabled);
    };
    let Some(last) = last_run_ms else {
        return Ok(());
    };
    let next_due_ms = last.saturating_add(i64::try_from(interval.as_millis()).unwrap_or(i64::MAX));
    if now_ms >= next_due_ms || now_ms < last {
        Ok(())
    } else {
        Err(SyncRun::NotDue { next_due_ms })
    }
}

// ---------------------------------------------------------------------------------------------
// The phase
// ---------------------------------------------------------------------------------------------

/// One run of the source connector phase for a herder pair: its clients and settings.
pub struct SourceConnectorPhase<'a> {
    cfg: &'a MirrorSourceConfig,
    source_admin: Arc<Admin>,
    target_admin: Arc<Admin>,
    timeout: Duration,
    warnings: Vec<String>,
}

/// Runs the connector phase (see the module docs). `state_prefix` scopes the durable sync
/// timestamps, e.g. `A->B/MirrorSourceConnector`; `now_ms` is the slice's wall clock.
pub async fn run_source_connector_phase(
    cfg: &MirrorSourceConfig,
    state: &dyn StateStore,
    state_prefix: &str,
    now_ms: i64,
) -> Result<ConnectorPhaseOutcome, ConnectorError> {
    if !cfg.common.enabled {
        return Ok(ConnectorPhaseOutcome::empty());
    }
    SourceConnectorPhase::new(cfg)?
        .run(state, state_prefix, now_ms)
        .await
}

fn make_admin(role: &str, props: &Props) -> Result<Arc<Admin>, ClientError> {
    crate::kafka::shared_admin(role, props)
}

fn admin_options(timeout: Duration) -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(timeout))
        .operation_timeout(Some(timeout))
}

impl<'a> SourceConnectorPhase<'a> {
    pub fn new(cfg: &'a MirrorSourceConfig) -> Result<Self, ConnectorError> {
        let source_admin = make_admin(
            roles::REPLICATION_SOURCE_ADMIN,
            &cfg.common
                .source_admin_config(roles::REPLICATION_SOURCE_ADMIN),
        )?;
        let target_admin = make_admin(
            roles::REPLICATION_TARGET_ADMIN,
            &cfg.common
                .target_admin_config(roles::REPLICATION_TARGET_ADMIN),
        )?;
        Ok(SourceConnectorPhase {
            cfg,
            source_admin,
            target_admin,
            timeout: cfg.common.admin_timeout,
            warnings: Vec::new(),
        })
    }

    fn source_alias(&self) -> &str {
        &self.cfg.common.source_alias
    }

    fn target_alias(&self) -> &str {
        &self.cfg.common.target_alias
    }

    fn warn(&mut self, message: String) {
        tracing::warn!(flow = %format!("{}->{}", self.source_alias(), self.target_alias()), "{message}");
        self.warnings.push(message);
    }

    /// §6.1 in order: offset-syncs topic, discovery, create/grow, then ACL and config sync.
    pub async fn run(
        mut self,
        state: &dyn StateStore,
        state_prefix: &str,
        now_ms: i64,
    ) -> Result<ConnectorPhaseOutcome, ConnectorError> {
        let cfg = self.cfg;
        if !cfg.common.enabled {
            return Ok(ConnectorPhaseOutcome::empty());
        }
        if cfg.emit_offset_syncs_enabled {
            self.create_offset_syncs_topic().await?;
        }

        let source_alias = self.source_alias().to_string();
        let target_alias = self.target_alias().to_string();
        let all_source = self.list_topics(Side::Source).await?;
        let source: BTreeMap<String, i32> = all_source
            .into_iter()
            .filter(|(t, _)| {
                should_replicate_source_topic(
                    &cfg.common.policy,
                    &cfg.topic_filter,
                    t,
                    &target_alias,
                    cfg.heartbeats_replication_enabled,
                )
            })
            .collect();
        let topic_ids = self.describe_topic_ids(&source).await;
        let target = self.list_topics(Side::Target).await?;
        let plan = plan_topics(
            &source,
            &target,
            &cfg.common.policy,
            &source_alias,
            &cfg.checkpoints_topic(),
        );

        let created_topics = self.create_remote_topics(&plan.to_create).await?;
        let grown_topics = self.grow_remote_topics(&plan.to_grow).await;

        // Java refreshes the known target topics after creating. Creation either succeeded,
        // found the topic already there, or failed the phase, so every replicated source topic
        // now has its remote topic and joins the config sync (new ones harmlessly: they were
        // just created with these configs).
        let being_replicated: Vec<String> = source.keys().cloned().collect();

        let acl_sync = self.acl_sync_if_due(state, state_prefix, now_ms).await?;
        let config_sync = self
            .config_sync_if_due(
                state,
                state_prefix,
                now_ms,
                &being_replicated,
                &plan.remote_topics,
            )
            .await?;

        let source_partitions = expand_partitions(&source);
        let task_partitions = cfg.task_partitions(&source_partitions);
        let task_configs = cfg.task_configs(&source_partitions);
        Ok(ConnectorPhaseOutcome {
            source_partitions,
            remote_topics: plan.remote_topics,
            topic_ids,
            task_partitions,
            task_configs,
            created_topics,
            grown_topics,
            config_sync,
            acl_sync,
            warnings: self.warnings,
        })
    }

    fn admin(&self, side: Side) -> (&Arc<Admin>, &str) {
        match side {
            Side::Source => (&self.source_admin, &self.cfg.common.source_alias),
            Side::Target => (&self.target_admin, &self.cfg.common.target_alias),
        }
    }

    /// Topic → partition count from a metadata request. Topics the broker reports with an
    /// error (e.g. still being created) are left out with a warning; the next slice sees them.
    async fn list_topics(&mut self, side: Side) -> Result<BTreeMap<String, i32>, ConnectorError> {
        let (admin, cluster) = self.admin(side);
        let (admin, cluster) = (Arc::clone(admin), cluster.to_string());
        let timeout = self.timeout;
        let listed = tokio::task::spawn_blocking(move || {
            admin
                .inner()
                .fetch_metadata(None, timeout)
                .map(|md| {
                    let mut ok = BTreeMap::new();
                    let mut bad = Vec::new();
                    for t in md.topics() {
                        match t.error() {
                            None => {
                                ok.insert(t.name().to_string(), t.partitions().len() as i32);
                            }
                            Some(e) => {
                                bad.push(format!("{}: {:?}", t.name(), RDKafkaErrorCode::from(e)))
                            }
                        }
                    }
                    (ok, bad)
                })
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| ConnectorError::request(&cluster, "list topics", e))?
        .map_err(|e| ConnectorError::request(&cluster, "list topics", e))?;
        let (topics, bad) = listed;
        for b in bad {
            self.warn(format!(
                "cluster {cluster}: topic skipped this slice, metadata error {b}"
            ));
        }
        Ok(topics)
    }

    /// The IDs of the replicated source topics, with which the tasks tell a recreated topic from
    /// the one their offsets were stored for. A source that reports no ID for some topics (a
    /// broker without topic IDs) or cannot be asked gets a warning and the checks without IDs.
    async fn describe_topic_ids(
        &mut self,
        source: &BTreeMap<String, i32>,
    ) -> BTreeMap<String, String> {
        let topics: Vec<String> = source.keys().cloned().collect();
        let cluster = self.source_alias().to_string();
        let described =
            admin_ext::describe_topic_ids(&self.source_admin, &topics, self.timeout).await;
        let described = match described {
            Ok(d) => d,
            Err(e) => {
                self.warn(format!(
                    "cluster {cluster}: topic IDs not available ({e}); a recreated topic is \
                     detected only when it holds fewer records than the stored offset"
                ));
                return BTreeMap::new();
            }
        };
        let without: Vec<&str> = topics
            .iter()
            .filter(|t| !matches!(described.get(*t), Some(Some(_))))
            .map(String::as_str)
            .collect();
        if !without.is_empty() {
            self.warn(format!(
                "cluster {cluster} reports no topic ID for {}; a recreated topic among them is \
                 detected only when it holds fewer records than the stored offset",
                without.join(", ")
            ));
        }
        described
            .into_iter()
            .filter_map(|(t, id)| Some((t, id?)))
            .collect()
    }

    /// `createSinglePartitionCompactedTopic` (§3) for the offset-syncs topic, on the cluster
    /// named by `offset-syncs.topic.location`, through the shared internal-topic helper: "exists",
    /// "unsupported" and authorization errors mean "assume it exists" as in Java (a warning
    /// here); anything else fails the phase.
    async fn create_offset_syncs_topic(&mut self) -> Result<(), ConnectorError> {
        let cfg = self.cfg;
        let cluster = match cfg.offset_syncs_location {
            OffsetSyncsLocation::Source => cfg.common.source_alias.clone(),
            OffsetSyncsLocation::Target => cfg.common.target_alias.clone(),
        };
        let topic = cfg.offset_syncs_topic();
        let created = ensure_compacted_topic(
            &cfg.offset_syncs_admin_config(),
            &topic,
            1,
            cfg.offset_syncs_topic_replication_factor,
        )
        .await
        .map_err(|e| ConnectorError::CreateTopic {
            cluster: cluster.clone(),
            topic: topic.clone(),
            message: e.to_string(),
        })?;
        if let Creation::Assumed { reason } = created {
            self.warn(format!(
                "cluster {cluster}: could not create offset-syncs topic {topic} ({reason}); \
                 assuming it exists"
            ));
        }
        Ok(())
    }

    /// `describeConfigs` on the source for `topics`. A failed request is an error naming the
    /// topics and the cluster (§12.4 #37); a per-topic failure is returned per topic.
    async fn describe_source_configs(
        &self,
        topics: &[String],
    ) -> Result<BTreeMap<String, Result<Vec<TopicConfigEntry>, String>>, ConnectorError> {
        let cluster = self.source_alias().to_string();
        if topics.is_empty() {
            return Ok(BTreeMap::new());
        }
        let specs: Vec<ResourceSpecifier<'_>> = topics
            .iter()
            .map(|t| ResourceSpecifier::Topic(t.as_str()))
            .collect();
        let results = self
            .source_admin
            .describe_configs(&specs, &admin_options(self.timeout))
            .await
            .map_err(|e| ConnectorError::DescribeConfigs {
                cluster: cluster.clone(),
                topics: topics.to_vec(),
                message: e.to_string(),
            })?;
        let mut out = BTreeMap::new();
        // A per-resource error carries no name; librdkafka answers in request order.
        for (asked, r) in topics.iter().zip(results) {
            match r {
                Ok(resource) => {
                    let name = match &resource.specifier {
                        OwnedResourceSpecifier::Topic(n) => n.clone(),
                        _ => asked.clone(),
                    };
                    let entries = resource
                        .entries
                        .iter()
                        .map(TopicConfigEntry::from_rdkafka)
                        .collect();
                    out.insert(name, Ok(entries));
                }
                Err(code) => {
                    out.insert(asked.clone(), Err(format!("{code:?}")));
                }
            }
        }
        for t in topics {
            out.entry(t.clone())
                .or_insert_with(|| Err("no describeConfigs result".to_string()));
        }
        Ok(out)
    }

    /// §6.4 creation, with §6.5 create-mode configs in the same `CreateTopics` request. Any
    /// failure other than "already exists" fails the phase: the task would otherwise write into
    /// a missing or auto-created topic with default configs (KAFKA-12254).
    async fn create_remote_topics(
        &mut self,
        to_create: &[(String, String, i32)],
    ) -> Result<Vec<CreatedTopic>, ConnectorError> {
        if to_create.is_empty() {
            return Ok(Vec::new());
        }
        let cfg = self.cfg;
        let target = self.target_alias().to_string();
        let source_topics: Vec<String> = to_create.iter().map(|(s, _, _)| s.clone()).collect();
        let described = self.describe_source_configs(&source_topics).await?;
        let mut planned = Vec::with_capacity(to_create.len());
        for (source_topic, remote, partitions) in to_create {
            let entries = match &described[source_topic] {
                Ok(entries) => entries,
                Err(message) => {
                    return Err(ConnectorError::DescribeConfigs {
                        cluster: self.source_alias().to_string(),
                        topics: vec![source_topic.clone()],
                        message: message.clone(),
                    })
                }
            };
            planned.push(CreatedTopic {
                name: remote.clone(),
                partitions: *partitions,
                configs: create_mode_configs(entries, &cfg.config_property_filter),
            });
        }
        let new_topics: Vec<NewTopic<'_>> = planned
            .iter()
            .map(|c| {
                c.configs.iter().fold(
                    NewTopic::new(
                        &c.name,
                        c.partitions,
                        TopicReplication::Fixed(cfg.replication_factor),
                    ),
                    |t, (k, v)| t.set(k, v),
                )
            })
            .collect();
        let results = self
            .target_admin
            .create_topics(&new_topics, &admin_options(self.timeout))
            .await
            .map_err(|e| ConnectorError::request(&target, "create remote topics", e))?;
        let mut created = Vec::new();
        let mut failures = Vec::new();
        for r in results {
            match r {
                Ok(name) => {
                    if let Some(c) = planned.iter().find(|c| c.name == name) {
                        tracing::info!(cluster = %target, topic = %name, partitions = c.partitions,
                            configs = ?c.configs, "created remote topic");
                        created.push(c.clone());
                    }
                }
                // Created meanwhile (another slice, or metadata lag): nothing to do.
                Err((name, RDKafkaErrorCode::TopicAlreadyExists)) => {
                    tracing::debug!(cluster = %target, topic = %name, "remote topic already exists")
                }
                Err((name, code)) => failures.push((name, format!("{code:?}"))),
            }
        }
        if let Some((topic, message)) = failures.first() {
            let others = failures.len() - 1;
            return Err(ConnectorError::CreateTopic {
                cluster: target,
                topic: topic.clone(),
                message: if others > 0 {
                    format!("{message} (and {others} more topic(s) failed)")
                } else {
                    message.clone()
                },
            });
        }
        Ok(created)
    }

    /// §6.4 growth. Failures are warnings, as in Java (which silently ignores
    /// `InvalidPartitionsException` and logs the rest); brokers without CreatePartitions (tansu)
    /// get a warning naming the topic.
    async fn grow_remote_topics(
        &mut self,
        to_grow: &[(String, i32, i32)],
    ) -> Vec<(String, i32, i32)> {
        if to_grow.is_empty() {
            return Vec::new();
        }
        let target = self.target_alias().to_string();
        let requests: Vec<NewPartitions<'_>> = to_grow
            .iter()
            .map(|(t, _, n)| NewPartitions::new(t, *n as usize))
            .collect();
        let results = self
            .target_admin
            .create_partitions(&requests, &admin_options(self.timeout))
            .await;
        let mut grown = Vec::new();
        match results {
            Err(e) => {
                let topics: Vec<&str> = to_grow.iter().map(|(t, _, _)| t.as_str()).collect();
                self.warn(format!(
                    "cluster {target}: could not add partitions to remote topics [{}]: {e}",
                    topics.join(", ")
                ));
            }
            Ok(results) => {
                for r in results {
                    match r {
                        Ok(name) => {
                            if let Some(g) = to_grow.iter().find(|(t, _, _)| *t == name) {
                                grown.push(g.clone());
                            }
                        }
                        Err((_, RDKafkaErrorCode::InvalidPartitions)) => {}
                        Err((name, code)) => {
                            let (from, to) = to_grow
                                .iter()
                                .find(|(t, _, _)| *t == name)
                                .map_or((0, 0), |(_, f, t)| (*f, *t));
                            self.warn(format!(
                                "cluster {target}: could not grow remote topic {name} from \
                                 {from} to {to} partitions: {code:?}"
                            ))
                        }
                    }
                }
            }
        }
        grown
    }

    // -----------------------------------------------------------------------------------------
    // Periodic syncs
    // -----------------------------------------------------------------------------------------

    fn last_run(&mut self, state: &dyn StateStore, key: &str) -> Option<serde_json::Value> {
        match state.get(key) {
            Ok(v) => v,
            Err(e) => {
                // Losing the timestamp only means an early sync.
                self.warn(format!("{e}; treating the sync as never run"));
                None
            }
        }
    }

    fn remember(&mut self, state: &dyn StateStore, key: &str, value: serde_json::Value) {
        if let Err(e) = state.put(key, &value) {
            self.warn(format!("{e}; the sync will run again next slice"));
        }
    }

    /// §6.5 periodic sync when due: `incrementalAlterConfigs` on the target for every source
    /// topic whose remote topic exists.
    async fn config_sync_if_due(
        &mut self,
        state: &dyn StateStore,
        state_prefix: &str,
        now_ms: i64,
        being_replicated: &[String],
        remote_topics: &BTreeMap<String, String>,
    ) -> Result<SyncRun, ConnectorError> {
        let key = format!("{state_prefix}/{CONFIG_SYNC_STATE}");
        let doc = self.last_run(state, &key);
        let last = doc.as_ref().and_then(|d| d["last_run_ms"].as_i64());
        if let Err(run) = sync_due(self.cfg.sync_topic_configs_interval, last, now_ms) {
            return Ok(run);
        }
        let described = match self.describe_source_configs(being_replicated).await {
            Ok(d) => d,
            Err(e) => {
                return Ok(SyncRun::Failed {
                    error: e.to_string(),
                })
            }
        };
        let mut errors = Vec::new();
        let mut changes: BTreeMap<String, Vec<(String, AlterOp)>> = BTreeMap::new();
        for (source_topic, entries) in &described {
            match entries {
                Err(e) => errors.push(format!(
                    "cluster {}: describe configs of {source_topic}: {e}",
                    self.source_alias()
                )),
                Ok(entries) => {
                    let ops = sync_mode_ops(entries, &self.cfg.config_property_filter);
                    if let (Some(remote), false) = (remote_topics.get(source_topic), ops.is_empty())
                    {
                        changes.insert(remote.clone(), ops);
                    }
                }
            }
        }
        let target = self.target_alias().to_string();
        let results = match admin_ext::incremental_alter_topic_configs(
            &self.target_admin,
            &changes,
            self.timeout,
        )
        .await
        {
            Ok(r) => r,
            // §6.5: an unsupported API is a connector error, not a log line.
            Err(e @ AdminError::UnsupportedVersion { .. }) => {
                return Err(ConnectorError::request(
                    &target,
                    "incrementalAlterConfigs",
                    e,
                ))
            }
            Err(e) => {
                return Ok(SyncRun::Failed {
                    error: format!("cluster {target}: incrementalAlterConfigs: {e}"),
                })
            }
        };
        let (mut topics, mut set, mut deleted) = (0, 0, 0);
        for (remote, result) in results {
            match result {
                Ok(()) => {
                    let ops = &changes[&remote];
                    topics += 1;
                    set += ops
                        .iter()
                        .filter(|(_, o)| matches!(o, AlterOp::Set(_)))
                        .count();
                    deleted += ops.iter().filter(|(_, o)| *o == AlterOp::Delete).count();
                }
                Err(e) => errors.push(format!(
                    "cluster {target}: could not alter configuration of {remote}: {e}"
                )),
            }
        }
        for e in &errors {
            tracing::warn!("{e}");
        }
        self.remember(state, &key, json!({ "last_run_ms": now_ms }));
        Ok(SyncRun::Ran {
            topics,
            set,
            deleted,
            errors,
        })
    }

    /// §6.6 ACL sync when due. A source without an authorizer skips the sync; the hint to turn
    /// it off is given once per flow (remembered in the state store), as Java logs it once.
    async fn acl_sync_if_due(
        &mut self,
        state: &dyn StateStore,
        state_prefix: &str,
        now_ms: i64,
    ) -> Result<SyncRun, ConnectorError> {
        let key = format!("{state_prefix}/{ACL_SYNC_STATE}");
        let doc = self.last_run(state, &key);
        let last = doc.as_ref().and_then(|d| d["last_run_ms"].as_i64());
        let hint_given = doc
            .as_ref()
            .and_then(|d| d["security_disabled_hint_given"].as_bool())
            .unwrap_or(false);
        if let Err(run) = sync_due(self.cfg.sync_topic_acls_interval, last, now_ms) {
            return Ok(run);
        }
        let source = self.source_alias().to_string();
        let target = self.target_alias().to_string();
        let bindings = match admin_ext::describe_topic_acls(&self.source_admin, self.timeout).await
        {
            Ok(b) => b,
            Err(AdminError::SecurityDisabled(message)) => {
                if hint_given {
                    tracing::debug!(cluster = %source, "security disabled; skipping topic ACL sync");
                } else {
                    self.warn(format!("cluster {source}: {SECURITY_DISABLED_HINT}"));
                }
                self.remember(
                    state,
                    &key,
                    json!({ "last_run_ms": now_ms, "security_disabled_hint_given": true }),
                );
                return Ok(SyncRun::Skipped {
                    reason: format!("cluster {source}: {message}"),
                });
            }
            Err(e) => {
                return Ok(SyncRun::Failed {
                    error: format!("cluster {source}: describeAcls: {e}"),
                })
            }
        };
        let cfg = self.cfg;
        // §6.2 on the ACL's topic name, whether or not that topic exists (yet), as in Java.
        let replicate = |topic: &str| {
            should_replicate_source_topic(
                &cfg.common.policy,
                &cfg.topic_filter,
                topic,
                &target,
                cfg.heartbeats_replication_enabled,
            )
        };
        let wanted = target_acl_bindings(&bindings, replicate, &cfg.common.policy, &source);
        let mut errors = Vec::new();
        let mut created_on = BTreeSet::new();
        let mut set = 0;
        if !wanted.is_empty() {
            match admin_ext::create_acls(&self.target_admin, &wanted, self.timeout).await {
                Ok(results) => {
                    for (binding, r) in wanted.iter().zip(results) {
                        match r {
                            Ok(()) => {
                                set += 1;
                                created_on.insert(binding.name.clone());
                            }
                            Err(e) => errors.push(format!(
                                "cluster {target}: could not create ACL {} {} {} for {} on {}: {e}",
                                binding.permission,
                                binding.operation,
                                binding.name,
                                binding.principal,
                                binding.host
                            )),
                        }
                    }
                }
                Err(e) => {
                    return Ok(SyncRun::Failed {
                        error: format!("cluster {target}: createAcls: {e}"),
                    })
                }
            }
        }
        for e in &errors {
            tracing::warn!("{e}");
        }
        self.remember(
            state,
            &key,
            json!({ "last_run_ms": now_ms, "security_disabled_hint_given": hint_given }),
        );
        Ok(SyncRun::Ran {
            topics: created_on.len(),
            set,
            deleted: 0,
            errors,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Side {
    Source,
    Target,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::values::parse_list;
    use crate::filter::{UseDefaultsFrom, DEFAULT_CONFIG_PROPERTIES_EXCLUDE};

    fn entry(name: &str, value: &str, source: ConfigValueSource) -> TopicConfigEntry {
        TopicConfigEntry {
            name: name.into(),
            value: Some(value.into()),
            source,
            read_only: false,
            sensitive: false,
        }
    }

    fn filter(extra_exclude: &[&str], defaults: UseDefaultsFrom) -> ConfigPropertyFilter {
        let mut exclude = parse_list(DEFAULT_CONFIG_PROPERTIES_EXCLUDE);
        exclude.extend(extra_exclude.iter().map(|s| s.to_string()));
        ConfigPropertyFilter::new(&exclude, defaults).unwrap()
    }

    /// The three entries of MirrorSourceConnectorTest's config tests.
    fn java_test_entries() -> Vec<TopicConfigEntry> {
        vec![
            entry("name-1", "value-1", ConfigValueSource::DynamicTopic),
            entry("name-2", "value-2", ConfigValueSource::Default),
            entry("min.insync.replicas", "2", ConfigValueSource::DynamicTopic),
        ]
    }

    fn names(ops: &[(String, AlterOp)]) -> Vec<&str> {
        ops.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn sync_mode_keeps_defaults_and_drops_excluded() {
        // §12.4 #38, incremental=true: name-1 and name-2 kept, min.insync.replicas dropped.
        let entries = java_test_entries();
        let ops = sync_mode_ops(&entries, &filter(&[], UseDefaultsFrom::Target));
        assert_eq!(names(&ops), vec!["name-1", "name-2"]);
        // §6.5: a source default becomes DELETE with use.defaults.from=target (§13 item 25) …
        assert_eq!(ops[0].1, AlterOp::Set("value-1".into()));
        assert_eq!(ops[1].1, AlterOp::Delete);
        // … and SET of the source value with use.defaults.from=source.
        let ops = sync_mode_ops(&entries, &filter(&[], UseDefaultsFrom::Source));
        assert_eq!(ops[1], ("name-2".into(), AlterOp::Set("value-2".into())));
    }

    #[test]
    fn create_mode_defaults_follow_use_defaults_from() {
        // §12.4 #38, incremental=false.
        let entries = java_test_entries();
        let target = create_mode_configs(&entries, &filter(&[], UseDefaultsFrom::Target));
        assert_eq!(target.keys().collect::<Vec<_>>(), vec!["name-1"]);
        let source = create_mode_configs(&entries, &filter(&[], UseDefaultsFrom::Source));
        assert_eq!(source.keys().collect::<Vec<_>>(), vec!["name-1", "name-2"]);
        assert_eq!(source["name-2"], "value-2");
    }

    #[test]
    fn create_mode_honours_extra_excludes() {
        // §12.4 #39: exclude = defaults + exclude_param.* -> only name-1 reaches the new topic.
        let mut entries = java_test_entries();
        entries.push(entry(
            "exclude_param.param1",
            "x",
            ConfigValueSource::DynamicTopic,
        ));
        let configs = create_mode_configs(
            &entries,
            &filter(&["exclude_param.*"], UseDefaultsFrom::Target),
        );
        assert_eq!(configs.len(), 1, "{configs:?}");
        assert_eq!(configs["name-1"], "value-1");
        let ops = sync_mode_ops(
            &entries,
            &filter(&["exclude_param.*"], UseDefaultsFrom::Target),
        );
        assert!(!names(&ops).contains(&"exclude_param.param1"));
    }

    #[test]
    fn read_only_sensitive_and_static_broker_entries_never_copied() {
        // §6.5 first two bullets; dynamic broker defaults are NOT defaults and are copied.
        let mut ro = entry("ro", "1", ConfigValueSource::DynamicTopic);
        ro.read_only = true;
        let mut secret = entry("secret", "s", ConfigValueSource::DynamicTopic);
        secret.sensitive = true;
        let entries = vec![
            ro,
            secret,
            entry("static", "1", ConfigValueSource::StaticBroker),
            entry(
                "cluster.default",
                "7",
                ConfigValueSource::DynamicDefaultBroker,
            ),
            entry("broker.dynamic", "8", ConfigValueSource::DynamicBroker),
        ];
        let f = filter(&[], UseDefaultsFrom::Target);
        let configs = create_mode_configs(&entries, &f);
        assert_eq!(
            configs.keys().collect::<Vec<_>>(),
            vec!["broker.dynamic", "cluster.default"]
        );
        let ops = sync_mode_ops(&entries, &f);
        assert_eq!(names(&ops), vec!["cluster.default", "broker.dynamic"]);
        assert!(ops.iter().all(|(_, o)| matches!(o, AlterOp::Set(_))));
    }

    #[test]
    fn entries_without_value_are_not_sent() {
        let mut none = entry("empty", "", ConfigValueSource::DynamicTopic);
        none.value = None;
        let f = filter(&[], UseDefaultsFrom::Source);
        assert!(create_mode_configs(&[none.clone()], &f).is_empty());
        assert!(sync_mode_ops(&[none.clone()], &f).is_empty());
        // A null default still reverts with use.defaults.from=target (DELETE needs no value).
        none.source = ConfigValueSource::Default;
        let ops = sync_mode_ops(&[none], &filter(&[], UseDefaultsFrom::Target));
        assert_eq!(ops, vec![("empty".to_string(), AlterOp::Delete)]);
    }

    fn acl(name: &str, pattern: PatternType, op: AclOperation, perm: AclPermission) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            name: name.into(),
            pattern_type: pattern,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: op,
            permission: perm,
        }
    }

    #[test]
    fn acl_bindings_are_filtered_and_downgraded() {
        // §12.4 #35 and §13 item 24.
        let policy = ReplicationPolicy::default_policy();
        let all = |_: &str| true;
        let allow_write = acl(
            "test_topic",
            PatternType::Literal,
            AclOperation::Write,
            AclPermission::Allow,
        );
        assert!(target_acl_bindings(&[allow_write], all, &policy, "source").is_empty());

        let allow_all = acl(
            "test_topic",
            PatternType::Literal,
            AclOperation::All,
            AclPermission::Allow,
        );
        let out = target_acl_bindings(&[allow_all], all, &policy, "source");
        assert_eq!(
            out,
            vec![acl(
                "source.test_topic",
                PatternType::Literal,
                AclOperation::Read,
                AclPermission::Allow
            )]
        );

        let deny_all = acl(
            "test_topic",
            PatternType::Literal,
            AclOperation::All,
            AclPermission::Deny,
        );
        let out = target_acl_bindings(&[deny_all], all, &policy, "source");
        assert_eq!(
            out,
            vec![acl(
                "source.test_topic",
                PatternType::Literal,
                AclOperation::All,
                AclPermission::Deny
            )]
        );

        // DENY WRITE is copied; only ALLOW WRITE is dropped.
        let deny_write = acl(
            "t",
            PatternType::Literal,
            AclOperation::Write,
            AclPermission::Deny,
        );
        assert_eq!(
            target_acl_bindings(&[deny_write], all, &policy, "source").len(),
            1
        );
    }

    #[test]
    fn acl_bindings_only_literal_topics_that_are_replicated() {
        // §6.6: PREFIXED patterns, non-topic resources and filtered topics are not synced.
        let policy = ReplicationPolicy::default_policy();
        let read = |name: &str, p| acl(name, p, AclOperation::Read, AclPermission::Allow);
        let mut group = read("g", PatternType::Literal);
        group.resource_type = ResourceType::Group;
        let input = vec![
            read("keep", PatternType::Literal),
            read("pre", PatternType::Prefixed),
            group,
            read("filtered", PatternType::Literal),
        ];
        let out = target_acl_bindings(&input, |t| t != "filtered", &policy, "A");
        assert_eq!(out, vec![read("A.keep", PatternType::Literal)]);
    }

    fn topics(pairs: &[(&str, i32)]) -> BTreeMap<String, i32> {
        pairs.iter().map(|(t, n)| (t.to_string(), *n)).collect()
    }

    #[test]
    fn plan_creates_missing_remote_topics_once() {
        // §12.4 #41: source topic-0 without a remote topic -> create `source.topic` (1 partition);
        // once it exists, nothing more to do.
        let policy = ReplicationPolicy::default_policy();
        let source = topics(&[("topic", 1)]);
        let plan = plan_topics(
            &source,
            &BTreeMap::new(),
            &policy,
            "source",
            "source.checkpoints.internal",
        );
        assert_eq!(
            plan.to_create,
            vec![("topic".into(), "source.topic".into(), 1)]
        );
        assert!(plan.being_replicated.is_empty());
        assert_eq!(plan.remote_topics["topic"], "source.topic");

        let target = topics(&[("source.topic", 1)]);
        let plan = plan_topics(
            &source,
            &target,
            &policy,
            "source",
            "source.checkpoints.internal",
        );
        assert!(plan.to_create.is_empty() && plan.to_grow.is_empty());
        assert_eq!(plan.being_replicated, vec!["topic".to_string()]);
    }

    #[test]
    fn plan_ignores_target_only_topics_and_grows_smaller_ones() {
        // §12.4 #42: a target-only remote topic with an empty source does nothing.
        let policy = ReplicationPolicy::default_policy();
        let target = topics(&[("source.topic", 1), ("source.big", 8)]);
        let plan = plan_topics(&BTreeMap::new(), &target, &policy, "source", "x");
        assert_eq!(plan, TopicPlan::default());
        // §6.4/§13 item 26: grow smaller remote topics, never shrink bigger ones.
        let source = topics(&[("topic", 3), ("big", 2)]);
        let plan = plan_topics(&source, &target, &policy, "source", "x");
        assert_eq!(plan.to_grow, vec![("source.topic".into(), 1, 3)]);
        assert!(plan.to_create.is_empty());
    }

    #[test]
    fn plan_known_target_topics_follow_topic_source() {
        // §6.3: with the identity policy, a same-named target topic is known only if the policy
        // attributes it to this source; the checkpoints topic never counts.
        let mut props = Props::new();
        props.insert(
            "replication.policy.class".into(),
            "IdentityReplicationPolicy".into(),
        );
        props.insert("source.cluster.alias".into(), "A".into());
        let identity = ReplicationPolicy::from_props(&props).unwrap();
        let source = topics(&[("orders", 2)]);
        let target = topics(&[("orders", 2)]);
        let plan = plan_topics(&source, &target, &identity, "A", "A.checkpoints.internal");
        assert!(plan.to_create.is_empty());
        assert_eq!(plan.remote_topics["orders"], "orders");

        let default = ReplicationPolicy::default_policy();
        let source = topics(&[("checkpoints.internal", 1)]);
        let target = topics(&[("A.checkpoints.internal", 1)]);
        let plan = plan_topics(&source, &target, &default, "A", "A.checkpoints.internal");
        assert_eq!(
            plan.to_create.len(),
            1,
            "the checkpoints topic is not a known remote topic"
        );
    }

    #[test]
    fn partitions_are_listed_by_topic_then_partition() {
        // §6.7 list order, then the round robin of §6.7's example.
        let listed = expand_partitions(&topics(&[("t1", 2), ("t0", 8), ("t2", 2)]));
        assert_eq!(listed[0], ("t0".to_string(), 0));
        assert_eq!(listed[8], ("t1".to_string(), 0));
        assert_eq!(listed.len(), 12);
        let tasks = crate::config::connector::assign_partitions_round_robin(&listed, 3);
        let fmt = |t: &Vec<(String, i32)>| {
            t.iter()
                .map(|(t, p)| format!("{t}-{p}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(fmt(&tasks[0]), "t0-0,t0-3,t0-6,t1-1");
        assert_eq!(fmt(&tasks[1]), "t0-1,t0-4,t0-7,t2-0");
        assert_eq!(fmt(&tasks[2]), "t0-2,t0-5,t1-0,t2-1");
    }

    #[test]
    fn sync_schedule_across_slices() {
        let ten_min = Some(Duration::from_secs(600));
        assert_eq!(sync_due(None, None, 0), Err(SyncRun::Disabled));
        assert_eq!(sync_due(ten_min, None, 5), Ok(()));
        assert_eq!(
            sync_due(ten_min, Some(1_000), 1_000 + 599_999),
            Err(SyncRun::NotDue {
                next_due_ms: 601_000
            })
        );
        assert_eq!(sync_due(ten_min, Some(1_000), 601_000), Ok(()));
        // Clock went backwards: run rather than wait for an unknowable time.
        assert_eq!(sync_due(ten_min, Some(1_000), 999), Ok(()));
        // Interval 0: every slice.
        assert_eq!(sync_due(Some(Duration::ZERO), Some(5), 5), Ok(()));
    }
}
