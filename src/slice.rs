//! One slice of one herder pair: what an always-on MM2 worker does, in bounded time.
//!
//! The life of a slice, in order:
//!
//! 1. **Settings.** Resolve the pair's connector and worker configs exactly as MM2 would, and our
//!    own `mirrorslice.*` settings; fix the deadline (the earlier of `--max-duration` and the
//!    caller's hard deadline, e.g. Lambda's) and stop consuming `mirrorslice.commit.margin`
//!    before it, leaving that time to flush, commit, write status and release leases.
//! 2. **Worker topics.** Make sure `mm2-configs|offsets|status.<source>.internal` exist on the
//!    target, as the Connect worker does at start.
//! 3. **Connector phase**, under the connector lease (concurrent invocations of one flow take
//!    turns; it is quick and idempotent): discover topics, create remote topics with their
//!    configs, sync configs and ACLs when due, assign partitions to tasks, and write connector
//!    and task configs to the config topic when they changed.
//! 4. **Tasks.** For each task whose lease this invocation wins: load its stored offsets (bounded
//!    by a position hint, not by history), copy until caught up or until the stop time,
//!    committing every `offset.flush.interval.ms` and at the end. Tasks held by another
//!    invocation are reported as such and left alone.
//! 5. **Status and report.** Task status (UNASSIGNED when a task stopped cleanly, FAILED with a
//!    trace otherwise) and one slice-report record per task go to the status topic; leases are
//!    released; the [`SliceReport`] is returned.

use crate::config::connector::{ClientKind, ClusterSide};
use crate::config::slice::SliceSettings;
use crate::config::{ConfigError, ConnectorKind, MirrorMakerConfig, Props, SourceAndTarget};
use crate::connect::config_store::ConfigStore;
use crate::connect::internal_topics::{ensure_worker_topics, WorkerTopics};
use crate::connect::offset_store::{OffsetStore, PartitionKey};
use crate::connect::status_store::{StatusStore, StatusUpdate};
use crate::connectors::checkpoint::runner::{self as checkpoint_runner, CheckpointEnv};
use crate::connectors::heartbeat::{run_heartbeats, HeartbeatLeases};
use crate::connectors::source::connector::{
    self as source_connector, run_source_connector_phase, SyncRun,
};
use crate::connectors::source::task::{
    run_source_task, SourceTaskSpec, TaskError, TaskHooks, TaskMemory, TopicPartition,
};
use crate::lease::{connector_key, task_key, HeldLease, LeaseStore, Ownership};
use crate::plan::pair_configs;
use crate::report::{
    CheckpointActivity, ConnectorActivity, HeartbeatActivity, SliceReport, TaskReport,
};
use crate::state::{SliceState, StateStore};
use crate::wire::connect_offsets::SourcePartition;
use crate::wire::connect_status::{State, Status};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a lease is granted per renewal, and the safety margin before its expiry.
pub const LEASE_TTL: Duration = Duration::from_secs(30);
pub const LEASE_SAFETY: Duration = Duration::from_secs(5);

/// What a slice runs with: where state and leases live, and who we are.
#[derive(Clone)]
pub struct SliceEnv {
    pub state: Arc<dyn StateStore>,
    pub leases: Arc<dyn LeaseStore>,
    /// Lease owner id of this process.
    pub owner: String,
}

/// Per-invocation overrides.
#[derive(Debug, Clone, Default)]
pub struct SliceRequest {
    /// `--max-duration`: overrides `mirrorslice.slice.max.duration`.
    pub max_duration: Option<Duration>,
    /// A hard deadline from the caller (Lambda's invocation deadline minus its safety margin).
    pub deadline: Option<Instant>,
}

#[derive(Debug, thiserror::Error)]
pub enum SliceError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{flow}: {message}")]
    Setup { flow: String, message: String },
}

fn setup(flow: &SourceAndTarget, e: impl std::fmt::Display) -> SliceError {
    SliceError::Setup {
        flow: flow.to_string(),
        message: e.to_string(),
    }
}

/// Client settings the Connect worker itself uses for `kind` ("producer", "consumer", "admin"):
/// the worker's client keys, then its `<kind>.`-prefixed keys (§2.4).
fn worker_client_props(worker: &Props, kind: &str) -> Props {
    let mut props: Props = worker
        .iter()
        .filter(|(k, _)| crate::config::mm2::is_client_config_name(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let prefix = format!("{kind}.");
    for (k, v) in worker {
        if let Some(stripped) = k.strip_prefix(&prefix) {
            props.insert(stripped.to_string(), v.clone());
        }
    }
    props
}

/// Run one slice of `pair`. Errors before any task starts (configuration, unreachable cluster)
/// are returned; task failures are in the report (`ok: false`).
pub async fn run_slice(
    mm: &MirrorMakerConfig,
    pair: &SourceAndTarget,
    env: &SliceEnv,
    request: &SliceRequest,
) -> Result<SliceReport, SliceError> {
    let started = Instant::now();
    let started_at = chrono::Utc::now();
    let settings = SliceSettings::for_pair(mm, pair)?;
    let max = request.max_duration.unwrap_or(settings.max_duration);
    let deadline = match request.deadline {
        Some(d) => d.min(started + max),
        None => started + max,
    };
    let stop_at = deadline
        .checked_sub(settings.commit_margin)
        .unwrap_or(started)
        .max(started);
    let flow = pair.to_string();
    let span = tracing::info_span!("slice", flow = %flow);
    let _enter = span.enter();

    let configs = pair_configs(mm, pair)?;
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "connector configs resolved"
    );
    let source_cfg = &configs.source;
    let worker = &configs.worker;
    // Everything the slice will read from the state store, in one request.
    let prefetched = SliceEnv {
        state: Arc::new(SliceState::prefetch(
            env.state.clone(),
            &state_keys(&flow, source_cfg.common.tasks_max),
        )),
        leases: env.leases.clone(),
        owner: env.owner.clone(),
    };
    let env = &prefetched;
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "state prefetched"
    );

    let mut report = SliceReport {
        flow: flow.clone(),
        worker_id: env.owner.clone(),
        started_at: started_at.to_rfc3339(),
        duration_ms: 0,
        deadline_margin_ms: 0,
        ok: true,
        caught_up: true,
        records: 0,
        bytes: 0,
        lag: Some(0),
        newest_record_age_ms: None,
        oldest_record_age_ms: None,
        rpo_ms: None,
        source_tasks: 0,
        connector: ConnectorActivity::default(),
        tasks: Vec::new(),
        checkpoints: Default::default(),
        heartbeats: Default::default(),
        gaps: Vec::new(),
        errors: Vec::new(),
        memory_mb: settings.lambda_memory_mb,
        gb_seconds: 0.0,
        estimated_cost_usd: 0.0,
    };

    // Heartbeats run beside everything else, in every pair, even a disabled one (§1.3, §9).
    let (heartbeats_stop, stop_rx) = tokio::sync::watch::channel(false);
    let heartbeats = spawn_heartbeats(&flow, env, &configs, stop_rx, stop_at);
    // Checkpoints, heartbeats and the RPO probe run after the copy: keep time for them.
    let reserve = post_copy_reserve(&configs, env, &flow, max);
    let stop_at = stop_at.checked_sub(reserve).unwrap_or(started).max(started);
    let source_deadline = deadline
        .checked_sub(reserve)
        .unwrap_or(stop_at)
        .max(stop_at);

    let mut sources_done_ms = None;
    // Where this slice's offset syncs end: the checkpoint work reads at least that far.
    let mut offset_syncs_end = None;
    if source_cfg.common.enabled {
        let copied = run_source(
            pair,
            env,
            &settings,
            &configs,
            worker,
            stop_at,
            source_deadline,
            &mut report,
        )
        .await;
        match copied {
            Ok(end) => offset_syncs_end = end,
            Err(e) => {
                heartbeats_stop.send_replace(true);
                finish_heartbeats(heartbeats, deadline).await;
                return Err(e);
            }
        }
        sources_done_ms = Some(chrono::Utc::now().timestamp_millis());
    } else {
        tracing::info!("replication disabled for this pair ({flow}.enabled is not true)");
    }
    heartbeats_stop.send_replace(true);
    report.checkpoints =
        run_checkpoint_work(&flow, env, &configs, deadline, offset_syncs_end).await;
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "checkpoint work done"
    );
    report.heartbeats = finish_heartbeats(heartbeats, deadline).await;

    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "source, checkpoint and heartbeat work done"
    );
    let now_ms = chrono::Utc::now().timestamp_millis();
    report.summarize(now_ms);
    if source_cfg.common.enabled {
        report.rpo_ms = slice_rpo(&configs, &report, sources_done_ms, deadline).await;
    }
    let elapsed = started.elapsed();
    report.duration_ms = elapsed.as_millis() as u64;
    report.deadline_margin_ms = if Instant::now() <= deadline {
        deadline.duration_since(Instant::now()).as_millis() as i64
    } else {
        -(Instant::now().duration_since(deadline).as_millis() as i64)
    };
    let (gbs, usd) = settings.estimated_cost_usd(elapsed.as_secs_f64());
    report.gb_seconds = gbs;
    report.estimated_cost_usd = usd;
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
async fn run_source(
    pair: &SourceAndTarget,
    env: &SliceEnv,
    settings: &SliceSettings,
    configs: &crate::plan::PairConfigs,
    worker: &Props,
    stop_at: Instant,
    deadline: Instant,
    report: &mut SliceReport,
) -> Result<Option<i64>, SliceError> {
    let flow = pair.to_string();
    let cfg = &configs.source;
    let connector = ConnectorKind::Source.simple_name();
    let admin = worker_client_props(worker, "admin");
    let consumer = worker_client_props(worker, "consumer");
    let producer = worker_client_props(worker, "producer");

    let t0 = Instant::now();
    let phase_done =
        |what: &str| tracing::debug!(elapsed_ms = t0.elapsed().as_millis() as u64, "{what}");

    // 2. Worker topics, and 3. the connector lease, side by side (one is Kafka, the other the
    // lease table; both are on every slice's critical path).
    let connector_lease_key = connector_key(&flow, connector);
    let (topics, connector_lease) = tokio::join!(
        ensure_worker_topics(worker, &admin),
        acquire_waiting(
            env,
            &connector_lease_key,
            stop_at.max(Instant::now() + Duration::from_secs(5)),
        )
    );
    let connector_lease = connector_lease.map_err(|e| setup(pair, e))?;
    let topics: WorkerTopics = match topics {
        Ok(t) => t,
        Err(e) => {
            release_now(connector_lease).await;
            return Err(setup(pair, e));
        }
    };
    phase_done("worker topics ready, connector lease acquired");
    // Leases given back while the slice goes on; all are back before it returns. (Detached
    // tasks, not a JoinSet: an early return must not abort a release in progress.)
    let mut releases: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let status = Arc::new(StatusStore::new(
        topics.status.0.clone(),
        topics.status.1,
        consumer.clone(),
        producer.clone(),
    ));

    // 3. Connector phase, under the connector lease.
    let phase = async {
        let now_ms = chrono::Utc::now().timestamp_millis();
        let outcome = run_source_connector_phase(
            cfg,
            env.state.as_ref(),
            &format!("{flow}/{connector}"),
            now_ms,
        )
        .await
        .map_err(|e| setup(pair, e))?;
        phase_done("connector phase done");
        let config_store = ConfigStore::new(
            topics.configs.0.clone(),
            consumer.clone(),
            producer.clone(),
            env.state.clone(),
        );
        let written = config_store
            .put_connector_and_tasks(
                connector,
                &cfg.common.props,
                &outcome.task_configs,
                &config_hash_key(&flow, connector),
            )
            .await
            .map_err(|e| setup(pair, e))?;
        Ok::<_, SliceError>((outcome, written))
    }
    .await;
    releases.push(tokio::spawn(release_now(connector_lease)));
    let (outcome, configs_written) = match phase {
        Ok(done) => done,
        Err(e) => {
            join_releases(releases).await;
            return Err(e);
        }
    };
    phase_done("task configs stored");
    report.connector = ConnectorActivity {
        ran: true,
        created_topics: outcome
            .created_topics
            .iter()
            .map(|t| t.name.clone())
            .collect(),
        grown_topics: outcome
            .grown_topics
            .iter()
            .map(|(t, from, to)| format!("{t}: {from} -> {to}"))
            .collect(),
        config_sync: sync_summary(&outcome.config_sync),
        acl_sync: sync_summary(&outcome.acl_sync),
        task_configs_written: configs_written,
        warnings: outcome.warnings.clone(),
    };
    report.source_tasks = outcome.task_partitions.len() as u32;
    let running = Status {
        state: State::Running,
        trace: None,
        worker_id: flow.clone(),
        generation: 0,
    };
    // Status records are written in the background, in order; all are written before the
    // slice ends.
    status.put_all_in_background(vec![StatusUpdate::Connector {
        name: connector.to_string(),
        status: running.clone(),
    }]);

    // 4. Tasks: take each free task's lease, then set up and run all of them side by side.
    let flush_interval = Duration::from_millis(
        worker
            .get("offset.flush.interval.ms")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(60_000),
    );
    // All task leases are requested at once (one round trip, not one per task); the tasks this
    // invocation won share the slice's memory budget.
    let mut acquiring = tokio::task::JoinSet::new();
    for task_id in 0..outcome.task_partitions.len() as u32 {
        let (leases, owner) = (env.leases.clone(), env.owner.clone());
        let key = task_key(&flow, connector, task_id);
        acquiring.spawn(async move {
            let got = leases.try_acquire(&key, &owner, LEASE_TTL).await;
            (task_id, got)
        });
    }
    let mut won = BTreeMap::new();
    let mut failure = None;
    while let Some(joined) = acquiring.join_next().await {
        match joined.expect("lease acquisition panicked") {
            (task_id, Ok(Some(info))) => {
                won.insert(task_id, info);
            }
            (task_id, Ok(None)) => {
                tracing::info!(task = task_id, "task lease held by another invocation");
                report
                    .tasks
                    .push(TaskReport::held_elsewhere(connector, task_id));
            }
            (_, Err(e)) => failure = Some(e),
        }
    }
    if let Some(e) = failure {
        for info in won.into_values() {
            if let Err(e) = env.leases.release(&info).await {
                tracing::warn!(error = %e, "lease release failed");
            }
        }
        status.flush_background().await;
        join_releases(releases).await;
        return Err(setup(pair, e));
    }
    let memory = TaskMemory::share(won.len());

    let handle = tokio::runtime::Handle::current();
    let mut running_tasks = tokio::task::JoinSet::new();
    for (task_id, info) in won {
        let partitions = &outcome.task_partitions[task_id as usize];
        let token = info.fencing_token;
        let lease = HeldLease::start(env.leases.clone(), info, LEASE_TTL, LEASE_SAFETY);
        let mut store = OffsetStore::new(
            topics.offsets.0.clone(),
            topics.offsets.1,
            consumer.clone(),
            producer.clone(),
            env.state.clone(),
            offsets_hint_key(&flow, connector, task_id),
        );
        let source_partitions: Vec<SourcePartition> = partitions
            .iter()
            .map(|(t, p)| PartitionKey::source(&pair.source, t, *p).0)
            .collect();
        let mut spec = SourceTaskSpec {
            name: format!("{flow}|{connector}-{task_id}"),
            partitions: partitions.clone(),
            remote_topics: outcome.remote_topics.clone(),
            stored_offsets: BTreeMap::new(),
            consumer: cfg.common.client_config(
                ClusterSide::Source,
                ClientKind::Consumer,
                "replication-consumer",
                Some(task_id),
            ),
            producer: task_producer_props(&producer, &cfg.common.props),
            offset_syncs: cfg.emit_offset_syncs_enabled.then(|| {
                (
                    cfg.offset_syncs_producer_config(Some(task_id)),
                    cfg.offset_syncs_topic(),
                )
            }),
            offset_lag_max: cfg.offset_lag_max,
            flush_interval,
            stop_at,
            flush_deadline: deadline
                .checked_sub(settings.commit_margin / 2)
                .unwrap_or(stop_at)
                .max(stop_at),
            on_gap: settings.on_gap,
            silence_check_after: settings.silence_check_after,
            sync_every_commit: sync_every_commit(&cfg.common.props),
            memory,
        };
        let (status, running, handle, source_alias) = (
            status.clone(),
            running.clone(),
            handle.clone(),
            pair.source.clone(),
        );
        running_tasks.spawn(async move {
            let loaded = match store.load(&source_partitions).await {
                Ok(l) => l,
                Err(e) => {
                    let outcome = failed_outcome(format!("load stored offsets: {e}"));
                    return (task_id, token, lease, outcome);
                }
            };
            tracing::info!(
                task = task_id,
                full_read = loaded.full_read,
                records_read = loaded.records_read,
                elapsed_ms = t0.elapsed().as_millis() as u64,
                "offsets loaded"
            );
            spec.stored_offsets = loaded
                .offsets
                .iter()
                .filter_map(|(k, v)| match &k.0 {
                    SourcePartition::Source {
                        topic, partition, ..
                    } => Some(((topic.clone(), *partition), *v)),
                    _ => None,
                })
                .collect();
            status.put_all_in_background(vec![StatusUpdate::Task {
                connector: connector.to_string(),
                task: task_id as i32,
                status: running,
            }]);
            let mut hooks = StoreHooks {
                store,
                handle,
                ownership: lease.ownership(),
                source_alias,
            };
            let outcome =
                match tokio::task::spawn_blocking(move || run_source_task(&spec, &mut hooks)).await
                {
                    Ok(o) => o,
                    Err(e) => failed_outcome(format!("task panicked: {e}")),
                };
            tracing::debug!(
                task = task_id,
                elapsed_ms = t0.elapsed().as_millis() as u64,
                "task copy done"
            );
            (task_id, token, lease, outcome)
        });
    }
    phase_done("tasks started");

    let mut syncs_end: Option<i64> = None;
    while let Some(joined) = running_tasks.join_next().await {
        let (task_id, token, lease, outcome) = joined.expect("task setup panicked");
        syncs_end = syncs_end.max(outcome.offset_syncs_end);
        let task_report = TaskReport::from_outcome(connector, task_id, token, outcome);
        let final_status = Status {
            state: if task_report.error.is_some() {
                State::Failed
            } else {
                State::Unassigned
            },
            trace: task_report.error.clone(),
            worker_id: flow.clone(),
            generation: 0,
        };
        let report_json = serde_json::to_value(&task_report).expect("report serializes");
        let updates = vec![
            StatusUpdate::Task {
                connector: connector.to_string(),
                task: task_id as i32,
                status: final_status,
            },
            StatusUpdate::SliceReport {
                connector: connector.to_string(),
                task: task_id as i32,
                report: report_json,
            },
        ];
        // The lease goes back only after the task's final status is written: a next holder's
        // RUNNING must not be overtaken by our UNASSIGNED.
        let written = status.put_all_in_background(updates);
        releases.push(tokio::spawn(async move {
            let _ = written.await;
            release_now(lease).await
        }));
        report.tasks.push(task_report);
        phase_done("task finished and released");
    }
    report.tasks.sort_by_key(|t| t.task);

    let connector_state = if report.tasks.iter().any(|t| t.error.is_some()) {
        Status {
            state: State::Failed,
            trace: Some("one or more tasks failed; see the task statuses".into()),
            worker_id: flow.clone(),
            generation: 0,
        }
    } else {
        Status {
            state: State::Unassigned,
            trace: None,
            worker_id: flow.clone(),
            generation: 0,
        }
    };
    status.put_all_in_background(vec![StatusUpdate::Connector {
        name: connector.to_string(),
        status: connector_state,
    }]);
    status.flush_background().await;
    join_releases(releases).await;
    phase_done("connector status written, leases released");
    Ok(syncs_end)
}

/// Where the source connector's task-config hash is kept in the state store.
fn config_hash_key(flow: &str, connector: &str) -> String {
    format!("{flow}/{connector}/config-hash")
}

/// Where task `task`'s offsets position hint is kept in the state store.
fn offsets_hint_key(flow: &str, connector: &str, task: u32) -> String {
    format!("{flow}/{connector}/{task}/offsets-hint")
}

/// Every state key a slice of `flow` reads (see [`SliceState`]).
fn state_keys(flow: &str, tasks_max: u32) -> Vec<String> {
    let source = ConnectorKind::Source.simple_name();
    let mut keys = source_connector::state_keys(&format!("{flow}/{source}"));
    keys.push(config_hash_key(flow, source));
    keys.extend((0..tasks_max).map(|t| offsets_hint_key(flow, source, t)));
    keys.extend(checkpoint_runner::state_keys(flow));
    keys
}

async fn join_releases(releases: Vec<tokio::task::JoinHandle<()>>) {
    for r in releases {
        let _ = r.await;
    }
}

/// Give a lease back now; a failure (its error names the lease) only delays the next holder
/// until the lease expires.
async fn release_now(lease: HeldLease) {
    if let Err(e) = lease.release().await {
        tracing::warn!(error = %e, "lease release failed");
    }
}

fn failed_outcome(error: String) -> crate::connectors::source::task::TaskOutcome {
    crate::connectors::source::task::TaskOutcome {
        partitions: Vec::new(),
        records: 0,
        bytes: 0,
        caught_up: false,
        commits: 0,
        offset_syncs_sent: 0,
        offset_syncs_end: None,
        gaps: Vec::new(),
        error: Some(error),
    }
}

/// The data producer: the worker's producer settings, then the connector's
/// `producer.override.*` (Connect's client config override policy is `All` in MM2).
fn task_producer_props(worker_producer: &Props, connector: &Props) -> Props {
    let mut props = worker_producer.clone();
    for (k, v) in connector {
        if let Some(stripped) = k.strip_prefix("producer.override.") {
            props.insert(stripped.to_string(), v.clone());
        }
    }
    props
}

fn sync_summary(run: &SyncRun) -> String {
    match run {
        SyncRun::Disabled => "disabled".into(),
        SyncRun::NotDue { next_due_ms } => format!("not due until {next_due_ms}"),
        SyncRun::Skipped { reason } => format!("skipped: {reason}"),
        SyncRun::Failed { error } => format!("failed: {error}"),
        SyncRun::Ran {
            topics,
            set,
            deleted,
            errors,
        } => format!(
            "ran: {topics} topics, {set} set, {deleted} deleted, {} errors",
            errors.len()
        ),
    }
}

/// Take a lease, retrying while another invocation holds it, until `give_up_at`.
async fn acquire_waiting(
    env: &SliceEnv,
    key: &str,
    give_up_at: Instant,
) -> Result<HeldLease, String> {
    let mut wait = Duration::from_millis(20);
    loop {
        match env.leases.try_acquire(key, &env.owner, LEASE_TTL).await {
            Ok(Some(info)) => {
                return Ok(HeldLease::start(
                    env.leases.clone(),
                    info,
                    LEASE_TTL,
                    LEASE_SAFETY,
                ))
            }
            Ok(None) if Instant::now() + wait < give_up_at => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_millis(500));
            }
            Ok(None) => {
                let holder = env.leases.describe(key).await.ok().flatten();
                return Err(format!(
                    "lease {key} is held by {} and was not released in time",
                    holder
                        .map(|h| h.owner)
                        .unwrap_or_else(|| "another owner".into())
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Commits go to the Connect offsets topic; ownership comes from the task's lease.
struct StoreHooks {
    store: OffsetStore,
    handle: tokio::runtime::Handle,
    ownership: Ownership,
    source_alias: String,
}

impl TaskHooks for StoreHooks {
    fn commit(&mut self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<(), TaskError> {
        let keyed: BTreeMap<PartitionKey, i64> = offsets
            .iter()
            .map(|((t, p), o)| (PartitionKey::source(&self.source_alias, t, *p), *o))
            .collect();
        // This runs on a blocking thread (the copy loop), where blocking on the runtime is fine.
        self.handle
            .block_on(self.store.commit(&keyed))
            .map(|_| ())
            .map_err(|e| TaskError::Commit {
                task: self.store.topic().to_string(),
                message: e.to_string(),
            })
    }

    fn still_owner(&mut self) -> bool {
        self.ownership.still_owner()
    }
}

// ---------------------------------------------------------------------------------------------
// Heartbeats, checkpoints and RPO (issue #5)
// ---------------------------------------------------------------------------------------------

/// Starts the heartbeat connector of the pair (§9): it creates `heartbeats` on the target and
/// emits until `stop` is set (when the source tasks finish) or `stop_at`.
fn spawn_heartbeats(
    flow: &str,
    env: &SliceEnv,
    configs: &crate::plan::PairConfigs,
    stop: tokio::sync::watch::Receiver<bool>,
    stop_at: Instant,
) -> tokio::task::JoinHandle<HeartbeatActivity> {
    use tracing::Instrument;
    let cfg = configs.heartbeat.clone();
    let producer = task_producer_props(
        &worker_client_props(&configs.worker, "producer"),
        &cfg.common.props,
    );
    let leases = HeartbeatLeases {
        store: env.leases.clone(),
        owner: env.owner.clone(),
        ttl: LEASE_TTL,
        safety: LEASE_SAFETY,
    };
    let flow = flow.to_string();
    tokio::spawn(
        async move { run_heartbeats(&cfg, &flow, &producer, &leases, stop, stop_at).await }
            .instrument(tracing::Span::current()),
    )
}

/// Waits for the heartbeat task, at most until the deadline.
async fn finish_heartbeats(
    handle: tokio::task::JoinHandle<HeartbeatActivity>,
    deadline: Instant,
) -> HeartbeatActivity {
    let abort = handle.abort_handle();
    let wait = deadline.saturating_duration_since(Instant::now());
    match tokio::time::timeout(wait, handle).await {
        Ok(Ok(activity)) => activity,
        Ok(Err(e)) => HeartbeatActivity {
            status: format!("failed: heartbeat task panicked: {e}"),
            ..Default::default()
        },
        Err(_) => {
            abort.abort();
            HeartbeatActivity {
                status: "failed: still running at the slice deadline".into(),
                ..Default::default()
            }
        }
    }
}

/// Time taken from the copy (its stop time and its flush deadline) for the work after it:
/// 500 ms for the heartbeat task's end and the RPO probe, plus, when checkpoint work is due, a
/// fifth of the slice up to 5 s; never more than a quarter of the slice.
fn post_copy_reserve(
    configs: &crate::plan::PairConfigs,
    env: &SliceEnv,
    flow: &str,
    max: Duration,
) -> Duration {
    let now_ms = chrono::Utc::now().timestamp_millis();
    let prefix = format!("{flow}/{}", checkpoint_runner::CONNECTOR);
    let checkpoints =
        match checkpoint_runner::due(&configs.checkpoint, env.state.as_ref(), &prefix, now_ms) {
            Some(due) if due.any() => (max / 5).min(Duration::from_secs(5)),
            _ => Duration::ZERO,
        };
    (Duration::from_millis(500) + checkpoints).min(max / 4)
}

/// The checkpoint connector and tasks (§8), after the source tasks' final commit and offset-sync
/// flush, so checkpoints reflect this slice's replication.
async fn run_checkpoint_work(
    flow: &str,
    env: &SliceEnv,
    configs: &crate::plan::PairConfigs,
    deadline: Instant,
    offset_syncs_end: Option<i64>,
) -> CheckpointActivity {
    let cfg = &configs.checkpoint;
    let producer = task_producer_props(
        &worker_client_props(&configs.worker, "producer"),
        &cfg.common.props,
    );
    let cp_env = CheckpointEnv {
        offset_syncs_end,
        state: env.state.as_ref(),
        leases: env.leases.clone(),
        owner: env.owner.clone(),
        lease_ttl: LEASE_TTL,
        lease_safety: LEASE_SAFETY,
    };
    // Keep a moment after it for the report.
    let until = deadline
        .checked_sub(Duration::from_millis(250))
        .unwrap_or(deadline);
    checkpoint_runner::run_checkpoints(cfg, flow, &cp_env, &producer, until).await
}

/// [`SliceReport::rpo_ms`]: time since the source tasks finished when the slice caught up;
/// otherwise the age of the oldest record not yet replicated, read from the source.
async fn slice_rpo(
    configs: &crate::plan::PairConfigs,
    report: &SliceReport,
    sources_done_ms: Option<i64>,
    deadline: Instant,
) -> Option<i64> {
    let now_ms = chrono::Utc::now().timestamp_millis();
    if report.caught_up {
        return SliceReport::compute_rpo(true, sources_done_ms, None, now_ms);
    }
    // Every task must have run here, each lagging partition must have a known position.
    if report
        .tasks
        .iter()
        .any(|t| t.run != crate::report::TaskRun::Ran)
    {
        return None;
    }
    let consumer = configs
        .source
        .common
        .source_consumer_config("replication-consumer");
    // Never replicated: the first record to replicate is the log start, unless the flow starts
    // from the latest records, which then are not known yet.
    let from_start = !consumer
        .get("auto.offset.reset")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("latest"));
    let mut missing = Vec::new();
    for p in report.tasks.iter().flat_map(|t| t.partitions.iter()) {
        match (p.lag, p.end_offset) {
            (Some(0), _) => {}
            (Some(_), Some(next)) => missing.push((p.topic.clone(), p.partition, Some(next))),
            (Some(_), None) if from_start => missing.push((p.topic.clone(), p.partition, None)),
            _ => return None,
        }
    }
    if missing.is_empty() {
        return None;
    }
    let budget = deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(Duration::from_millis(200))
        .min(Duration::from_secs(3));
    if budget < Duration::from_millis(100) {
        return None;
    }
    let oldest = tokio::task::spawn_blocking(move || first_timestamps(&consumer, &missing, budget))
        .await
        .ok()
        .flatten()?;
    SliceReport::compute_rpo(false, None, Some(oldest), now_ms)
}

/// The smallest timestamp among the records at the given `(topic, partition, offset)`s (`None`:
/// the log start), or `None` unless every one was read within `budget`. Blocking.
fn first_timestamps(
    consumer: &Props,
    positions: &[(String, i32, Option<i64>)],
    budget: Duration,
) -> Option<i64> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::Message;
    let role = "rpo-probe";
    let mut config = crate::kafka::client_config(role, consumer).ok()?;
    // Assigned, never joined, nothing committed: the group never materialises on the source.
    config
        .set("group.id", "mirrorslice-rpo-probe")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("auto.offset.reset", "error");
    let c: BaseConsumer<crate::kafka::MirrorContext> = config
        .create_with_context(crate::kafka::MirrorContext)
        .ok()?;
    let mut tpl = rdkafka::TopicPartitionList::new();
    for (t, p, o) in positions {
        let offset = o.map_or(rdkafka::Offset::Beginning, rdkafka::Offset::Offset);
        tpl.add_partition_offset(t, *p, offset).ok()?;
    }
    c.assign(&tpl).ok()?;
    let mut seen: BTreeMap<(String, i32), i64> = BTreeMap::new();
    let until = Instant::now() + budget;
    while seen.len() < positions.len() && Instant::now() < until {
        match c.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => {
                if let Some(ts) = m.timestamp().to_millis() {
                    seen.entry((m.topic().to_string(), m.partition()))
                        .or_insert(ts);
                }
            }
            Some(Err(e)) => tracing::debug!(error = %e, "rpo probe"),
            None => {}
        }
    }
    (seen.len() == positions.len())
        .then(|| seen.values().copied().min())
        .flatten()
}

/// Flow-scoped `A->B.mirrorslice.offset.syncs.every.commit` (default `true`): promote delayed
/// offset syncs at every commit, including the slice's last, so groups at the end of the log
/// translate exactly. `false` promotes only every `offset.flush.interval.ms`, like an always-on
/// MM2; it exists to measure the difference (see `examples/translation_error.rs`).
fn sync_every_commit(connector_props: &Props) -> bool {
    connector_props
        .get("mirrorslice.offset.syncs.every.commit")
        .map(|v| !v.trim().eq_ignore_ascii_case("false"))
        .unwrap_or(true)
}
