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

mod assignment;
mod source;
mod task_commits;

use crate::config::connector::{ClientKind, ClusterSide};
use crate::config::guarantees;
use crate::config::slice::SliceSettings;
use crate::config::{ConfigError, ConnectorKind, MirrorMakerConfig, Props, SourceAndTarget};
use crate::connect::worker_group::{java_workers, JavaWorkers};
use crate::connectors::checkpoint::runner::{self as checkpoint_runner, CheckpointEnv};
use crate::connectors::heartbeat::{run_heartbeats, HeartbeatLeases};
use crate::connectors::source::connector as source_connector;
use crate::kafka::probe::{connections, probe, Connection, Probe};
use crate::kafka::ClientError;
use crate::lease::{HeldLease, LeaseStore, LeaseTiming};
use crate::plan::{pair_configs, PairConfigs};
use crate::report::{CheckpointActivity, ConnectorActivity, HeartbeatActivity, SliceReport};
use crate::state::{SliceState, StateStore};
use source::SourceSlice;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// A slice's report before any work: ok, caught up, nothing copied.
fn empty_report(
    flow: &str,
    owner: &str,
    started_at: chrono::DateTime<chrono::Utc>,
    memory_mb: u32,
) -> SliceReport {
    SliceReport {
        flow: flow.to_string(),
        worker_id: owner.to_string(),
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
        memory_mb,
        gb_seconds: 0.0,
        estimated_cost_usd: 0.0,
    }
}

/// After the last slice of a process (the Lambda handler's one, the CLI's all): waits until
/// `deadline` for the status, heartbeat and checkpoint records still queued in the process-wide
/// producers, then drops the rest, so nothing is delivered after the invocation returned (a
/// frozen Lambda would send it on its next thaw, after newer records). Returns an error line for
/// the report when records were dropped.
pub async fn settle(deadline: Instant) -> Option<String> {
    let settle = move || crate::kafka::internal_log::settle_shared_producers(deadline);
    let unsettled = tokio::task::spawn_blocking(settle)
        .await
        .unwrap_or_default();
    (unsettled > 0).then(|| {
        format!(
            "internal-topic records (status, heartbeats or checkpoints) of {unsettled} \
             producer(s) were not delivered by the deadline and were dropped"
        )
    })
}

/// Refuses producer settings that void at-least-once ([`guarantees`]) for the data producer and
/// the producer of the Connect internal topics; returns (and logs) the warnings.
pub(crate) fn check_producers(
    mm: &MirrorMakerConfig,
    pair: &SourceAndTarget,
    configs: &PairConfigs,
) -> Result<Vec<String>, ConfigError> {
    let worker = worker_client_props(&configs.worker, "producer");
    let data = task_producer_props(&worker, &configs.source.common.props);
    let mut warnings =
        guarantees::check_producer(mm, &format!("the data producer of {pair}"), &data)?;
    let internal = format!("the Connect internal-topic producer of {pair}");
    warnings.extend(guarantees::check_producer(mm, &internal, &worker)?);
    for w in &warnings {
        tracing::warn!("{w}");
    }
    Ok(warnings)
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
    // Clients kept from an earlier slice (a warm Lambda, thawed) hold tokens that may have
    // expired while the process was frozen: fresh ones before anything is asked of them.
    crate::kafka::msk_iam::refresh_all();
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
    let producer_warnings = check_producers(mm, pair, &configs)?;
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "connector configs resolved"
    );
    // Asked now, so the answer arrives while the state is read (the read blocks this thread).
    let java_check = spawn_java_workers_check(&configs, deadline);
    let probes = spawn_cluster_probes(&configs, deadline);
    let source_cfg = &configs.source;
    // Everything the slice will read from the state store, in one request; every state call of
    // the slice gives up at its deadline.
    let bounded = (env.state.bounded_by(deadline)).unwrap_or_else(|| env.state.clone());
    let prefetched = SliceEnv {
        state: Arc::new(SliceState::prefetch(
            bounded,
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

    refuse_rejected_clusters(pair, probes).await?;
    refuse_beside_java_workers(pair, java_check).await?;
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "no Java MirrorMaker 2 worker in the flow's Connect group"
    );
    let mut report = empty_report(&flow, &env.owner, started_at, settings.lambda_memory_mb);

    // Heartbeats run beside everything else, in every pair, even a disabled one (§1.3, §9).
    let (heartbeats_stop, stop_rx) = tokio::sync::watch::channel(false);
    let heartbeats = spawn_heartbeats(&flow, env, &configs, settings.lease, stop_rx, stop_at);
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
        let source = SourceSlice {
            pair,
            env,
            settings: &settings,
            configs: &configs,
            stop_at,
            deadline: source_deadline,
        };
        let copied = source.run(&mut report).await;
        match copied {
            Ok(end) => offset_syncs_end = end,
            Err(e) => {
                heartbeats_stop.send_replace(true);
                finish_heartbeats(heartbeats, deadline).await;
                return Err(e);
            }
        }
        report.connector.warnings.extend(producer_warnings);
        sources_done_ms = Some(chrono::Utc::now().timestamp_millis());
    } else {
        tracing::info!("replication disabled for this pair ({flow}.enabled is not true)");
    }
    heartbeats_stop.send_replace(true);
    report.checkpoints = run_checkpoint_work(
        &flow,
        env,
        &configs,
        settings.lease,
        deadline,
        offset_syncs_end,
    )
    .await;
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

/// Starts asking the target whether Java MirrorMaker 2 workers run the flow (see
/// [`crate::connect::worker_group`]), bounded by 10 s and the deadline.
fn spawn_java_workers_check(
    configs: &PairConfigs,
    deadline: Instant,
) -> tokio::task::JoinHandle<JavaWorkers> {
    const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
    let worker = configs.worker.clone();
    let admin = worker_client_props(&worker, "admin");
    let limit = deadline
        .saturating_duration_since(Instant::now())
        .min(CHECK_TIMEOUT);
    tokio::spawn(async move { java_workers(&worker, &admin, limit).await })
}

/// Starts probing both clusters with the source connector's admin settings (see
/// [`crate::kafka::probe`]), bounded by 10 s and the deadline.
fn spawn_cluster_probes(
    configs: &PairConfigs,
    deadline: Instant,
) -> tokio::task::JoinSet<(String, Result<Probe, ClientError>)> {
    const PROBE_LIMIT: Duration = Duration::from_secs(10);
    let limit = deadline
        .saturating_duration_since(Instant::now())
        .min(PROBE_LIMIT);
    let mut probes = tokio::task::JoinSet::new();
    for (alias, connection) in client_connections(configs) {
        probes.spawn(async move {
            let role = format!("{alias}|probe");
            let (what, props) = (&connection.what, &connection.props);
            let found = probe(&alias, what, &role, props, limit).await;
            (alias, found)
        });
    }
    probes
}

/// The distinct ways the pair's clients connect to its two clusters (see
/// [`connections`]): every kind of client a slice makes on each side, so that a password set
/// for the consumer alone is tried as well. Yields each with its cluster's alias.
pub(crate) fn client_connections(configs: &PairConfigs) -> Vec<(String, Connection)> {
    let common = &configs.source.common;
    let mut found = Vec::new();
    for (alias, side) in [
        (&common.source_alias, ClusterSide::Source),
        (&common.target_alias, ClusterSide::Target),
    ] {
        let [admin, consumer, producer] = [
            ClientKind::Admin,
            ClientKind::Consumer,
            ClientKind::Producer,
        ]
        .map(|kind| common.client_config(side, kind, "probe", None));
        let others = [("consumer", &consumer), ("producer", &producer)];
        for connection in connections(&admin, &others) {
            found.push((alias.clone(), connection));
        }
    }
    found
}

/// Stops the slice at once when a cluster refused our credentials or certificates. A cluster
/// that did not answer is left to the calls that need it: they wait within the deadline.
async fn refuse_rejected_clusters(
    pair: &SourceAndTarget,
    mut probes: tokio::task::JoinSet<(String, Result<Probe, ClientError>)>,
) -> Result<(), SliceError> {
    while let Some(joined) = probes.join_next().await {
        let (alias, found) = joined.map_err(|e| setup(pair, e))?;
        match found {
            Ok(Probe::Answered { brokers }) => tracing::debug!(cluster = alias, brokers, "probed"),
            Ok(Probe::Silent { last_error }) => {
                tracing::warn!(cluster = alias, ?last_error, "cluster not answering yet")
            }
            Err(e) => {
                probes.abort_all();
                return Err(setup(pair, e));
            }
        }
    }
    Ok(())
}

/// Stops the slice before it writes anything while Java workers run the same flow. When the
/// group cannot be described, says so and goes on: the check is a guard, not a lease.
async fn refuse_beside_java_workers(
    pair: &SourceAndTarget,
    check: tokio::task::JoinHandle<JavaWorkers>,
) -> Result<(), SliceError> {
    let found = check.await.unwrap_or_else(|e| JavaWorkers::Unknown {
        group: String::new(),
        error: e.to_string(),
    });
    match found {
        JavaWorkers::Unknown { group, error } => {
            tracing::warn!(
                group,
                error,
                "cannot tell whether Java MirrorMaker 2 runs this flow"
            );
            Ok(())
        }
        found => match found.refusal(&pair.target) {
            Some(refusal) => Err(setup(pair, refusal)),
            None => Ok(()),
        },
    }
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

/// Waits for the lease releases (each after its task's status write) until `deadline`; those
/// still running then are aborted: nothing of a slice runs on after it returns, and a lease not
/// given back only makes its next holder wait for its expiry.
async fn join_releases(releases: Vec<tokio::task::JoinHandle<()>>, deadline: Instant) {
    for mut r in releases {
        if tokio::time::timeout_at(deadline.into(), &mut r)
            .await
            .is_err()
        {
            tracing::warn!("lease release not done by the deadline; the lease expires instead");
            r.abort();
        }
    }
}

/// Give a lease back now; a failure (its error names the lease) only delays the next holder
/// until the lease expires.
async fn release_now(lease: HeldLease) {
    if let Err(e) = lease.release().await {
        tracing::warn!(error = %e, "lease release failed");
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

// ---------------------------------------------------------------------------------------------
// Heartbeats, checkpoints and RPO (issue #5)
// ---------------------------------------------------------------------------------------------

/// Starts the heartbeat connector of the pair (§9): it creates `heartbeats` on the target and
/// emits until `stop` is set (when the source tasks finish) or `stop_at`.
fn spawn_heartbeats(
    flow: &str,
    env: &SliceEnv,
    configs: &crate::plan::PairConfigs,
    timing: LeaseTiming,
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
        timing,
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
    lease_timing: LeaseTiming,
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
        lease_timing,
    };
    // Keep a moment after it for the report.
    let until = deadline
        .checked_sub(Duration::from_millis(250))
        .unwrap_or(deadline);
    let run = checkpoint_runner::run_checkpoints(cfg, flow, &cp_env, &producer, until);
    // The runner bounds its own steps by `until`; this bounds the rest (a stalled target's
    // admin calls) so the slice still ends by its deadline.
    match tokio::time::timeout_at(deadline.into(), run).await {
        Ok(activity) => activity,
        Err(_) => CheckpointActivity {
            status: "failed: not done by the slice's deadline".into(),
            errors: vec!["checkpoint work not done by the slice's deadline".into()],
            ..Default::default()
        },
    }
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
    let c: crate::kafka::Managed<BaseConsumer<crate::kafka::MirrorContext>> =
        crate::kafka::create(role, &config, crate::kafka::MirrorContext).ok()?;
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
