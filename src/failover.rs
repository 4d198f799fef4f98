//! Consumer-group failover: translate a group's offsets through the checkpoints of a flow and
//! (optionally) commit them to the target cluster.
//!
//! Why this exists: offsets are not preserved by replication (mm2-compat §13 #4), so a consumer
//! group that moves from cluster A to cluster B must not resume at its A offsets. MM2's answer is
//! the checkpoint topic `A.checkpoints.internal` on B (§4.3): per group and renamed partition
//! (`A.t-0`), the downstream offset to resume at. Java operators read it with
//! `RemoteClusterUtils.translateOffsets(targetProps, "A", group, timeout)` (§10) and then commit
//! the result themselves, or rely on `sync.group.offsets.enabled` (§8.6).
//!
//! * [`translate_offsets`] is `translateOffsets`: read partition 0 of the checkpoints topic from
//!   the beginning to its end, keep the records of one group, last record per partition wins
//!   (whatever its upstream offset, §13 #30).
//! * [`failover`] shows those offsets next to the target group's current commits and, when
//!   asked, commits them with `alterConsumerGroupOffsets`.
//!
//! Deliberate differences from Java, all towards "fail loudly rather than move consumers to
//! the wrong place":
//!
//! * Java returns whatever it read when the timeout passes; we fail, because a partial read may
//!   miss the latest checkpoint of a partition.
//! * Java crashes on a tombstone (null key or value, §4.6, §13 #21) and on a negative
//!   downstream offset (`OffsetAndMetadata` rejects it); we skip such records with a warning,
//!   like malformed ones (which Java also skips).
//! * A missing checkpoints topic is an error naming it, not an empty answer.
//! * Unlike §8.6 (which lets the broker reject commits to busy groups, §13 #8), `failover
//!   --apply` refuses up front when the target group has members, and reports any partition the
//!   broker still rejects.
//! * Like §8.6 it never rewinds a partition where the target group is already further ahead —
//!   its consumers may have processed those records on the target already — unless
//!   [`FailoverOptions::allow_rewind`] says the operator wants exactly the translated positions.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::config::mm2::is_client_config_name;
use crate::config::{ConfigError, MirrorMakerConfig, Props, SourceAndTarget};
use crate::kafka::admin_ext::{
    alter_consumer_group_offsets, describe_consumer_groups, list_consumer_group_offsets,
    AdminError, GroupState,
};
use crate::kafka::internal_log::{self, LogError, BEGINNING};
use crate::kafka::probe::{connections, require_answer};
use crate::kafka::ClientError;
use crate::plan::select_pairs;
use crate::policy::ReplicationPolicy;
use crate::wire::checkpoint::Checkpoint;

/// One partition's translated position, as `translateOffsets` returns it
/// (`TopicPartition → OffsetAndMetadata`). The topic is the target-side name (`A.t`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TranslatedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// The upstream group's commit metadata, `""` when there was none.
    pub metadata: String,
}

/// Everything learned from one read of the checkpoints topic for one group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Translation {
    /// `checkpointsTopic(source)` on the target, e.g. `A.checkpoints.internal`.
    pub checkpoints_topic: String,
    /// Sorted by topic, then partition.
    pub offsets: Vec<TranslatedOffset>,
    /// Records that did not decode, or decoded to a negative offset for this group (skipped).
    pub malformed_records: usize,
    /// Records with a null key or value (skipped; Java would crash, §4.6).
    pub tombstones: usize,
    /// All records read, of every group.
    pub records_read: usize,
}

/// Settings of [`failover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailoverOptions {
    /// Commit the plan to the target group (otherwise only show it).
    pub apply: bool,
    /// Also move partitions where the target group is already ahead of the translated offset
    /// back to the translated offset.
    pub allow_rewind: bool,
    /// Bound for each broker request, and for reading the checkpoints topic to its end.
    pub timeout: Duration,
}

/// What [`failover`] does with one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionAction {
    /// The target group has no offset there (or a null one), or a lower one: commit.
    Commit,
    /// The target group is already exactly at the translated offset: nothing to do.
    Unchanged,
    /// The target group is ahead and `--allow-rewind` was not given: left as it is (warning).
    KeepHigher,
    /// The target group is ahead and `--allow-rewind` was given: moved back.
    Rewind,
}

impl PartitionAction {
    /// Whether the partition is part of the commit.
    pub fn commits(self) -> bool {
        matches!(self, PartitionAction::Commit | PartitionAction::Rewind)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PartitionAction::Commit => "commit",
            PartitionAction::Unchanged => "unchanged",
            PartitionAction::KeepHigher => "keep-higher",
            PartitionAction::Rewind => "rewind",
        }
    }
}

/// One translated partition in a [`FailoverPlan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionPlan {
    pub topic: String,
    pub partition: i32,
    /// The translated (checkpointed downstream) offset.
    pub offset: i64,
    pub metadata: String,
    /// The target group's committed offset before failover; `None` when it has none, or a null
    /// one (−1, written by some non-Java clients).
    pub current_offset: Option<i64>,
    pub action: PartitionAction,
}

/// A committed offset of the target group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommittedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub metadata: String,
}

/// The result of [`failover`]: what would be (or was) committed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailoverPlan {
    /// `S->T`.
    pub flow: String,
    pub group: String,
    /// The target cluster alias, where the group's offsets are committed.
    pub target: String,
    pub checkpoints_topic: String,
    /// The translated partitions, sorted by topic and partition.
    pub offsets: Vec<PartitionPlan>,
    /// `describeConsumerGroups` state of the target group (`EMPTY`, `DEAD`, `STABLE`, …).
    pub target_state: String,
    /// Active members of the target group.
    pub target_members: usize,
    /// Every committed offset of the target group before failover, translated partitions or
    /// not (others are never touched).
    pub current_target_offsets: Vec<CommittedOffset>,
    pub allow_rewind: bool,
    /// Whether the offsets were committed (`--apply` succeeded).
    pub applied: bool,
    /// Partitions committed (0 without `--apply`).
    pub committed: usize,
    pub malformed_records: usize,
    pub tombstones: usize,
    /// Human-readable warnings (partitions kept ahead, skipped records, no checkpoints).
    pub warnings: Vec<String>,
}

impl FailoverPlan {
    /// Partitions that `--apply` commits.
    pub fn to_commit(&self) -> impl Iterator<Item = &PartitionPlan> {
        self.offsets.iter().filter(|p| p.action.commits())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FailoverError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(
        "checkpoints topic {topic} does not exist on cluster {cluster}: no checkpoints were \
         written for flow {flow} (is emit.checkpoints.enabled on, and has a slice run?)"
    )]
    NoCheckpointsTopic {
        topic: String,
        cluster: String,
        flow: String,
    },
    #[error("cluster {cluster}: {source}")]
    Read {
        cluster: String,
        #[source]
        source: Box<LogError>,
    },
    #[error("cluster {cluster}: {what} for group {group}: {source}")]
    Admin {
        cluster: String,
        what: &'static str,
        group: String,
        #[source]
        source: AdminError,
    },
    #[error(
        "refusing to commit offsets: consumer group {group} on cluster {cluster} is in use \
         ({members} active member(s), state {state}); stop every consumer of the group on \
         {cluster} and retry"
    )]
    ActiveMembers {
        group: String,
        cluster: String,
        state: String,
        members: usize,
    },
    #[error(
        "refusing to commit offsets: {topic} on cluster {cluster} holds no checkpoints for \
         consumer group {group} (check the group name, and that the flow's groups filter \
         includes it)"
    )]
    NoCheckpoints {
        group: String,
        topic: String,
        cluster: String,
    },
    #[error(
        "committing offsets of group {group} on cluster {cluster}: {} of {attempted} partition(s) \
         rejected: {}",
        failures.len(),
        failures.iter().map(|(t, p, e)| format!("{t}-{p}: {e}")).collect::<Vec<_>>().join("; ")
    )]
    CommitFailed {
        group: String,
        cluster: String,
        attempted: usize,
        failures: Vec<(String, i32, String)>,
    },
}

impl FailoverError {
    /// Whether the configuration (file, flow, client settings) is at fault: the CLI exits 2.
    pub fn is_config(&self) -> bool {
        let client_config = |e: &ClientError| {
            matches!(
                e,
                ClientError::Unsupported { .. } | ClientError::Build { .. }
            )
        };
        match self {
            FailoverError::Config(_) => true,
            FailoverError::Client(e) => client_config(e),
            FailoverError::Read { source, .. } => match source.as_ref() {
                LogError::Client(e) => client_config(e),
                _ => false,
            },
            _ => false,
        }
    }
}

/// `RemoteClusterUtils.translateOffsets(clientConfig(target), source, group, timeout)` for the
/// herder pair `flow`: the group's latest checkpoint per target partition.
pub async fn translate_offsets(
    mm: &MirrorMakerConfig,
    flow: &SourceAndTarget,
    group: &str,
    timeout: Duration,
) -> Result<Vec<TranslatedOffset>, FailoverError> {
    Ok(read_translation(mm, flow, group, timeout).await?.offsets)
}

/// [`translate_offsets`] with the read's bookkeeping (topic name, skipped records).
pub async fn read_translation(
    mm: &MirrorMakerConfig,
    flow: &SourceAndTarget,
    group: &str,
    timeout: Duration,
) -> Result<Translation, FailoverError> {
    let client = TargetClient::new(mm, flow)?;
    client.probe(&flow.target, timeout).await?;
    let topic = client.policy.checkpoints_topic(&flow.source);
    let read_err = |source| FailoverError::Read {
        cluster: flow.target.clone(),
        source: Box::new(source),
    };
    match internal_log::partition_count(&client.consumer, &topic, timeout).await {
        Ok(_) => {}
        Err(LogError::UnknownTopic { .. }) => {
            return Err(FailoverError::NoCheckpointsTopic {
                topic,
                cluster: flow.target.clone(),
                flow: flow.to_string(),
            })
        }
        Err(e) => return Err(read_err(e)),
    }
    // Like MirrorClient: partition 0 only, from the beginning (§13 #20).
    let mut fold = CheckpointFold::new(group);
    internal_log::read_to_end_with(
        &client.consumer,
        &topic,
        &BTreeMap::from([(0, BEGINNING)]),
        timeout,
        |r| fold.record(r.offset, r.key, r.value),
    )
    .await
    .map_err(read_err)?;
    Ok(fold.finish(topic))
}

/// Translate the group's offsets and show them next to the target group's commits; with
/// `opts.apply`, commit them (see the module docs for the rules).
pub async fn failover(
    mm: &MirrorMakerConfig,
    flow: &SourceAndTarget,
    group: &str,
    opts: &FailoverOptions,
) -> Result<FailoverPlan, FailoverError> {
    let translation = read_translation(mm, flow, group, opts.timeout).await?;
    let client = TargetClient::new(mm, flow)?;
    let admin = crate::kafka::shared_admin(&client.admin_role, &client.admin)?;
    let admin_err = |what, source| FailoverError::Admin {
        cluster: flow.target.clone(),
        what,
        group: group.to_string(),
        source,
    };

    let described = describe_consumer_groups(&admin, &[group.to_string()], opts.timeout)
        .await
        .map_err(|e| admin_err("describeConsumerGroups", e))?;
    let (state, members) = match described.into_iter().next().map(|(_, d)| d) {
        Some(Ok(d)) => (d.state, d.members),
        // Some brokers answer "no such group" instead of DEAD.
        Some(Err(e)) if e.code() == Some("GROUP_ID_NOT_FOUND") => (GroupState::Dead, 0),
        Some(Err(e)) => return Err(admin_err("describeConsumerGroups", e)),
        None => (GroupState::Dead, 0),
    };
    let current = list_consumer_group_offsets(&admin, group, opts.timeout)
        .await
        .map_err(|e| admin_err("listConsumerGroupOffsets", e))?;

    let offsets = plan_partitions(&translation.offsets, &current, opts.allow_rewind);
    let mut warnings = Vec::new();
    if translation.offsets.is_empty() {
        warnings.push(format!(
            "{} holds no checkpoints for group {group}",
            translation.checkpoints_topic
        ));
    }
    if translation.malformed_records > 0 {
        warnings.push(format!(
            "{} malformed record(s) in {} skipped",
            translation.malformed_records, translation.checkpoints_topic
        ));
    }
    if translation.tombstones > 0 {
        warnings.push(format!(
            "{} tombstone(s) in {} skipped (Java MM2 clients crash on these)",
            translation.tombstones, translation.checkpoints_topic
        ));
    }
    for p in &offsets {
        let now = p.current_offset.unwrap_or(-1);
        match p.action {
            PartitionAction::KeepHigher => warnings.push(format!(
                "{}-{}: target group is at {now}, ahead of the translated offset {}; not \
                 rewound (use --allow-rewind to rewind)",
                p.topic, p.partition, p.offset
            )),
            PartitionAction::Rewind => warnings.push(format!(
                "{}-{}: target group is at {now}, ahead of the translated offset {}; rewinding \
                 (--allow-rewind): records in between will be consumed again",
                p.topic, p.partition, p.offset
            )),
            _ => {}
        }
    }

    let mut plan = FailoverPlan {
        flow: flow.to_string(),
        group: group.to_string(),
        target: flow.target.clone(),
        checkpoints_topic: translation.checkpoints_topic.clone(),
        offsets,
        target_state: state.as_str().to_string(),
        target_members: members,
        current_target_offsets: current
            .into_iter()
            .map(|(topic, partition, offset, metadata)| CommittedOffset {
                topic,
                partition,
                offset,
                metadata,
            })
            .collect(),
        allow_rewind: opts.allow_rewind,
        applied: false,
        committed: 0,
        malformed_records: translation.malformed_records,
        tombstones: translation.tombstones,
        warnings,
    };
    if !opts.apply {
        return Ok(plan);
    }

    if plan.offsets.is_empty() {
        return Err(FailoverError::NoCheckpoints {
            group: group.to_string(),
            topic: plan.checkpoints_topic,
            cluster: flow.target.clone(),
        });
    }
    check_idle(group, &flow.target, state, members)?;
    let commit: Vec<(String, i32, i64, String)> = plan
        .to_commit()
        .map(|p| (p.topic.clone(), p.partition, p.offset, p.metadata.clone()))
        .collect();
    let results = alter_consumer_group_offsets(&admin, group, &commit, opts.timeout)
        .await
        .map_err(|e| admin_err("alterConsumerGroupOffsets", e))?;
    let failures: Vec<(String, i32, String)> = results
        .into_iter()
        .filter_map(|((t, p), r)| r.err().map(|e| (t, p, e.to_string())))
        .collect();
    if !failures.is_empty() {
        return Err(FailoverError::CommitFailed {
            group: group.to_string(),
            cluster: flow.target.clone(),
            attempted: commit.len(),
            failures,
        });
    }
    plan.applied = true;
    plan.committed = commit.len();
    Ok(plan)
}

/// The clients of `MirrorClient` for the target of `flow` (§10): settings from
/// `clientConfig(target)`, the replication policy from the same props.
struct TargetClient {
    policy: ReplicationPolicy,
    consumer: Props,
    admin: Props,
    admin_role: String,
}

impl TargetClient {
    fn new(mm: &MirrorMakerConfig, flow: &SourceAndTarget) -> Result<Self, FailoverError> {
        // The flow must be a herder pair: anything else has no checkpoints of ours.
        select_pairs(mm, &[], Some(flow))?;
        let props = mm.client_config(&flow.target)?;
        let policy = ReplicationPolicy::from_props(&props)?;
        let client_id = format!("mirrorslice-failover|{}", flow.target);
        let mut consumer = role_props(&props, "consumer");
        consumer.insert("client.id".into(), client_id.clone());
        let mut admin = role_props(&props, "admin");
        admin.insert("client.id".into(), client_id);
        Ok(TargetClient {
            policy,
            consumer,
            admin,
            admin_role: format!("failover {flow} admin on {}", flow.target),
        })
    }
}

impl TargetClient {
    /// Connects as the consumer and the admin before reading: a rejected password or
    /// certificate fails at once, naming the cluster and the cause, instead of ending the
    /// read at `timeout` with librdkafka's "timed out".
    async fn probe(&self, cluster: &str, timeout: Duration) -> Result<(), FailoverError> {
        for c in connections(&self.admin, &[("consumer", &self.consumer)]) {
            require_answer(cluster, &c.what, &self.admin_role, &c.props, timeout).await?;
        }
        Ok(())
    }
}

/// `MirrorClientConfig.{consumer,admin}Config`: the client config names (bootstrap, security,
/// ssl, sasl), overridden by the same names under `<role>.`; anything else under `<role>.` is
/// dropped, as in Java (§13 #32) — except our `rdkafka.*` escape hatch for librdkafka tuning.
fn role_props(props: &Props, role: &str) -> Props {
    let mut out: Props = props
        .iter()
        .filter(|(k, _)| is_client_config_name(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let prefix = format!("{role}.");
    for (k, v) in props {
        if let Some(name) = k.strip_prefix(&prefix) {
            if is_client_config_name(name) || name.starts_with("rdkafka.") {
                out.insert(name.to_string(), v.clone());
            }
        }
    }
    out
}

/// Folds checkpoint records into the latest translation per partition for one group.
struct CheckpointFold {
    group: String,
    latest: BTreeMap<(String, i32), (i64, String)>,
    malformed: usize,
    tombstones: usize,
    records: usize,
}

impl CheckpointFold {
    fn new(group: &str) -> Self {
        CheckpointFold {
            group: group.to_string(),
            latest: BTreeMap::new(),
            malformed: 0,
            tombstones: 0,
            records: 0,
        }
    }

    fn record(&mut self, offset: i64, key: Option<&[u8]>, value: Option<&[u8]>) {
        self.records += 1;
        let (Some(key), Some(value)) = (key, value) else {
            tracing::warn!(
                offset,
                "checkpoint record with a null key or value (tombstone) skipped; Java MM2 \
                 clients crash on these"
            );
            self.tombstones += 1;
            return;
        };
        match Checkpoint::decode(key, value) {
            Ok(c) if c.consumer_group_id != self.group => {}
            Ok(c) if c.downstream_offset < 0 => {
                tracing::warn!(offset, checkpoint = %c, "checkpoint with a negative offset skipped");
                self.malformed += 1;
            }
            Ok(c) => {
                self.latest
                    .insert((c.topic, c.partition), (c.downstream_offset, c.metadata));
            }
            Err(e) => {
                tracing::warn!(offset, error = %e, "checkpoint record that does not decode skipped");
                self.malformed += 1;
            }
        }
    }

    fn finish(self, checkpoints_topic: String) -> Translation {
        Translation {
            checkpoints_topic,
            offsets: self
                .latest
                .into_iter()
                .map(
                    |((topic, partition), (offset, metadata))| TranslatedOffset {
                        topic,
                        partition,
                        offset,
                        metadata,
                    },
                )
                .collect(),
            malformed_records: self.malformed,
            tombstones: self.tombstones,
            records_read: self.records,
        }
    }
}

/// Decide per translated partition, given the target group's `(topic, partition, offset,
/// metadata)` commits (−1 = null).
fn plan_partitions(
    translated: &[TranslatedOffset],
    current: &[(String, i32, i64, String)],
    allow_rewind: bool,
) -> Vec<PartitionPlan> {
    let now: BTreeMap<(&str, i32), i64> = current
        .iter()
        .filter(|c| c.2 >= 0)
        .map(|c| ((c.0.as_str(), c.1), c.2))
        .collect();
    translated
        .iter()
        .map(|t| {
            let current_offset = now.get(&(t.topic.as_str(), t.partition)).copied();
            let action = match current_offset {
                None => PartitionAction::Commit,
                Some(c) if c < t.offset => PartitionAction::Commit,
                Some(c) if c == t.offset => PartitionAction::Unchanged,
                Some(_) if allow_rewind => PartitionAction::Rewind,
                Some(_) => PartitionAction::KeepHigher,
            };
            PartitionPlan {
                topic: t.topic.clone(),
                partition: t.partition,
                offset: t.offset,
                metadata: t.metadata.clone(),
                current_offset,
                action,
            }
        })
        .collect()
}

/// Only a group nobody consumes in may be moved: `EMPTY` or `DEAD` (does not exist), with no
/// members. Rebalancing states count as active even when the member list is momentarily empty.
fn check_idle(
    group: &str,
    cluster: &str,
    state: GroupState,
    members: usize,
) -> Result<(), FailoverError> {
    if members == 0 && matches!(state, GroupState::Empty | GroupState::Dead) {
        Ok(())
    } else {
        Err(FailoverError::ActiveMembers {
            group: group.to_string(),
            cluster: cluster.to_string(),
            state: state.as_str().to_string(),
            members,
        })
    }
}

/// `translate-offsets --json`: `{"offsets":[{"topic":"A.t","partition":0,"offset":42},…]}`,
/// keys in that order, nothing else per item.
pub fn render_translation_json(offsets: &[TranslatedOffset]) -> String {
    #[derive(Serialize)]
    struct Item<'a> {
        topic: &'a str,
        partition: i32,
        offset: i64,
    }
    #[derive(Serialize)]
    struct Out<'a> {
        offsets: Vec<Item<'a>>,
    }
    let out = Out {
        offsets: offsets
            .iter()
            .map(|o| Item {
                topic: &o.topic,
                partition: o.partition,
                offset: o.offset,
            })
            .collect(),
    };
    serde_json::to_string(&out).expect("offsets serialize")
}

/// Plain-text table of a translation, for `mirrorslice translate-offsets`.
pub fn render_translation(flow: &SourceAndTarget, group: &str, t: &Translation) -> String {
    let mut out = format!(
        "Checkpoints of group {group} in {} on {} (flow {flow}):\n",
        t.checkpoints_topic, flow.target
    );
    if t.offsets.is_empty() {
        out.push_str("  (none)\n");
    } else {
        let rows: Vec<[String; 4]> = t
            .offsets
            .iter()
            .map(|o| {
                [
                    o.topic.clone(),
                    o.partition.to_string(),
                    o.offset.to_string(),
                    o.metadata.clone(),
                ]
            })
            .collect();
        out.push_str(&table(&["TOPIC", "PARTITION", "OFFSET", "METADATA"], &rows));
    }
    out.push_str(&format!(
        "{} partition(s); {} record(s) read, {} malformed and {} tombstone(s) skipped\n",
        t.offsets.len(),
        t.records_read,
        t.malformed_records,
        t.tombstones
    ));
    out
}

/// Plain-text rendering of a failover plan, for `mirrorslice failover`.
pub fn render_plan(plan: &FailoverPlan) -> String {
    let mut out = format!(
        "Failover of consumer group {} to cluster {} (flow {}, checkpoints from {})\n\
         Target group: state {}, {} member(s)\n",
        plan.group,
        plan.target,
        plan.flow,
        plan.checkpoints_topic,
        plan.target_state,
        plan.target_members
    );
    if plan.offsets.is_empty() {
        out.push_str("  (no translated offsets)\n");
    } else {
        let rows: Vec<[String; 5]> = plan
            .offsets
            .iter()
            .map(|p| {
                [
                    p.topic.clone(),
                    p.partition.to_string(),
                    p.current_offset
                        .map_or_else(|| "-".to_string(), |o| o.to_string()),
                    p.offset.to_string(),
                    p.action.as_str().to_string(),
                ]
            })
            .collect();
        out.push_str(&table(
            &["TOPIC", "PARTITION", "TARGET-NOW", "TRANSLATED", "ACTION"],
            &rows,
        ));
    }
    let untouched = plan
        .current_target_offsets
        .iter()
        .filter(|c| {
            !plan
                .offsets
                .iter()
                .any(|p| p.topic == c.topic && p.partition == c.partition)
        })
        .count();
    if untouched > 0 {
        out.push_str(&format!(
            "{untouched} other committed partition(s) of the target group are left as they are\n"
        ));
    }
    for w in &plan.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    let n = plan.to_commit().count();
    if plan.applied {
        out.push_str(&format!(
            "Applied: committed {} partition(s) to group {} on {}.\n",
            plan.committed, plan.group, plan.target
        ));
    } else {
        out.push_str(&format!(
            "Dry run: nothing committed. --apply would commit {n} partition(s).\n"
        ));
    }
    out
}

/// Left-aligned columns separated by two spaces.
fn table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (cell, w) in cells.iter().zip(widths) {
            s.push_str(&format!("  {cell:<w$}"));
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Properties;

    fn cp(group: &str, topic: &str, partition: i32, down: i64, md: &str) -> (Vec<u8>, Vec<u8>) {
        let c = Checkpoint {
            consumer_group_id: group.into(),
            topic: topic.into(),
            partition,
            upstream_offset: down * 10,
            downstream_offset: down,
            metadata: md.into(),
        };
        (c.encode_key().unwrap(), c.encode_value().unwrap())
    }

    type RawRecord = (Option<Vec<u8>>, Option<Vec<u8>>);

    fn feed(fold: &mut CheckpointFold, records: &[RawRecord]) {
        for (i, (k, v)) in records.iter().enumerate() {
            fold.record(i as i64, k.as_deref(), v.as_deref());
        }
    }

    fn some(kv: (Vec<u8>, Vec<u8>)) -> RawRecord {
        (Some(kv.0), Some(kv.1))
    }

    fn tr(topic: &str, partition: i32, offset: i64) -> TranslatedOffset {
        TranslatedOffset {
            topic: topic.into(),
            partition,
            offset,
            metadata: String::new(),
        }
    }

    // §10 remoteConsumerOffsets, §13 #30: only the group's records, last per TP wins whatever
    // its upstream offset; sorted by topic then partition.
    #[test]
    fn fold_keeps_latest_checkpoint_per_partition_of_the_group() {
        let mut fold = CheckpointFold::new("g");
        feed(
            &mut fold,
            &[
                some(cp("g", "A.t", 1, 50, "")),
                some(cp("other", "A.t", 0, 999, "")),
                some(cp("g", "A.b", 0, 7, "m")),
                some(cp("g", "A.t", 1, 40, "later")), // a rewind still wins: last record
                some(cp("g", "A.t", 0, 3, "")),
                some(cp("gg", "A.t", 0, 5, "")), // prefix of nothing: different group
            ],
        );
        let t = fold.finish("A.checkpoints.internal".into());
        assert_eq!(
            t.offsets,
            vec![
                TranslatedOffset {
                    topic: "A.b".into(),
                    partition: 0,
                    offset: 7,
                    metadata: "m".into()
                },
                tr("A.t", 0, 3),
                TranslatedOffset {
                    topic: "A.t".into(),
                    partition: 1,
                    offset: 40,
                    metadata: "later".into()
                },
            ]
        );
        assert_eq!(
            (t.malformed_records, t.tombstones, t.records_read),
            (0, 0, 6)
        );
    }

    // §4.6: malformed records are skipped (Java too); tombstones and negative offsets are
    // skipped here where Java would crash.
    #[test]
    fn fold_skips_malformed_tombstones_and_negative_offsets() {
        let mut fold = CheckpointFold::new("g");
        let (good_k, good_v) = cp("g", "A.t", 0, 10, "");
        let (neg_k, neg_v) = cp("g", "A.t", 0, -1, "");
        let (other_neg_k, other_neg_v) = cp("x", "A.t", 0, -1, "");
        feed(
            &mut fold,
            &[
                (Some(good_k.clone()), Some(good_v.clone())),
                (Some(b"garbage".to_vec()), Some(vec![0, 0, 1])), // truncated value
                (Some(good_k.clone()), None),                     // tombstone
                (None, Some(good_v.clone())),                     // null key
                (Some(neg_k), Some(neg_v)),                       // negative: skipped, 10 stays
                (Some(other_neg_k), Some(other_neg_v)),           // other group: not our business
                (Some(good_k[..3].to_vec()), Some(good_v)),       // truncated key
            ],
        );
        let t = fold.finish("A.checkpoints.internal".into());
        assert_eq!(t.offsets, vec![tr("A.t", 0, 10)]);
        assert_eq!(t.malformed_records, 3);
        assert_eq!(t.tombstones, 2);
        assert_eq!(t.records_read, 7);
    }

    // §8.6-style no-rewind rule, with --allow-rewind as the explicit override.
    #[test]
    fn plan_never_rewinds_unless_allowed() {
        let translated = vec![
            tr("A.t", 0, 10), // target has none
            tr("A.t", 1, 10), // target behind
            tr("A.t", 2, 10), // target equal
            tr("A.t", 3, 10), // target ahead
            tr("A.t", 4, 10), // target null (-1)
        ];
        let current = vec![
            ("A.t".to_string(), 1, 5, String::new()),
            ("A.t".to_string(), 2, 10, String::new()),
            ("A.t".to_string(), 3, 20, String::new()),
            ("A.t".to_string(), 4, -1, String::new()),
            ("A.u".to_string(), 0, 99, String::new()), // untranslated: not in the plan
        ];
        let actions = |allow| {
            plan_partitions(&translated, &current, allow)
                .into_iter()
                .map(|p| (p.partition, p.current_offset, p.action))
                .collect::<Vec<_>>()
        };
        use PartitionAction::*;
        assert_eq!(
            actions(false),
            vec![
                (0, None, Commit),
                (1, Some(5), Commit),
                (2, Some(10), Unchanged),
                (3, Some(20), KeepHigher),
                (4, None, Commit),
            ]
        );
        assert_eq!(actions(true)[3], (3, Some(20), Rewind));
        assert!(Rewind.commits() && Commit.commits());
        assert!(!KeepHigher.commits() && !Unchanged.commits());
    }

    #[test]
    fn only_idle_groups_may_be_written() {
        assert!(check_idle("g", "B", GroupState::Empty, 0).is_ok());
        assert!(check_idle("g", "B", GroupState::Dead, 0).is_ok());
        for (state, members) in [
            (GroupState::Stable, 1),
            (GroupState::Empty, 2), // inconsistent answer: members win
            (GroupState::PreparingRebalance, 0),
            (GroupState::CompletingRebalance, 0),
            (GroupState::Unknown, 0),
        ] {
            let e = check_idle("orders-app", "B", state, members).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("orders-app"), "{msg}");
            assert!(msg.contains(&format!("{members} active member")), "{msg}");
            assert!(msg.contains(&format!("state {}", state.as_str())), "{msg}");
            assert!(!e.is_config());
        }
    }

    // §10, §13 #32: only client config names reach the consumer and admin; role-prefixed ones
    // override the plain ones; consumer.client.id is dropped.
    #[test]
    fn role_props_follow_mirror_client_config() {
        let props: Props = [
            ("bootstrap.servers", "b:9092"),
            ("security.protocol", "SSL"),
            ("consumer.security.protocol", "PLAINTEXT"),
            ("consumer.client.id", "dropped"),
            ("consumer.rdkafka.fetch.wait.max.ms", "5"),
            ("admin.sasl.mechanism", "PLAIN"),
            ("replication.policy.separator", "_"),
            ("tasks.max", "3"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let consumer = role_props(&props, "consumer");
        assert_eq!(
            consumer.into_iter().collect::<Vec<_>>(),
            vec![
                ("bootstrap.servers".to_string(), "b:9092".to_string()),
                ("rdkafka.fetch.wait.max.ms".to_string(), "5".to_string()),
                ("security.protocol".to_string(), "PLAINTEXT".to_string()),
            ]
        );
        let admin = role_props(&props, "admin");
        assert_eq!(admin["security.protocol"], "SSL");
        assert_eq!(admin["sasl.mechanism"], "PLAIN");
        assert!(!admin.contains_key("tasks.max"));
    }

    fn mm(pairs: &[(&str, &str)]) -> MirrorMakerConfig {
        MirrorMakerConfig::new(Properties::from_pairs(pairs.iter().copied())).unwrap()
    }

    // The flow must be a herder pair; the checkpoints topic follows the target's policy.
    #[test]
    fn target_client_checks_flow_and_uses_target_policy() {
        let c = mm(&[
            ("clusters", "A, B"),
            ("A.bootstrap.servers", "a:1"),
            ("B.bootstrap.servers", "b:1"),
            ("B.replication.policy.separator", "_"),
            ("A->B.enabled", "true"),
        ]);
        let flow = SourceAndTarget::new("A", "B");
        let client = TargetClient::new(&c, &flow).unwrap();
        assert_eq!(
            client.policy.checkpoints_topic("A"),
            "A_checkpoints_internal"
        );
        assert_eq!(client.consumer["bootstrap.servers"], "b:1");
        assert_eq!(client.admin["bootstrap.servers"], "b:1");

        let err = match TargetClient::new(&c, &SourceAndTarget::new("A", "C")) {
            Err(e) => e,
            Ok(_) => panic!("A->C is not a pair"),
        };
        assert!(err.is_config(), "{err}");
        assert!(err.to_string().contains("A->C"), "{err}");
    }

    #[test]
    fn text_renderings_show_every_partition_and_the_outcome() {
        let flow = SourceAndTarget::new("A", "B");
        let t = Translation {
            checkpoints_topic: "A.checkpoints.internal".into(),
            offsets: vec![tr("A.t", 0, 42), tr("A.t", 1, 7)],
            malformed_records: 1,
            tombstones: 0,
            records_read: 5,
        };
        let text = render_translation(&flow, "g", &t);
        assert!(text.contains("A.checkpoints.internal"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["A.t", "0", "42"]),
            "{text}"
        );
        assert!(text.contains("1 malformed"), "{text}");
        assert_eq!(
            render_translation_json(&t.offsets),
            r#"{"offsets":[{"topic":"A.t","partition":0,"offset":42},{"topic":"A.t","partition":1,"offset":7}]}"#
        );
        assert_eq!(render_translation_json(&[]), r#"{"offsets":[]}"#);

        let mut plan = FailoverPlan {
            flow: "A->B".into(),
            group: "g".into(),
            target: "B".into(),
            checkpoints_topic: t.checkpoints_topic.clone(),
            offsets: plan_partitions(
                &t.offsets,
                &[("A.t".to_string(), 1, 9, String::new())],
                false,
            ),
            target_state: "EMPTY".into(),
            target_members: 0,
            current_target_offsets: vec![],
            allow_rewind: false,
            applied: false,
            committed: 0,
            malformed_records: 0,
            tombstones: 0,
            warnings: vec!["w1".into()],
        };
        let text = render_plan(&plan);
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["A.t", "1", "9", "7", "keep-higher"]),
            "{text}"
        );
        assert!(text.contains("warning: w1"), "{text}");
        assert!(
            text.contains("Dry run") && text.contains("commit 1 partition"),
            "{text}"
        );
        plan.applied = true;
        plan.committed = 1;
        assert!(render_plan(&plan).contains("Applied: committed 1 partition(s)"));
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["offsets"][1]["action"], "keep-higher");
        assert_eq!(
            json["offsets"][0]["current_offset"],
            serde_json::Value::Null
        );
    }
}
