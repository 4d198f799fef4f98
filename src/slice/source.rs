//! The source connector's part of a slice (steps 2–5 of [`super`]): worker topics, the
//! connector phase under its lease, then every task this invocation wins, copying side by side.

use super::assignment::{self, admit_under_connector_lease, AssignmentRecord, Gate};
use super::task_commits::{StoreHooks, HINT_INTERVAL};
use super::{
    config_hash_key, join_releases, offsets_hint_key, release_now, setup, task_producer_props,
    worker_client_props, SliceEnv, SliceError,
};
use crate::config::connector::{ClientKind, ClusterSide};
use crate::config::slice::SliceSettings;
use crate::config::{ConnectorKind, Props, SourceAndTarget};
use crate::connect::config_store::ConfigStore;
use crate::connect::internal_topics::{ensure_worker_topics, WorkerTopics};
use crate::connect::offset_store::{OffsetStore, PartitionKey};
use crate::connect::status_store::{StatusStore, StatusUpdate};
use crate::connectors::source::connector::{
    run_source_connector_phase, ConnectorPhaseOutcome, SyncRun,
};
use crate::connectors::source::copier::SliceCopier;
use crate::connectors::source::task::{ActiveTask, SliceClients, SourceTaskSpec, TaskOutcome};
use crate::lease::{
    connector_key, task_key, HeldLease, LeaseError, LeaseInfo, LeaseStore, LeaseTiming,
};
use crate::plan::PairConfigs;
use crate::report::{ConnectorActivity, SliceReport, TaskReport};
use crate::wire::connect_offsets::SourcePartition;
use crate::wire::connect_status::{State, Status};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[allow(clippy::too_many_arguments)]
/// What the source connector's part of a slice runs with.
pub(super) struct SourceSlice<'a> {
    pub pair: &'a SourceAndTarget,
    pub env: &'a SliceEnv,
    pub settings: &'a SliceSettings,
    pub configs: &'a PairConfigs,
    /// Tasks stop consuming at this instant.
    pub stop_at: Instant,
    /// Tasks have flushed and committed by this instant.
    pub deadline: Instant,
}

/// The Connect worker's own client settings (§2.4), for internal topics and data producers.
struct WorkerClients {
    admin: Props,
    consumer: Props,
    producer: Props,
}

/// A task lease this invocation won.
struct WonTask {
    id: u32,
    lease: HeldLease,
    /// The token of the connector lease the task lease was won under: its commits' fence.
    connector_token: u64,
}

impl SourceSlice<'_> {
    fn flow(&self) -> String {
        self.pair.to_string()
    }

    /// Runs the source connector's part of the slice; returns where this slice's offset syncs
    /// end (the checkpoint work reads at least that far).
    pub(super) async fn run(&self, report: &mut SliceReport) -> Result<Option<i64>, SliceError> {
        let worker = &self.configs.worker;
        let clients = WorkerClients {
            admin: worker_client_props(worker, "admin"),
            consumer: worker_client_props(worker, "consumer"),
            producer: worker_client_props(worker, "producer"),
        };
        let t0 = Instant::now();
        let (topics, connector_lease) = self.worker_topics_and_lease(&clients).await?;
        phase_done(t0, "worker topics ready, connector lease acquired");
        // Leases given back while the slice goes on; all are back before it returns. (Detached
        // tasks, not a JoinSet: an early return must not abort a release in progress.)
        let mut releases: Vec<tokio::task::JoinHandle<()>> = Vec::new();
        let record_key = assignment::record_key(&self.flow(), CONNECTOR);
        let record = assignment::read_record(self.env.state.clone(), record_key);
        let (outcome, configs_written) = match self.connector_phase(&topics, &clients).await {
            Ok(done) => done,
            Err(e) => {
                release_now(connector_lease).await;
                return Err(e);
            }
        };
        phase_done(t0, "task configs stored");
        report.connector = connector_activity(&outcome, configs_written);
        report.source_tasks = outcome.task_partitions.len() as u32;

        let status = Arc::new(StatusStore::new(
            topics.status.0.clone(),
            topics.status.1,
            clients.consumer.clone(),
            clients.producer.clone(),
        ));
        // Status records are written in the background, in order; all are written before the
        // slice ends.
        status.put_all_in_background(vec![StatusUpdate::Connector {
            name: CONNECTOR.to_string(),
            status: self.status(State::Running, None),
        }]);
        // Task leases are taken under the connector lease (see `assignment`), which goes back
        // right after.
        let won = self
            .acquire_task_leases(&outcome, record, &connector_lease, report)
            .await;
        releases.push(tokio::spawn(release_now(connector_lease)));
        let won = match won {
            Ok(won) => won,
            Err(e) => {
                self.flush_status(&status).await;
                join_releases(releases, self.deadline).await;
                return Err(e);
            }
        };
        let shared = self.shared_clients(&clients, &outcome, &won).await;
        let mut running = tokio::task::JoinSet::new();
        for task in won {
            let run = self.task_run(task, &outcome, &topics, &clients, &shared);
            running.spawn(run.run(status.clone(), self.status(State::Running, None), t0));
        }
        // The last task to end drops the shared clients, on its blocking thread.
        drop(shared);
        phase_done(t0, "tasks started");
        let syncs_end = self
            .collect_tasks(running, &status, &mut releases, report, t0)
            .await;

        let failed = report.tasks.iter().any(|t| t.error.is_some());
        let connector_status = if failed {
            let trace = "one or more tasks failed; see the task statuses";
            self.status(State::Failed, Some(trace.into()))
        } else {
            self.status(State::Unassigned, None)
        };
        status.put_all_in_background(vec![StatusUpdate::Connector {
            name: CONNECTOR.to_string(),
            status: connector_status,
        }]);
        self.flush_status(&status).await;
        join_releases(releases, self.deadline).await;
        phase_done(t0, "connector status written, leases released");
        Ok(syncs_end)
    }

    /// Waits for the background status writes until the deadline.
    async fn flush_status(&self, status: &StatusStore) {
        let flushed = tokio::time::timeout_at(self.deadline.into(), status.flush_background());
        if flushed.await.is_err() {
            tracing::warn!("status records not written by the deadline");
        }
    }

    fn status(&self, state: State, trace: Option<String>) -> Status {
        Status {
            state,
            trace,
            worker_id: self.flow(),
            generation: 0,
        }
    }

    /// Worker topics (step 2) and the connector lease (step 3), side by side: one is Kafka, the
    /// other the lease table, and both are on every slice's critical path.
    async fn worker_topics_and_lease(
        &self,
        clients: &WorkerClients,
    ) -> Result<(WorkerTopics, HeldLease), SliceError> {
        let key = connector_key(&self.flow(), CONNECTOR);
        // Wait a little for another holder even in a slice about to stop, never past its end.
        let give_up_at = self
            .stop_at
            .max(Instant::now() + Duration::from_secs(5))
            .min(self.deadline);
        let (topics, lease) = tokio::join!(
            ensure_worker_topics(&self.configs.worker, &clients.admin),
            acquire_waiting(self.env, &key, self.settings.lease, give_up_at)
        );
        let lease = lease.map_err(|e| setup(self.pair, e))?;
        match topics {
            Ok(topics) => Ok((topics, lease)),
            Err(e) => {
                release_now(lease).await;
                Err(setup(self.pair, e))
            }
        }
    }

    /// Step 3, under the connector lease: topics, configs and ACLs, the task assignment, and
    /// the connector and task configs in the config topic.
    async fn connector_phase(
        &self,
        topics: &WorkerTopics,
        clients: &WorkerClients,
    ) -> Result<(ConnectorPhaseOutcome, bool), SliceError> {
        let flow = self.flow();
        let cfg = &self.configs.source;
        let now_ms = chrono::Utc::now().timestamp_millis();
        let state = self.env.state.as_ref();
        let outcome =
            run_source_connector_phase(cfg, state, &format!("{flow}/{CONNECTOR}"), now_ms)
                .await
                .map_err(|e| setup(self.pair, e))?;
        tracing::debug!("connector phase done");
        let config_store = ConfigStore::new(
            topics.configs.0.clone(),
            clients.consumer.clone(),
            clients.producer.clone(),
            self.env.state.clone(),
        );
        let written = config_store
            .put_connector_and_tasks(
                CONNECTOR,
                &self.configs.source_raw,
                &outcome.task_configs,
                &config_hash_key(&flow, CONNECTOR),
            )
            .await
            .map_err(|e| setup(self.pair, e))?;
        Ok((outcome, written))
    }

    /// Step 4, under the connector lease: admits the tasks whose partitions no task of an
    /// earlier assignment still copies ([`assignment`]), then requests their leases at once
    /// (one round trip, not one per task). Tasks held by another invocation, or waiting for
    /// one, are reported as such; the rest are this slice's.
    async fn acquire_task_leases(
        &self,
        outcome: &ConnectorPhaseOutcome,
        record: tokio::task::JoinHandle<Result<AssignmentRecord, String>>,
        connector_lease: &HeldLease,
        report: &mut SliceReport,
    ) -> Result<Vec<WonTask>, SliceError> {
        let flow = self.flow();
        let record = record.await.expect("record read panicked");
        let record = record.map_err(|e| setup(self.pair, e))?;
        let task_key_of = |id| task_key(&flow, CONNECTOR, id);
        let gate = Gate {
            leases: &self.env.leases,
            state: &self.env.state,
            record_key: assignment::record_key(&flow, CONNECTOR),
            task_key: &task_key_of,
            connector_token: connector_lease.info().fencing_token,
            until: self.stop_at,
        };
        let wanted = AssignmentRecord::of(&outcome.task_partitions);
        let (admission, holders) = admit_under_connector_lease(&gate, record, &wanted)
            .await
            .map_err(|e| setup(self.pair, e))?;
        for (id, blockers) in &admission.waiting {
            tracing::info!(
                task = id,
                ?blockers,
                "task waits for the previous assignment"
            );
            let waiting_for = waiting_for(blockers, &holders);
            report
                .tasks
                .push(TaskReport::waiting(CONNECTOR, *id, waiting_for));
        }
        let mut acquiring = tokio::task::JoinSet::new();
        for id in admission.startable {
            let (leases, owner) = (self.env.leases.clone(), self.env.owner.clone());
            let key = task_key(&flow, CONNECTOR, id);
            let (timing, until) = (self.settings.lease, self.stop_at);
            acquiring
                .spawn(async move { (id, acquire_by(leases, &key, &owner, timing, until).await) });
        }
        let mut won = Vec::new();
        let mut failure = None;
        while let Some(joined) = acquiring.join_next().await {
            match joined.expect("lease acquisition panicked") {
                (id, Ok(Some(lease))) => won.push(WonTask {
                    id,
                    lease,
                    connector_token: gate.connector_token,
                }),
                (id, Ok(None)) => {
                    tracing::info!(task = id, "task lease held by another invocation");
                    report.tasks.push(TaskReport::held_elsewhere(CONNECTOR, id));
                }
                (_, Err(e)) => failure = Some(e.to_string()),
            }
        }
        // A holder frozen past its connector lease must not start tasks a successor may have
        // reassigned meanwhile.
        if failure.is_none() && !connector_lease.still_owner() {
            failure = Some("the connector lease ran out while task leases were taken".into());
        }
        let Some(e) = failure else {
            won.sort_by_key(|t| t.id);
            return Ok(won);
        };
        for task in won {
            release_now(task.lease).await;
        }
        Err(setup(self.pair, e))
    }

    /// Everything one won task needs to run on its own.
    fn task_run(
        &self,
        task: WonTask,
        outcome: &ConnectorPhaseOutcome,
        topics: &WorkerTopics,
        clients: &WorkerClients,
        shared: &Shared,
    ) -> TaskRun {
        let (flow, cfg, id) = (self.flow(), &self.configs.source, task.id);
        let partitions = &outcome.task_partitions[id as usize];
        let spec = SourceTaskSpec {
            name: format!("{flow}|{CONNECTOR}-{id}"),
            partitions: partitions.clone(),
            remote_topics: outcome.remote_topics.clone(),
            stored_offsets: BTreeMap::new(),
            stored_topic_ids: BTreeMap::new(),
            topic_ids: partitions
                .iter()
                .filter_map(|(t, _)| Some((t.clone(), outcome.topic_ids.get(t)?.clone())))
                .collect(),
            consumer: cfg.common.client_config(
                ClusterSide::Source,
                ClientKind::Consumer,
                "replication-consumer",
                Some(id),
            ),
            producer: task_producer_props(&clients.producer, &cfg.common.props),
            offset_syncs: cfg.emit_offset_syncs_enabled.then(|| {
                (
                    cfg.offset_syncs_producer_config(Some(id)),
                    cfg.offset_syncs_topic(),
                )
            }),
            offset_lag_max: cfg.offset_lag_max,
            flush_interval: self.settings.offset_flush_interval,
            stop_at: self.stop_at,
            flush_deadline: self
                .deadline
                .checked_sub(self.settings.commit_margin / 2)
                .unwrap_or(self.stop_at)
                .max(self.stop_at),
            on_gap: self.settings.on_gap,
            silence_check_after: self.settings.silence_check_after,
            sync_every_commit: sync_every_commit(&cfg.common.props),
        };
        let store = OffsetStore::new(
            topics.offsets.0.clone(),
            topics.offsets.1,
            clients.consumer.clone(),
            clients.producer.clone(),
            self.env.state.clone(),
            offsets_hint_key(&flow, CONNECTOR, id),
        )
        .fenced_by(task.lease.info().fencing_token)
        .with_commit_fence(task.connector_token)
        .with_hint_interval(HINT_INTERVAL);
        TaskRun {
            id,
            token: task.lease.info().fencing_token,
            lease: task.lease,
            spec,
            store,
            source_alias: self.pair.source.clone(),
            deadline: self.deadline,
            shared: shared.clone(),
        }
    }

    /// The replication consumer and data producer the slice's tasks share, sized for the
    /// partitions of the tasks it runs (`won`). A failure to create them fails every task,
    /// naming the client. Created on a blocking thread, as each task's clients were: librdkafka
    /// starts its threads and (with TLS) loads its trust store there.
    async fn shared_clients(
        &self,
        clients: &WorkerClients,
        outcome: &ConnectorPhaseOutcome,
        won: &[WonTask],
    ) -> Shared {
        if won.is_empty() {
            // Nothing to copy: no clients to create (and to close on the runtime's thread).
            return Err("no task to run".into());
        }
        let cfg = &self.configs.source;
        let consumer = (cfg.common).client_config(
            ClusterSide::Source,
            ClientKind::Consumer,
            "replication-consumer",
            None,
        );
        let producer = task_producer_props(&clients.producer, &cfg.common.props);
        let offset_syncs = (cfg.emit_offset_syncs_enabled).then(|| {
            (
                cfg.offset_syncs_producer_config(None),
                cfg.offset_syncs_topic(),
            )
        });
        // Each task that copies reads its partitions through a queue of its own.
        let queues = (won.iter())
            .filter(|t| !outcome.task_partitions[t.id as usize].is_empty())
            .count();
        let owner = format!("{}|{CONNECTOR}", self.flow());
        let opened = tokio::task::spawn_blocking(move || {
            let syncs = offset_syncs.as_ref();
            let clients = SliceClients::open(&owner, &consumer, &producer, queues, syncs);
            let clients = clients.map_err(|e| e.to_string())?;
            SliceCopier::start("slice-copier", clients)
                .map_err(|e| format!("starting the slice's copy thread: {e}"))
        });
        match opened.await {
            Ok(opened) => opened.map(Arc::new),
            Err(e) => Err(format!("creating the replication clients panicked: {e}")),
        }
    }

    /// Step 5: as each task ends, its final status and slice report go to the status topic,
    /// then its lease is given back. Returns where the tasks' offset syncs end.
    async fn collect_tasks(
        &self,
        mut running: tokio::task::JoinSet<(FinishedTask, TaskOutcome)>,
        status: &Arc<StatusStore>,
        releases: &mut Vec<tokio::task::JoinHandle<()>>,
        report: &mut SliceReport,
        t0: Instant,
    ) -> Option<i64> {
        let mut syncs_end: Option<i64> = None;
        while let Some(joined) = running.join_next().await {
            let (task, outcome) = joined.expect("task setup panicked");
            syncs_end = syncs_end.max(outcome.offset_syncs_end);
            let task_report = TaskReport::from_outcome(CONNECTOR, task.id, task.token, outcome);
            let state = match task_report.error {
                Some(_) => State::Failed,
                None => State::Unassigned,
            };
            let report_json = serde_json::to_value(&task_report).expect("report serializes");
            let updates = vec![
                StatusUpdate::Task {
                    connector: CONNECTOR.to_string(),
                    task: task.id as i32,
                    status: self.status(state, task_report.error.clone()),
                },
                StatusUpdate::SliceReport {
                    connector: CONNECTOR.to_string(),
                    task: task.id as i32,
                    report: report_json,
                },
            ];
            // The lease goes back only after the task's final status is written: a next
            // holder's RUNNING must not be overtaken by our UNASSIGNED.
            let written = status.put_all_in_background(updates);
            releases.push(tokio::spawn(async move {
                let _ = written.await;
                release_now(task.lease).await
            }));
            report.tasks.push(task_report);
            phase_done(t0, "task finished and released");
        }
        report.tasks.sort_by_key(|t| t.task);
        syncs_end
    }
}

/// One won task, ready to run on its own.
struct TaskRun {
    id: u32,
    token: u64,
    lease: HeldLease,
    spec: SourceTaskSpec,
    store: OffsetStore,
    source_alias: String,
    /// The task has committed by then ([`SourceSlice::deadline`]).
    deadline: Instant,
    shared: Shared,
}

/// The slice's shared clients and copy thread, or why they could not be created.
type Shared = Result<Arc<SliceCopier<StoreHooks>>, String>;

/// A task that ran: its lease goes back once its status is written.
struct FinishedTask {
    id: u32,
    token: u64,
    lease: HeldLease,
}

impl TaskRun {
    /// Loads the task's stored offsets, marks it RUNNING and copies on a blocking thread.
    async fn run(
        self,
        status: Arc<StatusStore>,
        running: Status,
        t0: Instant,
    ) -> (FinishedTask, TaskOutcome) {
        let TaskRun {
            id,
            token,
            lease,
            mut spec,
            mut store,
            source_alias,
            deadline,
            shared,
        } = self;
        let finished = |lease| FinishedTask { id, token, lease };
        let source_partitions: Vec<SourcePartition> = spec
            .partitions
            .iter()
            .map(|(t, p)| PartitionKey::source(&source_alias, t, *p).0)
            .collect();
        let loaded = match store.load(&source_partitions).await {
            Ok(l) => l,
            Err(e) => {
                let outcome = TaskOutcome::empty(Some(format!("load stored offsets: {e}")));
                // Possibly the last holder: closing the consumer blocks, so not on this thread.
                drop(tokio::task::spawn_blocking(move || drop(shared)));
                return (finished(lease), outcome);
            }
        };
        tracing::info!(
            task = id,
            full_read = loaded.full_read,
            records_read = loaded.records_read,
            elapsed_ms = t0.elapsed().as_millis() as u64,
            "offsets loaded"
        );
        let source_tp = |k: &PartitionKey| match &k.0 {
            SourcePartition::Source {
                topic, partition, ..
            } => Some((topic.clone(), *partition)),
            _ => None,
        };
        spec.stored_offsets = (loaded.offsets.iter())
            .filter_map(|(k, v)| Some((source_tp(k)?, *v)))
            .collect();
        spec.stored_topic_ids = (loaded.topic_ids.iter())
            .filter_map(|(k, id)| Some((source_tp(k)?, id.clone())))
            .collect();
        status.put_all_in_background(vec![StatusUpdate::Task {
            connector: CONNECTOR.to_string(),
            task: id as i32,
            status: running,
        }]);
        let hooks = StoreHooks::new(
            spec.name.clone(),
            deadline,
            store,
            lease.ownership(),
            source_alias,
            spec.topic_ids.clone(),
        );
        let outcome = match shared {
            Ok(copier) => copy(spec, copier, hooks).await,
            Err(e) => TaskOutcome::empty(Some(e)),
        };
        tracing::debug!(
            task = id,
            elapsed_ms = t0.elapsed().as_millis() as u64,
            "task copy done"
        );
        (finished(lease), outcome)
    }
}

/// Starts the task (positions and assigns its partitions) on a blocking thread, copies on the
/// slice's copy thread and finishes on a blocking thread again. The slice's clients are closed
/// by their last holder, on one of those blocking threads.
async fn copy(
    spec: SourceTaskSpec,
    copier: Arc<SliceCopier<StoreHooks>>,
    hooks: StoreHooks,
) -> TaskOutcome {
    let starting = copier.clone();
    let started = tokio::task::spawn_blocking(move || {
        let task = ActiveTask::start(Arc::new(spec), starting.clients(), starting.wake());
        (task, hooks)
    });
    // `Ok`: a task that stopped copying; `Err`: one that ended as it started.
    let (ended, mut hooks) = match started.await {
        Ok((Ok(task), hooks)) => match copier.copy(task, hooks).await {
            Ok((task, hooks)) => (Ok(task), hooks),
            Err(_) => return close_then(copier, "the slice's copy thread panicked".into()),
        },
        Ok((Err(outcome), hooks)) => (Err(outcome), hooks),
        Err(e) => return close_then(copier, format!("task panicked: {e}")),
    };
    let finished = tokio::task::spawn_blocking(move || {
        let outcome = ended.map_or_else(|outcome| outcome, |task| task.finish(&mut hooks));
        hooks.save_hint();
        drop(copier); // possibly the last holder: closing the clients blocks
        outcome
    });
    (finished.await).unwrap_or_else(|e| TaskOutcome::empty(Some(format!("task panicked: {e}"))))
}

/// A task that ended with `error`: the copier (possibly the clients' last holder, whose
/// closing blocks) is dropped on a blocking thread.
fn close_then(copier: Arc<SliceCopier<StoreHooks>>, error: String) -> TaskOutcome {
    drop(tokio::task::spawn_blocking(move || drop(copier)));
    TaskOutcome::empty(Some(error))
}

/// What a waiting task waits for, for its report: the live tasks of the previous assignment.
fn waiting_for(blockers: &[u32], holders: &BTreeMap<u32, LeaseInfo>) -> String {
    let each = blockers.iter().map(|id| match holders.get(id) {
        Some(h) => format!("task {id} of the previous assignment, held by {}", h.owner),
        None => format!("task {id} of the previous assignment"),
    });
    each.collect::<Vec<_>>().join("; ")
}

/// The source connector's simple name: its lease keys, config and status records use it.
const CONNECTOR: &str = ConnectorKind::Source.simple_name();

fn phase_done(t0: Instant, what: &str) {
    tracing::debug!(elapsed_ms = t0.elapsed().as_millis() as u64, "{what}");
}

fn connector_activity(outcome: &ConnectorPhaseOutcome, configs_written: bool) -> ConnectorActivity {
    ConnectorActivity {
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
    }
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
    timing: LeaseTiming,
    give_up_at: Instant,
) -> Result<HeldLease, String> {
    let mut wait = Duration::from_millis(20);
    loop {
        match acquire_by(env.leases.clone(), key, &env.owner, timing, give_up_at).await {
            Ok(Some(lease)) => return Ok(lease),
            Ok(None) if Instant::now() + wait < give_up_at => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_millis(500));
            }
            Ok(None) => {
                let describe = env.leases.describe(key);
                let holder = tokio::time::timeout(Duration::from_secs(1), describe)
                    .await
                    .ok()
                    .and_then(|answer| answer.ok().flatten());
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

/// [`HeldLease::acquire`], given up at `until`: a stalled lease table must not hold the slice
/// past its stop time. (If the request did land, the lease expires unused.)
async fn acquire_by(
    leases: Arc<dyn LeaseStore>,
    key: &str,
    owner: &str,
    timing: LeaseTiming,
    until: Instant,
) -> Result<Option<HeldLease>, LeaseError> {
    let acquired = HeldLease::acquire(leases, key, owner, timing);
    match tokio::time::timeout_at(until.into(), acquired).await {
        Ok(result) => result,
        Err(_) => Err(LeaseError::Backend {
            key: key.to_string(),
            message: "the lease store did not answer before the slice's stop time".into(),
        }),
    }
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
