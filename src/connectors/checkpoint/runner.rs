//! The checkpoint connector and its tasks, run once per slice (mm2-compat §8.1, §8.2, §8.6, §14).
//!
//! Java runs `MirrorCheckpointConnector` and its tasks forever: the connector refreshes the
//! relevant groups every `refresh.groups.interval.seconds`, each task emits checkpoints every
//! `emit.checkpoints.interval.seconds` and syncs group offsets every
//! `sync.group.offsets.interval.seconds`. A slice does what one task *lifetime* does (§14):
//! load the previous checkpoints, load the offset syncs (must-read-to-end mode if the first load
//! failed), mark the sync store read to end, then compute, filter, emit, and optionally sync.
//!
//! **When.** At the END of a slice, after the source tasks' final commit and offset-sync flush.
//! That commit promotes every delayed sync (KAFKA-15906), so the last replicated record of every
//! partition has a sync, and a group committed at the end of the source log translates
//! *exactly* to the end of the remote log — beyond what an always-on MM2 gives, where the
//! newest sync is up to `offset.flush.interval.ms` old.
//!
//! **Intervals across slices.** Each interval is honoured with a "last run" timestamp in the
//! [`StateStore`] (`<flow>/MirrorCheckpointConnector/{groups,emit-checkpoints,
//! sync-group-offsets}`): a slice does a piece of work when it never ran or when at least the
//! interval has passed since it last ran (interval 0: every slice). A clock that went backwards
//! counts as due. Work whose tasks were all held by another invocation is not recorded, so the
//! next slice tries again.
//!
//! * groups: discovery runs when due or when no group list is stored; otherwise the stored list
//!   is used, so a new group is picked up only at the next refresh, as in MM2;
//! * emission: when due, every assigned group's committed offsets are listed on the source and
//!   translated;
//! * group sync: when due, from the checkpoints loaded and emitted in this slice.
//!
//! **Beyond MM2: active target groups are never written.** Java sends the offsets to any target
//! group that is not EMPTY and relies on the broker rejecting a group with members (§13 #8). We
//! describe every group first and leave groups with members — or whose state could not be
//! read — alone, and report them. EMPTY groups are never rewound (§8.6), and a group that does
//! not exist is created with the checkpointed offsets.
//!
//! **Leases.** Task `i` runs only under the lease `<flow>/MirrorCheckpointConnector/<i>`, like
//! the source tasks; a task held by another invocation is skipped and counted.
//!
//! **Cost.** Both internal topics are read from the beginning each time checkpoints are due. They
//! are compacted on real Kafka (one record per key plus the uncleaned tail), which bounds the
//! read; a position hint like the Connect offsets store's is a possible improvement.
//!
//! Departures from Java, deliberately:
//! * a malformed offset sync is skipped on its own; Java drops the rest of its consumer batch
//!   (§4.6, §13 #33). A tombstone still stops translation for the slice, as it stops the Java
//!   task from ever translating;
//! * errors never fail the slice (replication itself succeeded); they go to the report and the
//!   log, and the next due slice tries again — Java logs and retries at the next interval.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::admin::AdminClient;
use serde_json::json;

use super::checkpoint_store::{CheckpointStore, LoadError};
use super::checkpoints::{filter_groups, find_relevant_groups, CheckpointTask, CommittedOffsets};
use super::group_sync::{plan_group_offset_sync, TargetGroupState};
use super::offset_sync_store::OffsetSyncStore;
use super::{OffsetAndMetadata, TopicPartition};
use crate::config::connector::{roles, MirrorCheckpointConfig};
use crate::config::Props;
use crate::connect::internal_topics::ensure_compacted_topic;
use crate::connectors::heartbeat::{send_timestamped, TimestampedRecord};
use crate::connectors::source::connector::{sync_due, SyncRun};
use crate::kafka::admin_ext::{self, AdminError, GroupState};
use crate::kafka::internal_log::{self, LogError, LogRecord, BEGINNING};
use crate::kafka::MirrorContext;
use crate::lease::{task_key, HeldLease, LeaseStore, LeaseTiming};
use crate::report::CheckpointActivity;
use crate::state::StateStore;
use crate::wire::{OffsetSync, SchemaError};

/// The connector name MM2 gives the checkpoint connector (and its lease keys).
pub const CONNECTOR: &str = "MirrorCheckpointConnector";

const GROUPS_STATE: &str = "groups";
const EMIT_STATE: &str = "emit-checkpoints";
const SYNC_STATE: &str = "sync-group-offsets";

/// Below this much time before the deadline, checkpoint work is not started.
pub const MIN_BUDGET: Duration = Duration::from_secs(1);

type Admin = crate::kafka::Managed<AdminClient<MirrorContext>>;

/// Where a slice's checkpoint work keeps its state and gets its leases.
pub struct CheckpointEnv<'a> {
    pub state: &'a dyn StateStore,
    pub leases: Arc<dyn LeaseStore>,
    pub owner: String,
    pub lease_timing: LeaseTiming,
    /// Offset after the last offset sync this process wrote (partition 0), if any: the
    /// offset-syncs read goes at least that far (read-your-writes, even on a broker that serves
    /// records a moment after acknowledging them).
    pub offset_syncs_end: Option<i64>,
}

/// Which pieces of checkpoint work are due now (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub emit: bool,
    pub sync: bool,
    /// When the earliest piece that is not due becomes due.
    pub next_due_ms: Option<i64>,
}

impl Due {
    pub fn any(&self) -> bool {
        self.emit || self.sync
    }
}

fn last_run(state: &dyn StateStore, key: &str) -> Option<i64> {
    match state.get(key) {
        Ok(doc) => doc.and_then(|d| d["last_run_ms"].as_i64()),
        Err(e) => {
            // A lost timestamp only makes work run early.
            tracing::warn!(key, error = %e, "state unreadable; treating the work as due");
            None
        }
    }
}

fn remember(state: &dyn StateStore, key: &str, value: serde_json::Value) {
    if let Err(e) = state.put(key, &value) {
        tracing::warn!(key, error = %e, "could not record the last run; the work will run again");
    }
}

/// The state keys the checkpoint work of `flow` reads, for the slice's prefetch.
pub fn state_keys(flow: &str) -> Vec<String> {
    [GROUPS_STATE, EMIT_STATE, SYNC_STATE]
        .iter()
        .map(|name| format!("{flow}/{CONNECTOR}/{name}"))
        .collect()
}

/// What is due for `cfg` at `now_ms`; `None` when checkpointing is off for the pair (flow
/// disabled or `emit.checkpoints.enabled=false`, §1.3).
pub fn due(
    cfg: &MirrorCheckpointConfig,
    state: &dyn StateStore,
    state_prefix: &str,
    now_ms: i64,
) -> Option<Due> {
    if !cfg.common.enabled {
        return None;
    }
    let emit_interval = cfg.emit_checkpoints_interval?;
    let check = |interval: Option<Duration>, name: &str| {
        sync_due(
            interval,
            last_run(state, &format!("{state_prefix}/{name}")),
            now_ms,
        )
    };
    let mut next_due_ms: Option<i64> = None;
    let mut is_due = |r: Result<(), SyncRun>| match r {
        Ok(()) => true,
        Err(SyncRun::NotDue { next_due_ms: n }) => {
            next_due_ms = Some(next_due_ms.map_or(n, |m| m.min(n)));
            false
        }
        Err(_) => false,
    };
    let emit = is_due(check(Some(emit_interval), EMIT_STATE));
    let sync = is_due(check(cfg.sync_group_offsets_interval, SYNC_STATE));
    Some(Due {
        emit,
        sync,
        next_due_ms,
    })
}

/// Runs the checkpoint connector and its tasks for one slice of `flow` (see the module docs).
/// `producer` writes checkpoint records to the target (the worker's producer with the
/// connector's `producer.override.*`); nothing is started once less than [`MIN_BUDGET`] is left
/// before `deadline`.
pub async fn run_checkpoints(
    cfg: &MirrorCheckpointConfig,
    flow: &str,
    env: &CheckpointEnv<'_>,
    producer: &Props,
    deadline: Instant,
) -> CheckpointActivity {
    let started = Instant::now();
    let prefix = format!("{flow}/{CONNECTOR}");
    let now_ms = chrono::Utc::now().timestamp_millis();
    let mut activity = CheckpointActivity {
        group_sync: if cfg.sync_group_offsets_interval.is_some() {
            "not due".into()
        } else {
            "disabled".into()
        },
        ..Default::default()
    };
    let Some(due) = due(cfg, env.state, &prefix, now_ms) else {
        activity.status = "disabled".into();
        return activity;
    };
    if !due.any() {
        activity.status = format!(
            "not due until {}",
            due.next_due_ms.map_or("unknown".into(), |t| t.to_string())
        );
        return activity;
    }
    if deadline.saturating_duration_since(Instant::now()) < MIN_BUDGET {
        activity.status = "skipped: no time left before the slice deadline".into();
        return activity;
    }
    let mut run = Run {
        cfg,
        flow,
        env,
        producer,
        deadline,
        prefix,
        now_ms,
        due,
        activity,
    };
    match run.run().await {
        Ok(()) => run.activity.status = "ran".into(),
        Err(e) => {
            tracing::warn!(flow, error = %e, "checkpointing failed");
            run.activity.status = format!("failed: {e}");
        }
    }
    if !run.activity.errors.is_empty() {
        tracing::warn!(flow, errors = ?run.activity.errors, "checkpoint errors");
    }
    run.activity.duration_ms = started.elapsed().as_millis() as u64;
    run.activity
}

/// Committed offsets of one group and the time taken just before listing them.
type Listed = BTreeMap<String, (CommittedOffsets, i64)>;

struct Run<'a> {
    cfg: &'a MirrorCheckpointConfig,
    flow: &'a str,
    env: &'a CheckpointEnv<'a>,
    producer: &'a Props,
    deadline: Instant,
    prefix: String,
    now_ms: i64,
    due: Due,
    activity: CheckpointActivity,
}

/// The process-wide admin client for these settings: a fresh one per slice would cost ~100 ms
/// when dropped (rdkafka joins its polling thread), on every slice that emits checkpoints.
fn make_admin(role: &str, props: &Props) -> Result<std::sync::Arc<Admin>, String> {
    crate::kafka::shared_admin(role, props).map_err(|e| e.to_string())
}

/// `listConsumerGroupOffsets` rows as Java's map: offset −1 is a null `OffsetAndMetadata`.
fn committed_offsets(rows: Vec<(String, i32, i64, String)>) -> CommittedOffsets {
    rows.into_iter()
        .map(|(topic, partition, offset, metadata)| {
            let om = (offset >= 0).then(|| OffsetAndMetadata::with_metadata(offset, metadata));
            ((topic, partition), om)
        })
        .collect()
}

/// A decoded offset-syncs record, or why it cannot be used.
enum SyncRecord {
    Sync(OffsetSync),
    Malformed(String),
    Tombstone,
}

fn decode_syncs(records: &[LogRecord]) -> Vec<SyncRecord> {
    records
        .iter()
        .map(
            |r| match OffsetSync::decode_record(r.key.as_deref(), r.value.as_deref()) {
                Ok(s) => SyncRecord::Sync(s),
                Err(SchemaError::Null { .. }) => SyncRecord::Tombstone,
                Err(e) => SyncRecord::Malformed(format!("offset {}: {e}", r.offset)),
            },
        )
        .collect()
}

/// Java `OffsetSyncStore.start` for one task: replay the initial read, then mark it read to
/// end — unless a tombstone stopped it (the Java task then never translates, §4.6).
fn sync_store(syncs: &[SyncRecord], must_read_to_end: bool) -> Result<OffsetSyncStore, String> {
    let mut store = OffsetSyncStore::new(must_read_to_end);
    for (index, s) in syncs.iter().enumerate() {
        match s {
            SyncRecord::Sync(sync) => store.handle_record(sync.clone()),
            SyncRecord::Malformed(e) => tracing::warn!(error = %e, "Error polling offset syncs"),
            SyncRecord::Tombstone => {
                return Err(format!(
                    "record {index} of the offset-syncs topic is a tombstone; no offsets are \
                     translated (Java MM2 fails the same way)"
                ))
            }
        }
    }
    store.finish_initial_read();
    Ok(store)
}

impl Run<'_> {
    /// Time left for one request: the admin timeout, bounded by the deadline.
    fn budget(&self) -> Result<Duration, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the slice deadline passed".into());
        }
        Ok(left.min(self.cfg.common.admin_timeout))
    }

    fn state_key(&self, name: &str) -> String {
        format!("{}/{name}", self.prefix)
    }

    async fn run(&mut self) -> Result<(), String> {
        let t0 = Instant::now();
        let phase = |what: &str| {
            tracing::debug!(
                elapsed_ms = t0.elapsed().as_millis() as u64,
                "checkpoints: {what}"
            )
        };
        let cfg = self.cfg;
        let topic = cfg.checkpoints_topic();
        let target = cfg.common.target_alias.clone();
        let source = cfg.common.source_alias.clone();

        // Connector start (§8.1): the checkpoints topic on the target.
        let target_admin_props = cfg
            .common
            .target_admin_config(roles::CHECKPOINT_TARGET_ADMIN);
        ensure_compacted_topic(
            &target_admin_props,
            &topic,
            1,
            cfg.checkpoints_topic_replication_factor,
        )
        .await
        .map_err(|e| format!("cluster {target}: create {topic}: {e}"))?;

        let source_admin = make_admin(
            roles::CHECKPOINT_SOURCE_ADMIN,
            &cfg.common
                .source_admin_config(roles::CHECKPOINT_SOURCE_ADMIN),
        )?;
        let target_admin = make_admin(roles::CHECKPOINT_TARGET_ADMIN, &target_admin_props)?;
        phase("topic ensured, clients ready");

        // Groups: the stored list, or a fresh discovery when due.
        let (groups, mut listed) = self.groups(&source_admin).await?;
        self.activity.groups = groups.len() as u32;
        phase("groups known");
        let assignment = cfg.task_groups(&groups);
        if assignment.is_empty() {
            // No relevant groups: MM2 runs no checkpoint task. Nothing to emit or sync.
            self.record_runs();
            return Ok(());
        }

        // Leases first: no reads for tasks another invocation runs.
        let mut held = Vec::new();
        for (i, task_groups) in assignment.iter().enumerate() {
            let key = task_key(self.flow, CONNECTOR, i as u32);
            let acquired = HeldLease::acquire(
                self.env.leases.clone(),
                &key,
                &self.env.owner,
                self.env.lease_timing,
            );
            match acquired.await {
                Ok(Some(lease)) => held.push((i as u32, task_groups.clone(), lease)),
                Ok(None) => self.activity.tasks_held_elsewhere += 1,
                Err(e) => {
                    self.activity.errors.push(e.to_string());
                    self.activity.tasks_held_elsewhere += 1;
                }
            }
        }
        if held.is_empty() {
            return Ok(());
        }
        phase("leases taken");

        let result = self
            .run_tasks(
                &held,
                &topic,
                &source,
                &source_admin,
                &target_admin,
                &mut listed,
            )
            .await;
        for (i, _, lease) in held {
            if let Err(e) = lease.release().await {
                tracing::warn!(task = i, error = %e, "checkpoint task lease release failed");
            }
        }
        result?;
        self.record_runs();
        Ok(())
    }

    fn record_runs(&self) {
        if self.due.emit {
            remember(
                self.env.state,
                &self.state_key(EMIT_STATE),
                json!({ "last_run_ms": self.now_ms }),
            );
        }
        if self.due.sync {
            remember(
                self.env.state,
                &self.state_key(SYNC_STATE),
                json!({ "last_run_ms": self.now_ms }),
            );
        }
    }

    /// The relevant groups (§8.1) and, when discovery ran, their listed offsets.
    async fn groups(&mut self, source_admin: &Admin) -> Result<(Vec<String>, Listed), String> {
        let key = self.state_key(GROUPS_STATE);
        let stored = match self.env.state.get(&key) {
            Ok(doc) => doc,
            Err(e) => {
                tracing::warn!(key, error = %e, "stored group list unreadable; rediscovering");
                None
            }
        };
        let stored_groups: Option<Vec<String>> = stored.as_ref().and_then(|d| {
            d["groups"].as_array().map(|a| {
                a.iter()
                    .filter_map(|g| g.as_str().map(String::from))
                    .collect()
            })
        });
        let last = stored.as_ref().and_then(|d| d["last_run_ms"].as_i64());
        let refresh_due = match stored_groups {
            None => true,
            Some(_) => sync_due(self.cfg.refresh_groups_interval, last, self.now_ms).is_ok(),
        };
        if !refresh_due {
            return Ok((stored_groups.unwrap_or_default(), Listed::new()));
        }
        match self.discover(source_admin).await {
            Ok((groups, listed)) => {
                remember(
                    self.env.state,
                    &key,
                    json!({ "last_run_ms": self.now_ms, "groups": groups }),
                );
                self.activity.groups_refreshed = true;
                Ok((groups, listed))
            }
            Err(e) => match stored_groups {
                Some(groups) => {
                    self.activity
                        .errors
                        .push(format!("group refresh failed, using the stored list: {e}"));
                    Ok((groups, Listed::new()))
                }
                None => Err(format!("group discovery: {e}")),
            },
        }
    }

    /// Java `findConsumerGroups` (§8.1): list the source groups, keep those the group filter
    /// accepts with at least one committed offset on a topic the topic filter accepts.
    async fn discover(&mut self, source_admin: &Admin) -> Result<(Vec<String>, Listed), String> {
        let source = &self.cfg.common.source_alias;
        let listings = admin_ext::list_consumer_groups(source_admin, self.budget()?)
            .await
            .map_err(|e| format!("cluster {source}: listConsumerGroups: {e}"))?;
        let ids: Vec<String> = listings.into_iter().map(|g| g.group_id).collect();
        let candidates = filter_groups(&ids, &self.cfg.group_filter);
        let mut listed = Listed::new();
        let mut with_partitions = Vec::new();
        for group in candidates {
            let ts = chrono::Utc::now().timestamp_millis();
            match admin_ext::list_consumer_group_offsets(source_admin, &group, self.budget()?).await
            {
                Ok(rows) => {
                    let offsets = committed_offsets(rows);
                    with_partitions.push((group.clone(), offsets.keys().cloned().collect()));
                    listed.insert(group, (offsets, ts));
                }
                Err(e) => self.activity.errors.push(format!(
                    "cluster {source}: listConsumerGroupOffsets {group}: {e}"
                )),
            }
        }
        let relevant = find_relevant_groups(
            &with_partitions,
            &self.cfg.group_filter,
            &self.cfg.topic_filter,
        );
        listed.retain(|g, _| relevant.contains(g));
        Ok((relevant, listed))
    }

    /// Partition 0 of `topic` from the beginning, at least up to `min_end` when given.
    async fn read_partition0(
        &self,
        consumer: &Props,
        topic: &str,
        min_end: Option<i64>,
    ) -> Result<Vec<LogRecord>, LogError> {
        let starts = BTreeMap::from([(0, BEGINNING)]);
        let min_ends: BTreeMap<i32, i64> = min_end.map(|e| (0, e)).into_iter().collect();
        let timeout = self.budget().map_err(|message| LogError::Read {
            topic: topic.to_string(),
            partition: Some(0),
            message,
        })?;
        internal_log::read_to_end_at_least(consumer, topic, &starts, &min_ends, timeout).await
    }

    /// The offset-syncs topic, decoded, when checkpoints are due; a topic that does not exist
    /// yet (nothing replicated) has no syncs, so nothing translates (§8.5 "skip on empty").
    async fn read_offset_syncs(&self) -> Result<Vec<SyncRecord>, String> {
        if !self.due.emit {
            return Ok(Vec::new());
        }
        let consumer = self.cfg.offset_syncs_consumer_config(None);
        let topic = self.cfg.offset_syncs_topic();
        match internal_log::partition_count(&consumer, &topic, self.budget()?).await {
            Ok(_) => {}
            Err(LogError::UnknownTopic { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(format!("offset syncs {topic}: {e}")),
        }
        let records = self
            .read_partition0(&consumer, &topic, self.env.offset_syncs_end)
            .await
            .map_err(|e| format!("offset syncs: {e}"))?;
        Ok(decode_syncs(&records))
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_tasks(
        &mut self,
        held: &[(u32, Vec<String>, HeldLease)],
        topic: &str,
        source: &str,
        source_admin: &Admin,
        target_admin: &Admin,
        listed: &mut Listed,
    ) -> Result<(), String> {
        let cfg = self.cfg;
        // One read of each internal topic serves every task of this invocation; both at once.
        let checkpoints_consumer = cfg
            .common
            .target_consumer_config(roles::CHECKPOINTS_TARGET_CONSUMER);
        let (checkpoints, syncs) = tokio::join!(
            self.read_partition0(&checkpoints_consumer, topic, None),
            self.read_offset_syncs()
        );
        let syncs = syncs?;
        tracing::debug!("checkpoints: internal topics read");
        let task_ctx = CheckpointTask::new(
            source,
            cfg.common.target_alias.clone(),
            cfg.common.policy.clone(),
            cfg.topic_filter.clone(),
        );

        for (task, groups, lease) in held {
            self.activity.tasks += 1;
            // CheckpointStore.start (§8.4).
            let mut store = CheckpointStore::new(groups.iter().cloned());
            let loaded_ok = match &checkpoints {
                Ok(records) => store.load(
                    records
                        .iter()
                        .map(|r| Ok((r.key.as_deref(), r.value.as_deref()))),
                ),
                Err(e) => store.load(std::iter::once(Err(LoadError::new(e.to_string())))),
            };
            if !loaded_ok {
                self.activity.errors.push(format!(
                    "task {task}: checkpoints not loaded ({}); translating from the newest syncs only",
                    store
                        .load_failure()
                        .map(|f| f.to_string())
                        .unwrap_or_default()
                ));
            }

            tracing::debug!(task, "checkpoints: store loaded");
            let mut written_ok = true;
            if self.due.emit {
                written_ok = self
                    .emit(
                        *task,
                        groups,
                        &syncs,
                        loaded_ok,
                        &mut store,
                        &task_ctx,
                        source_admin,
                        listed,
                        topic,
                    )
                    .await;
            }
            tracing::debug!(task, "checkpoints: emitted");
            if self.due.sync && written_ok {
                if !lease.still_owner() {
                    self.activity
                        .errors
                        .push(format!("task {task}: lease lost; group offsets not synced"));
                    continue;
                }
                self.sync_groups(*task, groups, &store, target_admin).await;
            }
        }
        self.activity.emitted_due = self.due.emit;
        if self.due.sync {
            self.activity.group_sync = "ran".into();
        }
        Ok(())
    }

    /// §8.5 for one task: translate every assigned group and write the checkpoints. Returns
    /// whether everything computed was written (group sync relies on it).
    #[allow(clippy::too_many_arguments)]
    async fn emit(
        &mut self,
        task: u32,
        groups: &[String],
        syncs: &[SyncRecord],
        loaded_ok: bool,
        store: &mut CheckpointStore,
        ctx: &CheckpointTask,
        source_admin: &Admin,
        listed: &mut Listed,
        topic: &str,
    ) -> bool {
        let source = &self.cfg.common.source_alias;
        let sync_store = match sync_store(syncs, !loaded_ok) {
            Ok(s) => s,
            Err(e) => {
                self.activity.errors.push(format!("task {task}: {e}"));
                return true;
            }
        };
        let mut committed = Listed::new();
        for group in groups {
            if let Some(l) = listed.remove(group) {
                committed.insert(group.clone(), l);
                continue;
            }
            let budget = match self.budget() {
                Ok(b) => b,
                Err(e) => {
                    self.activity.errors.push(format!("task {task}: {e}"));
                    break;
                }
            };
            let ts = chrono::Utc::now().timestamp_millis();
            match admin_ext::list_consumer_group_offsets(source_admin, group, budget).await {
                Ok(rows) => {
                    committed.insert(group.clone(), (committed_offsets(rows), ts));
                }
                Err(e) => self.activity.errors.push(format!(
                    "cluster {source}: listConsumerGroupOffsets {group}: {e}"
                )),
            }
        }
        tracing::debug!(task, "checkpoints: group offsets listed");
        let records = ctx
            .poll(groups, &committed, &sync_store, store)
            .unwrap_or_default();
        let encoded: Vec<TimestampedRecord> = records
            .iter()
            .filter_map(|r| {
                match (r.checkpoint.encode_key(), r.checkpoint.encode_value()) {
                    (Ok(k), Ok(v)) => Some((k, v, r.timestamp_ms)),
                    (Err(e), _) | (_, Err(e)) => {
                        tracing::warn!(checkpoint = %r.checkpoint, error = %e, "checkpoint not encodable");
                        None
                    }
                }
            })
            .collect();
        let budget = match self.budget() {
            Ok(b) => b,
            Err(e) => {
                self.activity.errors.push(format!("task {task}: {e}"));
                return false;
            }
        };
        let role = self
            .cfg
            .common
            .client_id("checkpoints-producer", Some(task));
        match send_timestamped(&role, self.producer, topic, &encoded, budget).await {
            Ok(offsets) => {
                self.activity.emitted += offsets.len() as u64;
                true
            }
            Err(e) => {
                self.activity.errors.push(format!("task {task}: {e}"));
                false
            }
        }
    }

    /// §8.6 for one task, except that groups with members are never written.
    async fn sync_groups(
        &mut self,
        task: u32,
        groups: &[String],
        store: &CheckpointStore,
        target_admin: &Admin,
    ) {
        let target = self.cfg.common.target_alias.clone();
        let states = match self.budget() {
            Ok(b) => target_states(target_admin, groups, b).await,
            Err(e) => {
                self.activity.errors.push(format!("task {task}: {e}"));
                return;
            }
        };
        let mut converted = store.converted_upstream_offsets();
        converted.retain(|group, offsets| {
            if offsets.is_empty() {
                return false;
            }
            match states.get(group) {
                Some(TargetGroupState::Active) => {
                    tracing::info!(group, "target group has active members; offsets not synced");
                    self.activity.groups_skipped_active.push(group.clone());
                    false
                }
                Some(TargetGroupState::Unknown) | None => {
                    self.activity.errors.push(format!(
                        "cluster {target}: state of group {group} unknown; offsets not synced"
                    ));
                    false
                }
                _ => true,
            }
        });
        for plan in plan_group_offset_sync(&converted, &states) {
            let offsets: Vec<(String, i32, i64, String)> = plan
                .offsets
                .iter()
                .map(|((t, p), om)| (t.clone(), *p, om.offset, om.metadata.clone()))
                .collect();
            let budget = match self.budget() {
                Ok(b) => b,
                Err(e) => {
                    self.activity.errors.push(format!("task {task}: {e}"));
                    return;
                }
            };
            match admin_ext::alter_consumer_group_offsets(
                target_admin,
                &plan.group,
                &offsets,
                budget,
            )
            .await
            {
                Ok(results) => {
                    let mut ok = 0u64;
                    for ((t, p), r) in results {
                        match r {
                            Ok(()) => ok += 1,
                            Err(e) => self.activity.errors.push(format!(
                                "cluster {target}: alterConsumerGroupOffsets {} {t}-{p}: {e}",
                                plan.group
                            )),
                        }
                    }
                    if ok > 0 {
                        self.activity.groups_synced.push(plan.group.clone());
                        self.activity.partitions_synced += ok;
                    }
                }
                Err(e) => self.activity.errors.push(format!(
                    "cluster {target}: alterConsumerGroupOffsets {}: {e}",
                    plan.group
                )),
            }
        }
    }
}

/// Java `refreshIdleConsumerGroupOffset` (§8.6), telling groups with members apart: describe
/// the groups on the target; an EMPTY group (or one in another memberless state) gets its
/// committed offsets listed.
async fn target_states(
    admin: &Admin,
    groups: &[String],
    timeout: Duration,
) -> BTreeMap<String, TargetGroupState> {
    let described = match admin_ext::describe_consumer_groups(admin, groups, timeout).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "describeConsumerGroups failed on the target");
            return groups
                .iter()
                .map(|g| (g.clone(), TargetGroupState::Unknown))
                .collect();
        }
    };
    let mut states = BTreeMap::new();
    for (group, description) in described {
        let state = match description {
            Ok(d) => match classify(d.state, d.members) {
                Classified::Active => TargetGroupState::Active,
                Classified::Missing => TargetGroupState::Missing,
                Classified::Idle => {
                    match admin_ext::list_consumer_group_offsets(admin, &group, timeout).await {
                        Ok(rows) => TargetGroupState::Empty(
                            rows.into_iter()
                                .map(|(t, p, o, _)| ((t, p), (o >= 0).then_some(o)))
                                .collect::<BTreeMap<TopicPartition, Option<i64>>>(),
                        ),
                        Err(e) => {
                            tracing::warn!(group, error = %e, "listing target group offsets failed");
                            TargetGroupState::Unknown
                        }
                    }
                }
            },
            Err(e) if is_group_not_found(&e) => TargetGroupState::Missing,
            Err(e) => {
                tracing::warn!(group, error = %e, "describing the target group failed");
                TargetGroupState::Unknown
            }
        };
        states.insert(group, state);
    }
    states
}

#[derive(Debug, PartialEq, Eq)]
enum Classified {
    /// Members present: never written.
    Active,
    /// DEAD: does not exist; created with the checkpointed offsets.
    Missing,
    /// EMPTY, or any other state without members (some brokers report UNKNOWN): treated as
    /// EMPTY, so it is never rewound.
    Idle,
}

fn classify(state: GroupState, members: usize) -> Classified {
    if members > 0 {
        return Classified::Active;
    }
    match state {
        GroupState::Dead => Classified::Missing,
        // A rebalance in progress has (or is about to have) members.
        GroupState::PreparingRebalance | GroupState::CompletingRebalance | GroupState::Stable => {
            Classified::Active
        }
        GroupState::Empty | GroupState::Unknown => Classified::Idle,
    }
}

fn is_group_not_found(e: &AdminError) -> bool {
    e.code() == Some("GROUP_ID_NOT_FOUND")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::LocalStateStore;

    fn cfg(extra: &[(&str, &str)]) -> MirrorCheckpointConfig {
        let mut props: Props = [
            ("source.cluster.alias", "A"),
            ("target.cluster.alias", "B"),
            ("name", CONNECTOR),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in extra {
            props.insert(k.to_string(), v.to_string());
        }
        MirrorCheckpointConfig::new(&props).unwrap()
    }

    #[test]
    fn nothing_is_due_for_a_disabled_flow_or_without_emission() {
        let dir = tempfile::tempdir().unwrap();
        let state = LocalStateStore::new(dir.path());
        // §1.3: the checkpoint connector does no work when enabled=false.
        assert_eq!(
            due(&cfg(&[("enabled", "false")]), &state, "A->B/c", 0),
            None
        );
        // §13 #9: no emission, no group sync either.
        assert_eq!(
            due(
                &cfg(&[
                    ("emit.checkpoints.enabled", "false"),
                    ("sync.group.offsets.enabled", "true")
                ]),
                &state,
                "A->B/c",
                0
            ),
            None
        );
    }

    #[test]
    fn intervals_are_honoured_across_slices() {
        let dir = tempfile::tempdir().unwrap();
        let state = LocalStateStore::new(dir.path());
        let c = cfg(&[
            ("emit.checkpoints.interval.seconds", "60"),
            ("sync.group.offsets.enabled", "true"),
            ("sync.group.offsets.interval.seconds", "10"),
        ]);
        // First slice ever: everything is due.
        let d = due(&c, &state, "A->B/c", 1_000_000).unwrap();
        assert!(d.emit && d.sync);
        remember(
            &state,
            "A->B/c/emit-checkpoints",
            json!({"last_run_ms": 1_000_000}),
        );
        remember(
            &state,
            "A->B/c/sync-group-offsets",
            json!({"last_run_ms": 1_000_000}),
        );
        // 5 s later: neither; the sync is due first.
        let d = due(&c, &state, "A->B/c", 1_005_000).unwrap();
        assert!(!d.any());
        assert_eq!(d.next_due_ms, Some(1_010_000));
        // 10 s later: the sync only.
        let d = due(&c, &state, "A->B/c", 1_010_000).unwrap();
        assert!(d.sync && !d.emit);
        // 60 s later: both.
        assert!(due(&c, &state, "A->B/c", 1_060_000).unwrap().emit);
        // A clock that went backwards counts as due.
        assert!(due(&c, &state, "A->B/c", 999_000).unwrap().emit);
    }

    #[test]
    fn group_sync_stays_off_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let state = LocalStateStore::new(dir.path());
        let d = due(&cfg(&[]), &state, "A->B/c", 0).unwrap();
        assert!(d.emit);
        assert!(!d.sync);
    }

    // §8.6 plus mirrorslice's rule: groups with members are never written.
    #[test]
    fn group_states_with_members_are_active_dead_is_missing_the_rest_idle() {
        assert_eq!(classify(GroupState::Stable, 2), Classified::Active);
        assert_eq!(classify(GroupState::Empty, 1), Classified::Active);
        assert_eq!(
            classify(GroupState::PreparingRebalance, 0),
            Classified::Active
        );
        assert_eq!(classify(GroupState::Dead, 0), Classified::Missing);
        assert_eq!(classify(GroupState::Empty, 0), Classified::Idle);
        assert_eq!(classify(GroupState::Unknown, 0), Classified::Idle);
    }

    // §12.6 #65: an offset of −1 is Java's null OffsetAndMetadata (no checkpoint).
    #[test]
    fn listed_offsets_keep_metadata_and_map_minus_one_to_null() {
        let c = committed_offsets(vec![
            ("t".into(), 0, 5, "meta".into()),
            ("t".into(), 1, -1, String::new()),
        ]);
        assert_eq!(
            c[&("t".to_string(), 0)],
            Some(OffsetAndMetadata::with_metadata(5, "meta"))
        );
        assert_eq!(c[&("t".to_string(), 1)], None);
    }

    #[test]
    fn a_tombstone_in_the_offset_syncs_stops_translation_a_bad_record_is_skipped() {
        let good = |up: i64, down: i64| {
            let s = OffsetSync {
                topic: "t".into(),
                partition: 0,
                upstream_offset: up,
                downstream_offset: down,
            };
            LogRecord {
                partition: 0,
                offset: up,
                key: Some(s.encode_key().unwrap()),
                value: Some(s.encode_value()),
            }
        };
        let bad = LogRecord {
            partition: 0,
            offset: 7,
            key: Some(vec![0, 1]),
            value: Some(vec![]),
        };
        let store = sync_store(&decode_syncs(&[good(0, 0), bad.clone(), good(9, 9)]), false)
            .expect("malformed records are skipped");
        assert_eq!(store.translate_downstream("g", ("t", 0), 10), Some(10));
        let tombstone = LogRecord {
            value: None,
            ..good(3, 3)
        };
        assert!(sync_store(&decode_syncs(&[good(0, 0), tombstone]), false).is_err());
    }
}
