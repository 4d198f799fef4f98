//! The slice report: what one slice of one flow did, for people and for machines.
//!
//! A periodic replicator is only trustworthy if every run says exactly what it did. The report
//! carries, per task, records and bytes copied and, per partition, the offsets it started and
//! ended at, the lag left behind and the age of the records it copied; for the flow, whether it
//! caught up, how long it ran and what that cost in Lambda GB-seconds. It is printed as JSON
//! (`run --json`), written to the status topic, and — on Lambda — summarised as CloudWatch
//! Embedded Metric Format.

use crate::connectors::source::task::{Gap, PartitionReport, TaskOutcome};
use serde::Serialize;

/// Whether this invocation ran a task, or found it held elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskRun {
    /// The lease was acquired and the task ran.
    Ran,
    /// Another invocation holds the task's lease: nothing to do here.
    HeldElsewhere,
    /// The task's partitions moved (a new assignment) and a task of the previous assignment
    /// that copied some of them still runs elsewhere: it starts in a later slice.
    Waiting,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    pub connector: String,
    pub task: u32,
    pub run: TaskRun,
    pub fencing_token: Option<u64>,
    pub records: u64,
    pub bytes: u64,
    pub caught_up: bool,
    pub commits: u32,
    pub offset_syncs_sent: u64,
    pub lag: Option<i64>,
    pub partitions: Vec<PartitionReport>,
    pub gaps: Vec<Gap>,
    pub error: Option<String>,
    /// For a `waiting` task: the running tasks of the previous assignment it waits for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
}

impl TaskReport {
    pub fn held_elsewhere(connector: &str, task: u32) -> Self {
        TaskReport::not_run(connector, task, TaskRun::HeldElsewhere)
    }

    /// A task of a new assignment that waits for `waiting_for` (see [`TaskRun::Waiting`]).
    pub fn waiting(connector: &str, task: u32, waiting_for: String) -> Self {
        TaskReport {
            waiting_for: Some(waiting_for),
            ..TaskReport::not_run(connector, task, TaskRun::Waiting)
        }
    }

    fn not_run(connector: &str, task: u32, run: TaskRun) -> Self {
        TaskReport {
            connector: connector.to_string(),
            task,
            run,
            fencing_token: None,
            records: 0,
            bytes: 0,
            caught_up: false,
            commits: 0,
            offset_syncs_sent: 0,
            lag: None,
            partitions: Vec::new(),
            gaps: Vec::new(),
            error: None,
            waiting_for: None,
        }
    }

    pub fn from_outcome(connector: &str, task: u32, token: u64, o: TaskOutcome) -> Self {
        let lag = o
            .partitions
            .iter()
            .map(|p| p.lag)
            .try_fold(0i64, |acc, l| l.map(|l| acc + l));
        TaskReport {
            connector: connector.to_string(),
            task,
            run: TaskRun::Ran,
            fencing_token: Some(token),
            records: o.records,
            bytes: o.bytes,
            caught_up: o.caught_up,
            commits: o.commits,
            offset_syncs_sent: o.offset_syncs_sent,
            lag,
            partitions: o.partitions,
            gaps: o.gaps,
            error: o.error,
            waiting_for: None,
        }
    }
}

/// What the connector phase changed on the target.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConnectorActivity {
    pub ran: bool,
    pub created_topics: Vec<String>,
    pub grown_topics: Vec<String>,
    pub config_sync: String,
    pub acl_sync: String,
    pub task_configs_written: bool,
    pub warnings: Vec<String>,
}

/// What the checkpoint connector and its tasks did in this slice (§8, run at slice end).
///
/// `status` is `ran`, `disabled` (flow disabled or `emit.checkpoints.enabled=false`),
/// `not due until <epoch ms>` (neither emission nor group sync is due yet),
/// `skipped: <reason>` or `failed: <error>`. Errors never fail the slice: replication succeeded,
/// and the next due slice tries again (as MM2 logs and retries at the next interval).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckpointActivity {
    pub status: String,
    /// Wall time of the checkpoint work in this slice.
    pub duration_ms: u64,
    /// Relevant consumer groups known to the connector (§8.1), after any refresh.
    pub groups: u32,
    /// Whether group discovery ran in this slice (`refresh.groups.interval.seconds`).
    pub groups_refreshed: bool,
    /// Checkpoint tasks run here, and those whose lease another invocation holds.
    pub tasks: u32,
    pub tasks_held_elsewhere: u32,
    /// Whether checkpoints were computed and emitted (`emit.checkpoints.interval.seconds`).
    pub emitted_due: bool,
    /// Checkpoint records written to `<source>.checkpoints.internal`.
    pub emitted: u64,
    /// `disabled`, `not due until <epoch ms>` or `ran` (`sync.group.offsets.*`).
    pub group_sync: String,
    /// Target groups whose offsets were altered.
    pub groups_synced: Vec<String>,
    /// Partitions committed into target groups.
    pub partitions_synced: u64,
    /// Target groups left alone because they have active members (beyond MM2, which writes and
    /// relies on the broker rejecting it).
    pub groups_skipped_active: Vec<String>,
    pub errors: Vec<String>,
}

/// What the heartbeat connector did in this slice (§9).
#[derive(Debug, Clone, Default, Serialize)]
pub struct HeartbeatActivity {
    /// `ran`, `disabled` (`emit.heartbeats.enabled=false`; the topic is still created),
    /// `held elsewhere` (another invocation of the flow emits) or `failed: <error>`.
    pub status: String,
    /// The `heartbeats` topic on the target, and whether this slice created it.
    pub topic: String,
    pub topic_created: bool,
    /// Heartbeats written, and the timestamp of the last one.
    pub emitted: u64,
    pub last_timestamp_ms: Option<i64>,
    pub errors: Vec<String>,
}

/// One slice of one flow.
#[derive(Debug, Clone, Serialize)]
pub struct SliceReport {
    pub flow: String,
    pub worker_id: String,
    pub started_at: String,
    pub duration_ms: u64,
    /// Time left before the deadline when the slice finished its last commit.
    pub deadline_margin_ms: i64,
    pub ok: bool,
    /// True when every task of the flow ran here and caught up.
    pub caught_up: bool,
    pub records: u64,
    pub bytes: u64,
    /// Records left behind (sum over partitions), when known.
    pub lag: Option<i64>,
    /// Age, at the end of the slice, of the newest record copied.
    pub newest_record_age_ms: Option<i64>,
    /// Age, at the end of the slice, of the oldest record copied.
    pub oldest_record_age_ms: Option<i64>,
    /// Recovery point objective at the end of the slice: how far back in time the source data
    /// missing from the target reaches, i.e. `now − T` where everything the source held at `T`
    /// is on the target.
    ///
    /// * Caught up: `T` is when the source tasks finished, having seen the end of every
    ///   partition with nothing left in flight (optimistic by at most the spread of those
    ///   end-of-partition events, typically milliseconds).
    /// * Not caught up: `T` is the timestamp of the oldest record **not yet** replicated
    ///   (the record at the committed position of the most lagging partition), read from the
    ///   source; record timestamps are producer-chosen (CreateTime) unless the topic uses
    ///   LogAppendTime.
    /// * `None`: unknown (a task held by another invocation, a failed read, no time left before
    ///   the deadline) or not applicable (replication disabled for the pair).
    ///
    /// Between slices RPO grows with wall time; this is its value when the slice ends.
    pub rpo_ms: Option<i64>,
    pub source_tasks: u32,
    pub connector: ConnectorActivity,
    pub tasks: Vec<TaskReport>,
    pub checkpoints: CheckpointActivity,
    pub heartbeats: HeartbeatActivity,
    pub gaps: Vec<Gap>,
    pub errors: Vec<String>,
    pub memory_mb: u32,
    pub gb_seconds: f64,
    pub estimated_cost_usd: f64,
}

impl SliceReport {
    /// Fill the flow-level totals from the task reports.
    pub fn summarize(&mut self, now_ms: i64) {
        self.records = self.tasks.iter().map(|t| t.records).sum();
        self.bytes = self.tasks.iter().map(|t| t.bytes).sum();
        self.lag = self
            .tasks
            .iter()
            .filter(|t| t.run == TaskRun::Ran)
            .map(|t| t.lag)
            .try_fold(0i64, |acc, l| l.map(|l| acc + l));
        let partitions = self.tasks.iter().flat_map(|t| t.partitions.iter());
        let newest = partitions
            .clone()
            .filter_map(|p| p.newest_record_timestamp_ms)
            .max();
        let oldest = partitions
            .filter_map(|p| p.oldest_record_timestamp_ms)
            .min();
        self.newest_record_age_ms = newest.map(|t| (now_ms - t).max(0));
        self.oldest_record_age_ms = oldest.map(|t| (now_ms - t).max(0));
        self.gaps = self.tasks.iter().flat_map(|t| t.gaps.clone()).collect();
        for t in &self.tasks {
            if let Some(e) = &t.error {
                self.errors.push(format!("task {}: {e}", t.task));
            }
        }
        self.ok = self.errors.is_empty();
        self.caught_up = self.ok
            && self
                .tasks
                .iter()
                .all(|t| t.run == TaskRun::Ran && t.caught_up);
    }

    /// [`SliceReport::rpo_ms`] by its definition: `caught_up_at_ms` is when the source tasks
    /// finished (used when the slice caught up), `oldest_unreplicated_ms` the timestamp of the
    /// oldest record not yet replicated (used when it did not). Never negative: a record
    /// timestamp in the future counts as 0.
    pub fn compute_rpo(
        caught_up: bool,
        caught_up_at_ms: Option<i64>,
        oldest_unreplicated_ms: Option<i64>,
        now_ms: i64,
    ) -> Option<i64> {
        let since = if caught_up {
            caught_up_at_ms
        } else {
            oldest_unreplicated_ms
        };
        since.map(|t| (now_ms - t).max(0))
    }

    /// One line for a terminal.
    pub fn one_line(&self) -> String {
        format!(
            "{}: {} records, {} bytes in {} ms, {}{}, lag {}, est. ${:.8}",
            self.flow,
            self.records,
            self.bytes,
            self.duration_ms,
            if self.caught_up {
                "caught up"
            } else {
                "not caught up"
            },
            if self.ok { "" } else { ", FAILED" },
            self.lag
                .map(|l| l.to_string())
                .unwrap_or_else(|| "unknown".into()),
            self.estimated_cost_usd
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(records: u64, lag: Option<i64>, ts: Option<(i64, i64)>) -> PartitionReport {
        PartitionReport {
            topic: "t".into(),
            partition: 0,
            remote_topic: "A.t".into(),
            records,
            bytes: records * 10,
            lag,
            caught_up: lag == Some(0),
            oldest_record_timestamp_ms: ts.map(|t| t.0),
            newest_record_timestamp_ms: ts.map(|t| t.1),
            ..Default::default()
        }
    }

    fn outcome(parts: Vec<PartitionReport>, error: Option<&str>) -> TaskOutcome {
        TaskOutcome {
            records: parts.iter().map(|p| p.records).sum(),
            bytes: parts.iter().map(|p| p.bytes).sum(),
            caught_up: parts.iter().all(|p| p.caught_up) && error.is_none(),
            partitions: parts,
            commits: 1,
            offset_syncs_sent: 0,
            offset_syncs_end: None,
            gaps: Vec::new(),
            error: error.map(String::from),
        }
    }

    fn report(tasks: Vec<TaskReport>) -> SliceReport {
        let mut r = SliceReport {
            flow: "A->B".into(),
            worker_id: "w".into(),
            started_at: "now".into(),
            duration_ms: 10,
            deadline_margin_ms: 0,
            ok: false,
            caught_up: false,
            records: 0,
            bytes: 0,
            lag: None,
            newest_record_age_ms: None,
            oldest_record_age_ms: None,
            rpo_ms: None,
            source_tasks: tasks.len() as u32,
            connector: ConnectorActivity::default(),
            tasks,
            checkpoints: CheckpointActivity::default(),
            heartbeats: HeartbeatActivity::default(),
            gaps: vec![],
            errors: vec![],
            memory_mb: 1024,
            gb_seconds: 0.0,
            estimated_cost_usd: 0.0,
        };
        r.summarize(10_000);
        r
    }

    #[test]
    fn totals_ages_and_caught_up() {
        let t0 = TaskReport::from_outcome(
            "MirrorSourceConnector",
            0,
            1,
            outcome(vec![partition(5, Some(0), Some((1_000, 9_000)))], None),
        );
        let t1 = TaskReport::from_outcome(
            "MirrorSourceConnector",
            1,
            1,
            outcome(vec![partition(3, Some(0), Some((2_000, 9_500)))], None),
        );
        let r = report(vec![t0, t1]);
        assert!(r.ok && r.caught_up);
        assert_eq!((r.records, r.bytes, r.lag), (8, 80, Some(0)));
        assert_eq!(r.newest_record_age_ms, Some(500));
        assert_eq!(r.oldest_record_age_ms, Some(9_000));
    }

    #[test]
    fn rpo_is_time_since_catch_up_or_age_of_the_oldest_missing_record() {
        // Caught up at 9_000, reported at 10_000: 1 s of source data at risk.
        assert_eq!(
            SliceReport::compute_rpo(true, Some(9_000), Some(1), 10_000),
            Some(1_000)
        );
        // Behind: the oldest record not replicated was written at 4_000.
        assert_eq!(
            SliceReport::compute_rpo(false, Some(9_000), Some(4_000), 10_000),
            Some(6_000)
        );
        // Behind and the missing record could not be read: unknown, not 0.
        assert_eq!(
            SliceReport::compute_rpo(false, Some(9_000), None, 10_000),
            None
        );
        // A producer clock ahead of ours never gives a negative RPO.
        assert_eq!(
            SliceReport::compute_rpo(false, None, Some(12_000), 10_000),
            Some(0)
        );
    }

    #[test]
    fn a_held_or_failed_task_means_not_caught_up() {
        let ok = TaskReport::from_outcome(
            "MirrorSourceConnector",
            0,
            1,
            outcome(vec![partition(5, Some(0), None)], None),
        );
        let held = TaskReport::held_elsewhere("MirrorSourceConnector", 1);
        let r = report(vec![ok.clone(), held]);
        assert!(r.ok);
        assert!(!r.caught_up);

        let failed = TaskReport::from_outcome(
            "MirrorSourceConnector",
            1,
            1,
            outcome(vec![partition(1, Some(4), None)], Some("gap")),
        );
        let r = report(vec![ok, failed]);
        assert!(!r.ok);
        assert_eq!(r.errors, vec!["task 1: gap"]);
        assert_eq!(r.lag, Some(4));
    }
}
